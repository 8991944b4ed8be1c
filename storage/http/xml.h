/*
 * xml.h - reading the XML answers of S3 and Azure Blob Storage with
 * libxml2: elements are found by local name, so namespaced and bare
 * documents both read; nothing is fetched from the network and nothing is
 * printed for a malformed document.
 */
#ifndef SPOTRUN_XML_H
#define SPOTRUN_XML_H

#include <libxml/tree.h>
#include <stddef.h>

/* The document in xml (len bytes), or NULL when it is empty, over 2 GiB or
 * not XML. Free with xmlFreeDoc. */
xmlDoc *sr_xml_parse(const char *xml, size_t len);
/* n's local name; "" for NULL. */
const char *sr_xml_name(const xmlNode *n);
/* The first child element of n named name, or NULL (also for n NULL). */
xmlNode *sr_xml_child(const xmlNode *n, const char *name);
/* That child's text, or NULL when there is none. Free with xmlFree. */
char *sr_xml_child_text(const xmlNode *n, const char *name);
/* That child's text into out ("" when there is none). */
void sr_xml_text(const xmlNode *n, const char *name, char *out, size_t len);

#endif

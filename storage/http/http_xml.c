/*
 * http_xml.c - the XML helpers the S3 and Azure clients read their answers
 * with (xml.h). libxml2's parser is initialised once, before the first
 * parse, from whichever thread gets there first.
 */
#include "xml.h"

#include <libxml/parser.h>
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

static pthread_once_t once = PTHREAD_ONCE_INIT;

static void init(void)
{
    xmlInitParser();
}

xmlDoc *sr_xml_parse(const char *xml, size_t len)
{
    pthread_once(&once, init);
    if (!xml || len == 0 || len > INT32_MAX)
        return NULL;
    return xmlReadMemory(xml, (int)len, NULL, NULL,
                         XML_PARSE_NONET | XML_PARSE_NOERROR | XML_PARSE_NOWARNING);
}

const char *sr_xml_name(const xmlNode *n)
{
    return n && n->name ? (const char *)n->name : "";
}

xmlNode *sr_xml_child(const xmlNode *n, const char *name)
{
    for (xmlNode *c = n ? n->children : NULL; c; c = c->next)
        if (c->type == XML_ELEMENT_NODE && strcmp(sr_xml_name(c), name) == 0)
            return c;
    return NULL;
}

char *sr_xml_child_text(const xmlNode *n, const char *name)
{
    const xmlNode *c = sr_xml_child(n, name);
    return c ? (char *)xmlNodeGetContent(c) : NULL;
}

void sr_xml_text(const xmlNode *n, const char *name, char *out, size_t len)
{
    char *t = sr_xml_child_text(n, name);
    if (len)
        snprintf(out, len, "%s", t ? t : "");
    xmlFree(t);
}

/*
 * store_az_int.h - what the "az" store backend's files share; internal to
 * storage/, not part of the store interface (store.h).
 *
 *   store_az.c       simple operations, the ranged source, open/close, ops
 *   store_az_xfer.c  parallel transfers and the streaming writer
 *   az.c, az_creds.c the request layer and the credential chain (az.h)
 */
#ifndef SPOTRUN_STORE_AZ_INT_H
#define SPOTRUN_STORE_AZ_INT_H

#include <string.h>

#include "az.h"
#include "store.h"

static inline struct sr_az_req azst_req(const char *method, const char *key)
{
    /* Azure names its error in a header, not the body. */
    return (struct sr_az_req){.method = method,
                              .key = key,
                              .tx = SR_HTTP_TX_NONE,
                              .rx = SR_HTTP_RX_RESP(0, "x-ms-error-code")};
}

/* Runs the n requests side by side (SPOTRUN_AZ_CONCURRENCY in flight),
 * each retried on its own; the first failure for good stops the rest. */
int azst_batch(struct sr_az *az, struct sr_az_req *r, size_t n);
/* One Put Blob; create: If-None-Match: * (-EEXIST when key exists). */
int azst_put_buf(struct sr_store *st, const char *key, const void *buf, size_t len, int create);
/* Get Blob Properties: the blob's size (-ENOENT when missing). */
int azst_size(struct sr_store *st, const char *key, uint64_t *size);

int azst_writer_open(struct sr_store *st, const char *key, int create,
                     struct sr_store_writer **out);
int azst_writer_write(struct sr_store_writer *sw, const void *buf, size_t len);
int azst_writer_commit(struct sr_store_writer *sw);
void azst_writer_close(struct sr_store_writer *sw);

#endif

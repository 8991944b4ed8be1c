/*
 * sweep_claim.c - which open trial a `sweep work` worker claims next (see
 * sweep_claim.h).
 */
#include "sweep_claim.h"

#include <errno.h>
#include <stdio.h>
#include <string.h>

#include "layout.h"
#include "log.h"
#include "manifest.h"
#include "sweep.h"

/* Whether a's class is claimed before b's. */
static int before(const struct sr_claim_trial *a, const struct sr_claim_trial *b)
{
    if (a->priority != b->priority)
        return a->priority > b->priority;
    return a->started && !b->started;
}

size_t sr_claim_order(const struct sr_claim_trial *t, size_t n, long *out, size_t cap)
{
    const struct sr_claim_trial *top = NULL;
    for (size_t k = 0; k < n; k++)
        if (t[k].free && (!top || before(&t[k], top)))
            top = &t[k];
    size_t got = 0;
    for (size_t k = 0; top && k < n && got < cap; k++)
        if (t[k].free && !before(top, &t[k]))
            out[got++] = (long)k;
    return got;
}

/* started[k] = 1 for a listed name "<name>-<k>.json" (after skip bytes). */
static void mark(const char *name, const char *entry, size_t n, unsigned char *started)
{
    char run[SR_RUN_ID_MAX + 8];
    const size_t len = strlen(entry);
    if (len <= 5 || len - 5 >= sizeof(run) || strcmp(entry + len - 5, ".json") != 0)
        return;
    memcpy(run, entry, len - 5);
    run[len - 5] = '\0';
    const long k = sr_sweep_trial_of(name, run);
    if (k >= 0 && (size_t)k < n)
        started[k] = 1;
}

int sr_claim_list_started(struct sr_store *st, const char *name, size_t n, unsigned char *started)
{
    memset(started, 0, n);
    char prefix[SR_SWEEP_NAME_MAX + 32];
    snprintf(prefix, sizeof(prefix), SR_KEY_SUMMARIES "/%s-", name);
    struct sr_strlist l;
    int rc = sr_store_list_keys(st, prefix, &l);
    size_t skip = strlen(SR_KEY_SUMMARIES "/");
    if (rc == -ENOTSUP) { /* a file store: its directory, read locally */
        rc = sr_store_list(st, SR_KEY_SUMMARIES, &l);
        skip = 0;
    }
    if (rc < 0)
        return rc;
    for (size_t i = 0; i < l.n; i++)
        if (strlen(l.v[i]) > skip)
            mark(name, l.v[i] + skip, n, started);
    sr_strlist_free(&l);
    return 0;
}

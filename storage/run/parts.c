/*
 * parts.c - the set of a multi-node checkpoint (see parts.h and
 * docs/multinode.md).
 *
 * DESIGN: the set's manifest is the commit point, as for one node: it is
 * written last, create-only, and only from part records that were already
 * durable (each written after its data, create-only). Two nodes completing
 * the same set race on one key; the loser reads the winner's manifest. A
 * part is chosen per rank by its epoch: the highest one that counts, so a
 * rank's new owner re-committing a step its predecessor also committed
 * wins, and a fenced-off owner's part is never chosen.
 *
 * Threads: no state of its own.
 */
#include "parts.h"

#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "catalog.h"
#include "layout.h"
#include "log.h"

#define KEY_LEN 512

/* Rank and epoch of a part record's name, "part-<rank>-e<epoch>.json";
 * 0 when name is not exactly one. */
static int parse_part_name(const char *name, uint32_t *rank, uint64_t *epoch)
{
    unsigned r;
    unsigned long long e;
    char back[SR_CKPT_NAME_LEN];
    if (sscanf(name, "part-%u-e%llu.json", &r, &e) != 2)
        return 0;
    snprintf(back, sizeof(back), "part-%u-e%llu.json", r, e);
    if (strcmp(back, name) != 0 || e > SR_EPOCH_MAX)
        return 0; /* leading zeros, signs, trailing bytes: not ours */
    *rank = r;
    *epoch = e;
    return 1;
}

/* For each rank, the highest epoch among its part records that counts
 * (0 = none yet; epochs start at 1 under a lease). */
static int choose_parts(struct sr_store *st, const char *run_id, uint64_t seq, uint32_t nodes,
                        sr_part_counts_fn counts, void *ctx, uint64_t *chosen)
{
    char prefix[KEY_LEN];
    sr_ckpt_key(prefix, sizeof(prefix), run_id, seq, NULL);
    struct sr_strlist names = {0};
    int rc = sr_store_list(st, prefix, &names);
    for (size_t i = 0; rc >= 0 && i < names.n; i++) {
        uint32_t rank;
        uint64_t epoch;
        if (!parse_part_name(names.v[i], &rank, &epoch) || rank >= nodes || epoch <= chosen[rank])
            continue;
        const int ok = counts ? counts(ctx, rank, epoch) : 1;
        if (ok < 0)
            rc = ok;
        else if (ok)
            chosen[rank] = epoch;
        else
            sr_debug("part %s of %s seq %" PRIu64 " is fenced off", names.v[i], run_id, seq);
    }
    sr_strlist_free(&names);
    return rc < 0 ? rc : 0;
}

/* The set's manifest from its parts' records. */
static int build_set(struct sr_store *st, const char *run_id, uint64_t seq, uint32_t nodes,
                     const uint64_t *chosen, struct sr_manifest *set)
{
    memset(set, 0, sizeof(*set));
    for (uint32_t r = 0; r < nodes; r++) {
        struct sr_manifest p = {.is_part = 1, .node_rank = r, .epoch = chosen[r]};
        char data[SR_CKPT_NAME_LEN], rec[SR_CKPT_NAME_LEN];
        sr_ckpt_names(&p, data, rec);
        int rc = sr_ckpt_load_record(st, run_id, seq, rec, &p);
        if (rc == 0 &&
            (!p.is_part || p.nodes != nodes || p.node_rank != r || (r > 0 && p.step != set->step)))
            rc = sr_errf(-EBADMSG, "%s/ckpt/%010" PRIu64 "/%s does not belong to this set", run_id,
                         seq, rec);
        if (rc < 0)
            return rc;
        const int pfull = !sr_manifest_is_delta(&p);
        const uint64_t parchive = sr_manifest_archive_bytes(&p);
        if (r == 0) {
            *set = p;
            set->full = pfull;
            set->archive_bytes = parchive;
            set->is_part = 0;
            set->node_rank = 0;
            set->raw_bytes = set->stored_bytes = set->files = set->frames = 0;
            set->stage_seconds = 0;
            set->epoch = 0;
            memset(set->checksum, 0, sizeof(set->checksum));
        }
        set->raw_bytes += p.raw_bytes;
        set->stored_bytes += p.stored_bytes; /* what the parts uploaded */
        if (r > 0) {                         /* full when every part is; the longest chain */
            set->archive_bytes += parchive;
            set->full = set->full && pfull;
            set->chain = p.chain > set->chain ? p.chain : set->chain;
            set->format = p.format < set->format ? p.format : set->format;
        }
        set->files += p.files;
        set->frames += p.frames;
        if (p.stage_seconds > set->stage_seconds)
            set->stage_seconds = p.stage_seconds;
        if (p.created > set->created)
            set->created = p.created;
        if (p.epoch > set->epoch)
            set->epoch = p.epoch; /* orders the set among the run's checkpoints */
        set->part_epoch[r] = p.epoch;
    }
    set->nodes = nodes;
    return 0;
}

int sr_set_complete(struct sr_store *st, const char *run_id, uint64_t seq, uint32_t nodes,
                    sr_part_counts_fn counts, void *ctx, struct sr_manifest *set, uint32_t *missing)
{
    if (nodes < 1 || nodes > SR_NODES_MAX)
        return sr_errf(-EINVAL, "a run of %u nodes (1 to %d)", nodes, SR_NODES_MAX);
    struct sr_manifest m;
    int rc = sr_ckpt_load_record(st, run_id, seq, SR_KEY_MANIFEST, &m);
    if (rc == 0) {
        if (set)
            *set = m;
        return 1; /* published already */
    }
    if (rc != -ENOENT)
        return rc;
    uint64_t chosen[SR_NODES_MAX] = {0};
    if ((rc = choose_parts(st, run_id, seq, nodes, counts, ctx, chosen)) < 0)
        return rc;
    for (uint32_t r = 0; r < nodes; r++) {
        if (chosen[r] == 0) {
            if (missing)
                *missing = r;
            return 0;
        }
    }
    if ((rc = build_set(st, run_id, seq, nodes, chosen, &m)) < 0)
        return rc;
    char *json = NULL;
    size_t len = 0;
    if ((rc = sr_manifest_to_json(&m, &json, &len)) < 0)
        return rc;
    char key[KEY_LEN];
    sr_ckpt_key(key, sizeof(key), run_id, seq, SR_KEY_MANIFEST);
    rc = sr_store_put_if(st, key, json, len, NULL, NULL);
    free(json);
    if (rc == -EEXIST) /* another node completed it first: theirs stands */
        return sr_set_complete(st, run_id, seq, nodes, NULL, NULL, set, missing);
    if (rc < 0)
        return rc;
    if (set)
        *set = m;
    return 1;
}

int sr_sets_publish_pending(struct sr_store *st, const char *run_id, uint32_t nodes,
                            sr_part_counts_fn counts, void *ctx, unsigned *published)
{
    if (published)
        *published = 0;
    struct sr_ckpt_list l;
    int rc = sr_ckpt_list(st, run_id, &l);
    if (rc < 0)
        return rc;
    uint64_t newest = 0;
    for (size_t i = 0; i < l.n; i++)
        if (l.v[i].seq > newest)
            newest = l.v[i].seq;
    sr_ckpt_list_free(&l);
    struct sr_strlist names = {0};
    if ((rc = sr_list_run(st, run_id, SR_KEY_CKPT, &names)) < 0)
        return rc;
    for (size_t i = 0; i < names.n; i++) {
        const uint64_t seq = sr_ckpt_parse_seq(names.v[i]);
        if (seq == 0 || seq <= newest)
            continue; /* not a seq, or older than the newest set: never restored */
        const int c = sr_set_complete(st, run_id, seq, nodes, counts, ctx, NULL, NULL);
        if (c > 0 && published)
            (*published)++;
        if (c > 0)
            sr_info("published checkpoint %" PRIu64 " of run %s: every node's part was there", seq,
                    run_id);
    }
    sr_strlist_free(&names);
    return 0;
}

int sr_sets_incomplete(struct sr_store *st, const char *run_id, uint64_t newest,
                       struct sr_set_partial *out, int max)
{
    struct sr_strlist seqs = {0};
    int rc = sr_list_run(st, run_id, SR_KEY_CKPT, &seqs);
    int n = 0;
    for (size_t i = 0; rc >= 0 && i < seqs.n; i++) {
        const uint64_t seq = sr_ckpt_parse_seq(seqs.v[i]);
        if (seq == 0 || seq <= newest)
            continue;
        char dir[KEY_LEN];
        sr_ckpt_key(dir, sizeof(dir), run_id, seq, NULL);
        struct sr_strlist names = {0};
        if ((rc = sr_store_list(st, dir, &names)) < 0)
            break;
        uint32_t parts = 0, rank;
        uint64_t epoch;
        int published = 0;
        for (size_t k = 0; k < names.n; k++) {
            parts += (uint32_t)parse_part_name(names.v[k], &rank, &epoch);
            published |= strcmp(names.v[k], SR_KEY_MANIFEST) == 0;
        }
        sr_strlist_free(&names);
        if (parts == 0 || published)
            continue;
        if (n == max) { /* keep the newest */
            memmove(out, out + 1, (size_t)(max - 1) * sizeof(*out));
            n--;
        }
        out[n++] = (struct sr_set_partial){seq, parts};
    }
    sr_strlist_free(&seqs);
    return rc < 0 ? rc : n;
}

/* "<rank>-s<seq>" exactly (no leading zeros, signs or trailing bytes). */
static int parse_done_name(const char *name, uint32_t *rank, uint64_t *seq)
{
    unsigned r;
    unsigned long long q;
    char back[64];
    if (strlen(name) >= sizeof(back) || sscanf(name, "%u-s%llu", &r, &q) != 2)
        return 0;
    snprintf(back, sizeof(back), "%u-s%llu", r, q);
    if (strcmp(back, name) != 0)
        return 0;
    *rank = r;
    *seq = q;
    return 1;
}

int sr_node_mark_done(struct sr_store *st, const char *run_id, uint32_t rank, uint64_t from_seq)
{
    char key[KEY_LEN], body[128];
    snprintf(key, sizeof(key), "%s/" SR_KEY_NODES_DONE "/%" PRIu32 "-s%" PRIu64, run_id, rank,
             from_seq);
    const int n = snprintf(body, sizeof(body),
                           "{\"node_rank\":%" PRIu32 ",\"from_seq\":%" PRIu64 ",\"unix_s\":%lld}\n",
                           rank, from_seq, (long long)time(NULL));
    const int rc = sr_store_put_if(st, key, body, (size_t)n, NULL, NULL);
    return rc == -EEXIST ? 0 : rc;
}

int sr_nodes_done(struct sr_store *st, const char *run_id, uint32_t nodes, uint64_t from_seq)
{
    struct sr_strlist names = {0};
    const int rc = sr_list_run(st, run_id, SR_KEY_NODES_DONE, &names);
    if (rc < 0)
        return rc;
    int n = 0;
    for (size_t i = 0; i < names.n; i++) {
        uint32_t rank;
        uint64_t seq;
        /* One mark per rank and seq: names are unique in a listing. */
        if (parse_done_name(names.v[i], &rank, &seq) && rank < nodes && seq == from_seq)
            n++;
    }
    sr_strlist_free(&names);
    return n;
}

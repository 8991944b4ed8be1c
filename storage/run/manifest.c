/*
 * manifest.c - MANIFEST.json serialisation and strict parsing (see
 * manifest.h; the schema is documented in docs/store.md).
 *
 * DESIGN: a manifest is the commit point of a checkpoint and the only thing
 * that tells restore how much to extract and which checksum to expect, so
 * parsing trusts nothing: every field spotrun relies on must be present with
 * the right JSON type and range, or the whole manifest is refused with a
 * message naming the field. Unknown fields are ignored so later versions can
 * add some without breaking older readers; a higher "format" is refused.
 * The caller bounds the input size.
 *
 * Threads: pure functions, no shared state.
 */
#include "manifest.h"
#include "framelist.h"
#include "layout.h"
#include "log.h"
#include "termsafe.h"

#include <errno.h>
#include <math.h>
#include <inttypes.h>
#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#define CODEC_NAME "tar+zstd-seekable"
#define CHECKSUM_PREFIX "xxh3-128:"

int sr_manifest_run_id_valid(const char *id)
{
    if (!id)
        return 0;
    size_t n = strlen(id);
    if (n == 0 || n > SR_RUN_ID_MAX || id[0] == '.' || id[0] == '-')
        return 0;
    if (strcmp(id, SR_KEY_SWEEPS) == 0) /* the store's sweeps/ (sweep.h) */
        return 0;
    if (strcmp(id, SR_KEY_SUMMARIES) == 0) /* the store's summaries/ (runsum.h) */
        return 0;
    if (strcmp(id, SR_KEY_QUOTAS) == 0 || strcmp(id, SR_KEY_APPROVALS) == 0) /* quota.h */
        return 0;
    for (size_t i = 0; i < n; i++) {
        char c = id[i];
        int ok = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
                 c == '.' || c == '_' || c == '-';
        if (!ok)
            return 0;
    }
    return 1;
}

static int checksum_valid(const char *s)
{
    size_t plen = strlen(CHECKSUM_PREFIX);
    if (strncmp(s, CHECKSUM_PREFIX, plen) != 0 || strlen(s) != SR_CHECKSUM_LEN - 1)
        return 0;
    for (const char *p = s + plen; *p; p++)
        if (!((*p >= '0' && *p <= '9') || (*p >= 'a' && *p <= 'f')))
            return 0;
    return 1;
}

static int set_int(json_t *o, const char *key, json_int_t v)
{
    return json_object_set_new(o, key, json_integer(v));
}

static int set_str(json_t *o, const char *key, const char *v)
{
    return json_object_set_new(o, key, json_string(v));
}

/* Fills o; nonzero when jansson failed (out of memory, invalid UTF-8 host). */
static int build(json_t *o, const struct sr_manifest *m)
{
    char when[32];
    struct tm tm;
    time_t t = (time_t)m->created;
    if (!gmtime_r(&t, &tm) || strftime(when, sizeof(when), "%Y-%m-%dT%H:%M:%SZ", &tm) == 0)
        snprintf(when, sizeof(when), "1970-01-01T00:00:00Z");
    int bad = 0;
    bad |= set_int(o, "format", m->frame_list ? 2 : 1);
    bad |= set_str(o, "run_id", m->run_id);
    bad |= set_int(o, "seq", (json_int_t)m->seq);
    bad |= json_object_set_new(o, "step", m->step < 0 ? json_null() : json_integer(m->step));
    bad |= set_int(o, "created", m->created);
    bad |= set_str(o, "created_at", when);
    bad |= set_str(o, "host", m->host);
    bad |= set_int(o, "attempt", m->attempt);
    bad |= set_int(o, "raw_bytes", (json_int_t)m->raw_bytes);
    bad |= set_int(o, "stored_bytes", (json_int_t)m->stored_bytes);
    bad |= set_int(o, "files", (json_int_t)m->files);
    bad |= set_int(o, "frames", m->frames);
    bad |= set_int(o, "frame_size", m->frame_size);
    bad |= set_int(o, "level", m->level);
    bad |= set_str(o, "codec", CODEC_NAME);
    if (m->nodes == 0 || m->is_part)
        bad |= set_str(o, "checksum", m->checksum);
    bad |= json_object_set_new(o, "stage_seconds", json_real(m->stage_seconds));
    if (m->epoch > 0)
        bad |= set_int(o, "epoch", (json_int_t)m->epoch);
    if (m->gpu_devices > 0 && m->gpu_devices <= SR_MANIFEST_GPUS) {
        json_t *peaks = json_array();
        for (uint32_t i = 0; peaks && i < m->gpu_devices; i++)
            bad |= json_array_append_new(peaks, json_integer((json_int_t)m->gpu_peak[i]));
        bad |= json_object_set_new(o, "gpu", json_pack("{s:o*}", "peak_bytes", peaks));
    }
    if (m->nodes > 0)
        bad |= set_int(o, "nodes", m->nodes);
    if (m->is_part)
        bad |= set_int(o, "node_rank", m->node_rank);
    if (m->nodes > 0 && !m->is_part) {
        json_t *parts = json_array();
        for (uint32_t r = 0; parts && r < m->nodes; r++)
            bad |= json_array_append_new(parts, json_pack("{s:i,s:I}", "rank", (int)r, "epoch",
                                                          (json_int_t)m->part_epoch[r]));
        bad |= json_object_set_new(o, "parts", parts);
    }
    if (m->nodes > 0 && !m->is_part) { /* informational: what its parts are */
        bad |= json_object_set_new(o, "full", json_boolean(m->full));
        bad |= set_int(o, "archive_bytes", (json_int_t)m->archive_bytes);
    }
    if (m->frame_list) {
        bad |= json_object_set_new(o, "full", json_boolean(m->full));
        bad |= set_int(o, "chain", m->chain);
        bad |= set_int(o, "archive_bytes", (json_int_t)m->archive_bytes);
        bad |= sr_frame_list_build(o, m->run_id, m->frame_list);
    }
    return bad;
}

void sr_manifest_set_archive(struct sr_manifest *m, const struct sr_pack_stats *s,
                             double stage_seconds)
{
    m->raw_bytes = s->raw_bytes;
    m->stored_bytes = s->stored_bytes;
    m->files = s->files;
    m->frames = s->frames;
    memcpy(m->checksum, s->checksum, sizeof(m->checksum));
    m->stage_seconds = stage_seconds;
}

int sr_manifest_is_delta(const struct sr_manifest *m)
{
    return (m->format >= 2 || (m->nodes > 0 && !m->is_part)) && !m->full;
}

uint64_t sr_manifest_archive_bytes(const struct sr_manifest *m)
{
    return sr_manifest_is_delta(m) && m->archive_bytes ? m->archive_bytes : m->stored_bytes;
}

int sr_manifest_to_json(const struct sr_manifest *m, char **out, size_t *len)
{
    *out = NULL;
    *len = 0;
    if (!sr_manifest_run_id_valid(m->run_id))
        return sr_errf(-EINVAL, "manifest: invalid run id \"%s\"", m->run_id);
    if (m->seq < 1 || m->seq > INT64_MAX || m->raw_bytes > INT64_MAX ||
        m->stored_bytes > INT64_MAX || m->files > INT64_MAX || m->epoch > SR_EPOCH_MAX ||
        m->created < 0)
        return sr_errf(-EINVAL, "manifest of %s: seq, sizes or time out of range", m->run_id);
    if (m->nodes > SR_NODES_MAX || (m->is_part && m->node_rank >= m->nodes))
        return sr_errf(-EINVAL, "manifest of %s: %u nodes, rank %u out of range", m->run_id,
                       m->nodes, m->node_rank);
    if (m->nodes > 0 && (m->seq > SR_SEQ_MAX || m->step > SR_SET_STEP_MAX))
        return sr_errf(-EINVAL,
                       "manifest of %s: step %" PRId64 " is larger than %" PRId64
                       ", the largest of a multi-node checkpoint",
                       m->run_id, m->step, SR_SET_STEP_MAX);
    for (uint32_t r = 0; m->nodes && !m->is_part && r < m->nodes; r++)
        if (m->part_epoch[r] > SR_EPOCH_MAX)
            return sr_errf(-EINVAL, "manifest of %s: epoch of part %u out of range", m->run_id, r);
    if ((m->nodes == 0 || m->is_part) && !checksum_valid(m->checksum))
        return sr_errf(-EINVAL, "manifest of %s: invalid checksum \"%s\"", m->run_id, m->checksum);
    int rc = 0;
    char *s = NULL;
    json_t *o = json_object();
    if (!o || build(o, m) != 0) {
        rc = sr_errf(-EINVAL, "manifest of %s: cannot encode (is the host name UTF-8?)", m->run_id);
        goto out;
    }
    s = json_dumps(o, JSON_INDENT(2) | JSON_PRESERVE_ORDER);
    if (!s) {
        rc = sr_errf(-ENOMEM, "manifest of %s: %s", m->run_id, strerror(ENOMEM));
        goto out;
    }
    size_t n = strlen(s);
    char *r = realloc(s, n + 2);
    if (!r) {
        rc = sr_errf(-ENOMEM, "manifest of %s: %s", m->run_id, strerror(ENOMEM));
        goto out;
    }
    s = r;
    s[n] = '\n';
    s[n + 1] = '\0';
    *out = s;
    *len = n + 1;
    s = NULL;
out:
    free(s);
    json_decref(o);
    return rc;
}

static int missing(const char *key)
{
    return sr_errf(-EBADMSG, "manifest: field \"%s\" is missing", key);
}

/* Integer field in [min, max]; the message says what is expected. */
static int get_int(json_t *o, const char *key, json_int_t min, json_int_t max, json_int_t *v)
{
    json_t *j = json_object_get(o, key);
    if (!j)
        return missing(key);
    if (json_is_integer(j) && json_integer_value(j) >= min && json_integer_value(j) <= max) {
        *v = json_integer_value(j);
        return 0;
    }
    if (min == 1 && max == INT64_MAX)
        return sr_errf(-EBADMSG, "manifest: field \"%s\" must be a positive integer", key);
    if (min == 0 && max == INT64_MAX)
        return sr_errf(-EBADMSG, "manifest: field \"%s\" must be a non-negative integer", key);
    return sr_errf(-EBADMSG, "manifest: field \"%s\" must be an integer from %lld to %lld", key,
                   (long long)min, (long long)max);
}

/* String field of at most maxlen bytes, copied into buf. */
static int get_str(json_t *o, const char *key, size_t maxlen, char *buf)
{
    json_t *j = json_object_get(o, key);
    if (!j)
        return missing(key);
    if (!json_is_string(j) || json_string_length(j) > maxlen ||
        strlen(json_string_value(j)) != json_string_length(j))
        return sr_errf(-EBADMSG, "manifest: field \"%s\" must be a string of at most %zu bytes",
                       key, maxlen);
    if (sr_text_has_ctrl(json_string_value(j))) /* printed by show: SECURITY.md */
        return sr_errf(-EBADMSG, "manifest: field \"%s\" holds a control character", key);
    memcpy(buf, json_string_value(j), json_string_length(j) + 1);
    return 0;
}

static int get_identity(json_t *o, struct sr_manifest *m)
{
    json_int_t v;
    int rc = get_int(o, "format", 1, INT64_MAX, &v);
    if (rc < 0)
        return rc;
    if (v > SR_MANIFEST_FORMAT)
        return sr_errf(-EBADMSG,
                       "manifest: format %lld is newer than this spotrun understands (%d); "
                       "upgrade spotrun",
                       (long long)v, SR_MANIFEST_FORMAT);
    m->format = (int)v;
    if ((rc = get_str(o, "run_id", SR_RUN_ID_MAX, m->run_id)) < 0)
        return rc;
    if (!sr_manifest_run_id_valid(m->run_id))
        return sr_errf(-EBADMSG, "manifest: field \"run_id\" is not a valid run id");
    if ((rc = get_int(o, "seq", 1, INT64_MAX, &v)) < 0)
        return rc;
    m->seq = (uint64_t)v;
    json_t *step = json_object_get(o, "step");
    if (!step)
        return missing("step");
    if (json_is_null(step))
        m->step = -1;
    else if (json_is_integer(step) && json_integer_value(step) >= 0)
        m->step = json_integer_value(step);
    else
        return sr_errf(-EBADMSG, "manifest: field \"step\" must be a non-negative integer or null");
    if ((rc = get_int(o, "created", 0, INT64_MAX, &v)) < 0)
        return rc;
    m->created = v;
    json_t *at = json_object_get(o, "created_at"); /* informational; derived from created */
    if (at && !json_is_string(at))
        return sr_errf(-EBADMSG, "manifest: field \"created_at\" must be a string");
    if ((rc = get_str(o, "host", sizeof(m->host) - 1, m->host)) < 0)
        return rc;
    if ((rc = get_int(o, "attempt", 0, UINT32_MAX, &v)) < 0)
        return rc;
    m->attempt = (uint32_t)v;
    return 0;
}

static int get_data(json_t *o, struct sr_manifest *m)
{
    json_int_t v;
    int rc;
    if ((rc = get_int(o, "raw_bytes", 0, INT64_MAX, &v)) < 0)
        return rc;
    m->raw_bytes = (uint64_t)v;
    if ((rc = get_int(o, "stored_bytes", 0, INT64_MAX, &v)) < 0)
        return rc;
    m->stored_bytes = (uint64_t)v;
    if ((rc = get_int(o, "files", 0, INT64_MAX, &v)) < 0)
        return rc;
    m->files = (uint64_t)v;
    if ((rc = get_int(o, "frames", 0, UINT32_MAX, &v)) < 0)
        return rc;
    m->frames = (uint32_t)v;
    if ((rc = get_int(o, "frame_size", 1, UINT32_MAX, &v)) < 0)
        return rc;
    m->frame_size = (uint32_t)v;
    if ((rc = get_int(o, "level", -(1 << 17), 22, &v)) < 0)
        return rc;
    m->level = (int)v;
    char codec[64];
    if ((rc = get_str(o, "codec", sizeof(codec) - 1, codec)) < 0)
        return rc;
    if (strcmp(codec, CODEC_NAME) != 0)
        return sr_errf(-EBADMSG, "manifest: field \"codec\" must be \"%s\", not \"%s\"", CODEC_NAME,
                       codec);
    /* A set of parts has no checksum of its own: each part has one. */
    json_t *c = json_object_get(o, "checksum");
    if (!c && (m->nodes == 0 || m->is_part))
        return missing("checksum");
    if (c && (!json_is_string(c) || !checksum_valid(json_string_value(c))))
        return sr_errf(-EBADMSG,
                       "manifest: field \"checksum\" must be \"xxh3-128:\" and 32 lowercase "
                       "hex digits");
    if (c)
        memcpy(m->checksum, json_string_value(c), SR_CHECKSUM_LEN);
    json_t *s = json_object_get(o, "stage_seconds");
    if (!s)
        return missing("stage_seconds");
    if (!json_is_number(s) || json_number_value(s) < 0)
        return sr_errf(-EBADMSG, "manifest: field \"stage_seconds\" must be a non-negative number");
    m->stage_seconds = json_number_value(s);
    if (json_object_get(o, "epoch")) {
        if ((rc = get_int(o, "epoch", 0, (json_int_t)SR_EPOCH_MAX, &v)) < 0)
            return rc;
        m->epoch = (uint64_t)v;
    }
    return 0;
}

/* The optional "gpu" object: taken when well-formed, else ignored. */
static void get_gpu(json_t *o, struct sr_manifest *m)
{
    json_t *peaks = json_object_get(json_object_get(o, "gpu"), "peak_bytes");
    const size_t n = json_array_size(peaks);
    if (n == 0 || n > SR_MANIFEST_GPUS)
        return;
    for (size_t i = 0; i < n; i++) {
        json_t *v = json_array_get(peaks, i);
        if (!json_is_integer(v) || json_integer_value(v) < 0)
            return;
    }
    for (size_t i = 0; i < n; i++)
        m->gpu_peak[i] = (uint64_t)json_integer_value(json_array_get(peaks, i));
    m->gpu_devices = (uint32_t)n;
}

/* "nodes", "node_rank" and "parts" of a multi-node checkpoint: absent for a
 * single-node one; when present, strict (they decide what is restored). */
static int get_nodes(json_t *o, struct sr_manifest *m)
{
    if (!json_object_get(o, "nodes"))
        return json_object_get(o, "node_rank") || json_object_get(o, "parts")
                   ? sr_errf(-EBADMSG, "manifest: \"node_rank\" or \"parts\" without \"nodes\"")
                   : 0;
    json_int_t v;
    int rc = get_int(o, "nodes", 1, SR_NODES_MAX, &v);
    if (rc < 0)
        return rc;
    m->nodes = (uint32_t)v;
    if (json_object_get(o, "node_rank")) {
        if ((rc = get_int(o, "node_rank", 0, (json_int_t)m->nodes - 1, &v)) < 0)
            return rc;
        m->is_part = 1;
        m->node_rank = (uint32_t)v;
        return 0;
    }
    json_t *parts = json_object_get(o, "parts");
    if (!json_is_array(parts) || json_array_size(parts) != m->nodes)
        return sr_errf(-EBADMSG, "manifest: field \"parts\" must list each of the %u nodes once",
                       m->nodes);
    uint8_t seen[SR_NODES_MAX] = {0};
    for (size_t i = 0; i < m->nodes; i++) {
        json_t *p = json_array_get(parts, i);
        json_int_t rank, epoch;
        if (!json_is_object(p) || get_int(p, "rank", 0, (json_int_t)m->nodes - 1, &rank) < 0 ||
            get_int(p, "epoch", 0, (json_int_t)SR_EPOCH_MAX, &epoch) < 0 || seen[rank]++)
            return sr_errf(-EBADMSG, "manifest: part %zu of \"parts\" is malformed", i);
        m->part_epoch[rank] = (uint64_t)epoch;
    }
    return 0;
}

/* Format 2's scalar fields; the list itself is checked by
 * sr_frame_list_parse() when it is used (restore, the next checkpoint). */
static int get_delta(json_t *o, struct sr_manifest *m)
{
    json_t *full = json_object_get(o, "full");
    json_int_t v;
    if (!json_is_boolean(full))
        return sr_errf(-EBADMSG, "manifest: field \"full\" must be true or false");
    m->full = json_is_true(full);
    int rc = get_int(o, "chain", 0, UINT32_MAX, &v);
    if (rc < 0)
        return rc;
    m->chain = (uint32_t)v;
    /* optional (absent: as stored_bytes); only shown, never trusted */
    if (json_object_get(o, "archive_bytes") &&
        (rc = get_int(o, "archive_bytes", 0, INT64_MAX, &v)) < 0)
        return rc;
    if (json_object_get(o, "archive_bytes"))
        m->archive_bytes = (uint64_t)v;
    if (m->nodes > 0 && !m->is_part) /* its parts have them */
        return sr_errf(-EBADMSG, "manifest: a multi-node checkpoint cannot have a frame list");
    if (!json_is_array(json_object_get(o, "frame_list")) ||
        !json_is_array(json_object_get(o, "objects")))
        return sr_errf(-EBADMSG, "manifest: format 2 needs \"objects\" and \"frame_list\" arrays");
    return 0;
}

/* A multi-node set's "full" and "archive_bytes", summed from its parts
 * and only shown: absent (written before parts could be deltas) or
 * malformed, the set counts as full archives of stored_bytes. */
static void get_set_kind(json_t *o, struct sr_manifest *m)
{
    const json_t *const full = json_object_get(o, "full");
    const json_t *const archive = json_object_get(o, "archive_bytes");
    m->full = !json_is_false(full);
    m->archive_bytes = 0;
    if (!m->full && json_is_integer(archive) && json_integer_value(archive) > 0)
        m->archive_bytes = (uint64_t)json_integer_value(archive);
}

char *sr_json_error_scrub(char *text)
{
    /* jansson ends its messages with " near '<token>'" or " near end of
     * file": the token is the object's own bytes. */
    char *const near = strstr(text, " near '");
    if (near)
        *near = '\0';
    return text;
}

int sr_manifest_parse(const char *buf, size_t len, struct sr_manifest *m)
{
    struct sr_manifest tmp;
    memset(&tmp, 0, sizeof(tmp));
    json_error_t err;
    json_t *o = json_loadb(buf, len, JSON_REJECT_DUPLICATES, &err);
    int rc = 0;
    if (!o)
        return sr_errf(-EBADMSG, "manifest: invalid JSON at line %d: %s", err.line,
                       sr_json_error_scrub(err.text));
    if (!json_is_object(o)) {
        rc = sr_errf(-EBADMSG, "manifest: not a JSON object");
        goto out;
    }
    if ((rc = get_identity(o, &tmp)) < 0 || (rc = get_nodes(o, &tmp)) < 0 ||
        (rc = get_data(o, &tmp)) < 0)
        goto out;
    if (tmp.nodes > 0 && (tmp.seq > SR_SEQ_MAX || tmp.step > SR_SET_STEP_MAX)) {
        rc = sr_errf(-EBADMSG,
                     "manifest: field \"seq\" of a multi-node checkpoint must be at "
                     "most %" PRIu64,
                     SR_SEQ_MAX);
        goto out;
    }
    get_gpu(o, &tmp);
    if (tmp.nodes > 0 && !tmp.is_part)
        get_set_kind(o, &tmp);
    if (tmp.format >= 2 && (rc = get_delta(o, &tmp)) < 0)
        goto out;
    *m = tmp;
out:
    json_decref(o);
    return rc;
}

int sr_json_amount(const json_t *o, const char *k, double *out)
{
    const json_t *v = json_object_get(o, k);
    if (!json_is_number(v))
        return -1;
    *out = json_number_value(v);
    return isfinite(*out) && *out >= 0 && *out <= SR_AMOUNT_MAX ? 0 : -1;
}

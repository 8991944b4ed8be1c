/*
 * notice_parse.c - JSON documents and dates of the metadata services (see
 * notice_parse.h). jansson does the JSON; the dates are strict: a value
 * that does not parse whole is rejected, never guessed.
 */
#include "notice_parse.h"

#include <errno.h>
#include <jansson.h>
#include <stdio.h>
#include <string.h>
#include <strings.h>
#include <time.h>

static int copy_str(char *dst, size_t len, const char *src)
{
    if (!src || strlen(src) >= len)
        return -EBADMSG;
    memcpy(dst, src, strlen(src) + 1);
    return 0;
}

int sr_parse_rfc3339(const char *s, int64_t *unix_ms)
{
    if (!s)
        return -EINVAL;
    struct tm tm = {0};
    const char *p = strptime(s, "%Y-%m-%dT%H:%M:%S", &tm);
    if (!p)
        return -EINVAL;
    int64_t ms = 0;
    if (*p == '.') {
        int digits = 0;
        for (p++; *p >= '0' && *p <= '9'; p++, digits++)
            if (digits < 3)
                ms = ms * 10 + (*p - '0');
        if (digits == 0)
            return -EINVAL;
        for (; digits < 3; digits++)
            ms *= 10;
    }
    int64_t offset_s = 0;
    if (*p == 'Z' || *p == 'z') {
        p++;
    } else if (*p == '+' || *p == '-') {
        unsigned hh, mm;
        int used = 0;
        if (sscanf(p + 1, "%2u:%2u%n", &hh, &mm, &used) != 2 || used != 5 || hh > 23 || mm > 59)
            return -EINVAL;
        offset_s = (int64_t)(hh * 3600 + mm * 60) * (*p == '-' ? -1 : 1);
        p += 1 + used;
    } else {
        return -EINVAL;
    }
    if (*p)
        return -EINVAL;
    const time_t t = timegm(&tm);
    if (t == (time_t)-1)
        return -EINVAL;
    *unix_ms = ((int64_t)t - offset_s) * 1000 + ms;
    return 0;
}

int sr_parse_rfc1123(const char *s, int64_t *unix_ms)
{
    if (!s)
        return -EINVAL;
    /* strptime's %a/%b follow LC_TIME; spotrun never calls setlocale, so
     * they are the C locale's English names, as HTTP dates are. */
    struct tm tm = {0};
    const char *p = strptime(s, "%a, %d %b %Y %H:%M:%S", &tm);
    if (!p || (strcmp(p, " GMT") != 0 && strcmp(p, " UTC") != 0))
        return -EINVAL;
    const time_t t = timegm(&tm);
    if (t == (time_t)-1)
        return -EINVAL;
    *unix_ms = (int64_t)t * 1000;
    return 0;
}

static json_t *load(const char *body, size_t len)
{
    json_error_t err;
    return body ? json_loadb(body, len, JSON_REJECT_DUPLICATES, &err) : NULL;
}

int sr_aws_parse_action(const char *body, size_t len, struct sr_aws_action *out)
{
    json_t *j = load(body, len);
    if (!json_is_object(j)) {
        json_decref(j);
        return -EBADMSG;
    }
    const char *action = json_string_value(json_object_get(j, "action"));
    const char *when = json_string_value(json_object_get(j, "time"));
    int rc = copy_str(out->action, sizeof(out->action), action);
    if (rc == 0)
        rc = copy_str(out->time, sizeof(out->time), when);
    if (rc == 0 && sr_parse_rfc3339(when, &out->time_ms) < 0)
        rc = -EBADMSG;
    json_decref(j);
    return rc;
}

int sr_aws_parse_rebalance(const char *body, size_t len, int64_t *notice_ms)
{
    json_t *j = load(body, len);
    const char *when = json_string_value(json_object_get(j, "noticeTime"));
    const int rc = json_is_object(j) && sr_parse_rfc3339(when, notice_ms) == 0 ? 0 : -EBADMSG;
    json_decref(j);
    return rc;
}

static int lists_vm(json_t *resources, const char *vm_name)
{
    if (!vm_name || !*vm_name)
        return 1;
    size_t i;
    json_t *r;
    json_array_foreach(resources, i, r)
    {
        const char *name = json_string_value(r);
        if (name && strcasecmp(name, vm_name) == 0)
            return 1;
    }
    return 0;
}

static int azure_event(json_t *e, const char *vm_name, struct sr_azure_event *out)
{
    const char *id = json_string_value(json_object_get(e, "EventId"));
    const char *type = json_string_value(json_object_get(e, "EventType"));
    const char *status = json_string_value(json_object_get(e, "EventStatus"));
    const char *not_before = json_string_value(json_object_get(e, "NotBefore"));
    if (!id || !type || !json_is_array(json_object_get(e, "Resources")))
        return -EBADMSG;
    if (strcmp(type, "Preempt") != 0 && strcmp(type, "Terminate") != 0)
        return -ENOENT;
    if (!lists_vm(json_object_get(e, "Resources"), vm_name))
        return -ENOENT;
    if (copy_str(out->id, sizeof(out->id), id) < 0 ||
        copy_str(out->type, sizeof(out->type), type) < 0 ||
        copy_str(out->status, sizeof(out->status), status ? status : "") < 0)
        return -EBADMSG;
    /* An unreadable date must not hide the event: -1 tells the watcher to
     * assume the shortest notice Azure gives. A date at or before 1970 is
     * unreadable too: 0 means "started" and other negatives are no value of
     * the contract (found by fuzz_notice). */
    out->not_before_ms = 0;
    if (not_before && *not_before &&
        (sr_parse_rfc1123(not_before, &out->not_before_ms) < 0 || out->not_before_ms <= 0))
        out->not_before_ms = -1;
    return 0;
}

int sr_azure_parse_events(const char *body, size_t len, const char *vm_name,
                          struct sr_azure_event *ev, size_t max, size_t *n)
{
    *n = 0;
    json_t *j = load(body, len);
    json_t *events = json_object_get(j, "Events");
    if (!json_is_object(j) || !json_is_array(events)) {
        json_decref(j);
        return -EBADMSG;
    }
    size_t i;
    json_t *e;
    json_array_foreach(events, i, e)
    {
        if (*n < max && azure_event(e, vm_name, &ev[*n]) == 0)
            (*n)++;
    }
    json_decref(j);
    return 0;
}

/* ---- placement ------------------------------------------------------------ */

#define WORD_MAX 63
static const char word_chars[] =
    "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789._:+-";

/* s[0..n) is a word: copied into buf. */
static int word(const char *s, size_t n, char *buf, size_t len)
{
    if (n == 0 || n > WORD_MAX || n >= len)
        return -EBADMSG;
    for (size_t i = 0; i < n; i++)
        if (s[i] == '\0' || !strchr(word_chars, s[i]))
            return -EBADMSG;
    memcpy(buf, s, n);
    buf[n] = '\0';
    return 0;
}

int sr_metadata_word(const char *body, size_t len, char *buf, size_t buflen)
{
    if (!body)
        return -EBADMSG;
    while (len > 0 && (body[len - 1] == '\n' || body[len - 1] == '\r' || body[len - 1] == ' '))
        len--;
    size_t from = 0;
    for (size_t i = 0; i < len; i++)
        if (body[i] == '/')
            from = i + 1;
    return word(body + from, len - from, buf, buflen);
}

int sr_gcp_region_of(const char *zone, char *buf, size_t len)
{
    const char *dash = zone ? strrchr(zone, '-') : NULL;
    if (!dash || dash == zone || !dash[1])
        return -EBADMSG;
    return word(zone, (size_t)(dash - zone), buf, len);
}

/* A JSON string member that is a word, into buf (else buf stays ""). */
static void word_member(const json_t *o, const char *key, char *buf, size_t len)
{
    const json_t *v = json_object_get(o, key);
    if (json_is_string(v))
        (void)word(json_string_value(v), json_string_length(v), buf, len);
}

int sr_azure_parse_compute(const char *body, size_t len, struct sr_placement *out)
{
    *out = (struct sr_placement){.cloud = ""};
    json_t *j = load(body, len);
    if (!json_is_object(j)) {
        json_decref(j);
        return -EBADMSG;
    }
    word_member(j, "vmSize", out->instance_type, sizeof(out->instance_type));
    word_member(j, "location", out->region, sizeof(out->region));
    char zone[64] = "", both[160];
    const json_t *z = json_object_get(j, "zone");
    word_member(j, "zone", zone, sizeof(zone));
    if (out->region[0] && json_is_string(z) && json_string_length(z) == 0)
        snprintf(out->zone, sizeof(out->zone), "%s", out->region); /* a VM without zones */
    else if (out->region[0] && zone[0] &&
             snprintf(both, sizeof(both), "%s-%s", out->region, zone) < (int)sizeof(both))
        (void)word(both, strlen(both), out->zone, sizeof(out->zone));
    json_decref(j);
    return 0;
}

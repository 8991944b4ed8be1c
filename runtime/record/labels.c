/*
 * labels.c - a run's labels (see labels.h).
 */
#include "labels.h"

#include <errno.h>
#include <stdio.h>
#include <string.h>

#define KEY_CHARS "abcdefghijklmnopqrstuvwxyz0123456789_.-"
#define VALUE_CHARS "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789_.-"

/* What `stats --by` groups by without a label (docs/cost.md). */
static const char *const reserved[] = {"instance_type", "zone",  "cloud", "host", "day",
                                       "week",          "month", "cause", "run",  "sweep"};

static int word_ok(const char *w, const char *chars)
{
    const size_t n = strlen(w);
    return n >= 1 && n <= SR_LABEL_MAX && strspn(w, chars) == n;
}

int sr_label_key_ok(const char *key)
{
    if (!key || !word_ok(key, KEY_CHARS) || !strchr("abcdefghijklmnopqrstuvwxyz0123456789", key[0]))
        return 0;
    for (size_t i = 0; i < sizeof(reserved) / sizeof(reserved[0]); i++)
        if (strcmp(key, reserved[i]) == 0)
            return 0;
    return 1;
}

int sr_label_value_ok(const char *value)
{
    return value && word_ok(value, VALUE_CHARS);
}

/* Sets key to value, keeping v sorted by key. -ENOSPC when full. */
static int put(struct sr_labels *l, const char *key, const char *value)
{
    size_t i = 0;
    while (i < l->n && strcmp(l->v[i].key, key) < 0)
        i++;
    if (i < l->n && strcmp(l->v[i].key, key) == 0) {
        snprintf(l->v[i].value, sizeof(l->v[i].value), "%s", value);
        return 0;
    }
    if (l->n == SR_LABELS_MAX)
        return -ENOSPC;
    memmove(&l->v[i + 1], &l->v[i], (l->n - i) * sizeof(l->v[0]));
    snprintf(l->v[i].key, sizeof(l->v[i].key), "%s", key);
    snprintf(l->v[i].value, sizeof(l->v[i].value), "%s", value);
    l->n++;
    return 0;
}

int sr_labels_add(struct sr_labels *l, const char *kv, char *err, size_t errlen)
{
    const char *eq = strchr(kv, '=');
    char key[SR_LABEL_MAX + 2] = "";
    const size_t kn = eq ? (size_t)(eq - kv) : 0;
    if (eq && kn < sizeof(key)) {
        memcpy(key, kv, kn);
        key[kn] = '\0';
    }
    const char *why = NULL;
    if (!eq)
        why = "a label is KEY=VALUE";
    else if (kn >= sizeof(key) || !word_ok(key, KEY_CHARS) ||
             !strchr("abcdefghijklmnopqrstuvwxyz0123456789", key[0]))
        why = "a key is 1 to 63 of a-z 0-9 _ . - and starts with a letter or a digit";
    else if (!sr_label_key_ok(key))
        why = "that key is a word stats groups by on its own (instance_type, zone, cloud, host, "
              "day, week, month, cause, run, sweep)";
    else if (!sr_label_value_ok(eq + 1))
        why = "a value is 1 to 63 of A-Z a-z 0-9 _ . -";
    if (!why && put(l, key, eq + 1) < 0)
        why = "more than 16 labels";
    if (why) {
        snprintf(err, errlen, "bad label \"%.80s\": %s", kv, why);
        return -EINVAL;
    }
    return 0;
}

int sr_labels_add_list(struct sr_labels *l, const char *list, char *err, size_t errlen)
{
    for (const char *p = list; p && *p;) {
        p += strspn(p, " \t,");
        const size_t n = strcspn(p, ",");
        size_t m = n;
        while (m > 0 && (p[m - 1] == ' ' || p[m - 1] == '\t'))
            m--;
        if (m > 0) {
            char one[2 * SR_LABEL_MAX + 8];
            snprintf(one, sizeof(one), "%.*s", (int)(m < sizeof(one) - 1 ? m : sizeof(one) - 1), p);
            if (m >= sizeof(one) - 1) { /* too long to be a label: say so with its start */
                snprintf(err, errlen, "bad label \"%.40s...\": longer than KEY=VALUE can be", p);
                return -EINVAL;
            }
            const int rc = sr_labels_add(l, one, err, errlen);
            if (rc < 0)
                return rc;
        }
        p += n;
    }
    return 0;
}

void sr_labels_merge(struct sr_labels *l, const struct sr_labels *from)
{
    for (size_t i = 0; i < from->n; i++)
        (void)put(l, from->v[i].key, from->v[i].value);
}

const char *sr_labels_get(const struct sr_labels *l, const char *key)
{
    for (size_t i = 0; l && i < l->n; i++)
        if (strcmp(l->v[i].key, key) == 0)
            return l->v[i].value;
    return NULL;
}

int sr_labels_match(const struct sr_labels *l, const struct sr_labels *want)
{
    for (size_t i = 0; want && i < want->n; i++) {
        const char *v = sr_labels_get(l, want->v[i].key);
        if (!v || strcmp(v, want->v[i].value) != 0)
            return 0;
    }
    return 1;
}

json_t *sr_labels_to_json(const struct sr_labels *l)
{
    json_t *o = json_object();
    for (size_t i = 0; o && i < l->n; i++)
        json_object_set_new(o, l->v[i].key, json_string(l->v[i].value));
    return o;
}

size_t sr_labels_from_json(struct sr_labels *l, const json_t *obj)
{
    l->n = 0;
    size_t dropped = 0;
    const char *k;
    const json_t *v;
    json_object_foreach((json_t *)obj, k, v)
    {
        const char *s = json_string_value(v);
        if (!sr_label_key_ok(k) || !sr_label_value_ok(s) || put(l, k, s) < 0)
            dropped++;
    }
    return dropped;
}

void sr_labels_format(const struct sr_labels *l, char *buf, size_t len)
{
    size_t off = 0;
    if (len)
        buf[0] = '\0';
    for (size_t i = 0; i < l->n && off < len; i++) {
        const int w =
            snprintf(buf + off, len - off, "%s%s=%s", i ? ", " : "", l->v[i].key, l->v[i].value);
        if (w < 0)
            break;
        off += (size_t)w;
    }
}

int sr_quota_by_ok(const char *by)
{
    const size_t n = by ? strlen(by) : 0;
    return n > 0 && n < 128 &&
           strspn(by, "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789._@+-") == n;
}

/*
 * labels.h - a run's labels (`run --label team=nlp`, SPOTRUN_LABELS,
 * `sweep init --label`): what `ls --label` filters on and `stats --by`
 * groups by.
 *
 * A key is 1 to 63 of [a-z0-9_.-], starting with a letter or a digit, and
 * not one of the words `stats --by` groups by on its own (sr_label_key_ok).
 * A value is 1 to 63 of [A-Za-z0-9_.-]. At most SR_LABELS_MAX labels, kept
 * sorted by key; adding a key again replaces its value. Labels read from
 * the store go through the same rules: an entry that breaks them is
 * dropped, never printed.
 *
 * Pure; nothing here prints or exits.
 */
#ifndef SPOTRUN_LABELS_H
#define SPOTRUN_LABELS_H

#include <jansson.h>
#include <stddef.h>

#define SR_LABELS_MAX 16
#define SR_LABEL_MAX 63 /* bytes of a key or a value */

struct sr_label {
    char key[SR_LABEL_MAX + 1], value[SR_LABEL_MAX + 1];
};

struct sr_labels {
    struct sr_label v[SR_LABELS_MAX];
    size_t n;
};

/* 1 when key may name a label; the words stats groups by on their own
 * (instance_type, zone, cloud, host, day, week, month, cause, run, sweep)
 * may not. */
int sr_label_key_ok(const char *key);
int sr_label_value_ok(const char *value);

/* Adds "KEY=VALUE". 0, or -EINVAL with what is wrong in err (lowercase,
 * naming the label: `bad label "Team=x": a key is ...`). */
int sr_labels_add(struct sr_labels *l, const char *kv, char *err, size_t errlen);
/* Adds each of a comma-separated "a=b,c=d" (SPOTRUN_LABELS; blanks around
 * an entry are ignored, an empty list adds nothing). */
int sr_labels_add_list(struct sr_labels *l, const char *list, char *err, size_t errlen);
/* Adds every label of from (replacing the same keys). */
void sr_labels_merge(struct sr_labels *l, const struct sr_labels *from);

/* The value of key, or NULL. */
const char *sr_labels_get(const struct sr_labels *l, const char *key);
/* 1 when l holds every label of want (same key and value). */
int sr_labels_match(const struct sr_labels *l, const struct sr_labels *want);

/* {"team": "nlp", ...}, keys sorted; NULL only without memory. */
json_t *sr_labels_to_json(const struct sr_labels *l);
/* Replaces *l with obj's entries that are valid labels (others dropped);
 * obj not an object: no labels. Returns how many were dropped. */
size_t sr_labels_from_json(struct sr_labels *l, const json_t *obj);
/* "team=nlp, user=ana" ("" without labels), cut to len. */
void sr_labels_format(const struct sr_labels *l, char *buf, size_t len);

/* Who set a quota or approved a run (quota.h): 1 to 127 of [A-Za-z0-9._@+-] (a user name, an
 * e-mail). */
int sr_quota_by_ok(const char *by);

#endif

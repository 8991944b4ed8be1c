/*
 * prices.c - the price table and a run's cost (see prices.h).
 */
#include "prices.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "catalog.h"
#include "fsutil.h"
#include "log.h"
#include "units.h"

#define TYPE_CHARS "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789._/:+-"

void sr_prices_free(struct sr_prices *p)
{
    free(p->v);
    p->v = NULL;
    p->n = 0;
}

const struct sr_price *sr_prices_find(const struct sr_prices *p, const char *type)
{
    for (size_t i = 0; p && type && *type && i < p->n; i++)
        if (strcmp(p->v[i].type, type) == 0)
            return &p->v[i];
    return NULL;
}

/* The offending word as it may be echoed on a terminal: printable ASCII
 * only (any other byte is '?'; no instance type or price needs one), at
 * most 64 bytes. */
static void echoable(const char *word, char *out, size_t cap)
{
    size_t o = 0;
    for (const char *p = word; *p && o + 4 < cap; p++)
        out[o++] = *p >= 0x20 && *p < 0x7f ? *p : '?';
    if (strlen(word) > o)
        memcpy(out + o, "...", 3), o += 3;
    out[o] = '\0';
}

static int bad_line(const char *name, unsigned line, const char *why, const char *word)
{
    char w[68] = "";
    if (word)
        echoable(word, w, sizeof(w));
    return sr_errf(-EINVAL, "%s:%u: %s%s%s%s", name, line, why, word ? " \"" : "", w,
                   word ? "\"" : "");
}

/* One line's words (at most 4, each cut at 80 bytes); *n their count. */
static void split(char *line, char *w[4], size_t *n)
{
    *n = 0;
    for (char *p = line; *p;) {
        p += strspn(p, " \t\r");
        if (!*p)
            break;
        const size_t k = strcspn(p, " \t\r");
        if (*n < 4)
            w[*n] = p;
        (*n)++;
        p += k;
        if (*p)
            *p++ = '\0';
    }
}

/* A price word: a non-negative decimal below a million an hour. */
static int price_of(const char *word, double *out)
{
    return sr_parse_decimal(word, out) == 0 && *out < 1e6 ? 0 : -EINVAL;
}

static int parse_line(const char *name, unsigned ln, char *line, struct sr_prices *out)
{
    char *hash = strchr(line, '#');
    if (hash)
        *hash = '\0';
    char *w[4];
    size_t n;
    split(line, w, &n);
    if (n == 0)
        return 0;
    if (n > 3)
        return bad_line(name, ln,
                        "expected `instance_type spot_price [on_demand_price]`, got "
                        "more fields",
                        NULL);
    if (n < 2)
        return bad_line(name, ln,
                        "expected `instance_type spot_price [on_demand_price]`, got "
                        "no price for",
                        w[0]);
    if (strlen(w[0]) >= sizeof(out->v[0].type) || strspn(w[0], TYPE_CHARS) != strlen(w[0]))
        return bad_line(name, ln, "not an instance type (letters, digits and ._/:+-, at most 63)",
                        strlen(w[0]) > 63 ? NULL : w[0]);
    struct sr_price p = {0};
    snprintf(p.type, sizeof(p.type), "%s", w[0]);
    if (price_of(w[1], &p.spot) < 0)
        return bad_line(name, ln, "the spot price is not a price like 0.42:", w[1]);
    if (n == 3 && strcmp(w[2], "-") != 0 && price_of(w[2], &p.on_demand) < 0)
        return bad_line(name, ln, "the on-demand price is not a price like 1.006 (or -):", w[2]);
    if (sr_prices_find(out, p.type))
        return bad_line(name, ln, "instance type given twice:", p.type);
    if (out->n == SR_PRICES_MAX)
        return bad_line(name, ln, "too many prices (at most 4096)", NULL);
    if (out->n % 64 == 0) {
        struct sr_price *v = realloc(out->v, (out->n + 64) * sizeof(*v));
        if (!v)
            return -ENOMEM;
        out->v = v;
    }
    out->v[out->n++] = p;
    return 0;
}

int sr_prices_parse(const char *name, const char *text, size_t len, struct sr_prices *out)
{
    *out = (struct sr_prices){0};
    if (memchr(text, '\0', len))
        return sr_errf(-EINVAL, "%s: not a text file (it holds a NUL byte)", name);
    unsigned ln = 0;
    int rc = 0;
    for (size_t i = 0; rc == 0 && i < len;) {
        const char *nl = memchr(text + i, '\n', len - i);
        const size_t k = nl ? (size_t)(nl - (text + i)) : len - i;
        char line[1024];
        ln++;
        if (k >= sizeof(line))
            rc = bad_line(name, ln, "line too long (at most 1023 bytes)", NULL);
        else {
            memcpy(line, text + i, k);
            line[k] = '\0';
            rc = parse_line(name, ln, line, out);
        }
        i += k + 1;
    }
    if (rc < 0)
        sr_prices_free(out);
    return rc;
}

int sr_prices_load(const char *path, struct sr_prices *out)
{
    char *buf = NULL;
    size_t len = 0;
    *out = (struct sr_prices){0};
    /* O_NONBLOCK: a FIFO (or a device) must be refused, never waited on. */
    const int fd = open(path, O_RDONLY | O_CLOEXEC | O_NONBLOCK | O_NOCTTY);
    struct stat sb;
    int rc = fd < 0 || fstat(fd, &sb) < 0 ? sr_errf(-errno, "%s", strerror(errno)) : 0;
    if (rc == 0 && !S_ISREG(sb.st_mode))
        rc = sr_errf(-EINVAL, "it is %s, not a regular file: give a file of prices",
                     S_ISDIR(sb.st_mode)    ? "a directory"
                     : S_ISFIFO(sb.st_mode) ? "a FIFO"
                                            : "a special file");
    if (rc == 0)
        rc = sr_read_fd(fd, path, SR_PRICES_FILE_MAX, &buf, &len);
    if (fd >= 0)
        close(fd);
    if (rc < 0) {
        char why[256];
        snprintf(why, sizeof(why), "%s", sr_strerror(rc));
        return sr_errf(rc, "cannot read the price table %s: %s", path, why);
    }
    rc = sr_prices_parse(path, buf, len, out);
    free(buf);
    return rc;
}

double sr_prices_run_cost(const struct sr_history *h, const struct sr_prices *tab,
                          double fallback_per_hour)
{
    double cost = 0;
    /* Sessions as history.c counts instance time: first to last event of
     * the attempts one wrapper process chained by restarts. */
    for (size_t i = 0; i < h->n_att;) {
        size_t j = i;
        while (j + 1 < h->n_att && h->att[j + 1].session == h->att[i].session)
            j++;
        const int64_t ms = h->att[j].last_ms - h->att[i].first_ms;
        const struct sr_price *p = sr_prices_find(tab, h->att[i].instance_type);
        const double per_hour = p ? p->spot : fallback_per_hour;
        if (ms > 0) {
            if (per_hour <= 0 && !p)
                return -1;
            cost += (double)ms / 3600000.0 * per_hour * (double)h->att[i].nodes;
        }
        i = j + 1;
    }
    return cost;
}

int sr_prices_sweep_spent(struct sr_store *st, const char *sweep, const char *except_run,
                          const struct sr_prices *tab, double per_hour, double *spent)
{
    struct sr_strlist runs = {0};
    *spent = 0;
    int rc = sr_ckpt_list_runs(st, &runs);
    const size_t plen = strlen(sweep);
    for (size_t i = 0; rc == 0 && i < runs.n; i++) {
        const char *id = runs.v[i];
        /* "<sweep>-<K>": K digits only (another sweep "<sweep>-x" is not ours) */
        if (strncmp(id, sweep, plen) != 0 || id[plen] != '-' || !id[plen + 1] ||
            strspn(id + plen + 1, "0123456789") != strlen(id + plen + 1) ||
            (except_run && strcmp(id, except_run) == 0))
            continue;
        struct sr_history h;
        sr_hist_init(&h);
        rc = sr_hist_load(st, id, &h);
        if (rc == -ENOENT) /* deleted meanwhile */
            rc = 0;
        const double c = rc == 0 ? sr_prices_run_cost(&h, tab, per_hour) : 0;
        if (c > 0)
            *spent += c;
        sr_hist_free(&h);
    }
    sr_strlist_free(&runs);
    return rc;
}

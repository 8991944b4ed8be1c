/*
 * nodes.c - this wrapper's node count and rank (see nodes.h).
 */
#include "nodes.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "log.h"
#include "manifest.h"
#include "units.h"

/* A value given on the command line: a number or "{env:NAME}". */
static int flag_value(const char *flag, const char *s, int64_t min, int64_t max, uint32_t *out)
{
    const char *v = s;
    char name[128];
    if (strncmp(s, "{env:", 5) == 0) {
        const size_t n = strlen(s);
        if (n < 7 || s[n - 1] != '}' || n - 6 >= sizeof(name))
            return sr_errf(-EINVAL, "invalid value \"%s\" for --%s (a number or {env:NAME})", s,
                           flag);
        memcpy(name, s + 5, n - 6);
        name[n - 6] = '\0';
        v = getenv(name);
        if (!v || !*v)
            return sr_errf(-EINVAL, "--%s %s: %s is %s", flag, s, name,
                           v ? "set but empty" : "not set");
    }
    int64_t x;
    if (sr_parse_int(v, min, max, &x) < 0)
        return sr_errf(-EINVAL, "invalid value \"%s\" for --%s (%lld to %lld)", v, flag,
                       (long long)min, (long long)max);
    *out = (uint32_t)x;
    return 0;
}

/* A launcher's pair of variables, when both are set and sane. */
static int from_env(const char *count_var, const char *rank_var, const char *name,
                    struct sr_nodes *out)
{
    const char *c = getenv(count_var), *r = getenv(rank_var);
    if (!c || !*c || !r || !*r)
        return 0;
    int64_t n, k;
    if (sr_parse_int(c, 1, SR_NODES_MAX, &n) < 0 || sr_parse_int(r, 0, n - 1, &k) < 0)
        return sr_errf(-EINVAL, "%s=%s and %s=%s are not a node count and a rank in it", count_var,
                       c, rank_var, r);
    out->nodes = (uint32_t)n;
    out->rank = (uint32_t)k;
    snprintf(out->from, sizeof(out->from), "%s", name);
    return 1;
}

int sr_nodes_resolve(const char *nodes_opt, const char *rank_opt, struct sr_nodes *out)
{
    memset(out, 0, sizeof(*out));
    out->nodes = 1;
    const int has_n = nodes_opt && *nodes_opt, has_r = rank_opt && *rank_opt;
    if (has_n || has_r) {
        if (!has_n || !has_r)
            return sr_errf(-EINVAL, "--nodes and --node-rank go together");
        int rc = flag_value("nodes", nodes_opt, 1, SR_NODES_MAX, &out->nodes);
        if (rc == 0)
            rc = flag_value("node-rank", rank_opt, 0, (int64_t)out->nodes - 1, &out->rank);
        snprintf(out->from, sizeof(out->from), "--nodes");
        return rc;
    }
    static const struct {
        const char *count, *rank, *name;
    } launchers[] = {
        {"SLURM_STEP_NUM_TASKS", "SLURM_PROCID", "slurm"},
        {"AWS_BATCH_JOB_NUM_NODES", "AWS_BATCH_JOB_NODE_INDEX", "aws-batch"},
        {"SKYPILOT_NUM_NODES", "SKYPILOT_NODE_RANK", "skypilot"},
    };
    for (size_t i = 0; i < sizeof(launchers) / sizeof(launchers[0]); i++) {
        const int rc = from_env(launchers[i].count, launchers[i].rank, launchers[i].name, out);
        if (rc != 0)
            return rc < 0 ? rc : 0;
    }
    snprintf(out->from, sizeof(out->from), "default");
    return 0;
}

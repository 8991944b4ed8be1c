/*
 * run_checks.c - `spotrun run`'s pre-checks against the run's record in
 * the store, made under the lease before the job starts (cmd_run.h): a run
 * DONE is not run again (nor with another command), a run keeps its kind
 * (single- or multi-node), and --every auto and --stall-timeout start from
 * what the run's history measured.
 */
#include <inttypes.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "catalog.h"
#include "cmd_run.h"
#include "history.h"
#include "keeper.h"
#include "layout.h"
#include "log.h"

/* The command of the run's newest "start" event (the last attempt's log:
 * its "argv"), or NULL when none is recorded (a run from before the field,
 * or one made by push). The caller frees it. */
static json_t *recorded_argv(struct sr_store *st, const char *run,
                             const struct sr_supervise_config *c)
{
    /* This node's own logs: the nodes of a multi-node run may run
     * different commands (a launcher's --node_rank). */
    const int mine = sr_cfg_rank(c);
    char prefix[PATH_MAX];
    sr_key_run(prefix, sizeof(prefix), run, SR_KEY_EVENTS);
    struct sr_strlist names;
    if (sr_store_list(st, prefix, &names) < 0) {
        return NULL;
    }
    json_t *argv = NULL;
    for (size_t i = names.n; i-- > 0 && !argv;) {
        char key[PATH_MAX + 300], *buf = NULL;
        size_t len = 0;
        int node = -1;
        if (sr_key_log_attempt(names.v[i], &node) == UINT32_MAX || node != mine ||
            sr_key_join(key, sizeof(key), prefix, names.v[i]) < 0 ||
            sr_store_get(st, key, 64u << 20, &buf, &len) < 0) {
            continue;
        }
        for (char *line = buf, *next; line && *line; line = next) {
            if ((next = strchr(line, '\n')))
                *next++ = '\0';
            json_t *o = json_loads(line, 0, NULL);
            const char *ev = json_string_value(json_object_get(o, "event"));
            json_t *a = json_object_get(o, "argv");
            if (ev && strcmp(ev, "start") == 0 && json_is_array(a)) {
                json_decref(argv);
                argv = json_incref(a);
            }
            json_decref(o);
        }
        free(buf);
    }
    sr_strlist_free(&names);
    return argv;
}

/* A command as a shell would take it back: words with anything but
 * [A-Za-z0-9_./=:,+@%-] in single quotes. */
static void shell_words(char *out, size_t len, size_t n, const char *(*word)(void *, size_t),
                        void *ctx)
{
    size_t o = 0;
    out[0] = '\0';
    for (size_t i = 0; i < n && o < len; i++) {
        const char *w = word(ctx, i);
        const int plain = *w && strspn(w, "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz"
                                          "0123456789_./=:,+@%-") == strlen(w);
        int k = snprintf(out + o, len - o, "%s%s%s%s", i ? " " : "", plain ? "" : "'", w,
                         plain ? "" : "'");
        o = k < 0 ? len : o + (size_t)k;
    }
    if (o >= len && len > 4)
        memcpy(out + len - 4, "...", 4);
}

static const char *json_word(void *ctx, size_t i)
{
    const char *w = json_string_value(json_array_get(ctx, i));
    return w ? w : "?";
}

static const char *argv_word(void *ctx, size_t i)
{
    return ((char **)ctx)[i];
}

/* A run that finished (DONE in the store) is not run again. Read once, under
 * the lease: a wrapper that finished the run while this one waited for the
 * lease is seen. Asked to run another command than the one that finished
 * it, the wrapper refuses (64) rather than exit 0 for a command it never
 * ran. */
int sr_run_stop_if_done(const struct run_ctx *r)
{
    const int rc = sr_ckpt_is_done(r->c.st, r->run_id);
    if (rc < 0)
        return sr_fail(rc, "cannot read the store");
    if (rc == 0)
        return GO_ON;
    json_t *was = recorded_argv(r->c.st, r->run_id, &r->c);
    size_t n = 0;
    while (r->c.argv[n])
        n++;
    int same = !was || json_array_size(was) == n;
    for (size_t i = 0; same && i < n; i++)
        same = strcmp(json_word(was, i), r->c.argv[i]) == 0;
    if (!same) {
        char then[1024], now[1024];
        shell_words(then, sizeof(then), json_array_size(was), json_word, was);
        shell_words(now, sizeof(now), n, argv_word, r->c.argv);
        fprintf(stderr,
                "spotrun run: run %s already finished with `%s` (DONE in %s); this asks for "
                "`%s`, which was not run: use --fresh to start the run over with it, or another "
                "--run-id\n",
                r->run_id, then, sr_store_url(r->c.st), now);
        json_decref(was);
        return SR_EX_USAGE;
    }
    json_decref(was);
    sr_info("run %s is already done (DONE in %s); use --fresh to start it over", r->run_id,
            sr_store_url(r->c.st));
    return 0;
}

/* A run keeps its kind (docs/multinode.md, "One owner, one kind"): a
 * multi-node run is not taken over by one node unless asked for
 * (--restore-parts all: every part into this directory), nor a single-node
 * run by a group. Read under the lease, after --fresh. */
int sr_run_check_kind(const struct run_ctx *r)
{
    if (r->c.restore_all)
        return GO_ON;
    uint32_t have;
    uint64_t seq;
    const int rc = sr_run_nodes(r->c.st, r->run_id, &have, &seq);
    if (rc < 0)
        return sr_fail(rc, "cannot read the store");
    const uint32_t want = r->c.nodes;
    /* A group of another size is the restore's to refuse (it names both). */
    if (have == 0 || have == want || (have > 1 && want > 1))
        return GO_ON;
    if (have == SR_RUN_MULTI)
        fprintf(stderr,
                "spotrun run: run %s is a multi-node run (its nodes' leases LEASE.<rank> are in "
                "%s; no checkpoint yet): run it with --nodes N --node-rank R on every node, or "
                "start it over on one node with --fresh\n",
                r->run_id, sr_store_url(r->c.st));
    else if (have > 1)
        fprintf(stderr,
                "spotrun run: run %s is a multi-node run of %u nodes (its newest checkpoint, seq "
                "%llu, has one part per node) and this is a single-node run: run it with "
                "--nodes %u on every node, resume it here with --restore-parts all (every part "
                "into this directory), or start it over with --fresh\n",
                r->run_id, have, (unsigned long long)seq, have);
    else
        fprintf(stderr,
                "spotrun run: run %s is a single-node run (its newest checkpoint, seq %llu, was "
                "made by one node) and this is node %u of %u: resume it with --restore-parts "
                "all on every node (each gets the whole checkpoint), run it on one node without "
                "--nodes, or start it over with --fresh\n",
                r->run_id, (unsigned long long)seq, r->c.node_rank, want);
    return SR_EX_USAGE;
}

/* Interruptions the interval should expect: preemptions, and attempts that
 * vanished (the node went without a word, as a spot instance may). */
static uint64_t interruptions(const struct sr_history *h)
{
    uint64_t n = h->preemptions;
    for (size_t i = 0; i < h->n_att; i++)
        n += h->att[i].end == SR_END_VANISHED;
    return n;
}

/* A sweep's trials (runs "<sweep>-<K>") share their instances' fate: their
 * preemptions and instance time are pooled. Bounded, so that a huge sweep
 * costs a bounded start. */
#define SWEEP_RUNS_MAX 256

static void sweep_history(struct sr_store *st, const char *sweep, const char *self,
                          struct sr_every_auto *a)
{
    struct sr_strlist runs = {0};
    const size_t plen = strlen(sweep);
    if (sr_ckpt_list_runs(st, &runs) < 0) {
        return;
    }
    size_t loaded = 0;
    for (size_t i = 0; i < runs.n && loaded < SWEEP_RUNS_MAX; i++) {
        const char *id = runs.v[i];
        if (strncmp(id, sweep, plen) != 0 || id[plen] != '-' || strcmp(id, self) == 0)
            continue;
        struct sr_history h;
        sr_hist_init(&h);
        if (sr_hist_load(st, id, &h) == 0) {
            a->hist_instance_ms += h.instance_ms;
            a->hist_preemptions += interruptions(&h);
            loaded++;
        }
        sr_hist_free(&h);
    }
    sr_strlist_free(&runs);
    if (loaded)
        a->mtbf_scope = "sweep";
}

/* --every auto starts from what the run's history measured: its instance
 * time and preemptions (pooled over the sweep's trials when it is one), and
 * its stage p50 (docs/interval.md). */
int sr_run_every_history(struct run_ctx *r)
{
    struct sr_every_auto *a = &r->c.every_auto;
    if (!a->on)
        return GO_ON;
    int rc;
    const struct sr_history *h = sr_hist_once_get(&r->hist, &rc);
    if (!h) {
        sr_warn("--every auto: cannot read the run's history (%s); starting from the priors",
                sr_strerror(rc));
    } else {
        a->hist_instance_ms = h->instance_ms;
        a->hist_preemptions = interruptions(h);
        a->hist_cost_ms = h->staged ? (int64_t)(h->wait_p50 * 1000.0 + 0.5) : 0;
    }
    const char *sweep = r->trial >= 0 ? r->sweep.name : NULL;
    const size_t n = sweep ? strlen(sweep) : 0;
    if (n && strncmp(r->run_id, sweep, n) == 0 && r->run_id[n] == '-')
        sweep_history(r->c.st, sweep, r->run_id, a);
    sr_debug("--every auto: history %" PRId64 "ms on instances, %" PRIu64
             " interruption(s), stage p50 %" PRId64 "ms",
             a->hist_instance_ms, a->hist_preemptions, a->hist_cost_ms);
    return GO_ON;
}

/* --stall-timeout: the run's earlier stalls count toward --max-restarts, so
 * that a run that hangs each time it is rerun stops; once it heartbeated,
 * an attempt that hangs before its first heartbeat is judged too. */
int sr_run_stall_history(struct run_ctx *r)
{
    if (!r->c.stall_auto && !r->c.stall_timeout_ms)
        return GO_ON;
    int rc;
    const struct sr_history *h = sr_hist_once_get(&r->hist, &rc);
    if (!h)
        sr_warn("--stall-timeout: cannot read the run's history (%s); its earlier stalls are not "
                "counted",
                sr_strerror(rc));
    else
        r->c.prior_stalls = sr_hist_stalls(h);
    if (h) /* then every attempt is judged from its start */
        r->c.prior_beaten = sr_hist_heartbeated(h, &r->c.prior_startup_ms);
    if (r->c.prior_stalls && !sr_cfg_multinode(&r->c)) /* multi-node: the engine reruns the group */
        sr_info("run %s stalled %u time(s) before (--max-restarts %u counts them)", r->run_id,
                r->c.prior_stalls, r->c.max_restarts);
    return GO_ON;
}

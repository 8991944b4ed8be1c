/*
 * run_trial.c - `spotrun run --sweep`: a sweep's trial (docs/sweeps.md).
 * Which trial (--trial or the engine's array index), its command (the
 * sweep's, with {param} filled in) and environment, the binding of its run
 * to the trial under the lease, the refusal of a trial marked failed, and
 * its end mark after the job (cmd_run.h).
 */
#include <ctype.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "catalog.h"
#include "cmd_run.h"
#include "log.h"
#include "units.h"

/* The trial index: --trial, else the engine's array index (*from names
 * which). */
static int trial_index(const struct run_opts *o, const struct sr_sweep *sw, long *trial,
                       const char **from_out)
{
    static const char *const engines[] = {"SLURM_ARRAY_TASK_ID", "JOB_COMPLETION_INDEX",
                                          "AWS_BATCH_JOB_ARRAY_INDEX"};
    const char *v = o->trial && *o->trial ? o->trial : NULL, *from = "--trial";
    for (size_t i = 0; !v && i < sizeof(engines) / sizeof(engines[0]); i++)
        if ((v = getenv(engines[i])) && *v)
            from = engines[i];
        else
            v = NULL;
    if (!v) {
        fprintf(stderr,
                "spotrun run: which trial of sweep %s? Give --trial K, or run it as a Slurm "
                "array task, a Kubernetes Indexed Job or an AWS Batch array child\n",
                sw->name);
        return SR_EX_USAGE;
    }
    int64_t k;
    const size_t n = sr_sweep_count(sw);
    if (sr_parse_int(v, 0, SR_SWEEP_TRIALS_MAX, &k) < 0) {
        fprintf(stderr, "spotrun run: %s=\"%s\" is not a trial index (0, 1, 2, ...)\n", from, v);
        return SR_EX_USAGE;
    }
    if (n == 0) {
        fprintf(stderr,
                "spotrun run: %s=%s: sweep %s has no trials (add some with `spotrun "
                "sweep init %s --add`)\n",
                from, v, sw->name, sw->name);
        return SR_EX_USAGE;
    }
    if ((size_t)k >= n) {
        fprintf(stderr, "spotrun run: %s=%s: sweep %s has %zu trial%s (0..%zu)\n", from, v,
                sw->name, n, n == 1 ? "" : "s", n - 1);
        return SR_EX_USAGE;
    }
    *trial = (long)k;
    *from_out = from;
    return GO_ON;
}

/* SPOTRUN_SWEEP, SPOTRUN_TRIAL and SPOTRUN_PARAM_<NAME> for the job (it
 * inherits the wrapper's environment); none of them in any other run. A
 * parameter the trial does not have (absent: the empty value) is unset. */
static void trial_env(const struct sr_sweep *sw, long trial)
{
    extern char **environ;
    for (int again = 1; again;) {
        again = 0;
        for (char **e = environ; *e; e++)
            if (strncmp(*e, "SPOTRUN_PARAM_", 14) == 0) {
                char name[128];
                snprintf(name, sizeof(name), "%.*s", (int)strcspn(*e, "="), *e);
                unsetenv(name);
                again = 1;
                break;
            }
    }
    unsetenv("SPOTRUN_SWEEP");
    unsetenv("SPOTRUN_TRIAL");
    unsetenv("SPOTRUN_PARAMS");
    if (!sw)
        return;
    json_t *all = json_object(); /* SPOTRUN_PARAMS: every value by its own name */
    char buf[32];
    snprintf(buf, sizeof(buf), "%ld", trial);
    setenv("SPOTRUN_SWEEP", sw->name, 1);
    setenv("SPOTRUN_TRIAL", buf, 1);
    for (size_t i = 0; i < sr_sweep_nparams(sw); i++) {
        const char *p = sr_sweep_param(sw, i);
        char name[SR_SWEEP_PARAM_NAME_MAX + 16];
        size_t n = (size_t)snprintf(name, sizeof(name), "SPOTRUN_PARAM_");
        for (; *p && n + 1 < sizeof(name); p++)
            name[n++] = (char)toupper((unsigned char)*p);
        name[n] = '\0';
        const char *v = sr_sweep_value(sw, (size_t)trial, sr_sweep_param(sw, i));
        if (v && *v) { /* an empty value is a parameter the trial does not have: unset */
            setenv(name, v, 1);
            json_object_set_new(all, sr_sweep_param(sw, i), json_string(v));
        }
    }
    char *s = all ? json_dumps(all, JSON_COMPACT) : NULL;
    if (s)
        setenv("SPOTRUN_PARAMS", s, 1);
    free(s);
    json_decref(all);
}

/* --sweep: the trial's definition, index, command (the one given, else the
 * sweep's, with {param} filled in) and run id (<sweep>-<K> unless
 * --run-id says otherwise). */
int sr_run_trial_select(struct run_opts *o, char ***cmd, struct run_ctx *r)
{
    r->trial = -1;
    if (!o->sweep || !*o->sweep) {
        trial_env(NULL, 0);
        return GO_ON;
    }
    int rc = sr_sweep_read(r->c.st, o->sweep, &r->sweep);
    if (rc < 0) {
        fprintf(stderr, "spotrun run: --sweep: %s\n", sr_strerror(rc));
        return rc == -EINVAL ? SR_EX_USAGE : sr_exit_code(rc);
    }
    const char *from = NULL;
    int code = trial_index(o, &r->sweep, &r->trial, &from);
    if (code != GO_ON)
        return code;
    char **tmpl = *cmd;
    if (!tmpl[0]) {
        static char *none[] = {NULL};
        const json_t *c = r->sweep.command;
        size_t n = json_array_size(c);
        tmpl = n ? calloc(n + 1, sizeof(char *)) : none;
        for (size_t i = 0; tmpl && i < n; i++)
            tmpl[i] = (char *)json_string_value(json_array_get(c, i));
        if (!tmpl || !tmpl[0]) {
            fprintf(stderr, "spotrun run: sweep %s stores no command: give one after --\n",
                    r->sweep.name);
            return SR_EX_USAGE;
        }
    }
    if (r->sweep.pbt && (rc = sr_run_pbt_params(r->c.st, &r->sweep, r->trial)) < 0) {
        fprintf(stderr, "spotrun run: sweep %s: %s\n", r->sweep.name, sr_strerror(rc));
        return sr_exit_code(rc);
    }
    rc = sr_sweep_expand(&r->sweep, (size_t)r->trial, tmpl, &r->trial_argv);
    if (tmpl != *cmd && tmpl[0])
        free(tmpl);
    if (rc < 0) {
        fprintf(stderr, "spotrun run: sweep %s: %s\n", r->sweep.name, sr_strerror(rc));
        return SR_EX_USAGE;
    }
    *cmd = r->trial_argv;
    if (!o->run_id || !*o->run_id) {
        sr_sweep_run_id(r->sweep.name, (size_t)r->trial, r->trial_run_id, sizeof(r->trial_run_id));
        o->run_id = r->trial_run_id;
    }
    trial_env(&r->sweep, r->trial);
    /* Said once: an index from the engine says which trial this task is;
     * one given with --trial (a `sweep work` worker, which logs its claim
     * with the trial's parameters, or a person) is no news. */
    if (strcmp(from, "--trial") == 0)
        sr_debug("sweep %s trial %ld", r->sweep.name, r->trial);
    else
        sr_info("sweep %s trial %ld (%s)", r->sweep.name, r->trial, from);
    return GO_ON;
}

/* The trial's run is the trial's (it records the sweep, sweep.h), or it is
 * made so now, under the lease, before anything of it is read: a run that
 * merely has the trial's name (another sweep's, one made by hand) is never
 * resumed or taken as done. */
int sr_run_trial_bind(const struct run_ctx *r)
{
    if (r->trial < 0)
        return GO_ON;
    const int rc = sr_sweep_bind_run(r->c.st, &r->sweep, (size_t)r->trial, r->run_id);
    if (rc == -EEXIST) {
        fprintf(stderr, "spotrun run: %s\n", sr_strerror(rc));
        return SR_EX_CANTCREAT;
    }
    return rc < 0 ? sr_fail(rc, "cannot bind the trial's run") : GO_ON;
}

/* A trial that failed past --max-restarts is left alone: rerunning it (an
 * array rerun, a requeue) says so and fails the same way. */
int sr_run_trial_refuse_failed(const struct run_ctx *r)
{
    struct sr_trial_end_info end;
    const int rc = r->trial < 0
                       ? -ENOENT
                       : sr_sweep_read_failed(r->c.st, r->sweep.name, (size_t)r->trial, &end);
    if (rc == -EBADMSG) /* its name says failed; its content is not believed */
        sr_warn("%s", sr_strerror(rc));
    if (rc < 0 && rc != -EBADMSG) {
        return GO_ON;
    }
    sr_warn("trial %ld of sweep %s failed (%s on %s); it is left alone: add --fresh to run it "
            "again",
            r->trial, r->sweep.name, end.cause[0] ? end.cause : "gave up",
            end.host[0] ? end.host : "?");
    return end.exit_code > 0 && end.exit_code != SR_EX_TEMPFAIL ? end.exit_code : 1;
}

/* The run's labels: its sweep's, under its own (--label, SPOTRUN_LABELS);
 * every start event records them. */
void sr_run_labels(const struct run_opts *o, struct run_ctx *r)
{
    struct sr_labels all = {0};
    if (r->trial >= 0)
        sr_labels_from_json(&all, r->sweep.labels); /* entries that break the rules dropped */
    sr_labels_merge(&all, &o->labels);
    if (all.n)
        r->c.labels = r->labels = sr_labels_to_json(&all);
}

/* The trial's end mark: done once the run is DONE, failed when the job kept
 * failing past --max-restarts. */
void sr_run_trial_mark_end(struct run_ctx *r, int code)
{
    if (r->trial < 0)
        return;
    struct sr_trial_end_info end = {.unix_ms = sr_wall_ms(), .exit_code = code};
    gethostname(end.host, sizeof(end.host) - 1);
    /* done whatever the code: a done run that heard a notice as it
     * finished exits 75 (supervisor.c) */
    if ((code == 0 || code == SR_EX_TEMPFAIL) && sr_ckpt_is_done(r->c.st, r->run_id) == 1) {
        end.state = SR_TRIAL_DONE;
    } else if (sr_run_end_row(r->result.end)->trial == SR_TRIAL_FAILED) { /* outcome.h */
        end.state = SR_TRIAL_FAILED;
        snprintf(end.cause, sizeof(end.cause), "%s", r->result.cause);
    } else if (code == SR_EX_LIMIT &&
               sr_run_limits_trial_end(&r->limits, end.by, sizeof(end.by)) == SR_TRIAL_CANCELLED) {
        end.state = SR_TRIAL_CANCELLED; /* the operator's: never claimed again */
        snprintf(end.cause, sizeof(end.cause), "cancelled");
    } else {
        return;
    }
    const int rc = sr_sweep_mark_end(r->c.st, r->sweep.name, (size_t)r->trial, &end);
    if (rc < 0)
        sr_warn("cannot mark trial %ld of sweep %s %s: %s", r->trial, r->sweep.name,
                sr_trial_end_name(end.state), sr_strerror(rc));
    else
        sr_info("trial %ld of sweep %s %s", r->trial, r->sweep.name,
                end.state == SR_TRIAL_DONE ? "is done" : sr_trial_end_name(end.state));
}

/*
 * cmd_sweep_export.c - `spotrun sweep export NAME --optuna URL`: the sweep
 * as a study in Optuna's own storage (docs/sweeps.md, "Exporting to
 * Optuna"). It reads what `sweep show --json` prints (sweepload.c,
 * sweepview.c: parameters, states, curves, the best) and hands it on stdin
 * to `python3 -m spotrun.optuna_export`, run by the first interpreter that
 * imports optuna (SPOTRUN_PYTHON, else python3 on PATH, else
 * /usr/bin/python3), with the spotrun Python package found beside this
 * binary's install (or in the source tree it was built from) put first on
 * PYTHONPATH. Optuna's API writes the study; nothing here knows its schema.
 */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "cli.h"
#include "log.h"
#include "sweep.h"
#include "sweeprec.h"
#include "sweepview.h"

#ifndef SPOTRUN_PYTHON_REL
#define SPOTRUN_PYTHON_REL "lib/python3/dist-packages"
#endif
#ifndef SPOTRUN_PYTHON_SRC
#define SPOTRUN_PYTHON_SRC ""
#endif

/* The directory holding spotrun/optuna_export.py: beside the installed
 * binary (<prefix>/bin/spotrun -> <prefix>/<SPOTRUN_PYTHON_REL>), else the
 * source tree's python/; "" when neither has it (the interpreter's own
 * path may). */
static void package_dir(char *out, size_t len)
{
    char exe[PATH_MAX], probe[PATH_MAX + 128];
    out[0] = '\0';
    const ssize_t n = readlink("/proc/self/exe", exe, sizeof(exe) - 1);
    if (n > 0) {
        exe[n] = '\0';
        char *slash = strrchr(exe, '/');
        if (slash) {
            *slash = '\0';
            const int w = snprintf(probe, sizeof(probe), "%s/../%s/spotrun/optuna_export.py", exe,
                                   SPOTRUN_PYTHON_REL);
            if (w > 0 && (size_t)w < sizeof(probe) && access(probe, R_OK) == 0) {
                if (snprintf(out, len, "%s/../%s", exe, SPOTRUN_PYTHON_REL) >= (int)len)
                    out[0] = '\0';
                return;
            }
        }
    }
    snprintf(probe, sizeof(probe), "%s/spotrun/optuna_export.py", SPOTRUN_PYTHON_SRC);
    if (SPOTRUN_PYTHON_SRC[0] && access(probe, R_OK) == 0)
        snprintf(out, len, "%s", SPOTRUN_PYTHON_SRC);
}

/* Runs argv with pythonpath first on PYTHONPATH, in on its stdin (NULL:
 * /dev/null), its stdout and stderr ours unless quiet (then /dev/null).
 * Its exit code, 127 when it could not start, 128 + N for a signal. */
static int run_python(char *const argv[], const char *pythonpath, const char *in, size_t len,
                      int quiet)
{
    int fd[2] = {-1, -1};
    if (in && pipe(fd) < 0)
        return 127;
    const pid_t pid = fork();
    if (pid < 0) {
        if (in) {
            close(fd[0]);
            close(fd[1]);
        }
        return 127;
    }
    if (pid == 0) {
        const int null = open("/dev/null", O_RDWR);
        dup2(in ? fd[0] : null, 0);
        if (quiet) {
            dup2(null, 1);
            dup2(null, 2);
        }
        if (in) {
            close(fd[0]);
            close(fd[1]);
        }
        if (pythonpath[0]) {
            const char *was = getenv("PYTHONPATH");
            char buf[PATH_MAX * 2];
            snprintf(buf, sizeof(buf), "%s%s%s", pythonpath, was && *was ? ":" : "",
                     was ? was : "");
            setenv("PYTHONPATH", buf, 1);
        }
        execvp(argv[0], argv);
        _exit(127);
    }
    if (in) {
        close(fd[0]);
        void (*was)(int) = signal(SIGPIPE, SIG_IGN);
        for (size_t off = 0; off < len;) {
            const ssize_t w = write(fd[1], in + off, len - off);
            if (w < 0 && errno == EINTR)
                continue;
            if (w <= 0)
                break; /* it stopped reading: its exit says why */
            off += (size_t)w;
        }
        close(fd[1]);
        signal(SIGPIPE, was);
    }
    int status = 0;
    while (waitpid(pid, &status, 0) < 0 && errno == EINTR)
        ;
    return WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
}

/* The first interpreter that imports optuna into py; 0, or SR_EX_UNAVAILABLE
 * after saying which were tried. */
static int pick_python(const char *cmd, char *py, size_t len)
{
    const char *env = getenv("SPOTRUN_PYTHON");
    const char *cands[] = {env && *env ? env : "python3", env && *env ? NULL : "/usr/bin/python3",
                           NULL};
    for (size_t i = 0; cands[i]; i++) {
        char *argv[] = {(char *)cands[i], "-c", "import optuna", NULL};
        if (run_python(argv, "", NULL, 0, 1) == 0) {
            snprintf(py, len, "%s", cands[i]);
            return 0;
        }
    }
    if (env && *env)
        fprintf(stderr,
                "spotrun %s: SPOTRUN_PYTHON=%s cannot import optuna: install Optuna for it "
                "(Debian: apt install python3-optuna; else pip install optuna), or unset "
                "SPOTRUN_PYTHON\n",
                cmd, env);
    else
        fprintf(stderr,
                "spotrun %s: neither python3 nor /usr/bin/python3 can import optuna: install "
                "python3-optuna (Debian) or `pip install optuna`, or name the interpreter that "
                "has it in SPOTRUN_PYTHON\n",
                cmd);
    return SR_EX_UNAVAILABLE;
}

/* What the storage URL may be: an RDB URL (dialect[+driver]://...) or
 * journal:PATH. 1 when it looks like one of them. */
static int url_ok(const char *url)
{
    if (strncmp(url, "journal:", 8) == 0)
        return url[8] != '\0';
    const char *sep = strstr(url, "://");
    if (!sep || sep == url)
        return 0;
    for (const char *c = url; c < sep; c++)
        if (!strchr("abcdefghijklmnopqrstuvwxyz0123456789+_", *c))
            return 0;
    return 1;
}

int sr_cmd_sweep_export(const struct sr_cmd *cmd, int argc, char **argv)
{
    const char *url = NULL, *study = NULL, *metric = NULL, *space = NULL;
    uint64_t threads = 0;
    const struct sr_opt opts[] = {
        {"optuna", 0, "SPOTRUN_OPTUNA_STORAGE", SR_OPT_STR, &url, "URL",
         "Optuna storage: an RDB URL (sqlite:///study.db, postgresql://...) or journal:PATH "
         "(a JournalStorage file)"},
        {"study", 0, NULL, SR_OPT_STR, &study, "NAME", "the study's name (default: the sweep's)"},
        {"metric", 0, NULL, SR_OPT_STR, &metric, "NAME[:min|max]",
         "the objective (default: the sweep's objectives, else its best's metric; the direction "
         "sweep show gives it)"},
        {"space", 0, NULL, SR_OPT_STR, &space, "MODULE:FUNCTION",
         "the define-by-run space the sweep was driven with (optuna_driver --space): its "
         "conditional parameters' distributions"},
        {"threads", 0, "SPOTRUN_THREADS", SR_OPT_UINT, &threads, "N",
         "trials read at once (default 8)"},
        SR_OPTS_COMMON};
    struct sr_cmd_ctx ctx;
    int code = sr_cmd_start(cmd, opts, argc, argv, &ctx);
    if (code >= 0)
        return code;
    const char *name = ctx.ops[0];
    if (!url || !url_ok(url)) {
        fprintf(stderr,
                "spotrun %s: %s%s%s: give --optuna URL, an RDB URL such as sqlite:///study.db or "
                "journal:PATH\n",
                cmd->name, url ? "\"" : "", url ? url : "no storage", url ? "\" is not one" : "");
        sr_store_close(ctx.st);
        return SR_EX_USAGE;
    }
    char py[PATH_MAX];
    if ((code = pick_python(cmd->name, py, sizeof(py))) != 0) {
        sr_store_close(ctx.st);
        return code;
    }
    struct sr_sweep sw = {0};
    struct sr_sweepview v;
    int rc = sr_sweep_read(ctx.st, name, &sw);
    if (rc == 0)
        rc = sr_sweepview_load(ctx.st, &sw, (unsigned)threads, SR_SV_LOAD_SNAPSHOT, &v);
    if (rc < 0) {
        code = sr_fail(rc, rc == -ENOENT ? cmd->name : "cannot read the sweep");
        sr_sweep_free(&sw);
        sr_store_close(ctx.st);
        return code;
    }
    struct sr_sv_opts o = {0};
    sr_sv_opts_from_sweep(&o, &sw); /* its objectives and --best, as sweep show reads them */
    json_t *doc = sr_sweepview_json(&v, &o, sr_store_url(ctx.st));
    if (doc && sw.early_stop)
        json_object_set(doc, "early_stop", sw.early_stop);
    char *text = doc ? json_dumps(doc, JSON_COMPACT) : NULL;
    json_decref(doc);
    sr_sweepview_free(&v);
    sr_sweep_free(&sw);
    sr_store_close(ctx.st);
    if (!text)
        return sr_fail(-ENOMEM, cmd->name);
    char dir[PATH_MAX];
    package_dir(dir, sizeof(dir));
    char *args[16];
    size_t n = 0;
    args[n++] = py;
    args[n++] = "-m";
    args[n++] = "spotrun.optuna_export";
    args[n++] = "--storage";
    args[n++] = (char *)url;
    args[n++] = "--study";
    args[n++] = (char *)(study && *study ? study : name);
    if (metric && *metric) {
        args[n++] = "--metric";
        args[n++] = (char *)metric;
    }
    if (space && *space) {
        args[n++] = "--space";
        args[n++] = (char *)space;
    }
    args[n] = NULL;
    sr_debug("exporting sweep %s with %s -m spotrun.optuna_export (PYTHONPATH %s)", name, py,
             dir[0] ? dir : "unchanged");
    code = run_python(args, dir, text, strlen(text), 0);
    free(text);
    if (code == 127) {
        fprintf(stderr, "spotrun %s: cannot run %s\n", cmd->name, py);
        return SR_EX_UNAVAILABLE;
    }
    return code;
}

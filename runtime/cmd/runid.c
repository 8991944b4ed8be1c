/*
 * runid.c - default run ids and --run-id templates (see runid.h).
 */
#include "runid.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <xxhash.h>

#include "log.h"
#include "manifest.h"

static const char *const index_vars[] = {"SLURM_ARRAY_TASK_ID", "JOB_COMPLETION_INDEX",
                                         "AWS_BATCH_JOB_ARRAY_INDEX"};

static const char *array_index(void)
{
    for (size_t i = 0; i < sizeof(index_vars) / sizeof(index_vars[0]); i++) {
        const char *v = getenv(index_vars[i]);
        if (v && *v)
            return v;
    }
    return NULL;
}

static int is_interpreter(const char *base)
{
    static const char *const interp[] = {"python",     "python3",   "bash", "sh",   "torchrun",
                                         "accelerate", "deepspeed", "node", "ruby", "perl"};
    for (size_t i = 0; i < sizeof(interp) / sizeof(interp[0]); i++)
        if (strcmp(base, interp[i]) == 0 || (strncmp(base, "python3.", 8) == 0))
            return 1;
    return 0;
}

/* The program's (or interpreted script's) base name, reduced to run-id characters. */
static void job_name(char *const argv[], char *out, size_t len)
{
    const char *prog = argv && argv[0] ? argv[0] : "job";
    const char *base = strrchr(prog, '/') ? strrchr(prog, '/') + 1 : prog;
    if (is_interpreter(base)) {
        for (size_t i = 1; argv[i]; i++) {
            if (argv[i][0] == '-')
                continue;
            base = strrchr(argv[i], '/') ? strrchr(argv[i], '/') + 1 : argv[i];
            break;
        }
    }
    size_t n = 0;
    for (const char *p = base; *p && *p != '.' && n + 1 < len && n < 40; p++) {
        const char c = *p;
        const int ok = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
                       c == '_' || c == '-';
        out[n++] = ok ? c : '_';
    }
    if (n == 0 || out[0] == '-' || out[0] == '_')
        n = (size_t)snprintf(out, len, "job");
    out[n] = '\0';
}

static void command_hash(char *const argv[], const char *cwd, char out[9])
{
    XXH3_state_t *st = XXH3_createState();
    XXH3_64bits_reset(st);
    XXH3_64bits_update(st, cwd, strlen(cwd) + 1);
    for (size_t i = 0; argv && argv[i]; i++)
        XXH3_64bits_update(st, argv[i], strlen(argv[i]) + 1);
    const XXH64_hash_t h = XXH3_64bits_digest(st);
    XXH3_freeState(st);
    snprintf(out, 9, "%08x", (unsigned)(h >> 32));
}

/* Value of one placeholder, or NULL with a message set. */
static const char *placeholder(const char *name, char *const argv[], const char *cwd, char *scratch,
                               size_t slen)
{
    static const struct {
        const char *ph, *var;
    } direct[] = {{"slurm_job_id", "SLURM_JOB_ID"},
                  {"slurm_array_job_id", "SLURM_ARRAY_JOB_ID"},
                  {"slurm_array_task_id", "SLURM_ARRAY_TASK_ID"},
                  {"job_completion_index", "JOB_COMPLETION_INDEX"},
                  {"aws_batch_job_array_index", "AWS_BATCH_JOB_ARRAY_INDEX"}};
    const char *var = NULL;
    if (strcmp(name, "hash") == 0) {
        command_hash(argv, cwd, scratch);
        return scratch;
    }
    if (strcmp(name, "name") == 0) {
        job_name(argv, scratch, slen);
        return scratch;
    }
    if (strcmp(name, "index") == 0) {
        const char *v = array_index();
        if (!v)
            sr_errf(-EINVAL, "run id template: {index} needs SLURM_ARRAY_TASK_ID, "
                             "JOB_COMPLETION_INDEX or AWS_BATCH_JOB_ARRAY_INDEX, and none is set");
        return v;
    }
    if (strncmp(name, "env:", 4) == 0)
        var = name + 4;
    for (size_t i = 0; !var && i < sizeof(direct) / sizeof(direct[0]); i++)
        if (strcmp(name, direct[i].ph) == 0)
            var = direct[i].var;
    if (!var) {
        sr_errf(-EINVAL, "run id template: unknown placeholder {%s}", name);
        return NULL;
    }
    const char *v = getenv(var);
    if (!v || !*v) {
        sr_errf(-EINVAL, "run id template: {%s} needs %s, which is %s", name, var,
                v ? "set but empty" : "not set");
        return NULL;
    }
    return v;
}

static int expand(const char *tmpl, char *const argv[], const char *cwd, char *out, size_t len)
{
    size_t n = 0;
    for (const char *p = tmpl; *p;) {
        const char *val = p;
        size_t vlen = 1;
        char scratch[64];
        if (*p == '{') {
            const char *close = strchr(p, '}');
            if (!close || close - p - 1 >= 64)
                return sr_errf(-EINVAL, "run id template \"%s\": unbalanced '{'", tmpl);
            char name[64];
            memcpy(name, p + 1, (size_t)(close - p - 1));
            name[close - p - 1] = '\0';
            val = placeholder(name, argv, cwd, scratch, sizeof(scratch));
            if (!val)
                return -EINVAL;
            vlen = strlen(val);
            p = close + 1;
        } else {
            p++;
        }
        if (n + vlen >= len)
            return sr_errf(-EINVAL, "run id from \"%s\" is too long", tmpl);
        memcpy(out + n, val, vlen);
        n += vlen;
    }
    out[n] = '\0';
    return 0;
}

int sr_runid_expand(const char *tmpl, char *const argv[], const char *cwd, char *out, size_t len)
{
    const char *t = tmpl;
    if (!t || !*t)
        t = array_index() ? "{name}-{hash}-{index}" : "{name}-{hash}";
    const int rc = expand(t, argv, cwd, out, len);
    if (rc < 0)
        return rc;
    if (!sr_manifest_run_id_valid(out))
        return sr_errf(-EINVAL,
                       "invalid run id \"%s\": use 1-128 of A-Z a-z 0-9 . _ - "
                       "(not starting with . or -)",
                       out);
    return 0;
}

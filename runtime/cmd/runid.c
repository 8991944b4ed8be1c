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

static int is_shell(const char *base)
{
    static const char *const sh[] = {"sh", "bash", "dash", "zsh", "ksh"};
    for (size_t i = 0; i < sizeof(sh) / sizeof(sh[0]); i++)
        if (strcmp(base, sh[i]) == 0)
            return 1;
    return 0;
}

/* Words that only start another program: `exec python3 train.py`,
 * `env A=1 nohup python3 train.py`. */
static int is_launcher(const char *word)
{
    static const char *const w[] = {"exec", "env", "nohup", "time", "nice", "command", "stdbuf"};
    for (size_t i = 0; i < sizeof(w) / sizeof(w[0]); i++)
        if (strcmp(word, w[i]) == 0)
            return 1;
    return 0;
}

static const char *base_of(const char *path)
{
    return strrchr(path, '/') ? strrchr(path, '/') + 1 : path;
}

/* An assignment (A=1) before the command. */
static int is_assignment(const char *word)
{
    const char *eq = strchr(word, '=');
    if (!eq || eq == word)
        return 0;
    for (const char *p = word; p < eq; p++)
        if (!((*p >= 'a' && *p <= 'z') || (*p >= 'A' && *p <= 'Z') || *p == '_' ||
              (p > word && *p >= '0' && *p <= '9')))
            return 0;
    return 1;
}

/* The script a shell's -c would run, split into words at blanks (quotes
 * dropped, no expansion: only to name the job), at most `max` of them, up
 * to the first ; & | or newline. Returns the count; the words live in buf. */
static size_t split_script(const char *script, char *buf, size_t blen, char **words, size_t max)
{
    size_t n = 0, k = 0;
    const char *p = script;
    while (*p && n < max && k + 2 < blen) {
        while (*p == ' ' || *p == '\t')
            p++;
        if (!*p || strchr(";&|\n", *p))
            break;
        words[n++] = buf + k;
        char quote = 0;
        for (; *p && (quote || !strchr(" \t;&|\n", *p)); p++) {
            if (!quote && (*p == '\'' || *p == '"'))
                quote = *p;
            else if (quote && *p == quote)
                quote = 0;
            else if (k + 2 < blen)
                buf[k++] = *p;
        }
        buf[k++] = '\0'; /* k + 2 <= blen before the word: room for it */
    }
    return n;
}

/* The name a command's words give: the program's base name, or the
 * interpreted script's (options, launchers and assignments skipped); a
 * shell's -c script is looked into the same way (depth: how far). */
static const char *name_in(char *const argv[], size_t argc, int depth, char *buf, size_t blen)
{
    size_t i = 0;
    while (i < argc && (is_launcher(base_of(argv[i])) || is_assignment(argv[i]) ||
                        (i > 0 && is_launcher(base_of(argv[i - 1])) && argv[i][0] == '-')))
        i++;
    if (i >= argc)
        return argc ? base_of(argv[0]) : "job";
    const char *base = base_of(argv[i]);
    if (is_shell(base) && depth < 2)
        for (size_t j = i + 1; j + 1 < argc && argv[j][0] == '-'; j++)
            if (argv[j][1] != '-' && strchr(argv[j], 'c')) {
                char *words[32];
                const size_t half = blen / 2;
                const size_t n = split_script(argv[j + 1], buf + half, blen - half, words, 32);
                if (n)
                    return name_in(words, n, depth + 1, buf, half);
                break;
            }
    if (is_interpreter(base))
        for (size_t j = i + 1; j < argc; j++)
            if (argv[j][0] != '-')
                return base_of(argv[j]);
    return base;
}

/* The program's (or interpreted script's) base name, reduced to run-id characters. */
static void job_name(char *const argv[], char *out, size_t len)
{
    size_t argc = 0;
    while (argv && argv[argc])
        argc++;
    char buf[8192];
    const char *base = name_in(argv, argc, 0, buf, sizeof(buf));
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

/*
 * s3_creds.c - the AWS credential chain (see s3_creds.h).
 *
 * DESIGN: the chain is walked once at open; the source that answered is
 * remembered, and only temporary credentials (container endpoint, instance
 * role) are fetched again, from the same source, when they come within
 * REFRESH_MARGIN of their expiry. Metadata requests use short timeouts and
 * never retry long: on a machine without a metadata service the chain must
 * fail in about a second, not hang.
 *
 * Threads: one mutex guards the cached credentials; a refresh runs under it
 * (other callers wait for the new ones rather than use expiring ones).
 * Secrets live only in struct sr_s3_creds copies and in the memory curl
 * signs with; no message ever contains one.
 */
#include "http.h"
#include "imds.h"
#include "s3_creds.h"
#include "log.h"

#include <ctype.h>
#include <curl/curl.h>
#include <errno.h>
#include <jansson.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#define REFRESH_MARGIN 300 /* seconds before Expiration */
#define META_MAX (64u << 10)
#define IMDS_DEFAULT "http://169.254.169.254"
#define CONTAINER_HOST "http://169.254.170.2"

enum src_kind { SRC_ENV, SRC_PROFILE, SRC_CONTAINER, SRC_IMDS };

/* What each source of the chain said, for the error when none had
 * credentials ("environment: ... not set; profile default: ...; ..."). */
struct trail {
    char buf[1024];
};

__attribute__((format(printf, 2, 3))) static void said(struct trail *t, const char *fmt, ...)
{
    if (!t)
        return;
    size_t n = strlen(t->buf);
    if (n && n < sizeof(t->buf) - 2)
        n += (size_t)snprintf(t->buf + n, sizeof(t->buf) - n, "; ");
    if (n >= sizeof(t->buf) - 1)
        return;
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(t->buf + n, sizeof(t->buf) - n, fmt, ap);
    va_end(ap);
}

struct sr_s3_cred_provider {
    pthread_mutex_t lock;
    enum src_kind kind;
    struct sr_s3_creds cur;
};

static const char *env(const char *name)
{
    const char *v = getenv(name);
    return v && *v ? v : NULL;
}

static int copy_str(char *dst, size_t len, const char *src)
{
    size_t n = strlen(src);
    if (n >= len)
        return -ENAMETOOLONG;
    memcpy(dst, src, n + 1);
    return 0;
}

/* ---- pure helpers -------------------------------------------------------- */

static const char *trim(char *s)
{
    while (isspace((unsigned char)*s))
        s++;
    size_t n = strlen(s);
    while (n > 0 && isspace((unsigned char)s[n - 1]))
        s[--n] = '\0';
    return s;
}

/* key in section, or with parent, in the block nested under "parent ="
 * (the AWS config's "s3 =" followed by indented "key = value" lines). */
static int ini_get(const char *text, const char *section, const char *parent, const char *key,
                   char *out, size_t len)
{
    int in = 0;
    char block[128] = ""; /* the nested block we are in, "" = none */
    for (const char *p = text; p && *p;) {
        const char *eol = strchr(p, '\n');
        size_t n = eol ? (size_t)(eol - p) : strlen(p);
        char line[8192];
        if (n >= sizeof(line))
            n = sizeof(line) - 1;
        memcpy(line, p, n);
        line[n] = '\0';
        p = eol ? eol + 1 : NULL;
        const int indented = line[0] == ' ' || line[0] == '\t';
        char *l = (char *)trim(line);
        if (*l == '#' || *l == ';' || *l == '\0')
            continue;
        if (!indented)
            block[0] = '\0';
        if (*l == '[') {
            char *end = strchr(l, ']');
            if (!end)
                continue;
            *end = '\0';
            in = strcmp(trim(l + 1), section) == 0;
            continue;
        }
        char *eq = strchr(l, '=');
        if (!in || !eq)
            continue;
        *eq = '\0';
        const char *k = trim(l), *v = trim(eq + 1);
        if (!indented && !*v) { /* "s3 =": a nested block starts */
            snprintf(block, sizeof(block), "%s", k);
            continue;
        }
        if (strcmp(block, parent ? parent : "") != 0 || strcmp(k, key) != 0)
            continue;
        return copy_str(out, len, v) < 0 ? -ENAMETOOLONG : 0;
    }
    return -ENOENT;
}

int sr_s3_ini_get(const char *text, const char *section, const char *key, char *out, size_t len)
{
    return ini_get(text, section, NULL, key, out, len);
}

int sr_s3_ini_get_nested(const char *text, const char *section, const char *parent, const char *key,
                         char *out, size_t len)
{
    return ini_get(text, section, parent, key, out, len);
}

int sr_s3_parse_time(const char *s, int64_t *out)
{
    struct tm tm;
    memset(&tm, 0, sizeof(tm));
    int y, mo, d, h, mi, sec, n = 0;
    if (!s || sscanf(s, "%4d-%2d-%2dT%2d:%2d:%2d%n", &y, &mo, &d, &h, &mi, &sec, &n) != 6)
        return -EBADMSG;
    const char *p = s + n;
    if (*p == '.')
        for (p++; isdigit((unsigned char)*p); p++)
            ;
    if (!(strcmp(p, "Z") == 0 || strcmp(p, "+00:00") == 0 || *p == '\0'))
        return -EBADMSG;
    tm.tm_year = y - 1900;
    tm.tm_mon = mo - 1;
    tm.tm_mday = d;
    tm.tm_hour = h;
    tm.tm_min = mi;
    tm.tm_sec = sec;
    *out = (int64_t)timegm(&tm);
    return 0;
}

int sr_s3_creds_parse_json(const char *json, size_t len, struct sr_s3_creds *out)
{
    json_error_t jerr;
    json_t *o = json_loadb(json, len, 0, &jerr);
    int rc = -EBADMSG;
    const char *id = NULL, *secret = NULL, *token = NULL, *exp = NULL;
    if (!json_is_object(o))
        goto out;
    if (json_unpack(o, "{s:s,s:s,s?s,s?s}", "AccessKeyId", &id, "SecretAccessKey", &secret, "Token",
                    &token, "Expiration", &exp) != 0)
        goto out;
    if (copy_str(out->key_id, sizeof(out->key_id), id) < 0 ||
        copy_str(out->secret, sizeof(out->secret), secret) < 0 ||
        copy_str(out->token, sizeof(out->token), token ? token : "") < 0)
        goto out;
    out->expires = 0;
    if (exp && sr_s3_parse_time(exp, &out->expires) < 0)
        goto out;
    rc = 0;
out:
    json_decref(o);
    return rc;
}

/* ---- HTTP for the metadata endpoints ------------------------------------ */

struct body {
    char *p;
    size_t n;
};

/* One request with short timeouts (the HTTP core's sr_http_fetch); *status
 * gets the HTTP status (0 when nothing came back). The body is
 * NUL-terminated. */
static int http(const char *method, const char *url, const char *hdr, long *status, struct body *b)
{
    const char *const hdrs[] = {hdr, NULL};
    struct sr_http_rx rx = {.dst_fd = -1, .max = META_MAX};
    const CURLcode cc = sr_http_fetch(method, url, hdrs, 1000L, 3000L, &rx);
    *status = rx.status;
    b->p = rx.resp;
    b->n = rx.resp_len;
    return cc == CURLE_OK ? 0 : -ECONNREFUSED;
}

/* ---- sources ------------------------------------------------------------- */

static int from_env(struct sr_s3_creds *c, struct trail *t)
{
    const char *id = env("AWS_ACCESS_KEY_ID"), *secret = env("AWS_SECRET_ACCESS_KEY");
    if (!id && !secret) {
        said(t, "environment: AWS_ACCESS_KEY_ID and AWS_SECRET_ACCESS_KEY not set");
        return -ENOENT;
    }
    if (!id || !secret)
        return sr_errf(-EACCES, "%s is set but %s is not",
                       id ? "AWS_ACCESS_KEY_ID" : "AWS_SECRET_ACCESS_KEY",
                       id ? "AWS_SECRET_ACCESS_KEY" : "AWS_ACCESS_KEY_ID");
    const char *tok = env("AWS_SESSION_TOKEN");
    if (copy_str(c->key_id, sizeof(c->key_id), id) < 0 ||
        copy_str(c->secret, sizeof(c->secret), secret) < 0 ||
        copy_str(c->token, sizeof(c->token), tok ? tok : "") < 0)
        return sr_errf(-EINVAL, "AWS credentials in the environment are too long");
    snprintf(c->source, sizeof(c->source), "environment");
    return 0;
}

/* The file's text (NUL-terminated, malloc'd), or NULL with *err set (may
 * be NULL) to the errno of the failure. */
static char *read_text_err(const char *path, int *err)
{
    FILE *f = fopen(path, "re");
    if (!f) {
        if (err)
            *err = errno;
        return NULL;
    }
    if (err)
        *err = ENOMEM;
    char *buf = malloc(1u << 20);
    size_t n = buf ? fread(buf, 1, (1u << 20) - 1, f) : 0;
    fclose(f);
    if (buf)
        buf[n] = '\0';
    return buf;
}

static char *read_text(const char *path)
{
    return read_text_err(path, NULL);
}

/* What a shared file said about a profile's keys, for the trail. */
static void file_said(char *out, size_t len, const char *path, const char *text, int err,
                      const char *section)
{
    if (text)
        snprintf(out, len, "%s has no aws_access_key_id in [%s]", path, section);
    else if (err == ENOENT)
        snprintf(out, len, "%s absent", path);
    else
        snprintf(out, len, "%s unreadable (%s)", path, strerror(err));
}

static void shared_paths(char *cred, char *conf, size_t len)
{
    const char *home = env("HOME") ? env("HOME") : "/";
    if (env("AWS_SHARED_CREDENTIALS_FILE"))
        snprintf(cred, len, "%s", env("AWS_SHARED_CREDENTIALS_FILE"));
    else
        snprintf(cred, len, "%s/.aws/credentials", home);
    if (env("AWS_CONFIG_FILE"))
        snprintf(conf, len, "%s", env("AWS_CONFIG_FILE"));
    else
        snprintf(conf, len, "%s/.aws/config", home);
}

/* Looks key up for profile: the credentials file's [NAME], then the config
 * file's [profile NAME] (or [default]). */
static int profile_get(const char *cred_text, const char *conf_text, const char *profile,
                       const char *key, char *out, size_t len)
{
    if (cred_text && sr_s3_ini_get(cred_text, profile, key, out, len) == 0)
        return 0;
    char sect[300];
    if (strcmp(profile, "default") == 0)
        snprintf(sect, sizeof(sect), "default");
    else
        snprintf(sect, sizeof(sect), "profile %s", profile);
    if (conf_text && sr_s3_ini_get(conf_text, sect, key, out, len) == 0)
        return 0;
    return -ENOENT;
}

int sr_s3_profile_s3_setting(const char *key, char *out, size_t len)
{
    char cred_path[4096], conf_path[4096], sect[300];
    shared_paths(cred_path, conf_path, sizeof(cred_path));
    const char *profile = env("AWS_PROFILE") ? env("AWS_PROFILE") : "default";
    if (strcmp(profile, "default") == 0)
        snprintf(sect, sizeof(sect), "default");
    else
        snprintf(sect, sizeof(sect), "profile %s", profile);
    char *cf = read_text(conf_path);
    const int rc = cf ? sr_s3_ini_get_nested(cf, sect, "s3", key, out, len) : -ENOENT;
    free(cf);
    return rc;
}

static int from_profile(struct sr_s3_creds *c, char *region, size_t rlen, struct trail *t)
{
    char cred_path[4096], conf_path[4096];
    shared_paths(cred_path, conf_path, sizeof(cred_path));
    const char *profile = env("AWS_PROFILE") ? env("AWS_PROFILE") : "default";
    int cerr = 0, ferr = 0;
    char *ct = read_text_err(cred_path, &cerr), *cf = read_text_err(conf_path, &ferr);
    int rc = -ENOENT;
    if (region && !*region)
        profile_get(ct, cf, profile, "region", region, rlen);
    if (profile_get(ct, cf, profile, "aws_access_key_id", c->key_id, sizeof(c->key_id)) == 0) {
        if (profile_get(ct, cf, profile, "aws_secret_access_key", c->secret, sizeof(c->secret)) !=
            0) {
            rc = sr_errf(-EACCES,
                         "profile %s in %s has aws_access_key_id but no "
                         "aws_secret_access_key",
                         profile, cred_path);
            goto out;
        }
        if (profile_get(ct, cf, profile, "aws_session_token", c->token, sizeof(c->token)) != 0)
            c->token[0] = '\0';
        snprintf(c->source, sizeof(c->source), "profile %.40s", profile);
        rc = 0;
    } else if (env("AWS_PROFILE")) {
        rc = sr_errf(-EACCES, "AWS_PROFILE=%s has no credentials in %s or %s", profile, cred_path,
                     conf_path);
    } else if (t) {
        /* each holds a path (up to 4 KiB), the section and strerror */
        char sect[300], a[4608], b[4608];
        snprintf(sect, sizeof(sect), "%s%.256s", strcmp(profile, "default") ? "profile " : "",
                 profile);
        file_said(a, sizeof(a), cred_path, ct, cerr, profile);
        file_said(b, sizeof(b), conf_path, cf, ferr, sect);
        said(t, "profile %s (AWS_PROFILE unset): %s, %s", profile, a, b);
    }
out:
    free(ct);
    free(cf);
    return rc;
}

static int from_container(struct sr_s3_creds *c, struct trail *t)
{
    char url[4096], auth[4200] = "";
    if (env("AWS_CONTAINER_CREDENTIALS_FULL_URI"))
        snprintf(url, sizeof(url), "%s", env("AWS_CONTAINER_CREDENTIALS_FULL_URI"));
    else if (env("AWS_CONTAINER_CREDENTIALS_RELATIVE_URI"))
        snprintf(url, sizeof(url), "%s%s", CONTAINER_HOST,
                 env("AWS_CONTAINER_CREDENTIALS_RELATIVE_URI"));
    else {
        said(t, "container endpoint: AWS_CONTAINER_CREDENTIALS_FULL_URI and _RELATIVE_URI not "
                "set");
        return -ENOENT;
    }
    if (env("AWS_CONTAINER_AUTHORIZATION_TOKEN")) {
        snprintf(auth, sizeof(auth), "Authorization: %s", env("AWS_CONTAINER_AUTHORIZATION_TOKEN"));
    } else if (env("AWS_CONTAINER_AUTHORIZATION_TOKEN_FILE")) {
        char *tok = read_text(env("AWS_CONTAINER_AUTHORIZATION_TOKEN_FILE"));
        if (tok) {
            tok[strcspn(tok, "\r\n")] = '\0';
            snprintf(auth, sizeof(auth), "Authorization: %s", tok);
            free(tok);
        }
    }
    struct body b = {0};
    long status = 0;
    int rc = http("GET", url, *auth ? auth : NULL, &status, &b);
    if (rc == 0 && status == 200 && b.p)
        rc = sr_s3_creds_parse_json(b.p, b.n, c);
    else if (rc == 0)
        rc = -EACCES;
    free(b.p);
    if (rc < 0)
        return sr_errf(rc == -EBADMSG ? -EACCES : rc, "container credentials endpoint %s: %s", url,
                       rc == -EBADMSG ? "unparseable answer"
                       : status != 0  ? "refused the request"
                                      : "unreachable");
    snprintf(c->source, sizeof(c->source), "container endpoint");
    return 0;
}

static const char *imds_base(void)
{
    return env("SPOTRUN_AWS_IMDS") ? env("SPOTRUN_AWS_IMDS") : IMDS_DEFAULT;
}

/* The token PUT (imds.h's sr_imds_fetch_fn): -ECONNREFUSED (no answer) or
 * -EACCES (refused, *status in ctx) when there is none. */
static int put_token(void *ctx, const char *url, const char *header, char *tok, size_t len)
{
    long *status = ctx;
    struct body b = {0};
    const int rc = http("PUT", url, header, status, &b);
    const int ok = rc == 0 && *status == 200 && b.p && b.n > 0 && b.n <= 1000 && b.n < len;
    if (ok)
        snprintf(tok, len, "%s", b.p);
    free(b.p);
    return ok ? 0 : rc < 0 ? rc : -EACCES;
}

/* An IMDSv2 session token (the process's, imds.h) into tok: 0, -ENOENT (no
 * metadata service, or disabled), -EACCES (refused). */
static int imds_token(char *tok, size_t len, struct trail *t)
{
    const char *dis = env("AWS_EC2_METADATA_DISABLED");
    if (dis && strcasecmp(dis, "true") == 0) {
        said(t, "instance role: off (AWS_EC2_METADATA_DISABLED=true)");
        return -ENOENT;
    }
    const char *base = imds_base();
    long status = 0;
    const int rc = sr_imds_token(base, put_token, &status, tok, len);
    if (rc == 0)
        return 0;
    if (rc != -EACCES)
        said(t, "instance role: no metadata service at %s (not on EC2, or IMDS blocked)", base);
    return rc != -EACCES
               ? -ENOENT
               : sr_errf(-EACCES, "instance metadata %s refused a token (HTTP %ld)", base, status);
}

/* GET path of the metadata service with the token (one refused with 401
 * is dropped and a new one tried once): 0, or imds_token's errors; the
 * answer's status and body in *status and b. */
static int imds_get(const char *path, struct trail *t, long *status, struct body *b)
{
    char url[4096], tok[SR_IMDS_TOKEN_MAX], hdr[SR_IMDS_TOKEN_MAX + 64];
    snprintf(url, sizeof(url), "%s%s", imds_base(), path);
    for (int round = 0;; round++) {
        const int rc = imds_token(tok, sizeof(tok), t);
        if (rc < 0)
            return rc;
        snprintf(hdr, sizeof(hdr), "X-aws-ec2-metadata-token: %s", tok);
        *b = (struct body){0};
        const int hr = http("GET", url, hdr, status, b);
        if (hr < 0 || *status != 401 || round > 0)
            return 0;
        free(b->p);
        sr_imds_token_refused(imds_base(), tok);
    }
}

/* The instance's region (placement/region), for an instance-role run
 * without AWS_REGION: the bucket is most likely in the same region. */
static void imds_region(char *region, size_t len)
{
    struct body b = {0};
    long status = 0;
    if (imds_get("/latest/meta-data/placement/region", NULL, &status, &b) == 0 && status == 200 &&
        b.p && b.n > 0 && b.n < len && strspn(b.p, "abcdefghijklmnopqrstuvwxyz0123456789-") == b.n)
        snprintf(region, len, "%s", b.p);
    free(b.p);
}

static int from_imds(struct sr_s3_creds *c, struct trail *t)
{
    const char *base = imds_base();
    char path[512];
    struct body b = {0};
    long status = 0;
    int rc = imds_get("/latest/meta-data/iam/security-credentials/", t, &status, &b);
    if (rc < 0)
        return rc;
    if (status != 200 || !b.p || b.n == 0) {
        free(b.p);
        return sr_errf(-EACCES,
                       "instance metadata %s: no IAM role attached to this instance "
                       "(HTTP %ld)",
                       base, status);
    }
    char role[256];
    snprintf(role, sizeof(role), "%.*s", (int)strcspn(b.p, "\r\n"), b.p);
    free(b.p);
    snprintf(path, sizeof(path), "/latest/meta-data/iam/security-credentials/%s", role);
    rc = imds_get(path, t, &status, &b);
    if (rc == 0 && status == 200 && b.p)
        rc = sr_s3_creds_parse_json(b.p, b.n, c);
    else
        rc = -EACCES;
    free(b.p);
    if (rc < 0)
        return sr_errf(-EACCES, "instance metadata %s: cannot read the credentials of role %s",
                       base, role);
    snprintf(c->source, sizeof(c->source), "instance role %.40s", role);
    return 0;
}

static int fetch(enum src_kind k, struct sr_s3_creds *c)
{
    return k == SRC_CONTAINER ? from_container(c, NULL) : from_imds(c, NULL);
}

/* ---- provider ------------------------------------------------------------ */

int sr_s3_creds_open(struct sr_s3_cred_provider **out, char *region, size_t len)
{
    *out = NULL;
    region[0] = '\0';
    const char *r = env("AWS_REGION") ? env("AWS_REGION") : env("AWS_DEFAULT_REGION");
    if (r)
        snprintf(region, len, "%s", r);
    struct sr_s3_cred_provider *p = calloc(1, sizeof(*p));
    if (!p)
        return sr_errf(-ENOMEM, "out of memory");
    pthread_mutex_init(&p->lock, NULL);
    int rc;
    struct sr_s3_creds *c = &p->cur;
    struct trail t = {""};
    int none = 0;
    if ((rc = from_env(c, &t)) != -ENOENT)
        p->kind = SRC_ENV;
    else if ((rc = from_profile(c, region, len, &t)) != -ENOENT)
        p->kind = SRC_PROFILE;
    else if ((rc = from_container(c, &t)) != -ENOENT)
        p->kind = SRC_CONTAINER;
    else if ((rc = from_imds(c, &t)) != -ENOENT)
        p->kind = SRC_IMDS;
    else
        none = 1, rc = -EACCES;
    /* The failure's message, composed now: the region look-ups below record
     * and clear messages of their own. */
    char why[2048];
    if (none)
        snprintf(why, sizeof(why),
                 "no AWS credentials found; tried %s (set AWS_ACCESS_KEY_ID and "
                 "AWS_SECRET_ACCESS_KEY, or AWS_PROFILE; docs/s3.md)",
                 t.buf);
    else if (rc < 0)
        snprintf(why, sizeof(why), "%s%s%s%s", sr_strerror(rc), t.buf[0] ? " (tried first: " : "",
                 t.buf, t.buf[0] ? ")" : "");
    if (!region[0])
        from_profile(&(struct sr_s3_creds){0}, region, len, NULL); /* region only */
    if (!region[0] && p->kind == SRC_IMDS)
        imds_region(region, len);
    if (!region[0])
        snprintf(region, len, "us-east-1");
    if (rc < 0) {
        sr_s3_creds_close(p);
        return sr_errf(rc, "%s", why);
    }
    sr_debug("s3: credentials from %s", c->source);
    *out = p;
    return 0;
}

void sr_s3_creds_close(struct sr_s3_cred_provider *p)
{
    if (!p)
        return;
    pthread_mutex_destroy(&p->lock);
    /* Leave no secret behind in freed memory. */
    memset(&p->cur, 0, sizeof(p->cur));
    free(p);
}

int sr_s3_creds_get(struct sr_s3_cred_provider *p, struct sr_s3_creds *out)
{
    int rc = 0;
    pthread_mutex_lock(&p->lock);
    if (p->cur.expires && (int64_t)time(NULL) + REFRESH_MARGIN >= p->cur.expires) {
        struct sr_s3_creds fresh;
        memset(&fresh, 0, sizeof(fresh));
        rc = fetch(p->kind, &fresh);
        if (rc == 0) {
            p->cur = fresh;
            sr_debug("s3: refreshed credentials from %s", fresh.source);
        } else if ((int64_t)time(NULL) < p->cur.expires) {
            sr_warn("cannot refresh AWS credentials (%s); using the current ones until they "
                    "expire",
                    sr_strerror(rc));
            rc = 0;
        }
        memset(&fresh, 0, sizeof(fresh));
    }
    if (rc == 0)
        *out = p->cur;
    pthread_mutex_unlock(&p->lock);
    return rc;
}

/*
 * az_creds.c - opening an Azure Blob client (az.h): the SPOTRUN_AZ_*
 * settings, the endpoint, and the credential chain (docs/azure.md,
 * "Credentials"), tried in this order, the first that is set winning:
 *
 *   1. AZURE_STORAGE_CONNECTION_STRING: AccountKey (Shared Key) or
 *      SharedAccessSignature (SAS); UseDevelopmentStorage=true is Azurite's
 *      published account and key; BlobEndpoint sets the endpoint
 *   2. AZURE_STORAGE_KEY (with AZURE_STORAGE_ACCOUNT, when set, naming the
 *      URL's account): Shared Key
 *   3. AZURE_STORAGE_SAS_TOKEN: a SAS appended to every request
 *   4. a managed identity: a token from the VM's IMDS endpoint
 *      (SPOTRUN_AZ_IMDS_ENDPOINT overrides it, "off" skips it)
 *
 * When none works the message names each source and why it did not;
 * secrets (keys, SAS, tokens) are never printed.
 */
#include "az.h"
#include "log.h"
#include "store.h"
#include "units.h"

#include <errno.h>
#include <openssl/evp.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#define IMDS_DEFAULT "http://169.254.169.254/metadata/identity/oauth2/token"
#define DEV_ACCOUNT "devstoreaccount1"
/* Azurite's published development key (not a secret). */
#define DEV_KEY                                                                                    \
    "Eby8vdM02xNOcqFlqUwJPLlmEtlCDXJ1OUzFT50uSRZ6IFsuFq2UVErCz4I6tq/K1SZFPTOtr/KBHBeksoGMGw=="

static const char *env(const char *name)
{
    const char *v = getenv(name);
    return v && *v ? v : NULL;
}

int sr_az_parse_conn(const char *s, struct sr_az_conn *c)
{
    memset(c, 0, sizeof(*c));
    char *dup = strdup(s);
    if (!dup)
        return -ENOMEM;
    int rc = 0;
    for (char *save = NULL, *t = strtok_r(dup, ";", &save); t; t = strtok_r(NULL, ";", &save)) {
        while (*t == ' ')
            t++;
        char *eq = strchr(t, '=');
        if (!eq) {
            rc = -EINVAL;
            break;
        }
        *eq = '\0';
        const char *v = eq + 1;
        struct {
            const char *name;
            char *dst;
            size_t len;
        } f[] = {{"AccountName", c->account, sizeof(c->account)},
                 {"AccountKey", c->key, sizeof(c->key)},
                 {"SharedAccessSignature", c->sas, sizeof(c->sas)},
                 {"BlobEndpoint", c->endpoint, sizeof(c->endpoint)},
                 {"DefaultEndpointsProtocol", c->protocol, sizeof(c->protocol)},
                 {"EndpointSuffix", c->suffix, sizeof(c->suffix)}};
        for (size_t i = 0; i < sizeof(f) / sizeof(f[0]); i++)
            if (strcasecmp(t, f[i].name) == 0 &&
                snprintf(f[i].dst, f[i].len, "%s", v) >= (int)f[i].len)
                rc = -ENAMETOOLONG;
        if (strcasecmp(t, "UseDevelopmentStorage") == 0)
            c->dev = strcasecmp(v, "true") == 0;
    }
    free(dup);
    if (c->dev && !*c->account) {
        snprintf(c->account, sizeof(c->account), DEV_ACCOUNT);
        snprintf(c->key, sizeof(c->key), DEV_KEY);
        if (!*c->endpoint)
            snprintf(c->endpoint, sizeof(c->endpoint), "http://127.0.0.1:10000/" DEV_ACCOUNT);
    }
    return rc;
}

static int env_num(const char *name, int64_t min, int64_t max, int64_t *out)
{
    const char *v = env(name);
    if (v && sr_parse_int(v, min, max, out) < 0)
        return sr_errf(-EINVAL, "%s=%s is not a number from %lld to %lld", name, v, (long long)min,
                       (long long)max);
    return 0;
}

static int env_bytes(const char *name, uint64_t min, uint64_t max, uint64_t *out)
{
    const char *v = env(name);
    uint64_t n = 0;
    if (v && (sr_parse_size(v, &n) < 0 || n < min || n > max))
        return sr_errf(-EINVAL, "%s=%s is not a size from %llu KiB to %llu MiB (e.g. 8M)", name, v,
                       (unsigned long long)(min >> 10), (unsigned long long)(max >> 20));
    if (v)
        *out = n;
    return 0;
}

static int read_settings(struct sr_az *az)
{
    int64_t retries = 5, base = 200, conc = 8, stall = 60;
    az->block_size = 8 * SR_AZ_MIB;
    int rc = env_num("SPOTRUN_AZ_RETRIES", 0, 100, &retries);
    if (rc == 0)
        rc = env_num("SPOTRUN_AZ_RETRY_BASE_MS", 0, 60000, &base);
    if (rc == 0)
        rc = env_num("SPOTRUN_AZ_CONCURRENCY", 1, 64, &conc);
    if (rc == 0)
        rc = env_num("SPOTRUN_AZ_STALL_TIMEOUT_S", 1, 3600, &stall);
    if (rc == 0) /* Put Block takes up to 4000 MiB; keep memory sane */
        rc = env_bytes("SPOTRUN_AZ_BLOCK_SIZE", 64 << 10, 512 * SR_AZ_MIB, &az->block_size);
    az->retries = (int)retries;
    az->retry_base_ms = (long)base;
    az->stall_s = (long)stall;
    az->concurrency = (size_t)conc;
    return rc;
}

/* base (no trailing '/') and path0, its path. */
static int set_endpoint(struct sr_az *az, const struct sr_az_conn *cs)
{
    const char *e = env("AZURE_STORAGE_BLOB_ENDPOINT");
    if (!e && *cs->endpoint)
        e = cs->endpoint;
    if (e)
        snprintf(az->base, sizeof(az->base), "%s", e);
    else
        snprintf(az->base, sizeof(az->base), "%s://%s.blob.%s",
                 *cs->protocol ? cs->protocol : "https", az->account,
                 *cs->suffix ? cs->suffix : "core.windows.net");
    size_t bl = strlen(az->base);
    while (bl > 0 && az->base[bl - 1] == '/')
        az->base[--bl] = '\0';
    const char *sch = strstr(az->base, "://");
    if (!sch || (strncmp(az->base, "http://", 7) != 0 && strncmp(az->base, "https://", 8) != 0))
        return sr_errf(-EINVAL, "invalid blob endpoint %s (want http[s]://host[:port][/path])",
                       az->base);
    const char *p = strchr(sch + 3, '/');
    az->path0 = p ? p : az->base + bl;
    return 0;
}

static int use_key(struct sr_az *az, const char *b64, const char *source)
{
    unsigned char k[sizeof(az->key) + 4];
    const size_t bl = strlen(b64);
    if (bl == 0 || bl % 4 != 0 || bl / 4 * 3 > sizeof(k))
        return sr_errf(-EINVAL,
                       "the account key in %s is not base64 (copy it again from the "
                       "portal or az storage account keys list)",
                       source);
    const int n = EVP_DecodeBlock(k, (const unsigned char *)b64, (int)bl);
    if (n < 0)
        return sr_errf(-EINVAL,
                       "the account key in %s is not base64 (copy it again from the "
                       "portal or az storage account keys list)",
                       source);
    const size_t pad = (size_t)(b64[bl - 1] == '=') + (size_t)(b64[bl - 2] == '=');
    az->key_len = (size_t)n - pad;
    memcpy(az->key, k, az->key_len);
    az->auth = SR_AZ_AUTH_KEY;
    snprintf(az->source, sizeof(az->source), "%s", source);
    return 1;
}

static int use_sas(struct sr_az *az, const char *sas, const char *source)
{
    if (*sas == '?')
        sas++;
    if (snprintf(az->sas, sizeof(az->sas), "%s", sas) >= (int)sizeof(az->sas))
        return sr_errf(-EINVAL, "the SAS token in %s is too long", source);
    az->auth = SR_AZ_AUTH_SAS;
    snprintf(az->source, sizeof(az->source), "%s", source);
    return 1;
}

static void said(char *tried, size_t len, const char *what)
{
    const size_t l = strlen(tried);
    snprintf(tried + l, len - l, "%s%s", l ? "; " : "", what);
}

/* 1: credentials set, 0: none here (tried says why), < 0: an error. */
static int from_conn(struct sr_az *az, const struct sr_az_conn *cs, int set, char *tried, size_t tl)
{
    const char *v = "AZURE_STORAGE_CONNECTION_STRING";
    if (!set) {
        said(tried, tl, "AZURE_STORAGE_CONNECTION_STRING: not set");
        return 0;
    }
    if (*cs->account && strcmp(cs->account, az->account) != 0) {
        char m[200];
        snprintf(m, sizeof(m), "AZURE_STORAGE_CONNECTION_STRING: for account %s, not %s",
                 cs->account, az->account);
        said(tried, tl, m);
        return 0;
    }
    if (*cs->key)
        return use_key(az, cs->key, v);
    if (*cs->sas)
        return use_sas(az, cs->sas, v);
    said(tried, tl, "AZURE_STORAGE_CONNECTION_STRING: no AccountKey or SharedAccessSignature");
    return 0;
}

static int from_env(struct sr_az *az, char *tried, size_t tl)
{
    const char *acct = env("AZURE_STORAGE_ACCOUNT"), *key = env("AZURE_STORAGE_KEY");
    if (key && acct && strcmp(acct, az->account) != 0) {
        char m[200];
        snprintf(m, sizeof(m), "AZURE_STORAGE_KEY: for account %s (AZURE_STORAGE_ACCOUNT), not %s",
                 acct, az->account);
        said(tried, tl, m);
    } else if (key) {
        return use_key(az, key, "AZURE_STORAGE_KEY");
    } else {
        said(tried, tl, "AZURE_STORAGE_KEY: not set");
    }
    const char *sas = env("AZURE_STORAGE_SAS_TOKEN");
    if (sas)
        return use_sas(az, sas, "AZURE_STORAGE_SAS_TOKEN");
    said(tried, tl, "AZURE_STORAGE_SAS_TOKEN: not set");
    return 0;
}

static int chain(struct sr_az *az, char *tried, size_t tl)
{
    const char *s = env("AZURE_STORAGE_CONNECTION_STRING");
    struct sr_az_conn cs;
    memset(&cs, 0, sizeof(cs));
    if (s && sr_az_parse_conn(s, &cs) < 0)
        return sr_errf(-EINVAL, "AZURE_STORAGE_CONNECTION_STRING is not a connection string "
                                "(want Name=value;Name=value...)");
    int rc = set_endpoint(az, s && (!*cs.account || strcmp(cs.account, az->account) == 0)
                                  ? &cs
                                  : &(struct sr_az_conn){0});
    if (rc == 0)
        rc = from_conn(az, &cs, s != NULL, tried, tl);
    if (rc == 0)
        rc = from_env(az, tried, tl);
    if (rc != 0)
        return rc < 0 ? rc : 0;
    const char *imds = env("SPOTRUN_AZ_IMDS_ENDPOINT");
    if (imds && strcmp(imds, "off") == 0) {
        said(tried, tl, "managed identity: off (SPOTRUN_AZ_IMDS_ENDPOINT=off)");
        return -ENOKEY;
    }
    snprintf(az->imds, sizeof(az->imds), "%s", imds ? imds : IMDS_DEFAULT);
    az->auth = SR_AZ_AUTH_TOKEN;
    snprintf(az->source, sizeof(az->source), "managed identity");
    rc = sr_az_fetch_token(az);
    if (rc < 0) {
        char m[1200];
        snprintf(m, sizeof(m), "managed identity: %s", sr_strerror(rc));
        said(tried, tl, m);
        return -ENOKEY;
    }
    return 0;
}

/* A token from the IMDS endpoint (az->imds): GET with Metadata: true, the
 * resource https://storage.azure.com/, AZURE_CLIENT_ID's identity when set.
 * Called with the lock held (or before the client is shared). */
int sr_az_fetch_token(struct sr_az *az)
{
    char url[1400], cid[300] = "";
    const char *id = env("AZURE_CLIENT_ID");
    if (id && sr_url_escape(id, 0, cid, sizeof(cid)) < 0)
        return sr_errf(-EINVAL, "AZURE_CLIENT_ID is too long");
    snprintf(url, sizeof(url),
             "%s?api-version=2018-02-01&resource=https%%3A%%2F%%2Fstorage.azure.com%%2F%s%s",
             az->imds, *cid ? "&client_id=" : "", cid);
    const char *const hdrs[] = {"Metadata: true", NULL};
    struct sr_http_rx rx = {.dst_fd = -1, .max = 16383};
    const CURLcode cc = sr_http_fetch("GET", url, hdrs, 2000L, 10000L, &rx);
    const long status = rx.status;
    int64_t exp_s = 0;
    int rc = 0;
    if (cc != CURLE_OK)
        rc = sr_errf(-EHOSTUNREACH, "no token endpoint at %s (%s)", az->imds,
                     curl_easy_strerror(cc));
    else if (status != 200)
        rc = sr_errf(-EACCES,
                     "the token endpoint %s answered %ld (is an identity assigned to "
                     "this VM, with a Storage Blob Data role?)",
                     az->imds, status);
    else if (sr_az_parse_token(rx.resp ? rx.resp : "", rx.resp_len, az->token, sizeof(az->token),
                               &exp_s) < 0)
        rc = sr_errf(-EBADMSG, "the token endpoint %s answered without an access_token", az->imds);
    free(rx.resp);
    if (rc < 0)
        return rc;
    /* expires_on is wall-clock seconds; keep the remaining time on the
     * monotonic clock. Unknown: an hour, as IMDS tokens last at least that. */
    const int64_t left = exp_s > 0 ? exp_s * 1000 - sr_wall_ms() : 3600 * 1000;
    az->token_exp_ms = sr_now_ms() + left;
    sr_debug("azure: managed identity token from %s, valid %llds", az->imds,
             (long long)(left / 1000));
    return 0;
}

int sr_az_open(const char *account, const char *container, const char *prefix, struct sr_az **out)
{
    *out = NULL;
    struct sr_az *az = calloc(1, sizeof(*az));
    pthread_mutex_t *lock = malloc(sizeof(*lock));
    if (!az || !lock || !(az->prefix = strdup(prefix)) ||
        !(az->pool = sr_http_pool_new(SR_AZ_POOL))) {
        free(lock);
        if (az)
            free(az->prefix);
        free(az);
        return sr_errf(-ENOMEM, "out of memory");
    }
    pthread_mutex_init(lock, NULL);
    az->lock = lock;
    snprintf(az->account, sizeof(az->account), "%s", account);
    snprintf(az->container, sizeof(az->container), "%s", container);
    char tried[4096] = "";
    int rc = read_settings(az);
    if (rc == 0)
        rc = chain(az, tried, sizeof(tried));
    if (rc == -ENOKEY)
        rc = sr_errf(-EACCES,
                     "no Azure credentials for account %s: tried %s (set one: "
                     "docs/azure.md, \"Credentials\")",
                     account, tried);
    if (rc < 0) {
        sr_az_close(az);
        return rc;
    }
    sr_debug("azure: account %s at %s, credentials from %s", account, az->base, az->source);
    *out = az;
    return 0;
}

void sr_az_close(struct sr_az *az)
{
    if (!az)
        return;
    sr_http_pool_free(az->pool);
    if (az->lock) {
        pthread_mutex_destroy(az->lock);
        free(az->lock);
    }
    OPENSSL_cleanse(az->key, sizeof(az->key));
    OPENSSL_cleanse(az->sas, sizeof(az->sas));
    OPENSSL_cleanse(az->token, sizeof(az->token));
    free(az->prefix);
    free(az);
}

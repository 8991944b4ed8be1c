/*
 * imds.c - the process's IMDSv2 session token (imds.h).
 *
 * DESIGN: one entry, keyed by the service's base URL: a process talks to
 * one metadata service (a test that points two clients at two services
 * gets a fetch per switch, never a token from the wrong one). The lock
 * guards the entry only; the fetch runs without it.
 */
#include "imds.h"
#include "units.h"

#include <errno.h>
#include <stdio.h>
#include <string.h>

static struct sr_imds_cache process_cache = SR_IMDS_CACHE_INIT;

/* base without trailing '/' into out. */
static void key_of(const char *base, char *out, size_t len)
{
    snprintf(out, len, "%s", base);
    for (size_t k = strlen(out); k > 0 && out[k - 1] == '/'; k--)
        out[k - 1] = '\0';
}

int sr_imds_cache_token(struct sr_imds_cache *c, int64_t now_ms, const char *base,
                        sr_imds_fetch_fn fetch, void *ctx, char *tok, size_t len)
{
    char key[sizeof(c->base)], url[sizeof(c->base) + 32], fresh[SR_IMDS_TOKEN_MAX];
    key_of(base, key, sizeof(key));
    pthread_mutex_lock(&c->lock);
    const int hit = c->token[0] && strcmp(c->base, key) == 0 && now_ms < c->renew_at_ms;
    if (hit)
        snprintf(fresh, sizeof(fresh), "%s", c->token);
    pthread_mutex_unlock(&c->lock);
    if (!hit) {
        snprintf(url, sizeof(url), "%s/latest/api/token", key);
        fresh[0] = '\0';
        const int rc = fetch(ctx, url, SR_IMDS_TTL_HEADER, fresh, sizeof(fresh));
        if (rc < 0)
            return rc;
        fresh[strcspn(fresh, "\r\n")] = '\0';
        if (!fresh[0])
            return -EBADMSG;
        pthread_mutex_lock(&c->lock);
        snprintf(c->base, sizeof(c->base), "%s", key);
        snprintf(c->token, sizeof(c->token), "%s", fresh);
        c->renew_at_ms = now_ms + SR_IMDS_TTL_S * 1000LL - SR_IMDS_RENEW_MS;
        pthread_mutex_unlock(&c->lock);
    }
    if (strlen(fresh) >= len)
        return -ENAMETOOLONG;
    snprintf(tok, len, "%s", fresh);
    return 0;
}

void sr_imds_cache_refused(struct sr_imds_cache *c, const char *base, const char *tok)
{
    char key[sizeof(c->base)];
    key_of(base, key, sizeof(key));
    pthread_mutex_lock(&c->lock);
    if (strcmp(c->base, key) == 0 && strcmp(c->token, tok) == 0)
        c->token[0] = '\0';
    pthread_mutex_unlock(&c->lock);
}

int sr_imds_token(const char *base, sr_imds_fetch_fn fetch, void *ctx, char *tok, size_t len)
{
    return sr_imds_cache_token(&process_cache, sr_now_ms(), base, fetch, ctx, tok, len);
}

void sr_imds_token_refused(const char *base, const char *tok)
{
    sr_imds_cache_refused(&process_cache, base, tok);
}

/*
 * s3_settings.c - the SPOTRUN_S3_* variables (docs/s3.md, "Settings"):
 * read once, when the S3 client opens, into struct sr_s3_settings (s3.h);
 * nothing else in spotrun reads them.
 *
 * Each variable is checked with common/units.h's strict parsers: a value
 * that is not a number (or a size), or out of its range, is -EINVAL with a
 * message naming the variable and what it takes, never a silent default.
 * Empty counts as unset.
 */
#include "log.h"
#include "s3.h"
#include "units.h"

#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define GIB (1024 * SR_S3_MIB)

static const char *env(const char *name)
{
    const char *v = getenv(name);
    return v && *v ? v : NULL;
}

/* A whole number in [min, max] into *out when name is set. */
static int env_int(const char *name, int64_t min, int64_t max, long *out)
{
    const char *v = env(name);
    int64_t n;
    if (!v)
        return 0;
    if (sr_parse_int(v, min, max, &n) < 0)
        return sr_errf(-EINVAL, "invalid %s=\"%s\" (a whole number from %lld to %lld)", name, v,
                       (long long)min, (long long)max);
    *out = (long)n;
    return 0;
}

/* A size ("16M", "512KiB", a bare number of bytes) in [1, 5 GiB]. */
static int env_size(const char *name, uint64_t *out)
{
    const char *v = env(name);
    uint64_t n;
    if (!v)
        return 0;
    if (sr_parse_size(v, &n) < 0 || n == 0 || n > 5 * GIB)
        return sr_errf(-EINVAL, "invalid %s=\"%s\" (a size from 1 byte to 5G, like 16M)", name, v);
    *out = n;
    return 0;
}

static int env_addressing(enum sr_s3_addressing *out)
{
    static const char *const names[] = {
        [SR_S3_ADDR_AUTO] = "auto", [SR_S3_ADDR_PATH] = "path", [SR_S3_ADDR_VIRTUAL] = "virtual"};
    const char *v = env("SPOTRUN_S3_ADDRESSING");
    if (!v)
        return 0;
    for (int i = SR_S3_ADDR_AUTO; i <= SR_S3_ADDR_VIRTUAL; i++)
        if (strcmp(v, names[i]) == 0) {
            *out = (enum sr_s3_addressing)i;
            return 0;
        }
    return sr_errf(-EINVAL, "invalid SPOTRUN_S3_ADDRESSING=\"%s\" (path, virtual or auto)", v);
}

static int env_ca_bundle(char *out, size_t len)
{
    const char *v = env("SPOTRUN_S3_CA_BUNDLE");
    if (!v)
        return 0;
    if (strlen(v) >= len)
        return sr_errf(-ENAMETOOLONG, "SPOTRUN_S3_CA_BUNDLE is too long");
    /* Said now, not as a TLS failure after every retry of the first request. */
    if (access(v, R_OK) != 0)
        return sr_errf(-errno, "SPOTRUN_S3_CA_BUNDLE=%s: %s", v, strerror(errno));
    snprintf(out, len, "%s", v);
    return 0;
}

int sr_s3_settings_read(struct sr_s3_settings *set)
{
    memset(set, 0, sizeof(*set));
    long retries = 5, conc = SR_S3_CONCURRENCY_DEFAULT, buffer_kb = 512;
    set->retry_base_ms = 200;
    set->connect_timeout_ms = 5000;
    set->stall_s = 30;
    set->part_size = SR_S3_PART_SIZE_DEFAULT;
    set->single_max = SR_S3_SINGLE_MAX_DEFAULT;
    set->range_size = SR_S3_RANGE_SIZE_DEFAULT;
    set->addressing = SR_S3_ADDR_PROFILE;
    int rc;
    if ((rc = env_int("SPOTRUN_S3_RETRIES", 0, 100, &retries)) < 0 ||
        (rc = env_int("SPOTRUN_S3_RETRY_BASE_MS", 0, 60000, &set->retry_base_ms)) < 0 ||
        (rc = env_int("SPOTRUN_S3_CONNECT_TIMEOUT_MS", 0, 600000, &set->connect_timeout_ms)) < 0 ||
        (rc = env_int("SPOTRUN_S3_STALL_TIMEOUT_S", 1, 86400, &set->stall_s)) < 0 ||
        (rc = env_int("SPOTRUN_S3_BUFFER_KB", 0, 10240, &buffer_kb)) < 0 ||
        (rc = env_int("SPOTRUN_S3_CONCURRENCY", 1, 256, &conc)) < 0 ||
        (rc = env_size("SPOTRUN_S3_PART_SIZE", &set->part_size)) < 0 ||
        (rc = env_size("SPOTRUN_S3_SINGLE_MAX", &set->single_max)) < 0 ||
        (rc = env_size("SPOTRUN_S3_RANGE_SIZE", &set->range_size)) < 0 ||
        (rc = env_addressing(&set->addressing)) < 0 ||
        (rc = env_ca_bundle(set->ca_bundle, sizeof(set->ca_bundle))) < 0)
        return rc;
    set->retries = (int)retries;
    set->concurrency = (size_t)conc;
    set->buffer_size = buffer_kb << 10;
    return 0;
}

/*
 * s3_creds.h - AWS credentials and region for the S3 client, found the way
 * the AWS CLI and SDKs find them:
 *
 *   1. environment: AWS_ACCESS_KEY_ID, AWS_SECRET_ACCESS_KEY, AWS_SESSION_TOKEN;
 *   2. shared files: AWS_PROFILE (default "default") in
 *      AWS_SHARED_CREDENTIALS_FILE (~/.aws/credentials) and AWS_CONFIG_FILE
 *      (~/.aws/config, sections "[profile NAME]" or "[default]");
 *   3. the container endpoint: AWS_CONTAINER_CREDENTIALS_FULL_URI or
 *      http://169.254.170.2 + AWS_CONTAINER_CREDENTIALS_RELATIVE_URI, with
 *      AWS_CONTAINER_AUTHORIZATION_TOKEN (or _TOKEN_FILE) as Authorization;
 *   4. the EC2 instance role over IMDSv2 (PUT /latest/api/token, then
 *      GET /latest/meta-data/iam/security-credentials/ and the role);
 *      endpoint $SPOTRUN_AWS_IMDS (default http://169.254.169.254), off
 *      with AWS_EC2_METADATA_DISABLED=true.
 *
 * Region: AWS_REGION, AWS_DEFAULT_REGION, the profile's "region", the
 * instance's own region from IMDSv2 (placement/region) when the
 * credentials are the instance role's, else us-east-1.
 *
 * Temporary credentials (container, instance role) are refreshed five
 * minutes before their Expiration. The provider is thread-safe: every
 * caller gets a copy under a mutex. Secrets are never logged; messages
 * name the source, never the value.
 */
#ifndef SPOTRUN_S3_CREDS_H
#define SPOTRUN_S3_CREDS_H

#include <stddef.h>
#include <stdint.h>

struct sr_s3_creds {
    char key_id[256];
    char secret[256];
    char token[4096]; /* "" when none */
    int64_t expires;  /* unix seconds; 0 = does not expire */
    char source[64]; /* "environment", "profile NAME", "container endpoint", "instance role NAME" */
};

struct sr_s3_cred_provider;

/* Resolves credentials now (so that a missing one fails at open with a
 * message naming every source tried) and the region into region[len]. */
int sr_s3_creds_open(struct sr_s3_cred_provider **out, char *region, size_t len);
void sr_s3_creds_close(struct sr_s3_cred_provider *p);
/* Current credentials, refreshed first when they expire within 5 minutes. */
int sr_s3_creds_get(struct sr_s3_cred_provider *p, struct sr_s3_creds *out);

/* Pure helpers (unit-tested). */

/* Value of key in section of an INI text (AWS shared-file syntax: "[name]",
 * "key = value", '#' and ';' comments). 0, or -ENOENT when absent. */
int sr_s3_ini_get(const char *text, const char *section, const char *key, char *out, size_t len);
/* key in the block nested under "parent =" in section (the config file's
 * "s3 =\n    addressing_style = path"). */
int sr_s3_ini_get_nested(const char *text, const char *section, const char *parent, const char *key,
                         char *out, size_t len);
/* An "s3 =" setting of the current profile (AWS_PROFILE) in the config file
 * (AWS_CONFIG_FILE, ~/.aws/config): 0 or -ENOENT. */
int sr_s3_profile_s3_setting(const char *key, char *out, size_t len);
/* Parses the container / IMDS JSON ({"AccessKeyId","SecretAccessKey",
 * "Token","Expiration"}). 0 or -EBADMSG. */
int sr_s3_creds_parse_json(const char *json, size_t len, struct sr_s3_creds *out);
/* "2026-12-02T13:00:00Z" (fractional seconds and +00:00 accepted) -> unix s. */
int sr_s3_parse_time(const char *s, int64_t *out);

#endif

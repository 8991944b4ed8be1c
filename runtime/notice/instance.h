/*
 * instance.h - this instance's type, from the cloud's metadata service
 * (for `run --prices`: docs/runtime.md, "Time limits and budgets").
 *
 *   AWS    IMDSv2 token, then GET /latest/meta-data/instance-type
 *   GCP    GET /computeMetadata/v1/instance/machine-type (its last path
 *          component: projects/N/machineTypes/a2-highgpu-1g)
 *   Azure  GET /metadata/instance/compute/vmSize?api-version=2021-02-01&format=text
 *
 * Synchronous and bounded: each request has a 500 ms connect and 1.5 s
 * total timeout, proxies are never used. The answer is checked to be an
 * instance type's word (letters, digits and ._/:+-, at most 63); anything
 * else is no answer.
 */
#ifndef SPOTRUN_INSTANCE_H
#define SPOTRUN_INSTANCE_H

#include <stddef.h>

#include "notice.h"

/* The type into buf, and 0; -ENOENT when no service (of cfg->cloud; AUTO:
 * those whose endpoints are given, else all three in turn) tells it;
 * SR_CLOUD_NONE: -ENOENT at once. */
int sr_instance_type(const struct sr_notice_config *cfg, char *buf, size_t len);

#endif

/*
 * instance.h - where this instance runs, from the cloud's metadata service:
 * its type for `run --prices` (docs/runtime.md, "Time limits and budgets"),
 * and, on the notice watcher's placement thread, its type, zone and region
 * (sr_notice_placement(), notice.h; the "placement" event, docs/events.md).
 *
 *   AWS    IMDSv2 token, then GET /latest/meta-data/instance-type,
 *          .../placement/availability-zone and .../placement/region
 *   GCP    GET /computeMetadata/v1/instance/machine-type and .../zone, full
 *          resource paths (projects/N/zones/us-central1-a): the last
 *          component; the region is the zone less its "-a"
 *   Azure  GET /metadata/instance/compute/vmSize?api-version=2021-02-01&format=text
 *          (type only), or the JSON of /metadata/instance/compute: vmSize,
 *          location (the region) and zone; the zone is "<location>-<zone>"
 *          ("eastus-1"), or the location for a VM without zones
 *
 * Bounded: each request has a 500 ms connect and 1.5 s total timeout,
 * proxies are never used. Each value is checked to be a word (letters,
 * digits and ._:+-, at most 63; sr_metadata_word(), notice_parse.h);
 * anything else is no answer.
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

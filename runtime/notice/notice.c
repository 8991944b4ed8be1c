/*
 * notice.c - the notice watcher's life cycle, its event queue, and
 * --notice auto (see notice.h).
 *
 * Detecting the cloud (auto) runs on the watcher thread, so it never
 * delays the job's start: endpoints given by flag or environment are probed
 * (and nothing else: that is how tests point spotrun at their server);
 * otherwise the DMI strings in /sys/class/dmi/id name the cloud at no cost;
 * otherwise the answer cached in the work root for this boot; otherwise the
 * three services are probed in parallel with short timeouts, and the answer
 * (often "none", on a laptop) is cached for the next run.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <unistd.h>

#include "log.h"
#include "notice_int.h"
#include "units.h"

#define PROBE_TIMEOUT_MS 1500

static const char *const cloud_names[] = {"none", "auto", "aws", "gcp", "azure"};

int sr_cloud_parse(const char *name, enum sr_cloud *out)
{
    for (size_t i = 0; i < sizeof(cloud_names) / sizeof(cloud_names[0]); i++)
        if (name && strcasecmp(name, cloud_names[i]) == 0) {
            *out = (enum sr_cloud)i;
            return 0;
        }
    return -EINVAL;
}

const char *sr_cloud_name(enum sr_cloud c)
{
    return (unsigned)c < sizeof(cloud_names) / sizeof(cloud_names[0]) ? cloud_names[c] : "?";
}

int64_t sr_notice_mono(int64_t wall_ms)
{
    return sr_now_ms() + (wall_ms - sr_wall_ms());
}

/* ---- the queue -------------------------------------------------------- */

/* The same event seen again before the supervisor took it (a poll that
 * answers the same notice, a deadline announced again earlier): one event,
 * the earliest deadline kept. */
static int same_event(void *held, const void *ev)
{
    struct sr_notice_event *h = held;
    const struct sr_notice_event *e = ev;
    if (h->kind != e->kind || strcmp(h->source, e->source) != 0 || strcmp(h->id, e->id) != 0)
        return 0;
    if (e->deadline_ms && (!h->deadline_ms || e->deadline_ms < h->deadline_ms)) {
        h->deadline_ms = e->deadline_ms;
        h->deadline_wall_ms = e->deadline_wall_ms;
    }
    h->needs_ack |= e->needs_ack;
    return 1;
}

void sr_notice_post(struct sr_notice *n, const struct sr_notice_event *ev)
{
    (void)sr_evq_post(&n->queue, ev); /* -EPIPE: stopping, nobody takes it */
}

int sr_notice_fd(const struct sr_notice *n)
{
    return n ? sr_evq_fd(&n->queue) : -1;
}

int sr_notice_take(struct sr_notice *n, struct sr_notice_event *ev)
{
    return n ? sr_evq_take(&n->queue, ev) : 0;
}

/* ---- --notice auto ------------------------------------------------------ */

static void read_line(const char *path, char *buf, size_t len)
{
    buf[0] = '\0';
    FILE *f = fopen(path, "re");
    if (!f)
        return;
    if (fgets(buf, (int)len, f))
        buf[strcspn(buf, "\n")] = '\0';
    fclose(f);
}

/* The hypervisor's DMI strings name the big three without a network call. */
static enum sr_cloud dmi_cloud(void)
{
    char vendor[128], product[128], bios[128], asset[128], version[128];
    read_line("/sys/class/dmi/id/sys_vendor", vendor, sizeof(vendor));
    read_line("/sys/class/dmi/id/product_name", product, sizeof(product));
    read_line("/sys/class/dmi/id/bios_vendor", bios, sizeof(bios));
    read_line("/sys/class/dmi/id/chassis_asset_tag", asset, sizeof(asset));
    read_line("/sys/class/dmi/id/bios_version", version, sizeof(version));
    if (strstr(vendor, "Amazon") || strstr(bios, "Amazon") || strcasestr(version, "amazon"))
        return SR_CLOUD_AWS;
    if (strstr(vendor, "Google") || strstr(product, "Google Compute Engine"))
        return SR_CLOUD_GCP;
    /* Azure's chassis asset tag; plain Hyper-V shares the vendor string. */
    if (strcmp(asset, "7783-7084-3265-9085-8269-3286-77") == 0)
        return SR_CLOUD_AZURE;
    return SR_CLOUD_AUTO; /* no idea */
}

static void boot_id(char *buf, size_t len)
{
    read_line("/proc/sys/kernel/random/boot_id", buf, len);
}

static enum sr_cloud cache_read(const char *path)
{
    char line[128], id[64], name[16];
    enum sr_cloud c;
    if (!path)
        return SR_CLOUD_AUTO;
    read_line(path, line, sizeof(line));
    boot_id(id, sizeof(id));
    const char *sp = strchr(line, ' ');
    if (!sp || !id[0] || (size_t)(sp - line) != strlen(id) || strncmp(line, id, strlen(id)) != 0)
        return SR_CLOUD_AUTO;
    snprintf(name, sizeof(name), "%s", sp + 1);
    return sr_cloud_parse(name, &c) == 0 && c != SR_CLOUD_AUTO ? c : SR_CLOUD_AUTO;
}

static void cache_write(const char *path, enum sr_cloud c)
{
    char id[64], tmp[4200];
    boot_id(id, sizeof(id));
    if (!path || !id[0] ||
        snprintf(tmp, sizeof(tmp), "%s.%d.tmp", path, (int)getpid()) >= (int)sizeof(tmp))
        return;
    FILE *f = fopen(tmp, "we");
    if (!f)
        return;
    fprintf(f, "%s %s\n", id, sr_cloud_name(c));
    if (fclose(f) == 0 && rename(tmp, path) == 0)
        return;
    unlink(tmp);
}

struct probe {
    enum sr_cloud cloud;
    CURL *easy;
    struct curl_slist *headers;
    struct sr_http r;
};

static size_t discard(char *d, size_t s, size_t n, void *a)
{
    (void)d, (void)a;
    return s * n;
}

static size_t probe_header(char *d, size_t s, size_t n, void *a)
{
    struct sr_http *r = a;
    const size_t k = s * n;
    if (k > 16 && strncasecmp(d, "Metadata-Flavor:", 16) == 0 && strstr(d + 16, "Google"))
        snprintf(r->flavor, sizeof(r->flavor), "Google");
    return k;
}

static void probe_setup(struct probe *p, const char *base)
{
    char url[2048];
    const char *path = "", *header = NULL;
    switch (p->cloud) {
    case SR_CLOUD_AWS:
        path = "/latest/api/token";
        header = "X-aws-ec2-metadata-token-ttl-seconds: 60";
        break;
    case SR_CLOUD_GCP:
        path = "/computeMetadata/v1/instance/id";
        header = "Metadata-Flavor: Google";
        break;
    default:
        path = "/metadata/instance/compute/name?api-version=2021-02-01&format=text";
        header = "Metadata: true";
        break;
    }
    snprintf(url, sizeof(url), "%s%s", base, path);
    CURL *e = p->easy;
    curl_easy_setopt(e, CURLOPT_URL, url);
    curl_easy_setopt(e, CURLOPT_NOSIGNAL, 1L);
    curl_easy_setopt(e, CURLOPT_NOPROXY, "*");
    curl_easy_setopt(e, CURLOPT_CONNECTTIMEOUT_MS, 500L);
    curl_easy_setopt(e, CURLOPT_TIMEOUT_MS, (long)PROBE_TIMEOUT_MS);
    curl_easy_setopt(e, CURLOPT_WRITEFUNCTION, discard);
    curl_easy_setopt(e, CURLOPT_HEADERFUNCTION, probe_header);
    curl_easy_setopt(e, CURLOPT_HEADERDATA, &p->r);
    p->headers = curl_slist_append(NULL, header);
    curl_easy_setopt(e, CURLOPT_HTTPHEADER, p->headers);
    if (p->cloud == SR_CLOUD_AWS)
        curl_easy_setopt(e, CURLOPT_CUSTOMREQUEST, "PUT");
}

static int probe_says_yes(struct probe *p)
{
    long status = 0;
    curl_easy_getinfo(p->easy, CURLINFO_RESPONSE_CODE, &status);
    if (p->cloud == SR_CLOUD_GCP)
        return status == 200 && p->r.flavor[0];
    return status == 200;
}

/* Asks the candidate services at once; the first that answers as itself. */
static enum sr_cloud probe(struct sr_nw *w, const int want[3])
{
    struct sr_notice *n = w->n;
    const char *bases[3] = {n->aws_url, n->gcp_url, n->azure_url};
    const enum sr_cloud clouds[3] = {SR_CLOUD_AWS, SR_CLOUD_GCP, SR_CLOUD_AZURE};
    struct probe p[3];
    memset(p, 0, sizeof(p));
    int active = 0;
    for (int i = 0; i < 3; i++) {
        p[i].cloud = clouds[i];
        if (!want[i] || !(p[i].easy = curl_easy_init()))
            continue;
        probe_setup(&p[i], bases[i]);
        curl_multi_add_handle(w->multi, p[i].easy);
        active++;
    }
    enum sr_cloud found = SR_CLOUD_NONE;
    int running = active;
    while (running > 0 && found == SR_CLOUD_NONE && !sr_nw_stopping(w)) {
        curl_multi_perform(w->multi, &running);
        CURLMsg *m;
        int left;
        while ((m = curl_multi_info_read(w->multi, &left)))
            for (int i = 0; i < 3; i++)
                if (m->msg == CURLMSG_DONE && p[i].easy == m->easy_handle &&
                    m->data.result == CURLE_OK && probe_says_yes(&p[i]) && found == SR_CLOUD_NONE)
                    found = p[i].cloud;
        if (running > 0 && found == SR_CLOUD_NONE)
            curl_multi_poll(w->multi, NULL, 0, 200, NULL);
    }
    for (int i = 0; i < 3; i++) {
        if (!p[i].easy)
            continue;
        curl_multi_remove_handle(w->multi, p[i].easy);
        curl_easy_cleanup(p[i].easy);
        curl_slist_free_all(p[i].headers);
    }
    return found;
}

static enum sr_cloud detect(struct sr_nw *w)
{
    struct sr_notice *n = w->n;
    const int64_t t0 = sr_now_ms();
    if (n->aws_set || n->gcp_set || n->azure_set) {
        const int want[3] = {n->aws_set, n->gcp_set, n->azure_set};
        const enum sr_cloud c = probe(w, want);
        sr_debug("notice auto: %s (probed the given endpoints in %lld ms)", sr_cloud_name(c),
                 (long long)(sr_now_ms() - t0));
        return c;
    }
    enum sr_cloud c = dmi_cloud();
    if (c != SR_CLOUD_AUTO) {
        sr_debug("notice auto: %s (DMI)", sr_cloud_name(c));
        return c;
    }
    c = cache_read(n->cache_path);
    if (c != SR_CLOUD_AUTO) {
        sr_debug("notice auto: %s (cached in %s)", sr_cloud_name(c), n->cache_path);
        return c;
    }
    const int all[3] = {1, 1, 1};
    c = probe(w, all);
    if (!sr_nw_stopping(w))
        cache_write(n->cache_path, c);
    sr_debug("notice auto: %s (probed in %lld ms)", sr_cloud_name(c),
             (long long)(sr_now_ms() - t0));
    return c;
}

/* ---- placement ------------------------------------------------------------ */

/* Its own thread, so that a slow answer never delays a notice. */
static void *placement_main(void *arg)
{
    struct sr_notice *n = arg;
    struct sr_nw w;
    if (sr_nw_init(n, &w) < 0)
        return NULL;
    pthread_mutex_lock(&n->lock);
    const enum sr_cloud c = n->resolved;
    pthread_mutex_unlock(&n->lock);
    struct sr_placement p;
    const int64_t t0 = sr_now_ms();
    const int rc = sr_placement_fetch(&w, c, &p);
    sr_nw_free(&w);
    if (rc < 0) {
        if (rc != -ECANCELED)
            sr_debug("the %s metadata service did not say where this instance runs",
                     sr_cloud_name(c));
        return NULL;
    }
    sr_debug("placement: %s %s zone %s region %s (in %lld ms)", p.cloud,
             p.instance_type[0] ? p.instance_type : "?", p.zone[0] ? p.zone : "?",
             p.region[0] ? p.region : "?", (long long)(sr_now_ms() - t0));
    pthread_mutex_lock(&n->lock);
    n->placement = p;
    n->placement_known = 1;
    pthread_mutex_unlock(&n->lock);
    sr_evq_wake(&n->queue);
    return NULL;
}

int sr_notice_placement(struct sr_notice *n, struct sr_placement *out)
{
    if (!n)
        return 0;
    pthread_mutex_lock(&n->lock);
    const int known = n->placement_known;
    if (known)
        *out = n->placement;
    pthread_mutex_unlock(&n->lock);
    return known;
}

/* ---- threads ------------------------------------------------------------ */

static void *watch_main(void *arg)
{
    struct sr_notice *n = arg;
    struct sr_nw w;
    if (sr_nw_init(n, &w) < 0)
        return NULL;
    const enum sr_cloud c = n->cloud == SR_CLOUD_AUTO ? detect(&w) : n->cloud;
    if (c != SR_CLOUD_NONE && !sr_nw_stopping(&w)) {
        sr_info("watching the %s metadata service for preemption notices", sr_cloud_name(c));
        pthread_mutex_lock(&n->lock);
        n->resolved = c;
        pthread_mutex_unlock(&n->lock);
        if (sr_notice_spawn(n, placement_main) < 0)
            sr_debug("cannot ask where this instance runs: no thread");
    }
    if (c == SR_CLOUD_AWS)
        sr_aws_watch(&w);
    else if (c == SR_CLOUD_GCP)
        sr_gcp_watch(&w);
    else if (c == SR_CLOUD_AZURE)
        sr_azure_watch(&w);
    sr_nw_free(&w);
    return NULL;
}

int sr_notice_spawn(struct sr_notice *n, void *(*fn)(void *))
{
    pthread_mutex_lock(&n->lock);
    int rc = -EBUSY;
    if (!atomic_load(&n->stop) && n->nthreads < SR_NOTICE_MAX_THREADS) {
        rc = -pthread_create(&n->threads[n->nthreads], NULL, fn, n);
        if (rc == 0)
            n->nthreads++;
    }
    pthread_mutex_unlock(&n->lock);
    return rc;
}

static char *url_or(const char *url, const char *def, int *set)
{
    *set = url && *url;
    char *s = strdup(*set ? url : def);
    if (s) /* "http://host:port/" and "http://host:port" are the same base */
        for (size_t k = strlen(s); k > 0 && s[k - 1] == '/'; k--)
            s[k - 1] = '\0';
    return s;
}

static void free_notice(struct sr_notice *n)
{
    sr_evq_destroy(&n->queue);
    free(n->aws_url);
    free(n->gcp_url);
    free(n->azure_url);
    free(n->cache_path);
    pthread_mutex_destroy(&n->lock);
    free(n);
}

int sr_notice_start(const struct sr_notice_config *cfg, struct sr_notice **out)
{
    *out = NULL;
    if (cfg->cloud == SR_CLOUD_NONE)
        return 0;
    if (curl_global_init(CURL_GLOBAL_DEFAULT) != CURLE_OK)
        return sr_errf(-ENOMEM, "cannot initialise libcurl");
    struct sr_notice *n = calloc(1, sizeof(*n));
    if (!n)
        return -ENOMEM;
    pthread_mutex_init(&n->lock, NULL);
    n->cloud = cfg->cloud;
    n->poll_ms = cfg->poll_ms > 0 ? cfg->poll_ms : 1000;
    /* GCP's server answers on the link-local address too: no DNS lookup
     * (which could hang on a laptop) for metadata.google.internal. */
    n->aws_url = url_or(cfg->aws_url, "http://169.254.169.254", &n->aws_set);
    n->gcp_url = url_or(cfg->gcp_url, "http://169.254.169.254", &n->gcp_set);
    n->azure_url = url_or(cfg->azure_url, "http://169.254.169.254", &n->azure_set);
    n->cache_path = cfg->cache_path ? strdup(cfg->cache_path) : NULL;
    int rc = 0;
    if (!n->aws_url || !n->gcp_url || !n->azure_url || (cfg->cache_path && !n->cache_path))
        rc = -ENOMEM;
    else if ((rc = sr_evq_init(&n->queue, sizeof(struct sr_notice_event), 16,
                               "the notice watcher's notices", same_event)) == 0)
        rc = sr_notice_spawn(n, watch_main);
    if (rc < 0) {
        free_notice(n);
        return rc;
    }
    *out = n;
    return 0;
}

int sr_notice_ack(struct sr_notice *n, const struct sr_notice_event *ev)
{
    if (!n || !ev->needs_ack)
        return 0;
    return sr_azure_ack(n, ev->id);
}

void sr_notice_stop(struct sr_notice *n)
{
    if (!n)
        return;
    pthread_mutex_lock(&n->lock);
    atomic_store(&n->stop, 1);
    for (int i = 0; i < SR_NOTICE_MAX_THREADS; i++)
        if (n->multis[i])
            curl_multi_wakeup(n->multis[i]);
    const int nthreads = n->nthreads;
    pthread_mutex_unlock(&n->lock);
    sr_evq_close(&n->queue); /* a watcher waiting for room returns */
    for (int i = 0; i < nthreads; i++)
        pthread_join(n->threads[i], NULL);
    free_notice(n);
}

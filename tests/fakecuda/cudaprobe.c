/*
 * cudaprobe.c - runs CUDA allocation calls named on its command line, for
 * the shim's tests (against the fake CUDA libraries, or a real GPU in
 * scripts/gpu-check.sh). Prints one line per operation: "<op> rc=<code>".
 *
 *   malloc SIZE | managed SIZE | host SIZE | hostalloc SIZE | async SIZE
 *   pitch W H | 3d W H D          runtime allocations (pushed on a list)
 *   pool-alloc DEV SIZE           cudaMallocFromPoolAsync from a new pool on DEV
 *   proc-alloc SIZE | proc-create SIZE | proc-hostalloc SIZE | proc-allochost SIZE
 *   | proc-pool-alloc DEV SIZE    driver calls obtained with dlopen + dlsym +
 *                                 cuGetProcAddress (cuMemAlloc, cuMemCreate,
 *                                 cuMemHostAlloc, cuMemAllocHost,
 *                                 cuMemAllocFromPoolAsync)
 *   free I                        frees list entry I with the matching call
 *   meminfo | proc-meminfo        "free=F total=T"
 *   device N                      cudaSetDevice
 *   threads T N SIZE              T threads x N malloc/free pairs
 *   park SIZE                     a thread mallocs and frees SIZE, then stays
 *                                 alive (holding whatever the shim gave it)
 *   sleep MS                      pause (lets a test look at the page)
 * SIZE takes K/M/G suffixes (binary).
 */
#include <cuda.h>
#include <cuda_runtime_api.h>

#include <dlfcn.h>
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

enum kind { RT_DEV, RT_MANAGED, RT_HOST, RT_ASYNC, DRV_DEV, DRV_HANDLE, DRV_HOST, DRV_ASYNC };
struct entry {
    void *p;
    enum kind kind;
};
static struct entry list[256];
static int n;

typedef CUresult (*gpa_t)(const char *, void **, int, cuuint64_t, CUdriverProcAddressQueryResult *);

static void *proc(const char *name)
{
    static gpa_t gpa;
    if (!gpa) {
        void *h = dlopen("libcuda.so.1", RTLD_NOW | RTLD_LOCAL);
        gpa = h ? (gpa_t)dlsym(h, "cuGetProcAddress_v2") : NULL;
        if (!gpa) {
            fprintf(stderr, "cudaprobe: no libcuda.so.1 / cuGetProcAddress_v2\n");
            exit(2);
        }
    }
    void *fn = NULL;
    CUdriverProcAddressQueryResult st;
    if (gpa(name, &fn, CUDA_VERSION, CU_GET_PROC_ADDRESS_DEFAULT, &st) != CUDA_SUCCESS || !fn) {
        fprintf(stderr, "cudaprobe: cuGetProcAddress(%s) failed\n", name);
        exit(2);
    }
    return fn;
}

static size_t size_arg(const char *s)
{
    char *end;
    size_t v = strtoull(s, &end, 10);
    switch (*end) {
    case 'K':
        return v << 10;
    case 'M':
        return v << 20;
    case 'G':
        return v << 30;
    default:
        return v;
    }
}

static void push(void *p, enum kind k)
{
    list[n].p = p;
    list[n++].kind = k;
}

struct tjob {
    long pairs;
    size_t size;
    int failures;
};

static pthread_mutex_t park_lock = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t park_cond = PTHREAD_COND_INITIALIZER;
static int parked;

static void *parker(void *arg)
{
    void *p;
    const int rc = cudaMalloc(&p, *(size_t *)arg) | cudaFree(p);
    pthread_mutex_lock(&park_lock);
    parked = rc ? -1 : 1;
    pthread_cond_broadcast(&park_cond);
    for (;;)
        pthread_cond_wait(&park_cond, &park_lock); /* until the process exits */
    return NULL;
}

static CUmemoryPool drv_pool(int dev)
{
    CUmemPoolProps props;
    memset(&props, 0, sizeof props);
    props.allocType = CU_MEM_ALLOCATION_TYPE_PINNED;
    props.location.type = CU_MEM_LOCATION_TYPE_DEVICE;
    props.location.id = dev;
    CUmemoryPool pool = NULL;
    if (((CUresult(*)(CUmemoryPool *, const CUmemPoolProps *))proc("cuMemPoolCreate"))(
            &pool, &props) != CUDA_SUCCESS) {
        fprintf(stderr, "cudaprobe: cuMemPoolCreate(%d) failed\n", dev);
        exit(2);
    }
    return pool;
}

static void *worker(void *arg)
{
    struct tjob *j = arg;
    for (long i = 0; i < j->pairs; i++) {
        void *p;
        if (cudaMalloc(&p, j->size) != cudaSuccess || cudaFree(p) != cudaSuccess)
            j->failures++;
    }
    return NULL;
}

int main(int argc, char **argv)
{
    for (int i = 1; i < argc; i++) {
        const char *op = argv[i];
        int rc = 0;
        void *p = NULL;
        if (!strcmp(op, "malloc") || !strcmp(op, "managed") || !strcmp(op, "host") ||
            !strcmp(op, "hostalloc") || !strcmp(op, "async")) {
            const size_t sz = size_arg(argv[++i]);
            enum kind k = RT_DEV;
            if (!strcmp(op, "malloc"))
                rc = cudaMalloc(&p, sz);
            else if (!strcmp(op, "managed"))
                rc = cudaMallocManaged(&p, sz, cudaMemAttachGlobal), k = RT_MANAGED;
            else if (!strcmp(op, "host"))
                rc = cudaMallocHost(&p, sz), k = RT_HOST;
            else if (!strcmp(op, "hostalloc"))
                rc = cudaHostAlloc(&p, sz, 0), k = RT_HOST;
            else
                rc = cudaMallocAsync(&p, sz, 0), k = RT_ASYNC;
            if (rc == 0)
                push(p, k);
        } else if (!strcmp(op, "pitch")) {
            size_t pitch;
            const size_t w = size_arg(argv[i + 1]), h = size_arg(argv[i + 2]);
            i += 2;
            rc = cudaMallocPitch(&p, &pitch, w, h);
            if (rc == 0)
                push(p, RT_DEV);
        } else if (!strcmp(op, "3d")) {
            struct cudaPitchedPtr pp;
            const struct cudaExtent e = {.width = size_arg(argv[i + 1]),
                                         .height = size_arg(argv[i + 2]),
                                         .depth = size_arg(argv[i + 3])};
            i += 3;
            rc = cudaMalloc3D(&pp, e);
            if (rc == 0)
                push(pp.ptr, RT_DEV);
        } else if (!strcmp(op, "proc-alloc")) {
            CUdeviceptr d;
            rc = ((CUresult(*)(CUdeviceptr *, size_t))proc("cuMemAlloc"))(&d, size_arg(argv[++i]));
            if (rc == 0)
                push((void *)(uintptr_t)d, DRV_DEV);
        } else if (!strcmp(op, "proc-create")) {
            CUmemAllocationProp prop;
            memset(&prop, 0, sizeof prop);
            prop.type = CU_MEM_ALLOCATION_TYPE_PINNED;
            prop.location.type = CU_MEM_LOCATION_TYPE_DEVICE;
            prop.location.id = 0;
            CUmemGenericAllocationHandle h;
            rc = ((CUresult(*)(CUmemGenericAllocationHandle *, size_t, const CUmemAllocationProp *,
                               unsigned long long))proc("cuMemCreate"))(&h, size_arg(argv[++i]),
                                                                        &prop, 0);
            if (rc == 0)
                push((void *)(uintptr_t)h, DRV_HANDLE);
        } else if (!strcmp(op, "proc-hostalloc") || !strcmp(op, "proc-allochost")) {
            const size_t sz = size_arg(argv[++i]);
            rc = !strcmp(op, "proc-hostalloc")
                     ? ((CUresult(*)(void **, size_t, unsigned))proc("cuMemHostAlloc"))(
                           &p, sz, CU_MEMHOSTALLOC_PORTABLE)
                     : ((CUresult(*)(void **, size_t))proc("cuMemAllocHost"))(&p, sz);
            if (rc == 0)
                push(p, DRV_HOST);
        } else if (!strcmp(op, "pool-alloc")) {
            const int dev = atoi(argv[i + 1]);
            const size_t sz = size_arg(argv[i + 2]);
            i += 2;
            struct cudaMemPoolProps props;
            memset(&props, 0, sizeof props);
            props.allocType = cudaMemAllocationTypePinned;
            props.location.type = cudaMemLocationTypeDevice;
            props.location.id = dev;
            cudaMemPool_t pool;
            rc = cudaMemPoolCreate(&pool, &props);
            if (rc == 0)
                rc = cudaMallocFromPoolAsync(&p, sz, pool, 0);
            if (rc == 0)
                push(p, RT_ASYNC);
        } else if (!strcmp(op, "proc-pool-alloc")) {
            const CUmemoryPool pool = drv_pool(atoi(argv[i + 1]));
            const size_t sz = size_arg(argv[i + 2]);
            i += 2;
            CUdeviceptr d;
            rc = ((CUresult(*)(CUdeviceptr *, size_t, CUmemoryPool, CUstream))proc(
                "cuMemAllocFromPoolAsync"))(&d, sz, pool, NULL);
            if (rc == 0)
                push((void *)(uintptr_t)d, DRV_ASYNC);
        } else if (!strcmp(op, "park")) {
            static size_t park_size;
            park_size = size_arg(argv[++i]);
            pthread_t th;
            pthread_create(&th, NULL, parker, &park_size);
            pthread_detach(th);
            pthread_mutex_lock(&park_lock);
            while (!parked)
                pthread_cond_wait(&park_cond, &park_lock);
            rc = parked < 0;
            pthread_mutex_unlock(&park_lock);
        } else if (!strcmp(op, "free")) {
            struct entry *e = &list[atoi(argv[++i])];
            switch (e->kind) {
            case RT_DEV:
            case RT_MANAGED:
                rc = cudaFree(e->p);
                break;
            case RT_HOST:
                rc = cudaFreeHost(e->p);
                break;
            case RT_ASYNC:
                rc = cudaFreeAsync(e->p, 0);
                break;
            case DRV_DEV:
                rc = ((CUresult(*)(CUdeviceptr))proc("cuMemFree"))((CUdeviceptr)(uintptr_t)e->p);
                break;
            case DRV_HOST:
                rc = ((CUresult(*)(void *))proc("cuMemFreeHost"))(e->p);
                break;
            case DRV_ASYNC:
                rc = ((CUresult(*)(CUdeviceptr, CUstream))proc("cuMemFreeAsync"))(
                    (CUdeviceptr)(uintptr_t)e->p, NULL);
                break;
            case DRV_HANDLE:
                rc = ((CUresult(*)(CUmemGenericAllocationHandle))proc("cuMemRelease"))(
                    (CUmemGenericAllocationHandle)(uintptr_t)e->p);
                break;
            }
        } else if (!strcmp(op, "meminfo") || !strcmp(op, "proc-meminfo")) {
            size_t f = 0, t = 0;
            rc = !strcmp(op, "meminfo")
                     ? (int)cudaMemGetInfo(&f, &t)
                     : (int)((CUresult(*)(size_t *, size_t *))proc("cuMemGetInfo"))(&f, &t);
            printf("%s free=%zu total=%zu\n", op, f, t);
        } else if (!strcmp(op, "device")) {
            rc = cudaSetDevice(atoi(argv[++i]));
        } else if (!strcmp(op, "threads")) {
            const int t = atoi(argv[i + 1]);
            struct tjob jobs[64];
            pthread_t th[64];
            for (int k = 0; k < t && k < 64; k++) {
                jobs[k] = (struct tjob){atol(argv[i + 2]), size_arg(argv[i + 3]), 0};
                pthread_create(&th[k], NULL, worker, &jobs[k]);
            }
            for (int k = 0; k < t && k < 64; k++) {
                pthread_join(th[k], NULL);
                rc |= jobs[k].failures;
            }
            i += 3;
        } else if (!strcmp(op, "sleep")) {
            const long ms = atol(argv[++i]);
            nanosleep(&(struct timespec){ms / 1000, (ms % 1000) * 1000000}, NULL);
        } else {
            fprintf(stderr, "cudaprobe: unknown operation %s\n", op);
            return 2;
        }
        printf("%s rc=%d\n", op, rc);
        fflush(stdout);
    }
    return 0;
}

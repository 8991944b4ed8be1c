/*
 * regjob.c - a toy trainer whose whole state lives in registered buffers
 * (spotrun_register): a host array, a "device" array (cudaMalloc) and the
 * step counter. It commits when asked (spotrun_checkpoint_requested) or
 * every --save-every steps; a resumed run gets its buffers back from the
 * shim. --out writes the final host and device bytes, so a test can compare
 * an interrupted run with an uninterrupted one bit for bit.
 *
 *   regjob [--steps N] [--save-every K] [--pace-ms MS] [--crash-at S] [--out FILE]
 */
#include <cuda_runtime_api.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "spotrun.h"

#define H 4096
#define D 65536

int main(int argc, char **argv)
{
    long steps = 500, save_every = 0, pace_ms = 0, crash_at = -1;
    const char *out = NULL;
    for (int i = 1; i + 1 < argc; i += 2) {
        if (!strcmp(argv[i], "--steps"))
            steps = atol(argv[i + 1]);
        else if (!strcmp(argv[i], "--save-every"))
            save_every = atol(argv[i + 1]);
        else if (!strcmp(argv[i], "--pace-ms"))
            pace_ms = atol(argv[i + 1]);
        else if (!strcmp(argv[i], "--crash-at"))
            crash_at = atol(argv[i + 1]);
        else if (!strcmp(argv[i], "--out"))
            out = argv[i + 1];
    }
    float *host = malloc(H * sizeof(float)), *tmp = malloc(D * sizeof(float)), *dev;
    long step = 0;
    if (!host || !tmp || cudaMalloc((void **)&dev, D * sizeof(float)) != cudaSuccess) {
        fprintf(stderr, "regjob: allocation failed\n");
        return 1;
    }
    for (int i = 0; i < H; i++)
        host[i] = (float)i * 0.5f;
    for (int i = 0; i < D; i++)
        tmp[i] = (float)(i % 97) * 0.25f;
    cudaMemcpy(dev, tmp, D * sizeof(float), cudaMemcpyHostToDevice);

    const int r1 = spotrun_register("host", host, H * sizeof(float));
    const int r2 = spotrun_register("device", dev, D * sizeof(float));
    const int r3 = spotrun_register("step", &step, sizeof step);
    if (r1 < 0 || r2 < 0 || r3 < 0) {
        fprintf(stderr, "regjob: spotrun_register failed: %d %d %d\n", r1, r2, r3);
        return 1;
    }
    if (r1 == 1 && r2 == 1 && r3 == 1)
        printf("resumed from step %ld\n", step);
    const char *attempt = getenv("SPOTRUN_ATTEMPT");
    while (step < steps) {
        for (int i = 0; i < H; i++)
            host[i] = host[i] * 0.999f + (float)step * 1e-3f;
        cudaMemcpy(tmp, dev, D * sizeof(float), cudaMemcpyDeviceToHost);
        for (int i = 0; i < D; i++)
            tmp[i] = tmp[i] * 1.0001f - host[i % H] * 1e-4f;
        cudaMemcpy(dev, tmp, D * sizeof(float), cudaMemcpyHostToDevice);
        step++;
        if (step % 100 == 0)
            printf("step %ld\n", step);
        if (spotrun_checkpoint_requested() || (save_every && step % save_every == 0)) {
            if (spotrun_checkpoint_requested())
                printf("checkpoint requested at step %ld\n", step);
            const int rc = spotrun_commit(step);
            if (rc < 0)
                fprintf(stderr, "regjob: commit failed: %d\n", rc);
        }
        fflush(stdout);
        if (step == crash_at && (!attempt || !strcmp(attempt, "0")))
            _exit(3);
        if (pace_ms)
            nanosleep(&(struct timespec){0, pace_ms * 1000000L}, NULL);
    }
    if (out) {
        FILE *f = fopen(out, "wb");
        cudaMemcpy(tmp, dev, D * sizeof(float), cudaMemcpyDeviceToHost);
        if (!f || fwrite(host, sizeof(float), H, f) != H || fwrite(tmp, sizeof(float), D, f) != D ||
            fclose(f) != 0) {
            perror(out);
            return 1;
        }
    }
    printf("done at step %ld\n", step);
    cudaFree(dev);
    return 0;
}

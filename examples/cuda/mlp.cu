/*
 * mlp.cu - a small CUDA C trainer that checkpoints with three calls to
 * libspotrun.so and no serialisation code: its weights live in device
 * buffers registered with spotrun_register(), which the shim writes into
 * $SPOTRUN_CKPT_DIR at each spotrun_commit() and fills back on resume.
 *
 * Model: 64 -> 128 (ReLU) -> 10 MLP, softmax cross-entropy, plain SGD on a
 * synthetic, fixed-seed dataset labelled by a hidden linear teacher. Every
 * kernel writes each output element from one thread with a fixed loop
 * order (no atomics), so a run is deterministic and a resumed run ends
 * bit-exact with an uninterrupted one.
 *
 *   mlp [--steps N] [--save-every K] [--out FILE]
 *   spotrun run -- build/examples/mlp --steps 2000 --save-every 500
 *
 * Built by CMake when nvcc is found; runs on a GPU (scripts/gpu-check.sh).
 */
#include <cuda_runtime.h>

#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "spotrun.h"

#define IN 64
#define HID 128
#define OUT 10
#define N 4096
#define BATCH 256

#define CHECK(x)                                                                                   \
    do {                                                                                           \
        cudaError_t e_ = (x);                                                                      \
        if (e_ != cudaSuccess) {                                                                   \
            fprintf(stderr, "mlp: %s: %s\n", #x, cudaGetErrorString(e_));                          \
            exit(2);                                                                               \
        }                                                                                          \
    } while (0)

/* h = relu(x W1 + b1) for rows [0, B) */
__global__ void fwd1(const float *x, const float *w1, const float *b1, float *h, int B)
{
    const int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i >= B * HID)
        return;
    const int r = i / HID, c = i % HID;
    float s = b1[c];
    for (int k = 0; k < IN; k++)
        s += x[r * IN + k] * w1[k * HID + c];
    h[i] = s > 0.f ? s : 0.f;
}

/* dz = softmax(h W2 + b2) - onehot(y), divided by B; loss per row */
__global__ void fwd2(const float *h, const float *w2, const float *b2, const int *y, float *dz,
                     float *loss, int B)
{
    const int r = blockIdx.x * blockDim.x + threadIdx.x;
    if (r >= B)
        return;
    float z[OUT], m = -1e30f, sum = 0.f;
    for (int c = 0; c < OUT; c++) {
        float s = b2[c];
        for (int k = 0; k < HID; k++)
            s += h[r * HID + k] * w2[k * OUT + c];
        z[c] = s;
        m = fmaxf(m, s);
    }
    for (int c = 0; c < OUT; c++)
        sum += expf(z[c] - m);
    for (int c = 0; c < OUT; c++) {
        const float p = expf(z[c] - m) / sum;
        dz[r * OUT + c] = (p - (c == y[r] ? 1.f : 0.f)) / (float)B;
    }
    loss[r] = -(z[y[r]] - m - logf(sum));
}

/* dh = (dz W2^T) * relu'(h) */
__global__ void back1(const float *dz, const float *w2, const float *h, float *dh, int B)
{
    const int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i >= B * HID)
        return;
    const int r = i / HID, k = i % HID;
    float s = 0.f;
    for (int c = 0; c < OUT; c++)
        s += dz[r * OUT + c] * w2[k * OUT + c];
    dh[i] = h[i] > 0.f ? s : 0.f;
}

/* w[rows x cols] -= lr * a^T d ; b -= lr * sum(d) (one thread per weight) */
__global__ void sgd(float *w, float *b, const float *a, const float *d, int rows, int cols, int B,
                    float lr)
{
    const int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < rows * cols) {
        const int k = i / cols, c = i % cols;
        float s = 0.f;
        for (int r = 0; r < B; r++)
            s += a[r * rows + k] * d[r * cols + c];
        w[i] -= lr * s;
    }
    if (i < cols) {
        float s = 0.f;
        for (int r = 0; r < B; r++)
            s += d[r * cols + i];
        b[i] -= lr * s;
    }
}

static uint64_t rng = 0x9E3779B97F4A7C15ull;
static float urand(void)
{
    rng ^= rng >> 12, rng ^= rng << 25, rng ^= rng >> 27;
    return (float)((rng * 0x2545F4914F6CDD1Dull) >> 40) / (float)(1 << 24) - 0.5f;
}

int main(int argc, char **argv)
{
    long steps = 2000, save_every = 500;
    const char *out = NULL;
    for (int i = 1; i + 1 < argc; i += 2) {
        if (!strcmp(argv[i], "--steps"))
            steps = atol(argv[i + 1]);
        else if (!strcmp(argv[i], "--save-every"))
            save_every = atol(argv[i + 1]);
        else if (!strcmp(argv[i], "--out"))
            out = argv[i + 1];
    }
    /* Data and initial weights from the fixed-seed generator. */
    static float x[N * IN], teacher[IN * OUT], w1[IN * HID], w2[HID * OUT];
    static int y[N];
    for (int i = 0; i < N * IN; i++)
        x[i] = urand();
    for (int i = 0; i < IN * OUT; i++)
        teacher[i] = urand();
    for (int r = 0; r < N; r++) {
        int best = 0;
        float bv = -1e30f;
        for (int c = 0; c < OUT; c++) {
            float s = 0.f;
            for (int k = 0; k < IN; k++)
                s += x[r * IN + k] * teacher[k * OUT + c];
            if (s > bv)
                bv = s, best = c;
        }
        y[r] = best;
    }
    for (int i = 0; i < IN * HID; i++)
        w1[i] = urand() * 0.25f;
    for (int i = 0; i < HID * OUT; i++)
        w2[i] = urand() * 0.25f;

    float *dx, *dw1, *db1, *dw2, *db2, *dh, *ddz, *ddh, *dloss;
    int *dy;
    CHECK(cudaMalloc(&dx, sizeof x));
    CHECK(cudaMalloc(&dy, sizeof y));
    CHECK(cudaMalloc(&dw1, sizeof w1));
    CHECK(cudaMalloc(&dw2, sizeof w2));
    CHECK(cudaMalloc(&db1, HID * sizeof(float)));
    CHECK(cudaMalloc(&db2, OUT * sizeof(float)));
    CHECK(cudaMalloc(&dh, BATCH * HID * sizeof(float)));
    CHECK(cudaMalloc(&ddh, BATCH * HID * sizeof(float)));
    CHECK(cudaMalloc(&ddz, BATCH * OUT * sizeof(float)));
    CHECK(cudaMalloc(&dloss, BATCH * sizeof(float)));
    CHECK(cudaMemcpy(dx, x, sizeof x, cudaMemcpyHostToDevice));
    CHECK(cudaMemcpy(dy, y, sizeof y, cudaMemcpyHostToDevice));
    CHECK(cudaMemcpy(dw1, w1, sizeof w1, cudaMemcpyHostToDevice));
    CHECK(cudaMemcpy(dw2, w2, sizeof w2, cudaMemcpyHostToDevice));
    CHECK(cudaMemset(db1, 0, HID * sizeof(float)));
    CHECK(cudaMemset(db2, 0, OUT * sizeof(float)));

    /* The whole training state: three calls fill it back on a resume. */
    long step = 0;
    int restored = spotrun_register("w1", dw1, sizeof w1) == 1;
    restored &= spotrun_register("b1", db1, HID * sizeof(float)) == 1;
    restored &= spotrun_register("w2", dw2, sizeof w2) == 1;
    restored &= spotrun_register("b2", db2, OUT * sizeof(float)) == 1;
    restored &= spotrun_register("step", &step, sizeof step) == 1;
    if (restored)
        printf("resumed from step %ld\n", step);

    static float loss[BATCH];
    const float lr = 0.5f;
    for (; step < steps;) {
        const int off = (int)((step * BATCH) % N);
        const float *xb = dx + off * IN;
        const int *yb = dy + off;
        fwd1<<<(BATCH * HID + 255) / 256, 256>>>(xb, dw1, db1, dh, BATCH);
        fwd2<<<(BATCH + 127) / 128, 128>>>(dh, dw2, db2, yb, ddz, dloss, BATCH);
        back1<<<(BATCH * HID + 255) / 256, 256>>>(ddz, dw2, dh, ddh, BATCH);
        sgd<<<(HID * OUT + 255) / 256, 256>>>(dw2, db2, dh, ddz, HID, OUT, BATCH, lr);
        sgd<<<(IN * HID + 255) / 256, 256>>>(dw1, db1, xb, ddh, IN, HID, BATCH, lr);
        CHECK(cudaGetLastError());
        step++;
        if (step % 100 == 0) {
            CHECK(cudaMemcpy(loss, dloss, sizeof loss, cudaMemcpyDeviceToHost));
            double s = 0;
            for (int i = 0; i < BATCH; i++)
                s += loss[i];
            printf("step %ld loss %.5f\n", step, s / BATCH);
            fflush(stdout);
        }
        const int asked = spotrun_checkpoint_requested();
        if (asked || (save_every && step % save_every == 0)) {
            CHECK(cudaDeviceSynchronize());
            if (asked)
                printf("checkpoint requested at step %ld\n", step);
            const int rc = spotrun_commit(step);
            if (rc < 0 && rc != -107 /* ENOTCONN: not under spotrun */)
                fprintf(stderr, "mlp: commit failed (%d); training on\n", rc);
        }
    }
    CHECK(cudaMemcpy(w1, dw1, sizeof w1, cudaMemcpyDeviceToHost));
    CHECK(cudaMemcpy(w2, dw2, sizeof w2, cudaMemcpyDeviceToHost));
    if (out) {
        FILE *f = fopen(out, "wb");
        if (!f || fwrite(w1, sizeof w1, 1, f) != 1 || fwrite(w2, sizeof w2, 1, f) != 1 ||
            fclose(f)) {
            perror(out);
            return 1;
        }
    }
    printf("done at step %ld\n", step);
    return 0;
}

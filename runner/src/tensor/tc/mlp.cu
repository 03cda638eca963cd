// The tensor-core MLP step's kernels (see `tensor/tc/mod.rs`): compiled to PTX by nvcc at build
// time (runner/build.rs, `cuda` feature) and embedded in the binary, so nothing is compiled at
// run time and no CUDA header is needed there. The matrix products are cuBLAS's; these are the
// passes between them. Every kernel reads the step's state from `MmControl` in device memory,
// never from an argument that changes per step, so a captured CUDA graph replays them as is.
// Reductions run in one block with a fixed order, so a step is deterministic.
#include "mlp_math.h"

#define MM_THREADS 256

// The sum of every thread's `v` over a block of MM_THREADS threads, in a fixed order (a tree
// in shared memory); thread 0 gets it.
static __device__ double mm_block_sum(double v) {
    __shared__ double sums[MM_THREADS];
    sums[threadIdx.x] = v;
    __syncthreads();
    for (unsigned int width = MM_THREADS / 2; width > 0; width /= 2) {
        if (threadIdx.x < width) {
            sums[threadIdx.x] += sums[threadIdx.x + width];
        }
        __syncthreads();
    }
    return sums[0];
}

// dst[i] = src[i] as bf16 (kind 1) or f16 (kind 2) bits.
extern "C" __global__ void mm_cast(const float *src, unsigned short *dst, unsigned long long n, int kind) {
    for (unsigned long long i = blockIdx.x * (unsigned long long)blockDim.x + threadIdx.x; i < n;
         i += (unsigned long long)blockDim.x * gridDim.x) {
        dst[i] = kind == 1 ? mm_to_bf16(src[i]) : mm_to_f16(src[i]);
    }
}

// A hidden layer's output, row-major rows x cols: z += bias (kept for the backward pass),
// h = act(z) * dropout mask, written as f32 (kind 0), bf16 (1) or f16 (2).
extern "C" __global__ void mm_bias_act(float *z, const float *bias, void *h, int kind, unsigned long long rows,
                                       unsigned int cols, int act, float p, unsigned long long seed,
                                       const MmControl *ctl, unsigned int layer) {
    unsigned long long n = rows * cols;
    unsigned long long step = ctl->step;
    for (unsigned long long i = blockIdx.x * (unsigned long long)blockDim.x + threadIdx.x; i < n;
         i += (unsigned long long)blockDim.x * gridDim.x) {
        float zi = z[i] + bias[i % cols];
        z[i] = zi;
        float hi = mm_act(act, zi) * mm_dropout(seed, step, layer, i, p);
        if (kind == 0) {
            ((float *)h)[i] = hi;
        } else if (kind == 1) {
            ((unsigned short *)h)[i] = mm_to_bf16(hi);
        } else {
            ((unsigned short *)h)[i] = mm_to_f16(hi);
        }
    }
}

// The output layer: z += bias.
extern "C" __global__ void mm_bias(float *z, const float *bias, unsigned long long rows, unsigned int cols) {
    unsigned long long n = rows * cols;
    for (unsigned long long i = blockIdx.x * (unsigned long long)blockDim.x + threadIdx.x; i < n;
         i += (unsigned long long)blockDim.x * gridDim.x) {
        z[i] += bias[i % cols];
    }
}

// The mean squared error of `pred` against `y` (n values) into *loss, and its gradient,
// seeded with the loss scale: dz = 2 / n * (pred - y) * scale. One block.
extern "C" __global__ void mm_mse(const float *pred, const float *y, unsigned long long n, float *dz, float *loss,
                                  const MmControl *ctl) {
    float seed = 2.0f / (float)n * ctl->loss_scale;
    double sum = 0.0;
    for (unsigned long long i = threadIdx.x; i < n; i += MM_THREADS) {
        float d = pred[i] - y[i];
        sum += (double)(d * d);
        dz[i] = seed * d;
    }
    double total = mm_block_sum(sum);
    if (threadIdx.x == 0) {
        *loss = (float)(total / (double)n);
    }
}

// dL/dh into dL/dz of a hidden layer: d *= act'(z) * the step's dropout mask.
extern "C" __global__ void mm_act_back(float *d, const float *z, unsigned long long n, int act, float p,
                                       unsigned long long seed, const MmControl *ctl, unsigned int layer) {
    unsigned long long step = ctl->step;
    for (unsigned long long i = blockIdx.x * (unsigned long long)blockDim.x + threadIdx.x; i < n;
         i += (unsigned long long)blockDim.x * gridDim.x) {
        d[i] *= mm_slope(act, z[i]) * mm_dropout(seed, step, layer, i, p);
    }
}

// partial[slot] = the sum of squares of g (n values), in f64. One block.
extern "C" __global__ void mm_sumsq(const float *g, unsigned long long n, double *partial, unsigned int slot) {
    double sum = 0.0;
    for (unsigned long long i = threadIdx.x; i < n; i += MM_THREADS) {
        double v = (double)g[i];
        sum += v * v;
    }
    double total = mm_block_sum(sum);
    if (threadIdx.x == 0) {
        partial[slot] = total;
    }
}

// The step's decision (one thread): the partial sums in order, then `mm_control`.
extern "C" __global__ void mm_control_step(const double *partial, unsigned int count, MmControl *ctl,
                                           float max_norm, int scaled) {
    if (blockIdx.x == 0 && threadIdx.x == 0) {
        double sumsq = 0.0;
        for (unsigned int i = 0; i < count; i++) {
            sumsq += partial[i];
        }
        mm_control(ctl, sumsq, max_norm, scaled);
    }
}

// Adam on one parameter tensor, unless the control skips the step; then the bf16 (kind 1) or
// f16 (2) copy the next products read (kind 0: none).
extern "C" __global__ void mm_adam_step(float *param, float *m, float *v, const float *grad, unsigned long long n,
                                        const MmControl *ctl, float lr, float beta1, float beta2, float eps,
                                        float weight_decay, unsigned short *half_copy, int kind) {
    if (ctl->skip) {
        return;
    }
    float coef = ctl->coef;
    int t = ctl->t;
    for (unsigned long long i = blockIdx.x * (unsigned long long)blockDim.x + threadIdx.x; i < n;
         i += (unsigned long long)blockDim.x * gridDim.x) {
        float p = param[i], mi = m[i], vi = v[i];
        mm_adam(&p, &mi, &vi, grad[i], coef, t, lr, beta1, beta2, eps, weight_decay);
        param[i] = p;
        m[i] = mi;
        v[i] = vi;
        if (kind == 1) {
            half_copy[i] = mm_to_bf16(p);
        } else if (kind == 2) {
            half_copy[i] = mm_to_f16(p);
        }
    }
}

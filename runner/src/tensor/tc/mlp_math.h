// The per-element arithmetic of the tensor-core MLP step (`mlp.cu`): conversions to bf16 and
// f16, activations and their slopes, the dropout draw, the Adam update and the loss-scale
// control. Written once for two compilers: nvcc builds it into the step's kernels (PTX,
// embedded at build time), and the tests build it for the host with `cc` and compare every
// function with the Rust reference (`tensor/tc/math.rs`) and the `half` crate. No CUDA header
// is needed by either.
#ifndef MEASURED_MLP_MATH_H
#define MEASURED_MLP_MATH_H

#ifdef __CUDACC__
#define MM_FN static __device__ __forceinline__
#define MM_BITS(f) __float_as_uint(f)
#define MM_FLOAT(u) __uint_as_float(u)
#else
#include <math.h>
#include <string.h>
#define MM_FN static inline
static inline unsigned int mm_bits_host(float f) {
    unsigned int u;
    memcpy(&u, &f, sizeof u);
    return u;
}
static inline float mm_float_host(unsigned int u) {
    float f;
    memcpy(&f, &u, sizeof f);
    return f;
}
#define MM_BITS(f) mm_bits_host(f)
#define MM_FLOAT(u) mm_float_host(u)
#endif

// The step's state on the device, read and written by kernels only, so that a captured
// graph's replays see it change (kernel arguments are fixed at capture).
typedef struct {
    float loss_scale;      // the factor the loss gradient is seeded with (1 without scaling)
    unsigned int good;     // clean steps since the last overflow or growth
    unsigned long long skipped;  // steps skipped for a non-finite gradient
    int t;                 // Adam steps taken (1-based at the update)
    float coef;            // what each gradient is multiplied by at the update: 1/scale * clip
    int skip;              // this step's update is skipped
    unsigned long long step;     // training steps so far (the dropout draw's counter)
} MmControl;

// Loss scaling, PyTorch's GradScaler defaults (as `LossScaler`).
#define MM_GROWTH_INTERVAL 2000u
#define MM_SCALE_MIN (1.0f / 16777216.0f)
#define MM_SCALE_MAX 18446744073709551616.0f

// f32 -> bf16 bits, round to nearest even; a NaN stays a (quiet) NaN of the same sign.
MM_FN unsigned short mm_to_bf16(float value) {
    unsigned int x = MM_BITS(value);
    if ((x & 0x7fffffffu) > 0x7f800000u) {
        return (unsigned short)((x >> 16) | 0x0040u);
    }
    unsigned int round_bit = 0x00008000u;
    if ((x & round_bit) != 0u && (x & (3u * round_bit - 1u)) != 0u) {
        return (unsigned short)((x >> 16) + 1u);
    }
    return (unsigned short)(x >> 16);
}

// f32 -> f16 bits, round to nearest even, with subnormals, overflow to infinity, and NaN kept
// (its top mantissa bits, with the quiet bit set).
MM_FN unsigned short mm_to_f16(float value) {
    unsigned int x = MM_BITS(value);
    unsigned int sign = x & 0x80000000u;
    unsigned int exp = x & 0x7f800000u;
    unsigned int man = x & 0x007fffffu;
    unsigned int half_sign = sign >> 16;
    if (exp == 0x7f800000u) {
        unsigned int nan_bit = man == 0u ? 0u : 0x0200u;
        return (unsigned short)(half_sign | 0x7c00u | nan_bit | (man >> 13));
    }
    int half_exp = (int)(exp >> 23) - 127 + 15;
    if (half_exp >= 0x1f) {
        return (unsigned short)(half_sign | 0x7c00u);
    }
    if (half_exp <= 0) {
        if (14 - half_exp > 24) {
            return (unsigned short)half_sign;
        }
        unsigned int full = man | 0x00800000u;
        unsigned int half_man = full >> (14 - half_exp);
        unsigned int round_bit = 1u << (13 - half_exp);
        if ((full & round_bit) != 0u && (full & (3u * round_bit - 1u)) != 0u) {
            half_man += 1u;
        }
        return (unsigned short)(half_sign | half_man);
    }
    unsigned int packed = half_sign | ((unsigned int)half_exp << 10) | (man >> 13);
    unsigned int round_bit = 0x00001000u;
    if ((man & round_bit) != 0u && (man & (3u * round_bit - 1u)) != 0u) {
        packed += 1u;
    }
    return (unsigned short)packed;
}

// Activations: 0 ReLU, 1 GELU (tanh form, as the CPU engine and dfdx), 2 tanh.
MM_FN float mm_act(int act, float z) {
    if (act == 0) {
        return z > 0.0f ? z : 0.0f;
    }
    if (act == 1) {
        float inner = 0.7978845608f * (z + 0.044715f * z * z * z);
        return 0.5f * z * (1.0f + tanhf(inner));
    }
    return tanhf(z);
}

MM_FN float mm_slope(int act, float z) {
    if (act == 0) {
        return z > 0.0f ? 1.0f : 0.0f;
    }
    if (act == 1) {
        float beta = 0.7978845608f;
        float kappa = 0.044715f;
        float t = tanhf(beta * (z + kappa * z * z * z));
        return 0.5f * (1.0f + t) + 0.5f * z * (1.0f - t * t) * beta * (1.0f + 3.0f * kappa * z * z);
    }
    float t = tanhf(z);
    return 1.0f - t * t;
}

// SplitMix64's finalizer: a counter-based draw, so a mask is recomputed in the backward pass
// instead of stored, and a graph's replays draw new masks from the step counter.
MM_FN unsigned long long mm_mix(unsigned long long z) {
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
    return z ^ (z >> 31);
}

// The dropout multiplier of element `index` of hidden layer `layer` at training step `step`:
// 0 with probability p, else 1 / (1 - p).
MM_FN float mm_dropout(unsigned long long seed, unsigned long long step, unsigned int layer,
                       unsigned long long index, float p) {
    if (p <= 0.0f) {
        return 1.0f;
    }
    unsigned long long h = mm_mix(seed ^ mm_mix(step * 0x9e3779b97f4a7c15ull + layer));
    h = mm_mix(h + index);
    float u = (float)(h >> 40) * (1.0f / 16777216.0f);
    return u < p ? 0.0f : 1.0f / (1.0f - p);
}

// The loss-scale and clipping decision after a backward pass, from the sum of squares of every
// (scaled) gradient: a non-finite sum skips the update and halves the scale; else each gradient
// is multiplied by 1/scale and the clip factor, and the scale grows after MM_GROWTH_INTERVAL
// clean steps. `max_norm <= 0` means no clipping. Without scaling (`scaled == 0`: f32, bf16)
// nothing is skipped and the scale stays 1, as on the reference path, where a non-finite
// gradient reaches the weights.
MM_FN void mm_control(MmControl *c, double sumsq, float max_norm, int scaled) {
    c->step += 1ull;
    if (scaled && !isfinite(sumsq)) {  // inf or NaN: an f16 overflow
        c->skip = 1;
        c->coef = 0.0f;
        c->skipped += 1ull;
        c->good = 0u;
        float half = c->loss_scale * 0.5f;
        c->loss_scale = half > MM_SCALE_MIN ? half : MM_SCALE_MIN;
        return;
    }
    float inverse = 1.0f / c->loss_scale;
    float clip = 1.0f;
    if (max_norm > 0.0f) {
        // In f64 until the end: a scaled sum of squares can exceed f32's range.
        float norm = (float)(sqrt(sumsq) / (double)c->loss_scale);
        float s = max_norm / (norm + 1.0e-6f);
        clip = s < 1.0f ? s : 1.0f;
    }
    c->skip = 0;
    c->coef = inverse * clip;
    c->t += 1;
    if (scaled) {
        c->good += 1u;
        if (c->good == MM_GROWTH_INTERVAL) {
            c->good = 0u;
            float twice = c->loss_scale * 2.0f;
            c->loss_scale = twice < MM_SCALE_MAX ? twice : MM_SCALE_MAX;
        }
    }
}

// One element of Adam with optional decoupled weight decay, as dfdx's kernel computes it (in
// f32); `g` is the raw gradient, multiplied by the control's `coef` first.
MM_FN void mm_adam(float *p, float *m, float *v, float g, float coef, int t, float lr, float beta1,
                   float beta2, float eps, float weight_decay) {
    g *= coef;
    float tf = (float)t;
    float mm = *m * beta1 + g * (1.0f - beta1);
    float vv = *v * beta2 + g * g * (1.0f - beta2);
    float m_hat = mm * 1.0f / (1.0f - powf(beta1, tf));
    float v_hat = vv * 1.0f / (1.0f - powf(beta2, tf));
    float step = lr * m_hat / (sqrtf(v_hat) + eps);
    if (weight_decay > 0.0f) {
        step += (weight_decay * lr) * *p;
    }
    *m = mm;
    *v = vv;
    *p -= step;
}

#endif

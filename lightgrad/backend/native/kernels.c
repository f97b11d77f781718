/* lightgrad's native kernels: fused float32 loops behind the backend's functions.

   Each kernel is one pass (or one pass per row) where NumPy takes many: GELU and its derivative,
   layer norm forward and backward, softmax and log-softmax over the last axis and their gradients,
   ReLU and its mask, the Adam update, 2x2 max pooling forward and backward, and one LSTM or GRU
   step's gate math forward and backward. The Python side (backend/native/__init__.py and the backend
   functions) decides when a kernel is used: float32, C-contiguous, non-empty, large enough.
   Arrays arrive through the buffer protocol (PyBUF_SIMPLE: a contiguous buffer or an error), the
   GIL is released around large loops, and every size is checked here too, so a wrong call raises
   instead of touching memory it does not own.

   Vectorisation: plain loops the compiler vectorises, with exp written out as arithmetic (libm's
   expf is a scalar call). On x86-64 each kernel is built for the baseline, AVX2+FMA (x86-64-v3)
   and AVX-512 (x86-64-v4), picked at load time by the CPU (gcc's target_clones); a build with
   LG_NATIVE_ARCH (-march=native, for the machine it runs on only) has one variant. Floating-point
   contraction is off (setup.py: -ffp-contract=off), so every variant rounds alike and the Adam update
   is bit-identical to the NumPy path's sequence of float32 operations. */

#include "common.h"
#include "pool.h"

/* ---- scalar building blocks (inlined into each variant, where they vectorise) ------------------ */

/* exp(x) = 2^n e^r with n = round(x / ln 2) and |r| <= ln 2 / 2 (Cody-Waite reduction in two
   constants), e^r by Cephes' expf polynomial (about 1 ulp). 2^n is applied as two factors, so one
   formula covers the whole range: inf above ~88.72, denormals and 0 below ~-87.3; NaN stays NaN. */
LG_INLINE float lg_expf(float x) {
    float xc = x > 88.8f ? 88.8f : x; /* (a NaN fails both tests and passes through) */
    xc = xc < -104.0f ? -104.0f : xc;
    float t = xc * 1.44269504088896341f + 12582912.0f; /* 1.5 * 2^23: t's low bits hold round(n) */
    float n = t - 12582912.0f;
    uint32_t k = lg_float_to_bits(t) - 0x4B400000u;  /* n as an integer, two's complement */
    float r = xc - n * 0.693359375f;
    r = r - n * -2.12194440e-4f;
    float p = 1.9875691500e-4f;
    p = p * r + 1.3981999507e-3f;
    p = p * r + 8.3334519073e-3f;
    p = p * r + 4.1665795894e-2f;
    p = p * r + 1.6666665459e-1f;
    p = p * r + 5.0000001201e-1f;
    p = p * r * r + r + 1.0f;
    uint32_t k1 = (uint32_t)((int32_t)k >> 1), k2 = k - k1;
    return p * lg_bits_to_float((k1 + 127u) << 23) * lg_bits_to_float((k2 + 127u) << 23);
}

/* Phi(-a) for a = |x| >= 0, the normal distribution's lower tail: 0.5 erfc(a / sqrt 2) by the
   Chebyshev fit of Numerical Recipes' erfcc (relative error < 1.2e-7 over the whole range), so the
   tail keeps its relative accuracy where 1 - erf(z) would cancel. */
LG_INLINE float lg_phi_lower(float a) {
    float t = 1.0f / (1.0f + a * 0.35355339059327373f); /* 1 / (1 + z / 2), z = a / sqrt 2 */
    float p = 0.17087277f;
    p = p * t - 0.82215223f;
    p = p * t + 1.48851587f;
    p = p * t - 1.13520398f;
    p = p * t + 0.27886807f;
    p = p * t - 0.18628806f;
    p = p * t + 0.09678418f;
    p = p * t + 0.37409196f;
    p = p * t + 1.00002368f;
    p = p * t - 1.26551223f;
    return 0.5f * t * lg_expf(p - 0.5f * (a * a));
}

#define LG_INV_SQRT_2PI 0.3989422804014327f
#define LG_TANH_C 0.7978845608028654f /* sqrt(2 / pi) */
#define LG_TANH_K 0.044715f

/* Row sums with 16 running sums (the compiler keeps them in vector registers), added into a double
   every 1024 entries so long rows keep float32's relative accuracy. */
#define LG_LANES 16
#define LG_SPAN 1024

LG_INLINE double lg_sum(const float *x, Py_ssize_t n) {
    double total = 0.0;
    for (Py_ssize_t s = 0; s < n; s += LG_SPAN) {
        Py_ssize_t e = s + LG_SPAN < n ? s + LG_SPAN : n, i = s;
        float acc[LG_LANES] = {0};
        for (; i + LG_LANES <= e; i += LG_LANES)
            for (int k = 0; k < LG_LANES; k++) acc[k] += x[i + k];
        float part = 0.0f;
        for (; i < e; i++) part += x[i];
        for (int k = 0; k < LG_LANES; k++) part += acc[k];
        total += part;
    }
    return total;
}

/* sum of x * y (y may equal x) */
LG_INLINE double lg_dot(const float *x, const float *y, Py_ssize_t n) {
    double total = 0.0;
    for (Py_ssize_t s = 0; s < n; s += LG_SPAN) {
        Py_ssize_t e = s + LG_SPAN < n ? s + LG_SPAN : n, i = s;
        float acc[LG_LANES] = {0};
        for (; i + LG_LANES <= e; i += LG_LANES)
            for (int k = 0; k < LG_LANES; k++) acc[k] += x[i + k] * y[i + k];
        float part = 0.0f;
        for (; i < e; i++) part += x[i] * y[i];
        for (int k = 0; k < LG_LANES; k++) part += acc[k];
        total += part;
    }
    return total;
}

/* sum of (x - c)^2 */
LG_INLINE double lg_sqdev(const float *x, float c, Py_ssize_t n) {
    double total = 0.0;
    for (Py_ssize_t s = 0; s < n; s += LG_SPAN) {
        Py_ssize_t e = s + LG_SPAN < n ? s + LG_SPAN : n, i = s;
        float acc[LG_LANES] = {0};
        for (; i + LG_LANES <= e; i += LG_LANES)
            for (int k = 0; k < LG_LANES; k++) {
                float d = x[i + k] - c;
                acc[k] += d * d;
            }
        float part = 0.0f;
        for (; i < e; i++) part += (x[i] - c) * (x[i] - c);
        for (int k = 0; k < LG_LANES; k++) part += acc[k];
        total += part;
    }
    return total;
}

/* a row's maximum, NaN if it holds one (as NumPy's and PyTorch's max). Written with GCC's vector
   types: the compiler vectorises a max reduction only under -ffinite-math-only, and as 16 scalar
   lanes it did not (15x slower). The lanes also add up v - v, NaN only for a NaN or an infinity;
   such a row is scanned again for a NaN. */
typedef float lg_vf __attribute__((vector_size(64)));
typedef int32_t lg_vi __attribute__((vector_size(64)));

LG_INLINE float lg_max(const float *x, Py_ssize_t n) {
    lg_vf acc, odd = {0};
    Py_ssize_t i = 0;
    for (int k = 0; k < LG_LANES; k++) acc[k] = -INFINITY;
    for (; i + LG_LANES <= n; i += LG_LANES) {
        lg_vf v;
        memcpy(&v, x + i, sizeof v);
        lg_vi gt = v > acc;
        acc = (lg_vf)((gt & (lg_vi)v) | (~gt & (lg_vi)acc));
        odd += v - v;
    }
    float m = -INFINITY, special = 0.0f;
    for (; i < n; i++) {
        m = x[i] > m ? x[i] : m;
        special += x[i] - x[i];
    }
    for (int k = 0; k < LG_LANES; k++) {
        m = acc[k] > m ? acc[k] : m;
        special += odd[k];
    }
    if (special != special)
        for (i = 0; i < n; i++)
            if (x[i] != x[i]) return x[i];
    return m;
}

/* ---- the kernels ------------------------------------------------------------------------------ */

LG_CLONES static void k_gelu(const float *x, float *out, float *deriv, Py_ssize_t n) {
    if (deriv) {
        for (Py_ssize_t i = 0; i < n; i++) {
            float v = x[i], q = lg_phi_lower(fabsf(v));
            float phi = v < 0.0f ? q : 1.0f - q;
            out[i] = v * phi;
            deriv[i] = phi + v * (lg_expf(-0.5f * (v * v)) * LG_INV_SQRT_2PI);
        }
    } else {
        for (Py_ssize_t i = 0; i < n; i++) {
            float v = x[i], q = lg_phi_lower(fabsf(v));
            out[i] = v * (v < 0.0f ? q : 1.0f - q);
        }
    }
}

/* The tanh form: (1 + tanh(u)) / 2 = 1 / (1 + exp(-2u)) = s, u = c (x + 0.044715 x^3), so the
   lower tail keeps its relative accuracy; the derivative is s + x (1 - tanh^2 u) / 2 u' with
   (1 - tanh^2 u) / 2 = 2 s (1 - s) and 1 - s = e s (e = exp(-2u); 1 where e overflows). */
LG_CLONES static void k_gelu_tanh(const float *x, float *out, float *deriv, Py_ssize_t n) {
    for (Py_ssize_t i = 0; i < n; i++) {
        float v = x[i], v2 = v * v;
        float u = (v2 * (LG_TANH_C * LG_TANH_K) + LG_TANH_C) * v;
        float e = lg_expf(-2.0f * u);
        float s = 1.0f / (1.0f + e);
        out[i] = v * s;
        if (deriv) {
            float om = e > 1e30f ? 1.0f : e * s;
            float du = v2 * (3.0f * LG_TANH_C * LG_TANH_K) + LG_TANH_C;
            deriv[i] = s + v * (2.0f * s * om * du);
        }
    }
}

/* Layer norm over rows of n: mean, rstd = 1 / sqrt(var + eps) (var two-pass, biased), xhat, and
   out = xhat w + b (w, b optional). */
LG_CLONES static void k_layer_norm(const float *x, const float *w, const float *b, float *out, float *xhat,
                                   float *rstd, Py_ssize_t rows, Py_ssize_t n, float eps) {
    float inv_n = 1.0f / (float)n;
    for (Py_ssize_t r = 0; r < rows; r++) {
        const float *xr = x + r * n;
        float *hr = xhat + r * n, *yr = out + r * n;
        float mean = (float)lg_sum(xr, n) * inv_n;
        float var = (float)lg_sqdev(xr, mean, n) * inv_n;
        float rs = 1.0f / sqrtf(var + eps);
        rstd[r] = rs;
        for (Py_ssize_t j = 0; j < n; j++) hr[j] = (xr[j] - mean) * rs;
        if (w && b)
            for (Py_ssize_t j = 0; j < n; j++) yr[j] = hr[j] * w[j] + b[j];
        else if (w)
            for (Py_ssize_t j = 0; j < n; j++) yr[j] = hr[j] * w[j];
        else if (b)
            for (Py_ssize_t j = 0; j < n; j++) yr[j] = hr[j] + b[j];
        else
            memcpy(yr, hr, (size_t)n * sizeof(float));
    }
}

/* Its gradients: gx = rstd (g w - mean(g w) - xhat mean(g w xhat)) (gx may be xhat's own memory:
   each entry is read before it is written), gw = column sums of g xhat, gb = column sums of g. */
LG_CLONES static void k_layer_norm_backward(const float *g, const float *xhat, const float *rstd, const float *w,
                                            float *gx, float *gw, float *gb, Py_ssize_t rows, Py_ssize_t n) {
    float inv_n = 1.0f / (float)n;
    if (gw) memset(gw, 0, (size_t)n * sizeof(float));
    if (gb) memset(gb, 0, (size_t)n * sizeof(float));
    for (Py_ssize_t r = 0; r < rows; r++) {
        const float *gr = g + r * n, *hr = xhat + r * n;
        if (gw)
            for (Py_ssize_t j = 0; j < n; j++) gw[j] += gr[j] * hr[j];
        if (gb)
            for (Py_ssize_t j = 0; j < n; j++) gb[j] += gr[j];
        if (!gx) continue;
        float *xr = gx + r * n, rs = rstd[r], a, c;
        if (w) {
            double sa = 0.0, sc = 0.0;
            for (Py_ssize_t s = 0; s < n; s += LG_SPAN) {
                Py_ssize_t e = s + LG_SPAN < n ? s + LG_SPAN : n, i = s;
                float aa[LG_LANES] = {0}, cc[LG_LANES] = {0};
                for (; i + LG_LANES <= e; i += LG_LANES)
                    for (int k = 0; k < LG_LANES; k++) {
                        float gwk = gr[i + k] * w[i + k];
                        aa[k] += gwk;
                        cc[k] += gwk * hr[i + k];
                    }
                float pa = 0.0f, pc = 0.0f;
                for (; i < e; i++) {
                    float gwk = gr[i] * w[i];
                    pa += gwk;
                    pc += gwk * hr[i];
                }
                for (int k = 0; k < LG_LANES; k++) {
                    pa += aa[k];
                    pc += cc[k];
                }
                sa += pa;
                sc += pc;
            }
            a = (float)sa * inv_n;
            c = (float)sc * inv_n;
            for (Py_ssize_t j = 0; j < n; j++) xr[j] = rs * (gr[j] * w[j] - a - hr[j] * c);
        } else {
            a = (float)lg_sum(gr, n) * inv_n;
            c = (float)lg_dot(gr, hr, n) * inv_n;
            for (Py_ssize_t j = 0; j < n; j++) xr[j] = rs * (gr[j] - a - hr[j] * c);
        }
    }
}

/* softmax (log_ = 0) or log-softmax (log_ = 1) of rows of n: exp(x - max) times 1 / sum, as
   PyTorch's kernel (a multiply per entry); (x - max) - log(sum) for the log form. */
LG_CLONES static void k_softmax(const float *x, float *out, Py_ssize_t rows, Py_ssize_t n, int log_) {
    for (Py_ssize_t r = 0; r < rows; r++) {
        const float *xr = x + r * n;
        float *yr = out + r * n;
        float m = lg_max(xr, n);
        if (m == -INFINITY) m = 0.0f; /* a row of -inf: exp(-inf - -inf) would be NaN; PyTorch gives NaN too
                                         (0 / 0), which the sum of zeros below reproduces */
        /* exp(x - max) into the output (the plain form) while its sums run in lanes */
        double s = 0.0;
        for (Py_ssize_t i = 0; i < n; i += LG_SPAN) {
            Py_ssize_t e = i + LG_SPAN < n ? i + LG_SPAN : n, j = i;
            float acc[LG_LANES] = {0};
            for (; j + LG_LANES <= e; j += LG_LANES)
                for (int k = 0; k < LG_LANES; k++) {
                    float ev = lg_expf(xr[j + k] - m);
                    yr[j + k] = ev;
                    acc[k] += ev;
                }
            float part = 0.0f;
            for (; j < e; j++) {
                yr[j] = lg_expf(xr[j] - m);
                part += yr[j];
            }
            for (int k = 0; k < LG_LANES; k++) part += acc[k];
            s += part;
        }
        if (log_) {
            float logs = logf((float)s); /* (x - max) - log(sum): m + log(sum) would round once more */
            for (Py_ssize_t j = 0; j < n; j++) yr[j] = (xr[j] - m) - logs;
        } else {
            float inv = 1.0f / (float)s;
            for (Py_ssize_t j = 0; j < n; j++) yr[j] *= inv;
        }
    }
}

/* softmax: gx = y (g - sum(g y)); log-softmax: gx = g - exp(y) sum(g). gx may be g's memory. */
LG_CLONES static void k_softmax_backward(const float *g, const float *y, float *gx, Py_ssize_t rows, Py_ssize_t n,
                                         int log_) {
    for (Py_ssize_t r = 0; r < rows; r++) {
        const float *gr = g + r * n, *yr = y + r * n;
        float *xr = gx + r * n;
        if (log_) {
            float s = (float)lg_sum(gr, n);
            for (Py_ssize_t j = 0; j < n; j++) xr[j] = gr[j] - lg_expf(yr[j]) * s;
        } else {
            float s = (float)lg_dot(gr, yr, n);
            for (Py_ssize_t j = 0; j < n; j++) xr[j] = yr[j] * (gr[j] - s);
        }
    }
}

/* PyTorch's relu is clamp_min(x, 0): x < 0 gives 0, so -0.0 and NaN pass through */
LG_CLONES static void k_relu(const float *x, float *out, Py_ssize_t n) {
    for (Py_ssize_t i = 0; i < n; i++) out[i] = x[i] < 0.0f ? 0.0f : x[i];
}

/* PyTorch's threshold_backward: 0 where out <= 0, else g (a NaN output passes g) */
LG_CLONES static void k_relu_backward(const float *g, const float *out, float *gx, Py_ssize_t n) {
    for (Py_ssize_t i = 0; i < n; i++) gx[i] = out[i] <= 0.0f ? 0.0f : g[i];
}

/* The Adam update in the NumPy rule's order of float32 operations (optim/adam.py and
   make_adam_moments), one element at a time: decoupled decay p *= shrink; the gradient used,
   -g (maximize) and + wd p (coupled decay); exp_avg by lerp (the formula by lerp_mode); exp_avg_sq;
   max_exp_avg_sq (amsgrad); then p += (m * neg_step) / (sqrt(v) + eps). */
typedef struct {
    float shrink, wd, lerp_k, beta2, one_minus_beta2, neg_step, eps;
    int decoupled, coupled, maximize, lerp_mode;
} lg_adam_args;

/* The flags are loop-invariant selects (computing the unused value is harmless), so the loop has
   no branches and vectorises; max_exp_avg_sq's loads and stores get a loop of their own. */
LG_INLINE void lg_adam_body(float *p, const float *g, float *m, float *v, float *vmax, Py_ssize_t n,
                            lg_adam_args a, const int ams) {
    for (Py_ssize_t i = 0; i < n; i++) {
        float pi = p[i], gi = g[i];
        float ps = pi * a.shrink;
        pi = a.decoupled ? ps : pi;
        float t = pi * a.wd;
        float gc = a.maximize ? t - gi : gi + t, gn = a.maximize ? -gi : gi;
        gi = a.coupled ? gc : gn;
        float mi = m[i], u = gi - mi;
        u = u * a.lerp_k;
        mi = a.lerp_mode ? gi - u : mi + u;
        m[i] = mi;
        float vi = v[i] * a.beta2;
        u = gi * a.one_minus_beta2;
        u = u * gi;
        vi = vi + u;
        v[i] = vi;
        if (ams) {
            float w = vmax[i];
            vi = (w != w || vi != vi) ? NAN : (w > vi ? w : vi); /* NumPy's maximum propagates NaN */
            vmax[i] = vi;
        }
        float denom = sqrtf(vi) + a.eps;
        float upd = mi * a.neg_step;
        p[i] = pi + upd / denom;
    }
}

LG_CLONES static void k_adam(float *p, const float *g, float *m, float *v, float *vmax, Py_ssize_t n,
                             lg_adam_args a) {
    if (vmax)
        lg_adam_body(p, g, m, v, vmax, n, a, 1);
    else
        lg_adam_body(p, g, m, v, NULL, n, a, 0);
}

/* 2x2 max pooling with stride 2 over planes of h x w (the last row and column of odd sizes are
   not read): each window's maximum and its winning tap (0..3, row-major) by PyTorch's scan,
   `v > max || isnan(v)`: ties go to the first maximum, a NaN always takes the window (so the
   last NaN gets the gradient). */
typedef float lg_v8f __attribute__((vector_size(32)));
typedef int32_t lg_v8i __attribute__((vector_size(32)));

/* one scan step on 8 windows: where v wins, it becomes the maximum and tap t the winner */
LG_INLINE void lg_pool_step(lg_v8f *m, lg_v8i *k, lg_v8f v, int32_t t) {
    lg_v8i c = (v > *m) | (v != v);
    *m = (lg_v8f)((c & (lg_v8i)v) | (~c & (lg_v8i)*m));
    lg_v8i tv = {t, t, t, t, t, t, t, t};
    *k = (c & tv) | (~c & *k);
}

/* windows j0 .. j0 + 7 of the row pair r0, r1: GCC vector types (the compiler left the plain loop's
   short rows, 14 windows at 28 x 28, to a scalar remainder with branches: 7x slower) */
LG_INLINE void lg_pool8(const float *r0, const float *r1, float *o, uint8_t *t, Py_ssize_t j0) {
    lg_v8f a0, a1, b0, b1;
    memcpy(&a0, r0 + 2 * j0, 32);
    memcpy(&a1, r0 + 2 * j0 + 8, 32);
    memcpy(&b0, r1 + 2 * j0, 32);
    memcpy(&b1, r1 + 2 * j0 + 8, 32);
    lg_v8i even = {0, 2, 4, 6, 8, 10, 12, 14}, odd = {1, 3, 5, 7, 9, 11, 13, 15};
    lg_v8f m = __builtin_shuffle(a0, a1, even);
    lg_v8i k = {0};
    lg_pool_step(&m, &k, __builtin_shuffle(a0, a1, odd), 1);
    lg_pool_step(&m, &k, __builtin_shuffle(b0, b1, even), 2);
    lg_pool_step(&m, &k, __builtin_shuffle(b0, b1, odd), 3);
    memcpy(o + j0, &m, 32);
    for (int q = 0; q < 8; q++) t[j0 + q] = (uint8_t)k[q];
}

LG_CLONES static void k_max_pool2x2(const float *x, float *out, uint8_t *arg, Py_ssize_t planes, Py_ssize_t h,
                                    Py_ssize_t w) {
    Py_ssize_t ho = h / 2, wo = w / 2;
    for (Py_ssize_t p = 0; p < planes; p++)
        for (Py_ssize_t i = 0; i < ho; i++) {
            const float *r0 = x + (p * h + 2 * i) * w, *r1 = r0 + w;
            float *o = out + (p * ho + i) * wo;
            uint8_t *t = arg + (p * ho + i) * wo;
            if (wo >= 8) {  /* blocks of 8, the last one overlapping the one before (recomputed alike) */
                for (Py_ssize_t j0 = 0; j0 < wo; j0 += 8) lg_pool8(r0, r1, o, t, j0 + 8 <= wo ? j0 : wo - 8);
                continue;
            }
            for (Py_ssize_t j = 0; j < wo; j++) {
                float m = r0[2 * j], v = r0[2 * j + 1];
                int32_t k = 0, c = (v > m) | (v != v);
                k = c ? 1 : k;
                m = c ? v : m;
                v = r1[2 * j];
                c = (v > m) | (v != v);
                k = c ? 2 : k;
                m = c ? v : m;
                v = r1[2 * j + 1];
                c = (v > m) | (v != v);
                k = c ? 3 : k;
                m = c ? v : m;
                o[j] = m;
                t[j] = (uint8_t)k;
            }
        }
}

/* the gradient of windows j0 .. j0 + 7 into the row pair r0, r1 */
LG_INLINE void lg_unpool8(const float *g, const uint8_t *t, float *r0, float *r1, Py_ssize_t j0) {
    lg_v8f gv;
    memcpy(&gv, g + j0, 32);
    lg_v8i k, zero = {0}, one = zero + 1, two = zero + 2, three = zero + 3;
    for (int q = 0; q < 8; q++) k[q] = t[j0 + q];
    lg_v8i gi = (lg_v8i)gv;
    lg_v8f e0 = (lg_v8f)((k == zero) & gi), e1 = (lg_v8f)((k == one) & gi);
    lg_v8f e2 = (lg_v8f)((k == two) & gi), e3 = (lg_v8f)((k == three) & gi);
    lg_v8i lo = {0, 8, 1, 9, 2, 10, 3, 11}, hi = {4, 12, 5, 13, 6, 14, 7, 15};
    lg_v8f v;
    v = __builtin_shuffle(e0, e1, lo);
    memcpy(r0 + 2 * j0, &v, 32);
    v = __builtin_shuffle(e0, e1, hi);
    memcpy(r0 + 2 * j0 + 8, &v, 32);
    v = __builtin_shuffle(e2, e3, lo);
    memcpy(r1 + 2 * j0, &v, 32);
    v = __builtin_shuffle(e2, e3, hi);
    memcpy(r1 + 2 * j0 + 8, &v, 32);
}

/* Its gradient: each window's g to its winning tap, zeros elsewhere (the unread edge too). */
LG_CLONES static void k_max_pool2x2_backward(const float *g, const uint8_t *arg, float *gx, Py_ssize_t planes,
                                             Py_ssize_t h, Py_ssize_t w) {
    Py_ssize_t ho = h / 2, wo = w / 2;
    for (Py_ssize_t p = 0; p < planes; p++) {
        float *plane = gx + p * h * w;
        for (Py_ssize_t i = 0; i < ho; i++) {
            const float *gr = g + (p * ho + i) * wo;
            const uint8_t *t = arg + (p * ho + i) * wo;
            float *r0 = plane + 2 * i * w, *r1 = r0 + w;
            if (wo >= 8)  /* as the forward: blocks of 8 windows, the last one overlapping */
                for (Py_ssize_t j0 = 0; j0 < wo; j0 += 8) lg_unpool8(gr, t, r0, r1, j0 + 8 <= wo ? j0 : wo - 8);
            else
                for (Py_ssize_t j = 0; j < wo; j++) {
                    float gv = gr[j];
                    uint8_t k = t[j];
                    r0[2 * j] = k == 0 ? gv : 0.0f;
                    r0[2 * j + 1] = k == 1 ? gv : 0.0f;
                    r1[2 * j] = k == 2 ? gv : 0.0f;
                    r1[2 * j + 1] = k == 3 ? gv : 0.0f;
                }
            if (w & 1) {
                r0[w - 1] = 0.0f;
                r1[w - 1] = 0.0f;
            }
        }
        if (h & 1) memset(plane + (h - 1) * w, 0, (size_t)w * sizeof(float));
    }
}

/* ---- LSTM and GRU cells: one time step's gate math (the GEMMs stay in BLAS) -------------------- */

/* tanh with about PyTorch's float32 accuracy (Cephes' tanhf: a few ulp): the odd polynomial
   x + x^3 P(x^2) below 0.625, where 1 - 2 / (e^2x + 1) would cancel, and that form above it (e^2x
   overflowing to inf gives +-1). Both are computed and one is selected, so the loop vectorises;
   NaN stays NaN and -0.0 stays -0.0. */
LG_INLINE float lg_tanhf(float x) {
    float a = fabsf(x), s = x * x;
    float big = 1.0f - 2.0f / (lg_expf(a + a) + 1.0f);
    float p = -5.70498872745e-3f;
    p = p * s + 2.06390887954e-2f;
    p = p * s - 5.37397155531e-2f;
    p = p * s + 1.33314422036e-1f;
    p = p * s - 3.33332819422e-1f;
    p = p * s * x + x;
    return copysignf(a >= 0.625f ? big : p, x); /* (p alone loses -0.0's sign: -0 * ... + -0 is +0) */
}

/* the logistic sigmoid 1 / (1 + e^-x), as PyTorch's (the lower tail keeps its relative accuracy;
   e^-x overflowing to inf gives 0) */
LG_INLINE float lg_sigmoidf(float x) { return 1.0f / (1.0f + lg_expf(-x)); }

/* z += zh (+ bias): a step's recurrent product and bias added to its input projection */
LG_INLINE void lg_lstm_pre(float *restrict z, const float *restrict zh, const float *restrict bias, Py_ssize_t n) {
    if (bias)
        for (Py_ssize_t j = 0; j < n; j++) z[j] = (z[j] + zh[j]) + bias[j];
    else
        for (Py_ssize_t j = 0; j < n; j++) z[j] = z[j] + zh[j];
}

/* One LSTM step over `rows` batch rows, PyTorch's gate order (i, f, g, o). z (rows, 4 hid) holds
   the pre-activations (the input projection, to which zh (rows, 4 hid) and bias (4 hid) are added
   first where given) with the i, f, o columns halved (the NumPy path's sigmoid(x) = (1 + tanh(x/2))
   / 2 shares the weights; doubling is exact) and is overwritten by the activated gates; then
   c = f c_prev + i g, tanh_c = tanh(c), h = o tanh_c, and h is also written to the first hid
   entries of each row of h_next (row stride ld; NULL: not wanted), the next step's GEMM input.
   A batch row at a time, its pointers restrict (the gates are four separate column blocks): so the
   loop vectorises without run-time overlap checks, which GCC gives up on for this many pointers. */
LG_INLINE void lg_lstm_row(float *restrict zi, float *restrict zf, float *restrict zg, float *restrict zo,
                           const float *restrict cp, float *restrict cr, float *restrict tr, float *restrict hr,
                           Py_ssize_t hid) {
    for (Py_ssize_t j = 0; j < hid; j++) {
        float i = lg_sigmoidf(2.0f * zi[j]), f = lg_sigmoidf(2.0f * zf[j]);
        float g = lg_tanhf(zg[j]), o = lg_sigmoidf(2.0f * zo[j]);
        zi[j] = i;
        zf[j] = f;
        zg[j] = g;
        zo[j] = o;
        float cv = f * cp[j] + i * g, th = lg_tanhf(cv);
        cr[j] = cv;
        tr[j] = th;
        hr[j] = o * th;
    }
}

LG_CLONES static void k_lstm_cell(float *z, const float *zh, const float *bias, const float *c_prev, float *c,
                                  float *tanh_c, float *h, float *h_next, Py_ssize_t ld, Py_ssize_t rows,
                                  Py_ssize_t hid) {
    for (Py_ssize_t r = 0; r < rows; r++) {
        float *zr = z + r * 4 * hid, *hr = h + r * hid;
        if (zh) lg_lstm_pre(zr, zh + r * 4 * hid, bias, 4 * hid);
        lg_lstm_row(zr, zr + hid, zr + 2 * hid, zr + 3 * hid, c_prev + r * hid, c + r * hid, tanh_c + r * hid, hr,
                    hid);
        if (h_next) memcpy(h_next + r * ld, hr, (size_t)hid * sizeof(float));
    }
}

/* Its backward for one step: dh (the gradient reaching h from the later steps) plus gh (the loss's
   own, this step's output gradient) and dc (reaching c) give the pre-activation gradients dz (rows,
   4 hid) from the activated gates, c_prev and tanh_c; dc is overwritten by the gradient reaching
   c_prev (the caller's GEMM dz W_hh then gives h_prev's). The NumPy path's order of operations. */
LG_INLINE void lg_lstm_row_backward(const float *restrict gi, const float *restrict gf, const float *restrict gg,
                                    const float *restrict go, const float *restrict ghr, const float *restrict dhr,
                                    const float *restrict cp, const float *restrict tr, float *restrict dcr,
                                    float *restrict di, float *restrict df, float *restrict dg, float *restrict dO,
                                    Py_ssize_t hid) {
    for (Py_ssize_t j = 0; j < hid; j++) {
        float i = gi[j], f = gf[j], g = gg[j], o = go[j], th = tr[j];
        float d = dhr[j] + ghr[j];
        float dcv = dcr[j] + d * ((1.0f - th * th) * o);
        di[j] = ((i - i * i) * g) * dcv;
        df[j] = ((f - f * f) * cp[j]) * dcv;
        dg[j] = ((1.0f - g * g) * i) * dcv;
        dO[j] = ((o - o * o) * th) * d;
        dcr[j] = dcv * f;
    }
}

LG_CLONES static void k_lstm_cell_backward(const float *gh, const float *dh, float *dc, const float *gates,
                                           const float *c_prev, const float *tanh_c, float *dz, Py_ssize_t rows,
                                           Py_ssize_t hid) {
    for (Py_ssize_t r = 0; r < rows; r++) {
        const float *ga = gates + r * 4 * hid;
        float *d = dz + r * 4 * hid;
        Py_ssize_t o = r * hid;
        lg_lstm_row_backward(ga, ga + hid, ga + 2 * hid, ga + 3 * hid, gh + o, dh + o, c_prev + o, tanh_c + o, dc + o,
                             d, d + hid, d + 2 * hid, d + 3 * hid, hid);
    }
}

/* One GRU step, PyTorch's gate order (r, z, n; z is called u here): xp (rows, 3 hid) is the step's
   input projection with b_ih, hp (rows, 3 hid) the product h_prev W_hh^T, bias b_hh (3 hid, or NULL);
   r = sigmoid(xp_r + (hp_r + b_r)), u likewise, hn = hp_n + b_n (saved: n's backward needs it),
   n = tanh(r hn + xp_n), h = (h_prev - n) u + n: the NumPy path's order of operations. gates
   (rows, 3 hid) receives r, u, n. has_b is a constant where this is inlined: a loop each, both
   vectorised (a test of b inside the loop kept it scalar). */
LG_INLINE void lg_gru_row(const float *restrict xp, const float *restrict hp, const float *restrict b,
                          const float *restrict hprev, float *restrict gates, float *restrict hn, float *restrict h,
                          Py_ssize_t hid, const int has_b) {
    for (Py_ssize_t j = 0; j < hid; j++) {
        float hr = hp[j], hu = hp[hid + j], hnv = hp[2 * hid + j];
        if (has_b) {
            hr = hr + b[j];
            hu = hu + b[hid + j];
            hnv = hnv + b[2 * hid + j];
        }
        float r = lg_sigmoidf(xp[j] + hr), u = lg_sigmoidf(xp[hid + j] + hu);
        float n = lg_tanhf(r * hnv + xp[2 * hid + j]);
        gates[j] = r;
        gates[hid + j] = u;
        gates[2 * hid + j] = n;
        hn[j] = hnv;
        h[j] = (hprev[j] - n) * u + n;
    }
}

LG_CLONES static void k_gru_cell(const float *xp, const float *hp, const float *b, const float *hprev, float *gates,
                                 float *hn, float *h, Py_ssize_t rows, Py_ssize_t hid) {
    for (Py_ssize_t r = 0; r < rows; r++) {
        Py_ssize_t o = r * hid, o3 = 3 * o;
        if (b)
            lg_gru_row(xp + o3, hp + o3, b, hprev + o, gates + o3, hn + o, h + o, hid, 1);
        else
            lg_gru_row(xp + o3, hp + o3, b, hprev + o, gates + o3, hn + o, h + o, hid, 0);
    }
}

/* Its backward for one step: the gradient reaching h is (carry + dm) + gh (carry: the part through
   u from the later step, dm: the later step's dhp W_hh, gh: this step's output gradient); gives dhp
   (rows, 3 hid), the gradient of hp + b_hh, and dx (rows, 3 hid), that of the input projection;
   carry becomes this gradient times u (the caller adds dhp W_hh for h_prev's). */
LG_INLINE void lg_gru_row_backward(const float *restrict gh, float *restrict carry, const float *restrict dm,
                                   const float *restrict gates, const float *restrict hn,
                                   const float *restrict hprev, float *restrict dx, float *restrict dhp,
                                   Py_ssize_t hid) {
    for (Py_ssize_t j = 0; j < hid; j++) {
        float r = gates[j], u = gates[hid + j], n = gates[2 * hid + j];
        float d = (carry[j] + dm[j]) + gh[j];
        float dn = d * ((1.0f - u) * (1.0f - n * n));
        float dr = dn * (hn[j] * (r * (1.0f - r)));
        float du = d * ((hprev[j] - n) * (u * (1.0f - u)));
        dx[j] = dr;
        dx[hid + j] = du;
        dx[2 * hid + j] = dn;
        dhp[j] = dr;
        dhp[hid + j] = du;
        dhp[2 * hid + j] = dn * r;
        carry[j] = d * u;
    }
}

LG_CLONES static void k_gru_cell_backward(const float *gh, float *carry, const float *dm, const float *gates,
                                          const float *hn, const float *hprev, float *dx, float *dhp,
                                          Py_ssize_t rows, Py_ssize_t hid) {
    for (Py_ssize_t r = 0; r < rows; r++) {
        Py_ssize_t o = r * hid, o3 = 3 * o;
        lg_gru_row_backward(gh + o, carry + o, dm + o, gates + o3, hn + o, hprev + o, dx + o3, dhp + o3, hid);
    }
}

/* ---- the kernels as pool tasks (pool.h): a chunk of units with its pointers offset --------------- */

static void t_gelu(const lg_task *t, Py_ssize_t lo, Py_ssize_t hi) {
    float *deriv = (float *)t->p[2];
    if (t->i[0])
        k_gelu_tanh((const float *)t->p[0] + lo, (float *)t->p[1] + lo, deriv ? deriv + lo : NULL, hi - lo);
    else
        k_gelu((const float *)t->p[0] + lo, (float *)t->p[1] + lo, deriv ? deriv + lo : NULL, hi - lo);
}

static void t_relu(const lg_task *t, Py_ssize_t lo, Py_ssize_t hi) {
    k_relu((const float *)t->p[0] + lo, (float *)t->p[1] + lo, hi - lo);
}

static void t_relu_backward(const lg_task *t, Py_ssize_t lo, Py_ssize_t hi) {
    k_relu_backward((const float *)t->p[0] + lo, (const float *)t->p[1] + lo, (float *)t->p[2] + lo, hi - lo);
}

/* rows of n (i[0] = n) */
static void t_layer_norm(const lg_task *t, Py_ssize_t lo, Py_ssize_t hi) {
    Py_ssize_t n = t->i[0];
    k_layer_norm((const float *)t->p[0] + lo * n, (const float *)t->p[1], (const float *)t->p[2],
                 (float *)t->p[3] + lo * n, (float *)t->p[4] + lo * n, (float *)t->p[5] + lo, hi - lo, n, t->f[0]);
}

/* Blocks of LG_LN_BLOCK rows, each with its own partial weight gradients (t->p[5], t->p[6]: one row
   of n per block), added in block order afterwards: the blocks never depend on the thread count, so
   neither do the sums. */
#define LG_LN_BLOCK 32

static void t_layer_norm_backward(const lg_task *t, Py_ssize_t lo, Py_ssize_t hi) {
    Py_ssize_t n = t->i[0], rows = t->i[1];
    float *gw = (float *)t->p[5], *gb = (float *)t->p[6], *gx = (float *)t->p[4];
    for (Py_ssize_t u = lo; u < hi; u++) {
        Py_ssize_t r0 = u * LG_LN_BLOCK, r1 = r0 + LG_LN_BLOCK < rows ? r0 + LG_LN_BLOCK : rows;
        k_layer_norm_backward((const float *)t->p[0] + r0 * n, (const float *)t->p[1] + r0 * n,
                              (const float *)t->p[2] + r0, (const float *)t->p[3], gx ? gx + r0 * n : NULL,
                              gw ? gw + u * n : NULL, gb ? gb + u * n : NULL, r1 - r0, n);
    }
}

/* out[j] = sum over blocks of part[block][j], in block order, in double (the column sums cancel:
   a float32 running sum over thousands of rows loses digits PyTorch's keeps) */
static void lg_sum_blocks(const float *part, float *out, Py_ssize_t blocks, Py_ssize_t n) {
    for (Py_ssize_t j0 = 0; j0 < n; j0 += 64) {
        double acc[64];
        Py_ssize_t m = n - j0 < 64 ? n - j0 : 64;
        for (Py_ssize_t j = 0; j < m; j++) acc[j] = 0.0;
        for (Py_ssize_t u = 0; u < blocks; u++)
            for (Py_ssize_t j = 0; j < m; j++) acc[j] += (double)part[u * n + j0 + j];
        for (Py_ssize_t j = 0; j < m; j++) out[j0 + j] = (float)acc[j];
    }
}

static void t_softmax(const lg_task *t, Py_ssize_t lo, Py_ssize_t hi) {
    Py_ssize_t n = t->i[0];
    k_softmax((const float *)t->p[0] + lo * n, (float *)t->p[1] + lo * n, hi - lo, n, (int)t->i[1]);
}

static void t_softmax_backward(const lg_task *t, Py_ssize_t lo, Py_ssize_t hi) {
    Py_ssize_t n = t->i[0];
    k_softmax_backward((const float *)t->p[0] + lo * n, (const float *)t->p[1] + lo * n, (float *)t->p[2] + lo * n,
                       hi - lo, n, (int)t->i[1]);
}

/* planes of h x w (i[0] = h, i[1] = w); outputs and taps are planes of (h / 2) x (w / 2) */
static void t_max_pool2x2(const lg_task *t, Py_ssize_t lo, Py_ssize_t hi) {
    Py_ssize_t h = t->i[0], w = t->i[1], in = h * w, o = (h / 2) * (w / 2);
    k_max_pool2x2((const float *)t->p[0] + lo * in, (float *)t->p[1] + lo * o, (uint8_t *)t->p[2] + lo * o, hi - lo,
                  h, w);
}

static void t_max_pool2x2_backward(const lg_task *t, Py_ssize_t lo, Py_ssize_t hi) {
    Py_ssize_t h = t->i[0], w = t->i[1], in = h * w, o = (h / 2) * (w / 2);
    k_max_pool2x2_backward((const float *)t->p[0] + lo * o, (const uint8_t *)t->p[1] + lo * o,
                           (float *)t->p[2] + lo * in, hi - lo, h, w);
}

static void t_adam(const lg_task *t, Py_ssize_t lo, Py_ssize_t hi) {
    float *vmax = (float *)t->p[4];
    k_adam((float *)t->p[0] + lo, (const float *)t->p[1] + lo, (float *)t->p[2] + lo, (float *)t->p[3] + lo,
           vmax ? vmax + lo : NULL, hi - lo, *(const lg_adam_args *)t->p[5]);
}

/* ---- the binding -------------------------------------------------------------------------------- */

/* The float32 (or `itemsize`-byte) data of o, or NULL for None when optional (common.h's lg_buffer). */
static void *lg_get_items(lg_bufs *b, PyObject *o, int writable, int optional, Py_ssize_t count, Py_ssize_t itemsize,
                          const char *name, int *err) {
    return lg_buffer(b, o, writable, optional, count, itemsize, name, NULL, err);
}

static float *lg_get(lg_bufs *b, PyObject *o, int writable, int optional, Py_ssize_t count, const char *name,
                     int *err) {
    return (float *)lg_buffer(b, o, writable, optional, count, 4, name, NULL, err);
}

/* gelu(x, out, deriv_or_None, tanh) */
static PyObject *py_gelu(PyObject *self, PyObject *const *args, Py_ssize_t nargs) {
    (void)self;
    if (lg_nargs(nargs, 4, "gelu")) return NULL;
    int tanh_ = PyObject_IsTrue(args[3]), err = tanh_ < 0;
    Py_ssize_t n = err ? 0 : lg_count(args[0], 4);
    if (n < 0) return NULL;
    lg_bufs b = {.k = 0};
    const float *x = lg_get(&b, args[0], 0, 0, n, "x", &err);
    float *out = lg_get(&b, args[1], 1, 0, n, "out", &err);
    float *deriv = lg_get(&b, args[2], 1, 1, n, "deriv", &err);
    if (!err) {
        lg_task t = {.fn = t_gelu, .p = {x, out, deriv}, .i = {tanh_}};
        LG_RUN(n, lg_parallel(&t, n, 4, 4096));
    }
    lg_release(&b);
    if (err) return NULL;
    Py_RETURN_NONE;
}

/* layer_norm(x, w_or_None, b_or_None, out, xhat, rstd, n, eps) */
static PyObject *py_layer_norm(PyObject *self, PyObject *const *args, Py_ssize_t nargs) {
    (void)self;
    if (lg_nargs(nargs, 8, "layer_norm")) return NULL;
    Py_ssize_t n = PyLong_AsSsize_t(args[6]);
    double eps = PyFloat_AsDouble(args[7]);
    if (PyErr_Occurred()) return NULL;
    Py_ssize_t size = lg_count(args[0], 4);
    if (size < 0) return NULL;
    if (n <= 0 || size % n)
        return PyErr_Format(PyExc_ValueError, "layer_norm: %zd entries are not rows of %zd", size, n);
    Py_ssize_t rows = size / n;
    int err = 0;
    lg_bufs b = {.k = 0};
    const float *x = lg_get(&b, args[0], 0, 0, size, "x", &err);
    const float *w = lg_get(&b, args[1], 0, 1, n, "weight", &err);
    const float *bias = lg_get(&b, args[2], 0, 1, n, "bias", &err);
    float *out = lg_get(&b, args[3], 1, 0, size, "out", &err);
    float *xhat = lg_get(&b, args[4], 1, 0, size, "xhat", &err);
    float *rstd = lg_get(&b, args[5], 1, 0, rows, "rstd", &err);
    lg_task t = {.fn = t_layer_norm, .p = {x, w, bias, out, xhat, rstd}, .i = {n}, .f = {(float)eps}};
    if (!err) LG_RUN(size, lg_parallel(&t, rows, 3 * n, 1));
    lg_release(&b);
    if (err) return NULL;
    Py_RETURN_NONE;
}

/* layer_norm_backward(g, xhat, rstd, w_or_None, gx_or_None, gw_or_None, gb_or_None, n) */
static PyObject *py_layer_norm_backward(PyObject *self, PyObject *const *args, Py_ssize_t nargs) {
    (void)self;
    if (lg_nargs(nargs, 8, "layer_norm_backward")) return NULL;
    Py_ssize_t n = PyLong_AsSsize_t(args[7]);
    if (PyErr_Occurred()) return NULL;
    Py_ssize_t size = lg_count(args[1], 4);
    if (size < 0) return NULL;
    if (n <= 0 || size % n)
        return PyErr_Format(PyExc_ValueError, "layer_norm_backward: %zd entries are not rows of %zd", size, n);
    Py_ssize_t rows = size / n;
    int err = 0;
    lg_bufs b = {.k = 0};
    const float *g = lg_get(&b, args[0], 0, 0, size, "g", &err);
    const float *xhat = lg_get(&b, args[1], 0, 0, size, "xhat", &err);
    const float *rstd = lg_get(&b, args[2], 0, 0, rows, "rstd", &err);
    const float *w = lg_get(&b, args[3], 0, 1, n, "weight", &err);
    float *gx = lg_get(&b, args[4], 1, 1, size, "gx", &err);
    float *gw = lg_get(&b, args[5], 1, 1, n, "gw", &err);
    float *gb = lg_get(&b, args[6], 1, 1, n, "gb", &err);
    Py_ssize_t blocks = (rows + LG_LN_BLOCK - 1) / LG_LN_BLOCK;
    float *part = NULL;
    if (!err && (gw || gb) && blocks > 1) {
        part = PyMem_RawMalloc((size_t)(2 * blocks * n) * sizeof(float));
        if (!part) {
            PyErr_NoMemory();
            err = 1;
        }
    }
    if (!err) {
        float *pw = gw && part ? part : gw, *pb = gb && part ? part + blocks * n : gb;
        lg_task t = {.fn = t_layer_norm_backward, .p = {g, xhat, rstd, w, gx, pw, pb}, .i = {n, rows}};
        LG_RUN(size, lg_parallel(&t, blocks, 4 * n * LG_LN_BLOCK, 1));
        if (part && gw) lg_sum_blocks(pw, gw, blocks, n);
        if (part && gb) lg_sum_blocks(pb, gb, blocks, n);
    }
    PyMem_RawFree(part);
    lg_release(&b);
    if (err) return NULL;
    Py_RETURN_NONE;
}

/* softmax(x, out, n, log) and softmax_backward(g, y, gx, n, log) */
static PyObject *lg_rows_call(PyObject *const *args, Py_ssize_t nargs, int backward) {
    const char *name = backward ? "softmax_backward" : "softmax";
    if (lg_nargs(nargs, backward ? 5 : 4, name)) return NULL;
    Py_ssize_t n = PyLong_AsSsize_t(args[backward ? 3 : 2]);
    int log_ = PyObject_IsTrue(args[backward ? 4 : 3]);
    if (PyErr_Occurred()) return NULL;
    Py_ssize_t size = lg_count(args[0], 4);
    if (size < 0) return NULL;
    if (n <= 0 || size % n) return PyErr_Format(PyExc_ValueError, "%s: %zd entries are not rows of %zd", name, size, n);
    int err = 0;
    lg_bufs b = {.k = 0};
    if (backward) {
        const float *g = lg_get(&b, args[0], 0, 0, size, "g", &err);
        const float *y = lg_get(&b, args[1], 0, 0, size, "y", &err);
        float *gx = lg_get(&b, args[2], 1, 0, size, "gx", &err);
        lg_task t = {.fn = t_softmax_backward, .p = {g, y, gx}, .i = {n, log_}};
        if (!err) LG_RUN(size, lg_parallel(&t, size / n, 2 * n, 1));
    } else {
        const float *x = lg_get(&b, args[0], 0, 0, size, "x", &err);
        float *out = lg_get(&b, args[1], 1, 0, size, "out", &err);
        lg_task t = {.fn = t_softmax, .p = {x, out}, .i = {n, log_}};
        if (!err) LG_RUN(size, lg_parallel(&t, size / n, 3 * n, 1));
    }
    lg_release(&b);
    if (err) return NULL;
    Py_RETURN_NONE;
}

static PyObject *py_softmax(PyObject *self, PyObject *const *args, Py_ssize_t nargs) {
    (void)self;
    return lg_rows_call(args, nargs, 0);
}

static PyObject *py_softmax_backward(PyObject *self, PyObject *const *args, Py_ssize_t nargs) {
    (void)self;
    return lg_rows_call(args, nargs, 1);
}

/* relu(x, out) and relu_backward(g, out, gx) */
static PyObject *py_relu(PyObject *self, PyObject *const *args, Py_ssize_t nargs) {
    (void)self;
    if (lg_nargs(nargs, 2, "relu")) return NULL;
    Py_ssize_t n = lg_count(args[0], 4);
    if (n < 0) return NULL;
    int err = 0;
    lg_bufs b = {.k = 0};
    const float *x = lg_get(&b, args[0], 0, 0, n, "x", &err);
    float *out = lg_get(&b, args[1], 1, 0, n, "out", &err);
    lg_task t = {.fn = t_relu, .p = {x, out}};
    if (!err) LG_RUN(n, lg_parallel(&t, n, 1, 16384));
    lg_release(&b);
    if (err) return NULL;
    Py_RETURN_NONE;
}

static PyObject *py_relu_backward(PyObject *self, PyObject *const *args, Py_ssize_t nargs) {
    (void)self;
    if (lg_nargs(nargs, 3, "relu_backward")) return NULL;
    Py_ssize_t n = lg_count(args[0], 4);
    if (n < 0) return NULL;
    int err = 0;
    lg_bufs b = {.k = 0};
    const float *g = lg_get(&b, args[0], 0, 0, n, "g", &err);
    const float *out = lg_get(&b, args[1], 0, 0, n, "out", &err);
    float *gx = lg_get(&b, args[2], 1, 0, n, "gx", &err);
    lg_task t = {.fn = t_relu_backward, .p = {g, out, gx}};
    if (!err) LG_RUN(n, lg_parallel(&t, n, 1, 16384));
    lg_release(&b);
    if (err) return NULL;
    Py_RETURN_NONE;
}

/* adam(p, g, m, v, vmax_or_None, shrink_or_None, wd, maximize, lerp_mode, lerp_k, beta2,
        one_minus_beta2, neg_step, eps): the float arguments are the NumPy rule's float32 constants */
static PyObject *py_adam(PyObject *self, PyObject *const *args, Py_ssize_t nargs) {
    (void)self;
    if (lg_nargs(nargs, 14, "adam")) return NULL;
    lg_adam_args a;
    a.decoupled = args[5] != Py_None;
    a.shrink = a.decoupled ? (float)PyFloat_AsDouble(args[5]) : 1.0f;
    a.wd = (float)PyFloat_AsDouble(args[6]);
    a.coupled = a.wd != 0.0f;
    a.maximize = PyObject_IsTrue(args[7]);
    a.lerp_mode = PyObject_IsTrue(args[8]);
    a.lerp_k = (float)PyFloat_AsDouble(args[9]);
    a.beta2 = (float)PyFloat_AsDouble(args[10]);
    a.one_minus_beta2 = (float)PyFloat_AsDouble(args[11]);
    a.neg_step = (float)PyFloat_AsDouble(args[12]);
    a.eps = (float)PyFloat_AsDouble(args[13]);
    if (PyErr_Occurred()) return NULL;
    Py_ssize_t n = lg_count(args[0], 4);
    if (n < 0) return NULL;
    int err = 0;
    lg_bufs b = {.k = 0};
    float *p = lg_get(&b, args[0], 1, 0, n, "param", &err);
    const float *g = lg_get(&b, args[1], 0, 0, n, "grad", &err);
    float *m = lg_get(&b, args[2], 1, 0, n, "exp_avg", &err);
    float *v = lg_get(&b, args[3], 1, 0, n, "exp_avg_sq", &err);
    float *vmax = lg_get(&b, args[4], 1, 1, n, "max_exp_avg_sq", &err);
    /* One thread: the update streams five arrays through memory at the bandwidth one core already
       takes, and a second thread made the 535K-parameter optimizer step slower (0.23-0.26 ms against
       0.17-0.23, alternated in one process); t_adam stays ready for machines with more bandwidth. */
    lg_task t = {.fn = t_adam, .p = {p, g, m, v, vmax, &a}};
    if (!err) LG_RUN(n, t_adam(&t, 0, n));
    lg_release(&b);
    if (err) return NULL;
    Py_RETURN_NONE;
}

/* max_pool2x2(x, out, arg, h, w) and max_pool2x2_backward(g, arg, gx, h, w): x and gx are planes
   of h x w, out, arg and g of (h / 2) x (w / 2); arg is uint8 */
static PyObject *lg_pool_call(PyObject *const *args, Py_ssize_t nargs, int backward) {
    const char *name = backward ? "max_pool2x2_backward" : "max_pool2x2";
    if (lg_nargs(nargs, 5, name)) return NULL;
    Py_ssize_t h = PyLong_AsSsize_t(args[3]), w = PyLong_AsSsize_t(args[4]);
    if (PyErr_Occurred()) return NULL;
    Py_ssize_t size = lg_count(backward ? args[2] : args[0], 4);
    if (size < 0) return NULL;
    if (h < 2 || w < 2 || size % (h * w))
        return PyErr_Format(PyExc_ValueError, "%s: %zd entries are not planes of %zd x %zd", name, size, h, w);
    Py_ssize_t planes = size / (h * w), small = planes * (h / 2) * (w / 2);
    int err = 0;
    lg_bufs b = {.k = 0};
    if (backward) {
        const float *g = lg_get(&b, args[0], 0, 0, small, "g", &err);
        const uint8_t *arg = lg_get_items(&b, args[1], 0, 0, small, 1, "arg", &err);
        float *gx = lg_get(&b, args[2], 1, 0, size, "gx", &err);
        lg_task t = {.fn = t_max_pool2x2_backward, .p = {g, arg, gx}, .i = {h, w}};
        if (!err) LG_RUN(size, lg_parallel(&t, planes, h * w, 1));
    } else {
        const float *x = lg_get(&b, args[0], 0, 0, size, "x", &err);
        float *out = lg_get(&b, args[1], 1, 0, small, "out", &err);
        uint8_t *arg = lg_get_items(&b, args[2], 1, 0, small, 1, "arg", &err);
        lg_task t = {.fn = t_max_pool2x2, .p = {x, out, arg}, .i = {h, w}};
        if (!err) LG_RUN(size, lg_parallel(&t, planes, h * w, 1));
    }
    lg_release(&b);
    if (err) return NULL;
    Py_RETURN_NONE;
}

static PyObject *py_max_pool2x2(PyObject *self, PyObject *const *args, Py_ssize_t nargs) {
    (void)self;
    return lg_pool_call(args, nargs, 0);
}

static PyObject *py_max_pool2x2_backward(PyObject *self, PyObject *const *args, Py_ssize_t nargs) {
    (void)self;
    return lg_pool_call(args, nargs, 1);
}

/* lstm_cell(z, zh_or_None, bias_or_None, c_prev, c, tanh_c, h, h_next_or_None, hid, ld): z and zh
   are (rows, 4 hid), bias (4 hid) (only with zh), the others (rows, hid), h_next rows of ld >= hid */
static PyObject *py_lstm_cell(PyObject *self, PyObject *const *args, Py_ssize_t nargs) {
    (void)self;
    if (lg_nargs(nargs, 10, "lstm_cell")) return NULL;
    Py_ssize_t hid = PyLong_AsSsize_t(args[8]), ld = PyLong_AsSsize_t(args[9]);
    if (PyErr_Occurred()) return NULL;
    Py_ssize_t size = lg_count(args[3], 4);
    if (size < 0) return NULL;
    if (hid <= 0 || size % hid || ld < hid)
        return PyErr_Format(PyExc_ValueError, "lstm_cell: %zd entries are not rows of %zd (row stride %zd)", size,
                            hid, ld);
    Py_ssize_t rows = size / hid;
    int err = 0;
    lg_bufs b = {.k = 0};
    float *z = lg_get(&b, args[0], 1, 0, 4 * size, "z", &err);
    const float *zh = lg_get(&b, args[1], 0, 1, 4 * size, "zh", &err);
    const float *bias = lg_get(&b, args[2], 0, 1, 4 * hid, "bias", &err);
    const float *c_prev = lg_get(&b, args[3], 0, 0, size, "c_prev", &err);
    float *c = lg_get(&b, args[4], 1, 0, size, "c", &err);
    float *tanh_c = lg_get(&b, args[5], 1, 0, size, "tanh_c", &err);
    float *h = lg_get(&b, args[6], 1, 0, size, "h", &err);
    float *h_next = lg_get(&b, args[7], 1, 1, rows * ld, "h_next", &err);
    if (!err && bias && !zh) {
        PyErr_SetString(PyExc_ValueError, "lstm_cell: a bias needs zh");
        err = 1;
    }
    if (!err) LG_RUN(4 * size, k_lstm_cell(z, zh, bias, c_prev, c, tanh_c, h, h_next, ld, rows, hid));
    lg_release(&b);
    if (err) return NULL;
    Py_RETURN_NONE;
}

/* lstm_cell_backward(gh, dh, dc, gates, c_prev, tanh_c, dz, hid): gates and dz are (rows, 4 hid),
   the others (rows, hid) */
static PyObject *py_lstm_cell_backward(PyObject *self, PyObject *const *args, Py_ssize_t nargs) {
    (void)self;
    if (lg_nargs(nargs, 8, "lstm_cell_backward")) return NULL;
    Py_ssize_t hid = PyLong_AsSsize_t(args[7]);
    if (PyErr_Occurred()) return NULL;
    Py_ssize_t size = lg_count(args[2], 4);
    if (size < 0) return NULL;
    if (hid <= 0 || size % hid)
        return PyErr_Format(PyExc_ValueError, "lstm_cell_backward: %zd entries are not rows of %zd", size, hid);
    int err = 0;
    lg_bufs b = {.k = 0};
    const float *gh = lg_get(&b, args[0], 0, 0, size, "gh", &err);
    const float *dh = lg_get(&b, args[1], 0, 0, size, "dh", &err);
    float *dc = lg_get(&b, args[2], 1, 0, size, "dc", &err);
    const float *gates = lg_get(&b, args[3], 0, 0, 4 * size, "gates", &err);
    const float *c_prev = lg_get(&b, args[4], 0, 0, size, "c_prev", &err);
    const float *tanh_c = lg_get(&b, args[5], 0, 0, size, "tanh_c", &err);
    float *dz = lg_get(&b, args[6], 1, 0, 4 * size, "dz", &err);
    if (!err) LG_RUN(4 * size, k_lstm_cell_backward(gh, dh, dc, gates, c_prev, tanh_c, dz, size / hid, hid));
    lg_release(&b);
    if (err) return NULL;
    Py_RETURN_NONE;
}

/* gru_cell(xp, hp, b_hh_or_None, h_prev, gates, hn, h, hid): xp, hp and gates are (rows, 3 hid),
   b_hh (3 hid), the others (rows, hid) */
static PyObject *py_gru_cell(PyObject *self, PyObject *const *args, Py_ssize_t nargs) {
    (void)self;
    if (lg_nargs(nargs, 8, "gru_cell")) return NULL;
    Py_ssize_t hid = PyLong_AsSsize_t(args[7]);
    if (PyErr_Occurred()) return NULL;
    Py_ssize_t size = lg_count(args[3], 4);
    if (size < 0) return NULL;
    if (hid <= 0 || size % hid)
        return PyErr_Format(PyExc_ValueError, "gru_cell: %zd entries are not rows of %zd", size, hid);
    int err = 0;
    lg_bufs b = {.k = 0};
    const float *xp = lg_get(&b, args[0], 0, 0, 3 * size, "xp", &err);
    const float *hp = lg_get(&b, args[1], 0, 0, 3 * size, "hp", &err);
    const float *bias = lg_get(&b, args[2], 0, 1, 3 * hid, "bias", &err);
    const float *hprev = lg_get(&b, args[3], 0, 0, size, "h_prev", &err);
    float *gates = lg_get(&b, args[4], 1, 0, 3 * size, "gates", &err);
    float *hn = lg_get(&b, args[5], 1, 0, size, "hn", &err);
    float *h = lg_get(&b, args[6], 1, 0, size, "h", &err);
    if (!err) LG_RUN(3 * size, k_gru_cell(xp, hp, bias, hprev, gates, hn, h, size / hid, hid));
    lg_release(&b);
    if (err) return NULL;
    Py_RETURN_NONE;
}

/* gru_cell_backward(gh, carry, dm, gates, hn, h_prev, dx, dhp, hid): gates, dx and dhp are
   (rows, 3 hid), the others (rows, hid) */
static PyObject *py_gru_cell_backward(PyObject *self, PyObject *const *args, Py_ssize_t nargs) {
    (void)self;
    if (lg_nargs(nargs, 9, "gru_cell_backward")) return NULL;
    Py_ssize_t hid = PyLong_AsSsize_t(args[8]);
    if (PyErr_Occurred()) return NULL;
    Py_ssize_t size = lg_count(args[1], 4);
    if (size < 0) return NULL;
    if (hid <= 0 || size % hid)
        return PyErr_Format(PyExc_ValueError, "gru_cell_backward: %zd entries are not rows of %zd", size, hid);
    int err = 0;
    lg_bufs b = {.k = 0};
    const float *gh = lg_get(&b, args[0], 0, 0, size, "gh", &err);
    float *carry = lg_get(&b, args[1], 1, 0, size, "carry", &err);
    const float *dm = lg_get(&b, args[2], 0, 0, size, "dm", &err);
    const float *gates = lg_get(&b, args[3], 0, 0, 3 * size, "gates", &err);
    const float *hn = lg_get(&b, args[4], 0, 0, size, "hn", &err);
    const float *hprev = lg_get(&b, args[5], 0, 0, size, "h_prev", &err);
    float *dx = lg_get(&b, args[6], 1, 0, 3 * size, "dx", &err);
    float *dhp = lg_get(&b, args[7], 1, 0, 3 * size, "dhp", &err);
    if (!err) LG_RUN(3 * size, k_gru_cell_backward(gh, carry, dm, gates, hn, hprev, dx, dhp, size / hid, hid));
    lg_release(&b);
    if (err) return NULL;
    Py_RETURN_NONE;
}

static PyMethodDef lg_methods[] = {
    {"pool_workers", py_pool_workers, METH_NOARGS, "pool_workers(): the kernel pool's worker threads started"},
    {"set_num_threads", py_set_num_threads, METH_O, "set_num_threads(n): threads a kernel call may use"},
    {"get_num_threads", py_get_num_threads, METH_NOARGS, "get_num_threads(): threads a kernel call may use"},
    {"gru_cell", (PyCFunction)(void (*)(void))py_gru_cell, METH_FASTCALL,
     "gru_cell(xp, hp, b_hh, h_prev, gates, hn, h, hid): one GRU step's gate math"},
    {"gru_cell_backward", (PyCFunction)(void (*)(void))py_gru_cell_backward, METH_FASTCALL,
     "gru_cell_backward(gh, carry, dm, gates, hn, h_prev, dx, dhp, hid): its gradients; carry updated"},
    {"lstm_cell", (PyCFunction)(void (*)(void))py_lstm_cell, METH_FASTCALL,
     "lstm_cell(z, zh, bias, c_prev, c, tanh_c, h, h_next, hid, ld): one LSTM step's gate math (z: halved i, f, o)"},
    {"lstm_cell_backward", (PyCFunction)(void (*)(void))py_lstm_cell_backward, METH_FASTCALL,
     "lstm_cell_backward(gh, dh, dc, gates, c_prev, tanh_c, dz, hid): its pre-activation gradients; dc updated"},
    {"max_pool2x2", (PyCFunction)(void (*)(void))py_max_pool2x2, METH_FASTCALL,
     "max_pool2x2(x, out, arg, h, w): 2x2 stride-2 max pooling, with the winning taps (uint8)"},
    {"max_pool2x2_backward", (PyCFunction)(void (*)(void))py_max_pool2x2_backward, METH_FASTCALL,
     "max_pool2x2_backward(g, arg, gx, h, w): its input gradient"},
    {"gelu", (PyCFunction)(void (*)(void))py_gelu, METH_FASTCALL,
     "gelu(x, out, deriv, tanh): x Phi(x) into out and its derivative into deriv (or None)"},
    {"layer_norm", (PyCFunction)(void (*)(void))py_layer_norm, METH_FASTCALL,
     "layer_norm(x, w, b, out, xhat, rstd, n, eps): layer norm over rows of n"},
    {"layer_norm_backward", (PyCFunction)(void (*)(void))py_layer_norm_backward, METH_FASTCALL,
     "layer_norm_backward(g, xhat, rstd, w, gx, gw, gb, n): its gradients (any of gx, gw, gb None)"},
    {"softmax", (PyCFunction)(void (*)(void))py_softmax, METH_FASTCALL,
     "softmax(x, out, n, log): (log-)softmax over rows of n"},
    {"softmax_backward", (PyCFunction)(void (*)(void))py_softmax_backward, METH_FASTCALL,
     "softmax_backward(g, y, gx, n, log): the (log-)softmax's input gradient from its output y"},
    {"relu", (PyCFunction)(void (*)(void))py_relu, METH_FASTCALL, "relu(x, out)"},
    {"relu_backward", (PyCFunction)(void (*)(void))py_relu_backward, METH_FASTCALL,
     "relu_backward(g, out, gx): g where out > 0 (or NaN), else 0"},
    {"adam", (PyCFunction)(void (*)(void))py_adam, METH_FASTCALL,
     "adam(p, g, m, v, vmax, shrink, wd, maximize, lerp_mode, lerp_k, beta2, one_minus_beta2, neg_step, eps)"},
    {NULL, NULL, 0, NULL},
};

static struct PyModuleDef lg_module = {
    PyModuleDef_HEAD_INIT, "_kernels", "lightgrad's native float32 kernels (see kernels.c)", -1, lg_methods,
    NULL, NULL, NULL, NULL,
};

PyMODINIT_FUNC PyInit__kernels(void) {
    PyObject *mod = PyModule_Create(&lg_module);
    if (mod == NULL) return NULL;
#ifdef LG_NATIVE_ARCH
    const char *variant = "native";
#else
    const char *variant = "dispatched";
#endif
    if (PyModule_AddStringConstant(mod, "build", variant) < 0) {
        Py_DECREF(mod);
        return NULL;
    }
    return mod;
}

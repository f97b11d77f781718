/* The scalar building blocks the kernels share, inlined into each CPU variant where they vectorise:
   exp, the normal tail, tanh and the sigmoid written as arithmetic (libm's are scalar calls), and
   row sums, dot products and maxima with several running sums. */

#ifndef LG_VECMATH_H
#define LG_VECMATH_H

#include "common.h"


/* exp(x) = 2^n e^r with n = round(x / ln 2) and |r| <= ln 2 / 2 (Cody-Waite reduction in two
   constants), e^r by Cephes' expf polynomial (about 1 ulp). 2^n is applied as two factors, so one
   formula covers the whole range: inf above ~88.72, denormals and 0 below ~-87.3; NaN stays NaN.
   Below -104 (e^x under half the smallest denormal) the result is 0, selected after computing e^0
   in that lane: the formula's own underflow to 0 took a slow path on this machine's CPU for every
   such lane (a causal softmax's -inf entries made its forward 1.7x slower). */
LG_INLINE float lg_expf(float x) {
    int tiny = x < -104.0f;
    float xc = x > 88.8f ? 88.8f : x; /* (a NaN fails every test and passes through) */
    xc = tiny ? 0.0f : xc;
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
    float e = p * lg_bits_to_float((k1 + 127u) << 23) * lg_bits_to_float((k2 + 127u) << 23);
    return tiny ? 0.0f : e;
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
   lanes it did not (15x slower). The lanes also note v != v (a NaN); a row with one is scanned
   again for its first NaN. (Noting v - v, NaN for an infinity too, sent every row of a causal
   softmax's -inf entries through that scalar scan.) */
typedef float lg_vf __attribute__((vector_size(64)));
typedef int32_t lg_vi __attribute__((vector_size(64)));

LG_INLINE float lg_max(const float *x, Py_ssize_t n) {
    lg_vf acc;
    lg_vi nan = {0};
    Py_ssize_t i = 0;
    for (int k = 0; k < LG_LANES; k++) acc[k] = -INFINITY;
    for (; i + LG_LANES <= n; i += LG_LANES) {
        lg_vf v;
        memcpy(&v, x + i, sizeof v);
        lg_vi gt = v > acc;
        acc = (lg_vf)((gt & (lg_vi)v) | (~gt & (lg_vi)acc));
        nan |= v != v;
    }
    float m = -INFINITY;
    int any_nan = 0;
    for (; i < n; i++) {
        m = x[i] > m ? x[i] : m;
        any_nan |= x[i] != x[i];
    }
    for (int k = 0; k < LG_LANES; k++) {
        m = acc[k] > m ? acc[k] : m;
        any_nan |= nan[k] != 0;
    }
    if (any_nan)
        for (i = 0; i < n; i++)
            if (x[i] != x[i]) return x[i];
    return m;
}

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

#endif

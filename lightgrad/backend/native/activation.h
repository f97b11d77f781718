/* Activations: GELU (erf and tanh forms) with its derivative, ReLU and its gradient, and their pool
   tasks. Included once, by kernels.c. */

#ifndef LG_ACTIVATION_H
#define LG_ACTIVATION_H

#include "vecmath.h"
#include "pool.h"

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

/* PyTorch's relu is clamp_min(x, 0): x < 0 gives 0, so -0.0 and NaN pass through */
LG_CLONES static void k_relu(const float *x, float *out, Py_ssize_t n) {
    for (Py_ssize_t i = 0; i < n; i++) out[i] = x[i] < 0.0f ? 0.0f : x[i];
}

/* PyTorch's threshold_backward: 0 where out <= 0, else g (a NaN output passes g) */
LG_CLONES static void k_relu_backward(const float *g, const float *out, float *gx, Py_ssize_t n) {
    for (Py_ssize_t i = 0; i < n; i++) gx[i] = out[i] <= 0.0f ? 0.0f : g[i];
}

/* ---- as pool tasks (pool.h): a chunk of units with its pointers offset ---- */

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

#endif

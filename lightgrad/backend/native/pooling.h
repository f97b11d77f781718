/* 2x2 stride-2 max pooling forward and backward, and their pool tasks. Included once, by kernels.c. */

#ifndef LG_POOLING_H
#define LG_POOLING_H

#include "vecmath.h"
#include "pool.h"

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
            /* rows of fewer than 8 windows (14 x 14 planes: 7): the row pair copied into 16 zeroed
               entries, one vector block, its first wo windows kept (the scalar scan took 0.5 ms for
               a CNN's 64 x 32 x 14 x 14 against 0.06 for twice the entries at 28 x 28) */
            float a[16] = {0}, b[16] = {0}, m8[8];
            uint8_t k8[8];
            memcpy(a, r0, (size_t)(2 * wo) * sizeof(float));
            memcpy(b, r1, (size_t)(2 * wo) * sizeof(float));
            lg_pool8(a, b, m8, k8, 0);
            memcpy(o, m8, (size_t)wo * sizeof(float));
            memcpy(t, k8, (size_t)wo);
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
            if (wo >= 8) { /* as the forward: blocks of 8 windows, the last one overlapping */
                for (Py_ssize_t j0 = 0; j0 < wo; j0 += 8) lg_unpool8(gr, t, r0, r1, j0 + 8 <= wo ? j0 : wo - 8);
            } else { /* fewer than 8 windows: one block through zero-padded copies, as the forward */
                float g8[8] = {0}, a[16], b[16];
                uint8_t k8[8] = {0};
                memcpy(g8, gr, (size_t)wo * sizeof(float));
                memcpy(k8, t, (size_t)wo);
                lg_unpool8(g8, k8, a, b, 0);
                memcpy(r0, a, (size_t)(2 * wo) * sizeof(float));
                memcpy(r1, b, (size_t)(2 * wo) * sizeof(float));
            }
            if (w & 1) {
                r0[w - 1] = 0.0f;
                r1[w - 1] = 0.0f;
            }
        }
        if (h & 1) memset(plane + (h - 1) * w, 0, (size_t)w * sizeof(float));
    }
}

/* ---- as pool tasks (pool.h) ---- */

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

#endif

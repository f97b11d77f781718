/* The fused Adam/AdamW update over flat parameter buffers, and its pool task. Included once, by
   kernels.c. */

#ifndef LG_OPTIM_H
#define LG_OPTIM_H

#include "vecmath.h"
#include "pool.h"

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

static void t_adam(const lg_task *t, Py_ssize_t lo, Py_ssize_t hi) {
    float *vmax = (float *)t->p[4];
    k_adam((float *)t->p[0] + lo, (const float *)t->p[1] + lo, (float *)t->p[2] + lo, (float *)t->p[3] + lo,
           vmax ? vmax + lo : NULL, hi - lo, *(const lg_adam_args *)t->p[5]);
}

#endif

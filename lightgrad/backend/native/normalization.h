/* Row normalisations: layer norm forward and backward, softmax and log-softmax forward and
   backward over the last axis, and their pool tasks. Included once, by kernels.c. */

#ifndef LG_NORMALIZATION_H
#define LG_NORMALIZATION_H

#include "vecmath.h"
#include "pool.h"

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

/* ---- as pool tasks (pool.h) ---- */

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

#endif

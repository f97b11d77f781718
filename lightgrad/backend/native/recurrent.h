/* The recurrent layers' native parts: one LSTM or GRU step's gate math forward and backward, and
   whole LSTM and GRU layers (the time loop in one call, each step's product by gemm.h). Included
   once, by kernels.c. */

#ifndef LG_RECURRENT_H
#define LG_RECURRENT_H

#include "vecmath.h"
#include "pool.h"
#include "gemm.h"

/* ---- LSTM and GRU cells: one time step's gate math (the caller does the step's product) --------- */

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
                           Py_ssize_t hid, float s) {
    for (Py_ssize_t j = 0; j < hid; j++) {
        float i = lg_sigmoidf(s * zi[j]), f = lg_sigmoidf(s * zf[j]);
        float g = lg_tanhf(zg[j]), o = lg_sigmoidf(s * zo[j]);
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
                                  Py_ssize_t hid, float s) {
    for (Py_ssize_t r = 0; r < rows; r++) {
        float *zr = z + r * 4 * hid, *hr = h + r * hid;
        if (zh) lg_lstm_pre(zr, zh + r * 4 * hid, bias, 4 * hid);
        lg_lstm_row(zr, zr + hid, zr + 2 * hid, zr + 3 * hid, c_prev + r * hid, c + r * hid, tanh_c + r * hid, hr,
                    hid, s);
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

/* ---- whole LSTM layers: the time loop in one call, each step's product by gemm.h ---------------- */

/* The forward over T steps (reverse: from the last) of batch rows r0 .. r1 - 1 of `rows`. gates (T, rows,
   4 hid) comes in holding each step's input projection and leaves holding the activated gates; packed is
   W_hh^T (hid, 4 hid) packed by lg_pack_bt; bias (4 hid: b_ih + b_hh) or NULL. Step t's pre-activations
   are (projection + bias) + h_{t-1} W_hh^T (not halved: k_lstm_cell's factor is 1), then k_lstm_cell's
   gate math writes cells, tanh_c and out (each (T, rows, hid)) and copies h into the next step's row
   block of hx (T, rows, ld; the backward's weight-gradient product reads it). Batch rows never meet, so
   a range of them runs its whole time loop alone: the pool splits a layer by rows, with no
   synchronisation between steps (a worker that starts late, or shares its core with OpenBLAS's
   spinning thread, takes fewer rows), and every row gets the same bits on any split. */
static void k_lstm_layer(float *gates, const float *packed, const float *bias, const float *h0, const float *c0,
                         float *cells, float *tanh_c, float *out, float *hx, Py_ssize_t ld, Py_ssize_t steps,
                         Py_ssize_t rows, Py_ssize_t r0, Py_ssize_t r1, Py_ssize_t hid, int reverse) {
    Py_ssize_t n = rows * hid, g4 = 4 * hid, m = r1 - r0, o = r0 * hid;
    for (Py_ssize_t s = 0; s < steps; s++) {
        Py_ssize_t t = reverse ? steps - 1 - s : s, prev = reverse ? t + 1 : t - 1, next = reverse ? t - 1 : t + 1;
        const float *h = s == 0 ? h0 + o : out + prev * n + o, *c = s == 0 ? c0 + o : cells + prev * n + o;
        float *z = gates + t * n * 4 + o * 4;
        lg_gemm(h, hid, packed, z, g4, m, g4, hid, bias, 1);
        k_lstm_cell(z, NULL, NULL, c, cells + t * n + o, tanh_c + t * n + o, out + t * n + o,
                    s + 1 < steps && hx ? hx + (next * rows + r0) * ld : NULL, ld, m, hid, 1.0f);
    }
}

/* Its backward for rows r0 .. r1 - 1: g (T + 1, rows, hid) is the outputs' gradient (g[T] that of the
   last cell state, already copied into dc); dh comes in as zeros. Each step (in the forward's reverse
   order) runs k_lstm_cell_backward into dz (T, rows, 4 hid), then dh = dz_t W_hh with packed = W_hh
   (4 hid, hid) packed. Leaves dh and dc holding the gradients reaching h0 and c0. */
static void k_lstm_layer_backward(const float *g, float *dz, float *dh, float *dc, const float *gates,
                                  const float *cells, const float *tanh_c, const float *c0, const float *packed,
                                  Py_ssize_t steps, Py_ssize_t rows, Py_ssize_t r0, Py_ssize_t r1, Py_ssize_t hid,
                                  int reverse) {
    Py_ssize_t n = rows * hid, g4 = 4 * hid, m = r1 - r0, o = r0 * hid;
    for (Py_ssize_t s = 0; s < steps; s++) {
        Py_ssize_t t = reverse ? s : steps - 1 - s, prev = reverse ? t + 1 : t - 1;
        const float *c = s == steps - 1 ? c0 + o : cells + prev * n + o;
        float *d = dz + t * n * 4 + o * 4;
        k_lstm_cell_backward(g + t * n + o, dh + o, dc + o, gates + t * n * 4 + o * 4, c, tanh_c + t * n + o, d, m,
                             hid);
        lg_gemm(d, g4, packed, dh + o, hid, m, hid, g4, NULL, 0);
    }
}

/* As pool tasks over batch rows: p = the arrays in k_lstm_layer's (k_lstm_layer_backward's) order,
   i = (ld, steps, rows, hid, reverse) ((steps, rows, hid, reverse)) */
static void t_lstm_layer(const lg_task *t, Py_ssize_t lo, Py_ssize_t hi) {
    k_lstm_layer((float *)t->p[0], (const float *)t->p[1], (const float *)t->p[2], (const float *)t->p[3],
                 (const float *)t->p[4], (float *)t->p[5], (float *)t->p[6], (float *)t->p[7], (float *)t->p[8],
                 t->i[0], t->i[1], t->i[2], lo, hi, t->i[3], (int)t->i[4]);
}

static void t_lstm_layer_backward(const lg_task *t, Py_ssize_t lo, Py_ssize_t hi) {
    k_lstm_layer_backward((const float *)t->p[0], (float *)t->p[1], (float *)t->p[2], (float *)t->p[3],
                          (const float *)t->p[4], (const float *)t->p[5], (const float *)t->p[6],
                          (const float *)t->p[7], (const float *)t->p[8], t->i[0], t->i[1], lo, hi, t->i[2],
                          (int)t->i[3]);
}

/* ---- whole GRU layers, likewise ------------------------------------------------------------- */

/* The forward over T steps of batch rows r0 .. r1 - 1 of `rows`: xp (T, rows, 3 hid) holds the input
   projections (with b_ih); each step's h_{t-1} W_hh^T goes to hp (rows, 3 hid: the chunk's rows of a
   scratch) by gemm.h with packed = W_hh^T (hid, 3 hid) packed by lg_pack_bt, then k_gru_cell's gate
   math (b_hh (3 hid) or NULL) writes gates (T, rows, 3 hid), hn and out (T, rows, hid). */
static void k_gru_layer(const float *xp, const float *packed, const float *b_hh, const float *h0, float *hp,
                        float *gates, float *hn, float *out, Py_ssize_t steps, Py_ssize_t rows, Py_ssize_t r0,
                        Py_ssize_t r1, Py_ssize_t hid, int reverse) {
    Py_ssize_t n = rows * hid, g3 = 3 * hid, m = r1 - r0, o = r0 * hid;
    for (Py_ssize_t s = 0; s < steps; s++) {
        Py_ssize_t t = reverse ? steps - 1 - s : s, prev = reverse ? t + 1 : t - 1;
        const float *h = s == 0 ? h0 + o : out + prev * n + o;
        lg_gemm(h, hid, packed, hp + o * 3, g3, m, g3, hid, NULL, 0);
        k_gru_cell(xp + t * n * 3 + o * 3, hp + o * 3, b_hh, h, gates + t * n * 3 + o * 3, hn + t * n + o,
                   out + t * n + o, m, hid);
    }
}

/* Its backward for rows r0 .. r1 - 1: g (T, rows, hid) the outputs' gradient, prev (T, rows, hid) the
   state each step started from; carry and dm come in as zeros. Each step (in the forward's reverse
   order) runs k_gru_cell_backward into dx and dhp (T, rows, 3 hid), then dm = dhp_t W_hh with
   packed = W_hh (3 hid, hid) packed. Leaves carry + dm the gradient reaching h0. */
static void k_gru_layer_backward(const float *g, float *carry, float *dm, const float *gates, const float *hn,
                                 const float *prev, float *dx, float *dhp, const float *packed, Py_ssize_t steps,
                                 Py_ssize_t rows, Py_ssize_t r0, Py_ssize_t r1, Py_ssize_t hid, int reverse) {
    Py_ssize_t n = rows * hid, g3 = 3 * hid, m = r1 - r0, o = r0 * hid;
    for (Py_ssize_t s = 0; s < steps; s++) {
        Py_ssize_t t = reverse ? s : steps - 1 - s;
        float *d = dhp + t * n * 3 + o * 3;
        k_gru_cell_backward(g + t * n + o, carry + o, dm + o, gates + t * n * 3 + o * 3, hn + t * n + o,
                            prev + t * n + o, dx + t * n * 3 + o * 3, d, m, hid);
        lg_gemm(d, g3, packed, dm + o, hid, m, hid, g3, NULL, 0);
    }
}

/* As pool tasks over batch rows: p = the arrays in k_gru_layer's (k_gru_layer_backward's) order,
   i = (steps, rows, hid, reverse) */
static void t_gru_layer(const lg_task *t, Py_ssize_t lo, Py_ssize_t hi) {
    k_gru_layer((const float *)t->p[0], (const float *)t->p[1], (const float *)t->p[2], (const float *)t->p[3],
                (float *)t->p[4], (float *)t->p[5], (float *)t->p[6], (float *)t->p[7], t->i[0], t->i[1], lo, hi,
                t->i[2], (int)t->i[3]);
}

static void t_gru_layer_backward(const lg_task *t, Py_ssize_t lo, Py_ssize_t hi) {
    k_gru_layer_backward((const float *)t->p[0], (float *)t->p[1], (float *)t->p[2], (const float *)t->p[3],
                         (const float *)t->p[4], (const float *)t->p[5], (float *)t->p[6], (float *)t->p[7],
                         (const float *)t->p[8], t->i[0], t->i[1], lo, hi, t->i[2], (int)t->i[3]);
}

/* Rows a chunk takes at least: one AVX-512 register tile */
#define LG_LAYER_GRAIN 8

#endif

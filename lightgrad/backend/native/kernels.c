/* lightgrad's native kernels: fused float32 loops behind the backend's functions. This file is the
   binding (argument checks, the method table, the module); the kernels live by subject in the
   headers it includes once (one translation unit, so each stays static and inlines): vecmath.h
   (exp, tanh, row sums), activation.h, normalization.h, optim.h, pooling.h, recurrent.h, with the
   thread pool in pool.h and the buffer helpers in common.h.

   Each kernel is one pass (or one pass per row) where NumPy takes many: GELU and its derivative,
   layer norm forward and backward, softmax and log-softmax over the last axis and their gradients,
   ReLU and its mask, the Adam update, 2x2 max pooling forward and backward, one LSTM or GRU
   step's gate math forward and backward, and whole LSTM and GRU layers' time loops (gemm.h's
   product). The Python side (backend/native/__init__.py and the backend functions) decides when a
   kernel is used: float32, C-contiguous, non-empty, large enough.
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

#include "activation.h"
#include "normalization.h"
#include "optim.h"
#include "pooling.h"
#include "recurrent.h"

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

/* Rows shorter than this run the forward faster in NumPy's kernels when the call stays on one thread
   (rows of 64, 1 thread: 190-213 us against NumPy's 173-182 for 262K entries; from 128 this kernel is
   ahead): the per-row reductions outweigh the row's one vector pass. */
#define LG_SOFTMAX_MIN_ROW 128

/* softmax(x, out, n, log) -> True, or False having done nothing (rows shorter than LG_SOFTMAX_MIN_ROW
   that one thread would run: the caller's NumPy path is faster); softmax_backward(g, y, gx, n, log) */
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
        if (!err && n < LG_SOFTMAX_MIN_ROW && !lg_would_split(size / n, 3 * n, 1)) {
            lg_release(&b);
            Py_RETURN_FALSE;
        }
        if (!err) LG_RUN(size, lg_parallel(&t, size / n, 3 * n, 1));
    }
    lg_release(&b);
    if (err) return NULL;
    if (!backward) Py_RETURN_TRUE;
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
    if (!err) LG_RUN(4 * size, k_lstm_cell(z, zh, bias, c_prev, c, tanh_c, h, h_next, ld, rows, hid, 2.0f));
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

/* The checks both whole-layer calls share: hid a multiple of LG_NR and the product kernel present. */
static int lg_layer_ok(Py_ssize_t hid, const char *name) {
    if (hid > 0 && hid % LG_NR == 0 && lg_gemm_variant()) return 1;
    PyErr_Format(PyExc_ValueError, "%s: expected a hidden size that is a multiple of %d on a CPU with AVX2 and FMA, "
                 "got %zd (gemm variant %d)", name, LG_NR, hid, lg_gemm_variant());
    return 0;
}

/* lstm_layer(gates, w_hh, bias_or_None, h0, c0, cells, tanh_c, out, hx_or_None, pack, hid, ld, reverse): the
   whole forward (k_lstm_layer); w_hh is (4 hid, hid), pack a scratch of hid * 4 hid, out (T + 1, rows,
   hid) (the last block is the caller's), hx (T, rows, ld) */
static PyObject *py_lstm_layer(PyObject *self, PyObject *const *args, Py_ssize_t nargs) {
    (void)self;
    if (lg_nargs(nargs, 13, "lstm_layer")) return NULL;
    Py_ssize_t hid = PyLong_AsSsize_t(args[10]), ld = PyLong_AsSsize_t(args[11]);
    int reverse = PyObject_IsTrue(args[12]);
    if (PyErr_Occurred() || reverse < 0) return NULL;
    if (!lg_layer_ok(hid, "lstm_layer")) return NULL;
    Py_ssize_t n = lg_count(args[3], 4), all = lg_count(args[5], 4);
    if (n < 0 || all < 0) return NULL;
    if (n == 0 || n % hid || all % n || ld < hid)
        return PyErr_Format(PyExc_ValueError, "lstm_layer: h0 of %zd and cells of %zd entries are not rows of %zd "
                            "(hx row stride %zd)", n, all, hid, ld);
    Py_ssize_t rows = n / hid, steps = all / n;
    int err = 0;
    lg_bufs b = {.k = 0};
    float *gates = lg_get(&b, args[0], 1, 0, 4 * all, "gates", &err);
    const float *w_hh = lg_get(&b, args[1], 0, 0, 4 * hid * hid, "w_hh", &err);
    const float *bias = lg_get(&b, args[2], 0, 1, 4 * hid, "bias", &err);
    const float *h0 = lg_get(&b, args[3], 0, 0, n, "h0", &err);
    const float *c0 = lg_get(&b, args[4], 0, 0, n, "c0", &err);
    float *cells = lg_get(&b, args[5], 1, 0, all, "cells", &err);
    float *tanh_c = lg_get(&b, args[6], 1, 0, all, "tanh_c", &err);
    float *out = lg_get(&b, args[7], 1, 0, all + n, "out", &err);
    float *hx = lg_get(&b, args[8], 1, 1, steps * rows * ld, "hx", &err);
    float *pack = lg_get(&b, args[9], 1, 0, 4 * hid * hid, "pack", &err);
    if (!err) {
        lg_task t = {.fn = t_lstm_layer, .p = {gates, pack, bias, h0, c0, cells, tanh_c, out, hx},
                     .i = {ld, steps, rows, hid, reverse}};
        Py_BEGIN_ALLOW_THREADS lg_pack_bt(w_hh, hid, hid, 4 * hid, pack);
        lg_parallel(&t, rows, steps * 4 * hid * hid, LG_LAYER_GRAIN);
        Py_END_ALLOW_THREADS
    }
    lg_release(&b);
    if (err) return NULL;
    Py_RETURN_NONE;
}

/* lstm_layer_backward(g, dz, dh, dc, gates, cells, tanh_c, c0, w_hh, pack, hid, reverse): the whole
   backward (k_lstm_layer_backward); g (T + 1, rows, hid), w_hh (4 hid, hid), pack a scratch of 4 hid * hid */
static PyObject *py_lstm_layer_backward(PyObject *self, PyObject *const *args, Py_ssize_t nargs) {
    (void)self;
    if (lg_nargs(nargs, 12, "lstm_layer_backward")) return NULL;
    Py_ssize_t hid = PyLong_AsSsize_t(args[10]);
    int reverse = PyObject_IsTrue(args[11]);
    if (PyErr_Occurred() || reverse < 0) return NULL;
    if (!lg_layer_ok(hid, "lstm_layer_backward")) return NULL;
    Py_ssize_t n = lg_count(args[7], 4), all = lg_count(args[5], 4);
    if (n < 0 || all < 0) return NULL;
    if (n == 0 || n % hid || all % n)
        return PyErr_Format(PyExc_ValueError, "lstm_layer_backward: c0 of %zd and cells of %zd entries are not rows "
                            "of %zd", n, all, hid);
    Py_ssize_t rows = n / hid, steps = all / n;
    int err = 0;
    lg_bufs b = {.k = 0};
    const float *g = lg_get(&b, args[0], 0, 0, all + n, "g", &err);
    float *dz = lg_get(&b, args[1], 1, 0, 4 * all, "dz", &err);
    float *dh = lg_get(&b, args[2], 1, 0, n, "dh", &err);
    float *dc = lg_get(&b, args[3], 1, 0, n, "dc", &err);
    const float *gates = lg_get(&b, args[4], 0, 0, 4 * all, "gates", &err);
    const float *cells = lg_get(&b, args[5], 0, 0, all, "cells", &err);
    const float *tanh_c = lg_get(&b, args[6], 0, 0, all, "tanh_c", &err);
    const float *c0 = lg_get(&b, args[7], 0, 0, n, "c0", &err);
    const float *w_hh = lg_get(&b, args[8], 0, 0, 4 * hid * hid, "w_hh", &err);
    float *pack = lg_get(&b, args[9], 1, 0, 4 * hid * hid, "pack", &err);
    if (!err) {
        lg_task t = {.fn = t_lstm_layer_backward, .p = {g, dz, dh, dc, gates, cells, tanh_c, c0, pack},
                     .i = {steps, rows, hid, reverse}};
        Py_BEGIN_ALLOW_THREADS lg_pack_b(w_hh, hid, 4 * hid, hid, pack);
        lg_parallel(&t, rows, steps * 4 * hid * hid, LG_LAYER_GRAIN);
        Py_END_ALLOW_THREADS
    }
    lg_release(&b);
    if (err) return NULL;
    Py_RETURN_NONE;
}

/* gru_layer(xp, w_hh, b_hh_or_None, h0, hp, gates, hn, out, pack, hid, reverse): the whole forward
   (k_gru_layer); xp and gates (T, rows, 3 hid), w_hh (3 hid, hid), hp a scratch (rows, 3 hid), hn and out
   (T, rows, hid), pack a scratch of 3 hid * hid */
static PyObject *py_gru_layer(PyObject *self, PyObject *const *args, Py_ssize_t nargs) {
    (void)self;
    if (lg_nargs(nargs, 11, "gru_layer")) return NULL;
    Py_ssize_t hid = PyLong_AsSsize_t(args[9]);
    int reverse = PyObject_IsTrue(args[10]);
    if (PyErr_Occurred() || reverse < 0) return NULL;
    if (!lg_layer_ok(hid, "gru_layer")) return NULL;
    Py_ssize_t n = lg_count(args[3], 4), all = lg_count(args[7], 4);
    if (n < 0 || all < 0) return NULL;
    if (n == 0 || n % hid || all % n)
        return PyErr_Format(PyExc_ValueError, "gru_layer: h0 of %zd and out of %zd entries are not rows of %zd", n,
                            all, hid);
    Py_ssize_t rows = n / hid, steps = all / n;
    int err = 0;
    lg_bufs b = {.k = 0};
    const float *xp = lg_get(&b, args[0], 0, 0, 3 * all, "xp", &err);
    const float *w_hh = lg_get(&b, args[1], 0, 0, 3 * hid * hid, "w_hh", &err);
    const float *b_hh = lg_get(&b, args[2], 0, 1, 3 * hid, "b_hh", &err);
    const float *h0 = lg_get(&b, args[3], 0, 0, n, "h0", &err);
    float *hp = lg_get(&b, args[4], 1, 0, 3 * n, "hp", &err);
    float *gates = lg_get(&b, args[5], 1, 0, 3 * all, "gates", &err);
    float *hn = lg_get(&b, args[6], 1, 0, all, "hn", &err);
    float *out = lg_get(&b, args[7], 1, 0, all, "out", &err);
    float *pack = lg_get(&b, args[8], 1, 0, 3 * hid * hid, "pack", &err);
    if (!err) {
        lg_task t = {.fn = t_gru_layer, .p = {xp, pack, b_hh, h0, hp, gates, hn, out},
                     .i = {steps, rows, hid, reverse}};
        Py_BEGIN_ALLOW_THREADS lg_pack_bt(w_hh, hid, hid, 3 * hid, pack);
        lg_parallel(&t, rows, steps * 3 * hid * hid, LG_LAYER_GRAIN);
        Py_END_ALLOW_THREADS
    }
    lg_release(&b);
    if (err) return NULL;
    Py_RETURN_NONE;
}

/* gru_layer_backward(g, carry, dm, gates, hn, prev, dx, dhp, w_hh, pack, hid, reverse): the whole backward
   (k_gru_layer_backward); g, hn and prev (T, rows, hid), gates, dx and dhp (T, rows, 3 hid), carry and dm
   (rows, hid), w_hh (3 hid, hid), pack a scratch of 3 hid * hid */
static PyObject *py_gru_layer_backward(PyObject *self, PyObject *const *args, Py_ssize_t nargs) {
    (void)self;
    if (lg_nargs(nargs, 12, "gru_layer_backward")) return NULL;
    Py_ssize_t hid = PyLong_AsSsize_t(args[10]);
    int reverse = PyObject_IsTrue(args[11]);
    if (PyErr_Occurred() || reverse < 0) return NULL;
    if (!lg_layer_ok(hid, "gru_layer_backward")) return NULL;
    Py_ssize_t n = lg_count(args[1], 4), all = lg_count(args[0], 4);
    if (n < 0 || all < 0) return NULL;
    if (n == 0 || n % hid || all % n)
        return PyErr_Format(PyExc_ValueError, "gru_layer_backward: carry of %zd and g of %zd entries are not rows "
                            "of %zd", n, all, hid);
    Py_ssize_t rows = n / hid, steps = all / n;
    int err = 0;
    lg_bufs b = {.k = 0};
    const float *g = lg_get(&b, args[0], 0, 0, all, "g", &err);
    float *carry = lg_get(&b, args[1], 1, 0, n, "carry", &err);
    float *dm = lg_get(&b, args[2], 1, 0, n, "dm", &err);
    const float *gates = lg_get(&b, args[3], 0, 0, 3 * all, "gates", &err);
    const float *hn = lg_get(&b, args[4], 0, 0, all, "hn", &err);
    const float *prev = lg_get(&b, args[5], 0, 0, all, "prev", &err);
    float *dx = lg_get(&b, args[6], 1, 0, 3 * all, "dx", &err);
    float *dhp = lg_get(&b, args[7], 1, 0, 3 * all, "dhp", &err);
    const float *w_hh = lg_get(&b, args[8], 0, 0, 3 * hid * hid, "w_hh", &err);
    float *pack = lg_get(&b, args[9], 1, 0, 3 * hid * hid, "pack", &err);
    if (!err) {
        lg_task t = {.fn = t_gru_layer_backward, .p = {g, carry, dm, gates, hn, prev, dx, dhp, pack},
                     .i = {steps, rows, hid, reverse}};
        Py_BEGIN_ALLOW_THREADS lg_pack_b(w_hh, hid, 3 * hid, hid, pack);
        lg_parallel(&t, rows, steps * 3 * hid * hid, LG_LAYER_GRAIN);
        Py_END_ALLOW_THREADS
    }
    lg_release(&b);
    if (err) return NULL;
    Py_RETURN_NONE;
}

/* gemm_variant(): 512 (AVX-512), 256 (AVX2 and FMA) or 0: the recurrent layers' product kernel (gemm.h) */
static PyObject *py_gemm_variant(PyObject *self, PyObject *unused) {
    (void)self;
    (void)unused;
    return PyLong_FromLong(lg_gemm_variant());
}

/* set_gemm_variant(v): use variant v (0, 256 or 512, one this CPU runs; -1: the best) */
static PyObject *py_set_gemm_variant(PyObject *self, PyObject *arg) {
    (void)self;
    long v = PyLong_AsLong(arg);
    if (v == -1 && PyErr_Occurred()) return NULL;
    if (lg_gemm_choose((int)v) < 0)
        return PyErr_Format(PyExc_ValueError, "set_gemm_variant: expected -1, 0 or a variant this CPU runs (best %d), "
                            "got %ld", lg_gemm_best(), v);
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
    {"lstm_layer", (PyCFunction)(void (*)(void))py_lstm_layer, METH_FASTCALL,
     "lstm_layer(gates, w_hh, bias, h0, c0, cells, tanh_c, out, hx, pack, hid, ld, reverse): an LSTM layer's forward"},
    {"lstm_layer_backward", (PyCFunction)(void (*)(void))py_lstm_layer_backward, METH_FASTCALL,
     "lstm_layer_backward(g, dz, dh, dc, gates, cells, tanh_c, c0, w_hh, pack, hid, reverse): its step loop"},
    {"gru_layer", (PyCFunction)(void (*)(void))py_gru_layer, METH_FASTCALL,
     "gru_layer(xp, w_hh, b_hh, h0, hp, gates, hn, out, pack, hid, reverse): a GRU layer's forward"},
    {"gru_layer_backward", (PyCFunction)(void (*)(void))py_gru_layer_backward, METH_FASTCALL,
     "gru_layer_backward(g, carry, dm, gates, hn, prev, dx, dhp, w_hh, pack, hid, reverse): its step loop"},
    {"gemm_variant", py_gemm_variant, METH_NOARGS, "gemm_variant(): 512, 256 or 0, the recurrent product kernel"},
    {"set_gemm_variant", py_set_gemm_variant, METH_O, "set_gemm_variant(v): use variant v (0, 256, 512; -1: the best)"},
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
     "softmax(x, out, n, log): (log-)softmax over rows of n; False: left to the caller (short rows, one thread)"},
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

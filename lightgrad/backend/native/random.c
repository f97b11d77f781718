/* lightgrad's native random-number transforms: the loops of backend/random.py that NumPy runs
   slowly, each bit-identical to that module's NumPy path (and so to PyTorch's CPU generator).

   - normal_f32: ATen's float32 normal_fill on 16+ contiguous values: uniforms from the low 24 bits
     of mt19937 words, Box-Muller per row of 16 (8 radii from the first half, 8 angles from the
     second) with the Cephes polynomial log and sincos of ATen's AVX2 kernel (avx_mathfun.h), fused
     where ATen's build fuses them. The fusions are explicit fmaf() calls: setup.py compiles with
     -ffp-contract=off, so nothing else is fused, and fmaf is one rounding in every variant (an FMA
     instruction in the AVX2 and AVX-512 builds, glibc's correctly rounded fmaf in the baseline one).
   - randperm: randperm_cpu's swap loop (and its inside-out shuffle for huge n).
   - libm: a double function of glibc's libm per element (log, log1p, exp, tan, cos, sin), as the
     float64 samplers need: the same functions Python's math module calls, so the same bits.

   The words arrive as the uint32 or uint64 arrays backend/random.py's Engine gives (the low 32 bits
   of each item are the word). Arrays come through the buffer protocol and every size is checked
   here, so a wrong call raises instead of touching memory it does not own. */

#include "common.h"

/* ---- float32 Box-Muller (the constants are avx_mathfun.h's) ------------------------------------ */

/* The constants as the NumPy path holds them: a decimal read as a double, then rounded to float
   (a literal with an f suffix rounds the decimal straight to float, which can differ). */
#define LG_F(c) ((float)(c))
static const float lg_log_p[9] = {LG_F(7.0376836292e-2), LG_F(-1.1514610310e-1), LG_F(1.1676998740e-1),
                                  LG_F(-1.2420140846e-1), LG_F(1.4249322787e-1),  LG_F(-1.6668057665e-1),
                                  LG_F(2.0000714765e-1),  LG_F(-2.4999993993e-1), LG_F(3.3333331174e-1)};
#define LG_LOG_Q1 LG_F(-2.12194440e-4)
#define LG_LOG_Q2 LG_F(0.693359375)
#define LG_SQRTHF LG_F(0.707106781186547524)
#define LG_DP1 LG_F(-0.78515625)
#define LG_DP2 LG_F(-2.4187564849853515625e-4)
#define LG_DP3 LG_F(-3.77489497744594108e-8)
#define LG_SIN_P0 LG_F(-1.9515295891e-4)
#define LG_SIN_P1 LG_F(8.3321608736e-3)
#define LG_SIN_P2 LG_F(-1.6666654611e-1)
#define LG_COS_P0 LG_F(2.443315711809948e-005)
#define LG_COS_P1 LG_F(-1.388731625493765e-003)
#define LG_COS_P2 LG_F(4.166664568298827e-002)
#define LG_FOPI LG_F(1.27323954473516)
#define LG_TWO_PI LG_F(6.2831853071795864769) /* (the double 2 pi, as 2.0 * math.pi) */

/* log256_ps for x in (0, 1]: exponent and mantissa split, a degree-9 polynomial */
LG_INLINE float lg_log_ps(float x) {
    uint32_t bits = lg_float_to_bits(x > LG_F(1.1754944e-38) ? x : LG_F(1.1754944e-38));
    float e = (float)((int32_t)(bits >> 23) - 127) + 1.0f;
    float m = lg_bits_to_float((bits & 0x807FFFFFu) | 0x3F000000u); /* mantissa in [0.5, 1) */
    int low = m < LG_SQRTHF;
    m = (m - 1.0f) + (low ? m : 0.0f);
    e = e - (low ? 1.0f : 0.0f);
    float z = m * m;
    float y = fmaf(lg_log_p[0], m, lg_log_p[1]);
    /* (written out: a loop here would keep the caller's loop from vectorising) */
    y = fmaf(y, m, lg_log_p[2]);
    y = fmaf(y, m, lg_log_p[3]);
    y = fmaf(y, m, lg_log_p[4]);
    y = fmaf(y, m, lg_log_p[5]);
    y = fmaf(y, m, lg_log_p[6]);
    y = fmaf(y, m, lg_log_p[7]);
    y = fmaf(y, m, lg_log_p[8]);
    y = fmaf(y * m, z, e * LG_LOG_Q1);
    y = y - z * 0.5f;
    return fmaf(e, LG_LOG_Q2, m + y);
}

/* sincos256_ps for x >= 0: octant by 4/pi, a three-part reduction, two polynomials */
LG_INLINE void lg_sincos_ps(float x, float *sin_, float *cos_) {
    int32_t j = (int32_t)(x * LG_FOPI);
    j = (j + 1) & ~1;
    float y = (float)j;
    x = fmaf(y, LG_DP1, x);
    x = fmaf(y, LG_DP2, x);
    x = fmaf(y, LG_DP3, x);
    float z = x * x;
    float c = fmaf(fmaf(LG_COS_P0, z, LG_COS_P1), z, LG_COS_P2);
    c = fmaf(c * z, z, -(z * 0.5f)) + 1.0f;
    float s = fmaf(fmaf(LG_SIN_P0, z, LG_SIN_P1), z, LG_SIN_P2);
    s = fmaf(s * z, x, x);
    int first = (j & 2) == 0; /* which polynomial is the sine */
    float sv = first ? s : c, cv = first ? c : s;
    /* the signs, flipped by bit 2 of the octant (the sine's) and of the octant - 2 (the cosine's) */
    *sin_ = lg_bits_to_float(lg_float_to_bits(sv) ^ ((uint32_t)(j & 4) << 29));
    *cos_ = lg_bits_to_float(lg_float_to_bits(cv) ^ ((uint32_t)(~(j - 2) & 4) << 29));
}

/* The float uniform of a word: its low 24 bits times 2**-24 (exact). */
LG_INLINE float lg_u24(uint32_t w) { return (float)(int32_t)(w & 0xFFFFFFu) * 0x1p-24f; }

/* Box-Muller on `rows` rows of 16 words into out (16 floats a row), a chunk of rows at a time (in
   the L1 cache): the uniforms into out, each row's 8 pairs in place, then the affine step. Each loop
   has no branch in it, so it vectorises (8 lanes: one row's pairs). The affine step is none (0),
   v * std + 0 (1: the NumPy path's plain product when the mean is 0, which turns -0 into +0), or
   fmaf(v, std, mean) (2). */
#define LG_CHUNK_ROWS 256

LG_CLONES static void k_normal_rows(const void *words, int wide, float *out, Py_ssize_t rows, int affine, float std,
                                    float mean) {
    for (Py_ssize_t r0 = 0; r0 < rows; r0 += LG_CHUNK_ROWS) {
        Py_ssize_t r1 = r0 + LG_CHUNK_ROWS < rows ? r0 + LG_CHUNK_ROWS : rows, lo = r0 * 16, hi = r1 * 16;
        if (wide)
            for (Py_ssize_t i = lo; i < hi; i++) out[i] = lg_u24((uint32_t)((const uint64_t *)words)[i]);
        else
            for (Py_ssize_t i = lo; i < hi; i++) out[i] = lg_u24(((const uint32_t *)words)[i]);
        for (Py_ssize_t r = r0; r < r1; r++) {
            float *o = out + r * 16;
            for (int k = 0; k < 8; k++) {
                float radius = sqrtf(-2.0f * lg_log_ps(1.0f - o[k]));
                float s, c;
                lg_sincos_ps(LG_TWO_PI * o[8 + k], &s, &c);
                o[k] = radius * c;
                o[8 + k] = radius * s;
            }
        }
        if (affine == 1)
            for (Py_ssize_t i = lo; i < hi; i++) out[i] = out[i] * std + 0.0f;
        else if (affine == 2)
            for (Py_ssize_t i = lo; i < hi; i++) out[i] = fmaf(out[i], std, mean);
    }
}

/* ---- randperm ---------------------------------------------------------------------------------- */

/* randperm_cpu for n < 2**32 / 20: swap i with i + word % (n - i), for the n - 1 words */
static void k_randperm_swaps(const void *words, int wide, int64_t *perm, Py_ssize_t n) {
    for (Py_ssize_t i = 0; i < n; i++) perm[i] = i;
    for (Py_ssize_t i = 0; i + 1 < n; i++) {
        uint64_t w = wide ? ((const uint64_t *)words)[i] : ((const uint32_t *)words)[i];
        Py_ssize_t j = i + (Py_ssize_t)(w % (uint64_t)(n - i));
        int64_t t = perm[i];
        perm[i] = perm[j];
        perm[j] = t;
    }
}

/* the inside-out shuffle from n >= 2**32 / 20: perm[i] = perm[k], perm[k] = i with k = word % (i + 1),
   for n 64-bit words */
static void k_randperm_inside_out(const uint64_t *words, int64_t *perm, Py_ssize_t n) {
    for (Py_ssize_t i = 0; i < n; i++) {
        Py_ssize_t k = (Py_ssize_t)(words[i] % (uint64_t)(i + 1));
        perm[i] = perm[k];
        perm[k] = i;
    }
}

/* ---- glibc's double functions per element ----------------------------------------------------- */

/* Not cloned, and written as plain calls: each element is one call to glibc's function (GCC
   vectorises libm calls only under -ffast-math, which setup.py never passes). */
static void k_libm(int op, const double *x, double *out, Py_ssize_t n) {
    switch (op) {
    case 0:
        for (Py_ssize_t i = 0; i < n; i++) out[i] = log(x[i]);
        break;
    case 1:
        for (Py_ssize_t i = 0; i < n; i++) out[i] = log1p(x[i]);
        break;
    case 2:
        for (Py_ssize_t i = 0; i < n; i++) out[i] = exp(x[i]);
        break;
    case 3:
        for (Py_ssize_t i = 0; i < n; i++) out[i] = tan(x[i]);
        break;
    case 4:
        for (Py_ssize_t i = 0; i < n; i++) out[i] = cos(x[i]);
        break;
    default:
        for (Py_ssize_t i = 0; i < n; i++) out[i] = sin(x[i]);
        break;
    }
}

/* ---- Python bindings ---------------------------------------------------------------------------- */

/* The data of o: `count` items of `itemsize` bytes (0: 4 or 8, the words; the size found to *found). */
static void *lg_get(lg_bufs *b, PyObject *o, int writable, Py_ssize_t count, Py_ssize_t itemsize, const char *name,
                    Py_ssize_t *found, int *err) {
    return lg_buffer(b, o, writable, 0, count, itemsize, name, found, err);
}

/* normal_f32(words, out, affine, std, mean): out (float32, whole rows of 16) from as many words */
static PyObject *py_normal_f32(PyObject *self, PyObject *const *args, Py_ssize_t nargs) {
    (void)self;
    if (lg_nargs(nargs, 5, "normal_f32")) return NULL;
    int affine = (int)PyLong_AsLong(args[2]);
    float std = (float)PyFloat_AsDouble(args[3]), mean = (float)PyFloat_AsDouble(args[4]);
    if (PyErr_Occurred()) return NULL;
    if (affine < 0 || affine > 2) return PyErr_Format(PyExc_ValueError, "normal_f32: affine %d is not 0, 1 or 2", affine);
    Py_ssize_t n = lg_count(args[1], 4);
    if (n < 0) return NULL;
    if (n % 16) return PyErr_Format(PyExc_ValueError, "normal_f32: %zd entries are not rows of 16", n);
    int err = 0;
    Py_ssize_t size = 0;
    lg_bufs b = {.k = 0};
    const void *words = lg_get(&b, args[0], 0, n, 0, "words", &size, &err);
    float *out = lg_get(&b, args[1], 1, n, 4, "out", NULL, &err);
    if (!err) LG_RUN(n, k_normal_rows(words, size == 8, out, n / 16, affine, std, mean));
    lg_release(&b);
    if (err) return NULL;
    Py_RETURN_NONE;
}

/* randperm(words, out, inside_out): out (int64, n entries) from n - 1 words (n 64-bit ones inside out) */
static PyObject *py_randperm(PyObject *self, PyObject *const *args, Py_ssize_t nargs) {
    (void)self;
    if (lg_nargs(nargs, 3, "randperm")) return NULL;
    int inside_out = PyObject_IsTrue(args[2]);
    if (inside_out < 0) return NULL;
    Py_ssize_t n = lg_count(args[1], 8);
    if (n < 0) return NULL;
    int err = 0;
    Py_ssize_t size = 0;
    lg_bufs b = {.k = 0};
    const void *words = lg_get(&b, args[0], 0, inside_out ? n : (n > 0 ? n - 1 : 0), inside_out ? 8 : 0, "words",
                               &size, &err);
    int64_t *perm = lg_get(&b, args[1], 1, n, 8, "out", NULL, &err);
    if (!err) {
        if (inside_out)
            LG_RUN(n, k_randperm_inside_out(words, perm, n));
        else
            LG_RUN(n, k_randperm_swaps(words, size == 8, perm, n));
    }
    lg_release(&b);
    if (err) return NULL;
    Py_RETURN_NONE;
}

/* libm(op, x, out): out[i] = f(x[i]) for op 0 log, 1 log1p, 2 exp, 3 tan, 4 cos, 5 sin (float64) */
static PyObject *py_libm(PyObject *self, PyObject *const *args, Py_ssize_t nargs) {
    (void)self;
    if (lg_nargs(nargs, 3, "libm")) return NULL;
    int op = (int)PyLong_AsLong(args[0]);
    if (PyErr_Occurred()) return NULL;
    if (op < 0 || op > 5) return PyErr_Format(PyExc_ValueError, "libm: no function %d", op);
    Py_ssize_t n = lg_count(args[1], 8);
    if (n < 0) return NULL;
    int err = 0;
    lg_bufs b = {.k = 0};
    const double *x = lg_get(&b, args[1], 0, n, 8, "x", NULL, &err);
    double *out = lg_get(&b, args[2], 1, n, 8, "out", NULL, &err);
    if (!err) LG_RUN(n * 4, k_libm(op, x, out, n)); /* (a call costs what ~4 vector elements do) */
    lg_release(&b);
    if (err) return NULL;
    Py_RETURN_NONE;
}

/* ---- mt19937 words ------------------------------------------------------------------------------ */

/* NumPy's MT19937 state (numpy/random/src/mt19937/mt19937.h: 624 key words, then the position),
   reached through the BitGenerator's ctypes.state_address; backend/random.py checks this layout
   against NumPy's own words once before it uses mt_words, and otherwise keeps NumPy's path. */
typedef struct {
    uint32_t key[624];
    int pos;
} lg_mt_state;

LG_CLONES static void lg_mt_regenerate(lg_mt_state *st) {
    const uint32_t upper = 0x80000000u, lower = 0x7fffffffu, matrix = 0x9908b0dfu;
    uint32_t *k = st->key, y;
    int i;
    for (i = 0; i < 624 - 397; i++) {
        y = (k[i] & upper) | (k[i + 1] & lower);
        k[i] = k[i + 397] ^ (y >> 1) ^ (-(y & 1u) & matrix);
    }
    for (; i < 623; i++) {
        y = (k[i] & upper) | (k[i + 1] & lower);
        k[i] = k[i + 397 - 624] ^ (y >> 1) ^ (-(y & 1u) & matrix);
    }
    y = (k[623] & upper) | (k[0] & lower);
    k[623] = k[396] ^ (y >> 1) ^ (-(y & 1u) & matrix);
    st->pos = 0;
}

/* The words in runs of what is left of the key (the tempering of a run vectorises). */
LG_CLONES static void lg_mt_words(lg_mt_state *st, uint32_t *out, Py_ssize_t n) {
    Py_ssize_t i = 0;
    while (i < n) {
        if (st->pos >= 624) lg_mt_regenerate(st);
        Py_ssize_t m = 624 - st->pos < n - i ? 624 - st->pos : n - i;
        const uint32_t *k = st->key + st->pos;
        uint32_t *o = out + i;
        for (Py_ssize_t j = 0; j < m; j++) {
            uint32_t y = k[j];
            y ^= y >> 11;
            y ^= (y << 7) & 0x9d2c5680u;
            y ^= (y << 15) & 0xefc60000u;
            y ^= y >> 18;
            o[j] = y;
        }
        st->pos += (int)m;
        i += m;
    }
}

/* mt_words(state_address, out): the next len(out) words of the stream at state_address (uint32) */
static PyObject *py_mt_words(PyObject *self, PyObject *const *args, Py_ssize_t nargs) {
    (void)self;
    if (lg_nargs(nargs, 2, "mt_words")) return NULL;
    void *addr = PyLong_AsVoidPtr(args[0]);
    if (addr == NULL) {
        if (!PyErr_Occurred()) PyErr_SetString(PyExc_ValueError, "mt_words: expected a state address, got 0");
        return NULL;
    }
    Py_ssize_t n = lg_count(args[1], 4);
    if (n < 0) return NULL;
    int err = 0;
    lg_bufs b = {.k = 0};
    uint32_t *out = lg_buffer(&b, args[1], 1, 0, n, 4, "out", NULL, &err);
    if (!err) lg_mt_words((lg_mt_state *)addr, out, n); /* (the GIL held: the state is shared) */
    lg_release(&b);
    if (err) return NULL;
    Py_RETURN_NONE;
}

static PyMethodDef lg_methods[] = {
    {"mt_words", (PyCFunction)(void (*)(void))py_mt_words, METH_FASTCALL,
     "mt_words(state_address, out): the next mt19937 words of NumPy's MT19937 state into out (uint32)"},
    {"normal_f32", (PyCFunction)(void (*)(void))py_normal_f32, METH_FASTCALL,
     "normal_f32(words, out, affine, std, mean): float32 Box-Muller on rows of 16 words"},
    {"randperm", (PyCFunction)(void (*)(void))py_randperm, METH_FASTCALL,
     "randperm(words, out, inside_out): randperm_cpu's shuffle of 0..n-1 into out (int64)"},
    {"libm", (PyCFunction)(void (*)(void))py_libm, METH_FASTCALL,
     "libm(op, x, out): glibc's log, log1p, exp, tan, cos or sin (op 0..5) per float64 element"},
    {NULL, NULL, 0, NULL},
};

static struct PyModuleDef lg_module = {
    PyModuleDef_HEAD_INIT, "_random", "lightgrad's native random-number transforms (see random.c)", -1, lg_methods,
    NULL, NULL, NULL, NULL,
};

PyMODINIT_FUNC PyInit__random(void) { return PyModule_Create(&lg_module); }

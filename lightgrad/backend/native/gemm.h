/* A small-matrix product for the recurrent layers' time loops: C = init + A B, where A is (m, k)
   with row stride lda, B (k, n) is packed once per layer call into panels of LG_NR columns, and
   init is 0 or C's own values plus a bias row. Each step of an LSTM or GRU multiplies the batch's
   state (32 x 128 at the benchmark's shape) by the same weights, a product too small for BLAS to
   reach its speed (OpenBLAS: 35 us for 32 x 128 x 512 on one core of this machine; this kernel:
   18 us with AVX-512, 40 with AVX2), and every call into NumPy costs microseconds more.

   Register tiles: 8 rows x 32 columns (16 zmm accumulators) with AVX-512, 4 x 16 (8 ymm) with
   AVX2+FMA, chosen at run time by the CPU; the tail rows of a batch that is not a multiple of the
   tile run the same tile with the missing rows skipped. Every entry of C is init plus its k
   products added in order of k by fused multiply-adds, so both variants give the same bits (and
   so does any split of the rows). The product itself runs on one thread: the layers split their
   batch rows between threads instead (recurrent.h), since a team that splits each step's product
   and meets once per step collapsed while OpenBLAS's worker spins on the other core after a GEMM
   (measured: 320 steps took 23.5 ms on two threads right after a GEMM, 3.2 idle, 6.0 on one).
   Needs x86-64 with AVX2 and FMA; elsewhere lg_gemm_variant() is 0 and the layers keep BLAS. */

#ifndef LG_GEMM_H
#define LG_GEMM_H

#include "common.h"

#define LG_NR 32 /* packed panel width; n must be a multiple (both tiles divide it) */

#if defined(__x86_64__) && defined(__GNUC__)
#include <immintrin.h>
#define LG_HAVE_GEMM 1

/* one 8 x 32 tile: rows i .. i + mr - 1 (mr <= 8), columns of panel bp */
__attribute__((target("avx512f,fma"))) static inline void lg_tile512(const float *a, Py_ssize_t lda, const float *bp,
                                                                      float *c, Py_ssize_t ldc, Py_ssize_t k, int mr,
                                                                      const float *bias, int init) {
    __m512 acc[8][2];
    for (int r = 0; r < 8; r++) acc[r][0] = acc[r][1] = _mm512_setzero_ps(); /* (the rows past mr stay unused) */
    for (int r = 0; r < 8; r++) {
        if (r >= mr) break;
        if (init) {
            acc[r][0] = _mm512_loadu_ps(c + r * ldc);
            acc[r][1] = _mm512_loadu_ps(c + r * ldc + 16);
            if (bias) {
                acc[r][0] = _mm512_add_ps(acc[r][0], _mm512_loadu_ps(bias));
                acc[r][1] = _mm512_add_ps(acc[r][1], _mm512_loadu_ps(bias + 16));
            }
        }
    }
    for (Py_ssize_t q = 0; q < k; q++) {
        __m512 b0 = _mm512_loadu_ps(bp + q * LG_NR), b1 = _mm512_loadu_ps(bp + q * LG_NR + 16);
        for (int r = 0; r < 8; r++) {
            if (r >= mr) break;
            __m512 av = _mm512_set1_ps(a[r * lda + q]);
            acc[r][0] = _mm512_fmadd_ps(av, b0, acc[r][0]);
            acc[r][1] = _mm512_fmadd_ps(av, b1, acc[r][1]);
        }
    }
    for (int r = 0; r < 8; r++) {
        if (r >= mr) break;
        _mm512_storeu_ps(c + r * ldc, acc[r][0]);
        _mm512_storeu_ps(c + r * ldc + 16, acc[r][1]);
    }
}

__attribute__((target("avx512f,fma"))) static void lg_gemm512(const float *a, Py_ssize_t lda, const float *bp,
                                                               float *c, Py_ssize_t ldc, Py_ssize_t m, Py_ssize_t n,
                                                               Py_ssize_t k, const float *bias, int init) {
    for (Py_ssize_t p = 0; p < n / LG_NR; p++) {
        const float *panel = bp + p * k * LG_NR, *bb = bias ? bias + p * LG_NR : NULL;
        Py_ssize_t i = 0;
        for (; i + 8 <= m; i += 8) lg_tile512(a + i * lda, lda, panel, c + i * ldc + p * LG_NR, ldc, k, 8, bb, init);
        if (i < m) lg_tile512(a + i * lda, lda, panel, c + i * ldc + p * LG_NR, ldc, k, (int)(m - i), bb, init);
    }
}

/* one 4 x 16 tile at column offset j of panel bp */
__attribute__((target("avx2,fma"))) static inline void lg_tile256(const float *a, Py_ssize_t lda, const float *bp,
                                                                   float *c, Py_ssize_t ldc, Py_ssize_t k, int mr,
                                                                   const float *bias, int init) {
    __m256 acc[4][2];
    for (int r = 0; r < 4; r++) acc[r][0] = acc[r][1] = _mm256_setzero_ps(); /* (the rows past mr stay unused) */
    for (int r = 0; r < 4; r++) {
        if (r >= mr) break;
        if (init) {
            acc[r][0] = _mm256_loadu_ps(c + r * ldc);
            acc[r][1] = _mm256_loadu_ps(c + r * ldc + 8);
            if (bias) {
                acc[r][0] = _mm256_add_ps(acc[r][0], _mm256_loadu_ps(bias));
                acc[r][1] = _mm256_add_ps(acc[r][1], _mm256_loadu_ps(bias + 8));
            }
        }
    }
    for (Py_ssize_t q = 0; q < k; q++) {
        __m256 b0 = _mm256_loadu_ps(bp + q * LG_NR), b1 = _mm256_loadu_ps(bp + q * LG_NR + 8);
        for (int r = 0; r < 4; r++) {
            if (r >= mr) break;
            __m256 av = _mm256_broadcast_ss(a + r * lda + q);
            acc[r][0] = _mm256_fmadd_ps(av, b0, acc[r][0]);
            acc[r][1] = _mm256_fmadd_ps(av, b1, acc[r][1]);
        }
    }
    for (int r = 0; r < 4; r++) {
        if (r >= mr) break;
        _mm256_storeu_ps(c + r * ldc, acc[r][0]);
        _mm256_storeu_ps(c + r * ldc + 8, acc[r][1]);
    }
}

__attribute__((target("avx2,fma"))) static void lg_gemm256(const float *a, Py_ssize_t lda, const float *bp,
                                                            float *c, Py_ssize_t ldc, Py_ssize_t m, Py_ssize_t n,
                                                            Py_ssize_t k, const float *bias, int init) {
    for (Py_ssize_t p = 0; p < n / LG_NR; p++) {
        for (int half = 0; half < 2; half++) { /* a 32-column panel as two 16-column tiles */
            const float *panel = bp + p * k * LG_NR + 16 * half;
            const float *bb = bias ? bias + p * LG_NR + 16 * half : NULL;
            float *cc = c + p * LG_NR + 16 * half;
            Py_ssize_t i = 0;
            for (; i + 4 <= m; i += 4) lg_tile256(a + i * lda, lda, panel, cc + i * ldc, ldc, k, 4, bb, init);
            if (i < m) lg_tile256(a + i * lda, lda, panel, cc + i * ldc, ldc, k, (int)(m - i), bb, init);
        }
    }
}

/* The best variant this CPU runs: 512 (AVX-512F), 256 (AVX2 and FMA) or 0 (neither: no kernel). */
static int lg_gemm_best(void) {
    static int best = -1;
    if (best < 0) {
        __builtin_cpu_init();
        best = __builtin_cpu_supports("avx512f") ? 512
               : (__builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma")) ? 256 : 0;
    }
    return best;
}

#else
#define LG_HAVE_GEMM 0
static int lg_gemm_best(void) { return 0; }
#endif

static int lg_gemm_chosen = -1; /* set_gemm_variant's choice; -1: the best */

/* The variant in use: 512, 256, or 0 (the layers keep BLAS and a native pass a step). */
static int lg_gemm_variant(void) { return lg_gemm_chosen < 0 ? lg_gemm_best() : lg_gemm_chosen; }

/* Choose a variant (the tests run each one the CPU has): 0, or 256 or 512 where the CPU runs it; -1
   restores the best. Returns 0, or -1 for a variant this CPU cannot run. */
static int lg_gemm_choose(int v) {
    int best = lg_gemm_best();
    if (v == -1 || v == 0 || (v == 256 && best >= 256) || (v == 512 && best == 512)) {
        lg_gemm_chosen = v;
        return 0;
    }
    return -1;
}

/* Pack b (k, n), row stride ldb, into panels of LG_NR columns: panel p holds b[q][p LG_NR + j] at
   [p][q][j]. n must be a multiple of LG_NR. */
static void lg_pack_b(const float *b, Py_ssize_t ldb, Py_ssize_t k, Py_ssize_t n, float *packed) {
    for (Py_ssize_t p = 0; p < n / LG_NR; p++)
        for (Py_ssize_t q = 0; q < k; q++)
            memcpy(packed + (p * k + q) * LG_NR, b + q * ldb + p * LG_NR, LG_NR * sizeof(float));
}

/* The same panels of b = w^T, for w (n, k) with row stride ldw (a weight stored as PyTorch stores it,
   (out, in), used as its transpose). */
static void lg_pack_bt(const float *w, Py_ssize_t ldw, Py_ssize_t k, Py_ssize_t n, float *packed) {
    for (Py_ssize_t p = 0; p < n / LG_NR; p++)
        for (Py_ssize_t j = 0; j < LG_NR; j++) {
            const float *row = w + (p * LG_NR + j) * ldw;
            float *dst = packed + p * k * LG_NR + j;
            for (Py_ssize_t q = 0; q < k; q++) dst[q * LG_NR] = row[q];
        }
}

/* C (m, n), row stride ldc, = A B (init 0) or C + bias + A B (init 1, bias (n) or NULL); A (m, k) with
   row stride lda, B packed by lg_pack_b. Only where lg_gemm_variant() is not 0. */
static void lg_gemm(const float *a, Py_ssize_t lda, const float *packed, float *c, Py_ssize_t ldc, Py_ssize_t m,
                    Py_ssize_t n, Py_ssize_t k, const float *bias, int init) {
#if LG_HAVE_GEMM
    if (lg_gemm_variant() == 512)
        lg_gemm512(a, lda, packed, c, ldc, m, n, k, bias, init);
    else
        lg_gemm256(a, lda, packed, c, ldc, m, n, k, bias, init);
#else
    (void)a, (void)lda, (void)packed, (void)c, (void)ldc, (void)m, (void)n, (void)k, (void)bias, (void)init;
#endif
}

#endif

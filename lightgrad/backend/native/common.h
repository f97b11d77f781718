/* What lightgrad's two native modules (kernels.c, random.c) share: the build switches (the CPU
   variants, always-inline), the GIL threshold, float/bit conversions, and the binding helpers that
   take Python buffers (every size checked, so a wrong call raises instead of touching memory it does
   not own). Included once per module; everything here is static. */

#ifndef LG_COMMON_H
#define LG_COMMON_H

#define PY_SSIZE_T_CLEAN
#include <Python.h>
#include <math.h>
#include <stdint.h>
#include <string.h>

#if defined(__x86_64__) && defined(__GNUC__) && !defined(LG_NATIVE_ARCH) && defined(__has_attribute)
#if __has_attribute(target_clones)
#define LG_CLONES __attribute__((target_clones("arch=x86-64-v4", "arch=x86-64-v3", "default")))
#endif
#endif
#ifndef LG_CLONES
#define LG_CLONES
#endif
#define LG_INLINE static inline __attribute__((always_inline))

/* Below this many elements the GIL stays held: releasing and taking it back costs more than a
   small loop (a fraction of a microsecond). */
#define LG_NOGIL_MIN 32768

LG_INLINE float lg_bits_to_float(uint32_t u) {
    float f;
    memcpy(&f, &u, 4);
    return f;
}

LG_INLINE uint32_t lg_float_to_bits(float f) {
    uint32_t u;
    memcpy(&u, &f, 4);
    return u;
}

/* Buffers held by one call, released together (a whole LSTM layer's forward holds ten). */
typedef struct {
    Py_buffer v[12];
    int k;
} lg_bufs;

static void lg_release(lg_bufs *b) {
    while (b->k > 0) PyBuffer_Release(&b->v[--b->k]);
}

static const char *lg_item_name(Py_ssize_t itemsize) {
    return itemsize == 4 ? "float32" : itemsize == 1 ? "uint8" : itemsize == 8 ? "8-byte" : "4- or 8-byte";
}

/* The data of o, which must hold `count` items of `itemsize` bytes (itemsize 0: 4 or 8, the size found
   going to *found when found is not NULL), or NULL for None when optional. Sets *err with a Python
   exception raised on failure; does nothing once *err is set. */
static void *lg_buffer(lg_bufs *b, PyObject *o, int writable, int optional, Py_ssize_t count, Py_ssize_t itemsize,
                       const char *name, Py_ssize_t *found, int *err) {
    if (*err) return NULL;
    if (o == Py_None && optional) return NULL;
    if (b->k >= (int)(sizeof b->v / sizeof b->v[0])) {
        PyErr_SetString(PyExc_SystemError, "lightgrad native kernels: too many buffers in one call");
        *err = 1;
        return NULL;
    }
    Py_buffer *view = &b->v[b->k];
    if (PyObject_GetBuffer(o, view, writable ? PyBUF_WRITABLE : PyBUF_SIMPLE) < 0) {
        *err = 1;
        return NULL;
    }
    b->k++;
    Py_ssize_t size = view->itemsize;
    int ok = itemsize ? size == itemsize : (size == 4 || size == 8);
    if (!ok || view->len != count * size) {
        PyErr_Format(PyExc_ValueError, "%s: expected %zd %s entries, got %zd bytes of %zd-byte items", name, count,
                     lg_item_name(itemsize), view->len, size);
        *err = 1;
        return NULL;
    }
    if (found) *found = size;
    return view->buf;
}

/* The item count of a buffer of `itemsize`-byte items, without keeping it. */
static Py_ssize_t lg_count(PyObject *o, Py_ssize_t itemsize) {
    Py_buffer view;
    if (PyObject_GetBuffer(o, &view, PyBUF_SIMPLE) < 0) return -1;
    Py_ssize_t n = view.len / itemsize;
    PyBuffer_Release(&view);
    return n;
}

static int lg_nargs(Py_ssize_t nargs, Py_ssize_t want, const char *name) {
    if (nargs == want) return 0;
    PyErr_Format(PyExc_TypeError, "%s expects %zd arguments, got %zd", name, want, nargs);
    return -1;
}

/* Run `call`, without the GIL when n is large. */
#define LG_RUN(n, call)                                                                                          \
    do {                                                                                                         \
        if ((n) >= LG_NOGIL_MIN) {                                                                               \
            Py_BEGIN_ALLOW_THREADS call;                                                                         \
            Py_END_ALLOW_THREADS                                                                                 \
        } else {                                                                                                 \
            call;                                                                                                \
        }                                                                                                        \
    } while (0)

#endif

/* The kernels' thread pool: lg_parallel(task, units, cost, grain) splits units 0..units-1 into chunks and runs
   them on the calling thread and the pool's workers, which wait passively (a condition variable, no
   spinning) between calls.

   Why passive: OpenBLAS's workers spin for ~0.1 s after every GEMM (they yield the core while they
   spin). A pool that spins too takes that core from them and BLAS's next GEMM waits for it; measured
   on 2 cores, spinning pools made whole training steps several times slower. A worker that sleeps
   costs one futex wake per call (a few microseconds, paid only above LG_PAR_MIN) and leaves BLAS
   alone.

   Chunks are claimed from one atomic counter, so the caller starts at once and a worker that wakes
   late (or shares its core with a spinning BLAS thread) takes fewer chunks: no thread waits for a slow
   one. A chunk's result never depends on which thread ran it or on how units were chunked: a kernel
   that reduces across units (layer norm's weight gradients) makes its units fixed blocks with one
   partial sum each and adds them in order, so results are the same bits on any thread count.

   Invariants: one parallel call runs at a time (lg_pool.busy; a second caller, from another Python
   thread with the GIL released, runs its task alone); the caller never returns while a worker is
   inside its task; a forked child starts with no workers (the parent's threads do not exist there);
   on Linux the workers' affinity leaves out the CPU the caller last split a call from
   (lg_pool_avoid_caller; within the process's affinity as it was then).
   Needs pthreads; elsewhere every task runs on the caller. */

#ifndef LG_POOL_H
#define LG_POOL_H

#include "common.h"

typedef struct lg_task lg_task;
/* Runs units lo..hi-1 of the task. */
typedef void (*lg_part_fn)(const lg_task *t, Py_ssize_t lo, Py_ssize_t hi);

#define LG_MAX_CHUNKS 64

/* A kernel call in a form any thread can run: the arrays, sizes and scalars it takes. */
struct lg_task {
    lg_part_fn fn;
    const void *p[12];
    Py_ssize_t i[6];
    float f[12];
};

/* Work (in element-equivalents) below which a call stays on one thread: a wake-up and the chunks'
   cache misses cost more than half of a loop this small (~30 us of GELU). */
#define LG_PAR_MIN 65536

static int lg_threads = 1; /* threads a call may use, the caller included (set_num_threads; workers start lazily) */

#if defined(__unix__) || defined(__APPLE__)
#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>
#ifdef __linux__
#include <sched.h>
#endif

#define LG_MAX_WORKERS 63

static struct {
    pthread_mutex_t mu;
    pthread_cond_t wake, idle;
    int started;            /* workers running */
    unsigned long gen;      /* bumped once per parallel call */
    int finished;           /* the current call's chunks are all done: late wakers skip it */
    const lg_task *task;
    Py_ssize_t units, per_chunk;
    int chunks;
    atomic_int next, done, inside;
    atomic_flag busy;
    pthread_t th[LG_MAX_WORKERS];
    int caller_cpu;         /* the CPU the workers were last kept off (-1: none yet) */
} lg_pool = {PTHREAD_MUTEX_INITIALIZER, PTHREAD_COND_INITIALIZER, PTHREAD_COND_INITIALIZER, 0, 0, 1, NULL,
             0, 0, 0, 0, 0, 0, ATOMIC_FLAG_INIT, {0}, -1};

/* Claim and run chunks of the current call until none is left. */
static void lg_run_chunks(void) {
    const lg_task *t = lg_pool.task;
    int c;
    while ((c = atomic_fetch_add(&lg_pool.next, 1)) < lg_pool.chunks) {
        Py_ssize_t lo = (Py_ssize_t)c * lg_pool.per_chunk;
        Py_ssize_t hi = lo + lg_pool.per_chunk < lg_pool.units ? lo + lg_pool.per_chunk : lg_pool.units;
        t->fn(t, lo, hi);
        atomic_fetch_add(&lg_pool.done, 1);
    }
}

static void *lg_worker(void *arg) {
    (void)arg;
    unsigned long seen = 0;
    pthread_mutex_lock(&lg_pool.mu);
    seen = lg_pool.gen;
    for (;;) {
        while (lg_pool.gen == seen) pthread_cond_wait(&lg_pool.wake, &lg_pool.mu);
        seen = lg_pool.gen;
        if (lg_pool.finished) continue; /* woke after the caller had done everything */
        atomic_fetch_add(&lg_pool.inside, 1);
        pthread_mutex_unlock(&lg_pool.mu);
        lg_run_chunks();
        pthread_mutex_lock(&lg_pool.mu);
        if (atomic_fetch_sub(&lg_pool.inside, 1) == 1) pthread_cond_broadcast(&lg_pool.idle);
    }
    return NULL;
}

static void lg_pool_forget(void) {
    /* in a forked child: no workers, fresh locks (a parent thread may have held them) */
    pthread_mutex_t mu = PTHREAD_MUTEX_INITIALIZER;
    pthread_cond_t c1 = PTHREAD_COND_INITIALIZER, c2 = PTHREAD_COND_INITIALIZER;
    lg_pool.mu = mu;
    lg_pool.wake = c1;
    lg_pool.idle = c2;
    lg_pool.started = 0;
    lg_pool.caller_cpu = -1;
    lg_pool.finished = 1;
    atomic_store(&lg_pool.inside, 0);
    atomic_flag_clear(&lg_pool.busy);
}

/* Start workers until `want` run (by the caller holding lg_pool.busy, on the first call that uses them). */
static void lg_pool_grow(int want) {
    static int atfork = 0;
    if (!atfork) {
        pthread_atfork(NULL, NULL, lg_pool_forget);
        atfork = 1;
    }
    if (want > LG_MAX_WORKERS) want = LG_MAX_WORKERS;
    sigset_t all, old;
    sigfillset(&all);
    pthread_sigmask(SIG_SETMASK, &all, &old); /* workers take no signals: Python handles them */
    while (lg_pool.started < want) {
        pthread_t th;
        pthread_attr_t attr;
        pthread_attr_init(&attr);
        pthread_attr_setdetachstate(&attr, PTHREAD_CREATE_DETACHED);
        int rc = pthread_create(&th, &attr, lg_worker, NULL);
        pthread_attr_destroy(&attr);
        if (rc != 0) break; /* fewer workers: calls still complete, on fewer threads */
        pthread_mutex_lock(&lg_pool.mu);
        lg_pool.th[lg_pool.started] = th;
        lg_pool.caller_cpu = -1; /* the new worker has the process's whole mask */
        lg_pool.started++;
        pthread_mutex_unlock(&lg_pool.mu);
    }
    pthread_sigmask(SIG_SETMASK, &old, NULL);
}

/* Keep the workers off the caller's CPU. When every core is busy (the caller on one, OpenBLAS's worker
   spinning on the other after a GEMM), the kernel may queue a woken worker behind the caller, where it
   waits out the caller's time slice and takes no chunk: measured, a 2-thread LSTM layer then took as
   long as on one thread in about half of the runs. A worker kept off the caller's CPU goes to the other
   core, where OpenBLAS's spinning thread yields to it. One affinity call per worker, only when the caller
   has moved; the masks stay within the process's own affinity. */
static void lg_pool_avoid_caller(int threads) {
#ifdef __linux__
    int cpu = sched_getcpu();
    if (cpu < 0 || cpu == lg_pool.caller_cpu) return;
    cpu_set_t mask;
    if (sched_getaffinity(0, sizeof mask, &mask) != 0 || !CPU_ISSET(cpu, &mask) || CPU_COUNT(&mask) < 2) return;
    CPU_CLR(cpu, &mask);
    for (int w = 0; w < threads - 1 && w < lg_pool.started; w++)
        pthread_setaffinity_np(lg_pool.th[w], sizeof mask, &mask);
    lg_pool.caller_cpu = cpu;
#else
    (void)threads;
#endif
}

/* Whether lg_parallel would split such a call between threads (if the pool is free). */
static int lg_would_split(Py_ssize_t units, Py_ssize_t cost, Py_ssize_t grain) {
    return lg_threads > 1 && units * cost >= LG_PAR_MIN && units >= 2 * grain;
}

/* Run task over units 0..units-1, each costing `cost` element-equivalents; chunks of at least `grain`
   units. Returns the number of chunks used (1: task->fn(task, 0, units) ran on the caller). */
static int lg_parallel(const lg_task *t, Py_ssize_t units, Py_ssize_t cost, Py_ssize_t grain) {
    if (units <= 0) return 0;
    if (lg_threads <= 1 || units * cost < LG_PAR_MIN || units < 2 * grain || atomic_flag_test_and_set(&lg_pool.busy)) {
        t->fn(t, 0, units);
        return 1;
    }
    if (lg_pool.started < lg_threads - 1) lg_pool_grow(lg_threads - 1); /* first use: start the workers */
    int threads = lg_threads < lg_pool.started + 1 ? lg_threads : lg_pool.started + 1;
    if (threads <= 1) {
        atomic_flag_clear(&lg_pool.busy);
        t->fn(t, 0, units);
        return 1;
    }
    /* 4 chunks a thread: enough to even out a late start, few enough that each stays long */
    Py_ssize_t chunks = 4 * (Py_ssize_t)threads;
    if (chunks > LG_MAX_CHUNKS) chunks = LG_MAX_CHUNKS;
    if (chunks > units / grain) chunks = units / grain;
    Py_ssize_t per = (units + chunks - 1) / chunks;
    chunks = (units + per - 1) / per;
    lg_pool_avoid_caller(threads);
    pthread_mutex_lock(&lg_pool.mu);
    lg_pool.task = t;
    lg_pool.units = units;
    lg_pool.per_chunk = per;
    lg_pool.chunks = (int)chunks;
    atomic_store(&lg_pool.next, 0);
    atomic_store(&lg_pool.done, 0);
    lg_pool.finished = 0;
    lg_pool.gen++;
    pthread_cond_broadcast(&lg_pool.wake);
    pthread_mutex_unlock(&lg_pool.mu);
    lg_run_chunks();
    /* every chunk is claimed; wait for those a worker still runs (a short spin: they end together) */
    for (int spin = 0; atomic_load(&lg_pool.done) < chunks; spin++) {
        if (spin > 2000) sched_yield();
    }
    pthread_mutex_lock(&lg_pool.mu);
    lg_pool.finished = 1;
    while (atomic_load(&lg_pool.inside) > 0) pthread_cond_wait(&lg_pool.idle, &lg_pool.mu);
    pthread_mutex_unlock(&lg_pool.mu);
    atomic_flag_clear(&lg_pool.busy);
    return (int)chunks;
}

static void lg_set_threads(int n) { lg_threads = n < 1 ? 1 : n; }

#else /* no pthreads: every call on the caller */

static int lg_would_split(Py_ssize_t units, Py_ssize_t cost, Py_ssize_t grain) {
    (void)units, (void)cost, (void)grain;
    return 0;
}

static int lg_parallel(const lg_task *t, Py_ssize_t units, Py_ssize_t cost, Py_ssize_t grain) {
    (void)cost;
    (void)grain;
    if (units <= 0) return 0;
    t->fn(t, 0, units);
    return 1;
}

static void lg_set_threads(int n) { lg_threads = n < 1 ? 1 : n; }

#endif

/* ---- the pool's controls, as the module's functions (kernels.c's method table lists them) ------- */

/* set_num_threads(n): threads a kernel call may use, the caller included (workers start on first use) */
static PyObject *py_set_num_threads(PyObject *self, PyObject *arg) {
    (void)self;
    long n = PyLong_AsLong(arg);
    if (n == -1 && PyErr_Occurred()) return NULL;
    if (n < 1) {
        PyErr_Format(PyExc_ValueError, "set_num_threads: expected a positive count, got %ld", n);
        return NULL;
    }
    lg_set_threads((int)n);
    Py_RETURN_NONE;
}

static PyObject *py_get_num_threads(PyObject *self, PyObject *unused) {
    (void)self;
    (void)unused;
    return PyLong_FromLong(lg_threads);
}

/* pool_workers(): worker threads started so far (they start on the first call that splits) */
static PyObject *py_pool_workers(PyObject *self, PyObject *unused) {
    (void)self;
    (void)unused;
#if defined(__unix__) || defined(__APPLE__)
    return PyLong_FromLong(lg_pool.started);
#else
    return PyLong_FromLong(0);
#endif
}

#endif

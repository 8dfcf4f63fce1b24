/* bind_bench.c: Python bindings for bench.c (see bind_norm.c for the pattern). */
#include "bind.h"
#include "bench.h"

static PyObject *py_bench_bandwidth(PyObject *self, PyObject *args, PyObject *kw) {
    static char *kwlist[] = {"n", "reps", NULL};
    long long n;
    int reps, st;
    double triad = 0, rd = 0;
    if (!PyArg_ParseTupleAndKeywords(args, kw, "Li:bench_bandwidth", kwlist, &n, &reps)) return NULL;
    Py_BEGIN_ALLOW_THREADS
    st = gb_bench_bandwidth(n, reps, &triad, &rd);
    Py_END_ALLOW_THREADS
    if (st != GB_OK) return gb_raise_status(st);
    return Py_BuildValue("(dd)", triad, rd);
}

static PyObject *py_bench_fma(PyObject *self, PyObject *args, PyObject *kw) {
    static char *kwlist[] = {"iters", "reps", NULL};
    long long iters;
    int reps, st, bits = 0;
    double gf = 0;
    if (!PyArg_ParseTupleAndKeywords(args, kw, "Li:bench_fma", kwlist, &iters, &reps)) return NULL;
    Py_BEGIN_ALLOW_THREADS
    st = gb_bench_fma(iters, reps, &gf, &bits);
    Py_END_ALLOW_THREADS
    if (st != GB_OK) return gb_raise_status(st);
    return Py_BuildValue("(di)", gf, bits);
}

PyMethodDef gb_bench_methods[] = {
    {"bench_bandwidth", (PyCFunction)(void (*)(void))py_bench_bandwidth, METH_VARARGS | METH_KEYWORDS,
     "bench_bandwidth(n, reps) -> (triad_gbs, read_gbs): float32 arrays of n elements, best of reps"},
    {"bench_fma", (PyCFunction)(void (*)(void))py_bench_fma, METH_VARARGS | METH_KEYWORDS,
     "bench_fma(iters, reps) -> (gflops, vector_bits): register-resident FMA loop on every thread"},
    {NULL, NULL, 0, NULL}};

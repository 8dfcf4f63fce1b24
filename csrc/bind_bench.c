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

static PyObject *py_bench_probe(PyObject *self, PyObject *args, PyObject *kw) {
    static char *kwlist[] = {"a", "b", "c", "reps", NULL};
    PyObject *ao, *bo, *co;
    int reps, st = GB_OK;
    double gbs = 0, rgbs = 0;
    PyArrayObject *a = NULL, *b = NULL, *c = NULL;
    PyObject *ret = NULL;
    if (!PyArg_ParseTupleAndKeywords(args, kw, "OOOi:bench_probe", kwlist, &ao, &bo, &co, &reps)) return NULL;
    if (!(a = gb_array(ao, "a", NPY_FLOAT32, 1, GB_REQUIRE)) || !(b = gb_array(bo, "b", NPY_FLOAT32, 1, GB_REQUIRE)) ||
        !(c = gb_array(co, "c", NPY_FLOAT32, 1, GB_REQUIRE)))
        goto done;
    if (PyArray_DIM(b, 0) != PyArray_DIM(a, 0) || PyArray_DIM(c, 0) != PyArray_DIM(a, 0)) {
        PyErr_SetString(PyExc_ValueError, "`a`, `b` and `c` must have the same length");
        goto done;
    }
    if (!PyArray_ISWRITEABLE(a)) {
        PyErr_SetString(PyExc_ValueError, "`a` must be writeable (the triad writes it)");
        goto done;
    }
    Py_BEGIN_ALLOW_THREADS
    st = gb_bench_probe((float *)PyArray_DATA(a), (const float *)PyArray_DATA(b), (const float *)PyArray_DATA(c),
                        PyArray_DIM(a, 0), reps, &gbs, &rgbs);
    Py_END_ALLOW_THREADS
    if (st != GB_OK) {
        gb_raise_status(st);
        goto done;
    }
    ret = Py_BuildValue("(dd)", gbs, rgbs);
done:
    Py_XDECREF(a);
    Py_XDECREF(b);
    Py_XDECREF(c);
    return ret;
}

static PyObject *py_bench_read(PyObject *self, PyObject *args, PyObject *kw) {
    static char *kwlist[] = {"b", "reps", NULL};
    PyObject *bo;
    int reps, st = GB_OK;
    double rgbs = 0;
    PyArrayObject *b = NULL;
    if (!PyArg_ParseTupleAndKeywords(args, kw, "Oi:bench_read", kwlist, &bo, &reps)) return NULL;
    if (!(b = gb_array(bo, "b", NPY_FLOAT32, 1, GB_REQUIRE))) return NULL;
    Py_BEGIN_ALLOW_THREADS
    st = gb_bench_read((const float *)PyArray_DATA(b), PyArray_DIM(b, 0), reps, &rgbs);
    Py_END_ALLOW_THREADS
    Py_DECREF(b);
    if (st != GB_OK) return gb_raise_status(st);
    return PyFloat_FromDouble(rgbs);
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

static PyObject *py_bench_int8(PyObject *self, PyObject *args, PyObject *kw) {
    static char *kwlist[] = {"iters", "reps", "scales", NULL};
    long long iters;
    int reps, st, kind = 0, scales = 0;
    double g = 0;
    if (!PyArg_ParseTupleAndKeywords(args, kw, "Li|i:bench_int8", kwlist, &iters, &reps, &scales)) return NULL;
    Py_BEGIN_ALLOW_THREADS
    if (scales) {
        st = gb_bench_int8_scaled(iters, reps, scales, &g);
        kind = 2;
    } else
        st = gb_bench_int8(iters, reps, &g, &kind);
    Py_END_ALLOW_THREADS
    if (st != GB_OK) return gb_raise_status(st);
    return Py_BuildValue("(ds)", g, kind == 2 ? "vpdpbusd" : "vpmaddubsw");
}

PyMethodDef gb_bench_methods[] = {
    {"bench_bandwidth", (PyCFunction)(void (*)(void))py_bench_bandwidth, METH_VARARGS | METH_KEYWORDS,
     "bench_bandwidth(n, reps) -> (triad_gbs, read_gbs): float32 arrays of n elements, best of reps"},
    {"bench_probe", (PyCFunction)(void (*)(void))py_bench_probe, METH_VARARGS | METH_KEYWORDS,
     "bench_probe(a, b, c, reps) -> (triad_gbs, read_gbs): a = b + 3c, then a read of b and c, over caller-owned "
     "contiguous float32 arrays; best of reps each"},
    {"bench_read", (PyCFunction)(void (*)(void))py_bench_read, METH_VARARGS | METH_KEYWORDS,
     "bench_read(b, reps) -> read_gbs: a read-only pass over a caller-owned contiguous float32 array "
     "(its halves as two streams), best of reps"},
    {"bench_fma", (PyCFunction)(void (*)(void))py_bench_fma, METH_VARARGS | METH_KEYWORDS,
     "bench_fma(iters, reps) -> (gflops, vector_bits): register-resident FMA loop on every thread"},
    {"bench_int8", (PyCFunction)(void (*)(void))py_bench_int8, METH_VARARGS | METH_KEYWORDS,
     "bench_int8(iters, reps) -> (gops, instruction): register-resident int8 dot-product loop on every thread; "
     "instruction 'vpdpbusd' (AVX-512 VNNI: 16 chains x 64 multiply-adds per iteration) or 'vpmaddubsw' (AVX2: "
     "vpmaddubsw + vpmaddwd + vpaddd, 12 chains x 32 per iteration); ValueError with neither. scales=S (1..8, "
     "AVX-512 VNNI only): S vpmulld + vpaddd per 16 vpdpbusd beside them, the K-quant prefill tile's scale "
     "multiplies; GOP/s of the vpdpbusd work only (the tile's ceiling)"},
    {NULL, NULL, 0, NULL}};

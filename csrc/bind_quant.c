/* bind_quant.c: Python bindings for quant.c (ggml q8_0 / q4_0 blocks and the quantized linear).
 * Same pattern as bind_norm.c. Formats are the GB_* ints of common.h; glmbench/quant.py maps names. */
#include "bind.h"
#include "quant.h"
#include "qgemm.h"

static int check_fmt(int fmt) {
    if (fmt != GB_Q8_0 && fmt != GB_Q4_0) {
        PyErr_Format(PyExc_ValueError, "`fmt` must be %d (q8_0) or %d (q4_0), got %d", GB_Q8_0, GB_Q4_0, fmt);
        return -1;
    }
    return 0;
}

static PyObject *py_quantize(PyObject *self, PyObject *args, PyObject *kw) {
    static char *kwlist[] = {"x", "fmt", NULL};
    PyObject *xo;
    int fmt;
    PyArrayObject *x = NULL, *q = NULL;
    PyObject *ret = NULL;
    if (!PyArg_ParseTupleAndKeywords(args, kw, "Oi:quantize", kwlist, &xo, &fmt)) return NULL;
    if (check_fmt(fmt) < 0) goto done;
    if (!(x = gb_array(xo, "x", NPY_FLOAT32, 2, GB_COPY))) goto done;
    const npy_intp R = PyArray_DIM(x, 0), K = PyArray_DIM(x, 1);
    if (K % GB_QK) {
        PyErr_Format(PyExc_ValueError, "`x` last axis must be a multiple of 32 (ggml blocks), got %ld", (long)K);
        goto done;
    }
    if (gb_check_finite(x, "x") < 0) goto done;
    npy_intp dims[2] = {R, (npy_intp)gb_row_bytes(fmt, K)};
    if (!(q = (PyArrayObject *)PyArray_SimpleNew(2, dims, NPY_UINT8))) goto done;
    int st;
    Py_BEGIN_ALLOW_THREADS
    st = gb_quantize_rows(fmt, (const float *)PyArray_DATA(x), PyArray_DATA(q), R, K);
    Py_END_ALLOW_THREADS
    if (st != GB_OK) {
        PyErr_Format(PyExc_ValueError, "`x` cannot be quantized: %s", gb_last_error());
        goto done;
    }
    ret = (PyObject *)q;
    q = NULL;
done:
    Py_XDECREF(x);
    Py_XDECREF(q);
    return ret;
}

static PyObject *py_dequantize(PyObject *self, PyObject *args, PyObject *kw) {
    static char *kwlist[] = {"q", "fmt", "k", NULL};
    PyObject *qo;
    int fmt;
    Py_ssize_t k;
    PyArrayObject *q = NULL, *y = NULL;
    PyObject *ret = NULL;
    if (!PyArg_ParseTupleAndKeywords(args, kw, "Oin:dequantize", kwlist, &qo, &fmt, &k)) return NULL;
    if (check_fmt(fmt) < 0) goto done;
    if (k <= 0 || k % GB_QK) {
        PyErr_Format(PyExc_ValueError, "`k` must be a positive multiple of 32, got %ld", (long)k);
        goto done;
    }
    if (!(q = gb_array(qo, "q", NPY_UINT8, 2, GB_COPY))) goto done;
    if (gb_check_dim(q, "q", 1, (npy_intp)gb_row_bytes(fmt, k), "the bytes of one row of k elements") < 0) goto done;
    npy_intp dims[2] = {PyArray_DIM(q, 0), k};
    if (!(y = gb_new_f32(2, dims))) goto done;
    int st;
    Py_BEGIN_ALLOW_THREADS
    st = gb_dequantize_rows(fmt, PyArray_DATA(q), (float *)PyArray_DATA(y), dims[0], k);
    Py_END_ALLOW_THREADS
    ret = gb_result(st, &y);
done:
    Py_XDECREF(q);
    Py_XDECREF(y);
    return ret;
}

static int check_k32(npy_intp k) {
    if (k <= 0 || k % GB_QK) {
        PyErr_Format(PyExc_ValueError, "`k` must be a positive multiple of 32, got %ld", (long)k);
        return -1;
    }
    return 0;
}

static PyObject *py_qlinear(PyObject *self, PyObject *args, PyObject *kw) {
    static char *kwlist[] = {"x", "w", "fmt", "k", "bias", "compute", "version", NULL};
    PyObject *xo, *wo, *bo = Py_None;
    int fmt, compute = GB_QC_AUTO, version = GB_QV_AUTO;
    Py_ssize_t k;
    PyArrayObject *x = NULL, *w = NULL, *b = NULL, *y = NULL;
    PyObject *ret = NULL;
    if (!PyArg_ParseTupleAndKeywords(args, kw, "OOin|Oii:qlinear", kwlist, &xo, &wo, &fmt, &k, &bo, &compute, &version))
        return NULL;
    if (check_fmt(fmt) < 0) goto done;
    if (gb_packed_linear_args(xo, wo, bo, fmt, k, check_k32, gb_row_bytes, &x, &w, &b, &y) < 0) goto done;
    const npy_intp T = PyArray_DIM(x, 0), N = PyArray_DIM(w, 0);
    int st;
    Py_BEGIN_ALLOW_THREADS
    st = gb_qlinear(fmt, (const float *)PyArray_DATA(x), PyArray_DATA(w), b ? (const float *)PyArray_DATA(b) : NULL,
                    (float *)PyArray_DATA(y), T, N, k, compute, version);
    Py_END_ALLOW_THREADS
    ret = gb_result(st, &y);
done:
    Py_XDECREF(x);
    Py_XDECREF(w);
    Py_XDECREF(b);
    Py_XDECREF(y);
    return ret;
}

static PyObject *py_qversions(PyObject *self, PyObject *noargs) {
    return gb_versions_dict(GB_QV_COUNT, gb_qversion_available, gb_qversion_name);
}

/* w uint8 [..., N, row_bytes] -> packed uint8 [..., gb_qpacked_bytes] (unpack=1: the inverse, n given) */
static PyObject *repack_impl(PyObject *args, PyObject *kw, int unpack) {
    static char *kwlist[] = {"w", "fmt", "k", "n", NULL};
    PyObject *wo;
    int fmt;
    Py_ssize_t k, n = -1;
    PyArrayObject *w = NULL, *p = NULL;
    PyObject *ret = NULL;
    if (!PyArg_ParseTupleAndKeywords(args, kw, unpack ? "Oinn:qunpack" : "Oin|n:qrepack", kwlist, &wo, &fmt, &k, &n)) return NULL;
    if (check_fmt(fmt) < 0) return NULL;
    if (k <= 0 || k % GB_QK) {
        PyErr_Format(PyExc_ValueError, "`k` must be a positive multiple of 32, got %ld", (long)k);
        return NULL;
    }
    if (!(w = gb_array(wo, unpack ? "packed" : "w", NPY_UINT8, -1, GB_COPY))) goto done;
    const int nd = PyArray_NDIM(w);
    if (nd < (unpack ? 1 : 2)) {
        PyErr_Format(PyExc_ValueError, "`%s` must have at least %d dimensions, got %d", unpack ? "packed" : "w", unpack ? 1 : 2, nd);
        goto done;
    }
    npy_intp dims[NPY_MAXDIMS];
    int64_t batch = 1;
    if (!unpack) {
        if (gb_check_dim(w, "w", nd - 1, (npy_intp)gb_row_bytes(fmt, k), "the bytes of one row of k elements") < 0) goto done;
        n = PyArray_DIM(w, nd - 2);
        for (int i = 0; i < nd - 2; i++) { dims[i] = PyArray_DIM(w, i); batch *= dims[i]; }
        dims[nd - 2] = (npy_intp)gb_qpacked_bytes(fmt, n, k);
        if (!(p = gb_new_u8_aligned(nd - 1, dims))) goto done;
    } else {
        if (n < 0) { PyErr_Format(PyExc_ValueError, "`n` must be >= 0, got %ld", (long)n); goto done; }
        if (gb_check_dim(w, "packed", nd - 1, (npy_intp)gb_qpacked_bytes(fmt, n, k), "the packed bytes of an n x k matrix") < 0) goto done;
        for (int i = 0; i < nd - 1; i++) { dims[i] = PyArray_DIM(w, i); batch *= dims[i]; }
        dims[nd - 1] = n;
        dims[nd] = (npy_intp)gb_row_bytes(fmt, k);
        if (!(p = (PyArrayObject *)PyArray_SimpleNew(nd + 1, dims, NPY_UINT8))) goto done;
    }
    const int64_t pb = gb_qpacked_bytes(fmt, n, k), rb = n * gb_row_bytes(fmt, k);
    int st = GB_OK;
    Py_BEGIN_ALLOW_THREADS
    for (int64_t i = 0; i < batch && st == GB_OK; i++) {
        if (unpack) st = gb_qunpack(fmt, (const char *)PyArray_DATA(w) + i * pb, (char *)PyArray_DATA(p) + i * rb, n, k);
        else st = gb_qrepack(fmt, (const char *)PyArray_DATA(w) + i * rb, (char *)PyArray_DATA(p) + i * pb, n, k);
    }
    Py_END_ALLOW_THREADS
    ret = gb_result(st, &p);
done:
    Py_XDECREF(w);
    Py_XDECREF(p);
    return ret;
}

static PyObject *py_qrepack(PyObject *self, PyObject *args, PyObject *kw) { return repack_impl(args, kw, 0); }
static PyObject *py_qunpack(PyObject *self, PyObject *args, PyObject *kw) { return repack_impl(args, kw, 1); }

static PyObject *py_qgemm(PyObject *self, PyObject *args, PyObject *kw) {
    static char *kwlist[] = {"x", "packed", "fmt", "n", "k", "bias", "version", NULL};
    PyObject *xo, *po, *bo = Py_None;
    int fmt, version = GB_QG_AUTO;
    Py_ssize_t n, k;
    PyArrayObject *x = NULL, *p = NULL, *b = NULL, *y = NULL;
    PyObject *ret = NULL;
    if (!PyArg_ParseTupleAndKeywords(args, kw, "OOinn|Oi:qgemm", kwlist, &xo, &po, &fmt, &n, &k, &bo, &version)) return NULL;
    if (check_fmt(fmt) < 0) goto done;
    if (k <= 0 || k % GB_QK || n < 0) {
        PyErr_Format(PyExc_ValueError, "`k` must be a positive multiple of 32 and `n` >= 0, got k=%ld, n=%ld", (long)k, (long)n);
        goto done;
    }
    if (gb_repacked_linear_args(xo, po, bo, n, k, (npy_intp)gb_qpacked_bytes(fmt, n, k), &x, &p, &b, &y) < 0) goto done;
    const npy_intp T = PyArray_DIM(x, 0);
    int st;
    Py_BEGIN_ALLOW_THREADS
    st = gb_qgemm(fmt, (const float *)PyArray_DATA(x), PyArray_DATA(p), b ? (const float *)PyArray_DATA(b) : NULL,
                  (float *)PyArray_DATA(y), T, n, k, version);
    Py_END_ALLOW_THREADS
    ret = gb_result(st, &y);
done:
    Py_XDECREF(x);
    Py_XDECREF(p);
    Py_XDECREF(b);
    Py_XDECREF(y);
    return ret;
}

static PyObject *py_qmoe(PyObject *self, PyObject *args, PyObject *kw) {
    static char *kwlist[] = {"x", "topk_idx", "topk_weight", "gate", "up", "down", "fmt", "f", "version", NULL};
    PyObject *xo, *io, *wo, *go, *uo, *dno;
    int fmt, version = GB_QG_AUTO;
    Py_ssize_t F;
    gb_packed_moe a = {0};
    PyArrayObject *y = NULL, *cnt = NULL;
    PyObject *ret = NULL;
    if (!PyArg_ParseTupleAndKeywords(args, kw, "OOOOOOin|i:qmoe", kwlist, &xo, &io, &wo, &go, &uo, &dno, &fmt, &F, &version))
        return NULL;
    if (check_fmt(fmt) < 0) goto done;
    if (gb_packed_moe_arrays(&a, xo, io, wo, go, uo, dno) < 0) goto done;
    const npy_intp T = PyArray_DIM(a.x, 0), D = PyArray_DIM(a.x, 1), K = PyArray_DIM(a.idx, 1), E = PyArray_DIM(a.g, 0);
    if (D % GB_QK || F <= 0 || F % GB_QK) {
        PyErr_Format(PyExc_ValueError, "`x` width %ld and `f` %ld must be positive multiples of 32", (long)D, (long)F);
        goto done;
    }
    if (gb_packed_moe_check(&a, (npy_intp)gb_qpacked_bytes(fmt, F, D), (npy_intp)gb_qpacked_bytes(fmt, F, D),
                            (npy_intp)gb_qpacked_bytes(fmt, D, F), "the packed bytes") < 0)
        goto done;
    if (gb_moe_outputs(T, D, E, &y, &cnt) < 0) goto done;
    int st;
    Py_BEGIN_ALLOW_THREADS
    st = gb_qmoe(fmt, (const float *)PyArray_DATA(a.x), (const int64_t *)PyArray_DATA(a.idx), (const float *)PyArray_DATA(a.wt), T, K,
                 PyArray_DATA(a.g), PyArray_DATA(a.u), PyArray_DATA(a.dn), E, F, D, (float *)PyArray_DATA(y),
                 (int64_t *)PyArray_DATA(cnt), version);
    Py_END_ALLOW_THREADS
    ret = gb_moe_result(st, y, cnt);
done:
    gb_packed_moe_release(&a);
    Py_XDECREF(y);
    Py_XDECREF(cnt);
    return ret;
}

static PyObject *py_qgemm_versions(PyObject *self, PyObject *noargs) {
    return gb_versions_dict(GB_QG_COUNT, gb_qgemm_available, gb_qgemm_name);
}

PyMethodDef gb_quant_methods[] = {
    {"quantize", (PyCFunction)(void (*)(void))py_quantize, METH_VARARGS | METH_KEYWORDS,
     "quantize(x[R, K] f32, fmt) -> uint8[R, row_bytes] (ggml q8_0 / q4_0 blocks)"},
    {"dequantize", (PyCFunction)(void (*)(void))py_dequantize, METH_VARARGS | METH_KEYWORDS,
     "dequantize(q[R, row_bytes] uint8, fmt, k) -> f32[R, k]"},
    {"qlinear", (PyCFunction)(void (*)(void))py_qlinear, METH_VARARGS | METH_KEYWORDS,
     "qlinear(x[T, K] f32, w[N, row_bytes] uint8, fmt, k, bias=None, compute=0, version=0) -> f32[T, N]"},
    {"qrepack", (PyCFunction)(void (*)(void))py_qrepack, METH_VARARGS | METH_KEYWORDS,
     "qrepack(w[..., N, row_bytes] uint8, fmt, k) -> uint8[..., packed_bytes] (16-row interleaved, csrc/qgemm.h)"},
    {"qunpack", (PyCFunction)(void (*)(void))py_qunpack, METH_VARARGS | METH_KEYWORDS,
     "qunpack(packed[..., packed_bytes] uint8, fmt, k, n) -> uint8[..., n, row_bytes] (the ggml bytes)"},
    {"qgemm", (PyCFunction)(void (*)(void))py_qgemm, METH_VARARGS | METH_KEYWORDS,
     "qgemm(x[T, K] f32, packed uint8, fmt, n, k, bias=None, version=0) -> f32[T, n]"},
    {"qmoe", (PyCFunction)(void (*)(void))py_qmoe, METH_VARARGS | METH_KEYWORDS,
     "qmoe(x[T, D], topk_idx[T, k] int64, topk_weight[T, k] f32, gate[E, pb], up, down, fmt, f, version=0) -> (y, counts)"},
    {"qgemm_versions", py_qgemm_versions, METH_NOARGS, "qgemm_versions() -> {kernel name: compiled in}"},
    {"qversions", py_qversions, METH_NOARGS, "qversions() -> {kernel name: compiled in}"},
    {NULL, NULL, 0, NULL}};

/* bind_quant.c: Python bindings for quant.c (ggml q8_0 / q4_0 blocks and the quantized linear).
 * Same pattern as bind_norm.c. Formats are the GB_* ints of common.h; glmbench/quant.py maps names. */
#include "bind.h"
#include "quant.h"

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
    if (!(x = gb_array(xo, "x", NPY_FLOAT32, 2, GB_COPY))) goto done;
    if (!(w = gb_array(wo, "weight", NPY_UINT8, 2, GB_COPY))) goto done;
    if (gb_check_dim(x, "x", 1, k, "the weight's in_features") < 0) goto done;
    if (k <= 0 || k % GB_QK) {
        PyErr_Format(PyExc_ValueError, "`k` must be a positive multiple of 32, got %ld", (long)k);
        goto done;
    }
    if (gb_check_dim(w, "weight", 1, (npy_intp)gb_row_bytes(fmt, k), "the bytes of one row of k elements") < 0) goto done;
    const npy_intp T = PyArray_DIM(x, 0), N = PyArray_DIM(w, 0);
    if (bo != Py_None) {
        if (!(b = gb_array(bo, "bias", NPY_FLOAT32, 1, GB_COPY))) goto done;
        if (gb_check_dim(b, "bias", 0, N, "the weight's out_features") < 0) goto done;
    }
    if (gb_check_finite(x, "x") < 0) goto done;
    npy_intp dims[2] = {T, N};
    if (!(y = gb_new_f32(2, dims))) goto done;
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
    PyObject *d = PyDict_New();
    if (!d) return NULL;
    for (int v = 1; v < GB_QV_COUNT; v++) {
        PyObject *val = PyBool_FromLong(gb_qversion_available(v));
        if (PyDict_SetItemString(d, gb_qversion_name(v), val) < 0) {
            Py_DECREF(val);
            Py_DECREF(d);
            return NULL;
        }
        Py_DECREF(val);
    }
    return d;
}

PyMethodDef gb_quant_methods[] = {
    {"quantize", (PyCFunction)(void (*)(void))py_quantize, METH_VARARGS | METH_KEYWORDS,
     "quantize(x[R, K] f32, fmt) -> uint8[R, row_bytes] (ggml q8_0 / q4_0 blocks)"},
    {"dequantize", (PyCFunction)(void (*)(void))py_dequantize, METH_VARARGS | METH_KEYWORDS,
     "dequantize(q[R, row_bytes] uint8, fmt, k) -> f32[R, k]"},
    {"qlinear", (PyCFunction)(void (*)(void))py_qlinear, METH_VARARGS | METH_KEYWORDS,
     "qlinear(x[T, K] f32, w[N, row_bytes] uint8, fmt, k, bias=None, compute=0, version=0) -> f32[T, N]"},
    {"qversions", py_qversions, METH_NOARGS, "qversions() -> {kernel name: compiled in}"},
    {NULL, NULL, 0, NULL}};

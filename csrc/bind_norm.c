/* bind_norm.c: Python bindings for norm.c. The pattern every bind_<family>.c follows:
 * parse -> gb_array checks (dtype, ndim, contiguity; named in errors) -> shape and NaN checks ->
 * allocate output -> release the GIL around the C call -> gb_result (status to exception, or the output). Owned references
 * start NULL and one `done:` label releases them all. */
#include "bind.h"
#include "norm.h"

static PyObject *py_rms_norm(PyObject *self, PyObject *args, PyObject *kw) {
    static char *kwlist[] = {"x", "weight", "eps", NULL};
    PyObject *xo, *wo;
    double eps;
    PyArrayObject *x = NULL, *w = NULL, *y = NULL;
    PyObject *ret = NULL;
    if (!PyArg_ParseTupleAndKeywords(args, kw, "OOd:rms_norm", kwlist, &xo, &wo, &eps)) return NULL;
    if (!(x = gb_array(xo, "x", NPY_FLOAT32, 2, GB_COPY))) goto done;
    if (!(w = gb_array(wo, "weight", NPY_FLOAT32, 1, GB_COPY))) goto done;
    if (gb_check_dim(w, "weight", 0, PyArray_DIM(x, 1), "x.shape[1]") < 0) goto done;
    if (gb_check_finite(x, "x") < 0) goto done;
    if (!(y = gb_new_f32(2, PyArray_DIMS(x)))) goto done;
    int st;
    Py_BEGIN_ALLOW_THREADS
    st = gb_rms_norm((const float *)PyArray_DATA(x), (const float *)PyArray_DATA(w), (float *)PyArray_DATA(y),
                     PyArray_DIM(x, 0), PyArray_DIM(x, 1), (float)eps);
    Py_END_ALLOW_THREADS
    ret = gb_result(st, &y);
done:
    Py_XDECREF(x);
    Py_XDECREF(w);
    Py_XDECREF(y);
    return ret;
}

static PyObject *py_layer_norm(PyObject *self, PyObject *args, PyObject *kw) {
    static char *kwlist[] = {"x", "weight", "eps", NULL};
    PyObject *xo, *wo;
    double eps;
    PyArrayObject *x = NULL, *w = NULL, *y = NULL;
    PyObject *ret = NULL;
    if (!PyArg_ParseTupleAndKeywords(args, kw, "OOd:layer_norm", kwlist, &xo, &wo, &eps)) return NULL;
    if (!(x = gb_array(xo, "x", NPY_FLOAT32, 2, GB_COPY))) goto done;
    if (!(w = gb_array(wo, "weight", NPY_FLOAT32, 2, GB_COPY))) goto done;
    if (gb_check_dim(w, "weight", 1, PyArray_DIM(x, 1), "x.shape[1]") < 0) goto done;
    if (PyArray_DIM(w, 0) < 1 || PyArray_DIM(x, 0) % PyArray_DIM(w, 0)) {
        PyErr_Format(PyExc_ValueError, "`weight` has %ld rows: x.shape[0] = %ld must be a multiple of them",
                     (long)PyArray_DIM(w, 0), (long)PyArray_DIM(x, 0));
        goto done;
    }
    if (gb_check_finite(x, "x") < 0) goto done;
    if (!(y = gb_new_f32(2, PyArray_DIMS(x)))) goto done;
    int st;
    Py_BEGIN_ALLOW_THREADS
    st = gb_layer_norm((const float *)PyArray_DATA(x), (const float *)PyArray_DATA(w), (float *)PyArray_DATA(y),
                       PyArray_DIM(x, 0), PyArray_DIM(x, 1), PyArray_DIM(w, 0), (float)eps);
    Py_END_ALLOW_THREADS
    ret = gb_result(st, &y);
done:
    Py_XDECREF(x);
    Py_XDECREF(w);
    Py_XDECREF(y);
    return ret;
}

PyMethodDef gb_norm_methods[] = {
    {"rms_norm", (PyCFunction)(void (*)(void))py_rms_norm, METH_VARARGS | METH_KEYWORDS,
     "rms_norm(x[T, D] f32, weight[D] f32, eps) -> y[T, D] f32"},
    {"layer_norm", (PyCFunction)(void (*)(void))py_layer_norm, METH_VARARGS | METH_KEYWORDS,
     "layer_norm(x[T, D] f32, weight[G, D] f32, eps) -> y[T, D] f32 (row t takes weight row t % G)"},
    {NULL, NULL, 0, NULL}};

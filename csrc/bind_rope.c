/* bind_rope.c: Python bindings for rope.c (see bind_norm.c for the pattern). */
#include "bind.h"
#include "rope.h"

static PyObject *py_rope(PyObject *self, PyObject *args, PyObject *kw) {
    static char *kwlist[] = {"x", "positions", "theta", "rot_dim", "rot_offset", "layout", "inv_freq",
                             "attention_factor", NULL};
    PyObject *xo, *po, *fo = Py_None;
    double theta, attention_factor = 1.0;
    long long rot_dim, rot_off;
    int layout;
    PyArrayObject *x = NULL, *p = NULL, *f = NULL, *y = NULL;
    PyObject *ret = NULL;
    if (!PyArg_ParseTupleAndKeywords(args, kw, "OOdLLi|Od:rope", kwlist, &xo, &po, &theta, &rot_dim, &rot_off,
                                     &layout, &fo, &attention_factor))
        return NULL;
    if (!(x = gb_array(xo, "x", NPY_FLOAT32, 3, GB_COPY))) goto done;
    if (!(p = gb_array(po, "positions", NPY_INT64, 1, GB_COPY))) goto done;
    if (gb_check_dim(p, "positions", 0, PyArray_DIM(x, 0), "x.shape[0] (tokens)") < 0) goto done;
    if (gb_check_finite(x, "x") < 0) goto done;
    if (fo != Py_None) {
        if (!(f = gb_array(fo, "inv_freq", NPY_FLOAT64, 1, GB_COPY))) goto done;
        if (gb_check_dim(f, "inv_freq", 0, (npy_intp)(rot_dim / 2), "rot_dim/2 (one frequency per pair)") < 0)
            goto done;
        if (gb_check_finite(f, "inv_freq") < 0) goto done;
    }
    if (!(y = gb_new_f32(3, PyArray_DIMS(x)))) goto done;
    int st;
    const double *inv_freq = f ? (const double *)PyArray_DATA(f) : NULL;
    Py_BEGIN_ALLOW_THREADS
    st = gb_rope((const float *)PyArray_DATA(x), (float *)PyArray_DATA(y), (const int64_t *)PyArray_DATA(p),
                 PyArray_DIM(x, 0), PyArray_DIM(x, 1), PyArray_DIM(x, 2), theta, rot_dim, rot_off, layout, inv_freq,
                 attention_factor);
    Py_END_ALLOW_THREADS
    ret = gb_result(st, &y);
done:
    Py_XDECREF(x);
    Py_XDECREF(p);
    Py_XDECREF(f);
    Py_XDECREF(y);
    return ret;
}

PyMethodDef gb_rope_methods[] = {
    {"rope", (PyCFunction)(void (*)(void))py_rope, METH_VARARGS | METH_KEYWORDS,
     "rope(x[T, H, Dh] f32, positions[T] i64, theta, rot_dim, rot_offset, layout 0|1, inv_freq=None "
     "[rot_dim/2] f64, attention_factor=1.0) -> [T, H, Dh] f32"},
    {NULL, NULL, 0, NULL}};

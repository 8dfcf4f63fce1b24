/* bind_linear_attn.c: Python bindings for linear_attn.c (see bind_norm.c for the pattern). Both ops
 * return a tuple (output, new state); the state passed in is read, never written. */
#include "bind.h"
#include "linear_attn.h"

/* ValueError "`state` must be [Hv, dk, dv] = (4, 8, 16), got shape (4, 8, 15)" unless arr has the
 * shape dims[0, nd) (its rank is already checked); `axes` names the axes. */
static int want_shape(PyArrayObject *arr, const char *name, const char *axes, int nd, const npy_intp *dims) {
    int ok = PyArray_NDIM(arr) == nd;
    for (int i = 0; ok && i < nd; i++) ok = PyArray_DIM(arr, i) == dims[i];
    if (ok) return 0;
    char want[128] = "(", got[128];
    for (int i = 0; i < nd; i++) {
        size_t n = strlen(want);
        snprintf(want + n, sizeof want - n, i + 1 < nd ? "%ld, " : (nd == 1 ? "%ld,)" : "%ld)"), (long)dims[i]);
    }
    PyErr_Format(PyExc_ValueError, "`%s` must be %s = %s, got shape %s", name, axes, want, gb_shape_str(arr, got, sizeof got));
    return -1;
}

static PyObject *py_gated_delta_rule(PyObject *self, PyObject *args, PyObject *kw) {
    static char *kwlist[] = {"q", "k", "v", "g", "beta", "state", "scale", "qk_l2norm", "l2_eps", NULL};
    PyObject *qo, *ko, *vo, *go, *bo, *so;
    double scale, l2_eps;
    int l2norm;
    PyArrayObject *q = NULL, *k = NULL, *v = NULL, *g = NULL, *b = NULL, *s = NULL, *o = NULL, *ns = NULL;
    PyObject *ret = NULL;
    if (!PyArg_ParseTupleAndKeywords(args, kw, "OOOOOOdpd:gated_delta_rule", kwlist, &qo, &ko, &vo, &go, &bo, &so, &scale,
                                     &l2norm, &l2_eps))
        return NULL;
    if (!(q = gb_array(qo, "q", NPY_FLOAT32, 3, GB_COPY))) goto done;
    if (!(k = gb_array(ko, "k", NPY_FLOAT32, 3, GB_COPY))) goto done;
    if (!(v = gb_array(vo, "v", NPY_FLOAT32, 3, GB_COPY))) goto done;
    if (!(g = gb_array(go, "g", NPY_FLOAT32, 2, GB_COPY))) goto done;
    if (!(b = gb_array(bo, "beta", NPY_FLOAT32, 2, GB_COPY))) goto done;
    const npy_intp T = PyArray_DIM(q, 0), Hk = PyArray_DIM(q, 1), dk = PyArray_DIM(q, 2);
    const npy_intp Hv = PyArray_DIM(v, 1), dv = PyArray_DIM(v, 2);
    if (want_shape(k, "k", "[T, Hk, dk] as q", 3, PyArray_DIMS(q)) < 0) goto done;
    if (gb_check_dim(v, "v", 0, T, "q.shape[0] (tokens)") < 0) goto done;
    if (Hk < 1 || Hv % Hk) {
        char sq[128], sv[128];
        PyErr_Format(PyExc_ValueError, "`v` has %ld heads: they must be a multiple of q and k's %ld heads (q %s, v %s)",
                     (long)Hv, (long)Hk, gb_shape_str(q, sq, sizeof sq), gb_shape_str(v, sv, sizeof sv));
        goto done;
    }
    const npy_intp tv[2] = {T, Hv};
    if (want_shape(g, "g", "[T, Hv]", 2, tv) < 0) goto done;
    if (want_shape(b, "beta", "[T, Hv]", 2, tv) < 0) goto done;
    const npy_intp sdims[3] = {Hv, dk, dv}, odims[3] = {T, Hv, dv};
    if (so != Py_None) {
        if (!(s = gb_array(so, "state", NPY_FLOAT32, 3, GB_COPY))) goto done;
        if (want_shape(s, "state", "[Hv, dk, dv]", 3, sdims) < 0) goto done;
    }
    if (gb_check_finite(q, "q") < 0 || gb_check_finite(k, "k") < 0 || gb_check_finite(v, "v") < 0 ||
        gb_check_finite(g, "g") < 0 || gb_check_finite(b, "beta") < 0 || (s && gb_check_finite(s, "state") < 0))
        goto done;
    if (!(o = gb_new_f32(3, odims))) goto done;
    if (!(ns = gb_new_f32(3, sdims))) goto done;
    int st;
    Py_BEGIN_ALLOW_THREADS
    st = gb_gated_delta_rule((const float *)PyArray_DATA(q), (const float *)PyArray_DATA(k), (const float *)PyArray_DATA(v),
                             (const float *)PyArray_DATA(g), (const float *)PyArray_DATA(b),
                             s ? (const float *)PyArray_DATA(s) : NULL, (float *)PyArray_DATA(o), (float *)PyArray_DATA(ns),
                             T, Hk, Hv, dk, dv, (float)scale, l2norm, (float)l2_eps);
    Py_END_ALLOW_THREADS
    ret = st != GB_OK ? gb_raise_status(st) : Py_BuildValue("(OO)", o, ns);
done:
    Py_XDECREF(q);
    Py_XDECREF(k);
    Py_XDECREF(v);
    Py_XDECREF(g);
    Py_XDECREF(b);
    Py_XDECREF(s);
    Py_XDECREF(o);
    Py_XDECREF(ns);
    return ret;
}

static PyObject *py_causal_conv1d(PyObject *self, PyObject *args, PyObject *kw) {
    static char *kwlist[] = {"x", "weight", "state", "silu", NULL};
    PyObject *xo, *wo, *so;
    int silu;
    PyArrayObject *x = NULL, *w = NULL, *s = NULL, *y = NULL, *ns = NULL;
    PyObject *ret = NULL;
    if (!PyArg_ParseTupleAndKeywords(args, kw, "OOOp:causal_conv1d", kwlist, &xo, &wo, &so, &silu)) return NULL;
    if (!(x = gb_array(xo, "x", NPY_FLOAT32, 2, GB_COPY))) goto done;
    if (!(w = gb_array(wo, "weight", NPY_FLOAT32, 2, GB_COPY))) goto done;
    const npy_intp T = PyArray_DIM(x, 0), C = PyArray_DIM(x, 1), K = PyArray_DIM(w, 1);
    if (gb_check_dim(w, "weight", 0, C, "x.shape[1] (channels)") < 0) goto done;
    if (K < 1) {
        char sw[128];
        PyErr_Format(PyExc_ValueError, "`weight` has shape %s: the kernel size (axis 1) must be >= 1",
                     gb_shape_str(w, sw, sizeof sw));
        goto done;
    }
    const npy_intp sdims[2] = {K - 1, C}, ydims[2] = {T, C};
    if (so != Py_None) {
        if (!(s = gb_array(so, "state", NPY_FLOAT32, 2, GB_COPY))) goto done;
        if (want_shape(s, "state", "[K-1, C]", 2, sdims) < 0) goto done;
    }
    if (gb_check_finite(x, "x") < 0 || gb_check_finite(w, "weight") < 0 || (s && gb_check_finite(s, "state") < 0)) goto done;
    if (!(y = gb_new_f32(2, ydims))) goto done;
    if (!(ns = gb_new_f32(2, sdims))) goto done;
    int st;
    Py_BEGIN_ALLOW_THREADS
    st = gb_causal_conv1d((const float *)PyArray_DATA(x), (const float *)PyArray_DATA(w),
                          s ? (const float *)PyArray_DATA(s) : NULL, (float *)PyArray_DATA(y), (float *)PyArray_DATA(ns), T, C,
                          K, silu);
    Py_END_ALLOW_THREADS
    ret = st != GB_OK ? gb_raise_status(st) : Py_BuildValue("(OO)", y, ns);
done:
    Py_XDECREF(x);
    Py_XDECREF(w);
    Py_XDECREF(s);
    Py_XDECREF(y);
    Py_XDECREF(ns);
    return ret;
}

PyMethodDef gb_linear_attn_methods[] = {
    {"gated_delta_rule", (PyCFunction)(void (*)(void))py_gated_delta_rule, METH_VARARGS | METH_KEYWORDS,
     "gated_delta_rule(q[T, Hk, dk] f32, k[T, Hk, dk] f32, v[T, Hv, dv] f32, g[T, Hv] f32, beta[T, Hv] f32, "
     "state[Hv, dk, dv] f32 or None, scale, qk_l2norm, l2_eps) -> (o[T, Hv, dv] f32, state[Hv, dk, dv] f32)"},
    {"causal_conv1d", (PyCFunction)(void (*)(void))py_causal_conv1d, METH_VARARGS | METH_KEYWORDS,
     "causal_conv1d(x[T, C] f32, weight[C, K] f32, state[K-1, C] f32 or None, silu) -> (y[T, C] f32, state[K-1, C] f32)"},
    {NULL, NULL, 0, NULL}};

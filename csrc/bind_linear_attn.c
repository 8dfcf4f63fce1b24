/* bind_linear_attn.c: Python bindings for linear_attn.c (see bind_norm.c for the pattern). Every op
 * returns a tuple (output, new state); the state passed in is read, never written. */
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
    static char *kwlist[] = {"x", "weight", "state", "silu", "bias", NULL};
    PyObject *xo, *wo, *so, *bo = Py_None;
    int silu;
    PyArrayObject *x = NULL, *w = NULL, *s = NULL, *b = NULL, *y = NULL, *ns = NULL;
    PyObject *ret = NULL;
    if (!PyArg_ParseTupleAndKeywords(args, kw, "OOOp|O:causal_conv1d", kwlist, &xo, &wo, &so, &silu, &bo)) return NULL;
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
    if (bo != Py_None) {
        if (!(b = gb_array(bo, "bias", NPY_FLOAT32, 1, GB_COPY))) goto done;
        if (want_shape(b, "bias", "[C]", 1, &C) < 0) goto done;
    }
    if (gb_check_finite(x, "x") < 0 || gb_check_finite(w, "weight") < 0 || (s && gb_check_finite(s, "state") < 0) ||
        (b && gb_check_finite(b, "bias") < 0))
        goto done;
    if (!(y = gb_new_f32(2, ydims))) goto done;
    if (!(ns = gb_new_f32(2, sdims))) goto done;
    int st;
    Py_BEGIN_ALLOW_THREADS
    st = gb_causal_conv1d((const float *)PyArray_DATA(x), (const float *)PyArray_DATA(w),
                          b ? (const float *)PyArray_DATA(b) : NULL, s ? (const float *)PyArray_DATA(s) : NULL,
                          (float *)PyArray_DATA(y), (float *)PyArray_DATA(ns), T, C, K, silu);
    Py_END_ALLOW_THREADS
    ret = st != GB_OK ? gb_raise_status(st) : Py_BuildValue("(OO)", y, ns);
done:
    Py_XDECREF(x);
    Py_XDECREF(w);
    Py_XDECREF(s);
    Py_XDECREF(b);
    Py_XDECREF(y);
    Py_XDECREF(ns);
    return ret;
}

/* An optional [H] float32 argument (D, dt_bias): NULL for None; 0, or -1 with the error set. */
static int opt_heads(PyObject *o, const char *name, npy_intp H, PyArrayObject **out) {
    if (o == Py_None) return 0;
    if (!(*out = gb_array(o, name, NPY_FLOAT32, 1, GB_COPY))) return -1;
    if (want_shape(*out, name, "[H]", 1, &H) < 0) return -1;
    return gb_check_finite(*out, name);
}

static PyObject *py_ssm_scan(PyObject *self, PyObject *args, PyObject *kw) {
    static char *kwlist[] = {"x", "dt", "A", "B", "C", "D", "state", "dt_bias", "dt_softplus", "dt_min", "dt_max", NULL};
    PyObject *xo, *dto, *ao, *bo, *co, *dso, *so, *dbo;
    int softplus;
    double dt_min, dt_max;
    PyArrayObject *x = NULL, *dt = NULL, *a = NULL, *b = NULL, *c = NULL, *dsk = NULL, *s = NULL, *db = NULL, *y = NULL,
                  *ns = NULL;
    PyObject *ret = NULL;
    if (!PyArg_ParseTupleAndKeywords(args, kw, "OOOOOOOOpdd:ssm_scan", kwlist, &xo, &dto, &ao, &bo, &co, &dso, &so, &dbo,
                                     &softplus, &dt_min, &dt_max))
        return NULL;
    if (!(x = gb_array(xo, "x", NPY_FLOAT32, 3, GB_COPY))) goto done;
    if (!(dt = gb_array(dto, "dt", NPY_FLOAT32, 2, GB_COPY))) goto done;
    if (!(a = gb_array(ao, "A", NPY_FLOAT32, 1, GB_COPY))) goto done;
    if (!(b = gb_array(bo, "B", NPY_FLOAT32, 3, GB_COPY))) goto done;
    if (!(c = gb_array(co, "C", NPY_FLOAT32, 3, GB_COPY))) goto done;
    const npy_intp T = PyArray_DIM(x, 0), H = PyArray_DIM(x, 1), P = PyArray_DIM(x, 2);
    const npy_intp G = PyArray_DIM(b, 1), N = PyArray_DIM(b, 2);
    const npy_intp th[2] = {T, H};
    if (want_shape(dt, "dt", "[T, H]", 2, th) < 0) goto done;
    if (want_shape(a, "A", "[H]", 1, &H) < 0) goto done;
    if (gb_check_dim(b, "B", 0, T, "x.shape[0] (tokens)") < 0) goto done;
    if (G < 1 || H % G) {
        char sx[128], sb[128];
        PyErr_Format(PyExc_ValueError, "`B` has %ld groups: x's %ld heads must be a multiple of them (x %s, B %s)", (long)G,
                     (long)H, gb_shape_str(x, sx, sizeof sx), gb_shape_str(b, sb, sizeof sb));
        goto done;
    }
    if (want_shape(c, "C", "[T, G, N] as B", 3, PyArray_DIMS(b)) < 0) goto done;
    if (opt_heads(dso, "D", H, &dsk) < 0 || opt_heads(dbo, "dt_bias", H, &db) < 0) goto done;
    const npy_intp sdims[3] = {H, P, N}, ydims[3] = {T, H, P};
    if (so != Py_None) {
        if (!(s = gb_array(so, "state", NPY_FLOAT32, 3, GB_COPY))) goto done;
        if (want_shape(s, "state", "[H, P, N]", 3, sdims) < 0) goto done;
    }
    if (gb_check_finite(x, "x") < 0 || gb_check_finite(dt, "dt") < 0 || gb_check_finite(a, "A") < 0 ||
        gb_check_finite(b, "B") < 0 || gb_check_finite(c, "C") < 0 || (s && gb_check_finite(s, "state") < 0))
        goto done;
    /* dt_min and dt_max are checked by the kernel */
    if (!(y = gb_new_f32(3, ydims))) goto done;
    if (!(ns = gb_new_f32(3, sdims))) goto done;
    int st;
    Py_BEGIN_ALLOW_THREADS
    st = gb_ssm_scan((const float *)PyArray_DATA(x), (const float *)PyArray_DATA(dt), (const float *)PyArray_DATA(a),
                     (const float *)PyArray_DATA(b), (const float *)PyArray_DATA(c),
                     dsk ? (const float *)PyArray_DATA(dsk) : NULL, db ? (const float *)PyArray_DATA(db) : NULL,
                     s ? (const float *)PyArray_DATA(s) : NULL, (float *)PyArray_DATA(y), (float *)PyArray_DATA(ns), T, H,
                     P, G, N, softplus, (float)dt_min, (float)dt_max);
    Py_END_ALLOW_THREADS
    ret = st != GB_OK ? gb_raise_status(st) : Py_BuildValue("(OO)", y, ns);
done:
    Py_XDECREF(x);
    Py_XDECREF(dt);
    Py_XDECREF(a);
    Py_XDECREF(b);
    Py_XDECREF(c);
    Py_XDECREF(dsk);
    Py_XDECREF(s);
    Py_XDECREF(db);
    Py_XDECREF(y);
    Py_XDECREF(ns);
    return ret;
}

PyMethodDef gb_linear_attn_methods[] = {
    {"gated_delta_rule", (PyCFunction)(void (*)(void))py_gated_delta_rule, METH_VARARGS | METH_KEYWORDS,
     "gated_delta_rule(q[T, Hk, dk] f32, k[T, Hk, dk] f32, v[T, Hv, dv] f32, g[T, Hv] f32, beta[T, Hv] f32, "
     "state[Hv, dk, dv] f32 or None, scale, qk_l2norm, l2_eps) -> (o[T, Hv, dv] f32, state[Hv, dk, dv] f32)"},
    {"causal_conv1d", (PyCFunction)(void (*)(void))py_causal_conv1d, METH_VARARGS | METH_KEYWORDS,
     "causal_conv1d(x[T, C] f32, weight[C, K] f32, state[K-1, C] f32 or None, silu, bias[C] f32 or None = None) -> "
     "(y[T, C] f32, state[K-1, C] f32)"},
    {"ssm_scan", (PyCFunction)(void (*)(void))py_ssm_scan, METH_VARARGS | METH_KEYWORDS,
     "ssm_scan(x[T, H, P] f32, dt[T, H] f32, A[H] f32, B[T, G, N] f32, C[T, G, N] f32, D[H] f32 or None, "
     "state[H, P, N] f32 or None, dt_bias[H] f32 or None, dt_softplus, dt_min, dt_max) -> (y[T, H, P] f32, "
     "state[H, P, N] f32)"},
    {NULL, NULL, 0, NULL}};

/* bind_moe.c: Python bindings for moe.c (see bind_norm.c for the pattern). */
#include "bind.h"
#include "moe.h"

static const int weight_types[] = {NPY_FLOAT32, NPY_FLOAT16, NPY_UINT16, -1};

static int weight_fmt(PyArrayObject *w) {
    switch (PyArray_TYPE(w)) {
    case NPY_FLOAT16: return GB_F16;
    case NPY_UINT16: return GB_BF16;
    default: return GB_F32;
    }
}

static PyObject *py_moe_route(PyObject *self, PyObject *args, PyObject *kw) {
    static char *kwlist[] = {"x", "router_weight", "top_k", "scoring", "bias", "n_group", "topk_group",
                             "group_score", "norm_topk_prob", "routed_scaling_factor", NULL};
    PyObject *xo, *wo, *bo = Py_None;
    long long top_k, n_group = 1, topk_group = 1;
    int scoring, group_score = -1, norm = 1;
    double scaling = 1.0;
    PyArrayObject *x = NULL, *w = NULL, *b = NULL, *idx = NULL, *wt = NULL;
    PyObject *ret = NULL;
    if (!PyArg_ParseTupleAndKeywords(args, kw, "OOLi|OLLipd:moe_route", kwlist, &xo, &wo, &top_k, &scoring, &bo,
                                     &n_group, &topk_group, &group_score, &norm, &scaling))
        return NULL;
    if (group_score < 0) /* not given: the rule of the scoring's model family */
        group_score = scoring == GB_SCORE_SOFTMAX ? GB_GROUP_MAX : GB_GROUP_TOP2_SUM;
    if (!(x = gb_array(xo, "x", NPY_FLOAT32, 2, GB_COPY))) goto done;
    if (!(w = gb_array(wo, "router_weight", NPY_FLOAT32, 2, GB_COPY))) goto done;
    if (gb_check_dim(w, "router_weight", 1, PyArray_DIM(x, 1), "x.shape[1] (hidden)") < 0) goto done;
    if (bo != Py_None) {
        if (!(b = gb_array(bo, "bias", NPY_FLOAT32, 1, GB_COPY))) goto done;
        if (gb_check_dim(b, "bias", 0, PyArray_DIM(w, 0), "router_weight.shape[0] (experts)") < 0) goto done;
        if (gb_check_finite(b, "bias") < 0) goto done;
    }
    if (gb_check_finite(x, "x") < 0) goto done;
    /* router_weight NaN/inf is detected from the logits inside gb_moe_route (cheaper) */
    npy_intp T = PyArray_DIM(x, 0), E = PyArray_DIM(w, 0);
    if (top_k < 1 || top_k > E) {
        PyErr_Format(PyExc_ValueError, "`top_k` must be in [1, n_experts=%ld], got %lld", (long)E, top_k);
        goto done;
    }
    npy_intp dims[2] = {T, (npy_intp)top_k};
    if (!(idx = (PyArrayObject *)PyArray_SimpleNew(2, dims, NPY_INT32))) goto done;
    if (!(wt = gb_new_f32(2, dims))) goto done;
    int st;
    Py_BEGIN_ALLOW_THREADS
    st = gb_moe_route((const float *)PyArray_DATA(x), T, PyArray_DIM(x, 1), (const float *)PyArray_DATA(w), E, top_k,
                      scoring, b ? (const float *)PyArray_DATA(b) : NULL, n_group, topk_group, group_score, norm, scaling,
                      (int32_t *)PyArray_DATA(idx), (float *)PyArray_DATA(wt));
    Py_END_ALLOW_THREADS
    if (st != GB_OK) {
        gb_raise_status(st);
        goto done;
    }
    ret = Py_BuildValue("(OO)", idx, wt);
done:
    Py_XDECREF(x);
    Py_XDECREF(w);
    Py_XDECREF(b);
    Py_XDECREF(idx);
    Py_XDECREF(wt);
    return ret;
}

static PyObject *py_moe_experts(PyObject *self, PyObject *args, PyObject *kw) {
    static char *kwlist[] = {"x", "topk_idx", "topk_weight", "w_gate", "w_up", "w_down", "shared", NULL};
    PyObject *xo, *io, *wo, *go, *uo, *dob, *so = Py_None;
    PyArrayObject *x = NULL, *idx = NULL, *wt = NULL, *g = NULL, *u = NULL, *d = NULL, *y = NULL, *cnt = NULL;
    PyArrayObject *sg = NULL, *su = NULL, *sd = NULL;
    gb_shared_expert shared, *shp = NULL;
    PyObject *ret = NULL;
    if (!PyArg_ParseTupleAndKeywords(args, kw, "OOOOOO|O:moe_experts", kwlist, &xo, &io, &wo, &go, &uo, &dob, &so))
        return NULL;
    if (!(x = gb_array(xo, "x", NPY_FLOAT32, 2, GB_COPY))) goto done;
    if (!(idx = gb_array(io, "topk_idx", NPY_INT32, 2, GB_COPY))) goto done;
    if (!(wt = gb_array(wo, "topk_weight", NPY_FLOAT32, 2, GB_COPY))) goto done;
    if (!(g = gb_array_any(go, "w_gate", weight_types, 3, GB_COPY))) goto done;
    if (!(u = gb_array_any(uo, "w_up", weight_types, 3, GB_COPY))) goto done;
    if (!(d = gb_array_any(dob, "w_down", weight_types, 3, GB_COPY))) goto done;
    npy_intp T = PyArray_DIM(x, 0), D = PyArray_DIM(x, 1), k = PyArray_DIM(idx, 1);
    npy_intp E = PyArray_DIM(g, 0), F = PyArray_DIM(g, 1);
    if (gb_check_dim(idx, "topk_idx", 0, T, "x.shape[0] (tokens)") < 0) goto done;
    if (gb_check_dim(wt, "topk_weight", 0, T, "x.shape[0] (tokens)") < 0) goto done;
    if (gb_check_dim(wt, "topk_weight", 1, k, "topk_idx.shape[1] (top_k)") < 0) goto done;
    if (gb_check_dim(g, "w_gate", 2, D, "x.shape[1] (hidden)") < 0) goto done;
    if (gb_check_dim(u, "w_up", 0, E, "w_gate.shape[0] (experts)") < 0) goto done;
    if (gb_check_dim(u, "w_up", 1, F, "w_gate.shape[1] (intermediate)") < 0) goto done;
    if (gb_check_dim(u, "w_up", 2, D, "x.shape[1] (hidden)") < 0) goto done;
    if (gb_check_dim(d, "w_down", 0, E, "w_gate.shape[0] (experts)") < 0) goto done;
    if (gb_check_dim(d, "w_down", 1, D, "x.shape[1] (hidden)") < 0) goto done;
    if (gb_check_dim(d, "w_down", 2, F, "w_gate.shape[1] (intermediate)") < 0) goto done;
    if (k < 1) {
        PyErr_Format(PyExc_ValueError, "`topk_idx` must have at least one column, got shape (%ld, %ld)", (long)T, (long)k);
        goto done;
    }
    if (so != Py_None) { /* (w_gate[Fs, D], w_up[Fs, D], w_down[D, Fs]) of the shared expert(s) */
        if (!PyTuple_Check(so) || PyTuple_GET_SIZE(so) != 3) {
            PyErr_Format(PyExc_TypeError, "`shared` must be None or a tuple (w_gate, w_up, w_down), got %s",
                         Py_TYPE(so)->tp_name);
            goto done;
        }
        if (!(sg = gb_array_any(PyTuple_GET_ITEM(so, 0), "shared w_gate", weight_types, 2, GB_COPY))) goto done;
        if (!(su = gb_array_any(PyTuple_GET_ITEM(so, 1), "shared w_up", weight_types, 2, GB_COPY))) goto done;
        if (!(sd = gb_array_any(PyTuple_GET_ITEM(so, 2), "shared w_down", weight_types, 2, GB_COPY))) goto done;
        const npy_intp Fs = PyArray_DIM(sg, 0);
        if (gb_check_dim(sg, "shared w_gate", 1, D, "x.shape[1] (hidden)") < 0) goto done;
        if (gb_check_dim(su, "shared w_up", 0, Fs, "shared w_gate.shape[0] (intermediate)") < 0) goto done;
        if (gb_check_dim(su, "shared w_up", 1, D, "x.shape[1] (hidden)") < 0) goto done;
        if (gb_check_dim(sd, "shared w_down", 0, D, "x.shape[1] (hidden)") < 0) goto done;
        if (gb_check_dim(sd, "shared w_down", 1, Fs, "shared w_gate.shape[0] (intermediate)") < 0) goto done;
        if (Fs < 1) {
            PyErr_SetString(PyExc_ValueError, "`shared` w_gate has no rows");
            goto done;
        }
        shared = (gb_shared_expert){PyArray_DATA(sg), PyArray_DATA(su), PyArray_DATA(sd), weight_fmt(sg),
                                    weight_fmt(su), weight_fmt(sd), Fs};
        shp = &shared;
    }
    if (gb_check_finite(x, "x") < 0) goto done;
    if (gb_check_finite(wt, "topk_weight") < 0) goto done;
    if (gb_moe_outputs(T, D, E, &y, &cnt) < 0) goto done;
    int st;
    Py_BEGIN_ALLOW_THREADS
    st = gb_moe_experts((const float *)PyArray_DATA(x), T, D, (const int32_t *)PyArray_DATA(idx),
                        (const float *)PyArray_DATA(wt), k, PyArray_DATA(g), weight_fmt(g), PyArray_DATA(u),
                        weight_fmt(u), PyArray_DATA(d), weight_fmt(d), E, F, shp, (float *)PyArray_DATA(y),
                        (int64_t *)PyArray_DATA(cnt));
    Py_END_ALLOW_THREADS
    ret = gb_moe_result(st, y, cnt);
done:
    Py_XDECREF(x);
    Py_XDECREF(idx);
    Py_XDECREF(wt);
    Py_XDECREF(g);
    Py_XDECREF(u);
    Py_XDECREF(d);
    Py_XDECREF(y);
    Py_XDECREF(cnt);
    Py_XDECREF(sg);
    Py_XDECREF(su);
    Py_XDECREF(sd);
    return ret;
}

PyMethodDef gb_moe_methods[] = {
    {"moe_route", (PyCFunction)(void (*)(void))py_moe_route, METH_VARARGS | METH_KEYWORDS,
     "moe_route(x[T, D] f32, router_weight[E, D] f32, top_k, scoring 0=sigmoid|1=softmax, bias[E] | None, "
     "n_group=1, topk_group=1, group_score 0=top2_sum|1=max (default: 0 for sigmoid, 1 for softmax), "
     "norm_topk_prob=True, routed_scaling_factor=1.0) -> (idx[T, k] i32, w[T, k] f32)"},
    {"moe_experts", (PyCFunction)(void (*)(void))py_moe_experts, METH_VARARGS | METH_KEYWORDS,
     "moe_experts(x[T, D] f32, topk_idx[T, k] i32, topk_weight[T, k] f32, w_gate[E, F, D], w_up[E, F, D], "
     "w_down[E, D, F], shared=None | (w_gate[Fs, D], w_up[Fs, D], w_down[D, Fs])) -> (y[T, D] f32, counts[E] i64); "
     "the shared expert is added with weight 1 after the routed ones"},
    {NULL, NULL, 0, NULL}};

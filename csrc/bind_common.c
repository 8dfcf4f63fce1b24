/* bind_common.c: argument checks and helpers more than one op family's bindings share (declared in bind.h). */
#include "bind.h"

#include <stdio.h>

PyObject *gb_versions_dict(int count, int (*available)(int), const char *(*name)(int)) {
    PyObject *d = PyDict_New();
    if (!d) return NULL;
    for (int v = 1; v < count; v++) {
        PyObject *val = PyBool_FromLong(available(v));
        if (PyDict_SetItemString(d, name(v), val) < 0) {
            Py_DECREF(val);
            Py_DECREF(d);
            return NULL;
        }
        Py_DECREF(val);
    }
    return d;
}

int gb_packed_linear_args(PyObject *xo, PyObject *wo, PyObject *bo, int fmt, npy_intp k, int (*check_k)(npy_intp k),
                          int64_t (*row_bytes)(int fmt, int64_t k), PyArrayObject **x, PyArrayObject **w, PyArrayObject **b,
                          PyArrayObject **y) {
    if (!(*x = gb_array(xo, "x", NPY_FLOAT32, 2, GB_COPY))) return -1;
    if (!(*w = gb_array(wo, "weight", NPY_UINT8, 2, GB_COPY))) return -1;
    if (gb_check_dim(*x, "x", 1, k, "the weight's in_features") < 0) return -1;
    if (check_k && check_k(k) < 0) return -1;
    if (gb_check_dim(*w, "weight", 1, (npy_intp)row_bytes(fmt, k), "the bytes of one row of k elements") < 0) return -1;
    const npy_intp T = PyArray_DIM(*x, 0), N = PyArray_DIM(*w, 0);
    if (bo != Py_None) {
        if (!(*b = gb_array(bo, "bias", NPY_FLOAT32, 1, GB_COPY))) return -1;
        if (gb_check_dim(*b, "bias", 0, N, "the weight's out_features") < 0) return -1;
        if (gb_check_finite(*b, "bias") < 0) return -1; /* as glmbench.linear's float weights (bind_linear.c) */
    }
    if (gb_check_finite(*x, "x") < 0) return -1;
    npy_intp dims[2] = {T, N};
    if (!(*y = gb_new_f32(2, dims))) return -1;
    return 0;
}

int gb_packed_moe_arrays(gb_packed_moe *a, PyObject *xo, PyObject *io, PyObject *wo, PyObject *go, PyObject *uo, PyObject *dno) {
    if (!(a->x = gb_array(xo, "x", NPY_FLOAT32, 2, GB_COPY))) return -1;
    if (!(a->idx = gb_array(io, "topk_idx", NPY_INT64, 2, GB_COPY))) return -1;
    if (!(a->wt = gb_array(wo, "topk_weight", NPY_FLOAT32, 2, GB_COPY))) return -1;
    if (!(a->g = gb_array(go, "gate", NPY_UINT8, 2, GB_COPY))) return -1;
    if (!(a->u = gb_array(uo, "up", NPY_UINT8, 2, GB_COPY))) return -1;
    if (!(a->dn = gb_array(dno, "down", NPY_UINT8, 2, GB_COPY))) return -1;
    return 0;
}

int gb_packed_moe_check(const gb_packed_moe *a, npy_intp gate_bytes, npy_intp up_bytes, npy_intp down_bytes, const char *kind) {
    const npy_intp T = PyArray_DIM(a->x, 0), K = PyArray_DIM(a->idx, 1), E = PyArray_DIM(a->g, 0);
    char fd[64], df[64];
    snprintf(fd, sizeof fd, "%s of an f x d matrix", kind);
    snprintf(df, sizeof df, "%s of a d x f matrix", kind);
    if (gb_check_dim(a->idx, "topk_idx", 0, T, "x's rows") < 0 || gb_check_dim(a->wt, "topk_weight", 0, T, "x's rows") < 0 ||
        gb_check_dim(a->wt, "topk_weight", 1, K, "topk_idx's width") < 0 || gb_check_dim(a->g, "gate", 1, gate_bytes, fd) < 0 ||
        gb_check_dim(a->u, "up", 0, E, "gate's experts") < 0 || gb_check_dim(a->u, "up", 1, up_bytes, fd) < 0 ||
        gb_check_dim(a->dn, "down", 0, E, "gate's experts") < 0 || gb_check_dim(a->dn, "down", 1, down_bytes, df) < 0)
        return -1;
    /* as the float experts (bind_moe.c): a NaN/inf weight would spread through y unseen */
    return gb_check_finite(a->x, "x") < 0 ? -1 : gb_check_finite(a->wt, "topk_weight");
}

void gb_packed_moe_release(gb_packed_moe *a) {
    Py_XDECREF(a->x);
    Py_XDECREF(a->idx);
    Py_XDECREF(a->wt);
    Py_XDECREF(a->g);
    Py_XDECREF(a->u);
    Py_XDECREF(a->dn);
}

int gb_moe_outputs(npy_intp T, npy_intp D, npy_intp E, PyArrayObject **y, PyArrayObject **cnt) {
    npy_intp yd[2] = {T, D}, cd[1] = {E};
    if (!(*y = gb_new_f32(2, yd))) return -1;
    if (!(*cnt = (PyArrayObject *)PyArray_SimpleNew(1, cd, NPY_INT64))) return -1;
    return 0;
}

PyObject *gb_moe_result(int status, PyArrayObject *y, PyArrayObject *cnt) {
    if (status != GB_OK) return gb_raise_status(status);
    return Py_BuildValue("(OO)", y, cnt);
}

int gb_repacked_linear_args(PyObject *xo, PyObject *po, PyObject *bo, npy_intp n, npy_intp k, npy_intp nbytes,
                            PyArrayObject **x, PyArrayObject **p, PyArrayObject **b, PyArrayObject **y) {
    return gb_repacked_linear_args_chk(xo, po, bo, n, k, nbytes, x, p, b, y, 1);
}

int gb_repacked_linear_args_chk(PyObject *xo, PyObject *po, PyObject *bo, npy_intp n, npy_intp k, npy_intp nbytes,
                                PyArrayObject **x, PyArrayObject **p, PyArrayObject **b, PyArrayObject **y, int check_finite) {
    if (!(*x = gb_array(xo, "x", NPY_FLOAT32, 2, GB_COPY))) return -1;
    if (!(*p = gb_array(po, "packed", NPY_UINT8, 1, GB_COPY))) return -1;
    if (gb_check_dim(*x, "x", 1, k, "the weight's in_features") < 0) return -1;
    if (gb_check_dim(*p, "packed", 0, nbytes, "the packed bytes of an n x k matrix") < 0) return -1;
    if (bo != Py_None) {
        if (!(*b = gb_array(bo, "bias", NPY_FLOAT32, 1, GB_COPY))) return -1;
        if (gb_check_dim(*b, "bias", 0, n, "the weight's out_features") < 0) return -1;
        if (gb_check_finite(*b, "bias") < 0) return -1;
    }
    if (check_finite && gb_check_finite(*x, "x") < 0) return -1;
    npy_intp dims[2] = {PyArray_DIM(*x, 0), n};
    return (*y = gb_new_f32(2, dims)) ? 0 : -1;
}

PyArrayObject *gb_new_u8_aligned(int nd, const npy_intp *dims) {
    npy_intp n = 1;
    for (int i = 0; i < nd; i++) n *= dims[i];
    npy_intp d1 = n + 64;
    PyArrayObject *base = (PyArrayObject *)PyArray_SimpleNew(1, &d1, NPY_UINT8);
    if (!base) return NULL;
    char *data = (char *)PyArray_DATA(base);
    data += (64 - ((uintptr_t)data & 63)) & 63;
    PyArrayObject *v = (PyArrayObject *)PyArray_New(&PyArray_Type, nd, (npy_intp *)dims, NPY_UINT8, NULL, data, 0, NPY_ARRAY_CARRAY, NULL);
    if (!v) {
        Py_DECREF(base);
        return NULL;
    }
    if (PyArray_SetBaseObject(v, (PyObject *)base) < 0) { /* steals base */
        Py_DECREF(v);
        return NULL;
    }
    return v;
}

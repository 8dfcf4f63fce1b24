/* bind_attention_mla.c: Python binding for MLA attention over the KV cache (pattern: bind_norm.c). */
#include "bind.h"

#include <string.h>

#include "attention_mla.h"
#include "kvcache.h"
#include "qgemm.h"
#include "quant_k.h"

extern gb_kvcache *gb_kvcache_from_py(PyObject *obj, const char *name); /* bind_kvcache.c */
extern int gb_kvcache_lock_error(int err);                              /* bind_kvcache.c */

/* What both attention bindings take alike: the strategy's name, an MLA cache, v_head_dim >= 1, and
 * q_nope [T, H, Dn] / q_rope [T, H, rope_dim] as float32 (new references in *qn / *qr, which the
 * caller releases). Returns the cache, or NULL with an exception set. */
static gb_kvcache *mla_inputs(const char *strategy, int *strat, PyObject *co, long long v_head_dim, PyObject *qno,
                              PyObject *qro, PyArrayObject **qn, PyArrayObject **qr) {
    if ((*strat = gb_mla_strategy(strategy)) < 0) return NULL;
    gb_kvcache *c = gb_kvcache_from_py(co, "cache");
    if (!c) return NULL;
    if (c->kind != GB_KV_MLA) {
        PyErr_SetString(PyExc_ValueError, "`cache` must be an MLA cache (KVCache.mla), got a GQA cache");
        return NULL;
    }
    if (v_head_dim < 1) {
        PyErr_Format(PyExc_ValueError, "`v_head_dim` must be >= 1, got %lld", v_head_dim);
        return NULL;
    }
    if (!(*qn = gb_array(qno, "q_nope", NPY_FLOAT32, 3, GB_COPY))) return NULL;
    if (!(*qr = gb_array(qro, "q_rope", NPY_FLOAT32, 3, GB_COPY))) return NULL;
    if (gb_check_dim(*qr, "q_rope", 0, PyArray_DIM(*qn, 0), "q_nope.shape[0] (tokens)") < 0) return NULL;
    if (gb_check_dim(*qr, "q_rope", 1, PyArray_DIM(*qn, 1), "q_nope.shape[1] (heads)") < 0) return NULL;
    if (gb_check_dim(*qr, "q_rope", 2, c->dv, "the cache's rope_dim") < 0) return NULL;
    return c;
}

/* The checks both make last, before running: finite queries, a usable scale (0: 1/sqrt(head dim)). */
static int mla_check_values(PyArrayObject *qn, PyArrayObject *qr, double scale) {
    if (gb_check_finite(qn, "q_nope") < 0 || gb_check_finite(qr, "q_rope") < 0) return -1;
    if (!(scale >= 0.0) || !isfinite(scale)) {
        PyErr_Format(PyExc_ValueError, "`scale` must be a positive finite number, got %g", scale);
        return -1;
    }
    return 0;
}

static PyObject *py_mla_attention(PyObject *self, PyObject *args, PyObject *kw) {
    static char *kwlist[] = {"q_nope", "q_rope", "cache", "layer", "kv_b_weight", "v_head_dim", "scale", "strategy",
                             "n_splits", NULL};
    PyObject *qno, *qro, *co, *wo;
    long long layer, v_head_dim, n_splits = 0;
    double scale = 0.0;
    const char *strategy = "flash";
    PyArrayObject *qn = NULL, *qr = NULL, *w = NULL, *y = NULL;
    PyObject *ret = NULL;
    if (!PyArg_ParseTupleAndKeywords(args, kw, "OOOLOL|dsL:mla_attention", kwlist, &qno, &qro, &co, &layer, &wo,
                                     &v_head_dim, &scale, &strategy, &n_splits))
        return NULL;
    int strat;
    gb_kvcache *c = mla_inputs(strategy, &strat, co, v_head_dim, qno, qro, &qn, &qr);
    if (!c) goto done;
    static const int wtypes[] = {NPY_FLOAT32, NPY_FLOAT16, NPY_UINT16, -1};
    if (!(w = gb_array_any(wo, "kv_b_weight", wtypes, 2, GB_COPY))) goto done;
    const int wfmt = PyArray_TYPE(w) == NPY_FLOAT32 ? GB_F32 : (PyArray_TYPE(w) == NPY_FLOAT16 ? GB_F16 : GB_BF16);
    const npy_intp T = PyArray_DIM(qn, 0), H = PyArray_DIM(qn, 1), Dn = PyArray_DIM(qn, 2);
    if (gb_check_dim(w, "kv_b_weight", 1, c->dk, "the cache's kv_lora_rank") < 0) goto done;
    if (gb_check_dim(w, "kv_b_weight", 0, gb_size_mul(H, v_head_dim > INT64_MAX - Dn ? -1 : Dn + v_head_dim),
                     "heads x (qk_nope_head_dim + v_head_dim)") < 0)
        goto done;
    if (mla_check_values(qn, qr, scale) < 0) goto done;
    npy_intp dims[3] = {T, H, v_head_dim};
    if (!(y = gb_new_f32(3, dims))) goto done;
    int st = GB_OK, err;
    Py_BEGIN_ALLOW_THREADS
    if (!(err = gb_kvcache_lock(c, 0))) { /* shared: attention only reads the cache */
        st = gb_mla_attention(c, layer, (const float *)PyArray_DATA(qn), (const float *)PyArray_DATA(qr), T, H, Dn,
                              v_head_dim, PyArray_DATA(w), wfmt, (float)scale, strat, n_splits,
                              (float *)PyArray_DATA(y));
        gb_kvcache_unlock(c);
    }
    Py_END_ALLOW_THREADS
    if (err) {
        gb_kvcache_lock_error(err);
        goto done;
    }
    ret = gb_result(st, &y);
done:
    Py_XDECREF(qn);
    Py_XDECREF(qr);
    Py_XDECREF(w);
    Py_XDECREF(y);
    return ret;
}

/* k_b [H, R, Dn] or v_b [H, Dv, R] in format fmt: float32/float16/uint16 (bf16) elements, or uint8 rows of
 * the format's blocks; its dtype must match fmt and its last axis hold one row of `len` elements. */
PyArrayObject *gb_mla_split_weight(PyObject *o, const char *name, int fmt, npy_intp d0, npy_intp d1, int64_t len,
                                   const char *what1) {
    static const int types[] = {NPY_FLOAT32, NPY_FLOAT16, NPY_UINT16, NPY_UINT8, -1};
    PyArrayObject *a = gb_array_any(o, name, types, 3, GB_COPY);
    if (!a) return NULL;
    const int t = PyArray_TYPE(a);
    const int want = fmt == GB_F32 ? NPY_FLOAT32 : fmt == GB_F16 ? NPY_FLOAT16 : fmt == GB_BF16 ? NPY_UINT16 : NPY_UINT8;
    const int64_t rb = gb_mla_row_bytes(fmt, len);
    if (rb < 0) {
        PyErr_Format(PyExc_ValueError, "`%s`: format %d cannot hold rows of %lld elements", name, fmt, (long long)len);
        goto fail;
    }
    if (t != want) {
        PyErr_Format(PyExc_TypeError, "`%s`: format %d is held as %s, got dtype %s", name, fmt,
                     want == NPY_UINT8 ? "uint8 blocks" : want == NPY_FLOAT32 ? "float32" : want == NPY_FLOAT16 ? "float16" : "uint16 (bf16)",
                     PyArray_DESCR(a)->typeobj->tp_name);
        goto fail;
    }
    if (gb_check_dim(a, name, 0, d0, "the heads") < 0 || gb_check_dim(a, name, 1, d1, what1) < 0 ||
        gb_check_dim(a, name, 2, (npy_intp)(rb / PyArray_ITEMSIZE(a)), "one row's elements (or bytes) in its format") < 0)
        goto fail;
    return a;
fail:
    Py_DECREF(a);
    return NULL;
}

static PyObject *py_mla_attention_kb_vb(PyObject *self, PyObject *args, PyObject *kw) {
    static char *kwlist[] = {"q_nope", "q_rope", "cache", "layer", "k_b", "k_fmt", "v_b", "v_fmt", "v_head_dim", "scale",
                             "strategy", "n_splits", "v_packed", "k_packed", NULL};
    PyObject *qno, *qro, *co, *kbo, *vbo, *vpo = Py_None, *kpo = Py_None;
    long long layer, v_head_dim, n_splits = 0;
    int kfmt, vfmt;
    double scale = 0.0;
    const char *strategy = "flash";
    PyArrayObject *qn = NULL, *qr = NULL, *kb = NULL, *vb = NULL, *vp = NULL, *kp = NULL, *y = NULL;
    PyObject *ret = NULL;
    if (!PyArg_ParseTupleAndKeywords(args, kw, "OOOLOiOiL|dsLOO:mla_attention_kb_vb", kwlist, &qno, &qro, &co, &layer, &kbo,
                                     &kfmt, &vbo, &vfmt, &v_head_dim, &scale, &strategy, &n_splits, &vpo, &kpo))
        return NULL;
    int strat;
    gb_kvcache *c = mla_inputs(strategy, &strat, co, v_head_dim, qno, qro, &qn, &qr);
    if (!c) goto done;
    const npy_intp T = PyArray_DIM(qn, 0), H = PyArray_DIM(qn, 1), Dn = PyArray_DIM(qn, 2);
    if (!(kb = gb_mla_split_weight(kbo, "k_b", kfmt, H, c->dk, Dn, "the cache's kv_lora_rank"))) goto done;
    if (!(vb = gb_mla_split_weight(vbo, "v_b", vfmt, H, v_head_dim, c->dk, "v_head_dim"))) goto done;
    if (vpo != Py_None) {
        const int64_t pb = gb_kp_is_fmt(vfmt) && v_head_dim % 16 == 0 ? gb_kp_bytes(vfmt, v_head_dim, c->dk) : -1;
        if (pb < 0) {
            PyErr_Format(PyExc_ValueError, "`v_packed`: format %d with v_head_dim %lld and rows of %lld has no repacked layout",
                         vfmt, v_head_dim, (long long)c->dk);
            goto done;
        }
        if (!(vp = gb_array(vpo, "v_packed", NPY_UINT8, 2, GB_COPY))) goto done;
        if (gb_check_dim(vp, "v_packed", 0, H, "the heads") < 0 || gb_check_dim(vp, "v_packed", 1, pb, "one head's repacked bytes") < 0)
            goto done;
    }
    if (kpo != Py_None) {
        const int64_t pb = kfmt == GB_Q8_0 || kfmt == GB_Q4_0 ? gb_qpacked_bytes(kfmt, c->dk, Dn) : -1;
        if (pb < 0) {
            PyErr_Format(PyExc_ValueError, "`k_packed`: format %d with rows of %lld has no packed layout (q8_0 or q4_0, "
                         "rows a multiple of 32)", kfmt, (long long)Dn);
            goto done;
        }
        if (!(kp = gb_array(kpo, "k_packed", NPY_UINT8, 2, GB_COPY))) goto done;
        if (gb_check_dim(kp, "k_packed", 0, H, "the heads") < 0 || gb_check_dim(kp, "k_packed", 1, pb, "one head's packed bytes") < 0)
            goto done;
    }
    if (mla_check_values(qn, qr, scale) < 0) goto done;
    npy_intp dims[3] = {T, H, v_head_dim};
    if (!(y = gb_new_f32(3, dims))) goto done;
    int st = GB_OK, err;
    Py_BEGIN_ALLOW_THREADS
    if (!(err = gb_kvcache_lock(c, 0))) {
        st = gb_mla_attention_kb_vb(c, layer, (const float *)PyArray_DATA(qn), (const float *)PyArray_DATA(qr), T, H, Dn,
                                    v_head_dim, PyArray_DATA(kb), kfmt, PyArray_DATA(vb), vfmt, vp ? PyArray_DATA(vp) : NULL,
                                    kp ? PyArray_DATA(kp) : NULL, (float)scale, strat,
                                    n_splits, (float *)PyArray_DATA(y));
        gb_kvcache_unlock(c);
    }
    Py_END_ALLOW_THREADS
    if (err) {
        gb_kvcache_lock_error(err);
        goto done;
    }
    ret = gb_result(st, &y);
done:
    Py_XDECREF(qn);
    Py_XDECREF(qr);
    Py_XDECREF(kb);
    Py_XDECREF(vb);
    Py_XDECREF(vp);
    Py_XDECREF(kp);
    Py_XDECREF(y);
    return ret;
}

/* the joined float32 kv_b [H*(Dn+Dv), R] of a split pair (gb_mla_kv_b_f32) */
static PyObject *py_mla_kv_b_f32(PyObject *self, PyObject *args) {
    PyObject *kbo, *vbo;
    int kfmt, vfmt;
    long long Dn, R;
    PyArrayObject *kb = NULL, *vb = NULL, *y = NULL;
    PyObject *ret = NULL;
    if (!PyArg_ParseTuple(args, "OiOiLL:mla_kv_b_f32", &kbo, &kfmt, &vbo, &vfmt, &Dn, &R)) return NULL;
    static const int types[] = {NPY_FLOAT32, NPY_FLOAT16, NPY_UINT16, NPY_UINT8, -1};
    if (!(vb = gb_array_any(vbo, "v_b", types, 3, GB_COPY))) goto done;
    const npy_intp H = PyArray_DIM(vb, 0), Dv = PyArray_DIM(vb, 1);
    Py_DECREF(vb);
    vb = NULL;
    if (!(kb = gb_mla_split_weight(kbo, "k_b", kfmt, H, R, Dn, "kv_lora_rank"))) goto done;
    if (!(vb = gb_mla_split_weight(vbo, "v_b", vfmt, H, Dv, R, "v_head_dim"))) goto done;
    npy_intp dims[2] = {H * (Dn + Dv), R};
    if (!(y = gb_new_f32(2, dims))) goto done;
    int st;
    Py_BEGIN_ALLOW_THREADS
    st = gb_mla_kv_b_f32(PyArray_DATA(kb), kfmt, PyArray_DATA(vb), vfmt, H, Dn, Dv, R, (float *)PyArray_DATA(y));
    Py_END_ALLOW_THREADS
    ret = gb_result(st, &y);
done:
    Py_XDECREF(kb);
    Py_XDECREF(vb);
    Py_XDECREF(y);
    return ret;
}

static PyObject *py_mla_set_f16_tile(PyObject *self, PyObject *args) {
    int on;
    if (!PyArg_ParseTuple(args, "p:_mla_set_f16_tile", &on)) return NULL;
    gb_mla_set_f16_tile(on);
    Py_RETURN_NONE;
}

static PyObject *py_mla_f16_tile(PyObject *self, PyObject *noargs) { return PyBool_FromLong(gb_mla_f16_tile_ok()); }

static PyObject *py_mla_set_own_gemm(PyObject *self, PyObject *args) {
    int on;
    if (!PyArg_ParseTuple(args, "p:_mla_set_own_gemm", &on)) return NULL;
    gb_mla_set_own_gemm(on);
    Py_RETURN_NONE;
}

static PyObject *py_mla_own_gemm(PyObject *self, PyObject *noargs) { return PyBool_FromLong(gb_mla_own_gemm_ok()); }

PyMethodDef gb_attention_mla_methods[] = {
    {"_mla_set_f16_tile", py_mla_set_f16_tile, METH_VARARGS,
     "_mla_set_f16_tile(on): MLA decode over an f16 cache uses the f16 decode tile (default on where compiled in; "
     "tests, before/after timings)."},
    {"_mla_f16_tile", py_mla_f16_tile, METH_NOARGS, "_mla_f16_tile() -> bool: the MLA f16 decode tile is compiled in and on."},
    {"_mla_set_own_gemm", py_mla_set_own_gemm, METH_VARARGS,
     "_mla_set_own_gemm(on): the MLA prefill's per-head kv_b products run on the core's own AVX-512 GEMM (default on "
     "where compiled in) or on OpenBLAS sgemm (tests, before/after timings)."},
    {"_mla_own_gemm", py_mla_own_gemm, METH_NOARGS, "_mla_own_gemm() -> bool: the MLA prefill's own GEMM is compiled in and on."},
    {"mla_attention_kb_vb", (PyCFunction)(void (*)(void))py_mla_attention_kb_vb, METH_VARARGS | METH_KEYWORDS,
     "mla_attention_kb_vb(q_nope[T,H,Dn], q_rope[T,H,Dr], cache, layer, k_b[H,R,row], k_fmt, v_b[H,Dv,row], v_fmt, "
     "v_head_dim, scale=0, strategy='flash', n_splits=0, v_packed=None, k_packed=None) -> [T, H, Dv] f32 (kv_b split as GGUF "
     "stores it; v_packed: v_b's K format repacked per head, uint8 [H, bytes]; k_packed: a q8_0/q4_0 k_b packed per head "
     "(qrepack), uint8 [H, bytes])"},
    {"mla_kv_b_f32", (PyCFunction)py_mla_kv_b_f32, METH_VARARGS,
     "mla_kv_b_f32(k_b[H,R,row], k_fmt, v_b[H,Dv,row], v_fmt, Dn, R) -> kv_b[H*(Dn+Dv), R] f32"},
    {"mla_attention", (PyCFunction)(void (*)(void))py_mla_attention, METH_VARARGS | METH_KEYWORDS,
     "mla_attention(q_nope[T,H,Dn], q_rope[T,H,Dr], cache, layer, kv_b_weight[H*(Dn+Dv), R] f32/f16/bf16(uint16), "
     "v_head_dim, "
     "scale=0, strategy='flash', n_splits=0) -> [T, H, Dv] f32"},
    {NULL, NULL, 0, NULL}};

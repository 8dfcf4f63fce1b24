/* bind_attention_gqa.c: Python binding for GQA attention over the KV cache (pattern: bind_norm.c). */
#include "bind.h"

#include "attention_gqa.h"
#include "kvcache.h"

extern gb_kvcache *gb_kvcache_from_py(PyObject *obj, const char *name); /* bind_kvcache.c */
extern int gb_kvcache_lock_error(int err);                              /* bind_kvcache.c */

static PyObject *py_gqa_attention(PyObject *self, PyObject *args, PyObject *kw) {
    static char *kwlist[] = {"q", "cache", "layer", "scale", "n_splits", "window", "softcap", "sinks", NULL};
    PyObject *qo, *co, *so = Py_None;
    long long layer, n_splits = 0, window = 0;
    double scale = 0.0, softcap = 0.0;
    PyArrayObject *q = NULL, *y = NULL, *sk = NULL;
    PyObject *ret = NULL;
    if (!PyArg_ParseTupleAndKeywords(args, kw, "OOL|dLLdO:gqa_attention", kwlist, &qo, &co, &layer, &scale, &n_splits,
                                     &window, &softcap, &so))
        return NULL;
    if (window < 0) {
        PyErr_Format(PyExc_ValueError, "`window` must be >= 1 token (0 = the layer's own), got %lld", window);
        return NULL;
    }
    if (!(softcap >= 0.0) || !isfinite(softcap)) {
        PyErr_Format(PyExc_ValueError, "`softcap` must be a finite number >= 0 (0 = off), got %g", softcap);
        return NULL;
    }
    gb_kvcache *c = gb_kvcache_from_py(co, "cache");
    if (!c) return NULL;
    if (c->kind != GB_KV_GQA) {
        PyErr_SetString(PyExc_ValueError, "`cache` must be a GQA cache (KVCache.gqa), got an MLA cache");
        return NULL;
    }
    if (!(q = gb_array(qo, "q", NPY_FLOAT32, 3, GB_COPY))) goto done;
    if (gb_check_dim(q, "q", 2, c->dk, "the cache's head_dim") < 0) goto done;
    if (gb_check_finite(q, "q") < 0) goto done;
    if (so != Py_None) { /* one sink logit per query head (GPT-OSS); gb_gqa_attention_sk checks they are finite */
        if (!(sk = gb_array(so, "sinks", NPY_FLOAT32, 1, GB_COPY))) goto done;
        if (gb_check_dim(sk, "sinks", 0, PyArray_DIM(q, 1), "q's heads") < 0) goto done;
    }
    if (!(scale >= 0.0) || !isfinite(scale)) {
        PyErr_Format(PyExc_ValueError, "`scale` must be a positive finite number, got %g", scale);
        goto done;
    }
    npy_intp dims[3] = {PyArray_DIM(q, 0), PyArray_DIM(q, 1), c->dv};
    if (!(y = gb_new_f32(3, dims))) goto done;
    int st = GB_OK, err;
    Py_BEGIN_ALLOW_THREADS
    if (!(err = gb_kvcache_lock(c, 0))) { /* shared: attention only reads the cache */
        st = gb_gqa_attention_sk(c, layer, (const float *)PyArray_DATA(q), PyArray_DIM(q, 0), PyArray_DIM(q, 1),
                                 (float)scale, window, (float)softcap, sk ? (const float *)PyArray_DATA(sk) : NULL, n_splits,
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
    Py_XDECREF(q);
    Py_XDECREF(sk);
    Py_XDECREF(y);
    return ret;
}

static PyObject *py_attn_set_bf16(PyObject *self, PyObject *args) {
    int on;
    if (!PyArg_ParseTuple(args, "p:_attn_set_bf16", &on)) return NULL;
    gb_attn_set_bf16(on);
    Py_RETURN_NONE;
}

static PyObject *py_attn_bf16(PyObject *self, PyObject *noargs) { return PyBool_FromLong(gb_attn_bf16_ok()); }

static PyObject *py_gqa_set_f16_tile(PyObject *self, PyObject *args) {
    int on;
    if (!PyArg_ParseTuple(args, "p:_gqa_set_f16_tile", &on)) return NULL;
    gb_gqa_set_f16_tile(on);
    Py_RETURN_NONE;
}

static PyObject *py_gqa_f16_tile(PyObject *self, PyObject *noargs) { return PyBool_FromLong(gb_gqa_f16_tile_ok()); }

PyMethodDef gb_attention_gqa_methods[] = {
    {"_gqa_set_f16_tile", py_gqa_set_f16_tile, METH_VARARGS,
     "_gqa_set_f16_tile(on): GQA decode over an f16 or bf16 cache uses the AVX2 16-bit decode tile (default on where "
     "compiled in; tests, A/B timings)."},
    {"_gqa_f16_tile", py_gqa_f16_tile, METH_NOARGS, "_gqa_f16_tile() -> bool: the GQA f16 decode tile is compiled in and on."},
    {"_attn_set_bf16", py_attn_set_bf16, METH_VARARGS,
     "_attn_set_bf16(on): bf16 caches use the bf16 dot-product tile (default on where compiled in; tests)."},
    {"_attn_bf16", py_attn_bf16, METH_NOARGS, "_attn_bf16() -> bool: the bf16 dot-product tile is compiled in and on."},
    {"gqa_attention", (PyCFunction)(void (*)(void))py_gqa_attention, METH_VARARGS | METH_KEYWORDS,
     "gqa_attention(q[T, Hq, Dh] f32, cache, layer, scale=0 (1/sqrt(Dh)), n_splits=0 (auto), window=0 (the layer's), "
     "softcap=0 (off), sinks=None ([Hq] f32: GPT-OSS's sink logits)) -> [T, Hq, Dv] f32"},
    {NULL, NULL, 0, NULL}};

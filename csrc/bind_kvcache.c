/* bind_kvcache.c: the KV cache as a Python type, `_core.KVCacheBase` (glmbench/kvcache.py
 * subclasses it to add the named constructors). See bind_norm.c for the argument-check pattern.
 * The attention bindings reach the C struct through gb_kvcache_from_py().
 *
 * Threads: every binding that touches a cache's mutable state (lengths, block tables, pool,
 * stored rows) holds the cache's lock (kvcache.h) around it: shared to read, exclusive to change.
 * The rule that keeps this deadlock-free: never wait for a cache's lock while holding the GIL
 * (the holder may need the GIL to finish). The long calls take it inside their
 * Py_BEGIN_ALLOW_THREADS section; the short ones (sizes, length, reset) try it with the GIL held
 * and wait with the GIL released only when another thread has it (gb_kvcache_acquire). No Python
 * code runs while a binding holds a cache's lock. */
#include "bind.h"

#include <errno.h>
#include <string.h>

#include "kvcache.h"
#include "quant.h"

typedef struct {
    PyObject_HEAD
    gb_kvcache *c;
} KVCacheObject;

static PyTypeObject KVCacheType;

static const struct { const char *name; int fmt; } kv_formats[] = {
    {"f32", GB_F32}, {"f16", GB_F16}, {"bf16", GB_BF16}, {"q8_0", GB_Q8_0}, {"q4_0", GB_Q4_0}, {NULL, 0}};

static const char *kv_fmt_name(int fmt) {
    for (int i = 0; kv_formats[i].name; i++)
        if (kv_formats[i].fmt == fmt) return kv_formats[i].name;
    return "?";
}

gb_kvcache *gb_kvcache_from_py(PyObject *obj, const char *name) {
    if (!PyObject_TypeCheck(obj, &KVCacheType)) {
        PyErr_Format(PyExc_TypeError, "`%s` must be a glmbench.KVCache, got %s", name, Py_TYPE(obj)->tp_name);
        return NULL;
    }
    gb_kvcache *c = ((KVCacheObject *)obj)->c;
    if (!c) PyErr_Format(PyExc_ValueError, "`%s` is an uninitialised KVCache", name);
    return c;
}

/* A failed lock call as a RuntimeError (e.g. EDEADLK: this thread holds it already). */
int gb_kvcache_lock_error(int err) {
    PyErr_Format(PyExc_RuntimeError, "KVCache: cannot take the cache's lock (%s)", strerror(err));
    return -1;
}

/* Take the cache's lock for a short section that runs no Python code: tried with the GIL held,
 * waited for with the GIL released when another thread has it. 0, or -1 with an exception set. */
int gb_kvcache_acquire(gb_kvcache *c, int exclusive) {
    int err = gb_kvcache_trylock(c, exclusive);
    if (err == EBUSY || err == EAGAIN) {
        Py_BEGIN_ALLOW_THREADS
        err = gb_kvcache_lock(c, exclusive);
        Py_END_ALLOW_THREADS
    }
    return err ? gb_kvcache_lock_error(err) : 0;
}

static PyObject *kv_new(PyTypeObject *type, PyObject *args, PyObject *kw) {
    KVCacheObject *self = (KVCacheObject *)type->tp_alloc(type, 0);
    if (self) self->c = NULL;
    return (PyObject *)self;
}

static void kv_dealloc(KVCacheObject *self) {
    gb_kvcache_destroy(self->c);
    self->c = NULL;
    Py_TYPE(self)->tp_free((PyObject *)self);
}

/* KVCacheBase(kind, n_layers, capacity_tokens, n_heads, dk, dv, kv, block_size) */
static int kv_init(KVCacheObject *self, PyObject *args, PyObject *kw) {
    static char *kwlist[] = {"kind", "n_layers", "capacity_tokens", "n_heads", "dk", "dv", "kv", "block_size", NULL};
    const char *kind, *dtype;
    long long n_layers, capacity, n_heads, dk, dv, block_size;
    if (!PyArg_ParseTupleAndKeywords(args, kw, "sLLLLLsL:KVCache", kwlist, &kind, &n_layers, &capacity, &n_heads, &dk,
                                     &dv, &dtype, &block_size))
        return -1;
    if (self->c) {
        /* another thread may be using the old cache: replacing it under them would free it */
        PyErr_SetString(PyExc_RuntimeError, "KVCache is already initialised: make a new cache instead of calling __init__ again");
        return -1;
    }
    int k;
    if (!strcmp(kind, "gqa")) k = GB_KV_GQA;
    else if (!strcmp(kind, "mla")) k = GB_KV_MLA;
    else {
        PyErr_Format(PyExc_ValueError, "`kind` must be 'gqa' or 'mla', got '%s'", kind);
        return -1;
    }
    int fmt = -1;
    for (int i = 0; kv_formats[i].name; i++)
        if (!strcmp(dtype, kv_formats[i].name)) fmt = kv_formats[i].fmt;
    if (fmt < 0) {
        PyErr_Format(PyExc_ValueError, "`kv` (the cache format) must be one of f32, f16, bf16, q8_0, q4_0, got '%s'", dtype);
        return -1;
    }
    gb_kvcache *c = NULL;
    int st = gb_kvcache_create(&c, k, fmt, n_layers, capacity, n_heads, dk, dv, block_size);
    if (st != GB_OK) {
        gb_raise_status(st);
        return -1;
    }
    self->c = c;
    return 0;
}

#define KV_SELF                                                                                \
    gb_kvcache *c = self->c;                                                                   \
    if (!c) {                                                                                  \
        PyErr_SetString(PyExc_ValueError, "uninitialised KVCache");                            \
        return NULL;                                                                           \
    }

static PyObject *kv_append(KVCacheObject *self, PyObject *args, PyObject *kw) {
    KV_SELF
    int mla = c->kind == GB_KV_MLA;
    static char *kwlist[] = {"layer", "a", "b", NULL};
    long long layer;
    PyObject *ao, *bo;
    PyArrayObject *a = NULL, *b = NULL;
    PyObject *ret = NULL;
    if (!PyArg_ParseTupleAndKeywords(args, kw, "LOO:append", kwlist, &layer, &ao, &bo)) return NULL;
    const char *an = mla ? "latent" : "k", *bn = mla ? "k_rope" : "v";
    int nd = mla ? 2 : 3;
    if (!(a = gb_array(ao, an, NPY_FLOAT32, nd, GB_COPY))) goto done;
    if (!(b = gb_array(bo, bn, NPY_FLOAT32, nd, GB_COPY))) goto done;
    if (layer < 0 || layer >= c->n_layers) {
        PyErr_Format(PyExc_ValueError, "`layer`=%lld is out of range for a cache of %ld layers", layer, (long)c->n_layers);
        goto done;
    }
    if (gb_check_dim(b, bn, 0, PyArray_DIM(a, 0), mla ? "latent.shape[0] (tokens)" : "k.shape[0] (tokens)") < 0) goto done;
    if (mla) {
        if (gb_check_dim(a, an, 1, c->dk, "the cache's kv_lora_rank") < 0) goto done;
        if (gb_check_dim(b, bn, 1, c->dv, "the cache's rope_dim") < 0) goto done;
    } else {
        if (gb_check_dim(a, an, 1, c->n_heads, "the cache's n_kv_heads") < 0) goto done;
        if (gb_check_dim(a, an, 2, c->dk, "the cache's head_dim") < 0) goto done;
        if (gb_check_dim(b, bn, 1, c->n_heads, "the cache's n_kv_heads") < 0) goto done;
        if (gb_check_dim(b, bn, 2, c->dv, "the cache's v_head_dim") < 0) goto done;
    }
    if (gb_check_finite(a, an) < 0 || gb_check_finite(b, bn) < 0) goto done;
    int st, err;
    Py_BEGIN_ALLOW_THREADS
    if (!(err = gb_kvcache_lock(c, 1))) {
        st = gb_kvcache_append(c, layer, (const float *)PyArray_DATA(a), (const float *)PyArray_DATA(b), PyArray_DIM(a, 0));
        gb_kvcache_unlock(c);
    }
    Py_END_ALLOW_THREADS
    if (err) {
        gb_kvcache_lock_error(err);
        goto done;
    }
    if (st != GB_OK) {
        gb_raise_status(st);
        goto done;
    }
    ret = Py_None;
    Py_INCREF(ret);
done:
    Py_XDECREF(a);
    Py_XDECREF(b);
    return ret;
}

static int layer_arg(gb_kvcache *c, PyObject *args, const char *fn, long long *layer) {
    char f[64];
    snprintf(f, sizeof f, "L:%s", fn);
    if (!PyArg_ParseTuple(args, f, layer)) return -1;
    if (*layer < 0 || *layer >= c->n_layers) {
        PyErr_Format(PyExc_ValueError, "`layer`=%lld is out of range for a cache of %ld layers", *layer, (long)c->n_layers);
        return -1;
    }
    return 0;
}

static PyObject *kv_length(KVCacheObject *self, PyObject *args) {
    KV_SELF
    long long layer;
    if (layer_arg(c, args, "length", &layer) < 0) return NULL;
    if (gb_kvcache_acquire(c, 0) < 0) return NULL;
    long long n = c->len[layer];
    gb_kvcache_unlock(c);
    return PyLong_FromLongLong(n);
}

static void free_capsule(PyObject *cap) { free(PyCapsule_GetPointer(cap, "glmbench.kv_read")); }

/* A float32 array over a malloc'd buffer it then owns (freed with the array). */
static PyObject *array_owning(float *buf, int nd, npy_intp *dims) {
    PyObject *arr = PyArray_SimpleNewFromData(nd, dims, NPY_FLOAT32, buf);
    if (!arr) {
        free(buf);
        return NULL;
    }
    PyObject *cap = PyCapsule_New(buf, "glmbench.kv_read", free_capsule);
    if (!cap) {
        free(buf);
        Py_DECREF(arr);
        return NULL;
    }
    if (PyArray_SetBaseObject((PyArrayObject *)arr, cap) < 0) { /* steals cap even on failure */
        Py_DECREF(arr);
        return NULL;
    }
    return arr;
}

/* The length is read and the rows decoded under one hold of the lock, into buffers sized then
 * (plain malloc: no Python code runs while the lock is held), so a concurrent append or reset
 * can never make the copy longer or shorter than the buffers. */
static PyObject *kv_read(KVCacheObject *self, PyObject *args) {
    KV_SELF
    long long layer;
    if (layer_arg(c, args, "read", &layer) < 0) return NULL;
    const int64_t as = c->n_heads * c->dk, bs = c->n_heads * c->dv;
    float *a = NULL, *b = NULL;
    int64_t T = 0;
    int st = GB_OK, err;
    Py_BEGIN_ALLOW_THREADS
    if (!(err = gb_kvcache_lock(c, 0))) {
        T = gb_kvcache_held(c, layer);
        a = (float *)malloc((size_t)(T * as > 0 ? T * as : 1) * sizeof(float));
        b = (float *)malloc((size_t)(T * bs > 0 ? T * bs : 1) * sizeof(float));
        if (a && b) st = gb_kvcache_read(c, layer, a, b);
        gb_kvcache_unlock(c);
    }
    Py_END_ALLOW_THREADS
    if (err) return gb_kvcache_lock_error(err), NULL;
    if (!a || !b) {
        free(a);
        free(b);
        return PyErr_NoMemory();
    }
    if (st != GB_OK) {
        free(a);
        free(b);
        return gb_raise_status(st);
    }
    int mla = c->kind == GB_KV_MLA;
    npy_intp da[3] = {T, c->n_heads, c->dk}, db[3] = {T, c->n_heads, c->dv};
    if (mla) {
        da[1] = c->dk;
        db[1] = c->dv;
    }
    PyObject *pa = array_owning(a, mla ? 2 : 3, da);
    if (!pa) {
        free(b);
        return NULL;
    }
    PyObject *pb = array_owning(b, mla ? 2 : 3, db);
    if (!pb) {
        Py_DECREF(pa);
        return NULL;
    }
    return Py_BuildValue("(NN)", pa, pb);
}

/* _set_windows(windows: sequence of n_layers ints, 0 = full attention; chunk) */
static PyObject *kv_set_windows(KVCacheObject *self, PyObject *args) {
    KV_SELF
    PyObject *wo;
    long long chunk;
    if (!PyArg_ParseTuple(args, "OL:_set_windows", &wo, &chunk)) return NULL;
    PyObject *seq = PySequence_Fast(wo, "`windows` must be a sequence of ints (one per layer, 0 = full attention)");
    if (!seq) return NULL;
    const Py_ssize_t n = PySequence_Fast_GET_SIZE(seq);
    if (n != c->n_layers) {
        Py_DECREF(seq);
        return PyErr_Format(PyExc_ValueError, "`windows` must have one entry per layer (%ld), got %zd", (long)c->n_layers, n);
    }
    int64_t *w = (int64_t *)malloc((size_t)(n > 0 ? n : 1) * sizeof(int64_t));
    if (!w) {
        Py_DECREF(seq);
        return PyErr_NoMemory();
    }
    for (Py_ssize_t i = 0; i < n; i++) {
        PyObject *it = PySequence_Fast_GET_ITEM(seq, i);
        if (PyBool_Check(it) || !PyLong_Check(it)) {
            PyErr_Format(PyExc_TypeError, "`windows`[%zd] must be an int, got %s", i, Py_TYPE(it)->tp_name);
            break;
        }
        long long v = PyLong_AsLongLong(it);
        if (v == -1 && PyErr_Occurred()) break;
        w[i] = v;
    }
    Py_DECREF(seq);
    if (PyErr_Occurred()) {
        free(w);
        return NULL;
    }
    if (gb_kvcache_acquire(c, 1) < 0) {
        free(w);
        return NULL;
    }
    int st = gb_kvcache_set_windows(c, w, chunk);
    gb_kvcache_unlock(c);
    free(w);
    if (st != GB_OK) return gb_raise_status(st);
    Py_RETURN_NONE;
}

/* _layer_state(layer) -> (tokens appended, tokens held, oldest stored token, ring tokens) */
static PyObject *kv_layer_state(KVCacheObject *self, PyObject *args) {
    KV_SELF
    long long layer;
    if (layer_arg(c, args, "_layer_state", &layer) < 0) return NULL;
    if (gb_kvcache_acquire(c, 0) < 0) return NULL;
    long long n = c->len[layer], held = gb_kvcache_held(c, layer), first = gb_kvcache_first(c, layer),
              ring = gb_kvcache_ring_tokens(c, layer);
    gb_kvcache_unlock(c);
    return Py_BuildValue("(LLLL)", n, held, first, ring);
}

static PyObject *kv_reset(KVCacheObject *self, PyObject *noargs) {
    KV_SELF
    if (gb_kvcache_acquire(c, 1) < 0) return NULL;
    gb_kvcache_reset(c);
    gb_kvcache_unlock(c);
    Py_RETURN_NONE;
}

static PyObject *kv_fill_synthetic(KVCacheObject *self, PyObject *args, PyObject *kw) {
    KV_SELF
    static char *kwlist[] = {"n_tokens", "seed", NULL};
    long long n, seed = 0;
    if (!PyArg_ParseTupleAndKeywords(args, kw, "L|L:fill_synthetic", kwlist, &n, &seed)) return NULL;
    int st = GB_OK, err;
    Py_BEGIN_ALLOW_THREADS
    if (!(err = gb_kvcache_lock(c, 1))) {
        st = gb_kvcache_fill_synthetic(c, n, (uint64_t)seed);
        gb_kvcache_unlock(c);
    }
    Py_END_ALLOW_THREADS
    if (err) return gb_kvcache_lock_error(err), NULL;
    if (st != GB_OK) return gb_raise_status(st);
    Py_RETURN_NONE;
}

static PyObject *kv_get(KVCacheObject *self, void *which) {
    KV_SELF
    switch ((int)(intptr_t)which) {
    case 1: case 2: case 9: { /* the changing sizes: read together under the lock */
        if (gb_kvcache_acquire(c, 0) < 0) return NULL;
        long long held = gb_kvcache_tokens_held(c), obtained = c->n_obtained, pooled = c->n_pool;
        gb_kvcache_unlock(c);
        long long v = (int)(intptr_t)which == 1 ? gb_kvcache_bytes_per_token(c) / c->n_layers * held
                    : (int)(intptr_t)which == 2 ? obtained * c->block_bytes : (obtained - pooled) * c->block_bytes;
        return PyLong_FromLongLong(v);
    }
    case 0: return PyLong_FromLongLong(gb_kvcache_bytes_per_token(c));
    case 3: return PyLong_FromLongLong(c->capacity);
    case 4: return PyUnicode_FromString(kv_fmt_name(c->fmt));
    case 5: return PyUnicode_FromString(c->kind == GB_KV_MLA ? "mla" : "gqa");
    case 6: return PyLong_FromLongLong(c->n_layers);
    case 7: return PyLong_FromLongLong(c->block_size);
    case 8: return Py_BuildValue("(LLL)", (long long)c->n_heads, (long long)c->dk, (long long)c->dv);
    case 10: { /* windows and chunk are set only on an empty cache, under the exclusive lock */
        if (gb_kvcache_acquire(c, 0) < 0) return NULL;
        PyObject *t = PyTuple_New(c->n_layers);
        for (int64_t l = 0; t && l < c->n_layers; l++) {
            PyObject *v = PyLong_FromLongLong(c->window[l]);
            if (!v) {
                Py_CLEAR(t);
                break;
            }
            PyTuple_SET_ITEM(t, l, v);
        }
        gb_kvcache_unlock(c);
        return t;
    }
    case 11: return PyLong_FromLongLong(c->chunk);
    }
    Py_RETURN_NONE;
}

static PyGetSetDef kv_getset[] = {
    {"bytes_per_token", (getter)kv_get, NULL, "exact bytes per token, all layers, in the storage format", (void *)0},
    {"bytes_used", (getter)kv_get, NULL, "bytes of the tokens held (per-layer bytes per token x tokens, summed over layers)", (void *)1},
    {"bytes_allocated", (getter)kv_get, NULL, "bytes of every block obtained from the system (held by layers or pooled)", (void *)2},
    {"capacity_tokens", (getter)kv_get, NULL, "tokens each layer can hold", (void *)3},
    {"kv", (getter)kv_get, NULL, "storage format name (f32, f16, bf16, q8_0, q4_0)", (void *)4},
    {"kind", (getter)kv_get, NULL, "'gqa' or 'mla'", (void *)5},
    {"n_layers", (getter)kv_get, NULL, "layers", (void *)6},
    {"block_size", (getter)kv_get, NULL, "tokens per block", (void *)7},
    {"_dims", (getter)kv_get, NULL, "(n_heads, dk, dv) as stored", (void *)8},
    {"bytes_in_blocks", (getter)kv_get, NULL, "bytes of the blocks held by layers now (whole blocks)", (void *)9},
    {"windows", (getter)kv_get, NULL, "sliding window per layer in tokens (0 = full attention)", (void *)10},
    {"chunk", (getter)kv_get, NULL, "the most tokens a windowed layer takes at once (0: no windows set)", (void *)11},
    {NULL}};

static PyMethodDef kv_methods[] = {
    {"append", (PyCFunction)(void (*)(void))kv_append, METH_VARARGS | METH_KEYWORDS,
     "append(layer, a, b): GQA a=k[T, Hkv, Dh], b=v[T, Hkv, Dv]; MLA a=latent[T, R], b=k_rope[T, Dr] (float32)"},
    {"length", (PyCFunction)kv_length, METH_VARARGS, "length(layer) -> tokens appended (the next token's position)"},
    {"_layer_state", (PyCFunction)kv_layer_state, METH_VARARGS,
     "_layer_state(layer) -> (tokens appended, tokens held, oldest stored token, ring tokens)"},
    {"_set_windows", (PyCFunction)kv_set_windows, METH_VARARGS,
     "_set_windows(windows, chunk): sliding window per layer (0 = full), rings for windowed layers; empty cache only"},
    {"read", (PyCFunction)kv_read, METH_VARARGS, "read(layer) -> (a, b) float32 copies of what is stored"},
    {"reset", (PyCFunction)kv_reset, METH_NOARGS, "reset(): every layer to 0 tokens (blocks go back to the pool)"},
    {"fill_synthetic", (PyCFunction)(void (*)(void))kv_fill_synthetic, METH_VARARGS | METH_KEYWORDS,
     "fill_synthetic(n_tokens, seed=0): every layer to n_tokens of random finite entries"},
    {NULL, NULL, 0, NULL}};

static PyTypeObject KVCacheType = {
    PyVarObject_HEAD_INIT(NULL, 0)
    .tp_name = "glmbench._core.KVCacheBase",
    .tp_basicsize = sizeof(KVCacheObject),
    .tp_flags = Py_TPFLAGS_DEFAULT | Py_TPFLAGS_BASETYPE,
    .tp_doc = "Paged KV cache (C). Use glmbench.KVCache.gqa(...) / .mla(...).",
    .tp_new = kv_new,
    .tp_init = (initproc)kv_init,
    .tp_dealloc = (destructor)kv_dealloc,
    .tp_methods = kv_methods,
    .tp_getset = kv_getset,
};

PyMethodDef gb_kvcache_methods[] = {
    {NULL, NULL, 0, NULL}};

/* Called from PyInit__core: add the cache type to the module. */
int gb_kvcache_add_types(PyObject *module) {
    if (PyType_Ready(&KVCacheType) < 0) return -1;
    Py_INCREF(&KVCacheType);
    if (PyModule_AddObject(module, "KVCacheBase", (PyObject *)&KVCacheType) < 0) {
        Py_DECREF(&KVCacheType);
        return -1;
    }
    return 0;
}

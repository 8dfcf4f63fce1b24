/* bind_layer.c: Python bindings for layer.c.
 *
 *   layer_plan(spec: dict) -> capsule    every array and size of one layer, checked once
 *   layer_forward(plan, x[T, D] f32, cache, layer, positions[T] int64, strategy='flash', n_out=-1)
 *       -> (y[n_out, D] f32, counts[E] int64 or None)   (the feed-forward part on the last n_out rows)
 *
 * glmbench/model.py builds the spec (Layer._c_plan); the capsule keeps a reference to every array
 * it points into, so the weights live as long as the plan. */
#include "bind.h" /* Python.h first: it sets the feature macros the system headers read */

#include <math.h>

#include "layer.h"
#include "qgemm.h"
#include "quant_iq.h"
#include "quant_k.h"

extern gb_kvcache *gb_kvcache_from_py(PyObject *obj, const char *name); /* bind_kvcache.c */
extern int gb_kvcache_lock_error(int err);                              /* bind_kvcache.c */
extern PyArrayObject *gb_mla_split_weight(PyObject *o, const char *name, int fmt, npy_intp d0, npy_intp d1, int64_t len,
                                          const char *what1); /* bind_attention_mla.c */

#define PLAN_NAME "glmbench.layer_plan"
#define MAX_REFS 64

typedef struct {
    gb_layer L;
    PyObject *refs[MAX_REFS];
    int nrefs;
} plan_t;

static const int wtypes[] = {NPY_FLOAT32, NPY_FLOAT16, NPY_UINT16, -1};

static void plan_free(PyObject *cap) {
    plan_t *p = (plan_t *)PyCapsule_GetPointer(cap, PLAN_NAME);
    if (!p) return;
    for (int i = 0; i < p->nrefs; i++) Py_XDECREF(p->refs[i]);
    PyMem_Free(p);
}

static int get_i64(PyObject *d, const char *key, int64_t *out) {
    PyObject *v = PyDict_GetItemString(d, key);
    if (!v) {
        PyErr_Format(PyExc_KeyError, "layer spec lacks %s", key);
        return -1;
    }
    long long x = PyLong_AsLongLong(v);
    if (x == -1 && PyErr_Occurred()) return -1;
    /* every spec integer is a size, a count or a flag: bounded, so that the products of two or three of
     * them that size the weights (H * (Dn + Dvm), Hq * Dh, ...) cannot overflow (found by UBSan) */
    if (x <= -(1LL << 30) || x >= (1LL << 30)) {
        PyErr_Format(PyExc_ValueError, "layer spec: %s=%lld is out of range (|value| < 2^30)", key, x);
        return -1;
    }
    *out = (int64_t)x;
    return 0;
}

static int get_f64(PyObject *d, const char *key, double *out) {
    PyObject *v = PyDict_GetItemString(d, key);
    if (!v) {
        PyErr_Format(PyExc_KeyError, "layer spec lacks %s", key);
        return -1;
    }
    double x = PyFloat_AsDouble(v);
    if (x == -1.0 && PyErr_Occurred()) return -1;
    *out = x;
    return 0;
}

/* the plan keeps a (a new reference, given up on failure) */
static int keep(plan_t *p, PyArrayObject *a) {
    if (p->nrefs >= MAX_REFS) {
        Py_DECREF(a);
        PyErr_SetString(PyExc_RuntimeError, "layer_plan: too many arrays");
        return -1;
    }
    p->refs[p->nrefs++] = (PyObject *)a;
    return 0;
}

/* spec[key] as a C-contiguous array of one of `types` (or float32 when types is NULL) with the
 * given dims (dims[i] < 0: any); absent or None -> *out = NULL when optional. */
static int get_arr(plan_t *p, PyObject *d, const char *key, const int *types, int ndim, const npy_intp *dims,
                   int optional, const void **out, int *fmt) {
    PyObject *v = PyDict_GetItemString(d, key);
    *out = NULL;
    if (!v || v == Py_None) {
        if (optional) return 0;
        PyErr_Format(PyExc_KeyError, "layer spec lacks %s", key);
        return -1;
    }
    PyArrayObject *a = types ? gb_array_any(v, key, types, ndim, GB_COPY) : gb_array(v, key, NPY_FLOAT32, ndim, GB_COPY);
    if (!a) return -1;
    for (int i = 0; i < ndim; i++)
        if (dims[i] >= 0 && gb_check_dim(a, key, i, dims[i], "the layer's config") < 0) {
            Py_DECREF(a);
            return -1;
        }
    if (keep(p, a) < 0) return -1;
    *out = PyArray_DATA(a);
    if (fmt) *fmt = PyArray_TYPE(a) == NPY_FLOAT16 ? GB_F16 : PyArray_TYPE(a) == NPY_UINT16 ? GB_BF16 : GB_F32;
    return 0;
}

/* the packed bytes of an [n, k] matrix in block format fmt (-1: not a format the layer reads packed) */
static int64_t packed_bytes(int fmt, int64_t n, int64_t k) {
    if (fmt == GB_Q8_0 || fmt == GB_Q4_0) return gb_qpacked_bytes(fmt, n, k);
    if (gb_is_iqfmt(fmt)) return gb_iqp_bytes(fmt, n, k);
    return gb_kp_bytes(fmt, n, k); /* -1 for a format it does not pack */
}

/* spec[key]: a float array (get_arr), or a (packed, fmt) tuple: a block-format matrix [dims] in its
 * packed layout (uint8, any shape; ndim 3: dims[0] matrices back to back), its byte count checked */
static int get_w(plan_t *p, PyObject *d, const char *key, int ndim, const npy_intp *dims, int optional, gb_wmat *m) {
    PyObject *v = PyDict_GetItemString(d, key);
    if (!v || !PyTuple_Check(v)) return get_arr(p, d, key, wtypes, ndim, dims, optional, &m->p, &m->fmt);
    PyObject *ao;
    int fmt;
    if (PyTuple_GET_SIZE(v) != 2 || !PyArg_ParseTuple(v, "Oi", &ao, &fmt)) {
        PyErr_Clear();
        PyErr_Format(PyExc_TypeError, "layer spec %s: a block-format matrix is a (packed uint8 array, format id) pair", key);
        return -1;
    }
    const int64_t n = dims[ndim - 2], k = dims[ndim - 1], nm = ndim == 3 ? dims[0] : 1;
    const int64_t pb = packed_bytes(fmt, n, k);
    if (pb < 0) {
        PyErr_Format(PyExc_ValueError, "layer spec %s: format %d has no packed layout for a [%lld, %lld] matrix", key, fmt,
                     (long long)n, (long long)k);
        return -1;
    }
    PyArrayObject *a = gb_array(ao, key, NPY_UINT8, -1, GB_COPY);
    if (!a) return -1;
    if ((int64_t)PyArray_NBYTES(a) != nm * pb) {
        PyErr_Format(PyExc_ValueError, "layer spec %s: %lld packed bytes, want %lld (%lld matrices of [%lld, %lld] in format %d)",
                     key, (long long)PyArray_NBYTES(a), (long long)(nm * pb), (long long)nm, (long long)n, (long long)k, fmt);
        Py_DECREF(a);
        return -1;
    }
    if (keep(p, a) < 0) return -1;
    m->p = PyArray_DATA(a);
    m->fmt = fmt;
    p->L.quant = 1;
    return 0;
}

#define I64(key, dst) do { if (get_i64(spec, key, &(dst)) < 0) goto fail; } while (0)
#define F64(key, dst) do { if (get_f64(spec, key, &(dst)) < 0) goto fail; } while (0)
#define W2(key, m, n0, n1) do { npy_intp dd[2] = {n0, n1}; \
        if (get_w(p, spec, key, 2, dd, 0, &(m)) < 0) goto fail; } while (0)
#define W2OPT(key, m, n0, n1) do { npy_intp dd[2] = {n0, n1}; \
        if (get_w(p, spec, key, 2, dd, 1, &(m)) < 0) goto fail; } while (0)
#define W3(key, m, n0, n1, n2) do { npy_intp dd[3] = {n0, n1, n2}; \
        if (get_w(p, spec, key, 3, dd, 0, &(m)) < 0) goto fail; } while (0)
#define V1(key, dst, n, opt) do { npy_intp dd[1] = {n}; const void *pp_; \
        if (get_arr(p, spec, key, NULL, 1, dd, opt, &pp_, NULL) < 0) goto fail; \
        (dst) = (const float *)pp_; } while (0)

/* a block format the layer reads packed from gb_klinear_packed / gb_iqlinear_packed (and gb_kmoe_packed) */
static int is_kq(int fmt) { return gb_kp_is_fmt(fmt) || gb_is_iqfmt(fmt); }

/* MLA's kv_b as GGUF stores it: k_b [H, R, Dn] (format k_fmt) and v_b [H, Dvm, R] (v_fmt), each float
 * elements or uint8 rows of blocks (as mla_attention_kb_vb takes them), and their optional packed
 * copies k_packed (q8_0/q4_0 per head, [H] x gb_qpacked_bytes(k_fmt, R, Dn)) and v_packed (K formats,
 * [H] x gb_kp_bytes(v_fmt, Dvm, R)) */
static int kv_split_spec(plan_t *p, PyObject *spec) {
    gb_layer *L = &p->L;
    int64_t kf, vf;
    if (get_i64(spec, "k_fmt", &kf) < 0 || get_i64(spec, "v_fmt", &vf) < 0) return -1;
    PyObject *o[4] = {PyDict_GetItemString(spec, "k_b"), PyDict_GetItemString(spec, "v_b"),
                      PyDict_GetItemString(spec, "k_packed"), PyDict_GetItemString(spec, "v_packed")};
    if (!o[1]) {
        PyErr_SetString(PyExc_KeyError, "layer spec lacks v_b");
        return -1;
    }
    PyArrayObject *kb = gb_mla_split_weight(o[0], "k_b", (int)kf, L->H, L->R, L->Dn, "kv_lora_rank");
    if (!kb || keep(p, kb) < 0) return -1;
    PyArrayObject *vb = gb_mla_split_weight(o[1], "v_b", (int)vf, L->H, L->Dvm, L->R, "v_head_dim");
    if (!vb || keep(p, vb) < 0) return -1;
    L->k_b = PyArray_DATA(kb);
    L->v_b = PyArray_DATA(vb);
    L->kb_fmt = (int)kf;
    L->vb_fmt = (int)vf;
    const int64_t pk = kf == GB_Q8_0 || kf == GB_Q4_0 ? gb_qpacked_bytes((int)kf, L->R, L->Dn) : -1;
    const int64_t pv = gb_kp_is_fmt((int)vf) && L->Dvm % 16 == 0 ? gb_kp_bytes((int)vf, L->Dvm, L->R) : -1;
    const int64_t want[2] = {pk, pv};
    const char *name[2] = {"k_packed", "v_packed"};
    const void **dst[2] = {&L->k_packed, &L->v_packed};
    for (int i = 0; i < 2; i++) {
        PyObject *v = o[2 + i];
        if (!v || v == Py_None) continue;
        if (want[i] < 0) {
            PyErr_Format(PyExc_ValueError, "layer spec %s: format %lld has no packed layout for these heads", name[i],
                         (long long)(i ? vf : kf));
            return -1;
        }
        PyArrayObject *a = gb_array(v, name[i], NPY_UINT8, -1, GB_COPY);
        if (!a || keep(p, a) < 0) return -1;
        if ((int64_t)PyArray_NBYTES(a) != L->H * want[i]) {
            PyErr_Format(PyExc_ValueError, "layer spec %s: %lld bytes, want %lld (%lld heads of %lld)", name[i],
                         (long long)PyArray_NBYTES(a), (long long)(L->H * want[i]), (long long)L->H, (long long)want[i]);
            return -1;
        }
        *dst[i] = PyArray_DATA(a);
    }
    L->kv_split = 1;
    L->quant = 1; /* decode only: a prefill joins k_b / v_b into a float32 kv_b (attention.prefill_kv_b) */
    return 0;
}

static PyObject *py_layer_plan(PyObject *self, PyObject *args) {
    PyObject *spec;
    if (!PyArg_ParseTuple(args, "O!:layer_plan", &PyDict_Type, &spec)) return NULL;
    plan_t *p = (plan_t *)PyMem_Calloc(1, sizeof(plan_t));
    if (!p) return PyErr_NoMemory();
    gb_layer *L = &p->L;
    int64_t att, moe, layout, deint, gs, norm, scoring, has_shared;
    double eps, theta, af, scale, leps, rscale;
    I64("attention", att);
    I64("D", L->D);
    F64("eps", eps);
    F64("theta", theta);
    F64("attn_factor", af);
    F64("scale", scale);
    I64("rot_dim", L->rot_dim);
    I64("rope_layout", layout);
    L->attention = (int)att;
    L->eps = (float)eps;
    L->theta = theta;
    L->attn_factor = af;
    L->scale = (float)scale;
    L->rope_layout = (int)layout;
    const int64_t D = L->D;
    V1("ln_in", L->ln_in, D, 0);
    V1("ln_post", L->ln_post, D, 0);
    {
        PyObject *v = PyDict_GetItemString(spec, "inv_freq");
        if (v && v != Py_None) {
            PyArrayObject *a = gb_array(v, "inv_freq", NPY_FLOAT64, 1, GB_COPY);
            if (!a) goto fail;
            if (gb_check_dim(a, "inv_freq", 0, L->rot_dim / 2, "rot_dim / 2") < 0) {
                Py_DECREF(a);
                goto fail;
            }
            if (keep(p, a) < 0) goto fail;
            L->inv_freq = (const double *)PyArray_DATA(a);
        }
    }
    if (att == GB_LAYER_MLA) {
        I64("H", L->H);
        I64("Dn", L->Dn);
        I64("Dr", L->Dr);
        I64("Dvm", L->Dvm);
        I64("R", L->R);
        I64("QL", L->QL);
        F64("latent_eps", leps);
        I64("deinterleave", deint);
        L->latent_eps = (float)leps;
        L->deinterleave = (int)deint;
        const int64_t H = L->H, Dq = L->Dn + L->Dr;
        if (L->QL) {
            W2("q_a", L->q_a, L->QL, D);
            W2("q_b", L->q_b, H * Dq, L->QL);
            V1("q_a_bias", L->q_a_bias, L->QL, 1);
            V1("q_a_ln", L->q_a_ln, L->QL, 0);
            W2OPT("qa_kva", L->qa_kva, L->QL + L->R + L->Dr, D); /* q_a then kv_a stacked (quant.fuse_rows) */
        } else
            W2("q_proj", L->q_proj, H * Dq, D);
        W2("kv_a", L->kv_a, L->R + L->Dr, D);
        V1("kv_a_bias", L->kv_a_bias, L->R + L->Dr, 1);
        V1("kv_a_ln", L->kv_a_ln, L->R, 0);
        if (PyDict_GetItemString(spec, "k_b")) { /* GGUF's k_b / v_b (attention.KVBSplit) */
            if (kv_split_spec(p, spec) < 0) goto fail;
        } else
            W2("kv_b", L->kv_b, H * (L->Dn + L->Dvm), L->R);
        W2("wo", L->wo, D, H * L->Dvm);
        if (L->Dr % 2 || L->Dr > 4096) {
            PyErr_Format(PyExc_ValueError, "layer spec: rope dims Dr=%lld must be even (and <= 4096)", (long long)L->Dr);
            goto fail;
        }
    } else if (att == GB_LAYER_GQA) {
        I64("Hq", L->Hq);
        I64("Hkv", L->Hkv);
        I64("Dh", L->Dh);
        I64("Dv", L->Dv);
        W2("wq", L->wq, L->Hq * L->Dh, D);
        W2("wk", L->wk, L->Hkv * L->Dh, D);
        W2("wv", L->wv, L->Hkv * L->Dv, D);
        V1("bq", L->bq, L->Hq * L->Dh, 1);
        V1("bk", L->bk, L->Hkv * L->Dh, 1);
        V1("bv", L->bv, L->Hkv * L->Dv, 1);
        V1("q_norm", L->q_norm, L->Dh, 1);
        V1("k_norm", L->k_norm, L->Dh, 1);
        W2("wo", L->wo, D, L->Hq * L->Dv);
        /* optional: the sliding window (0: the cache layer's own) and logit soft-capping (0: off) */
        if (PyDict_GetItemString(spec, "window")) I64("window", L->window);
        if (PyDict_GetItemString(spec, "softcap")) {
            double sc;
            F64("softcap", sc);
            L->softcap = (float)sc;
        }
        if (L->window < 0 || !(L->softcap >= 0.0f) || isinf(L->softcap)) {
            PyErr_Format(PyExc_ValueError, "layer spec: window=%lld must be >= 0 and softcap=%g finite and >= 0",
                         (long long)L->window, (double)L->softcap);
            goto fail;
        }
        if (L->Hkv < 1 || L->Hq % L->Hkv) {
            PyErr_Format(PyExc_ValueError, "layer spec: Hq=%lld is not a multiple of Hkv=%lld", (long long)L->Hq,
                         (long long)L->Hkv);
            goto fail;
        }
    } else {
        PyErr_Format(PyExc_ValueError, "layer spec: attention must be 0 (gqa) or 1 (mla), got %lld", (long long)att);
        goto fail;
    }
    V1("bo", L->bo, D, 1);
    I64("moe", moe);
    L->moe = (int)moe;
    if (moe) {
        I64("E", L->E);
        I64("Fe", L->Fe);
        I64("top_k", L->top_k);
        I64("scoring", scoring);
        I64("n_group", L->n_group);
        I64("topk_group", L->topk_group);
        I64("group_score", gs);
        I64("norm_topk", norm);
        F64("rscale", rscale);
        I64("has_shared", has_shared);
        L->scoring = (int)scoring;
        L->group_score = (int)gs;
        L->norm_topk = (int)norm;
        L->rscale = rscale;
        L->has_shared = (int)has_shared;
        {
            npy_intp dd[2] = {L->E, D};
            const void *pp_;
            if (get_arr(p, spec, "router", NULL, 2, dd, 0, &pp_, NULL) < 0) goto fail;
            L->router = (const float *)pp_;
        }
        V1("rbias", L->rbias, L->E, 1);
        W3("eg", L->eg, L->E, L->Fe, D);
        W3("eu", L->eu, L->E, L->Fe, D);
        W3("ed", L->ed, L->E, D, L->Fe);
        const int fg = L->eg.fmt, fu = L->eu.fmt, fd = L->ed.fmt;
        if (gb_is_float_fmt(fg) ? fg != fu || !gb_is_float_fmt(fd)
                                : fg == GB_Q8_0 || fg == GB_Q4_0 ? fu != fg || fd != fg : !is_kq(fu) || !is_kq(fd)) {
            PyErr_Format(PyExc_ValueError, "layer spec: routed experts in formats %d/%d/%d: want float gate and up of one format "
                         "with a float down, q8_0 or q4_0 throughout, or K/IQ formats throughout", fg, fu, fd);
            goto fail;
        }
        if (L->has_shared) {
            gb_wmat sg, su, sd;
            int64_t Fs;
            I64("Fs", Fs);
            W2("sg", sg, Fs, D);
            W2("su", su, Fs, D);
            W2("sd", sd, D, Fs);
            if (gb_is_float_fmt(fg) && gb_is_float_fmt(sg.fmt) && gb_is_float_fmt(su.fmt) && gb_is_float_fmt(sd.fmt))
                L->shared = (gb_shared_expert){sg.p, su.p, sd.p, sg.fmt, su.fmt, sd.fmt, Fs}; /* in gb_moe_experts' regions */
            else { /* added after the routed experts (ops.moe's `y += swiglu(x, *shared)`) */
                L->has_shared = 0;
                L->qshared = 1;
                L->sg = sg;
                L->su = su;
                L->sd = sd;
                L->Fs = Fs;
                W2OPT("sgu", L->sgu, 2 * Fs, D); /* gate then up stacked (quant.fuse_rows) */
            }
        }
        if (L->top_k < 1 || L->top_k > L->E) {
            PyErr_Format(PyExc_ValueError, "layer spec: top_k=%lld must be in [1, E=%lld]", (long long)L->top_k,
                         (long long)L->E);
            goto fail;
        }
    } else {
        int64_t gemma = 0;
        if (PyDict_GetItemString(spec, "gemma")) I64("gemma", gemma);
        L->gemma = (int)gemma;
        if (gemma) { /* Gemma's sandwich norms (GQA, dense GeGLU) */
            if (att != GB_LAYER_GQA) {
                PyErr_SetString(PyExc_ValueError, "layer spec: a Gemma layer must be GQA");
                goto fail;
            }
            V1("ln_pre_ffn", L->ln_pre_ffn, D, 0);
            V1("ln_post_ffn", L->ln_post_ffn, D, 0);
        }
        I64("F", L->F);
        W2("gate", L->gate, L->F, D);
        W2("up", L->up, L->F, D);
        W2("down", L->down, D, L->F);
        W2OPT("gate_up", L->gate_up, 2 * L->F, D); /* gate then up stacked (quant.fuse_rows) */
        if (gemma && L->quant) {
            PyErr_SetString(PyExc_ValueError, "layer spec: a Gemma layer takes float matrices only (its block-format "
                            "matrices run through Layer.forward_py)");
            goto fail;
        }
    }
    PyObject *cap = PyCapsule_New(p, PLAN_NAME, plan_free);
    if (!cap) goto fail;
    return cap;
fail:
    for (int i = 0; i < p->nrefs; i++) Py_XDECREF(p->refs[i]);
    PyMem_Free(p);
    return NULL;
}

static PyObject *py_layer_forward(PyObject *self, PyObject *args) {
    PyObject *cap, *xo, *co, *po;
    long long layer;
    const char *strategy_name = "flash";
    long long n_out = -1;
    if (!PyArg_ParseTuple(args, "OOOLO|sL:layer_forward", &cap, &xo, &co, &layer, &po, &strategy_name, &n_out)) return NULL;
    const int strategy = gb_mla_strategy(strategy_name);
    if (strategy < 0) return NULL;
    plan_t *p = (plan_t *)PyCapsule_GetPointer(cap, PLAN_NAME);
    if (!p) return NULL;
    const gb_layer *L = &p->L;
    gb_kvcache *c = gb_kvcache_from_py(co, "cache");
    if (!c) return NULL;
    PyArrayObject *x = NULL, *pos = NULL, *y = NULL, *cnt = NULL;
    PyObject *ret = NULL;
    if (!(x = gb_array(xo, "x", NPY_FLOAT32, 2, GB_COPY))) goto done;
    if (gb_check_dim(x, "x", 1, L->D, "hidden_size")) goto done;
    const npy_intp T = PyArray_DIM(x, 0);
    if (!(pos = gb_array(po, "positions", NPY_INT64, 1, GB_COPY))) goto done;
    if (gb_check_dim(pos, "positions", 0, T, "x.shape[0] (tokens)")) goto done;
    if (gb_check_finite(x, "x") < 0) goto done;
    if (n_out == -1) n_out = T;
    if (n_out < 1 || n_out > T) {
        PyErr_Format(PyExc_ValueError, "`n_out`=%lld must be in [1, %lld] (the rows of x), or -1 for all", n_out, (long long)T);
        goto done;
    }
    if (layer < 0 || layer >= c->n_layers) {
        PyErr_Format(PyExc_ValueError, "`layer`=%lld is out of range for a cache of %lld layers", layer,
                     (long long)c->n_layers);
        goto done;
    }
    const int mla = L->attention == GB_LAYER_MLA;
    if (mla ? (c->kind != GB_KV_MLA || c->dk != L->R || c->dv != L->Dr)
            : (c->kind != GB_KV_GQA || c->n_heads != L->Hkv || c->dk != L->Dh || c->dv != L->Dv)) {
        PyErr_Format(PyExc_ValueError, "`cache` (%s, %lld heads of %lld/%lld dims) does not match the layer (%s)",
                     c->kind == GB_KV_MLA ? "mla" : "gqa", (long long)c->n_heads, (long long)c->dk, (long long)c->dv,
                     mla ? "mla" : "gqa");
        goto done;
    }
    npy_intp yd[2] = {(npy_intp)n_out, L->D}, cd[1] = {L->moe ? L->E : 0};
    if (!(y = gb_new_f32(2, yd))) goto done;
    if (L->moe && !(cnt = (PyArrayObject *)PyArray_ZEROS(1, cd, NPY_INT64, 0))) goto done;
    int st = GB_OK, err;
    Py_BEGIN_ALLOW_THREADS
    if (!(err = gb_kvcache_lock(c, 1))) { /* exclusive: the layer appends */
        st = gb_layer_forward(L, c, layer, (const float *)PyArray_DATA(x), T, (const int64_t *)PyArray_DATA(pos), strategy,
                              (int64_t)n_out, (float *)PyArray_DATA(y), cnt ? (int64_t *)PyArray_DATA(cnt) : NULL);
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
    ret = Py_BuildValue("(OO)", y, cnt ? (PyObject *)cnt : Py_None);
done:
    Py_XDECREF(x);
    Py_XDECREF(pos);
    Py_XDECREF(y);
    Py_XDECREF(cnt);
    return ret;
}

PyMethodDef gb_layer_methods[] = {
    {"layer_plan", py_layer_plan, METH_VARARGS,
     "layer_plan(spec: dict) -> capsule: one decoder layer's arrays and sizes, checked once "
     "(glmbench.model.Layer builds the spec)."},
    {"layer_forward", py_layer_forward, METH_VARARGS,
     "layer_forward(plan, x[T, D] f32, cache, layer, positions[T] int64, strategy='flash', n_out=-1) -> "
     "(y[n_out, D] f32, counts[E] int64 | None): the whole layer in one call, appending to the cache; the "
     "feed-forward part on the last n_out rows only (-1: all T)."},
    {NULL, NULL, 0, NULL}};

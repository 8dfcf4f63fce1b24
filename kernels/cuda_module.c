/* cuda_module.c: the glmbench._cuda module, a thin CPython binding over kernels/gbcuda.h.
 *
 * Device memory travels as Python ints (device addresses); glmbench/cuda.py wraps them in
 * DeviceArray objects that carry shape and dtype and check every call before it reaches here.
 * Each function parses its arguments, releases the GIL around the gbc_* call, and turns a
 * non-zero status into ValueError (bad size or option) or RuntimeError (CUDA/cuBLAS error,
 * with CUDA's own message). Host buffers (upload/download) go through the buffer protocol, so
 * this file needs neither NumPy's C API nor CUDA's headers. */
#define PY_SSIZE_T_CLEAN
#include <Python.h>
#include <stdint.h>

#include "gbcuda.h"

typedef unsigned long long ptr_t; /* "K" */
typedef long long i64;            /* "L" */
#define P(x) ((void *)(uintptr_t)(x))

static PyObject *raise_status(int st) {
    PyErr_SetString(st == GBC_EVALUE ? PyExc_ValueError : PyExc_RuntimeError, gbc_last_error());
    return NULL;
}

/* Run a gbc_* call without the GIL; on failure raise and return NULL from the binding. */
#define RUN(call)                              \
    do {                                       \
        int st_;                               \
        Py_BEGIN_ALLOW_THREADS st_ = (call);   \
        Py_END_ALLOW_THREADS                   \
        if (st_ != GBC_OK) return raise_status(st_); \
    } while (0)

static PyObject *py_device_count(PyObject *self, PyObject *noargs) {
    int n = 0;
    RUN(gbc_device_count(&n));
    return PyLong_FromLong(n);
}

static PyObject *py_device_info(PyObject *self, PyObject *noargs) {
    char name[256] = "";
    int sms = 0, major = 0, minor = 0, smem = 0;
    size_t total = 0, l2 = 0;
    RUN(gbc_device_info(name, sizeof name, &sms, &major, &minor, &total, &l2, &smem));
    return Py_BuildValue("{s:s,s:i,s:(ii),s:K,s:K,s:i}", "name", name, "sm_count", sms, "compute_capability", major,
                         minor, "total_memory", (ptr_t)total, "l2_bytes", (ptr_t)l2, "smem_per_block_optin", smem);
}

static PyObject *py_mem_info(PyObject *self, PyObject *noargs) {
    size_t f = 0, t = 0;
    RUN(gbc_mem_info(&f, &t));
    return Py_BuildValue("(KK)", (ptr_t)f, (ptr_t)t);
}

static PyObject *py_have_cublas(PyObject *self, PyObject *noargs) { return PyBool_FromLong(gbc_have_cublas()); }

static PyObject *py_malloc(PyObject *self, PyObject *args) {
    i64 n;
    void *p = NULL;
    if (!PyArg_ParseTuple(args, "L:malloc", &n)) return NULL;
    if (n < 0) return PyErr_Format(PyExc_ValueError, "`nbytes` must be >= 0, got %lld", n);
    RUN(gbc_malloc(&p, (size_t)n));
    return PyLong_FromUnsignedLongLong((ptr_t)(uintptr_t)p);
}

static PyObject *py_free(PyObject *self, PyObject *args) {
    ptr_t p;
    if (!PyArg_ParseTuple(args, "K:free", &p)) return NULL;
    RUN(gbc_free(P(p)));
    Py_RETURN_NONE;
}

static PyObject *py_upload(PyObject *self, PyObject *args) {
    ptr_t dst;
    Py_buffer b;
    if (!PyArg_ParseTuple(args, "Ky*:upload", &dst, &b)) return NULL;
    if (!PyBuffer_IsContiguous(&b, 'C')) {
        PyBuffer_Release(&b);
        return PyErr_Format(PyExc_ValueError, "`src` must be C-contiguous");
    }
    int st;
    Py_BEGIN_ALLOW_THREADS st = gbc_upload(P(dst), b.buf, (size_t)b.len);
    Py_END_ALLOW_THREADS
    PyBuffer_Release(&b);
    if (st) return raise_status(st);
    Py_RETURN_NONE;
}

static PyObject *py_download(PyObject *self, PyObject *args) {
    ptr_t src;
    Py_buffer b;
    if (!PyArg_ParseTuple(args, "Kw*:download", &src, &b)) return NULL;
    if (!PyBuffer_IsContiguous(&b, 'C')) {
        PyBuffer_Release(&b);
        return PyErr_Format(PyExc_ValueError, "`dst` must be C-contiguous");
    }
    int st;
    Py_BEGIN_ALLOW_THREADS st = gbc_download(b.buf, P(src), (size_t)b.len);
    Py_END_ALLOW_THREADS
    PyBuffer_Release(&b);
    if (st) return raise_status(st);
    Py_RETURN_NONE;
}

static PyObject *py_copy(PyObject *self, PyObject *args) {
    ptr_t d, s;
    i64 n;
    if (!PyArg_ParseTuple(args, "KKL:copy", &d, &s, &n)) return NULL;
    RUN(gbc_copy(P(d), P(s), (size_t)n));
    Py_RETURN_NONE;
}

static PyObject *py_copy_bench(PyObject *self, PyObject *args) {
    ptr_t d, s;
    i64 n;
    if (!PyArg_ParseTuple(args, "KKL:copy_bench", &d, &s, &n)) return NULL;
    RUN(gbc_copy_bench(P(d), P(s), (size_t)n));
    Py_RETURN_NONE;
}

static PyObject *py_fill_u16(PyObject *self, PyObject *args) {
    ptr_t d;
    unsigned int v;
    i64 n;
    if (!PyArg_ParseTuple(args, "KIL:fill_u16", &d, &v, &n)) return NULL;
    RUN(gbc_fill_u16(P(d), (uint16_t)v, (size_t)n));
    Py_RETURN_NONE;
}

static PyObject *py_fill_u32(PyObject *self, PyObject *args) {
    ptr_t d;
    unsigned int v;
    i64 n;
    if (!PyArg_ParseTuple(args, "KIL:fill_u32", &d, &v, &n)) return NULL;
    RUN(gbc_fill_u32(P(d), (uint32_t)v, (size_t)n));
    Py_RETURN_NONE;
}

static PyObject *py_random_bf16(PyObject *self, PyObject *args) {
    ptr_t d, seed;
    i64 n;
    float scale;
    if (!PyArg_ParseTuple(args, "KLKf:random_bf16", &d, &n, &seed, &scale)) return NULL;
    RUN(gbc_random_bf16(P(d), (size_t)n, (uint64_t)seed, scale));
    Py_RETURN_NONE;
}

static PyObject *py_synchronize(PyObject *self, PyObject *noargs) {
    RUN(gbc_synchronize());
    Py_RETURN_NONE;
}

static PyObject *py_event_create(PyObject *self, PyObject *noargs) {
    void *e = NULL;
    RUN(gbc_event_create(&e));
    return PyLong_FromUnsignedLongLong((ptr_t)(uintptr_t)e);
}

static PyObject *py_event_destroy(PyObject *self, PyObject *args) {
    ptr_t e;
    if (!PyArg_ParseTuple(args, "K:event_destroy", &e)) return NULL;
    RUN(gbc_event_destroy(P(e)));
    Py_RETURN_NONE;
}

static PyObject *py_event_record(PyObject *self, PyObject *args) {
    ptr_t e;
    if (!PyArg_ParseTuple(args, "K:event_record", &e)) return NULL;
    RUN(gbc_event_record(P(e)));
    Py_RETURN_NONE;
}

static PyObject *py_event_elapsed(PyObject *self, PyObject *args) {
    ptr_t a, b;
    float ms = 0.0f;
    if (!PyArg_ParseTuple(args, "KK:event_elapsed", &a, &b)) return NULL;
    RUN(gbc_event_elapsed(P(a), P(b), &ms));
    return PyFloat_FromDouble(ms);
}

static PyObject *py_capture_begin(PyObject *self, PyObject *noargs) {
    RUN(gbc_capture_begin());
    Py_RETURN_NONE;
}

static PyObject *py_capture_end(PyObject *self, PyObject *noargs) {
    void *g = NULL;
    RUN(gbc_capture_end(&g));
    return PyLong_FromUnsignedLongLong((ptr_t)(uintptr_t)g);
}

static PyObject *py_graph_launch(PyObject *self, PyObject *args) {
    ptr_t g;
    if (!PyArg_ParseTuple(args, "K:graph_launch", &g)) return NULL;
    RUN(gbc_graph_launch(P(g)));
    Py_RETURN_NONE;
}

static PyObject *py_graph_destroy(PyObject *self, PyObject *args) {
    ptr_t g;
    if (!PyArg_ParseTuple(args, "K:graph_destroy", &g)) return NULL;
    RUN(gbc_graph_destroy(P(g)));
    Py_RETURN_NONE;
}

/* ---- ops ----------------------------------------------------------------------------------- */

static PyObject *py_rms_norm(PyObject *self, PyObject *args) {
    ptr_t x, w, y;
    i64 rows, dim;
    float eps;
    int v;
    if (!PyArg_ParseTuple(args, "KKKLLfi:rms_norm", &x, &w, &y, &rows, &dim, &eps, &v)) return NULL;
    RUN(gbc_rms_norm(P(x), P(w), P(y), rows, dim, eps, v));
    Py_RETURN_NONE;
}

static PyObject *py_rope(PyObject *self, PyObject *args) {
    ptr_t x, pos, y;
    i64 T, H, Dh, rot_dim, rot_off;
    double theta;
    int layout, v;
    if (!PyArg_ParseTuple(args, "KKKLLLdLLii:rope", &x, &pos, &y, &T, &H, &Dh, &theta, &rot_dim, &rot_off, &layout, &v))
        return NULL;
    RUN(gbc_rope(P(x), (const int64_t *)P(pos), P(y), T, H, Dh, theta, rot_dim, rot_off, layout, v));
    Py_RETURN_NONE;
}

static PyObject *py_linear(PyObject *self, PyObject *args) {
    ptr_t x, w, b, y;
    i64 T, N, K;
    int v;
    if (!PyArg_ParseTuple(args, "KKKKLLLi:linear", &x, &w, &b, &y, &T, &N, &K, &v)) return NULL;
    RUN(gbc_linear(P(x), P(w), P(b), P(y), T, N, K, v));
    Py_RETURN_NONE;
}

static PyObject *py_linear_ex(PyObject *self, PyObject *args) {
    ptr_t x, w, b, y, nw, res;
    i64 T, N, K;
    float eps;
    int v;
    if (!PyArg_ParseTuple(args, "KKKKLLLKfKi:linear_ex", &x, &w, &b, &y, &T, &N, &K, &nw, &eps, &res, &v)) return NULL;
    RUN(gbc_linear_ex(P(x), P(w), P(b), P(y), T, N, K, P(nw), eps, P(res), v));
    Py_RETURN_NONE;
}

static PyObject *py_silu_mul(PyObject *self, PyObject *args) {
    ptr_t g, u, h;
    i64 T, F, ld;
    int v;
    if (!PyArg_ParseTuple(args, "KKKLLLi:silu_mul", &g, &u, &h, &T, &F, &ld, &v)) return NULL;
    RUN(gbc_silu_mul(P(g), P(u), P(h), T, F, ld, v));
    Py_RETURN_NONE;
}

static PyObject *py_add(PyObject *self, PyObject *args) {
    ptr_t a, b, y;
    i64 n;
    if (!PyArg_ParseTuple(args, "KKKL:add", &a, &b, &y, &n)) return NULL;
    RUN(gbc_add(P(a), P(b), P(y), n));
    Py_RETURN_NONE;
}

static PyObject *py_swiglu_gemv(PyObject *self, PyObject *args) {
    ptr_t x, g, u, h;
    i64 T, F, K;
    if (!PyArg_ParseTuple(args, "KKKKLLL:swiglu_gemv", &x, &g, &u, &h, &T, &F, &K)) return NULL;
    RUN(gbc_swiglu_gemv(P(x), P(g), P(u), P(h), T, F, K));
    Py_RETURN_NONE;
}

static PyObject *py_moe_swiglu(PyObject *self, PyObject *args) {
    ptr_t x, st, g, u, h, off;
    i64 rows, E, F, D;
    if (!PyArg_ParseTuple(args, "KKKKKKLLLL:moe_swiglu", &x, &st, &g, &u, &h, &off, &rows, &E, &F, &D)) return NULL;
    RUN(gbc_moe_swiglu(P(x), (const int32_t *)P(st), P(g), P(u), P(h), (const int32_t *)P(off), rows, E, F, D));
    Py_RETURN_NONE;
}

static PyObject *py_mla_prepare(PyObject *self, PyObject *args) {
    ptr_t q, c, w, pos, pages, table, qn, qr;
    float eps;
    double theta;
    int layout;
    i64 ps, start, T, H, Dn, Dr, R;
    if (!PyArg_ParseTuple(args, "KKKfKdiKKLLKKLLLLL:mla_prepare", &q, &c, &w, &eps, &pos, &theta, &layout, &pages, &table,
                          &ps, &start, &qn, &qr, &T, &H, &Dn, &Dr, &R))
        return NULL;
    RUN(gbc_mla_prepare(P(q), P(c), P(w), eps, (const int64_t *)P(pos), theta, layout, P(pages),
                        (const int32_t *)P(table), ps, start, P(qn), P(qr), T, H, Dn, Dr, R));
    Py_RETURN_NONE;
}

static PyObject *py_moe_route(PyObject *self, PyObject *args) {
    ptr_t x, wr, bias, idx, wt, ws;
    i64 T, D, E, k, ng, tg;
    int scoring, gscore, norm, v;
    float scale;
    if (!PyArg_ParseTuple(args, "KKKKKLLLLiLLiifKi:moe_route", &x, &wr, &bias, &idx, &wt, &T, &D, &E, &k, &scoring, &ng,
                          &tg, &gscore, &norm, &scale, &ws, &v))
        return NULL;
    RUN(gbc_moe_route(P(x), (const float *)P(wr), (const float *)P(bias), (int32_t *)P(idx), (float *)P(wt), T, D, E, k,
                      scoring, ng, tg, gscore, norm, scale, (float *)P(ws), v));
    Py_RETURN_NONE;
}

static PyObject *py_moe_max_tiles(PyObject *self, PyObject *args) {
    i64 rows, E;
    if (!PyArg_ParseTuple(args, "LL:moe_max_tiles", &rows, &E)) return NULL;
    return PyLong_FromLongLong(gbc_moe_max_tiles(rows, E));
}

static PyObject *py_moe_permute(PyObject *self, PyObject *args) {
    ptr_t idx, counts, offsets, sorted_tok, slot_of, tiles, n_tiles;
    i64 T, k, E;
    if (!PyArg_ParseTuple(args, "KLLLKKKKKK:moe_permute", &idx, &T, &k, &E, &counts, &offsets, &sorted_tok, &slot_of,
                          &tiles, &n_tiles))
        return NULL;
    RUN(gbc_moe_permute((const int32_t *)P(idx), T, k, E, (int64_t *)P(counts), (int32_t *)P(offsets),
                        (int32_t *)P(sorted_tok), (int32_t *)P(slot_of), (int32_t *)P(tiles), (int32_t *)P(n_tiles)));
    Py_RETURN_NONE;
}

static PyObject *py_moe_gather(PyObject *self, PyObject *args) {
    ptr_t x, st, xs;
    i64 rows, D;
    if (!PyArg_ParseTuple(args, "KKKLL:moe_gather", &x, &st, &xs, &rows, &D)) return NULL;
    RUN(gbc_moe_gather(P(x), (const int32_t *)P(st), P(xs), rows, D));
    Py_RETURN_NONE;
}

static PyObject *py_moe_grouped_linear(PyObject *self, PyObject *args) {
    ptr_t xs, w, ys, offsets, tiles, n_tiles;
    i64 rows, E, N, K;
    int v;
    if (!PyArg_ParseTuple(args, "KKKKKKLLLLi:moe_grouped_linear", &xs, &w, &ys, &offsets, &tiles, &n_tiles, &rows, &E, &N,
                          &K, &v))
        return NULL;
    RUN(gbc_moe_grouped_linear(P(xs), P(w), P(ys), (const int32_t *)P(offsets), (const int32_t *)P(tiles),
                               (const int32_t *)P(n_tiles), rows, E, N, K, v));
    Py_RETURN_NONE;
}

static PyObject *py_moe_unpermute(PyObject *self, PyObject *args) {
    ptr_t ys, slot_of, wt, shared, res, y;
    i64 T, k, D;
    if (!PyArg_ParseTuple(args, "KKKKKKLLL:moe_unpermute", &ys, &slot_of, &wt, &shared, &res, &y, &T, &k, &D))
        return NULL;
    RUN(gbc_moe_unpermute(P(ys), (const int32_t *)P(slot_of), (const float *)P(wt), P(shared), P(res), P(y), T, k, D));
    Py_RETURN_NONE;
}

static PyObject *py_paged_append(PyObject *self, PyObject *args) {
    ptr_t pages, table, src;
    i64 ps, rw, off, sw, T, start;
    if (!PyArg_ParseTuple(args, "KKLLLKLLL:paged_append", &pages, &table, &ps, &rw, &off, &src, &sw, &T, &start))
        return NULL;
    RUN(gbc_paged_append(P(pages), (const int32_t *)P(table), ps, rw, off, P(src), sw, T, start));
    Py_RETURN_NONE;
}

static PyObject *py_paged_gather(PyObject *self, PyObject *args) {
    ptr_t pages, table, dst;
    i64 ps, rw, off, w, L;
    if (!PyArg_ParseTuple(args, "KKLLLKLL:paged_gather", &pages, &table, &ps, &rw, &off, &dst, &w, &L)) return NULL;
    RUN(gbc_paged_gather(P(pages), (const int32_t *)P(table), ps, rw, off, P(dst), w, L));
    Py_RETURN_NONE;
}

static PyObject *py_gqa_workspace_bytes(PyObject *self, PyObject *args) {
    i64 T, Hq, Dv, S;
    if (!PyArg_ParseTuple(args, "LLLL:gqa_workspace_bytes", &T, &Hq, &Dv, &S)) return NULL;
    return PyLong_FromSize_t(gbc_gqa_workspace_bytes(T, Hq, Dv, S));
}

static PyObject *py_gqa_plan(PyObject *self, PyObject *args) {
    i64 T, L, Hq, Hkv, Dh, Dv, S = 0;
    int v, vo = 0;
    if (!PyArg_ParseTuple(args, "LLLLLLi:gqa_plan", &T, &L, &Hq, &Hkv, &Dh, &Dv, &v)) return NULL;
    int64_t s64 = 0;
    RUN(gbc_gqa_plan(T, L, Hq, Hkv, Dh, Dv, v, &vo, &s64));
    S = s64;
    return Py_BuildValue("(iL)", vo, S);
}

static PyObject *py_mla_plan(PyObject *self, PyObject *args) {
    i64 T, L, H;
    if (!PyArg_ParseTuple(args, "LLL:mla_plan", &T, &L, &H)) return NULL;
    return PyLong_FromLongLong(gbc_mla_plan(T, L, H));
}

static PyObject *py_gqa_attention(PyObject *self, PyObject *args) {
    ptr_t q, kp, vp, table, out, ws;
    i64 ps, T, L, Hq, Hkv, Dh, Dv, S, wsb;
    float scale;
    int v;
    if (!PyArg_ParseTuple(args, "KKKKLKLLLLLLfLKLi:gqa_attention", &q, &kp, &vp, &table, &ps, &out, &T, &L, &Hq, &Hkv,
                          &Dh, &Dv, &scale, &S, &ws, &wsb, &v))
        return NULL;
    RUN(gbc_gqa_attention(P(q), P(kp), P(vp), (const int32_t *)P(table), ps, P(out), T, L, Hq, Hkv, Dh, Dv, scale, S,
                          P(ws), (size_t)wsb, v));
    Py_RETURN_NONE;
}

static PyObject *py_mla_workspace_bytes(PyObject *self, PyObject *args) {
    i64 T, H, R, S;
    if (!PyArg_ParseTuple(args, "LLLL:mla_workspace_bytes", &T, &H, &R, &S)) return NULL;
    return PyLong_FromSize_t(gbc_mla_workspace_bytes(T, H, R, S));
}

static PyObject *py_mla_absorbed_attention(PyObject *self, PyObject *args) {
    ptr_t ql, qr, pages, table, ol, ws;
    i64 ps, T, L, H, R, Dr, S, wsb;
    float scale;
    int v;
    if (!PyArg_ParseTuple(args, "KKKKLKLLLLLfLKLi:mla_absorbed_attention", &ql, &qr, &pages, &table, &ps, &ol, &T, &L, &H,
                          &R, &Dr, &scale, &S, &ws, &wsb, &v))
        return NULL;
    RUN(gbc_mla_absorbed_attention(P(ql), P(qr), P(pages), (const int32_t *)P(table), ps, P(ol), T, L, H, R, Dr, scale, S,
                                   P(ws), (size_t)wsb, v));
    Py_RETURN_NONE;
}

static PyObject *py_mla_absorb_q(PyObject *self, PyObject *args) {
    ptr_t qn, kvb, ql;
    i64 T, H, Dn, Dv, R;
    int v = 0;
    if (!PyArg_ParseTuple(args, "KKKLLLLL|i:mla_absorb_q", &qn, &kvb, &ql, &T, &H, &Dn, &Dv, &R, &v)) return NULL;
    RUN(gbc_mla_absorb_q(P(qn), P(kvb), P(ql), T, H, Dn, Dv, R, v));
    Py_RETURN_NONE;
}

static PyObject *py_attention_combine(PyObject *self, PyObject *args) {
    ptr_t ws, out;
    i64 rows, S, Dv;
    int v;
    if (!PyArg_ParseTuple(args, "KKLLLi:attention_combine", &ws, &out, &rows, &S, &Dv, &v)) return NULL;
    RUN(gbc_attention_combine_ex(P(ws), P(out), rows, S, Dv, v));
    Py_RETURN_NONE;
}

static PyObject *py_mla_absorb_o(PyObject *self, PyObject *args) {
    ptr_t ol, kvb, out;
    i64 T, H, Dn, Dv, R;
    if (!PyArg_ParseTuple(args, "KKKLLLLL:mla_absorb_o", &ol, &kvb, &out, &T, &H, &Dn, &Dv, &R)) return NULL;
    RUN(gbc_mla_absorb_o(P(ol), P(kvb), P(out), T, H, Dn, Dv, R));
    Py_RETURN_NONE;
}

static PyObject *py_mla_split_kv(PyObject *self, PyObject *args) {
    ptr_t kv, rope, k, v;
    i64 L, H, Dn, Dr, Dv;
    if (!PyArg_ParseTuple(args, "KKKKLLLLL:mla_split_kv", &kv, &rope, &k, &v, &L, &H, &Dn, &Dr, &Dv)) return NULL;
    RUN(gbc_mla_split_kv(P(kv), P(rope), P(k), P(v), L, H, Dn, Dr, Dv));
    Py_RETURN_NONE;
}

static PyObject *py_concat_heads(PyObject *self, PyObject *args) {
    ptr_t a, b, y;
    i64 rows, Da, Db;
    if (!PyArg_ParseTuple(args, "KKKLLL:concat_heads", &a, &b, &y, &rows, &Da, &Db)) return NULL;
    RUN(gbc_concat_heads(P(a), P(b), P(y), rows, Da, Db));
    Py_RETURN_NONE;
}

#define M0(name, doc) {#name, (PyCFunction)py_##name, METH_NOARGS, doc}
#define MV(name, doc) {#name, (PyCFunction)py_##name, METH_VARARGS, doc}

static PyMethodDef cuda_methods[] = {
    M0(device_count, "device_count() -> int (RuntimeError naming the CUDA error without a driver)"),
    M0(device_info, "device_info() -> dict: name, sm_count, compute_capability, total_memory, l2_bytes, ..."),
    M0(mem_info, "mem_info() -> (free_bytes, total_bytes) from cudaMemGetInfo"),
    M0(have_cublas, "have_cublas() -> bool: built with cuBLAS (linear version 4)"),
    MV(malloc, "malloc(nbytes) -> device address"),
    MV(free, "free(address)"),
    MV(upload, "upload(address, host_buffer): synchronous copy of the whole buffer"),
    MV(download, "download(address, writable_host_buffer): synchronous copy filling the buffer"),
    MV(copy, "copy(dst, src, nbytes): device to device, on the stream"),
    MV(copy_bench, "copy_bench(dst, src, nbytes): the 16-byte copy kernel (bandwidth ceiling)"),
    MV(fill_u16, "fill_u16(address, value, count)"),
    MV(fill_u32, "fill_u32(address, value, count)"),
    MV(random_bf16, "random_bf16(address, count, seed, scale): uniform(-scale, scale) in bf16"),
    M0(synchronize, "synchronize(): wait for the stream; raises a pending kernel fault"),
    M0(event_create, "event_create() -> event"),
    MV(event_destroy, "event_destroy(event)"),
    MV(event_record, "event_record(event) on the stream"),
    MV(event_elapsed, "event_elapsed(start, stop) -> ms"),
    M0(capture_begin, "capture_begin(): start capturing the stream into a CUDA graph"),
    M0(capture_end, "capture_end() -> graph (instantiated)"),
    MV(graph_launch, "graph_launch(graph)"),
    MV(graph_destroy, "graph_destroy(graph)"),
    MV(rms_norm, "rms_norm(x, w, y, rows, dim, eps, version)"),
    MV(rope, "rope(x, pos, y, T, H, Dh, theta, rot_dim, rot_offset, layout, version)"),
    MV(linear, "linear(x, w, bias, y, T, N, K, version)"),
    MV(linear_ex, "linear_ex(x, w, bias, y, T, N, K, norm_w, eps, residual, version): GEMV with fused RMSNorm/residual"),
    MV(silu_mul, "silu_mul(g, u, h, T, F, ld_in, version)"),
    MV(add, "add(a, b, y, n)"),
    MV(moe_route, "moe_route(x, w_r, bias, idx, w, T, D, E, k, scoring 0=sigmoid|1=softmax, n_group, topk_group, "
                  "group_score 0=top2_sum|1=max, norm, scale, logits_ws, version)"),
    MV(swiglu_gemv, "swiglu_gemv(x, wg, wu, h, T, F, K): fused decode SwiGLU middle, T <= 8"),
    MV(moe_swiglu, "moe_swiglu(x, sorted_tok, wg, wu, h, offsets, rows, E, F, D): fused decode expert middle"),
    MV(mla_prepare, "mla_prepare(q, c, kv_norm_w, eps, pos, theta, layout, pages, table, page_size, start, q_nope, q_rope, T, H, Dn, Dr, R)"),
    MV(moe_max_tiles, "moe_max_tiles(rows, E) -> int"),
    MV(moe_permute, "moe_permute(idx, T, k, E, counts, offsets, sorted_tok, slot_of, tiles, n_tiles)"),
    MV(moe_gather, "moe_gather(x, sorted_tok, xs, rows, D)"),
    MV(moe_grouped_linear, "moe_grouped_linear(xs, w, ys, offsets, tiles, n_tiles, rows, E, N, K, version)"),
    MV(moe_unpermute, "moe_unpermute(ys, slot_of, w, shared, residual, y, T, k, D)"),
    MV(paged_append, "paged_append(pages, table, page_size, row_width, col_off, src, src_width, T, start)"),
    MV(paged_gather, "paged_gather(pages, table, page_size, row_width, col_off, dst, width, L)"),
    MV(gqa_workspace_bytes, "gqa_workspace_bytes(T, Hq, Dv, n_splits) -> int"),
    MV(gqa_plan, "gqa_plan(T, L, Hq, Hkv, Dh, Dv, version) -> (version, n_splits) that version 0 / n_splits 0 choose"),
    MV(mla_plan, "mla_plan(T, L, H) -> n_splits that n_splits 0 chooses"),
    MV(gqa_attention, "gqa_attention(q, k_pages, v_pages, table, page_size, out, T, L, Hq, Hkv, Dh, Dv, scale, n_splits, ws, ws_bytes, version)"),
    MV(mla_workspace_bytes, "mla_workspace_bytes(T, H, R, n_splits) -> int"),
    MV(mla_absorbed_attention, "mla_absorbed_attention(q_lat, q_rope, pages, table, page_size, o_lat, T, L, H, R, Dr, scale, n_splits, ws, ws_bytes, version)"),
    MV(mla_absorb_q, "mla_absorb_q(q_nope, kv_b, q_lat, T, H, Dn, Dv, R, version=0)"),
    MV(attention_combine, "attention_combine(ws, out, rows, S, Dv, version): the split-K combine alone"),
    MV(mla_absorb_o, "mla_absorb_o(o_lat, kv_b, out, T, H, Dn, Dv, R)"),
    MV(mla_split_kv, "mla_split_kv(kv, rope, k, v, L, H, Dn, Dr, Dv)"),
    MV(concat_heads, "concat_heads(a, b, y, rows, Da, Db)"),
    {NULL, NULL, 0, NULL}};

static struct PyModuleDef cudamodule = {PyModuleDef_HEAD_INIT, "_cuda",
                                        "glmbench CUDA kernels (raw device addresses; use glmbench.cuda).", -1,
                                        cuda_methods};

PyMODINIT_FUNC PyInit__cuda(void) { return PyModule_Create(&cudamodule); }

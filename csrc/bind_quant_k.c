/* bind_quant_k.c: Python bindings for quant_k.c (ggml q4_K / q5_K / q6_K read as stored).
 * Same pattern as bind_quant.c; formats are ggml's type numbers (quant_k.h), glmbench/core/quant.py
 * maps names. */
#include "bind.h"
#include "quant_iq.h"
#include "moe_k.h"
#include "bench.h"
#include "quant_k.h"

/* iq4_nl and mxfp4 (csrc/quant_iq.c, blocks of 32) share these entry points with the K-quants */
static int64_t row_bytes_any(int fmt, int64_t k) { return gb_is_iqfmt(fmt) ? gb_iq_row_bytes(fmt, k) : gb_k_row_bytes(fmt, k); }

/* the repacked layouts (quant_k.h for q4_K/q5_K/q6_K/iq4_xs, quant_iq.h for iq4_nl/mxfp4) */
static int packable(int fmt) { return gb_kp_is_fmt(fmt) || gb_is_iqfmt(fmt); }
static int64_t packed_bytes_any(int fmt, int64_t n, int64_t k) { return gb_is_iqfmt(fmt) ? gb_iqp_bytes(fmt, n, k) : gb_kp_bytes(fmt, n, k); }

static int check_pfmt(int fmt, Py_ssize_t k) {
    if (!packable(fmt)) {
        PyErr_Format(PyExc_ValueError, "`fmt` must be %d (q4_K), %d (q5_K), %d (q6_K), %d (iq4_xs), %d (iq4_nl) or %d (mxfp4) to repack, "
                     "got %d", GB_Q4_K, GB_Q5_K, GB_Q6_K, GB_IQ4_XS, GB_IQ4_NL, GB_MXFP4, fmt);
        return -1;
    }
    return 0;
}

static int check_kfmt(int fmt) {
    if (!gb_is_kfmt(fmt) && !gb_is_iqfmt(fmt)) {
        PyErr_Format(PyExc_ValueError, "`fmt` must be %d (q2_K), %d (q3_K), %d (q4_K), %d (q5_K), %d (q6_K), %d (iq4_xs), "
                     "%d (iq4_nl) or %d (mxfp4), got %d", GB_Q2_K, GB_Q3_K, GB_Q4_K, GB_Q5_K, GB_Q6_K, GB_IQ4_XS, GB_IQ4_NL, GB_MXFP4, fmt);
        return -1;
    }
    return 0;
}

static int check_k(Py_ssize_t k) {
    if (k <= 0 || k % GB_QKK) {
        PyErr_Format(PyExc_ValueError, "`k` must be a positive multiple of 256 (K-quant super-blocks), got %ld", (long)k);
        return -1;
    }
    return 0;
}

static int check_fk(int fmt, Py_ssize_t k) {
    if (!gb_is_iqfmt(fmt)) return check_k(k);
    if (k <= 0 || k % 32) {
        PyErr_Format(PyExc_ValueError, "`k` must be a positive multiple of 32 (iq4_nl/mxfp4 blocks), got %ld", (long)k);
        return -1;
    }
    return 0;
}

static PyObject *py_kdequantize(PyObject *self, PyObject *args, PyObject *kw) {
    static char *kwlist[] = {"q", "fmt", "k", NULL};
    PyObject *qo;
    int fmt;
    Py_ssize_t k;
    PyArrayObject *q = NULL, *y = NULL;
    PyObject *ret = NULL;
    if (!PyArg_ParseTupleAndKeywords(args, kw, "Oin:kdequantize", kwlist, &qo, &fmt, &k)) return NULL;
    if (check_kfmt(fmt) < 0 || check_fk(fmt, k) < 0) goto done;
    if (!(q = gb_array(qo, "q", NPY_UINT8, 2, GB_COPY))) goto done;
    if (gb_check_dim(q, "q", 1, (npy_intp)row_bytes_any(fmt, k), "the bytes of one row of k elements") < 0) goto done;
    npy_intp dims[2] = {PyArray_DIM(q, 0), k};
    if (!(y = gb_new_f32(2, dims))) goto done;
    int st;
    Py_BEGIN_ALLOW_THREADS
    st = (gb_is_iqfmt(fmt) ? gb_iq_dequantize_rows : gb_k_dequantize_rows)(fmt, PyArray_DATA(q), (float *)PyArray_DATA(y), dims[0], k);
    Py_END_ALLOW_THREADS
    ret = gb_result(st, &y);
done:
    Py_XDECREF(q);
    Py_XDECREF(y);
    return ret;
}

/* x f32 [R, K] -> the q8_K bytes, uint8 [R, K/256 * 292] (ggml's block_q8_K) */
static PyObject *py_quantize_q8_K(PyObject *self, PyObject *args, PyObject *kw) {
    static char *kwlist[] = {"x", NULL};
    PyObject *xo;
    PyArrayObject *x = NULL, *q = NULL;
    PyObject *ret = NULL;
    if (!PyArg_ParseTupleAndKeywords(args, kw, "O:quantize_q8_K", kwlist, &xo)) return NULL;
    if (!(x = gb_array(xo, "x", NPY_FLOAT32, 2, GB_COPY))) goto done;
    const npy_intp R = PyArray_DIM(x, 0), K = PyArray_DIM(x, 1);
    if (check_k(K) < 0) goto done;
    if (gb_check_finite(x, "x") < 0) goto done;
    npy_intp dims[2] = {R, K / GB_QKK * (npy_intp)sizeof(gb_block_q8_K)};
    if (!(q = (PyArrayObject *)PyArray_SimpleNew(2, dims, NPY_UINT8))) goto done;
    for (npy_intp r = 0; r < R; r++)
        gb_quantize_row_q8_K((const float *)PyArray_DATA(x) + r * K, (gb_block_q8_K *)((uint8_t *)PyArray_DATA(q) + r * dims[1]), K);
    ret = (PyObject *)q;
    q = NULL;
done:
    Py_XDECREF(x);
    Py_XDECREF(q);
    return ret;
}

static PyObject *py_klinear(PyObject *self, PyObject *args, PyObject *kw) {
    static char *kwlist[] = {"x", "w", "fmt", "k", "bias", "version", NULL};
    PyObject *xo, *wo, *bo = Py_None;
    int fmt, version = GB_KV_AUTO;
    Py_ssize_t k;
    PyArrayObject *x = NULL, *w = NULL, *b = NULL, *y = NULL;
    PyObject *ret = NULL;
    if (!PyArg_ParseTupleAndKeywords(args, kw, "OOin|Oi:klinear", kwlist, &xo, &wo, &fmt, &k, &bo, &version)) return NULL;
    if (check_kfmt(fmt) < 0 || check_fk(fmt, k) < 0) goto done;
    if (gb_packed_linear_args(xo, wo, bo, fmt, k, NULL, row_bytes_any, &x, &w, &b, &y) < 0) goto done;
    const npy_intp T = PyArray_DIM(x, 0), N = PyArray_DIM(w, 0);
    int st;
    Py_BEGIN_ALLOW_THREADS
    st = (gb_is_iqfmt(fmt) ? gb_iqlinear : gb_klinear)(fmt, (const float *)PyArray_DATA(x), PyArray_DATA(w), b ? (const float *)PyArray_DATA(b) : NULL,
                    (float *)PyArray_DATA(y), T, N, k, version);
    Py_END_ALLOW_THREADS
    ret = gb_result(st, &y);
done:
    Py_XDECREF(x);
    Py_XDECREF(w);
    Py_XDECREF(b);
    Py_XDECREF(y);
    return ret;
}

/* routed experts as stored (csrc/moe_k.c): gate/up uint8 [E, F*row_bytes(D)], down [E, D*row_bytes(F)] */
static PyObject *py_kmoe(PyObject *self, PyObject *args, PyObject *kw) {
    static char *kwlist[] = {"x", "topk_idx", "topk_weight", "gate", "up", "down", "fg", "fu", "fd", "f", "version", "packed", NULL};
    PyObject *xo, *io, *wo, *go, *uo, *dno;
    int fg, fu, fd, version = GB_KV_AUTO, packed = 0;
    Py_ssize_t F;
    gb_packed_moe a = {0};
    PyArrayObject *y = NULL, *cnt = NULL;
    PyObject *ret = NULL;
    if (!PyArg_ParseTupleAndKeywords(args, kw, "OOOOOOiiin|ip:kmoe", kwlist, &xo, &io, &wo, &go, &uo, &dno, &fg, &fu, &fd, &F,
                                     &version, &packed))
        return NULL;
    if (check_kfmt(fg) < 0 || check_kfmt(fu) < 0 || check_kfmt(fd) < 0) goto done;
    if (gb_packed_moe_arrays(&a, xo, io, wo, go, uo, dno) < 0) goto done;
    const npy_intp T = PyArray_DIM(a.x, 0), D = PyArray_DIM(a.x, 1), K = PyArray_DIM(a.idx, 1), E = PyArray_DIM(a.g, 0);
    if (check_fk(fg, D) < 0 || check_fk(fu, D) < 0 || check_fk(fd, F) < 0) goto done;
    if (packed && (!packable(fg) || !packable(fu) || !packable(fd))) {
        PyErr_Format(PyExc_ValueError, "packed=True needs q4_K, q5_K, q6_K, iq4_xs, iq4_nl or mxfp4 experts, got formats %d/%d/%d", fg, fu, fd);
        goto done;
    }
    if (packed ? gb_packed_moe_check(&a, (npy_intp)packed_bytes_any(fg, F, D), (npy_intp)packed_bytes_any(fu, F, D), (npy_intp)packed_bytes_any(fd, D, F),
                                     "the repacked bytes") < 0
               : gb_packed_moe_check(&a, (npy_intp)gb_size_mul(F, row_bytes_any(fg, D)), (npy_intp)gb_size_mul(F, row_bytes_any(fu, D)),
                                     (npy_intp)gb_size_mul(D, row_bytes_any(fd, F)), "the bytes") < 0)
        goto done;
    if (gb_moe_outputs(T, D, E, &y, &cnt) < 0) goto done;
    int st;
    Py_BEGIN_ALLOW_THREADS
    st = (packed ? gb_kmoe_packed : gb_kmoe)((const float *)PyArray_DATA(a.x), (const int64_t *)PyArray_DATA(a.idx), (const float *)PyArray_DATA(a.wt), T, K,
                 fg, PyArray_DATA(a.g), fu, PyArray_DATA(a.u), fd, PyArray_DATA(a.dn), E, F, D, (float *)PyArray_DATA(y),
                 (int64_t *)PyArray_DATA(cnt), version);
    Py_END_ALLOW_THREADS
    ret = gb_moe_result(st, y, cnt);
done:
    gb_packed_moe_release(&a);
    Py_XDECREF(y);
    Py_XDECREF(cnt);
    return ret;
}

/* stored rows uint8 [M * n, row_bytes] (M matrices of n rows) -> uint8 [M, packed_bytes] (csrc/quant_k.h) */
static PyObject *py_krepack(PyObject *self, PyObject *args, PyObject *kw) {
    static char *kwlist[] = {"q", "fmt", "k", "n", NULL};
    PyObject *qo;
    int fmt;
    Py_ssize_t k, n;
    PyArrayObject *q = NULL, *p = NULL;
    PyObject *ret = NULL;
    if (!PyArg_ParseTupleAndKeywords(args, kw, "Oinn:krepack", kwlist, &qo, &fmt, &k, &n)) return NULL;
    if (check_pfmt(fmt, k) < 0 || check_fk(fmt, k) < 0) return NULL;
    if (n <= 0) {
        PyErr_Format(PyExc_ValueError, "`n` must be > 0, got %ld", (long)n);
        return NULL;
    }
    if (!(q = gb_array(qo, "q", NPY_UINT8, 2, GB_COPY))) goto done;
    if (gb_check_dim(q, "q", 1, (npy_intp)row_bytes_any(fmt, k), "the bytes of one row of k elements") < 0) goto done;
    const npy_intp R = PyArray_DIM(q, 0);
    if (R % n) {
        PyErr_Format(PyExc_ValueError, "`q` has %ld rows, not whole matrices of n=%ld rows", (long)R, (long)n);
        goto done;
    }
    const int64_t pb = packed_bytes_any(fmt, n, k), rb = row_bytes_any(fmt, k);
    npy_intp dims[2] = {R / n, (npy_intp)pb};
    if (!(p = gb_new_u8_aligned(2, dims))) goto done;
    int st = GB_OK;
    Py_BEGIN_ALLOW_THREADS
    for (npy_intp m = 0; m < dims[0] && st == GB_OK; m++)
        st = (gb_is_iqfmt(fmt) ? gb_iqrepack : gb_krepack)(fmt, (const uint8_t *)PyArray_DATA(q) + m * n * rb, (uint8_t *)PyArray_DATA(p) + m * pb, n, k);
    Py_END_ALLOW_THREADS
    ret = gb_result(st, &p);
done:
    Py_XDECREF(q);
    Py_XDECREF(p);
    return ret;
}

static PyObject *py_klinear_packed(PyObject *self, PyObject *args, PyObject *kw) {
    static char *kwlist[] = {"x", "packed", "fmt", "n", "k", "bias", "version", NULL};
    PyObject *xo, *po, *bo = Py_None;
    int fmt, version = GB_KV_AUTO;
    Py_ssize_t n, k;
    PyArrayObject *x = NULL, *p = NULL, *b = NULL, *y = NULL;
    PyObject *ret = NULL;
    if (!PyArg_ParseTupleAndKeywords(args, kw, "OOinn|Oi:klinear_packed", kwlist, &xo, &po, &fmt, &n, &k, &bo, &version)) return NULL;
    if (check_pfmt(fmt, k) < 0 || check_fk(fmt, k) < 0) return NULL;
    if (n < 0) {
        PyErr_Format(PyExc_ValueError, "`n` must be >= 0, got %ld", (long)n);
        return NULL;
    }
    /* the K formats check x while quantizing it (gb_klinear_packed_chk): one pass over x, not two */
    const int iq = gb_is_iqfmt(fmt);
    if (gb_repacked_linear_args_chk(xo, po, bo, n, k, (npy_intp)packed_bytes_any(fmt, n, k), &x, &p, &b, &y, iq) < 0) goto done;
    const npy_intp T = PyArray_DIM(x, 0);
    int st, nonfinite = 0;
    Py_BEGIN_ALLOW_THREADS
    if (iq)
        st = gb_iqlinear_packed(fmt, (const float *)PyArray_DATA(x), PyArray_DATA(p), b ? (const float *)PyArray_DATA(b) : NULL,
                                (float *)PyArray_DATA(y), T, n, k, version);
    else
        st = gb_klinear_packed_chk(fmt, (const float *)PyArray_DATA(x), PyArray_DATA(p), b ? (const float *)PyArray_DATA(b) : NULL,
                                   (float *)PyArray_DATA(y), T, n, k, version, &nonfinite);
    Py_END_ALLOW_THREADS
    if (nonfinite && gb_check_finite(x, "x") < 0) goto done; /* the error names the first one, as before */
    ret = gb_result(st, &y);
done:
    Py_XDECREF(x);
    Py_XDECREF(p);
    Py_XDECREF(b);
    Py_XDECREF(y);
    return ret;
}

static PyObject *py_kversions(PyObject *self, PyObject *noargs) {
    return gb_versions_dict(GB_KV_COUNT, gb_kversion_available, gb_kversion_name);
}

static PyObject *py_bench_vnni(PyObject *self, PyObject *args) {
    long long iters;
    int reps;
    if (!PyArg_ParseTuple(args, "Li:bench_vnni", &iters, &reps)) return NULL;
    double gops = 0.0;
    int st;
    Py_BEGIN_ALLOW_THREADS
    st = gb_bench_vnni((int64_t)iters, reps, &gops);
    Py_END_ALLOW_THREADS
    if (st != GB_OK) return gb_raise_status(st);
    return PyFloat_FromDouble(gops);
}

PyMethodDef gb_quant_k_methods[] = {
    {"bench_vnni", (PyCFunction)py_bench_vnni, METH_VARARGS,
     "bench_vnni(iters, reps) -> GOP/s of vpdpbusd on every thread (int8 ceiling; ValueError without VNNI)"},
    {"kdequantize", (PyCFunction)(void (*)(void))py_kdequantize, METH_VARARGS | METH_KEYWORDS,
     "kdequantize(q[R, row_bytes] uint8, fmt, k) -> f32[R, k] (ggml q4_K / q5_K / q6_K)"},
    {"quantize_q8_K", (PyCFunction)(void (*)(void))py_quantize_q8_K, METH_VARARGS | METH_KEYWORDS,
     "quantize_q8_K(x[R, K] f32) -> uint8[R, K/256*292] (ggml block_q8_K rows)"},
    {"klinear", (PyCFunction)(void (*)(void))py_klinear, METH_VARARGS | METH_KEYWORDS,
     "klinear(x[T, K] f32, w[N, row_bytes] uint8, fmt, k, bias=None, version=0) -> f32[T, N]"},
    {"kmoe", (PyCFunction)(void (*)(void))py_kmoe, METH_VARARGS | METH_KEYWORDS,
     "kmoe(x[T, D] f32, topk_idx[T, k] i64, topk_weight[T, k] f32, gate, up, down uint8 [E, bytes], fg, fu, fd, f, "
     "version=0, packed=False) -> (y[T, D] f32, counts[E] i64): routed experts in K-quant/iq4_nl/mxfp4 formats, one call; "
     "packed: gate/up/down are krepack'ed experts [E, packed_bytes]"},
    {"krepack", (PyCFunction)(void (*)(void))py_krepack, METH_VARARGS | METH_KEYWORDS,
     "krepack(q[M*n, row_bytes] uint8, fmt, k, n) -> uint8[M, packed_bytes] (q4_K/q5_K/q6_K/iq4_xs/iq4_nl/mxfp4, 16-row interleaved, csrc/quant_k.h, quant_iq.h)"},
    {"klinear_packed", (PyCFunction)(void (*)(void))py_klinear_packed, METH_VARARGS | METH_KEYWORDS,
     "klinear_packed(x[T, K] f32, packed uint8, fmt, n, k, bias=None, version=0) -> f32[T, n]"},
    {"kversions", (PyCFunction)py_kversions, METH_NOARGS, "kversions() -> {name: compiled in}"},
    {NULL, NULL, 0, NULL}};

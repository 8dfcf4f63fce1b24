/* bind_linear.c: Python bindings for linear.c (see bind_norm.c for the pattern). Weight dtype
 * picks the format: float32 -> f32 (OpenBLAS), float16 -> f16, uint16 -> bf16 bits. */
#include "bind.h"
#include "hgemm.h"
#include "linear.h"

static const int weight_types[] = {NPY_FLOAT32, NPY_FLOAT16, NPY_UINT16, -1};

static int weight_fmt(PyArrayObject *w) {
    switch (PyArray_TYPE(w)) {
    case NPY_FLOAT16: return GB_F16;
    case NPY_UINT16: return GB_BF16;
    default: return GB_F32;
    }
}

static PyObject *py_linear(PyObject *self, PyObject *args, PyObject *kw) {
    static char *kwlist[] = {"x", "weight", "bias", NULL};
    PyObject *xo, *wo, *bo = Py_None;
    PyArrayObject *x = NULL, *w = NULL, *b = NULL, *y = NULL;
    PyObject *ret = NULL;
    if (!PyArg_ParseTupleAndKeywords(args, kw, "OO|O:linear", kwlist, &xo, &wo, &bo)) return NULL;
    if (!(x = gb_array(xo, "x", NPY_FLOAT32, 2, GB_COPY))) goto done;
    if (!(w = gb_array_any(wo, "weight", weight_types, 2, GB_COPY))) goto done;
    if (gb_check_dim(w, "weight", 1, PyArray_DIM(x, 1), "x.shape[-1] (in features)") < 0) goto done;
    if (bo != Py_None) {
        if (!(b = gb_array(bo, "bias", NPY_FLOAT32, 1, GB_COPY))) goto done;
        if (gb_check_dim(b, "bias", 0, PyArray_DIM(w, 0), "weight.shape[0] (out features)") < 0) goto done;
        if (gb_check_finite(b, "bias") < 0) goto done;
    }
    if (gb_check_finite(x, "x") < 0) goto done;
    npy_intp dims[2] = {PyArray_DIM(x, 0), PyArray_DIM(w, 0)};
    if (!(y = gb_new_f32(2, dims))) goto done;
    int st, fmt = weight_fmt(w);
    Py_BEGIN_ALLOW_THREADS
    st = gb_linear((const float *)PyArray_DATA(x), dims[0], PyArray_DIM(x, 1), PyArray_DATA(w), fmt, dims[1],
                   b ? (const float *)PyArray_DATA(b) : NULL, (float *)PyArray_DATA(y));
    Py_END_ALLOW_THREADS
    ret = gb_result(st, &y);
done:
    Py_XDECREF(x);
    Py_XDECREF(w);
    Py_XDECREF(b);
    Py_XDECREF(y);
    return ret;
}

static PyObject *py_swiglu(PyObject *self, PyObject *args, PyObject *kw) {
    static char *kwlist[] = {"x", "w_gate", "w_up", "w_down", NULL};
    PyObject *xo, *go, *uo, *dob;
    PyArrayObject *x = NULL, *g = NULL, *u = NULL, *d = NULL, *y = NULL;
    PyObject *ret = NULL;
    if (!PyArg_ParseTupleAndKeywords(args, kw, "OOOO:swiglu", kwlist, &xo, &go, &uo, &dob)) return NULL;
    if (!(x = gb_array(xo, "x", NPY_FLOAT32, 2, GB_COPY))) goto done;
    if (!(g = gb_array_any(go, "w_gate", weight_types, 2, GB_COPY))) goto done;
    if (!(u = gb_array_any(uo, "w_up", weight_types, 2, GB_COPY))) goto done;
    if (!(d = gb_array_any(dob, "w_down", weight_types, 2, GB_COPY))) goto done;
    npy_intp D = PyArray_DIM(x, 1), F = PyArray_DIM(g, 0);
    if (gb_check_dim(g, "w_gate", 1, D, "x.shape[1] (hidden)") < 0) goto done;
    if (gb_check_dim(u, "w_up", 0, F, "w_gate.shape[0] (intermediate)") < 0) goto done;
    if (gb_check_dim(u, "w_up", 1, D, "x.shape[1] (hidden)") < 0) goto done;
    if (gb_check_dim(d, "w_down", 0, D, "x.shape[1] (hidden)") < 0) goto done;
    if (gb_check_dim(d, "w_down", 1, F, "w_gate.shape[0] (intermediate)") < 0) goto done;
    if (gb_check_finite(x, "x") < 0) goto done;
    if (!(y = gb_new_f32(2, PyArray_DIMS(x)))) goto done;
    int st;
    Py_BEGIN_ALLOW_THREADS
    st = gb_swiglu((const float *)PyArray_DATA(x), PyArray_DIM(x, 0), D, PyArray_DATA(g), weight_fmt(g),
                   PyArray_DATA(u), weight_fmt(u), PyArray_DATA(d), weight_fmt(d), F, (float *)PyArray_DATA(y));
    Py_END_ALLOW_THREADS
    ret = gb_result(st, &y);
done:
    Py_XDECREF(x);
    Py_XDECREF(g);
    Py_XDECREF(u);
    Py_XDECREF(d);
    Py_XDECREF(y);
    return ret;
}

/* g = act(g) * u in place (geglu_act, silu_act): one argument check for both */
static PyObject *gated_act(PyObject *args, const char *fmt, const char *name, void (*fn)(float *, const float *, int64_t)) {
    PyObject *go, *uo;
    PyArrayObject *g = NULL, *u = NULL;
    PyObject *ret = NULL;
    if (!PyArg_ParseTuple(args, fmt, &go, &uo)) return NULL;
    if (!(g = gb_array(go, "g", NPY_FLOAT32, -1, GB_REQUIRE))) goto done;
    if (!(u = gb_array(uo, "u", NPY_FLOAT32, -1, GB_COPY))) goto done;
    if (!PyArray_ISWRITEABLE(g)) {
        PyErr_Format(PyExc_ValueError, "`g` must be writeable (%s works in place)", name);
        goto done;
    }
    if (!PyArray_SAMESHAPE(g, u)) {
        PyErr_SetString(PyExc_ValueError, "`g` and `u` must have the same shape");
        goto done;
    }
    Py_BEGIN_ALLOW_THREADS
    fn((float *)PyArray_DATA(g), (const float *)PyArray_DATA(u), (int64_t)PyArray_SIZE(g));
    Py_END_ALLOW_THREADS
    Py_INCREF(Py_None);
    ret = Py_None;
done:
    Py_XDECREF(g);
    Py_XDECREF(u);
    return ret;
}

static PyObject *py_geglu_act(PyObject *self, PyObject *args) {
    (void)self;
    return gated_act(args, "OO:geglu_act", "geglu_act", gb_geglu_act);
}

static PyObject *py_silu_act(PyObject *self, PyObject *args) {
    (void)self;
    return gated_act(args, "OO:silu_act", "silu_act", gb_silu_act);
}

static PyObject *py_set_portable(PyObject *self, PyObject *args) {
    int on;
    if (!PyArg_ParseTuple(args, "p:_linear_set_portable", &on)) return NULL;
    gb_linear_set_portable(on);
    Py_RETURN_NONE;
}

static PyObject *py_set_pairs(PyObject *self, PyObject *args) {
    int on;
    if (!PyArg_ParseTuple(args, "p:_linear_set_pairs", &on)) return NULL;
    gb_linear_set_pairs(on);
    Py_RETURN_NONE;
}

static PyObject *py_set_gemv_max_t(PyObject *self, PyObject *args) {
    long long t;
    if (!PyArg_ParseTuple(args, "L:_linear_set_gemv_max_t", &t)) return NULL;
    gb_linear_set_gemv_max_t(t);
    Py_RETURN_NONE;
}

/* A GB_HG_* version from its name (hgemm.h), or -1 with a ValueError naming the choices. */
static int hgemm_version(const char *name) {
    for (int v = 0; v < GB_HG_COUNT; v++)
        if (!strcmp(name, gb_hgemm_name(v))) return v;
    PyErr_Format(PyExc_ValueError, "unknown hgemm kernel '%s' (choose auto, ref, f32fma, bf16dot or sgemm)", name);
    return -1;
}

static int fmt_of_name(const char *name) {
    if (!strcmp(name, "bf16")) return GB_BF16;
    if (!strcmp(name, "f16")) return GB_F16;
    PyErr_Format(PyExc_ValueError, "weight format must be 'bf16' or 'f16', got '%s'", name);
    return -1;
}

static PyObject *py_hgemm(PyObject *self, PyObject *args, PyObject *kw) {
    static char *kwlist[] = {"x", "weight", "kernel", NULL};
    PyObject *xo, *wo;
    const char *kname = "auto";
    PyArrayObject *x = NULL, *w = NULL, *y = NULL;
    PyObject *ret = NULL;
    static const int types16[] = {NPY_FLOAT16, NPY_UINT16, -1};
    if (!PyArg_ParseTupleAndKeywords(args, kw, "OO|s:hgemm", kwlist, &xo, &wo, &kname)) return NULL;
    const int v = hgemm_version(kname);
    if (v < 0) return NULL;
    if (v == GB_HG_SGEMM) {
        PyErr_SetString(PyExc_ValueError, "hgemm: kernel 'sgemm' is gb_linear's (glmbench.linear), not hgemm's");
        return NULL;
    }
    if (!(x = gb_array(xo, "x", NPY_FLOAT32, 2, GB_COPY))) goto done;
    if (!(w = gb_array_any(wo, "weight", types16, 2, GB_COPY))) goto done;
    if (gb_check_dim(w, "weight", 1, PyArray_DIM(x, 1), "x.shape[-1] (in features)") < 0) goto done;
    npy_intp dims[2] = {PyArray_DIM(x, 0), PyArray_DIM(w, 0)};
    if (!(y = gb_new_f32(2, dims))) goto done;
    int st, fmt = weight_fmt(w);
    Py_BEGIN_ALLOW_THREADS
    st = gb_hgemm((const float *)PyArray_DATA(x), dims[0], PyArray_DIM(x, 1), PyArray_DATA(w), fmt, dims[1],
                  (float *)PyArray_DATA(y), v);
    Py_END_ALLOW_THREADS
    ret = gb_result(st, &y);
done:
    Py_XDECREF(x);
    Py_XDECREF(w);
    Py_XDECREF(y);
    return ret;
}

static PyObject *py_hgemm_kernels(PyObject *self, PyObject *args) {
    const char *fname;
    if (!PyArg_ParseTuple(args, "s:_hgemm_kernels", &fname)) return NULL;
    const int fmt = fmt_of_name(fname);
    if (fmt < 0) return NULL;
    PyObject *d = PyDict_New();
    if (!d) return NULL;
    for (int v = 1; v < GB_HG_COUNT; v++) {
        PyObject *b = PyBool_FromLong(gb_hgemm_available(v, fmt));
        if (PyDict_SetItemString(d, gb_hgemm_name(v), b) < 0) {
            Py_DECREF(b);
            Py_DECREF(d);
            return NULL;
        }
        Py_DECREF(b);
    }
    PyObject *p = PyUnicode_FromString(gb_hgemm_name(gb_hgemm_pick(fmt)));
    if (!p || PyDict_SetItemString(d, "auto", p) < 0) {
        Py_XDECREF(p);
        Py_DECREF(d);
        return NULL;
    }
    Py_DECREF(p);
    return d;
}

static PyObject *py_set_hgemm(PyObject *self, PyObject *args) {
    const char *name;
    if (!PyArg_ParseTuple(args, "s:_linear_set_hgemm", &name)) return NULL;
    const int v = hgemm_version(name);
    if (v < 0) return NULL;
    gb_linear_set_hgemm(v);
    Py_RETURN_NONE;
}

static PyObject *py_linear_hgemm(PyObject *self, PyObject *args) {
    const char *fname;
    if (!PyArg_ParseTuple(args, "s:_linear_hgemm", &fname)) return NULL;
    const int fmt = fmt_of_name(fname);
    if (fmt < 0) return NULL;
    return PyUnicode_FromString(gb_hgemm_name(gb_linear_hgemm(fmt)));
}

static PyObject *py_bench_bf16dot(PyObject *self, PyObject *args) {
    long long iters;
    int reps, st;
    double gf = 0;
    if (!PyArg_ParseTuple(args, "Li:bench_bf16dot", &iters, &reps)) return NULL;
    Py_BEGIN_ALLOW_THREADS
    st = gb_bench_bf16dot((int64_t)iters, reps, &gf);
    Py_END_ALLOW_THREADS
    if (st != GB_OK) return gb_raise_status(st);
    return PyFloat_FromDouble(gf);
}

static PyObject *py_gemv_max_t(PyObject *self, PyObject *noargs) {
    return PyLong_FromLongLong((long long)gb_linear_gemv_max_t());
}

static PyObject *py_has_avx512(PyObject *self, PyObject *noargs) { return PyBool_FromLong(gb_linear_has_avx512()); }

static PyObject *py_linear_simd(PyObject *self, PyObject *noargs) { return PyUnicode_FromString(gb_linear_simd()); }

PyMethodDef gb_linear_methods[] = {
    {"linear", (PyCFunction)(void (*)(void))py_linear, METH_VARARGS | METH_KEYWORDS,
     "linear(x[T, K] f32, weight[N, K] f32|f16|u16(bf16), bias[N] f32 | None) -> [T, N] f32"},
    {"swiglu", (PyCFunction)(void (*)(void))py_swiglu, METH_VARARGS | METH_KEYWORDS,
     "swiglu(x[T, D] f32, w_gate[F, D], w_up[F, D], w_down[D, F]) -> [T, D] f32"},
    {"geglu_act", py_geglu_act, METH_VARARGS,
     "geglu_act(g f32, u f32): g = gelu_tanh(g) * u in place (Gemma's GeGLU activation)"},
    {"silu_act", py_silu_act, METH_VARARGS,
     "silu_act(g f32, u f32): g = silu(g) * u in place (the SwiGLU activation of the C core's swiglu; OpenMP)"},
    {"_linear_set_portable", py_set_portable, METH_VARARGS,
     "_linear_set_portable(on): use the portable C kernels instead of AVX-512 (tests)."},
    {"_linear_set_pairs", py_set_pairs, METH_VARARGS,
     "_linear_set_pairs(on): bf16 decode GEMVs with the pair kernels (default) or the widening loads (tests, A/B)."},
    {"_linear_set_gemv_max_t", py_set_gemv_max_t, METH_VARARGS,
     "_linear_set_gemv_max_t(t): largest token count using the GEMV kernel for 16-bit weights (0: default, 8 where "
     "a SIMD hgemm kernel runs, else 64)."},
    {"hgemm", (PyCFunction)(void (*)(void))py_hgemm, METH_VARARGS | METH_KEYWORDS,
     "hgemm(x[T, K] f32, weight[N, K] f16|u16(bf16), kernel='auto'|'ref'|'f32fma'|'bf16dot') -> [T, N] f32 "
     "(the prefill GEMM of csrc/hgemm.c, any T)"},
    {"_hgemm_kernels", py_hgemm_kernels, METH_VARARGS,
     "_hgemm_kernels('bf16'|'f16') -> {kernel: runs on this CPU, 'auto': the kernel auto picks}"},
    {"_linear_set_hgemm", py_set_hgemm, METH_VARARGS,
     "_linear_set_hgemm(name): linear's prefill kernel for 16-bit weights ('auto' restores the default)."},
    {"_linear_hgemm", py_linear_hgemm, METH_VARARGS,
     "_linear_hgemm('bf16'|'f16') -> the prefill kernel linear runs now for that format"},
    {"bench_bf16dot", py_bench_bf16dot, METH_VARARGS,
     "bench_bf16dot(iters, reps) -> GFLOP/s of vdpbf16ps on every thread (bf16 ceiling; ValueError without avx512_bf16)"},
    {"_linear_gemv_max_t", py_gemv_max_t, METH_NOARGS,
     "_linear_gemv_max_t() -> the largest token count that uses the GEMV kernel for 16-bit weights now"},
    {"_linear_has_avx512", py_has_avx512, METH_NOARGS, "_linear_has_avx512() -> bool"},
    {"_linear_simd", py_linear_simd, METH_NOARGS, "_linear_simd() -> 'avx512' | 'avx2' | 'portable'"},
    {NULL, NULL, 0, NULL}};

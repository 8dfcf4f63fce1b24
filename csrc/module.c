/* module.c: the glmbench._core module. Holds the array checks from bind.h, the thread-count
 * controls, the workspace ledger's readout (common.c), and the module's method table, assembled from each family's table in bind_*.c. */
#define GLMBENCH_IMPORT_ARRAY
#include "bind.h"
#include "attention_mla.h"

#include <float.h>
#if defined(__GLIBC__)
#include <malloc.h>
#endif
#include <math.h>
#include <omp.h>
#include <stdio.h>
#include <string.h>

/* OpenBLAS (scipy-openblas32 prefixes every symbol with scipy_). */
extern void scipy_openblas_set_num_threads(int);
extern int scipy_openblas_get_num_threads(void);

const char *gb_shape_str(PyArrayObject *arr, char *buf, size_t n) {
    size_t off = 0;
    int nd = PyArray_NDIM(arr);
    off += snprintf(buf + off, n - off, "(");
    for (int i = 0; i < nd && off < n; i++)
        off += snprintf(buf + off, n - off, "%s%ld", i ? ", " : "", (long)PyArray_DIM(arr, i));
    if (off < n) snprintf(buf + off, n - off, nd == 1 ? ",)" : ")");
    return buf;
}

static const char *dtype_name(PyArrayObject *arr) {
    PyArray_Descr *d = PyArray_DESCR(arr);
    switch (d->type_num) {
    case NPY_FLOAT32: return "float32";
    case NPY_FLOAT64: return "float64";
    case NPY_FLOAT16: return "float16";
    case NPY_UINT16: return "uint16";
    case NPY_INT8: return "int8";
    case NPY_UINT8: return "uint8";
    case NPY_INT32: return "int32";
    case NPY_INT64: return "int64";
    case NPY_BOOL: return "bool";
    default: return "another dtype";
    }
}

static const char *typenum_name(int t) {
    switch (t) {
    case NPY_FLOAT32: return "float32";
    case NPY_FLOAT64: return "float64";
    case NPY_FLOAT16: return "float16";
    case NPY_UINT16: return "uint16 (bfloat16 bits)";
    case NPY_INT8: return "int8";
    case NPY_UINT8: return "uint8";
    case NPY_INT32: return "int32";
    case NPY_INT64: return "int64";
    default: return "?";
    }
}

PyArrayObject *gb_array_any(PyObject *obj, const char *name, const int *typenums, int ndim, int mode) {
    if (!PyArray_Check(obj)) {
        PyErr_Format(PyExc_TypeError, "`%s` must be a numpy.ndarray, got %s", name, Py_TYPE(obj)->tp_name);
        return NULL;
    }
    PyArrayObject *arr = (PyArrayObject *)obj;
    int t = PyArray_TYPE(arr), ok = 0;
    char want[160] = "";
    for (const int *p = typenums; *p >= 0; p++) {
        if (PyArray_ISNOTSWAPPED(arr) && t == *p) ok = 1;
        strncat(want, p == typenums ? "" : (p[1] < 0 ? " or " : ", "), sizeof want - strlen(want) - 1);
        strncat(want, typenum_name(*p), sizeof want - strlen(want) - 1);
    }
    if (!ok) {
        PyArray_Descr *d = PyArray_DESCR(arr);
        int same_type = 0;
        for (const int *p = typenums; *p >= 0; p++) if (t == *p) same_type = 1;
        if (same_type && !PyArray_ISNOTSWAPPED(arr)) {  /* e.g. a big-endian '>f4' array */
            PyErr_Format(PyExc_TypeError, "`%s` must be native-endian %s, got %c%c%d (byte-swapped); pass "
                         "%s.astype(%s.dtype.newbyteorder('='))", name, want, d->byteorder, d->kind,
                         (int)PyArray_ITEMSIZE(arr), name, name);
            return NULL;
        }
        PyErr_Format(PyExc_TypeError, "`%s` must be %s, got %s", name, want, dtype_name(arr));
        return NULL;
    }
    if (ndim >= 0 && PyArray_NDIM(arr) != ndim) {
        char s[128];
        PyErr_Format(PyExc_ValueError, "`%s` must be %d-D, got shape %s", name, ndim, gb_shape_str(arr, s, sizeof s));
        return NULL;
    }
    if (PyArray_IS_C_CONTIGUOUS(arr) && PyArray_ISALIGNED(arr)) {
        Py_INCREF(arr);
        return arr;
    }
    if (mode == GB_REQUIRE) {
        PyErr_Format(PyExc_ValueError, "`%s` must be C-contiguous (got a strided view); pass np.ascontiguousarray(%s)", name, name);
        return NULL;
    }
    return (PyArrayObject *)PyArray_NewCopy(arr, NPY_CORDER);
}

PyArrayObject *gb_array(PyObject *obj, const char *name, int typenum, int ndim, int mode) {
    int t[2] = {typenum, -1};
    return gb_array_any(obj, name, t, ndim, mode);
}

int gb_check_dim(PyArrayObject *arr, const char *name, int axis, npy_intp expected, const char *what) {
    if (expected < 0) { /* the size functions' -1: sizes whose count does not fit 64 bits, or none they serve */
        char s[128];
        PyErr_Format(PyExc_ValueError, "`%s` has shape %s: %s cannot be counted for the sizes given (too large for 64 bits, or "
                     "sizes its format does not take)",
                     name, gb_shape_str(arr, s, sizeof s), what);
        return -1;
    }
    if (PyArray_DIM(arr, axis) != expected) {
        char s[128];
        PyErr_Format(PyExc_ValueError, "`%s` has shape %s: axis %d must be %ld to match %s", name,
                     gb_shape_str(arr, s, sizeof s), axis, (long)expected, what);
        return -1;
    }
    return 0;
}

/* The first NaN/inf of p[0, n), or -1: blocks of 4096 scanned without a branch per element (a
 * vector OR of !(|x| <= FLT_MAX)), the element-wise search only in a block that has one. The
 * early-exit loop ran at about one element per cycle: ~1.5% of a prefill profile, every op
 * checking its activations. */
static npy_intp first_nonfinite_f32(const float *p, npy_intp n) {
    for (npy_intp i0 = 0; i0 < n; i0 += 4096) {
        const npy_intp e = n - i0 < 4096 ? n : i0 + 4096;
        int any = 0;
#pragma omp simd reduction(| : any)
        for (npy_intp i = i0; i < e; i++) any |= !(fabsf(p[i]) <= FLT_MAX); /* NaN compares false */
        if (any)
            for (npy_intp i = i0; i < e; i++)
                if (!isfinite(p[i])) return i;
    }
    return -1;
}

int gb_check_finite(PyArrayObject *arr, const char *name) {
    npy_intp n = PyArray_SIZE(arr), bad = -1;
    if (PyArray_TYPE(arr) == NPY_FLOAT32) {
        bad = first_nonfinite_f32((const float *)PyArray_DATA(arr), n);
    } else if (PyArray_TYPE(arr) == NPY_FLOAT64) {
        const double *p = (const double *)PyArray_DATA(arr);
        for (npy_intp i = 0; i < n; i++)
            if (!isfinite(p[i])) { bad = i; break; }
    }
    if (bad >= 0) {
        double v = PyArray_TYPE(arr) == NPY_FLOAT32 ? ((const float *)PyArray_DATA(arr))[bad]
                                                     : ((const double *)PyArray_DATA(arr))[bad];
        PyErr_Format(PyExc_ValueError, "`%s` contains %s at flat index %ld", name, isnan(v) ? "NaN" : "inf", (long)bad);
        return -1;
    }
    return 0;
}

PyObject *gb_raise_status(int status) {
    PyObject *exc = PyExc_RuntimeError;
    if (status == GB_EVALUE || status == GB_EFULL) exc = PyExc_ValueError;
    else if (status == GB_ETYPE) exc = PyExc_TypeError;
    else if (status == GB_ENOMEM) exc = PyExc_MemoryError;
    PyErr_SetString(exc, gb_last_error());
    return NULL;
}

PyArrayObject *gb_new_f32(int ndim, const npy_intp *dims) {
    return (PyArrayObject *)PyArray_SimpleNew(ndim, (npy_intp *)dims, NPY_FLOAT32);
}

/* ---- thread controls ------------------------------------------------------------------- */

static PyObject *py_set_num_threads(PyObject *self, PyObject *args) {
    int n;
    if (!PyArg_ParseTuple(args, "i:set_num_threads", &n)) return NULL;
    if (n < 1) {
        PyErr_Format(PyExc_ValueError, "`n` must be >= 1, got %d", n);
        return NULL;
    }
    /* No machine runs more useful threads than 64 per processor; at least 4096 are allowed. A
       larger count is a typo (10**6) that OpenMP would try to honour. */
    int procs = omp_get_num_procs(), max_threads = procs > 64 ? 64 * procs : 4096;
    if (max_threads < 4096) max_threads = 4096;
    if (n > max_threads) {
        PyErr_Format(PyExc_ValueError, "`n` must be <= %d (the larger of 4096 and 64 x the %d processors), got %d",
                     max_threads, procs, n);
        return NULL;
    }
    omp_set_num_threads(n);
    scipy_openblas_set_num_threads(n);
    Py_RETURN_NONE;
}

static PyObject *py_get_num_threads(PyObject *self, PyObject *noargs) {
    return PyLong_FromLong(omp_get_max_threads());
}

/* ---- the heap's transient blocks ------------------------------------------------------- */

/* glibc serves blocks above its mmap threshold (128 KiB, rising with each freed block up to 32 MiB)
 * from fresh mappings and hands the heap's free top back to the kernel past its trim threshold, so
 * a prefill's NumPy activations ([T, F] floats, MBs each) were new pages every call: ~3000 page
 * faults (the kernel zeroing them) per GLM-4.7-Flash pp512, 16% of its time on 2 threads. Fixed
 * thresholds keep blocks up to 32 MiB on the heap and freed pages mapped for the next call
 * (the process keeps its peak of such blocks). False where the C library has no mallopt. */
static PyObject *py_keep_heap(PyObject *self, PyObject *noargs) {
#if defined(__GLIBC__)
    const int ok = mallopt(M_MMAP_THRESHOLD, 32 << 20) && mallopt(M_TRIM_THRESHOLD, 1 << 30);
    return PyBool_FromLong(ok);
#else
    Py_RETURN_FALSE;
#endif
}

/* ---- workspace ledger (common.c) -------------------------------------------------------- */

static PyObject *py_workspace_bytes(PyObject *self, PyObject *noargs) {
    return Py_BuildValue("(nn)", (Py_ssize_t)gb_ws_current(), (Py_ssize_t)gb_ws_peak());
}

static PyObject *py_workspace_blocks(PyObject *self, PyObject *noargs) {
    return PyLong_FromSize_t(gb_ws_blocks());
}

static PyObject *py_reset_workspace_peak(PyObject *self, PyObject *noargs) {
    gb_ws_reset_peak();
    Py_RETURN_NONE;
}

static PyMethodDef core_methods[] = {
    {"set_num_threads", py_set_num_threads, METH_VARARGS, "set_num_threads(n): OpenMP and OpenBLAS threads."},
    {"get_num_threads", py_get_num_threads, METH_NOARGS, "get_num_threads() -> int"},
    {"keep_heap", py_keep_heap, METH_NOARGS,
     "keep_heap() -> bool: glibc keeps freed blocks up to 32 MiB mapped for reuse (no fresh pages per call)"},
    {"workspace_bytes", py_workspace_bytes, METH_NOARGS,
     "workspace_bytes() -> (current, peak): bytes of scratch the C kernels hold now, and the most since the last "
     "reset_workspace_peak() (the KV cache is not workspace)"},
    {"workspace_blocks", py_workspace_blocks, METH_NOARGS, "workspace_blocks() -> int: live workspace blocks"},
    {"reset_workspace_peak", py_reset_workspace_peak, METH_NOARGS, "reset_workspace_peak(): peak := current"},
    {NULL, NULL, 0, NULL}};

/* ---- the method table, assembled from the families ------------------------------------- */

extern PyMethodDef gb_norm_methods[];
extern PyMethodDef gb_rope_methods[];
extern PyMethodDef gb_linear_methods[];
extern PyMethodDef gb_moe_methods[];
extern PyMethodDef gb_attention_gqa_methods[];
extern PyMethodDef gb_attention_mla_methods[];
extern PyMethodDef gb_kvcache_methods[];
extern PyMethodDef gb_quant_methods[];
extern PyMethodDef gb_quant_k_methods[];
extern PyMethodDef gb_bench_methods[];
extern PyMethodDef gb_layer_methods[];
extern PyMethodDef gb_linear_attn_methods[];

static PyMethodDef *family_tables[] = {
    core_methods, gb_norm_methods, gb_rope_methods, gb_linear_methods, gb_moe_methods,
    gb_attention_gqa_methods, gb_attention_mla_methods, gb_kvcache_methods, gb_quant_methods,
    gb_quant_k_methods, gb_bench_methods, gb_layer_methods, gb_linear_attn_methods, NULL};

static PyMethodDef *all_methods;

static struct PyModuleDef coremodule = {PyModuleDef_HEAD_INIT, "_core",
                                        "glmbench C core: ops on NumPy arrays (see glmbench.ops).", -1, NULL};

/* Types (e.g. the KV cache) register themselves through this hook, defined in bind_kvcache.c. */
extern int gb_kvcache_add_types(PyObject *module);

int gb_mla_strategy(const char *name) {
    for (int i = 0; i < GB_MLA_N_STRATEGIES; i++)
        if (!strcmp(name, gb_mla_strategy_names[i])) return i;
    PyErr_Format(PyExc_ValueError, "`strategy` must be one of %s, %s, %s, got '%s'", gb_mla_strategy_names[0],
                 gb_mla_strategy_names[1], gb_mla_strategy_names[2], name);
    return -1;
}

PyMODINIT_FUNC PyInit__core(void) {
    size_t n = 0;
    for (PyMethodDef **t = family_tables; *t; t++)
        for (PyMethodDef *m = *t; m->ml_name; m++) n++;
    all_methods = (PyMethodDef *)PyMem_Calloc(n + 1, sizeof(PyMethodDef));
    if (!all_methods) return PyErr_NoMemory();
    size_t i = 0;
    for (PyMethodDef **t = family_tables; *t; t++)
        for (PyMethodDef *m = *t; m->ml_name; m++) all_methods[i++] = *m;
    coremodule.m_methods = all_methods;

    import_array();
    PyObject *m = PyModule_Create(&coremodule);
    if (!m) return NULL;
    if (gb_kvcache_add_types(m) < 0) {
        Py_DECREF(m);
        return NULL;
    }
    PyObject *names = PyTuple_New(GB_MLA_N_STRATEGIES);
    if (!names) {
        Py_DECREF(m);
        return NULL;
    }
    for (int s = 0; s < GB_MLA_N_STRATEGIES; s++) {
        PyObject *u = PyUnicode_FromString(gb_mla_strategy_names[s]);
        if (!u) {
            Py_DECREF(names);
            Py_DECREF(m);
            return NULL;
        }
        PyTuple_SET_ITEM(names, s, u);
    }
    if (PyModule_AddObject(m, "MLA_STRATEGIES", names) < 0) {
        Py_DECREF(names);
        Py_DECREF(m);
        return NULL;
    }
    return m;
}

/* bind.h: the array checks every binding uses, so error messages have one shape:
 *   TypeError:  "`x` must be float32, got float64"
 *   ValueError: "`x` must be 2-D, got shape (3,)", "`x` contains NaN at flat index 7", ...
 * Only module.c and bind_*.c include this (they are the only files that see Python.h).
 *
 * Each op family's bindings live in csrc/bind_<family>.c and export one method table
 * `gb_<family>_methods[]` (NULL-terminated); module.c concatenates them into the module's table.
 */
#ifndef GLMBENCH_BIND_H
#define GLMBENCH_BIND_H

#define PY_SSIZE_T_CLEAN
#include <Python.h>
#ifndef GLMBENCH_IMPORT_ARRAY
#define NO_IMPORT_ARRAY
#endif
#define PY_ARRAY_UNIQUE_SYMBOL glmbench_ARRAY_API
#include <numpy/arrayobject.h>

#include "common.h"

/* How to treat a non-C-contiguous input. */
enum {
    GB_COPY = 0,    /* read-only input: make a C-contiguous copy (strided views are accepted) */
    GB_REQUIRE = 1  /* must already be C-contiguous (e.g. a buffer written in place) */
};

/* Check `obj` is an ndarray of dtype `typenum` with `ndim` dims (ndim < 0: any) and return a
 * NEW reference to a C-contiguous array (a copy if mode == GB_COPY and it was strided).
 * On failure sets TypeError/ValueError naming `name` and returns NULL. Never casts dtypes. */
PyArrayObject *gb_array(PyObject *obj, const char *name, int typenum, int ndim, int mode);

/* Like gb_array but accepts any of the listed typenums (terminated by -1), e.g. weights in
 * float32/float16/uint16(bf16). */
PyArrayObject *gb_array_any(PyObject *obj, const char *name, const int *typenums, int ndim, int mode);

/* ValueError unless arr.shape[axis] == expected; `what` says what it must match. */
int gb_check_dim(PyArrayObject *arr, const char *name, int axis, npy_intp expected, const char *what);

/* ValueError if a float32/float64 array holds NaN or inf (names the first flat index). */
int gb_check_finite(PyArrayObject *arr, const char *name);

/* Raise the Python exception matching a C-core status with gb_last_error()'s message. */
PyObject *gb_raise_status(int status);

/* The last step of a binding: a failed C call (status != GB_OK) raises; otherwise the output
 * array is handed to the caller and *out cleared, so the `done:` label does not release it. */
static inline PyObject *gb_result(int status, PyArrayObject **out) {
    if (status != GB_OK) return gb_raise_status(status);
    PyObject *r = (PyObject *)*out;
    *out = NULL;
    return r;
}

/* An MLA strategy name ("naive", "absorbed", "flash") -> its GB_MLA_* index, or -1 with a
 * ValueError naming the argument and the choices. */
int gb_mla_strategy(const char *name);

/* "(3, 4)" style shape string into buf. */
const char *gb_shape_str(PyArrayObject *arr, char *buf, size_t n);

/* A new C-contiguous float32 array of the given shape (uninitialised). */
PyArrayObject *gb_new_f32(int ndim, const npy_intp *dims);

/* {name(v): bool(available(v))} for kernel versions 1 .. count-1 (0 is "auto"): the *_versions bindings. */
PyObject *gb_versions_dict(int count, int (*available)(int), const char *(*name)(int));

/* The arrays of a linear binding whose weight is stored as bytes (qlinear, klinear): x f32[T, k],
 * weight uint8[N, row_bytes(fmt, k)], bias f32[N] or Py_None; checks x and bias finite and makes y f32[T, N].
 * `check_k` (NULL: none) runs after x's width is checked and before the weight's, so row_bytes
 * only sees a valid k. -1 with the error set; the caller releases *x, *w, *b, *y either way. */
int gb_packed_linear_args(PyObject *xo, PyObject *wo, PyObject *bo, int fmt, npy_intp k, int (*check_k)(npy_intp k),
                          int64_t (*row_bytes)(int fmt, int64_t k), PyArrayObject **x, PyArrayObject **w, PyArrayObject **b,
                          PyArrayObject **y);

/* The arrays of a routed-experts binding whose experts are stored as bytes (qmoe, kmoe):
 * x f32[T, D], topk_idx i64[T, K], topk_weight f32[T, K], gate/up/down uint8[E, bytes per expert]. */
typedef struct {
    PyArrayObject *x, *idx, *wt, *g, *u, *dn;
} gb_packed_moe;

/* Fill *a from the six arguments (checked dtypes and ranks); -1 with the error set. Whatever was
 * loaded is released by gb_packed_moe_release, also on failure. */
int gb_packed_moe_arrays(gb_packed_moe *a, PyObject *xo, PyObject *io, PyObject *wo, PyObject *go, PyObject *uo, PyObject *dno);

/* topk_idx/topk_weight against x's rows and topk_idx's width, up/down against gate's experts, each
 * expert's bytes (`kind` names them in the error: "the bytes", "the packed bytes"), then x and topk_weight finite. */
int gb_packed_moe_check(const gb_packed_moe *a, npy_intp gate_bytes, npy_intp up_bytes, npy_intp down_bytes, const char *kind);

void gb_packed_moe_release(gb_packed_moe *a);

/* The outputs of every routed-experts binding: y f32[T, D] and the per-expert counts i64[E];
 * -1 with the error set. */
int gb_moe_outputs(npy_intp T, npy_intp D, npy_intp E, PyArrayObject **y, PyArrayObject **cnt);

/* A routed-experts binding's last step: raise for a failed status, else the (y, counts) tuple. */
PyObject *gb_moe_result(int status, PyArrayObject *y, PyArrayObject *cnt);

/* A repacked quantized linear's arrays: x [T, k] float32 and finite, `packed` uint8 of exactly
 * `nbytes`, bias [n] float32 and finite, or None (*b stays NULL), and y [T, n] allocated. 0, or -1 with the
 * exception set; the caller releases what was made either way. */
int gb_repacked_linear_args(PyObject *xo, PyObject *po, PyObject *bo, npy_intp n, npy_intp k, npy_intp nbytes,
                            PyArrayObject **x, PyArrayObject **p, PyArrayObject **b, PyArrayObject **y);
/* the same; check_finite 0 leaves the finiteness of x to the kernel (gb_klinear_packed_chk, which
 * checks while it quantizes: the caller then calls gb_check_finite for the error) */
int gb_repacked_linear_args_chk(PyObject *xo, PyObject *po, PyObject *bo, npy_intp n, npy_intp k, npy_intp nbytes,
                                PyArrayObject **x, PyArrayObject **p, PyArrayObject **b, PyArrayObject **y, int check_finite);

/* A new C-contiguous uint8 array whose data starts on a 64-byte (cache-line) boundary: a view
 * into a slightly larger buffer, which it keeps alive. For the repacked weights, whose records the
 * decode kernels load a zmm (a line) at a time: numpy's own allocations start 16 bytes into a
 * line, which split every such load in two. NULL with the error set. */
PyArrayObject *gb_new_u8_aligned(int nd, const npy_intp *dims);

#endif

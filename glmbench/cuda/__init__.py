"""glmbench.cuda: the CUDA kernels (kernels/*.cu, built into glmbench.cuda._cuda) on device arrays.

Storage is bf16 for activations, weights and caches, fp32 for router weights and routing
weights, int64 for positions, int32 for expert indices; every kernel accumulates in fp32. The ops
take the same arguments in the same order as the CPU ops in docs/API.md, with DeviceArrays in
place of NumPy arrays:

    x = cuda.to_device(np_x)                     # float32/float64 -> bf16 (round to nearest even)
    y = cuda.rms_norm(x, w, 1e-5)                # a new DeviceArray
    y.to_numpy()                                 # float32

Without a GPU every call raises RuntimeError with CUDA's own message (e.g. "CUDA error 35
(cudaErrorInsufficientDriver): ..."); without the extension (no nvcc at install time) it says so.

`version=` picks a numbered kernel (0: the launcher's choice); each kernels/<family>.cu lists its
versions in its header. `capture(fn)` records fn's launches as a CUDA graph (decode steps are
timed that way); `time_ms` times a function or graph with CUDA events.

Whole models (random bf16 weights resident on the card, decode at depth as a graph, prefill,
cudaMemGetInfo memory) are in `CudaModel` at the end of this file; their timing records
(`glmbench measure --device cuda`) are glmbench.measure.cuda's.
"""
from __future__ import annotations

import math
import statistics
import weakref

import numpy as np

from glmbench import vocab
from glmbench.models import configs
from glmbench.models.configs import route_groups

try:  # built only where nvcc was found (setup.py); HAS_CUDA says which
    from glmbench.cuda import _cuda as _C
    HAS_CUDA = True
except ImportError:
    _C = None
    HAS_CUDA = False

__all__ = [
    "HAS_CUDA", "available", "device_info", "mem_info", "synchronize", "have_cublas",
    "DeviceArray", "empty", "to_device", "set_poison",
    "rms_norm", "rope", "linear", "silu_mul", "add", "swiglu",
    "moe_route", "moe_experts", "moe", "PagedCache", "gqa_attention", "mla_attention",
    "capture", "Graph", "time_ms", "copy_bandwidth", "CudaModel", "prefer",
]

_ITEMSIZE = {"bf16": 2, "f32": 4, "i32": 4, "i64": 8}
_NP = {"bf16": np.uint16, "f32": np.float32, "i32": np.int32, "i64": np.int64}
BF16_NAN = 0x7FC0
F32_NAN = 0x7FC00000


def _lib():
    if _C is None:
        raise RuntimeError("glmbench.cuda._cuda was not built (nvcc was not found when glmbench was installed, "
                           "or GLMBENCH_CUDA=0); see docs/CUDA.md")
    return _C


def available() -> bool:
    """True when the extension is built and a CUDA device answers."""
    if _C is None:
        return False
    try:
        return _C.device_count() > 0
    except RuntimeError:
        return False


def device_info() -> dict:
    return _lib().device_info()


def mem_info() -> tuple[int, int]:
    """(free, total) bytes from cudaMemGetInfo."""
    return _lib().mem_info()


def synchronize() -> None:
    _lib().synchronize()


def have_cublas() -> bool:
    return bool(_lib().have_cublas())


# ---- device arrays ------------------------------------------------------------------------
class _State:
    arena = None         # _Arena while capture() records or replays allocations
    capturing = False    # inside cudaStreamBeginCapture .. EndCapture: frees are deferred
    deferred = []        # device addresses whose free waits for the capture to end
    poison = False       # sentinel-fill every new output (gpu_check turns this on)


def set_poison(on: bool) -> None:
    """Fill every op output with NaN (bf16/f32) or -1 (int) before the kernel writes it, so an
    element the kernel forgot shows up in the checks (FlashMLA's habit)."""
    _State.poison = bool(on)


def _free_ptr(lib, ptr):
    """Finalizer of a DeviceArray: frees with the library that allocated it; deferred while a
    graph is being captured (cudaFree would break the capture)."""
    if _State.capturing:
        _State.deferred.append((lib, ptr))
        return
    try:
        lib.free(ptr)
    except RuntimeError:  # a finalizer cannot raise; at exit the context may already be gone
        pass


class DeviceArray:
    """A block of device memory with a shape and one of the dtypes bf16, f32, i32, i64.
    Views (`view`) share their base's memory and keep it alive."""

    __slots__ = ("ptr", "shape", "dtype", "_base", "_finalizer", "__weakref__")

    def __init__(self, shape, dtype="bf16", *, _ptr=None, _base=None):
        if dtype not in _ITEMSIZE:
            raise ValueError(f"`dtype` must be one of {', '.join(_ITEMSIZE)}, got {dtype!r}")
        shape = tuple(int(s) for s in (shape if isinstance(shape, (tuple, list)) else (shape,)))
        if any(s < 0 for s in shape):
            raise ValueError(f"`shape` must be non-negative, got {shape}")
        self.shape, self.dtype, self._base = shape, dtype, _base
        self._finalizer = None
        if _ptr is None:
            lib = _lib()
            self.ptr = lib.malloc(max(1, self.nbytes))
            self._finalizer = weakref.finalize(self, _free_ptr, lib, self.ptr)
        else:
            self.ptr = int(_ptr)

    @property
    def size(self) -> int:
        return math.prod(self.shape)

    @property
    def itemsize(self) -> int:
        return _ITEMSIZE[self.dtype]

    @property
    def nbytes(self) -> int:
        return self.size * self.itemsize

    @property
    def ndim(self) -> int:
        return len(self.shape)

    def view(self, offset: int = 0, shape=None) -> "DeviceArray":
        """Elements [offset, offset + prod(shape)) as a new array sharing this memory."""
        shape = self.shape if shape is None else tuple(int(s) for s in shape)
        if offset < 0 or offset + math.prod(shape) > self.size:
            raise ValueError(f"view of {math.prod(shape)} elements at offset {offset} exceeds {self.size}")
        return DeviceArray(shape, self.dtype, _ptr=self.ptr + offset * self.itemsize, _base=self._base or self)

    def reshape(self, *shape) -> "DeviceArray":
        shape = shape[0] if len(shape) == 1 and isinstance(shape[0], (tuple, list)) else shape
        shape = list(shape)
        if shape.count(-1) == 1:
            rest = math.prod(s for s in shape if s != -1)
            shape[shape.index(-1)] = self.size // rest if rest else 0
        if math.prod(shape) != self.size:
            raise ValueError(f"cannot reshape {self.shape} into {tuple(shape)}")
        return self.view(0, shape)

    def raw(self) -> np.ndarray:
        """The stored bits (bf16 as uint16)."""
        out = np.empty(self.shape, _NP[self.dtype])
        if self.nbytes:
            _lib().download(self.ptr, out)
        return out

    def to_numpy(self) -> np.ndarray:
        """A host copy; bf16 comes back as float32."""
        r = self.raw()
        return bf16_to_f32(r) if self.dtype == "bf16" else r

    def poison(self) -> "DeviceArray":
        if self.nbytes:
            if self.itemsize == 2:
                _lib().fill_u16(self.ptr, BF16_NAN, self.size)
            elif self.dtype == "f32":
                _lib().fill_u32(self.ptr, F32_NAN, self.size)
            else:
                _lib().fill_u32(self.ptr, 0xFFFFFFFF, self.nbytes // 4)
        return self

    def free(self) -> None:
        if self._finalizer is not None:
            self._finalizer()

    def __repr__(self):
        return f"DeviceArray(shape={self.shape}, dtype={self.dtype!r}, ptr=0x{self.ptr:x})"


f32_to_bf16 = vocab.to_bf16   # the one bf16 rounding (round to nearest even, NaN kept)
bf16_to_f32 = vocab.bf16_to_f32


def empty(shape, dtype="bf16") -> DeviceArray:
    """Uninitialised device memory (poisoned when set_poison(True)); inside capture() the
    allocation comes from the capture's arena."""
    shape = tuple(int(s) for s in (shape if isinstance(shape, (tuple, list)) else (shape,)))
    if _State.arena is not None:
        return _State.arena.take(shape, dtype)
    a = DeviceArray(shape, dtype)
    if _State.poison:
        a.poison()
    return a


def to_device(a, dtype=None) -> DeviceArray:
    """A host array on the device. Floats go to bf16 unless dtype="f32"; uint16 is taken as bf16
    bits; int32/int64 stay."""
    a = np.asarray(a)
    if dtype is None:
        dtype = {np.dtype(np.uint16): "bf16", np.dtype(np.int32): "i32", np.dtype(np.int64): "i64"}.get(a.dtype, "bf16")
    if dtype == "bf16":
        host = a if a.dtype == np.uint16 else f32_to_bf16(a)
    elif dtype in _NP:
        if a.dtype.kind == "f" and dtype in ("i32", "i64"):
            raise TypeError(f"cannot put a {a.dtype} array into a {dtype} DeviceArray")
        host = np.ascontiguousarray(a, dtype=_NP[dtype])
    else:
        raise ValueError(f"`dtype` must be one of {', '.join(_ITEMSIZE)}, got {dtype!r}")
    host = np.ascontiguousarray(host)
    d = DeviceArray(host.shape, dtype)
    if d.nbytes:
        _lib().upload(d.ptr, host)
    return d


_PREFER = {}


def prefer(op: str, version: int) -> None:
    """Use `version` wherever `op` ("gqa" or "mla" attention) is called with version=0 (e.g. the
    CUDA-core kernel when the tensor-core one failed validation on this card); 0 restores the
    launcher's choice. For "gqa" it applies to decode (T <= 4) only: prefill keeps the launcher's
    kernel, since the decode kernels take T <= 4."""
    if op not in ("gqa", "mla"):
        raise ValueError(f"`op` must be 'gqa' or 'mla', got {op!r}")
    _PREFER[op] = int(version)


def _check(a, name, dtype, ndim=None):
    if not isinstance(a, DeviceArray):
        raise TypeError(f"`{name}` must be a glmbench.cuda.DeviceArray, got {type(a).__name__}")
    if a.dtype != dtype:
        raise TypeError(f"`{name}` must be {dtype}, got {a.dtype}")
    if ndim is not None and a.ndim != ndim:
        raise ValueError(f"`{name}` must be {ndim}-D, got shape {a.shape}")
    return a


def _dim(a, name, axis, expected, what):
    if a.shape[axis] != expected:
        raise ValueError(f"`{name}` has shape {a.shape}: axis {axis} must be {expected} to match {what}")


def _ptr(a):
    return 0 if a is None else a.ptr


# ---- norm, rope, linear, swiglu -------------------------------------------------------------
def rms_norm(x: DeviceArray, weight: DeviceArray, eps: float = 1e-6, *, version: int = 0) -> DeviceArray:
    """x[..., D] bf16, weight[D] bf16 -> [..., D] bf16."""
    _check(x, "x", "bf16")
    _check(weight, "weight", "bf16", 1)
    if x.ndim < 1:
        raise ValueError(f"`x` must have at least 1 dimension, got shape {x.shape}")
    _dim(weight, "weight", 0, x.shape[-1], "x.shape[-1]")
    if not eps >= 0:
        raise ValueError(f"`eps` must be >= 0, got {eps}")
    y = empty(x.shape)
    _lib().rms_norm(x.ptr, weight.ptr, y.ptr, x.size // max(1, x.shape[-1]), x.shape[-1], float(eps), int(version))
    return y


_LAYOUTS = {"interleaved": 0, "half": 1}


def rope(x: DeviceArray, positions: DeviceArray, *, theta: float, rot_dim: int, rot_offset: int = 0,
         layout: str = "interleaved", version: int = 0) -> DeviceArray:
    """x[T, H, Dh] bf16, positions[T] int64 -> [T, H, Dh] (docs/API.md rope)."""
    _check(x, "x", "bf16", 3)
    _check(positions, "positions", "i64", 1)
    _dim(positions, "positions", 0, x.shape[0], "x.shape[0]")
    if layout not in _LAYOUTS:
        raise ValueError(f"`layout` must be 'interleaved' or 'half', got {layout!r}")
    y = empty(x.shape)
    T, H, Dh = x.shape
    _lib().rope(x.ptr, positions.ptr, y.ptr, T, H, Dh, float(theta), int(rot_dim), int(rot_offset),
                _LAYOUTS[layout], int(version))
    return y


def linear(x: DeviceArray, weight: DeviceArray, bias: DeviceArray | None = None, *, norm: DeviceArray | None = None,
           eps: float = 1e-6, residual: DeviceArray | None = None, version: int = 0) -> DeviceArray:
    """x[T, K] or [K] bf16, weight[N, K] bf16 (HF layout), bias[N] bf16 -> [T, N] or [N].
    norm[K]: RMSNorm x first (with eps); residual[T, N]: added to the output. Both are fused into
    the decode GEMV when T <= 8 (linear.cu linear_kernel2), else done as separate launches."""
    _check(x, "x", "bf16")
    _check(weight, "weight", "bf16", 2)
    if x.ndim not in (1, 2):
        raise ValueError(f"`x` must be 1-D or 2-D, got shape {x.shape}")
    N, K = weight.shape
    _dim(x, "x", x.ndim - 1, K, "weight.shape[1]")
    if bias is not None:
        _check(bias, "bias", "bf16", 1)
        _dim(bias, "bias", 0, N, "weight.shape[0]")
    T = 1 if x.ndim == 1 else x.shape[0]
    out_shape = (N,) if x.ndim == 1 else (T, N)
    if norm is not None:
        _check(norm, "norm", "bf16", 1)
        _dim(norm, "norm", 0, K, "weight.shape[1]")
    if residual is not None:
        _check(residual, "residual", "bf16")
        if residual.shape != out_shape:
            raise ValueError(f"`residual` must have shape {out_shape}, got {residual.shape}")
    if norm is None and residual is None:
        y = empty(out_shape)
        _lib().linear(x.ptr, weight.ptr, _ptr(bias), y.ptr, T, N, K, int(version))
        return y
    if T <= 8 and K % 8 == 0 and version in (0, 2):
        y = empty(out_shape)
        _lib().linear_ex(x.ptr, weight.ptr, _ptr(bias), y.ptr, T, N, K, _ptr(norm), float(eps), _ptr(residual),
                         int(version))
        return y
    h = rms_norm(x, norm, eps) if norm is not None else x
    y = linear(h, weight, bias, version=version)
    return add(y, residual) if residual is not None else y


def silu_mul(g: DeviceArray, u: DeviceArray) -> DeviceArray:
    """silu(g) * u, both [T, F] bf16."""
    _check(g, "g", "bf16", 2)
    _check(u, "u", "bf16", 2)
    if g.shape != u.shape:
        raise ValueError(f"`g` {g.shape} and `u` {u.shape} must have the same shape")
    h = empty(g.shape)
    _lib().silu_mul(g.ptr, u.ptr, h.ptr, g.shape[0], g.shape[1], g.shape[1], 0)
    return h


def add(a: DeviceArray, b: DeviceArray) -> DeviceArray:
    _check(a, "a", "bf16")
    _check(b, "b", "bf16")
    if a.shape != b.shape:
        raise ValueError(f"`a` {a.shape} and `b` {b.shape} must have the same shape")
    y = empty(a.shape)
    _lib().add(a.ptr, b.ptr, y.ptr, a.size)
    return y


def swiglu(x: DeviceArray, w_gate: DeviceArray, w_up: DeviceArray, w_down: DeviceArray, *,
           version: int = 0, fused: bool | None = None, residual: DeviceArray | None = None) -> DeviceArray:
    """down(silu(gate x) * up x) (+ residual): x[T, D], w_gate/w_up[F, D], w_down[D, F] -> [T, D].
    fused (default: when T <= 8 and D % 8 == 0): gate, up and silu in one GEMV pass
    (linear.cu swiglu_gemv_kernel1); else two linears and silu_mul."""
    _check(x, "x", "bf16", 2)
    for n, a in (("w_gate", w_gate), ("w_up", w_up), ("w_down", w_down)):
        _check(a, n, "bf16", 2)
    T, D = x.shape
    F = w_gate.shape[0]
    if w_gate.shape != (F, D) or w_up.shape != (F, D) or w_down.shape != (D, F):
        raise ValueError(f"swiglu needs w_gate/w_up [F, {D}] and w_down [{D}, F]; got {w_gate.shape}, {w_up.shape}, "
                         f"{w_down.shape}")
    if fused is None:
        fused = T <= 8 and D % 8 == 0
    if fused:
        h = empty((T, F))
        _lib().swiglu_gemv(x.ptr, w_gate.ptr, w_up.ptr, h.ptr, T, F, D)
    else:
        h = silu_mul(linear(x, w_gate, version=version), linear(x, w_up, version=version))
    return linear(h, w_down, residual=residual, version=version)


# ---- moe ------------------------------------------------------------------------------------
_SCORING = {"sigmoid": 0, "softmax": 1}
_GROUP_SCORE = {"top2_sum": 0, "max": 1}


def moe_route(x: DeviceArray, router_weight: DeviceArray, *, top_k: int, scoring: str = "sigmoid",
              bias: DeviceArray | None = None, n_group: int = 1, topk_group: int = 1, group_score: str | None = None,
              norm_topk_prob: bool = True, routed_scaling_factor: float = 1.0) -> tuple[DeviceArray, DeviceArray]:
    """x[T, D] bf16, router_weight[E, D] f32, bias[E] f32 -> (topk_idx[T, k] i32, topk_weight[T, k] f32),
    the semantics of docs/API.md moe_route (ties to the lower index, rows by descending choice).
    group_score: "top2_sum" (sigmoid, noaux_tc) | "max" (softmax, DeepSeek-V2 group_limited_greedy)
    | None, which takes the rule of the scoring as glmbench.moe_route does; the other pairs raise
    ValueError."""
    _check(x, "x", "bf16", 2)
    _check(router_weight, "router_weight", "f32", 2)
    E, D = router_weight.shape
    _dim(x, "x", 1, D, "router_weight.shape[1]")
    if bias is not None:
        _check(bias, "bias", "f32", 1)
        _dim(bias, "bias", 0, E, "router_weight.shape[0]")
    if scoring not in _SCORING:
        raise ValueError(f"`scoring` must be 'sigmoid' or 'softmax', got {scoring!r}")
    rule = group_score if group_score is not None else ("max" if scoring == "softmax" else "top2_sum")
    if rule not in _GROUP_SCORE:
        raise ValueError(f"`group_score` must be 'top2_sum', 'max' or None, got {group_score!r}")
    if (scoring == "softmax") != (rule == "max"):
        raise ValueError(f"`group_score`={rule!r} does not go with scoring={scoring!r} "
                         f"(sigmoid groups by 'top2_sum', softmax by 'max')")
    T, k = x.shape[0], int(top_k)
    idx, w, logits = empty((T, k), "i32"), empty((T, k), "f32"), empty((max(T, 1), E), "f32")
    _lib().moe_route(x.ptr, router_weight.ptr, _ptr(bias), idx.ptr, w.ptr, T, D, E, k, _SCORING[scoring],
                     int(n_group), int(topk_group), _GROUP_SCORE[rule], int(bool(norm_topk_prob)),
                     float(routed_scaling_factor), logits.ptr, 0)
    return idx, w


def moe_experts(x: DeviceArray, topk_idx: DeviceArray, topk_weight: DeviceArray, w_gate: DeviceArray,
                w_up: DeviceArray, w_down: DeviceArray, *, shared_out: DeviceArray | None = None,
                residual: DeviceArray | None = None, version: int = 0) -> tuple[DeviceArray, DeviceArray]:
    """Routed experts grouped by expert: permute rows by expert (stable), grouped GEMMs (each chosen
    expert's weights stream once per call for up to 64 rows), SwiGLU, un-permute with the routing
    weights (+ shared_out[T, D], e.g. the shared expert's output). -> (y[T, D], counts[E] i64).
    version 1: GEMV form, gather+gate+up+silu fused (decode; the default for <= 32 rows);
    version 2: tensor-core tiles over the tile schedule (prefill)."""
    _check(x, "x", "bf16", 2)
    _check(topk_idx, "topk_idx", "i32", 2)
    _check(topk_weight, "topk_weight", "f32", 2)
    for n, a in (("w_gate", w_gate), ("w_up", w_up), ("w_down", w_down)):
        _check(a, n, "bf16", 3)
    E, F, D = w_gate.shape
    T, k = topk_idx.shape
    _dim(x, "x", 1, D, "w_gate.shape[2]")
    _dim(x, "x", 0, T, "topk_idx.shape[0]")
    if topk_weight.shape != topk_idx.shape:
        raise ValueError(f"`topk_weight` {topk_weight.shape} must match `topk_idx` {topk_idx.shape}")
    if w_up.shape != (E, F, D) or w_down.shape != (E, D, F):
        raise ValueError(f"expert weights must be w_gate/w_up [E, F, D] = {(E, F, D)} and w_down [E, D, F]; "
                         f"got w_up {w_up.shape}, w_down {w_down.shape}")
    for n, a in (("shared_out", shared_out), ("residual", residual)):
        if a is not None:
            _check(a, n, "bf16", 2)
            if a.shape != (T, D):
                raise ValueError(f"`{n}` must have shape {(T, D)}, got {a.shape}")
    L = _lib()
    rows = T * k
    max_tiles = L.moe_max_tiles(rows, E)
    counts, offsets = empty((E,), "i64"), empty((E + 1,), "i32")
    sorted_tok, slot_of = empty((max(rows, 1),), "i32"), empty((max(rows, 1),), "i32")
    tiles, n_tiles = empty((2 * max_tiles,), "i32"), empty((1,), "i32")
    L.moe_permute(topk_idx.ptr, T, k, E, counts.ptr, offsets.ptr, sorted_tok.ptr, slot_of.ptr, tiles.ptr, n_tiles.ptr)
    if version == 0:
        version = 1 if rows <= 32 and D % 8 == 0 and F % 8 == 0 else 2
    if version == 1:  # decode: gather + gate + up + silu in one GEMV pass (moe.cu moe_swiglu_kernel1)
        h = empty((rows, F))
        L.moe_swiglu(x.ptr, sorted_tok.ptr, w_gate.ptr, w_up.ptr, h.ptr, offsets.ptr, rows, E, F, D)
    else:
        xs = empty((rows, D))
        L.moe_gather(x.ptr, sorted_tok.ptr, xs.ptr, rows, D)
        g, u = empty((rows, F)), empty((rows, F))
        L.moe_grouped_linear(xs.ptr, w_gate.ptr, g.ptr, offsets.ptr, tiles.ptr, n_tiles.ptr, rows, E, F, D, int(version))
        L.moe_grouped_linear(xs.ptr, w_up.ptr, u.ptr, offsets.ptr, tiles.ptr, n_tiles.ptr, rows, E, F, D, int(version))
        h = silu_mul(g, u)
    ys = empty((rows, D))
    L.moe_grouped_linear(h.ptr, w_down.ptr, ys.ptr, offsets.ptr, tiles.ptr, n_tiles.ptr, rows, E, D, F, int(version))
    y = empty((T, D))
    L.moe_unpermute(ys.ptr, slot_of.ptr, topk_weight.ptr, _ptr(shared_out), _ptr(residual), y.ptr, T, k, D)
    return y, counts


def moe(x, router_weight, w_gate, w_up, w_down, *, shared=None, version: int = 0, fused: bool | None = None,
        residual: DeviceArray | None = None, **route_kwargs):
    """Router + routed experts + shared expert (shared = (gate[Fs, D], up[Fs, D], down[D, Fs]))
    (+ residual, added in the un-permute). -> (y[T, D], counts[E] i64)."""
    idx, w = moe_route(x, router_weight, **route_kwargs)
    s = swiglu(x, *shared, fused=fused) if shared is not None else None
    return moe_experts(x, idx, w, w_gate, w_up, w_down, shared_out=s, residual=residual, version=version)


# ---- paged KV cache -------------------------------------------------------------------------
class PagedCache:
    """The device KV cache: per layer `pages[n_pages, block_size, row]` bf16 and a block table
    (int32). GQA keeps K and V pages ([Hkv, Dh] and [Hkv, Dv] rows); MLA keeps one row of
    [R latent | Dr rope key]. With `shuffle_seed` the block table is a random permutation, so the
    kernels really follow it; `poison=True` fills unwritten rows with bf16 NaN, so any read past
    the cached tokens shows up as NaN in the output."""

    def __init__(self, kind, n_layers, capacity_tokens, dims, *, block_size=64, poison=True, shuffle_seed=None):
        if kind not in ("gqa", "mla"):
            raise ValueError(f"`kind` must be 'gqa' or 'mla', got {kind!r}")
        if n_layers < 1 or capacity_tokens < 1 or block_size < 1:
            raise ValueError(f"need n_layers, capacity_tokens, block_size >= 1, got {n_layers}, {capacity_tokens}, "
                             f"{block_size}")
        self.kind, self.n_layers, self.block_size = kind, int(n_layers), int(block_size)
        self.n_pages = -(-int(capacity_tokens) // self.block_size)
        self.capacity_tokens = self.n_pages * self.block_size
        self.dims = tuple(int(d) for d in dims)
        if kind == "gqa":
            hkv, dh, dv = self.dims
            self.rows = (hkv * dh, hkv * dv)
        else:
            r, dr = self.dims
            self.rows = (r + dr,)
        self.pages = [empty((self.n_layers, self.n_pages, self.block_size, w)) for w in self.rows]
        if poison:
            for p in self.pages:
                p.poison()
        rng = np.random.default_rng(shuffle_seed) if shuffle_seed is not None else None
        table = np.empty((self.n_layers, self.n_pages), np.int32)
        for l in range(self.n_layers):
            table[l] = rng.permutation(self.n_pages) if rng is not None else np.arange(self.n_pages)
        self.table = to_device(table, "i32")
        self.lengths = [0] * self.n_layers

    @classmethod
    def gqa(cls, n_layers, capacity_tokens, n_kv_heads, head_dim, v_head_dim=None, **kw):
        return cls("gqa", n_layers, capacity_tokens, (n_kv_heads, head_dim, v_head_dim or head_dim), **kw)

    @classmethod
    def mla(cls, n_layers, capacity_tokens, kv_lora_rank, rope_dim, **kw):
        return cls("mla", n_layers, capacity_tokens, (kv_lora_rank, rope_dim), **kw)

    @property
    def bytes_per_token(self) -> int:
        return 2 * sum(self.rows) * self.n_layers

    @property
    def bytes_allocated(self) -> int:
        return sum(p.nbytes for p in self.pages) + self.table.nbytes

    def _layer(self, layer):
        if not 0 <= layer < self.n_layers:
            raise ValueError(f"`layer` must be in 0..{self.n_layers - 1}, got {layer}")
        return int(layer)

    def layer_pages(self, layer, which=0) -> DeviceArray:
        n = self.n_pages * self.block_size * self.rows[which]
        return self.pages[which].view(self._layer(layer) * n, (self.n_pages, self.block_size, self.rows[which]))

    def layer_table(self, layer) -> DeviceArray:
        return self.table.view(self._layer(layer) * self.n_pages, (self.n_pages,))

    def length(self, layer) -> int:
        return self.lengths[self._layer(layer)]

    def append(self, layer, a: DeviceArray, b: DeviceArray) -> None:
        """GQA: k[T, Hkv, Dh], v[T, Hkv, Dv]; MLA: latent[T, R], k_rope[T, Dr] (already normed/roped)."""
        layer = self._layer(layer)
        _check(a, "a", "bf16")
        _check(b, "b", "bf16")
        T = a.shape[0]
        if b.shape[0] != T:
            raise ValueError(f"the two appended arrays hold {T} and {b.shape[0]} tokens")
        n = self.lengths[layer]
        if n + T > self.capacity_tokens:
            raise ValueError(f"KV cache full: layer {layer} holds {n} of {self.capacity_tokens} tokens, "
                             f"cannot append {T}")
        L = _lib()
        table = self.layer_table(layer)
        if self.kind == "gqa":
            hkv, dh, dv = self.dims
            if a.shape[1:] != (hkv, dh) or b.shape[1:] != (hkv, dv):
                raise ValueError(f"GQA append needs k[T, {hkv}, {dh}] and v[T, {hkv}, {dv}], got {a.shape}, {b.shape}")
            L.paged_append(self.layer_pages(layer, 0).ptr, table.ptr, self.block_size, self.rows[0], 0, a.ptr,
                           hkv * dh, T, n)
            L.paged_append(self.layer_pages(layer, 1).ptr, table.ptr, self.block_size, self.rows[1], 0, b.ptr,
                           hkv * dv, T, n)
        else:
            r, dr = self.dims
            if a.shape[1:] != (r,) or b.shape[1:] != (dr,):
                raise ValueError(f"MLA append needs latent[T, {r}] and k_rope[T, {dr}], got {a.shape}, {b.shape}")
            p = self.layer_pages(layer)
            L.paged_append(p.ptr, table.ptr, self.block_size, r + dr, 0, a.ptr, r, T, n)
            L.paged_append(p.ptr, table.ptr, self.block_size, r + dr, r, b.ptr, dr, T, n)
        self.lengths[layer] = n + T

    def set_length(self, layer, n) -> None:
        if not 0 <= n <= self.capacity_tokens:
            raise ValueError(f"`n` must be in 0..{self.capacity_tokens}, got {n}")
        self.lengths[self._layer(layer)] = int(n)

    def fill_synthetic(self, n_tokens, seed=0, scale=1.0) -> None:
        """Every layer to n_tokens of random finite entries (uniform(-scale, scale) in bf16)."""
        for i, p in enumerate(self.pages):
            _lib().random_bf16(p.ptr, p.size, int(seed) * 7919 + i, float(scale))
        for l in range(self.n_layers):
            self.set_length(l, n_tokens)

    def read(self, layer) -> tuple:
        """float32 host copies of what layer holds, in token order (tests)."""
        layer = self._layer(layer)
        n = self.lengths[layer]
        table = self.layer_table(layer).raw()
        outs = []
        for which in range(len(self.rows)):
            pages = self.layer_pages(layer, which).to_numpy().reshape(self.n_pages * self.block_size, -1)
            tok = np.arange(n)
            outs.append(pages[table[tok // self.block_size] * self.block_size + tok % self.block_size])
        if self.kind == "gqa":
            hkv, dh, dv = self.dims
            return outs[0].reshape(n, hkv, dh), outs[1].reshape(n, hkv, dv)
        r, _ = self.dims
        return outs[0][:, :r], outs[0][:, r:]

    def reset(self) -> None:
        self.lengths = [0] * self.n_layers


# ---- attention ------------------------------------------------------------------------------
def gqa_attention(q: DeviceArray, cache: PagedCache, layer: int, *, scale: float | None = None,
                  n_splits: int = 0, version: int = 0) -> DeviceArray:
    """q[T, Hq, Dh] bf16: the LAST T tokens already appended to `cache` at `layer`; causal.
    -> [T, Hq, Dv] bf16 (docs/API.md gqa_attention)."""
    _check(q, "q", "bf16", 3)
    if cache.kind != "gqa":
        raise ValueError(f"gqa_attention needs a GQA cache, got a {cache.kind} cache")
    hkv, dh, dv = cache.dims
    T, Hq, Dh = q.shape
    _dim(q, "q", 2, dh, "the cache's head_dim")
    L = cache.length(layer)
    if T > L:
        raise ValueError(f"`q` holds {T} queries but layer {layer} of the cache holds only {L} tokens")
    return _gqa(q, cache.layer_pages(layer, 0), cache.layer_pages(layer, 1), cache.layer_table(layer),
                cache.block_size, T, L, Hq, hkv, dh, dv, scale, n_splits, version)


def _gqa(q, kp, vp, table, page_size, T, L, Hq, Hkv, Dh, Dv, scale, n_splits, version):
    lib = _lib()
    if Hq % Hkv:
        raise ValueError(f"`q_heads`={Hq} is not a multiple of `kv_heads`={Hkv}")
    # a preferred version stands in for the launcher's decode choice (T <= 4); prefill keeps its own
    v, S = lib.gqa_plan(T, L, Hq, Hkv, Dh, Dv, int(version) or (_PREFER.get("gqa", 0) if T <= 4 else 0))
    S = int(n_splits) or S
    ws_bytes = lib.gqa_workspace_bytes(T, Hq, Dv, S) if S > 1 else 0
    ws = empty((max(1, ws_bytes // 4),), "f32") if ws_bytes else None
    out = empty((T, Hq, Dv))
    scale = Dh ** -0.5 if scale is None else float(scale)
    lib.gqa_attention(q.ptr, kp.ptr, vp.ptr, table.ptr, page_size, out.ptr, T, L, Hq, Hkv, Dh, Dv, scale, S,
                      _ptr(ws), ws_bytes, int(v))
    return out


MLA_STRATEGIES = vocab.MLA_STRATEGIES


def mla_attention(q_nope: DeviceArray, q_rope: DeviceArray, cache: PagedCache, layer: int, kv_b_weight: DeviceArray,
                  *, v_head_dim: int, scale: float | None = None, strategy: str = "flash",
                  n_splits: int | None = None, version: int = 0) -> DeviceArray:
    """MLA attention over the latent cache (docs/API.md mla_attention). q_nope[T, H, Dn],
    q_rope[T, H, Dr] (already roped), kv_b_weight[H*(Dn+Dv), R] -> [T, H, Dv].
      naive     expand the whole cache through kv_b (a GEMM), then per-head attention (G = 1)
      absorbed  fold kv_b into q and out; MQA over the latent cache, all heads share each row read;
                one split (one pass over the cache per block)
      flash     absorbed with split-K over the cache and a combine step (n_splits None = choose).
    version: the absorbed kernel (attention_mla.cu: 1 CUDA cores, 2 tensor cores; 0 = choose)."""
    _check(q_nope, "q_nope", "bf16", 3)
    _check(q_rope, "q_rope", "bf16", 3)
    _check(kv_b_weight, "kv_b_weight", "bf16", 2)
    if cache.kind != "mla":
        raise ValueError(f"mla_attention needs an MLA cache, got a {cache.kind} cache")
    vocab.mla_strategy(strategy, "strategy")
    R, Dr = cache.dims
    T, H, Dn = q_nope.shape
    Dv = int(v_head_dim)
    if q_rope.shape != (T, H, Dr):
        raise ValueError(f"`q_rope` must have shape {(T, H, Dr)}, got {q_rope.shape}")
    if kv_b_weight.shape != (H * (Dn + Dv), R):
        raise ValueError(f"`kv_b_weight` must have shape {(H * (Dn + Dv), R)}, got {kv_b_weight.shape}")
    L = cache.length(layer)
    if T > L:
        raise ValueError(f"`q_nope` holds {T} queries but layer {layer} of the cache holds only {L} tokens")
    scale = (Dn + Dr) ** -0.5 if scale is None else float(scale)
    lib = _lib()
    pages, table = cache.layer_pages(layer), cache.layer_table(layer)
    if strategy == "naive":
        latent, rope_k = empty((L, R)), empty((L, Dr))
        lib.paged_gather(pages.ptr, table.ptr, cache.block_size, R + Dr, 0, latent.ptr, R, L)
        lib.paged_gather(pages.ptr, table.ptr, cache.block_size, R + Dr, R, rope_k.ptr, Dr, L)
        kv = linear(latent, kv_b_weight)
        k, v = empty((L, H, Dn + Dr)), empty((L, H, Dv))
        lib.mla_split_kv(kv.ptr, rope_k.ptr, k.ptr, v.ptr, L, H, Dn, Dr, Dv)
        q = empty((T, H, Dn + Dr))
        lib.concat_heads(q_nope.ptr, q_rope.ptr, q.ptr, T * H, Dn, Dr)
        one_page = _single_page_table()
        return _gqa(q, k, v, one_page, L, T, L, H, H, Dn + Dr, Dv, scale, n_splits or 0, 0)
    q_lat = empty((T, H, R))
    lib.mla_absorb_q(q_nope.ptr, kv_b_weight.ptr, q_lat.ptr, T, H, Dn, Dv, R)
    S = 1 if strategy == "absorbed" else int(n_splits or lib.mla_plan(T, L, H))
    ws_bytes = lib.mla_workspace_bytes(T, H, R, S) if S > 1 else 0
    ws = empty((max(1, ws_bytes // 4),), "f32") if ws_bytes else None
    o_lat = empty((T, H, R))
    lib.mla_absorbed_attention(q_lat.ptr, q_rope.ptr, pages.ptr, table.ptr, cache.block_size, o_lat.ptr, T, L, H, R,
                               Dr, scale, S, _ptr(ws), ws_bytes, int(version) or _PREFER.get("mla", 0))
    out = empty((T, H, Dv))
    lib.mla_absorb_o(o_lat.ptr, kv_b_weight.ptr, out.ptr, T, H, Dn, Dv, R)
    return out


_ONE_PAGE = None


def _single_page_table():
    """Block table [0]: a contiguous [L, ...] buffer seen as one page of L tokens."""
    global _ONE_PAGE
    if _ONE_PAGE is None:
        _ONE_PAGE = to_device(np.zeros(1, np.int32), "i32")
    return _ONE_PAGE


# ---- graphs and timing ----------------------------------------------------------------------
class _Arena:
    """Allocations of a captured function: recorded on the eager run, handed out again in the same
    order during capture (so nothing is allocated or freed while the stream is captured), and
    kept alive as long as the graph."""

    def __init__(self):
        self.arrays, self.replay, self.i = [], False, 0

    def take(self, shape, dtype):
        if not self.replay:
            a = DeviceArray(shape, dtype)
            if _State.poison:
                a.poison()
            self.arrays.append(a)
            return a
        if self.i >= len(self.arrays) or self.arrays[self.i].shape != shape or self.arrays[self.i].dtype != dtype:
            raise RuntimeError("capture(): the function allocated differently on its second run; "
                               "a captured function must do the same work each time")
        a = self.arrays[self.i]
        self.i += 1
        return a


class Graph:
    """An instantiated CUDA graph and the device arrays it reads and writes: those it allocated
    (`arena`) and, through the captured function's closure (`fn`), its inputs."""

    def __init__(self, handle, arena, result, fn):
        self.handle, self.arena, self.result, self.fn = handle, arena, result, fn
        self._fin = weakref.finalize(self, _lib().graph_destroy, handle)

    def launch(self) -> None:
        _lib().graph_launch(self.handle)


def capture(fn) -> Graph:
    """Run fn() once eagerly (recording its allocations), then again under stream capture.
    fn must launch the same work both times and must not copy to or from the host. Returns a
    Graph whose `result` is what the captured run returned."""
    lib = _lib()
    if _State.arena is not None:
        raise RuntimeError("capture() cannot be nested")
    arena = _Arena()
    _State.arena = arena
    try:
        fn()
        lib.synchronize()
        arena.replay = True
        _State.capturing = True
        lib.capture_begin()
        try:
            result = fn()
        finally:
            handle = lib.capture_end()
    finally:
        _State.arena, _State.capturing = None, False
        pending, _State.deferred = _State.deferred, []
        for owner, p in pending:
            owner.free(p)
    return Graph(handle, arena, result, fn)


def time_ms(fn_or_graph, *, warmup: int = 3, iters: int = 20, repeats: int = 5) -> dict:
    """Median and spread of the device time of one call, from CUDA events around `iters` calls
    (a Graph is launched; a function is called); `samples_ms` holds each repeat's time per call."""
    lib = _lib()
    run = fn_or_graph.launch if isinstance(fn_or_graph, Graph) else fn_or_graph
    for _ in range(warmup):
        run()
    lib.synchronize()
    a, b = lib.event_create(), lib.event_create()
    try:
        ts = []
        for _ in range(repeats):
            lib.event_record(a)
            for _ in range(iters):
                run()
            lib.event_record(b)
            ts.append(lib.event_elapsed(a, b) / iters)
    finally:
        lib.event_destroy(a)
        lib.event_destroy(b)
    return {"median_ms": statistics.median(ts), "min_ms": min(ts), "max_ms": max(ts), "repeats": repeats,
            "iters": iters, "samples_ms": ts}


def copy_bandwidth(nbytes: int = 2 << 30) -> dict:
    """The copy ceiling: bytes read + written per second by our 16-byte copy kernel and by
    cudaMemcpy device-to-device, over buffers far larger than L2."""
    lib = _lib()
    src, dst = empty((nbytes // 2,)), empty((nbytes // 2,))
    lib.random_bf16(src.ptr, src.size, 1, 1.0)
    k = time_ms(lambda: lib.copy_bench(dst.ptr, src.ptr, src.nbytes), iters=10)
    m = time_ms(lambda: lib.copy(dst.ptr, src.ptr, src.nbytes), iters=10)
    return {"kernel_gbs": 2 * src.nbytes / k["median_ms"] / 1e6, "memcpy_gbs": 2 * src.nbytes / m["median_ms"] / 1e6,
            "nbytes": src.nbytes}


# ---- whole models ---------------------------------------------------------------------------
class CudaModel:
    """A whole model resident on the GPU with random bf16 weights (norm weights 1; router weights
    and the expert-score bias fp32), a paged bf16 KV cache, and the same layer structure as
    glmbench.models.model.Model: h = x + Attn(RMSNorm(x)); y = h + MLP(RMSNorm(h)).

    `forward(x, pos)` runs the layers on embedded tokens (appending to the cache); `decode_graph(depth)`
    and `prefill_graph(n, depth)` capture one step at a given depth as a CUDA graph (the cache is
    filled synthetically to `depth` and every replay writes the same slots): that is how steps are
    timed.
    Weights are drawn on the device (a counter-based hash, uniform with the std of N(0, 1/fan_in)),
    so a 60 GB model is never built on the host. fused=False takes the unfused path everywhere
    (separate split/norm/rope/append launches for MLA, unfused SwiGLU) for checking the fused one."""

    def __init__(self, config, *, max_context: int = 4096, mla_strategy: str = "flash", seed: int = 0,
                 block_size: int = 64, layers: int | None = None, fused: bool = True):
        cfg = config if isinstance(config, configs.ModelConfig) else configs.load(config)
        self.cfg, self.mla_strategy, self.fused = cfg, mla_strategy, bool(fused)
        vocab.mla_strategy(mla_strategy)
        if getattr(cfg, "rope_scaling", None):
            raise ValueError(f"CudaModel: {cfg.name} uses rope_scaling {cfg.rope_scaling!r}, which the CUDA rope "
                             "kernels do not implement (plain theta^(-2i/d) frequencies only)")
        if (cfg.windowed_layers or cfg.model_type in configs.GEMMA_FAMILIES + configs.GEMMA1_FAMILIES
                or cfg.forward_unsupported()
                or cfg.attention_sinks or cfg.expert_bias or cfg.layer_norm   # GPT-OSS, Cohere: CPU only
                or cfg.post_norms or cfg.nope_layers or cfg.qk_norm_all_heads or cfg.clip_qkv
                or cfg.residual_multiplier is not None   # OLMo 2 / 3, EXAONE 4, SmolLM3, OLMoE, Granite
                or cfg.qk_norm_after_rope or cfg.norm_bias   # Hunyuan, Phi-3.5-MoE
                or not cfg.mlp_gated   # Arcee's ungated relu2 MLP
                or cfg.model_type == "afmoe"):   # AFMoE's gated attention and four norms (whatever its windows)
            # (post-norm layers, NoPE layers, q / k norms over all heads, clip_qkv, Granite's multipliers; Hunyuan's
            # q / k norms after rope; Phi-3.5-MoE's biased LayerNorms and sparsemixer router; an ungated MLP)
            # the GPU path has full causal attention and the Llama/Qwen layer only: refuse, never run it wrong
            # (Gemma 1: GeGLU, embeddings x sqrt(hidden), (1 + w) norms)
            raise ValueError(f"CudaModel: {cfg.name} ({cfg.model_type}) needs sliding-window attention, Gemma's "
                             "layer (sandwich norms, GeGLU, scaled embeddings, soft-capping) or Cohere's (LayerNorm, parallel "
                             "attention and MLP) or another family's layer (post-norms, NoPE layers, q / k norms over "
                             "all heads, multipliers, q / k norms after rope, biased LayerNorms, an ungated MLP, AFMoE's gated attention), which the CUDA path does not implement; glmbench.Model runs it "
                             "on the CPU")
        self.n_layers = cfg.n_layers if layers is None else int(layers)
        free0, _ = mem_info()
        self.w = {}
        shapes = cfg.tensor_shapes()
        lib = _lib()
        for i, (name, shape) in enumerate(sorted(shapes.items())):
            if name.startswith("model.layers."):
                li = int(name.split(".")[2])
                if li >= self.n_layers:
                    continue
            # the router and its expert-score bias stay fp32 (moe_route reads them so)
            f32 = name.endswith("mlp.gate.weight") or name.endswith("e_score_correction_bias")
            a = DeviceArray(shape, "f32" if f32 else "bf16")
            if name.endswith("norm.weight"):
                lib.fill_u16(a.ptr, 0x3F80, a.size)  # bf16 1.0
            elif f32:
                host = np.random.default_rng([seed, i]).standard_normal(a.size).astype(np.float32)
                # bias spread like the sigmoid scores it shifts (as glmbench.models.model does)
                host *= 0.1 if name.endswith("e_score_correction_bias") else 1.0 / math.sqrt(shape[-1])
                lib.upload(a.ptr, host.reshape(shape))
            elif len(shape) == 1:  # biases: small, as glmbench.models.model's 0.02
                lib.random_bf16(a.ptr, a.size, seed * 1000003 + i, 0.02 * math.sqrt(3.0))
            else:
                # uniform(-s, s) has std s / sqrt(3): match N(0, 1/fan_in)
                lib.random_bf16(a.ptr, a.size, seed * 1000003 + i, math.sqrt(3.0 / shape[-1]))
            self.w[name] = a
        self.weight_bytes = sum(a.nbytes for a in self.w.values())
        if cfg.attention == "mla":
            self.cache = PagedCache.mla(self.n_layers, max_context, cfg.kv_lora_rank, cfg.qk_rope_head_dim,
                                        block_size=block_size, poison=False)
        else:
            self.cache = PagedCache.gqa(self.n_layers, max_context, cfg.n_kv_heads, cfg.head_dim, cfg.v_head_dim,
                                        block_size=block_size, poison=False)
        lib.synchronize()
        free1, _ = mem_info()
        self.device_bytes_used = free0 - free1
        self._experts = {}

    # weights by HF name
    def _lw(self, i, name):
        return self.w.get(f"model.layers.{i}.{name}")

    def _expert_stack(self, i):
        """[E, F, D] gate/up and [E, D, F] down: HF 5.x fused gate_up_proj [E, 2F, D] is split by view."""
        if i in self._experts:
            return self._experts[i]
        gu = self._lw(i, "mlp.experts.gate_up_proj")
        if gu is not None:
            E, F2, D = gu.shape
            F = F2 // 2
            # gate rows are [0, F) of each expert's [2F, D] block: not one contiguous view, so the
            # stacks are copied once into their own buffers.
            gate, up = DeviceArray((E, F, D)), DeviceArray((E, F, D))
            for e in range(E):
                _lib().copy(gate.ptr + e * F * D * 2, gu.ptr + e * F2 * D * 2, F * D * 2)
                _lib().copy(up.ptr + e * F * D * 2, gu.ptr + (e * F2 + F) * D * 2, F * D * 2)
            down = self._lw(i, "mlp.experts.down_proj")
        else:
            gate, up, down = (self._lw(i, f"mlp.experts.{n}") for n in ("gate_proj", "up_proj", "down_proj"))
        self._experts[i] = (gate, up, down)
        return self._experts[i]

    def _attention(self, i, x, pos):
        """x + Attn(RMSNorm(x)). Fused decode (T <= 8): the input norm and the q_a norm ride in the
        next GEMV, the residual in o_proj's; otherwise separate launches."""
        cfg, T = self.cfg, x.shape[0]
        eps = float(cfg.rms_norm_eps)
        fuse = self.fused and T <= 8
        ln = self._lw(i, "input_layernorm.weight")
        h = None if fuse else rms_norm(x, ln, eps)

        def proj(name, bias=None):  # a projection of RMSNorm(x)
            w = self._lw(i, f"self_attn.{name}.weight")
            return linear(x, w, bias, norm=ln, eps=eps) if fuse else linear(h, w, bias)

        def out(o, bias=None):  # o_proj and the residual
            w = self._lw(i, "self_attn.o_proj.weight")
            return linear(o, w, bias, residual=x) if fuse else add(x, linear(o, w, bias))

        if cfg.attention == "mla":
            H, Dn, Dr, Dv, R = cfg.n_heads, cfg.qk_nope_head_dim, cfg.qk_rope_head_dim, cfg.v_head_dim, cfg.kv_lora_rank
            leps = cfg.latent_norm_eps
            if cfg.q_lora_rank:
                qa = proj("q_a_proj")
                qln = self._lw(i, "self_attn.q_a_layernorm.weight")
                qb = self._lw(i, "self_attn.q_b_proj.weight")
                q = linear(qa, qb, norm=qln, eps=leps) if fuse else linear(rms_norm(qa, qln, leps), qb)
            else:
                q = proj("q_proj")
            q = q.reshape(T, H, Dn + Dr)
            c = proj("kv_a_proj_with_mqa")
            if self.fused:
                q_nope, q_rope = self._mla_prepare(i, q, c, pos)
            else:
                q_nope, q_rope_in = empty((T, H, Dn)), empty((T, H, Dr))
                _split_cols(q.reshape(T * H, Dn + Dr), q_nope, q_rope_in, Dn, Dr)
                lat_in, kr_in = empty((T, R)), empty((T, 1, Dr))
                _split_cols(c, lat_in, kr_in, R, Dr)
                latent = rms_norm(lat_in, self._lw(i, "self_attn.kv_a_layernorm.weight"), leps)
                kr = rope(kr_in, pos, theta=cfg.rope_theta, rot_dim=Dr, layout=cfg.rope_layout)
                q_rope = rope(q_rope_in, pos, theta=cfg.rope_theta, rot_dim=Dr, layout=cfg.rope_layout)
                self.cache.append(i, latent, kr.reshape(T, Dr))
            o = mla_attention(q_nope, q_rope, self.cache, i, self._lw(i, "self_attn.kv_b_proj.weight"),
                              v_head_dim=Dv, scale=cfg.softmax_scale, strategy=self.mla_strategy)
            return out(o.reshape(T, H * Dv))
        Hq, Hkv, Dh, Dv = cfg.n_heads, cfg.n_kv_heads, cfg.head_dim, cfg.v_head_dim
        b = lambda n: self._lw(i, f"self_attn.{n}.bias")  # noqa: E731
        q = proj("q_proj", b("q_proj")).reshape(T, Hq, Dh)
        k = proj("k_proj", b("k_proj")).reshape(T, Hkv, Dh)
        v = proj("v_proj", b("v_proj")).reshape(T, Hkv, Dv)
        if cfg.qk_norm:
            q = rms_norm(q, self._lw(i, "self_attn.q_norm.weight"), eps)
            k = rms_norm(k, self._lw(i, "self_attn.k_norm.weight"), eps)
        q = rope(q, pos, theta=cfg.rope_theta, rot_dim=cfg.rope_dim, layout=cfg.rope_layout)
        k = rope(k, pos, theta=cfg.rope_theta, rot_dim=cfg.rope_dim, layout=cfg.rope_layout)
        self.cache.append(i, k, v)
        o = gqa_attention(q, self.cache, i, scale=cfg.softmax_scale)
        return out(o.reshape(T, Hq * Dv), b("o_proj"))

    def _mla_prepare(self, i, q, c, pos):
        """attention_mla.cu mla_prepare: q split and roped, latent normed and k_rope roped into the
        cache, in one launch (the unfused path takes nine)."""
        cfg = self.cfg
        T, H = q.shape[0], q.shape[1]
        Dn, Dr, R = cfg.qk_nope_head_dim, cfg.qk_rope_head_dim, cfg.kv_lora_rank
        n = self.cache.length(i)
        if n + T > self.cache.capacity_tokens:
            raise ValueError(f"KV cache full: layer {i} holds {n} of {self.cache.capacity_tokens} tokens, cannot append {T}")
        q_nope, q_rope = empty((T, H, Dn)), empty((T, H, Dr))
        _lib().mla_prepare(q.ptr, c.ptr, self._lw(i, "self_attn.kv_a_layernorm.weight").ptr, float(cfg.latent_norm_eps),
                           pos.ptr, float(cfg.rope_theta), _LAYOUTS[cfg.rope_layout], self.cache.layer_pages(i).ptr,
                           self.cache.layer_table(i).ptr, self.cache.block_size, n, q_nope.ptr, q_rope.ptr, T, H, Dn,
                           Dr, R)
        self.cache.lengths[i] = n + T
        return q_nope, q_rope

    def _mlp(self, i, x):
        """x + MLP(RMSNorm(x)); fused: the residual rides in the down GEMV or the MoE un-permute."""
        cfg = self.cfg
        h = rms_norm(x, self._lw(i, "post_attention_layernorm.weight"), float(cfg.rms_norm_eps))
        fuse = self.fused and x.shape[0] <= 8
        fused = None if self.fused else False
        res = x if fuse else None
        if not (cfg.n_routed_experts and cfg.is_moe_layer(i)):
            y = swiglu(h, self._lw(i, "mlp.gate_proj.weight"), self._lw(i, "mlp.up_proj.weight"),
                       self._lw(i, "mlp.down_proj.weight"), fused=fused, residual=res)
            return y if fuse else add(x, y)
        shared = None
        if self._lw(i, "mlp.shared_experts.gate_proj.weight") is not None:
            shared = tuple(self._lw(i, f"mlp.shared_experts.{n}.weight") for n in ("gate_proj", "up_proj", "down_proj"))
        y, _ = moe(h, self._lw(i, "mlp.gate.weight"), *self._expert_stack(i), shared=shared, fused=fused,
                   residual=res, version=0 if self.fused else 2,
                   top_k=int(cfg.n_experts_per_tok), scoring=cfg.router_scoring,
                   bias=self._lw(i, "mlp.gate.e_score_correction_bias"), **route_groups(cfg),
                   routed_scaling_factor=float(cfg.routed_scaling_factor or 1.0))
        return y if fuse else add(x, y)

    def forward(self, x: DeviceArray, pos: DeviceArray) -> DeviceArray:
        """x[T, D] embedded tokens at positions pos[T] (i64, on the device) -> logits[T, vocab]."""
        for i in range(self.n_layers):
            x = self._attention(i, x, pos)
            x = self._mlp(i, x)
        head = self.w.get("lm_head.weight", self.w["model.embed_tokens.weight"])
        fn, eps = self.w["model.norm.weight"], float(self.cfg.rms_norm_eps)
        if self.fused and x.shape[0] <= 8:
            return linear(x, head, norm=fn, eps=eps)
        return linear(rms_norm(x, fn, eps), head)

    def embed(self, tokens) -> DeviceArray:
        """Rows of the embedding table (device copies; tokens are host ints)."""
        emb = self.w["model.embed_tokens.weight"]
        D = emb.shape[1]
        x = empty((len(tokens), D))
        for t, tok in enumerate(tokens):
            _lib().copy(x.ptr + t * D * 2, emb.ptr + int(tok) * D * 2, D * 2)
        return x

    def prefill(self, tokens) -> DeviceArray:
        """Run host token ids through the model after what the cache holds -> logits[T, vocab]."""
        start = self.cache.length(0)
        pos = to_device(np.arange(start, start + len(tokens), dtype=np.int64))
        return self.forward(self.embed(tokens), pos)

    def decode(self, token: int) -> DeviceArray:
        """One token -> logits[1, vocab]."""
        return self.prefill([int(token)])

    def reset(self) -> None:
        self.cache.reset()

    def load_hf_weights(self, src) -> None:
        """Replace the random weights with HF-named host arrays (a transformers state_dict as NumPy,
        or glmbench.models.model's names): matrices go to bf16 (round to nearest even), the router and its
        bias stay fp32. Routed experts may come fused (`mlp.experts.gate_up_proj` [E, 2F, D],
        transformers 5.x), stacked (`mlp.experts.gate_proj`), or per expert (4.x)."""
        lib = _lib()

        def put(name, a):
            d = self.w[name]
            a = np.asarray(a.detach().cpu().float().numpy() if hasattr(a, "detach") else a)
            if tuple(a.shape) != d.shape:
                raise ValueError(f"weight {name!r} has shape {tuple(a.shape)}, expected {d.shape} from the config")
            host = np.ascontiguousarray(a, np.float32) if d.dtype == "f32" else (
                a if a.dtype == np.uint16 else f32_to_bf16(a))
            lib.upload(d.ptr, np.ascontiguousarray(host))

        for name in self.w:
            if name in src:
                put(name, src[name])
                continue
            base, _, part = name.rpartition("mlp.experts.")
            if part in ("gate_proj", "up_proj", "down_proj"):
                fused = base + "mlp.experts.gate_up_proj"
                if part != "down_proj" and fused in src:
                    gu = np.asarray(src[fused].detach().cpu().float().numpy() if hasattr(src[fused], "detach")
                                    else src[fused])
                    F = gu.shape[1] // 2
                    put(name, gu[:, :F] if part == "gate_proj" else gu[:, F:])
                    continue
                per = [base + f"mlp.experts.{e}.{part}.weight" for e in range(self.w[name].shape[0])]
                if all(k in src for k in per):
                    put(name, np.stack([np.asarray(src[k].detach().cpu().float().numpy() if hasattr(src[k], "detach")
                                                   else src[k]) for k in per]))
                    continue
            if name.endswith("e_score_correction_bias"):
                put(name, np.zeros(self.w[name].shape, np.float32))  # checkpoints without it route on scores
                continue
            if name == "lm_head.weight" and self.cfg.tie_word_embeddings and "model.embed_tokens.weight" in src:
                put(name, src["model.embed_tokens.weight"])
                continue
            raise ValueError(f"`src` lacks {name!r}")
        self._experts.clear()

    def pin_routing(self, bias: float = 10.0) -> None:
        """Make every token choose experts 0..k-1 (a +bias on their expert-score bias; sigmoid routers
        with a bias only). For comparing two implementations whose bf16 roundings differ: a near-tie
        in the router would otherwise send them to different experts and the comparison would test
        the tie, not the wiring. Routing itself is checked by moe_route's own tests."""
        k = int(self.cfg.n_experts_per_tok or 0)
        for name, a in self.w.items():
            if name.endswith("e_score_correction_bias"):
                b = np.zeros(a.shape, np.float32)
                b[:k] = bias
                _lib().upload(a.ptr, b)

    def host_weights(self) -> dict:
        """The weights as host arrays under their HF names (bf16 as uint16 bits), e.g. to build the
        same model on the C core (glmbench.Model(cfg, state_dict=...)) and compare."""
        return {n: (a.raw() if a.dtype == "bf16" else a.to_numpy()) for n, a in self.w.items()}

    def decode_graph(self, depth: int, token: int = 0) -> Graph:
        """A decode step with `depth` tokens already cached, captured as a CUDA graph. Each replay
        appends the new token at slot `depth` of every layer and attends depth + 1 keys."""
        self.cache.fill_synthetic(depth, seed=depth)
        pos = to_device(np.array([depth], np.int64))
        x = self.embed([token])

        def step():
            for l in range(self.n_layers):
                self.cache.set_length(l, depth)
            return self.forward(x, pos)

        return capture(step)

    def prefill_graph(self, n_tokens: int, depth: int = 0) -> Graph:
        """A prefill of n_tokens on top of `depth` cached tokens, captured as a CUDA graph (so the
        timing holds no host allocation or launch gaps); each replay rewrites the same slots."""
        self.cache.fill_synthetic(depth, seed=depth)
        pos = to_device(np.arange(depth, depth + n_tokens, dtype=np.int64))
        x = self.embed(np.arange(n_tokens) % self.cfg.vocab_size)

        def step():
            for l in range(self.n_layers):
                self.cache.set_length(l, depth)
            return self.forward(x, pos)

        return capture(step)


def _split_cols(src: DeviceArray, a: DeviceArray, b: DeviceArray, da: int, db: int):
    """a = src[:, :da], b = src[:, da:da+db] for src[rows, da+db] (device-side column split)."""
    lib = _lib()
    rows = src.size // (da + db)
    # concat_heads's inverse through paged_gather with a one-page table: rows of width da+db read
    # at column offsets 0 and da.
    t = _single_page_table()
    lib.paged_gather(src.ptr, t.ptr, rows, da + db, 0, a.ptr, da, rows)
    lib.paged_gather(src.ptr, t.ptr, rows, da + db, da, b.ptr, db, rows)

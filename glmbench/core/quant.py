"""Quantized weights: ggml's q8_0 and q4_0 block formats, byte for byte, and the kernels that read
them directly (csrc/quant.c); ggml's K-quants q2_K, q3_K, q4_K, q5_K, q6_K and iq4_xs
(csrc/quant_k.c: no quantizer here, their bytes come from GGUF files), and iq4_nl and mxfp4
(csrc/quant_iq.c; mxfp4 also quantized here, byte for byte as ggml's reference quantizer), kept
as stored with a repacked copy for the decode GEMV made on first use (QTensor.repack). See docs/QUANT.md for
the formats, the kernels, the measured costs and the accuracy bounds.

    qt = quantize(w, "q4_0")            # w float32 [..., K], K % 32 == 0 -> QTensor
    qt.nbytes, qt.shape, qt.fmt         # exact bytes in the ggml layout; logical float shape
    qt.dequantize()                     # float32 [..., K]
    linear(x, qt, bias=None)            # x [T, K] or [K] . W^T -> [T, N] or [N]
    quantize_q8_0(w) / quantize_q4_0(w) # the raw ggml bytes, uint8 [..., K/32 * 34 or 18]

`glmbench.linear`, `glmbench.swiglu` and `glmbench.moe_experts` accept a QTensor in place of a
float weight and come here.
"""
from __future__ import annotations

import numpy as np

from glmbench.core._loader import _core

__all__ = ["QTensor", "quantize", "dequantize", "quantize_q8_0", "quantize_q4_0", "linear", "swiglu",
           "moe_experts", "FORMATS", "K_FORMATS", "KP_FORMATS", "quantize_mxfp4", "kernels", "quantize_chunks", "matrix_format", "gguf_format",
           "nonfinite", "f16_scales_nonfinite", "SCALE_FIELDS"]

# C-core format ids (csrc/common.h) and ggml block sizes (elements, bytes)
FORMATS = {"q8_0": (8, 32, 34), "q4_0": (9, 32, 18),
           # K-quants (csrc/quant_k.h; ids are ggml's type numbers): read as stored, not quantized here
           "q2_K": (10, 256, 84), "q3_K": (11, 256, 110), "q4_K": (12, 256, 144), "q5_K": (13, 256, 176),
           "q6_K": (14, 256, 210), "iq4_xs": (23, 256, 136),
           # 32-value non-linear 4-bit blocks (csrc/quant_iq.h): read as stored; mxfp4 also quantized here
           "iq4_nl": (20, 32, 18), "mxfp4": (39, 32, 17)}
# read as stored by the kquant kernels: super-blocks of 256 (csrc/quant_k.c), iq4_nl/mxfp4 (csrc/quant_iq.c)
K_FORMATS = ("q2_K", "q3_K", "q4_K", "q5_K", "q6_K", "iq4_xs", "iq4_nl", "mxfp4")
# K formats with a repacked layout (csrc/quant_k.h, csrc/quant_iq.h: 16 rows interleaved, scales decoded)
# that the decode GEMV streams; the others are read as stored
KP_FORMATS = ("q2_K", "q3_K", "q4_K", "q5_K", "q6_K", "iq4_xs", "iq4_nl", "mxfp4")
_COMPUTE = {"auto": 0, "f32": 1, "q8": 2}
_VERSIONS = {"auto": 0, "ref_f32": 1, "avx512_f32": 2, "ref_q8": 3, "avx2_q8": 4, "vnni_q8": 5, "blas_f32": 6}
# the integer GEMM on repacked weights (csrc/qgemm.c): portable scalar, AVX-512 VNNI, AVX2
_QGEMM = {"qgemm_ref": 1, "qgemm_vnni": 2, "qgemm_avx2": 3}
# the K-quant GEMV/GEMM (csrc/quant_k.c): portable C, AVX-512 VNNI, AVX2 (repacked K formats)
_KQUANT = {"kquant_ref": 1, "kquant_vnni": 2, "kquant_avx2": 3}


def _fmt_id(fmt: str) -> int:
    if fmt not in FORMATS:
        raise ValueError(f"`fmt` must be one of {', '.join(FORMATS)}, got {fmt!r}")
    return FORMATS[fmt][0]


def row_bytes(fmt: str, k: int) -> int:
    """Exact bytes of a row of k elements (k a multiple of 32)."""
    _fmt_id(fmt)
    _, qk, bb = FORMATS[fmt]
    if k % qk:
        raise ValueError(f"{fmt} stores blocks of {qk}; row length {k} is not a multiple")
    return k // qk * bb


def _shape_arg(shape, name="shape") -> tuple:
    """A tensor's logical shape: a non-empty sequence of ints >= 0 (else one ValueError / TypeError naming it;
    an empty one was an IndexError, a negative one a byte count of -144 or NumPy's "negative dimensions")."""
    try:
        dims = tuple(shape)
    except TypeError:
        raise TypeError(f"`{name}` must be a sequence of ints, got {type(shape).__name__} {shape!r}") from None
    if not dims:
        raise ValueError(f"`{name}` must have at least 1 dimension, got {dims}")
    for d in dims:
        if isinstance(d, (bool, np.bool_)) or not isinstance(d, (int, np.integer)):
            raise TypeError(f"`{name}` must be a sequence of ints, got {dims!r}")
        if d < 0:
            raise ValueError(f"`{name}` must not have negative sizes, got {dims}")
    return tuple(int(d) for d in dims)


def gguf_format(type_name: str):
    """The QTensor format that holds a GGUF tensor of ggml type `type_name` ("Q4_K" -> "q4_K") as
    stored, or None when glmbench has no kernel reading that type (it is dequantized on load)."""
    name = str(type_name).lower().replace("_k", "_K")
    return name if name in FORMATS else None


class QTensor:
    """A float tensor of logical shape [..., K] held as ggml blocks: `data` is uint8 [..., row_bytes].
    Indexing the leading axes (qt[e], qt[a:b]) returns QTensor views (e.g. one expert of [E, F, D])."""

    __slots__ = ("_data", "_packed", "fmt", "shape", "_fused")

    def __init__(self, data: np.ndarray, fmt: str, shape):
        _fmt_id(fmt)
        shape = tuple(int(s) for s in shape)
        if not isinstance(data, np.ndarray) or data.dtype != np.uint8:
            raise TypeError(f"`data` must be a uint8 numpy.ndarray, got {getattr(data, 'dtype', type(data).__name__)}")
        if len(shape) < 1:
            raise ValueError(f"`shape` must have at least 1 dimension, got {shape}")
        want = shape[:-1] + (row_bytes(fmt, shape[-1]),)
        if data.shape != want:
            raise ValueError(f"`data` has shape {data.shape}; a {fmt} tensor of shape {shape} needs {want}")
        self._data, self._packed, self.fmt, self.shape = data, None, fmt, shape
        self._fused = None  # a part: (the stacked QTensor, first row); the stacked one: [its parts]

    @property
    def data(self) -> np.ndarray:
        """The ggml bytes, uint8 [..., row_bytes]. After repack() of q8_0/q4_0 they are rebuilt from the
        packed buffer on each access (a copy; the tensor holds one form at a time); the K formats keep
        the stored bytes beside their packed copy."""
        if self._data is not None:
            return self._data
        if self.fmt in K_FORMATS:  # fuse_rows' stacked matrix: its parts' stored bytes, joined (a copy)
            return np.concatenate([p.data for p in self._fused], axis=0)
        n, k = (self.shape[-2], self.shape[-1]) if self.ndim >= 2 else (1, self.shape[-1])
        out = _core.qunpack(self._packed, _fmt_id(self.fmt), k, n)
        return out.reshape(self.shape[:-1] + (row_bytes(self.fmt, k),))

    @property
    def packed(self):
        """The 16-row interleaved buffer the integer GEMM reads (csrc/qgemm.h; for the K formats
        csrc/quant_k.h's or csrc/quant_iq.h's), uint8 [..., packed_bytes] per matrix, or None before
        repack()."""
        return self._packed

    def repack(self) -> "QTensor":
        """q8_0/q4_0: convert to the packed layout in place, once (the ggml bytes are dropped: same
        memory, plus up to 15 zero rows per matrix); linear() and moe_experts() do this on first use.
        The tensor's values, shape and `data` (rebuilt on access) are unchanged. Returns self.
        The K-quants, iq4_nl and mxfp4 (KP_FORMATS) get a repacked copy beside the stored bytes (16 rows
        interleaved, scales decoded; csrc/quant_k.h, csrc/quant_iq.h): the stored bytes - often a
        memory-mapped GGUF - are only read, never written, and stay what `data` returns; the copy
        costs 1.00-1.04x their size plus padding rows to a multiple of 16."""
        if self.fmt in K_FORMATS:
            if self.fmt in KP_FORMATS and self._packed is None:
                if self.ndim < 2:
                    raise ValueError("a 1-D QTensor is not a matrix and cannot be repacked")
                n, k = self.shape[-2:]
                p = _core.krepack(self._data.reshape(-1, self._data.shape[-1]), _fmt_id(self.fmt), k, n)
                self._packed = p.reshape(self.shape[:-2] + (p.shape[-1],))
            return self
        if self._packed is None:
            if self.ndim < 2:
                raise ValueError("a 1-D QTensor is not a matrix and cannot be repacked")
            self._packed = _core.qrepack(self._data, _fmt_id(self.fmt), self.shape[-1])
            self._data = None
        return self

    @classmethod
    def from_bytes(cls, buf, fmt: str, shape) -> "QTensor":
        """Wrap raw ggml bytes (e.g. a GGUF tensor's data, no copy) as a QTensor of logical `shape`."""
        shape = _shape_arg(shape)
        a = np.frombuffer(buf, dtype=np.uint8) if not isinstance(buf, np.ndarray) else buf.view(np.uint8).reshape(-1)
        rb = row_bytes(fmt, shape[-1])
        n = int(np.prod(shape[:-1], dtype=np.int64)) * rb
        if a.size != n:
            raise ValueError(f"`buf` holds {a.size} bytes; a {fmt} tensor of shape {shape} needs {n}")
        return cls(a.reshape(shape[:-1] + (rb,)), fmt, shape)

    @property
    def ndim(self) -> int:
        return len(self.shape)

    @property
    def nbytes(self) -> int:
        """Bytes of the ggml form (the packed form holds the same plus padding rows)."""
        if self._data is not None:
            return int(self._data.nbytes)
        return int(np.prod(self.shape[:-1], dtype=np.int64)) * row_bytes(self.fmt, self.shape[-1])

    @property
    def bits_per_weight(self) -> float:
        _, qk, bb = FORMATS[self.fmt]
        return 8.0 * bb / qk

    def dequantize(self) -> np.ndarray:
        return dequantize(self)

    def __getitem__(self, idx) -> "QTensor":
        if self.ndim < 2:
            raise IndexError("a 1-D QTensor cannot be indexed (blocks span the last axis)")
        if not isinstance(idx, tuple):
            idx = (idx,)
        if len(idx) > self.ndim - 1 or any(i is Ellipsis or i is None for i in idx):
            raise IndexError("QTensor indexing is limited to the leading axes (ints and slices)")
        if self._data is not None:
            data = self._data[idx]
            out = QTensor(data, self.fmt, data.shape[:-1] + (self.shape[-1],))
            if self._packed is not None and len(idx) <= self.ndim - 2:  # a K format's matrices keep their packed copy
                out._packed = self._packed[idx]
            return out
        if len(idx) > self.ndim - 2:
            if self.ndim == 2 and len(idx) == 1:
                return self._packed_rows(idx[0])
            raise IndexError("a repacked QTensor is indexed over its matrices only (the axes before the last two), "
                             "or over the rows of a 2-D one")
        p = self._packed[idx]
        out = QTensor.__new__(QTensor)
        out._data, out._packed, out.fmt, out._fused = None, p, self.fmt, None
        out.shape = p.shape[:-1] + self.shape[-2:]
        return out

    def _packed_rows(self, idx) -> "QTensor":
        """Rows `idx` (an int, a slice or an integer array) of a repacked 2-D tensor, as ggml bytes:
        only the 16-row groups holding them are unpacked (a tied embedding's lookup after the
        output head, which shares the tensor, repacked it; nothing is copied whole)."""
        n, k = self.shape
        rows = np.arange(n)[idx]
        rb = row_bytes(self.fmt, k)
        gb, fid = 16 * rb, _fmt_id(self.fmt)
        flat = rows.reshape(-1)
        out = np.empty((flat.size, rb), np.uint8)
        groups = flat // 16
        for g in np.unique(groups):
            sel = groups == g
            block = _core.qunpack(self._packed[g * gb:(g + 1) * gb], fid, k, 16)
            out[sel] = block[flat[sel] - 16 * g]
        out = out.reshape(rows.shape + (rb,))
        return QTensor(out, self.fmt, rows.shape + (k,))

    def __len__(self) -> int:
        return self.shape[0]

    def __repr__(self) -> str:
        return f"QTensor({self.fmt}, shape={self.shape}, nbytes={self.nbytes})"


def _as_f32_2d(x, name="x"):
    if not isinstance(x, np.ndarray):
        raise TypeError(f"`{name}` must be a numpy.ndarray, got {type(x).__name__}")
    if x.dtype != np.float32:
        raise TypeError(f"`{name}` must be float32, got {x.dtype}")
    if x.ndim < 1 or x.shape[-1] < 1:
        raise ValueError(f"`{name}` must have at least 1 dimension and a last axis of at least 1, got shape {x.shape}")
    return x.reshape(-1, x.shape[-1])


def quantize(x: np.ndarray, fmt: str = "q8_0") -> QTensor:
    """float32 [..., K] (K % 32 == 0, finite) -> QTensor in ggml's `fmt` layout. The input is not
    modified. ValueError for NaN/inf or a block whose scale overflows float16. The K-quants have no
    quantizer here (NotImplementedError): their bytes come from GGUF files (QTensor.from_bytes)."""
    fid = _fmt_id(fmt)
    if fmt == "mxfp4":
        x2 = _as_f32_2d(x)
        data = quantize_mxfp4(x2)
        return QTensor(data.reshape(x.shape[:-1] + (data.shape[-1],)), fmt, x.shape)
    if fmt in K_FORMATS:
        raise NotImplementedError(f"glmbench has no {fmt} quantizer: {fmt} weights are read as stored from a GGUF "
                                  f"file (QTensor.from_bytes / glmbench.load_model); quantize to q8_0 or q4_0 instead")
    x2 = _as_f32_2d(x)
    data = _core.quantize(x2, fid)
    return QTensor(data.reshape(x.shape[:-1] + (data.shape[-1],)), fmt, x.shape)


def dequantize(qt: QTensor) -> np.ndarray:
    """QTensor -> float32 [..., K]."""
    if not isinstance(qt, QTensor):
        raise TypeError(f"`qt` must be a QTensor, got {type(qt).__name__}")
    k = qt.shape[-1]
    d = qt.data
    if qt.fmt in K_FORMATS:  # bit for bit ggml's dequantize_row_* (csrc/quant_k.c)
        return _core.kdequantize(d.reshape(-1, d.shape[-1]), _fmt_id(qt.fmt), k).reshape(qt.shape)
    y = _core.dequantize(d.reshape(-1, d.shape[-1]), _fmt_id(qt.fmt), k)
    return y.reshape(qt.shape)


# the f16 scale fields of each block format: (name, byte offset in the block), as ggml's block structs lay them out
# (ggml-common.h: block_q8_0 / q4_0 / iq4_nl {d, qs}; q2_K {scales[16], qs[64], d, dmin}; q3_K {hmask[32], qs[64],
# scales[12], d}; q4_K / q5_K {d, dmin, ...}; q6_K {ql[128], qh[64], scales[16], d}; iq4_xs {d, scales_h, ...}).
# Every other field is an integer: a block's values are finite when these are. mxfp4's E8M0 scale is a byte that
# ggml reads as 2^(e - 128), always finite; its values overflow float32 (inf) where e >= 253 meets a large code.
SCALE_FIELDS = {"q8_0": (("d", 0),), "q4_0": (("d", 0),), "iq4_nl": (("d", 0),), "iq4_xs": (("d", 0),),
                "q2_K": (("d", 80), ("dmin", 82)), "q3_K": (("d", 108),), "q4_K": (("d", 0), ("dmin", 2)),
                "q5_K": (("d", 0), ("dmin", 2)), "q6_K": (("d", 208),)}
_CHECK_CHUNK = 1 << 22   # elements (or blocks) per step of nonfinite(): bounds its temporaries to a few MB


def nonfinite(a) -> str | None:
    """Where a weight holds a value that is not finite, in words, or None when every value is finite: the first
    NaN / inf of a float array (float32, float16, float64, or bfloat16 as uint16 bits: "NaN at flat index 7"),
    the first block of a QTensor whose f16 scale is NaN / inf or (mxfp4) whose values overflow float32 ("a NaN f16
    scale d in block 3 (row 0)"; blocks counted over the tensor's rows as stored; rows over its leading axes
    flattened). A KVBSplit's parts are
    checked in turn. Reads the array once, in chunks (vectorised bit tests: ~10-20 GB/s); never modifies it."""
    if not isinstance(a, (np.ndarray, QTensor)) and hasattr(a, "k_b") and hasattr(a, "v_b"):   # attention.KVBSplit
        for name, part in (("k_b", a.k_b), ("v_b", a.v_b)):
            bad = nonfinite(part)
            if bad:
                return f"{name}: {bad}"
        return None
    if isinstance(a, QTensor):
        return _nonfinite_blocks(a)
    a = np.asarray(a)
    if a.dtype.kind != "f" and a.dtype != np.uint16:
        return None
    flat = a.reshape(-1)
    # float16 / bf16 bits: exponent all ones (np.isfinite on float16 runs ~10x slower than this bit test)
    bits = {np.dtype(np.float16): (np.uint16, 0x7C00), np.dtype(np.uint16): (np.uint16, 0x7F80)}.get(a.dtype)
    for s in range(0, flat.size, _CHECK_CHUNK):
        c = flat[s:s + _CHECK_CHUNK]
        if bits is None:                                   # float32 / float64: NumPy's own test
            bad = ~np.isfinite(c)
        else:
            u = c.view(bits[0]) if c.flags.c_contiguous else np.ascontiguousarray(c).view(bits[0])
            bad = (u & bits[0](bits[1])) == bits[0](bits[1])
        if bad.any():
            i = int(np.argmax(bad))
            v = float(_to_float(c[i:i + 1], a.dtype)[0])
            return f"{'NaN' if v != v else 'inf'} at flat index {s + i}"
    return None


def _to_float(c, dtype):
    return (c.astype(np.uint32) << np.uint32(16)).view(np.float32) if dtype == np.uint16 else c.astype(np.float64)


def _nonfinite_blocks(qt: QTensor) -> str | None:
    _, qk, bb = FORMATS[qt.fmt]
    blocks = np.asarray(qt.data).reshape(-1, bb)
    per_row = qt.shape[-1] // qk
    for s in range(0, blocks.shape[0], _CHECK_CHUNK):
        c = blocks[s:s + _CHECK_CHUNK]
        if qt.fmt == "mxfp4":
            big = np.flatnonzero(c[:, 0] >= 253)             # 2^(e-128) x 12 past FLT_MAX from e = 253 on
            if big.size:
                vals = _core.kdequantize(np.ascontiguousarray(c[big]), _fmt_id("mxfp4"), qk)
                hit = ~np.isfinite(vals).all(axis=1)
                if hit.any():
                    b = s + int(big[np.argmax(hit)])
                    return (f"values past float32 (inf) in block {b} (row {b // per_row}), from its E8M0 scale "
                            f"e = {int(blocks[b, 0])}")
            continue
        bad = _f16_scales_nonfinite(c, SCALE_FIELDS[qt.fmt], s, per_row)
        if bad:
            return bad
    return None


def f16_scales_nonfinite(blocks, fields, per_row: int) -> str | None:
    """The first block of `blocks` ([n, block bytes] uint8) whose f16 scale field is NaN / inf, in nonfinite()'s
    words, or None: `fields` ((name, byte offset), ...) as SCALE_FIELDS gives them, `per_row` blocks a row. For the
    block formats nonfinite() reads and those a loader dequantizes (q5_0 / q4_1 / q5_1, their d and m leading)."""
    blocks = np.asarray(blocks)
    for s in range(0, blocks.shape[0], _CHECK_CHUNK):
        bad = _f16_scales_nonfinite(blocks[s:s + _CHECK_CHUNK], fields, s, per_row)
        if bad:
            return bad
    return None


def _f16_scales_nonfinite(c, fields, start: int, per_row: int) -> str | None:
    u = np.stack([np.ascontiguousarray(c[:, off:off + 2]).view(np.uint16)[:, 0] for _, off in fields], axis=1)
    bad = (u & np.uint16(0x7C00)) == np.uint16(0x7C00)     # [blocks, fields]
    if not bad.any():
        return None
    i, j = divmod(int(np.argmax(bad.reshape(-1))), len(fields))   # the first block, then its first field
    b = start + i
    what = "a NaN" if int(u[i, j]) & 0x3FF else "an inf"
    return f"{what} f16 scale {fields[j][0]} in block {b} (row {b // per_row})"


_MXFP4_KVALUES = np.array([0, 1, 2, 3, 4, 6, 8, 12, 0, -1, -2, -3, -4, -6, -8, -12], np.float32)


def quantize_mxfp4(x: np.ndarray) -> np.ndarray:
    """float32 [R, K] (K % 32 == 0, finite) -> ggml mxfp4 bytes uint8 [R, K/32*17], ggml's reference
    quantizer (quantize_row_mxfp4_ref, as the gguf package's MXFP4.quantize_blocks): per 32 values
    e = floor(log2(amax)) - 2 + 127 (0 for an all-zero block), d = 2^(e-128) (E8M0, halved as ggml
    stores it), each value the nearest d * kvalues_mxfp4 (the first on ties). Blocks whose amax is
    below 2^-125 (e would be negative, which ggml's uint8 cast wraps) get e = 0."""
    x = np.asarray(x, dtype=np.float32)
    if x.ndim < 1:
        raise ValueError(f"`x` must have at least 1 dimension [..., K], got shape {x.shape}")
    k = x.shape[-1]
    if k % 32:
        raise ValueError(f"mxfp4 stores blocks of 32; row length {k} is not a multiple")
    bad = ~np.isfinite(x)
    if bad.any():
        i = int(np.flatnonzero(bad.reshape(-1))[0])
        raise ValueError(f"`x` contains {'NaN' if np.isnan(x.reshape(-1)[i]) else 'inf'} at flat index {i}")
    b = x.reshape(-1, 32)
    amax = np.abs(b).max(axis=-1, keepdims=True)
    with np.errstate(divide="ignore"):
        e = np.where(amax > 0, np.floor(np.log2(amax)) - 2 + 127, 0)
    e = np.clip(e, 0, 255).astype(np.uint8)
    bits = np.where(e < 2, np.uint32(0x00200000) << e.astype(np.uint32), (e.astype(np.uint32) - 1) << np.uint32(23))
    d = bits.astype(np.uint32).view(np.float32)
    errs = np.abs(d[:, :, None] * _MXFP4_KVALUES[None, None, :] - b[:, :, None])
    q = np.argmin(errs, axis=-1).astype(np.uint8)
    qs = q[:, :16] | (q[:, 16:] << np.uint8(4))
    return np.concatenate([e, qs], axis=-1).reshape(x.shape[:-1] + (k // 32 * 17,))


def quantize_q8_0(x: np.ndarray) -> np.ndarray:
    """float32 [..., K] -> the raw ggml q8_0 bytes, uint8 [..., K/32*34]."""
    return quantize(x, "q8_0").data


def quantize_q4_0(x: np.ndarray) -> np.ndarray:
    """float32 [..., K] -> the raw ggml q4_0 bytes, uint8 [..., K/32*18]."""
    return quantize(x, "q4_0").data


def kernels() -> dict:
    """{kernel version name: compiled in on this build} (csrc/quant.h and csrc/qgemm.h list what
    each does)."""
    return {**dict(_core.qversions()), **dict(_core.qgemm_versions()), **dict(_core.kversions())}


def linear(x: np.ndarray, weight: QTensor, bias=None, *, compute: str = "auto", kernel: str = "auto") -> np.ndarray:
    """y = x . W^T (+ bias) with W a 2-D QTensor [N, K], read in its block format.

    compute="auto" (and "q8"): x quantized to q8_0 per row, integer block dots on the weight
    repacked once into 16-row interleaved blocks (csrc/qgemm.c; AVX-512 VNNI here, the weight is
    repacked in place on first use). "f32": float32 activations against weights decoded in
    registers (T < 16) or dequantized panels and OpenBLAS sgemm (T >= 16).
    `kernel` forces a numbered version (see kernels()); for tests and benchmarks.

    q2_K..q6_K and iq4_xs weights (csrc/quant_k.c): x quantized to q8_K per row, integer super-block dots
    (kernels kquant_vnni / kquant_avx2 / kquant_ref, bit-identical) on the weight repacked once on first use
    (KP_FORMATS, see QTensor.repack; the same numbers as on the bytes as stored); compute="f32"
    dequantizes W to float32 and calls the C core's float linear.
    """
    if not isinstance(weight, QTensor):
        raise TypeError(f"`weight` must be a QTensor, got {type(weight).__name__}")
    if weight.ndim != 2:
        raise ValueError(f"`weight` must be 2-D [N, K], got shape {weight.shape}")
    if compute not in _COMPUTE:
        raise ValueError(f"`compute` must be one of {', '.join(_COMPUTE)}, got {compute!r}")
    if kernel not in _VERSIONS and kernel not in _QGEMM and kernel not in _KQUANT:
        raise ValueError(f"`kernel` must be one of {', '.join([*_VERSIONS, *_QGEMM, *_KQUANT])}, got {kernel!r}")
    x2 = _as_f32_2d(x)
    n, k = weight.shape
    if x2.shape[1] != k:
        raise ValueError(f"`x` has shape {x.shape}: its last axis must be {k} to match the weight's in_features")
    if weight.fmt in K_FORMATS:
        if kernel != "auto" and kernel not in _KQUANT:
            raise ValueError(f"kernel {kernel!r} does not read {weight.fmt}; use one of {', '.join(_KQUANT)}")
        if compute == "f32":
            if kernel != "auto":
                raise ValueError(f"kernel {kernel!r} computes with q8_K activations; compute='f32' cannot use it")
            y = _core.linear(x2, weight.dequantize(), bias)
        elif weight.fmt in KP_FORMATS:  # repacked once on first use (the stored bytes are kept)
            weight.repack()
            y = _core.klinear_packed(x2, weight.packed.reshape(-1), _fmt_id(weight.fmt), n, k, bias, _KQUANT.get(kernel, 0))
        else:
            y = _core.klinear(x2, weight.data, _fmt_id(weight.fmt), k, bias, _KQUANT.get(kernel, 0))
        return y.reshape(x.shape[:-1] + (n,))
    if kernel in _KQUANT:
        raise ValueError(f"kernel {kernel!r} reads K-quant weights; this weight is {weight.fmt}")
    if kernel in _QGEMM or (kernel == "auto" and compute != "f32"):
        if compute == "f32":
            raise ValueError(f"kernel {kernel!r} computes with q8_0 activations; compute='f32' cannot use it")
        weight.repack()
        y = _core.qgemm(x2, weight.packed, _fmt_id(weight.fmt), n, k, bias, _QGEMM.get(kernel, 0))
    else:
        y = _core.qlinear(x2, weight.data, _fmt_id(weight.fmt), k, bias, _COMPUTE[compute], _VERSIONS[kernel])
    return y.reshape(x.shape[:-1] + (n,))


def _aligned_u8(n: int) -> np.ndarray:
    """An uninitialized uint8[n] starting on a 64-byte line (as the repack bindings allocate: the
    decode kernels load the packed records a line at a time)."""
    b = np.empty(n + 64, np.uint8)
    o = -b.ctypes.data % 64
    return b[o:o + n]


def fuse_rows(*ws) -> QTensor | None:
    """Stack 2-D QTensors that share one input (e.g. gate_proj and up_proj, q_a_proj and
    kv_a_proj_with_mqa) into one matrix read by one call: one quantization of x, one parallel region
    and one stream over all their rows. Each part's repacked buffer becomes a view into the stacked
    one (no memory is added; the parts keep working alone). The packed layouts (csrc/qgemm.h,
    csrc/quant_k.h) store 16-row groups one after another, so the stacked buffer is the parts' buffers
    end to end when every part has whole groups. Rows are computed independently, so
    linear_pair's outputs equal the separate calls' bit for bit.
    Returns the stacked QTensor, or None (nothing changed) where the parts cannot be stacked:
    not all 2-D QTensors of one repackable format (q8_0, q4_0, KP_FORMATS) and one K, a row
    count not a multiple of 16, or a part already stacked."""
    if len(ws) < 2 or not all(isinstance(w, QTensor) and w.ndim == 2 for w in ws):
        return None
    fmt, k = ws[0].fmt, ws[0].shape[1]
    if (fmt not in ("q8_0", "q4_0") + KP_FORMATS or any(w.fmt != fmt or w.shape[1] != k for w in ws)
            or any(w.shape[0] % 16 or getattr(w, "_fused", None) is not None for w in ws)):
        return None
    for w in ws:
        w.repack()
    flat = [w.packed.reshape(-1) for w in ws]
    buf = np.concatenate(flat, out=_aligned_u8(sum(f.size for f in flat)))
    fused = QTensor.__new__(QTensor)
    fused._data, fused._packed, fused.fmt, fused._fused = None, buf, fmt, list(ws)
    fused.shape = (sum(w.shape[0] for w in ws), k)
    off = row = 0
    for w, f in zip(ws, flat):
        w._packed = buf[off:off + f.size].reshape(w.packed.shape)
        w._fused = (fused, row)
        off, row = off + f.size, row + w.shape[0]
    return fused


def stacked(a, b) -> QTensor | None:
    """The QTensor fuse_rows made of exactly a then b, or None."""
    fa, fb = getattr(a, "_fused", None), getattr(b, "_fused", None)
    if fa is None or fb is None or fa[0] is not fb[0] or fa[1] != 0 or fb[1] != a.shape[0]:
        return None
    f = fa[0]
    return f if f.shape[0] == a.shape[0] + b.shape[0] else None


PAIR_MAX_T = 16  # linear_pair stacks decode-sized calls only (see there)


def linear_pair(x, a, b, bias_a=None, bias_b=None, **kw):
    """(linear(x, a), linear(x, b)): one call on their stacked matrix where fuse_rows made one (no
    bias, default compute, at most PAIR_MAX_T rows of x), else two calls. The same numbers either
    way. A prefill keeps the two calls: it gains nothing measurable from one, and the stacked output
    ([T, 2F] floats, 42 MB for GLM-4.7-Flash's gate + up at T = 512) would pass glibc's 32 MiB mmap
    ceiling and fault in fresh pages on every call (ops.keep_heap)."""
    rows = int(np.prod(np.shape(x)[:-1], dtype=np.int64)) if np.ndim(x) > 1 else 1
    f = stacked(a, b) if bias_a is None and bias_b is None and not kw and rows <= PAIR_MAX_T else None
    if f is None:
        return _any_linear(x, a, bias=bias_a, **kw), _any_linear(x, b, bias=bias_b, **kw)
    y = linear(x, f)
    n = a.shape[0]
    return y[..., :n], y[..., n:]


def quantize_chunks(chunks, shape, fmt: str) -> QTensor:
    """Quantize a float32 tensor of `shape` handed over as flat chunks (any sizes, in order) without
    ever holding it whole in float32: how huge random weights are generated straight into blocks
    (glmbench.models.model.random_weight). Rows are quantized as soon as they are complete."""
    fid = _fmt_id(fmt)
    if fmt in K_FORMATS and fmt != "mxfp4":
        raise NotImplementedError(f"glmbench has no {fmt} quantizer: {fmt} weights are read as stored from a GGUF file")
    shape = _shape_arg(shape)
    k = shape[-1]
    rows = int(np.prod(shape[:-1], dtype=np.int64))
    data = np.empty((rows, row_bytes(fmt, k)), np.uint8)
    r, carry = 0, np.empty(0, np.float32)
    for c in chunks:
        c = np.asarray(c, dtype=np.float32).reshape(-1)
        if carry.size:
            c = np.concatenate([carry, c])
        n = c.size // k
        if r + n > rows:
            raise ValueError(f"`chunks` hold more than the {rows * k} elements of shape {shape}")
        if n:
            rows_f = c[:n * k].reshape(n, k)
            data[r:r + n] = quantize_mxfp4(rows_f) if fmt == "mxfp4" else _core.quantize(rows_f, fid)
            r += n
        carry = c[n * k:].copy()
    if r != rows or carry.size:
        raise ValueError(f"`chunks` hold {r * k + carry.size} elements; shape {shape} needs {rows * k}")
    return QTensor(data.reshape(shape[:-1] + (data.shape[1],)), fmt, shape)


# Matrices that stay 16-bit in a quantized model (none: kv_b_proj, which the MLA kernels read as a
# dense float32 matrix, is quantized like llama.cpp does and glmbench.core.attention decodes it once).
KEEP_FLOAT = ()


def matrix_format(name: str, fmt: str, shape=None) -> str:
    """The storage format of matrix `name` (of `shape`) in a model whose weight format is `fmt`:
    `fmt`, except names in KEEP_FLOAT (bf16) and rows that are not whole blocks of 32 (f16, as
    formats.row_format falls back for q8_0/q4_0)."""
    if fmt in FORMATS:
        if KEEP_FLOAT and name.endswith(KEEP_FLOAT):
            return "bf16"
        if shape is not None and shape[-1] % FORMATS[fmt][1]:
            return "f16"
    return fmt


def _any_linear(x, w, bias=None, **kw):
    if isinstance(w, QTensor):
        return linear(x, w, bias, **kw)
    # float weights (f32/f16/bf16): the C core's linear directly (ops.linear dispatches here for
    # QTensor weights, so this module does not import ops)
    x = np.asarray(x, dtype=np.float32)
    return _core.linear(x[None, :], w, bias)[0] if x.ndim == 1 else _core.linear(x, w, bias)


# The most bytes one [rows, F] float32 activation of a SwiGLU may take: glibc's largest mmap
# threshold (ops.keep_heap), below which freed blocks stay on the heap for the next call. A larger
# one is mapped fresh every call, and on a host whose transparent huge pages are "madvise" (NumPy
# madvises large arrays) its first touch can stall in direct compaction: measured 0.05-1.07 s of
# system time per Qwen3-32B-shaped pp512 (F = 25600: [512, 25600] = 52 MB) in identical calls.
SWIGLU_CHUNK_BYTES = 32 << 20
SWIGLU_CHUNK_ALIGN = 16    # rows per chunk a multiple of the GEMM tiles' token groups


def mlp_shapes(x, w_gate, w_up, w_down) -> None:
    """A gated MLP's weights against each other and x (gate, up [F, D], down [D, F]; each a float array or
    QTensor), so a wrong one is named (not the inner calls' `weight` / `g` and `u`)."""
    shapes = [tuple(getattr(w, "shape", ())) for w in (w_gate, w_up, w_down)]
    D = np.shape(x)[-1] if np.ndim(x) else None
    if len(shapes[0]) != 2:
        raise ValueError(f"`w_gate` must be 2-D [F, D], got shape {shapes[0]}")
    F = shapes[0][0]
    for name, got, want in (("w_gate", shapes[0], (F, D)), ("w_up", shapes[1], (F, D)), ("w_down", shapes[2], (D, F))):
        if got != want:
            raise ValueError(f"`{name}` has shape {got}; x [..., {D}] and w_gate [{F}, {shapes[0][1]}] need {want}")


def down_proj(h, w_down, what, **kw) -> np.ndarray:
    """An MLP's down projection of its activation h: where h is not finite, one ValueError saying so (the
    linear's own check would blame its `x`, which the caller never passed, for NaN/inf weights or an overflow).
    h is scanned only after such a refusal, so a valid call costs nothing more."""
    try:
        return _any_linear(h, w_down, **kw)
    except ValueError:
        if np.isfinite(h).all():
            raise
        raise ValueError(f"{what} is not finite (NaN/inf in the gate or up weights, or an overflow)") from None


def swiglu(x, w_gate, w_up, w_down, **kw) -> np.ndarray:
    """down(silu(gate x) * up x) where any of the weights may be a QTensor (SiLU and the product
    in float32). x [T, D] or [D]. A prefill whose [T, F] activations would pass SWIGLU_CHUNK_BYTES
    runs in chunks of rows (each row's numbers are the same: every kernel here computes a token's
    row on its own), so its activations reuse the heap's kept blocks."""
    mlp_shapes(x, w_gate, w_up, w_down)
    F = int(w_gate.shape[0])
    if isinstance(x, np.ndarray) and x.ndim == 2 and x.shape[0] * F * 4 > SWIGLU_CHUNK_BYTES:
        rows = max(SWIGLU_CHUNK_ALIGN, SWIGLU_CHUNK_BYTES // (F * 4) // SWIGLU_CHUNK_ALIGN * SWIGLU_CHUNK_ALIGN)
        if rows < x.shape[0]:
            parts = [_swiglu_rows(x[i:i + rows], w_gate, w_up, w_down, **kw) for i in range(0, x.shape[0], rows)]
            return np.concatenate(parts, axis=0)
    return _swiglu_rows(x, w_gate, w_up, w_down, **kw)


def _swiglu_rows(x, w_gate, w_up, w_down, **kw) -> np.ndarray:
    g, u = linear_pair(x, w_gate, w_up, **kw)   # one call where fuse_rows stacked them
    # silu(g) * u in place, in C (csrc/linear.c gb_silu_act: the activation the C core's own swiglu
    # runs, vectorised, OpenMP): NumPy's five passes over a prefill's [T, F] ran on one thread,
    # ~9 ms of a GLM-4.7-Flash pp512 that no second thread could share
    h = np.ascontiguousarray(g, dtype=np.float32)
    if h is g and not h.flags.writeable:
        h = h.copy()
    _core.silu_act(h, np.asarray(u, dtype=np.float32))
    return down_proj(h, w_down, "swiglu: silu(gate x) * up x", **kw)


def moe_experts(x, topk_idx, topk_weight, w_gate: QTensor, w_up: QTensor, w_down: QTensor, **kw):
    """Routed experts with quantized weights [E, F, D] / [E, D, F]: the tokens routed to each expert
    are gathered and run as one quantized SwiGLU, so each chosen expert's weights are read once per
    call. Returns (y [T, D] float32, counts [E] int64), as glmbench.moe_experts."""
    for name, w in (("w_gate", w_gate), ("w_up", w_up), ("w_down", w_down)):
        if not isinstance(w, (QTensor, np.ndarray)) or w.ndim != 3:
            raise TypeError(f"`{name}` must be a 3-D QTensor or array [E, ., .], got {type(w).__name__}")
    x2 = _as_f32_2d(x)
    T, D = x2.shape
    E, F, D2 = w_gate.shape
    if D2 != D or w_up.shape != (E, F, D) or w_down.shape != (E, D, F):
        raise ValueError(f"expert shapes do not match: x {x.shape}, w_gate {w_gate.shape}, w_up {w_up.shape}, "
                         f"w_down {w_down.shape} (want [E, F, D], [E, F, D], [E, D, F])")
    idx = np.asarray(topk_idx)
    wts = np.asarray(topk_weight)
    if idx.shape != wts.shape or idx.ndim != 2 or idx.shape[0] != T:
        raise ValueError(f"`topk_idx` {idx.shape} and `topk_weight` {wts.shape} must both be [T={T}, k]")
    if idx.dtype.kind not in "iu":
        raise TypeError(f"`topk_idx` must be an integer array, got {idx.dtype}")
    if idx.size and (idx.min() < 0 or idx.max() >= E):
        raise ValueError(f"`topk_idx` must be in [0, {E}), got values in [{idx.min()}, {idx.max()}]")
    if wts.dtype.kind not in "fiu" or wts.dtype == np.bool_:
        raise TypeError(f"`topk_weight` must be a float array, got {wts.dtype}")
    finite = np.isfinite(wts)
    if not finite.all():   # (the C calls check too; the per-expert loop below would spread it into y)
        i = int(np.flatnonzero(~finite.reshape(-1))[0])
        raise ValueError(f"`topk_weight` contains {'NaN' if np.isnan(wts.reshape(-1)[i]) else 'inf'} at flat index {i}")
    ws = (w_gate, w_up, w_down)
    compute, kernel = kw.get("compute", "auto"), kw.get("kernel", "auto")
    if (all(isinstance(w, QTensor) for w in ws) and len({w.fmt for w in ws}) == 1 and compute in ("auto", "q8")
            and w_gate.fmt not in K_FORMATS
            and (kernel == "auto" or kernel in _QGEMM)):
        # one C call (csrc/qgemm.c gb_qmoe): tokens grouped per expert, integer GEMMs on the
        # repacked experts, no Python per expert
        for w in ws:
            w.repack()
        fid = _fmt_id(w_gate.fmt)
        y, counts = _core.qmoe(x2, idx.astype(np.int64, copy=False), wts.astype(np.float32, copy=False),
                               w_gate.packed.reshape(E, -1), w_up.packed.reshape(E, -1), w_down.packed.reshape(E, -1),
                               fid, F, _QGEMM.get(kernel, 0))
        return y.reshape(x.shape[:-1] + (D,)), counts
    if (all(isinstance(w, QTensor) and w.fmt in K_FORMATS for w in ws) and compute in ("auto", "q8")
            and (kernel == "auto" or kernel in _KQUANT)):
        # one C call (csrc/moe_k.c gb_kmoe): tokens grouped per expert, each expert's gate/up/down
        # as K-quant/iq4_nl/mxfp4 GEMMs, no Python per expert; on the repacked experts (KP_FORMATS)
        # decode batches of K formats split over experts x row groups in one parallel region
        if all(w.fmt in KP_FORMATS for w in ws):
            for w in ws:
                w.repack()
            y, counts = _core.kmoe(x2, idx.astype(np.int64, copy=False), wts.astype(np.float32, copy=False),
                                   w_gate.packed.reshape(E, -1), w_up.packed.reshape(E, -1), w_down.packed.reshape(E, -1),
                                   _fmt_id(w_gate.fmt), _fmt_id(w_up.fmt), _fmt_id(w_down.fmt), F, _KQUANT.get(kernel, 0), True)
            return y.reshape(x.shape[:-1] + (D,)), counts
        y, counts = _core.kmoe(x2, idx.astype(np.int64, copy=False), wts.astype(np.float32, copy=False),
                               w_gate.data.reshape(E, -1), w_up.data.reshape(E, -1), w_down.data.reshape(E, -1),
                               _fmt_id(w_gate.fmt), _fmt_id(w_up.fmt), _fmt_id(w_down.fmt), F, _KQUANT.get(kernel, 0))
        return y.reshape(x.shape[:-1] + (D,)), counts
    y = np.zeros((T, D), np.float32)
    counts = np.bincount(idx.reshape(-1), minlength=E).astype(np.int64)
    for e in np.flatnonzero(counts):
        rows, slot = np.nonzero(idx == e)
        h = swiglu(np.ascontiguousarray(x2[rows]), w_gate[e], w_up[e], w_down[e], **kw)
        np.add.at(y, rows, h * wts[rows, slot, None].astype(np.float32))
    return y.reshape(x.shape[:-1] + (D,)), counts

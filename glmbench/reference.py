"""float64 NumPy reference of every op: the first oracle. Written for clarity, not speed; each
function mirrors one C-core op in glmbench.ops and takes/returns the same shapes.

Sections are owned by op family (norm, rope, linear, swiglu, moe, gqa, mla, kvcache, quant);
keep each op's reference next to its siblings.
"""
from __future__ import annotations

import numpy as np


def _f64(a):
    return np.asarray(a, dtype=np.float64)


# ---- norm ---------------------------------------------------------------------------------
def rms_norm(x, weight, eps=1e-6):
    x = _f64(x)
    return x / np.sqrt(np.mean(x * x, axis=-1, keepdims=True) + eps) * _f64(weight)


def weight_f64(w):
    """A weight array as float64: float32/float16 directly, uint16 as bfloat16 bits."""
    w = np.asarray(w)
    if w.dtype == np.uint16:
        return (w.astype(np.uint32) << 16).view(np.float32).astype(np.float64)
    return w.astype(np.float64)


def to_bf16(a):
    """float32 -> bfloat16 bits (uint16), round to nearest even (as torch); NaN stays NaN."""
    u = np.ascontiguousarray(a, dtype=np.float32).view(np.uint32)
    r = ((u + np.uint32(0x7FFF) + ((u >> 16) & np.uint32(1))) >> 16).astype(np.uint16)
    nan = np.isnan(np.asarray(a, dtype=np.float32))
    return np.where(nan, (u >> 16).astype(np.uint16) | np.uint16(0x40), r)


# ---- rope ---------------------------------------------------------------------------------
def rope(x, positions, *, theta, rot_dim, rot_offset=0, layout="interleaved"):
    x = _f64(x)
    y = x.copy()
    half = rot_dim // 2
    inv = theta ** (-2.0 * np.arange(half) / rot_dim)
    ang = np.asarray(positions, dtype=np.float64)[:, None] * inv[None, :]  # [T, half]
    c, s = np.cos(ang)[:, None, :], np.sin(ang)[:, None, :]
    seg = x[..., rot_offset:rot_offset + rot_dim]
    if layout == "interleaved":
        a, b = seg[..., 0::2], seg[..., 1::2]
        out = np.empty_like(seg)
        out[..., 0::2] = a * c - b * s
        out[..., 1::2] = b * c + a * s
    elif layout == "half":
        a, b = seg[..., :half], seg[..., half:]
        out = np.concatenate([a * c - b * s, b * c + a * s], axis=-1)
    else:
        raise ValueError(f"`layout` must be 'interleaved' or 'half', got {layout!r}")
    y[..., rot_offset:rot_offset + rot_dim] = out
    return y


# ---- linear -------------------------------------------------------------------------------
def linear(x, weight, bias=None):
    y = _f64(x) @ weight_f64(weight).T
    return y if bias is None else y + _f64(bias)


# ---- swiglu -------------------------------------------------------------------------------
def silu(g):
    return g / (1.0 + np.exp(-g))


def swiglu(x, w_gate, w_up, w_down):
    return linear(silu(linear(x, w_gate)) * linear(x, w_up), w_down)


# ---- quant --------------------------------------------------------------------------------
# ggml's reference quantizers (ggml-quants.c quantize_row_q8_0_ref / quantize_row_q4_0_ref),
# reimplemented from their definition. The ENCODING is defined by float32 arithmetic (the scale
# d = amax/127 or max/-8, its reciprocal, x * (1/d), and the + 8.5 of q4_0 are each one float32
# rounding), so it is reproduced with float32 NumPy ops, one operation at a time, to get the same
# bytes; everything after the bytes (dequantization, matmuls, error bounds) is float64.
QK = 32


def _blocks(x):
    x = np.asarray(x, dtype=np.float32)
    if x.shape[-1] % QK:
        raise ValueError(f"last axis must be a multiple of {QK}, got {x.shape[-1]}")
    return x.reshape(-1, x.shape[-1] // QK, QK)


def _roundf(v):
    """C roundf on float32: half away from zero (np.round would round half to even)."""
    t = np.trunc(v)
    return t + np.where(np.abs(v - t) >= np.float32(0.5), np.sign(v), np.float32(0)).astype(np.float32)


def quantize_q8_0(x):
    """float32 [..., K] -> uint8 [..., K/32*34]: per block f16 d = amax/127, then 32 x int8 roundf(x/d)."""
    xb = _blocks(x)
    amax = np.abs(xb).max(axis=-1)
    d = (amax / np.float32(127)).astype(np.float32)
    with np.errstate(divide="ignore"):
        idv = np.where(d != 0, np.float32(1) / d, np.float32(0)).astype(np.float32)
    q = _roundf((xb * idv[..., None]).astype(np.float32)).astype(np.int8)
    out = np.concatenate([d.astype(np.float16)[..., None].view(np.uint8), q.view(np.uint8)], axis=-1)
    return out.reshape(np.shape(x)[:-1] + (-1,))


def quantize_q4_0(x):
    """float32 [..., K] -> uint8 [..., K/32*18]: per block f16 d = max/-8 (max: the signed value of
    largest magnitude, first on ties), q = min(15, trunc(x/d + 8.5)); element j in the low nibble of
    byte j, element j+16 in its high nibble."""
    xb = _blocks(x)
    first = np.abs(xb).argmax(axis=-1)
    mx = np.take_along_axis(xb, first[..., None], axis=-1)[..., 0]
    d = (mx / np.float32(-8)).astype(np.float32)
    with np.errstate(divide="ignore"):
        idv = np.where(d != 0, np.float32(1) / d, np.float32(0)).astype(np.float32)
    v = ((xb * idv[..., None]).astype(np.float32) + np.float32(8.5)).astype(np.float32)
    q = np.clip(np.trunc(v), 0, 15).astype(np.uint8)
    nib = q[..., :QK // 2] | (q[..., QK // 2:] << 4)
    out = np.concatenate([d.astype(np.float16)[..., None].view(np.uint8), nib], axis=-1)
    return out.reshape(np.shape(x)[:-1] + (-1,))


def block_scales(q, fmt):
    """The float16 block scales d of raw q8_0/q4_0 bytes [..., nbytes] -> float64 [..., nblocks]."""
    bb = {"q8_0": 34, "q4_0": 18}[fmt]
    qb = np.ascontiguousarray(q).reshape(q.shape[:-1] + (-1, bb))
    return qb[..., :2].copy().view(np.float16)[..., 0].astype(np.float64)


def dequantize(q, fmt):
    """Raw q8_0/q4_0 bytes [..., nbytes] -> float64 [..., K]."""
    bb = {"q8_0": 34, "q4_0": 18}[fmt]
    q = np.ascontiguousarray(q, dtype=np.uint8)
    qb = q.reshape(q.shape[:-1] + (-1, bb))
    d = block_scales(q, fmt)[..., None]
    if fmt == "q8_0":
        vals = qb[..., 2:].view(np.int8).astype(np.float64)
    else:
        nib = qb[..., 2:]
        vals = np.concatenate([(nib & 0x0F), (nib >> 4)], axis=-1).astype(np.float64) - 8.0
    return (d * vals).reshape(q.shape[:-1] + (-1,))


def qlinear(x, q, fmt, bias=None):
    """x [T, K] . dequantize(q)^T (+ bias) in float64: what a quantized linear should compute."""
    y = _f64(x) @ dequantize(q, fmt).T
    return y if bias is None else y + _f64(bias)


def qlinear_q8_activations(x, q, fmt, bias=None):
    """The same with x first quantized to q8_0 per row (ggml's CPU path): the oracle of the
    integer-dot kernels, whose only other error is float32 summation. ggml keeps the activation
    scale in float16, so it is rounded to float16 here too (dequantize reads it as such)."""
    xq = dequantize(quantize_q8_0(np.asarray(x, np.float32)), "q8_0")
    return qlinear(xq, q, fmt, bias)

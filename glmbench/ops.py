"""Typed wrappers over glmbench._core: each documents shapes and dtypes and allocates outputs.
Inputs are never modified. float32 activations; weights float32, float16 or bfloat16 (uint16).

Families (one section each, in the same order as csrc/): norm, rope, linear, swiglu, moe,
attention (GQA, MLA), KV cache, quant.
"""
from __future__ import annotations

import numpy as np

from . import quant as _quant
from ._loader import _core

__all__ = ["rms_norm"]


# ---- norm ---------------------------------------------------------------------------------
def rms_norm(x: np.ndarray, weight: np.ndarray, eps: float = 1e-6) -> np.ndarray:
    """RMSNorm over the last axis. x: [..., D] float32, weight: [D] float32 -> same shape."""
    x = np.asarray(x) if not isinstance(x, np.ndarray) else x
    shape = x.shape
    if x.ndim < 1:
        raise ValueError(f"`x` must have at least 1 dimension, got shape {shape}")
    y = _core.rms_norm(x.reshape(-1, shape[-1]) if x.ndim != 2 else x, weight, float(eps))
    return y.reshape(shape)


# ---- rope ---------------------------------------------------------------------------------
__all__ += ["rope"]

_ROPE_LAYOUTS = {"interleaved": 0, "half": 1}


def rope(x: np.ndarray, positions: np.ndarray, *, theta: float, rot_dim: int, rot_offset: int = 0,
         layout: str = "interleaved") -> np.ndarray:
    """Rotary embedding of x[T, H, Dh] float32 at positions[T] int64; returns a new [T, H, Dh].

    Rotates x[..., rot_offset:rot_offset+rot_dim] (partial rope); the rest is copied unchanged.
    Pair i (0 <= i < rot_dim/2) turns by the angle positions[t] * theta**(-2i/rot_dim); the angle,
    cos and sin are computed in float64, the rotation in float32.

    layout="interleaved": pair i is (x[2i], x[2i+1]) and the output keeps that order. This is
        DeepSeek-V2's original `apply_rotary_emb` (view_as_complex) and llama.cpp's deepseek2 rope.
        HF transformers' glm4_moe_lite / deepseek_v3 with `rope_interleave=True` (the default;
        `apply_rotary_pos_emb_interleave`, checked in transformers 5.24) rotates the same pairs by
        the same angles but writes the result DE-INTERLEAVED: HF's rope slice equals
        ``ours[..., 0::2]`` followed by ``ours[..., 1::2]``, i.e.
        ``hf = np.concatenate([y[..., off:off+r:2], y[..., off+1:off+r:2]], -1)``.
        Because HF permutes q_rope and k_rope the same way, q.k (and so attention) is identical;
        only the stored/raw rope vectors differ by that permutation. HF also computes its cos/sin
        in float32, so at large positions (e.g. 1e5) its angles differ from ours by ~1e-2 rad.
    layout="half": pair i is (x[i], x[i + rot_dim/2]) -- HF `rotate_half` (Llama, Qwen3), equal to
        HF's output in place (no permutation).
    """
    if layout not in _ROPE_LAYOUTS:
        raise ValueError(f"`layout` must be 'interleaved' or 'half', got {layout!r}")
    return _core.rope(x, positions, float(theta), int(rot_dim), int(rot_offset), _ROPE_LAYOUTS[layout])


# ---- linear ------------------------------------------------------------------------------
__all__ += ["linear"]


def linear(x: np.ndarray, weight, bias: np.ndarray | None = None) -> np.ndarray:
    """y = x @ weight.T (+ bias). x: [T, K] or [K] float32; weight: [N, K] (HF layout) float32,
    float16, or bfloat16 bits as uint16; bias: [N] float32 or None -> [T, N] or [N] float32.

    float32 weights go to OpenBLAS (sgemv / sgemm). 16-bit weights: T <= 8 uses the hand-written
    GEMV (weights read once, converted in registers; decode is bandwidth-bound); T > 8 converts
    ~8 MiB panels of rows to float32 and calls sgemm. Accumulation is float32.
    x may be strided (copied). A strided weight is accepted but copied on every call (a full
    extra read and write of the matrix): pass contiguous weights. NaN/inf in x -> ValueError.
    """
    # Dispatch on the weight's type; other weight kinds (e.g. quantized tensors) add a branch here.
    if isinstance(weight, np.ndarray):
        if not isinstance(x, np.ndarray):
            raise TypeError(f"`x` must be a numpy.ndarray, got {type(x).__name__}")
        if x.ndim == 1:
            return _core.linear(x[None, :], weight, bias)[0]
        return _core.linear(x, weight, bias)
    if isinstance(weight, _quant.QTensor):  # ggml q8_0/q4_0 blocks: glmbench/quant.py
        return _quant.linear(x, weight, bias)
    raise TypeError(f"`weight` must be a numpy.ndarray (float32, float16 or uint16 bf16) or a quant.QTensor, "
                    f"got {type(weight).__name__}")


# ---- swiglu ------------------------------------------------------------------------------
__all__ += ["swiglu"]


def swiglu(x: np.ndarray, w_gate: np.ndarray, w_up: np.ndarray, w_down: np.ndarray) -> np.ndarray:
    """down(silu(gate x) * up x). x: [T, D] (or [D]) float32; w_gate, w_up: [F, D]; w_down: [D, F]
    (each float32, float16 or uint16 bf16) -> [T, D] (or [D]) float32. For one token with gate
    and up in the same format, gate and up are computed in one fused pass."""
    if not isinstance(x, np.ndarray):
        raise TypeError(f"`x` must be a numpy.ndarray, got {type(x).__name__}")
    if any(isinstance(w, _quant.QTensor) for w in (w_gate, w_up, w_down)):  # glmbench/quant.py
        return _quant.swiglu(x, w_gate, w_up, w_down)
    if x.ndim == 1:
        return _core.swiglu(x[None, :], w_gate, w_up, w_down)[0]
    return _core.swiglu(x, w_gate, w_up, w_down)

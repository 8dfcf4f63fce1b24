"""Typed wrappers over glmbench._core: each documents shapes and dtypes and allocates outputs.
Inputs are never modified. float32 activations; weights float32, float16 or bfloat16 (uint16).

Families (one section each, in the same order as csrc/): norm, rope, linear, swiglu, moe,
attention (GQA, MLA), KV cache, quant.
"""
from __future__ import annotations

import numpy as np

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

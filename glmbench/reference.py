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

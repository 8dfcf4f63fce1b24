"""The unit of the kernel benchmark: one timed op with the work it must do (glmbench.bench runs
the cases that glmbench.bench and its family modules, bench.attention and bench.quant, build)."""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Callable


@dataclass
class Case:
    """One timed op. `flops` and `bytes` are what the op must do and move at minimum (weights read
    once, activations in and out), so GB/s and GFLOP/s compare with the machine's ceilings."""
    name: str
    run: Callable[[], Any]
    numpy_run: Callable[[], Any] | None
    flops: float
    bytes: float
    bound: str = "memory"
    tags: tuple = field(default_factory=tuple)   # e.g. ("gemv_bf16",) for the targets summary
    # agreement with numpy_run required by the "check" column, relative to the largest |value|;
    # a twin that is a different computation (e.g. float32 weights for a quantized op) sets more
    rtol: float = 1e-3

    def __post_init__(self):
        if self.bound not in ("memory", "compute", "int8"):
            raise ValueError(f"`bound` must be 'memory', 'compute' or 'int8', got {self.bound!r}")

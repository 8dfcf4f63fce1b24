"""Measurements (evidence="measured"): real kernels timed on this machine.

  protocol   what every backend shares: argument checks, the record's fields, the plan of points,
             the resume key, the store loop
  cpu        the C core on this CPU (glmbench.Model, random seeded weights, layer sampling)
  cuda       the CUDA kernels on a GPU (glmbench.cuda.CudaModel)
  machine    this machine's facts and ceilings (bandwidth, FMA peak), the `host` hardware profile

    measure("glm-4.7-flash", depths=(0, 4096))                 # CPU
    measure("glm-4.7-flash", depths=(0, 4096), device="cuda")  # GPU
"""
from __future__ import annotations

from glmbench.measure import cpu as _cpu
from glmbench.measure.cpu import (TESTS, attn_arithmetic, choose_layers, cpu_name, decode_bytes_per_token,  # noqa: F401
                                  gemm_arithmetic, layer_roles, rss_bytes, sample_layers, scaled_seconds)

DEVICES = ("cpu", "cuda")

__all__ = ["measure", "DEVICES", "TESTS", "attn_arithmetic", "gemm_arithmetic", "choose_layers", "layer_roles",
           "sample_layers", "scaled_seconds",
           "decode_bytes_per_token", "cpu_name", "rss_bytes"]


def measure(model, *, device: str = "cpu", **kw) -> list[dict]:
    """Measure `model` on `device` ("cpu": glmbench.measure.cpu.measure; "cuda":
    glmbench.measure.cuda.measure); keyword arguments go to that backend."""
    if device == "cpu":
        return _cpu.measure(model, **kw)
    if device == "cuda":
        from glmbench.measure import cuda as _cuda_backend
        return _cuda_backend.measure(model, **kw)
    raise ValueError(f"`device` must be one of {', '.join(DEVICES)}, got {device!r}")

"""glmbench: which model, on which cards, for which shape of work.

Every number glmbench shows is one of three kinds and says which (`evidence`):
  measured   real kernels run on this machine's CPU (glmbench.core, glmbench.measure) or a GPU (glmbench.cuda)
  predicted  the cost model (glmbench.predict) from an architecture config and a hardware profile
  calibrated a prediction fitted to measurements, with its error shown

The package, bottom to top (docs/ARCHITECTURE.md):
  vocab     shared words: enums, formats, defaults, point keys, argument checks
  models    configs (HF config.json -> ModelConfig) and Model (a forward pass on the C core)
  core      the C core's ops, KV cache, attention, quantized weights, and their float64 reference
  cuda      the CUDA ops and CudaModel
  predict   hardware profiles, the cost model, predicted sweeps      (never imports core/measure)
  measure   real timings: one protocol, a CPU and a CUDA backend
  results   records: format, atomic files, resumable stores, compare
  report    the study, report.md, charts;  cli: the `glmbench` command;  bench: kernel benchmarks

Importing glmbench loads nothing compiled: the C-core names below (glmbench.linear, glmbench.Model,
glmbench.set_num_threads, ...) load glmbench.core on first use.
"""
__version__ = "0.1.0"

import os as _os

# OpenBLAS's worker threads spin for 2^28 cycles (~0.1 s) after each call before they sleep, which
# starves the C core's OpenMP threads on a small machine. NumPy's own OpenBLAS reads this when NumPy
# loads, so it is set here, before any glmbench module imports NumPy (the core's own OpenBLAS,
# preloaded by glmbench.core._loader, reads it too); where NumPy was imported before glmbench,
# NumPy's copy keeps its default. A user's own setting wins.
_os.environ.setdefault("OPENBLAS_THREAD_TIMEOUT", "4")

# name -> module that defines it; resolved on first access (PEP 562), so `import glmbench.predict`
# works where the C core was not built.
_CORE_API = {
    **{n: "glmbench.core.ops" for n in ("rms_norm", "layer_norm", "rope", "linear", "swiglu", "moe_route", "moe_experts", "moe",
                                       "gated_delta_rule", "causal_conv1d", "ssm_scan", "set_num_threads", "get_num_threads",
                                       "workspace_bytes", "reset_workspace_peak", "workspace_blocks")},
    "KVCache": "glmbench.core.kvcache",
    **{n: "glmbench.core.attention" for n in ("gqa_attention", "mla_attention", "gqa_block", "mla_block")},
    "Model": "glmbench.models.model",
}

__all__ = ["__version__", "HAS_CUDA", *_CORE_API]


def __getattr__(name):
    if name in _CORE_API:
        import importlib
        value = getattr(importlib.import_module(_CORE_API[name]), name)
        globals()[name] = value
        return value
    if name == "HAS_CUDA":
        from glmbench.cuda import HAS_CUDA
        globals()["HAS_CUDA"] = HAS_CUDA
        return HAS_CUDA
    raise AttributeError(f"module 'glmbench' has no attribute {name!r}")


def __dir__():
    return sorted(set(globals()) | set(__all__))

"""The C core's Python face: typed wrappers of the compiled ops (`csrc/`), the paged KV cache,
attention, ggml quantized weights, and `reference`, the float64 NumPy twin of every op.

Everything here runs real kernels on this machine. The prediction side (glmbench.predict,
glmbench.models.configs, glmbench.results, glmbench.report) never imports this package.
`reference` is plain NumPy: `from glmbench.core import reference` works without the core.
"""
try:  # preload OpenBLAS and load the extension, so `glmbench.core._core` imports on its own too
    from glmbench.core import _loader  # noqa: F401
except ImportError:  # no C core here: `reference` still works; the ops raise CoreUnavailable
    pass

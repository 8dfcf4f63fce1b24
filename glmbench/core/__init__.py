"""The C core's Python face: typed wrappers of the compiled ops (`csrc/`), the paged KV cache,
attention, ggml quantized weights, and `reference`, the float64 NumPy twin of every op.

Everything here runs real kernels on this machine. The prediction side (glmbench.predict,
glmbench.models.configs, glmbench.results, glmbench.report) never imports this package.
`reference` is plain NumPy: `from glmbench.core import reference` works without the core.
"""

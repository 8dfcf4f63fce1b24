"""Weight and KV-cache storage formats: exact bytes, shared by the configs, the cost model and
the quantized kernels. Block layouts are ggml's (REFERENCE.md section 4; ggml-common.h):

  q8_0   32 weights per block: f16 scale + 32 x int8                       = 34 bytes (8.5 bpw)
  q4_0   32 weights per block: f16 scale + 16 bytes of nibbles             = 18 bytes (4.5 bpw)
  q2_K   256 per super-block                                               = 84 bytes (2.625)
  q4_K   256 per super-block: f16 d, f16 dmin, 12 bytes scales, 128 nibbles = 144 bytes (4.5)
  q5_K   256: q4_K + 32 bytes of high bits                                 = 176 bytes (5.5)
  q6_K   256: 128 low nibbles, 64 high bits, 16 int8 scales, f16 d        = 210 bytes (6.5625)
  iq4_xs 256: f16 d, u16 scales_h, 4 bytes scales_l, 128 nibbles           = 136 bytes (4.25)
"""
from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class Format:
    name: str
    block: int          # elements per block (1 for plain floats)
    block_bytes: int    # bytes per block
    dequant: bool       # needs a dequantization step before use

    @property
    def bits_per_weight(self) -> float:
        return 8.0 * self.block_bytes / self.block

    def nbytes(self, n_elements: int) -> int:
        """Exact bytes for a row of n_elements (which must be a whole number of blocks)."""
        n = int(n_elements)
        if n < 0:
            raise ValueError(f"`n_elements` must be >= 0, got {n}")
        if n % self.block:
            raise ValueError(f"{self.name} stores blocks of {self.block} elements; {n} is not a multiple")
        return n // self.block * self.block_bytes


WEIGHT_FORMATS = {f.name: f for f in (
    Format("f32", 1, 4, False),
    Format("f16", 1, 2, False),
    Format("bf16", 1, 2, False),
    Format("q8_0", 32, 34, True),
    Format("q4_0", 32, 18, True),
    Format("q2_K", 256, 84, True),
    Format("q4_K", 256, 144, True),
    Format("q5_K", 256, 176, True),
    Format("q6_K", 256, 210, True),
    Format("iq4_xs", 256, 136, True),
)}

# KV-cache types runtimes commonly offer (llama.cpp's -ctk/-ctv), plus f32 for reference runs.
KV_FORMATS = {n: WEIGHT_FORMATS[n] for n in ("f32", "f16", "bf16", "q8_0", "q4_0")}


# Formats llama.cpp substitutes for a matrix whose rows are not a whole number of 256-weight
# super-blocks (src/llama-quant.cpp, the `convert_incompatible_tensor` switch). Used only for
# such fallbacks, so they are not in WEIGHT_FORMATS.
#   q5_0   32: f16 d + 4 bytes high bits + 16 bytes nibbles = 22 bytes (5.5)
#   q5_1   32: f16 d, f16 m + 4 + 16                         = 24 bytes (6.0)
#   iq4_nl 32: f16 d + 16 bytes nibbles                      = 18 bytes (4.5)
FALLBACK_FORMATS = {f.name: f for f in (
    Format("q5_0", 32, 22, True),
    Format("q5_1", 32, 24, True),
    Format("iq4_nl", 32, 18, True),
)}
_FALLBACK = {"q2_K": "iq4_nl", "iq4_xs": "iq4_nl", "q4_K": "q5_0", "q5_K": "q5_1", "q6_K": "q8_0"}


def row_format(fmt: Format, n_cols: int) -> Format:
    """The format a matrix with rows of `n_cols` weights is actually stored in when its file is
    asked for `fmt`: `fmt` itself when the rows are whole blocks, else llama.cpp's fallback,
    else f16 (where llama.cpp would refuse the tensor, we keep it unquantized)."""
    if n_cols % fmt.block == 0:
        return fmt
    fb = _FALLBACK.get(fmt.name)
    if fb is not None:
        f = FALLBACK_FORMATS.get(fb) or WEIGHT_FORMATS[fb]
        if n_cols % f.block == 0:
            return f
    return WEIGHT_FORMATS["f16"]


def weight_format(name: str) -> Format:
    try:
        return WEIGHT_FORMATS[name]
    except KeyError:
        raise ValueError(f"unknown weight format {name!r}; known: {', '.join(WEIGHT_FORMATS)}") from None


def kv_format(name: str) -> Format:
    try:
        return KV_FORMATS[name]
    except KeyError:
        raise ValueError(f"unknown KV-cache format {name!r}; known: {', '.join(KV_FORMATS)}") from None

"""The shared vocabulary at the bottom of the package: the words that the predicted side (cost
model) and the measured side (CPU and CUDA) both use, so a measured record and a predicted
record of the same point are spelled the same and join on one key. Imports nothing of glmbench.

  enums        EVIDENCE, TESTS, SPLITS, MLA_STRATEGIES (and the C core's index of each strategy)
  defaults     DEFAULTS: one default per concept for every entry point (CLI, API, records)
  formats      Format, WEIGHT_FORMATS, KV_FORMATS: exact bytes; row_format, tensor_format (which
               tensors stay f32); weight_format / kv_format resolve a name once
  points       point_key(record): the identity of a measured or predicted point;
               fingerprint(*parts): a stable hash of everything that determined a point's number
  checks       check_int, check_tokens: argument checks with the value in the message
  bf16         to_bf16 / bf16_to_f32: the one round-to-nearest-even bf16 conversion

Storage formats: exact bytes, shared by the configs, the cost model and the quantized kernels.
Block layouts are ggml's (REFERENCE.md section 4; ggml-common.h):
  q8_0   32 weights per block: f16 scale + 32 x int8                       = 34 bytes (8.5 bpw)
  q4_0   32 weights per block: f16 scale + 16 bytes of nibbles             = 18 bytes (4.5 bpw)
  q2_K   256 per super-block                                               = 84 bytes (2.625)
  q4_K   256 per super-block: f16 d, f16 dmin, 12 bytes scales, 128 nibbles = 144 bytes (4.5)
  q5_K   256: q4_K + 32 bytes of high bits                                 = 176 bytes (5.5)
  q6_K   256: 128 low nibbles, 64 high bits, 16 int8 scales, f16 d        = 210 bytes (6.5625)
  iq4_xs 256: f16 d, u16 scales_h, 4 bytes scales_l, 128 nibbles           = 136 bytes (4.25)
"""
from __future__ import annotations

import dataclasses
import hashlib
import json
import math
import os
from collections.abc import Mapping
from dataclasses import dataclass

import numpy as np

# Built-in model configs, hardware profiles and runtime profiles (package data).
DATA_DIR = os.path.join(os.path.dirname(os.path.abspath(__file__)), "data")

# ---- enums ------------------------------------------------------------------------------------
EVIDENCE = ("measured", "predicted", "calibrated")
# Record tests: tg decode, pp prefill, mem bytes held (measured and predicted), serve (predicted).
TESTS = ("tg", "pp", "mem", "serve")
MEASURED_TESTS = ("tg", "pp", "mem")
SPLITS = ("none", "layer", "tensor")
# How MLA attends (docs/COSTMODEL.md): naive expands the latent cache per head; absorbed folds
# kv_b into the query and the output; flash is absorbed with split-K tiles. The C core exports the
# same tuple in its enum's order (csrc/attention_mla.h, `_core.MLA_STRATEGIES`); the bindings
# take the names, and tests/test_layout.py checks the two tuples agree.
MLA_STRATEGIES = ("naive", "absorbed", "flash")

# ---- defaults: one per concept, for the CLI, the API and the records ---------------------------
# The KV cache is f16 by default everywhere, as llama.cpp's -ctk/-ctv. Weights: the predicted
# study uses ~4.5-bit files (q4_K, what people download); measured runs need a format the C core
# executes (f32, f16, bf16, q8_0, q4_0; random weights), bf16 by default.
DEFAULTS = {
    "kv": "f16",
    "weights": "q4_K",
    "measured_weights": "bf16",
    "mla_strategy": "flash",
    "runtime": "typical",
    "split": "layer",
}


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


# Weight formats the C core executes (quantized ones through glmbench.core.quant).
EXECUTABLE_WEIGHT_FORMATS = ("f32", "f16", "bf16", "q8_0", "q4_0")


ROUTER_SUFFIX = "mlp.gate.weight"  # the MoE router (llama.cpp's ffn_gate_inp), never quantized


def tensor_format(fmt: Format | str, name: str, shape) -> Format:
    """The format tensor `name` of `shape` is held in, in a model stored as `fmt`: 1-D tensors
    (norm weights, biases, the router's score bias) and the MoE router stay f32, as llama.cpp's
    quantizer keeps them (src/llama-quant.cpp); a matrix uses row_format (rows that are not whole
    blocks fall back). The one statement of this rule, for the configs' byte counts, the cost
    model, the measured models and their floors."""
    fmt = weight_format(fmt) if isinstance(fmt, str) else fmt
    shape = tuple(shape)
    if len(shape) < 2 or name.endswith(ROUTER_SUFFIX):
        return WEIGHT_FORMATS["f32"]
    return row_format(fmt, int(shape[-1]))


def tensor_nbytes(fmt: Format | str, name: str, shape) -> int:
    """Exact stored bytes of tensor `name` of `shape` (tensor_format's rule)."""
    shape = tuple(int(s) for s in shape)
    n = math.prod(shape)
    f = tensor_format(fmt, name, shape)
    return f.nbytes(n) if len(shape) < 2 else (n // shape[-1]) * f.nbytes(shape[-1])


def mla_strategy(name: str, arg: str = "mla_strategy") -> str:
    """`name` if it is an MLA strategy, else a ValueError naming the argument `arg`."""
    if name not in MLA_STRATEGIES:
        raise ValueError(f"`{arg}` must be one of {', '.join(MLA_STRATEGIES)}, got {name!r}")
    return name


# ---- points -------------------------------------------------------------------------------------
# What identifies a point, measured or predicted: the test and its shape, the model, how it runs
# (cards, split) and its formats and MLA strategy (record field names are llama-bench's where they
# overlap; `n_streams` is how many independent streams a step runs (a decode step of 4 streams) and
# `concurrency` the requests in flight of a serving point; llama-bench's own `n_batch` and
# `n_ubatch` are its logical and physical batch sizes, how a runtime ran, not what point it is).
# Resumable stores key finished points on these plus what made the number (measure/protocol.py,
# predict/sweep.py).
POINT_FIELDS = ("test", "model", "n_cards", "split", "weights", "type_k", "type_v", "mla_strategy",
                "n_prompt", "n_gen", "n_depth", "n_streams", "concurrency")


def point_key(record: dict, fields: tuple = POINT_FIELDS) -> tuple:
    """The identity of a record's point (a missing field reads as None, "" as None: CSV cannot
    tell them apart)."""
    return tuple(None if record.get(f) == "" else record.get(f) for f in fields)


def join_key(record: dict) -> tuple:
    """The one matching rule for records of the same point, in every file and tool: `glmbench
    compare` (which adds the setup fields that vary within a file) and the report's
    measured-vs-predicted table both match on it. The model, the test, the depth, the streams (a
    missing `n_streams` is 1), the prompt for pp (and pg), the concurrency for serve. The tokens
    generated are not part of it: a measurement of tg128 at depth d pairs with the tg1 prediction
    at d (a decode step's rate barely moves over 128 tokens of a deep cache); the hardware and
    formats are not either (compare shows them as the difference between files; the report
    predicts for the measured setup)."""
    t = record.get("test")

    def v(f, default=0):
        x = record.get(f)
        return default if x in (None, "") else x
    return (record.get("model"), t, v("n_depth"), v("n_prompt") if t in ("pp", "pg") else 0,
            v("n_gen") if t == "pg" else 0, v("n_streams", 1), v("concurrency", None) if t == "serve" else None)


def _canonical(o):
    """`o` as plain JSON values with a fixed order: dataclasses (every field, the class name
    first), mappings (keys sorted as strings), sequences, NumPy scalars and arrays."""
    if o is None or isinstance(o, (bool, str)):
        return o
    if isinstance(o, (int, np.integer)):
        return int(o)
    if isinstance(o, (float, np.floating)):
        f = float(o)
        return f if math.isfinite(f) else repr(f)  # nan/inf as text: JSON has no such numbers
    if dataclasses.is_dataclass(o) and not isinstance(o, type):
        return {"__class__": type(o).__name__,
                **{f.name: _canonical(getattr(o, f.name)) for f in dataclasses.fields(o)}}
    if isinstance(o, Mapping):
        return {str(k): _canonical(v) for k, v in sorted(o.items(), key=lambda kv: str(kv[0]))}
    if isinstance(o, np.ndarray):
        return {"__array__": o.dtype.str, "shape": list(o.shape), "data": _canonical(o.tolist())}
    if isinstance(o, (list, tuple, set, frozenset)):
        items = [_canonical(v) for v in o]
        return sorted(items, key=repr) if isinstance(o, (set, frozenset)) else items
    if isinstance(o, os.PathLike):
        return os.fspath(o)
    raise TypeError(f"fingerprint: cannot hash a {type(o).__name__}")


def fingerprint(*parts) -> str:
    """A stable hash (16 hex digits of SHA-256) of everything that determined a point's number:
    the resolved model config, the hardware profile and rig, the runtime profile, formats, MLA
    strategy and, for measurements, the code version and threads (measure/protocol.py,
    predict/sweep.py). Equal inputs give an equal fingerprint in every process and on every
    machine; a resumable store reuses a point only when its record's `fingerprint` is equal."""
    text = json.dumps([_canonical(p) for p in parts], sort_keys=True, separators=(",", ":"))
    return hashlib.sha256(text.encode()).hexdigest()[:16]


# ---- workloads ------------------------------------------------------------------------------------
@dataclass(frozen=True)
class Workload:
    """A shape of work: `prompt` tokens in, `output` tokens out, `concurrency` requests at once.
    `objective`: "latency" (what matters for one stream) or "throughput" (for several); "" picks
    by concurrency. `name` labels it in the report's decision table."""
    prompt: int
    output: int
    concurrency: int = 1
    objective: str = ""
    name: str = ""

    def __post_init__(self):
        for f, lo in (("prompt", 1), ("output", 1), ("concurrency", 1)):
            object.__setattr__(self, f, check_int(f, getattr(self, f), lo))
        obj = self.objective or ("latency" if self.concurrency == 1 else "throughput")
        if obj not in ("latency", "throughput"):
            raise ValueError(f"`objective` must be 'latency' or 'throughput', got {self.objective!r}")
        object.__setattr__(self, "objective", obj)


# ---- bounds: what no real model or context can be ---------------------------------------------
# Generous on purpose (each is >= 16x the largest released model's figure), so they only catch
# typos and nonsense (`vocab_size: 1e30`, a depth of 1e20), never a real or future model.
# The longest context priced or measured: 2^32 tokens. The longest native context of a released
# model is ~10M tokens, and a 2^32-token cache of even a small model is hundreds of TB.
MAX_TOKENS = 2 ** 32
MAX_CONFIG = {
    "vocab_size": 2 ** 24,              # 16.8M; the largest vocabularies are ~262K
    "hidden_size": 2 ** 20,             # 1M; the widest models are 16-25K
    "intermediate_size": 2 ** 22,       # 4M; the widest dense MLPs are ~53K-74K
    "moe_intermediate_size": 2 ** 22,
    "num_hidden_layers": 2 ** 14,       # 16384; the deepest models have ~128 layers
    "num_attention_heads": 2 ** 14,     # 16384; real models have <= 128
    "num_key_value_heads": 2 ** 14,
    "head_dim": 2 ** 14,                # real heads are 64-256 wide
    "kv_lora_rank": 2 ** 16, "q_lora_rank": 2 ** 16,
    "qk_nope_head_dim": 2 ** 14, "qk_rope_head_dim": 2 ** 14, "v_head_dim": 2 ** 14,
    "n_routed_experts": 2 ** 16,        # 65536; the most experts released are 384-512
    "num_experts": 2 ** 16, "num_local_experts": 2 ** 16,
    "num_experts_per_tok": 2 ** 16, "n_shared_experts": 2 ** 16,
    "n_group": 2 ** 16, "topk_group": 2 ** 16,
    "max_position_embeddings": MAX_TOKENS,
    "sliding_window": MAX_TOKENS,
}


# ---- argument checks ------------------------------------------------------------------------------
def check_int(name: str, v, lo: int = 0, hi: int | None = None) -> int:
    """`v` as an int in [lo, hi]: a TypeError naming the argument if it is not a whole number
    (bool included), a ValueError showing the value if it is out of range."""
    if isinstance(v, bool) or not isinstance(v, (int, np.integer)):
        raise TypeError(f"`{name}` must be an integer, got {v!r}")
    v = int(v)
    if v < lo:
        raise ValueError(f"`{name}` must be >= {lo}, got {v}")
    if hi is not None and v > hi:
        raise ValueError(f"`{name}` must be <= {hi}, got {v}")
    return v


def check_positive(name: str, v) -> float:
    """A finite number > 0, or a ValueError naming it."""
    if isinstance(v, bool) or not isinstance(v, (int, float, np.integer, np.floating)) or not math.isfinite(v) or v <= 0:
        raise ValueError(f"`{name}` must be a finite number > 0, got {v!r}")
    return float(v)


# ---- bfloat16 -------------------------------------------------------------------------------------
def to_bf16(a) -> np.ndarray:
    """float32 -> bfloat16 bits (uint16), round to nearest even as torch and the C core do; a NaN
    stays a (quiet) NaN with its sign and payload's high bits."""
    f = np.ascontiguousarray(a, dtype=np.float32)
    u = f.view(np.uint32)
    r = ((u + np.uint32(0x7FFF) + ((u >> np.uint32(16)) & np.uint32(1))) >> np.uint32(16)).astype(np.uint16)
    return np.where(np.isnan(f), ((u >> np.uint32(16)) | np.uint32(0x40)).astype(np.uint16), r)


def bf16_to_f32(b) -> np.ndarray:
    """bfloat16 bits (uint16) -> float32, exact."""
    return (np.asarray(b, dtype=np.uint16).astype(np.uint32) << np.uint32(16)).view(np.float32)

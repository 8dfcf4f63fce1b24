"""The shared vocabulary at the bottom of the package: the words that the predicted side (cost
model) and the measured side (CPU and CUDA) both use, so a measured record and a predicted
record of the same point are spelled the same and join on one key. Imports nothing of glmbench.

  enums        EVIDENCE, TESTS, SPLITS, MLA_STRATEGIES (and the C core's index of each strategy)
  defaults     DEFAULTS: one default per concept for every entry point (CLI, API, records)
  formats      Format, GGML_TYPES (every ggml type), WEIGHT_FORMATS (+ vLLM fp8/awq/gptq), KV_FORMATS:
               exact bytes; MIXES: llama.cpp's named mixes (Q4_K_M, ...) resolved per tensor by
               mix_type; row_format, tensor_format (which tensors stay unquantized, a mix's types);
               weight_format / kv_format resolve a name once (case-insensitive)
  points       point_key(record): the identity of a measured or predicted point;
               fingerprint(*parts): a stable hash of everything that determined a point's number
  checks       check_int, check_tokens: argument checks with the value in the message
  bf16         to_bf16 / bf16_to_f32: the one round-to-nearest-even bf16 conversion

Storage formats: exact bytes, shared by the configs, the cost model and the quantized kernels.
Block layouts are ggml's (docs/SOURCES.md §4; ggml-common.h):
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
import weakref
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

# glmbench calibrate's cross-validation (predict/calibrate.py resolve_cv; here so the CLI's help needs no
# scipy): leave-one-out up to CALIBRATE_LOO_MAX_POINTS points, CALIBRATE_CV_FOLDS-fold above
CALIBRATE_LOO_MAX_POINTS = 100
CALIBRATE_CV_FOLDS = 10


@dataclass(frozen=True)
class Format:
    """A storage type: `block` elements take `block_bytes` bytes (a float only for 4-bit groups
    with packed 4-bit zero points, AWQ/GPTQ: 64 + 2 + 0.5 bytes per 128). A matrix also pays
    `row_bytes` per row (per-channel scales), `col_bytes` per input column (GPTQ's g_idx) and
    `tensor_bytes` once (a per-tensor scale). `kind`: "ggml" (a GGUF tensor type; unquantized
    tensors stay f32) or "vllm" (a vLLM checkpoint format; unquantized tensors stay bf16)."""
    name: str
    block: int          # elements per block (1 for plain floats)
    block_bytes: float  # bytes per block
    dequant: bool       # needs a dequantization step before use
    row_bytes: int = 0
    col_bytes: int = 0
    tensor_bytes: int = 0
    kind: str = "ggml"
    ggml_type: int | None = None   # the GGUF/ggml type id (ggml.h enum ggml_type)

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
        v = n // self.block * self.block_bytes
        return (v if isinstance(v, int) else math.ceil(v)) + self.row_bytes

    def matrix_nbytes(self, rows: int, cols: int) -> int:
        """Exact bytes of one [rows, cols] matrix (rows of whole blocks), scales included."""
        rows, cols = int(rows), int(cols)
        if cols % self.block:
            raise ValueError(f"{self.name} stores blocks of {self.block} elements; {cols} is not a multiple")
        v = rows * (cols // self.block) * self.block_bytes
        return ((v if isinstance(v, int) else math.ceil(v)) + rows * self.row_bytes + cols * self.col_bytes
                + self.tensor_bytes)


# Every ggml type: (GGUF name, ggml type id, elements per block, bytes per block), as the `gguf`
# package's GGML_QUANT_SIZES gives them (gguf 0.19; tests/test_formats.py checks this table equals
# the installed package's, so vocab needs no import of it). Block layouts: ggml-common.h.
GGML_TYPE_TABLE = (
    ("F32", 0, 1, 4), ("F16", 1, 1, 2), ("Q4_0", 2, 32, 18), ("Q4_1", 3, 32, 20), ("Q5_0", 6, 32, 22),
    ("Q5_1", 7, 32, 24), ("Q8_0", 8, 32, 34), ("Q8_1", 9, 32, 40), ("Q2_K", 10, 256, 84), ("Q3_K", 11, 256, 110),
    ("Q4_K", 12, 256, 144), ("Q5_K", 13, 256, 176), ("Q6_K", 14, 256, 210), ("Q8_K", 15, 256, 292),
    ("IQ2_XXS", 16, 256, 66), ("IQ2_XS", 17, 256, 74), ("IQ3_XXS", 18, 256, 98), ("IQ1_S", 19, 256, 50),
    ("IQ4_NL", 20, 32, 18), ("IQ3_S", 21, 256, 110), ("IQ2_S", 22, 256, 82), ("IQ4_XS", 23, 256, 136),
    ("I8", 24, 1, 1), ("I16", 25, 1, 2), ("I32", 26, 1, 4), ("I64", 27, 1, 8), ("F64", 28, 1, 8),
    ("IQ1_M", 29, 256, 56), ("BF16", 30, 1, 2), ("TQ1_0", 34, 256, 54), ("TQ2_0", 35, 256, 66),
    ("MXFP4", 39, 32, 17), ("NVFP4", 40, 64, 36), ("Q1_0", 41, 128, 18),
)


def _ggml_name(gguf_name: str) -> str:
    """ggml's own spelling (ggml type_name): lower case, K-quants with a capital K (q4_K)."""
    n = gguf_name.lower()
    return n[:-2] + "_K" if n.endswith("_k") else n


GGML_TYPES = {f.name: f for f in (
    Format(_ggml_name(g), b, s, b > 1, ggml_type=t) for g, t, b, s in GGML_TYPE_TABLE)}
GGML_TYPES_BY_ID = {f.ggml_type: f for f in GGML_TYPES.values()}

# vLLM's common checkpoint formats (what `vllm serve` loads; unquantized tensors stay bf16):
#   fp8              e4m3 weights, one f32 scale per tensor (per expert for stacked experts)
#   fp8_per_channel  e4m3 weights, one f32 scale per output row
#   awq              int4 weight-only, groups of 128 input weights: 64 bytes packed int4, an f16
#                    scale and a packed 4-bit zero point (qzeros int32 [in/128, out/8]) = 66.5 bytes
#   gptq             as awq, plus g_idx (an int32 per input column); desc_act=False layout
VLLM_FORMATS = {f.name: f for f in (
    Format("fp8", 1, 1, True, tensor_bytes=4, kind="vllm"),
    Format("fp8_per_channel", 1, 1, True, row_bytes=4, kind="vllm"),
    Format("awq", 128, 66.5, True, kind="vllm"),
    Format("gptq", 128, 66.5, True, col_bytes=4, kind="vllm"),
)}
_INTEGER_TYPES = ("i8", "i16", "i32", "i64")

# ik_llama.cpp's own types (not in mainline ggml, so no GGUF type id here): name, elements per
# block, bytes per block, bytes per row (the "_KS"/"_KT" types store one scale per row). Bits per
# weight as ik_llama.cpp's llama-quantize lists them (examples/quantize/quantize.cpp: IQ4_KS
# "4.25 bpw", IQ4_K "4.5 bpw", IQ6_K "6.6 bpw" = 6.625, ...); the block layouts as its
# ggml-common.h declares them (block_iq4_k: d, extra, scales_h[4], scales_l[8], qs[128] = 144
# bytes). glmbench predicts their bytes; it does not run them.
IK_TYPE_TABLE = (
    ("iq2_k", 256, 76, 0), ("iq3_k", 256, 110, 0), ("iq4_k", 256, 144, 0), ("iq5_k", 256, 176, 0),
    ("iq6_k", 256, 212, 0), ("iq2_ks", 256, 70, 2), ("iq3_ks", 256, 102, 2), ("iq2_kl", 256, 86, 2),
    ("iq4_ks", 256, 136, 4), ("iq4_kss", 256, 128, 4), ("iq5_ks", 256, 168, 4),
    ("iq1_kt", 256, 56, 4), ("iq2_kt", 256, 68, 4), ("iq3_kt", 256, 100, 4), ("iq4_kt", 256, 128, 4),
)
IK_FORMATS = {n: Format(n, b, s, True, row_bytes=r) for n, b, s, r in IK_TYPE_TABLE}

# What a record says about a format that is not a plain ggml/vLLM type (records' `weights_note`).
FORMAT_NOTES = {n: (f"ik_llama.cpp's {n.upper()}: {f.bits_per_weight:g} bits per weight ({f.block_bytes} bytes per "
                    f"{f.block} weights" + (f" + {f.row_bytes} bytes per row" if f.row_bytes else "")
                    + ", from ik_llama.cpp's type table); predicted from its bytes, not run by glmbench")
                for n, f in IK_FORMATS.items()}

# Weight formats: every ggml float/quantized type (not the integer ones), ik_llama.cpp's types and
# vLLM's formats.
WEIGHT_FORMATS = {**{n: f for n, f in GGML_TYPES.items() if n not in _INTEGER_TYPES}, **IK_FORMATS, **VLLM_FORMATS}

# KV-cache types runtimes commonly offer (llama.cpp's -ctk/-ctv), plus f32 for reference runs.
KV_FORMATS = {n: WEIGHT_FORMATS[n] for n in ("f32", "f16", "bf16", "q8_0", "q4_0")}

# Kept for callers of the former name: the formats llama.cpp falls back to (now in GGML_TYPES).
FALLBACK_FORMATS = {n: GGML_TYPES[n] for n in ("q5_0", "q5_1", "iq4_nl")}

# Formats llama.cpp substitutes for a matrix whose rows are not a whole number of its type's
# blocks (src/llama-quant.cpp, the `convert_incompatible_tensor` switch); then f16 if that fails.
_FALLBACK = {"tq1_0": "q4_0", "tq2_0": "q4_0",
             **{n: "iq4_nl" for n in ("iq2_xxs", "iq2_xs", "iq2_s", "iq3_xxs", "iq3_s", "iq1_s", "iq1_m",
                                      "q2_K", "q3_K", "iq4_xs")},
             "q4_K": "q5_0", "q5_K": "q5_1", "q6_K": "q8_0"}


def row_format(fmt: Format, n_cols: int) -> Format:
    """The format a matrix with rows of `n_cols` weights is actually stored in when its file is
    asked for `fmt`: `fmt` itself when the rows are whole blocks, else llama.cpp's fallback,
    else f16 (where llama.cpp would refuse the tensor, we keep it unquantized; a vLLM format
    keeps such a matrix in bf16)."""
    if n_cols % fmt.block == 0:
        return fmt
    if fmt.kind == "vllm":
        return GGML_TYPES["bf16"]
    fb = _FALLBACK.get(fmt.name)
    if fb is not None:
        f = GGML_TYPES[fb]
        if n_cols % f.block == 0:
            return f
    return GGML_TYPES["f16"]


# ---- llama.cpp's named mixes (llama-quantize's ftypes) --------------------------------------------
@dataclass(frozen=True)
class TensorContext:
    """What llama.cpp's quantizer looks at besides a tensor's name and shape: the layer count, the
    GQA ratio n_head / n_head_kv, the routed-expert count, and whether the file has its own
    output (lm_head) tensor (a tied model quantizes token_embd with the output's rule)."""
    n_layers: int
    n_gqa: int = 1
    n_expert: int = 0
    has_output: bool = True


@dataclass(frozen=True)
class Mix:
    """A llama.cpp file type (llama-quantize's Q4_K_M, IQ4_XS, ...): most tensors in `base`, some
    bumped by llama_tensor_get_type's rules (src/llama-quant.cpp; see mix_type). Without a file,
    the per-tensor types are an approximation: the rules as stated there, without an imatrix, and
    without the rules for one model size (LLaMA-2-70B's attn_v) or Falcon."""
    name: str           # the canonical spelling: "Q4_K_M"; "mix:Q2_K" where a type has the name
    ftype: str          # llama.cpp's ftype name: "Q4_K_M", "Q2_K"
    base: Format
    kind: str = "mix"
    approx: str = ""    # a mix llama.cpp does not make (Unsloth's UD-...): how it is approximated

    @property
    def dequant(self) -> bool:
        return self.base.dequant

    @property
    def block(self) -> int:
        return self.base.block

    @property
    def note(self) -> str:
        if self.approx:
            return self.approx
        return (f"{self.ftype}: per-tensor types from llama.cpp's quantizer rules (llama_tensor_get_type, "
                f"no imatrix) applied to the config; an approximation of a real file's types")


# ftype -> base type (llama_model_quantize_impl's switch)
_MIX_BASE = {
    "Q4_0": "q4_0", "Q4_1": "q4_1", "Q5_0": "q5_0", "Q5_1": "q5_1", "Q8_0": "q8_0",
    "Q2_K": "q2_K", "Q2_K_S": "q2_K", "Q3_K_S": "q3_K", "Q3_K_M": "q3_K", "Q3_K_L": "q3_K",
    "Q4_K_S": "q4_K", "Q4_K_M": "q4_K", "Q5_K_S": "q5_K", "Q5_K_M": "q5_K", "Q6_K": "q6_K",
    "IQ2_XXS": "iq2_xxs", "IQ2_XS": "iq2_xs", "IQ2_S": "iq2_xs", "IQ2_M": "iq2_s",
    "IQ3_XXS": "iq3_xxs", "IQ3_XS": "iq3_s", "IQ3_S": "iq3_s", "IQ3_M": "iq3_s",
    "IQ1_S": "iq1_s", "IQ1_M": "iq1_m", "IQ4_NL": "iq4_nl", "IQ4_XS": "iq4_xs",
    "TQ1_0": "tq1_0", "TQ2_0": "tq2_0", "MXFP4_MOE": "mxfp4",
}
MIXES = {m.name: m for m in (
    Mix(("mix:" + ft) if ft.lower() in {n.lower() for n in WEIGHT_FORMATS} else ft, ft, GGML_TYPES[b])
    for ft, b in _MIX_BASE.items())}

# Unsloth's "dynamic" quants (UD-Q4_K_XL, ...): llama.cpp files whose per-tensor types Unsloth
# chose (some layers kept in more bits); no rule states them, so each is approximated by the
# llama.cpp mix it is built on, and says so (its bytes are approximate, usually a little low).
_UD_LIKE = {"UD-Q2_K_XL": "Q2_K", "UD-Q3_K_XL": "Q3_K_M", "UD-Q4_K_XL": "Q4_K_M", "UD-Q5_K_XL": "Q5_K_M",
            "UD-Q6_K_XL": "Q6_K", "UD-Q8_K_XL": "Q8_0", "UD-IQ1_S": "IQ1_S", "UD-IQ1_M": "IQ1_M",
            "UD-IQ2_XXS": "IQ2_XXS", "UD-IQ2_M": "IQ2_M", "UD-IQ3_XXS": "IQ3_XXS", "UD-IQ4_XS": "IQ4_XS",
            "UD-IQ4_NL": "IQ4_NL"}
UD_MIXES = {n: Mix(n, ft, GGML_TYPES[_MIX_BASE[ft]],
                   approx=f"Unsloth's {n}: a mix like llama.cpp's {ft} with some tensors in more bits; "
                          f"approximated as {ft} (llama.cpp's rules), so its bytes are approximate")
            for n, ft in _UD_LIKE.items()}
FORMAT_NOTES.update({n: m.note for n, m in UD_MIXES.items()})

# case-insensitive lookup: a ggml type or vLLM format by its name ("Q8_0" = "q8_0": that type on
# every quantized tensor, as `llama-quantize --pure`), a mix by its ftype name ("q4_k_m") or, for
# every mix, "mix:<ftype>" ("mix:Q2_K": llama.cpp's Q2_K file, not the pure q2_K type)
# Spellings of a mix people write that llama.cpp does not: llama.cpp prints its Q2_K file type as
# "Q2_K - Medium" (llama_model_ftype_name), which reads "Q2_K_M" by the rule that makes "Q4_K - Medium"
# Q4_K_M; that file is the Q2_K mix (q2_K with the quantizer's bumped tensors), not the pure type.
MIX_ALIASES = {"Q2_K_M": "mix:Q2_K"}
_BY_LOWER = {**{n.lower(): f for n, f in WEIGHT_FORMATS.items()},
             **{m.name.lower(): m for m in MIXES.values()},
             **{"mix:" + m.ftype.lower(): m for m in MIXES.values()},
             **{n.lower(): m for n, m in UD_MIXES.items()},
             **{a.lower(): MIXES[m] for a, m in MIX_ALIASES.items()}}


def weight_format(name) -> Format | Mix:
    """A weight format by name, case-insensitive: a ggml type (q4_K, Q8_0, IQ4_XS, mxfp4: that type
    on every quantized tensor), a vLLM format (fp8, fp8_per_channel, awq, gptq) or a llama.cpp mix
    (Q4_K_M, q3_k_s, mix:Q2_K). A Format or Mix passes through."""
    if isinstance(name, (Format, Mix)):
        return name
    f = _BY_LOWER.get(str(name).strip().lower()) if isinstance(name, str) else None
    if f is None:
        import difflib
        canon = {**{n.lower(): n for n in WEIGHT_FORMATS}, **{n.lower(): n for n in MIXES},
                 **{n.lower(): n for n in UD_MIXES}}
        key = str(name).strip().lower()
        near = difflib.get_close_matches(key, list(canon), n=4, cutoff=0.6)
        hint = f" (nearest: {', '.join(canon[k] for k in near)})" if near else ""
        raise ValueError(f"unknown weight format {name!r}{hint}; known: ggml types {', '.join(WEIGHT_FORMATS)}; "
                         f"llama.cpp mixes {', '.join(MIXES)}; Unsloth's {', '.join(UD_MIXES)} (case-insensitive)")
    return f


def kv_format(name) -> Format:
    f = KV_FORMATS.get(name) if isinstance(name, str) else None
    if f is None and isinstance(name, str):
        f = {n.lower(): v for n, v in KV_FORMATS.items()}.get(name.strip().lower())
    if f is None:
        raise ValueError(f"unknown KV-cache format {name!r}; known: {', '.join(KV_FORMATS)}")
    return f


# Weight formats the C core executes (quantized ones through glmbench.core.quant).
EXECUTABLE_WEIGHT_FORMATS = ("f32", "f16", "bf16", "q8_0", "q4_0")


ROUTER_SUFFIX = "mlp.gate.weight"  # the MoE router (llama.cpp's ffn_gate_inp), never quantized

# HF tensor names -> llama.cpp's (gguf's tensor names, without "blk.N."), for the mix rules
_HF_TO_GGUF = {
    "input_layernorm": "attn_norm", "post_attention_layernorm": "ffn_norm",
    "self_attn.q_proj": "attn_q", "self_attn.k_proj": "attn_k", "self_attn.v_proj": "attn_v",
    "self_attn.o_proj": "attn_output", "self_attn.q_a_proj": "attn_q_a", "self_attn.q_b_proj": "attn_q_b",
    "self_attn.kv_a_proj_with_mqa": "attn_kv_a_mqa", "self_attn.kv_b_proj": "attn_kv_b",
    "self_attn.q_norm": "attn_q_norm", "self_attn.k_norm": "attn_k_norm",
    "self_attn.q_a_layernorm": "attn_q_a_norm", "self_attn.kv_a_layernorm": "attn_kv_a_norm",
    "mlp.gate_proj": "ffn_gate", "mlp.up_proj": "ffn_up", "mlp.down_proj": "ffn_down",
    "mlp.experts.gate_proj": "ffn_gate_exps", "mlp.experts.up_proj": "ffn_up_exps",
    "mlp.experts.down_proj": "ffn_down_exps", "mlp.shared_experts.gate_proj": "ffn_gate_shexp",
    "mlp.shared_experts.up_proj": "ffn_up_shexp", "mlp.shared_experts.down_proj": "ffn_down_shexp",
    "mlp.gate": "ffn_gate_inp", "mlp.gate.e_score_correction_bias": "exp_probs_b",
    # AFMoE's sigmoid output gate on the attention (gguf-py tensor_mapping: ATTN_GATE; quantized at the base
    # type: no llama-quant.cpp rule names attn_gate)
    "self_attn.gate_proj": "attn_gate",
    # Qwen2/3.5-MoE's and Qwen3-Next's sigmoid gate on the shared expert; GLM-5's DSA indexer
    "mlp.shared_expert_gate": "ffn_gate_inp_shexp", "self_attn.indexer.wq_b": "indexer.attn_q_b",
    "self_attn.indexer.wk": "indexer.attn_k", "self_attn.indexer.weights_proj": "indexer.proj",
    # a hybrid's Gated DeltaNet layer (llama.cpp's qwen35 / qwen3next, conversion/qwen.py): q, k, v as
    # attn_qkv (quantized as attn_v is: llama-quant.cpp's ATTENTION_QKV category), the output gate as
    # attn_gate; Qwen3-Next's fused in_proj_qkvz is split by the converter into those two, priced here
    # as one attn_qkv (its z rows then take attn_qkv's bumps: an approximation of a mix)
    "linear_attn.in_proj_qkv": "attn_qkv", "linear_attn.in_proj_z": "attn_gate",
    "linear_attn.in_proj_qkvz": "attn_qkv", "linear_attn.in_proj_b": "ssm_beta",
    "linear_attn.in_proj_a": "ssm_alpha", "linear_attn.in_proj_ba": "ssm_ba",
    "linear_attn.conv1d": "ssm_conv1d", "linear_attn.norm": "ssm_norm", "linear_attn.out_proj": "ssm_out",
}


# the released Mixtral / Phi-3.5-MoE checkpoints' expert names (block_sparse_moe.experts.E.w1 / w3 / w2, also what
# transformers 5 saves) -> glmbench's per-expert projections (models/model.py renames a state dict, models/gguf_file.py
# files a folder's stored bytes under them)
BLOCK_SPARSE_EXPERT_NAMES = {"w1": "gate_proj", "w3": "up_proj", "w2": "down_proj"}


def gguf_tensor_name(name: str) -> tuple[str, int | None]:
    """(llama.cpp tensor name without the layer prefix, layer index or None) for an HF or a GGUF
    tensor name: "model.layers.3.self_attn.v_proj.weight" -> ("attn_v.weight", 3),
    "lm_head.weight" -> ("output.weight", None); a GGUF name passes ("blk.3.attn_v.weight")."""
    top = {"model.embed_tokens.weight": "token_embd.weight", "lm_head.weight": "output.weight",
           "model.norm.weight": "output_norm.weight",
           # (Gemma 3n / 4's per-layer embedding table: gguf-py's PER_LAYER_TOKEN_EMBD)
           "model.embed_tokens_per_layer.weight": "per_layer_token_embd.weight"}
    if name in top:
        return top[name], None
    for prefix in ("model.layers.", "blk."):
        if name.startswith(prefix):
            i, _, rest = name[len(prefix):].partition(".")
            if not i.isdigit():
                break
            if prefix == "blk.":
                return rest, int(i)
            if rest in _HF_TO_GGUF:            # stacked experts, the score-correction bias
                base = _HF_TO_GGUF[rest]
                return base + (".bias" if base == "exp_probs_b" else ".weight"), int(i)
            stem, _, suffix = rest.rpartition(".")
            if stem in _HF_TO_GGUF:
                return f"{_HF_TO_GGUF[stem]}.{suffix}", int(i)
            return rest, int(i)
    return name, None


def _use_more_bits(i: int, n: int) -> bool:
    return i < n // 8 or i >= 7 * n // 8 or (i - n // 8) % 3 == 2


def mix_type(mix: Mix, name: str, shape, ctx: TensorContext) -> Format:
    """The ggml type llama.cpp's quantizer gives matrix `name` (HF or GGUF name) of `shape` in a file
    of type `mix`: llama_tensor_get_type (src/llama-quant.cpp, 2025) as far as its rules can be
    stated from a config: output/token_embd, attn_v and ffn_down bumps on the first/last layers
    (use_more_bits), attn_output, the 8-expert and the GQA >= 4 cases, IQ1/IQ2 rules and MXFP4_MOE;
    assumed: no imatrix, not Falcon, not the 70B attn_v rule. Rows that are not whole blocks fall
    back (row_format)."""
    ft, t = mix.ftype, mix.base.name
    g = GGML_TYPES
    gn, layer = gguf_tensor_name(name)
    shape = tuple(int(s) for s in shape)
    nx = shape[-1]
    n_layers, gqa, n_exp = ctx.n_layers, ctx.n_gqa, ctx.n_expert
    i = layer if layer is not None else 0
    iq12 = ft in ("IQ2_XXS", "IQ2_XS", "IQ1_S", "IQ2_S", "IQ2_M", "IQ1_M")
    iq2sm = ft in ("IQ2_S", "IQ2_M")
    if gn == "output.weight" or (not ctx.has_output and gn == "token_embd.weight"):
        if ft == "MXFP4_MOE" or nx % g[t].block:
            t = "q8_0"
        elif iq12 or ft == "IQ3_XXS":   # (the output's list holds IQ3_XXS too, unlike the layers' iq12 one)
            t = "q5_K"
        elif t != "q8_0":
            t = "q6_K"
    elif ft == "MXFP4_MOE":
        t = "mxfp4" if len(shape) > 2 and shape[0] > 1 else "q8_0"
    elif gn in ("token_embd.weight", "per_layer_token_embd.weight"):
        # (Gemma 3n / 4's per-layer table takes token_embd's rule, never the tied output's: 2025's
        # `name == "token_embd.weight" || name == "per_layer_token_embd.weight"`)
        if ft in ("IQ2_XXS", "IQ2_XS", "IQ1_S", "IQ1_M"):
            t = "q2_K"
        elif ft in ("IQ2_S", "IQ2_M", "IQ3_XXS"):
            t = "iq3_s"
        elif ft in ("TQ1_0", "TQ2_0"):
            t = "q4_K"
    elif iq12:
        if "attn_v.weight" in gn or "attn_qkv.weight" in gn:
            t = "q4_K" if gqa >= 4 or n_exp >= 4 else ("iq3_s" if iq2sm else "q2_K")
        elif n_exp == 8 and "attn_k.weight" in gn:
            t = "q4_K"
        elif "ffn_down" in gn:
            if i < n_layers // 8:
                t = "iq3_s" if iq2sm else "q2_K"
        elif "attn_output.weight" in gn:
            if n_exp == 8:
                t = "q5_K"
            elif ft in ("IQ1_S", "IQ1_M"):
                t = "iq2_xxs"
            elif iq2sm:
                t = "iq3_s"
    elif "attn_v.weight" in gn or "attn_qkv.weight" in gn:
        if ft == "Q2_K":
            t = "q4_K" if gqa >= 4 else "q3_K"
        elif ft == "Q2_K_S" and gqa >= 4:
            t = "q4_K"
        elif ft == "IQ3_XXS":
            t = "q4_K" if gqa >= 4 else "iq3_s"
        elif ft in ("IQ3_XS", "IQ3_S") and gqa >= 4:
            t = "q4_K"
        elif ft == "IQ3_M":
            t = "q4_K"
        elif ft == "Q3_K_M":
            t = "q5_K" if i < 2 else "q4_K"
        elif ft == "Q3_K_L":
            t = "q5_K"
        elif ft in ("IQ4_NL", "IQ4_XS") and gqa >= 4:
            t = "q5_K"
        elif ft in ("Q4_K_M", "Q5_K_M") and _use_more_bits(i, n_layers):
            t = "q6_K"
        elif ft == "Q4_K_S" and i < 4:
            t = "q5_K"
        if n_exp == 8:
            t = "q8_0"
    elif "attn_k.weight" in gn:
        if n_exp == 8:
            t = "q8_0"
        elif ft == "IQ3_XS":
            t = "iq3_xxs"
        elif ft == "IQ3_XXS":
            t = "iq2_s"
    elif "attn_q.weight" in gn:
        if ft == "IQ3_XS":
            t = "iq3_xxs"
        elif ft == "IQ3_XXS":
            t = "iq2_s"
    elif "ffn_down" in gn:
        if ft == "Q2_K":
            t = "q3_K"
        elif ft == "Q2_K_S":
            if i < n_layers // 8:
                t = "q4_K"
        elif ft == "IQ3_XXS":
            t = "q4_K" if i < n_layers // 8 else "q3_K"
        elif ft == "Q3_K_M":
            t = "q5_K" if i < n_layers // 16 else "q4_K"
        elif ft == "IQ3_M" and (i < n_layers // 8 or (n_exp == 8 and _use_more_bits(i, n_layers))):
            t = "q4_K"
        elif ft == "Q3_K_L":
            t = "q5_K"
        elif ft == "Q4_K_M":
            if _use_more_bits(i, n_layers):
                t = "q6_K"
        elif i < n_layers // 8 and ft in ("IQ4_NL", "IQ4_XS"):
            t = "q5_K"
        elif ft == "Q5_K_M" and _use_more_bits(i, n_layers):
            t = "q6_K"
        elif ft == "Q4_K_S" and i < n_layers // 8:
            t = "q5_K"
    elif "attn_output.weight" in gn:
        if n_exp == 8:
            if ft in ("Q2_K", "IQ3_XS", "IQ3_XXS", "Q3_K_S", "Q3_K_M", "IQ4_NL", "Q4_K_S", "Q4_K_M", "IQ3_S",
                      "IQ3_M", "IQ4_XS"):
                t = "q5_K"
        else:
            t = {"Q2_K": "q3_K", "IQ3_XXS": "iq3_s", "Q3_K_M": "q4_K", "Q3_K_L": "q5_K", "IQ3_M": "q4_K"}.get(ft, t)
    elif ("ffn_gate" in gn or "ffn_up" in gn) and ft == "IQ3_XS":
        if n_layers // 8 <= i < 7 * n_layers // 8:
            t = "iq3_xxs"
    return row_format(g[t], nx)


# Matrices llama.cpp's quantizer never quantizes whatever the file type (src/llama-quant.cpp,
# llama_tensor_get_type's caller: `quantize &= name.find("altup") == npos` and the like): Gemma 3n / 4's
# AltUp and LAuReL blocks and the per-layer-input model projection, matched in HF and GGUF names. They keep
# the converted file's type: f16 here (bf16, the other usual one, has the same bytes).
NEVER_QUANTIZED = ("altup", "laurel", "per_layer_model_proj")


def tensor_format(fmt, name: str, shape, ctx: TensorContext | None = None) -> Format:
    """The format tensor `name` of `shape` is held in, in a model stored as `fmt` (a Format, a Mix
    or a name): 1-D tensors (norm weights, biases, the router's score bias) and the MoE router stay
    unquantized (f32 in a GGUF, as llama.cpp's quantizer keeps them, src/llama-quant.cpp; bf16 in
    a vLLM checkpoint, which also keeps the embeddings and lm_head unquantized); a matrix uses
    row_format (rows that are not whole blocks fall back), or, in a llama.cpp mix, mix_type (which
    needs `ctx`), but f16 for the matrices the quantizer never quantizes (NEVER_QUANTIZED). The one statement of this rule, for the configs' byte counts, the cost model,
    the measured models and their floors."""
    fmt = weight_format(fmt)
    shape = tuple(shape)
    unq = GGML_TYPES["bf16" if fmt.kind == "vllm" else "f32"]
    # (a linear layer's short convolution, ssm_conv1d, is never quantized: llama-quant.cpp)
    if len(shape) < 2 or name.endswith((ROUTER_SUFFIX, "ffn_gate_inp.weight", "linear_attn.conv1d.weight",
                                        "ssm_conv1d.weight")):
        return unq
    if isinstance(fmt, Mix):
        if any(w in name for w in NEVER_QUANTIZED):
            return GGML_TYPES["f16"]
        if ctx is None:
            raise ValueError(f"weight format {fmt.name} is a llama.cpp mix: its per-tensor types need the model "
                             f"(a TensorContext: layers, GQA ratio, experts)")
        return mix_type(fmt, name, shape, ctx)
    if fmt.kind == "vllm" and gguf_tensor_name(name)[0] in ("token_embd.weight", "output.weight"):
        return unq
    return row_format(fmt, int(shape[-1]))


def tensor_nbytes(fmt, name: str, shape, ctx: TensorContext | None = None) -> int:
    """Exact stored bytes of tensor `name` of `shape` (tensor_format's rule; a 3-D tensor is a stack
    of matrices, each with its own scales)."""
    shape = tuple(int(s) for s in shape)
    f = tensor_format(fmt, name, shape, ctx)
    if len(shape) < 2:
        return f.nbytes(math.prod(shape))
    return math.prod(shape[:-2]) * f.matrix_nbytes(shape[-2], shape[-1])


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
                "n_prompt", "n_gen", "n_depth", "n_streams", "concurrency",
                # llama.cpp's partial offload (absent: everything on the cards)
                "n_gpu_layers", "n_cpu_moe", "override_tensor")


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


# id(frozen dataclass) -> (a weak reference to it, its _canonical form), dropped when it is collected
_CANONICAL: dict = {}


def _canonical(o):
    """`o` as plain JSON values with a fixed order: dataclasses (every field, the class name
    first), mappings (keys sorted as strings), sequences, NumPy scalars and arrays. A frozen
    dataclass's form is kept while the object lives (_CANONICAL: its fields never change, and a
    ModelConfig or runtime profile is canonicalised for every point a sweep fingerprints); callers
    only read it."""
    if o is None or isinstance(o, (bool, str)):
        return o
    if isinstance(o, (int, np.integer)):
        return int(o)
    if isinstance(o, (float, np.floating)):
        f = float(o)
        return f if math.isfinite(f) else repr(f)  # nan/inf as text: JSON has no such numbers
    if dataclasses.is_dataclass(o) and not isinstance(o, type):
        frozen = type(o).__dataclass_params__.frozen
        hit = _CANONICAL.get(id(o)) if frozen else None
        if hit is not None and hit[0]() is o:
            return hit[1]
        d = {"__class__": type(o).__name__, **{f.name: _canonical(getattr(o, f.name)) for f in dataclasses.fields(o)}}
        if frozen:
            try:
                ref = weakref.ref(o, lambda _, k=id(o): _CANONICAL.pop(k, None))
            except TypeError:    # (a slotted class without weak references: not kept)
                return d
            _CANONICAL[id(o)] = (ref, d)
        return d
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


def check_table(d, where: str, known, required) -> dict:
    """`d` as a table of fields (a profile read from a file or given as a dict): a ValueError
    naming `where` when it is not a dict, has a field not in `known`, or lacks one of `required`."""
    if not isinstance(d, dict):
        raise ValueError(f"{where}: expected a table of fields, got {type(d).__name__}")
    unknown = sorted(set(d) - set(known))
    if unknown:
        raise ValueError(f"{where}: unknown field `{unknown[0]}` (known: {', '.join(sorted(known))})")
    for k in required:
        if k not in d:
            raise ValueError(f"{where}: field `{k}` is missing")
    return d


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

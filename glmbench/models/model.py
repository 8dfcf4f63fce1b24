"""Whole models on the C core: embeddings -> decoder layers -> final norm -> lm_head.

    m = glmbench.Model("glm-4.7-flash" | ModelConfig | config dict, state_dict=None | {hf_name: array},
                       weights="bf16", kv="f16", max_context=4096, seed=0,
                       mla_strategy="flash")
    logits = m.prefill(tokens)        # [T, vocab]; continues from what the cache holds
    logits = m.decode(token)          # [vocab]
    m.reset()

A decoder layer is pre-norm (docs/SOURCES.md §1): h = x + Attn(RMSNorm(x)); y = h + MLP(RMSNorm(h)).
Attention is `attention.mla_block` or `attention.gqa_block`; the MLP is `ops.swiglu` for dense
layers and `ops.moe` (router + routed experts + shared experts) for MoE layers.

Gemma 2 and 3 (gemma2, gemma3_text; HF modeling_gemma2/3): embeddings times sqrt(hidden); sandwich norms
h = x + N2(Attn(N1(x))); y = h + N4(MLP(N3(h))) with (1 + w) RMSNorms (an HF state_dict's norm
weights w are held as 1 + w); q/k norms; GeGLU MLP (gelu_pytorch_tanh, `ops.geglu`); 5 of 6 layers
attend within a sliding window (the cache keeps those layers as rings: `KVCache.gqa(windows=)`)
with rope by the local base (Gemma 3; Gemma 2: every other layer windowed, one rope base, and
attention logits soft-capped, attn_logit_softcapping); the softmax scale is
query_pre_attn_scalar ** -0.5; tied head; final_logit_softcapping when set. A windowed model's prefill runs in chunks of at most
`window_chunk` tokens (the most a ring layer takes at once). Their layers run as one C call each
(csrc/layer.c: sandwich norms, GeGLU, window, local rope base and soft-capping), as the others do.

Gemma 1 (gemma; HF modeling_gemma): Llama's pre-norm layer with Gemma's embeddings times sqrt(hidden), (1 + w)
RMSNorms (held as 1 + w, as Gemma 2 / 3's) and the GeGLU MLP (ops.geglu; SwiGLU where a config says hidden_act silu);
no soft-capping, no windows, softmax scale head_dim ** -0.5, tied head. No C layer (its dense MLP is SwiGLU):
forward_py runs it op by op.

GLM-4-9B-Chat as transformers ports it (glm; HF modeling_glm) and InternLM3 (internlm3; HF's LlamaForCausalLM): Llama's
pre-norm layer, one C call each. GLM's q/k/v biases and its rope on the first half of each head in interleaved pairs
(rope_dim, rope_layout "interleaved") are the C layer's own arguments; its checkpoint's mlp.gate_up_proj is split into
gate and up rows on input (`_unfused`, as Phi-3's).

Gemma 4 (gemma4_text, and the gemma4 wrapper's text model; HF modeling_gemma4, transformers 5.25): Gemma 3's
layer with plain (times w) RMSNorms; q / k RMSNorms per head, a weightless v norm, softmax scale 1; the
windowed layers plain rope by the local base, the global ones their own head dim and KV heads
(global_head_dim, global_kv_heads) and "proportional" rope (ModelConfig.layer_rope; a zero frequency leaves
its pair unturned, ops.rope_proportional), their values the raw key projection where attention_k_eq_v; the last
kv_shared_layers layers project no k / v and attend over the cache layer of the last earlier layer of their
kind (cfg.kv_source): the cache holds the owning layers only, the two geometries in two KVCaches standing as
one (core.kvcache.KVCacheGroup); per-layer embeddings (Model.per_layer_inputs: a [vocab, layers x P] table
and a projection of the input embedding, one P-wide input per layer, which each layer gates into its
residual); each layer's output times layer_scalar; the MoE models run the GeGLU experts beside the dense
MLP (held as the shared expert) with Gemma 4's router (Layer._gemma4_moe). No C layer: `Layer._forward_gemma4`
calls the C ops one by one.

GPT-OSS (gpt_oss; HF modeling_gpt_oss): q/k/v/o biases, YaRN rope, a learned sink logit per head in
each softmax's denominator, every other layer windowed (rings, as Gemma's); every layer MoE with a
biased router (softmax over the top-k logits) and biased experts with the clamped SwiGLU
(up + 1) * g * sigmoid(1.702 g). HF's interleaved gate_up_proj [E, D, 2F] and mlp.router are split
and renamed on input (held as mlp.experts.{gate,up,down}_proj[_bias], mlp.gate.{weight,bias}).
No C layer yet: `Layer._forward_gpt_oss` runs the sink attention (attention.gqa_sink_block) and the
MoE (ops.moe_gpt_oss) as NumPy float32 around the C matmuls, so its measured speed is not a C kernel's.

Cohere (cohere: Command-R, Command-R+; cohere2: Command-A, Command-R7B; HF modeling_cohere/2): one
LayerNorm per layer (weight only: ops.layer_norm) with attention and the SwiGLU MLP side by side,
y = x + Attn(LN(x)) + MLP(LN(x)); interleaved rope; Command-R+'s LayerNorm per q / k head (HF's
[heads, head_dim] weights held flat); Cohere2's three of four layers windowed (rings) and rotating,
its global layers without rope; tied head, final LayerNorm, logits times logit_scale. No C layer:
`Layer._forward_cohere` calls the C ops one by one.

OLMoE (olmoe; HF modeling_olmoe): Llama's pre-norm layer with one RMSNorm over each token's whole q / k projection
(all heads at once: attention.gqa_block with cfg.qk_norm_all_heads), q / k / v clamped to clip_qkv where set, every
layer MoE (softmax top-k, not renormalized unless norm_topk_prob). Granite 3.x (granite, granitemoe; HF
modeling_granite / modeling_granitemoe): Llama's layer (Granite MoE: experts on every layer, HF's block_sparse_moe
names renamed, granitemoe_state_dict) with the multipliers: embeddings times embedding_multiplier, each sub-layer's
output times residual_multiplier before the residual add, softmax scale attention_multiplier, logits divided by
logits_scaling. Neither has a C layer: forward_py runs them op by op.

Hunyuan (hunyuan_v1_dense, hunyuan_v1_moe; HF modeling_hunyuan_v1_dense / _moe): Llama's pre-norm layer with the
per-head q / k RMSNorms (query_layernorm / key_layernorm) applied to the rotated q / k (attention.gqa_block with
cfg.qk_norm_after_rope); the released configs' NTK-alpha rope as plain rope by the base theta x alpha^(d / (d - 2))
(rope_type "ntk_alpha"); the MoE (softmax top-k renormalised) beside the shared MLP, HF's mlp.gate.wg and
mlp.shared_mlp renamed. Phi-3.5-MoE (phimoe; HF modeling_phimoe): pre-norm LayerNorms with biases (the final one
too), q / k / v / o biases, every layer MoE routed by the sparsemixer as HF runs it in eval mode (two experts, each
weighted by a softmax over the logits within its jitter band: ops.sparsemixer_route; `Layer._forward_phimoe`), an
lm_head bias. Neither has a C layer: forward_py runs them op by op.

dots.llm1 (dots1; HF modeling_dots1): the common pre-norm layer, nothing of its own: Qwen3's per-head q / k RMSNorms
before rope (q / k / v / o biased where attention_bias), DeepSeek-V3's grouped sigmoid router with the correction
bias and the shared experts (`ops.moe`), windows on the layer_types' sliding layers; one C call per layer.
Arcee (arcee: AFM-4.5B; HF modeling_arcee): Llama's pre-norm layer with an ungated MLP, down(relu(up h)^2)
(`Layer._dense_mlp`, `_relu2_mlp`: hidden_act relu2), YaRN rope where the config scales it. Apertus (apertus; HF
modeling_apertus): Llama's pre-norm layer (its attention_layernorm / feedforward_layernorm read as input_layernorm /
post_attention_layernorm, _NORM_ALIAS) with per-head q / k RMSNorms before rope and the ungated MLP
down(xielu(up h)), the xIELU from the layer's own mlp.act_fn.alpha_p / alpha_n / beta / eps (ops.xielu, NumPy
float32); llama3 rope. Neither has a C layer (the C layer's MLP is SwiGLU): forward_py runs them op by op.
LongRoPE (phi3, phimoe; rope_type "longrope", ModelConfig.longrope): each prefill / decode call turns its tokens by
the short or the long factors by the sequence length after it (n_past + its tokens; HF: max(position_ids) + 1), the
same for every piece of a prompt prefilled in window_chunk pieces; the C layer keeps a second plan with the long
factors (Layer._long_plan). A cache that grows past original_max_position_embeddings keeps its keys as turned
(by the short factors) and warns (LongRopeCrossing): HF's forward with a cache does the same, HF's generate()
re-runs the whole sequence, which reset() + prefill reproduces.

Nemotron (nemotron: Nemotron-4 / Minitron / Nemotron-Mini; HF modeling_nemotron): pre-norm LayerNorm1P (weight + 1,
held as 1 + w by _gemma_norm, and a bias: _biased_layer_norm), Llama's attention with partial rotary, the ungated relu2
MLP with its optional biases (`Layer._forward_nemotron`); no C layer.

AFMoE (afmoe: Arcee's Trinity; HF modeling_afmoe): Gemma's sandwich of four RMSNorms with plain weights (HF's
pre_mlp_layernorm / post_mlp_layernorm held as pre_ / post_feedforward_layernorm, the router mlp.router.gate and
mlp.expert_bias as mlp.gate.weight / .e_score_correction_bias: _AFMOE) around the attention (per-head q / k RMSNorm,
rope on the sliding layers only, the output times sigmoid(gate_proj h) before o_proj: attention.gqa_block) and the
SwiGLU MLP or the sigmoid MoE beside the shared MLP (`Layer._forward_afmoe`); mup_enabled's embeddings times
sqrt(hidden) as an embedding_multiplier. No C layer: forward_py runs it op by op.

OLMo 2 / 3 and EXAONE 4 (olmo2, olmo3, exaone4; HF modeling_olmo2 / _olmo3 / _exaone4): post-norm layers,
h = x + N1(Attn(x)); y = h + N2(MLP(h)) (post_attention_layernorm, post_feedforward_layernorm; no norm before
either: `Layer._forward_post_norm`, op by op, no C layer); OLMo's q / k RMSNorms over all heads at once, EXAONE's
per head; OLMo 3's sliding layers windowed (rings) with plain rope by their own base, its full layers by the
config's scaled rope; EXAONE 4's sliding layers windowed and rotating, its global ones without rope
(cfg.nope_layers). SmolLM3 (smollm3): Llama's layer, every fourth (no_rope_layers) without rope: those layers
run forward_py (the C layer always rotates), the others one C call each.

Hybrids (qwen3_next: Qwen3-Next; qwen3_5_text / qwen3_5_moe_text: Qwen3.5; HF modeling_qwen3_next /
modeling_qwen3_5): three of four layers are Gated DeltaNet linear attention (`Layer._linear_attn`:
in_proj, ops.causal_conv1d with the last K - 1 inputs carried, ops.gated_delta_rule over a recurrent
state carried in `Layer.rstate`, the gated RMSNorm, out_proj; Qwen3-Next's q/k/v/z interleaved per
key head), the fourth GQA attention whose q_proj also gives a sigmoid output gate; (1 + w) RMSNorms
(held as 1 + w); the MoE's shared expert scaled by a sigmoid gate. The KV cache holds the attention
layers only (`_cache_layer`). A hybrid's GGUF file is priced, not read back as weights
(models/checkpoint.py says why). No C layer: `Layer._forward_hybrid` calls the C ops one by one.

Weights are kept under their HF names relative to `model.layers.{i}.` (plus `model.embed_tokens.weight`,
`model.norm.weight`, `lm_head.weight`); the set of tensors is ModelConfig.tensor_shapes(). Routed
experts are held as three stacked tensors `mlp.experts.gate_proj` [E, F, D], `mlp.experts.up_proj`
[E, F, D], `mlp.experts.down_proj` [E, D, F] (the layout `ops.moe` reads); HF's fused
`mlp.experts.gate_up_proj` [E, 2F, D] + `mlp.experts.down_proj` (transformers 5.x) and per-expert
`mlp.experts.{e}.gate_proj.weight` (4.x) are accepted on input, and so are Phi-3's fused
`self_attn.qkv_proj` / `mlp.gate_up_proj` (split into q/k/v and gate/up rows, `_unfused`).

Weights given in a state_dict must be finite: each tensor the model takes is checked once, here, at load
(quant.nonfinite: every value of a float tensor, the f16 scales of a block format's blocks; ValueError naming
the tensor and where), except the arrays a loader already checked (models/checkpoint.py's `finite_checked`). The
C ops check their activations on every call, not their weights (a weight's scan would cost as much as the
GEMV reading it: docs/API.md "Ops").

weights="stored" (with a state_dict, e.g. from models/checkpoint.py) keeps each matrix in the
format it comes in (f32, f16, bf16 bits, q8_0/q4_0 QTensor). Otherwise matrices are stored in the weight format (f32 float32, f16 float16, bf16 uint16 bits, q8_0/q4_0
quant.QTensor); norm weights, router weights and biases stay float32 (tiny, and the ops read them as f32).

Random weights: every tensor is drawn from its own stream, seeded by (seed, tensor name), so a
layer built alone (layer sampling in glmbench.measure) equals the same layer in the full model,
and each tensor is generated straight into its format (no float32 copy of the whole model).
Matrices are N(0, 1/fan_in) so every projection keeps activations at unit scale through all layers.
"""
from __future__ import annotations

import re
import time
import warnings
import zlib
from typing import Callable, Iterable, Mapping

import numpy as np

from glmbench import vocab
from glmbench.core import attention
from glmbench.core import ops as _ops
from glmbench.core.attention import KVBSplit, _hf_deinterleaves
from glmbench.core.kvcache import KVCache, KVCacheGroup
from glmbench.core.quant import KP_FORMATS, QTensor, _fmt_id, fuse_rows, nonfinite, quantize, quantize_chunks, stacked
from glmbench.models import configs
from glmbench.models.configs import layer_kinds, route_groups
from glmbench.core._loader import _core

__all__ = ["Model", "Layer", "build_layer", "random_weight", "to_format", "layer_kinds", "route_groups", "STORED",
           "stored_format"]

WEIGHT_FORMATS = vocab.EXECUTABLE_WEIGHT_FORMATS  # q8_0/q4_0: ggml blocks, glmbench/core/quant.py
# weights="stored": a given state_dict's tensors are kept in the format they come in (a checkpoint's
# f32/f16/bf16 arrays and q8_0/q4_0 QTensors, models/checkpoint.py); 1-D tensors and the router f32
STORED = "stored"


def stored_format(a) -> str:
    """The executable format an array (or QTensor) is held in as given (a KVBSplit: 'k_fmt+v_fmt')."""
    if isinstance(a, (QTensor, KVBSplit)):
        return a.fmt
    return {np.dtype(np.float16): "f16", np.dtype(np.uint16): "bf16"}.get(getattr(a, "dtype", None), "f32")


def _tensor_fmt(weights: str, name: str, shape, a) -> str:
    if weights == STORED:
        if len(shape) < 2 or name.endswith(vocab.ROUTER_SUFFIX):
            return "f32"
        return stored_format(a)
    return vocab.tensor_format(weights, name, shape).name
MLA_STRATEGIES = vocab.MLA_STRATEGIES


# ---- configs ------------------------------------------------------------------------------
def _load_config(config):
    if isinstance(config, configs.ModelConfig):
        return config
    return configs.load(config)


# ---- weight formats -----------------------------------------------------------------------
def to_format(a, fmt: str) -> np.ndarray:
    """A float array (or uint16 bfloat16 bits) as stored in weight format `fmt` ("f32" float32,
    "f16" float16, "bf16" uint16 bits, "q8_0"/"q4_0" quant.QTensor)."""
    if isinstance(a, KVBSplit):   # GGUF's k_b / v_b (weights="stored" keeps them split)
        if a.fmt == fmt:
            return a
        a = a.joined()
    if isinstance(a, QTensor):
        if a.fmt == fmt:
            return a  # already stored in this format (a GGUF's q8_0/q4_0 blocks, as read)
        a = a.dequantize()
    if isinstance(a, np.ndarray) and a.dtype == np.uint16 and fmt != "bf16":
        a = _to_f32(a)  # bfloat16 bits: widen exactly before converting, never cast the integers
    if fmt == "f32":
        return np.ascontiguousarray(a, dtype=np.float32)
    if fmt == "f16":
        return np.ascontiguousarray(a, dtype=np.float16)
    if fmt == "bf16":
        if isinstance(a, np.ndarray) and a.dtype == np.uint16:
            return np.ascontiguousarray(a)
        return vocab.to_bf16(np.asarray(a, dtype=np.float32))
    if fmt in ("q8_0", "q4_0"):  # ggml blocks (glmbench/quant.py): a QTensor
        return quantize(np.ascontiguousarray(_to_f32(np.asarray(a))), fmt)
    raise ValueError(f"`weights` must be one of {WEIGHT_FORMATS}, got {fmt!r}")


def _to_f32(a: np.ndarray) -> np.ndarray:
    if hasattr(a, "dequantize"):  # a quant.QTensor (e.g. rows of a quantized embedding)
        return a.dequantize()
    if a.dtype == np.uint16:  # bfloat16 bits
        return (a.astype(np.uint32) << np.uint32(16)).view(np.float32)
    return np.asarray(a, dtype=np.float32)


def _rng(seed: int, name: str) -> np.random.Generator:
    return np.random.default_rng([int(seed) & 0xFFFFFFFF, zlib.crc32(name.encode())])


# Elements generated per chunk: bounds the float32 temporary to 64 MB whatever the tensor size.
_CHUNK_ELEMS = 1 << 24


def random_weight(name: str, shape: tuple, fmt: str, seed: int, std: float) -> np.ndarray:
    """N(0, std^2) tensor `shape` in format `fmt`, from the stream of (seed, name)."""
    if fmt in ("q8_0", "q4_0"):  # the same values, quantized chunk by chunk (glmbench/quant.py)
        g, n = _rng(seed, name), int(np.prod(shape))
        return quantize_chunks((g.standard_normal(min(_CHUNK_ELEMS, n - s), dtype=np.float32) * np.float32(std)
                                for s in range(0, n, _CHUNK_ELEMS)), shape, fmt)
    dtype = {"f32": np.float32, "f16": np.float16, "bf16": np.uint16}[fmt]
    out = np.empty(shape, dtype=dtype)
    flat = out.reshape(-1)
    g = _rng(seed, name)
    for s in range(0, flat.size, _CHUNK_ELEMS):
        e = min(flat.size, s + _CHUNK_ELEMS)
        chunk = g.standard_normal(e - s, dtype=np.float32)
        chunk *= np.float32(std)
        flat[s:e] = to_format(chunk, fmt)
    return out


# ---- one decoder layer --------------------------------------------------------------------
def _layer_tensors(cfg, index: int) -> dict:
    """HF names (relative to `model.layers.{index}.`) -> shape, from ModelConfig.tensor_shapes so
    the model holds exactly the tensors whose bytes the config counts."""
    p = f"model.layers.{index}."
    return {k[len(p):]: s for k, s in cfg.tensor_shapes().items() if k.startswith(p)}


def _init_std(name: str, shape: tuple, cfg) -> float | None:
    """Std of the random init; None means ones (norm weights)."""
    if name.endswith("e_score_correction_bias"):
        # Spread comparable to the sigmoid scores themselves, so the bias really changes which
        # experts are chosen (it is what noaux_tc load balancing learns).
        return 0.1
    if len(shape) == 1:
        # (Gemma 4's layer_scalar and its router's input / per-expert scales: ones, as HF initialises them)
        return None if name.endswith(("norm.weight", "layer_scalar", "mlp.gate.scale", "mlp.gate.per_expert_scale")) \
            else 0.02
    return 1.0 / np.sqrt(shape[-1])


_EXPERTS = ("mlp.experts.gate_proj", "mlp.experts.up_proj", "mlp.experts.down_proj")
# Hunyuan's per-head q / k norms (HF query_layernorm / key_layernorm, ModelConfig.tensor_shapes' names) as the
# attention reads them (attention.gqa_block: q_norm / k_norm)
_ATTN_ALIAS = {"query_layernorm.weight": "q_norm.weight", "key_layernorm.weight": "k_norm.weight"}
# Apertus's two norms (HF ApertusDecoderLayer's attention_layernorm / feedforward_layernorm, ModelConfig.tensor_shapes'
# names) as Llama's layer reads them
_NORM_ALIAS = {"attention_layernorm.weight": "input_layernorm.weight",
               "feedforward_layernorm.weight": "post_attention_layernorm.weight"}
# HF XIELUActivation's initial values (transformers 5.25: alpha_p_init 0.8, alpha_n_init 0.8, beta 0.5, eps -1e-6;
# the parameters held before their softplus: log(expm1(0.8)), log(expm1(0.8 - 0.5))), a random model's xIELU
_XIELU_INIT = {"mlp.act_fn.alpha_p": (np.log(np.expm1(0.8)),), "mlp.act_fn.alpha_n": (np.log(np.expm1(0.3)),),
               "mlp.act_fn.beta": 0.5, "mlp.act_fn.eps": -1e-6}


class Layer:
    """One decoder layer: its weights (HF names relative to `model.layers.{index}.`) and forward."""

    def __init__(self, cfg, index: int, kind: str, weights: dict):
        self.cfg, self.index, self.kind = cfg, int(index), kind
        if cfg.model_type == "apertus":
            weights = {_NORM_ALIAS.get(k, k): v for k, v in weights.items()}
        self.w = weights
        self.attn = {_ATTN_ALIAS.get(k[len("self_attn."):], k[len("self_attn."):]): v for k, v in weights.items()
                     if k.startswith("self_attn.")}
        if kind == "moe":
            self._route = dict(top_k=int(cfg.n_experts_per_tok), scoring=cfg.router_scoring,
                               bias=weights.get("mlp.gate.e_score_correction_bias"), **route_groups(cfg),
                               routed_scaling_factor=float(cfg.routed_scaling_factor or 1.0))
            sh = "mlp.shared_experts."
            self._shared = ((weights[sh + "gate_proj.weight"], weights[sh + "up_proj.weight"],
                             weights[sh + "down_proj.weight"]) if sh + "gate_proj.weight" in weights else None)
        # matrices that read the same input stacked into one (quant.fuse_rows: views, no added
        # memory, the same numbers): q_a + kv_a, gate + up, the shared expert's gate + up
        pairs = [("self_attn.q_a_proj.weight", "self_attn.kv_a_proj_with_mqa.weight"),
                 ("mlp.gate_proj.weight", "mlp.up_proj.weight"),
                 ("mlp.shared_experts.gate_proj.weight", "mlp.shared_experts.up_proj.weight")]
        for a, b in pairs:
            if a in weights and b in weights:
                fuse_rows(weights[a], weights[b])
        self.gemma4 = cfg.model_type in configs.GEMMA4_FAMILIES
        # Gemma 4's weightless RMSNorms (v_norm over the value head, the router's input norm) as a weight of ones
        self._ones = {n: np.ones(n, np.float32) for n in (cfg.layer_v_dim(index) or cfg.layer_head_dim(index),
                                                          cfg.hidden_size)} if self.gemma4 else {}
        self.linear = index in frozenset(cfg.linear_layers)   # a hybrid's Gated DeltaNet layer
        self.rstate = None       # its recurrent state: (conv inputs [K-1, C], S [Hv, dk, dv]); None: empty
        self.last_counts = None  # tokens per expert in the last MoE call (how many experts were read)
        self._plan = None  # _core.layer_forward's capsule (False: forward_py runs)
        self._plan_long = None  # longrope: the same layer's capsule with the long factors (built on first use)
        self._plan_decode = False  # the plan holds block-format matrices: one token at a time only

    @property
    def nbytes(self) -> int:
        return int(sum(a.nbytes for a in self.w.values()))

    def forward(self, x, cache, cache_layer: int, positions, mla_strategy: str = "flash", n_out: int | None = None,
                ple=None, rope_seq_len: int | None = None):
        """The layer on x[T, hidden] at positions[T], appending to `cache` layer `cache_layer`. Runs as
        one C call (csrc/layer.c, `_core.layer_forward`) when every matrix is an ndarray (sliding
        windows, soft-capping, Gemma 2/3's sandwich norms and GeGLU included), and at decode (T = 1,
        absorbed/flash MLA) also with the block formats the C core reads packed (q8_0, q4_0, the K
        and IQ formats, GGUF's k_b / v_b: the same kernels forward_py calls, the same numbers);
        otherwise, and as the readable definition, `forward_py`.

        n_out: None (every row out), or k in [1, T]: the attention on all T tokens (the cache gets them
        all), the rest of the layer on the last k rows only, returned as [k, hidden]. Model.prefill
        uses it in the last layer when only the last token's logits are wanted, as llama.cpp's graphs
        do (the other rows' outputs there feed nothing).

        ple: Gemma 4's per-layer input of this layer, [T, ple_size] float32 (Model.per_layer_inputs), where
        the config has per-layer embeddings; None otherwise.

        rope_seq_len: the length of the sequence this call belongs to, which picks longrope's short or long
        factors (ModelConfig.rope_long; Model.prefill passes n_past + its tokens, so every piece of a prompt
        turns alike); None: the last of `positions` + 1 (HF's max(position_ids) + 1). Other ropes ignore it."""
        vocab.mla_strategy(mla_strategy)
        if n_out is not None:
            T = int(np.shape(x)[0]) if np.ndim(x) == 2 else None
            if isinstance(n_out, bool) or not isinstance(n_out, (int, np.integer)) or T is None or not 1 <= n_out <= T:
                raise ValueError(f"`n_out` must be None or an int in [1, {T}] (the rows of x), got {n_out!r}")
            n_out = int(n_out)
        if not self.runs_in_c(np.shape(x)[0] if np.ndim(x) == 2 else -1, mla_strategy):
            return self.forward_py(x, cache, cache_layer, positions, mla_strategy, n_out=n_out, ple=ple,
                                   rope_seq_len=rope_seq_len)
        plan = self._plan
        if not isinstance(x, np.ndarray):
            raise TypeError(f"`x` must be a numpy.ndarray, got {type(x).__name__}")
        p = np.asarray(positions)
        if p.dtype.kind not in "iu":
            raise TypeError(f"`positions` must be integers, got {p.dtype}")
        if self.cfg.rope_type == "longrope" and self.cfg.rope_long(_rope_seq_len(p, rope_seq_len)):
            plan = self._long_plan()
        if getattr(cache, "kind", None) != self.cfg.attention:
            raise ValueError(f"`cache` must be a {self.cfg.attention.upper()} KVCache, got {cache!r}")
        if self.cfg.attention != "mla":   # the check attention.gqa_block makes
            win, cl = self.cfg.layer_window(self.index), int(cache_layer)
            cw = cache.windows[cl] if 0 <= cl < cache.n_layers else 0
            if cw and cw != win:
                raise ValueError(f"cache layer {cl} keeps a window of {cw} tokens but model layer {self.index} "
                                 f"attends to {'all tokens' if win is None else f'{win} tokens'}")
        y, counts = _core.layer_forward(plan, x, cache, int(cache_layer), p.astype(np.int64, copy=False),
                                        mla_strategy, -1 if n_out is None else n_out)
        if self.kind == "moe":
            self.last_counts = counts
        return y

    def runs_in_c(self, n_tokens: int, mla_strategy: str = "flash") -> bool:
        """Whether `forward` on n_tokens rows runs as one C call (False: forward_py)."""
        return self._c_plan() is not None and not (self._plan_decode and (n_tokens != 1 or mla_strategy == "naive"))

    def _c_plan(self):
        """The capsule `_core.layer_forward` runs (built on first use), or None where forward_py must
        run: a matrix in a form the C layer does not read (see _wspec), a tensor missing."""
        if self._plan is None:
            self._plan = False
            try:
                spec = self._c_spec()
            except (KeyError, _NoPlan):
                spec = None  # forward_py names the missing tensor
            if spec is not None:
                self._plan = _core.layer_plan(spec)
                self._plan_decode = any(isinstance(v, tuple) for v in spec.values()) or "k_b" in spec
        return self._plan or None

    def _long_plan(self):
        """longrope's long-factor capsule (the short one is _c_plan's): the same spec, the long inv_freq and
        attention factor (ModelConfig.layer_rope past original_max_position_embeddings)."""
        if self._plan_long is None:
            self._plan_long = _core.layer_plan(self._c_spec(seq_len=self.cfg.longrope.original + 1))
        return self._plan_long

    def _c_spec(self, seq_len: int | None = None) -> dict | None:
        """The layer as _core.layer_plan takes it; seq_len picks longrope's factors (layer_rope), None the short."""
        cfg, w, a = self.cfg, self.w, self.attn
        gemma = cfg.model_type in configs.GEMMA_FAMILIES   # sandwich norms and GeGLU (_forward_gemma)
        if cfg.attention_sinks or cfg.layer_norm or cfg.linear_layers or cfg.attn_output_gate or self.gemma4 or \
                (gemma and not all(isinstance(v, np.ndarray) for v in w.values())) or cfg.qk_norm_all_heads or \
                cfg.clip_qkv or cfg.residual_multiplier is not None or cfg.post_norms or \
                not cfg.layer_rotates(self.index) or cfg.qk_norm_after_rope or cfg.norm_bias or \
                (self.kind == "dense" and not cfg.mlp_gated) or cfg.model_type in configs.GEMMA1_FAMILIES:
            # GPT-OSS, Cohere, the hybrids, Gemma 4: no C layer yet (_forward_gpt_oss, _forward_cohere,
            # _forward_hybrid, _forward_gemma4); Gemma 2 / 3: float matrices only; OLMoE's q / k norms over all
            # heads and clip_qkv, Granite's residual_multiplier: forward_py (attention.gqa_block); OLMo 2 / 3's and
            # EXAONE 4's post-norm layers (_forward_post_norm), SmolLM3's NoPE layers (the C layer always rotates);
            # Hunyuan's q / k norms after rope (attention.gqa_block), Phi-3.5-MoE's layer (_forward_phimoe); Arcee's
            # ungated MLP and Gemma 1's GeGLU (the C layer's is SwiGLU: _dense_mlp)
            return None
        mla = cfg.attention == "mla"
        rot = cfg.layer_rope(self.index, seq_len) if not mla else dict(
            theta=cfg.rope_theta, inv_freq=cfg.rope_inv_freq(), attention_factor=cfg.rope_attention_factor())
        s = dict(attention=int(mla), D=int(cfg.hidden_size), eps=float(cfg.rms_norm_eps),
                 ln_in=w["input_layernorm.weight"], ln_post=w["post_attention_layernorm.weight"],
                 theta=float(rot["theta"]), attn_factor=float(rot["attention_factor"]),
                 scale=float(cfg.softmax_scale or 0.0), rope_layout=_ops._ROPE_LAYOUTS[cfg.rope_layout],
                 inv_freq=rot["inv_freq"], wo=_wspec(a["o_proj.weight"]), bo=a.get("o_proj.bias"))
        if mla:
            s.update(rot_dim=int(cfg.qk_rope_head_dim), H=int(cfg.n_heads), Dn=int(cfg.qk_nope_head_dim),
                     Dr=int(cfg.qk_rope_head_dim), Dvm=int(cfg.v_head_dim), R=int(cfg.kv_lora_rank),
                     QL=int(cfg.q_lora_rank or 0), latent_eps=float(getattr(cfg, "latent_norm_eps", 1e-6)),
                     deinterleave=int(_hf_deinterleaves(cfg)), kv_a=_wspec(a["kv_a_proj_with_mqa.weight"]),
                     kv_a_bias=a.get("kv_a_proj_with_mqa.bias"), kv_a_ln=a["kv_a_layernorm.weight"])
            kvb = a["kv_b_proj.weight"]
            if isinstance(kvb, KVBSplit):   # GGUF's k_b / v_b, read as mla_attention reads them at decode
                kb, kf, vb, vf = kvb._args()
                s.update(k_b=kb, k_fmt=kf, v_b=vb, v_fmt=vf, k_packed=kvb.packed_k(), v_packed=kvb.packed_v())
            elif isinstance(kvb, np.ndarray):
                s.update(kv_b=kvb)
            else:
                raise _NoPlan   # a quantized joined kv_b: forward_py (mla_attention dequantizes it)
            if cfg.q_lora_rank:
                qa, kva = a["q_a_proj.weight"], a["kv_a_proj_with_mqa.weight"]
                s.update(q_a=_wspec(qa), q_b=_wspec(a["q_b_proj.weight"]), q_a_bias=a.get("q_a_proj.bias"),
                         q_a_ln=a["q_a_layernorm.weight"], qa_kva=_stacked_spec(qa, kva, a.get("q_a_proj.bias"),
                                                                                a.get("kv_a_proj_with_mqa.bias")))
            else:
                s.update(q_proj=_wspec(a["q_proj.weight"]))
        else:
            s.update(rot_dim=int(cfg.rope_dim), Hq=int(cfg.n_heads), Hkv=int(cfg.n_kv_heads), Dh=int(cfg.head_dim),
                     Dv=int(cfg.v_head_dim or cfg.head_dim), wq=_wspec(a["q_proj.weight"]), wk=_wspec(a["k_proj.weight"]),
                     wv=_wspec(a["v_proj.weight"]), bq=a.get("q_proj.bias"), bk=a.get("k_proj.bias"),
                     bv=a.get("v_proj.bias"))
            if cfg.qk_norm:
                s.update(q_norm=a["q_norm.weight"], k_norm=a["k_norm.weight"])
            # the layer's sliding window (Mistral, Gemma) and Gemma 2's attention logit soft-capping
            s.update(window=int(cfg.layer_window(self.index) or 0),
                     softcap=float(getattr(cfg, "attn_logit_softcapping", None) or 0.0))
        if gemma:
            s.update(gemma=1, ln_pre_ffn=w["pre_feedforward_layernorm.weight"],
                     ln_post_ffn=w["post_feedforward_layernorm.weight"])
        if self.kind == "dense":
            g, u = w["mlp.gate_proj.weight"], w["mlp.up_proj.weight"]
            s.update(moe=0, F=int(g.shape[0]), gate=_wspec(g), up=_wspec(u), down=_wspec(w["mlp.down_proj.weight"]),
                     gate_up=_stacked_spec(g, u))
        else:
            r = self._route
            eg = w["mlp.experts.gate_proj"]
            ex = (eg, w["mlp.experts.up_proj"], w["mlp.experts.down_proj"])
            if not (all(isinstance(e, np.ndarray) for e in ex) or all(isinstance(e, QTensor) for e in ex) and (
                    all(e.fmt in KP_FORMATS for e in ex) or eg.fmt in ("q8_0", "q4_0") and {e.fmt for e in ex} == {eg.fmt})):
                raise _NoPlan   # quant.moe_experts' loop over experts (e.g. q4_K gate/up with a q8_0 down)
            gs = r["group_score"] or ("max" if r["scoring"] == "softmax" else "top2_sum")
            s.update(moe=1, router=w["mlp.gate.weight"], rbias=r["bias"], E=int(eg.shape[0]), Fe=int(eg.shape[1]),
                     eg=_wspec(eg), eu=_wspec(w["mlp.experts.up_proj"]), ed=_wspec(w["mlp.experts.down_proj"]),
                     top_k=r["top_k"],
                     scoring=_ops._SCORING[r["scoring"]], n_group=int(r["n_group"]), topk_group=int(r["topk_group"]),
                     group_score=_ops._GROUP_SCORE[gs], norm_topk=int(r["norm_topk_prob"]),
                     rscale=float(r["routed_scaling_factor"]), has_shared=int(self._shared is not None))
            if self._shared is not None:
                sg, su, sd = self._shared
                s.update(Fs=int(sg.shape[0]), sg=_wspec(sg), su=_wspec(su), sd=_wspec(sd), sgu=_stacked_spec(sg, su))
        return s

    def forward_py(self, x, cache, cache_layer: int, positions, mla_strategy: str = "flash", n_out: int | None = None,
                   ple=None, rope_seq_len: int | None = None):
        """The layer as a sequence of Python-level op calls (the definition layer.c follows); n_out, ple and
        rope_seq_len as in `forward` (the rows kept after the attention; Gemma 4's per-layer input; the
        sequence length that picks longrope's factors, read by the phi3 / phimoe paths, LONGROPE_FAMILIES)."""
        cfg, w = self.cfg, self.w
        eps = float(cfg.rms_norm_eps)
        if self.gemma4:
            return self._forward_gemma4(x, cache, cache_layer, positions, n_out, ple)
        if cfg.model_type in configs.GEMMA_FAMILIES:
            return self._forward_gemma(x, cache, cache_layer, positions, n_out)
        if cfg.attention_sinks:
            return self._forward_gpt_oss(x, cache, cache_layer, positions, n_out)
        if cfg.layer_norm:
            return self._forward_cohere(x, cache, cache_layer, positions, n_out)
        if cfg.linear_kind == "mamba2":
            return self._forward_mamba(x, cache, cache_layer, positions, n_out)
        if cfg.model_type == "afmoe":
            return self._forward_afmoe(x, cache, cache_layer, positions, n_out)
        if cfg.model_type == "nemotron":
            return self._forward_nemotron(x, cache, cache_layer, positions, n_out)
        if cfg.linear_layers or cfg.attn_output_gate:
            return self._forward_hybrid(x, cache, cache_layer, positions, n_out)
        if cfg.post_norms:
            return self._forward_post_norm(x, cache, cache_layer, positions, n_out)
        if cfg.norm_bias:
            return self._forward_phimoe(x, cache, cache_layer, positions, n_out, rope_seq_len)
        h = _ops.rms_norm(x, w["input_layernorm.weight"], eps)
        if cfg.attention == "mla":
            a = attention.mla_block(h, self.attn, cache, cache_layer, positions, cfg, strategy=mla_strategy)
        else:
            a = attention.gqa_block(h, self.attn, cache, cache_layer, positions, cfg, model_layer=self.index,
                                    rope_seq_len=rope_seq_len)
        rm = cfg.residual_multiplier    # Granite: each sub-layer's output times residual_multiplier
        if rm is not None:
            a = a * np.float32(rm)
        x = _keep(x + a, n_out)
        h = _ops.rms_norm(x, w["post_attention_layernorm.weight"], eps)
        if self.kind == "dense":
            m = self._dense_mlp(h)
        else:
            m, self.last_counts = _ops.moe(h, w["mlp.gate.weight"], *(w[n] for n in _EXPERTS),
                                           shared=self._shared, **self._route)
        if rm is not None:
            m = m * np.float32(rm)
        return x + m


    def _dense_mlp(self, h):
        """The layer's dense MLP on h (normed): SwiGLU (Gemma 1's GeGLU), or the ungated down(act(up h)) of Arcee
        (relu2) and Apertus (xIELU from the layer's own mlp.act_fn parameters: ops.xielu)."""
        w, cfg = self.w, self.cfg
        if cfg.mlp_gated:
            # (Gemma 1: GeGLU where hidden_act is gelu_pytorch_tanh, as GemmaMLP runs ACT2FN[hidden_act])
            mlp = _ops.geglu if cfg.model_type in configs.GEMMA1_FAMILIES and cfg.hidden_act == "gelu_pytorch_tanh" \
                else _ops.swiglu
            return mlp(h, w["mlp.gate_proj.weight"], w["mlp.up_proj.weight"], w["mlp.down_proj.weight"])
        if self.cfg.xielu:
            u = _ops.xielu(_ops.linear(h, w["mlp.up_proj.weight"]), *(w[f"mlp.act_fn.{n}"] for n in
                                                                      configs.XIELU_PARAMS + configs.XIELU_BUFFERS))
            return _ops.linear(u, w["mlp.down_proj.weight"])
        return _relu2_mlp(h, w["mlp.up_proj.weight"], w["mlp.down_proj.weight"])

    def _forward_phimoe(self, x, cache, cache_layer: int, positions, n_out=None, rope_seq_len=None):
        """Phi-3.5-MoE's layer (HF PhimoeDecoderLayer, transformers 5.25): pre-norm with LayerNorms that carry a
        bias (eps rms_norm_eps); the attention with its q / k / v / o biases (attention.gqa_block, the window on
        every layer where set); every layer MoE, routed by the sparsemixer (ops.sparsemixer_route: two experts,
        jitter band router_jitter_noise) to the SwiGLU experts (ops.moe_experts). Op by op, no C layer."""
        cfg, w = self.cfg, self.w
        h = _biased_layer_norm(x, w, "input_layernorm", cfg)
        a = attention.gqa_block(h, self.attn, cache, cache_layer, positions, cfg, model_layer=self.index,
                                rope_seq_len=rope_seq_len)
        x = _keep(x + a, n_out)
        h = _biased_layer_norm(x, w, "post_attention_layernorm", cfg)
        idx, wt = _ops.sparsemixer_route(h, w["mlp.gate.weight"], _router_jitter(cfg))
        m, self.last_counts = _ops.moe_experts(h, idx, wt, *(w[n] for n in _EXPERTS))
        return x + m

    def _forward_post_norm(self, x, cache, cache_layer: int, positions, n_out=None):
        """OLMo 2 / 3's and EXAONE 4's post-norm layer (HF Olmo2DecoderLayer, Exaone4DecoderLayer): the attention
        and the SwiGLU MLP on the raw residual stream, each output RMSNormed before its residual add."""
        cfg, w = self.cfg, self.w
        eps = float(cfg.rms_norm_eps)
        a = attention.gqa_block(x, self.attn, cache, cache_layer, positions, cfg, model_layer=self.index)
        x, a = _keep(x, n_out), _keep(a, n_out)
        x = x + _ops.rms_norm(a, w["post_attention_layernorm.weight"], eps)
        m = _ops.swiglu(x, w["mlp.gate_proj.weight"], w["mlp.up_proj.weight"], w["mlp.down_proj.weight"])
        return x + _ops.rms_norm(m, w["post_feedforward_layernorm.weight"], eps)

    def _forward_gemma(self, x, cache, cache_layer: int, positions, n_out=None):
        """Gemma 2/3's sandwich-norm layer (norm weights held as 1 + w, see the module docstring)."""
        w = self.w
        return self._sandwich(x, cache, cache_layer, positions, n_out, lambda h: _ops.geglu(
            h, w["mlp.gate_proj.weight"], w["mlp.up_proj.weight"], w["mlp.down_proj.weight"]))

    def _sandwich(self, x, cache, cache_layer: int, positions, n_out, ffn):
        """Gemma's four-norm layer (Gemma 2 / 3, AFMoE): input norm, attention (attention.gqa_block), its output
        normed (post_attention_layernorm) and added; the MLP `ffn` between pre_ / post_feedforward_layernorm."""
        cfg, w = self.cfg, self.w
        eps = float(cfg.rms_norm_eps)
        h = _ops.rms_norm(x, w["input_layernorm.weight"], eps)
        a = attention.gqa_block(h, self.attn, cache, cache_layer, positions, cfg, model_layer=self.index)
        x, a = _keep(x, n_out), _keep(a, n_out)
        x = x + _ops.rms_norm(a, w["post_attention_layernorm.weight"], eps)
        m = ffn(_ops.rms_norm(x, w["pre_feedforward_layernorm.weight"], eps))
        return x + _ops.rms_norm(m, w["post_feedforward_layernorm.weight"], eps)

    def _forward_nemotron(self, x, cache, cache_layer: int, positions, n_out=None):
        """Nemotron's layer (HF NemotronDecoderLayer, transformers 5.25): pre-norm with LayerNorm1P (the weight held as
        1 + w, a bias; eps norm_eps); Llama's attention with partial rotary (attention.gqa_block: the first rope_dim
        dims of each head turn, rotate_half pairs; q / k / v / o biased where attention_bias); the ungated MLP
        down(relu(up h)^2), biased where mlp_bias. Op by op, no C layer."""
        cfg, w = self.cfg, self.w
        h = _biased_layer_norm(x, w, "input_layernorm", cfg)
        a = attention.gqa_block(h, self.attn, cache, cache_layer, positions, cfg, model_layer=self.index)
        x = _keep(x + a, n_out)
        h = _biased_layer_norm(x, w, "post_attention_layernorm", cfg)
        u = _ops.linear(h, w["mlp.up_proj.weight"], w.get("mlp.up_proj.bias"))
        np.maximum(u, 0.0, out=u)
        u *= u
        return x + _ops.linear(u, w["mlp.down_proj.weight"], w.get("mlp.down_proj.bias"))

    def _forward_afmoe(self, x, cache, cache_layer: int, positions, n_out=None):
        """AFMoE's layer (HF AfmoeDecoderLayer, transformers 5.25): Gemma's sandwich of four plain (times w)
        RMSNorms (input, post_attention, pre_mlp, post_mlp: held as pre_ / post_feedforward_layernorm) around the
        gated attention (attention.gqa_block: per-head q / k norms, rope on the sliding layers only, the output
        times sigmoid(gate_proj h)) and the SwiGLU MLP, or the MoE (sigmoid router choosing with expert_bias,
        renormalised, times route_scale; ops.moe) beside the shared MLP. Op by op, no C layer."""
        return self._sandwich(x, cache, cache_layer, positions, n_out, self._afmoe_ffn)

    def _afmoe_ffn(self, h):
        w = self.w
        if self.kind == "dense":
            return _ops.swiglu(h, w["mlp.gate_proj.weight"], w["mlp.up_proj.weight"], w["mlp.down_proj.weight"])
        m, self.last_counts = _ops.moe(h, w["mlp.gate.weight"], *(w[n] for n in _EXPERTS),
                                       shared=self._shared, **self._route)
        return m

    def _forward_gemma4(self, x, cache, cache_layer: int, positions, n_out=None, ple=None):
        """Gemma 4's layer (HF Gemma4TextDecoderLayer, transformers 5.25): Gemma 3's sandwich norms with plain
        (times w) RMSNorms; the attention (`_gemma4_attn`); the GeGLU MLP, in an MoE layer beside the experts
        (`_gemma4_moe`); then, with per-layer embeddings, h + norm(proj(gelu_tanh(gate h) x ple)); the
        output times layer_scalar. Python-level calls of the C ops, no C layer."""
        cfg, w = self.cfg, self.w
        eps = float(cfg.rms_norm_eps)
        h = _ops.rms_norm(x, w["input_layernorm.weight"], eps)
        a = self._gemma4_attn(h, cache, cache_layer, positions)
        x, a = _keep(x, n_out), _keep(a, n_out)
        x = x + _ops.rms_norm(a, w["post_attention_layernorm.weight"], eps)
        h = _ops.rms_norm(x, w["pre_feedforward_layernorm.weight"], eps)
        if self.kind == "moe":
            m = self._gemma4_moe(x, h)
        else:
            m = _ops.geglu(h, w["mlp.gate_proj.weight"], w["mlp.up_proj.weight"], w["mlp.down_proj.weight"])
        x = x + _ops.rms_norm(m, w["post_feedforward_layernorm.weight"], eps)
        if cfg.ple_size:
            if ple is None:
                raise ValueError(f"layer {self.index}: Gemma 4's per-layer embeddings need this layer's input `ple` "
                                 f"[T, {cfg.ple_size}] (Model computes it)")
            p = np.ascontiguousarray(_keep(np.asarray(ple, np.float32), n_out))
            if p.shape != (x.shape[0], cfg.ple_size):
                raise ValueError(f"`ple` must have shape ({x.shape[0]}, {cfg.ple_size}), got {np.shape(ple)}")
            g = np.ascontiguousarray(_ops.linear(x, w["per_layer_input_gate.weight"]), dtype=np.float32)
            _core.geglu_act(g, p)                                     # gelu_tanh(gate x) * ple, in place
            x = x + _ops.rms_norm(_ops.linear(g, w["per_layer_projection.weight"]),
                                  w["post_per_layer_input_norm.weight"], eps)
        return x * np.float32(_to_f32(np.asarray(w["layer_scalar"])).reshape(-1)[0])

    def _gemma4_attn(self, h, cache, cache_layer: int, positions):
        """Gemma 4's attention (HF Gemma4TextAttention): q, k RMSNormed per head and rotated (cfg.layer_rope:
        the windowed layers plain rope by the local base, the global ones proportional rope), v RMSNormed
        without a weight; where k_eq_v on a global layer the values are the raw key projection (no v_proj);
        softmax scale 1 (cfg.softmax_scale). The layer's head dim and KV heads are its own (global_head_dim,
        global_kv_heads on the global layers: its cache layer has that geometry, a KVCacheGroup's part). A
        kv-shared layer projects no k / v and appends nothing: `cache_layer` is the cache of the layer it
        shares (cfg.kv_source), which has taken these tokens already."""
        cfg, a, i = self.cfg, self.attn, self.index
        T = attention._x2d(h, cfg.hidden_size).shape[0]
        pos = attention._positions(positions, T)
        H, Hkv, Dh = cfg.n_heads, cfg.layer_kv_heads(i), cfg.layer_head_dim(i)
        Dv = cfg.layer_v_dim(i) or Dh
        c, cl = cache.locate(cache_layer) if hasattr(cache, "locate") else (cache, int(cache_layer))
        own = cfg.owns_kv(i)
        cl = attention._check_cache(c, cl, "gqa", T if own else 0)
        if (c.n_kv_heads, c.head_dim, c.v_head_dim) != (Hkv, Dh, Dv):
            raise ValueError(f"cache layer {cache_layer} holds {c.n_kv_heads} KV heads of {c.head_dim}/{c.v_head_dim} "
                             f"dims; model layer {i} needs {Hkv} of {Dh}/{Dv}")
        win = cfg.layer_window(i)
        cw = c.windows[cl]
        if cw and cw != win:
            raise ValueError(f"cache layer {cache_layer} keeps a window of {cw} tokens but model layer {i} attends to "
                             f"{'all tokens' if win is None else f'{win} tokens'}")
        rot = cfg.layer_rope(i)
        q = _ops.linear(h, attention._need(a, "q_proj.weight"), a.get("q_proj.bias")).reshape(T, H, Dh)
        rope = _ops.rope_proportional if rot["inv_freq"] is not None else _ops.rope   # (zero frequencies)
        q = rope(_ops.rms_norm(q, attention._need(a, "q_norm.weight"), cfg.rms_norm_eps), pos, **rot)
        if own:
            k = _ops.linear(h, attention._need(a, "k_proj.weight"), a.get("k_proj.bias")).reshape(T, Hkv, Dh)
            v = (_ops.linear(h, a["v_proj.weight"], a.get("v_proj.bias")).reshape(T, Hkv, Dv)
                 if cfg.layer_v_proj(i) else k)                       # k_eq_v: the raw key projection
            v = _ops.rms_norm(v, self._ones[Dv], cfg.rms_norm_eps)
            k = rope(_ops.rms_norm(k, attention._need(a, "k_norm.weight"), cfg.rms_norm_eps), pos, **rot)
            c.append(cl, k, v)
        elif c.length(cl) != int(pos[-1]) + 1:
            raise ValueError(f"model layer {i} shares the cache of layer {cfg.kv_source(i)}, which holds "
                             f"{c.length(cl)} tokens; these queries end at position {int(pos[-1])} (that layer "
                             f"must take them first)")
        o = attention.gqa_attention(q, c, cl, scale=cfg.softmax_scale, window=win)
        return _ops.linear(np.ascontiguousarray(o.reshape(T, H * Dv)), attention._need(a, "o_proj.weight"),
                           a.get("o_proj.bias"))

    def _gemma4_moe(self, x, h):
        """Gemma 4's MoE block (HF Gemma4TextDecoderLayer with enable_moe_block): the dense GeGLU MLP (held as
        the shared expert) on h = pre_feedforward_layernorm(x) -> post_feedforward_layernorm_1; the router
        (Gemma4TextRouter) on x itself: a weightless RMSNorm, times `scale` and hidden^-1/2, softmax over all
        experts, the top-k renormalised (ops.moe_route), times per_expert_scale of the chosen; the GeGLU experts
        on pre_feedforward_layernorm_2(x) -> post_feedforward_layernorm_2; the sum of the two."""
        cfg, w = self.cfg, self.w
        eps = float(cfg.rms_norm_eps)
        D = cfg.hidden_size
        dense = _ops.rms_norm(_ops.geglu(h, *self._shared), w["post_feedforward_layernorm_1.weight"], eps)
        r = _ops.rms_norm(x, self._ones[D], eps) * _to_f32(w["mlp.gate.scale"]) * np.float32(D ** -0.5)
        idx, wt = _ops.moe_route(np.ascontiguousarray(r, dtype=np.float32), w["mlp.gate.weight"], **self._route)
        wt = wt * _to_f32(w["mlp.gate.per_expert_scale"])[idx]
        he = _ops.rms_norm(x, w["pre_feedforward_layernorm_2.weight"], eps)
        eg, eu, ed = (w[n] for n in _EXPERTS)
        for t in (eg, eu, ed):   # block formats: the stacked experts packed once, each expert a view of it
            if isinstance(t, QTensor):
                t.repack()
        y = np.zeros_like(he)
        counts = np.bincount(idx.ravel(), minlength=int(eg.shape[0])).astype(np.int64)
        for e in np.nonzero(counts)[0]:
            rows, slots = np.nonzero(idx == e)
            y[rows] += wt[rows, slots][:, None] * _ops.geglu(np.ascontiguousarray(he[rows]), eg[e], eu[e], ed[e])
        self.last_counts = counts
        return dense + _ops.rms_norm(y, w["post_feedforward_layernorm_2.weight"], eps)

    def _forward_cohere(self, x, cache, cache_layer: int, positions, n_out=None):
        """Cohere's layer (HF modeling_cohere / modeling_cohere2): one LayerNorm (no bias), then
        attention and the SwiGLU MLP side by side on it, both added to the residual. The attention on
        the C core's GQA kernels (interleaved rope; Command-R+'s per-head q/k LayerNorms; Cohere2's
        windowed layers rotate, its global ones do not: attention.gqa_block), the norm on the C core's
        LayerNorm; no C layer."""
        cfg, w = self.cfg, self.w
        h = _ops.layer_norm(x, w["input_layernorm.weight"], float(cfg.rms_norm_eps))
        a = attention.gqa_block(h, self.attn, cache, cache_layer, positions, cfg, model_layer=self.index)
        h = _keep(h, n_out)
        m = _ops.swiglu(h, w["mlp.gate_proj.weight"], w["mlp.up_proj.weight"], w["mlp.down_proj.weight"])
        return _keep(x, n_out) + _keep(a, n_out) + m

    def _forward_hybrid(self, x, cache, cache_layer: int, positions, n_out=None):
        """Qwen3.5's / Qwen3-Next's layer (HF modeling_qwen3_5 / modeling_qwen3_next): pre-norm ((1 + w)
        RMSNorms, held as 1 + w); the token mixer is Gated DeltaNet (`_linear_attn`) on the linear
        layers, gated GQA attention (attention.gqa_block with cfg.attn_output_gate) on the others; then
        the dense SwiGLU MLP, or the MoE with a sigmoid-gated shared expert. Python-level calls of the
        C ops, no C layer."""
        cfg, w = self.cfg, self.w
        eps = float(cfg.rms_norm_eps)
        h = _ops.rms_norm(x, w["input_layernorm.weight"], eps)
        if self.linear:
            a = self._linear_attn(h)
        else:
            a = attention.gqa_block(h, self.attn, cache, cache_layer, positions, cfg, model_layer=self.index)
        x = _keep(x + a, n_out)
        h = _ops.rms_norm(x, w["post_attention_layernorm.weight"], eps)
        if self.kind == "dense":
            return x + _ops.swiglu(h, w["mlp.gate_proj.weight"], w["mlp.up_proj.weight"], w["mlp.down_proj.weight"])
        m, self.last_counts = _ops.moe(h, w["mlp.gate.weight"], *(w[n] for n in _EXPERTS), shared=None, **self._route)
        if self._shared is not None:
            s = _ops.swiglu(h, *self._shared)
            if "mlp.shared_expert_gate.weight" in w:   # sigmoid(h . w_g) on each token's shared output
                gl = _ops.linear(h, w["mlp.shared_expert_gate.weight"])
                s = s * (np.float32(1.0) / (np.float32(1.0) + np.exp(-gl, dtype=np.float32)))
            m = m + s
        return x + m

    def _linear_attn(self, h):
        """One Gated DeltaNet token mixer on h[T, hidden] (already normed), carrying self.rstate (HF
        Qwen3_5GatedDeltaNet.forward): q, k, v by in_proj_qkv through the causal depthwise
        convolution (ops.causal_conv1d, silu, with the last K - 1 inputs), the output gate z
        (in_proj_z), beta = sigmoid(in_proj_b h), decay g = -exp(A_log) softplus(in_proj_a h +
        dt_bias); the gated delta rule over the tokens in order (ops.gated_delta_rule, q and k L2-
        normed, q scaled by dk^-1/2); the gated RMSNorm (norm(o) x w x silu(z)) and out_proj."""
        cfg, w = self.cfg, self.w
        T = h.shape[0]
        Hk, Hv, dk, dv = cfg.linear_k_heads, cfg.linear_v_heads, cfg.linear_k_dim, cfg.linear_v_dim
        p = "linear_attn."
        if p + "in_proj_qkvz.weight" in w:
            # Qwen3-Next: q, k, v, z and b, a interleaved per key head (HF fix_query_key_value_ordering):
            # [Hk, dk | dk | r dv | r dv] and [Hk, r | r], r = Hv / Hk value heads per key head
            r = Hv // Hk
            m = _ops.linear(h, w[p + "in_proj_qkvz.weight"]).reshape(T, Hk, 2 * dk + 2 * r * dv)
            ba = _ops.linear(h, w[p + "in_proj_ba.weight"]).reshape(T, Hk, 2 * r)
            qkv = np.concatenate([m[:, :, :dk].reshape(T, Hk * dk), m[:, :, dk:2 * dk].reshape(T, Hk * dk),
                                  m[:, :, 2 * dk:2 * dk + r * dv].reshape(T, Hv * dv)], axis=1)
            z = np.ascontiguousarray(m[:, :, 2 * dk + r * dv:]).reshape(T, Hv, dv)
            b = np.ascontiguousarray(ba[:, :, :r]).reshape(T, Hv)
            a = np.ascontiguousarray(ba[:, :, r:]).reshape(T, Hv)
        else:
            qkv = _ops.linear(h, w[p + "in_proj_qkv.weight"])
            z = _ops.linear(h, w[p + "in_proj_z.weight"]).reshape(T, Hv, dv)
            b = _ops.linear(h, w[p + "in_proj_b.weight"])
            a = _ops.linear(h, w[p + "in_proj_a.weight"])
        conv_state, S = self.rstate if self.rstate is not None else (None, None)
        y, conv_state = _ops.causal_conv1d(qkv, _to_f32(w[p + "conv1d.weight"]), conv_state, silu=True)
        q = np.ascontiguousarray(y[:, :Hk * dk]).reshape(T, Hk, dk)
        k = np.ascontiguousarray(y[:, Hk * dk:2 * Hk * dk]).reshape(T, Hk, dk)
        v = np.ascontiguousarray(y[:, 2 * Hk * dk:]).reshape(T, Hv, dv)
        beta = (1.0 / (1.0 + np.exp(-b.astype(np.float64)))).astype(np.float32)
        sp = np.logaddexp(0.0, a.astype(np.float64) + _to_f32(w[p + "dt_bias"]))      # softplus
        g = (-np.exp(_to_f32(w[p + "A_log"]).astype(np.float64)) * sp).astype(np.float32)
        if cfg.linear_v_tiled and Hv != Hk:
            # a Qwen3.5 GGUF's value heads in the converter's tiled order: value head j reads key head j mod Hk
            q, k = np.tile(q, (1, Hv // Hk, 1)), np.tile(k, (1, Hv // Hk, 1))
        o, S = _ops.gated_delta_rule(q, k, v, g, beta, S, qk_l2norm=True)
        self.rstate = (conv_state, S)
        o = _ops.rms_norm(o.reshape(T * Hv, dv), _to_f32(w[p + "norm.weight"]), float(cfg.rms_norm_eps))
        # silu(z) x o in place in z (a fresh array here), by the C core's SwiGLU activation (gb_silu_act)
        zo = np.ascontiguousarray(z, dtype=np.float32).reshape(T, Hv * dv)
        _core.silu_act(zo, o.reshape(T, Hv * dv))
        return _ops.linear(zo, w[p + "out_proj.weight"])

    def _forward_mamba(self, x, cache, cache_layer: int, positions, n_out=None):
        """The Mamba-2 hybrids' layers (configs.MAMBA_FAMILIES). Nemotron-H (HF modeling_nemotron_h
        NemotronHBlock): one block per layer, x + mixer(RMSNorm(x)) where the mixer is Mamba-2
        (`_mamba_mixer`), attention without rope, the ungated relu2 MLP or the MoE (`_ffn`). Granite
        4.0-H (modeling_granitemoehybrid): pre-norm Mamba-2 or attention (NoPE, softmax scale
        attention_multiplier), then the shared SwiGLU MLP plus the routed experts, each sub-layer's
        output times residual_multiplier before the residual add. Python-level calls of the C ops (the
        scan: ops.ssm_scan), no C layer."""
        cfg, w = self.cfg, self.w
        eps = float(cfg.rms_norm_eps)
        rm = np.float32(cfg.residual_multiplier or 1.0)
        h = _ops.rms_norm(x, w["input_layernorm.weight"], eps)
        if self.linear:
            a = self._mamba_mixer(h)
        elif cfg.has_mixer(self.index):
            a = attention.gqa_block(h, self.attn, cache, cache_layer, positions, cfg, model_layer=self.index)
        else:
            a = None
        if cfg.mixer_layers is not None:            # Nemotron-H: the block is its mixer or its MLP
            return _keep(x, n_out) + (_keep(a, n_out) if a is not None else self._ffn(_keep(h, n_out)))
        x = _keep(x + a * rm, n_out)
        h = _ops.rms_norm(x, w["post_attention_layernorm.weight"], eps)
        return x + self._ffn(h) * rm

    def _ffn(self, h):
        """The layer's MLP on h (normed): SwiGLU or ungated relu2 (down(relu(up h)^2), Nemotron-H), or
        the MoE: routed experts (ops.moe_route; SwiGLU experts by ops.moe, ungated ones expert by expert
        through the C matmuls) plus the shared expert."""
        cfg, w = self.cfg, self.w
        if self.kind == "dense":
            if cfg.mlp_gated:
                return _ops.swiglu(h, w["mlp.gate_proj.weight"], w["mlp.up_proj.weight"], w["mlp.down_proj.weight"])
            return _relu2_mlp(h, w["mlp.up_proj.weight"], w["mlp.down_proj.weight"])
        if cfg.mlp_gated:
            m, self.last_counts = _ops.moe(h, w["mlp.gate.weight"], *(w[n] for n in _EXPERTS), shared=self._shared,
                                           **self._route)
            return m
        idx, wt = _ops.moe_route(h, w["mlp.gate.weight"], **self._route)
        up, down = w["mlp.experts.up_proj"], w["mlp.experts.down_proj"]
        # Nemotron 3 Super's latent MoE: the experts run on h projected down to moe_latent_size
        hx = _ops.linear(h, w["mlp.fc1_latent_proj.weight"]) if cfg.moe_latent_size else h
        for t in (up, down):   # block formats: the stacked experts packed once, each expert a view of it
            if isinstance(t, QTensor):
                t.repack()
        y = np.zeros_like(hx)
        E = int(up.shape[0])
        counts = np.bincount(idx.ravel(), minlength=E).astype(np.int64)
        for e in np.nonzero(counts)[0]:
            rows, slots = np.nonzero(idx == e)
            out = _relu2_mlp(np.ascontiguousarray(hx[rows]), up[e], down[e])
            y[rows] += wt[rows, slots][:, None] * out   # rows are distinct within one expert
        self.last_counts = counts
        if cfg.moe_latent_size:
            y = _ops.linear(y, w["mlp.fc2_latent_proj.weight"])
        sh = "mlp.shared_experts."
        if sh + "up_proj.weight" in w:
            y += _relu2_mlp(h, w[sh + "up_proj.weight"], w[sh + "down_proj.weight"])
        return y

    def _mamba_mixer(self, h):
        """One Mamba-2 token mixer on h[T, hidden] (already normed), carrying self.rstate (HF
        NemotronHMamba2Mixer / GraniteMoeHybridMambaLayer torch_forward): in_proj gives the gate z,
        x | B | C and dt; x | B | C through the causal depthwise convolution with its bias and silu
        (ops.causal_conv1d, with the last K - 1 inputs); the scan over the tokens in order (ops.ssm_scan:
        dt through dt_bias and softplus, clamped to time_step_limit; A = -exp(A_log); the D skip);
        then the gated RMSNorm (y silu(z), normalised in n_groups groups, times the weight) and out_proj."""
        cfg, w = self.cfg, self.w
        T = h.shape[0]
        G, H, N, P = cfg.linear_k_heads, cfg.linear_v_heads, cfg.linear_k_dim, cfg.linear_v_dim
        di, C = H * P, cfg.linear_conv_dim
        p = "linear_attn."
        zxbcdt = _ops.linear(h, w[p + "in_proj.weight"])
        z = np.ascontiguousarray(zxbcdt[:, :di])
        xbc = np.ascontiguousarray(zxbcdt[:, di:di + C])
        dt = np.ascontiguousarray(zxbcdt[:, di + C:])
        conv_state, S = self.rstate if self.rstate is not None else (None, None)
        bias = w.get(p + "conv1d.bias")
        y, conv_state = _ops.causal_conv1d(xbc, _to_f32(w[p + "conv1d.weight"]), conv_state, silu=True,
                                           bias=None if bias is None else _to_f32(bias))
        xs = np.ascontiguousarray(y[:, :di]).reshape(T, H, P)
        B = np.ascontiguousarray(y[:, di:di + G * N]).reshape(T, G, N)
        Cm = np.ascontiguousarray(y[:, di + G * N:]).reshape(T, G, N)
        A = (-np.exp(_to_f32(w[p + "A_log"]).astype(np.float64))).astype(np.float32)
        lo, hi = _time_step_limit(cfg)
        o, S = _ops.ssm_scan(xs, dt, A, B, Cm, _to_f32(w[p + "D"]), S, dt_bias=_to_f32(w[p + "dt_bias"]),
                             dt_min=lo, dt_max=hi)
        self.rstate = (conv_state, S)
        # silu(z) x y in place in z (a fresh array here), then the RMSNorm over each group's d_inner / G
        _core.silu_act(z, o.reshape(T, di))
        gs = di // G
        n = _ops.rms_norm(z.reshape(T * G, gs), np.ones(gs, np.float32), float(cfg.rms_norm_eps))
        n = n.reshape(T, di) * _to_f32(w[p + "norm.weight"])
        return _ops.linear(np.ascontiguousarray(n, dtype=np.float32), w[p + "out_proj.weight"])

    def _forward_gpt_oss(self, x, cache, cache_layer: int, positions, n_out=None):
        """GPT-OSS's layer (HF modeling_gpt_oss): pre-norm; attention with q/k/v/o biases, YaRN rope,
        per-head sinks and every other layer windowed (attention.gqa_sink_block); MoE with a biased
        router, softmax over the top-k logits and biased experts with the clamped SwiGLU
        (ops.moe_gpt_oss). The attention on the C core's GQA kernels (gqa_attention(sinks=)), the MoE
        NumPy float32 around the C matmuls (no C layer)."""
        cfg, w = self.cfg, self.w
        eps = float(cfg.rms_norm_eps)
        h = _ops.rms_norm(x, w["input_layernorm.weight"], eps)
        x = _keep(x + attention.gqa_sink_block(h, self.attn, cache, cache_layer, positions, cfg, model_layer=self.index),
                  n_out)
        h = _ops.rms_norm(x, w["post_attention_layernorm.weight"], eps)
        hf = getattr(cfg, "hf", None) or {}
        m, self.last_counts = _ops.moe_gpt_oss(
            h, w["mlp.gate.weight"], w["mlp.gate.bias"], *(w[n] for n in _EXPERTS),
            *(w[n + "_bias"] for n in _EXPERTS), top_k=int(cfg.n_experts_per_tok),
            alpha=float(hf.get("swiglu_alpha", _ops.SWIGLU_ALPHA)),
            limit=float(hf.get("swiglu_limit", _ops.SWIGLU_LIMIT)))
        return x + m


def _biased_layer_norm(x, w: dict, name: str, cfg):
    """Phi-3.5-MoE's nn.LayerNorm: (x - mean) / sqrt(var + eps) x weight + bias (eps rms_norm_eps)."""
    y = _ops.layer_norm(x, _to_f32(w[name + ".weight"]), float(cfg.rms_norm_eps))
    return y + _to_f32(w[name + ".bias"])


def _router_jitter(cfg) -> float:
    """Phi-3.5-MoE's sparsemixer band: router_jitter_noise (PhimoeConfig's default 0.01; a finite number >= 0,
    checked when the config loads)."""
    return float((getattr(cfg, "hf", None) or {}).get("router_jitter_noise", 0.01))


def _relu2_mlp(h, up, down):
    """Nemotron-H's and Arcee's ungated MLP: down(relu(up h)^2) (HF ACT2FN["relu2"])."""
    u = _ops.linear(h, up)
    np.maximum(u, 0.0, out=u)
    u *= u
    return _ops.linear(u, down)


def _time_step_limit(cfg) -> tuple:
    """Mamba-2's clamp on the time step after softplus (HF time_step_limit / mamba_dt_limit; default
    (0, inf): none)."""
    hf = getattr(cfg, "hf", None) or {}
    lim = hf.get("time_step_limit", hf.get("mamba_dt_limit", (0.0, float("inf"))))

    def num(v):   # transformers 5 writes infinity in config.json as {"__float__": "Infinity"}
        v = v.get("__float__") if isinstance(v, dict) else v
        if isinstance(v, bool) or not isinstance(v, (int, float, str)):
            raise TypeError
        return float(v)
    try:
        lo, hi = (num(v) for v in lim)
    except (TypeError, ValueError):
        raise ValueError(f"config field `time_step_limit` must be a pair of numbers, got {lim!r}") from None
    return lo, hi


class _NoPlan(Exception):
    """A layer the C layer does not run (Layer._c_spec): forward_py runs it."""


# block formats csrc/layer.c reads in their packed layouts (the kernels quant.linear calls)
_PACKED = ("q8_0", "q4_0") + KP_FORMATS


def _wspec(a):
    """A matrix as _core.layer_plan takes it: a float array as is, a QTensor in a format the C layer
    reads packed as (packed bytes, format id) (repacked here on first use, as quant.linear would);
    anything else: _NoPlan (forward_py runs the layer)."""
    if isinstance(a, np.ndarray):
        return a
    if isinstance(a, QTensor) and a.fmt in _PACKED:
        a.repack()
        return a.packed, _fmt_id(a.fmt)
    raise _NoPlan


def _stacked_spec(a, b, bias_a=None, bias_b=None):
    """The matrix quant.fuse_rows stacked of a then b, as quant.linear_pair reads it at decode (no biases),
    in _wspec's form; None: the two calls apart."""
    f = stacked(a, b) if isinstance(a, QTensor) and isinstance(b, QTensor) and bias_a is None and bias_b is None else None
    return None if f is None else _wspec(f)


def _keep(a, n_out):
    """The last n_out rows of a (all of them for None), contiguous."""
    return a if n_out is None or n_out == a.shape[0] else np.ascontiguousarray(a[a.shape[0] - n_out:])


def _gemma_norm(cfg, name: str, a):
    """Gemma's RMSNorms multiply by (1 + w) (HF Gemma3RMSNorm, in float32), and so do Qwen3-Next's and
    Qwen3.5's (Qwen3_5RMSNorm; not their linear layers' gated norm, Qwen3_5RMSNormGated, times w), and Nemotron's
    LayerNorm1P (its weight + 1, beside its bias): held as 1 + w so the C core's norms (times w) run them."""
    plus_one = cfg.model_type in configs.GEMMA_FAMILIES + configs.GEMMA1_FAMILIES + ("nemotron",) or (
        cfg.model_type in configs.LINEAR_FAMILIES and not name.startswith("linear_attn."))
    if plus_one and name.endswith("norm.weight"):
        return np.float32(1.0) + np.asarray(_to_f32(a), dtype=np.float32)
    return a


def build_layer(cfg, index: int, weights: str = vocab.DEFAULTS["measured_weights"], seed: int = 0) -> Layer:
    """Layer `index` of `cfg` with random weights (the same tensors the full Model would draw)."""
    kind = layer_kinds(cfg)[index]
    w = {}
    for name, shape in _layer_tensors(cfg, index).items():
        if name in _XIELU_INIT:
            w[name] = np.full(shape, _XIELU_INIT[name], np.float32)
            continue
        std = _init_std(name, shape, cfg)
        if std is None:
            w[name] = np.ones(shape, np.float32)
        else:
            fmt = "f32" if name.endswith("_bias") else vocab.tensor_format(weights, name, shape).name
            w[name] = random_weight(f"model.layers.{index}.{name}", shape, fmt, seed, std)
    return Layer(cfg, index, kind, w)


def _layer_from_hf(cfg, index: int, kind: str, src: Mapping, fmt: str, checked: Mapping = {}) -> Layer:
    p = f"model.layers.{index}."

    def get(name):
        key = p + name
        if key not in src and "mlp.shared_experts." in key:   # Qwen2-MoE / Qwen3-Next / Qwen3.5's one shared_expert
            alt = key.replace("mlp.shared_experts.", "mlp.shared_expert.")
            key = alt if alt in src else key
        if key not in src:
            raise ValueError(f"`state_dict` lacks {key!r} (needed by layer {index}, a {kind} layer of "
                             f"{cfg.model_type})")
        return _finite(src[key], key, checked)

    experts = _unfused(cfg, p, src, get)
    if kind == "moe":
        E, F = cfg.n_routed_experts, cfg.moe_intermediate_size
        if cfg.expert_bias and p + "mlp.experts.gate_up_proj" in src:
            # HF GPT-OSS: gate_up_proj [E, D, 2F] (gate and up interleaved on the last axis), down_proj
            # [E, F, D], biases gate_up_proj_bias [E, 2F] / down_proj_bias [E, D]; router mlp.router
            gu, gub = get("mlp.experts.gate_up_proj"), get("mlp.experts.gate_up_proj_bias")
            _expect(gu, (E, cfg.hidden_size, 2 * F), p + "mlp.experts.gate_up_proj")
            _expect(gub, (E, 2 * F), p + "mlp.experts.gate_up_proj_bias")
            experts = {_EXPERTS[0]: gu[:, :, 0::2].transpose(0, 2, 1),
                       _EXPERTS[1]: gu[:, :, 1::2].transpose(0, 2, 1),
                       _EXPERTS[2]: get("mlp.experts.down_proj").transpose(0, 2, 1),
                       _EXPERTS[0] + "_bias": gub[:, 0::2], _EXPERTS[1] + "_bias": gub[:, 1::2],
                       _EXPERTS[2] + "_bias": get("mlp.experts.down_proj_bias"),
                       "mlp.gate.weight": get("mlp.router.weight"), "mlp.gate.bias": get("mlp.router.bias")}
        elif p + "mlp.experts.gate_up_proj" in src:  # transformers 5.x: gate and up fused on the rows
            gu, down = get("mlp.experts.gate_up_proj"), get("mlp.experts.down_proj")
            if getattr(cfg, "wrapper", None) == "qwen3_vl_moe":
                # the released Qwen3-VL-MoE checkpoints hold gate_up_proj [E, D, 2F] and down_proj [E, F, D];
                # transformers 5.x transposes each on loading where its shape is not the model's
                # (conversion_mapping's Transpose(1, 2, check_dims=True)), as here
                D = cfg.hidden_size
                if gu.shape == (E, D, 2 * F) != (E, 2 * F, D):
                    gu = gu.transpose(0, 2, 1)
                if down.shape == (E, F, D) != (E, D, F):
                    down = down.transpose(0, 2, 1)
            _expect(gu, (E, 2 * F, cfg.hidden_size), p + "mlp.experts.gate_up_proj")
            experts = {_EXPERTS[0]: gu[:, :F], _EXPERTS[1]: gu[:, F:], _EXPERTS[2]: down}
        elif p + "mlp.experts.gate_proj" in src:   # already stacked (ModelConfig.tensor_shapes names)
            experts = {n: get(n) for n in _EXPERTS}
        elif not cfg.mlp_gated and p + "mlp.experts.up_proj" in src:   # Nemotron-H's ungated experts
            experts = {n: get(n) for n in _EXPERTS[1:]}
        elif not cfg.mlp_gated and p + "mlp.experts.0.up_proj.weight" in src:   # ... one module per expert (its files)
            experts = {f"mlp.experts.{part}_proj": np.stack([get(f"mlp.experts.{e}.{part}_proj.weight")
                                                             for e in range(E)]) for part in ("up", "down")}
        elif p + "mlp.experts.0.gate_proj.weight" in src:  # transformers 4.x: one module per expert
            experts = {f"mlp.experts.{part}_proj": np.stack([get(f"mlp.experts.{e}.{part}_proj.weight")
                                                             for e in range(E)]) for part in ("gate", "up", "down")}
        else:
            raise ValueError(f"`state_dict` has no experts for layer {index}: expected {p + 'mlp.experts.gate_up_proj'!r} "
                             f"(transformers 5.x) or {p + 'mlp.experts.0.gate_proj.weight'!r} (4.x)")
    w = {}
    for name, shape in _layer_tensors(cfg, index).items():
        if name.endswith("e_score_correction_bias") and p + name not in src:
            w[name] = np.zeros(shape, np.float32)  # checkpoints without the bias route on scores alone
            continue
        a = experts[name] if name in experts else get(name)
        if cfg.layer_norm and name in ("self_attn.q_norm.weight", "self_attn.k_norm.weight") and a.ndim == 2:
            a = a.reshape(-1)   # HF CohereLayerNorm((heads, head_dim)): a weight row per head, held flat
        _expect(a, shape, p + name)
        a = _gemma_norm(cfg, name, a)
        # GPT-OSS's 2-D expert biases and sinks stay float32 as the other biases do
        w[name] = to_format(a, "f32" if name.endswith(("_bias", "sinks")) else _tensor_fmt(fmt, name, shape, a))
    return Layer(cfg, index, kind, w)


def _unfused(cfg, p: str, src: Mapping, get) -> dict:
    """Phi-3's fused matrices split into the names the layer holds (row views, QTensor rows too):
    self_attn.qkv_proj [(H + 2 Hk) Dh, D] -> q_proj, k_proj, v_proj; mlp.gate_up_proj [2F, D] ->
    gate_proj (the first F rows: HF's Phi3MLP chunks gate first), up_proj. {} for other checkpoints."""
    out = {}
    if p + "self_attn.qkv_proj.weight" in src:
        qkv = get("self_attn.qkv_proj.weight")
        q, kv = cfg.n_heads * cfg.head_dim, cfg.n_kv_heads * cfg.head_dim
        _expect(qkv, (q + 2 * kv, cfg.hidden_size), p + "self_attn.qkv_proj.weight")
        out.update({"self_attn.q_proj.weight": qkv[:q], "self_attn.k_proj.weight": qkv[q:q + kv],
                    "self_attn.v_proj.weight": qkv[q + kv:]})
    if p + "mlp.gate_up_proj.weight" in src:
        gu, F = get("mlp.gate_up_proj.weight"), cfg.intermediate_size
        _expect(gu, (2 * F, cfg.hidden_size), p + "mlp.gate_up_proj.weight")
        out.update({"mlp.gate_proj.weight": gu[:F], "mlp.up_proj.weight": gu[F:]})
    return out


_PLE_TABLE = "model.embed_tokens_per_layer.weight"


def _ple_shapes(cfg) -> dict:
    """Gemma 4's model-level per-layer-embedding tensors (ModelConfig.tensor_shapes' names) -> shape."""
    return {n: s for n, s in cfg.tensor_shapes().items()
            if n in (_PLE_TABLE, "model.per_layer_model_projection.weight", "model.per_layer_projection_norm.weight")}


_GEMMA4_MOE = {"router.proj.weight": "mlp.gate.weight", "router.scale": "mlp.gate.scale",
               "router.per_expert_scale": "mlp.gate.per_expert_scale",
               "experts.gate_up_proj": "mlp.experts.gate_up_proj", "experts.down_proj": "mlp.experts.down_proj",
               "mlp.gate_proj.weight": "mlp.shared_experts.gate_proj.weight",
               "mlp.up_proj.weight": "mlp.shared_experts.up_proj.weight",
               "mlp.down_proj.weight": "mlp.shared_experts.down_proj.weight"}


def gemma4_state_dict(cfg, src: Mapping) -> dict:
    """A Gemma 4 state dict (HF Gemma4ForCausalLM; or Gemma4ForConditionalGeneration's, whose text model is
    under `model.language_model.`: those keys are taken, the vision / audio towers' left out) under the names
    the model holds (ModelConfig.tensor_shapes): in an MoE layer the router (router.proj / scale /
    per_expert_scale -> mlp.gate.weight / .scale / .per_expert_scale), the experts (experts.gate_up_proj
    [E, 2F, D], split by _layer_from_hf, and down_proj -> mlp.experts.*) and the dense MLP beside them
    (mlp.{gate,up,down}_proj -> mlp.shared_experts.*); a kv-shared layer's k / v projections and norms, which
    HF ignores when it loads a checkpoint that carries them, dropped. The arrays themselves, no copies; names
    already in glmbench's form pass through."""
    lm = "model.language_model."
    wrapped = any(k.startswith(lm) for k in src)
    out = {}
    for key, a in src.items():
        name = key
        if wrapped:
            if key.startswith(lm):
                name = "model." + key[len(lm):]
            elif key != "lm_head.weight":
                continue                 # the multimodal model's vision / audio parts
        parts = name.split(".", 3)
        if len(parts) == 4 and parts[0] == "model" and parts[1] == "layers" and parts[2].isdigit():
            i, rest = int(parts[2]), parts[3]
            if 0 <= i < cfg.n_layers:
                if not cfg.owns_kv(i) and rest.startswith(("self_attn.k_proj.", "self_attn.v_proj.",
                                                           "self_attn.k_norm.", "self_attn.v_norm.")):
                    continue
                if cfg.is_moe_layer(i) and rest in _GEMMA4_MOE:
                    name = f"model.layers.{i}.{_GEMMA4_MOE[rest]}"
        out[name] = a
    return out


def mamba_state_dict(cfg, src: Mapping) -> dict:
    """A Nemotron-H or Granite 4.0-H state dict under the names the layers hold (ModelConfig.tensor_shapes):
    HF's NemotronH ({model, backbone}.embeddings, layers.N.norm, layers.N.mixer.*, norm_f) and
    GraniteMoeHybrid (layers.N.mamba.*, shared_mlp.input_linear = gate rows then up rows,
    output_linear, block_sparse_moe.router / experts, or the released files' router.layer and
    input_linear / output_linear) renamed; the arrays themselves (row views where
    a fused matrix is split), no copies. Names already in glmbench's form pass through."""
    out = {}
    nem = cfg.model_type == "nemotron_h"
    lin, att = frozenset(cfg.linear_layers), frozenset(cfg.attention_layers)
    Fs = cfg.shared_expert_intermediate_size if cfg.n_routed_experts else cfg.intermediate_size
    for key, a in src.items():
        name = key
        if nem and key.startswith("backbone."):
            name = "model." + key[len("backbone."):]
        if name in ("model.embeddings.weight",):
            out["model.embed_tokens.weight"] = a
            continue
        if name == "model.norm_f.weight":
            out["model.norm.weight"] = a
            continue
        parts = name.split(".", 3)
        if len(parts) < 4 or parts[0] != "model" or parts[1] != "layers" or not parts[2].isdigit():
            out[name] = a
            continue
        i, rest = int(parts[2]), parts[3]
        p = f"model.layers.{i}."
        if nem:
            if rest == "norm.weight":
                rest = "input_layernorm.weight"
            elif rest.startswith("mixer."):
                r = rest[len("mixer."):]
                rest = ("linear_attn." if i in lin else "self_attn." if i in att else "mlp.") + r
        else:
            if rest.startswith("mamba."):
                rest = "linear_attn." + rest[len("mamba."):]
            elif rest in ("block_sparse_moe.router.weight", "block_sparse_moe.router.layer.weight"):
                rest = "mlp.gate.weight"
            elif rest.startswith("block_sparse_moe.experts."):
                rest = "mlp.experts." + rest[len("block_sparse_moe.experts."):]
            elif rest == "block_sparse_moe.input_linear.weight":    # the released files: [E, 2F, D], gate rows first
                rest = "mlp.experts.gate_up_proj"
            elif rest == "block_sparse_moe.output_linear.weight":
                rest = "mlp.experts.down_proj"
            elif rest in ("shared_mlp.input_linear.weight", "shared_mlp.output_linear.weight"):
                base = "mlp.shared_experts." if cfg.n_routed_experts else "mlp."
                if rest.endswith("output_linear.weight"):
                    out[p + base + "down_proj.weight"] = a
                else:
                    arr = _np(a, key)
                    _expect(arr, (2 * Fs, cfg.hidden_size), key)
                    out[p + base + "gate_proj.weight"], out[p + base + "up_proj.weight"] = arr[:Fs], arr[Fs:]
                continue
        out[p + rest] = a
    return out


# Granite MoE's names (HF GraniteMoeDecoderLayer.block_sparse_moe: transformers 5's router.weight, experts.gate_up_proj
# / down_proj; the released files' router.layer.weight, input_linear.weight [E, 2F, D] gate rows first,
# output_linear.weight [E, D, F]) -> the layer's MoE names
_GRANITEMOE = {"block_sparse_moe.router.weight": "mlp.gate.weight", "block_sparse_moe.router.layer.weight": "mlp.gate.weight",
               "block_sparse_moe.experts.gate_up_proj": "mlp.experts.gate_up_proj",
               "block_sparse_moe.experts.down_proj": "mlp.experts.down_proj",
               "block_sparse_moe.input_linear.weight": "mlp.experts.gate_up_proj",
               "block_sparse_moe.output_linear.weight": "mlp.experts.down_proj"}


def granitemoe_state_dict(src: Mapping) -> dict:
    """A Granite MoE state dict (granitemoe) under the names the layers hold: HF's block_sparse_moe router and
    experts renamed (_GRANITEMOE; the fused gate_up rows are split where the layer is built, as transformers 5's
    other MoEs); the arrays themselves, no copies. Names already in glmbench's form pass through."""
    return _renamed(src, _GRANITEMOE)


# AFMoE's names (HF AfmoeDecoderLayer / AfmoeSparseMoeBlock: pre_mlp_layernorm, post_mlp_layernorm, router.gate,
# expert_bias) -> the layer's (Gemma's sandwich-norm names, the MoE router's and its choosing bias)
_AFMOE = {"pre_mlp_layernorm.weight": "pre_feedforward_layernorm.weight",
          "post_mlp_layernorm.weight": "post_feedforward_layernorm.weight",
          "mlp.router.gate.weight": "mlp.gate.weight", "mlp.expert_bias": "mlp.gate.e_score_correction_bias"}


# transformers 5's names of Hunyuan's router (mlp.gate.wg) and shared MLP (mlp.shared_mlp) and of Phi-3.5-MoE's
# router (mlp.router) -> the layer's MoE names
_MOE_RENAMES = {"mlp.gate.wg.weight": "mlp.gate.weight", "mlp.router.weight": "mlp.gate.weight",
                **{f"mlp.shared_mlp.{n}_proj.weight": f"mlp.shared_experts.{n}_proj.weight" for n in ("gate", "up", "down")}}


# the released Mixtral and Phi-3.5-MoE checkpoints' names (and what transformers 5 writes back on save_pretrained:
# conversion_mapping's "mixtral" / "phimoe" entries): block_sparse_moe.gate the router, block_sparse_moe.experts.E.w1 /
# w3 / w2 each expert's gate / up / down -> the layer's MoE names (the per-expert ones stacked where the layer is built)
_BLOCK_SPARSE_MOE = re.compile(r"^(model\.layers\.\d+\.)block_sparse_moe\.(?:(gate)\.weight|experts\.(\d+)\.(w[123])\.weight)$")


def block_sparse_moe_state_dict(src: Mapping) -> dict:
    """A Mixtral / Phi-3.5-MoE state dict under the names the layers hold: the released files' (and transformers 5's
    saved) block_sparse_moe.gate.weight -> mlp.gate.weight, block_sparse_moe.experts.E.w1 / w3 / w2 .weight ->
    mlp.experts.E.gate_proj / up_proj / down_proj .weight; the arrays themselves, no copies. Names already in
    glmbench's (or transformers 5's in-memory) form pass through."""
    out = {}
    for key, a in src.items():
        m = _BLOCK_SPARSE_MOE.match(key)
        if m:
            key = m[1] + ("mlp.gate.weight" if m[2] else f"mlp.experts.{m[3]}.{vocab.BLOCK_SPARSE_EXPERT_NAMES[m[4]]}.weight")
        out[key] = a
    return out


def _renamed(src: Mapping, table: dict) -> dict:
    """src with each layer tensor model.layers.N.REST named model.layers.N.table[REST] where the table has REST;
    the arrays themselves, no copies."""
    out = {}
    for key, a in src.items():
        parts = key.split(".", 3)
        if len(parts) == 4 and parts[:2] == ["model", "layers"] and parts[3] in table:
            key = f"model.layers.{parts[2]}.{table[parts[3]]}"
        out[key] = a
    return out


def _np(a, name: str) -> np.ndarray:
    if isinstance(a, (QTensor, KVBSplit)):
        return a
    if hasattr(a, "detach"):  # a torch tensor
        a = a.detach().cpu().float().numpy()
    a = np.asarray(a)
    if a.dtype.kind != "f" and a.dtype != np.uint16:
        raise TypeError(f"weight {name!r} must be a float array (or uint16 bfloat16 bits), got {a.dtype}")
    return a


def _finite(raw, key: str, checked: Mapping):
    """state_dict[key] (`raw`) as an array (_np), found finite (quant.nonfinite) unless a loader checked this very
    object (`checked`: id -> object, models/checkpoint.py's finite_checked)."""
    a = _np(raw, key)
    if checked.get(id(raw)) is not raw:
        bad = nonfinite(a)
        if bad:
            raise ValueError(f"weight {key!r} holds {bad}; a weight must be finite")
    return a


def _expect(a: np.ndarray, shape: tuple, name: str) -> None:
    if tuple(a.shape) != tuple(shape):
        raise ValueError(f"weight {name!r} has shape {tuple(a.shape)}, expected {tuple(shape)} from the config")


def _rope_seq_len(positions: np.ndarray, given: int | None) -> int | None:
    """The sequence length that picks longrope's factors: `given`, else the last position + 1."""
    if given is not None:
        return int(given)
    return int(positions.max()) + 1 if positions.size else None


class LongRopeCrossing(UserWarning):
    """A longrope model's cache grew past original_max_position_embeddings: its cached keys were turned by the
    short factors, the new tokens by the long ones (Model._longrope_regime)."""


# ---- the model ----------------------------------------------------------------------------
class Model:
    """A whole decoder-only model on the C core, with its KV cache (see the module docstring).

    layers: None (all), or a list of layer indices to build: a *sampled* model that runs only
    those layers (glmbench.measure times full-size layers this way when the model does not fit
    in RAM; its logits are not the full model's).
    """

    def __init__(self, config, state_dict: Mapping | None = None, *,
                 weights: str = vocab.DEFAULTS["measured_weights"], kv: str = vocab.DEFAULTS["kv"],
                 max_context: int = 4096, seed: int = 0, mla_strategy: str = vocab.DEFAULTS["mla_strategy"],
                 layers: Iterable[int] | None = None, progress: Callable[[int, int], None] | None = None,
                 window_chunk: int = 512):
        cfg = _load_config(config)
        self.config = cfg
        lacks = cfg.forward_unsupported()
        if lacks:
            raise ValueError(f"glmbench.Model cannot run {cfg.name} ({cfg.model_type}): its forward pass lacks "
                             f"{'; '.join(lacks)} (predictions take this config)")
        if isinstance(weights, str) and weights.lower() in {f.lower() for f in WEIGHT_FORMATS}:
            weights = vocab.weight_format(weights).name      # names are case-insensitive ("Q8_0")
        if weights == STORED and state_dict is None:
            raise ValueError("`weights`='stored' keeps a state_dict's own formats; it needs a `state_dict`")
        if weights not in WEIGHT_FORMATS and weights != STORED:
            raise ValueError(f"`weights` must be one of {WEIGHT_FORMATS} (or 'stored' with a state_dict), "
                             f"got {weights!r}")
        vocab.mla_strategy(mla_strategy)
        vocab.kv_format(kv)
        if isinstance(max_context, bool) or not isinstance(max_context, (int, np.integer)) or max_context < 1:
            raise ValueError(f"`max_context` must be a positive int, got {max_context!r}")
        if state_dict is not None and not isinstance(state_dict, Mapping):
            raise TypeError(f"`state_dict` must be None or a dict of HF-named arrays, got {type(state_dict).__name__}")
        self.weights, self.kv, self.mla_strategy = weights, kv, mla_strategy
        self.max_context, self.seed = int(max_context), int(seed)
        _ops.keep_heap()  # each call's activations reuse warm heap pages (ops.keep_heap)
        kinds = layer_kinds(cfg)
        if layers is None:
            idx = list(range(cfg.n_layers))
        else:
            idx = [int(i) for i in layers]
            bad = [i for i in idx if not 0 <= i < cfg.n_layers]
            if bad or not idx or len(set(idx)) != len(idx):
                raise ValueError(f"`layers` must be distinct indices in [0, {cfg.n_layers}), got {list(layers)}")
        self.layer_indices = idx
        self.sampled = layers is not None and len(idx) < cfg.n_layers

        D, V = cfg.hidden_size, cfg.vocab_size
        if state_dict is None:
            self.embed = random_weight("model.embed_tokens.weight", (V, D), weights, seed, 1.0)
            self.lm_head = (self.embed if cfg.tie_word_embeddings else
                            random_weight("lm_head.weight", (V, D), weights, seed, 1.0 / np.sqrt(D)))
            self.final_norm = np.ones(D, np.float32)
            # Phi-3.5-MoE: the final LayerNorm's bias and the lm_head's (zeros)
            self.final_norm_bias = np.zeros(D, np.float32) if cfg.norm_bias else None
            self.lm_head_bias = np.zeros(V, np.float32) if cfg.lm_head_bias else None
            if cfg.ple_size:   # Gemma 4's per-layer embeddings: the table, the input embedding's projection, its norm
                self.ple = {n: (np.ones(s, np.float32) if len(s) == 1 else
                                random_weight(n, s, vocab.tensor_format(weights, n, s).name, seed,
                                              1.0 if n == _PLE_TABLE else 1.0 / np.sqrt(s[-1])))
                            for n, s in _ple_shapes(cfg).items()}
            self.layers = []
            for n, i in enumerate(idx):
                self.layers.append(build_layer(cfg, i, weights, seed))
                if progress:
                    progress(n + 1, len(idx))
        else:
            # the arrays a loader found finite (models/checkpoint.py), taken before any renaming below
            checked = getattr(state_dict, "finite_checked", None) or {}
            if cfg.model_type in configs.MAMBA_FAMILIES:
                state_dict = mamba_state_dict(cfg, state_dict)
            elif cfg.model_type in configs.GEMMA4_FAMILIES:
                state_dict = gemma4_state_dict(cfg, state_dict)
            elif cfg.model_type == "granitemoe":
                state_dict = granitemoe_state_dict(state_dict)
            elif cfg.model_type in configs.HUNYUAN_FAMILIES + ("phimoe",):
                if cfg.model_type == "phimoe":
                    state_dict = block_sparse_moe_state_dict(state_dict)
                state_dict = _renamed(state_dict, _MOE_RENAMES)
            elif cfg.model_type == "mixtral":
                state_dict = block_sparse_moe_state_dict(state_dict)
            elif cfg.model_type == "afmoe":
                state_dict = _renamed(state_dict, _AFMOE)

            def get(key):
                if key not in state_dict:
                    raise ValueError(f"`state_dict` lacks {key!r}")
                return _finite(state_dict[key], key, checked)
            emb = get("model.embed_tokens.weight")
            _expect(emb, (V, D), "model.embed_tokens.weight")
            self.embed = to_format(emb, _tensor_fmt(weights, "model.embed_tokens.weight", emb.shape, emb))
            if cfg.tie_word_embeddings and "lm_head.weight" not in state_dict:
                self.lm_head = self.embed
            else:
                head = get("lm_head.weight")
                _expect(head, (V, D), "lm_head.weight")
                self.lm_head = to_format(head, _tensor_fmt(weights, "lm_head.weight", head.shape, head))
            fn = get("model.norm.weight")
            _expect(fn, (D,), "model.norm.weight")
            self.final_norm = np.ascontiguousarray(_to_f32(_gemma_norm(cfg, "model.norm.weight", fn)))
            self.final_norm_bias = self.lm_head_bias = None
            for attr, n, size, on in (("final_norm_bias", "model.norm.bias", D, cfg.norm_bias),
                                      ("lm_head_bias", "lm_head.bias", V, cfg.lm_head_bias)):
                if on:   # Phi-3.5-MoE
                    b = get(n)
                    _expect(b, (size,), n)
                    setattr(self, attr, np.ascontiguousarray(_to_f32(b), dtype=np.float32))
            if cfg.ple_size:
                self.ple = {}
                for n, s in _ple_shapes(cfg).items():
                    a = get(n)
                    _expect(a, s, n)
                    self.ple[n] = np.ascontiguousarray(_to_f32(a)) if len(s) == 1 else \
                        to_format(a, _tensor_fmt(weights, n, s, a))
            self.layers = []
            for n, i in enumerate(idx):
                self.layers.append(_layer_from_hf(cfg, i, kinds[i], state_dict, weights, checked))
                if progress:
                    progress(n + 1, len(idx))

        # a hybrid's linear layers keep their recurrent state (Layer.rstate), no cache layer: the cache
        # holds the built attention layers only (`_cache_layer`: built layer -> its cache layer, or -1)
        # (Nemotron-H's MLP / MoE blocks hold no mixer: no cache layer either). Gemma 4's kv-shared layers
        # read the cache layer of the layer they share (cfg.kv_source) and have none of their own; where
        # that layer is not built (a sampled model) its cache layer is kept as a stand-in the model fills
        # with zeros for each new token (`_standin`), as the layer itself would fill it.
        att_set = frozenset(cfg.attention_layers)
        att = [i for i in idx if i in att_set]
        cached = sorted({cfg.kv_source(i) for i in att})
        self._cache_layer = [cached.index(cfg.kv_source(i)) if i in att_set else -1 for i in idx]
        self._standin = [c for c, j in enumerate(cached) if j not in frozenset(idx)]
        self._pos = 0                      # tokens ingested (n_past where no attention layer is built)
        n = max(1, len(cached))
        self.window_chunk = vocab.check_int("window_chunk", window_chunk, 1)
        if cfg.attention == "mla":
            self.cache = KVCache.mla(n, self.max_context, cfg.kv_lora_rank, cfg.qk_rope_head_dim, kv=kv)
        else:
            # windowed layers keep only their window (rings; KVCache.gqa's `windows`); layers of another KV
            # geometry (Gemma 4's global layers: their own head dim and KV heads) in a KVCache of their own,
            # the two standing as one (KVCacheGroup: its byte counts are the two caches' sums)
            windows = [cfg.layer_window(i) or 0 for i in cached]
            dims = [(cfg.layer_kv_heads(i), cfg.layer_head_dim(i), cfg.layer_v_dim(i) or cfg.layer_head_dim(i))
                    for i in cached]
            win = windows if any(windows) else None
            if len(set(dims)) > 1:
                self.cache = KVCacheGroup(self.max_context, dims, kv=kv, windows=win, chunk=self.window_chunk)
            else:
                d = dims[0] if dims else (cfg.n_kv_heads, cfg.head_dim, cfg.v_head_dim)
                self.cache = KVCache.gqa(n, self.max_context, *d, kv=kv, windows=win, chunk=self.window_chunk)
        self.last_timing: dict = {}

    # -- state ---------------------------------------------------------------------------
    @property
    def n_past(self) -> int:
        """Tokens held in the KV cache (the position of the next token); a sampled hybrid with no
        attention layer built: the tokens its linear layers have taken."""
        return self.cache.length(0) if any(c >= 0 for c in self._cache_layer) else self._pos

    def reset(self) -> None:
        self.cache.reset()
        self._pos = 0
        for layer in self.layers:
            layer.rstate = None

    def fill_synthetic(self, n_tokens: int, seed: int = 0) -> None:
        """Fill the cache to `n_tokens` random finite entries (decode cost at depth does not depend on
        them; a hybrid's linear layers take random finite states, whose cost does not depend on the
        depth either)."""
        self.reset()
        self.cache.fill_synthetic(int(n_tokens), seed=seed)
        self._pos = int(n_tokens)
        cfg = self.config
        if n_tokens and cfg.linear_layers:
            rng = np.random.default_rng(seed)
            K, C = cfg.linear_conv, cfg.linear_conv_dim
            # the state per head: k_dim x v_dim (Gated DeltaNet), head_dim x d_state (Mamba-2)
            st = (cfg.linear_v_heads, cfg.linear_v_dim, cfg.linear_k_dim) if cfg.linear_kind == "mamba2" else \
                (cfg.linear_v_heads, cfg.linear_k_dim, cfg.linear_v_dim)
            for layer in self.layers:
                if layer.linear:
                    layer.rstate = (rng.standard_normal((K - 1, C)).astype(np.float32),
                                    (0.1 * rng.standard_normal(st)).astype(np.float32))

    # -- bytes ---------------------------------------------------------------------------
    @property
    def weight_bytes(self) -> int:
        """Bytes of every weight array this object holds (sampled models: only the built layers)."""
        b = self.embed.nbytes + self.final_norm.nbytes + sum(l.nbytes for l in self.layers) + \
            sum(a.nbytes for a in getattr(self, "ple", {}).values()) + \
            sum(a.nbytes for a in (getattr(self, "final_norm_bias", None), getattr(self, "lm_head_bias", None))
                if a is not None)
        return int(b + (0 if self.lm_head is self.embed else self.lm_head.nbytes))

    # -- forward -------------------------------------------------------------------------
    def _check_tokens(self, tokens) -> np.ndarray:
        t = np.asarray(tokens)
        if t.ndim == 0:
            t = t.reshape(1)
        if t.ndim != 1 or t.size == 0:
            raise ValueError(f"`tokens` must be a non-empty 1-D sequence of token ids, got shape {t.shape}")
        if t.dtype.kind not in "iu":
            raise TypeError(f"`tokens` must be integers, got {t.dtype}")
        V = self.config.vocab_size
        bad = (t < 0) | (t >= V)
        if bad.any():
            j = int(np.argmax(bad))
            raise ValueError(f"`tokens`[{j}] = {int(t[j])} is outside the vocabulary [0, {V})")
        P = self.config.ple_vocab if self.config.ple_size else V
        if P < V and (t >= P).any():   # Gemma 4: the per-layer table may be shorter than the vocabulary
            j = int(np.argmax(t >= P))
            raise ValueError(f"`tokens`[{j}] = {int(t[j])} is outside the per-layer embedding table [0, {P}) "
                             f"(vocab_size_per_layer_input)")
        if self.n_past + t.size > self.max_context:
            raise ValueError(f"context full: the cache holds {self.n_past} of max_context={self.max_context} "
                             f"tokens, cannot add {t.size}")
        return t.astype(np.int64)

    def embed_tokens(self, tokens: np.ndarray) -> np.ndarray:
        x = np.ascontiguousarray(_to_f32(self.embed[tokens]), dtype=np.float32)
        if self.config.model_type in configs.GEMMA_FAMILIES + configs.GEMMA4_FAMILIES + configs.GEMMA1_FAMILIES:
            # Gemma*ScaledWordEmbedding: times sqrt(hidden) (in float32, as HF's float32 model; a bf16 HF model
            # rounds the factor to bf16 first)
            x *= np.float32(self.config.hidden_size ** 0.5)
        if self.config.embedding_multiplier:                   # Granite: times embedding_multiplier
            x *= np.float32(self.config.embedding_multiplier)
        return x

    def per_layer_inputs(self, tokens: np.ndarray, x: np.ndarray) -> np.ndarray | None:
        """Gemma 4's per-layer embeddings (HF Gemma4TextModel.get_per_layer_inputs + project_per_layer_inputs)
        of tokens[T] with their scaled input embeddings x[T, hidden]: (RMSNorm_P(per_layer_model_projection(x)
        x hidden^-1/2) + embed_tokens_per_layer[tokens] x sqrt(P)) x 2^-1/2 -> [T, n_layers, P] float32 (layer
        i takes [:, i]); None for a model without them."""
        cfg = self.config
        if not cfg.ple_size:
            return None
        T, L, P = int(tokens.size), cfg.n_layers, cfg.ple_size
        proj = _ops.linear(x, self.ple["model.per_layer_model_projection.weight"]) * np.float32(cfg.hidden_size ** -0.5)
        proj = _ops.rms_norm(np.ascontiguousarray(proj).reshape(T * L, P),
                             self.ple["model.per_layer_projection_norm.weight"], float(cfg.rms_norm_eps))
        tok = _to_f32(self.ple[_PLE_TABLE][tokens]) * np.float32(P ** 0.5)
        return ((proj.reshape(T, L, P) + tok.reshape(T, L, P)) * np.float32(2.0 ** -0.5)).astype(np.float32)

    def forward_layers(self, x: np.ndarray, positions: np.ndarray, n_out: int | None = None,
                       ple: np.ndarray | None = None, rope_seq_len: int | None = None) -> np.ndarray:
        """x through every built layer; n_out (Layer.forward's) applies to the last one; ple: Gemma 4's
        per-layer inputs [T, n_layers, P] (per_layer_inputs), None without them; rope_seq_len: Layer.forward's
        (longrope's regime: the whole call's sequence length)."""
        times = []
        last = len(self.layers) - 1
        if self.config.ple_size and (ple is None or np.shape(ple) != (x.shape[0], self.config.n_layers,
                                                                       self.config.ple_size)):
            raise ValueError(f"`ple` must be the per-layer inputs [{x.shape[0]}, {self.config.n_layers}, "
                             f"{self.config.ple_size}] (Model.per_layer_inputs), got "
                             f"{None if ple is None else np.shape(ple)}")
        for c in self._standin:   # a sampled model's stand-in cache layers take the new tokens (zeros)
            part, k = self.cache.locate(c) if hasattr(self.cache, "locate") else (self.cache, c)
            T = x.shape[0]
            part.append(k, np.zeros((T, part.n_kv_heads, part.head_dim), np.float32),
                        np.zeros((T, part.n_kv_heads, part.v_head_dim), np.float32))
        for j, layer in enumerate(self.layers):
            t0 = time.perf_counter()
            x = layer.forward(x, self.cache, self._cache_layer[j], positions, self.mla_strategy,
                              n_out=n_out if j == last else None,
                              ple=None if ple is None else np.ascontiguousarray(ple[:, layer.index]),
                              rope_seq_len=rope_seq_len)
            times.append(time.perf_counter() - t0)
        self.last_timing["layer_s"] = times
        return x

    def head(self, x: np.ndarray) -> np.ndarray:
        cfg = self.config
        norm = _ops.layer_norm if cfg.layer_norm or cfg.norm_bias else _ops.rms_norm
        h = norm(x, self.final_norm, float(cfg.rms_norm_eps))
        nb = getattr(self, "final_norm_bias", None)
        if nb is not None:   # Phi-3.5-MoE: a biased LayerNorm, a biased lm_head
            h = h + nb
        logits = _ops.linear(h, self.lm_head, getattr(self, "lm_head_bias", None))
        if cfg.logit_scale is not None:   # Cohere: logits x logit_scale
            logits *= np.float32(cfg.logit_scale)
        cap = getattr(cfg, "final_logit_softcapping", None)
        return _ops.softcap(logits, cap) if cap else logits

    def prefill(self, tokens, *, logits: str = "all") -> np.ndarray:
        """Ingest `tokens` after what the cache holds. logits="all" -> [T, vocab]; "last" -> [vocab]
        (what generation needs: the lm_head runs on the last token only, and in a model with all its
        layers built the last layer's feed-forward part too, after the attention has put every
        token in the cache: llama.cpp's graphs skip the same rows, `inp_out_ids`; a sampled model
        runs its last built layer whole, since it stands for a middle one).

        Afterwards `last_timing` holds the seconds spent in the embedding lookup, in each built
        layer (a list) and in the final norm + lm_head (glmbench.measure reads it)."""
        if logits not in ("all", "last"):
            raise ValueError(f"`logits` must be 'all' or 'last', got {logits!r}")
        t = self._check_tokens(tokens)
        pos = np.arange(self.n_past, self.n_past + t.size, dtype=np.int64)
        t0 = time.perf_counter()
        x = self.embed_tokens(t)
        ple = self.per_layer_inputs(t, x)
        t1 = time.perf_counter()
        self.last_timing = {"embed_s": t1 - t0}
        step = self.window_chunk if any(getattr(self.cache, "windows", ())) else t.size
        n_out = 1 if logits == "last" and not self.sampled else None
        seq = self._longrope_regime(t.size)
        if t.size <= step:
            x = self.forward_layers(x, pos, n_out, ple, rope_seq_len=seq)
        else:  # a ring layer takes at most window_chunk tokens at once; layer_s sums the pieces
            parts, per_layer = [], np.zeros(len(self.layers))
            for a in range(0, t.size, step):
                parts.append(self.forward_layers(np.ascontiguousarray(x[a:a + step]), pos[a:a + step], n_out,
                                                 None if ple is None else ple[a:a + step], rope_seq_len=seq))
                per_layer += self.last_timing["layer_s"]
            x = np.concatenate(parts)
            self.last_timing["layer_s"] = per_layer.tolist()
        self._pos += int(t.size)
        t2 = time.perf_counter()
        out = self.head(np.ascontiguousarray(x[-1:]))[0] if logits == "last" else self.head(x)
        t3 = time.perf_counter()
        self.last_timing.update(head_s=t3 - t2, total_s=t3 - t0)
        return out

    def _longrope_regime(self, n_new: int) -> int | None:
        """longrope (ModelConfig.longrope): the sequence length n_past + n_new that picks the factors of this
        call's tokens (None for other ropes). Where it crosses original_max_position_embeddings with keys
        already cached (turned by the short factors), a LongRopeCrossing warning: the cache is kept as it is
        (HF's forward with a cache does the same; HF's generate() re-runs the whole sequence by the long
        factors, which reset() + prefill of every token reproduces)."""
        cfg = self.config
        if cfg.rope_type != "longrope":
            return None
        seq = self.n_past + int(n_new)
        orig = cfg.longrope.original
        if self.n_past and self.n_past <= orig < seq:
            warnings.warn(LongRopeCrossing(
                f"{cfg.name}: the sequence grows from {self.n_past} to {seq} tokens, past original_max_position_"
                f"embeddings = {orig}: these tokens turn by longrope's long factors, the {self.n_past} cached keys "
                f"stay turned by the short ones (as HF's forward with that cache; HF's generate() re-runs the "
                f"whole sequence instead: reset() and prefill every token for its logits)"), stacklevel=3)
        return seq

    def decode(self, token) -> np.ndarray:
        """One token -> logits [vocab]."""
        t = self._check_tokens(token)
        if t.size != 1:
            raise ValueError(f"`token` must be a single token id, got {t.size} tokens")
        return self.prefill(t, logits="last")

    def __repr__(self) -> str:
        c = self.config
        return (f"Model({c.name!r}, {len(self.layers)}/{c.n_layers} layers, weights={self.weights}, "
                f"kv={self.kv}, max_context={self.max_context}, n_past={self.n_past})")

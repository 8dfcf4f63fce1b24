"""Architecture configs: read a Hugging Face `config.json` into a `ModelConfig`, and derive the
exact figures everything else builds on (parameters, weight bytes, KV bytes per token, FLOPs).

Families (HF `model_type`), with the field names HF uses in each:

  glm4_moe_lite  MLA + MoE, sigmoid router with e_score_correction_bias (noaux_tc)
  deepseek_v2    MLA + MoE, softmax router; q_lora_rank null -> a direct q_proj
  qwen3          dense GQA, per-head RMSNorm on q and k
  qwen3_moe      GQA + MoE, softmax router, no shared expert; decoder_sparse_step, mlp_only_layers
  llama, mistral dense GQA
  mixtral        GQA + MoE (Mistral's attention; softmax router, top-k renormalized, no shared expert)
  phi3           dense GQA (Phi-3, Phi-3.5, Phi-4): q/k/v and gate/up fused in the checkpoint, split on input;
                 partial rotary (Phi-4-mini), a window on every layer where the config sets one; LongRoPE
                 (rope_scaling "longrope", Phi-3-mini-128k / Phi-3.5-mini / Phi-4-mini: short_factor / long_factor
                 by the sequence length, ModelConfig.longrope) run
  seed_oss       dense GQA with q/k/v bias (attention_out_bias for o_proj)
  glm4           dense GQA (GLM-4-0414): q/k/v bias, half the head dims rotated, four norms per layer
  llama4_text    GQA + MoE (Llama 4; `llama4` wraps it): one routed expert of 16 or 128 and a shared one,
                 MoE on every layer or every other (interleave_moe_layer_step), chunked attention
                 (attention_chunk_size) on the rope layers, every 4th layer global (no rope)
  minimax_m2     GQA + MoE (MiniMax-M2): sigmoid router with e_score_correction_bias, q/k RMSNorm over
                 all heads at once, partial rotary (rotary_dim)
  ernie4_5_moe   GQA + MoE (ERNIE-4.5 MoE): softmax router with e_score_correction_bias, shared
                 experts, MoE layers from moe_layer_start_index to moe_layer_end_index
  qwen2_moe      GQA + MoE (Qwen1.5-MoE, Qwen2-MoE): q/k/v bias, one shared expert with a sigmoid gate
  qwen3_next     hybrid (Qwen3-Next): three of every four layers Gated DeltaNet linear attention
                 (a fixed recurrent state per stream, no KV cache), the fourth gated GQA attention
                 (q_proj also gives a sigmoid gate on the output, partial rotary, q/k norm); MoE
                 with a gated shared expert on every layer
  qwen3_5_text, qwen3_5_moe_text
                 the same hybrid layers (Qwen3.5, dense MLP or MoE; `qwen3_5` / `qwen3_5_moe` wrap
                 them), the linear layers' input projections stored as four tensors
  cohere         dense GQA (Command-R, Command-R+): attention and MLP side by side on one
                 LayerNorm (layer_norm_eps), interleaved rope, logit_scale, per-head q/k LayerNorm
                 (use_qk_norm, Command-R+)
  cohere2        the same layers (Command-R7B, Command-A), three of every four attending within
                 sliding_window tokens, the fourth global without rope
  glm_moe_dsa, deepseek_v32
                 MLA + MoE with DeepSeek Sparse Attention (GLM-5, DeepSeek-V3.2): a lightning indexer per layer
                 (index_n_heads x index_head_dim queries from the q latent, one cached key per token) picks
                 the index_topk keys each query's MLA attends to; GLM's "shared" layers reuse the previous
                 full layer's choice (indexer_types)
  falcon_h1      hybrid (Falcon-H1): every layer runs GQA attention and a Mamba-2 mixer side by side on one
                 normed input, their outputs summed (parallel_mixers: a KV cache and a state in every
                 layer), then a SwiGLU MLP; muP multipliers that change numerics only
  lfm2, lfm2_moe hybrid (Liquid AI's LFM2, LFM2-MoE): each layer (layer_types, or the older full_attn_idxs)
                 either GQA attention with q/k RMSNorm or a gated short convolution (linear_kind
                 "shortconv": in_proj hidden -> 3 x hidden (B, C, x), a causal depthwise conv1d of
                 conv_L_cache taps over B x x, times C, out_proj; a (conv_L_cache - 1) x hidden state per
                 stream, no KV cache), then a SwiGLU MLP (LFM2: its width by block_auto_adjust_ff_dim /
                 block_ffn_dim_multiplier / block_multiple_of) or, past num_dense_layers, LFM2-MoE's MoE
                 (sigmoid router with expert_bias, norm_topk_prob, routed_scaling_factor)
  olmoe          GQA + MoE (OLMoE): q/k RMSNorm over all heads at once (q_norm hidden_size wide, k_norm
                 (hidden / heads) x KV heads), clip_qkv, every layer num_experts experts, softmax top-k
                 renormalized only where norm_topk_prob (released: not), no shared expert
  granite        dense GQA (Granite 3.x): Llama's layers with Granite's multipliers (embedding_multiplier,
                 residual_multiplier on each sub-layer's output, attention_multiplier as the softmax scale,
                 logits / logits_scaling)
  granitemoe     the same with every layer MoE (num_local_experts, softmax over the top-k logits), no shared
                 expert (granitemoeshared is not modelled)
  olmo2          dense GQA (OLMo 2): post-norm layers (an RMSNorm on the attention's and on the MLP's output
                 before each residual add, no norm before them: post_norms), q/k RMSNorm over all heads at once
  olmo3          OLMo 2's layers with sliding-window attention on the layer_types' sliding layers (default
                 three of every four, sliding_window 4096); the full layers take rope_parameters.full_attention
                 (YaRN), the sliding ones plain rope by their own base (rope_local_theta)
  smollm3        dense GQA (SmolLM3): Llama's layers, every no_rope_layer_interval-th one without rope
                 (no_rope_layers: 1 rotates, 0 not; nope_layers), optional sliding windows (use_sliding_window)
  exaone4        dense GQA (EXAONE 4.0): post-norm layers as OLMo 2's with per-head q/k RMSNorm; where
                 sliding_window is set, the layer_types' sliding layers attend within it and rotate, the full
                 ones attend globally without rope (nope_layers)

  gemma3n_text   Gemma 3n's text model (`gemma3n` wraps it): Gemma 3's sandwich-normed GQA layers (q / k / v
                 RMSNorm, softmax scale 1, every 5th layer global) with AltUp (altup_num_inputs copies of the
                 hidden state, predicted and corrected around each layer by small per-layer coefficient maps;
                 altup_projections / altup_unembed_projections into and out of them), LAuReL (a laurel_rank
                 low-rank residual beside attention), Gemma 4's per-layer embeddings (PLE) and kv-shared last
                 layers (num_kv_shared_layers, no cache of their own), a per-layer MLP width (intermediate_size
                 may be a list) and activation sparsity (a Gaussian top-k on the gate) on the first layers
                 (activation_sparsity_pattern); priced, not run
  hunyuan_v1_dense
                 dense GQA (Hunyuan dense): Llama's layers with per-head q / k RMSNorm applied after rope
                 (query_layernorm / key_layernorm); rope_scaling "dynamic" with an alpha is HF's NTK-alpha rope
                 (rope_type ntk_alpha: plain rope by the base rope_theta x alpha^(d / (d - 2))); run
  hunyuan_v1_moe GQA + MoE (Hunyuan-A13B): the same attention; every layer num_experts experts of
                 intermediate_size (softmax top moe_topk, renormalised) beside one shared MLP of that width
                 (shared_mlp); run
  nemotron-nas   GQA, per-layer shapes (NVIDIA's Llama-Nemotron "DeciLM": Llama-3.3-Nemotron-Super-49B, Llama-3.1-
                 Nemotron-51B / Ultra-253B; remote code DeciLMForCausalLM): each layer's block_configs entry gives its
                 attention (n_heads_in_group -> num_attention_heads / n_heads_in_group KV heads; no_op: no attention and
                 no input norm; replace_with_linear: one hidden x hidden linear, no cache) and its MLP (ffn_mult ->
                 a SwiGLU MLP int(2 ffn_mult hidden / 3) rounded up to a multiple of 256 wide; no_op;
                 replace_with_linear); priced per layer, not run
  exaone         dense GQA (EXAONE 3.0 / 3.5): Llama's layers (transformers runs it as LlamaForCausalLM, the released
                 checkpoint's transformer.h.N names renamed to Llama's); run
  ernie4_5       dense GQA (ERNIE-4.5 0.3B): Llama's layers with interleaved rope (pairs 2i, 2i + 1), biases on
                 every projection where use_bias; run
  arcee          dense GQA (Arcee AFM-4.5B): Llama's layers with an ungated MLP, down(act(up x)) (hidden_act,
                 default relu2: relu(x)^2; mlp_gated False), YaRN rope where rope_scaling says so; run
  apertus        dense GQA (Swiss AI Apertus): Llama's layers (HF's attention_layernorm / feedforward_layernorm) with
                 per-head q/k RMSNorm before rope and an ungated MLP down(xielu(up x)) whose xIELU holds per layer
                 the learned alpha_p / alpha_n and the buffers beta / eps (mlp.act_fn.*; ops.xielu); llama3 rope
                 (base 12e6) where the config states none; run
  gemma          dense GQA (Gemma 1: gemma-2b / gemma-7b): Llama's pre-norm layer with Gemma's pieces, embeddings
                 times sqrt(hidden), (1 + w) RMSNorms, a GeGLU MLP (hidden_act gelu_pytorch_tanh; the released "gelu"
                 read as it, as GemmaConfig does), head_dim 256 whatever hidden / heads (MQA on the 2B), tied head; no
                 soft-capping, no post norms, no windows; run (op by op, no C layer)
  glm            dense GQA (GLM-4-9B-Chat as transformers ports it, GlmForCausalLM; not glm4, GLM-4-0414): Llama's two
                 norms per layer with q/k/v biases (attention_bias, o_proj none), half the head dims rotated
                 (partial_rotary_factor 0.5) in interleaved pairs (2i, 2i + 1), gate and up fused in the checkpoint
                 (mlp.gate_up_proj, gate rows first: split on input); run
  internlm3      dense GQA (InternLM3-8B; transformers 5.25 runs it as LlamaForCausalLM): Llama's layers, head_dim 128,
                 the released config's own bias names qkv_bias (q/k/v/o) and bias (MLP), which must agree
                 (InternLM3Config refuses them apart); run (an MLP bias priced, not run)
  phimoe         GQA + MoE (Phi-3.5-MoE): LayerNorms with a bias (weight and bias, eps rms_norm_eps), q/k/v/o
                 biases (attention_bias), every layer num_local_experts experts of intermediate_size routed by
                 sparsemixer (two experts per token, HF's eval-mode routing: ops.sparsemixer_route), an lm_head
                 bias (lm_head_bias), a window on every layer where the config sets one; run, the released
                 config's longrope too (short_mscale / long_mscale as its attention factors; past
                 original_max_position_embeddings the long factors, as the released model's code and llama.cpp,
                 where transformers 5.25 keeps the short ones: ModelConfig.longrope)
  dots1          GQA + MoE (rednote-hilab's dots.llm1): Qwen3's attention (per-head q/k RMSNorm before rope, q/k/v/o
                 biased where attention_bias) with DeepSeek-V3's MoE (sigmoid router with e_score_correction_bias,
                 n_group / topk_group, norm_topk_prob, routed_scaling_factor, n_shared_experts shared experts of
                 moe_intermediate_size each) from layer first_k_dense_replace on, dense MLPs of intermediate_size
                 before it; windows (sliding_window) on the layers from max_window_layers on (HF's layer_types;
                 the released config has none); run
  nemotron       dense GQA (NVIDIA Nemotron-4 / Minitron / Nemotron-Mini): Llama's attention with partial rotary
                 (partial_rotary_factor, HF's default 0.5; q/k/v/o biased where attention_bias), LayerNorm1P norms
                 (a weight held as w and applied as 1 + w, and a bias; eps norm_eps) before attention and MLP and at
                 the end, the ungated relu2 MLP (up / down, biased where mlp_bias); run
  afmoe          GQA + MoE (Arcee's Trinity: AFMoE): per-head q/k RMSNorm before rope, a sigmoid output gate per
                 head channel from its own gate_proj (attn_output_gate: priced as Qwen3-Next's), windows
                 (sliding_window) on the sliding layers of layer_types (default all but every
                 global_attn_every_n_layers-th), rope on those only (the full layers are NoPE: nope_layers), four
                 RMSNorms per layer (Gemma's sandwich, plain weights); dense MLPs on the first num_dense_layers,
                 then num_experts experts of moe_intermediate_size routed by sigmoid scores with expert_bias,
                 renormalised, times route_scale, beside num_shared_experts x moe_intermediate_size shared MLP;
                 embeddings times sqrt(hidden_size) where mup_enabled; run

The five from glm4 to qwen2_moe are priced (cost model, memory, weight bytes: parameters counted as HF's
modeling code builds them); glmbench.Model does not run their forward pass (forward_unsupported says
why). The hybrids and Cohere's families run in glmbench.Model (matched against HF's tiny models).

Structural sizes (hidden_size, heads, layers, MLA ranks, expert counts...) are required: a
missing one is a ValueError naming it. Behavioural fields that HF's config classes default
(eps, rope_theta, bias flags, routing knobs) take the HF default when absent; the defaults below
are copied from transformers 5.x `configuration_<family>.py` for each family.

Conventions (stated once, used everywhere):
  * num_hidden_layers excludes GLM's multi-token-prediction layer (num_nextn_predict_layers),
    which normal decoding never runs; it is neither counted nor cached.
  * total_params counts every tensor of the checkpoint except that MTP layer; active_params
    counts what one token touches: all of it except the routed experts it was not sent to.
    Embeddings and lm_head are included unless `embeddings=False`.
  * depth d = tokens already in the cache; the new token attends to d + 1 keys.
"""
from __future__ import annotations

import dataclasses
import functools
import json
import math
import os
from dataclasses import dataclass, field
from typing import Any, Mapping

import numpy as np

from glmbench import vocab
from glmbench.models import gguf_file

_DATA = os.path.join(vocab.DATA_DIR, "models")

FAMILIES = {
    "glm4_moe_lite": "mla",
    "deepseek_v2": "mla",
    "qwen3": "gqa",
    "qwen3_moe": "gqa",
    "llama": "gqa",
    "mistral": "gqa",
    "mixtral": "gqa",
    "phi3": "gqa",
    "seed_oss": "gqa",
    "qwen2": "gqa",
    "glm4_moe": "gqa",
    "deepseek_v3": "mla",
    "gemma3_text": "gqa",
    "gpt_oss": "gqa",
    "gemma2": "gqa",
    "glm4": "gqa",
    "llama4_text": "gqa",
    "minimax_m2": "gqa",
    "ernie4_5_moe": "gqa",
    "qwen2_moe": "gqa",
    "qwen3_next": "gqa",
    "qwen3_5_text": "gqa",
    "qwen3_5_moe_text": "gqa",
    "cohere": "gqa",
    "cohere2": "gqa",
    "nemotron_h": "gqa",
    "granitemoehybrid": "gqa",
    "kimi_linear": "mla",
    "gemma4_text": "gqa",
    "ministral3": "gqa",
    "falcon_h1": "gqa",
    "glm_moe_dsa": "mla",
    "deepseek_v32": "mla",
    "lfm2": "gqa",
    "lfm2_moe": "gqa",
    "olmoe": "gqa",
    "granite": "gqa",
    "granitemoe": "gqa",
    "olmo2": "gqa",
    "olmo3": "gqa",
    "smollm3": "gqa",
    "exaone4": "gqa",
    "gemma3n_text": "gqa",
    "hunyuan_v1_dense": "gqa",
    "hunyuan_v1_moe": "gqa",
    "phimoe": "gqa",
    "nemotron-nas": "gqa",
    "exaone": "gqa",
    "ernie4_5": "gqa",
    "dots1": "gqa",
    "afmoe": "gqa",
    "nemotron": "gqa",
    "arcee": "gqa",
    "apertus": "gqa",
    "gemma": "gqa",
    "glm": "gqa",
    "internlm3": "gqa",
}
# families the cost model prices but glmbench.Model's forward pass does not run (what each lacks)
PRICED_ONLY = {
    "glm4": "GLM-4's post-attention and post-MLP norms (4 per layer, plain RMSNorm) and interleaved partial rope",
    "llama4_text": "Llama 4's chunked attention, weightless q/k L2 norm, NoPE layers' temperature tuning and "
                   "top-1 sigmoid router",
    "minimax_m2": "a check against HF's MiniMax-M2 (its q/k RMSNorm over all heads at once runs, as OLMoE's; its "
                  "sigmoid router with a choice bias and partial rotary are not yet matched against HF's model)",
    "ernie4_5_moe": "ERNIE-4.5's router (softmax with a choice bias) and shared experts",
    "qwen2_moe": "Qwen2-MoE's gated shared expert",
    "ministral3": "Ministral 3's attention temperature (rope_parameters.llama_4_scaling_beta: queries times "
                  "1 + beta log(1 + floor(position / original_max_position_embeddings)))",
    "kimi_linear": "Kimi Delta Attention (the delta rule with a per-channel forget gate and low-rank gates; "
                   "no C op for it yet)",
    "falcon_h1": "Falcon-H1's parallel layer (attention and Mamba-2 side by side on one normed input, summed) "
                 "and its muP multipliers",
    "glm_moe_dsa": "DeepSeek Sparse Attention's lightning indexer and top-k selection (no C op for them yet)",
    "deepseek_v32": "DeepSeek Sparse Attention's lightning indexer and top-k selection (no C op for them yet)",
    "lfm2": "LFM2's gated short convolution (no C op for it yet)",
    "lfm2_moe": "LFM2's gated short convolution (no C op for it yet) and LFM2-MoE's router",
    "gemma3n_text": "Gemma 3n's AltUp (four hidden streams predicted and corrected around every layer), LAuReL's "
                    "low-rank residual and the activation-sparse (Gaussian top-k) gate of its first layers",
    "nemotron-nas": "DeciLM's per-layer shapes (KV heads and MLP widths per layer, attention-free and "
                    "linear-replaced layers)",
}
# Hunyuan (HF HunYuanDenseV1 / HunYuanMoEV1, transformers 5.25): the q / k norms are named query_layernorm /
# key_layernorm, the router mlp.gate.wg, the shared MLP mlp.shared_mlp (glmbench's names: q_norm / k_norm,
# mlp.gate, mlp.shared_experts; a folder's own names are read as these: gguf_file._stored_owner)
HUNYUAN_FAMILIES = ("hunyuan_v1_dense", "hunyuan_v1_moe")
# hybrid families: some layers are linear attention (Gated DeltaNet) with a recurrent state (Model runs
# them: Layer._forward_hybrid, ops.gated_delta_rule and ops.causal_conv1d)
LINEAR_FAMILIES = ("qwen3_next", "qwen3_5_text", "qwen3_5_moe_text")
# Mamba-2 hybrids: some layers' token mixer is a Mamba-2 selective state space (SSD) holding a fixed
# state per stream (linear_kind "mamba2"; the linear_* sizes read as: linear_v_heads SSM heads of
# linear_v_dim channels, linear_k_heads groups whose B / C of linear_k_dim (d_state) the heads share).
# Nemotron-H's layers are blocks of one kind each (Mamba-2, attention, MLP or MoE: mixer_layers /
# ffn_layers), its MLPs and experts ungated relu2; Granite 4.0-H's layers hold a mixer and an MLP
# (a shared one, plus experts where num_local_experts > 0) with Granite's multipliers. Neither
# rotates: their attention has no position embedding.
MAMBA_FAMILIES = ("nemotron_h", "granitemoehybrid")
# parallel hybrids: every layer holds both mixers side by side, softmax attention (a KV cache) and Mamba-2 (a
# fixed state), on one normed input, their outputs summed (ModelConfig.parallel_mixers: each linear layer is an
# attention layer too). Falcon-H1 (HF FalconH1DecoderLayer): then a SwiGLU MLP; its muP multipliers (embedding,
# attention in / out, key, SSM in / out and per in_proj block, MLP gate / down, lm_head) scale values only
# (llama.cpp's converter folds them into the weights). Priced, not run (PRICED_ONLY)
PARALLEL_FAMILIES = ("falcon_h1",)
# Kimi-Linear: three of every four layers Kimi Delta Attention (linear_kind "kda": the gated delta rule with
# a per-channel decay, q / k / v each through a short convolution, low-rank forget and output gates), the
# fourth MLA; DeepSeek-V3's MoE (priced, not run: PRICED_ONLY)
KDA_FAMILIES = ("kimi_linear",)
# LFM2 (Liquid AI): some layers' token mixer is a gated short convolution (linear_kind "shortconv", HF
# Lfm2ShortConv: in_proj hidden -> 3 x hidden as B, C, x; a causal depthwise conv1d of linear_conv =
# conv_L_cache taps over B * x per channel; times C; out_proj), holding the conv's last linear_conv - 1
# inputs per stream (no KV cache); the others GQA with q/k RMSNorm; LFM2-MoE's MoE past num_dense_layers.
# Priced, not run (PRICED_ONLY)
SHORTCONV_FAMILIES = ("lfm2", "lfm2_moe")
# Gemma's layer: embeddings x sqrt(hidden), (1 + w) sandwich norms, GeGLU, query_pre_attn_scalar
GEMMA_FAMILIES = ("gemma2", "gemma3_text")
# Gemma 1 (HF GemmaModel, transformers 5.25): Gemma's embeddings x sqrt(hidden), (1 + w) RMSNorms and GeGLU on Llama's
# pre-norm layer (two norms per layer; no sandwich norms, soft-capping, windows or q / k norms): Model runs it op by
# op (Layer.forward_py: the C layer's MLP is SwiGLU, its Gemma layer the sandwich one)
GEMMA1_FAMILIES = ("gemma",)
# Gemma 4 (HF Gemma4TextModel, transformers 5.25): Gemma 3's sandwich norms (plain w, not 1 + w), a softmax
# scale of 1 with q / k / v RMSNorms (v's weightless); its global (full-attention) layers have their own head
# dim and KV heads (global_head_dim, num_global_key_value_heads) and proportional rope on a quarter of the
# head, and where attention_k_eq_v their values are the key projection (no v_proj); the last
# num_kv_shared_layers layers read the cache of the last earlier layer of their kind (no k / v projection,
# no cache of their own); per-layer embeddings (PLE: a [vocab, layers x P] table and a projection of the
# input embedding feed each layer a P-wide signal through a gate and a projection); the MoE models run a
# dense MLP beside the experts in every layer (the shared expert here)
GEMMA4_FAMILIES = ("gemma4_text",)
# Gemma 3n (HF Gemma3nTextModel, transformers 5.25): Gemma 4's attention (q / k / v RMSNorm, scale 1, kv-shared last
# layers reading the last earlier layer of their kind) and per-layer embeddings on Gemma 3's sandwich-normed
# layers, plus AltUp (altup_inputs streams; per layer a router hidden -> n with its norm, prediction coefficients
# n -> n^2, correction coefficients n -> n, an output scale; model-wide (n - 1) hidden x hidden projections in and
# (n - 1) out) and LAuReL (per layer hidden -> laurel_rank -> hidden and a norm). Priced, not run (PRICED_ONLY)
GEMMA3N_FAMILIES = ("gemma3n_text",)
# DeepSeek Sparse Attention (HF GlmMoeDsaIndexer / DeepseekV32Indexer, transformers 5.25): DeepSeek-V3's MLA and
# MoE, plus in each layer with a full indexer (indexer_layers) wq_b (q latent -> index_n_heads x index_head_dim),
# wk (hidden -> one index_head_dim key, LayerNormed with a bias, roped, cached per token), weights_proj (hidden ->
# a weight per index head); a query's score of a key is sum_h w_h relu(q_h . k), and its MLA attends to the
# index_topk best keys only. GLM's "shared" layers (indexer_types) reuse the previous full layer's choice: no
# indexer weights and no indexer cache of their own. Priced, not run (PRICED_ONLY)
DSA_FAMILIES = ("glm_moe_dsa", "deepseek_v32")
# multimodal wrappers whose text model is one of the families (the config's `text_config`); the wrapper's vision
# tower (and audio tower, projector) is not priced: ModelConfig.wrapper names the wrapper, unpriced() says so
_WRAPPERS = {"gemma3": "gemma3_text", "llama4": "llama4_text", "qwen3_5": "qwen3_5_text",
             "qwen3_5_moe": "qwen3_5_moe_text", "gemma4": "gemma4_text", "gemma3n": "gemma3n_text",
             # Mistral Small 3.1 / 3.2 and Devstral Small 2: a Mistral (or Ministral 3) text model, whose
             # model_type its text_config states (Mistral3Config's default: mistral)
             "mistral3": None,
             # Qwen2-VL, Qwen2.5-VL (transformers 5.25 Qwen2VLTextModel / Qwen2_5_VLTextModel): Qwen2's layers (q / k / v
             # bias) with multimodal rope (mrope: rope_scaling type "mrope" and mrope_section, or rope_parameters'
             # mrope_section), which on text, its three position ids equal, is plain rope of the same dim: priced and run
             # as plain rope. Their older config.json files hold the text fields at the top level (_WRAPPER_FLAT)
             "qwen2_vl": "qwen2", "qwen2_5_vl": "qwen2",
             # Qwen3-VL (Qwen3VLTextModel: Qwen3's layers, interleaved mrope; its deepstack merges vision features into
             # the first layers' hidden states, no weights of the text model's) and Qwen3-VL-MoE (Qwen3-MoE's layers)
             "qwen3_vl": "qwen3", "qwen3_vl_moe": "qwen3_moe",
             # GLM-4.1V / GLM-4.5V (Glm4vTextModel: GLM-4-0414's four-norm layers; Glm4vMoeTextModel: GLM-4.5's MoE)
             "glm4v": "glm4", "glm4v_moe": "glm4_moe",
             # LLaVA, LLaVA-NeXT (any text model: their text_config's model_type, llama by default) and InternVL
             # (transformers' InternVLConfig: Qwen2 by default, or Llama)
             "llava": None, "llava_next": None, "internvl": None}
# a wrapper whose text_config states no model_type: the config class's default text model
_WRAPPER_TEXT_DEFAULT = {"mistral3": "mistral", "llava": "llama", "llava_next": "llama", "internvl": "qwen2"}
# wrappers whose older config.json holds the text model's fields at the top level, no text_config (Qwen2VLConfig's
# __post_init__ takes them from there)
_WRAPPER_FLAT = ("qwen2_vl", "qwen2_5_vl")
# text config fields whose class default differs from the family's (transformers 5.25): GLM-4.5V's Glm4vMoeTextConfig
# defaults attention_bias true and has no head_dim (hidden / heads, Glm4vMoeTextAttention); GLM-4.1V's Glm4vTextAttention
# builds q / k / v with a bias and hidden / heads wide heads whatever the config says (Glm4vTextConfig has neither
# field): "=" forces the value
_WRAPPER_TEXT_FIELDS = {"glm4v_moe": {"attention_bias": True, "head_dim": "hidden / heads"},
                        "glm4v": {"=attention_bias": True, "=head_dim": "hidden / heads"},
                        # Qwen3VLMoeTextTopKRouter renormalizes the top-k weights always (its config has no
                        # norm_topk_prob, whatever the file states; Qwen3-MoE's own default is False)
                        "qwen3_vl_moe": {"=norm_topk_prob": True}}
# wrappers glmbench does not price, and what they lack
_WRAPPERS_REFUSED = {
    "mllama": "Llama 3.2 Vision's text model (MllamaTextModel) interleaves cross-attention layers "
              "(cross_attention_layers: their own q / k / v / o projections, q / k norms, tanh gates, attending to "
              "the image's features instead of a KV cache of the text) with Llama's, and its embedding table holds "
              "8 rows beyond vocab_size; glmbench has no family for such layers"}
# Which tie_word_embeddings a wrapper's text model gets (transformers 5.25): Gemma3ForConditionalGeneration,
# Qwen3_5ForConditionalGeneration, Qwen3_5MoeForConditionalGeneration, Gemma4ForConditionalGeneration and
# Mistral3ForConditionalGeneration declare `_tied_weights_keys` {lm_head: model.language_model.embed_tokens} on the
# wrapper, and PreTrainedModel.get_expanded_tied_weights_keys (modeling_utils.py) ties by the config of the module
# that declares them: the wrapper's TOP-LEVEL field, whatever its text_config says. Llama4ForConditionalGeneration
# declares none; its language_model is a Llama4ForCausalLM(config.text_config), tied by the text_config's field
# (absent here: the text config's value). A top-level field absent from the file: transformers 5's to_diff_dict
# always writes it for these classes (PreTrainedConfig has no such field to compare with), so only a file of
# transformers 4 lacks it, and 4.x tied by the text config (get_text_config(decoder=True)); Mistral Small 3.1 /
# 3.2's config.json (transformers 4.50) states neither, yet its checkpoint holds an lm_head, which 5.25's
# from_pretrained keeps untied (tie_weights: "both are present ... we will NOT tie them"). So: absent -> the text
# config's value (its family's default where it states none)
_WRAPPER_TIE_TOP = ("gemma3", "qwen3_5", "qwen3_5_moe", "gemma4", "mistral3", "gemma3n")
# The other wrappers' rules (transformers 5.25, configuration_*.py and each ForConditionalGeneration's
# `_tied_weights_keys` {lm_head: model.language_model.embed_tokens}, so the wrapper's config decides; Mllama declares
# none): "top", the top-level field where the file states it (Qwen3-VL, Qwen3-VL-MoE, LLaVA-NeXT, InternVL);
# "either", the top-level field or the text_config's when true (Qwen2-VL, Qwen2.5-VL, GLM-4.1V, GLM-4.5V, LLaVA:
# their __post_init__ forwards a pre-v5 text_config's true to the top). Absent at the top level: the text_config's
# value where it states one (as _WRAPPER_TIE_TOP's), else the wrapper class's default (the second item; "either":
# the text config class's default, its family's: Qwen2VLTextConfig and its kin have none, so false)
_WRAPPER_TIE = {"qwen3_vl": ("top", False), "qwen3_vl_moe": ("top", False), "llava_next": ("top", False),
                "internvl": ("top", True), "qwen2_vl": ("either", False), "qwen2_5_vl": ("either", False),
                "glm4v": ("either", False), "glm4v_moe": ("either", False), "llava": ("either", False)}
# families whose HF attention rotates part of each head (partial_rotary_factor; MiniMax-M2's rotary_dim; Gemma 4's
# proportional rope): transformers 5.25's other families turn the whole head whatever partial_rotary_factor says
# (their default rope builds head_dim / 2 frequencies; a scaled rope built from a partial factor does not even
# run), so a config of theirs that states one is refused, not run half-rotated (from_hf). A GGUF's
# rope.dimension_count is llama.cpp's rotated dims in every architecture: read as it (load_gguf)
_HF_NAMES = {"afmoe": "AFMoE", "dots1": "Dots1"}    # (families' names in messages, where not their model_type)
PARTIAL_ROTARY_FAMILIES = ("phi3", "glm4", "glm4_moe", "minimax_m2", "nemotron", "glm", "qwen3_next", "qwen3_5_text",
                           "qwen3_5_moe_text", "gemma4_text")
# families whose HF config has `mlp_bias` (LlamaMLP, SeedOssMLP, DeepseekV2MLP, GraniteMLP: gate / up / down built
# with bias=config.mlp_bias, transformers 5.25); priced with the biases (ModelConfig.mlp_bias), Model does not run them.
# (Nemotron-H's and Falcon-H1's mlp_bias are refused: _mamba_fields, _falcon_h1_fields)
MLP_BIAS_FAMILIES = ("llama", "seed_oss", "deepseek_v2", "granite", "nemotron-nas", "exaone", "arcee", "internlm3", "nemotron")
# families whose dense MLP is ungated, down(act(up x)) (ModelConfig.mlp_gated False; HF ArceeMLP, ApertusMLP):
# Arcee's relu2, Apertus's xIELU
UNGATED_MLP_FAMILIES = ("arcee", "apertus", "nemotron")
# Apertus's xIELU (HF XIELUActivation, transformers 5.25): per layer the learned parameters (counted, as HF's
# model.parameters()) and the buffers (stored in the checkpoint, not counted: as Gemma 4's layer_scalar)
XIELU_PARAMS, XIELU_BUFFERS = ("alpha_p", "alpha_n"), ("beta", "eps")
# ApertusConfig.__post_init__ (transformers 5.25): without rope_parameters (and no v4 rope_scaling), llama3 scaling
# with base 12e6 (a bare rope_theta does not change it)
APERTUS_ROPE = {"rope_type": "llama3", "rope_theta": 12000000.0, "factor": 8.0, "original_max_position_embeddings": 8192,
                "low_freq_factor": 1.0, "high_freq_factor": 4.0}
# model_types whose (remote) code is one of the families': Kimi-K2's is DeepSeek-V3's
_ALIASES = {"kimi_k2": "deepseek_v3"}
# families whose norms are LayerNorms (weight only) with eps `layer_norm_eps`, one per layer, before
# attention and MLP side by side (Model runs them: Layer._forward_cohere)
LAYERNORM_FAMILIES = ("cohere", "cohere2")

# GPT-OSS's clamped SwiGLU, (swiglu_alpha, swiglu_limit): GptOssConfig's defaults (core/ops.py SWIGLU_ALPHA /
# SWIGLU_LIMIT); Model's GPT-OSS layer takes the config's own (model.py, ops.moe_gpt_oss)
GPT_OSS_SWIGLU = (1.702, 7.0)

# HF config-class defaults for optional behavioural fields (transformers 5.x).
_DEFAULTS: dict[str, dict[str, Any]] = {
    "glm4_moe_lite": dict(rms_norm_eps=1e-5, tie_word_embeddings=False, attention_bias=False, n_group=1,
                          topk_group=1, norm_topk_prob=True, routed_scaling_factor=1.8, n_shared_experts=1,
                          rope_interleave=True, topk_method="noaux_tc"),
    "deepseek_v2": dict(rms_norm_eps=1e-6, tie_word_embeddings=False, attention_bias=False, n_group=1,
                        topk_group=1, norm_topk_prob=False, routed_scaling_factor=1.0, n_shared_experts=2,
                        first_k_dense_replace=0, topk_method="greedy", scoring_func="softmax", mlp_bias=False),
    "qwen3": dict(rms_norm_eps=1e-6, tie_word_embeddings=False, attention_bias=False, head_dim=128,
                  max_window_layers=28),
    # (Qwen3MoeConfig has no head_dim default: Qwen3MoeAttention takes hidden_size / num_attention_heads)
    "qwen3_moe": dict(rms_norm_eps=1e-6, tie_word_embeddings=False, attention_bias=False,
                      norm_topk_prob=False, decoder_sparse_step=1, mlp_only_layers=[]),
    "llama": dict(rms_norm_eps=1e-6, tie_word_embeddings=False, attention_bias=False, mlp_bias=False),
    "mistral": dict(rms_norm_eps=1e-6, tie_word_embeddings=False, num_key_value_heads=8, sliding_window=4096),
    # Ministral3Config (transformers 5.25): Mistral's layers, no window, YaRN with an attention temperature
    "ministral3": dict(rms_norm_eps=1e-5, tie_word_embeddings=False, num_key_value_heads=8, head_dim=128,
                       sliding_window=None),
    "mixtral": dict(rms_norm_eps=1e-5, tie_word_embeddings=False, num_key_value_heads=8, sliding_window=None,
                    num_local_experts=8, num_experts_per_tok=2),
    "phi3": dict(rms_norm_eps=1e-5, tie_word_embeddings=False, sliding_window=None),
    "seed_oss": dict(rms_norm_eps=1e-6, tie_word_embeddings=False, attention_bias=True, attention_out_bias=False,
                     head_dim=128, num_key_value_heads=8, mlp_bias=False),
    "qwen2": dict(rms_norm_eps=1e-6, tie_word_embeddings=False, max_window_layers=28),
    "glm4_moe": dict(rms_norm_eps=1e-5, tie_word_embeddings=False, attention_bias=False, n_group=1, topk_group=1,
                     norm_topk_prob=True, routed_scaling_factor=1.0, n_shared_experts=1, first_k_dense_replace=1,
                     partial_rotary_factor=0.5, use_qk_norm=False, topk_method="noaux_tc"),
    "deepseek_v3": dict(rms_norm_eps=1e-6, tie_word_embeddings=False, attention_bias=False, n_group=8,
                        topk_group=4, norm_topk_prob=True, routed_scaling_factor=2.5, n_shared_experts=1,
                        first_k_dense_replace=3, rope_interleave=True, topk_method="noaux_tc", scoring_func="sigmoid"),
    # GlmMoeDsaConfig / DeepseekV32Config (transformers 5.25): the routing knobs; the indexer's sizes
    # (index_n_heads, index_head_dim, index_topk) are structural, required like the MLA ranks
    "glm_moe_dsa": dict(rms_norm_eps=1e-5, tie_word_embeddings=False, attention_bias=False, n_group=1, topk_group=1,
                        norm_topk_prob=True, routed_scaling_factor=2.5, n_shared_experts=1, first_k_dense_replace=3,
                        topk_method="noaux_tc", scoring_func="sigmoid"),
    "deepseek_v32": dict(rms_norm_eps=1e-6, tie_word_embeddings=False, attention_bias=False, n_group=8,
                         topk_group=4, norm_topk_prob=True, routed_scaling_factor=2.5, n_shared_experts=1,
                         first_k_dense_replace=3, topk_method="noaux_tc", scoring_func="sigmoid"),
    "gemma3_text": dict(rms_norm_eps=1e-6, tie_word_embeddings=True, attention_bias=False, head_dim=256,
                        num_key_value_heads=4, sliding_window=4096, sliding_window_pattern=6,
                        hidden_activation="gelu_pytorch_tanh", query_pre_attn_scalar=256),
    "gemma2": dict(rms_norm_eps=1e-6, tie_word_embeddings=True, attention_bias=False, head_dim=256,
                   num_key_value_heads=4, sliding_window=4096, hidden_activation="gelu_pytorch_tanh",
                   query_pre_attn_scalar=256, final_logit_softcapping=30.0, attn_logit_softcapping=50.0),
    "gpt_oss": dict(rms_norm_eps=1e-5, tie_word_embeddings=False, attention_bias=True, head_dim=64,
                    swiglu_alpha=GPT_OSS_SWIGLU[0], swiglu_limit=GPT_OSS_SWIGLU[1],
                    num_key_value_heads=8, sliding_window=128, num_experts_per_tok=4, num_local_experts=128),
    "glm4": dict(rms_norm_eps=1.5625e-07, tie_word_embeddings=False, attention_bias=True, head_dim=128,
                 num_key_value_heads=2, partial_rotary_factor=0.5),
    "llama4_text": dict(rms_norm_eps=1e-5, tie_word_embeddings=False, attention_bias=False, head_dim=128,
                        num_key_value_heads=8, intermediate_size=8192, intermediate_size_mlp=16384,
                        num_local_experts=16, num_experts_per_tok=1, interleave_moe_layer_step=1,
                        no_rope_layer_interval=4, attention_chunk_size=8192, use_qk_norm=True),
    "minimax_m2": dict(rms_norm_eps=1e-6, tie_word_embeddings=False, attention_bias=False, head_dim=128,
                       num_key_value_heads=8, num_local_experts=256, num_experts_per_tok=8),
    "ernie4_5_moe": dict(rms_norm_eps=1e-5, tie_word_embeddings=True, use_bias=False, moe_k=6,
                         moe_num_experts=64, moe_num_shared_experts=2, moe_layer_start_index=1,
                         moe_layer_end_index=-1, moe_layer_interval=1),
    "qwen2_moe": dict(rms_norm_eps=1e-6, tie_word_embeddings=False, qkv_bias=True, decoder_sparse_step=1,
                      mlp_only_layers=[], norm_topk_prob=False, num_experts=60, num_experts_per_tok=4,
                      max_window_layers=28),
    # Qwen3NextConfig / Qwen3_5TextConfig / Qwen3_5MoeTextConfig (transformers 5.25): layer_types from
    # full_attention_interval (4) when absent; partial_rotary_factor 0.25; the linear layers' sizes
    "qwen3_next": dict(rms_norm_eps=1e-6, tie_word_embeddings=False, attention_bias=False, head_dim=256,
                       partial_rotary_factor=0.25, decoder_sparse_step=1, mlp_only_layers=[], norm_topk_prob=True,
                       num_experts=512, num_experts_per_tok=10, full_attention_interval=4,
                       linear_conv_kernel_dim=4, linear_key_head_dim=128, linear_value_head_dim=128,
                       linear_num_key_heads=16, linear_num_value_heads=32),
    "qwen3_5_text": dict(rms_norm_eps=1e-6, tie_word_embeddings=False, attention_bias=False, head_dim=256,
                         partial_rotary_factor=0.25, full_attention_interval=4, linear_conv_kernel_dim=4,
                         linear_key_head_dim=128, linear_value_head_dim=128, linear_num_key_heads=16,
                         linear_num_value_heads=32),
    "qwen3_5_moe_text": dict(rms_norm_eps=1e-6, tie_word_embeddings=False, attention_bias=False, head_dim=256,
                             partial_rotary_factor=0.25, num_experts=256, num_experts_per_tok=8,
                             full_attention_interval=4, linear_conv_kernel_dim=4, linear_key_head_dim=128,
                             linear_value_head_dim=128, linear_num_key_heads=16, linear_num_value_heads=32),
    # CohereConfig / Cohere2Config (transformers 5.25): num_key_value_heads defaults to the heads,
    # head_dim = hidden / heads; Cohere2's layer_types from sliding_window_pattern (4)
    "cohere": dict(layer_norm_eps=1e-5, tie_word_embeddings=True, attention_bias=False, use_qk_norm=False,
                   logit_scale=0.0625),
    "cohere2": dict(layer_norm_eps=1e-5, tie_word_embeddings=True, attention_bias=False, sliding_window=4096,
                    sliding_window_pattern=4, logit_scale=0.0625),
    # NemotronHConfig (transformers 5.25): its defaults are Nemotron-H-8B's sizes; real config.json
    # files give the layers as hybrid_override_pattern ("M" Mamba-2, "*" attention, "-" MLP, "E" MoE)
    "nemotron_h": dict(layer_norm_epsilon=1e-5, tie_word_embeddings=False, attention_bias=False, head_dim=128,
                       use_bias=False,
                       num_key_value_heads=8, intermediate_size=21504, mlp_hidden_act="relu2", mlp_bias=False,
                       ssm_state_size=128, mamba_num_heads=128, mamba_head_dim=64, n_groups=8, conv_kernel=4,
                       use_conv_bias=True, mamba_proj_bias=False, n_routed_experts=8, n_shared_experts=1,
                       moe_intermediate_size=7688, moe_shared_expert_intermediate_size=7688, num_experts_per_tok=2,
                       routed_scaling_factor=1.0, n_group=1, topk_group=1, norm_topk_prob=True,
                       moe_latent_size=None),
    # KimiLinearConfig (transformers 5.25): its defaults are Kimi-Linear-48B-A3B's (its docstring names the checkpoint)
    "kimi_linear": dict(rms_norm_eps=1e-5, tie_word_embeddings=False, attention_bias=False, q_lora_rank=None,
                        num_shared_experts=1, routed_scaling_factor=2.446, num_expert_group=1, topk_group=1,
                        moe_renormalize=True, linear_conv_kernel_dim=4),
    # Gemma4TextConfig (transformers 5.25): layer_types 5 sliding : 1 full when absent (the last layer always
    # full), global_head_dim 512, the global layers' KV heads = num_key_value_heads unless attention_k_eq_v
    # (then num_global_key_value_heads)
    "gemma4_text": dict(rms_norm_eps=1e-6, tie_word_embeddings=True, attention_bias=False, head_dim=256,
                        num_key_value_heads=4, sliding_window=512, hidden_activation="gelu_pytorch_tanh",
                        final_logit_softcapping=None, vocab_size_per_layer_input=262144,
                        hidden_size_per_layer_input=256, attention_k_eq_v=False, num_kv_shared_layers=0,
                        enable_moe_block=False, use_double_wide_mlp=False, global_head_dim=512,
                        num_global_key_value_heads=None, max_position_embeddings=131072),
    # FalconH1Config (transformers 5.25): mamba_d_ssm (the Mamba's inner width; null: mamba_expand x hidden_size),
    # mamba_d_head "auto" (inner width / heads); its defaults are no released checkpoint's sizes
    "falcon_h1": dict(rms_norm_eps=1e-5, tie_word_embeddings=False, attention_bias=False, num_key_value_heads=8,
                      intermediate_size=14336, max_position_embeddings=8192, mamba_d_ssm=1024, mamba_n_heads=128,
                      mamba_d_head="auto", mamba_n_groups=1, mamba_d_state=256, mamba_d_conv=4, mamba_expand=2,
                      mamba_conv_bias=True, mamba_proj_bias=False, mamba_rms_norm=False, projectors_bias=False,
                      mlp_bias=False),
    # Lfm2Config / Lfm2MoeConfig (transformers 5.25): the norms' eps is `norm_eps`; `tie_embedding` and (LFM2)
    # `block_ff_dim` are the released configs' names for tie_word_embeddings and intermediate_size (from_hf)
    "lfm2": dict(norm_eps=1e-5, tie_word_embeddings=True, num_key_value_heads=8, max_position_embeddings=128000,
                 conv_bias=False, conv_L_cache=3, block_multiple_of=256, block_ffn_dim_multiplier=1.0,
                 block_auto_adjust_ff_dim=True, intermediate_size=12288),
    "lfm2_moe": dict(norm_eps=1e-5, tie_word_embeddings=True, num_key_value_heads=8, max_position_embeddings=128000,
                     conv_bias=False, conv_L_cache=3, intermediate_size=7168, moe_intermediate_size=1792,
                     num_dense_layers=2, num_experts_per_tok=4, num_experts=32, use_expert_bias=True,
                     routed_scaling_factor=1.0, norm_topk_prob=True),
    # GraniteMoeHybridConfig (transformers 5.25)
    "granitemoehybrid": dict(rms_norm_eps=1e-6, tie_word_embeddings=False, attention_bias=False,
                             intermediate_size=11008, num_local_experts=8, num_experts_per_tok=2,
                             shared_intermediate_size=1024, position_embedding_type=None, embedding_multiplier=1.0,
                             logits_scaling=1.0, residual_multiplier=1.0, attention_multiplier=1.0,
                             mamba_n_heads=128, mamba_n_groups=1, mamba_d_state=256, mamba_d_head=64,
                             mamba_d_conv=4, mamba_expand=2, mamba_conv_bias=True, mamba_proj_bias=False),
    # OlmoeConfig (transformers 5.25): num_key_value_heads defaults to the heads; head_dim = hidden / heads (the
    # q / k norms are hidden_size and (hidden / heads) x KV heads wide whatever the config says)
    "olmoe": dict(rms_norm_eps=1e-5, tie_word_embeddings=False, attention_bias=False, clip_qkv=None,
                  num_experts=64, num_experts_per_tok=8, norm_topk_prob=False),
    # GraniteConfig / GraniteMoeConfig (transformers 5.25): Llama's layers with Granite's multipliers
    "granite": dict(rms_norm_eps=1e-6, tie_word_embeddings=False, attention_bias=False, mlp_bias=False,
                    embedding_multiplier=1.0, logits_scaling=1.0, residual_multiplier=1.0, attention_multiplier=1.0),
    "granitemoe": dict(rms_norm_eps=1e-6, tie_word_embeddings=False, attention_bias=False, embedding_multiplier=1.0,
                       logits_scaling=1.0, residual_multiplier=1.0, attention_multiplier=1.0, num_local_experts=8,
                       num_experts_per_tok=2),
    # Olmo2Config / Olmo3Config (transformers 5.25): num_key_value_heads defaults to the heads; Olmo 3's
    # sliding_window 4096 on three of every four layers when layer_types is absent, rope base 5e5 (default_theta)
    "olmo2": dict(rms_norm_eps=1e-5, tie_word_embeddings=False, attention_bias=False, max_position_embeddings=2048),
    "olmo3": dict(rms_norm_eps=1e-5, tie_word_embeddings=False, attention_bias=False, max_position_embeddings=2048,
                  sliding_window=4096),
    # SmolLM3Config (transformers 5.25): 4 KV heads, tied, rope base 2e6 (default_theta), every 4th layer NoPE,
    # no sliding window unless use_sliding_window
    "smollm3": dict(rms_norm_eps=1e-6, tie_word_embeddings=True, attention_bias=False, mlp_bias=False,
                    num_key_value_heads=4, max_position_embeddings=32768, use_sliding_window=False,
                    sliding_window=None, no_rope_layer_interval=4),
    # Exaone4Config (transformers 5.25): 32 KV heads, untied, sliding_window 4096 with every 4th layer global
    # (sliding_window_pattern 4) when layer_types is absent
    "exaone4": dict(rms_norm_eps=1e-5, tie_word_embeddings=False, num_key_value_heads=32,
                    max_position_embeddings=2048, sliding_window=4096, sliding_window_pattern=4),
    # HunYuanDenseV1Config / HunYuanMoEV1Config (transformers 5.25): num_key_value_heads defaults to the heads;
    # one expert, top-1 where the config states none (moe_topk is num_experts_per_tok's name)
    "hunyuan_v1_dense": dict(rms_norm_eps=1e-5, tie_word_embeddings=False, attention_bias=False,
                             max_position_embeddings=2048, intermediate_size=11008),
    "hunyuan_v1_moe": dict(rms_norm_eps=1e-5, tie_word_embeddings=False, attention_bias=False,
                           max_position_embeddings=2048, intermediate_size=11008, num_experts=1, moe_topk=1),
    # DeciLMConfig (remote code, nvidia/Llama-3_3-Nemotron-Super-49B-v1's configuration_decilm.py, a LlamaConfig
    # without num_key_value_heads / intermediate_size: block_configs gives them per layer; transformers 5.25 does
    # not ship it): LlamaConfig's defaults
    "nemotron-nas": dict(rms_norm_eps=1e-6, tie_word_embeddings=False, attention_bias=False, mlp_bias=False,
                         max_position_embeddings=2048),
    # ExaoneConfig (transformers 5.25, a LlamaConfig: EXAONE-3.0-7.8B's sizes, theta 5e5)
    "exaone": dict(rms_norm_eps=1e-5, tie_word_embeddings=False, attention_bias=False, mlp_bias=False,
                   num_key_value_heads=8, max_position_embeddings=4096, intermediate_size=14336),
    # Ernie4_5Config (transformers 5.25): ERNIE-4.5-0.3B's sizes, tied, no biases
    "ernie4_5": dict(rms_norm_eps=1e-5, tie_word_embeddings=True, use_bias=False, num_key_value_heads=2,
                     head_dim=128, max_position_embeddings=131072, intermediate_size=3072),
    # ArceeConfig (transformers 5.25): relu2, untied, no biases; num_key_value_heads and head_dim default to the
    # heads and hidden / heads (AFM-4.5B's sizes are its other defaults, structural here: required)
    "arcee": dict(rms_norm_eps=1e-5, tie_word_embeddings=False, attention_bias=False, mlp_bias=False,
                  max_position_embeddings=4096, hidden_act="relu2"),
    # ApertusConfig (transformers 5.25): xielu, untied; num_key_value_heads defaults to the heads; the rope
    # (llama3, base 12e6) where none is stated: APERTUS_ROPE
    "apertus": dict(rms_norm_eps=1e-5, tie_word_embeddings=False, attention_bias=False, max_position_embeddings=65536,
                    hidden_act="xielu"),
    # GemmaConfig (transformers 5.25): gemma-7b's sizes, 16 KV heads (not the heads' count), head_dim 256, tied
    "gemma": dict(rms_norm_eps=1e-6, tie_word_embeddings=True, attention_bias=False, head_dim=256,
                  num_key_value_heads=16, max_position_embeddings=8192, hidden_act="gelu_pytorch_tanh",
                  intermediate_size=24576, use_bidirectional_attention=None),
    # GlmConfig (transformers 5.25): glm-4-9b-chat's sizes; q/k/v biased, 2 KV heads of 128, half of each head rotated
    # (__post_init__ sets partial_rotary_factor 0.5 where the config states none)
    "glm": dict(rms_norm_eps=1.5625e-07, tie_word_embeddings=False, attention_bias=True, head_dim=128,
                num_key_value_heads=2, partial_rotary_factor=0.5, max_position_embeddings=131072,
                intermediate_size=13696, hidden_act="silu"),
    # InternLM3Config (transformers 5.25, a LlamaConfig: InternLM3-8B's sizes; attribute_map qkv_bias -> attention_bias,
    # bias -> mlp_bias)
    "internlm3": dict(rms_norm_eps=1e-5, tie_word_embeddings=False, attention_bias=False, mlp_bias=False, head_dim=128,
                      num_key_value_heads=2, max_position_embeddings=32768, intermediate_size=10240, hidden_act="silu"),
    # PhimoeConfig (transformers 5.25): Phi-3.5-MoE's sizes; no window, no biases unless stated
    "phimoe": dict(rms_norm_eps=1e-5, tie_word_embeddings=False, attention_bias=False, lm_head_bias=False,
                   num_key_value_heads=8, sliding_window=None, num_local_experts=16, num_experts_per_tok=2,
                   max_position_embeddings=131072, intermediate_size=6400, router_jitter_noise=0.01),
    # Dots1Config (transformers 5.25): 32 KV heads, untied; n_routed_experts, num_experts_per_tok and n_shared_experts
    # default to None, which HF's Dots1MoE does not build (required here); no dense layer first, top-k not
    # renormalised, unscaled; sliding_window 4096 only on the layers from max_window_layers (62) on; the router is
    # sigmoid noaux_tc whatever the config says (topk_method / scoring_func: no fields of HF's, the released
    # config's "noaux_tc")
    "dots1": dict(rms_norm_eps=1e-6, tie_word_embeddings=False, attention_bias=False, num_key_value_heads=32,
                  intermediate_size=10944, moe_intermediate_size=1408, n_group=1, topk_group=1,
                  first_k_dense_replace=0, norm_topk_prob=False, routed_scaling_factor=1.0,
                  max_position_embeddings=2048, sliding_window=4096, max_window_layers=62, topk_method="noaux_tc"),
    # NemotronConfig (transformers 5.25): Nemotron-4 15B's sizes; num_key_value_heads None (refused in from_hf: HF's
    # model does not build without it), head_dim hidden / heads; partial_rotary_factor 0.5 (set in rope_parameters where the config states none); norms' eps `norm_eps`
    "nemotron": dict(norm_eps=1e-5, tie_word_embeddings=False, attention_bias=False, mlp_bias=False,
                     hidden_act="relu2", partial_rotary_factor=0.5, max_position_embeddings=4096, vocab_size=256000,
                     hidden_size=6144, intermediate_size=24576, num_hidden_layers=32, num_attention_heads=48),
    # AfmoeConfig (transformers 5.25): untied; KV heads default to the heads (num_key_value_heads None); head_dim
    # 128; every 4th layer full attention, the others windowed by 1024 (layer_types when absent); one dense layer
    "afmoe": dict(rms_norm_eps=1e-5, tie_word_embeddings=False, attention_bias=False, head_dim=128,
                  intermediate_size=6144, moe_intermediate_size=1408, num_dense_layers=1, num_experts=64,
                  num_experts_per_tok=6, num_shared_experts=2, route_scale=1.0, global_attn_every_n_layers=4,
                  sliding_window=1024, mup_enabled=False, max_position_embeddings=16384, vocab_size=200192,
                  hidden_size=2048, num_hidden_layers=32, num_attention_heads=16),
    # Gemma3nTextConfig (transformers 5.25): its defaults are Gemma 3n E4B's sizes; layer_types every 5th
    # layer full when absent; activation_sparsity_pattern 0.95 on the first 10 layers (where there are more than
    # 10) when absent; rope bases 1e6 (global) and 1e4 (local)
    "gemma3n_text": dict(rms_norm_eps=1e-6, tie_word_embeddings=True, attention_bias=False, head_dim=256,
                         num_key_value_heads=2, sliding_window=512, hidden_activation="gelu_pytorch_tanh",
                         final_logit_softcapping=30.0, vocab_size_per_layer_input=262144,
                         hidden_size_per_layer_input=256, altup_num_inputs=4, altup_active_idx=0,
                         altup_correct_scale=True, num_kv_shared_layers=15, laurel_rank=64,
                         max_position_embeddings=32768, intermediate_size=16384),
}

# The MLA latent norms (q_a_layernorm, kv_a_layernorm) are built without an eps argument in HF's
# DeepSeek-V2/V3 and GLM-4-MoE-Lite modeling code, so they use the RMSNorm class default 1e-6.
LATENT_NORM_EPS = 1e-6

# rope_scaling types the forward pass implements (others only change numerics: predictions take them)
# ("proportional": Gemma 4's global layers, plain frequencies on the first partial_rotary_factor of the head's
# pairs, zero on the rest, over the layer's whole head dim: ModelConfig.layer_rope)
# ("ntk_alpha": Hunyuan's rope_scaling {"type": "dynamic", "alpha": a}, which HF's HunYuan*RotaryEmbedding runs as
# plain rope by the base rope_theta x a^(d / (d - 2)), whatever the context: ModelConfig.rope_type)
# ("longrope": Phi-3 / Phi-3.5 / Phi-4-mini / Phi-3.5-MoE's LongRoPE, per-pair divisors short_factor or long_factor by
# the sequence length: ModelConfig.longrope, rope_long, layer_rope(i, seq_len); run in phi3 and phimoe only)
ROPE_TYPES = ("default", "linear", "yarn", "llama3", "freq_factors", "proportional", "ntk_alpha", "longrope")
# the families whose forward runs a longrope config (forward_unsupported refuses it in the others)
LONGROPE_FAMILIES = ("phi3", "phimoe")


@dataclass(frozen=True)
class ModelConfig:
    name: str
    model_type: str
    attention: str                  # "mla" | "gqa"
    n_layers: int
    hidden_size: int
    vocab_size: int
    tie_word_embeddings: bool
    rms_norm_eps: float
    n_heads: int
    n_kv_heads: int                 # GQA: K/V heads; MLA: HF's num_key_value_heads (= n_heads), unused by the cache
    head_dim: int                   # query/key head dim (MLA: qk_nope + qk_rope)
    attention_bias: bool            # q/k/v (GQA) or q_a/kv_a (MLA) projections carry a bias
    qk_norm: bool                   # per-head RMSNorm on q and k (Qwen3)
    rope_theta: float
    rope_layout: str                # "interleaved" | "half"
    rope_dim: int                   # rotated dims per head
    q_lora_rank: int | None
    kv_lora_rank: int
    qk_nope_head_dim: int
    qk_rope_head_dim: int
    v_head_dim: int
    intermediate_size: int
    n_routed_experts: int
    n_experts_per_tok: int
    n_shared_experts: int
    moe_intermediate_size: int
    shared_expert_intermediate_size: int
    first_k_dense_replace: int
    router_scoring: str             # "sigmoid" | "softmax" | "" (dense)
    router_bias: bool               # e_score_correction_bias (chooses experts only)
    n_group: int
    topk_group: int
    norm_topk_prob: bool
    routed_scaling_factor: float
    hf: dict = field(repr=False, compare=False)
    # additions beyond docs/API.md's list
    moe_layers: tuple = ()          # indices of MoE layers
    attention_out_bias: bool = False
    topk_method: str = ""           # "noaux_tc" | "greedy" | "group_limited_greedy" | "" (softmax top-k)
    rope_scaling: dict | None = field(default=None, compare=False)
    sliding_window: int | None = None
    max_position_embeddings: int = 0
    latent_norm_eps: float = LATENT_NORM_EPS
    hidden_act: str = "silu"
    # the multimodal wrapper (_WRAPPERS: "qwen2_vl", "gemma3"...) whose text model this is; "" for a text model's
    # own config. Its vision tower / projector (audio tower) are not priced: unpriced() says so
    wrapper: str = field(default="", compare=False)
    # a model file's real bytes (models/gguf_file.FileWeights): every tensor's stored type; the
    # cost model's weight bytes come from it when present, whatever format `weights` names
    file_weights: Any = None
    # layers whose attention is windowed (sliding_window tokens): every layer when None and
    # sliding_window is set (Mistral), else the config's layer pattern (Gemma 3, GPT-OSS, Qwen2)
    window_layers: tuple | None = None
    n_layer_norms: int = 2          # RMSNorms per layer (Gemma 3: 4, around attention and MLP)
    expert_bias: bool = False       # biases on the router and every expert's matrices (GPT-OSS)
    attention_sinks: bool = False   # a learned sink logit per head (GPT-OSS)
    # the windowed layers attend within fixed chunks of sliding_window tokens instead of a sliding
    # window (Llama 4's chunked attention: the query at p sees the keys p - p % w .. p)
    window_chunked: bool = False
    qk_norm_all_heads: bool = False  # the q / k RMSNorm weights span all heads (MiniMax-M2, OLMoE, OLMo 2), not one head
    # OLMoE's clip_qkv: q, k and v clamped to [-c, c] after the projections (and q / k norms); None: no clamp
    clip_qkv: float | None = None
    shared_expert_gate: bool = False  # a sigmoid gate (1 x hidden) on the shared expert's output (Qwen2-MoE)
    # hybrid models (Qwen3-Next, Qwen3.5): the layers whose token mixer is Gated DeltaNet linear
    # attention, holding a fixed recurrent state per stream (a (K - 1)-token convolution window and a
    # k_dim x v_dim matrix per value head) instead of a KV cache; the sizes of those layers
    linear_layers: tuple = ()
    linear_k_heads: int = 0
    linear_v_heads: int = 0
    linear_k_dim: int = 0
    linear_v_dim: int = 0
    linear_conv: int = 0            # the causal depthwise convolution's width (taps)
    attn_output_gate: bool = False  # q_proj also gives a sigmoid gate on each head's output (Qwen3-Next, Qwen3.5)
    # Gemma 3: the windowed layers' rope base (rope_local_base_freq, plain rope; the global layers
    # take rope_theta and rope_scaling), the softmax scale query_pre_attn_scalar ** -0.5, and the
    # final logits' soft-cap cap * tanh(logits / cap); attention-logit soft-capping (Gemma 2) where
    # a family's forward applies it (HF's Gemma 3 attention never passes its attn_logit_softcapping)
    rope_local_theta: float | None = None
    query_pre_attn_scalar: float | None = None
    attn_logit_softcapping: float | None = None
    final_logit_softcapping: float | None = None
    logit_scale: float | None = None  # Cohere: the logits times this (HF's logit_scale); Granite: 1 / logits_scaling
    # the linear layers' mixer: "gdn" (Gated DeltaNet: Qwen3-Next, Qwen3.5) or "mamba2" (MAMBA_FAMILIES:
    # linear_v_heads SSM heads of linear_v_dim, linear_k_heads groups sharing B / C of linear_k_dim = d_state),
    # "kda" (KDA_FAMILIES), "shortconv" (SHORTCONV_FAMILIES: LFM2's gated short convolution over hidden_size
    # channels, linear_conv taps, biased where linear_conv_bias; no heads, no state matrix: the linear_k_* /
    # linear_v_* sizes are 0)
    linear_kind: str = ""
    # Nemotron-H's layers are blocks of one kind: the layers with a token mixer (attention or Mamba-2)
    # and the layers with an MLP or MoE (None: every layer has both)
    mixer_layers: tuple | None = None
    ffn_layers: tuple | None = None
    linear_conv_bias: bool = False  # the linear layers' convolution carries a bias (Mamba-2's use_conv_bias)
    # Nemotron 3 Super's latent MoE: the routed experts work in a moe_latent_size-wide space, the
    # tokens projected down (fc1_latent_proj) before them and back up (fc2_latent_proj) after; 0: none
    moe_latent_size: int = 0
    # False: up -> act -> down, two matrices (Nemotron-H's relu2 MLP and experts, Arcee's relu2 MLP)
    mlp_gated: bool = True
    nope: bool = False              # no rope on any layer (Nemotron-H, Granite 4.0-H's position_embedding_type nope)
    # the layers that apply no rope (SmolLM3's no_rope_layers, EXAONE 4's global layers); () : every layer rotates
    nope_layers: tuple = ()
    # post-norm layers (OLMo 2 / 3, EXAONE 4): x + norm(attn(x)), then x + norm(mlp(x)); the two norms are
    # post_attention_layernorm and post_feedforward_layernorm, no input_layernorm
    post_norms: bool = False
    # Granite's multipliers: embeddings times embedding_multiplier, each sub-layer's output times
    # residual_multiplier before the residual add, softmax scale attention_multiplier (attention_scale)
    embedding_multiplier: float | None = None
    residual_multiplier: float | None = None
    attention_scale: float | None = None
    # Gemma 4 (GEMMA4_FAMILIES): the global (not windowed) layers' head dim and KV heads (0: head_dim,
    # n_kv_heads), their values the key projection (k_eq_v: no v_proj), the last kv_shared_layers layers
    # reading an earlier layer's cache, per-layer embeddings of ple_size per layer over a ple_vocab table
    # (0: none), the kv-shared layers' MLP twice intermediate_size wide (double_wide_mlp)
    global_head_dim: int = 0
    global_kv_heads: int = 0
    k_eq_v: bool = False
    kv_shared_layers: int = 0
    ple_size: int = 0
    ple_vocab: int = 0
    double_wide_mlp: bool = False
    # parallel hybrids (PARALLEL_FAMILIES: Falcon-H1): each linear layer also attends, its attention and its
    # Mamba-2 side by side on one normed input (attention_layers holds it too: a KV cache and a state per layer)
    parallel_mixers: bool = False
    # the Mamba-2 mixer's gated RMSNorm carries a weight (Falcon-H1 without mamba_rms_norm: y silu(z), no norm)
    linear_norm: bool = True
    # DeepSeek Sparse Attention (DSA_FAMILIES; 0: none): the lightning indexer's heads and head dim, the keys each
    # query's MLA attends to (index_topk), and the layers that run an indexer of their own (GLM's "shared" layers
    # reuse the previous full layer's top-k: no indexer weights, no indexer cache)
    index_n_heads: int = 0
    index_head_dim: int = 0
    index_topk: int = 0
    indexer_layers: tuple = ()
    # the dense MLPs' gate / up / down carry a bias (and DeepSeek-V2's shared experts', built as its MLP): HF's
    # mlp_bias (MLP_BIAS_FAMILIES); priced, not run (forward_unsupported)
    mlp_bias: bool = False
    # Gemma 3n (GEMMA3N_FAMILIES): AltUp's streams (0: none), LAuReL's rank (0: none), each layer's MLP width where
    # the config lists them (() : intermediate_size on every layer), the layers whose gate is activation-sparse
    altup_inputs: int = 0
    laurel_rank: int = 0
    # Phi-3.5-MoE: its LayerNorms carry a bias (each layer's two and the final one), its lm_head a bias
    norm_bias: bool = False
    lm_head_bias: bool = False
    layer_intermediates: tuple = ()
    sparse_layers: tuple = ()
    # DeciLM (nemotron-nas): each layer's KV heads where they differ ((): n_kv_heads on every attention layer), the
    # layers whose attention is one hidden x hidden linear (self_attn.linear_attn; no cache) and those whose MLP
    # is (mlp.linear_mlp); a layer outside mixer_layers and these has no attention, outside ffn_layers and these
    # no MLP (and then no norm before it)
    layer_kv_list: tuple = ()
    linear_attn_layers: tuple = ()
    linear_mlp_layers: tuple = ()

    # ---- structure --------------------------------------------------------------------------
    def is_moe_layer(self, i: int) -> bool:
        if not 0 <= i < self.n_layers:
            raise ValueError(f"layer index `i` must be in [0, {self.n_layers}), got {i}")
        return i in self._moe_set

    @functools.cached_property
    def _moe_set(self) -> frozenset:
        return frozenset(self.moe_layers)

    @functools.cached_property
    def n_moe_layers(self) -> int:
        return len(self.moe_layers)

    @functools.cached_property
    def n_dense_layers(self) -> int:
        """Layers with a dense MLP (not MoE; Nemotron-H's mixer blocks have neither)."""
        return self.n_ffn_layers - len(self.moe_layers)

    @functools.cached_property
    def n_ffn_layers(self) -> int:
        return self.n_layers if self.ffn_layers is None else len(self.ffn_layers)

    def has_mixer(self, i: int) -> bool:
        """Layer i holds a token mixer (attention or linear attention): every layer but Nemotron-H's
        MLP / MoE blocks."""
        return self.mixer_layers is None or i in self._mixer_set

    def has_ffn(self, i: int) -> bool:
        """Layer i holds an MLP or MoE: every layer but Nemotron-H's mixer blocks."""
        return self.ffn_layers is None or i in self._ffn_set

    @functools.cached_property
    def _mixer_set(self) -> frozenset:
        return frozenset(range(self.n_layers) if self.mixer_layers is None else self.mixer_layers)

    @functools.cached_property
    def _ffn_set(self) -> frozenset:
        return frozenset(range(self.n_layers) if self.ffn_layers is None else self.ffn_layers)

    @functools.cached_property
    def dense_layers(self) -> tuple:
        """Indices of the layers with a dense MLP."""
        moe = self._moe_set
        return tuple(i for i in range(self.n_layers) if self.has_ffn(i) and i not in moe)

    def __hash__(self):
        # the generated hash (the compared fields as a tuple), memoised: the cost model's per-config
        # caches hash the config on every op of every step. Not pickled (__getstate__): a str's hash
        # differs between processes
        h = self.__dict__.get("_hash_memo")
        if h is None:
            h = self.__dict__["_hash_memo"] = hash(tuple(getattr(self, f.name) for f in _COMPARED))
        return h

    def __getstate__(self):
        return {k: v for k, v in self.__dict__.items() if k != "_hash_memo"}

    def __post_init__(self):
        # validate rope_scaling now: a bad one of a supported type fails at load; a type the forward
        # pass does not implement only changes numerics, so predictions take it (Model refuses it)
        if self.rope_type in ROPE_TYPES and not (self.rope_type == "longrope" and
                                                 self.model_type not in LONGROPE_FAMILIES):
            self._rope_params

    def has_indexer(self, i: int) -> bool:
        """Layer i runs a DSA lightning indexer of its own (weights and a cached key per token)."""
        return i in self._indexer_set

    @functools.cached_property
    def _indexer_set(self) -> frozenset:
        return frozenset(self.indexer_layers)

    @functools.cached_property
    def _attn_uniform(self) -> bool:
        """Every attention layer holds the same tensors (not Gemma 4's global / kv-shared layers, not GLM's
        indexer-sharing layers beside full ones)."""
        return not (self.global_head_dim or self.global_kv_heads or self.k_eq_v or self.kv_shared_layers or
                    self.layer_kv_list) and \
            len(self.indexer_layers) in (0, len(self.attention_layers))

    @functools.cached_property
    def windowed_layers(self) -> tuple:
        """Indices of the layers that attend within sliding_window tokens (and cache only those)."""
        if not self.sliding_window:
            return ()
        return tuple(range(self.n_layers)) if self.window_layers is None else tuple(self.window_layers)

    @functools.cached_property
    def attention_layers(self) -> tuple:
        """Indices of the layers with softmax attention (every layer but a hybrid's linear ones; a parallel
        hybrid's linear layers attend too, parallel_mixers): the layers that keep a KV cache."""
        lin = frozenset() if self.parallel_mixers else frozenset(self.linear_layers)
        if not lin and self.mixer_layers is None:
            return tuple(range(self.n_layers))
        return tuple(i for i in range(self.n_layers) if i not in lin and self.has_mixer(i))

    @functools.cached_property
    def n_kv_layers(self) -> int:
        """Layers that keep a KV cache of their own (cache_layers)."""
        return len(self.cache_layers)

    # ---- per-layer attention geometry: uniform except Gemma 4's global layers and kv-shared layers ----
    @functools.cached_property
    def _window_set(self) -> frozenset:
        return frozenset(self.windowed_layers)

    def layer_head_dim(self, i: int) -> int:
        """Layer i's query / key head dim: global_head_dim on Gemma 4's global layers, else head_dim."""
        return self.global_head_dim if self.global_head_dim and i not in self._window_set else self.head_dim

    def layer_v_dim(self, i: int) -> int:
        """Layer i's value head dim (Gemma 4's global layers: global_head_dim)."""
        return self.global_head_dim if self.global_head_dim and i not in self._window_set else self.v_head_dim

    def layer_kv_heads(self, i: int) -> int:
        """Layer i's KV heads: global_kv_heads on Gemma 4's global layers where set, DeciLM's own per layer,
        else n_kv_heads."""
        if self.layer_kv_list:
            return self.layer_kv_list[i]
        return self.global_kv_heads if self.global_kv_heads and i not in self._window_set else self.n_kv_heads

    def layer_v_proj(self, i: int) -> bool:
        """Layer i projects its own values (no where k_eq_v on a global layer, or where the layer reads an
        earlier layer's cache)."""
        return self.owns_kv(i) and not (self.k_eq_v and i not in self._window_set)

    def owns_kv(self, i: int) -> bool:
        """Layer i projects and caches its own K / V: every layer but the last kv_shared_layers (Gemma 4)."""
        return i < self.n_layers - self.kv_shared_layers

    def kv_source(self, i: int) -> int:
        """The layer whose cache layer i attends over: itself, or for a kv-shared layer the last layer before
        the shared ones of the same kind (windowed or global: HF Gemma4TextConfig.kv_sharing_modes)."""
        if self.owns_kv(i):
            return i
        win = i in self._window_set
        first = self.n_layers - self.kv_shared_layers
        for j in range(first - 1, -1, -1):
            if (j in self._window_set) == win and j in self._attention_set:
                return j
        raise ValueError(f"layer {i} shares the cache of an earlier {'windowed' if win else 'global'} layer, "
                         f"but none of the first {first} layers is one")

    @functools.cached_property
    def _attention_set(self) -> frozenset:
        return frozenset(self.attention_layers)

    @functools.cached_property
    def cache_layers(self) -> tuple:
        """Indices of the attention layers that keep a KV cache of their own (all of them but Gemma 4's
        kv-shared layers)."""
        return tuple(i for i in self.attention_layers if self.owns_kv(i))

    def layer_intermediate(self, i: int) -> int:
        """Layer i's dense MLP width: intermediate_size, twice it on Gemma 4's kv-shared layers where
        use_double_wide_mlp; Gemma 3n's own width per layer where its config lists them."""
        if self.layer_intermediates:
            return self.layer_intermediates[i]
        return self.intermediate_size * (2 if self.double_wide_mlp and not self.owns_kv(i) else 1)

    def unpriced(self) -> list:
        """What the model holds that glmbench does not price (empty: all of it is): a multimodal wrapper's
        vision tower and projector (Gemma 3n's audio tower too), which encode images before the text model runs."""
        if not self.wrapper:
            return []
        return [f"the vision tower and projector of the {self.wrapper!r} model{' (and its audio tower)' if self.wrapper in ('gemma3n', 'gemma4') else ''} "
                f"(priced: its {self.model_type!r} text model only; images are not encoded)"]

    def forward_unsupported(self) -> list:
        """What glmbench.Model's forward pass does not implement for this config (empty: it runs).
        Each only changes numerics: predictions take the config as it is."""
        out = []
        # (Gemma 1's layer runs either activation: GeGLU for gelu_pytorch_tanh, SwiGLU for silu)
        gemma = self.model_type in GEMMA_FAMILIES + GEMMA4_FAMILIES + GEMMA3N_FAMILIES + GEMMA1_FAMILIES
        if self.model_type in GEMMA_FAMILIES + GEMMA4_FAMILIES + GEMMA3N_FAMILIES and \
                self.hidden_act != "gelu_pytorch_tanh":
            # (Gemma 2 / 3 / 3n / 4's layers run their GeGLU whatever hidden_activation says: another one would run
            # silently as GeGLU, so it is named here)
            out.append(f"hidden_activation {self.hidden_act!r} in {self.model_type}'s layer (Model runs its GeGLU, "
                       f"gelu_pytorch_tanh, only)")
        elif self.hidden_act != "silu" and not (gemma and self.hidden_act == "gelu_pytorch_tanh") and \
                not (self.model_type in ("nemotron_h",) + UNGATED_MLP_FAMILIES and self.hidden_act == "relu2") and \
                not self.xielu:
            out.append(f"hidden_act {self.hidden_act!r} (SwiGLU with silu; Gemma's gelu_pytorch_tanh; "
                       f"Nemotron-H's, Arcee's and Apertus's ungated relu2; Apertus's xielu)")
        elif self.model_type in UNGATED_MLP_FAMILIES and self.hidden_act == "silu":
            # (ArceeMLP / ApertusMLP: down(silu(up x)), ungated; Model's silu is SwiGLU's, gated)
            out.append(f"hidden_act 'silu' in {self.model_type}'s ungated MLP (Model runs relu2 or xielu there)")
        if self.rope_type not in ROPE_TYPES:
            out.append(f"rope_type {self.rope_type!r} (supported: {', '.join(ROPE_TYPES)})")
        elif self.rope_type == "proportional" and self.model_type not in GEMMA4_FAMILIES:
            out.append("proportional rope outside Gemma 4 (its zero frequencies run in Gemma 4's layer only)")
        elif self.rope_type == "longrope" and self.model_type not in LONGROPE_FAMILIES:
            out.append(f"rope_type 'longrope' outside {' / '.join(LONGROPE_FAMILIES)} (its short / long factors switch "
                       f"by sequence length in those families' layers only)")
        if self.n_layer_norms != 2 and not gemma and self.model_type not in PRICED_ONLY and self.model_type != "afmoe" \
                and self.model_type not in LAYERNORM_FAMILIES and self.model_type not in MAMBA_FAMILIES:
            out.append(f"{self.n_layer_norms} norms per layer (Gemma's sandwich norms)")
        if (self.expert_bias or self.attention_sinks) and self.model_type != "gpt_oss":
            out.append("attention sinks and expert biases outside GPT-OSS")
        if self.mlp_bias and self.model_type != "nemotron":   # (Nemotron's ungated MLP runs with its biases)
            out.append("mlp_bias (biases on the MLP's gate / up / down projections)")
        if self.model_type == "nemotron_h" and self.hf.get("mamba_hidden_act", "silu") != "silu":
            # (NemotronHMamba2Mixer: the convolution's activation is mamba_hidden_act; Model's is silu)
            out.append(f"mamba_hidden_act {self.hf['mamba_hidden_act']!r} (Model's Mamba-2 convolution runs silu)")
        if self.sparsemixer and (self.n_experts_per_tok != 2 or self.n_routed_experts < 2):
            out.append(f"num_experts_per_tok {self.n_experts_per_tok} with {self.n_routed_experts} experts (Phi-3.5-"
                       f"MoE's sparsemixer routes to two experts, whatever num_experts_per_tok says)")
        if self.model_type in PRICED_ONLY:
            out.append(f"{PRICED_ONLY[self.model_type]} (model_type {self.model_type!r} is priced, not run)")
        return out

    def layer_window(self, i: int) -> int | None:
        """The sliding window of layer i in tokens (the chunk, where window_chunked), None for full
        attention."""
        return self.sliding_window if i in self.windowed_layers else None

    @property
    def layer_norm(self) -> bool:
        """The model's norms are LayerNorms (weight only, the mean taken off: Cohere), not RMSNorms."""
        return self.model_type in LAYERNORM_FAMILIES

    @property
    def qk_norm_after_rope(self) -> bool:
        """The per-head q / k RMSNorms come after rope (Hunyuan: HF HunYuan*Attention norms the rotated q / k,
        query_layernorm / key_layernorm), not before it (Qwen3's)."""
        return self.qk_norm and self.model_type in HUNYUAN_FAMILIES

    @property
    def xielu(self) -> bool:
        """The MLP's activation is Apertus's xIELU (HF XIELUActivation: per layer the learned alpha_p / alpha_n and
        the buffers beta / eps, mlp.act_fn.*; ops.xielu); an Arcee config naming it builds the same (ArceeMLP's
        ACT2FN["xielu"])."""
        return self.model_type in UNGATED_MLP_FAMILIES and self.hidden_act == "xielu"

    @property
    def sparsemixer(self) -> bool:
        """The router is Phi-3.5-MoE's sparsemixer (HF PhimoeTopKRouter in eval mode: two experts, each weighted
        by a softmax over the logits within its jitter band; ops.sparsemixer_route)."""
        return self.model_type == "phimoe"

    def layer_rotates(self, i: int) -> bool:
        """Whether layer i applies rope: every layer but Cohere2's global ones (HF Cohere2Attention
        rotates q and k only on its sliding-window layers), none of a NoPE model's (`nope`) and not the
        `nope_layers` (SmolLM3's NoPE layers, EXAONE 4's global ones)."""
        return not self.nope and not (self.model_type == "cohere2" and i not in self.windowed_layers) and \
            i not in self.nope_layers

    def layer_rope(self, i: int, seq_len: int | None = None) -> dict:
        """ops.rope's keyword arguments for layer i: Gemma 3's windowed layers turn by the local base
        (rope_local_base_freq, no scaling), every other layer by rope_theta and rope_scaling. Gemma 4: the
        windowed layers plain rope by the local base over their whole head, the global ones "proportional"
        rope over their whole head (global_head_dim): the first partial_rotary_factor of its pairs turn, the
        others have frequency 0 (HF's rotate_half pairs (x[j], x[j + head_dim / 2]) either way).

        seq_len: the length of the sequence the call runs (its last position + 1); read by longrope only, which
        turns by the long factors where seq_len > original_max_position_embeddings (rope_long), else (None
        too) by the short ones (see `longrope`)."""
        if self.rope_type == "longrope" and self.rope_long(seq_len):
            lr = self.longrope
            return dict(theta=self.rope_theta, rot_dim=self.rope_dim, layout=self.rope_layout,
                        inv_freq=lr.long_inv_freq, attention_factor=lr.long_attention_factor)
        gemma4 = self.model_type in GEMMA4_FAMILIES
        if self.rope_local_theta and i in self.windowed_layers:
            return dict(theta=self.rope_local_theta, rot_dim=self.layer_head_dim(i) if gemma4 else self.rope_dim,
                        layout=self.rope_layout, inv_freq=None, attention_factor=1.0)
        if self.rope_type == "proportional":
            dim = self.layer_head_dim(i) if self.attention == "gqa" else self.rope_dim
            inv, af = _rope_params(json.dumps(self.rope_scaling, sort_keys=True, default=repr), self.rope_theta,
                                   dim, self.max_position_embeddings, "null")
            return dict(theta=self.rope_theta, rot_dim=dim, layout=self.rope_layout, inv_freq=inv, attention_factor=af)
        return dict(theta=self.rope_theta, rot_dim=self.rope_dim, layout=self.rope_layout,
                    inv_freq=self.rope_inv_freq(), attention_factor=self.rope_attention_factor())

    @property
    def softmax_scale(self) -> float:
        """1/sqrt(query-key head dim), times YaRN's mscale^2 when the config uses YaRN with
        mscale_all_dim (DeepSeek-V2; HF modeling_deepseek_v2 / yarn_get_mscale); Gemma 3:
        query_pre_attn_scalar ** -0.5."""
        if self.attention_scale:
            return self.attention_scale
        if self.query_pre_attn_scalar:
            return self.query_pre_attn_scalar ** -0.5
        s = self.head_dim ** -0.5
        rs = self.rope_scaling or {}
        if self.attention == "mla" and self.rope_type != "default" and rs.get("mscale_all_dim"):
            factor = float(rs.get("factor", 1.0))
            m = 0.1 * rs["mscale_all_dim"] * math.log(factor) + 1.0 if factor > 1 else 1.0
            s *= m * m
        return s

    # ---- rope scaling -----------------------------------------------------------------------
    @property
    def rope_type(self) -> str:
        """"default" (plain rope), "linear" or "yarn": rope_scaling's `rope_type` (or v4 `type`). Hunyuan's
        "dynamic" with an `alpha` is "ntk_alpha" (HF HunYuan*RotaryEmbedding: fixed frequencies by the base
        rope_theta x alpha^(d / (d - 2)), not the context-dependent dynamic NTK of other families)."""
        rs = self.rope_scaling or {}
        t = rs.get("rope_type") or rs.get("type") or "default"
        if t == "dynamic" and rs.get("alpha") and self.model_type in HUNYUAN_FAMILIES:
            return "ntk_alpha"
        if t in ("su", "yarn") and self.model_type == "phi3":
            return "longrope"    # (HF Phi3Config.convert_rope_params_to_dict: the older names of its longrope)
        return t

    @property
    def longrope(self) -> "LongRope":
        """LongRoPE (rope_type "longrope"; Phi-3-mini-128k, Phi-3.5-mini, Phi-4-mini, Phi-3.5-MoE), as transformers
        5.25 `_compute_longrope_parameters` defines it, in float64: pair i turns by
        theta^(-2i/rope_dim) / short_factor[i] while the sequence holds at most original_max_position_embeddings
        tokens, by / long_factor[i] past it (rope_long); cos and sin times an attention factor: rope_scaling's
        `attention_factor`, else sqrt(1 + ln(s) / ln(original)) with s = rope_scaling's `factor`, else
        max_position_embeddings / original (1 where s <= 1), the same in both regimes. Phi-3.5-MoE (phimoe):
        short_mscale / long_mscale instead where its config states them (HF PhimoeRotaryEmbedding).
        original_max_position_embeddings: the top-level field (HF standardize_rope_params puts it first), else
        rope_scaling's; neither is an error (HF would assume Phi3Config's 4096 or max_position_embeddings).

        Which factors (HF: longrope_frequency_update, by max(position_ids) + 1 of each forward call): glmbench
        picks them per call, by the sequence length after it (Model.prefill / decode: n_past + new tokens),
        for every token of the call: a prompt of at most `original` tokens runs short, a longer one long, as
        in HF. llama.cpp picks once, by the context size (n_ctx_seq > n_ctx_orig_yarn: long, whatever the
        sequence; src/llama-model.cpp get_rope_factors), so its logits of a short prompt in a long context
        differ from HF's and glmbench's. A cache that grows across the boundary (decode past `original`
        after a short prefill) keeps the keys it already holds turned by the short factors, the new tokens
        turn by the long ones: HF's forward with a cache passed in does the same; HF's generate() instead drops
        the cache there and runs the whole sequence again (Phi3ForCausalLM.prepare_inputs_for_generation).
        Model does not re-run it (it keeps no tokens): it warns (LongRopeCrossing) and reset() + prefill of the
        whole sequence gives generate()'s logits.

        Phi-3.5-MoE: transformers 5.25's PhimoeRotaryEmbedding recomputes its frequencies with no sequence
        length, so HF turns by the short factors in both regimes (with long_mscale past `original`); the
        released model's own code (modeling_phimoe.py of microsoft/Phi-3.5-MoE-instruct) and llama.cpp turn by
        the long ones there, and so does glmbench (tests/test_longrope.py checks both)."""
        if self.rope_type != "longrope":
            raise ValueError(f"{self.name}: rope_type {self.rope_type!r}, not longrope")
        orig = (self.hf or {}).get("original_max_position_embeddings")
        return _longrope(json.dumps(self.rope_scaling, sort_keys=True, default=repr), self.rope_theta,
                         self.rope_dim, self.max_position_embeddings, json.dumps(orig, default=repr),
                         self.model_type == "phimoe")

    def rope_long(self, seq_len: int | None) -> bool:
        """Whether a call running a sequence of seq_len tokens (its last position + 1) turns by longrope's long
        factors: seq_len > original_max_position_embeddings (HF longrope_frequency_update); False for None and
        for every other rope type."""
        return self.rope_type == "longrope" and seq_len is not None and int(seq_len) > self.longrope.original

    def rope_inv_freq(self) -> np.ndarray | None:
        """Per-pair inverse frequencies float64 [rope_dim/2] for ops.rope's `inv_freq` (read-only), or
        None for plain rope (theta**(-2i/rope_dim)). As transformers 5.24 modeling_rope_utils
        computes them (there in float32): linear = plain / factor; yarn = plain blended with
        plain / factor by a ramp over the pair index (see _yarn)."""
        return self._rope_params[0]

    def rope_attention_factor(self) -> float:
        """The factor on rope's cos and sin (HF's `attention_scaling`): 1.0 except for YaRN, where
        it is rope_scaling's `attention_factor`, else mscale(factor, mscale)/mscale(factor,
        mscale_all_dim) when both are set (1.0 for DeepSeek-V2-Lite: mscale == mscale_all_dim), else
        mscale(factor) = 0.1 ln(factor) + 1."""
        return self._rope_params[1]

    @property
    def _rope_params(self) -> tuple:
        """(inv_freq or None, attention_factor), memoised on the inputs (every attention layer asks)."""
        if self.rope_type == "default":
            return None, 1.0
        if self.rope_type == "longrope":   # the short factors (layer_rope picks the long ones by the sequence)
            lr = self.longrope
            return lr.short_inv_freq, lr.short_attention_factor
        orig = (self.hf or {}).get("original_max_position_embeddings")
        rs = dict(self.rope_scaling, rope_type="ntk_alpha") if self.rope_type == "ntk_alpha" else self.rope_scaling
        return _rope_params(json.dumps(rs, sort_keys=True, default=repr), self.rope_theta,
                            self.rope_dim, self.max_position_embeddings, json.dumps(orig, default=repr))

    # ---- KV cache ---------------------------------------------------------------------------
    def kv_elems_per_token_per_layer(self, i: int | None = None) -> int:
        """Values cached per token by layer i (None: the first caching layer): MLA latent + shared rope
        key (and a DSA layer's indexer key); GQA K and V."""
        i = self._first_cache_layer if i is None else i
        if self.attention == "mla":
            return self.kv_lora_rank + self.qk_rope_head_dim + (self.index_head_dim if self.has_indexer(i) else 0)
        return self.layer_kv_heads(i) * (self.layer_head_dim(i) + self.layer_v_dim(i))

    @functools.cached_property
    def _first_cache_layer(self) -> int:
        c = self.cache_layers
        return c[0] if c else 0

    def kv_rows_per_layer(self, i: int | None = None) -> list[int]:
        """Lengths of the rows one token stores in layer i (None: the first caching layer; each row is a
        whole number of blocks in a quantized cache): MLA stores the latent and the rope key as two rows;
        GQA one K row and one V row per KV head. A layer with a DSA indexer also caches its indexer key
        (index_head_dim, the last row; llama.cpp's llama_kv_cache_dsa keeps it in a second cache of the K type)."""
        i = self._first_cache_layer if i is None else i
        if self.attention == "mla":
            return [self.kv_lora_rank, self.qk_rope_head_dim] + ([self.index_head_dim] if self.has_indexer(i) else [])
        return [self.layer_head_dim(i)] * self.layer_kv_heads(i) + [self.layer_v_dim(i)] * self.layer_kv_heads(i)

    def kv_layer_bytes(self, i: int, kv: str = vocab.DEFAULTS["kv"]) -> int:
        """Cache bytes per token of layer i in format `kv` (0 for a layer without a cache of its own)."""
        if i not in self._attention_set or not self.owns_kv(i):
            return 0
        fmt = vocab.kv_format(kv)
        return sum(fmt.nbytes(r) for r in self.kv_rows_per_layer(i))

    def _kv_fits(self, kv: str) -> bool:
        """Every cached row is a whole number of `kv`'s blocks (kv_rows_per_layer); memoised per format
        (every Setup asks, and a fit makes one per point and candidate)."""
        memo = self.__dict__.setdefault("_kv_fits_memo", {})
        if kv not in memo:
            try:
                self.kv_bytes_per_token(kv)
                memo[kv] = True
            except ValueError:
                memo[kv] = False
        return memo[kv]

    def kv_bytes_per_token(self, kv: str = vocab.DEFAULTS["kv"], *, expanded: bool = False,
                           windowed: bool | None = None) -> int:
        """Exact cache bytes per token over all the layers that cache (a hybrid's linear layers hold a
        fixed state instead: recurrent_state_bytes). `expanded=True` gives what an MLA model
        would cache without the latent trick (full per-head K and V), for comparison. `windowed`:
        only the windowed layers' (True) or only the global layers' (False), whose cache grows with the
        context."""
        fmt = vocab.kv_format(kv)
        layers = [i for i in self.cache_layers
                  if windowed is None or (i in self._window_set) == windowed]
        if expanded and self.attention == "mla":
            rows = [self.head_dim] * self.n_heads + [self.v_head_dim] * self.n_heads
            return len(layers) * sum(fmt.nbytes(r) for r in rows)
        return sum(self.kv_layer_bytes(i, kv) for i in layers)

    @property
    def linear_v_tiled(self) -> bool:
        """A Gated DeltaNet config read from a Qwen3.5 GGUF (qwen35 / qwen35moe): llama.cpp's converter stores
        its linear layers' value heads tiled over the key heads (value head j reads key head j mod Hk;
        conversion/qwen.py _LinearAttentionVReorderBase) where HF groups them (j // (Hv / Hk)): the file's
        weights run as stored with that mapping (Model's _linear_attn)."""
        return self.linear_kind == "gdn" and (self.hf or {}).get("gguf_architecture") in ("qwen35", "qwen35moe")

    @property
    def linear_conv_dim(self) -> int:
        """Channels of a linear layer's short convolution: its q, k (linear_k_heads x k_dim each) and
        v (linear_v_heads x v_dim); LFM2's gated short convolution (shortconv): hidden_size, one per channel of
        B * x."""
        if self.linear_kind == "shortconv":
            return self.hidden_size
        return 2 * self.linear_k_heads * self.linear_k_dim + self.linear_v_heads * self.linear_v_dim

    def recurrent_state_bytes(self) -> int:
        """Bytes of one stream's recurrent state over all linear layers (0 without them), as llama.cpp's
        recurrent memory holds it (src/llama-memory-recurrent.cpp, f32 by default): per layer the
        convolution's last K - 1 inputs (n_embd_r = (K - 1) x conv channels) and one k_dim x v_dim
        matrix per value head (n_embd_s = k_dim x value heads x v_dim). It does not grow with the
        context. LFM2's short convolution keeps the conv's window only (src/llama-hparams.cpp n_embd_r:
        n_embd x (shortconv.l_cache - 1); n_embd_s 0): its linear_v_heads are 0."""
        if not self.linear_layers:
            return 0
        per = (self.linear_conv - 1) * self.linear_conv_dim + \
            self.linear_v_heads * self.linear_k_dim * self.linear_v_dim
        return 4 * per * len(self.linear_layers)

    # ---- parameters ---------------------------------------------------------------------------
    def attention_params(self, i: int | None = None) -> int:
        """Weights (and biases) of layer i's attention sub-layer (None: the first attention layer's),
        excluding the pre-attention norm."""
        return sum(_numel(s) for s in self._attention_tensors(i).values())

    def linear_attention_params(self) -> int:
        """Weights of one linear-attention (Gated DeltaNet) sub-layer, excluding the pre-norm; 0 for
        a model without linear layers."""
        return sum(_numel(s) for s in self._linear_tensors().values()) if self.linear_layers else 0

    @property
    def mlp_matrices(self) -> int:
        """Matrices of an MLP or expert: gate, up and down (3), or up and down where ungated (2)."""
        return 3 if self.mlp_gated else 2

    @property
    def expert_input_size(self) -> int:
        """The width the routed experts read and write: hidden_size, or the latent MoE's moe_latent_size."""
        return self.moe_latent_size or self.hidden_size

    def expert_params(self) -> int:
        """One routed expert (gate, up, down; with GPT-OSS's biases)."""
        b = 2 * self.moe_intermediate_size + self.hidden_size if self.expert_bias else 0
        return self.mlp_matrices * self.expert_input_size * self.moe_intermediate_size + b

    def latent_proj_params(self) -> int:
        """A latent MoE layer's two projections (hidden -> latent, latent -> hidden); 0 without."""
        return 2 * self.hidden_size * self.moe_latent_size

    def shared_expert_params(self) -> int:
        Fs = self.shared_expert_intermediate_size
        return self.mlp_matrices * self.hidden_size * Fs + (self.hidden_size if self.shared_expert_gate else 0) \
            + (2 * Fs + self.hidden_size if self.mlp_bias and Fs else 0)

    def router_params(self) -> int:
        return self.n_routed_experts * self.hidden_size + (self.n_routed_experts if self.router_bias else 0) \
            + (self.n_routed_experts if self.expert_bias else 0)

    def dense_mlp_params(self, i: int | None = None) -> int:
        """One dense MLP (layer i's, None: intermediate_size wide), with Apertus's two learned xIELU scalars."""
        F = self.intermediate_size if i is None else self.layer_intermediate(i)
        return self.mlp_matrices * self.hidden_size * F + ((self.mlp_matrices - 1) * F + self.hidden_size
                                                           if self.mlp_bias else 0) + \
            (len(XIELU_PARAMS) if self.xielu else 0)

    def embedding_params(self) -> int:
        """Input embedding plus lm_head (once if tied), plus Gemma 4's per-layer embedding table."""
        return self.vocab_size * self.hidden_size * (1 if self.tie_word_embeddings else 2) + \
            self.ple_vocab * self.n_layers * self.ple_size

    def ple_params(self) -> int:
        """Gemma 4's per-layer-embedding weights besides the table: the input embedding's projection
        (hidden -> layers x P) and its norm, and in each layer the gate (hidden -> P), the projection
        (P -> hidden) and its norm."""
        if not self.ple_size:
            return 0
        D, P, L = self.hidden_size, self.ple_size, self.n_layers
        return L * P * D + P + L * (2 * D * P + D)

    def altup_laurel_params(self) -> int:
        """Gemma 3n's AltUp and LAuReL weights: per layer the router (hidden -> n) and its norm, the prediction
        (n -> n^2) and correction (n -> n) coefficients, the output scale, LAuReL's two low-rank matrices and its
        norm; the model's (n - 1) projections into the streams and (n - 1) out of them. 0 without."""
        if not (self.altup_inputs or self.laurel_rank):
            return 0
        D, n, r = self.hidden_size, self.altup_inputs, self.laurel_rank
        per = (n * D + D + n ** 3 + n * n + D if n else 0) + (2 * D * r + D if r else 0)
        return self.n_layers * per + (2 * (n - 1) * D * D if n else 0)

    def total_params(self) -> int:
        moe = self.router_params() + self.n_routed_experts * self.expert_params() + self.shared_expert_params() \
            + self.latent_proj_params()
        if self.model_type in GEMMA4_FAMILIES:
            # the router's input scale and per-expert output scale; the MoE layer's three extra norms
            moe += self.hidden_size + self.n_routed_experts + 3 * self.hidden_size
        n_lin = len(self.linear_layers)
        att = self.attention_layers
        uniform = self._attn_uniform
        nb = 2 if self.norm_bias else 1       # (Phi-3.5-MoE's LayerNorms: a weight and a bias)
        n_lin_blocks = len(self.linear_attn_layers) + len(self.linear_mlp_layers)   # (DeciLM's linear blocks)
        return (self.embedding_params() + nb * self.hidden_size            # final norm
                + (self.vocab_size if self.lm_head_bias else 0)
                + nb * self.n_norms() * self.hidden_size                    # each layer's norms
                + n_lin_blocks * self.hidden_size * self.hidden_size
                + (len(att) * self.attention_params() if uniform else sum(self.attention_params(i) for i in att))
                + n_lin * self.linear_attention_params()
                + (self.n_dense_layers * self.dense_mlp_params() if not (self.double_wide_mlp or
                                                                         self.layer_intermediates) else
                   sum(self.dense_mlp_params(i) for i in self.dense_layers))
                + self.n_moe_layers * moe + self.ple_params() + self.altup_laurel_params())

    def n_norms(self) -> int:
        """The decoder layers' norms, all together: n_layer_norms each, but DeciLM's (nemotron-nas) one before
        each attention (or its linear stand-in) and one before each MLP (or its), none where the block is a no-op."""
        if self.model_type != "nemotron-nas":
            return self.n_layers * self.n_layer_norms
        return sum(self.has_attn_block(i) + self.has_mlp_block(i) for i in range(self.n_layers))

    def has_attn_block(self, i: int) -> bool:
        """Layer i holds an attention or (DeciLM) the linear that replaces it."""
        return self.has_mixer(i) or i in self.linear_attn_layers

    def has_mlp_block(self, i: int) -> bool:
        """Layer i holds an MLP / MoE or (DeciLM) the linear that replaces it."""
        return self.has_ffn(i) or i in self.linear_mlp_layers

    def active_params(self, *, embeddings: bool = True) -> int:
        idle = self.n_moe_layers * (self.n_routed_experts - self.n_experts_per_tok) * self.expert_params()
        p = self.total_params() - idle
        return p if embeddings else p - self.embedding_params()

    def tensor_shapes(self) -> dict[str, tuple]:
        """Every checkpoint tensor by HF name -> shape (routed experts stacked as
        `mlp.experts.{gate,up,down}_proj` [E, F, D] / [E, D, F], the layout glmbench's MoE ops take)."""
        D, V = self.hidden_size, self.vocab_size
        t: dict[str, tuple] = {"model.embed_tokens.weight": (V, D), "model.norm.weight": (D,)}
        if self.norm_bias:
            t["model.norm.bias"] = (D,)
        if not self.tie_word_embeddings:
            t["lm_head.weight"] = (V, D)
        if self.lm_head_bias:
            t["lm_head.bias"] = (V,)
        att = self._attention_tensors()
        per_layer_att = not self._attn_uniform
        lin = self._linear_tensors() if self.linear_layers else {}
        lin_set = frozenset(self.linear_layers)
        gemma4 = self.model_type in GEMMA4_FAMILIES
        if self.ple_size:
            P, L = self.ple_size, self.n_layers
            t["model.embed_tokens_per_layer.weight"] = (self.ple_vocab, L * P)
            t["model.per_layer_model_projection.weight"] = (L * P, D)
            t["model.per_layer_projection_norm.weight"] = (P,)
        n_alt = self.altup_inputs
        if n_alt:   # (HF: altup_projections.0..n-2 / altup_unembed_projections.*, stacked here as the converter does)
            t["model.altup_projections.weight"] = (n_alt - 1, D, D)
            t["model.altup_unembed_projections.weight"] = (n_alt - 1, D, D)
        for i in range(self.n_layers):
            p = f"model.layers.{i}."
            if self.post_norms:     # (OLMo 2 / 3, EXAONE 4: the norms after attention and after the MLP)
                t[p + "post_attention_layernorm.weight"] = (D,)
                t[p + "post_feedforward_layernorm.weight"] = (D,)
            elif self.model_type == "nemotron-nas":
                # DeciLMDecoderLayer: a norm before each block that is not a no-op; a linear block's one matrix
                if self.has_attn_block(i):
                    t[p + "input_layernorm.weight"] = (D,)
                if self.has_mlp_block(i):
                    t[p + "post_attention_layernorm.weight"] = (D,)
                if i in self.linear_attn_layers:
                    t[p + "self_attn.linear_attn.weight"] = (D, D)
                if i in self.linear_mlp_layers:
                    t[p + "mlp.linear_mlp.weight"] = (D, D)
            elif self.model_type == "apertus":   # (ApertusDecoderLayer's names for Llama's two norms)
                t[p + "attention_layernorm.weight"] = (D,)
                t[p + "feedforward_layernorm.weight"] = (D,)
            else:
                t[p + "input_layernorm.weight"] = (D,)
            if self.n_layer_norms > 1 and not self.post_norms and self.model_type not in ("nemotron-nas", "apertus"):
                # (Cohere: one norm before attention and MLP)
                t[p + "post_attention_layernorm.weight"] = (D,)
            if self.norm_bias:
                t[p + "input_layernorm.bias"] = (D,)
                t[p + "post_attention_layernorm.bias"] = (D,)
            if self.n_layer_norms == 4:
                post = ("post_self_attn_layernorm", "post_mlp_layernorm") if self.model_type == "glm4" else \
                    ("pre_feedforward_layernorm", "post_feedforward_layernorm")
                t[p + post[0] + ".weight"] = (D,)
                t[p + post[1] + ".weight"] = (D,)
            if i in lin_set:
                for k, s in lin.items():
                    t[p + "linear_attn." + k] = s
            # (a parallel hybrid's linear layer holds the attention beside its Mamba-2: parallel_mixers)
            if (i not in lin_set or self.parallel_mixers) and self.has_mixer(i):
                for k, s in (self._attention_tensors(i) if per_layer_att else att).items():
                    t[p + "self_attn." + k] = s
            if n_alt:   # Gemma 3n's AltUp (Gemma3nTextAltUp)
                t[p + "altup.correct_output_scale"] = (D,)
                t[p + "altup.correction_coefs.weight"] = (n_alt, n_alt)
                t[p + "altup.prediction_coefs.weight"] = (n_alt * n_alt, n_alt)
                t[p + "altup.modality_router.weight"] = (n_alt, D)
                t[p + "altup.router_norm.weight"] = (D,)
            if self.laurel_rank:   # Gemma 3n's LAuReL (Gemma3nTextLaurelBlock)
                t[p + "laurel.linear_left.weight"] = (self.laurel_rank, D)
                t[p + "laurel.linear_right.weight"] = (D, self.laurel_rank)
                t[p + "laurel.post_laurel_norm.weight"] = (D,)
            if gemma4 or self.model_type in GEMMA3N_FAMILIES:
                if gemma4:
                    t[p + "layer_scalar"] = (1,)        # (a buffer in HF's model, stored in the checkpoint)
                if self.ple_size:
                    t[p + "per_layer_input_gate.weight"] = (self.ple_size, D)
                    t[p + "per_layer_projection.weight"] = (D, self.ple_size)
                    t[p + "post_per_layer_input_norm.weight"] = (D,)
            parts = (("gate", "up", "down") if self.mlp_gated else ("up", "down"))
            if self.is_moe_layer(i):
                E, F, Di = self.n_routed_experts, self.moe_intermediate_size, self.expert_input_size
                t[p + "mlp.gate.weight"] = (E, D)
                if gemma4:
                    # the router's input scale and per-expert scale; the norms around the experts and the
                    # dense MLP beside them (HF: router.scale, router.per_expert_scale, pre_feedforward_layernorm_2,
                    # post_feedforward_layernorm_1 / _2)
                    t[p + "mlp.gate.scale"] = (D,)
                    t[p + "mlp.gate.per_expert_scale"] = (E,)
                    for n in ("pre_feedforward_layernorm_2", "post_feedforward_layernorm_1",
                              "post_feedforward_layernorm_2"):
                        t[p + n + ".weight"] = (D,)
                if self.router_bias:
                    t[p + "mlp.gate.e_score_correction_bias"] = (E,)
                for n in parts:
                    t[p + f"mlp.experts.{n}_proj"] = (E, Di, F) if n == "down" else (E, F, Di)
                if self.moe_latent_size:
                    t[p + "mlp.fc1_latent_proj.weight"] = (Di, D)
                    t[p + "mlp.fc2_latent_proj.weight"] = (D, Di)
                if self.expert_bias:
                    t[p + "mlp.gate.bias"] = (E,)
                    t[p + "mlp.experts.gate_proj_bias"] = (E, F)
                    t[p + "mlp.experts.up_proj_bias"] = (E, F)
                    t[p + "mlp.experts.down_proj_bias"] = (E, D)
                if self.shared_expert_intermediate_size:
                    Fs = self.shared_expert_intermediate_size
                    for n in parts:
                        t[p + f"mlp.shared_experts.{n}_proj.weight"] = (D, Fs) if n == "down" else (Fs, D)
                        if self.mlp_bias:       # (DeepSeek-V2: its shared experts are a DeepseekV2MLP)
                            t[p + f"mlp.shared_experts.{n}_proj.bias"] = (D,) if n == "down" else (Fs,)
                    if self.shared_expert_gate:
                        t[p + "mlp.shared_expert_gate.weight"] = (1, D)
            elif self.has_ffn(i):
                F = self.layer_intermediate(i)
                for n in parts:
                    t[p + f"mlp.{n}_proj.weight"] = (D, F) if n == "down" else (F, D)
                    if self.mlp_bias:
                        t[p + f"mlp.{n}_proj.bias"] = (D,) if n == "down" else (F,)
                if self.xielu:   # (XIELUActivation: two learned 1-element parameters, two 0-d buffers it saves)
                    for n in XIELU_PARAMS:
                        t[p + f"mlp.act_fn.{n}"] = (1,)
                    for n in XIELU_BUFFERS:
                        t[p + f"mlp.act_fn.{n}"] = ()
        return t

    def _attention_tensors(self, i: int | None = None) -> dict[str, tuple]:
        """One attention sub-layer's tensors by name -> shape: layer i's (None: the first attention
        layer's; they differ only on Gemma 4's global and kv-shared layers)."""
        D, H = self.hidden_size, self.n_heads
        t: dict[str, tuple] = {}
        if i is None:
            i = self.attention_layers[0] if self.attention_layers else 0
        if self.attention == "mla":
            qk = self.qk_nope_head_dim + self.qk_rope_head_dim
            if self.q_lora_rank:
                t["q_a_proj.weight"] = (self.q_lora_rank, D)
                if self.attention_bias:
                    t["q_a_proj.bias"] = (self.q_lora_rank,)
                t["q_a_layernorm.weight"] = (self.q_lora_rank,)
                t["q_b_proj.weight"] = (H * qk, self.q_lora_rank)
            else:
                t["q_proj.weight"] = (H * qk, D)
            kv_a = self.kv_lora_rank + self.qk_rope_head_dim
            t["kv_a_proj_with_mqa.weight"] = (kv_a, D)
            if self.attention_bias:
                t["kv_a_proj_with_mqa.bias"] = (kv_a,)
            t["kv_a_layernorm.weight"] = (self.kv_lora_rank,)
            t["kv_b_proj.weight"] = (H * (self.qk_nope_head_dim + self.v_head_dim), self.kv_lora_rank)
            t["o_proj.weight"] = (D, H * self.v_head_dim)
            if self.attention_out_bias:
                t["o_proj.bias"] = (D,)
            if self.has_indexer(i):
                t.update(self._indexer_tensors())
        else:
            Hk, Dh, Dv = self.layer_kv_heads(i), self.layer_head_dim(i), self.layer_v_dim(i)
            own, v_proj = self.owns_kv(i), self.layer_v_proj(i)
            # a gated output (Qwen3-Next, Qwen3.5): q_proj gives each head's query and its gate
            # (AFMoE: its own gate_proj, as many rows as q_proj)
            afmoe = self.model_type == "afmoe"
            q_rows = H * Dh * (2 if self.attn_output_gate and not afmoe else 1)
            # (Gemma 4: a kv-shared layer has no k / v projection, a k_eq_v global layer no v_proj)
            for n, rows, has in (("q_proj", q_rows, True), ("k_proj", Hk * Dh, own), ("v_proj", Hk * Dv, v_proj)):
                if not has:
                    continue
                t[n + ".weight"] = (rows, D)
                if self.attention_bias:
                    t[n + ".bias"] = (rows,)
            if afmoe and self.attn_output_gate:
                t["gate_proj.weight"] = (H * Dh, D)
            t["o_proj.weight"] = (D, H * Dv)
            if self.attention_out_bias:
                t["o_proj.bias"] = (D,)
            if self.qk_norm:
                qn, kn = ("query_layernorm", "key_layernorm") if self.model_type in HUNYUAN_FAMILIES else \
                    ("q_norm", "k_norm")
                t[qn + ".weight"] = (H * Dh,) if self.qk_norm_all_heads else (Dh,)
                if own:
                    t[kn + ".weight"] = (Hk * Dh,) if self.qk_norm_all_heads else (Dh,)
            if self.attention_sinks:
                t["sinks"] = (H,)
        return t

    def _indexer_tensors(self) -> dict[str, tuple]:
        """A DSA layer's lightning indexer (HF GlmMoeDsaIndexer / DeepseekV32Indexer): wq_b (the q latent -> the
        index heads' queries), wk (hidden -> one key), its LayerNorm (weight and bias), weights_proj (hidden -> a
        weight per index head)."""
        H, Dk, D = self.index_n_heads, self.index_head_dim, self.hidden_size
        return {"indexer.wq_b.weight": (H * Dk, self.q_lora_rank), "indexer.wk.weight": (Dk, D),
                "indexer.k_norm.weight": (Dk,), "indexer.k_norm.bias": (Dk,), "indexer.weights_proj.weight": (H, D)}

    def _linear_tensors(self) -> dict[str, tuple]:
        """One Gated DeltaNet layer's tensors (HF Qwen3NextGatedDeltaNet / Qwen3_5GatedDeltaNet,
        transformers 5.25): the input projections (Qwen3-Next: q, k, v, z in one and b, a in one;
        Qwen3.5: q, k, v in one, z, b and a apart), the depthwise convolution over q, k, v, the
        per-head decay (A_log) and time-step bias, the gated RMSNorm over v_dim and out_proj."""
        D, Hk, Hv = self.hidden_size, self.linear_k_heads, self.linear_v_heads
        dk, dv = self.linear_k_dim, self.linear_v_dim
        if self.linear_kind == "shortconv":
            # HF Lfm2ShortConv / Lfm2MoeShortConv (transformers 5.25): in_proj (hidden -> B, C, x), the depthwise
            # conv (Conv1d groups = hidden: [hidden, 1, conv_L_cache]), out_proj; each with a bias where conv_bias
            t = {"in_proj.weight": (3 * D, D), "conv1d.weight": (D, 1, self.linear_conv), "out_proj.weight": (D, D)}
            if self.linear_conv_bias:
                t.update({"in_proj.bias": (3 * D,), "conv1d.bias": (D,), "out_proj.bias": (D,)})
            return t
        t: dict[str, tuple] = {"dt_bias": (Hv,), "A_log": (Hv,), "conv1d.weight": (self.linear_conv_dim, 1, self.linear_conv)}
        if self.linear_kind == "kda":
            # HF KimiLinearDeltaAttention (transformers 5.25): q / k / v projections, one short convolution over
            # all three, the forget gate (low-rank f_a -> f_b, per-channel dt_bias, A_log per head), beta
            # (b_proj), the output gate (low-rank g_a -> g_b), the gated RMSNorm over the head dim, o_proj
            H, dk = Hv, dk
            return {"q_proj.weight": (H * dk, D), "k_proj.weight": (H * dk, D), "v_proj.weight": (H * dv, D),
                    "conv1d.weight": (self.linear_conv_dim, 1, self.linear_conv), "forget_gate.dt_bias": (H * dk,),
                    "forget_gate.A_log": (H,), "forget_gate.f_a_proj.weight": (dk, D),
                    "forget_gate.f_b_proj.weight": (H * dk, dk), "b_proj.weight": (H, D),
                    "g_a_proj.weight": (dk, D), "g_b_proj.weight": (H * dv, dk), "o_norm.weight": (dv,),
                    "o_proj.weight": (D, H * dv)}
        if self.linear_kind == "mamba2":
            # HF NemotronHMamba2Mixer / GraniteMoeHybridMambaLayer: in_proj gives the gate z (d_inner), x, B,
            # C (the conv's channels) and dt (one per head); the conv's bias; D, the skip per head; the
            # gated RMSNorm over d_inner (in groups), out_proj
            if self.linear_conv_bias:
                t["conv1d.bias"] = (self.linear_conv_dim,)
            t["D"] = (Hv,)
            t["in_proj.weight"] = (Hv * dv + self.linear_conv_dim + Hv, D)
            if self.linear_norm:     # (Falcon-H1 without mamba_rms_norm: none)
                t["norm.weight"] = (Hv * dv,)
            t["out_proj.weight"] = (D, Hv * dv)
            return t
        if self.model_type == "qwen3_next":
            t["in_proj_qkvz.weight"] = (2 * Hk * dk + 2 * Hv * dv, D)
            t["in_proj_ba.weight"] = (2 * Hv, D)
        else:
            t["in_proj_qkv.weight"] = (2 * Hk * dk + Hv * dv, D)
            t["in_proj_z.weight"] = (Hv * dv, D)
            t["in_proj_b.weight"] = (Hv, D)
            t["in_proj_a.weight"] = (Hv, D)
        t["norm.weight"] = (dv,)
        t["out_proj.weight"] = (D, Hv * dv)
        return t

    def tensor_context(self) -> vocab.TensorContext:
        """What llama.cpp's quantizer looks at besides a tensor's name and shape (vocab.mix_type)."""
        gqa = self.n_heads // self.n_kv_heads if self.attention == "gqa" and self.n_kv_heads else 1
        return vocab.TensorContext(n_layers=self.n_layers, n_gqa=gqa, n_expert=self.n_routed_experts,
                                   has_output=not self.tie_word_embeddings)

    def tensor_formats(self, weights: str = vocab.DEFAULTS["measured_weights"]) -> dict:
        """Every checkpoint tensor by HF name -> the vocab.Format it is stored in (vocab.tensor_format;
        for a llama.cpp mix, the quantizer's per-tensor rules, an approximation without a file)."""
        fmt, ctx = vocab.weight_format(weights), self.tensor_context()
        return {n: vocab.tensor_format(fmt, n, s, ctx) for n, s in self.tensor_shapes().items()}

    def weight_bytes(self, weights: str = vocab.DEFAULTS["measured_weights"]) -> int:
        """Exact bytes of the checkpoint stored as a GGUF-style file in format `weights` (a ggml type,
        a llama.cpp mix such as Q4_K_M, or a vLLM format).

        As llama.cpp's quantizer does (src/llama-quant.cpp): only tensors of 2+ dimensions are
        quantized; 1-D tensors (norms, biases, the router's score bias) stay f32, and so does the
        router weight (`ffn_gate_inp` is never quantized). A matrix whose rows are not a whole
        number of the format's blocks falls back as llama.cpp's `llama_tensor_get_type` does
        (vocab.tensor_format; a mix's per-tensor types: vocab.mix_type). Memoised per format (a public
        fit reads it for every record of a GGUF runtime, calibrate.file_weights)."""
        fmt = vocab.weight_format(weights)
        memo = self.__dict__.setdefault("_weight_bytes_memo", {})
        if fmt.name not in memo:
            ctx = self.tensor_context()
            memo[fmt.name] = sum(vocab.tensor_nbytes(fmt, name, shape, ctx) for name, shape in self.tensor_shapes().items())
        return memo[fmt.name]

    # fields that set no cost: numerics (rope bases, epsilons, scales, caps), the native context
    # and the name; two configs alike in everything else are priced alike (cost_shape)
    _NO_COST = frozenset({"name", "hf", "rope_theta", "rope_scaling", "max_position_embeddings", "rms_norm_eps",
                          "latent_norm_eps", "file_weights", "routed_scaling_factor", "rope_local_theta",
                          "query_pre_attn_scalar", "attn_logit_softcapping", "logit_scale", "clip_qkv",
                          # (a wrapper's text model costs what the text model alone does: its vision is not priced)
                          "wrapper"})

    def cost_shape(self) -> tuple:
        """The fields the cost model prices (every field but _NO_COST; the dense MLP width only
        where a layer has a dense MLP): fine-tunes of one set of layers share it."""
        skip = self._NO_COST | ({"intermediate_size"} if not self.n_dense_layers else set())
        return tuple((f.name, getattr(self, f.name)) for f in dataclasses.fields(self) if f.name not in skip)

    def summary(self) -> dict:
        """The row `glmbench models --json` prints."""
        return {
            "name": self.name,
            "model_type": self.model_type,
            "family": _family_label(self),
            "attention": self.attention,
            "n_layers": self.n_layers,
            "hidden_size": self.hidden_size,
            "moe": self.n_routed_experts > 0,
            "total_params": self.total_params(),
            "active_params": self.active_params(),
            # (a quantized format only where each head's row is whole blocks: EXAONE 3.5 2.4B's 80-wide heads are not)
            "kv_bytes_per_token": {f: self.kv_bytes_per_token(f) for f in vocab.KV_FORMATS if self._kv_fits(f)},
            "linear_layers": len(self.linear_layers),
            "recurrent_state_bytes": self.recurrent_state_bytes(),
            # (a multimodal wrapper's config: what is not priced, its vision tower)
            **({"wrapper": self.wrapper, "unpriced": self.unpriced()} if self.wrapper else {}),
        }


def _family_label(cfg: ModelConfig) -> str:
    attn = "MLA" if cfg.attention == "mla" else "GQA"
    if cfg.linear_layers:       # a hybrid: linear attention beside the softmax layers
        attn += {"mamba2": " + Mamba-2", "kda": " + Kimi Delta", "shortconv": " + short conv"}.get(cfg.linear_kind,
                                                                                             " + DeltaNet")
        if cfg.parallel_mixers:     # (Falcon-H1: both in every layer, side by side)
            attn += " in parallel"
    if cfg.index_topk:          # DeepSeek Sparse Attention
        attn += " + DSA"
    label = f"MoE + {attn}" if cfg.n_routed_experts else f"dense {attn}"
    # (a multimodal wrapper's text model: its vision tower is not priced)
    return f"{label}, text of {cfg.wrapper} (vision not priced)" if cfg.wrapper else label


def _numel(shape) -> int:
    n = 1
    for s in shape:
        n *= s
    return n


# ---- loading --------------------------------------------------------------------------------------
def builtin_names() -> list[str]:
    return list(_builtins())


@functools.lru_cache(maxsize=1)
def _builtins() -> tuple:
    """The package's built-in config names, listed once (every load of a name asks)."""
    return tuple(sorted(f[:-5] for f in os.listdir(_DATA) if f.endswith(".json")))


def _not_found(s: str, path: str) -> str:
    """The error for a --model that is no built-in and no file: a name gets the nearest built-ins,
    a path says what is missing (a typo in either is the usual cause)."""
    import difflib
    names = builtin_names()
    head = f"config {s!r} is neither a built-in model"
    tail = "nor an existing config.json, .gguf file or HF folder"
    if os.path.isdir(s):
        return f"{head} {tail}: folder {s!r} holds no config.json"
    looks_like_path = os.sep in s or (os.altsep or os.sep) in s or \
        s.lower().endswith((".json", ".gguf", ".toml", ".safetensors"))
    if looks_like_path:
        # an HF hub id ("Qwen/Qwen3-32B") is no file here: name the built-in it may mean
        base = os.path.basename(s.rstrip("/\\")).lower()
        for tail_ in ("-instruct", "-chat", "-it", "-base"):   # a tuned release on the built-in's layers
            base = base[:-len(tail_)] if base.endswith(tail_) and base[:-len(tail_)] in names else base
        near = [] if base.endswith((".json", ".gguf", ".toml", ".safetensors")) else \
            [base] if base in names else difflib.get_close_matches(base, names, n=2, cutoff=0.85)
        hint = f" (the built-in {' or '.join(near)}?)" if near else ""
        return f"{head} {tail}: no such file or folder: {s}{hint}"
    near = difflib.get_close_matches(s.lower(), names, n=5, cutoff=0.6)
    hint = f"nearest: {', '.join(near)}; " if near else ""
    return f"{head} ({hint}all: `glmbench models`) {tail}"


def builtin_path(name: str) -> str:
    return os.path.join(_DATA, name.lower() + ".json")


def load(src) -> ModelConfig:
    """A built-in name ("glm-4.7-flash"), a path to a config.json (or a folder holding one), a GGUF
    file, or an already-parsed dict -> ModelConfig. A ModelConfig passes through unchanged. A folder
    with *.safetensors gets `file_weights` from their headers (its stored dtypes: predictions for it
    are at the folder's dtype), as a GGUF file does from its tensors."""
    if isinstance(src, ModelConfig):
        return src
    if isinstance(src, Mapping):
        hf = dict(src)
        nop = hf.get("_name_or_path")
        name = (_hub_name(nop) if isinstance(nop, str) and nop.strip() else None) \
            or str(hf.get("name") or hf.get("model_type") or "config")
        return from_hf(hf, name)
    if isinstance(src, (str, os.PathLike)):
        s = os.fspath(src)
        if s.lower() in _builtins():
            return from_hf(_read_json(builtin_path(s)), s.lower())
        path = os.path.join(s, "config.json") if os.path.isdir(s) else s
        if os.path.isfile(path) and gguf_file.is_gguf(path):
            return load_gguf(path)
        if not os.path.isfile(path):
            raise ValueError(_not_found(s, path))
        if path.lower().endswith(".safetensors"):
            raise ValueError(f"{path}: a .safetensors file holds weights only: give the folder holding it and its "
                             f"config.json ({os.path.dirname(path) or '.'})")
        hf = _read_json(path)
        try:
            cfg = from_hf(hf, _name_from_path(path, hf))
            # an HF folder with its weights: their stored dtypes and bytes (predictions at the folder's dtype)
            fw = gguf_file.folder_weights(s, cfg.tensor_shapes(), cfg.n_layers) if os.path.isdir(s) else None
        except (ValueError, TypeError) as e:  # name the file: the field alone does not say which config
            raise type(e)(f"{path}: {e}") from None
        return cfg if fw is None else dataclasses.replace(cfg, file_weights=fw)
    raise TypeError(f"config must be a built-in name, a path or a dict, got {type(src).__name__}")


def weights_notice(model, weights: str | None) -> str | None:
    """What a prediction of `model` at `weights` (None: not asked) should tell the user when `model`
    is a model file (a GGUF, an HF folder with *.safetensors): its own stored types are used, so an
    asked-for format that differs is ignored; None for anything else (built-ins, configs)."""
    if not isinstance(model, (str, os.PathLike)):
        return None
    p = os.fspath(model)
    if not (os.path.isfile(p) and gguf_file.is_gguf(p)) and not (os.path.isdir(p) and any(
            f.endswith(".safetensors") for f in os.listdir(p))):
        return None
    fw = load(p).file_weights
    if fw is None or weights is None:
        return None
    if vocab.weight_format(weights).name == fw.weight_format:
        return None
    return (f"--weights {weights} is ignored for {p}: a model file is predicted at its own stored types "
            f"({fw.main_type}, {fw.model_bytes:,} bytes); convert or quantize the file to predict another format")


def load_gguf(path) -> ModelConfig:
    """A GGUF file -> ModelConfig from its metadata, with `file_weights` holding every tensor's
    stored type and bytes (models/gguf_file.py; memory-mapped, no tensor data read). Named after
    the file (a GGUF's name usually carries its quantization, e.g. GLM-4.7-Flash-Q4_K_M)."""
    p = os.fspath(path)
    g = gguf_file.read(p)
    hf = gguf_file.hf_config(g)
    try:
        cfg = from_hf(hf, os.path.splitext(os.path.basename(p))[0], gguf=True)
    except gguf_file.GGUFError:
        raise
    except ValueError as e:
        raise gguf_file.GGUFError(f"{p}: {e} (read from the GGUF metadata, architecture "
                                  f"{g.architecture!r})") from None
    fw = gguf_file.file_weights(g, cfg.tensor_shapes(), cfg.n_layers)
    return dataclasses.replace(cfg, file_weights=fw)


def _hf_cache_name(path: str) -> str | None:
    """"org/name" for a path inside an HF hub cache (.../models--org--name/snapshots/<hash>/...)."""
    parts = os.path.normpath(path).replace("\\", "/").split("/")
    for j in range(len(parts) - 2, -1, -1):
        if parts[j].startswith("models--") and parts[j + 1] == "snapshots":
            return parts[j][len("models--"):].replace("--", "/", 1)
    return None


def _hub_name(nop: str) -> str | None:
    """A model name from a config's `_name_or_path`: a hub id ("org/name") as it is, a local path by
    its HF-cache name or its folder (never a snapshot hash)."""
    nop = nop.strip().rstrip("/\\")
    if not nop:
        return None
    cached = _hf_cache_name(nop)
    if cached:
        return cached
    if os.path.isabs(nop) or nop.startswith(".") or nop.count("/") > 1 or "\\" in nop:
        return os.path.basename(nop) or None
    return nop


def _name_from_path(path: str, hf: dict) -> str:
    """The name of a model read from `path`: its HF-cache name (org/name), else the config's
    `_name_or_path` when that is a hub id, else its folder (config.json) or file stem."""
    cached = _hf_cache_name(os.path.abspath(path))
    if cached:
        return cached
    nop = hf.get("_name_or_path")
    if isinstance(nop, str) and nop.strip():
        n = _hub_name(nop)
        if n and not os.path.isabs(nop.strip()) and not nop.strip().startswith("."):
            return n
    if os.path.basename(path) == "config.json":
        return os.path.basename(os.path.dirname(os.path.abspath(path)))
    return os.path.splitext(os.path.basename(path))[0]


def _read_json(path: str) -> dict:
    try:
        with open(path, encoding="utf-8") as f:
            d = json.load(f)
    except json.JSONDecodeError as e:
        raise ValueError(f"{path}: not valid JSON (line {e.lineno}: {e.msg})") from None
    except UnicodeDecodeError as e:
        raise ValueError(f"{path}: not UTF-8 text (byte {e.start}: {e.reason}): not a JSON config.json, "
                         "nor a GGUF file (no GGUF magic)") from None
    if not isinstance(d, dict):
        raise ValueError(f"{path}: expected a JSON object, got {type(d).__name__}")
    return d


_COMPARED = tuple(f for f in dataclasses.fields(ModelConfig) if f.compare)   # what ModelConfig.__hash__ hashes


class _Reader:
    """Typed access to the HF dict; every error names the field and its value."""

    def __init__(self, hf: dict, model_type: str):
        self.hf, self.mt = hf, model_type
        self.defaults = _DEFAULTS[model_type]

    def raw(self, key, required=True):
        if key in self.hf:
            return self.hf[key]
        if key in self.defaults:
            return self.defaults[key]
        if required:
            raise ValueError(f"config field `{key}` is missing (model_type {self.mt!r})")
        return None

    def int(self, key, minimum=1, required=True, allow_none=False, maximum=None):
        v = self.raw(key, required)
        if v is None:
            if allow_none or not required:
                return None
            raise ValueError(f"config field `{key}` must be an integer, got None")
        if isinstance(v, bool) or not isinstance(v, int):
            if isinstance(v, float) and v.is_integer():
                v = int(v)
            else:
                raise ValueError(f"config field `{key}` must be an integer, got {v!r}")
        if maximum is not None and not minimum <= v <= maximum:
            raise ValueError(f"config field `{key}` must be in [{minimum}, {maximum}], got {v}")
        if v < minimum:
            raise ValueError(f"config field `{key}` must be >= {minimum}, got {v}")
        hi = vocab.MAX_CONFIG.get(key)
        if hi is not None and v > hi:
            raise ValueError(f"config field `{key}` = {v:,} is larger than any real model's (at most {hi:,})")
        return v

    def float(self, key, positive=True, required=True):
        v = self.raw(key, required)
        if isinstance(v, bool) or not isinstance(v, (int, float)) or not math.isfinite(v):
            raise ValueError(f"config field `{key}` must be a finite number, got {v!r}")
        if positive and v <= 0:
            raise ValueError(f"config field `{key}` must be > 0, got {v}")
        return float(v)

    def bool(self, key, required=True):
        v = self.raw(key, required)
        if not isinstance(v, bool):
            raise ValueError(f"config field `{key}` must be true or false, got {v!r}")
        return v


@functools.lru_cache(maxsize=64)
def _rope_params(scaling_json: str, theta: float, dim: int, max_pos: int, orig_json: str) -> tuple:
    """ModelConfig._rope_params from hashable inputs (the scaling dict and the top-level
    original_max_position_embeddings as JSON); the returned inv_freq is read-only (shared)."""
    rs = json.loads(scaling_json)
    t = rs.get("rope_type") or rs.get("type") or "default"
    plain = theta ** (-2.0 * np.arange(dim // 2) / dim)
    if t == "linear":
        inv, af = plain / _scaling_num(rs, "factor"), 1.0
    elif t == "yarn":
        orig = json.loads(orig_json)
        inv, af = _yarn(rs, plain, theta, dim, max_pos, {} if orig is None else
                        {"original_max_position_embeddings": orig})
    elif t == "llama3":
        inv, af = _llama3(rs, plain), 1.0
    elif t == "proportional":
        # Gemma 4's global layers (transformers 5.25 _compute_proportional_rope_parameters): over the whole head
        # (dim), the first int(partial_rotary_factor x dim // 2) pairs at the plain frequencies, the others at
        # zero (unturned: ops.rope_proportional), all divided by `factor` (default 1)
        prf = _scaling_num(rs, "partial_rotary_factor", 1.0, positive=False)
        if not 0.0 <= prf <= 1.0:
            raise ValueError(f"config field `rope_scaling.partial_rotary_factor` must be in [0, 1], got {prf!r}")
        n_rot = int(prf * dim // 2)
        inv = np.concatenate([plain[:n_rot], np.zeros(dim // 2 - n_rot)]) / _scaling_num(rs, "factor", 1.0)
        af = 1.0
    elif t == "ntk_alpha":
        # Hunyuan (HF HunYuan*RotaryEmbedding.compute_ntk_alpha_rope_parameters, transformers 5.25): plain rope by the
        # base theta x alpha^(dim / (dim - 2)) (llama.cpp's converter writes that base as rope.freq_base)
        alpha = _scaling_num(rs, "alpha")
        if dim <= 2:
            raise ValueError(f"NTK-alpha rope needs a head of more than 2 dims, got {dim}")
        inv, af = (theta * alpha ** (dim / (dim - 2))) ** (-2.0 * np.arange(dim // 2) / dim), 1.0
    elif t == "freq_factors":   # a GGUF's rope_freqs tensor (llama3 scaling as stored): divisors per pair
        f = np.asarray(rs.get("freq_factors"), dtype=np.float64)
        if f.shape != plain.shape:
            raise ValueError(f"config field `rope_scaling.freq_factors` has {f.size} factors; the {dim} rotated "
                             f"dims need {dim // 2}")
        inv, af = plain / f, 1.0
    else:
        raise ValueError(f"config field `rope_scaling` rope_type = {t!r} is not supported by the forward pass "
                         f"(supported: {', '.join(ROPE_TYPES)}); predictions do not depend on it")
    inv.setflags(write=False)
    return inv, float(af)


@dataclass(frozen=True, eq=False)
class LongRope:
    """ModelConfig.longrope: the two sets of inverse frequencies (float64 [rope_dim / 2], read-only), the
    sequence length past which the long set applies, and the attention factor of each."""
    short_inv_freq: np.ndarray = field(repr=False)
    long_inv_freq: np.ndarray = field(repr=False)
    original: int
    short_attention_factor: float
    long_attention_factor: float


@functools.lru_cache(maxsize=64)
def _longrope(scaling_json: str, theta: float, dim: int, max_pos: int, orig_json: str, mscales: bool) -> LongRope:
    """ModelConfig.longrope from hashable inputs; every malformed field a ValueError naming it."""
    rs = json.loads(scaling_json)
    top = json.loads(orig_json)
    orig = top if top is not None else rs.get("original_max_position_embeddings")
    if orig is None:
        raise ValueError("config field `original_max_position_embeddings` is missing: longrope switches from its "
                         "short_factor to its long_factor past it (state it at the top level or in rope_scaling)")
    if isinstance(orig, float) and orig.is_integer():
        orig = int(orig)
    if isinstance(orig, bool) or not isinstance(orig, int) or orig < 1:
        raise ValueError(f"config field `original_max_position_embeddings` must be a positive integer, got {orig!r}")
    plain = theta ** (-2.0 * np.arange(dim // 2) / dim)
    inv = {}
    for key in ("short_factor", "long_factor"):
        f = rs.get(key)
        if not isinstance(f, (list, tuple)) or not all(isinstance(x, (int, float)) and not isinstance(x, bool)
                                                       for x in f):
            raise ValueError(f"config field `rope_scaling.{key}` must be a list of numbers, got "
                             f"{f if not isinstance(f, (list, tuple)) else f[:8]!r}")
        if len(f) != dim // 2:
            raise ValueError(f"config field `rope_scaling.{key}` has {len(f)} factors; the {dim} rotated dims "
                             f"(head_dim x partial_rotary_factor) need {dim // 2}")
        a = np.asarray(f, np.float64)
        if not (np.isfinite(a).all() and (a > 0).all()):
            raise ValueError(f"config field `rope_scaling.{key}` must hold finite factors > 0, got "
                             f"{[x for x in f if not (math.isfinite(x) and x > 0)][:4]!r}")
        inv[key] = plain / a
        inv[key].setflags(write=False)
    if rs.get("attention_factor") is not None:
        af = _scaling_num(rs, "attention_factor")
    else:
        s = _scaling_num(rs, "factor") if rs.get("factor") is not None else max_pos / orig
        af = math.sqrt(1 + math.log(s) / math.log(orig)) if s > 1.0 and orig > 1 else 1.0
    short_af = long_af = float(af)
    if mscales and (rs.get("short_mscale") is not None or rs.get("long_mscale") is not None):
        # Phi-3.5-MoE (HF PhimoeRotaryEmbedding.forward): cos / sin times short_mscale or long_mscale by the regime
        short_af, long_af = _scaling_num(rs, "short_mscale"), _scaling_num(rs, "long_mscale")
    return LongRope(inv["short_factor"], inv["long_factor"], orig, short_af, long_af)


def _llama3(rs: dict, plain: np.ndarray) -> np.ndarray:
    """Llama 3.1's rope scaling as transformers 5.24 `_compute_llama3_parameters` defines it, in
    float64: wavelengths longer than original/low_freq_factor are divided by `factor`, shorter than
    original/high_freq_factor kept, and those between blended by a smooth factor."""
    factor = _scaling_num(rs, "factor")
    low = _scaling_num(rs, "low_freq_factor")
    high = _scaling_num(rs, "high_freq_factor")
    old = _scaling_num(rs, "original_max_position_embeddings")
    if high < low:
        raise ValueError(f"config field `rope_scaling.high_freq_factor`={high} must be >= `low_freq_factor`={low}")
    wavelen = 2 * math.pi / plain
    low_wl, high_wl = old / low, old / high
    inv = np.where(wavelen > low_wl, plain / factor, plain)
    if high == low:     # Llama 4 Scout (1.0 / 1.0): no band between the two, nothing blended
        return inv
    smooth = (old / wavelen - low) / (high - low)
    smoothed = (1 - smooth) * inv / factor + smooth * inv
    medium = ~(wavelen < high_wl) & ~(wavelen > low_wl)
    return np.where(medium, smoothed, inv)


def _scaling_num(rs: dict, key: str, default=None, positive=True) -> float:
    """A number from the rope_scaling dict (finite; > 0 when `positive`), else a ValueError naming it."""
    v = rs.get(key, default)
    if isinstance(v, bool) or not isinstance(v, (int, float)) or not math.isfinite(v) or (positive and v <= 0):
        raise ValueError(f"config field `rope_scaling.{key}` must be a finite number{' > 0' if positive else ''}, "
                         f"got {v!r}")
    return float(v)


def _yarn_mscale(scale: float, m: float = 1.0) -> float:
    return 1.0 if scale <= 1 else 0.1 * m * math.log(scale) + 1.0


def _yarn(rs: dict, plain: np.ndarray, theta: float, dim: int, max_pos: int, hf: dict) -> tuple:
    """YaRN (arXiv 2309.00071) as transformers 5.24 `_compute_yarn_parameters` defines it, in float64:
    pairs whose wavelength fits beta_fast times into the original context keep their frequency,
    those fitting fewer than beta_slow times are divided by `factor`, and a linear ramp over the
    pair index blends the two in between. Returns (inv_freq [dim/2], attention_factor)."""
    # HF standardize_rope_params: a top-level original_max_position_embeddings wins, then the
    # scaling dict's, then max_position_embeddings.
    orig = hf.get("original_max_position_embeddings", rs.get("original_max_position_embeddings", max_pos))
    if isinstance(orig, bool) or not isinstance(orig, (int, float)) or not orig > 0:
        raise ValueError(f"config field `rope_scaling.original_max_position_embeddings` must be > 0, got {orig!r}")
    if rs.get("factor") is None:  # DeepSeek-V3 style: the ratio of the two context lengths
        if not max_pos:
            raise ValueError("config field `rope_scaling.factor` is missing and there is no "
                             "`max_position_embeddings` to derive it from")
        factor = max_pos / orig
    else:
        factor = _scaling_num(rs, "factor")
    if rs.get("attention_factor") is not None:
        af = _scaling_num(rs, "attention_factor")
    else:
        m, m_all = rs.get("mscale"), rs.get("mscale_all_dim")
        if m and m_all:
            af = _yarn_mscale(factor, _scaling_num(rs, "mscale")) / _yarn_mscale(factor, _scaling_num(rs, "mscale_all_dim"))
        else:
            af = _yarn_mscale(factor)
    beta_fast = _scaling_num(rs, "beta_fast") if rs.get("beta_fast") else 32.0
    beta_slow = _scaling_num(rs, "beta_slow") if rs.get("beta_slow") else 1.0
    if not theta > 1:  # log(theta) divides below (found by bench/fuzz: rope_theta = 1)
        raise ValueError(f"config field `rope_theta` must be > 1 with YaRN rope scaling, got {theta!r}")

    def correction_dim(n_rot):  # the (fractional) dim index whose wavelength fits n_rot times in orig
        return dim * math.log(orig / (n_rot * 2 * math.pi)) / (2 * math.log(theta))

    low, high = correction_dim(beta_fast), correction_dim(beta_slow)
    if rs.get("truncate", True):
        low, high = math.floor(low), math.ceil(high)
    low, high = max(low, 0), min(high, dim - 1)
    if low == high:
        high += 0.001
    # HF compares the pair index i (0 <= i < dim/2) with these dim-index bounds, as here
    ramp = np.clip((np.arange(dim // 2, dtype=np.float64) - low) / (high - low), 0.0, 1.0)
    inv = plain / factor * ramp + plain * (1.0 - ramp)
    return inv, af


def _layer_types(r: _Reader, L: int, windowed) -> tuple:
    """Indices of the windowed layers: from the config's `layer_types` ("sliding_attention" /
    "full_attention" per layer) when it has one, else `windowed(i)` (the family's HF default)."""
    lt = r.hf.get("layer_types")
    if lt is None:
        return tuple(i for i in range(L) if windowed(i))
    ok = ("sliding_attention", "full_attention", "chunked_attention")
    if not isinstance(lt, list) or len(lt) != L or any(t not in ok for t in lt):
        raise ValueError(f"config field `layer_types` must list 'sliding_attention'/'full_attention' for each of "
                         f"{L} layers, got {lt!r}")
    return tuple(i for i, t in enumerate(lt) if t != "full_attention")


def _linear_layer_types(r: _Reader, L: int) -> tuple:
    """The linear layers of a hybrid's `layer_types` ("linear_attention" / "full_attention" per layer), at
    least one layer full attention; else a ValueError naming the field."""
    lt = r.hf.get("layer_types")
    if not isinstance(lt, list) or len(lt) != L or any(t not in ("linear_attention", "full_attention") for t in lt):
        raise ValueError(f"config field `layer_types` must list 'linear_attention'/'full_attention' for each of "
                         f"{L} layers, got {lt!r}")
    lin = tuple(i for i, t in enumerate(lt) if t == "linear_attention")
    if len(lin) == L:
        raise ValueError(f"config field `layer_types` makes all {L} layers linear attention: a hybrid has at least "
                         f"one full-attention layer")
    return lin


def _linear_fields(r: _Reader, L: int) -> dict:
    """A hybrid's linear-attention layers and their sizes: `layer_types` ("linear_attention" /
    "full_attention" per layer) when the config lists them, else every layer but each
    full_attention_interval-th (HF's default for Qwen3-Next and Qwen3.5)."""
    if r.hf.get("layer_types") is None:
        every = r.int("full_attention_interval")
        lin = tuple(i for i in range(L) if (i + 1) % every)
        if len(lin) == L:
            raise ValueError(f"config field `full_attention_interval` makes all {L} layers linear attention: a hybrid "
                             f"has at least one full-attention layer")
    else:
        lin = _linear_layer_types(r, L)
    Hk, Hv = r.int("linear_num_key_heads"), r.int("linear_num_value_heads")
    if Hv % Hk:
        raise ValueError(f"config field `linear_num_value_heads`={Hv} is not a multiple of "
                         f"`linear_num_key_heads`={Hk}")
    return dict(linear_layers=lin, linear_k_heads=Hk, linear_v_heads=Hv, linear_k_dim=r.int("linear_key_head_dim"),
                linear_v_dim=r.int("linear_value_head_dim"), linear_conv=r.int("linear_conv_kernel_dim"))


_NEMOTRON_BLOCKS = {"M": "mamba", "*": "attention", "-": "mlp", "E": "moe"}
_NEMOTRON_TYPES = {"linear_attention": "mamba", "mamba": "mamba", "full_attention": "attention",
                   "attention": "attention", "mlp": "mlp", "moe": "moe"}


def _nemotron_blocks(r: _Reader) -> list:
    """Nemotron-H's block kinds ("mamba", "attention", "mlp", "moe"), one per layer: from
    `hybrid_override_pattern` (the released config.json files: M, *, -, E) or transformers 5's
    `layers_block_type` / `layer_types` lists."""
    pat = r.hf.get("hybrid_override_pattern")
    if pat is not None:
        if not isinstance(pat, str) or not pat or any(c not in _NEMOTRON_BLOCKS for c in pat):
            raise ValueError(f"config field `hybrid_override_pattern` must be a string of M / * / - / E, got {pat!r}")
        return [_NEMOTRON_BLOCKS[c] for c in pat]
    key = "layers_block_type" if "layers_block_type" in r.hf else "layer_types"
    lt = r.hf.get(key)
    if not isinstance(lt, list) or not lt or any(t not in _NEMOTRON_TYPES for t in lt):
        raise ValueError(f"config field `{key}` (or `hybrid_override_pattern`) must list each layer's block, one of "
                         f"{', '.join(sorted(_NEMOTRON_TYPES))}, got {lt!r}")
    return [_NEMOTRON_TYPES[t] for t in lt]


def _mamba_fields(r: _Reader, L: int, D: int) -> dict:
    """A Mamba-2 hybrid's layers and sizes (MAMBA_FAMILIES): which layers mix with Mamba-2 and which
    attend, which hold an MLP or MoE, the SSM's heads / head dim / groups / d_state / conv width, and
    the MLP / MoE. HF NemotronHMamba2Mixer: d_inner = mamba_num_heads x mamba_head_dim;
    GraniteMoeHybridMambaLayer: d_inner = mamba_expand x hidden_size, mamba_n_heads of mamba_d_head."""
    out: dict[str, Any] = dict(linear_kind="mamba2", nope=True)
    if r.mt == "nemotron_h":
        blocks = _nemotron_blocks(r)
        lin = tuple(i for i, b in enumerate(blocks) if b == "mamba")
        mixers = tuple(i for i, b in enumerate(blocks) if b in ("mamba", "attention"))
        ffn = tuple(i for i, b in enumerate(blocks) if b in ("mlp", "moe"))
        moe = tuple(i for i, b in enumerate(blocks) if b == "moe")
        H, P = r.int("mamba_num_heads"), r.int("mamba_head_dim")
        G, N, K = r.int("n_groups"), r.int("ssm_state_size"), r.int("conv_kernel")
        # (HF's NemotronHMamba2Mixer biases in_proj / out_proj by `use_bias`, transformers 5.25; NVIDIA's remote
        # code names it mamba_proj_bias too: either is refused)
        for k in ("mlp_bias", "mamba_proj_bias", "use_bias"):
            if r.bool(k):
                raise ValueError(f"config field `{k}` = true: biased MLPs and Mamba projections are not modelled "
                                 f"(the released Nemotron-H models have none)")
        out.update(mixer_layers=mixers, ffn_layers=ffn, mlp_gated=False, n_layer_norms=1,
                   linear_conv_bias=r.bool("use_conv_bias"))
        if moe:
            E, k = r.int("n_routed_experts"), r.int("num_experts_per_tok")
            n_shared = r.int("n_shared_experts", minimum=0)
            Fs = r.int("moe_shared_expert_intermediate_size", minimum=0) if n_shared else 0
            lat = r.int("moe_latent_size", allow_none=True, required=False)
            if lat is not None and lat >= D:
                raise ValueError(f"config field `moe_latent_size` = {lat} must be smaller than hidden_size = {D}")
            out.update(n_routed_experts=E, n_experts_per_tok=k, n_shared_experts=n_shared, moe_latent_size=lat or 0,
                       moe_intermediate_size=r.int("moe_intermediate_size"), shared_expert_intermediate_size=Fs,
                       first_k_dense_replace=moe[0], router_scoring="sigmoid", router_bias=True,
                       n_group=r.int("n_group"), topk_group=r.int("topk_group"), norm_topk_prob=r.bool("norm_topk_prob"),
                       routed_scaling_factor=r.float("routed_scaling_factor"), topk_method="noaux_tc", moe_layers=moe)
        dense_ffn = len(ffn) - len(moe)
        out["intermediate_size"] = r.int("intermediate_size") if dense_ffn else 0
    else:
        lt = r.hf.get("layer_types")
        if lt is None:
            lin = tuple(range(L))
        else:
            # (transformers 5 writes the released files' "mamba" / "attention" as linear / full attention)
            ok = ("mamba", "attention", "linear_attention", "full_attention")
            if not isinstance(lt, list) or len(lt) != L or any(t not in ok for t in lt):
                raise ValueError(f"config field `layer_types` must list 'mamba'/'attention' for each of {L} layers, "
                                 f"got {lt!r}")
            lin = tuple(i for i, t in enumerate(lt) if t in ("mamba", "linear_attention"))
        H, P, G = r.int("mamba_n_heads"), r.int("mamba_d_head"), r.int("mamba_n_groups")
        N, K = r.int("mamba_d_state"), r.int("mamba_d_conv")
        expand = r.int("mamba_expand")
        if expand * D != H * P:
            raise ValueError(f"config fields `mamba_expand` x `hidden_size` = {expand * D} must equal `mamba_n_heads` "
                             f"x `mamba_d_head` = {H * P} (HF's Mamba layer splits its d_inner into the heads)")
        if r.bool("mamba_proj_bias"):
            raise ValueError("config field `mamba_proj_bias` = true: a biased Mamba in_proj / out_proj is not modelled")
        pe = r.raw("position_embedding_type", required=False)
        if pe not in (None, "nope", "rope"):
            raise ValueError(f"config field `position_embedding_type` must be 'rope', 'nope' or null, got {pe!r}")
        mult = {k: r.float(k) for k in ("embedding_multiplier", "residual_multiplier", "attention_multiplier",
                                        "logits_scaling")}
        out.update(nope=pe != "rope", linear_conv_bias=r.bool("mamba_conv_bias"), embedding_multiplier=mult["embedding_multiplier"],
                   residual_multiplier=mult["residual_multiplier"], attention_scale=mult["attention_multiplier"],
                   logit_scale=1.0 / mult["logits_scaling"])
        E = r.int("num_local_experts", minimum=0)
        Fs = r.int("shared_intermediate_size")
        if E:
            k = r.int("num_experts_per_tok")
            # GraniteMoeHybridMoE: the softmax over the top-k router logits (= a softmax top-k
            # renormalized), the shared MLP (shared_intermediate_size) beside it on every layer
            out.update(n_routed_experts=E, n_experts_per_tok=k, n_shared_experts=1,
                       moe_intermediate_size=r.int("intermediate_size"), shared_expert_intermediate_size=Fs,
                       first_k_dense_replace=0, router_scoring="softmax", router_bias=False, n_group=1, topk_group=1,
                       norm_topk_prob=True, routed_scaling_factor=1.0, topk_method="", moe_layers=tuple(range(L)),
                       intermediate_size=0)
        else:   # Granite 4.0-H-Micro: the shared MLP alone, a dense SwiGLU MLP
            out["intermediate_size"] = Fs
    if len(lin) == L:
        raise ValueError(f"the config makes all {L} layers Mamba-2: a hybrid has at least one attention layer")
    if H % G:
        raise ValueError(f"the Mamba heads ({H}) are not a multiple of its groups ({G})")
    out.update(linear_layers=lin, linear_k_heads=G, linear_v_heads=H, linear_k_dim=N, linear_v_dim=P, linear_conv=K)
    return out


def _falcon_h1_fields(r: _Reader, L: int, D: int) -> dict:
    """Falcon-H1's Mamba-2 mixer, in every layer beside its attention (HF FalconH1Mixer, transformers 5.25): the
    inner width mamba_d_ssm (null: mamba_expand x hidden_size) in mamba_n_heads heads of mamba_d_head ("auto":
    the width / heads), mamba_n_groups groups sharing B / C of mamba_d_state, a mamba_d_conv-wide convolution
    (with a bias where mamba_conv_bias); the gated RMSNorm's weight only where mamba_rms_norm. Biased in_proj
    (mamba_proj_bias), out_proj (projectors_bias) or MLP (mlp_bias) are refused: not modelled."""
    H, G = r.int("mamba_n_heads"), r.int("mamba_n_groups")
    inner = r.int("mamba_expand") * D if r.raw("mamba_d_ssm", required=False) is None else r.int("mamba_d_ssm")
    if r.raw("mamba_d_head") == "auto":
        if inner % H:
            raise ValueError(f"config field `mamba_n_heads` = {H} does not divide the Mamba's inner width {inner} "
                             f"(`mamba_d_ssm`, else `mamba_expand` x `hidden_size`)")
        P = inner // H
    else:
        P = r.int("mamba_d_head")
    if H * P != inner:
        raise ValueError(f"config fields `mamba_n_heads` x `mamba_d_head` = {H} x {P} must equal the Mamba's inner "
                         f"width {inner} (`mamba_d_ssm`, else `mamba_expand` x `hidden_size`)")
    if H % G:
        raise ValueError(f"the Mamba heads ({H}) are not a multiple of its groups (`mamba_n_groups` = {G})")
    for k in ("mamba_proj_bias", "projectors_bias", "mlp_bias"):
        if r.bool(k):
            raise ValueError(f"config field `{k}` = true: a biased Mamba in_proj / out_proj or MLP is not modelled "
                             f"(HF's FalconH1Config defaults it to false)")
    return dict(linear_kind="mamba2", linear_layers=tuple(range(L)), parallel_mixers=True, linear_k_heads=G,
                linear_v_heads=H, linear_k_dim=r.int("mamba_d_state"), linear_v_dim=P, linear_conv=r.int("mamba_d_conv"),
                linear_conv_bias=r.bool("mamba_conv_bias"), linear_norm=r.bool("mamba_rms_norm"))


def _lfm2_aliases(hf: dict, mt: str) -> dict:
    """An LFM2 config as HF's Lfm2Config / Lfm2MoeConfig read it (their __post_init__): the released configs'
    `tie_embedding` overrides tie_word_embeddings, and (LFM2 only) `block_ff_dim` overrides intermediate_size."""
    hf = dict(hf)
    if "tie_embedding" in hf:
        hf["tie_word_embeddings"] = hf["tie_embedding"]
    if mt == "lfm2" and "block_ff_dim" in hf:
        hf["intermediate_size"] = hf["block_ff_dim"]
    return hf


def _shortconv_fields(r: _Reader, L: int) -> dict:
    """LFM2's layers (HF Lfm2Config / Lfm2MoeConfig, transformers 5.25): `layer_types` ("conv" / "full_attention"
    per layer; LFM2 without it: "full_attention" on the layers of `full_attn_idxs`, every layer where that is absent
    too, as Lfm2Config.__post_init__ builds it; LFM2-MoE requires it), at least one attention layer; the gated
    short convolution's conv_L_cache taps (at least 2: llama.cpp's lfm2 graph asserts shortconv.l_cache > 1, its
    state is the last conv_L_cache - 1 inputs) and conv_bias (in_proj, conv and out_proj biased)."""
    lt = r.hf.get("layer_types")
    if lt is None and r.mt == "lfm2":
        idx = r.hf.get("full_attn_idxs")
        if idx is None:
            idx = list(range(L))
        if not isinstance(idx, list) or any(isinstance(i, bool) or not isinstance(i, int) or not 0 <= i < L
                                            for i in idx):
            raise ValueError(f"config field `full_attn_idxs` must list layer indices in [0, {L}), got {idx!r}")
        lt = ["full_attention" if i in idx else "conv" for i in range(L)]
    if not isinstance(lt, list) or len(lt) != L or any(t not in ("conv", "full_attention") for t in lt):
        raise ValueError(f"config field `layer_types` must list 'conv' or 'full_attention' for each of {L} layers, "
                         f"got {lt!r}")
    conv = tuple(i for i, t in enumerate(lt) if t == "conv")
    if len(conv) == L:
        raise ValueError(f"config field `layer_types` makes all {L} layers short convolutions: glmbench prices a "
                         f"hybrid with at least one full_attention layer")
    return dict(linear_kind="shortconv", linear_layers=conv, linear_conv=r.int("conv_L_cache", minimum=2),
                linear_conv_bias=r.bool("conv_bias"))


def _lfm2_ff_dim(r: _Reader, F: int) -> int:
    """The width of LFM2's SwiGLU MLP (HF Lfm2MLP, conversion/lfm2.py _add_feed_forward_length): with
    block_auto_adjust_ff_dim, int(2 F / 3), times block_ffn_dim_multiplier (when not null) and rounded up to a
    multiple of block_multiple_of; else intermediate_size as it is."""
    if not r.bool("block_auto_adjust_ff_dim"):
        return F
    F = int(2 * F / 3)
    if r.raw("block_ffn_dim_multiplier") is not None:
        mult, m = r.float("block_ffn_dim_multiplier"), r.int("block_multiple_of")
        F = int(mult * F)
        F = m * ((F + m - 1) // m)
    return F


def _indexer_types(r: _Reader, L: int) -> list:
    """Each layer's DSA indexer ("full" or "shared"): the config's `indexer_types`, else as HF's GlmMoeDsaConfig
    derives it (index_topk_pattern "FSS..."; else full where max(i - index_skip_topk_offset + 1, 0) is a multiple
    of index_topk_freq, defaults 1 and 2: every layer full); DeepSeek-V3.2: every layer full."""
    types = r.hf.get("indexer_types")
    if types is None and r.mt == "glm_moe_dsa":
        pat = r.hf.get("index_topk_pattern")
        if isinstance(pat, str):
            types = [{"F": "full", "S": "shared"}.get(c, c) for c in pat]
        elif pat is not None:
            types = pat
        else:
            freq = max(r.int("index_topk_freq", required=False) or 1, 1)
            off = r.int("index_skip_topk_offset", minimum=0, required=False)
            off = 2 if off is None else off
            types = ["full" if max(i - off + 1, 0) % freq == 0 else "shared" for i in range(L)]
    if types is None:
        return ["full"] * L
    if not isinstance(types, list) or len(types) != L or any(t not in ("full", "shared") for t in types):
        raise ValueError(f"config field `indexer_types` must list 'full'/'shared' for each of {L} layers, got {types!r}")
    if types[0] != "full":
        raise ValueError("config field `indexer_types` starts with a 'shared' layer: a shared layer reuses the top-k "
                         "of a previous full one")
    return types


def _dsa_fields(r: _Reader, L: int, q_lora: int | None, Dr: int) -> dict:
    """DeepSeek Sparse Attention's fields (DSA_FAMILIES): the indexer's heads, head dim and top-k (required: a
    missing one is named), which layers run their own indexer (_indexer_types). The indexer's queries come from
    the q latent (q_lora_rank required) and its rope covers the first qk_rope_head_dim of its head
    (llama.cpp's glm-dsa asserts n_rot <= the indexer head)."""
    H, Dk, K = r.int("index_n_heads"), r.int("index_head_dim"), r.int("index_topk")
    if not q_lora:
        raise ValueError("config field `q_lora_rank` is null: DeepSeek Sparse Attention's indexer projects its "
                         "queries from the q latent (wq_b)")
    if Dk < Dr:
        raise ValueError(f"config field `index_head_dim` = {Dk} is smaller than `qk_rope_head_dim` = {Dr} "
                         f"(the indexer ropes the first qk_rope_head_dim of its head)")
    types = _indexer_types(r, L)
    return dict(index_n_heads=H, index_head_dim=Dk, index_topk=K,
                indexer_layers=tuple(i for i, t in enumerate(types) if t == "full"))


_DEFAULT_THETA = {"gemma3_text": 1e6, "gemma4_text": 1e6, "smollm3": 2e6, "olmo3": 5e5, "gemma3n_text": 1e6,
                  "exaone": 5e5, "ernie4_5": 5e5, "apertus": 12e6}


def _rope(r: _Reader) -> tuple[float, dict | None]:
    """rope_theta and the scaling dict, from either the v4 layout (rope_theta, rope_scaling) or
    transformers v5's rope_parameters; HF's default theta is 10000."""
    hf = r.hf
    rp = hf.get("rope_parameters")
    if rp is not None and not isinstance(rp, dict):
        raise ValueError(f"config field `rope_parameters` must be an object, got {rp!r}")
    if rp and isinstance(rp.get("full_attention"), dict):   # Gemma 3: per layer type; the global layers'
        rp = rp["full_attention"]
    # HF's default theta: 10000 (the config classes' default_theta: Gemma 3's global layers 1e6, SmolLM3 2e6,
    # OLMo 3 5e5)
    # (HF convert_rope_params_to_dict: the rope dict's own rope_theta first (rope_scaling's where the config has one,
    # else rope_parameters'), then the top-level one)
    rs = hf.get("rope_scaling")
    own = rs if isinstance(rs, dict) and rs else rp
    theta = (own or {}).get("rope_theta", hf.get("rope_theta", _DEFAULT_THETA.get(r.mt, 10000.0)))
    if isinstance(theta, bool) or not isinstance(theta, (int, float)) or not theta > 0 or not math.isfinite(theta):
        raise ValueError(f"config field `rope_theta` must be a finite positive number, got {theta!r}")
    scaling = hf.get("rope_scaling")
    if scaling is None and rp and (rp.get("rope_type") or rp.get("type") or "default") != "default":
        scaling = dict(rp)
    if scaling is not None and not isinstance(scaling, dict):
        raise ValueError(f"config field `rope_scaling` must be an object or null, got {scaling!r}")
    return float(theta), scaling


def _gemma_fields(r: _Reader) -> dict:
    """Gemma 2 and 3: query_pre_attn_scalar and final_logit_softcapping (null: off; Gemma 2's
    default 30; a GGUF's windowed-layer base as rope_parameters.sliding_attention's rope_theta, rope_local_theta,
    as for Gemma 3). Gemma 3: the local rope base (rope_local_base_freq, or transformers 5's
    rope_parameters.sliding_attention.rope_theta; default 10000); its attn_logit_softcapping is not
    read, as HF's Gemma 3 attention does not apply it (modeling_gemma3.Gemma3Attention, transformers
    5.24). Gemma 2: one rope base, attn_logit_softcapping (default 50) applied to every layer's
    scores (modeling_gemma2.Gemma2Attention)."""

    def cap(key):
        v = r.raw(key, required=False)
        if v is not None and (isinstance(v, bool) or not isinstance(v, (int, float)) or not v > 0
                              or not math.isfinite(v)):
            raise ValueError(f"config field `{key}` must be null or a positive number, got {v!r}")
        return None if v is None else float(v)
    out = dict(query_pre_attn_scalar=r.float("query_pre_attn_scalar"),
               final_logit_softcapping=cap("final_logit_softcapping"))
    rp = r.hf.get("rope_parameters") if isinstance(r.hf.get("rope_parameters"), dict) else {}
    local = rp.get("sliding_attention") if isinstance(rp.get("sliding_attention"), dict) else {}
    if r.mt == "gemma2":
        out["attn_logit_softcapping"] = cap("attn_logit_softcapping")
        if "rope_theta" in local:
            # (not HF's: Gemma2Config has one base. A GGUF's rope.freq_base_swa, which llama.cpp's gemma2 turns the
            # windowed layers by (src/models/gemma2.cpp, llama_model::get_rope_freq_base), read as
            # rope_parameters.sliding_attention as OLMo 3's; models/gguf_file.py)
            lt = local["rope_theta"]
            if isinstance(lt, bool) or not isinstance(lt, (int, float)) or not lt > 0 or not math.isfinite(lt):
                raise ValueError(f"config field `rope_parameters.sliding_attention.rope_theta` must be a positive "
                                 f"number, got {lt!r}")
            if (local.get("rope_type") or local.get("type") or "default") != "default":
                raise ValueError(f"config field `rope_parameters.sliding_attention.rope_type` = "
                                 f"{local.get('rope_type') or local.get('type')!r}: Gemma 2's sliding layers are "
                                 f"modelled with plain rope")
            out["rope_local_theta"] = float(lt)
        return out
    # (Gemma3TextConfig: rope_parameters.sliding_attention's own rope_theta first, then rope_local_base_freq)
    lt = local.get("rope_theta", r.hf.get("rope_local_base_freq", 10000.0))
    if isinstance(lt, bool) or not isinstance(lt, (int, float)) or not lt > 0 or not math.isfinite(lt):
        raise ValueError(f"config field `rope_local_base_freq` must be a positive number, got {lt!r}")
    if (local.get("rope_type") or local.get("type") or "default") != "default":
        # (HF turns the sliding layers by their own rope_parameters entry, scaling too; glmbench's local layers
        # turn by plain rope: ModelConfig.layer_rope)
        raise ValueError(f"config field `rope_parameters.sliding_attention.rope_type` = "
                         f"{local.get('rope_type') or local.get('type')!r}: Gemma 3's sliding layers are modelled "
                         f"with plain rope")
    out["rope_local_theta"] = float(lt)
    return out


def _gemma4_fields(r: _Reader, L: int, win_layers: tuple, n_kv: int) -> dict:
    """Gemma 4's fields (Gemma4TextConfig, transformers 5.25): the global layers' head dim and KV heads from
    global_head_dim / num_global_key_value_heads (a released config.json) or from the per_layer_config HF
    writes when it saves one (the KV-head override applies only where attention_k_eq_v, as
    Gemma4TextConfig.__post_init__ sets it); the kv-shared layers, the per-layer embeddings, the double-wide
    MLP, the final soft-cap and the local rope base. The softmax scale is 1 (q and k are RMSNormed)."""
    hf = r.hf
    full = [i for i in range(L) if i not in frozenset(win_layers)]
    k_eq_v = r.bool("attention_k_eq_v")
    hd_g = r.int("global_head_dim", required=False) if "global_head_dim" in hf else None
    kv_g = r.int("num_global_key_value_heads", allow_none=True) if "num_global_key_value_heads" in hf else None
    plc = hf.get("per_layer_config")
    if plc is not None:
        if not isinstance(plc, dict):
            raise ValueError(f"config field `per_layer_config` must be an object, got {plc!r}")
        seen = {}
        for key, lc in plc.items():
            try:
                i = int(key)
            except (TypeError, ValueError):
                raise ValueError(f"config field `per_layer_config` has a key {key!r} that is not a layer index")
            if not isinstance(lc, dict) or not 0 <= i < L:
                raise ValueError(f"config field `per_layer_config`[{key!r}] must be an object for a layer in "
                                 f"[0, {L}), got {lc!r}")
            if i in win_layers and lc:
                raise ValueError(f"config field `per_layer_config`[{key!r}] overrides a sliding-window layer; "
                                 f"only Gemma 4's global layers differ")
            for f in ("head_dim", "num_key_value_heads"):
                if f in lc:
                    v = lc[f]
                    if isinstance(v, bool) or not isinstance(v, int) or v < 1:
                        raise ValueError(f"config field `per_layer_config`[{key!r}].{f} must be a positive "
                                         f"integer, got {v!r}")
                    if seen.setdefault(f, v) != v:
                        raise ValueError(f"config field `per_layer_config` gives the global layers different "
                                         f"{f}s ({seen[f]} and {v}); glmbench models one set for all of them")
        if hd_g is None:
            # (HF writes per_layer_config's fields where they differ from the layer-wide ones: no head_dim there is
            # the global layers' head_dim = head_dim, not Gemma4TextConfig's global_head_dim default)
            hd_g = seen.get("head_dim") or r.int("head_dim")
        if kv_g is None:
            kv_g = seen.get("num_key_value_heads")
    elif not k_eq_v:
        kv_g = None                 # HF: the override applies only where attention_k_eq_v
    if hd_g is None:
        hd_g = r.int("global_head_dim")
    kv_g = kv_g or n_kv
    if r.int("num_attention_heads") % kv_g:
        raise ValueError(f"config field `num_attention_heads` is not a multiple of the global layers' "
                         f"{kv_g} KV heads")
    shared = r.int("num_kv_shared_layers", minimum=0)
    if shared >= L:
        raise ValueError(f"config field `num_kv_shared_layers`={shared} leaves no layer of the {L} to keep a cache")
    first = L - shared
    if shared and (not any(i in win_layers for i in range(first)) and any(i in win_layers for i in range(first, L))
                   or not any(i not in win_layers for i in range(first)) and any(i not in win_layers
                                                                                   for i in range(first, L))):
        raise ValueError(f"config field `num_kv_shared_layers`={shared}: a shared layer's kind (sliding or full "
                         f"attention) has no layer among the first {first} to share the cache of")
    P = r.int("hidden_size_per_layer_input", minimum=0, required=False) or 0
    out = dict(global_head_dim=hd_g if full else 0, global_kv_heads=kv_g if full else 0, k_eq_v=k_eq_v,
               kv_shared_layers=shared, ple_size=P, ple_vocab=r.int("vocab_size_per_layer_input") if P else 0,
               double_wide_mlp=r.bool("use_double_wide_mlp") and shared > 0, attention_scale=1.0)
    g = _gemma_fields(_Reader({**hf, "query_pre_attn_scalar": 1.0}, "gemma4_text"))
    out.update(final_logit_softcapping=g["final_logit_softcapping"], rope_local_theta=g["rope_local_theta"])
    return out


def _deci_replaced(part: dict, i: int, sizes: list, linear: list) -> bool:
    """Whether block i's attention or ffn `part` is no_op or replace_with_linear: then its size (KV heads, MLP
    width) is 0, appended to `sizes`, and a linear replacement's layer to `linear`."""
    if not (part.get("no_op") or part.get("replace_with_linear")):
        return False
    sizes.append(0)
    if not part.get("no_op"):
        linear.append(i)
    return True


def _deci_fields(r: _Reader, L: int, H: int, D: int) -> dict:
    """DeciLM's (nemotron-nas) per-layer shapes from block_configs, one entry per layer as DeciLMDecoderLayer
    builds it: attention no_op (nothing, no input_layernorm), replace_with_linear (a hidden x hidden linear,
    self_attn.linear_attn), else GQA with num_attention_heads / n_heads_in_group KV heads; the MLP alike (no_op,
    mlp.linear_mlp, else SwiGLU gguf_file.deci_ffn_width(ffn_mult) wide). The KV heads and MLP widths per layer
    (layer_kv_list, layer_intermediates: 0 where the layer has none); `_n_kv` the first attention layer's."""
    bc = r.hf.get("block_configs")
    if not isinstance(bc, list) or len(bc) != L:
        raise ValueError(f"config field `block_configs` must list one block config for each of the {L} layers, got "
                         f"{bc if not isinstance(bc, list) else f'{len(bc)} entries'!r}")
    kv, widths, mix, ffn, lin_a, lin_m = [], [], [], [], [], []
    for i, b in enumerate(bc):
        a = b.get("attention") if isinstance(b, dict) else None
        f = b.get("ffn") if isinstance(b, dict) else None
        if not isinstance(a, dict) or not isinstance(f, dict):
            raise ValueError(f"config field `block_configs[{i}]` must hold an `attention` and an `ffn` object, "
                             f"got {b!r}")
        if not _deci_replaced(a, i, kv, lin_a):
            g = a.get("n_heads_in_group")
            if isinstance(g, bool) or not isinstance(g, int) or g < 1 or H % g:
                raise ValueError(f"config field `block_configs[{i}].attention.n_heads_in_group` must be a positive "
                                 f"divisor of `num_attention_heads`={H} (or the block no_op / replace_with_linear), "
                                 f"got {g!r}")
            kv.append(H // g)
            mix.append(i)
        if not _deci_replaced(f, i, widths, lin_m):
            mult = f.get("ffn_mult")
            if isinstance(mult, bool) or not isinstance(mult, (int, float)) or not 0 < mult < 1e4:
                raise ValueError(f"config field `block_configs[{i}].ffn.ffn_mult` must be a positive number (or the "
                                 f"block no_op / replace_with_linear), got {mult!r}")
            widths.append(gguf_file.deci_ffn_width(mult, D))
            ffn.append(i)
    return dict(_n_kv=kv[mix[0]] if mix else H, layer_kv_list=tuple(kv), layer_intermediates=tuple(widths),
                intermediate_size=widths[ffn[0]] if ffn else 0, mixer_layers=tuple(mix), ffn_layers=tuple(ffn),
                linear_attn_layers=tuple(lin_a), linear_mlp_layers=tuple(lin_m))


def _gemma3n_fields(r: _Reader, L: int, win_layers: tuple) -> dict:
    """Gemma 3n's fields (Gemma3nTextConfig, transformers 5.25): the kv-shared last layers (each reads the last
    earlier layer of its kind: HF's kv_sharing_modes, which refuses a shared kind no earlier layer has), the
    per-layer embeddings, AltUp's streams and LAuReL's rank, each layer's MLP width (intermediate_size: one or
    one per layer), the activation-sparse layers (activation_sparsity_pattern: one target per layer, 0 off;
    default 0.95 on the first 10 where there are more than 10), the final soft-cap and the local rope base
    (rope_local_base_freq or rope_parameters.sliding_attention.rope_theta). The softmax scale is 1 (q and k
    are RMSNormed), whatever query_pre_attn_scalar a released config.json states."""
    hf = r.hf
    shared = r.int("num_kv_shared_layers", minimum=0)
    if shared >= L:
        raise ValueError(f"config field `num_kv_shared_layers`={shared} leaves no layer of the {L} to keep a cache")
    first = L - shared
    win = frozenset(win_layers)
    if shared and ({i in win for i in range(first, L)} - {i in win for i in range(first)}):
        raise ValueError(f"config field `num_kv_shared_layers`={shared}: a shared layer's kind (sliding or full "
                         f"attention) has no layer among the first {first} to share the cache of")
    F = hf.get("intermediate_size", r.defaults.get("intermediate_size"))
    if isinstance(F, list):
        if len(F) != L or any(isinstance(f, bool) or not isinstance(f, int) or f < 1 for f in F):
            raise ValueError(f"config field `intermediate_size` must be a positive integer or list one for each of "
                             f"the {L} layers, got {F!r}")
        widths = tuple(F)
    else:
        widths = (r.int("intermediate_size"),) * L
    asp = hf.get("activation_sparsity_pattern")
    if asp is None:
        asp = [0.95] * (10 if L > 10 else 0) + [0.0] * (L - (10 if L > 10 else 0))
    if not isinstance(asp, list) or len(asp) != L or any(isinstance(v, bool) or not isinstance(v, (int, float))
                                                          or not 0 <= v < 1 for v in asp):
        raise ValueError(f"config field `activation_sparsity_pattern` must list a target in [0, 1) for each of the "
                         f"{L} layers, got {asp!r}")
    n = r.int("altup_num_inputs")
    act = r.int("altup_active_idx", minimum=0)
    if act >= n:
        raise ValueError(f"config field `altup_active_idx`={act} must be below `altup_num_inputs`={n}")
    P = r.int("hidden_size_per_layer_input")
    out = dict(kv_shared_layers=shared, ple_size=P, ple_vocab=r.int("vocab_size_per_layer_input"),
               altup_inputs=n, laurel_rank=r.int("laurel_rank"),
               layer_intermediates=widths if len(set(widths)) > 1 else (), sparse_layers=tuple(
                   i for i, v in enumerate(asp) if v > 0), attention_scale=1.0, intermediate_size=widths[0])
    g = _gemma_fields(_Reader({**hf, "query_pre_attn_scalar": 1.0}, "gemma3n_text"))
    out.update(final_logit_softcapping=g["final_logit_softcapping"], rope_local_theta=g["rope_local_theta"])
    return out


def _unwrap(hf: dict, mt: str) -> dict:
    """A multimodal wrapper's (_WRAPPERS) text model config: its text_config (or, for _WRAPPER_FLAT's older files,
    the top-level fields) as the text family's, tie_word_embeddings as transformers 5.25 ties the wrapper
    (_WRAPPER_TIE_TOP, _WRAPPER_TIE), multimodal rope (type "mrope") as plain rope."""
    tc = hf.get("text_config")
    if tc is None and mt in _WRAPPER_FLAT:
        # (the vision tower's fields stay behind in vision_config; the text ones are the top level's)
        tc = {k: v for k, v in hf.items() if k not in ("vision_config", "model_type", "tie_word_embeddings")}
    if not isinstance(tc, dict):
        raise ValueError(f"config field `text_config` of a {mt!r} config must be an object, got {tc!r}")
    has_top, top_tie = "tie_word_embeddings" in hf, hf.get("tie_word_embeddings")
    text_mt = _WRAPPERS[mt] or tc.get("model_type") or _WRAPPER_TEXT_DEFAULT[mt]
    if text_mt in _WRAPPERS or text_mt in _WRAPPERS_REFUSED:
        raise ValueError(f"config field `text_config.model_type` of a {mt!r} config is {text_mt!r}, a multimodal "
                         f"wrapper itself, not a text model")
    out = {**tc, "model_type": text_mt}
    for k, v in _WRAPPER_TEXT_FIELDS.get(mt, {}).items():
        if v == "hidden / heads":
            D, H = out.get("hidden_size"), out.get("num_attention_heads")
            if not (isinstance(D, int) and isinstance(H, int) and H > 0 and D % H == 0):
                continue      # (from_hf names the bad field)
            v = D // H
        if k.startswith("="):
            out[k[1:]] = v
        else:
            out.setdefault(k, v)
    if has_top and not isinstance(top_tie, bool) and (mt in _WRAPPER_TIE_TOP or mt in _WRAPPER_TIE):
        raise ValueError(f"config field `tie_word_embeddings` (top level of the {mt!r} config) must be "
                         f"true or false, got {top_tie!r}")
    if mt in _WRAPPER_TIE_TOP and has_top:   # (the wrapper's field wins: _WRAPPER_TIE_TOP)
        out["tie_word_embeddings"] = top_tie
    elif mt in _WRAPPER_TIE:
        rule, default = _WRAPPER_TIE[mt]
        text_tie = tc.get("tie_word_embeddings")
        if text_tie is not None and not isinstance(text_tie, bool):
            raise ValueError(f"config field `text_config.tie_word_embeddings` of a {mt!r} config must be true or "
                             f"false, got {text_tie!r}")
        if rule == "top":
            tie = top_tie if has_top else default if text_tie is None else text_tie
        else:    # "either": the top's or the text config's (its class's default: its family's, where it states none)
            fam = _DEFAULTS.get(_ALIASES.get(text_mt, text_mt), {}).get("tie_word_embeddings", False)
            tie = (has_top and top_tie) or (fam if text_tie is None else text_tie)
        out["tie_word_embeddings"] = bool(tie)
    rs = out.get("rope_scaling")
    if isinstance(rs, dict) and (rs.get("rope_type") or rs.get("type")) == "mrope":
        # (transformers 5.25 reads a pre-v5 "mrope" as rope_type "default" with its mrope_section: on text tokens
        # every section turns by the same position, plain rope)
        out["rope_scaling"] = {k: v for k, v in rs.items() if k not in ("type", "rope_type")} | {"rope_type": "default"}
    return out


def _internlm3_aliases(hf: dict) -> dict:
    """InternLM3's released config.json names its biases qkv_bias and bias (InternLM3Config.attribute_map: attention_bias,
    mlp_bias); both names of one field must agree, and the two biases must too (InternLM3Config.validate_architecture:
    HF's Llama layers take one setting for q / k / v / o and the MLP), as must hidden_size and the heads (LlamaConfig's
    check)."""
    out = dict(hf)
    for alias, key in (("qkv_bias", "attention_bias"), ("bias", "mlp_bias")):
        if alias in hf:
            if key in hf and hf[key] != hf[alias]:
                raise ValueError(f"config field `{alias}` = {hf[alias]!r} and `{key}` = {hf[key]!r} disagree (InternLM3Config "
                                 f"reads `{alias}` as `{key}`)")
            out[key] = hf[alias]
    r = _Reader(out, "internlm3")
    a, m = r.bool("attention_bias"), r.bool("mlp_bias")
    if a != m:
        raise ValueError(f"config fields `qkv_bias` / `attention_bias` = {a} and `bias` / `mlp_bias` = {m} differ: "
                         f"InternLM3Config refuses them apart (HF runs InternLM3 as Llama, one setting for both)")
    D, H = r.int("hidden_size"), r.int("num_attention_heads")
    if D % H:
        raise ValueError(f"config field `hidden_size`={D} is not a multiple of `num_attention_heads`={H} "
                         f"(InternLM3Config refuses it)")
    return out


def _moe_layer_freq_one(r: _Reader, mt: str) -> None:
    """DeepSeek-V2 / V3's moe_layer_freq (their released configs: 1): transformers 5.25's DeepseekV2 / DeepseekV3
    decoder layers read none and put the MoE on every layer from first_k_dense_replace on; another value (the
    remote code's every freq-th layer) is refused, naming it, rather than priced and run unlike HF's model."""
    freq = r.raw("moe_layer_freq", required=False)
    if freq is not None and (isinstance(freq, bool) or freq != 1):
        raise ValueError(f"config field `moe_layer_freq` = {freq!r}: HF's {mt} puts the MoE on every layer from "
                         f"first_k_dense_replace on (1)")


def from_hf(hf: dict, name: str = "config", *, gguf: bool = False) -> ModelConfig:
    """`hf` (a config.json's dict; `gguf`: gguf_file.hf_config's reading of a GGUF's metadata) -> ModelConfig."""
    mt = hf.get("model_type")
    wrapper = ""
    if mt in _WRAPPERS_REFUSED:
        raise ValueError(f"config field `model_type` = {mt!r} is not supported: {_WRAPPERS_REFUSED[mt]}")
    if mt in _WRAPPERS:   # a multimodal config: its text model
        hf, wrapper = _unwrap(hf, mt), mt
        mt = hf["model_type"]
    if mt in _ALIASES:
        hf = {**hf, "model_type": _ALIASES[mt]}
        mt = hf["model_type"]
    if mt not in FAMILIES:
        raise ValueError(f"config field `model_type` = {mt!r} is not a supported family; "
                         f"supported: {', '.join(FAMILIES)}")
    if mt in SHORTCONV_FAMILIES:
        hf = _lfm2_aliases(hf, mt)
    if mt == "apertus" and hf.get("rope_parameters") is None and hf.get("rope_scaling") is None:
        hf = {**{k: v for k, v in hf.items() if k != "rope_theta"}, "rope_parameters": dict(APERTUS_ROPE)}
    if mt == "exaone":
        # the released config.json's own names (ExaoneConfig.attribute_map): num_layers, layer_norm_epsilon,
        # activation_function
        hf = {**{k: hf[a] for k, a in (("num_hidden_layers", "num_layers"), ("rms_norm_eps", "layer_norm_epsilon"),
                                       ("hidden_act", "activation_function")) if a in hf}, **hf}
    if mt == "internlm3":
        hf = _internlm3_aliases(hf)
    r = _Reader(hf, mt)
    attention = FAMILIES[mt]
    # Nemotron-H: the layers are its pattern's blocks (transformers 5 ignores num_hidden_layers)
    L = len(_nemotron_blocks(r)) if mt == "nemotron_h" else r.int("num_hidden_layers")
    # the multi-token-prediction layers beyond num_hidden_layers (DeepSeek-V3, GLM-4.5 and their kin): neither
    # counted nor cached (the module docstring's conventions), but a count below 0 is no config's
    r.int("num_nextn_predict_layers", minimum=0, required=False, allow_none=True)
    D = r.int("hidden_size")
    V = r.int("vocab_size")
    H = r.int("num_attention_heads")
    eps = r.float("layer_norm_eps" if mt in LAYERNORM_FAMILIES else
                  "layer_norm_epsilon" if mt == "nemotron_h" else
                  "norm_eps" if mt in SHORTCONV_FAMILIES + ("nemotron",) else
                  "rms_norm_eps")
    tie = r.bool("tie_word_embeddings")
    if tie and mt in ("kimi_linear", "nemotron_h") and not gguf:
        # (KimiLinearForCausalLM / NemotronHForCausalLM, transformers 5.25: _tied_weights_keys = {}, a separate lm_head
        # whatever tie_word_embeddings says, which save_pretrained stores: priced as the checkpoint holds it)
        tie = False
    theta, scaling = _rope(r)
    # the MLP's activation only changes numerics: predictions take any (Model runs silu only)
    if mt in GEMMA1_FAMILIES:
        # GemmaConfig.__post_init__: the released configs' legacy "gelu" is the tanh approximation; GemmaMLP runs
        # hidden_act (a transformers 4.38-era `hidden_activation` key is no field of 5.25's GemmaConfig: not read)
        if r.raw("use_bidirectional_attention", required=False):
            raise ValueError("config field `use_bidirectional_attention` = true: a bidirectional Gemma is an encoder; "
                             "glmbench prices causal decoding")
        if r.raw("hidden_act") == "gelu":
            hf = r.hf = {**hf, "hidden_act": "gelu_pytorch_tanh"}
    act = r.raw("hidden_activation" if mt in GEMMA_FAMILIES + GEMMA4_FAMILIES + GEMMA3N_FAMILIES else "mlp_hidden_act" if mt == "nemotron_h" else
                "hidden_act", required=False) or "silu"
    if not isinstance(act, str):
        raise ValueError(f"config field `hidden_act` must be a string, got {act!r}")
    kw: dict[str, Any] = dict(name=name, model_type=mt, attention=attention, n_layers=L, hidden_size=D,
                              vocab_size=V, tie_word_embeddings=tie, rms_norm_eps=eps, n_heads=H,
                              rope_theta=theta, rope_scaling=scaling, hf=hf, hidden_act=act,
                              max_position_embeddings=r.int("max_position_embeddings", required=False) or 0,
                              mlp_bias=mt in MLP_BIAS_FAMILIES and r.bool("mlp_bias"), wrapper=wrapper)

    if attention == "mla":
        q_lora = r.int("q_lora_rank", allow_none=True)
        R = r.int("kv_lora_rank")
        Dn = r.int("qk_nope_head_dim")
        Dr = r.int("qk_rope_head_dim", minimum=2)
        Dv = r.int("v_head_dim")
        if Dr % 2:
            raise ValueError(f"config field `qk_rope_head_dim` must be even (rotated in pairs), got {Dr}")
        n_kv = r.int("num_key_value_heads", required=False) or H
        bias = r.bool("attention_bias")
        # HF glm4_moe_lite: rope_interleave true (default) rotates pairs (x[2i], x[2i+1])
        # (apply_rotary_pos_emb_interleave, output written de-interleaved, see
        # attention._hf_deinterleaves); false rotates pairs (x[i], x[i + Dr/2]) (rotate_half).
        # deepseek_v2 has no such field and always rotates interleaved pairs.
        interleave = r.bool("rope_interleave") if mt in ("glm4_moe_lite", "deepseek_v3") else True
        if mt in DSA_FAMILIES:      # (both HF attentions rotate the MLA rope dims interleaved)
            kw.update(_dsa_fields(r, L, q_lora, Dr))
        if mt in KDA_FAMILIES:
            lin = _linear_layer_types(r, L)
            Hl, dl = r.int("linear_num_heads"), r.int("linear_head_dim")
            kw.update(linear_kind="kda", linear_layers=lin, linear_k_heads=Hl, linear_v_heads=Hl, linear_k_dim=dl,
                      linear_v_dim=dl, linear_conv=r.int("linear_conv_kernel_dim"))
        kw.update(n_kv_heads=n_kv, head_dim=Dn + Dr, attention_bias=bias, attention_out_bias=bias, qk_norm=False,
                  rope_layout="interleaved" if interleave else "half", rope_dim=Dr, q_lora_rank=q_lora, kv_lora_rank=R,
                  qk_nope_head_dim=Dn, qk_rope_head_dim=Dr, v_head_dim=Dv, sliding_window=None)
    else:
        if mt == "nemotron-nas":    # (per-layer KV heads and MLP widths: block_configs)
            deci = _deci_fields(r, L, H, D)
            n_kv = deci.pop("_n_kv")
            kw.update(deci)
        else:
            n_kv = r.int("num_key_value_heads", required=False) or H
        if H % n_kv:
            raise ValueError(f"config field `num_attention_heads`={H} is not a multiple of "
                             f"`num_key_value_heads`={n_kv}")
        # (Nemotron-H's remote-code configs name it attention_head_dim)
        hd = r.int("attention_head_dim" if mt == "nemotron_h" and "head_dim" not in hf and "attention_head_dim" in hf
                   else "head_dim", required=False)
        if hd is None:
            if D % H:
                raise ValueError(f"config field `hidden_size`={D} is not a multiple of `num_attention_heads`={H} "
                                 f"and no `head_dim` is given")
            hd = D // H
        if mt == "olmoe" and hd * H != D:
            # OlmoeAttention's q_norm is hidden_size wide and its k_norm (hidden / heads) x KV heads: a head_dim
            # other than hidden / heads does not build
            raise ValueError(f"config field `head_dim`={hd} x `num_attention_heads`={H} must equal `hidden_size`={D} "
                             f"(OLMoE's q / k norms are hidden_size wide)")
        rp = r.hf.get("rope_parameters") if isinstance(r.hf.get("rope_parameters"), dict) else {}
        # (HF convert_rope_params_to_dict: rope_parameters' own partial_rotary_factor first, then the top-level one)
        prf = rp.get("partial_rotary_factor", r.hf.get("partial_rotary_factor",
                                                          r.defaults.get("partial_rotary_factor", 1.0)))
        if isinstance(prf, bool) or not isinstance(prf, (int, float)) or not 0 < prf <= 1:
            raise ValueError(f"config field `partial_rotary_factor` must be in (0, 1], got {prf!r}")
        if prf != 1 and mt not in PARTIAL_ROTARY_FAMILIES and not gguf and \
                (scaling or {}).get("rope_type", (scaling or {}).get("type")) != "proportional":
            # (their rotary embedding turns the whole head whatever partial_rotary_factor says: PARTIAL_ROTARY_FAMILIES;
            # proportional rope's factor is its own: the share of the whole head's pairs that turn)
            raise ValueError(f"config field `partial_rotary_factor` = {prf!r}: HF's {_HF_NAMES.get(mt, mt)} rotates "
                             f"the whole head")
        if mt == "minimax_m2" and r.hf.get("rotary_dim") is not None:
            # released MiniMax-M2 configs state the rotated dims as `rotary_dim` (HF: partial_rotary_factor
            # = rotary_dim / head_dim)
            prf = r.int("rotary_dim") / hd
            if prf > 1:
                raise ValueError(f"config field `rotary_dim`={r.hf['rotary_dim']} is larger than head_dim={hd}")
        rope_dim = int(hd * prf)
        if rope_dim % 2:
            raise ValueError(f"rotated dims head_dim*partial_rotary_factor = {rope_dim} must be even")
        if mt in ("mistral", "mixtral", "phi3", "ministral3", "exaone4"):
            bias = False             # (Exaone4Attention: no bias whatever the config says)
        elif mt == "qwen2":
            bias = True              # Qwen2Attention: q/k/v always carry a bias, o_proj none
        elif mt == "qwen2_moe":
            bias = r.bool("qkv_bias")  # Qwen2MoeAttention: q/k/v bias = qkv_bias, o_proj none
        elif mt in ("ernie4_5_moe", "ernie4_5"):
            bias = r.bool("use_bias")  # Ernie4_5_MoeAttention / Ernie4_5Attention: every projection, o_proj too
        elif mt in SHORTCONV_FAMILIES:
            bias = False             # Lfm2Attention: no bias on any projection
        elif mt in ("minimax_m2", "nemotron_h"):
            # MiniMaxM2Attention / NemotronHAttention (transformers 5.25): q/k/v/o built with bias=False whatever
            # the config's attention_bias says (NemotronHConfig has the field, HF's attention never reads it)
            bias = False
        else:
            bias = r.bool("attention_bias", required=False)
        out_bias = r.bool("attention_out_bias") if mt == "seed_oss" else \
            False if mt in ("qwen2", "glm4_moe", "glm4", "qwen2_moe", "glm") else bool(bias)   # (GlmAttention: o_proj none)
        sw, win_layers = None, None
        if mt in ("mistral", "mixtral", "phi3", "ministral3", "phimoe"):   # HF: the window (if any) on every layer
            sw = r.int("sliding_window", allow_none=True)
        elif mt in ("qwen2", "qwen3", "qwen3_moe", "qwen2_moe"):
            if r.hf.get("use_sliding_window", False):
                sw = r.int("sliding_window")
                mwl = r.int("max_window_layers", minimum=0, required=False)
                if mt == "qwen3_moe":
                    # HF Qwen3MoeAttention (transformers 5.25): the window on every layer (Qwen3MoeConfig has no
                    # max_window_layers / layer_types; the modeling reads neither)
                    win_layers = tuple(range(L))
                elif mt == "qwen2_moe":
                    # Qwen2MoeConfig's default layer_types: the even layers (0, 2, ...) below max_window_layers
                    win_layers = _layer_types(r, L, lambda i: (i + 1) % 2 != 0 and mwl is not None and i < mwl)
                else:
                    # HF Qwen2/Qwen3: layers from max_window_layers on use the window
                    win_layers = _layer_types(r, L, lambda i: mwl is not None and i >= mwl)
        elif mt == "gemma3_text":
            if r.raw("use_bidirectional_attention", required=False):
                # Gemma3TextModel then masks nothing (EmbeddingGemma: an encoder, no token-by-token decoding)
                raise ValueError("config field `use_bidirectional_attention` = true: a bidirectional Gemma 3 "
                                 "(EmbeddingGemma) is an encoder; glmbench prices causal decoding")
            sw = r.int("sliding_window")
            pat = r.int("sliding_window_pattern" if "sliding_window_pattern" in hf else "_sliding_window_pattern",
                        required=False) or r.defaults["sliding_window_pattern"]
            win_layers = _layer_types(r, L, lambda i: (i + 1) % pat != 0)
            kw.update(_gemma_fields(r))
        elif mt in GEMMA4_FAMILIES:
            bidi = r.raw("use_bidirectional_attention", required=False)
            if bidi == "all":
                # Gemma4TextAttention: is_causal = use_bidirectional_attention != "all" (Gemma4TextConfig: "all", every
                # token bidirectional; "vision", an image's tokens only, the text still causal)
                raise ValueError("config field `use_bidirectional_attention` = 'all': a bidirectional Gemma 4 is an "
                                 "encoder; glmbench prices causal decoding (null or 'vision' keep the text causal)")
            sw = r.int("sliding_window")
            win_layers = _layer_types(r, L, lambda i: (i + 1) % 6 != 0)
            if L - 1 in win_layers:     # HF forces the last layer to full attention
                win_layers = tuple(i for i in win_layers if i != L - 1)
            kw.update(_gemma4_fields(r, L, win_layers, n_kv))
        elif mt in GEMMA3N_FAMILIES:
            sw = r.int("sliding_window")
            win_layers = _layer_types(r, L, lambda i: (i + 1) % 5 != 0)
            kw.update(_gemma3n_fields(r, L, win_layers))
        elif mt == "gemma2":   # Gemma2Config: even layers windowed
            sw = r.int("sliding_window")
            win_layers = _layer_types(r, L, lambda i: i % 2 == 0)
            kw.update(_gemma_fields(r))
        elif mt == "gpt_oss":
            sw = r.int("sliding_window")
            win_layers = _layer_types(r, L, lambda i: i % 2 == 0)
            # (numbers Model's GPT-OSS layer reads from the config: checked here, where a bad one is named)
            r.float("swiglu_alpha"), r.float("swiglu_limit")
        elif mt == "cohere2":   # Cohere2Config: every sliding_window_pattern-th layer global
            sw = r.int("sliding_window")
            pat = r.int("sliding_window_pattern")
            win_layers = _layer_types(r, L, lambda i: (i + 1) % pat != 0)
        elif mt == "olmo3":
            # Olmo3Config: layer_types (default: every 4th layer full); the sliding layers plain rope by
            # rope_parameters.sliding_attention's base, the full ones by full_attention's (and its scaling)
            sw = r.int("sliding_window", allow_none=True)
            win_layers = _layer_types(r, L, lambda i: (i + 1) % 4 != 0) if sw else ()
            rp = r.hf.get("rope_parameters") if isinstance(r.hf.get("rope_parameters"), dict) else {}
            local = rp.get("sliding_attention") if isinstance(rp.get("sliding_attention"), dict) else {}
            lt = local.get("rope_theta", r.hf.get("rope_theta", rp.get("rope_theta", _DEFAULT_THETA["olmo3"])))
            if isinstance(lt, bool) or not isinstance(lt, (int, float)) or not lt > 0 or not math.isfinite(lt):
                raise ValueError(f"config field `rope_parameters.sliding_attention.rope_theta` must be a positive "
                                 f"number, got {lt!r}")
            if (local.get("rope_type") or "default") != "default":
                raise ValueError(f"config field `rope_parameters.sliding_attention.rope_type` = "
                                 f"{local.get('rope_type')!r}: OLMo 3's sliding layers are modelled with plain rope")
            kw["rope_local_theta"] = float(lt)
        elif mt == "smollm3":
            # SmolLM3Config: no_rope_layers[i] = 1 where layer i rotates (default: all but every
            # no_rope_layer_interval-th); a window only where use_sliding_window and sliding_window are set, on
            # the layer_types' sliding layers (default: the NoPE ones)
            if r.bool("mlp_bias"):
                raise ValueError("config field `mlp_bias` = true: a biased MLP is not modelled (the released "
                                 "SmolLM3 has none)")
            nrl = r.hf.get("no_rope_layers")
            if nrl is not None:
                if not isinstance(nrl, list) or len(nrl) != L or any(v not in (0, 1) or isinstance(v, float)
                                                                     for v in nrl):
                    raise ValueError(f"config field `no_rope_layers` must list 0/1 for each of {L} layers, got {nrl!r}")
                kw["nope_layers"] = tuple(i for i in range(L) if not nrl[i])
            else:
                every = r.int("no_rope_layer_interval")
                kw["nope_layers"] = tuple(i for i in range(L) if (i + 1) % every == 0)
            if r.bool("use_sliding_window"):
                sw = r.int("sliding_window", allow_none=True)
                if sw:
                    nope = frozenset(kw["nope_layers"])
                    win_layers = _layer_types(r, L, lambda i: i in nope)
        elif mt == "exaone4":
            # Exaone4Config: layer_types (default: all but every sliding_window_pattern-th layer sliding; the
            # released configs' "LLLG" strings read as llama.cpp's converter reads them, L = sliding); with a
            # sliding_window, only the sliding layers rotate (Exaone4Attention), without one every layer does
            sw = r.int("sliding_window", allow_none=True)
            if sw:
                pat = r.raw("sliding_window_pattern", required=False)
                if isinstance(pat, str) and pat and set(pat) <= {"L", "G"}:
                    windowed = lambda i: pat[i % len(pat)] == "L"
                elif isinstance(pat, int) and not isinstance(pat, bool) and pat > 0:
                    windowed = lambda i: (i + 1) % pat != 0
                elif r.hf.get("layer_types") is None:
                    raise ValueError(f"config field `sliding_window_pattern` must be a positive integer or a string "
                                     f"of 'L' / 'G' (or `layer_types` given), got {pat!r}")
                else:
                    windowed = None
                win_layers = _layer_types(r, L, windowed)
                kw["nope_layers"] = tuple(i for i in range(L) if i not in frozenset(win_layers))
        elif mt == "afmoe":
            # AfmoeConfig: layer_types (default: every global_attn_every_n_layers-th layer full, the others
            # sliding); AfmoeAttention rotates q / k on the sliding layers only and windows them by sliding_window
            # (null: rotated, not windowed)
            sw = r.int("sliding_window", allow_none=True)
            every = r.int("global_attn_every_n_layers", required="layer_types" not in hf)
            sliding = _layer_types(r, L, lambda i: (i + 1) % every != 0)
            kw["nope_layers"] = tuple(i for i in range(L) if i not in frozenset(sliding))
            win_layers = sliding if sw else ()
            if r.bool("mup_enabled"):    # AfmoeModel: the embeddings times sqrt(hidden_size)
                kw["embedding_multiplier"] = math.sqrt(D)
        elif mt == "dots1":
            # Dots1Config: layer_types (default: sliding from max_window_layers on, where sliding_window is set);
            # Dots1Attention windows a sliding layer by sliding_window (null: none; no use_sliding_window field)
            sw = r.int("sliding_window", allow_none=True)
            mwl = r.int("max_window_layers", minimum=0)
            win_layers = _layer_types(r, L, lambda i: i >= mwl) if sw else ()
            sw = sw if win_layers else None    # (the class default 4096 with no sliding layer: no window at all)
        if mt in LAYERNORM_FAMILIES:
            ls = r.raw("logit_scale", required=False)
            if ls is not None and (isinstance(ls, bool) or not isinstance(ls, (int, float)) or not math.isfinite(ls)):
                raise ValueError(f"config field `logit_scale` must be a finite number or null, got {ls!r}")
            kw["logit_scale"] = None if ls is None else float(ls)
        elif mt == "llama4_text":
            # Llama4TextConfig: the layers that rotate (no_rope_layers[i] = 1, by default all but every
            # no_rope_layer_interval-th) attend within chunks of attention_chunk_size (null: none)
            sw = r.int("attention_chunk_size", allow_none=True)
            if sw:
                nrl = r.hf.get("no_rope_layers")
                if nrl:
                    if not isinstance(nrl, list) or len(nrl) != L or any(v not in (0, 1) for v in nrl):
                        raise ValueError(f"config field `no_rope_layers` must list 0/1 for each of {L} layers, "
                                         f"got {nrl!r}")
                    rope_layer = lambda i: bool(nrl[i])
                else:
                    every = r.int("no_rope_layer_interval")
                    rope_layer = lambda i: (i + 1) % every != 0
                win_layers = _layer_types(r, L, rope_layer)
                kw["window_chunked"] = True
        if mt in ("granite", "granitemoe"):
            # GraniteModel / GraniteMoeModel: embeddings times embedding_multiplier, each sub-layer's output times
            # residual_multiplier before the residual add, softmax scale attention_multiplier, logits / logits_scaling
            mult = {k: r.float(k) for k in ("embedding_multiplier", "residual_multiplier", "attention_multiplier",
                                            "logits_scaling")}
            kw.update(embedding_multiplier=mult["embedding_multiplier"], residual_multiplier=mult["residual_multiplier"],
                      attention_scale=mult["attention_multiplier"], logit_scale=1.0 / mult["logits_scaling"])
        elif mt == "olmoe":
            c = r.raw("clip_qkv", required=False)
            if c is not None and (isinstance(c, bool) or not isinstance(c, (int, float)) or not math.isfinite(c)
                                  or c <= 0):
                raise ValueError(f"config field `clip_qkv` must be null or a positive number, got {c!r}")
            kw["clip_qkv"] = None if c is None else float(c)
        # (Llama 4's q / k norm is a weightless L2 norm: nothing to store, numerics only)
        if mt in LINEAR_FAMILIES:
            kw.update(_linear_fields(r, L), attn_output_gate=True, linear_kind="gdn")
        elif mt == "afmoe":     # (AfmoeAttention.gate_proj: hidden -> heads x head_dim, sigmoid on the output)
            kw["attn_output_gate"] = True
        elif mt == "nemotron":  # NemotronLayerNorm1P: nn.LayerNorm's weight (applied as 1 + w) and bias, every norm
            kw["norm_bias"] = True
            if r.hf.get("num_key_value_heads", 0) is None:
                # (NemotronConfig leaves it None, which NemotronAttention divides by: HF 5.25 builds no such model)
                raise ValueError("config field `num_key_value_heads` is null: HF's Nemotron needs the KV heads stated "
                                 "(transformers 5.25's NemotronAttention does not build without them)")
        elif mt in SHORTCONV_FAMILIES:     # (Lfm2Attention: q_layernorm / k_layernorm per head)
            kw.update(_shortconv_fields(r, L))
            # llama.cpp's lfm2 windows every attention layer where its file states attention.sliding_window
            # (src/models/lfm2.cpp load_arch_hparams; read back as `sliding_window` by gguf_file._lfm2); HF's
            # Lfm2Config (transformers 5.25) has no such field: a config without it attends in full
            sw = r.int("sliding_window", required=False, allow_none=True)
            if sw:
                win_layers = tuple(i for i in range(L) if i not in kw["linear_layers"])
        qk_norm = mt in ("qwen3", "qwen3_moe", "gemma3_text", "minimax_m2", "gemma4_text", "olmoe", "olmo2", "olmo3",
                         "exaone4", "gemma3n_text", "dots1", "apertus", "afmoe") + HUNYUAN_FAMILIES or \
            mt in LINEAR_FAMILIES or \
            mt in SHORTCONV_FAMILIES or \
            (mt in ("glm4_moe", "cohere") and r.bool("use_qk_norm"))
        kw.update(n_kv_heads=n_kv, head_dim=hd, attention_bias=bool(bias), attention_out_bias=out_bias,
                  # Command-R+'s q / k LayerNorms hold a weight per head (heads x head_dim)
                  qk_norm=qk_norm, qk_norm_all_heads=mt in ("minimax_m2", "cohere", "olmoe", "olmo2", "olmo3"),
                  post_norms=mt in ("olmo2", "olmo3", "exaone4"), mlp_gated=mt not in UNGATED_MLP_FAMILIES,
                  # (ERNIE 4.5's apply_rotary_pos_emb: cos / sin repeat_interleave'd, pairs (2i, 2i + 1))
                  # (GLM's apply_rotary_pos_emb: cos / sin repeat_interleave'd over the rotated half, pairs (2i, 2i + 1))
                  rope_layout="interleaved" if mt in ("glm4", "cohere", "cohere2", "ernie4_5", "ernie4_5_moe", "glm")
                  else "half",
                  rope_dim=rope_dim,
                  q_lora_rank=None, kv_lora_rank=0, qk_nope_head_dim=0, qk_rope_head_dim=0, v_head_dim=hd,
                  sliding_window=sw, window_layers=win_layers,
                  n_layer_norms=4 if mt in GEMMA_FAMILIES + GEMMA4_FAMILIES + GEMMA3N_FAMILIES + ("glm4", "afmoe") else
                  1 if mt in LAYERNORM_FAMILIES else 2,
                  attention_sinks=mt == "gpt_oss")
        if mt in MAMBA_FAMILIES:
            kw.update(_mamba_fields(r, L, D))
        elif mt in PARALLEL_FAMILIES:
            kw.update(_falcon_h1_fields(r, L, D))

    # ---- MLP / MoE
    # (Gemma 3n: one width per layer, read by _gemma3n_fields)
    F = kw.pop("intermediate_size") if mt in GEMMA3N_FAMILIES + ("nemotron-nas",) else \
        r.int("intermediate_size", required=False) or 0
    if mt == "ernie4_5":    # (Ernie4_5MLP: gate / up / down biased where use_bias, as the attention)
        kw["mlp_bias"] = r.bool("use_bias")
    if mt == "lfm2":
        F = _lfm2_ff_dim(r, F)
    if mt == "afmoe":
        # AfmoeSparseMoeBlock from layer num_dense_layers on (the first ones an AfmoeMLP of intermediate_size):
        # num_experts SwiGLU experts of moe_intermediate_size, AfmoeTokenChoiceRouter (sigmoid scores, the top-k
        # chosen with expert_bias, always renormalised, times route_scale), beside the shared AfmoeMLP of
        # num_shared_experts x moe_intermediate_size; no expert groups
        E, k = r.int("num_experts"), r.int("num_experts_per_tok")
        n_group, topk_group = 1, 1
        Fe, n_shared = r.int("moe_intermediate_size"), r.int("num_shared_experts", minimum=0)
        nd = r.int("num_dense_layers", minimum=0)
        sf = hf.get("score_func", hf.get("scoring_func"))
        if sf not in (None, "sigmoid"):
            raise ValueError(f"config field `score_func` = {sf!r}: HF's AFMoE routes with sigmoid scores")
        rn = r.raw("route_norm", required=False)
        if rn is not None and rn is not True:
            # (the released config.json's field, which llama.cpp's converter writes as expert_weights_norm; HF's
            # AfmoeTokenChoiceRouter renormalises whatever it says)
            raise ValueError(f"config field `route_norm` = {rn!r}: HF's AFMoE always renormalises the top-k weights "
                             f"(true)")
        moe_layers = tuple(range(min(nd, L), L))
        kw.update(n_routed_experts=E, n_experts_per_tok=k, n_shared_experts=n_shared, moe_intermediate_size=Fe,
                  shared_expert_intermediate_size=n_shared * Fe,
                  first_k_dense_replace=moe_layers[0] if moe_layers else L, router_scoring="sigmoid",
                  router_bias=True, n_group=1, topk_group=1, norm_topk_prob=True,
                  routed_scaling_factor=r.float("route_scale"), topk_method="", moe_layers=moe_layers)
    elif mt == "lfm2_moe":
        # Lfm2MoeSparseMoeBlock on the layers from num_dense_layers on (the first ones a dense Lfm2MoeMLP of
        # intermediate_size, not adjusted): num_experts experts of moe_intermediate_size, sigmoid scores, the top-k
        # chosen with expert_bias (use_expert_bias; a buffer the checkpoint stores), renormalised where
        # norm_topk_prob, times routed_scaling_factor; no shared expert
        E, k = r.int("num_experts"), r.int("num_experts_per_tok")
        nd = r.int("num_dense_layers", minimum=0)
        moe_layers = tuple(range(min(nd, L), L))
        n_group, topk_group = 1, 1
        kw.update(n_routed_experts=E, n_experts_per_tok=k, n_shared_experts=0,
                  moe_intermediate_size=r.int("moe_intermediate_size"), shared_expert_intermediate_size=0,
                  first_k_dense_replace=moe_layers[0] if moe_layers else L, router_scoring="sigmoid",
                  router_bias=r.bool("use_expert_bias"), n_group=1, topk_group=1,
                  norm_topk_prob=r.bool("norm_topk_prob"), routed_scaling_factor=r.float("routed_scaling_factor"),
                  topk_method="", moe_layers=moe_layers)
    elif mt in KDA_FAMILIES:
        # Kimi-Linear's MoE (KimiMoEGate): DeepSeek-V3's sigmoid router with e_score_correction_bias, grouped
        # top-k (num_expert_group / topk_group), renormalised (moe_renormalize), routed_scaling_factor; shared
        # experts of num_shared_experts x moe_intermediate_size; mlp_layer_types dense / sparse per layer
        E, k = r.int("num_experts"), r.int("num_experts_per_token")
        Fe, n_shared = r.int("moe_intermediate_size"), r.int("num_shared_experts", minimum=0)
        types = r.raw("mlp_layer_types")
        if not isinstance(types, list) or len(types) != L or any(t not in ("dense", "sparse") for t in types):
            raise ValueError(f"config field `mlp_layer_types` must list 'dense'/'sparse' for each of {L} layers, "
                             f"got {types!r}")
        moe_layers = tuple(i for i, t in enumerate(types) if t == "sparse")
        n_group, topk_group = r.int("num_expert_group"), r.int("topk_group")
        kw.update(n_routed_experts=E, n_experts_per_tok=k, n_shared_experts=n_shared, moe_intermediate_size=Fe,
                  shared_expert_intermediate_size=n_shared * Fe,
                  first_k_dense_replace=moe_layers[0] if moe_layers else L, router_scoring="sigmoid",
                  router_bias=True, n_group=n_group, topk_group=topk_group, norm_topk_prob=r.bool("moe_renormalize"),
                  routed_scaling_factor=r.float("routed_scaling_factor"), topk_method="noaux_tc",
                  moe_layers=moe_layers)
    elif mt in GEMMA4_FAMILIES:
        # Gemma4TextDecoderLayer with enable_moe_block: every layer runs its dense MLP (intermediate_size, here
        # the shared expert) beside num_experts experts of moe_intermediate_size; Gemma4TextRouter: softmax over
        # all experts, top_k_experts kept and renormalised, then times a learned per-expert scale
        moe_layers, E, k, n_group, topk_group = (), 0, 0, 1, 1
        if r.bool("enable_moe_block"):
            E, k, Fe = r.int("num_experts"), r.int("top_k_experts"), r.int("moe_intermediate_size")
            moe_layers = tuple(range(L))
            kw.update(n_routed_experts=E, n_experts_per_tok=k, n_shared_experts=1, moe_intermediate_size=Fe,
                      shared_expert_intermediate_size=F, first_k_dense_replace=0, router_scoring="softmax",
                      router_bias=False, n_group=1, topk_group=1, norm_topk_prob=True, routed_scaling_factor=1.0,
                      topk_method="", moe_layers=moe_layers)
        else:
            kw.update(n_routed_experts=0, n_experts_per_tok=0, n_shared_experts=0, moe_intermediate_size=0,
                      shared_expert_intermediate_size=0, first_k_dense_replace=L, router_scoring="",
                      router_bias=False, n_group=1, topk_group=1, norm_topk_prob=False, routed_scaling_factor=1.0,
                      topk_method="", moe_layers=())
    elif mt in MAMBA_FAMILIES:
        # (read with the layers: _mamba_fields)
        F = kw.pop("intermediate_size")
        E, k, n_group, topk_group = kw.get("n_routed_experts", 0), kw.get("n_experts_per_tok", 0), \
            kw.get("n_group", 1), kw.get("topk_group", 1)
        moe_layers = kw.get("moe_layers", ())
        if not E:
            kw.update(n_routed_experts=0, n_experts_per_tok=0, n_shared_experts=0, moe_intermediate_size=0,
                      shared_expert_intermediate_size=0, first_k_dense_replace=L, router_scoring="",
                      router_bias=False, n_group=1, topk_group=1, norm_topk_prob=False, routed_scaling_factor=1.0,
                      topk_method="", moe_layers=())
    elif mt == "dots1":
        # Dots1MoE from layer first_k_dense_replace on (the layers before it a Dots1MLP of intermediate_size):
        # n_routed_experts experts of moe_intermediate_size, Dots1TopkRouter (sigmoid scores, the top-k chosen with
        # e_score_correction_bias within the topk_group best of n_group groups by their top-2 sums, renormalised
        # where norm_topk_prob, times routed_scaling_factor), beside one shared MLP of n_shared_experts x
        # moe_intermediate_size. (HF names the experts' count num_local_experts too: attribute_map)
        E = r.int("n_routed_experts" if "n_routed_experts" in hf or "num_local_experts" not in hf
                  else "num_local_experts")
        k = r.int("num_experts_per_tok")
        Fe = r.int("moe_intermediate_size")
        n_shared = r.int("n_shared_experts", minimum=0)
        fk = r.int("first_k_dense_replace", minimum=0, maximum=L)
        moe_layers = tuple(range(fk, L))
        # (fields HF's Dots1 does not read, stated by the released config.json: a value other than the one its code
        # runs is refused, not ignored)
        sf = hf.get("scoring_func")
        if sf not in (None, "sigmoid", "noaux_tc"):
            raise ValueError(f"config field `scoring_func` = {sf!r}: dots1 routes with sigmoid scores ('sigmoid', "
                             f"or the released config's 'noaux_tc')")
        method = r.raw("topk_method")
        if method != "noaux_tc":
            raise ValueError(f"config field `topk_method` = {method!r}: dots1 routes with 'noaux_tc'")
        freq = r.raw("moe_layer_freq", required=False)
        if freq is not None and (isinstance(freq, bool) or freq != 1):
            raise ValueError(f"config field `moe_layer_freq` = {freq!r}: HF's Dots1 puts the MoE on every layer from "
                             f"first_k_dense_replace on (1)")
        n_group = r.int("n_group")
        topk_group = r.int("topk_group")
        kw.update(n_routed_experts=E, n_experts_per_tok=k, n_shared_experts=n_shared, moe_intermediate_size=Fe,
                  shared_expert_intermediate_size=n_shared * Fe,
                  first_k_dense_replace=moe_layers[0] if moe_layers else L,
                  router_scoring="sigmoid", router_bias=True, n_group=n_group, topk_group=topk_group,
                  norm_topk_prob=r.bool("norm_topk_prob"), routed_scaling_factor=r.float("routed_scaling_factor"),
                  topk_method="noaux_tc", moe_layers=moe_layers)
    elif mt in ("glm4_moe_lite", "deepseek_v2", "deepseek_v3", "glm4_moe") + DSA_FAMILIES:
        E = r.int("n_routed_experts")
        k = r.int("num_experts_per_tok")
        Fe = r.int("moe_intermediate_size")
        n_shared = r.int("n_shared_experts", minimum=0)
        if mt in ("glm4_moe_lite", "deepseek_v3", "glm4_moe") + DSA_FAMILIES:
            types = hf.get("mlp_layer_types")
            if types is not None:
                if not isinstance(types, list) or len(types) != L or any(t not in ("dense", "sparse") for t in types):
                    raise ValueError(f"config field `mlp_layer_types` must list 'dense'/'sparse' for each of "
                                     f"{L} layers, got {types!r}")
                moe_layers = tuple(i for i, t in enumerate(types) if t == "sparse")
            if types is None or mt in ("deepseek_v3", "glm4_moe"):
                # (HF's decoder layer: MoE from layer first_k_dense_replace on; L: every layer dense. DeepSeek-V3's
                # and GLM-4.5's read no mlp_layer_types: one that says otherwise is refused, not followed)
                fk = r.int("first_k_dense_replace", minimum=0, maximum=L, required=False)
                by_fk = tuple(range(1 if fk is None else fk, L))
                if types is not None and moe_layers != by_fk:
                    raise ValueError(f"config field `mlp_layer_types` = {types!r}: HF's {mt} puts the MoE on the "
                                     f"layers from first_k_dense_replace = {fk} on, whatever it says")
                moe_layers = by_fk
            if mt == "deepseek_v3":
                _moe_layer_freq_one(r, mt)
            # HF's routers of these families are sigmoid with e_score_correction_bias whatever the
            # config says; a config that states another scoring_func is not one of them
            scoring, rbias = "sigmoid", True
            sf = hf.get("scoring_func", "sigmoid")
            if sf != "sigmoid":
                raise ValueError(f"config field `scoring_func` = {sf!r}: {mt} routes with 'sigmoid'")
            method = r.raw("topk_method")
            if method != "noaux_tc":
                raise ValueError(f"config field `topk_method` = {method!r}: {mt} routes with 'noaux_tc'")
        else:
            fk = r.int("first_k_dense_replace", minimum=0, maximum=L)
            _moe_layer_freq_one(r, mt)
            moe_layers = tuple(range(fk, L))
            scoring = r.raw("scoring_func")
            if scoring != "softmax":
                raise ValueError(f"config field `scoring_func` = {scoring!r}: deepseek_v2 routes with 'softmax'")
            rbias = False
            method = r.raw("topk_method")
            if method not in ("greedy", "group_limited_greedy"):
                raise ValueError(f"config field `topk_method` = {method!r} is not 'greedy' or 'group_limited_greedy'")
        n_group = r.int("n_group", required=False) or 1
        topk_group = r.int("topk_group", required=False) or 1
        kw.update(n_routed_experts=E, n_experts_per_tok=k, n_shared_experts=n_shared, moe_intermediate_size=Fe,
                  shared_expert_intermediate_size=n_shared * Fe,
                  first_k_dense_replace=moe_layers[0] if moe_layers else L,
                  router_scoring=scoring, router_bias=rbias, n_group=n_group, topk_group=topk_group,
                  norm_topk_prob=r.bool("norm_topk_prob"),
                  routed_scaling_factor=r.float("routed_scaling_factor"), topk_method=method, moe_layers=moe_layers)
    elif mt == "hunyuan_v1_moe":
        # HunYuanMoEV1Moe on every layer: num_experts experts of intermediate_size (HunYuanMoEV1Experts), softmax
        # top moe_topk renormalised (HunYuanMoEV1Gate), beside one shared MLP of intermediate_size (shared_mlp).
        # The released config.json lists moe_topk / num_experts / moe_intermediate_size / num_shared_expert per
        # layer: one value for all layers is read; widths or shared counts HF would not build are refused
        def one(key, minimum=1):
            v = hf.get(key, r.defaults.get(key))
            if isinstance(v, list) and v and all(x == v[0] for x in v) and len(v) == L:
                v = v[0]
            if isinstance(v, bool) or not isinstance(v, int) or v < minimum:
                raise ValueError(f"config field `{key}` must be an integer >= {minimum} (or one per layer, all "
                                 f"alike), got {v!r}")
            return v
        E, k = one("num_experts"), one("moe_topk" if "moe_topk" in hf or "num_experts_per_tok" not in hf
                                         else "num_experts_per_tok")
        Fe = r.int("intermediate_size")
        if hf.get("moe_intermediate_size") is not None and one("moe_intermediate_size") != Fe:
            raise ValueError(f"config field `moe_intermediate_size` = {hf['moe_intermediate_size']!r}: HF's Hunyuan "
                             f"builds its experts intermediate_size = {Fe} wide")
        if hf.get("num_shared_expert") is not None and one("num_shared_expert") != 1:
            raise ValueError(f"config field `num_shared_expert` = {hf['num_shared_expert']!r}: HF's Hunyuan builds "
                             f"one shared MLP")
        moe_layers = tuple(range(L))
        n_group, topk_group = 1, 1
        kw.update(n_routed_experts=E, n_experts_per_tok=k, n_shared_experts=1, moe_intermediate_size=Fe,
                  shared_expert_intermediate_size=Fe, first_k_dense_replace=0, router_scoring="softmax",
                  router_bias=False, n_group=1, topk_group=1, norm_topk_prob=True, routed_scaling_factor=1.0,
                  topk_method="", moe_layers=moe_layers)
    elif mt in ("gpt_oss", "mixtral", "phimoe"):
        # every layer MoE: num_local_experts experts of intermediate_size, no shared expert. GPT-OSS takes
        # the softmax over the top-k router logits (a biased router, biased experts), Mixtral's
        # MixtralSparseMoeBlock the softmax over all of them with the top-k renormalized: the same weights
        E = r.int("num_local_experts" if "num_local_experts" in hf or "num_experts" not in hf else "num_experts")
        k = r.int("num_experts_per_tok")
        if k > E:
            raise ValueError(f"config field `num_experts_per_tok`={k} must be in [1, num_local_experts={E}]")
        Fe = r.int("intermediate_size")
        moe_layers = tuple(range(L))
        n_group, topk_group = 1, 1
        kw.update(n_routed_experts=E, n_experts_per_tok=k, n_shared_experts=0, moe_intermediate_size=Fe,
                  shared_expert_intermediate_size=0, first_k_dense_replace=0, router_scoring="softmax",
                  router_bias=False, n_group=1, topk_group=1, norm_topk_prob=True, routed_scaling_factor=1.0,
                  topk_method="", moe_layers=moe_layers, expert_bias=mt == "gpt_oss")
        if mt == "phimoe":   # PhimoeDecoderLayer: nn.LayerNorm (weight and bias); lm_head biased where lm_head_bias
            kw.update(norm_bias=True, lm_head_bias=r.bool("lm_head_bias"))
            # the sparsemixer's band (model._router_jitter reads it), checked here with the rest of the config
            if r.float("router_jitter_noise", positive=False) < 0:
                raise ValueError(f"config field `router_jitter_noise` must be a number >= 0, got {hf['router_jitter_noise']}")
    elif mt in ("olmoe", "granitemoe"):
        # every layer MoE, num_experts (OLMoE; num_local_experts its alias) / num_local_experts (Granite MoE) experts
        # of intermediate_size, no shared expert. OlmoeTopKRouter: the softmax over all experts, the top-k
        # renormalized only where norm_topk_prob (the released OLMoE: not); GraniteMoeTopKRouter: the softmax over
        # the top-k logits (= the top-k of the softmax renormalized)
        E = r.int("num_local_experts" if mt == "granitemoe" or ("num_experts" not in hf and "num_local_experts" in hf)
                  else "num_experts")
        k = r.int("num_experts_per_tok")
        if k > E:
            raise ValueError(f"config field `num_experts_per_tok`={k} must be in [1, {E}] (the experts)")
        if mt == "granitemoe" and r.int("shared_intermediate_size", minimum=0, required=False):
            raise ValueError("config field `shared_intermediate_size` > 0: Granite MoE with a shared expert is "
                             "model_type granitemoeshared, not modelled")
        Fe = r.int("intermediate_size")
        moe_layers = tuple(range(L))
        n_group, topk_group = 1, 1
        kw.update(n_routed_experts=E, n_experts_per_tok=k, n_shared_experts=0, moe_intermediate_size=Fe,
                  shared_expert_intermediate_size=0, first_k_dense_replace=0, router_scoring="softmax",
                  router_bias=False, n_group=1, topk_group=1,
                  norm_topk_prob=r.bool("norm_topk_prob") if mt == "olmoe" else True, routed_scaling_factor=1.0,
                  topk_method="", moe_layers=moe_layers)
    elif mt == "llama4_text":
        # Llama4TextMoe: num_local_experts experts of intermediate_size, top-k (1) chosen by the router's
        # logits and weighted by their sigmoid, plus one shared expert of the same width; the layers
        # without experts run a dense MLP of intermediate_size_mlp (Llama4TextConfig.moe_layers, else
        # every interleave_moe_layer_step-th layer from step - 1)
        E = r.int("num_local_experts")
        k = r.int("num_experts_per_tok")
        Fe = r.int("intermediate_size")
        F = r.int("intermediate_size_mlp")
        ml = r.hf.get("moe_layers")
        if ml is not None:
            if not isinstance(ml, list) or any(isinstance(i, bool) or not isinstance(i, int) or not 0 <= i < L
                                               for i in ml):
                raise ValueError(f"config field `moe_layers` must list layer indices in [0, {L}), got {ml!r}")
            moe_layers = tuple(sorted(set(ml)))
        else:
            step = r.int("interleave_moe_layer_step")
            moe_layers = tuple(range(step - 1, L, step))
        n_group, topk_group = 1, 1
        kw.update(n_routed_experts=E, n_experts_per_tok=k, n_shared_experts=1, moe_intermediate_size=Fe,
                  shared_expert_intermediate_size=Fe, first_k_dense_replace=moe_layers[0] if moe_layers else L,
                  router_scoring="sigmoid", router_bias=False, n_group=1, topk_group=1, norm_topk_prob=False,
                  routed_scaling_factor=1.0, topk_method="", moe_layers=moe_layers)
    elif mt == "minimax_m2":
        # MiniMaxM2SparseMoeBlock: every layer, num_local_experts experts of intermediate_size, sigmoid
        # scores, top-k chosen with e_score_correction_bias, renormalized; no shared expert
        E = r.int("num_local_experts")
        k = r.int("num_experts_per_tok")
        Fe = r.int("intermediate_size")
        if r.int("shared_intermediate_size", minimum=0, required=False):
            raise ValueError("config field `shared_intermediate_size` > 0: MiniMax-M2's released models have no "
                             "shared expert and HF's MiniMaxM2 builds none")
        moe_layers = tuple(range(L))
        n_group, topk_group = 1, 1
        kw.update(n_routed_experts=E, n_experts_per_tok=k, n_shared_experts=0, moe_intermediate_size=Fe,
                  shared_expert_intermediate_size=0, first_k_dense_replace=0, router_scoring="sigmoid",
                  router_bias=True, n_group=1, topk_group=1, norm_topk_prob=True, routed_scaling_factor=1.0,
                  topk_method="", moe_layers=moe_layers)
    elif mt == "ernie4_5_moe":
        # Ernie4_5_MoeDecoderLayer: MoE where (i + 1) % moe_layer_interval == 0 and moe_layer_start_index
        # <= i <= moe_layer_end_index (-1: the last layer); moe_num_experts of moe_intermediate_size, top
        # moe_k by softmax + e_score_correction_bias, moe_num_shared_experts shared ones of that width
        if r.bool("use_bias"):
            raise ValueError("config field `use_bias` = true: biased MLPs and lm_head are not modelled "
                             "(the released ERNIE-4.5 MoE models have none)")
        E = r.int("moe_num_experts")
        k = r.int("moe_k")
        Fe = r.int("moe_intermediate_size")
        n_shared = r.int("moe_num_shared_experts", minimum=0)
        start = r.int("moe_layer_start_index", minimum=0)
        end = r.int("moe_layer_end_index", minimum=-1)
        end = L - 1 if end == -1 else end
        every = r.int("moe_layer_interval")
        moe_layers = tuple(i for i in range(L) if (i + 1) % every == 0 and start <= i <= end)
        n_group, topk_group = 1, 1
        kw.update(n_routed_experts=E, n_experts_per_tok=k, n_shared_experts=n_shared, moe_intermediate_size=Fe,
                  shared_expert_intermediate_size=n_shared * Fe,
                  first_k_dense_replace=moe_layers[0] if moe_layers else L, router_scoring="softmax",
                  router_bias=True, n_group=1, topk_group=1, norm_topk_prob=True, routed_scaling_factor=1.0,
                  topk_method="", moe_layers=moe_layers)
    elif mt == "qwen3_5_moe_text":
        # Qwen3_5MoeSparseMoeBlock on every layer: softmax top-k, always renormalized
        # (Qwen3_5MoeTopKRouter), one shared expert of shared_expert_intermediate_size with a sigmoid gate
        E = r.int("num_local_experts" if "num_experts" not in hf and "num_local_experts" in hf else "num_experts")
        k = r.int("num_experts_per_tok")
        Fe = r.int("moe_intermediate_size")
        Fs = r.int("shared_expert_intermediate_size", minimum=0)
        moe_layers = tuple(range(L))
        n_group, topk_group = 1, 1
        kw.update(n_routed_experts=E, n_experts_per_tok=k, n_shared_experts=1 if Fs else 0, moe_intermediate_size=Fe,
                  shared_expert_intermediate_size=Fs, first_k_dense_replace=0, router_scoring="softmax",
                  router_bias=False, n_group=1, topk_group=1, norm_topk_prob=True, routed_scaling_factor=1.0,
                  topk_method="", moe_layers=moe_layers, shared_expert_gate=bool(Fs))
    elif mt in ("qwen3_moe", "qwen2_moe", "qwen3_next"):
        # transformers 5.x writes the expert count as `num_local_experts` (its attribute_map alias)
        E = r.int("num_local_experts" if "num_experts" not in hf and "num_local_experts" in hf else "num_experts")
        k = r.int("num_experts_per_tok")
        Fe = r.int("moe_intermediate_size")
        step = r.int("decoder_sparse_step")
        only = r.raw("mlp_only_layers")
        if not isinstance(only, list) or any(isinstance(i, bool) or not isinstance(i, int) for i in only):
            raise ValueError(f"config field `mlp_only_layers` must be a list of layer indices, got {only!r}")
        # Qwen3MoeDecoderLayer: sparse iff not in mlp_only_layers and (i + 1) % decoder_sparse_step == 0
        moe_layers = tuple(i for i in range(L) if i not in only and (i + 1) % step == 0)
        n_group, topk_group = 1, 1
        # Qwen2MoeSparseMoeBlock: plus one shared expert of shared_expert_intermediate_size (0: none) whose
        # output a sigmoid gate (shared_expert_gate, 1 x hidden) scales
        # (Qwen3-Next's Qwen3NextSparseMoeBlock alike)
        Fs = r.int("shared_expert_intermediate_size", minimum=0) if mt in ("qwen2_moe", "qwen3_next") else 0
        kw.update(n_routed_experts=E, n_experts_per_tok=k, n_shared_experts=1 if Fs else 0, moe_intermediate_size=Fe,
                  shared_expert_intermediate_size=Fs, first_k_dense_replace=moe_layers[0] if moe_layers else L,
                  router_scoring="softmax", router_bias=False, n_group=1, topk_group=1,
                  norm_topk_prob=r.bool("norm_topk_prob"), routed_scaling_factor=1.0, topk_method="",
                  moe_layers=moe_layers, shared_expert_gate=bool(Fs))
    else:
        E = k = n_group = topk_group = 0
        moe_layers = ()
        kw.update(n_routed_experts=0, n_experts_per_tok=0, n_shared_experts=0, moe_intermediate_size=0,
                  shared_expert_intermediate_size=0, first_k_dense_replace=L, router_scoring="",
                  router_bias=False, n_group=1, topk_group=1, norm_topk_prob=False, routed_scaling_factor=1.0,
                  topk_method="", moe_layers=())
    n_ffn = L if kw.get("ffn_layers") is None else len(kw["ffn_layers"])
    if len(moe_layers) < n_ffn and F < 1:
        raise ValueError(f"config field `intermediate_size` is missing or < 1 ({F!r}) but "
                         f"{n_ffn - len(moe_layers)} layer(s) have a dense MLP")
    kw["intermediate_size"] = F
    if E:
        if k > E:
            raise ValueError(f"config field `num_experts_per_tok`={k} is larger than the {E} routed experts")
        if E % n_group:
            raise ValueError(f"config field `n_group`={n_group} does not divide the {E} routed experts")
        if topk_group > n_group:
            raise ValueError(f"config field `topk_group`={topk_group} is larger than `n_group`={n_group}")
        if topk_group * (E // n_group) < k:
            raise ValueError(f"config field `topk_group`={topk_group} keeps {topk_group * (E // n_group)} experts, "
                             f"fewer than `num_experts_per_tok`={k}")
    if kw["rope_dim"] > kw["head_dim"]:
        raise ValueError(f"rotated dims {kw['rope_dim']} are larger than the head dim {kw['head_dim']}")
    return ModelConfig(**kw)


def models_table(names=None) -> list[dict]:
    """Rows for `glmbench models --json`: one summary per built-in (or given) model."""
    return [load(n).summary() for n in (builtin_names() if names is None else names)]


# ---- what a config implies for the forward pass ------------------------------------------------
def layer_kinds(cfg) -> list[str]:
    """'moe' or 'dense' for each decoder layer."""
    return ["moe" if cfg.n_routed_experts and cfg.is_moe_layer(i) else "dense" for i in range(cfg.n_layers)]


def route_groups(cfg) -> dict:
    """n_group, topk_group, group_score and norm_topk_prob for moe_route, as HF's router for
    cfg.topk_method uses them: noaux_tc scores groups by the sum of their top-2 choices,
    group_limited_greedy (DeepSeek-V2) by their max; greedy ignores n_group/topk_group (plain top-k
    over all experts). HF's DeepseekV2TopkRouter never renormalises (it drops norm_topk_prob), so
    deepseek_v2 routes with norm_topk_prob=False whatever the config says."""
    method = cfg.topk_method
    grouped = method in ("noaux_tc", "group_limited_greedy")
    return dict(n_group=int(cfg.n_group or 1) if grouped else 1,
                topk_group=int(cfg.topk_group or 1) if grouped else 1,
                group_score={"noaux_tc": "top2_sum", "group_limited_greedy": "max"}.get(method),
                norm_topk_prob=bool(cfg.norm_topk_prob) and cfg.model_type != "deepseek_v2")

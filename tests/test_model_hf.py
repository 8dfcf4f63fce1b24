"""Oracle 2: whole tiny models built with HF transformers (torch CPU, float32), their weights copied
into glmbench.Model, logits compared for a prefill and 8 decode steps.

The tiny configs keep every structural feature of the real ones (MLA with and without q_lora,
nope/rope/v head dims all different, a dense first layer then MoE, shared experts, group-limited
routing with a randomised e_score_correction_bias (noaux_tc) and DeepSeek-V2's group_limited_greedy,
GQA with q/k norm) at hidden size 64.
"""
import numpy as np
import pytest

torch = pytest.importorskip("torch", reason="HF oracle tests need torch (pip install torch==2.13.0, CPU build)")
transformers = pytest.importorskip("transformers", reason="HF oracle tests need transformers")

import glmbench  # noqa: E402
# (the oracle's helpers, imported from here by other tests as well)
from hf_oracle import assert_close_by_step, glm_logits, hf_logits, rel_err, unit_scale  # noqa: E402, F401

pytestmark = pytest.mark.slow   # HF transformers models as the oracle: every test builds and runs one
from glmbench.models import configs  # noqa: E402

# Logits of a float32 model through 2-3 layers: HF and glmbench differ only in summation order
# (OpenBLAS vs torch GEMM, online vs two-pass softmax), ~1e-6 relative per op. 1e-4 is the bar.
RTOL = 1e-4

TINY = {
    "glm4_moe_lite": dict(
        vocab_size=160, hidden_size=64, intermediate_size=96, moe_intermediate_size=32, num_hidden_layers=3,
        num_attention_heads=4, num_key_value_heads=4, n_shared_experts=1, n_routed_experts=8,
        routed_scaling_factor=1.8, kv_lora_rank=32, q_lora_rank=48, qk_rope_head_dim=8, v_head_dim=16,
        qk_nope_head_dim=12, n_group=2, topk_group=1, num_experts_per_tok=2, first_k_dense_replace=1,
        norm_topk_prob=True, rms_norm_eps=1e-5, rope_parameters={"rope_type": "default", "rope_theta": 10000.0}),
    "deepseek_v2": dict(
        vocab_size=160, hidden_size=64, intermediate_size=96, moe_intermediate_size=32, num_hidden_layers=3,
        num_attention_heads=4, num_key_value_heads=4, n_shared_experts=2, n_routed_experts=8, kv_lora_rank=32,
        q_lora_rank=None, qk_rope_head_dim=8, v_head_dim=16, qk_nope_head_dim=12, num_experts_per_tok=3,
        first_k_dense_replace=1, topk_method="greedy", norm_topk_prob=False, routed_scaling_factor=1.0,
        rms_norm_eps=1e-6, rope_parameters={"rope_type": "default", "rope_theta": 10000.0}),
    "qwen3": dict(
        vocab_size=160, hidden_size=64, intermediate_size=96, num_hidden_layers=2, num_attention_heads=4,
        num_key_value_heads=2, head_dim=16, rms_norm_eps=1e-6,
        rope_parameters={"rope_type": "default", "rope_theta": 1000000.0}),
    "qwen3_moe": dict(
        vocab_size=160, hidden_size=64, intermediate_size=96, moe_intermediate_size=32, num_hidden_layers=2,
        num_attention_heads=4, num_key_value_heads=2, head_dim=16, num_experts=8, num_experts_per_tok=2,
        norm_topk_prob=True, rms_norm_eps=1e-6, rope_parameters={"rope_type": "default", "rope_theta": 1000000.0}),
    # Llama 3.1's rope scaling (llama3): original context 64 with theta 500 over 16 rope dims puts pairs in all
    # three bands (kept, blended, divided by factor)
    "llama": dict(
        vocab_size=160, hidden_size=64, intermediate_size=96, num_hidden_layers=2, num_attention_heads=4,
        num_key_value_heads=2, head_dim=16, rms_norm_eps=1e-5, max_position_embeddings=128,
        rope_parameters={"rope_type": "llama3", "rope_theta": 500.0, "factor": 8.0, "low_freq_factor": 1.0,
                         "high_freq_factor": 4.0, "original_max_position_embeddings": 64}),
    "qwen2": dict(
        vocab_size=160, hidden_size=64, intermediate_size=96, num_hidden_layers=2, num_attention_heads=4,
        num_key_value_heads=2, rms_norm_eps=1e-6, rope_parameters={"rope_type": "default", "rope_theta": 1000000.0}),
    "deepseek_v3": dict(
        vocab_size=160, hidden_size=64, intermediate_size=96, moe_intermediate_size=32, num_hidden_layers=3,
        num_attention_heads=4, num_key_value_heads=4, n_shared_experts=1, n_routed_experts=8,
        routed_scaling_factor=2.5, kv_lora_rank=32, q_lora_rank=48, qk_rope_head_dim=8, v_head_dim=16,
        qk_nope_head_dim=12, n_group=2, topk_group=1, num_experts_per_tok=2, first_k_dense_replace=1,
        norm_topk_prob=True, rms_norm_eps=1e-6, rope_parameters={"rope_type": "default", "rope_theta": 10000.0}),
    # Mixtral: Mistral's attention, every layer MoE (softmax over all experts, the top-k renormalized)
    "mixtral": dict(
        vocab_size=160, hidden_size=64, intermediate_size=48, num_hidden_layers=2, num_attention_heads=4,
        num_key_value_heads=2, head_dim=16, num_local_experts=8, num_experts_per_tok=2, rms_norm_eps=1e-5,
        sliding_window=None, rope_parameters={"rope_type": "default", "rope_theta": 1000000.0}),
    "mistral": dict(
        vocab_size=160, hidden_size=64, intermediate_size=96, num_hidden_layers=2, num_attention_heads=4,
        num_key_value_heads=2, head_dim=16, rms_norm_eps=1e-5, sliding_window=None,
        rope_parameters={"rope_type": "default", "rope_theta": 1000000.0}),
    # Phi-3 / Phi-4: q/k/v and gate/up fused in the checkpoint; Phi-4-mini's partial rotary (0.75)
    "phi3": dict(
        vocab_size=160, hidden_size=64, intermediate_size=96, num_hidden_layers=2, num_attention_heads=4,
        num_key_value_heads=2, rms_norm_eps=1e-5, sliding_window=None, pad_token_id=0, bos_token_id=1,
        eos_token_id=2, rope_parameters={"rope_type": "default", "rope_theta": 10000.0, "partial_rotary_factor": 0.75}),
    # GLM-4.5-Air's shape: GQA with q/k/v bias, half the head rotated, sigmoid router (noaux_tc)
    "glm4_moe": dict(
        vocab_size=160, hidden_size=64, intermediate_size=96, moe_intermediate_size=32, num_hidden_layers=3,
        num_attention_heads=4, num_key_value_heads=2, head_dim=16, n_shared_experts=1, n_routed_experts=8,
        routed_scaling_factor=1.0, n_group=2, topk_group=1, num_experts_per_tok=2, first_k_dense_replace=1,
        norm_topk_prob=True, attention_bias=True, use_qk_norm=False, rms_norm_eps=1e-5,
        rope_parameters={"rope_type": "default", "rope_theta": 10000.0, "partial_rotary_factor": 0.5}),
    # OLMoE: q / k RMSNorms over the whole projection (all heads at once; k's over the 2 KV heads), every layer
    # MoE with the softmax top-k not renormalized (norm_topk_prob false, as released), clip_qkv (tight enough to
    # act on these activations)
    "olmoe": dict(
        vocab_size=160, hidden_size=64, intermediate_size=32, num_hidden_layers=2, num_attention_heads=4,
        num_key_value_heads=2, num_experts=8, num_experts_per_tok=2, norm_topk_prob=False, clip_qkv=1.5,
        rms_norm_eps=1e-5, pad_token_id=0, eos_token_id=1, rope_parameters={"rope_type": "default", "rope_theta": 10000.0}),
    # Granite 3.x: Llama's layers with the multipliers (embeddings x 12, each sub-layer's output x 0.22, softmax
    # scale 1/64 rather than 1/4, logits / 8), tied head
    "granite": dict(
        vocab_size=160, hidden_size=64, intermediate_size=96, num_hidden_layers=2, num_attention_heads=4,
        num_key_value_heads=2, embedding_multiplier=12.0, residual_multiplier=0.22, attention_multiplier=0.015625,
        logits_scaling=8.0, tie_word_embeddings=True, rms_norm_eps=1e-5, pad_token_id=0, bos_token_id=1,
        eos_token_id=2, rope_parameters={"rope_type": "default", "rope_theta": 10000.0}),
    # Granite MoE (3.0 / 3.1 A400M / A800M): the same multipliers, every layer MoE (softmax over the top-k logits)
    "granitemoe": dict(
        vocab_size=160, hidden_size=64, intermediate_size=32, num_hidden_layers=2, num_attention_heads=4,
        num_key_value_heads=2, num_local_experts=8, num_experts_per_tok=2, embedding_multiplier=12.0,
        residual_multiplier=0.22, attention_multiplier=0.015625, logits_scaling=6.0, tie_word_embeddings=True,
        rms_norm_eps=1e-6, pad_token_id=0, bos_token_id=1, eos_token_id=2,
        rope_parameters={"rope_type": "default", "rope_theta": 10000.0}),
    # OLMo 2: post-norm layers (RMSNorm on the attention's and the MLP's outputs, none before them), q / k
    # RMSNorms over all heads at once
    "olmo2": dict(
        vocab_size=160, hidden_size=64, intermediate_size=96, num_hidden_layers=2, num_attention_heads=4,
        num_key_value_heads=2, rms_norm_eps=1e-5, pad_token_id=0, eos_token_id=1,
        rope_parameters={"rope_type": "default", "rope_theta": 10000.0}),
    # OLMo 3: OLMo 2's layers, three of four within a 4-token window (the 15 tokens overrun it) turning by their
    # own base, plain; the fourth global with YaRN (rope_parameters per layer type)
    "olmo3": dict(
        vocab_size=160, hidden_size=64, intermediate_size=96, num_hidden_layers=4, num_attention_heads=4,
        num_key_value_heads=2, rms_norm_eps=1e-5, pad_token_id=0, eos_token_id=1, sliding_window=4,
        max_position_embeddings=64,
        rope_parameters={"full_attention": {"rope_type": "yarn", "rope_theta": 10000.0, "factor": 4.0,
                                            "original_max_position_embeddings": 16},
                         "sliding_attention": {"rope_type": "default", "rope_theta": 500.0}}),
    # SmolLM3: Llama's layers, the fourth without rope (no_rope_layer_interval 4), tied head
    "smollm3": dict(
        vocab_size=160, hidden_size=64, intermediate_size=96, num_hidden_layers=4, num_attention_heads=4,
        num_key_value_heads=2, rms_norm_eps=1e-6, pad_token_id=0, bos_token_id=1, eos_token_id=2,
        tie_word_embeddings=True, rope_parameters={"rope_type": "default", "rope_theta": 10000.0}),
    # EXAONE 4: post-norm layers with per-head q / k norms; three of four layers within a 4-token window and
    # rotating, the fourth global without rope
    "exaone4": dict(
        vocab_size=160, hidden_size=64, intermediate_size=96, num_hidden_layers=4, num_attention_heads=4,
        num_key_value_heads=2, rms_norm_eps=1e-5, pad_token_id=0, bos_token_id=1, eos_token_id=2,
        sliding_window=4, sliding_window_pattern=4,
        rope_parameters={"rope_type": "default", "rope_theta": 10000.0}),
    # EXAONE 3.x: Llama's layers (transformers 5.25 builds LlamaForCausalLM for it), llama3 rope scaling
    "exaone": dict(
        vocab_size=160, hidden_size=64, intermediate_size=96, num_hidden_layers=2, num_attention_heads=4,
        num_key_value_heads=2, rms_norm_eps=1e-5, pad_token_id=0, bos_token_id=1, eos_token_id=2,
        max_position_embeddings=128,
        rope_parameters={"rope_type": "llama3", "rope_theta": 500.0, "factor": 8.0, "low_freq_factor": 1.0,
                         "high_freq_factor": 4.0, "original_max_position_embeddings": 64}),
    # ERNIE 4.5 dense: Llama's layers with interleaved rope (pairs 2i, 2i + 1), a tied head
    "ernie4_5": dict(
        vocab_size=160, hidden_size=64, intermediate_size=96, num_hidden_layers=2, num_attention_heads=4,
        num_key_value_heads=2, head_dim=16, rms_norm_eps=1e-5, pad_token_id=0, bos_token_id=1, eos_token_id=2,
        rope_parameters={"rope_type": "default", "rope_theta": 10000.0}),
    # Hunyuan dense: Llama's layers with per-head q / k RMSNorms on the rotated q / k (after rope), the released
    # configs' NTK-alpha rope ("dynamic" with an alpha: plain rope by the base theta x alpha^(d / (d - 2)))
    "hunyuan_v1_dense": dict(
        vocab_size=160, hidden_size=64, intermediate_size=96, num_hidden_layers=2, num_attention_heads=4,
        num_key_value_heads=2, head_dim=16, rms_norm_eps=1e-5, pad_token_id=0, bos_token_id=1, eos_token_id=2,
        rope_parameters={"rope_type": "dynamic", "alpha": 8.0, "factor": 1.0, "rope_theta": 10000.0}),
    # Hunyuan MoE (Hunyuan-A13B): the same attention; every layer 8 experts (softmax top-2 renormalised) beside a
    # shared MLP, both intermediate_size wide
    "hunyuan_v1_moe": dict(
        vocab_size=160, hidden_size=64, intermediate_size=32, num_hidden_layers=2, num_attention_heads=4,
        num_key_value_heads=2, head_dim=16, num_experts=8, moe_topk=2, rms_norm_eps=1e-5, pad_token_id=0,
        bos_token_id=1, eos_token_id=2,
        rope_parameters={"rope_type": "dynamic", "alpha": 8.0, "factor": 1.0, "rope_theta": 10000.0}),
    # Phi-3.5-MoE: LayerNorms with biases, q / k / v / o biases, an lm_head bias, every layer 8 experts routed by the
    # sparsemixer (its jitter band wide enough that the softmaxes weigh several logits), a 4-token window
    "phimoe": dict(
        vocab_size=160, hidden_size=64, intermediate_size=32, num_hidden_layers=2, num_attention_heads=4,
        num_key_value_heads=2, num_local_experts=8, num_experts_per_tok=2, attention_bias=True, lm_head_bias=True,
        router_jitter_noise=0.2, sliding_window=4, rms_norm_eps=1e-5, pad_token_id=0, bos_token_id=1,
        eos_token_id=2, rope_parameters={"rope_type": "default", "rope_theta": 10000.0}),
    # dots.llm1: Qwen3's per-head q / k norms (before rope) with DeepSeek-V3's MoE after a dense first layer: sigmoid
    # router with a randomised e_score_correction_bias, 2 groups of which 1 kept, top-2 renormalised and scaled by
    # 2.5, two shared experts' width beside them
    "dots1": dict(
        vocab_size=160, hidden_size=64, intermediate_size=96, moe_intermediate_size=32, num_hidden_layers=3,
        num_attention_heads=4, num_key_value_heads=2, head_dim=16, n_shared_experts=2, n_routed_experts=8,
        num_experts_per_tok=2, first_k_dense_replace=1, n_group=2, topk_group=1, norm_topk_prob=True,
        routed_scaling_factor=2.5, rms_norm_eps=1e-5, rope_parameters={"rope_type": "default", "rope_theta": 10000.0}),
    # Arcee (AFM-4.5B): Llama's layers with an ungated relu2 MLP (up -> relu^2 -> down), YaRN rope (the 15 tokens
    # run past its original 8-token context)
    "arcee": dict(
        vocab_size=160, hidden_size=64, intermediate_size=96, num_hidden_layers=2, num_attention_heads=4,
        num_key_value_heads=2, rms_norm_eps=1e-5, pad_token_id=0, bos_token_id=1, eos_token_id=2,
        max_position_embeddings=64,
        rope_parameters={"rope_type": "yarn", "rope_theta": 10000.0, "factor": 4.0,
                         "original_max_position_embeddings": 8}),
    # Apertus: per-head q / k RMSNorms before rope, the ungated MLP with xIELU (its per-layer alpha_p / alpha_n
    # re-drawn below), q / k / v / o biases, ApertusConfig's llama3 rope with a base and original context small
    # enough that its scaling bites
    "apertus": dict(
        vocab_size=160, hidden_size=64, intermediate_size=96, num_hidden_layers=2, num_attention_heads=4,
        num_key_value_heads=2, rms_norm_eps=1e-5, pad_token_id=0, bos_token_id=1, eos_token_id=2,
        attention_bias=True, max_position_embeddings=64,
        rope_parameters={"rope_type": "llama3", "rope_theta": 10000.0, "factor": 8.0, "low_freq_factor": 1.0,
                         "high_freq_factor": 4.0, "original_max_position_embeddings": 8}),
    # Gemma 1: Llama's pre-norm layer with embeddings x sqrt(hidden), (1 + w) RMSNorms, GeGLU, MQA (one KV head),
    # head_dim 32 beside hidden / heads 16 (as gemma-7b's 256 beside 192), tied head
    "gemma": dict(
        vocab_size=160, hidden_size=64, intermediate_size=96, num_hidden_layers=2, num_attention_heads=4,
        num_key_value_heads=1, head_dim=32, rms_norm_eps=1e-6, pad_token_id=0, bos_token_id=2, eos_token_id=1,
        rope_parameters={"rope_type": "default", "rope_theta": 10000.0}),
    # GLM-4-9B-Chat (transformers' glm): q/k/v biases, half of each 32-wide head rotated in interleaved pairs, gate
    # and up fused (mlp.gate_up_proj)
    "glm": dict(
        vocab_size=160, hidden_size=64, intermediate_size=96, num_hidden_layers=2, num_attention_heads=4,
        num_key_value_heads=2, head_dim=32, rms_norm_eps=1e-5, pad_token_id=0, bos_token_id=1, eos_token_id=2,
        rope_parameters={"rope_type": "default", "rope_theta": 10000.0, "partial_rotary_factor": 0.5}),
    # InternLM3 (HF's LlamaForCausalLM of an InternLM3Config): head_dim 32 beside hidden / heads 16
    "internlm3": dict(
        vocab_size=160, hidden_size=64, intermediate_size=96, num_hidden_layers=2, num_attention_heads=4,
        num_key_value_heads=2, head_dim=32, rms_norm_eps=1e-5, pad_token_id=0, bos_token_id=1, eos_token_id=2,
        rope_parameters={"rope_type": "default", "rope_theta": 50000.0}),
    # Nemotron (Nemotron-4 / Minitron): LayerNorm1P norms (1 + w, with a bias), partial rotary (the first quarter of
    # each head here), q / k / v / o and MLP biases, the ungated relu2 MLP
    "nemotron": dict(
        vocab_size=160, hidden_size=64, intermediate_size=96, num_hidden_layers=2, num_attention_heads=4,
        num_key_value_heads=2, head_dim=16, norm_eps=1e-5, attention_bias=True, mlp_bias=True,
        rope_parameters={"rope_type": "default", "rope_theta": 10000.0, "partial_rotary_factor": 0.25}),
    # AFMoE (Arcee Trinity): per-head q / k norms, a sigmoid gate from gate_proj on each head's output, a 4-token
    # window with rope on the sliding layers and none on the full ones (every 2nd), Gemma's four norms (plain
    # weights), a dense first layer then 8 experts (sigmoid, expert_bias choosing, renormalised, times 2.5) beside
    # two shared experts' width; the embeddings times sqrt(hidden) (mup_enabled)
    "afmoe": dict(
        vocab_size=160, hidden_size=64, intermediate_size=96, moe_intermediate_size=32, num_hidden_layers=4,
        num_attention_heads=4, num_key_value_heads=2, head_dim=16, num_experts=8, num_experts_per_tok=2,
        num_shared_experts=2, num_dense_layers=1, route_scale=2.5, global_attn_every_n_layers=2, sliding_window=4,
        mup_enabled=True, rms_norm_eps=1e-5, rope_parameters={"rope_type": "default", "rope_theta": 10000.0}),
}


def tiny_hf_model(model_type, seed=0, **overrides):
    """A tiny random HF model in float32, eager attention, with weights re-drawn at unit scale.
    `overrides` replace entries of TINY[model_type]."""
    from transformers import AutoConfig, AutoModelForCausalLM
    from transformers.models.auto.configuration_auto import CONFIG_MAPPING
    if model_type not in CONFIG_MAPPING:    # (a config this transformers refuses is a failure, not a skip)
        pytest.skip(f"transformers {transformers.__version__} lacks model type {model_type!r}")
    cfg = AutoConfig.for_model(model_type, **{**TINY[model_type], **overrides})
    cfg._attn_implementation = "eager"
    torch.manual_seed(seed)
    model = AutoModelForCausalLM.from_config(cfg, dtype=torch.float32).eval()
    return cfg, unit_scale(model, seed)


CASES = [("glm4_moe_lite", s) for s in ("naive", "absorbed", "flash")] + \
        [("deepseek_v2", s) for s in ("naive", "absorbed", "flash")] + [("qwen3", ""), ("qwen3_moe", "")] + \
        [("deepseek_v3", "flash"), ("llama", ""), ("qwen2", ""), ("glm4_moe", ""), ("mixtral", ""), ("mistral", ""), ("phi3", "")] + \
        [("olmoe", ""), ("granite", ""), ("granitemoe", "")] + \
        [("olmo2", ""), ("smollm3", ""), ("exaone4", ""), ("olmo3", "")] + [("exaone", ""), ("ernie4_5", "")] + \
        [("hunyuan_v1_dense", ""), ("hunyuan_v1_moe", ""), ("phimoe", "")] + [("dots1", ""), ("arcee", ""), ("apertus", ""), ("gemma", ""), ("glm", ""), ("internlm3", "")] + \
        [("afmoe", ""), ("nemotron", "")]


@pytest.mark.parametrize("model_type,strategy", CASES)
def test_logits_match_hf(model_type, strategy):
    hf_cfg, hf = tiny_hf_model(model_type)
    cfg = configs.load(hf_cfg.to_dict())
    assert cfg.model_type == model_type
    assert cfg.attention == ("mla" if strategy else "gqa")
    weights = {k: v.numpy() for k, v in hf.state_dict().items()}
    before = {k: v.copy() for k, v in weights.items()}
    m = glmbench.Model(cfg, state_dict=weights, weights="f32", kv="f32", max_context=32,
                       mla_strategy=strategy or "flash")
    rng = np.random.default_rng(7)
    prompt = rng.integers(0, cfg.vocab_size, 7).tolist()
    steps = rng.integers(0, cfg.vocab_size, 8).tolist()
    want = hf_logits(hf, prompt, steps)
    got = glm_logits(m, prompt, steps)
    assert got[0].shape == (7, cfg.vocab_size) and got[1].shape == (cfg.vocab_size,)
    assert_close_by_step(got, want, RTOL, model_type)
    assert m.n_past == 15
    for k in weights:  # inputs are never modified
        np.testing.assert_array_equal(weights[k], before[k])
    # reset and replay: the same logits again (the cache really was emptied)
    m.reset()
    np.testing.assert_allclose(m.prefill(np.array(prompt)), got[0], rtol=0, atol=1e-6 * np.abs(got[0]).max())


def test_moe_layers_really_route_by_bias():
    """The e_score_correction_bias must change which experts run (else the GLM case above would not
    test it): routing the tiny model's MoE input with and without the bias picks different experts."""
    hf_cfg, hf = tiny_hf_model("glm4_moe_lite")
    cfg = configs.load(hf_cfg.to_dict())
    w = {k: v.numpy() for k, v in hf.state_dict().items()}
    x = np.random.default_rng(3).standard_normal((64, cfg.hidden_size)).astype(np.float32)
    kw = dict(top_k=cfg.n_experts_per_tok, scoring="sigmoid", n_group=cfg.n_group, topk_group=cfg.topk_group)
    with_bias, _ = glmbench.core.ops.moe_route(x, w["model.layers.1.mlp.gate.weight"],
                                      bias=w["model.layers.1.mlp.gate.e_score_correction_bias"], **kw)
    without, _ = glmbench.core.ops.moe_route(x, w["model.layers.1.mlp.gate.weight"], **kw)
    assert np.any(np.sort(with_bias, 1) != np.sort(without, 1))


# DeepSeek-V2's topk_method="group_limited_greedy": softmax over all 8 experts, 4 groups of 2
# scored by their max, 2 groups kept, top-3 among them. top_k must exceed topk_group: with the max
# rule the best top_k experts always lie in the best top_k groups, so top_k <= topk_group would
# route exactly like plain greedy. HF's DeepseekV2TopkRouter drops norm_topk_prob (never
# renormalises) and multiplies by routed_scaling_factor; the second case checks both.
GLG = dict(topk_method="group_limited_greedy", n_group=4, topk_group=2, num_experts_per_tok=3)
GLG_CASES = [("naive", {}), ("absorbed", {}), ("flash", {}),
             ("flash", dict(norm_topk_prob=True, routed_scaling_factor=2.5))]


@pytest.mark.parametrize("strategy,over", GLG_CASES, ids=[f"{s}-{'norm-scaled' if o else 'plain'}" for s, o in GLG_CASES])
def test_deepseek_v2_group_limited_greedy_matches_hf(strategy, over):
    hf_cfg, hf = tiny_hf_model("deepseek_v2", **GLG, **over)
    if getattr(hf_cfg, "topk_method", None) != "group_limited_greedy" or \
            not hasattr(hf.model.layers[1].mlp.gate, "topk_group"):
        pytest.skip(f"transformers {transformers.__version__}: deepseek_v2 has no group_limited_greedy router")
    cfg = configs.load(hf_cfg.to_dict())
    assert (cfg.topk_method, cfg.n_group, cfg.topk_group, cfg.n_experts_per_tok) == ("group_limited_greedy", 4, 2, 3)
    # the inputs of HF's MoE routers, to show below that group limiting changed some choices
    seen = []
    hooks = [layer.mlp.gate.register_forward_hook(lambda mod, args, out: seen.append(args[0].reshape(
        -1, cfg.hidden_size).numpy().copy())) for layer in hf.model.layers[cfg.first_k_dense_replace:]]
    weights = {k: v.numpy() for k, v in hf.state_dict().items()}
    m = glmbench.Model(cfg, state_dict=weights, weights="f32", kv="f32", max_context=32,
                       mla_strategy=strategy)
    rng = np.random.default_rng(7)
    prompt = rng.integers(0, cfg.vocab_size, 7).tolist()
    steps = rng.integers(0, cfg.vocab_size, 8).tolist()
    want = hf_logits(hf, prompt, steps)
    for h in hooks:
        h.remove()
    got = glm_logits(m, prompt, steps)
    assert_close_by_step(got, want, RTOL, "group_limited_greedy", finite=False)
    # group limiting really bites: for some token plain greedy top-3 picks a different set
    from glmbench.core import reference as ref
    from glmbench.models.model import route_groups
    assert route_groups(cfg) == dict(n_group=4, topk_group=2, group_score="max", norm_topk_prob=False)
    differs = 0
    for j, xin in enumerate(seen):
        layer = cfg.first_k_dense_replace + j % (cfg.n_layers - cfg.first_k_dense_replace)
        wr = weights[f"model.layers.{layer}.mlp.gate.weight"]
        grouped, _ = ref.moe_route(xin, wr, top_k=3, scoring="softmax", n_group=4, topk_group=2)
        plain, _ = ref.moe_route(xin, wr, top_k=3, scoring="softmax")
        differs += int(np.sum(np.any(np.sort(grouped, 1) != np.sort(plain, 1), axis=1)))
    assert len(seen) == 2 * 9 and differs > 0
    # and it matters for the logits: the same model routed greedily is far from HF
    greedy = configs.load({**hf_cfg.to_dict(), "topk_method": "greedy"})
    m2 = glmbench.Model(greedy, state_dict=weights, weights="f32", kv="f32", max_context=32,
                        mla_strategy=strategy)
    assert rel_err(m2.prefill(np.array(prompt)), want[0]) > 100 * RTOL


def test_route_groups_follow_topk_method():
    """model.route_groups: the group rule comes from topk_method; greedy ignores n_group/topk_group
    (as HF does) and deepseek_v2 never renormalises."""
    from glmbench.models.model import route_groups
    base = {**TINY["deepseek_v2"], "model_type": "deepseek_v2"}
    greedy = configs.load({**base, "n_group": 4, "topk_group": 2, "norm_topk_prob": True})
    assert route_groups(greedy) == dict(n_group=1, topk_group=1, group_score=None, norm_topk_prob=False)
    glg = configs.load({**base, **GLG})
    assert route_groups(glg) == dict(n_group=4, topk_group=2, group_score="max", norm_topk_prob=False)
    glm = configs.load({**TINY["glm4_moe_lite"], "model_type": "glm4_moe_lite", "topk_method": "noaux_tc"})
    assert route_groups(glm) == dict(n_group=2, topk_group=1, group_score="top2_sum", norm_topk_prob=True)
    qwen = configs.load({**TINY["qwen3_moe"], "model_type": "qwen3_moe"})
    assert route_groups(qwen) == dict(n_group=1, topk_group=1, group_score=None, norm_topk_prob=True)


@pytest.mark.parametrize("strategy", ["naive", "absorbed", "flash"])
@pytest.mark.parametrize("interleave", [True, False])
def test_glm4_moe_lite_rope_interleave_matches_hf(interleave, strategy):
    """HF glm4_moe_lite's `rope_interleave`: true rotates the pairs (x[2i], x[2i+1]) of q/k's rope dims
    (apply_rotary_pos_emb_interleave, written de-interleaved), false the pairs (x[i], x[i + Dr/2])
    (apply_rotary_pos_emb with rotate_half). 16 rope dims so the two pairings really differ."""
    hf_cfg, hf = tiny_hf_model("glm4_moe_lite", qk_rope_head_dim=16, rope_interleave=interleave)
    assert hf_cfg.rope_interleave is interleave
    d = hf_cfg.to_dict()
    cfg = configs.load(d)
    assert cfg.rope_layout == ("interleaved" if interleave else "half")
    weights = {k: v.numpy() for k, v in hf.state_dict().items()}
    m = glmbench.Model(cfg, state_dict=weights, weights="f32", kv="f32", max_context=32, mla_strategy=strategy)
    rng = np.random.default_rng(5)
    prompt = rng.integers(0, cfg.vocab_size, 7).tolist()
    steps = rng.integers(0, cfg.vocab_size, 8).tolist()
    want = hf_logits(hf, prompt, steps)
    got = glm_logits(m, prompt, steps)
    for i, (a, b) in enumerate(zip(got, want)):
        err = rel_err(a, b)
        assert err < RTOL, (f"rope_interleave={interleave} {strategy} "
                            f"{'prefill' if i == 0 else f'decode step {i}'}: relative error {err:.2e}")
    # the field matters: the other value gives other logits on the same weights
    other = configs.load({**d, "rope_interleave": not interleave})
    m2 = glmbench.Model(other, state_dict=weights, weights="f32", kv="f32", max_context=32, mla_strategy=strategy)
    assert rel_err(m2.prefill(np.array(prompt)), want[0]) > 100 * RTOL


def test_glm4_moe_lite_rope_interleave_must_be_bool():
    d = {**TINY["glm4_moe_lite"], "model_type": "glm4_moe_lite", "rope_interleave": "no"}
    with pytest.raises(ValueError, match=r"`rope_interleave` must be true or false, got 'no'"):
        configs.load(d)


def test_bf16_weights_match_hf_with_rounded_weights():
    """weight_format="bf16" equals HF float32 run on the same weights rounded to bfloat16:
    the bf16 kernels widen each weight exactly and accumulate in float32."""
    hf_cfg, hf = tiny_hf_model("qwen3")
    with torch.no_grad():
        for p in hf.parameters():
            if p.ndim == 2:
                p.copy_(p.to(torch.bfloat16).to(torch.float32))
    cfg = configs.load(hf_cfg.to_dict())
    m = glmbench.Model(cfg, state_dict={k: v.numpy() for k, v in hf.state_dict().items()}, weights="bf16",
                       max_context=32, kv="f32")
    prompt, steps = [3, 1, 4, 1, 5, 9], [2, 6, 5]
    for a, b in zip(glm_logits(m, prompt, steps), hf_logits(hf, prompt, steps)):
        assert rel_err(a, b) < RTOL
    # a prompt above the GEMV limit (8 tokens where csrc/hgemm.c runs a SIMD kernel) goes through the
    # prefill GEMM: with float32 activations (f32fma) the same bar; with the bf16 dot products (the
    # default where the CPU has AVX512_BF16) the activations are rounded to bf16 as ggml does, which
    # moves each by up to 2^-9 of itself: a bf16-sized bar
    from glmbench.core import _core
    prompt = [(7 * i + 3) % cfg.vocab_size for i in range(20)]
    want = hf_logits(hf, prompt, steps)
    for kern in [k for k in ("f32fma", "bf16dot") if _core._hgemm_kernels("bf16")[k]]:
        _core._linear_set_hgemm(kern)
        try:
            m.reset()
            errs = [rel_err(a, b) for a, b in zip(glm_logits(m, prompt, steps), want)]
        finally:
            _core._linear_set_hgemm("auto")
        assert max(errs) < (RTOL if kern == "f32fma" else 2e-2), (kern, errs)
        if kern == "bf16dot":
            assert errs[0] > RTOL / 100  # the rounding is there: not the float32 result


# ---- scaled rope (YaRN, linear) ---------------------------------------------------------------
# original_max_position_embeddings 16 with theta 100 over 16 rope dims puts YaRN's ramp at pairs
# 0..2 (pair 1 half-way), so some pairs keep their frequency, one is blended and the rest are
# divided by `factor`; mscale != mscale_all_dim makes the cos/sin attention factor != 1 and the
# softmax scale gains mscale_all_dim's mscale^2. A 24-token prefill runs past the original context.
_YARN = {"rope_type": "yarn", "rope_theta": 100.0, "factor": 4.0, "original_max_position_embeddings": 16,
         "beta_fast": 32, "beta_slow": 1, "mscale": 1.0, "mscale_all_dim": 0.8}
SCALED = [
    ("deepseek_v2", "naive", dict(qk_rope_head_dim=16, max_position_embeddings=64, rope_parameters=_YARN)),
    ("deepseek_v2", "absorbed", dict(qk_rope_head_dim=16, max_position_embeddings=64, rope_parameters=_YARN)),
    ("deepseek_v2", "flash", dict(qk_rope_head_dim=16, max_position_embeddings=64, rope_parameters=_YARN)),
    # glm4_moe_lite: de-interleaved rope keys; DeepSeek-V2-Lite's own mscale == mscale_all_dim
    ("glm4_moe_lite", "flash", dict(qk_rope_head_dim=16, max_position_embeddings=64,
                                    rope_parameters={**_YARN, "mscale": 0.707, "mscale_all_dim": 0.707})),
    # GQA, no mscale: attention factor 0.1 ln(factor) + 1; truncate=False keeps fractional bounds
    ("qwen3", "", dict(max_position_embeddings=64, rope_parameters={
        "rope_type": "yarn", "rope_theta": 100.0, "factor": 4.0, "original_max_position_embeddings": 16,
        "truncate": False})),
    ("qwen3", "", dict(rope_parameters={"rope_type": "linear", "rope_theta": 1000.0, "factor": 3.0})),
    ("llama", "", dict(rope_parameters=TINY["llama"]["rope_parameters"])),
]


@pytest.mark.parametrize("model_type,strategy,over", SCALED, ids=[f"{m}-{s}-{o['rope_parameters']['rope_type']}"
                                                                  for m, s, o in SCALED])
def test_scaled_rope_logits_match_hf(model_type, strategy, over):
    hf_cfg, hf = tiny_hf_model(model_type, **over)
    cfg = configs.load(hf_cfg.to_dict())
    rt = over["rope_parameters"]["rope_type"]
    assert cfg.rope_type == rt
    # our float64 frequencies and factor are HF's (float32) ones
    from transformers.modeling_rope_utils import ROPE_INIT_FUNCTIONS
    inv, af = ROPE_INIT_FUNCTIONS[rt](hf_cfg)
    np.testing.assert_allclose(cfg.rope_inv_freq(), inv.double().numpy(), rtol=1e-6)
    assert cfg.rope_attention_factor() == pytest.approx(af, rel=1e-12)
    if rt in ("yarn", "llama3"):  # the ramp really blends: neither all plain nor all divided by factor
        plain = cfg.rope_theta ** (-2.0 * np.arange(cfg.rope_dim // 2) / cfg.rope_dim)
        ratio = plain / cfg.rope_inv_freq()
        f = over["rope_parameters"]["factor"]
        assert ratio.min() == pytest.approx(1) and ratio.max() == pytest.approx(f)
        assert np.any((ratio > 1.01) & (ratio < f - 0.01))
        if model_type not in ("glm4_moe_lite", "llama"):   # llama3 keeps cos/sin unscaled
            assert af != pytest.approx(1.0)
    weights = {k: v.numpy() for k, v in hf.state_dict().items()}
    m = glmbench.Model(cfg, state_dict=weights, weights="f32", kv="f32", max_context=32,
                       mla_strategy=strategy or "flash")
    rng = np.random.default_rng(11)
    prompt = rng.integers(0, cfg.vocab_size, 24).tolist()
    steps = rng.integers(0, cfg.vocab_size, 8).tolist()
    want = hf_logits(hf, prompt, steps)
    got = glm_logits(m, prompt, steps)
    assert_close_by_step(got, want, RTOL, f"{model_type} {rt}", finite=False)
    # and the scaling matters: plain rope gives different logits
    plain_cfg = configs.load({**hf_cfg.to_dict(), "rope_parameters": {"rope_type": "default",
                                                                      "rope_theta": cfg.rope_theta}})
    assert plain_cfg.rope_inv_freq() is None
    m2 = glmbench.Model(plain_cfg, state_dict=weights, weights="f32", kv="f32", max_context=32,
                        mla_strategy=strategy or "flash")
    assert rel_err(m2.prefill(np.array(prompt)), want[0]) > 100 * RTOL


@pytest.mark.parametrize("rope", [{"rope_type": "dynamic", "factor": 2.0}, {"type": "longrope"}])
def test_rope_scaling_the_forward_lacks_still_predicts(rope):
    """A rope type only changes numerics: the config loads and predicts; the Model refuses it."""
    d = {**TINY["deepseek_v2"], "model_type": "deepseek_v2", "rope_scaling": rope}
    d.pop("rope_parameters")
    cfg = configs.load(d)
    assert cfg.weight_bytes("q8_0") > 0 and cfg.kv_bytes_per_token() > 0
    with pytest.raises(ValueError, match=f"rope_type '{cfg.rope_type}'"):
        glmbench.Model(cfg, weights="f32")


@pytest.mark.parametrize("rope,match", [
    ({"rope_type": "llama3", "factor": 8.0}, r"`rope_scaling.low_freq_factor`"),
    ({"rope_type": "yarn", "factor": -1.0, "original_max_position_embeddings": 16}, r"`rope_scaling.factor`"),
    ({"rope_type": "yarn", "factor": 4.0, "original_max_position_embeddings": 0},
     r"`rope_scaling.original_max_position_embeddings`"),
    ({"rope_type": "linear"}, r"`rope_scaling.factor` must be a finite number > 0, got None"),
])
def test_unsupported_rope_scaling_fails_at_load(rope, match):
    d = {**TINY["deepseek_v2"], "model_type": "deepseek_v2", "rope_scaling": rope}
    d.pop("rope_parameters")
    with pytest.raises(ValueError, match=match):
        configs.load(d)


# ---- Gemma 3 (text): sliding windows, local rope base, sandwich norms, GeGLU, soft-capped logits ----
GEMMA3 = dict(
    vocab_size=160, hidden_size=64, intermediate_size=96, num_hidden_layers=3, num_attention_heads=4,
    num_key_value_heads=2, head_dim=16, rms_norm_eps=1e-6, sliding_window=4,
    layer_types=["sliding_attention", "full_attention", "sliding_attention"],
    # query_pre_attn_scalar != head_dim, so a 1/sqrt(head_dim) scale shows; a final soft-cap small
    # enough to bend the logits; attn_logit_softcapping set to check that we, like HF's Gemma 3,
    # do not apply it
    query_pre_attn_scalar=24, final_logit_softcapping=5.0, attn_logit_softcapping=2.0,
    rope_parameters={"full_attention": {"rope_type": "linear", "factor": 8.0, "rope_theta": 1e6},
                     "sliding_attention": {"rope_type": "default", "rope_theta": 1e4}},
    max_position_embeddings=256)


@pytest.mark.parametrize("chunk,ring", [(16, 64), (512, 96)])
def test_gemma3_logits_match_hf_past_the_window(chunk, ring):
    """A 50-token prefill then 30 decode steps. chunk 16: the prefill runs in 4 pieces and each
    windowed layer's ring (64 slots: one block) wraps; chunk 512: a ring would be no smaller than
    the layer (96), so the windowed layers keep every token and attention reads only the window."""
    TINY["gemma3_text"] = GEMMA3
    try:
        hf_cfg, hf = tiny_hf_model("gemma3_text", seed=3)
    finally:
        TINY.pop("gemma3_text")
    cfg = configs.load(hf_cfg.to_dict())
    assert cfg.windowed_layers == (0, 2) and cfg.sliding_window == 4 and cfg.forward_unsupported() == []
    assert cfg.rope_local_theta == 1e4 and cfg.rope_theta == 1e6 and cfg.rope_type == "linear"
    assert cfg.softmax_scale == 24 ** -0.5
    weights = {k: v.numpy() for k, v in hf.state_dict().items()}
    before = {k: v.copy() for k, v in weights.items()}
    m = glmbench.Model(cfg, state_dict=weights, weights="f32", kv="f32", max_context=96, window_chunk=chunk)
    assert m.cache.windows == (4, 0, 4)
    rng = np.random.default_rng(11)
    prompt = rng.integers(0, cfg.vocab_size, 50).tolist()
    steps = rng.integers(0, cfg.vocab_size, 30).tolist()
    want = hf_logits(hf, prompt, steps)
    got = glm_logits(m, prompt, steps)
    assert m.cache.ring_tokens(0) == ring and m.n_past == 80     # chunk 16: 80 tokens through 64 slots
    assert m.cache.held(0) == 4 and m.cache.held(1) == 80
    assert all(L._c_plan() is not None for L in m.layers)   # each layer ran as one C call (csrc/layer.c)
    assert_close_by_step(got, want, RTOL, "gemma3")
    assert np.abs(got[0]).max() <= 5.0    # the soft-cap bounds them
    for k in weights:
        np.testing.assert_array_equal(weights[k], before[k])
    # decode after a prefill equals one long prefill (the same positions through the rings)
    m.reset()
    long = m.prefill(np.array(prompt + steps))
    np.testing.assert_allclose(long[-1], got[-1], rtol=0, atol=1e-5 * np.abs(got[-1]).max())


# ---- Gemma 2: attention logits soft-capped in every layer, every other layer windowed ----------
GEMMA2 = dict(
    vocab_size=160, hidden_size=64, intermediate_size=96, num_hidden_layers=3, num_attention_heads=4,
    num_key_value_heads=2, head_dim=16, rms_norm_eps=1e-6, sliding_window=6, query_pre_attn_scalar=20,
    # caps small enough that they bend the scores and logits of this tiny model
    attn_logit_softcapping=1.5, final_logit_softcapping=4.0,
    rope_parameters={"rope_type": "default", "rope_theta": 10000.0}, max_position_embeddings=256)


def test_gemma2_softcapped_logits_match_hf():
    TINY["gemma2"] = GEMMA2
    try:
        hf_cfg, hf = tiny_hf_model("gemma2", seed=5)
    finally:
        TINY.pop("gemma2")
    cfg = configs.load(hf_cfg.to_dict())
    assert cfg.windowed_layers == (0, 2) and cfg.attn_logit_softcapping == 1.5 and cfg.rope_local_theta is None
    assert cfg.forward_unsupported() == []
    weights = {k: v.numpy() for k, v in hf.state_dict().items()}
    m = glmbench.Model(cfg, state_dict=weights, weights="f32", kv="f32", max_context=96, window_chunk=8)
    rng = np.random.default_rng(12)
    prompt = rng.integers(0, cfg.vocab_size, 40).tolist()
    steps = rng.integers(0, cfg.vocab_size, 30).tolist()
    want = hf_logits(hf, prompt, steps)
    got = glm_logits(m, prompt, steps)
    assert m.cache.ring_tokens(0) == 64 and m.n_past == 70   # the windowed layers' rings wrapped
    assert all(L._c_plan() is not None for L in m.layers)   # soft-capped windows in the C layer
    assert_close_by_step(got, want, RTOL, "gemma2", finite=False)
    # without the attention soft-cap the logits really differ: the cap is doing something here
    import dataclasses
    m2 = glmbench.Model(dataclasses.replace(cfg, attn_logit_softcapping=None), state_dict=weights, weights="f32",
                        kv="f32", max_context=96, window_chunk=8)
    assert rel_err(m2.prefill(np.array(prompt)), want[0]) > 10 * RTOL


# ---- GPT-OSS: attention sinks, every other layer windowed, biases, YaRN, clamped-SwiGLU MoE ----
GPT_OSS = dict(
    vocab_size=160, hidden_size=64, intermediate_size=32, num_hidden_layers=3, num_attention_heads=4,
    num_key_value_heads=2, head_dim=16, rms_norm_eps=1e-5, sliding_window=4, num_local_experts=8,
    num_experts_per_tok=2, attention_bias=True, max_position_embeddings=256,
    layer_types=["sliding_attention", "full_attention", "sliding_attention"],
    rope_parameters={"rope_type": "yarn", "rope_theta": 150000.0, "factor": 8.0, "beta_fast": 32.0,
                     "beta_slow": 1.0, "original_max_position_embeddings": 32, "truncate": False})


@pytest.mark.parametrize("limit,chunk", [(None, 16), (0.5, 512)])
def test_gpt_oss_logits_match_hf_past_the_window(limit, chunk):
    """A 40-token prefill then 20 decode steps, far past the window of 4. limit 0.5: the clamps of
    the SwiGLU bite on most values (the default 7.0 rarely does at unit scale). chunk 16: the
    windowed layers' rings (64 slots) wrap; chunk 512: a ring would be no smaller than the layer."""
    TINY["gpt_oss"] = GPT_OSS
    try:
        hf_cfg, hf = tiny_hf_model("gpt_oss", seed=4, **({} if limit is None else {"swiglu_limit": limit}))
    finally:
        TINY.pop("gpt_oss")
    cfg = configs.load(hf_cfg.to_dict())
    assert cfg.forward_unsupported() == [] and cfg.windowed_layers == (0, 2) and cfg.rope_type == "yarn"
    weights = {k: v.numpy() for k, v in hf.state_dict().items()}
    assert "model.layers.0.self_attn.sinks" in weights and "model.layers.0.mlp.router.bias" in weights
    before = {k: v.copy() for k, v in weights.items()}
    m = glmbench.Model(cfg, state_dict=weights, weights="f32", kv="f32", max_context=96, window_chunk=chunk)
    assert m.cache.windows == (4, 0, 4)
    rng = np.random.default_rng(13)
    prompt = rng.integers(0, cfg.vocab_size, 40).tolist()
    steps = rng.integers(0, cfg.vocab_size, 20).tolist()
    want = hf_logits(hf, prompt, steps)
    got = glm_logits(m, prompt, steps)
    assert_close_by_step(got, want, RTOL, "gpt_oss")
    for k in weights:
        np.testing.assert_array_equal(weights[k], before[k])
    assert all(L.last_counts.sum() == 2 for L in m.layers)   # the last decode step routed to top-2
    assert m.cache.held(0) == 4 and m.cache.held(1) == 60 and m.cache.ring_tokens(0) == (64 if chunk == 16 else 96)
    # decode after a prefill equals one long prefill (the same positions through the rings)
    m.reset()
    long = m.prefill(np.array(prompt + steps))
    np.testing.assert_allclose(long[-1], got[-1], rtol=0, atol=1e-5 * np.abs(got[-1]).max())
    # the sinks really take part: without them the logits differ
    w0 = dict(weights)
    for i in range(cfg.n_layers):
        w0[f"model.layers.{i}.self_attn.sinks"] = np.full_like(weights[f"model.layers.{i}.self_attn.sinks"], -1e30)
    m0 = glmbench.Model(cfg, state_dict=w0, weights="f32", kv="f32", max_context=96)
    assert rel_err(m0.prefill(np.array(prompt)), want[0]) > 10 * RTOL


def test_gpt_oss_sink_attention_and_moe_match_float64_reference():
    """The NumPy float32 ops against their float64 twins in core/reference.py."""
    from glmbench.core import attention, ops, reference
    rng = np.random.default_rng(0)
    T, L, Hq, Hkv, Dh = 5, 23, 4, 2, 16
    q, k, v = (rng.standard_normal(s).astype(np.float32) for s in ((T, Hq, Dh), (L, Hkv, Dh), (L, Hkv, Dh)))
    sinks = rng.standard_normal(Hq).astype(np.float32)
    for win in (None, 4):
        got = attention.gqa_sink_attention(q, k, v, sinks, window=win)
        want = reference.gqa_attention(q, k, v, window=win, sinks=sinks)
        np.testing.assert_allclose(got, want, rtol=0, atol=1e-5)
        assert np.abs(got - reference.gqa_attention(q, k, v, window=win)).max() > 1e-2
    E, F, D = 6, 8, 16
    x = rng.standard_normal((7, D)).astype(np.float32)
    w = [rng.standard_normal(s).astype(np.float32) / 3 for s in ((E, D), (E,), (E, F, D), (E, F, D), (E, D, F),
                                                                   (E, F), (E, F), (E, D))]
    y, counts = ops.moe_gpt_oss(x, *w, top_k=3, limit=0.7)
    np.testing.assert_allclose(y, reference.moe_gpt_oss(x, *w, top_k=3, limit=0.7), rtol=0, atol=1e-5)
    assert counts.sum() == 7 * 3


def test_phi3_window_on_every_layer_matches_hf():
    # Phi-3-mini-4k's config sets sliding_window (2047): HF applies it on every layer. A window of 5
    # tokens, shorter than the 7-token prompt and the 8 decode steps after it
    hf_cfg, hf = tiny_hf_model("phi3", sliding_window=5)
    cfg = configs.load(hf_cfg.to_dict())
    assert cfg.sliding_window == 5 and cfg.windowed_layers == (0, 1) and cfg.rope_dim == 12
    m = glmbench.Model(cfg, state_dict={k: v.numpy() for k, v in hf.state_dict().items()}, weights="f32",
                       kv="f32", max_context=32)
    rng = np.random.default_rng(3)
    prompt, steps = rng.integers(0, cfg.vocab_size, 7).tolist(), rng.integers(0, cfg.vocab_size, 8).tolist()
    for i, (a, b) in enumerate(zip(glm_logits(m, prompt, steps), hf_logits(hf, prompt, steps))):
        assert rel_err(a, b) < RTOL, (i, rel_err(a, b))


def _matches_hf(hf, cfg, label, *, n_prompt=20, n_steps=10, seed=13, **model_kw):
    """Model of `cfg` on HF model `hf`'s weights: the logits of an n_prompt-token prefill and n_steps
    decode steps within RTOL of HF's, the weights untouched. Returns (model, its logits)."""
    weights = {k: v.numpy() for k, v in hf.state_dict().items()}
    before = {k: v.copy() for k, v in weights.items()}
    m = glmbench.Model(cfg, state_dict=weights, weights="f32", kv="f32", **{"max_context": 64, **model_kw})
    rng = np.random.default_rng(seed)
    prompt = rng.integers(0, cfg.vocab_size, n_prompt).tolist()
    steps = rng.integers(0, cfg.vocab_size, n_steps).tolist()
    want = hf_logits(hf, prompt, steps)
    got = glm_logits(m, prompt, steps)
    assert_close_by_step(got, want, RTOL, label)
    for k in weights:
        np.testing.assert_array_equal(weights[k], before[k])
    return m, prompt, got


# ---- Cohere: one LayerNorm, attention and MLP side by side, logit scale; Cohere2's windows ----------
COHERE = dict(vocab_size=160, hidden_size=64, intermediate_size=96, num_hidden_layers=4, num_attention_heads=4,
              num_key_value_heads=2, layer_norm_eps=1e-5, logit_scale=0.5,
              rope_parameters={"rope_type": "default", "rope_theta": 10000.0})


@pytest.mark.parametrize("model_type,over", [("cohere", {"use_qk_norm": True}), ("cohere", {"num_key_value_heads": 4}),
                                             ("cohere2", {"sliding_window": 4})],
                         ids=["command-r-plus-qk-norm", "command-r-mha", "cohere2-window"])
def test_cohere_logits_match_hf(model_type, over):
    """Command-R (+ per-head q/k LayerNorms, as Command-R+), and Cohere2 (Command-A / R7B: three of four
    layers windowed to 4 tokens and rotating, the fourth global without rope) past its window: a
    20-token prefill then 10 decode steps, and a prefill of the last token's logits only."""
    TINY[model_type] = COHERE
    try:
        hf_cfg, hf = tiny_hf_model(model_type, seed=5, **over)
    finally:
        TINY.pop(model_type)
    cfg = configs.load(hf_cfg.to_dict())
    assert cfg.forward_unsupported() == [] and cfg.layer_norm and cfg.rope_layout == "interleaved"
    assert cfg.logit_scale == 0.5 and cfg.tie_word_embeddings
    if model_type == "cohere2":
        assert cfg.windowed_layers == (0, 1, 2) and not cfg.layer_rotates(3) and cfg.layer_rotates(0)
    m, prompt, got = _matches_hf(hf, cfg, model_type)
    m.reset()
    last = m.prefill(np.array(prompt), logits="last")
    np.testing.assert_allclose(last, got[0][-1], rtol=0, atol=1e-5 * np.abs(got[0][-1]).max())


# ---- hybrids: Gated DeltaNet linear layers beside gated attention (Qwen3.5, Qwen3-Next) -------------
HYBRID = dict(vocab_size=160, hidden_size=64, num_hidden_layers=4, num_attention_heads=4, num_key_value_heads=2,
              head_dim=16, rms_norm_eps=1e-6, linear_num_key_heads=2, linear_num_value_heads=4,
              linear_key_head_dim=8, linear_value_head_dim=12, linear_conv_kernel_dim=4,
              layer_types=["linear_attention", "full_attention", "linear_attention", "full_attention"],
              rope_parameters={"rope_type": "default", "rope_theta": 10000.0, "partial_rotary_factor": 0.25})


@pytest.mark.parametrize("model_type,over", [
    ("qwen3_5_text", {"intermediate_size": 96}),
    ("qwen3_5_moe_text", {"moe_intermediate_size": 32, "shared_expert_intermediate_size": 48, "num_experts": 8,
                          "num_experts_per_tok": 2}),
    ("qwen3_next", {"intermediate_size": 96, "moe_intermediate_size": 32, "shared_expert_intermediate_size": 48,
                    "num_experts": 8, "num_experts_per_tok": 2, "mlp_only_layers": [2]}),
])
def test_hybrid_logits_match_hf(model_type, over):
    """A 20-token prefill then 10 decode steps through two Gated DeltaNet layers (their conv window and
    recurrent state carried from the prompt into every step) and two gated-attention layers (partial
    rope, q/k norms, the sigmoid output gate); (1 + w) norms; Qwen3.5-MoE's and Qwen3-Next's MoE with
    a gated shared expert (Qwen3-Next: its layer 2 dense, its q/k/v/z interleaved per key head)."""
    TINY[model_type] = HYBRID
    try:
        hf_cfg, hf = tiny_hf_model(model_type, seed=9, **over)
    finally:
        TINY.pop(model_type)
    with torch.no_grad():   # a decay that matters: A_log ~ log U(0.5, 2), dt_bias ~ N(0, 0.5)
        g = torch.Generator().manual_seed(1)
        for name, p in hf.named_parameters():
            if name.endswith("A_log"):
                p.copy_(torch.log(0.5 + 1.5 * torch.rand(p.shape, generator=g)))
            elif name.endswith("dt_bias"):
                p.copy_(0.5 * torch.randn(p.shape, generator=g))
            elif name.endswith("norm.weight") and "linear_attn" not in name:
                p.copy_(0.1 * torch.randn(p.shape, generator=g))    # (1 + w) norms: w around 0
    cfg = configs.load(hf_cfg.to_dict())
    assert cfg.forward_unsupported() == [] and cfg.linear_layers == (0, 2) and cfg.attn_output_gate
    m, prompt, got = _matches_hf(hf, cfg, model_type, seed=17)
    assert m.cache.n_layers == 2           # the two attention layers; the linear ones hold a state
    assert m.n_past == 30
    # reset empties the states as well as the cache: the same logits again; the last token's alone too
    m.reset()
    np.testing.assert_allclose(m.prefill(np.array(prompt)), got[0], rtol=0, atol=1e-5 * np.abs(got[0]).max())
    m.reset()
    np.testing.assert_allclose(m.prefill(np.array(prompt), logits="last"), got[0][-1], rtol=0,
                               atol=1e-5 * np.abs(got[0][-1]).max())


@pytest.mark.parametrize("jitter", [0.01, 0.2, 1.0])
def test_sparsemixer_route_matches_hf(jitter):
    """ops.sparsemixer_route is HF's sparsemixer in eval mode (modeling_phimoe.sparsemixer, training=False): the same
    two experts and weights; with a band wide enough the weights are not the plain softmax's top two."""
    from transformers.models.phimoe.modeling_phimoe import sparsemixer
    rng = np.random.default_rng(11)
    x = rng.standard_normal((200, 32)).astype(np.float32)
    wr = (rng.standard_normal((8, 32)) / 32 ** 0.5).astype(np.float32)
    from glmbench.core import ops   # (glmbench.core.ops as an attribute only exists once something imported it)
    idx, wt = ops.sparsemixer_route(x, wr, jitter)
    with torch.no_grad():
        mult, sel = sparsemixer(torch.from_numpy(x) @ torch.from_numpy(wr).T, jitter_eps=jitter, training=False)
    np.testing.assert_array_equal(idx, sel.numpy())
    np.testing.assert_allclose(wt, mult.numpy(), rtol=1e-6, atol=1e-7)
    z = x @ wr.T
    p = np.exp(z - z.max(1, keepdims=True))
    p /= p.sum(1, keepdims=True)
    plain = np.take_along_axis(p, idx.astype(np.int64), 1)
    assert np.max(np.abs(plain - wt)) > 0.05


def test_hunyuan_ntk_alpha_rope_is_hfs():
    """Hunyuan's rope_scaling "dynamic" with an alpha is HF's ntk_alpha (fixed frequencies by the base theta x
    alpha^(d / (d - 2))); "dynamic" without one (context-dependent dynamic NTK) is not run; another family's
    "dynamic" stays "dynamic"."""
    hf_cfg, hf = tiny_hf_model("hunyuan_v1_dense")
    cfg = configs.load(hf_cfg.to_dict())
    assert cfg.rope_type == "ntk_alpha" and cfg.forward_unsupported() == []
    np.testing.assert_allclose(cfg.rope_inv_freq(), hf.model.rotary_emb.inv_freq.double().numpy(), rtol=1e-6)
    d = {**TINY["hunyuan_v1_dense"], "model_type": "hunyuan_v1_dense",
         "rope_parameters": {"rope_type": "dynamic", "factor": 2.0, "rope_theta": 10000.0}}
    assert "rope_type 'dynamic'" in configs.load(d).forward_unsupported()[0]
    q = {**TINY["qwen3"], "model_type": "qwen3",
         "rope_parameters": {"rope_type": "dynamic", "alpha": 8.0, "factor": 2.0, "rope_theta": 10000.0}}
    assert configs.load(q).rope_type == "dynamic"

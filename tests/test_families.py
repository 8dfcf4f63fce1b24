"""More HF families (llama with llama3 rope, qwen2, glm4_moe, deepseek_v3, gemma3, gpt_oss): configs
written by transformers' own config classes, parameter counts against the HF model, names from
an HF cache folder, windowed layers in memory, and fields that only change numerics never
blocking a prediction."""
import json

import numpy as np
import pytest

from glmbench.models import configs
from glmbench.predict import costmodel as cm

transformers = pytest.importorskip("transformers", reason="the family configs come from transformers' config classes")

TINY = dict(vocab_size=160, hidden_size=64, intermediate_size=96, num_hidden_layers=6, num_attention_heads=4,
            num_key_value_heads=2, head_dim=16)
MOE = dict(moe_intermediate_size=32, n_routed_experts=8, num_experts_per_tok=2, n_shared_experts=1,
           first_k_dense_replace=1)
FAMILIES = {
    "llama": dict(rope_parameters={"rope_type": "llama3", "rope_theta": 5e5, "factor": 8.0, "low_freq_factor": 1.0,
                                   "high_freq_factor": 4.0, "original_max_position_embeddings": 64},
                  max_position_embeddings=256),
    "qwen2": {},
    "gemma3_text": dict(sliding_window=8),
    "gemma2": dict(sliding_window=8),
    "glm4_moe": dict(MOE, n_group=1, topk_group=1, attention_bias=True),
    "deepseek_v3": dict(MOE, n_group=2, topk_group=1, kv_lora_rank=32, q_lora_rank=48, qk_rope_head_dim=8,
                        v_head_dim=16, qk_nope_head_dim=12, num_key_value_heads=4),
    "gpt_oss": dict(num_local_experts=8, num_experts_per_tok=2, sliding_window=8, intermediate_size=32),
    "olmoe": dict(num_experts=8, num_experts_per_tok=2, intermediate_size=32, clip_qkv=8.0),
    "granite": dict(embedding_multiplier=12.0, residual_multiplier=0.22, attention_multiplier=0.0078125,
                    logits_scaling=16.0, tie_word_embeddings=True),
    "granitemoe": dict(num_local_experts=8, num_experts_per_tok=2, intermediate_size=32, tie_word_embeddings=True),
    # post-norm layers (no input_layernorm, post_feedforward_layernorm), q / k norms over all heads or per head
    "olmo2": {},
    "olmo3": dict(sliding_window=8),
    "smollm3": dict(pad_token_id=0, bos_token_id=1, eos_token_id=2),   # (HF's defaults lie past the tiny vocab)
    "exaone4": dict(sliding_window=8),
    # AltUp, LAuReL, per-layer embeddings; the last layer shares layer 3's cache
    "gemma3n_text": dict(sliding_window=8, num_kv_shared_layers=1, vocab_size_per_layer_input=128,
                         hidden_size_per_layer_input=8, laurel_rank=4),
    # Hunyuan's q / k norms after rope and MoE beside a shared MLP; Phi-3.5-MoE's biased LayerNorms and lm_head
    "hunyuan_v1_dense": {},
    "hunyuan_v1_moe": dict(num_experts=4, moe_topk=2, intermediate_size=32),
    "phimoe": dict(num_local_experts=4, num_experts_per_tok=2, intermediate_size=32, attention_bias=True,
                   lm_head_bias=True),
    # EXAONE 3.x (HF's LlamaForCausalLM), ERNIE 4.5 dense with its biases
    "exaone": dict(pad_token_id=0, bos_token_id=1, eos_token_id=2),
    "ernie4_5": dict(use_bias=True),
    # dots.llm1: Qwen3's q / k norms, DeepSeek-V3's grouped sigmoid MoE after a dense layer, two shared experts; a
    # window on the layers from max_window_layers on, biases on q / k / v / o
    "dots1": dict(MOE, n_shared_experts=2, n_group=2, topk_group=1, sliding_window=8, max_window_layers=4,
                  attention_bias=True),
    # Arcee's ungated relu2 MLP (up / down only), with its biases
    "arcee": dict(pad_token_id=0, bos_token_id=1, eos_token_id=2, mlp_bias=True),
    # Apertus's per-head q / k norms, HF's own norm names and the xIELU's two learned scalars per layer (its two
    # buffers, beta and eps, stored but not parameters)
    "apertus": dict(attention_bias=True),
    # Gemma 1: MQA, the head dim unlike hidden / heads, q / k / v / o biases where attention_bias
    "gemma": dict(num_key_value_heads=1, head_dim=32, attention_bias=True),
    # GLM-4-9B-Chat (transformers' glm): q/k/v biases, gate and up fused in one gate_up_proj
    "glm": dict(head_dim=32, pad_token_id=0, eos_token_id=1),   # (HF's defaults lie past the tiny vocab)
    # InternLM3 (HF's LlamaForCausalLM) with its biases by the released names (q/k/v/o and the MLP)
    "internlm3": dict(head_dim=32, qkv_bias=True, bias=True),
    # Nemotron: LayerNorm1P's weight and bias per norm, partial rotary, biases on every projection and the MLP
    "nemotron": dict(attention_bias=True, mlp_bias=True),
    # AFMoE: the attention's own gate_proj, four norms per layer, expert_bias (a parameter), shared experts
    "afmoe": dict(num_experts=8, num_experts_per_tok=2, num_shared_experts=2, num_dense_layers=2,
                  moe_intermediate_size=32, sliding_window=8),
}


def _hf_config(model_type, **kw):
    from transformers.models.auto.configuration_auto import CONFIG_MAPPING
    if model_type not in CONFIG_MAPPING:    # (a config this transformers refuses is a failure, not a skip)
        pytest.skip(f"transformers {transformers.__version__} lacks {model_type!r}")
    return transformers.AutoConfig.for_model(model_type, **{**TINY, **FAMILIES[model_type], **kw})


@pytest.mark.parametrize("model_type", list(FAMILIES))
@pytest.mark.slow
def test_parameters_equal_the_hf_model(model_type):
    torch = pytest.importorskip("torch")
    hc = _hf_config(model_type)
    with torch.device("meta"):
        m = transformers.AutoModelForCausalLM.from_config(hc)
    n = sum(p.numel() for p in m.parameters()) + sum(b.numel() for k, b in m.named_buffers() if "e_score" in k)
    cfg = configs.load(hc.to_dict())
    assert cfg.model_type == model_type
    assert cfg.total_params() == n
    # (buffers HF's checkpoint stores: Apertus's xIELU beta / eps, tensors of ours, not parameters)
    stored = sum(b.numel() for k, b in m.named_buffers() if k.endswith(("act_fn.beta", "act_fn.eps")))
    assert sum(configs._numel(s) for s in cfg.tensor_shapes().values()) == n + stored
    s = cm.Setup(cfg, "rtx-3090", weights="Q4_K_M")
    assert cm.decode(s, 100).tok_s > 0 and cm.prefill(s, 64, 10).tok_s > 0 and cm.memory(s, 100).fits


# real shapes, as the config classes write them
REAL = {
    "meta-llama/Llama-3.1-8B-Instruct": ("LlamaConfig", dict(
        hidden_size=4096, intermediate_size=14336, num_hidden_layers=32, num_attention_heads=32,
        num_key_value_heads=8, vocab_size=128256, max_position_embeddings=131072, rms_norm_eps=1e-5,
        rope_parameters={"rope_type": "llama3", "rope_theta": 5e5, "factor": 8.0, "low_freq_factor": 1.0,
                         "high_freq_factor": 4.0, "original_max_position_embeddings": 8192})),
    "Qwen/Qwen2.5-7B-Instruct": ("Qwen2Config", dict(
        hidden_size=3584, intermediate_size=18944, num_hidden_layers=28, num_attention_heads=28,
        num_key_value_heads=4, vocab_size=152064, max_position_embeddings=32768)),
    "zai-org/GLM-4.5-Air": ("Glm4MoeConfig", dict(
        hidden_size=4096, intermediate_size=10944, moe_intermediate_size=1408, num_hidden_layers=46,
        num_attention_heads=96, num_key_value_heads=8, head_dim=128, n_routed_experts=128, n_shared_experts=1,
        num_experts_per_tok=8, first_k_dense_replace=1, vocab_size=151552, attention_bias=True,
        max_position_embeddings=131072)),
    "deepseek-ai/DeepSeek-V3": ("DeepseekV3Config", {}),
    "google/gemma-3-4b-it": ("Gemma3Config", {}),
    "openai/gpt-oss-120b": ("GptOssConfig", {}),
}


@pytest.mark.parametrize("name", list(REAL))
def test_real_configs_from_an_hf_cache_are_named_and_predict(tmp_path, name):
    cls, kw = REAL[name]
    if not hasattr(transformers, cls):
        pytest.skip(f"transformers {transformers.__version__} has no {cls}")
    d = getattr(transformers, cls)(**kw).to_dict()
    snap = tmp_path / ("models--" + name.replace("/", "--")) / "snapshots" / "0123456789abcdef0123456789abcdef01234567"
    snap.mkdir(parents=True)
    (snap / "config.json").write_text(json.dumps(d))
    before = (snap / "config.json").read_text()
    for src in (snap, snap / "config.json"):
        cfg = configs.load(str(src))
        assert cfg.name == name
    assert (snap / "config.json").read_text() == before
    s = cm.Setup(cfg, "h200-sxm", weights="Q4_K_M")
    assert cm.decode(s, 4096).tok_s > 0 and cm.prefill(s, 512).tok_s > 0
    assert cm.max_context(s) >= 0


def test_glm_4_5_air_sizes():
    cls, kw = REAL["zai-org/GLM-4.5-Air"]
    cfg = configs.load(transformers.Glm4MoeConfig(**kw).to_dict())
    assert cfg.attention == "gqa" and cfg.rope_dim == 64 and cfg.router_scoring == "sigmoid"
    assert cfg.moe_layers == tuple(range(1, 46))
    assert 105e9 < cfg.total_params() < 108e9        # "106B total, 12B active"
    assert 11.5e9 < cfg.active_params(embeddings=False) < 12.5e9


def test_name_or_path_names_a_config(tmp_path):
    d = transformers.Qwen2Config().to_dict()
    assert configs.load({**d, "_name_or_path": "Qwen/Qwen2-7B"}).name == "Qwen/Qwen2-7B"
    p = tmp_path / "my-model"
    p.mkdir()
    (p / "config.json").write_text(json.dumps({**d, "_name_or_path": "Qwen/Qwen2-7B"}))
    assert configs.load(str(p)).name == "Qwen/Qwen2-7B"
    (p / "config.json").write_text(json.dumps({**d, "_name_or_path": str(tmp_path / "elsewhere")}))
    assert configs.load(str(p)).name == "my-model"   # a local path: the folder names it
    hub = "/root/.cache/huggingface/hub/models--org--name/snapshots/abc123/"
    assert configs.load({**d, "_name_or_path": hub}).name == "org/name"


def test_windowed_layers_in_memory_by_hand():
    # 6 layers, pattern 6: layers 0-4 windowed (8 tokens), layer 5 global
    cfg = configs.load(_hf_config("gemma3_text").to_dict())
    assert cfg.windowed_layers == (0, 1, 2, 3, 4) and cfg.sliding_window == 8
    s = cm.Setup(cfg, "rtx-3090", weights="f16")
    per_layer = 2 * 2 * 16 * 2          # K and V, 2 KV heads, head dim 16, f16
    # a windowed layer holds llama.cpp's SWA cells: min(ctx, 8 + n_ubatch 512) padded to 256
    for ctx, cells in ((5, 256), (100, 256), (600, 768)):
        assert cm.memory(s, ctx).kv == per_layer * (ctx + 5 * cells)
    # decode reads min(d + 1, 8) keys in a windowed layer, d + 1 in the global one
    short, long_ = cm.decode(s, 7), cm.decode(s, 1007)
    att = lambda st: sum(o.bytes for o in st.ops if o.name == "attn.core")
    grow = att(long_) - att(short)
    assert grow == pytest.approx(1000 * per_layer)
    # gpt_oss alternates, windowed first
    g = configs.load(_hf_config("gpt_oss").to_dict())
    assert g.windowed_layers == (0, 2, 4)
    s = cm.Setup(g, "rtx-3090", weights="f16")
    big = cm.max_context(s)
    assert cm.memory(s, big).fits and not cm.memory(s, big + 1).fits


def test_numerics_only_fields_do_not_block_predictions():
    base = _hf_config("llama").to_dict()
    for change in ({"hidden_act": "gelu"}, {"rope_parameters": {"rope_type": "dynamic", "rope_theta": 1e4, "factor": 2.0}},
                   {"rope_parameters": {"rope_type": "longrope", "rope_theta": 1e4, "short_factor": [1.0],
                                        "long_factor": [2.0]}}):
        cfg = configs.load({**base, **change})
        s = cm.Setup(cfg, "rtx-3090")
        assert cm.decode(s, 10).tok_s > 0
        assert cfg.forward_unsupported()


def test_model_refuses_a_forward_it_lacks():
    glmbench = pytest.importorskip("glmbench")
    cfg = configs.load({**_hf_config("llama").to_dict(), "hidden_act": "gelu"})
    with pytest.raises(ValueError, match=r"glmbench.Model cannot run .*hidden_act 'gelu'.*predictions take"):
        glmbench.Model(cfg, weights="f32")
    # GPT-OSS runs (sinks, biases, clamped SwiGLU: tests/test_model_hf.py checks it against HF)
    o = configs.load(_hf_config("gpt_oss").to_dict())
    assert o.forward_unsupported() == []
    m = glmbench.Model(o, weights="f32", max_context=32)
    assert np.all(np.isfinite(m.prefill(np.arange(12))))
    # Gemma 3 runs (sliding windows, sandwich norms, GeGLU: tests/test_model_hf.py checks it against HF)
    g = configs.load(_hf_config("gemma3_text").to_dict())
    assert g.forward_unsupported() == []
    m = glmbench.Model(g, weights="f32", max_context=32)
    assert np.all(np.isfinite(m.prefill(np.arange(12))))


def test_bad_family_fields_are_named():
    with pytest.raises(ValueError, match=r"`layer_types`"):
        configs.load({**_hf_config("gpt_oss").to_dict(), "layer_types": ["sliding_attention"]})
    with pytest.raises(ValueError, match=r"`text_config`"):
        configs.load({"model_type": "gemma3", "text_config": 3})
    with pytest.raises(ValueError, match=r"`rope_scaling.high_freq_factor`"):
        configs.load({**_hf_config("llama").to_dict(), "rope_parameters": {
            "rope_type": "llama3", "rope_theta": 1e4, "factor": 8.0, "low_freq_factor": 4.0, "high_freq_factor": 1.0,
            "original_max_position_embeddings": 64}})

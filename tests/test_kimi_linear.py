"""Kimi-Linear (configs.KDA_FAMILIES): Kimi Delta Attention on three of every four layers, MLA on the fourth,
DeepSeek-V3's MoE. Priced, not run (configs.PRICED_ONLY): its config and parameter counts against HF
transformers' model, its cost (the KDA layers flat in the context) and memory (a fixed state beside six
MLA layers' latent cache)."""
import warnings

import pytest

import glmbench
from glmbench.models import configs
from glmbench.predict import costmodel as cm

torch = pytest.importorskip("torch")
transformers = pytest.importorskip("transformers")

TINY = dict(vocab_size=100, pad_token_id=0, bos_token_id=1, eos_token_id=2, hidden_size=64, num_hidden_layers=4,
            num_attention_heads=4, num_key_value_heads=4, kv_lora_rank=32, qk_rope_head_dim=8, qk_nope_head_dim=16,
            v_head_dim=16, linear_head_dim=16, linear_num_heads=4, num_experts=8, num_experts_per_token=2,
            moe_intermediate_size=32, intermediate_size=96, num_expert_group=2, topk_group=1,
            layer_types=["linear_attention", "linear_attention", "full_attention", "linear_attention"],
            mlp_layer_types=["dense", "sparse", "sparse", "sparse"])


def _hf_count(hfcfg):
    with torch.device("meta"), warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return sum(p.numel() for p in transformers.KimiLinearForCausalLM(hfcfg).parameters())


@pytest.mark.parametrize("kw", [TINY, {}], ids=["tiny", "48b-a3b-defaults"])
def test_parameters_equal_hf(kw):
    """total_params counts HF's model plus the routers' e_score_correction_bias (a buffer in HF, stored in
    the checkpoint); the defaults are Kimi-Linear-48B-A3B's: 49.13 B, 3.49 B active (llama.cpp's label
    for its 27 layers: 48B.A3B)."""
    hfcfg = transformers.KimiLinearConfig(**kw)
    cfg = configs.from_hf(hfcfg.to_dict())
    assert cfg.total_params() == _hf_count(hfcfg) + cfg.n_moe_layers * cfg.n_routed_experts
    assert cfg.linear_kind == "kda" and cfg.attention == "mla"
    if not kw:
        assert cfg.cost_shape() == configs.load("kimi-linear-48b-a3b").cost_shape()
        assert round(cfg.total_params() / 1e9, 2) == 49.13 and round(cfg.active_params() / 1e9, 2) == 3.49


def test_builtin_layers_cache_and_state():
    c = configs.load("kimi-linear-48b-a3b")
    assert len(c.linear_layers) == 21 and c.attention_layers == (4, 8, 12, 16, 20, 24) and c.n_kv_layers == 6
    assert c.moe_layers == tuple(range(1, 27)) and (c.n_routed_experts, c.n_experts_per_tok) == (256, 8)
    assert c.kv_bytes_per_token("f16") == 6 * (512 + 64) * 2
    # per KDA layer: q, k, v through one conv of 3 x 32 x 128 channels (K - 1 = 3 kept) and a 128 x 128 state per head
    assert c.recurrent_state_bytes() == 4 * 21 * (3 * 3 * 32 * 128 + 32 * 128 * 128)
    assert c.summary()["family"] == "MoE + MLA + Kimi Delta"
    with pytest.raises(ValueError, match="Kimi Delta Attention"):
        glmbench.Model(c, layers=[0], max_context=16)


def test_cost_flat_in_context_and_weights_exact():
    """The KDA layers' cost does not grow with the depth: Kimi-Linear keeps far more of its depth-0 decode
    rate at 128K than GLM-4.7-Flash (MLA on every layer); the bytes the cost model streams are the
    checkpoint's."""
    kimi = cm.Setup(model="kimi-linear-48b-a3b", rig="h100-sxm", weights="Q4_K_M", runtime="llama.cpp")
    glm = cm.Setup(model="glm-4.7-flash", rig="h100-sxm", weights="Q4_K_M", runtime="llama.cpp")
    keep = lambda s: cm.decode(s, 0).seconds / cm.decode(s, 131072).seconds
    assert keep(kimi) > 0.8 > 0.6 > keep(glm)
    names = {o.name for o in cm.decode(kimi, 1024).ops}
    assert {"lin.in_proj", "lin.gate_up", "lin.conv", "lin.recurrence", "lin.out_proj", "attn.core"} <= names
    c = configs.load("kimi-linear-48b-a3b")
    for w in ("bf16", "q8_0"):
        assert sum(cm._layer_total(c, w)) + sum(v for k, v in cm._weight_table(c, w).items() if k != "layers") \
            == c.weight_bytes(w)
    m0, m1 = cm.memory(kimi, 1024), cm.memory(kimi, 1024 + 8192)
    assert m1.cards[0].kv - m0.cards[0].kv == pytest.approx(8192 * c.kv_bytes_per_token("f16"), rel=1e-6)


def test_bad_fields():
    base = transformers.KimiLinearConfig(**TINY).to_dict()
    with pytest.raises(ValueError, match="layer_types"):
        configs.from_hf({**base, "layer_types": ["linear_attention"] * 3})
    with pytest.raises(ValueError, match="all 4 layers linear"):
        configs.from_hf({**base, "layer_types": ["linear_attention"] * 4})
    with pytest.raises(ValueError, match="mlp_layer_types"):
        configs.from_hf({**base, "mlp_layer_types": ["dense", "moe", "sparse", "sparse"]})
    with pytest.raises(ValueError, match="num_experts_per_token"):
        configs.from_hf({k: v for k, v in base.items() if k != "num_experts_per_token"})


def test_llama_bench_rows_name_the_builtin():
    """llama-bench prints Kimi-Linear's architecture as kimi-linear (src/llama-arch.cpp) and its 27 layers as
    48B.A3B: such a row resolves to the built-in, by its label and by the params count beside it."""
    from glmbench.results import importers as im
    assert im._arch_of("kimi_linear") == "kimi-linear"
    assert im.identify_model("/m/model.gguf", "kimi-linear 48B.A3B Q4_K - Medium")[0] == "kimi-linear-48b-a3b"
    assert im.model_candidates("kimi-linear 48B.A3B Q4_K - Medium", 49.13e9)[0] == ["kimi-linear-48b-a3b"]

"""The Mamba-2 hybrids (configs.MAMBA_FAMILIES: Nemotron-H, Granite 4.0-H): their configs and parameter
counts against HF transformers' models, glmbench.Model's forward pass against HF's tiny models
(logits over a prefill and decode steps), and what the cost model makes of them (a flat state
instead of a growing cache on the Mamba-2 layers)."""
import dataclasses
import warnings

import numpy as np
import pytest

import glmbench
from glmbench.models import configs
from glmbench.predict import costmodel as cm

torch = pytest.importorskip("torch")
transformers = pytest.importorskip("transformers")

NEM = dict(vocab_size=100, hidden_size=64, num_attention_heads=4, num_key_value_heads=2, head_dim=16,
           intermediate_size=96, mamba_num_heads=8, mamba_head_dim=16, n_groups=2, ssm_state_size=8,
           n_routed_experts=8, num_experts_per_tok=2, moe_intermediate_size=32,
           moe_shared_expert_intermediate_size=48, routed_scaling_factor=2.5)
GRAN = dict(vocab_size=100, hidden_size=64, num_attention_heads=4, num_key_value_heads=2, intermediate_size=32,
            shared_intermediate_size=48, num_experts_per_tok=2, mamba_n_heads=8, mamba_d_head=16,
            mamba_n_groups=2, mamba_d_state=8, embedding_multiplier=12.0, residual_multiplier=0.22,
            attention_multiplier=0.0078125, logits_scaling=8.0)


def _nemotron(pattern, **kw):
    return transformers.NemotronHConfig(hybrid_override_pattern=pattern, **{**NEM, **kw}), \
        transformers.NemotronHForCausalLM, "nemotron_h"


def _granite(types, experts, pe="nope", **kw):
    return transformers.GraniteMoeHybridConfig(num_hidden_layers=len(types), layer_types=types,
                                               num_local_experts=experts, position_embedding_type=pe,
                                               **{**GRAN, **kw}), \
        transformers.GraniteMoeHybridForCausalLM, "granitemoehybrid"


def _hf_model(hfcfg, cls):
    torch.manual_seed(0)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        m = cls(hfcfg).eval()
    with torch.no_grad():
        for n, p in m.named_parameters():
            if "A_log" in n or "dt_bias" in n or n.endswith(".D"):
                p.copy_(torch.randn_like(p) * 0.5)
            elif "norm" in n:
                p.copy_(1 + 0.1 * torch.randn_like(p))
            else:
                p.copy_(torch.randn_like(p) * 0.1)
        for n, b in m.named_buffers():
            if "e_score" in n:
                b.copy_(torch.randn_like(b) * 0.1)
    return m


def _config(hfcfg, mt):
    d = hfcfg.to_dict()
    d["model_type"] = mt
    return configs.from_hf(d)


CASES = {
    "nemotron-dense": lambda: _nemotron("M-M*-M"),
    "nemotron-moe": lambda: _nemotron("MEM*EMME"),
    # Nemotron 3 Super's latent MoE: the experts on a 32-wide projection of the 64-wide hidden state
    "nemotron-latent": lambda: _nemotron("MEM*E", moe_latent_size=32),
    "granite-moe": lambda: _granite(["mamba", "attention", "mamba", "mamba"], 4),
    "granite-dense": lambda: _granite(["mamba", "mamba", "attention", "mamba"], 0),
    "granite-rope": lambda: _granite(["mamba", "attention", "mamba"], 4, pe="rope"),
}


@pytest.mark.parametrize("case", list(CASES))
def test_logits_match_hf(case):
    """Prefill 12 tokens, then 5 decode steps carrying the conv and SSM states: every logit row
    within 1e-5 of HF's (relative to the row's largest), f32 weights and cache."""
    hfcfg, cls, mt = CASES[case]()
    m = _hf_model(hfcfg, cls)
    cfg = _config(hfcfg, mt)
    assert cfg.linear_kind == "mamba2" and cfg.linear_layers and not cfg.forward_unsupported()
    sd = {k: v.detach().numpy().astype(np.float32) for k, v in m.state_dict().items()}
    g = glmbench.Model(cfg, sd, weights="f32", kv="f32", max_context=64)
    ids = np.random.default_rng(1).integers(0, hfcfg.vocab_size, 17)
    with torch.no_grad():
        ref = m(torch.tensor(ids[None])).logits[0].numpy()
    got = g.prefill(ids[:12])
    assert np.abs(got - ref[:12]).max() <= 1e-5 * np.abs(ref[:12]).max()
    for j in range(12, 17):
        lg = g.decode(ids[j])
        assert np.abs(lg - ref[j]).max() <= 1e-5 * np.abs(ref[j]).max(), j
    # the Mamba-2 layers hold (conv window, state [heads, head_dim, d_state]); no cache layer of their own
    st = [layer.rstate for layer in g.layers if layer.linear]
    assert all(s[0].shape == (3, cfg.linear_conv_dim) and s[1].shape == (8, 16, 8) for s in st)
    assert g.cache.n_layers == cfg.n_kv_layers == len(cfg.attention_layers)


@pytest.mark.parametrize("case", ["nemotron-moe", "granite-moe"])
def test_reset_and_piecewise_prefill_equal_one_call(case):
    """Prefill in two pieces (the conv window and the SSM state carried) equals one call; logits="last"
    (the last layer's rows after the mixer cut to the last token, as llama.cpp's graphs do) equals the last
    row of "all"."""
    hfcfg, cls, mt = CASES[case]()
    m = _hf_model(hfcfg, cls)
    cfg = _config(hfcfg, mt)
    sd = {k: v.detach().numpy().astype(np.float32) for k, v in m.state_dict().items()}
    g = glmbench.Model(cfg, sd, weights="f32", kv="f32", max_context=64)
    ids = np.arange(20) % hfcfg.vocab_size
    whole = g.prefill(ids)
    g.reset()
    a = g.prefill(ids[:7])
    b = g.prefill(ids[7:])
    np.testing.assert_allclose(np.concatenate([a, b]), whole, rtol=0, atol=2e-5 * np.abs(whole).max())
    g.reset()
    np.testing.assert_allclose(g.prefill(ids, logits="last"), whole[-1], rtol=0, atol=2e-5 * np.abs(whole).max())


@pytest.mark.parametrize("case", list(CASES))
def test_parameter_counts_equal_hf(case):
    """total_params counts what HF's model builds (plus Nemotron-H's e_score_correction_bias, a buffer
    in HF that the checkpoint stores)."""
    hfcfg, cls, mt = CASES[case]()
    with torch.device("meta"), warnings.catch_warnings():
        warnings.simplefilter("ignore")
        n = sum(p.numel() for p in cls(hfcfg).parameters())
    cfg = _config(hfcfg, mt)
    extra = cfg.n_moe_layers * cfg.n_routed_experts if mt == "nemotron_h" else 0
    assert cfg.total_params() == n + extra


@pytest.mark.parametrize("name,total,active,mamba,attn", [
    # the counts the model cards give and llama.cpp's size labels (src/models/nemotron-h.cpp: 52 layers
    # -> 31B.A3.5B, 56 -> 9B; granite-hybrid.cpp: 4096 -> 32B.A9B, 1536 -> 7B.A1B, 2048 -> 3B)
    ("nemotron-3-nano-30b-a3b", 31.6, 3.6, 23, 6),
    ("nemotron-nano-9b-v2", 8.9, 8.9, 27, 4),
    ("nemotron-h-8b", 8.1, 8.1, 24, 4),
    ("granite-4.0-h-small", 32.0, 8.6, 36, 4),
    ("granite-4.0-h-tiny", 6.9, 1.5, 36, 4),
    ("granite-4.0-h-micro", 3.2, 3.2, 36, 4),
])
def test_builtins(name, total, active, mamba, attn):
    c = configs.load(name)
    assert round(c.total_params() / 1e9, 1) == total and round(c.active_params() / 1e9, 1) == active
    assert len(c.linear_layers) == mamba and c.n_kv_layers == attn and c.linear_kind == "mamba2" and c.nope
    # the state: per Mamba-2 layer (K - 1) x conv channels + heads x head_dim x d_state, f32
    per = (c.linear_conv - 1) * c.linear_conv_dim + c.linear_v_heads * c.linear_v_dim * c.linear_k_dim
    assert c.recurrent_state_bytes() == 4 * per * mamba
    assert c.summary()["family"].endswith("+ Mamba-2")


def test_nemotron_blocks_from_pattern_and_lists():
    base = {"model_type": "nemotron_h", "vocab_size": 100, "hidden_size": 64, "num_attention_heads": 4,
            "num_key_value_heads": 2, "head_dim": 16, "mamba_num_heads": 8, "mamba_head_dim": 16, "n_groups": 2,
            "ssm_state_size": 8, "intermediate_size": 96}
    a = configs.from_hf({**base, "hybrid_override_pattern": "M-*-M"})
    b = configs.from_hf({**base, "layers_block_type": ["mamba", "mlp", "attention", "mlp", "mamba"]})
    assert a.cost_shape() == b.cost_shape()
    assert a.mixer_layers == (0, 2, 4) and a.ffn_layers == (1, 3) and a.linear_layers == (0, 4)
    assert a.attention_layers == (2,) and a.n_dense_layers == 2 and not a.mlp_gated
    with pytest.raises(ValueError, match="hybrid_override_pattern"):
        configs.from_hf({**base, "hybrid_override_pattern": "MX*"})
    with pytest.raises(ValueError, match="all 2 layers Mamba-2"):
        configs.from_hf({**base, "hybrid_override_pattern": "MM"})
    lat = configs.from_hf({**base, "hybrid_override_pattern": "M*E", "moe_latent_size": 32, "n_routed_experts": 4,
                           "num_experts_per_tok": 2, "moe_intermediate_size": 16})
    assert lat.expert_input_size == 32 and lat.tensor_shapes()["model.layers.2.mlp.experts.up_proj"] == (4, 16, 32)
    with pytest.raises(ValueError, match="moe_latent_size"):
        configs.from_hf({**base, "hybrid_override_pattern": "M*E", "moe_latent_size": 64, "n_routed_experts": 4,
                         "num_experts_per_tok": 2, "moe_intermediate_size": 16})


def test_granite_bad_fields():
    base = {"model_type": "granitemoehybrid", "vocab_size": 100, "hidden_size": 64, "num_hidden_layers": 2,
            "num_attention_heads": 4, "layer_types": ["mamba", "attention"], "mamba_n_heads": 8, "mamba_d_head": 16,
            "num_local_experts": 0, "shared_intermediate_size": 32}
    assert configs.from_hf(base).intermediate_size == 32
    with pytest.raises(ValueError, match="mamba_expand"):
        configs.from_hf({**base, "mamba_d_head": 8})
    with pytest.raises(ValueError, match="position_embedding_type"):
        configs.from_hf({**base, "position_embedding_type": "alibi"})
    with pytest.raises(ValueError, match="layer_types"):
        configs.from_hf({**base, "layer_types": ["mamba", "sliding"]})


def test_cost_model_state_flat_and_small():
    """The Mamba-2 layers' cost does not grow with the context; only the few attention layers' does:
    Nemotron-3-Nano's decode at 64K keeps far more of its depth-0 rate than Qwen3-30B-A3B's (the same
    size class, every layer attending), and its cache per token is 16x smaller."""
    nem = cm.Setup(model="nemotron-3-nano-30b-a3b", rig="rtx-3090", weights="Q4_K_M", runtime="llama.cpp")
    qwen = cm.Setup(model="qwen3-30b-a3b", rig="rtx-3090", weights="Q4_K_M", runtime="llama.cpp")
    keep = lambda s: cm.decode(s, 0).seconds / cm.decode(s, 65536).seconds
    assert keep(nem) > 0.8 > 0.5 > keep(qwen)
    assert configs.load("qwen3-30b-a3b").kv_bytes_per_token() == 16 * configs.load(
        "nemotron-3-nano-30b-a3b").kv_bytes_per_token()
    d = cm.decode(nem, 4096)
    names = {c.name for c in d.ops}
    assert {"lin.in_proj", "lin.conv", "lin.recurrence", "lin.norm_gate", "lin.out_proj", "norms"} <= names
    # memory: the state is in the cache term and does not depend on the context
    m0, m1 = cm.memory(nem, 1024), cm.memory(nem, 1024 + 4096)
    st = configs.load("nemotron-3-nano-30b-a3b").recurrent_state_bytes()
    grow = m1.cards[0].kv - m0.cards[0].kv
    assert grow == pytest.approx(4096 * configs.load("nemotron-3-nano-30b-a3b").kv_bytes_per_token("f16"), rel=1e-6)
    assert m0.cards[0].kv >= st


def test_cost_model_latent_moe():
    """A latent MoE's experts read latent-wide rows: fewer bytes and FLOPs than the same experts at the
    hidden width, plus the two projections (moe.latent)."""
    base = configs.load("nemotron-3-nano-30b-a3b")
    lat = dataclasses.replace(base, moe_latent_size=1024, name="latent")
    s0, s1 = (cm.Setup(model=c, rig="h100-sxm", weights="bf16", runtime="typical") for c in (base, lat))
    e0, e1 = ({o.name: o for o in cm.decode(s, 0).ops} for s in (s0, s1))
    assert e1["moe.experts"].bytes == pytest.approx(e0["moe.experts"].bytes * 1024 / 2688, rel=0.02)
    assert "moe.latent" in e1 and "moe.latent" not in e0
    assert lat.total_params() - base.total_params() == base.n_moe_layers * (
        base.n_routed_experts * 2 * base.moe_intermediate_size * (1024 - 2688) + 2 * 2688 * 1024)
    assert sum(cm._layer_total(lat, "bf16")) + sum(v for k, v in cm._weight_table(lat, "bf16").items()
                                                    if k != "layers") == lat.weight_bytes("bf16")


def test_cost_model_ungated_mlp_weights():
    """Nemotron-H's MLPs and experts have two matrices: the weight bytes the cost model streams equal
    the checkpoint's, in any format."""
    c = configs.load("nemotron-h-8b")
    for w in ("bf16", "q8_0"):
        assert sum(cm._layer_total(c, w)) + sum(v for k, v in cm._weight_table(c, w).items() if k != "layers") \
            == c.weight_bytes(w)
    assert c.dense_mlp_params() == 2 * 4096 * 21504


def test_random_model_runs_sampled_layers():
    """A built-in runs with random weights on sampled layers (what `measure` builds): one Mamba-2,
    one attention and one MoE block of Nemotron-3-Nano at full width, q8_0."""
    c = configs.load("nemotron-3-nano-30b-a3b")
    layers = [c.linear_layers[0], c.attention_layers[0], c.moe_layers[0]]
    m = glmbench.Model(c, weights="q8_0", layers=layers, max_context=64)
    x = m.prefill(np.arange(5))
    assert x.shape == (5, c.vocab_size) and np.isfinite(x).all()
    m.fill_synthetic(32)
    assert np.isfinite(m.decode(7)).all() and m.n_past == 33

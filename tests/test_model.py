"""glmbench.Model with random weights: shapes, byte counts, seeding, cache consistency, bad input.
(The HF-transformers oracle lives in test_model_hf.py.)"""
import numpy as np
import pytest

import glmbench
from glmbench.models import configs
from glmbench.models.model import Model, build_layer, layer_kinds, to_format


def tiny(name, **over):
    """A built-in config shrunk to test size, keeping its structure (MLA/GQA, MoE, shared experts)."""
    hf = dict(configs.load(name).hf)
    hf.update(vocab_size=96, hidden_size=64, intermediate_size=80, num_attention_heads=4)
    if hf["model_type"] in ("glm4_moe_lite", "deepseek_v2"):
        hf.update(num_key_value_heads=4, kv_lora_rank=32, qk_rope_head_dim=8, qk_nope_head_dim=12, v_head_dim=16,
                  moe_intermediate_size=32, n_routed_experts=8, num_experts_per_tok=2, n_group=1, topk_group=1,
                  num_hidden_layers=3)
        if hf.get("q_lora_rank"):
            hf["q_lora_rank"] = 48
    elif hf["model_type"] == "qwen3_moe":
        hf.update(num_key_value_heads=2, head_dim=16, moe_intermediate_size=32, num_experts=8,
                  num_experts_per_tok=2, num_hidden_layers=2)
    else:
        hf.update(num_key_value_heads=2, head_dim=16, num_hidden_layers=2)
    hf.update(over)
    return configs.load(hf)


NAMES = ["glm-4.7-flash", "deepseek-v2-lite", "qwen3-32b", "qwen3-30b-a3b", "mistral-small-24b", "seed-oss-36b"]


@pytest.mark.parametrize("name", NAMES)
@pytest.mark.parametrize("fmt", ["f32", "bf16"])
def test_random_model_runs_and_counts_its_bytes(name, fmt):
    cfg = tiny(name)
    m = Model(cfg, weights=fmt, kv="f32", max_context=16, seed=1)
    # The arrays held are exactly the checkpoint the config counts (norms/router f32, matrices in fmt).
    assert m.weight_bytes == cfg.weight_bytes(fmt)
    logits = m.prefill(np.arange(5))
    assert logits.shape == (5, cfg.vocab_size) and logits.dtype == np.float32
    assert np.all(np.isfinite(logits))
    one = m.decode(7)
    assert one.shape == (cfg.vocab_size,) and np.all(np.isfinite(one))
    assert m.n_past == 6
    assert len(m.last_timing["layer_s"]) == cfg.n_layers
    for layer in m.layers:  # one decoded token runs exactly its top-k experts in each MoE layer
        if layer.kind == "moe":
            assert layer.last_counts.sum() == cfg.n_experts_per_tok
            assert np.count_nonzero(layer.last_counts) == cfg.n_experts_per_tok


def test_prefill_then_decode_equals_one_prefill():
    """The cache carries the context: prefill(p) + decode(t) == prefill(p + [t]) on the last token."""
    for name in ("glm-4.7-flash", "qwen3-32b"):
        cfg = tiny(name)
        m = Model(cfg, max_context=16, seed=3, weights="f32", kv="f32")
        whole = m.prefill(np.array([5, 9, 2, 7, 1]))
        m.reset()
        assert m.n_past == 0
        m.prefill(np.array([5, 9, 2, 7]))
        last = m.decode(1)
        np.testing.assert_allclose(last, whole[-1], rtol=1e-5, atol=1e-5 * np.abs(whole).max())


def test_seeded_weights_are_per_tensor():
    cfg = tiny("glm-4.7-flash")
    a = Model(cfg, seed=5, weights="bf16", max_context=8, kv="f32")
    b = Model(cfg, seed=5, weights="bf16", max_context=8, kv="f32")
    c = Model(cfg, seed=6, weights="bf16", max_context=8, kv="f32")
    for la, lb, lc in zip(a.layers, b.layers, c.layers):
        for k in la.w:
            np.testing.assert_array_equal(la.w[k], lb.w[k])
        assert any(not np.array_equal(la.w[k], lc.w[k]) for k in la.w if la.w[k].ndim > 1)
    # a layer built alone is the same layer as in the full model (layer sampling relies on it)
    alone = build_layer(cfg, 2, "bf16", seed=5)
    assert alone.kind == "moe"
    for k in alone.w:
        np.testing.assert_array_equal(alone.w[k], a.layers[2].w[k])
    # the bias draws differ from zero so routing depends on them
    assert np.abs(alone.w["mlp.gate.e_score_correction_bias"]).max() > 0.01


def test_activations_stay_at_unit_scale_through_many_layers():
    cfg = tiny("qwen3-32b", num_hidden_layers=24)
    m = Model(cfg, max_context=8, seed=0, weights="f32", kv="f32")
    x = m.embed_tokens(np.arange(4))
    x = m.forward_layers(x, np.arange(4))
    rms = float(np.sqrt(np.mean(x.astype(np.float64) ** 2)))
    # pre-norm residual stream: 48 unit-scale additions grow it like sqrt(48) ~ 7, not exponentially
    assert 0.5 < rms < 50, rms


def test_sampled_model_builds_only_its_layers():
    cfg = tiny("glm-4.7-flash", num_hidden_layers=6)
    assert layer_kinds(cfg) == ["dense"] + ["moe"] * 5
    full = Model(cfg, max_context=64, seed=2, weights="f32", kv="f32")
    part = Model(cfg, layers=[0, 2, 5], max_context=64, seed=2, weights="f32", kv="f32")
    assert part.sampled and not full.sampled
    assert part.cache.n_layers == 3
    assert [l.index for l in part.layers] == [0, 2, 5]
    for k, v in part.layers[1].w.items():
        np.testing.assert_array_equal(v, full.layers[2].w[k])
    part.fill_synthetic(40)
    assert part.n_past == 40
    assert np.all(np.isfinite(part.decode(3)))
    assert part.n_past == 41
    with pytest.raises(ValueError, match=r"`layers` must be distinct indices in \[0, 6\)"):
        Model(cfg, layers=[0, 6], weights="f32", kv="f32")


def test_bf16_rounding_is_nearest_even():
    a = np.array([1.0, 1.0 + 2 ** -8, 1.0 + 3 * 2 ** -8, -2.5, np.inf, 3.0e38], np.float32)
    got = to_format(a, "bf16")
    # 1+2^-8 is halfway between bf16 1.0 and 1+2^-7: ties go to the even mantissa (1.0);
    # 1+3*2^-8 is halfway between 1+2^-7 and 1+2^-6: ties go to 1+2^-6 (even).
    want = np.array([0x3F80, 0x3F80, 0x3F82, 0xC020, 0x7F80, 0x7F62], np.uint16)
    np.testing.assert_array_equal(got, want)
    assert to_format(np.array([np.nan], np.float32), "bf16")[0] & 0x7FFF > 0x7F80


def test_hf_weights_wrong_or_missing():
    cfg = tiny("qwen3-32b")
    src = Model(cfg, max_context=8, seed=0, weights="f32", kv="f32")
    w = {"model.embed_tokens.weight": src.embed, "lm_head.weight": src.lm_head, "model.norm.weight": src.final_norm}
    for l in src.layers:
        w.update({f"model.layers.{l.index}.{k}": v for k, v in l.w.items()})
    m = Model(cfg, state_dict=w, max_context=8, weights="f32", kv="f32")
    np.testing.assert_array_equal(m.prefill([1, 2]), src.prefill([1, 2]))
    # bf16 bits given for an f32 model are widened, not cast as integers
    w16 = {k: (to_format(v, "bf16") if v.ndim == 2 else v) for k, v in w.items()}
    m16 = Model(cfg, state_dict=w16, weights="f32", max_context=8, kv="f32")
    assert m16.layers[0].w["self_attn.q_proj.weight"].dtype == np.float32
    np.testing.assert_allclose(m16.layers[0].w["self_attn.q_proj.weight"], w["model.layers.0.self_attn.q_proj.weight"],
                               rtol=2 ** -8)
    with pytest.raises(TypeError, match=r"weight 'model.norm.weight' must be a float array .* got int64"):
        Model(cfg, state_dict=dict(w, **{"model.norm.weight": np.ones(64, np.int64)}), weights="f32", kv="f32")
    bad = dict(w)
    del bad["model.layers.1.self_attn.k_proj.weight"]
    with pytest.raises(ValueError, match=r"`state_dict` lacks 'model.layers.1.self_attn.k_proj.weight'"):
        Model(cfg, state_dict=bad, weights="f32", kv="f32")
    bad = dict(w, **{"model.layers.0.mlp.up_proj.weight": np.zeros((3, 3), np.float32)})
    with pytest.raises(ValueError, match=r"'model.layers.0.mlp.up_proj.weight' has shape \(3, 3\), expected \(80, 64\)"):
        Model(cfg, state_dict=bad, weights="f32", kv="f32")
    with pytest.raises(TypeError, match="`state_dict` must be None or a dict"):
        Model(cfg, state_dict=[1, 2], weights="f32", kv="f32")


def test_bad_arguments():
    cfg = tiny("qwen3-32b")
    with pytest.raises(ValueError, match="`weights` must be one of .* got 'q3'"):
        Model(cfg, weights="q3", kv="f32")
    with pytest.raises(ValueError, match="`mla_strategy` must be one of .* got 'fast'"):
        Model(cfg, mla_strategy="fast", weights="f32", kv="f32")
    with pytest.raises(ValueError, match="`max_context` must be a positive int, got 0"):
        Model(cfg, max_context=0, weights="f32", kv="f32")
    m = Model(cfg, max_context=6, weights="f32", kv="f32")
    toks = np.array([1, 2, 3])
    with pytest.raises(ValueError, match=r"`tokens`\[1\] = 96 is outside the vocabulary \[0, 96\)"):
        m.prefill([1, 96])
    with pytest.raises(TypeError, match="`tokens` must be integers, got float64"):
        m.prefill([1.0, 2.0])
    with pytest.raises(ValueError, match="non-empty 1-D"):
        m.prefill([])
    with pytest.raises(ValueError, match="single token id, got 2 tokens"):
        m.decode([1, 2])
    m.prefill(toks)
    np.testing.assert_array_equal(toks, [1, 2, 3])
    with pytest.raises(ValueError, match="context full: the cache holds 3 of max_context=6 tokens, cannot add 4"):
        m.prefill([1, 2, 3, 4])
    assert m.n_past == 3  # a refused call leaves the cache as it was
    with pytest.raises(ValueError, match="`logits` must be 'all' or 'last'"):
        m.prefill([1], logits="first")


def test_builtin_names_and_package_export():
    assert glmbench.Model is Model
    m = Model(tiny("deepseek-v2-lite"), weights="f16", max_context=8, kv="f32")
    assert m.layers[0].kind == "dense" and m.layers[1].kind == "moe"
    assert m.layers[1].w["mlp.experts.gate_proj"].dtype == np.float16
    assert m.layers[1].w["mlp.gate.weight"].dtype == np.float32  # routers stay f32
    assert "q_proj.weight" in m.layers[0].attn  # DeepSeek-V2-Lite has no q_lora


@pytest.mark.parametrize("name,fmt", [("glm-4.7-flash", "f32"), ("qwen3-32b", "f32"), ("qwen3-30b-a3b", "bf16"),
                                      ("gemma-3-4b", "f32"), ("glm-4.7-flash", "q4_0"), ("qwen3-32b", "q8_0")])
def test_last_logits_skip_the_last_layers_other_rows(name, fmt, monkeypatch):
    """prefill(logits="last") runs the last layer's feed-forward part on the last row only (as llama.cpp's
    inp_out_ids): the same logits as the whole prefill's last row, the same cache (the next step agrees),
    and the last layer was asked for one row, the others for all (C layer and Python-op paths)."""
    over = dict(layer_types=["sliding_attention", "full_attention", "sliding_attention"], sliding_window=4) if "gemma" in name else {}
    cfg = tiny(name, num_hidden_layers=3, **over)
    toks = np.array([5, 9, 2, 7, 1, 3, 8])
    m = Model(cfg, max_context=16, seed=3, weights=fmt, kv="f32")
    whole = m.prefill(toks)
    nxt_whole = m.decode(4)
    m.reset()
    from glmbench.models import model as mm
    seen, fwd = [], mm.Layer.forward

    def spy(self, x, *a, n_out=None, **k):
        seen.append((self.index, int(x.shape[0]), n_out))
        y = fwd(self, x, *a, n_out=n_out, **k)
        assert y.shape[0] == (x.shape[0] if n_out is None else n_out)
        return y
    monkeypatch.setattr(mm.Layer, "forward", spy)
    last = m.prefill(toks, logits="last")
    assert seen == [(0, 7, None), (1, 7, None), (2, 7, 1)]
    np.testing.assert_allclose(last, whole[-1], rtol=2e-5, atol=2e-5 * np.abs(whole[-1]).max())
    assert m.n_past == toks.size
    np.testing.assert_allclose(m.decode(4), nxt_whole, rtol=2e-5, atol=2e-5 * np.abs(nxt_whole).max())


def test_a_sampled_model_runs_its_last_built_layer_whole(monkeypatch):
    """A sampled model's last built layer stands for a middle layer: it is timed whole."""
    cfg = tiny("qwen3-32b", num_hidden_layers=4)
    m = Model(cfg, max_context=16, seed=3, weights="f32", kv="f32", layers=[0, 2])
    from glmbench.models import model as mm
    seen, fwd = [], mm.Layer.forward
    monkeypatch.setattr(mm.Layer, "forward", lambda self, x, *a, n_out=None, **k: (seen.append(n_out), fwd(self, x, *a, n_out=n_out, **k))[1])
    m.prefill(np.arange(5), logits="last")
    assert seen == [None, None]


def test_layer_n_out_bad_values():
    cfg = tiny("glm-4.7-flash")
    m = Model(cfg, max_context=16, seed=3, weights="f32", kv="f32")
    x = np.zeros((3, cfg.hidden_size), np.float32)
    for bad in (0, 4, -1, True, 1.5):
        with pytest.raises(ValueError, match="n_out"):
            m.layers[0].forward(x, m.cache, 0, np.arange(3), n_out=bad)
    assert m.n_past == 0  # refused before anything was appended
    from glmbench.core import _core
    plan = m.layers[0]._c_plan()
    for bad in (0, 4, -2):
        with pytest.raises(ValueError, match="n_out"):
            _core.layer_forward(plan, x, m.cache, 0, np.arange(3, dtype=np.int64), "flash", bad)
    y, _ = _core.layer_forward(plan, x, m.cache, 0, np.arange(3, dtype=np.int64), "flash", 2)
    assert y.shape == (2, cfg.hidden_size)


@pytest.mark.parametrize("name", ["gemma-3-4b", "gpt-oss-20b"])
def test_last_logits_with_windows_chunked(name):
    """A windowed model prefilled in window_chunk pieces: each piece's last layer keeps one row, the
    logits and the cache as the whole prefill's."""
    over = dict(layer_types=["sliding_attention", "full_attention", "sliding_attention"], sliding_window=4,
                num_hidden_layers=3)
    if "gpt-oss" in name:
        over.update(num_local_experts=4, num_experts_per_tok=2)
    cfg = tiny(name, **over)
    toks = np.array([5, 9, 2, 7, 1, 3, 8, 6, 0])
    m = Model(cfg, max_context=16, seed=3, weights="f32", kv="f32", window_chunk=4)
    whole = m.prefill(toks)
    nxt = m.decode(4)
    m.reset()
    last = m.prefill(toks, logits="last")
    np.testing.assert_allclose(last, whole[-1], rtol=2e-5, atol=2e-5 * np.abs(whole[-1]).max())
    np.testing.assert_allclose(m.decode(4), nxt, rtol=2e-5, atol=2e-5 * np.abs(nxt).max())

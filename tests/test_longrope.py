"""LongRoPE (rope_type "longrope": Phi-3-mini-128k, Phi-3.5-mini, Phi-4-mini, Phi-3.5-MoE) in glmbench.Model:
the frequencies against transformers 5.25's own `_compute_longrope_parameters` and the float64 reference rope,
whole tiny Phi-3 / Phi-4-mini-shaped (partial rotary) / Phi-3.5-MoE models against HF's logits in both regimes
(a sequence within original_max_position_embeddings: the short factors; past it: the long ones), a cache that
grows across the boundary, GGUF files holding the factor tensors, and malformed fields.
ModelConfig.longrope's docstring states how the factors are picked."""
import json
import math
import warnings

import numpy as np
import pytest

from glmbench.models import configs, gguf_file

N6 = 6   # tiny Phi-3: head_dim 16 x partial_rotary_factor 0.75 = 12 rotated dims, 6 pairs
_rng = np.random.default_rng(5)
SHORT6 = [round(float(x), 4) for x in 1 + _rng.random(N6)]
LONG6 = [round(float(x), 4) for x in 2 + 6 * _rng.random(N6)]
SHORT8 = [round(float(x), 4) for x in 1 + _rng.random(8)]
LONG8 = [round(float(x), 4) for x in 2 + 6 * _rng.random(8)]
ORIG = 8    # original_max_position_embeddings of the tiny configs: a 12-token prompt is past it

PHI3 = dict(model_type="phi3", vocab_size=160, hidden_size=64, intermediate_size=96, num_hidden_layers=2,
            num_attention_heads=4, num_key_value_heads=2, rms_norm_eps=1e-5, sliding_window=None,
            max_position_embeddings=64, original_max_position_embeddings=ORIG, partial_rotary_factor=0.75,
            rope_scaling={"rope_type": "longrope", "short_factor": SHORT6, "long_factor": LONG6})


def _cfg(**over):
    d = json.loads(json.dumps(PHI3))
    rs = over.pop("rope_scaling", None)
    d.update(over)
    if rs is not None:
        d["rope_scaling"] = {**d["rope_scaling"], **rs}
    return configs.from_hf(d, "tiny-longrope")


# ---- the config: frequencies, attention factor, regimes, errors -------------------------------------------------
def test_longrope_frequencies_and_attention_factor():
    c = _cfg()
    assert c.rope_type == "longrope" and c.rope_dim == 12 and c.forward_unsupported() == []
    lr = c.longrope
    plain = 10000.0 ** (-np.arange(0, 12, 2) / 12)
    np.testing.assert_allclose(lr.short_inv_freq, plain / np.array(SHORT6), rtol=1e-15)
    np.testing.assert_allclose(lr.long_inv_freq, plain / np.array(LONG6), rtol=1e-15)
    # HF: attention_factor sqrt(1 + ln(s) / ln(original)), s = max_position_embeddings / original = 8
    af = math.sqrt(1 + math.log(64 / ORIG) / math.log(ORIG))
    assert lr.original == ORIG and lr.short_attention_factor == lr.long_attention_factor == pytest.approx(af)
    # rope_inv_freq / rope_attention_factor: the short set (what a call with no sequence length turns by)
    assert c.rope_inv_freq() is lr.short_inv_freq and c.rope_attention_factor() == pytest.approx(af)
    # the regime by the sequence length: at most `original` tokens short, more long
    assert not c.rope_long(None) and not c.rope_long(ORIG) and c.rope_long(ORIG + 1)
    assert c.layer_rope(0, ORIG)["inv_freq"] is lr.short_inv_freq
    assert c.layer_rope(1, ORIG + 1)["inv_freq"] is lr.long_inv_freq
    assert c.layer_rope(1)["inv_freq"] is lr.short_inv_freq
    # rope_scaling's own factor, then its attention_factor, win over the ratio
    assert _cfg(rope_scaling={"factor": 4.0}).longrope.short_attention_factor == \
        pytest.approx(math.sqrt(1 + math.log(4.0) / math.log(ORIG)))
    assert _cfg(rope_scaling={"factor": 4.0, "attention_factor": 1.25}).longrope.long_attention_factor == 1.25
    assert _cfg(max_position_embeddings=ORIG).longrope.short_attention_factor == 1.0   # no extension: 1
    # the top-level original_max_position_embeddings wins over rope_scaling's (HF standardize_rope_params)
    assert _cfg(rope_scaling={"original_max_position_embeddings": 32}).longrope.original == ORIG
    d = json.loads(json.dumps(PHI3))
    d.pop("original_max_position_embeddings")
    d["rope_scaling"]["original_max_position_embeddings"] = 32
    assert configs.from_hf(d).longrope.original == 32
    # Phi-3's older names for it (HF Phi3Config: "su", "yarn")
    for t in ("su", "yarn"):
        d = json.loads(json.dumps(PHI3))
        d["rope_scaling"] = {"type": t, "short_factor": SHORT6, "long_factor": LONG6}
        assert configs.from_hf(d).rope_type == "longrope"
    # Phi-3.5-MoE: short_mscale / long_mscale by the regime (HF PhimoeRotaryEmbedding); Phi-3 ignores them
    m = dict(PHI3, model_type="phimoe", num_local_experts=4, num_experts_per_tok=2, partial_rotary_factor=1.0,
             rope_scaling={"rope_type": "longrope", "short_factor": SHORT8, "long_factor": LONG8,
                           "short_mscale": 1.1, "long_mscale": 1.3})
    lm = configs.from_hf(m).longrope
    assert (lm.short_attention_factor, lm.long_attention_factor) == (1.1, 1.3)
    assert _cfg(rope_scaling={"short_mscale": 1.1, "long_mscale": 1.3}).longrope.long_attention_factor == \
        pytest.approx(af)


def test_longrope_pricing_ignores_it():
    """The cost model does not read the rope: a longrope config prices as the same model with plain rope."""
    from glmbench.predict import costmodel as cm
    c = _cfg()
    plain = configs.from_hf({k: v for k, v in PHI3.items() if k != "rope_scaling"})
    assert c.total_params() == plain.total_params() and c.kv_bytes_per_token() == plain.kv_bytes_per_token()
    assert cm.decode(cm.Setup(c, "rtx-3090"), 100).tok_s == cm.decode(cm.Setup(plain, "rtx-3090"), 100).tok_s


@pytest.mark.parametrize("change,match", [
    ({"rope_scaling": {"short_factor": SHORT6[:5]}}, r"`rope_scaling.short_factor` has 5 factors; the 12 rotated dims "
                                                     r"\(head_dim x partial_rotary_factor\) need 6"),
    ({"rope_scaling": {"long_factor": LONG6 + [1.0, 1.0]}}, r"`rope_scaling.long_factor` has 8 factors"),
    # a 16-dim head rotated whole needs 8 (Phi-3.5-mini's 48 are its 96-dim head's)
    ({"partial_rotary_factor": 1.0}, r"`rope_scaling.short_factor` has 6 factors; the 16 rotated dims"),
    ({"rope_scaling": {"long_factor": LONG6[:5] + [float("nan")]}}, r"`rope_scaling.long_factor` must hold finite "
                                                                   r"factors > 0, got \[nan\]"),
    ({"rope_scaling": {"short_factor": SHORT6[:5] + [float("inf")]}}, r"`rope_scaling.short_factor` must hold finite"),
    ({"rope_scaling": {"short_factor": SHORT6[:5] + [0.0]}}, r"`rope_scaling.short_factor` must hold finite"),
    ({"rope_scaling": {"short_factor": None}}, r"`rope_scaling.short_factor` must be a list of numbers, got None"),
    ({"rope_scaling": {"long_factor": SHORT6[:5] + ["2"]}}, r"`rope_scaling.long_factor` must be a list of numbers"),
    ({"original_max_position_embeddings": None}, r"`original_max_position_embeddings` is missing"),
    ({"original_max_position_embeddings": 0}, r"`original_max_position_embeddings` must be a positive integer"),
    ({"original_max_position_embeddings": 8.5}, r"`original_max_position_embeddings` must be a positive integer"),
    ({"rope_scaling": {"attention_factor": float("nan")}}, r"`rope_scaling.attention_factor` must be a finite number"),
    ({"rope_scaling": {"factor": -2.0}}, r"`rope_scaling.factor` must be a finite number > 0"),
])
def test_bad_longrope_fields_fail_at_load(change, match):
    with pytest.raises(ValueError, match=match):
        _cfg(**change)


def test_bad_phimoe_mscales_and_other_families():
    m = dict(PHI3, model_type="phimoe", num_local_experts=4, num_experts_per_tok=2, partial_rotary_factor=1.0,
             rope_scaling={"rope_type": "longrope", "short_factor": SHORT8, "long_factor": LONG8, "short_mscale": 1.1})
    with pytest.raises(ValueError, match=r"`rope_scaling.long_mscale` must be a finite number > 0, got None"):
        configs.from_hf(m)
    # another family's longrope: priced (its fields not read), refused by Model's forward
    # (whole heads: a partial_rotary_factor is refused for llama, whose HF rope turns the whole head)
    lc = configs.from_hf(dict(PHI3, model_type="llama", head_dim=16, partial_rotary_factor=1.0,
                              rope_scaling={"rope_type": "longrope"}))
    assert lc.total_params() > 0
    assert any("rope_type 'longrope' outside phi3 / phimoe" in s for s in lc.forward_unsupported())


# ---- the rope op: glmbench's frequencies turned by ops.rope against the float64 reference and HF's functions ------
def test_longrope_rope_matches_reference_and_hf():
    from glmbench.core import ops, reference
    torch = pytest.importorskip("torch")
    transformers = pytest.importorskip("transformers")
    from transformers.modeling_rope_utils import _compute_longrope_parameters
    c = _cfg()
    hc = transformers.AutoConfig.for_model("phi3", **{k: v for k, v in PHI3.items() if k not in ("model_type",)})
    rng = np.random.default_rng(0)
    x = rng.standard_normal((20, 4, 16)).astype(np.float32)
    for seq_len in (ORIG, ORIG + 1, 20):
        rot = c.layer_rope(0, seq_len)
        pos = np.arange(seq_len - 4, seq_len)
        got = ops.rope(np.ascontiguousarray(x[:4]), pos, **rot)
        want = reference.rope(x[:4], pos, **rot)
        np.testing.assert_allclose(got, want, rtol=0, atol=2e-5 * np.abs(want).max())
        # HF's own frequencies and attention factor for this sequence length (float32 there)
        inv, af = _compute_longrope_parameters(hc, seq_len=seq_len)
        np.testing.assert_allclose(rot["inv_freq"], inv.double().numpy(), rtol=1e-6)
        assert rot["attention_factor"] == pytest.approx(af, rel=1e-12)
        # and HF's rotary module itself (the factors switched by max(position_ids) + 1), applied as Phi-3 does
        from transformers.models.phi3 import modeling_phi3 as mp
        emb = mp.Phi3RotaryEmbedding(hc)
        cos, sin = emb(torch.zeros(1), torch.arange(seq_len)[None])
        q = torch.from_numpy(x[:seq_len].transpose(1, 0, 2)[None].copy())
        hq, _ = mp.apply_rotary_pos_emb(q, q, cos, sin)
        ours = ops.rope(np.ascontiguousarray(x[:seq_len]), np.arange(seq_len), **rot)
        np.testing.assert_allclose(ours, hq[0].numpy().transpose(1, 0, 2), rtol=0, atol=1e-4 * np.abs(ours).max())


# ---- whole models against HF ---------------------------------------------------------------------------------------
def _tiny(model_type, seed=0, **over):
    from test_model_hf import tiny_hf_model
    return tiny_hf_model(model_type, seed=seed, **over)


def _phi3_over(prf=0.75, **kw):
    n = int(16 * prf) // 2
    short, long_ = (SHORT6, LONG6) if n == N6 else (SHORT8, LONG8)
    return dict(rope_parameters={"rope_type": "longrope", "rope_theta": 10000.0, "partial_rotary_factor": prf,
                                 "short_factor": short, "long_factor": long_},
                max_position_embeddings=64, original_max_position_embeddings=ORIG, **kw)


def _run(hf, cfg, prompt, steps, **model_kw):
    import glmbench
    from test_model_hf import glm_logits, hf_logits, rel_err
    m = glmbench.Model(cfg, state_dict={k: v.numpy() for k, v in hf.state_dict().items()}, weights="f32", kv="f32",
                       **{"max_context": 64, **model_kw})
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        got = glm_logits(m, prompt, steps)
    want = hf_logits(hf, prompt, steps)
    return m, [rel_err(a, b) for a, b in zip(got, want)], [w for w in caught if issubclass(w.category, UserWarning)
                                                           and "longrope" in str(w.message)]


PROMPTS = {"short": (6, 2), "long": (12, 3), "crossing": (6, 5)}


@pytest.mark.slow
@pytest.mark.parametrize("regime", list(PROMPTS))
@pytest.mark.parametrize("shape", ["phi-4-mini", "phi-3.5-mini"])
def test_phi3_longrope_logits_match_hf(shape, regime):
    """Phi-4-mini's shape (partial rotary 0.75, tied embeddings) and Phi-3.5-mini's (the whole head rotated): a
    prompt within original_max_position_embeddings (8) and its decode steps on the short factors, a 12-token prompt
    on the long ones, and a cache growing across the boundary (6 tokens, then 5 decode steps: HF's forward with
    that cache keeps the short-turned keys, as glmbench does, which warns) all within 1e-4 of HF's logits; the
    C layer runs (a second plan with the long factors)."""
    from test_model_hf import RTOL
    over = _phi3_over(0.75, tie_word_embeddings=True) if shape == "phi-4-mini" else _phi3_over(1.0)
    hc, hf = _tiny("phi3", **over)
    cfg = configs.load(hc.to_dict())
    assert cfg.rope_type == "longrope" and cfg.rope_dim == (12 if shape == "phi-4-mini" else 16)
    rng = np.random.default_rng(11)
    n_prompt, n_steps = PROMPTS[regime]
    prompt, steps = rng.integers(0, 160, n_prompt).tolist(), rng.integers(0, 160, n_steps).tolist()
    m, errs, warned = _run(hf, cfg, prompt, steps)
    assert max(errs) < RTOL, errs
    assert m.layers[0].runs_in_c(1)
    assert (m.layers[0]._plan_long is not None) == (regime != "short")
    assert len(warned) == (regime == "crossing")
    if regime == "crossing":
        assert "cached keys stay turned by the short ones" in str(warned[0].message)
    # the long factors matter: the same model with the short ones everywhere is far off past the boundary
    if regime != "short":
        short_only = configs.load({**hc.to_dict(), "rope_parameters": {
            **hc.to_dict()["rope_parameters"], "long_factor": hc.to_dict()["rope_parameters"]["short_factor"]}})
        _, errs2, _ = _run(hf, short_only, prompt, steps)
        assert max(errs2) > 100 * RTOL


@pytest.mark.slow
def test_crossing_then_rerun_is_generates_result():
    """What HF's generate() does at the boundary (drop the cache, run the whole sequence on the long factors):
    Model.reset() and a prefill of every token give HF's logits of that whole sequence; a windowed prefill split
    in window_chunk pieces turns all of them by the whole call's regime (as HF's one call does)."""
    import glmbench
    import torch
    from test_model_hf import RTOL, rel_err
    hc, hf = _tiny("phi3", **_phi3_over(0.75, sliding_window=32))
    cfg = configs.load(hc.to_dict())
    w = {k: v.numpy() for k, v in hf.state_dict().items()}
    toks = np.random.default_rng(2).integers(0, 160, 12)
    m = glmbench.Model(cfg, state_dict=w, weights="f32", kv="f32", max_context=64, window_chunk=4)
    m.prefill(toks[:6])
    with pytest.warns(glmbench.models.model.LongRopeCrossing, match="reset"):
        for t in toks[6:]:
            m.decode(int(t))
    m.reset()
    got = m.prefill(toks)     # 12 tokens in 3 pieces of 4: every piece on the long factors
    with torch.no_grad():
        want = hf(torch.tensor([toks.tolist()])).logits[0].numpy()
    assert rel_err(got, want) < RTOL


def _phimoe_over(**kw):
    return dict(rope_parameters={"rope_type": "longrope", "rope_theta": 10000.0, "short_factor": SHORT8,
                                 "long_factor": LONG8, "short_mscale": 1.1, "long_mscale": 1.3,
                                 "original_max_position_embeddings": ORIG},
                max_position_embeddings=64, sliding_window=None, **kw)


def _hf_phimoe_long_factors(hf):
    """HF's Phi-3.5-MoE with its rotary embedding turning by the frequencies transformers' longrope update picks
    (the long ones past original_max_position_embeddings), as the released model's own code does: transformers 5.25's
    PhimoeRotaryEmbedding.forward recomputes them with no sequence length (the short ones, always)."""
    rot = hf.model.rotary_emb
    rot.rope_init_fn = lambda config, *a, **k: (rot.inv_freq.clone(), rot.attention_scaling)
    return hf


@pytest.mark.slow
@pytest.mark.parametrize("regime", list(PROMPTS))
def test_phimoe_longrope_logits(regime):
    """Phi-3.5-MoE with longrope: within original_max_position_embeddings glmbench matches transformers 5.25's
    logits (short factors, short_mscale); past it glmbench turns by the long factors with long_mscale, as the
    released model's code and llama.cpp do, and matches HF with its rotary embedding doing so, while unpatched
    transformers 5.25 (short factors with long_mscale) differs: stated in ModelConfig.longrope."""
    from test_model_hf import RTOL
    hc, hf = _tiny("phimoe", **_phimoe_over())
    cfg = configs.load(hc.to_dict())
    assert cfg.rope_type == "longrope" and cfg.forward_unsupported() == []
    assert (cfg.longrope.short_attention_factor, cfg.longrope.long_attention_factor) == (1.1, 1.3)
    rng = np.random.default_rng(4)
    n_prompt, n_steps = PROMPTS[regime]
    prompt, steps = rng.integers(0, 160, n_prompt).tolist(), rng.integers(0, 160, n_steps).tolist()
    _, errs, warned = _run(hf, cfg, prompt, steps)
    if regime == "short":
        assert max(errs) < RTOL, errs
    else:   # HF 5.25 as it is: the short factors past the boundary
        assert max(errs) > 100 * RTOL, errs
    _, errs, _ = _run(_hf_phimoe_long_factors(hf), cfg, prompt, steps)
    assert max(errs) < RTOL, errs
    assert len(warned) == (regime == "crossing")


# ---- GGUF: the factor tensors feed the config ------------------------------------------------------------------
def _phimoe_gguf(path, hc, m, attn_factor=None, drop=()):
    gguf = pytest.importorskip("gguf")
    import gguf_writer   # (imports gguf)
    cfg = configs.from_hf(hc.to_dict(), "hf")
    sd = gguf_writer.hf_tensors(hc, m.state_dict())
    sd = {k.replace(".mlp.router.", ".mlp.gate."): v for k, v in sd.items()}
    w = gguf.GGUFWriter(path, "phimoe")
    meta = {**gguf_writer.gqa_meta(cfg), "expert_count": 8, "expert_used_count": 2,
            "rope.scaling.original_context_length": ORIG}
    if attn_factor is not None:
        meta["rope.scaling.attn_factor"] = attn_factor
    gguf_writer.add_metadata(w, "phimoe", meta)
    for name in cfg.tensor_shapes():
        w.add_tensor(gguf_file.gguf_name(name, "phimoe", cfg.n_layers), np.ascontiguousarray(sd[name], np.float32))
    # as conversion/phi.py Phi3MiniModel.generate_extra_tensors (PhiMoeModel inherits it) writes them
    for n, f in (("rope_factors_long.weight", LONG8), ("rope_factors_short.weight", SHORT8)):
        if n not in drop:
            w.add_tensor(n, np.asarray(f, np.float32))
    gguf_writer.finish(w)
    return cfg


@pytest.mark.slow
def test_phimoe_gguf_with_rope_factors(tmp_path):
    """A Phi-3.5-MoE GGUF as llama.cpp's converter lays one out, with its rope_factors_long / _short tensors and
    rope.scaling.attn_factor: the factors and the attention factor read into the config (their bytes the file's
    extra bytes, not weights), and glmbench runs it with HF's logits in both regimes (HF holding the file's
    attention factor as its mscales, its rotary embedding on the regime's factors)."""
    pytest.importorskip("gguf")
    from glmbench.models import checkpoint
    from test_model_hf import RTOL
    af = math.sqrt(1 + math.log(64 / ORIG) / math.log(ORIG))    # what the converter writes
    # (the sparsemixer's band: HF's default 0.01, which no GGUF key states)
    _, hf = _tiny("phimoe", **_phimoe_over(router_jitter_noise=0.01))
    hf.config.rope_parameters.update(short_mscale=float(np.float32(af)), long_mscale=float(np.float32(af)))
    p = str(tmp_path / "phimoe-longrope.gguf")
    cfg = _phimoe_gguf(p, hf.config, hf, attn_factor=af)
    gc = configs.load(p)
    assert gc.rope_type == "longrope" and gc.longrope.original == ORIG
    np.testing.assert_allclose(gc.longrope.long_inv_freq, cfg.longrope.long_inv_freq, rtol=1e-6)
    assert gc.longrope.short_attention_factor == pytest.approx(af, rel=1e-6)
    assert gc.total_params() == cfg.total_params()
    g = gguf_file.read(p)
    assert gc.file_weights.extra_bytes == 2 * 8 * 4 == \
        g.tensors["rope_factors_long.weight"].n_bytes + g.tensors["rope_factors_short.weight"].n_bytes
    _hf_phimoe_long_factors(hf)
    rng = np.random.default_rng(8)
    for n_prompt, n_steps in PROMPTS.values():
        prompt, steps = rng.integers(0, 160, n_prompt).tolist(), rng.integers(0, 160, n_steps).tolist()
        gm = checkpoint.load_model(p, kv="f32", max_context=64)
        from test_model_hf import glm_logits, hf_logits, rel_err
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            errs = [rel_err(a, b) for a, b in zip(glm_logits(gm, prompt, steps), hf_logits(hf, prompt, steps))]
        assert max(errs) < RTOL, (n_prompt, errs)


def test_gguf_longrope_errors(tmp_path):
    pytest.importorskip("gguf")
    torch = pytest.importorskip("torch")
    transformers = pytest.importorskip("transformers")
    hc = transformers.AutoConfig.for_model("phimoe", **{**dict(vocab_size=160, hidden_size=64, intermediate_size=32,
                                                               num_hidden_layers=2, num_attention_heads=4,
                                                               num_key_value_heads=2, num_local_experts=8,
                                                               num_experts_per_tok=2), **_phimoe_over()})
    torch.manual_seed(0)
    m = transformers.AutoModelForCausalLM.from_config(hc)
    p = str(tmp_path / "one.gguf")
    _phimoe_gguf(p, hc, m, drop=("rope_factors_short.weight",))
    with pytest.raises(gguf_file.GGUFError, match=r"'rope_factors_short.weight' is missing beside its longrope pair"):
        configs.load(p)
    # no attn_factor key: llama.cpp's 1
    p = str(tmp_path / "noaf.gguf")
    _phimoe_gguf(p, hc, m)
    assert configs.load(p).longrope.long_attention_factor == 1.0


# ---- built-ins ---------------------------------------------------------------------------------------------------
def test_phi4_mini_builtin_and_its_factor_count():
    """phi-4-mini: Phi-4-mini-instruct's published shape (3.84 B: tied, 24 heads of 128, 8 KV heads, 96 of each head's
    128 dims rotated), its longrope left out (the factor lists are not recalled: the built-in states so); a config
    with the released layout's 48 factors per list loads and prices the same, 47 do not. Phi-3.5-mini is not built in
    (phi-3-mini's layers: llama-bench rows would find two built-ins), and the existing Phi built-ins hold no longrope."""
    c = configs.load("phi-4-mini")
    assert (c.model_type, c.head_dim, c.n_heads, c.n_kv_heads, c.rope_dim, c.tie_word_embeddings, c.vocab_size) == \
        ("phi3", 128, 24, 8, 96, True, 200064)
    assert round(c.total_params() / 1e9, 2) == 3.84 and c.rope_type == "default" and c.forward_unsupported() == []
    raw = json.load(open(configs.builtin_path("phi-4-mini")))
    assert "not recalled" in raw["_source"] and raw["rope_scaling"] is None
    d = {k: v for k, v in raw.items() if not k.startswith("_")}
    lr = configs.from_hf({**d, "rope_scaling": {"type": "longrope", "short_factor": [1.0] * 48,
                                                "long_factor": [2.0] * 48}})
    assert lr.rope_type == "longrope" and lr.total_params() == c.total_params() and lr.longrope.original == 4096
    assert lr.longrope.short_attention_factor == pytest.approx(math.sqrt(1 + math.log(32) / math.log(4096)))
    with pytest.raises(ValueError, match=r"`rope_scaling.long_factor` has 47 factors; the 96 rotated dims"):
        configs.from_hf({**d, "rope_scaling": {"type": "longrope", "short_factor": [1.0] * 48, "long_factor": [2.0] * 47}})
    assert "phi-3.5-mini" not in configs.builtin_names()
    for n in ("phi-3-mini", "phi-3.5-moe", "phi-4"):
        assert configs.load(n).rope_type == "default"

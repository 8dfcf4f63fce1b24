"""Gemma 4 (gemma4_text) run by glmbench.Model: logits against HF transformers' Gemma4ForCausalLM on tiny random
models (prefill past the sliding window, then decode steps with HF's cache), the kv-shared layers reading the
cache of the layer they share, the two cache geometries (global layers: their own head dim and KV heads) and
their bytes, per-layer embeddings, k = v global layers, the MoE beside the dense MLP, the final soft-cap;
proportional rope's zero frequencies in ops.rope; HF state-dict names (the multimodal wrapper's prefix
included) and bad input.

The oracle is HF's model in float64 (its float32 run differs from it by as much as ours does: ~1e-5 of the
largest logit through these 6-10 sandwich-normed layers, each norm rescaling its sub-layer's rounding)."""
import copy
import dataclasses
import inspect
import warnings

import numpy as np
import pytest

import glmbench
from glmbench.core import ops, reference
from glmbench.core.kvcache import KVCacheGroup
from glmbench.models import configs

torch = pytest.importorskip("torch")
transformers = pytest.importorskip("transformers")
if not hasattr(transformers, "Gemma4TextConfig"):
    pytest.skip("transformers without Gemma 4", allow_module_level=True)

RTOL = 3e-5     # of each logit row's largest |value|, against HF in float64

SLIDE = "sliding_attention"
FULL = "full_attention"
CASES = {
    # E2B-like: one KV head, per-layer embeddings, the last 4 layers kv-shared (3 windowed reading layer 3's
    # cache, 1 global reading layer 4's) with the double-wide MLP, global layers of head dim 16 beside 8
    "e2b": dict(vocab_size=96, hidden_size=32, intermediate_size=48, num_hidden_layers=10, num_attention_heads=4,
                num_key_value_heads=1, head_dim=8, global_head_dim=16, sliding_window=6,
                hidden_size_per_layer_input=4, vocab_size_per_layer_input=96, num_kv_shared_layers=4,
                use_double_wide_mlp=True, layer_types=[SLIDE] * 4 + [FULL] + [SLIDE] * 4 + [FULL]),
    # 26B-A4B-like: k = v global layers with their own (fewer) KV heads, the MoE beside the dense MLP, no PLE
    "26b": dict(vocab_size=96, hidden_size=32, intermediate_size=24, num_hidden_layers=6, num_attention_heads=4,
                num_key_value_heads=2, head_dim=8, global_head_dim=16, num_global_key_value_heads=1,
                attention_k_eq_v=True, sliding_window=6, hidden_size_per_layer_input=0, enable_moe_block=True,
                num_experts=8, top_k_experts=2, moe_intermediate_size=12),
    # everything at once, and a final soft-cap small enough to bend the logits
    "softcap": dict(vocab_size=64, hidden_size=32, intermediate_size=48, num_hidden_layers=8, num_attention_heads=4,
                    num_key_value_heads=2, head_dim=8, global_head_dim=16, num_global_key_value_heads=1,
                    attention_k_eq_v=True, sliding_window=5, hidden_size_per_layer_input=4,
                    vocab_size_per_layer_input=64, num_kv_shared_layers=2, enable_moe_block=True, num_experts=4,
                    top_k_experts=2, moe_intermediate_size=16, final_logit_softcapping=2.0),
}


def _hf(case, seed=0):
    hc = transformers.Gemma4TextConfig(**CASES[case])
    hc._attn_implementation = "eager"
    hc._experts_implementation = "eager"      # (the grouped-mm one takes no float64)
    torch.manual_seed(seed)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        m = transformers.Gemma4ForCausalLM(hc).eval()
    g = torch.Generator().manual_seed(seed)
    with torch.no_grad():
        for n, p in m.named_parameters():
            if p.ndim == 1:          # norm weights, the router's scales: around 1, so a skipped one shows
                p.copy_(1.0 + 0.1 * torch.randn(p.shape, generator=g))
            elif n.endswith("router.proj.weight"):   # O(1) router logits: choices well apart
                p.copy_(torch.randn(p.shape, generator=g))
            else:                    # N(0, 1/fan_in): unit-scale activations
                p.copy_(torch.randn(p.shape, generator=g) / p.shape[-1] ** 0.5)
        for n, b in m.named_buffers():
            if n.endswith("layer_scalar"):
                b.copy_(1.0 + 0.1 * torch.randn(b.shape, generator=g))
    return hc, m


def _state(m):
    return {k: v.detach().numpy().copy() for k, v in m.state_dict().items()}


def _hf_logits(model, prompt, steps):
    """A prefill of `prompt` then one decode step per token of `steps` with HF's cache."""
    kw = "cache" if "cache" in inspect.signature(model.forward).parameters else "past_key_values"
    out = []
    with torch.no_grad():
        r = model(torch.tensor([prompt]), use_cache=True)
        out.append(r.logits[0].double().numpy().copy())
        for t in steps:
            r = model(torch.tensor([[t]]), use_cache=True, **{kw: getattr(r, kw)})
            out.append(r.logits[0, -1].double().numpy().copy())
    return out


def _err(a, b):
    """The largest |a - b| of each row over that row's largest |b|, the worst row."""
    a, b = np.atleast_2d(np.asarray(a, np.float64)), np.atleast_2d(b)
    return float((np.abs(a - b).max(axis=1) / np.abs(b).max(axis=1)).max())


@pytest.fixture(scope="module", params=list(CASES))
def case(request):
    hc, m = _hf(request.param)
    cfg = configs.from_hf(hc.to_dict(), request.param)
    return request.param, hc, m, cfg


def test_logits_match_hf_past_the_window(case):
    """A 40-token prefill in pieces of 16 (window_chunk) then 30 decode steps: 70 tokens through the windowed
    layers' rings of 64 slots (they wrap), the kv-shared layers reading them; every logit row within RTOL of HF's
    float64 model."""
    name, hc, hf, cfg = case
    assert cfg.forward_unsupported() == []
    sd = _state(hf)
    before = {k: v.copy() for k, v in sd.items()}
    g = glmbench.Model(cfg, sd, weights="f32", kv="f32", max_context=80, window_chunk=16)
    rng = np.random.default_rng(5)
    prompt = rng.integers(0, hc.vocab_size, 40).tolist()
    steps = rng.integers(0, hc.vocab_size, 30).tolist()
    want = _hf_logits(copy.deepcopy(hf).double(), prompt, steps)
    got = [g.prefill(np.array(prompt))] + [g.decode(t) for t in steps]
    errs = [_err(a, b) for a, b in zip(got, want)]
    assert max(errs) < RTOL, f"{name}: relative errors {['%.1e' % e for e in errs]}"
    # HF's own float32 run is no closer to its float64 one than ours (the bar is rounding, not a formula)
    f32 = _hf_logits(hf, prompt[:20], [])[0]
    assert _err(got[0][:20], want[0][:20]) < 3 * max(_err(f32, want[0][:20]), 1e-6)
    for k in sd:
        np.testing.assert_array_equal(sd[k], before[k])
    # the cache: the owning layers only (kv-shared ones read their source's), windowed ones as rings
    assert g.cache.n_layers == cfg.n_kv_layers and g.n_past == 70
    assert g._cache_layer == [cfg.cache_layers.index(cfg.kv_source(i)) for i in range(cfg.n_layers)]
    assert isinstance(g.cache, KVCacheGroup) and len(g.cache.parts) == 2
    w = cfg.cache_layers.index(cfg.windowed_layers[0])
    assert g.cache.ring_tokens(w) == 64 and g.cache.held(w) == cfg.sliding_window
    if name == "softcap":
        assert np.abs(got[0]).max() <= 2.0
    if cfg.n_routed_experts:
        assert all(layer.last_counts.sum() == cfg.n_experts_per_tok for layer in g.layers)


@pytest.mark.parametrize("kv", ["f32", "f16", "bf16"])
def test_cache_bytes_are_the_configs(case, kv):
    """Two KVCaches (the windowed layers' geometry and the global layers') standing as one: bytes per token =
    the config's (kv-shared layers add none), used and allocated the parts' sums; fill_synthetic and reset
    reach both."""
    name, hc, hf, cfg = case
    g = glmbench.Model(cfg, _state(hf), weights="f32", kv=kv, max_context=40, window_chunk=8)
    c = g.cache
    assert c.bytes_per_token == cfg.kv_bytes_per_token(kv) == sum(p.bytes_per_token for p in c.parts)
    assert c.bytes_per_token == sum(cfg.kv_layer_bytes(i, kv) for i in cfg.cache_layers)
    geo = {(p.n_kv_heads, p.head_dim, p.v_head_dim) for p in c.parts}
    gl = cfg.n_layers - 1
    assert geo == {(cfg.n_kv_heads, cfg.head_dim, cfg.head_dim),
                   (cfg.layer_kv_heads(gl), cfg.global_head_dim, cfg.global_head_dim)}
    g.fill_synthetic(30)
    assert g.n_past == 30 and all(c.length(i) == 30 for i in range(c.n_layers))
    full = [j for j, i in enumerate(cfg.cache_layers) if i not in cfg.windowed_layers]
    assert c.bytes_used == sum(min(30, cfg.layer_window(i) or 30) * cfg.kv_layer_bytes(i, kv)
                               for i in cfg.cache_layers)
    assert c.bytes_allocated == sum(p.bytes_allocated for p in c.parts) >= c.bytes_in_blocks > 0
    assert all(c.held(j) == 30 for j in full)
    assert g.decode(3).shape == (hc.vocab_size,) and g.n_past == 31
    g.reset()
    assert g.n_past == 0 and c.bytes_used == 0


def test_piecewise_prefill_and_last_row(case):
    """A prefill in two pieces equals one call to float32 rounding (each within RTOL of HF's float64 model, and of
    each other: the pieces' attention reads 9 cached keys, so its sums round in another order, ~1e-5 of a row's
    largest logit through these sandwich-normed layers on some CPUs' kernels); logits="last" equals the last row
    of "all"."""
    name, hc, hf, cfg = case
    g = glmbench.Model(cfg, _state(hf), weights="f32", kv="f32", max_context=64)
    ids = np.arange(23) * 7 % hc.vocab_size
    whole = g.prefill(ids)
    g.reset()
    parts = np.concatenate([g.prefill(ids[:9]), g.prefill(ids[9:])])
    want = _hf_logits(copy.deepcopy(hf).double(), ids.tolist(), [])[0]
    assert _err(whole, want) < RTOL and _err(parts, want) < RTOL, (name, _err(whole, want), _err(parts, want))
    assert _err(parts, whole) < RTOL, (name, _err(parts, whole))
    g.reset()
    np.testing.assert_allclose(g.prefill(ids, logits="last"), whole[-1], rtol=0, atol=1e-5 * np.abs(whole).max())


def test_multimodal_names_and_extra_tensors():
    """Gemma4ForConditionalGeneration's keys (the text model under model.language_model., towers beside it) load
    as the text model's; a kv-shared layer's k / v tensors, if a checkpoint carries them, are dropped."""
    hc, hf = _hf("e2b")
    cfg = configs.from_hf({"model_type": "gemma4", "text_config": {**hc.to_dict(), "model_type": "gemma4_text"}})
    sd = _state(hf)
    ids = np.arange(12) * 5 % hc.vocab_size
    ref = glmbench.Model(cfg, sd, weights="f32", kv="f32", max_context=32).prefill(ids)
    wrapped = {("lm_head.weight" if k == "lm_head.weight" else "model.language_model." + k[len("model."):]): v
               for k, v in sd.items()}
    wrapped["model.vision_tower.encoder.layers.0.mlp.weight"] = np.zeros((3, 3), np.float32)
    shared = cfg.n_layers - 1
    wrapped[f"model.language_model.layers.{shared}.self_attn.k_proj.weight"] = np.zeros((99, 2), np.float32)
    got = glmbench.Model(cfg, wrapped, weights="f32", kv="f32", max_context=32).prefill(ids)
    np.testing.assert_array_equal(got, ref)
    # bf16 weights: the matrices (PLE's too) held as bf16 bits, the norms and scales f32
    bf = glmbench.Model(cfg, sd, weights="bf16", kv="bf16", max_context=32)
    assert bf.ple["model.embed_tokens_per_layer.weight"].dtype == np.uint16
    assert bf.layers[0].w["self_attn.q_proj.weight"].dtype == np.uint16
    assert bf.layers[0].w["layer_scalar"].dtype == np.float32
    assert np.isfinite(bf.prefill(ids)).all()


def test_random_weights_and_sampled_layers():
    """Random weights (no state dict) run; a sampled model with a kv-shared layer but not the layer whose cache
    it reads keeps that cache layer as a stand-in (zeros for each new token) and runs."""
    cfg = configs.from_hf({**CASES["softcap"], "model_type": "gemma4_text"})
    g = glmbench.Model(cfg, weights="bf16", kv="f16", max_context=64, window_chunk=8)
    lg = g.prefill(np.arange(20) % cfg.vocab_size)
    assert lg.shape == (20, cfg.vocab_size) and np.isfinite(lg).all()
    assert g.weight_bytes > sum(layer.nbytes for layer in g.layers) + g.embed.nbytes
    last = cfg.n_layers - 1                      # kv-shared: reads layer kv_source(last)'s cache
    assert not cfg.owns_kv(last) and cfg.kv_source(last) not in (0, last)
    s = glmbench.Model(cfg, weights="f32", kv="f32", max_context=64, layers=[0, last], window_chunk=8)
    assert s.cache.n_layers == 2 and s._standin == [1] and s._cache_layer == [0, 1]
    x = s.prefill(np.arange(20) % cfg.vocab_size)
    assert np.isfinite(x).all() and s.n_past == 20 and s.decode(1).shape == (cfg.vocab_size,)
    np.testing.assert_array_equal(s.cache.read(1)[0], 0.0)
    assert s.cache.length(1) == 21


def test_bad_input_is_refused_clearly():
    hc, hf = _hf("26b")
    cfg = configs.from_hf(hc.to_dict())
    sd = _state(hf)
    bad = {k: v for k, v in sd.items() if not k.endswith("layers.1.router.per_expert_scale")}
    with pytest.raises(ValueError, match=r"lacks 'model\.layers\.1\.mlp\.gate\.per_expert_scale'"):
        glmbench.Model(cfg, bad, weights="f32")
    bad = dict(sd)
    bad["model.layers.0.experts.gate_up_proj"] = sd["model.layers.0.experts.gate_up_proj"][:, :-1]
    with pytest.raises(ValueError, match=r"gate_up_proj.*shape"):
        glmbench.Model(cfg, bad, weights="f32")
    hc, hf = _hf("e2b")
    cfg = configs.from_hf(hc.to_dict())
    sd = _state(hf)
    bad = {k: v for k, v in sd.items() if k != "model.per_layer_model_projection.weight"}
    with pytest.raises(ValueError, match="lacks 'model.per_layer_model_projection.weight'"):
        glmbench.Model(cfg, bad, weights="f32")
    short = dataclasses.replace(cfg, ple_vocab=50)
    sd["model.embed_tokens_per_layer.weight"] = sd["model.embed_tokens_per_layer.weight"][:50]
    g = glmbench.Model(short, sd, weights="f32", kv="f32", max_context=16)
    with pytest.raises(ValueError, match=r"outside the per-layer embedding table \[0, 50\)"):
        g.prefill([1, 60])
    with pytest.raises(ValueError, match="per-layer inputs"):
        g.forward_layers(np.zeros((2, cfg.hidden_size), np.float32), np.arange(2))
    # a kv-shared layer run before the layer whose cache it reads
    with pytest.raises(ValueError, match="shares the cache of layer"):
        g.layers[-1].forward(np.zeros((1, cfg.hidden_size), np.float32), g.cache, g._cache_layer[-1], [0],
                             ple=np.zeros((1, cfg.ple_size), np.float32))


def test_cache_group_bad_input():
    with pytest.raises(TypeError, match="`dims` must be a non-empty sequence"):
        KVCacheGroup(16, [])
    with pytest.raises(TypeError, match=r"`dims`\[1\] must be"):
        KVCacheGroup(16, [(1, 8, 8), (1, 16)])
    with pytest.raises(ValueError, match="one window per layer"):
        KVCacheGroup(16, [(1, 8, 8), (1, 16, 16)], windows=[4])
    c = KVCacheGroup(16, [(1, 8, 8), (2, 16, 16), (1, 8, 8)], kv="f32", windows=[4, 0, 4], chunk=4)
    assert [p.n_layers for p in c.parts] == [2, 1] and c.locate(2) == (c.parts[0], 1) and c.windows == (4, 0, 4)
    with pytest.raises(ValueError, match="out of range"):
        c.locate(3)
    with pytest.raises(ValueError):
        c.append(1, np.zeros((1, 1, 8), np.float32), np.zeros((1, 1, 8), np.float32))   # layer 1 holds 2 x 16


def test_configs_run_in_model():
    """Gemma 4 is no longer priced only: the built-ins and HF's configs pass forward_unsupported."""
    assert "gemma4_text" not in configs.PRICED_ONLY and "proportional" in configs.ROPE_TYPES
    for name in ("gemma-4-e2b", "gemma-4-e4b", "gemma-4-26b-a4b", "gemma-4-31b"):
        c = configs.load(name)
        assert c.forward_unsupported() == [], name
        rot = c.layer_rope(c.n_layers - 1)    # global: proportional over the 512-dim head, a quarter turning
        assert rot["rot_dim"] == 512 and np.count_nonzero(rot["inv_freq"]) == 64
        assert c.layer_rope(0)["rot_dim"] == 256 and c.layer_rope(0)["theta"] == c.rope_local_theta


@pytest.mark.parametrize("layout", ["half", "interleaved"])
@pytest.mark.parametrize("af", [1.0, 1.3])
def test_rope_zero_frequencies_match_reference(layout, af):
    """ops.rope_proportional: pairs of frequency 0 unturned, the others as the C core's rope turns them; equal to
    reference.rope (float64) within float32 rounding; the frequencies equal HF's proportional ones. ops.rope
    itself still refuses a zero frequency."""
    rng = np.random.default_rng(0)
    x = rng.standard_normal((5, 3, 20)).astype(np.float32)
    pos = np.array([0, 1, 7, 100, 4000])
    inv = np.concatenate([1e4 ** (-2.0 * np.arange(3) / 16), np.zeros(5)])
    y = ops.rope_proportional(x, pos, theta=1e4, rot_dim=16, rot_offset=2, layout=layout, inv_freq=inv,
                              attention_factor=af)
    want = reference.rope(x, pos, theta=1e4, rot_dim=16, rot_offset=2, layout=layout, inv_freq=inv,
                          attention_factor=af)
    np.testing.assert_allclose(y, want, rtol=0, atol=2e-6 * np.abs(want).max())
    # without zeros it is ops.rope; with no pair turning, the identity
    full = 1e4 ** (-2.0 * np.arange(8) / 16)
    np.testing.assert_array_equal(ops.rope_proportional(x, pos, theta=1e4, rot_dim=16, layout=layout, inv_freq=full),
                                  ops.rope(x, pos, theta=1e4, rot_dim=16, layout=layout, inv_freq=full))
    np.testing.assert_array_equal(ops.rope_proportional(x, pos, theta=1e4, rot_dim=16, inv_freq=np.zeros(8)), x)
    with pytest.raises(ValueError, match="must be finite and > 0, got 0"):
        ops.rope(x, pos, theta=1e4, rot_dim=16, inv_freq=inv)
    for bad, match in ((np.concatenate([inv[:7], [-1.0]]), "finite and >= 0"), (inv[:5], "rot_dim/2 = 8"),
                       (inv.astype(np.float32), "float64")):
        with pytest.raises(ValueError, match=match):
            ops.rope_proportional(x, pos, theta=1e4, rot_dim=16, inv_freq=bad)
    with pytest.raises(ValueError, match="must fit in the head dim 20"):
        ops.rope_proportional(x, pos, theta=1e4, rot_dim=16, rot_offset=6, inv_freq=inv)
    with pytest.raises(TypeError, match="float32"):
        ops.rope_proportional(x.astype(np.float64), pos, theta=1e4, rot_dim=16, inv_freq=inv)
    with pytest.raises(ValueError, match="positions"):
        ops.rope_proportional(x, pos[:3], theta=1e4, rot_dim=16, inv_freq=inv)
    from transformers.modeling_rope_utils import _compute_proportional_rope_parameters
    hc = transformers.Gemma4TextConfig(**CASES["e2b"])
    hf_inv, _ = _compute_proportional_rope_parameters(hc, layer_type=FULL)
    cfg = configs.from_hf(hc.to_dict())
    ours = cfg.layer_rope(cfg.n_layers - 1)
    np.testing.assert_allclose(ours["inv_freq"], hf_inv.double().numpy(), rtol=1e-6, atol=0)
    assert ours["rot_dim"] == 16 and ours["layout"] == "half"
    # elsewhere proportional rope is not run (only Gemma 4's layer takes zero frequencies)
    other = configs.load({"model_type": "qwen3", "vocab_size": 64, "hidden_size": 32, "intermediate_size": 48,
                          "num_hidden_layers": 2, "num_attention_heads": 4, "num_key_value_heads": 2,
                          "head_dim": 8, "rope_parameters": {"rope_type": "proportional", "rope_theta": 1e4,
                                                             "partial_rotary_factor": 0.5}})
    assert any("proportional rope outside Gemma 4" in s for s in other.forward_unsupported())

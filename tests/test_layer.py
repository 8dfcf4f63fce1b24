"""The whole-layer C path (csrc/layer.c, Layer.forward) against the Python-level definition
(Layer.forward_py) it follows: the same kernels in the same order, so the outputs, the expert
counts and the cache contents must be identical, for every family and weight format."""
import json

import numpy as np
import pytest

from glmbench.core._loader import _core
from glmbench.models import configs
from glmbench.models import model as M
from glmbench.core.kvcache import KVCache

MLA_TINY = dict(hidden_size=64, num_attention_heads=4, num_key_value_heads=4, kv_lora_rank=32, qk_rope_head_dim=8,
                qk_nope_head_dim=12, v_head_dim=16, intermediate_size=64, moe_intermediate_size=32,
                n_routed_experts=8, num_experts_per_tok=2, vocab_size=64)
GQA_TINY = dict(hidden_size=48, num_attention_heads=6, num_key_value_heads=2, head_dim=16, intermediate_size=64,
                vocab_size=64, moe_intermediate_size=24, num_experts=8, num_experts_per_tok=2)


def tiny(name, **over):
    with open(configs.builtin_path(name)) as f:
        hf = json.load(f)
    if "kv_lora_rank" in hf:
        hf.update(MLA_TINY)
        if hf.get("q_lora_rank"):
            hf["q_lora_rank"] = 48
    else:
        hf.update(GQA_TINY)
    hf.update(num_hidden_layers=3, **over)
    if "first_k_dense_replace" in hf:
        hf["first_k_dense_replace"] = 1
    return configs.load(hf)


def make_cache(cfg, n, kv):
    if cfg.attention == "mla":
        return KVCache.mla(n, 32, cfg.kv_lora_rank, cfg.qk_rope_head_dim, kv=kv, block_size=4)
    return KVCache.gqa(n, 32, cfg.n_kv_heads, cfg.head_dim, cfg.v_head_dim or cfg.head_dim, kv=kv, block_size=4)


CASES = [("glm-4.7-flash", {}), ("deepseek-v2-lite", {}), ("qwen3-32b", {}), ("qwen3-30b-a3b", {}),
         ("mistral-small-24b", {}), ("seed-oss-36b", {}),
         ("glm-4.7-flash", {"attention_bias": True}),
         ("glm-4.7-flash", {"rope_interleave": False})]  # MLA with half-split rope (HF rotate_half)


@pytest.mark.parametrize("name,over", CASES)
@pytest.mark.parametrize("fmt,kv", [("f32", "f32"), ("bf16", "bf16")])
def test_c_layer_equals_python_layer(rng, name, over, fmt, kv):
    cfg = tiny(name, **over)
    layers = [M.build_layer(cfg, i, fmt, seed=3) for i in range(cfg.n_layers)]
    for L in layers:
        if over.get("attention_bias"):  # biases the checkpoint would carry: q_a and kv_a
            for k in ("q_a_proj", "kv_a_proj_with_mqa"):
                n = L.attn[k + ".weight"].shape[0]
                L.attn[k + ".bias"] = L.w[f"self_attn.{k}.bias"] = (0.1 * rng.standard_normal(n)).astype(np.float32)
        assert L._c_plan() is not None, "every matrix is an ndarray: the C path must run"
    strategies = M.MLA_STRATEGIES if cfg.attention == "mla" else ("flash",)
    for strategy in strategies:
        c_cache, py_cache = make_cache(cfg, len(layers), kv), make_cache(cfg, len(layers), kv)
        x0 = rng.standard_normal((5, cfg.hidden_size)).astype(np.float32)
        pos = 0
        for T in (5, 1, 1):  # a prefill, then two decode steps
            x = x0[:T].copy()
            xc, xp = x, x
            for j, L in enumerate(layers):
                before = xc.copy()
                out = L.forward(xc, c_cache, j, np.arange(pos, pos + T), strategy)
                np.testing.assert_array_equal(xc, before)  # the input is not modified
                xc, cc = out, L.last_counts
                xp = L.forward_py(xp, py_cache, j, np.arange(pos, pos + T), strategy)
                np.testing.assert_array_equal(xc, xp, err_msg=f"{name} {fmt} layer {j} T={T} {strategy}")
                if L.kind == "moe":
                    np.testing.assert_array_equal(cc, L.last_counts)
            pos += T
        for j in range(len(layers)):
            for a, b in zip(c_cache.read(j), py_cache.read(j)):
                np.testing.assert_array_equal(a, b)


# sliding windows and Gemma's layers: windowed GQA (Mistral-style, every layer), Gemma 3 (5:1
# pattern shortened to 1:1, local rope base, query_pre_attn_scalar, sandwich norms, GeGLU) and
# Gemma 2 (attention logit soft-capping); window 4, so the rings wrap over 15 tokens
GEMMA_TYPES = ["sliding_attention", "full_attention", "sliding_attention"]
WINDOW_CASES = [("mistral-small-24b", dict(sliding_window=4)),
                ("qwen3-32b", dict(sliding_window=4, use_sliding_window=True, max_window_layers=0)),
                ("gemma-3-27b", dict(sliding_window=4, layer_types=GEMMA_TYPES, query_pre_attn_scalar=24)),
                ("gemma-3-27b", dict(model_type="gemma2", sliding_window=4, layer_types=GEMMA_TYPES,
                                     attn_logit_softcapping=2.0, query_pre_attn_scalar=24))]


@pytest.mark.parametrize("name,over", WINDOW_CASES)
@pytest.mark.parametrize("fmt,kv", [("f32", "f32"), ("bf16", "bf16"), ("f16", "q8_0")])
def test_c_layer_equals_python_layer_windowed_and_gemma(rng, name, over, fmt, kv):
    cfg = tiny(name, **over, **({"head_dim": 32} if kv == "q8_0" else {}))   # q8_0 rows: multiples of 32
    assert cfg.windowed_layers and cfg.forward_unsupported() == []
    gemma = cfg.model_type in configs.GEMMA_FAMILIES
    if over.get("attn_logit_softcapping"):
        assert cfg.attn_logit_softcapping == 2.0
    if cfg.model_type == "gemma3_text":   # the windowed layers turn by the local base, the global one not
        assert cfg.layer_rope(0)["theta"] == cfg.rope_local_theta != cfg.layer_rope(1)["theta"]
    layers = [M.build_layer(cfg, i, fmt, seed=3) for i in range(cfg.n_layers)]
    for L in layers:
        for k, v in L.w.items():   # norms of ones would hide a norm applied twice or to the wrong tensor
            if k.endswith("norm.weight"):
                v[...] = (1.0 + 0.3 * rng.standard_normal(v.shape)).astype(np.float32)
        assert L._c_plan() is not None, "every matrix is an ndarray: the C path must run"
    wins = [cfg.layer_window(i) or 0 for i in range(cfg.n_layers)]
    assert any(wins) and (not gemma or not all(wins))   # Gemma keeps a global layer

    def cache():
        return KVCache.gqa(len(layers), 32, cfg.n_kv_heads, cfg.head_dim, cfg.v_head_dim or cfg.head_dim, kv=kv,
                           block_size=4, windows=wins, chunk=5)
    c_cache, py_cache = cache(), cache()
    assert c_cache.ring_tokens(wins.index(4)) == 12
    x0 = rng.standard_normal((5, cfg.hidden_size)).astype(np.float32)
    pos = 0
    for T in (5,) + (1,) * 10 + (3,):   # a prefill, decode steps past the ring (12 slots), a chunk
        xc = xp = x0[:T].copy()
        for j, L in enumerate(layers):
            x_in, before = xc, xc.copy()
            xc = L.forward(xc, c_cache, j, np.arange(pos, pos + T))
            np.testing.assert_array_equal(x_in, before)   # the input is not modified
            xp = L.forward_py(xp, py_cache, j, np.arange(pos, pos + T))
            np.testing.assert_array_equal(xc, xp, err_msg=f"{name} {fmt} layer {j} T={T} pos={pos}")
        pos += T
    assert c_cache.length(0) == 18 > c_cache.ring_tokens(wins.index(4))   # the ring wrapped
    for j in range(len(layers)):
        assert c_cache.held(j) == py_cache.held(j) == (min(18, wins[j]) if wins[j] else 18)
        for a, b in zip(c_cache.read(j), py_cache.read(j)):
            np.testing.assert_array_equal(a, b)


def test_c_layer_window_mismatch_is_one_clear_error():
    cfg = tiny("mistral-small-24b", sliding_window=4)
    L = M.build_layer(cfg, 0, "f32", seed=0)
    c = KVCache.gqa(1, 32, cfg.n_kv_heads, cfg.head_dim, kv="f32", block_size=4, windows=[6], chunk=4)
    with pytest.raises(ValueError, match=r"cache layer 0 keeps a window of 6 tokens but model layer 0 attends to 4"):
        L.forward(np.ones((1, cfg.hidden_size), np.float32), c, 0, [0])
    assert c.length(0) == 0


def test_geglu_act_matches_torch(rng):
    torch = pytest.importorskip("torch")
    g = (3 * rng.standard_normal(10_000)).astype(np.float32)
    u = rng.standard_normal(10_000).astype(np.float32)
    want = (torch.nn.functional.gelu(torch.from_numpy(g), approximate="tanh") * torch.from_numpy(u)).numpy()
    h = g.copy()
    _core.geglu_act(h, u)
    np.testing.assert_allclose(h, want, rtol=2e-6, atol=2e-6)
    with pytest.raises(ValueError, match=r"same shape"):
        _core.geglu_act(h, u[:5])
    with pytest.raises(TypeError):
        _core.geglu_act(h.astype(np.float64), u)


def test_quantized_layers_run_the_python_path():
    cfg = tiny("glm-4.7-flash")
    L = M.build_layer(cfg, 1, "q8_0", seed=0)
    assert L._c_plan() is None
    c = make_cache(cfg, 1, "f32")
    y = L.forward(np.ones((1, cfg.hidden_size), np.float32), c, 0, [0])
    assert y.shape == (1, cfg.hidden_size) and np.isfinite(y).all()


def test_c_layer_bad_input(rng):
    cfg = tiny("qwen3-32b")
    L = M.build_layer(cfg, 0, "bf16", seed=0)
    c = make_cache(cfg, 1, "bf16")
    x = np.ones((2, cfg.hidden_size), np.float32)
    with pytest.raises(ValueError, match=r"`x` must have shape|axis 1 must be 48"):
        L.forward(np.ones((2, 47), np.float32), c, 0, [0, 1])
    with pytest.raises(TypeError, match=r"`x` must be float32"):
        L.forward(x.astype(np.float64), c, 0, [0, 1])
    with pytest.raises(ValueError, match=r"NaN"):
        L.forward(np.full_like(x, np.nan), c, 0, [0, 1])
    with pytest.raises(ValueError, match=r"`positions`.*axis 0 must be 2"):
        L.forward(x, c, 0, [0])
    with pytest.raises(TypeError, match=r"`positions` must be integers"):
        L.forward(x, c, 0, [0.0, 1.0])
    with pytest.raises(ValueError, match=r"`layer`=3 is out of range"):
        L.forward(x, c, 3, [0, 1])
    with pytest.raises(ValueError, match=r"must be a GQA KVCache"):
        L.forward(x, KVCache.mla(1, 8, 32, 8, kv="f32"), 0, [0, 1])
    with pytest.raises(ValueError, match=r"does not match the layer"):
        L.forward(x, KVCache.gqa(1, 8, 3, 16, kv="f32"), 0, [0, 1])
    with pytest.raises(ValueError, match=r"`mla_strategy` must be one of"):
        L.forward(x, c, 0, [0, 1], "fast")
    small = make_cache(cfg, 1, "bf16")
    L.forward(np.ones((30, cfg.hidden_size), np.float32), small, 0, np.arange(30))
    with pytest.raises(ValueError, match=r"KV cache full: layer 0 holds 30 of 32 tokens, cannot append 3"):
        L.forward(np.ones((3, cfg.hidden_size), np.float32), small, 0, [30, 31, 32])
    assert small.length(0) == 30
    with pytest.raises(KeyError, match=r"layer spec lacks D"):
        _core.layer_plan({"attention": 0})

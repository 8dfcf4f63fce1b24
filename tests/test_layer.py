"""The whole-layer C path (csrc/layer.c, Layer.forward) against the Python-level definition
(Layer.forward_py) it follows: the same kernels in the same order, so the outputs, the expert
counts and the cache contents must be identical, for every family and weight format."""
import json

import numpy as np
import pytest

from glmbench.bench.quant import _K_SCALES
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
    return _tiny(name, MLA_TINY, GQA_TINY, 48, over)


def _tiny(name, mla, gqa, q_lora, over):
    """Built-in model `name` shrunk to 3 layers (the first dense) of the `mla` or `gqa` sizes."""
    with open(configs.builtin_path(name)) as f:
        hf = json.load(f)
    if "kv_lora_rank" in hf:
        hf.update(mla)
        if hf.get("q_lora_rank"):
            hf["q_lora_rank"] = q_lora
    else:
        hf.update(gqa)
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


def test_quantized_joined_kv_b_runs_the_python_path():
    cfg = tiny("glm-4.7-flash")
    L = M.build_layer(cfg, 1, "q8_0", seed=0)   # kv_b one q8_0 matrix (not GGUF's k_b / v_b)
    assert L._c_plan() is None and not L.runs_in_c(1)
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


# ---- block-format matrices (quantized GGUF weights) at decode ---------------------------------
# The C layer reads q8_0/q4_0, the K and IQ formats in their packed layouts and GGUF's k_b / v_b
# (KVBSplit) one token at a time: the same kernels Layer.forward_py calls, so bit-identical. The K
# formats need rows of whole 256-element super-blocks: tiny shapes of 256 (other rows fall back to
# q8_0, as llama.cpp's quantizer does).
MLA_K = dict(hidden_size=256, num_attention_heads=2, num_key_value_heads=2, kv_lora_rank=256, qk_rope_head_dim=16,
             qk_nope_head_dim=32, v_head_dim=64, intermediate_size=256, moe_intermediate_size=256,
             n_routed_experts=4, num_experts_per_tok=2, vocab_size=64)
GQA_K = dict(hidden_size=256, num_attention_heads=4, num_key_value_heads=2, head_dim=64, intermediate_size=256,
             vocab_size=64, moe_intermediate_size=256, num_experts=4, num_experts_per_tok=2)
# variant -> format of a matrix by its name (attention / MLP / down projections)
QVARIANTS = {"q4_K_M": lambda n: "q6_K" if "down" in n else "q4_K",
             "q5_K+iq4_xs": lambda n: "q5_K" if "attn" in n else "iq4_xs",
             "q2_K+q3_K": lambda n: "q3_K" if "down" in n else "q2_K",
             "iq4_nl+mxfp4": lambda n: "iq4_nl" if "attn" in n else "mxfp4",
             "q4_0": lambda n: "q4_0", "q8_0": lambda n: "q8_0"}
_SCALES = {**_K_SCALES, "iq4_nl": (0,)}   # each format's f16 scale offsets in a block


def tiny_k(name):
    return _tiny(name, MLA_K, GQA_K, 256, {})


def _blocks(a, fmt, seed):
    """a (float32 [..., K]) as a QTensor of `fmt`: quantized (q8_0, q4_0, mxfp4), or random blocks with
    small finite scales (the formats glmbench reads as stored but does not quantize)."""
    from glmbench.core import quant
    a = np.ascontiguousarray(a, dtype=np.float32)
    if fmt in ("q8_0", "q4_0", "mxfp4"):
        return quant.quantize(a, fmt)
    _, qk, bb = quant.FORMATS[fmt]
    r = np.random.default_rng(seed)
    n, nb = int(np.prod(a.shape[:-1])), a.shape[-1] // qk
    b = r.integers(0, 256, (n, nb, bb), dtype=np.uint8)
    for o in _SCALES[fmt]:
        b[:, :, o:o + 2] = r.uniform(0.001, 0.01, (n, nb)).astype(np.float16).view(np.uint8).reshape(n, nb, 2)
    return quant.QTensor(b.reshape(a.shape[:-1] + (nb * bb,)), fmt, a.shape)


def quantized_layer(cfg, i, variant):
    """Layer i of cfg with its matrices in `variant`'s formats (kv_b split into k_b q8_0 / v_b, or bf16
    both for q4_0, as bench_llamacpp.py's q4_0 files store them)."""
    from glmbench.core.attention import KVBSplit
    from glmbench.core import quant
    L0 = M.build_layer(cfg, i, "f32", seed=3)
    pick = QVARIANTS[variant]
    w = {}
    for j, (name, a) in enumerate(L0.w.items()):
        if a.ndim < 2 or name.endswith("norm.weight") or name == "mlp.gate.weight":
            w[name] = a
            continue
        if name == "self_attn.kv_b_proj.weight":
            H, Dn, Dv, R = cfg.n_heads, cfg.qk_nope_head_dim, cfg.v_head_dim, cfg.kv_lora_rank
            kv = a.reshape(H, Dn + Dv, R)
            k_b, v_b = kv[:, :Dn].transpose(0, 2, 1), kv[:, Dn:]
            if variant == "q4_0":
                w[name] = KVBSplit(M.to_format(k_b, "bf16"), M.to_format(v_b, "bf16"))
            else:
                w[name] = KVBSplit(_blocks(k_b, "q8_0", j), _blocks(v_b, pick("attn"), j))
            continue
        fmt = pick(name)
        if quant.FORMATS[fmt][1] == 256 and a.shape[-1] % 256:
            fmt = "q8_0"
        w[name] = _blocks(a, fmt, j)
    return M.Layer(cfg, i, L0.kind, w)


@pytest.mark.parametrize("name", ["glm-4.7-flash", "deepseek-v2-lite", "qwen3-32b", "qwen3-30b-a3b"])
@pytest.mark.parametrize("variant", list(QVARIANTS))
def test_c_layer_block_formats_equal_python_layer(rng, name, variant):
    cfg = tiny_k(name)
    layers = [quantized_layer(cfg, i, variant) for i in range(cfg.n_layers)]
    for L in layers:
        assert L._c_plan() is not None and L._plan_decode, "packed block formats: the C path must run at decode"
    if variant == "q4_K_M" and cfg.attention == "mla":   # the stacked pairs and the packed k_b / v_b are read
        spec = layers[1]._c_spec()
        assert spec["qa_kva" if cfg.q_lora_rank else "kv_a"] is not None and spec["sgu"] is not None
        assert spec["k_packed"] is not None and spec["v_packed"] is not None
    ran_py = []
    for L in layers:   # count forward_py's runs through forward (the reference below calls it directly)
        L.forward_py = (lambda f: lambda *a, **k: (ran_py.append(1), f(*a, **k))[1])(L.forward_py)
    strategies = M.MLA_STRATEGIES if cfg.attention == "mla" else ("flash",)
    for strategy in strategies:
        c_cache, py_cache = make_cache(cfg, len(layers), "f16"), make_cache(cfg, len(layers), "f16")
        x0 = rng.standard_normal((3, cfg.hidden_size)).astype(np.float32)
        pos = 0
        for T in (3, 1, 1):  # a prefill (forward_py in both), then two decode steps (the C layer)
            xc = xp = x0[:T].copy()
            del ran_py[:]
            for j, L in enumerate(layers):
                before = xc.copy()
                out = L.forward(xc, c_cache, j, np.arange(pos, pos + T), strategy)
                np.testing.assert_array_equal(xc, before)  # the input is not modified
                xc, cc = out, L.last_counts
                xp = M.Layer.forward_py(L, xp, py_cache, j, np.arange(pos, pos + T), strategy)
                np.testing.assert_array_equal(xc, xp, err_msg=f"{name} {variant} layer {j} T={T} {strategy}")
                if L.kind == "moe":
                    np.testing.assert_array_equal(cc, L.last_counts)
            # decode runs in C except the naive strategy (it needs the joined float32 kv_b)
            assert len(ran_py) == (len(layers) if T > 1 or strategy == "naive" else 0)
            pos += T
        for j in range(len(layers)):
            for a, b in zip(c_cache.read(j), py_cache.read(j)):
                np.testing.assert_array_equal(a, b)


def test_mixed_expert_formats_run_the_python_path(rng):
    """Routed experts the C layer does not take (q4_K gate / up with a q8_0 down, as a file whose expert
    width is not whole super-blocks gets): forward_py runs the layer, no error."""
    from glmbench.core import quant
    cfg = tiny_k("glm-4.7-flash")
    L = quantized_layer(cfg, 1, "q4_K_M")
    d = L.w["mlp.experts.down_proj"]
    L.w["mlp.experts.down_proj"] = quant.quantize(np.ascontiguousarray(d.dequantize(), np.float32), "q8_0")
    assert L._c_plan() is None and not L.runs_in_c(1)
    y = L.forward(rng.standard_normal((1, cfg.hidden_size)).astype(np.float32), make_cache(cfg, 1, "f16"), 0, [0])
    assert y.shape == (1, cfg.hidden_size) and np.isfinite(y).all()


def test_c_layer_block_formats_bad_input():
    cfg = tiny_k("glm-4.7-flash")
    L = quantized_layer(cfg, 1, "q4_K_M")
    plan, spec = L._c_plan(), L._c_spec()
    c = make_cache(cfg, 1, "f16")
    x = np.ones((2, cfg.hidden_size), np.float32)
    with pytest.raises(ValueError, match=r"one token at a time \(decode\), got T=2"):
        _core.layer_forward(plan, x, c, 0, np.arange(2, dtype=np.int64))
    with pytest.raises(ValueError, match=r"naive MLA strategy needs the joined float32 kv_b"):
        _core.layer_forward(plan, x[:1], c, 0, np.zeros(1, np.int64), "naive")
    with pytest.raises(ValueError, match=r"NaN"):
        _core.layer_forward(plan, np.full((1, cfg.hidden_size), np.nan, np.float32), c, 0, np.zeros(1, np.int64))
    assert c.length(0) == 0
    packed, fid = spec["q_b"]
    from glmbench.core import quant
    q8 = quant.quantize(np.zeros((4, 256, 256), np.float32), "q8_0").repack()
    q8_ed = (q8.packed, 8)
    for key, val, err, msg in [
            ("q_b", (packed[:-1], fid), ValueError, r"q_b: \d+ packed bytes, want \d+"),
            ("q_b", (packed, 99), ValueError, r"q_b: format 99 has no packed layout"),
            ("q_b", (packed,), TypeError, r"q_b: a block-format matrix is a \(packed uint8 array, format id\) pair"),
            ("q_b", (packed.view(np.int8), fid), TypeError, r"uint8"),
            ("k_packed", spec["k_packed"][:1], ValueError, r"k_packed: \d+ bytes, want \d+"),
            ("v_packed", np.zeros(3, np.uint8), ValueError, r"v_packed: 3 bytes"),
            ("ed", q8_ed, ValueError, r"routed experts in formats 12/12/8: want"),
            ("k_b", spec["k_b"][:, :, :1], ValueError, r"k_b")]:
        with pytest.raises(err, match=msg):
            _core.layer_plan({**spec, key: val})
    g = quantized_layer(tiny_k("qwen3-32b"), 0, "q4_K_M")._c_spec()
    ones = np.ones(256, np.float32)
    with pytest.raises(ValueError, match=r"a Gemma layer takes float matrices only"):
        _core.layer_plan({**g, "gemma": 1, "ln_pre_ffn": ones, "ln_post_ffn": ones})

"""GQA attention over the paged cache and the gqa_block sub-layer, against the float64 reference
(glmbench.core.reference.gqa_attention / gqa_block) on the values the cache actually stores."""
import gc
import json
import os

import numpy as np
import pytest

import glmbench
from glmbench.models import configs
from glmbench.core import reference as ref
from glmbench.core.attention import gqa_attention, gqa_block
from glmbench.core.kvcache import KVCache

# float32 scores and an online softmax vs float64: each output is a convex combination of V rows,
# so its error is a few float32 roundings of |v| (~1) per step of the running max/sum; 2e-5 bounds
# the sums over a few hundred keys with a margin of ~10x over what we observe.
ATOL = 2e-5


def _filled(rng, Hkv, Dh, Dv, P, T, fmt="f32", bs=16, layers=2, layer=1):
    c = KVCache.gqa(layers, P + T + 5, Hkv, Dh, Dv, kv=fmt, block_size=bs)
    k = rng.standard_normal((P + T, Hkv, Dh)).astype(np.float32)
    v = rng.standard_normal((P + T, Hkv, Dv)).astype(np.float32)
    if P:
        c.append(layer, k[:P], v[:P])
    c.append(layer, k[P:], v[P:])
    return c


SHAPES = [  # Hq, Hkv, Dh, Dv, P (cached before), T (new tokens)
    (64, 8, 128, 128, 50, 1),      # Qwen3-32B decode
    (64, 8, 128, 128, 0, 9),       # Qwen3-32B prefill from an empty cache
    (20, 1, 64, 64, 37, 3),        # 20:1 ratio
    (8, 2, 256, 256, 21, 5),       # head dim 256
    (4, 4, 64, 64, 70, 1),         # MHA
    (6, 3, 24, 40, 33, 7),         # odd dims, Dv != Dh
    (5, 5, 7, 3, 0, 1),            # a single token into an empty cache
]


@pytest.mark.parametrize("Hq,Hkv,Dh,Dv,P,T", SHAPES)
def test_matches_reference(rng, Hq, Hkv, Dh, Dv, P, T):
    c = _filled(rng, Hkv, Dh, Dv, P, T)
    q = rng.standard_normal((T, Hq, Dh)).astype(np.float32)
    q0 = q.copy()
    k, v = c.read(1)
    y = gqa_attention(q, c, 1)
    assert y.shape == (T, Hq, Dv) and y.dtype == np.float32
    np.testing.assert_allclose(y, ref.gqa_attention(q, k, v), rtol=0, atol=ATOL)
    np.testing.assert_array_equal(q, q0)
    y2 = gqa_attention(q, c, 1, scale=0.3)
    np.testing.assert_allclose(y2, ref.gqa_attention(q, k, v, scale=0.3), rtol=0, atol=ATOL)


@pytest.mark.parametrize("fmt", ["f16", "bf16", "q8_0", "q4_0"])
def test_cache_formats_against_the_stored_values(rng, fmt):
    c = _filled(rng, 2, 64, 32, 90, 4, fmt=fmt, bs=32)
    q = rng.standard_normal((4, 8, 64)).astype(np.float32)
    k, v = c.read(1)   # the rounded values: the kernel must attend to exactly these
    np.testing.assert_allclose(gqa_attention(q, c, 1), ref.gqa_attention(q, k, v), rtol=0, atol=ATOL)


# The bf16 decode kernel for 8 query heads per KV head (bf16 cache, T = 1) comes in two
# arithmetics: float32 (each K/V row widened) and, with AVX512_BF16, bf16 dot products (the query
# and p rounded to bf16, float32 accumulation; tests/test_attention_mla.py BF16_TILE_REL explains
# the 1e-2 of the output scale).
BF16_DP_REL = 1e-2
G8_SHAPES = [  # Hkv, Dh, P (cached before the new token), block_size
    (8, 128, 4095, 64),   # Qwen3-32B at 4K: splits, an odd last tile
    (2, 128, 70, 16),     # short blocks
    (1, 96, 40, 16),      # Dh = 96: a masked tail in the bf16 dot products
    (4, 64, 0, 64),       # one key
]


@pytest.mark.parametrize("Hkv,Dh,P,bs", G8_SHAPES)
def test_g8_bf16_decode_both_arithmetics(rng, Hkv, Dh, P, bs):
    from glmbench.core import _core
    c = _filled(rng, Hkv, Dh, Dh, P, 1, fmt="bf16", bs=bs)
    q = rng.standard_normal((1, 8 * Hkv, Dh)).astype(np.float32)
    k, v = c.read(1)
    r = ref.gqa_attention(q, k, v)
    was = _core._attn_bf16()
    try:
        _core._attn_set_bf16(False)
        exact = gqa_attention(q, c, 1)
        _core._attn_set_bf16(True)
        dp = gqa_attention(q, c, 1)
    finally:
        _core._attn_set_bf16(was)
    np.testing.assert_allclose(exact, r, rtol=0, atol=ATOL)
    if not _core._attn_bf16():
        return  # no AVX512_BF16 in this build: both calls ran the float32 kernel
    tol = BF16_DP_REL * np.abs(r).max()
    np.testing.assert_allclose(dp, r, rtol=0, atol=tol)
    d = np.abs(dp - exact).max()
    assert d <= tol and (d > 1e-6 or P == 0), d  # the bf16 arithmetic really ran (one key: p = 1, exact)


@pytest.mark.parametrize("Hkv,Dh,P,bs", G8_SHAPES)
@pytest.mark.parametrize("window", [None, 37])
def test_g8_f16_decode_is_float32_exact(rng, Hkv, Dh, P, bs, window):
    """The G=8 decode kernel on an f16 cache (rows widened by vcvtph2ps, float32 arithmetic
    whatever gb_attn_bf16_ok says): exact within float32 rounding of the stored values, with and
    without a window (only its range of keys), the same at 1 and 2 threads."""
    from glmbench.core import _core
    c = _filled(rng, Hkv, Dh, Dh, P, 1, fmt="f16", bs=bs)
    q = rng.standard_normal((1, 8 * Hkv, Dh)).astype(np.float32)
    k, v = c.read(1)
    r = ref.gqa_attention(q, k, v, window=window)
    was, nth = _core._attn_bf16(), glmbench.get_num_threads()
    try:
        for on in (True, False):
            _core._attn_set_bf16(on)
            for th in (1, 2):
                glmbench.set_num_threads(th)
                np.testing.assert_allclose(gqa_attention(q, c, 1, window=window), r, rtol=0, atol=ATOL)
    finally:
        _core._attn_set_bf16(was)
        glmbench.set_num_threads(nth)


# The AVX2 8-lane decode tile (f16 or bf16 cache with Dh % 8 == 0, Dv % 16 == 0; q8_0 / q4_0 with both % 32 == 0;
# T = 1, no soft-capping; compiled in on CPUs with AVX2 but no AVX-512): the G query heads of a KV head as
# its rows, cut into equal blocks of <= 6 (8 -> 2 x 4, 5 -> 5, 7 -> 2 x 4 and 3, 1), 3-key score blocks
# where the blocks have <= 4 rows.
F16_TILE_SHAPES = [  # Hq, Hkv, Dh, Dv, P (cached before the new token), block_size
    (64, 8, 128, 128, 4095, 64),   # Qwen3-32B at 4K: the 128/128 build, splits, an odd last tile
    (16, 2, 128, 128, 70, 16),     # 16-token blocks: tiles cut at block edges
    (10, 2, 64, 32, 100, 32),      # 5 rows, Dv != Dh
    (14, 2, 24, 16, 33, 8),        # 7 rows (4 + 3), Dh = 24: the generic sizes
    (3, 3, 8, 16, 1, 16),          # MHA, 1 row per head, two keys
    (48, 1, 64, 64, 200, 64),      # 48 rows: 8 blocks of 6
]


# (q8_0 / q4_0 rows are whole 32-value blocks: those formats only on the shapes with Dh and Dv % 32 == 0)
@pytest.mark.parametrize("fmt,Hq,Hkv,Dh,Dv,P,bs", [
    (fmt, *s) for fmt in ("f16", "bf16", "q8_0", "q4_0") for s in F16_TILE_SHAPES
    if fmt in ("f16", "bf16") or (s[2] % 32 == 0 and s[3] % 32 == 0)])
@pytest.mark.parametrize("window", [None, 37])
def test_f16_decode_tile_against_reference(rng, Hq, Hkv, Dh, Dv, P, bs, window, fmt):
    """Against the float64 reference of the stored values and against the widened float32 tile
    (the path with the tile switched off), at 1 and 2 threads, with and without a window; f16, bf16
    q8_0 and q4_0 caches (the tile widens each exactly: q8_0 / q4_0 as d * q, one float32 product)."""
    from glmbench.core import _core
    if fmt == "bf16" and not _core._gqa_f16_tile() and _core._attn_bf16():
        pytest.skip("a bf16 cache takes the bf16 dot-product kernel here (AVX512_BF16), not float32 arithmetic")
    c = _filled(rng, Hkv, Dh, Dv, P, 1, fmt=fmt, bs=bs)
    q = rng.standard_normal((1, Hq, Dh)).astype(np.float32)
    k, v = c.read(1)
    r = ref.gqa_attention(q, k, v, window=window)
    assert np.abs(r).max() > 0.1
    was, nth = _core._gqa_f16_tile(), glmbench.get_num_threads()
    try:
        for th in (1, 2):
            glmbench.set_num_threads(th)
            _core._gqa_set_f16_tile(True)
            y = gqa_attention(q, c, 1, window=window)
            np.testing.assert_allclose(y, r, rtol=0, atol=ATOL, err_msg=f"{th} threads")
            _core._gqa_set_f16_tile(False)
            y0 = gqa_attention(q, c, 1, window=window)
            np.testing.assert_allclose(y, y0, rtol=0, atol=ATOL, err_msg=f"tile on/off, {th} threads")
    finally:
        _core._gqa_set_f16_tile(was)
        glmbench.set_num_threads(nth)


@pytest.mark.parametrize("get,put", [("_gqa_f16_tile", "_gqa_set_f16_tile"), ("_mla_f16_tile", "_mla_set_f16_tile"),
                                     ("_mla_own_gemm", "_mla_set_own_gemm")])
def test_attention_switches(get, put):
    """The attention kernels' switches (GQA's and MLA's, tests and A/B timings use them): off reads off,
    and putting the old value back restores it."""
    from glmbench.core import _core
    was = getattr(_core, get)()
    getattr(_core, put)(False)
    try:
        assert getattr(_core, get)() is False
    finally:
        getattr(_core, put)(was)
    assert getattr(_core, get)() is was


@pytest.mark.parametrize("splits", [1, 2, 3, 7, 1000])
def test_split_cache_combine_equals_one_pass(rng, splits):
    c = _filled(rng, 2, 64, 64, 300, 6, bs=64)
    q = rng.standard_normal((6, 4, 64)).astype(np.float32)
    k, v = c.read(1)
    r = ref.gqa_attention(q, k, v)
    np.testing.assert_allclose(gqa_attention(q, c, 1, n_splits=splits), r, rtol=0, atol=ATOL)
    qd = q[-1:]
    cd = KVCache.gqa(1, 400, 2, 64, kv="f32")
    cd.append(0, k, v)
    np.testing.assert_allclose(gqa_attention(qd, cd, 0, n_splits=splits), ref.gqa_attention(qd, k, v), atol=ATOL)


def test_prefill_in_chunks_equals_one_chunk(rng):
    Hq, Hkv, D, n = 8, 2, 64, 45
    k = rng.standard_normal((n, Hkv, D)).astype(np.float32)
    v = rng.standard_normal((n, Hkv, D)).astype(np.float32)
    q = rng.standard_normal((n, Hq, D)).astype(np.float32)
    one = KVCache.gqa(1, 64, Hkv, D, block_size=8, kv="f32")
    one.append(0, k, v)
    y_one = gqa_attention(q, one, 0)
    many = KVCache.gqa(1, 64, Hkv, D, block_size=8, kv="f32")
    parts = []
    for a, b in [(0, 1), (1, 14), (14, 15), (15, 40), (40, 45)]:
        many.append(0, k[a:b], v[a:b])
        parts.append(gqa_attention(q[a:b], many, 0))
    np.testing.assert_allclose(np.concatenate(parts), y_one, rtol=0, atol=1e-6)
    np.testing.assert_allclose(y_one, ref.gqa_attention(q, k, v), rtol=0, atol=ATOL)


def test_strided_query(rng):
    c = _filled(rng, 2, 32, 32, 10, 3)
    big = rng.standard_normal((3, 8, 64)).astype(np.float32)
    q = big[:, ::2, ::2]
    k, v = c.read(1)
    np.testing.assert_allclose(gqa_attention(q, c, 1), ref.gqa_attention(q, k, v), rtol=0, atol=ATOL)


def test_thread_count_does_not_change_results(rng):
    c = _filled(rng, 8, 128, 128, 700, 1, fmt="bf16", bs=64)
    q = rng.standard_normal((1, 64, 128)).astype(np.float32)
    n0 = glmbench.get_num_threads()
    try:
        glmbench.set_num_threads(1)
        y1 = gqa_attention(q, c, 1)
        glmbench.set_num_threads(2)
        y2 = gqa_attention(q, c, 1)
    finally:
        glmbench.set_num_threads(n0)
    np.testing.assert_allclose(y1, y2, rtol=0, atol=1e-6)


def test_bad_input(rng):
    c = _filled(rng, 2, 16, 16, 4, 2)
    q = rng.standard_normal((2, 4, 16)).astype(np.float32)
    with pytest.raises(TypeError, match=r"`q` must be float32, got float64"):
        gqa_attention(q.astype(np.float64), c, 1)
    with pytest.raises(ValueError, match=r"`q` must be 3-D, got shape \(4, 16\)"):
        gqa_attention(q[0], c, 1)
    with pytest.raises(ValueError, match=r"`q` has shape \(2, 4, 8\): axis 2 must be 16 to match the cache's head_dim"):
        gqa_attention(q[..., :8], c, 1)
    with pytest.raises(ValueError, match=r"`q` has 3 heads, which is not a multiple of the cache's n_kv_heads=2"):
        gqa_attention(q[:, :3], c, 1)
    with pytest.raises(ValueError, match=r"`q` has 7 tokens but layer 1 holds only 6"):
        gqa_attention(np.zeros((7, 4, 16), np.float32), c, 1)
    with pytest.raises(ValueError, match=r"`layer`=2 is out of range for a cache of 2 layers"):
        gqa_attention(q, c, 2)
    bad = q.copy()
    bad[1, 2, 3] = np.nan
    with pytest.raises(ValueError, match=r"`q` contains NaN at flat index 99"):
        gqa_attention(bad, c, 1)
    with pytest.raises(ValueError, match=r"`scale` must be a positive finite number, got -1"):
        gqa_attention(q, c, 1, scale=-1)
    with pytest.raises(ValueError, match=r"`n_splits` must be None or an int >= 1, got 0"):
        gqa_attention(q, c, 1, n_splits=0)
    with pytest.raises(TypeError, match=r"`cache` must be a glmbench.KVCache, got dict"):
        gqa_attention(q, {}, 1)
    with pytest.raises(ValueError, match=r"`cache` must be a GQA cache"):
        gqa_attention(q, KVCache.mla(1, 4, 16, 8, kv="f32"), 0)
    assert c.length(1) == 6


def test_no_leak_over_1000_calls(rng):
    c = _filled(rng, 2, 64, 64, 100, 4, fmt="bf16")
    q = rng.standard_normal((4, 8, 64)).astype(np.float32)
    for _ in range(50):
        gqa_attention(q, c, 1, n_splits=3)
    gc.collect()
    with open(f"/proc/{os.getpid()}/statm") as f:
        before = int(f.read().split()[1])
    for _ in range(1000):
        gqa_attention(q, c, 1, n_splits=3)
    gc.collect()
    with open(f"/proc/{os.getpid()}/statm") as f:
        after = int(f.read().split()[1])
    # one leaked output (8 KB) per call would be 8 MB
    assert (after - before) * os.sysconf("SC_PAGE_SIZE") < 2 << 20


# ---- gqa_block ------------------------------------------------------------------------------

def tiny_cfg(name, **over):
    with open(configs.builtin_path(name)) as f:
        hf = json.load(f)
    hf.update(hidden_size=48, num_attention_heads=6, num_key_value_heads=2, head_dim=16, num_hidden_layers=2,
              vocab_size=64, intermediate_size=64)
    hf.update(over)
    return configs.load(hf)


def tiny_weights(rng, cfg, bias=False):
    D, Hq, Hkv, Dh = cfg.hidden_size, cfg.n_heads, cfg.n_kv_heads, cfg.head_dim
    s = D ** -0.5
    gq = 2 if cfg.attn_output_gate else 1      # Qwen3.5 / Qwen3-Next: each head's query and its output gate
    w = {"q_proj.weight": rng.standard_normal((gq * Hq * Dh, D)) * s,
         "k_proj.weight": rng.standard_normal((Hkv * Dh, D)) * s,
         "v_proj.weight": rng.standard_normal((Hkv * Dh, D)) * s,
         "o_proj.weight": rng.standard_normal((D, Hq * Dh)) * (Hq * Dh) ** -0.5}
    if cfg.qk_norm:   # (Command-R+: a LayerNorm weight per head, held flat)
        w["q_norm.weight"] = 1 + 0.1 * rng.standard_normal(Hq * Dh if cfg.layer_norm else Dh)
        w["k_norm.weight"] = 1 + 0.1 * rng.standard_normal(Hkv * Dh if cfg.layer_norm else Dh)
    if bias:
        for n, size in (("q_proj", Hq * Dh), ("k_proj", Hkv * Dh), ("v_proj", Hkv * Dh)):
            w[n + ".bias"] = 0.1 * rng.standard_normal(size)
    return {k: np.asarray(a, np.float32) for k, a in w.items()}


@pytest.mark.parametrize("name,over,bias,layer", [
    ("qwen3-32b", {}, False, 1),                               # q/k norm, half rope
    ("seed-oss-36b", {}, True, 1),                             # attention bias on q/k/v, rope 1e7
    ("mistral-small-24b", {"sliding_window": None}, False, 1),
    ("command-r-plus", {"hidden_size": 96}, False, 1),         # per-head q/k LayerNorm, interleaved rope
    ("command-a", {"hidden_size": 96, "num_hidden_layers": 4, "sliding_window": 64}, False, 3),  # global: no rope
    ("qwen3.5-9b", {"num_hidden_layers": 4}, False, 3),      # sigmoid output gate, partial rope, q/k norm
])
def test_block_matches_reference_over_chunks(rng, name, over, bias, layer):
    cfg = tiny_cfg(name, **over)
    assert cfg.layer_rotates(layer) == (name != "command-a")
    w = tiny_weights(rng, cfg, bias)
    w0 = {k: a.copy() for k, a in w.items()}
    x = rng.standard_normal((13, cfg.hidden_size)).astype(np.float32)
    x0 = x.copy()
    cache = KVCache.gqa(2, 32, cfg.n_kv_heads, cfg.head_dim, kv="f32", block_size=4)
    ys, kp, vp = [], None, None
    for a, b in [(0, 6), (6, 7), (7, 13)]:
        pos = np.arange(a, b) + 100      # positions need not start at 0
        y = gqa_block(x[a:b], w, cache, 1, pos, cfg, model_layer=layer)
        r, kp, vp = ref.gqa_block(x[a:b], w, pos, cfg, kp, vp, model_layer=layer)
        # the reference's float64 K/V vs our float32 through two linears and rope: ~1e-6
        np.testing.assert_allclose(y, r, rtol=0, atol=5e-5)
        ys.append(y)
    k, v = cache.read(1)
    np.testing.assert_allclose(k, kp, rtol=0, atol=1e-5)
    np.testing.assert_allclose(v, vp, rtol=0, atol=1e-5)
    for kk in w:
        np.testing.assert_array_equal(w[kk], w0[kk])
    np.testing.assert_array_equal(x, x0)


def test_block_bad_input(rng):
    cfg = tiny_cfg("qwen3-32b")
    w = tiny_weights(rng, cfg)
    cache = KVCache.gqa(2, 8, cfg.n_kv_heads, cfg.head_dim, kv="f32")
    x = rng.standard_normal((3, cfg.hidden_size)).astype(np.float32)
    with pytest.raises(ValueError, match=r"`positions` must have shape \(3,\)"):
        gqa_block(x, w, cache, 0, np.arange(4), cfg)
    with pytest.raises(TypeError, match=r"`x` must be float32, got float64"):
        gqa_block(x.astype(np.float64), w, cache, 0, np.arange(3), cfg)
    with pytest.raises(ValueError, match=r"`cache` holds 4 KV heads"):
        gqa_block(x, w, KVCache.gqa(1, 8, 4, cfg.head_dim, kv="f32"), 0, np.arange(3), cfg)
    with pytest.raises(ValueError, match=r"`layer`=2 is out of range"):
        gqa_block(x, w, cache, 2, np.arange(3), cfg)
    with pytest.raises(KeyError, match=r"q_norm.weight"):
        gqa_block(x, {k: a for k, a in w.items() if k != "q_norm.weight"}, cache, 0, np.arange(3), cfg)
    gqa_block(x, w, cache, 0, np.arange(3), cfg)
    with pytest.raises(ValueError, match=r"KV cache full: layer 0 holds 3 of 8 tokens, cannot append 6"):
        gqa_block(np.concatenate([x, x]), w, cache, 0, np.arange(6), cfg)
    assert cache.length(0) == 3


def test_block_refuses_a_bad_weight_before_appending(rng):
    """A weight of the wrong shape was found only after the new K/V were appended (o_proj: a failed call left
    the cache 5 tokens longer) or deep in NumPy ("cannot reshape array of size 400 into shape (5,6,16)"); a
    model_layer past the config, a KVCacheGroup, a list for `w` and uint64 positions past int64 (wrapped to
    negative ones) went through or failed deep inside. Each is now one error naming it, the cache unchanged."""
    from glmbench.core.kvcache import KVCacheGroup
    cfg = tiny_cfg("qwen3-32b")
    w = tiny_weights(rng, cfg, bias=True)
    x = rng.standard_normal((5, cfg.hidden_size)).astype(np.float32)
    cache = KVCache.gqa(2, 16, cfg.n_kv_heads, cfg.head_dim, kv="f32", block_size=4)
    bad = [("o_proj.weight", w["o_proj.weight"][:, :-1], r"'o_proj.weight' has shape \(48, 95\); the config needs \(48, 96\)"),
           ("q_proj.weight", w["q_proj.weight"][:-16], r"'q_proj.weight' has shape \(80, 48\); the config needs \(96, 48\)"),
           ("v_proj.bias", w["v_proj.bias"][:3], r"'v_proj.bias' has shape \(3,\); the config needs \(32,\)"),
           ("o_proj.bias", np.zeros(3, np.float32), r"'o_proj.bias' has shape \(3,\)")]
    for name, a, msg in bad:
        with pytest.raises(ValueError, match=msg):
            gqa_block(x, {**w, name: a}, cache, 0, np.arange(5), cfg)
        assert cache.length(0) == 0
    with pytest.raises(ValueError, match=r"`model_layer`=2 is out of range for a model of 2 layers"):
        gqa_block(x, w, cache, 0, np.arange(5), cfg, model_layer=2)
    with pytest.raises(ValueError, match=r"`model_layer`=-1 is out of range"):
        gqa_block(x, w, cache, 0, np.arange(5), cfg, model_layer=-1)
    with pytest.raises(ValueError, match=r"`positions` must fit int64"):
        gqa_block(x, w, cache, 0, np.arange(5, dtype=np.uint64) + np.uint64(2**63), cfg)
    with pytest.raises(TypeError, match=r"`w` must be a dict"):
        gqa_block(x, list(w.values()), cache, 0, np.arange(5), cfg)
    group = KVCacheGroup(16, [(cfg.n_kv_heads, cfg.head_dim, cfg.head_dim)] * 2, kv="f32")
    with pytest.raises(TypeError, match=r"KVCacheGroup: pass the part holding the layer.*cache.locate"):
        gqa_block(x, w, group, 0, np.arange(5), cfg)
    assert cache.length(0) == 0 and group.length(0) == 0
    part, j = group.locate(1)
    y = gqa_block(x, w, part, j, np.arange(5), cfg, model_layer=1)
    r, _, _ = ref.gqa_block(x, w, np.arange(5), cfg, model_layer=1)
    np.testing.assert_allclose(y, r, rtol=0, atol=5e-5)


def test_sink_attention_twin_refuses_bad_input(rng):
    """gqa_sink_attention (the NumPy twin) failed deep inside on bad input (AttributeError for a list of sinks,
    einsum's "Size of label 'd'", ZeroDivisionError for 0 KV heads), returned NaN for a NaN query and took
    window=0 (every key masked) and a negative scale; now one ValueError / TypeError naming the argument."""
    from glmbench.core.attention import gqa_sink_attention
    q = rng.standard_normal((3, 4, 8)).astype(np.float32)
    k = rng.standard_normal((7, 2, 8)).astype(np.float32)
    v = rng.standard_normal((7, 2, 8)).astype(np.float32)
    sk = rng.standard_normal(4).astype(np.float32)
    np.testing.assert_allclose(gqa_sink_attention(q, k, v, sk, window=3),
                               ref.gqa_attention(q, k, v, window=3, sinks=sk), rtol=0, atol=1e-5)
    with pytest.raises(TypeError, match=r"`sinks` must be a float numpy.ndarray, got list"):
        gqa_sink_attention(q, k, v, sk.tolist())
    for a in ((q, k[:, :, :4], v, sk), (q, k, v[:5], sk), (q, k[:, :0], v[:, :0], sk), (q, k[:2], v[:2], sk)):
        with pytest.raises(ValueError, match=r"gqa_sink_attention: q .* do not fit"):
            gqa_sink_attention(*a)
    with pytest.raises(ValueError, match=r"`q` contains NaN or inf"):
        gqa_sink_attention(np.full_like(q, np.nan), k, v, sk)
    with pytest.raises(ValueError, match=r"`q` must be 3-D"):
        gqa_sink_attention(q[0], k, v, sk)
    with pytest.raises(ValueError, match=r"`window` must be None or an int >= 1, got 0"):
        gqa_sink_attention(q, k, v, sk, window=0)
    with pytest.raises(ValueError, match=r"`scale` must be a positive finite number"):
        gqa_sink_attention(q, k, v, sk, scale=-1.0)
    c = _filled(rng, 2, 8, 8, 0, 3, layer=0)
    for kw, name in ((dict(scale="a"), "scale"), (dict(softcap="a"), "softcap"), (dict(scale=None, softcap=True), "softcap")):
        with pytest.raises(TypeError, match=rf"`{name}` must be a number"):
            gqa_attention(q, c, 0, **kw)


# ---- oracle 2: HF transformers' attention module ----------------------------------------------

@pytest.mark.slow
def test_block_matches_hf_qwen3(rng):
    """Qwen3Attention (eager, float32: q/k norm, half rope, GQA 6:2) on a tiny config vs gqa_block
    fed in chunks; HF runs the whole sequence with an explicit causal mask."""
    torch = pytest.importorskip("torch")
    pytest.importorskip("transformers")
    from transformers.models.qwen3 import modeling_qwen3 as hfm
    from transformers.models.qwen3.configuration_qwen3 import Qwen3Config

    d = dict(vocab_size=64, hidden_size=48, intermediate_size=64, num_hidden_layers=2, num_attention_heads=6,
             num_key_value_heads=2, head_dim=16, rms_norm_eps=1e-6, max_position_embeddings=256,
             rope_parameters={"rope_type": "default", "rope_theta": 1e6})
    hcfg = Qwen3Config(**d)
    hcfg._attn_implementation = "eager"
    attn = hfm.Qwen3Attention(hcfg, layer_idx=0).float().eval()
    rot = hfm.Qwen3RotaryEmbedding(hcfg)
    cfg = configs.load(dict(d, model_type="qwen3"))
    w = tiny_weights(rng, cfg)
    attn.load_state_dict({k: torch.from_numpy(a) for k, a in w.items()}, strict=True)
    n = 9
    x = rng.standard_normal((n, 48)).astype(np.float32)
    pos = np.arange(n)
    with torch.no_grad():
        xt = torch.from_numpy(x)[None]
        mask = torch.full((n, n), float("-inf")).triu(1)[None, None]
        y_hf = attn(xt, rot(xt, torch.from_numpy(pos)[None]), mask)[0][0].numpy()
    cache = KVCache.gqa(1, 16, 2, 16, block_size=4, kv="f32")
    ys = [gqa_block(x[a:b], w, cache, 0, pos[a:b], cfg) for a, b in [(0, 3), (3, 4), (4, 9)]]
    np.testing.assert_allclose(np.concatenate(ys), y_hf, rtol=0, atol=2e-5)


def test_block_sliding_window_matches_reference(rng):
    # Mistral: every layer windowed (4 tokens); a full cache, attention reads only the window
    cfg = tiny_cfg("mistral-small-24b", sliding_window=4)
    w = tiny_weights(rng, cfg)
    cache = KVCache.gqa(1, 16, cfg.n_kv_heads, cfg.head_dim, kv="f32")
    x = rng.standard_normal((11, cfg.hidden_size)).astype(np.float32)
    kp = vp = None
    for a, b in [(0, 3), (3, 9), (9, 10), (10, 11)]:
        y = gqa_block(x[a:b], w, cache, 0, np.arange(a, b), cfg)
        r, kp, vp = ref.gqa_block(x[a:b], w, np.arange(a, b), cfg, kp, vp)
        np.testing.assert_allclose(y, r, rtol=0, atol=5e-5)
    assert cache.length(0) == 11
    # a ring cache whose window disagrees with the config's is refused
    ring = KVCache.gqa(1, 16, cfg.n_kv_heads, cfg.head_dim, kv="f32", windows=[3], chunk=4)
    with pytest.raises(ValueError, match=r"cache layer 0 keeps a window of 3 tokens but model layer 0 attends to 4"):
        gqa_block(x[:2], w, ring, 0, np.arange(2), cfg)
    assert ring.length(0) == 0


# ---- sliding windows and soft-capping ------------------------------------------------------------
# The kernel against the float64 reference on the values the cache stores: windows of 1 (each query
# sees only itself), = context, > context; rings that wrapped; a query at every position mod the
# window; decode after prefill = one prefill; soft-capped logits.

def _kv(rng, L, Hkv=2, Dh=32, Dv=24):
    return (rng.standard_normal((L, Hkv, Dh)).astype(np.float32),
            rng.standard_normal((L, Hkv, Dv)).astype(np.float32))


@pytest.mark.parametrize("W", [1, 2, 7, 31, 60, 61, 200])     # 61 = the context, 200 > it
@pytest.mark.parametrize("P,T", [(0, 61), (45, 16), (60, 1)])
def test_window_matches_reference(rng, W, P, T):
    k, v = _kv(rng, P + T)
    c = KVCache.gqa(1, 64, 2, 32, 24, kv="f32", block_size=8)
    c.append(0, k, v)
    q = rng.standard_normal((T, 6, 32)).astype(np.float32)
    q0 = q.copy()
    y = gqa_attention(q, c, 0, window=W)
    np.testing.assert_allclose(y, ref.gqa_attention(q, k, v, window=W), rtol=0, atol=ATOL)
    np.testing.assert_array_equal(q, q0)
    if W >= P + T:   # a window as long as the context is plain causal attention
        np.testing.assert_allclose(y, gqa_attention(q, c, 0), rtol=0, atol=1e-6)
    if W == 1:       # each query sees only its own key: the output is its own V row, per group
        np.testing.assert_allclose(y, np.repeat(v[P:], 3, axis=1), rtol=0, atol=1e-6)


@pytest.mark.parametrize("fmt", ["f32", "f16", "bf16", "q8_0"])
@pytest.mark.parametrize("W,chunk,bs", [(1, 1, 4), (5, 3, 4), (16, 16, 16), (24, 8, 8)])
def test_ring_wraps_and_every_position_mod_window(rng, fmt, W, chunk, bs):
    """Tokens appended in pieces of up to `chunk`, attended after each piece: the ring of
    ceil((W + chunk) / bs) blocks wraps many times; over 3 rings' worth of positions a query
    lands on every position mod the window and mod the ring."""
    ring_blocks = -(-(W + chunk) // bs)
    L = 3 * ring_blocks * bs + 5
    k, v = _kv(rng, L, Dh=64, Dv=32)
    kr, vr = ref.kv_round(k, fmt), ref.kv_round(v, fmt)
    c = KVCache.gqa(2, L, 2, 64, 32, kv=fmt, block_size=bs, windows=[W, 0], chunk=chunk)
    assert c.windows == (W, 0) and c.chunk == chunk
    assert c.ring_tokens(0) == ring_blocks * bs and c.ring_tokens(1) == L
    G = 8 if fmt == "bf16" else 4   # bf16 with 8 heads per group: the G=8 decode kernel
    tol = BF16_DP_REL if fmt == "bf16" else ATOL
    seen = set()
    t = 0
    sizes = [1, chunk, 2, chunk, 1]
    i = 0
    while t < L:
        n = min(sizes[i % len(sizes)], L - t)
        i += 1
        c.append(0, k[t:t + n], v[t:t + n])
        t += n
        q = rng.standard_normal((n, 2 * G, 64)).astype(np.float32)
        y = gqa_attention(q, c, 0)
        want = ref.gqa_attention(q, kr[:t], vr[:t], window=W)
        np.testing.assert_allclose(y, want, rtol=0, atol=tol * max(1.0, np.abs(want).max()))
        seen.update(p % W for p in range(t - n, t))
    assert seen == set(range(W)) and c.length(0) == L and c.held(0) == min(L, W)
    got_k, got_v = c.read(0)                      # read: the window's tokens, oldest first
    np.testing.assert_array_equal(got_k, kr[L - min(L, W):].astype(np.float32))
    np.testing.assert_array_equal(got_v, vr[L - min(L, W):].astype(np.float32))


def test_decode_after_prefill_equals_one_prefill(rng):
    W, L, P = 10, 90, 50
    k, v = _kv(rng, L)
    q = rng.standard_normal((L, 4, 32)).astype(np.float32)
    one = KVCache.gqa(1, L, 2, 32, 24, kv="f32", block_size=8)
    one.append(0, k, v)
    y_one = gqa_attention(q, one, 0, window=W)
    ring = KVCache.gqa(1, L, 2, 32, 24, kv="f32", block_size=8, windows=[W], chunk=P)
    ring.append(0, k[:P], v[:P])
    ys = [gqa_attention(q[:P], ring, 0)]
    for t in range(P, L):
        ring.append(0, k[t:t + 1], v[t:t + 1])
        ys.append(gqa_attention(q[t:t + 1], ring, 0))
    np.testing.assert_allclose(np.concatenate(ys), y_one, rtol=0, atol=1e-5)
    assert ring.ring_tokens(0) == 64 < L    # the ring really wrapped


@pytest.mark.parametrize("cap", [0.5, 3.0, 50.0])
def test_softcap_matches_reference(rng, cap):
    k, v = _kv(rng, 70)
    c = KVCache.gqa(1, 70, 2, 32, 24, kv="f32", block_size=16)
    c.append(0, k, v)
    q = 3 * rng.standard_normal((5, 8, 32)).astype(np.float32)   # large logits: the cap bends them
    for W in (None, 9):
        y = gqa_attention(q, c, 0, softcap=cap, window=W, scale=0.2)
        np.testing.assert_allclose(y, ref.gqa_attention(q, k, v, scale=0.2, window=W, softcap=cap), rtol=0, atol=ATOL)
    assert np.abs(gqa_attention(q, c, 0, softcap=cap) - gqa_attention(q, c, 0)).max() > 1e-3


def test_window_decode_reads_the_window_only(rng):
    """At depth 4096 with a window of 64, a decode step touches 64 keys: poisoning every other stored
    key (NaN in their rows would reach the output) leaves the result finite and equal."""
    L, W = 4096, 64
    k, v = _kv(rng, L)
    c = KVCache.gqa(1, L, 2, 32, 24, kv="f32", block_size=64)
    bad_k, bad_v = k.copy(), v.copy()
    bad_k[:L - W] = 1e30        # finite, but any score against them would dominate the softmax
    c.append(0, bad_k, bad_v)
    q = rng.standard_normal((1, 4, 32)).astype(np.float32)
    y = gqa_attention(q, c, 0, window=W)
    np.testing.assert_allclose(y, ref.gqa_attention(q, k[L - W:], v[L - W:]), rtol=0, atol=ATOL)


def test_window_thread_counts_agree(rng):
    L = 900
    k, v = _kv(rng, L, Hkv=8, Dh=128, Dv=128)
    n0 = glmbench.get_num_threads()
    outs = []
    try:
        for n in (1, 2):
            glmbench.set_num_threads(n)
            c = KVCache.gqa(1, L, 8, 128, kv="bf16", windows=[128], chunk=64)
            for a in range(0, L, 64):
                c.append(0, k[a:a + 64], v[a:a + 64])
            q = rng.standard_normal((1, 64, 128)).astype(np.float32) if not outs else outs[0][0]
            full = KVCache.gqa(1, L, 8, 128, kv="f16")
            full.append(0, k, v)
            qp = np.ascontiguousarray(np.repeat(q, 50, axis=0))    # a prefill of 50 queries
            outs.append((q, gqa_attention(q, c, 0), gqa_attention(q, c, 0, softcap=20.0),
                         gqa_attention(qp, full, 0, window=100, softcap=20.0)))
    finally:
        glmbench.set_num_threads(n0)
    for a, b in zip(outs[0][1:], outs[1][1:]):
        np.testing.assert_allclose(a, b, rtol=0, atol=1e-6)


def test_window_bad_input(rng):
    k, v = _kv(rng, 20)
    c = KVCache.gqa(1, 40, 2, 32, 24, kv="f32", block_size=4, windows=[4], chunk=4)
    q = rng.standard_normal((2, 4, 32)).astype(np.float32)
    for bad, err, match in [(0, ValueError, r"`window` must be None or an int >= 1, got 0"),
                            (-3, ValueError, r"`window` must be None or an int >= 1, got -3"),
                            (2.5, TypeError, r"`window` must be None or an int >= 1, got float 2.5")]:
        with pytest.raises(err, match=match):
            gqa_attention(q, c, 0, window=bad)
    for bad in (0.0, -1.0, float("nan"), float("inf")):
        with pytest.raises(ValueError, match=r"`softcap` must be None or a positive finite number"):
            gqa_attention(q, c, 0, softcap=bad)
    with pytest.raises(ValueError, match=r"ring of 8: at most 5 tokens can be appended \(and attended\) at once, got 6"):
        c.append(0, k[:6], v[:6])
    assert c.length(0) == 0     # nothing written
    for a in range(0, 20, 4):
        c.append(0, k[a:a + 4], v[a:a + 4])
    # 8 queries with a window of 4 need keys from 9 on; the ring keeps 12 .. 19
    with pytest.raises(ValueError, match=r"no longer stores the keys these 8 queries need with a window of 4"):
        gqa_attention(np.zeros((8, 4, 32), np.float32), c, 0)
    with pytest.raises(ValueError, match=r"`q` has 21 tokens but layer 0 holds only 20"):
        gqa_attention(np.zeros((21, 4, 32), np.float32), c, 0)
    nan = q.copy()
    nan[0, 1, 2] = np.nan
    with pytest.raises(ValueError, match=r"`q` contains NaN"):
        gqa_attention(nan, c, 0)
    with pytest.raises(TypeError, match=r"`q` must be float32"):
        gqa_attention(q.astype(np.float64), c, 0)
    np.testing.assert_allclose(gqa_attention(q[:, :, :], c, 0, window=2),
                               ref.gqa_attention(q, k, v, window=2), rtol=0, atol=ATOL)
    # the core checks its own arguments too
    from glmbench.core import _core
    with pytest.raises(ValueError, match=r"`window` must be >= 1 token \(0 = the layer's own\), got -1"):
        _core.gqa_attention(q, c, 0, 0.0, 0, -1, 0.0)
    with pytest.raises(ValueError, match=r"`softcap` must be a finite number >= 0"):
        _core.gqa_attention(q, c, 0, 0.0, 0, 0, -2.0)


# ---- attention sinks (GPT-OSS): one logit per query head in the softmax denominator ----
SINK_CASES = [  # Hq, Hkv, Dh, Dv, P, T, fmt, window, n_splits
    (64, 8, 128, 128, 300, 1, "f16", None, None),   # Qwen3-shaped decode on the AVX2 f16 tile, auto splits
    (64, 8, 64, 64, 200, 1, "bf16", 40, 3),         # gpt-oss-shaped decode (64 / 8 heads of 64), windowed, 3 splits
    (8, 2, 64, 64, 120, 9, "f32", None, 4),         # prefill rows, every split boundary
    (8, 2, 64, 64, 120, 9, "f32", 5, 1),            # prefill, window 5 (the first rows see fewer keys)
    (6, 3, 32, 64, 77, 1, "q8_0", None, 2),         # quantized cache, Dv != Dh
    (4, 4, 16, 16, 0, 6, "f32", None, None),        # an empty cache, MHA
]


@pytest.mark.parametrize("Hq,Hkv,Dh,Dv,P,T,fmt,window,splits", SINK_CASES)
def test_sinks_match_reference(rng, Hq, Hkv, Dh, Dv, P, T, fmt, window, splits):
    """gqa_attention(sinks=) against the float64 reference (reference.gqa_attention(sinks=), HF
    GPT-OSS's definition) on the values the cache stores, and against the NumPy twin; inputs kept."""
    from glmbench.core.attention import gqa_sink_attention
    c = _filled(rng, Hkv, Dh, Dv, P, T, fmt=fmt, bs=32)
    q = rng.standard_normal((T, Hq, Dh)).astype(np.float32)
    sinks = (rng.standard_normal(Hq) * 2).astype(np.float32)
    sinks[0] = 30.0    # a sink far above every score: that head's output nearly vanishes
    q0, s0 = q.copy(), sinks.copy()
    k, v = c.read(1)
    y = gqa_attention(q, c, 1, window=window, n_splits=splits, sinks=sinks)
    want = ref.gqa_attention(q, k, v, window=window, sinks=sinks)
    tol = ATOL
    from glmbench.core import _core
    if fmt == "bf16" and Hq == 8 * Hkv and T == 1 and _core._attn_bf16():
        # AVX512_BF16: this decode takes the bf16 dot-product arithmetic (BF16_DP_REL above); the
        # float32 one, switched to, is exact within ATOL
        tol = BF16_DP_REL * np.abs(want).max()
        try:
            _core._attn_set_bf16(False)
            exact = gqa_attention(q, c, 1, window=window, n_splits=splits, sinks=sinks)
        finally:
            _core._attn_set_bf16(True)
        np.testing.assert_allclose(exact, want, rtol=0, atol=ATOL)
    np.testing.assert_allclose(y, want, rtol=0, atol=tol)
    np.testing.assert_allclose(y, gqa_sink_attention(q, k, v, sinks, window=window), rtol=0, atol=tol)
    assert np.abs(y[:, 0]).max() < 1e-5   # about e^(s - 30) of the rows: the sink takes nearly all the mass
    # the sinks take part: without them the outputs differ by far more than the tolerance
    assert np.abs(y - gqa_attention(q, c, 1, window=window, n_splits=splits)).max() > 100 * ATOL
    np.testing.assert_array_equal(q, q0)
    np.testing.assert_array_equal(sinks, s0)
    # very negative sinks are no sinks
    np.testing.assert_allclose(gqa_attention(q, c, 1, window=window, n_splits=splits, sinks=np.full(Hq, -1e30, np.float32)),
                               ref.gqa_attention(q, k, v, window=window), rtol=0, atol=tol)


def test_sinks_bad_input(rng):
    c = _filled(rng, 2, 16, 16, 10, 1)
    q = rng.standard_normal((1, 4, 16)).astype(np.float32)
    with pytest.raises(ValueError, match="sinks"):
        gqa_attention(q, c, 1, sinks=np.zeros(3, np.float32))          # not one per query head
    with pytest.raises(ValueError, match="sinks"):
        gqa_attention(q, c, 1, sinks=np.array([0, np.nan, 0, 0], np.float32))
    with pytest.raises(ValueError, match="sinks"):
        gqa_attention(q, c, 1, sinks=np.array([0, np.inf, 0, 0], np.float32))
    with pytest.raises((TypeError, ValueError), match="sinks"):
        gqa_attention(q, c, 1, sinks=np.zeros((2, 2), np.float32))
    with pytest.raises((TypeError, ValueError), match="sinks"):
        gqa_attention(q, c, 1, sinks=np.zeros(4, np.int32))
    s = np.zeros(8, np.float32)[::2]   # a strided view is read as its values
    np.testing.assert_allclose(gqa_attention(q, c, 1, sinks=s), gqa_attention(q, c, 1, sinks=np.zeros(4, np.float32)),
                               rtol=0, atol=0)

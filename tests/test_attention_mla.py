"""MLA attention (naive / absorbed / flash) over the latent cache and the mla_block sub-layer,
against the float64 reference (glmbench.core.reference.mla_attention / mla_block) and each other."""
import gc
import json
import os

import numpy as np
import pytest

import glmbench
from glmbench.models import configs
from glmbench.core import reference as ref
from glmbench.core.attention import MLA_STRATEGIES, mla_attention, mla_block
from glmbench.core.kvcache import KVCache

# The absorbed form reassociates (q W_k^T) c instead of q (W_k c) and runs R + Dr = 576-long float32
# dot products; with |q|, |c| ~ 1 and W ~ 1/sqrt(R) the scores carry ~1e-6 relative error and the
# outputs (convex combinations of ~unit values) ~1e-6 absolute; 3e-5 leaves a 10x margin.
ATOL = 3e-5


@pytest.fixture
def f32_tile():
    """bf16 caches through the float32 tile (the bf16 dot-product tile off): exact to ATOL."""
    from glmbench.core import _core
    was = _core._attn_bf16()
    _core._attn_set_bf16(False)
    yield
    _core._attn_set_bf16(was)


def _case(rng, H, Dn, Dr, Dv, R, P, T, fmt="f32", bs=16):
    c = KVCache.mla(2, P + T + 3, R, Dr, kv=fmt, block_size=bs)
    lat = rng.standard_normal((P + T, R)).astype(np.float32)
    kr = rng.standard_normal((P + T, Dr)).astype(np.float32)
    if P:
        c.append(1, lat[:P], kr[:P])
    c.append(1, lat[P:], kr[P:])
    qn = rng.standard_normal((T, H, Dn)).astype(np.float32)
    qr = rng.standard_normal((T, H, Dr)).astype(np.float32)
    w = (rng.standard_normal((H * (Dn + Dv), R)) / np.sqrt(R)).astype(np.float32)
    return c, qn, qr, w


SHAPES = [  # H, Dn, Dr, Dv, R, P, T
    (20, 192, 64, 256, 512, 70, 1),     # GLM-4.7-Flash decode
    (20, 192, 64, 256, 512, 0, 6),      # GLM-4.7-Flash prefill into an empty cache
    (16, 128, 64, 128, 512, 33, 2),     # DeepSeek-V2-Lite
    (3, 5, 6, 7, 11, 40, 4),            # odd everything
    (1, 8, 2, 3, 4, 0, 1),              # one head, one token
]


@pytest.mark.parametrize("H,Dn,Dr,Dv,R,P,T", SHAPES)
@pytest.mark.parametrize("strategy", MLA_STRATEGIES)
def test_matches_reference(rng, H, Dn, Dr, Dv, R, P, T, strategy):
    c, qn, qr, w = _case(rng, H, Dn, Dr, Dv, R, P, T)
    before = (qn.copy(), qr.copy(), w.copy())
    lat, kr = c.read(1)
    y = mla_attention(qn, qr, c, 1, w, v_head_dim=Dv, strategy=strategy)
    assert y.shape == (T, H, Dv) and y.dtype == np.float32
    np.testing.assert_allclose(y, ref.mla_attention(qn, qr, lat, kr, w, Dv), rtol=0, atol=ATOL)
    for a, b in zip((qn, qr, w), before):
        np.testing.assert_array_equal(a, b)


@pytest.mark.parametrize("T,R", [(1, 512), (3, 512), (1, 800)])
def test_bf16_kv_b_matches_reference(rng, T, R, f32_tile):
    # kv_b stored as bf16 (as models load it): the absorbed query's per-head product reads 32
    # weights per load, even and odd columns apart, and writes them back in column order
    # (R = 800: a 512-column pass, a 256-column pass and a 32-column scalar tail)
    c, qn, qr, w = _case(rng, 20, 192, 64, 256, R, 300, T, fmt="f32", bs=64)
    wb = ref.to_bf16(w)
    lat, kr = c.read(1)
    r = ref.mla_attention(qn, qr, lat, kr, ref.weight_f64(wb), 256)
    for s in MLA_STRATEGIES:
        np.testing.assert_allclose(mla_attention(qn, qr, c, 1, wb, v_head_dim=256, strategy=s), r, rtol=0,
                                   atol=ATOL, err_msg=s)


def test_strategies_agree_and_scale(rng, f32_tile):
    c, qn, qr, w = _case(rng, 20, 192, 64, 256, 512, 150, 3, fmt="bf16", bs=64)
    ys = {s: mla_attention(qn, qr, c, 1, w, v_head_dim=256, strategy=s, scale=0.05) for s in MLA_STRATEGIES}
    lat, kr = c.read(1)
    r = ref.mla_attention(qn, qr, lat, kr, w, 256, scale=0.05)
    for s, y in ys.items():
        np.testing.assert_allclose(y, r, rtol=0, atol=ATOL, err_msg=s)
    np.testing.assert_allclose(ys["absorbed"], ys["flash"], rtol=0, atol=2e-6)
    np.testing.assert_allclose(ys["naive"], ys["flash"], rtol=0, atol=ATOL)


@pytest.mark.parametrize("fmt", ["f16", "bf16", "q8_0", "q4_0"])
def test_cache_formats_against_the_stored_values(rng, fmt, f32_tile):
    c, qn, qr, w = _case(rng, 4, 32, 32, 32, 64, 100, 3, fmt=fmt, bs=32)
    lat, kr = c.read(1)
    r = ref.mla_attention(qn, qr, lat, kr, w, 32)
    for s in MLA_STRATEGIES:
        np.testing.assert_allclose(mla_attention(qn, qr, c, 1, w, v_head_dim=32, strategy=s), r, rtol=0, atol=ATOL)


# The bf16 dot-product tile (bf16 caches, AVX512_BF16) rounds the absorbed query and the softmax
# weights p to bf16 (relative error <= 2^-9 each). p's rounding moves each output by at most
# 2^-9 max|v|; the query's moves the scores by ~2^-9 |q . k| / sqrt(dims) (random rounding
# errors) and so the outputs, measured here at 1-3e-3 of their largest magnitude. 1e-2 leaves
# a 3x margin and is still far below what a wrong lane order or a lost key would give (O(1)).
BF16_TILE_REL = 1e-2

BF16_SHAPES = [  # H, Dn, Dr, Dv, R, P, T, block_size
    (20, 192, 64, 256, 512, 4095, 1, 64),   # GLM-4.7-Flash decode at 4K: splits, whole tiles + an odd last one
    (20, 192, 64, 256, 512, 33, 6, 16),     # GLM prefill onto a short cache: causal rows, odd tiles
    (16, 128, 64, 128, 512, 200, 1, 256),   # DeepSeek-V2-Lite decode
    (3, 8, 6, 8, 32, 45, 4, 16),            # R + Dr = 38: a masked tail in the score dot products
    (4, 16, 8, 16, 64, 0, 1, 16),           # a single key (a pair with no partner)
]


@pytest.mark.parametrize("H,Dn,Dr,Dv,R,P,T,bs", BF16_SHAPES)
def test_bf16_tile_against_reference(rng, H, Dn, Dr, Dv, R, P, T, bs):
    from glmbench.core import _core
    if not _core._attn_bf16():
        pytest.skip("the bf16 dot-product tile is not compiled in (no AVX512_BF16 at build time)")
    c, qn, qr, w = _case(rng, H, Dn, Dr, Dv, R, P, T, fmt="bf16", bs=bs)
    lat, kr = c.read(1)
    r = ref.mla_attention(qn, qr, lat, kr, w, Dv)
    tol = BF16_TILE_REL * np.abs(r).max()
    got = {s: mla_attention(qn, qr, c, 1, w, v_head_dim=Dv, strategy=s) for s in ("absorbed", "flash")}
    for s, y in got.items():
        np.testing.assert_allclose(y, r, rtol=0, atol=tol, err_msg=s)
    # absorbed and flash split the cache differently, so p is rounded against other running maxima
    np.testing.assert_allclose(got["absorbed"], got["flash"], rtol=0, atol=tol)
    _core._attn_set_bf16(False)
    try:
        exact = mla_attention(qn, qr, c, 1, w, v_head_dim=Dv, strategy="flash")
    finally:
        _core._attn_set_bf16(True)
    np.testing.assert_allclose(exact, r, rtol=0, atol=ATOL)
    # the bf16 tile really ran: its rounding shows, at the size the bound expects (one key alone
    # has p = 1, exact in bf16, and its output is the value row whatever the score)
    d = np.abs(got["flash"] - exact).max()
    assert d <= tol and (d > 1e-6 or P + T == 1), d


# The f16 decode tile (f16 caches, AVX-512 or AVX2 + F16C; T = 1, or T x H <= 40 query rows): the rows widened in registers,
# float32 arithmetic throughout, so the same bound as the float32 tile (ATOL) holds.
F16_SHAPES = [  # H, Dn, Dr, Dv, R, P, T, block_size
    (20, 192, 64, 256, 512, 4000, 1, 64),   # GLM-4.7-Flash decode: 4001 keys, an odd last tile (the 576/512 build)
    (20, 192, 64, 256, 512, 1001, 2, 16),   # GLM, T = 2: 40 causal rows in 4 blocks of 10, 16-token blocks
    (16, 128, 64, 128, 512, 333, 2, 64),    # DeepSeek-V2-Lite: 32 rows in 4 blocks of 8
    (7, 16, 16, 32, 64, 50, 3, 16),         # 21 rows in blocks of 7; R + Dr = 80 (the generic sizes)
    (1, 8, 16, 8, 32, 0, 1, 16),            # one head, one key (a key pair with no partner)
    (67, 8, 16, 8, 32, 90, 1, 16),          # decode with 67 heads: 64-row work items + a 3-row one
    (13, 16, 16, 16, 96, 40, 4, 32),        # 52 rows: past the f16 tile's limit (40), the prefill tile
]


# (q8_0 / q4_0 rows are whole 32-value blocks: those formats only on the shapes with R and Dr % 32 == 0)
@pytest.mark.parametrize("fmt,H,Dn,Dr,Dv,R,P,T,bs", [
    (fmt, *s) for fmt in ("f16", "bf16", "q8_0", "q4_0") for s in F16_SHAPES
    if fmt in ("f16", "bf16") or (s[4] % 32 == 0 and s[2] % 32 == 0)])
def test_f16_tile_against_reference(rng, H, Dn, Dr, Dv, R, P, T, bs, fmt):
    """bf16 / q8_0 / q4_0: the 8-lane tile of AVX2 builds reads bf16 caches too (widened exactly) and q8_0 / q4_0 tiles
    widened to float32 first; float32 arithmetic: the same bound. _gqa_f16_tile() says that tile is
    compiled in (GQA and MLA share it)."""
    from glmbench.core import _core
    if not _core._mla_f16_tile():
        pytest.skip("the MLA f16 decode tile is not compiled in (neither AVX-512 nor AVX2 + FMA + F16C at build time)")
    if fmt != "f16" and not _core._gqa_f16_tile():
        pytest.skip("bf16 / q8_0 / q4_0 caches take the decode tile on AVX2 builds only")
    c, qn, qr, w = _case(rng, H, Dn, Dr, Dv, R, P, T, fmt=fmt, bs=bs)
    lat, kr = c.read(1)
    r = ref.mla_attention(qn, qr, lat, kr, w, Dv)
    assert np.abs(r).max() > 0.1   # outputs of the size ATOL is relative to
    n0 = glmbench.get_num_threads()
    try:
        for n in (1, 2):
            glmbench.set_num_threads(n)
            for s, splits in (("absorbed", None), ("flash", None), ("flash", 3), ("flash", 1000)):
                y = mla_attention(qn, qr, c, 1, w, v_head_dim=Dv, strategy=s, n_splits=splits)
                np.testing.assert_allclose(y, r, rtol=0, atol=ATOL, err_msg=f"{n} threads, {s}, {splits} splits")
                _core._mla_set_f16_tile(False)
                try:
                    y0 = mla_attention(qn, qr, c, 1, w, v_head_dim=Dv, strategy=s, n_splits=splits)
                finally:
                    _core._mla_set_f16_tile(True)
                np.testing.assert_allclose(y, y0, rtol=0, atol=ATOL, err_msg=f"tile on/off, {n} threads, {s}")
    finally:
        glmbench.set_num_threads(n0)


OWN_GEMM_SHAPES = [  # H, Dn, Dr, Dv, R, P, T: prefill sizes (the own GEMM runs from T >= 8, T x N x K >= 2^16)
    (20, 192, 64, 256, 512, 0, 40),    # GLM-4.7-Flash prefill
    (2, 40, 6, 72, 100, 9, 50),        # N not whole 16- or 64-column panels, T not whole 6-row tiles
    (3, 24, 8, 17, 33, 0, 97),         # N < 64, odd K
]


@pytest.mark.parametrize("H,Dn,Dr,Dv,R,P,T", OWN_GEMM_SHAPES)
@pytest.mark.parametrize("strategy", ["absorbed", "flash"])
def test_own_prefill_gemm_against_reference(rng, H, Dn, Dr, Dv, R, P, T, strategy):
    """The absorbed/flash prefill's per-head kv_b products on the core's own AVX-512 GEMM and on
    OpenBLAS: both against the float64 reference, and close to each other (float32 sums in
    another order)."""
    from glmbench.core import _core
    c, qn, qr, w = _case(rng, H, Dn, Dr, Dv, R, P, T)
    lat, kr = c.read(1)
    want = ref.mla_attention(qn, qr, lat, kr, w, Dv)
    was = _core._mla_own_gemm()
    out = {}
    try:
        for on in (False, True):
            _core._mla_set_own_gemm(on)
            out[on] = mla_attention(qn, qr, c, 1, w, v_head_dim=Dv, strategy=strategy)
            np.testing.assert_allclose(out[on], want, rtol=0, atol=ATOL)
    finally:
        _core._mla_set_own_gemm(was)
    np.testing.assert_allclose(out[True], out[False], rtol=0, atol=ATOL)


@pytest.mark.parametrize("splits", [1, 2, 5, 1000])
def test_flash_splits(rng, splits):
    c, qn, qr, w = _case(rng, 8, 16, 16, 16, 64, 400, 5, bs=64)
    lat, kr = c.read(1)
    y = mla_attention(qn, qr, c, 1, w, v_head_dim=16, strategy="flash", n_splits=splits)
    np.testing.assert_allclose(y, ref.mla_attention(qn, qr, lat, kr, w, 16), rtol=0, atol=ATOL)


def test_kv_b_in_16_bit_formats(rng):
    c, qn, qr, w = _case(rng, 4, 16, 8, 16, 32, 20, 2)
    lat, kr = c.read(1)
    wb = ref.to_bf16(w)
    r = ref.mla_attention(qn, qr, lat, kr, ref.weight_f64(wb), 16)
    for s in MLA_STRATEGIES:
        np.testing.assert_allclose(mla_attention(qn, qr, c, 1, wb, v_head_dim=16, strategy=s), r, atol=ATOL)
        wh = w.astype(np.float16)
        np.testing.assert_allclose(mla_attention(qn, qr, c, 1, wh, v_head_dim=16, strategy=s),
                                   ref.mla_attention(qn, qr, lat, kr, wh, 16), atol=ATOL)


@pytest.mark.parametrize("wdt", ["bf16", "f16"])
def test_kv_b_16_bit_on_the_gemm_paths(rng, wdt):
    # T=9 query tokens take the per-head sgemm path (weights converted once per call), and with GLM's
    # 20 x 448 x 512 kv_b a 20-token cache takes naive's whole-matrix chunk sgemm
    c, qn, qr, w = _case(rng, 20, 192, 64, 256, 512, 11, 9)
    lat, kr = c.read(1)
    w16 = ref.to_bf16(w) if wdt == "bf16" else w.astype(np.float16)
    r = ref.mla_attention(qn, qr, lat, kr, ref.weight_f64(w16), 256)
    for s in MLA_STRATEGIES:
        np.testing.assert_allclose(mla_attention(qn, qr, c, 1, w16, v_head_dim=256, strategy=s), r, atol=ATOL,
                                   err_msg=s)


def test_chunks_equal_one_pass(rng):
    H, Dn, Dr, Dv, R, n = 4, 24, 8, 16, 32, 37
    lat = rng.standard_normal((n, R)).astype(np.float32)
    kr = rng.standard_normal((n, Dr)).astype(np.float32)
    qn = rng.standard_normal((n, H, Dn)).astype(np.float32)
    qr = rng.standard_normal((n, H, Dr)).astype(np.float32)
    w = (rng.standard_normal((H * (Dn + Dv), R)) / np.sqrt(R)).astype(np.float32)
    for s in MLA_STRATEGIES:
        one = KVCache.mla(1, 64, R, Dr, block_size=8, kv="f32")
        one.append(0, lat, kr)
        y_one = mla_attention(qn, qr, one, 0, w, v_head_dim=Dv, strategy=s)
        many = KVCache.mla(1, 64, R, Dr, block_size=8, kv="f32")
        parts = []
        for a, b in [(0, 1), (1, 9), (9, 10), (10, 37)]:
            many.append(0, lat[a:b], kr[a:b])
            parts.append(mla_attention(qn[a:b], qr[a:b], many, 0, w, v_head_dim=Dv, strategy=s))
        np.testing.assert_allclose(np.concatenate(parts), y_one, rtol=0, atol=1e-6, err_msg=s)
        np.testing.assert_allclose(y_one, ref.mla_attention(qn, qr, lat, kr, w, Dv), atol=ATOL, err_msg=s)


def test_strided_queries(rng):
    c, qn, qr, w = _case(rng, 4, 16, 8, 16, 32, 10, 2)
    big = rng.standard_normal((2, 8, 32)).astype(np.float32)
    qn, qr = big[:, ::2, :16], big[:, 1::2, 16:24]
    lat, kr = c.read(1)
    r = ref.mla_attention(qn, qr, lat, kr, w, 16)
    for s in MLA_STRATEGIES:
        np.testing.assert_allclose(mla_attention(qn, qr, c, 1, w, v_head_dim=16, strategy=s), r, atol=ATOL)


def test_thread_count_does_not_change_results(rng):
    c, qn, qr, w = _case(rng, 20, 192, 64, 256, 512, 600, 1, fmt="bf16", bs=64)
    n0 = glmbench.get_num_threads()
    out = {}
    try:
        for n in (1, 2):
            glmbench.set_num_threads(n)
            out[n] = [mla_attention(qn, qr, c, 1, w, v_head_dim=256, strategy=s) for s in MLA_STRATEGIES]
    finally:
        glmbench.set_num_threads(n0)
    for a, b in zip(out[1], out[2]):
        np.testing.assert_allclose(a, b, rtol=0, atol=2e-6)


def test_bad_input(rng):
    c, qn, qr, w = _case(rng, 4, 16, 8, 16, 32, 3, 2)
    call = lambda **k: mla_attention(k.get("qn", qn), k.get("qr", qr), k.get("c", c), k.get("layer", 1),  # noqa: E731
                                     k.get("w", w), v_head_dim=k.get("dv", 16), strategy=k.get("s", "flash"))
    with pytest.raises(TypeError, match=r"`q_nope` must be float32, got float64"):
        call(qn=qn.astype(np.float64))
    with pytest.raises(ValueError, match=r"`q_rope` has shape \(2, 4, 7\): axis 2 must be 8 to match the cache's rope_dim"):
        call(qr=qr[..., :7])
    with pytest.raises(ValueError, match=r"`q_rope` has shape \(2, 3, 8\): axis 1 must be 4"):
        call(qr=qr[:, :3])
    with pytest.raises(ValueError, match=r"`kv_b_weight` has shape \(128, 32\): axis 0 must be 112 to match heads x"):
        call(dv=12)
    with pytest.raises(ValueError, match=r"`kv_b_weight` has shape \(128, 31\): axis 1 must be 32 to match the cache's kv_lora_rank"):
        call(w=w[:, :31])
    with pytest.raises(ValueError, match=r"`strategy` must be one of naive, absorbed, flash, got 'fast'"):
        call(s="fast")
    with pytest.raises(ValueError, match=r"`q_nope` has 6 tokens but layer 1 holds only 5"):
        call(qn=np.zeros((6, 4, 16), np.float32), qr=np.zeros((6, 4, 8), np.float32))
    with pytest.raises(ValueError, match=r"`layer`=-1 is out of range for a cache of 2 layers"):
        call(layer=-1)
    bad = qr.copy()
    bad[0, 0, 0] = np.inf
    with pytest.raises(ValueError, match=r"`q_rope` contains inf at flat index 0"):
        call(qr=bad)
    with pytest.raises(ValueError, match=r"`cache` must be an MLA cache"):
        call(c=KVCache.gqa(2, 8, 1, 8, kv="f32"))
    with pytest.raises(TypeError, match=r"`kv_b_weight` must be float32, float16 or uint16"):
        call(w=w.astype(np.float64))
    with pytest.raises(ValueError, match=r"`v_head_dim` must be >= 1, got 0"):
        call(dv=0)


@pytest.mark.slow
def test_no_leak_over_1000_calls(rng):
    c, qn, qr, w = _case(rng, 4, 16, 8, 16, 64, 80, 3, fmt="bf16")
    run = lambda: [mla_attention(qn, qr, c, 1, w, v_head_dim=16, strategy=s) for s in MLA_STRATEGIES]  # noqa: E731
    for _ in range(30):
        run()
    gc.collect()
    with open(f"/proc/{os.getpid()}/statm") as f:
        before = int(f.read().split()[1])
    for _ in range(350):   # 1,050 calls
        run()
    gc.collect()
    with open(f"/proc/{os.getpid()}/statm") as f:
        after = int(f.read().split()[1])
    # the naive path allocates ~0.6 MB of chunk buffers per call: one leak would be hundreds of MB
    assert (after - before) * os.sysconf("SC_PAGE_SIZE") < 4 << 20


# ---- mla_block ------------------------------------------------------------------------------

def tiny_cfg(name, **over):
    with open(configs.builtin_path(name)) as f:
        hf = json.load(f)
    hf.update(hidden_size=64, num_attention_heads=4, num_key_value_heads=4, kv_lora_rank=32, qk_rope_head_dim=8,
              qk_nope_head_dim=12, v_head_dim=16, num_hidden_layers=2, vocab_size=64, intermediate_size=64,
              moe_intermediate_size=32, n_routed_experts=4, num_experts_per_tok=2)
    if hf.get("q_lora_rank"):
        hf["q_lora_rank"] = 48
    hf.update(over)
    return configs.load(hf)


def tiny_weights(rng, cfg):
    D, H, Dn, Dr, Dv, R = (cfg.hidden_size, cfg.n_heads, cfg.qk_nope_head_dim, cfg.qk_rope_head_dim,
                           cfg.v_head_dim, cfg.kv_lora_rank)
    g = lambda *s: rng.standard_normal(s) * s[-1] ** -0.5  # noqa: E731
    w = {"kv_a_proj_with_mqa.weight": g(R + Dr, D), "kv_a_layernorm.weight": 1 + 0.1 * rng.standard_normal(R),
         "kv_b_proj.weight": g(H * (Dn + Dv), R), "o_proj.weight": g(D, H * Dv)}
    if cfg.q_lora_rank:
        Q = cfg.q_lora_rank
        w.update({"q_a_proj.weight": g(Q, D), "q_a_layernorm.weight": 1 + 0.1 * rng.standard_normal(Q),
                  "q_b_proj.weight": g(H * (Dn + Dr), Q)})
    else:
        w["q_proj.weight"] = g(H * (Dn + Dr), D)
    return {k: np.asarray(a, np.float32) for k, a in w.items()}


@pytest.mark.parametrize("name", ["glm-4.7-flash", "deepseek-v2-lite"])
@pytest.mark.parametrize("strategy", MLA_STRATEGIES)
def test_block_matches_reference_over_chunks(rng, name, strategy):
    cfg = tiny_cfg(name)
    w = tiny_weights(rng, cfg)
    w0 = {k: a.copy() for k, a in w.items()}
    x = rng.standard_normal((11, cfg.hidden_size)).astype(np.float32)
    x0 = x.copy()
    cache = KVCache.mla(2, 16, cfg.kv_lora_rank, cfg.qk_rope_head_dim, block_size=4, kv="f32")
    lp = kp = None
    for a, b in [(0, 5), (5, 6), (6, 11)]:
        pos = np.arange(a, b)
        y = mla_block(x[a:b], w, cache, 0, pos, cfg, strategy=strategy)
        r, lp, kp = ref.mla_block(x[a:b], w, pos, cfg, lp, kp)
        np.testing.assert_allclose(y, r, rtol=0, atol=5e-5)
    lat, kr = cache.read(0)
    np.testing.assert_allclose(lat, lp, rtol=0, atol=1e-5)
    if cfg.model_type == "glm4_moe_lite":
        # HF glm4_moe_lite keeps rotated rope dims de-interleaved (evens, then odds); so does our cache
        kp = np.concatenate([kp[:, 0::2], kp[:, 1::2]], axis=-1)
    np.testing.assert_allclose(kr, kp, rtol=0, atol=1e-5)
    for k in w:
        np.testing.assert_array_equal(w[k], w0[k])
    np.testing.assert_array_equal(x, x0)


def test_block_with_real_glm_head_shapes(rng):
    cfg = tiny_cfg("glm-4.7-flash", num_attention_heads=20, num_key_value_heads=20, kv_lora_rank=512,
                   qk_rope_head_dim=64, qk_nope_head_dim=192, v_head_dim=256, hidden_size=96, q_lora_rank=64)
    assert abs(cfg.softmax_scale - 1 / 16) < 1e-12     # 1/sqrt(192 + 64)
    w = tiny_weights(rng, cfg)
    x = rng.standard_normal((3, cfg.hidden_size)).astype(np.float32)
    fresh = {}
    for s in MLA_STRATEGIES:
        cc = KVCache.mla(1, 8, 512, 64, kv="bf16")
        fresh[s] = mla_block(x, w, cc, 0, np.arange(3), cfg, strategy=s)
    r, _, _ = ref.mla_block(x, w, np.arange(3), cfg)
    for s, y in fresh.items():
        # bf16 cache: the latent is rounded to 8 bits of mantissa before attention (~4e-3 relative)
        np.testing.assert_allclose(y, r, rtol=0, atol=2e-2 * np.abs(r).max(), err_msg=s)
    # naive widens the cache and multiplies in float32; absorbed/flash on a bf16 cache also round
    # the query and p to bf16 (the bf16 dot-product tile), within BF16_TILE_REL of the output scale
    tol = BF16_TILE_REL * np.abs(fresh["naive"]).max() if glmbench.core._core._attn_bf16() else 1e-5
    np.testing.assert_allclose(fresh["naive"], fresh["flash"], rtol=0, atol=tol)


def test_block_bad_input(rng):
    cfg = tiny_cfg("glm-4.7-flash")
    w = tiny_weights(rng, cfg)
    cache = KVCache.mla(1, 4, cfg.kv_lora_rank, cfg.qk_rope_head_dim, kv="f32")
    x = rng.standard_normal((3, cfg.hidden_size)).astype(np.float32)
    with pytest.raises(ValueError, match=r"`strategy` must be one of"):
        mla_block(x, w, cache, 0, np.arange(3), cfg, strategy="turbo")
    with pytest.raises(ValueError, match=r"`cache` holds latents of 16 \+ 8"):
        mla_block(x, w, KVCache.mla(1, 4, 16, 8, kv="f32"), 0, np.arange(3), cfg)
    with pytest.raises(ValueError, match=r"`cache` must be a MLA KVCache"):
        mla_block(x, w, KVCache.gqa(1, 4, 1, 8, kv="f32"), 0, np.arange(3), cfg)
    with pytest.raises(TypeError, match=r"`positions` must be integers, got float64"):
        mla_block(x, w, cache, 0, np.arange(3.0), cfg)
    xn = x.copy()
    xn[0, 0] = np.nan
    with pytest.raises(ValueError, match=r"contains NaN"):
        mla_block(xn, w, cache, 0, np.arange(3), cfg)
    mla_block(x, w, cache, 0, np.arange(3), cfg)
    with pytest.raises(ValueError, match=r"KV cache full: layer 0 holds 3 of 4 tokens, cannot append 3"):
        mla_block(x, w, cache, 0, np.arange(3, 6), cfg)
    assert cache.length(0) == 3


def test_block_refuses_a_bad_weight_before_appending(rng):
    """kv_b_proj or o_proj of the wrong shape (or kv_b_proj missing) failed only after the latents were
    appended: a failed call left the cache 3 tokens longer; q_b_proj's failed in NumPy's reshape. Now one
    ValueError naming the weight and the shape the config needs, the cache unchanged."""
    cfg = tiny_cfg("glm-4.7-flash")
    w = tiny_weights(rng, cfg)
    cache = KVCache.mla(1, 8, cfg.kv_lora_rank, cfg.qk_rope_head_dim, kv="f32")
    x = rng.standard_normal((3, cfg.hidden_size)).astype(np.float32)
    for name, cut in (("kv_b_proj.weight", np.s_[:-1]), ("o_proj.weight", np.s_[:, :-1]), ("q_b_proj.weight", np.s_[:-1]),
                      ("kv_a_proj_with_mqa.weight", np.s_[:-1])):
        with pytest.raises(ValueError, match=rf"attention weight '{name}' has shape .*; the config needs"):
            mla_block(x, {**w, name: w[name][cut]}, cache, 0, np.arange(3), cfg)
        assert cache.length(0) == 0
    with pytest.raises(KeyError, match=r"kv_b_proj.weight"):
        mla_block(x, {k: a for k, a in w.items() if k != "kv_b_proj.weight"}, cache, 0, np.arange(3), cfg)
    assert cache.length(0) == 0
    mla_block(x, w, cache, 0, np.arange(3), cfg)
    assert cache.length(0) == 3


# ---- oracle 2: HF transformers' attention module ----------------------------------------------

@pytest.mark.slow
def test_block_matches_hf_glm4_moe_lite(rng):
    """Glm4MoeLiteAttention (eager, float32) on a tiny config vs mla_block fed in three chunks. HF
    runs the whole sequence at once with an explicit causal mask; our chunks must give its rows."""
    torch = pytest.importorskip("torch")
    pytest.importorskip("transformers")
    from transformers.models.glm4_moe_lite import modeling_glm4_moe_lite as hfm
    from transformers.models.glm4_moe_lite.configuration_glm4_moe_lite import Glm4MoeLiteConfig

    d = dict(vocab_size=64, hidden_size=64, intermediate_size=64, moe_intermediate_size=32, num_hidden_layers=2,
             num_attention_heads=4, num_key_value_heads=4, n_routed_experts=4, num_experts_per_tok=2,
             kv_lora_rank=32, q_lora_rank=48, qk_rope_head_dim=8, v_head_dim=16, qk_nope_head_dim=12,
             rms_norm_eps=1e-5, rope_parameters={"rope_type": "default", "rope_theta": 10000.0},
             max_position_embeddings=256)
    hcfg = Glm4MoeLiteConfig(**d)
    hcfg._attn_implementation = "eager"
    attn = hfm.Glm4MoeLiteAttention(hcfg, layer_idx=0).float().eval()
    rot = hfm.Glm4MoeLiteRotaryEmbedding(hcfg)
    w = tiny_weights(rng, tiny_cfg("glm-4.7-flash"))
    attn.load_state_dict({k: torch.from_numpy(a) for k, a in w.items()}, strict=True)
    cfg = configs.load(dict(d, model_type="glm4_moe_lite"))
    n = 10
    x = rng.standard_normal((n, 64)).astype(np.float32)
    pos = np.arange(n)
    with torch.no_grad():
        xt = torch.from_numpy(x)[None]
        cos_sin = rot(xt, torch.from_numpy(pos)[None])
        mask = torch.full((n, n), float("-inf")).triu(1)[None, None]
        y_hf = attn(xt, cos_sin, mask)[0][0].numpy()
    for s in MLA_STRATEGIES:
        cache = KVCache.mla(1, 16, 32, 8, block_size=4, kv="f32")
        ys = [mla_block(x[a:b], w, cache, 0, pos[a:b], cfg, strategy=s) for a, b in [(0, 4), (4, 5), (5, 10)]]
        # float32 both sides, different summation orders: ~1e-6 of |y| ~ 0.3
        np.testing.assert_allclose(np.concatenate(ys), y_hf, rtol=0, atol=2e-5, err_msg=s)

"""The rows-in-lanes prefill tile (gb_attn_tile_lanes, csrc/attention_gqa.c) at the shapes where its
blocking shows: work items of 128 (GQA) / 256 (MLA) rows cut into 64-lane blocks with a partial last
block, row counts that are not multiples of 16, causal rows that see none of a tile's keys, sliding
windows and soft-capping, 1 and 2 threads. GQA against the float64 reference; MLA's absorbed and
flash strategies (the lanes tile) against naive (decompressed K/V on the row-major tile)."""
import numpy as np
import pytest

import glmbench
from glmbench.core import reference as ref
from glmbench.core.attention import gqa_attention, mla_attention
from glmbench.core.kvcache import KVCache


@pytest.fixture(params=[1, 2])
def threads(request):
    before = glmbench.get_num_threads()
    glmbench.set_num_threads(request.param)
    yield request.param
    glmbench.set_num_threads(before)


@pytest.mark.parametrize("P,T,G", [(0, 37, 8), (70, 21, 8), (5, 3, 6), (130, 50, 5)])
@pytest.mark.parametrize("window,cap", [(None, 0.0), (23, 0.0), (None, 4.0), (17, 3.0)])
def test_gqa_prefill_tile_matches_reference(rng, threads, P, T, G, window, cap):
    Hkv, Dh = 2, 64
    L = P + T
    k = rng.standard_normal((L, Hkv, Dh)).astype(np.float32)
    v = rng.standard_normal((L, Hkv, Dh)).astype(np.float32)
    c = KVCache.gqa(1, L, Hkv, Dh, kv="f32", block_size=16)
    c.append(0, k, v)
    q = (2 * rng.standard_normal((T, Hkv * G, Dh))).astype(np.float32)
    kw = dict(window=window) if window else {}
    if cap:
        kw["softcap"] = cap
    got = gqa_attention(q, c, 0, **kw)
    want = ref.gqa_attention(q, k, v, **kw)
    np.testing.assert_allclose(got, want, rtol=0, atol=2e-5 * max(1.0, np.abs(want).max()))


@pytest.mark.parametrize("d,T", [(0, 37), (100, 37), (300, 13), (5, 3)])
def test_mla_lanes_strategies_agree_with_naive(rng, threads, d, T):
    H, Dn, Dr, Dv, R = 20, 192, 64, 256, 512       # GLM-4.7-Flash: T x 20 rows, 256 per work item
    c = KVCache.mla(1, d + T, R, Dr, kv="f16")
    c.fill_synthetic(d)
    c.append(0, rng.standard_normal((T, R), dtype=np.float32), rng.standard_normal((T, Dr), dtype=np.float32))
    qn = rng.standard_normal((T, H, Dn), dtype=np.float32)
    qr = rng.standard_normal((T, H, Dr), dtype=np.float32)
    kvb = rng.standard_normal((H * (Dn + Dv), R), dtype=np.float32) * 0.05
    want = mla_attention(qn, qr, c, 0, kvb, v_head_dim=Dv, strategy="naive")
    for st in ("absorbed", "flash"):
        got = mla_attention(qn, qr, c, 0, kvb, v_head_dim=Dv, strategy=st)
        assert np.abs(got - want).max() <= 2e-5 * np.abs(want).max(), st


@pytest.mark.parametrize("Dh", [40, 36, 8])
@pytest.mark.parametrize("window,cap", [(None, 0.0), (19, 2.5)])
def test_gqa_prefill_tile_odd_head_dims(rng, threads, Dh, window, cap):
    """Head dims off the vector widths: the AVX2 tile's p*V runs 16-, 8-column and scalar column
    blocks (40 = 16+16+8, 36 = 16+16+4 scalar, 8), the AVX-512 one masked vectors."""
    Hkv, G, P, T = 2, 7, 45, 19                    # 133 rows per KV head: 64-lane blocks 64, 64, 5
    L = P + T
    k = rng.standard_normal((L, Hkv, Dh)).astype(np.float32)
    v = rng.standard_normal((L, Hkv, Dh)).astype(np.float32)
    c = KVCache.gqa(1, L, Hkv, Dh, kv="f16", block_size=16)
    c.append(0, k, v)
    k16, v16 = k.astype(np.float16).astype(np.float32), v.astype(np.float16).astype(np.float32)
    q = (2 * rng.standard_normal((T, Hkv * G, Dh))).astype(np.float32)
    kw = dict(window=window) if window else {}
    if cap:
        kw["softcap"] = cap
    got = gqa_attention(q, c, 0, **kw)
    want = ref.gqa_attention(q, k16, v16, **kw)
    np.testing.assert_allclose(got, want, rtol=0, atol=2e-5 * max(1.0, np.abs(want).max()))

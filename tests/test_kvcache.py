"""The paged KV cache: exact byte accounting, storage round trips against the reference rounding,
paging, the full-cache error, bad input, fill_synthetic, and no leaks."""
import gc
import os

import numpy as np
import pytest

import glmbench
from glmbench.core import reference as ref
from glmbench.core.kvcache import KVCache

FORMATS = ["f32", "f16", "bf16", "q8_0", "q4_0"]


def _rss_kb():
    with open(f"/proc/{os.getpid()}/statm") as f:
        return int(f.read().split()[1]) * os.sysconf("SC_PAGE_SIZE") // 1024


# ---- byte accounting ----------------------------------------------------------------------------

def test_real_model_bytes_per_token():
    # docs/SOURCES.md §2: GLM-4.7-Flash 47 x 576 x 2 = 54,144 B; Qwen3-32B 64 x 8 x 128 x 2 x 2 = 256 KiB.
    assert KVCache.mla(47, 16, 512, 64, kv="bf16").bytes_per_token == 54_144
    assert KVCache.gqa(64, 16, 8, 128, kv="bf16").bytes_per_token == 262_144
    assert KVCache.gqa(40, 16, 8, 128, kv="f16").bytes_per_token == 160 * 1024   # Mistral-Small-24B
    # q8_0: 34 bytes per 32 values; q4_0: 18 bytes per 32
    assert KVCache.mla(47, 16, 512, 64, kv="q8_0").bytes_per_token == 47 * 18 * 34
    assert KVCache.mla(47, 16, 512, 64, kv="q4_0").bytes_per_token == 47 * 18 * 18


@pytest.mark.parametrize("fmt", FORMATS)
def test_bytes_match_reference_and_configs(fmt):
    c = KVCache.gqa(3, 100, 2, 64, 32, kv=fmt, block_size=16)
    assert c.bytes_per_token == ref.kv_bytes_per_token("gqa", 3, (2, 64, 32), fmt)
    m = KVCache.mla(5, 100, 64, 32, kv=fmt)
    assert m.bytes_per_token == ref.kv_bytes_per_token("mla", 5, (64, 32), fmt)
    from glmbench.models import configs
    for name in ("glm-4.7-flash", "qwen3-32b", "deepseek-v2-lite"):
        cfg = configs.load(name)
        if cfg.attention == "mla":
            cc = KVCache.mla(cfg.n_layers, 8, cfg.kv_lora_rank, cfg.qk_rope_head_dim, kv=fmt)
        else:
            cc = KVCache.gqa(cfg.n_layers, 8, cfg.n_kv_heads, cfg.head_dim, cfg.v_head_dim, kv=fmt)
        assert cc.bytes_per_token == cfg.kv_bytes_per_token(fmt)


def test_bytes_used_and_allocated_follow_the_blocks(rng):
    c = KVCache.gqa(2, 100, 2, 8, kv="f16", block_size=16)
    per_layer = c.bytes_per_token // 2
    assert (c.bytes_used, c.bytes_allocated, c.bytes_in_blocks) == (0, 0, 0)
    k = rng.standard_normal((5, 2, 8)).astype(np.float32)
    c.append(0, k, k)
    block = 16 * per_layer   # 16 tokens x (2 heads x (8 + 8) values x 2 bytes) = 1024, already 64-aligned
    assert c.bytes_used == 5 * per_layer
    assert c.bytes_allocated == block
    c.append(0, np.zeros((12, 2, 8), np.float32), np.zeros((12, 2, 8), np.float32))   # 17 tokens: 2 blocks
    c.append(1, k, k)
    assert c.bytes_used == 22 * per_layer
    assert c.bytes_allocated == c.bytes_in_blocks == 3 * block
    c.reset()
    assert c.bytes_used == 0 and c.bytes_in_blocks == 0
    assert c.bytes_allocated == 3 * block      # blocks went back to the pool, not the system
    c.append(1, k, k)
    assert c.bytes_allocated == 3 * block      # ... and are reused
    assert [c.length(0), c.length(1)] == [0, 5]


@pytest.mark.parametrize("kind", ["gqa", "mla"])
def test_block_size_past_the_capacity_allocates_no_more_than_the_capacity(rng, kind):
    """A block_size above capacity_tokens was allocated whole on the first append (block_size 2^20 on a 10-token
    cache: 8 GiB); it is now cut to the capacity: the one block holds the 10 tokens, the cache says its
    block_size, and every token up to the capacity is stored and read back."""
    cap, big = 10, 1 << 14
    c = (KVCache.gqa(1, cap, 1, 32, kv="f32", block_size=big) if kind == "gqa"
         else KVCache.mla(1, cap, 32, 32, kv="f32", block_size=big))
    assert c.block_size == cap
    a, b = (rng.standard_normal((cap, 1, 32)).astype(np.float32) for _ in range(2))
    if kind == "mla":
        a, b = a[:, 0], b[:, 0]
    c.append(0, a[:1], b[:1])
    assert c.bytes_allocated == c.bytes_in_blocks <= -(-cap * c.bytes_per_token // 64) * 64   # (64-byte aligned)
    c.append(0, a[1:], b[1:])
    ra, rb = c.read(0)
    assert np.array_equal(ra.reshape(a.shape), a) and np.array_equal(rb.reshape(b.shape), b)
    with pytest.raises(ValueError, match="KV cache full"):
        c.append(0, a[:1], b[:1])
    assert KVCache.gqa(1, cap, 1, 32, kv="f32", block_size=4).block_size == 4     # (a smaller one as given)


# ---- round trips ------------------------------------------------------------------------------

@pytest.mark.parametrize("fmt", FORMATS)
def test_gqa_round_trip_matches_reference_rounding(rng, fmt):
    c = KVCache.gqa(2, 50, 3, 64, 32, kv=fmt, block_size=8)
    k = rng.standard_normal((13, 3, 64)).astype(np.float32)
    v = rng.standard_normal((13, 3, 32)).astype(np.float32)
    k0, v0 = k.copy(), v.copy()
    c.append(1, k[:6], v[:6])
    c.append(1, k[6:], v[6:])
    a, b = c.read(1)
    assert a.dtype == np.float32 and a.shape == k.shape and b.shape == v.shape
    # the stored values are exactly the reference rounding of each row (f16/bf16 nearest-even; ggml blocks)
    np.testing.assert_array_equal(a, ref.kv_round(k, fmt).astype(np.float32))
    np.testing.assert_array_equal(b, ref.kv_round(v, fmt).astype(np.float32))
    np.testing.assert_array_equal(k, k0)
    np.testing.assert_array_equal(v, v0)
    assert c.length(0) == 0 and c.read(0)[0].shape == (0, 3, 64)


@pytest.mark.parametrize("fmt", FORMATS)
def test_mla_round_trip_matches_reference_rounding(rng, fmt):
    c = KVCache.mla(1, 200, 512, 64, kv=fmt)
    lat = rng.standard_normal((70, 512)).astype(np.float32)
    kr = rng.standard_normal((70, 64)).astype(np.float32)
    c.append(0, lat, kr)
    a, b = c.read(0)
    np.testing.assert_array_equal(a, ref.kv_round(lat, fmt).astype(np.float32))
    np.testing.assert_array_equal(b, ref.kv_round(kr, fmt).astype(np.float32))


def test_strided_inputs_are_accepted(rng):
    c = KVCache.mla(1, 10, 16, 8, kv="f32")
    big = rng.standard_normal((6, 48)).astype(np.float32)
    c.append(0, big[::2, :32:2], big[::2, 32:40])
    a, b = c.read(0)
    np.testing.assert_array_equal(a, big[::2, :32:2])
    np.testing.assert_array_equal(b, big[::2, 32:40])


def test_layers_are_independent(rng):
    c = KVCache.gqa(3, 20, 1, 4, kv="f32")
    x = [rng.standard_normal((n, 1, 4)).astype(np.float32) for n in (3, 0, 7)]
    for layer, a in enumerate(x):
        c.append(layer, a, -a)
    for layer, a in enumerate(x):
        assert c.length(layer) == len(a)
        np.testing.assert_array_equal(c.read(layer)[0], a)
        np.testing.assert_array_equal(c.read(layer)[1], -a)


def test_properties_and_repr():
    c = KVCache.gqa(4, 1000, 8, 128, kv="bf16", block_size=32)
    assert (c.kind, c.n_layers, c.capacity_tokens, c.block_size, c.kv) == ("gqa", 4, 1000, 32, "bf16")
    assert (c.n_kv_heads, c.head_dim, c.v_head_dim) == (8, 128, 128)
    m = KVCache.mla(2, 10, 512, 64, kv="f32")
    # (the default block_size 64, cut to the 10 tokens of capacity: a block never holds more than the cache can)
    assert (m.kind, m.kv_lora_rank, m.rope_dim, m.kv, m.block_size) == ("mla", 512, 64, "f32", 10)
    assert "KVCache.mla" in repr(m) and "kv_lora_rank=512" in repr(m)
    assert isinstance(c, glmbench.KVCache)


# ---- errors ---------------------------------------------------------------------------------

def test_full_cache_message_and_nothing_written():
    c = KVCache.gqa(4, 4096, 1, 4, block_size=64, kv="f32")
    z = np.zeros((4090, 1, 4), np.float32)
    c.append(3, z, z)
    e8 = np.ones((8, 1, 4), np.float32)
    with pytest.raises(ValueError, match=r"^KV cache full: layer 3 holds 4090 of 4096 tokens, cannot append 8$"):
        c.append(3, e8, e8)
    assert c.length(3) == 4090
    c.append(3, e8[:6], e8[:6])     # exactly to capacity is fine
    assert c.length(3) == 4096


def test_bad_construction():
    with pytest.raises(ValueError, match=r"`kv` \(the cache format\) must be one of .*got 'q5_K'"):
        KVCache.gqa(1, 8, 1, 8, kv="q5_K")
    with pytest.raises(ValueError, match=r"`kv`=q8_0 stores rows in blocks of 32; `head_dim`=40"):
        KVCache.gqa(1, 8, 1, 40, kv="q8_0")
    with pytest.raises(ValueError, match=r"`rope_dim`=48 is not a multiple of 32"):
        KVCache.mla(1, 8, 512, 48, kv="q4_0")
    with pytest.raises(ValueError, match=r"`capacity_tokens` must be >= 1, got 0"):
        KVCache.gqa(1, 0, 1, 8, kv="f32")
    with pytest.raises(ValueError, match=r"`n_layers` must be >= 1, got -2"):
        KVCache.mla(-2, 8, 16, 8, kv="f32")
    with pytest.raises(TypeError, match=r"`head_dim` must be an int, got float 8.0"):
        KVCache.gqa(1, 8, 1, 8.0, kv="f32")
    with pytest.raises(TypeError, match=r"`kv` \(the cache format\) must be a str"):
        KVCache.gqa(1, 8, 1, 8, kv=np.float16)


def test_bad_append():
    c = KVCache.gqa(2, 8, 2, 4, kv="f32")
    k = np.zeros((3, 2, 4), np.float32)
    with pytest.raises(TypeError, match=r"`k` must be float32, got float64"):
        c.append(0, k.astype(np.float64), k)
    with pytest.raises(ValueError, match=r"`v` has shape \(3, 2, 5\): axis 2 must be 4"):
        c.append(0, k, np.zeros((3, 2, 5), np.float32))
    with pytest.raises(ValueError, match=r"`k` has shape \(3, 3, 4\): axis 1 must be 2 to match the cache's n_kv_heads"):
        c.append(0, np.zeros((3, 3, 4), np.float32), k)
    with pytest.raises(ValueError, match=r"`v` has shape \(2, 2, 4\): axis 0 must be 3"):
        c.append(0, k, k[:2])
    with pytest.raises(ValueError, match=r"`layer`=2 is out of range for a cache of 2 layers"):
        c.append(2, k, k)
    with pytest.raises(ValueError, match=r"`layer`=-1 is out of range"):
        c.length(-1)
    with pytest.raises(ValueError, match=r"`layer`=5 is out of range"):
        c.read(5)
    bad = k.copy()
    bad[1, 1, 2] = np.nan
    with pytest.raises(ValueError, match=r"`v` contains NaN at flat index 14"):
        c.append(0, k, bad)
    with pytest.raises(ValueError, match=r"`k` must be 3-D, got shape \(2, 4\)"):
        c.append(0, k[0], k)
    m = KVCache.mla(1, 8, 16, 8, kv="f32")
    with pytest.raises(ValueError, match=r"`latent` has shape \(1, 15\): axis 1 must be 16"):
        m.append(0, np.zeros((1, 15), np.float32), np.zeros((1, 8), np.float32))
    with pytest.raises(ValueError, match=r"`k_rope` contains inf"):
        m.append(0, np.zeros((1, 16), np.float32), np.full((1, 8), np.inf, np.float32))
    with pytest.raises(TypeError, match=r"`layer` must be an int"):
        m.append("0", np.zeros((1, 16), np.float32), np.zeros((1, 8), np.float32))
    assert c.length(0) == 0 and m.length(0) == 0   # nothing half-written


# ---- fill_synthetic -------------------------------------------------------------------------

@pytest.mark.parametrize("fmt", ["f32", "bf16", "q4_0"])
def test_fill_synthetic(fmt):
    c = KVCache.mla(3, 300, 64, 32, kv=fmt, block_size=16)
    c.append(0, np.zeros((5, 64), np.float32), np.zeros((5, 32), np.float32))
    c.fill_synthetic(200, seed=7)
    assert [c.length(i) for i in range(3)] == [200] * 3
    assert c.bytes_used == 200 * c.bytes_per_token
    a, b = c.read(1)
    assert np.isfinite(a).all() and np.isfinite(b).all()
    assert np.abs(a).max() <= 1.0 and a.std() > 0.3          # uniform in [-1, 1): std 0.577
    assert not np.array_equal(c.read(0)[0], a)                # each layer its own values
    n0 = glmbench.get_num_threads()
    glmbench.set_num_threads(1)
    try:
        d = KVCache.mla(3, 300, 64, 32, kv=fmt, block_size=16)
        d.fill_synthetic(200, seed=7)
    finally:
        glmbench.set_num_threads(n0)
    np.testing.assert_array_equal(d.read(1)[0], a)            # deterministic, thread-count independent
    d.fill_synthetic(200, seed=8)
    assert not np.array_equal(d.read(1)[0], a)
    with pytest.raises(ValueError, match=r"`n_tokens`=301 must be in \[0, capacity_tokens=300\]"):
        c.fill_synthetic(301)


# ---- memory ---------------------------------------------------------------------------------

@pytest.mark.slow
def test_no_leak_over_1000_cycles(rng):
    k = rng.standard_normal((40, 2, 64)).astype(np.float32)

    def cycle():
        c = KVCache.gqa(2, 256, 2, 64, kv="bf16", block_size=16)
        c.append(0, k, k)
        c.append(1, k, k)
        c.read(1)
        m = KVCache.mla(1, 128, 64, 32, kv="q8_0")
        m.fill_synthetic(100)
        del c, m

    for _ in range(50):
        cycle()
    gc.collect()
    before = _rss_kb()
    for _ in range(1000):
        cycle()
    gc.collect()
    # each cycle allocates ~60 KB of blocks; a leak of even one block per cycle would add > 5 MB
    assert _rss_kb() - before < 2048


# ---- sliding windows: rings ------------------------------------------------------------------------

def _gemma3_27b_cfg():
    from glmbench.models import configs
    hf = dict(model_type="gemma3_text", num_hidden_layers=62, hidden_size=5376, intermediate_size=21504,
              num_attention_heads=32, num_key_value_heads=16, head_dim=128, vocab_size=262208,
              sliding_window=1024, query_pre_attn_scalar=168, rope_scaling={"rope_type": "linear", "factor": 8.0})
    return configs.load(hf)


def test_ring_bytes_are_exact_and_agree_with_the_cost_model():
    """A Gemma-3-27B-shaped cache (62 layers, 5 of 6 windowed at 1024 tokens, 16 KV heads of 128):
    bytes_used counts min(depth, window) tokens in a windowed layer; bytes_in_blocks is the memory
    really held, a ring of ceil((1024 + chunk) / block) blocks: llama.cpp's n_swa + n_ubatch cells,
    which the cost model's memory counts (with block = its pad of 256 the two are equal)."""
    from glmbench.predict import costmodel as cm
    cfg = _gemma3_27b_cfg()
    assert len(cfg.windowed_layers) == 52
    n_full = cfg.n_layers - 52
    per_layer = cfg.kv_bytes_per_token("f16") // cfg.n_layers
    assert per_layer == 16 * 2 * 128 * 2
    wins = [cfg.layer_window(i) or 0 for i in range(cfg.n_layers)]
    depth = 5000
    c = KVCache.gqa(cfg.n_layers, 8192, cfg.n_kv_heads, cfg.head_dim, kv="f16", windows=wins, chunk=512)
    c.fill_synthetic(depth)
    assert c.bytes_used == per_layer * (n_full * depth + 52 * 1024)
    ring = -(-(1024 + 512) // 64)              # 24 blocks of 64 tokens
    block = 64 * per_layer                     # 64 x 16 x 2 x 128 x 2 bytes: already 64-aligned
    assert c.ring_tokens(0) == ring * 64 and c.ring_tokens(5) == 8192
    assert c.bytes_in_blocks == block * (52 * ring + n_full * -(-depth // 64))
    assert c.length(0) == depth and c.held(0) == 1024 and c.held(5) == depth
    # the cost model: the windowed layers hold 1024 + 512 cells padded to 256 (= 1536, the 24 blocks of 64)
    s = cm.Setup(cfg, "rtx-3090", weights="Q4_K_M", kv="f16")
    assert s.runtime.n_ubatch == 512
    assert cm.memory(s, depth).kv == per_layer * (n_full * depth + 52 * 1536)
    # uncounted before (the window alone): 52 layers x 512 cells x 8 KiB = 208 MiB (218 MB) at f16
    assert cm.memory(s, depth).kv - per_layer * (n_full * depth + 52 * 1024) == 52 * 512 * per_layer
    assert 52 * 512 * per_layer == 208 * 2 ** 20


@pytest.mark.parametrize("window,ubatch,block", [(1024, 512, 256), (1024, 512, 64), (4096, 2048, 256),
                                                  (128, 32, 16), (1, 1, 4), (100, 7, 32)])
@pytest.mark.parametrize("depth", [1, 63, 700, 1600, 9000])
def test_ring_bytes_in_blocks_equal_the_cost_model_figure(window, ubatch, block, depth):
    """glmbench's own KVCache (windows=, chunk=ubatch, block_size=pad) really holds, in its windowed
    layers, exactly what costmodel.window_cells counts (llama.cpp's SWA rule) at every depth: short
    of the ring (partial blocks), at it, and past it (wrapped); and memory() counts the same when
    the runtime's n_ubatch is `ubatch` and the pad is the cost model's."""
    import dataclasses

    from glmbench.models import configs
    from glmbench.predict import costmodel as cm
    hf = dict(model_type="mistral", num_hidden_layers=3, hidden_size=256, intermediate_size=512,
              num_attention_heads=4, num_key_value_heads=2, head_dim=64, vocab_size=1000,
              sliding_window=window, max_position_embeddings=16384)
    cfg = configs.load(hf)
    assert cfg.windowed_layers == (0, 1, 2)
    cap = 10000
    c = KVCache.gqa(3, cap, 2, 64, kv="f16", block_size=block, windows=[window] * 3, chunk=ubatch)
    c.fill_synthetic(depth)
    per_layer = cfg.kv_bytes_per_token("f16") // 3
    cells = cm.window_cells(depth, window, ubatch, pad=block)
    assert cells == min(-(-depth // block), -(-(window + ubatch) // block)) * block
    assert c.bytes_in_blocks == 3 * per_layer * cells
    if block == cm.SWA_PAD:
        rt = dataclasses.replace(cm.load_runtime("ideal"), n_ubatch=ubatch)
        s = cm.Setup(cfg, "rtx-3090", weights="f16", kv="f16", runtime=rt)
        assert cm.memory(s, depth).kv == c.bytes_in_blocks


def test_window_cells_rule():
    from glmbench.predict import costmodel as cm
    # llama.cpp: GGML_PAD(min(n_ctx, n_swa + n_ubatch), 256)
    assert cm.window_cells(10 ** 6, 1024, 512) == 1536
    assert cm.window_cells(10 ** 6, 4096, 512) == 4608
    assert cm.window_cells(10 ** 6, 1000, 100) == 1280
    assert cm.window_cells(300, 1024, 512) == 512       # short of the window: the context, padded
    assert cm.window_cells(0, 1024, 512) == 0


def test_ring_holds_what_a_full_layer_holds_in_the_window(rng):
    full = KVCache.gqa(1, 300, 2, 32, kv="q8_0", block_size=16)
    ring = KVCache.gqa(1, 300, 2, 32, kv="q8_0", block_size=16, windows=[20], chunk=8)
    full.fill_synthetic(257, seed=4)
    ring.fill_synthetic(257, seed=4)
    fk, fv = full.read(0)
    rk, rv = ring.read(0)
    assert rk.shape == (20, 2, 32)
    np.testing.assert_array_equal(rk, fk[-20:])
    np.testing.assert_array_equal(rv, fv[-20:])
    # appends after the fill keep the ring going
    k = rng.standard_normal((8, 2, 32)).astype(np.float32)
    ring.append(0, k, k)
    np.testing.assert_array_equal(ring.read(0)[0][-8:], ref.kv_round(k, "q8_0").astype(np.float32))
    assert ring.length(0) == 265 and ring.held(0) == 20 and ring.ring_tokens(0) == 32


def test_windows_bad_input():
    with pytest.raises(ValueError, match=r"`windows`\[1\] = -1: a window must be >= 1 token"):
        KVCache.gqa(2, 64, 2, 32, windows=[0, -1])
    with pytest.raises(TypeError, match=r"`windows`\[0\] must be an int, got float 4.0"):
        KVCache.gqa(2, 64, 2, 32, windows=[4.0, 0])
    with pytest.raises(TypeError, match=r"`windows` must be a sequence of ints"):
        KVCache.gqa(2, 64, 2, 32, windows=4)
    with pytest.raises(ValueError, match=r"`windows` must have one entry per layer \(2\), got 3"):
        KVCache.gqa(2, 64, 2, 32, windows=[4, 4, 4])
    with pytest.raises(ValueError, match=r"`chunk` must be >= 1, got 0"):
        KVCache.gqa(2, 64, 2, 32, windows=[4, 4], chunk=0)
    c = KVCache.gqa(2, 64, 2, 32, kv="f32")
    c.append(0, np.zeros((1, 2, 32), np.float32), np.zeros((1, 2, 32), np.float32))
    with pytest.raises(ValueError, match=r"sliding windows can only be set on an empty cache \(layer 0 holds 1 tokens\)"):
        c._set_windows([4, 4], 8)
    with pytest.raises(ValueError, match=r"sliding windows need a GQA cache"):
        KVCache.mla(2, 64, 32, 32)._set_windows([4, 4], 8)
    assert c.windows == (0, 0) and c.chunk == 0 and c.length(0) == 1
    r = KVCache.gqa(2, 64, 2, 32, windows=[4, 0], chunk=8, kv="f32", block_size=4)
    assert "windows=[4, 0], chunk=8" in repr(r)


# ---- values a format cannot hold ----------------------------------------------------------------

@pytest.mark.parametrize("fmt,big", [("f16", 7e4), ("bf16", 3.4e38), ("q8_0", 1e7), ("q4_0", 1e6)])
def test_values_past_the_format_are_refused_not_stored_as_inf(rng, fmt, big):
    """A finite value the 16-bit formats cannot hold (f16 past 65504, bf16 past its largest) was stored as
    inf and attention turned it into NaN with no error; q8_0/q4_0 refused theirs (a block scale past
    float16). Each is now the same ValueError naming the format, and nothing is appended."""
    for c in (KVCache.gqa(1, 8, 2, 32, kv=fmt), KVCache.mla(1, 8, 32, 32, kv=fmt)):
        a = rng.standard_normal((2, 2, 32) if c.kind == "gqa" else (2, 32)).astype(np.float32)
        b = a.copy()
        b[1, ..., 3] = big
        with pytest.raises(ValueError, match=rf"cannot store these values in a {fmt} KV cache: .* overflows"):
            c.append(0, a, b)
        assert c.length(0) == 0
        c.append(0, a, a)           # values in range still go in
        assert np.isfinite(c.read(0)[0]).all()
    ok = np.full((1, 2, 32), 65504.0 if fmt == "f16" else 1.0, np.float32)   # float16's largest is stored
    c = KVCache.gqa(1, 8, 2, 32, kv=fmt)
    c.append(0, ok, ok)
    assert np.isfinite(c.read(0)[1]).all()


@pytest.mark.parametrize("fmt", ["f16", "bf16", "q8_0", "q4_0"])
def test_a_refused_ring_append_leaves_the_window_as_it_was(rng, fmt):
    """A ring (window 4, chunk 2, ring of 6 slots) takes up to R - W + 1 = 3 tokens at once; the third
    lands on the slot of the oldest token it still holds. An append refused for a value the format
    cannot hold had already written its first rows there: the error came, and the window attention
    reads was silently changed (the 4th-last token replaced)."""
    from glmbench.core.attention import gqa_attention
    c = KVCache.gqa(1, 100, 1, 32, kv=fmt, block_size=1, windows=[4], chunk=2)
    assert c.ring_tokens(0) == 6
    for _ in range(3):
        k = rng.standard_normal((2, 1, 32)).astype(np.float32)
        c.append(0, k, k)
    q = rng.standard_normal((1, 2, 32)).astype(np.float32)
    before_read, before = c.read(0), gqa_attention(q, c, 0)
    bad = rng.standard_normal((3, 1, 32)).astype(np.float32)
    bad[2, 0, 5] = 3.4e38
    with pytest.raises(ValueError, match=rf"cannot store these values in a {fmt} KV cache"):
        c.append(0, bad, bad)
    assert c.length(0) == 6 and c.held(0) == 4
    after_read = c.read(0)
    np.testing.assert_array_equal(after_read[0], before_read[0])
    np.testing.assert_array_equal(after_read[1], before_read[1])
    np.testing.assert_array_equal(gqa_attention(q, c, 0), before)
    good = bad.copy()
    good[2, 0, 5] = 0.5
    c.append(0, good, good)         # a storable append of the same size still goes in whole
    assert c.length(0) == 9
    np.testing.assert_array_equal(c.read(0)[0][-3:], ref.kv_round(good, fmt).astype(np.float32))

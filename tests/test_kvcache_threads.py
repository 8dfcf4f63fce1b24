"""One KV cache used by several threads at once (issue 16 item 2): reset / append / read /
fill_synthetic / gqa_attention / mla_attention / layer_forward hammering the same cache never crash
and never see a half-changed cache. The C core takes a per-cache lock (csrc/kvcache.c): readers
share it, writers take it alone, so every call sees the cache between two whole operations.

What is checked on each result (f32 caches, so exact): every row read is either the synthetic row
of that position (fill_synthetic) or the constant row the appender writes; attention outputs are
finite (a slot past the length holds NaN bytes, so a read past a changing length shows); at the end
the cache still gives the same answers as a fresh one. Errors are allowed only when they are the
documented ones (the layer is full, or empty for attention), never anything else."""
import threading
import time

import numpy as np
import pytest

from glmbench.core import attention as att
from glmbench.core.kvcache import KVCache

SECONDS = 2.0
CAP, LAYERS, N_SYN, SEED = 96, 2, 40, 7
APPEND_VALUE = 0.25


def _expected_errors(e):
    msg = str(e)
    return isinstance(e, ValueError) and ("KV cache full" in msg or "holds only" in msg)


def _hammer(cache, workers, seconds=SECONDS):
    errors, stop = [], threading.Event()

    def run(fn):
        try:
            while not stop.is_set():
                try:
                    fn()
                except (ValueError, RuntimeError) as e:
                    if not _expected_errors(e):
                        raise
        except BaseException as e:  # noqa: BLE001 - reported to the main thread
            errors.append(e)
            stop.set()

    ts = [threading.Thread(target=run, args=(fn,), daemon=True) for fn in workers]
    for t in ts:
        t.start()
    time.sleep(seconds)
    stop.set()
    for t in ts:
        t.join(30)
    assert not any(t.is_alive() for t in ts), "a thread hung (deadlock on the cache lock?)"
    if errors:
        raise errors[0]


def _synthetic_rows(make):
    ref = make()
    ref.fill_synthetic(CAP, seed=SEED)
    return [ref.read(layer) for layer in range(LAYERS)]


def syn_bytes(make):
    """Every block of every layer: the most a cache of this shape can ever obtain."""
    c = make()
    c.fill_synthetic(CAP)
    return c.bytes_allocated


def _check_rows(got, syn, const_a, const_b):
    a, b = got
    assert a.shape[0] == b.shape[0] <= CAP
    for t in range(a.shape[0]):
        ok_syn = np.array_equal(a[t], syn[0][t]) and np.array_equal(b[t], syn[1][t])
        ok_app = np.array_equal(a[t], const_a) and np.array_equal(b[t], const_b)
        assert ok_syn or ok_app, f"row {t} is neither the synthetic nor the appended row (torn write?)"


def _workers(cache, syn, a1, b1, attend):
    rng = np.random.default_rng(0)

    def do_reset():
        cache.reset()

    def do_fill():
        cache.fill_synthetic(int(rng.integers(0, N_SYN)), seed=SEED)

    def do_append():
        cache.append(int(rng.integers(0, LAYERS)), a1, b1)

    def do_read():
        layer = int(rng.integers(0, LAYERS))
        _check_rows(cache.read(layer), syn[layer], a1[0], b1[0])
        assert 0 <= cache.length(layer) <= CAP
        # three reads at three moments: each within its bounds (they need not agree with each other)
        assert 0 <= cache.bytes_used <= cache.bytes_per_token * CAP
        assert 0 <= cache.bytes_in_blocks <= cache.bytes_allocated_max
        assert 0 <= cache.bytes_allocated <= cache.bytes_allocated_max

    def do_attend():
        y = attend(int(rng.integers(0, LAYERS)))
        assert np.isfinite(y).all(), "attention read garbage (NaN past the length)"

    return [do_reset, do_fill, do_append, do_read, do_attend, do_attend]


def test_gqa_cache_hammered_by_threads():
    Hkv, Dh = 2, 16
    make = lambda: KVCache.gqa(LAYERS, CAP, Hkv, Dh, kv="f32", block_size=8)  # noqa: E731
    cache, syn = make(), _synthetic_rows(make)
    cache.bytes_allocated_max = syn_bytes(make)
    a1 = np.full((1, Hkv, Dh), APPEND_VALUE, np.float32)
    b1 = np.full((1, Hkv, Dh), -APPEND_VALUE, np.float32)
    q = np.random.default_rng(1).standard_normal((1, 4, Dh)).astype(np.float32)
    _hammer(cache, _workers(cache, syn, a1, b1, lambda layer: att.gqa_attention(q, cache, layer)))
    # still a working cache: the same answer as a fresh one
    fresh = make()
    for c in (cache, fresh):
        c.fill_synthetic(N_SYN, seed=SEED)
    np.testing.assert_array_equal(att.gqa_attention(q, cache, 1), att.gqa_attention(q, fresh, 1))


@pytest.mark.parametrize("strategy", ["naive", "absorbed", "flash"])
def test_mla_cache_hammered_by_threads(strategy):
    R, Dr, H, Dn, Dv = 32, 16, 2, 8, 8
    make = lambda: KVCache.mla(LAYERS, CAP, R, Dr, kv="f32", block_size=8)  # noqa: E731
    cache, syn = make(), _synthetic_rows(make)
    cache.bytes_allocated_max = syn_bytes(make)
    a1 = np.full((1, R), APPEND_VALUE, np.float32)
    b1 = np.full((1, Dr), -APPEND_VALUE, np.float32)
    rng = np.random.default_rng(2)
    qn = rng.standard_normal((1, H, Dn)).astype(np.float32)
    qr = rng.standard_normal((1, H, Dr)).astype(np.float32)
    w = (rng.standard_normal((H * (Dn + Dv), R)) * 0.1).astype(np.float32)

    def attend(layer, c=cache):
        return att.mla_attention(qn, qr, c, layer, w, v_head_dim=Dv, strategy=strategy)

    _hammer(cache, _workers(cache, syn, a1, b1, attend), seconds=SECONDS / 2)
    fresh = make()
    for c in (cache, fresh):
        c.fill_synthetic(N_SYN, seed=SEED)
    np.testing.assert_array_equal(attend(0), attend(0, fresh))


def test_layer_forward_shares_the_cache_safely():
    """A whole layer (csrc/layer.c appends to the cache) against reset/fill in other threads."""
    from glmbench.models.model import Model
    from test_layer import tiny
    cfg = tiny("glm-4.7-flash")
    m = Model(cfg, seed=0, max_context=64, weights="f32", kv="f32")
    x = np.random.default_rng(3).standard_normal((1, cfg.hidden_size)).astype(np.float32)
    layer0 = m.layers[0]
    cache = m.cache

    def fwd():
        y = layer0.forward(x, cache, 0, np.array([cache.length(0)], np.int64))
        assert np.isfinite(y).all()

    _hammer(cache, [fwd, fwd, cache.reset, lambda: cache.fill_synthetic(8)], seconds=SECONDS / 2)


def test_reinit_of_a_live_cache_is_refused():
    c = KVCache.gqa(1, 8, 1, 8, kv="f32")
    with pytest.raises(RuntimeError, match="already initialised"):
        c.__init__("gqa", 1, 8, 1, 8, 8, "f32", 8)
    assert c.capacity_tokens == 8

"""The one-token paths of the integer GEMM on repacked q8_0/q4_0 weights (csrc/qgemm.c: the decode
GEMV reads each thread's groups as one stream; a decode step's routed experts the same way) against
the multi-token tiles: the same integers and float operations, so bit-identical rows; and the
float64 oracle on the dequantized weights. quant.fuse_rows / linear_pair (stacked matrices: the same
numbers as separate calls) and ops.keep_heap."""
import os
import sys

import numpy as np
import pytest

from glmbench.core import quant

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import kquant_np  # noqa: E402
from glmbench.core import reference as ref

FMTS = ["q8_0", "q4_0"]
VNNI = [k for k, ok in quant.kernels().items() if ok and k.startswith("qgemm_")]


def _w(rng, shape, scale=0.05):
    return (rng.standard_normal(shape) * scale).astype(np.float32)


def _q(a, fmt):
    if fmt in quant.K_FORMATS:  # glmbench reads K formats as stored: blocks from the test quantizer
        return quant.QTensor(kquant_np.quantize(a, fmt).reshape(a.shape[0], -1), fmt, a.shape)
    return quant.quantize(a, fmt)


@pytest.mark.parametrize("kernel", VNNI)
@pytest.mark.parametrize("fmt", FMTS)
@pytest.mark.parametrize("N,K", [(7, 32), (33, 64), (250, 96), (1030, 512), (4099, 256)])
def test_gemv_rows_equal_the_tile_rows(rng, kernel, fmt, N, K):
    qt = quant.quantize(_w(rng, (N, K)), fmt)
    x = rng.standard_normal((3, K)).astype(np.float32)
    tiles = quant.linear(x, qt, kernel=kernel)          # T = 3: the tile kernel
    for t in range(3):
        one = quant.linear(x[t:t + 1], qt, kernel=kernel)  # T = 1: the GEMV
        np.testing.assert_array_equal(one[0], tiles[t])
    # and the float64 oracle (q8_0 activations: error ~ 1% of the row's magnitude)
    want = x.astype(np.float64) @ ref.dequantize(qt.data, fmt).T
    np.testing.assert_allclose(tiles, want, rtol=0, atol=0.02 * np.abs(want).max())


@pytest.mark.parametrize("kernel", VNNI)
@pytest.mark.parametrize("fmt", FMTS)
def test_moe_one_token_equals_its_row_of_two(rng, fmt, kernel):
    # T = 1: every routed expert has one row (the one-stream path); T = 2 with the same token and
    # routing twice: two rows per expert (the tiles). Row 0 of the second is the first, exactly.
    D, F, E, k = 96, 160, 6, 3
    ws = [quant.quantize(_w(rng, s, 0.1), fmt) for s in ((E, F, D), (E, F, D), (E, D, F))]
    x = rng.standard_normal((1, D)).astype(np.float32)
    idx = np.array([[4, 0, 2]], np.int64)
    wts = np.array([[0.5, 0.3, 0.2]], np.float32)
    y1, c1 = quant.moe_experts(x, idx, wts, *ws, kernel=kernel)
    y2, c2 = quant.moe_experts(np.repeat(x, 2, 0), np.repeat(idx, 2, 0), np.repeat(wts, 2, 0), *ws, kernel=kernel)
    np.testing.assert_array_equal(c2, 2 * c1)
    np.testing.assert_array_equal(y1[0], y2[0])
    np.testing.assert_array_equal(y2[0], y2[1])


@pytest.mark.parametrize("fmt,K", [("q8_0", 96), ("q4_0", 64), ("q4_K", 256), ("q6_K", 512)])
@pytest.mark.parametrize("T", [1, 3, 16, 20])
def test_fuse_rows_stacked_call_equals_separate_calls(rng, fmt, K, T):
    a0, b0 = _w(rng, (48, K)), _w(rng, (80, K))
    a, b = _q(a0, fmt), _q(b0, fmt)
    x = rng.standard_normal((T, K)).astype(np.float32)
    ya, yb = quant.linear(x, a), quant.linear(x, b)
    da, db = a.dequantize(), b.dequantize()
    f = quant.fuse_rows(a, b)
    assert f is not None and f.shape == (128, K) and quant.stacked(a, b) is f and quant.stacked(b, a) is None
    # the parts still work alone (views into the stacked buffer), their values unchanged
    np.testing.assert_array_equal(quant.linear(x, a), ya)
    np.testing.assert_array_equal(a.dequantize(), da)
    np.testing.assert_array_equal(b.dequantize(), db)
    pa, pb = quant.linear_pair(x, a, b)
    np.testing.assert_array_equal(pa, ya)
    np.testing.assert_array_equal(pb, yb)
    # swiglu takes the stacked path for gate + up: the same numbers as its separate calls
    if fmt in ("q8_0", "q4_0"):
        g, u, dn = (quant.quantize(v, fmt) for v in (_w(rng, (64, K)), _w(rng, (64, K)), _w(rng, (K, 64))))
        want = quant.swiglu(x, g, u, dn)
        assert quant.fuse_rows(g, u) is not None
        np.testing.assert_array_equal(quant.swiglu(x, g, u, dn), want)


def test_fuse_rows_refuses_what_it_cannot_stack(rng):
    q8 = quant.quantize(_w(rng, (32, 64)), "q8_0")
    assert quant.fuse_rows(q8, quant.quantize(_w(rng, (32, 64)), "q4_0")) is None     # formats differ
    assert quant.fuse_rows(q8, quant.quantize(_w(rng, (32, 96)), "q8_0")) is None     # K differs
    assert quant.fuse_rows(q8, quant.quantize(_w(rng, (24, 64)), "q8_0")) is None     # not whole 16-row groups
    assert quant.fuse_rows(q8, _w(rng, (32, 64))) is None                              # not a QTensor
    assert q8._fused is None and q8.packed is None                                      # nothing changed
    b = quant.quantize(_w(rng, (16, 64)), "q8_0")
    assert quant.fuse_rows(q8, b) is not None
    assert quant.fuse_rows(q8, quant.quantize(_w(rng, (16, 64)), "q8_0")) is None     # already stacked
    f = quant.stacked(q8, b)
    assert f.shape == (48, 64)
    np.testing.assert_array_equal(f.dequantize(), np.concatenate([q8.dequantize(), b.dequantize()]))
    # a stacked K-format matrix reads its parts' stored bytes (compute="f32" dequantizes it)
    ka, kb = _q(_w(rng, (16, 256)), "q4_K"), _q(_w(rng, (32, 256)), "q4_K")
    fk = quant.fuse_rows(ka, kb)
    np.testing.assert_array_equal(fk.data, np.concatenate([ka.data, kb.data]))
    x = rng.standard_normal((2, 256)).astype(np.float32)
    np.testing.assert_array_equal(quant.linear(x, fk, compute="f32"),
                                  np.concatenate([quant.linear(x, ka, compute="f32"), quant.linear(x, kb, compute="f32")], 1))


def test_keep_heap_applies_on_glibc():
    import platform
    from glmbench.core import ops
    assert ops.keep_heap() is (platform.libc_ver()[0] == "glibc")


@pytest.mark.parametrize("fmt", ["q4_0", "q8_0"])
def test_swiglu_in_row_chunks_gives_the_same_numbers(fmt, monkeypatch):
    # a prefill whose [T, F] activations pass SWIGLU_CHUNK_BYTES runs in chunks of rows (kept heap
    # blocks instead of fresh mappings): every row's numbers are those of the whole call
    from glmbench.core import quant as q
    rng = np.random.default_rng(7)
    W = [q.quantize(rng.standard_normal(s).astype(np.float32), fmt) for s in ((640, 256), (640, 256), (256, 640))]
    x = rng.standard_normal((200, 256)).astype(np.float32)
    x0 = x.copy()
    monkeypatch.setattr(q, "SWIGLU_CHUNK_BYTES", 1 << 40)
    whole = q.swiglu(x, *W)
    calls = []
    real = q._swiglu_rows
    monkeypatch.setattr(q, "_swiglu_rows", lambda xx, *a, **k: calls.append(len(xx)) or real(xx, *a, **k))
    monkeypatch.setattr(q, "SWIGLU_CHUNK_BYTES", 64 * 640 * 4)
    chunked = q.swiglu(x, *W)
    assert calls == [64, 64, 64, 8]
    assert np.array_equal(chunked, whole) and chunked.shape == (200, 256)
    assert np.array_equal(x, x0)
    calls.clear()
    q.swiglu(x[:16], *W)            # small enough: one call
    assert calls == [16]

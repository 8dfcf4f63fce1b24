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


@pytest.mark.parametrize("kernel", VNNI)
@pytest.mark.parametrize("fmt", FMTS)
def test_moe_disjoint_tokens_equal_each_alone(rng, fmt, kernel):
    # three tokens on disjoint experts: every expert has one row (the decode items, each matrix's groups
    # far apart at once on AVX2), as when each token runs alone; D and F of 2-10 16-row groups, so the
    # four streams have 1-3 groups each (and some none)
    for D, F in ((64, 96), (96, 160), (32, 64)):
        E, k = 9, 3
        ws = [quant.quantize(_w(rng, s, 0.1), fmt) for s in ((E, F, D), (E, F, D), (E, D, F))]
        x = rng.standard_normal((3, D)).astype(np.float32)
        idx = np.array([[4, 0, 2], [1, 8, 5], [7, 3, 6]], np.int64)
        wts = rng.random((3, k)).astype(np.float32)
        y, c = quant.moe_experts(x, idx, wts, *ws, kernel=kernel)
        np.testing.assert_array_equal(c, np.ones(E, np.int64))
        for t in range(3):
            yt, _ = quant.moe_experts(x[t:t + 1], idx[t:t + 1], wts[t:t + 1], *ws, kernel=kernel)
            np.testing.assert_array_equal(y[t], yt[0])
        # and the float64 oracle on the dequantized experts (q8_0 activations: ~1% of the output's scale)
        dg, du, dd = (ref.dequantize(q.data, fmt).reshape(q.shape) for q in ws)
        want = np.zeros((3, D))
        for t in range(3):
            for j in range(k):
                e = idx[t, j]
                g, u = dg[e] @ x[t].astype(np.float64), du[e] @ x[t].astype(np.float64)
                want[t] += wts[t, j] * (dd[e] @ (g / (1 + np.exp(-g)) * u))
        np.testing.assert_allclose(y, want, rtol=0, atol=0.03 * np.abs(want).max())


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


# ---- the SIMD versions against an exact oracle of their arithmetic ---------------------------
# qgemm_vnni and qgemm_avx2 compute, per output, the integer block sums sum(w_q * x_q) (exact) and
# then acc = fma(float(s), d_w * d_x, acc) block after block (then + bias): bit-identical to each
# other. qgemm_ref does the same integers with a separate multiply and add (-std=c11: no FMA
# contraction), or with FMA where a compiler contracts it. The oracle below is that arithmetic in
# NumPy, each FMA rounded once (float64 product exact, TwoSum for the sum's error).
FAST = [k for k in VNNI if k != "qgemm_ref"]


def _fma32(a, b, c):
    a64, b64, c64 = (np.asarray(v, np.float32).astype(np.float64) for v in (a, b, c))
    p = a64 * b64                       # exact: |s| < 2^20 and a 24-bit scale
    s = p + c64
    bv = s - p
    e = (p - (s - bv)) + (c64 - bv)     # s + e == p + c exactly
    r = s.astype(np.float32)
    d = s - r.astype(np.float64)
    nxt = np.nextafter(r, np.where(d > 0, np.float32(np.inf), np.float32(-np.inf)))
    tie = (d != 0) & (d == (nxt.astype(np.float64) - r.astype(np.float64)) / 2) & (e != 0)
    return np.where(tie & (np.sign(e) == np.sign(d)), nxt, r)   # a midpoint s: the exact sum's side


def _int_oracle(x, wdata, fmt, n, k, bias=None, fma=True):
    T, nb = x.shape[0], k // 32
    xb = np.asarray(ref.quantize_q8_0(x)).reshape(T, nb, 34)
    dx = xb[..., :2].copy().view(np.float16)[..., 0].astype(np.float32)
    xv = xb[..., 2:].copy().view(np.int8).astype(np.int64)
    bb = 34 if fmt == "q8_0" else 18
    wb = np.ascontiguousarray(wdata).reshape(n, nb, bb)
    dw = wb[..., :2].copy().view(np.float16)[..., 0].astype(np.float32)
    if fmt == "q8_0":
        wv = wb[..., 2:].copy().view(np.int8).astype(np.int64)
    else:
        nib = wb[..., 2:].astype(np.int64)
        wv = np.concatenate([nib & 15, nib >> 4], axis=-1) - 8
    s = np.einsum("tbk,nbk->tnb", xv, wv)
    sc = dw[None, :, :] * dx[:, None, :]          # float32 products
    acc = np.zeros((T, n), np.float32)
    for b in range(nb):
        sf = s[:, :, b].astype(np.float32)
        acc = _fma32(sf, sc[:, :, b], acc) if fma else (acc + sf * sc[:, :, b]).astype(np.float32)
    return acc if bias is None else (acc + bias).astype(np.float32)


def _same_bits(got, want, msg=""):
    np.testing.assert_array_equal(np.asarray(got, np.float32).view(np.uint32), want.view(np.uint32), err_msg=msg)


@pytest.mark.parametrize("fmt", FMTS)
@pytest.mark.parametrize("N,K", [(1, 32), (7, 96), (17, 64), (45, 544), (250, 160)])
def test_qgemm_versions_equal_the_integer_oracle(rng, fmt, N, K):
    # every token count 1..17 (the GEMV, whole and partial 4-token tiles), odd N (a partial
    # 16-row group and a partial 8-row half), zero-scale weight and activation blocks, a bias
    w = _w(rng, (N, K))
    w[N // 2, :32] = 0                                   # a weight block with scale 0
    qt = quant.quantize(w, fmt)
    x = rng.standard_normal((17, K)).astype(np.float32)
    x[3, 32:64 if K > 32 else 32] = 0                    # an activation block with scale 0
    x[5, :32] = 0
    bias = rng.standard_normal(N).astype(np.float32)
    want = _int_oracle(x, qt.data, fmt, N, K)
    want_b = _int_oracle(x, qt.data, fmt, N, K, bias)
    for T in range(1, 18):
        for kern in FAST:
            _same_bits(quant.linear(x[:T], qt, kernel=kern), want[:T], f"{kern} T={T}")
        _same_bits(quant.linear(x[:T], qt, bias, kernel=FAST[0] if FAST else "qgemm_ref"),
                   want_b[:T] if FAST else quant.linear(x[:T], qt, bias, kernel="qgemm_ref"))
    # the portable version: the same integers, one rounding more per block (or the FMA where the
    # compiler contracts it)
    y = quant.linear(x, qt, kernel="qgemm_ref")
    alt = _int_oracle(x, qt.data, fmt, N, K, fma=False)
    assert np.array_equal(y.view(np.uint32), alt.view(np.uint32)) or np.array_equal(y.view(np.uint32), want.view(np.uint32))


@pytest.mark.parametrize("kernel", FAST)
@pytest.mark.parametrize("fmt", FMTS)
def test_qgemm_int16_extremes(rng, kernel, fmt):
    # the largest integer sums the AVX2 version meets in int16: q4_0 nibbles all 15 (or 0) against
    # activations all +-127 (8 pairs of a block: 30480); q8_0 weights -128 and +127 (raw bytes,
    # beyond what the quantizer writes) against +-127 (sign trick: 2 * 128 * 127 per pair)
    N, K = 37, 256
    nb, bb = K // 32, (34 if fmt == "q8_0" else 18)
    data = np.zeros((N, nb, bb), np.uint8)
    data[..., :2] = np.float16(0.01).reshape(1).view(np.uint8)
    if fmt == "q8_0":
        vals = rng.choice(np.array([-128, 127, -127, 0], np.int8), size=(N, nb, 32))
        vals[:5] = -128
        vals[5:10] = 127
        data[..., 2:] = vals.view(np.uint8)
    else:
        data[..., 2:] = rng.choice(np.array([0x00, 0xff, 0x0f, 0xf0], np.uint8), size=(N, nb, 16))
        data[:5, :, 2:] = 0xff
        data[5:10, :, 2:] = 0x00
    qt = quant.QTensor(data.reshape(N, nb * bb), fmt, (N, K))
    x = np.where(rng.random((9, K)) < 0.5, -1.0, 1.0).astype(np.float32)
    x[0], x[1] = 1.0, -1.0
    want = _int_oracle(x, qt.data, fmt, N, K)
    for T in (1, 2, 5, 9):
        _same_bits(quant.linear(x[:T], qt, kernel=kernel), want[:T], f"T={T}")
    y = quant.linear(x, qt, kernel="qgemm_ref").view(np.uint32)
    assert np.array_equal(y, _int_oracle(x, qt.data, fmt, N, K, fma=False).view(np.uint32)) or np.array_equal(y, want.view(np.uint32))


@pytest.mark.parametrize("kernel", VNNI)
@pytest.mark.parametrize("fmt", FMTS)
def test_qgemm_views_and_nan(rng, kernel, fmt):
    # non-contiguous / offset activations read as their contiguous copy; NaN: the same clear error
    # on every version
    qt = quant.quantize(_w(rng, (33, 128)), fmt)
    big = rng.standard_normal((12, 260)).astype(np.float32)
    for view in (big[::2, 3:131], big[1:10, 130:258], np.asfortranarray(big[:5, :128])):
        _same_bits(quant.linear(view, qt, kernel=kernel), quant.linear(np.ascontiguousarray(view), qt, kernel=kernel))
    x = rng.standard_normal((3, 128)).astype(np.float32)
    x[1, 70] = np.nan
    with pytest.raises(ValueError, match=r"`x` contains NaN at flat index 198"):
        quant.linear(x, qt, kernel=kernel)
    x[1, 70] = np.inf
    with pytest.raises(ValueError, match=r"`x` contains inf"):
        quant.linear(x[1:2], qt, kernel=kernel)


def test_qgemm_auto_picks_the_best_compiled_in():
    k = quant.kernels()
    assert k["qgemm_ref"]
    if k.get("qgemm_vnni") or k.get("qgemm_avx2"):
        rng = np.random.default_rng(3)
        qt = quant.quantize(_w(rng, (40, 96)), "q4_0")
        x = rng.standard_normal((5, 96)).astype(np.float32)
        best = "qgemm_vnni" if k.get("qgemm_vnni") else "qgemm_avx2"
        _same_bits(quant.linear(x, qt), quant.linear(x, qt, kernel=best))

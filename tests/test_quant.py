"""ggml q8_0 / q4_0: byte layout against a NumPy reimplementation of ggml's reference quantizers,
round-trip error bounds in float64, the quantized linear kernels (every compiled version) against
the float64 reference on the dequantized weights, and QTensor dispatch through glmbench ops."""
import numpy as np
import pytest

import glmbench
from glmbench import vocab
from glmbench.core import quant
from glmbench.core import reference as ref

FMTS = ["q8_0", "q4_0"]
U = 2.0 ** -24  # float32 unit roundoff
# float16 scale: rel. rounding error <= 2^-11 (normal range)
F16_REL = 2.0 ** -11


def _data(rng, shape, scale=1.0):
    x = rng.standard_normal(shape) * scale
    # heavy-tailed blocks as real weights have: a few outliers per row
    x.flat[rng.integers(0, x.size, max(1, x.size // 50))] *= 8
    return x.astype(np.float32)


# ---- bytes ------------------------------------------------------------------------------------
@pytest.mark.parametrize("fmt", FMTS)
@pytest.mark.parametrize("shape", [(32,), (1, 64), (7, 256), (3, 5, 96), (2, 2048)])
def test_bytes_match_ggml_reference(rng, fmt, shape):
    x = _data(rng, shape, 3.0)
    x0 = x.copy()
    q = getattr(quant, f"quantize_{fmt}")(x)
    want = getattr(ref, f"quantize_{fmt}")(x)
    assert q.dtype == np.uint8 and q.shape == want.shape
    np.testing.assert_array_equal(q, want)
    np.testing.assert_array_equal(x, x0)


@pytest.mark.parametrize("fmt", FMTS)
def test_layout_by_hand(fmt):
    # one block, values chosen so every step is exact: amax 127 (q8_0: d = 1) / max -8 (q4_0: d = 1)
    x = np.zeros(32, np.float32)
    if fmt == "q8_0":
        x[0], x[1], x[2], x[3], x[31] = 127, -2.5, 2.5, 0.49, -127  # roundf: -3, 3 (half away), 0
        q = quant.quantize_q8_0(x)
        assert q.shape == (34,)
        assert q[:2].view(np.float16)[0] == 1.0
        assert list(q[2:].view(np.int8)[[0, 1, 2, 3, 31]]) == [127, -3, 3, 0, -127]
    else:
        x[0], x[1], x[16], x[17] = -8, 7, 3.5, -0.6  # d = -8/-8 = 1 -> q = trunc(x + 8.5)
        q = quant.quantize_q4_0(x)
        assert q.shape == (18,)
        assert q[:2].view(np.float16)[0] == 1.0
        nib = q[2:]
        assert nib[0] == (0 | (12 << 4))   # x0 = -8 -> 0 (low), x16 = 3.5 -> 12 (high)
        assert nib[1] == (15 | (7 << 4))   # x1 = 7 -> 15, x17 = -0.6 -> trunc(7.9) = 7
        assert nib[2] == (8 | (8 << 4))    # zeros -> 8


def test_q4_0_ties_pick_first_signed_max():
    x = np.zeros(32, np.float32)
    x[3], x[9] = -2.0, 2.0  # equal magnitude: the first (negative) one sets d = -2/-8 = +0.25
    assert quant.quantize_q4_0(x)[:2].view(np.float16)[0] == np.float16(0.25)
    x[3], x[9] = 2.0, -2.0
    assert quant.quantize_q4_0(x)[:2].view(np.float16)[0] == np.float16(-0.25)


@pytest.mark.parametrize("fmt", FMTS)
def test_zero_and_tiny_blocks(fmt):
    x = np.zeros((2, 64), np.float32)
    x[1, 40] = 1e-30  # scale underflows float16 to 0: the block decodes to zeros, no NaN
    qt = quant.quantize(x, fmt)
    np.testing.assert_array_equal(qt.data, getattr(ref, f"quantize_{fmt}")(x))
    y = qt.dequantize()
    assert np.all(np.isfinite(y)) and np.all(np.abs(y) <= 1e-30)


# ---- round trip ------------------------------------------------------------------------------
def test_q8_0_round_trip_bound(rng):
    x = _data(rng, (64, 512), 2.0)
    y = quant.quantize(x, "q8_0").dequantize().astype(np.float64)
    xb = x.astype(np.float64).reshape(64, -1, 32)
    d = np.abs(xb).max(-1, keepdims=True) / 127
    d16 = ref.block_scales(quant.quantize_q8_0(x), "q8_0")[..., None]
    q = np.rint(y.reshape(xb.shape) / np.where(d16 == 0, 1, d16))
    err = np.abs(xb - y.reshape(xb.shape))
    # rounding to the grid of step d costs d/2; storing d in float16 moves each point by |q||d - d16|
    bound = d / 2 + np.abs(q) * np.abs(d - d16) + 4 * U * np.abs(xb)
    assert np.all(err <= bound)
    assert np.all(err <= d * (0.5 + 127 * F16_REL) + 4 * U * np.abs(xb))


def test_q4_0_round_trip_bound(rng):
    x = _data(rng, (64, 512), 2.0)
    y = quant.quantize(x, "q4_0").dequantize().astype(np.float64).reshape(64, -1, 32)
    xb = x.astype(np.float64).reshape(64, -1, 32)
    first = np.abs(xb).argmax(-1)[..., None]
    d = np.abs(np.take_along_axis(xb, first, -1)) / 8  # step |max|/8, grid -8..7
    d16 = np.abs(ref.block_scales(quant.quantize_q4_0(x), "q4_0"))[..., None]
    err = np.abs(xb - y)
    drift = 8 * np.abs(d - d16) + 4 * U * np.abs(xb)
    # on the grid's side of max: within half a step; on the other side the grid stops at 7 steps,
    # so values beyond 7.5 steps (only the opposite sign of max can be there) are clipped: one step
    side = np.sign(xb) * np.sign(np.take_along_axis(xb, first, -1))
    inner = (np.abs(xb) <= 7.5 * d) | (side >= 0)
    assert np.all(err[inner] <= np.broadcast_to(d / 2 + drift, xb.shape)[inner])
    assert np.all(err <= d + drift)


@pytest.mark.parametrize("fmt", FMTS)
def test_dequantize_matches_reference(rng, fmt):
    x = _data(rng, (5, 3, 128), 10.0)
    qt = quant.quantize(x, fmt)
    y = qt.dequantize()
    assert y.dtype == np.float32 and y.shape == x.shape
    # d16 * q is exact in float32 (11-bit x 8-bit significands)
    np.testing.assert_array_equal(y.astype(np.float64), ref.dequantize(qt.data, fmt))
    np.testing.assert_array_equal(quant.dequantize(qt), y)


# ---- QTensor and bytes -------------------------------------------------------------------------
@pytest.mark.parametrize("fmt", FMTS)
def test_qtensor_bytes_and_views(rng, fmt):
    x = _data(rng, (4, 6, 64))
    qt = quant.quantize(x, fmt)
    assert qt.shape == (4, 6, 64) and qt.fmt == fmt
    assert qt.nbytes == 4 * 6 * vocab.weight_format(fmt).nbytes(64)
    assert qt.bits_per_weight == vocab.weight_format(fmt).bits_per_weight
    e = qt[2]
    assert isinstance(e, quant.QTensor) and e.shape == (6, 64)
    np.testing.assert_array_equal(e.dequantize(), qt.dequantize()[2])
    np.testing.assert_array_equal(qt[1:3, 2].dequantize(), qt.dequantize()[1:3, 2])
    back = quant.QTensor.from_bytes(qt.data.tobytes(), fmt, (4, 6, 64))
    np.testing.assert_array_equal(back.dequantize(), qt.dequantize())
    with pytest.raises(ValueError, match="needs"):
        quant.QTensor.from_bytes(qt.data.tobytes()[:-1], fmt, (4, 6, 64))


def test_strided_input_is_accepted(rng):
    big = _data(rng, (8, 128))
    x = big[::2, ::2]
    np.testing.assert_array_equal(quant.quantize_q8_0(x), ref.quantize_q8_0(np.ascontiguousarray(x)))


# ---- bad input --------------------------------------------------------------------------------
def test_bad_input():
    x = np.ones((2, 64), np.float32)
    x[1, 5] = np.nan
    with pytest.raises(ValueError, match=r"`x` contains NaN at flat index 69"):
        quant.quantize(x, "q8_0")
    x[1, 5] = np.inf
    with pytest.raises(ValueError, match=r"`x` contains inf"):
        quant.quantize(x, "q4_0")
    with pytest.raises(ValueError, match=r"`x` last axis must be a multiple of 32 \(ggml blocks\), got 40"):
        quant.quantize(np.ones((2, 40), np.float32), "q8_0")
    with pytest.raises(TypeError, match=r"`x` must be float32, got float64"):
        quant.quantize(np.ones((2, 64)), "q8_0")
    with pytest.raises(ValueError, match=r"`fmt` must be one of q8_0, q4_0, q2_K, q3_K, q4_K, q5_K, q6_K, iq4_xs, iq4_nl, mxfp4, got 'q5_0'"):
        quant.quantize(np.ones((2, 64), np.float32), "q5_0")
    big = np.full((1, 32), 1e6, np.float32)  # q4_0 scale 1e6/8 > 65504: float16 overflow
    with pytest.raises(ValueError, match=r"overflows float16"):
        quant.quantize(big, "q4_0")
    quant.quantize(big, "q8_0")  # 1e6/127 fits
    qt = quant.quantize(np.ones((3, 64), np.float32), "q4_0")
    with pytest.raises(ValueError, match=r"`x` has shape \(2, 32\): its last axis must be 64"):
        quant.linear(np.ones((2, 32), np.float32), qt)
    with pytest.raises(ValueError, match=r"`bias` has shape \(4,\)"):
        quant.linear(np.ones((2, 64), np.float32), qt, np.ones(4, np.float32))
    with pytest.raises(TypeError, match=r"`weight` must be a QTensor"):
        quant.linear(np.ones((2, 64), np.float32), np.ones((3, 64), np.float32))
    with pytest.raises(ValueError, match=r"`kernel` must be one of"):
        quant.linear(np.ones((2, 64), np.float32), qt, kernel="fast")
    with pytest.raises(ValueError, match=r"`x` must have at least 1 dimension and a last axis of at least 1"):
        quant.quantize(np.ones((2, 0), np.float32), "q8_0")   # was NumPy's "cannot reshape array of size 0"


@pytest.mark.parametrize("fmt", FMTS)
@pytest.mark.parametrize("bad", [np.nan, np.inf])
def test_non_finite_bias_and_expert_weights_are_errors(rng, fmt, bad):
    """glmbench.linear with float weights refuses a NaN/inf bias and glmbench.moe_experts a NaN/inf
    topk_weight (ValueError naming them); with q8_0/q4_0 weights both went through unseen (qlinear,
    qgemm, qmoe) and every output row they touch came back NaN/inf."""
    x = rng.standard_normal((3, 64)).astype(np.float32)
    b = np.zeros(8, np.float32)
    b[5] = bad
    for compute, kernel in (("auto", "auto"), ("q8", "auto"), ("auto", "ref_q8"), ("f32", "auto"), ("f32", "ref_f32")):
        qt = quant.quantize(rng.standard_normal((8, 64)).astype(np.float32), fmt)
        with pytest.raises(ValueError, match=r"`bias` contains (NaN|inf) at flat index 5"):
            quant.linear(x, qt, b, compute=compute, kernel=kernel)
        with pytest.raises(ValueError, match=r"`bias` contains (NaN|inf) at flat index 5"):
            quant.linear(x[0], qt, b, compute=compute, kernel=kernel)   # one token: the GEMV path
    E, F, D = 4, 32, 64
    wg, wu = (quant.quantize(rng.standard_normal((E, F, D)).astype(np.float32), fmt) for _ in range(2))
    wd = quant.quantize(rng.standard_normal((E, D, F)).astype(np.float32), fmt)
    idx = np.array([[0, 1], [2, 3], [1, 2]], np.int32)
    tw = np.full((3, 2), 0.5, np.float32)
    tw[1, 0] = bad
    before = tw.tobytes()
    with pytest.raises(ValueError, match=r"`topk_weight` contains (NaN|inf) at flat index 2"):
        glmbench.moe_experts(x, idx, tw, wg, wu, wd)
    with pytest.raises(ValueError, match=r"`topk_weight` contains (NaN|inf) at flat index 1"):
        glmbench.moe_experts(x[:1], idx[:1], np.array([[0.5, bad]], np.float32), wg, wu, wd)   # decode
    wu_f = rng.standard_normal((E, F, D)).astype(np.float32)   # mixed QTensor / float experts: the Python loop
    with pytest.raises(ValueError, match=r"`topk_weight` contains (NaN|inf) at flat index 2"):
        glmbench.moe_experts(x, idx, tw, wg, wu_f, wd)
    assert tw.tobytes() == before
    tw[1, 0] = 0.5
    for u in (wu, wu_f):
        y, _ = glmbench.moe_experts(x, idx, tw, wg, u, wd)
        assert np.isfinite(y).all()


# ---- quantized linear ------------------------------------------------------------------------
AVAILABLE = [k for k, ok in quant.kernels().items() if ok]
F32_KERNELS = [k for k in AVAILABLE if k.endswith("f32")]
Q8_KERNELS = [k for k in AVAILABLE if k.endswith("q8") or k.startswith("qgemm_")]


def _case(rng, T, N, K, fmt, bias):
    x = _data(rng, (T, K))
    w = _data(rng, (N, K), 0.05)
    qt = quant.quantize(w, fmt)
    b = rng.standard_normal(N).astype(np.float32) if bias else None
    return x, qt, b


@pytest.mark.parametrize("kernel", F32_KERNELS)
@pytest.mark.parametrize("fmt", FMTS)
@pytest.mark.parametrize("T,N,K,bias", [(1, 33, 64, False), (3, 70, 96, True), (17, 40, 256, False), (2, 9, 1024, True)])
def test_linear_f32_kernels_match_reference(rng, kernel, fmt, T, N, K, bias):
    x, qt, b = _case(rng, T, N, K, fmt, bias)
    x0, w0 = x.copy(), qt.data.copy()
    y = quant.linear(x, qt, b, kernel=kernel)
    want = ref.qlinear(x, qt.data, fmt, b)
    # weights decode exactly (d16 * q fits float32); the only error is float32 summation:
    # Higham's gamma_n bound, n = K products plus the block scale and bias steps
    mag = np.abs(x.astype(np.float64)) @ np.abs(ref.dequantize(qt.data, fmt)).T + (0 if b is None else np.abs(b))
    assert np.all(np.abs(y - want) <= (K + 4) * U * mag + 1e-30)
    np.testing.assert_array_equal(x, x0)
    np.testing.assert_array_equal(qt.data, w0)


@pytest.mark.parametrize("kernel", Q8_KERNELS)
@pytest.mark.parametrize("fmt", FMTS)
@pytest.mark.parametrize("T,N,K,bias", [(1, 33, 64, False), (3, 70, 96, True), (5, 40, 256, False), (2, 9, 1024, True),
                                          (17, 47, 160, True), (33, 130, 320, False), (131, 21, 96, True)])
def test_linear_q8_kernels(rng, kernel, fmt, T, N, K, bias):
    x, qt, b = _case(rng, T, N, K, fmt, bias)
    y = quant.linear(x, qt, b, kernel=kernel).astype(np.float64)
    _check_q8(y, x, qt, fmt, b)


def _check_q8(y, x, qt, fmt, b):
    K = x.shape[1]
    # 1) against the exact float64 result on the q8_0-quantized activations: the block dots are
    # exact integers, so only the float32 sums over K/32 blocks remain, plus the zero-point
    # correction (8 * sum x for q4_0, 128 * sum x for q8_0 in the VNNI kernel) that cancels
    xq = ref.dequantize(ref.quantize_q8_0(x), "q8_0")
    wd = ref.dequantize(qt.data, fmt)
    want_q = ref.qlinear_q8_activations(x, qt.data, fmt, b)
    nb = K // 32
    zp = 128 if fmt == "q8_0" else 8
    mag = np.abs(xq) @ np.abs(wd).T + (0 if b is None else np.abs(b))
    corr = zp * (np.abs(xq) @ np.abs(np.repeat(ref.block_scales(qt.data, fmt), 32, -1)).T)
    assert np.all(np.abs(y - want_q) <= 4 * (nb + 4) * U * (mag + corr))
    # 2) against the float64 result on the unquantized activations: the activation rounding
    # (|x - xq| <= dx/2 per element, dx = amax/127 of its block) times |w|, summed
    want = ref.qlinear(x, qt.data, fmt, b)
    bound = np.abs(x.astype(np.float64) - xq) @ np.abs(wd).T
    assert np.all(np.abs(y - want) <= bound + 4 * (nb + 4) * U * (mag + corr))


@pytest.mark.parametrize("fmt", FMTS)
def test_linear_auto_and_1d(rng, fmt):
    x, qt, b = _case(rng, 20, 24, 128, fmt, True)
    want = ref.qlinear(x, qt.data, fmt, b)
    mag = np.abs(x.astype(np.float64)) @ np.abs(ref.dequantize(qt.data, fmt)).T + np.abs(b)
    y = quant.linear(x, qt, b, compute="f32")  # T=20 >= 16: dequantized panels + sgemm (float32 numerics)
    assert np.all(np.abs(y - want) <= (128 + 4) * U * mag)
    _check_q8(quant.linear(x, qt, b).astype(np.float64), x, qt, fmt, b)  # auto: integer GEMM, repacked
    assert qt.packed is not None
    y1 = quant.linear(x[3], qt, b)  # 1-D x -> 1-D y
    assert y1.shape == (24,)
    np.testing.assert_allclose(y1, want[3], rtol=0, atol=float(0.02 * mag[3].max()))
    y0 = quant.linear(np.zeros((0, 128), np.float32), qt)
    assert y0.shape == (0, 24)


def test_linear_kernels_agree_with_each_other(rng):
    # the same integer dots in different instruction sets: equal up to float32 summation order
    x, qt, _ = _case(rng, 3, 64, 512, "q4_0", False)
    ys = [quant.linear(x, qt, kernel=k) for k in Q8_KERNELS]
    for y in ys[1:]:
        np.testing.assert_allclose(y, ys[0], rtol=1e-5, atol=1e-5 * np.abs(ys[0]).max())


# ---- dispatch through glmbench ops ----------------------------------------------------------
@pytest.mark.parametrize("fmt", FMTS)
def test_ops_accept_qtensor(rng, fmt):
    x = _data(rng, (2, 64))
    wg, wu, wd = _data(rng, (96, 64), 0.1), _data(rng, (96, 64), 0.1), _data(rng, (64, 96), 0.1)
    qg, qu, qd = (quant.quantize(w, fmt) for w in (wg, wu, wd))
    b = rng.standard_normal(96).astype(np.float32)
    np.testing.assert_array_equal(glmbench.linear(x, qg, b), quant.linear(x, qg, b))
    np.testing.assert_array_equal(glmbench.linear(x[0], qg), quant.linear(x[0], qg))
    # swiglu on quantized weights vs the float64 reference on the dequantized ones, through the
    # q8_0-activation path: each linear carries the activation rounding (~1/254 of a block's amax)
    dg, du, dd = (ref.dequantize(q.data, fmt) for q in (qg, qu, qd))
    g, u = x.astype(np.float64) @ dg.T, x.astype(np.float64) @ du.T
    want = (g / (1 + np.exp(-g)) * u) @ dd.T
    y = glmbench.swiglu(x, qg, qu, qd)
    np.testing.assert_allclose(y, want, rtol=0, atol=0.03 * np.abs(want).max())
    # the f32 path has no activation rounding: float32 summation only
    y32 = quant.swiglu(x, qg, qu, qd, compute="f32")
    np.testing.assert_allclose(y32, want, rtol=0, atol=1e-5 * np.abs(want).max())
    # mixed: quantized gate/up, float32 down
    ym = glmbench.swiglu(x, qg, qu, dd.astype(np.float32))
    np.testing.assert_allclose(ym, want, rtol=0, atol=0.03 * np.abs(want).max())


@pytest.mark.parametrize("fmt", FMTS)
def test_moe_experts_quantized(rng, fmt):
    T, D, F, E, k = 5, 64, 96, 6, 2
    x = _data(rng, (T, D))
    qg = quant.quantize(_data(rng, (E, F, D), 0.1), fmt)
    qu = quant.quantize(_data(rng, (E, F, D), 0.1), fmt)
    qd = quant.quantize(_data(rng, (E, D, F), 0.1), fmt)
    idx = np.array([[0, 3], [3, 5], [1, 0], [5, 3], [2, 4]], np.int32)
    wts = rng.random((T, k)).astype(np.float32)
    y, counts = quant.moe_experts(x, idx, wts, qg, qu, qd, compute="f32")
    np.testing.assert_array_equal(counts, np.bincount(idx.ravel(), minlength=E))
    want = np.zeros((T, D))
    dg, du, dd = (ref.dequantize(q.data, fmt) for q in (qg, qu, qd))
    for t in range(T):
        for j in range(k):
            e = idx[t, j]
            g, u = dg[e] @ x[t].astype(np.float64), du[e] @ x[t].astype(np.float64)
            want[t] += wts[t, j] * (dd[e] @ (g / (1 + np.exp(-g)) * u))
    np.testing.assert_allclose(y, want, rtol=0, atol=1e-5 * np.abs(want).max())
    with pytest.raises(ValueError, match=r"`topk_idx` must be in \[0, 6\)"):
        quant.moe_experts(x, idx + 3, wts, qg, qu, qd)


@pytest.mark.parametrize("fmt", FMTS)
@pytest.mark.parametrize("kernel", [k for k in AVAILABLE if k.startswith("qgemm_")])
def test_moe_experts_quantized_in_c(rng, fmt, kernel):
    # the C driver (gb_qmoe) against the Python loop over experts on the same integer GEMM, and
    # against float64 on the dequantized weights (q8_0 activations: ~1% here)
    T, D, F, E, k = 37, 96, 160, 7, 3
    x = _data(rng, (T, D))
    ws = [quant.quantize(_data(rng, s, 0.1), fmt) for s in ((E, F, D), (E, F, D), (E, D, F))]
    dg, du, dd = (ref.dequantize(q.data, fmt) for q in ws)
    idx = np.stack([rng.permutation(E)[:k] for _ in range(T)]).astype(np.int64)
    idx[:, 0] = 2  # one expert with every token, and expert 6 with none
    idx[idx == 6] = 5 if fmt == "q8_0" else 4
    idx[:, 1:] = np.where(idx[:, 1:] == 2, 0, idx[:, 1:])
    wts = rng.random((T, k)).astype(np.float32)
    y, counts = quant.moe_experts(x, idx, wts, *ws, kernel=kernel)
    np.testing.assert_array_equal(counts, np.bincount(idx.ravel(), minlength=E))
    assert counts[6] == 0 and all(w.packed is not None for w in ws)
    # the Python loop (per-expert 2-D views of the same packed tensors -> qgemm)
    loop = np.zeros((T, D), np.float32)
    for e in np.flatnonzero(counts):
        rows, slot = np.nonzero(idx == e)
        h = quant.swiglu(np.ascontiguousarray(x[rows]), ws[0][e], ws[1][e], ws[2][e], kernel=kernel)
        np.add.at(loop, rows, h * wts[rows, slot, None])
    np.testing.assert_allclose(y, loop, rtol=0, atol=2e-3 * np.abs(loop).max())
    want = np.zeros((T, D))
    x64 = x.astype(np.float64)
    for t in range(T):
        for j in range(k):
            e = idx[t, j]
            g, u = dg[e] @ x64[t], du[e] @ x64[t]
            want[t] += wts[t, j] * (dd[e] @ (g / (1 + np.exp(-g)) * u))
    np.testing.assert_allclose(y, want, rtol=0, atol=0.03 * np.abs(want).max())


@pytest.mark.parametrize("fmt", FMTS)
def test_repack_round_trip_and_views(rng, fmt):
    q = quant.quantize(_data(rng, (3, 37, 96)), fmt)
    raw = q.data.copy()
    nbytes = q.nbytes
    assert q.repack() is q and q.packed is not None
    np.testing.assert_array_equal(q.data, raw)  # the ggml bytes, rebuilt from the packed form
    assert q.nbytes == nbytes and q.shape == (3, 37, 96)
    np.testing.assert_array_equal(q[1].data, raw[1])
    assert q[1].shape == (37, 96) and q[1:].shape == (2, 37, 96)
    np.testing.assert_array_equal(q[1:][1].dequantize(), ref.dequantize(raw[2], fmt))
    with pytest.raises(IndexError, match="matrices only"):
        q[1, 2]
    with pytest.raises(ValueError, match="1-D"):
        quant.quantize(_data(rng, (64,)), fmt).repack()


# ---- KV cache in the block formats --------------------------------------------------------------
KV_FMTS = ["f32", "f16", "bf16", "q8_0", "q4_0"]


def _codec(x, fmt):
    """What a cache row should hold after encode + decode, computed independently of the C codec."""
    if fmt == "f32":
        return x.astype(np.float64)
    if fmt == "f16":
        return x.astype(np.float16).astype(np.float64)
    if fmt == "bf16":
        from glmbench.models.model import to_format
        return (to_format(x, "bf16").astype(np.uint32) << 16).view(np.float32).astype(np.float64)
    return ref.dequantize(getattr(ref, f"quantize_{fmt}")(x), fmt)


@pytest.mark.parametrize("fmt", KV_FMTS)
def test_kv_cache_bytes_exact(fmt):
    from glmbench.core.kvcache import KVCache
    per = {"f32": 4.0, "f16": 2.0, "bf16": 2.0, "q8_0": 34 / 32, "q4_0": 18 / 32}[fmt]
    # GLM-4.7-Flash: 47 layers x (512 latent + 64 rope key); q8_0 = 47 x 576/32 x 34 = 28,764 B
    glm = KVCache.mla(47, 256, 512, 64, kv=fmt)
    assert glm.bytes_per_token == 47 * int(576 * per) == 47 * vocab.kv_format(fmt).nbytes(576)
    # Qwen3-32B: 64 layers x 8 kv heads x (K 128 + V 128)
    qw = KVCache.gqa(64, 256, 8, 128, kv=fmt)
    assert qw.bytes_per_token == 64 * 8 * 2 * vocab.kv_format(fmt).nbytes(128)
    glm.fill_synthetic(100)
    assert glm.bytes_used == 100 * glm.bytes_per_token


@pytest.mark.parametrize("fmt", KV_FMTS)
@pytest.mark.parametrize("kind", ["gqa", "mla"])
def test_kv_cache_stores_codec_rows(rng, fmt, kind):
    from glmbench.core.kvcache import KVCache
    if kind == "mla":
        c = KVCache.mla(2, 128, 512, 64, kv=fmt)
        a, b = _data(rng, (7, 512)), _data(rng, (7, 64))
    else:
        c = KVCache.gqa(2, 128, 2, 64, 96, kv=fmt)
        a, b = _data(rng, (7, 2, 64)), _data(rng, (7, 2, 96))
    c.append(1, a, b)
    ra, rb = c.read(1)
    np.testing.assert_array_equal(ra.astype(np.float64), _codec(a, fmt))
    np.testing.assert_array_equal(rb.astype(np.float64), _codec(b, fmt))


@pytest.mark.parametrize("fmt", ["q8_0", "q4_0"])
def test_kv_cache_scale_overflow_is_an_error(fmt):
    from glmbench.core.kvcache import KVCache
    c = KVCache.mla(1, 64, 512, 64, kv=fmt)
    lat = np.ones((1, 512), np.float32)
    lat[0, 3] = 1e7  # scale 1e7/127 or 1e7/8 overflows float16
    with pytest.raises(ValueError, match="overflows float16"):
        c.append(0, lat, np.ones((1, 64), np.float32))
    assert c.length(0) == 0


def _attention64(q, K, V, scale):
    """float64 causal GQA attention; the T queries are the last T cached tokens."""
    T, Hq, _ = q.shape
    L, Hkv, _ = K.shape
    out = np.zeros((T, Hq, V.shape[2]))
    for t in range(T):
        n = L - T + t + 1
        for h in range(Hq):
            s = K[:n, h * Hkv // Hq] @ q[t, h].astype(np.float64) * scale
            p = np.exp(s - s.max())
            out[t, h] = (p / p.sum()) @ V[:n, h * Hkv // Hq]
    return out


def _gqa_attention(q, cache, layer):
    try:
        from glmbench.core.attention import gqa_attention
    except ImportError:  # the wrapper module lands with core part B; the C op is already there
        from glmbench.core._core import gqa_attention
    return gqa_attention(q, cache, layer)


@pytest.mark.parametrize("fmt", KV_FMTS)
def test_gqa_attention_on_quantized_cache(rng, fmt):
    from glmbench.core.kvcache import KVCache
    L, Hkv, Hq, Dh, T = 200, 2, 8, 128, 3
    k, v = _data(rng, (L, Hkv, Dh)), _data(rng, (L, Hkv, Dh))
    q = _data(rng, (T, Hq, Dh))
    c = KVCache.gqa(1, 256, Hkv, Dh, kv=fmt)
    c.append(0, k, v)
    y = _gqa_attention(q, c, 0).astype(np.float64)
    K, V = (a.astype(np.float64) for a in c.read(0))
    scale = 1 / np.sqrt(Dh)
    # 1) attention reads what the cache stores: float64 attention on the decoded rows, float32 slack
    np.testing.assert_allclose(y, _attention64(q, K, V, scale), rtol=0, atol=2e-5 * np.abs(V).max())
    # 2) against the float32-cache result, a bound from the stored errors themselves: logits move by
    # at most delta = scale * sum|q||dK| (per query head), which scales each softmax weight by at
    # most e^{+-2 delta}, so |dp|_1 <= e^{2 delta} - 1; the output moves by <= |dp|_1 max|V| + max|dV|
    exact = _attention64(q, k.astype(np.float64), v.astype(np.float64), scale)
    dK, dV = np.abs(K - k), np.abs(V - v)
    for t in range(T):
        for h in range(Hq):
            g = h * Hkv // Hq
            delta = scale * (dK[:, g] @ np.abs(q[t, h])).max()
            bound = np.expm1(2 * delta) * np.abs(v[:, g]).max() + dV[:, g].max()
            assert np.abs(y[t, h] - exact[t, h]).max() <= bound + 2e-5 * np.abs(v).max()


# ---- whole tiny models: quantized weights or cache against the float32 model -----------------
def _tiny(name):
    """A built-in config shrunk to test size with its structure kept (MLA/GQA, MoE, shared experts);
    cached rows and matrix rows are multiples of 32 so every tensor can be quantized."""
    from glmbench.models import configs
    hf = dict(configs.load(name).hf)
    hf.update(vocab_size=96, hidden_size=64, intermediate_size=96, num_attention_heads=4)
    if hf["model_type"] in ("glm4_moe_lite", "deepseek_v2"):
        hf.update(num_key_value_heads=4, kv_lora_rank=64, qk_rope_head_dim=32, qk_nope_head_dim=32, v_head_dim=32,
                  moe_intermediate_size=32, n_routed_experts=8, num_experts_per_tok=2, n_group=1, topk_group=1,
                  num_hidden_layers=3)
        if hf.get("q_lora_rank"):
            hf["q_lora_rank"] = 64
    elif hf["model_type"] == "qwen3_moe":
        hf.update(num_key_value_heads=2, head_dim=32, moe_intermediate_size=32, num_experts=8,
                  num_experts_per_tok=2, num_hidden_layers=2)
    else:
        hf.update(num_key_value_heads=2, head_dim=32, num_hidden_layers=2)
    return configs.load(hf)


def _format_rel_error(fmt, rng):
    """Relative RMS error of one encode/decode in `fmt` on N(0,1) data: the format's own noise."""
    x = rng.standard_normal((64, 256)).astype(np.float32)
    return float(np.sqrt(np.mean((_codec(x, fmt) - x) ** 2)))


# A logit's error is a sum over a few layers of the per-matrix (or per-cached-row) rounding noise
# passed through normalised layers: on these 2-3-layer models it stays within this many times the
# format's own relative RMS error (measured 1.7x-6.2x over every model and format below).
LOGIT_NOISE_FACTOR = 8.0


@pytest.mark.parametrize("name", ["glm-4.7-flash", "qwen3-32b", "qwen3-30b-a3b", "deepseek-v2-lite"])
@pytest.mark.parametrize("weights,kv", [("q8_0", "f32"), ("q4_0", "f32"), ("f32", "q8_0"), ("f32", "q4_0"),
                                        ("f32", "f16"), ("f32", "bf16")])
def test_tiny_model_logits_within_bounds(rng, name, weights, kv):
    from glmbench.models.model import Model
    cfg = _tiny(name)
    toks = np.array([3, 17, 42, 5, 88, 9, 61, 2, 33, 70, 11, 4])
    base = Model(cfg, weights="f32", kv="f32", max_context=32, seed=1)
    want = np.concatenate([base.prefill(toks), base.decode(7)[None]])
    m = Model(cfg, weights=weights, kv=kv, max_context=32, seed=1)
    if weights != "f32":  # the matrices really are held in blocks, and counted as such
        assert isinstance(m.lm_head, quant.QTensor) and m.lm_head.fmt == weights
        assert m.weight_bytes == cfg.weight_bytes(weights)  # exactly the checkpoint the config counts
    got = np.concatenate([m.prefill(toks), m.decode(7)[None]])
    assert np.all(np.isfinite(got))
    per_token = np.sqrt(np.mean((got - want) ** 2, -1) / np.mean(want ** 2, -1))
    eps = _format_rel_error(weights if weights != "f32" else kv, rng)
    if cfg.n_routed_experts:
        # Quantized weights or cache move the router's input, and where two experts' scores nearly
        # tie the choice flips: that token then runs different experts and its logits jump (a real
        # effect of rounding MoE models, not noise growth; seen with the bf16 cache on GLM's decode
        # step, whose bf16 attention tile rounds the query too). So the typical token is held to
        # the bound, and every token to staying sane.
        assert np.median(per_token) <= LOGIT_NOISE_FACTOR * eps, f"{per_token} vs format noise {eps:.4f}"
        assert per_token.max() < 1.5
    else:
        rel = np.sqrt(np.mean((got - want) ** 2) / np.mean(want ** 2))
        assert rel <= LOGIT_NOISE_FACTOR * eps, f"relative RMS logit error {rel:.4f} vs format noise {eps:.4f}"
    assert np.median(per_token) > 0.1 * eps  # the format really was applied (f32 would give ~1e-7)


def _rss_pages():
    import os
    with open(f"/proc/{os.getpid()}/statm") as f:
        return int(f.read().split()[1])


def test_no_leak_over_1000_calls(rng):
    import gc
    import os
    x = _data(rng, (4, 256))
    w = _data(rng, (64, 256), 0.1)
    qt = quant.quantize(w, "q4_0")
    b = np.ones(64, np.float32)

    def calls():
        quant.quantize(x, "q8_0")
        qt.dequantize()
        quant.linear(x, qt, b)                       # q8 path: the activation buffers
        quant.linear(x, qt, b, kernel="blas_f32")    # the float32 panel
        try:
            quant.quantize(np.full((1, 32), np.nan, np.float32), "q4_0")
        except ValueError:
            pass
    for _ in range(50):
        calls()
    gc.collect()
    before = _rss_pages()
    for _ in range(1000):
        calls()
    gc.collect()
    # each call allocates >= 4 KB of outputs or buffers: one leak per call would be > 4 MB per 1000
    assert (_rss_pages() - before) * os.sysconf("SC_PAGE_SIZE") < 2 << 20


def test_overflow_message_from_a_parallel_quantize():
    x = np.ones((512, 256), np.float32)  # big enough for the OpenMP loop
    x[300, 7] = 1e6
    with pytest.raises(ValueError, match=r"`x` cannot be quantized: row 300: a block scale overflows float16"):
        quant.quantize(x, "q4_0")


def test_shape_arguments_are_checked():
    """QTensor.from_bytes(buf, fmt, ()) and quantize_chunks(..., ()) raised IndexError ('tuple index out of
    range'), a negative size said the tensor "needs -144" bytes or NumPy's "negative dimensions are not
    allowed", and quantize_mxfp4 of a 0-d array IndexError; now one error naming the shape (or x)."""
    raw = quant.quantize(np.ones((4, 64), np.float32), "q4_0").data.tobytes()
    for bad, err, msg in (((), ValueError, r"`shape` must have at least 1 dimension"),
                          ((-4, 64), ValueError, r"`shape` must not have negative sizes"),
                          ((4.0, 64), TypeError, r"`shape` must be a sequence of ints"),
                          (64, TypeError, r"`shape` must be a sequence of ints")):
        with pytest.raises(err, match=msg):
            quant.QTensor.from_bytes(raw, "q4_0", bad)
        with pytest.raises(err, match=msg):
            quant.quantize_chunks([np.zeros(256, np.float32)], bad, "q8_0")
    with pytest.raises(ValueError, match=r"`x` must have at least 1 dimension"):
        quant.quantize_mxfp4(np.float32(1))
    qt = quant.QTensor.from_bytes(raw, "q4_0", (4, 64))
    np.testing.assert_array_equal(qt.dequantize(), np.ones((4, 64), np.float32))

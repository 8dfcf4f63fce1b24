import numpy as np
import pytest

import glmbench
from glmbench.core import _core
from glmbench.core import reference as ref

EPS32 = float(np.finfo(np.float32).eps)
BF16_UNIT = 2.0 ** -9  # round to nearest bf16 moves a value by at most 2^-9 of itself


def rounds_x(fmt, T, limit=None):
    """Whether linear multiplies bf16-rounded activations: bf16 weights above the GEMV limit
    (_core._linear_gemv_max_t(): 8 where a SIMD hgemm kernel runs, else 64) go to hgemm, whose bf16
    dot-product kernel (and its portable twin) rounds x to bf16 as ggml does (csrc/hgemm.h); every
    other path multiplies float32 x as given."""
    limit = _core._linear_gemv_max_t() if limit is None else limit
    return fmt == "bf16" and T > limit and _core._linear_hgemm("bf16") in ("bf16dot", "ref")


def x_seen(x, fmt, T=None, limit=None):
    """The activations linear multiplies (rounds_x), as float64."""
    T = np.asarray(x).reshape(-1, np.asarray(x).shape[-1]).shape[0] if T is None else T
    return ref.weight_f64(ref.to_bf16(x)) if rounds_x(fmt, T, limit) else np.asarray(x, np.float64)


def make_weight(w32, fmt):
    """(stored weight, the same rounded weight as float64) for fmt in f32/f16/bf16."""
    if fmt == "f32":
        w = w32
    elif fmt == "f16":
        w = w32.astype(np.float16)
    else:
        w = ref.to_bf16(w32)
    return w, ref.weight_f64(w)


def assert_dot_close(y, x, w64, bias=None):
    """Compare against the float64 product on the SAME rounded weights, so only float32
    accumulation error is left. Rounding errors of a length-K float32 sum of products grow like
    sqrt(K) (random signs; blocked/vector sums do no worse) relative to sum|w_i x_i|, so the bound
    per output is 4 * eps32 * sqrt(K) * (|x| @ |w|^T) + one rounding of the result."""
    x64 = np.asarray(x, np.float64).reshape(-1, w64.shape[1])
    r = x64 @ w64.T + (0.0 if bias is None else np.asarray(bias, np.float64))
    mag = np.abs(x64) @ np.abs(w64).T + (0.0 if bias is None else np.abs(bias))
    tol = 4 * EPS32 * np.sqrt(w64.shape[1]) * mag + EPS32 * np.abs(r)
    err = np.abs(np.asarray(y, np.float64).reshape(r.shape) - r)
    assert (err <= tol).all(), f"max err {err.max():.3g}, worst err/tol {(err / tol).max():.3g}"


@pytest.fixture(params=["simd", "portable"])
def kernel_path(request):
    """The SIMD version compiled in (AVX-512, or AVX2 + FMA + F16C on CPUs without it) and the
    portable one."""
    if request.param == "simd" and _core._linear_simd() == "portable":
        pytest.skip("no SIMD GEMV kernels compiled in (GLMBENCH_NATIVE=0 or neither AVX-512 nor AVX2 on this CPU)")
    _core._linear_set_portable(request.param == "portable")
    yield request.param
    _core._linear_set_portable(False)


@pytest.mark.parametrize("fmt", ["f32", "f16", "bf16"])
@pytest.mark.parametrize("T", [1, 2, 3, 4, 5, 8, 9, 33, 65])
@pytest.mark.parametrize("N,K", [(1, 1), (5, 17), (19, 37), (13, 64), (77, 513)])
def test_linear_odd_sizes(rng, kernel_path, fmt, T, N, K):
    x = rng.standard_normal((T, K)).astype(np.float32)
    w, w64 = make_weight(rng.standard_normal((N, K)).astype(np.float32), fmt)
    x0, wc = x.copy(), w.copy()
    y = glmbench.linear(x, w)
    assert y.shape == (T, N) and y.dtype == np.float32
    assert_dot_close(y, x_seen(x, fmt), w64)
    np.testing.assert_array_equal(x, x0)
    np.testing.assert_array_equal(w, wc)


# Real projection shapes [N, K]. GLM-4.7-Flash: q_a 768x2048, kv_a 576x2048, q_b 5120x768,
# o_proj 2048x5120, expert gate 1536x2048 and down 2048x1536. Qwen3-32B: k/v_proj 1024x5120 and a
# 512-row slice of q_proj/gate (x5120); the full 25600-row FFN would cost ~0.5 GB in a test.
REAL = [(768, 2048), (576, 2048), (5120, 768), (2048, 5120), (1536, 2048), (2048, 1536), (1024, 5120), (512, 5120)]


@pytest.mark.parametrize("N,K", REAL)
@pytest.mark.parametrize("fmt", ["f32", "bf16", "f16"])
@pytest.mark.slow
def test_linear_real_shapes(rng, fmt, N, K):
    w, w64 = make_weight((rng.standard_normal((N, K)) / np.sqrt(K)).astype(np.float32), fmt)
    for T in (1, 6, 65):  # decode GEMV, small-batch register tiles, prefill GEMM (panel path)
        x = rng.standard_normal((T, K)).astype(np.float32)
        assert_dot_close(glmbench.linear(x, w), x_seen(x, fmt), w64)


@pytest.mark.parametrize("N,K", [(7, 32), (9, 48), (70, 700), (130, 1040), (257, 2048), (33, 16385), (3, 32769)])
def test_linear_bf16_decode_pair_kernels(rng, N, K):
    # T = 1 bf16 reads 32 weights per load and splits them into even/odd halves (pair kernels);
    # the widening-load kernels stay behind _linear_set_pairs(False). Both are the float32 products
    # of the same weights: K % 32 tails, short rows (< 1024: one stream), halves with an odd row,
    # and rows longer than the stack-permuted x allows (> 32768: widening loads).
    if not _core._linear_has_avx512():
        pytest.skip("AVX-512 kernels not compiled in")
    w, w64 = make_weight((rng.standard_normal((N, K)) / np.sqrt(K)).astype(np.float32), "bf16")
    x = rng.standard_normal((1, K)).astype(np.float32)
    g, u = (make_weight(rng.standard_normal((N, K)).astype(np.float32), "bf16")[0] for _ in range(2))
    d = make_weight(rng.standard_normal((K, N)).astype(np.float32), "bf16")[0]
    out = {}
    for pairs in (True, False):
        _core._linear_set_pairs(pairs)
        try:
            out[pairs] = glmbench.linear(x, w), glmbench.swiglu(x, g, u, d)
        finally:
            _core._linear_set_pairs(True)
        assert_dot_close(out[pairs][0], x, w64)
    np.testing.assert_allclose(out[True][1], out[False][1], rtol=1e-4, atol=1e-4 * np.abs(out[False][1]).max())


@pytest.mark.parametrize("fmt", ["f16", "bf16"])
def test_linear_both_16bit_kernels_agree(rng, fmt):
    # the register-tile kernel (forced with gemv_max_t=64) and the prefill GEMM (hgemm, forced with
    # gemv_max_t=1)
    K, N = 300, 70
    w, w64 = make_weight(rng.standard_normal((N, K)).astype(np.float32), fmt)
    for T in (2, 9, 32):
        x = rng.standard_normal((T, K)).astype(np.float32)
        _core._linear_set_gemv_max_t(64)
        try:
            tile = glmbench.linear(x, w)
        finally:
            _core._linear_set_gemv_max_t(0)
        _core._linear_set_gemv_max_t(1)
        try:
            panel = glmbench.linear(x, w)
        finally:
            _core._linear_set_gemv_max_t(0)
        assert_dot_close(tile, x, w64)
        assert_dot_close(panel, x_seen(x, fmt, limit=1), w64)


def test_linear_1d_bias_and_strided(rng):
    K, N = 96, 40
    w32 = rng.standard_normal((N, K)).astype(np.float32)
    b = rng.standard_normal(N).astype(np.float32)
    for fmt in ("f32", "f16", "bf16"):
        w, w64 = make_weight(w32, fmt)
        x = rng.standard_normal(K).astype(np.float32)
        y = glmbench.linear(x, w, b)
        assert y.shape == (N,)
        assert_dot_close(y, x, w64, b)
        big = rng.standard_normal((24, 2 * K)).astype(np.float32)
        xs = big[::2, ::2]  # strided rows and columns
        assert_dot_close(glmbench.linear(xs, w, b), x_seen(xs, fmt), w64, b)
        wbig = np.zeros((N, 2 * K), w.dtype)
        wbig[:, ::2] = w
        ws = wbig[:, ::2]  # strided weight: copied, same answer
        assert not ws.flags.c_contiguous
        assert_dot_close(glmbench.linear(xs, ws, b), x_seen(xs, fmt), w64, b)


def test_linear_bf16_is_the_top_half_of_float32():
    # bf16 weights are exactly the float32 bit patterns' high halves: exact small products
    w = np.array([[1.0, -2.0, 0.5], [3.0, 0.25, -1.0]], np.float32)
    x = np.array([[1.0, 1.0, 2.0]], np.float32)
    for wq in (ref.to_bf16(w), w.astype(np.float16), w):
        np.testing.assert_array_equal(glmbench.linear(x, wq), [[0.0, 1.25]])


def test_linear_zero_tokens():
    y = glmbench.linear(np.zeros((0, 8), np.float32), np.ones((3, 8), np.float32))
    assert y.shape == (0, 3)


def test_linear_bad_input(rng):
    x = np.ones((2, 4), np.float32)
    w = np.ones((3, 4), np.float32)
    with pytest.raises(TypeError, match=r"`x` must be float32, got float64"):
        glmbench.linear(x.astype(np.float64), w)
    with pytest.raises(TypeError, match=r"`weight` must be float32, float16 or uint16 \(bfloat16 bits\), got int32"):
        glmbench.linear(x, w.astype(np.int32))
    with pytest.raises(TypeError, match=r"`weight` must be a numpy.ndarray"):
        glmbench.linear(x, [[1.0] * 4] * 3)
    with pytest.raises(ValueError, match=r"`weight` has shape \(3, 5\): axis 1 must be 4"):
        glmbench.linear(x, np.ones((3, 5), np.float32))
    with pytest.raises(ValueError, match=r"`weight` must be 2-D, got shape \(3, 4, 1\)"):
        glmbench.linear(x, np.ones((3, 4, 1), np.float32))
    with pytest.raises(ValueError, match=r"`x` must be 2-D, got shape \(1, 2, 4\)"):
        glmbench.linear(x[None], w)
    with pytest.raises(ValueError, match=r"`bias` has shape \(4,\): axis 0 must be 3"):
        glmbench.linear(x, w, np.ones(4, np.float32))
    with pytest.raises(TypeError, match=r"`bias` must be float32, got float16"):
        glmbench.linear(x, w, np.ones(3, np.float16))
    bad = x.copy()
    bad[1, 1] = np.nan
    with pytest.raises(ValueError, match=r"`x` contains NaN at flat index 5"):
        glmbench.linear(bad, w)
    bad[1, 1] = np.inf
    with pytest.raises(ValueError, match=r"`x` contains inf at flat index 5"):
        glmbench.linear(bad, ref.to_bf16(w))


# ---- swiglu ---------------------------------------------------------------------------------

def assert_swiglu_close(y, x, g64, u64, d64, bf16_acts=False):
    """Two chained float32 products (x -> gate/up over D, h -> down over F). Each contributes
    ~eps32*sqrt(length) of its row magnitude; the bound compares normwise against the float64
    result on the same rounded weights, scaled by the magnitude |h| @ |d|^T. bf16_acts: x and h
    were rounded to bf16 before their products (rounds_x): each |x| moves by up to 2^-9, which moves
    g and u by up to 2^-9 |x| @ |w|^T and h by |silu'| (<= 1.1) |dg| |u| + |silu(g)| |du|; h's own
    rounding adds 2^-9 |h| @ |d|^T."""
    x64 = np.asarray(x, np.float64)
    r = ref.swiglu(x64, g64, u64, d64)
    g, u = x64 @ g64.T, x64 @ u64.T
    h = ref.silu(g) * u
    D, F = g64.shape[1], g64.shape[0]
    mag = np.abs(h) @ np.abs(d64).T
    tol = 8 * EPS32 * (np.sqrt(D) + np.sqrt(F)) * mag + EPS32 * np.abs(r)
    if bf16_acts:
        dg, du = BF16_UNIT * (np.abs(x64) @ np.abs(g64).T), BF16_UNIT * (np.abs(x64) @ np.abs(u64).T)
        dh = 1.1 * dg * (np.abs(u) + du) + np.abs(ref.silu(g)) * du
        tol += 1.01 * (dh @ np.abs(d64).T) + 1.01 * BF16_UNIT * ((np.abs(h) + dh) @ np.abs(d64).T)
    err = np.abs(y - r)
    assert (err <= tol).all(), f"max err {err.max():.3g}, worst err/tol {(err / tol).max():.3g}"


# (the portable path on the small shapes only: it is slow at GLM size)
@pytest.mark.parametrize("fmt", ["f32", "f16", "bf16"])
@pytest.mark.parametrize("kernel_path,T,D,F", [
    (path, *s) for path in ("simd", "portable")
    for s in [(1, 1, 1), (1, 17, 9), (3, 33, 20), (9, 40, 70), (70, 24, 36), (1, 2048, 1536), (12, 2048, 1536)]
    if path == "simd" or s[1] * s[2] <= 1e6], indirect=["kernel_path"])
def test_swiglu_matches_reference(rng, kernel_path, fmt, T, D, F):
    x = rng.standard_normal((T, D)).astype(np.float32)
    g, g64 = make_weight((rng.standard_normal((F, D)) / np.sqrt(D)).astype(np.float32), fmt)
    u, u64 = make_weight((rng.standard_normal((F, D)) / np.sqrt(D)).astype(np.float32), fmt)
    d, d64 = make_weight((rng.standard_normal((D, F)) / np.sqrt(F)).astype(np.float32), fmt)
    copies = [a.copy() for a in (x, g, u, d)]
    y = glmbench.swiglu(x, g, u, d)
    assert y.shape == (T, D) and y.dtype == np.float32
    assert_swiglu_close(y, x, g64, u64, d64, bf16_acts=rounds_x(fmt, T))
    for a, c in zip((x, g, u, d), copies):
        np.testing.assert_array_equal(a, c)


def test_swiglu_mixed_formats_and_1d(rng):
    D, F = 48, 40
    x = rng.standard_normal(D).astype(np.float32)
    g, g64 = make_weight(rng.standard_normal((F, D)).astype(np.float32), "bf16")
    u, u64 = make_weight(rng.standard_normal((F, D)).astype(np.float32), "f16")
    d, d64 = make_weight(rng.standard_normal((D, F)).astype(np.float32), "f32")
    y = glmbench.swiglu(x, g, u, d)
    assert y.shape == (D,)
    assert_swiglu_close(y[None], x[None], g64, u64, d64)
    xs = rng.standard_normal((10, 2 * D)).astype(np.float32)[:, ::2]
    # gate (bf16) alone may round x (rounds_x); the bound allows it for gate, up and h
    assert_swiglu_close(glmbench.swiglu(xs, g, u, d), xs, g64, u64, d64, bf16_acts=rounds_x("bf16", 10))


def test_swiglu_bad_input():
    x = np.ones((2, 4), np.float32)
    g = np.ones((6, 4), np.float32)
    d = np.ones((4, 6), np.float32)
    with pytest.raises(ValueError, match=r"`w_up` has shape \(5, 4\): axis 0 must be 6"):
        glmbench.swiglu(x, g, np.ones((5, 4), np.float32), d)
    with pytest.raises(ValueError, match=r"`w_down` has shape \(6, 4\): axis 0 must be 4"):
        glmbench.swiglu(x, g, g, np.ones((6, 4), np.float32))
    with pytest.raises(TypeError, match=r"`w_gate` must be float32, float16 or uint16 \(bfloat16 bits\), got float64"):
        glmbench.swiglu(x, g.astype(np.float64), g, d)
    bad = x.copy()
    bad[0, 0] = np.nan
    with pytest.raises(ValueError, match=r"`x` contains NaN at flat index 0"):
        glmbench.swiglu(bad, g, g, d)

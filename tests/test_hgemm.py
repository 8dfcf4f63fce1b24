"""The prefill GEMM on 16-bit weights as stored (csrc/hgemm.c): every kernel this CPU runs against
the float64 reference on the same rounded inputs, the portable kernel beside the SIMD ones, odd
sizes, views, NaN/Inf, thread counts, the run-time pick, and linear's use of it."""
import numpy as np
import pytest

import glmbench
from glmbench.core import _core
from glmbench.core import reference as ref
from glmbench.measure.machine import cpu_flags

EPS32 = float(np.finfo(np.float32).eps)
# bf16 keeps 8 significant bits: rounding to nearest moves a value by at most 2^-9 of itself
BF16_UNIT = 2.0 ** -9


def kernels(fmt):
    """The hgemm kernels this CPU runs for weights in fmt (the portable one always)."""
    avail = _core._hgemm_kernels(fmt)
    return [k for k in ("ref", "f32fma", "bf16dot") if avail[k]]


def weight(w32, fmt):
    w = ref.to_bf16(w32) if fmt == "bf16" else w32.astype(np.float16)
    return w, ref.weight_f64(w)


def x_used(x, fmt, kernel):
    """The activations the kernel multiplies: rounded to bf16 by bf16dot and by its portable twin
    (ref on bf16 weights), as ggml does for a bf16 weight; float32 as given otherwise."""
    if fmt == "bf16" and kernel in ("bf16dot", "ref"):
        return ref.weight_f64(ref.to_bf16(x))
    return x.astype(np.float64)


def assert_close(y, x64, w64):
    """Within float32 accumulation error of the float64 product of the same rounded inputs."""
    r = x64 @ w64.T
    mag = np.abs(x64) @ np.abs(w64).T
    tol = 4 * EPS32 * np.sqrt(w64.shape[1]) * mag + EPS32 * np.abs(r)
    err = np.abs(y.astype(np.float64) - r)
    assert (err <= tol).all(), f"max err {err.max():.3g}, worst err/tol {(err / tol).max():.3g}"


@pytest.mark.parametrize("fmt", ["bf16", "f16"])
@pytest.mark.parametrize("T", [1, 2, 5, 6, 7, 13, 65, 127])
@pytest.mark.parametrize("N,K", [(1, 1), (15, 2), (16, 3), (17, 31), (63, 256), (64, 257), (65, 300), (130, 33)])
def test_hgemm_odd_sizes_every_kernel(rng, fmt, T, N, K):
    x = rng.standard_normal((T, K)).astype(np.float32)
    w, w64 = weight(rng.standard_normal((N, K)).astype(np.float32), fmt)
    x0, wc = x.copy(), w.copy()
    for k in kernels(fmt):
        y = _core.hgemm(x, w, kernel=k)
        assert y.shape == (T, N) and y.dtype == np.float32
        assert_close(y, x_used(x, fmt, k), w64)
    np.testing.assert_array_equal(x, x0)
    np.testing.assert_array_equal(w, wc)


@pytest.mark.parametrize("fmt", ["bf16", "f16"])
def test_hgemm_long_rows_and_513_tokens(rng, fmt):
    # several K blocks (256 bf16 pairs / 128 float32 columns each) with a partial last one, a
    # partial last 64-row tile and a partial last 6-token tile
    T, N, K = 513, 81, 1100
    x = rng.standard_normal((T, K)).astype(np.float32)
    w, w64 = weight((rng.standard_normal((N, K)) / np.sqrt(K)).astype(np.float32), fmt)
    for k in kernels(fmt):
        assert_close(_core.hgemm(x, w, kernel=k), x_used(x, fmt, k), w64)


def test_hgemm_bf16_activation_rounding_is_within_its_bound(rng):
    # against the float64 product of the unrounded activations, bf16dot differs by at most the
    # activation rounding (2^-9 of each |x|) plus the float32 sums
    T, N, K = 70, 40, 700
    x = rng.standard_normal((T, K)).astype(np.float32)
    w, w64 = weight(rng.standard_normal((N, K)).astype(np.float32), "bf16")
    x64 = x.astype(np.float64)
    r, mag = x64 @ w64.T, np.abs(x64) @ np.abs(w64).T
    for k in kernels("bf16"):
        err = np.abs(_core.hgemm(x, w, kernel=k) - r)
        bound = (BF16_UNIT if k != "f32fma" else 0.0) * mag + 4 * EPS32 * np.sqrt(K) * mag + EPS32 * np.abs(r)
        assert (err <= bound).all(), k
    if "bf16dot" in kernels("bf16"):  # and the rounding is really there: not the float32 result
        assert np.abs(_core.hgemm(x, w, kernel="bf16dot") - r).max() > 10 * EPS32 * np.sqrt(K) * mag.max() / K


@pytest.mark.parametrize("fmt", ["bf16", "f16"])
def test_hgemm_portable_equals_simd(rng, fmt):
    # the portable kernel and each SIMD one with the same arithmetic: equal up to the order of the
    # float32 sums (bf16dot and ref round the activations alike; f32fma and ref on f16 do not)
    T, N, K = 100, 70, 515
    x = rng.standard_normal((T, K)).astype(np.float32)
    w, w64 = weight(rng.standard_normal((N, K)).astype(np.float32), fmt)
    simd = [k for k in kernels(fmt) if k != "ref"]
    if not simd:
        pytest.skip("no SIMD hgemm kernel runs on this CPU")
    for k in simd:
        # f32fma on bf16 weights keeps the float32 activations that ref rounds to bf16: given activations
        # bf16 already holds exactly, the two multiply the same values (AVX2 builds' one bf16 SIMD kernel)
        xk = ref.weight_f64(ref.to_bf16(x)).astype(np.float32) if fmt == "bf16" and k == "f32fma" else x
        portable = _core.hgemm(xk, w, kernel="ref")
        mag = np.abs(x_used(xk, fmt, "ref")) @ np.abs(w64).T
        d = np.abs(_core.hgemm(xk, w, kernel=k).astype(np.float64) - portable)
        assert (d <= 8 * EPS32 * np.sqrt(K) * mag).all(), k


@pytest.mark.parametrize("fmt", ["bf16", "f16"])
def test_hgemm_thread_count_independent(rng, fmt):
    # each output is summed by one thread in a fixed order whatever the split: bitwise equal
    T, N, K = 200, 200, 300
    x = rng.standard_normal((T, K)).astype(np.float32)
    w, _ = weight(rng.standard_normal((N, K)).astype(np.float32), fmt)
    n0 = glmbench.get_num_threads()
    try:
        for k in kernels(fmt):
            out = []
            for n in (1, 2, 3):
                glmbench.set_num_threads(n)
                out.append(_core.hgemm(x, w, kernel=k))
            np.testing.assert_array_equal(out[0], out[1])
            np.testing.assert_array_equal(out[0], out[2])
    finally:
        glmbench.set_num_threads(n0)


@pytest.mark.parametrize("fmt", ["bf16", "f16"])
def test_hgemm_nan_and_inf_pass_through(rng, fmt):
    # as in float32 math: a NaN weight makes its output column NaN; an Inf weight gives +-Inf
    # (or NaN where +Inf and -Inf products meet); the other outputs stay finite
    T, N, K = 70, 33, 40
    x = rng.standard_normal((T, K)).astype(np.float32)
    w32 = rng.standard_normal((N, K)).astype(np.float32)
    w32[3, 7] = np.nan
    w32[20, 0] = np.inf
    w, w64 = weight(w32, fmt)
    for k in kernels(fmt):
        y = _core.hgemm(x, w, kernel=k)
        with np.errstate(invalid="ignore"):
            r = x_used(x, fmt, k) @ w64.T
        np.testing.assert_array_equal(np.isnan(y), np.isnan(r))
        np.testing.assert_array_equal(np.isinf(y), np.isinf(r))
        assert np.isnan(y[:, 3]).all() and np.isfinite(np.delete(y, [3, 20], axis=1)).all()
    # x with NaN: hgemm passes it through; linear refuses it with a named error, as for every format
    xn = x.copy()
    xn[5, 2] = np.nan
    for k in kernels(fmt):
        y, yn = _core.hgemm(x, w, kernel=k), _core.hgemm(xn, w, kernel=k)
        assert np.isnan(yn[5]).all()
        np.testing.assert_array_equal(np.delete(yn, 5, axis=0), np.delete(y, 5, axis=0))
    with pytest.raises(ValueError, match="NaN"):
        glmbench.linear(np.repeat(xn, 2, axis=0), w)


@pytest.mark.parametrize("fmt", ["bf16", "f16"])
def test_hgemm_views_are_copied_not_misread(rng, fmt):
    T, N, K = 80, 30, 64
    xb = rng.standard_normal((T, 2 * K)).astype(np.float32)
    wb, _ = weight(rng.standard_normal((2 * N, K)).astype(np.float32), fmt)
    x, w = xb[:, ::2], wb[::2]          # strided views
    for k in kernels(fmt):
        np.testing.assert_array_equal(_core.hgemm(x, w, kernel=k),
                                      _core.hgemm(np.ascontiguousarray(x), np.ascontiguousarray(w), kernel=k))
    wt, _ = weight(rng.standard_normal((K, N)).astype(np.float32), fmt)
    np.testing.assert_array_equal(glmbench.linear(x, wt.T), glmbench.linear(np.ascontiguousarray(x), wt.T.copy()))


def test_hgemm_bad_input(rng):
    x = rng.standard_normal((4, 8)).astype(np.float32)
    wb = ref.to_bf16(rng.standard_normal((3, 8)).astype(np.float32))
    with pytest.raises(ValueError, match="unknown hgemm kernel 'fast'"):
        _core.hgemm(x, wb, kernel="fast")
    with pytest.raises(ValueError, match="sgemm"):
        _core.hgemm(x, wb, kernel="sgemm")
    with pytest.raises(TypeError, match="weight"):
        _core.hgemm(x, rng.standard_normal((3, 8)).astype(np.float32))
    with pytest.raises(ValueError, match="weight"):
        _core.hgemm(x, wb[:, :7])
    with pytest.raises(ValueError, match="bf16dot does not run f16"):
        _core.hgemm(x, wb.view(np.float16), kernel="bf16dot")
    with pytest.raises(ValueError, match="weight format"):
        _core._hgemm_kernels("q4_0")
    with pytest.raises(ValueError, match="unknown hgemm kernel"):
        _core._linear_set_hgemm("nope")
    assert _core.hgemm(x[:0], wb).shape == (0, 3)


def test_hgemm_pick_follows_what_the_cpu_reports():
    flags = cpu_flags()
    if flags is None:
        pytest.skip("no /proc/cpuinfo")
    avx512 = {"avx512f", "avx512bw", "avx512vl", "avx512dq", "f16c", "fma"} <= flags
    avx2 = {"avx2", "f16c", "fma"} <= flags  # hgemm_avx2, the F32FMA version without AVX-512
    bf16 = _core._hgemm_kernels("bf16")
    f16 = _core._hgemm_kernels("f16")
    assert bf16["bf16dot"] == (avx512 and "avx512_bf16" in flags)
    assert bf16["f32fma"] == f16["f32fma"] == (avx512 or avx2)
    assert not f16["bf16dot"] and bf16["ref"] and f16["ref"]
    assert bf16["auto"] == ("bf16dot" if bf16["bf16dot"] else "f32fma" if avx512 or avx2 else "sgemm")
    assert f16["auto"] == ("f32fma" if avx512 or avx2 else "sgemm")
    if "avx512_bf16" in flags and avx512:
        assert _core.bench_bf16dot(1000, 1) > 0
    else:
        with pytest.raises(ValueError, match="avx512_bf16"):
            _core.bench_bf16dot(1000, 1)


@pytest.mark.parametrize("fmt", ["bf16", "f16"])
def test_linear_prefill_runs_hgemm(rng, fmt):
    # linear above the GEMV limit (64 tokens) is hgemm with the kernel auto picks; every forced
    # kernel (and the old panel + sgemm) stays within its own bound; the portable switch picks ref
    T, N, K = 65, 50, 96
    x = rng.standard_normal((T, K)).astype(np.float32)
    w, w64 = weight(rng.standard_normal((N, K)).astype(np.float32), fmt)
    auto = _core._hgemm_kernels(fmt)["auto"]
    assert _core._linear_hgemm(fmt) == auto
    if auto != "sgemm":
        np.testing.assert_array_equal(glmbench.linear(x, w), _core.hgemm(x, w, kernel=auto))
    try:
        for k in kernels(fmt) + ["sgemm"]:
            _core._linear_set_hgemm(k)
            assert _core._linear_hgemm(fmt) == k
            assert_close(glmbench.linear(x, w), x_used(x, fmt, k if k != "sgemm" else "f32fma"), w64)
        if fmt == "f16":  # a kernel that does not run a format falls back to auto for it
            _core._linear_set_hgemm("bf16dot")
            assert _core._linear_hgemm("f16") == auto
        _core._linear_set_hgemm("auto")
        _core._linear_set_portable(True)
        assert _core._linear_hgemm(fmt) == "ref"
        assert_close(glmbench.linear(x, w), x_used(x, fmt, "ref"), w64)
    finally:
        _core._linear_set_hgemm("auto")
        _core._linear_set_portable(False)
    assert _core._linear_hgemm(fmt) == auto


@pytest.mark.parametrize("fmt", ["bf16", "f16"])
def test_kernel_bench_prefill_rows_agree_with_numpy(fmt):
    # the kernel bench's 16-bit prefill rows (glmbench/bench): built, run, and checked against their
    # float32 NumPy twins (bf16 within 1e-2 where the activations are rounded to bf16)
    from glmbench import bench as B
    (case,) = B._linear_cases("tiny", {"p": (70, 96)}, 65, np.random.default_rng(0), fmt=fmt)
    assert case.tags == (f"gemm_{fmt}",) and case.bound == "compute"
    assert B._agree(case.run(), case.numpy_run(), case.rtol) == "ok"
    assert case.rtol == (1e-2 if fmt == "bf16" and _core._linear_hgemm("bf16") in ("bf16dot", "ref") else 1e-3)

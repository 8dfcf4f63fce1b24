"""Thread-count independence, input immutability and leak checks for rms_norm, rope, linear,
swiglu, moe_route and moe_experts (the C core ops of issue 2 part A)."""
import os

import numpy as np
import pytest

import glmbench
from glmbench.core import reference as ref


def _cases(rng):
    """(name, fn, args) with inputs big enough that every op takes its parallel path."""
    T, D, F, E, H = 12, 256, 320, 8, 4
    x = rng.standard_normal((T, D)).astype(np.float32)
    w32 = (rng.standard_normal((F, D)) / 16).astype(np.float32)
    wbf = ref.to_bf16(w32)
    wdn = ref.to_bf16((rng.standard_normal((D, F)) / 16).astype(np.float32))
    eg = ref.to_bf16((rng.standard_normal((E, F, D)) / 16).astype(np.float32))
    ed = ref.to_bf16((rng.standard_normal((E, D, F)) / 16).astype(np.float32))
    wr = rng.standard_normal((E, D)).astype(np.float32)
    bias = (rng.standard_normal(E) * 0.1).astype(np.float32)
    idx, tw = glmbench.moe_route(x, wr, top_k=2)
    xr = rng.standard_normal((256, D)).astype(np.float32)
    q = rng.standard_normal((T, H, 128)).astype(np.float32)
    pos = np.arange(T, dtype=np.int64) * 1000
    return [
        ("rms_norm", glmbench.rms_norm, (x, np.ones(D, np.float32), 1e-5), {}),
        ("rope", glmbench.rope, (q, pos), dict(theta=1e6, rot_dim=64, rot_offset=64)),
        ("linear_f32_gemm", glmbench.linear, (x, w32), {}),
        ("linear_bf16_gemv", glmbench.linear, (x[:1], wbf), {}),
        ("linear_bf16_small_t", glmbench.linear, (x[:5], wbf), {}),
        ("linear_bf16_gemm", glmbench.linear, (x, wbf), {}),
        ("linear_f16_gemv", glmbench.linear, (x[:1], w32.astype(np.float16)), {}),
        ("swiglu_bf16_decode", glmbench.swiglu, (x[:1], wbf, wbf, wdn), {}),
        ("swiglu_bf16_prefill", glmbench.swiglu, (x, wbf, wbf, wdn), {}),
        # 256 tokens so that even the small (idx, weight) outputs would show if leaked
        ("moe_route", glmbench.moe_route, (xr, wr), dict(top_k=3, bias=bias, n_group=4, topk_group=2)),
        ("moe_experts", glmbench.moe_experts, (x, idx, tw, eg, eg, ed), {}),
    ]


def _flat(out):
    return [np.asarray(o) for o in (out if isinstance(out, tuple) else (out,))]


@pytest.fixture
def restore_threads():
    n = glmbench.get_num_threads()
    yield
    glmbench.set_num_threads(n)


def test_results_do_not_depend_on_thread_count(rng, restore_threads):
    cases = _cases(rng)
    results = {}
    for n in (1, 2):
        glmbench.set_num_threads(n)
        assert glmbench.get_num_threads() == n
        results[n] = {name: _flat(fn(*args, **kw)) for name, fn, args, kw in cases}
    for name, *_ in cases:
        for a, b in zip(results[1][name], results[2][name]):
            if a.dtype.kind in "iu":
                np.testing.assert_array_equal(a, b, err_msg=name)
            else:
                # hand-written kernels split rows, never a sum, so they agree bit for bit; OpenBLAS
                # may block K differently per thread count: allow a few float32 roundings
                np.testing.assert_allclose(a, b, rtol=1e-5, atol=1e-6, err_msg=name)


def test_inputs_are_never_modified(rng):
    for name, fn, args, kw in _cases(rng):
        before = [a.copy() for a in args if isinstance(a, np.ndarray)]
        fn(*args, **kw)
        after = [a for a in args if isinstance(a, np.ndarray)]
        for b, a in zip(before, after):
            np.testing.assert_array_equal(a, b, err_msg=name)


def _rss_bytes():
    with open("/proc/self/statm") as f:
        return int(f.read().split()[1]) * os.sysconf("SC_PAGE_SIZE")


@pytest.mark.skipif(not os.path.exists("/proc/self/statm"), reason="needs /proc (Linux)")
@pytest.mark.slow
def test_thousand_calls_leak_nothing(rng):
    # Each call allocates its outputs (>= 6 KiB per call for every case here) plus input copies and
    # scratch; leaking them for 1,000 calls adds >= 6 MB (measured: 0.4-25 MB when the outputs are
    # kept alive on purpose), while leak-free runs grew by 0-20 KiB: 256 KiB separates the two.
    for name, fn, args, kw in _cases(rng):
        for _ in range(50):  # warm up allocator pools and OpenBLAS/OpenMP thread buffers
            fn(*args, **kw)
        before = _rss_bytes()
        for _ in range(1000):
            fn(*args, **kw)
        grown = _rss_bytes() - before
        assert grown < 256 << 10, f"{name}: RSS grew by {grown} bytes over 1,000 calls"


def test_error_paths_leak_nothing():
    # failing calls release what they acquired too
    x = np.ones((4, 64), np.float32)
    x[3, 3] = np.nan
    w = np.ones((32, 64), np.uint16)
    idx = np.full((4, 2), 9, np.int32)
    e = np.ones((3, 8, 64), np.float32)
    ed = np.ones((3, 64, 8), np.float32)
    xs = np.ones((4, 64), np.float32)
    calls = [
        lambda: glmbench.linear(x, w),
        lambda: glmbench.moe_experts(xs, idx, np.ones((4, 2), np.float32), e, e, ed),
        lambda: glmbench.moe_route(xs, np.ones((3, 64), np.float32), top_k=2, n_group=2),
    ]
    for call in calls:
        for _ in range(50):
            with pytest.raises(ValueError):
                call()
        before = _rss_bytes()
        for _ in range(1000):
            with pytest.raises(ValueError):
                call()
        assert _rss_bytes() - before < 256 << 10


SPIN_PROBE = r"""
import os, sys, time
import glmbench.measure.cpu  # imports NumPy (and its own OpenBLAS) after glmbench
import numpy as np
a = np.ones((384, 384))
for _ in range(3):
    a @ a                      # NumPy's OpenBLAS, several worker threads where there are cores
t0 = time.process_time()
time.sleep(0.3)                # a spinning worker would burn CPU here (~0.1 s each by default)
print(os.environ.get("OPENBLAS_THREAD_TIMEOUT"), time.process_time() - t0)
"""


def test_numpy_openblas_workers_do_not_spin(tmp_path):
    """`import glmbench` sets OPENBLAS_THREAD_TIMEOUT before any of its modules imports NumPy, so
    NumPy's own OpenBLAS (not only the core's) puts its workers to sleep right after a call instead of
    spinning ~0.1 s on the cores the C kernels' OpenMP threads need; a user's own setting wins."""
    import subprocess
    import sys
    env = {k: v for k, v in os.environ.items() if k != "OPENBLAS_THREAD_TIMEOUT"}
    # from another folder, so the child imports the package the tests run (installed, or the editable
    # source), not a source tree in the working directory that has no compiled core
    run = dict(capture_output=True, text=True, check=True, cwd=tmp_path)
    out = subprocess.run([sys.executable, "-c", SPIN_PROBE], env=env, **run)
    val, cpu = out.stdout.split()
    assert val == "4"
    assert float(cpu) < 0.03, f"{cpu} s of CPU while the process slept: NumPy's OpenBLAS workers spin"
    mine = subprocess.run([sys.executable, "-c", SPIN_PROBE], env=dict(env, OPENBLAS_THREAD_TIMEOUT="6"), **run)
    assert mine.stdout.split()[0] == "6"

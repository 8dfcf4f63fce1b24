"""The kernel benchmark's sliding-window prefill rows (glmbench/bench/attention.py) at small
shapes: the timed call and its NumPy twin agree, the declared work is the keys the mask lets
through, and the timed cache really is a ring shorter than the context."""
import numpy as np
import pytest

from glmbench.bench import attention as BA
from glmbench.bench.case import Case

SMALL = dict(Hq=4, Hkv=2, Dh=32, window=16)


@pytest.mark.parametrize("windowed", [True, False])
@pytest.mark.parametrize("d,T", [(0, 8), (5, 8), (40, 8), (100, 24)])
def test_swa_prefill_case_twin_agrees_and_declares_the_window(rng, windowed, d, T):
    c = BA._swa_prefill_case(Case, d, T, rng, windowed, shape=SMALL)
    got, want = c.run(), c.numpy_run()
    assert got.shape == want.shape == (T, 4, 32)
    np.testing.assert_allclose(got, want, rtol=0, atol=c.rtol * np.abs(want).max())
    # declared keys: what each query p in d .. d + T - 1 sees, counted by brute force
    W = SMALL["window"]
    keys = sum(sum(1 for k in range(p + 1) if not windowed or p - k < W) for p in range(d, d + T))
    assert c.flops == 2.0 * 4 * 2 * 32 * keys
    assert ("swa_prefill_0k" if windowed else "gemma_global_prefill_0k") in c.tags
    assert c.bound == "compute" and "prefill" in c.name


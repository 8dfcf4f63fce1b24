"""The bindings' NaN/inf check (gb_check_finite, csrc/module.c) scans blocks of 4096 values without
a branch per element: a bad value anywhere, at a block's first or last element or in a short tail,
is still found, at its own flat index, and named as NaN or inf."""
import numpy as np
import pytest

from glmbench.core import ops


@pytest.mark.parametrize("n_rows", [1, 3, 9])                 # 64, 192, 576 values ... 9 x 1000
@pytest.mark.parametrize("bad", [np.nan, np.inf, -np.inf])
def test_every_position_found(rng, n_rows, bad):
    D = 1000 if n_rows == 9 else 64
    x = rng.standard_normal((n_rows, D)).astype(np.float32)
    w = np.ones(D, np.float32)
    n = x.size
    positions = sorted({0, n - 1, min(4095, n - 1), min(4096, n - 1), n // 2})
    for pos in positions:
        y = x.copy()
        y.flat[pos] = bad
        what = "NaN" if np.isnan(bad) else "inf"
        with pytest.raises(ValueError, match=rf"`x` contains {what} at flat index {pos}$"):
            ops.rms_norm(y, w, 1e-6)
    # two bad values: the first is named; the largest finite float32 values pass
    y = x.copy()
    y.flat[n - 1], y.flat[n // 3] = np.nan, np.inf
    with pytest.raises(ValueError, match=rf"inf at flat index {n // 3}$"):
        ops.rms_norm(y, w, 1e-6)
    y = x.copy()
    y.flat[0], y.flat[n - 1] = np.finfo(np.float32).max, -np.finfo(np.float32).max
    ops.rms_norm(y, w, 1e-6)

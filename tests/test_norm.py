import numpy as np
import pytest

import glmbench
from glmbench.core import reference as ref

# float32 output of a float64-accumulated row: error is one rounding of each product, ~1e-7
# relative; 2e-6 leaves room for the float32 multiply by the weight.
RTOL = 2e-6


@pytest.mark.parametrize("rows,dim", [(1, 1), (3, 7), (5, 2048), (2, 5120), (17, 513)])
def test_rms_norm_matches_reference(rng, rows, dim):
    x = rng.standard_normal((rows, dim)).astype(np.float32)
    w = rng.standard_normal(dim).astype(np.float32)
    x0, w0 = x.copy(), w.copy()
    y = glmbench.rms_norm(x, w, 1e-5)
    np.testing.assert_allclose(y, ref.rms_norm(x, w, 1e-5), rtol=RTOL, atol=1e-6)
    np.testing.assert_array_equal(x, x0)
    np.testing.assert_array_equal(w, w0)


def test_rms_norm_strided_input(rng):
    big = rng.standard_normal((8, 64)).astype(np.float32)
    x = big[::2, ::2]
    w = rng.standard_normal(32).astype(np.float32)
    np.testing.assert_allclose(glmbench.rms_norm(x, w), ref.rms_norm(x, w), rtol=RTOL, atol=1e-6)


def test_rms_norm_bad_input(rng):
    w = np.ones(4, np.float32)
    with pytest.raises(TypeError, match=r"`x` must be float32, got float64"):
        glmbench.rms_norm(np.ones((2, 4)), w)
    with pytest.raises(ValueError, match=r"`weight` has shape \(5,\)"):
        glmbench.rms_norm(np.ones((2, 4), np.float32), np.ones(5, np.float32))
    x = np.ones((2, 4), np.float32)
    x[1, 2] = np.nan
    with pytest.raises(ValueError, match=r"`x` contains NaN at flat index 6"):
        glmbench.rms_norm(x, w)

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


@pytest.mark.parametrize("rows,dim", [(1, 1), (3, 7), (5, 2048), (2, 8192), (17, 513)])
def test_layer_norm_matches_reference(rng, rows, dim):
    # Cohere's LayerNorm (no bias): a mean far from zero checks the two-pass variance
    x = (rng.standard_normal((rows, dim)) * 3 + 50).astype(np.float32)
    w = rng.standard_normal(dim).astype(np.float32)
    x0, w0 = x.copy(), w.copy()
    y = glmbench.layer_norm(x, w, 1e-5)
    np.testing.assert_allclose(y, ref.layer_norm(x, w, 1e-5), rtol=RTOL, atol=2e-6)
    np.testing.assert_array_equal(x, x0)
    np.testing.assert_array_equal(w, w0)
    if dim > 1:   # the output has zero mean and unit variance before the weight
        z = glmbench.layer_norm(x, np.ones(dim, np.float32), 0.0)
        np.testing.assert_allclose(z.mean(axis=-1), 0, atol=1e-5)
        np.testing.assert_allclose(z.astype(np.float64).var(axis=-1), 1, rtol=1e-5)


def test_layer_norm_per_head_weights_and_views(rng):
    # Command-R+'s q / k norms: a weight row per head over x [T, H, Dh]
    x = rng.standard_normal((5, 3, 16)).astype(np.float32)
    w = rng.standard_normal((3, 16)).astype(np.float32)
    y = glmbench.layer_norm(x, w, 1e-5)
    np.testing.assert_allclose(y, ref.layer_norm(x, w, 1e-5), rtol=RTOL, atol=2e-6)
    for h in range(3):
        np.testing.assert_allclose(y[:, h], ref.layer_norm(x[:, h], w[h], 1e-5), rtol=RTOL, atol=2e-6)
    big = rng.standard_normal((8, 64)).astype(np.float32)
    v = big[::2, ::2]
    wv = rng.standard_normal(32).astype(np.float32)
    np.testing.assert_allclose(glmbench.layer_norm(v, wv), ref.layer_norm(v, wv), rtol=RTOL, atol=2e-6)


def test_layer_norm_bad_input(rng):
    w = np.ones(4, np.float32)
    with pytest.raises(TypeError, match=r"`x` must be float32, got float64"):
        glmbench.layer_norm(np.ones((2, 4)), w)
    with pytest.raises(ValueError, match=r"`weight` has shape \(1, 5\)"):
        glmbench.layer_norm(np.ones((2, 4), np.float32), np.ones(5, np.float32))
    with pytest.raises(ValueError, match=r"per-head `weight` of shape \(3, 4\) needs x \[\.\.\., 3, 4\]"):
        glmbench.layer_norm(np.ones((2, 2, 4), np.float32), np.ones((3, 4), np.float32))
    with pytest.raises(ValueError, match=r"`weight` must be \[D\] or \[heads, D\]"):
        glmbench.layer_norm(np.ones((2, 4), np.float32), np.ones((1, 1, 4), np.float32))
    x = np.ones((2, 4), np.float32)
    x[1, 2] = np.nan
    with pytest.raises(ValueError, match=r"`x` contains NaN at flat index 6"):
        glmbench.layer_norm(x, w)
    with pytest.raises(ValueError, match=r"`eps` must be >= 0"):
        glmbench.layer_norm(np.ones((2, 4), np.float32), w, -1.0)


@pytest.mark.parametrize("shape", [(2, 0), (3, 2, 0), (0,)])
def test_an_empty_last_axis_is_named(shape):
    """x with a last axis of 0 reached NumPy's reshape(-1, 0) first: "cannot reshape array of size 0
    into shape (0)", naming nothing (layer_norm at any rank, rms_norm past 2-D)."""
    for f in (glmbench.rms_norm, glmbench.layer_norm):
        with pytest.raises(ValueError, match=r"`x` must have at least 1 dimension and a last axis of at least 1, "
                                             rf"got shape \({shape[0]},"):
            f(np.zeros(shape, np.float32), np.zeros(0, np.float32))

import numpy as np
import pytest

import glmbench
from glmbench.core import reference as ref

EPS32 = np.finfo(np.float32).eps


def _tol(x):
    # One float32 rotation: cos/sin rounded to float32 (1/2 ulp each), two products and a sum,
    # each rounded once; 4 ulps of the largest |x| bounds the absolute error of every output.
    return 4 * EPS32 * max(1.0, float(np.abs(x).max()))


@pytest.mark.parametrize("layout", ["interleaved", "half"])
@pytest.mark.parametrize("T,H,Dh,rot_dim,off,theta", [
    (1, 1, 2, 2, 0, 10000.0),          # smallest
    (5, 3, 40, 16, 8, 1e6),            # partial slice in the middle
    (7, 20, 64, 64, 0, 1e6),           # GLM-4.7-Flash q_rope (20 heads x 64 rope dims)
    (6, 20, 256, 64, 192, 1e6),        # GLM-4.7-Flash full q head: nope 192 then rope 64
    (4, 64, 128, 128, 0, 1e6),         # Qwen3-32B q (64 heads x 128)
    (3, 1, 576, 64, 512, 1e6),         # MLA cache row: latent 512 then rope key 64
    (9, 3, 11, 6, 5, 500.0),           # odd head dim, slice at the end
])
def test_rope_matches_reference(rng, layout, T, H, Dh, rot_dim, off, theta):
    x = rng.standard_normal((T, H, Dh)).astype(np.float32)
    pos = rng.integers(0, 202752, T).astype(np.int64)
    pos[0] = 0
    x0, p0 = x.copy(), pos.copy()
    y = glmbench.rope(x, pos, theta=theta, rot_dim=rot_dim, rot_offset=off, layout=layout)
    r = ref.rope(x, pos, theta=theta, rot_dim=rot_dim, rot_offset=off, layout=layout)
    assert y.dtype == np.float32 and y.shape == x.shape
    np.testing.assert_allclose(y, r, rtol=0, atol=_tol(x))
    # the part outside the slice is copied bit for bit, and position 0 is the identity
    np.testing.assert_array_equal(y[..., :off], x[..., :off])
    np.testing.assert_array_equal(y[..., off + rot_dim:], x[..., off + rot_dim:])
    np.testing.assert_array_equal(y[0], x[0])
    np.testing.assert_array_equal(x, x0)
    np.testing.assert_array_equal(pos, p0)


def test_rope_known_values():
    # position 1, theta 100, rot_dim 4: pair 0 turns by 1 rad, pair 1 by 100**(-1/2) = 0.1 rad
    x = np.array([[[1.0, 0.0, 1.0, 0.0]]], np.float32)
    y = glmbench.rope(x, np.array([1]), theta=100.0, rot_dim=4, layout="interleaved")
    np.testing.assert_allclose(y[0, 0], [np.cos(1), np.sin(1), np.cos(0.1), np.sin(0.1)], atol=1e-7)
    # half layout pairs (x0, x2) and (x1, x3)
    x = np.array([[[1.0, 1.0, 0.0, 0.0]]], np.float32)
    y = glmbench.rope(x, np.array([1]), theta=100.0, rot_dim=4, layout="half")
    np.testing.assert_allclose(y[0, 0], [np.cos(1), np.cos(0.1), np.sin(1), np.sin(0.1)], atol=1e-7)


def test_rope_interleaved_equals_hf_deinterleaved_rotate_half(rng):
    """HF glm4_moe_lite (rope_interleave=True) = our interleaved result, evens then odds; and that
    is rotate_half applied to the de-interleaved input (see glmbench.core.ops.rope)."""
    T, H, r = 5, 4, 64
    x = rng.standard_normal((T, H, r)).astype(np.float32)
    pos = np.arange(100, 100 + T)
    ours = glmbench.rope(x, pos, theta=1e6, rot_dim=r, layout="interleaved")
    hf = np.concatenate([ours[..., 0::2], ours[..., 1::2]], axis=-1)
    # transformers 5.24 glm4_moe_lite apply_rotary_pos_emb_interleave, transliterated to NumPy:
    # q1, q2 = q[..., 0::2], q[..., 1::2]; cat([q1*cos - q2*sin, q2*cos + q1*sin])
    ang = pos[:, None].astype(np.float64) * (1e6 ** (-np.arange(0, r, 2) / r))[None]
    c, s = np.cos(ang)[:, None], np.sin(ang)[:, None]
    q1, q2 = x[..., 0::2].astype(np.float64), x[..., 1::2].astype(np.float64)
    np.testing.assert_allclose(hf, np.concatenate([q1 * c - q2 * s, q2 * c + q1 * s], -1), rtol=0, atol=_tol(x))
    deint = np.concatenate([x[..., 0::2], x[..., 1::2]], axis=-1)
    half = glmbench.rope(np.ascontiguousarray(deint), pos, theta=1e6, rot_dim=r, layout="half")
    np.testing.assert_allclose(hf, half, rtol=0, atol=_tol(x))
    # attention scores are unchanged by the permutation
    k = glmbench.rope(x[::-1].copy(), pos, theta=1e6, rot_dim=r, layout="interleaved")
    khf = np.concatenate([k[..., 0::2], k[..., 1::2]], axis=-1)
    np.testing.assert_allclose(np.einsum("thd,shd->hts", ours, k), np.einsum("thd,shd->hts", hf, khf), rtol=1e-5,
                               atol=1e-5)


def test_rope_relative_position_property(rng):
    # q(m).k(n) depends only on m - n: the defining property of rope
    q = rng.standard_normal((1, 1, 64)).astype(np.float32)
    k = rng.standard_normal((1, 1, 64)).astype(np.float32)
    for layout in ("interleaved", "half"):
        def score(m, n):
            a = glmbench.rope(q, np.array([m]), theta=1e6, rot_dim=64, layout=layout)
            b = glmbench.rope(k, np.array([n]), theta=1e6, rot_dim=64, layout=layout)
            return float((a * b).sum())
        assert abs(score(10, 3) - score(1007, 1000)) < 1e-4


def test_rope_strided_input(rng):
    big = rng.standard_normal((8, 6, 80)).astype(np.float32)
    x = big[::2, ::2, 4:68]
    pos = np.arange(4, dtype=np.int64) * 3
    y = glmbench.rope(x, pos, theta=1e6, rot_dim=32, rot_offset=16, layout="interleaved")
    np.testing.assert_allclose(y, ref.rope(x, pos, theta=1e6, rot_dim=32, rot_offset=16), rtol=0, atol=_tol(x))
    pos_strided = np.arange(8, dtype=np.int64)[::2]
    y2 = glmbench.rope(x, pos_strided, theta=1e6, rot_dim=32, rot_offset=16)
    np.testing.assert_allclose(y2, ref.rope(x, pos_strided, theta=1e6, rot_dim=32, rot_offset=16), atol=_tol(x))


def test_rope_bad_input():
    x = np.zeros((2, 3, 8), np.float32)
    pos = np.arange(2, dtype=np.int64)
    with pytest.raises(TypeError, match=r"`x` must be float32, got float64"):
        glmbench.rope(x.astype(np.float64), pos, theta=1e4, rot_dim=8)
    with pytest.raises(TypeError, match=r"`positions` must be int64, got int32"):
        glmbench.rope(x, pos.astype(np.int32), theta=1e4, rot_dim=8)
    with pytest.raises(ValueError, match=r"`x` must be 3-D, got shape \(2, 8\)"):
        glmbench.rope(x[:, 0], pos, theta=1e4, rot_dim=8)
    with pytest.raises(ValueError, match=r"`positions` has shape \(3,\)"):
        glmbench.rope(x, np.arange(3), theta=1e4, rot_dim=8)
    with pytest.raises(TypeError, match=r"`rot_dim` must be an int, got 8.0"):
        glmbench.rope(x, pos, theta=1e4, rot_dim=8.0)
    with pytest.raises(ValueError, match=r"`rot_dim` must be a positive even number, got 7"):
        glmbench.rope(x, pos, theta=1e4, rot_dim=7)
    with pytest.raises(ValueError, match=r"`rot_offset`=4 \+ `rot_dim`=8 must lie within the head dim 8"):
        glmbench.rope(x, pos, theta=1e4, rot_dim=8, rot_offset=4)
    with pytest.raises(ValueError, match=r"`theta` must be > 0, got -1"):
        glmbench.rope(x, pos, theta=-1.0, rot_dim=8)
    with pytest.raises(ValueError, match=r"`layout` must be 'interleaved' or 'half', got 'neox'"):
        glmbench.rope(x, pos, theta=1e4, rot_dim=8, layout="neox")
    bad = x.copy()
    bad[1, 2, 3] = np.nan
    with pytest.raises(ValueError, match=r"`x` contains NaN at flat index 43"):
        glmbench.rope(bad, pos, theta=1e4, rot_dim=8)


@pytest.mark.parametrize("layout", ["interleaved", "half"])
@pytest.mark.parametrize("af", [1.0, 0.75, 1.1386])
def test_rope_inv_freq_and_attention_factor_match_reference(rng, layout, af):
    T, H, Dh, r, off = 6, 3, 40, 16, 8
    x = rng.standard_normal((T, H, Dh)).astype(np.float32)
    pos = rng.integers(0, 163840, T).astype(np.int64)
    inv = 1e4 ** (-np.arange(r // 2) * 2.0 / r) / np.linspace(1, 40, r // 2)  # YaRN-like: divided by up to 40
    x0, inv0 = x.copy(), inv.copy()
    y = glmbench.rope(x, pos, theta=1e4, rot_dim=r, rot_offset=off, layout=layout, inv_freq=inv, attention_factor=af)
    want = ref.rope(x, pos, theta=1e4, rot_dim=r, rot_offset=off, layout=layout, inv_freq=inv, attention_factor=af)
    np.testing.assert_allclose(y, want, rtol=0, atol=_tol(x) * max(1.0, af))
    np.testing.assert_array_equal(y[..., :off], x[..., :off])
    np.testing.assert_array_equal(y[..., off + r:], x[..., off + r:])
    np.testing.assert_array_equal(x, x0)
    np.testing.assert_array_equal(inv, inv0)
    # theta is unused once inv_freq is given; the default inv_freq is theta**(-2i/rot_dim), bit for bit
    np.testing.assert_array_equal(
        y, glmbench.rope(x, pos, theta=5.0, rot_dim=r, rot_offset=off, layout=layout, inv_freq=inv,
                         attention_factor=af))
    plain = 1e4 ** (-2.0 * np.arange(r // 2) / r)
    np.testing.assert_array_equal(glmbench.rope(x, pos, theta=1e4, rot_dim=r, rot_offset=off, layout=layout),
                                  glmbench.rope(x, pos, theta=1e4, rot_dim=r, rot_offset=off, layout=layout,
                                                inv_freq=plain))
    # the attention factor scales the rotated slice (position 0: x itself, scaled)
    p0 = np.zeros(T, np.int64)
    z = glmbench.rope(x, p0, theta=1e4, rot_dim=r, rot_offset=off, layout=layout, inv_freq=inv, attention_factor=af)
    np.testing.assert_allclose(z[..., off:off + r], x[..., off:off + r] * np.float32(af), rtol=1e-7, atol=0)


def test_rope_inv_freq_strided_and_read_only(rng):
    x = rng.standard_normal((4, 2, 8)).astype(np.float32)
    pos = np.arange(4, dtype=np.int64) * 7
    big = np.array([1.0, -9, 0.5, -9, 0.25, -9, 0.125, -9])
    ro = big[::2].copy()
    ro.setflags(write=False)
    want = ref.rope(x, pos, theta=1e4, rot_dim=8, inv_freq=ro, attention_factor=2.0)
    for f in (big[::2], ro):
        y = glmbench.rope(x, pos, theta=1e4, rot_dim=8, inv_freq=f, attention_factor=2.0)
        np.testing.assert_allclose(y, want, rtol=0, atol=2 * _tol(x))


def test_rope_inv_freq_bad_input():
    x = np.zeros((2, 3, 8), np.float32)
    pos = np.arange(2, dtype=np.int64)
    good = np.array([1.0, 0.1, 0.01, 0.001])
    with pytest.raises(TypeError, match=r"`inv_freq` must be float64, got float32"):
        glmbench.rope(x, pos, theta=1e4, rot_dim=8, inv_freq=good.astype(np.float32))
    with pytest.raises(TypeError, match=r"`inv_freq` must be"):
        glmbench.rope(x, pos, theta=1e4, rot_dim=8, inv_freq=[1.0, 0.1, 0.01, 0.001])
    with pytest.raises(ValueError, match=r"`inv_freq` must be 1-D, got shape \(1, 4\)"):
        glmbench.rope(x, pos, theta=1e4, rot_dim=8, inv_freq=good[None])
    with pytest.raises(ValueError, match=r"`inv_freq` has shape \(4,\): axis 0 must be 3 to match rot_dim/2"):
        glmbench.rope(x, pos, theta=1e4, rot_dim=6, inv_freq=good)
    with pytest.raises(ValueError, match=r"`inv_freq` contains NaN at flat index 2"):
        glmbench.rope(x, pos, theta=1e4, rot_dim=8, inv_freq=np.array([1.0, 0.1, np.nan, 0.001]))
    with pytest.raises(ValueError, match=r"`inv_freq` contains inf at flat index 0"):
        glmbench.rope(x, pos, theta=1e4, rot_dim=8, inv_freq=np.array([np.inf, 0.1, 0.01, 0.001]))
    with pytest.raises(ValueError, match=r"`inv_freq` must be finite and > 0, got 0 at index 1"):
        glmbench.rope(x, pos, theta=1e4, rot_dim=8, inv_freq=np.array([1.0, 0.0, 0.01, 0.001]))
    with pytest.raises(ValueError, match=r"`inv_freq` must be finite and > 0, got -0.01 at index 2"):
        glmbench.rope(x, pos, theta=1e4, rot_dim=8, inv_freq=np.array([1.0, 0.1, -0.01, 0.001]))
    for bad in (0.0, -1.0, float("nan"), float("inf")):
        with pytest.raises(ValueError, match=r"`attention_factor` must be a finite number > 0, got"):
            glmbench.rope(x, pos, theta=1e4, rot_dim=8, attention_factor=bad)
    with pytest.raises(TypeError, match=r"`attention_factor` must be a number, got '1'"):
        glmbench.rope(x, pos, theta=1e4, rot_dim=8, attention_factor="1")


def test_config_rope_parameters():
    """ModelConfig.rope_inv_freq / rope_attention_factor for the built-ins (DeepSeek-V2-Lite: YaRN
    factor 40 over original 4096 positions, mscale == mscale_all_dim -> attention factor 1)."""
    from glmbench.models import configs
    d = configs.load("deepseek-v2-lite")
    assert d.rope_type == "yarn" and d.rope_attention_factor() == 1.0
    inv = d.rope_inv_freq()
    plain = 1e4 ** (-2.0 * np.arange(32) / 64)
    assert inv.dtype == np.float64 and inv.shape == (32,) and not inv.flags.writeable
    # correction range: dims [floor(10.2), ceil(23.0)] = [10, 23] -> pairs <= 10 keep their
    # frequency, pairs >= 23 are divided by 40, pairs 11..22 are blended
    np.testing.assert_array_equal(inv[:11], plain[:11])
    np.testing.assert_allclose(inv[23:], plain[23:] / 40, rtol=1e-15)
    ramp = (np.arange(11, 23) - 10) / 13
    np.testing.assert_allclose(inv[11:23], plain[11:23] * (1 - ramp) + plain[11:23] / 40 * ramp, rtol=1e-15)
    for name in ("glm-4.7-flash", "qwen3-32b"):
        c = configs.load(name)
        assert c.rope_type == "default" and c.rope_inv_freq() is None and c.rope_attention_factor() == 1.0

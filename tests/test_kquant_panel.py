"""The K-quant prefill panels (csrc/quant_k.c, issue 28, 2026-12-02): the tile of 2 groups x 4
tokens in passes of GB_K_PANEL_CHUNK super-blocks, steps of several groups over L2-sized token
blocks, q6_K / iq4_xs panels signed against unsigned activations, the activations quantized in the
panels' form with the finiteness check fused in. Every shape below is picked to hit an edge of that
blocking (odd N: a lone last group and a masked one; K whose super-block count is not a multiple of
the pass; T past one token block, not a multiple of the tile); each must give the portable
version's outputs bit for bit, on 1 and 2 threads, stored and repacked, with and without bias."""
import os
import sys

import numpy as np
import pytest

pytest.importorskip("gguf")
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import quant_cases  # noqa: E402
from test_quant_k import BB, FMTS, KV, gguf_deq, random_blocks, xq_deq  # noqa: E402

import glmbench  # noqa: E402
from glmbench.core import quant  # noqa: E402
from glmbench.core._core import klinear  # noqa: E402
from glmbench.core.quant import QTensor  # noqa: E402

VNNI = quant.kernels().get("kquant_vnni", False)
needs_vnni = pytest.mark.skipif(not VNNI, reason="the prefill panels are the VNNI version's")

# (T, N, K): T >= 16 takes the panels on the repacked weight, T >= 64 on the stored bytes too
SHAPES = [
    (150, 37, 5120),  # 20 super-blocks: 5 passes; 64-token blocks (3 of them); groups 2 + a lone masked one
    (67, 33, 1280),   # 5 super-blocks: passes of 4 + 1; T = 16 tiles of 4 + 3
    (19, 50, 768),    # repacked panels only (16 <= T < 64); 3 super-blocks: one short pass
    (200, 130, 512),  # 9 groups: several steps; T = 50 tiles of 4
]


def _run(x, w, fmt, N, K, version, bias, packed):
    if packed:
        return quant.linear(x, QTensor(w, fmt, (N, K)).repack(), bias, kernel=version)
    return klinear(x, w, quant.FORMATS[fmt][0], K, bias, KV[version])


@needs_vnni
@pytest.mark.parametrize("fmt", FMTS)
@pytest.mark.parametrize("T_,N,K", SHAPES)
def test_panels_bit_identical_to_portable(rng, fmt, T_, N, K):
    w = random_blocks(rng, fmt, N, K)
    w0 = w.copy()
    x = rng.standard_normal((T_, K)).astype(np.float32)
    x[3] = 0                                    # an all-zero token (zero q8_K blocks: d = 0)
    x[5, :256] *= 1e-30                         # a tiny block next to ordinary ones
    x0 = x.copy()
    bias = rng.standard_normal(N).astype(np.float32)
    ref = {b is None: _run(x, w, fmt, N, K, "kquant_ref", b, False) for b in (None, bias)}
    # the reference itself: exact within float32 rounding against float64 (tests/quant_cases.py)
    quant_cases.check_linear(fmt, w, x, gguf_deq, xq_deq, 256, 1e-4, "kquant_ref", bias)
    prev = glmbench.get_num_threads()
    try:
        for th in (1, 2):
            glmbench.set_num_threads(th)
            for b in (None, bias):
                for packed in (True, False):
                    y = _run(x, w, fmt, N, K, "kquant_vnni", b, packed)
                    np.testing.assert_array_equal(y.view(np.uint32), ref[b is None].view(np.uint32),
                                                  err_msg=f"{fmt} T={T_} N={N} K={K} threads={th} bias={b is not None} "
                                                          f"packed={packed}")
    finally:
        glmbench.set_num_threads(prev)
    np.testing.assert_array_equal(x, x0)        # inputs unchanged
    np.testing.assert_array_equal(w, w0)


@pytest.mark.parametrize("fmt", ["q4_K", "q6_K", "iq4_xs"])
def test_a_token_does_not_depend_on_its_batch(rng, fmt):
    """Token 70's output is the same alone (GEMV), in a 16-token batch (the repacked group tile or
    the panels) and in a 150-token one (panels, second token block): every path computes the same sums."""
    N, K = 40, 5120
    qt = QTensor(random_blocks(rng, fmt, N, K), fmt, (N, K)).repack()
    x = rng.standard_normal((150, K)).astype(np.float32)
    full = quant.linear(x, qt)
    np.testing.assert_array_equal(quant.linear(x[70:71], qt)[0], full[70])
    np.testing.assert_array_equal(quant.linear(x[64:80], qt)[6], full[70])


@pytest.mark.parametrize("fmt", ["q5_K", "q6_K", "iq4_xs"])
@pytest.mark.parametrize("T_", [3, 20, 130])
@pytest.mark.parametrize("bad", [np.nan, np.inf, -np.inf])
def test_non_finite_x_is_one_clear_error(rng, fmt, T_, bad):
    """The repacked path checks x while quantizing it (no separate scan): a NaN or inf anywhere gives
    the binding's error naming the first one, as the separate check did; nothing else changes."""
    N, K = 20, 768
    qt = QTensor(random_blocks(rng, fmt, N, K), fmt, (N, K)).repack()
    x = rng.standard_normal((T_, K)).astype(np.float32)
    r, c = T_ - 1, 700
    x[r, c] = bad
    x[r, c + 5] = np.nan                        # a later one: not the one named
    x0 = x.copy()
    what = "NaN" if np.isnan(bad) else "inf"
    with pytest.raises(ValueError, match=rf"`x` contains {what} at flat index {r * K + c}$"):
        quant.linear(x, qt)
    np.testing.assert_array_equal(x, x0)
    x[r, c] = x[r, c + 5] = 0
    y = quant.linear(x, qt)                     # and the same call on finite x runs
    assert np.all(np.isfinite(y))


def test_iq_formats_still_checked(rng):
    """iq4_nl / mxfp4 (csrc/quant_iq.c) keep the binding's separate check."""
    from test_quant_iq import random_blocks as iq_blocks
    for fmt in ("iq4_nl", "mxfp4"):
        qt = QTensor(iq_blocks(rng, fmt, 16, 256), fmt, (16, 256)).repack()
        x = rng.standard_normal((20, 256)).astype(np.float32)
        x[4, 9] = np.inf
        with pytest.raises(ValueError, match=rf"`x` contains inf at flat index {4 * 256 + 9}$"):
            quant.linear(x, qt)


def _extreme_blocks(fmt, N, K):
    """q2_K / q3_K rows at the formats' ends: every value at one end of its range, the scales at theirs
    (q3_K's value -4 with scale -32: the product +128 that the prefill panels store negated, -128, as a
    signed byte, csrc/quant_k.c panel_premul; the decode tile's 16-value sums at the bounds of its int16
    pairs, PANEL_PAIR_BIAS)."""
    bb = {"q2_K": 84, "q3_K": 110}[fmt]
    w = np.zeros((N, K // 256, bb), np.uint8)
    one = np.frombuffer(np.float16(1.0).tobytes(), np.uint8)
    for r in range(N):
        hi_vals, hi_scale = r % 2 == 1, (r // 2) % 2 == 1
        if fmt == "q3_K":                       # hmask[32] qs[64] scales[12] d
            w[r, :, :96] = 0xFF if hi_vals else 0      # values 3 or -4
            w[r, :, 96:108] = 0xFF if hi_scale else 0  # 6-bit scales 63 - 32 = 31 or 0 - 32 = -32
            w[r, :, 108:110] = one
        else:                                   # scales[16] qs[64] d dmin
            w[r, :, :16] = 0xFF if hi_scale else 0x11  # scale and min 15, or 1
            w[r, :, 16:80] = 0xFF if hi_vals else 0    # values 3 or 0
            w[r, :, 80:82] = one
            w[r, :, 82:84] = one
    return w.reshape(N, -1)


@needs_vnni
@pytest.mark.parametrize("fmt", ["q2_K", "q3_K"])
def test_pair_sums_at_their_bounds(fmt):
    """The q2_K / q3_K prefill panels hold each value times its scale in a byte (q3_K negated): with
    values and scales at their ends (q3_K's products -124..+128 before the negation) and activations at
    +-127 after q8_K, the portable version's outputs bit for bit, and the float64 reference's within
    float32 rounding."""
    N, K = 8, 512
    w = _extreme_blocks(fmt, N, K)
    # q8_K maps each block's first value of largest magnitude to -127: a constant row is -127
    # everywhere (q3_K's panels: x + 128 = 1), a row of +1 led by a -1 is +127 after its first value
    # (x + 128 = 255: the sums' bounds, -16 * 255 * 4 for q3_K)
    x = np.ones((80, K), np.float32)            # >= 64 tokens: the panels on the stored bytes too
    x[1::4, ::256] = -1.0
    x[2::4] = -1.0
    x[2::4, ::256] = 1.0
    x[3::4, 1::3] = -0.5                        # mixed
    ref = _run(x, w, fmt, N, K, "kquant_ref", None, False)
    quant_cases.check_linear(fmt, w, x, gguf_deq, xq_deq, 256, 1e-4, "kquant_ref", None)
    for packed in (True, False):
        y = _run(x, w, fmt, N, K, "kquant_vnni", None, packed)
        np.testing.assert_array_equal(y.view(np.uint32), ref.view(np.uint32), err_msg=f"{fmt} packed={packed}")


@needs_vnni
@pytest.mark.parametrize("fmt", ["q2_K", "q3_K"])
def test_decode_pair_sums_at_their_bounds(fmt):
    """The q2_K / q3_K decode tile (repacked weights, T < 16: kp_tile2) also sums two 16-value
    sub-blocks as the int16 halves of one lane, scales and mins applied in pairs (KP2_PAIR): at the
    largest sums the formats can make, each token alone and in tiles of 2, 3, 4 and 5 gives the
    portable version's bits."""
    N, K = 40, 768                              # 3 groups, the last masked
    w = _extreme_blocks(fmt, N, K)
    x = np.ones((15, K), np.float32)
    x[1::4, ::256] = -1.0                       # +127 after its first value
    x[2::4] = -1.0
    x[2::4, ::256] = 1.0
    x[3::4, 1::3] = -0.5
    bias = np.linspace(-1, 1, N).astype(np.float32)
    qt = QTensor(w, fmt, (N, K)).repack()
    for T_ in (1, 2, 3, 4, 5, 15):
        for b in (None, bias):
            ref = quant.linear(x[:T_], qt, b, kernel="kquant_ref")
            y = quant.linear(x[:T_], qt, b, kernel="kquant_vnni")
            np.testing.assert_array_equal(y.view(np.uint32), ref.view(np.uint32), err_msg=f"{fmt} T={T_}")


@needs_vnni
@pytest.mark.parametrize("fmt", ["q4_K", "q5_K", "iq4_xs"])
def test_decode_tile_extremes(fmt):
    """The VNNI decode tile (repacked weights, T < 16: kp_tile) at the formats' ends: q4_K's high
    nibbles multiplied in place (16 x the value, the sum shifted back), the mins (iq4_xs: the offset
    term) in pairs of 32-value sub-blocks against int16 pairs of 32-value activation sums (KP_MN_PAIR),
    iq4_xs's grid by vpermb. Every value and 6-bit scale at its largest (iq4_xs: rows of index 15 =
    +113 with scale +31 and rows of index 0 = -127 with scale -32) against activations at q8_K's +-127,
    each token alone and in tiles of 2..5: the portable version's bits."""
    rng = np.random.default_rng(5)
    N, K = 40, 1024
    w = random_blocks(rng, fmt, N, K)
    blk = w.reshape(N, K // 256, BB[fmt])
    if fmt == "iq4_xs":                       # d[2] scales_h[2] scales_l[4] qs[128]
        blk[:16, :, 2:] = 0xFF                 # scale 63 - 32, every index 15
        blk[16:32, :, 2:] = 0                  # scale 0 - 32, every index 0
    else:                                      # d dmin scales[12] (qh[32]) qs: all bits set
        blk[:24, :, 4:] = 0xFF
    x = np.ones((9, K), np.float32)
    x[1::3] = -1.0
    x[2::3, ::2] = -1.0
    x[4, :256] = 0.0                           # an all-zero block of activations
    x[5:] = rng.standard_normal((4, K))        # 32-value sums that differ from sub-block to sub-block
    x[6, ::32] = -4.0                          # ... and a -127 leading each of them
    qt = QTensor(w, fmt, (N, K)).repack()
    for t0, T_ in ((0, 1), (0, 2), (0, 3), (0, 4), (0, 5), (0, 9), (5, 1), (5, 4), (6, 1)):
        ref = quant.linear(x[t0:t0 + T_], qt, kernel="kquant_ref")
        y = quant.linear(x[t0:t0 + T_], qt, kernel="kquant_vnni")
        np.testing.assert_array_equal(y.view(np.uint32), ref.view(np.uint32), err_msg=f"{fmt} tokens {t0}..{t0 + T_ - 1}")
        assert np.all(np.isfinite(y))

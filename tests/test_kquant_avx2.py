"""The AVX2 version of the K-quant GEMV/GEMM (csrc/quant_k.c kp_tile_avx2, 'kquant_avx2': the
repacked K formats, 8 rows per ymm by vpmaddubsw + vpmaddwd) and the AVX2 q8_K activation
quantizer. The version reads the repacked weight (QTensor.repack), so every check here runs on a
repacked copy: bit-identical to the portable version ('kquant_ref') on the same bytes, exact within
float32 rounding against the float64 reference, for token counts 1..17 (the 1-token tile reads both
halves of a group at once, 2..4 token tiles one half at a time, and their remainders), row counts
that leave a half or a whole group partly empty, strided activations, zero and non-finite scales."""
import os
import sys

import numpy as np
import pytest

pytest.importorskip("gguf")
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import quant_cases  # noqa: E402
from test_quant_k import BB, SCALE_AT, gguf_deq, q8_K_core, q8_K_np, random_blocks, xq_deq  # noqa: E402

import glmbench  # noqa: E402
from glmbench.core import quant  # noqa: E402
from glmbench.core._core import kmoe  # noqa: E402
from glmbench.core.quant import QTensor  # noqa: E402

AVX2 = quant.kernels().get("kquant_avx2", False)
needs_avx2 = pytest.mark.skipif(not AVX2, reason="the AVX2 version is not compiled in on this build")
KF = ALL = ["q2_K", "q3_K", "q4_K", "q5_K", "q6_K", "iq4_xs"]  # each with an AVX2 kernel of its own


def _same(a, b, msg=""):
    np.testing.assert_array_equal(a.view(np.uint32), b.view(np.uint32), err_msg=msg)


def test_auto_picks_the_best_compiled_version():
    k = quant.kernels()
    assert k["kquant_ref"]
    if not k.get("kquant_vnni") and k.get("kquant_avx2"):
        # what "auto" runs is the AVX2 version: same bits as naming it
        rng = np.random.default_rng(0)
        qt = QTensor(random_blocks(rng, "q4_K", 20, 512), "q4_K", (20, 512)).repack()
        x = rng.standard_normal((3, 512)).astype(np.float32)
        _same(quant.linear(x, qt), quant.linear(x, qt, kernel="kquant_avx2"))


@needs_avx2
@pytest.mark.parametrize("fmt", ALL)
@pytest.mark.parametrize("N", [1, 7, 8, 9, 16, 33])
def test_bit_identical_to_portable_T_1_to_17(rng, fmt, N):
    K = 768
    w = random_blocks(rng, fmt, N, K)
    w0 = w.copy()
    qt = QTensor(w, fmt, (N, K)).repack()
    bias = rng.standard_normal(N).astype(np.float32)
    x = rng.standard_normal((17, K)).astype(np.float32)
    x[4] = 0                                   # an all-zero token: zero q8_K blocks
    x[6, 256:512] *= 1e-30                     # a tiny block next to ordinary ones
    x0 = x.copy()
    for T_ in range(1, 18):
        for b in (None, bias):
            ref = quant.linear(x[:T_], qt, b, kernel="kquant_ref")
            _same(quant.linear(x[:T_], qt, b, kernel="kquant_avx2"), ref, f"{fmt} N={N} T={T_} bias={b is not None}")
    np.testing.assert_array_equal(w, w0)
    np.testing.assert_array_equal(x, x0)


@needs_avx2
@pytest.mark.parametrize("fmt", KF)
@pytest.mark.parametrize("T_,N,K", [(1, 37, 2048), (5, 20, 512), (70, 50, 1280), (129, 24, 256), (203, 20, 2048)])
def test_against_float64(rng, fmt, T_, N, K):
    w = random_blocks(rng, fmt, N, K)
    x = rng.standard_normal((T_, K)).astype(np.float32)
    bias = rng.standard_normal(N).astype(np.float32)
    qt = QTensor(w, fmt, (N, K)).repack()
    y = quant.linear(x, qt, bias, kernel="kquant_avx2")
    # the float64 reference on the same weights (stored path, checked there), and the same bits
    y0 = quant_cases.check_linear(fmt, w, x, gguf_deq, xq_deq, 256, 1e-4, "kquant_ref", bias)
    _same(y, y0)


@needs_avx2
@pytest.mark.parametrize("fmt", KF)
def test_threads_and_views(rng, fmt):
    N, K = 41, 1024
    qt = QTensor(random_blocks(rng, fmt, N, K), fmt, (N, K)).repack()
    x = rng.standard_normal((10, 2 * K)).astype(np.float32)
    xv = x[::2, ::2]                           # strided activations
    ref = quant.linear(np.ascontiguousarray(xv), qt, kernel="kquant_ref")
    prev = glmbench.get_num_threads()
    try:
        for th in (1, 2):
            glmbench.set_num_threads(th)
            _same(quant.linear(xv, qt, kernel="kquant_avx2"), ref, f"threads={th}")
            _same(quant.linear(xv[3], qt, kernel="kquant_avx2"), ref[3], f"threads={th} T=1")
    finally:
        glmbench.set_num_threads(prev)


@needs_avx2
@pytest.mark.parametrize("fmt", KF)
@pytest.mark.parametrize("N", [16 * 9 + 5, 16 * 7, 16 * 2, 16 + 3])
def test_gemv_whole_groups(rng, fmt, N):
    # T=1 runs whole 16-row groups of q4_K/q5_K/q6_K/q2_K/q3_K through loops of their own
    # (kp_gemv_avx2_q4/_q5/_q6/...; q5_K/q6_K two groups G/2 apart, q4_K three G/3 apart, side by side
    # and interleaved by sub-block, kp_gemvn_avx2: 7 groups give q4_K steps of three and of two),
    # a last partial group through the tile: an even and an odd number of whole groups, with a partial
    # one after them or not, 1 and 2 threads, with and without a bias
    K = 512
    qt = QTensor(random_blocks(rng, fmt, N, K), fmt, (N, K)).repack()
    x = rng.standard_normal((1, K)).astype(np.float32)
    bias = rng.standard_normal(N).astype(np.float32)
    prev = glmbench.get_num_threads()
    try:
        for b in (None, bias):
            ref = quant.linear(x, qt, b, kernel="kquant_ref")
            for th in (1, 2):
                glmbench.set_num_threads(th)
                _same(quant.linear(x, qt, b, kernel="kquant_avx2"), ref, f"threads={th} bias={b is not None}")
    finally:
        glmbench.set_num_threads(prev)


@needs_avx2
def test_q4_K_gemv_extreme_sums(rng):
    """q4_K's GEMV loop (kp_gemv_avx2_q4) sums a sub-block's 4 nibble ymm in int16 before the scale:
    every nibble 15, every 6-bit scale and min 63 and activations at q8_K's +-127 (a constant and an
    alternating block) reach 8 x 2 x 15 x 127 = 30480 per lane without wrapping: the portable bits"""
    N, K = 16 * 3, 1024
    w = random_blocks(rng, "q4_K", N, K)
    blk = w.reshape(N, K // 256, BB["q4_K"])
    ext = rng.random((N, K // 256)) < 0.6
    blk[ext, 4:144] = 0xFF                             # scales|mins 63, every nibble 15
    qt = QTensor(w, "q4_K", (N, K)).repack()
    for x in (np.ones((1, K), np.float32), np.where(np.arange(K) % 2 == 0, -1.0, 1.0).astype(np.float32)[None],
              -np.ones((1, K), np.float32)):
        _same(quant.linear(x, qt, kernel="kquant_avx2"), quant.linear(x, qt, kernel="kquant_ref"))


@needs_avx2
@pytest.mark.parametrize("fmt", KF)
def test_zero_scales(rng, fmt):
    N, K = 12, 768
    w = random_blocks(rng, fmt, N, K)
    blk = w.reshape(N, 3, BB[fmt])
    for o in SCALE_AT[fmt]:
        blk[1, 1, o:o + 2] = 0                 # d = dmin = 0: a zero block
    if fmt == "q6_K":
        blk[5, 0, 192:208] = 0                 # every int8 sub-block scale 0
    elif fmt == "iq4_xs":
        blk[5, 0, 2:4] = 0xAA                  # every 6-bit scale 32 (stored + 32): 0
        blk[5, 0, 4:8] = 0
    else:
        blk[5, 0, 4:16] = 0                    # every 6-bit scale and min 0
    qt = QTensor(w, fmt, (N, K)).repack()
    x = rng.standard_normal((5, K)).astype(np.float32)
    x[0, :256] = 0
    for T_ in (1, 2, 5):
        _same(quant.linear(x[:T_], qt, kernel="kquant_avx2"), quant.linear(x[:T_], qt, kernel="kquant_ref"))


@needs_avx2
@pytest.mark.parametrize("fmt", ["q2_K", "q3_K"])
@pytest.mark.parametrize("T_", [8, 16, 29, 64, 75])
def test_2bit_8_token_tiles_extreme(rng, fmt, T_):
    """q2_K/q3_K GEMM in 8-token tiles (KP_AVX2_TQ2), then 4 and the rest, over token chunks: the
    portable version's bits with the largest values and scales (q2_K every field 3, scale and min 15;
    q3_K every value 7 = 3 with its hmask bit, scales 31 or -32 by row), activations at +-127 of q8_K
    (a constant, an alternating and a random block per token), a partial last group and a bias"""
    N, K = 37, 1024
    w = random_blocks(rng, fmt, N, K)
    blk = w.reshape(N, K // 256, BB[fmt])
    ext = rng.random((N, K // 256)) < 0.5             # half the blocks extreme
    if fmt == "q2_K":
        blk[ext, 0:80] = 0xFF                          # scales|mins 15|15, every 2-bit field 3
    else:
        blk[ext, 0:96] = 0xFF                          # hmask bits set, fields 3: value 7 (no -4)
        blk[ext & (np.arange(N)[:, None] % 2 == 0), 96:108] = 0xFF   # 6-bit scales 63: +31
        blk[ext & (np.arange(N)[:, None] % 2 == 1), 96:108] = 0      # 0: -32
    qt = QTensor(w, fmt, (N, K)).repack()
    bias = rng.standard_normal(N).astype(np.float32)
    x = rng.standard_normal((T_, K)).astype(np.float32)
    x[0::3, :256] = 1.0                                # q8_K 127 everywhere in the block
    x[1::3, 256:512] = np.where(np.arange(256) % 2 == 0, 1.0, -1.0)
    x[2::3, 512:768] = -2.5
    for b in (None, bias):
        ref = quant.linear(x, qt, b, kernel="kquant_ref")
        y = quant.linear(x, qt, b, kernel="kquant_avx2")
        _same(y, ref, f"{fmt} T={T_} bias={b is not None}")
        for t0 in (0, T_ - 1):                         # each token alone (the GEMV) gives the same bits
            _same(quant.linear(x[t0], qt, b, kernel="kquant_avx2"), ref[t0])


@needs_avx2
@pytest.mark.parametrize("fmt", KF)
@pytest.mark.parametrize("bad", [np.inf, -np.inf, np.nan])
def test_non_finite_scale_as_portable(rng, fmt, bad):
    """A NaN/Inf f16 scale is not checked: the rows that read it come out non-finite, at the same
    places and with the same bits as the portable version; every other row is exact."""
    N, K = 20, 512
    w = random_blocks(rng, fmt, N, K)
    o = SCALE_AT[fmt][-1]                      # dmin (q4_K/q5_K) or d (q6_K)
    w.reshape(N, 2, BB[fmt])[9, 1, o:o + 2] = np.array([bad], np.float16).view(np.uint8)
    qt = QTensor(w, fmt, (N, K)).repack()
    x = rng.standard_normal((6, K)).astype(np.float32)
    for T_ in (1, 2, 6):
        y = quant.linear(x[:T_], qt, kernel="kquant_avx2")
        _same(y, quant.linear(x[:T_], qt, kernel="kquant_ref"))
        assert not np.any(np.isfinite(y[:, 9]))
        assert np.all(np.isfinite(np.delete(y, 9, axis=1)))


@needs_avx2
@pytest.mark.parametrize("fmts", [("q4_K", "q4_K", "q6_K"), ("q5_K", "q5_K", "q5_K"), ("q6_K", "q4_K", "q6_K"),
                                  ("iq4_xs", "iq4_xs", "q6_K"), ("q2_K", "q3_K", "q3_K")])
def test_routed_experts(rng, fmts):
    """csrc/moe_k.c on repacked experts with the AVX2 version: the portable version's bits, decode
    (one C region over experts x groups) and batches."""
    E, F, D, k = 5, 768, 512, 2
    ws = []
    for f, a, b in ((fmts[0], F, D), (fmts[1], F, D), (fmts[2], D, F)):
        q = QTensor(random_blocks(rng, f, E * a, b).reshape(E, a, -1), f, (E, a, b))
        q.repack()
        ws.append(q)
    arr = [w.packed.reshape(E, -1) for w in ws]
    for T_ in (1, 3, 40):
        x = rng.standard_normal((T_, D)).astype(np.float32)
        idx = np.stack([rng.choice(E, k, replace=False) for _ in range(T_)]).astype(np.int64)
        wt = rng.uniform(0.1, 1, idx.shape).astype(np.float32)
        fid = [quant.FORMATS[f][0] for f in fmts]
        y1, c1 = kmoe(x, idx, wt, *arr, *fid, F, 1, True)
        y3, c3 = kmoe(x, idx, wt, *arr, *fid, F, 3, True)
        np.testing.assert_array_equal(c1, c3)
        _same(y3, y1, f"T={T_}")


# ---- the q8_K activations (gb_quantize_row_q8_K: AVX2 where no AVX-512) ---------------------------
def q8_K_c(x):
    """ggml's quantize_row_q8_K_ref as C runs it on x86, non-finite values included: NaN never the
    largest magnitude, and an int conversion of inf/NaN gives INT_MIN, whose low byte (the int8
    stored) and low 16 bits (in the sums) are 0."""
    R, K = x.shape
    xb = x.reshape(R, K // 256, 256)
    d = np.zeros(xb.shape[:2], np.float32)
    q = np.zeros(xb.shape, np.int8)
    with np.errstate(all="ignore"):
        for r in range(R):
            for b in range(K // 256):
                v = xb[r, b]
                a = np.where(np.isnan(v), -1, np.abs(v))
                i = int(np.argmax(a))
                if not a[i] > 0:
                    continue
                iscale = np.float32(-127.0) / v[i]
                qq = np.rint(iscale * v)
                qq = np.where(np.isfinite(qq), np.minimum(qq, 127), 0)
                q[r, b] = qq.astype(np.int8)
                d[r, b] = np.float32(1.0) / iscale
    bs = q.reshape(R, -1, 16).astype(np.int32).sum(-1).astype(np.int16)
    return d, q.reshape(R, K), bs


def test_q8_K_edge_blocks_byte_exact(rng):
    K = 256 * 14
    x = (rng.standard_normal((2, K)) * 3).astype(np.float32)
    b = x[0].reshape(14, 256)
    b[0] = 0                                            # all zero
    b[1] = -0.0                                         # negative zeros
    b[2, 7] = b[2, 200] = 50.0                          # two of the largest magnitude: the first one
    b[2, 100] = -50.0                                   # and the same magnitude negative, later
    b[3] = np.float32(0.5) * np.rint(b[3] * 2)          # exact halves: round half to even
    b[4] *= np.float32(1e-38)                           # -127/max overflows to inf: inf * value bytes
    b[5, :] = 0
    b[5, 17] = np.float32(1e-45)                        # a lone denormal
    b[6] = np.float32(3e38) * np.sign(b[6])             # near the float32 maximum
    b[7] = np.linspace(-1, 1, 256, dtype=np.float32)    # every rounding position
    b[8, 255] = 1e4                                     # largest value in the last lane
    b[9, 0] = -1e4                                      # ... in the first lane
    # (non-finite activations are refused by the bindings, and the C quantizer hands such a block to
    # the portable loop as a whole: what q8_K_c models)
    b[10] *= np.float32(2e-37)                          # -127/max just finite: values near the int range
    b[11, :] = np.float32(-1e-40)                       # all the same denormal
    b[12] = np.float32(127.5) * np.sign(b[12])          # |iscale * x| = 127 exactly, both signs
    b[13, 100:] = 0
    x[1] = x[1] * np.float32(1e-20)
    d, q, bs = q8_K_core(x)
    dn, qn, bsn = q8_K_c(x)
    np.testing.assert_array_equal(d.view(np.uint32), dn.view(np.uint32))
    np.testing.assert_array_equal(q, qn)
    np.testing.assert_array_equal(bs, bsn)
    # the finite blocks also as the test_quant_k NumPy reference
    with np.errstate(all="ignore"):
        d2, q2, bs2 = q8_K_np(np.ascontiguousarray(x[1:]))
    np.testing.assert_array_equal(q[1:], q2)
    np.testing.assert_array_equal(d[1:].view(np.uint32), d2.view(np.uint32))


def test_q8_K_random_scales_byte_exact(rng):
    x = (rng.standard_normal((40, 512)) * 10.0 ** rng.uniform(-30, 30, (40, 1))).astype(np.float32)
    d, q, bs = q8_K_core(x)
    dn, qn, bsn = q8_K_np(x)
    np.testing.assert_array_equal(d.view(np.uint32), dn.view(np.uint32))
    np.testing.assert_array_equal(q, qn)
    np.testing.assert_array_equal(bs, bsn)


@needs_avx2
@pytest.mark.parametrize("T_", [8, 16, 21])
def test_iq4_xs_8_token_tile_extreme_products(rng, T_):
    """The iq4_xs 8-token tile (kp_tile8_avx2_iq4xs) takes |w| x (x with w's sign): at the largest
    magnitudes (every index 0, w = -127, activations of +-full scale so q8_K values are +-127 in
    both signs: int16 pairs of 2 x 127 x 127, the most a vpmaddubsw pair holds) and extreme 6-bit
    scales, the same bits as the portable version; also mixed with random blocks."""
    N, K = 24, 512
    w = random_blocks(rng, "iq4_xs", N, K)
    blk = w.reshape(N, 2, BB["iq4_xs"])
    blk[:8, :, 8:] = 0                          # rows 0..7: every nibble index 0 (value -127)
    blk[:4, :, 2:4] = 0xFF                      # rows 0..3: 6-bit scales 63 - 32 = 31 (high 2 bits set)
    blk[:4, :, 4:8] = 0xFF
    qt = QTensor(w, "iq4_xs", (N, K)).repack()
    x = rng.standard_normal((T_, K)).astype(np.float32)
    x[0] = 1.0                                  # all +127
    x[1] = -1.0                                 # all -127
    x[2, ::2], x[2, 1::2] = 1.0, -1.0
    x[3] = np.where(rng.random(K) < 0.5, 1.0, -1.0).astype(np.float32)
    y = quant.linear(x, qt, kernel="kquant_avx2")
    _same(y, quant.linear(x, qt, kernel="kquant_ref"))
    assert np.all(np.isfinite(y))


@needs_avx2
@pytest.mark.parametrize("fmt", ["iq4_xs", "q6_K"])
def test_token_chunks_and_8_token_tiles(rng, fmt):
    """T = 203 at K = 4096: gb_klinear_packed's AVX2 token chunks (KP_XCHUNK_AVX2: 32 tokens of
    146 KB here, the last one 11 tokens: an 8-token tile and a 3-token tail) against the portable version."""
    N, K, T_ = 20, 4096, 203
    w = random_blocks(rng, fmt, N, K)
    qt = QTensor(w, fmt, (N, K)).repack()
    x = rng.standard_normal((T_, K)).astype(np.float32)
    bias = rng.standard_normal(N).astype(np.float32)
    _same(quant.linear(x, qt, bias, kernel="kquant_avx2"), quant.linear(x, qt, bias, kernel="kquant_ref"))

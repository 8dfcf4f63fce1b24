"""Decode GEMV (T = 1) and a decode step's routed experts on the repacked layouts (csrc/quant_k.c
kp_tile / kp_tile2, csrc/quant_iq.c iqp_tile, csrc/qgemm.c gemv_vnni_run): the same bits on 1 and 2
threads, the same bits as the portable kernel (q4_0/q8_0: as the multi-token VNNI tiles) and (K
formats) as the VNNI kernel on the bytes as stored, for row counts not a multiple of 16 and K with a partial last 16-block lane group; the
repacked buffers start on a 64-byte line."""
import os
import sys

import numpy as np
import pytest

import glmbench
from glmbench.core import quant
from glmbench.core._loader import _core

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from test_quant_iq import random_blocks as iq_blocks  # noqa: E402
from test_quant_k import random_blocks as k_blocks  # noqa: E402

KF = ["q2_K", "q3_K", "q4_K", "q5_K", "q6_K", "iq4_xs"]
IQ = ["iq4_nl", "mxfp4"]
QG = ["q4_0", "q8_0"]
HAVE_VNNI = quant.kernels().get("kquant_vnni") and quant.kernels().get("qgemm_vnni")


def _weight(rng, fmt, n, k):
    if fmt in KF:
        return quant.QTensor(k_blocks(rng, fmt, n, k), fmt, (n, k))
    if fmt in IQ:
        return quant.QTensor(iq_blocks(rng, fmt, n, k), fmt, (n, k))
    return quant.quantize((rng.standard_normal((n, k)) * 0.05).astype(np.float32), fmt)


def _kernels(fmt):
    return ("kquant_ref", "kquant_vnni") if fmt in KF + IQ else ("qgemm_ref", "qgemm_vnni")


def _on_threads(th, f):
    prev = glmbench.get_num_threads()
    glmbench.set_num_threads(th)
    try:
        return f()
    finally:
        glmbench.set_num_threads(prev)


def _shapes(fmt):
    # K formats: whole super-blocks (1, 3, 5); the 32-value formats: 3 and 17 blocks (lane groups of
    # 16 blocks padded), and 161 (5152: GLM-sized with a tail)
    ks = (256, 768, 1280) if fmt in KF else (96, 544, 5152)
    return [(n, k) for n in (1, 17, 45) for k in ks]


@pytest.mark.skipif(not HAVE_VNNI, reason="AVX-512 VNNI kernels not compiled in")
@pytest.mark.parametrize("fmt", KF + IQ + QG)
def test_decode_gemv_same_bits_on_1_and_2_threads_and_every_kernel(rng, fmt):
    ref_k, vnni_k = _kernels(fmt)
    for n, k in _shapes(fmt):
        w = _weight(rng, fmt, n, k)
        stored = w.data.copy() if fmt in KF else None
        x = rng.standard_normal((1, k)).astype(np.float32)
        bias = rng.standard_normal(n).astype(np.float32)
        if fmt in QG:  # q4_0/q8_0: the portable kernel rounds differently (FMA); the VNNI tiles of 3 tokens
            x3 = np.concatenate([x, rng.standard_normal((2, k)).astype(np.float32)])
            want = _on_threads(1, lambda: quant.linear(x3, w, bias, kernel=vnni_k))[:1]
        else:
            want = _on_threads(1, lambda: quant.linear(x, w, bias, kernel=ref_k))
        for th in (1, 2):
            got = _on_threads(th, lambda: quant.linear(x, w, bias, kernel=vnni_k))
            np.testing.assert_array_equal(got.view(np.uint32), want.view(np.uint32), err_msg=f"{fmt} N={n} K={k} threads={th}")
        if stored is not None:  # the VNNI kernel on the bytes as stored (the path before the repack)
            fid = quant.FORMATS[fmt][0]
            as_stored = _core.klinear(x, stored, fid, k, bias, 2)
            np.testing.assert_array_equal(as_stored.view(np.uint32), want.view(np.uint32))
            np.testing.assert_array_equal(w.data, stored)  # the stored bytes are only read
        assert np.all(np.isfinite(want))


@pytest.mark.parametrize("fmt", KF + IQ + QG)
def test_repacked_buffers_start_on_a_cache_line(rng, fmt):
    k = 256 if fmt in KF else 96
    for n in (5, 16, 33):
        w = _weight(rng, fmt, n, k).repack()
        assert w.packed.ctypes.data % 64 == 0
        assert w.packed.flags.c_contiguous and w.packed.flags.writeable
    parts = [_weight(rng, fmt, 32, k) for _ in range(3)]
    x = rng.standard_normal((1, k)).astype(np.float32)
    sep = [quant.linear(x, p) for p in parts]
    fused = quant.fuse_rows(*parts)
    assert fused is not None and fused.packed.ctypes.data % 64 == 0
    np.testing.assert_array_equal(quant.linear(x, fused), np.concatenate(sep, axis=1))


@pytest.mark.parametrize("fmt", ["q4_0", "q8_0", "q6_K", "mxfp4"])
def test_decode_step_experts_same_bits_on_1_and_2_threads(rng, fmt):
    # a decode step (T = 1, top-4 of 16): the experts' row groups shared out over the threads in
    # runs of ~256 KB (q4_0/q8_0: several 4-group steps per grab); a row of T = 2 with its own routing.
    # The kernel quant.moe_experts picks on this build (VNNI, AVX2 or portable): no VNNI needed
    E, k = 16, 4
    F, D = (512, 512) if fmt in KF + IQ else (160, 544)
    ws = [_weight(rng, fmt, E * a, b) for a, b in ((F, D), (F, D), (D, F))]
    ws = [quant.QTensor(w.data.reshape(E, a, -1), fmt, (E, a, b)) for w, (a, b) in zip(ws, ((F, D), (F, D), (D, F)))]
    x = rng.standard_normal((2, D)).astype(np.float32)
    idx = np.array([[3, 9, 0, 14], [1, 9, 7, 2]], np.int64)
    wt = np.array([[0.4, 0.3, 0.2, 0.1], [0.25, 0.25, 0.25, 0.25]], np.float32)
    y1 = _on_threads(1, lambda: quant.moe_experts(x[:1], idx[:1], wt[:1], *ws)[0])
    y2 = _on_threads(2, lambda: quant.moe_experts(x[:1], idx[:1], wt[:1], *ws)[0])
    np.testing.assert_array_equal(y1.view(np.uint32), y2.view(np.uint32))
    both = _on_threads(2, lambda: quant.moe_experts(x, idx, wt, *ws)[0])
    np.testing.assert_array_equal(both[0].view(np.uint32), y1[0].view(np.uint32))
    assert np.all(np.isfinite(y1))


FAST_QG = [k for k in ("qgemm_vnni", "qgemm_avx2") if quant.kernels().get(k)]


@pytest.mark.skipif(not FAST_QG, reason="no SIMD version of the q4_0/q8_0 GEMM compiled in")
@pytest.mark.parametrize("fmt", QG)
def test_qgemm_decode_same_bits_on_1_and_2_threads(rng, fmt):
    # q4_0/q8_0 on every SIMD version compiled in (qgemm_avx2 on an AVX2-only CPU): the T = 1 GEMV
    # (runs of groups shared out dynamically) equals the 3-token tile's row on 1 and 2 threads,
    # and T = 2..8 (decode batches) the same rows on both thread counts
    for kern in FAST_QG:
        for n, k in _shapes(fmt) + [(1030, 5152), (983, 5152)]:  # runs of 5 groups: an odd last run, a last pair with a partial group
            w = _weight(rng, fmt, n, k)
            x = rng.standard_normal((8, k)).astype(np.float32)
            bias = rng.standard_normal(n).astype(np.float32)
            want = _on_threads(1, lambda: quant.linear(x, w, bias, kernel=kern))
            for th in (1, 2):
                got = _on_threads(th, lambda: quant.linear(x[:1], w, bias, kernel=kern))
                np.testing.assert_array_equal(got.view(np.uint32), want[:1].view(np.uint32), err_msg=f"{kern} {fmt} N={n} K={k} threads={th}")
                for T in (2, 3, 5, 8):
                    got = _on_threads(th, lambda: quant.linear(x[:T], w, bias, kernel=kern))
                    np.testing.assert_array_equal(got.view(np.uint32), want[:T].view(np.uint32))
            assert np.all(np.isfinite(want))


@pytest.mark.skipif(not FAST_QG, reason="no SIMD version of the q4_0/q8_0 GEMM compiled in")
@pytest.mark.parametrize("fmt", QG)
def test_qgemm_decode_step_experts_same_bits_on_1_and_2_threads(rng, fmt):
    E, k, F, D = 16, 4, 160, 544
    ws = [_weight(rng, fmt, E * a, b) for a, b in ((F, D), (F, D), (D, F))]
    ws = [quant.QTensor(w.data.reshape(E, a, -1), fmt, (E, a, b)) for w, (a, b) in zip(ws, ((F, D), (F, D), (D, F)))]
    x = rng.standard_normal((2, D)).astype(np.float32)
    idx = np.array([[3, 9, 0, 14], [1, 9, 7, 2]], np.int64)
    wt = np.array([[0.4, 0.3, 0.2, 0.1], [0.25, 0.25, 0.25, 0.25]], np.float32)
    for kern in FAST_QG:
        y1 = _on_threads(1, lambda: quant.moe_experts(x[:1], idx[:1], wt[:1], *ws, kernel=kern)[0])
        y2 = _on_threads(2, lambda: quant.moe_experts(x[:1], idx[:1], wt[:1], *ws, kernel=kern)[0])
        np.testing.assert_array_equal(y1.view(np.uint32), y2.view(np.uint32))
        both = _on_threads(2, lambda: quant.moe_experts(x, idx, wt, *ws, kernel=kern)[0])
        np.testing.assert_array_equal(both[0].view(np.uint32), y1[0].view(np.uint32))
        assert np.all(np.isfinite(y1))

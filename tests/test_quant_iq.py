"""ggml's iq4_nl and mxfp4 (32-value blocks, 4-bit indices into a non-linear table, one scale per
block) read as stored (csrc/quant_iq.c): dequantization bit for bit against the gguf package's
NumPy dequantizer, glmbench's mxfp4 quantizer byte for byte against the gguf package's (which has
one for MXFP4, none for IQ4_NL), the GEMV/GEMM against float64 references (exact within float32
rounding on the q8_0-rounded activations; within the activation rounding's own bound on the float
ones), the portable and VNNI versions bit-identical, odd sizes, views, unaligned rows, all-zero and
non-finite scales, threads, and GGUF files of each type (a tensor, and a tiny MoE model with mxfp4
experts as gpt-oss ships them) loaded and run as stored."""
import functools
import os
import sys
import warnings

import numpy as np
import pytest

gguf = pytest.importorskip("gguf")

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

import quant_cases  # noqa: E402

from glmbench.core import quant  # noqa: E402
from glmbench.core._loader import _core  # noqa: E402
from glmbench.core.quant import QTensor  # noqa: E402

T = gguf.GGMLQuantizationType
FMTS = ["iq4_nl", "mxfp4"]
GT = {"iq4_nl": T.IQ4_NL, "mxfp4": T.MXFP4}
BB = {"iq4_nl": 18, "mxfp4": 17}
VERSIONS = [v for v, ok in quant.kernels().items() if v.startswith("kquant_") and ok]
KV_IQ4NL = np.array([-127, -104, -83, -65, -49, -35, -22, -10, 1, 13, 25, 38, 53, 69, 89, 113], np.float32)


def random_blocks(rng, fmt, rows, k):
    """Random bytes as [rows, k] of `fmt`: every nibble pattern; finite small f16 scales (iq4_nl) or
    E8M0 exponents around 2^-6 (mxfp4)."""
    nb = k // 32
    a = rng.integers(0, 256, (rows, nb, BB[fmt]), dtype=np.uint8)
    if fmt == "iq4_nl":
        a[:, :, :2] = rng.uniform(0.0001, 0.002, (rows, nb)).astype(np.float16).view(np.uint8).reshape(rows, nb, 2)
    else:
        a[:, :, 0] = rng.integers(115, 128, (rows, nb))
    return a.reshape(rows, nb * BB[fmt])


def quantize_iq4_nl_np(x):
    """A plain iq4_nl quantizer in ggml's layout (test helper; not ggml's scale search): d = the
    signed value of largest magnitude / -127 (kvalues_iq4nl[0]), each value the nearest d * kvalue."""
    b = x.reshape(-1, 32).astype(np.float32)
    i = np.argmax(np.abs(b), axis=-1)
    d = (b[np.arange(len(b)), i] / np.float32(-127)).astype(np.float16)
    q = np.argmin(np.abs(d.astype(np.float32)[:, None, None] * KV_IQ4NL[None, None] - b[:, :, None]), -1).astype(np.uint8)
    out = np.concatenate([d[:, None].view(np.uint8), q[:, :16] | (q[:, 16:] << 4)], -1)
    return out.reshape(x.shape[:-1] + (x.shape[-1] // 32 * 18,))


def quantized_blocks(rng, fmt, rows, k):
    x = rng.standard_normal((rows, k)).astype(np.float32) * 0.05
    return quantize_iq4_nl_np(x) if fmt == "iq4_nl" else quant.quantize_mxfp4(x)


def gguf_deq(data, fmt, k):
    return gguf.quants.dequantize(np.asarray(data).reshape(-1, data.shape[-1]), GT[fmt]).reshape(-1, k)


def xq_deq(x):
    """The q8_0-rounded activations (ggml's quantize_row_q8_0_ref, as the kernels use) and each block's dx."""
    q = quant.quantize(np.ascontiguousarray(x), "q8_0")
    dx = q.data.reshape(x.shape[0], -1, 34)[:, :, :2].copy().view(np.float16)[..., 0].astype(np.float64)
    return q.dequantize().astype(np.float64), dx


# ---- layout -----------------------------------------------------------------------------------
@pytest.mark.parametrize("fmt", FMTS)
@pytest.mark.parametrize("shape", [(1, 32), (7, 96), (3, 5, 608)])
def test_dequantize_bit_exact_with_gguf(rng, fmt, shape):
    k = shape[-1]
    rows = int(np.prod(shape[:-1]))
    for data in (random_blocks(rng, fmt, rows, k), quantized_blocks(rng, fmt, rows, k)):
        qt = QTensor(data.reshape(shape[:-1] + (data.shape[-1],)), fmt, shape)
        y = qt.dequantize()
        assert y.shape == shape and y.dtype == np.float32
        want = gguf_deq(data, fmt, k).astype(np.float32).reshape(shape)
        np.testing.assert_array_equal(y.view(np.uint32), want.view(np.uint32))


def test_mxfp4_every_exponent_and_nibble_matches_gguf():
    # all 256 E8M0 bytes (e < 2 subnormal, e = 255 -> 2^127, values past float32 -> inf) x all 16 nibbles
    e = np.arange(256, dtype=np.uint8)
    blk = np.zeros((256, 17), np.uint8)
    blk[:, 0] = e
    blk[:, 1:9] = np.array([0x10, 0x32, 0x54, 0x76, 0x98, 0xba, 0xdc, 0xfe], np.uint8)
    blk[:, 9:] = 0x77
    y = QTensor(blk, "mxfp4", (256, 32)).dequantize()
    with np.errstate(over="ignore"):
        want = gguf.quants.dequantize(blk, T.MXFP4).reshape(256, 32)
    np.testing.assert_array_equal(y.view(np.uint32), want.view(np.uint32))
    # element j < 16 is the low nibble of byte j, element 16 + j its high nibble; x = 2^(e-128) * kvalue
    assert y[130, 16] == 4.0 and y[130, 1] == 8.0 and y[128, 20] == -1.0 and y[128, 9] == 12.0
    assert y[255, 16] == 2.0 ** 127 and np.isinf(y[255, 1]) and y[0, 16] == 2.0 ** -128


def test_mxfp4_quantizer_byte_exact_with_gguf(rng):
    x = (rng.standard_normal((6, 256)) * rng.uniform(1e-3, 1e3, (6, 1))).astype(np.float32)
    x[1, 32:64] = 0                                     # an all-zero block: e = 0
    x[2, :32] = np.float32(2.0) ** rng.integers(-20, 20, 32)   # exact powers of two: floor(log2) edges
    x[3, :] = np.rint(x[3] * 4) / 4                     # ties between grid points: the first wins
    x[4, :32] = -x[4, :32]
    x[5, :32] = rng.standard_normal(32).astype(np.float32) * 1e37
    got = quant.quantize_mxfp4(x)
    want = gguf.quants.quantize(x, T.MXFP4)
    np.testing.assert_array_equal(got, want)
    qt = quant.quantize(x, "mxfp4")
    assert qt.fmt == "mxfp4" and qt.nbytes == 6 * 8 * 17
    np.testing.assert_array_equal(qt.data, want)
    # round trip within the format's error: the grid step at |x| near amax is d*4 = 2^(e-126) <= amax/2
    y = qt.dequantize().reshape(-1, 32)
    amax = np.abs(x.reshape(-1, 32)).max(-1, keepdims=True)
    assert np.all(np.abs(y - x.reshape(-1, 32)) <= amax / 4 * (1 + 1e-6))
    # tiny blocks (amax < 2^-125, where ggml's cast would wrap) get e = 0; NaN/inf refused
    assert quant.quantize_mxfp4(np.full((1, 32), 1e-39, np.float32))[0, 0] == 0
    with pytest.raises(ValueError, match="NaN at flat index 5"):
        quant.quantize_mxfp4(np.where(np.arange(32) == 5, np.nan, 1).astype(np.float32)[None])
    with pytest.raises(ValueError, match="multiple"):
        quant.quantize(np.zeros((2, 48), np.float32), "mxfp4")
    with pytest.raises(NotImplementedError, match="no iq4_nl quantizer"):
        quant.quantize(np.zeros((2, 32), np.float32), "iq4_nl")
    with pytest.raises(NotImplementedError, match="no iq4_nl quantizer"):
        quant.quantize_chunks([np.zeros(64, np.float32)], (2, 32), "iq4_nl")
    # chunked generation (how Model builds huge random weights) gives the same bytes
    qc = quant.quantize_chunks([x.reshape(-1)[:700], x.reshape(-1)[700:]], x.shape, "mxfp4")
    np.testing.assert_array_equal(qc.data, want)


# ---- kernels ----------------------------------------------------------------------------------
def _check_linear(fmt, w, x, kernel="auto", bias=None):
    return quant_cases.check_linear(fmt, w, x, gguf_deq, xq_deq, 32, 1e-3, kernel, bias)


@pytest.mark.parametrize("fmt", FMTS)
@pytest.mark.parametrize("T_,N,K", [(1, 1, 32), (1, 37, 96), (3, 16, 544), (17, 33, 32), (70, 5, 1056),
                                      (64, 16, 512), (129, 33, 800)])
def test_linear_every_version_against_float64(rng, fmt, T_, N, K):
    quant_cases.linear_every_version(rng, fmt, T_, N, K, random_blocks, _check_linear, VERSIONS)


@pytest.mark.parametrize("fmt", FMTS)
def test_decode_vector_and_compute_f32(rng, fmt):
    qt = QTensor(quantized_blocks(rng, fmt, 24, 512), fmt, (24, 512))
    x = rng.standard_normal(512).astype(np.float32)
    y = quant.linear(x, qt)
    assert y.shape == (24,)
    yf = quant.linear(x, qt, compute="f32")
    ref = x.astype(np.float64) @ qt.dequantize().astype(np.float64).T
    np.testing.assert_allclose(yf, ref, rtol=1e-5, atol=1e-5 * np.abs(ref).max())
    assert np.abs(y - ref).max() < 0.03 * np.abs(ref).max()


@pytest.mark.parametrize("fmt", FMTS)
def test_views_and_unaligned_rows(rng, fmt):
    quant_cases.views_and_unaligned_rows(rng, fmt, 160, random_blocks, _check_linear)


@pytest.mark.parametrize("fmt", FMTS)
def test_all_zero_scales_block(rng, fmt):
    K, N = 96, 4
    w = random_blocks(rng, fmt, N, K)
    blk = w.reshape(N, 3, BB[fmt])
    if fmt == "iq4_nl":
        blk[1, 1, :2] = 0                              # d = 0: the block decodes to zeros
    else:
        blk[1, 1, 0] = 0                               # e = 0: the smallest scale, 2^-128
        blk[1, 1, 1:] = 0x88                           # and nibbles 0/8 (+0/-0): zeros
    qt = QTensor(w, fmt, (N, K))
    assert np.all(qt.dequantize()[1, 32:64] == 0)
    x = rng.standard_normal((2, K)).astype(np.float32)
    x[0, :32] = 0                                      # and an all-zero activation block
    outs = [_check_linear(fmt, w, x, v) for v in VERSIONS]
    for o in outs[1:]:
        np.testing.assert_array_equal(o, outs[0])


@pytest.mark.parametrize("bad", [np.inf, np.nan])
def test_iq4_nl_non_finite_scale_propagates_as_ggml(rng, bad):
    """A NaN/Inf f16 scale is not checked (ggml does not either): the rows that read that block
    come out non-finite, every other row is exact."""
    K, N = 96, 5
    w = random_blocks(rng, "iq4_nl", N, K)
    w.reshape(N, 3, 18)[2, 1, :2] = np.array([bad], np.float16).view(np.uint8)
    x = rng.standard_normal((3, K)).astype(np.float32)
    for v in VERSIONS:
        y = quant_cases.bad_block_row_2(x, w, "iq4_nl", N, K, v)
        assert not np.any(np.isfinite(y[:, 2]))
    assert not np.all(np.isfinite(QTensor(w, "iq4_nl", (N, K)).dequantize()[2]))


def test_mxfp4_largest_exponent_as_ggml(rng):
    """E8M0 has no NaN in ggml's reading: e = 255 is the scale 2^127 (finite). Values past float32
    decode to +-inf; in the dot the row that reads the block overflows, other rows are exact, and
    both versions agree bit for bit."""
    K, N = 96, 5
    w = random_blocks(rng, "mxfp4", N, K)
    w.reshape(N, 3, 17)[2, 1, 0] = 255
    x = rng.standard_normal((3, K)).astype(np.float32)
    outs = []
    for v in VERSIONS:
        y = quant_cases.bad_block_row_2(x, w, "mxfp4", N, K, v)
        assert np.all(np.abs(y[:, 2]) > 1e30)
        outs.append(y)
    for o in outs[1:]:
        np.testing.assert_array_equal(o.view(np.uint32), outs[0].view(np.uint32))


def test_errors_are_clear(rng):
    w = random_blocks(rng, "mxfp4", 4, 64)
    qt = QTensor(w, "mxfp4", (4, 64))
    with pytest.raises(ValueError, match="multiple"):
        QTensor(np.zeros((4, 17), np.uint8), "mxfp4", (4, 48))
    with pytest.raises(ValueError, match="does not read mxfp4"):
        quant.linear(np.zeros(64, np.float32), qt, kernel="qgemm_vnni")
    with pytest.raises(ValueError, match="NaN"):
        quant.linear(np.full(64, np.nan, np.float32), qt)
    with pytest.raises(ValueError, match="in_features"):
        quant.linear(np.zeros(96, np.float32), qt)
    with pytest.raises(ValueError, match="multiple of 32"):
        _core.klinear(np.zeros((1, 48), np.float32), np.zeros((1, 17), np.uint8), 39, 48)
    with pytest.raises(ValueError, match="bytes of one row"):
        _core.kdequantize(np.zeros((1, 18), np.uint8), 39, 32)
    before = w.copy()
    assert qt.repack() is qt and qt.packed is not None  # a repacked copy beside the stored bytes
    assert qt.data is w and np.array_equal(w, before)  # the stored bytes are kept and never written


@pytest.mark.parametrize("fmt", FMTS)
def test_threads_do_not_change_a_bit(rng, fmt):
    quant_cases.threads_do_not_change_a_bit(rng, fmt, random_blocks)


def test_moe_experts_on_mxfp4(rng):
    E, F, D = 4, 64, 96
    def q(shape):
        return quant.quantize((rng.standard_normal(shape) * 0.1).astype(np.float32), "mxfp4")
    wg, wu, wd = q((E, F, D)), q((E, F, D)), q((E, D, F))
    quant_cases.moe_experts_against_float64(rng, wg, wu, wd, D)


# ---- GGUF files -------------------------------------------------------------------------------
def _iq_quantize(orig, data, qtype):
    return quantize_iq4_nl_np(np.asarray(data, np.float32)) if qtype == T.IQ4_NL else orig(data, qtype)


def _mx_gguf(tmp_path, monkeypatch):
    """A tiny qwen3_moe GGUF: experts mxfp4, attention iq4_nl, the rest q8_0. (path, config, HF model)"""
    import gguf_writer
    from test_model_hf import tiny_hf_model
    monkeypatch.setattr(gguf.quants, "quantize", functools.partial(_iq_quantize, gguf.quants.quantize))
    cfg, model = tiny_hf_model("qwen3_moe", hidden_size=256, intermediate_size=512, head_dim=64, num_attention_heads=4,
                               num_key_value_heads=2, num_hidden_layers=2, moe_intermediate_size=128, num_experts=4,
                               num_experts_per_tok=2)
    p = str(tmp_path / "mx.gguf")
    gguf_writer.write(p, cfg, model.state_dict(),
                      types=lambda n, s: T.MXFP4 if "_exps" in n else T.IQ4_NL if "attn_" in n else T.Q8_0)
    return p, cfg, model


@pytest.mark.parametrize("fmt", FMTS)
def test_gguf_tensor_of_each_type_loads_as_stored(rng, tmp_path, fmt):
    q = quantized_blocks(rng, fmt, 12, 512)
    stored = quant_cases.gguf_tensor_as_stored(tmp_path, fmt, q, GT[fmt], 512)
    x = rng.standard_normal((2, 512)).astype(np.float32)
    _check_linear(fmt, stored, x)


def test_mxfp4_experts_gguf_model_runs_as_stored(tmp_path, monkeypatch):
    """A tiny qwen3_moe GGUF with routed experts in mxfp4 (as gpt-oss ships them, written by the
    gguf package's own MXFP4 quantizer), iq4_nl attention and q8_0 elsewhere: those tensors stay
    QTensors (no dequantize warning), and the logits equal those of the same model built from the
    file's dequantized values within the q8_0 activations' error, and within 1e-4 with compute='f32'."""
    import glmbench
    from glmbench.models import checkpoint
    from test_model_hf import rel_err
    p, cfg, model = _mx_gguf(tmp_path, monkeypatch)
    with warnings.catch_warnings(record=True) as w:
        warnings.simplefilter("always")
        c, sd = checkpoint.state_dict(p)
    assert not [x for x in w if "dequantized" in str(x.message)]
    fmts = {getattr(v, "fmt", None) for v in sd.values()}
    assert {"mxfp4", "iq4_nl"} <= fmts
    m = glmbench.Model(c, sd, weights="stored", kv="f32", max_context=16)
    deq = {k: (v.dequantize() if hasattr(v, "dequantize") else np.asarray(v, np.float32)) for k, v in sd.items()}
    ref = glmbench.Model(c, deq, weights="f32", kv="f32", max_context=16)
    prompt = np.array([1, 5, 9, 33])
    assert rel_err(m.prefill(prompt), ref.prefill(prompt)) < 0.05
    assert rel_err(m.decode(7), ref.decode(7)) < 0.05
    monkeypatch.setattr(quant, "linear", functools.partial(quant.linear, compute="f32"))
    monkeypatch.setattr(quant, "moe_experts", functools.partial(quant.moe_experts, compute="f32"))  # not the C kmoe
    m2 = glmbench.Model(c, sd, weights="stored", kv="f32", max_context=16)
    ref2 = glmbench.Model(c, deq, weights="f32", kv="f32", max_context=16)
    assert rel_err(m2.prefill(prompt), ref2.prefill(prompt)) < 1e-4


@pytest.mark.skipif(not os.path.exists("/proc/self/statm"), reason="needs /proc (Linux)")
def test_inputs_unchanged_and_no_leaks(rng):
    w = random_blocks(rng, "mxfp4", 20, 512)
    w0 = w.copy()
    qt = QTensor(w, "mxfp4", (20, 512))
    xs = {t: rng.standard_normal((t, 512)).astype(np.float32) for t in (1, 16, 64)}
    x0 = {t: v.copy() for t, v in xs.items()}
    calls = [lambda t=t: quant.linear(xs[t], qt) for t in xs] + [qt.dequantize]
    quant_cases.calls_leave_no_trace(calls)
    np.testing.assert_array_equal(w, w0)
    for t in xs:
        np.testing.assert_array_equal(xs[t], x0[t])


@pytest.mark.parametrize("fmts", [("q4_K", "q4_K", "q6_K"), ("q4_K", "q5_K", "iq4_xs"), ("mxfp4",) * 3,
                                  ("iq4_nl", "mxfp4", "q8_K_mix")])
@pytest.mark.parametrize("Tn", [7, 30, 40])
def test_moe_experts_in_one_c_call(rng, fmts, Tn, monkeypatch):
    """K-quant / iq4_nl / mxfp4 experts (mixed formats, as Q4_K_M files mix q4_K and q6_K) run as one
    C call (csrc/moe_k.c): no Python per expert, the same result as the per-expert Python loop
    over the same kernels (up to SiLU's expf vs NumPy's exp, which can move a q8 rounding of h), the
    portable, VNNI and AVX2 versions bit-identical, counts right, inputs unchanged. Tn = 30: every
    expert 11-13 tokens (one C call over experts x groups: gb_iqp_rows' 8-token tiles on the records
    built once per expert); Tn = 40: some expert gets >= 16 (expert by expert, the GEMM's tiles)."""
    import kquant_np
    fmts = tuple("q6_K" if f == "q8_K_mix" else f for f in fmts)
    E, F, D, k = 5, 256, 512, 2

    def q(fmt, shape):
        a = (rng.standard_normal(shape) * 0.05).astype(np.float32)
        if fmt in ("mxfp4",):
            return quant.quantize(a, fmt)
        if fmt == "iq4_nl":
            return QTensor(quantize_iq4_nl_np(a), fmt, shape)
        return QTensor(kquant_np.quantize(a.reshape(-1, shape[-1]), fmt).reshape(shape[:-1] + (-1,)), fmt, shape)
    wg, wu, wd = q(fmts[0], (E, F, D)), q(fmts[1], (E, F, D)), q(fmts[2], (E, D, F))
    x = rng.standard_normal((Tn, D)).astype(np.float32)
    x0 = x.copy()
    idx = rng.integers(0, E, (Tn, k))
    idx[:, 1] = (idx[:, 0] + 1 + rng.integers(0, E - 1, Tn)) % E
    if Tn == 30:
        idx[:, 0], idx[:, 1] = np.arange(Tn) % E, (np.arange(Tn) + 1) % E
    idx[0] = [4, 1]
    wt = rng.uniform(0.1, 1, idx.shape).astype(np.float32)
    calls = []
    monkeypatch.setattr(quant, "swiglu", lambda *a, **kw: calls.append(1) or pytest.fail("Python per-expert loop"))
    outs = [quant.moe_experts(x, idx, wt, wg, wu, wd, kernel=v) for v in VERSIONS]
    monkeypatch.undo()
    y, counts = outs[0]
    assert not calls and list(counts) == list(np.bincount(idx.reshape(-1), minlength=E))
    for o, c in outs[1:]:
        np.testing.assert_array_equal(o.view(np.uint32), y.view(np.uint32))
    loop = np.zeros((Tn, D), np.float32)
    for e in range(E):
        rows, slot = np.nonzero(idx == e)
        if len(rows):
            loop[rows] += quant.swiglu(x[rows], wg[e], wu[e], wd[e]) * wt[rows, slot, None]
    np.testing.assert_allclose(y, loop, rtol=0, atol=2e-3 * np.abs(loop).max())
    np.testing.assert_array_equal(x, x0)
    y1, _ = quant.moe_experts(x[:1], idx[:1], wt[:1], wg, wu, wd)   # decode: one token, its 2 experts
    np.testing.assert_allclose(y1[0], loop[0], rtol=0, atol=2e-3 * np.abs(loop).max())
    with pytest.raises(ValueError, match="topk_idx"):
        _core.kmoe(x, np.full((Tn, k), E, np.int64), wt, wg.data.reshape(E, -1), wu.data.reshape(E, -1),
                   wd.data.reshape(E, -1), quant.FORMATS[wg.fmt][0], quant.FORMATS[wu.fmt][0], quant.FORMATS[wd.fmt][0], F)


def test_measure_runs_an_mxfp4_gguf_as_stored(tmp_path, monkeypatch):
    """`glmbench measure model.gguf` on a file with mxfp4 experts and iq4_nl attention: nothing of
    those types is dequantized on load, and the memory record is the file's own bytes."""
    from glmbench.measure.cpu import measure
    from glmbench.models import gguf_file
    p = _mx_gguf(tmp_path, monkeypatch)[0]
    with warnings.catch_warnings(record=True) as w:
        warnings.simplefilter("always")
        recs = measure(p, depths=(0,), n_prompt=8, n_gen=2, repeats=1, warmup=0, threads=1, progress=False)
    assert not [x for x in w if "dequantized" in str(x.message)]
    by = {r["test"]: r for r in recs}
    assert {"pp", "tg", "mem"} <= set(by)
    assert all(r["stored_weights"] and r["weights"] == "mxfp4" for r in recs)   # the file's main type by bytes
    assert by["pp"]["avg_ts"] > 0 and by["tg"]["avg_ts"] > 0
    assert by["mem"]["model_size"] == gguf_file.read(p).tensor_bytes


# ---- the repacked layout (csrc/quant_iq.h) ----------------------------------------------------------
@pytest.mark.parametrize("fmt", FMTS)
def test_repacked_equals_stored_bit_for_bit(rng, fmt):
    fid = quant.FORMATS[fmt][0]
    kv = {"kquant_ref": 1, "kquant_vnni": 2, "kquant_avx2": 3}
    quant_cases.repacked_equals_stored(
        rng, fmt, random_blocks, VERSIONS,
        lambda x, w, v, b: _core.klinear(x, w, fid, x.shape[1], b, kv[v]),
        lambda x, qt, v, b: quant.linear(x, qt, b, kernel=v),
        shapes=((37, 512), (16, 96), (5, 544), (18, 32)))


def test_repacked_experts_equal_stored(rng):
    def kmoe(x, idx, wt, ws, packed):
        E = ws[0].shape[0]
        if packed:
            for w in ws:
                w.repack()
        arr = [(w.packed if packed else w.data).reshape(E, -1) for w in ws]
        return _core.kmoe(x, idx, wt, *arr, *(quant.FORMATS[w.fmt][0] for w in ws), ws[0].shape[1], 0, packed)
    quant_cases.repacked_experts_equal_stored(rng, ("mxfp4", "iq4_nl", "mxfp4"), random_blocks, kmoe)
    import test_quant_k  # mixed with K formats: both activation layouts prepared in one call

    def blocks(rng, fmt, rows, k):
        return (random_blocks if fmt in FMTS else test_quant_k.random_blocks)(rng, fmt, rows, k)
    quant_cases.repacked_experts_equal_stored(rng, ("q4_K", "mxfp4", "iq4_nl"), blocks, kmoe)
    quant_cases.repacked_experts_equal_stored(rng, ("mxfp4", "mxfp4", "q6_K"), blocks, kmoe)


AVX2 = quant.kernels().get("kquant_avx2", False)


@pytest.mark.skipif(not AVX2, reason="the AVX2 version is not compiled in on this build")
@pytest.mark.parametrize("fmt", FMTS)
@pytest.mark.parametrize("T_,N,K", [(203, 20, 2048), (16, 33, 4096), (9, 16, 64)])
def test_avx2_token_chunks_and_tiles_bit_identical(rng, fmt, T_, N, K):
    """The AVX2 GEMM on repacked weights in token chunks (IQ_XCHUNK_AVX2: 64 tokens at K = 2048, the
    last chunk 11 tokens: an 8-token tile and a 3-token tail) and 8-token tiles (iq4_nl: low then high
    nibbles; mxfp4: one int32 sum per token), with the largest-magnitude values (iq4_nl -127,
    mxfp4 +-12 = index 7/15) against +-full-scale activations in some rows: the portable version's bits."""
    w = random_blocks(rng, fmt, N, K)
    blk = w.reshape(N, K // 32, BB[fmt])
    hd = 2 if fmt == "iq4_nl" else 1
    blk[:4, :, hd:] = 0 if fmt == "iq4_nl" else 0x77   # iq4_nl index 0 (-127); mxfp4 index 7 (12)
    if fmt == "mxfp4":
        blk[4:6, :, hd:] = 0xFF                        # index 15 (-12)
    qt = QTensor(w, fmt, (N, K)).repack()
    x = rng.standard_normal((T_, K)).astype(np.float32)
    x[0] = 1.0
    x[1, ::2], x[1, 1::2] = 1.0, -1.0
    x[2] = -1.0
    bias = rng.standard_normal(N).astype(np.float32)
    y = quant.linear(x, qt, bias, kernel="kquant_avx2")
    np.testing.assert_array_equal(y.view(np.uint32), quant.linear(x, qt, bias, kernel="kquant_ref").view(np.uint32))
    assert np.all(np.isfinite(y))

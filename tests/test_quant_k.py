"""ggml K-quants q2_K / q3_K / q4_K / q5_K / q6_K and iq4_xs read as stored (csrc/quant_k.c): dequantization bit for bit
against the gguf package's NumPy dequantizer, the q8_K activation quantizer byte for byte against a
NumPy copy of ggml's quantize_row_q8_K_ref, the GEMV/GEMM against float64 references (exact within
float32 rounding on the quantized activations; within the activation quantization's own bound on
the float ones), the portable and VNNI versions bit-identical, odd shapes, views, unaligned rows,
all-zero and non-finite scales, and GGUF files of each type loaded and run as stored.

The gguf package has no quantizer for these types (gguf.quants.quantize raises
NotImplementedError), so block bytes come from random valid blocks and from tests/kquant_np.py, a
simple NumPy quantizer in ggml's layout."""
import functools
import os
import sys
import warnings

import numpy as np
import pytest

gguf = pytest.importorskip("gguf")

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import kquant_np  # noqa: E402
import quant_cases  # noqa: E402

from glmbench.core import quant  # noqa: E402
from glmbench.core._loader import _core  # noqa: E402
from glmbench.core.quant import QTensor  # noqa: E402

T = gguf.GGMLQuantizationType
FMTS = ["q2_K", "q3_K", "q4_K", "q5_K", "q6_K", "iq4_xs"]
NP_FMTS = ["q4_K", "q5_K", "q6_K", "iq4_xs"]  # the ones tests/kquant_np.py can quantize
GT = {"q2_K": T.Q2_K, "q3_K": T.Q3_K, "q4_K": T.Q4_K, "q5_K": T.Q5_K, "q6_K": T.Q6_K, "iq4_xs": T.IQ4_XS}
BB = {"q2_K": 84, "q3_K": 110, "q4_K": 144, "q5_K": 176, "q6_K": 210, "iq4_xs": 136}
# byte offsets of the f16 scales in a block
SCALE_AT = {"q2_K": (80, 82), "q3_K": (108,), "q4_K": (0, 2), "q5_K": (0, 2), "q6_K": (208,), "iq4_xs": (0,)}
VERSIONS = [v for v, ok in quant.kernels().items() if v.startswith("kquant_") and ok]


def random_blocks(rng, fmt, rows, k):
    """Random bytes as [rows, k] of `fmt` with finite, small f16 scales: every bit pattern of the
    values, scales and mins occurs."""
    nb = k // 256
    a = rng.integers(0, 256, (rows, nb, BB[fmt]), dtype=np.uint8)
    for o in SCALE_AT[fmt]:
        a[:, :, o:o + 2] = rng.uniform(0.001, 0.05, (rows, nb)).astype(np.float16).view(np.uint8).reshape(rows, nb, 2)
    return a.reshape(rows, nb * BB[fmt])


def gguf_deq(data, fmt, k):
    return gguf.quants.dequantize(np.asarray(data).reshape(-1, data.shape[-1]), GT[fmt]).reshape(-1, k)


def q8_K_np(x):
    """ggml's quantize_row_q8_K_ref in NumPy: (d float32 [R, nb], q int8 [R, K], bsums int16 [R, nb*16])."""
    R, K = x.shape
    xb = x.reshape(R, K // 256, 256)
    d = np.zeros(xb.shape[:2], np.float32)
    q = np.zeros(xb.shape, np.int8)
    for r in range(R):
        for b in range(K // 256):
            v = xb[r, b]
            i = int(np.argmax(np.abs(v)))          # the first of largest magnitude, as the strict '>' loop
            mx = v[i]
            if np.abs(mx) == 0:
                continue
            iscale = np.float32(-127.0) / mx
            qq = np.rint(iscale * v)                # nearest_int: round half to even
            q[r, b] = np.minimum(qq, 127).astype(np.int8)
            d[r, b] = np.float32(1.0) / iscale
    bs = q.reshape(R, -1, 16).astype(np.int32).sum(-1).astype(np.int16)
    return d, q.reshape(R, K), bs


def q8_K_core(x):
    """Parse _core.quantize_q8_K's block_q8_K rows (float d, int8 qs[256], int16 bsums[16])."""
    raw = _core.quantize_q8_K(np.ascontiguousarray(x))
    R, K = x.shape
    blk = raw.reshape(R, K // 256, 292)
    d = blk[:, :, :4].copy().view(np.float32)[..., 0]
    q = blk[:, :, 4:260].copy().view(np.int8).reshape(R, K)
    bs = blk[:, :, 260:].copy().view(np.int16).reshape(R, -1)
    return d, q, bs


def xq_deq(x):
    d, q, _ = q8_K_core(x)
    R, K = x.shape
    return (q.reshape(R, K // 256, 256).astype(np.float64) * d[..., None]).reshape(R, K), d


# ---- layout -----------------------------------------------------------------------------------
@pytest.mark.parametrize("fmt", FMTS)
@pytest.mark.parametrize("shape", [(1, 256), (7, 512), (3, 5, 768)])
def test_dequantize_bit_exact_with_gguf(rng, fmt, shape):
    k = shape[-1]
    rows = int(np.prod(shape[:-1]))
    datas = [random_blocks(rng, fmt, rows, k)]
    if fmt in NP_FMTS:
        datas.append(kquant_np.quantize(rng.standard_normal((rows, k)).astype(np.float32), fmt))
    for data in datas:
        qt = QTensor(data.reshape(shape[:-1] + (data.shape[-1],)), fmt, shape)
        y = qt.dequantize()
        assert y.shape == shape and y.dtype == np.float32
        want = gguf_deq(data, fmt, k).astype(np.float32).reshape(shape)
        np.testing.assert_array_equal(y.view(np.uint32), want.view(np.uint32))


@pytest.mark.parametrize("fmt", NP_FMTS)
def test_numpy_quantizer_round_trip_within_one_step(rng, fmt):
    # the test helper's blocks are what they claim: each value within half a step (d*sc) plus the
    # f16-rounded min's slack of its input
    x = rng.standard_normal((4, 512)).astype(np.float32)
    y = gguf_deq(kquant_np.quantize(x, fmt), fmt, 512)
    rel = np.sqrt(np.mean((y - x) ** 2))
    assert rel < {"q4_K": 0.1, "q5_K": 0.05, "q6_K": 0.025, "iq4_xs": 0.1}[fmt]


def test_q8_K_activations_byte_exact_with_ggml_reference(rng):
    x = (rng.standard_normal((5, 768)) * rng.uniform(0.01, 100, (5, 1))).astype(np.float32)
    x[1, 256:512] = 0                      # an all-zero block: d = 0, q = 0
    x[2, 3] = -x[2].max() * 4              # a negative largest value: the scale's sign flips
    x[3, :] = np.float32(0.5) * np.rint(x[3] * 2)  # many exact halves: round half to even
    d, q, bs = q8_K_core(x)
    dn, qn, bsn = q8_K_np(x)
    np.testing.assert_array_equal(d.view(np.uint32), dn.view(np.uint32))
    np.testing.assert_array_equal(q, qn)
    np.testing.assert_array_equal(bs, bsn)
    assert np.all(d[1, 1] == 0) and np.all(q[1, 256:512] == 0)


# ---- kernels ----------------------------------------------------------------------------------
def _check_linear(rng, fmt, w, x, kernel="auto", bias=None):
    return quant_cases.check_linear(fmt, w, x, gguf_deq, xq_deq, 256, 1e-4, kernel, bias)


@pytest.mark.parametrize("fmt", FMTS)
@pytest.mark.parametrize("T_,N,K", [(1, 1, 256), (1, 37, 512), (3, 16, 768), (17, 33, 256), (70, 5, 512),
                                      (64, 16, 256), (129, 33, 768)])
def test_linear_every_version_against_float64(rng, fmt, T_, N, K):
    quant_cases.linear_every_version(rng, fmt, T_, N, K, random_blocks, functools.partial(_check_linear, rng), VERSIONS)


@pytest.mark.parametrize("fmt", FMTS)
def test_decode_vector_and_compute_f32(rng, fmt):
    w = (kquant_np.quantize(rng.standard_normal((24, 512)).astype(np.float32), fmt) if fmt in NP_FMTS
         else random_blocks(rng, fmt, 24, 512))
    qt = QTensor(w, fmt, (24, 512))
    x = rng.standard_normal(512).astype(np.float32)
    y = quant.linear(x, qt)
    assert y.shape == (24,)
    yf = quant.linear(x, qt, compute="f32")
    ref = x.astype(np.float64) @ qt.dequantize().astype(np.float64).T
    np.testing.assert_allclose(yf, ref, rtol=1e-5, atol=1e-5 * np.abs(ref).max())
    assert np.abs(y - ref).max() < 0.02 * np.abs(ref).max()


@pytest.mark.parametrize("fmt", FMTS)
def test_views_and_unaligned_rows(rng, fmt):
    x = quant_cases.views_and_unaligned_rows(rng, fmt, 512, random_blocks, functools.partial(_check_linear, rng))
    assert x.flags.owndata and np.all(np.isfinite(x))


@pytest.mark.parametrize("fmt", FMTS)
def test_all_zero_scales_block(rng, fmt):
    K, N = 768, 4
    w = random_blocks(rng, fmt, N, K)
    blk = w.reshape(N, 3, BB[fmt])
    for o in SCALE_AT[fmt]:
        blk[1, 1, o:o + 2] = 0                         # row 1, block 1: d = dmin = 0 -> all zeros
    qt = QTensor(w, fmt, (N, K))
    assert np.all(qt.dequantize()[1, 256:512] == 0)
    x = rng.standard_normal((2, K)).astype(np.float32)
    x[0, :256] = 0                                     # and an all-zero activation block
    outs = [_check_linear(rng, fmt, w, x, v) for v in VERSIONS]
    for o in outs[1:]:
        np.testing.assert_array_equal(o, outs[0])


@pytest.mark.parametrize("fmt", FMTS)
@pytest.mark.parametrize("bad", [np.inf, np.nan])
def test_non_finite_scale_propagates_as_ggml(rng, fmt, bad):
    """A NaN/Inf f16 scale is not checked (ggml does not either): the rows that read that block
    come out non-finite, every other row is exact."""
    K, N = 512, 5
    w = random_blocks(rng, fmt, N, K)
    o = SCALE_AT[fmt][0]
    w.reshape(N, 2, BB[fmt])[2, 1, o:o + 2] = np.array([bad], np.float16).view(np.uint8)
    x = rng.standard_normal((3, K)).astype(np.float32)
    for v in VERSIONS:
        y = quant_cases.bad_block_row_2(x, w, fmt, N, K, v)
        assert not np.any(np.isfinite(y[:, 2]))
    assert not np.all(np.isfinite(QTensor(w, fmt, (N, K)).dequantize()[2]))


def test_errors_are_clear(rng):
    w = random_blocks(rng, "q4_K", 4, 256)
    qt = QTensor(w, "q4_K", (4, 256))
    with pytest.raises(ValueError, match="multiple"):
        QTensor(np.zeros((4, 72), np.uint8), "q4_K", (4, 128))
    with pytest.raises(NotImplementedError, match="no q4_K quantizer"):
        quant.quantize(np.zeros((2, 256), np.float32), "q4_K")
    with pytest.raises(NotImplementedError, match="no q6_K quantizer"):
        quant.quantize_chunks([np.zeros(512, np.float32)], (2, 256), "q6_K")
    with pytest.raises(ValueError, match="does not read q4_K"):
        quant.linear(np.zeros(256, np.float32), qt, kernel="qgemm_vnni")
    with pytest.raises(ValueError, match="reads K-quant"):
        q8 = quant.quantize(np.ones((2, 32), np.float32), "q8_0")
        quant.linear(np.zeros(32, np.float32), q8, kernel="kquant_ref")
    with pytest.raises(ValueError, match="NaN"):
        quant.linear(np.full(256, np.nan, np.float32), qt)
    with pytest.raises(ValueError, match="in_features"):
        quant.linear(np.zeros(512, np.float32), qt)
    with pytest.raises(ValueError, match="multiple of 256"):
        _core.klinear(np.zeros((1, 128), np.float32), np.zeros((1, 72), np.uint8), 12, 128)
    before = w.copy()
    assert qt.repack() is qt and qt.packed is not None  # q4_K: a repacked copy beside the stored bytes
    assert qt.data is w and np.array_equal(w, before)  # the stored bytes are kept and never written


def test_moe_experts_on_k_quants(rng):
    E, F, D = 4, 256, 256
    def qk(fmt, shape):
        return QTensor(kquant_np.quantize((rng.standard_normal(shape) * 0.1).astype(np.float32), fmt), fmt, shape)
    wg, wu, wd = qk("q4_K", (E, F, D)), qk("q5_K", (E, F, D)), qk("q6_K", (E, D, F))
    quant_cases.moe_experts_against_float64(rng, wg, wu, wd, D)


# ---- GGUF files -------------------------------------------------------------------------------
def _k_quantize(orig, data, qtype):
    name = {T.Q4_K: "q4_K", T.Q5_K: "q5_K", T.Q6_K: "q6_K", T.IQ4_XS: "iq4_xs"}.get(qtype)
    return kquant_np.quantize(data, name) if name else orig(data, qtype)


@pytest.mark.parametrize("fmt", FMTS)
def test_gguf_tensor_of_each_type_loads_as_stored(rng, tmp_path, fmt):
    a = rng.standard_normal((12, 512)).astype(np.float32)
    q = kquant_np.quantize(a, fmt) if fmt in NP_FMTS else random_blocks(rng, fmt, 12, 512)
    stored = quant_cases.gguf_tensor_as_stored(tmp_path, fmt, q, GT[fmt], 512)
    x = rng.standard_normal((2, 512)).astype(np.float32)
    _check_linear(rng, fmt, stored, x)


@pytest.mark.parametrize("mt", ["qwen3", "qwen3_moe", "glm4_moe_lite"])
def test_k_quant_gguf_model_runs_as_stored(tmp_path, mt, monkeypatch):
    """A Q4_K_M-like mix (q4_K matrices, q6_K ffn_down and output, q5_K attn_v, iq4_xs attn_q)
    written by the gguf package: the tensors stay K-quant QTensors (no dequantize warning for them), and the model's
    logits equal those of the same model built from the file's dequantized values, within float32
    summation order (compute='f32') and within the q8_K activations' error (the default)."""
    import gguf_writer
    import glmbench
    from glmbench.models import checkpoint
    from test_model_hf import rel_err, tiny_hf_model
    monkeypatch.setattr(gguf.quants, "quantize", functools.partial(_k_quantize, gguf.quants.quantize))
    over = dict(hidden_size=256, intermediate_size=512, head_dim=64, num_attention_heads=4, num_key_value_heads=2,
                num_hidden_layers=2)
    if mt == "qwen3_moe":
        over.update(moe_intermediate_size=256, num_experts=4, num_experts_per_tok=2)
    if mt == "glm4_moe_lite":  # MLA (kv_b split into k_b/v_b by the converter), sigmoid-routed experts
        over = dict(hidden_size=256, intermediate_size=512, moe_intermediate_size=256, num_hidden_layers=2,
                    q_lora_rank=256, kv_lora_rank=256)
    cfg, model = tiny_hf_model(mt, **over)
    p = str(tmp_path / "k.gguf")

    def types(n, s):
        return (T.Q6_K if ("ffn_down" in n or n == "output.weight") else T.Q5_K if "attn_v" in n
                else T.IQ4_XS if "attn_q." in n else T.Q4_K)
    gguf_writer.write(p, cfg, model.state_dict(), types=types)
    with warnings.catch_warnings(record=True) as w:
        warnings.simplefilter("always")
        c, sd = checkpoint.state_dict(p)
    assert not [x for x in w if "dequantized" in str(x.message)]
    fmts = {getattr(v, "fmt", None) for v in sd.values()}
    assert ({"q4_K", "q6_K"} if mt == "glm4_moe_lite" else {"q4_K", "q5_K", "q6_K", "iq4_xs"}) <= fmts
    m = glmbench.Model(c, sd, weights="stored", kv="f32", max_context=16)
    assert isinstance(m.embed, QTensor) and m.embed.fmt == "q4_K"
    deq = {k: (v.dequantize() if hasattr(v, "dequantize") else np.asarray(v, np.float32)) for k, v in sd.items()}
    ref = glmbench.Model(c, deq, weights="f32", kv="f32", max_context=16)
    prompt = np.array([1, 5, 9, 33])
    b = ref.prefill(prompt)
    a = m.prefill(prompt)
    assert rel_err(a, b) < 0.05                      # q8_K activations
    assert rel_err(m.decode(7), ref.decode(7)) < 0.05
    monkeypatch.setattr(quant, "linear", functools.partial(quant.linear, compute="f32"))
    monkeypatch.setattr(quant, "moe_experts", functools.partial(quant.moe_experts, compute="f32"))  # not the C kmoe
    m2 = glmbench.Model(c, sd, weights="stored", kv="f32", max_context=16)
    ref2 = glmbench.Model(c, deq, weights="f32", kv="f32", max_context=16)
    assert rel_err(m2.prefill(prompt), ref2.prefill(prompt)) < 1e-4


@pytest.mark.parametrize("fmt", FMTS)
def test_threads_do_not_change_a_bit(rng, fmt):
    quant_cases.threads_do_not_change_a_bit(rng, fmt, random_blocks)


def test_measure_runs_a_k_quant_gguf_as_stored(tmp_path, monkeypatch):
    """`glmbench measure model.gguf` on a K-quant file: the records name the file's main type and
    its own bytes (not an f32 copy), and no tensor of these types is dequantized on load."""
    import gguf_writer
    from glmbench.measure.cpu import measure
    from test_model_hf import tiny_hf_model
    monkeypatch.setattr(gguf.quants, "quantize", functools.partial(_k_quantize, gguf.quants.quantize))
    cfg, model = tiny_hf_model("qwen3", hidden_size=256, intermediate_size=512, head_dim=64, num_attention_heads=4,
                               num_key_value_heads=2, num_hidden_layers=2)
    p = str(tmp_path / "k.gguf")
    gguf_writer.write(p, cfg, model.state_dict(),
                      types=lambda n, s: T.Q6_K if n == "output.weight" else T.Q4_K)
    with warnings.catch_warnings(record=True) as w:
        warnings.simplefilter("always")
        recs = measure(p, depths=(0,), n_prompt=8, n_gen=2, repeats=1, warmup=0, threads=1, progress=False)
    assert not [x for x in w if "dequantized" in str(x.message)]
    by = {r["test"]: r for r in recs}
    assert {"pp", "tg", "mem"} <= set(by)
    assert all(r["weights"] == "q4_K" and r["stored_weights"] for r in recs)
    assert by["pp"]["avg_ts"] > 0 and by["tg"]["avg_ts"] > 0
    # packed block formats: a decode step runs each layer as one C call, a prefill op by op
    assert by["tg"]["layer_exec"] == "c-layer" and by["pp"]["layer_exec"] == "python-ops"
    from glmbench.models import gguf_file
    assert by["mem"]["model_size"] == gguf_file.read(p).tensor_bytes


@pytest.mark.skipif(not os.path.exists("/proc/self/statm"), reason="needs /proc (Linux)")
def test_inputs_unchanged_and_no_leaks(rng):
    """Inputs come back unchanged; 300 calls of each path (decode, 16-token groups, panels,
    dequantize, an error) leave RSS and the C core's workspace ledger (every scratch buffer the
    kernels take) where they were."""
    w = random_blocks(rng, "q4_K", 20, 512)
    w0 = w.copy()
    qt = QTensor(w, "q4_K", (20, 512))
    xs = {t: rng.standard_normal((t, 512)).astype(np.float32) for t in (1, 16, 64)}
    x0 = {t: v.copy() for t, v in xs.items()}
    bad = xs[1].copy()
    bad[0, 3] = np.nan

    def err():
        with pytest.raises(ValueError):
            quant.linear(bad, qt)
    calls = [lambda t=t: quant.linear(xs[t], qt) for t in xs] + [qt.dequantize, err]
    quant_cases.calls_leave_no_trace(calls)
    np.testing.assert_array_equal(w, w0)
    for t in xs:
        np.testing.assert_array_equal(xs[t], x0[t])


# ---- the repacked layout (q4_K, q5_K, q6_K, iq4_xs) -------------------------------------------------
KP = FMTS  # every K format has a repacked layout
KV = {"kquant_ref": 1, "kquant_vnni": 2, "kquant_avx2": 3}


@pytest.mark.parametrize("fmt", KP)
def test_repacked_equals_stored_bit_for_bit(rng, fmt):
    fid = quant.FORMATS[fmt][0]
    quant_cases.repacked_equals_stored(
        rng, fmt, random_blocks, VERSIONS,
        lambda x, w, v, b: _core.klinear(x, w, fid, x.shape[1], b, KV[v]),
        lambda x, qt, v, b: quant.linear(x, qt, b, kernel=v))


@pytest.mark.parametrize("fmts", [("q4_K", "q4_K", "q6_K"), ("q5_K", "q4_K", "q5_K"), ("iq4_xs", "iq4_xs", "iq4_xs"),
                                  ("q2_K", "q3_K", "q3_K"), ("q6_K", "q6_K", "q4_K"), ("q4_K", "q6_K", "q6_K")])
def test_repacked_experts_equal_stored(rng, fmts):
    def kmoe(x, idx, wt, ws, packed):
        E = ws[0].shape[0]
        if packed:
            for w in ws:
                w.repack()
        arr = [(w.packed if packed else w.data).reshape(E, -1) for w in ws]
        return _core.kmoe(x, idx, wt, *arr, *(quant.FORMATS[w.fmt][0] for w in ws), ws[0].shape[1], 0, packed)
    quant_cases.repacked_experts_equal_stored(rng, fmts, random_blocks, kmoe)


def test_repack_errors_are_clear(rng):
    w = random_blocks(rng, "q4_K", 4, 256)
    with pytest.raises(ValueError, match="to repack"):
        _core.krepack(np.zeros((4, 34), np.uint8), 8, 32, 4)  # q8_0: csrc/qgemm.c's layout, not this one
    with pytest.raises(ValueError, match="whole matrices"):
        _core.krepack(w, 12, 256, 3)
    with pytest.raises(ValueError, match="packed bytes"):
        _core.klinear_packed(np.zeros((1, 256), np.float32), np.zeros(100, np.uint8), 12, 4, 256)
    with pytest.raises(ValueError, match="1-D"):
        QTensor(w[0], "q4_K", (256,)).repack()
    g = np.zeros((2, 4 * 144), np.uint8)
    with pytest.raises(ValueError, match="repacked bytes"):
        _core.kmoe(np.zeros((1, 256), np.float32), np.zeros((1, 1), np.int64), np.ones((1, 1), np.float32), g, g, g, 12, 12, 12, 256,
                   0, True)


@pytest.mark.parametrize("fmt", ["q4_K", "q6_K", "mxfp4"])
def test_non_finite_bias_and_expert_weights_are_errors(rng, fmt):
    """A NaN/inf bias (klinear, klinear_packed) or topk_weight (kmoe, stored and repacked) was taken
    as given: the rows it touched came back NaN/inf with no error, where glmbench.linear /
    moe_experts with float weights raise. Now the same ValueError naming the argument."""
    K = 256
    blocks = (lambda rows, k: random_blocks(rng, fmt, rows, k)) if fmt in BB else \
        (lambda rows, k: quant.quantize_mxfp4(rng.standard_normal((rows, k)).astype(np.float32)))
    w = QTensor(blocks(16, K), fmt, (16, K))
    x = rng.standard_normal((3, K)).astype(np.float32)
    b = np.zeros(16, np.float32)
    b[7] = np.nan
    with pytest.raises(ValueError, match=r"`bias` contains NaN at flat index 7"):
        _core.klinear(x, w.data, quant._fmt_id(fmt), K, b, 0)               # the stored rows
    for rows in (x, x[:1]):
        with pytest.raises(ValueError, match=r"`bias` contains NaN at flat index 7"):
            quant.linear(rows, w, b)                                        # repacked
    E, F, D = 3, 256, 256
    g = QTensor(np.stack([blocks(F, D) for _ in range(E)]), fmt, (E, F, D))
    u = QTensor(np.stack([blocks(F, D) for _ in range(E)]), fmt, (E, F, D))
    d = QTensor(np.stack([blocks(D, F) for _ in range(E)]), fmt, (E, D, F))
    idx = np.array([[0, 1], [2, 0], [1, 2]], np.int64)
    tw = np.full((3, 2), 0.5, np.float32)
    tw[2, 1] = np.inf
    args = (g.data.reshape(E, -1), u.data.reshape(E, -1), d.data.reshape(E, -1), *[quant._fmt_id(fmt)] * 3, F, 0)
    with pytest.raises(ValueError, match=r"`topk_weight` contains inf at flat index 5"):
        _core.kmoe(x, idx, tw, *args)                                       # the stored experts
    for n in (3, 1):
        t = tw[:n].copy()
        t[-1, 1] = np.inf
        with pytest.raises(ValueError, match=rf"`topk_weight` contains inf at flat index {2 * n - 1}"):
            quant.moe_experts(x[:n], idx[:n], t, g, u, d)                   # repacked

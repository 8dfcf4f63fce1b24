"""MLA's kv_b as GGUF deepseek2 files store it: attn_k_b [H, R, Dn] and attn_v_b [H, Dv, R], kept
split in their own formats (core.attention.KVBSplit) and read as stored by the decode products
(csrc/attention_mla.c, gb_mla_attention_kb_vb); prefill joins them to float32 per call. Checked
against the joined path (the same numbers for float formats and at prefill), the float64 reference
(decode with quantized formats: within the activations' per-block quantization, as ggml runs them)
and a GGUF written the way llama.cpp's converter writes one."""
import warnings

import numpy as np
import pytest

import kquant_np
from glmbench.core._loader import _core
from glmbench.core.attention import KVBSplit, mla_attention
from glmbench.core.kvcache import KVCache
from glmbench.core import quant
from glmbench.core.quant import QTensor, quantize
from glmbench.models.model import to_format

gguf = pytest.importorskip("gguf", reason="GGUF tests need the gguf package")
T = gguf.GGMLQuantizationType

H, R, Dn, Dv, Dr, L = 3, 256, 64, 96, 32, 41


def _cache(rng, kv="f32"):
    c = KVCache.mla(1, 64, R, Dr, kv=kv)
    c.append(0, rng.standard_normal((L, R)).astype(np.float32), rng.standard_normal((L, Dr)).astype(np.float32))
    return c


def _weights(rng):
    kb = (rng.standard_normal((H, R, Dn)) / np.sqrt(Dn)).astype(np.float32)
    vb = (rng.standard_normal((H, Dv, R)) / np.sqrt(R)).astype(np.float32)
    return kb, vb


def _q(a, fmt):
    rows = a.reshape(-1, a.shape[-1])
    data = kquant_np.quantize(rows, fmt) if fmt.endswith("_K") else quantize(rows, fmt).data
    return QTensor(np.ascontiguousarray(data).reshape(a.shape[:-1] + (-1,)), fmt, a.shape)


def _reference(c, kv_b, qn, qr):
    """float64 absorbed attention with the joined kv_b [H*(Dn+Dv), R], every query the last token's."""
    lat, kr = (np.asarray(a, np.float64) for a in c.read(0))
    w = np.asarray(kv_b, np.float64).reshape(H, Dn + Dv, R)
    T_ = qn.shape[0]
    out = np.zeros((T_, H, Dv))
    s = 1 / np.sqrt(Dn + Dr)
    for t in range(T_):
        n = L - T_ + t + 1
        for h in range(H):
            sc = (lat[:n] @ (w[h, :Dn].T @ qn[t, h]) + kr[:n] @ qr[t, h]) * s
            p = np.exp(sc - sc.max())
            out[t, h] = w[h, Dn:] @ ((p / p.sum()) @ lat[:n])
    return out


def test_q5_0_is_kept_as_exact_q8_0():
    from glmbench.models.checkpoint import _q5_0_as_q8_0
    rng = np.random.default_rng(0)
    x = rng.standard_normal((9, 96)).astype(np.float32)
    x[2, :32] = 0          # a block with a zero scale
    x[4, 32:64] *= 1e-4    # a tiny one
    q = gguf.quants.quantize(x, T.Q5_0)
    got = QTensor(_q5_0_as_q8_0(q), "q8_0", x.shape).dequantize()
    np.testing.assert_array_equal(got, gguf.quants.dequantize(q, T.Q5_0))
    q3 = q.reshape(3, 3, -1)   # leading axes kept
    assert _q5_0_as_q8_0(q3).shape == (3, 3, 96 // 32 * 34)


@pytest.mark.parametrize("fmt", ["f32", "bf16", "f16"])
@pytest.mark.parametrize("strategy", ["flash", "absorbed", "naive"])
@pytest.mark.parametrize("T_", [1, 4])
def test_float_split_equals_joined(fmt, strategy, T_):
    rng = np.random.default_rng(1)
    c = _cache(rng)
    kb, vb = (to_format(a, fmt) for a in _weights(rng))
    sp = KVBSplit(kb, vb)
    joined = sp.joined()
    assert joined.shape == sp.shape == (H * (Dn + Dv), R) and sp.fmt == f"{fmt}+{fmt}"
    np.testing.assert_array_equal(joined.reshape(H, Dn + Dv, R)[:, :Dn],
                                  to_format(kb, "f32").transpose(0, 2, 1))
    qn = rng.standard_normal((T_, H, Dn)).astype(np.float32)
    qr = rng.standard_normal((T_, H, Dr)).astype(np.float32)
    a = mla_attention(qn, qr, c, 0, sp, v_head_dim=Dv, strategy=strategy)
    b = mla_attention(qn, qr, c, 0, joined, v_head_dim=Dv, strategy=strategy)
    ref = _reference(c, joined, qn, qr)
    assert np.abs(a - ref).max() <= 1e-5 * np.abs(ref).max()
    assert np.abs(a - b).max() <= 1e-5 * np.abs(ref).max()


@pytest.mark.parametrize("kf,vf", [("q8_0", "q4_K"), ("q4_0", "q8_0"), ("bf16", "q6_K"), ("q8_0", "mxfp4")])
@pytest.mark.parametrize("strategy", ["flash", "absorbed"])
def test_quantized_split_decode_reads_the_stored_rows(kf, vf, strategy):
    rng = np.random.default_rng(2)
    c = _cache(rng, kv="f16")
    kb, vb = _weights(rng)
    kq = to_format(kb, kf) if kf == "bf16" else _q(kb, kf)
    vq = _q(vb, vf)
    sp = KVBSplit(kq, vq)
    assert sp.nbytes == kq.nbytes + vq.nbytes
    joined = sp.joined()
    # the join is the formats' own dequantization
    want_v = vq.dequantize()
    np.testing.assert_array_equal(joined.reshape(H, Dn + Dv, R)[:, Dn:], want_v)
    qn = rng.standard_normal((1, H, Dn)).astype(np.float32)
    qr = rng.standard_normal((1, H, Dr)).astype(np.float32)
    ref = _reference(c, joined, qn, qr)
    got = mla_attention(qn, qr, c, 0, sp, v_head_dim=Dv, strategy=strategy)
    # decode: the activations quantized per block (q8_0 / q8_K) as ggml does; f16 cache
    err = np.abs(got - ref).max() / np.abs(ref).max()
    assert err < 3e-2, err
    # a K-format v_b is read repacked (16-row groups): bit-identical to its stored rows' GEMV
    kp = sp.packed_k()
    if vf.endswith("_K"):
        assert sp.packed_v() is not None
        stored = _core.mla_attention_kb_vb(qn, qr, c, 0, *sp._args(), Dv, 0.0, strategy, k_packed=kp)
        np.testing.assert_array_equal(got, stored)
    else:
        assert sp.packed_v() is None
    # a q8_0/q4_0 k_b is read packed per head (qgemm's layout): the same integer dots as its stored rows,
    # the float32 sums in another order, so within float32 rounding of the stored rows' path; one copy,
    # made once
    if kf in ("q8_0", "q4_0"):
        assert kp is not None and kp.shape == (H, 16 * -(-R // 16) * quant.row_bytes(kf, Dn)) and sp.packed_k() is kp
        rows = _core.mla_attention_kb_vb(qn, qr, c, 0, *sp._args(), Dv, 0.0, strategy, v_packed=sp.packed_v())
        assert np.abs(got - rows).max() <= 1e-5 * np.abs(rows).max()
        np.testing.assert_array_equal(kp, _core.qrepack(kq.data, quant._fmt_id(kf), Dn))
    else:
        assert kp is None
    # not the joined path in disguise: the float32 products differ from the integer ones
    joined_out = mla_attention(qn, qr, c, 0, joined, v_head_dim=Dv, strategy=strategy)
    if kf != "bf16":
        assert not np.array_equal(got, joined_out)
    # prefill: the joined path, the same numbers
    q3 = rng.standard_normal((3, H, Dn)).astype(np.float32), rng.standard_normal((3, H, Dr)).astype(np.float32)
    np.testing.assert_array_equal(mla_attention(*q3, c, 0, sp, v_head_dim=Dv, strategy=strategy),
                                  mla_attention(*q3, c, 0, joined, v_head_dim=Dv, strategy=strategy))


def test_bad_split_is_one_clear_error():
    rng = np.random.default_rng(3)
    kb, vb = _weights(rng)
    with pytest.raises(ValueError, match="disagree"):
        KVBSplit(kb, vb[:, :, :-1])
    with pytest.raises(TypeError, match="k_b"):
        KVBSplit(kb.astype(np.float64), vb)
    c = _cache(rng)
    qn = np.zeros((1, H, Dn), np.float32)
    qr = np.zeros((1, H, Dr), np.float32)
    # a format id that disagrees with the array's dtype
    with pytest.raises(TypeError, match="k_b"):
        _core.mla_attention_kb_vb(qn, qr, c, 0, kb, 8, vb, 0, Dv)
    # rows that are not whole blocks of the format
    with pytest.raises(ValueError, match="k_b"):
        _core.mla_attention_kb_vb(qn, qr, c, 0, np.zeros((H, R, 10), np.uint8), 12, vb, 0, Dv)
    with pytest.raises(ValueError, match="v_b"):
        _core.mla_attention_kb_vb(qn, qr, c, 0, kb, 0, vb[:2], 0, Dv)
    # a repacked v_b only for a K format, of the right size
    with pytest.raises(ValueError, match="v_packed"):
        _core.mla_attention_kb_vb(qn, qr, c, 0, kb, 0, vb, 0, Dv, v_packed=np.zeros((H, 10), np.uint8))
    vq = _q(vb, "q4_K")
    with pytest.raises(ValueError, match="v_packed"):
        _core.mla_attention_kb_vb(qn, qr, c, 0, kb, 0, vq.data, 12, Dv, v_packed=np.zeros((H, 10), np.uint8))
    # a packed k_b only for q8_0/q4_0, of the right size; inputs untouched
    with pytest.raises(ValueError, match="k_packed"):
        _core.mla_attention_kb_vb(qn, qr, c, 0, kb, 0, vb, 0, Dv, k_packed=np.zeros((H, 10), np.uint8))
    kq = _q(kb, "q8_0")
    kp = KVBSplit(kq, vb).packed_k()
    with pytest.raises(ValueError, match="k_packed"):
        _core.mla_attention_kb_vb(qn, qr, c, 0, kq.data, 8, vb, 0, Dv, k_packed=kp[:, :-1])
    with pytest.raises(ValueError, match="k_packed"):
        _core.mla_attention_kb_vb(qn, qr, c, 0, kq.data, 8, vb, 0, Dv, k_packed=kp[:-1])
    with pytest.raises(TypeError, match="k_packed"):
        _core.mla_attention_kb_vb(qn, qr, c, 0, kq.data, 8, vb, 0, Dv, k_packed=kp.astype(np.int16))
    kp0 = kp.copy()
    _core.mla_attention_kb_vb(qn, qr, c, 0, kq.data, 8, vb, 0, Dv, k_packed=kp)
    np.testing.assert_array_equal(kp, kp0)


def test_gguf_split_q5_0_k_b_runs_as_stored(tmp_path):
    """A GLM-shaped GGUF with attn_k_b q5_0 and attn_v_b q8_0 (llama-quantize's choice for k_b):
    both kept split (q5_0 as its exact q8_0 twin, no dequantization warning for them); prefill
    equals the model built from the joined f32 kv_b, decode is close to it."""
    import gguf_writer
    from test_model_hf import rel_err, tiny_hf_model
    import glmbench
    from glmbench.models import checkpoint
    cfg_hf, model = tiny_hf_model("glm4_moe_lite", qk_nope_head_dim=32)   # k_b rows of whole q5_0 blocks
    p = str(tmp_path / "glm.gguf")
    types = lambda n, s: T.Q5_0 if "attn_k_b" in n else T.Q8_0 if "attn_v_b" in n else T.F32
    gguf_writer.write(p, cfg_hf, model.state_dict(), types=types)
    with warnings.catch_warnings():
        warnings.simplefilter("error")    # nothing dequantized
        cfg, sd = checkpoint.state_dict(p)
    kvb = [v for k, v in sd.items() if k.endswith("kv_b_proj.weight")]
    assert kvb and all(isinstance(v, KVBSplit) and v.fmt == "q8_0+q8_0" for v in kvb)
    m = glmbench.Model(cfg, sd, weights="stored", kv="f32", max_context=16)
    joined = {k: (v.joined() if isinstance(v, KVBSplit) else v) for k, v in sd.items()}
    ref = glmbench.Model(cfg, joined, weights="stored", kv="f32", max_context=16)
    assert m.weight_bytes < ref.weight_bytes
    prompt = np.array([1, 5, 9, 33])
    np.testing.assert_array_equal(m.prefill(prompt), ref.prefill(prompt))
    for t in (7, 2):
        assert rel_err(m.decode(t), ref.decode(t)) < 2e-2
    # weights= a format converts the split pair like any matrix (joined, then that format)
    q = glmbench.Model(cfg, sd, weights="f32", kv="f32", max_context=16)
    w = q.layers[0].attn["kv_b_proj.weight"]
    assert isinstance(w, np.ndarray) and w.dtype == np.float32

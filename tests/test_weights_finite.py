"""NaN / inf in weights: refused once, at load, with one error naming the file, the tensor and where in it
(a float tensor's flat index; a block format's block), never propagated to the logits. The C ops check their
activations per call, not their weights (docs/API.md "Ops"): Model and the checkpoint loaders check them.
Inputs (arrays, files) are never modified."""
import os
import sys
import warnings

import numpy as np
import pytest

sys.path.insert(0, os.path.dirname(__file__))
import gguf  # noqa: E402

from glmbench.core import quant  # noqa: E402
from glmbench.core.attention import KVBSplit  # noqa: E402
from glmbench.core.quant import QTensor, nonfinite  # noqa: E402

T = gguf.GGMLQuantizationType
GT = {"q8_0": T.Q8_0, "q4_0": T.Q4_0, "q2_K": T.Q2_K, "q3_K": T.Q3_K, "q4_K": T.Q4_K, "q5_K": T.Q5_K,
      "q6_K": T.Q6_K, "iq4_xs": T.IQ4_XS, "iq4_nl": T.IQ4_NL, "mxfp4": T.MXFP4}


@pytest.mark.parametrize("fmt", list(GT))
def test_the_block_named_is_the_first_whose_values_are_not_finite(fmt):
    """Random bytes in every field (a random f16 scale is NaN / inf one time in 32; a random mxfp4 exponent
    overflows its large codes from 253 on): the block nonfinite() names is the first whose values the gguf
    package's own dequantize gives as NaN / inf, and None where every value is finite. The bytes are not
    modified."""
    rng = np.random.default_rng(GT[fmt].value)
    qk, bb = gguf.GGML_QUANT_SIZES[GT[fmt]]
    seen = set()
    for trial in range(150):
        rows, nb = 3, 2
        data = rng.integers(0, 256, (rows, nb * bb), dtype=np.uint8)
        before = data.copy()
        with np.errstate(all="ignore"):
            vals = gguf.quants.dequantize(data, GT[fmt]).reshape(rows * nb, qk)
        bad_blocks = np.flatnonzero(~np.isfinite(vals).all(axis=1))
        got = nonfinite(QTensor(data, fmt, (rows, nb * qk)))
        if bad_blocks.size == 0:
            assert got is None, (trial, got)
        else:
            b = int(bad_blocks[0])
            assert got is not None and f" block {b} (row {b // nb})" in got, (trial, got, bad_blocks)
        seen.add(bad_blocks.size > 0)
        assert np.array_equal(data, before)
    assert seen == {True, False}


def test_float_arrays_every_dtype_and_position():
    rng = np.random.default_rng(0)
    for dt in (np.float32, np.float16, np.float64, "bf16"):
        a = rng.standard_normal(5000).astype(np.float32)
        arr = (a.view(np.uint32) >> 16).astype(np.uint16) if dt == "bf16" else a.astype(dt)
        assert nonfinite(arr) is None
        big = np.finfo(np.float16 if dt == np.float16 else np.float32).max
        edge = arr.copy()
        edge[0] = (np.array([big], np.float32).view(np.uint32) >> 16).astype(np.uint16)[0] if dt == "bf16" else big
        assert nonfinite(edge) is None    # the largest finite value passes (bf16: its truncation)
        for pos in (0, 4095, 4999):
            for v, word in ((np.nan, "NaN"), (np.inf, "inf"), (-np.inf, "inf")):
                b = arr.copy()
                b[pos] = (np.array([v], np.float32).view(np.uint32) >> 16).astype(np.uint16)[0] if dt == "bf16" else v
                keep = b.copy()
                assert nonfinite(b.reshape(50, 100)) == f"{word} at flat index {pos}"
                assert np.array_equal(b.view(np.uint8), keep.view(np.uint8))
    ks = KVBSplit(np.ones((2, 8, 4), np.float32), np.ones((2, 3, 8), np.float32))
    ks.v_b[1, 2, 7] = np.nan
    assert nonfinite(ks) == "v_b: NaN at flat index 47"


# ---- the Model API -----------------------------------------------------------------------------------
def _tiny(mt="qwen3", **kw):
    pytest.importorskip("transformers")
    from test_model_hf import tiny_hf_model
    return tiny_hf_model(mt, **kw)


@pytest.mark.parametrize("weights", ["f32", "bf16", "q8_0", "stored"])
def test_model_refuses_a_state_dict_weight_that_is_not_finite(weights):
    """An rms_norm weight with a NaN (was: NaN logits, no error) and a q8_0 matrix whose block scale is inf: one
    ValueError naming the tensor; the state dict not modified."""
    import glmbench
    from glmbench.models import configs
    cfg, model = _tiny()
    c = configs.load(cfg.to_dict())
    sd = {k: v.numpy().copy() for k, v in model.state_dict().items()}
    glmbench.Model(c, sd, weights=weights, kv="f32", max_context=8)   # finite: loads
    name = "model.layers.1.input_layernorm.weight"
    sd[name][3] = np.nan
    before = {k: v.copy() for k, v in sd.items()}
    with pytest.raises(ValueError, match=rf"^weight '{name}' holds NaN at flat index 3; a weight must be finite$"):
        glmbench.Model(c, sd, weights=weights, kv="f32", max_context=8)
    assert all(np.array_equal(sd[k], before[k], equal_nan=True) for k in sd)
    sd[name][3] = 1.0
    name = "model.layers.0.mlp.down_proj.weight"
    q = quant.quantize(sd[name], "q8_0")
    q.data[2, 34 * 1:34 * 1 + 2] = np.array([np.inf], np.float16).view(np.uint8)   # row 2's second block: d = inf
    sd[name] = q
    with pytest.raises(ValueError, match=rf"^weight '{name}' holds an inf f16 scale d in block "
                                         rf"{2 * q.shape[1] // 32 + 1} \(row 2\); a weight must be finite$"):
        glmbench.Model(c, sd, weights=weights, kv="f32", max_context=8)


# ---- GGUF and safetensors files ------------------------------------------------------------------------
def _poke(path, offset, data: bytes):
    raw = bytearray(open(path, "rb").read())
    raw[offset:offset + len(data)] = data
    open(path, "wb").write(bytes(raw))
    return bytes(raw)


F16_NAN = np.array([np.nan], np.float16).tobytes()


@pytest.mark.parametrize("typ", [T.Q8_0, T.Q4_0, T.Q5_0, T.MXFP4, T.F16, T.BF16, T.F32])
def test_gguf_weight_not_finite_is_one_error_naming_file_tensor_and_block(tmp_path, typ):
    import gguf_writer
    from glmbench.models import checkpoint, gguf_file
    cfg, model = _tiny()
    p = str(tmp_path / "m.gguf")
    gguf_writer.write(p, cfg, model.state_dict(), types=lambda n, s: typ if "ffn_down" in n else T.F32)
    name = "blk.1.ffn_down.weight"
    t = gguf_file.read(p).tensors[name]
    assert t.type_name == typ.name
    qk, bb = gguf.GGML_QUANT_SIZES[typ]
    off = t.offset + 5 * bb            # the sixth block (the sixth value of a float tensor)
    if typ == T.MXFP4:                 # e = 255 and every code +-12 (nibble 7 / 15): 12 x 2^127 is past float32
        raw = _poke(p, off, b"\xff" + b"\x7f" * 16)
        want = r"holds values past float32 \(inf\) in block 5 \(row \d+\), from its E8M0 scale e = 255"
    elif typ in (T.F16, T.BF16, T.F32):
        raw = _poke(p, off, {T.F16: F16_NAN, T.BF16: b"\xc0\x7f", T.F32: np.array([np.inf], np.float32).tobytes()}[typ])
        want = "holds inf at flat index 5" if typ == T.F32 else "holds NaN at flat index 5"
    else:
        raw = _poke(p, off, F16_NAN)
        want = r"holds a NaN f16 scale d in block 5 \(row \d+\)"
    with pytest.raises(checkpoint.CheckpointError,
                       match=rf"^{p}: tensor '{name}' \({typ.name}\) {want}; a weight must be finite$"):
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")   # (q5_0: dequantized on load)
            checkpoint.load_model(p, kv="f32", max_context=8)
    assert open(p, "rb").read() == raw


def test_k_quant_gguf_scale_not_finite(tmp_path, monkeypatch):
    """A Q4_K_M-like file (q4_K, q6_K: the scale at the block's end): an inf dmin in one q4_K block, a NaN d in one
    q6_K block, each named with its tensor and block; `glmbench measure` says it in one line."""
    import functools
    import gguf_writer
    import kquant_np
    from glmbench.cli import main
    from glmbench.models import checkpoint, gguf_file

    def kq(orig, data, qtype):
        name = {T.Q4_K: "q4_K", T.Q6_K: "q6_K"}.get(qtype)
        return kquant_np.quantize(data, name) if name else orig(data, qtype)
    monkeypatch.setattr(gguf.quants, "quantize", functools.partial(kq, gguf.quants.quantize))
    cfg, model = _tiny(hidden_size=256, intermediate_size=512, head_dim=64, num_attention_heads=4,
                       num_key_value_heads=2, num_hidden_layers=2)
    p = str(tmp_path / "k.gguf")
    gguf_writer.write(p, cfg, model.state_dict(), types=lambda n, s: T.Q6_K if "ffn_down" in n else T.Q4_K)
    checkpoint.load_model(p, kv="f32", max_context=8)   # as written: loads
    g = gguf_file.read(p)
    clean = open(p, "rb").read()
    for name, off, word, field in (("blk.0.ffn_up.weight", 144 * 3 + 2, "an inf", "dmin"),
                                   ("blk.1.ffn_down.weight", 210 * 2 + 208, "a NaN", "d")):
        t = g.tensors[name]
        raw = _poke(p, t.offset + off, np.array([np.inf if field == "dmin" else np.nan], np.float16).tobytes())
        msg = rf"{p}: tensor '{name}' \({t.type_name}\) holds {word} f16 scale {field} in block {off // {'Q4_K': 144, 'Q6_K': 210}[t.type_name]} \(row \d+\); a weight must be finite"
        with pytest.raises(checkpoint.CheckpointError, match=rf"^{msg}$"):
            checkpoint.state_dict(p)
        assert main(["measure", p, "--depths", "0", "--n-prompt", "4", "--n-gen", "2", "--repeats", "1", "-q",
                     "--json"]) == 2
        assert open(p, "rb").read() == raw
        open(p, "wb").write(clean)


def test_measure_and_cli_name_the_gguf_weight(tmp_path, capsys):
    import gguf_writer
    from glmbench.cli import main
    cfg, model = _tiny()
    sd = {k: v.clone() for k, v in model.state_dict().items()}
    sd["model.layers.0.post_attention_layernorm.weight"][7] = float("inf")
    p = str(tmp_path / "inf.gguf")
    gguf_writer.write(p, cfg, sd)
    raw = open(p, "rb").read()
    capsys.readouterr()
    assert main(["measure", p, "--depths", "0", "--n-prompt", "4", "--n-gen", "2", "--repeats", "1", "-q",
                 "--json"]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and err[0].endswith(f"{p}: tensor 'blk.0.ffn_norm.weight' (F32) holds inf at flat index 7; "
                                             "a weight must be finite"), err
    assert open(p, "rb").read() == raw


def test_safetensors_weight_not_finite(tmp_path):
    from safetensors.numpy import load_file, save_file

    from glmbench.models import checkpoint
    cfg, model = _tiny()
    model.save_pretrained(tmp_path)
    st = str(tmp_path / "model.safetensors")
    sd = load_file(st)
    name = "model.layers.1.self_attn.k_norm.weight"
    sd[name][2] = np.nan
    save_file(sd, st, metadata={"format": "pt"})
    raw = open(st, "rb").read()
    with pytest.raises(checkpoint.CheckpointError,
                       match=rf"^{st}: tensor '{name}' holds NaN at flat index 2; a weight must be finite$"):
        checkpoint.load_model(str(tmp_path), kv="f32", max_context=8)
    assert open(st, "rb").read() == raw


def test_a_checkpoints_weights_are_checked_once(tmp_path, monkeypatch):
    """checkpoint.state_dict checks every tensor; Model does not scan them again (finite_checked), but does scan
    a tensor the caller put in its place."""
    import gguf_writer
    import glmbench
    from glmbench.models import checkpoint
    from glmbench.models import model as model_mod
    cfg, model = _tiny()
    p = str(tmp_path / "m.gguf")
    gguf_writer.write(p, cfg, model.state_dict(), types=lambda n, s: T.Q8_0 if len(s) > 1 else T.F32)
    c, sd = checkpoint.state_dict(p)
    calls = []
    monkeypatch.setattr(model_mod, "nonfinite", lambda a: calls.append(a) or quant.nonfinite(a))
    glmbench.Model(c, sd, weights="stored", kv="f32", max_context=8)
    assert calls == []
    name = "model.layers.0.input_layernorm.weight"
    sd[name] = np.asarray(sd[name]).copy()
    sd[name][0] = np.nan
    with pytest.raises(ValueError, match=rf"^weight '{name}' holds NaN at flat index 0"):
        glmbench.Model(c, sd, weights="stored", kv="f32", max_context=8)
    assert len(calls) >= 1

"""Model files as inputs: GGUF (written here the way llama.cpp's converter writes them,
tests/gguf_writer.py) and HF safetensors folders (transformers' save_pretrained). Their metadata
must give the HF config's ModelConfig, their real bytes the weight bytes, their weights HF's
logits; bad files one clear error naming the file and the field."""
import json
import os
import struct
import subprocess
import sys
import warnings

import numpy as np
import pytest

gguf = pytest.importorskip("gguf", reason="GGUF tests need the gguf package")
torch = pytest.importorskip("torch", reason="HF oracle tests need torch")
pytest.importorskip("transformers", reason="HF oracle tests need transformers")

import gguf_writer  # noqa: E402
from test_model_hf import hf_logits, rel_err, tiny_hf_model  # noqa: E402

from glmbench.models import configs, gguf_file  # noqa: E402
from glmbench.predict import costmodel  # noqa: E402

T = gguf.GGMLQuantizationType
RTOL = 1e-4
FAMILIES = ["glm4_moe_lite", "deepseek_v2", "qwen3", "qwen3_moe", "llama"]
ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def _hf(mt, **kw):
    # llama: TINY's llama3 rope scaling, which a GGUF carries as the rope_freqs tensor (gguf_writer
    # writes it as the converter does; gguf_file reads it as rope_type freq_factors)
    return tiny_hf_model(mt, **kw)


def _write(tmp_path, mt, name="m.gguf", **kw):
    cfg, model = _hf(mt)
    p = tmp_path / name
    gguf_writer.write(p, cfg, model.state_dict(), **kw)
    return cfg, model, str(p)


def _compare_fields(a, b):
    import dataclasses
    return {f.name: (getattr(a, f.name), getattr(b, f.name)) for f in dataclasses.fields(a)
            if f.compare and f.name not in ("name", "file_weights") and getattr(a, f.name) != getattr(b, f.name)}


def test_value_type_ids_are_ggufs():
    assert gguf_file._STRING == gguf.GGUFValueType.STRING and gguf_file._ARRAY == gguf.GGUFValueType.ARRAY
    for name in ("UINT8", "INT8", "UINT16", "INT16", "UINT32", "INT32", "FLOAT32", "BOOL", "UINT64", "INT64", "FLOAT64"):
        assert int(getattr(gguf.GGUFValueType, name)) in gguf_file._SCALAR


@pytest.mark.parametrize("mt", FAMILIES)
@pytest.mark.slow
def test_metadata_gives_the_hf_config(tmp_path, mt):
    hf_cfg, _, p = _write(tmp_path, mt)
    cfg = configs.load(p)
    want = configs.from_hf(hf_cfg.to_dict(), "hf")
    assert cfg.model_type == mt
    assert _compare_fields(cfg, want) == {}
    assert cfg.name == "m"  # named after the file
    assert cfg.kv_bytes_per_token("f16") == want.kv_bytes_per_token("f16")
    assert cfg.kv_bytes_per_token("f32") == want.kv_bytes_per_token("f32")


@pytest.mark.parametrize("mt", ["glm4_moe_lite", "qwen3_moe", "llama"])
def test_weight_bytes_are_the_files_tensors(tmp_path, mt):
    """Bytes from the file's own tensors (mixed types: q8_0, q4_0, q5_0, f16, f32), checked against
    gguf's GGUFReader (an independent reader) and threaded into the cost model's memory."""
    types = lambda n, s: T.Q8_0 if "attn" in n else T.Q4_0 if "exps" in n else T.Q5_0 if "ffn" in n else T.F16
    hf_cfg, _, p = _write(tmp_path, mt, types=types)
    cfg = configs.load(p)
    r = gguf.GGUFReader(p)
    total = sum(int(t.n_bytes) for t in r.tensors)
    assert cfg.file_weights.total_bytes == total
    assert sum(b for _, _, b in cfg.file_weights.tensors) + cfg.file_weights.extra_bytes == total
    by_name = {t.name: int(t.n_bytes) for t in r.tensors}
    assert cfg.file_weights.bytes_of()["model.embed_tokens.weight"] == by_name["token_embd.weight"]
    assert len({t for _, t, _ in cfg.file_weights.tensors}) >= 3
    # the ideal single-format figure differs from the file's real one
    ideal = configs.from_hf(hf_cfg.to_dict(), "hf")
    assert ideal.weight_bytes("q4_0") != total
    # the cost model's memory: weights on one card = the file's bytes, exactly
    s = costmodel.Setup(p, "rtx-3090")
    mem = costmodel.memory(s, 1024)
    on_host = by_name["token_embd.weight"] if s.runtime.embeddings_on_host and not cfg.tie_word_embeddings else 0
    assert abs(mem.cards[0].weights - (total - on_host)) <= 1
    s2 = costmodel.Setup(ideal, "rtx-3090", weights="q4_0")
    assert costmodel.memory(s2, 1024).cards[0].weights != mem.cards[0].weights
    # KV bytes in the prediction: the config's exact bytes per token
    assert mem.cards[0].kv == cfg.kv_bytes_per_token("f16") * 1024
    assert s.weights == cfg.file_weights.weight_format
    # the per-SM GEMV cap's share per op from the file's own types (kernels.mmvq_pass_factor): the
    # q8_0 attention 8.5 of q4_0's 9 bytes per MMVQ pass, the q4_0 experts and q5_0 MLP all of it
    assert costmodel._cap_factor(cfg, s.weights, "attn.o_proj") == pytest.approx(8.5 / 9)
    if cfg.n_routed_experts:
        assert costmodel._cap_factor(cfg, s.weights, "moe.experts") == 1.0


@pytest.mark.parametrize("mt,split", [("glm4_moe_lite", True), ("glm4_moe_lite", False), ("deepseek_v2", True),
                                      ("qwen3", False), ("qwen3_moe", False), ("llama", False)])
@pytest.mark.slow
def test_f32_gguf_logits_match_hf(tmp_path, mt, split):
    from glmbench.models import checkpoint
    hf_cfg, hf, p = _write(tmp_path, mt, split_kv_b=split)
    m = checkpoint.load_model(p, kv="f32", max_context=32)
    prompt, steps = [3, 17, 42, 5, 99, 1, 7], [7, 11, 13, 2]
    want = hf_logits(hf, prompt, steps)
    got = [m.prefill(np.array(prompt))] + [m.decode(t) for t in steps]
    for a, b in zip(got, want):
        assert rel_err(a, b) < RTOL


def test_llama_permutation_is_undone(tmp_path):
    """Loading without un-permuting would give other logits: the test above really checks it."""
    w = np.arange(4 * 16 * 3, dtype=np.float32).reshape(64, 3)
    np.testing.assert_array_equal(gguf_file.un_permute(gguf_writer.permute(w, 4), 4), w)
    assert not np.array_equal(gguf_writer.permute(w, 4), w)


def test_q8_0_q4_0_blocks_are_glmbench_qtensors(tmp_path):
    from glmbench.core.quant import QTensor
    rng = np.random.default_rng(0)
    a = rng.standard_normal((8, 96)).astype(np.float32)
    for t, f in ((T.Q8_0, "q8_0"), (T.Q4_0, "q4_0")):
        q = gguf.quants.quantize(a, t)
        np.testing.assert_array_equal(QTensor(q, f, a.shape).dequantize(), gguf.quants.dequantize(q, t))


@pytest.mark.parametrize("mt", ["glm4_moe_lite", "qwen3_moe", "llama"])
def test_quantized_gguf_runs_as_stored(tmp_path, mt, monkeypatch):
    """q8_0/q4_0 tensors kept as QTensors, q5_0 dequantized with a warning naming it; the logits
    equal those of the same model built from the file's dequantized f32 values (the quantized
    kernels forced to f32 activations, so the only difference is summation order)."""
    import functools
    import glmbench
    from glmbench.core import quant
    from glmbench.core.quant import QTensor
    monkeypatch.setattr(quant, "linear", functools.partial(quant.linear, compute="f32"))
    # quantized experts too (their default is the C driver on q8_0 activations)
    monkeypatch.setattr(quant, "moe_experts", functools.partial(quant.moe_experts, compute="f32"))
    from glmbench.models import checkpoint
    types = lambda n, s: T.Q8_0 if "attn" in n or "token" in n else T.Q4_0 if "ffn" in n else T.Q5_0
    _, _, p = _write(tmp_path, mt, types=types)
    with warnings.catch_warnings(record=True) as w:
        warnings.simplefilter("always")
        cfg, sd = checkpoint.state_dict(p)
    msgs = [str(x.message) for x in w if "dequantized" in str(x.message)]
    assert len(msgs) == 1 and "Q5_0" in msgs[0] and p in msgs[0]
    fmts = {getattr(v, "fmt", None) for v in sd.values()}
    assert {"q8_0", "q4_0"} <= fmts
    m = glmbench.Model(cfg, sd, weights="stored", kv="f32", max_context=16)
    assert isinstance(m.embed, QTensor) and m.embed.fmt == "q8_0"
    deq = {k: (v.dequantize() if hasattr(v, "dequantize") else np.asarray(v, np.float32)) for k, v in sd.items()}
    ref = glmbench.Model(cfg, deq, weights="f32", kv="f32", max_context=16)
    prompt = np.array([1, 5, 9, 33])
    a, b = m.prefill(prompt), ref.prefill(prompt)
    assert rel_err(a, b) < RTOL


def test_safetensors_folder_logits_match_hf(tmp_path):
    from glmbench.models import checkpoint
    for dtype, tol in ((torch.float32, RTOL), (torch.bfloat16, None)):
        hf_cfg, hf = _hf("qwen3_moe")
        d = tmp_path / str(dtype).split(".")[-1]
        hf.to(dtype).save_pretrained(d)
        m = checkpoint.load_model(str(d), kv="f32", max_context=16)
        assert m.config.name == d.name
        prompt = [4, 8, 15, 16, 23]
        if tol:
            assert rel_err(m.prefill(np.array(prompt)), hf_logits(hf, prompt, [])[0]) < tol
        else:  # bf16 kept as stored (uint16 bits): HF's bf16 model computed in f32 is the oracle
            assert m.layers[0].w["self_attn.q_proj.weight"].dtype == np.uint16
            hf32 = hf.to(torch.float32)
            # the bf16 GEMV kernels block their f32 sums differently from torch (measured 1.2e-4)
            assert rel_err(m.prefill(np.array(prompt)), hf_logits(hf32, prompt, [])[0]) < 5 * RTOL


# ---- bad input -------------------------------------------------------------------------------------
def _err(fn, *a):
    with pytest.raises(ValueError) as e:
        fn(*a)
    return str(e.value)


def test_bad_gguf_files_name_file_and_field(tmp_path):
    _, _, p = _write(tmp_path, "qwen3")
    raw = open(p, "rb").read()
    bad = tmp_path / "magic.gguf"
    bad.write_bytes(b"GGML" + raw[4:])
    assert "not a GGUF file" in _err(configs.load, str(bad)) and str(bad) in _err(configs.load, str(bad))
    for n in (10, 200, len(raw) // 2, len(raw) - 1):
        t = tmp_path / f"trunc{n}.gguf"
        t.write_bytes(raw[:n])
        msg = _err(configs.load, str(t))
        assert str(t) in msg and "truncated" in msg
    # unknown ggml type: patch the type field of one tensor's info
    name = b"blk.0.attn_q.weight"
    i = raw.index(name) + len(name)
    nd = struct.unpack_from("<I", raw, i)[0]
    j = i + 4 + 8 * nd
    u = tmp_path / "type.gguf"
    u.write_bytes(raw[:j] + struct.pack("<I", 77) + raw[j + 4:])
    msg = _err(configs.load, str(u))
    assert str(u) in msg and "blk.0.attn_q.weight" in msg and "unknown ggml type 77" in msg
    # unknown architecture
    arch = b"qwen3"
    k = raw.index(b"general.architecture") + len(b"general.architecture") + 4 + 8
    assert raw[k:k + 5] == arch
    a = tmp_path / "arch.gguf"
    a.write_bytes(raw[:k] + b"qwenX" + raw[k + 5:])
    msg = _err(configs.load, str(a))
    assert str(a) in msg and "general.architecture" in msg and "qwenX" in msg


def test_corrupt_string_length_and_tensor_offset_are_named_errors(tmp_path):
    """A string-array item whose length is past 2^63 (was an OverflowError traceback), and a tensor whose data offset
    points into another tensor's bytes (ggml's reader refuses it; read, it ran another tensor's data as this one's)."""
    _, _, p = _write(tmp_path, "qwen3")
    raw = open(p, "rb").read()
    start, count = gguf_file.read(p)._arrays["tokenizer.ggml.tokens"]
    assert count > 2
    j = start + 8 + struct.unpack_from("<Q", raw, start)[0]   # the second token's length
    bad = tmp_path / "len.gguf"
    bad.write_bytes(raw[:j] + struct.pack("<Q", 2**64 - 1) + raw[j + 8:])
    msg = _err(configs.load, str(bad))
    assert str(bad) in msg and "tokenizer.ggml.tokens" in msg and "runs past the end" in msg
    g = gguf_file.read(p)
    name = "blk.0.attn_output.weight"
    assert g.tensors[name].offset != g.data_offset
    i = raw.index(name.encode()) + len(name)
    nd = struct.unpack_from("<I", raw, i)[0]
    k = i + 4 + 8 * nd + 4
    assert g.data_offset + struct.unpack_from("<Q", raw, k)[0] == g.tensors[name].offset
    over = tmp_path / "overlap.gguf"
    over.write_bytes(raw[:k] + struct.pack("<Q", 0) + raw[k + 8:])   # the first tensor's bytes
    for fn in (configs.load, gguf_file.read):
        msg = _err(fn, str(over))
        assert str(over) in msg and name in msg and "offset 0, expected" in msg
    assert open(p, "rb").read() == raw


def test_missing_tensor_and_wrong_shape_name_the_tensor(tmp_path):
    cfg, model = _hf("qwen3")
    sd = dict(model.state_dict())
    sd.pop("model.layers.1.mlp.up_proj.weight")
    p = tmp_path / "missing.gguf"
    gguf_writer.write(p, cfg, sd)
    msg = _err(configs.load, str(p))
    assert "blk.1.ffn_up.weight" in msg and "missing" in msg
    sd = dict(model.state_dict())
    sd["model.layers.0.self_attn.o_proj.weight"] = sd["model.layers.0.self_attn.o_proj.weight"][:, :32]
    p = tmp_path / "shape.gguf"
    gguf_writer.write(p, cfg, sd)
    msg = _err(configs.load, str(p))
    assert "blk.0.attn_output.weight" in msg and "(64, 32)" in msg


def test_safetensors_header_that_lies(tmp_path):
    from glmbench.models import checkpoint
    hf_cfg, hf = _hf("qwen3")
    hf.save_pretrained(tmp_path / "ok")
    f = next((tmp_path / "ok").glob("*.safetensors"))
    raw = f.read_bytes()
    n = struct.unpack_from("<Q", raw)[0]
    header = json.loads(raw[8:8 + n])
    name = "model.layers.0.self_attn.q_proj.weight"
    header[name]["shape"] = [header[name]["shape"][0] * 2, header[name]["shape"][1]]  # claims twice the data
    h = json.dumps(header).encode()
    f.write_bytes(struct.pack("<Q", len(h)) + h + raw[8 + n:])
    msg = _err(checkpoint.state_dict, str(tmp_path / "ok"))
    assert str(f) in msg
    f.write_bytes(raw[: len(raw) // 2])  # truncated data
    assert str(f) in _err(checkpoint.state_dict, str(tmp_path / "ok"))


def test_measure_names_the_file_whose_weights_fail(tmp_path, capsys, monkeypatch):
    """`glmbench measure FILE` on weights that give NaN (one in the output matrix: finite activations, NaN logits,
    was a RuntimeError traceback; one in an MLP matrix: the kernels' "`x` contains NaN", naming no file; both now
    refused at load, naming the tensor and the value's index: tests/test_weights_finite.py) or an HF
    folder lacking a tensor: one line naming the file. The files are not modified."""
    from glmbench.cli import main
    from glmbench.measure import cpu
    cfg, model = _hf("qwen3")
    args = ["--depths", "0", "--n-prompt", "4", "--n-gen", "2", "--repeats", "1", "-q", "--json"]
    for name, gname in (("lm_head.weight", "output.weight"), ("model.layers.1.mlp.down_proj.weight",
                                                              "blk.1.ffn_down.weight")):
        sd = {k: v.clone() for k, v in model.state_dict().items()}
        sd[name][3, 5] = float("nan")
        p = tmp_path / f"nan-{name.split('.')[-2]}.gguf"
        gguf_writer.write(p, cfg, sd, types=lambda n, sh: T.F16 if len(sh) > 1 else T.F32)
        raw = p.read_bytes()
        assert main(["measure", str(p), *args]) == 2
        err = capsys.readouterr().err.strip().splitlines()
        want = f"{p}: tensor '{gname}' (F16) holds NaN at flat index {3 * sd[name].shape[1] + 5}; a weight must be finite"
        assert len(err) == 1 and err[0].endswith(want), err
        assert p.read_bytes() == raw
    folder = tmp_path / "hf"
    model.save_pretrained(folder)
    from safetensors.numpy import load_file, save_file
    st = folder / "model.safetensors"
    sd = load_file(st)
    del sd["model.norm.weight"]
    save_file(sd, st)
    capsys.readouterr()   # (save_pretrained's progress bar)
    assert main(["measure", str(folder), *args]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and f"{folder}: " in err[0] and "'model.norm.weight'" in err[0], err
    # a non-finite value met while timing, past the validation step (an expert it did not route to, say)
    _, _, p = _write(tmp_path, "qwen3")

    def nan_point(*a, **k):
        raise ValueError("`x` contains NaN at flat index 3")
    monkeypatch.setattr(cpu, "_run_point", nan_point)
    assert main(["measure", p, *args]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and p in err[0] and "`x` contains NaN at flat index 3" in err[0], err


def test_report_states_a_model_files_stored_types(tmp_path, capsys):
    """`glmbench report --model FILE`: report.md's setup line and offload.json's rows name the file's stored types,
    which its records are priced at, not the --weights default (q4_K) that does not apply to it."""
    import glmbench.report  # noqa: F401
    from glmbench.cli import main
    _, _, p = _write(tmp_path, "qwen3", types=lambda n, sh: T.Q8_0)
    for models, want in (([p], "weights as stored (m: Q8_0)"), ([p, "qwen3-0.6b"], "weights `q4_K` (m: as stored, Q8_0)")):
        out = tmp_path / f"rep{len(models)}"
        args = ["report", *(a for m in models for a in ("--model", m)), "--cards", "1", "--depths", "512,1K",
                "--concurrency", "1", "-q", "--offload", "--out", str(out)]
        assert main(args) == 0, capsys.readouterr().err
        md = (out / "report.md").read_text()
        assert f"**Setup:** {', '.join(['m', 'qwen3-0.6b'][:len(models)])}; {want}, KV cache `f16`" in md
        assert "q4_K` (" not in md.replace(want, "")
        recs = json.loads((out / "records.json").read_text())
        off = json.loads((out / "offload.json").read_text())
        for rows in (recs, off):
            assert {r["weights"] for r in rows if r["model"] == "m"} == {"q8_0"}
            assert {r["weights"] for r in rows if r["model"] != "m"} <= {"q4_K"}


@pytest.mark.parametrize("entry,match", [
    ({"shape": ["a", 64]}, "has no known dtype and shape"),       # was int()'s "invalid literal", naming no tensor
    ({"shape": [[64], 64]}, "has no known dtype and shape"),      # was a TypeError
    ({"shape": [-64, 64]}, "has no known dtype and shape"),
    ({"dtype": ["F32"]}, "has no known dtype and shape"),          # was a TypeError (unhashable)
    (None, "not a safetensors file (its header is a JSON list, not an object)"),   # was an AttributeError traceback
])
def test_safetensors_header_of_the_wrong_types(tmp_path, entry, match):
    from glmbench.models import checkpoint
    _, hf = _hf("qwen3")
    hf.save_pretrained(tmp_path / "ok")
    f = tmp_path / "ok" / "model.safetensors"
    raw = f.read_bytes()
    n = struct.unpack_from("<Q", raw)[0]
    header = json.loads(raw[8:8 + n])
    name = "model.layers.0.self_attn.q_proj.weight"
    if entry is None:
        header = [1, 2]
    else:
        header[name].update(entry)
    h = json.dumps(header).encode()
    f.write_bytes(struct.pack("<Q", len(h)) + h + raw[8 + n:])
    for fn in (configs.load, checkpoint.state_dict):
        msg = _err(fn, str(tmp_path / "ok"))
        assert str(f) in msg and match in msg and (entry is None or repr(name) in msg)


@pytest.mark.slow
def test_cli_gguf_errors_are_one_line(tmp_path):
    bad = tmp_path / "x.gguf"
    bad.write_bytes(b"\xac\x00\x01" * 20)
    env = dict(os.environ, PYTHONPATH=ROOT)
    for cmd in (["sweep", "--model", str(bad), "-q", "--out", str(tmp_path / "o.json")], ["models", str(bad)]):
        r = subprocess.run([sys.executable, "-m", "glmbench", *cmd], capture_output=True, text=True, env=env)
        assert r.returncode == 2, r.stderr
        lines = r.stderr.strip().splitlines()
        assert len(lines) == 1 and str(bad) in lines[0] and "not a GGUF file" in lines[0]


def test_cli_sweep_takes_a_gguf(tmp_path):
    _, _, p = _write(tmp_path, "glm4_moe_lite", types=lambda n, s: T.Q8_0)
    env = dict(os.environ, PYTHONPATH=ROOT)
    out = tmp_path / "s.json"
    r = subprocess.run([sys.executable, "-m", "glmbench", "sweep", "--model", p, "-q", "--cards", "1",
                        "--tests", "tg,mem", "--out", str(out)], capture_output=True, text=True, env=env)
    assert r.returncode == 0, r.stderr
    recs = json.loads(out.read_text())
    recs = recs if isinstance(recs, list) else recs["records"]
    assert {x["model"] for x in recs} == {"m"} and {x["weights"] for x in recs} == {"q8_0"}


@pytest.mark.slow
def test_routing_stats_feed_the_cost_model(tmp_path):
    from glmbench.measure import cpu
    _, _, p = _write(tmp_path, "qwen3_moe")
    recs = cpu.measure(p, depths=(0,), n_gen=6, n_prompt=4, repeats=1, warmup=0, tests=("tg",), progress=False,
                       routing_stats=True, kv="f32")
    tg = [r for r in recs if r["test"] == "tg"][0]
    cfg = configs.load(p)
    assert set(tg["routing_counts"]) == {str(i) for i in cfg.moe_layers}
    for c in tg["routing_counts"].values():  # 6 decode steps x top-k per MoE layer
        assert len(c) == cfg.n_routed_experts and sum(c) == 6 * cfg.n_experts_per_tok
    hist = cpu.routing_histogram(recs)
    assert sum(hist) == 6 * cfg.n_experts_per_tok * cfg.n_moe_layers
    s = costmodel.Setup(p, "rtx-3090", expert_skew=hist)
    assert s.expert_skew == tuple(float(x) for x in hist)
    with pytest.raises(ValueError, match="real weights"):
        cpu.measure("qwen3-30b-a3b", routing_stats=True, progress=False)


@pytest.mark.slow
def test_routing_file_on_the_cli(tmp_path, capsys):
    """`glmbench measure FILE --routing-stats --out m.json` then `glmbench sweep --model FILE
    --routing m.json`: the measured histogram is the sweep's routing distribution (records say
    expert_skew "histogram"), and a skewed histogram predicts other numbers than uniform routing."""
    import json as _json

    from glmbench import cli
    _, _, p = _write(tmp_path, "qwen3_moe")
    m = tmp_path / "m.json"
    assert cli.main(["measure", p, "--depths", "0", "--n-gen", "4", "--n-prompt", "4", "--repeats", "1",
                     "--routing-stats", "--kv", "f32", "-q", "--out", str(m)]) == 0
    capsys.readouterr()
    base = ["sweep", "--model", p, "--cards", "1", "--depths", "1K", "--tests", "tg", "--json", "-q"]
    assert cli.main(base + ["--routing", str(m)]) == 0
    routed = _json.loads(capsys.readouterr().out)
    assert cli.main(base) == 0
    uniform = _json.loads(capsys.readouterr().out)
    routed = routed if isinstance(routed, list) else routed["records"]
    uniform = uniform if isinstance(uniform, list) else uniform["records"]
    assert {r["expert_skew"] for r in routed} == {"histogram"} and {r["expert_skew"] for r in uniform} == {None}
    # two models with one histogram: refused with the reason
    assert cli.main(base + ["--model", "qwen3-32b", "--routing", str(m)]) == 2
    assert "one MoE model" in capsys.readouterr().err


# ---- issue 23: inconsistent metadata, split files, routers, tied quantized embeddings, HF folders ---
U32 = gguf.GGUFValueType.UINT32


@pytest.mark.parametrize("key,value,match", [
    ("qwen3.attention.head_count", 0, "'qwen3.attention.head_count' = 0 must be >= 1"),
    ("qwen3.attention.head_count_kv", 0, "head_count_kv' = 0 must be >= 1"),
    ("qwen3.attention.head_count_kv", 3, "not a multiple of 'qwen3.attention.head_count_kv' = 3"),
    ("qwen3.block_count", 0, "block_count' = 0 must be >= 1"),
    ("qwen3.embedding_length", 0, "embedding_length' = 0 must be >= 1"),
    ("qwen3.attention.key_length", None, None),   # removed: head dim from embedding_length / head_count
    # llama.cpp's loader requires context_length (it read as max_position_embeddings 0, an error naming that)
    ("qwen3.context_length", None, "metadata 'qwen3.context_length' is missing"),
    # block_count below the file's blocks: blk.1 was counted as a skipped (MTP) layer, half the model priced
    ("qwen3.block_count", 1, "is of block 1, but metadata 'qwen3.block_count' = 1"),
    # a corrupt count: refused before the loops over the blocks (they ran for hours)
    ("qwen3.block_count", 2**31, "'qwen3.block_count' = 2,147,483,648 is larger than any real model's"),
])
def test_inconsistent_metadata_is_one_named_error(tmp_path, key, value, match):
    cfg, model = _hf("qwen3")
    p = tmp_path / "bad.gguf"
    gguf_writer.write(p, cfg, model.state_dict(), meta={key: (value, U32)})
    if match is None:   # 64 / 4 = 16 = head_dim: reads as before
        assert configs.load(str(p)).head_dim == 16
        return
    with pytest.raises(gguf_file.GGUFError) as e:
        configs.load(str(p))
    assert str(p) in str(e.value) and match in str(e.value)


def test_split_gguf_loads_from_its_first_part(tmp_path):
    from glmbench.models import checkpoint
    cfg, model = _hf("qwen3")
    p = tmp_path / "m.gguf"
    gguf_writer.write(p, cfg, model.state_dict(), split_max_tensors=5)
    parts = sorted(str(q) for q in tmp_path.glob("m-*-of-*.gguf"))
    assert len(parts) > 2 and not p.exists()
    g = gguf_file.read(parts[0])
    assert g.parts == tuple(parts) and g.get("split.count") == len(parts)
    c = configs.load(parts[0])
    assert c.file_weights.total_bytes == sum(t.n_bytes for t in g.tensors.values())
    m = checkpoint.load_model(parts[0], kv="f32", max_context=32)
    prompt, steps = [3, 17, 42, 5], [7, 11]
    for a, b in zip([m.prefill(np.array(prompt))] + [m.decode(t) for t in steps], hf_logits(model, prompt, steps)):
        assert rel_err(a, b) < RTOL
    with pytest.raises(gguf_file.GGUFError, match="give the first part"):
        configs.load(parts[1])
    os.remove(parts[-1])
    with pytest.raises(gguf_file.GGUFError) as e:
        configs.load(parts[0])
    assert parts[-1] in str(e.value) and "is missing" in str(e.value)


@pytest.mark.parametrize("mt,shape,want", [("glm4_moe_lite", None, "sigmoid"), ("deepseek_v2", None, "softmax"),
                                           ("deepseek_v2", (47, 154880), "sigmoid")])
def test_missing_gating_func_follows_llama_cpp(tmp_path, mt, shape, want):
    """No deepseek2.expert_gating_func: llama.cpp's rule (sigmoid for 47/48 layers and 154880 tokens,
    else softmax), glmbench's exp_probs_b rule beyond it; a notice says which was assumed."""
    cfg, model = _hf(mt)
    meta = {"deepseek2.expert_gating_func": (None, U32)}
    if shape:
        meta.update({"deepseek2.block_count": (shape[0], U32), "deepseek2.vocab_size": (shape[1], U32)})
        g = gguf_writer.write(tmp_path / "m.gguf", cfg, model.state_dict(), meta=meta)
        with pytest.warns(gguf_file.GGUFNotice, match="as llama.cpp does for this shape"):
            hf = gguf_file.hf_config(gguf_file.read(g))   # the config alone: the file's tensors are tiny
        assert hf["model_type"] == "glm4_moe_lite" and "llama.cpp does for this shape" in hf["gguf_assumed"][0]
        return
    p = tmp_path / "m.gguf"
    gguf_writer.write(p, cfg, model.state_dict(), meta=meta)
    with pytest.warns(gguf_file.GGUFNotice, match=f"assumed {want}") as w:
        c = configs.load(str(p))
    assert str(p) in str(w[0].message)
    assert c.router_scoring == want and c.hf["gguf_assumed"]


@pytest.mark.slow
def test_cli_says_a_notice_in_one_line(tmp_path):
    """The CLI shows a GGUF's assumed value (GGUFNotice) as one `notice: ...` line naming the file, not Python's
    warning with glmbench's source file and line; a warning from another package stays as Python formats it."""
    import warnings
    from glmbench import cli
    cfg, model = _hf("deepseek_v2")
    p = tmp_path / "m.gguf"
    gguf_writer.write(p, cfg, model.state_dict(), meta={"deepseek2.expert_gating_func": (None, U32)})
    r = subprocess.run([sys.executable, "-m", "glmbench", "sweep", "--model", str(p), "--cards", "1", "--depths",
                        "512", "--tests", "mem", "-q", "--json"], capture_output=True, text=True,
                       env=dict(os.environ, PYTHONPATH=ROOT))
    assert r.returncode == 0, r.stderr
    assert r.stderr.strip().splitlines() == [
        f"notice: {p}: no metadata 'deepseek2.expert_gating_func'; assumed softmax routing as llama.cpp does "
        "(DeepSeek-V2/V2.5 files without the key)"], r.stderr
    other = cli._format_warning("other", DeprecationWarning, "/elsewhere/x.py", 3, _format=warnings.formatwarning)
    assert other == warnings.formatwarning("other", DeprecationWarning, "/elsewhere/x.py", 3)


@pytest.mark.parametrize("fmt", ["q8_0", "q4_0"])
def test_tied_quantized_embedding_prefill_and_decode(fmt):
    """Tied embeddings (Qwen3-0.6B class): the head repacks the shared QTensor on its first call; the
    embedding lookup then reads rows from the repacked form. Prefill and 5 decode steps equal a
    model holding the same quantized values untied (two QTensors)."""
    import glmbench
    cfg, model = _hf("qwen3", tie_word_embeddings=True)
    sd = {k: v.detach().numpy() for k, v in model.state_dict().items() if k != "lm_head.weight"}  # as a GGUF: no output
    m = glmbench.Model(cfg.to_dict(), sd, weights=fmt, kv="f32", max_context=32)
    assert m.lm_head is m.embed
    ref_sd = dict(sd)
    untied = dict(cfg.to_dict(), tie_word_embeddings=False)
    ref_sd["lm_head.weight"] = sd["model.embed_tokens.weight"]
    ref = glmbench.Model(untied, ref_sd, weights=fmt, kv="f32", max_context=32)
    prompt, steps = np.array([1, 5, 9, 33, 2]), [7, 11, 13, 2, 99]
    np.testing.assert_array_equal(m.prefill(prompt), ref.prefill(prompt))
    assert m.embed.packed is not None   # repacked in place by the head
    for t in steps:
        np.testing.assert_array_equal(m.decode(t), ref.decode(t))


def test_hf_folder_whose_config_disagrees_with_its_weights(tmp_path):
    """An HF folder whose config.json gives a matrix another shape than the one stored under its name (here
    intermediate_size 128 over 96-wide MLP weights; the router of 4 experts over 8) is one error naming the file,
    the tensor and both shapes, as a GGUF's is; before, `sweep --model FOLDER` priced the stored bytes with the
    config's FLOPs (measure refused it). The folder is not modified."""
    for mt, key, value, name, stored, want in (
            ("qwen3", "intermediate_size", 128, "model.layers.0.mlp.gate_proj.weight", (96, 64), (128, 64)),
            ("qwen3_moe", "num_experts", 4, "model.layers.0.mlp.gate.weight", (8, 64), (4, 64))):
        _, model = _hf(mt)
        folder = tmp_path / mt
        model.save_pretrained(folder)
        assert configs.load(str(folder)).file_weights.kind == "safetensors"
        cj = folder / "config.json"
        hf = json.loads(cj.read_text())
        hf[key] = value
        cj.write_text(json.dumps(hf))
        before = {f.name: f.read_bytes() for f in folder.iterdir()}
        msg = _err(configs.load, str(folder))
        assert str(folder / "model.safetensors") in msg and repr(name) in msg
        assert f"shape {stored}" in msg and f"config.json gives {want}" in msg
        assert {f.name: f.read_bytes() for f in folder.iterdir()} == before


def test_hf_folder_predicts_at_its_stored_dtype(tmp_path, capsys):
    from glmbench.cli import main
    from glmbench.predict import costmodel
    cfg, model = _hf("qwen3")
    folder = tmp_path / "hf"
    model.to(torch.bfloat16).save_pretrained(folder)
    c = configs.load(str(folder))
    assert c.file_weights.kind == "safetensors" and c.file_weights.main_type == "BF16"
    assert c.file_weights.total_bytes == sum(v.numel() * 2 for v in model.state_dict().values())
    s = costmodel.Setup(str(folder), "rtx-3090")
    assert s.weights == "bf16"
    on_host = 160 * 64 * 2 if s.runtime.embeddings_on_host else 0   # the bf16 embedding, as for a GGUF above
    assert abs(costmodel.memory(s, 1024).cards[0].weights - (c.file_weights.model_bytes - on_host)) <= 1
    # --weights on a model file: ignored, and said so on stderr
    _, _, p = _write(tmp_path, "qwen3", types=lambda n, sh: T.Q8_0)
    args = ["sweep", "--model", p, "--depths", "1K", "--cards", "1", "--tests", "tg", "-q", "--json"]
    assert main(args + ["--weights", "q4_0"]) == 0
    out = capsys.readouterr()
    assert "notice: --weights q4_0 is ignored for" in out.err and p in out.err
    assert {r["weights"] for r in json.loads(out.out)} == {"q8_0"}
    assert main(args + ["--weights", "q8_0"]) == 0 and "notice" not in capsys.readouterr().err
    assert main(args) == 0 and "notice" not in capsys.readouterr().err


def _header_only_folder(folder, config, tensors, file="model.safetensors"):
    """An HF folder whose `file` holds `tensors` ({name: (dtype, shape)}), data zeros."""
    size = {"BF16": 2, "F16": 2, "F32": 4, "I32": 4, "U8": 1, "F8_E4M3": 1}
    os.makedirs(folder, exist_ok=True)
    with open(os.path.join(folder, "config.json"), "w") as f:
        json.dump(config, f)
    header, off = {}, 0
    for n, (dt, shape) in tensors.items():
        nb = size[dt] * int(np.prod(shape))
        header[n] = {"dtype": dt, "shape": list(shape), "data_offsets": [off, off + nb]}
        off += nb
    h = json.dumps(header).encode()
    with open(os.path.join(folder, file), "wb") as f:
        f.write(struct.pack("<Q", len(h)) + h + bytes(off))
    return off


@pytest.mark.parametrize("layout", ["awq", "gptq", "fp8", "mxfp4"])
def test_quantized_hf_folder_counts_its_stored_bytes(tmp_path, layout):
    """A quantized checkpoint's matrices are stored as parts (AWQ / GPTQ qweight + qzeros + scales, FP8 weight +
    weight_scale_inv, gpt-oss's MXFP4 experts as _blocks + _scales of a fused gate_up_proj): each matrix holds its
    parts' bytes, so the folder is priced at what it stores (it was at 4 bytes a weight for AWQ's int32 qweight,
    at bf16 for MXFP4 experts)."""
    E, D, F, L, V = 4, 256, 512, 2, 300
    if layout == "mxfp4":
        config = dict(model_type="gpt_oss", hidden_size=D, intermediate_size=F, num_local_experts=E,
                      num_experts_per_tok=2, num_attention_heads=4, num_key_value_heads=2, head_dim=64,
                      num_hidden_layers=L, vocab_size=V, quantization_config={"quant_method": "mxfp4"})
    else:
        config = dict(model_type="llama", hidden_size=D, intermediate_size=F, num_attention_heads=4,
                      num_key_value_heads=2, num_hidden_layers=L, vocab_size=V, rms_norm_eps=1e-5,
                      quantization_config={"quant_method": layout})
    shapes = configs.load(config).tensor_shapes()
    tensors = {}
    for n, sh in shapes.items():
        base = n[:-len(".weight")]
        if layout == "mxfp4" and ".mlp.experts." in n:
            if n.endswith(("gate_proj", "down_proj")):     # (up_proj: the other half of gate_up_proj)
                fused = n.replace("gate_proj", "gate_up_proj")
                rows = 2 * sh[1] if "gate_up" in fused else sh[2]
                cols = sh[2] if "gate_up" in fused else sh[1]
                tensors[fused + "_blocks"] = ("U8", (E, rows, cols // 32, 16))
                tensors[fused + "_scales"] = ("U8", (E, rows, cols // 32))
            elif n.endswith("gate_proj_bias"):
                tensors[n.replace("gate_proj", "gate_up_proj")] = ("BF16", (E, 2 * sh[1]))
            elif n.endswith("down_proj_bias"):
                tensors[n] = ("BF16", sh)
        elif layout in ("awq", "gptq") and len(sh) == 2 and n.startswith("model.layers."):
            out, inn = sh
            tensors[base + ".qweight"] = ("I32", (inn, out // 8) if layout == "awq" else (inn // 8, out))
            tensors[base + ".qzeros"] = ("I32", (inn // 128, out // 8))
            tensors[base + ".scales"] = ("F16", (inn // 128, out))
        elif layout == "fp8" and len(sh) == 2 and n.startswith("model.layers."):
            tensors[n] = ("F8_E4M3", sh)
            tensors[base + ".weight_scale_inv"] = ("F32", (-(-sh[0] // 128), -(-sh[1] // 128)))
        else:
            tensors[n] = ("BF16", sh)
    size = _header_only_folder(tmp_path / "hf", config, tensors)
    c = configs.load(str(tmp_path / "hf"))
    fw = c.file_weights
    assert fw.total_bytes == size and fw.extra_bytes == 0
    assert sum(b for _, _, b in fw.tensors) == size      # every stored byte on one of the config's tensors
    q = "model.layers.1.mlp.experts.gate_proj" if layout == "mxfp4" else "model.layers.1.self_attn.q_proj.weight"
    assert fw.types()[q] == {"awq": "AWQ", "gptq": "GPTQ", "fp8": "FP8", "mxfp4": "MXFP4"}[layout]
    if layout == "awq":
        # q_proj 256 x 256: qweight [256, 32] int32, qzeros [2, 32] int32, scales [2, 256] f16
        assert fw.bytes_of()[q] == 256 * 32 * 4 + 2 * 32 * 4 + 2 * 256 * 2
        assert costmodel.Setup(str(tmp_path / "hf"), "rtx-3090").weights == "awq"


def test_hf_folder_reads_the_files_its_index_names(tmp_path):
    """A hub download of a Mistral repo holds HF shards (named by model.safetensors.index.json) and the same
    model again as consolidated.safetensors: only the model's files count (the copy doubled its bytes)."""
    from glmbench.models import checkpoint
    config = dict(model_type="mistral", hidden_size=64, intermediate_size=96, num_attention_heads=4,
                  num_key_value_heads=2, num_hidden_layers=2, vocab_size=100, sliding_window=None)
    shapes = configs.load(config).tensor_shapes()
    names = sorted(shapes)
    half = len(names) // 2
    folder = tmp_path / "hf"
    size = sum(_header_only_folder(folder, config, {n: ("BF16", shapes[n]) for n in part}, file=f)
               for part, f in ((names[:half], "model-00001-of-00002.safetensors"),
                               (names[half:], "model-00002-of-00002.safetensors")))
    copy = {n.replace("model.layers.", "layers."): ("BF16", shapes[n]) for n in names}
    _header_only_folder(folder, config, copy, file="consolidated.safetensors")
    index = {"metadata": {"total_size": size}, "weight_map": {n: f"model-0000{1 + (i >= half)}-of-00002.safetensors"
                                                              for i, n in enumerate(names)}}
    (folder / "model.safetensors.index.json").write_text(json.dumps(index))
    fw = configs.load(str(folder)).file_weights
    assert fw.total_bytes == size and fw.extra_bytes == 0
    assert set(checkpoint._safetensors_folder(str(folder))) == set(names)
    os.remove(folder / "model.safetensors.index.json")      # no index: the consolidated copy is still left out
    assert configs.load(str(folder)).file_weights.total_bytes == size
    index["weight_map"][names[0]] = "model-00003-of-00002.safetensors"
    (folder / "model.safetensors.index.json").write_text(json.dumps(index))
    with pytest.raises(ValueError, match="'weight_map' names 'model-00003-of-00002.safetensors'"):
        configs.load(str(folder))


def test_hf_folder_shards_without_their_index(tmp_path):
    """Shards without model.safetensors.index.json: all of them read; one missing is an error naming it (sweep
    priced its tensors at a guessed dtype, measure named them missing one by one)."""
    from glmbench.models import checkpoint
    _, model = _hf("qwen3")
    folder = tmp_path / "hf"
    model.save_pretrained(folder, max_shard_size="100KB")
    (folder / "model.safetensors.index.json").unlink()
    shards = sorted(f.name for f in folder.glob("*.safetensors"))
    assert len(shards) >= 3 and shards[1] == f"model-00002-of-{len(shards):05d}.safetensors"
    whole = configs.load(str(folder)).file_weights
    assert whole.total_bytes == sum(v.numel() * 4 for v in model.state_dict().values())
    (folder / shards[1]).unlink()
    for fn in (configs.load, checkpoint.state_dict):
        msg = _err(fn, str(folder))
        assert f"shard '{shards[1]}' is missing" in msg and str(folder) in msg
    # one of the files given instead of its folder
    msg = _err(configs.load, str(folder / shards[0]))
    assert msg == f"{folder / shards[0]}: a .safetensors file holds weights only: give the folder holding it and its " \
                  f"config.json ({folder})"


def test_llama3_rope_freqs_tensor_runs_as_hf():
    """rope_freqs.weight (the converter's llama3 factors) -> rope_type freq_factors: the inverse
    frequencies equal HF's llama3 ones (float32 factors), and the whole model matches HF above."""
    import gguf_writer as gw
    cfg, _ = _hf("llama")
    rp = cfg.to_dict()["rope_parameters"]
    hf_cfg = configs.from_hf(cfg.to_dict(), "hf")
    f = gw.llama3_rope_factors(rp, 16)
    assert len(set(np.round(f, 4))) > 2   # all three bands: kept, blended, divided by factor
    via = configs.from_hf({**cfg.to_dict(), "rope_parameters": None, "rope_theta": rp["rope_theta"],
                           "rope_scaling": {"rope_type": "freq_factors", "freq_factors": f.tolist()}}, "gguf")
    np.testing.assert_allclose(via.rope_inv_freq(), hf_cfg.rope_inv_freq(), rtol=1e-6)
    with pytest.raises(ValueError, match="freq_factors"):
        configs.from_hf({**cfg.to_dict(), "rope_parameters": None,
                         "rope_scaling": {"rope_type": "freq_factors", "freq_factors": [1.0, 2.0]}}, "gguf").rope_inv_freq()


def test_llama_mlp_biases_read_as_mlp_bias(tmp_path):
    """llama.cpp's llama loads optional ffn_gate / ffn_up / ffn_down biases (src/models/llama.cpp): a file holding
    them is HF's mlp_bias, priced with them (every tensor of the file matched) and refused by Model."""
    cfg, model = _hf("llama", mlp_bias=True)
    p = tmp_path / "b.gguf"
    gguf_writer.write(p, cfg, model.state_dict())
    c = configs.load(str(p))
    assert c.mlp_bias and c.total_params() == sum(v.numel() for v in model.parameters())
    assert _compare_fields(c, configs.from_hf(cfg.to_dict())) == {}
    assert "model.layers.0.mlp.down_proj.bias" in c.file_weights.bytes_of()
    assert not configs.load(_write(tmp_path, "llama")[2]).mlp_bias


@pytest.mark.parametrize("ftype", [9999, int(gguf.LlamaFileType.MOSTLY_F16)])
def test_general_file_type_is_not_the_tensors_type(tmp_path, ftype):
    """general.file_type names the file only (llama.cpp's loader checks it against nothing): an unknown value or
    one that contradicts every matrix (F16 over Q4_0 matrices) loads, and the types and bytes are the tensors'."""
    types = lambda n, s: T.Q4_0
    _, _, p = _write(tmp_path, "llama", types=types, meta={"general.file_type": (ftype, gguf.GGUFValueType.UINT32)})
    assert gguf_file.read(p).get("general.file_type") == ftype
    fw = configs.load(p).file_weights
    assert fw.main_type == "Q4_0" and fw.weight_format == "q4_0"
    assert fw.total_bytes == sum(int(t.n_bytes) for t in gguf.GGUFReader(p).tensors)

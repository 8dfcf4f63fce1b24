"""Prefill of several prompts in one batch (costmodel.prefill_batch: llama-batched-bench's PP phase)
and the held-out check of the runtime models on batched-bench / vLLM TTFT results
(bench/bench_public_batched.py)."""
import dataclasses
import importlib.util
import json
import os

import pytest

from glmbench.predict import costmodel as cm
from glmbench.predict import runtime as runtime_mod
from glmbench.predict import hardware as hw

RIG = hw.Rig(hw.get_gpu("rtx-3090"), 1)


def _setup(model="llama-3.1-8b", ubatch=512, runtime="typical", **kw):
    rt = dataclasses.replace(cm.load_runtime(runtime), n_ubatch=ubatch)
    return cm.Setup(model, RIG, runtime=rt, **kw)


def _attn_flops(step):
    return sum(o.flops for o in step.ops if o.name == "attn.core")


def test_one_stream_is_prefill():
    for model in ("llama-3.1-8b", "glm-4.7-flash", "gemma-3-4b"):
        s = _setup(model)
        for n, d in ((512, 0), (1300, 0), (700, 4096)):
            a, b = cm.prefill_batch(s, n, 1, d), cm.prefill(s, n, d)
            assert a.seconds == pytest.approx(b.seconds, rel=1e-12) and a.tokens == b.tokens == n


def test_prompts_whole_ubatches_cost_b_times_one():
    # sequences laid one after the other: with PP a multiple of n_ubatch every ubatch holds one
    # sequence's tokens, so B prompts cost B single prefills
    s = _setup(ubatch=512)
    one = cm.prefill(s, 2048)
    for B in (2, 5):
        st = cm.prefill_batch(s, 2048, B)
        assert st.seconds == pytest.approx(B * one.seconds, rel=1e-12)
        assert st.tokens == B * 2048 and st.batch == B and st.tok_s == pytest.approx(one.tok_s, rel=1e-12)


def test_short_prompts_share_the_weight_reads():
    """B prompts of 32 tokens in one 512-token ubatch read the weights once: faster per token than
    one prompt alone, and their attention is each sequence's own (B times one prompt's), not that
    of a 512-token prompt."""
    s = _setup(ubatch=512)
    one, four = cm.prefill(s, 32), cm.prefill_batch(s, 32, 16)
    assert four.tok_s > 2 * one.tok_s
    assert four.seconds < 16 * one.seconds / 2
    assert _attn_flops(four) == pytest.approx(16 * _attn_flops(one), rel=1e-9)
    assert _attn_flops(four) < 0.5 * _attn_flops(cm.prefill(s, 512))
    # the same matmul work as a 512-token prompt (weights x 512 columns)
    mm = lambda st: sum(o.flops for o in st.ops if o.name == "mlp")  # noqa: E731
    assert mm(four) == pytest.approx(mm(cm.prefill(s, 512)), rel=1e-9)
    # a ubatch that cuts a sequence: 3 prompts of 300 tokens in ubatches of 512 (512 + 388):
    # attention of the three sequences from depth 0, whatever the cut
    three, single = cm.prefill_batch(s, 300, 3), cm.prefill(s, 300)
    assert _attn_flops(three) == pytest.approx(3 * _attn_flops(single), rel=1e-9)
    # one logit row per sequence (f16 weights: no per-ubatch dequantization in the head's FLOPs)
    f16 = _setup(ubatch=512, weights="f16")
    head = lambda st: sum(o.flops for o in st.ops if o.name == "head.lm_head")  # noqa: E731
    assert head(cm.prefill_batch(f16, 300, 3)) == pytest.approx(3 * head(cm.prefill(f16, 300)), rel=1e-9)


def test_layer_split_and_bad_input():
    s2 = cm.Setup("llama-3.1-8b", hw.Rig(hw.get_gpu("rtx-3090"), 2), split="layer")
    assert cm.prefill_batch(s2, 1024, 1).seconds == pytest.approx(cm.prefill(s2, 1024).seconds, rel=1e-12)
    assert cm.prefill_batch(s2, 256, 4).tok_s > cm.prefill(s2, 256).tok_s
    s = _setup()
    for bad in (0, -1):
        with pytest.raises(ValueError, match="streams"):
            cm.prefill_batch(s, 512, bad)
    for bad in (1.5, True, "4"):
        with pytest.raises(TypeError, match="`streams` must be an integer"):
            cm.prefill_batch(s, 512, bad)
    with pytest.raises(ValueError, match="n_tokens"):
        cm.prefill_batch(s, 0, 2)


# ---- bench/bench_public_batched.py on a pasted table of its own -------------------------------------
BATCHED = """\
llama-batched-bench on the card (test table)

main: n_kv_max = 65536, n_batch = 2048, n_ubatch = 2048, flash_attn = 1, is_pp_shared = 0, n_gpu_layers = -1, n_threads = 8, n_threads_batch = 8

|    PP |     TG |    B |   N_KV |   T_PP s | S_PP t/s |   T_TG s | S_TG t/s |      T s |    S t/s |
|-------|--------|------|--------|----------|----------|----------|----------|----------|----------|
|   512 |     32 |    1 |    544 |    0.200 |  2560.00 |    0.300 |   106.67 |    0.500 |  1088.00 |
|   512 |     32 |    4 |   2176 |    0.400 |  5120.00 |    0.500 |   256.00 |    0.900 |  2417.78 |
"""


def _script():
    p = os.path.join(os.path.dirname(__file__), "..", "bench", "bench_public_batched.py")
    spec = importlib.util.spec_from_file_location("bench_public_batched", p)
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


def test_bench_script_predicts_held_out_points(tmp_path, monkeypatch):
    mod = _script()
    src = tmp_path / "src"
    src.mkdir()
    (src / "llama-3.1-8b-q4_0_rtx3090_batched.md").write_text(
        "Model: llama-3.1-8b Q4_0 (llama-batched-bench -m llama-3.1-8b-q4_0.gguf) on an NVIDIA GeForce RTX 3090\n\n"
        + BATCHED)
    monkeypatch.setattr(mod, "SOURCES", {"t": dict(file="llama-3.1-8b-q4_0_rtx3090_batched.md", runtime="llama.cpp",
                                                   url="https://example.org/t", date="2026-01-01", command="c", note="n")})
    runtime_before = {f: os.path.getmtime(os.path.join(runtime_mod._RUNTIME_DIR, f)) for f in os.listdir(runtime_mod._RUNTIME_DIR)}
    out = tmp_path / "out"
    out.mkdir()
    assert mod.main([str(src), "--out", str(out)]) == 0
    md = next(out.glob("public_batched_*.md")).read_text()
    data = json.loads(next(out.glob("public_batched_*.json")).read_text())
    recs = data["records"]
    assert len(recs) == 4 and {r["test"] for r in recs} == {"pp", "tg"}
    for r in recs:
        assert r["source"] == "https://example.org/t" and r["hardware"] == "rtx-3090" and r["model"] == "llama-3.1-8b"
        s = mod._setup(r, mod._profile("llama.cpp", r))
        B = r["n_streams"] if r["test"] == "tg" else r["pl"]
        want = (cm.prefill_batch(s, r["n_prompt"], B).tok_s if r["test"] == "pp"
                else B / cm._mean_decode(s, r["n_depth"], r["n_gen"], B)[0])
        assert r["predicted"]["runtime model"]["avg_ts"] == pytest.approx(want, rel=1e-12)
        assert r["predicted"]["runtime model"]["profile"] == "llama.cpp[fa=1,ubatch=2048]"
        # ideal is never slower than the runtime model
        assert r["predicted"]["ideal"]["avg_ts"] >= r["predicted"]["runtime model"]["avg_ts"]
    # the MAPE row of each test, from the records' own errors
    pp = [r for r in recs if r["test"] == "pp"]
    mape = sum(abs(r["predicted"]["runtime model"]["avg_ts"] / r["avg_ts"] - 1) for r in pp) / len(pp)
    assert f"| t | pp | tok/s (all streams) | 2 | {100 * mape:.1f}% (" in md
    assert "load" in md and "2-core" in md
    # re-predicted from the written records alone: the same numbers; nothing fitted or rewritten
    out2 = tmp_path / "out2"
    out2.mkdir()
    assert mod.main(["--records", str(next(out.glob("*.json"))), "--out", str(out2)]) == 0
    again = json.loads(next(out2.glob("*.json")).read_text())["records"]
    assert [r["predicted"] for r in again] == [r["predicted"] for r in recs]
    assert runtime_before == {f: os.path.getmtime(os.path.join(runtime_mod._RUNTIME_DIR, f)) for f in os.listdir(runtime_mod._RUNTIME_DIR)}
    # a folder without the file: one error naming it
    monkeypatch.setattr(mod, "SOURCES", {"t": dict(file="missing.md", runtime="llama.cpp", url="u", date="d",
                                                   command="c", note="n")})
    with pytest.raises((SystemExit, OSError), match="missing.md"):
        mod.main([str(src), "--out", str(out)])

"""bench/public_records.py's generic path (a pasted file + its sidecar, no SOURCES entry) and
bench/bench_public_fit.py --check (records never fitted, predicted by the shipped runtime models).

The pasted files are the verbatim copies in tests/data/pasted/; the sidecars are written here, in
the key spellings the published sidecars use (URL / source_url, Runtime / engine, GPU / hardware,
Command / command, notes)."""
import glob
import json
import os
import re
import shutil
import sys

import pytest

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
PASTED = os.path.join(ROOT, "tests", "data", "pasted")
sys.path.insert(0, os.path.join(ROOT, "bench"))
import bench_public_fit as bpf  # noqa: E402
import public_records as pr  # noqa: E402

from glmbench.predict import jointfit as jf  # noqa: E402

XD = "llama3-8b-f16_rtx3090_xiongjiedai.md"
VK = "llama-3.1-8b-q4_0_RTX5090_Vulkan_ik-llama-disc562-jeffbolznv.md"
IK = "deepseek-v2-lite-Q4_0_rtx3090ti_ik-pr598-cuda-fmoe.md"
VL = "qwen3-30b-a3b-bf16_h100_vllm-pr23151.log"


def _put(d, src, name, sidecar=None):
    """Copy a pasted file into `d` as `name` (a name SOURCES does not know: an unseen set), with
    `sidecar` text beside it."""
    shutil.copy(os.path.join(PASTED, src), os.path.join(d, name))
    if sidecar is not None:
        with open(os.path.join(d, os.path.splitext(name)[0] + ".txt"), "w") as f:
            f.write(sidecar)


def _unseen(d):
    _put(d, XD, "Alice 8B f16 (3090).md",
         "URL: https://example.org/alice/bench.ipynb (her notebook)\n"
         "Runtime: llama.cpp mainline CUDA, llama-bench defaults: fa off, f16 KV, n_ubatch 512\n"
         "GPU: rtx3090\nModel: Meta Llama 3 8B f16\n"
         "Command: ./llama-bench -p 512,1024 -n 512 -m ggml-model-f16.gguf\nNote: run 2024-05-03\n")
    _put(d, VK, "bob_5090_vulkan.md",
         "source_url: https://example.org/bob/post-7\ndate: 2025-07-01 16:12:50 UTC\n"
         "engine: mainline llama.cpp, Vulkan backend\n"
         "command: llama-bench -m C:\\models\\meta-llama-3.1-8b-instruct-q4_0.gguf -fa 1 -n 0 -p 1024 -r 1\n"
         "hardware: 1x NVIDIA GeForce RTX 5090\noptions: coopmat=khr\n")
    _put(d, IK, "carol-dsv2lite.md",
         "Source_URL: https://example.org/carol (comment, 2025-07-13)\n"
         "ENGINE: ik_llama.cpp, CUDA backend\n"
         "Command: ./build/bin/llama-sweep-bench --model DeepSeek-V2-Lite-Q4_0.gguf -c 20480 -fa -mla 3 -ngl 99 -fmoe\n"
         "GPU: 1x NVIDIA GeForce RTX 3090 Ti\nmodel: DeepSeek-V2-Lite Q4_0\n")
    _put(d, VL, "dave-vllm.log",
         "URL: https://example.org/dave/pr (2025-08-19)\nRuntime: vLLM\nModel: Qwen/Qwen3-30B-A3B, BF16\n"
         "Server: vllm serve Qwen/Qwen3-30B-A3B\nClient: benchmark_serving.py --max-concurrency 10\n")


def _load(d, sid):
    with open(os.path.join(d, sid + ".json")) as f:
        return json.load(f)


def test_generic_path_reads_an_unseen_set(tmp_path, capsys):
    src, out = tmp_path / "src", tmp_path / "out"
    src.mkdir()
    _unseen(str(src))
    pr.main([str(src), "--out", str(out)])
    said = capsys.readouterr().out
    assert sorted(os.listdir(out)) == ["alice-8b-f16-3090.json", "bob_5090_vulkan.json", "carol-dsv2lite.json",
                                       "dave-vllm.json"]
    assert "119 records from 4 sources" in said       # 8 + 30 + 80 + 1 (vLLM: one block)

    a = _load(out, "alice-8b-f16-3090")
    assert len(a) == 8 and {r["runtime"] for r in a} == {"llama.cpp"}
    r = a[0]
    assert (r["model"], r["hardware"], r["weights"], r["type_k"]) == ("llama-3-8b", "rtx-3090", "f16", "f16")
    assert r["runtime_options"] == {"fa": "0", "ubatch": "512"}          # fa off, n_ubatch 512: the sidecar's prose
    assert {"flash_attn", "n_ubatch", "type_k"} <= set(r["from_sidecar"])
    assert r["source"] == "https://example.org/alice/bench.ipynb" and r["date"] == "2024-05-03"
    assert r["public_source"] == "alice-8b-f16-3090" and r["line"].startswith("Alice 8B f16 (3090).md:")
    assert r["evidence"] == "measured" and r["avg_ts"] > 0

    b = _load(out, "bob_5090_vulkan")
    assert {x["runtime"] for x in b} == {"llama.cpp-vulkan"} and {x["table"] for x in b} == {1, 2}
    assert {x["runtime_options"]["fa"] for x in b} == {"1"}              # the paste's fa column
    assert {x["runtime_options"]["ubatch"] for x in b} == {"512"} and b[0]["defaults"] == ["ubatch"]
    assert b[0]["date"] == "2025-07-01" and b[0]["source"] == "https://example.org/bob/post-7"
    assert {x["runtime_options"]["coopmat"] for x in b} == {"khr"} and "runtime_options.coopmat" in b[0]["from_sidecar"]

    c = _load(out, "carol-dsv2lite")
    assert {x["runtime"] for x in c} == {"ik_llama.cpp"}
    assert c[0]["runtime_options"] == {"fa": "1", "ubatch": "512", "mla": "3"}
    assert (c[0]["model"], c[0]["hardware"], c[0]["weights"]) == ("deepseek-v2-lite", "rtx-3090-ti", "q4_0")
    assert "-mla 3" in c[0]["command"] and c[0]["date"] == "2025-07-13"

    (v,) = _load(out, "dave-vllm")
    assert v["runtime"] == "vllm" and v["n_streams"] == 10 and v["test"] == "tg"
    assert v["command"] == "vllm serve Qwen/Qwen3-30B-A3B; benchmark_serving.py --max-concurrency 10"


def test_skips_and_conflicts_say_why(tmp_path, capsys):
    src, out = tmp_path / "src", tmp_path / "out"
    src.mkdir()
    _put(str(src), XD, "no-sidecar.md")
    _put(str(src), "llama-3.1-8b_RTX4080_Vulkan-vs-CUDA-sweep_ik-llama-disc562-ikawrakow.md", "quant-unknown.md",
         "URL: https://example.org/x\nmodel: LlaMA-3.1-8B (quant not stated)\nGPU: RTX 4080\n")
    _put(str(src), XD, "ok.md", "URL: https://example.org/ok\nGPU: rtx3090\nModel: Llama 3 8B\n")
    _put(str(src), XD, "which-8b.md", "URL: https://example.org/ok\n")    # llama 8B: Llama 3 or 3.1, the file name no help
    pr.main([str(src), "--out", str(out)])
    said = capsys.readouterr().out.splitlines()
    assert "skipped no-sidecar.md: no sidecar no-sidecar.txt (URL, date, command, runtime, GPU, model)" in said
    (q,) = [ln for ln in said if ln.startswith("skipped quant-unknown.md")]
    assert re.search(r"quant-unknown\.md:\d+: the weights stated neither in the paste nor in the sidecar", q)
    (w,) = [ln for ln in said if ln.startswith("skipped which-8b.md")]
    assert "fits several built-in models: llama-3-8b, llama-3.1-8b" in w
    assert os.listdir(out) == ["ok.json"]
    assert _load(out, "ok")[0]["runtime_options"] == {"ubatch": "512"}   # fa stated nowhere: the model's default

    # the same file with a sidecar that names its weights: read, the weights from the sidecar
    _put(str(src), "llama-3.1-8b_RTX4080_Vulkan-vs-CUDA-sweep_ik-llama-disc562-ikawrakow.md", "quant-unknown.md",
         "URL: https://example.org/x\nmodel: LlaMA-3.1-8B Q4_0\n")
    sid, recs = pr.generic_records(str(src / "quant-unknown.md"))
    assert {r["weights"] for r in recs} == {"q4_0"} and "weights" in recs[0]["from_sidecar"]
    assert {r["runtime"] for r in recs} == {"llama.cpp-vulkan", "ik_llama.cpp"}   # per table, from the import

    bad = tmp_path / "bad"
    bad.mkdir()
    _put(str(bad), VK, "fa.md", "URL: https://example.org/y\ncommand: llama-bench -fa 0 -p 1024\n")
    with pytest.raises(SystemExit, match=r"^fa\.md:\d+: the paste says flash_attn 1, the sidecar's command says 0"):
        pr.generic_records(str(bad / "fa.md"))
    _put(str(bad), VK, "opt.md", "URL: https://example.org/y\noptions: mla=3\n")
    with pytest.raises(SystemExit, match=r"^opt\.txt: option 'mla' is not one of the llama.cpp-vulkan model's \(fa, ubatch, coopmat\)"):
        pr.generic_records(str(bad / "opt.md"))
    _put(str(bad), VK, "val.md", "URL: https://example.org/y\noptions: coopmat=xyz\n")
    with pytest.raises(SystemExit, match=r"^val\.txt: option coopmat=xyz: the llama.cpp-vulkan model takes nv2, khr"):
        pr.generic_records(str(bad / "val.md"))
    _put(str(bad), VK, "model.md", "URL: https://example.org/y\nmodel: Llama 3 8B\n")
    with pytest.raises(SystemExit, match=r"^model\.md:\d+: the paste's model is 'llama-3.1-8b', the sidecar's model line "
                                         r"names 'llama-3-8b'"):
        pr.generic_records(str(bad / "model.md"))
    _put(str(bad), VK, "rt.md", "URL: https://example.org/y\nRuntime: ik_llama.cpp CUDA\n")
    with pytest.raises(SystemExit, match=r"^rt\.md:\d+: the import implies runtime 'llama.cpp-vulkan'.*sidecar's runtime "
                                         r"says 'ik_llama.cpp'"):
        pr.generic_records(str(bad / "rt.md"))


# Fields of the shipped (SOURCES) records the generic path cannot infer from a paste and its
# sidecar, and why: the llama.cpp `era` (2024-cublas for XiongjieDai's 2024 builds, before/after
# PR 374 for ik_llama.cpp: a build's kernels, stated by no paste); Vulkan's `coopmat` (KHR / NV2:
# in the ggml_vulkan device line, which the importer does not keep); PR 386's `mla` (2 for table 1,
# 3 for table 2: said per table in prose only, so the generic path takes neither).
NOT_INFERRED = {("era", "llama3-8b-f16_rtx3090"), ("era", "llama3.1-8b-iq4_ks_rtx4080_ik-pr374"),
                ("coopmat", "dsv2lite-q4_0_rtx3090ti_ik-vulkan"), ("coopmat", "llama3.1-8b-q4_0_rtx5090_vulkan"),
                ("mla", "dsv2lite-q4_0_rtx4080_ik-pr386")}


def test_generic_path_reproduces_the_shipped_records(tmp_path):
    """Every shipped source read the generic way, its sidecar holding what SOURCES copied from the
    published one: the same numbers, runtime, card, model, weights, KV type, attribution, and every
    runtime option but NOT_INFERRED's."""
    items = [(sid, m) for sid, m in pr.SOURCES.items()] + [("qwen3-30b-a3b-bf16_h100_vllm", pr.VLLM)]
    spell = [("URL", "Runtime", "Command", "Date", "Notes"), ("source_url", "engine", "command", "date", "notes")]
    diffs, n = set(), 0
    for i, (sid, m) in enumerate(items):
        k = spell[i % 2]
        _put(str(tmp_path), m["file"], m["file"],
             f"{k[0]}: {m['url']}\n{k[1]}: {m['runtime']}\n{k[2]}: {m['command']}\n{k[3]}: {m['date']}\n{k[4]}: {m['note']}\n")
        gid, got = pr.generic_records(str(tmp_path / m["file"]))
        assert gid == pr.source_id(m["file"])
        with open(os.path.join(ROOT, "glmbench", "data", "public", sid + ".json")) as f:
            want = json.load(f)
        assert len(got) == len(want), sid
        for g, w in zip(got, want):
            n += 1
            for f in ("avg_ts", "stddev_ts", "test", "n_prompt", "n_gen", "n_depth", "n_streams", "runtime", "model",
                      "hardware", "n_cards", "weights", "type_k", "flash_attn", "source", "date", "line", "table"):
                assert g.get(f) == w.get(f), (sid, g["line"], f, g.get(f), w.get(f))
            for o in set(g["runtime_options"]) | set(w["runtime_options"]):
                if g["runtime_options"].get(o) != w["runtime_options"].get(o):
                    assert o not in g["runtime_options"], (sid, g["line"], o)   # never a different value: only missing
                    diffs.add((o, "llama3-8b-f16_rtx3090" if sid.startswith("llama3-") else sid))
    assert n == 575
    assert diffs == NOT_INFERRED


def test_check_reports_per_source_mape(tmp_path):
    src, recs, res = tmp_path / "src", tmp_path / "recs", tmp_path / "res"
    src.mkdir()
    _unseen(str(src))
    pr.main([str(src), "--out", str(recs)])
    # a user's records file with a batched-bench record (several streams): left out with a note
    batched = {"evidence": "measured", "tool": "llama-batched-bench", "runtime": "llama.cpp", "test": "tg",
               "model": "llama-3-8b", "hardware": "rtx-3090", "weights": "f16", "n_gen": 128, "n_streams": 8,
               "avg_ts": 400.0}
    with open(recs / "eve.json", "w") as f:
        json.dump([batched], f)
    bpf.main(["--check", str(recs), "--out", str(res)])
    (path,) = glob.glob(str(res / "public_check_*.md"))
    text = open(path).read()
    pts, notes = bpf.check_points(str(recs))
    assert len(pts) == 119 and len(notes) == 1 and "eve.json:1: a batched-bench record (8 stream(s))" in notes[0]
    assert "eve.json:1: a batched-bench record" in text
    pairs = bpf.check(pts, {rt: bpf.cm.load_runtime(rt) for rt in bpf.RUNTIMES})
    for rt, v in pairs.items():
        for sid in {p.source for p, _ in v}:
            sv = [(p, q) for p, q in v if p.source == sid]
            cells = [bpf._pct(jf.mape(sv, "tg")), bpf._pct(jf.mape(sv, "pp"))]
            assert f"| {rt} | {sid} |" in text and f"| {len(sv)} | {cells[0]} | {cells[1]} |" in text
            assert all(q > 0 for _, q in sv)
    # renamed copies of shipped tables: still the points the shipped profiles were fitted to, and said so
    assert "**Not an unseen set:** 119 of these 119 points" in text
    assert re.search(r"\| all \(pooled\) \| 119 \| \d+\.\d% \| \d+\.\d% \| 20\.0% / 30\.0% \|", text)

    # the shipped set itself is flagged as in-sample
    shipped, _ = bpf.check_points(os.path.join(ROOT, "glmbench", "data", "public", "llama3-8b-f16_rtx3090.json"))
    lines = bpf.check_report("x", bpf.check(shipped, {"llama.cpp": bpf.cm.load_runtime("llama.cpp")}), [], "as shipped")
    assert any(ln.startswith("**Not an unseen set:** 8 of these 8 points") for ln in lines)
    # the same points with other values are not flagged
    for p in shipped:
        p.measured *= 1.5
    lines = bpf.check_report("x", bpf.check(shipped, {"llama.cpp": bpf.cm.load_runtime("llama.cpp")}), [], "as shipped")
    assert not any("Not an unseen set" in ln for ln in lines)


def test_check_with_fit_uses_this_runs_profiles(tmp_path, monkeypatch):
    """--with-fit: the check is a section of public_fit_<date>.md, predicted by the run's fitted
    profiles (the fit itself, minutes long, replaced here by the shipped profiles it would write)."""
    import types
    src, recs, res = tmp_path / "src", tmp_path / "recs", tmp_path / "res"
    src.mkdir()
    _put(str(src), IK, "carol-dsv2lite.md", "URL: https://example.org/carol\nengine: ik_llama.cpp\n")
    pr.main([str(src), "--out", str(recs)])
    used = {}

    def fake_run(write_profiles, out_dir):
        assert not write_profiles
        return [], {rt: {"fit": types.SimpleNamespace(profile=bpf.cm.load_runtime(rt))} for rt in bpf.RUNTIMES}, 0.0

    real_check = bpf.check

    def spy_check(pts, profiles):
        used.update(profiles)
        return real_check(pts, profiles)

    monkeypatch.setattr(bpf, "run", fake_run)
    monkeypatch.setattr(bpf, "report", lambda *a: "# fit report\n")
    monkeypatch.setattr(bpf, "check", spy_check)
    bpf.main(["--check", str(recs), "--with-fit", "--out", str(res)])
    (path,) = glob.glob(str(res / "public_fit_*.md"))
    text = open(path).read()
    assert text.startswith("# fit report") and f"## Check: {recs} (never fitted)" in text
    assert "as fitted by this run" in text and "| ik_llama.cpp | carol-dsv2lite |" in text
    assert set(used) == set(bpf.RUNTIMES)
    assert not glob.glob(str(res / "public_check_*.md"))

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
         "hardware: 1x NVIDIA GeForce RTX 5090\n")
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
    # fa off (the 2024 build's default), n_ubatch 512 (the sidecar's prose), and the 2024 quantized prefill
    # path: its ggml_cuda_init line CUDA_USE_TENSOR_CORES: yes
    assert r["runtime_options"] == {"fa": "0", "ubatch": "512", "era": "2024-cublas"}
    assert "CUDA_USE_TENSOR_CORES: yes" in r["inferred"]["era"]
    assert {"n_ubatch", "type_k"} <= set(r["from_sidecar"])     # fa: the paste's build (2824) tells it first
    assert "build 2824" in r["inferred"]["flash_attn"]
    assert r["source"] == "https://example.org/alice/bench.ipynb" and r["date"] == "2024-05-03"
    assert r["public_source"] == "alice-8b-f16-3090" and r["line"].startswith("Alice 8B f16 (3090).md:")
    assert r["evidence"] == "measured" and r["avg_ts"] > 0

    b = _load(out, "bob_5090_vulkan")
    assert {x["runtime"] for x in b} == {"llama.cpp-vulkan"} and {x["table"] for x in b} == {1, 2}
    assert {x["runtime_options"]["fa"] for x in b} == {"1"}              # the paste's fa column
    assert {x["runtime_options"]["ubatch"] for x in b} == {"512"} and b[0]["defaults"] == ["ubatch"]
    assert b[0]["date"] == "2025-07-01" and b[0]["source"] == "https://example.org/bob/post-7"
    # coopmat from each table's ggml_vulkan line ("matrix cores: NV_coopmat2", then "KHR_coopmat")
    assert {(x["table"], x["runtime_options"]["coopmat"]) for x in b} == {(1, "nv2"), (2, "khr")}
    assert "runtime_options.coopmat" not in b[0].get("from_sidecar", [])
    assert not any("fork" in x["runtime_options"] for x in b)          # mainline's Vulkan build: the default

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
    # llama 8B: Llama 3, 3.1 or the R1 distill, one shape priced alike: read as the base, and said so
    assert not [ln for ln in said if ln.startswith("skipped which-8b.md")]
    (w,) = _load(out, "which-8b")[:1]
    assert w["model"] == "llama-3-8b" and "fits deepseek-r1-distill-llama-8b, llama-3-8b, llama-3.1-8b" in \
        w["inferred"]["model"]
    assert sorted(os.listdir(out)) == ["ok.json", "which-8b.json"]
    # fa stated nowhere, the build (2843, 2024) before llama-bench's -fa auto: its then default, off
    assert _load(out, "ok")[0]["runtime_options"] == {"fa": "0", "ubatch": "512", "era": "2024-cublas"}

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
    with pytest.raises(SystemExit, match=r"^opt\.txt: option 'mla' is not one of the llama.cpp-vulkan model's \(fa, ubatch, coopmat, fork\)"):
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
# PR 374 for ik_llama.cpp: a build's kernels, stated by no paste). Vulkan's `coopmat` is the
# ggml_vulkan device line's "matrix cores" (read, and the same as SOURCES say).
# (the 2024 llama.cpp tables' era=2024-cublas is inferred since 2026-12-04: their ggml_cuda_init line
# CUDA_USE_TENSOR_CORES: yes; PR 386's `mla`, 2 for table 1 and 3 for table 2, since 2026-12-04 too:
# each table's <summary> says it, importers.label_settings)
NOT_INFERRED = {("era", "llama3.1-8b-iq4_ks_rtx4080_ik-pr374")}


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


def test_curated_path_reproduces_the_shipped_records(tmp_path):
    """bench/public_records.py's SOURCES path (what writes glmbench/data/public/) on the verbatim pastes: every
    shipped record's values (all but the note and the `inferred` explanations) again, and nothing of the
    check's own reading (no offload or serving run)."""
    items = [(sid, m) for sid, m in pr.SOURCES.items()]
    n = 0
    for sid, m in items:
        _put(str(tmp_path), m["file"], m["file"])
        got = pr._records(sid, m, str(tmp_path))
        with open(os.path.join(ROOT, "glmbench", "data", "public", sid + ".json")) as f:
            want = json.load(f)
        strip = [{k: v for k, v in r.items() if k not in ("note", "inferred")} for r in want]
        assert [{k: v for k, v in r.items() if k not in ("note", "inferred")} for r in got] == strip, sid
        assert not any(r.get("offload_run") or r.get("serving_run") for r in got)
        n += len(got)
    _put(str(tmp_path), pr.VLLM["file"], pr.VLLM["file"])
    (v,) = pr._vllm(str(tmp_path))
    with open(os.path.join(ROOT, "glmbench", "data", "public", "qwen3-30b-a3b-bf16_h100_vllm.json")) as f:
        (w,) = json.load(f)
    assert {k: x for k, x in v.items() if k not in ("note", "inferred")} == {k: x for k, x in w.items()
                                                                             if k not in ("note", "inferred")}
    assert n + 1 == 575


def test_generic_path_files_ik_llama_cpps_vulkan_port_under_its_fork(tmp_path):
    """A Vulkan sweep-bench paste of ik_llama.cpp (its tool's header) is llama.cpp-vulkan with
    fork=ik_llama.cpp, whatever its sidecar's runtime line says about the fork; a sidecar naming
    mainline leaves the default."""
    vk = "deepseek-v2-lite-Q4_0_rtx3090ti_ik-pr598-vulkan.md"
    _put(str(tmp_path), vk, "frank-vk.md", "URL: https://example.org/frank\nRuntime: Vulkan backend\n"
                                           "Command: llama-sweep-bench -m DeepSeek-V2-Lite-Q4_0.gguf -fa -mla 3\n")
    _, got = pr.generic_records(str(tmp_path / "frank-vk.md"))
    assert len(got) == 80 and {r["runtime"] for r in got} == {"llama.cpp-vulkan"}
    assert {r["runtime_options"]["fork"] for r in got} == {"ik_llama.cpp"}
    assert "ik_llama.cpp's" in got[0]["inferred"]["fork"]
    pts = [jf.point_from_record(r, f"x:{i}") for i, r in enumerate(got)]
    assert {p.options.get("fork") for p in pts} == {"ik_llama.cpp"}
    # sweep-bench's mainline port prints the same header: a sidecar naming mainline keeps the default
    _put(str(tmp_path), vk, "gina-vk.md", "URL: https://example.org/gina\nRuntime: mainline llama.cpp, Vulkan\n")
    _, got = pr.generic_records(str(tmp_path / "gina-vk.md"))
    assert len(got) == 80 and not any("fork" in r["runtime_options"] for r in got)


def test_check_reports_per_source_mape(tmp_path):
    src, recs, res = tmp_path / "src", tmp_path / "recs", tmp_path / "res"
    src.mkdir()
    _unseen(str(src))
    pr.main([str(src), "--out", str(recs)])
    # a user's records file with a batched-bench record (several streams): checked apart (its own section),
    # never among the single-stream points; without a list to take it, left out with a note
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
    several = []
    pts2, notes2 = bpf.check_points(str(recs), several)
    assert len(pts2) == 119 and not notes2 and len(several) == 1 and several[0].batch == 8
    q = bpf.predict_batched(several[0])
    s = several[0].setup
    assert q == pytest.approx(8 / bpf.cm._mean_decode(s, 0, 128, 8)[0])
    assert q > bpf.cm.decode(s, 0, 1).tok_s          # 8 streams: more tokens per step than one
    assert "### Several streams (llama-batched-bench; never fitted)" in text
    assert f"| llama.cpp | eve.json:1 | llama-3-8b tg128 @ d0 | 8 | " in text and f"| 400.00 | {q:.2f} |" in text
    assert "eve.json:1: a batched-bench record" not in text
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


LBH = ("| model                          |       size |     params | backend    | ngl | fa |            test |                  t/s |\n"
       "| ------------------------------ | ---------: | ---------: | ---------- | --: | -: | --------------: | -------------------: |\n")


def _lbr(model, test, ts, size="4.58 GiB", params="8.03 B"):
    return f"| {model:30} | {size:>10} | {params:>10} | CUDA       |  99 |  1 | {test:>15} | {ts:>20} |\n"


def _write(d, name, text, sidecar):
    with open(os.path.join(d, name), "w") as f:
        f.write(text)
    with open(os.path.join(d, os.path.splitext(name)[0] + ".txt"), "w") as f:
        f.write(sidecar)


def test_generic_path_reads_what_real_pastes_vary(tmp_path, capsys):
    src, out = tmp_path / "src", tmp_path / "out"
    src.mkdir()
    d = str(src)
    # a table a blank line splits, no device lines, a file name with letters and digits; two cards in the sidecar
    rows = [_lbr("llama 8B Q4_K - Medium", t, v) for t, v in (("pp512", "4900.00 ± 12.00"), ("tg128", "118.50 ± 0.20"),
                                                               ("pp512 @ d4096", "4400.00 ± 10.00"), ("tg128 @ d4096", "110.00 ± 0.20"))]
    _write(d, "a28_split.md", LBH + rows[0] + rows[1] + "\n" + rows[2] + rows[3] + "\nbuild: 8854044 (3406)\n",
           "URL: https://example.org/split\nGPU: 2x RTX 3090 (NVLink)\nModel: Meta-Llama-3.1-8B-Instruct-Q4_K_M.gguf\n")
    # llama-bench -o sql saved as .sql
    _write(d, "lb.sql", "CREATE TABLE IF NOT EXISTS llama_bench (\n  build_commit TEXT,\n  gpu_info TEXT,\n  backends TEXT,\n"
           "  model_filename TEXT,\n  model_type TEXT,\n  model_n_params INTEGER,\n  n_prompt INTEGER,\n  n_gen INTEGER,\n"
           "  n_depth INTEGER,\n  flash_attn INTEGER,\n  n_ubatch INTEGER,\n  avg_ts REAL,\n  stddev_ts REAL\n);\n\n"
           "INSERT INTO llama_bench (build_commit, gpu_info, backends, model_filename, model_type, model_n_params, n_prompt, "
           "n_gen, n_depth, flash_attn, n_ubatch, avg_ts, stddev_ts) VALUES ('4be1e7c', 'NVIDIA GeForce RTX 5090', 'CUDA', "
           "'/m/Qwen3-30B-A3B-Q4_K_M.gguf', 'qwen3moe 30B.A3B Q4_K - Medium', '30532122624', '0', '128', '32768', '1', '512', "
           "'150.3', '1.0');\n", "URL: https://example.org/sql\nRuntime: llama.cpp\n")
    # ik_llama.cpp's llama-bench: the sidecar tells a plain table's fork; an mla column tells it itself
    ds = ("  Device 0: NVIDIA GeForce RTX 4090, compute capability 8.9, VMM: yes\n" + LBH
          + _lbr("deepseek2 16B Q4_0", "tg128", "190.00 ± 0.60", "8.29 GiB", "15.71 B"))
    _write(d, "ik-plain.md", ds, "URL: https://example.org/ik\nRuntime: ik_llama.cpp (CUDA)\n")
    _write(d, "ik-mla.md", ds.replace("| fa |", "| fa | mla |").replace("| -: |", "| -: | --: |").replace("|  1 |", "|  1 |   3 |"),
           "URL: https://example.org/ik2\n")
    # SGLang's client: a run against an SGLang server (the sglang runtime model), one against a vLLM server
    sg = {"max_concurrency": 4, "completed": 16, "total_input_tokens": 32768, "total_output_tokens": 2048, "duration": 17.2,
          "request_rate": "inf", "output_throughput": 119.26, "mean_ttft_ms": 542.1, "mean_tpot_ms": 29.134}
    _write(d, "sg.jsonl", json.dumps(dict(sg, backend="sglang")) + "\n" + json.dumps(dict(sg, backend="vllm")) + "\n",
           "URL: https://example.org/sg\nGPU: H100 SXM\nModel: Qwen/Qwen3-32B bf16\n")
    _write(d, "sg-console.log", "python3 -m sglang.bench_serving --backend sglang --model Qwen/Qwen3-32B --max-concurrency 32\n"
           "============ Serving Benchmark Result ============\nBackend:                                 sglang    \n"
           "Max request concurrency:                 32        \nSuccessful requests:                     500       \n"
           "Total input tokens:                      512000    \nTotal generated tokens:                  64000     \n"
           "Output token throughput (tok/s):         798.80    \nMean TPOT (ms):                          34.61     \n"
           "==================================================\n", "URL: https://example.org/sgc\nGPU: H100 SXM\nModel: Qwen3-32B BF16\n")
    pr.main([d, "--out", str(out)])
    said = capsys.readouterr().out
    assert sorted(os.listdir(out)) == ["a28_split.json", "ik-mla.json", "ik-plain.json", "lb.json", "sg-console.json",
                                       "sg.json"]
    assert "skipped sg" not in said

    a = _load(out, "a28_split")
    assert [(r["test"], r["n_depth"], r["avg_ts"]) for r in a] == [("pp", 0, 4900.0), ("tg", 0, 118.5), ("pp", 4096, 4400.0),
                                                                   ("tg", 4096, 110.0)]
    assert all("table" not in r for r in a)          # one table, though a blank line splits it
    assert {(r["model"], r["hardware"], r["n_cards"], r["split"], r["weights"]) for r in a} == {
        ("llama-3.1-8b", "rtx-3090", 2, "layer", "Q4_K_M")}
    assert {"hardware", "split"} <= set(a[0]["from_sidecar"]) and a[0]["device"] == "rtx-3090"   # not "A28"
    (s,) = _load(out, "lb")
    assert (s["model"], s["hardware"], s["test"], s["n_depth"], s["avg_ts"], s["runtime_options"]) == (
        "qwen3-30b-a3b", "rtx-5090", "tg", 32768, 150.3, {"fa": "1", "ubatch": "512"})
    (p,) = _load(out, "ik-plain")
    assert (p["runtime"], p["tool"], p["model"]) == ("ik_llama.cpp", "llama-bench", "deepseek-v2-lite")
    assert "runtime" in p["from_sidecar"]
    (m,) = _load(out, "ik-mla")
    assert (m["runtime"], m["tool"], m["runtime_options"]["mla"]) == ("ik_llama.cpp", "llama-bench (ik_llama.cpp)", "3")
    assert "runtime" not in m.get("from_sidecar", [])
    g, v = _load(out, "sg")           # each line's server is its runtime: SGLang's, then vLLM's
    for r, rt, ln in ((g, "sglang", 1), (v, "vllm", 2)):
        assert (r["runtime"], r["model"], r["hardware"], r["weights"], r["n_streams"], r["n_depth"], r["avg_ts"]) == (
            rt, "qwen3-32b", "h100-sxm", "bf16", 4, 2048, round(4 / 0.029134, 2))
        assert r["line"] == f"sg.jsonl:{ln}" and "left out" not in r["note"]
    (c,) = _load(out, "sg-console")
    assert (c["runtime"], c["n_streams"], c["avg_ts"]) == ("sglang", 32, round(32 / 0.03461, 2))

    # a CUDA table filed under Vulkan by its sidecar is still a disagreement
    _write(d, "vk.md", ds, "URL: https://example.org/vk\nRuntime: llama.cpp Vulkan\n")
    with pytest.raises(SystemExit, match=r"^vk\.md:\d+: the import implies runtime 'llama.cpp'.*says 'llama.cpp-vulkan'"):
        pr.generic_records(os.path.join(d, "vk.md"))


def _ncmoe_table():
    """(device line, llama-bench header with an n_cpu_moe column, row(n_cpu_moe, test, t/s)) of gpt-oss-120b on a 3090."""
    head = LBH.replace("| fa |", "| n_cpu_moe | fa |").replace("| -: |", "| --------: | -: |")

    def row(ncm, test, ts):
        return _lbr("gpt-oss 120B MXFP4 MoE", test, ts, "59.02 GiB", "116.83 B").replace("|  1 |", f"| {ncm:>9} |  1 |")
    return "  Device 0: NVIDIA GeForce RTX 3090, compute capability 8.6, VMM: yes\n", head, row


def test_partly_cpu_runs_are_left_out_and_vllm_kv_is_the_model_dtype(tmp_path):
    d = str(tmp_path)
    dev, head, row = _ncmoe_table()
    _write(d, "moe.md", dev + head + row(24, "pp512", "310.00 ± 5.00") + row(24, "tg128", "28.30 ± 0.30"),
           "URL: https://example.org/moe\n")
    with pytest.raises(pr.Skip, match=r"^moe\.md: every record ran partly on the CPU \(line 4: n_cpu_moe 24 \(expert "
                                      r"weights on the CPU\); line 5: .*not an all-GPU point"):
        pr.generic_records(os.path.join(d, "moe.md"))
    _write(d, "moe2.md", dev + head + row(0, "tg128", "180.00 ± 0.30") + row(24, "tg128", "28.30 ± 0.30"),
           "URL: https://example.org/moe\n")
    _, (r,) = pr.generic_records(os.path.join(d, "moe2.md"))
    assert (r["avg_ts"], r["line"]) == (180.0, "moe2.md:4") and "1 record(s) left out, partly on the CPU (line 5: n_cpu_moe 24" in r["note"]
    # -ot and -ngl below the layer count too; ngl 99 is all of them
    assert pr._offloaded({"tensor_buft_overrides": "exps=CPU"}, 36).startswith("tensor overrides 'exps=CPU'")
    assert pr._offloaded({"n_gpu_layers": 20}, 36) == "n_gpu_layers 20 of the model's 36 layers"
    assert pr._offloaded({"n_gpu_layers": 99, "tensor_buft_overrides": "none", "n_cpu_moe": 0}, 36) is None
    # vLLM's KV cache (auto) is the model's dtype: bf16 for an MXFP4 checkpoint, not its weights' type
    _write(d, "oss.log", "vllm bench serve --model openai/gpt-oss-20b --max-concurrency 32\n"
           "============ Serving Benchmark Result ============\nSuccessful requests:                     1000      \n"
           "Maximum request concurrency:             32        \nTotal input tokens:                      1021304   \n"
           "Total generated tokens:                  127811    \nOutput token throughput (tok/s):         1341.56   \n"
           "Mean TPOT (ms):                          41.26     \n==================================================\n",
           "URL: https://example.org/oss\nGPU: H200 141GB\nModel: openai/gpt-oss-20b (MXFP4)\n")
    _, (v,) = pr.generic_records(os.path.join(d, "oss.log"))
    assert (v["model"], v["hardware"], v["weights"], v["type_k"], v["n_streams"]) == ("gpt-oss-20b", "h200-sxm", "mxfp4", "bf16", 32)


def test_records_without_a_model_are_left_out_and_the_rest_kept(tmp_path):
    # a page of several models where one is no built-in: its records are left out with the reason, the others kept
    d = str(tmp_path)
    dev = "  Device 0: NVIDIA GeForce RTX 3090, compute capability 8.6, VMM: yes\n"
    text = (dev + LBH + _lbr("llama 8B Q4_K - Medium", "tg128", "118.50 ± 0.20")
            + "\n" + LBH + _lbr("nemotron 4B Q8_0", "tg128", "52.85 ± 0.12", "3.94 GiB", "3.97 B"))
    _write(d, "two.md", text, "URL: https://example.org/two\n")
    _, (r,) = pr.generic_records(os.path.join(d, "two.md"))
    assert (r["model"], r["avg_ts"]) == ("llama-3-8b", 118.5)
    assert "1 record(s) left out (line 8: model 'nemotron 4B Q8_0' (3.97 B params)" in r["note"] and "is no built-in model" in r["note"]
    # every record without one: the file is skipped, the reason said once
    _write(d, "one.md", dev + LBH + _lbr("nemotron 4B Q8_0", "tg128", "52.85 ± 0.12", "3.94 GiB", "3.97 B"),
           "URL: https://example.org/one\n")
    with pytest.raises(pr.Skip, match=r"^one\.md:4: model 'nemotron 4B Q8_0'.* is no built-in model"):
        pr.generic_records(os.path.join(d, "one.md"))


def _serve_block(done, conc, tokens_in, tokens_out, tok_s, tpot_ms, ttft_ms=None):
    """vLLM's console block of a serving benchmark (the lines glmbench reads)."""
    return ("============ Serving Benchmark Result ============\n"
            f"Successful requests:                     {done}\nMaximum request concurrency:             {conc}\n"
            f"Total input tokens:                      {tokens_in}\nTotal generated tokens:                  {tokens_out}\n"
            f"Output token throughput (tok/s):         {tok_s:.2f}\n"
            + (f"Mean TTFT (ms):                          {ttft_ms:.2f}\n" if ttft_ms is not None else "")
            + f"Mean TPOT (ms):                          {tpot_ms:.2f}\n==================================================\n")


_SERVE_BLOCK = _serve_block(64, 8, 65536, 16384, 273.07, 25.0, 900.0)


def test_a_serving_benchmark_of_a_llama_server_is_a_llama_cpp_point(tmp_path):
    # vLLM's client measuring a llama-server: the server's command line says which runtime ran, else the sidecar
    # (the client's --backend openai names none); llama.cpp's KV default is f16, not the model's dtype
    from glmbench.results import importers as im
    assert [im.server_of([(1, t, {})]) and im.server_of([(1, t, {})])[0] for t in (
        "./build/bin/llama-server -m q.gguf -np 8", "~/ik_llama.cpp/build/bin/llama-server -m q.gguf", "vllm serve Qwen/Qwen3-8B",
        "python -m vllm.entrypoints.openai.api_server --model x", "python -m sglang.launch_server --model-path x",
        "vllm bench serve --backend openai")] == ["llama.cpp", "ik_llama.cpp", "vllm", "vllm", "sglang", None]
    d = str(tmp_path)
    client = ("$ vllm bench serve --backend openai --base-url http://localhost:8080 --model Qwen3-30B-A3B "
              "--max-concurrency 8 --num-prompts 64\n")
    side = "URL: https://example.org/srv\nGPU: RTX 3090\nmodel: Qwen3-30B-A3B-Q4_K_M.gguf\n"
    _write(d, "srv.log", "$ llama-server -m Qwen3-30B-A3B-Q4_K_M.gguf -ngl 99 -np 8\n" + client + _SERVE_BLOCK, side)
    _, (r,) = pr.generic_records(os.path.join(d, "srv.log"))
    assert (r["runtime"], r["type_k"], r["n_streams"], r["test"], r["n_depth"], r["n_gen"]) == ("llama.cpp", "f16", 8, "tg", 1024, 256)
    assert r["avg_ts"] == 320.0 and "llama-server default -ctk f16" in r["note"] and r["runtime_options"] == {}
    # the server's -fa / -ub / -ctk are the point's
    _write(d, "srv4.log", "$ llama-server -m Qwen3-30B-A3B-Q4_K_M.gguf -ngl 99 -np 8 -fa on -ub 2048 -ctk q8_0 -ctv q8_0\n"
           + client + _SERVE_BLOCK, side)
    _, (r4,) = pr.generic_records(os.path.join(d, "srv4.log"))
    assert (r4["runtime_options"], r4["type_k"]) == ({"fa": "1", "ubatch": "2048"}, "q8_0")
    _write(d, "srv2.log", client + _SERVE_BLOCK, side + "runtime: llama.cpp (llama-server -np 8)\n")
    _, (r2,) = pr.generic_records(os.path.join(d, "srv2.log"))
    assert r2["runtime"] == "llama.cpp" and "the sidecar's runtime line" in r2["inferred"]["server"]
    # the client's own --backend vllm names the server: a sidecar that says otherwise is a disagreement
    _write(d, "srv3.log", client.replace("openai", "vllm") + _SERVE_BLOCK, side + "runtime: llama.cpp\n")
    with pytest.raises(SystemExit, match="the sidecar's runtime says 'llama.cpp'"):
        pr.generic_records(os.path.join(d, "srv3.log"))


def test_sidecar_key_spellings_and_a_model_file_name(tmp_path):
    side = tmp_path / "s.txt"
    side.write_text("\ufeffSource URL: https://example.org/a\nGPU(s): 2x 4090\nMODEL : Qwen3-30B-A3B-UD-Q4_K_XL.gguf\n"
                    "Run-time: ik_llama.cpp\n", encoding="utf-8")
    s = pr.read_sidecar(str(side))
    assert s == {"source_url": "https://example.org/a", "gpu": "2x 4090", "model": "Qwen3-30B-A3B-UD-Q4_K_XL.gguf",
                 "run_time": "ik_llama.cpp"}
    r = {}
    assert pr._fill_from_sidecar(r, s) == ["hardware", "split", "model", "weights"]
    assert (r["hardware"], r["n_cards"], r["split"], r["model"], r["weights"]) == ("rtx-4090", 2, "layer", "qwen3-30b-a3b",
                                                                                  "UD-Q4_K_XL")
    r = {}
    pr._fill_from_sidecar(r, {"model": "DeepSeek-V2-Lite-Chat.Q8_0.gguf", "gpu": "NVIDIA GeForce RTX 4090 24GB"})
    assert (r["model"], r["weights"], r["hardware"], r["n_cards"], r["split"]) == ("deepseek-v2-lite", "q8_0", "rtx-4090", 1, "none")


def test_a_utf16_sidecar_and_paste_read_as_their_utf8_copies(tmp_path):
    # Notepad's "Unicode" and Windows PowerShell 5's `>` save UTF-16: the sidecar's keys were replacement characters
    # ("states no URL") and the paste's lines were not read for the blank lines between a table's rows
    text = ("Source URL: https://example.org/a\r\nGPU: RTX 4090\r\nnotes: one\r\n  two\r\n")
    u8, u16 = tmp_path / "a.txt", tmp_path / "b.txt"
    u8.write_bytes(text.encode("utf-8"))
    u16.write_bytes(("\ufeff" + text).encode("utf-16-le"))
    assert pr.read_sidecar(str(u16)) == pr.read_sidecar(str(u8)) == {
        "source_url": "https://example.org/a", "gpu": "RTX 4090", "notes": "one two"}
    paste = tmp_path / "c.md"
    paste.write_bytes("| a |\r\n\r\nllama_model_load: x\r\n| b |\r\n".encode("utf-16"))
    assert pr.text_of(str(paste)).splitlines()[0] == "| a |" and pr._blank_between(str(paste), 1, 4)

def test_backends_without_a_model_mixed_cards_and_sidecar_spellings(tmp_path):
    """The second audit: ROCm / Metal / SYCL / CPU / RPC runs and mixed rigs are left out with one reason
    (never filed under CUDA or under the first card); a sidecar's "RTX 3090 x2", "2025/08/03";
    Vulkan's matrix cores; vLLM's quantized checkpoints named on the model line."""
    d = str(tmp_path)
    side = "URL: https://example.org/x\nModel: Meta-Llama-3.1-8B-Instruct-Q4_K_M.gguf\n"

    def lbrow(backend, test, ts):
        return _lbr("llama 8B Q4_K - Medium", test, ts).replace("| CUDA       |", f"| {backend:10} |")
    rocm = "ggml_cuda_init: found 1 ROCm devices:\n  Device 0: AMD Radeon RX 7900 XTX, gfx1100 (0x1100), VMM: no, Wave Size: 32\n"
    _write(d, "rocm.md", rocm + LBH + lbrow("ROCm", "pp512", "3108.40 ± 6.50") + lbrow("ROCm", "tg128", "97.13 ± 0.09"),
           side + "GPU: AMD Radeon RX 7900 XTX\n")
    with pytest.raises(pr.Skip, match=r"^rocm\.md:5: backend ROCm: glmbench has no runtime model of it \(runtime models: "
                                      r"ik_llama\.cpp \(CUDA\), llama\.cpp \(CUDA\), llama\.cpp-vulkan, sglang, vllm\) \(all 2 records\)$"):
        pr.generic_records(os.path.join(d, "rocm.md"))
    # a CPU-only build on a box whose sidecar names its (unused) 4090: not a 4090 point
    _write(d, "cpu.md", LBH + lbrow("CPU", "tg128", "14.37 ± 0.05"), side + "GPU: RTX 4090 (not used)\n")
    with pytest.raises(pr.Skip, match=r"^cpu\.md:3: backend CPU: glmbench has no runtime model"):
        pr.generic_records(os.path.join(d, "cpu.md"))
    _write(d, "metal.md", LBH + lbrow("Metal,BLAS", "tg128", "94.27 ± 0.16"), side + "GPU: Apple M2 Ultra\n")
    with pytest.raises(pr.Skip, match=r"^metal\.md:3: backend Metal: "):
        pr.generic_records(os.path.join(d, "metal.md"))
    cuda1 = "ggml_cuda_init: found 1 CUDA devices:\n  Device 0: NVIDIA GeForce RTX 3090, compute capability 8.6, VMM: yes\n"
    _write(d, "rpc.md", cuda1 + LBH + lbrow("CUDA,RPC", "tg128", "9.87 ± 0.02"), side)
    with pytest.raises(pr.Skip, match=r"^rpc\.md:5: backend RPC \(layers on another host's rpc-server"):
        pr.generic_records(os.path.join(d, "rpc.md"))
    # a build of CUDA and Vulkan (llama-bench's backend column lists both, tools/llama-bench/llama-bench.cpp
    # test::get_backend): a row whose dev column picks a CUDA device is CUDA's; one on the devices of both is left out
    both = cuda1 + ("ggml_vulkan: Found 1 Vulkan devices:\nggml_vulkan: 0 = NVIDIA GeForce RTX 3090 (NVIDIA) | uma: 0 | "
                    "fp16: 1 | warp size: 32 | shared memory: 49152 | int dot: 1 | matrix cores: KHR_coopmat\n")
    dev_head = ("| model                          |       size |     params | backend     | ngl | dev           |            test |"
                "                  t/s |\n| ------------------------------ | ---------: | ---------: | ----------- | --: | "
                "------------- | --------------: | -------------------: |\n")
    dev_row = "| llama 8B Q4_K - Medium         |   4.58 GiB |     8.03 B | CUDA,Vulkan |  99 | {:13} |           tg128 | {:>20} |\n"
    _write(d, "cv.md", both + dev_head + dev_row.format("CUDA0", "150.31 ± 0.20") + dev_row.format("CUDA0/Vulkan0", "80.10 ± 0.30"),
           side + "GPU: RTX 3090\n")
    _, (r,) = pr.generic_records(os.path.join(d, "cv.md"))
    assert (r["runtime"], r["hardware"], r["n_cards"], r["line"], r["avg_ts"]) == ("llama.cpp", "rtx-3090", 1, "cv.md:7", 150.31)
    assert "line 8: backends CUDA,Vulkan (a build of both; no -dev of one backend's devices says which ran it)" in r["note"]
    # a sweep-bench table states no backend: the sidecar's "HIP/ROCm build" does
    sweep = ("|    PP |     TG |   N_KV |   T_PP s | S_PP t/s |   T_TG s | S_TG t/s |\n"
             "|-------|--------|--------|----------|----------|----------|----------|\n"
             "|   512 |    128 |      0 |    0.341 |  1500.00 |    1.600 |    80.00 |\n")
    _write(d, "sw.md", sweep, side + "GPU: RX 7900 XTX\nRuntime: ik_llama.cpp, HIP/ROCm build\n")
    with pytest.raises(pr.Skip, match=r"^sw\.md:3: backend ROCm \(the sidecar's runtime\)"):
        pr.generic_records(os.path.join(d, "sw.md"))
    # CUDA rows kept, a CPU row of the same table left out and said in the note
    _write(d, "some.md", cuda1 + LBH + lbrow("CUDA", "tg128", "150.31 ± 0.20") + lbrow("CPU", "tg128", "14.20 ± 0.10"), side)
    _, (r,) = pr.generic_records(os.path.join(d, "some.md"))
    assert (r["line"], r["hardware"], r["avg_ts"]) == ("some.md:5", "rtx-3090", 150.31)
    assert "1 record(s) left out, no runtime model of them (line 6: backend CPU" in r["note"]
    # a 4090 + a 3090: not filed as two 4090s (the paste's device lines, or the sidecar's GPU line)
    mixed = cuda1.replace("found 1", "found 2").replace("Device 0: NVIDIA GeForce RTX 3090, compute capability 8.6",
                                                        "Device 0: NVIDIA GeForce RTX 4090, compute capability 8.9") \
        + "  Device 1: NVIDIA GeForce RTX 3090, compute capability 8.6, VMM: yes\n"
    _write(d, "mix.md", mixed + LBH + lbrow("CUDA", "tg128", "88.31 ± 0.12"), side + "GPU: RTX 4090 + RTX 3090\n")
    with pytest.raises(pr.Skip, match=r"^mix\.md:6: mixed cards \(RTX 4090 \+ RTX 3090\): the runtime models are of one card type"):
        pr.generic_records(os.path.join(d, "mix.md"))
    _write(d, "mix2.md", LBH + lbrow("CUDA", "tg128", "88.31 ± 0.12"), side + "GPU: RTX 4090 + RTX 3090\n")
    with pytest.raises(pr.Skip, match=r"^mix2\.md:3: mixed cards \(the sidecar's GPU line 'RTX 4090 \+ RTX 3090'\)"):
        pr.generic_records(os.path.join(d, "mix2.md"))
    # the sidecar's count after the name, a date with slashes
    _write(d, "two.md", LBH + lbrow("CUDA", "tg128", "52.77 ± 0.10"),
           "URL: https://example.org/two/).\nDate: 2025/08/03\nGPU: RTX 3090 x2 (NVLink)\n"
           "Model: bartowski/Meta-Llama-3.1-8B-Instruct-GGUF (Q4_K_M)\n")
    _, (r,) = pr.generic_records(os.path.join(d, "two.md"))
    assert (r["hardware"], r["n_cards"], r["split"], r["date"], r["source"], r["model"]) == (
        "rtx-3090", 2, "layer", "2025-08-03", "https://example.org/two/", "llama-3.1-8b")
    # Vulkan: the device line's matrix cores are the coopmat option; a sidecar that says otherwise is an error
    vk = ("ggml_vulkan: 0 = NVIDIA GeForce RTX 3090 (NVIDIA) | uma: 0 | fp16: 1 | warp size: 32 | shared memory: 49152 | "
          "int dot: 1 | matrix cores: KHR_coopmat\n")
    _write(d, "vk.md", vk + LBH + lbrow("Vulkan", "tg128", "113.20 ± 0.21"), side + "Runtime: llama.cpp Vulkan\n")
    _, (r,) = pr.generic_records(os.path.join(d, "vk.md"))
    assert (r["runtime"], r["hardware"], r["runtime_options"]) == ("llama.cpp-vulkan", "rtx-3090",
                                                                    {"fa": "1", "ubatch": "512", "coopmat": "khr"})
    _write(d, "vk2.md", vk + LBH + lbrow("Vulkan", "tg128", "113.20 ± 0.21"), side + "options: coopmat=nv2\n")
    with pytest.raises(SystemExit, match=r"^vk2\.md:4: the records say coopmat=khr, the sidecar's options coopmat=nv2"):
        pr.generic_records(os.path.join(d, "vk2.md"))
    # vLLM: the checkpoint's quantization on the sidecar's model line (AWQ, GPTQ-Int4, FP8)
    serve = "vllm bench serve --model x --max-concurrency 8\n" + _serve_block(100, 8, 204800, 51200, 640.0, 12.1)
    for name, model, w in (("s1", "Qwen2.5-32B-Instruct-AWQ", "awq"), ("s2", "Qwen/Qwen2.5-32B-Instruct-GPTQ-Int4", "gptq"),
                           ("s3", "RedHatAI/Qwen2.5-32B-Instruct-FP8-dynamic", "fp8_per_channel")):
        _write(d, f"{name}.log", serve, f"URL: https://example.org/{name}\nGPU: H100 NVL\nModel: {model}\n")
        _, (v,) = pr.generic_records(os.path.join(d, f"{name}.log"))
        assert (v["model"], v["weights"], v["hardware"], v["type_k"], v["n_streams"]) == ("qwen2.5-32b", w, "h100-nvl", "bf16", 8)


TINYLLAMA = {"architectures": ["LlamaForCausalLM"], "model_type": "llama", "_name_or_path": "TinyLlama/TinyLlama-1.1B-Chat-v1.0",
             "vocab_size": 32000, "hidden_size": 2048, "intermediate_size": 5632, "num_hidden_layers": 22,
             "num_attention_heads": 32, "num_key_value_heads": 4, "hidden_act": "silu", "max_position_embeddings": 2048,
             "rms_norm_eps": 1e-05, "rope_theta": 10000.0, "tie_word_embeddings": False}


def test_a_config_beside_the_pastes_names_a_model_not_built_in(tmp_path, capsys):
    """The published set ships HF configs beside its pastes (llama3-8b.json): a paste whose model is
    no built-in but one of those configs (named by the sidecar's model line) is read with it, its
    records name `configs/<file>`, copied beside them, and --check predicts them from it."""
    src, out = tmp_path / "src", tmp_path / "out"
    src.mkdir()
    (src / "tinyllama-1.1b.json").write_text(json.dumps(TINYLLAMA))
    (src / "erin-tiny.md").write_text(      # sweep-bench's table (numbers made up for the test)
        "main: n_kv_max = 16896, n_batch = 2048, n_ubatch = 512, flash_attn = 1, n_gpu_layers = 99\n\n"
        "|    PP |     TG |   N_KV |   T_PP s | S_PP t/s |   T_TG s | S_TG t/s |\n"
        "|-------|--------|--------|----------|----------|----------|----------|\n"
        "|   512 |    128 |      0 |    0.040 | 12800.00 |    0.400 |   320.00 |\n"
        "|   512 |    128 |   4096 |    0.060 |  8533.33 |    0.500 |   256.00 |\n")
    (src / "erin-tiny.txt").write_text("URL: https://example.org/erin\nRuntime: ik_llama.cpp, CUDA\nGPU: RTX 3090\n"
                                       "Model: TinyLlama-1.1B-Chat-v1.0 Q8_0\n"
                                       "Command: ./llama-sweep-bench -m tinyllama-1.1b-chat-v1.0.Q8_0.gguf -c 16896 -ngl 99 -fa\n")
    _put(str(src), XD, "frank.md", "URL: https://example.org/frank\nGPU: rtx3090\nModel: Meta Llama 3 8B f16\n")
    pr.main([str(src), "--out", str(out)])
    said = capsys.readouterr().out
    assert "tinyllama-1.1b.json: an HF config, for the pastes that name it" in said
    recs = _load(out, "erin-tiny")
    assert recs and {r["model"] for r in recs} == {"configs/tinyllama-1.1b.json"}
    assert "HF config tinyllama-1.1b.json" in recs[0]["inferred"]["model"]
    assert json.load(open(out / "configs" / "tinyllama-1.1b.json")) == TINYLLAMA
    assert {r["model"] for r in _load(out, "frank")} == {"llama-3-8b"}    # a built-in named: no config needed
    pts, notes = bpf.check_points(str(out))
    tiny = [p for p in pts if p.source == "erin-tiny"]
    assert len(tiny) == len(recs) and not [n for n in notes if "erin" in n]
    res = bpf.check(pts, {rt: __import__("glmbench").predict.costmodel.load_runtime(rt) for rt in {p.runtime for p in pts}})
    assert all(pred > 0 for p, pred in res["ik_llama.cpp"] if p.source == "erin-tiny")


def test_flash_attention_auto_and_the_old_default(tmp_path):
    """llama-bench's -fa: `auto` (-1 in its json, its default since mid-2025) runs flash attention on
    CUDA, so the runtime model takes fa=1; a markdown table of a build before the auto mode prints no
    fa column when it was off (that build's default), so it is fa=0."""
    src, out = tmp_path / "src", tmp_path / "out"
    src.mkdir()
    rec = {"build_commit": "0c1e5707", "build_number": 7500, "backends": "CUDA", "gpu_info": "NVIDIA GeForce RTX 4090",
           "model_filename": "/m/Qwen3-8B-Q4_K_M.gguf", "model_type": "qwen3 8B Q4_K - Medium", "model_size": 5027783488,
           "model_n_params": 8190735360, "n_batch": 2048, "n_ubatch": 512, "n_threads": 16, "type_k": "f16",
           "type_v": "f16", "n_gpu_layers": 99, "split_mode": "layer", "main_gpu": 0, "no_kv_offload": False,
           "flash_attn": -1, "n_prompt": 512, "n_gen": 0, "n_depth": 0, "avg_ns": 40000000, "stddev_ns": 100000,
           "avg_ts": 12800.0, "stddev_ts": 30.0}
    (src / "gina.json").write_text(json.dumps([rec, dict(rec, n_prompt=0, n_gen=128, avg_ts=130.0)]))
    (src / "gina.txt").write_text("URL: https://example.org/gina\n")
    (src / "hank.md").write_text(
        "| model                          |       size |     params | backend    | ngl |            test |                  t/s |\n"
        "| ------------------------------ | ---------: | ---------: | ---------- | --: | --------------: | -------------------: |\n"
        "| qwen3 8B Q4_K - Medium         |   4.68 GiB |     8.19 B | CUDA       |  99 |           pp512 |      8000.00 ± 10.00 |\n"
        "| qwen3 8B Q4_K - Medium         |   4.68 GiB |     8.19 B | CUDA       |  99 |           tg128 |        120.00 ± 0.10 |\n"
        "\nbuild: 1d36b367 (4040)\n")
    (src / "hank.txt").write_text("URL: https://example.org/hank\nGPU: RTX 4090\n")
    pr.main([str(src), "--out", str(out)])
    g, h = _load(out, "gina"), _load(out, "hank")
    assert {r["flash_attn"] for r in g} == {-1} and {r["runtime_options"]["fa"] for r in g} == {"1"}
    assert "auto" in g[0]["inferred"]["flash_attn"]
    assert {r["flash_attn"] for r in h} == {0} and {r["runtime_options"]["fa"] for r in h} == {"0"}
    assert "build 4040" in h[0]["inferred"]["flash_attn"]
    pts, notes = bpf.check_points(str(out))
    assert len(pts) == 4 and not notes


@pytest.mark.parametrize("gpu,key,n", [("4090", "rtx-4090", 1), ("3090 Ti", "rtx-3090-ti", 1), ("2x 3090", "rtx-3090", 2),
                                       ("5090 x2", "rtx-5090", 2), ("4070 super", "rtx-4070-super", 1),
                                       ("Dual RTX 3090", "rtx-3090", 2), ("two RTX 3090s", "rtx-3090", 2),
                                       ("NVIDIA GeForce RTX 4090 (24 GB, PCIe 4.0 x16)", "rtx-4090", 1),
                                       ("3080Ti_12GB", "rtx-3080-ti", 1), ("4060Ti_16GB", "rtx-4060-ti-16gb", 1),
                                       ("RTX6000Ada", "rtx-6000-ada", 1), ("RTX4000Ada", "rtx-4000-ada", 1),
                                       # with memory and form factor (the third audit)
                                       ("1x H100 80GB PCIe", "h100-pcie", 1), ("2x NVIDIA A100 80GB PCIe", "a100-pcie-80gb", 2),
                                       ("4 x NVIDIA A100-SXM4-40GB", "a100-sxm-40gb", 4),
                                       ("2x NVIDIA RTX 6000 Ada Generation", "rtx-6000-ada", 2),
                                       ("4x RTX 3090 (PCIe 4.0 x8)", "rtx-3090", 4), ("1x H100 80GB SXM5", "h100-sxm", 1),
                                       ("8x NVIDIA H200 141GB SXM", "h200-sxm", 8), ("RTX 4090 24GB", "rtx-4090", 1)])
def test_sidecar_gpu_lines_as_people_write_them(gpu, key, n):
    r = {"hardware": None}
    assert "hardware" in pr._fill_from_sidecar(r, {"gpu": gpu})
    assert (r["hardware"], r["n_cards"]) == (key, n)


@pytest.mark.parametrize("init,build,era", [
    ("ggml_cuda_init: CUDA_USE_TENSOR_CORES: yes\n", 2843, "2024-cublas"),   # the 2024 builds' line
    ("ggml_cuda_init: GGML_CUDA_FORCE_MMQ:    no\nggml_cuda_init: GGML_CUDA_FORCE_CUBLAS: no\n", 6500, None),  # MMQ: the model's own
    ("", 2950, "2024-cublas"),                                               # no init lines: the build number
    ("", 3200, None),                                                        # near the change: not guessed
    ("", 4040, None)])                                                       # after it: MMQ
def test_cuda_prefill_path_from_the_paste(tmp_path, init, build, era):
    """Mainline llama.cpp's quantized prefill path (the runtime model's `era`): dequantize + cuBLAS in the
    2024 builds that print CUDA_USE_TENSOR_CORES: yes, MMQ after (the model's own path: no option)."""
    src, out = tmp_path / "src", tmp_path / "out"
    src.mkdir()
    (src / "ivan.md").write_text(
        init + "| model                          |       size |     params | backend    | ngl |            test |                  t/s |\n"
        "| ------------------------------ | ---------: | ---------: | ---------- | --: | --------------: | -------------------: |\n"
        "| llama 8B Q4_K - Medium         |   4.58 GiB |     8.03 B | CUDA       |  99 |           pp512 |      4000.00 ± 10.00 |\n"
        f"\nbuild: 1d36b367 ({build})\n")
    (src / "ivan.txt").write_text("URL: https://example.org/ivan\nGPU: RTX 3090\nModel: Llama-3.1-8B Q4_K_M\n")
    pr.main([str(src), "--out", str(out)])
    (r,) = _load(out, "ivan")
    assert r["runtime_options"].get("era") == era
    if era or init:
        assert r["inferred"]["era"].startswith(era or "mmq")


def test_the_old_fa_default_is_mainline_llama_bench_s_only(tmp_path):
    # a plain llama-bench table whose sidecar says ik_llama.cpp: ik's build numbers and defaults are its
    # own, so its missing fa column says nothing (the runtime model's default)
    src, out = tmp_path / "src", tmp_path / "out"
    src.mkdir()
    (src / "judy.md").write_text(
        "| model                          |       size |     params | backend    | ngl |            test |                  t/s |\n"
        "| ------------------------------ | ---------: | ---------: | ---------- | --: | --------------: | -------------------: |\n"
        "| llama 8B Q4_K - Medium         |   4.58 GiB |     8.03 B | CUDA       |  99 |           tg128 |        150.00 ± 0.50 |\n"
        "\nbuild: 6e2b5c35 (3600)\n")
    (src / "judy.txt").write_text("URL: https://example.org/judy\nGPU: RTX 4090\nModel: Llama-3.1-8B Q4_K_M\n"
                                  "Runtime: ik_llama.cpp, CUDA\n")
    pr.main([str(src), "--out", str(out)])
    (r,) = _load(out, "judy")
    assert r["runtime"] == "ik_llama.cpp" and "flash_attn" not in r and "fa" not in r["runtime_options"]


# ---- the third audit ------------------------------------------------------------------------------
def test_a_sidecar_command_with_llama_bench_lists(tmp_path):
    # the sidecar's `llama-bench -fa 0,1`: both rows kept, each with its fa column (not "the command says 1")
    d = str(tmp_path)
    head = LBH.replace("| fa |", "| fa |")
    rows = _lbr("llama 8B Q4_K - Medium", "pp512", "9812.30 ± 40.10").replace("|  1 |", "|  0 |") \
        + _lbr("llama 8B Q4_K - Medium", "pp512", "10410.20 ± 41.30")
    _write(d, "fa01.md", head + rows + "\nbuild: 2b3c4d5e (6500)\n",
           "URL: https://example.org/fa01\nGPU: NVIDIA A100-SXM4-80GB\nModel: Meta-Llama-3-8B-Instruct Q4_K_M\n"
           "Command: llama-bench -m Meta-Llama-3-8B-Instruct-Q4_K_M.gguf -fa 0,1 -ub 512,2048\n")
    _, recs = pr.generic_records(os.path.join(d, "fa01.md"))
    assert [(r["flash_attn"], r["runtime_options"]["fa"], r["avg_ts"]) for r in recs] == [(0, "0", 9812.3), (1, "1", 10410.2)]
    assert {r["hardware"] for r in recs} == {"a100-sxm-80gb"} and "n_ubatch" not in recs[0].get("from_sidecar", [])


def test_runs_partly_on_the_cpu_said_only_on_a_command_line(tmp_path):
    # a sweep-bench table has no column for -ot / --n-cpu-moe / -nkvo: its pasted command line, else the
    # sidecar's, says the experts or the KV cache were on the CPU; left out as such
    d = str(tmp_path)
    sweep = ("main: n_kv_max = 8192, n_batch = 2048, n_ubatch = 2048, flash_attn_type = 1, n_gpu_layers = 99, n_threads = 16, "
             "n_threads_batch = 16\n\n"
             "|    PP |     TG |   N_KV |   T_PP s | S_PP t/s |   T_TG s | S_TG t/s |\n"
             "|-------|--------|--------|----------|----------|----------|----------|\n"
             "|  2048 |    512 |      0 |    4.995 |   410.00 |   36.056 |    14.20 |\n")
    side = "URL: https://example.org/air\nGPU: RTX 3090\nModel: unsloth/GLM-4.5-Air-GGUF Q4_K_M\n"
    _write(d, "ncmoe.md", "llama-sweep-bench -m GLM-4.5-Air-Q4_K_M-00001-of-00002.gguf -c 8192 -ngl 99 --n-cpu-moe 28 -fa on\n\n"
           + sweep, side)
    with pytest.raises(pr.Skip, match=r"^ncmoe\.md: every record ran partly on the CPU \(line 7: n_cpu_moe 28 \(expert weights "
                                      r"on the CPU\)\): not an all-GPU point$"):
        pr.generic_records(os.path.join(d, "ncmoe.md"))
    _write(d, "side.md", sweep, side + "Command: llama-sweep-bench -m GLM-4.5-Air-Q4_K_M.gguf -c 8192 -ngl 99 -ot exps=CPU -fa on\n")
    with pytest.raises(pr.Skip, match=r"^side\.md: every record ran partly on the CPU \(line 5: tensor overrides 'exps=CPU' "
                                      r"\(-ot: tensors on another buffer\) \(the sidecar's command line\)\)"):
        pr.generic_records(os.path.join(d, "side.md"))
    # all on the GPU: kept
    _write(d, "gpu.md", sweep, side + "Command: llama-sweep-bench -m GLM-4.5-Air-Q4_K_M.gguf -c 8192 -ngl 99 -fa on\n")
    _, recs = pr.generic_records(os.path.join(d, "gpu.md"))
    assert [(r["test"], r["avg_ts"]) for r in recs] == [("pp", 410.0), ("tg", 14.2)]


@pytest.mark.parametrize("date,iso", [("2025-03-14", "2025-03-14"), ("14 Mar 2025", "2025-03-14"), ("3 Nov 2025", "2025-11-03"),
                                      ("March 2025", "2025-03"), ("Sept. 2025", "2025-09"), ("Feb 2026", "2026-02"),
                                      ("Apr 19, 2025", "2025-04-19"), ("the 21st March 2025", "2025-03-21"),
                                      ("Sun Nov  2 10:43:25 2025", "2025-11-02"), ("sometime in spring", "sometime in spring")])
def test_sidecar_dates_as_people_write_them(date, iso):
    assert pr._date_of({"date": date}) == iso


def test_the_cards_a_run_used_of_the_sidecar_s_gpu_line(tmp_path):
    # "GPU: 2x RTX 6000 Ada" names the box; the command ran on the cards CUDA_VISIBLE_DEVICES / -sm none / -tp name
    d = str(tmp_path)
    sweep = ("main: n_kv_max = 8192, n_batch = 2048, n_ubatch = 512, flash_attn = 1, n_gpu_layers = 99, n_threads = 16, "
             "n_threads_batch = 16\n\n|    PP |     TG |   N_KV |   T_PP s | S_PP t/s |   T_TG s | S_TG t/s |\n"
             "|-------|--------|--------|----------|----------|----------|----------|\n"
             "|   512 |    128 |      0 |    0.121 |  4231.40 |    1.161 |   110.25 |\n")
    side = ("URL: https://example.org/ada\nRuntime: ik_llama.cpp CUDA\nGPU: 2x NVIDIA RTX 6000 Ada Generation\n"
            "Model: Llama-3.1-8B-Instruct Q4_K_M\n")
    for name, cmd, n in (("one", "CUDA_VISIBLE_DEVICES=0 llama-sweep-bench -m M.gguf -c 8192 -ngl 99 -fa", 1),
                         ("smnone", "llama-sweep-bench -m M.gguf -c 8192 -ngl 99 -fa -sm none", 1),
                         ("both", "llama-sweep-bench -m M.gguf -c 8192 -ngl 99 -fa", 2)):
        _write(d, f"{name}.md", sweep, side + f"Command: {cmd}\n")
        _, recs = pr.generic_records(os.path.join(d, f"{name}.md"))
        assert {(r["hardware"], r["n_cards"], r["split"]) for r in recs} == {("rtx-6000-ada", n, "none" if n == 1 else "layer")}
    # vLLM: the server's -tp in the paste (no card named there) over the sidecar's "8x"; the sidecar's -tp where the paste has none
    serve = ("vllm bench serve --model Qwen/Qwen2.5-32B-Instruct --max-concurrency 8\n============ Serving Benchmark Result ============\n"
             "Successful requests:                     100\nMaximum request concurrency:             8\n"
             "Total input tokens:                      204800\nTotal generated tokens:                  51200\n"
             "Output token throughput (tok/s):         640.00\nMean TPOT (ms):                          12.10\n"
             "==================================================\n")
    vside = "URL: https://example.org/v\nGPU: 8x H100 80GB SXM5\nModel: Qwen/Qwen2.5-32B-Instruct BF16\n"
    _write(d, "tp2.log", "vllm serve Qwen/Qwen2.5-32B-Instruct -tp 2\n" + serve, vside)
    _, (v,) = pr.generic_records(os.path.join(d, "tp2.log"))
    assert (v["hardware"], v["n_cards"], v["split"]) == ("h100-sxm", 2, "tensor")
    _write(d, "tp4.log", serve, vside + "Server: vllm serve Qwen/Qwen2.5-32B-Instruct --tensor-parallel-size 4\n")
    _, (v,) = pr.generic_records(os.path.join(d, "tp4.log"))
    assert (v["hardware"], v["n_cards"], v["split"]) == ("h100-sxm", 4, "tensor")


def test_a_model_or_card_the_paste_states_but_glmbench_has_none_of(tmp_path):
    # the skip line says what the paste states and that glmbench has no config / profile of it (not "stated neither")
    d = str(tmp_path)
    cuda = "ggml_cuda_init: found 1 CUDA devices:\n  Device 0: NVIDIA GeForce RTX 5090, compute capability 12.0, VMM: yes\n"
    # (Falcon-H1: priced, but no built-in is one, so a paste without a config beside it names no model; llama.cpp's
    # falcon-h1 labels 24 layers 1.5B, src/models/falcon-h1.cpp. LFM2's rows name its
    # built-ins since they were added: tests/test_builtins_recalled.py)
    from glmbench.models import configs
    assert "falcon_h1" in configs.FAMILIES and not any(n.startswith("falcon") for n in configs.builtin_names())
    _write(d, "falconh1.md", cuda + LBH + _lbr("falcon-h1 1.5B Q4_K - Medium", "tg128", "98.60 ± 0.40", "0.98 GiB",
                                              "1.55 B"),
           "URL: https://example.org/falconh1\nModel: tiiuae/Falcon-H1-1.5B-Instruct Q4_K_M\n")
    with pytest.raises(pr.Skip, match=r"^falconh1\.md:5: model 'falcon-h1 1\.5B Q4_K - Medium' \(1\.55 B params\) is "
                                      r"no built-in model, and no HF config beside the pastes"):
        pr.generic_records(os.path.join(d, "falconh1.md"))
    vk = ("ggml_vulkan: 0 = AMD Radeon RX 7900 XTX (RADV NAVI31) (radv) | uma: 0 | fp16: 1 | bf16: 0 | warp size: 64 | shared "
          "memory: 65536 | int dot: 1 | matrix cores: KHR_coopmat\n")
    _write(d, "amd.md", vk + LBH + _lbr("llama 8B Q4_K - Medium", "tg128", "98.60 ± 0.40").replace("| CUDA       |", "| Vulkan     |"),
           "URL: https://example.org/amd\nRuntime: llama.cpp Vulkan\nModel: Llama-3.1-8B-Instruct Q4_K_M\n")
    with pytest.raises(pr.Skip, match=r"^amd\.md:4: card 'AMD Radeon RX 7900 XTX' is not in glmbench's GPU catalog"):
        pr.generic_records(os.path.join(d, "amd.md"))


def test_llama_bench_progress_lines_do_not_split_a_table(tmp_path):
    d = str(tmp_path)
    prog = "llama-bench: benchmark 2/2: starting\nllama-bench: benchmark 2/2: generation run 1/5\n"
    _write(d, "prog.md", LBH + _lbr("llama 8B Q4_K - Medium", "pp512", "8120.00 ± 10.00") + prog
           + _lbr("llama 8B Q4_K - Medium", "tg128", "150.00 ± 0.50"),
           "URL: https://example.org/prog\nGPU: RTX 4090\nModel: Llama-3.1-8B Q4_K_M\n")
    _, recs = pr.generic_records(os.path.join(d, "prog.md"))
    assert [(r["test"], r["avg_ts"], r.get("table")) for r in recs] == [("pp", 8120.0, None), ("tg", 150.0, None)]


def test_the_mainline_sweep_bench_port_with_ik_s_header(tmp_path):
    # the mainline port of sweep-bench built before mainline's Aug-2025 API printed ik_llama.cpp's header
    # (flash_attn = 1): a sidecar that says mainline llama.cpp files it there (it stopped the whole run)
    d = str(tmp_path)
    sweep = ("main: n_kv_max = 16384, n_batch = 2048, n_ubatch = 2048, flash_attn = 1, n_gpu_layers = 99, n_threads = 16, "
             "n_threads_batch = 16\n\n|    PP |     TG |   N_KV |   T_PP s | S_PP t/s |   T_TG s | S_TG t/s |\n"
             "|-------|--------|--------|----------|----------|----------|----------|\n"
             "|  2048 |    512 |      0 |    0.335 |  6120.00 |    2.994 |   171.00 |\n")
    side = "URL: https://example.org/port\nGPU: RTX 4090\nModel: unsloth/Qwen3-30B-A3B-GGUF Q4_K_M\n"
    _write(d, "port.md", sweep, side + "Runtime: llama.cpp mainline (ubergarm's port of sweep-bench), CUDA\n")
    _, recs = pr.generic_records(os.path.join(d, "port.md"))
    assert {(r["runtime"], r["tool"], r["runtime_options"]["ubatch"]) for r in recs} == {
        ("llama.cpp", "llama-sweep-bench (mainline port)", "2048")} and "runtime" in recs[0]["from_sidecar"]
    # the same table under ik_llama.cpp's sidecar, or none, stays ik_llama.cpp's
    _write(d, "ik.md", sweep, side + "Runtime: ik_llama.cpp CUDA\n")
    _, recs = pr.generic_records(os.path.join(d, "ik.md"))
    assert {r["runtime"] for r in recs} == {"ik_llama.cpp"}


def test_a_sidecar_that_names_two_backends_or_two_forks(tmp_path):
    # "CUDA vs Vulkan builds": each table's own backend says which (it stopped the whole run on a runtime conflict)
    d = str(tmp_path)
    cuda = "ggml_cuda_init: found 1 CUDA devices:\n  Device 0: NVIDIA GeForce RTX 4070, compute capability 8.9, VMM: yes\n"
    vk = ("ggml_vulkan: 0 = NVIDIA GeForce RTX 4070 (NVIDIA) | uma: 0 | fp16: 1 | bf16: 1 | warp size: 32 | shared memory: "
          "49152 | int dot: 1 | matrix cores: NV_coopmat2\n")
    row = _lbr("qwen3 8B Q4_K - Medium", "tg128", "81.30 ± 0.20", "4.68 GiB", "8.19 B")
    _write(d, "cv.md", "### CUDA\n\n" + cuda + LBH + row + "\nbuild: 6e7fc8a1 (6410)\n\n### Vulkan\n\n" + vk + LBH
           + row.replace("| CUDA       |", "| Vulkan     |").replace("81.30", "84.00") + "\nbuild: 6e7fc8a1 (6410)\n",
           "URL: https://example.org/cv\nRuntime: llama.cpp b6410, CUDA vs Vulkan builds\nGPU: RTX 4070\nModel: Qwen3-8B Q4_K_M\n")
    _, recs = pr.generic_records(os.path.join(d, "cv.md"))
    assert [(r["runtime"], r["backend"], r["avg_ts"], r["runtime_options"].get("coopmat")) for r in recs] == [
        ("llama.cpp", "CUDA", 81.3, None), ("llama.cpp-vulkan", "Vulkan", 84.0, "nv2")]
    assert [pr.sidecar_runtime(t) for t in ("llama.cpp, CUDA vs Vulkan", "llama.cpp Vulkan", "ik_llama.cpp vs mainline llama.cpp",
                                            "ik_llama.cpp (a fork of llama.cpp)", "ik_llama.cpp, CUDA and Vulkan")] == [
        "llama.cpp", "llama.cpp-vulkan", None, "ik_llama.cpp", "ik_llama.cpp"]


def test_sidecar_keys_people_also_use(tmp_path):
    # Thread / Posted / Setup / Software / Model file + Quant / Command line: read as URL, date, GPU, runtime, model, command
    d = str(tmp_path)
    sweep = ("main: n_kv_max = 8192, n_batch = 2048, n_ubatch = 512, flash_attn = 1, n_gpu_layers = 99, n_threads = 16, "
             "n_threads_batch = 16\n\n|    PP |     TG |   N_KV |   T_PP s | S_PP t/s |   T_TG s | S_TG t/s |\n"
             "|-------|--------|--------|----------|----------|----------|----------|\n"
             "|   512 |    128 |      0 |    0.412 |  1242.72 |    4.120 |    31.07 |\n")
    _write(d, "keys.md", sweep,
           "Thread: https://www.reddit.com/r/LocalLLaMA/comments/1abc/x/\nPosted: March 2025\n"
           "Setup: 2x RTX 3090 (NVLink), Ryzen 9 5950X\nSoftware: ik_llama.cpp (CUDA 12.4)\n"
           "Model file: Qwen2.5-32B-Instruct.gguf\nQuant: Q4_K_M\n"
           "Command line: CUDA_VISIBLE_DEVICES=0,1 llama-sweep-bench -m Qwen2.5-32B-Instruct.gguf -c 8192 -ngl 99 -fa -ctk q8_0\n")
    _, recs = pr.generic_records(os.path.join(d, "keys.md"))
    r = recs[0]
    assert (r["source"], r["date"], r["hardware"], r["n_cards"], r["runtime"], r["model"], r["weights"], r["type_k"]) == (
        "https://www.reddit.com/r/LocalLLaMA/comments/1abc/x/", "2025-03", "rtx-3090", 2, "ik_llama.cpp", "qwen2.5-32b",
        "Q4_K_M", "q8_0")
    assert r["command"].startswith("CUDA_VISIBLE_DEVICES=0,1 llama-sweep-bench")


def test_a_file_in_error_is_left_out_and_the_others_are_read(tmp_path, capsys, monkeypatch):
    """A paste whose sidecar disagrees with it (here the runtime) or that the importer cannot read is
    left out with its reason; the run goes on and writes every other file's records (one bad file in
    a folder of someone's published results must not lose the rest)."""
    src, out = tmp_path / "src", tmp_path / "out"
    src.mkdir()
    _unseen(str(src))
    _put(str(src), VK, "zz-conflict.md", "URL: https://example.org/y\nRuntime: ik_llama.cpp CUDA\n")
    with open(src / "zz-garbled.md", "w") as f:
        f.write("| model | size | params | backend | ngl | test | t/s |\n|---|---|---|---|---|---|---|\n"
                "| llama 8B Q4_0 | 4.33 GiB | 8.03 B | CUDA | 99 | pp512 | \x00\x01 |\n")
    with open(src / "zz-garbled.txt", "w") as f:
        f.write("URL: https://example.org/z\nGPU: RTX 4090\n")
    real = pr.generic_records

    def flaky(path, *a, **k):           # an importer fault on one file (a bug): reported, the run goes on
        if os.path.basename(path) == "zz-garbled.md":
            raise RuntimeError("importer fault")
        return real(path, *a, **k)
    monkeypatch.setattr(pr, "generic_records", flaky)
    pr.main([str(src), "--out", str(out)])
    said = capsys.readouterr().out
    assert "error, left out zz-garbled.md: RuntimeError: importer fault (not read; please report it)" in said
    assert re.search(r"^error, left out zz-conflict\.md: zz-conflict\.md:\d+: the import implies runtime "
                     r"'llama.cpp-vulkan'.*sidecar's runtime says 'ik_llama.cpp'", said, re.M)
    assert "zz-conflict.json" not in os.listdir(out)
    # the four good sources are all written
    assert {"alice-8b-f16-3090.json", "bob_5090_vulkan.json", "carol-dsv2lite.json", "dave-vllm.json"} <= set(os.listdir(out))
    assert "119 records from 4 sources" in said
    assert re.search(r"^2 file\(s\) left out for the errors above: zz-conflict\.md, zz-garbled\.md$", said, re.M)


def test_card_count_from_the_command_line_one_rule():
    """The sidecar path (public_records._cards_run) and the paste path (importers._block_meta) count
    the cards a command line ran on by one rule (importers.cards_from_command): -sm none is one card
    even with two visible devices; -dev A/B is two; a llama-bench list -dev A,B (separate runs) says
    nothing about one row; CUDA_VISIBLE_DEVICES, then -tp."""
    from glmbench.results import importers as im
    assert pr._cards_run("CUDA_VISIBLE_DEVICES=0,1 ./llama-bench -m x.gguf -sm none", 2) == 1
    assert pr._cards_run("./llama-bench -m x.gguf -dev CUDA0/CUDA1", 4) == 2
    assert pr._cards_run("./llama-bench -m x.gguf -dev CUDA0,CUDA1", 3) == 3
    assert pr._cards_run("CUDA_VISIBLE_DEVICES=0,1,2 ./llama-bench -m x.gguf", 4) == 3
    assert pr._cards_run("vllm serve m -tp 2", 4) == 2
    assert pr._cards_run("./llama-bench -m x.gguf", 2) == 2
    assert pr._cards_run(None, 1) == 1
    opts = im._command_args("CUDA_VISIBLE_DEVICES=0,1 ./llama-bench -m x.gguf", {})
    assert im.cards_from_command(opts) == (2, "CUDA_VISIBLE_DEVICES")
    assert im.cards_from_command(opts, device_lines=True) == (None, None)   # the device lines list them


def test_check_takes_a_folder_of_published_results_as_pasted(tmp_path):
    """--check on a folder laid out as the published set is (pastes with their sidecars, a
    scoreboard copy in a subfolder): the pastes go through bench/public_records.py first (a file it
    skips is a note), the scoreboard through the importer; one command, every point predicted."""
    src = tmp_path / "pub"
    src.mkdir()
    _unseen(str(src))
    shutil.copy(os.path.join(PASTED, XD), str(src / "no-sidecar.md"))          # skipped: no sidecar
    (src / "board").mkdir()
    (src / "board" / "scoreboard.csv").write_text(
        "gpu,gpu_device_name,n_gpus,model,quant,backend,fa,test,depth,t_s,stddev,build,date,url,via,notes\n"
        'RTX 4090,NVIDIA GeForce RTX 4090,1,"llama 7B Q4_0 (llama-2-7b.Q4_0.gguf, 3.56 GiB, 6.74 B)",Q4_0,CUDA,1,'
        "tg128,0,150.0,,,,https://example.org/board,by hand,\n")
    assert bpf.published_folder(str(src)) and not bpf.published_folder(str(tmp_path / "nothing"))
    pts, notes = bpf.check_points(str(src))
    assert len(pts) == 120                               # the four pastes' 119 and the scoreboard row
    assert any(p.setup.model.name == "llama-2-7b" and p.gpu_key == "rtx-4090" for p in pts)
    assert any(n.startswith("skipped no-sidecar.md") for n in notes)
    res = tmp_path / "res"
    bpf.main(["--check", str(src), "--out", str(res)])
    (path,) = glob.glob(str(res / "public_check_*.md"))
    text = open(path).read()
    assert "| llama.cpp | scoreboard |" in text and "skipped no-sidecar.md" in text


def test_check_reads_every_results_file_of_a_folder_once(tmp_path):
    """--check on a folder without sidecars: every results file the importer reads (llama-bench's
    json / csv / md of one run, a sweep-bench paste), each point counted once whatever file holds it;
    what it cannot use is a note saying why (a paste naming no card, a file that is no results file),
    never a silent skip."""
    forms = os.path.join(ROOT, "tests", "data", "formats")     # the copies of ../shared/formats
    d = tmp_path / "mine"
    d.mkdir()
    for f in ("llama-bench.json", "llama-bench.csv", "llama-bench.md", "sweep-bench.md"):
        shutil.copy(os.path.join(forms, f), d / f)
    (d / "notes.md").write_text("# my notes\n\nnothing measured here\n")
    pts, notes = bpf.check_points(str(d))
    one, _ = bpf.check_points(str(d / "llama-bench.json"))
    assert len(one) == 6 and len(pts) == 6                       # json and csv: the same six points, once
    assert {(p.label, p.measured) for p in pts} == {(p.label, p.measured) for p in one}
    assert sum("the same point as" in n for n in notes) == 6
    assert any(n.startswith("llama-bench.md:") and "names no card" in n and "llama-bench.txt" in n for n in notes)
    assert any(n.startswith("sweep-bench.md:") and "names no card" in n for n in notes)
    assert any(n.startswith("notes.md: not read") for n in notes)


def test_check_reads_the_studys_records_by_their_runtime_model(tmp_path):
    """glmbench/data/measured's records say the runtime in words ("ik_llama.cpp (after its MLA
    attention fixes)") and the runtime model apart (`runtime_model`): --check takes the model, and
    lists each point with its signed error, the largest first."""
    assert bpf.rtm.from_record({"runtime": "ik_llama.cpp (after its MLA attention fixes)",
                                "runtime_model": "ik_llama.cpp"}) == "ik_llama.cpp"
    assert bpf.rtm.from_record({"runtime": "something else", "tool": "llama-bench"}) == "llama.cpp"
    d = os.path.join(ROOT, "glmbench", "data", "measured")
    pts, notes = bpf.check_points(d)
    assert len(pts) == 10 and not notes
    assert sorted({p.runtime for p in pts}) == ["ik_llama.cpp", "llama.cpp"]
    pairs = bpf.check(pts, {rt: bpf.cm.load_runtime(rt) for rt in ("ik_llama.cpp", "llama.cpp")})
    rows = [ln for ln in bpf.point_rows(pairs) if ln.startswith("| ik_llama.cpp |") or ln.startswith("| llama.cpp |")]
    assert len(rows) == 10
    errs = [float(r.rstrip(" |").rsplit("|", 1)[1].strip().rstrip("%")) for r in rows]
    assert errs == sorted(errs, key=lambda e: -abs(e))
    for p, q in pairs["llama.cpp"]:
        assert any(f"| {p.label} |" in r and f"| {p.measured:.2f} | {q:.2f} | {q / p.measured - 1:+.1%} |" in r
                   for r in rows)


def test_check_pasted_batched_bench(tmp_path):
    """A pasted llama-batched-bench table with its sidecar (llama.cpp's own GB10 page, bench/checks/):
    --check reads it the generic way and predicts its points of several streams apart, by the shipped
    llama.cpp model (bench_public_batched.py's predictions of the same table); public_records.py
    without --keep-batched still leaves it out (the fit's input stays single-stream)."""
    import shutil
    src = tmp_path / "src"
    src.mkdir()
    here = os.path.join(ROOT, "bench", "checks", "gb10-glm-4.7-flash")
    for f in ("glm-4.7-flash-q8_0_gb10_batched.md", "glm-4.7-flash-q8_0_gb10_batched.txt"):
        shutil.copy(os.path.join(here, f), src / f)
    several = []
    pts, notes = bpf.check_points(str(src), several)
    assert not pts and len(several) == 36
    assert {p.batch for p in several} == {1, 2, 4, 8, 16, 32} and {p.test for p in several} == {"pp", "tg"}
    assert all(p.options.get("fa") == "1" and p.options.get("ubatch") == "2048" for p in several)
    one = next(p for p in several if p.test == "tg" and p.batch == 16 and p.n_depth == 4096)
    assert one.measured == 135.70
    s = one.setup
    assert bpf.predict_batched(one) == pytest.approx(16 / bpf.cm._mean_decode(s, 4096, 32, 16)[0])
    pp = next(p for p in several if p.test == "pp" and p.batch == 4 and p.n_prompt == 512)
    assert bpf.predict_batched(pp) == pytest.approx(bpf.cm.prefill_batch(pp.setup, 512, 4).tok_s)
    lines = bpf.run_checks([str(src)])
    text = "\n".join(lines)
    assert "### Several streams (llama-batched-bench; never fitted)" in text
    assert re.search(r"\| llama.cpp \| glm-4.7-flash-q8_0_gb10_batched \| gb10 \| glm-4.7-flash \| 36 \| \d+\.\d% \| \d+\.\d% \|",
                     text)
    out = tmp_path / "recs"
    pr.main([str(src), "--out", str(out)])            # the fit's reading: no single-stream record, skipped
    assert not glob.glob(str(out / "*.json"))


def test_serving_runs_are_replayed_as_they_ran_and_an_open_loop_is_kept(tmp_path):
    """--check keeps each serving benchmark's run as it ran (`serving_run`: mean TTFT and TPOT, the client's
    concurrency and request rate, the server's limits) and replays its client (bench_public_fit.predict_serving,
    replay.bench_serve): a closed loop (--max-concurrency) is also a decode point; an open loop (--request-rate,
    no maximum concurrency) has none but is still checked. The fit's reading (no --keep-batched) is unchanged:
    the open loop is left out with the reason."""
    src = tmp_path / "src"
    src.mkdir()
    d = str(src)
    side = "URL: https://example.org/serve\nRuntime: vLLM\nGPU: 1x H100 SXM\nModel: Qwen/Qwen3-30B-A3B BF16\n"
    _write(d, "closed.log", "$ vllm serve Qwen/Qwen3-30B-A3B --max-num-seqs 64\n"
           "$ vllm bench serve --model Qwen/Qwen3-30B-A3B --max-concurrency 8 --num-prompts 64\n"
           + _SERVE_BLOCK, side)
    opened = _SERVE_BLOCK.replace("Maximum request concurrency:             8\n",
                                  "Request rate configured (RPS):           2.00\n")
    _write(d, "open.log", "$ vllm bench serve --model Qwen/Qwen3-30B-A3B --request-rate 2 --burstiness 0.5 "
           "--num-prompts 64\n" + opened, side)
    served, several = [], []
    pts, notes = bpf.check_points(d, several, served)
    assert [p.test for p in pts] == ["tg"] and pts[0].batch == 8           # the closed loop's decode point
    by = {os.path.basename(r["where"]).split(":")[0]: r for r in served}
    assert set(by) == {"closed.log", "open.log"}
    c, o = by["closed.log"], by["open.log"]
    assert (c["max_concurrency"], c.get("request_rate"), c["max_num_seqs"], c["completed"]) == (8, None, 64, 64)
    assert (o.get("max_concurrency"), o["request_rate"], o["burstiness"]) == (None, 2.0, 0.5)
    assert (c["ttft_s"], c["tpot_s"], c["n_prompt"], c["n_gen"]) == (0.9, 0.025, 1024, 256)
    # the replay is the client as it ran, on the server's limits (its --max-num-seqs, else vLLM's defaults)
    qc = bpf.predict_serving(c)
    assert (qc["server"].max_num_seqs, qc["server"].max_batched_tokens) == (64, 8192)
    cl = bpf.replay.bench_serve(c["setup"], 1024, 256, 64, concurrency=8, config=qc["server"])
    assert qc["ttft_s"] == pytest.approx(float(cl["ttft_s"].mean()))
    assert qc["tpot_s"] == pytest.approx(float(cl["tpot_s"].mean()))
    qo = bpf.predict_serving(o)
    assert qo["server"].max_num_seqs == 1024
    op = bpf.replay.bench_serve(o["setup"], 1024, 256, 64, rate=2.0, burstiness=0.5, config=qo["server"])
    assert qo["ttft_s"] == pytest.approx(float(op["ttft_s"].mean())) and op["replays"] == 1
    text = "\n".join(bpf.run_checks([d]))
    assert "### Serving benchmarks (their clients replayed; never fitted)" in text
    assert re.search(r"\| vllm \| open\.log:\d+ \| h100-sxm \| qwen3-30b-a3b \| 1024 / 256 \| unlimited \| 2\.0 \| "
                     r"1024 / 8192 \| 900\.0 \| [\d.]+ \| [+-]\d+\.\d% \| 25\.0 \| [\d.]+ \| [+-]\d+\.\d% \|", text)
    # the fit's reading: the open loop has no decode point, left out with the reason
    out = tmp_path / "recs"
    pr.main([d, "--out", str(out)])
    recs = [r for f in glob.glob(str(out / "*.json")) for r in json.load(open(f))]
    assert [r["test"] for r in recs] == ["tg"] and not any(r.get("serving_run") for r in recs)


def test_a_llama_server_s_slots_and_batch_and_an_sglang_server_s_limits(tmp_path):
    from glmbench.results import importers as im
    a = im._command_args("llama-server -m q.gguf -np 8 -b 4096 -ub 512", {})
    assert (a["n_parallel"], a["n_batch"], a["n_ubatch"]) == ("8", "4096", "512")
    a = im._command_args("vllm serve x --max-num-seqs 128 --max-num-batched-tokens=4096", {})
    assert (a["max_num_seqs"], a["max_num_batched_tokens"]) == ("128", "4096")
    a = im._command_args("python -m sglang.launch_server --model-path x --max-running-requests 32 "
                         "--chunked-prefill-size 2048", {})
    assert (a["max_num_seqs"], a["max_num_batched_tokens"]) == ("32", "2048")
    a = im._command_args("vllm bench serve --request-rate 4 --burstiness 0.5", {})
    assert (a["request_rate"], a["burstiness"]) == ("4", "0.5")
    # SGLang's bench_serving result reports its server's limits (server_info)
    run = {"backend": "sglang", "request_rate": 4.0, "max_concurrency": 8, "completed": 8, "total_input_tokens": 8192,
           "total_output_tokens": 512, "output_throughput": 118.0, "mean_ttft_ms": 101.5, "mean_tpot_ms": 26.9,
           "server_info": {"model_path": "Qwen/Qwen3-32B", "tp_size": 1, "chunked_prefill_size": 8192,
                           "max_running_requests": 48}}
    f = tmp_path / "sg.jsonl"
    f.write_text(json.dumps(run) + "\n" + json.dumps(dict(run, server_info=dict(run["server_info"],
                                                                               max_running_requests=None))) + "\n")
    a, b = im.read(str(f))
    assert (a["max_num_seqs"], a["max_num_batched_tokens"], a["request_rate"], a["max_concurrency"]) == (48, 8192, 4.0, 8)
    assert b.get("max_num_seqs") is None and b["max_num_batched_tokens"] == 8192


def test_a_served_llama_server_takes_its_slots_from_its_command_line(tmp_path):
    d = str(tmp_path)
    client = ("$ vllm bench serve --backend openai --base-url http://localhost:8080 --model Qwen3-30B-A3B "
              "--max-concurrency 8 --num-prompts 64\n")
    _write(d, "srv.log", "$ llama-server -m Qwen3-30B-A3B-Q4_K_M.gguf -ngl 99 -np 8 -b 4096\n" + client + _SERVE_BLOCK,
           "URL: https://example.org/srv\nGPU: RTX 3090\nmodel: Qwen3-30B-A3B-Q4_K_M.gguf\n")
    _, recs = pr.generic_records(os.path.join(d, "srv.log"), keep_batched=True)
    run = next(r for r in recs if r.get("serving_run"))
    assert (run["runtime"], run["max_num_seqs"], run["max_num_batched_tokens"], run["type_k"]) == ("llama.cpp", 8, 4096, "f16")
    _, recs = pr.generic_records(os.path.join(d, "srv.log"))
    assert not any(r.get("serving_run") for r in recs)


def test_vllm_offline_runs_are_replayed_to_their_last_token(tmp_path):
    """vLLM's `bench latency` (one batch's whole run) and `bench throughput` (requests / s of a batch of
    --num-prompts): --check keeps them as runs (`serve_kind`) and replays every request queued at once on vLLM's
    in-process limits (16384 prompt tokens per step on an H100); the fit's reading leaves them out (no decode point)."""
    d = str(tmp_path / "src")
    os.makedirs(d)
    side = "URL: https://example.org/off\nRuntime: vLLM\nGPU: 1x H100 SXM\nModel: meta-llama/Llama-3.1-8B-Instruct BF16\n"
    _write(d, "lat.log", "$ vllm bench latency --model meta-llama/Llama-3.1-8B-Instruct --input-len 1024 --output-len 64 "
           "--batch-size 4\nAvg latency: 0.9 seconds\n", side)
    _write(d, "thr.log", "$ vllm bench throughput --model meta-llama/Llama-3.1-8B-Instruct --input-len 512 --output-len 32 "
           "--num-prompts 40\nThroughput: 20.00 requests/s, 10880.00 total tokens/s, 640.00 output tokens/s\n", side)
    served = []
    pts, notes = bpf.check_points(d, [], served)
    assert not pts and sorted(r["serve_kind"] for r in served) == ["latency", "throughput"]
    lat = next(r for r in served if r["serve_kind"] == "latency")
    q = bpf.predict_serving(lat)
    assert (q["server"].max_num_seqs, q["server"].max_batched_tokens) == (1024, 16384)
    cl = bpf.replay.bench_serve(lat["setup"], 1024, 64, 4, config=q["server"], client_gap_s=0.0)
    assert q["latency_s"] == pytest.approx(float((cl["sent_s"] + cl["e2e_s"]).max()))
    # four 1024-token prompts fit one 16384-token step (each chunk priced on its own), then 63 decode steps of the
    # four streams: with the cost model's exact step costs, that sum; the check's interpolated ones within 10%
    s = lat["setup"]
    by_hand = 4 * bpf.cm.prefill(s, 1024).seconds + sum(bpf.cm.decode(s, 1024 + j, 4).seconds for j in range(63))
    exact = bpf.replay.bench_serve(s, 1024, 64, 4, client_gap_s=0.0, config=bpf.replay.ServerConfig(
        max_num_seqs=1024, max_batched_tokens=16384, prefix_cache=False, step_costs="exact"))
    assert float((exact["sent_s"] + exact["e2e_s"]).max()) == pytest.approx(by_hand, rel=1e-9)
    assert q["latency_s"] == pytest.approx(by_hand, rel=0.1)
    thr = next(r for r in served if r["serve_kind"] == "throughput")
    qt = bpf.predict_serving(thr)
    assert qt["request_throughput"] == pytest.approx(40 / qt["latency_s"])
    text = "\n".join(bpf.run_checks([d]))
    assert re.search(r"\| vllm \| lat\.log:2 \| h100-sxm \| llama-3\.1-8b \| latency \| 1024 / 64 \| 4 \| 1024 / 16384 \| "
                     r"0\.900 s \| [\d.]+ s \| [+-]\d+\.\d% \|", text)
    assert re.search(r"\| thr\.log:2 \| .* \| throughput \| 512 / 32 \| 40 \| .* \| 20\.000 req/s \|", text)
    out = tmp_path / "recs"
    pr.main([d, "--out", str(out)])
    assert not glob.glob(str(out / "*.json"))


def test_a_vllm_ramp_up_run_is_noted_not_replayed(tmp_path):
    """vLLM's --ramp-up-strategy raises the request rate over the run: no one rate to replay (not every request at
    once, as its JSON's request_rate "inf" would say): --check notes it and leaves it out."""
    d = str(tmp_path / "src")
    os.makedirs(d)
    _write(d, "ramp.log", "$ vllm serve Qwen/Qwen3-8B\n$ vllm bench serve --model Qwen/Qwen3-8B --num-prompts 64 "
           "--ramp-up-strategy linear --ramp-up-start-rps 1 --ramp-up-end-rps 8\n" + _SERVE_BLOCK,
           "URL: https://example.org/ramp\nRuntime: vLLM\nGPU: 1x H100 SXM\nModel: Qwen/Qwen3-8B BF16\n")
    served = []
    pts, notes = bpf.check_points(d, [], served)
    assert not served and any("request rate rose over the run" in x and "linear" in x for x in notes), notes


def test_sglang_offline_throughput_is_replayed_as_vllm_s_offline_runs(tmp_path):
    """SGLang's bench_offline_throughput (every request handed to its in-process engine at once) is kept by
    --check as an offline run (`serve_kind` throughput) of the `sglang` runtime model and replayed to its last
    token on SGLang's own limits (its --max-running-requests), its request throughput compared."""
    import test_importers as ti
    d = str(tmp_path / "src")
    os.makedirs(d)
    _write(d, "off.log", ti._SGL_OFFLINE, "URL: https://example.org/sgo\nRuntime: SGLang 0.5.2\nGPU: 2x H100 SXM\n"
           "Model: Qwen/Qwen3-8B BF16\n")
    served = []
    pts, notes = bpf.check_points(d, [], served)
    assert not pts and [(r["runtime"], r["serve_kind"], r["completed"], r["max_num_seqs"]) for r in served] == [
        ("sglang", "throughput", 500, 128)]
    q = bpf.predict_serving(served[0])
    assert q["server"].max_num_seqs <= 128 and q["request_throughput"] == pytest.approx(500 / q["latency_s"])
    text = "\n".join(bpf.run_checks([d]))
    assert re.search(r"\| sglang \| off\.log:11 \| h100-sxm x2 \| qwen3-8b \| throughput \| 1024 / 256 \| 500 \| "
                     r"\d+ / \d+ \| 7\.810 req/s \| [\d.]+ req/s \| [+-]\d+\.\d% \|", text), text


def test_sglang_bench_one_batch_is_checked_by_the_sglang_model(tmp_path):
    """A pasted SGLang bench_one_batch run with its sidecar: its B = 1 rows are single-stream points of the
    `sglang` runtime model (KV cache in the model's dtype, no llama.cpp options), its B = 16 rows points of
    several streams, predicted as llama-batched-bench's."""
    import test_importers as ti
    d = str(tmp_path)
    _write(d, "ob.log", ti._SGL_ONE, "URL: https://example.org/sg\nRuntime: SGLang 0.5.9\nGPU: 2x H100 SXM\n"
           "Model: Qwen/Qwen3-8B BF16\n")
    several = []
    pts, notes = bpf.check_points(d, several)
    assert sorted((p.test, p.batch) for p in pts) == [("pp", 1), ("tg", 1)]
    assert sorted((p.test, p.batch) for p in several) == [("pp", 16), ("tg", 16)]
    assert {(p.runtime, p.setup.kv_fmt.name, p.setup.n_cards, tuple(p.options)) for p in pts + several} == {
        ("sglang", "bf16", 2, ())}
    tg = next(p for p in pts if p.test == "tg")
    assert tg.n_depth == 1024 and tg.measured == pytest.approx(1 / 0.00718)


def test_runs_partly_on_the_cpu_are_checked_with_their_placement(tmp_path):
    """--check keeps a run partly on the CPU (`offload_run`) with its placement (-ngl, --n-cpu-moe, -ot ...=CPU)
    and prices it with costmodel.Offload and a host (the sidecar's `host:` line, else desktop-ddr5), in a
    section of its own; -nkvo and an override to another card are left out with the reason; the fit's reading
    still leaves every such run out."""
    d = str(tmp_path / "src")
    os.makedirs(d)
    dev, head, row = _ncmoe_table()
    _write(d, "moe.md", dev + head + row(36, "pp512", "210.00 ± 5.00") + row(36, "tg128", "25.30 ± 0.30"),
           "URL: https://example.org/moe\nHost: workstation-ddr5\n")
    off = []
    pts, notes = bpf.check_points(d, [], [], off)
    assert not pts and [(o["test"], o["n_cpu_moe"], o["host_name"], o["placement"]) for o in off] == [
        ("pp", 36, "workstation-ddr5", "ngl 99, n-cpu-moe 36"), ("tg", 36, "workstation-ddr5", "ngl 99, n-cpu-moe 36")]
    tg = off[1]
    s = tg["setup"]
    assert s.offload.n_cpu_moe == 36 and s.host.key == "workstation-ddr5"
    assert bpf.predict_offload(tg) == pytest.approx(1 / bpf.cm._mean_decode(s, 0, 128, 1)[0])
    assert bpf.predict_offload(off[0]) == pytest.approx(bpf.cm.prefill(s, 512, 0).tok_s)
    text = "\n".join(bpf.run_checks([d]))
    assert re.search(r"\| llama\.cpp \| moe\.md:5 \| rtx-3090 \| gpt-oss-120b \| ngl 99, n-cpu-moe 36 \| workstation-ddr5 \| "
                     r"tg128 @ d0 \| 25\.30 \| [\d.]+ \| [+-]\d+\.\d% \|", text)
    # an -ot regex's alternation (llama-bench's ot column prints the pattern as given) stays in its cell of the report
    d2 = str(tmp_path / "src2")
    os.makedirs(d2)
    ot = "blk\\.(2[0-9]|3[0-5])\\.ffn_.*_exps\\.=CPU"
    ot_head = head.replace("| n_cpu_moe |", "| ot                    |").replace("| --------: |", "| --------------------- |")
    ot_row = row(0, "tg128", "20.10 ± 0.30").replace("|         0 |", f"| {ot} |")
    _write(d2, "ot.md", dev + ot_head + ot_row, "URL: https://example.org/ot\n")
    (line,) = [x for x in bpf.run_checks([d2]) if x.startswith("| llama.cpp | ot.md:4 |")]
    assert len(re.split(r"(?<!\\)\|", line)) == 12 and "-ot blk\\.(2[0-9]\\|3[0-5])\\.ffn_.*_exps\\.=CPU |" in line
    # the placement as a paste or a sidecar states it
    assert pr._offload_fields({"tensor_buft_overrides": "blk\\.(1|2)\\.ffn_.*_exps=CPU;exps=CUDA1"}) == {
        "override_tensor": ["blk\\.(1|2)\\.ffn_.*_exps"], "offload_other": ["exps"]}
    assert pr._offload_fields({}, "llama-bench -m x.gguf -ngl 20 --cpu-moe") == {
        "n_gpu_layers": 20, "override_tensor": ["exps"]}
    assert pr._offload_fields({"no_kv_offload": True}) == {"no_kv_offload": True}
    with pytest.raises(ValueError, match="-nkvo"):
        bpf.offload_point(dict(tg, no_kv_offload=True), "x:1")
    with pytest.raises(ValueError, match="another buffer"):
        bpf.offload_point(dict(tg, offload_other=["exps"]), "x:1")
    # the fit's reading: left out, as before
    with pytest.raises(pr.Skip, match="every record ran partly on the CPU"):
        pr.generic_records(os.path.join(d, "moe.md"))


def test_a_bare_serving_block_takes_its_client_from_vllm_s_lines_or_the_sidecar(tmp_path):
    """A result block pasted without the client's command line: the concurrency from vLLM's lines before
    its block (`Maximum request concurrency: 8`; `None`: unlimited, which the sidecar does not override),
    else from the sidecar's command line, each noted in `inferred`. A paced loop (a request rate beside
    the maximum concurrency) is checked as it ran but is no decode point: the arrivals, not B, set how
    many streams decode."""
    src = tmp_path / "src"
    src.mkdir()
    d = str(src)
    bare = _SERVE_BLOCK.replace("Maximum request concurrency:             8\n", "")
    side = ("URL: https://example.org/serve\nRuntime: vLLM\nGPU: 1x H100 SXM\nModel: Qwen/Qwen3-30B-A3B BF16\n"
            "Command: vllm bench serve --model Qwen/Qwen3-30B-A3B --max-concurrency 8 --num-prompts 64{extra}\n")
    _write(d, "pre.log", "Traffic request rate: inf\nMaximum request concurrency: 8\n" + bare,
           side.format(extra="").replace("--max-concurrency 8 ", ""))
    other = _serve_block(64, 8, 65536, 16384, 273.07, 26.0, 900.0)       # (not pre.log's point again)
    _write(d, "side.log", other.replace("Maximum request concurrency:             8\n", ""), side.format(extra=""))
    _write(d, "none.log", "Traffic request rate: inf\nMaximum request concurrency: None\n" + bare, side.format(extra=""))
    _write(d, "paced.log", bare, side.format(extra=" --request-rate 2"))
    served, several = [], []
    pts, notes = bpf.check_points(d, several, served)
    by = {os.path.basename(r["where"]).split(":")[0]: r for r in served}
    assert set(by) == {"pre.log", "side.log", "none.log", "paced.log"}
    assert by["pre.log"]["max_concurrency"] == 8 and by["side.log"]["max_concurrency"] == 8
    assert by["none.log"].get("max_concurrency") is None
    assert (by["paced.log"]["max_concurrency"], by["paced.log"]["request_rate"]) == (8, 2.0)
    # decode points: the two closed loops only
    assert sorted((os.path.basename(p.where).split(":")[0], p.batch) for p in pts) == [("pre.log", 8), ("side.log", 8)]
    out = tmp_path / "recs"
    pr.main([d, "--out", str(out), "--keep-batched"])
    recs = {os.path.basename(f): json.load(open(f)) for f in glob.glob(str(out / "*.json"))}
    side_run = next(r for r in recs["side.json"] if r.get("serving_run"))
    assert side_run["inferred"]["max_concurrency"] == "8 (the sidecar's command line)"
    none_run = next(r for r in recs["none.json"] if r.get("serving_run"))
    assert "Maximum request concurrency: None" in none_run["inferred"]["max_concurrency"]


def test_one_run_as_json_and_as_md_is_counted_once(tmp_path):
    """llama-bench's json keeps 6 decimals, its md table 2 (4031.675437 is 4031.68): the same run in both
    files is one point each, noted, while a point the md alone holds, or another value, stays."""
    forms = os.path.join(ROOT, "tests", "data", "formats")
    d = tmp_path / "run"
    d.mkdir()
    shutil.copy(os.path.join(forms, "llama-bench.json"), d / "a.json")
    dev = ("ggml_cuda_init: found 2 CUDA devices:\n"
           "  Device 0: NVIDIA GeForce RTX 4090, compute capability 8.9, VMM: yes\n"
           "  Device 1: NVIDIA GeForce RTX 4090, compute capability 8.9, VMM: yes\n")
    md = open(os.path.join(forms, "llama-bench.md")).read()
    md = md.replace("151.51 ± 0.46", "153.20 ± 0.46")           # another run's tg128: its own point
    (d / "b.md").write_text(dev + md)
    pts, notes = bpf.check_points(str(d))
    same = [n for n in notes if "the same point as" in n]
    assert len(same) == 5 and all(n.startswith("b.md:") for n in same), notes
    assert len(pts) == 7
    assert sorted(p.measured for p in pts if p.label.endswith(" tg128 @ d0")) == [151.508254, 153.2]
    assert bpf.same_measured(4031.675437, 4031.68) and not bpf.same_measured(4031.675437, 4031.69)


def test_public_records_says_what_the_importer_assumed_or_merged(tmp_path, capsys):
    """A paste holding its table twice: public_records writes each point once and says so (the importer's
    notice, 'note FILE:LINE: ... pasted twice'), as it says a skip or an error."""
    src, out = tmp_path / "src", tmp_path / "out"
    src.mkdir()
    _put(str(src), XD, "twice.md", "URL: https://example.org/ok\nGPU: rtx3090\nModel: Llama 3 8B\n")
    once = open(src / "twice.md").read()
    (src / "twice.md").write_text(once + "\n" + once)
    pr.main([str(src), "--out", str(out)])
    said = capsys.readouterr().out.splitlines()
    notes = [ln for ln in said if ln.startswith("note ") and "pasted twice" in ln]
    assert len(notes) == 1 and "twice.md" in notes[0], said
    assert len(_load(out, "twice")) == len(pr.generic_records(str(tmp_path / "src" / "twice.md"))[1])


def test_check_writes_no_file_unless_out_is_given(tmp_path, monkeypatch, capsys):
    """--check prints its report; it writes public_check_<date>.md only into an --out DIR it is
    given, never into the checkout's bench/results as a side effect (bench/ here: tmp_path)."""
    recs = tmp_path / "mine.json"
    recs.write_text(json.dumps([{"evidence": "measured", "tool": "llama-bench", "runtime": "llama.cpp", "test": "tg",
                                 "model": "llama-3-8b", "hardware": "rtx-3090", "weights": "f16", "n_prompt": 0,
                                 "n_gen": 128, "n_depth": 0, "avg_ts": 50.0}]))
    monkeypatch.setattr(bpf, "HERE", str(tmp_path / "bench"))   # where the default results folder would be
    monkeypatch.chdir(tmp_path)
    bpf.main(["--check", str(recs)])
    out = capsys.readouterr().out
    assert "# Runtime models checked on published results they were not fitted to" in out and "mine" in out
    assert "-> " not in out
    assert sorted(p.name for p in tmp_path.iterdir()) == ["mine.json"]   # nothing written anywhere here
    res = tmp_path / "res"
    bpf.main(["--check", str(recs), "--out", str(res)])
    (path,) = glob.glob(str(res / "public_check_*.md"))
    out = capsys.readouterr().out
    assert f"-> {path}" in out and open(path).read() in out


def test_check_of_a_published_folder_leaves_no_temporary_folder(tmp_path, monkeypatch, capsys):
    """--check on a folder of pastes converts them in a temporary folder first: the check writes no
    file (README), so that folder is gone once the points are read, also when the conversion fails,
    and the points (a model from an HF config beside the pastes included) still predict."""
    tmpdir = tmp_path / "tmp"
    tmpdir.mkdir()
    monkeypatch.setattr(bpf.tempfile, "tempdir", str(tmpdir))
    src = tmp_path / "src"
    src.mkdir()
    (src / "tinyllama-1.1b.json").write_text(json.dumps(TINYLLAMA))
    (src / "erin-tiny.md").write_text(
        "|    PP |     TG |   N_KV |   T_PP s | S_PP t/s |   T_TG s | S_TG t/s |\n"
        "|-------|--------|--------|----------|----------|----------|----------|\n"
        "|   512 |    128 |      0 |    0.040 | 12800.00 |    0.400 |   320.00 |\n")
    (src / "erin-tiny.txt").write_text("URL: https://example.org/erin\nRuntime: ik_llama.cpp, CUDA\nGPU: RTX 3090\n"
                                       "Model: TinyLlama-1.1B-Chat-v1.0 Q8_0\n"
                                       "Command: ./llama-sweep-bench -m tinyllama-1.1b-chat-v1.0.Q8_0.gguf -ngl 99 -fa\n")
    assert bpf.published_folder(str(src))
    pts, notes = bpf.check_points(str(src))
    assert len(pts) == 2 and {p.source for p in pts} == {"erin-tiny"} and not notes
    assert os.listdir(tmpdir) == []
    res = bpf.check(pts, {"ik_llama.cpp": bpf.cm.load_runtime("ik_llama.cpp")})
    assert len(res["ik_llama.cpp"]) == 2 and all(q > 0 for _, q in res["ik_llama.cpp"])
    # the example folder of the README, checked end to end: nothing left behind either
    bpf.main(["--check", os.path.join(ROOT, "bench", "checks", "gb10-glm-4.7-flash")])
    assert "| llama.cpp | 10 |" in capsys.readouterr().out
    assert os.listdir(tmpdir) == []
    # a conversion that fails removes its folder too
    def fail(argv):
        raise SystemExit("x.md:3: no such table")
    monkeypatch.setattr(bpf.public_records, "main", fail)
    with pytest.raises(SystemExit, match="no such table"):
        bpf.check_points(str(src))
    assert os.listdir(tmpdir) == []

"""The `glmbench` command: every subcommand end to end on small grids, output formats, the
report folder, and user errors (one line on stderr, exit status 2, no traceback). Commands run
in-process through cli.main (fast); two run as real processes (`python -m glmbench`, the
console script) to check the entry points themselves."""
import csv
import io
import json
import os
import shutil
import subprocess
import sys

import pytest

from glmbench import cli
from glmbench.models import configs
from glmbench.results import records
from glmbench import report

SMALL = ["--depths", "1K,8K,64K", "--concurrency", "1,4"]


def run(capsys, *argv):
    rc = cli.main(list(argv))
    out, err = capsys.readouterr()
    return rc, out, err


def one_line_error(rc, err):
    assert rc == 2
    lines = [l for l in err.splitlines() if l.strip()]
    assert len(lines) == 1 and lines[0].startswith("error: "), err
    assert "Traceback" not in err
    return lines[0]


def tiny_config(path, n_layers=3):
    hf = dict(configs.load("glm-4.7-flash").hf)
    hf.update(vocab_size=96, hidden_size=64, intermediate_size=80, num_attention_heads=4, num_key_value_heads=4,
              kv_lora_rank=32, qk_rope_head_dim=8, qk_nope_head_dim=12, v_head_dim=16, q_lora_rank=48,
              moe_intermediate_size=32, n_routed_experts=8, num_experts_per_tok=2, num_hidden_layers=n_layers)
    path.write_text(json.dumps(hf))
    return str(path)


# ---- argument parsing ----------------------------------------------------------------------------
def test_token_counts():
    assert cli.parse_tokens("4096") == 4096 and cli.parse_tokens("4K") == 4096 and cli.parse_tokens("128k") == 131072
    assert cli.parse_tokens("1M") == 1 << 20 and cli.parse_tokens("1.5K") == 1536
    assert cli.parse_token_list("1K..8K") == [1024, 2048, 4096, 8192]
    assert cli.parse_token_list("512, 1K..2K,512") == [512, 1024, 2048]
    for bad in ("", "x", "4Q", "-3", "0.5"):
        with pytest.raises(ValueError):
            cli.parse_token_list(bad) if bad == "" else cli.parse_tokens(bad)
    with pytest.raises(ValueError, match="must go from a positive count up"):
        cli.parse_token_list("8K..1K")


@pytest.mark.parametrize("cmd", ["report", "sweep", "measure", "models", "hardware", "compare", "plot"])
def test_help_for_every_command(capsys, cmd):
    with pytest.raises(SystemExit) as e:
        cli.main([cmd, "--help"])
    assert e.value.code == 0
    out = capsys.readouterr().out
    assert out.startswith(f"usage: glmbench {cmd}")
    if cmd == "measure":   # the limit measure() enforces (`--layers 1` is refused) is stated where the flag is
        assert "k >= 2" in " ".join(out.split())


def test_runtime_help_names_every_runtime(capsys):
    """--runtime's help and `glmbench runtimes`' summary name every runtime profile a name selects
    (sglang was missing from both)."""
    from glmbench.predict import costmodel as cm
    for cmd in ("sweep", "report", "trace"):
        with pytest.raises(SystemExit):
            cli.main([cmd, "--help"])
        help_ = " ".join(capsys.readouterr().out.split())
        start = help_.index("--runtime PROFILE runtime profile")
        runtime = help_[start:help_.index("--fa {0,1}", start)]
        assert [r for r in cm.list_runtimes() if r not in runtime] == []
    with pytest.raises(SystemExit):
        cli.main(["--help"])
    summary = " ".join(capsys.readouterr().out.split())
    summary = summary[summary.index("runtimes list"):summary.index("hardware list")]
    assert [r for r in cm.list_runtimes() if r not in ("ideal", "typical") and r not in summary] == []


@pytest.mark.parametrize("argv,msg", [
    (["report", "--depths", "3X"], "not a token count: '3X'"),
    (["report", "--cards", "0"], "expected positive whole numbers"),
    (["report", "--link", "-1"], "must be > 0"),
    (["report", "--weights", "q3_X"], "unknown weight format 'q3_X'"),
    (["sweep", "--weights", "q4k"], "unknown weight format 'q4k' (nearest: q4_K, "),   # a typo: the nearest first
    (["report", "--kv", "q9"], "unknown KV-cache format 'q9'"),
    (["report", "--hardware", "gtx-480"], "unknown GPU 'gtx-480'"),
    (["sweep", "--model", "nope"], "config 'nope' is neither a built-in model"),
    # a typo in a model name: the nearest built-ins, not the whole catalog
    (["sweep", "--model", "glm-4.7-flsh"], "(nearest: glm-4.7-flash, "),
    # a missing file: said as such, whatever its suffix
    (["sweep", "--model", "missing/model.gguf"], "no such file or folder: missing/model.gguf"),
    (["measure", "missing.gguf"], "no such file or folder: missing.gguf"),
    (["sweep", "--tests", "tg,xx"], "`tests` must be a non-empty subset"),
    (["models", "nope"], "config 'nope'"),
    (["compare", "missing-a.json", "missing-b.json"], "no such file: missing-a.json"),
    (["plot", "missing.csv"], "no such file: missing.csv"),
    (["report", "--measured", "missing.json"], "--measured missing.json: no such file"),
    (["sweep", "--runtime", "llama.cpp[fa=1]", "--fa", "0"], "--fa 0 contradicts --runtime llama.cpp[fa=1]"),
    (["bogus"], "invalid choice: 'bogus'"),
    # an option the command does not have: named by that command and its --help
    (["sweep", "--bogus", "1"], "error: glmbench sweep: unrecognized arguments: --bogus 1 (see `glmbench sweep --help`)"),
    (["--bogus"], "error: glmbench: unrecognized arguments: --bogus (see `glmbench --help`)"),
    (["measure", "glm-4.7-flash", "--n-gen", "0"], "`n_gen` must be an integer >= 1, got 0"),
    (["measure", "glm-4.7-flash", "--layers", "some"], "--layers must be auto, full, sampled or a whole number"),
])
def test_user_errors_are_one_line(capsys, tmp_path, monkeypatch, argv, msg):
    monkeypatch.chdir(tmp_path)
    rc, out, err = run(capsys, *argv)
    line = one_line_error(rc, err)
    assert msg in line
    assert out == ""
    assert not (tmp_path / "glmbench-report").exists()


def test_no_command_prints_help(capsys):
    rc, out, err = run(capsys)
    assert rc == 2 and "COMMAND" in out


# ---- models, hardware ----------------------------------------------------------------------------
def test_models(capsys):
    rc, out, _ = run(capsys, "models", "--json")
    assert rc == 0
    rows = json.loads(out)
    assert [r["name"] for r in rows] == configs.builtin_names()
    glm = next(r for r in rows if r["name"] == "glm-4.7-flash")
    # 47 layers x (512 latent + 64 rope) x 2 bytes (docs/SOURCES.md §2)
    assert glm["kv_bytes_per_token"]["f16"] == 54144
    rc, out, _ = run(capsys, "models", "qwen3-32b")
    lines = out.strip().splitlines()
    assert rc == 0 and len(lines) == 3 and "qwen3-32b" in lines[2]
    # 256 KiB per token, 32 GiB at 128K
    assert "| 256.0 |" in lines[2].replace("  ", " ") or " 256.0 " in lines[2]
    assert "32.00" in lines[2]
    rc, out, _ = run(capsys, "models", "--csv")
    assert rc == 0 and out.splitlines()[0].startswith("model,family,")
    # at 128K a windowed layer holds llama.cpp's SWA cells only: Gemma 3 27B's 10 global layers 128K
    # tokens of 8 KiB, its 52 windowed ones 1536 cells (1024 + 512, padded) = 10.61 GiB, not 62;
    # Llama 4 Scout's 36 chunked layers 8704 cells of 4 KiB, its 12 global ones 128K = 7.20 GiB
    rows = {r[0]: r for r in csv.reader(io.StringIO(out))}
    head = rows["model"]
    col = lambda name, c: rows[name][head.index(c)]
    assert col("gemma-3-27b", "KV @128K f16 (GiB)") == "10.61" and col("llama-4-scout", "KV @128K f16 (GiB)") == "7.20"
    assert col("llama-4-scout", "windowed layers") == "36 of 48, chunks 8,192"
    assert (col("llama-4-scout", "runs in Model"), col("qwen3-32b", "runs in Model")) == ("no (priced)", "yes")


def test_hardware(capsys):
    from glmbench.predict import hardware
    rc, out, _ = run(capsys, "hardware", "--json")
    rows = json.loads(out)
    assert rc == 0 and [r["key"] for r in rows] == hardware.list_gpus()
    r3090 = next(r for r in rows if r["key"] == "rtx-3090")
    assert r3090["memory_gib"] == 24 and r3090["bandwidth_gbs"] == 936 and r3090["source"]
    rc, out, _ = run(capsys, "hardware")
    assert rc == 0 and "RTX 3090" in out and "bandwidth (GB/s)" in out


def test_runtimes(capsys):
    """`glmbench runtimes`: the runtime models with their options and errors, the physics and
    calibrated profiles; one name; an unknown name is one error naming those there are."""
    rc, out, _ = run(capsys, "runtimes", "--json")
    rows = {r["name"]: r for r in json.loads(out)}
    assert rc == 0 and {"llama.cpp", "ik_llama.cpp", "llama.cpp-vulkan", "vllm", "ideal", "typical"} <= set(rows)
    assert rows["llama.cpp-vulkan"]["kind"] == "runtime model"
    assert rows["llama.cpp-vulkan"]["options"]["fork"] == ["mainline", "ik_llama.cpp"]
    assert rows["ik_llama.cpp"]["points"] > 100 and 0 < rows["ik_llama.cpp"]["loso_decode"] < 1
    assert rows["typical"]["kind"] == "physics" and rows["typical"]["points"] == 0
    rc, out, _ = run(capsys, "runtimes", "llama.cpp-vulkan")
    assert rc == 0 and "--fork mainline|ik_llama.cpp" in out and "decode band" in out
    rc, _, err = run(capsys, "runtimes", "tensorrt-llm")
    assert rc != 0 and "unknown runtime 'tensorrt-llm'" in err and "llama.cpp-vulkan" in err
    # sglang: a runtime model fitted to no point, said so with its (unvalidated) bands
    assert rows["sglang"]["kind"] == "runtime model" and rows["sglang"]["points"] == 0
    rc, out, _ = run(capsys, "runtimes", "sglang")
    assert rc == 0 and "fitted to no public point" in out and "decode band" in out and "unvalidated" in out



def test_runtimes_lists_a_users_own_calibrated_profile(capsys, tmp_path):
    """`glmbench runtimes calibrated:p.json` (or `runtimes p.json`) was refused as an unknown runtime,
    though every --runtime takes it: a user could not list their own profile's error. It is listed as
    the others are; a missing or bad file is one error naming it."""
    m = tmp_path / "m.json"
    records.write_records(str(m), [dict(evidence="measured", model="llama-3-8b", hardware="rtx-3090", n_cards=1,
                                        weights="q4_0", test="tg", n_depth=d, n_gen=1, avg_ts=v)
                                   for d, v in ((0, 140.0), (4096, 125.0), (8192, 110.0))])
    p = str(tmp_path / "p.json")
    rc, _, _ = run(capsys, "calibrate", str(m), "--out", p, "-q")
    assert rc == 0
    loo = json.load(open(p))["calibration"]["loo_mape"]
    for name in (f"calibrated:{p}", p):
        rc, out, err = run(capsys, "runtimes", name)
        assert rc == 0, err
        assert f"(calibrated; leave-one-out MAPE {100 * loo:.1f}%)" in out and "Fitted by glmbench calibrate" in out
    rc, out, _ = run(capsys, "runtimes", f"calibrated:{p}", "--json")
    (row,) = json.loads(out)
    assert rc == 0 and row["kind"] == "calibrated" and row["points"] == 3 and row["loo_mape"] == loo
    rc, _, err = run(capsys, "runtimes", f"calibrated:{tmp_path / 'none.json'}")
    assert "none.json" in one_line_error(rc, err) and "does not exist" in err
    (tmp_path / "bad.json").write_text("{}")
    rc, _, err = run(capsys, "runtimes", str(tmp_path / "bad.json"))
    assert "bad.json" in one_line_error(rc, err)


# ---- sweep, compare, plot ------------------------------------------------------------------------
def test_sweep_formats_and_compare(capsys, tmp_path):
    a, b = tmp_path / "a.json", tmp_path / "b.csv"
    rc, _, err = run(capsys, "sweep", "-q", "--depths", "1K,32K", "--tests", "tg,mem", "--out", str(a))
    assert rc == 0 and "wrote 16 records" in err
    rc, _, _ = run(capsys, "sweep", "-q", "--depths", "1K,32K", "--tests", "tg,mem", "--hardware", "rtx-4090",
                   "--out", str(b))
    assert rc == 0
    ra, rb = records.read_records(a), records.read_records(b)
    assert len(ra) == len(rb) == 2 * 2 * 2 * 2  # models x rigs x tests x depths
    assert {r["device"] for r in ra} == {"RTX 3090"} and {r["device"] for r in rb} == {"RTX 4090"}

    rc, out, _ = run(capsys, "compare", str(a), str(b), "--json")
    assert rc == 0
    res = json.loads(out)
    # without --link, two RTX 4090s use their profile's stated link; the study's RTX 3090 pair its measured 1.4
    assert res["differences"] == {"device": ["RTX 3090", "RTX 4090"], "link_gbps": [1.4, 25.0]}
    assert len(res["rows"]) == len(ra)  # every point matched, across .json and .csv
    for row in res["rows"]:
        assert row["B/A"] == pytest.approx(row["B"] / row["A"])
    # the ratio is what the two files say for that point
    ta = next(r for r in ra if r["test"] == "tg" and r["model"] == "qwen3-32b" and r["n_cards"] == 2 and r["n_depth"] == 32768)
    tb = next(r for r in rb if r["test"] == "tg" and r["model"] == "qwen3-32b" and r["n_cards"] == 2 and r["n_depth"] == 32768)
    row = next(r for r in res["rows"] if r["model"] == "qwen3-32b" and r["test"] == "tg1@d32768" and r["n_cards"] == 2)
    assert row["A"] == pytest.approx(ta["avg_ts"]) and row["B"] == pytest.approx(tb["avg_ts"])
    rc, out, _ = run(capsys, "compare", str(a), str(b))
    assert rc == 0 and "device: A=RTX 3090  B=RTX 4090" in out and "B/A" in out

    rc, out, _ = run(capsys, "sweep", "-q", "--depths", "1K", "--cards", "1", "--tests", "tg", "--json")
    recs = json.loads(out)
    assert rc == 0 and len(recs) == 2 and all(r["evidence"] == "predicted" and r["test"] == "tg" for r in recs)
    rc, out, _ = run(capsys, "sweep", "-q", "--depths", "1K", "--cards", "2", "--tests", "serve", "--concurrency",
                     "1,8", "--csv")
    lines = out.strip().splitlines()
    assert rc == 0 and lines[0].startswith("evidence,test,") and len(lines) == 1 + 2 * 2

    rc, out, _ = run(capsys, "plot", str(a), "--out", str(tmp_path / "charts"))
    assert rc == 0
    pngs = sorted(os.path.basename(p) for p in out.split())
    assert pngs == ["generation_vs_context.png", "memory_vs_context.png", "one_vs_two_cards.png"]


def test_compare_needs_common_points(capsys, tmp_path):
    a, b = tmp_path / "a.json", tmp_path / "b.json"
    records.write_records(a, [dict(evidence="predicted", test="tg", model="x", n_depth=1, avg_ts=1.0)])
    records.write_records(b, [dict(evidence="predicted", test="tg", model="y", n_depth=1, avg_ts=1.0)])
    rc, _, err = run(capsys, "compare", str(a), str(b))
    assert "no points in common" in one_line_error(rc, err)
    bad = tmp_path / "bad.json"
    bad.write_text('[{"test": "tg"}]')
    rc, _, err = run(capsys, "plot", str(bad))
    assert "record 1: record field `evidence` must be one of" in one_line_error(rc, err)


# ---- report --------------------------------------------------------------------------------------
@pytest.mark.slow
def test_report_folder(capsys, tmp_path):
    out = tmp_path / "rep"
    rc, stdout, _ = run(capsys, "report", "-q", "--out", str(out), *SMALL)
    assert rc == 0 and "report written to" in stdout
    names = sorted(os.listdir(out))
    assert names == sorted(["report.md", "records.csv", "records.json", "decisions.json", "ceilings.json",
                            "generation_vs_context.png", "prefill_vs_prompt.png", "memory_vs_context.png",
                            "one_vs_two_cards.png", "throughput_vs_concurrency.png", "findings.json",
                            "mla_crossover.png"])
    recs = records.read_records(out / "records.json")
    assert records.read_records(out / "records.csv")[0]["evidence"] == "predicted"
    assert {r["model"] for r in recs} == {"glm-4.7-flash", "qwen3-32b"}
    assert {r["test"] for r in recs} == {"tg", "pp", "mem", "serve"}
    assert {(r["n_cards"], r["split"]) for r in recs} == {(1, "none"), (2, "layer")}
    assert {r["weights"] for r in recs} == {"q4_K"} and {r["type_k"] for r in recs} == {"f16"}
    assert {r["link_gbps"] for r in recs if r["n_cards"] == 2} == {1.4}
    md = (out / "report.md").read_text()
    files = next(l for l in md.splitlines() if l.startswith("Files: "))
    assert all(f"`{n}`" in files for n in names if n != "report.md")   # every file written is named
    for section in ("## Generation speed vs context", "## Prefill speed and time to first token",
                    "## Memory ceilings", "## One card vs two", "## Throughput vs concurrency",
                    "## Decision table", "**Evidence:** predicted"):
        assert section in md
    # the decode table quotes the records: GLM-4.7-Flash on one card at 1K
    glm = next(r for r in recs if r["test"] == "tg" and r["model"] == "glm-4.7-flash" and r["n_cards"] == 1
               and r["n_depth"] == 1024)
    assert f"| glm-4.7-flash | 1× RTX 3090 | {glm['avg_ts']:,.1f} |" in md
    # the memory ceiling quotes the cost model: Qwen3-32B on one 24 GiB card runs out near 26K
    from glmbench.predict import costmodel as cm
    ctx = cm.max_context(cm.Setup("qwen3-32b", "rtx-3090", weights="q4_K", kv="f16"))
    from glmbench.report.plots import approx_tokens
    assert f"{approx_tokens(ctx)} tokens" in md
    # ... through ceilings.json, which holds every number of that table
    ceils = json.loads((out / "ceilings.json").read_text())
    q1 = next(c for c in ceils if c["model"] == "qwen3-32b" and c["n_cards"] == 1)
    assert q1["max_context"] == ctx and q1["evidence"] == "predicted" and q1["capacity_bytes"] == 24 * 2 ** 30
    # the throughput table: best fitting aggregate and the first concurrency that does not fit
    for n in (1, 2):
        pts = sorted((r for r in recs if r["test"] == "serve" and r["model"] == "qwen3-32b" and r["n_cards"] == n),
                     key=lambda r: r["concurrency"])
        best = max((r for r in pts if r["fits"]), key=lambda r: r["aggregate_tok_s"])
        full = [r["concurrency"] for r in pts if not r["fits"]]
        tail = f"{full[0]} |" if full else f"all up to {pts[-1]['concurrency']} fit |"
        assert f" | {best['aggregate_tok_s']:,.0f} at {best['concurrency']} | " in md
        assert any(l.startswith(f"| qwen3-32b | {n}× RTX 3090") and l.endswith(tail) for l in md.splitlines())
    decs = json.loads((out / "decisions.json").read_text())
    assert [d["workload"]["name"] for d in decs] == [w.name for w in report.WORKLOADS]
    for d in decs:
        assert len(d["ranking"]) == 4 and [r["rank"] for r in d["ranking"]] == [1, 2, 3, 4]
        assert f"{d['ranking'][0]['model']} on " in md


def test_report_command_line_is_copy_pasteable():
    """report.md's `Generated ... by: glmbench report ...` line runs as a shell command: a GPU named as
    tools print it, a runtime with options and an -ot pattern are one argument each, and the line
    parses back to the same study."""
    import shlex
    st = report.Study(models=("glm-4.7-flash",), hardware="NVIDIA GeForce RTX 4090", runtime="llama.cpp[fa=1]",
                      cards=(1,), offload=dict(n_gpu_layers=None, n_cpu_moe=0, override_tensor=(r"blk\.[0-9]\.ffn_.*_exps",)))
    argv = shlex.split(st.command())
    assert argv[:2] == ["glmbench", "report"] and "NVIDIA GeForce RTX 4090" in argv and "llama.cpp[fa=1]" in argv
    assert r"blk\.[0-9]\.ffn_.*_exps=CPU" in argv
    args = cli.build_parser().parse_args(argv[1:])
    again = cli._study_from_args(args)
    assert (again.models, again.hardware, again.runtime, again.cards, again.offload) == \
        (st.models, st.hardware, st.runtime, st.cards, st.offload)


@pytest.mark.slow
def test_report_with_measured_points(capsys, tmp_path):
    cfg = tiny_config(tmp_path / "tiny.json")
    m = tmp_path / "m.json"
    rc, out, _ = run(capsys, "measure", cfg, "-q", "--depths", "64,256", "--n-prompt", "16", "--n-gen", "2",
                     "--repeats", "2", "--out", str(m))
    assert rc == 0 and "| measured |" in out
    meas = records.read_records(m)
    assert {r["test"] for r in meas} == {"tg", "pp", "mem"} and all(r["evidence"] == "measured" for r in meas)
    # a prediction for the same tiny model, drawn with the measured points: a 1-card fake profile
    # stands in for this CPU so the test does not spend seconds measuring its ceilings
    prof = tmp_path / "cpu.json"
    prof.write_text(json.dumps({"name": "test CPU", "memory_gib": 8, "bandwidth_gbs": 20,
                                "tflops": {"fp16": 0.5, "bf16": 0.5, "fp32": 0.5, "int8": 0.5},
                                "launch_us": 2, "source": "test"}))
    rc, _, err = run(capsys, "report", "-q", "--out", str(tmp_path / "rep"), "--model", cfg, "--hardware", str(prof),
                     "--cards", "1", "--weights", "bf16", "--kv", "bf16", "--depths", "64,256", "--measured", str(m))
    assert rc == 0, err
    recs = records.read_records(tmp_path / "rep" / "records.json")
    assert {r["evidence"] for r in recs} == {"predicted", "measured"}
    md = (tmp_path / "rep" / "report.md").read_text()
    assert "**Evidence:** measured + predicted" in md and "## One card vs two" not in md
    # each measured decode point sits next to the prediction at its depth, with the ratio
    assert "## Measured vs predicted" in md and "No crossover" not in md
    for m in (r for r in meas if r["test"] == "tg"):
        p = next(r for r in recs if r["evidence"] == "predicted" and r["test"] == "tg" and r["n_depth"] == m["n_depth"])
        assert f"| {p['avg_ts'] / m['avg_ts']:.2f} |" in md


def test_measure_resumes(capsys, tmp_path):
    cfg = tiny_config(tmp_path / "tiny.json")
    out = tmp_path / "m.json"
    args = ["measure", cfg, "-q", "--depths", "32", "--n-prompt", "8", "--n-gen", "2", "--repeats", "2",
            "--out", str(out)]
    assert run(capsys, *args)[0] == 0
    first = records.read_records(out)
    rc, stdout, _ = run(capsys, *args, "--json")
    assert rc == 0
    # a rerun finds every point done and returns the stored records unchanged; a point the first
    # run marked unstable (a neighbour took the machine) is retimed instead (issue 25)
    got = json.loads(stdout)
    assert len(got) == len(first)
    kept = [r for r in first if r.get("stable") is not False]
    assert kept and all(r in got for r in kept)
    if len(kept) == len(first):
        assert got == first


# ---- entry points --------------------------------------------------------------------------------
@pytest.mark.slow
def test_python_dash_m(tmp_path):
    p = subprocess.run([sys.executable, "-m", "glmbench", "report", "--cards", "0"], capture_output=True,
                       text=True, cwd=tmp_path)
    assert p.returncode == 2 and p.stdout == ""
    assert p.stderr.strip().count("\n") == 0 and "expected positive whole numbers" in p.stderr
    p = subprocess.run([sys.executable, "-m", "glmbench", "models"], capture_output=True, text=True, cwd=tmp_path)
    assert p.returncode == 0 and "glm-4.7-flash" in p.stdout


@pytest.mark.skipif(shutil.which("glmbench") is None, reason="the console script is not installed on PATH")
def test_console_script(tmp_path):
    p = subprocess.run(["glmbench", "--version"], capture_output=True, text=True, cwd=tmp_path)
    assert p.returncode == 0 and p.stdout.startswith("glmbench ")


def test_sweep_resumes_from_its_json(capsys, tmp_path):
    out = tmp_path / "s.json"
    args = ["sweep", "-q", "--depths", "1K,4K", "--cards", "1", "--tests", "tg", "--out", str(out), "--json"]
    assert run(capsys, *args)[0] == 0
    recs = records.read_records(out)
    assert len(recs) == 4
    # a finished point is reused: the stored record, as it is
    rc, stdout, err = run(capsys, *args)
    assert rc == 0 and json.loads(stdout) == recs and "4 reused); the file holds 4 records" in err, err
    # one edited by hand (a speed no prediction gives) is not carried on: priced again, and said so
    records.write_records(out, [dict(recs[0], avg_ts=12345.678)] + recs[1:])
    rc, stdout, err = run(capsys, *args)
    assert rc == 0 and json.loads(stdout) == recs and "1 recomputed because the stored record" in err, err
    assert records.read_records(out) == recs


def test_report_states_crossovers_from_records():
    # hand-made decode records that cross at 50K (see tests/test_plots.py): the report's table
    # must say so, with the model that is faster on each side
    study = report.Study(models=("glm-4.7-flash", "qwen3-32b"), cards=(1,), depths=tuple(1024 * 2 ** k for k in range(8)),
                         workloads=())
    recs = []
    for d in study.depths:
        for m, v in (("glm-4.7-flash", 100 - d / 1024), ("qwen3-32b", 50.0)):
            recs.append(dict(evidence="predicted", test="tg", model=m, setup=f"{m}, RTX 3090", device="RTX 3090",
                             n_cards=1, split="none", weights="q4_K", type_k="f16", runtime="typical", n_depth=d,
                             avg_ts=max(v, 1.0)))
    md = report.render(recs, study, [], ["generation_vs_context.png"])
    assert "**Crossovers found**" in md
    assert "| 1× RTX 3090 | glm-4.7-flash vs qwen3-32b | ≈ 50K | glm-4.7-flash | qwen3-32b |" in md
    assert "| glm-4.7-flash | 1× RTX 3090 | 99.0 |" in md  # 100 - 1024/1024 at 1K


@pytest.mark.slow
def test_report_json_is_strict_and_stale_charts_go(capsys, tmp_path):
    out = tmp_path / "rep"
    out.mkdir()
    (out / "one_vs_two_cards.png").write_bytes(b"old")
    # one card only: no one-vs-two chart; Qwen3-32B cannot hold a 120K prompt, so decide() has inf
    rc, _, err = run(capsys, "report", "-q", "--out", str(out), "--cards", "1", "--depths", "1K,8K",
                     "--concurrency", "1,2")
    assert rc == 0, err
    assert not (out / "one_vs_two_cards.png").exists()
    text = (out / "decisions.json").read_text()
    json.loads(text, parse_constant=lambda c: pytest.fail(f"non-standard JSON constant {c}"))
    decs = json.loads(text)
    book = next(d for d in decs if d["workload"]["name"] == "whole-book prompt")
    qwen = next(r for r in book["ranking"] if r["model"] == "qwen3-32b")
    assert qwen["fits"] is False and qwen["ttft_s"] is None


def test_sweep_table_shows_the_band_of_a_runtime_model(capsys):
    """A runtime model's records print their cross-validated band (test and model class: an MoE
    decode on llama.cpp-vulkan is barely known, a dense one well); a physics-only profile has none."""
    from glmbench.predict import costmodel as cm
    vk = cm.load_runtime("llama.cpp-vulkan")
    rows = {}
    for m in ("glm-4.7-flash", "llama-3-8b"):
        rc, out, _ = run(capsys, "sweep", "-q", "--model", m, "--runtime", "llama.cpp-vulkan", "--cards", "1",
                         "--depths", "1K", "--tests", "tg")
        assert rc == 0 and "| band" in out
        rows[m] = out.strip().splitlines()[-1]
    assert f"±{100 * vk.cv_band('tg', configs.load('glm-4.7-flash')):.0f}%" in rows["glm-4.7-flash"]
    assert f"±{100 * vk.cv_band('tg', configs.load('llama-3-8b')):.0f}%" in rows["llama-3-8b"]
    rc, out, _ = run(capsys, "sweep", "-q", "--model", "llama-3-8b", "--cards", "1", "--depths", "1K", "--tests", "tg")
    assert rc == 0 and "band" not in out.splitlines()[0]


def test_sweep_prices_the_families_the_forward_pass_does_not_run(capsys):
    """Llama 4 Scout, MiniMax-M2, GLM-4-32B, ERNIE-4.5 and Qwen2-MoE (configs.PRICED_ONLY) sweep as any
    built-in: decode, prefill and memory from their configs; Scout's chunked layers restart at 8192."""
    for m in ("llama-4-scout", "minimax-m2", "glm-4-32b", "ernie-4.5-21b-a3b", "qwen2-57b-a14b"):
        rc, out, _ = run(capsys, "sweep", "-q", "--model", m, "--hardware", "rtx-pro-6000-blackwell", "--cards", "1",
                         "--depths", "4K,8K", "--tests", "tg,pp,mem", "--json")
        assert rc == 0
        recs = json.loads(out)
        tg = {r["n_depth"]: r["avg_ts"] for r in recs if r["test"] == "tg"}
        assert len(tg) == 2 and all(v > 0 for v in tg.values()) and any(r["test"] == "mem" for r in recs), m
        if m == "llama-4-scout":      # at 8192 the 36 chunked layers read one key, at 4096 4097
            assert tg[8192] > tg[4096]
        else:
            assert tg[8192] < tg[4096]


def test_sweep_and_models_price_a_hybrid_and_cohere(capsys):
    """Qwen3.5-35B-A3B (Gated DeltaNet hybrid) and Command-R7B (Cohere2) through the CLI: decode slows
    with depth only by the attention layers' share; the hybrid's memory holds its fixed state beside a
    cache of one layer in four; `glmbench models` names the linear layers and says both run in Model."""
    rc, out, _ = run(capsys, "sweep", "-q", "--model", "qwen3.5-35b-a3b", "--model", "qwen3-30b-a3b", "--hardware",
                     "rtx-3090", "--cards", "1", "--depths", "1K,64K", "--tests", "tg,mem", "--json")
    assert rc == 0
    recs = json.loads(out)
    tg = {(r["model"], r["n_depth"]): r["avg_ts"] for r in recs if r["test"] == "tg"}
    slide = {m: tg[(m, 65536)] / tg[(m, 1024)] for m in ("qwen3.5-35b-a3b", "qwen3-30b-a3b")}
    assert 0 < slide["qwen3-30b-a3b"] < slide["qwen3.5-35b-a3b"] < 1
    kv = {(r["model"], r["n_depth"]): r["kv_bytes"] for r in recs if r["test"] == "mem"}
    cfg = configs.load("qwen3.5-35b-a3b")
    assert kv[("qwen3.5-35b-a3b", 65536)] == 65536 * cfg.kv_bytes_per_token("f16") + cfg.recurrent_state_bytes()
    rc, out, _ = run(capsys, "models", "qwen3.5-35b-a3b", "command-r7b")
    assert rc == 0
    rows = {line.split("|")[1].strip(): line for line in out.splitlines()[2:]}
    assert "30 of 40, state 62.8 MiB" in rows["qwen3.5-35b-a3b"] and rows["qwen3.5-35b-a3b"].rstrip(" |").endswith("yes")
    assert "24 of 32, window 4,096" in rows["command-r7b"] and rows["command-r7b"].rstrip(" |").endswith("yes")


def test_fa_and_ubatch_agreeing_with_the_runtime_bracket_are_taken_once():
    # --fa 1 beside llama.cpp[fa=1] says the same thing: one option, not "given twice"; a new one is added
    args = cli.build_parser().parse_args(["sweep", "--runtime", "llama.cpp[fa=1]", "--fa", "1", "--ubatch", "1024"])
    assert cli._runtime_with_options(args) == "llama.cpp[fa=1,ubatch=1024]"


def test_unknown_model_names_nearest_not_catalog(capsys, tmp_path, monkeypatch):
    """A mistyped --model gets a short line with the nearest built-ins (the catalog is `glmbench models`);
    a folder without config.json says so."""
    monkeypatch.chdir(tmp_path)
    rc, out, err = run(capsys, "sweep", "--model", "qwen3-32", "-q")
    line = one_line_error(rc, err)
    assert "nearest: qwen3-32b" in line and "`glmbench models`" in line
    assert "smollm3-3b" not in line and len(line) < 400
    (tmp_path / "empty").mkdir()
    rc, out, err = run(capsys, "sweep", "--model", str(tmp_path / "empty"), "-q")
    assert "holds no config.json" in one_line_error(rc, err)


@pytest.mark.parametrize("name", ["rtx-3090", "NVIDIA GeForce RTX 3090", "RTX 3090"])
def test_the_study_card_by_any_name_keeps_the_study_link(capsys, name):
    """--hardware names a card by key or as tools print it; the study's RTX 3090 pair keeps the study's measured
    1.4 GB/s link whichever name it is given by (it took the profile's stated 25 GB/s by its printed name)."""
    rc, out, err = run(capsys, "sweep", "-q", "--hardware", name, "--cards", "2", "--depths", "1K", "--tests", "tg",
                       "--model", "qwen3-32b", "--json")
    recs = json.loads(out)
    assert rc == 0 and {r["link_gbps"] for r in recs} == {1.4}
    assert "the study's 1.4 GB/s" in err
    rc, out, err = run(capsys, "sweep", "-q", "--hardware", "NVIDIA GeForce RTX 4090", "--cards", "2", "--depths", "1K",
                       "--tests", "tg", "--model", "qwen3-32b", "--json")
    assert rc == 0 and {r["link_gbps"] for r in json.loads(out)} == {25.0} and "stated link" in err


@pytest.mark.parametrize("hub_id,builtin", [("Qwen/Qwen3-32B", "qwen3-32b"), ("zai-org/GLM-4.7-Flash", "glm-4.7-flash"),
                                            ("meta-llama/Llama-3.1-8B-Instruct", "llama-3.1-8b")])
def test_an_hf_hub_id_names_the_built_in_it_may_mean(capsys, tmp_path, monkeypatch, hub_id, builtin):
    """--model with an HF hub id (no network: not a file here) says it is no file and names the built-in
    of that name; a missing .gguf names none."""
    monkeypatch.chdir(tmp_path)
    rc, out, err = run(capsys, "sweep", "--model", hub_id, "-q")
    line = one_line_error(rc, err)
    assert f"no such file or folder: {hub_id} (the built-in {builtin}?)" in line
    rc, out, err = run(capsys, "sweep", "--model", "models/qwen3-32b.gguf", "-q")
    assert one_line_error(rc, err).endswith("no such file or folder: models/qwen3-32b.gguf")


def test_an_allocation_that_fails_is_one_line_not_a_traceback(capsys, monkeypatch):
    """A MemoryError (the C core's KV cache, NumPy) escaped cli.main as a traceback; it is one error line now."""
    from glmbench import measure

    def oom(*a, **k):
        raise MemoryError("KV cache: out of memory allocating a block of 262144 bytes")
    monkeypatch.setattr(measure, "measure", oom)
    line = one_line_error(*run(capsys, "measure", "qwen3-0.6b", "--depths", "1K", "-q")[::2])
    assert line.startswith("error: glmbench measure: out of memory: KV cache: out of memory allocating a block")


def test_an_overflow_is_one_line_not_a_traceback(capsys, monkeypatch, tmp_path):
    """OverflowError (float('inf') into int(), a float too large) is no ValueError: it escaped cli.main as a
    traceback (plot of a records file with `"n_cards": Infinity`, before records were checked as read)."""
    from glmbench.report import plots

    def boom(*a, **k):
        raise OverflowError("cannot convert float infinity to integer")
    monkeypatch.setattr(plots, "save_charts", boom)
    p = run(capsys, "sweep", "--model", "qwen3-8b", "--cards", "1", "--depths", "1K", "--tests", "tg", "--json", "-q")[1]
    (tmp_path / "r.json").write_text(p)
    line = one_line_error(*run(capsys, "plot", str(tmp_path / "r.json"), "--out", str(tmp_path / "charts"))[::2])
    assert line == "error: glmbench plot: cannot convert float infinity to integer"


def test_sweep_table_says_the_split_link_and_offload_of_each_row(capsys):
    # the table showed n_cards 2 without its split or link, and an --n-cpu-moe figure without the offload:
    # a number without the strategy it is for
    rc, out, _ = run(capsys, "sweep", "-q", "--model", "glm-4.7-flash", "--cards", "1,2", "--depths", "8K", "--tests", "tg")
    assert rc == 0
    head, _, one, two = out.strip().splitlines()
    cols = [c.strip() for c in head.strip("|").split("|")]
    assert "split" in cols and "link_gbps" in cols
    row = dict(zip(cols, (c.strip() for c in two.strip("|").split("|"))))
    assert row["n_cards"] == "2" and row["split"] == "layer" and row["link_gbps"] == "1.40"
    rc, out, _ = run(capsys, "sweep", "-q", "--model", "glm-4.7-flash", "--cards", "1", "--depths", "8K", "--tests", "tg",
                     "--n-cpu-moe", "20", "--weights", "Q8_0")
    head, _, one = out.strip().splitlines()
    row = dict(zip((c.strip() for c in head.strip("|").split("|")), (c.strip() for c in one.strip("|").split("|"))))
    assert row["n_cpu_moe"] == "20" and row["host"] == "desktop-ddr5" and "split" not in row


@pytest.mark.parametrize("args, want", [
    (("--rate-tol", "1"), "--rate-tol: tolerance: must be in (0, 1), got '1'"),     # passed the parser, then failed
    (("--max-num-seqs", "1.5"), "--max-num-seqs: a whole number >= 1: got '1.5'"),   # was int()'s "invalid literal"
    (("--max-num-seqs", "0"), "--max-num-seqs: a whole number >= 1: got '0'"),
])
def test_search_option_values_are_checked_as_search_takes_them(capsys, args, want):
    rc, _, err = run(capsys, "search", "--trace", "azure-conv-2023", *args)
    assert want in one_line_error(rc, err)


def test_ctrl_c_while_the_cli_still_imports_is_one_line_and_130():
    # `glmbench sweep` interrupted in its first second (the CLI's imports) printed a traceback from inside
    # an import; the console script's entry point (glmbench.__main__:entry) ends it as main ends a Ctrl-C
    import subprocess
    import sys
    code = ("import sys, importlib.abc\n"
            "class Stop(importlib.abc.MetaPathFinder):\n"
            "    def find_spec(self, name, path, target=None):\n"
            "        if name == 'glmbench.cli':\n"
            "            raise KeyboardInterrupt\n"
            "        return None\n"
            "sys.meta_path.insert(0, Stop())\n"
            "from glmbench.__main__ import entry\n"
            "sys.exit(entry())\n")
    p = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    assert p.returncode == 130, p.stderr
    assert "Traceback" not in p.stderr
    assert p.stderr.strip() == "glmbench: interrupted while starting; nothing was run or written"


def test_the_console_script_runs_the_entry_point():
    import tomllib
    from pathlib import Path
    scripts = tomllib.loads((Path(__file__).parent.parent / "pyproject.toml").read_text())["project"]["scripts"]
    assert scripts["glmbench"] == "glmbench.__main__:entry"

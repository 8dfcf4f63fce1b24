"""Results in, from the command line: `glmbench compare`, `plot` and `report --measured` read
llama-bench / sweep-bench / batched-bench / vllm / sglang output; `sweep` and `report` take
--n-prompt and --n-gen. The samples live in tests/data (sources in tests/data/README.md)."""
import json
import os
import pathlib

import pytest

from glmbench.results import records

from test_cli import one_line_error, run

DATA = pathlib.Path(__file__).resolve().parent / "data"
FORMATS = DATA / "formats"
PASTED = DATA / "pasted"
needs_samples = pytest.mark.skipif(not FORMATS.is_dir(), reason=f"{FORMATS} (the format samples) is absent")


def sample(name):
    return str(FORMATS / name)


def test_sweep_contract_n_prompt_and_n_gen(capsys):
    rc, out, _ = run(capsys, "sweep", "-q", "--model", "glm-4.7-flash", "--cards", "2", "--depths", "0,4K,32K",
                     "--tests", "tg,pp", "--n-prompt", "2048", "--n-gen", "128", "--json")
    assert rc == 0
    recs = json.loads(out)
    for r in recs:
        assert {"test", "n_depth", "n_prompt", "avg_ts", "evidence"} <= set(r) and r["evidence"] == "predicted"
    pp = [r for r in recs if r["test"] == "pp"]
    tg = [r for r in recs if r["test"] == "tg"]
    assert sorted(r["n_depth"] for r in pp) == [0, 4096, 32768] and {r["n_prompt"] for r in pp} == {2048}
    assert {r["n_gen"] for r in tg} == {128}
    # deeper cache, slower prefill of the same chunk
    pps = sorted(pp, key=lambda r: r["n_depth"])
    assert pps[0]["avg_ts"] > pps[1]["avg_ts"] > pps[2]["avg_ts"]
    # without --n-prompt, pp is from an empty cache at each depth as the prompt length (as before)
    rc, out, _ = run(capsys, "sweep", "-q", "--model", "glm-4.7-flash", "--cards", "1", "--depths", "1K,4K",
                     "--tests", "pp", "--json")
    assert rc == 0 and sorted((r["n_depth"], r["n_prompt"]) for r in json.loads(out)) == [(0, 1024), (0, 4096)]
    rc, _, err = run(capsys, "sweep", "-q", "--n-prompt", "0")
    assert "--n-prompt" in one_line_error(rc, err)


@needs_samples
def test_compare_llama_bench_files_with_a_prediction(capsys, tmp_path):
    pred = tmp_path / "pred.json"
    rc, _, _ = run(capsys, "sweep", "-q", "--model", "glm-4.7-flash", "--hardware", "rtx-4090", "--cards", "2",
                   "--depths", "0,8K,32K", "--tests", "tg,pp", "--n-prompt", "512", "--out", str(pred))
    assert rc == 0
    # the md table tells its model by its architecture and parameter count (deepseek2, 29.94 B)
    rc, out, _ = run(capsys, "compare", str(pred), sample("llama-bench.json"), sample("llama-bench.md"), "--json")
    assert rc == 0
    res = json.loads(out)
    assert list(res["files"]) == ["A", "B", "C"] and res["differences"]["evidence"] == ["predicted", "measured", "measured"]
    assert len(res["rows"]) == 6  # every llama-bench test pairs with its prediction: tg1 with tg128
    meas = {(r["test"], r["n_depth"]): r["avg_ts"] for r in records.read_records(pred)}
    for row in res["rows"]:
        assert row["B/A"] == pytest.approx(row["B"] / row["A"]) and row["C"] == pytest.approx(row["B"], abs=0.005)
    row = next(r for r in res["rows"] if r["test"] == "tg1@d8192 / tg128@d8192")
    assert row["A"] == pytest.approx(meas[("tg", 8192)]) and row["B"] == pytest.approx(119.356570)
    rc, out, _ = run(capsys, "compare", str(pred), sample("llama-bench.csv"))
    assert rc == 0 and "C/A" not in out and "B/A" in out and "tool: A=  B=llama-bench" in out


def test_compare_says_when_it_pairs_tg_lengths(capsys, tmp_path):
    """compare pairs a tg1 prediction with a tg128 measurement of the same point: its output says so
    (the table's text below the rows; --json / --csv on stderr, their stdout unchanged)."""
    def tg(ev, n_gen, ts):
        return {"evidence": ev, "test": "tg", "model": "qwen3-32b", "n_depth": 4096, "n_prompt": 0, "n_gen": n_gen,
                "avg_ts": ts}
    a, b, c = tmp_path / "a.json", tmp_path / "b.json", tmp_path / "c.json"
    a.write_text(json.dumps([tg("predicted", 1, 40.0)]))
    b.write_text(json.dumps([tg("measured", 128, 36.0)]))
    c.write_text(json.dumps([tg("measured", 1, 38.0)]))
    said = "Decode rows of different lengths are paired as one point (tg1 with tg128)"
    rc, out, err = run(capsys, "compare", str(a), str(b))
    assert rc == 0 and "tg1@d4096 / tg128@d4096" in out and out.count(said) == 1 and said not in err
    rc, out, err = run(capsys, "compare", str(a), str(b), "--json")
    assert rc == 0 and json.loads(out)["rows"][0]["B"] == 36.0 and f"note: {said}" in err
    rc, out, err = run(capsys, "compare", str(a), str(c))
    assert rc == 0 and "different lengths" not in out + err


@needs_samples
def test_report_measured_on_names_the_card_count(capsys, tmp_path):
    """llama-bench.json ran on two RTX 4090s: its rows beside the 1-card and 2-card predictions say
    '2× RTX 4090', not 'RTX 4090' (which read as the one-card rig)."""
    rep = tmp_path / "rep"
    rc, _, err = run(capsys, "report", "-q", "--model", "glm-4.7-flash", "--hardware", "rtx-4090", "--weights", "Q4_K_M",
                     "--depths", "0,8K", "--n-prompt", "512", "--concurrency", "1", "--measured",
                     sample("llama-bench.json"), "--out", str(rep))
    assert rc == 0, err
    rows = [l for l in (rep / "report.md").read_text().splitlines() if l.startswith("| glm-4.7-flash | tg128")]
    assert len(rows) == 4   # tg128 at two depths, each beside one card and two
    assert all(l.split(" | ")[2] == "2× RTX 4090" for l in rows)
    assert {l.split(" | ")[4].split(" (")[0] for l in rows} == {"1× RTX 4090", "2× RTX 4090"}


@needs_samples
def test_plot_and_report_take_sweep_bench(capsys, tmp_path):
    rc, _, err = run(capsys, "plot", sample("sweep-bench.md"), "--out", str(tmp_path / "c"))
    msg = one_line_error(rc, err)
    assert "sweep-bench.md" in msg and "no model" in msg and "--model" in msg
    rc, out, _ = run(capsys, "plot", sample("sweep-bench.md"), "--model", "qwen3-32b", "--out", str(tmp_path / "c"))
    assert rc == 0
    assert sorted(os.path.basename(p) for p in out.split()) == [
        "generation_vs_context.png", "prefill_vs_context.png", "prefill_vs_prompt.png"]
    rep = tmp_path / "rep"
    rc, _, _ = run(capsys, "report", "-q", "--model", "qwen3-32b", "--cards", "1", "--depths", "0,2K,4K,8K,16K",
                   "--n-prompt", "512", "--n-gen", "128", "--concurrency", "1,2", "--measured", sample("sweep-bench.md"),
                   "--out", str(rep))
    assert rc == 0
    md = (rep / "report.md").read_text()
    assert "`glmbench report --model qwen3-32b --cards 1" in md and "--n-prompt 512 --n-gen 128" in md
    assert "## Prefill of 512 tokens vs context" in md and "(prefill_vs_context.png)" in md
    assert "## Measured vs predicted" in md
    # each sweep-bench row at a depth the study predicts is one line: tg128 and pp512 at that depth
    for d in (2048, 4096, 8192, 16384):
        # the file names no card: said in words, with the tool that wrote it (a tool is not a machine)
        assert f"| qwen3-32b | tg128@d{d} | card not stated (llama-sweep-bench (ik_llama.cpp)) |" in md
        assert f"| qwen3-32b | pp512@d{d} | card not stated (llama-sweep-bench (ik_llama.cpp)) |" in md
    recs = records.read_records(rep / "records.json")
    assert sum(r["evidence"] == "measured" for r in recs) == 18


@needs_samples
def test_compare_serving_and_plot_batched(capsys, tmp_path):
    # vllm's 4 streams at ~1K-token prompts and sglang's 8 at ~0.8K / 4 at 2K are not the same point
    rc, _, err = run(capsys, "compare", sample("vllm-bench-serve.json"), sample("sglang-bench-serving.jsonl"),
                     "--model", "qwen3-32b")
    assert "no points in common" in one_line_error(rc, err)
    rc, out, _ = run(capsys, "compare", sample("vllm-bench-serve.json"), sample("vllm-bench-serve.json"), "--json")
    assert rc == 0 and [r["test"] for r in json.loads(out)["rows"]] == ["serve4@d1062"]
    # batched-bench: the one-stream rows (B = 1) draw on the one-stream charts, and the decode rows of several
    # streams (with their one-stream row as B = 1) on the throughput chart (they were dropped before)
    rc, out, _ = run(capsys, "plot", sample("llama-batched-bench.md"), "--model", "qwen3-32b", "--out",
                     str(tmp_path / "b"))
    assert rc == 0 and sorted(os.path.basename(p) for p in out.split()) == [
        "generation_vs_context.png", "prefill_vs_prompt.png", "throughput_vs_concurrency.png"]


def test_compare_one_file_shows_what_was_read_and_how(capsys):
    f = str(PASTED / "llama3-8b-f16_2x4090_xiongjiedai.md")
    rc, out, err = run(capsys, "compare", f)
    assert rc == 0
    assert out.splitlines()[0] == f"{f}: 8 points"
    assert "card: rtx-4090 x2 (from 'Device 0:'..'Device 1:' lines (line 6))" in out
    assert "weights: f16 (from the file type 'F16')" in out and "backend: CUDA (from the device lines)" in out
    assert "split: layer (llama.cpp's default -sm layer)" in out
    table = [ln for ln in out.splitlines() if ln.startswith("| ")]
    assert len(table) == 1 + 8 and "| tg8192 " in table[-1] and "49.83" in table[-1]
    rc, out, _ = run(capsys, "compare", str(FORMATS / "llama-bench.md"), "--json")
    res = json.loads(out)
    assert "model: glm-4.7-flash (from 'deepseek2 30B.A3B' + 29.94 B params)" in res["inferred"]
    assert [r["test"] for r in res["rows"]] == ["pp512", "tg128", "pp512@d8192", "tg128@d8192", "pp512@d32768",
                                                "tg128@d32768"]
    # a file that names no model: shown, with a note saying so
    rc, out, err = run(capsys, "compare", str(FORMATS / "sweep-bench.md"))
    assert rc == 0 and "| ?     | pp512 " in out and "model: not known" in err and "--model" in err


def test_compare_two_runs_in_one_file_and_lengths(capsys, tmp_path):
    a = tmp_path / "a.jsonl"
    one = [json.dumps(dict(evidence="measured", test="tg", model="qwen3-32b", n_gen=n, n_depth=0, avg_ts=v))
           for n, v in ((512, 30.0), (1024, 29.0))]
    a.write_text("\n".join(one) + "\n")
    b = tmp_path / "b.jsonl"
    b.write_text("\n".join(one + [one[0].replace("30.0", "33.0")]) + "\n")   # a second run appended
    b_json = tmp_path / "b.json"
    b_json.write_text("[" + ",".join(one + [one[0].replace("30.0", "33.0")]) + "]")
    rc, out, err = run(capsys, "compare", str(a), str(b_json), "--json")
    assert rc == 0 and "holds 1 point more than once" in err
    rows = json.loads(out)["rows"]
    assert [(r["test"], r["run"], r["B"]) for r in rows] == [("tg512", 1, 30.0), ("tg512", 2, 33.0), ("tg1024", 1, 29.0)]


def test_cards_without_link_says_which_link(capsys):
    rc, out, err = run(capsys, "sweep", "-q", "--model", "qwen3-32b", "--hardware", "h100-sxm", "--cards", "2",
                       "--depths", "1K", "--tests", "tg", "--json")
    assert rc == 0 and "note: card-to-card link: H100 SXM's stated link, 450 GB/s" in err
    assert {r["link_gbps"] for r in json.loads(out) if r["n_cards"] == 2} == {450}
    rc, out, err = run(capsys, "sweep", "-q", "--model", "qwen3-32b", "--hardware", "h100-sxm", "--cards", "2",
                       "--link", "64", "--depths", "1K", "--tests", "tg", "--json")
    assert rc == 0 and "card-to-card link" not in err and {r["link_gbps"] for r in json.loads(out) if r["n_cards"] == 2} == {64}
    rc, out, err = run(capsys, "sweep", "-q", "--model", "qwen3-32b", "--depths", "1K", "--tests", "tg", "--json")
    assert rc == 0 and {r["link_gbps"] for r in json.loads(out) if r["n_cards"] == 2} == {1.4}


def test_notes_only_once_the_command_passed_its_checks(capsys, tmp_path):
    """A card-to-card link or offload note is said once the command has checked its options, files
    and setups: an error found after the study is built (--out a file, a bad trace, --measured missing,
    --n-cpu-moe on a dense model) is one line, never notes and then an error."""
    a_file = tmp_path / "a-file"
    a_file.write_text("x")
    multi = ["--model", "qwen3-32b", "--hardware", "h100-sxm", "--cards", "1,2", "--depths", "1K"]
    for argv in (["report", "-q", "--out", str(a_file)],
                 ["report", "-q", "--out", str(tmp_path / "r"), "--measured", str(tmp_path / "none.csv")],
                 ["report", "-q", "--out", str(tmp_path / "r"), "--n-cpu-moe", "3"],
                 ["sweep", "-q", "--tests", "tg", "--out", str(a_file)],
                 ["trace", "-q", str(tmp_path / "none.jsonl")]):
        rc, out, err = run(capsys, *argv, *multi)
        assert "note:" not in err, argv
        one_line_error(rc, err)
    assert not (tmp_path / "r").exists()
    # the same notes still said when the command goes on (test_cards_without_link_says_which_link)
    rc, out, err = run(capsys, "sweep", "-q", "--tests", "tg", "--json", "--n-cpu-moe", "3", "--model", "glm-4.7-flash",
                       "--hardware", "h100-sxm", "--cards", "1,2", "--depths", "1K")
    assert rc == 0 and err.count("note: card-to-card link") == 1 and err.count("applies to the one-card setups") == 1


@needs_samples
def test_calibrate_with_hardware_drops_the_card_notice(capsys, tmp_path):
    """A llama-bench -o md table names no card: calibrate says it needs --hardware; given
    --hardware, that notice is not printed and the fit runs on the card named."""
    rc, _, err = run(capsys, "calibrate", sample("llama-bench.md"), "--out", str(tmp_path / "a.json"))
    assert rc == 2 and "pass --hardware" in err
    rc, out, err = run(capsys, "calibrate", sample("llama-bench.md"), "--hardware", "RTX 4090",
                       "--out", str(tmp_path / "b.json"))
    assert rc == 0 and "calibrate needs --hardware" not in err
    assert "glm-4.7-flash pp512 @ d0" in out and json.load(open(tmp_path / "b.json"))


def test_plot_of_decode_from_an_empty_cache_only_says_why_there_is_no_generation_chart(capsys, tmp_path):
    # llama-bench's -n 128,512 without -d: every tg is at depth 0; the chart was an empty frame (0..1 axes)
    f = tmp_path / "r.json"
    recs = [dict(evidence="measured", test=t, model="llama-3-70b", device="RTX 3090", n_cards=2, weights="Q4_K_M",
                 n_depth=0, n_prompt=n if t == "pp" else 0, n_gen=n if t == "tg" else 0, avg_ts=v)
            for t, v in (("pp", 350.0), ("tg", 16.0)) for n in (512, 1024)]
    f.write_text(json.dumps(recs))
    rc, out, err = run(capsys, "plot", str(f), "--out", str(tmp_path / "c"))
    assert rc == 0
    assert [os.path.basename(p) for p in out.split()] == ["prefill_vs_prompt.png"]
    assert "no generation_vs_context chart" in err and "depth 0" in err


def test_compare_shows_a_calibrated_files_band_and_what_it_priced(capsys, tmp_path):
    # a calibrated prediction beside a measurement: its values were printed bare (no ±band), and `compare FILE`
    # of a prediction file named no runtime or cache format
    f = tmp_path / "pred.json"
    rc, _, _ = run(capsys, "sweep", "-q", "--model", "glm-4.7-flash", "--cards", "1", "--depths", "0,8K", "--tests", "tg",
                   "--runtime", "llama.cpp", "--n-gen", "128", "--out", str(f))
    assert rc == 0
    band = records.read_records(f)[0]["cv_error"]
    rc, out, _ = run(capsys, "compare", str(f), str(f))
    assert rc == 0
    head = [c.strip() for c in next(l for l in out.splitlines() if l.startswith("| model")).strip("|").split("|")]
    assert head[:7] == ["model", "test", "unit", "A", "A band", "B", "B band"]
    row = [c.strip() for c in next(l for l in out.splitlines() if l.startswith("| glm-4.7-flash")).strip("|").split("|")]
    assert row[4] == row[6] == f"±{100 * band:.0f}%"
    rc, out, _ = run(capsys, "compare", str(f), "--json")
    rows = json.loads(out)["rows"]
    assert [r["band"] for r in rows] == [pytest.approx(band)] * 2
    rc, out, _ = run(capsys, "compare", str(f))
    assert "  runtime: llama.cpp (as the file says)" in out and "  type_k: f16 (as the file says)" in out
    assert "split:" not in out                         # one card: no split to say
    assert f"| ±{100 * band:.0f}% |" in out

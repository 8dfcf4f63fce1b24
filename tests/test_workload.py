"""`glmbench trace` and `glmbench report --trace`: the trace section end to end on small traces,
its files and charts, bad input as one line on stderr, and the default report left as it was."""
import json
import os

import pytest

from glmbench import cli
from glmbench.report import Study, workload
from glmbench.predict import replay as rp

SMALL = ["--model", "glm-4.7-flash", "--depths", "1K,8K", "--concurrency", "1,4"]


def run(capsys, *argv):
    rc = cli.main(list(argv))
    out, err = capsys.readouterr()
    return rc, out, err


@pytest.fixture
def ladder(tmp_path):
    p = tmp_path / "ladder.csv"
    rows = ["arrival_s,prompt_tokens,output_tokens"]
    for i, n in enumerate([500, 3000, 6000, 12000, 24000, 50000, 90000] * 2):
        rows.append(f"{3.0 * i},{n},32")
    p.write_text("\n".join(rows) + "\n")
    return str(p)


def test_trace_command(capsys, tmp_path, ladder):
    out = tmp_path / "tr"
    rc, text, err = run(capsys, "trace", ladder, *SMALL, "--out", str(out), "-q")
    assert rc == 0, err
    assert ("**Decision:" in text or "**No setup keeps up" in text) and "Crossover" in text
    assert "study's batched point" in text
    for name in workload.FILES:
        assert (out / name).is_file(), name
    res = json.loads((out / "trace.json").read_text())
    assert res["trace"]["requests"] == 14
    assert res["decision"]["best"] in {r["setup"] for r in res["runs"]}
    assert res["decision"]["setup"] == (res["decision"]["best"] if res["decision"]["keeps_up"] else "")
    # no block hashes: only the no-cache replay
    assert {r["prefix_cache"] for r in res["runs"]} == {False}
    assert len(res["runs"]) == 2           # 1 and 2 cards


def test_trace_outputs_say_evidence_hardware_formats_and_runtime(capsys, tmp_path, ladder):
    """Every output of `trace` says what its numbers are (predicted: the cost model replayed, or
    calibrated) and of what: the card, the card count, the weights, the KV format and the runtime,
    each as its own field (a row held only the setup's label)."""
    out = tmp_path / "tr"
    rc, text, err = run(capsys, "trace", ladder, *SMALL, "--cards", "1", "--weights", "q8_0", "--kv", "q8_0",
                        "--hardware", "rtx-4090", "--runtime", "ideal", "--out", str(out), "-q")
    assert rc == 0, err
    assert "predicted" in text.split("**Decision")[0].split("**No setup")[0]
    res = json.loads((out / "trace.json").read_text())
    assert res["evidence"] == "predicted"
    for r in res["runs"] + [b for b in res["buckets"]]:
        assert (r["evidence"], r["hardware"], r["device"], r["n_cards"], r["weights"], r["type_k"], r["runtime"]) == (
            "predicted", "rtx-4090", "RTX 4090", 1, "q8_0", "q8_0", "ideal"), r
    import csv
    for name in ("trace_runs.csv", "trace_buckets.csv"):
        rows = list(csv.DictReader(open(out / name)))
        assert rows and all(r["evidence"] == "predicted" and r["hardware"] == "rtx-4090" and r["weights"] == "q8_0"
                            and r["type_k"] == "q8_0" and r["runtime"] == "ideal" for r in rows), name
    rc, text, err = run(capsys, "trace", ladder, *SMALL, "--cards", "1", "--csv", "-q")
    assert rc == 0 and "evidence" in text.splitlines()[0].split(",")
    # a runtime model fitted to public results says so
    rc, text, err = run(capsys, "trace", ladder, *SMALL, "--cards", "1", "--runtime", "vllm", "--json", "-q")
    res = json.loads(text)
    assert rc == 0 and res["evidence"] == "calibrated" and {r["evidence"] for r in res["runs"]} == {"calibrated"}


def test_trace_answers_the_crossover_question_plainly(capsys, ladder):
    """The trace section says, for the two models on each rig, whether the cost model puts a generation
    crossover between them (at which depth, or none and over which depths), whether the trace's
    per-bucket winners follow it, and on what: the card and count, the weight and KV formats, the
    runtime and the kind of number. Before, only per-setup-label verdicts were listed, none of them
    saying what the study's ~64K crossover came to on the trace."""
    rc, text, err = run(capsys, "trace", ladder, "--model", "glm-4.7-flash", "--model", "qwen3-32b", "--cards", "1,2",
                        "--link", "1.4", "--runtime", "llama.cpp", "-q")
    assert rc == 0, err
    head = "**Does the study's ~64K generation crossover hold on this trace?**"
    assert text.count(head) == 1
    answer = text.split(head)[1].split("\n\n")[1].splitlines()
    assert len(answer) == 2, answer                     # one line per rig: the model pair on 1 card, on 2
    assert answer[0].startswith("- On 1× RTX 3090, q4_K weights, f16 KV cache, runtime llama.cpp (calibrated numbers), "
                                "glm-4.7-flash vs qwen3-32b: the cost model puts ")
    assert answer[1].startswith("- On 2× RTX 3090, layer split over 1.4 GB/s, q4_K weights, f16 KV cache, runtime "
                                "llama.cpp (calibrated numbers), glm-4.7-flash vs qwen3-32b: ")
    for line in answer:
        assert ("no crossover from 1,024 to" in line or "the crossover at ~" in line) and "on this trace" in line
    # one model: no pair of models to answer it for
    rc, text, err = run(capsys, "trace", ladder, "--model", "glm-4.7-flash", "--cards", "1,2", "-q")
    assert rc == 0, err
    assert head not in text


def test_trace_json_csv_and_options(capsys, tmp_path):
    p = tmp_path / "m.jsonl"
    p.write_text("".join(f'{{"timestamp": {1000 * i}, "input_length": 1024, "output_length": 8, "hash_ids": [0, {i + 1}]}}\n'
                         for i in range(6)))
    rc, text, err = run(capsys, "trace", str(p), *SMALL, "--cards", "2", "--json", "-q", "--rate-scale", "2",
                        "--ttft-slo", "5", "--tpot-slo", "0.5", "--max-num-seqs", "8", "--max-batched-tokens", "1024")
    assert rc == 0, err
    res = json.loads(text)
    assert res["trace"]["rate_scale"] == 2.0 and res["slo"] == {"ttft_s": 5.0, "tpot_s": 0.5}
    assert res["server"]["max_num_seqs"] == 8 and res["server"]["max_batched_tokens"] == 1024
    assert {r["prefix_cache"] for r in res["runs"]} == {True, False}
    rc, text, err = run(capsys, "trace", str(p), *SMALL, "--cards", "2", "--csv", "-q", "--no-prefix-cache")
    assert rc == 0, err
    assert text.splitlines()[0].startswith("trace,setup,prefix_cache,bucket")
    assert all(",False," in l for l in text.splitlines()[1:])


@pytest.mark.parametrize("content, where", [
    ("arrival_s,prompt_tokens,output_tokens\n0,100,5\n1,abc,5\n", "bad.csv:3"),
    ("TIMESTAMP,ContextTokens,GeneratedTokens\nnot a time,100,5\n", "bad.csv:2"),
])
def test_trace_bad_file_is_one_line(capsys, tmp_path, content, where):
    p = tmp_path / "bad.csv"
    p.write_text(content)
    rc, _, err = run(capsys, "trace", str(p), *SMALL, "-q")
    assert rc == 2
    lines = [l for l in err.splitlines() if l.strip()]
    assert len(lines) == 1 and lines[0].startswith("error: ") and where in lines[0], err


def test_a_trace_whose_every_request_failed_is_one_line(capsys, tmp_path):
    """Every request logged with 0 output tokens (failed in the traced system): nothing to replay.
    It was a decision that no setup can serve the trace, 'rejects every request ()' and a bucket
    winner, and search named a closest setup that 'reaches n/a'."""
    p = tmp_path / "failed.csv"
    p.write_text("arrival_s,prompt_tokens,output_tokens\n0,100,0\n1,200,0\n")
    before = p.read_bytes()
    rc, out, err = run(capsys, "trace", str(p), *SMALL, "-q")
    assert rc == 2 and out == ""
    lines = [l for l in err.splitlines() if l.strip()]
    assert len(lines) == 1 and "failed.csv" in lines[0] and "0 output tokens" in lines[0], err
    assert "nothing to replay" in lines[0]
    rc, out, err = run(capsys, "search", "--trace", str(p), "--ttft-slo", "2", "--tpot-slo", "0.1", "--models",
                       "glm-4.7-flash", "--gpus", "rtx-3090", "--cards", "1", "--weights", "q4_K", "--kv", "f16",
                       "--no-max-rate", "--workers", "1", "--out", str(tmp_path / "s"), "-q")
    assert rc == 2 and out == ""
    lines = [l for l in err.splitlines() if l.strip()]
    assert len(lines) == 1 and "nothing to replay" in lines[0], err
    assert p.read_bytes() == before
    # the replay study refuses it too (the API)
    with pytest.raises(ValueError, match="nothing to replay"):
        rp.study(str(p), [rp.cm.Setup("glm-4.7-flash", "rtx-3090")])


def test_trace_unknown_name_and_bad_option(capsys):
    rc, _, err = run(capsys, "trace", "no-such-trace", *SMALL, "-q")
    assert rc == 2 and "unknown trace" in err
    rc, _, err = run(capsys, "trace", "azure-code-2023", *SMALL, "--rate-scale", "0", "-q")
    assert rc == 2


@pytest.mark.slow
def test_report_with_a_trace_adds_a_section_and_nothing_else_changes(capsys, tmp_path, ladder):
    plain, traced = tmp_path / "plain", tmp_path / "traced"
    rc, _, err = run(capsys, "report", *SMALL, "--out", str(plain), "-q")
    assert rc == 0, err
    rc, _, err = run(capsys, "report", *SMALL, "--out", str(traced), "-q", "--trace", ladder)
    assert rc == 0, err
    a = (plain / "report.md").read_text().splitlines()
    b = (traced / "report.md").read_text().splitlines()
    # the same report (but its timestamp line), then the trace section
    drop = lambda ls: [l for l in ls if not l.startswith("Generated ")]
    assert drop(b)[:len(drop(a))] == drop(a)
    assert "## Real workload: ladder" in b
    assert "![trace_winners](trace_winners.png)" in b
    assert (plain / "records.csv").read_text() == (traced / "records.csv").read_text()
    for name in workload.FILES:
        assert (traced / name).is_file() and not (plain / name).exists()
    # a report without --trace into the traced folder drops the stale trace files
    rc, _, err = run(capsys, "report", *SMALL, "--out", str(traced), "-q")
    assert rc == 0, err
    assert not any((traced / name).exists() for name in workload.FILES)
    assert drop((traced / "report.md").read_text().splitlines()) == drop(a)


def test_study_point_is_the_studys_setup():
    sp = workload.study_point(Study())
    assert "2 x RTX 3090 @ 1.4 GB/s" in sp["setup"] and "glm-4.7-flash" in sp["setup"]
    assert sp["reference_tok_s"] == workload.STUDY_BATCHED_TOK_S
    tok = [p["decode_tok_s"] for p in sp["points"]]
    assert tok == sorted(tok) and all(t > 0 for t in tok)


def test_charts_have_labelled_axes(ladder):
    from glmbench.report import plots
    st = Study(models=("glm-4.7-flash",), depths=(1024,), concurrency=(1,))
    res = workload.trace_study(st, ladder, progress=False)
    for fig in (plots.trace_winners(res), plots.trace_latency(res)):
        for ax in fig.axes:
            assert ax.get_xlabel() and ax.get_ylabel()
    assert "(tokens)" in plots.trace_winners(res).axes[0].get_xlabel()
    assert "(s)" in plots.trace_latency(res).axes[0].get_ylabel()


def test_trace_chart_legends_clear_of_the_title(ladder):
    """Setup labels are long: a legend placed above the panels covered the figure's title (seen on
    trace_latency.png with two setups); every legend stays clear of the title and of the panels."""
    from matplotlib.backends.backend_agg import FigureCanvasAgg
    from glmbench.report import plots
    st = Study(models=("glm-4.7-flash", "qwen3-32b"), cards=(1, 2), depths=(1024,), concurrency=(1,))
    res = workload.trace_study(st, ladder, progress=False)
    for fig in (plots.trace_winners(res), plots.trace_latency(res)):
        FigureCanvasAgg(fig).draw()
        r = fig.canvas.get_renderer()
        title = fig._suptitle.get_window_extent(r)
        legends = fig.legends + [ax.get_legend() for ax in fig.axes if ax.get_legend()]
        assert legends
        for leg in legends:
            box = leg.get_window_extent(r)
            assert not box.overlaps(title)
            assert not any(box.overlaps(ax.get_window_extent(r)) for ax in fig.axes)


def test_trace_chart_bucket_labels_stand_apart(ladder):
    """`glmbench trace azure-conv-2023`: trace_winners.png's seven bucket names on one 7-inch panel ran into
    each other ('32-64K64-128K>=128K'); the footer wrote '19366 requests'."""
    from matplotlib.backends.backend_agg import FigureCanvasAgg
    from glmbench.report import plots
    st = Study(models=("glm-4.7-flash", "qwen3-32b"), cards=(1, 2), depths=(1024,), concurrency=(1,))
    res = workload.trace_study(st, ladder, progress=False)
    res = dict(res, trace=dict(res["trace"], requests=19366))
    for fig in (plots.trace_winners(res), plots.trace_latency(res)):
        FigureCanvasAgg(fig).draw()
        r = fig.canvas.get_renderer()
        for ax in fig.axes:
            labs = [t for t in ax.get_xticklabels() if t.get_visible() and t.get_text()]
            assert [t.get_text() for t in labs][-1] == ">=128K"
            boxes = [t.get_window_extent(r) for t in labs]
            assert not any(a.overlaps(b) for i, a in enumerate(boxes) for b in boxes[i + 1:]), \
                [t.get_text() for t in labs]
            # and inside the figure
            assert all(b.x0 >= 0 and b.y0 >= 0 for b in boxes)
        assert "(19,366 requests," in fig._supxlabel.get_text()


def test_trace_no_setup_fits_and_runtime_choice(capsys, ladder):
    rc, text, err = run(capsys, "trace", ladder, "--model", "qwen3-32b", "--weights", "bf16", "--cards", "1", "--json", "-q")
    assert rc == 0, err
    res = json.loads(text)
    assert res["decision"]["setup"] == "" and "no setup serves" in res["decision"]["reasons"][0]
    assert res["runs"][0]["rejected"] == res["runs"][0]["requests"] == 14
    rc, text, err = run(capsys, "trace", ladder, "--model", "glm-4.7-flash", "--cards", "1", "--runtime", "ideal",
                        "--json", "-q")
    assert rc == 0, err
    assert json.loads(text)["runs"][0]["setup"].endswith("ideal")


def test_trace_numbers_say_their_evidence_and_band(ladder):
    # the replay's section and charts said "on the cost model" only: under a runtime model (llama.cpp) its
    # numbers are calibrated, with a cross-validated band per model, and nothing said so
    from glmbench.predict import runtime as rtm
    from glmbench.report import plots
    st = Study(models=("glm-4.7-flash",), cards=(1,), depths=(1024,), concurrency=(1,), runtime="llama.cpp")
    res = workload.trace_study(st, ladder, progress=False)
    band = rtm.load_runtime("llama.cpp").cv_band("tg", st.configs["glm-4.7-flash"])
    assert res["evidence"] == "calibrated" and res["evidence_detail"]["kind"] == "calibrated"
    assert res["evidence_detail"]["bands"]["glm-4.7-flash"]["decode"] == band
    want = f"evidence: calibrated (runtime llama.cpp; its step times' cross-validated band: glm-4.7-flash decode ±{100 * band:.0f}%"
    for fig in (plots.trace_winners(res), plots.trace_latency(res)):
        assert fig._supxlabel.get_text().startswith(want)
    assert "E" + want[1:] in workload.render(res, [])
    plain = workload.trace_study(Study(models=("glm-4.7-flash",), cards=(1,), depths=(1024,), concurrency=(1,)), ladder,
                                 progress=False)
    assert plots.trace_winners(plain)._supxlabel.get_text().startswith("evidence: predicted (runtime typical)\n")


def test_study_point_line_says_one_stream_not_one_streams(ladder):
    # the batched-point sentence read "1 streams 130 tok/s"
    st = Study(models=("glm-4.7-flash",), cards=(2,), depths=(1024,), concurrency=(1,))
    res = workload.trace_study(st, ladder, progress=False)
    assert res["study_point"] and res["study_point"]["points"][0]["streams"] == 1
    text = workload.render(res, [])
    assert "1 streams" not in text
    assert "1 stream " in text and "8 streams " in text


def _drawn_trace(tmp_path, lengths, chart):
    """A two-model, two-rig trace study of requests of these prompt lengths (each twice), `chart` of it
    drawn: (result, figure, renderer)."""
    from matplotlib.backends.backend_agg import FigureCanvasAgg
    p = tmp_path / "lengths.csv"
    p.write_text("arrival_s,prompt_tokens,output_tokens\n" +
                 "".join(f"{2.0 * i},{n},32\n" for i, n in enumerate(list(lengths) * 2)))
    st = Study(models=("glm-4.7-flash", "qwen3-32b"), cards=(1, 2), depths=(1024,), concurrency=(1,))
    res = workload.trace_study(st, str(p), progress=False)
    fig = chart(res)
    FigureCanvasAgg(fig).draw()
    return res, fig, fig.canvas.get_renderer()


def test_trace_winners_says_no_requests_in_an_empty_bucket(tmp_path):
    """`glmbench trace azure-conv-2023`: trace_winners.png showed nothing in its 16-32K to >=128K buckets, and a
    reader could not tell an empty bucket from a missing bar; each empty bucket now says "no requests", inside
    its panel (the last one sat on the right spine), apart from the other labels; a bucket with requests does not."""
    from glmbench.report import plots
    res, fig, r = _drawn_trace(tmp_path, [500, 3000, 6000], plots.trace_winners)
    (ax,) = fig.axes
    names = [t.get_text() for t in ax.get_xticklabels()]
    empty = {w["bucket"] for w in res["winners"] if not w["requests"]}
    assert empty == {"8-16K", "16-32K", "32-64K", "64-128K", ">=128K"}
    notes = [t for t in ax.texts if " ".join(t.get_text().split()) == "no requests"]
    assert sorted(names[round(t.get_position()[0])] for t in notes) == sorted(empty)
    boxes = [t.get_window_extent(r) for t in ax.texts]
    for t in notes:
        b = t.get_window_extent(r)
        assert ax.bbox.x0 <= b.x0 and b.x1 <= ax.bbox.x1 and ax.bbox.y0 <= b.y0 and b.y1 <= ax.bbox.y1
        assert sum(b.overlaps(o) for o in boxes) == 1          # itself only


def test_trace_latency_says_no_requests_and_draws_no_line_across_an_empty_bucket(tmp_path):
    """trace_latency.png: a bucket without requests was blank (azure-code-2023: 8-16K to >=128K), a line ran
    straight across an empty bucket between two that held requests, as if it held one, and the <4K points sat
    on the left spine. Each empty bucket now says "no requests" (clear of the lines, the target and its label),
    every line breaks there, and each bucket's slot lies inside the panel."""
    import math
    from glmbench.report import plots
    res, fig, r = _drawn_trace(tmp_path, [500, 3000, 20000], plots.trace_latency)
    empty = {"4-8K", "8-16K", "32-64K", "64-128K", ">=128K"}
    for ax in fig.axes:
        names = [t.get_text() for t in ax.get_xticklabels()]
        notes = [t for t in ax.texts if " ".join(t.get_text().split()) == "no requests"]
        assert sorted(names[round(t.get_position()[0])] for t in notes) == sorted(empty)
        for t in notes:
            assert plots._text_clear(ax, t, r), t.get_position()
        gaps = [names.index(n) for n in empty]
        lines = [ln for ln in ax.lines if len(ln.get_xdata()) > 2]
        assert lines
        for ln in lines:
            pts = [(x, y) for x, y in zip(ln.get_xdata(), ln.get_ydata()) if not math.isnan(y)]
            assert not any(round(x) in gaps for x, _ in pts)
            # no drawn segment spans a gap: consecutive finite points of one run are neighbours
            ys = list(ln.get_ydata())
            for i in range(len(ys) - 1):
                if not math.isnan(ys[i]) and not math.isnan(ys[i + 1]):
                    assert ln.get_xdata()[i + 1] - ln.get_xdata()[i] == 1
        lo, hi = ax.get_xlim()
        assert lo <= -0.5 and hi >= len(names) - 0.5


def test_trace_latency_target_label_is_clear_of_the_points(tmp_path):
    """`glmbench trace mooncake-synthetic`: trace_latency.png's "target 0.1 s", written just above the target line
    at the <4K bucket, lay on a setup's p50 TPOT point there (0.105 s). Each target label now stands where it
    covers no line, marker or other label, inside its panel, and still says its target."""
    from matplotlib.backends.backend_agg import FigureCanvasAgg
    from glmbench.report import plots
    p = tmp_path / "short.csv"
    p.write_text("arrival_s,prompt_tokens,output_tokens\n" +
                 "".join(f"{2.0 * i},{n},32\n" for i, n in enumerate([500, 3000, 6000] * 2)))
    st = Study(models=("glm-4.7-flash", "qwen3-32b"), cards=(1, 2), depths=(1024,), concurrency=(1,))
    res = workload.trace_study(st, str(p), progress=False)
    # every setup's p50 just above each target at <4K, as on mooncake-synthetic
    for b in res["buckets"]:
        if b["bucket"] == "<4K":
            b["ttft_s_p50"] = 1.05 * res["slo"]["ttft_s"]
            b["tpot_s_p50"] = 1.05 * res["slo"]["tpot_s"]
    fig = plots.trace_latency(res)
    FigureCanvasAgg(fig).draw()
    r = fig.canvas.get_renderer()
    for ax, tgt in zip(fig.axes, (res["slo"]["ttft_s"], res["slo"]["tpot_s"])):
        (t,) = [t for t in ax.texts if t.get_text() == f"target {tgt:g} s"]
        assert plots._text_clear(ax, t, r), t.get_text()


def test_trace_winners_legend_explains_a_tied_buckets_hatching(tmp_path):
    # a tied bucket's bar is hatched, and the legend never said what the hatching means
    from glmbench.report import plots
    res, fig, _ = _drawn_trace(tmp_path, [500, 3000, 6000], plots.trace_winners)
    legend = lambda f: [" ".join(t.get_text().split()) for t in f.legends[0].get_texts()]
    assert not any("tie" in x for x in legend(fig))          # no tie in this trace: no entry
    w = next(w for w in res["winners"] if w["requests"])
    w["tie"] = True
    fig = plots.trace_winners(res)
    assert "hatched: a tie, no setup ahead (colour: the first listed)" in legend(fig)
    (ax,) = fig.axes
    assert any(p.get_hatch() == "//" for p in ax.patches)

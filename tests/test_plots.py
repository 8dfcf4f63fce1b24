"""glmbench.report.plots on hand-made records (so every expected position is known exactly) and on one
small real cost-model sweep. What is checked is what a reader relies on: lines vs markers by
evidence, the crossover where the two lines cross, the spill point where memory meets the card,
log2 context ticks, units on the axes, and the footer naming evidence, hardware and formats."""
import math

import pytest
from matplotlib.figure import Figure
from matplotlib.lines import Line2D

from glmbench.report import plots
from glmbench.results import records

GIB = 1024 ** 3
DEPTHS = [1024 * 2 ** k for k in range(8)]  # 1K .. 128K
BASE = dict(evidence="predicted", device="RTX 3090", weights="q4_K", type_k="f16", type_v="f16",
            runtime="typical", n_cards=1, split="none")


def tg_records():
    # model "a" falls linearly in depth, "b" is flat at 50: they cross where 100 - d/1024 = 50,
    # i.e. at d = 51200 (between the 32K and 64K samples, linear in d between them as well).
    out = []
    for d in DEPTHS:
        out.append(dict(BASE, test="tg", model="a", n_depth=d, avg_ts=max(100 - d / 1024, 1.0)))
        out.append(dict(BASE, test="tg", model="b", n_depth=d, avg_ts=50.0))
    return out


def mem_records():
    # 10 GiB of weights + 100 KiB per token: crosses a 20 GiB card at 10 GiB / 100 KiB = 104857.6 tokens
    return [dict(BASE, test="mem", model="a", n_depth=d, mem_bytes=10 * GIB + 100 * 1024 * d,
                 capacity_bytes=20 * GIB, fits=10 * GIB + 100 * 1024 * d <= 20 * GIB) for d in DEPTHS]


def texts(fig):
    out = [t.get_text() for t in fig.texts]
    for ax in fig.axes:
        out += [t.get_text() for t in ax.texts] + [ax.get_title(), ax.get_xlabel(), ax.get_ylabel()]
    if fig._supxlabel is not None:
        out.append(fig._supxlabel.get_text())
    return "\n".join(out)


def test_tokens_label():
    assert [plots.tokens_label(x) for x in (512, 1024, 2048, 131072, 1 << 20)] == ["512", "1K", "2K", "128K", "1M"]
    assert plots.approx_tokens(51200) == "50K" and plots.approx_tokens(3380) == "3.3K"


def test_generation_crossover_marked_where_lines_cross():
    recs = tg_records()
    before = [dict(r) for r in recs]
    cx = plots.crossovers(recs)
    assert len(cx) == 1
    assert cx[0]["x"] == pytest.approx(51200)
    assert cx[0]["faster_before"] == "a" and cx[0]["faster_after"] == "b"
    fig = plots.generation_vs_context(recs)
    assert isinstance(fig, Figure)
    ax = fig.axes[0]
    vlines = [l for l in ax.lines if len(set(l.get_xdata())) == 1 and len(l.get_xdata()) == 2]
    assert [l.get_xdata()[0] for l in vlines] == [pytest.approx(51200)]
    t = texts(fig)
    assert "crossover ≈ 50K" in t and "b overtakes a" in t
    assert "tokens/s" in ax.get_ylabel() and "tokens" in ax.get_xlabel()
    # log2 context axis with 1K ... 128K ticks
    assert ax.get_xscale() == "log"
    assert [plots.tokens_label(x) for x in ax.get_xticks()] == ["1K", "2K", "4K", "8K", "16K", "32K", "64K", "128K"]
    # footer names evidence, hardware, formats and runtime
    for s in ("evidence: predicted", "RTX 3090", "weights: q4_K", "KV: f16", "runtime: typical"):
        assert s in t
    assert recs == before  # records are not modified


def test_measured_are_markers_predicted_are_lines():
    recs = tg_records() + [dict(BASE, evidence="measured", test="tg", model="a", n_depth=d, avg_ts=90.0,
                                stddev_ts=2.0) for d in (1024, 4096)]
    fig = plots.generation_vs_context(recs)
    ax = fig.axes[0]
    measured = [l for l in ax.lines if l.get_marker() == "o"]
    assert len(measured) == 1 and measured[0].get_linestyle() == "None"
    assert list(measured[0].get_xdata()) == [1024, 4096]
    predicted = [l for l in ax.lines if l.get_linestyle() in ("-", "--") and len(l.get_xdata()) == len(DEPTHS)]
    assert len(predicted) == 2
    assert "evidence: measured + predicted" in texts(fig)
    labels = ax.get_legend_handles_labels()[1]
    assert any("(measured)" in s for s in labels)


def test_calibrated_band():
    recs = [dict(BASE, evidence="calibrated", test="tg", model="a", n_depth=d, avg_ts=50.0, avg_ts_lo=45.0,
                 avg_ts_hi=55.0) for d in DEPTHS]
    ax = plots.generation_vs_context(recs).axes[0]
    assert len(ax.collections) == 1  # the fill_between band
    verts = ax.collections[0].get_paths()[0].vertices
    assert verts[:, 1].min() == pytest.approx(45.0) and verts[:, 1].max() == pytest.approx(55.0)


def test_memory_ceiling_and_spill_point():
    fig = plots.memory_vs_context(mem_records())
    ax = fig.axes[0]
    ceiling = [l for l in ax.lines if len(set(l.get_ydata())) == 1 and l.get_ydata()[0] == pytest.approx(20.0)]
    assert ceiling, "the card's capacity is drawn as a horizontal line"
    spill = [l for l in ax.lines if l.get_marker() == "v"]
    assert len(spill) == 1
    # memory is linear in context, so the spill point is exact: 10 GiB / 100 KiB per token
    assert spill[0].get_xdata()[0] == pytest.approx(10 * GIB / (100 * 1024))
    t = texts(fig)
    assert "spills ≈ 102K" in t and "GiB" in ax.get_ylabel() and "20.0 GiB per card" in t


def test_memory_ceiling_label_stays_clear_of_the_legend():
    # six curves that stay just under the 24 GiB ceiling (a hybrid's cache barely grows): the legend
    # must not sit on the ceiling's label, nor the label fall off the axes
    recs = [dict(BASE, test="mem", model=f"m{k}", n_depth=d, mem_bytes=(17 + k) * GIB + 10 * 1024 * d,
                 capacity_bytes=24 * GIB, fits=True) for k in range(6) for d in DEPTHS]
    fig = plots.memory_vs_context(recs)
    from matplotlib.backends.backend_agg import FigureCanvasAgg
    r = FigureCanvasAgg(fig).get_renderer()
    fig.draw(r)
    ax = fig.axes[0]
    label = next(t for t in ax.texts if "GiB per card" in t.get_text()).get_window_extent(r)
    legend = ax.get_legend().get_window_extent(r)
    assert not label.overlaps(legend)
    assert ax.get_ylim()[1] > 24 * 1.05


def test_tg_points_that_do_not_fit_are_crossed():
    recs = tg_records() + mem_records()
    ax = plots.generation_vs_context(recs).axes[0]
    crosses = [l for l in ax.lines if l.get_marker() == "x"]
    assert len(crosses) == 1
    # model a's memory exceeds the card from 128K on (the 64K point still fits)
    assert list(crosses[0].get_xdata()) == [131072]


def test_prefill_ttft_from_empty_cache():
    recs = [dict(BASE, test="pp", model="a", n_depth=0, n_prompt=n, avg_ts=1000.0) for n in DEPTHS]
    recs.append(dict(BASE, test="pp", model="a", n_depth=4096, n_prompt=512, avg_ts=10.0))  # not a TTFT point
    fig = plots.prefill_vs_prompt(recs)
    ax1, ax2 = fig.axes[:2]
    line = [l for l in ax2.lines if len(l.get_xdata()) == len(DEPTHS)][0]
    # TTFT of an L-token prompt at 1000 tok/s is L / 1000 seconds
    assert list(line.get_ydata()) == pytest.approx([n / 1000 for n in DEPTHS])
    assert ax2.get_yscale() == "log" and "(s" in ax2.get_ylabel() and "tokens/s" in ax1.get_ylabel()


def test_throughput_and_one_vs_two():
    recs = []
    for n in (1, 2):
        rig = dict(BASE, n_cards=n, split="none" if n == 1 else "layer", link_gbps=None if n == 1 else 1.4)
        for m, speed in (("a", 100.0), ("b", 30.0)):
            for d in (1024, 131072):
                recs.append(dict(rig, test="tg", model=m, n_depth=d, avg_ts=speed * (1 if d == 1024 else 0.5)))
            for c in (1, 2, 4, 8):
                recs.append(dict(rig, test="serve", model=m, n_depth=4096, concurrency=c,
                                 aggregate_tok_s=speed * c * n, fits=not (n == 1 and c == 8)))
    fig = plots.throughput_vs_concurrency(recs)
    ax = fig.axes[0]
    assert "concurrent streams" in ax.get_xlabel() and "tokens/s" in ax.get_ylabel()
    assert "4K context per stream" in ax.get_title()
    crosses = [l for l in ax.lines if l.get_marker() == "x" and len(l.get_xdata())]
    assert [list(l.get_xdata()) for l in crosses] == [[8.0], [8.0]]  # a and b on one card at 8 streams
    assert {l.get_color() for l in crosses} == {plots._COLOURS[0], plots._COLOURS[1]}
    fig = plots.one_vs_two_cards(recs)
    assert len(fig.axes) == 3
    heights = [[round(p.get_height(), 6) for p in ax.patches] for ax in fig.axes]
    # panel order: short (1K), long (128K), batched (best fitting aggregate); bars: cards x models
    assert heights[0] == [100.0, 30.0, 100.0, 30.0]
    assert heights[1] == [50.0, 15.0, 50.0, 15.0]
    assert heights[2] == [400.0, 120.0, 1600.0, 480.0]
    assert "2× RTX 3090 (layer split, 1.4 GB/s)" in texts(fig)


def test_bad_input():
    with pytest.raises(TypeError, match="`records` must be a list"):
        plots.generation_vs_context({"evidence": "predicted"})
    with pytest.raises(ValueError, match="evidence"):
        plots.generation_vs_context([{"test": "tg", "n_depth": 1, "avg_ts": 1.0}])
    with pytest.raises(ValueError, match="no decode"):
        plots.generation_vs_context(mem_records())
    with pytest.raises(ValueError, match="at least two card counts"):
        plots.one_vs_two_cards(tg_records())
    assert set(plots.all_charts(tg_records())) == {"generation_vs_context"}


def test_save_charts_writes_pngs(tmp_path):
    paths = plots.save_charts(tg_records() + mem_records(), tmp_path / "charts")
    assert sorted(p.rsplit("/", 1)[1] for p in paths) == ["generation_vs_context.png", "memory_vs_context.png"]
    for p in paths:
        data = open(p, "rb").read()
        assert data[:8] == b"\x89PNG\r\n\x1a\n" and len(data) > 10_000
    assert not [f for f in (tmp_path / "charts").iterdir() if f.name.startswith(".tmp-")]


def test_real_sweep_draws():
    """The cost model's records draw without error and keep their evidence."""
    from glmbench import report
    study = report.Study(depths=(1024, 8192, 65536), concurrency=(1, 4), prompts=(1024, 8192), workloads=())
    recs = report.sweep(study, progress=False)
    # pp of 512 tokens at every depth (--n-prompt) draws prefill vs context
    recs += report.sweep(report.Study(depths=(1024, 8192, 65536), n_prompt=512, workloads=()), tests=("pp",),
                         progress=False)
    assert all(r["evidence"] == "predicted" for r in recs)
    charts = plots.all_charts(recs)
    assert set(charts) == set(plots.CHARTS)
    for fig in charts.values():
        assert "evidence: predicted" in texts(fig)
    records.validate(recs[0])
    assert not math.isnan(recs[0]["avg_ts"])


def _crossover_rows():
    rows = []
    for n, rig, split in ((1, "RTX 3090", "none"), (2, "2 x RTX 3090 @ 1.4 GB/s", "layer")):
        for rt, ev in (("typical", "predicted"), ("llama.cpp", "calibrated")):
            for e in (0.1, 0.5):
                rows.append(dict(mla_model="glm-4.7-flash", dense_model="qwen3-32b", n_cards=n, rig=rig, split=split,
                                 runtime=rt, evidence=ev, mla_strategy="flash", mla_attention_efficiency=e,
                                 own=e == 0.5, own_fitted=ev == "calibrated", knob="x", crossover_depth=8192.0 / e,
                                 max_depth=131072, weights="q4_K", kv="f16"))
    return rows


def test_crossover_chart_names_evidence_hardware_and_formats():
    # the MLA crossover chart had no footer: nothing on it said the curves are predictions (or calibrated
    # ones) for an RTX 3090, at q4_K / f16
    fig = plots.mla_crossover(_crossover_rows())
    t = texts(fig) + "\n" + fig._suptitle.get_text()
    for s in ("evidence: predicted + calibrated", "hardware: RTX 3090; 2 x RTX 3090 @ 1.4 GB/s (layer split)",
              "weights: q4_K", "KV: f16", "runtime: each panel's title"):
        assert s in t, s
    titles = [ax.get_title() for ax in fig.axes]
    assert "typical (predicted), 1 card\nswept: x" in titles and "llama.cpp (calibrated), 2 cards\nswept: x" in titles
    one = plots.mla_crossover([r for r in _crossover_rows() if r["runtime"] == "typical"], title="T")
    assert one._suptitle.get_text().startswith("T\nevidence: predicted  |") and "runtime: typical" in one._suptitle.get_text()


def test_decode_only_at_depth_0_draws_no_empty_chart():
    # llama-bench's tg128 / tg512 from an empty cache: a log context axis has no place for them, and the
    # chart was an empty frame with a 0..1 x axis
    recs = [dict(BASE, evidence="measured", test="tg", model="a", n_depth=0, n_gen=n, avg_ts=30.0) for n in (128, 512)]
    with pytest.raises(ValueError, match="no decode .* at a depth above 0"):
        plots.generation_vs_context(recs)
    assert plots.all_charts(recs) == {}


def test_flat_points_are_not_cut_by_the_frame():
    # two measured points at ~36 tok/s: autoscaling padded their own 1 tok/s range, the top marker sat on the frame
    recs = [dict(BASE, evidence="measured", test="tg", model="a", n_depth=d, avg_ts=v) for d, v in ((128, 36.3), (512, 35.3))]
    ax = plots.generation_vs_context(recs).axes[0]
    assert ax.get_ylim()[0] == 0 and ax.get_ylim()[1] >= 36.3 * 1.05


def test_footer_names_what_a_result_file_left_out():
    # a file naming no card, weights or cache type: said as 'not stated' (was '1× ?', and 'weights: q4_K' for a
    # chart with such points beside predictions), and the tool that wrote it named as its runtime
    meas = [dict(evidence="measured", test="tg", model="a", n_depth=d, avg_ts=30.0, tool="llama-sweep-bench (ik_llama.cpp)")
            for d in (2048, 4096)]
    t = texts(plots.generation_vs_context(tg_records() + meas))
    assert "hardware: 1× RTX 3090; card not stated" in t
    assert "weights: q4_K, not stated" in t and "KV: f16, not stated" in t
    assert "runtime: llama-sweep-bench (ik_llama.cpp), typical" in t
    labels = plots.generation_vs_context(meas).axes[0].get_legend_handles_labels()[1]
    assert labels == ["a · card not stated (measured)"]


def _calibrated_serve():
    recs = []
    for n in (1, 2):
        rig = dict(BASE, evidence="calibrated", runtime="llama.cpp", n_cards=n, split="none" if n == 1 else "layer",
                   link_gbps=None if n == 1 else 1.4, cv_error=0.2)
        for d in (1024, 131072):
            recs.append(dict(rig, test="tg", model="a", n_depth=d, avg_ts=100.0, avg_ts_lo=80.0, avg_ts_hi=120.0))
        for c in (1, 2, 4):
            v = 100.0 * c * n
            recs.append(dict(rig, test="serve", model="a", n_depth=4096, concurrency=c, aggregate_tok_s=v, avg_ts=v,
                             avg_ts_lo=0.8 * v, avg_ts_hi=1.2 * v, fits=True))
    return recs


def test_calibrated_throughput_and_bars_show_their_band():
    # a calibrated serve record carries its band as avg_ts_lo / _hi around its aggregate rate: the throughput
    # chart drew the line without it, and the one-vs-two bars showed calibrated figures with no error at all
    ax = plots.throughput_vs_concurrency(_calibrated_serve()).axes[0]
    assert len(ax.collections) == 2      # one band per rig
    verts = ax.collections[0].get_paths()[0].vertices
    assert verts[:, 1].min() == pytest.approx(80.0) and verts[:, 1].max() == pytest.approx(480.0)
    fig = plots.one_vs_two_cards(_calibrated_serve())
    for ax in fig.axes:
        bars = [c for c in ax.containers if hasattr(c, "errorbar") and c.errorbar is not None]
        assert len(bars) == 2            # one per card count, each with its error bar
        seg = bars[0].errorbar.lines[2][0].get_segments()[0]
        top = bars[0].patches[0].get_height()
        assert sorted(y for _, y in seg) == pytest.approx([0.8 * top, 1.2 * top])
    assert "±20%" in texts(fig)


def test_does_not_fit_crosses_of_two_models_at_one_concurrency_both_show():
    # a and b both overflow at 8 streams (on different rigs): the second cross was drawn over the first
    recs = []
    for n, m, bad in ((1, "a", 8), (2, "b", 8)):
        rig = dict(BASE, n_cards=n, split="none" if n == 1 else "layer", link_gbps=None if n == 1 else 1.4)
        for c in (1, 8):
            recs.append(dict(rig, test="serve", model=m, n_depth=4096, concurrency=c, aggregate_tok_s=10.0 * c,
                             fits=c < bad))
    fig = plots.throughput_vs_concurrency(recs)
    from matplotlib.backends.backend_agg import FigureCanvasAgg
    fig.draw(FigureCanvasAgg(fig).get_renderer())
    crosses = _spill_crosses(fig.axes[0])
    assert len(crosses) == 2
    pos = [tuple(l.get_transform().transform((l.get_xdata()[0], l.get_ydata()[0]))) for l in crosses]
    assert pos[0][0] == pytest.approx(pos[1][0]) and abs(pos[0][1] - pos[1][1]) > 5   # same x, apart in y


def _spill_crosses(ax):
    """The throughput chart's "does not fit" marks (one per setup and concurrency)."""
    return [l for l in ax.lines if l.get_marker() in plots._SPILL_MARKS and len(l.get_xdata())]


def test_does_not_fit_crosses_name_model_and_rig():
    # the default report: qwen3-32b on one card runs out of memory from 8 streams, on two from 32; the chart
    # drew one red cross per concurrency, the legend saying "not all streams fit in memory (model colour)":
    # at 32 streams a reader could not tell which rig (or whether both) ran out
    recs = []
    for n, last in ((1, 4), (2, 16)):
        rig = dict(BASE, n_cards=n, split="none" if n == 1 else "layer", link_gbps=None if n == 1 else 1.4)
        recs += [dict(rig, test="serve", model=m, n_depth=4096, concurrency=c, aggregate_tok_s=10.0 * c * n,
                      fits=c <= (last if m == "a" else 64)) for m in ("a", "b") for c in (1, 2, 4, 8, 16, 32, 64)]
    fig = plots.throughput_vs_concurrency(recs)
    ax = fig.axes[0]
    _rend(fig)
    legend = {}
    for h, lab in zip(*ax.get_legend_handles_labels()):
        if isinstance(h, Line2D) and h.get_marker() in plots._SPILL_MARKS:
            key = (h.get_marker(), h.get_color())
            assert key not in legend, (key, lab)   # each setup's mark its own
            legend[key] = lab
    by_x = {}
    for l in _spill_crosses(ax):
        lab = legend[(l.get_marker(), l.get_color())]   # every cross named in the legend
        by_x.setdefault(float(l.get_xdata()[0]), []).append(lab)
    one, two = "a · 1× RTX 3090: ", "a · 2× RTX 3090 (layer split, 1.4 GB/s): "
    assert {x: sorted(v) for x, v in by_x.items()} == {8.0: [one + "not all streams fit in memory"],
                                                       16.0: [one + "not all streams fit in memory"],
                                                       32.0: sorted([one + "not all streams fit in memory",
                                                                     two + "not all streams fit in memory"]),
                                                       64.0: sorted([one + "not all streams fit in memory",
                                                                     two + "not all streams fit in memory"])}
    # each rig's crosses in its model's colour, a shape of their own
    marks = {l.get_marker() for l in _spill_crosses(ax)}
    assert len(marks) == 2 and {l.get_color() for l in _spill_crosses(ax)} == {plots._COLOURS[0]}


def test_does_not_fit_crosses_past_every_fitting_point_are_inside_the_axes():
    # one model on one card fits 1-4 streams only (`report --model qwen3-32b --cards 1`): its crosses at 8-64
    # were drawn with a transform that does not widen the x range, so they fell right of the axes, off the
    # figure (matplotlib warned "constrained_layout not applied") and the chart showed none of them
    recs = [dict(BASE, test="serve", model="a", n_depth=4096, concurrency=c, aggregate_tok_s=10.0 * c, fits=c <= 4)
            for c in (1, 2, 4, 8, 16, 32, 64)]
    fig = plots.throughput_vs_concurrency(recs)
    from matplotlib.backends.backend_agg import FigureCanvasAgg
    import warnings
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        fig.draw(FigureCanvasAgg(fig).get_renderer())
    ax = fig.axes[0]
    crosses = [l for l in ax.lines if l.get_marker() == "x" and len(l.get_xdata())]
    assert sorted(l.get_xdata()[0] for l in crosses) == [8.0, 16.0, 32.0, 64.0]
    lo, hi = ax.get_xlim()
    assert lo <= 1.0 and hi >= 64.0
    assert list(ax.get_xticks()) == [1.0, 2.0, 4.0, 8.0, 16.0, 32.0, 64.0]


def test_crossover_labels_stay_clear_of_the_legend_and_each_other():
    # a and b cross at 50K on one card and on two (the same overtaking): one line and one label naming both
    # rigs; the legend, over the top of the axes where the labels go, hid them, and a label per rig piled up
    two = [dict(r, n_cards=2, split="layer", link_gbps=1.4, avg_ts=r["avg_ts"] * 0.99) for r in tg_records()]
    fig = plots.generation_vs_context(tg_records() + two)
    from matplotlib.backends.backend_agg import FigureCanvasAgg
    rend = FigureCanvasAgg(fig).get_renderer()
    fig.draw(rend)
    ax = fig.axes[0]
    vlines = [l for l in ax.lines if len(set(l.get_xdata())) == 1 and len(l.get_xdata()) == 2]
    assert len(vlines) == 1
    labels = [t for t in ax.texts if t.get_text().startswith("crossover")]
    assert len(labels) == 1
    assert "on 1× RTX 3090 and 2× RTX 3090 (layer split, 1.4 GB/s):" in labels[0].get_text()
    legend = ax.get_legend().get_window_extent(rend)
    assert not labels[0].get_window_extent(rend).overlaps(legend)
    assert legend.x0 >= ax.get_window_extent(rend).x1            # beside the axes
    assert fig.get_window_extent(rend).contains(legend.x1 - 1, legend.y0 + 1)   # and not cut off


def test_one_vs_two_bar_labels_stay_clear_of_the_legend():
    # the rightmost model the fastest, with a wide band: its labels, above the error bars, ran under the legend
    recs = _calibrated_serve() + [dict(r, model="b", avg_ts=r["avg_ts"] * 1.6, avg_ts_lo=r["avg_ts_lo"] * 1.6,
                                       avg_ts_hi=r["avg_ts_hi"] * 1.6) for r in _calibrated_serve() if r["test"] == "tg"]
    fig = plots.one_vs_two_cards(recs)
    from matplotlib.backends.backend_agg import FigureCanvasAgg
    rend = FigureCanvasAgg(fig).get_renderer()
    fig.draw(rend)
    ax = fig.axes[0]
    box = ax.get_legend().get_window_extent(rend)
    assert len(ax.texts) == 4
    assert not any(t.get_window_extent(rend).overlaps(box) for t in ax.texts)


def _visible(line) -> bool:
    """A Line2D draws something: a segment between two finite points, or a marker."""
    import numpy as np
    ys = np.asarray(line.get_ydata(), float)
    return (line.get_linestyle() != "None" and np.isfinite(ys).sum() >= 2) or line.get_marker() not in (None, "None", "", " ")


def test_one_depth_draws_a_mark_per_line():
    # `report --depths 4K`: every predicted line has one point, which a line without markers does not draw
    # (the generation, prefill and memory charts were empty frames with a legend)
    one = [dict(r) for r in tg_records() + mem_records() if r["n_depth"] == 4096]
    one += [dict(BASE, test="pp", model=m, n_depth=0, n_prompt=4096, avg_ts=v) for m, v in (("a", 900.0), ("b", 300.0))]
    one.append(dict(BASE, evidence="calibrated", test="tg", model="c", n_depth=4096, avg_ts=40.0, avg_ts_lo=30.0,
                    avg_ts_hi=50.0))
    for chart in (plots.generation_vs_context, plots.prefill_vs_prompt, plots.memory_vs_context):
        fig = chart(one)
        for ax in fig.axes:
            data = [l for l in ax.lines if l.get_label() and not l.get_label().startswith("_")]
            assert data and all(_visible(l) for l in data), (chart.__name__, [l.get_label() for l in data])
    # the calibrated point keeps its band, as an error bar from 30 to 50
    ax = plots.generation_vs_context(one).axes[0]
    segs = [s for c in ax.collections for s in c.get_segments()]
    assert any(min(s[:, 1]) == pytest.approx(30.0) and max(s[:, 1]) == pytest.approx(50.0) for s in segs)


def _rend(fig):
    from matplotlib.backends.backend_agg import FigureCanvasAgg
    r = FigureCanvasAgg(fig).get_renderer()
    fig.draw(r)
    return r


def test_one_vs_two_cards_with_no_batched_bar_stays_in_its_panel():
    # a small card (`report --hardware rtx-4060`): nothing fits, not one concurrency: the batched panel had no
    # bar, kept matplotlib's default x range and put its 'n/a' labels off the axes, one between the panels;
    # the legend's '1 card' patch was the first model's spilling bar, hatched
    recs = []
    for n in (1, 2):
        rig = dict(BASE, n_cards=n, split="none" if n == 1 else "layer", link_gbps=None if n == 1 else 1.4)
        for m, speed in (("a", 70.0), ("b", 11.0)):
            for d in (1024, 131072):
                recs.append(dict(rig, test="tg", model=m, n_depth=d, avg_ts=speed, fits=False))
                recs.append(dict(rig, test="mem", model=m, n_depth=d, mem_bytes=20 * GIB, capacity_bytes=8 * GIB,
                                 fits=False))
            for c in (1, 2, 4):
                recs.append(dict(rig, test="serve", model=m, n_depth=4096, concurrency=c, aggregate_tok_s=speed * c,
                                 fits=False))
    fig = plots.one_vs_two_cards(recs)
    r = _rend(fig)
    for ax in fig.axes:
        box = ax.get_window_extent(r)
        for t in ax.texts:
            e = t.get_window_extent(r)
            assert box.x0 - 1 <= e.x0 and e.x1 <= box.x1 + 1, (t.get_text(), e, box)
    batched = fig.axes[2]
    assert not batched.patches and "no setup fits in memory" in [t.get_text() for t in batched.texts]
    assert [t.get_text() for t in batched.texts].count("no fit") == 4
    leg = fig.axes[0].get_legend()
    assert [t.get_text() for t in leg.get_texts()] == ["1 card", "2 cards"]
    assert not any(h.get_hatch() for h in leg.legend_handles)


def test_throughput_where_nothing_fits_says_so():
    # a small card: no concurrency fits; the chart was crosses on a 0-0.05 tokens/s axis and no word why
    recs = [dict(BASE, test="serve", model=m, n_depth=4096, concurrency=c, aggregate_tok_s=10.0 * c, fits=False)
            for m in ("a", "b") for c in (1, 2, 4)]
    ax = plots.throughput_vs_concurrency(recs).axes[0]
    assert any("no setup fits" in t.get_text() for t in ax.texts)
    assert list(ax.get_yticks()) == []
    assert [l for l in ax.lines if l.get_marker() == "x" and len(l.get_xdata())]  # the crosses stay
    # and their colours are named: no line names the models here
    labels = ax.get_legend_handles_labels()[1]
    assert "a · 1× RTX 3090: no concurrency fits" in labels and "b · 1× RTX 3090: no concurrency fits" in labels


def test_y_axis_goes_log_where_values_span_decades():
    # `report --depths 256..16M`: decode 140 tok/s at 256 tokens, 0.5 at 16M; memory 9 GiB to 4 TiB beside a
    # 24 GiB ceiling: on linear axes everything past 256K (and the ceiling, and the spill points) sat on the floor
    deep = [256 * 4 ** k for k in range(9)]  # 256 .. 16M
    recs = [dict(BASE, test="tg", model="a", n_depth=d, avg_ts=140.0 / (1 + d / 16384)) for d in deep]
    recs += [dict(BASE, test="pp", model="a", n_depth=0, n_prompt=d, avg_ts=9000.0 / (1 + d / 8192)) for d in deep]
    recs += [dict(BASE, test="mem", model="a", n_depth=d, mem_bytes=9 * GIB + 256 * 1024 * d, capacity_bytes=24 * GIB,
                  fits=9 * GIB + 256 * 1024 * d <= 24 * GIB) for d in deep]
    for chart, ax_i in ((plots.generation_vs_context, 0), (plots.prefill_vs_prompt, 0), (plots.memory_vs_context, 0)):
        ax = chart(recs).axes[ax_i]
        assert ax.get_yscale() == "log" and "log scale" in ax.get_ylabel(), chart.__name__
        lo, hi = ax.get_ylim()
        assert lo > 0 and hi / lo > 100
    ax = plots.memory_vs_context(recs).axes[0]
    lo, hi = ax.get_ylim()
    assert lo < 9 and hi > 4096  # every curve and the ceiling inside
    # the default study's span (15x) keeps its linear axis from zero
    ax = plots.generation_vs_context(tg_records()).axes[0]
    assert ax.get_yscale() == "linear" and ax.get_ylim()[0] == 0 and "log" not in ax.get_ylabel()


def _box_on_data(ax, box) -> bool:
    """Whether a display box lies over a line's segments or markers, or a band (independent of plots.covers_data)."""
    from matplotlib.transforms import Bbox
    box = Bbox(box.get_points())
    for l in ax.lines:
        if not len(l.get_xdata()):
            continue
        p = l.get_transform().transform_path(l.get_path())
        if l.get_linestyle() != "None" and len(l.get_xdata()) > 1 and p.intersects_bbox(box, filled=False):
            return True
        if l.get_marker() not in (None, "None", "") and any(box.contains(*v) for v in p.vertices):
            return True
    return any(c.get_transform().transform_path(p).intersects_bbox(box, filled=True)
               for c in ax.collections for p in c.get_paths() if len(p.vertices))


def test_legend_does_not_cover_data():
    # four models on two rigs (`report --model gemma-3-27b --model gpt-oss-20b --model llama-3-70b ...`):
    # no empty corner for eight entries; 'best' put the legend on the fastest model's falling line
    # (it weighs the points, not the segments between them)
    recs = []
    for n in (1, 2):
        rig = dict(BASE, n_cards=n, split="none" if n == 1 else "layer", link_gbps=None if n == 1 else 1.4)
        for m, top, fall in (("gpt-oss-20b", 196.0, 0.6), ("glm-4.7-flash", 138.0, 0.7), ("gemma-3-27b", 40.0, 0.5),
                             ("llama-3-70b", 17.0, 0.6)):
            for k, d in enumerate(DEPTHS):
                recs.append(dict(rig, test="tg", model=m, n_depth=d, avg_ts=top * (1 - fall * k / 7)))
                recs.append(dict(rig, test="pp", model=m, n_depth=0, n_prompt=d, avg_ts=top * 100 * (1 - fall * k / 7)))
    recs += [dict(BASE, evidence="calibrated", test="tg", model="glm-4.7-flash", n_depth=d, avg_ts=140.0 - k * 12,
                  avg_ts_lo=110.0 - k * 10, avg_ts_hi=175.0 - k * 15) for k, d in enumerate(DEPTHS)]
    for fig in (plots.generation_vs_context(recs), plots.prefill_vs_prompt(recs)):
        r = _rend(fig)
        legends = [ax.get_legend() for ax in fig.axes if ax.get_legend()] + list(fig.legends)
        assert legends
        for leg in legends:
            box = leg.get_window_extent(r)
            assert not any(_box_on_data(ax, box) for ax in fig.axes)
            fb = fig.bbox
            assert fb.x0 <= box.x0 and box.x1 <= fb.x1 + 1  # and inside the figure


def test_memory_ceiling_label_clear_of_the_curves():
    # a small card (`report --hardware rtx-4060`): every curve runs just above the 8 GiB ceiling, and through
    # its label, drawn above the line at the left
    recs = [dict(BASE, test="mem", model=m, n_depth=d, mem_bytes=int((w + d / 131072) * GIB), capacity_bytes=8 * GIB,
                 fits=False) for m, w in (("a", 8.5), ("b", 9.4), ("c", 16.0), ("d", 17.5)) for d in DEPTHS]
    fig = plots.memory_vs_context(recs)
    r = _rend(fig)
    ax = fig.axes[0]
    label = next(t for t in ax.texts if "GiB per card" in t.get_text())
    box = label.get_window_extent(r)
    assert not _box_on_data(ax, box)
    assert ax.bbox.x0 <= box.x0 and box.x1 <= ax.bbox.x1 and ax.bbox.y0 <= box.y0 and box.y1 <= ax.bbox.y1
    # still beside its line: within a label's height of 8 GiB
    y8 = ax.transData.transform((DEPTHS[0], 8.0))[1]
    assert min(abs(box.y0 - y8), abs(box.y1 - y8)) < 6


def test_ttft_panel_carries_the_calibrated_band():
    # `report --runtime llama.cpp`: the prefill panel drew each calibrated line's band, the TTFT panel none
    recs = [dict(BASE, evidence="calibrated", test="pp", model="a", n_depth=0, n_prompt=n, avg_ts=1000.0,
                 avg_ts_lo=800.0, avg_ts_hi=1250.0) for n in DEPTHS]
    before = [dict(r) for r in recs]
    ax1, ax2 = plots.prefill_vs_prompt(recs).axes[:2]
    assert len(ax1.collections) == 1 and len(ax2.collections) == 1
    ys = ax2.collections[0].get_paths()[0].vertices[:, 1]
    # TTFT n / 1000 s, its band n / 1250 .. n / 800
    assert min(ys) == pytest.approx(DEPTHS[0] / 1250) and max(ys) == pytest.approx(DEPTHS[-1] / 800)
    assert recs == before


def test_no_crossover_is_said():
    # the default study: GLM-4.7-Flash faster at every depth; the chart marked no crossover and said nothing
    recs = [dict(r, avg_ts=r["avg_ts"] + 60.0) if r["model"] == "a" else r for r in tg_records()]
    assert plots.crossovers(recs) == []
    title = plots.generation_vs_context(recs).axes[0].get_title()
    assert "no crossover from 1K to 128K: a faster than b throughout" in title
    # one crossing: the line and its label, no such note
    title = plots.generation_vs_context(tg_records()).axes[0].get_title()
    assert "no crossover" not in title


def test_batched_decode_rows_draw_on_the_throughput_chart():
    # `glmbench plot llama-batched-bench.md`: 24 rows, B = 1..32 at PP 128 and 512; only the four B = 1 rows
    # were drawn (as single-stream points), the throughput they measure nowhere
    import os
    from glmbench.results import importers
    src = os.path.join(os.path.dirname(__file__), "data", "formats", "llama-batched-bench.md")
    recs = importers.read(src, model="llama-3-8b")
    charts = plots.all_charts(recs)
    assert "throughput_vs_concurrency" in charts
    ax = charts["throughput_vs_concurrency"].axes[0]
    # two series (measured: markers), one per depth, each B = 1 .. 32 in order, S_TG as the aggregate
    lines = [l for l in ax.lines if len(l.get_xdata()) == 6]
    assert len(lines) == 2
    assert all(list(l.get_xdata()) == [1, 2, 4, 8, 16, 32] for l in lines)
    ys = sorted(tuple(l.get_ydata()) for l in lines)
    assert ys[0] == pytest.approx((35.32, 69.67, 131.66, 242.19, 422.81, 680.32))
    assert ys[1] == pytest.approx((36.37, 71.33, 135.16, 249.40, 429.29, 694.76))
    labels = ax.get_legend_handles_labels()[1]
    assert any("(measured)" in s and "@ 128 ctx" in s for s in labels)


def test_crossover_chart_edges_are_labelled_and_their_labels_clear_of_the_lines():
    # the default report's mla_crossover.png: a crossover from the start (crossover_depth 0.0) sat on the
    # bottom edge with the tick '512' (no such crossover depth), and 'no crossover up to 128K' was struck
    # through by the lines running along the top edge
    rows = []
    for n in (1, 2):
        for dm, depths in (("steep", (4096.0, None, None, None)), ("start", (0.0, 0.0, 2048.0, 65536.0)),
                           ("mid", (1024.0, 16384.0, 60000.0, None))):
            for e, d in zip((0.02, 0.03, 0.1, 0.5), depths):
                rows.append(dict(mla_model="glm-4.7-flash", dense_model=dm, n_cards=n, rig="RTX 3090", split="none",
                                 runtime="typical", evidence="predicted", mla_strategy="flash",
                                 mla_attention_efficiency=e, own=e == 0.1, own_fitted=False, knob="x",
                                 crossover_depth=d, max_depth=131072, weights="q4_K", kv="f16"))
    fig = plots.mla_crossover(rows)
    r = _rend(fig)
    for ax in fig.axes:
        start = next(l for l in ax.lines if l.get_label() == "start")
        y0 = start.get_ydata()[0]
        assert all(l.get_ydata()[0] == y0 for l in ax.lines if l.get_label() == "start")
        labels = {float(v): t.get_text() for v, t in zip(ax.get_yticks(), ax.get_yticklabels())}
        if ax.get_subplotspec().is_first_col():
            assert "start" in labels[float(y0)], labels
        texts_ = [t.get_text() for t in ax.texts]
        assert any(s.startswith("no crossover up to 128K") for s in texts_)
        assert any("from the start" in s for s in texts_)
        for t in ax.texts:
            box = t.get_window_extent(r)
            assert ax.bbox.x0 <= box.x0 and box.x1 <= ax.bbox.x1 and ax.bbox.y0 <= box.y0 and box.y1 <= ax.bbox.y1, \
                t.get_text()
            assert not _box_on_data(ax, box), t.get_text()


def test_spill_labels_sit_by_their_markers_clear_of_the_curves():
    # `report --depths 256..16M`: four setups spill between 26K and 595K; their labels were stacked by a running
    # count (9, 21, 33, 45 points up), the last ones far from their markers and on the other setups' curves
    deep = [256 * 4 ** k for k in range(9)]
    recs = []
    for n in (1, 2):
        rig = dict(BASE, n_cards=n, split="none" if n == 1 else "layer", link_gbps=None if n == 1 else 1.4)
        for m, w, kib in (("a", 16.0 / n, 52.0 / n), ("b", 17.0 / n, 256.0 / n)):
            recs += [dict(rig, test="mem", model=m, n_depth=d, mem_bytes=int(w * GIB + kib * 1024 * d),
                          capacity_bytes=24 * GIB, fits=w * GIB + kib * 1024 * d <= 24 * GIB) for d in deep]
    fig = plots.memory_vs_context(recs)
    r = _rend(fig)
    ax = fig.axes[0]
    spills = [t for t in ax.texts if t.get_text().startswith("spills")]
    markers = [l for l in ax.lines if l.get_marker() == "v"]
    assert len(spills) == len(markers) == 4
    boxes = {t: t.get_window_extent(r) for t in ax.texts}
    for t in spills:
        box = boxes[t]
        assert ax.bbox.x0 <= box.x0 and box.x1 <= ax.bbox.x1 and ax.bbox.y0 <= box.y0 and box.y1 <= ax.bbox.y1
        assert not _box_on_data(ax, box), t.get_text()
        assert not any(box.overlaps(o) for u, o in boxes.items() if u is not t), t.get_text()
        # near its own marker (the one at its x, in its colour): within 40 points of the marker's centre
        mx, my = ax.transData.transform(t.xy)
        mk = next(l for l in markers if l.get_xdata()[0] == t.xy[0])
        assert mk.get_color() == t.get_color()
        dx = max(box.x0 - mx, 0, mx - box.x1)
        dy = max(box.y0 - my, 0, my - box.y1)
        assert math.hypot(dx, dy) < 40 * fig.dpi / 72, (t.get_text(), dx, dy)


def test_one_depth_two_rigs_marks_differ_and_one_vs_two_draws_one_single_stream_panel():
    # `report --depths 4K`: a one-point line is a mark, which shows no line style: one card's and two cards'
    # dashes at 131 and 130 tok/s lay on each other and their legend entries were alike; and one_vs_two_cards
    # drew the same 4K panel twice, as 'short single stream' and 'long context'
    recs = []
    for n in (1, 2):
        rig = dict(BASE, n_cards=n, split="none" if n == 1 else "layer", link_gbps=None if n == 1 else 1.4)
        for m, v in (("a", 131.0), ("b", 33.0)):
            recs.append(dict(rig, test="tg", model=m, n_depth=4096, avg_ts=v - 0.5 * n))
            recs.append(dict(rig, test="mem", model=m, n_depth=4096, mem_bytes=int(v / 8 / n * GIB),
                             capacity_bytes=24 * GIB, fits=True))
            recs.append(dict(rig, test="serve", model=m, n_depth=4096, concurrency=4, aggregate_tok_s=3 * v * n))
    recs.append(dict(BASE, evidence="calibrated", test="tg", model="a", n_depth=4096, avg_ts=120.0, avg_ts_lo=100.0,
                     avg_ts_hi=140.0, n_cards=2, split="layer", link_gbps=1.4))
    for chart in (plots.generation_vs_context, plots.memory_vs_context):
        fig = chart(recs)
        r = _rend(fig)
        ax = fig.axes[0]
        for m in ("a", "b"):
            marks = [l for l in ax.lines if l.get_label().startswith(m + " ·") and "calibrated" not in l.get_label()]
            assert len(marks) == 2
            # told apart in the legend (the handle's marker: the line style is hidden under a mark) ...
            assert len({(l.get_marker(), l.get_linestyle()) for l in marks}) == 2
            assert marks[0].get_marker() != marks[1].get_marker(), chart.__name__
            # ... and on the chart: side by side, not one on the other
            xs = [l.get_transform().transform((l.get_xdata()[0], l.get_ydata()[0]))[0] for l in marks]
            assert abs(xs[0] - xs[1]) >= 12 * fig.dpi / 72, chart.__name__
        handles, labels = ax.get_legend_handles_labels()
        assert len({(h.get_marker(), h.get_markerfacecolor()) for h, lab in zip(handles, labels) if lab.startswith("a ·")}) == \
            len([lab for lab in labels if lab.startswith("a ·")])
    # the calibrated mark's error bar stands with its mark
    ax = plots.generation_vs_context(recs).axes[0]
    cal = next(l for l in ax.lines if "calibrated" in l.get_label())
    x_cal = cal.get_transform().transform((4096, 120.0))[0]
    seg = next(c for c in ax.collections if len(c.get_segments()))
    assert seg.get_transform().transform(seg.get_segments()[0])[0][0] == pytest.approx(x_cal)
    fig = plots.one_vs_two_cards(recs)
    titles = [ax.get_title() for ax in fig.axes]
    assert len(fig.axes) == 2 and len(set(titles)) == 2, titles
    assert "4K context, the only depth" in titles[0] and "batched" in titles[1]
    assert [ax.get_ylabel() for ax in fig.axes] == ["tokens/s (one stream)", "tokens/s (all streams)"]


def test_series_that_differ_only_by_context_are_told_apart():
    # `report --model llama-3-8b --depths 128,512 --serve-context 512 --measured llama-batched-bench.md`: the
    # measured PP 128 and PP 512 series were the same circles in the same colour, on each other, their legend
    # entries alike; a predicted line at a second context was the first's line style
    import os
    from glmbench.results import importers
    src = os.path.join(os.path.dirname(__file__), "data", "formats", "llama-batched-bench.md")
    recs = importers.read(src, model="llama-3-8b")
    recs += [dict(BASE, test="serve", model="llama-3-8b", n_depth=d, concurrency=c, aggregate_tok_s=100.0 * c - d / 64)
             for d in (128, 512) for c in (1, 2, 4, 8)]
    fig = plots.throughput_vs_concurrency(recs)
    r = _rend(fig)
    ax = fig.axes[0]
    handles, labels = ax.get_legend_handles_labels()
    measured = [l for l in ax.lines if l.get_linestyle() == "None" and len(l.get_xdata()) == 6]
    predicted = [l for l in ax.lines if l.get_linestyle() != "None" and len(l.get_xdata()) == 4]
    assert len(measured) == 2 and len(predicted) == 2
    for pair in (measured, predicted):
        assert pair[0].get_color() == pair[1].get_color()
        assert (pair[0].get_marker(), pair[0].get_linestyle()) != (pair[1].get_marker(), pair[1].get_linestyle())
    # the legend tells the four apart
    keys = {(h.get_marker(), h.get_linestyle()) if hasattr(h, "get_marker") else
            (h.lines[0].get_marker(), h.lines[0].get_linestyle()) for h in handles}
    assert len(keys) == len(handles) == 4, labels
    # and the measured points at one concurrency stand apart, not one on the other (35 vs 36 tok/s at B = 1)
    a, b = (l.get_transform().transform((l.get_xdata()[0], l.get_ydata()[0])) for l in measured)
    assert abs(a[0] - b[0]) >= 6 * fig.dpi / 72
    # prefill vs context: one setup at two prompt lengths, two lines of one colour and style, now two markers
    pp = [dict(BASE, test="pp", model="a", n_prompt=n, n_depth=d, avg_ts=1000.0 - n / 4 - d / 1024)
          for n in (512, 2048) for d in DEPTHS]
    ax = plots.prefill_vs_context(pp).axes[0]
    lines = [l for l in ax.lines if len(l.get_xdata()) == len(DEPTHS)]
    assert len(lines) == 2 and len({(l.get_marker(), l.get_linestyle()) for l in lines}) == 2


def _tick_labels(axis):
    """The labels of the major and the minor ticks a log axis shows (after a draw), each list in order."""
    lo, hi = sorted(axis.get_view_interval())
    out = []
    for locs, fmt in ((axis.get_majorticklocs(), axis.get_major_formatter()),
                      (axis.get_minorticklocs(), axis.get_minor_formatter())):
        locs = [v for v in locs if lo <= v <= hi]
        out.append([t for t in fmt.format_ticks(locs) if t])
    return tuple(out)


def test_log_axes_read_as_plain_numbers():
    # `report --depths 4K`'s TTFT panel (0.36 to 2.1 s) read '4x10^-1', '6x10^-1', '10^0', '2x10^0'; every
    # log axis read '10^-1', '10^2' (the crossover chart's efficiency '10^-2', '10^-1', '10^0')
    import re
    recs = [dict(BASE, test="pp", model=m, n_depth=0, n_prompt=4096, avg_ts=v, n_cards=n,
                 split="layer" if n > 1 else "none") for m, n, v in
            (("a", 1, 6823.0), ("a", 2, 11379.0), ("b", 1, 1911.0), ("b", 2, 3300.0))]
    fig = plots.prefill_vs_prompt(recs)
    _rend(fig)
    major, minor = _tick_labels(fig.axes[1].yaxis)
    assert major == ["0.5 s", "1 s", "2 s"] and minor == []
    # over decades: every decade, plain
    fig = plots.prefill_vs_prompt([dict(BASE, test="pp", model="a", n_depth=0, n_prompt=n, avg_ts=1000.0)
                                   for n in DEPTHS])   # 1 s .. 131 s
    _rend(fig)
    assert _tick_labels(fig.axes[1].yaxis) == (["1 s", "3 s", "10 s", "30 s", "100 s"], [])
    deep = [256 * 4 ** k for k in range(9)]  # 256 .. 16M: the speed and memory axes go log
    recs = [dict(BASE, test="tg", model="a", n_depth=d, avg_ts=140.0 / (1 + d / 16384)) for d in deep]
    recs += [dict(BASE, test="mem", model="a", n_depth=d, mem_bytes=9 * GIB + 256 * 1024 * d, capacity_bytes=24 * GIB,
                  fits=9 * GIB + 256 * 1024 * d <= 24 * GIB) for d in deep]
    for chart in (plots.generation_vs_context, plots.memory_vs_context):
        fig = chart(recs)
        _rend(fig)
        major, minor = _tick_labels(fig.axes[0].yaxis)
        assert len(major) >= 3 and minor == [], chart.__name__
        assert all(re.fullmatch(r"\d{1,3}(,\d{3})*|0\.\d+", t) for t in major), (chart.__name__, major)
    fig = plots.mla_crossover(_crossover_rows())
    _rend(fig)
    assert _tick_labels(fig.axes[-1].xaxis) == (["0.01", "0.03", "0.1", "0.3", "1"], [])


def test_plain_number():
    assert [plots.plain_number(v) for v in (0.001, 0.05, 0.5, 2, 10, 300, 1000, 20000)] == \
           ["0.001", "0.05", "0.5", "2", "10", "300", "1,000", "20,000"]
    assert plots.plain_number(0.5, " s") == "0.5 s"


def _line(ax, start):
    return [ln for ln in ax.lines if str(ln.get_label()).startswith(start)]


def test_a_line_on_another_gets_marks_and_says_whose_line_it_lies_on():
    # the default report: one card's and two cards' decode (138.0 and 137.4 tok/s ...) drew one line, the dashed
    # one hidden on the solid one, the legend naming two
    two = dict(n_cards=2, split="layer", link_gbps=1.4)
    recs = []
    for m, top in (("a", 138.0), ("b", 35.0)):
        for d in DEPTHS:
            y = top / (1 + d / 65536)
            recs.append(dict(BASE, test="tg", model=m, n_depth=d, avg_ts=y))
            # b's two cards 10% faster: apart, drawn as they are
            recs.append(dict(BASE, test="tg", model=m, n_depth=d, avg_ts=y * (0.996 if m == "a" else 1.1), **two))
    ax = plots.generation_vs_context(recs).axes[0]
    (one,), (on,) = _line(ax, "a · 1× RTX 3090"), _line(ax, "a · 2× RTX 3090")
    assert one.get_marker() in (None, "None", "")
    assert on.get_marker() == "D" and on.get_markerfacecolor() == "none" and len(on.get_xdata()) == len(DEPTHS)
    assert on.get_label() == "a · 2× RTX 3090 (layer split, 1.4 GB/s)\n    (marks: on the 1× RTX 3090 line, within 1%)"
    assert on.get_label() in ax.get_legend_handles_labels()[1]
    (apart,) = _line(ax, "b · 2× RTX 3090")
    assert apart.get_marker() in (None, "None", "") and apart.get_label() == "b · 2× RTX 3090 (layer split, 1.4 GB/s)"
    # three rigs on one line (1, 2 and 4 cards): two kinds of marks; a line that runs on another over part of its
    # range (more streams fit on two cards) says over which
    serve = []
    for n, last, k in ((1, 4, 1.0), (2, 16, 1.004), (4, 64, 0.998)):
        for c in (1, 2, 4, 8, 16, 32, 64):
            if c <= last:
                serve.append(dict(BASE, test="serve", model="a", n_depth=4096, concurrency=c, n_cards=n,
                                  split="layer" if n > 1 else "none", aggregate_tok_s=30.0 * c ** 0.7 * k,
                                  per_stream_tok_s=30.0 * c ** -0.3 * k, fits=True))
    ax = plots.throughput_vs_concurrency(serve).axes[0]
    (two_l,), (four_l,) = _line(ax, "a · 2× RTX 3090"), _line(ax, "a · 4× RTX 3090")
    assert two_l.get_marker() == "D" and four_l.get_marker() == "v"
    assert two_l.get_label().endswith("(marks: on the 1× RTX 3090 line from 1 to 4, within 1%)")
    assert four_l.get_label().endswith("(marks: on the 2× RTX 3090 (layer split) line from 1 to 16, within 1%)")
    # calibrated lines both carry squares: the one on the other gets marks of another shape
    cal = [dict(r, evidence="calibrated") for r in recs if r["model"] == "a"]
    ax = plots.generation_vs_context(cal).axes[0]
    (one,), (on,) = _line(ax, "a · 1× RTX 3090"), _line(ax, "a · 2× RTX 3090")
    assert one.get_marker() == "s" and on.get_marker() == "D"
    assert on.get_label().endswith("(marks: on the 1× RTX 3090 (calibrated) line, within 1%)")


def _major_labels(ax, axis):
    lo, hi = sorted(axis.get_view_interval())
    locs = [v for v in axis.get_majorticklocs() if lo <= v <= hi]
    return [t for t in axis.get_major_formatter().format_ticks(locs) if t]


def test_linear_value_axes_write_thousands_separators():
    # the default report's prefill speed axis read 10000 and 12000 (and one_vs_two_cards' batched bar '1018',
    # its axis 1000)
    # while report.md writes '12,711'; a memory axis of a large model past a thousand GiB read 1200 too
    import re
    recs = []
    for n in (1, 2):
        rig = dict(BASE, n_cards=n, split="none" if n == 1 else "layer", link_gbps=None if n == 1 else 1.4)
        for k, d in enumerate(DEPTHS):
            recs.append(dict(rig, test="pp", model="a", n_depth=0, n_prompt=d, avg_ts=12711.0 * n - 1000 * k))
            recs.append(dict(rig, test="tg", model="a", n_depth=d, avg_ts=1500.0 * n - 100 * k))
            recs.append(dict(rig, test="mem", model="a", n_depth=d, mem_bytes=(1100 + 50 * k) * GIB,
                             capacity_bytes=1600 * GIB, fits=True))
        for c in (1, 2, 4, 8, 16):
            recs.append(dict(rig, test="serve", model="a", n_depth=4096, concurrency=c, aggregate_tok_s=1018.0 * c * n))
    figs = {"prefill_vs_prompt": plots.prefill_vs_prompt(recs).axes[0],
            "generation_vs_context": plots.generation_vs_context(recs).axes[0],
            "memory_vs_context": plots.memory_vs_context(recs).axes[0],
            "throughput_vs_concurrency": plots.throughput_vs_concurrency(recs).axes[0]}
    two = plots.one_vs_two_cards(recs)
    figs.update({f"one_vs_two_cards[{i}]": ax for i, ax in enumerate(two.axes)})
    for name, ax in figs.items():
        _rend(ax.figure)
        assert ax.get_yscale() == "linear", name
        labels = _major_labels(ax, ax.yaxis)
        assert any(re.fullmatch(r"\d{1,3}(,\d{3})+", t) for t in labels), (name, labels)
        assert not any(re.search(r"\d{4}", t) for t in labels), (name, labels)
        assert not ax.yaxis.get_offset_text().get_text(), name      # no '1e4' multiplier above the axis
    bar_labels = [t.get_text().split("\n")[0] for t in two.axes[-1].texts]
    assert bar_labels == ["16,288", "32,576"], bar_labels
    assert [plots.linear_number(v) for v in (0, 0.25, 137.5, 1000, 12000, 2e6)] == \
           ["0", "0.25", "137.5", "1,000", "12,000", "2,000,000"]


def test_log_axis_under_half_a_decade_is_labelled_across():
    # `search ... --models glm-4.7-flash --gpus rtx-3090,rtx-4090 --cards 1,2`: pareto.png's cost axis from $0.053
    # to $0.17 read 0.06, 0.07, 0.08, 0.09, 0.1 and nothing above: the upper half of the axis without a label
    fig = Figure()
    ax = fig.subplots()
    ax.set_yscale("log")
    plots.plain_log_axis(ax.yaxis)
    ax.set_ylim(0.053, 0.17)
    _rend(fig)
    major, minor = _tick_labels(ax.yaxis)
    assert len(major) >= 3 and minor == [], major
    ticks = [float(t) for t in major]
    pts = [math.log(0.053)] + [math.log(t) for t in ticks] + [math.log(0.17)]
    widest = max(b - a for a, b in zip(pts, pts[1:]))
    assert widest <= math.log(0.17 / 0.053) / 3, major
    # where 1-2-5 steps fit (a TTFT panel of 0.36 to 2.1 s) they stay
    ax.set_ylim(0.36, 2.1)
    _rend(fig)
    assert _tick_labels(ax.yaxis) == (["0.5", "1", "2"], [])

"""The study point by point (report/findings.py) and the crossover vs MLA attention efficiency
(predict/crossover.py)."""
import pytest

from glmbench import report
from glmbench.predict import costmodel as cm
from glmbench.predict import crossover as cx
from glmbench.predict import hardware as hw
from glmbench.report import findings as fd
from glmbench.report import plots


def test_crossover_depth_falls_with_the_mla_efficiency():
    rig = hw.Rig(hw.get_gpu("rtx-3090"), 1)
    dense = cm.Setup("qwen3-32b", rig)
    xs = []
    for e in (0.03, 0.05, 0.08, 0.45):
        s = cm.Setup("glm-4.7-flash", rig, runtime=cx.with_mla_efficiency("typical", "flash", e))
        xs.append(cx.crossover_depth(s, dense))
    found = [x for x in xs if x is not None]
    assert found == sorted(found) and found            # a better kernel moves the crossover out
    assert xs[-1] is None                              # typical: none up to 128K
    # at the crossover the two speeds meet
    s = cm.Setup("glm-4.7-flash", rig, runtime=cx.with_mla_efficiency("typical", "flash", 0.05))
    x = cx.crossover_depth(s, dense)
    assert cm.decode(s, int(x)).tok_s == pytest.approx(cm.decode(dense, int(x)).tok_s, rel=0.05)
    with pytest.raises(ValueError, match="in \\(0, 1\\]"):
        cx.with_mla_efficiency("typical", "flash", 1.5)


def test_curves_mark_each_profile_and_draw():
    rigs = report.Study().rigs()
    rows = cx.mla_crossover_curves(rigs, ["typical", "llama-cpp-1x3090"], efficiencies=(0.05, 0.5))
    own = [r for r in rows if r["own"]]
    # typical: every strategy at its attention efficiency; the calibrated one: its fitted strategy only
    assert {(r["runtime"], r["mla_strategy"]) for r in own} == {("typical", s) for s in cm.MLA_STRATEGIES} | {
        ("llama-cpp-1x3090", "flash")}
    cal = [r for r in own if r["runtime"] == "llama-cpp-1x3090"]
    assert all(r["evidence"] == "calibrated" and r["mla_attention_efficiency"] == pytest.approx(
        cm.load_runtime("llama-cpp-1x3090").mla_attention_efficiency["flash"]) for r in cal)
    fig = plots.mla_crossover(rows)
    assert fig.axes[0].get_ylabel() and fig.axes[0].get_yscale() == "log"


def test_findings_from_records():
    study = report.Study()
    f = fd.findings(study)
    assert len(f["rows"]) >= 5
    for row in f["rows"]:
        assert set(row) == {"finding", "study", "typical", "calibrated", "agree", "why"}
        assert row["agree"].split(" ")[0] in ("yes", "no", "tie")
    # every speed quoted for the dense models comes from a record in findings["records"]
    flat = next(r for r in f["rows"] if "flat" in r["finding"])
    tg = {(r["model"], r["runtime"], r["n_depth"], r["n_cards"]): r["avg_ts"] for r in f["records"] if r["test"] == "tg"}
    a, b = tg[("qwen3-32b", "typical", study.depths[0], 1)], tg[("qwen3-32b", "typical", study.depths[-1], 1)]
    assert f"qwen3-32b {a:.0f} -> {b:.0f} tok/s" in flat["typical"]
    cal = [r for r in f["records"] if r["runtime"] in cm.list_calibrated()]
    assert cal and all(r["evidence"] == "calibrated" and r["cv_error"] for r in cal)
    assert "64K" in f["study_era"]


@pytest.mark.slow
def test_report_section_and_ties(tmp_path):
    res = report.run(report.Study(depths=(1024, 8192, 65536), concurrency=(1, 4)), tmp_path / "rep", progress=False)
    text = open(res["report"]).read()
    assert "## The study, point by point" in text and "## Crossover depth vs MLA attention efficiency" in text
    assert "mla_crossover.png" in text and (tmp_path / "rep" / "findings.json").exists()
    # a calibrated runtime: its records say so, and close results in the decision table are ties
    res = report.run(report.Study(depths=(1024, 8192), concurrency=(1, 4), runtime="ik-llama-mla-fixed"),
                     tmp_path / "cal", progress=False)
    text = open(res["report"]).read()
    from glmbench.results import records as rec
    recs = rec.read_records(tmp_path / "cal" / "records.json")
    assert {r["evidence"] for r in recs} == {"calibrated"}
    assert "tie with" in text

"""The study point by point (report/findings.py) and the crossover vs MLA attention efficiency
(predict/crossover.py)."""
import dataclasses

import pytest

from glmbench import report
from glmbench.predict import costmodel as cm
from glmbench.predict import crossover as cx
from glmbench.predict import hardware as hw
from glmbench.predict import runtime as rtm
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
    # speeds the caller already has (the curves pass each MLA setup's once for every dense model) give the same depth
    ya = [cm.decode(s, d).tok_s for d in cx.DEPTHS]
    yb = [cm.decode(dense, d).tok_s for d in cx.DEPTHS]
    assert cx.crossover_depth(s, dense, mla_speeds=ya, dense_speeds=yb) == x
    assert cx.crossover_depth(s, dense, mla_speeds=[2 * y for y in ya]) != x    # and are the ones used
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
    # a findings search's own decode speeds of the very same dense setups are the ones the curves use
    # (known_speeds); a setup it did not price (another cache format) is priced afresh
    from glmbench.report.study import Study
    st = Study(models=("glm-4.7-flash",), depths=(1024, 8192))
    S = fd.Search(st, dense=("qwen3-32b",), runtimes=("typical",))
    S.tg("qwen3-32b", "typical", 1)
    mine = S.setup("qwen3-32b", "typical", 1)
    assert S.known_tg(mine) == [S.tg("qwen3-32b", "typical", 1)[d]["avg_ts"] for d in S.grid]
    assert S.known_tg(dataclasses.replace(mine, kv="q8_0")) is None and S.known_tg(S.setup("qwen3-32b", "typical", 2)) is None
    args = dict(mla_model="glm-4.7-flash", dense_models=("qwen3-32b",), strategies=["flash"], depths=S.grid,
                efficiencies=(0.05, 0.5))
    plain = cx.mla_crossover_curves([hw.Rig("rtx-3090", 1)], ["typical"], **args)
    assert cx.mla_crossover_curves([hw.Rig("rtx-3090", 1)], ["typical"], known_speeds=S.known_tg, **args) == plain
    fake = cx.mla_crossover_curves([hw.Rig("rtx-3090", 1)], ["typical"], known_speeds=lambda s: [1e6] * len(S.grid),
                                   **args)
    assert {r["crossover_depth"] for r in fake} == {0.0} != {r["crossover_depth"] for r in plain}   # and are used


def test_runtime_models_sweep_their_mla_kernel():
    """A runtime model runs MLA with its own kernel, whose memory efficiency its kernel table holds:
    the sweep must set that entry (else the curves are flat lines that read as 'the crossover does
    not depend on the MLA kernel'), and its own marker is the table's value."""
    rig = hw.Rig(hw.get_gpu("rtx-3090"), 1)
    names = rtm.names()
    assert {"llama.cpp", "ik_llama.cpp", "vllm"} <= set(names)
    for name in names + ["ik_llama.cpp[mla=2]"]:
        rt = cm.load_runtime(name)
        st = cx.runs_strategy(rt, "naive")
        assert st == (rt.mla_strategy or "naive")
        key = cx.mla_kernel_key(rt, "naive")
        # (sglang: no kernel table, nothing fitted: its mla_attention_efficiency holds the knob, as typical's)
        assert key == ({"flash": "mla_flash:memory", "absorbed": "mla_absorbed:memory"}[st] if rt.kernels else None)
        own = cx.mla_efficiency_of(rt, "naive")
        if key in rt.kernels:
            assert own == rt.kernels[key]
        # decode deep in the cache moves with the knob, whichever strategy is asked for
        tg = [cm.decode(cm.Setup("glm-4.7-flash", rig, runtime=cx.with_mla_efficiency(rt, "absorbed", e)), 32768).tok_s
              for e in (0.05, 0.5)]
        assert tg[1] > 1.2 * tg[0], name
        # at its own value the swept profile predicts what the runtime model does
        same = cx.with_mla_efficiency(rt, "flash", own)
        assert cm.decode(cm.Setup("glm-4.7-flash", rig, runtime=same), 32768).tok_s == pytest.approx(
            cm.decode(cm.Setup("glm-4.7-flash", rig, runtime=rt), 32768).tok_s, rel=1e-12)
    assert cx.mla_kernel_key("typical", "absorbed") is None
    rows = cx.mla_crossover_curves([rig], ["typical"] + names, strategies=["absorbed"],
                                   dense_models=["qwen3-32b", "llama-3.3-70b"], efficiencies=(0.02, 0.05, 0.1, 0.3, 1.0))
    curves: dict = {}
    for r in rows:
        curves.setdefault((r["runtime"], r["dense_model"]), []).append(r)
        if r["runtime"] in names and cm.load_runtime(r["runtime"]).kernels:
            assert r["knob"] == f"kernels.mla_{r['mla_strategy']}:memory" and r["evidence"] == "calibrated"
        elif r["runtime"] in names:     # sglang: a runtime model fitted to nothing (physics), no kernel table
            assert r["knob"] == f"mla_attention_efficiency.{r['mla_strategy']}" and r["evidence"] == "predicted"
        else:
            assert r["knob"] == "mla_attention_efficiency.absorbed"
    moving = set()
    for (rt, dm), line in curves.items():
        line.sort(key=lambda r: r["mla_attention_efficiency"])
        assert sum(r["own"] for r in line) == 1
        x0 = line[0]["crossover_depth"]
        # a crossover inside the grid at the slowest kernel moves out as the kernel gets faster
        if x0:
            xs = [r["crossover_depth"] for r in line]
            assert len(set(xs)) > 1 and (xs[-1] is None or xs[-1] > x0), (rt, dm, xs)
            moving.add(rt)
    assert moving == {"typical", *names}        # no runtime model is drawn as flat lines only


def test_findings_search_every_combination_from_records():
    study = report.Study()
    f = fd.findings(study)
    dense, rts = cx.study_dense(), fd.runtime_names()
    # the study's dense candidates (the Gemma 3 sliding-window models among them) and every shipped profile
    assert {"gemma-3-27b", "gemma-3-12b", "qwen3-32b"} <= set(dense) == set(f["dense_models"])
    assert set(dense) <= set(cx.dense_builtins()) and len(dense) == 14
    assert [r["name"] for r in f["runtimes"]] == rts and set(cm.list_calibrated()) <= set(rts)
    assert [r["key"] for r in f["rows"]] == ["generation", "crossover", "prefill", "memory", "quant_kv", "one_vs_two"]
    n = {"generation": len(dense) * len(rts) * 2, "crossover": len(dense) * len(rts) * 2,
         "prefill": len(dense) * len(rts) * 2, "memory": len(dense) * len(rts), "quant_kv": len(rts) * 2,
         "one_vs_two": len(rts)}
    for row in f["rows"]:
        assert {"finding", "study", "criterion", "headline", "why", "results"} <= set(row)
        assert len(row["results"]) == n[row["key"]] == row["n"]
        ok = [r for r in row["results"] if r["reproduced"]]
        assert row["n_reproduced"] == len(ok)
        assert row["headline"] == "reproduced by none" if not ok else row["headline"].startswith("reproduced by `")
        for r in row["results"]:
            # one sentence each, naming the combination and saying whether it reproduces the finding
            assert r["sentence"].count(". ") == 0 and r["sentence"].endswith("reproduce it.") or \
                r["sentence"].endswith("reproduces it.")
            assert r["sentence"].startswith(f"`{r['runtime']}`")
        for r in ok:
            assert f"`{r['runtime']}`" in row["headline"]
    # every speed quoted comes from a record in findings["records"]
    tg = {(r["model"], r["runtime"], r["n_depth"], r["n_cards"], r["type_k"]): r["avg_ts"]
          for r in f["records"] if r["test"] == "tg"}
    gen = next(r for r in f["rows"] if r["key"] == "generation")
    for r in gen["results"]:
        g = tg[("glm-4.7-flash", r["runtime"], fd.SHORT, r["n_cards"], study.kv)]
        d = tg[(r["dense_model"], r["runtime"], fd.SHORT, r["n_cards"], study.kv)]
        assert r["glm_tok_s"] == g and r["dense_tok_s"] == d
        assert f"GLM-4.7-Flash {g:.0f} tok/s vs {r['dense_model']} {d:.0f} tok/s" in r["sentence"]
        assert r["reproduced"] == (abs(g / fd.STUDY_TG - 1) <= fd.APPROX and g / d > fd.TG_RATIO)
    cal = [r for r in f["records"] if r["runtime"] in cm.list_calibrated()]
    assert cal and all(r["evidence"] == "calibrated" and r["cv_error"] for r in cal)
    # the summary: two sentences, the likely setup among the best-scoring pairs
    assert len(f["summary"]) == 2 and "most likely measured" in f["summary"][0]
    best = f["likely"]["best"]
    assert best == max(s["n"] for s in f["likely"]["scores"])
    assert all(f"`{t['runtime']}`" in f["summary"][0] for t in f["likely"]["top"])


def _efficiency_at(dense, rig_cards, target):
    """By bisection on the cost model directly (not through findings): the MLA flash efficiency at which
    GLM-4.7-Flash decodes exactly as fast as `dense` at `target` tokens (typical otherwise)."""
    rig = report.Study().rigs()[rig_cards - 1]
    sp = "none" if rig.n_cards == 1 else "layer"
    d = cm.decode(cm.Setup(dense, rig, split=sp), target).tok_s
    lo, hi = 1e-3, 1.0
    for _ in range(60):
        mid = (lo * hi) ** 0.5
        g = cm.decode(cm.Setup("glm-4.7-flash", rig, split=sp, runtime=cx.with_mla_efficiency("typical", "flash", mid)),
                      target).tok_s
        lo, hi = (mid, hi) if g < d else (lo, mid)
    return (lo * hi) ** 0.5


def test_a_fake_profile_pair_is_found_or_not():
    """A profile built to put the crossover at a known depth (64K) reproduces the finding; one with a
    fast MLA kernel (efficiency 1) and one that crosses at 8K do not, and each says why."""
    e = _efficiency_at("gemma-3-27b", 1, 65536)
    at64 = dataclasses.replace(cx.with_mla_efficiency("typical", "flash", e), name="fake-64k")
    fast = dataclasses.replace(cx.with_mla_efficiency("typical", "flash", 1.0), name="fake-fast")
    e8 = _efficiency_at("gemma-3-27b", 1, 8192)
    at8 = dataclasses.replace(cx.with_mla_efficiency("typical", "flash", e8), name="fake-8k")
    study = report.Study(cards=(1,))
    f = fd.findings(study, dense=["gemma-3-27b", "qwen3-32b"], runtimes=[at64, fast, at8])
    cross = next(r for r in f["rows"] if r["key"] == "crossover")
    by = {(r["runtime"], r["dense_model"]): r for r in cross["results"]}
    hit = by[("fake-64k", "gemma-3-27b")]
    assert hit["reproduced"] and hit["crossover_depth"] == pytest.approx(65536, rel=0.03)
    assert "catches up with GLM-4.7-Flash at ≈ 64K" in hit["sentence"]
    assert not by[("fake-fast", "gemma-3-27b")]["reproduced"] and by[("fake-fast", "gemma-3-27b")]["crossover_depth"] is None
    assert "never catches up" in by[("fake-fast", "gemma-3-27b")]["sentence"]
    early = by[("fake-8k", "gemma-3-27b")]
    assert not early["reproduced"] and early["crossover_depth"] == pytest.approx(8192, rel=0.05)
    assert "before 32K" in early["sentence"]
    # the headline names exactly the combination that reproduces it
    assert cross["headline"] == "reproduced by `fake-64k` on 1 card with gemma-3-27b"
    # the summary's "~64K crossover" says its window and where this pair crosses (a 115K crossover
    # was named "the ~64K crossover" with no depth)
    hw_sentence = f["summary"][1]
    assert "the ~64K crossover (a crossover between 32K and 128K) appears only with `fake-64k` and " \
           "gemma-3-27b (≈ 64K), each with a sliding-window dense model" in hw_sentence, hw_sentence
    # a pair that cannot reproduce it anywhere: reported as reproduced by none
    f2 = fd.findings(study, dense=["qwen3-32b"], runtimes=[fast])
    c2 = next(r for r in f2["rows"] if r["key"] == "crossover")
    assert c2["headline"] == "reproduced by none" and c2["n_reproduced"] == 0
    # the chart draws one line per dense model for each profile
    fig = plots.mla_crossover(f["crossover"])
    labels = {t.get_text() for t in fig.legends[0].get_texts()}
    assert {x for x in labels if not x.startswith("own value")} == {"gemma-3-27b", "qwen3-32b"}
    assert "own value, not fitted (physics value: a physics profile, or a start the fit kept)" in labels     # the markers' kinds are explained
    assert len(fig.axes) == 3            # three profiles x one card count


@pytest.mark.slow
def test_report_section_and_ties(tmp_path):
    res = report.run(report.Study(depths=(1024, 8192, 65536), concurrency=(1, 4)), tmp_path / "rep", progress=False)
    text = open(res["report"]).read()
    assert "## The study, point by point" in text and "## Crossover depth vs MLA attention efficiency" in text
    # the first paragraph: the setup the study most likely measured, and what it means
    first = text.split("\n\n")[1]
    assert "most likely measured" in first and "For a reader choosing hardware" in first
    assert text.count("Reproduced by") + text.count("reproduced by none") >= 6
    assert "mla_crossover.png" in text and (tmp_path / "rep" / "findings.json").exists()
    # a calibrated runtime: its records say so, and close results in the decision table are ties
    res = report.run(report.Study(depths=(1024, 8192), concurrency=(1, 4), runtime="ik-llama-mla-fixed"),
                     tmp_path / "cal", progress=False)
    text = open(res["report"]).read()
    from glmbench.results import records as rec
    recs = rec.read_records(tmp_path / "cal" / "records.json")
    assert {r["evidence"] for r in recs} == {"calibrated"}
    assert "tie with" in text


def test_the_studys_own_profile_joins_the_search(tmp_path):
    import os
    import shutil
    from glmbench import vocab
    p = tmp_path / "mine.json"
    shutil.copy(os.path.join(vocab.DATA_DIR, "calibrated", "llama-cpp-1x3090.json"), p)
    study = report.Study(runtime=f"calibrated:{p}", depths=(1024, 8192, 65536), cards=(1,))
    f = fd.findings(study, dense=["qwen3-32b"])
    names = [r["name"] for r in f["runtimes"]]
    assert names[:-1] == fd.runtime_names() and names[-1] == f"calibrated:{p}"
    gen = next(r for r in f["rows"] if r["key"] == "generation")
    assert {r["runtime"] for r in gen["results"]} == set(names)
    # a study without GLM-4.7-Flash has no findings
    assert fd.findings(report.Study(models=("qwen3-32b",))) is None


def test_profiles_that_refuse_the_studys_setup_are_left_out_not_fatal(tmp_path):
    """`glmbench report --weights fp8` (typical prices any format) and `glmbench report --hardware host`
    ended in an error about `ik_llama.cpp`, a runtime the user never named: the findings search tried every
    shipped profile, and the runtime models refuse vLLM's formats and CPU rigs. Those are left out of the
    search, the report says which and why, and the rest is searched as before."""
    study = report.Study(weights="fp8", depths=(1024, 8192, 65536), cards=(1,))
    f = fd.findings(study, dense=["qwen3-32b"])
    names = [r["name"] for r in f["runtimes"]]
    out = {r["name"]: r["why"] for r in f["left_out"]}
    assert {"llama.cpp", "ik_llama.cpp", "llama.cpp-vulkan"} <= set(out) and "typical" in names and "vllm" in names
    assert not set(out) & set(names) and set(out) | set(names) == set(fd.runtime_names())
    assert all("fp8" in why for why in out.values())
    gen = next(r for r in f["rows"] if r["key"] == "generation")
    assert {r["runtime"] for r in gen["results"]} == set(names)
    res = report.run(report.Study(weights="fp8", depths=(1024, 8192, 65536), cards=(1,), concurrency=(1,)),
                     tmp_path / "rep", progress=False)
    text = open(res["report"]).read()
    assert "left out" in text and "`ik_llama.cpp`" in text.split("## The study, point by point")[1].split("1. **")[0]
    # the default study: nothing left out
    assert fd.Search(report.Study(depths=(1024, 8192), cards=(1,))).left_out == []


def test_crossover_rows_say_whether_the_own_mla_value_was_fitted():
    """The chart's marker for a profile's own MLA efficiency: fitted (ik_llama.cpp's MLA decode,
    fitted to its public sources) or a physics value (typical; mainline llama.cpp-vulkan, whose
    only MLA source is ik_llama.cpp's port: the fit keeps it under fork=ik_llama.cpp)."""
    from glmbench.predict import crossover as xo
    from glmbench.predict import hardware as hw
    rows = xo.mla_crossover_curves([hw.Rig("rtx-3090", 1)], ["ik_llama.cpp", "llama.cpp-vulkan", "typical"],
                                   dense_models=["qwen3-32b"], efficiencies=(0.1,), depths=(1024, 65536),
                                   strategies=["flash"])
    own = {r["runtime"]: r["own_fitted"] for r in rows if r["own"]}
    assert own == {"ik_llama.cpp": True, "llama.cpp-vulkan": False, "typical": False}


def test_the_summary_calls_only_the_studys_link_the_studys():
    own = fd.findings(report.Study(depths=(1024, 8192, 65536)), dense=["qwen3-32b"])
    assert "over the study's 1.4 GB/s link" in own["summary"][1]
    other = fd.findings(report.Study(depths=(1024, 8192, 65536), link_gbps=25.0), dense=["qwen3-32b"])
    assert "over a 25 GB/s link" in other["summary"][1] and "study's 25" not in other["summary"][1]


def test_the_summary_says_whose_context_it_quotes():
    # "one 24 GiB RTX 4090 holds 16K tokens of its context" named neither the runtime (SGLang's static pool
    # holds far less than the memory table's 152K beside it) nor the formats the figure is for
    f = fd.findings(report.Study(depths=(1024, 8192, 65536)), dense=["qwen3-32b"], runtimes=["typical"])
    assert "; with `typical` at q4_K weights and a f16 cache, one 24 GiB RTX 3090 holds " in f["summary"][1]

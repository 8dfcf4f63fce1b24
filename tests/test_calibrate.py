"""Calibration (glmbench/predict/calibrate.py, `glmbench calibrate`): a known profile is recovered,
the shipped measurements and profiles hold together, bad input gets one clear error."""
import dataclasses
import json
import os

import pytest

from glmbench import cli
from glmbench.predict import calibrate as cal
from glmbench.predict import costmodel as cm
from glmbench.predict import sweep as sw
from glmbench.results import records as rec

MEASURED = os.path.join(os.path.dirname(cm.__file__), "..", "data", "measured")
SHIPPED = ("ik-llama-before-mla-fix", "ik-llama-mla-fixed", "llama-cpp-1x3090")


def _grid(path, models=("glm-4.7-flash", "qwen3-32b")):
    recs = []
    for m in models:
        for t, d, n in [("tg", 0, 0), ("tg", 8192, 0), ("tg", 32768, 0), ("pp", 0, 512), ("pp", 8192, 512), ("pp", 0, 2048)]:
            recs.append(dict(evidence="measured", model=m, hardware="rtx-3090", n_cards=1, weights="q4_K", test=t,
                             n_depth=d, n_prompt=n, n_gen=1 if t == "tg" else 0, avg_ts=1.0))
    rec.write_records(path, recs)
    return recs


def test_recovers_a_known_profile(tmp_path):
    path = str(tmp_path / "synthetic.json")
    recs = _grid(path)
    start, _ = cal.base_profile(cal.load_points([path]))
    true = {"layer_overhead_us": 60.0, "mla_attention_efficiency.flash": 0.3, "compute_efficiency.matmul": 0.3,
            "compute_efficiency.attention": 0.4, "memory_efficiency.matmul": 0.6, "memory_efficiency.attention": 0.35}
    known = cal._set(start, true)
    for r, p in zip(recs, cal.load_points([path])):
        r["avg_ts"] = cal.predict_point(p, known)
    rec.write_records(path, recs)
    fit = cal.calibrate(cal.load_points([path]), loo=False)
    assert set(true) <= set(fit.fitted), fit.table()
    for k, v in true.items():
        assert cal._get(fit.profile, k) == pytest.approx(v, rel=0.02), k
    assert fit.mape < 0.01
    # what was not fitted kept the starting (typical) value
    for k in fit.kept:
        assert cal._get(fit.profile, k) == pytest.approx(cal._get(start, k), rel=1e-12), k


def test_two_depths_of_one_test_fit_two_numbers(tmp_path):
    fit = cal.calibrate(cal.load_points([os.path.join(MEASURED, "llama-cpp-1x3090.json")]))
    assert len(fit.fitted) == 2 and fit.kept
    assert fit.loo_mape is not None and len(fit.loo_errors) == 2
    prof = fit.profile
    assert not prof.launch_overhead and prof.calibration["points"][0]["where"].endswith(":2")
    assert prof.calibration["measurement_sources"] and "docs/SOURCES.md §6" in prof.calibration["measurement_sources"][0]
    for k in fit.fitted:
        assert "fitted" in prof.sources[k]
    for k in fit.kept:
        assert prof.sources[k].startswith("kept")


def test_profiles_stay_physical_and_load():
    for name in SHIPPED:
        rt = cm.load_runtime(name)
        assert cm.load_runtime(f"calibrated:{name}") is rt and rt.calibrated and rt.cv_error is not None
        for k in ("compute_efficiency", "memory_efficiency"):
            assert all(0 < v <= 1 for v in getattr(rt, k).values())
        assert all(0 < v <= 1 for v in rt.mla_attention_efficiency.values())
        assert rt.step_overhead_us >= 0 and rt.layer_overhead_us >= 0 and 0 < rt.link_efficiency <= 1


def test_ideal_is_never_slower_than_a_shipped_measurement():
    files = sorted(f for f in os.listdir(MEASURED) if f.endswith(".json"))
    assert len(files) == 3
    n = 0
    for f in files:
        for p in cal.load_points([os.path.join(MEASURED, f)]):
            assert cal.predict_point(p, cm.load_runtime("ideal")) > p.measured, p.where
            n += 1
    assert n == 10


def test_the_shipped_profiles_are_the_fit_of_the_shipped_measurements():
    # regenerating the profile reproduces the shipped one (no hand edits)
    name = "llama-cpp-1x3090"
    fit = cal.calibrate(cal.load_points([os.path.join(MEASURED, name + ".json")]), name=name)
    shipped = cm.load_runtime(name)
    # the same parameters fitted (a fit that fitted fewer, or none, checked nothing below)
    assert fit.fitted and sorted(fit.fitted) == sorted(shipped.calibration["fitted"])
    for k, v in shipped.calibration["fitted"].items():
        assert cal._get(fit.profile, k) == pytest.approx(v, rel=1e-6)


def test_calibrated_sweep_records_say_so():
    rt = cm.load_runtime("ik-llama-mla-fixed")
    s = cm.Setup("glm-4.7-flash", "rtx-3090", weights="iq4_xs", runtime=rt)
    recs = sw.predict(None, [s], depths=[0, 4096], tests=("tg", "pp", "mem"))
    for r in recs:
        assert r["evidence"] == "calibrated" and r["cv_error"] == rt.cv_error
    tg = [r for r in recs if r["test"] == "tg"]
    assert all(r["avg_ts_lo"] < r["avg_ts"] < r["avg_ts_hi"] for r in tg)
    typical = sw.predict(None, [s.replace(runtime="typical")], depths=[0], tests=("tg",))
    assert typical[0]["evidence"] == "predicted" and "cv_error" not in typical[0] and "avg_ts_lo" not in typical[0]


@pytest.mark.parametrize("content,match", [
    ("", r":1: the file is empty"),
    ("[]", r":1: no records in the file"),
    ('[{"evidence": "measured", "test": "tg", "model": "glm-4.7-flash", "hardware": "rtx-3090", "n_depth": 0}]',
     r":1: record has no speed"),
    ('[\n {"evidence": "measured", "test": "tg", "model": "glm-4.7-flash", "hardware": "rtx-3090", "n_depth": 0, "avg_ts": 10},\n'
     ' {"evidence": "measured", "test": "tg", "model": "glm-4.7-flash", "hardware": "rtx-3090", "avg_ts": 10}\n]',
     r":3: record has no depth"),
    ('[{"evidence": "measured", "test": "tg", "model": "glm-4.7-flash", "hardware": "rtx-3090", "n_depth": 0, "avg_ts": 0}]',
     r"`avg_ts` must be a speed > 0"),
    ('[{"evidence": "measured", "test": "tg", "model": "glm-4.7-flash", "hardware": "rtx-3090", "n_depth": 0, "avg_ts": -5}]',
     r"in.json: record 1: record field `avg_ts` must be a finite number >= 0, got -5"),   # (refused as it is read)
    ('{"results": []}', r":1: a JSON object of no known format"),
])
def test_bad_input_one_error_naming_file_and_line(tmp_path, capsys, content, match):
    f = tmp_path / "in.json"
    f.write_text(content)
    out = tmp_path / "p.json"
    with pytest.raises(cal.CalibrationError, match=match):
        cal.load_points([str(f)])
    assert cli.main(["calibrate", str(f), "--out", str(out)]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and str(f) in err[0]
    assert not out.exists()


def test_unknown_format_and_csv_lines(tmp_path, capsys):
    f = tmp_path / "bench.txt"
    f.write_text("| model | size |\n")
    assert cli.main(["calibrate", str(f), "--out", str(tmp_path / "p.json")]) == 2
    assert "bench.txt:1: not a results format glmbench reads" in capsys.readouterr().err
    c = tmp_path / "m.csv"
    c.write_text("evidence,test,model,hardware,n_depth,avg_ts\nmeasured,tg,glm-4.7-flash,rtx-3090,0,100\n"
                 "measured,tg,glm-4.7-flash,rtx-3090,,100\n")
    with pytest.raises(cal.CalibrationError, match=r"m\.csv:3: record has no depth"):
        cal.load_points([str(c)])


def test_a_byte_order_mark_before_the_header_is_not_a_field(tmp_path):
    """A glmbench CSV saved by a spreadsheet (BOM first) was taken for llama-bench CSV and refused
    ('does not say which model ran'); read_records gave `evidence` None."""
    c = tmp_path / "m.csv"
    text = ("evidence,test,model,hardware,n_depth,n_prompt,n_gen,avg_ts\n"
            "measured,tg,glm-4.7-flash,rtx-3090,0,0,1,100\nmeasured,pp,glm-4.7-flash,rtx-3090,0,512,0,900\n")
    c.write_text(text, encoding="utf-8-sig")
    assert c.read_bytes().startswith(b"\xef\xbb\xbf")
    assert [r["evidence"] for r in rec.read_records(str(c))] == ["measured", "measured"]
    (tg, pp) = cal.load_points([str(c)])
    assert (tg.test, pp.test, tg.setup.model.name) == ("tg", "pp", "glm-4.7-flash")
    assert [w for w, _ in cal.read_measured(str(c))] == [f"{c}:2", f"{c}:3"]


def test_records_of_glmbench_cuda_name_their_card(tmp_path):
    """A record as glmbench's CUDA measurement writes it (device "GPU: <CUDA name>", no `hardware`;
    bench/results/2026-12-04_NVIDIA-H200/models.csv) is fitted on that card without --hardware."""
    c = tmp_path / "models.csv"
    c.write_text("evidence,test,model,device,n_cards,weights,type_k,mla_strategy,runtime,n_prompt,n_gen,n_depth,avg_ts\n"
                 "measured,tg,glm-4.7-flash,GPU: NVIDIA H200,1,bf16,bf16,flash,glmbench-cuda,0,1,1024,95.3\n")
    (p,) = cal.load_points([str(c)])
    assert p.setup.rig.gpu.key == "h200-sxm" and p.setup.weights == "bf16" and p.setup.kv == "bf16"


@pytest.mark.slow
def test_script_contract(tmp_path, capsys):
    src = os.path.join(MEASURED, "ik-llama-mla-fixed.json")
    p = str(tmp_path / "p.json")
    assert cli.main(["calibrate", src, "--model", "glm-4.7-flash", "--hardware", "rtx-3090", "--cards", "2",
                     "--link", "1.4", "--weights", "iq4_xs", "--out", p]) == 0
    printed = capsys.readouterr().out
    assert "MAPE" in printed and "leave-one-out" in printed and printed.count(src) == 4
    d = json.load(open(p))
    assert d["calibration"]["files"] == [src] and d["launch_overhead"] is False
    assert cli.main(["sweep", "--model", "glm-4.7-flash", "--cards", "2", "--weights", "iq4_xs", "--depths", "0,4K",
                     "--runtime", f"calibrated:{p}", "--tests", "tg,pp", "--json", "-q"]) == 0
    recs = json.loads(capsys.readouterr().out)
    assert {r["test"] for r in recs} == {"tg", "pp"}
    for r in recs:
        assert {"test", "n_depth", "n_prompt", "avg_ts", "evidence"} <= set(r) and r["evidence"] == "calibrated"
        assert r["runtime"] == f"calibrated:{p}" and r["cv_error"] == pytest.approx(d["calibration"]["loo_mape"])


def test_multi_stream_records_are_left_out_of_a_fit_and_priced_as_streams(tmp_path):
    """llama-batched-bench rows (B > 1 streams at once, their aggregate speed) are not single-stream
    points: calibrate skips them with one notice; kept on request, a point is priced as B streams."""
    base = dict(evidence="measured", model="qwen3-30b-a3b", hardware="rtx-4090", weights="q8_0", type_k="f16")
    recs = [dict(base, test="tg", n_gen=32, n_depth=512, n_streams=b, avg_ts=80.0 * b ** 0.7) for b in (1, 4)]
    recs += [dict(base, test="pp", n_prompt=512, n_depth=0, n_streams=b, avg_ts=3000.0) for b in (1, 4)]
    p = tmp_path / "batched.json"
    rec.write_records(str(p), recs)
    notes: list = []
    pts = cal.load_points([str(p)], notes)
    assert [pt.streams for pt in pts] == [1, 1]
    assert any("several streams" in n and "2 records" in n for n in notes)
    kept = cal.load_points([str(p)], multi_stream=True)
    assert [pt.streams for pt in kept] == [1, 4, 1, 4] and "x4 streams" in kept[1].label
    prof = cm.load_runtime("typical")
    s = kept[1].setup.replace(runtime=prof)
    assert cal.predict_point(kept[1], prof) == pytest.approx(4 / cm._mean_decode(s, 512, 32, 4)[0], rel=1e-12)
    assert cal.predict_point(kept[3], prof) == pytest.approx(cm.prefill_batch(s, 512, 4, 0).tok_s, rel=1e-12)
    # four streams decode faster in aggregate than one, and the single-stream price is unchanged
    assert cal.predict_point(kept[1], prof) > cal.predict_point(kept[0], prof)
    assert cal.predict_point(kept[0], prof) == pytest.approx(1 / cm._mean_decode(s, 512, 32, 1)[0], rel=1e-12)


def test_a_llama_bench_gguf_on_a_gpu_is_read_as_its_file_type():
    """A llama.cpp tool's GPU record of a "Q4_0" GGUF is llama-quantize's Q4_0 file (output in Q6_K,
    calibrate.file_weights), unless its model_size matches the pure type; --weights overrides; a CPU
    run (glmbench's own files, every matrix in the type) and another tool's record keep the type."""
    from glmbench.predict import calibrate as cal
    base = {"evidence": "measured", "test": "tg", "avg_ts": 100.0, "n_depth": 0, "n_gen": 128, "model": "llama-2-7b",
            "hardware": "rtx-3090", "weights": "q4_0", "tool": "llama-bench"}
    assert cal.point_from_record("a:1", base).setup.weights == "mix:Q4_0"
    assert cal.point_from_record("a:1", dict(base, model_size=3822520893)).setup.weights == "mix:Q4_0"
    cfg = cal.configs.load("llama-2-7b")
    ctx = cfg.tensor_context()
    pure = sum(cal.vocab.tensor_nbytes("q4_0", n, sh, ctx) for n, sh in cfg.tensor_shapes().items())
    assert cal.point_from_record("a:1", dict(base, model_size=pure)).setup.weights == "q4_0"
    assert cal.point_from_record("a:1", base, weights="q4_0").setup.weights == "q4_0"
    assert cal.point_from_record("a:1", dict(base, tool="glmbench")).setup.weights == "q4_0"
    host = os.path.join(os.path.dirname(__file__), "..", "bench", "results", "llama-bench_q4_0_L47_2026-12-01",
                        "host_profile.json")
    cpu = dict(base, hardware=None, device="CPU: some cpu")
    assert cal.point_from_record("a:1", cpu, hardware_=host).setup.weights == "q4_0"


def test_cpu_records_against_a_gpu_profile_are_refused(tmp_path, capsys):
    """Records measured on a CPU (`glmbench measure`, llama-bench's CPU backend) with `--hardware` a GPU:
    a fit would push the CPU's speed into the efficiencies (a matmul at a fraction of a percent of the
    card's bandwidth), so it is one error that says to use this machine's profile; a host profile fits."""
    base = {"evidence": "measured", "test": "tg", "avg_ts": 5.0, "n_depth": 0, "n_gen": 16, "model": "qwen3-0.6b",
            "weights": "bf16"}
    for cpu in (dict(base, device="CPU: AMD EPYC (2 threads)"), dict(base, backends="CPU", device="some cpu")):
        with pytest.raises(cal.CalibrationError, match=r"a:1: measured on a CPU .* but --hardware 'rtx-3090' is a GPU; "
                                                       r"pass --hardware host"):
            cal.point_from_record("a:1", cpu, hardware_="rtx-3090")
    host = os.path.join(os.path.dirname(__file__), "..", "bench", "results", "llama-bench_q4_0_L47_2026-12-01",
                        "host_profile.json")
    assert cal.point_from_record("a:1", dict(base, device="CPU: x"), hardware_=host).setup.rig.gpu.kind == "cpu"
    # a GPU record keeps working with --hardware naming a GPU
    assert cal.point_from_record("a:1", dict(base, hardware="rtx-3090"), hardware_="rtx-4090").measured == 5.0
    f = tmp_path / "m.json"
    rec.write_records(str(f), [dict(base, device="CPU: AMD EPYC (2 threads)", n_depth=d) for d in (0, 4096)])
    assert cli.main(["calibrate", str(f), "--hardware", "rtx-3090", "--out", str(tmp_path / "p.json")]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and f"{f}:" in err[0] and "is a GPU" in err[0]
    assert not (tmp_path / "p.json").exists()


def test_a_serving_benchmark_s_closed_loop_is_a_calibration_point(tmp_path):
    """vLLM's bench serve with --max-concurrency B: a decode point of B streams at the mean prompt, B / mean TPOT,
    priced as the closed loop's steps (costmodel.closed_loop_tpot, as the public fit prices its serving point);
    an open loop (no maximum concurrency) is skipped with one notice."""
    block = ("$ vllm bench serve --model Qwen/Qwen3-30B-A3B --max-concurrency {c} --num-prompts 100\n"
             "============ Serving Benchmark Result ============\n"
             "Successful requests:                     100\n{conc}"
             "Total input tokens:                      204800\nTotal generated tokens:                  102400\n"
             "Output token throughput (tok/s):         700.00\nMean TTFT (ms):                          250.00\n"
             "Mean TPOT (ms):                          13.00\n==================================================\n")
    p = tmp_path / "serve.log"
    p.write_text(block.format(c=10, conc="Maximum request concurrency:             10\n"))
    pts = cal.load_points([str(p)], hardware_="h100-sxm", weights="bf16")
    (pt,) = pts
    assert (pt.test, pt.streams, pt.n_depth, pt.n_gen, round(pt.measured, 6)) == ("tg", 10, 2048, 1024, round(10 / 0.013, 6))
    prof = cm.load_runtime("typical")
    s = pt.setup.replace(runtime=prof)
    assert cal.predict_point(pt, prof) == pytest.approx(10 / cm.closed_loop_tpot(s, 2048, 1024, 10), rel=1e-12)
    q = tmp_path / "open.log"
    q.write_text(block.format(c=10, conc="").replace(" --max-concurrency 10", " --request-rate 4"))
    notes: list = []
    with pytest.raises(cal.CalibrationError, match="no tg or pp speed records"):
        cal.load_points([str(q)], notes, hardware_="h100-sxm", weights="bf16")
    assert any("skipped 1 serving result" in n and "not a closed loop" in n for n in notes)
    # paced: a request rate beside the maximum concurrency; the arrivals, not B, set the streams
    paced = tmp_path / "paced.log"
    paced.write_text(block.format(c=10, conc="Maximum request concurrency:             10\n")
                     .replace(" --max-concurrency 10", " --max-concurrency 10 --request-rate 4"))
    notes = []
    with pytest.raises(cal.CalibrationError, match="no tg or pp speed records"):
        cal.load_points([str(paced)], notes, hardware_="h100-sxm", weights="bf16")
    assert any("skipped 1 serving result" in n and "not a closed loop" in n for n in notes)
    # the concurrency from vLLM's line before its block, or from the command line alone
    for conc_text in ("pre", "cmd"):
        r = tmp_path / f"{conc_text}.log"
        text = block.format(c=10, conc="")
        if conc_text == "pre":
            text = text.replace(" --max-concurrency 10", "").replace(
                "============ Serving", "Traffic request rate: inf\nMaximum request concurrency: 10\n============ Serving", 1)
        r.write_text(text)
        (pt,) = cal.load_points([str(r)], hardware_="h100-sxm", weights="bf16")
        assert (pt.test, pt.streams) == ("tg", 10)


def test_a_parameter_fitted_to_an_end_of_its_range_is_said_to_be_a_bound():
    # the fit's bounds (calibrate._fit): efficiencies in [MIN_EFF, 1], overheads in [0, MAX_OVERHEAD_US];
    # a value there is where the points pushed it, not one they measure, and the table says so
    assert "lower bound 0" in cal._at_bound("layer_overhead_us", 5.6e-12)
    assert "upper bound" in cal._at_bound("step_overhead_us", cal.MAX_OVERHEAD_US)
    assert "lower bound" in cal._at_bound("compute_efficiency.matmul", cal.MIN_EFF)
    assert "upper bound 1" in cal._at_bound("memory_efficiency.matmul", 1.0)
    assert cal._at_bound("compute_efficiency.matmul", 0.0451) == ""
    assert cal._at_bound("layer_overhead_us", 12.5) == ""


def test_a_fit_trial_reuses_op_lists_only_where_they_are_the_same():
    """A calibration's trial profiles share the op lists of the profile they came from (costmodel.same_ops_as:
    they differ only in numbers no op list reads), yet price every step exactly as an unshared profile of the
    same numbers does, the flash MLA prefill form included where a trial's prices flip it."""
    import dataclasses
    from glmbench.predict import hardware as hw
    one, two = hw.Rig(hw.get_gpu("rtx-3090"), 1), hw.Rig(hw.get_gpu("rtx-3090"), 2)
    base = cm.load_runtime("typical")
    trials = [{"compute_efficiency.matmul": 0.02}, {"mla_attention_efficiency.flash": 0.02},
              {"compute_efficiency.attention": 0.05, "memory_efficiency.attention": 1.0},
              {"layer_overhead_us": 300.0, "step_overhead_us": 80.0, "link_efficiency": 0.5},
              {"kv_attention_efficiency.q8_0": 0.3, "compute_efficiency.vector": 0.1}]
    forms = set()
    for model, rig, split, kv in (("glm-4.7-flash", one, "none", "f16"), ("glm-4.7-flash", two, "layer", "q8_0"),
                                  ("qwen3-32b", two, "tensor", "f16"), ("gemma-3-12b", one, "none", "q8_0"),
                                  ("qwen3-next-80b-a3b", one, "none", "f16")):
        s0 = cm.Setup(model, rig, split=split, kv=kv, runtime=base)
        prev = base
        for t in trials:
            trial = cal._set(prev, t)
            assert id(trial) in cm._SAME_OPS
            fresh = dataclasses.replace(trial)                     # the same numbers, not registered
            a, b = dataclasses.replace(s0, runtime=trial), dataclasses.replace(s0, runtime=fresh)
            for depth in (0, 8192):
                for x, y in ((cm.prefill(a, 2048, depth), cm.prefill(b, 2048, depth)),
                             (cm.decode(a, depth, 4), cm.decode(b, depth, 4))):
                    assert x.seconds == y.seconds and x.breakdown() == y.breakdown()
            if s0.model.attention == "mla" and split == "none":
                forms.add(cm._mla_expands(a, 512, cm._prefill_work(s0.model, 8192, 512).full, 1.0))
            prev = trial
    assert forms == {True, False}                 # the trials did flip the MLA prefill form
    # a changed field an op list reads is never registered
    ub = dataclasses.replace(base, n_ubatch=2048)
    cm.same_ops_as(ub, base, {"n_ubatch"})
    assert id(ub) not in cm._SAME_OPS


def test_the_table_says_what_the_points_ran_on(tmp_path):
    # the rows name model and test only ("glm-4.7-flash pp512 @ d0"): the card, split and formats of the
    # measurements were nowhere in the printout
    path = str(tmp_path / "m.json")
    recs = _grid(path)
    for r in recs:
        r.update(n_cards=2, split="layer", link_gbps=1.4, avg_ts=100.0 if r["test"] == "tg" else 1000.0)
    rec.write_records(path, recs)
    fit = cal.calibrate(cal.load_points([path]), loo=False)
    lines = fit.table().splitlines()
    assert lines[0] == "measured on: glm-4.7-flash, 2 x RTX 3090 @ 1.4 GB/s, layer split, q4_K/f16, MLA flash"
    assert lines[1].strip() == "qwen3-32b, 2 x RTX 3090 @ 1.4 GB/s, layer split, q4_K/f16"
    assert lines[2].startswith("point ")


def test_a_test_the_file_has_no_point_of_takes_the_unvalidated_band(tmp_path):
    """A profile calibrated on decode points only gave its prefill predictions the decode leave-one-out
    error as their band (the shipped llama-cpp-1x3090: ±13% on every pp record, though no prefill was
    ever measured against and prefill rests on typical's values); now that test takes the widest band
    of the runtime models on it (as a runtime model with no public point of a test does), and
    calibrate says so."""
    from glmbench.predict import runtime as rtm
    fit = cal.calibrate(cal.load_points([os.path.join(MEASURED, "llama-cpp-1x3090.json")]))
    assert {p.test for p in fit.points} == {"tg"}
    prof = fit.profile
    wide = rtm.unvalidated_band("prefill")
    assert wide is not None and wide > fit.loo_mape
    assert prof.cv_band("tg") == pytest.approx(fit.loo_mape) and prof.cv_band("serve") == pytest.approx(fit.loo_mape)
    assert prof.cv_band("pp") == pytest.approx(wide)
    assert f"no pp point: this profile's prefill predictions were never measured against" in fit.table()
    assert f"(±{100 * wide:.0f}%)" in fit.table()
    recs = sw.predict(["glm-4.7-flash"], [dict(rig="rtx-3090", runtime=prof)], [4096], ("tg", "pp"))
    band = {r["test"]: r["cv_error"] for r in recs}
    assert band["tg"] == pytest.approx(fit.loo_mape) and band["pp"] == pytest.approx(wide)
    pp = next(r for r in recs if r["test"] == "pp")
    assert pp["avg_ts_lo"] == pytest.approx(pp["avg_ts"] * (1 - wide))
    # the shipped profile fitted to the same file, by name
    shipped = cm.load_runtime("llama-cpp-1x3090")
    assert shipped.cv_band("pp") == pytest.approx(wide) and shipped.cv_band("tg") == pytest.approx(shipped.cv_error)
    # a file of both tests keeps its one leave-one-out error for both
    both = cm.load_runtime("ik-llama-mla-fixed")
    assert both.cv_band("pp") == both.cv_band("tg") == both.cv_error


def test_a_parameter_stopped_just_inside_its_bound_is_said_to_be_at_it():
    """least_squares' trust region never lands on a bound: a parameter the points push past 1 stopped at
    0.99988 (sweep-bench.md's compute_efficiency.attention) and was printed as a fitted "0.9999" with no
    notice that it is a limit, not a measured value."""
    assert "upper bound 1" in cal._at_bound("compute_efficiency.attention", 0.9998760229247871)
    assert "upper bound 1" in cal._at_bound("memory_efficiency.matmul", 0.9999988570376208)
    assert "lower bound" in cal._at_bound("compute_efficiency.matmul", cal.MIN_EFF * 1.0004)
    assert "lower bound 0" in cal._at_bound("layer_overhead_us", 2e-4)
    assert cal._at_bound("memory_efficiency.matmul", 0.95) == "" and cal._at_bound("layer_overhead_us", 0.5) == ""
    path = os.path.join(os.path.dirname(__file__), "data", "formats", "sweep-bench.md")
    fit = cal.calibrate(cal.load_points([path], model="glm-4.7-flash", hardware_="rtx-3090"), loo=False)
    line = next(l for l in fit.table().splitlines() if l.startswith("fitted: "))
    v = cal._get(fit.profile, "compute_efficiency.attention")
    assert 1 - 1e-3 < v < 1 and "compute_efficiency.attention = 0.9999 (at its upper bound 1" in line, line


def test_calibrate_shows_a_bar_over_every_fit_and_quiet_hides_it(tmp_path, capsys):
    """The leave-one-out error refits once per point, each fit over all of them: a calibrate over
    many files runs for minutes, so it shows a bar with its ETA, one tick per fit (the fit and the
    n leave-one-out fits), and -q hides it, as every long command's."""
    src = os.path.join(MEASURED, "llama-cpp-1x3090.json")
    n = len(cal.load_points([src]))
    assert n >= 2
    out = tmp_path / "p.json"
    assert cli.main(["calibrate", src, "--out", str(out)]) == 0
    err = capsys.readouterr().err
    assert "calibrate" in err and f"{n + 1}/{n + 1}" in err, err
    assert cli.main(["calibrate", src, "--out", str(tmp_path / "q.json"), "-q"]) == 0
    err = capsys.readouterr().err
    assert f"/{n + 1}" not in err and "fit/s" not in err and "s/fit" not in err, err
    # the profile written is the same with or without the bar
    a, b = json.loads(out.read_text()), json.loads((tmp_path / "q.json").read_text())
    a.pop("name", None), b.pop("name", None)
    assert a["calibration"]["points"] == b["calibration"]["points"]


@pytest.mark.parametrize("edit, match", [
    ({"loo_mape": "2%"}, r"calibration\.loo_mape` must be a fraction >= 0"),
    ({"loo_mape": -0.5}, r"calibration\.loo_mape` must be a fraction >= 0"),
    ({"mape": float("nan")}, r"calibration\.mape` must be a fraction"),
    ({"cv_folds": "ten"}, r"calibration\.cv_folds` must be a whole number >= 2"),
    ({"points": "x"}, r"calibration\.points` must be a list"),
])
def test_a_hand_edited_calibration_block_is_one_error(tmp_path, capsys, edit, match):
    """A calibrated profile whose `calibration` errors were edited to a wrong type: a string loo_mape
    silently dropped every record's band, a negative one printed `±-50%` with avg_ts_lo above
    avg_ts_hi. Now one error naming the file and the field, no traceback; the shipped profiles and
    a null loo_mape (a fit of one point writes it) still load."""
    d = cm.load_runtime("llama-cpp-1x3090").to_dict()
    path = tmp_path / "p.json"
    path.write_text(json.dumps({**d, "calibration": {**d["calibration"], **edit}}))
    rc = cli.main(["sweep", "--runtime", f"calibrated:{path}", "--model", "llama-3-8b", "--hardware", "rtx-3090",
                   "--cards", "1", "--depths", "0", "--tests", "tg", "-q"])
    err = capsys.readouterr().err
    assert rc == 2 and "Traceback" not in err
    assert str(path) in err and len(err.strip().splitlines()) == 1
    import re
    assert re.search(match, err), err
    ok = {**d, "calibration": {**d["calibration"], "loo_mape": None}}
    assert cm.runtime_from_dict(ok).cv_error is None
    for n in SHIPPED:
        assert cm.runtime_from_dict(cm.load_runtime(n).to_dict()).calibration == cm.load_runtime(n).calibration


def test_the_kept_line_names_the_base_profile(tmp_path):
    """`glmbench calibrate --base llama.cpp` said "kept (typical value): ..." for parameters that kept
    llama.cpp's values (its compute_efficiency.vector, say, not typical's). The line names the profile
    the fit started from and says the points did not identify them; the values are the base's."""
    path = str(tmp_path / "m.json")
    rec.write_records(path, [dict(evidence="measured", model="llama-3-8b", hardware="rtx-3090", n_cards=1,
                                  weights="q4_0", test="tg", n_depth=d, n_gen=1, avg_ts=v)
                             for d, v in ((0, 140.0), (8192, 110.0))])
    pts = cal.load_points([path])
    fit = cal.calibrate(pts, base="llama.cpp", loo=False)
    line = next(x for x in fit.table().splitlines() if x.startswith("kept"))
    assert line.startswith("kept at `llama.cpp`'s value (not identified by these points): ")
    assert "typical" not in line and fit.kept
    base = cm.load_runtime("llama.cpp")
    for n in fit.kept:
        if n.startswith(("compute_efficiency.", "memory_efficiency.")):
            assert cal._get(fit.profile, n) == cal._get(base, n)
    assert fit.profile.calibration["base"] == "llama.cpp"


def test_hardware_that_overrides_another_stated_card_is_warned_about(tmp_path, capsys):
    """A pasted file of two runs (RTX 3090 and RTX 4090) calibrated with --hardware rtx-3090 priced the
    4090's points as a 3090's without a word. Now one warning names the card the records state and their
    lines; records of the named card (in any spelling) draw none."""
    def table(dev, speeds):
        rows = [f"| llama 8B Q4_0 | 4.33 GiB | 8.03 B | CUDA | 99 | tg{n} | {v:.2f} ± 0.1 |" for n, v in speeds]
        return [f"  Device 0: NVIDIA GeForce {dev}, compute capability 8.6, VMM: yes",
                "| model | size | params | backend | ngl | test | t/s |",
                "| --- | ---: | ---: | --- | --: | --- | ---: |", *rows, ""]
    path = tmp_path / "llama-3-8b-two-cards.md"
    path.write_text("\n".join(table("RTX 3090", [(128, 130.0), (512, 125.0)])
                              + table("RTX 4090", [(128, 150.0), (512, 145.0)])))
    out = str(tmp_path / "p.json")
    assert cli.main(["calibrate", str(path), "--hardware", "rtx-3090", "--out", out, "-q", "--cv", "2"]) == 0
    err = capsys.readouterr().err
    warn = [x for x in err.splitlines() if "--hardware rtx-3090 prices" in x]
    assert len(warn) == 1, err
    assert "2 records that state another card as RTX 3090: RTX 4090 (lines 10, 11)" in warn[0], warn[0]
    assert cli.main(["calibrate", str(path), "--out", out, "-q", "--force", "--cv", "2"]) == 0
    assert "prices" not in capsys.readouterr().err
    one = tmp_path / "llama-3-8b-3090.md"
    one.write_text("\n".join(table("RTX 3090", [(128, 130.0), (512, 125.0)])))
    assert cli.main(["calibrate", str(one), "--hardware", "NVIDIA GeForce RTX 3090", "--out", out, "-q",
                     "--force", "--cv", "2"]) == 0
    assert "prices" not in capsys.readouterr().err


def test_a_profile_used_on_a_model_or_card_it_never_ran_says_so(capsys):
    """`glmbench sweep --runtime calibrated:p.json --model qwen3-32b` with a profile fitted on another
    model (or card) printed its records with the fit's ±band as if measured there, without a word. Now
    one note names what the fit ran and what it did not; a study inside the fit, and a runtime model
    fitted to the public set, draw none."""
    pts = cm.load_runtime("llama-cpp-1x3090").calibration["points"]
    assert {p["model"] for p in pts} == {"glm-4.7-flash"} and all("RTX 3090" in p["setup"] for p in pts)
    base = ["sweep", "--runtime", "llama-cpp-1x3090", "--cards", "1", "--depths", "0", "--tests", "tg", "-q"]
    assert cli.main(base + ["--model", "qwen3-32b", "--hardware", "rtx-3090"]) == 0
    notes = [x for x in capsys.readouterr().err.splitlines() if "was fitted on" in x]
    assert len(notes) == 1 and "none ran qwen3-32b:" in notes[0] and "glm-4.7-flash, RTX 3090" in notes[0], notes
    assert cli.main(base + ["--model", "glm-4.7-flash", "--hardware", "h100-sxm"]) == 0
    notes = [x for x in capsys.readouterr().err.splitlines() if "was fitted on" in x]
    assert len(notes) == 1 and "none ran H100 SXM:" in notes[0], notes
    assert cli.main(base + ["--model", "glm-4.7-flash", "--hardware", "rtx-3090"]) == 0
    assert "was fitted on" not in capsys.readouterr().err
    assert cli.main([*base[:2], "llama.cpp", *base[3:], "--model", "qwen3-32b", "--hardware", "rtx-3090"]) == 0
    assert "was fitted on" not in capsys.readouterr().err


def test_a_base_runtime_model_of_another_runtime_than_the_records_is_noted(tmp_path, capsys):
    """`glmbench calibrate ik.md --base llama.cpp` (ik.md: ik_llama.cpp's sweep-bench) said nothing, and its
    `base` column read as llama.cpp's error on llama.cpp's points. One note now names the file's runtime
    and the base; none where the base is the records' runtime, or where the records do not say (a plain
    llama-bench: ik_llama.cpp ships one too)."""
    ik = tmp_path / "ik.md"
    ik.write_text("ik_llama.cpp on an RTX 4080\n\n"
                  "|    PP |     TG |   N_KV |   T_PP s | S_PP t/s |   T_TG s | S_TG t/s |\n"
                  "|-------|--------|--------|----------|----------|----------|----------|\n"
                  "|   512 |    128 |      0 |    0.128 |  3994.38 |    0.995 |   128.62 |\n"
                  "|   512 |    128 |   4096 |    0.103 |  4965.28 |    1.113 |   114.97 |\n")
    base = ["calibrate", str(ik), "--model", "llama-3.1-8b", "--weights", "q4_k_m", "-q", "--force"]
    assert cli.main(base + ["--base", "llama.cpp", "--out", str(tmp_path / "a.json")]) == 0
    notes = [x for x in capsys.readouterr().err.splitlines() if x.startswith("note: --base")]
    assert len(notes) == 1, notes
    assert "ik.md's records say ik_llama.cpp (`tool: llama-sweep-bench (ik_llama.cpp)`)" in notes[0]
    assert "the `base` column is llama.cpp's prediction of ik_llama.cpp's points" in notes[0]
    assert cli.main(base + ["--base", "ik_llama.cpp", "--out", str(tmp_path / "b.json")]) == 0
    assert "note: --base" not in capsys.readouterr().err
    # a plain llama-bench record names no fork: nothing to say
    pts = cal.load_points([str(ik)], model="llama-3.1-8b", weights="q4_k_m")
    plain = [dataclasses.replace(p, record={**p.record, "tool": "llama-bench"}) for p in pts]
    assert cal.base_runtime_note(plain, "ik_llama.cpp") is None
    assert cal.base_runtime_note(pts, "typical") is None
    assert "ik_llama.cpp" in cal.base_runtime_note(pts, "llama.cpp[fa=1]")


def test_a_base_that_cannot_run_the_weights_is_named_by_calibrates_own_option(tmp_path, capsys):
    """`glmbench calibrate ik.md --base llama.cpp --weights iq4_ks` answered "use --runtime ik_llama.cpp", an
    option calibrate does not have (its is --base). The error now names the option of the command that
    raised it, and the file and line: calibrate's --base, truth-table's --measured-calibrated; sweep's
    stays --runtime."""
    path = str(tmp_path / "ik.json")
    rec.write_records(path, [dict(evidence="measured", model="llama-3.1-8b", hardware="rtx-4080", n_cards=1,
                                  weights="iq4_ks", tool="llama-sweep-bench (ik_llama.cpp)", test="tg", n_depth=d,
                                  n_gen=128, avg_ts=v) for d, v in ((0, 128.6), (4096, 115.0))])
    rc = cli.main(["calibrate", path, "--base", "llama.cpp", "--out", str(tmp_path / "x.json"), "-q"])
    err = capsys.readouterr().err
    assert rc == 2 and "Traceback" not in err and len([x for x in err.splitlines() if x.startswith("error")]) == 1, err
    assert f"{path}:2: --base llama.cpp" in err and "use --base ik_llama.cpp" in err and "--runtime" not in err
    assert not os.path.exists(tmp_path / "x.json")
    rc = cli.main(["truth-table", "-q", "--measured", path, "--measured-calibrated", "llama.cpp"])
    err = capsys.readouterr().err
    assert rc == 2 and "use --measured-calibrated ik_llama.cpp" in err and "--runtime" not in err, err
    rc = cli.main(["sweep", "--runtime", "llama.cpp", "--model", "llama-3.1-8b", "--weights", "iq4_ks", "--cards", "1",
                   "--depths", "0", "--tests", "tg", "-q"])
    assert rc == 2 and "use --runtime ik_llama.cpp" in capsys.readouterr().err
    # a base that runs them: fitted as before
    assert cli.main(["calibrate", path, "--base", "ik_llama.cpp", "--out", str(tmp_path / "x.json"), "-q"]) == 0


def test_the_table_names_each_points_card_where_the_points_span_two(tmp_path):
    """calibrate's table printed 'over 1 points', and on a file of two runs (an RTX 3090 and an RTX 4090) two
    rows read 'llama-3-8b pp512 @ d0': only the `where` column told them apart. The label names the card
    where the points span more than one (or more than one count of cards); one card: as before."""
    path = str(tmp_path / "two.json")
    recs = [dict(evidence="measured", model="llama-3-8b", hardware=hw, n_cards=n, weights="q4_0", test="pp",
                 n_depth=0, n_prompt=512, avg_ts=v, **({"link_gbps": 25.0} if n > 1 else {}))
            for hw, n, v in (("rtx-3090", 1, 4000.0), ("rtx-4090", 1, 7000.0), ("rtx-3090", 2, 6000.0))]
    rec.write_records(path, recs)
    table = cal.calibrate(cal.load_points([path]), loo=False).table()
    rows = [x for x in table.splitlines() if x.startswith("llama-3-8b ")]
    assert [r.split("  ")[0].strip() for r in rows] == ["llama-3-8b pp512 @ d0 on RTX 3090",
                                                        "llama-3-8b pp512 @ d0 on RTX 4090",
                                                        "llama-3-8b pp512 @ d0 on 2 x RTX 3090"]
    assert "over 3 points;" in table
    rec.write_records(path, recs[:1])
    table = cal.calibrate(cal.load_points([path]), loo=False).table()
    row = next(x for x in table.splitlines() if x.startswith("llama-3-8b "))
    assert " on " not in row and "over 1 point;" in table


def test_a_fit_trial_works_out_each_op_s_fixed_part_once(tmp_path, monkeypatch):
    """A fit's trial profiles price their shared op lists (same_ops_as) without working out again what does
    not depend on the efficiencies the trials change (costmodel._fixed: the kernel table's entries, the card's
    peaks and per-SM limits, launch time): once per op, card and kernel table. Every number stays the one an
    unshared profile of the same numbers gives, and a small fit works the fixed part out for a small share of
    the ops it prices (it was every op of every trial: a 64-point calibration took over 10 minutes)."""
    from glmbench.predict import hardware as hw
    calls = {"fixed": 0, "time": 0}
    fixed, time_ = cm._fixed, cm._time

    def count_fixed(*a):
        calls["fixed"] += 1
        return fixed(*a)

    def count_time(*a):
        calls["time"] += 1
        return time_(*a)
    monkeypatch.setattr(cm, "_fixed", count_fixed)
    monkeypatch.setattr(cm, "_time", count_time)
    base = cm.load_runtime("llama.cpp")
    assert base.kernels                                     # a runtime model: its kernel table is read per op
    s0 = cm.Setup("llama-3.1-8b", hw.Rig(hw.get_gpu("rtx-4080"), 1), weights="q4_K_M", runtime=base)
    prev = cal._set(base, {"compute_efficiency.matmul": 0.5})
    a = dataclasses.replace(s0, runtime=prev)
    cm.decode(a, 1024), cm.prefill(a, 512, 1024)
    first = calls["fixed"]
    assert first > 0
    for t in ({"compute_efficiency.matmul": 0.4}, {"memory_efficiency.attention": 0.3},
              {"layer_overhead_us": 30.0, "step_overhead_us": 5.0}, {"compute_efficiency.vector": 0.2}):
        trial = cal._set(prev, t)
        a = dataclasses.replace(s0, runtime=trial)
        b = dataclasses.replace(s0, runtime=dataclasses.replace(trial))      # the same numbers, not registered
        for x, y in ((cm.decode(a, 1024), cm.decode(b, 1024)), (cm.prefill(a, 512, 1024), cm.prefill(b, 512, 1024))):
            assert x.seconds == y.seconds and x.breakdown() == y.breakdown()
        n = calls["fixed"]
        cm.decode(a, 1024), cm.prefill(a, 512, 1024)
        assert calls["fixed"] == n                          # the shared op lists: nothing worked out again
        prev = trial
    # a small fit (4 points, its trials sharing op lists): the fixed part is worked out for a few ops of many
    path = str(tmp_path / "m.json")
    rec.write_records(path, [dict(evidence="measured", model="llama-3.1-8b", hardware="rtx-4080", n_cards=1,
                                  weights="q4_K_M", test=t, n_depth=d, n_prompt=n, n_gen=g, avg_ts=v)
                             for t, d, n, g, v in (("pp", 0, 512, 0, 5200.0), ("tg", 0, 0, 128, 125.0),
                                                   ("pp", 4096, 512, 0, 4700.0), ("tg", 4096, 0, 128, 110.0))])
    calls.update(fixed=0, time=0)
    cal.fit_profile(cal.load_points([path]), "llama.cpp")
    assert calls["time"] > 10000 and calls["fixed"] * 10 < calls["time"], calls

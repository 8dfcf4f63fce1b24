"""The truth table (glmbench/report/truth.py, `glmbench truth-table`) and the host profile that CPU
measurements calibrate against (`glmbench hardware --save-host`, calibrate --hardware)."""
import json
import os

import numpy as np
import pytest

from glmbench import cli
from glmbench.predict import calibrate as cal
from glmbench.predict import costmodel as cm
from glmbench.predict import hardware
from glmbench.report import truth
from glmbench.results import records as rec

CEIL = {"bandwidth_gbs": 20.0, "fma_gflops": 300.0, "threads": 2, "cpu": "Test CPU"}
DEPTHS = (512, 1024, 4096, 16384)
FIT = (1024, 16384)


def test_host_profile_round_trips_as_a_cpu():
    g = hardware.cpu_profile(CEIL, launch_us=2.0, source="test")
    d = hardware.profile_to_dict(g)
    assert d["kind"] == "cpu" and "key" not in d
    back = hardware.profile_from_dict(json.loads(json.dumps(d)), where="x", key="x")
    assert back.kind == "cpu" and back.bandwidth_gbs == 20.0 and back.tflops == g.tflops and back.launch_us == 2.0
    with pytest.raises(ValueError, match="`kind` must be 'gpu' or 'cpu'"):
        hardware.profile_from_dict({**d, "kind": "tpu"})


def _host_dir(tmp_path):
    """A bench_host_calibration.py directory whose 'measurements' a known profile made (each point
    perturbed by a fixed few percent, so the fit is not exact)."""
    d = tmp_path / "host"
    d.mkdir()
    prof_path = str(d / "host_profile.json")
    with open(prof_path, "w") as f:
        json.dump(hardware.profile_to_dict(hardware.cpu_profile(CEIL, launch_us=2.0, source="test")), f)
    recs = []
    for t in ("pp", "tg"):
        for dep in DEPTHS:
            recs.append(dict(evidence="measured", model="glm-4.7-flash", device="CPU: Test CPU (2 threads)",
                             weights="bf16", type_k="f16", type_v="f16", test=t, n_depth=dep,
                             n_prompt=512 if t == "pp" else 0, n_gen=16 if t == "tg" else 0, avg_ts=1.0))
    rec.write_records(str(d / "measured.json"), recs)
    pts = cal.load_points([str(d / "measured.json")], hardware_=prof_path)
    start, _ = cal.base_profile(pts)
    known = cal._set(start, {"memory_efficiency.matmul": 0.5, "compute_efficiency.matmul": 0.4})
    wobble = [1.03, 0.98, 1.01, 0.97, 1.02, 0.99, 1.04, 0.96]
    for r, p, w in zip(recs, pts, wobble):
        r["avg_ts"] = cal.predict_point(p, known) * w
    rec.write_records(str(d / "measured.json"), recs)
    rec.write_records(str(d / "fit_points.json"), [r for r in recs if r["n_depth"] in FIT])
    fit = cal.calibrate(cal.load_points([str(d / "fit_points.json")], hardware_=prof_path), loo=False)
    cal.write_profile(str(d / "profile.json"), fit)
    return str(d), recs


def test_host_rows_mark_held_out_depths_and_errors_are_predicted_over_measured(tmp_path):
    d, recs = _host_dir(tmp_path)
    rows, sources = truth.build([d], progress=False, published=False)
    assert len(rows) == len(recs) and len(sources) == 1
    for r in rows:
        assert r.held_out == (r.point.n_depth not in FIT)
        assert r.calibrated is not None and r.ideal > 0 and r.typical > 0
        assert r.err(r.calibrated) == pytest.approx(r.calibrated / r.point.measured - 1)
    # ideal is an upper bound of what any runtime reaches
    assert all(r.ideal >= r.calibrated * 0.999 for r in rows)
    (s,) = truth.summary(rows)
    held = [abs(r.err(r.calibrated)) for r in rows if r.held_out]
    assert s["calibrated_out_of_sample"] == pytest.approx(np.mean(held)) and s["out_of_sample"] == "held-out depths"
    assert s["typical"] == pytest.approx(np.mean([abs(r.err(r.typical)) for r in rows]))
    # a profile of the same family as the truth, fitted on two depths, predicts the others closely
    assert s["calibrated_out_of_sample"] < 0.1
    text = truth.render(rows, sources, "glmbench truth-table --host X")
    assert "held out" in text and "fitted on" in text and "glmbench truth-table --host X" in text
    assert text.count("\n| glmbench on this CPU (measured) |") == len(rows) + 1  # the summary row and every point


def test_published_sources_pair_each_file_with_its_profile():
    srcs = truth.published_sources()
    assert {os.path.basename(s.path)[:-5] for s in srcs} == set(cm.list_calibrated())
    assert all(s.calibrated is not None and s.loo for s in srcs)


@pytest.mark.slow
def test_cli_writes_the_table(tmp_path, capsys):
    d, recs = _host_dir(tmp_path)
    out = str(tmp_path / "T.md")
    assert cli.main(["truth-table", "--host", d, "--out", out, "-q"]) == 0
    text = open(out).read()
    for name in cm.list_calibrated():
        assert f"data/measured/{name}.json" in text
    assert "leave-one-out" in text and "held out" in text
    assert cli.main(["truth-table", "--host", str(tmp_path / "nothing"), "-q"]) == 2
    assert "measured.json is missing" in capsys.readouterr().err


def test_calibrate_says_how_to_name_a_cpu(tmp_path, capsys):
    p = str(tmp_path / "cpu.json")
    rec.write_records(p, [dict(evidence="measured", model="glm-4.7-flash", device="CPU: X (2 threads)", weights="bf16",
                               test="tg", n_depth=0, n_gen=16, avg_ts=5.0)])
    assert cli.main(["calibrate", p, "--out", str(tmp_path / "o.json")]) == 2
    err = capsys.readouterr().err
    assert "cpu.json:" in err and "--hardware host" in err and "--save-host" in err


def _llama_bench_dir(tmp_path):
    """What bench/bench_llama_bench.sh leaves: llama-bench's -o json from a CPU run, the host
    profile, the model's config, and `glmbench calibrate` run on the llama-bench file."""
    d = tmp_path / "lb"
    d.mkdir()
    with open(d / "host_profile.json", "w") as f:
        json.dump(hardware.profile_to_dict(hardware.cpu_profile(CEIL, launch_us=2.0, source="test")), f)
    cfg = os.path.join(os.path.dirname(cm.__file__), "..", "data", "models", "glm-4.7-flash.json")
    with open(cfg) as f, open(d / "config.json", "w") as g:
        g.write(f.read())
    base = {"build_commit": "0c1e570", "build_number": 1, "cpu_info": "Test CPU", "gpu_info": "", "backends": "CPU",
            "model_filename": "/tmp/random.gguf", "model_type": "deepseek2 ?B Q4_0", "n_batch": 2048, "n_ubatch": 512,
            "n_threads": 2, "type_k": "f16", "type_v": "f16", "n_gpu_layers": -1, "split_mode": "layer",
            "flash_attn": -1, "devices": "auto"}
    objs = []
    for (p, g, dep, ts) in [(512, 0, 0, 40.0), (0, 32, 0, 6.0), (512, 0, 4096, 20.0), (0, 32, 4096, 4.5),
                            (512, 0, 16384, 8.0), (0, 32, 16384, 2.5)]:
        objs.append(dict(base, n_prompt=p, n_gen=g, n_depth=dep, avg_ts=ts, stddev_ts=0.1, avg_ns=int(1e9 / ts)))
    with open(d / "llama-bench.json", "w") as f:
        json.dump(objs, f, indent=2)
    return str(d)


@pytest.mark.slow
def test_calibrate_and_truth_table_read_llama_bench_json_from_a_cpu(tmp_path, capsys):
    d = _llama_bench_dir(tmp_path)
    lb, prof = os.path.join(d, "llama-bench.json"), os.path.join(d, "llama-cpp-cpu.json")
    # the record says it ran on a CPU: without a host profile calibrate says what to pass
    assert cli.main(["calibrate", lb, "--model", os.path.join(d, "config.json"), "--out", prof]) == 2
    assert "--hardware host" in capsys.readouterr().err and not os.path.exists(prof)
    assert cli.main(["calibrate", lb, "--model", os.path.join(d, "config.json"),
                     "--hardware", os.path.join(d, "host_profile.json"), "--out", prof]) == 0
    out = capsys.readouterr().out
    assert "llama-bench.json:2" in out and "MAPE" in out   # residuals name the llama-bench file's lines
    cal_prof = cm.load_runtime("calibrated:" + prof)
    assert cal_prof.calibration["files"] == [lb]
    rows, sources = truth.build(llama_bench_dirs=[d], progress=False, published=False)
    assert len(rows) == 6 and sources[0].label.startswith("llama.cpp llama-bench on this CPU")
    assert all(r.loo is not None and r.held_out is None for r in rows)
    for r in rows:
        assert r.calibrated == pytest.approx(cal.predict_point(r.point, cal_prof))


@pytest.mark.slow
def test_save_host_writes_a_profile_that_loads_back_as_this_cpu(tmp_path, capsys):
    p = str(tmp_path / "host.json")
    assert cli.main(["hardware", "--save-host", p]) == 0
    g = hardware.load_profile(p)
    assert g.kind == "cpu" and g.bandwidth_gbs > 0 and g.tflops["fp32"] > 0 and "measured" in g.source
    assert "--hardware " + p in capsys.readouterr().err
    assert cli.main(["hardware", "--save-host", str(tmp_path / "host.toml")]) == 2
    assert "must end in .json" in capsys.readouterr().err


def test_published_points_are_predicted_by_their_runtime_model_out_of_the_box():
    """Each shipped study source names the runtime model of its runtime (with the options its records
    state); the truth table predicts every point with it, and that model was fitted to the public set
    only (none of these files among the sources its calibration records)."""
    srcs = truth.published_sources()
    assert {s.runtime_model for s in srcs} == {"ik_llama.cpp", "llama.cpp"}
    rows_of = {s.path: truth.rows_for(s) for s in srcs}    # (each a leave-one-out fit per point: computed once)
    for s in srcs:
        rows = rows_of[s.path]
        prof = cm.load_runtime(s.runtime_model)
        assert not any(os.path.basename(s.path)[:-5] in k for k in (prof.calibration or {}).get("sources", {}))
        for r in rows:
            assert r.model is not None and r.model > 0
            # the options the record states are applied: the same prediction by hand
            opts = {k: (int(v) if k == "ubatch" else v) for k, v in r.point.record["runtime_options"].items()}
            assert r.model == pytest.approx(cal.predict_point(r.point, prof.with_options(**opts)), rel=1e-12)
    # sweep-bench's prompt chunk is its ubatch: the after-fix source runs at -ub 2048
    after = [s for s in srcs if "mla-fixed" in s.path][0]
    rows = rows_of[after.path]
    assert all(r.point.record["runtime_options"]["ubatch"] == "2048" for r in rows)
    (d,) = [d for d in truth.summary(rows)]
    assert d["model"] is not None and "runtime model (public fit)" in truth.render(rows, [after], "x")


def test_a_physics_profile_s_report_says_its_error_on_the_public_set():
    """`typical` (the report's default) and `ideal` are physics only: the report says what they miss on
    the published points shipped with glmbench, recomputed here point by point, beside the runtime
    models' leave-one-source-out error; a runtime model's report says its bands instead."""
    from glmbench.predict import jointfit as jf
    import importlib
    render = importlib.import_module("glmbench.report.render")    # the module (glmbench.report.render is also a function)
    pts = jf.load_public()
    p = truth.physics_on_public("typical")
    pred = jf.predict_many(pts, cm.load_runtime("typical"))
    for test in ("tg", "pp"):
        e = [abs(pr / q.measured - 1) for pr, q in zip(pred, pts) if q.test == test]
        assert p[test] == pytest.approx(float(np.mean(e)))
    assert p["points"] == len(pts) == sum(d["points"] for d in p["per_runtime"].values())
    assert p["per_runtime"]["llama.cpp"]["loso_tg"] == cm.load_runtime("llama.cpp").calibration["loso_mape_decode"]
    text = render._physics_error("typical")
    assert f"`typical` misses decode by {100 * p['tg']:.0f}% and prefill by {100 * p['pp']:.0f}%" in text
    assert "(`llama.cpp`)" in text and "(`vllm`)" in text
    assert truth.physics_on_public("ideal")["pp"] != p["pp"]


def _card_files(tmp_path):
    """Two measured files of one model, on an RTX 3090 and an RTX 4090 (glmbench records)."""
    paths = {}
    for hw, scale in (("rtx-3090", 1.0), ("rtx-4090", 1.3)):
        recs = [dict(evidence="measured", model="llama-3-8b", hardware=hw, n_cards=1, weights="q4_k_m", type_k="f16",
                     type_v="f16", test=t, n_depth=dep, n_prompt=512 if t == "pp" else 0, n_gen=128 if t == "tg" else 0,
                     avg_ts=scale * (3000.0 if t == "pp" else 100.0) * (0.8 if dep else 1.0))
                for t in ("pp", "tg") for dep in (0, 4096)]
        paths[hw] = str(tmp_path / f"{hw}.json")
        rec.write_records(paths[hw], recs)
    return paths


def test_a_measured_file_the_profile_was_not_fitted_on_is_out_of_sample(tmp_path):
    """truth-table --measured 4090.md --measured-calibrated calibrated:p.json, p fitted on the 3090's
    file only, showed the 4090's error (20%) as `calibrated (in-sample)` and `–` out-of-sample. The
    profile's calibration.points says what it was fitted on: the 4090's points are out-of-sample, the
    3090's in-sample with the leave-one-out predictions the profile stores."""
    paths = _card_files(tmp_path)
    fit = cal.calibrate(cal.load_points([paths["rtx-3090"]]))
    prof_path = str(tmp_path / "p.json")
    cal.write_profile(prof_path, fit)
    prof = cm.load_runtime("calibrated:" + prof_path)
    both = str(tmp_path / "both.json")
    rec.write_records(both, [r for p in paths.values() for _, r in cal.read_measured(p)])
    srcs = [truth.Source(name, p, prof) for name, p in (("3090", paths["rtx-3090"]), ("4090", paths["rtx-4090"]),
                                                         ("both", both))]
    rows, _ = truth.build(extra=srcs, progress=False, published=False)
    by = {s: [r for r in rows if r.source == s] for s in ("3090", "4090", "both")}
    assert all(r.held_out is True and r.loo is None for r in by["4090"])
    assert all(r.held_out is False for r in by["3090"])
    assert [r.loo for r in by["3090"]] == pytest.approx(fit.loo_predicted)
    mixed = {r.point.setup.rig.name: r.held_out for r in by["both"]}
    assert mixed == {"RTX 3090": False, "RTX 4090": True}
    s = {d["source"]: d for d in truth.summary(rows)}
    err4090 = [abs(r.calibrated / r.point.measured - 1) for r in by["4090"]]
    assert s["4090"]["calibrated_in_sample"] is None and s["4090"]["out_of_sample"] == "not fitted on"
    assert s["4090"]["calibrated_out_of_sample"] == pytest.approx(np.mean(err4090))
    assert np.mean(err4090) > 0.05   # the 4090 is faster: a 3090 fit misses it
    assert s["3090"]["calibrated_in_sample"] == pytest.approx(fit.mape)
    assert s["3090"]["calibrated_out_of_sample"] == pytest.approx(fit.loo_mape)
    assert s["both"]["calibrated_in_sample"] == pytest.approx(fit.mape)
    assert s["both"]["calibrated_out_of_sample"] == pytest.approx(np.mean(
        [abs(x / r.point.measured - 1) for x, r in zip(fit.loo_predicted, by["3090"])] + err4090))
    assert s["both"]["out_of_sample"] == "leave-one-out + not fitted on"
    text = truth.render(rows, srcs, "glmbench truth-table")
    assert "not fitted on (+" in text or "not fitted on (-" in text

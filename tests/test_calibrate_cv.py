"""calibrate's cross-validation (glmbench/predict/calibrate.py resolve_cv, cv_folds, kfold_predictions;
`glmbench calibrate --cv`): leave-one-out up to LOO_MAX_POINTS points, k-fold above, each point predicted
exactly once by a fit that did not see it, and the table and the profile say which it was."""
import json

import pytest

from glmbench import cli, vocab
from glmbench.predict import calibrate as cal
from glmbench.results import records as rec


def _points_file(path, n=8):
    """n measured points of two models (speeds from a known profile, +-5% apart)."""
    models, grid = ("glm-4.7-flash", "qwen3-32b"), [("tg", 0, 0), ("tg", 8192, 0), ("pp", 0, 512), ("pp", 8192, 512),
                                                     ("tg", 32768, 0), ("pp", 4096, 2048)]
    recs = [dict(evidence="measured", model=models[i % 2], hardware="rtx-3090", n_cards=1, weights="q4_K", test=t,
                 n_depth=d, n_prompt=p, n_gen=1 if t == "tg" else 0, avg_ts=1.0)
            for i, (t, d, p) in enumerate((grid * 4)[:n])]
    rec.write_records(path, recs)
    pts = cal.load_points([path])
    start, _ = cal.base_profile(pts)
    known = cal._set(start, {"layer_overhead_us": 60.0, "memory_efficiency.matmul": 0.6})
    for i, (r, p) in enumerate(zip(recs, pts)):
        r["avg_ts"] = cal.predict_point(p, known) * (1.05 if i % 3 == 0 else 0.97)
    rec.write_records(path, recs)
    return path


def test_fold_assignment_is_deterministic_and_covers_every_point():
    assert cal.cv_folds(7, 3) == [0, 1, 2, 0, 1, 2, 0]
    assert cal.cv_folds(7, 3) == cal.cv_folds(7, 3)
    f = cal.cv_folds(2000, 10)
    assert sorted(set(f)) == list(range(10)) and all(f.count(k) == 200 for k in range(10))
    with pytest.raises(cal.CalibrationError, match="2 or more folds"):
        cal.cv_folds(5, 1)


def test_resolve_cv_threshold_and_choices():
    lim, k = cal.LOO_MAX_POINTS, cal.CV_FOLDS
    assert (lim, k) == (vocab.CALIBRATE_LOO_MAX_POINTS, vocab.CALIBRATE_CV_FOLDS) == (100, 10)
    assert cal.resolve_cv(None, lim) is None and cal.resolve_cv("auto", lim) is None      # leave-one-out up to it
    assert cal.resolve_cv(None, lim + 1) == k and cal.resolve_cv("auto", 2000) == k      # k-fold above
    assert cal.resolve_cv("loo", 2000) is None
    assert cal.resolve_cv(5, 2000) == 5 and cal.resolve_cv("5", 2000) == 5
    assert cal.resolve_cv(5, 5) is None and cal.resolve_cv(9, 5) is None                 # K >= n: leave-one-out
    for bad in (1, 0, "x", True, -3):
        with pytest.raises(cal.CalibrationError, match="--cv"):
            cal.resolve_cv(bad, 50)


def test_every_point_predicted_once_by_a_fit_that_did_not_see_it(monkeypatch):
    """kfold_predictions with the fit and the prediction recorded: K fits, each on the other folds,
    each point predicted once, by its own fold's fit."""
    pts = [object() for _ in range(23)]
    fits, preds = [], []

    def fake_fit(train, base="typical"):
        prof = ("profile", len(fits))
        fits.append([id(p) for p in train])
        return prof, [], [], None, {}

    def fake_predict(pt, prof):
        preds.append((id(pt), prof[1]))
        return float(prof[1])

    monkeypatch.setattr(cal, "fit_profile", fake_fit)
    monkeypatch.setattr(cal, "predict_point", fake_predict)
    out = cal.kfold_predictions(pts, 5)
    assert len(fits) == 5 and len(preds) == len(pts)
    assert sorted(i for i, _ in preds) == sorted(id(p) for p in pts)       # each point exactly once
    fold = cal.cv_folds(len(pts), 5)
    for i, (p, q) in enumerate(zip(pts, out)):
        f = int(q)
        assert f == fold[i]                                                 # by its fold's fit
        assert id(p) not in fits[f]                                         # which did not see it
        assert len(fits[f]) == len(pts) - fold.count(f)                     # and saw every other point
    # K >= n: leave-one-out, one fit per point
    fits.clear(), preds.clear()
    out = cal.kfold_predictions(pts[:4], 10)
    assert len(fits) == 4 and all(id(pts[i]) not in fits[i] and len(fits[i]) == 3 for i in range(4))


def test_kfold_calibration_is_labelled(tmp_path, monkeypatch):
    pts = cal.load_points([_points_file(str(tmp_path / "m.json"))])
    # small input: leave-one-out as before, nothing about folds stored
    loo = cal.calibrate(pts)
    assert loo.cv_folds is None and loo.cv_label == "leave-one-out"
    assert "; leave-one-out error " in loo.table()
    assert "cv" not in loo.profile.calibration and "cv_folds" not in loo.profile.calibration
    assert all("cv_fold" not in d for d in loo.profile.calibration["points"])
    # above the threshold (lowered here): k-fold, said in the table and the profile
    monkeypatch.setattr(cal, "LOO_MAX_POINTS", 5)
    monkeypatch.setattr(cal, "CV_FOLDS", 3)
    kf = cal.calibrate(pts)
    assert kf.cv_folds == 3 and kf.cv_label == "3-fold cross-validated"
    t = kf.table()
    assert "; 3-fold cross-validated error " in t and "leave-one-out" not in t, t
    c = kf.profile.calibration
    assert c["cv_folds"] == 3 and "3-fold cross-validation" in c["cv"] and "not leave-one-out" in c["cv"]
    assert [d["cv_fold"] for d in c["points"]] == cal.cv_folds(len(pts), 3)
    assert all(q is not None and q > 0 for q in kf.loo_predicted) and kf.loo_mape is not None
    assert c["loo_mape"] == kf.loo_mape and kf.profile.cv_error == pytest.approx(kf.loo_mape)
    # each point's out-of-fold prediction is its fold's fit's (fitted here again without that fold)
    fold = cal.cv_folds(len(pts), 3)
    prof0 = cal.fit_profile([p for p, f in zip(pts, fold) if f != 0])[0]
    for p, f, q in zip(pts, fold, kf.loo_predicted):
        if f == 0:
            assert q == cal.predict_point(p, prof0)
    # the same fit as before; only the out-of-sample predictions differ
    assert kf.predicted == loo.predicted and kf.fitted == loo.fitted


def test_cli_cv_option(tmp_path, capsys, monkeypatch):
    path = _points_file(str(tmp_path / "m.json"), n=6)
    out = str(tmp_path / "p.json")
    assert cli.main(["calibrate", path, "--out", out, "-q", "--cv", "3"]) == 0
    assert "; 3-fold cross-validated error " in capsys.readouterr().out
    c = json.load(open(out))["calibration"]
    assert c["cv_folds"] == 3 and [d["cv_fold"] for d in c["points"]] == [0, 1, 2, 0, 1, 2]
    from glmbench.predict import costmodel as cm
    monkeypatch.setattr(cm, "list_calibrated", lambda: [f"calibrated:{out}"])     # `runtimes` lists it
    assert cli.main(["runtimes", f"calibrated:{out}"]) == 0
    assert "3-fold cross-validated MAPE" in capsys.readouterr().out
    out2 = str(tmp_path / "q.json")
    assert cli.main(["calibrate", path, "--out", out2, "-q", "--cv", "loo"]) == 0
    assert "; leave-one-out error " in capsys.readouterr().out
    assert "cv_folds" not in json.load(open(out2))["calibration"]
    for bad in ("1", "ten", "0"):
        assert cli.main(["calibrate", path, "--out", out2, "-q", "--cv", bad]) == 2
        err = capsys.readouterr().err
        assert "argument --cv" in err and "number of folds >= 2" in err and "Traceback" not in err


def test_mean_decode_seconds_is_the_trapezoid_of_decode_steps():
    """predict_point's tg of n_gen > 1 (llama-bench's tg128) prices the mean step over the depths the
    generation passes: the trapezoid of decode() at five depths d0 .. d0 + n - 1 (one step when n is 1),
    to the last bit; _mean_decode gives the same seconds beside the middle depth's step."""
    from glmbench.predict import costmodel as cm
    for model, B in (("glm-4.7-flash", 1), ("qwen3-32b", 1), ("glm-4.7-flash", 4)):
        s = cm.Setup(model, "rtx-3090", weights="q4_K")
        for d0, n in ((0, 128), (8192, 32), (100, 1)):
            if n == 1:
                want, mid = cm.decode(s, d0, B).seconds, d0
            else:
                ds = [d0 + round(i * (n - 1) / 4) for i in range(5)]
                ts = [cm.decode(s, d, B).seconds for d in ds]
                want = sum((ds[i + 1] - ds[i]) * (ts[i] + ts[i + 1]) / 2 for i in range(4)) / (ds[-1] - ds[0])
                mid = ds[2]
                assert ts[-1] > ts[0]          # deeper steps cost more: the mean is not one step's
            assert cm._mean_decode_seconds(s, d0, n, B) == want
            sec, step = cm._mean_decode(s, d0, n, B)
            assert sec == want and step.seconds == cm.decode(s, mid, B).seconds


def test_the_report_names_a_calibrated_profiles_error_as_its_fit_cross_validated_it(tmp_path):
    """A profile `glmbench calibrate --base llama.cpp` wrote (a kernel table, so the report prints its error
    beside the kernel efficiencies) was said to carry a "leave-one-source-out error": its error is leave-one-out
    over its points, or K-fold (--cv K, above 100 points). The shipped runtime models' stays leave-one-source-out."""
    import importlib
    from glmbench.predict import costmodel as cm
    render = importlib.import_module("glmbench.report.render")    # (glmbench.report.render is also a function)
    pts = cal.load_points([_points_file(tmp_path / "m.json", n=6)])
    for cv, label in (("loo", "leave-one-out error"), (3, "3-fold cross-validated error")):
        path = tmp_path / f"p{cv}.json"
        cal.write_profile(str(path), cal.calibrate(pts, name="p", base="llama.cpp", cv=cv))
        rt = cm.load_runtime(f"calibrated:{path}")
        assert rt.kernels and rt.cv_error is not None
        text = render._bands_text(rt)
        assert text.startswith(label), text
        assert "source" not in text
    assert render._bands_text(cm.load_runtime("llama.cpp")).startswith("leave-one-source-out")


def test_the_readme_says_which_cv_keys_a_profile_has(tmp_path, capsys):
    """README's Calibration section said the profile's `calibration` has `cv` / `cv_folds` (and each point's
    `cv_fold`) to say which cross-validation it was, but calibrate writes them for k-fold only; a leave-one-out
    profile has none. The README now says so, and what it says is what calibrate writes."""
    import os
    import re
    readme = open(os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "README.md")).read()
    para = re.sub(r"\s+", " ", readme.split("### Calibration", 1)[1].split("\n\n", 3)[2])
    said = next(s for s in re.split(r"(?<=[.;])\s", para) if "`cv_folds`" in s)
    assert "k-fold only" in said, said
    assert "a leave-one-out profile has none of them" in para
    path = _points_file(str(tmp_path / "m.json"), n=6)
    for cv, keys in (("3", {"cv", "cv_folds"}), ("loo", set())):
        out = str(tmp_path / f"p{cv}.json")
        assert cli.main(["calibrate", path, "--out", out, "-q", "--cv", cv]) == 0
        c = json.load(open(out))["calibration"]
        assert {"cv", "cv_folds"} & set(c) == keys
        assert all(("cv_fold" in d) == bool(keys) for d in c["points"])
    capsys.readouterr()

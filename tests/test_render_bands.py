"""report/render.py's speed tables carry a calibrated figure's cross-validated band (cv_error) beside it;
a predicted one has no such column."""
import importlib

from glmbench.report.study import Study

render = importlib.import_module("glmbench.report.render")   # (the package's `render` is the function)


def _recs(cv):
    out = []
    for model, e in (("glm-4.7-flash", cv), ("qwen3-32b", cv and cv / 3)):
        base = dict(evidence="calibrated" if cv else "predicted", model=model, device="RTX 3090", n_cards=1,
                    split="none", setup=f"{model}, RTX 3090", **({"cv_error": e} if cv else {}))
        for d in Study().depths:
            out.append(dict(base, test="tg", n_depth=d, avg_ts=100.0))
            out.append(dict(base, test="pp", n_depth=0, n_prompt=d, avg_ts=1000.0, seconds=d / 1000))
        for c in (1, 2):
            out.append(dict(base, test="serve", n_depth=4096, concurrency=c, aggregate_tok_s=100.0 * c,
                            per_stream_tok_s=100.0, fits=True))
    return out


def _rows(lines, model):
    return [x for x in "\n".join(lines).splitlines() if x.startswith(f"| {model} |")]


def test_calibrated_tables_show_their_band():
    recs, st = _recs(0.21), Study()
    for section in (render._generation(recs, st), render._prefill(recs, st), render._throughput(recs, st)):
        text = "\n".join(section)
        assert "| band (cross-validated) |" in text
        assert _rows(section, "glm-4.7-flash")[0].endswith("| ±21% |")
        assert _rows(section, "qwen3-32b")[0].endswith("| ±7% |")


def test_predicted_tables_have_no_band_column():
    recs, st = _recs(None), Study()
    for section in (render._generation(recs, st), render._prefill(recs, st), render._throughput(recs, st)):
        assert "band" not in "\n".join(section)


def test_measured_vs_predicted_shows_a_calibrated_predictions_band():
    pred = dict(evidence="calibrated", model="glm-4.7-flash", device="RTX 3090", n_cards=1, split="none", test="tg",
                n_depth=4096, n_prompt=0, n_gen=1, avg_ts=110.0, cv_error=0.21, avg_ts_lo=86.9, avg_ts_hi=133.1)
    meas = dict(evidence="measured", model="glm-4.7-flash", device="RTX 3090", n_cards=1, test="tg", n_depth=4096,
                n_prompt=0, n_gen=128, avg_ts=100.0)
    text = "\n".join(render._measured([pred, meas]))
    assert "| 1× RTX 3090 | 110.00 ±21% | 1.10 |" in text
    plain = {k: v for k, v in pred.items() if k not in ("cv_error", "avg_ts_lo", "avg_ts_hi")}
    assert "| 1× RTX 3090 | 110.00 | 1.10 |" in "\n".join(render._measured([dict(plain, evidence="predicted"), meas]))

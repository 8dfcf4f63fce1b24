"""report/render.py's one-card-vs-two table: a column per depth the study has, the short and the long."""
import importlib

from glmbench.report.study import Study

render = importlib.import_module("glmbench.report.render")   # (the package's `render` is the function)


def _recs(depths):
    out = []
    for model in ("glm-4.7-flash", "qwen3-32b"):
        for n, speed in ((1, 100.0), (2, 90.0)):
            setup = f"{model}, {n}x RTX 3090"
            base = dict(evidence="predicted", model=model, device="RTX 3090", n_cards=n, split="layer", setup=setup)
            for d in depths:
                out.append(dict(base, test="tg", n_depth=d, avg_ts=speed * 4096 / d))
                out.append(dict(base, test="mem", n_depth=d, mem_bytes=1, fits=True))
            out.append(dict(base, test="serve", n_depth=4096, concurrency=4, aggregate_tok_s=4 * speed,
                            per_stream_tok_s=speed, fits=True))
    return out


def _table(lines):
    rows = [x for x in "\n".join(lines).splitlines() if x.startswith("|")]
    return rows[0], rows[2:]


def test_one_depth_table_has_one_single_stream_column():
    # report --depths 4K: 'single stream @4K | single stream @4K', the same numbers twice
    st = Study(depths=(4096,))
    lines = render._one_vs_two(_recs(st.depths), st)
    head, rows = _table(lines)
    assert head == "| model | cards | single stream @4K | batched (all streams) |"
    assert rows[0] == "| glm-4.7-flash | 1 | 100.0 | 400 at 4 streams |"
    assert rows[1] == "| glm-4.7-flash | 2 | 90.0 | 360 at 4 streams |"
    assert "at 4K (the only depth)" in "\n".join(lines) and "4K and 4K" not in "\n".join(lines)


def test_two_depths_table_keeps_its_short_and_long_columns():
    st = Study(depths=(4096, 65536))
    head, rows = _table(render._one_vs_two(_recs(st.depths), st))
    assert head == "| model | cards | single stream @4K | single stream @64K | batched (all streams) |"
    assert rows[1] == "| glm-4.7-flash | 2 | 90.0 | 5.6 | 360 at 4 streams |"

"""report/render.py's one-card-vs-two table: a column per depth the study has, the short and the long."""
import importlib

from glmbench.report.study import Study

render = importlib.import_module("glmbench.report.render")   # (the package's `render` is the function)


def _recs(depths):
    out = []
    for model, k in (("glm-4.7-flash", 1.0), ("qwen3-32b", 0.25)):
        for n, speed in ((1, 100.0 * k), (2, 90.0 * k)):
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


def test_one_depth_report_says_one_depth_not_a_range_and_no_crossover_between_it_and_itself():
    # report --depths 4K: 'depths 4K to 4K' and 'No crossover between 4K and 4K: ... faster at every depth'
    st = Study(depths=(4096,))
    recs = _recs(st.depths)
    setup = [x for x in render._header(recs, st, []) if x.startswith("**Setup:**")][0]
    assert setup.endswith("; one depth, 4K.") and "4K to 4K" not in setup
    gen = "\n".join(render._generation(recs, st))
    assert "between 4K and 4K" not in gen and "every depth" not in gen
    assert "**No crossover to find** at one depth (4K; a crossover needs two or more): " \
           "glm-4.7-flash is faster at 4K on 1× RTX 3090" in gen


def test_two_depths_report_keeps_its_range_and_no_crossover_sentence():
    st = Study(depths=(4096, 65536))
    recs = _recs(st.depths)
    setup = [x for x in render._header(recs, st, []) if x.startswith("**Setup:**")][0]
    assert setup.endswith("; depths 4K to 64K.")
    assert "**No crossover** between 4K and 64K: glm-4.7-flash is faster at every depth on 1× RTX 3090" \
        in "\n".join(render._generation(recs, st))

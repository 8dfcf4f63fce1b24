"""report/render.py's decode and prefill tables mark a context past the model's native positions."""
import importlib

from glmbench.report.study import Study

render = importlib.import_module("glmbench.report.render")   # (the package's `render` is the function)


def test_cells_past_native_positions_are_marked_and_footnoted():
    # report: qwen3-32b @64K / @128K (native 40K) read as plain speeds beside glm-4.7-flash's, the
    # records' `beyond_native` shown only in the memory table
    st = Study(models=("glm-4.7-flash", "qwen3-32b"), cards=(1,), depths=(4096, 65536))
    recs = []
    for model, native in (("glm-4.7-flash", 202752), ("qwen3-32b", 40960)):
        base = dict(evidence="predicted", model=model, device="RTX 3090", n_cards=1, split="layer",
                    setup=f"{model}, 1x RTX 3090", native_context=native)
        for d in st.depths:
            recs.append(dict(base, test="tg", n_depth=d, n_prompt=0, avg_ts=4096.0 / d * 10,
                             beyond_native=d > native))
            recs.append(dict(base, test="mem", n_depth=d, mem_bytes=1, fits=True, beyond_native=d > native))
            recs.append(dict(base, test="pp", n_depth=0, n_prompt=d, avg_ts=1000.0, seconds=d / 1000.0,
                             beyond_native=d > native))
    gen = "\n".join(render._generation(recs, st)).splitlines()
    rows = [x for x in gen if x.startswith("| qwen3-32b")]
    assert rows == ["| qwen3-32b | 1× RTX 3090 | 10.0 | 0.6 † |"], rows
    assert [x for x in gen if x.startswith("| glm-4.7-flash")] == ["| glm-4.7-flash | 1× RTX 3090 | 10.0 | 0.6 |"]
    notes = [x for x in gen if x.startswith("†")]
    assert len(notes) == 1 and "(qwen3-32b: 40K)" in notes[0] and "glm" not in notes[0]
    pre = "\n".join(render._prefill(recs, st)).splitlines()
    assert [x for x in pre if x.startswith("| qwen3-32b")][0].endswith("65.5 s † |")
    assert any(x.startswith("† past the model's native positions (qwen3-32b: 40K)") for x in pre)


def test_no_footnote_when_every_cell_is_within_native_positions():
    st = Study(models=("qwen3-32b",), cards=(1,), depths=(4096, 16384))
    base = dict(evidence="predicted", model="qwen3-32b", device="RTX 3090", n_cards=1, split="layer",
                setup="qwen3-32b, 1x RTX 3090", native_context=40960)
    recs = [dict(base, test="tg", n_depth=d, n_prompt=0, avg_ts=10.0, beyond_native=False) for d in st.depths]
    gen = "\n".join(render._generation(recs, st))
    assert "†" not in gen

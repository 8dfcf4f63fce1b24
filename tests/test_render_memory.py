"""report/render.py's memory table: the longest context beside the model's native one."""
import importlib

from glmbench.report.study import Study

render = importlib.import_module("glmbench.report.render")   # (the package's `render` is the function)

GIB = 2 ** 30


def _row(ctx, native):
    return {"model": "qwen3-32b", "rig": "RTX 4090", "n_cards": 1, "split": "none", "max_context": ctx,
            "native_context": native, "weights_bytes_fullest_card": 19.0 * GIB, "kv_bytes_per_token": 131072,
            "capacity_bytes": 24 * GIB}


def _limit(ctx, native):
    L = render._memory([{"test": "mem"}], Study(), [_row(ctx, native)])
    row = next(x for x in "\n".join(L).splitlines() if x.startswith("| qwen3-32b"))
    return row.rstrip(" |").rsplit("| ", 1)[1]


def test_a_context_just_past_the_native_one_is_not_rounded_onto_it():
    # 41,214 and 40,960 both round to "40K": "40K tokens (beyond the model's 40K positions)" read as a
    # contradiction, so the exact figures are given
    assert _limit(41214, 40960) == "41,214 tokens (beyond the model's 40,960 positions)"
    # far past it, the rounded labels differ and stay short
    assert _limit(90000, 40960) == "88K tokens (beyond the model's 40K positions)"
    assert _limit(30000, 40960) == "29K tokens"


def test_memory_and_decision_rows_name_the_rig_as_the_charts_do():
    # the memory and decision tables said '2 x RTX 3090 @ 1.4 GB/s, layer split' and 'RTX 3090' beside
    # charts (and the other tables) saying '2× RTX 3090 (layer split, 1.4 GB/s)' and '1× RTX 3090'
    st = Study()
    one, two = st.rigs()
    rows = [dict(_row(30000, 40960), rig=one.name, split="none"), dict(_row(90000, 40960), rig=two.name, n_cards=2,
                                                                       split="layer")]
    text = "\n".join(render._memory([{"test": "mem"}], st, rows))
    assert "| qwen3-32b | 1× RTX 3090 |" in text and "| qwen3-32b | 2× RTX 3090 (layer split, 1.4 GB/s) |" in text
    assert render._row_rig({"rig": two.name, "split": "layer"}, st) == "2× RTX 3090 (layer split, 1.4 GB/s)"
    # a rig the study does not have keeps the cost model's name
    assert render._row_rig({"rig": "RTX 4090", "split": "none"}, st) == "RTX 4090"

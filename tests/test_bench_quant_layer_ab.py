"""bench/bench_quant_layer_ab.py runs end to end on a tiny q8_0 GGUF: both sides give the same
logits (it asserts so), one table row per side and the ratio row."""
import os
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "bench"))
import bench_quant_layer_ab as b  # noqa: E402
from gguf import GGMLQuantizationType as T  # noqa: E402
from test_gguf import _write  # noqa: E402


def test_runs_and_prints_its_table(tmp_path, capsys):
    _, _, p = _write(tmp_path, "qwen3", types=lambda n, s: T.Q8_0)
    assert b.main([p, "--threads", "1", "--rounds", "1", "--steps", "2"]) == 0
    out = capsys.readouterr().out
    rows = [ln for ln in out.splitlines() if ln.startswith("| ")]
    assert len(rows) == 4 and rows[1].startswith("| C layer") and rows[2].startswith("| op by op")
    assert rows[3].startswith("| forward_py / C layer |") and rows[3].endswith("x |")

"""bench/bench_decode_small_ops.py runs end to end on tiny repeat counts: the router of two builds
(here the same one twice) choosing the same experts, the MLA decode attention with k_b from its stored
rows and packed giving outputs within one q8_K step of o_lat, one table row per (op, threads, variant)."""
import os
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "bench"))
import bench_decode_small_ops as b  # noqa: E402

from glmbench.core import _loader  # noqa: E402


def test_runs_and_writes_its_table(tmp_path, capsys):
    out = tmp_path / "t.md"
    assert b.main(["--before", _loader._core.__file__, "--threads", "1", "--reps", "4", "--out", str(out)]) == 0
    text = out.read_text()
    rows = [ln for ln in text.splitlines() if ln.startswith("| router") or ln.startswith("| MLA")]
    assert len(rows) == 4
    assert sum("| before |" in r for r in rows) == 1 and sum("| k_b packed |" in r for r in rows) == 1
    assert text.strip() in capsys.readouterr().out   # printed as written

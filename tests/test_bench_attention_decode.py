"""bench/bench_attention_decode.py runs end to end on a shallow q8_0 cache with the decode tile off and
on: one row per (case, tile), every output within float32 rounding of its NumPy twin."""
import os
import sys

import pytest

sys.path.insert(0, os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "bench"))
import bench_attention_decode as b  # noqa: E402


def test_runs_both_tiles_on_a_q8_0_cache(monkeypatch, capsys):
    import glmbench
    n0 = glmbench.get_num_threads()
    monkeypatch.setattr(sys, "argv", ["bench_attention_decode.py", "--depths", "128", "--reps", "2", "--kv", "q8_0",
                                      "--f16-tile", "both", "--threads", "1", "--max-layers", "8"])
    try:
        b.main()
    finally:
        glmbench.set_num_threads(n0)
    lines = capsys.readouterr().out.splitlines()
    rows = {ln.split()[0]: ln.split() for ln in lines if ln.split() and ln.split()[0] in ("gqa-", "gqa", "mla-", "mla")}
    assert set(rows) == {"gqa-", "gqa", "mla-", "mla"}
    for name, r in rows.items():
        assert r[1] == "128" and float(r[3]) > 0 and int(r[2]) <= 8, r    # depth, layers (capped), best ms
        assert float(r[-1]) < 1e-5, (name, r[-1])          # err against NumPy float32
    with pytest.raises(SystemExit):                       # a cache format the script does not know
        monkeypatch.setattr(sys, "argv", ["bench_attention_decode.py", "--kv", "q3_K"])
        b.main()

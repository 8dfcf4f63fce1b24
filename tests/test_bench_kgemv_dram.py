"""bench/bench_kgemv_dram.py runs end to end on cache-sized matrices of a K-quant, iq4_nl, mxfp4 and
q4_0 (their three C entry points through ctypes), with --before and --after pointing at this same build: one row per
format, the GEMV's GB/s and share of the read ceiling printed, both labels' outputs bit-identical."""
import os
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "bench"))
import bench_kgemv_dram as b  # noqa: E402


def test_rows_for_each_entry_point(monkeypatch, capsys):
    import glmbench
    from glmbench.core import _loader
    n0 = glmbench.get_num_threads()
    monkeypatch.setattr(sys, "argv", ["bench_kgemv_dram.py", "--formats", "q4_K,iq4_nl,mxfp4,q4_0", "--shapes", "64x1024",
                                      "--rounds", "1", "--before", _loader._core.__file__,
                                      "--after", _loader._core.__file__])
    try:
        b.main()
    finally:
        glmbench.set_num_threads(n0)
    rows = [ln.split("|") for ln in capsys.readouterr().out.splitlines() if ln.startswith("| ")]
    assert [r[1].strip() for r in rows] == ["q4_K", "iq4_nl", "mxfp4", "q4_0"]
    for r in rows:
        assert r[2].strip() == "64x1024" and "GB/s" in r[4] and r[5].strip().startswith("before") and "%" in r[6], r

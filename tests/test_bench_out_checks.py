"""bench/bench_quant_kv.py and bench/bench_models.py: an --out that write_records cannot write is
refused in one line before any timing (it was a traceback from write_records after the whole run)."""
import os
import sys

import pytest

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, os.path.join(ROOT, "bench"))
import bench_models as bm  # noqa: E402
import bench_quant_kv as bqk  # noqa: E402


def test_out_suffix_is_checked_before_timing(tmp_path, monkeypatch, capsys):
    def no_work(*a, **k):
        raise AssertionError("timed before checking --out")
    monkeypatch.setattr(bqk, "Case", no_work)
    with pytest.raises(SystemExit) as e:
        bqk.main(["--models", "qwen3-0.6b", "--depths", "64", "--out", str(tmp_path / "kv.md")])
    assert e.value.code == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert err[-1].endswith(f"error: --out {tmp_path / 'kv.md'}: a records file ends in .csv or .json")
    assert not (tmp_path / "kv.md").exists()


def test_a_small_run_writes_its_records(tmp_path):
    out = tmp_path / "kv.json"
    recs = bqk.main(["--models", "qwen3-0.6b", "--depths", "64", "--formats", "f16", "q8_0", "--repeats", "1",
                     "--out", str(out)])
    assert [r["type_k"] for r in recs] == ["f16", "q8_0"] and out.exists()
    assert all(r["avg_ts"] > 0 and r["kv_bytes"] > 0 for r in recs)
    assert recs[1]["kv_bytes"] < recs[0]["kv_bytes"]     # q8_0 rows take fewer bytes than f16's


def test_bench_models_checks_its_out_first(tmp_path, monkeypatch, capsys):
    def no_work(*a, **k):
        raise AssertionError("measured before checking --out")
    monkeypatch.setattr(bm, "measure_ceilings", no_work)
    with pytest.raises(SystemExit) as e:
        bm.main(["--models", "qwen3-0.6b", "--out", str(tmp_path / "m.md")])
    assert e.value.code == 2
    assert capsys.readouterr().err.strip().splitlines()[-1].endswith(": a records file ends in .csv or .json")

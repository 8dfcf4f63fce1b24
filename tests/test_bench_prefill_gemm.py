"""bench/bench_prefill_gemm.py: the integer GEMM sections run on the VNNI kernels only; where the
build has none (an AVX2 CPU) the results say so instead of leaving the requested formats out silently."""
import os
import sys

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, os.path.join(ROOT, "bench"))
import bench_prefill_gemm as bpg  # noqa: E402


def test_formats_without_their_kernel_are_named(tmp_path, monkeypatch, capsys):
    real = bpg.quant.kernels()
    monkeypatch.setattr(bpg.quant, "kernels", lambda: dict(real, qgemm_vnni=False, kquant_vnni=False))
    out = tmp_path / "pg.md"
    assert bpg.main(["--formats", "q8_0,q4_K", "--reps", "1", "--rounds", "1", "--T", "16", "--out", str(out)]) == 0
    text = out.read_text()
    assert "- q8_0: not timed: this build has no qgemm_vnni kernel" in text
    assert "- q4_K: not timed: this build has no kquant_vnni kernel" in text
    assert "| 1536x2048 |" not in text
    assert "not timed" in capsys.readouterr().out

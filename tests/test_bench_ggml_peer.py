"""bench/bench_ggml_peer.py's note on what its T=1 rows measure follows the machine's last-level
cache: the 25600x5120 matrices (74-139 MB) and the 4 experts x 3 matrices (21-40 MB) are read from
DRAM on a 16 MiB L3, from the cache on a large one (the note used to say "cache-resident" everywhere)."""
import os
import subprocess
import sys

import pytest

sys.path.insert(0, os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "bench"))
import bench_ggml_peer as b  # noqa: E402


def test_t1_note_follows_the_cache_size():
    small = b._t1_cache_note(16 << 20)
    assert small.startswith("- last-level cache 16 MiB:")
    assert small.count("are larger than it: each call reads them from DRAM") == 2
    assert "cache-resident" not in small
    mid = b._t1_cache_note(32 << 20)  # the experts' q4_0 (21 MB) fit, q8_0 (40 MB) does not
    assert "are larger than it" in mid and "partly fit in it" in mid
    big = b._t1_cache_note(256 << 20)
    assert big.count("stay in it between calls (cache-resident)") == 2 and "DRAM" not in big.split(".")[0]


def test_vnni_ceilings_cover_every_tile_mix():
    """The tile ceilings: one per scale-multiply count the K-quant tile uses, plus the plain peak."""
    v = b.vnni_ceilings()
    try:
        vnni = b._core.bench_int8(1000, 1)[1] == "vpdpbusd"
    except ValueError:          # neither AVX-512 VNNI nor AVX2 compiled in
        vnni = False
    if not vnni:  # no AVX-512 VNNI in this build: no ceilings (the C core refuses a scaled one), not made-up ones
        assert v == {}
        with pytest.raises(ValueError, match="needs AVX-512 VNNI"):
            b._core.bench_int8(1000, 1, scales=2)
        return
    assert set(v) == {0, *b.TILE_SCALES.values()} and all(g > 0 for g in v.values())


LLAMA_BUILD = os.path.join(os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__)))), "llama-build")


def test_harness_copies_stream_each_weight(tmp_path):
    """The ggml harness's COPIES (the DRAM GEMV peer): that many distinct weights, one product each in
    one graph; the line says how many, and ggml_dram_gemv gives seconds per product (a graph of 4
    copies takes about 4 times one copy's time, not the same time). Skipped without the llama.cpp
    build of bench/build_llama_bench.sh beside the checkout."""
    if not os.path.exists(os.path.join(LLAMA_BUILD, "ggml", "src", "libggml.a")):
        pytest.skip("no llama.cpp build beside the checkout")
    exe = b.build_peer(LLAMA_BUILD, str(tmp_path))
    out = subprocess.run([exe, "linear", "q4_0", "2048", "2048", "1", "0", "1", "3", "4"], capture_output=True, text=True, check=True).stdout
    f = out.split()
    assert f[f.index("copies") + 1] == "4" and float(f[f.index("best_s") + 1]) > 0
    bad = subprocess.run([exe, "linear", "q4_0", "64", "256", "1", "0", "1", "3", "0"], capture_output=True, text=True)
    assert bad.returncode == 2 and "COPIES" in bad.stderr
    one, _ = b.ggml_dram_gemv(exe, "q4_0", 5, 1, 1, n=4096, k=2048)
    four, _ = b.ggml_dram_gemv(exe, "q4_0", 5, 1, 4, n=4096, k=2048)
    assert 0.4 < four / one < 2.5  # per product: the graph's time divided by the copies


def test_moe_rotation_reads_every_expert_once_a_cycle(tmp_path):
    """The MoE T=1 from DRAM rows: each call routed to the next 4 of 64 experts, 16 calls a cycle, every expert once,
    no two calls of a cycle sharing one; the bytes of one call are its 4 experts' three matrices. With the llama.cpp
    build, the harness's ROTATE says so on its line."""
    cyc = b.moe_rotation(64, 4)
    assert len(cyc) == 16 and all(c.shape == (1, 4) for c in cyc)
    assert sorted(int(e) for c in cyc for e in c.ravel()) == list(range(64))
    assert b._moe_dram_bytes("q4_0") == 4 * 3 * 1536 * 2048 * 18 // 32
    if not os.path.exists(os.path.join(LLAMA_BUILD, "ggml", "src", "libggml.a")):
        pytest.skip("no llama.cpp build beside the checkout")
    exe = b.build_peer(LLAMA_BUILD, str(tmp_path))
    out = subprocess.run([exe, "moe", "q4_0", "64", "256", "512", "4", "1", "0", "1", "16", "1"], capture_output=True,
                         text=True, check=True).stdout.split()
    assert out[out.index("rotate") + 1] == "1" and float(out[out.index("best_s") + 1]) > 0

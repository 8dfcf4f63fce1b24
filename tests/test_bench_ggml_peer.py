"""bench/bench_ggml_peer.py's note on what its T=1 rows measure follows the machine's last-level
cache: the 25600x5120 matrices (74-139 MB) and the 4 experts x 3 matrices (21-40 MB) are read from
DRAM on a 16 MiB L3, from the cache on a large one (the note used to say "cache-resident" everywhere)."""
import os
import sys

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
    if not v:  # no AVX-512 VNNI in this build
        return
    assert set(v) == {0, *b.TILE_SCALES.values()} and all(g > 0 for g in v.values())

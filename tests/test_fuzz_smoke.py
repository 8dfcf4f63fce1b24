"""A quick run of the fuzz harness (bench/fuzz/fuzz_glmbench.py) on every target: 30 seeded inputs
each, no ASan (the real run, 10,000 inputs per target against an ASan build, is
bench/fuzz/run_asan.sh; results in bench/fuzz/results.md). Checks the harness still builds valid
calls for every binding and reader, and that none of its inputs breaks a rule."""
import importlib.util
import os

import pytest

HARNESS = os.path.join(os.path.dirname(__file__), os.pardir, "bench", "fuzz", "fuzz_glmbench.py")


@pytest.fixture(scope="module")
def fz():
    spec = importlib.util.spec_from_file_location("fuzz_glmbench", HARNESS)
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


def _targets():
    spec = importlib.util.spec_from_file_location("fuzz_glmbench_names", HARNESS)
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return list(mod.TARGETS) + list(mod.READERS)


@pytest.mark.parametrize("target", _targets())
def test_fuzz_target_smoke(fz, target):
    s = fz.fuzz(target, 30, seed=1, timeout=20.0, log=None)
    assert s["inputs"] == 30 and sum(s["outcomes"].values()) == 30
    assert s["findings"] == []
    # the harness reaches both the valid path and the error paths
    assert s["outcomes"].get("ok", 0) > 0 and len(s["outcomes"]) > 1


def test_every_binding_has_a_target(fz):
    """A new binding in csrc/ must get a generator in the harness."""
    from glmbench.core._loader import _core
    import inspect
    src = inspect.getsource(fz)
    names = [n for n in dir(_core) if callable(getattr(_core, n)) and not n.startswith("__")]
    missing = [n for n in names if f'"{n}"' not in src and n != "KVCacheBase"]
    assert not missing, f"bindings without a fuzz target: {missing}"


# ---- what the fuzzer found (bench/fuzz/results.md), fixed, kept fixed ---------------------------
def test_rope_offset_overflow_is_an_error():
    """rot_offset + rot_dim overflowed int64 and passed the range check: memcpy of a negative size
    (ASan: negative-size-param in csrc/rope.c)."""
    import numpy as np
    from glmbench.core._loader import _core
    x = np.zeros((1, 1, 8), np.float32)
    pos = np.zeros(1, np.int64)
    for rot_dim, off in ((2**62, 2**62), (2, 2**63 - 1), (8, 1), (10, 0)):
        with pytest.raises(ValueError, match="within the head dim"):
            _core.rope(x, pos, 10000.0, rot_dim, off, 0, None, 1.0)


def test_kvcache_block_tables_are_bounded():
    """KVCache(7 layers, 2**31 tokens) zeroed 3.6 GB of block tables (minutes under ASan); a
    layers x blocks product could overflow int64."""
    from glmbench.core.kvcache import KVCache
    for layers, cap, bs in ((7, 2**31, 64), (2**40, 2**40, 1), (1, 2**62, 1)):
        with pytest.raises(ValueError, match="block tables"):
            KVCache.mla(layers, cap, 32, 32, kv="f32", block_size=bs)
    assert KVCache.mla(47, 131072, 512, 64, kv="bf16").capacity_tokens == 131072  # real sizes still fine


def test_bench_counts_are_bounded():
    """bench_fma(2**62, 1) looped for hours and bench_bandwidth(2**40, 1) asked for 12 TB."""
    from glmbench.core._loader import _core
    for call in (lambda: _core.bench_fma(2**62, 1), lambda: _core.bench_fma(1000, 10**6),
                 lambda: _core.bench_int8(2**62, 1), lambda: _core.bench_int8(1000, 10**6),
                 lambda: _core.bench_bandwidth(2**40, 1), lambda: _core.bench_bandwidth(4096, 10**6)):
        with pytest.raises(ValueError, match="bench: need"):
            call()


def test_bench_int8_scales_are_bounded_and_vnni_only():
    """bench_int8(scales=S): S vpmulld per 16 vpdpbusd (the K-quant tile's op mix), 1..8, AVX-512 VNNI only."""
    from glmbench.core._loader import _core
    for bad in (-1, 9, 2**31 - 1):
        with pytest.raises(ValueError, match="scales must be 0..8"):
            _core.bench_int8(1000, 1, scales=bad)
    with pytest.raises(ValueError, match="bench: need"):
        _core.bench_int8(2**62, 1, scales=2)
    try:
        gops, instr = _core.bench_int8(1000, 2, scales=4)
    except ValueError as e:  # a build without AVX-512 VNNI
        assert "needs AVX-512 VNNI" in str(e)
        return
    assert instr == "vpdpbusd" and gops > 0


def test_bench_int8_names_its_instruction():
    """The int8 ceiling exists on AVX2-only CPUs too (vpmaddubsw + vpmaddwd), and says which it is."""
    from glmbench.core._loader import _core
    try:
        gops, instr = _core.bench_int8(1000, 2)
    except ValueError as e:  # a portable build (GLMBENCH_NATIVE=0 on a CPU without either)
        assert "neither" in str(e)
        return
    assert instr in ("vpdpbusd", "vpmaddubsw") and gops > 0


def test_readers_name_the_file(tmp_path):
    """Non-UTF-8 bytes gave a bare UnicodeDecodeError; a config's field error did not say which
    file; a CSV row with too few cells gave a TypeError from int(None)."""
    from glmbench.models import configs
    from glmbench.predict import hardware
    from glmbench.results import records
    bad = tmp_path / "bad.json"
    bad.write_bytes(b'{"name": "\xff"}')
    for read in (configs.load, hardware.load_profile, records.read_records):
        with pytest.raises(ValueError, match="bad.json: not UTF-8"):
            read(bad)
    cfg = tmp_path / "cfg.json"
    cfg.write_text('{"model_type": "glm4_moe_lite", "num_key_value_heads": "x"}')
    with pytest.raises(ValueError, match="cfg.json: config field"):
        configs.load(cfg)
    # rope_theta = 1 with YaRN scaling divided by log(1) (ZeroDivisionError)
    import json
    with open(configs.builtin_path("deepseek-v2-lite")) as f:
        hf = json.load(f)
    assert hf["rope_scaling"]["type"] == "yarn"
    cfg.write_text(json.dumps(dict(hf, rope_theta=1)))
    with pytest.raises(ValueError, match="cfg.json: .*rope_theta"):
        configs.load(cfg)
    csv = tmp_path / "r.csv"
    csv.write_text("test,model\ntg\n")
    with pytest.raises(ValueError, match=r"r.csv: line 2: 1 cells where the header has 2"):
        records.read_records(csv)
    csv.write_bytes(b"test,model\ntg,a\rb\n")  # a bare CR inside an unquoted cell: csv.Error
    with pytest.raises(ValueError, match=r"r.csv: line \d+: not valid CSV"):
        records.read_records(csv)


def test_sizes_past_64_bits_are_errors(fz):
    """UndefinedBehaviorSanitizer under the fuzzer (bench/fuzz/run_asan.sh with FUZZ_UBSAN=1,
    2026-12-03) found sizes multiplied into byte counts before any check could see them: huge n / k /
    f / v_head_dim / head_dim / layer-spec integers overflowed int64 (undefined behaviour; in practice
    a wrapped count compared against the arrays). Each is a clear ValueError now."""
    import numpy as np
    from glmbench.core._loader import _core
    from glmbench.core.kvcache import KVCache
    big = 2**62  # a multiple of 32 and of 256: only the products are wrong
    x = np.zeros((1, 256), np.float32)
    p0 = _core.qrepack(_core.quantize(np.zeros((16, 256), np.float32), 9), 9, 256)
    too_large = "too large"
    with pytest.raises(ValueError, match=too_large):
        _core.qgemm(x, p0, 9, big, 256)                   # packed bytes of n x k (qgemm.c)
    with pytest.raises(ValueError, match=too_large):
        _core.qunpack(p0, 9, 256, big)
    pk = _core.krepack(np.zeros((16, 144), np.uint8), 12, 256, 16)  # q4_K: 144 bytes per 256 values
    with pytest.raises(ValueError, match=too_large):
        _core.klinear_packed(x, pk.reshape(-1), 12, big, 256)      # gb_kp_bytes
    idx, wt = np.zeros((1, 1), np.int64), np.ones((1, 1), np.float32)
    m = np.zeros((1, 144), np.uint8)
    with pytest.raises(ValueError, match=too_large):                # f x the row bytes (kmoe)
        _core.kmoe(x, idx, wt, m, m, m, 12, 12, 12, big)
    c = KVCache.mla(1, 8, 32, 32, kv="f16")
    c.fill_synthetic(4)
    q = np.zeros((1, 2, 16), np.float32)
    with pytest.raises(ValueError, match=too_large):               # heads x (Dn + v_head_dim)
        _core.mla_attention(q, np.zeros((1, 2, 32), np.float32), c, 0, np.zeros((4, 32), np.float32), big)
    for kv, hd in (("f32", big), ("f16", 2**61)):                  # a row, then one block of rows
        with pytest.raises(ValueError, match=too_large):
            KVCache.gqa(1, 8, 4, hd, kv=kv)
    spec = dict(next(sp for _, sp in fz._layer_specs() if "Hkv" in sp))  # a real GQA spec, one size absurd
    spec["Dv"] = big
    with pytest.raises(ValueError, match="out of range"):
        _core.layer_plan(spec)


def test_activation_quantizer_is_defined_on_subnormal_rows():
    """UBSan's float-cast-overflow under the fuzzer (2026-12-03): a q8_K row whose largest magnitude
    is subnormal has -127 / max = -inf, so the products are -inf and NaN (0 x inf) before the cast
    to an integer, which C leaves undefined. Now gb_f2i defines it as x86 always computed it: the
    block quantizes to zeros with a scale of -0.0 (no NaN or garbage reaches the dot products)."""
    import numpy as np
    from glmbench.core._loader import _core
    x = np.zeros((2, 256), np.float32)
    x[0, 5], x[0, 9] = 1e-45, -7e-46
    x[1, :] = np.linspace(-1, 1, 256, dtype=np.float32)  # a normal row beside it
    r = _core.quantize_q8_K(x)
    d0 = r[0, :4].view(np.float32)[0]
    assert d0 == 0.0 and np.signbit(d0) and not r[0, 4:].any()
    d1 = r[1, :4].view(np.float32)[0]
    q1 = r[1, 4:260].view(np.int8)
    assert d1 > 0 and np.abs(q1.astype(np.float32) * d1 - x[1]).max() <= d1 / 2 + 1e-7

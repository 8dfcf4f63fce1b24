"""glmbench._cuda and glmbench.cuda: build and import checks that run anywhere, and numeric
checks against glmbench.reference that run only where a CUDA device answers (they skip with
the reason otherwise). The full validation and timing on a GPU is bench/gpu_check.sh."""
import os
import subprocess
import sys

import numpy as np
import pytest

import glmbench
from glmbench import cuda
from glmbench import reference as ref

EXPECTED = [
    "device_count", "device_info", "mem_info", "have_cublas", "malloc", "free", "upload", "download", "copy",
    "copy_bench", "fill_u16", "fill_u32", "random_bf16", "synchronize", "event_create", "event_destroy",
    "event_record", "event_elapsed", "capture_begin", "capture_end", "graph_launch", "graph_destroy",
    "rms_norm", "rope", "linear", "silu_mul", "add", "moe_route", "moe_max_tiles", "moe_permute", "moe_gather",
    "moe_grouped_linear", "moe_unpermute", "paged_append", "paged_gather", "gqa_workspace_bytes", "gqa_plan",
    "gqa_attention", "mla_workspace_bytes", "mla_plan", "mla_absorbed_attention", "mla_absorb_q", "mla_absorb_o",
    "mla_split_kv", "concat_heads",
]

needs_ext = pytest.mark.skipif(not glmbench.HAS_CUDA, reason="glmbench._cuda not built (no nvcc at build time)")
GPU = cuda.available()
needs_gpu = pytest.mark.skipif(not GPU, reason="no CUDA device here; bench/gpu_check.sh validates on a GPU")


@needs_ext
def test_extension_has_every_function():
    from glmbench import _cuda
    missing = [f for f in EXPECTED if not callable(getattr(_cuda, f, None))]
    assert missing == []
    assert isinstance(_cuda.have_cublas(), bool)


@needs_ext
def test_pure_size_helpers_need_no_device():
    from glmbench import _cuda
    # 64 rows per tile: 100 rows over 8 experts need at most ceil(100/64) + 8 tiles
    assert _cuda.moe_max_tiles(100, 8) == 2 + 8
    # partials are (Dv accumulators + m + l) floats per (token, head, split)
    assert _cuda.gqa_workspace_bytes(2, 4, 128, 3) == 2 * 4 * 3 * 130 * 4
    assert _cuda.mla_workspace_bytes(1, 20, 512, 8) == 20 * 8 * 514 * 4
    v, s = _cuda.gqa_plan(1, 32768, 64, 8, 128, 128, 0)
    assert v == 3 and 1 <= s <= 64          # decode takes the tensor-core group-shared kernel
    v, s = _cuda.gqa_plan(1, 32768, 64, 8, 120, 120, 0)
    assert v == 1                           # a head dim the tensor-core tiles do not cover
    v, s = _cuda.gqa_plan(512, 512, 64, 8, 128, 128, 0)
    assert v == 1 and s == 1                # prefill: flash tiles, enough blocks without splits
    assert _cuda.mla_plan(1, 32768, 20) == 64
    assert _cuda.mla_plan(1, 100, 20) == 1  # under 4 tiles of 32 rows: one split


@needs_ext
def test_bad_sizes_are_value_errors_before_any_device_call():
    from glmbench import _cuda
    with pytest.raises(ValueError, match=r"`dim` must be > 0, got 0"):
        _cuda.rms_norm(0, 0, 0, 1, 0, 1e-5, 0)
    with pytest.raises(ValueError, match=r"`rot_dim` must be even"):
        _cuda.rope(0, 0, 0, 1, 1, 64, 1e4, 63, 0, 0, 0)
    with pytest.raises(ValueError, match=r"`q_heads`=20 is not a multiple of `kv_heads`=8"):
        _cuda.gqa_attention(0, 0, 0, 0, 64, 0, 1, 10, 20, 8, 128, 128, 1.0, 0, 0, 0, 0)
    with pytest.raises(ValueError, match=r"`top_k`=9 must be in 1..min\(E=8"):
        _cuda.moe_route(0, 0, 0, 0, 0, 1, 16, 8, 9, 0, 1, 1, 1, 1.0, 0, 0)
    with pytest.raises(ValueError, match=r"`n_group`=3 must divide E=8"):
        _cuda.moe_route(0, 0, 0, 0, 0, 1, 16, 8, 2, 0, 3, 1, 1, 1.0, 0, 0)
    with pytest.raises(ValueError, match=r"`version` must be 0..4, got 7"):
        _cuda.linear(0, 0, 0, 0, 1, 8, 8, 7)
    with pytest.raises(ValueError, match=r"columns \[60, 70\) do not fit a row of 64"):
        _cuda.paged_append(0, 0, 16, 64, 60, 0, 10, 1, 0)


@needs_ext
@pytest.mark.skipif(GPU, reason="checks the behaviour without a device")
def test_without_a_device_every_call_raises_the_cuda_error():
    from glmbench import _cuda
    calls = [
        lambda: _cuda.device_count(),
        lambda: _cuda.malloc(1024),
        lambda: _cuda.mem_info(),
        lambda: _cuda.synchronize(),
        lambda: _cuda.rms_norm(0, 0, 0, 4, 64, 1e-5, 0),
        lambda: _cuda.linear(0, 0, 0, 0, 1, 64, 64, 0),
        lambda: _cuda.gqa_attention(0, 0, 0, 0, 64, 0, 1, 10, 16, 8, 128, 128, 1.0, 0, 0, 0, 0),
        lambda: _cuda.capture_begin(),
    ]
    for call in calls:
        with pytest.raises(RuntimeError, match=r"CUDA error \d+ \(cuda\w+\): .+, in \w+"):
            call()
    assert cuda.available() is False


@needs_ext
@pytest.mark.skipif(GPU, reason="checks the behaviour without a device")
def test_python_wrappers_raise_runtime_error_without_a_device():
    with pytest.raises(RuntimeError, match=r"CUDA error"):
        cuda.to_device(np.ones((2, 8), np.float32))
    with pytest.raises(RuntimeError, match=r"CUDA error"):
        cuda.empty((4, 4))
    with pytest.raises(RuntimeError, match=r"CUDA error"):
        cuda.device_info()


def test_wrappers_check_types_before_touching_the_device():
    with pytest.raises(TypeError, match=r"`x` must be a glmbench.cuda.DeviceArray, got ndarray"):
        cuda.rms_norm(np.ones((2, 4), np.float32), np.ones(4, np.float32))
    with pytest.raises(TypeError, match=r"`q` must be a glmbench.cuda.DeviceArray, got list"):
        cuda.gqa_attention([1], None, 0)


def test_bf16_conversion_matches_the_reference_rounding():
    rng = np.random.default_rng(0)
    x = np.concatenate([rng.standard_normal(1000).astype(np.float32) * 100,
                        np.array([0.0, -0.0, np.inf, -np.inf, np.nan, 1 + 2 ** -8, 1 + 3 * 2 ** -8], np.float32)])
    b = cuda.f32_to_bf16(x)
    np.testing.assert_array_equal(b, ref.to_bf16(x))
    back = cuda.bf16_to_f32(b)
    finite = np.isfinite(x)
    # bf16 keeps 8 significant bits: half an ulp is at most 2^-8 of |x|
    assert np.all(np.abs(back[finite] - x[finite]) <= np.abs(x[finite]) * 2.0 ** -8)
    assert np.isnan(back[~np.isfinite(x) & np.isnan(x)]).all()


@pytest.mark.skipif(not glmbench.HAS_CUDA, reason="glmbench._cuda not built")
def test_import_in_a_fresh_process_does_not_touch_the_device():
    # Importing must succeed on a machine without a driver (CI): the device is opened lazily.
    r = subprocess.run([sys.executable, "-c", "import glmbench, glmbench.cuda; print(glmbench.HAS_CUDA)"],
                       capture_output=True, text=True, timeout=120, env=dict(os.environ))
    assert r.returncode == 0, r.stderr
    assert r.stdout.strip() == "True"


# ---- numeric checks on a device (skipped here) ---------------------------------------------
def _bf(rng, *shape, scale=1.0):
    """Random data already on the bf16 grid, as float32 (so the reference sees the same inputs)."""
    return cuda.bf16_to_f32(cuda.f32_to_bf16(rng.standard_normal(shape).astype(np.float32) * scale))


def _rel(out, want):
    return float(np.linalg.norm(out - want) / np.linalg.norm(want))


@needs_gpu
@pytest.mark.parametrize("version", [1, 2])
def test_gpu_rms_norm(rng, version):
    x, w = _bf(rng, 7, 2048), _bf(rng, 2048)
    y = cuda.rms_norm(cuda.to_device(x), cuda.to_device(w), 1e-5, version=version).to_numpy()
    # bf16 output: one rounding, 2^-9 relative per element
    assert _rel(y, ref.rms_norm(x, w, 1e-5)) < 4e-3


@needs_gpu
@pytest.mark.parametrize("version", [1, 2, 3, 4])
def test_gpu_linear(rng, version):
    if version == 4 and not cuda.have_cublas():
        pytest.skip("built without cuBLAS")
    T = 3 if version == 2 else 70
    x, w, b = _bf(rng, T, 256), _bf(rng, 96, 256, scale=0.06), _bf(rng, 96)
    y = cuda.linear(cuda.to_device(x), cuda.to_device(w), cuda.to_device(b), version=version).to_numpy()
    assert _rel(y, ref.linear(x, w, b)) < 4e-3


@needs_gpu
def test_gpu_gqa_decode_over_a_shuffled_poisoned_cache(rng):
    Hq, Hkv, D, L = 16, 4, 128, 300
    k, v, q = _bf(rng, L, Hkv, D), _bf(rng, L, Hkv, D), _bf(rng, 1, Hq, D)
    cache = cuda.PagedCache.gqa(1, 512, Hkv, D, block_size=64, poison=True, shuffle_seed=3)
    cache.append(0, cuda.to_device(k), cuda.to_device(v))
    for version in (1, 2, 3):
        out = cuda.gqa_attention(cuda.to_device(q), cache, 0, version=version).to_numpy()
        assert np.isfinite(out).all()   # a NaN here means a read past the 300 cached tokens
        assert _rel(out, ref.gqa_attention(q, k, v)) < 1e-2


# ---- the Python side on a CPU emulator of glmbench._cuda ---------------------------------
# tests/cuda_emulator.py runs each op as glmbench.reference on the same bf16 bits: these tests
# check the wrappers (addresses, offsets, sizes, order), capture/replay and CudaModel's wiring,
# NOT the CUDA kernels (those are checked by the GPU tests above and bench/gpu_check.sh).
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))


@pytest.fixture
def emu():
    import cuda_emulator
    restore = cuda_emulator.install()
    yield cuda._C
    cuda.set_poison(False)
    restore()


def _tiny(kind):
    import cuda_emulator
    return cuda_emulator.tiny_config(kind)


def test_emulated_ops_match_the_reference(emu, rng):
    cuda.set_poison(True)
    x, w = _bf(rng, 5, 64), _bf(rng, 64)
    np.testing.assert_allclose(cuda.rms_norm(cuda.to_device(x), cuda.to_device(w)).to_numpy(),
                               ref.rms_norm(x, w), rtol=1e-2, atol=1e-2)
    W, b = _bf(rng, 24, 64), _bf(rng, 24)
    y = cuda.linear(cuda.to_device(x[0]), cuda.to_device(W), cuda.to_device(b))
    assert y.shape == (24,)
    np.testing.assert_allclose(y.to_numpy(), ref.linear(x[:1], W, b)[0], rtol=1e-2, atol=1e-2)
    # MoE: the permute / grouped GEMM / un-permute plumbing against the dense reference
    E, F, k = 6, 16, 2
    g, u, d = _bf(rng, E, F, 64, scale=0.2), _bf(rng, E, F, 64, scale=0.2), _bf(rng, E, 64, F, scale=0.2)
    wr = rng.standard_normal((E, 64)).astype(np.float32)
    y, counts = cuda.moe(cuda.to_device(x), cuda.to_device(wr, "f32"), *(cuda.to_device(a) for a in (g, u, d)),
                         top_k=k, scoring="softmax")
    want, want_counts = ref.moe(x, wr, g, u, d, top_k=k, scoring="softmax")
    np.testing.assert_array_equal(counts.to_numpy(), want_counts)
    assert _rel(y.to_numpy(), want) < 2e-2


def test_emulated_paged_cache_and_attention_strategies(emu, rng):
    cuda.set_poison(True)
    # GQA over a shuffled, poisoned, multi-layer cache: the layer offsets must be right
    cache = cuda.PagedCache.gqa(3, 200, 2, 16, block_size=16, shuffle_seed=5)
    k, v, q = _bf(rng, 37, 2, 16), _bf(rng, 37, 2, 16), _bf(rng, 3, 8, 16)
    cache.append(2, cuda.to_device(k[:20]), cuda.to_device(v[:20]))
    cache.append(2, cuda.to_device(k[20:]), cuda.to_device(v[20:]))
    rk, rv = cache.read(2)
    np.testing.assert_array_equal(rk, k)
    np.testing.assert_array_equal(rv, v)
    assert cache.length(0) == 0 and cache.length(2) == 37
    out = cuda.gqa_attention(cuda.to_device(q), cache, 2).to_numpy()
    assert _rel(out, ref.gqa_attention(q, k, v)) < 1e-2
    with pytest.raises(ValueError, match=r"KV cache full: layer 2 holds 37 of 208 tokens, cannot append 200"):
        cache.append(2, cuda.to_device(_bf(rng, 200, 2, 16)), cuda.to_device(_bf(rng, 200, 2, 16)))
    # MLA: the three strategies agree with the definition
    H, Dn, Dr, Dv, R, L, T = 4, 16, 8, 24, 32, 50, 3
    lat, kr = _bf(rng, L, R), _bf(rng, L, Dr)
    kvb, qn, qr = _bf(rng, H * (Dn + Dv), R, scale=0.2), _bf(rng, T, H, Dn), _bf(rng, T, H, Dr)
    mc = cuda.PagedCache.mla(2, 64, R, Dr, block_size=16, shuffle_seed=1)
    mc.append(1, cuda.to_device(lat), cuda.to_device(kr))
    want = ref.mla_attention(qn, qr, lat, kr, kvb, Dv)
    for strat in cuda.MLA_STRATEGIES:
        out = cuda.mla_attention(cuda.to_device(qn), cuda.to_device(qr), mc, 1, cuda.to_device(kvb), v_head_dim=Dv,
                                 strategy=strat).to_numpy()
        assert _rel(out, want) < 2e-2, strat


def test_emulated_capture_replays_and_never_touches_the_host(emu, rng):
    x, w = _bf(rng, 4, 32), _bf(rng, 32)
    dx, dw = cuda.to_device(x), cuda.to_device(w)
    g = cuda.capture(lambda: cuda.rms_norm(cuda.add(dx, dx), dw))
    emu.upload(dx.ptr, cuda.f32_to_bf16(x * 0.5))     # new input between replays
    g.launch()
    np.testing.assert_allclose(g.result.to_numpy(), ref.rms_norm(x, w), rtol=1e-2, atol=1e-2)
    with pytest.raises(RuntimeError, match="operation not permitted when stream is capturing"):
        cuda.capture(lambda: cuda.to_device(x))
    t = cuda.time_ms(g, warmup=1, iters=2, repeats=2)
    assert t["median_ms"] >= 0 and t["iters"] == 2


@pytest.mark.parametrize("kind", ["glm", "qwen"])
def test_emulated_cuda_model_matches_the_c_core_model(emu, kind):
    """CudaModel's layer wiring (MLA/GQA blocks, dense and MoE MLPs, shared expert, caches) against
    glmbench.Model on the same weights; the emulator rounds every op's output to bf16 as the GPU
    does, the C core keeps float32, so they agree to bf16 accuracy, not bit for bit."""
    cfg = _tiny(kind)
    m = cuda.CudaModel(cfg, max_context=64, seed=3)
    m.pin_routing()
    cpu = glmbench.model.Model(cfg, weights=m.host_weights(), weight_format="bf16", kv_dtype="f32", max_context=64)
    toks = [5, 17, 3, 88, 41]
    got = m.prefill(toks).to_numpy()
    want = cpu.prefill(np.array(toks))
    assert got.shape == (5, cfg.vocab_size)
    assert _rel(got, want) < 5e-2
    got = m.decode(7).to_numpy()[0]
    want = cpu.decode(7)
    assert _rel(got, want) < 5e-2
    # the unfused path (separate split/norm/rope/append, unfused SwiGLU) computes the same model
    u = cuda.CudaModel(cfg, max_context=64, seed=3, fused=False)
    u.pin_routing()
    m.reset()
    assert _rel(u.prefill(toks).to_numpy(), m.prefill(toks).to_numpy()) < 5e-2
    # a decode step at depth as a graph: replays give the same logits, the cache stays at depth + 1
    g = m.decode_graph(20)
    first = g.result.to_numpy()
    g.launch()
    np.testing.assert_array_equal(g.result.to_numpy(), first)
    assert m.cache.length(0) == 21
    gp = m.prefill_graph(6, 10)
    assert gp.result.shape == (6, cfg.vocab_size) and np.isfinite(gp.result.to_numpy()).all()


def test_cli_measure_device_cuda(emu, tmp_path, capsys):
    """`glmbench measure --device cuda` on the emulator: the GPU records (tg, pp, mem) with the
    same fields as the CPU path; evidence=measured is what a real card would write (the emulator's
    device name says what it was)."""
    import json
    from glmbench import cli
    cfg = _tiny("glm")
    path = tmp_path / "tiny.json"
    path.write_text(json.dumps({k: v for k, v in cfg.hf.items() if not k.startswith("_")}))
    out = tmp_path / "r.json"
    assert cli.main(["measure", str(path), "--device", "cuda", "--depths", "16", "--n-prompt", "8", "--repeats", "1",
                     "--out", str(out), "--json", "-q"]) == 0
    recs = json.loads(capsys.readouterr().out)
    assert sorted(r["test"] for r in recs) == ["mem", "pp", "tg"]
    tg = next(r for r in recs if r["test"] == "tg")
    assert tg["device"] == "GPU: CPU emulator" and tg["n_depth"] == 16 and tg["avg_ts"] > 0
    assert out.exists()
    assert cli.main(["measure", str(path), "--device", "cuda", "--kv", "q8_0", "-q"]) != 0


@pytest.mark.skipif(GPU, reason="checks the behaviour without a device")
def test_cli_measure_device_cuda_without_a_device(capsys):
    from glmbench import cli
    assert cli.main(["measure", "qwen3-32b", "--device", "cuda", "-q"]) != 0
    assert "no CUDA device" in capsys.readouterr().err

"""glmbench.cuda._cuda and glmbench.cuda: build and import checks that run anywhere, and numeric
checks against glmbench.core.reference that run only where a CUDA device answers (they skip with
the reason otherwise). The full validation and timing on a GPU is bench/gpu_check.sh."""
import os
import subprocess
import sys

import numpy as np
import pytest

import glmbench
from glmbench import cuda
from glmbench.core import reference as ref

EXPECTED = [
    "device_count", "device_info", "mem_info", "have_cublas", "malloc", "free", "upload", "download", "copy",
    "copy_bench", "fill_u16", "fill_u32", "random_bf16", "synchronize", "event_create", "event_destroy",
    "event_record", "event_elapsed", "capture_begin", "capture_end", "graph_launch", "graph_destroy",
    "rms_norm", "rope", "linear", "silu_mul", "add", "moe_route", "moe_max_tiles", "moe_permute", "moe_gather",
    "moe_grouped_linear", "moe_unpermute", "paged_append", "paged_gather", "gqa_workspace_bytes", "gqa_plan",
    "gqa_attention", "mla_workspace_bytes", "mla_plan", "mla_absorbed_attention", "mla_absorb_q", "mla_absorb_o",
    "mla_split_kv", "concat_heads", "attention_combine",
]

needs_ext = pytest.mark.skipif(not glmbench.HAS_CUDA, reason="glmbench.cuda._cuda not built (no nvcc at build time)")
GPU = cuda.available()
needs_gpu = pytest.mark.skipif(not GPU, reason="no CUDA device here; bench/gpu_check.sh validates on a GPU")


@needs_ext
def test_extension_has_every_function():
    from glmbench.cuda import _cuda
    missing = [f for f in EXPECTED if not callable(getattr(_cuda, f, None))]
    assert missing == []
    assert isinstance(_cuda.have_cublas(), bool)


@needs_ext
def test_pure_size_helpers_need_no_device():
    from glmbench.cuda import _cuda
    # 64 rows per tile: 100 rows over 8 experts need at most ceil(100/64) + 8 tiles
    assert _cuda.moe_max_tiles(100, 8) == 2 + 8
    # partials are (Dv accumulators + m + l) floats per (token, head, split)
    assert _cuda.gqa_workspace_bytes(2, 4, 128, 3) == 2 * 4 * 3 * 130 * 4
    assert _cuda.mla_workspace_bytes(1, 20, 512, 8) == 20 * 8 * 514 * 4
    v, s = _cuda.gqa_plan(1, 32768, 64, 8, 128, 128, 0)
    assert v == 5 and s == 396 // 8         # decode: the pipelined tensor-core kernel, ~3 blocks per SM
    v, s = _cuda.gqa_plan(1, 32768, 16, 8, 256, 256, 0)
    assert v == 3 and s == 264 // 8         # head dims past kernel 5's 128: kernel 3, ~2 blocks per SM
    v, s = _cuda.gqa_plan(1, 32768, 64, 8, 120, 120, 0)
    assert v == 1                           # a head dim the tensor-core tiles do not cover
    v, s = _cuda.gqa_plan(512, 512, 64, 8, 128, 128, 0)
    assert v == 4 and s == 1                # prefill: tensor-core flash tiles, no split-K
    v, s = _cuda.gqa_plan(512, 512, 16, 16, 256, 256, 0)
    assert v == 1 and s == 1                # head dims past kernel 4's 128: CUDA-core flash tiles
    assert _cuda.mla_plan(1, 32768, 20) == 132  # one block per SM of a 132-SM card
    assert _cuda.mla_plan(1, 100, 20) == 1  # under 4 tiles of 32 rows: one split


@needs_ext
def test_bad_sizes_are_value_errors_before_any_device_call():
    from glmbench.cuda import _cuda
    with pytest.raises(ValueError, match=r"`dim` must be > 0, got 0"):
        _cuda.rms_norm(0, 0, 0, 1, 0, 1e-5, 0)
    with pytest.raises(ValueError, match=r"`rot_dim` must be even"):
        _cuda.rope(0, 0, 0, 1, 1, 64, 1e4, 63, 0, 0, 0)
    with pytest.raises(ValueError, match=r"`q_heads`=20 is not a multiple of `kv_heads`=8"):
        _cuda.gqa_attention(0, 0, 0, 0, 64, 0, 1, 10, 20, 8, 128, 128, 1.0, 0, 0, 0, 0)
    with pytest.raises(ValueError, match=r"`top_k`=9 must be in 1..min\(E=8"):
        _cuda.moe_route(0, 0, 0, 0, 0, 1, 16, 8, 9, 0, 1, 1, 0, 1, 1.0, 0, 0)
    with pytest.raises(ValueError, match=r"`n_group`=3 must divide E=8"):
        _cuda.moe_route(0, 0, 0, 0, 0, 1, 16, 8, 2, 0, 3, 1, 0, 1, 1.0, 0, 0)
    with pytest.raises(ValueError, match=r"`group_score` must be 0 \(top2_sum\) or 1 \(max\), got 2"):
        _cuda.moe_route(0, 0, 0, 0, 0, 1, 16, 8, 2, 1, 4, 2, 2, 1, 1.0, 0, 0)
    with pytest.raises(ValueError, match=r"`group_score`=1 \(max\) goes with scoring=1 \(softmax"):
        _cuda.moe_route(0, 0, 0, 0, 0, 1, 16, 8, 2, 0, 4, 2, 1, 1, 1.0, 0, 0)
    with pytest.raises(ValueError, match=r"`group_score`=0 \(top2_sum\) goes with scoring=0 \(sigmoid"):
        _cuda.moe_route(0, 0, 0, 0, 0, 1, 16, 8, 2, 1, 1, 1, 0, 1, 1.0, 0, 0)  # n_group 1 too, as the CPU
    with pytest.raises(ValueError, match=r"`version` must be 0..4, got 7"):
        _cuda.linear(0, 0, 0, 0, 1, 8, 8, 7)
    with pytest.raises(ValueError, match=r"columns \[60, 70\) do not fit a row of 64"):
        _cuda.paged_append(0, 0, 16, 64, 60, 0, 10, 1, 0)
    with pytest.raises(ValueError, match=r"attention_combine: `version` must be 0..2, got 3"):
        _cuda.attention_combine(0, 0, 20, 32, 512, 3)
    with pytest.raises(ValueError, match=r"attention_combine version 2 takes S <= 256 splits, got 300"):
        _cuda.attention_combine(0, 0, 20, 300, 512, 2)
    with pytest.raises(ValueError, match=r"need rows, S, Dv > 0"):
        _cuda.attention_combine(0, 0, 0, 32, 512, 0)
    with pytest.raises(ValueError, match=r"mla_absorb_q: `version` must be 0..2, got 5"):
        _cuda.mla_absorb_q(0, 0, 0, 1, 20, 192, 256, 512, 5)
    with pytest.raises(ValueError, match=r"mla_absorb_q version 2 needs kv_lora_rank % 64 == 0"):
        _cuda.mla_absorb_q(0, 0, 0, 1, 4, 16, 16, 96, 2)


@needs_ext
@pytest.mark.skipif(GPU, reason="checks the behaviour without a device")
def test_without_a_device_every_call_raises_the_cuda_error():
    from glmbench.cuda import _cuda
    calls = [
        lambda: _cuda.device_count(),
        lambda: _cuda.malloc(1024),
        lambda: _cuda.mem_info(),
        lambda: _cuda.synchronize(),
        lambda: _cuda.rms_norm(0, 0, 0, 4, 64, 1e-5, 0),
        lambda: _cuda.linear(0, 0, 0, 0, 1, 64, 64, 0),
        lambda: _cuda.gqa_attention(0, 0, 0, 0, 64, 0, 1, 10, 16, 8, 128, 128, 1.0, 0, 0, 0, 0),
        lambda: _cuda.attention_combine(0, 0, 20, 32, 512, 0),
        lambda: _cuda.mla_absorb_q(0, 0, 0, 1, 20, 192, 256, 512),
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


@pytest.mark.skipif(not glmbench.HAS_CUDA, reason="glmbench.cuda._cuda not built")
def test_import_in_a_fresh_process_does_not_touch_the_device(tmp_path):
    # Importing must succeed on a machine without a driver (CI): the device is opened lazily.
    # (cwd elsewhere, so the installed package is imported, not the source tree.)
    r = subprocess.run([sys.executable, "-c", "import glmbench, glmbench.cuda; print(glmbench.HAS_CUDA)"],
                       capture_output=True, text=True, timeout=120, env=dict(os.environ), cwd=tmp_path)
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
    for version in (1, 2, 3, 5):
        out = cuda.gqa_attention(cuda.to_device(q), cache, 0, version=version).to_numpy()
        assert np.isfinite(out).all()   # a NaN here means a read past the 300 cached tokens
        assert _rel(out, ref.gqa_attention(q, k, v)) < 1e-2


# ---- the Python side on a CPU emulator of glmbench.cuda._cuda ---------------------------------
# tests/cuda_emulator.py runs each op as glmbench.core.reference on the same bf16 bits: these tests
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


def test_prefer_steers_gqa_decode_only(emu, rng, monkeypatch):
    # gpu_check falls back with cuda.prefer("gqa", v) when a decode kernel fails validation; the
    # decode kernels take T <= 4, so prefill must keep the launcher's own choice
    import cuda_emulator
    seen = []
    orig = cuda_emulator.Emulator._gqa_attention

    def spy(self, *a):
        seen.append((a[6], a[-1]))  # (T, version)
        return orig(self, *a)
    monkeypatch.setattr(cuda_emulator.Emulator, "_gqa_attention", spy)
    Hq, Hkv, D, L = 8, 2, 64, 40
    k, v = _bf(rng, L, Hkv, D), _bf(rng, L, Hkv, D)
    cache = cuda.PagedCache.gqa(1, 64, Hkv, D, block_size=16)
    cache.append(0, cuda.to_device(k), cuda.to_device(v))
    cuda.prefer("gqa", 2)
    try:
        for T in (1, 20):
            q = _bf(rng, T, Hq, D)
            out = cuda.gqa_attention(cuda.to_device(q), cache, 0).to_numpy()
            np.testing.assert_allclose(out, ref.gqa_attention(q, k, v), rtol=2e-2, atol=2e-2)
    finally:
        cuda.prefer("gqa", 0)
    assert seen == [(1, 2), (20, 4)]  # decode: the preferred kernel; prefill: the launcher's kernel 4


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


def test_emulated_route_group_limited_greedy(emu, rng):
    """DeepSeek-V2's group_limited_greedy (softmax, groups scored by their max) reaches the router
    with its rule: 16 experts in 4 groups of 4, 2 groups kept, top-3 (top_k > topk_group, else the
    max rule never changes the choice), on tokens where the limit really changes the experts."""
    E, D, T, k = 16, 64, 40, 3
    x, wr = _bf(rng, T, D), (rng.standard_normal((E, D)) * 0.5).astype(np.float32)
    dx, dwr = cuda.to_device(x), cuda.to_device(wr, "f32")
    kw = dict(top_k=k, scoring="softmax", n_group=4, topk_group=2)
    for extra in (dict(), dict(group_score="max"), dict(norm_topk_prob=False, routed_scaling_factor=16.0)):
        idx, w = cuda.moe_route(dx, dwr, **kw, **extra)
        ridx, rw = ref.moe_route(x, wr, **kw, **extra)
        np.testing.assert_array_equal(idx.to_numpy(), ridx)
        np.testing.assert_allclose(w.to_numpy(), rw, rtol=1e-6)
    plain, _ = ref.moe_route(x, wr, top_k=k, scoring="softmax")
    top2, _ = ref.moe_route(x, wr, top_k=k, scoring="sigmoid", n_group=4, topk_group=2)
    assert np.any(np.sort(ridx, 1) != np.sort(plain, 1), axis=1).sum() > 0  # the group limit changed some
    with pytest.raises(ValueError, match=r"`group_score`='max' does not go with scoring='sigmoid'"):
        cuda.moe_route(dx, dwr, top_k=3, n_group=4, topk_group=2, group_score="max")
    with pytest.raises(ValueError, match=r"`group_score`='top2_sum' does not go with scoring='softmax'"):
        cuda.moe_route(dx, dwr, top_k=3, scoring="softmax", n_group=4, topk_group=2, group_score="top2_sum")
    with pytest.raises(ValueError, match=r"`group_score` must be 'top2_sum', 'max' or None, got 'min'"):
        cuda.moe_route(dx, dwr, top_k=3, group_score="min")
    idx, _ = cuda.moe_route(dx, dwr, top_k=3, n_group=4, topk_group=2)  # sigmoid: top-2 sum, as before
    np.testing.assert_array_equal(idx.to_numpy(), top2)
    idx, _ = cuda.moe_route(dx, dwr, top_k=3, scoring="softmax", group_score="max")  # n_group 1: plain top-k
    np.testing.assert_array_equal(idx.to_numpy(), plain)


def test_emulated_cuda_model_routes_by_route_groups(emu, monkeypatch):
    """CudaModel routes a deepseek_v2 group_limited_greedy layer as model.route_groups says (and as
    the CPU Layer does): max-scored groups, n_group/topk_group from the config, no renormalisation."""
    from glmbench.models import configs
    hf = {k: v for k, v in configs.load("deepseek-v2-lite").hf.items() if not k.startswith("_")}
    hf.update(vocab_size=97, hidden_size=64, intermediate_size=96, moe_intermediate_size=32, num_hidden_layers=2,
              num_attention_heads=4, num_key_value_heads=4, kv_lora_rank=32, qk_nope_head_dim=16,
              qk_rope_head_dim=8, v_head_dim=16, n_routed_experts=8, num_experts_per_tok=3, rope_scaling=None,
              topk_method="group_limited_greedy", n_group=4, topk_group=2, routed_scaling_factor=16.0)
    cfg = configs.load(hf)
    seen = []
    route = cuda.moe_route
    monkeypatch.setattr(cuda, "moe_route", lambda *a, **kw: seen.append(kw) or route(*a, **kw))
    m = cuda.CudaModel(cfg, max_context=16, seed=3)
    logits = m.prefill([5, 17, 3]).to_numpy()
    assert np.isfinite(logits).all()
    assert len(seen) == 1  # first_k_dense_replace=1: the second layer is the MoE one
    assert {k: seen[0][k] for k in ("scoring", "n_group", "topk_group", "group_score", "norm_topk_prob",
                                    "routed_scaling_factor")} == dict(
        scoring="softmax", n_group=4, topk_group=2, group_score="max", norm_topk_prob=False,
        routed_scaling_factor=16.0)


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
    from glmbench.models.model import Model
    cpu = Model(cfg, state_dict=m.host_weights(), weights="bf16", kv="f32", max_context=64)
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
    # --out resumes: a rerun builds nothing and prints the stored records
    orig = cuda.CudaModel.__init__
    cuda.CudaModel.__init__ = _boom
    try:
        assert cli.main(["measure", str(path), "--device", "cuda", "--depths", "16", "--n-prompt", "8",
                         "--repeats", "1", "--out", str(out), "--json", "-q"]) == 0
    finally:
        cuda.CudaModel.__init__ = orig
    assert json.loads(capsys.readouterr().out) == recs
    assert cli.main(["measure", str(path), "--device", "cuda", "--kv", "q8_0", "-q"]) != 0


def _boom(*a, **k):
    raise AssertionError("a finished point was measured again")


# What only the CPU backend records: its threads, how its layers run, the per-layer split of a
# step, the process's RSS and the C kernels' workspace ledger.
CPU_ONLY = {"cpu_info", "n_threads", "warmup", "warmup_runs", "attn_arithmetic", "gemm_arithmetic", "layer_exec", "embed_ms", "head_ms",
            *(f"{f}_{k}" for f in ("layer_ms", "layer_spread", "layers_timed") for k in ("dense", "moe")),
            "rss_bytes", "rss_peak_bytes", "other_rss_bytes", "workspace_bytes_peak", "workspace_n_prompt",
            # the stability signals only a CPU run has (the CUDA backend judges the spread alone)
            "cpu_share", "probe_gbs_before", "probe_gbs_after", "probe_noise", "probe_drift_limit",
            "probe_buffer_bytes"}


@pytest.mark.parametrize("kind", ["glm", "qwen"])
@pytest.mark.slow
def test_emulated_measure_cuda_records_match_the_cpu_backend(emu, kind, tmp_path, monkeypatch):
    """glmbench.measure.cuda.measure (through measure(device="cuda")) on the emulator: the same
    points in the same order as the CPU backend, the same point keys, every field the CPU record
    has but its CPU-only ones, with the same values where they describe the model; and resume."""
    import json
    from glmbench import measure as M
    from glmbench import vocab
    from glmbench.results import records
    cfg = _tiny(kind)
    kw = dict(depths=(0, 16), n_prompt=8, n_gen=1, repeats=2)
    # the emulator's repeats spread as the shared machine does: judged stable here, so the resume
    # below reuses them (an unstable stored point is retimed by the next run)
    from glmbench.measure import protocol as P
    monkeypatch.setattr(P, "SPREAD_MAX", float("inf"))
    cpu_recs = M.measure(cfg, device="cpu", weights="bf16", kv="bf16", layers="full", warmup=0, progress=False, **kw)
    out = tmp_path / "gpu.json"
    gpu = M.measure(cfg, device="cuda", iters=2, out=out, **kw)
    assert [(r["test"], r["n_depth"], r["n_prompt"], r["n_gen"]) for r in gpu] == \
        [(r["test"], r["n_depth"], r["n_prompt"], r["n_gen"]) for r in cpu_recs] == \
        [("pp", 0, 8, 0), ("tg", 0, 0, 1), ("pp", 16, 8, 0), ("tg", 16, 0, 1), ("mem", 16, 0, 0)]
    same = ("evidence", "model", "model_type", "n_cards", "split", "weights", "type_k", "type_v", "mla_strategy",
            "repetitions", "n_layers", "glmbench_version", "sampled", "layers_mode", "layers_timed", "model_size",
            "model_n_params", "kv_fill", "weight_bytes_model", "kv_bytes_model", "kv_bytes_per_token")
    for g, c in zip(gpu, cpu_recs):
        records.validate(g)
        assert vocab.point_key(g) == vocab.point_key(c)
        assert sorted(set(c) - set(g) - CPU_ONLY) == [], g["test"]
        assert {f: g.get(f) for f in same if f in c} == {f: c[f] for f in same if f in c}, g["test"]
        assert g["device"] == "GPU: CPU emulator" and g["runtime"] == "glmbench-cuda" and g["test_time"]
        assert g["mla_strategy"] == ("flash" if kind == "glm" else "") and g["layers_mode"] == "full"
        if g["test"] == "mem":
            assert g["weight_bytes"] > 0 and g["kv_bytes"] == g["kv_bytes_per_token"] * 16
            assert g["device_total_bytes"] > 0 and g["avg_ts"] is None
            continue
        assert g["avg_ts"] > 0 and g["min_ts"] <= g["median_ts"] <= g["max_ts"] and g["stddev_ts"] >= 0
        assert len(g["samples_ns"]) == len(g["samples_ts"]) == 2
        assert np.mean(g["samples_ns"]) == pytest.approx(g["avg_ns"])
        n = g["n_gen"] or g["n_prompt"]
        assert [n / (ns / 1e9) for ns in g["samples_ns"]] == pytest.approx(g["samples_ts"])
        assert g["step_ms_min"] <= g["step_ms"] <= g["step_ms_max"]
    assert gpu[0]["ttft_s"] > 0 and "ttft_s" not in gpu[2]
    assert len(records.read_records(out)) == 5
    # resume: every point is in `out`, so nothing is built and the stored records come back
    monkeypatch.setattr(cuda.CudaModel, "__init__", _boom)
    again = M.measure(cfg, device="cuda", iters=2, out=out, **kw)
    assert again == json.loads(json.dumps(gpu))
    monkeypatch.undo()
    # a new depth measures only its points (and the mem point moves to the deepest depth)
    timed = []
    from glmbench.measure import protocol
    run = protocol.run
    monkeypatch.setattr(protocol, "run", lambda pts, store, tp, **k: run(
        pts, store, tp and (lambda p: timed.append((p["test"], p["n_depth"])) or tp(p)), **k))
    more = M.measure(cfg, device="cuda", iters=2, out=out, **dict(kw, depths=(0, 16, 24)))
    assert timed == [("pp", 24), ("tg", 24), ("mem", 24)]
    assert more[:4] == again[:4] and len(records.read_records(out)) == 8
    # the first k layers only: another point for the resume key, never a stored full-model one
    part = M.measure(cfg, device="cuda", iters=1, out=out, depths=(0,), tests=("tg",), repeats=1, layers=1)
    assert part[0]["layers_mode"] == "first1" and part[0]["layers_timed"] == "0"
    assert timed[-1] == ("tg", 0)


def test_measure_cuda_checks_its_arguments(emu):
    from glmbench.measure import cuda as cuda_backend
    cfg = _tiny("qwen")
    with pytest.raises(ValueError, match=r"`n_gen` must be 1 on the CUDA path"):
        cuda_backend.measure(cfg, depths=(0,), n_gen=16)
    with pytest.raises(ValueError, match=r"`layers` must be None \(all 2\) or an integer in 1..2, got 3"):
        cuda_backend.measure(cfg, depths=(0,), layers=3)
    with pytest.raises(ValueError, match=r"runs bf16 weights and a bf16 cache, got weights='bf16', kv='q8_0'"):
        cuda_backend.measure(cfg, depths=(0,), kv="q8_0")
    with pytest.raises(ValueError, match=r"`iters` must be an integer >= 1, got 0"):
        cuda_backend.measure(cfg, depths=(0,), iters=0)
    with pytest.raises(ValueError, match=r"`depths` must be integers >= 0"):
        cuda_backend.measure(cfg, depths=(-1,))


@pytest.mark.skipif(GPU, reason="checks the behaviour without a device")
def test_cli_measure_device_cuda_interrupted_in_the_build(emu, tmp_path, capsys, monkeypatch):
    """Ctrl-C while the GPU model is built: exit 130 and one line saying nothing was measured (it
    said the finished points were saved)."""
    import json
    from glmbench import cli

    def interrupted(*a, **k):
        raise KeyboardInterrupt
    path = tmp_path / "tiny.json"
    path.write_text(json.dumps({k: v for k, v in _tiny("glm").hf.items() if not k.startswith("_")}))
    monkeypatch.setattr(cuda.CudaModel, "__init__", interrupted)
    out = tmp_path / "r.json"
    rc = cli.main(["measure", str(path), "--device", "cuda", "--depths", "16", "--n-prompt", "8", "--repeats", "1",
                   "--out", str(out), "-q"])
    assert rc == 130 and not out.exists()
    assert capsys.readouterr().err.strip().splitlines() == [
        f"glmbench: interrupted (nothing was measured yet; nothing written to {out})"]


def test_cli_measure_device_cuda_without_a_device(capsys):
    from glmbench import cli
    assert cli.main(["measure", "qwen3-32b", "--device", "cuda", "-q"]) != 0
    assert "no CUDA device" in capsys.readouterr().err


# ---- the tensor-core kernels' index arithmetic, replayed in Python ---------------------------
# A line-by-line transliteration of attention_mla.cu's mla_kernel2 and attention_gqa.cu's
# gqa_kernel3 (warps, lanes, shared-memory offsets, fragment loads) with mma.sync m16n8k16
# modelled from the fragment layout written in kernels/mma.cuh. It checks that the kernels use
# that layout consistently (a transposed tile or a wrong offset fails here); whether the layout
# matches the hardware is checked only on a GPU (bench/gpu_check.sh).
def _mma(acc, a, b):
    """acc[32][4] += A . B with A, B gathered from the per-lane fragments a[32][4][2], b[32][2][2]."""
    A, B = np.zeros((16, 16)), np.zeros((16, 8))
    for lane in range(32):
        g, c = lane >> 2, lane & 3
        for e in range(2):
            A[g, 2 * c + e], A[g + 8, 2 * c + e] = a[lane][0][e], a[lane][1][e]
            A[g, 2 * c + 8 + e], A[g + 8, 2 * c + 8 + e] = a[lane][2][e], a[lane][3][e]
            B[2 * c + e, g], B[2 * c + 8 + e, g] = b[lane][0][e], b[lane][1][e]
    C = A @ B
    for lane in range(32):
        g, c = lane >> 2, lane & 3
        acc[lane] += [C[g, 2 * c], C[g, 2 * c + 1], C[g + 8, 2 * c], C[g + 8, 2 * c + 1]]


def _pair(buf, i):
    return (buf[i], buf[i + 1])


def _bfr(x):
    return cuda.bf16_to_f32(cuda.f32_to_bf16(np.asarray(x, np.float32)))


def _sim_mla_kernel2(qlat, qrope, lat_rows, T_, L, scale, NT=32, ROWS=32, PAD=8):
    """One split (S = 1), one head group, query token t = T_-1 at position L-1: returns o_lat[H, R]."""
    H, R = qlat.shape
    Dr = qrope.shape[1]
    W, LD = R + Dr, R + Dr + PAD
    qs = np.zeros(ROWS * LD)
    for r in range(H):
        qs[r * LD:r * LD + W] = np.concatenate([qlat[r], qrope[r]])
    m_s, l_s = np.full(ROWS, -np.inf), np.zeros(ROWS)
    ncol, ntile = R // 8, R // 64
    o = np.zeros((8, 32, 2, 8, 4))  # [warp][lane][mt][j][e]
    p = L - 1
    k_end = min(L, p + 1)
    for kt in range(0, k_end, NT):
        ks = np.zeros(NT * LD)
        for j in range(NT):
            if kt + j < k_end:
                ks[j * LD:j * LD + W] = lat_rows[kt + j]
        ss = np.zeros((ROWS, NT + 1))
        for warp in range(8):
            mt, nt = warp & 1, warp >> 1
            acc = np.zeros((32, 4))
            for k0 in range(0, W, 16):
                a = [[None] * 4 for _ in range(32)]
                b = [[None] * 2 for _ in range(32)]
                for lane in range(32):
                    g, c = lane >> 2, lane & 3
                    qa, kb = (mt * 16) * LD, (nt * 8) * LD
                    a[lane] = [_pair(qs, qa + g * LD + k0 + 2 * c), _pair(qs, qa + (g + 8) * LD + k0 + 2 * c),
                               _pair(qs, qa + g * LD + k0 + 8 + 2 * c), _pair(qs, qa + (g + 8) * LD + k0 + 8 + 2 * c)]
                    b[lane] = [_pair(ks, kb + g * LD + k0 + 2 * c), _pair(ks, kb + g * LD + k0 + 8 + 2 * c)]
                _mma(acc, a, b)
            for lane in range(32):
                g, c = lane >> 2, lane & 3
                r0, col = mt * 16 + g, nt * 8 + 2 * c
                ss[r0, col], ss[r0, col + 1] = acc[lane][0] * scale, acc[lane][1] * scale
                ss[r0 + 8, col], ss[r0 + 8, col + 1] = acc[lane][2] * scale, acc[lane][3] * scale
        ps, a_s = np.zeros((ROWS, NT + 8)), np.zeros(ROWS)
        for r in range(ROWS):
            sv = np.array([ss[r, j] if kt + j < k_end else -np.inf for j in range(NT)])
            mnew = max(m_s[r], sv.max())
            pb = _bfr(np.where(np.isinf(sv), 0.0, np.exp(sv - mnew)))
            ps[r, :NT] = pb
            alpha = 0.0 if m_s[r] == -np.inf else np.exp(m_s[r] - mnew)
            l_s[r] = l_s[r] * alpha + pb.sum()
            m_s[r], a_s[r] = mnew, alpha
        psf = ps.ravel()
        for warp in range(8):
            for lane in range(32):
                g = lane >> 2
                for mt in range(2):
                    o[warp, lane, mt, :, 0:2] *= a_s[mt * 16 + g]
                    o[warp, lane, mt, :, 2:4] *= a_s[mt * 16 + g + 8]
            for k0 in range(0, NT, 16):
                for j in range(ntile):
                    b = [None] * 32
                    a = {0: [None] * 32, 1: [None] * 32}
                    for lane in range(32):
                        g, c = lane >> 2, lane & 3
                        for mt in range(2):
                            pa, st = (mt * 16) * (NT + 8), NT + 8
                            a[mt][lane] = [_pair(psf, pa + g * st + k0 + 2 * c), _pair(psf, pa + (g + 8) * st + k0 + 2 * c),
                                           _pair(psf, pa + g * st + k0 + 8 + 2 * c),
                                           _pair(psf, pa + (g + 8) * st + k0 + 8 + 2 * c)]
                        n = warp * ncol + j * 8 + g
                        b[lane] = [(ks[(k0 + 2 * c) * LD + n], ks[(k0 + 2 * c + 1) * LD + n]),
                                   (ks[(k0 + 2 * c + 8) * LD + n], ks[(k0 + 2 * c + 9) * LD + n])]
                    for mt in range(2):
                        acc = o[warp, :, mt, j, :].copy()
                        _mma(acc, a[mt], b)
                        o[warp, :, mt, j, :] = acc
    out = np.full((H, R), np.nan)
    for warp in range(8):
        for lane in range(32):
            g, c = lane >> 2, lane & 3
            for mt in range(2):
                for half in range(2):
                    r = mt * 16 + g + 8 * half
                    if r >= H:
                        continue
                    for j in range(ntile):
                        col = warp * ncol + j * 8 + 2 * c
                        out[r, col] = o[warp, lane, mt, j, 2 * half] / l_s[r]
                        out[r, col + 1] = o[warp, lane, mt, j, 2 * half + 1] / l_s[r]
    return out


@pytest.mark.parametrize("H,R,Dr,L", [(20, 64, 16, 45),     # two tiles, the second partial; one n8 tile per warp
                                      (20, 512, 64, 33)])   # GLM's shape: 8 n8 tiles per warp, 36 k-steps
def test_mla_kernel2_index_math_in_python(rng, H, R, Dr, L):
    qlat, qrope = _bfr(rng.standard_normal((H, R))), _bfr(rng.standard_normal((H, Dr)))
    rows = _bfr(rng.standard_normal((L, R + Dr)))
    got = _sim_mla_kernel2(qlat, qrope, rows, 1, L, 0.1)
    q = np.concatenate([qlat, qrope], 1)[None]
    k = np.broadcast_to(rows[:, None, :], (L, H, R + Dr))
    v = np.broadcast_to(rows[:, None, :R], (L, H, R))
    want = ref.attention(q, k, v, 0.1)[0]
    assert np.isfinite(got).all()      # every output element written
    assert _rel(got, want) < 1e-2      # P is rounded to bf16, as in the kernel


def _sim_gqa_kernel3(q, k, v, L, scale, NT=64, PAD=8):
    """gqa_kernel3 for one KV head, one split (S = 1), the query at position L-1: q[G, Dh],
    k[L, Dh], v[L, Dv] -> out[G, Dv]."""
    G, Dh = q.shape
    Dv = v.shape[1]
    LK, LV = Dh + PAD, Dv + PAD
    qs = np.zeros(16 * LK)
    for r in range(G):
        qs[r * LK:r * LK + Dh] = q[r]
    m_s, l_s = np.full(16, -np.inf), np.zeros(16)
    ncol = Dv // 4
    ntile = ncol // 8
    o = np.zeros((4, 32, 8, 4))
    k_end = L
    for kt in range(0, k_end, NT):
        ks, vs = np.zeros(NT * LK), np.zeros(NT * LV)
        for j in range(NT):
            if kt + j < k_end:
                ks[j * LK:j * LK + Dh], vs[j * LV:j * LV + Dv] = k[kt + j], v[kt + j]
        ss = np.zeros((16, NT + 1))
        for warp in range(4):
            for u in range(2):
                nt = 2 * warp + u
                acc = np.zeros((32, 4))
                for k0 in range(0, Dh, 16):
                    a, b = [None] * 32, [None] * 32
                    for lane in range(32):
                        g, c = lane >> 2, lane & 3
                        kb = (nt * 8) * LK
                        a[lane] = [_pair(qs, g * LK + k0 + 2 * c), _pair(qs, (g + 8) * LK + k0 + 2 * c),
                                   _pair(qs, g * LK + k0 + 8 + 2 * c), _pair(qs, (g + 8) * LK + k0 + 8 + 2 * c)]
                        b[lane] = [_pair(ks, kb + g * LK + k0 + 2 * c), _pair(ks, kb + g * LK + k0 + 8 + 2 * c)]
                    _mma(acc, a, b)
                for lane in range(32):
                    g, c = lane >> 2, lane & 3
                    col = nt * 8 + 2 * c
                    ss[g, col], ss[g, col + 1] = acc[lane][0] * scale, acc[lane][1] * scale
                    ss[g + 8, col], ss[g + 8, col + 1] = acc[lane][2] * scale, acc[lane][3] * scale
        ps, a_s = np.zeros((16, NT + 8)), np.zeros(16)
        for r in range(16):
            sv = np.array([ss[r, j] if kt + j < k_end else -np.inf for j in range(NT)])
            mnew = max(m_s[r], sv.max())
            pb = _bfr(np.where(np.isinf(sv), 0.0, np.exp(sv - mnew)))
            ps[r, :NT] = pb
            alpha = 0.0 if m_s[r] == -np.inf else np.exp(m_s[r] - mnew)
            l_s[r] = l_s[r] * alpha + pb.sum()
            m_s[r], a_s[r] = mnew, alpha
        psf = ps.ravel()
        for warp in range(4):
            for lane in range(32):
                g = lane >> 2
                o[warp, lane, :, 0:2] *= a_s[g]
                o[warp, lane, :, 2:4] *= a_s[g + 8]
            for k0 in range(0, NT, 16):
                a = [None] * 32
                for lane in range(32):
                    g, c = lane >> 2, lane & 3
                    st = NT + 8
                    a[lane] = [_pair(psf, g * st + k0 + 2 * c), _pair(psf, (g + 8) * st + k0 + 2 * c),
                               _pair(psf, g * st + k0 + 8 + 2 * c), _pair(psf, (g + 8) * st + k0 + 8 + 2 * c)]
                for j in range(ntile):
                    b = [None] * 32
                    for lane in range(32):
                        g, c = lane >> 2, lane & 3
                        n = warp * ncol + j * 8 + g
                        b[lane] = [(vs[(k0 + 2 * c) * LV + n], vs[(k0 + 2 * c + 1) * LV + n]),
                                   (vs[(k0 + 2 * c + 8) * LV + n], vs[(k0 + 2 * c + 9) * LV + n])]
                    acc = o[warp, :, j, :].copy()
                    _mma(acc, a, b)
                    o[warp, :, j, :] = acc
    out = np.full((G, Dv), np.nan)
    for warp in range(4):
        for lane in range(32):
            g, c = lane >> 2, lane & 3
            for half in range(2):
                r = g + 8 * half
                if r >= G:
                    continue
                for j in range(ntile):
                    col = warp * ncol + j * 8 + 2 * c
                    out[r, col] = o[warp, lane, j, 2 * half] / l_s[r]
                    out[r, col + 1] = o[warp, lane, j, 2 * half + 1] / l_s[r]
    return out


@pytest.mark.parametrize("G,Dh,Dv,L", [(8, 128, 128, 100),   # Qwen3-32B's group, two tiles
                                       (5, 64, 96, 20),      # odd group, Dv = 96: 3 n8 tiles per warp
                                       (1, 256, 256, 70)])   # naive MLA's per-head attention
def test_gqa_kernel3_index_math_in_python(rng, G, Dh, Dv, L):
    q, k, v = (_bfr(rng.standard_normal(s)) for s in ((G, Dh), (L, Dh), (L, Dv)))
    got = _sim_gqa_kernel3(q, k, v, L, Dh ** -0.5)
    want = ref.attention(q[None], np.broadcast_to(k[:, None], (L, G, Dh)), np.broadcast_to(v[:, None], (L, G, Dv)),
                         Dh ** -0.5)[0]
    assert np.isfinite(got).all()
    assert _rel(got, want) < 1e-2


def _sim_gqa_kernel4(q, k, v, L, scale, Q=64, NT=64, PAD=8):
    """gqa_kernel4 for one q head: q[T, Dh] (the last T of L positions), k[L, Dh], v[L, Dv] -> [T, Dv]."""
    T, Dh = q.shape
    Dv = v.shape[1]
    LK, LV = Dh + PAD, Dv + PAD
    nk, nv = Dh // 16, Dv // 8
    out = np.full((T, Dv), np.nan)
    for bx in range(-(-T // Q)):
        k_end = min(L, L - T + min((bx + 1) * Q, T))
        for warp in range(4):
            q0 = bx * Q + warp * 16
            qa = [[None] * nk for _ in range(32)]
            st = []
            for lane in range(32):
                g, c = lane >> 2, lane & 3
                r0, r1 = q0 + g, q0 + g + 8
                z = (0.0, 0.0)
                for kk in range(nk):
                    k0 = kk * 16
                    qa[lane][kk] = [tuple(q[r0, k0 + 2 * c:k0 + 2 * c + 2]) if r0 < T else z,
                                    tuple(q[r1, k0 + 2 * c:k0 + 2 * c + 2]) if r1 < T else z,
                                    tuple(q[r0, k0 + 8 + 2 * c:k0 + 10 + 2 * c]) if r0 < T else z,
                                    tuple(q[r1, k0 + 8 + 2 * c:k0 + 10 + 2 * c]) if r1 < T else z]
                st.append(dict(r0=r0, r1=r1, p0=L - T + r0 if r0 < T else -1, p1=L - T + r1 if r1 < T else -1,
                               m0=-np.inf, m1=-np.inf, l0=0.0, l1=0.0))
            o = np.zeros((32, nv, 4))
            for kt in range(0, k_end, NT):
                ks, vs = np.zeros(NT * LK), np.zeros(NT * LV)
                for j in range(NT):
                    if kt + j < k_end:
                        ks[j * LK:j * LK + Dh], vs[j * LV:j * LV + Dv] = k[kt + j], v[kt + j]
                sc = np.zeros((8, 32, 4))
                for nt in range(8):
                    for kk in range(nk):
                        b = [None] * 32
                        for lane in range(32):
                            g, c = lane >> 2, lane & 3
                            b[lane] = [_pair(ks, (nt * 8 + g) * LK + kk * 16 + 2 * c),
                                       _pair(ks, (nt * 8 + g) * LK + kk * 16 + 8 + 2 * c)]
                        acc = sc[nt].copy()
                        _mma(acc, [qa[lane][kk] for lane in range(32)], b)
                        sc[nt] = acc
                mx = np.full((32, 2), -np.inf)
                for lane in range(32):
                    c = lane & 3
                    for nt in range(8):
                        for e in range(2):
                            tok = kt + nt * 8 + 2 * c + e
                            sc[nt, lane, e] = sc[nt, lane, e] * scale if tok < k_end and tok <= st[lane]["p0"] else -np.inf
                            sc[nt, lane, 2 + e] = (sc[nt, lane, 2 + e] * scale if tok < k_end and tok <= st[lane]["p1"]
                                                   else -np.inf)
                    mx[lane] = [sc[:, lane, 0:2].max(), sc[:, lane, 2:4].max()]
                for lane in range(32):  # quad reductions (lanes 4g .. 4g+3)
                    quad = [lane ^ 0, lane ^ 1, lane ^ 2, lane ^ 3]
                    st[lane]["mx"] = mx[quad].max(axis=0)
                pa = [[[None] * 4 for _ in range(4)] for _ in range(32)]
                sums = np.zeros((32, 2))
                for lane in range(32):
                    S_ = st[lane]
                    mn = np.maximum([S_["m0"], S_["m1"]], S_["mx"])
                    al = [1.0 if mn[r] == -np.inf else (0.0 if [S_["m0"], S_["m1"]][r] == -np.inf
                                                        else np.exp([S_["m0"], S_["m1"]][r] - mn[r])) for r in range(2)]
                    S_["mn"], S_["al"] = mn, al
                    for nt in range(8):
                        pv = [0.0 if sc[nt, lane, e] == -np.inf else _bfr([np.exp(sc[nt, lane, e] - mn[e // 2])])[0]
                              for e in range(4)]
                        sums[lane] += [pv[0] + pv[1], pv[2] + pv[3]]
                        pa[lane][nt >> 1][(nt & 1) * 2 + 0] = (pv[0], pv[1])
                        pa[lane][nt >> 1][(nt & 1) * 2 + 1] = (pv[2], pv[3])
                for lane in range(32):
                    S_ = st[lane]
                    tot = sums[[lane ^ 0, lane ^ 1, lane ^ 2, lane ^ 3]].sum(axis=0)
                    S_["l0"] = S_["l0"] * S_["al"][0] + tot[0]
                    S_["l1"] = S_["l1"] * S_["al"][1] + tot[1]
                    S_["m0"], S_["m1"] = S_["mn"]
                    o[lane, :, 0:2] *= S_["al"][0]
                    o[lane, :, 2:4] *= S_["al"][1]
                for kk in range(4):
                    for j in range(nv):
                        b = [None] * 32
                        for lane in range(32):
                            g, c = lane >> 2, lane & 3
                            n = j * 8 + g
                            b[lane] = [(vs[(kk * 16 + 2 * c) * LV + n], vs[(kk * 16 + 2 * c + 1) * LV + n]),
                                       (vs[(kk * 16 + 2 * c + 8) * LV + n], vs[(kk * 16 + 2 * c + 9) * LV + n])]
                        acc = o[:, j, :].copy()
                        _mma(acc, [pa[lane][kk] for lane in range(32)], b)
                        o[:, j, :] = acc
            for lane in range(32):
                g, c = lane >> 2, lane & 3
                S_ = st[lane]
                for j in range(nv):
                    col = j * 8 + 2 * c
                    if S_["r0"] < T:
                        out[S_["r0"], col:col + 2] = o[lane, j, 0:2] / S_["l0"]
                    if S_["r1"] < T:
                        out[S_["r1"], col:col + 2] = o[lane, j, 2:4] / S_["l1"]
    return out


@pytest.mark.parametrize("T,L,Dh,Dv", [(20, 90, 32, 16),    # one block, a 90-token cache: two key tiles
                                       (70, 70, 16, 32)])   # two blocks (the second partial), prefill from empty
def test_gqa_kernel4_index_math_in_python(rng, T, L, Dh, Dv):
    q, k, v = (_bfr(rng.standard_normal(s)) for s in ((T, Dh), (L, Dh), (L, Dv)))
    got = _sim_gqa_kernel4(q, k, v, L, Dh ** -0.5)
    want = ref.attention(q[:, None], k[:, None], v[:, None], Dh ** -0.5)[:, 0]
    assert np.isfinite(got).all()
    assert _rel(got, want) < 1e-2


@pytest.mark.parametrize("kind", ["glm", "qwen"])
@pytest.mark.slow
def test_emulated_cuda_model_matches_hf_transformers(emu, kind):
    """Oracle 2 for the GPU model's wiring: a tiny HF transformers model (float32, CPU), its weights
    loaded into CudaModel (bf16), logits of a prefill and decode steps compared. The HF weights are
    rounded to bf16 first, so only CudaModel's bf16 activations separate them (~1e-2); routing is
    pinned in both (a near-tie would otherwise be decided by rounding)."""
    torch = pytest.importorskip("torch")
    transformers = pytest.importorskip("transformers")
    from glmbench.models import configs
    hf_dims = {k: v for k, v in _tiny(kind).hf.items() if not k.startswith("_")}
    model_type = hf_dims.pop("model_type")
    from transformers.models.auto.configuration_auto import CONFIG_MAPPING
    if model_type not in CONFIG_MAPPING:    # (a config this transformers refuses is a failure, not a skip)
        pytest.skip(f"transformers {transformers.__version__} lacks {model_type!r}")
    hc = transformers.AutoConfig.for_model(model_type, **hf_dims)
    hc._attn_implementation = "eager"
    torch.manual_seed(0)
    hf = transformers.AutoModelForCausalLM.from_config(hc, dtype=torch.float32).eval()
    g = torch.Generator().manual_seed(1)
    with torch.no_grad():
        for name, p in hf.named_parameters():
            p.copy_(1.0 + 0.1 * torch.randn(p.shape, generator=g) if p.ndim == 1
                    else torch.randn(p.shape, generator=g) / p.shape[-1] ** 0.5)
            if not name.endswith("mlp.gate.weight"):  # what CudaModel stores in bf16, HF gets rounded
                p.copy_(p.to(torch.bfloat16).to(torch.float32))
        k = hc.to_dict().get("num_experts_per_tok") or 0
        for name, b in hf.named_buffers():
            if name.endswith("e_score_correction_bias"):
                b.zero_()
                b[:k] = 10.0
    cfg = configs.load(hc.to_dict())
    m = cuda.CudaModel(cfg, max_context=32)
    m.load_hf_weights({k: v.numpy() for k, v in hf.state_dict().items()})
    prompt, steps = [3, 17, 41, 5, 88, 60, 2], [11, 70, 9]
    kw = "cache" if "cache" in __import__("inspect").signature(hf.forward).parameters else "past_key_values"
    with torch.no_grad():
        r = hf(torch.tensor([prompt]), use_cache=True)
        want = [r.logits[0].numpy()]
        for t in steps:
            r = hf(torch.tensor([[t]]), use_cache=True, **{kw: getattr(r, kw)})
            want.append(r.logits[0, -1].numpy())
    got = [m.prefill(prompt).to_numpy()] + [m.decode(t).to_numpy()[0] for t in steps]
    for i, (a, b) in enumerate(zip(got, want)):
        assert _rel(a, b) < 3e-2, f"{kind} step {i}: {_rel(a, b):.3e}"


def _sim_gqa_kernel1_and_combine(q, k_rows, v_rows, L, Hq, Hkv, scale, S, QB=16, KT=32):
    """gqa_kernel1 (CUDA-core flash tiles) over S splits, then gqa_combine_kernel1: q[T, Hq, Dh],
    k_rows[L, Hkv, Dh], v_rows[L, Hkv, Dv] -> out[T, Hq, Dv]; the workspace laid out as the kernels
    index it (m, l, then acc, row (t * Hq + h) * S + s)."""
    T, _, Dh = q.shape
    Dv = v_rows.shape[2]
    chunk = -(-L // S)
    rows = T * Hq
    ws_m, ws_l = np.full(rows * S, np.nan), np.full(rows * S, np.nan)
    ws_acc = np.full(rows * S * Dv, np.nan)
    KW2, DVL = Dh + 2, (4 if Dv <= 128 else 8)   # K row stride in bf16 (Dh/2 + 1 words)
    for s in range(S):
        for h in range(Hq):
            hkv = h // (Hq // Hkv)
            for z in range(-(-T // QB)):
                t0 = z * QB
                qs = np.zeros(QB * Dh)
                for i in range(QB * Dh):
                    t = t0 + i // Dh
                    qs[i] = q[t, h, i % Dh] if t < T else 0.0
                k_begin, k_end = s * chunk, min(L, s * chunk + chunk)
                k_end = min(k_end, L - T + min(t0 + QB, T) - 1 + 1)
                m, l = np.full(16, -np.inf), np.zeros(16)          # [warp * 4 + qi]
                acc = np.zeros((16, 32, DVL))                      # [query][lane][d]
                for kt in range(k_begin, k_end, KT):
                    ks, vs = np.zeros(KT * KW2), np.zeros(KT * Dv)
                    for j in range(KT):
                        if kt + j < k_end:
                            ks[j * KW2:j * KW2 + Dh] = k_rows[kt + j, hkv]
                            vs[j * Dv:(j + 1) * Dv] = v_rows[kt + j, hkv]
                    for warp in range(4):
                        for qi in range(4):
                            qrow = warp * 4 + qi
                            t = t0 + qrow
                            if t >= T:
                                continue
                            p = L - T + t
                            sc = np.full(32, -np.inf)
                            for lane in range(32):
                                tok = kt + lane
                                if tok < k_end and tok <= p:
                                    sc[lane] = qs[qrow * Dh:(qrow + 1) * Dh] @ ks[lane * KW2:lane * KW2 + Dh] * scale
                            mnew = max(m[qrow], sc.max())
                            if mnew == -np.inf:
                                continue
                            pj = np.where(sc == -np.inf, 0.0, np.exp(sc - mnew))
                            alpha = np.exp(m[qrow] - mnew)
                            l[qrow] = l[qrow] * alpha + pj.sum()
                            acc[qrow] *= alpha
                            for j in range(KT):
                                if pj[j] == 0.0:
                                    continue
                                for lane in range(32):
                                    for d in range(DVL):
                                        dim = lane + 32 * d
                                        if dim < Dv:
                                            acc[qrow, lane, d] += pj[j] * vs[j * Dv + dim]
                            m[qrow] = mnew
                for qrow in range(16):
                    t = t0 + qrow
                    if t >= T:
                        continue
                    idx = (t * Hq + h) * S + s
                    ws_m[idx], ws_l[idx] = m[qrow], l[qrow]
                    for lane in range(32):
                        for d in range(DVL):
                            dim = lane + 32 * d
                            if dim < Dv:
                                ws_acc[idx * Dv + dim] = acc[qrow, lane, d]
    out = np.zeros((rows, Dv))
    for r in range(rows):
        mr, lr = ws_m[r * S:(r + 1) * S], ws_l[r * S:(r + 1) * S]
        M = mr.max()
        w = np.where(mr == -np.inf, 0.0, np.exp(mr - M))
        out[r] = (w[:, None] * ws_acc[r * S * Dv:(r + 1) * S * Dv].reshape(S, Dv)).sum(0) / (w * lr).sum()
    return out.reshape(T, Hq, Dv)


@pytest.mark.parametrize("T,L,Hq,Hkv,Dh,Dv,S", [(3, 70, 4, 2, 16, 24, 3),    # decode-like, 3 splits (one empty for late rows)
                                               (20, 40, 2, 1, 8, 8, 1)])     # prefill: two query blocks, causal
def test_gqa_kernel1_and_combine_index_math_in_python(rng, T, L, Hq, Hkv, Dh, Dv, S):
    q, k, v = (_bfr(rng.standard_normal(s)) for s in ((T, Hq, Dh), (L, Hkv, Dh), (L, Hkv, Dv)))
    got = _sim_gqa_kernel1_and_combine(q, k, v, L, Hq, Hkv, Dh ** -0.5, S)
    assert np.isfinite(got).all()
    assert _rel(got, ref.gqa_attention(q, k, v)) < 1e-6   # fp32/fp64 throughout: only summation order differs


def _sim_mla_kernel1(qlat, qrope, rows_, L, T, t, scale, S, s, KT=32, HG=32, THREADS=256):
    """mla_kernel1 (CUDA cores) for query token t of T, split s of S, head group 0: returns the
    block's (m[H], l[H], acc[H, R]) partials as it writes them to the workspace."""
    H, R = qlat.shape
    Dr = qrope.shape[1]
    W2 = R + Dr                       # row in bf16; the shared tile row is W + 1 words = W2 + 2 bf16
    KW2 = W2 + 2
    nh = min(HG, H)
    qs = np.concatenate([qlat, qrope], 1)
    ms, ls = np.full(HG, -np.inf), np.zeros(HG)
    acc = np.zeros((THREADS, HG, 2))
    chunk = -(-L // S)
    p = L - T + t
    k_begin = s * chunk
    k_end = min(min(L, k_begin + chunk), p + 1)
    for kt in range(k_begin, k_end, KT):
        kv = np.zeros(KT * KW2)
        for j in range(KT):
            if kt + j < k_end:
                kv[j * KW2:j * KW2 + W2] = rows_[kt + j]
        ps, as_ = np.zeros((HG, KT)), np.ones(HG)
        for hh in range(nh):  # warp per head, lane per cached row
            sc = np.array([qs[hh] @ kv[lane * KW2:lane * KW2 + W2] * scale if kt + lane < k_end else -np.inf
                           for lane in range(32)])
            mnew = max(ms[hh], sc.max())
            pj, alpha = np.zeros(32), 1.0
            if mnew != -np.inf:
                pj = np.where(sc == -np.inf, 0.0, np.exp(sc - mnew))
                alpha = np.exp(ms[hh] - mnew)
            ps[hh] = pj
            ls[hh] = ls[hh] * alpha + pj.sum()
            ms[hh], as_[hh] = mnew, alpha
        nt = min(KT, k_end - kt)
        for tid in range(THREADS):
            for hh in range(nh):
                acc[tid, hh] *= as_[hh]
            for j in range(nt):
                c0, c1 = tid, tid + THREADS
                v0 = kv[j * KW2 + c0] if c0 < R else 0.0
                v1 = kv[j * KW2 + c1] if c1 < R else 0.0
                for hh in range(nh):
                    acc[tid, hh] += ps[hh, j] * np.array([v0, v1])
    out = np.zeros((H, R))
    for hh in range(nh):
        for tid in range(THREADS):
            for c in range(2):
                col = tid + c * THREADS
                if col < R:
                    out[hh, col] = acc[tid, hh, c]
    return ms[:nh], ls[:nh], out


def test_mla_kernel1_index_math_in_python(rng):
    H, R, Dr, L, S = 5, 40, 8, 50, 2
    qlat, qrope = _bfr(rng.standard_normal((H, R))), _bfr(rng.standard_normal((H, Dr)))
    rows_ = _bfr(rng.standard_normal((L, R + Dr)))
    parts = [_sim_mla_kernel1(qlat, qrope, rows_, L, 1, 0, 0.2, S, s) for s in range(S)]
    M = np.max([m for m, _, _ in parts], axis=0)
    num = sum(np.exp(m - M)[:, None] * a for m, _, a in parts)
    den = sum(np.exp(m - M) * l for m, l, _ in parts)
    got = num / den[:, None]
    q = np.concatenate([qlat, qrope], 1)[None]
    want = ref.attention(q, np.broadcast_to(rows_[:, None], (L, H, R + Dr)),
                         np.broadcast_to(rows_[:, None, :R], (L, H, R)), 0.2)[0]
    assert _rel(got, want) < 1e-6


def test_cuda_model_refuses_what_it_does_not_run():
    """Sliding windows, Gemma's layer and Cohere's run on the CPU Model only: CudaModel says so before
    touching a device (so this runs anywhere)."""
    from glmbench.models import configs
    hf = dict(model_type="gemma3_text", num_hidden_layers=6, hidden_size=64, intermediate_size=96,
              num_attention_heads=4, num_key_value_heads=2, head_dim=16, vocab_size=64, sliding_window=8)
    with pytest.raises(ValueError, match=r"CudaModel: .*sliding-window attention, Gemma's layer"):
        cuda.CudaModel(configs.load(hf), max_context=16)
    cohere = dict(model_type="cohere", num_hidden_layers=2, hidden_size=64, intermediate_size=96,
                  num_attention_heads=4, num_key_value_heads=2, vocab_size=64)
    with pytest.raises(ValueError, match=r"CudaModel: .*Cohere's \(LayerNorm, parallel attention and MLP\)"):
        cuda.CudaModel(configs.load(cohere), max_context=16)


def test_gpu_sources_hash_is_stable_and_sees_a_source_change(tmp_path):
    # bench/gpu_check.sh uses extensions prebuilt off the device (bench/gpu_prebuild.sh) only when
    # this hash of the sources matches their stamp: it must be reproducible and follow every source
    import shutil
    import subprocess
    root = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    tree = tmp_path / "tree"
    (tree / "bench").mkdir(parents=True)
    shutil.copy(os.path.join(root, "bench", "gpu_sources_hash.sh"), tree / "bench")
    shutil.copy(os.path.join(root, "setup.py"), tree)
    for d in ("csrc", "kernels"):
        shutil.copytree(os.path.join(root, d), tree / d)

    def digest():
        out = subprocess.run(["bash", str(tree / "bench" / "gpu_sources_hash.sh")], cwd=tmp_path,
                             capture_output=True, text=True, check=True).stdout.strip()
        assert len(out) == 64 and int(out, 16) >= 0
        return out
    h = digest()
    assert digest() == h
    (tree / "kernels" / "notes.txt").write_text("not a source")
    assert digest() == h                        # only sources count
    k = tree / "kernels" / "norm.cu"
    k.write_text(k.read_text() + "\n")
    assert digest() != h                        # any source byte does

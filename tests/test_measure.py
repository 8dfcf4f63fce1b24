"""glmbench.measure on tiny models: records, sampling arithmetic, resume, bad input.
No timing is asserted (speed is shown by bench/bench_models.py), only that numbers are real and
consistent: positive rates, spreads, exact byte counts."""
import json

import numpy as np
import pytest

from glmbench.models import configs
from glmbench import measure as M
from glmbench.results import records
from glmbench.models.model import layer_kinds


def tiny_glm(n_layers=6):
    hf = dict(configs.load("glm-4.7-flash").hf)
    hf.update(vocab_size=96, hidden_size=64, intermediate_size=80, num_attention_heads=4, num_key_value_heads=4,
              kv_lora_rank=32, qk_rope_head_dim=8, qk_nope_head_dim=12, v_head_dim=16, q_lora_rank=48,
              moe_intermediate_size=32, n_routed_experts=8, num_experts_per_tok=2, num_hidden_layers=n_layers)
    return configs.load(hf)


def tiny_qwen():
    hf = dict(configs.load("qwen3-32b").hf)
    hf.update(vocab_size=96, hidden_size=64, intermediate_size=80, num_attention_heads=4, num_key_value_heads=2,
              head_dim=16, num_hidden_layers=3)
    return configs.load(hf)


KW = dict(depths=(0, 24), n_prompt=6, n_gen=3, repeats=2, warmup=1, progress=False)


@pytest.mark.slow
def test_sampled_records(tmp_path):
    cfg = tiny_glm()
    recs = M.measure(cfg, layers=2, weights="bf16", kv="bf16", **KW)
    assert [(r["test"], r["n_depth"]) for r in recs] == [("pp", 0), ("tg", 0), ("pp", 24), ("tg", 24), ("mem", 24)]
    for r in recs:
        records.validate(r)
        assert r["evidence"] == "measured" and r["sampled"] is True and r["layers_mode"] == "sampled"
        # the one dense layer is timed whole; 2 of the 5 MoE layers (first and last) are sampled
        assert r["layers_timed"] == "0,1,5"
        assert r["weights"] == "bf16" and r["type_k"] == r["type_v"] == "bf16" and r["mla_strategy"] == "flash"
        assert r["device"].startswith("CPU: ") and r["n_threads"] >= 1
        assert r["attn_arithmetic"] == M.attn_arithmetic("bf16")
        assert r["gemm_arithmetic"] == M.gemm_arithmetic("bf16")
        assert r["layer_exec"] == "c-layer"  # bf16 matrices: each layer is one C call (test_layer.py)
    for r in recs[:4]:
        assert r["avg_ts"] > 0 and r["stddev_ts"] >= 0 and r["min_ts"] <= r["median_ts"] <= r["max_ts"]
        assert r["layers_timed_moe"] == 2 and r["layers_timed_dense"] == 1 and r["layer_spread_moe"] >= 0
        assert r["kv_fill"] == ("synthetic" if r["n_depth"] else "none")
        assert r["head_ms"] > 0 and r["embed_ms"] > 0
    assert recs[0]["ttft_s"] > 0 and "ttft_s" not in recs[2]
    mem = recs[4]
    # exact byte counts: 3 built layers of (32 latent + 8 rope) bf16 values per token
    assert mem["kv_bytes"] == 3 * 24 * 40 * 2
    assert mem["kv_bytes_model"] == cfg.kv_bytes_per_token("bf16") * 24
    assert mem["weight_bytes_model"] == cfg.weight_bytes("bf16") > mem["weight_bytes"] > 0
    assert mem["rss_bytes"] > 0
    assert mem["workspace_bytes_peak"] > 0 and mem["workspace_n_prompt"] == 6
    for r in recs[:4]:  # llama-bench's per-repeat samples, consistent with the summary fields
        assert len(r["samples_ns"]) == len(r["samples_ts"]) == 2
        assert np.mean(r["samples_ns"]) == pytest.approx(r["avg_ns"])
        n = r["n_gen"] or r["n_prompt"]
        assert [n / (ns / 1e9) for ns in r["samples_ns"]] == pytest.approx(r["samples_ts"])
        assert "bandwidth_gbs_samples" not in r  # only when asked for
    # CSV and JSON round trips keep the llama-bench fields (lists as JSON arrays in CSV cells)
    records.write_records(tmp_path / "m.csv", recs)
    back = records.read_records(tmp_path / "m.csv")
    assert back[1]["n_gen"] == 3 and back[1]["avg_ts"] == pytest.approx(recs[1]["avg_ts"])
    assert back[1]["samples_ns"] == pytest.approx(recs[1]["samples_ns"])


def test_bandwidth_probe_pairs_each_repeat(monkeypatch):
    from glmbench.measure import cpu as cpu_backend
    # a stand-in probe: one value per timed decode step (n_gen=3 per repeat, 2 repeats, 2 depths);
    # each repeat gets the mean of its steps' probes
    seen = iter([11.0, 30.0, 13.0, 13.0, 1.0, 16.0, 17.0, 17.5, 90.5, 19.0, 20.0, 18.0])
    monkeypatch.setattr(cpu_backend, "probe_bandwidth", lambda: (next(seen), 0.0))
    recs = M.measure(tiny_qwen(), tests=("tg",), bandwidth_probe=True, **KW)
    assert [r["bandwidth_gbs_samples"] for r in recs] == [[18.0, 10.0], [41.666666666666664, 19.0]]
    assert [r["bandwidth_gbs"] for r in recs] == [14.0, (41.666666666666664 + 19.0) / 2]
    assert next(seen, None) is None  # exactly one probe per timed step, none during warm-up
    assert all(r["bandwidth_kind"] == "triad" for r in recs)


def test_bandwidth_probe_read_only(monkeypatch):
    from glmbench.measure import cpu as cpu_backend
    # "read": the read-only probe after each timed step (the triad's is not called), said in the record
    seen = iter([10.0, 20.0, 30.0, 40.0, 50.0, 60.0])
    monkeypatch.setattr(cpu_backend, "probe_read", lambda: next(seen))
    monkeypatch.setattr(cpu_backend, "probe_bandwidth", lambda: pytest.fail("the triad probe ran"))
    recs = M.measure(tiny_qwen(), tests=("tg",), bandwidth_probe="read", **{**KW, "depths": (0,)})
    assert recs[0]["bandwidth_gbs_samples"] == [20.0, 50.0] and recs[0]["bandwidth_kind"] == "read"
    assert next(seen, None) is None
    for bad in ("dram", 2, 1.0, "True"):
        with pytest.raises(ValueError, match="bandwidth_probe"):
            M.measure(tiny_qwen(), tests=("tg",), bandwidth_probe=bad, **KW)


def test_gemm_arithmetic_names_what_runs():
    from glmbench.core import _core
    assert M.gemm_arithmetic("f16") == M.gemm_arithmetic("q4_0") == "f32"
    try:
        _core._linear_set_hgemm("sgemm")
        assert M.gemm_arithmetic("bf16") == "f32"
        _core._linear_set_hgemm("auto")
        assert M.gemm_arithmetic("bf16") == ("bf16-dot" if _core._hgemm_kernels("bf16")["auto"] == "bf16dot" else "f32")
    finally:
        _core._linear_set_hgemm("auto")


def test_attn_arithmetic_names_what_runs():
    from glmbench.core import _core
    was = _core._attn_bf16()
    try:
        assert M.attn_arithmetic("f16") == M.attn_arithmetic("f32") == "f32"
        _core._attn_set_bf16(False)
        assert M.attn_arithmetic("bf16") == "f32"
        _core._attn_set_bf16(True)
        assert M.attn_arithmetic("bf16") == ("bf16-dot" if _core._attn_bf16() else "f32")
    finally:
        _core._attn_set_bf16(was)


def test_probe_bandwidth_measures():
    from glmbench.core import _core
    from glmbench import bench
    # best of 3: one pass on a shared 2-core machine once read 0.16 GB/s (CI, 2026-12-07: the
    # machine starved for that pass); the bounds say the passes are real, not how fast they are
    triad, read = bench.probe_bandwidth(reps=3)
    assert 0.5 < triad < 5000 and 0.5 < read < 5000  # GB/s of real passes on any machine
    a, b, c = np.zeros(4096, np.float32), np.ones(4096, np.float32), np.full(4096, 2.0, np.float32)
    assert min(_core.bench_probe(a, b, c, 2)) > 0
    np.testing.assert_array_equal(a, 7.0)  # a = b + 3c: the triad really ran over the arrays
    np.testing.assert_array_equal(b, 1.0)  # and the read pass left b and c alone
    with pytest.raises(ValueError, match="same length"):
        _core.bench_probe(a, b[:-1], c, 1)
    with pytest.raises(ValueError, match="n >= 1024"):
        _core.bench_probe(a[:8], b[:8], c[:8], 1)


def test_full_mode_when_it_fits():
    recs = M.measure(tiny_qwen(), layers="auto", tests=("tg",), **KW)
    assert all(r["layers_mode"] == "full" and r["sampled"] is False for r in recs)
    assert recs[0]["layers_timed"] == "0,1,2" and recs[0]["mla_strategy"] == ""


def test_resume_skips_finished_points(tmp_path, monkeypatch):
    # a point timed while another process took the machine is marked unstable and timed again on
    # resume (tests/test_reliability.py tests that): here the first run's points count as stable,
    # whatever else the machine runs, so that only the resume itself is tested
    from glmbench.measure import protocol
    orig = protocol.stability
    monkeypatch.setattr(protocol, "stability", lambda *a, **k: {
        **{f: v for f, v in orig(*a, **k).items() if f != "unstable_reason"}, "stable": True})
    out = tmp_path / "run.json"
    cfg = tiny_qwen()
    first = M.measure(cfg, depths=(0,), n_prompt=4, n_gen=2, repeats=1, warmup=0, progress=False, out=out,
                      tests=("tg", "pp"))
    assert len(json.loads(out.read_text())) == 2

    def boom(*a, **k):
        raise AssertionError("a finished point was measured again")
    monkeypatch.setattr("glmbench.models.model.Model.__init__", boom)
    again = M.measure(cfg, depths=(0,), n_prompt=4, n_gen=2, repeats=1, warmup=0, progress=False, out=out,
                      tests=("tg", "pp"))
    assert again == json.loads(json.dumps(first))
    monkeypatch.undo()
    # a new depth measures only the new points, and the file then holds all four
    more = M.measure(cfg, depths=(0, 8), n_prompt=4, n_gen=2, repeats=1, warmup=0, progress=False, out=out,
                     tests=("tg", "pp"))
    assert [r["n_depth"] for r in more] == [0, 0, 8, 8]
    assert more[:2] == again
    assert len(records.read_records(out)) == 4


def test_sampling_arithmetic():
    cfg = tiny_glm(10)
    assert layer_kinds(cfg).count("moe") == 9
    assert M.sample_layers(cfg, 2) == [0, 1, 9]
    assert M.sample_layers(cfg, 3) == [0, 1, 5, 9]
    timing = {"embed_s": 0.5, "head_s": 1.0, "layer_s": [2.0, 3.0, 5.0]}
    # 1 dense layer at 2 s + 9 MoE layers at the mean of 3 and 5 s + embed + head
    assert M.scaled_seconds(timing, ["dense", "moe", "moe"], {"dense": 1, "moe": 9}) == 0.5 + 1.0 + 2.0 + 9 * 4.0
    with pytest.raises(ValueError, match="no sampled layer of kind 'dense'"):
        M.scaled_seconds(timing, ["moe", "moe", "moe"], {"dense": 1, "moe": 9})


def test_a_hybrid_samples_its_linear_and_attention_layers_apart():
    # Qwen3.5-35B-A3B: 30 Gated DeltaNet layers and 10 attention layers, all MoE: two of each timed
    cfg = configs.load("qwen3.5-35b-a3b")
    roles = M.layer_roles(cfg)
    assert roles.count("moe+linear") == 30 and roles.count("moe") == 10
    assert M.sample_layers(cfg, 2) == [0, 3, 38, 39]
    # the decode floor: one row of the embedding, the weights a token reads, the attention layers' cache
    # and each linear layer's state read and written
    assert M.decode_bytes_per_token(cfg, "q8_0", "f16", 100) - M.decode_bytes_per_token(cfg, "q8_0", "f16", 0) \
        == 100 * cfg.kv_bytes_per_token("f16")
    st = cfg.recurrent_state_bytes()
    assert st == 30 * 4 * (3 * 8192 + 32 * 128 * 128)
    assert M.decode_bytes_per_token(cfg, "q8_0", "f16", 0) > 2 * st


def test_auto_decides_from_memory():
    glm = configs.load("glm-4.7-flash")
    assert M.choose_layers(glm, "bf16", "bf16", 8192, available=24 * 2**30) == "sampled"
    assert M.choose_layers(glm, "bf16", "bf16", 8192, available=512 * 2**30) == "full"
    assert M.choose_layers(tiny_qwen(), "bf16", "bf16", 64, available=2**30) == "full"


def test_decode_bytes_per_token_counts_active_weights():
    glm = configs.load("glm-4.7-flash")
    b0 = M.decode_bytes_per_token(glm, "bf16", "bf16", 0)
    # ~3.1 B weights touched per token (docs/SOURCES.md §1: ~3.2 B active incl. one embedding table) at 2 bytes
    active = glm.active_params(embeddings=False) + glm.vocab_size * glm.hidden_size  # + lm_head
    assert abs(b0 - 2 * active) / (2 * active) < 0.01
    # KV at depth: exactly 54,144 bytes per cached token (47 x 576 x 2)
    assert M.decode_bytes_per_token(glm, "bf16", "bf16", 4096) - b0 == 54144 * 4096
    qwen = configs.load("qwen3-32b")
    # a dense model reads everything but the embedding table (one row of it)
    emb = qwen.vocab_size * qwen.hidden_size * 2
    assert M.decode_bytes_per_token(qwen, "bf16", "bf16", 0) == qwen.weight_bytes("bf16") - emb + 2 * qwen.hidden_size


def test_bad_arguments():
    cfg = tiny_qwen()
    for kw, msg in [
        (dict(depths=()), "`depths` must list at least one depth"),
        (dict(depths=(-1,)), r"`depths` must be integers >= 0, got -1"),
        (dict(n_gen=0), r"`n_gen` must be an integer >= 1, got 0"),
        (dict(repeats=1.5), r"`repeats` must be an integer >= 1, got 1.5"),
        (dict(tests=("tg", "speed")), r"`tests` must be a non-empty subset"),
        (dict(layers=1), r"`layers` as a number is k sampled layers of each kind and must be >= 2, got 1"),
        (dict(layers="most"), r"`layers` must be 'auto', 'full', 'sampled' or a number k >= 2, got 'most'"),
        (dict(threads=0), r"`threads` must be None or an integer >= 1, got 0"),
        (dict(weights="q3"), r"unknown weight format 'q3'"),
        (dict(kv="q2"), r"unknown KV-cache format 'q2'"),
        (dict(out="x.csv"), r"ResultStore `path` must end in .json"),
    ]:
        with pytest.raises(ValueError, match=msg):
            M.measure(cfg, progress=False, **kw)


def test_threads_are_restored():
    import glmbench
    before = glmbench.get_num_threads()
    recs = M.measure(tiny_qwen(), threads=1, tests=("tg",), depths=(0,), n_gen=2, repeats=1, warmup=0,
                     progress=False)
    assert recs[0]["n_threads"] == 1 and recs[0]["device"].endswith("(1 thread)")
    assert glmbench.get_num_threads() == before


def test_progress_bar_total_counts_the_extra_warm_up_runs(monkeypatch):
    """The bar's total planned `warmup` warm-up runs per point, but a point warms up until two runs
    agree (up to WARMUP_EXTRA more): `glmbench measure` showed '0/9' going on to 21 runs. The
    total now grows with each extra warm-up run and ends equal to the runs made."""
    from glmbench.measure import cpu as C
    bars = []

    class Bar:
        def __init__(self, total):
            self.total, self.n = total, 0
            bars.append(self)

        def update(self, k):
            self.n += k

        def set_postfix_str(self, *a, **k):
            pass

        def close(self):
            pass

    monkeypatch.setattr(C, "_bar", lambda progress, total, name: Bar(total))
    times = iter([1.0, 2.0] * 4 + [1.0] * 20)     # the first point never steady: every extra run taken
    monkeypatch.setattr(C, "_step_seconds", lambda m, kinds, counts: next(times))
    recs = M.measure(tiny_qwen(), tests=("pp", "tg"), depths=(0,), n_prompt=4, n_gen=2, repeats=1, warmup=1,
                     progress=True)
    assert recs[0]["warmup_runs"] == 1 + C.WARMUP_EXTRA
    (bar,) = bars
    runs = sum(r["warmup_runs"] + len(r["samples_ns"]) for r in recs)
    assert bar.n == runs and bar.total == runs


def test_layers_given_as_text_like_the_cli():
    recs = M.measure(tiny_glm(), layers="3", tests=("tg",), depths=(0,), n_gen=2, repeats=1, warmup=0,
                     progress=False)
    assert recs[0]["layers_timed"] == "0,1,3,5" and recs[0]["sampled"]
    assert np.isfinite(recs[0]["avg_ts"])


def test_warm_up_runs_until_two_agree(monkeypatch):
    from glmbench.measure import cpu as C
    assert C._steady([1.0, 1.05]) and not C._steady([1.0]) and not C._steady([2.0, 1.0])
    assert C._steady([5.0, 1.0, 1.09]) and not C._steady([1.0, 1.2])
    rec = M.measure(tiny_qwen(), tests=("pp",), depths=(0,), n_prompt=4, repeats=1, warmup=0, progress=False)[0]
    assert rec["warmup_runs"] == 0 and len(rec["samples_ns"]) == 1
    # warm-up times that never agree: warmup + WARMUP_EXTRA runs, then the timed ones, none dropped
    times = iter([1.0, 2.0, 1.0, 2.0, 1.0, 2.0, 1.0, 2.0, 1.0, 2.0, 1.0])
    monkeypatch.setattr(C, "_step_seconds", lambda m, kinds, counts: next(times))
    rec = M.measure(tiny_qwen(), tests=("pp",), depths=(0,), n_prompt=4, repeats=2, warmup=1, progress=False)[0]
    assert rec["warmup_runs"] == 1 + C.WARMUP_EXTRA and len(rec["samples_ns"]) == 2
    # steady from the start: one run beyond `warmup` to compare with, then timed
    times = iter([1.0] * 10)
    monkeypatch.setattr(C, "_step_seconds", lambda m, kinds, counts: next(times))
    rec = M.measure(tiny_qwen(), tests=("pp",), depths=(0,), n_prompt=4, repeats=2, warmup=1, progress=False)[0]
    assert rec["warmup_runs"] == 2 and rec["samples_ns"] == [1e9, 1e9]


def test_gemma4_samples_windowed_global_and_shared_layers_apart():
    # Gemma-4-E2B: 35 dense layers; 12 windowed + 3 global layers cache, 16 windowed + 4 global share
    cfg = configs.load("gemma-4-e2b")
    roles = M.layer_roles(cfg)
    assert (roles.count("dense+window"), roles.count("dense"), roles.count("dense+window+shared"),
            roles.count("dense+shared")) == (12, 3, 16, 4)
    assert len(M.sample_layers(cfg, 2)) == 8
    # the decode floor reads one row of the per-layer table, the global layers' cache at every depth and the
    # windowed layers' only up to the window
    f = lambda d: M.decode_bytes_per_token(cfg, "q8_0", "f16", d)
    assert f(2048) - f(1024) == 1024 * cfg.kv_bytes_per_token("f16", windowed=False)
    assert f(512) - f(0) == 512 * cfg.kv_bytes_per_token("f16")
    assert f(0) < cfg.weight_bytes("q8_0") - 2 * 10 ** 9      # not the 2.35 B-parameter table whole


def test_layers_full_refuses_a_model_larger_than_memory(monkeypatch):
    """layers='full' forces the whole model; one that cannot fit in this machine's available memory is one
    error with the sizes, before any layer is built (it would swap or be killed), pointing at sampling."""
    from glmbench.measure import cpu
    built = []
    monkeypatch.setattr(cpu, "available_bytes", lambda: 1 << 30)
    monkeypatch.setattr(cpu, "Model", lambda *a, **k: built.append(1))
    with pytest.raises(ValueError, match=r"layers='full': glm-4\.7-flash at bf16 weights .* needs \d+\.\d GiB, "
                                         r"more than the 1\.0 GiB this machine has available; use layers='auto'"):
        cpu.measure("glm-4.7-flash", layers="full", depths=(0,), n_prompt=4, n_gen=2, repeats=1, progress=False)
    assert built == []


def test_kernel_bench_states_the_command_that_reproduces_it(tmp_path, monkeypatch):
    """`python -m glmbench.bench kernels --only TEXT --out FILE`: the results' Command line names the
    --only subset it ran (it said `kernels --quick` alone, a command that runs every case)."""
    import io

    from glmbench import bench
    ceil = {"cpu": "test CPU", "threads": 1, "bandwidth_gbs": 10.0, "bandwidth_read_gbs": 12.0, "fma_gflops": 50.0,
            "fma_vector_bits": 256}
    monkeypatch.setattr(bench, "measure_ceilings", lambda quick=False: ceil)
    monkeypatch.setattr(bench, "bf16_dot_peak", lambda quick=False: None)
    monkeypatch.setattr(bench, "kernel_cases", lambda quick: [])
    monkeypatch.setattr(bench, "_family_groups", lambda quick: ([], []))
    seen = {}

    def run_cases(groups, ceilings, repeats, min_seconds, only=None, stream=None):
        seen["only"] = only
        return []
    monkeypatch.setattr(bench, "run_cases", run_cases)
    out = tmp_path / "k.md"
    bench.kernels(quick=True, out=str(out), only="gemma 3", stream=io.StringIO())
    assert seen["only"] == "gemma 3"
    (cmd,) = [ln for ln in out.read_text().splitlines() if ln.startswith("Command: ")]
    assert cmd.startswith("Command: python -m glmbench.bench kernels --quick --only 'gemma 3'; run time ")
    bench.kernels(quick=False, out=str(out), only=None, stream=io.StringIO())
    assert seen["only"] is None
    (cmd,) = [ln for ln in out.read_text().splitlines() if ln.startswith("Command: ")]
    assert cmd.startswith("Command: python -m glmbench.bench kernels; run time ")


def test_a_cache_deeper_than_memory_is_refused_before_building(monkeypatch):
    """A sampled model still caches each point's whole depth: `measure qwen3-0.6b --depths 100M` built its 2 layers
    and died filling an 800 GiB cache (a MemoryError traceback, or the OOM killer). It is one error with the sizes
    now, before any layer is built."""
    from glmbench.measure import cpu
    built = []
    monkeypatch.setattr(cpu, "available_bytes", lambda: 16 << 30)
    monkeypatch.setattr(cpu, "Model", lambda *a, **k: built.append(1))
    with pytest.raises(ValueError, match=r"qwen3-0\.6b: a f16 cache of 104,857,601 tokens \(depth 104,857,600 plus one run's "
                                         r"new tokens\) on the 2 layers timed needs 800\.0 GiB, more than the 16\.0 GiB"):
        cpu.measure("qwen3-0.6b", layers=2, depths=(100 << 20,), n_prompt=1, n_gen=1, repeats=1, progress=False)
    assert built == []
    # by hand: qwen3-0.6b caches 8 KV heads x 128 x (K + V) x 2 bytes = 4 KiB per layer and token
    assert cpu.cache_bytes(configs.load("qwen3-0.6b"), "f16", 1000, [0, 27]) == 2 * 4096 * 1000
    # a windowed layer keeps at most its window: Gemma 3's local layers, its global ones every token
    cfg = configs.load("gemma-3-12b")
    n = 10 ** 6
    assert cpu.cache_bytes(cfg, "f16", n) == (cfg.kv_bytes_per_token("f16", windowed=False) * n
                                               + cfg.kv_bytes_per_token("f16", windowed=True) * cfg.sliding_window)


def test_points_past_the_native_positions_say_so():
    # measure at a depth past the model's max_position_embeddings ran without a word; predicted records
    # carry native_context and beyond_native, measured ones did not
    hf = dict(tiny_qwen().hf)
    hf.update(max_position_embeddings=20)
    cfg = configs.load(hf)
    recs = M.measure(cfg, layers="full", weights="f32", kv="f32", depths=(0, 16), n_prompt=6, n_gen=3, repeats=1,
                     warmup=1, progress=False)
    got = [(r["test"], r["n_depth"], r["native_context"], r["beyond_native"]) for r in recs]
    # pp6 @16 reaches 22 positions, tg3 @16 reaches 19, the mem point holds 16
    assert got == [("pp", 0, 20, False), ("tg", 0, 20, False), ("pp", 16, 20, True), ("tg", 16, 20, False),
                   ("mem", 16, 20, False)]
    for r in recs:
        records.validate(r)


def test_measure_command_notes_points_past_the_native_positions(tmp_path, capsys):
    from glmbench import cli
    hf = dict(tiny_qwen().hf)
    hf.update(max_position_embeddings=20)
    p = tmp_path / "config.json"
    p.write_text(json.dumps(hf))
    rc = cli.main(["measure", str(p), "--layers", "full", "--weights", "f32", "--kv", "f32", "--depths", "0,16",
                   "--n-prompt", "6", "--n-gen", "3", "--repeats", "1", "-q", "--json"])
    err = capsys.readouterr().err
    assert rc == 0, err
    assert "note: pp6@16 run past" in err and "native 20 positions" in err
    assert "tg@16" not in err.split("note:")[1]          # tg3 @16 reaches 19 positions: within

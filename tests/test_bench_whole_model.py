"""bench/bench_whole_model.py's own logic (no llama.cpp needed): one clear error for a missing
llama-bench or a bad argument, llama-bench's JSON read into pp/tg records, the decode floor's bytes
from a file's tensors, and the report of which matrices glmbench runs as stored."""
import json
import os
import stat
import sys

import pytest

gguf = pytest.importorskip("gguf", reason="GGUF tests need the gguf package")
pytest.importorskip("torch", reason="the tiny HF models need torch")
pytest.importorskip("transformers", reason="the tiny HF models need transformers")

import gguf_writer  # noqa: E402
from test_model_hf import tiny_hf_model  # noqa: E402

from glmbench.measure.cpu import decode_bytes_per_token  # noqa: E402
from glmbench.models import configs  # noqa: E402

sys.path.insert(0, os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "bench"))
import bench_whole_model as bw  # noqa: E402


def _exe(path, text):
    path.write_text(text)
    path.chmod(path.stat().st_mode | stat.S_IXUSR)
    return str(path)


def test_missing_llama_bench_is_one_error(tmp_path, capsys):
    assert bw.main(["--llama-build", str(tmp_path), "--work-dir", str(tmp_path / "w")]) == 2
    err = capsys.readouterr().err.strip()
    assert err.count("\n") == 0
    assert str(tmp_path / "bin" / "llama-bench") in err and "build_llama_bench.sh" in err
    assert not (tmp_path / "w").exists()   # nothing made before the check


@pytest.mark.parametrize("args,words", [(["--files", "glm-Q4_K_M,nope"], ["nope", "glm-q4_0"]),
                                        (["--depths", "0,4k"], ["--depths", "4k"]),
                                        (["--glm-layers", "1"], ["--glm-layers", ">= 2"]),
                                        (["--n-gen", "0"], ["--n-gen", ">= 1"])])
def test_bad_arguments_are_one_error(tmp_path, capsys, args, words):
    (tmp_path / "bin").mkdir()
    for n in ("llama-bench", "llama-quantize"):
        _exe(tmp_path / "bin" / n, "#!/bin/sh\nexit 0\n")
    assert bw.main(["--llama-build", str(tmp_path), "--work-dir", str(tmp_path / "w"), *args]) == 2
    err = capsys.readouterr().err.strip()
    assert err.count("\n") == 0 and all(w in err for w in words), err


def _fake_llama_bench(tmp_path, stdout, stderr="", rc=0):
    (tmp_path / "out.json").write_text(stdout)
    (tmp_path / "err.txt").write_text(stderr)
    return _exe(tmp_path / "llama-bench", f"#!/bin/sh\ncat {tmp_path}/out.json\ncat {tmp_path}/err.txt >&2\nexit {rc}\n")


def test_llama_bench_json_read_into_pp_and_tg(tmp_path):
    recs = [{"n_prompt": 512, "n_gen": 0, "n_depth": 4096, "avg_ts": 70.5, "stddev_ts": 1.0},
            {"n_prompt": 0, "n_gen": 32, "n_depth": 4096, "avg_ts": 18.25, "stddev_ts": 0.5}]
    md = "| model | test | t/s |\n| --- | --- | --: |\n| x | pp512 @ d4096 | 70.50 |\n| x | tg32 @ d4096 | 18.25 |\n"
    lb = _fake_llama_bench(tmp_path, json.dumps(recs), md)
    cmd = bw.llama_bench_cmd(lb, "m.gguf", 2, 512, 32, 4096)
    assert cmd[1:] == ["-m", "m.gguf", "-t", "2", "-p", "512", "-n", "32", "-d", "4096", "-o", "json", "-oe", "md"]
    # another cache format: llama-bench runs it too (a peer row compares the same cache)
    q8 = bw.llama_bench_cmd(lb, "m.gguf", 2, 512, 32, 4096, "q8_0")
    assert q8[1:] == ["-m", "m.gguf", "-t", "2", "-p", "512", "-n", "32", "-d", "4096", "-ctk", "q8_0", "-ctv", "q8_0",
                      "-o", "json", "-oe", "md"]
    out = bw.run_llama_bench(cmd)
    assert out["pp"]["avg_ts"] == 70.5 and out["tg"]["avg_ts"] == 18.25
    assert out["md"] == md.strip().splitlines()


@pytest.mark.parametrize("stdout,rc,words", [("not json", 0, ["not JSON"]), ("[]", 0, ["expected a pp and a tg"]),
                                             ("", 1, ["failed (1)", "boom"])])
def test_llama_bench_bad_output_is_one_error(tmp_path, stdout, rc, words):
    lb = _fake_llama_bench(tmp_path, stdout, "boom", rc)
    with pytest.raises(bw.BenchError) as e:
        bw.run_llama_bench(bw.llama_bench_cmd(lb, "m.gguf", 2, 512, 32, 0))
    assert all(w in str(e.value) for w in words) and lb in str(e.value)


def _glm_file(tmp_path, types=None):
    cfg, model = tiny_hf_model("glm4_moe_lite")
    p = tmp_path / "glm.gguf"
    gguf_writer.write(p, cfg, model.state_dict(), **({"types": types} if types else {}))
    return str(p)


@pytest.mark.parametrize("depth", [0, 100])
def test_decode_bytes_of_an_f32_file_match_the_config_count(tmp_path, depth):
    # the file's tensors (routed experts at k of E, one embedding row) against the count measure
    # makes from the config alone for f32 weights: two independent paths to the same bytes
    p = _glm_file(tmp_path)
    cfg = configs.load_gguf(p)
    total, head, kvb = bw.decode_bytes(p, depth, "f16")
    assert total == decode_bytes_per_token(cfg, weights="f32", kv="f16", depth=depth)
    assert head == cfg.vocab_size * cfg.hidden_size * 4
    assert kvb == cfg.kv_bytes_per_token("f16") * depth


def test_stored_check_names_what_is_not_run_as_stored(tmp_path):
    # q8_0 matrices run as stored; deepseek2's attn_k_b / attn_v_b (q8_0, and f32 where the rows are
    # not whole blocks) kept split as stored; q4_1 ones are joined into kv_b_proj (f32)
    def types(name, shape):
        return gguf.GGMLQuantizationType.Q8_0 if shape[-1] % 32 == 0 else gguf.GGMLQuantizationType.F32
    p = _glm_file(tmp_path, types)
    ok, bad = bw.stored_check(p)
    assert any(s.startswith("Q8_0: ") for s in ok)
    n = configs.load_gguf(p).n_layers
    assert [s for s in ok if "split" in s] == [f"F32+Q8_0 (attn_k_b/attn_v_b split): {n}"]
    assert not [s for s in bad if "joined into kv_b_proj" in s]

    def types41(name, shape):
        return gguf.GGMLQuantizationType.Q4_1 if "attn_v_b" in name else types(name, shape)
    p = _glm_file(tmp_path / "q41", types41) if (tmp_path / "q41").mkdir() is None else None
    ok, bad = bw.stored_check(p)
    joined = [s for s in bad if "joined into kv_b_proj" in s]
    assert len(joined) == 1 and joined[0].endswith(f": {n}")
    assert bw.file_types(p)["Q8_0"][0] > 0


def test_roofline_floor_takes_the_attention_at_its_larger_cost(tmp_path):
    # MLA absorbed: 2 x heads x (2 x latent + rope) FLOPs per cached token and layer, counted by hand
    p = _glm_file(tmp_path)
    cfg = configs.load_gguf(p)
    f = bw.decode_attention_flops(p, 1000)
    assert f == 2.0 * cfg.n_heads * (2 * cfg.kv_lora_rank + cfg.qk_rope_head_dim) * 1000 * cfg.n_layers
    assert bw.decode_attention_flops(p, 0) == 0.0
    # memory-bound attention: the roofline is the bandwidth floor; compute-bound: slower than it
    nbytes, kvb = 1e9, 2e8
    assert bw.roofline_floor(nbytes, kvb, 1e6, 50.0, 500.0) == pytest.approx(50e9 / nbytes)
    slow = bw.roofline_floor(nbytes, kvb, 5e9, 50.0, 500.0)      # 10 ms of arithmetic vs 4 ms of cache bytes
    assert slow == pytest.approx(1.0 / (0.8e9 / 50e9 + 5e9 / 500e9))
    assert slow < 50e9 / nbytes


def test_paired_floor_from_a_probed_measure(tmp_path):
    # --paired-probe: measure(bandwidth_probe=True) gives the tg record the triad measured beside its
    # steps, and the floor at it is the file's decode bytes at that bandwidth over the record's tok/s
    p = _glm_file(tmp_path)
    for kind in ("read", "triad"):
        tg = bw.run_glmbench(p, 1, 8, 2, 0, 1, "f16", probe=kind)["tg"]
        assert tg["bandwidth_gbs"] > 0 and len(tg["bandwidth_gbs_samples"]) == 1 and tg["bandwidth_kind"] == kind
    nbytes = bw.decode_bytes(p, 0, "f16")[0]
    gbs, x = bw.paired_floor(nbytes, tg)
    assert gbs == tg["bandwidth_gbs"]
    assert x == pytest.approx(gbs * 1e9 / nbytes / tg["avg_ts"])
    # without the probes (or a record that has none) there is no paired floor
    assert bw.paired_floor(nbytes, bw.run_glmbench(p, 1, 8, 2, 0, 1, "f16")["tg"]) is None
    assert bw.paired_floor(nbytes, {"avg_ts": 10.0, "bandwidth_gbs": 0.0}) is None


def test_rounds_give_a_median_ratio_per_point(tmp_path):
    # --rounds N: every round's ratio is its own row and the point's median ratio over the rounds (with
    # their range) is added, read from the rows' own numbers
    import argparse
    p = _glm_file(tmp_path)
    made = {"glm-q4_0": dict(path=p, layers=2, make_s=0.0, types=bw.file_types(p), stored=bw.stored_check(p),
                             size=os.path.getsize(p))}

    def side(pp, tg, extra=None):
        return {"pp": {"avg_ts": pp, "stddev_ts": 1.0, **(extra or {})},
                "tg": {"avg_ts": tg, "stddev_ts": 0.1, "embed_ms": 0.1, "head_ms": 1.0, "layer_ms_moe": 1.0,
                       **(extra or {})}, "md": ["| a | b |", "|---|---|", "| x | y |"]}
    # ratios pp 2.0, 1.5, 3.0 (median 2.0) and tg 1.1, 1.3, 0.9 (median 1.1)
    rows = [("glm-q4_0", 0, ["llama-bench"], {"llama-bench": side(100.0, 10.0), "glmbench": side(l * 100.0, t * 10.0),
                                              "llama-bench triad": 40.0, "glmbench triad": 40.0,
                                              "llama-bench s": 1.0, "glmbench s": 1.0}, r)
            for r, (l, t) in enumerate([(2.0, 1.1), (1.5, 1.3), (3.0, 0.9)])]
    a = argparse.Namespace(rounds=3, smoke=False, threads=2, n_prompt=512, n_gen=32, kv="f16", repeats=5, paired_probe=None)
    ceil = {"bandwidth_gbs": 40.0, "bandwidth_read_gbs": 38.0, "fma_gflops": 200.0}
    text = bw.render(a, [], made, rows, ceil, ceil, "u0", "u1", 60.0)
    assert "| glm-q4_0 (round 2) | 0 |" in text and "3 rounds per point" in text
    # llama-bench against the same bytes at the triad read before its run: 40 GB/s over the file's decode bytes
    nbytes = bw.decode_bytes(p, 0, "f16")[0]
    row = next(ln for ln in text.splitlines() if ln.startswith("| glm-q4_0 (round 1) | 0 | 100.0"))
    assert f"| {40.0e9 / nbytes / 10.0:.2f} |" in row
    assert "| glm-q4_0 | 0 | 2.00x (1.50-3.00x) | 1.10x (0.90-1.30x) |" in text
    # one round: the table as before, no round labels and no median table
    one = bw.render(argparse.Namespace(**{**vars(a), "rounds": 1}), [], made, rows[:1], ceil, ceil, "u0", "u1", 60.0)
    assert "(round" not in one and "Median over" not in one and "| glm-q4_0 | 0 |" in one


def test_rounds_must_be_positive(tmp_path, capsys):
    (tmp_path / "bin").mkdir()
    for n in ("llama-bench", "llama-quantize"):
        _exe(tmp_path / "bin" / n, "#!/bin/sh\nexit 0\n")
    assert bw.main(["--llama-build", str(tmp_path), "--work-dir", str(tmp_path / "w"), "--rounds", "0"]) == 2
    err = capsys.readouterr().err.strip()
    assert "--rounds" in err and ">= 1" in err

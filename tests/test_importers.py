"""Results in: glmbench.results.importers reads other tools' output as records (format told from
the content), and compare / the report match points by one rule.

The samples in <repo>/../shared/formats copy each tool's real layout (numbers invented); the
tests that use them skip when that folder is absent. The edge cases are written here."""
import json
import pathlib

import pytest

from glmbench import vocab
from glmbench.predict import costmodel as cm
from glmbench.predict import sweep
from glmbench.results import compare as cmp
from glmbench.results import importers as im
from glmbench.results import records

ROOT = pathlib.Path(__file__).resolve().parent.parent
FORMATS = ROOT.parent / "shared" / "formats"
needs_samples = pytest.mark.skipif(not FORMATS.is_dir(), reason=f"{FORMATS} (the shared format samples) is absent")


def sample(name):
    return str(FORMATS / name)


def write(tmp_path, name, text):
    p = tmp_path / name
    p.write_text(text)
    return str(p)


LB_KEYS = dict(build_commit="abc1234", build_number=1, cpu_info="Some CPU", gpu_info="NVIDIA GeForce RTX 3090",
               backends="CUDA", model_filename="/m/Qwen3-32B-Q4_K_M.gguf", model_type="qwen3 32B Q4_K - Medium",
               n_batch=2048, n_ubatch=512, n_threads=8, type_k="f16", type_v="f16", n_gpu_layers=99,
               split_mode="layer", devices="auto", flash_attn=1)


def lb(**kw):
    """One llama-bench -o json object (the fields the importer reads, and a few more)."""
    o = dict(LB_KEYS, n_prompt=0, n_gen=128, n_depth=0, avg_ts=30.0, stddev_ts=0.1)
    o.update(kw)
    return o


# ---- the samples ----------------------------------------------------------------------------------
@needs_samples
@pytest.mark.parametrize("name,fmt", [
    ("llama-bench.json", "llama-bench-json"), ("llama-bench.jsonl", "llama-bench-jsonl"),
    ("llama-bench.csv", "llama-bench-csv"), ("llama-bench.md", "llama-bench-md"), ("llama-bench.sql", "llama-bench-sql"),
    ("sweep-bench.md", "sweep-bench-md"), ("sweep-bench-mainline.md", "sweep-bench-md"),
    ("llama-batched-bench.md", "batched-bench-md"), ("vllm-bench-serve.json", "vllm"),
    ("sglang-bench-serving.jsonl", "sglang")])
def test_detects_each_sample_from_its_content(name, fmt, tmp_path):
    text = pathlib.Path(sample(name)).read_text()
    assert im.detect(text) == fmt
    # the name plays no part: the same bytes under another name read the same
    other = write(tmp_path, "results.txt", text)
    assert im.detect(pathlib.Path(other).read_text()) == fmt


@needs_samples
def test_llama_bench_json_jsonl_csv_sql_agree_and_map_fields():
    js = im.read(sample("llama-bench.json"))
    assert len(js) == 6
    for other in ("llama-bench.jsonl", "llama-bench.csv", "llama-bench.sql"):
        rs = im.read(sample(other))
        assert len(rs) == 6
        for a, b in zip(js, rs):
            skip = {"source", "samples_ns", "samples_ts"}  # csv and sql carry no samples
            assert {k: v for k, v in a.items() if k not in skip} == {k: v for k, v in b.items() if k not in skip}
    raw = json.loads(pathlib.Path(sample("llama-bench.json")).read_text())
    for r, o in zip(js, raw):
        assert r["evidence"] == "measured" and r["tool"] == "llama-bench"
        assert r["test"] == ("pp" if o["n_gen"] == 0 else "tg")
        assert (r["n_prompt"], r["n_gen"], r["n_depth"]) == (o["n_prompt"], o["n_gen"], o["n_depth"])
        assert r["avg_ts"] == o["avg_ts"] and r["stddev_ts"] == o["stddev_ts"]
        assert r["model"] == "glm-4.7-flash"                     # from GLM-4.7-Flash-Q4_K_M.gguf
        assert r["device"] == "RTX 4090" and r["hardware"] == "rtx-4090" and r["n_cards"] == 2
        assert r["split"] == "layer" and r["weights"] == "Q4_K_M" and r["type_k"] == r["type_v"] == "f16"
        assert r["n_batch"] == 2048 and r["n_ubatch"] == 512   # llama-bench's logical / physical batch
        assert r["n_streams"] == 1 and r["flash_attn"] == 1
        # the samples are kept and agree with the mean (avg_ts is the mean of samples_ts)
        assert sum(r["samples_ts"]) / len(r["samples_ts"]) == pytest.approx(r["avg_ts"], rel=1e-5)
    assert [r["n_depth"] for r in js] == [0, 0, 8192, 8192, 32768, 32768]
    assert js[0]["source"].endswith("llama-bench.json:2") and js[1]["source"].endswith("llama-bench.json:46")


@needs_samples
def test_llama_bench_md_needs_model_then_agrees_with_json():
    with pytest.raises(im.FormatError) as e:
        im.read(sample("llama-bench.md"))
    msg = str(e.value)
    assert msg.startswith(sample("llama-bench.md") + ":3:") and "--model" in msg and "deepseek2 30B.A3B" in msg
    md = im.read(sample("llama-bench.md"), model="glm-4.7-flash")
    js = im.read(sample("llama-bench.json"))
    assert len(md) == 6
    for a, b in zip(md, js):
        assert (a["test"], a["n_prompt"], a["n_gen"], a["n_depth"]) == (b["test"], b["n_prompt"], b["n_gen"], b["n_depth"])
        assert a["avg_ts"] == pytest.approx(b["avg_ts"], abs=0.005) and a["stddev_ts"] == pytest.approx(b["stddev_ts"], abs=0.005)
        assert a["weights"] == "Q4_K_M" and a["flash_attn"] == 1 and a["n_gpu_layers"] == 99
        assert a["build_commit"] == "4be1e7c" and a["build_number"] == 9731
    assert md[0]["model_n_params"] == pytest.approx(29.94e9, rel=1e-3)


@needs_samples
@pytest.mark.parametrize("name,rows,tool", [("sweep-bench.md", 9, "ik_llama.cpp"),
                                            ("sweep-bench-mainline.md", 33, "mainline")])
def test_sweep_bench_tables(name, rows, tool):
    with pytest.raises(im.FormatError, match=r":6: cannot tell which model .*--model"):
        im.read(sample(name))
    rs = im.read(sample(name), model="qwen3-32b")
    assert len(rs) == 2 * rows and all(r["model"] == "qwen3-32b" and r["evidence"] == "measured" for r in rs)
    assert tool in rs[0]["tool"]
    pp = [r for r in rs if r["test"] == "pp"]
    tg = [r for r in rs if r["test"] == "tg"]
    assert len(pp) == len(tg) == rows
    assert pp[0]["n_depth"] == 0 and pp[-1]["n_depth"] == 16384
    for r in pp:
        assert r["n_prompt"] == 512 and r["n_gen"] == 0 and r["n_ubatch"] == 512 and r["flash_attn"] == 1
        # S_PP = PP / T_PP (T_PP printed to 3 decimals)
        assert r["avg_ts"] == pytest.approx(512 / r["seconds"], rel=3e-3)
    for r in tg:
        assert r["n_gen"] == 128 and r["n_prompt"] == 0
        assert r["avg_ts"] == pytest.approx(128 / r["seconds"], rel=3e-4)


@needs_samples
def test_batched_bench_rows_are_streams():
    rs = im.read(sample("llama-batched-bench.md"), model="qwen3-32b")
    assert len(rs) == 24
    tg = [r for r in rs if r["test"] == "tg"]
    pp = [r for r in rs if r["test"] == "pp"]
    assert [r["n_streams"] for r in tg[:6]] == [1, 2, 4, 8, 16, 32]
    prompt_of = {r["source"]: r["n_prompt"] for r in pp}
    for r in tg:
        assert r["n_depth"] == prompt_of[r["source"]]  # generation starts at depth PP, the row's prompt
        assert r["avg_ts"] == pytest.approx(r["n_streams"] * 128 / r["seconds"], rel=3e-3)  # S_TG = B*TG/T_TG
    for r in pp:
        assert r["n_depth"] == 0 and r["n_streams"] == r["pl"]
        assert r["avg_ts"] == pytest.approx(r["n_streams"] * r["n_prompt"] / r["seconds"], rel=2e-2)


@needs_samples
def test_vllm_and_sglang_serving_results():
    (v,) = im.read(sample("vllm-bench-serve.json"))
    raw = json.loads(pathlib.Path(sample("vllm-bench-serve.json")).read_text())
    assert v["test"] == "serve" and v["model"] == "qwen3-32b" and v["tool"] == "vllm bench serve"
    assert v["concurrency"] == v["n_streams"] == 4 and v["request_rate"] == "inf"
    assert v["aggregate_tok_s"] == v["avg_ts"] == pytest.approx(raw["total_output_tokens"] / raw["duration"])
    assert v["ttft_s"] == pytest.approx(raw["mean_ttft_ms"] / 1000)
    assert v["n_prompt"] == round(raw["total_input_tokens"] / raw["completed"])
    # line 2 ran against a vLLM server: no server_info, so nothing names the model
    with pytest.raises(im.FormatError, match=r"sglang-bench-serving.jsonl:2: cannot tell which model"):
        im.read(sample("sglang-bench-serving.jsonl"))
    s1, s2 = im.read(sample("sglang-bench-serving.jsonl"), default_model="qwen3-32b")
    assert s1["model"] == s2["model"] == "qwen3-32b" and s1["backend"] == "sglang" and s2["backend"] == "vllm"
    assert s1["n_cards"] == 1 and s1["concurrency"] == 8 and s2["concurrency"] == 4
    assert s2["request_rate"] == "inf"  # a bare Infinity in the file


# ---- edge cases written here ----------------------------------------------------------------------
@pytest.mark.parametrize("text,msg", [
    ("", "empty file"), ("  \n\n", "empty file"),
    ("hello, world\nthis is not a benchmark\n", "not a results format"),
    ("[1, 2", ":1: not valid JSON"),
    ('{"foo": 1}\n', ":1: a JSON object of no known format"),
    ("[]", "holds no records"),
])
def test_bad_files_are_one_clear_error(tmp_path, text, msg):
    p = write(tmp_path, "x.json", text)
    with pytest.raises(im.FormatError) as e:
        im.read(p)
    assert str(e.value).startswith(p) and msg in str(e.value) and "\n" not in str(e.value)


def test_llama_bench_bad_values_name_the_line(tmp_path):
    ok = lb()
    for bad, msg in ((dict(avg_ts=0), "`avg_ts` must be > 0"), (dict(avg_ts=-3.0), "`avg_ts` must be > 0"),
                     (dict(avg_ts=None), "no speed"), (dict(n_depth=-1), "`n_depth` must be >= 0"),
                     (dict(n_prompt=0, n_gen=0), "neither prompt nor generated"),
                     (dict(n_gen="many"), "`n_gen` must be a number")):
        o = dict(ok, **bad)
        text = json.dumps([ok, o], indent=2)
        p = write(tmp_path, "lb.json", text)
        line = text.splitlines().index("  {", 2) + 1  # the second object's first line
        with pytest.raises(im.FormatError) as e:
            im.read(p)
        assert str(e.value).startswith(f"{p}:{line}:") and msg in str(e.value), str(e.value)
    # jsonl: the line is the line
    p = write(tmp_path, "lb.jsonl", json.dumps(ok) + "\n" + json.dumps(dict(ok, avg_ts=-1)) + "\n")
    with pytest.raises(im.FormatError, match=r"lb.jsonl:2: field `avg_ts` must be > 0"):
        im.read(p)
    # a record without a depth in glmbench's own measured records
    p = write(tmp_path, "own.json", json.dumps([dict(evidence="measured", test="tg", model="qwen3-32b", avg_ts=3.0)]))
    with pytest.raises(im.FormatError, match=r"own.json:1: field `n_depth` is missing"):
        im.read(p)


def test_csv_and_md_rows_that_do_not_parse(tmp_path):
    head = "build_commit,model_filename,model_type,n_prompt,n_gen,n_depth,avg_ts,stddev_ts\n"
    p = write(tmp_path, "a.csv", head + '"x","/m/Qwen3-32B-Q8_0.gguf","qwen3 32B Q8_0","512","0","0","100.5","1"\n'
                                       '"x","/m/Qwen3-32B-Q8_0.gguf","qwen3 32B Q8_0","512","0","4096","fast","1"\n')
    with pytest.raises(im.FormatError, match=r"a.csv:3: field `avg_ts` must be a number, got 'fast'"):
        im.read(p)
    p = write(tmp_path, "b.csv", head + '"x","/m/Qwen3-32B-Q8_0.gguf","qwen3 32B Q8_0","512","0"\n')
    with pytest.raises(im.FormatError, match=r"b.csv:2: the row does not have the header's 8 cells"):
        im.read(p)
    sweep_md = ("\nmain: n_kv_max = 4096, n_batch = 2048, n_ubatch = 512, flash_attn = 1, n_gpu_layers = 99, "
                "n_threads = 8, n_threads_batch = 8\n\n"
                "|    PP |     TG |   N_KV |   T_PP s | S_PP t/s |   T_TG s | S_TG t/s |\n"
                "|-------|--------|--------|----------|----------|----------|----------|\n"
                "|   512 |    128 |      0 |    0.200 |  2560.00 |    4.000 |    32.00 |\n"
                "|   512 |    128 |    512 |    0.210 |     nan? |    4.100 |    31.22 |\n")
    p = write(tmp_path, "s.md", sweep_md)
    with pytest.raises(im.FormatError, match=r"s.md:7: field `S_PP t/s` must be a number"):
        im.read(p, model="qwen3-32b")
    p = write(tmp_path, "s2.md", sweep_md.replace("|     nan? |    4.100 |    31.22 |", "|  2400.0 |"))
    with pytest.raises(im.FormatError, match=r"s2.md:7: a table row with 5 cells, the header has 7"):
        im.read(p, model="qwen3-32b")
    p = write(tmp_path, "s3.md", sweep_md.replace("nan?", "2438.1").replace("    31.22 |", "     0.00 |"))
    with pytest.raises(im.FormatError, match=r"s3.md:7: field `S_TG t/s` must be > 0"):
        im.read(p, model="qwen3-32b")
    # log lines around the table (a whole stderr pasted) are skipped
    p = write(tmp_path, "s4.md", "llama_model_loader: loaded meta data\n" + sweep_md.replace("nan?", "2438.1")
              + "\nllama_perf_context_print: total time = 10 ms\n")
    assert len(im.read(p, model="qwen3-32b")) == 4
    md = ("| model | size | params | backend | ngl | test | t/s |\n| --- | ---: | ---: | --- | --: | ---: | ---: |\n"
          "| qwen3 32B Q4_K - Medium | 18.40 GiB | 32.76 B | CUDA | 99 | pp512 | 2000.00 ± 5.00 |\n"
          "| qwen3 32B Q4_K - Medium | 18.40 GiB | 32.76 B | CUDA | 99 | warmup | 2000.00 ± 5.00 |\n")
    p = write(tmp_path, "lb.md", md)
    with pytest.raises(im.FormatError, match=r"lb.md:4: test 'warmup' is not llama-bench's"):
        im.read(p)


def test_quant_names_are_one_spelling_whatever_the_case():
    q = im.quant_name
    assert q("Q4_K_M") == q("q4_k_m") == q("Q4_K - Medium") == "Q4_K_M"
    assert q("iq4_xs") == q("IQ4_XS") == q("IQ4_XS - 4.25 bpw") == "iq4_xs"
    assert q("Q8_0") == "q8_0" and q("q4_k") == q("Q4_K") == "q4_K" and q("BF16") == "bf16" and q("all F32") == "f32"
    assert q("Q3_K - Large") == "Q3_K_L" and q("Q2_K - Small") == "Q2_K_S" and q("ud-q4_k_xl") is None
    assert q("hello") is None and q(None) is None and q("") is None


@pytest.mark.parametrize("filename,model_type,expect", [
    ("/m/GLM-4.7-Flash-Q4_K_M.gguf", "deepseek2 30B.A3B Q4_K - Medium", "glm-4.7-flash"),
    ("/m/glm-4.7-flash-iq4_xs-00001-of-00002.gguf", "", "glm-4.7-flash"),
    ("DeepSeek-V2-Lite-Chat.Q4_K_M.gguf", None, "deepseek-v2-lite"),  # a dot before the quant
    ("Qwen/Qwen3-32B", None, "qwen3-32b"),
    ("/m/Qwen3-30B-A3B-Instruct-2507-Q4_K_M.gguf", None, "qwen3-30b-a3b"),
    ("/m/Mistral-Small-3.2-24B-Instruct-2506-Q4_K_M.gguf", None, "mistral-small-24b"),
    ("/m/model.gguf", "qwen3 32B Q4_K - Medium", "qwen3-32b"),        # the architecture and size tell
    ("/m/model.gguf", "qwen3moe 30B.A3B Q4_K - Medium", None),        # Qwen3-30B-A3B and Qwen3-Coder-30B-A3B: one shape
    ("/m/model.gguf", "qwen3moe 235B.A22B Q4_K - Medium", "qwen3-235b-a22b"),
    ("/m/model.gguf", "deepseek2 30B.A3B Q4_K - Medium", None),       # shared architecture: cannot tell
    ("/m/model.gguf", "llama 24B Q4_K - Medium", None),
    ("/m/model.gguf", "qwen3 14B Q4_K - Medium", "qwen3-14b"),
    ("/m/model.gguf", "qwen3 4B Q4_K - Medium", None),                # no built-in of that size
])
def test_identify_model(filename, model_type, expect):
    name, why = im.identify_model(filename, model_type)
    assert name == expect, why


def test_llama_bench_variants(tmp_path):
    # weights from the file name when model_type has no file type; an older build: no n_depth,
    # flash_attn a bool, use_mmap; a -pg test; a CPU-only run; --model overrides the file name
    old = {k: v for k, v in lb(n_prompt=512, n_gen=0, flash_attn=True, use_mmap=True,
                               model_filename="/m/Qwen3-32B-IQ4_XS.gguf", model_type="qwen3 32B").items()
           if k != "n_depth"}
    pg = lb(n_prompt=512, n_gen=128, n_depth=1024, gpu_info="", cpu_info="AMD EPYC 7B13 64-Core Processor",
            split_mode="none")
    p = write(tmp_path, "lb.json", json.dumps([old, pg]))
    a, b = im.read(p)
    assert a["test"] == "pp" and a["n_depth"] == 0 and a["flash_attn"] == 1 and a["use_mmap"] is True
    assert a["weights"] == "iq4_xs" and a["model"] == "qwen3-32b" and a["n_cards"] == 1 and a["split"] == "none"
    assert b["test"] == "pg" and b["device"] == "AMD EPYC 7B13 64-Core Processor" and b["n_cards"] == 1
    assert "hardware" not in b
    assert [r["model"] for r in im.read(p, model="seed-oss-36b")] == ["seed-oss-36b"] * 2
    with pytest.raises(im.FormatError, match="`model`: config 'no-such-model' is neither"):
        im.read(p, model="no-such-model")
    # row split over two cards is a tensor split; devices narrows the cards
    two = lb(gpu_info="NVIDIA GeForce RTX 3090, NVIDIA GeForce RTX 3090, NVIDIA GeForce RTX 3090", split_mode="row",
             devices="CUDA0/CUDA1")
    (c,) = im.read(write(tmp_path, "two.json", json.dumps([two])))
    assert c["n_cards"] == 2 and c["split"] == "tensor" and c["split_mode"] == "row" and c["device"] == "RTX 3090"


def test_glmbench_records_read_as_before_and_inputs_unchanged(tmp_path):
    recs = sweep.predict(["qwen3-32b"], [dict(rig="rtx-3090")], [1024, 8192], tests=("tg", "pp", "mem"))
    for ext in ("json", "csv"):
        p = tmp_path / f"r.{ext}"
        records.write_records(p, recs)
        before = p.read_bytes(), p.stat().st_mtime_ns
        assert im.read(p) == records.read_records(p)
        assert (p.read_bytes(), p.stat().st_mtime_ns) == before
        # the content decides, not the extension
        q = tmp_path / f"renamed-{ext}.txt"
        q.write_bytes(p.read_bytes())
        assert im.read(q) == records.read_records(p)


def test_sql_may_not_reach_outside_its_memory_database(tmp_path):
    target = tmp_path / "evil.db"
    text = ("CREATE TABLE IF NOT EXISTS llama_bench (n_prompt INTEGER, n_gen INTEGER, avg_ts REAL);\n"
            f"ATTACH DATABASE '{target}' AS e;\n")
    p = write(tmp_path, "x.sql", text)
    with pytest.raises(im.FormatError, match=r"x.sql:2: SQL: not authorized"):
        im.read(p)
    assert not target.exists()


def test_vllm_append_result_and_bad_serving_values(tmp_path):
    o = dict(date="20260101-000000", endpoint_type="vllm", backend="vllm", model_id="Qwen/Qwen3-32B", num_prompts=4,
             request_rate="inf", max_concurrency=None, duration=2.0, completed=4, total_input_tokens=4096,
             total_output_tokens=512, output_throughput=256.0, mean_ttft_ms=100.0, mean_tpot_ms=15.0)
    p = write(tmp_path, "v.json", json.dumps(o) + "\n" + json.dumps(dict(o, max_concurrency=2)))
    a, b = im.read(p)
    assert a["concurrency"] == 4 and b["concurrency"] == 2 and a["n_prompt"] == 1024 and a["n_gen"] == 128
    assert a["per_stream_tok_s"] == pytest.approx(1000 / 15)
    p = write(tmp_path, "v2.json", json.dumps(dict(o, completed=0)))
    with pytest.raises(im.FormatError, match=r"v2.json:1: no request completed"):
        im.read(p)


# ---- one matching rule ------------------------------------------------------------------------------
def _tg(ev, depth, ts, n_gen=1, **kw):
    return dict(evidence=ev, test="tg", model="glm-4.7-flash", n_depth=depth, n_gen=n_gen, n_prompt=0, avg_ts=ts, **kw)


def test_compare_pairs_tg1_prediction_with_tg128_measurement_as_the_report_does():
    pred = [_tg("predicted", 0, 140.0, n_streams=1), _tg("predicted", 8192, 120.0, n_streams=1),
            _tg("predicted", 8192, 400.0, n_streams=4)]
    meas = [_tg("measured", 0, 150.0, n_gen=128), _tg("measured", 8192, 110.0, n_gen=128),
            _tg("measured", 32768, 80.0, n_gen=128)]
    rows, header = cmp.compare(pred, meas)
    assert header["evidence"] == ("predicted", "measured")
    assert [(r["test"], r["A"], r["B"]) for r in rows] == [("tg1 / tg128", 140.0, 150.0),
                                                          ("tg1@d8192 / tg128@d8192", 120.0, 110.0)]
    assert rows[1]["B/A"] == pytest.approx(110 / 120)
    # the report's pairs are the same pairs (the 4-stream prediction pairs with nothing)
    pairs = cmp.measured_predicted_pairs(pred + meas)
    assert sorted((m["n_depth"], p["avg_ts"]) for m, p in pairs) == [(0, 140.0), (8192, 120.0)]
    assert {vocab.join_key(m) for m, _ in pairs} == {vocab.join_key(pred[0]), vocab.join_key(pred[1])}
    # pp pairs on its prompt, serve on its concurrency
    assert vocab.join_key(dict(test="pp", model="m", n_prompt=512, n_depth=0)) != \
        vocab.join_key(dict(test="pp", model="m", n_prompt=2048, n_depth=0))
    assert vocab.join_key(dict(test="serve", model="m", n_depth=4096, concurrency=4, n_streams=4)) != \
        vocab.join_key(dict(test="serve", model="m", n_depth=4096, concurrency=8, n_streams=8))


def test_compare_more_than_two_files():
    a = [_tg("predicted", 0, 100.0), _tg("predicted", 4096, 80.0)]
    b = [_tg("measured", 0, 90.0, n_gen=128)]
    c = [_tg("measured", 0, 50.0, n_gen=16, device="CPU"), _tg("measured", 4096, 40.0, n_gen=16, device="CPU")]
    rows, header = cmp.compare(a, b, c)
    assert header["device"] == (None, None, "CPU")
    assert [(r["A"], r["B"], r["C"]) for r in rows] == [(100.0, 90.0, 50.0), (80.0, None, 40.0)]
    assert rows[0]["B/A"] == pytest.approx(0.9) and rows[0]["C/A"] == pytest.approx(0.5)
    assert rows[1]["B/A"] is None and rows[1]["C/A"] == pytest.approx(0.5)
    assert cmp.file_letters(28)[-3:] == ["Z", "AA", "AB"]


def test_tg_of_n_gen_tokens_is_the_mean_over_its_steps():
    s = cm.Setup(model="glm-4.7-flash", rig="rtx-3090")
    (r,) = sweep.predict(None, [s], [8192], tests=("tg",), n_gen=128)
    exact = sum(cm.decode(s, 8192 + i).seconds for i in range(128))
    assert r["n_gen"] == 128 and r["seconds"] == pytest.approx(exact, rel=1e-4)
    assert r["avg_ts"] == pytest.approx(128 / exact, rel=1e-4)
    (one,) = sweep.predict(None, [s], [8192], tests=("tg",))
    assert one["n_gen"] == 1 and one["avg_ts"] == pytest.approx(cm.decode(s, 8192).tok_s) and r["avg_ts"] < one["avg_ts"]

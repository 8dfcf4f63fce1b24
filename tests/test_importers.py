"""Results in: glmbench.results.importers reads other tools' output as records (format told from
the content), and compare / the report match points by one rule.

The samples in tests/data/formats copy each tool's real layout (numbers invented); tests/data/pasted
holds published results as they were posted (sources in tests/data/README.md). The edge cases are
written here."""
import json
import pathlib

import pytest

from glmbench import vocab
from glmbench.predict import costmodel as cm
from glmbench.predict import hardware
from glmbench.predict import sweep
from glmbench.results import compare as cmp
from glmbench.results import importers as im
from glmbench.results import records

ROOT = pathlib.Path(__file__).resolve().parent.parent
FORMATS = ROOT / "tests" / "data" / "formats"
PASTED = ROOT / "tests" / "data" / "pasted"
needs_samples = pytest.mark.skipif(not FORMATS.is_dir(), reason=f"{FORMATS} (the format samples) is absent")


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
def test_llama_bench_md_tells_its_model_then_agrees_with_json():
    # 'deepseek2 30B.A3B' + 29.94 B params: only GLM-4.7-Flash among the built-ins
    md = im.read(sample("llama-bench.md"))
    assert {r["model"] for r in md} == {"glm-4.7-flash"}
    assert md[0]["inferred"]["model"] == "from 'deepseek2 30B.A3B' + 29.94 B params"
    assert im.read(sample("llama-bench.md"), model="qwen3-32b")[0]["model"] == "qwen3-32b"   # --model overrides
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
    # nothing in the table, the text or the file name says which model: imported without one,
    # with a notice that --model sets it
    notes = []
    bare = im.read(sample(name), notices=notes)
    assert bare and all("model" not in r for r in bare)
    assert any(":4: model: not known" in n and "--model" in n for n in notes), notes
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
    # the model comes from a field of the result, and the how says which (it said "file name" before)
    assert v["inferred"]["model"] == "from the model_id 'Qwen/Qwen3-32B'"
    # line 2 ran against a vLLM server: no server_info, so nothing names the model
    a, b = im.read(sample("sglang-bench-serving.jsonl"))
    assert a["model"] == "qwen3-32b" and "model" not in b
    assert a["inferred"]["model"] == "from the server_info's model_path 'Qwen/Qwen3-32B'"
    s1, s2 = im.read(sample("sglang-bench-serving.jsonl"), default_model="qwen3-32b")
    assert s1["model"] == s2["model"] == "qwen3-32b"
    assert s1["serve_backend"] == "sglang" and s2["serve_backend"] == "vllm"
    assert s1["n_cards"] == 1 and s1["concurrency"] == 8 and s2["concurrency"] == 4
    assert s2["request_rate"] == "inf"  # a bare Infinity in the file


# ---- edge cases written here ----------------------------------------------------------------------
@pytest.mark.parametrize("text,msg", [
    ("", "empty file"), ("  \n\n", "empty file"),
    ("hello, world\nthis is not a benchmark\n", "not a results format"),
    ("[1, 2", ":1: not valid JSON"),
    ('{"foo": 1}\n', ":1: a JSON object of no known format"),
    # a model's config.json given where results go (compare, --measured): said as such, with where it goes
    ('{"architectures": ["LlamaForCausalLM"], "model_type": "llama", "num_hidden_layers": 80}\n',
     ":1: a model's config.json (model_type 'llama'), not results: give it as --model"),
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


def test_token_counts_past_any_model_name_the_line(tmp_path, capsys):
    """`"n_depth": 1e308` in llama-bench's JSON read as a 309-digit depth: compare printed it as a point
    (pp512@d1000000...), calibrate died of an OverflowError traceback pricing it. A token count past
    vocab.MAX_TOKENS (2^32) is one error naming the line, in every format; 2^32 itself still reads."""
    from glmbench import cli
    ok = lb()
    for k in ("n_prompt", "n_gen", "n_depth"):
        text = json.dumps([ok, dict(ok, **{k: 1e308})], indent=2)
        p = write(tmp_path, "lb.json", text)
        line = text.splitlines().index("  {", 2) + 1
        with pytest.raises(im.FormatError, match=rf"lb.json:{line}: field `{k}` = 1e\+308 is more tokens than any "
                                                 r"model has positions or memory for \(at most 4,294,967,296\)"):
            im.read(p)
    p = write(tmp_path, "lb.jsonl", json.dumps(ok) + "\n" + json.dumps(dict(ok, n_depth=2 ** 32 + 1)) + "\n")
    with pytest.raises(im.FormatError, match=r"lb.jsonl:2: field `n_depth` = 4,294,967,297 is more tokens"):
        im.read(p)
    assert im.read(write(tmp_path, "edge.jsonl", json.dumps(dict(ok, n_depth=2 ** 32)) + "\n"))[0]["n_depth"] == 2 ** 32
    # a sweep-bench table's N_KV, and glmbench's own records
    sweep_md = ("|    PP |     TG |   N_KV |   T_PP s | S_PP t/s |   T_TG s | S_TG t/s |\n"
                "|-------|--------|--------|----------|----------|----------|----------|\n"
                "|   512 |    128 | 99999999999 |    0.200 |  2560.00 |    4.000 |    32.00 |\n")
    with pytest.raises(im.FormatError, match=r"s.md:3: field `n_depth` = 99,999,999,999 is more tokens"):
        im.read(write(tmp_path, "s.md", sweep_md), model="qwen3-32b")
    own = [dict(evidence="measured", test="tg", model="qwen3-32b", avg_ts=3.0, n_depth=10 ** 12, n_gen=1)]
    with pytest.raises(im.FormatError, match=r"own.json:1: record 1: record field `n_depth` = 1,000,000,000,000 is more tokens"):
        im.read(write(tmp_path, "own.json", json.dumps(own)))
    # calibrate: the same one line, no OverflowError
    p = write(tmp_path, "lb.json", json.dumps([ok, dict(ok, n_depth=1e308)], indent=2))
    rc = cli.main(["calibrate", p, "--hardware", "rtx-4090", "--out", str(tmp_path / "p.json")])
    err = capsys.readouterr().err
    assert rc == 2 and "Traceback" not in err and "field `n_depth` = 1e+308 is more tokens" in err, err
    assert not (tmp_path / "p.json").exists()


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


@needs_samples
@pytest.mark.parametrize("name,row", [("sweep-bench.md", 7), ("sweep-bench.md", 14), ("llama-bench.md", 3),
                                      ("llama-bench.md", 5), ("llama-batched-bench.md", 9)])
def test_a_separator_line_inside_a_table_is_an_error_not_lost_rows(tmp_path, name, row):
    """A stray `|---|` under a table's row (a paste gone wrong) made that row the header of a table of no known
    kind: it and every row under it were dropped without a word (sweep-bench.md kept 4 of its 20 records). It
    is one error naming the separator's line now; the table as printed still reads whole."""
    lines = (FORMATS / name).read_text().split("\n")
    whole = im.read(sample(name), model="qwen3-32b")
    p = write(tmp_path, name, "\n".join(lines[:row] + ["|---|"] + lines[row:]))
    with pytest.raises(im.FormatError, match=rf"{name}:{row + 1}: a separator line under the table row on line {row} "
                                             r"\(the table begun on line \d+\) would make that row a new table's header"):
        im.read(p, model="qwen3-32b")
    # a second table with its own header after it is no stray separator: both read
    p = write(tmp_path, "two-" + name, "\n".join(lines) + "\n" + "\n".join(l for l in lines if l.startswith("|")))
    assert len(im.read(p, model="qwen3-32b")) >= len(whole)


def test_quant_names_are_one_spelling_whatever_the_case():
    q = im.quant_name
    assert q("Q4_K_M") == q("q4_k_m") == q("Q4_K - Medium") == "Q4_K_M"
    assert q("iq4_xs") == q("IQ4_XS") == q("IQ4_XS - 4.25 bpw") == "iq4_xs"
    assert q("Q8_0") == "q8_0" and q("q4_k") == q("Q4_K") == "q4_K" and q("BF16") == "bf16" and q("all F32") == "f32"
    assert q("Q3_K - Large") == "Q3_K_L" and q("Q2_K - Small") == "Q2_K_S" and q("ud-q4_k_xl") == "UD-Q4_K_XL"
    assert q("hello") is None and q(None) is None and q("") is None


@pytest.mark.parametrize("filename,model_type,expect", [
    ("/m/GLM-4.7-Flash-Q4_K_M.gguf", "deepseek2 30B.A3B Q4_K - Medium", "glm-4.7-flash"),
    ("/m/glm-4.7-flash-iq4_xs-00001-of-00002.gguf", "", "glm-4.7-flash"),
    ("DeepSeek-V2-Lite-Chat.Q4_K_M.gguf", None, "deepseek-v2-lite"),  # a dot before the quant
    ("Qwen/Qwen3-32B", None, "qwen3-32b"),
    ("/m/Qwen3-30B-A3B-Instruct-2507-Q4_K_M.gguf", None, "qwen3-30b-a3b"),
    ("/m/Mistral-Small-3.2-24B-Instruct-2506-Q4_K_M.gguf", None, "mistral-small-24b"),
    ("/m/model.gguf", "qwen3 32B Q4_K - Medium", "qwen3-32b"),        # the architecture and size tell
    ("/m/Qwen3-30B-A3B-Q4_K_M.gguf", "qwen3moe 30B.A3B Q4_K - Medium", "qwen3-30b-a3b"),  # the name narrows
    ("/m/model.gguf", "deepseek2 30B.A3B Q4_K - Medium", "glm-4.7-flash"),  # the only deepseek2 of ~30B
    ("/m/Mistral-Small-24B-Q4_K_M.gguf", "llama 24B Q4_K - Medium", "mistral-small-24b"),  # Mistral Small is a llama
    ("/m/Devstral-Small-2505-Q4_K_M.gguf", "llama 24B Q4_K - Medium", "devstral-small"),    # on Mistral Small's layers
    ("/m/Qwen2.5-32B-Instruct-Q4_K_M.gguf", "qwen2 32B Q4_K - Medium", "qwen2.5-32b"),
    ("/m/QwQ-32B-Q4_K_M.gguf", "qwen2 32B Q4_K - Medium", "qwq-32b"),
    ("/m/DeepSeek-R1-Distill-Qwen-32B-Q4_K_M.gguf", "qwen2 32B Q4_K - Medium", "deepseek-r1-distill-qwen-32b"),
    ("/m/model.gguf", "phi3 14B Q4_K - Medium", "phi-4"),
    ("/m/model.gguf", "qwen3 3B Q4_K - Medium", None),                # no built-in of that size
    ("/m/model.gguf", "bert 24B Q4_K - Medium", None),                # an architecture no built-in has
])
def test_identify_model(filename, model_type, expect):
    name, why = im.identify_model(filename, model_type)
    assert name == expect, why


def test_identify_model_by_parameter_count():
    # llama.cpp names Mixtral "llama 8x7B": the parameter count finds it among the llama built-ins
    assert im.identify_model("/m/model.gguf", "llama 8x7B Q4_K - Medium", 46.70e9)[0] == "mixtral-8x7b"
    assert im.identify_model("/m/model.gguf", "llama 7B Q4_0", 7.24e9)[0] == "mistral-7b"
    assert im.identify_model("/m/model.gguf", "llama 7B Q4_0", 6.74e9)[0] == "llama-2-7b"
    assert im.identify_model("/m/model.gguf", "gemma2 27B Q4_K - Medium", 27.23e9)[0] == "gemma-2-27b"
    # fine-tunes on one set of layers: the name tells them apart, nothing else does; priced alike, the
    # base stands for them and the note says so
    name, why = im.identify_model("/m/model.gguf", "qwen2 32B Q4_K - Medium", 32.76e9)
    assert name == "qwen2.5-32b" and "qwen2.5-coder-32b, qwq-32b" in why and "--model" in why
    assert im.identify_model("/m/Qwen2.5-Coder-32B-Q4_K_M.gguf", "qwen2 32B Q4_K - Medium", 32.76e9)[0] == \
        "qwen2.5-coder-32b"


def test_same_shape_built_ins_without_a_name_take_the_base():
    fit = [n for n, (a, p) in im._builtins().items() if a == "qwen3moe" and abs(p - 30.53e9) < 0.01e9]
    if len(fit) < 2:
        pytest.skip("fewer than two qwen3moe built-ins of 30.53 B params")
    name, why = im.identify_model("/m/model.gguf", "qwen3moe 30B.A3B Q8_0", 30.53e9)
    assert name == "qwen3-30b-a3b" and all(n in why for n in fit) and "prices alike" in why
    # alike: every field the cost model prices (Qwen3-Coder's unused dense MLP width differs)
    shapes = {im.configs.load(n).cost_shape() for n in fit}
    assert len(shapes) == 1
    assert im.alike_pick(["llama-3-8b", "llama-3.1-8b", "deepseek-r1-distill-llama-8b"]) == "llama-3-8b"
    # different shapes stay an error naming them
    assert im.alike_pick(["llama-3-8b", "mistral-7b"]) is None
    a, b = im.configs.load("llama-3-8b"), im.configs.load("mistral-7b")
    assert a.cost_shape() != b.cost_shape()


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


def test_pairing_of_other_tg_lengths_is_said_where_it_is_shown():
    """A measured tg2 (or tg128) pairs with the tg1 prediction of its point (vocab.join_key leaves the
    tokens generated out): the report's measured-vs-predicted section says so in one sentence, as
    compare's output does; pairs of one length say nothing."""
    import importlib
    render = importlib.import_module("glmbench.report.render")   # (glmbench.report.render is also a function's name)
    pred = [_tg("predicted", 0, 140.0, device="RTX 4090"), _tg("predicted", 8192, 120.0, device="RTX 4090")]
    meas = [_tg("measured", 0, 150.0, n_gen=2, device="RTX 4090"), _tg("measured", 8192, 110.0, n_gen=2, device="RTX 4090")]
    md = "\n".join(render._measured(pred + meas))
    said = "Decode rows of different lengths are paired as one point (measured tg2 with predicted tg1)"
    assert "## Measured vs predicted" in md and md.count(said) == 1
    assert "| glm-4.7-flash | tg2 | RTX 4090 |" in md
    md = "\n".join(render._measured(pred + [_tg("measured", 0, 150.0, device="RTX 4090")]))
    assert "## Measured vs predicted" in md and "different lengths" not in md
    rows, _ = cmp.compare(pred, meas)
    assert cmp.paired_tg_lengths(rows) == [(1, 2), (1, 2)]
    assert "(tg1 with tg2)" in cmp.tg_lengths_sentence(cmp.paired_tg_lengths(rows))
    rows, _ = cmp.compare(pred, [_tg("measured", 0, 150.0, device="RTX 4090")])
    assert cmp.paired_tg_lengths(rows) == [] and cmp.tg_lengths_sentence(cmp.paired_tg_lengths(rows)) == ""


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


# ---- pasted text as people publish it (issue 23) -----------------------------------------------------
def pasted(name):
    return str(PASTED / name)


def builtin(name):
    return name in im._builtins()


def test_2024_llama_bench_pp_space_and_the_lines_around_the_table():
    # llama-bench of May 2024 prints `pp 512` / `tg 512`; the notebook cell has the command, the
    # ggml_cuda_init and Device lines, and the build line around the table
    notes = []
    rs = im.read(pasted("llama3-8b-Q4_K_M_2x3090_xiongjiedai.md"), notices=notes)
    assert [(r["test"], r["n_prompt"], r["n_gen"], r["n_depth"]) for r in rs] == [
        ("pp", 512, 0, 0), ("pp", 1024, 0, 0), ("pp", 4096, 0, 0), ("pp", 8192, 0, 0),
        ("tg", 0, 512, 0), ("tg", 0, 1024, 0), ("tg", 0, 4096, 0), ("tg", 0, 8192, 0)]
    r = rs[0]
    assert (r["avg_ts"], r["stddev_ts"], r["source"].rsplit(":", 1)[1]) == (3336.37, 52.28, "10")
    assert (r["device"], r["hardware"], r["n_cards"], r["split"]) == ("RTX 3090", "rtx-3090", 2, "layer")
    assert r["inferred"]["card"] == "rtx-3090 x2 (from 'Device 0:'..'Device 1:' lines (line 6))"
    assert r["backend"] == "CUDA" and r["weights"] == "Q4_K_M" and r["model_n_params"] == 8030000000
    assert (r["build_commit"], r["build_number"]) == ("d46dbc76", 2833)
    assert r["command"].startswith("# !./llama-bench -p 512,1024,4096,8192")
    assert (rs[4]["avg_ts"], rs[4]["stddev_ts"]) == (111.67, 0.08)
    # the same table with prose and a `$ ` prompt around it, one card
    text = ("I ran this on my box:\n\n$ ./llama-bench -m /models/Meta-Llama-3-8B.Q4_K_M.gguf -p 512 -n 128\n"
            "ggml_cuda_init: GGML_CUDA_FORCE_MMQ:   no\nggml_cuda_init: found 1 CUDA devices:\n"
            "  Device 0: NVIDIA GeForce RTX 4090, compute capability 8.9, VMM: yes\n"
            "| model                          |       size |     params | backend    | ngl | test       |              t/s |\n"
            "| ------------------------------ | ---------: | ---------: | ---------- | --: | ---------- | ---------------: |\n"
            "| llama 8B Q4_K - Medium         |   4.58 GiB |     8.03 B | CUDA       |  99 | pp 512     |  7138.99 ± 14.96 |\n"
            "| llama 8B Q4_K - Medium         |   4.58 GiB |     8.03 B | CUDA       |  99 | tg 128     |    130.58 ± 0.66 |\n"
            "\nbuild: 4426e298 (2824)\n\nPretty fast!\n")
    a, b = im.read_text(text, "paste.md")
    assert (a["test"], a["n_prompt"], b["test"], b["n_gen"]) == ("pp", 512, "tg", 128)
    assert (a["avg_ts"], a["stddev_ts"], b["avg_ts"]) == (7138.99, 14.96, 130.58)
    assert (a["hardware"], a["n_cards"], a["split"], a["build_number"]) == ("rtx-4090", 1, "none", 2824)
    assert a["source"] == "paste.md:9" and b["source"] == "paste.md:10"


LB_HEAD = ("| model                          |       size |     params | backend    | ngl | fa |            test |                  t/s |\n"
           "| ------------------------------ | ---------: | ---------: | ---------- | --: | -: | --------------: | -------------------: |\n")


def lb_row(model, size, params, test, ts):
    return f"| {model:30} | {size:>10} | {params:>10} | CUDA       |  99 |  1 | {test:>15} | {ts:>20} |\n"


def test_several_tables_of_several_models_in_one_file():
    text = ("## GLM-4.7-Flash\n\n" + LB_HEAD
            + lb_row("deepseek2 30B.A3B Q4_K - Medium", "17.06 GiB", "29.94 B", "tg128", "151.51 ± 0.46")
            + lb_row("deepseek2 30B.A3B Q4_K - Medium", "17.06 GiB", "29.94 B", "tg128 @ d8192", "119.36 ± 0.45")
            + "\nbuild: 4be1e7c (9731)\n\n## Qwen3-32B\n\n" + LB_HEAD
            + lb_row("qwen3 32B Q8_0", "32.42 GiB", "32.76 B", "pp512", "2000.00 ± 5.00")
            + lb_row("qwen3 32B Q8_0", "32.42 GiB", "32.76 B", "tg128", "30.00 ± 0.10") + "\nbuild: 4be1e7c (9731)\n")
    rs = im.read_text(text, "two-models.md")
    assert [(r["model"], r["test"], r["n_depth"], r["weights"], r["label"]) for r in rs] == [
        ("glm-4.7-flash", "tg", 0, "Q4_K_M", "GLM-4.7-Flash"), ("glm-4.7-flash", "tg", 8192, "Q4_K_M", "GLM-4.7-Flash"),
        ("qwen3-32b", "pp", 0, "q8_0", "Qwen3-32B"), ("qwen3-32b", "tg", 0, "q8_0", "Qwen3-32B")]
    assert rs[0]["inferred"]["model"] == "from 'deepseek2 30B.A3B' + 29.94 B params"
    assert rs[2]["inferred"]["model"] == "from 'qwen3 32B' + 32.76 B params"
    assert all(r["flash_attn"] == 1 and r["build_number"] == 9731 for r in rs)


def test_model_from_architecture_and_params_is_data_driven(monkeypatch):
    # the matcher reads the built-ins: two that fit the same count are an error naming both
    fake = {"llama-a-8b": ("llama", 8.03e9), "llama-b-8b": ("llama", 8.031e9), "llama-c-70b": ("llama", 70.55e9)}
    monkeypatch.setattr(im, "_builtins", lambda: fake)
    assert im.model_candidates("llama 70B Q4_K - Medium", 70.55e9) == (["llama-c-70b"], "'llama 70B' + 70.55 B params")
    assert im.model_candidates("llama 8B F16", 8.03e9)[0] == ["llama-a-8b", "llama-b-8b"]
    assert im.model_candidates("llama 8B F16", 9.5e9)[0] == []           # outside the 3% tolerance
    assert im.model_candidates("qwen2 8B F16", 8.03e9)[0] == []          # another architecture
    text = LB_HEAD + lb_row("llama 8B F16", "14.96 GiB", "8.03 B", "pp512", "4000.00 ± 1.00")
    with pytest.raises(im.FormatError) as e:
        im.read_text(text, "x.md")
    msg = str(e.value)
    assert msg.startswith("x.md:3:") and "llama-a-8b, llama-b-8b" in msg and "--model" in msg
    # a name elsewhere (the file name, the command line) picks among them; --model overrides
    (r,) = im.read_text(text, "llama-b-8b-f16_results.md")
    assert r["model"] == "llama-b-8b" and "file name" in r["inferred"]["model"]
    (r,) = im.read_text("$ llama-bench -m /m/Llama-A-8B-F16.gguf\n" + text, "x.md")
    assert r["model"] == "llama-a-8b" and "command line" in r["inferred"]["model"]
    monkeypatch.setattr(im.configs, "load", lambda n: type("C", (), {"name": n})())
    (r,) = im.read_text(text, "x.md", model="llama-c-70b")
    assert r["model"] == "llama-c-70b"


def test_sweep_bench_model_from_the_command_line_or_the_file_name():
    table = ("|    PP |     TG |   N_KV |   T_PP s | S_PP t/s |   T_TG s | S_TG t/s |\n"
             "|-------|--------|--------|----------|----------|----------|----------|\n"
             "|   512 |    128 |      0 |    0.200 |  2560.00 |    4.000 |    32.00 |\n")
    cmd = "./build/bin/llama-sweep-bench -m /models/Qwen3-30B-A3B-Instruct-2507-UD-Q4_K_XL.gguf -c 4096 -fa -ngl 99\n"
    rs = im.read_text(cmd + "\n" + table, "out.md")
    assert {r["model"] for r in rs} == {"qwen3-30b-a3b"} and "command line's model" in rs[0]["inferred"]["model"]
    assert rs[0]["weights"] == "UD-Q4_K_XL" and "approximated as Q4_K_M" in rs[0]["weights_note"]
    assert rs[0]["flash_attn"] == 1 and rs[0]["n_gpu_layers"] == 99
    rs = im.read_text(table, "/tmp/qwen3-32b_q8_0_rtx3090.md")
    assert {r["model"] for r in rs} == {"qwen3-32b"} and rs[0]["weights"] == "q8_0"
    assert (rs[0]["hardware"], rs[0]["n_cards"]) == ("rtx-3090", 1) and "file name" in rs[0]["inferred"]["card"]
    assert {r["model"] for r in im.read_text(cmd + table, "out.md", model="glm-4.7-flash")} == {"glm-4.7-flash"}
    # a shell variable on the command line is resolved from its assignment
    rs = im.read_text('model=DeepSeek-V2-Lite-Q4_0.gguf ; llama-sweep-bench --model "$model" -c 8192\n' + table, "o.md")
    assert rs[0]["model"] == "deepseek-v2-lite" and rs[0]["weights"] == "q4_0"


def test_card_count_backend_and_flash_attention():
    dev = "  Device {i}: NVIDIA GeForce RTX 4090, compute capability 8.9, VMM: yes\n"
    two = "ggml_cuda_init: found 2 CUDA devices:\n" + dev.format(i=0) + dev.format(i=1)
    row = lb_row("qwen3 32B Q4_K - Medium", "18.40 GiB", "32.76 B", "tg128", "30.00 ± 0.10")
    (r,) = im.read_text(two + LB_HEAD + row, "a.md")
    assert (r["n_cards"], r["split"], r["hardware"], r["backend"]) == (2, "layer", "rtx-4090", "CUDA")
    (r,) = im.read_text("$ llama-bench -m q.gguf -sm none -mg 1\n" + two + LB_HEAD + row, "a.md")
    assert (r["n_cards"], r["split"]) == (1, "none") and "-sm none" in r["inferred"]["card"]
    (r,) = im.read_text("$ llama-bench -m q.gguf -sm row\n" + two + LB_HEAD + row, "a.md")
    assert (r["n_cards"], r["split"]) == (2, "tensor")
    # without device lines: CUDA_VISIBLE_DEVICES and a card the text names
    (r,) = im.read_text("Two RTX 3090 cards here.\n$ CUDA_VISIBLE_DEVICES=0,1 llama-bench -m q.gguf\n" + LB_HEAD + row,
                        "a.md")
    assert (r["hardware"], r["n_cards"]) == ("rtx-3090", 2) and "CUDA_VISIBLE_DEVICES" in r["inferred"]["card"]
    # Vulkan's device line; fa from the column; -fa on the command line for sweep-bench
    vk = ("ggml_vulkan: Found 1 Vulkan devices:\nggml_vulkan: 0 = NVIDIA GeForce RTX 3090 (NVIDIA) | uma: 0 | fp16: 1\n")
    (r,) = im.read_text(vk + LB_HEAD + row.replace("CUDA  ", "Vulkan"), "a.md")
    assert (r["backend"], r["hardware"], r["n_cards"], r["flash_attn"]) == ("Vulkan", "rtx-3090", 1, 1)
    sweep = ("llama-sweep-bench -m Qwen3-32B-Q4_K_M.gguf -fa on\n"
             "|    PP |     TG |   N_KV |   T_PP s | S_PP t/s |   T_TG s | S_TG t/s |\n"
             "|-------|--------|--------|----------|----------|----------|----------|\n"
             "|   512 |    128 |      0 |    0.200 |  2560.00 |    4.000 |    32.00 |\n")
    rs = im.read_text(sweep, "s.md")
    assert all(r["flash_attn"] == 1 for r in rs) and "command line" in rs[0]["inferred"]["flash_attn"]
    rs = im.read_text(sweep.replace("-fa on", "-fa off"), "s.md")
    assert all(r["flash_attn"] == 0 for r in rs)
    # headings name the backend of each of two tables
    rs = im.read(pasted("llama-3.1-8b_RTX4080_Vulkan-vs-CUDA-sweep_ik-llama-disc562-ikawrakow.md"))
    assert [r["backend"] for r in rs[::32]] == ["Vulkan", "CUDA"]
    assert {r["device"] for r in rs} == {"RTX 4080"} and {r["n_cards"] for r in rs} == {1}


@pytest.mark.parametrize("printed,name", [
    ("Q2_K - Medium", "mix:Q2_K"), ("Q2_K_M", "mix:Q2_K"), ("q2_k_m", "mix:Q2_K"), ("Q2_K - Small", "Q2_K_S"),
    ("Q4_K - Medium", "Q4_K_M"), ("Q4_K - Small", "Q4_K_S"),
    ("IQ4_XS - 4.25 bpw", "iq4_xs"), ("MXFP4 MoE", "MXFP4_MOE"), ("Q4_0", "q4_0"), ("F16", "f16"), ("BF16", "bf16"),
    ("IQ3_S mix - 3.66 bpw", "IQ3_M"), ("all F32", "f32"), ("IQ4_KS - 4.25 bpw", "iq4_ks"), ("IQ6_K - 6.6 bpw", "iq6_k"),
    ("UD-Q2_K_XL", "UD-Q2_K_XL")])
def test_printed_file_types_are_glmbench_formats(printed, name):
    assert im.quant_name(printed) == name
    vocab.weight_format(name)   # a name sweep and calibrate accept


def test_ik_and_unsloth_formats_have_definitions_and_a_note():
    f = vocab.weight_format("iq4_ks")
    assert f.bits_per_weight == 4.25 and f.row_bytes == 4 and f.matrix_nbytes(2, 512) == 2 * (2 * 136 + 4)
    assert vocab.weight_format("IQ4_K").bits_per_weight == 4.5 and vocab.weight_format("iq5_k").bits_per_weight == 5.5
    assert vocab.weight_format("iq6_k").bits_per_weight == 6.625 and vocab.weight_format("iq4_kt").bits_per_weight == 4.0
    ud = vocab.weight_format("ud-q4_k_xl")
    assert isinstance(ud, vocab.Mix) and ud.ftype == "Q4_K_M" and "approximate" in ud.note
    assert vocab.weight_format("mix:Q4_K_M").name == "Q4_K_M"   # the UD mixes leave llama.cpp's alone
    rs = im.read(pasted("llama-3.1-8b-instruct-iq4_ks_RTX4080_ik-llama-sweep_ik-llama-pr374-ikawrakow.md"))
    assert {r["weights"] for r in rs} == {"iq4_ks"} and "ik_llama.cpp's IQ4_KS" in rs[0]["weights_note"]
    # a format the cost model takes: 4.25 bits (+ a row scale) is between iq4_xs's 4.25 and q4_K's 4.5
    def w(fmt):
        return cm.memory(cm.Setup("qwen3-32b", "rtx-3090", weights=fmt), 0).cards[0].weights
    assert w("iq4_xs") < w("iq4_ks") < w("q4_K") and w("iq4_ks") / w("iq4_xs") < 1.005
    assert w("IQ4_K") == w("q4_K") and w("UD-Q4_K_XL") == w("Q4_K_M")


def test_table_heading_settings():
    """The settings a table's own heading or <summary> line states in words: MLA mode, u-batch and
    flash attention (on, or off where it says so); nothing from a heading that states none."""
    ls = im.label_settings
    assert ls("Main branch, mla = 2, fa") == {"mla": "2", "flash_attn": 1}
    assert ls("PR, -mla 3 -fa -ub 4096") == {"mla": "3", "n_ubatch": 4096, "flash_attn": 1}
    assert ls("no fa, u-batch 512") == {"n_ubatch": 512, "flash_attn": 0}
    assert ls("FA off") == {"flash_attn": 0} and ls("flash attention on") == {"flash_attn": 1}
    assert ls("mla3 fa=0") == {"mla": "3", "flash_attn": 0}
    for t in ("Llama 3.1 8B, RTX 4090", "default settings", "CUDA sweep-bench, LlaMA-3.1-8B", "", None,
              "fa on and fa off", "Qwen3-30B-A3B (fast attention)", "ub=512 vs ub=2048", "mla 2 and mla 3"):
        assert ls(t) == {}, t


def test_vllm_console_block():
    notes = []
    (r,) = im.read(pasted("qwen3-30b-a3b-bf16_h100_vllm-pr23151.log"), notices=notes)
    assert (r["test"], r["model"], r["weights"], r["n_cards"]) == ("serve", "qwen3-30b-a3b", "bf16", 1)
    assert r["device"] == "H100" and r["tool"] == "vllm benchmark_serving (console)"
    assert (r["concurrency"], r["n_streams"], r["avg_ts"], r["aggregate_tok_s"]) == (10, 10, 739.79, 739.79)
    assert r["n_prompt"] == round(204169 / 100) and r["n_gen"] == round(101576 / 100)
    assert r["ttft_s"] == pytest.approx(0.26722) and r["tpot_s"] == pytest.approx(0.01318)
    assert r["per_stream_tok_s"] == pytest.approx(1000 / 13.18)
    assert "command line's model 'Qwen/Qwen3-30B-A3B'" in r["inferred"]["model"]
    bad = pathlib.Path(pasted("qwen3-30b-a3b-bf16_h100_vllm-pr23151.log")).read_text().replace(
        "Output token throughput (tok/s):         739.79\n", "")
    with pytest.raises(im.FormatError, match=r"x.log:4: .*'Output token throughput \(tok/s\):'"):
        im.read_text(bad, "x.log")


def test_calibrate_skips_pg_rows_with_a_notice(tmp_path):
    from glmbench.predict import calibrate as cal
    objs = [lb(n_prompt=512, n_gen=0, n_depth=d, avg_ts=900.0 - d / 100) for d in (0, 4096)]
    objs += [lb(n_prompt=0, n_gen=128, n_depth=d, avg_ts=30.0 - d / 1000) for d in (0, 4096)]
    objs += [lb(n_prompt=512, n_gen=128, n_depth=0, avg_ts=200.0)]
    p = write(tmp_path, "pg.json", json.dumps(objs))
    notes = []
    pts = cal.load_points([p], notes)
    assert len(pts) == 4 and {pt.test for pt in pts} == {"pp", "tg"}
    assert len(notes) == 1 and "skipped 1 pp+tg row" in notes[0] and notes[0].startswith(f"notice: {p}")
    only = write(tmp_path, "only.json", json.dumps(objs[-1:]))
    with pytest.raises(cal.CalibrationError, match="no tg or pp speed records"):
        cal.load_points([only], [])


def test_compare_keeps_every_record_and_does_not_collapse_lengths():
    one = [dict(evidence="measured", test="tg", model="qwen3-32b", n_gen=n, n_depth=0, avg_ts=v)
           for n, v in ((512, 30.0), (1024, 29.0))]
    # tg512 and tg1024 at depth 0 (a 2024 llama-bench file, no n_depth) are two points
    rows, _ = cmp.compare(one, [dict(r, avg_ts=r["avg_ts"] * 2) for r in one])
    assert [(r["test"], r["B/A"]) for r in rows] == [("tg512", 2.0), ("tg1024", 2.0)]
    # two runs appended to one file: both shown, each against the other file's (last) run
    twice = one[:1] + [dict(one[0], avg_ts=33.0)]
    rows, _ = cmp.compare(one[:1], twice)
    assert [(r["run"], r["A"], r["B"]) for r in rows] == [(1, 30.0, 30.0), (2, 30.0, 33.0)]
    assert cmp.repeated_points(twice) == 1 and cmp.repeated_points(one) == 0
    rows, how = cmp.summarize(im.read(pasted("llama3-70b-Q4_K_M_2x3090_xiongjiedai.md")))
    assert len(rows) == 8 and rows[0]["test"] == "pp512" and rows[4]["test"] == "tg512"
    assert any(h.startswith("card: rtx-3090 x2 (from 'Device 0:'") for h in how)
    assert "weights: Q4_K_M (from the file type 'Q4_K - Medium')" in how


# Every published file and format sample, with no flags: what it must import as. A model that
# is not (yet) a built-in must come back unset (never another model).
EXPECT = {
    # file: (records, model, device, hardware key or None, cards, weights, backend, tests)
    "deepseek-v2-lite-Q4_0_rtx3090ti_ik-pr598-cuda-fmoe.md": (80, "deepseek-v2-lite", "RTX 3090 Ti", 1, "q4_0", "CUDA"),
    "deepseek-v2-lite-Q4_0_rtx3090ti_ik-pr598-vulkan.md": (80, "deepseek-v2-lite", "RTX 3090 Ti", 1, "q4_0", "Vulkan"),
    "deepseek-v2-lite-q4_0_RTX4080_ik-llama-sweep_ik-llama-pr386-ikawrakow.md": (64, "deepseek-v2-lite", "RTX 4080", 1, "q4_0", "CUDA"),
    "deepseek-v2-lite-q4_0_RTX4080_ik-llama-sweep_ik-llama-pr589-ikawrakow.md": (16, "deepseek-v2-lite", "RTX 4080", 1, "q4_0", "CUDA"),
    "gemma-3-4b-q4_0_GB10-DGX-Spark_llama.cpp-benches.md": (10, "gemma-3-4b", "GB10", 1, "q4_0", "CUDA"),
    "gpt-oss-120b_GB10-DGX-Spark_llama.cpp-benches.md": (46, "gpt-oss-120b", "GB10", 1, "MXFP4_MOE", "CUDA"),
    "gpt-oss-20b_GB10-DGX-Spark_llama.cpp-benches.md": (46, "gpt-oss-20b", "GB10", 1, "MXFP4_MOE", "CUDA"),
    "gpt-oss-20b_RTXPRO6000-Blackwell-WS_llama.cpp-pr16991-PARTIAL.md":
        (7, "gpt-oss-20b", "RTX PRO 6000 Blackwell Workstation Edition", 1, "MXFP4_MOE", "CUDA"),
    "llama-3.1-8b-instruct-iq4_ks_RTX4080_ik-llama-sweep_ik-llama-pr374-ikawrakow.md": (128, "llama-3.1-8b", "RTX 4080", 1, "iq4_ks", "CUDA"),
    "llama-3.1-8b-q4_0_RTX5090_CUDA_ik-llama-disc562-jeffbolznv.md": (15, "llama-3.1-8b", "RTX 5090", 1, "q4_0", "CUDA"),
    "llama-3.1-8b-q4_0_RTX5090_Vulkan_ik-llama-disc562-jeffbolznv.md": (30, "llama-3.1-8b", "RTX 5090", 1, "q4_0", "Vulkan"),
    "llama-3.1-8b_RTX4080_Vulkan-vs-CUDA-sweep_ik-llama-disc562-ikawrakow.md": (64, "llama-3.1-8b", "RTX 4080", 1, None, None),
    "qwen2.5-coder-7b-q8_0_GB10-DGX-Spark_llama.cpp-benches.md": (10, "qwen2.5-coder-7b", "GB10", 1, "q8_0", "CUDA"),
    "qwen3-coder-30b-a3b-q8_0_GB10-DGX-Spark_llama.cpp-benches.md": (10, "qwen3-coder-30b-a3b", "GB10", 1, "q8_0", "CUDA"),
    "qwen3-30b-a3b-bf16_h100_vllm-pr23151.log": (1, "qwen3-30b-a3b", "H100", 1, "bf16", None),
}
for _size, _m in (("8b", "llama-3-8b"), ("70b", "llama-3-70b")):
    for _w, _ww in (("Q4_K_M", "Q4_K_M"), ("f16", "f16")):
        for _card, _dev, _n in (("2x3090", "RTX 3090", 2), ("2x4090", "RTX 4090", 2), ("a6000", "RTX A6000", 1),
                                ("rtx3090", "RTX 3090", 1), ("rtx4090", "RTX 4090", 1)):
            f = f"llama3-{_size}-{_w}_{_card}_xiongjiedai.md"
            if (PASTED / f).is_file():
                EXPECT[f] = (8, _m, _dev, _n, _ww, "CUDA")
# Qwen3-Coder-30B-A3B has Qwen3-30B-A3B's architecture and parameter count: without its own
# built-in, llama-bench's 'qwen3moe 30B.A3B' + 30.53 B params fits only qwen3-30b-a3b
SAME_SHAPE = {"qwen3-coder-30b-a3b": ("qwen3-30b-a3b",)}
FORMAT_EXPECT = {  # invented numbers; model only where the file names one
    "llama-bench.json": (6, "glm-4.7-flash", "RTX 4090", 2, "Q4_K_M", "CUDA"),
    "llama-bench.jsonl": (6, "glm-4.7-flash", "RTX 4090", 2, "Q4_K_M", "CUDA"),
    "llama-bench.csv": (6, "glm-4.7-flash", "RTX 4090", 2, "Q4_K_M", "CUDA"),
    "llama-bench.sql": (6, "glm-4.7-flash", "RTX 4090", 2, "Q4_K_M", "CUDA"),
    "llama-bench.md": (6, "glm-4.7-flash", None, None, "Q4_K_M", "CUDA"),
    "sweep-bench.md": (18, None, None, None, None, None),
    "sweep-bench-mainline.md": (66, None, None, None, None, None),
    "llama-batched-bench.md": (24, None, None, None, None, None),
    "vllm-bench-serve.json": (1, "qwen3-32b", None, None, None, None),
    "sglang-bench-serving.jsonl": (2, "qwen3-32b", None, None, None, None),   # line 2 names none
}


def test_every_published_file_imports_as_it_is():
    files = sorted(p.name for p in PASTED.iterdir() if p.suffix in (".md", ".log"))
    assert files and set(files) == set(EXPECT), set(files) ^ set(EXPECT)
    for name, (n, model, device, cards, weights, backend) in EXPECT.items():
        rs = im.read(pasted(name))
        assert len(rs) == n, name
        got = {r.get("model") for r in rs}
        if builtin(model):
            assert got == {model}, (name, got)
        else:  # not a built-in (yet): no model, or the one built-in of the same architecture and size
            assert got <= {None} | set(SAME_SHAPE.get(model, ())), (name, got)
        assert {r["device"] for r in rs} == {device} and {r["n_cards"] for r in rs} == {cards}, name
        assert {r.get("weights") for r in rs} == {weights}, name
        if backend:
            assert {r["backend"] for r in rs} == {backend}, name
        assert {r.get("hardware") for r in rs} == {im._hardware_key(device)}, name
        for r in rs:
            assert r["evidence"] == "measured" and r["avg_ts"] > 0 and r["n_depth"] >= 0
            assert r["test"] in ("pp", "tg", "serve") and r["source"].startswith(pasted(name) + ":")
            assert {"model", "card"} <= set(r["inferred"]), (name, r["inferred"])
    for name, (n, model, device, cards, weights, backend) in FORMAT_EXPECT.items():
        rs = im.read(sample(name))
        assert len(rs) == n and {r.get("model") for r in rs} <= {model, None} and rs[0].get("model") == model, name
        assert {r.get("device") for r in rs} == {device} and {r.get("weights") for r in rs} == {weights}, name
        if cards:
            assert {r["n_cards"] for r in rs} == {cards}, name
        if backend:
            assert {r["backend"] for r in rs} == {backend}, name


def test_depths_and_tests_of_published_files():
    rs = im.read(pasted("gpt-oss-20b_GB10-DGX-Spark_llama.cpp-benches.md"))
    lb_rows = [r for r in rs if r["tool"] == "llama-bench"]
    assert [(r["test"], r["n_prompt"] or r["n_gen"], r["n_depth"]) for r in lb_rows[:4]] == [
        ("pp", 2048, 0), ("tg", 32, 0), ("pp", 2048, 4096), ("tg", 32, 4096)]
    assert lb_rows[-1]["n_depth"] == 32768 and lb_rows[-1]["avg_ts"] == 59.85
    batched = [r for r in rs if r["tool"] == "llama-batched-bench"]
    assert len(batched) == 36 and {r["weights"] for r in batched} == {"MXFP4_MOE"}
    rs = im.read(pasted("llama-3.1-8b-q4_0_RTX5090_CUDA_ik-llama-disc562-jeffbolznv.md"))
    assert [r["n_depth"] for r in rs] == list(range(1024, 15361, 1024)) and {r["n_prompt"] for r in rs} == {1024}
    rs = im.read(pasted("deepseek-v2-lite-q4_0_RTX4080_ik-llama-sweep_ik-llama-pr386-ikawrakow.md"))
    assert {r["label"] for r in rs} == {"Main branch, mla = 2, fa", "PR, mla = 3, fa"}
    assert max(r["n_depth"] for r in rs) == 61440 and {r["n_prompt"] for r in rs if r["test"] == "pp"} == {4096}
    # no command line: each table's <summary> says its MLA mode and flash attention ("Main branch, mla =
    # 2, fa"; the prose quotes both `-mla 2 -fa` and `-mla 3 -fa`, so it cannot say which table is which)
    assert {r["flash_attn"] for r in rs} == {1} and "heading 'Main branch" in rs[0]["inferred"]["flash_attn"]
    assert {(r["label"], r["mla"]) for r in rs} == {("Main branch, mla = 2, fa", "2"), ("PR, mla = 3, fa", "3")}
    rs = im.read(pasted("deepseek-v2-lite-q4_0_RTX4080_ik-llama-sweep_ik-llama-pr589-ikawrakow.md"))
    assert {r["flash_attn"] for r in rs} == {1} and "-fa -fmoe" in rs[0]["inferred"]["flash_attn"]
    # the u-batch and MLA mode from the same quoted options (`-mla 3 -fa -fmoe -b 4096 -ub 4096`)
    assert {(r["n_ubatch"], r["mla"]) for r in rs} == {(4096, "3")} and "quoted" in rs[0]["inferred"]["n_ubatch"]
    # pr386's prose quotes `-mla 2 -fa` and `-mla 3 -fa` (one per table): no single MLA mode from it;
    # each table's <summary> says its own (above)
    rs = im.read(pasted("deepseek-v2-lite-q4_0_RTX4080_ik-llama-sweep_ik-llama-pr386-ikawrakow.md"))
    assert {r.get("mla") for r in rs} == {"2", "3"} and all("heading" in r["inferred"]["mla"] for r in rs)


def test_bad_pasted_input_is_one_clear_error(tmp_path):
    row = lb_row("qwen3 32B Q4_K - Medium", "18.40 GiB", "32.76 B", "tg128", "30.00 ± 0.10")
    with pytest.raises(im.FormatError, match=r"b.md:4: test 'warmup 3' is not llama-bench's"):
        im.read_text("some prose\n" + LB_HEAD + row.replace("          tg128", "       warmup 3"), "b.md")
    with pytest.raises(im.FormatError, match=r"b.md:3: field `avg_ts` must be a number, got 'fast'"):
        im.read_text(LB_HEAD + row.replace("       30.00 ± 0.10", "fast"), "b.md")
    # prose starting with a markdown link is not read as JSON
    assert len(im.read_text("[This PR](https://x) is faster.\n\n" + LB_HEAD + row, "c.md")) == 1
    with pytest.raises(im.FormatError, match=r"d.md:1: not valid JSON"):
        im.read_text("[not json and no table\n", "d.md")


def test_inferred_survives_a_csv_round_trip(tmp_path):
    rs = im.read(pasted("llama3-8b-f16_2x4090_xiongjiedai.md"))
    for ext in ("csv", "json"):
        p = tmp_path / f"r.{ext}"
        records.write_records(p, rs)
        back = records.read_records(p)
        assert [b["inferred"] for b in back] == [r["inferred"] for r in rs]
        assert back[0]["inferred"]["card"].startswith("rtx-4090 x2")


def test_load_log_and_quoted_replies_and_row_columns():
    # a sweep-bench run pasted with llama.cpp's load log: the architecture and parameter count
    # there tell the model, its file type the weights
    log = ("llama_model_loader: loaded meta data with 35 key-value pairs and 579 tensors from /models/model.gguf (version GGUF V3)\n"
           "llama_model_loader: - kv   0:                       general.architecture str              = qwen3\n"
           "print_info: file type   = Q4_K - Medium\nprint_info: arch             = qwen3\n"
           "print_info: model params     = 32.76 B\n"
           "ggml_cuda_init: found 1 CUDA devices:\n  Device 0: NVIDIA GeForce RTX 3090, compute capability 8.6, VMM: yes\n\n"
           "main: n_kv_max = 16896, n_batch = 2048, n_ubatch = 512, flash_attn = 1, n_gpu_layers = 99, n_threads = 16, "
           "n_threads_batch = 16\n\n"
           "|    PP |     TG |   N_KV |   T_PP s | S_PP t/s |   T_TG s | S_TG t/s |\n"
           "|-------|--------|--------|----------|----------|----------|----------|\n"
           "|   512 |    128 |      0 |    0.199 |  2570.45 |    3.394 |    37.71 |\n")
    pp, tg = im.read_text(log, "sb.txt")
    assert (pp["model"], pp["weights"], pp["hardware"], pp["n_cards"]) == ("qwen3-32b", "Q4_K_M", "rtx-3090", 1)
    assert "load log" in pp["inferred"]["model"] and "load log" in pp["inferred"]["weights"]
    # a table quoted in a reply ("> | model | ..."), its dev and sm columns narrowing three cards to two
    lbt = ("| model | size | params | backend | ngl | sm | dev | test | t/s |\n"
           "| --- | ---: | ---: | --- | --: | --- | --- | ---: | ---: |\n"
           "| qwen3 32B Q4_K - Medium | 18.40 GiB | 32.76 B | CUDA | 99 | row | CUDA0/CUDA1 | pp512 | 2000.00 ± 5.00 |\n")
    txt = ("> ggml_cuda_init: found 3 CUDA devices:\n"
           + "".join(f">   Device {i}: NVIDIA GeForce RTX 3090, compute capability 8.6, VMM: yes\n" for i in range(3))
           + "".join("> " + ln + "\n" for ln in lbt.splitlines()))
    assert im.detect(txt) == "llama-bench-md"
    (r,) = im.read_text(txt, "q.md")
    assert (r["model"], r["n_cards"], r["split"], r["avg_ts"]) == ("qwen3-32b", 2, "tensor", 2000.0)
    assert r["inferred"]["card"] == "rtx-3090 x2 (dev column 'CUDA0/CUDA1')"


def test_gpus_named_in_text():
    assert im.gpus_in("a 4x4096 matrix on 2x3090 and an RTX-4080; H100 SXM; gb10; Qwen3-235B-A22B at 16 GB/s") == [
        ("RTX 3090", 2), ("RTX 4080", None), ("H100 SXM", None), ("GB10", None)]
    assert im.gpus_in("rtx3090ti_ik-pr598") == [("RTX 3090 Ti", None)] and im.gpus_in("no card here, Q4 2025") == []
    # a bare GeForce number is one card after an article or a possessive ("on a 4090", "my 3090"), without a
    # count; never a quantity ("a 4090-token prompt") nor a number after a digit ("Table 2 4090")
    assert im.gpus_in("results on a 4090 with the latest build") == [("RTX 4090", None)]
    assert im.gpus_in("my 3090 and a single 5090") == [("RTX 3090", None), ("RTX 5090", None)]
    assert im.gpus_in("a 4090-token prompt, a 3070 MiB buffer, dual 3090 tokens, Table 2 4090, the 4090") == []
    # a word like "Q4" in prose is no weight format
    table = ("Measured in Q4 2025 on an RTX 3090.\n\n|    PP |     TG |   N_KV |   T_PP s | S_PP t/s |   T_TG s | S_TG t/s |\n"
             "|-------|--------|--------|----------|----------|----------|----------|\n"
             "|   512 |    128 |      0 |    0.200 |  2560.00 |    4.000 |    32.00 |\n")
    notes = []
    rs = im.read_text(table, "notes.md", model="qwen3-32b", notices=notes)
    assert "weights" not in rs[0] and any("weights: not stated" in n for n in notes)
    assert rs[0]["hardware"] == "rtx-3090" and any("card count: 1 assumed" in n for n in notes)


def test_calibrate_says_which_link_a_two_card_import_uses():
    from glmbench.predict import calibrate as cal
    notes = []
    pts = cal.load_points([pasted("llama3-70b-Q4_K_M_2x3090_xiongjiedai.md")], notes, model="qwen3-32b")
    assert {p.setup.rig.n_cards for p in pts} == {2} and {p.setup.rig.link_gbps for p in pts} == {25}
    assert any("card-to-card link: RTX 3090's stated 25 GB/s" in n for n in notes), notes


def test_plus_minus_spellings_and_mib_sizes_in_a_pasted_table():
    # "+-" / "+/-" typed by hand, and the UTF-8 "±" of a Windows console copied as "Â±" (cp1252) or "┬▒" (cp437)
    for pm in ("+-", "+/-", "Â±", "┬▒", "±"):
        text = (LB_HEAD + lb_row("llama 7B Q4_0", "3.56 GiB", "6.74 B", "pp512", f"5243.63 {pm} 12.21")
                + lb_row("llama 7B Q4_0", "3.56 GiB", "6.74 B", "tg128", f"142.51 {pm} 0.30"))
        a, b = im.read_text(text, "rtx3080.md")
        assert (a["avg_ts"], a["stddev_ts"], b["avg_ts"], b["stddev_ts"]) == (5243.63, 12.21, 142.51, 0.3), pm
        assert a["model"] == "llama-2-7b" and a["weights"] == "q4_0"
    # a speed typed with thousands separators, as a person retypes a table; a decimal comma is no number
    a, = im.read_text(LB_HEAD + lb_row("llama 7B Q4_0", "3.56 GiB", "6.74 B", "pp512", "12,243.63 +/- 1,012.21"),
                      "rtx3080.md")
    assert (a["avg_ts"], a["stddev_ts"]) == (12243.63, 1012.21)
    with pytest.raises(im.FormatError, match=r"^x\.md:3: field `avg_ts` must be a number, got '5243,63'"):
        im.read_text(LB_HEAD + lb_row("llama 7B Q4_0", "3.56 GiB", "6.74 B", "pp512", "5243,63 ± 1.0"), "x.md")
    with pytest.raises(im.FormatError, match=r"^x\.md:3: t/s '142\.51 ~ 0\.30' is not 'mean ± stddev'"):
        im.read_text(LB_HEAD + lb_row("llama 7B Q4_0", "3.56 GiB", "6.74 B", "tg128", "142.51 ~ 0.30"), "x.md")
    # llama-bench prints a size under 1 GiB in MiB and a count under 1e9 in M
    (r,) = im.read_text(LB_HEAD + lb_row("gemma3 4B IQ1_S - 1.5625 bpw", "980.12 MiB", "3.88 B", "tg128", "200.00 ± 1.00"),
                        "x.md")
    assert r["model_size"] == round(980.12 * 1024 ** 2) and r["model_n_params"] == 3880000000 and r["weights"] == "iq1_s"


def test_a_table_split_by_a_blank_line_is_one_table():
    rows = [lb_row("deepseek2 16B Q4_0", "8.29 GiB", "15.71 B", t, v) for t, v in
            (("pp512", "6100.00 ± 20.00"), ("pp512 @ d4096", "5300.00 ± 20.00"), ("tg128", "190.00 ± 0.60"),
             ("tg128 @ d4096", "165.00 ± 0.60"))]
    text = "  Device 0: NVIDIA GeForce RTX 4080, compute capability 8.9, VMM: yes\n" + LB_HEAD + "".join(rows[:2]) + "\n" \
        + "".join(rows[2:]) + "\nbuild: 3f4fc97f (6110)\n"
    rs = im.read_text(text, "split.md")
    assert [(r["test"], r["n_depth"], r["avg_ts"], r["source"]) for r in rs] == [
        ("pp", 0, 6100.0, "split.md:4"), ("pp", 4096, 5300.0, "split.md:5"),
        ("tg", 0, 190.0, "split.md:7"), ("tg", 4096, 165.0, "split.md:8")]
    assert all(r["hardware"] == "rtx-4080" and r["build_number"] == 6110 for r in rs)
    # rows of another width after the blank line are not this table's (and not read)
    assert len(im.read_text(LB_HEAD + rows[0] + "\n| a | b |\n", "x.md")) == 1
    # a second table (its own header and separator) after a blank line stays a table of its own
    rs = im.read_text(LB_HEAD + rows[0] + "\n" + LB_HEAD + rows[2], "rtx4080.md")
    assert [r["source"] for r in rs] == ["rtx4080.md:3", "rtx4080.md:7"]


def test_letters_and_digits_that_name_no_card_are_not_a_gpu():
    # "a28_..." / "h12" in a file name are no card; data-centre names the catalog knows are
    assert im.gpus_in("a28_nodevice_llama31-8b.md") == [] and im.gpus_in("run h12 b5901") == []
    assert im.gpus_in("on an L4 and an A10G") == [("L4", None), ("A10G", None)]
    assert im.gpus_in("2xH100 sxm") == [("H100 SXM", 2)] and im.gpus_in("RTX A6000") == [("RTX A6000", None)]
    notes = []
    (r,) = im.read_text(LB_HEAD + lb_row("llama 7B Q4_0", "3.56 GiB", "6.74 B", "tg128", "142.51 ± 0.30"),
                        "/tmp/a28_llama2.md", notices=notes)
    assert "device" not in r and "hardware" not in r and any("card: not stated" in n for n in notes)


def test_ik_llama_bench_columns_old_backend_fields_and_the_older_load_log():
    # ik_llama.cpp's llama-bench: mainline's table plus its own columns (mla, amb, fmoe, ...)
    head = ("| model                          |       size |     params | backend    | ngl | n_ubatch | fa | mla |  amb | fmoe |"
            "            test |                  t/s |\n"
            "| ------------------------------ | ---------: | ---------: | ---------- | --: | -------: | -: | --: | ---: | ---: |"
            " --------------: | -------------------: |\n")
    row = ("| deepseek2 16B Q4_0             |   8.29 GiB |    15.71 B | CUDA       |  99 |     2048 |  1 |   3 |  512 |    1 |"
           "          pp2048 |      8800.00 ± 40.00 |\n")
    (r,) = im.read_text("  Device 0: NVIDIA GeForce RTX 4090, compute capability 8.9, VMM: yes\n" + head + row, "x.md")
    assert (r["tool"], r["mla"], r["n_ubatch"], r["flash_attn"], r["model"]) == (
        "llama-bench (ik_llama.cpp)", "3", 2048, 1, "deepseek-v2-lite")
    assert r["inferred"]["tool"] == "ik_llama.cpp (what only its llama-bench prints: amb, fmoe, mla)"
    # its own weight types tell it too; mainline's table stays mainline's
    (r,) = im.read_text(LB_HEAD + lb_row("deepseek2 16B IQ4_KS - 4.25 bpw", "8.31 GiB", "15.71 B", "tg128", "168.10 ± 0.40"), "x.md")
    assert r["tool"] == "llama-bench (ik_llama.cpp)" and r["weights"] == "iq4_ks"
    (r,) = im.read_text(LB_HEAD + lb_row("deepseek2 16B Q4_0", "8.29 GiB", "15.71 B", "tg128", "190.00 ± 0.60"), "x.md")
    assert r["tool"] == "llama-bench" and "mla" not in r
    (r,) = im.read_text(json.dumps([lb(mla_attn=3, fused_moe=True)]), "x.json")
    assert r["tool"] == "llama-bench (ik_llama.cpp)" and r["mla"] == "3"
    # mainline's llama-bench prints `repack` too since its --repack option (2026 builds: json/csv field,
    # md column "rpk", beside load_mode "lm", no_host "noh", fit_target "fitt"): still mainline's
    (r,) = im.read_text(json.dumps([lb(repack=True, load_mode="mmap", lazy_mode="none", no_host=False, fit_target=0,
                                       flash_attn=-1)]), "x.json")
    assert r["tool"] == "llama-bench" and r["flash_attn"] == -1
    md = ("| model                          |       size |     params | backend    | ngl |   lm | rpk | fitt |"
          "            test |                  t/s |\n"
          "| ------------------------------ | ---------: | ---------: | ---------- | --: | ---: | --: | ---: |"
          " --------------: | -------------------: |\n"
          "| llama 8B Q4_0                  |   4.33 GiB |     8.03 B | CUDA       |  99 | mmap |   0 |    0 |"
          "  tg128 @ d4096 |        150.00 ± 0.40 |\n")
    (r,) = im.read_text("  Device 0: NVIDIA GeForce RTX 4090, compute capability 8.9, VMM: yes\n" + md, "x.md")
    assert (r["tool"], r["n_depth"], r["avg_ts"], r["load_mode"]) == ("llama-bench", 4096, 150.0, "mmap")
    # 2024 builds: no `backends`, a 0/1 field per backend
    keys = ("build_commit,build_number,cuda,vulkan,metal,gpu_info,model_filename,model_type,model_n_params,n_prompt,n_gen,"
            "avg_ts,stddev_ts")
    for flags, backend in (('"1","0","0"', "CUDA"), ('"0","1","0"', "Vulkan")):
        csv_text = (keys + "\n" + f'"7a221b67","3091",{flags},"NVIDIA GeForce RTX 3090","Meta-Llama-3-8B.Q4_K_M.gguf","llama 8B Q4_K - Medium",'
                    '"8030261248","512","0","4867.123456","20.1"\n')
        (r,) = im.read_text(csv_text, "x.csv")
        assert (r["backend"], r["hardware"], r["avg_ts"], r["n_depth"]) == (backend, "rtx-3090", 4867.123456, 0)
    # llm_load_print_meta's `model ftype` (older builds; print_info's `file type` since 2025)
    log = ("llm_load_print_meta: arch             = deepseek2\nllm_load_print_meta: model ftype      = IQ4_KS - 4.25 bpw\n"
           "llm_load_print_meta: model params     = 15.706 B\n\n"
           "|    PP |     TG |   N_KV |   T_PP s | S_PP t/s |   T_TG s | S_TG t/s |\n"
           "|-------|--------|--------|----------|----------|----------|----------|\n"
           "|  2048 |    512 |      0 |    0.228 |  9000.00 |    3.012 |   170.00 |\n")
    rs = im.read_text(log, "x.md")
    assert {r["weights"] for r in rs} == {"iq4_ks"} and {r["model"] for r in rs} == {"deepseek-v2-lite"}
    assert "load log (line 2)" in rs[0]["inferred"]["weights"]


def test_a_table_copied_from_a_rendered_page_is_read(tmp_path):
    # a browser's copy of a rendered GitHub / forum table: tab-separated cells, no pipes, no separator line
    text = ("ggml_cuda_init: found 1 CUDA devices:\n  Device 0: NVIDIA GeForce RTX 3090, compute capability 8.6, VMM: yes\n\n"
            "model\tsize\tparams\tbackend\tngl\ttest\tt/s\n"
            "llama 8B Q4_K - Medium\t4.58 GiB\t8.03 B\tCUDA\t99\tpp512\t4321.00 ± 10.00\n"
            "llama 8B Q4_K - Medium\t4.58 GiB\t8.03 B\tCUDA\t99\ttg128\t118.50 ± 0.20\n"
            "build: 11fb327bf (7941)\n")
    assert im.detect(text) == "llama-bench-md"
    pp, tg = im.read_text(text, "x.md")
    assert (pp["model"], pp["weights"], pp["hardware"], pp["avg_ts"], pp["source"]) == ("llama-3-8b", "Q4_K_M", "rtx-3090",
                                                                                          4321.0, "x.md:5")
    assert (tg["test"], tg["avg_ts"], tg["source"]) == ("tg", 118.5, "x.md:6")
    # sweep-bench's, quoted in a reply; the table ends at the first line of another width
    sweep = ("> PP\tTG\tN_KV\tT_PP s\tS_PP t/s\tT_TG s\tS_TG t/s\n> 512\t128\t0\t0.129\t3967.12\t0.731\t175.15\n"
             "> 512\t128\t512\t0.132\t3878.35\t0.766\t167.18\n> that is all\n")
    rs = im.read_text(sweep, "y.md", model="deepseek-v2-lite")
    assert [(r["test"], r["n_depth"], r["avg_ts"], r["source"]) for r in rs] == [
        ("pp", 0, 3967.12, "y.md:2"), ("tg", 0, 175.15, "y.md:2"), ("pp", 512, 3878.35, "y.md:3"), ("tg", 512, 167.18, "y.md:3")]
    # a row of the header's width that does not parse is the usual clear error, with its line
    with pytest.raises(im.FormatError, match=r"^z\.md:3: "):
        im.read_text(sweep.replace("0.132\t3878.35", "0.132\tfast"), "z.md", model="deepseek-v2-lite")


# ---- the second audit: multi-GPU rigs, other backends, vLLM's other benchmarks --------------------
_LB_HEAD = ("| model                          |       size |     params | backend    | ngl | {x:>9} |            test |                  t/s |\n"
            "| ------------------------------ | ---------: | ---------: | ---------- | --: | --------: | --------------: | -------------------: |\n")


def _lb_row(backend, x, test, ts, model="llama 8B Q4_K - Medium"):
    return f"| {model:30} |   4.58 GiB |     8.03 B | {backend:10} |  99 | {x:>9} | {test:>15} | {ts:>20} |\n"


def test_dev_selects_cards_by_index_and_vulkan_matrix_cores(tmp_path):
    # -dev CUDA1 on a 4090 + 3090 box: the 3090 alone (not "RTX 4090 + RTX 3090", not the 4090)
    cuda = ("ggml_cuda_init: found 2 CUDA devices:\n  Device 0: NVIDIA GeForce RTX 4090, compute capability 8.9, VMM: yes\n"
            "  Device 1: NVIDIA GeForce RTX 3090, compute capability 8.6, VMM: yes\n")
    p = write(tmp_path, "dev1.md", cuda + _LB_HEAD.format(x="dev") + _lb_row("CUDA", "CUDA1", "tg128", "127.55 ± 0.35"))
    (r,) = im.read(p, model="llama-3.1-8b")
    assert (r["device"], r["hardware"], r["n_cards"], r["split"], r["backend"]) == ("RTX 3090", "rtx-3090", 1, "none", "CUDA")
    # the same from the command line's -dev (no dev column)
    p = write(tmp_path, "dev1cmd.md", "$ llama-bench -m x.gguf -dev CUDA1\n" + cuda + _LB_HEAD.format(x="fa")
              + _lb_row("CUDA", "1", "tg128", "127.55 ± 0.35"))
    (r,) = im.read(p, model="llama-3.1-8b")
    assert (r["device"], r["hardware"], r["n_cards"], r["split"]) == ("RTX 3090", "rtx-3090", 1, "none")
    # both cards: a mixed rig, said as such (no profile is of it)
    p = write(tmp_path, "both.md", cuda + _LB_HEAD.format(x="fa") + _lb_row("CUDA", "1", "tg128", "88.31 ± 0.12"))
    (r,) = im.read(p, model="llama-3.1-8b")
    assert (r["device"], r.get("hardware"), r["n_cards"], r["split"]) == ("RTX 4090 + RTX 3090", None, 2, "layer")
    # llama-bench json: devices "CUDA1" picks that card of gpu_info
    o = dict(LB_KEYS, gpu_info="NVIDIA GeForce RTX 4090, NVIDIA GeForce RTX 3090", devices="CUDA1", split_mode="layer",
             n_prompt=0, n_gen=128, avg_ts=127.5)
    (r,) = im.read(write(tmp_path, "dev1.jsonl", json.dumps(o) + "\n"), model="llama-3.1-8b")
    assert (r["device"], r["hardware"], r["n_cards"], r["split"]) == ("RTX 3090", "rtx-3090", 1, "none")
    # -sm none: llama.cpp keeps only the main GPU (-mg, default 0) of the model's devices (src/llama.cpp,
    # LLAMA_SPLIT_MODE_NONE), so one card ran whatever gpu_info lists; llama-bench's json and its md columns
    # main_gpu / sm (tools/llama-bench/llama-bench.cpp, markdown_printer) and a command line's -sm none -mg 1 say which
    for mg, card in ((0, "RTX 4090"), (1, "RTX 3090")):
        o = dict(LB_KEYS, gpu_info="NVIDIA GeForce RTX 4090, NVIDIA GeForce RTX 3090", split_mode="none", main_gpu=mg,
                 n_prompt=0, n_gen=128, avg_ts=127.5)
        (r,) = im.read(write(tmp_path, "none.jsonl", json.dumps(o) + "\n"), model="llama-3.1-8b")
        assert (r["device"], r["n_cards"], r["split"]) == (card, 1, "none")
    o = dict(LB_KEYS, gpu_info="NVIDIA GeForce RTX 3090, NVIDIA GeForce RTX 3090", split_mode="none", n_prompt=0, n_gen=128,
             avg_ts=127.5)
    (r,) = im.read(write(tmp_path, "none2.jsonl", json.dumps(o) + "\n"), model="llama-3.1-8b")
    assert (r["device"], r["hardware"], r["n_cards"], r["split"]) == ("RTX 3090", "rtx-3090", 1, "none")
    head = ("| model                          |       size |     params | backend    | ngl |   main_gpu |     sm |            test |"
            "                  t/s |\n| ------------------------------ | ---------: | ---------: | ---------- | --: | ---------: | "
            "-----: | --------------: | -------------------: |\n")
    row = "| llama 8B Q4_K - Medium         |   4.58 GiB |     8.03 B | CUDA       |  99 |          1 |   none |           tg128 |        131.22 ± 0.30 |\n"
    (r,) = im.read(write(tmp_path, "none.md", "$ llama-bench -m x.gguf -sm none -mg 1\n" + cuda + head + row), model="llama-3.1-8b")
    assert (r["device"], r["hardware"], r["n_cards"], r["split"], r["avg_ts"]) == ("RTX 3090", "rtx-3090", 1, "none", 131.22)
    (r,) = im.read(write(tmp_path, "none0.md", cuda + head + row.replace("|          1 |", "|          0 |")), model="llama-3.1-8b")
    assert (r["device"], r["hardware"], r["n_cards"]) == ("RTX 4090", "rtx-4090", 1)
    sweep = ("llama-sweep-bench -m x.gguf -c 4096 -ngl 99 -sm none -mg 1\n" + cuda +
             "\nmain: n_kv_max = 4096, n_batch = 2048, n_ubatch = 512, flash_attn = 1, n_gpu_layers = 99, n_threads = 16, "
             "n_threads_batch = 16\n\n|    PP |     TG |   N_KV |   T_PP s | S_PP t/s |   T_TG s | S_TG t/s |\n"
             "|-------|--------|--------|----------|----------|----------|----------|\n"
             "|   512 |    128 |      0 |    0.199 |  2570.45 |    3.160 |    40.51 |\n")
    pp, tg = im.read(write(tmp_path, "none_sweep.md", sweep), model="llama-3.1-8b")
    assert (pp["device"], pp["hardware"], pp["n_cards"], pp["split"]) == ("RTX 3090", "rtx-3090", 1, "none")
    # a build of CUDA and Vulkan: llama-bench's backends lists both (test::get_backend: every registered backend but
    # the CPU), -dev picks by ggml's device names (CUDA0, Vulkan0): a row is the backend of the devices it ran on
    got = []
    for dev in ("CUDA0", "Vulkan0", "auto"):
        o = dict(LB_KEYS, backends="CUDA,Vulkan", devices=dev, n_prompt=0, n_gen=128, avg_ts=127.5)
        (r,) = im.read(write(tmp_path, "cv.jsonl", json.dumps(o) + "\n"), model="llama-3.1-8b")
        got.append(r["backend"])
    assert got == ["CUDA", "Vulkan", "CUDA,Vulkan"]
    both = cuda.split("  Device 1")[0].replace("found 2", "found 1") + (
        "ggml_vulkan: Found 1 Vulkan devices:\nggml_vulkan: 0 = NVIDIA GeForce RTX 4090 (NVIDIA) | uma: 0 | fp16: 1 | "
        "warp size: 32 | shared memory: 49152 | int dot: 1 | matrix cores: NV_coopmat2\n")
    rows = "".join(_lb_row("CUDA,Vulkan", d, "tg128", ts) for d, ts in (("CUDA0", "150.00 ± 0.10"), ("Vulkan0", "140.00 ± 0.10"),
                                                                        ("CUDA0/Vulkan0", "80.00 ± 0.10")))
    recs = im.read(write(tmp_path, "cv.md", both + _LB_HEAD.format(x="dev") + rows), model="llama-3.1-8b")
    assert [(r["backend"], r.get("coopmat"), r["avg_ts"]) for r in recs] == [
        ("CUDA", None, 150.0), ("Vulkan", "nv2", 140.0), ("CUDA,Vulkan", "nv2", 80.0)]
    # llama-bench's md names use_mmap / use_direct_io "mmap" / "dio" (llama-cpp-python 0.3.22's llama-bench.cpp,
    # markdown_printer::get_field_display_name; -mmp 0 -dio 1): the record's fields, as json's
    (r,) = im.read(write(tmp_path, "dio.md", cuda + _LB_HEAD.format(x="mmap").replace("|      mmap |", "| mmap | dio |")
                         .replace("| --------: |", "| ---: | --: |") + _lb_row("CUDA", "0 |   1", "tg128", "127.55 ± 0.35")),
                   model="llama-3.1-8b")
    assert (r["use_mmap"], r["use_direct_io"], r["avg_ts"]) == (False, True, 127.55)
    # Vulkan: ggml_vulkan's "matrix cores" is the coopmat path; -dev Vulkan0 leaves out the iGPU
    vk = ("ggml_vulkan: Found 2 Vulkan devices:\n"
          "ggml_vulkan: 0 = NVIDIA GeForce RTX 4070 (NVIDIA) | uma: 0 | fp16: 1 | bf16: 0 | warp size: 32 | shared memory: "
          "49152 | int dot: 1 | matrix cores: KHR_coopmat\n"
          "ggml_vulkan: 1 = AMD Radeon(TM) Graphics (RADV RAPHAEL_MENDOCINO) (radv) | uma: 1 | fp16: 1 | bf16: 0 | warp "
          "size: 64 | shared memory: 65536 | int dot: 0 | matrix cores: none\n")
    p = write(tmp_path, "vk.md", vk + _LB_HEAD.format(x="dev") + _lb_row("Vulkan", "Vulkan0", "pp512", "2900.40 ± 5.20"))
    (r,) = im.read(p, model="llama-3.1-8b")
    assert (r["device"], r["hardware"], r["n_cards"], r["split"], r["backend"], r["coopmat"]) == (
        "RTX 4070", "rtx-4070", 1, "none", "Vulkan", "khr")
    p = write(tmp_path, "vk2.md", vk.replace("KHR_coopmat", "NV_coopmat2").replace("Found 2", "Found 1").split("ggml_vulkan: 1")[0]
              + _LB_HEAD.format(x="fa") + _lb_row("Vulkan", "1", "pp512", "2900.40 ± 5.20"))
    (r,) = im.read(p, model="llama-3.1-8b")
    assert (r["hardware"], r["coopmat"]) == ("rtx-4070", "nv2")


def test_sycl_device_list_rpc_and_other_backends_are_read_as_such(tmp_path):
    # SYCL prints its device list as a '|' table right above llama-bench's: the benchmark table is still found
    sycl = ("ggml_sycl_init: found 1 SYCL devices:\n"
            "|ID|        Device Type|                                   Name|Version|units  |\n"
            "|--|-------------------|---------------------------------------|-------|-------|\n"
            "| 0| [level_zero:gpu:0]|                Intel Arc A770 Graphics|    1.6|    512|\n")
    p = write(tmp_path, "sycl.md", sycl + _LB_HEAD.format(x="fa") + _lb_row("SYCL", "1", "tg128", "41.71 ± 0.11"))
    assert im.detect(open(p).read()) == "llama-bench-md"
    (r,) = im.read(p, model="llama-3.1-8b")
    assert (r["backend"], r["test"], r["avg_ts"], r["source"].rsplit(":", 1)[1]) == ("SYCL", "tg", 41.71, "7")
    # RPC: the backend column's "CUDA,RPC" (and --rpc) survive the CUDA device lines
    cuda = "ggml_cuda_init: found 1 CUDA devices:\n  Device 0: NVIDIA GeForce RTX 3090, compute capability 8.6, VMM: yes\n"
    p = write(tmp_path, "rpc.md", "$ llama-bench -m x.gguf --rpc 10.0.0.2:50052\n" + cuda + _LB_HEAD.format(x="fa")
              + _lb_row("CUDA,RPC", "1", "tg128", "9.87 ± 0.02"))
    (r,) = im.read(p, model="llama-3.1-8b")
    assert r["backend"] == "CUDA,RPC" and r["hardware"] == "rtx-3090"
    p = write(tmp_path, "rpc2.md", "$ llama-bench -m x.gguf --rpc 10.0.0.2:50052\n" + cuda + _LB_HEAD.format(x="fa")
              + _lb_row("CUDA", "1", "tg128", "9.87 ± 0.02"))
    assert im.read(p, model="llama-3.1-8b")[0]["backend"] == "CUDA,RPC"
    # ... llama-bench's short -rpc too; "CUDA,RPC" with no -rpc/--rpc on the command line is a build with RPC
    # compiled in (late-2024 llama-bench listed every compiled backend): CUDA, said how
    p = write(tmp_path, "rpc3.md", "$ llama-bench -m x.gguf -rpc 10.0.0.2:50052\n" + cuda + _LB_HEAD.format(x="fa")
              + _lb_row("CUDA", "1", "tg128", "9.87 ± 0.02"))
    assert im.read(p, model="llama-3.1-8b")[0]["backend"] == "CUDA,RPC"
    for pre in ("$ llama-bench -m x.gguf -fa 1\n" + cuda, "$ llama-bench -m x.gguf -fa 1\n"):
        p = write(tmp_path, "rpc4.md", pre + _LB_HEAD.format(x="fa") + _lb_row("CUDA,RPC", "1", "tg128", "9.87 ± 0.02"))
        (r,) = im.read(p, model="llama-3.1-8b")
        assert r["backend"] == "CUDA" and "RPC compiled in, not used" in r["inferred"]["backend"]
    # no command line: RPC may have been used, so it stays
    p = write(tmp_path, "rpc5.md", cuda + _LB_HEAD.format(x="fa") + _lb_row("CUDA,RPC", "1", "tg128", "9.87 ± 0.02"))
    assert im.read(p, model="llama-3.1-8b")[0]["backend"] == "CUDA,RPC"
    # ROCm and Metal keep their backend (public_records leaves them out: no runtime model)
    rocm = "ggml_cuda_init: found 1 ROCm devices:\n  Device 0: AMD Radeon RX 7900 XTX, gfx1100 (0x1100), VMM: no, Wave Size: 32\n"
    (r,) = im.read(write(tmp_path, "rocm.md", rocm + _LB_HEAD.format(x="fa") + _lb_row("ROCm", "1", "tg128", "97.1 ± 0.1")),
                   model="llama-3.1-8b")
    assert (r["backend"], r["device"], r.get("hardware")) == ("ROCm", "AMD Radeon RX 7900 XTX", None)


def test_gpu_counts_after_the_name_and_vllm_checkpoint_formats():
    assert im.gpus_in("RTX 3090 x2 (NVLink)") == [("RTX 3090", 2)]
    assert im.gpus_in("A100 80GB ×4") == [("A100", 4)]
    assert im.gpus_in("4x A100 80GB SXM") == [("A100", 4)]
    assert im.gpus_in("NVIDIA GeForce RTX 4090 (24 GB, PCIe 4.0 x16)") == [("RTX 4090", None)]   # lanes, not cards
    assert [im.checkpoint_quant(n) for n in ("Qwen/Qwen2.5-32B-Instruct-AWQ", "Qwen/Qwen2.5-14B-Instruct-GPTQ-Int4",
                                             "neuralmagic/Meta-Llama-3.1-70B-Instruct-FP8",
                                             "RedHatAI/Llama-3.3-70B-Instruct-FP8-dynamic", "Qwen2.5-7B-Instruct-GPTQ-Int8",
                                             "meta-llama/Llama-3.1-8B-Instruct")] == ["awq", "gptq", "fp8", "fp8_per_channel",
                                                                                       None, None]


_SERVE = ("============ Serving Benchmark Result ============\nSuccessful requests:                     320\n"
          "Maximum request concurrency:             32\nBenchmark duration (s):                  60.12\n"
          "Total input tokens:                      327680\nTotal generated tokens:                  81920\n"
          "Output token throughput (tok/s):         1362.61\nMean TPOT (ms):                          21.84\n"
          "==================================================\n")


def test_sglang_server_model_path_and_tp(tmp_path):
    # SGLang's server names its model with --model-path and its cards with --tp / --tp-size
    for tp in ("--tp 2", "--tp-size 2", "--tp=2"):
        text = ("$ python -m sglang.launch_server --model-path Qwen/Qwen2.5-32B-Instruct-AWQ " + tp + "\n"
                "$ python -m sglang.bench_serving --backend sglang --num-prompts 320 --max-concurrency 32\n"
                "2x H100 SXM\n" + _SERVE.replace("Successful requests:", "Backend:                                 sglang\n"
                                                                       "Successful requests:"))
        (r,) = im.read(write(tmp_path, "sgl.log", text))
        assert (r["model"], r["weights"], r["hardware"], r["n_cards"], r["split"], r["n_streams"]) == (
            "qwen2.5-32b", "awq", "h100-sxm", 2, "tensor", 32), tp
        assert r["inferred"]["split"] == "tensor (SGLang's tensor parallelism)", r["inferred"]["split"]


def test_vllm_server_tp_and_quantized_checkpoint_and_its_other_benchmarks(tmp_path):
    # the server's --tensor-parallel-size is on its own line, before the client's
    text = ("Two H100 SXM cards on one box.\n"
            "$ python -m vllm.entrypoints.openai.api_server --model Qwen/Qwen2.5-32B-Instruct-AWQ --tensor-parallel-size 2\n"
            "$ python benchmarks/benchmark_serving.py --backend vllm --model Qwen/Qwen2.5-32B-Instruct-AWQ "
            "--num-prompts 320 --max-concurrency 32\n" + _SERVE)
    (r,) = im.read(write(tmp_path, "tp.log", text))
    assert (r["model"], r["weights"], r["hardware"], r["n_cards"], r["split"], r["n_streams"]) == (
        "qwen2.5-32b", "awq", "h100-sxm", 2, "tensor", 32)
    assert r["inferred"]["split"] == "tensor (vLLM's tensor parallelism)"
    js = {"backend": "vllm", "model_id": "Qwen/Qwen2.5-14B-Instruct-GPTQ-Int4", "num_prompts": 10, "completed": 10,
          "max_concurrency": 4, "total_input_tokens": 5120, "total_output_tokens": 1280, "output_throughput": 300.0,
          "mean_tpot_ms": 12.0}
    (r,) = im.read(write(tmp_path, "q.json", json.dumps(js)))
    assert (r["model"], r["weights"]) == ("qwen2.5-14b", "gptq")
    # vllm bench throughput / latency (and the older benchmark_*.py): one `serve` record each, its lengths and
    # counts from the command line (vLLM's defaults where it sets none)
    thr = ("$ vllm bench throughput --model meta-llama/Llama-3.1-8B-Instruct --input-len 1024 --output-len 128\n"
           "INFO 08-03 12:00:00 [__init__.py:241] Automatically detected platform cuda.\n"
           "Throughput: 34.87 requests/s, 40172.31 total tokens/s, 4463.59 output tokens/s\n")
    assert im.detect(thr) == "vllm-offline"
    (r,) = im.read(write(tmp_path, "thr.log", thr))
    assert (r["test"], r["serve_kind"], r["server"], r["model"], r["n_prompt"], r["n_gen"], r["completed"]) == (
        "serve", "throughput", "vllm", "llama-3.1-8b", 1024, 128, 1000)
    assert (r["request_throughput"], r["aggregate_tok_s"], r["source"].rsplit(":", 1)[1]) == (34.87, 4463.59, "3")
    assert "vLLM's default 1000" in r["inferred"]["n_streams"]
    # the token totals it prints give the mean lengths; the older line (total tokens/s only) reads too
    old = ("$ python benchmarks/benchmark_throughput.py --model Qwen/Qwen3-8B --dataset sharegpt.json --num-prompts 200\n"
           "Throughput: 9.50 requests/s, 4750.00 tokens/s\nTotal num prompt tokens:  51200\n"
           "Total num output tokens:  25600\n")
    (r,) = im.read(write(tmp_path, "old.log", old))
    assert (r["n_prompt"], r["n_gen"], r["completed"], r["aggregate_tok_s"]) == (256, 128, 200, 9.5 * 128)
    lat = ("$ vllm bench latency --model m --input-len 32 --output-len 128 --batch-size 1\nWarming up...\n"
           "Avg latency: 0.7094 seconds\n10% percentile latency: 0.7071 seconds\n50% percentile latency: 0.7090 seconds\n")
    (r,) = im.read(write(tmp_path, "lat.log", lat), model="llama-3.1-8b")
    assert (r["serve_kind"], r["n_prompt"], r["n_gen"], r["n_streams"], r["latency_s"], r["p50_latency_s"]) == (
        "latency", 32, 128, 1, 0.7094, 0.709)
    assert r["aggregate_tok_s"] == pytest.approx(128 / 0.7094)
    lat2 = "$ vllm bench latency --model meta-llama/Llama-3.1-8B-Instruct -tp 2\nAvg latency: 1.5 seconds\n"
    (r,) = im.read(write(tmp_path, "lat2.log", lat2))
    assert (r["n_prompt"], r["n_gen"], r["n_streams"], r["n_cards"]) == (32, 128, 8, 2)    # vLLM's defaults; -tp 2
    # without its command line the lengths are not known; a result under the other tool's command is a mismatch
    with pytest.raises(im.FormatError, match=r"nocmd\.log:1: vLLM's offline latency benchmark without its command line"):
        im.read(write(tmp_path, "nocmd.log", "Avg latency: 0.7094 seconds\n"), model="llama-3.1-8b")
    with pytest.raises(im.FormatError, match=r"mix\.log:2: a latency result under a `vllm bench throughput` command"):
        im.read(write(tmp_path, "mix.log", "$ vllm bench throughput --model m --input-len 8 --output-len 8\n"
                                           "Avg latency: 0.7 seconds\n"), model="llama-3.1-8b")
    with pytest.raises(im.FormatError, match=r"nolen\.log:2: vLLM's throughput result without its token totals"):
        im.read(write(tmp_path, "nolen.log", "$ vllm bench throughput --model m --dataset-name sharegpt\n"
                                             "Throughput: 9.50 requests/s, 4750.00 tokens/s\n"), model="llama-3.1-8b")


def test_gpu_counts_in_words_and_plurals():
    assert im.gpus_in("benchmarks on dual RTX 3090") == [("RTX 3090", 2)]
    assert im.gpus_in("my two RTX 3090s over NVLink") == [("RTX 3090", 2)]
    assert im.gpus_in("Table 2 RTX 4090 results") == [("RTX 4090", None)]    # a bare digit before it is no count
    assert im.gpus_in("RTX 4090 on PCIe 4.0 x16") == [("RTX 4090", None)]


# ---- the third audit: 2025-26 llama-bench options, command lines, card names ---------------------
_CUDA_4090 = "ggml_cuda_init: found 1 CUDA devices:\n  Device 0: NVIDIA GeForce RTX 4090, compute capability 8.9, VMM: yes\n"


def test_llama_bench_lists_on_the_command_line_leave_each_row_its_own_value(tmp_path):
    # `-fa 0,1 -ub 512,2048 -ctk f16,q8_0`: one run per value, each row's column says which (the list is
    # not a bare -fa, and the command line does not overwrite the rows' n_ubatch / type_k)
    head = ("| model                          |       size |     params | backend    | ngl | n_ubatch | type_k |  fa |"
            "            test |                  t/s |\n"
            "| ------------------------------ | ---------: | ---------: | ---------- | --: | -------: | ------ | --: |"
            " --------------: | -------------------: |\n")

    def row(ub, tk, fa, ts):
        return (f"| qwen3moe 30B.A3B Q4_K - Medium |  17.28 GiB |    30.53 B | CUDA       |  99 | {ub:>8} | {tk:6} | {fa:>3} |"
                f"          pp2048 | {ts:>20} |\n")
    p = write(tmp_path, "lists.md", "$ llama-bench -m Qwen3-30B-A3B-Q4_K_M.gguf -ngl 99 -fa 0,1 -ub 512,2048 -ctk f16,q8_0 -p 2048 -n 0\n"
              + _CUDA_4090 + head + row(512, "f16", 0, "8120.40 ± 20.10") + row(2048, "q8_0", 1, "11840.30 ± 31.02"))
    a, b = im.read(p)
    assert [(r["n_ubatch"], r["type_k"], r["flash_attn"], r["avg_ts"]) for r in (a, b)] == [
        (512, "f16", 0, 8120.4), (2048, "q8_0", 1, 11840.3)]
    # one value (the same in a list, or a bare value) still tells a table without the column
    assert im._command_args("llama-bench -fa 1,1 -ub 1024", {})["flash_attn"] == 1
    assert "flash_attn" not in im._command_args("llama-bench -fa on,off", {})
    assert im._command_args("llama-bench -fa -ngl 99", {})["flash_attn"] == 1     # the older bare switch


def test_a_command_over_several_lines_and_what_it_puts_on_the_cpu(tmp_path):
    # `llama-sweep-bench \` continued over lines is one command: its --model (the weights) and its -ot
    sweep = ("main: n_kv_max = 32768, n_batch = 4096, n_ubatch = 4096, flash_attn = 1, n_gpu_layers = 99, n_threads = 24, "
             "n_threads_batch = 24\n\n"
             "|    PP |     TG |   N_KV |   T_PP s | S_PP t/s |   T_TG s | S_TG t/s |\n"
             "|-------|--------|--------|----------|----------|----------|----------|\n"
             "|  4096 |   1024 |      0 |   22.141 |   185.00 |   91.429 |    11.20 |\n")
    cmd = ("./build/bin/llama-sweep-bench \\\n    --model /mnt/DeepSeek-R1-0528-IQ2_K_R4-00001-of-00005.gguf \\\n"
           "    -mla 3 -fa -amb 512 -fmoe \\\n    -ctk q8_0 -c 32768 \\\n    -ngl 99 -ot exps=CPU \\\n"
           "    --threads 24 -ub 4096 -b 4096\n\n" + _CUDA_4090 + "\n")
    pp, tg = im.read(write(tmp_path, "ot.md", cmd + sweep))
    assert (pp["model"], pp["weights"], pp["type_k"], pp["mla"], pp["tensor_buft_overrides"], pp["hardware"]) == (
        "deepseek-r1", "IQ2_K_R4", "q8_0", "3", "exps=CPU", "rtx-4090")
    assert pp["command"].startswith("./build/bin/llama-sweep-bench --model /mnt/DeepSeek-R1-0528") and "-ot exps=CPU" in pp["command"]
    # --n-cpu-moe N, --cpu-moe and -nkvo on the command line are said too (a sweep table has no column for them)
    for flags, field, value in (("--n-cpu-moe 28", "n_cpu_moe", 28), ("--cpu-moe", "tensor_buft_overrides", "exps=CPU (--cpu-moe)"),
                                ("-nkvo", "no_kv_offload", True)):
        p = write(tmp_path, "c.md", f"llama-sweep-bench -m GLM-4.5-Air-Q4_K_M.gguf -c 8192 -ngl 99 {flags} -fa on\n\n" + sweep)
        assert im.read(p)[0][field] == value
    # llama-bench's -nkvo takes a value: -nkvo 0 is the default (all on the GPU), -nkvo 1 the KV cache on the CPU
    assert [im._command_args(f"llama-bench -m x.gguf -nkvo {v} -fa 1", {}).get("no_kv_offload") for v in ("0", "1", "0,1")] == [
        False, True, None]
    p = write(tmp_path, "n.md", "llama-bench -m GLM-4.5-Air-Q4_K_M.gguf -nkvo 0\n\n" + sweep)
    assert "no_kv_offload" not in im.read(p)[0]
    # a llama-bench row's own ot column is what it ran with
    (r,) = im.read(write(tmp_path, "lb.md", "$ llama-bench -m x.gguf -ot exps=CPU\n" + _CUDA_4090 + _LB_HEAD.format(x="ot")
                         + _lb_row("CUDA", "exps=CPU", "tg128", "20.10 ± 0.10")), model="llama-3.1-8b")
    assert r["tensor_buft_overrides"] == "exps=CPU"
    # llama-bench prints the -ot pattern as given (tools/llama-bench/llama-bench.cpp, test::get_values: pattern + "=" +
    # the buffer's name), so a regex's alternation puts pipes inside the ot cell: one cell, the row read
    ot = r"blk\.(2[0-9]|3[0-9]|4[0-6])\.ffn_.*_exps\.=CPU"
    (r,) = im.read(write(tmp_path, "lbre.md", f"$ llama-bench -m x.gguf -ot \"{ot}\"\n" + _CUDA_4090 + _LB_HEAD.format(x="ot")
                         + _lb_row("CUDA", ot, "tg128", "20.10 ± 0.10")), model="llama-3.1-8b")
    assert (r["tensor_buft_overrides"], r["test"], r["n_gen"], r["avg_ts"], r["stddev_ts"]) == (ot, "tg", 128, 20.10, 0.10)
    # a vLLM server started over several lines: its model and its -tp
    serve = ("vllm serve \\\n  Qwen/Qwen2.5-32B-Instruct-AWQ \\\n  --tensor-parallel-size 2\n"
             "vllm bench serve --model Qwen/Qwen2.5-32B-Instruct-AWQ --max-concurrency 32\nH100 SXM\n" + _SERVE)
    (r,) = im.read(write(tmp_path, "tp.log", serve))
    assert (r["model"], r["weights"], r["n_cards"]) == ("qwen2.5-32b", "awq", 2)


def test_the_kv_cache_type_is_not_the_weights(tmp_path):
    # `-m "$MODEL" -ctk q8_0`: the model file is not in the paste, and q8_0 is the KV cache's type, not the weights'
    sweep = ("main: n_kv_max = 8192, n_batch = 2048, n_ubatch = 512, flash_attn = 1, n_gpu_layers = 99, n_threads = 16, "
             "n_threads_batch = 16\n\n"
             "|    PP |     TG |   N_KV |   T_PP s | S_PP t/s |   T_TG s | S_TG t/s |\n"
             "|-------|--------|--------|----------|----------|----------|----------|\n"
             "|   512 |    128 |      0 |    0.089 |  5752.81 |    0.751 |   170.44 |\n")
    p = write(tmp_path, "kv.md", '```\n./build/bin/llama-sweep-bench -m "$MODEL" -c 8192 -ngl 99 -fa -ctk q8_0 -ctv q8_0 -fmoe\n```\n\n'
              + _CUDA_4090 + "\n" + sweep)
    pp, _ = im.read(p, model="qwen3-30b-a3b")
    assert (pp["type_k"], pp.get("weights")) == ("q8_0", None)
    # nor in prose: "q8_0 KV" / "--cache-type-k=q8_0"; the weights the prose names are still read
    p = write(tmp_path, "kv2.md", "Qwen3-30B-A3B Q4_K_M, q8_0 KV, --cache-type-k=q8_0:\n\n" + sweep)
    pp, _ = im.read(p, model="qwen3-30b-a3b")
    assert pp["weights"] == "Q4_K_M"


def test_an_mxfp4_gguf_is_llamas_mxfp4_moe_file_type(tmp_path):
    # llama.cpp has one MXFP4 file type, MXFP4_MOE (MXFP4 experts, Q8_0 elsewhere): a GGUF named "mxfp4" is
    # that mix, not MXFP4 on every matrix; a vLLM checkpoint's "mxfp4" keeps the format's own name
    assert [im.gguf_quant(w) for w in ("mxfp4", "MXFP4_MOE", "q4_K", None)] == ["MXFP4_MOE", "MXFP4_MOE", "q4_K", None]
    sweep = ("main: n_kv_max = 8192, n_batch = 2048, n_ubatch = 512, flash_attn = 1, n_gpu_layers = 99, n_threads = 16, "
             "n_threads_batch = 16\n\n"
             "|    PP |     TG |   N_KV |   T_PP s | S_PP t/s |   T_TG s | S_TG t/s |\n"
             "|-------|--------|--------|----------|----------|----------|----------|\n"
             "|   512 |    128 |      0 |    0.089 |  5752.81 |    0.751 |   170.44 |\n")
    p = write(tmp_path, "oss.md", "```\n./build/bin/llama-sweep-bench -m gpt-oss-20b-mxfp4.gguf -c 8192 -ngl 99 -fa\n```\n\n"
              + _CUDA_4090 + "\n" + sweep)
    pp, tg = im.read(p)
    assert (pp["model"], pp["weights"], tg["weights"]) == ("gpt-oss-20b", "MXFP4_MOE", "MXFP4_MOE")
    assert "MXFP4 experts, Q8_0 elsewhere" in pp["inferred"]["weights"]
    # llama-bench json whose model_type prints no file type: the file name's, as the file type
    row = {"build_commit": "11fb327bf", "build_number": 7941, "model_filename": "/models/gpt-oss-20b-mxfp4.gguf",
           "model_type": "gpt-oss 20B", "model_size": 12101672960, "model_n_params": 20914757184, "n_batch": 2048,
           "n_ubatch": 2048, "n_threads": 8, "n_gpu_layers": 99, "flash_attn": 1, "gpu_info": "NVIDIA GeForce RTX 4090",
           "n_prompt": 0, "n_gen": 128, "n_depth": 0, "avg_ts": 220.0, "stddev_ts": 1.0}
    (r,) = im.read(write(tmp_path, "lb.json", json.dumps([row])))
    assert r["weights"] == "MXFP4_MOE"
    # the file type llama-bench prints is read as it stands
    (r,) = im.read(write(tmp_path, "lb2.json", json.dumps([dict(row, model_type="gpt-oss 20B MXFP4 MoE")])))
    assert r["weights"] == "MXFP4_MOE"


def test_a_table_with_lines_written_between_its_rows(tmp_path):
    """A line between a table's rows (a user's note in a post; in a terminal's copy, whatever else went to stderr,
    where sweep-bench prints its table too, LOG_TEE / LOG_INF): the rows after it are the same table's, not
    dropped without a word; a new header or llama-bench's `build:` line still ends a table."""
    head = ("main: n_kv_max = 8192, n_batch = 2048, n_ubatch = 512, flash_attn = 1, n_gpu_layers = 99, n_threads = 16, "
            "n_threads_batch = 16\n\n|    PP |     TG |   N_KV |   T_PP s | S_PP t/s |   T_TG s | S_TG t/s |\n"
            "|-------|--------|--------|----------|----------|----------|----------|\n")
    rows = ["|   512 |    128 |      0 |    0.199 |  2570.45 |    3.160 |    40.51 |\n",
            "|   512 |    128 |    512 |    0.201 |  2545.10 |    3.180 |    40.25 |\n",
            "|   512 |    128 |   1024 |    0.203 |  2522.00 |    3.200 |    40.00 |\n"]
    text = head + rows[0] + "(GPU at 100% from here, fans at 80%)\n" + rows[1] + rows[2]
    recs = im.read(write(tmp_path, "s.md", text), model="qwen3-8b")
    assert [(r["test"], r["n_depth"], r["avg_ts"]) for r in recs] == [
        ("pp", 0, 2570.45), ("tg", 0, 40.51), ("pp", 512, 2545.10), ("tg", 512, 40.25), ("pp", 1024, 2522.0), ("tg", 1024, 40.0)]
    # a llama-bench table ends at its build: line
    lb = (_LB_HEAD.format(x="fa") + _lb_row("CUDA", "1", "pp512", "5000.00 ± 1.00") + "\nbuild: abc1234 (6500)\n"
          + _lb_row("CUDA", "1", "tg128", "130.00 ± 1.00"))
    (r,) = im.read(write(tmp_path, "lb.md", _CUDA_4090 + lb), model="llama-3.1-8b")
    assert (r["test"], r["build_number"]) == ("pp", 6500)


# what `llama-bench -v` writes to stderr before each test's row (its context; a new model's load log too): a terminal's
# copy of `2>&1` puts it between the rows (llama.cpp src/llama-context.cpp, llama-kv-cache.cpp, llama-model-loader.cpp)
_VERBOSE_CTX = """llama_context: constructing llama_context
llama_context: n_seq_max             = 1
llama_context: n_ctx                 = 4736
llama_context: n_batch               = 2048
llama_context: n_ubatch              = 512
llama_context: flash_attn            = enabled
llama_context:  CUDA_Host  output buffer size =     0.58 MiB
llama_kv_cache:      CUDA0 KV buffer size =   666.00 MiB
llama_kv_cache: size =  666.00 MiB (  4736 cells,  36 layers,  1/1 seqs), K (f16):  333.00 MiB, V (f16):  333.00 MiB
sched_reserve:      CUDA0 compute buffer size =   304.75 MiB
graph_reserve: reserving a graph for ubatch with n_tokens =  512, n_seqs =  1, n_outputs =  512
"""
_VERBOSE_LOAD = """load_backend: loaded CUDA backend from /opt/llama.cpp/build/bin/libggml-cuda.so
llama_model_load_from_file_impl: using device CUDA0 (NVIDIA GeForce RTX 4090) - 23582 MiB free
llama_model_loader: loaded meta data with 32 key-value pairs and 399 tensors from /models/Qwen3-8B-Q4_K_M.gguf (version GGUF V3 (latest))
llama_model_loader: - type  f32:  145 tensors
print_info: file format = GGUF V3 (latest)
print_info: file type   = Q4_K - Medium
load_tensors: offloading 36 repeating layers to GPU
load_tensors:        CUDA0 model buffer size =  4455.34 MiB
.......................................................................................
"""


def test_a_table_whose_rows_a_verbose_log_interleaves(tmp_path):
    """`llama-bench -v ... 2>&1`: every row comes after a dozen or more of llama.cpp's log lines (a new context per
    test, a model's whole load log when its parameters change): the rows after any number of them are the same
    table's; prose, a new header or the `build:` footer still ends it."""
    head = _LB_HEAD.format(x="fa")
    rows = [_lb_row("CUDA", "1", t, v, model="qwen3 8B Q4_K - Medium") for t, v in (
        ("pp512", "9800.00 ± 20.00"), ("tg128", "150.00 ± 0.30"), ("pp512 @ d4096", "8100.00 ± 15.00"),
        ("tg128 @ d4096", "139.00 ± 0.20"))]
    text = ("$ ./build/bin/llama-bench -v -m /models/Qwen3-8B-Q4_K_M.gguf -fa 1 -d 0,4096 2>&1 | tee bench.log\n"
            + _CUDA_4090 + head + _VERBOSE_LOAD + _VERBOSE_CTX + rows[0] + _VERBOSE_CTX + rows[1] + "\n"
            + _VERBOSE_CTX + "warmup: 1 run\n" + rows[2] + "0.01.234.567 I " + _VERBOSE_CTX.replace("\n", "\n0.01.234.567 I ", 10)
            + rows[3] + "\nbuild: 6e7fc8a1 (6410)\n")
    recs = im.read(write(tmp_path, "verbose.log", text))
    assert [(r["test"], r["n_depth"], r["avg_ts"]) for r in recs] == [
        ("pp", 0, 9800.0), ("tg", 0, 150.0), ("pp", 4096, 8100.0), ("tg", 4096, 139.0)]
    assert {(r["model"], r["hardware"], r["build_number"]) for r in recs} == {("qwen3-8b", "rtx-4090", 6410)}
    # ... and public_records counts it as one table (stderr's lines between its rows split none)
    import sys
    sys.path.insert(0, str(pathlib.Path(__file__).resolve().parent.parent / "bench"))
    import public_records as pr
    assert len(pr._tables_of(recs)) == 1
    # prose after the log lines ends the table: the rows after it (more than three lines of it) are not read
    prose = "Then I changed the fans.\nAnd the power limit.\nAnd the clocks.\nAnd the cables.\n"
    end = _CUDA_4090 + head + rows[0] + _VERBOSE_CTX + prose + _VERBOSE_CTX + rows[1]
    assert [r["test"] for r in im.read(write(tmp_path, "prose.log", end), model="qwen3-8b")] == ["pp"]
    # a log line is no licence to join another table's rows: the footer still ends it, a new header starts another
    two = _CUDA_4090 + head + rows[0] + "\nbuild: 6e7fc8a1 (6410)\n" + _VERBOSE_CTX + rows[1]
    assert [r["test"] for r in im.read(write(tmp_path, "two.log", two), model="qwen3-8b")] == ["pp"]
    again = _CUDA_4090 + head + rows[0] + _VERBOSE_CTX + head + rows[1]
    assert [r["source"].rsplit(":", 1)[1] for r in im.read(write(tmp_path, "again.log", again), model="qwen3-8b")] == [
        "5", "19"]
    # what prose could look like a log line is not one
    assert not any(im.is_log_line(x) for x in ("Main: the results", "Note: fans at 80%", "| a | b |", "source_url: x",
                                                "build: 6e7fc8a1 (6410)", "RTX 4090: 150 t/s"))
    assert all(im.is_log_line(x) for x in ("main: n_kv_max = 8192", "ggml_cuda_init: found 1 CUDA devices:",
                                            "  Device 0: NVIDIA GeForce RTX 4090, compute capability 8.9, VMM: yes",
                                            "build: 6410 (6e7fc8a1) with cc (GCC) 13.2 for x86_64-linux-gnu",
                                            "llama-bench: benchmark 1/4: starting", "Warming up...", "....."))


def test_batched_bench_shared_prompt_and_separate_generation(tmp_path):
    """llama-batched-bench (tools/batched-bench/batched-bench.cpp): with -pps one prompt is processed and copied to
    the B sequences (S_PP = PP / T_PP: one stream); with -tgs (is_tg_separate = 1 on its main: line) the B
    sequences generate one after another, one token a step (S_TG = B x TG / T_TG of one stream at a time)."""
    table = ("|    PP |     TG |    B |   N_KV |   T_PP s | S_PP t/s |   T_TG s | S_TG t/s |      T s |    S t/s |\n"
             "|-------|--------|------|--------|----------|----------|----------|----------|----------|----------|\n"
             "|   512 |    128 |    4 |   1024 |    0.200 |  2560.00 |   14.222 |    36.00 |   14.422 |    71.00 |\n")
    main = ("main: n_kv_max = 8192, n_batch = 2048, n_ubatch = 512, flash_attn = 1, is_pp_shared = {pps}, "
            "is_tg_separate = {tgs}, n_gpu_layers = 99, n_threads = 16, n_threads_batch = 16\n\n")
    got = {}
    for pps, tgs in ((0, 0), (1, 0), (0, 1)):
        pp, tg = im.read(write(tmp_path, "b.md", main.format(pps=pps, tgs=tgs) + table), model="qwen3-8b")
        got[pps, tgs] = (pp["n_streams"], tg["n_streams"], tg["pl"], tg["n_depth"], tg["avg_ts"])
    assert got == {(0, 0): (4, 4, 4, 512, 36.0), (1, 0): (1, 4, 4, 512, 36.0), (0, 1): (4, 1, 4, 512, 36.0)}


def test_a_page_of_sections_gives_each_batched_table_its_models_weights(tmp_path):
    # llama.cpp's benches pages: per model a heading, a batched-bench table, then its llama-bench table; the
    # batched table takes the file type of the llama-bench rows of its own model, not "not stated"
    batched = ("main: n_kv_max = 270336, n_batch = 2048, n_ubatch = 2048, flash_attn = 1, is_pp_shared = 0, "
               "n_gpu_layers = -1, n_threads = 20, n_threads_batch = 20\n\n"
               "|    PP |     TG |    B |   N_KV |   T_PP s | S_PP t/s |   T_TG s | S_TG t/s |      T s |    S t/s |\n"
               "|-------|--------|------|--------|----------|----------|----------|----------|----------|----------|\n"
               "|   512 |     32 |    1 |    544 |    0.270 |  1895.57 |    0.399 |    80.13 |    0.669 |   812.60 |\n")
    bench = ("| model                          |       size |     params | backend    | ngl | n_ubatch | fa |            test |"
             "                  t/s |\n"
             "| ------------------------------ | ---------: | ---------: | ---------- | --: | -------: | -: | --------------: |"
             " -------------------: |\n"
             "| {mt:<30} | {size} | {params} | CUDA       |  99 |     2048 |  1 |            tg32 |         83.43 ± 0.59 |\n")
    text = ("NVIDIA GB10\n\n## ggml-org/gpt-oss-20b-GGUF\n\n- `llama-batched-bench`\n\n" + batched
            + "\n- `llama-bench`\n\n" + bench.format(mt="gpt-oss 20B MXFP4 MoE", size=" 11.27 GiB", params="   20.91 B")
            + "\n## ggml-org/gemma-3-4b-it-qat-GGUF\n\n- `llama-batched-bench`\n\n" + batched
            + "\n- `llama-bench`\n\n" + bench.format(mt="gemma3 4B Q4_0", size="  2.35 GiB", params="    3.88 B"))
    notices = []
    recs = im.read(write(tmp_path, "page.md", text), notices=notices)
    got = {(r["model"], r["tool"], r["weights"]) for r in recs}
    assert got == {("gpt-oss-20b", "llama-batched-bench", "MXFP4_MOE"), ("gpt-oss-20b", "llama-bench", "MXFP4_MOE"),
                   ("gemma-3-4b", "llama-batched-bench", "q4_0"), ("gemma-3-4b", "llama-bench", "q4_0")}
    (g,) = {r["inferred"]["weights"] for r in recs if r["model"] == "gemma-3-4b" and r["tool"] == "llama-batched-bench"}
    assert g.startswith("q4_0 (from the file's llama-bench rows of gemma-3-4b, line ")
    assert not any("weights: not stated" in n for n in notices)
    # a model with no llama-bench rows of its own does not take another model's file type
    text2 = (text.split("## ggml-org/gemma")[0] + "## ggml-org/Qwen2.5-Coder-7B-GGUF\n\n- `llama-batched-bench`\n\n" + batched)
    notices = []
    recs = im.read(write(tmp_path, "page2.md", text2), notices=notices)
    qs = [r for r in recs if r["model"] == "qwen2.5-coder-7b"]
    assert len(qs) == 2 and all(q.get("weights") is None and "weights" not in q["inferred"] for q in qs)
    assert any("weights: not stated" in n for n in notices)
    # nor does a table without a heading whose command line names another model than the file's llama-bench rows
    text4 = (bench.format(mt="gpt-oss 20B MXFP4 MoE", size=" 11.27 GiB", params="   20.91 B")
             + "\n$ ./llama-batched-bench -m Qwen2.5-Coder-7B-Instruct.gguf -npl 1\n" + batched)
    notices = []
    recs = im.read(write(tmp_path, "page4.md", text4), notices=notices)
    qs = [r for r in recs if r["model"] == "qwen2.5-coder-7b"]
    assert len(qs) == 2 and all(q.get("weights") is None for q in qs)
    assert any("another model" in n for n in notices)
    # a section whose heading names no built-in: its table takes no model from the other sections' tables or text
    text3 = (text.split("## ggml-org/gemma")[0] + "## ggml-org/Nemotron-3-Nano-4B-GGUF\n\n- `llama-batched-bench`\n\n" + batched)
    recs = im.read(write(tmp_path, "page3.md", text3))
    assert [r.get("model") for r in recs if r["source"].endswith(":" + str(text3.count("\n")))] == [None, None]



def test_a_second_table_under_a_heading_naming_no_model_takes_the_pastes_one_model(tmp_path):
    """ik_llama.cpp PR 374's paste, saved as ik.md: prose naming LLaMA-3.1-8B-Instruct and IQ4_KS, then a
    sweep-bench table under <summary>Main branch</summary> and one under <summary>PR</summary>. The first
    took its model from the prose; the second, a section of its own, took none (`calibrate ik.md` failed at
    'ik.md:NN: ... pass --model'). Where the paste names one model only and the heading names none, the
    second table takes that model and its weights; a heading naming a model of its own, or a paste naming
    two, carries nothing over."""
    table = ("|    PP |     TG |   N_KV |   T_PP s | S_PP t/s |   T_TG s | S_TG t/s |\n"
             "|-------|--------|--------|----------|----------|----------|----------|\n"
             "|   512 |    128 |      0 |    0.128 |  3994.38 |    0.995 |   128.62 |\n"
             "|   512 |    128 |    512 |    0.091 |  5635.54 |    1.003 |   127.59 |\n")
    def paste(prose, second="PR"):
        return (f"#### Description\n\nThis PR adds MMQ for `IQ4_KS`. {prose} GPU is RTX-4080.\n\n"
                f"<details>\n<summary>Main branch</summary>\n\n{table}\n</details>\n\n"
                f"<details>\n<summary>{second}</summary>\n\n{table}\n</details>\n")
    notices = []
    recs = im.read(write(tmp_path, "ik.md", paste("Model is LLaMA-3.1-8B-Instruct.")), notices=notices)
    assert len(recs) == 8
    assert {(r["model"], r["weights"]) for r in recs} == {("llama-3.1-8b", "iq4_ks")}
    second = [r for r in recs if r["label"] == "PR"]
    assert len(second) == 4 and all("paste's one model" in r["inferred"]["model"] for r in second)
    assert not any("not stated" in n or "model: not known" in n for n in notices), notices
    # a heading that names a model (one glmbench does not know, by its size), or a paste naming two: nothing carried
    for text in (paste("Model is LLaMA-3.1-8B-Instruct.", second="Foo-8B"),
                 paste("Model is LLaMA-3.1-8B-Instruct, compared with Qwen3-32B.")):
        recs = im.read(write(tmp_path, "ik2.md", text))
        assert [r.get("model") for r in recs if r["label"] != "Main branch"] == [None] * 4


def test_phi3_rows_tell_phi_3_mini_from_phi_4_mini_by_params():
    # llama.cpp labels both 32-layer phi3 models "3B"; llama-bench's params column (2 decimals, or the exact count)
    # tells Phi-3-mini (3.82 B) from Phi-4-mini (3.84 B), 0.39% apart
    for params, want in ((3.82e9, "phi-3-mini"), (3_821_079_552, "phi-3-mini"), (3.84e9, "phi-4-mini"),
                         (3_836_021_760, "phi-4-mini")):
        assert im.model_candidates("phi3 3B Q4_K - Medium", params)[0] == [want]
    # the label alone: llama.cpp's for both (src/models/phi3.cpp: 32 layers -> 3B), two shapes: named both, not one
    assert im.model_candidates("phi3 3B Q4_K - Medium")[0] == ["phi-3-mini", "phi-4-mini"]
    with pytest.raises(im.AmbiguousModel, match="phi-3-mini, phi-4-mini"):
        im.identify_model(None, "phi3 3B Q4_K - Medium")
    assert im.identify_model("Phi-4-mini-instruct-Q4_K_M.gguf", "phi3 3B Q4_K - Medium")[0] == "phi-4-mini"


def test_a_smaller_variant_is_not_its_familys_built_in():
    # "Phi-4-mini" (3.8 B) is not phi-4 (14.7 B): it is the built-in phi-4-mini; a variant the built-in's name holds
    # still matches, and words prose puts after a name ("flash attention", "small batch") are no variant
    assert [im.names_in(t) for t in ("Phi-4-mini", "phi-4-mini-instruct-Q4_K_M.gguf", "phi-4-Q4_K_M.gguf", "GLM-4.5-Air",
                                     "DeepSeek-V2-Lite-Chat", "Qwen3-30B-A3B flash attention on", "qwen3-32b, flash-attn",
                                     "Qwen3-8B, small batch")] == [
        ["phi-4-mini"], ["phi-4-mini"], ["phi-4"], ["glm-4.5-air"], ["deepseek-v2-lite"], ["qwen3-30b-a3b"], ["qwen3-32b"], ["qwen3-8b"]]


def test_cards_named_by_a_count_word_and_a_bare_number():
    # how people write their rigs: a count word before a bare GeForce number, its Ti / SUPER, a plural
    got = [im.gpus_in(t) for t in ("dual 3090s", "a pair of 3090s", "Quad 3090", "twin 4090s", "3090 Ti", "4070 super",
                                   "2x 3090 ti", "2x 4070 super", "4x4090s")]
    assert got == [[("RTX 3090", 2)], [("RTX 3090", 2)], [("RTX 3090", 4)], [("RTX 4090", 2)], [("RTX 3090 Ti", None)],
                   [("RTX 4070 Super", None)], [("RTX 3090 Ti", 2)], [("RTX 4070 Super", 2)], [("RTX 4090", 4)]]
    # a rig listed board by board
    assert [im.gpus_in(t) for t in ("RTX 3090 24GB + RTX 3090 24GB", "RTX 3090 Ti + RTX 3090 Ti", "RTX 3090, RTX 3090, RTX 3090",
                                    "NVIDIA GeForce RTX 3090 & NVIDIA GeForce RTX 3090", "RTX 3090. Later RTX 3090 again",
                                    "RTX 4090 + RTX 3090")] == [
        [("RTX 3090", 2)], [("RTX 3090 Ti", 2)], [("RTX 3090", 3)], [("RTX 3090", 2)], [("RTX 3090", None)],
        [("RTX 4090", None), ("RTX 3090", None)]]
    # a bare number alone is no card
    assert [im.gpus_in(t) for t in ("port 3090 is open", "version 5.3090", "the 4090 is fast", "2060 tokens")] == [[]] * 4
    assert [hardware.resolve_gpu_name(n) for n, _ in im.gpus_in("dual 3090s, a 4070 Super")] == ["rtx-3090", "rtx-4070-super"]


def test_the_words_after_a_gpu_name_that_pick_its_variant():
    # memory / form factor / "Ada" after the name pick another card of the catalog: kept with the name
    assert im.gpus_in("1x H100 80GB PCIe") == [("H100 80GB PCIe", 1)]
    assert im.gpus_in("4 x NVIDIA A100-SXM4-40GB") == [("A100 SXM4 40GB", 4)]
    assert im.gpus_in("2x NVIDIA A100 80GB PCIe") == [("A100 80GB PCIe", 2)]
    assert im.gpus_in("2x NVIDIA RTX 6000 Ada Generation") == [("RTX 6000 Ada Generation", 2)]
    assert im.gpus_in("RTX 4060 Ti 16GB") == [("RTX 4060 Ti 16GB", None)]
    assert im.gpus_in("H100 80GB PCIe x4") == [("H100 80GB PCIe", 4)]
    assert [hardware.resolve_gpu_name(n) for n, _ in im.gpus_in("1x H100 80GB PCIe, 2x RTX 6000 Ada, RTX 4000 SFF Ada")] == [
        "h100-pcie", "rtx-6000-ada", "rtx-4000-sff-ada"]
    # words that pick the card the bare name is anyway add nothing
    assert im.gpus_in("1x H100 80GB SXM5") == [("H100", 1)]
    assert im.gpus_in("RTX 4090 24GB") == [("RTX 4090", None)]


def test_glm_4_5_params_as_llama_bench_counts_them(tmp_path):
    # llama.cpp's GGUF of GLM-4.5 / 4.5-Air keeps the MTP layer (blk.N.nextn.*): llama-bench prints 110.47 B
    # for GLM-4.5-Air (106.85 B without it, 3.4% away) and 358.34 B for GLM-4.5 / 4.6
    head = _LB_HEAD.format(x="fa")
    row = "| glm4moe 106B.A12B Q4_K - Medium |  68.01 GiB |   110.47 B | CUDA       |  99 |         1 |           tg128 |        38.91 ± 0.12 |\n"
    (r,) = im.read(write(tmp_path, "air.md", _CUDA_4090 + head + row))
    assert r["model"] == "glm-4.5-air" and "110.47 B params" in r["inferred"]["model"]
    big = row.replace("glm4moe 106B.A12B", "glm4moe 355B.A32B").replace("110.47 B", "358.34 B").replace(" 68.01 GiB", "201.12 GiB")
    (r,) = im.read(write(tmp_path, "big.md", _CUDA_4090 + head + big))    # one shape: the first stands for both
    assert r["model"] == "glm-4.5" and "fits glm-4.5, glm-4.6" in r["inferred"]["model"]
    (r,) = im.read(write(tmp_path, "GLM-4.6-Q4_K_M_4090.md", _CUDA_4090 + head + big))
    assert r["model"] == "glm-4.6"
    # the other families' counts are their totals, as before
    assert im.model_candidates("qwen3moe 30B.A3B Q4_K - Medium", 30.53e9)[0] == ["qwen3-30b-a3b", "qwen3-coder-30b-a3b"]


def test_a_vision_language_model_s_text_layers_read_as_its_text_model(tmp_path):
    # llama-bench on Qwen3-VL's GGUF (the vision tower is the separate mmproj file): its architecture is
    # qwen3vlmoe / qwen3vl, its layers Qwen3-MoE's / Qwen3's
    head = _LB_HEAD.format(x="fa")
    row = "| qwen3vlmoe 30B.A3B Q4_K - Medium |  17.28 GiB |    30.53 B | CUDA       |  99 |         1 |           tg128 |       180.10 ± 0.50 |\n"
    (r,) = im.read(write(tmp_path, "Qwen3-VL-30B-A3B-Instruct-Q4_K_M.md", _CUDA_4090 + head + row))
    assert r["model"] == "qwen3-30b-a3b" and "vision-language model's text layers, as qwen3moe" in r["inferred"]["model"]
    assert im.model_candidates("qwen3vl 8B Q4_K - Medium", 8.19e9)[0] == ["qwen3-8b"]
    assert im.model_candidates("qwen3vl 8B Q4_K - Medium", 30.53e9)[0] == []      # the count still decides


def test_the_priced_families_read_from_llama_bench_rows(tmp_path):
    # Llama 4, GLM-4-0414, MiniMax-M2, ERNIE-4.5 MoE and Qwen2-MoE as llama-bench names them (llama.cpp's
    # architecture, its size label, for Llama 4 the name it prints after it) and counts their parameters
    head = _LB_HEAD.format(x="fa")
    rows = {"llama4 17Bx16E (Scout) Q4_K - Medium |  60.87 GiB |   107.77 B": ("llama-4-scout", "Q4_K_M"),
            "llama4 17Bx128E (Maverick) Q4_K - Medium | 226.37 GiB | 400.71 B": ("llama-4-maverick", "Q4_K_M"),
            "glm4 32B Q4_K - Medium         |  18.47 GiB |    32.57 B": ("glm-4-32b", "Q4_K_M"),
            "minimax-m2 230B.A10B Q3_K - Medium | 101.68 GiB | 228.69 B": ("minimax-m2", "Q3_K_M"),
            "ernie4_5-moe 21B.A3B Q4_K - Medium |  12.48 GiB |    21.83 B": ("ernie-4.5-21b-a3b", "Q4_K_M"),
            "qwen2moe 57B.A14B Q4_K - Medium |  32.25 GiB |    57.41 B": ("qwen2-57b-a14b", "Q4_K_M")}
    for i, (cols, (model, weights)) in enumerate(rows.items()):
        row = f"| {cols} | CUDA       |  99 |         1 |           tg128 |       40.10 ± 0.50 |\n"
        (r,) = im.read(write(tmp_path, f"r{i}.md", _CUDA_4090 + head + row))
        assert (r["model"], r["weights"]) == (model, weights), cols
    assert im.ftype_of("llama4 17Bx16E (Scout) IQ4_XS - 4.25 bpw") == "IQ4_XS - 4.25 bpw"
    assert im.ftype_of("qwen3moe 30B.A3B Q4_K - Medium") == "Q4_K - Medium"


def test_the_hybrid_families_read_from_llama_bench_rows(tmp_path):
    # Qwen3-Next and Qwen3.5 as llama-bench names them: llama.cpp's architectures qwen3next / qwen35 /
    # qwen35moe with their size labels (src/models/qwen3next.cpp, qwen35.cpp, qwen35moe.cpp load_arch_hparams)
    head = _LB_HEAD.format(x="fa")
    rows = {"qwen3next 80B.A3B Q4_K - Medium |  45.08 GiB |    79.67 B": ("qwen3-next-80b-a3b", "Q4_K_M"),
            "qwen35 9B Q4_K - Medium        |   5.13 GiB |     8.95 B": ("qwen3.5-9b", "Q4_K_M"),
            "qwen35 27B Q8_0                |  26.62 GiB |    26.90 B": ("qwen3.5-27b", "q8_0"),
            "qwen35moe 35B.A3B Q4_K - Medium |  19.64 GiB |    34.66 B": ("qwen3.5-35b-a3b", "Q4_K_M"),
            "qwen35moe 122B.A10B Q4_K - Medium |  68.94 GiB |   122.11 B": ("qwen3.5-122b-a10b", "Q4_K_M"),
            "qwen35moe 397B.A17B Q3_K - Medium | 180.12 GiB |   396.35 B": ("qwen3.5-397b-a17b", "Q3_K_M")}
    for i, (cols, (model, weights)) in enumerate(rows.items()):
        row = f"| {cols} | CUDA       |  99 |         1 |           tg128 |       40.10 ± 0.50 |\n"
        (r,) = im.read(write(tmp_path, f"h{i}.md", _CUDA_4090 + head + row))
        assert (r["model"], r["weights"]) == (model, weights), cols
        assert r["inferred"]["model"].startswith(f"from '{cols.split(' Q')[0]}'"), r["inferred"]["model"]
    # llama.cpp's loader counts every tensor of the file: one that keeps the checkpoint's MTP block (the
    # converter does unless --no-mtp) prints 1.6-2.7% more parameters, still within the tolerance
    with_mtp = {"qwen3next 80B.A3B": (81.32e9, "qwen3-next-80b-a3b"), "qwen35 9B": (9.20e9, "qwen3.5-9b"),
                "qwen35 27B": (27.32e9, "qwen3.5-27b"), "qwen35moe 35B.A3B": (35.51e9, "qwen3.5-35b-a3b"),
                "qwen35moe 122B.A10B": (124.64e9, "qwen3.5-122b-a10b"),
                "qwen35moe 397B.A17B": (402.94e9, "qwen3.5-397b-a17b")}
    for label, (n, model) in with_mtp.items():
        assert im.model_candidates(f"{label} Q4_K - Medium", n)[0] == [model], label
        # without a count (llama-bench's markdown without the params column): the size label decides
        assert im.identify_model("/m/model.gguf", f"{label} Q4_K - Medium")[0] == model, label
    # the HF model_types (the wrappers too) map to llama.cpp's names
    assert [im._arch_of(t) for t in ("qwen3_next", "qwen3_5_text", "qwen3_5", "qwen3_5_moe_text", "qwen3_5_moe")] == \
        ["qwen3next", "qwen35", "qwen35", "qwen35moe", "qwen35moe"]
    assert im.model_candidates("qwen35moe 35B.A3B Q4_K - Medium", 26.90e9)[0] == []   # another size of the family
    assert im.model_candidates("qwen35 35B Q4_K - Medium", 34.66e9)[0] == []          # dense: no 35B built-in


def test_the_cohere_families_read_from_llama_bench_rows(tmp_path):
    # Command-R and Command-A as llama-bench names them: llama.cpp's architectures command-r (HF cohere) and
    # cohere2 with their size labels (src/models/command-r.cpp: 40 layers "35B", Command-R v01 and 08-2024
    # alike; cohere2.cpp: 32 layers "8B"; any other layer count "?B": Command-R+'s 64, Command-A's 64)
    head = _LB_HEAD.format(x="fa")
    rows = {"command-r 35B Q4_K - Medium |  20.04 GiB |    34.98 B": ("command-r", "Q4_K_M"),
            "command-r 35B Q4_K - Medium |  18.16 GiB |    32.30 B": ("command-r-08-2024", "Q4_K_M"),
            "command-r ?B Q4_K - Medium  |  58.44 GiB |   103.81 B": ("command-r-plus", "Q4_K_M"),
            "command-r 104B Q8_0         | 102.74 GiB |   103.81 B": ("command-r-plus", "q8_0"),
            "cohere2 ?B Q4_K - Medium    |  62.50 GiB |   111.06 B": ("command-a", "Q4_K_M"),
            "cohere2 111B Q4_K - Medium  |  62.50 GiB |   111.06 B": ("command-a", "Q4_K_M"),
            "cohere2 8B Q4_K - Medium    |   4.73 GiB |     8.03 B": ("command-r7b", "Q4_K_M")}
    for i, (cols, (model, weights)) in enumerate(rows.items()):
        row = f"| {cols} | CUDA       |  99 |         1 |           tg128 |       40.10 ± 0.50 |\n"
        (r,) = im.read(write(tmp_path, f"c{i}.md", _CUDA_4090 + head + row))
        assert (r["model"], r["weights"]) == (model, weights), cols
        assert r["inferred"]["model"].startswith(f"from '{cols.split(' Q')[0]}'"), r["inferred"]["model"]
    # the HF model_types map to llama.cpp's names
    assert [im._arch_of(t) for t in ("cohere", "cohere2")] == ["command-r", "cohere2"]
    # without a count (llama-bench's markdown without the params column) the size label decides: llama.cpp's
    # for the depth (src/models/command-r.cpp: 40 layers -> 35B), v01's and 08-2024's alike, two shapes: both
    # named (an 08-2024 row is not read as v01), the file name picks; "?B" fits nothing
    assert im.model_candidates("command-r 35B Q4_K - Medium")[0] == ["command-r", "command-r-08-2024"]
    assert im.identify_model("c4ai-command-r-08-2024-Q4_K_M.gguf", "command-r 35B Q4_K - Medium")[0] == \
        "command-r-08-2024"
    assert im.identify_model("/m/model.gguf", "cohere2 8B Q4_K - Medium")[0] == "command-r7b"
    assert im.model_candidates("command-r ?B Q4_K - Medium")[0] == []
    # another architecture's size never resolves to them
    assert im.model_candidates("cohere2 35B Q4_K - Medium", 34.98e9)[0] == []
    assert im.model_candidates("command-r 8B Q4_K - Medium", 8.03e9)[0] == []


def test_a_serving_block_s_client_and_the_server_it_measured(tmp_path):
    # vLLM's client on an SGLang server: the tool is vLLM's, the server (serve_backend) SGLang's
    text = ("python -m sglang.launch_server --model-path Qwen/Qwen3-32B --tp 2\n"
            "vllm bench serve --backend sglang --port 30000 --model Qwen/Qwen3-32B --max-concurrency 32\n" + _SERVE)
    (r,) = im.read(write(tmp_path, "s.log", text))
    assert (r["tool"], r["serve_backend"]) == ("vllm benchmark_serving (console)", "sglang")
    # SGLang's client on a vLLM server, and on its own
    (r,) = im.read(write(tmp_path, "v.log", "python -m sglang.bench_serving --backend vllm --model Qwen/Qwen3-32B "
                                            "--max-concurrency 32\n" + _SERVE))
    assert (r["tool"], r["serve_backend"]) == ("sglang bench_serving (console)", "vllm")
    (r,) = im.read(write(tmp_path, "g.log", "python -m sglang.bench_serving --backend sglang --model Qwen/Qwen3-32B\n" + _SERVE))
    assert (r["tool"], r["serve_backend"]) == ("sglang bench_serving (console)", "sglang")


def test_llama_bench_progress_lines_between_the_rows(tmp_path):
    # `llama-bench --progress` writes to stderr between the rows: a terminal's copy interleaves them
    head = _LB_HEAD.format(x="fa")
    prog = "".join(f"llama-bench: benchmark {{i}}/2: {w}\n" for w in ("starting", "warmup prompt run", "prompt run 1/5",
                                                                       "prompt run 2/5", "depth run 1/5"))
    text = ("$ llama-bench -m Meta-Llama-3.1-8B-Instruct-Q4_K_M.gguf -fa 1 -d 0,4096 --progress\n" + _CUDA_4090 + head
            + prog.format(i=1) + _lb_row("CUDA", "1", "pp512", "8120.00 ± 10.00")
            + prog.format(i=2) + _lb_row("CUDA", "1", "pp512 @ d4096", "6010.00 ± 9.00") + "\nbuild: 6e7fc8a1 (6410)\n")
    a, b = im.read(write(tmp_path, "progress.log", text), model="llama-3.1-8b")
    assert [(r["n_depth"], r["avg_ts"], r["source"].rsplit(":", 1)[1], r["build_number"]) for r in (a, b)] == [
        (0, 8120.0, "11", 6410), (4096, 6010.0, "17", 6410)]


def test_llama_bench_s_structured_outputs_with_its_progress_and_load_lines(tmp_path):
    """`llama-bench --progress -o json|jsonl|csv|sql 2>&1`: stderr's progress lines (and the backends' load lines
    before them) between the records of a terminal's copy are left out, each record still at its own line."""
    o = dict(LB_KEYS, n_prompt=512, n_gen=0, n_depth=0, avg_ts=2100.5, stddev_ts=10.2)
    objs = [o, dict(o, n_prompt=0, n_gen=128, avg_ts=95.25, stddev_ts=0.3)]
    prog = lambda i: "".join(f"llama-bench: benchmark {i}/2: {w}\n" for w in ("starting", "warmup prompt run",
                                                                             "prompt run 1/5", "prompt run 2/5"))
    load = ("load_backend: loaded CUDA backend from /opt/llama.cpp/build/bin/libggml-cuda.so\n"
            "ggml_cuda_init: found 1 CUDA devices:\n"
            "  Device 0: NVIDIA GeForce RTX 3090, compute capability 8.6, VMM: yes\n")
    jsonl = load + prog(1) + json.dumps(objs[0]) + "\n" + prog(2) + json.dumps(objs[1]) + "\n"
    pretty = ("[\n" + prog(1) + "  " + json.dumps(objs[0]) + ",\n" + prog(2) + "  " + json.dumps(objs[1]) + "\n]\n")
    keys = list(objs[0])
    csv_text = (",".join(keys) + "\n" + prog(1) + ",".join(f'"{objs[0][k]}"' for k in keys) + "\n" + prog(2)
                + ",".join(f'"{objs[1][k]}"' for k in keys) + "\n")
    sql = ("CREATE TABLE IF NOT EXISTS llama_bench (\n" + ",\n".join(f"  {k} TEXT" for k in keys) + "\n);\n\n"
           + prog(1) + f"INSERT INTO llama_bench ({', '.join(keys)}) VALUES ({', '.join(repr(str(objs[0][k])) for k in keys)});\n"
           + prog(2) + f"INSERT INTO llama_bench ({', '.join(keys)}) VALUES ({', '.join(repr(str(objs[1][k])) for k in keys)});\n")
    n_sql = len(keys) + 4
    for name, text, lines in (("p.jsonl", jsonl, ["8", "13"]), ("p.json", pretty, ["6", "11"]),
                              ("p.csv", csv_text, ["6", "11"]), ("p.sql", sql, [str(n_sql + 4), str(n_sql + 9)]),
                              ("l.json", load + pretty, ["9", "14"])):
        recs = im.read(write(tmp_path, name, text))
        assert [(r["test"], r["avg_ts"], r["source"].rsplit(":", 1)[1]) for r in recs] == [
            ("pp", 2100.5, lines[0]), ("tg", 95.25, lines[1])], name
        assert recs[0]["hardware"] == "rtx-3090"


def test_every_column_of_the_current_llama_bench_md_and_its_json(tmp_path):
    """The current llama-bench (llama.cpp as vendored by llama-cpp-python 0.3.36, tools/llama-bench/llama-bench.cpp
    markdown_printer) prints a column for every option set off its default: n_cpu_moe, cpu_mask, cpu_strict, poll,
    main_gpu, nkvo, dev, ts, ot, lm, lazy_mode, embd, nopo, noh, rpk, fitt, fitc, the tests pp / tg / pp+tg at a
    depth; each reads into the field its -o json names, the same record either way (repack, lazy_mode kept)."""
    cols = ("| model                          |       size |     params | backend    | ngl |  n_cpu_moe | threads | cpu_mask   "
            "| cpu_strict |       poll |   main_gpu |     sm |          nkvo |  fa | dev          | ts           | ot          "
            "          |         lm | lazy_mode  |       embd | nopo |  noh | rpk |       fitt |        fitc |            test "
            "|                  t/s |\n"
            "| ------------------------------ | ---------: | ---------: | ---------- | --: | ---------: | ------: | ---------- "
            "| ---------: | ---------: | ---------: | -----: | ------------: | --: | ------------ | ------------ | ------------"
            "--------- | ---------: | ---------- | ---------: | ---: | ---: | --: | ---------: | ----------: | --------------: "
            "| -------------------: |\n")
    row = ("| qwen3moe 30B.A3B Q4_K - Medium |  17.28 GiB |    30.53 B | CUDA       |  99 |         10 |      16 | 0x0        "
           "|          0 |         50 |          0 |  layer |             0 |   1 | auto         | 0.00         | none        "
           "          |       mmap | none       |          0 |    0 |    0 |   1 |       1024 |        4096 | {test:>15} "
           "| {ts:>20} |\n")
    tests = (("pp512", "2100.50 ± 10.20"), ("tg128 @ d4096", "80.50 ± 0.20"), ("pp512+tg128", "400.00 ± 1.00"))
    md = (_CUDA_4090 + cols + "".join(row.format(test=t, ts=v) for t, v in tests) + "\nbuild: 6e7fc8a1 (7310)\n")
    recs = im.read(write(tmp_path, "all.md", md))
    assert [(r["test"], r["n_prompt"], r["n_gen"], r["n_depth"], r["avg_ts"]) for r in recs] == [
        ("pp", 512, 0, 0, 2100.5), ("tg", 0, 128, 4096, 80.5), ("pg", 512, 128, 0, 400.0)]
    keep = ("model", "weights", "n_cpu_moe", "n_threads", "cpu_mask", "cpu_strict", "poll", "main_gpu", "split_mode",
            "no_kv_offload", "flash_attn", "devices", "tensor_split", "tensor_buft_overrides", "load_mode", "lazy_mode",
            "embeddings", "no_op_offload", "no_host", "repack", "fit_target", "fit_min_ctx", "build_number", "hardware")
    assert {k: recs[0].get(k) for k in keep} == dict(
        model="qwen3-30b-a3b", weights="Q4_K_M", n_cpu_moe=10, n_threads=16, cpu_mask="0x0", cpu_strict=False, poll=50,
        main_gpu=0, split_mode="layer", no_kv_offload=False, flash_attn=1, devices="auto", tensor_split="0.00",
        tensor_buft_overrides="none", load_mode="mmap", lazy_mode="none", embeddings=False, no_op_offload=0,
        no_host=False, repack=True, fit_target=1024, fit_min_ctx=4096, build_number=7310, hardware="rtx-4090")
    # the same run's -o jsonl (json_printer's field list of that source; flash_attn an int, the bools true / false)
    o = dict(LB_KEYS, gpu_info="NVIDIA GeForce RTX 4090", model_type="qwen3moe 30B.A3B Q4_K - Medium",
             model_filename="/m/Qwen3-30B-A3B-Q4_K_M.gguf", model_size=18556682240, model_n_params=30532122624,
             n_threads=16, cpu_mask="0x0", cpu_strict=False, poll=50, n_cpu_moe=10, main_gpu=0, no_kv_offload=False,
             tensor_split="0.00", tensor_buft_overrides="none", load_mode="mmap", lazy_mode="none", embeddings=False,
             no_op_offload=0, no_host=False, repack=True, fit_target=1024, fit_min_ctx=4096, build_number=7310,
             n_prompt=512, n_gen=0, n_depth=0, avg_ts=2100.5, stddev_ts=10.2)
    (j,) = im.read(write(tmp_path, "all.jsonl", json.dumps(o) + "\n"))
    assert {k: j.get(k) for k in keep} == {k: recs[0].get(k) for k in keep}


def test_gpu_counts_in_parentheses_a_card_named_twice_and_grace_hopper():
    assert im.gpus_in("RTX 3090 (x2)") == [("RTX 3090", 2)]
    assert im.gpus_in("DGX H100 (8x H100 SXM)") == [("H100", 8)]          # one card, with the count said of it
    assert im.gpus_in("1x NVIDIA GH200 480GB") == [("GH200", 1)]
    assert im.gpus_in("RTX 4090 (24 GB, PCIe 4.0 x16)") == [("RTX 4090", None)]
    assert im.gpus_in("RTX 3090 and RTX 3090 Ti") == [("RTX 3090", None), ("RTX 3090 Ti", None)]


def test_a_json_result_pasted_with_prose_around_it(tmp_path):
    # a ```json fence in a comment, or the command line above a -o jsonl run: the JSON is read, at its own lines
    o = dict(LB_KEYS, n_prompt=512, n_gen=0, n_depth=4096, avg_ts=9120.3, stddev_ts=20.1)
    text = ("Output of `llama-bench -m Qwen3-32B-Q4_K_M.gguf -fa 1 -d 4096 -o json`:\n\n```json\n"
            + json.dumps([o, dict(o, n_prompt=0, n_gen=128, avg_ts=40.2)], indent=2) + "\n```\n\nThanks!\n")
    a, b = im.read(write(tmp_path, "fence.md", text))
    assert [(r["test"], r["n_depth"], r["avg_ts"], r["source"].rsplit(":", 1)[1], r["model"]) for r in (a, b)] == [
        ("pp", 4096, 9120.3, "5", "qwen3-32b"), ("tg", 4096, 40.2, "28", "qwen3-32b")]
    (r,) = im.read(write(tmp_path, "cmd.log", "$ ./llama-bench -m Qwen3-32B-Q4_K_M.gguf -o jsonl\n" + json.dumps(o) + "\n"))
    assert (r["avg_ts"], r["source"].rsplit(":", 1)[1]) == (9120.3, "2")
    # vllm bench serve --save-result JSON in a fence
    js = {"backend": "vllm", "model_id": "Qwen/Qwen2.5-14B-Instruct", "num_prompts": 10, "completed": 10, "max_concurrency": 4,
          "total_input_tokens": 5120, "total_output_tokens": 1280, "output_throughput": 300.0, "mean_tpot_ms": 12.0}
    (r,) = im.read(write(tmp_path, "v.md", "Result:\n```\n" + json.dumps(js) + "\n```\n"))
    assert (r["model"], r["n_streams"], r["tpot_s"]) == ("qwen2.5-14b", 4, 0.012)
    # prose with no result in it stays one clear error
    with pytest.raises(im.FormatError, match=r"not a results format glmbench reads"):
        im.read(write(tmp_path, "prose.md", "Some numbers:\n{not json}\n"))


def test_llama_bench_csv_and_sql_pasted_under_their_command_line(tmp_path):
    o = dict(LB_KEYS, n_prompt=512, n_gen=0, n_depth=0, avg_ts=9120.3, stddev_ts=20.1)
    head = ",".join(o)
    row = ",".join(f'"{v}"' for v in o.values())
    (r,) = im.read(write(tmp_path, "c.log", "$ llama-bench -m Qwen3-32B-Q4_K_M.gguf -o csv\n```\n" + head + "\n" + row + "\n```\n"))
    assert (r["avg_ts"], r["model"], r["source"].rsplit(":", 1)[1]) == (9120.3, "qwen3-32b", "4")
    sql = ("CREATE TABLE IF NOT EXISTS llama_bench (\n" + ",\n".join(f"  {k} TEXT" for k in o) + "\n);\n"
           "INSERT INTO llama_bench (" + ", ".join(o) + ") VALUES (" + ", ".join(f"'{v}'" for v in o.values()) + ");\n")
    (r,) = im.read(write(tmp_path, "s.log", "$ llama-bench -m Qwen3-32B-Q4_K_M.gguf -o sql\n" + sql))
    assert (r["avg_ts"], r["source"].rsplit(":", 1)[1]) == (9120.3, str(2 + len(o) + 2))


SCOREBOARD_CSV = (
    "gpu,gpu_device_name,n_gpus,model,quant,backend,fa,test,depth,t_s,stddev,build,date,url,via,notes\n"
    'RTX 4090,NVIDIA GeForce RTX 4090,1,"llama 7B Q4_0 (llama-2-7b.Q4_0.gguf, 3.56 GiB, 6.74 B)",Q4_0,CUDA,1,'
    "pp512,0,12000.5,50.1,8cf6b42,,https://example.org/scoreboard,copied by hand,\n"
    'RTX 4090,NVIDIA GeForce RTX 4090,1,"llama 7B Q4_0 (llama-2-7b.Q4_0.gguf, 3.56 GiB, 6.74 B)",Q4_0,Vulkan,0,'
    "tg128,0,140.2,,,,https://example.org/vk,copied by hand,\n"
    'Tesla P40,Tesla P40,1,"llama 7B Q4_0 (llama-2-7b.Q4_0.gguf, 3.56 GiB, 6.74 B)",Q4_0,CUDA,0,tg128,0,54.7,,,,'
    "https://example.org/scoreboard,copied by hand,\n"
    'RTX 3090,NVIDIA GeForce RTX 3090,1,"llama 7B F16 (codellama-7b ggml-model-f16.gguf, 12.55 GiB, 6.74 B)",F16,CUDA,'
    'n/a (pre-FA build),pp512,0,4000.0,10.0,32d9f7d9 (1786),2024-01-07,https://example.org/pr,primary,a PR comment\n')


def test_a_scoreboard_copy_imports_row_by_row(tmp_path):
    """llama.cpp's performance scoreboard as people copy it into a CSV: one llama-bench record per
    row, the card as published and resolved to the catalog (None outside it: a Tesla P40), the
    model from the row's model text, Vulkan rows on llama.cpp-vulkan, a pre-flash-attention build's
    prompt path as the 2024 cuBLAS era, the file a row names noted where it is another model's file."""
    p = tmp_path / "board.csv"
    p.write_text(SCOREBOARD_CSV)
    recs = im.read(str(p))
    assert im.detect(SCOREBOARD_CSV) == "scoreboard-csv" and len(recs) == 4
    a, v, p40, old = recs
    assert (a["hardware"], a["model"], a["weights"], a["test"], a["n_prompt"], a["avg_ts"], a["flash_attn"]) == \
        ("rtx-4090", "llama-2-7b", "q4_0", "pp", 512, 12000.5, True)
    assert a["runtime"] == "llama.cpp" and a["source"] == "https://example.org/scoreboard" and a["line"].endswith(":2")
    assert v["runtime"] == "llama.cpp-vulkan" and v["n_gen"] == 128 and v["flash_attn"] is False
    assert p40.get("hardware") is None and p40["device"] == "Tesla P40"
    assert old["runtime_options"]["era"] == "2024-cublas" and old["build_number"] == 1786 and old["weights"] == "f16"
    assert "codellama-7b" in old["notes"] and "predicted as llama-2-7b" in old["notes"]
    bad = tmp_path / "bad.csv"
    bad.write_text(SCOREBOARD_CSV.replace("pp512,0,12000.5", "pp-x,0,12000.5"))
    with pytest.raises(im.FormatError, match=r"bad\.csv:2: test 'pp-x' is not pp<n> or tg<n>"):
        im.read(str(bad))
    bad.write_text(SCOREBOARD_CSV.replace("12000.5", "fast"))
    with pytest.raises(im.FormatError, match=r"bad\.csv:2: field `t_s` must be a number"):
        im.read(str(bad))


def test_a_laptop_gpu_named_in_free_text_is_the_laptop_part():
    """A sidecar or paste that names a laptop GPU ("1x NVIDIA GeForce RTX 5090 Laptop GPU", "RTX 4060
    Mobile") names the laptop part, not the desktop card of the same number (another chip, bus and
    clocks); "a laptop" elsewhere in the text does not make a desktop card one."""
    from glmbench.predict import hardware as hw
    for text, key, n in (("1x NVIDIA GeForce RTX 5090 Laptop GPU", "rtx-5090-laptop", 1),
                         ("RTX 4060 Mobile", "rtx-4060-laptop", None),
                         ("NVIDIA GeForce RTX 3080 Laptop GPU with Max-Q design", "rtx-3080-laptop", None),
                         ("RTX 5070 Ti Laptop GPU", "rtx-5070-ti-laptop", None),
                         ("RTX 4090 and a laptop", "rtx-4090", None),
                         ("RTX 3050 6GB", "rtx-3050-6gb", None)):
        (g, count), = im.gpus_in(text)
        assert hw.resolve_gpu_name(g) == key and count == n, text


def test_table_without_outer_pipes_and_the_sm_column(tmp_path):
    """A llama-bench table pasted without its outer pipes (some editors and forums drop them) reads
    as the piped one, line for line; a row's sm column replaces the block's default split, and
    `inferred` says which."""
    piped = (_CUDA_4090 + _LB_HEAD.format(x="fa")
             + "| gemma3 27B Q4_K - Medium       |  15.40 GiB |    27.01 B | CUDA       |  99 |  1 |           pp512 |      2650.12 ± 10.10 |\n"
             + "| gemma3 27B Q4_K - Medium       |  15.40 GiB |    27.01 B | CUDA       |  99 |  1 |           tg128 |         41.20 ± 0.10 |\n")
    bare = "\n".join(ln.strip().strip("|") if ln.lstrip().startswith("|") else ln for ln in piped.splitlines()) + "\n"
    assert "\n| " not in bare
    a, b = im.read(write(tmp_path, "piped.md", piped)), im.read(write(tmp_path, "bare.md", bare))
    strip = lambda rs: [{k: v for k, v in r.items() if k != "source"} for r in rs]    # noqa: E731
    assert len(a) == 2 and strip(a) == strip(b)
    assert [r["source"].rsplit(":", 1)[1] for r in a] == [r["source"].rsplit(":", 1)[1] for r in b]
    # a line with pipes that is no table stays as it is
    assert im._outer_pipes(["a | b", "c"]) == ["a | b", "c"]
    two = ("  Device 0: NVIDIA GeForce RTX 3090, compute capability 8.6, VMM: yes\n"
           "  Device 1: NVIDIA GeForce RTX 3090, compute capability 8.6, VMM: yes\n"
           "| model | size | params | backend | ngl | sm | test | t/s |\n|---|---|---|---|---|---|---|---|\n"
           "| llama 70B Q4_K - Medium | 39.59 GiB | 70.55 B | CUDA | 99 | row | tg128 | 19.10 ± 0.02 |\n"
           "| llama 70B Q4_K - Medium | 39.59 GiB | 70.55 B | CUDA | 99 | layer | tg128 | 17.90 ± 0.02 |\n")
    row, layer = im.read(write(tmp_path, "two.md", two))
    assert row["split"] == "tensor" and row["inferred"]["split"] == "tensor (the sm column 'row')"
    assert layer["split"] == "layer" and "default" not in layer["inferred"]["split"]


_SGL_ONE = """$ python -m sglang.bench_one_batch --model-path Qwen/Qwen3-8B --batch-size 1 16 --input-len 1024 --output-len 64 --tp 2
max_total_num_tokens=400000
Warmup ...
Prefill. latency: 0.05012 s, throughput:  20430.97 token/s
Decode 0. Batch size: 1, latency: 0.00721 s, throughput:    138.70 token/s
Decode.  median latency: 0.00719 s, median throughput:    139.08 token/s
Total. latency:  0.273 s, throughput:   3868.13 token/s
Benchmark ...
Prefill. latency: 0.04921 s, throughput:  20808.78 token/s
Decode 0. Batch size: 1, latency: 0.00722 s, throughput:    138.50 token/s
Decode 1. Batch size: 1, latency: 0.00720 s, throughput:    138.89 token/s
Decode.  median latency: 0.00718 s, median throughput:    139.28 token/s
Total. latency:  0.502 s, throughput:   2167.33 token/s
Prefill. latency: 0.61234 s, throughput:  26757.03 token/s
Decode 0. Batch size: 16, latency: 0.00931 s, throughput:   1718.58 token/s
Decode.  median latency: 0.00925 s, median throughput:   1729.73 token/s
Total. latency:  1.198 s, throughput:  14530.22 token/s
"""


def test_sglang_bench_one_batch_console_and_jsonl(tmp_path):
    """SGLang's bench_one_batch: each run of B prompts of input_len is a pp record (B x input_len tokens / the
    prefill latency) and a tg record at depth input_len (B / the median decode step), as llama-batched-bench's;
    input_len and output_len from its printed throughputs, B from its `Decode i. Batch size:` lines; the warm-up
    run left out; the engine is SGLang's (server sglang), the card count its --tp."""
    assert im.detect(_SGL_ONE) == "sglang-one-batch"
    recs = im.read(write(tmp_path, "ob.log", _SGL_ONE))
    got = [(r["test"], r["n_prompt"], r["n_gen"], r["n_depth"], r["n_streams"], round(r["avg_ts"], 2),
            r["source"].rsplit(":", 1)[1]) for r in recs]
    assert got == [("pp", 1024, 0, 0, 1, round(1024 / 0.04921, 2), "9"), ("tg", 0, 64, 1024, 1, round(1 / 0.00718, 2), "9"),
                   ("pp", 1024, 0, 0, 16, round(16 * 1024 / 0.61234, 2), "14"),
                   ("tg", 0, 64, 1024, 16, round(16 / 0.00925, 2), "14")]
    assert {(r["model"], r["server"], r["tool"], r["n_cards"], r["split"]) for r in recs} == {
        ("qwen3-8b", "sglang", "sglang bench_one_batch", 2, "tensor")}
    rows = [{"run_name": "r", "batch_size": 8, "input_len": 512, "output_len": 32, "prefill_latency": 0.1,
             "prefill_throughput": 40960.0, "median_decode_latency": 0.01, "median_decode_throughput": 800.0,
             "total_latency": 0.41, "overall_throughput": 10614.6},
            {"run_name": "r", "batch_size": 1, "input_len": 512, "output_len": 1, "prefill_latency": 0.02}]
    f = write(tmp_path, "ob.jsonl", "".join(json.dumps(o) + "\n" for o in rows))
    assert im.detect(open(f).read()) == "sglang-one-batch-jsonl"
    recs = im.read(f, model="qwen3-8b")
    assert [(r["test"], r["n_streams"], r["avg_ts"]) for r in recs] == [("pp", 8, 40960.0), ("tg", 8, 800.0),
                                                                         ("pp", 1, 25600.0)]
    # a run without its batch line cannot say its batch
    bad = "Benchmark ...\nPrefill. latency: 0.05 s, throughput: 20480.00 token/s\nTotal. latency: 0.5 s, throughput: 2000.00 token/s\n"
    with pytest.raises(im.FormatError, match=r"nob\.log:2: a bench_one_batch run without its `Decode 0\. Batch size"):
        im.read(write(tmp_path, "nob.log", bad), model="qwen3-8b")


# SGLang's offline throughput benchmark as it prints its result (sglang 0.5.23 sglang/benchmark/offline_throughput.py,
# throughput_test: a "{s:{c}^{n}}" rule of 50, `{:<40} {:<10}` lines with trailing padding; numbers invented)
_SGL_OFFLINE = """$ python -m sglang.bench_offline_throughput --model-path Qwen/Qwen3-8B --tp 2 --dataset-name random \\
    --random-input-len 1024 --random-output-len 256 --random-range-ratio 1 --num-prompts 500 --max-running-requests 128
[2025-09-02 10:11:12] server_args=ServerArgs(model_path='Qwen/Qwen3-8B', tp_size=2, max_running_requests=128)
#Input tokens: 512000
#Output tokens: 128000

Warmup...

Benchmark...

====== Offline Throughput Benchmark Result =======
Backend:                                 engine    
Successful requests:                     500       
Benchmark duration (s):                  64.00     
Total input tokens:                      512000    
Total generated tokens:                  128000    
Last generation throughput (tok/s):      2310.44   
Request throughput (req/s):              7.81      
Input token throughput (tok/s):          8000.00   
Output token throughput (tok/s):         2000.00   
Total token throughput (tok/s):          10000.00  
==================================================
"""


def test_sglang_offline_throughput_block_and_jsonl(tmp_path):
    """SGLang's offline throughput benchmark (every request handed to the in-process engine at once, as vLLM's
    `bench throughput`): one `serve` record, serve_kind throughput, its requests, the mean lengths from the token
    totals it prints, the output tokens per second; the model, --tp and --max-running-requests from its command
    line (a continued one); its --result-filename JSONL the same without a command line."""
    assert im.detect(_SGL_OFFLINE) == "sglang-offline"
    notices = []
    (r,) = im.read(write(tmp_path, "off.log", _SGL_OFFLINE), notices=notices)
    assert (r["test"], r["serve_kind"], r["server"], r["tool"], r["serve_backend"]) == (
        "serve", "throughput", "sglang", "sglang bench_offline_throughput (console)", "engine")
    assert (r["model"], r["n_cards"], r["split"], r["max_num_seqs"]) == ("qwen3-8b", 2, "tensor", 128)
    assert (r["n_prompt"], r["n_gen"], r["n_depth"], r["completed"], r["n_streams"]) == (1024, 256, 1024, 500, 500)
    assert (r["request_throughput"], r["duration_s"], r["aggregate_tok_s"], r["avg_ts"], r["last_gen_tok_s"]) == (
        7.81, 64.0, 2000.0, 2000.0, 2310.44)
    assert r["source"].endswith("off.log:11") and "input token total / 500" in r["inferred"]["n_prompt"]
    assert any("SGLang serves the checkpoint's own dtype" in x for x in notices)
    # sglang 0.5.23's module path; an AWQ checkpoint's name gives the weights
    new = _SGL_OFFLINE.replace("sglang.bench_offline_throughput --model-path Qwen/Qwen3-8B",
                               "sglang.benchmark.offline_throughput --model-path Qwen/Qwen3-8B-AWQ")
    (r,) = im.read(write(tmp_path, "new.log", new))
    assert (r["model"], r["weights"], r["n_cards"]) == ("qwen3-8b", "awq", 2)
    # without its command line: the block alone, the model from the file name (or --model)
    block = _SGL_OFFLINE[_SGL_OFFLINE.index("======"):]
    (r,) = im.read(write(tmp_path, "qwen3-8b_h100.log", block))
    assert (r["model"], r["hardware"], r["n_prompt"], r["completed"]) == ("qwen3-8b", "h100-sxm", 1024, 500)
    # only the request throughput (an older print without the duration): the duration is requests / it
    (r,) = im.read(write(tmp_path, "nodur.log", block.replace("Benchmark duration (s):                  64.00     \n", "")),
                   model="qwen3-8b")
    assert r["duration_s"] == pytest.approx(500 / 7.81)
    with pytest.raises(im.FormatError, match=r"noreq\.log:1: field `Successful requests` is missing"):
        im.read(write(tmp_path, "noreq.log", block.replace("Successful requests:", "Requests:")), model="qwen3-8b")
    # --result-filename: one JSON object per run
    o = {"backend": "engine", "successful_requests": 200, "total_latency": 20.0, "total_input_tokens": 102400,
         "total_output_tokens": 25600, "request_throughput": 10.0, "input_throughput": 5120.0,
         "output_throughput": 1280.0, "total_throughput": 6400.0, "last_gen_throughput": 1500.5}
    f = write(tmp_path, "off.jsonl", json.dumps(o) + "\n" + json.dumps(dict(o, successful_requests=100)) + "\n")
    assert im.detect(open(f).read()) == "sglang-offline-jsonl"
    a, b = im.read(f, model="qwen3-8b")
    assert (a["serve_kind"], a["server"], a["n_prompt"], a["n_gen"], a["completed"], a["aggregate_tok_s"],
            a["duration_s"], a["source"].rsplit(":", 1)[1]) == ("throughput", "sglang", 512, 128, 200, 1280.0, 20.0, "1")
    assert (b["n_prompt"], b["n_gen"], b["source"].rsplit(":", 1)[1]) == (1024, 256, "2")


def test_sglang_0_5_23_module_paths_and_sglang_serve(tmp_path):
    """sglang 0.5.23 moved its benchmarks under sglang.benchmark (`python -m sglang.benchmark.serving`,
    `.one_batch`; sglang/bench_serving.py is a deprecated shim, bench_one_batch.py is gone) and recommends
    `sglang serve` over `python -m sglang.launch_server`: each is the command line it is (the client's model,
    the server measured and its --tp)."""
    block = ("\n============ Serving Benchmark Result ============\n"
             "Backend:                                 sglang    \nTraffic request rate:                    inf       \n"
             "Max request concurrency:                 32        \nSuccessful requests:                     320       \n"
             "Benchmark duration (s):                  60.00     \nTotal input tokens:                      327680    \n"
             "Total input text tokens:                 327680    \nTotal generated tokens:                  81920     \n"
             "Total generated tokens (retokenized):    81900     \nRequest throughput (req/s):              5.33      \n"
             "Input token throughput (tok/s):          5461.33   \nOutput token throughput (tok/s):         1365.33   \n"
             "Peak output token throughput (tok/s):    1500.00   \nPeak concurrent requests:                32        \n"
             "Total token throughput (tok/s):          6826.67   \nConcurrency:                             31.50     \n"
             "---------------Time to First Token----------------\nMean TTFT (ms):                          300.00    \n"
             "-----Time per Output Token (excl. 1st token)------\nMean TPOT (ms):                          22.00     \n"
             "==================================================\n")
    text = ("$ sglang serve --model-path Qwen/Qwen3-32B --tp 2 --max-running-requests 64\n"
            "$ python -m sglang.benchmark.serving --backend sglang --model Qwen/Qwen3-32B --max-concurrency 32 "
            "--num-prompts 320\n" + block)
    (r,) = im.read(write(tmp_path, "h100.log", text))
    assert (r["tool"], r["server"], r["model"], r["n_cards"], r["n_streams"], r["max_num_seqs"], r["tpot_s"]) == (
        "sglang bench_serving (console)", "sglang", "qwen3-32b", 2, 32, 64, 0.022)
    recs = im.read(write(tmp_path, "ob.log", _SGL_ONE.replace("sglang.bench_one_batch", "sglang.benchmark.one_batch")))
    assert {(r["model"], r["n_cards"]) for r in recs} == {("qwen3-8b", 2)}


def test_vllm_s_ramp_up_runs_have_no_one_request_rate(tmp_path):
    """vLLM's `bench serve --ramp-up-strategy linear|exponential --ramp-up-start-rps A --ramp-up-end-rps B` raises
    the request rate over the run (vllm/benchmarks/serve.py: `Traffic ramp-up strategy: linear.` and `Will increase
    RPS from A to B RPS ...` instead of `Traffic request rate:`; its --save-result JSON says `request_rate: "inf"` and
    `ramp_up_strategy`): its request_rate is "ramp-up", never inf (every request at once)."""
    pre = ("$ vllm bench serve --model Qwen/Qwen3-8B --num-prompts 200 --ramp-up-strategy linear --ramp-up-start-rps 1 "
           "--ramp-up-end-rps 20\nTraffic ramp-up strategy: linear.\nWill increase RPS from 1 to 20 RPS over the duration "
           "of the benchmark.\nBurstiness factor: 1.0 (Poisson process)\nMaximum request concurrency: None\n")
    (r,) = im.read(write(tmp_path, "ramp.log", pre + _SERVE), model="qwen3-8b")
    assert (r["request_rate"], r["ramp_up_strategy"], r["ramp_up_start_rps"], r["ramp_up_end_rps"]) == (
        "ramp-up", "linear", 1.0, 20.0)
    # the command line alone says so too
    (r,) = im.read(write(tmp_path, "cmd.log", pre.splitlines()[0] + "\n" + _SERVE), model="qwen3-8b")
    assert (r["request_rate"], r["ramp_up_strategy"]) == ("ramp-up", "linear")
    js = {"backend": "vllm", "model_id": "Qwen/Qwen3-8B", "num_prompts": 10, "completed": 10, "request_rate": "inf",
          "ramp_up_strategy": "exponential", "ramp_up_start_rps": 1, "ramp_up_end_rps": 16, "total_input_tokens": 5120,
          "total_output_tokens": 1280, "output_throughput": 300.0, "mean_tpot_ms": 12.0}
    (r,) = im.read(write(tmp_path, "ramp.json", json.dumps(js)))
    assert (r["request_rate"], r["ramp_up_strategy"], r["ramp_up_end_rps"]) == ("ramp-up", "exponential", 16)
    (r,) = im.read(write(tmp_path, "plain.json", json.dumps({k: v for k, v in js.items() if "ramp" not in k})))
    assert r["request_rate"] == "inf" and "ramp_up_strategy" not in r


def test_sglang_s_logged_server_args_stand_for_its_command_line(tmp_path):
    """SGLang's engine logs its arguments as it starts (`server_args=ServerArgs(...)`; 0.5.23: `server_args={...}`,
    its resolved values): a paste of the offline benchmark's or the server's log without the command line takes the
    model, --tp and the engine's limits from it."""
    block = _SGL_OFFLINE[_SGL_OFFLINE.index("======"):]
    new = ("[2026-11-02 10:00:01] server_args={'model_path': 'Qwen/Qwen3-8B', 'tokenizer_path': 'Qwen/Qwen3-8B', "
           "'tp_size': 2, 'dp_size': 1, 'max_running_requests': 4096, 'chunked_prefill_size': 8192, "
           "'mem_fraction_static': 0.85, 'enable_dp_attention': False, 'quantization': None}\n")
    (r,) = im.read(write(tmp_path, "off.log", new + "\nBenchmark...\n" + block))
    assert (r["model"], r["n_cards"], r["max_num_seqs"], r["max_num_batched_tokens"], r["completed"]) == (
        "qwen3-8b", 2, 4096, 8192, 500)
    old = ("[2025-03-01 10:00:01] server_args=ServerArgs(model_path='Qwen/Qwen3-8B', tokenizer_path='Qwen/Qwen3-8B', "
           "tp_size=2, max_running_requests=None, chunked_prefill_size=8192, device='cuda', enable_mixed_chunk=False)\n")
    assert im.server_args_command(old) == ("python -m sglang.launch_server --model-path Qwen/Qwen3-8B --tp 2 "
                                           "--chunked-prefill-size 8192")
    # the command line's own options win over the logged ones
    (r,) = im.read(write(tmp_path, "both.log", _SGL_OFFLINE.replace("[2025-09-02 10:11:12] server_args=ServerArgs("
                                                                    "model_path='Qwen/Qwen3-8B', tp_size=2, "
                                                                    "max_running_requests=128)\n", new)))
    assert (r["max_num_seqs"], r["max_num_batched_tokens"]) == (128, 8192)
    # a bench_serving paste with the server's log: the server measured and its limits
    serve = (old + "$ python -m sglang.bench_serving --backend sglang --model Qwen/Qwen3-8B --max-concurrency 32\n"
             + _SERVE)
    (r,) = im.read(write(tmp_path, "srv.log", serve))
    assert (r["server"], r["n_cards"], r["max_num_batched_tokens"], r.get("max_num_seqs")) == ("sglang", 2, 8192, None)
    assert im.server_args_command("server_args=ServerArgs(tp_size=2)") is None
    # a repr with a value that is no literal (an enum) still gives the fields around it
    assert im.server_args_command("server_args=ServerArgs(model_path='Qwen/Qwen3-8B', load_format=<LoadFormat.AUTO: "
                                  "'auto'>, tp_size=4, max_running_requests=None)") == (
        "python -m sglang.launch_server --model-path Qwen/Qwen3-8B --tp 4")


def test_sglang_console_block_without_a_concurrency_limit(tmp_path):
    """SGLang's bench_serving prints `Max request concurrency: not set` without --max-concurrency (sglang
    bench_serving.py) and `Traffic request rate: trace` for a trace's timestamps: an open loop, read as one."""
    block = ("$ python -m sglang.bench_serving --backend sglang --dataset-name random --num-prompts 100 --request-rate 8\n\n"
             "============ Serving Benchmark Result ============\n"
             "Backend:                                 sglang    \nTraffic request rate:                    8.0       \n"
             "Max request concurrency:                 not set   \nSuccessful requests:                     100       \n"
             "Benchmark duration (s):                  14.53     \nTotal input tokens:                      51200     \n"
             "Total generated tokens:                  12800     \nRequest throughput (req/s):              6.88      \n"
             "Output token throughput (tok/s):         880.93    \nConcurrency:                             10.21     \n"
             "---------------Time to First Token----------------\nMean TTFT (ms):                          60.52     \n"
             "-----Time per Output Token (excl. 1st token)------\nMean TPOT (ms):                          11.20     \n"
             "==================================================\n")
    (r,) = im.read(write(tmp_path, "sg.log", block), model="qwen3-8b")
    assert (r.get("max_concurrency"), r["request_rate"], r["n_streams"], r["tpot_s"], r["n_prompt"], r["n_gen"]) == (
        None, 8.0, 100, 0.0112, 512, 128)
    (r,) = im.read(write(tmp_path, "tr.log", block.replace("8.0       \n", "trace     \n", 1)), model="qwen3-8b")
    assert r["request_rate"] == "trace"
    with pytest.raises(im.FormatError, match=r"field `request_rate` must be a number"):
        im.read(write(tmp_path, "bad.log", block.replace("8.0       \n", "fast      \n", 1)), model="qwen3-8b")


def test_sglang_console_block_s_retokenized_count_is_not_its_generated_tokens(tmp_path):
    """SGLang's bench_serving prints `Total generated tokens (retokenized):` after `Total generated tokens:`
    (sglang 0.5.23 sglang/benchmark/serving.py, the result block): a count of the text re-tokenized, not the
    tokens generated; a bracket is read as a unit only where it is one ("(ms)", "(tok/s)")."""
    block = ("$ python -m sglang.bench_serving --backend sglang --dataset-name random --num-prompts 200 --max-concurrency 16\n\n"
             "============ Serving Benchmark Result ============\n"
             "Backend:                                 sglang    \nTraffic request rate:                    inf       \n"
             "Max request concurrency:                 16        \nSuccessful requests:                     200       \n"
             "Benchmark duration (s):                  40.12     \nTotal input tokens:                      104400    \n"
             "Total input text tokens:                 104400    \nTotal generated tokens:                  26000     \n"
             "Total generated tokens (retokenized):    25811     \nRequest throughput (req/s):              4.99      \n"
             "Input token throughput (tok/s):          2602.19   \nOutput token throughput (tok/s):         648.06    \n"
             "Peak output token throughput (tok/s):    944.00    \nPeak concurrent requests:                17        \n"
             "Total token throughput (tok/s):          3250.25   \nConcurrency:                             15.80     \n"
             "---------------Time to First Token----------------\nMean TTFT (ms):                          120.50    \n"
             "-----Time per Output Token (excl. 1st token)------\nMean TPOT (ms):                          23.50     \n"
             "==================================================\n")
    (r,) = im.read(write(tmp_path, "sg.log", block), model="qwen3-8b")
    assert (r["n_prompt"], r["n_gen"], r["avg_ts"], r["n_streams"], r["tpot_s"]) == (522, 130, 648.06, 16, 0.0235)


def test_vllm_prints_its_arrival_process_before_its_block(tmp_path):
    """vLLM's bench serve prints `Traffic request rate:` and `Burstiness factor:` before its result block (which
    prints the rate only when finite): both are the run's."""
    text = ("$ vllm bench serve --model Qwen/Qwen3-8B --request-rate 4 --burstiness 0.5 --num-prompts 64\n"
            "Traffic request rate: 4.0\nBurstiness factor: 0.5 (Gamma distribution)\nMaximum request concurrency: None\n"
            "============ Serving Benchmark Result ============\n"
            "Successful requests:                     64\nBenchmark duration (s):                  20.00\n"
            "Total input tokens:                      65536\nTotal generated tokens:                  8192\n"
            "Output token throughput (tok/s):         409.60\nMean TTFT (ms):                          80.00\n"
            "Mean TPOT (ms):                          20.00\n==================================================\n")
    (r,) = im.read(write(tmp_path, "v.log", text), model="qwen3-8b")
    assert (r["request_rate"], r["burstiness"], r.get("max_concurrency"), r["n_prompt"], r["n_gen"]) == (4.0, 0.5, None, 1024, 128)


def test_a_serving_client_s_printed_arguments_and_its_concurrency_line(tmp_path):
    """vLLM's benchmark_serving.py prints its arguments (`Namespace(...)`) and `Maximum request concurrency: N`
    before its block, SGLang's bench_serving `benchmark_args=Namespace(...)`: a paste without a command line takes the
    model, --max-concurrency and --request-rate from them (`importers.namespace_command`)."""
    block = ("============ Serving Benchmark Result ============\n"
             "Successful requests:                     64\nBenchmark duration (s):                  20.00\n"
             "Total input tokens:                      65536\nTotal generated tokens:                  8192\n"
             "Output token throughput (tok/s):         409.60\nMean TTFT (ms):                          80.00\n"
             "Mean TPOT (ms):                          20.00\n==================================================\n")
    ns = ("Namespace(backend='vllm', base_url=None, host='127.0.0.1', port=8000, endpoint='/v1/completions', "
          "dataset_name='random', max_concurrency=8, model='Qwen/Qwen3-8B', tokenizer=None, num_prompts=64, "
          "request_rate=inf, burstiness=1.0, seed=0, random_input_len=1024, random_output_len=128, "
          "percentile_metrics='ttft,tpot,itl', metric_percentiles='99')\n")
    (r,) = im.read(write(tmp_path, "ns.log", ns + block))
    assert (r["model"], r["max_concurrency"], r["request_rate"], r["n_streams"]) == ("qwen3-8b", 8, "inf", 8)
    assert r["tool"].startswith("vllm")
    (r,) = im.read(write(tmp_path, "sg.log", ns.replace("Namespace", "benchmark_args=Namespace", 1)
                         .replace("'vllm'", "'sglang'").replace("max_concurrency=8", "max_concurrency=None")
                         .replace("request_rate=inf", "request_rate=2.0") + block))
    assert (r.get("max_concurrency"), r["request_rate"], r["serve_backend"]) == (None, 2.0, "sglang")
    assert r["tool"].startswith("sglang")
    # vLLM's own line before its block, with no arguments printed (a model named by the caller)
    (r,) = im.read(write(tmp_path, "pre.log", "Traffic request rate: inf\nMaximum request concurrency: 16\n" + block),
                   model="qwen3-8b")
    assert (r["max_concurrency"], r["n_streams"]) == (16, 16)
    assert im.namespace_command("Namespace(backend='vllm', model=None)") is None
    assert im.namespace_command("Namespace(model='a/b', warmup_requests=1)").startswith("python -m sglang.bench_serving")
    assert im.namespace_command("Namespace(model='a/b', max_concurrency=None, request_rate=inf)") == \
        "python benchmark_serving.py --model a/b --request-rate inf"


def test_vllm_s_offline_benchmarks_printed_arguments_stand_for_their_command_line(tmp_path):
    """benchmark_latency.py and benchmark_throughput.py print their arguments first (vLLM 0.10.1,
    `print(args)`): a paste without the command line takes the lengths and the batch from them."""
    ns = ("Namespace(input_len=512, output_len=64, batch_size=4, n=1, use_beam_search=False, num_iters_warmup=10, "
          "num_iters=30, profile=False, output_json=None, disable_detokenize=False, model='meta-llama/Llama-3.1-8B-Instruct', "
          "tensor_parallel_size=1, max_num_seqs=None)\n")
    (r,) = im.read(write(tmp_path, "lat.log", ns + "Avg latency: 1.2 seconds\n"))
    assert (r["serve_kind"], r["model"], r["n_prompt"], r["n_gen"], r["n_streams"]) == ("latency", "llama-3.1-8b", 512, 64, 4)
    tp = ("Namespace(backend='vllm', dataset_name='random', dataset=None, dataset_path=None, input_len=1024, "
          "output_len=128, n=1, num_prompts=200, model='meta-llama/Llama-3.1-8B-Instruct', async_engine=False)\n")
    (r,) = im.read(write(tmp_path, "tp.log", tp + "Throughput: 10.00 requests/s, 11520.00 total tokens/s, "
                                                 "1280.00 output tokens/s\n"))
    assert (r["serve_kind"], r["n_prompt"], r["n_gen"], r["completed"]) == ("throughput", 1024, 128, 200)


def test_a_2024_json_of_a_hip_or_musa_build_is_rocm_or_musa_not_cuda(tmp_path):
    # Before llama-bench's `backends` field (2024) json/csv/sql carried a 0/1 field per backend, and a HIP or
    # MUSA build of ggml-cuda set GGML_USE_CUDA too, so it printed "cuda": 1; only the md column (GGML_CUDA_NAME,
    # ggml-cuda.h) said ROCm / MUSA (llama.cpp as vendored by llama-cpp-python 0.2.90, examples/llama-bench)
    old = {k: v for k, v in LB_KEYS.items() if k != "backends"}
    flags = dict(cuda=True, vulkan=False, kompute=False, metal=False, sycl=False, rpc=False, gpu_blas=True, blas=True)
    rows = [dict(old, **flags, gpu_info=g, n_prompt=0, n_gen=128, n_depth=0, avg_ts=30.0, stddev_ts=0.1)
            for g in ("AMD Radeon RX 7900 XTX", "Radeon RX 7900 XTX/Radeon RX 7900 XTX", "MTT S80",
                      "NVIDIA GeForce RTX 3090")]
    recs = im.read(write(tmp_path, "old.json", json.dumps(rows)))
    assert [r["backend"] for r in recs] == ["ROCm", "ROCm", "MUSA", "CUDA"]
    assert "GGML_USE_CUDA" in recs[0]["inferred"]["backend"]
    assert "backend" not in recs[3].get("inferred", {})


def test_llama_bench_json_settings_out_of_range_name_the_line(tmp_path):
    """llama-bench's JSON with `"n_ubatch": 0` / -1 read as a ubatch of none (the fit's ubatch option reads it)
    and `"flash_attn": "abc"` dropped as "not stated" without a word; each is one error naming the line now.
    What llama-bench writes (-1 / 0 / 1, old builds' true / false) still reads."""
    ok = lb()
    for k, v, msg in (("n_ubatch", 0, r"field `n_ubatch` must be >= 1, got 0"),
                      ("n_batch", -1, r"field `n_batch` must be >= 1, got -1"),
                      ("n_threads", -4, r"field `n_threads` must be >= 0, got -4"),
                      ("flash_attn", "abc", r"field `flash_attn` must be -1 \(auto\), 0 or 1 \(or true / false\), "
                                            r"got 'abc'"),
                      ("flash_attn", 2, r"field `flash_attn` must be -1 \(auto\), 0 or 1")):
        text = json.dumps([ok, dict(ok, **{k: v})], indent=2)
        line = text.splitlines().index("  {", 2) + 1
        with pytest.raises(im.FormatError, match=rf"lb.json:{line}: {msg}"):
            im.read(write(tmp_path, "lb.json", text))
    for v, want in ((-1, -1), (0, 0), (1, 1), (True, 1), (False, 0), ("true", 1)):
        assert im.read(write(tmp_path, "ok.json", json.dumps([dict(ok, flash_attn=v)])))[0]["flash_attn"] == want

"""Layouts the importer met in pastes: vLLM's offline benchmarks' --output-json files, a llama-bench result pasted
twice, SGLang's / vLLM's embedding serving runs, llama-batched-bench's jsonl without is_tg_separate, llama-bench's
records and its md table in one paste. Every layout here follows the tool's printing code (named in each test); the
numbers are invented, but for tests/data/terminal's (llama-bench's own output, captured)."""
import json
import os

import pytest

from glmbench.results import importers as im


def write(tmp_path, name, text):
    p = tmp_path / name
    p.write_text(text)
    return str(p)


# ---- llama-batched-bench --output-format jsonl -----------------------------------------------------
# tools/batched-bench/batched-bench.cpp: the jsonl object carries is_pp_shared but not is_tg_separate
BATCHED_JSONL = ('{"n_kv_max": 16384, "n_batch": 2048, "n_ubatch": 512, "flash_attn": 1, "is_pp_shared": 0, '
                 '"n_gpu_layers": 99, "n_threads": 16, "n_threads_batch": 16, "pp": 512, "tg": 128, "pl": 4, '
                 '"n_kv": 2560, "t_pp": 0.500000, "speed_pp": 4096.000000, "t_tg": 2.000000, "speed_tg": 256.000000, '
                 '"t": 2.500000, "speed": 1024.000000}\n')


def test_batched_jsonl_takes_tgs_from_the_pastes_command_line(tmp_path):
    cmd = "$ ./llama-batched-bench -m qwen3-8b-Q4_K_M.gguf -c 16384 -npp 512 -ntg 128 -npl 4 {}--output-format jsonl\n"
    for tgs, streams in (("-tgs ", 1), ("", 4)):
        notices = []
        pp, tg = im.read(write(tmp_path, "b.md", cmd.format(tgs) + "```\n" + BATCHED_JSONL + "```\n"),
                         model="qwen3-8b", notices=notices)
        assert (pp["n_streams"], tg["n_streams"], tg["pl"]) == (4, streams, 4)
        assert "command line, line 1" in tg["inferred"]["n_streams"]
        assert not any("tgs" in n for n in notices)


def test_batched_jsonl_without_a_command_line_says_it_assumed_shared_decoding(tmp_path):
    notices = []
    pp, tg = im.read(write(tmp_path, "b.jsonl", BATCHED_JSONL), model="qwen3-8b", notices=notices)
    assert tg["n_streams"] == 4
    assert "assumed" in tg["inferred"]["n_streams"] and "is_tg_separate" in tg["inferred"]["n_streams"]
    assert any("-tgs" in n and "assumed" in n for n in notices)
    # one stream: nothing to assume
    one = BATCHED_JSONL.replace('"pl": 4', '"pl": 1')
    _, tg1 = im.read(write(tmp_path, "b1.jsonl", one), model="qwen3-8b")
    assert "n_streams" not in tg1["inferred"]


# ---- embedding serving runs ------------------------------------------------------------------------
def _row(k, v, fmt=""):
    return ("{:<40} {:<10" + fmt + "}").format(k, v)


def sglang_embedding_block():
    """sglang/benchmark/serving.py's result block for an embedding backend (is_embedding: no generated-token,
    output-throughput, TTFT, TPOT or ITL lines)."""
    return "\n".join([
        "python -m sglang.bench_serving --backend sglang-embedding --model BAAI/bge-large-en-v1.5 --num-prompts 200",
        "",
        "{s:{c}^{n}}".format(s=" Serving Benchmark Result ", n=50, c="="),
        _row("Backend:", "sglang-embedding"), _row("Traffic request rate:", "inf"),
        _row("Max request concurrency:", "not set"), _row("Successful requests:", 200),
        _row("Benchmark duration (s):", 4.0, ".2f"), _row("Total input tokens:", 51200),
        _row("Total input text tokens:", 51200), _row("Request throughput (req/s):", 50.0, ".2f"),
        _row("Input token throughput (tok/s):", 12800.0, ".2f"), _row("Peak concurrent requests:", 200),
        _row("Concurrency:", 180.0, ".2f"),
        "{s:{c}^{n}}".format(s="End-to-End Latency", n=50, c="-"),
        _row("Mean E2E Latency (ms):", 3600.0, ".2f"), _row("Median E2E Latency (ms):", 3650.0, ".2f"),
        _row("P90 E2E Latency (ms):", 3900.0, ".2f"), _row("P95 E2E Latency (ms):", 3950.0, ".2f"),
        _row("P99 E2E Latency (ms):", 3990.0, ".2f"),
        "=" * 50, ""])


def vllm_embedding_block():
    """vllm/benchmarks/serve.py's block for a pooling backend (EmbedBenchmarkMetrics: no generated tokens)."""
    return "\n".join([
        "vllm bench serve --backend openai-embeddings --endpoint /v1/embeddings --model BAAI/bge-m3 --num-prompts 100",
        "",
        "{s:{c}^{n}}".format(s=" Serving Benchmark Result ", n=50, c="="),
        _row("Successful requests:", 100), _row("Failed requests:", 0),
        _row("Benchmark duration (s):", 2.0, ".2f"), _row("Total input tokens:", 25600),
        _row("Request throughput (req/s):", 50.0, ".2f"), _row("Input throughput (inputs/s):", 50.0, ".2f"),
        _row("Total token throughput (tok/s):", 12800.0, ".2f"),
        "{s:{c}^{n}}".format(s="End-to-end Latency", n=50, c="-"),
        _row("Mean E2EL (ms):", 1500.0, ".2f"), _row("Median E2EL (ms):", 1510.0, ".2f"),
        _row("P99 E2EL (ms):", 1900.0, ".2f"),
        "=" * 50, ""])


@pytest.mark.parametrize("text", [sglang_embedding_block(), vllm_embedding_block(),
                                  # the block without its command line: the missing generation lines tell
                                  sglang_embedding_block().split("\n", 2)[2].replace("sglang-embedding", "sglang")])
def test_an_embedding_serving_block_says_it_has_no_decode_speed(tmp_path, text):
    with pytest.raises(im.FormatError) as e:
        im.read(write(tmp_path, "embed.txt", text))
    msg = str(e.value)
    start = text.splitlines().index(next(ln for ln in text.splitlines() if "Serving Benchmark Result" in ln)) + 1
    assert "embedding" in msg and "no decode speed" in msg and f"embed.txt:{start}:" in msg
    assert "without 'Output token throughput" not in msg


def test_an_embedding_bench_serving_jsonl_line_says_it_has_no_decode_speed(tmp_path):
    # sglang's --output-file line of an embedding run: total_output_tokens 0, output_throughput 0.0
    o = {"tag": None, "backend": "sglang-embedding", "dataset_name": "random", "request_rate": float("inf"),
         "max_concurrency": None, "server_info": {"model_path": "BAAI/bge-large-en-v1.5", "tp_size": 1},
         "duration": 4.0, "completed": 200, "total_input_tokens": 51200, "total_output_tokens": 0,
         "total_output_tokens_retokenized": 0, "request_throughput": 50.0, "input_throughput": 12800.0,
         "output_throughput": 0.0, "total_throughput": 12800.0, "mean_e2e_latency_ms": 3600.0,
         "mean_ttft_ms": 0.0, "median_ttft_ms": 0.0, "mean_tpot_ms": 0.0, "mean_itl_ms": 0.0}
    with pytest.raises(im.FormatError, match=r"embedding \(no-generation\) run \(backend 'sglang-embedding'\).*"
                                             r"no decode speed"):
        im.read(write(tmp_path, "embed.jsonl", json.dumps(o) + "\n"))


# ---- vLLM's offline benchmarks' --output-json -----------------------------------------------------
# vllm/benchmarks/latency.py and throughput.py (vLLM 0.34.0): json.dump(results, f, indent=4) of these dicts
def latency_json():
    lat = [2.41, 2.45, 2.5, 2.55, 2.59]
    return json.dumps({"model_id": "Qwen/Qwen3-8B", "avg_latency": sum(lat) / len(lat), "latencies": lat,
                       "percentiles": dict(zip([10, 25, 50, 75, 90, 99], [2.426, 2.45, 2.5, 2.55, 2.574, 2.5884]))},
                      indent=4)


def throughput_json():
    return json.dumps({"model_id": "Qwen/Qwen3-8B", "elapsed_time": 50.0, "num_requests": 1000,
                       "total_num_tokens": 1280000, "requests_per_second": 20.0, "tokens_per_second": 25600.0}, indent=4)


def test_vllm_output_json_files_are_detected():
    assert im.detect(latency_json()) == im.detect(throughput_json()) == "vllm-offline-json"


def test_vllm_latency_output_json_with_its_command_line_is_the_consoles_record(tmp_path):
    cmd = ("$ vllm bench latency --model Qwen/Qwen3-8B --input-len 512 --output-len 128 --batch-size 16 "
           "--output-json lat.json\n")
    text = "On one NVIDIA H100:\n\n" + cmd + "```json\n" + latency_json() + "\n```\n"
    r, = im.read(write(tmp_path, "lat.md", text))
    console = cmd + f"Avg latency: {json.loads(latency_json())['avg_latency']} seconds\n50% percentile latency: 2.5 seconds\n"
    c, = im.read(write(tmp_path, "lat-console.md", "On one NVIDIA H100:\n\n" + console))
    assert r["source"].endswith("lat.md:5") and r["tool"] == "vllm bench latency (--output-json)"
    same = ("test", "serve_kind", "server", "model", "n_prompt", "n_gen", "n_depth", "n_streams", "completed",
            "latency_s", "p50_latency_s", "avg_ts", "aggregate_tok_s", "device", "n_cards")
    assert {k: r.get(k) for k in same} == {k: c.get(k) for k in same}
    assert (r["serve_kind"], r["n_prompt"], r["n_gen"], r["n_streams"]) == ("latency", 512, 128, 16)
    assert r["avg_ts"] == pytest.approx(16 * 128 / 2.5)
    assert r["model"] == "qwen3-8b" and "model_id" in r["inferred"]["model"]


def test_vllm_latency_output_json_alone_names_what_is_missing(tmp_path):
    with pytest.raises(im.FormatError, match=r"lat\.json:1: .*bench latency --output-json.* no batch size, prompt "
                                             r"length or output length.*command line"):
        im.read(write(tmp_path, "lat.json", latency_json()))


def test_vllm_throughput_output_json_takes_its_lengths_from_the_command_line(tmp_path):
    cmd = "vllm bench throughput --model Qwen/Qwen3-8B -tp 2 \\\n    --input-len 1024 --output-len 256 --output-json t.json\n"
    r, = im.read(write(tmp_path, "t.md", "2x NVIDIA H100\n```\n" + cmd + "```\n```json\n" + throughput_json() + "\n```\n"))
    # the same run as the console prints it (throughput.py's print lines)
    console = cmd + ("Throughput: 20.00 requests/s, 25600.00 total tokens/s, 5120.00 output tokens/s\n"
                     "Total num prompt tokens:  1024000\nTotal num output tokens:  256000\n")
    c, = im.read(write(tmp_path, "t-console.md", "2x NVIDIA H100\n```\n" + console + "```\n"), notices=[])
    same = ("test", "serve_kind", "server", "model", "n_prompt", "n_gen", "n_depth", "n_streams", "completed",
            "request_throughput", "duration_s", "avg_ts", "aggregate_tok_s", "device", "n_cards", "split")
    assert {k: r.get(k) for k in same} == {k: c.get(k) for k in same}
    assert (r["serve_kind"], r["n_prompt"], r["n_gen"], r["n_streams"], r["n_cards"]) == ("throughput", 1024, 256, 1000, 2)
    assert r["avg_ts"] == pytest.approx(20.0 * 256) and r["tool"] == "vllm bench throughput (--output-json)"
    # one length on the command line: the other from the file's total_num_tokens / num_requests
    one = "vllm bench throughput --model Qwen/Qwen3-8B --dataset-name sharegpt --output-len 256 --output-json t.json\n\n"
    r1, = im.read(write(tmp_path, "t1.md", one + throughput_json() + "\n"))
    assert (r1["n_prompt"], r1["n_gen"]) == (1024, 256) and "total_num_tokens" in r1["inferred"]["n_prompt"]


@pytest.mark.parametrize("before", ["", "vllm bench throughput --model Qwen/Qwen3-8B --output-json t.json\n\n"])
def test_vllm_throughput_output_json_without_lengths_names_what_is_missing(tmp_path, before):
    with pytest.raises(im.FormatError, match=r"t\.txt:\d+: .*one total \(total_num_tokens\).*--input-len.*"
                                             r"--output-len"):
        im.read(write(tmp_path, "t.txt", before + throughput_json() + "\n"))


# ---- a result pasted twice -------------------------------------------------------------------------
# llama-bench's md printer (tools/llama-bench/llama-bench.cpp markdown_printer): header, separator, one row a test,
# then `build: <commit> (<number>)`
LB_MD = ("| model                          |       size |     params | backend    | ngl |  fa |            test |"
         "                  t/s |\n"
         "| ------------------------------ | ---------: | ---------: | ---------- | --: | --: | --------------: |"
         " -------------------: |\n"
         "| qwen3 8B Q4_K - Medium         |   4.68 GiB |     8.19 B | CUDA       |  99 |   1 |           pp512 |"
         "      4031.68 ± 12.76 |\n"
         "| qwen3 8B Q4_K - Medium         |   4.68 GiB |     8.19 B | CUDA       |  99 |   1 |           tg128 |"
         "        151.51 ± 0.46 |\n"
         "\nbuild: 4be1e7c (9731)\n")


def test_the_same_md_table_pasted_twice_is_one_set_of_records(tmp_path):
    notices = []
    text = "ggml_cuda_init: found 1 CUDA devices:\n  Device 0: NVIDIA GeForce RTX 4090, compute capability 8.9, VMM: yes\n" \
           + LB_MD + "\nsame again:\n\n" + LB_MD
    recs = im.read(write(tmp_path, "twice.md", text), notices=notices)
    assert [(r["test"], r["avg_ts"]) for r in recs] == [("pp", 4031.68), ("tg", 151.51)]
    assert [r["source"].rsplit(":", 1)[1] for r in recs] == ["5", "6"]
    said = [n for n in notices if "pasted twice" in n]
    assert len(said) == 1 and "line 14 = line 5" in said[0] and "line 15 = line 6" in said[0]


def test_another_run_of_the_same_test_stays_a_record(tmp_path):
    again = LB_MD.replace("151.51 ± 0.46", "149.02 ± 0.51")
    notices = []
    recs = im.read(write(tmp_path, "two-runs.md", LB_MD + "\n" + again), model="qwen3-8b", notices=notices)
    # the pp rows are the same result (pasted with it), the tg rows two runs
    assert [(r["test"], r["avg_ts"]) for r in recs] == [("pp", 4031.68), ("tg", 151.51), ("tg", 149.02)]
    assert any("line 10 = line 3" in n for n in notices)
    # a stddev of its own is another run too
    other_sd = LB_MD.replace("151.51 ± 0.46", "151.51 ± 0.90")
    recs = im.read(write(tmp_path, "sd.md", LB_MD + "\n" + other_sd), model="qwen3-8b")
    assert len(recs) == 3


def test_llama_bench_jsonl_lines_pasted_twice_are_read_once(tmp_path):
    base = dict(build_commit="4be1e7c", build_number=9731, cpu_info="AMD Ryzen 9 7950X", gpu_info="NVIDIA GeForce RTX 4090",
                backends="CUDA", model_filename="/m/Qwen3-8B-Q4_K_M.gguf", model_type="qwen3 8B Q4_K - Medium",
                model_size=5027783488, model_n_params=8190735360, n_batch=2048, n_ubatch=512, n_threads=16,
                type_k="f16", type_v="f16", n_gpu_layers=99, split_mode="layer", devices="auto", flash_attn=1,
                n_depth=0, test_time="2026-07-27T14:02:51Z")
    lines = [json.dumps(dict(base, n_prompt=512, n_gen=0, avg_ts=4031.675437, stddev_ts=12.759871)),
             json.dumps(dict(base, n_prompt=0, n_gen=128, avg_ts=151.513321, stddev_ts=0.461245))]
    notices = []
    recs = im.read(write(tmp_path, "lb.jsonl", "\n".join(lines + lines) + "\n"), notices=notices)
    assert len(recs) == 2 and any("line 3 = line 1" in n and "line 4 = line 2" in n for n in notices)


def test_a_result_read_at_two_precisions_is_one_result():
    # llama-bench's md prints t/s to 2 decimals, its json to 6: one run either way
    md = {"model": "qwen3-8b", "test": "tg", "n_prompt": 0, "n_gen": 128, "n_depth": 0, "avg_ts": 151.51,
          "stddev_ts": 0.46, "source": "a.md:4", "tool": "llama-bench"}
    js = dict(md, avg_ts=151.513321, stddev_ts=0.461245, source="a.md:30")
    assert im._same_result(md, js)
    assert not im._same_result(md, dict(js, n_threads=16))     # a field only one states: not known to be one run
    assert not im._same_result(md, dict(js, avg_ts=151.523321))
    assert not im._same_result(dict(js, stddev_ts=0.461246), js)


# ---- llama-bench's machine output and its md table in one paste -----------------------------------------------------
# tests/data/terminal/: the vendored llama.cpp's llama-bench on a tiny GGUF (`-t 2 -p 16 -n 4 -r 2`), run under a pty
# (`script -q -c "llama-bench ... -o X -oe Y" /dev/null`, *.pty.txt) and through `2>&1 | cat` (*.pipe.txt): stdout and
# stderr interleave, the JSON printer's "  }" (no newline) with the md row after it on one line; json.txt, jsonl.txt
# and md.txt are separate runs (md.txt's with -t 1). These numbers are measured (a CPU), the model is none of ours.
TERMINAL = os.path.join(os.path.dirname(__file__), "data", "terminal")
OE_FILES = ["json-oe-md.pty.txt", "json-oe-md.pipe.txt", "jsonl-oe-md.pty.txt", "jsonl-oe-md.pipe.txt",
            "csv-oe-md.pty.txt", "csv-oe-md.pipe.txt", "sql-oe-md.pty.txt", "sql-oe-md.pipe.txt",
            "md-oe-json.pty.txt", "md-oe-json.pipe.txt"]


def terminal(name):
    with open(os.path.join(TERMINAL, name)) as f:
        return f.read()


def md_rows(text):
    """{test cell: (t/s, stddev)} of the llama-bench md rows in `text` (a row glued after a JSON "}" too)."""
    out = {}
    for ln in text.splitlines():
        cells = [c.strip() for c in ln[ln.find("|"):].strip().strip("|").split("|")] if "|" in ln else []
        if len(cells) == 7 and "±" in cells[6]:
            ts, sd = cells[6].split("±")
            out[cells[5]] = (float(ts), float(sd))
    return out


@pytest.mark.parametrize("name", OE_FILES)
def test_llama_bench_output_with_its_md_table_on_stderr_is_each_run_once_from_the_record(tmp_path, name):
    text = terminal(name)
    rows = md_rows(text)
    assert set(rows) == {"pp16", "tg4"}
    # `script`'s own typescript keeps the terminal's \r\n; a reply quotes the paste ("> ")
    for pasted in (text, text.replace("\n", "\r\n"), "".join("> " + ln + "\n" for ln in text.splitlines())):
        notices = []
        recs = im.read(write(tmp_path, name, pasted), model="llama-3.1-8b", notices=notices)
        assert [(r["test"], r["n_prompt"], r["n_gen"]) for r in recs] == [("pp", 16, 0), ("tg", 0, 4)], name
        for r in recs:
            ts, sd = rows[f"pp{r['n_prompt']}" if r["test"] == "pp" else f"tg{r['n_gen']}"]
            # the record's own figures (6 decimals), which the md row rounds; its fields the md has not
            assert abs(r["avg_ts"] - ts) <= 0.005 and abs(r["stddev_ts"] - sd) <= 0.005 and r["avg_ts"] != ts
            assert r["n_threads"] == 2 and r["n_batch"] == 2048 and r["build_commit"] == "0c1e570"
            line = text.splitlines()[int(r["source"].rsplit(":", 1)[1]) - 1]
            assert "|" not in line and "0c1e570" in line or line.strip() == "{", (name, line)
        said = [n for n in notices if "read once, from the record" in n]
        assert len(said) == 1 and "2 table rows" in said[0], notices


def test_an_ot_regex_with_pipes_in_its_md_cell_is_still_the_records_run(tmp_path):
    # -ot 'blk\.(0|1)\.ffn_up=CPU': llama-bench prints the pattern as given, its alternation's pipe splitting the row
    notices = []
    recs = im.read(os.path.join(TERMINAL, "json-oe-md-ot.pty.txt"), model="llama-3.1-8b", notices=notices)
    ot = r"blk\.(0|1)\.ffn_up=CPU"
    assert [(r["test"], r["tensor_buft_overrides"]) for r in recs] == [("pp", ot), ("tg", ot)]
    assert any("2 table rows are the runs" in n for n in notices)


def test_an_md_tables_ot_row_after_a_blank_line_is_read(tmp_path):
    # a table a blank (or log) line splits: its rows after the gap are of the header's width, or wider by -ot's pipes
    lines = terminal("json-oe-md-ot.pty.txt").splitlines()
    rows = [ln[ln.index("|"):] for ln in lines if ln.startswith("  }|")]
    text = "\n".join(lines[1:3]) + "\n" + rows[0] + "\n\n" + rows[1] + "\n\nbuild: 0c1e570 (1)\n"
    recs = im.read(write(tmp_path, "gap.md", text), model="llama-3.1-8b")
    assert [(r["test"], r["source"].rsplit(":", 1)[1]) for r in recs] == [("pp", "3"), ("tg", "5")]


def test_another_tools_lines_after_llama_bench_output_with_its_table(tmp_path):
    # every row of the table is a record's run: the rest of the paste (llama-cli's timing lines) is still read
    timing = ("\n$ ./llama-cli -m Llama-3.1-8B-Q4_0.gguf -p hi -n 128\n"
              "llama_perf_context_print: prompt eval time =     100.00 ms /    10 tokens (   10.00 ms per token,   "
              "100.00 tokens per second)\n"
              "llama_perf_context_print:        eval time =    1270.00 ms /   127 runs   (   10.00 ms per token,   "
              "100.00 tokens per second)\n")
    recs = im.read(write(tmp_path, "both.txt", terminal("json-oe-md.pty.txt") + timing), model="llama-3.1-8b")
    assert [(r["test"], r["tool"]) for r in recs] == [("pp", "llama-bench"), ("tg", "llama-bench"),
                                                      ("pp", "llama-cli (timings)"), ("tg", "llama-cli (timings)")]


@pytest.mark.parametrize("name", ["jsonl-oe-md.pty.txt", "json-oe-md.pipe.txt", "csv-oe-md.pty.txt"])
def test_a_records_model_is_told_as_its_tables_row_would_be(tmp_path, name):
    # 'llama 8B Q4_0' + 8.03 B fits several built-ins: the heading above the table names one, for the row and the
    # record alike (the record's model_filename names none)
    text = terminal(name)
    for a, b in (("llama ?B F16  ", "llama 8B Q4_0 "), ("  0.22 MiB", "  4.33 GiB"), ("    0.12 M", "    8.03 B"),
                 ('"model_n_params": 115008', '"model_n_params": 8030261248'), (',"115008",', ',"8030261248",'),
                 ("tiny.gguf", "/models/model.gguf")):
        text = text.replace(a, b)
    text = text.replace('"llama ?B F16"', '"llama 8B Q4_0"')
    recs = im.read(write(tmp_path, "h.md", "## Llama-3.1-8B-Instruct on a CPU\n\n" + text))
    assert [r["model"] for r in recs] == ["llama-3.1-8b", "llama-3.1-8b"], [r["inferred"]["model"] for r in recs]
    assert all("heading 'Llama-3.1-8B-Instruct on a CPU'" in r["inferred"]["model"] for r in recs)


def test_a_json_objects_end_and_the_md_header_on_one_line(tmp_path):
    # stderr's header written after an object's "  }" (as its rows are): "  }| model | size | ..."
    lines = terminal("json-oe-md.pty.txt").splitlines()
    head, sep = lines[1], lines[2]
    assert head.startswith("| model") and sep.startswith("| ---")
    rest = lines[:1] + lines[3:]
    i = next(k for k, ln in enumerate(rest) if ln.startswith("  }|"))
    rest[i:i + 1] = ["  }" + head, sep, rest[i][3:]]
    notices = []
    recs = im.read(write(tmp_path, "glued.txt", "\n".join(rest) + "\n"), model="llama-3.1-8b", notices=notices)
    assert [(r["test"], r["n_threads"]) for r in recs] == [("pp", 2), ("tg", 2)]
    assert any("read once, from the record" in n for n in notices)


@pytest.mark.parametrize("name", ["csv-oe-md.pipe.txt", "jsonl-oe-md.pty.txt", "sql-oe-md.pipe.txt", "json-oe-md.pty.txt"])
def test_llama_bench_output_with_its_md_table_pasted_twice(tmp_path, name):
    # the second csv's header is a new csv, not a row of the first
    notices = []
    recs = im.read(write(tmp_path, "twice.txt", terminal(name) + "\n" + terminal(name)), model="llama-3.1-8b",
                   notices=notices)
    assert [(r["test"], r["n_threads"], r["build_commit"]) for r in recs] == [("pp", 2, "0c1e570"), ("tg", 2, "0c1e570")]
    assert any("4 table rows" in n for n in notices) and any("2 results pasted twice" in n for n in notices)


@pytest.mark.parametrize("first,second", [("jsonl.txt", "md.txt"), ("json.txt", "md.txt"), ("md.txt", "json.txt"),
                                          ("md.txt", "jsonl.txt")])
def test_two_runs_pasted_one_after_the_other_are_both_read(tmp_path, first, second):
    # two runs (the md table's with -t 1): every record of each, none taken for the other's
    notices = []
    recs = im.read(write(tmp_path, "two.txt", terminal(first) + "\n" + terminal(second)), model="llama-3.1-8b",
                   notices=notices)
    assert sorted((r["test"], r["n_threads"]) for r in recs) == [("pp", 1), ("pp", 2), ("tg", 1), ("tg", 2)]
    md = {(r["test"], r["avg_ts"]) for r in recs if r["n_threads"] == 1}
    assert md == {("pp", 53683.18), ("tg", 35704.83)}
    lines = [int(r["source"].rsplit(":", 1)[1]) for r in recs]
    assert lines == sorted(lines) and not any("read once" in n or "pasted twice" in n for n in notices)


@pytest.mark.parametrize("machine", ["csv", "sql"])
def test_csv_or_sql_then_another_runs_md_table(tmp_path, machine):
    # the csv / sql of one run (its own md rows taken out: stdout alone) and another run's table
    own = "\n".join(ln for ln in terminal(f"{machine}-oe-md.pipe.txt").splitlines()
                    if not ln.startswith("|") and not ln.startswith("build:"))
    recs = im.read(write(tmp_path, "two.txt", own + "\n\n" + terminal("md.txt")), model="llama-3.1-8b")
    assert sorted((r["test"], r["n_threads"]) for r in recs) == [("pp", 1), ("pp", 2), ("tg", 1), ("tg", 2)]


def test_a_json_array_pasted_twice_is_read_once(tmp_path):
    text = terminal("json.txt")
    n = text.count("\n")
    notices = []
    recs = im.read(write(tmp_path, "twice.json", text + text), notices=notices, model="llama-3.1-8b")
    assert [(r["test"], r["source"].rsplit(":", 1)[1]) for r in recs] == [("pp", "2"), ("tg", "48")]
    said = [x for x in notices if "pasted twice" in x]
    assert len(said) == 1 and f"line {n + 2} = line 2" in said[0] and f"line {n + 48} = line 48" in said[0]
    # with md tables around them the same
    recs = im.read(write(tmp_path, "twice.md", text + text + "\n" + terminal("md.txt")), model="llama-3.1-8b")
    assert sorted((r["test"], r["n_threads"]) for r in recs) == [("pp", 1), ("pp", 2), ("tg", 1), ("tg", 2)]


def test_what_is_not_llama_bench_output_among_it_says_its_line(tmp_path):
    text = terminal("json.txt")
    n = text.count("\n")
    with pytest.raises(im.FormatError, match=rf"cut\.json:{n + 4}: not valid JSON"):
        im.read(write(tmp_path, "cut.json", text + "[\n  {\n    \"n_prompt\": 16,\n"))
    with pytest.raises(im.FormatError, match=rf"comma\.json:{2 * n}: not valid JSON \(a ',' before"):
        im.read(write(tmp_path, "comma.json", text + text.replace("  }\n]", "  },\n]")))
    # an object cut short among a table's rows: its line, not "holds no records"
    lines = terminal("json-oe-md.pipe.txt").splitlines()
    cut = next(k for k, ln in enumerate(lines) if '"avg_ts"' in ln)
    lines[cut] = '    "avg_ts": 70909.29'    # the comma lost
    with pytest.raises(im.FormatError, match=rf"cut\.txt:{cut + 2}: not valid JSON"):
        im.read(write(tmp_path, "cut.txt", "\n".join(lines) + "\n"), model="llama-3.1-8b")


@pytest.mark.parametrize("between", ["", "and with -t 1:\n", "$ ./llama-bench -m tiny.gguf -t 2 -p 16 -n 4 -r 2 -o jsonl\n"])
@pytest.mark.parametrize("first,second", [("json.txt", "json.txt"), ("json.txt", "jsonl.txt"), ("jsonl.txt", "json.txt"),
                                          ("jsonl.txt", "jsonl.txt")])
def test_llama_bench_json_runs_with_other_text_between(tmp_path, first, second, between):
    # a terminal's session (each run's command line before it) or a comment's prose between two runs' JSON: the
    # records of both, the other lines named in a notice
    a, b = terminal(first), terminal(second)
    notices = []
    recs = im.read(write(tmp_path, "runs.txt", a + between + b), model="llama-3.1-8b", notices=notices)
    want = len({json.dumps(o, sort_keys=True) for t in (a, b) for o in (
        json.loads(t) if t.startswith("[") else [json.loads(ln) for ln in t.splitlines()])})
    assert len(recs) == want and all(r["n_threads"] == 2 and r["build_commit"] == "0c1e570" for r in recs)
    if between:
        at = a.count("\n") + 1
        assert any(f"runs.txt:{at}: line {at} between llama-bench's JSON records" in n for n in notices), notices
    # prose after the JSON alone the same
    notices = []
    assert len(im.read(write(tmp_path, "after.json", a + "trailing words\n"), notices=notices, model="llama-3.1-8b")) == 2
    assert any("is not read" in n for n in notices)


def test_llama_bench_json_among_text_takes_its_model_from_that_text(tmp_path):
    """Records among other text and no table (_bench_json_among_text): the text around them (a run's
    command line, prose) is a hint for their model, as a table's command line or heading is, where it
    names exactly one built-in and the records' model_type does not decide; sweep-bench's jsonl too."""
    def rec(**kw):
        o = {"build_commit": "0c1e570", "model_filename": "model.gguf", "n_prompt": 0, "n_gen": 128, "n_depth": 0,
             "avg_ts": 30.5, "stddev_ts": 0.1}
        o.update(kw)
        return json.dumps(o) + "\n"
    pp = rec(n_prompt=512, n_gen=0, avg_ts=900.5)
    cmd = "$ ./llama-bench -m /models/Qwen3-32B-Q4_K_M.gguf -p 512 -n 128 -o jsonl\n"

    def read(text, name="runs.txt"):
        notices = []
        return im.read(write(tmp_path, name, text), notices=notices), notices
    recs, notices = read(cmd + pp + rec() + "and the sweep of the same model:\n" + SWEEP_JSONL)
    assert [(r["test"], r["tool"].split()[0]) for r in recs] == [("pp", "llama-bench"), ("tg", "llama-bench"),
                                                                  ("pp", "llama-sweep-bench"), ("tg", "llama-sweep-bench")]
    assert all(r["model"] == "qwen3-32b" and r["inferred"]["model"] == "from the text around the records" for r in recs)
    assert not any("model: not known" in n for n in notices)
    # prose after the records, with no command line, the same
    recs, _ = read(pp + rec() + "(those were Qwen3-32B at Q4_K_M)\n")
    assert {r["model"] for r in recs} == {"qwen3-32b"}
    # text naming two built-ins names none: no model, as before
    recs, notices = read(cmd + pp + "then Llama-3.1-8B:\n" + rec())
    assert all(r.get("model") is None for r in recs) and any("model: not known" in n for n in notices)
    # a model_type that decides wins over the text; one that fits several is narrowed by it
    recs, _ = read(cmd.replace("Qwen3-32B", "Llama-3.1-8B") + rec(model_type="qwen3 32B Q4_K - Medium",
                                                                   model_n_params=32762123264) + "done\n")
    assert [r["model"] for r in recs] == ["qwen3-32b"]
    moe = dict(model_type="qwen3moe 30B.A3B Q4_K - Medium", model_n_params=30532122624)
    recs, _ = read("$ ./llama-bench -m Qwen3-Coder-30B-A3B-Instruct-Q4_K_M.gguf\n" + rec(**moe) + "done\n")
    assert [r["model"] for r in recs] == ["qwen3-coder-30b-a3b"] and "text around the records" in recs[0]["inferred"]["model"]
    # a model_type that fits no built-in is not made one by a name in the text
    recs, _ = read(cmd + rec(model_type="llama ?B F16", model_n_params=115008) + "done\n")
    assert [r.get("model") for r in recs] == [None]


# llama-sweep-bench's / llama-batched-bench's --output-format jsonl prints no table (tools/batched-bench/batched-bench.cpp:
# the jsonl line or the md row): a jsonl run and a table in one paste are two runs, both read
SWEEP_JSONL = ('{"n_kv_max": 16896, "n_batch": 2048, "n_ubatch": 512, "flash_attn": 1, "n_gpu_layers": 99, "n_threads": 16, '
               '"n_threads_batch": 16, "pp": 512, "tg": 128, "n_kv": 4096, "t_pp": 0.233000, "speed_pp": 2197.42, '
               '"t_tg": 3.611000, "speed_tg": 35.45}\n')


@pytest.mark.parametrize("jsonl,table", [(SWEEP_JSONL, "formats/sweep-bench-mainline.md"),
                                         (BATCHED_JSONL, "formats/llama-batched-bench.md"),
                                         (SWEEP_JSONL, "terminal/md.txt"), (BATCHED_JSONL, "terminal/md.txt")])
def test_sweep_or_batched_jsonl_and_a_table_of_another_run(tmp_path, jsonl, table):
    with open(os.path.join(os.path.dirname(__file__), "data", table)) as f:
        md = f.read()
    tab = [(r["test"], r["n_depth"], r["avg_ts"]) for r in im.read(write(tmp_path, "t.md", md), model="qwen3-8b")]
    own = [(r["test"], r["n_depth"], r["avg_ts"]) for r in im.read(write(tmp_path, "j.jsonl", jsonl), model="qwen3-8b")]
    n = md.count("\n")
    for text, at in ((jsonl + "\n" + md, "1"), (md + "\n" + jsonl, str(n + 2))):
        recs = im.read(write(tmp_path, "both.md", text), model="qwen3-8b")
        assert sorted((r["test"], r["n_depth"], r["avg_ts"]) for r in recs) == sorted(tab + own)
        assert [(r["test"], r["n_depth"], r["avg_ts"]) for r in recs if r["source"].endswith(":" + at)] == own


# ---- speculative decoding in a serving benchmark ----------------------------------------------------
# vllm/benchmarks/serve.py (late 2025): with a speculative server (EAGLE, MTP, a draft model, n-gram) the client
# reads the server's spec-decode counters and prints a `Speculative Decoding` section / saves spec_decode_* keys;
# sglang/benchmark/serving.py prints `Accept length:` and saves accept_length (null without). The TPOT and output
# throughput then count the draft tokens each step accepted: not the model's decoding, which glmbench prices.
def vllm_spec_block():
    return "\n".join([
        "vllm bench serve --backend vllm --model Qwen/Qwen3-32B --dataset-name random --random-input-len 2048 "
        "--random-output-len 256 --num-prompts 200 --max-concurrency 16",
        "",
        "{s:{c}^{n}}".format(s=" Serving Benchmark Result ", n=50, c="="),
        _row("Successful requests:", 200), _row("Failed requests:", 0), _row("Maximum request concurrency:", 16),
        _row("Benchmark duration (s):", 83.21, ".2f"), _row("Total input tokens:", 409600),
        _row("Total generated tokens:", 51200), _row("Request throughput (req/s):", 2.40, ".2f"),
        _row("Output token throughput (tok/s):", 615.31, ".2f"),
        _row("Total Token throughput (tok/s):", 5537.80, ".2f"),
        "{s:{c}^{n}}".format(s="Time to First Token", n=50, c="-"),
        _row("Mean TTFT (ms):", 1234.56, ".2f"), _row("Median TTFT (ms):", 1180.20, ".2f"),
        _row("P99 TTFT (ms):", 2890.11, ".2f"),
        "{s:{c}^{n}}".format(s="Time per Output Token (excl. 1st token)", n=50, c="-"),
        _row("Mean TPOT (ms):", 21.13, ".2f"), _row("Median TPOT (ms):", 20.87, ".2f"),
        _row("P99 TPOT (ms):", 25.02, ".2f"),
        "{s:{c}^{n}}".format(s="Inter-token Latency", n=50, c="-"),
        _row("Mean ITL (ms):", 60.1, ".2f"), _row("Median ITL (ms):", 59.8, ".2f"), _row("P99 ITL (ms):", 80.4, ".2f"),
        "{s:{c}^{n}}".format(s="Speculative Decoding", n=50, c="-"),
        _row("Acceptance rate (%):", 62.5, ".2f"), _row("Acceptance length:", 2.88, ".2f"),
        _row("Drafts:", 17800), _row("Draft tokens:", 53400), _row("Accepted tokens:", 33375),
        "Per-position acceptance (%):", _row("  Position 0:", 80.0, ".2f"), _row("  Position 1:", 62.5, ".2f"),
        "=" * 50, ""])


def test_a_speculative_serving_run_is_left_out_with_its_reason(tmp_path):
    """A run with speculative decoding imported as a plain one, silently: its 21 ms TPOT (Qwen3-32B) compared
    with a prediction of plain decoding. It is left out now, and a file of nothing else says so in its error."""
    text = vllm_spec_block()
    with pytest.raises(im.FormatError, match=r"spec.txt: holds no records .*spec.txt:3: speculative decoding "
                                             r"\(spec_decode_acceptance_length 2\.88, spec_decode_num_drafts 17800\)"):
        im.read(write(tmp_path, "spec.txt", text))
    plain = text.split("{s:{c}^{n}}".format(s="Speculative Decoding", n=50, c="-"))[0] + "=" * 50 + "\n"
    (r,) = im.read(write(tmp_path, "plain.txt", plain))
    assert (r["test"], r["tpot_s"], r["n_streams"]) == ("serve", pytest.approx(0.02113), 16)
    # vLLM's --save-result JSON, two runs appended: the speculative one left out, with a notice
    base = {"date": "20251120-101233", "backend": "vllm", "model_id": "Qwen/Qwen3-32B", "num_prompts": 200,
            "request_rate": "inf", "burstiness": 1.0, "max_concurrency": 16, "duration": 83.21, "completed": 200,
            "failed": 0, "total_input_tokens": 409600, "total_output_tokens": 51200, "request_throughput": 2.4,
            "output_throughput": 615.31, "total_token_throughput": 5537.8, "mean_ttft_ms": 1234.56,
            "mean_tpot_ms": 21.13, "mean_itl_ms": 60.1}
    spec = dict(base, spec_decode_acceptance_rate=62.5, spec_decode_acceptance_length=2.88,
                spec_decode_num_drafts=17800, spec_decode_draft_tokens=53400, spec_decode_accepted_tokens=33375,
                spec_decode_per_position_acceptance_rates=[0.8, 0.625, 0.45])
    notes = []
    recs = im.read(write(tmp_path, "v.json", json.dumps(base) + "\n" + json.dumps(spec)), notices=notes)
    assert len(recs) == 1 and recs[0]["source"].endswith("v.json:1")
    assert any(n.startswith(str(tmp_path / "v.json") + ":2: speculative decoding (spec_decode_acceptance_rate 62.5, "
                                                       "spec_decode_acceptance_length 2.88)") for n in notes), notes
    # SGLang's JSONL line: accept_length set (a null one is a plain run)
    line = json.loads(open(os.path.join(os.path.dirname(__file__), "data", "formats",
                                        "sglang-bench-serving.jsonl")).readline())
    assert line["accept_length"] is None
    assert len(im.read(write(tmp_path, "s.jsonl", json.dumps(line) + "\n"))) == 1
    with pytest.raises(im.FormatError, match=r"s2.jsonl:1: speculative decoding \(accept_length 3.21\)"):
        im.read(write(tmp_path, "s2.jsonl", json.dumps(dict(line, accept_length=3.21)) + "\n"))


def test_a_json_integer_past_a_floats_range_is_one_error(tmp_path):
    # a 400-digit avg_ts in a llama-bench -o json file raised OverflowError from math.isfinite (a traceback)
    row = {"model_type": "llama 8B Q4_K - Medium", "gpu_info": "NVIDIA GeForce RTX 3090", "n_prompt": 512, "n_gen": 0,
           "n_depth": 0, "type_k": "f16", "type_v": "f16", "n_ubatch": 512, "flash_attn": False,
           "avg_ts": int("9" * 400), "stddev_ts": 0.0, "avg_ns": 1, "test_time": "2024-01-01T00:00:00Z",
           "model_size": 4920000000, "model_n_params": 8030000000, "backends": "CUDA", "n_gpu_layers": 99}
    p = tmp_path / "lb.json"
    p.write_text(json.dumps([row]))
    with pytest.raises(ValueError, match=r"lb\.json:1: field `avg_ts` must be a finite number, got a 400-digit integer"):
        im.read(str(p))

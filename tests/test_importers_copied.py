"""Results as people paste them after a copy from a rendered page or a forum's editor: non-breaking and
zero-width spaces in the cells, Reddit's editor's markdown escapes (`n\\_ubatch`, `Q4\\_K`), bold cells, an
escaped pipe, two runs' columns side by side, a file saved as UTF-16 (Windows PowerShell's `>`), a serving
block with a blank line between its lines, vLLM's printed arguments. Each reads the same records as the
plain paste, or is one error naming the file and the line; the numbers are invented."""
import pytest

from glmbench.results import importers as im


def write(tmp_path, name, text):
    p = tmp_path / name
    p.write_text(text, encoding="utf-8")
    return str(p)


def plain(recs):
    """The records without where and how they were read."""
    return [{k: v for k, v in r.items() if k not in ("source", "inferred")} for r in recs]


LB = ("$ llama-bench -m Qwen3-32B-Q4_K_M.gguf -ngl 99 -ub 2048 -fa 1 -p 512 -n 128 -d 0,8192\n"
      "ggml_cuda_init: found 1 CUDA devices:\n"
      "  Device 0: NVIDIA GeForce RTX 4090, compute capability 8.9, VMM: yes\n"
      "| model                          |       size |     params | backend    | ngl | n_ubatch | fa |            test |                  t/s |\n"
      "| ------------------------------ | ---------: | ---------: | ---------- | --: | -------: | -: | --------------: | -------------------: |\n"
      "| qwen3 32B Q4_K - Medium        |  18.40 GiB |    32.76 B | CUDA       |  99 |     2048 |  1 |           pp512 |      2570.45 ± 12.76 |\n"
      "| qwen3 32B Q4_K - Medium        |  18.40 GiB |    32.76 B | CUDA       |  99 |     2048 |  1 |           tg128 |         37.71 ± 0.46 |\n"
      "| qwen3 32B Q4_K - Medium        |  18.40 GiB |    32.76 B | CUDA       |  99 |     2048 |  1 |   pp512 @ d8192 |       1965.99 ± 4.39 |\n"
      "| qwen3 32B Q4_K - Medium        |  18.40 GiB |    32.76 B | CUDA       |  99 |     2048 |  1 |   tg128 @ d8192 |         34.50 ± 0.45 |\n"
      "\nbuild: 4be1e7c (6931)\n")

SWEEP = ("Qwen3-32B Q4_K_M on an RTX 4090\n\n"
         "main: n_kv_max = 16896, n_batch = 2048, n_ubatch = 1024, flash_attn = 1, n_gpu_layers = 99, n_threads = 16, "
         "n_threads_batch = 16\n\n"
         "|    PP |     TG |   N_KV |   T_PP s | S_PP t/s |   T_TG s | S_TG t/s |\n"
         "|-------|--------|--------|----------|----------|----------|----------|\n"
         "|   512 |    128 |      0 |    0.199 |  2570.45 |    3.394 |    37.71 |\n"
         "|   512 |    128 |   2048 |    0.213 |  2399.76 |    3.495 |    36.63 |\n")

BATCHED = ("main: n_kv_max = 32768, n_batch = 2048, n_ubatch = 512, flash_attn = 1, is_pp_shared = 0, "
           "n_gpu_layers = 99, n_threads = 16, n_threads_batch = 16\n\n"
           "|    PP |     TG |    B |   N_KV |   T_PP s | S_PP t/s |   T_TG s | S_TG t/s |      T s |    S t/s |\n"
           "|-------|--------|------|--------|----------|----------|----------|----------|----------|----------|\n"
           "|   128 |    128 |    1 |    256 |    0.061 |  2106.79 |    3.520 |    36.37 |    3.580 |    71.50 |\n"
           "|   128 |    128 |    2 |    512 |    0.108 |  2373.95 |    3.589 |    71.33 |    3.697 |   138.50 |\n")


def _table_lines(text, f):
    return "".join(f(ln) if ln.startswith("|") else ln for ln in text.splitlines(keepends=True))


@pytest.mark.parametrize("space", ["\u00a0", "\u202f", "\u2007"])
def test_non_breaking_spaces_in_a_copied_table_read_as_spaces(tmp_path, space):
    # a table copied from a rendered page (or typed in an editor that keeps &nbsp;) has U+00A0 where the cells'
    # padding and the words in a cell ("qwen3 32B Q4_K - Medium", "S_PP t/s") had spaces
    for text in (LB, SWEEP, LB + "\n" + BATCHED):
        want = plain(im.read(write(tmp_path, "plain.md", text)))
        got = plain(im.read(write(tmp_path, "nbsp.md", _table_lines(text, lambda ln: ln.replace(" ", space)))))
        assert got == want


def test_zero_width_spaces_in_a_copied_table_are_dropped(tmp_path):
    want = plain(im.read(write(tmp_path, "plain.md", LB)))
    zw = _table_lines(LB, lambda ln: ln.replace("|  99 |", "|  99\u200b |").replace("CUDA ", "CUDA\u200b"))
    assert plain(im.read(write(tmp_path, "zw.md", zw))) == want


def test_reddit_s_markdown_escapes_read_as_the_characters(tmp_path):
    # Reddit's editor writes `_` and `*` as `\_` and `\*` in the markdown it keeps ("n\_ubatch", "Q4\_K - Medium",
    # "main: n\_kv\_max = ..."): the column, the file type and sweep-bench's settings line are the same
    for text in (LB, SWEEP, BATCHED):
        want = plain(im.read(write(tmp_path, "plain.md", text)))
        got = plain(im.read(write(tmp_path, "reddit.md", text.replace("_", "\\_"))))
        assert got == want
    r = im.read(write(tmp_path, "reddit.md", LB.replace("_", "\\_")))[0]
    assert (r["n_ubatch"], r["weights"], r["model_type"]) == (2048, "Q4_K_M", "qwen3 32B Q4_K - Medium")


def test_bold_cells_read_as_their_text(tmp_path):
    want = plain(im.read(write(tmp_path, "plain.md", LB)))
    bold = LB.replace("2570.45 ± 12.76", "**2570.45 ± 12.76**").replace("37.71 ± 0.46", "**37.71** ± 0.46") \
        .replace("| model  ", "| **model**").replace("|            test |", "| **test** |")
    assert plain(im.read(write(tmp_path, "bold.md", bold))) == want
    want = plain(im.read(write(tmp_path, "plain.md", SWEEP)))
    assert plain(im.read(write(tmp_path, "bold.md", SWEEP.replace("2570.45", "**2570.45**")))) == want


def test_an_escaped_pipe_in_the_ot_column_is_the_pattern_s_pipe(tmp_path):
    # GitHub needs `\|` for a pipe inside a table cell: -ot's regex alternation written so that the table renders
    row = ("| qwen3 32B Q4_K - Medium        |  18.40 GiB |    32.76 B | CUDA       |  99 | "
           "blk\\.(2[0-9]{p}3[0-9])\\.ffn_.*_exps\\.=CPU |           tg128 |         17.71 ± 0.46 |\n")
    head = ("| model                          |       size |     params | backend    | ngl | ot | test | t/s |\n"
            "| --- | ---: | ---: | --- | --: | --- | ---: | ---: |\n")
    (a,) = im.read(write(tmp_path, "raw.md", head + row.format(p="|")))
    (b,) = im.read(write(tmp_path, "esc.md", head + row.format(p="\\|")))
    assert a["tensor_buft_overrides"] == b["tensor_buft_overrides"] == "blk\\.(2[0-9]|3[0-9])\\.ffn_.*_exps\\.=CPU"
    assert plain([a]) == plain([b])


def test_an_en_dash_in_the_file_type_reads_as_llama_bench_s_hyphen(tmp_path):
    # a blog's editor turns " - " into " – ": "Q4_K – Medium" is llama.cpp's "Q4_K - Medium"
    want = plain(im.read(write(tmp_path, "plain.md", LB)))
    assert plain(im.read(write(tmp_path, "dash.md", LB.replace("Q4_K - Medium", "Q4_K \u2013 Medium")))) == want


def test_an_html_plus_minus_entity_reads_as_plus_minus(tmp_path):
    # a table written in HTML-aware markdown, or copied from a page's source: "2570.45 &plusmn; 12.76"
    want = plain(im.read(write(tmp_path, "plain.md", LB)))
    for ent in ("&plusmn;", "&#177;", "&#xB1;"):
        assert plain(im.read(write(tmp_path, "ent.md", LB.replace("±", ent)))) == want


@pytest.mark.parametrize("text,col", [
    (SWEEP.replace("| S_TG t/s |\n|-------|", "| S_TG t/s |   T_PP s | S_PP t/s |\n|-------|---|---|")
     .replace("37.71 |\n", "37.71 | 0.150 | 3413.33 |\n").replace("36.63 |\n", "36.63 | 0.160 | 3200.00 |\n"), "T_PP s"),
    ("llama-bench, master then the PR:\n"
     "| model                   |       size |     params | backend | ngl |  test |             t/s |             t/s |\n"
     "| ----------------------- | ---------: | ---------: | ------- | --: | ----: | --------------: | --------------: |\n"
     "| qwen3 32B Q4_K - Medium |  18.40 GiB |    32.76 B | CUDA    |  99 | pp512 | 2570.45 ± 12.76 | 2870.45 ± 12.76 |\n"
     "| qwen3 32B Q4_K - Medium |  18.40 GiB |    32.76 B | CUDA    |  99 | tg128 |    37.71 ± 0.46 |    39.71 ± 0.46 |\n",
     "t/s"),
])
def test_two_runs_side_by_side_under_one_header_is_an_error(tmp_path, text, col):
    # two runs' columns pasted side by side under one header ("| ... | S_PP t/s | ... | S_PP t/s |", main and a PR):
    # which of them a record takes cannot be told; silently the right-hand one was read
    p = write(tmp_path, "side.md", text)
    with pytest.raises(im.FormatError) as e:
        im.read(p)
    line = text.splitlines().index(next(ln for ln in text.splitlines() if ln.startswith("|"))) + 1
    assert f"side.md:{line}:" in str(e.value) and repr(col) in str(e.value)


@pytest.mark.parametrize("bom,enc", [("\ufeff", "utf-16-le"), ("\ufeff", "utf-16-be"), ("", "utf-16")])
def test_a_utf16_file_with_a_byte_order_mark_reads_as_its_text(tmp_path, bom, enc):
    # Windows PowerShell 5's `llama-bench ... > out.md` (and Out-File) writes UTF-16 LE with a byte-order mark
    want = plain(im.read(write(tmp_path, "plain.md", LB)))
    p = tmp_path / "ps.md"
    p.write_bytes((bom + LB.replace("\n", "\r\n")).encode(enc))     # ("utf-16" writes its own mark)
    before = p.read_bytes()
    assert plain(im.read(str(p))) == want
    assert p.read_bytes() == before


def test_utf16_without_a_byte_order_mark_reads_as_its_text(tmp_path):
    # (the zero byte beside each ASCII character tells it); a binary file is still no text
    want = plain(im.read(write(tmp_path, "plain.md", LB)))
    for enc in ("utf-16-le", "utf-16-be"):
        p = tmp_path / "nobom.md"
        p.write_bytes(LB.encode(enc))
        assert plain(im.read(str(p))) == want
    p.write_bytes(bytes(range(128, 256)) * 8)
    with pytest.raises(im.FormatError, match=r"nobom\.md:1: not a text file \(not UTF-8\)"):
        im.read(str(p))


def test_calibrate_reads_a_utf16_paste_as_compare_does(tmp_path):
    from glmbench.predict import calibrate
    p = tmp_path / "ps.md"
    p.write_bytes(("\ufeff" + LB).encode("utf-16-le"))
    got = [r for _, r in calibrate.read_measured(str(p))]
    assert plain(got) == plain(im.read(write(tmp_path, "plain.md", LB)))
    p.write_bytes(bytes(range(128, 256)) * 8)
    with pytest.raises(calibrate.CalibrationError, match=r"ps\.md:1: not a text file"):
        calibrate.read_measured(str(p))


SERVE_BLOCK = ("============ Serving Benchmark Result ============\n"
               "Successful requests:                     512\n"
               "Benchmark duration (s):                  62.51\n"
               "Total input tokens:                      524288\n"
               "Total generated tokens:                  131072\n"
               "Request throughput (req/s):              8.19\n"
               "Request goodput (req/s):                 7.95\n"
               "Output token throughput (tok/s):         2096.84\n"
               "Peak output token throughput (tok/s):    3264.00\n"
               "Peak concurrent requests:                64.00\n"
               "Total Token throughput (tok/s):          10484.18\n"
               "---------------Time to First Token----------------\n"
               "Mean TTFT (ms):                          412.33\n"
               "Median TTFT (ms):                        380.12\n"
               "P99 TTFT (ms):                           1203.55\n"
               "-----Time per Output Token (excl. 1st token)------\n"
               "Mean TPOT (ms):                          28.91\n"
               "==================================================\n")
CLIENT = ("$ vllm bench serve --model Qwen/Qwen3-30B-A3B --dataset-name random --random-input-len 1024 "
          "--random-output-len 256 --num-prompts 512 --max-concurrency 64\n")


def test_a_serving_block_with_blank_lines_between_its_lines_reads_whole(tmp_path):
    # Reddit's editor (and some chat apps) keep a line break only as a blank line: the block's lines one apart
    want = plain(im.read(write(tmp_path, "plain.log", CLIENT + SERVE_BLOCK)))
    spaced = CLIENT + SERVE_BLOCK.replace("\n", "\n\n")
    assert plain(im.read(write(tmp_path, "spaced.log", spaced))) == want
    one = CLIENT + SERVE_BLOCK.replace("512\nBenchmark", "512\n\nBenchmark")
    assert plain(im.read(write(tmp_path, "one.log", one))) == want
    # prose after a block without its closing rule is not read as the block's
    cut = CLIENT + SERVE_BLOCK.replace("=" * 50 + "\n", "") + "\nNote: a warm cache.\n\nMean TPOT (ms): 99.0\n"
    (r,) = im.read(write(tmp_path, "cut.log", cut))
    assert r["tpot_s"] == pytest.approx(0.02891)


def test_vllm_s_printed_arguments_with_sharegpt_output_len_are_vllm_s(tmp_path):
    # vLLM's benchmark_serving.py (v0.5.x on) and `vllm bench serve` have --sharegpt-output-len too: its Namespace
    # line, which names every argument, is vLLM's client, not SGLang's (the runtime model is vLLM's)
    ns = ("Namespace(backend='vllm', base_url=None, host='localhost', port=8000, endpoint='/v1/completions', "
          "dataset=None, dataset_name='random', dataset_path=None, max_concurrency=64, model='Qwen/Qwen3-30B-A3B', "
          "tokenizer=None, best_of=1, use_beam_search=False, num_prompts=512, logprobs=None, request_rate=inf, "
          "burstiness=1.0, seed=0, trust_remote_code=False, disable_tqdm=False, profile=False, save_result=False, "
          "metadata=None, result_dir=None, result_filename=None, ignore_eos=False, percentile_metrics='ttft,tpot,itl', "
          "metric_percentiles='99', goodput=None, sonnet_input_len=550, sonnet_output_len=150, sonnet_prefix_len=200, "
          "sharegpt_output_len=None, random_input_len=1024, random_output_len=256, random_range_ratio=1.0, "
          "random_prefix_len=0, hf_subset=None, hf_split=None, hf_output_len=None, tokenizer_mode='auto', "
          "served_model_name=None, lora_modules=None)\n")
    from glmbench.predict import runtime
    (r,) = im.read(write(tmp_path, "ns.log", ns + SERVE_BLOCK))
    assert r["tool"].startswith("vllm") and runtime.from_record(r) == "vllm"
    assert (r["max_concurrency"], r["n_streams"], r["model"]) == (64, 64, "qwen3-30b-a3b")
    # SGLang's own Namespace keeps its fields only SGLang has
    sg = ns.replace("'vllm'", "'sglang'").replace("ignore_eos=False", "extra_request_body=None, disable_stream=False")
    (r,) = im.read(write(tmp_path, "sg.log", sg + SERVE_BLOCK))
    assert r["tool"].startswith("sglang")


def _html(text, one_line=False):
    """LB's table as an HTML <table> (GitHub renders one in a comment): a cell per line in its header row, a row
    per line below it; or the whole table on one line."""
    rows = [ln for ln in text.splitlines() if ln.startswith("|") and "---" not in ln]
    cells = [[c.strip() for c in r.strip().strip("|").split("|")] for r in rows]
    head = "  <tr>\n" + "".join(f"    <th>{c}</th>\n" for c in cells[0]) + "  </tr>\n"
    body = "".join("  <tr>" + "".join(f"<td>{c.replace('±', '&plusmn;')}</td>" for c in r) + "</tr>\n"
                   for r in cells[1:])
    table = "<table>\n<thead>\n" + head + "</thead>\n<tbody>\n" + body + "</tbody>\n</table>\n"
    if one_line:
        table = table.replace("\n", "") + "\n"
    lines = text.splitlines()
    first = next(i for i, ln in enumerate(lines) if ln.startswith("|"))
    after = [ln for ln in lines[first:] if not ln.startswith("|")]
    return "".join(ln + "\n" for ln in lines[:first]) + table + "".join(ln + "\n" for ln in after)


def test_an_html_table_reads_as_its_markdown(tmp_path):
    # a comment's table written in HTML (<table>, <tr>, <th> / <td>, entities, a <b> cell): each row at its <tr>'s line
    want = plain(im.read(write(tmp_path, "plain.md", LB)))
    html = _html(LB).replace("<td>2570.45", "<td><b>2570.45</b>")
    got = im.read(write(tmp_path, "html.md", html))
    assert plain(got) == want
    first = html.splitlines().index(next(ln for ln in html.splitlines() if "<td>" in ln)) + 1
    assert got[0]["source"].endswith(f"html.md:{first}")
    # a whole table on one line has no line per row: an error naming it, not a silent miss
    with pytest.raises(im.FormatError, match=r"one\.md:4: .*HTML table"):
        im.read(write(tmp_path, "one.md", _html(LB, one_line=True)))

"""The importer's shortcuts for large files (glmbench/results/importers.py) read what the long way reads:
gpus_in's count words looked for just before a number (_word_before), the pasted-format checks skipped where
their words are absent (_DETECT_WORDS), the per-line fast paths, the remembered quant and backend names."""
import re
import time

import pytest

from glmbench.results import importers as im


def test_word_before_is_the_search_of_the_text_before():
    tests = ["we ran dual  3090", "xdual 3090", "a pair  of 3090", "A PAIR_-of 3090", "on a\n3090", "my 3090",
             "tw\u0131n 3090", "\u017fix 3090", "dual\n", "Dual-", "two two ", "  ", "", "a", "one\t", "1dual ",
             "\u00e9 dual ", "four\u00a0 3090", "pair of\n\n two 4090"]
    for t in tests:
        for rx in (im._COUNT_BEFORE, im._ONE_BEFORE):
            for at in range(len(t) + 1):
                a, b = rx.search(t[:at]), im._word_before(rx, t, at)
                assert (a is None) == (b is None), (t, at)
                if a is not None:
                    assert (a.span(), a.groups()) == (b.span(), b.groups()), (t, at)


def test_gpus_in_counts_and_bare_numbers():
    assert im.gpus_in("ran on dual 3090s") == [("RTX 3090", 2)]
    assert im.gpus_in("my 4090 at home") == [("RTX 4090", None)]
    assert im.gpus_in("a 4090-token prompt") == []
    assert im.gpus_in("two RTX 3090 and an RTX 4090") == [("RTX 3090", 2), ("RTX 4090", None)]
    assert im.gpus_in("RTX 3090 (x2)") == [("RTX 3090", 2)]


def test_gpus_in_is_linear_in_bare_numbers():
    """A table of numbers that look like GeForce ones (3090, 2080, ...): each was checked for a count word by
    searching all the text before it (4,000 of them took ~20 s; 20,000, 9 minutes)."""
    t = "| 3090 | 4090 | 2080 | 5090 |\n" * 1000
    t0 = time.perf_counter()
    assert im.gpus_in(t) == []
    assert time.perf_counter() - t0 < 3.0


@pytest.mark.parametrize("text,fmt", [
    ("AVG LATENCY: 1.50 SECONDS\n", "vllm-offline"),
    ("Avg latency: 1.5 seconds\n", "vllm-offline"),
    ("THROUGHPUT: 2.0 requests/s, 100.0 total tokens/s\n", "vllm-offline"),
    ("Prefill. latency: 0.10 s, throughput: 5000.0 token/s\n", "sglang-one-batch"),
    ("llama_print_timings:  PROMPT EVAL TIME =  100.00 ms /  512 tokens (0.20 ms per token, 5120.00 tokens per second)\n",
     "llama-timings"),
    ("eval rate:            50.00 tokens/s\n", "ollama-verbose"),
    ("EVAL RATE:            50.00 tokens/s\n", "ollama-verbose"),
    ("prompt eval rate:     500.00 tokens/s\n", None),
    ("Benchmark Completed - v1.80 Results:\n", "koboldcpp-benchmark"),
    ("============ Serving Benchmark Result ============\n", "vllm-console"),
    ("====== Offline Throughput Benchmark Result =======\n", "sglang-offline"),
    ("just prose, no result\n", None),
])
def test_detect_pasted_words(text, fmt):
    """Each check runs only where its word is in the text, in any case its pattern takes."""
    assert im._detect_pasted(text) == fmt
    for key, (word, folded) in im._DETECT_WORDS.items():
        assert word == word.lower() or not folded
        if folded:
            assert not set(word) & set("isk"), word     # letters re.I matches by a non-ASCII one too


def test_line_fast_paths_change_nothing():
    for ln in ["| model | size |", "> | a | b |", "n\\_ubatch", "qwen3\u00a032B", "a\u200bb", "plain", "", ">>",
               "  > quoted", "x > y"]:
        slow = im._MD_ESCAPE.sub(r"\1", im._ZERO_WIDTH.sub("", im._ODD_SPACE.sub(" ", ln)))
        assert im._plain_line(ln) == slow
        assert (im._QUOTE.sub("", ln) if ">" in ln else ln) == im._QUOTE.sub("", ln)


def test_remembered_names_are_the_names():
    for name in ["Q4_K - Medium", "q4_k_m", "IQ4_XS - 4.25 bpw", "all F32", "MXFP4 MoE", "ud-q4_k_xl", "nothing", "BF16"]:
        assert im.quant_name(name) == im._quant_name(name) == im.quant_name(name)
    assert im.quant_name(None) is None and im.quant_name("") is None
    for v in ["CUDA", "cuda,blas", "Vulkan,CPU", "CPU", "CUDA,RPC", "metal+blas"]:
        assert im._backend_name(v) == im._backend_name_of(v) == im._backend_name(v)
    assert im._backend_name(None) is None


def test_rig_answers_are_copies():
    a = im._rig("NVIDIA GeForce RTX 4090, NVIDIA GeForce RTX 4090", "AMD Ryzen", "auto", "layer")
    a["device"] = "changed"
    b = im._rig("NVIDIA GeForce RTX 4090, NVIDIA GeForce RTX 4090", "AMD Ryzen", "auto", "layer")
    assert b["device"] != "changed" and b["n_cards"] == 2
    assert b == im._rig_of("NVIDIA GeForce RTX 4090, NVIDIA GeForce RTX 4090", "AMD Ryzen", "auto", "layer")
    assert not re.search("changed", str(im._RIG_MEMO))


# ---- session 63: a 100,000-record llama-bench JSON file (`glmbench compare FILE`: ~36 s, two files ~54 s) -------
def _bench_json(n, *, same_point=False):
    """llama-bench -o json's text of n records (pretty-printed as it writes them): each at its own depth, or all
    at one point on several cards (a scoreboard's shape)."""
    import json
    base = {"build_commit": "4be1e7c", "build_number": 9731, "cpu_info": "AMD Ryzen 9 7950X 16-Core Processor",
            "gpu_info": "NVIDIA GeForce RTX 4090", "backends": "CUDA", "model_filename": "/m/GLM-4.7-Flash-Q4_K_M.gguf",
            "model_type": "deepseek2 30B.A3B Q4_K - Medium", "model_size": 18315620352, "model_n_params": 29943390208,
            "n_batch": 2048, "n_ubatch": 512, "n_threads": 16, "type_k": "f16", "type_v": "f16", "n_gpu_layers": 99,
            "flash_attn": 1, "devices": "auto", "n_prompt": 512, "n_gen": 0, "n_depth": 0,
            "test_time": "2026-07-27T14:02:51Z", "avg_ns": 126995368, "stddev_ns": 402531, "avg_ts": 4031.675437,
            "stddev_ts": 12.759871, "samples_ns": [126881606, 127606092], "samples_ts": [4035.26, 4012.35]}
    cards = ["NVIDIA GeForce RTX 4090", "NVIDIA GeForce RTX 3090", "NVIDIA H100 80GB HBM3"]
    rows = []
    for i in range(n):
        r = dict(base, avg_ts=round(4000 + i * 0.01, 6), test_time=f"2026-07-27T14:{i // 60 % 60:02d}:{i % 60:02d}Z")
        if same_point:
            r["gpu_info"] = cards[i % 3]
        else:
            r["n_depth"] = 256 * i
        rows.append(r)
    return json.dumps(rows, indent=2)


def test_once_each_compares_a_record_only_with_its_possible_repeats(monkeypatch):
    """Many runs at one point (a scoreboard's cards, a run per test_time): each record was compared with every earlier
    one of its point (_same_result n^2 / 2 times: 5,000 records took ~50 s, 10,000 over two minutes). A repeat is
    still found and kept once."""
    calls = []
    real = im._same_result
    monkeypatch.setattr(im, "_same_result", lambda q, r: calls.append(1) or real(q, r))
    text = _bench_json(300, same_point=True)
    notices = []
    recs = im.read_text(text, "s.json", notices=notices)
    assert len(recs) == 300 and len(calls) == 0
    assert not any("pasted twice" in n for n in notices)
    twice = text.rstrip()[:-1].rstrip() + ",\n" + text.strip()[1:]      # the array's records twice, in one list
    calls.clear()
    notices = []
    again = im.read_text(twice, "s.json", notices=notices)
    assert [r["avg_ts"] for r in again] == [r["avg_ts"] for r in recs]
    assert any("300 results pasted twice" in n for n in notices)
    assert len(calls) == 300        # each repeat checked against its one first


def test_log_start_rules_out_only_lines_that_are_no_log_line(monkeypatch):
    """_without_log_lines's look over the whole text (_LOG_START, _LOG_STAMP) finds every line LOG_LINE matches; a
    JSON file's lines are then not matched one by one (5.6 M calls of LOG_LINE.match for 100,000 records)."""
    lines = ["llama_model_loader: loaded meta data", "  \tggml_cuda_init: found 1 CUDA devices:", "Device 0: NVIDIA",
             "0.00.123.456 I main: build = 1", "0.00.123.456\tW llama_foo: x", "I print_info: arch = deepseek2",
             "  ........................", "main: n_kv_max = 4096", "\u00a0warmup: x", "Warming up", "W srv: x",
             "ggml_vulkan: Found 1", "\x0cllama-bench: benchmark 1/2: prompt run 1/5", "que: x", "load_tensors: x"]
    for ln in lines:
        assert im.LOG_LINE.match(ln), ln
        for before in ("", "x\n", "  {\n"):
            t = before + ln + "\nafter"
            assert im._LOG_START.search("\n" + t) or im._LOG_STAMP.search(t), repr(t)
    text = _bench_json(50)
    seen = []

    class Counting:
        def match(self, ln):
            seen.append(ln)
            return im.LOG_LINE_REAL.match(ln)
    monkeypatch.setattr(im, "LOG_LINE_REAL", im.LOG_LINE, raising=False)
    monkeypatch.setattr(im, "LOG_LINE", Counting())
    assert im._without_log_lines(text) is text
    assert seen == []
    with_log = text.replace('[\n', '[\nllama_model_loader: loaded meta data\n', 1)
    out = im._without_log_lines(with_log)
    assert out.split("\n")[1] == "" and out.count("\n") == with_log.count("\n") and seen


def test_unquote_tabs_shortcuts_read_the_lines_as_every_line_pass_does(monkeypatch):
    """An ASCII text without a backslash, quote, pipe, tab or tag is its lines as they are (no call of _plain_line per
    line); every other text is read as before."""
    def slow(text):
        out, heads = im._tab_tables(im._outer_pipes([im._plain_line(im._QUOTE.sub("", ln) if ">" in ln else ln)
                                                     for ln in text.splitlines()]))
        return im._html_tables(out, heads)
    texts = ["plain\r\nlines\n\n", "> | model | test | t/s |\n> |---|---|---|\n> | a | pp512 | 1.0 |",
             "model | test | t/s\n---|---|---\na | pp512 | 1.0", "model\ttest\tt/s\na\tpp512\t1.0\n",
             "<table><tr><th>model</th><th>test</th><th>t/s</th></tr>\n<tr><td>a</td><td>pp512</td><td>1</td></tr></table>",
             "n\\_ubatch 512", "qwen3\u00a032B\u200b", "x > y\n>> z", "a\x0bb\x1cc\u2028d", _bench_json(3)]
    for t in texts:
        assert im._unquote_tabs(t) == slow(t), t
    calls = []
    real = im._plain_line
    monkeypatch.setattr(im, "_plain_line", lambda ln: calls.append(ln) or real(ln))
    im._unquote_tabs(_bench_json(20))
    assert calls == []


def test_detect_pasted_words_in_the_text_as_in_its_lines():
    """The words _detect_pasted looks for are looked for in the text itself where _unquote_tabs rewrites none of
    its lines (CRLF, a vertical tab, a form feed: line ends its join writes as "\\n")."""
    assert im._detect_pasted("x\r\nAvg latency: 1.5 seconds\r\n") == "vllm-offline"
    assert im._detect_pasted("x\x0bAvg latency: 1.5 seconds\x0c") == "vllm-offline"
    assert im._detect_pasted("avg\r\nlatency: 1.5 seconds\n") is None
    assert im._detect_pasted("eval\x0bt\n") is None
    assert im._detect_pasted(_bench_json(5)) is None


def test_detect_json_decodes_a_list_once(monkeypatch):
    """detect() decoded a JSON list twice (for a second list after it, then as a whole): once now, the same
    format, and the same error for a bad file."""
    calls = []
    real = im.json.loads
    monkeypatch.setattr(im.json, "loads", lambda *a, **k: calls.append(1) or real(*a, **k))
    assert im.detect(_bench_json(5), "a.json") == "llama-bench-json"
    assert im.detect('[{"evidence": "measured"}]\n\n', "a.json") == "glmbench"
    assert calls == []
    with pytest.raises(im.FormatError, match=r"a\.json:2: not valid JSON \(Extra data\)"):
        im.detect('[{"evidence": "measured"}]\n{"x": 1}', "a.json")
    with pytest.raises(im.FormatError, match=r"a\.json:1: not valid JSON"):
        im.detect('[{"evidence": "measured"},]', "a.json")


def test_num_on_integers_as_before():
    """_num's shortcut for a JSON integer returns what its checks return: a float unless asked for a whole number,
    the same errors past 2^53, below the minimum, not positive."""
    ctx = im._Context("f.json", "llama-bench-json", None, None)
    assert im._num(ctx, 3, "n", 5) == 5.0 and type(im._num(ctx, 3, "n", 5)) is float
    assert im._num(ctx, 3, "n", 5, integer=True) == 5 and type(im._num(ctx, 3, "n", 5, integer=True)) is int
    assert im._num(ctx, 3, "n", 2 ** 53, integer=True) == 2 ** 53
    for v, kw, msg in [(2 ** 53 + 1, {"integer": True}, "whole number"), (-1, {"minimum": 0}, ">= 0"),
                       (0, {"positive": True}, "> 0")]:
        with pytest.raises(im.FormatError, match=msg):
            im._num(ctx, 3, "n", v, **kw)


def test_summarize_keys_each_record_once(monkeypatch):
    """`compare FILE` keyed every record twice (for repeated_points, then for its run number): once now, the same
    rows and run numbers."""
    from glmbench.results import compare as cmp
    recs = im.read_text(_bench_json(40, same_point=True), "s.json")
    before = cmp.summarize(recs)
    calls = []
    real = cmp._run_key
    monkeypatch.setattr(cmp, "_run_key", lambda r: calls.append(1) or real(r))
    assert cmp.summarize(recs) == before
    assert len(calls) == len(recs)
    assert [r["run"] for r in before[0]][:6] == [1, 1, 1, 2, 2, 2] and cmp.repeated_points(recs) == 3


def test_cli_read_pauses_the_collector(tmp_path, monkeypatch):
    """The CLI reads a results file with the cyclic collector off (and what it read frozen out of its passes
    after): its state afterwards is what it was, the records the same."""
    import gc
    from glmbench import cli
    p = tmp_path / "r.json"
    p.write_text(_bench_json(5))
    states = []
    real = im.read
    monkeypatch.setattr(im, "read", lambda *a, **k: states.append(gc.isenabled()) or real(*a, **k))
    assert gc.isenabled()
    try:
        recs = cli._read(str(p))
        assert states == [False] and gc.isenabled() and gc.get_freeze_count() > 0
        assert recs == real(str(p))
        gc.disable()
        cli._read(str(p))
        assert states == [False, False] and not gc.isenabled()
    finally:
        gc.enable()
        gc.unfreeze()

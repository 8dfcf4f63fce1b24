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

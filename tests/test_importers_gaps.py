"""Layouts the importer met in pastes: vLLM's offline benchmarks' --output-json files, a llama-bench result pasted
twice, SGLang's / vLLM's embedding serving runs, llama-batched-bench's jsonl without is_tg_separate. Every layout
here follows the tool's printing code (named in each test); the numbers are invented."""
import json

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

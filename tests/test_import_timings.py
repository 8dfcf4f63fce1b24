"""llama.cpp's timing lines as people paste them (glmbench.results.importers, format `llama-timings`):
llama-cli's `llama_perf_context_print:` lines (`llama_print_timings:` before late 2024), llama-server's
bare `prompt eval time` / `eval time` lines after its `slot print_timing` line. The layouts are the
tools' own (llama.cpp's common/log and tools/server printf formats); the numbers are invented."""
import pytest

from glmbench import cli
from glmbench.results import importers as im

CLI_LOG = """$ ./llama-cli -m Meta-Llama-3.1-8B-Instruct-Q4_K_M.gguf -ngl 99 -fa on -c 8192 -p "Write a story" -n 256
build: 6512 (1d36b367) with cc (Ubuntu 13.2.0) 13.2.0 for x86_64-linux-gnu
ggml_cuda_init: found 1 CUDA devices:
  Device 0: NVIDIA GeForce RTX 3090, compute capability 8.6, VMM: yes
llama_model_loader: loaded meta data with 29 key-value pairs and 292 tensors from Meta-Llama-3.1-8B-Instruct-Q4_K_M.gguf (version GGUF V3 (latest))
print_info: file type   = Q4_K - Medium
print_info: model params = 8.03 B

llama_perf_sampler_print:    sampling time =      21.05 ms /   268 runs   (    0.08 ms per token, 12731.59 tokens per second)
llama_perf_context_print:        load time =    2317.51 ms
llama_perf_context_print: prompt eval time =     130.00 ms /   520 tokens (    0.25 ms per token,  4000.00 tokens per second)
llama_perf_context_print:        eval time =    2040.00 ms /   255 runs   (    8.00 ms per token,   125.00 tokens per second)
llama_perf_context_print:       total time =    2200.43 ms /   775 tokens
"""

SERVER_LOG = """llama-server -m /models/Qwen3-30B-A3B-Q4_K_M.gguf -ngl 99 -c 32768 -fa on --port 8080
ggml_cuda_init: found 2 CUDA devices:
  Device 0: NVIDIA GeForce RTX 4090, compute capability 8.9, VMM: yes
  Device 1: NVIDIA GeForce RTX 4090, compute capability 8.9, VMM: yes
print_info: arch             = qwen3moe
print_info: file type        = Q4_K - Medium
print_info: model params     = 30.53 B
slot print_timing: id  0 | task 0 | 
prompt eval time =    1024.00 ms /  4096 tokens (    0.25 ms per token,  4000.00 tokens per second)
       eval time =    4000.00 ms /   512 tokens (    7.81 ms per token,   128.00 tokens per second)
      total time =    5024.00 ms /  4608 tokens
slot print_timing: id  0 | task 1 | 
prompt eval time =     512.00 ms /  2048 tokens (    0.25 ms per token,  4000.00 tokens per second)
       eval time =    1000.00 ms /   120 tokens (    8.33 ms per token,   120.00 tokens per second)
      total time =    1512.00 ms /  2168 tokens
"""


def _write(tmp_path, name, text):
    p = tmp_path / name
    p.write_text(text)
    return str(p)


def test_llama_cli_timings_read_as_pp_and_tg_at_the_prompt_s_depth(tmp_path):
    notes = []
    recs = im.read(_write(tmp_path, "run.log", CLI_LOG), notices=notes)
    assert im.detect(CLI_LOG) == "llama-timings"
    pp, tg = recs
    assert (pp["test"], pp["n_prompt"], pp["n_depth"], pp["n_gen"]) == ("pp", 520, 0, 0)
    assert pp["avg_ts"] == pytest.approx(520 / 0.130) and pp["seconds"] == pytest.approx(0.130)
    # 255 generated steps after the 520-token prompt: tg255 at depth 520, the mean over the steps
    assert (tg["test"], tg["n_gen"], tg["n_depth"], tg["n_prompt"]) == ("tg", 255, 520, 0)
    assert tg["avg_ts"] == pytest.approx(255 / 2.040)
    for r in recs:
        assert (r["model"], r["hardware"], r["n_cards"], r["weights"], r["flash_attn"]) == (
            "llama-3.1-8b", "rtx-3090", 1, "Q4_K_M", 1)
        assert r["tool"] == "llama-cli (timings)" and r["evidence"] == "measured"
        assert "load log" in r["inferred"]["model"] and "command line" in r["inferred"]["flash_attn"]
    assert pp["source"].endswith("run.log:11") and tg["source"].endswith("run.log:12")
    assert notes == []          # nothing assumed: a fresh context, everything stated


def test_llama_server_timings_each_request_and_the_cached_prefix_notice(tmp_path):
    notes = []
    recs = im.read(_write(tmp_path, "server.log", SERVER_LOG), notices=notes)
    assert [(r["test"], r["n_prompt"] or r["n_gen"], r["n_depth"]) for r in recs] == [
        ("pp", 4096, 0), ("tg", 512, 4096), ("pp", 2048, 0), ("tg", 120, 2048)]
    for r in recs:
        assert (r["hardware"], r["n_cards"], r["split"], r["tool"]) == ("rtx-4090", 2, "layer", "llama-server (timings)")
        # arch + params fit Qwen3-30B-A3B and its Coder fine-tune: the command line's model file names which
        assert r["model"] == "qwen3-30b-a3b" and "command line's model" in r["inferred"]["model"]
    assert any("cached prefix" in n for n in notes)


def test_old_llama_print_timings_and_flash_attention_by_build(tmp_path):
    text = ("main: build = 2833 (abcdef12)\n"
            "./main -m models/llama-2-7b.Q4_0.gguf -ngl 99 -n 128 -p hello\n"
            "  Device 0: NVIDIA GeForce RTX 3060, compute capability 8.6, VMM: yes\n"
            "llama_print_timings: prompt eval time =      50.00 ms /   100 tokens (    0.50 ms per token,  2000.00 tokens per second)\n"
            "llama_print_timings:        eval time =    1270.00 ms /   127 runs   (   10.00 ms per token,   100.00 tokens per second)\n")
    recs = im.read(_write(tmp_path, "llama-2-7b-q4_0-3060.txt", text))
    assert [r["test"] for r in recs] == ["pp", "tg"]
    for r in recs:
        assert (r["model"], r["hardware"], r["weights"]) == ("llama-2-7b", "rtx-3060", "q4_0")
        assert r["flash_attn"] == 0 and "build 2833" in r["inferred"]["flash_attn"]


def test_quoted_and_fenced_pastes_read_alike(tmp_path):
    quoted = "".join("> " + ln + "\n" for ln in CLI_LOG.splitlines())
    fenced = "Here is what I got:\n\n```\n" + CLI_LOG + "```\n"
    plain = [(r["test"], round(r["avg_ts"], 6)) for r in im.read(_write(tmp_path, "a.log", CLI_LOG))]
    assert [(r["test"], round(r["avg_ts"], 6)) for r in im.read(_write(tmp_path, "b.md", quoted))] == plain
    assert [(r["test"], round(r["avg_ts"], 6)) for r in im.read(_write(tmp_path, "c.md", fenced))] == plain


def test_lines_that_are_no_speed_are_left_out_with_a_notice(tmp_path):
    notes = []
    lone = ("  Device 0: NVIDIA GeForce RTX 3090, compute capability 8.6, VMM: yes\n"
            "llama_perf_context_print:        eval time =    1000.00 ms /   100 runs   (   10.00 ms per token,   100.00 tokens per second)\n")
    with pytest.raises(im.FormatError, match="holds no records"):
        im.read(_write(tmp_path, "llama-3.1-8b.log", lone), notices=notes)
    assert any("the depth it ran at is not known" in n for n in notes)
    notes = []
    zero = CLI_LOG.replace("2040.00 ms /   255 runs   (    8.00 ms per token,   125.00 tokens per second)",
                           "   0.00 ms /     0 runs   (     nan ms per token,      nan tokens per second)")
    recs = im.read(_write(tmp_path, "z.log", zero), notices=notes)
    assert [r["test"] for r in recs] == ["pp"] and any("is no speed" in n for n in notes)


def test_prose_naming_llama_server_is_no_command_line(tmp_path):
    # a llama-bench table after prose that mentions llama-server: the table keeps its own command line
    text = ("$ llama-bench -m Meta-Llama-3.1-8B-Instruct-Q4_K_M.gguf -fa 1\n"
            "I also tried llama-server, it felt the same.\n"
            "  Device 0: NVIDIA GeForce RTX 4090, compute capability 8.9, VMM: yes\n"
            "| model                          |       size |     params | backend    | ngl |            test |                  t/s |\n"
            "| ------------------------------ | ---------: | ---------: | ---------- | --: | --------------: | -------------------: |\n"
            "| llama 8B Q4_K - Medium         |   4.58 GiB |     8.03 B | CUDA       |  99 |           tg128 |        150.00 ± 0.10 |\n")
    (r,) = im.read(_write(tmp_path, "t.md", text))
    assert r["flash_attn"] == 1 and "llama-bench" in r["command"]


def test_compare_shows_a_pasted_log(tmp_path, capsys):
    p = _write(tmp_path, "run.log", CLI_LOG)
    assert cli.main(["compare", p]) == 0
    out = capsys.readouterr().out
    assert "pp520" in out and "tg255" in out and "llama-3.1-8b" in out


def test_a_2024_server_s_json_log_lines(tmp_path):
    # llama-server of 2024 logged JSON lines: the timing text in "msg", the decode line named "generation eval"
    text = ('{"tid":"140","timestamp":1718000000,"level":"INFO","function":"main","line":3000,"msg":"model loaded"}\n'
            '{"tid":"140","timestamp":1718000100,"level":"INFO","function":"print_timings","line":313,"msg":"prompt eval '
            'time     =     256.00 ms /  1024 tokens (    0.25 ms per token,  4000.00 tokens per second)","id_slot":0}\n'
            '{"tid":"140","timestamp":1718000100,"level":"INFO","function":"print_timings","line":327,"msg":"generation '
            'eval time =    1000.00 ms /   100 runs   (   10.00 ms per token,   100.00 tokens per second)","id_slot":0}\n')
    recs = im.read(_write(tmp_path, "Meta-Llama-3-8B-Instruct.Q4_K_M_rtx4090.log", text))
    assert [(r["test"], r["n_prompt"] or r["n_gen"], r["n_depth"], r["avg_ts"]) for r in recs] == [
        ("pp", 1024, 0, pytest.approx(4000.0)), ("tg", 100, 1024, pytest.approx(100.0))]
    assert {(r["model"], r["weights"], r["hardware"], r["tool"]) for r in recs} == {
        ("llama-3-8b", "Q4_K_M", "rtx-4090", "llama-server (timings)")}


def _response(**timings):
    import json
    t = {"prompt_n": 1024, "prompt_ms": 800.0, "prompt_per_token_ms": 0.78, "prompt_per_second": 1280.0,
         "predicted_n": 256, "predicted_ms": 8000.0, "predicted_per_token_ms": 31.25, "predicted_per_second": 32.0}
    t.update(timings)
    return json.dumps({"index": 0, "content": "Once upon a time", "model": "/models/Qwen3-32B-Q4_K_M.gguf",
                       "stop": True, "timings": t}, indent=2)


def test_llama_server_response_timings_with_the_cached_prefix(tmp_path):
    """A llama-server response's `timings`: prompt_n ingested on top of cache_n reused tokens (pp @ d
    cache_n), then predicted_n generated (tg @ d cache_n + prompt_n); pasted alone or in a ```json fence."""
    text = _response(cache_n=2048)
    assert im.detect(text) == "llama-server-json"
    pp, tg = im.read(_write(tmp_path, "resp_rtx-3090.json", text))
    assert (pp["test"], pp["n_prompt"], pp["n_depth"], pp["avg_ts"]) == ("pp", 1024, 2048, pytest.approx(1280.0))
    assert (tg["test"], tg["n_gen"], tg["n_depth"], tg["avg_ts"]) == ("tg", 256, 3072, pytest.approx(32.0))
    for r in (pp, tg):
        assert (r["model"], r["weights"], r["hardware"], r["n_cards"]) == ("qwen3-32b", "Q4_K_M", "rtx-3090", 1)
        assert "response's model" in r["inferred"]["model"]
    fenced = im.read(_write(tmp_path, "resp_RTX4090.md", "My server said:\n```json\n" + text + "\n```\n"))
    assert [(r["test"], r["n_depth"], r["hardware"]) for r in fenced] == [("pp", 2048, "rtx-4090"), ("tg", 3072, "rtx-4090")]


def test_llama_server_response_without_cache_n_or_card_says_so(tmp_path):
    notes = []
    recs = im.read(_write(tmp_path, "resp.json", _response()), notices=notes)
    assert [(r["test"], r["n_depth"]) for r in recs] == [("pp", 0), ("tg", 1024)]
    assert any("without cache_n" in n for n in notes) and any("does not name it" in n for n in notes)
    assert "hardware" not in recs[0]
    with pytest.raises(im.FormatError, match="timings.prompt_ms"):
        im.read(_write(tmp_path, "bad.json", _response(prompt_ms="fast")))


OLLAMA = """$ ollama run qwen3:30b-a3b --verbose
>>> Write a haiku about GPUs.
Silicon rivers...

total duration:       2.517283917s
load duration:        21.483ms
prompt eval count:    18 token(s)
prompt eval duration: 45ms
prompt eval rate:     400.00 tokens/s
eval count:           312 token(s)
eval duration:        2.4s
eval rate:            130.00 tokens/s
"""


def test_ollama_verbose_statistics(tmp_path):
    """`ollama run MODEL --verbose`: pp of the prompt eval count, tg of the eval count at its depth; the
    model from the tag, the weights from it or Ollama's default tags (assumed, said), Go durations."""
    notes = []
    text_path = _write(tmp_path, "ollama_rtx4090.txt", OLLAMA)
    assert im.detect(OLLAMA) == "ollama-verbose"
    pp, tg = im.read(text_path, notices=notes)
    assert (pp["test"], pp["n_prompt"], pp["n_depth"], pp["avg_ts"]) == ("pp", 18, 0, pytest.approx(18 / 0.045))
    assert (tg["test"], tg["n_gen"], tg["n_depth"], tg["avg_ts"]) == ("tg", 312, 18, pytest.approx(130.0))
    for r in (pp, tg):
        assert (r["model"], r["weights"], r["hardware"], r["tool"]) == ("qwen3-30b-a3b", "Q4_K_M", "rtx-4090",
                                                                         "ollama run --verbose")
        assert "ollama tag" in r["inferred"]["model"] and "assumed" in r["inferred"]["weights"]
    assert sum("weights" in n for n in notes) == 1 and any("Ollama keeps" in n for n in notes)
    q8 = im.read(_write(tmp_path, "o2_rtx4090.txt", OLLAMA.replace("qwen3:30b-a3b", "llama3.1:8b-instruct-q8_0")))
    assert {(r["model"], r["weights"]) for r in q8} == {("llama-3.1-8b", "q8_0")}
    assert [im.go_duration(x) for x in ("1m2.5s", "160.2ms", "523µs", "2h0m1s", "1.5", "2s left")] == [
        pytest.approx(62.5), pytest.approx(0.1602), pytest.approx(523e-6), 7201.0, None, None]
    with pytest.raises(im.FormatError, match=r"o3_rtx4090.txt:11: .*eval duration.*Go duration"):
        im.read(_write(tmp_path, "o3_rtx4090.txt", OLLAMA.replace("eval duration:        2.4s", "eval duration:        soon")))


def test_llama_server_s_cache_line_gives_the_prompt_s_depth(tmp_path):
    """llama-server says how many prompt tokens it kept from the slot's cache (`kv cache rm [N, end)`;
    2025 builds: `memory_seq_rm [N, end)`): the prompt eval after it is pp @ d N, its eval tg @ d N + prompt."""
    notes = []
    text = (SERVER_LOG.replace("slot print_timing: id  0 | task 0 | \n",
                               "slot update_slots: id  0 | task 0 | kv cache rm [0, end)\nslot print_timing: id  0 | task 0 | \n")
            .replace("slot print_timing: id  0 | task 1 | \n",
                     "slot update_slots: id  0 | task 1 | n_past = 4096, memory_seq_rm [4096, end)\n"
                     "slot print_timing: id  0 | task 1 | \n"))
    recs = im.read(_write(tmp_path, "server.log", text), notices=notes)
    assert [(r["test"], r["n_depth"]) for r in recs] == [("pp", 0), ("tg", 4096), ("pp", 4096), ("tg", 6144)]
    assert "'memory_seq_rm [4096, end)', line 13" in recs[2]["inferred"]["depth"]
    assert not any("cached prefix" in n for n in notes)     # both prompts' cached parts are stated


# llama-server (late 2025, tools/server/server-context.cpp update_slots): a prompt longer than a batch (-b 2048)
# runs in chunks, and the cache line comes again before each chunk with the tokens done so far. Numbers invented.
SERVER_CHUNKED = """$ llama-server -m /models/Qwen3-8B-Q4_K_M.gguf -ngl 99 -fa on -c 32768 -np 2 --port 8080
ggml_cuda_init: found 1 CUDA devices:
  Device 0: NVIDIA GeForce RTX 4090, compute capability 8.9, VMM: yes
slot launch_slot_: id  0 | task 0 | processing task
slot update_slots: id  0 | task 0 | new prompt, n_ctx_slot = 16384, n_keep = 0, task.n_tokens = 5000
slot update_slots: id  0 | task 0 | n_tokens = 0, memory_seq_rm [0, end)
slot update_slots: id  0 | task 0 | prompt processing progress, n_tokens = 2048, batch.n_tokens = 2048, progress = 0.409600
slot update_slots: id  0 | task 0 | n_tokens = 2048, memory_seq_rm [2048, end)
slot update_slots: id  0 | task 0 | prompt processing progress, n_tokens = 4096, batch.n_tokens = 2048, progress = 0.819200
slot update_slots: id  0 | task 0 | n_tokens = 4096, memory_seq_rm [4096, end)
slot update_slots: id  0 | task 0 | prompt done, n_tokens = 5000, batch.n_tokens = 904
slot      release: id  0 | task 0 | stop processing: n_tokens = 5399, truncated = 0
slot print_timing: id  0 | task 0 | 
prompt eval time =    1000.00 ms /  5000 tokens (    0.20 ms per token,  5000.00 tokens per second)
       eval time =    4000.00 ms /   400 tokens (   10.00 ms per token,   100.00 tokens per second)
      total time =    5000.00 ms /  5400 tokens
slot launch_slot_: id  1 | task 2 | processing task
slot update_slots: id  1 | task 2 | new prompt, n_ctx_slot = 16384, n_keep = 0, task.n_tokens = 300
slot update_slots: id  1 | task 2 | n_tokens = 0, memory_seq_rm [0, end)
slot update_slots: id  1 | task 2 | prompt done, n_tokens = 300, batch.n_tokens = 300
slot      release: id  1 | task 2 | stop processing: n_tokens = 349, truncated = 0
slot print_timing: id  1 | task 2 | 
prompt eval time =      60.00 ms /   300 tokens (    0.20 ms per token,  5000.00 tokens per second)
       eval time =     500.00 ms /    50 tokens (   10.00 ms per token,   100.00 tokens per second)
      total time =     560.00 ms /   350 tokens
slot launch_slot_: id  0 | task 5 | processing task
slot update_slots: id  0 | task 5 | new prompt, n_ctx_slot = 16384, n_keep = 0, task.n_tokens = 9000
slot update_slots: id  0 | task 5 | n_tokens = 5399, memory_seq_rm [5399, end)
slot update_slots: id  0 | task 5 | prompt processing progress, n_tokens = 7447, batch.n_tokens = 2048, progress = 0.827444
slot update_slots: id  0 | task 5 | n_tokens = 7447, memory_seq_rm [7447, end)
slot update_slots: id  0 | task 5 | prompt done, n_tokens = 9000, batch.n_tokens = 1553
slot      release: id  0 | task 5 | stop processing: n_tokens = 9089, truncated = 0
slot print_timing: id  0 | task 5 | 
prompt eval time =     800.00 ms /  3601 tokens (    0.22 ms per token,  4501.25 tokens per second)
       eval time =    1000.00 ms /    90 tokens (   11.11 ms per token,    90.00 tokens per second)
      total time =    1800.00 ms /  3691 tokens
"""


def test_a_prompt_in_chunks_is_at_the_depth_of_its_first_cache_line(tmp_path):
    """The cache line before a prompt's second chunk is not its cached part: a 5000-token prompt from an empty
    cache read as pp5000 @ d4096 before; each task's first line after its `new prompt` line is."""
    recs = im.read(_write(tmp_path, "server.log", SERVER_CHUNKED))
    assert [(r["test"], r["n_prompt"] or r["n_gen"], r["n_depth"]) for r in recs] == [
        ("pp", 5000, 0), ("tg", 400, 5000),         # task 0: three chunks from an empty cache
        ("pp", 300, 0), ("tg", 50, 300),            # task 2 (slot 1)
        ("pp", 3601, 5399), ("tg", 90, 9000)]       # task 5: 5399 tokens kept, then two chunks
    assert "'memory_seq_rm [5399, end)', line 28" in recs[4]["inferred"]["depth"]


def test_requests_in_flight_together_on_two_slots_are_left_out(tmp_path):
    """With -np 2, a request that starts while another runs shares its decode steps (one batch of both): its
    timing lines are not one stream's speed (they imported as n_streams 1 before, silently). Both requests are
    left out with a notice; the later one alone (task 5) stays, at the depth of its own first cache line."""
    lines = SERVER_CHUNKED.splitlines(keepends=True)
    t2 = [ln for ln in lines if "task 2 |" in ln and ("processing task" in ln or "new prompt" in ln
                                                     or "[0, end)" in ln)]
    rest = [ln for ln in lines if ln not in t2]
    at = next(i for i, ln in enumerate(rest) if "memory_seq_rm [2048, end)" in ln)
    text = "".join(rest[:at] + t2 + rest[at:])       # task 2 starts between task 0's first and second chunk
    notes = []
    recs = im.read(_write(tmp_path, "np2.log", text), notices=notes)
    assert [(r["test"], r["n_prompt"] or r["n_gen"], r["n_depth"]) for r in recs] == [("pp", 3601, 5399), ("tg", 90, 9000)]
    said = [n for n in notes if "alongside" in n]
    assert len(said) == 2 and "alongside task 2 on other slots (-np)" in said[0] and "alongside task 0 " in said[1]


def test_a_speculative_servers_eval_time_is_left_out_with_a_notice(tmp_path):
    """With a draft model (-md) each verification step accepts several tokens: llama-server's eval time then
    says 2-3x the target model's decode speed, which the cost model does not price. It imported as tg before,
    silently; now the prompt eval stays and the eval line is left out with a notice naming what said so (the
    `draft acceptance rate` line after the timings, or the command line's draft model)."""
    spec = SERVER_LOG.replace("-fa on --port 8080", "-md /models/Qwen3-0.6B-Q8_0.gguf -ngld 99 -fa on --port 8080")
    notes = []
    recs = im.read(_write(tmp_path, "spec.log", spec), notices=notes)
    assert [(r["test"], r["n_prompt"]) for r in recs] == [("pp", 4096), ("pp", 2048)]
    # both eval lines left out, said once (at the first)
    assert [n for n in notes if "speculative decoding" in n] == [
        f"{tmp_path / 'spec.log'}:10: eval time: speculative decoding (a draft model on the command line, line 1): its"
        " speed counts the draft tokens each step accepted, which the cost model does not price; left out"]
    # the draft line a 2025 server prints after a request's timings, with no command line pasted
    lines = SERVER_LOG.splitlines(keepends=True)[1:]
    at = next(i for i, ln in enumerate(lines) if "total time" in ln) + 1
    lines.insert(at, "slot print_timing: id  0 | task 0 | draft acceptance rate = 0.72000 (  360 accepted /   500 generated)\n")
    notes = []
    recs = im.read(_write(tmp_path, "spec2.log", "".join(lines)), notices=notes)
    assert [(r["test"], r["n_prompt"] or r["n_gen"]) for r in recs] == [("pp", 4096), ("pp", 2048), ("tg", 120)]
    eval_no = next(i for i, ln in enumerate(lines, 1) if ln.lstrip().startswith("eval time"))
    assert any(n.startswith(f"{tmp_path / 'spec2.log'}:{eval_no}: eval time: speculative decoding ('draft acceptance "
                            f"rate = 0.72000 (  360 accepted /   500 generated)', line {at + 1})") for n in notes), notes


def test_a_speculative_servers_response_timings_keep_only_the_prompt(tmp_path):
    """A response of a server with a draft model has `draft_n` / `draft_n_accepted` in its timings (tools/server
    server-common.cpp, server_slot_stats::to_json): its predicted_per_second is not the model's decode speed."""
    notes = []
    recs = im.read(_write(tmp_path, "resp_rtx-3090.json", _response(cache_n=0, draft_n=300, draft_n_accepted=220)),
                   notices=notes)
    assert [(r["test"], r["n_prompt"]) for r in recs] == [("pp", 1024)]
    assert any(":1: timings.predicted_ms: speculative decoding (draft_n 300, draft_n_accepted 220)" in n for n in notes)

"""Results in: other tools' benchmark output (and glmbench's own records) as glmbench records.

    from glmbench.results import importers
    recs = importers.read("llama-bench.json")                  # format told from the content
    recs = importers.read("sweep-bench.md", model="qwen3-32b")  # a table that does not name its model

The format is detected from the content, never from the file name:

  llama-bench        `-o json`, `-o jsonl`, `-o csv`, `-o md`, `-o sql` (llama.cpp tools/llama-bench;
                     ik_llama.cpp's prints the same)
  sweep-bench        ik_llama.cpp's and the mainline port's markdown table
                     (`PP | TG | N_KV | T_PP s | S_PP t/s | T_TG s | S_TG t/s`) and `--output-format jsonl`
  batched-bench      llama.cpp's llama-batched-bench table (`PP | TG | B | N_KV | ...`) and its jsonl (which has no
                     is_tg_separate: -tgs from the paste's command line, else shared decoding, the assumption said)
  vllm               `vllm bench serve --save-result` JSON (one object; `--append-result`: one per line),
                     and the console block vLLM's and SGLang's benchmarks print (`==== Serving Benchmark Result ====`;
                     the server measured, `server`, from its command line in the paste: llama-server, vllm serve,
                     sglang.launch_server, `server_of`, with its limits where it sets them: `max_num_seqs` from
                     -np / --max-num-seqs, `max_num_batched_tokens` from -b / --max-num-batched-tokens; the
                     client's `request_rate`, `burstiness` and `max_concurrency` where the block does not print
                     them: vLLM's lines before its block, the client's command line, or the arguments it printed,
                     `Namespace(...)`, read as one, `namespace_command`)
  vllm-offline       vLLM's offline benchmarks with their command line: `vllm bench latency` (Avg latency, the
                     whole run of --batch-size prompts) and `vllm bench throughput` (requests/s of --num-prompts;
                     the older benchmark_latency.py / benchmark_throughput.py print the same): one `serve`
                     record each, `serve_kind` latency | throughput, lengths from the command line or the
                     printed token totals, vLLM's defaults where the command line sets none; their --output-json
                     files (`vllm-offline-json`: latency's model_id / avg_latency / percentiles, throughput's
                     num_requests / requests_per_second / total_num_tokens) the same records, with the command
                     line pasted around them (neither file states the lengths; throughput's --input-len or
                     --output-len with its total_num_tokens gives both), else an error naming what is missing
  sglang-one-batch   SGLang's `python -m sglang.bench_one_batch` console lines (and its --result-filename JSONL,
                     `sglang-one-batch-jsonl`): each run of B prompts is a pp record (B x input_len tokens / the
                     prefill latency) and a tg record at depth input_len (B / the median decode step), as
                     llama-batched-bench's; the warm-up run left out; the engine is SGLang's
  sglang-offline     SGLang's offline throughput benchmark (`python -m sglang.bench_offline_throughput`; 0.5.23:
                     `sglang.benchmark.offline_throughput`), its printed `Offline Throughput Benchmark Result` block
                     (and its --result-filename JSONL, `sglang-offline-jsonl`): every request handed to the
                     in-process engine at once, as vLLM's `bench throughput`: one `serve` record, `serve_kind`
                     throughput, the mean lengths from its token totals, the model and the engine's limits
                     (--tp, --max-running-requests, --chunked-prefill-size) from its command line
  sglang             `python -m sglang.bench_serving --output-file` JSONL (one run per line; the server's
                     max_running_requests / chunked_prefill_size as `max_num_seqs` / `max_num_batched_tokens`)
  llama-timings      llama-cli's / llama-server's timing lines (`prompt eval time = T ms / N tokens (...)`,
                     `eval time = T ms / M runs (...)`): pp N from an empty cache, tg M at depth N
  llama-server-json  a llama-server response's `timings` (pp prompt_n @ d cache_n, tg predicted_n after it)
  ollama-verbose     `ollama run MODEL --verbose`'s statistics (prompt eval / eval count and duration)
  scoreboard-csv     a copy of llama.cpp's performance scoreboard as CSV
  glmbench           glmbench's own records (.json list or .csv with an `evidence` column)

Every record read from another tool says `evidence: measured`, `tool` (what wrote it) and
`source` ("file:line"). Field names are llama-bench's where they overlap: `test` ("pp" when only
n_prompt is set, "tg" when only n_gen is, "pg" for llama-bench's `-pg`; a serving benchmark is
"serve"), `n_prompt`, `n_gen`, `n_depth`, `avg_ts`, `stddev_ts`, `n_batch` (llama-bench's logical
batch size, as it means there), `n_ubatch`, `flash_attn` (-1 auto, 0 off, 1 on), `type_k`,
`type_v`; `backend` the compute backend (CUDA, Vulkan, Metal, ROCm; a serving benchmark's
`--backend` is `serve_backend`). `n_streams` is the number of independent sequences a step runs (batched-bench's B,
a serving benchmark's concurrency); `device` and `n_cards` come from `gpu_info` (or `devices`);
`split` from `split_mode` (one card: "none"; llama.cpp's row split is a tensor split); `weights`
from the file type in `model_type` ("Q4_K - Medium") or else the file name, normalised by
`quant_name` (glmbench's spelling for a single format, `q4_K`, `iq4_xs`, `q8_0`; llama.cpp's mix
name for a mix, `Q4_K_M`; a GGUF runtime's file named "mxfp4" is llama.cpp's one MXFP4 file type, `MXFP4_MOE`; ik_llama.cpp's `iq4_ks` and Unsloth's `UD-Q4_K_XL` with a `weights_note`);
`model` is a built-in config's name, told from llama.cpp's `model_type` and parameter count
(`deepseek2 30B.A3B` + 29.94 B params: the one built-in of that architecture and size,
`model_candidates`), narrowed where several fit by the names the file name, the command line's
-m or a heading give (`names_in`); without a model_type (sweep-/batched-bench, vllm), from those
names. Several built-ins that fit is a FormatError naming them (`--model` picks); no model at
all imports without one, with a notice.

Pasted text (`llama-bench-md`, `sweep-bench-md`, `batched-bench-md`, `vllm-console`, `vllm-offline`,
`sglang-one-batch`, `sglang-offline`, `llama-timings`, `ollama-verbose`) is read whole
(`_read_pasted`): every table and console block, each with the lines printed around it (the
command line, llama.cpp's load log, `ggml_cuda_init` / `Device N:` lines, a heading, the `build:`
line; llama.cpp's own log lines between a table's rows, any number of them, as a terminal's copy of
`2>&1` interleaves them (`llama-bench -v`, `--progress`; `is_log_line`), and among llama-bench's
-o json / jsonl / csv / sql records, are skipped; a table copied from a rendered page, tab-separated
without pipes, is read as the markdown it was; on a page of sections, one per model, a table borrows a model or weights only within its section).
Each record says in `inferred` how its model, card (`device`, `hardware`, `n_cards`),
split, backend, flash attention and weights were told; `read(..., notices=[])` collects one line
per assumption (a card count assumed, no model named, an approximate format). A table's own
heading or `<summary>` line that states settings in words ("Main branch, mla = 2, fa", "-ub 4096")
gives them to that table where its rows and command line do not (`label_settings`).
llama-bench's -o json / jsonl / csv / sql records and an md table in one paste (`-o json -oe md` copied from a
terminal, stdout and stderr interleaved even within a line, "  }| llama 8B Q4_0 | ... |"; two runs pasted one after
the other; sweep- / batched-bench's jsonl and a table) are read apart (`_bench_output_and_tables`): the records, then
every table row that is not one of their runs (a row that is, at the table's 2 decimals, is read once, from the
record, with a notice). llama-bench's JSON with other text between its records (a terminal's session of runs, each
after its command line; prose between two runs' arrays) is its records, the other lines named in a notice
(`_bench_json_among_text`); those lines are a hint for the records' model, as a table's command line or heading is,
where they name exactly one built-in and no model_type decides (sweep- / batched-bench's jsonl among them too). A result pasted twice (a table, jsonl lines, a json array) is imported once, with a
notice (`_once_each`).

Malformed input (no known format, a row that does not parse, a speed that is not a positive
number, a record without a depth, an empty file) is one `FormatError` (a ValueError) that names
the file and the line. Inputs are only read.
"""
from __future__ import annotations

import ast
import csv
import functools
import html
import io
import json
import math
import os
import re
import sqlite3
from typing import Iterable

from glmbench import vocab
from glmbench.models import configs, gguf_file
from glmbench.predict import hardware
from glmbench.results import records as rec

__all__ = ["FormatError", "FORMATS", "read", "read_text", "detect", "quant_name", "identify_model"]

FORMATS = {
    "glmbench": "glmbench records (.json list or .csv)",
    "llama-bench-json": "llama-bench -o json",
    "llama-bench-jsonl": "llama-bench -o jsonl",
    "llama-bench-csv": "llama-bench -o csv",
    "llama-bench-md": "llama-bench -o md",
    "llama-bench-sql": "llama-bench -o sql",
    "sweep-bench-md": "llama-sweep-bench table (ik_llama.cpp or the mainline port)",
    "sweep-bench-jsonl": "llama-sweep-bench --output-format jsonl",
    "batched-bench-md": "llama-batched-bench table",
    "batched-bench-jsonl": "llama-batched-bench --output-format jsonl",
    "vllm": "vllm bench serve --save-result JSON",
    "vllm-console": "vLLM's (or SGLang's) benchmark console block (====== Serving Benchmark Result ======)",
    "vllm-offline": "vLLM's offline benchmarks' lines with their command line: `vllm bench latency` (Avg latency: X "
                    "seconds) and `vllm bench throughput` (Throughput: R requests/s, ...)",
    "vllm-offline-json": "vLLM's offline benchmarks' --output-json file: `vllm bench latency` (model_id, avg_latency, "
                         "latencies, percentiles) and `vllm bench throughput` (model_id, elapsed_time, num_requests, "
                         "total_num_tokens, requests_per_second, tokens_per_second)",
    "sglang-one-batch": "SGLang's `python -m sglang.bench_one_batch` console lines (Prefill. latency: ..., Decode.  median "
                        "latency: ..., Total. latency: ...)",
    "sglang-one-batch-jsonl": "SGLang's `bench_one_batch --result-filename` JSONL (batch_size, input_len, output_len, "
                              "prefill_latency, median_decode_latency, ...)",
    "sglang": "sglang bench_serving --output-file JSONL",
    "sglang-offline": "SGLang's offline throughput benchmark's result block (python -m sglang.bench_offline_throughput, "
                      "sglang.benchmark.offline_throughput: ====== Offline Throughput Benchmark Result ======)",
    "sglang-offline-jsonl": "SGLang's offline throughput benchmark's --result-filename JSONL (backend, "
                            "successful_requests, total_latency, total_input_tokens, total_output_tokens, ...)",
    "llama-timings": "llama.cpp's timing lines (llama-cli, llama-server, ik_llama.cpp: `prompt eval time = ... ms / N "
                     "tokens (...)`, `eval time = ... ms / M runs (...)`)",
    "ollama-verbose": "`ollama run MODEL --verbose`'s statistics (prompt eval count / duration, eval count / duration)",
    "koboldcpp-benchmark": "KoboldCpp's `--benchmark` result block (Benchmark Completed - vX Results: ... MaxCtx, "
                           "GenAmount, ProcessingSpeed, GenerationSpeed)",
    "koboldcpp-csv": "KoboldCpp's `--benchmark FILE.csv` (Timestamp,Backend,Layers,Model,MaxCtx,GenAmount,"
                     "ProcessingTime,ProcessingSpeed,...,Flags)",
    "llama-server-json": "llama-server's response JSON (/completion, /v1/chat/completions) with its `timings` "
                         "(cache_n, prompt_n, prompt_ms, predicted_n, predicted_ms)",
    "scoreboard-csv": "a copy of llama.cpp's performance scoreboard as CSV (gpu, gpu_device_name, n_gpus, model, "
                      "quant, backend, fa, test, depth, t_s, stddev, build, date, url, via, notes)",
}


class FormatError(ValueError):
    """A file that cannot be read as records: the message names the file and, where there is
    one, the line."""


def _where(path, line=None) -> str:
    return f"{path}:{line}" if line else f"{path}"


def _fail(path, line, msg):
    raise FormatError(f"{_where(path, line)}: {msg}")


# ---- entry points -------------------------------------------------------------------------------
def read(path, *, model: str | None = None, default_model: str | None = None,
         notices: list | None = None) -> list[dict]:
    """Records from a file of any format above (detected from its content).

    model: the model of every record read from another tool's output (a built-in name or a
      config.json), overriding what the file name or architecture says; default_model: used only
      where the file does not tell. glmbench's own records keep the model they name.
    notices: a list that gets one line ("file:line: what was assumed") per assumption the import
      made (a card count assumed, a model or weights not stated, an approximate format)."""
    p = os.fspath(path)
    if not os.path.exists(p):
        raise FormatError(f"{p}: no such file")
    if os.path.isdir(p):
        raise FormatError(f"{p}: is a folder, not a results file")
    with open(p, "rb") as f:
        raw = f.read()
    return read_text(decoded(raw, p), p, model=model, default_model=default_model, notices=notices)


def decoded(raw: bytes, path) -> str:
    """A results file's text: UTF-8 (a byte-order mark dropped), or UTF-16 (what Windows PowerShell 5's
    `llama-bench ... > out.md` and Out-File write: with its byte-order mark; without one, told by the zero byte
    beside each ASCII character); else a FormatError naming the line."""
    if raw.startswith(b"\x1f\x8b"):      # (read as text: "not a text file (not UTF-8)", which it is not either)
        raise FormatError(f"{path}: gzip-compressed; decompress it first (gunzip -k {os.path.basename(str(path))})")
    even, odd = raw[0::2], raw[1::2]
    enc = ("utf-16" if raw.startswith((b"\xff\xfe", b"\xfe\xff")) else
           next((e for e, z, nz in (("utf-16-le", odd, even), ("utf-16-be", even, odd))
                 if len(raw) >= 8 and z.count(0) >= 0.9 * len(z) and nz.count(0) <= 0.1 * len(nz)), "utf-8-sig"))
    try:
        return _lines_ended(raw.decode(enc))
    except UnicodeDecodeError as e:
        if enc != "utf-8-sig":
            raise FormatError(f"{path}: not valid UTF-16 text (byte {e.start}: {e.reason})") from None
        line = raw[:e.start].count(b"\n") + 1
        raise FormatError(f"{path}:{line}: not a text file (not UTF-8)") from None


def _lines_ended(text: str) -> str:
    """Text whose lines end in a carriage return alone (a CSV saved as "CSV (Macintosh)" by Excel for Mac,
    classic Mac OS line ends) with its lines ended as every reader here splits them. (The CSV readers
    stopped at the first one: "new-line character seen in unquoted field", a traceback.) Text with any
    newline keeps its carriage returns (a terminal's progress lines, CRLF)."""
    return text.replace("\r", "\n") if "\r" in text and "\n" not in text else text


def read_text(text: str, path: str = "<text>", *, model: str | None = None,
              default_model: str | None = None, notices: list | None = None) -> list[dict]:
    """read() on text already in memory; `path` names it in errors and in `source`."""
    _RIG_MEMO.clear()      # (the hardware catalog a read's names resolve against is the one of this read)
    try:
        return _token_counts_checked(_read_text(_lines_ended(text), path, model, default_model, notices), path)
    except csv.Error as e:   # not a ValueError (a traceback): named like every other bad file
        raise FormatError(f"{path}: not valid CSV ({e})") from None


# a record's token counts past any model's (records.too_many_tokens), whatever the format
_TOKEN_FIELDS = ("n_prompt", "n_gen", "n_depth", "n_streams")


def _token_counts_checked(recs: list, path: str) -> list:
    for i, r in enumerate(recs, 1):
        for k in _TOKEN_FIELDS:
            too_many = rec.too_many_tokens(k, r.get(k))
            if too_many:
                src = str(r.get("source") or "")
                where = src if src.startswith(str(path)) else f"{path}: record {i}"
                raise FormatError(f"{where}: field {too_many}")
    return recs


def _read_text(text, path, model, default_model, notices) -> list[dict]:
    split = _bench_output_and_tables(text, path)
    if split is not None:
        # llama-bench's records and its md table in one paste (-o json -oe md in a terminal, two runs pasted)
        fmt = "llama-bench-json" if split[2] else "llama-bench-csv" if split[3] else "llama-bench-sql"
        ctx = _Context(path, fmt, _canonical_model(model, path, "model"),
                       _canonical_model(default_model, path, "default_model"), notices)
        ctx.paste = text
        return _once_each(_read_bench_output_and_tables(split, ctx), ctx)
    said: list = []
    try:
        recs = _read_one_format(text, path, model, default_model, said)
    except FormatError as e:
        # llama-bench's JSON with other text between its records (two runs' arrays with a line of prose between,
        # a terminal's session of jsonl runs with their command lines): its records, the rest skipped (a notice)
        recs = _bench_json_among_text(text, path, str(e), model, default_model, notices)
        if recs is None:
            if notices is not None:
                notices.extend(said)    # what the failed read noticed, with its error
            raise
        return recs
    if notices is not None:
        notices.extend(said)
    return recs


def _read_one_format(text, path, model, default_model, notices) -> list[dict]:
    whole = text
    if _detect_pasted(text) is None:
        # llama-bench -o json / jsonl / csv / sql with --progress (or -v) in a terminal's copy of 2>&1: its
        # stderr lines among the records (is_log_line), blanked (their line numbers kept)
        text = _without_log_lines(text)
    try:
        fmt = detect(text, path)
    except FormatError:
        # a JSON result pasted with prose around it (a ```json fence in a comment, the command line above
        # a -o jsonl run): the JSON alone, at its own lines (blank lines before it keep "file:line")
        found = _embedded_json(text)
        if found is None:
            raise
        text, fmt = found
    ctx = _Context(path, fmt, _canonical_model(model, path, "model"), _canonical_model(default_model, path, "default_model"),
                   notices)
    ctx.paste = whole   # the whole text, the prose around an embedded JSON result with it (its command line)
    recs = _READERS[fmt](text, ctx)
    if not recs:    # what was left out says why (the notices go nowhere once this fails)
        why = [n for n in notices or () if "left out" in n]
        _fail(path, None, f"holds no records ({FORMATS[fmt]})" + "".join(f"; {n}" for n in why))
    return recs if fmt == "glmbench" else _once_each(recs, ctx)


def _bench_json_among_text(text, path, error, model, default_model, notices) -> list[dict] | None:
    """The records of llama-bench's (sweep-, batched-bench's) JSON objects in `text` where the text read as one
    format failed with `error`, a JSON syntax error at a line of other text or at the first line of one of them
    (text between them, another document after one: not one of them cut short, not a list's brackets or commas
    amiss); the other lines skipped, with a notice that names them. None where that is not so."""
    m = re.match(re.escape(path) + r":(\d+): (?:not valid JSON|text after the end of the JSON list)", error)
    if not m:
        return None
    mach = _without_log_lines(text)
    try:
        objs = _bench_json_objects(mach, path)
    except FormatError:
        return None     # (an object cut short: the read's own error says where)
    taken = set()
    for _, first, last, _ in objs:
        taken |= set(range(first, last + 1))
    lines = mach.split("\n")
    other = [i for i, ln in enumerate(lines, 1) if i not in taken and ln.strip() and ln.strip().strip("[],")]
    err = int(m.group(1))
    if not objs or not (err in other or err in {first for _, first, _, _ in objs}
                        or 0 < err <= len(lines) and lines[err - 1].strip().startswith("[")):
        return None     # (a ',' before a ']', a list without its ']': the JSON's own error)
    ctx = _Context(path, "llama-bench-json", _canonical_model(model, path, "model"),
                   _canonical_model(default_model, path, "default_model"), notices)
    ctx.paste = text
    # the other lines (each run's command line, prose) name the records' model as a table's heading or command line
    # would: a hint before the file name's, taken where they name exactly one built-in and no model_type decides
    ctx.prose_hint = ("\n".join(lines[i - 1] for i in other), "text around the records")
    recs = _read_bench_output_and_tables(
        ("\n".join(ln if i in taken else "" for i, ln in enumerate(lines, 1)), "\n" * (len(lines) - 1),
         [(line, o) for line, _, _, o in objs], [], []), ctx)
    shown = ", ".join(str(i) for i in other[:8]) + (", ..." if len(other) > 8 else "")
    ctx.notice(other[0] if other else None,
               f"line{'s' if len(other) > 1 else ''} {shown} between llama-bench's JSON records (a command line, "
               f"prose, another run's output) {'are' if len(other) > 1 else 'is'} not read: only the records are")
    return _once_each(recs, ctx)


# what says where and how a record was read, not what was measured: a result pasted twice differs only in these
_PROVENANCE = {"source", "inferred", "tool"}


def _decimals(x: float) -> int:
    r = repr(float(x))
    if "e" in r or "inf" in r or "nan" in r:
        return 15
    return len(r.split(".")[1]) if "." in r else 0


def _same_value(a, b) -> bool:
    """a == b, floats as far as the coarser of the two was printed (llama-bench's md prints t/s to 2 decimals,
    its json to 6)."""
    if isinstance(a, bool) or isinstance(b, bool) or not (isinstance(a, (int, float)) and isinstance(b, (int, float))):
        return a == b
    if a == b:
        return True
    if not (isinstance(a, float) or isinstance(b, float)) or not (math.isfinite(a) and math.isfinite(b)):
        return False
    d = min(_decimals(a), _decimals(b))
    return abs(a - b) <= 0.5 * 10 ** -d + 1e-9 * max(abs(a), abs(b))


def _same_result(r: dict, q: dict) -> bool:
    """r and q are one measurement: the same model, weights, card, backend, options, test and depth, and the same
    measured value and stddev: every field alike, but where and how they were read."""
    if r.get("avg_ts") is None or q.get("avg_ts") is None or set(r) - _PROVENANCE != set(q) - _PROVENANCE:
        return False
    for k in set(r) - _PROVENANCE:
        if not _same_value(r[k], q[k]):
            return False
    return all(r.get(k) == q.get(k) for k in ("test", "n_prompt", "n_gen", "n_depth", "model"))


# fields whose text _once_each buckets records by (two records with a different text in one are not one result)
_REPEAT_TEXT = ("model", "device", "weights", "backend", "type_k", "type_v", "test_time", "build_commit", "label",
                "runtime")


def _once_each(recs: list, ctx) -> list:
    """`recs` with a result pasted twice (llama-bench's md table pasted again, its jsonl lines or json array
    twice) kept once, the first, and a notice that says where the repeat was; runs of the same test with other
    values are other records. (A table row and a JSON record of one run, `-o json -oe md`, differ in the fields
    they state: _read_bench_output_and_tables keeps the record.)"""
    out, repeats, buckets = [], [], {}
    for r in recs:
        # a result's point and the text of its fields that tell runs apart: alike in a repeat (_same_result), so a
        # record is checked only against the earlier ones that may be it (not every earlier one of its point: many
        # runs, cards or models at one point, a scoreboard's, made a large file quadratic)
        key = (r.get("test"), r.get("n_prompt"), r.get("n_gen"), r.get("n_depth"), r.get("n_streams"),
               *(v if isinstance(v, str) else None for v in map(r.get, _REPEAT_TEXT)))
        first = next((q for q in buckets.get(key, ()) if _same_result(q, r)), None)
        if first is not None:
            repeats.append((r.get("source"), first.get("source")))
            continue
        buckets.setdefault(key, []).append(r)
        out.append(r)
    if repeats:
        def ln(src):
            return str(src).rsplit(":", 1)[-1] if src else "?"
        pairs = ", ".join(f"line {ln(a)} = line {ln(b)}" for a, b in repeats[:12]) + (", ..." if len(repeats) > 12 else "")
        line = ln(repeats[0][0])
        ctx.notice(int(line) if line.isdigit() else None,
                   f"{len(repeats)} result{'s' if len(repeats) > 1 else ''} pasted twice (the same model, card, "
                   f"options, test, depth, t/s and stddev as an earlier one): imported once, the first ({pairs})")
    return out


# ---- llama-bench's machine-readable output and its markdown table in one paste ----------------------------------
# `llama-bench -o json -oe md` (or -o jsonl / csv / sql -oe md, -o md -oe json) writes one to stdout and the other to
# stderr; a terminal's copy interleaves them line by line, even within a line: the JSON printer ends an object
# with "  }" and no newline, so the md row written meanwhile follows it ("  }| llama 8B Q4_0 | ... |", or "}| model
# | size | ..." where the header comes after an object), and the ",\n" between objects comes after the row. Two runs
# pasted one after the other (a jsonl run then an md table) hold both as well.
_GLUED_ROW = re.compile(r"^(\s*[\[\]{},]*[}\]])\s*(\|.*)$")   # "  }| llama ... |": an object's end, then a row
_SQL_START = re.compile(r"(?:CREATE TABLE IF NOT EXISTS|INSERT INTO) llama_bench\b")
_LB_CSV_HEAD = {"n_prompt", "n_gen", "avg_ts"}
_SWEEP_COLS = {"PP", "TG", "N_KV", "S_PP t/s", "S_TG t/s"}    # sweep- and batched-bench's table (batched: B too)


def _is_sweep_or_batched(o) -> bool:
    """`o` is a line of llama-sweep-bench's or llama-batched-bench's --output-format jsonl."""
    return isinstance(o, dict) and {"n_kv_max", "speed_pp", "speed_tg"} <= set(o) and "evidence" not in o


def _bench_json_objects(text, path):
    """[(line, first line, last line, object)] of every JSON object llama-bench wrote in `text` (its -o json
    array's elements, -o jsonl's lines, an array pasted twice; llama-sweep-bench's and llama-batched-bench's jsonl
    lines, _is_sweep_or_batched), whatever is around them (a table's lines blanked, the array's brackets and
    commas, prose); a `{` that starts no valid JSON but names llama-bench's fields is a FormatError at its line."""
    dec = json.JSONDecoder()
    out = []
    lines = text.split("\n")
    offsets, at = [], 0
    for ln in lines:
        offsets.append(at)
        at += len(ln) + 1
    i = 0
    while i < len(lines):
        p, end_of_line = offsets[i], offsets[i] + len(lines[i])
        while p < end_of_line:
            c = text[p]
            if c in " \t\r[],":
                p += 1
                continue
            if c != "{":
                break   # not JSON (prose, a `build:` line): the next line
            try:
                obj, q = dec.raw_decode(text, p)
            except json.JSONDecodeError as e:
                if lines[i].strip().startswith("{") and re.search(r'"(?:n_prompt|n_gen|avg_ts|build_commit)"',
                                                                  text[p:p + 4000]):
                    _fail(path, e.lineno, f"not valid JSON ({e.msg})")
                break
            first, last = text.count("\n", 0, p) + 1, text.count("\n", 0, q) + 1
            if _is_llama_bench(obj) or _is_sweep_or_batched(obj):
                out.append((first, first, last, obj))
            if last - 1 != i:
                i = last - 1
                end_of_line = offsets[i] + len(lines[i])
            p = q
        i += 1
    return out


def _bench_csv_and_sql(lines):
    """([csv line numbers of each csv], sql line numbers) of llama-bench's -o csv (its header and the rows of its
    width after it, blank and log lines between them allowed, up to the next header: a csv pasted twice is two) and
    -o sql (its CREATE TABLE and INSERT statements) in `lines`."""
    csv_at, sql_at = [], []
    i, n = 0, len(lines)
    while i < n:
        st = lines[i].strip()
        if _SQL_START.match(st):
            buf, j = "", i
            while j < n:
                buf += lines[j] + "\n"
                j += 1
                if sqlite3.complete_statement(buf):
                    break
            sql_at += range(i + 1, j + 1)
            i = j
            continue
        if st.count(",") >= 2:
            head = next(csv.reader([st]), [])
            if _LB_CSV_HEAD <= set(head) and "evidence" not in head:    # (glmbench's own csv has them too)
                csv_at.append([i + 1])
                j = i + 1
                while j < n:
                    s = lines[j].strip()
                    row = next(csv.reader([s]), []) if s and not is_log_line(s) else None
                    if row is not None and (len(row) != len(head) or row == head):
                        break
                    if row is not None:   # (llama-bench --progress between the rows, on stderr: skipped)
                        csv_at[-1].append(j + 1)
                    j += 1
                i = j
                continue
        i += 1
    return csv_at, sql_at


def _bench_output_and_tables(text, path):
    """(machine part, md part, JSON objects, csv line blocks, sql lines) of a paste that holds llama-bench's
    -o json / jsonl / csv / sql records (or sweep- / batched-bench's jsonl) and a llama-bench (sweep-,
    batched-bench) md table: two copies of `text`, line for line, the first with the tables' lines blanked, the
    second with the records' lines blanked (a line holding both split between them); None where the text does
    not hold both."""
    if not ("n_prompt" in text or "speed_pp" in text) or "|" not in text:
        return None
    lines = [_QUOTE.sub("", ln) for ln in text.split("\n")]    # ("> " of a reply that quotes a paste)
    mach, md, is_md = list(lines), list(lines), [False] * len(lines)
    for i, ln in enumerate(lines):
        m = _GLUED_ROW.match(ln)
        if m:
            mach[i], md[i], is_md[i] = m.group(1), " " * len(m.group(1)) + m.group(2), True
        elif ln.lstrip().startswith("|"):
            mach[i], is_md[i] = "", True
    if not any({"model", "test", "t/s"} <= {c.strip() for c in h} or _SWEEP_COLS <= {c.strip() for c in h}
               for h in _md_headers("\n".join(md))):
        return None
    mach_text = "\n".join(mach)
    objs = _bench_json_objects(mach_text, path) if "{" in mach_text else []
    csv_at, sql_at = _bench_csv_and_sql(mach)
    if not (objs or csv_at or sql_at):
        return None
    taken = {k for b in csv_at for k in b} | set(sql_at)
    for _, first, last, _ in objs:
        taken |= set(range(first, last + 1))
    for i, ln in enumerate(mach):   # the JSON array's own brackets and commas
        if ln.strip() and not ln.strip().strip("[],"):
            taken.add(i + 1)
    keep = [i + 1 in taken for i in range(len(lines))]
    return ("\n".join(ln if k else "" for ln, k in zip(mach, keep)),
            "\n".join(ln if t or not k else "" for ln, k, t in zip(md, keep, is_md)),
            [(line, o) for line, _, _, o in objs], csv_at, sql_at)


def _bench_row_key(header, cells):
    """(n_prompt, n_gen, n_depth, t/s, stddev text, {field: int}) of a llama-bench md row, or None."""
    if len(cells) > len(header) and "ot" in header:     # -ot's regex alternation: its pipes in the ot cell
        i, extra = header.index("ot"), len(cells) - len(header)
        cells = cells[:i] + ["|".join(cells[i:i + extra + 1])] + cells[i + extra + 1:]
    if len(cells) != len(header):
        return None
    row = dict(zip(header, cells))
    m = _MD_TEST.match(row.get("test", "").strip())
    ts = re.fullmatch(r"\s*([^\s±]+)\s*(?:±\s*(\S+))?\s*", _plus_minus(row.get("t/s", "")))
    if not (m and (m.group(1) or m.group(3)) and ts):
        return None
    ints = {}
    for col in ("threads", "ngl", "n_batch", "n_ubatch"):
        if re.fullmatch(r"\s*-?\d+\s*", row.get(col) or ""):
            ints[_MD_COLS[col]] = int(row[col])
    return int(m.group(1) or 0), int(m.group(3) or 0), int(m.group(4) or 0), ts.group(1), ts.group(2), ints


def _row_is_record(key, r) -> bool:
    """md row `key` (_bench_row_key) is record `r`'s run: its test, depth, t/s and stddev as the table rounds them,
    and its threads / ngl / batch sizes where both state them."""
    n_prompt, n_gen, n_depth, ts, sd, ints = key
    if (r.get("n_prompt"), r.get("n_gen"), r.get("n_depth")) != (n_prompt, n_gen, n_depth):
        return False
    try:
        if not _same_value(float(ts), float(r.get("avg_ts"))):
            return False
        if sd is not None and r.get("stddev_ts") is not None and not _same_value(float(sd), float(r["stddev_ts"])):
            return False
    except (TypeError, ValueError):
        return False
    return all(r.get(k) is None or r.get(k) == v for k, v in ints.items())


def _read_bench_output_and_tables(split, ctx):
    """The records of a paste _bench_output_and_tables split: llama-bench's own records (-o json / jsonl / csv /
    sql), then the md tables' rows that are not one of them (another run's table): a row that is a record's run
    (`-o json -oe md` prints each run to both) is read once, from the record, which states more (the threads,
    batch sizes, build, samples), with a notice."""
    mach, md, objs, csv_at, sql_at = split
    lines = mach.split("\n")
    # a record's model told as its table's row would tell it where its file type fits several built-ins: from
    # the table's command line, heading and the text above it (the last llama-bench table before the record),
    # else from the text above the record
    blocks = [b for b in (_scan(md)[0] if md.strip() else []) if b.kind == "llama-bench"]
    above = md.split("\n")

    def hints_at(line):
        b = next((b for b in reversed(blocks) if b.start <= line), None)
        if b is not None:
            return _table_hints(b, ctx.path, "\n".join(above[:b.start - 1]))
        prose = [ctx.prose_hint] if getattr(ctx, "prose_hint", None) else []   # (_bench_json_among_text)
        return [("\n".join(above[:line - 1]), "text above")] + prose + [ctx.file_hint()]
    ctx.hints_at = hints_at
    recs = [_llama_bench_record(o, ctx, line) for line, o in objs if _is_llama_bench(o)]
    for reader, batched in ((_read_sweep_jsonl, False), (_read_batched_jsonl, True)):
        # sweep- / batched-bench's jsonl (a run that printed no table: its table is another run's), each object on
        # its own first line for their reader
        mine = {line: o for line, o in objs if _is_sweep_or_batched(o) and ("pl" in o) == batched}
        if mine:
            recs += reader("\n".join(json.dumps(mine[i]) if i in mine else "" for i in range(1, len(lines) + 1)), ctx)
    for block in csv_at:
        on = set(block)
        recs += _read_llama_bench_csv("\n".join(ln if i in on else "" for i, ln in enumerate(lines, 1)), ctx)
    if sql_at:
        on = set(sql_at)
        recs += _read_llama_bench_sql("\n".join(ln if i in on else "" for i, ln in enumerate(lines, 1)), ctx)
    # the md rows that are those records' runs, blanked (each record matched once); a table left without rows
    # goes with them
    md_lines = md.split("\n")
    used, pairs, tables = set(), [], []   # tables: [header line index, separator index, [row indexes], [kept]]
    header = None
    for i, ln in enumerate(md_lines):
        if not ln.strip().startswith("|"):
            continue
        nxt = next((j for j in range(i + 1, len(md_lines)) if md_lines[j].strip()), None)
        if nxt is not None and _MD_SEP.fullmatch(md_lines[nxt]) and "-" in md_lines[nxt]:
            header = _split_md(ln)
            tables.append([i, nxt, [], []])
            continue
        if header is None or (tables and i == tables[-1][1]):
            continue
        key = _bench_row_key(header, _split_md(ln)) if {"test", "t/s"} <= set(header) else None
        k = next((k for k, r in enumerate(recs) if k not in used and key and _row_is_record(key, r)), None)
        if k is None:
            tables[-1][3].append(i)
            continue
        used.add(k)
        tables[-1][2].append(i)
        pairs.append((i + 1, recs[k]["source"].rsplit(":", 1)[-1]))
    for head, sep, dropped, kept in tables:
        for i in dropped + ([head, sep] if dropped and not kept else []):
            md_lines[i] = ""
    if pairs:
        shown = ", ".join(f"line {a} = line {b}" for a, b in pairs[:12]) + (", ..." if len(pairs) > 12 else "")
        many = len(pairs) > 1
        ctx.notice(pairs[0][0], f"{len(pairs)} table row{'s are' if many else ' is'} the run{'s' if many else ''} of "
                                f"llama-bench records pasted with {'them' if many else 'it'} (-o json / jsonl / csv / "
                                f"sql -oe md prints each run twice): read once, from the record, which says more "
                                f"({shown})")
    rest = "\n".join(md_lines)
    if _scan(rest)[0]:     # another run's table, or another tool's block (llama-cli's timings, a vLLM console block)
        recs += _read_pasted(rest, ctx)

    def line_of(r):
        n = str(r.get("source", "")).rsplit(":", 1)[-1]
        return int(n) if n.isdigit() else 0
    return sorted(recs, key=line_of)


def _without_log_lines(text: str) -> str:
    """`text` with llama.cpp's / ggml's log lines (is_log_line: llama-bench's --progress lines, a model's load
    log) left blank, line for line; `text` itself where it has none."""
    if not (_LOG_START.search("\n" + text) or _LOG_STAMP.search(text)):
        return text     # (no line starts as a log line can: no pass of LOG_LINE over every line of a large file)
    lines = text.split("\n")
    if not any(map(LOG_LINE.match, lines)):
        return text     # (is_log_line needs LOG_LINE's match: the lines matched without a call each)
    if not any(is_log_line(ln) for ln in lines):
        return text
    return "\n".join("" if is_log_line(ln) else ln for ln in lines)


def detect(text: str, path: str = "<text>") -> str:
    """The format of `text` (a key of FORMATS), or a FormatError naming `path`."""
    s = text.lstrip()
    if not s:
        _fail(path, None, "empty file")
    first_line = text[:len(text) - len(s)].count("\n") + 1
    if s[0] in "[{":
        try:
            return _detect_json(s, path, first_line)
        except FormatError:
            pasted = _detect_pasted(text)   # prose that starts with "[a link](...)"
            if pasted:
                return pasted
            raise
    pasted = _detect_pasted(text)
    if pasted:
        return pasted
    if re.match(r"CREATE TABLE IF NOT EXISTS llama_bench\b", s):
        return "llama-bench-sql"
    head = s.splitlines()[0]
    cols = next(csv.reader([head]), [])
    if "evidence" in cols:
        return "glmbench"
    if {"n_prompt", "n_gen", "avg_ts"} <= set(cols):
        return "llama-bench-csv"
    if set(SCOREBOARD_COLUMNS) <= set(c.strip() for c in cols):
        return "scoreboard-csv"
    if set(KOBOLD_CSV_COLUMNS) <= set(c.strip() for c in cols):
        return "koboldcpp-csv"
    crammed = next((i for i, ln in enumerate(text.splitlines(), 1) if len(re.findall(r"<tr\b", ln, re.I)) > 1 and any(
        h <= {re.sub(r"<[^>]*>", "", c).strip() for _, c in _HTML_CELL.findall(ln)} for h in _TAB_HEADERS)), None)
    if crammed:     # (_html_tables reads an HTML table whose rows each start a line)
        _fail(path, crammed, "an HTML table with several of its rows on one line: put each <tr> on a line of its own "
                             "(or paste the markdown table the tool printed)")
    _fail(path, first_line, "not a results format glmbench reads (" + "; ".join(FORMATS.values()) + ")")


_EMBEDDED_FORMATS = ("llama-bench-json", "llama-bench-jsonl", "vllm", "vllm-offline-json", "sglang", "sglang-offline-jsonl", "sweep-bench-jsonl", "batched-bench-jsonl",
                     "llama-bench-csv", "llama-bench-sql", "llama-server-json")


def _embedded_json(text: str):
    """(the text with only its result kept, the format) of a JSON result (or llama-bench's csv / sql)
    inside prose or a markdown fence, or None: from the first line that starts one to the closing fence
    (or the end)."""
    lines = text.splitlines()
    for i, ln in enumerate(lines):
        st = ln.strip()
        if not (st.startswith(("{", "[")) or re.match(r"CREATE TABLE IF NOT EXISTS llama_bench\b", st)
                or {"n_prompt", "n_gen", "avg_ts"} <= set(st.split(","))):
            continue
        end = next((j for j in range(i + 1, len(lines)) if lines[j].strip().startswith("```")), len(lines))
        body = "\n" * i + "\n".join(lines[i:end]) + "\n"
        try:
            fmt = detect(body)
        except FormatError:
            return None
        return (body, fmt) if fmt in _EMBEDDED_FORMATS else None
    return None


def _detect_pasted(text) -> str | None:
    """The first table's kind, or a vLLM/SGLang console block; None when the text has neither."""
    lines, tab_heads = _unquote_tabs(text)   # (once: per check, eight passes over every line of a large file)
    # the first benchmark table (not a SYCL device list printed above it); a line that starts with a pipe is the
    # text's own, or a table _unquote_tabs wrote, which it names in tab_heads
    for header in (_md_headers_of(lines, tab_heads) if "|" in text or tab_heads else ()):
        cells = {c.strip() for c in header}
        if {"PP", "TG", "N_KV", "S_PP t/s", "S_TG t/s"} <= cells:
            return "batched-bench-md" if "B" in cells else "sweep-bench-md"
        if {"model", "test", "t/s"} <= cells:
            return "llama-bench-md"
    # each check below goes over the lines only where the words its pattern cannot match without are in them
    # (_DETECT_WORDS: one pass over the whole text each, not one per line)
    # (a text _unquote_tabs rewrites nothing of, ASCII without a quote, pipe, tab, tag or escape, holds each word
    # where its lines' join does: no word holds a line end; a large file is not joined again)
    whole = text if text.isascii() and not any(c in text for c in "\\>|\t<") else "\n".join(lines)
    low = whole.lower()
    has = {k: w in (low if folded else whole) for k, (w, folded) in _DETECT_WORDS.items()}
    if has["serve"] and any(_SERVE_START.match(ln.strip()) for ln in lines):
        return "vllm-console"
    if has["sgl_offline"] and any(_SGL_OFFLINE_START.match(ln.strip()) for ln in lines):
        return "sglang-offline"
    if (has["vllm_latency"] or has["vllm_throughput"]) and any(
            _VLLM_LATENCY.match(ln) or _VLLM_THROUGHPUT.match(ln) for ln in lines):
        return "vllm-offline"
    if has["sgl_prefill"] and any(_SGL_PREFILL.match(ln) for ln in lines):
        return "sglang-one-batch"
    if has["timing"] and any(_TIMING_RE.search(ln) for ln in lines):
        return "llama-timings"
    if has["ollama"] and any(_OLLAMA_RE.match(ln) and _OLLAMA_RE.match(ln).group(1).lower() == "eval rate"
                             for ln in lines):
        return "ollama-verbose"
    if has["kobold"] and any(_KOBOLD_START.match(ln) for ln in lines):
        return "koboldcpp-benchmark"
    return None


# words without which a line cannot match each pattern _detect_pasted tries on every line (a literal part of
# the pattern; (word, True) for a pattern under re.I: looked for in the lowered text, the word without i, s
# or k, the only ASCII letters re.I also matches by a non-ASCII one): where the text has none, that check's
# pass over the lines is skipped
_DETECT_WORDS = {
    "serve": (" Serving Benchmark Result ", False),                 # _SERVE_START
    "sgl_offline": (" Offline Throughput Benchmark Result ", False),  # _SGL_OFFLINE_START
    "vllm_latency": ("avg latency:", True),                         # _VLLM_LATENCY
    "vllm_throughput": ("throughput:", True),                       # _VLLM_THROUGHPUT
    "sgl_prefill": ("Prefill.", False),                             # _SGL_PREFILL
    "timing": ("eval t", True),                                     # _TIMING_RE ("eval time")
    "ollama": ("eval rate:", True),                                 # _OLLAMA_RE's `eval rate` line
    "kobold": ("Benchmark Completed", False),                       # _KOBOLD_START
}


def _detect_json(s, path, first_line) -> str:
    if s[0] == "[":
        first, end = _first_list(s)
        if _another_list_follows(s, first, end):   # llama-bench's -o json array pasted twice (or two runs' arrays): _json_items
            return "llama-bench-json"
        # (the list just decoded where only JSON's whitespace follows it, as json.loads would: not decoded twice)
        data = first if end is not None and not s[end:].strip(" \t\n\r") else _json_or_fail(s, path, first_line)
        if not isinstance(data, list):
            _fail(path, first_line, "a JSON value that is not a list of records")
        objs = [o for o in data if isinstance(o, dict)]
        if objs and _is_llama_bench(objs[0]):
            return "llama-bench-json"
        return "glmbench"  # a list of anything else: each record is checked, with its line
    if s[0] == "{":
        obj = _first_object(s, path, first_line)
        keys = set(obj)
        if _is_llama_bench(obj):
            return "llama-bench-jsonl"
        if "model_id" in keys and ("num_prompts" in keys or "endpoint_type" in keys):
            return "vllm"
        if {"avg_latency", "latencies"} <= keys or {"elapsed_time", "num_requests", "requests_per_second"} <= keys:
            return "vllm-offline-json"
        if "output_throughput" in keys and "mean_ttft_ms" in keys:
            return "sglang"
        if {"batch_size", "input_len", "output_len", "prefill_latency"} <= keys:
            return "sglang-one-batch-jsonl"
        if {"successful_requests", "total_latency", "total_input_tokens", "total_output_tokens"} <= keys:
            return "sglang-offline-jsonl"
        if {"n_kv_max", "speed_pp", "speed_tg"} <= keys:
            return "batched-bench-jsonl" if "pl" in keys else "sweep-bench-jsonl"
        if "evidence" in keys:
            return "glmbench"
        if _is_server_timings(obj):
            return "llama-server-json"
        if "model_type" in keys and ("architectures" in keys or "num_hidden_layers" in keys or "text_config" in keys):
            _fail(path, first_line, f"a model's config.json (model_type {obj['model_type']!r}), not results: "
                                    "give it as --model (it names the model a results file does not)")
        _fail(path, first_line, "a JSON object of no known format (llama-bench -o jsonl, vllm bench serve, vllm bench "
                                "latency / throughput --output-json, sglang bench_serving, sweep-/batched-bench jsonl)")


# ---- names: weights and models --------------------------------------------------------------------
# llama.cpp's file-type names as llama-bench prints them (llama_model_ftype_name: "Q4_K - Medium",
# "IQ4_XS - 4.25 bpw", "all F32", "MXFP4 MoE", "IQ3_S mix - 3.66 bpw") -> the ftype ("Q4_K_M").
# ik_llama.cpp prints its own types the same way ("IQ4_KS - 4.25 bpw").
_FTYPE_SIZE = {"small": "S", "medium": "M", "large": "L", "extra small": "XS", "extra large": "XL"}
_FTYPE_SPECIAL = {"iq3_s mix": "IQ3_M", "mxfp4 moe": "MXFP4_MOE", "all f32": "F32"}
_QUANT_RE = re.compile(r"(?<![a-z0-9])((?:ud[-_])?(?:i?q\d(?:_(?:\d|k|s|m|l|xs|xxs|xl|nl|ks|kt|kss|kl|r4|r8))*)"
                       r"|bf16|f16|f32|mxfp4(?:_moe)?)(?![a-z0-9])", re.I)


def _ftype(text: str) -> str:
    """llama.cpp's printed file type -> its ftype name (unchanged when it is one already)."""
    s = " ".join(str(text).split())
    low = s.lower()
    for k, v in _FTYPE_SPECIAL.items():
        if low == k or low.startswith(k + " -"):
            return v
    m = re.fullmatch(r"([A-Za-z0-9_]+)(?: - (.+))?", s)
    if not m:
        return s
    base, rest = m.group(1), (m.group(2) or "").strip().lower()
    if rest in _FTYPE_SIZE:
        return f"{base}_{_FTYPE_SIZE[rest]}"
    return base  # "IQ4_XS - 4.25 bpw", "TQ1_0 - 1.69 bpw ternary"


def ftype_of(model_type) -> str:
    """The file-type words of llama-bench's `model` column, after the architecture and the size label
    and any name llama.cpp puts after the size ("llama4 17Bx16E (Scout) Q4_K - Medium" -> "Q4_K - Medium")."""
    return re.sub(r"^\S+\s+\S+(?:\s+\([^()]*\))?\s*", "", str(model_type or "").strip())


def quant_name(name: str | None) -> str | None:
    """One spelling per weight format, whatever the case: a single format glmbench knows keeps
    glmbench's name (`q4_k` -> "q4_K", `IQ4_XS` -> "iq4_xs", `Q8_0` -> "q8_0", `BF16` -> "bf16",
    ik_llama.cpp's `IQ4_KS` -> "iq4_ks"); a llama.cpp mix keeps llama.cpp's name in its upper case
    (`q4_k_m` -> "Q4_K_M"; "MXFP4_MOE"); Unsloth's dynamic quants their own (`ud-q4_k_xl` ->
    "UD-Q4_K_XL"). llama.cpp's file-type text is read too ("Q4_K - Medium" -> "Q4_K_M", "Q2_K -
    Medium" and "Q2_K_M" -> "mix:Q2_K": the Q2_K file, q2_K with the quantizer's bumped tensors,
    not the pure type; "IQ4_XS - 4.25 bpw" -> "iq4_xs", "MXFP4 MoE" -> "MXFP4_MOE", "all F32" ->
    "f32"). A name that looks like a quant but that glmbench does not know comes back in upper
    case (the record then says so); None when `name` holds no quant name."""
    if not name:
        return None
    if isinstance(name, str):
        return _quant_name_str(name)
    return _quant_name(name)


@functools.lru_cache(maxsize=4096)
def _quant_name_str(name: str) -> str | None:
    """quant_name of a string, remembered: a large file names the same few types on every row (read three
    times a row, it was a fifth of a 100k-row table's import)."""
    return _quant_name(name)


def _quant_name(name) -> str | None:
    s = _ftype(str(name).strip())
    low = s.lower().replace("-", "_")
    for k in vocab.WEIGHT_FORMATS:
        if k.lower() == low:
            return k
    for k in list(vocab.MIXES) + list(vocab.UD_MIXES):
        if k.lower().replace("-", "_") == low:
            return k
    for a, k in vocab.MIX_ALIASES.items():
        if a.lower() == low:
            return k
    if _QUANT_RE.fullmatch(low):
        return s.upper().replace("UD_", "UD-")
    return None


def weights_note(name: str | None) -> str | None:
    """What a record says about a weight format that is not a plain ggml or vLLM type (ik_llama.cpp's
    own types, Unsloth's dynamic quants), or that glmbench does not know."""
    if not name:
        return None
    if name in vocab.FORMAT_NOTES:
        return vocab.FORMAT_NOTES[name]
    try:
        vocab.weight_format(name)
    except ValueError:
        return f"{name}: a format glmbench does not know; kept as printed (predictions need --weights)"
    return None


def gguf_quant(w: str | None) -> str | None:
    """The weights a GGUF file named with quant name `w` holds: llama.cpp has one MXFP4 file type,
    MXFP4_MOE (include/llama.h; src/llama-quant.cpp: MXFP4 on the expert tensors, Q8_0 on the rest),
    so a file called "mxfp4" (ggml-org's gpt-oss-20b-mxfp4.gguf) is that mix, not MXFP4 on every
    matrix; any other name unchanged."""
    return "MXFP4_MOE" if w == "mxfp4" else w


def _quant_from_filename(filename: str | None) -> str | None:
    if not filename:
        return None
    stem = _stem(filename)
    found = _QUANT_RE.findall(stem)
    return quant_name(found[-1]) if found else None


# vLLM checkpoints name their quantization in the repository id ("Qwen2.5-32B-Instruct-AWQ",
# "Qwen2.5-14B-Instruct-GPTQ-Int4", "Meta-Llama-3.1-70B-Instruct-FP8", "...-FP8-dynamic")
_CKPT_QUANT = re.compile(r"(?<![a-z0-9])(awq|gptq|fp8)(?:[-_](int4|int8|4bit|8bit|dynamic|static))?(?![a-z0-9])", re.I)


def checkpoint_quant(name: str | None) -> str | None:
    """The vLLM weight format an HF checkpoint's name states: "awq", "gptq" (4-bit), "fp8" (per-tensor
    scales), "fp8_per_channel" (llm-compressor's FP8-dynamic); None where it states none or one
    glmbench has no format of (GPTQ-Int8, AWQ 8-bit)."""
    found = _CKPT_QUANT.findall(str(name or ""))
    if not found:
        return None
    q, v = found[-1][0].lower(), found[-1][1].lower()
    if q in ("awq", "gptq"):
        return q if v in ("", "int4", "4bit") else None
    return "fp8_per_channel" if v == "dynamic" else "fp8"


def _stem(filename: str) -> str:
    b = re.split(r"[\\/]", str(filename).rstrip("/\\"))[-1]
    b = re.sub(r"\.gguf$", "", b, flags=re.I)
    return re.sub(r"-\d{5}-of-\d{5}$", "", b)


def _tokens(s: str) -> list[str]:
    # dashes, underscores, spaces, slashes, and dots that are not a version's ("Model.Q4_K_M", not
    # "4.7"); letters then digits split ("llama3" = "llama 3", "v2" = "v 2"; not "8b")
    out = []
    for t in re.split(r"[-_\s/\\,;:()\[\]`'\"*|]+|\.(?!\d)|(?<!\d)\.", s.lower()):
        if t:
            out += [x for x in re.split(r"(?<=[a-z])(?=\d)", t) if x]
    return out


# llama.cpp's architecture name (`general.architecture`, the first word of llama-bench's `model`
# column) of each HF model_type the built-in configs use (convert_hf_to_gguf.py's model classes).
# A model_type not listed here is matched by its own name without underscores.
_HF_TO_ARCH = {"llama": "llama", "mistral": "llama", "mixtral": "llama", "qwen2": "qwen2", "qwen2_moe": "qwen2moe",
               "qwen3": "qwen3", "qwen3_moe": "qwen3moe", "deepseek_v2": "deepseek2", "deepseek_v3": "deepseek2",
               "glm4_moe_lite": "deepseek2", "kimi_k2": "deepseek2", "glm4_moe": "glm4moe", "gemma3": "gemma3",
               "gemma3_text": "gemma3", "gemma2": "gemma2", "gpt_oss": "gpt-oss", "seed_oss": "seed_oss",
               "phi3": "phi3", "glm4": "glm4", "llama4_text": "llama4", "minimax_m2": "minimax-m2",
               "ernie4_5_moe": "ernie4_5-moe", "qwen2_moe": "qwen2moe", "qwen3_next": "qwen3next",
               "qwen3_5_text": "qwen35", "qwen3_5": "qwen35", "qwen3_5_moe_text": "qwen35moe", "qwen3_5_moe": "qwen35moe",
               "cohere": "command-r", "cohere2": "cohere2", "nemotron_h": "nemotron_h",
               "granitemoehybrid": "granitehybrid", "kimi_linear": "kimi-linear", "gemma4_text": "gemma4",
               "gemma4": "gemma4", "ministral3": "mistral3", "falcon_h1": "falcon-h1",
               # DeepSeek Sparse Attention (conversion/glm.py GlmMoeDsaModel, conversion/deepseek.py DeepseekV32Model)
               "glm_moe_dsa": "glm-dsa", "deepseek_v32": "deepseek32",
               # LFM2's gated short-convolution hybrids (conversion/lfm2.py LFM2Model, LFM2MoeModel; src/llama-arch.cpp)
               "lfm2": "lfm2", "lfm2_moe": "lfm2moe",
               # OLMoE (conversion/olmo.py OlmoeModel), Granite 3.x dense and MoE (conversion/granite.py GraniteModel,
               # GraniteMoeModel)
               "olmoe": "olmoe", "granite": "granite", "granitemoe": "granitemoe",
               # OLMo 2 and OLMo 3 (conversion/olmo.py Olmo2Model: both llama.cpp's olmo2, OLMo 3 with its window),
               # SmolLM3 (conversion/llama.py SmolLM3Model), EXAONE 4 (conversion/exaone.py Exaone4Model)
               "olmo2": "olmo2", "olmo3": "olmo2", "smollm3": "smollm3", "exaone4": "exaone4",
               # Gemma 3n (conversion/gemma.py Gemma3NModel)
               "gemma3n_text": "gemma3n", "gemma3n": "gemma3n",
               # Hunyuan (conversion/hunyuan.py HunYuanModel, HunYuanMoEModel), Phi-3.5-MoE (conversion/phi.py PhiMoeModel)
               "hunyuan_v1_dense": "hunyuan-dense", "hunyuan_v1_moe": "hunyuan-moe", "phimoe": "phimoe",
               # Llama-Nemotron's DeciLM (conversion/deci.py DeciModel), EXAONE 3.x (conversion/exaone.py ExaoneModel),
               # ERNIE 4.5 dense (conversion/ernie.py Ernie4_5Model)
               "nemotron-nas": "deci", "exaone": "exaone", "ernie4_5": "ernie4_5",
               # dots.llm1 (conversion/dots1.py Dots1Model; src/models/dots1.cpp labels its 62 layers 142B, a size the
               # params column or the label's 142 billion tells)
               "dots1": "dots1",
               # Arcee AFM and Apertus (conversion/llama.py ArceeModel, ApertusModel)
               "arcee": "arcee", "apertus": "apertus",
               # Gemma 1 (conversion/gemma.py GemmaModel); GLM-4-9B-Chat as transformers ports it (conversion/chatglm.py
               # ChatGLMModel, registered for GlmForCausalLM: llama.cpp's chatglm, src/models/chatglm.cpp labels 40 layers
               # of 32 heads "9B")
               "gemma": "gemma", "glm": "chatglm",
               # InternLM3 (conversion/internlm.py InternLM3Model: model_arch LLAMA; src/models/llama.cpp labels its 48
               # layers "34B", so its row is told by the params column: 'llama 34B ... 8.80 B')
               "internlm3": "llama",
               # Arcee Trinity (conversion/afmoe.py AfmoeModel; src/models/afmoe.cpp labels 32 layers 26B, Trinity
               # Mini's 26.12 B)
               "afmoe": "afmoe",
               # Nemotron-4 / Minitron / Nemotron-Mini (conversion/nemotron.py NemotronModel; src/models/nemotron.cpp
               # labels 32 layers 4B, Nemotron-Mini-4B's 4.19 B)
               "nemotron": "nemotron"}
# model_types whose MoE models llama.cpp names apart: the converter writes a Nemotron-H config with experts
# (num_experts_per_tok: Nemotron 3 Nano) as nemotron_h_moe, the dense ones (Nemotron-H 8B, Nemotron-Nano-9B-v2)
# as nemotron_h (conversion/nemotron.py NemotronHModel)
_MOE_ARCH = {"nemotron_h": "nemotron_h_moe"}
# llama.cpp's size labels for these (src/models/nemotron-h.cpp load_arch_hparams: by the layer count alone,
# 52 -> "31B.A3.5B", 56 -> "9B"; granite-hybrid.cpp: by the hidden size, 1536 -> "7B.A1B" when
# feed_forward_length is 512, 2048 / 2560 -> "3B", 4096 -> "32B.A9B"): "nemotron_h_moe 31B.A3.5B" is
# Nemotron 3 Nano, "nemotron_h 9B" Nemotron-Nano-9B-v2, "granitehybrid 32B.A9B" / "7B.A1B" / "3B" Granite
# 4.0-H Small / Tiny / Micro. Nemotron-H 8B's 52 layers print as "nemotron_h 31B.A3.5B" too (the label
# llama.cpp meant for Nemotron 3 Nano): its row is told by the parameter count llama-bench prints beside it
# (8.10 B); a row without one (the size label alone) matches no built-in rather than a wrong one
# llama.cpp's size label (the second word of llama-bench's model column) of each architecture the built-ins use, as
# load_arch_hparams gives it (src/models/<arch>.cpp of the llama.cpp llama-cpp-python 0.3.36 vendors; n_layer without
# the MTP / nextn blocks, llama_hparams::n_layer()), by the layer count; "?B" for a depth not listed. A row without a
# params column is matched by it (model_candidates): the built-ins llama.cpp labels so, not those whose count is
# near the label's number, since the label is the depth's, not the model's (src/models/llama.cpp labels every 40-layer
# llama "13B": Llama 2 13B, Mistral NeMo 12B and Mistral Small 24B alike; every 32-layer one with a 128k vocabulary
# "8B": Llama 3.1 8B and Llama-3.1-Minitron 4B; deepseek2.cpp 61 layers "671B": DeepSeek-V3 / R1 and Kimi K2)
# Gemma 4 (gemma4.cpp: 35 layers -> "E2B", 42 -> "E4B", 30 -> "26B.A4B", 60 -> "31B"; the "E" sizes its "effective"
# parameters, without the per-layer embedding table the file holds), OLMoE (olmoe.cpp: 16 -> "A1.7B"), Gemma 3n
# (gemma3n.cpp: 30 -> "E2B", 35 -> "E4B"), Hunyuan-A13B (hunyuan-moe.cpp: 32 -> "A13B") and Phi-3.5-MoE (phimoe.cpp:
# 32 -> "16x3.8B"): labels no parameter count could read; ERNIE 4.5 0.3B's (ernie4-5.cpp: 18 -> "0.3B", 0.36 B),
# AFM-4.5B's (arcee.cpp: 36 -> "4B", 4.62 B), Gemma 1's (gemma.cpp: 18 -> "2B", 28 -> "7B", the 8.54 B gemma-7b):
# counts past a size label's 15%; deci.cpp labels 80 layers "70B" (Llama-3.3-Nemotron-Super-49B's and Nemotron-51B's),
# exaone.cpp 32 -> "8B", apertus.cpp 32 -> "8B", the other depths "?B": such rows are told by their params column
SIZE_LABEL_LAYERS = {
    "qwen3moe": {48: "30B.A3B", 94: "235B.A22B"}, "qwen2moe": {24: "A2.7B", 28: "57B.A14B"},
    "qwen3next": {48: "80B.A3B"}, "qwen35moe": {40: "35B.A3B", 48: "122B.A10B", 60: "397B.A17B"},
    "deepseek2": {27: "16B", 47: "30B.A3B", 60: "236B", 61: "671B"}, "deepseek32": {61: "685B.A37B"},
    "glm-dsa": {78: "744B.A40B"}, "glm4moe": {46: "106B.A12B", 48: "102B.A12B", 92: "355B.A32B"},
    "glm4": {17: "1B", 40: "9B", 61: "32B"}, "phi3": {24: "1B", 32: "3B", 40: "14B"}, "phimoe": {32: "16x3.8B"},
    "gemma": {18: "2B", 28: "7B"}, "gemma2": {26: "2B", 42: "9B", 46: "27B"},
    "gemma3": {18: "270M", 26: "1B", 32: "8B", 34: "4B", 48: "12B", 62: "27B"}, "gemma3n": {30: "E2B", 35: "E4B"},
    "gemma4": {30: "26B.A4B", 35: "E2B", 42: "E4B", 60: "31B"}, "command-r": {40: "35B"}, "cohere2": {32: "8B"},
    "arcee": {36: "4B"}, "apertus": {32: "8B"}, "afmoe": {56: "6B", 32: "26B"}, "dots1": {62: "142B"},
    "ernie4_5": {18: "0.3B", 28: "21B.A3B", 54: "300B.A47B"}, "ernie4_5-moe": {18: "0.3B", 28: "21B.A3B", 54: "300B.A47B"},
    "exaone": {32: "8B"}, "exaone4": {30: "1.2B", 64: "32B"}, "gpt-oss": {24: "20B", 36: "120B"},
    "granitemoe": {24: "1B.A400M", 32: "3B.A800M"}, "hunyuan-moe": {32: "A13B"}, "kimi-linear": {27: "48B.A3B"},
    "minimax-m2": {62: "230B.A10B"}, "nemotron_h": {52: "31B.A3.5B", 56: "9B"},
    "nemotron_h_moe": {52: "31B.A3.5B", 56: "9B"}, "nemotron": {32: "4B"},
    "olmo2": {16: "1B", 32: "7B", 40: "13B", 64: "32B"}, "olmoe": {16: "A1.7B"}, "seed_oss": {64: "36B"},
    "smollm3": {36: "3B"}, "mistral3": {26: "3B", 34: "8B", 40: "14B"}, "deci": {80: "70B"},
    "chatglm": {28: "6B", 40: "9B"}, "granite": {32: "3B", 64: "30B"}, "lfm2moe": {24: "8B.A1B", 40: "24B.A2B"},
    "llama": {16: "1B", 22: "1B", 26: "3B", 28: "3B", 30: "256M", 36: "8B", 40: "13B", 48: "34B", 60: "30B", 80: "70B"},
    "qwen2": {24: "1B", 28: "7B", 32: "7B", 36: "3B", 40: "13B", 48: "14B", 64: "32B", 80: "70B"},
    "qwen3": {28: "1.7B", 36: "8B", 40: "14B", 64: "32B"}, "qwen35": {24: "2B", 32: "9B", 64: "27B"}}
# the labels that depend on more than the depth (the same files): (the rule, where it gives none the depth's label
# in SIZE_LABEL_LAYERS; the labels it gives)
_SIZE_LABEL_BY = {
    # llama.cpp: Mixtral is the llama architecture with 8 experts; 32 layers by the vocabulary (49152: SmolLM's
    # "3B", under 40000: Llama 2's / Mistral's "7B", else Llama 3's "8B"); 80 layers "65B" without GQA (LLaMA 1)
    "llama": (lambda c: ({32: "8x7B", 56: "8x22B"}.get(c.n_layers, "?B") if c.n_routed_experts == 8 else
                         ("3B" if c.vocab_size == 49152 else "7B" if c.vocab_size < 40000 else "8B") if c.n_layers == 32
                         else "65B" if c.n_layers == 80 and c.n_heads == c.n_kv_heads else None),
              "8x7B 8x22B 3B 7B 8B 65B"),
    "qwen2": (lambda c: ("0.5B" if c.n_layers == 24 and c.hidden_size == 1024 else
                         "1.5B" if c.n_layers == 28 and c.hidden_size == 1536 else
                         "4B" if c.n_layers == 40 and c.n_heads == 20 else None), "0.5B 1.5B 4B"),
    "qwen3": (lambda c: ("0.6B" if c.n_layers == 28 and c.hidden_size == 1024 else
                         "4B" if c.n_layers == 36 and c.hidden_size == 2560 else None), "0.6B 4B"),
    "qwen35": (lambda c: ("0.8B" if c.n_layers == 24 and c.hidden_size == 1024 else
                          "4B" if c.n_layers == 32 and c.hidden_size == 2560 else None), "0.8B 4B"),
    "chatglm": (lambda c: ("1.5B" if c.n_layers == 28 and c.n_heads == 16 else
                           "4B" if c.n_layers == 40 and c.n_heads == 24 else None), "1.5B 4B"),
    "granite": (lambda c: {2048: "2B", 2560: "3B", 4096: "8B"}.get(c.hidden_size, "?B") if c.n_layers == 40 else None,
                "2B 3B 8B"),
    # granite-hybrid.cpp: by the hidden size; 1536 -> "7B.A1B" where feed_forward_length is 512 (the MoE Tiny's)
    "granitehybrid": (lambda c: ("7B.A1B" if c.n_routed_experts else "1B") if c.hidden_size == 1536 else
                      {768: "350M", 2048: "3B", 2560: "3B", 4096: "32B.A9B"}.get(c.hidden_size, "?B"),
                      "350M 7B.A1B 1B 3B 32B.A9B"),
    # llama4.cpp: by the expert count, "17Bx16E (Scout)" / "17Bx128E (Maverick)" (the row's second word, the first)
    "llama4": (lambda c: {16: "17Bx16E", 128: "17Bx128E"}.get(c.n_routed_experts, "?B"), "17Bx16E 17Bx128E"),
    # lfm2.cpp: by the MLP's width (n_ff, after LFM2's auto-adjust)
    "lfm2": (lambda c: {2560: "230M", 4608: "350M", 6912: "700M", 8192: "1.2B", 10752: "2.6B"}.get(c.intermediate_size,
                                                                                                  "?B"),
             "230M 350M 700M 1.2B 2.6B")}


def arch_labels(arch: str) -> set:
    """Every size label llama.cpp gives architecture `arch` (a vision-language one's text architecture's)."""
    arch = TEXT_ARCH_OF.get(arch, arch)
    return set(SIZE_LABEL_LAYERS.get(arch, {}).values()) | set(_SIZE_LABEL_BY.get(arch, (None, ""))[1].split())


def size_label(c, arch: str | None = None) -> str:
    """The size label llama.cpp gives config `c` of llama.cpp architecture `arch` (_arch_of its model_type by
    default; a vision-language architecture's text one, TEXT_ARCH_OF): SIZE_LABEL_LAYERS, _SIZE_LABEL_BY; "?B" where
    llama.cpp gives none (or glmbench does not know its rule)."""
    arch = arch or _arch_of(c.model_type, bool(c.n_routed_experts))
    arch = TEXT_ARCH_OF.get(arch, arch)
    by = _SIZE_LABEL_BY.get(arch)
    label = by[0](c) if by else None
    return label or SIZE_LABEL_LAYERS.get(arch, {}).get(c.n_layers, "?B")


# a size label (Llama-3.1-Minitron 4B's "8B", InternLM3 8B's "34B") that is the label of its depth, more than this
# far from the built-in's count: a row of it alone is likelier another model of that size (CodeLlama 34B's "llama 34B")
_LABEL_ASTRAY = 1.5
# llama.cpp architectures that are a vision-language model's text layers: the GGUF llama-bench runs holds only
# those (the vision tower is the separate mmproj file), the same layers as the text model's architecture
# (Qwen3-VL's text config: Qwen3's / Qwen3-MoE's layers, longer native context; Qwen2-VL / Qwen2.5-VL: Qwen2's):
# gguf_file.VL_TEXT_ARCHITECTURES, which reads their files the same way
TEXT_ARCH_OF = gguf_file.VL_TEXT_ARCHITECTURES
# llama.cpp's mistral3 (conversion/mistral3.py: Mistral3ForConditionalGeneration, Ministral3ForCausalLM): Mistral
# Small 3.1 / 3.2, Devstral Small 2 and Ministral 3, Mistral's text layers (the llama architecture's before
# the converter named them apart); a mistral3 row matches the Mistral family's built-ins only
# (model_type mistral or ministral3), not every llama-architecture one of its size
MISTRAL3_TYPES = ("mistral", "ministral3")
PARAMS_TOLERANCE = 0.03   # a built-in matches llama-bench's params count within 3%
# built-ins whose counts are within 0.3% of each other are one candidate set (phi-3-mini's 3.821 B and phi-4-mini's
# 3.836 B, 0.39% apart, are not: llama-bench's "3.82 B" / "3.84 B" tell them apart)
_TIE = 0.003


def _arch_of(model_type: str, moe: bool = False) -> str:
    """llama.cpp's architecture name of HF `model_type` (`moe`: the config has experts, _MOE_ARCH)."""
    if moe and model_type in _MOE_ARCH:
        return _MOE_ARCH[model_type]
    return _HF_TO_ARCH.get(model_type, model_type.replace("_", ""))


def _gguf_params(c) -> int:
    """The parameter count llama-bench prints for a config: its total, plus for GLM-4.5 / 4.6 (glm4_moe) the
    multi-token-prediction layers the HF checkpoint holds and llama.cpp's converter keeps in the GGUF
    (blk.N.nextn.*: a MoE layer with its eh_proj, norms, embed_tokens and shared_head; GLM-4.5-Air 110.47 B
    where its total without them is 106.85 B, more than PARAMS_TOLERANCE apart), for the Gated DeltaNet
    hybrids their MTP block (a file converted with --no-mtp is within PARAMS_TOLERANCE of either count), and for
    Gemma 4 the kv-shared layers' unused k / v, rope_freqs and the layer scalars the file holds (Gemma 3n: its unused k / v and the padded per-layer table)."""
    total = c.total_params()
    hf = getattr(c, "hf", None) or {}
    h = c.hidden_size
    if c.model_type in configs.LINEAR_FAMILIES:
        # Qwen3-Next / Qwen3.5: the released checkpoints hold one MTP block (mtp_num_hidden_layers), which the
        # converter keeps by default (--no-mtp drops it; conversion/qwen.py): one full-attention layer with its
        # MLP or MoE, eh_proj (2h -> h) and three norms, sharing the embeddings and the head (src/models/qwen35.cpp)
        n_mtp = int(hf.get("mtp_num_hidden_layers", hf.get("num_nextn_predict_layers", 1)) or 0)
        mlp = (c.router_params() + c.n_routed_experts * c.expert_params() + c.shared_expert_params()
               if c.n_routed_experts else c.dense_mlp_params())
        return total + n_mtp * (c.attention_params() + 2 * h + mlp + 2 * h * h + 3 * h)
    if c.model_type in configs.GEMMA4_FAMILIES:
        # Gemma 4: the released checkpoints hold k / v projections (and k norms) for the kv-shared layers too, which
        # the converter keeps and llama.cpp loads unused; the file adds the global layers' rope_freqs (head dim / 2
        # factors) and holds each layer's scalar (HF's layer_scalar, a buffer HF does not count): E4B's 7.52 B in
        # llama-bench (docs/build-riscv64-spacemit.md of llama.cpp) where its HF count is 7.46 B
        kv = sum(2 * c.layer_kv_heads(i) * c.layer_head_dim(i) * h + c.layer_head_dim(i)
                 for i in c.attention_layers if not c.owns_kv(i))
        return total + kv + (c.global_head_dim // 2 if c.global_head_dim else 0) + c.n_layers
    if c.model_type in configs.GEMMA3N_FAMILIES:
        # Gemma 3n: the kv-shared layers' k / v projections and k norms as Gemma 4's, and the per-layer table padded
        # by the converter from vocab_size_per_layer_input rows to the whole vocabulary (conversion/gemma.py)
        kv = sum(2 * c.n_kv_heads * c.head_dim * h + c.head_dim for i in c.attention_layers if not c.owns_kv(i))
        return total + kv + max(c.vocab_size - c.ple_vocab, 0) * c.n_layers * c.ple_size
    n_mtp = int(hf.get("num_nextn_predict_layers") or 0)
    if c.model_type != "glm4_moe" or not n_mtp:
        return total
    layer = (c.attention_params() + c.n_layer_norms * h + c.router_params() + c.n_routed_experts * c.expert_params()
             + c.shared_expert_params())
    return total + n_mtp * (layer + 2 * h * h + 3 * h + 2 * c.vocab_size * h)


_BUILTIN_CACHE: dict = {}


def _builtins() -> dict:
    """name -> (llama.cpp architecture, total parameters) of every built-in config (read once per
    set of built-ins: other branches add configs)."""
    names = tuple(configs.builtin_names())
    if _BUILTIN_CACHE.get("names") != names:
        info = {}
        for n in names:
            try:
                c = configs.load(n)
                info[n] = (_arch_of(c.model_type, bool(c.n_routed_experts)), _gguf_params(c))
            except (ValueError, TypeError, KeyError, OSError):
                continue
        _BUILTIN_CACHE.update(names=names, info=info)
    return _BUILTIN_CACHE["info"]


def names_in(text: str | None) -> list[str]:
    """The built-in models `text` (a file name, an HF id, a line of prose) names: each built-in
    whose name's words all occur in it, the most specific only ("qwen3-coder-30b-a3b" over
    "qwen3-30b-a3b" when both fit)."""
    if not text:
        return []
    toks = _tokens(str(text))
    cands = [n for n in _builtins() if _in_order(_tokens(n), toks)]
    return [c for c in cands if not any(o != c and set(_tokens(c)) < set(_tokens(o)) for o in cands)]


# a word right after a model's name that makes it another, smaller model of the family ("Phi-4-mini" is not
# phi-4): a name followed by one that it does not hold is no match. Words prose puts after a name too ("small
# batch", "flash attention") are not among them; a variant built in ("GLM-4.5-Air") wins as the more specific name.
_VARIANT_WORDS = {"mini", "nano", "tiny", "micro", "lite"}


def _in_order(name: list, toks: list, slack: int = 2) -> bool:
    """The words of `name` occur in `toks` in order, within len(name) + slack words
    ("Mistral-Small-3.2-24B" holds mistral-small-24b; prose that says "DeepSeek" in one sentence
    and "Lite" in another does not hold deepseek-v2-lite), and the word after them does not make
    it a smaller variant the name does not say ("Phi-4-mini" does not hold phi-4)."""
    if not name:
        return False
    for i, t in enumerate(toks):
        if t != name[0]:
            continue
        j, k = i + 1, 1
        while k < len(name) and j < len(toks) and j - i < len(name) + slack:
            if toks[j] == name[k]:
                k += 1
            j += 1
        variant = j < len(toks) and toks[j] in _VARIANT_WORDS and toks[j] not in name
        if k == len(name) and not variant:
            return True
    return False


def _fmt_params(p):
    return f"{p / 1e9:.2f} B"


def model_candidates(model_type: str | None, n_params: float | None = None) -> tuple[list[str], str]:
    """Built-ins llama.cpp's `model_type` ("deepseek2 30B.A3B Q4_K - Medium") and parameter count
    can be: same architecture, parameters within PARAMS_TOLERANCE, the nearest (and any within
    _TIE of it; of those, one whose count is exactly `n_params`, a JSON row's). Without a count,
    those llama.cpp gives the size label ("30B.A3B", size_label), every one of them, whatever its
    count (the label is the depth's), none where each is _LABEL_ASTRAY from the label's size (a name
    in the file still picks one, identify_model); a label llama.cpp gives the architecture but no
    built-in, the label's size within 15% among those it labels "?B"; another build's label, the
    label's size within 15%. (candidates, what was matched)."""
    cands, what, sure = _candidates(model_type, n_params)
    return (cands if sure else []), what


def _candidates(model_type, n_params):
    """model_candidates' (candidates, what, sure): not sure where the candidates are the built-ins a size label
    alone names and it is only the label of their depth (a name in the file has to say which)."""
    parts = str(model_type or "").split()
    arch = parts[0].lower() if parts else ""
    size = parts[1] if len(parts) > 1 else ""
    info = _builtins()
    text_arch = TEXT_ARCH_OF.get(arch, arch)
    same = {n: p for n, (a, p) in info.items() if a == text_arch}
    if arch == "mistral3":
        same = {n: p for n, (a, p) in info.items() if a in ("llama", "mistral3") and _model_type(n) in MISTRAL3_TYPES}
    if n_params:
        tol, ref, what = PARAMS_TOLERANCE, float(n_params), f"'{arch} {size}'".replace(" '", "'") + f" + {_fmt_params(n_params)} params"
    else:
        ref, tol, what = (_size_params(size) or 0) * 1e9, 0.15, f"'{arch} {size}'".strip()
    if text_arch != arch:
        what += f" (a vision-language model's text layers, as {text_arch})"
    if arch == "mistral3" and not n_params:
        # src/models/mistral3.cpp labels by the layer count alone (26 -> 3B, 34 -> 8B, 40 -> 14B): Mistral Small
        # 3.x's 40 layers print as 14B, as Ministral 3 14B's do; only a params count tells them apart
        return [], what + " (llama.cpp's mistral3 size label is its layer count; a params column is needed)", True
    if not n_params and size and size != "?B":
        labels = _builtin_labels()
        fit = sorted(n for n in same if labels.get(n) == size)
        if fit:
            # the label is the depth's: every built-in llama.cpp labels so fits, however far its count is from it
            what += f" (llama.cpp's label of {_depths(fit)})"
            # (a size, or a total and its active part: not "A13B", "E4B", "16x3.8B", "17Bx16E")
            plain = re.fullmatch(r"\d+(?:\.\d+)?[BM](?:\.A\d+(?:\.\d+)?[BM])?", size)
            near = [n for n in fit if not (ref and plain) or max(same[n], ref) / min(same[n], ref) <= _LABEL_ASTRAY]
            if not near:
                return fit, what + (f"; {_fmt_params(max(same[n] for n in fit))} at most, another model's size: "
                                    "a params column or the file name tells"), False
            return fit, what, True
        if size in arch_labels(text_arch):
            # a label llama.cpp gives this architecture, none of the built-ins: another model's (Qwen1.5-0.5B's
            # "qwen2 0.5B", not Qwen2.5-0.5B's "qwen2 1B"); of the built-ins, those it labels "?B" may be read by size
            same = {n: p for n, p in same.items() if labels.get(n, "?B") == "?B"}
        # else another build's label (an older llama.cpp's "command-r 104B"): read as a size
    if not ref:
        return [], what, True
    near = {n: abs(p - ref) / ref for n, p in same.items() if abs(p - ref) <= tol * ref}
    if not near:
        return [], what, True
    best = min(near.values())
    tied = sorted(n for n, e in near.items() if e <= best + _TIE)
    # a count not rounded as the markdown table prints it (to 0.01 B / 0.01 M): JSON / CSV's exact one
    exact = [n for n in tied if n_params and n_params == int(n_params) and int(n_params) % 10_000 and same[n] == n_params]
    return (exact if len(exact) == 1 else tied), what, True


def _depths(names):
    layers = sorted({_n_layers(n) for n in names})
    return " / ".join(map(str, layers)) + " layers"


def _builtin_labels() -> dict:
    """name -> size_label of every built-in (read once per set of built-ins, as _builtins)."""
    info = _builtins()
    if _BUILTIN_CACHE.get("labels_of") != tuple(info):
        labels = {}
        for n, (arch, _) in info.items():
            try:
                labels[n] = size_label(configs.load(n), arch)
            except (ValueError, TypeError, KeyError, OSError):
                continue
        _BUILTIN_CACHE.update(labels=labels, labels_of=tuple(info))
    return _BUILTIN_CACHE["labels"]


def _model_type(name: str) -> str | None:
    try:
        return configs.load(name).model_type
    except (ValueError, TypeError, KeyError, OSError):
        return None


def _n_layers(name: str) -> int | None:
    try:
        return configs.load(name).n_layers
    except (ValueError, TypeError, KeyError, OSError):
        return None


def identify_model(filename: str | None = None, model_type: str | None = None, n_params: float | None = None,
                   hints: Iterable[tuple[str, str]] = (), alike: bool = True) -> tuple[str | None, str]:
    """(built-in model name, how it was told), or (None, why not). Told from llama.cpp's
    `model_type` and parameter count (model_candidates), narrowed where several fit by the names
    in `filename` and `hints` ((text, where) pairs: a command line's -m, a heading, the file
    name); without a model_type, from the first of those that names exactly one built-in.
    Where several fit and nothing tells them apart: with `alike`, one to stand for them when they
    share a cost shape (alike_pick: fine-tunes of one set of layers, priced alike; the how says
    so); else (or when their shapes differ) raises AmbiguousModel. Built-ins a size label alone
    names whose counts are far from it (_LABEL_ASTRAY) only where a name says which: else none."""
    sources = ([(filename, f"file name {_stem(filename)!r}")] if filename else []) + list(hints)
    if model_type:
        cands, what, sure = _candidates(model_type, n_params)
        if len(cands) == 1 and sure:
            return cands[0], f"from {what}"
        if cands:
            for text, where in sources:
                pick = [n for n in names_in(text) if n in cands]
                if len(pick) == 1:
                    return pick[0], f"from {what} (fits {', '.join(cands)}) and the {where}"
            if not sure:
                return None, f"{what}: {', '.join(cands)} by the label, nothing in the file names one"
            pick = alike_pick(cands) if alike else None
            if pick:
                return pick, (f"from {what}: fits {', '.join(cands)}, fine-tunes of one shape the cost model prices "
                              f"alike (configs.cost_shape); taken as {pick}, nothing in the file names which "
                              "(--model NAME picks one)")
            raise AmbiguousModel(f"{what} fits several built-in models: {', '.join(cands)}; --model NAME picks one")
        why = f"{what} matches no built-in model"
    else:
        why = "no model column"
    for text, where in sources:
        found = names_in(text)
        if len(found) == 1:
            if model_type:  # the table's model is none of the built-ins: a name elsewhere does not make it one
                break
            return found[0], f"from the {where}"
    return None, why


def alike_pick(names: list[str]) -> str | None:
    """Where every one of `names` has the same cost shape (configs.ModelConfig.cost_shape: one set
    of layers, fine-tuned or renamed), the one to stand for them: the base whose name's words the
    most others' hold ("qwen3-30b-a3b" in "qwen3-coder-30b-a3b"), then the fewest words, the shortest
    name, the first by name; else None."""
    try:
        shapes = {configs.load(n).cost_shape() for n in names}
    except (ValueError, TypeError, KeyError, OSError):
        return None
    if len(shapes) != 1:
        return None
    toks = {n: set(_tokens(n)) for n in names}
    return min(sorted(names), key=lambda n: (-sum(toks[n] < toks[o] for o in names if o != n), len(toks[n]), len(n)))


class AmbiguousModel(ValueError):
    pass


def _size_params(label: str) -> float | None:
    m = re.match(r"^(\d+(?:\.\d+)?)([BM])", label or "")
    if not m:
        return None
    return float(m.group(1)) * (1 if m.group(2) == "B" else 1e-3)


def _canonical_model(name, path, arg):
    if name in (None, ""):
        return None
    try:
        return configs.load(name).name
    except (ValueError, TypeError) as e:
        raise FormatError(f"{path}: `{arg}`: {e}") from None


class _Context:
    def __init__(self, path, fmt, model, default_model, notices=None):
        self.path, self.fmt, self.model, self.default_model = path, fmt, model, default_model
        self.notices = notices if notices is not None else []

    def notice(self, line, msg):
        """One line per assumption: the same one for several tables of a file is said once, at the
        first."""
        if msg in getattr(self, "_said", set()):
            return
        self._said = getattr(self, "_said", set()) | {msg}
        self.notices.append(f"{_where(self.path, line)}: {msg}")

    def file_hint(self) -> tuple:
        """The file's own name as a hint for its model (the last one tried)."""
        return os.path.basename(self.path), f"file name {os.path.basename(self.path)!r}"

    def _identified(self, filename, model_type, n_params, hints):
        """identify_model's answer (or its AmbiguousModel), remembered for this file: a large file names the
        same model on every record."""
        hints = tuple(hints)
        alike = not self.default_model
        try:
            key = (type(filename), filename, type(model_type), model_type, type(n_params), n_params, hints, alike)
            hash(key)
        except TypeError:
            return identify_model(filename, model_type, n_params, hints, alike=alike)
        memo = self.__dict__.setdefault("_identify_memo", {})
        got = memo.get(key)
        if got is None:
            try:
                got = ("ok", identify_model(filename, model_type, n_params, hints, alike=alike))
            except AmbiguousModel as e:
                got = ("ambiguous", e)
            if len(memo) < 4096:
                memo[key] = got
        if got[0] == "ambiguous":
            raise AmbiguousModel(*got[1].args)
        return got[1]

    def model_for(self, line, *, filename=None, model_type=None, n_params=None, hints=(), what=""):
        """(model or None, how). --model wins; else the file tells (identify_model); else
        default_model; else no model, with a notice (compare shows the records; calibrate and
        the report ask for --model). Several built-ins that fit is an error."""
        if self.model:
            return self.model, "given (--model)"
        try:
            # a default model (the one --model, a sidecar's) decides among alike built-ins
            name, why = self._identified(filename, model_type, n_params, hints)
        except AmbiguousModel as e:
            if self.default_model:
                return self.default_model, "given (the one --model)"
            _fail(self.path, line, f"cannot tell which model {what or 'this is'}: {e} "
                                   f"(model= in the API; a built-in or a config.json)")
        if name:
            return name, why
        if self.default_model:
            return self.default_model, "given (the one --model)"
        self.notice(line, f"model: not known ({why}); the records carry no model: --model NAME sets it "
                          f"(a built-in: {', '.join(configs.builtin_names())}; or a config.json)")
        return None, f"not known ({why})"

    def source(self, line) -> str:
        return _where(self.path, line)


# ---- value helpers --------------------------------------------------------------------------------
# a number with thousands separators, strictly grouped ("4,512.33", "12,800"): never a list ("512,1024")
# nor a decimal comma ("4512,33")
_GROUPED = re.compile(r"[+-]?\d{1,3}(?:,\d{3})+(?:\.\d*)?")


def _num(ctx, line, field, v, *, integer=False, required=True, positive=False, minimum=None):
    if type(v) is int and -2 ** 53 <= v <= 2 ** 53 and (minimum is None or v >= minimum) and (v > 0 or not positive):
        return v if integer else float(v)   # (a JSON integer that passes every check below, as they would return
                                            # it: a large file has millions)
    if v is None or v == "":
        if required:
            _fail(ctx.path, line, f"field `{field}` is missing")
        return None
    if isinstance(v, bool):
        _fail(ctx.path, line, f"field `{field}` must be a number, got {v!r}")
    if isinstance(v, str):
        t = v.strip()
        if _GROUPED.fullmatch(t):
            t = t.replace(",", "")      # "4,512.33" as a person types a speed into a pasted table
        try:
            v = float(t)
        except ValueError:
            _fail(ctx.path, line, f"field `{field}` must be a number, got {v!r}")
    if isinstance(v, float) and math.isnan(v) and not required:
        return None  # an optional statistic a tool could not compute (a mean TPOT of one-token outputs)
    if isinstance(v, int) and not isinstance(v, bool) and abs(v) > 2 ** 1023:
        # (math.isfinite raised OverflowError on a JSON integer past a float's range)
        _fail(ctx.path, line, f"field `{field}` must be a finite number, got a {len(str(abs(v)))}-digit integer")
    if not isinstance(v, (int, float)) or not math.isfinite(v):
        _fail(ctx.path, line, f"field `{field}` must be a finite number, got {v!r}")
    if positive and not v > 0:
        _fail(ctx.path, line, f"field `{field}` must be > 0, got {v!r}")
    if minimum is not None and v < minimum:
        _fail(ctx.path, line, f"field `{field}` must be >= {minimum}, got {v!r}")
    if integer:
        if float(v) != int(v):
            _fail(ctx.path, line, f"field `{field}` must be a whole number, got {v!r}")
        return int(v)
    return float(v)


def _speed(ctx, line, field, v):
    if v is None or v == "":
        _fail(ctx.path, line, f"no speed: field `{field}` is missing")
    return _num(ctx, line, field, v, positive=True)


def _flag(v):
    """llama-bench's flash_attn: -1 auto / 0 off / 1 on (older builds: a bool)."""
    if v is None or v == "":
        return None
    if isinstance(v, bool):
        return int(v)
    s = str(v).strip().lower()
    return {"true": 1, "false": 0, "on": 1, "off": 0, "auto": -1, "yes": 1, "no": 0}.get(s, None) \
        if not re.fullmatch(r"-?\d+", s) else int(s)


def _bool(v):
    if v is None or v == "" or isinstance(v, bool):
        return None if v == "" else v
    return str(v).strip().lower() in ("1", "true", "yes", "on")


def _kv_name(v):
    if v in (None, "", "auto"):
        return None
    s = str(v).strip().lower()
    return s


def _gpus(gpu_info: str | None) -> list[str]:
    if not gpu_info:
        return []
    out = []
    for g in str(gpu_info).split(","):
        g = g.strip()
        g = re.sub(r"^(NVIDIA\s+)?(GeForce\s+)?", "", g)
        if g:
            out.append(g)
    return out


def _hardware_key(device: str | None) -> str | None:
    """The hardware profile a printed GPU name is (predict.hardware.resolve_gpu_name: the catalog's
    names and aliases), or None."""
    if not device:
        return None
    resolve = getattr(hardware, "resolve_gpu_name", None)
    if resolve is not None:
        try:
            return resolve(device)
        except (ValueError, TypeError):
            return None
    # until the catalog resolves names itself: a profile's key or display name, without NVIDIA/GeForce
    k = re.sub(r"^(nvidia\s+)?(geforce\s+)?", "", device.strip().lower()).replace(" ", "-").replace("_", "-")
    if k in hardware.list_gpus():
        return k
    for g in hardware.list_gpus():
        if hardware._norm(hardware.get_gpu(g).name) == k:
            return g
    return None


_RIG_MEMO: dict = {}    # _rig's answers during one read_text (a large file states the same rig on every record)


_RIG_TYPES = frozenset((type(None), str, int, float, bool))     # values _rig remembers its answer for


def _rig(gpu_info, cpu_info, devices, split_mode, main_gpu=None) -> dict:
    key = (gpu_info, cpu_info, devices, split_mode, main_gpu)
    types = tuple(map(type, key))
    if _RIG_TYPES.issuperset(types):
        key = (types, key)      # (1 and True and 1.0 are one key otherwise)
        got = _RIG_MEMO.get(key)
        if got is None:
            if len(_RIG_MEMO) >= 1024:
                _RIG_MEMO.clear()
            got = _RIG_MEMO[key] = _rig_of(gpu_info, cpu_info, devices, split_mode, main_gpu)
        return dict(got)
    return _rig_of(gpu_info, cpu_info, devices, split_mode, main_gpu)


def _rig_of(gpu_info, cpu_info, devices, split_mode, main_gpu=None) -> dict:
    gpus = _gpus(gpu_info)
    n_dev = None
    if devices and str(devices).strip().lower() not in ("auto", "none", ""):
        n_dev = len([d for d in str(devices).split("/") if d.strip()])
    sel = selected_devices(dict(enumerate(gpus)), devices) if gpus else None
    if sel:   # devices "CUDA1": that card of gpu_info's list
        gpus = sel
    mg = _main_gpu(gpus, split_mode, main_gpu)
    if mg is not None:
        gpus, n_dev = [gpus[mg]], 1
    if gpus:
        n = n_dev or len(gpus)
        device = gpus[0] if len(set(gpus)) == 1 else " + ".join(dict.fromkeys(gpus))
    else:
        n = 1 if cpu_info else n_dev
        device = str(cpu_info).strip() if cpu_info else None
    sm = str(split_mode).strip().lower() if split_mode not in (None, "") else None
    if n == 1:
        split = "none"
    else:
        split = {"layer": "layer", "row": "tensor", "tensor": "tensor", "none": "none"}.get(sm, sm)
    return {"device": device, "hardware": _hardware_key(device) if gpus else None, "n_cards": n, "split": split}


def _main_gpu(gpus: list, split_mode, main_gpu) -> int | None:
    """The index (into `gpus`, the cards -dev left) of the one card a `-sm none` run used: llama.cpp keeps
    only the main GPU (-mg, default 0) of the model's devices (src/llama.cpp, LLAMA_SPLIT_MODE_NONE); None
    where the run is not -sm none on several cards, or -mg is not one index of them."""
    if str(split_mode or "").strip().lower() != "none" or len(gpus) < 2:
        return None
    mg = str(main_gpu if main_gpu not in (None, "") else 0).strip()
    return int(mg) if re.fullmatch(r"\d+", mg) and int(mg) < len(gpus) else None


def _test_of(ctx, line, n_prompt, n_gen) -> str:
    if n_prompt > 0 and n_gen == 0:
        return "pp"
    if n_gen > 0 and n_prompt == 0:
        return "tg"
    if n_gen > 0 and n_prompt > 0:
        return "pg"
    _fail(ctx.path, line, "a test with neither prompt nor generated tokens (n_prompt = n_gen = 0)")


def _clean(r: dict) -> dict:
    return {k: v for k, v in r.items() if v is not None}


# ---- glmbench's own records --------------------------------------------------------------------
def _read_glmbench(text, ctx):
    s = text.lstrip()
    if s.startswith("[") or s.startswith("{"):
        items = _json_items(text, ctx.path)
    else:
        rows = csv.DictReader(io.StringIO(text))
        items = []
        for row in rows:
            if None in row:
                _fail(ctx.path, rows.line_num, f"{len(row[None]) + len(row) - 1} cells, the header has {len(rows.fieldnames)}")
            items.append((rows.line_num, {k: rec._parse_cell(v) if v is not None else None for k, v in row.items()}))
    out = []
    for i, (line, r) in enumerate(items, 1):
        try:
            rec.validate(r)
        except (TypeError, ValueError) as e:
            _fail(ctx.path, line, f"record {i}: {e}")
        if r["evidence"] == "measured" and r.get("test") in ("tg", "pp"):
            _speed(ctx, line, "avg_ts", r.get("avg_ts"))
        if r.get("test") in ("tg", "pp"):   # what every reader keys and plots a speed by (a KeyError deep in plot)
            _num(ctx, line, "n_depth", r.get("n_depth"), integer=True, minimum=0)
        if r.get("test") == "pp":
            _num(ctx, line, "n_prompt", r.get("n_prompt"), integer=True, minimum=0)
        out.append(r)
    return out


# ---- llama-bench ---------------------------------------------------------------------------------
_LB_INT = ("build_number", "model_size", "model_n_params", "n_batch", "n_ubatch", "n_threads", "poll",
           "n_gpu_layers", "n_cpu_moe", "main_gpu", "no_op_offload", "fit_target", "fit_min_ctx",
           "avg_ns", "stddev_ns")
_LB_MIN = {"n_batch": 1, "n_ubatch": 1, "n_threads": 0, "model_size": 0, "model_n_params": 0}   # a batch of 0 is no run
_LB_BOOL = ("cpu_strict", "no_kv_offload", "embeddings", "no_host", "use_mmap", "use_direct_io", "repack")
_LB_KEEP = ("build_commit", "build_number", "cpu_info", "gpu_info", "backends", "model_filename", "model_type",
            "model_size", "model_n_params", "n_batch", "n_ubatch", "n_threads", "n_gpu_layers", "n_cpu_moe",
            "split_mode", "main_gpu", "no_kv_offload", "devices", "tensor_split", "tensor_buft_overrides",
            "load_mode", "lazy_mode", "use_mmap", "use_direct_io", "embeddings", "no_op_offload", "cpu_mask", "cpu_strict",
            "poll", "no_host", "repack",
            "fit_target", "fit_min_ctx", "test_time", "avg_ns", "stddev_ns", "samples_ns", "samples_ts")


# llama-bench's backend fields before `backends` (2024 builds: "cuda": "1", "vulkan": "0", ...)
_OLD_BACKEND_FIELDS = (("vulkan", "Vulkan"), ("metal", "Metal"), ("sycl", "SYCL"), ("kompute", "Kompute"), ("cuda", "CUDA"))
# what only ik_llama.cpp's llama-bench prints (md columns; json/csv fields): -mla, -amb, -fmoe, -rtr, -ser, -thp.
# Not `repack`: mainline's llama-bench prints it too since its --repack option (2026; md column "rpk"), and
# ik's json/csv always carry mla_attn, attn_max_batch, ser and fused_moe beside it
_IK_ONLY_FIELDS = {"mla", "amb", "fmoe", "rtr", "ser", "thp", "mla_attn", "attn_max_batch", "fused_moe", "use_thp"}
# fields only llama-bench writes: a record with n_prompt/n_gen and one of these is llama-bench's
# even without its speed (the import then says `avg_ts` is missing, naming the line)
_LLAMA_BENCH_ONLY = {"build_commit", "build_number", "model_filename", "avg_ns", "samples_ns", "samples_ts"}


def _is_llama_bench(o) -> bool:
    if not isinstance(o, dict) or "evidence" in o:
        return False
    keys = set(o)
    return {"n_prompt", "n_gen"} <= keys and ("avg_ts" in keys or bool(keys & _LLAMA_BENCH_ONLY))


def _llama_bench_record(o: dict, ctx, line, meta: dict | None = None) -> dict:
    n_prompt = _num(ctx, line, "n_prompt", o.get("n_prompt"), integer=True, minimum=0)
    n_gen = _num(ctx, line, "n_gen", o.get("n_gen"), integer=True, minimum=0)
    # n_depth is in every build since llama-bench got -d (2025); older output has none: depth 0
    n_depth = _num(ctx, line, "n_depth", o.get("n_depth", 0), integer=True, minimum=0)
    test = _test_of(ctx, line, n_prompt, n_gen)
    avg = _speed(ctx, line, "avg_ts", o.get("avg_ts"))
    sd = _num(ctx, line, "stddev_ts", o.get("stddev_ts"), required=False, minimum=0)
    meta = meta or {}
    inferred = dict(meta.get("inferred") or {})
    if "model" in meta:
        model = meta["model"]
    else:
        n_params = _num(ctx, line, "model_n_params", o.get("model_n_params"), required=False)
        # (a paste of records and tables: what the table of the run says around it, _read_bench_output_and_tables)
        hints = ctx.hints_at(line) if getattr(ctx, "hints_at", None) else ()
        model, how = ctx.model_for(line, filename=o.get("model_filename"), model_type=o.get("model_type"),
                                   n_params=n_params, hints=hints)
        inferred["model"] = how
    r = {"evidence": "measured", "test": test, "model": model, "tool": "llama-bench", "source": ctx.source(line)}
    r.update(_rig(o.get("gpu_info"), o.get("cpu_info"), o.get("devices"), o.get("split_mode"), o.get("main_gpu")))
    if r.get("device") and "card" not in inferred:
        inferred["card"] = f"{r['device']} x{r['n_cards']} (from gpu_info)"
    ftype = ftype_of(o.get("model_type"))
    r["weights"] = quant_name(ftype) or gguf_quant(_quant_from_filename(o.get("model_filename")))
    if r["weights"] and "weights" not in inferred:
        inferred["weights"] = (f"from the file type {ftype!r}" if quant_name(ftype) else
                               f"from the file name {_stem(o.get('model_filename'))!r}")
    if o.get("backends") and "backend" not in meta:
        # a build of several GPU backends runs on the one its devices are of (-dev Vulkan0 of a CUDA,Vulkan build)
        r["backend"] = _dev_backend(o.get("devices"), o["backends"]) or _backend_name(o.get("backends"))
    elif "backends" not in o and "backend" not in meta:   # builds before `backends` (2024): a 0/1 field per backend
        on = [b for k, b in _OLD_BACKEND_FIELDS if _bool(o.get(k))]
        if on:
            r["backend"] = on[0]
            hip = _cuda_port(o.get("gpu_info")) if on[0] == "CUDA" else None
            if hip:     # a HIP or MUSA build of ggml-cuda also says "cuda": 1 (its md column says ROCm / MUSA)
                r["backend"] = hip
                inferred["backend"] = (f"{hip} (the field cuda = 1 of a build before `backends`, on "
                                       f"{o.get('gpu_info')!r}: ggml-cuda built for {hip} sets GGML_USE_CUDA)")
    ik = sorted(_IK_ONLY_FIELDS.intersection(o))
    if ik or r["weights"] in vocab.IK_FORMATS:
        # ik_llama.cpp's llama-bench prints as mainline's but for its own options and types
        r["tool"] = "llama-bench (ik_llama.cpp)"
        inferred["tool"] = (f"ik_llama.cpp (what only its llama-bench prints: {', '.join(ik)})" if ik
                            else f"ik_llama.cpp (its own weight type {r['weights']})")
        mla = o.get("mla", o.get("mla_attn"))
        if mla not in (None, "") and "mla" not in meta:
            r["mla"] = str(mla).strip()
    r["type_k"], r["type_v"] = _kv_name(o.get("type_k")), _kv_name(o.get("type_v"))
    fa = _flag(o.get("flash_attn"))
    if fa not in (None, -1, 0, 1) or (fa is None and o.get("flash_attn") not in (None, "")):
        # what the fit's fa option reads; garbage was dropped as "not stated" without a word
        _fail(ctx.path, line, f"field `flash_attn` must be -1 (auto), 0 or 1 (or true / false), got {o['flash_attn']!r}")
    r.update(n_prompt=n_prompt, n_gen=n_gen, n_depth=n_depth, n_streams=1, avg_ts=avg, stddev_ts=sd, flash_attn=fa)
    for k in _LB_KEEP:
        if k not in o:
            continue
        v = o[k]
        if k in _LB_INT:
            v = _num(ctx, line, k, v, integer=True, required=False, minimum=_LB_MIN.get(k))
        elif k in _LB_BOOL:
            v = _bool(v)
        elif k in ("samples_ns", "samples_ts") and isinstance(v, str):
            v = json.loads(v) if v.startswith("[") else None
        r[k] = v
    if isinstance(r.get("samples_ts"), list):
        bad = [x for x in r["samples_ts"] if not (isinstance(x, (int, float)) and x > 0)]
        if bad:
            _fail(ctx.path, line, f"field `samples_ts` holds {bad[0]!r}: speeds must be > 0")
    _apply_meta(r, meta, inferred)
    _weights_fields(ctx, line, r)
    return _clean(r)


def _backend_name(v) -> str | None:
    """llama.cpp's backend names as one spelling ("CUDA", "Vulkan", "Metal", "ROCm", "CPU", ...)."""
    if not v:
        return None
    if isinstance(v, str):
        return _backend_name_str(v)
    return _backend_name_of(v)


@functools.lru_cache(maxsize=1024)
def _backend_name_str(v: str) -> str | None:
    """_backend_name of a string, remembered (a large file states its backend on every row, read up to three
    times a row)."""
    return _backend_name_of(v)


def _backend_name_of(v) -> str | None:
    parts = [p.strip() for p in re.split(r"[,+/]", str(v)) if p.strip()]
    known = {b.lower(): b for b in _GPU_BACKENDS + ("CPU", "BLAS", "RPC")}
    out = [known.get(p.lower(), p) for p in parts]
    gpu = [p for p in out if p not in ("CPU", "BLAS")]
    return ",".join(gpu or out)


def _cuda_port(gpu_info) -> str | None:
    """"ROCm" / "MUSA" where every card of a llama-bench gpu_info is AMD's / Moore Threads', else None. Before
    llama-bench's `backends` field (2024) a HIP or MUSA build printed "cuda": 1 in json/csv/sql, since ggml's
    CMake set GGML_USE_CUDA for them too (ggml/src/CMakeLists.txt of the llama.cpp llama-cpp-python 0.2.90
    vendors); only its md backend column (GGML_CUDA_NAME, ggml-cuda.h) said ROCm / MUSA."""
    cards = [c for c in re.split(r"/", str(gpu_info or "")) if c.strip()]
    if not cards:
        return None
    if all(re.search(r"\b(AMD|Radeon|Instinct)\b|\bgfx\d", c, re.I) for c in cards):
        return "ROCm"
    if all(re.search(r"\bMTT\b|Moore Threads", c, re.I) for c in cards):
        return "MUSA"
    return None


def _dev_backend(dev, backends) -> str | None:
    """The backend the devices llama-bench's -dev picked ("Vulkan0", "CUDA0/CUDA1": ggml's device names, the
    backend's name and an index) belong to, where the build has several GPU backends (`backends` "CUDA,Vulkan")
    and every device picked is of one of them; else None."""
    listed = {p.lower(): p for p in re.split(r"[,+/]", str(_backend_name(backends) or "")) if p.strip()}
    if len(listed) < 2:
        return None
    kinds = {re.sub(r"\d+$", "", d.strip()).lower() for d in re.split(r"[/,]", str(dev or "")) if d.strip()}
    return listed.get(kinds.pop()) if len(kinds) == 1 else None


def _apply_meta(r: dict, meta: dict | None, inferred: dict):
    """A table's context (card, backend, label, ... told from the lines around it) onto a record:
    what the row itself says wins, except the model (told per table or row already)."""
    own_card = bool(r.get("device"))
    for k, v in (meta or {}).items():
        if k == "inferred" or v is None:
            continue
        if k in ("device", "hardware", "n_cards", "split") and own_card:
            continue  # the row's own gpu_info
        if k in ("flash_attn", "weights", "backend", "n_ubatch", "n_batch", "n_gpu_layers", "n_threads", "type_k",
                 "type_v", "mla", "tensor_buft_overrides", "n_cpu_moe", "no_kv_offload") and r.get(k) is not None:
            continue    # the row's own column (or the header line's) over the command line's
        r[k] = v
    if inferred:
        r["inferred"] = inferred


def _weights_fields(ctx, line, r):
    note = weights_note(r.get("weights"))
    if note:
        r["weights_note"] = note
        ctx.notice(None, f"weights: {note}")


def _read_llama_bench_json(text, ctx):
    out = []
    for line, o in _json_items(text, ctx.path):
        if not isinstance(o, dict):
            _fail(ctx.path, line, f"expected a JSON object, got {type(o).__name__}")
        out.append(_llama_bench_record(o, ctx, line))
    return out


def _read_llama_bench_jsonl(text, ctx):
    return [_llama_bench_record(o, ctx, line) for line, o in _jsonl(text, ctx.path)]


def _read_llama_bench_csv(text, ctx):
    body = text.lstrip("\r\n")
    lead = text[:len(text) - len(body)].count("\n")    # blank lines before the header (a csv inside a paste)
    rows = csv.DictReader(io.StringIO(body))
    out = []
    for row in rows:
        if None in row or any(v is None for v in row.values()):
            _fail(ctx.path, rows.line_num + lead, f"the row does not have the header's {len(rows.fieldnames)} cells")
        out.append(_llama_bench_record(row, ctx, rows.line_num + lead))
    return out


# llama.cpp's performance scoreboards (the CUDA discussion 15013, Vulkan 10879; one row per GPU x fa x
# test of `llama-bench -m llama-2-7b.Q4_0.gguf -ngl 99 -fa 0,1`) as people copy them into a CSV: one
# row per card, flash-attention setting and test, with where the row came from
SCOREBOARD_COLUMNS = ("gpu", "model", "quant", "backend", "fa", "test", "t_s")
SCOREBOARD_ASSUME = ("Not in the copied row, taken as the scoreboard's standard run (llama-bench -m llama-2-7b.Q4_0.gguf "
                     "-ngl 99 -fa 0,1): one card holding every layer, llama-bench's defaults (n_batch 2048, n_ubatch 512, "
                     "f16 KV cache), depth 0 unless the row has a depth; pp512 is the prompt rate of 512 tokens, tg128 "
                     "the mean rate over 128 generated tokens from an empty cache.")


def scoreboard_fa(v: str) -> tuple:
    """(flash_attn True/False/None, note) of a scoreboard row's fa cell ("0", "1", "n/a (pre-fa build)")."""
    s = str(v or "").strip().lower()
    if s in ("0", "1"):
        return s == "1", ""
    if s.startswith("n/a (pre-fa"):
        return False, "a build from before llama.cpp had flash attention (fa column: n/a): attention materialized"
    if s.startswith("0 (scraper label"):
        return None, "flash attention not known (the scraper labelled the single Vulkan table fa 0)"
    return None, f"flash attention not stated (fa column: {v!r})"


def _read_scoreboard_csv(text, ctx):
    """A scoreboard copy (SCOREBOARD_COLUMNS and the optional gpu_device_name, n_gpus, depth,
    stddev, build, date, url, via, notes): one llama-bench record per row, the card named as
    published (`device`, `scoreboard_gpu`; resolved to the catalog by resolve_gpu_name, `hardware`
    None for a card outside it), the model told from the row's model text (llama.cpp's model type,
    the file name and parameter count in brackets), the runtime from the backend (CUDA: llama.cpp,
    Vulkan: llama.cpp-vulkan, others their backend name). A build from before flash attention
    (fa n/a, early 2024) ran before llama.cpp's MMQ default (PR 8075, mid-2024): its quantized
    prompt path is `era` 2024-cublas."""
    body = text.lstrip("\r\n")
    lead = text[:len(text) - len(body)].count("\n")
    rows = csv.DictReader(io.StringIO(body))
    out = []
    for row in rows:
        line = rows.line_num + lead
        if None in row or any(v is None for v in row.values()):
            _fail(ctx.path, line, f"the row does not have the header's {len(rows.fieldnames)} cells")
        r = {k.strip(): (v or "").strip() for k, v in row.items()}
        names = [n for n in (r.get("gpu_device_name", ""), r["gpu"]) if n]
        if not names:
            _fail(ctx.path, line, "the row names no GPU (columns gpu, gpu_device_name)")
        key = next((k for k in map(_hardware_key, names) if k), None)
        m = re.fullmatch(r"(pp|tg)\s*(\d+)", r["test"])
        if not m:
            _fail(ctx.path, line, f"test {r['test']!r} is not pp<n> or tg<n>")
        test, n = m.group(1), int(m.group(2))
        fa, fa_note = scoreboard_fa(r["fa"])
        mt = r["model"]
        size = re.search(r"(\d+(?:\.\d+)?) GiB", mt)
        params = re.search(r"(\d+(?:\.\d+)?) B\b", mt)
        fname = re.search(r"\(([^,()]+\.gguf)", mt)
        mtype = mt.split("(")[0].strip() or f"llama 7B {r['quant']}"
        model, how = ctx.model_for(line, filename=fname.group(1).strip() if fname else None, model_type=mtype,
                                   n_params=float(params.group(1)) * 1e9 if params else None, what=f"the row's {mt!r}")
        notes = [x for x in (r.get("notes", ""), fa_note) if x]
        if model and fname and model not in names_in(fname.group(1)):
            notes.append(f"the file is {fname.group(1).strip()!r}: {model}'s architecture and size "
                         f"({mtype}, {params.group(1) + ' B' if params else 'size not stated'}): predicted as {model}")
        backend = r["backend"] or "CUDA"
        build = r.get("build", "")
        bm = re.fullmatch(r"([0-9a-f]{7,40})(?:\s*\((\d+)\))?", build)
        inferred = {"card": f"{key or 'not in the catalog'} (from {names[0]!r})", "model": how}
        d = {"evidence": "measured", "test": test, "model": model, "model_type": mtype,
             "device": names[0], "hardware": key, "n_cards": _num(ctx, line, "n_gpus", r.get("n_gpus") or 1, integer=True,
                                                                  minimum=1),
             "split": "none", "weights": quant_name(r["quant"]), "type_k": "f16", "type_v": "f16",
             "n_prompt": n if test == "pp" else 0, "n_gen": n if test == "tg" else 0,
             "n_depth": _num(ctx, line, "depth", r.get("depth") or 0, integer=True, minimum=0),
             "n_streams": 1, "avg_ts": _num(ctx, line, "t_s", r["t_s"], positive=True),
             "stddev_ts": _num(ctx, line, "stddev", r.get("stddev"), required=False),
             "flash_attn": fa, "backends": backend, "tool": "llama-bench", "n_gpu_layers": 99, "n_ubatch": 512,
             "runtime": {"cuda": "llama.cpp", "vulkan": "llama.cpp-vulkan"}.get(backend.lower(), f"llama.cpp-{backend.lower()}"),
             "model_filename": fname.group(1).strip() if fname else None,
             "model_size": round(float(size.group(1)) * (1 << 30)) if size else None,
             "model_n_params": round(float(params.group(1)) * 1e9) if params else None,
             "build_commit": bm.group(1) if bm else None, "build_number": int(bm.group(2)) if bm and bm.group(2) else None,
             "date": r.get("date") or None, "scoreboard_gpu": r["gpu"], "via": r.get("via") or None,
             "notes": "; ".join(notes) or None, "assumptions": SCOREBOARD_ASSUME,
             "source": r.get("url") or ctx.source(line), "line": ctx.source(line), "inferred": inferred}
        if fa_note.startswith("a build from before") and backend.upper() == "CUDA":
            d["runtime_options"] = {"era": "2024-cublas", "fa": "0", "ubatch": "512"}
            inferred["era"] = ("2024-cublas: a build from before flash attention (early 2024), before llama.cpp's "
                               "MMQ default (PR 8075, mid-2024)")
        out.append({k: v for k, v in d.items() if v is not None})
    return out


def _sql_authorizer(action, arg1, *_):
    ok = (sqlite3.SQLITE_CREATE_TABLE, sqlite3.SQLITE_INSERT, sqlite3.SQLITE_READ, sqlite3.SQLITE_SELECT,
          sqlite3.SQLITE_TRANSACTION)
    if action in ok or (action == sqlite3.SQLITE_UPDATE and arg1 == "sqlite_master"):  # CREATE TABLE's own entry
        return sqlite3.SQLITE_OK
    return sqlite3.SQLITE_DENY


def _read_llama_bench_sql(text, ctx):
    """llama-bench -o sql, executed in an in-memory SQLite database that may only create tables
    and insert (no ATTACH, no PRAGMA: a file can not make it write anywhere)."""
    con = sqlite3.connect(":memory:")
    try:
        con.set_authorizer(_sql_authorizer)
        buf, start, lines_of = "", None, []
        for i, ln in enumerate(text.splitlines(), 1):
            if not buf.strip():
                start = i
            buf += ln + "\n"
            if sqlite3.complete_statement(buf):
                stmt = buf.strip()
                buf = ""
                try:
                    before = con.total_changes
                    con.execute(stmt)
                except sqlite3.Error as e:
                    _fail(ctx.path, start, f"SQL: {e}")
                if con.total_changes > before:
                    lines_of.append(start)
        if buf.strip():
            _fail(ctx.path, start, "SQL statement without its closing ';'")
        try:
            cur = con.execute("SELECT * FROM llama_bench ORDER BY rowid")
        except sqlite3.Error as e:
            _fail(ctx.path, None, f"SQL: {e}")
        names = [d[0] for d in cur.description]
        rows = [dict(zip(names, row)) for row in cur.fetchall()]
    finally:
        con.close()
    return [_llama_bench_record(r, ctx, line) for r, line in zip(rows, lines_of)]


_MD_COLS = {"ngl": "n_gpu_layers", "fa": "flash_attn", "sm": "split_mode", "threads": "n_threads",
            "dev": "devices", "ts": "tensor_split", "n_cpu_moe": "n_cpu_moe", "mmap": "use_mmap", "dio": "use_direct_io",
            "backend": "backends", "mg": "main_gpu", "nkvo": "no_kv_offload", "ot": "tensor_buft_overrides",
            "embd": "embeddings", "cpu_mask": "cpu_mask", "cpu_strict": "cpu_strict", "poll": "poll",
            "load_mode": "load_mode", "n_batch": "n_batch", "n_ubatch": "n_ubatch", "type_k": "type_k",
            "type_v": "type_v", "nopo": "no_op_offload", "lm": "load_mode", "noh": "no_host", "rpk": "repack",
            "fitt": "fit_target", "fitc": "fit_min_ctx"}


_MD_TEST = re.compile(r"^(?:pp\s*(\d+))?\s*(\+)?\s*(?:tg\s*(\d+))?(?:\s*@\s*d\s*(\d+))?$")


# ---- pasted text: tables with the lines around them ---------------------------------------------
# What people paste into an issue: llama-bench, sweep-bench and batched-bench tables (one or
# several, of one model or several), vLLM's console block, with the prose, the `$ llama-bench ...`
# command line, the `ggml_cuda_init` / `Device 0: ...` lines and the `build: ...` line around them.
# Each table is read with its context: the card and card count from the device lines (else a GPU
# the text or the file name names), the backend from the init lines (else the backend column, a
# heading, the prose), the model from the model column (architecture + parameter count) or the
# command line's -m or a heading or the file name, flash attention from the `fa` column, the
# header line or the command line's -fa; `inferred` says, field by field, where each came from.
_GPU_BACKENDS = ("CUDA", "Vulkan", "Metal", "ROCm", "SYCL", "HIP", "CANN", "MUSA", "OpenCL")
_CMD_RE = re.compile(r"(?:^|[\s/\\>!$#;(])(llama-bench|llama-sweep-bench|sweep-bench|llama-batched-bench|batched-bench|"
                     r"benchmark_serving\.py|vllm\s+serve|vllm\.entrypoints\.openai\.api_server|vllm\s+bench\s+serve|sglang\.bench_serving|"
                     # sglang 0.5.23's module paths (sglang.benchmark.serving, .one_batch) and its `sglang serve`
                     r"sglang\.benchmark\.serving|sglang\.benchmark\.one_batch|sglang\s+serve|"
                     r"vllm\s+bench\s+(?:latency|throughput)|benchmark_(?:latency|throughput)\.py|sglang\.bench_one_batch|"
                     r"sglang\.launch_server|sglang\.bench_offline_throughput|sglang\.benchmark\.offline_throughput|"
                     r"bench_offline_throughput\.py)(?:\.exe)?(?=\s|$)")
# llama.cpp's run-a-model tools, whose timing lines the importer reads: a command line only with an option on it
# (prose naming llama-server is not one)
_RUN_CMD_RE = re.compile(r"(?:^|[\s/\\>!$#;(])(llama-cli|llama-server|llama-simple|llama-completion)(?:\.exe)?\s.*\s-{1,2}[a-z]")
_DEVICE_RE = re.compile(r"\bDevice (\d+): ([^,]+),")
_CUDA_FLAG_RE = re.compile(r"ggml_cuda_init:\s*((?:GGML_)?CUDA_(?:USE_TENSOR_CORES|FORCE_MMQ|FORCE_CUBLAS)):\s*(yes|no)\b", re.I)
# (what the flags say about the quantized prefill path: predict/runtime.cuda_prefill_era)
_VULKAN_RE = re.compile(r"ggml_vulkan: (\d+) = (.+?) \(")
_METAL_RE = re.compile(r"(?:ggml_metal_init: found device:|GPU name:)\s+(.+?)\s*$")
_BUILD_RE = re.compile(r"^\s*build: ([0-9a-f]{6,40}) \((\d+)\)\s*$")
_SERVE_START = re.compile(r"^=+ Serving Benchmark Result =+\s*$")
# SGLang's offline throughput benchmark (sglang 0.5.23 sglang/benchmark/offline_throughput.py, before it
# sglang/bench_offline_throughput.py; throughput_test): its block, `{:<40} {:<10}` lines under this rule
_SGL_OFFLINE_START = re.compile(r"^=+ Offline Throughput Benchmark Result =+\s*$")
_SGL_OFFLINE_CMD = re.compile(r"sglang\.bench_offline_throughput|sglang\.benchmark\.offline_throughput|"
                              r"bench_offline_throughput\.py")
# the arguments a serving client prints before it runs: vLLM's benchmark_serving.py and `vllm bench serve`
# `print(args)` ("Namespace(backend='vllm', ..., max_concurrency=32, ...)"; vLLM 0.10.1 benchmarks/
# benchmark_serving.py main, vllm/benchmarks/serve.py main_async; benchmark_latency.py and
# benchmark_throughput.py too), SGLang's bench_serving
# `benchmark_args=Namespace(...)` and then `Namespace(...)` (sglang 0.5.23 sglang/benchmark/serving.py)
_NAMESPACE_RE = re.compile(r"^\s*(?:(\w*args)\s*=\s*)?Namespace\((.*)\)\s*$")
# fields only SGLang's bench_serving has (its plain `Namespace(...)` line names no tool); not sharegpt_output_len,
# which vLLM's benchmark_serving.py (since 0.5) and `vllm bench serve` have too
_SGLANG_ARGS = ("extra_request_body", "disable_stream", "warmup_requests", "flush_cache", "output_file",
                "disable_ignore_eos", "gsp_num_groups", "pd_separated")
# Namespace field -> the client's option; the values as the command line would give them
_NAMESPACE_ARGS = {"backend": "--backend", "model": "--model", "num_prompts": "--num-prompts",
                   "max_concurrency": "--max-concurrency", "request_rate": "--request-rate",
                   "burstiness": "--burstiness", "dataset_name": "--dataset-name",
                   "random_input_len": "--random-input-len", "random_output_len": "--random-output-len",
                   # vLLM's offline benchmark_latency.py / benchmark_throughput.py print theirs too
                   "input_len": "--input-len", "output_len": "--output-len", "batch_size": "--batch-size"}


# SGLang's engine logs its arguments as it starts (the server's and the in-process engine's: bench_one_batch,
# bench_offline_throughput): `server_args=ServerArgs(model_path='...', tp_size=2, ...)` (the dataclass's repr), in
# 0.5.23 `server_args={'model_path': '...', 'tp_size': 2, ...}` (srt/entrypoints/engine.py: its resolved values)
_SERVER_ARGS_RE = re.compile(r"\bserver_args\s*=\s*(?:ServerArgs\((.*)\)|(\{.*\}))\s*$")
_SERVER_ARGS = {"model_path": "--model-path", "tp_size": "--tp", "max_running_requests": "--max-running-requests",
                "chunked_prefill_size": "--chunked-prefill-size"}


def server_args_command(line: str) -> str | None:
    """The command line (`python -m sglang.launch_server ...`) SGLang's logged arguments stand for (`server_args=`
    ServerArgs(...) or a dict: the model path, --tp, --max-running-requests, --chunked-prefill-size where set);
    None where the line does not parse or names no model."""
    m = _SERVER_ARGS_RE.search(line)
    if not m:
        return None
    try:
        node = ast.parse(("f(" + m.group(1) + ")") if m.group(1) is not None else m.group(2), mode="eval").body
    except SyntaxError:     # a value the repr does not write as a literal (an enum's <...>): the fields one by one
        found = {k: re.search(rf"(?:\b{k}=|'{k}':\s*)('[^']*'|\"[^\"]*\"|-?\d+|None)", line) for k in _SERVER_ARGS}
        node = ast.Dict(keys=[ast.Constant(k) for k, f in found.items() if f],
                        values=[ast.parse(f.group(1), mode="eval").body for f in found.values() if f])
    if isinstance(node, ast.Call):
        pairs = [(kw.arg, kw.value) for kw in node.keywords]
    elif isinstance(node, ast.Dict):
        pairs = [(k.value, v) for k, v in zip(node.keys, node.values) if isinstance(k, ast.Constant)]
    else:
        return None
    vals = {}
    for k, v in pairs:
        if k not in _SERVER_ARGS:
            continue
        try:
            v = ast.literal_eval(v)
        except (ValueError, SyntaxError):
            continue
        if isinstance(v, bool) or v is None or not isinstance(v, (str, int)) or not str(v).strip() or " " in str(v):
            continue
        vals[k] = v
    if "model_path" not in vals:
        return None
    return "python -m sglang.launch_server " + " ".join(f"{_SERVER_ARGS[k]} {v}" for k, v in vals.items())


def namespace_command(line: str) -> str | None:
    """The command line equivalent to a serving client's printed arguments (`Namespace(...)`, as
    argparse prints them; `benchmark_args=Namespace(...)` or a field only it has: SGLang's
    bench_serving), with the options glmbench reads; None where the line does not parse or names no
    model. Values that are not set (None) are left out; `inf` stays inf."""
    m = _NAMESPACE_RE.search(line)
    if not m:
        return None
    try:
        call = ast.parse("f(" + m.group(2) + ")", mode="eval").body
    except SyntaxError:
        return None
    vals = {}
    names = [kw.arg for kw in getattr(call, "keywords", [])]
    for kw in getattr(call, "keywords", []):
        if kw.arg not in _NAMESPACE_ARGS:
            continue
        node = kw.value
        if isinstance(node, ast.Name) and node.id in ("inf", "nan"):
            vals[kw.arg] = node.id
            continue
        try:
            v = ast.literal_eval(node)
        except (ValueError, SyntaxError):
            continue
        if v is None or isinstance(v, bool) or not isinstance(v, (str, int, float)) or str(v).strip() == "":
            continue
        vals[kw.arg] = v
    if "model" not in vals:
        return None
    sglang = m.group(1) is not None or any(k in names for k in _SGLANG_ARGS)
    if "request_rate" not in names and "num_iters" in names:          # vLLM 0.10.1 benchmark_latency.py
        tool = "python benchmark_latency.py"
    elif "request_rate" not in names and "input_len" in names:        # benchmark_throughput.py
        tool = "python benchmark_throughput.py"
    else:
        tool = "python -m sglang.bench_serving" if sglang else "python benchmark_serving.py"
    return " ".join([tool] + [f"{_NAMESPACE_ARGS[k]} {v}" for k, v in vals.items() if " " not in str(v)])


# SGLang's bench_one_batch (sglang/bench_one_batch.py, latency_test_run_once): per run of B prompts of
# input_len tokens generating output_len, `Prefill. latency: X s, throughput: Y token/s` (Y = input_len
# x B / X), `Decode i. Batch size: B, latency: ...` (the first five steps), `Decode.  median latency: X s,
# median throughput: Y token/s` (Y = B / X) and `Total. latency: X s, throughput: Y token/s` (Y =
# (input_len + output_len) x B / X); a warm-up run under `Warmup ...` before `Benchmark ...`
_SGL_PREFILL = re.compile(r"^\s*Prefill\.\s+latency:\s*([\d.]+)\s*s,\s*throughput:\s*([\d.]+)\s*token/s\s*$")
_SGL_DECODE_I = re.compile(r"^\s*Decode\s+\d+\.\s+Batch size:\s*(\d+),\s*latency:")
_SGL_DECODE = re.compile(r"^\s*Decode\.\s+median latency:\s*([\d.]+)\s*s,\s*median throughput:\s*([\d.]+)\s*token/s\s*$")
_SGL_TOTAL = re.compile(r"^\s*Total\.\s+latency:\s*([\d.]+)\s*s,\s*throughput:\s*([\d.]+)\s*token/s\s*$")
# the blocks of a serving engine's benchmarks (vLLM, SGLang): an HF checkpoint's name, tensor parallelism
_SERVING_KINDS = ("serve", "vllm-offline", "sglang-one-batch", "sglang-offline")
# vLLM's offline benchmarks (vllm/benchmarks/latency.py and throughput.py, also the older
# benchmarks/benchmark_latency.py and benchmark_throughput.py): `Avg latency: X seconds` then its
# percentiles; `Throughput: R requests/s, T total tokens/s, O output tokens/s` (before mid 2025:
# `Throughput: R requests/s, T tokens/s`, the total) then the prompt and output token totals
_VLLM_LATENCY = re.compile(r"^\s*Avg latency:\s*([\d.]+(?:e[+-]?\d+)?)\s*seconds\s*$", re.I)
_VLLM_PCT = re.compile(r"^\s*(\d+)% percentile latency:\s*([\d.]+(?:e[+-]?\d+)?)\s*seconds\s*$", re.I)
_VLLM_THROUGHPUT = re.compile(r"^\s*Throughput:\s*([\d.]+)\s*requests/s,\s*([\d.]+)\s*(?:total\s+)?tokens/s"
                              r"(?:,\s*([\d.]+)\s*output tokens/s)?\s*$", re.I)
_VLLM_TOTALS = re.compile(r"^\s*Total num (prompt|output) tokens:\s*(\d+)\s*$", re.I)
# llama.cpp's timing lines: llama-cli's `llama_perf_context_print: prompt eval time = ...` (`llama_print_timings:`
# before late 2024), llama-server's bare `prompt eval time = ...` / `       eval time = ...` (after a
# `slot print_timing: id 0 | task 0 |` line, or with that prefix on the same line; its 2024 JSON log lines say
# `"msg":"prompt eval time = ..."` and `"generation eval time = ..."`); ik_llama.cpp prints the same
_TIMING_RE = re.compile(r"(?:^\s*|[:|\"]\s*)(prompt eval|(?:generation )?eval) time\s*=\s*([\d.]+)\s*ms\s*/\s*(\d+)\s*(?:tokens?|runs?)\s*"
                        r"\(\s*([\d.]+|inf|-?nan)\s*ms per token,\s*([\d.]+|inf|nan|-?nan)\s*tokens per second\s*\)", re.I)
# `ollama run MODEL --verbose` prints its statistics after each answer (Go durations: "1m2.5s", "160.2ms", "523µs")
_OLLAMA_RE = re.compile(r"^\s*(total duration|load duration|prompt eval count|prompt eval duration|prompt eval rate|"
                        r"eval count|eval duration|eval rate):\s*(\S.*?)\s*$", re.I)
_OLLAMA_RUN = re.compile(r"\bollama\s+run\s+([\w.:/-]+)")
# KoboldCpp's `--benchmark` (koboldcpp.py): a prompt of MaxCtx - GenAmount tokens from an empty cache, then
# GenAmount tokens generated after it; printed as `Key: value` lines after this header
_KOBOLD_START = re.compile(r"^\s*Benchmark Completed\s*-\s*v?([\w.+-]+)\s+Results:\s*$")
_KOBOLD_KV = re.compile(r"^\s*(Flags|Timestamp|Backend|Layers|Model|MaxCtx|GenAmount|ProcessingTime|ProcessingSpeed|"
                        r"GenerationTime|GenerationSpeed|TotalTime|Output):[ \t]*(.*?)\s*$")
# llama-server's line for the prompt tokens it keeps from the slot's cache before a prompt (2024: `kv cache rm
# [N, end)`; 2025: `memory_seq_rm [N, end)`): the first N tokens are reused, the prompt eval that follows is
# the rest, on top of N cached. It prints the line again before each later chunk of a prompt longer than a
# batch (`memory_seq_rm [2048, end)`: the chunks done so far): a prompt's cached part is its FIRST such line
# (after its task's `new prompt` line; a server line names its slot's task: `| task 3 |`)
_CACHE_RM_RE = re.compile(r"\b(?:kv cache rm|memory_seq_rm)\s*\[(\d+),\s*end\)")
# llama-server's line after a request's timings when a draft model ran (speculative decoding; 2025: `draft
# acceptance rate = 0.72000 (  360 accepted /   500 generated)`, 2026: `draft acceptance = ... mean len = ...`),
# and the options that load a draft model: its eval time counts every token a verification step accepted
_DRAFT_RE = re.compile(r"\bdraft acceptance(?: rate)?\s*=\s*[\d.]+\s*\(\s*\d+\s*accepted\s*/\s*\d+\s*generated\s*\)")
_DRAFT_OPT = re.compile(r"(?<!\S)(?:-md|--model-draft|-hfd|-hfrd|--hf-repo-draft)(?=[\s=]|$)")
_SLOT_TASK_RE = re.compile(r"\|\s*task\s+(-?\d+)\s*\|")
_NEW_PROMPT_RE = re.compile(r"\bnew prompt, n_ctx_slot\b")
# a task's start (`launch_slot_: ... | processing task`, its `new prompt` line) and end (`release: ... stop
# processing`) on one of llama-server's slots (-np N): tasks in flight at once share its decode steps
_TASK_START_RE = re.compile(r"\bprocessing task\b|\bnew prompt, n_ctx_slot\b")
_TASK_END_RE = re.compile(r"\bstop processing\b")
# llama-cli / llama-server's own startup line (llama-bench prints `build: <commit> (<number>)` after its table)
_BUILD_START_RE = re.compile(r"^\s*(?:[\w.]+:\s*)?build:?\s*=?\s*(\d+) \(([0-9a-f]{6,40})\)")
_SERVE_UNIT = re.compile(r"s|ms|tok/s|req/s|rps", re.I)   # a console line's unit in brackets
_SERVE_KEYS = {
    "successful requests": "completed", "failed requests": "failed",
    "maximum request concurrency": "max_concurrency", "max request concurrency": "max_concurrency",
    "max reqeuest concurrency": "max_concurrency", "benchmark duration": "duration",
    "total input tokens": "total_input_tokens", "total generated tokens": "total_output_tokens",
    "request throughput": "request_throughput", "output token throughput": "output_throughput",
    "total token throughput": "total_token_throughput", "request rate configured": "request_rate",
    "traffic request rate": "request_rate", "mean ttft": "mean_ttft_ms", "median ttft": "median_ttft_ms",
    "p99 ttft": "p99_ttft_ms", "mean tpot": "mean_tpot_ms", "median tpot": "median_tpot_ms",
    "p99 tpot": "p99_tpot_ms", "mean itl": "mean_itl_ms", "median itl": "median_itl_ms", "p99 itl": "p99_itl_ms",
    "mean e2e latency": "mean_e2e_latency_ms", "mean e2el": "mean_e2el_ms", "backend": "backend",
    # speculative decoding's lines: vLLM's `Speculative Decoding` section, SGLang's `Accept length:`
    "acceptance length": "spec_decode_acceptance_length", "drafts": "spec_decode_num_drafts",
    "draft tokens": "spec_decode_draft_tokens", "accepted tokens": "spec_decode_accepted_tokens",
    "accept length": "accept_length",
}
# SGLang's offline block's lines -> its --result-filename JSONL's fields (what throughput_test_once measures)
_SGL_OFFLINE_KEYS = {
    "backend": "backend", "successful requests": "successful_requests", "benchmark duration": "total_latency",
    "total input tokens": "total_input_tokens", "total generated tokens": "total_output_tokens",
    "last generation throughput": "last_gen_throughput", "request throughput": "request_throughput",
    "input token throughput": "input_throughput", "output token throughput": "output_throughput",
    "total token throughput": "total_throughput",
}

# GPU names in free text (a heading, prose, a file name): what to search when no device line says
# which card ran. Each gives the name as the vendor writes it; predict.hardware resolves it.
_GPU_TEXT = (
    (re.compile(r"(?<![a-z0-9])(?:(\d+)\s*[x×]\s*)?(?:nvidia[\s_-]*)?(?:geforce[\s_-]*)?rtx[\s_-]*pro[\s_-]*(\d{4})"
                r"(?:[\s_-]*(blackwell))?(?![a-z0-9])", re.I),
     lambda m: "RTX PRO " + m.group(2) + (" Blackwell" if m.group(3) else "")),
    (re.compile(r"(?<![a-z0-9])(?:(\d+)\s*[x×]\s*)?(?:nvidia[\s_-]*)?(?:geforce[\s_-]*)?(rtx|gtx)[\s_-]*(a?\d{4})"
                r"(?:[\s_-]*(ti|super))?s?(?![a-z0-9])", re.I),      # "RTX 3090s": a plural
     lambda m: f"{m.group(2).upper()} {m.group(3).upper()}" + (f" {m.group(4).capitalize()}" if m.group(4) else "")),
    (re.compile(r"(?<![a-z0-9])(?:(\d+)\s*[x×]\s*)?(?:nvidia[\s_-]*)?((?:gb|gh|[abhl])\d{1,3}[sg]?|a\d{4})"
                r"(?:[\s_-]*(sxm\d?|pcie|nvl))?(?![a-z0-9])", re.I),
     lambda m: ("RTX " if re.fullmatch(r"a\d{4}", m.group(2), re.I) else "") + m.group(2).upper()
     + (f" {m.group(3).upper()}" if m.group(3) else "")),
    (re.compile(r"(?<![a-z0-9])(?:(\d+)\s*[x×]\s*)?(?:amd[\s_-]*)?(?:instinct[\s_-]*)?(mi\d{3}[a-z]?)(?![a-z0-9])", re.I),
     lambda m: m.group(2).upper()),
    (re.compile(r"(?<![a-z0-9])(?:(\d+)\s*[x×]\s*)?(?:radeon[\s_-]*)?rx[\s_-]*(\d{4})(?:[\s_-]*(xtx|xt))?(?![a-z0-9])", re.I),
     lambda m: f"RX {m.group(2)}" + (f" {m.group(3).upper()}" if m.group(3) else "")),
    (re.compile(r"(?<![a-z0-9])(?:(\d+)\s*[x×]\s*)?(?:apple[\s_-]*)?(m[1-5])[\s_-]*(pro|max|ultra)(?![a-z0-9])", re.I),
     lambda m: f"Apple {m.group(2).upper()} {m.group(3).capitalize()}"),
    # "2x3090" in a file name: a count and a bare model number
    (re.compile(r"(?<![a-z0-9])(\d+)\s*[x×]\s*([2-5]0[5-9]0)(?:[\s_-]*(ti|super))?s?(?![a-z0-9])", re.I),
     lambda m: f"RTX {m.group(2)}" + (f" {m.group(3).capitalize()}" if m.group(3) else "")),
    # a bare GeForce number that a count word before it ("dual 3090s", "a pair of 4090s") or its Ti / SUPER
    # ("3090 Ti") makes a card (gpus_in keeps it only then)
    (re.compile(r"(?<![a-z0-9.])()([2-5]0[5-9]0)(?:[\s_-]*(ti|super))?s?(?![a-z0-9.])", re.I),
     lambda m: f"RTX {m.group(2)}" + (f" {m.group(3).capitalize()}" if m.group(3) else "")),
)
_BARE_GPU = len(_GPU_TEXT) - 1


_GPU_QUALIFIERS = re.compile(r"(?:[\s_-]*(?:\d{1,3}\s*GB|sxm\d?|pcie|nvl|hbm\d?e?|sff|ada(?:[\s_-]*generation)?"
                             r"|laptop(?:[\s_-]*gpu)?|mobile|max[\s_-]*q)(?![a-z0-9]))*",
                             re.I)
_COUNT_WORDS = {"dual": 2, "double": 2, "two": 2, "triple": 3, "three": 3, "quad": 4, "four": 4, "six": 6, "eight": 8,
                "pair of": 2, "twin": 2}
_COUNT_BEFORE = re.compile(r"(?<![a-z0-9])(dual|double|two|twin|triple|three|quad|four|six|eight|pair[\s_-]+of)[\s_-]+$", re.I)
# the words that make a bare GeForce number one card without saying how many the rig has ("on a 4090", "my 3090")
_UNIT_AFTER = re.compile(r"[\s_-]*(?:tokens?|tok|ctx|context|t/s|ms|s|[kmg]i?b|bytes?|steps?|requests?)(?![a-z0-9])", re.I)
_ONE_BEFORE = re.compile(r"(?<![a-z0-9])(?:a|an|one|single|my)[\s_-]+$", re.I)     # ("the 4090 is fast": no card)


_COUNT_AFTER = re.compile(r"(?:\s*\d+\s*GB)?\s*\(?\s*[x×]\s*(\d{1,2})(?![\w.])", re.I)
# for each pattern of _GPU_TEXT, words (lowercase, none with i, s or k, the letters re.I also matches by a
# non-ASCII one, or with those spelled out) one of which a text must hold for the pattern to match; () for none
_GPU_TEXT_WORDS = (("rtx",), ("tx",), (), ("mi", "mı"), ("rx",), ("pro", "max", "ultra"), ("x", "×"), ())
# what _COUNT_BEFORE and _ONE_BEFORE can match: letters (re.I's non-ASCII ones too), spaces, _ and -
_WORDY = frozenset("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ_-\u0130\u0131\u017f\u212a")


def _word_before(rx, text: str, at: int):
    """rx.search(text[:at]) for _COUNT_BEFORE / _ONE_BEFORE (a word and spaces up to the end): the same match,
    looked for only over the letters, spaces, _ and - just before `at` (all such a match can span; its
    look-behind still sees the character before them), not over the whole text before it."""
    k = at
    while k > 0 and (text[k - 1] in _WORDY or text[k - 1].isspace()):
        k -= 1
    return rx.search(text, k, at)


def gpus_in(text: str | None) -> list[tuple[str, int | None]]:
    """The GPUs `text` names, in order of appearance, without repeats: (name, count) where an
    "Nx" before the name, an "xN" after it or a count word before it ("dual", "two") gives a count."""
    if not text:
        return []
    found = []
    low = text.lower()
    for i, (rx, name) in enumerate(_GPU_TEXT):
        need = _GPU_TEXT_WORDS[i]
        if need and not any(w in low for w in need):
            continue    # (the pattern cannot match without one of these words: no pass over the text)
        for m in rx.finditer(text):
            n = m.group(1)
            g = name(m)
            if i == 2 and _hardware_key(g) is None:
                continue   # a letter and digits ("a28_run.md", "h12"): only a data-centre card the catalog knows
            if i == _BARE_GPU and not m.group(3) and not (_word_before(_COUNT_BEFORE, text, m.start())
                                                          or _word_before(_ONE_BEFORE, text, m.start())):
                continue   # a bare number ("3090") is a card only after a count word, an article or a possessive
                           # ("on a 4090", "my 3090"), or with its Ti / SUPER
            if i == _BARE_GPU and _UNIT_AFTER.match(text, m.end()):
                continue   # a quantity: "a 4090-token prompt", "the 3070 MiB buffer"
            end = m.end()
            # the words after the name that pick another variant of it: "H100 80GB PCIe" (not the SXM card),
            # "A100-SXM4-40GB", "RTX 6000 Ada Generation" (not the Turing Quadro), "RTX 4060 Ti 16GB"
            q = _GPU_QUALIFIERS.match(text, end)
            if q and q.group(0).strip(" _-"):
                longer = g + " " + " ".join(re.split(r"[\s_-]+", q.group(0).strip(" _-")))
                if _hardware_key(longer) not in (None, _hardware_key(g)):
                    g, end = longer, q.end()
            if not n:      # the count after the name: "RTX 3090 x2 (NVLink)", "A100 80GB ×4" (not "PCIe 4.0 x16")
                after = _COUNT_AFTER.match(text, end)   # "RTX 3090 (x2)"
                n = after.group(1) if after else None
            if not n:      # a count in words before it: "dual RTX 3090", "two RTX 3090s" (a bare digit there,
                           # "Table 2 RTX 4090", is not taken for one)
                before = _word_before(_COUNT_BEFORE, text, m.start())
                n = str(_COUNT_WORDS[re.sub(r"[\s_-]+", " ", before.group(1).lower())]) if before else None
            found.append((m.start(), g, int(n) if n and n.isdigit() else None, end))
    out, seen, last = [], {}, None
    for start, g, n, end in sorted(found):
        key = _hardware_key(g) or g
        if last and last[0] == key and last[2] is None and n is None and _JOINED_CARD.fullmatch(text[last[1]:start]):
            # "RTX 3090 + RTX 3090", "RTX 3090 24GB, RTX 3090 24GB": one card listed once per board
            i = seen[key]
            out[i] = (out[i][0], (out[i][1] or 1) + 1)
            last = (key, end, None)
            continue
        if key not in seen:
            seen[key] = len(out)
            out.append((g, n))
        elif n and out[seen[key]][1] is None:    # "DGX H100 (8x H100 SXM)": the card once, with its count
            out[seen[key]] = (out[seen[key]][0], n)
        last = (key, end, n)
    return out


# what joins the boards of a rig listed one by one: "+", "&", "and", a comma (and the first one's memory)
_JOINED_CARD = re.compile(r"(?:\s*\d{1,3}\s*GB)?\s*(?:\+|&|,|and)\s*(?:nvidia\s+)?(?:geforce\s+)?", re.I)


def _short_gpu(name: str) -> str:
    return re.sub(r"^(NVIDIA\s+)?(GeForce\s+)?", "", name.strip())


def _joined(have: str | None, more: str) -> str:
    """Tensor overrides given more than once on a command line (-ot A -ot B), as llama.cpp joins them."""
    return ",".join(x for x in (have, more) if x)


def label_settings(label: str) -> dict:
    """The run settings a table's heading or <summary> line states in words: the MLA mode ("mla = 2",
    "-mla 3", "mla3"), the u-batch ("-ub 4096", "u-batch 2048", "ubatch=512") and flash attention
    ("fa" / "-fa" / "fa = 1" / "FA on": 1; "no fa" / "fa off" / "fa = 0" / "-fa 0": 0)."""
    out: dict = {}
    t = " " + str(label or "") + " "
    # one value each, or none ("ub=512 vs ub=2048" heads a comparison, not one run)
    mla = set(re.findall(r"(?<![A-Za-z0-9])-{0,2}mla\s*(?:=|:)?\s*([0-3])(?![0-9])", t, re.I))
    if len(mla) == 1:
        out["mla"] = mla.pop()
    ub = set(re.findall(r"(?<![A-Za-z0-9])-{0,2}(?:ub|u-?batch(?:-size)?)\s*(?:=|:)?\s*(\d{2,6})(?![0-9])", t, re.I))
    if len(ub) == 1:
        out["n_ubatch"] = int(ub.pop())
    fa = list(re.finditer(r"(?<![A-Za-z0-9])(no\s+)?-{0,2}(?:fa|flash[- ]attn|flash attention)(?![A-Za-z0-9])"
                          r"(?:\s*(?:=|:)?\s*(on|off|1|0|true|false)(?![A-Za-z0-9]))?", t, re.I))
    vals = {0 if (f.group(1) or (f.group(2) or "").lower() in ("off", "0", "false")) else 1 for f in fa}
    if len(vals) == 1:
        out["flash_attn"] = vals.pop()
    return out


def _command_args(line: str, assigned: dict) -> dict:
    """The options a pasted command line gives that a record needs (-m, -fa, -sm, -mg, -dev, -ts,
    -ngl, -ub, -b, -t, -ctk/-ctv, -mla, -fmoe, -tp, CUDA_VISIBLE_DEVICES; what runs on the CPU: -ot,
    --n-cpu-moe, --cpu-moe, -nkvo). A llama-bench list ("-ub 512,2048") is kept as written."""
    toks = [t.strip("\"'") for t in re.findall(r'"[^"]*"|\'[^\']*\'|\S+', line)]
    toks = [re.sub(r"\$\{?(\w+)\}?", lambda m: assigned.get(m.group(1), m.group(0)), t) for t in toks]
    out = {}
    for t in toks:
        m = re.match(r"^(CUDA_VISIBLE_DEVICES|HIP_VISIBLE_DEVICES|ROCR_VISIBLE_DEVICES)=(\S+)$", t)
        if m:
            out["visible_devices"] = [d for d in m.group(2).split(",") if d.strip()]
    i = 0
    positional_model = None
    while i < len(toks):
        t, nxt = toks[i], toks[i + 1] if i + 1 < len(toks) else None
        val = nxt if nxt is not None and not nxt.startswith("-") else None
        key = {"-m": "model", "--model": "model", "-sm": "split_mode", "--split-mode": "split_mode",
               "-mg": "main_gpu", "--main-gpu": "main_gpu", "-dev": "devices", "--device": "devices",
               "-ts": "tensor_split", "--tensor-split": "tensor_split", "-ngl": "n_gpu_layers",
               "--n-gpu-layers": "n_gpu_layers", "-ub": "n_ubatch", "--ubatch-size": "n_ubatch",
               "-b": "n_batch", "--batch-size": "n_batch", "-t": "n_threads", "--threads": "n_threads",
               "-ctk": "type_k", "--cache-type-k": "type_k", "-ctv": "type_v", "--cache-type-v": "type_v",
               "-mla": "mla", "--mla-use": "mla", "-tp": "tensor_parallel", "--tensor-parallel-size": "tensor_parallel",
               # SGLang's server (python -m sglang.launch_server --model-path ... --tp N)
               "--model-path": "model", "--tp": "tensor_parallel", "--tp-size": "tensor_parallel",
               "--num-prompts": "num_prompts", "--num-prompt": "num_prompts", "--rpc": "rpc", "-rpc": "rpc",
               # a server's scheduling limits (llama-server's slots; vLLM's and SGLang's batch limits) and a
               # serving client's arrival process (vLLM's bench serve, SGLang's bench_serving)
               "-np": "n_parallel", "--parallel": "n_parallel", "--max-num-seqs": "max_num_seqs",
               "--max-running-requests": "max_num_seqs", "--max-num-batched-tokens": "max_num_batched_tokens",
               "--chunked-prefill-size": "max_num_batched_tokens", "--request-rate": "request_rate",
               "--burstiness": "burstiness", "--max-concurrency": "max_concurrency",
               "--ramp-up-strategy": "ramp_up_strategy",
               # vLLM's offline benchmarks (bench latency / bench throughput): the lengths of every prompt
               "--input-len": "input_len", "--output-len": "output_len",
               "--random-input-len": "input_len", "--random-output-len": "output_len"}.get(t.split("=")[0])
        if key and "=" in t and t.startswith("--"):
            out[key] = t.split("=", 1)[1]
        elif key and val is not None:
            out[key] = val
            i += 1
        elif t in ("-fa", "--flash-attn"):
            if val is not None and val.lower() in ("on", "off", "auto", "0", "1", "true", "false"):
                out["flash_attn"] = _flag(val)
                i += 1
            elif val is not None and re.fullmatch(r"(?:on|off|auto|-?[01]|true|false)(?:,(?:on|off|auto|-?[01]|true|false))+",
                                                  val.lower()):
                # llama-bench's list ("-fa 0,1"): one run per value, the table's fa column says which
                if len({_flag(v) for v in val.split(",")}) == 1:
                    out["flash_attn"] = _flag(val.split(",")[0])
                i += 1
            else:
                out["flash_attn"] = 1   # older builds: a bare switch
        elif t in ("-fmoe", "--fused-moe"):
            out["fmoe"] = True
        elif t in ("-ot", "--override-tensor") and val is not None:     # tensors on another buffer (exps=CPU)
            out["tensor_buft_overrides"] = _joined(out.get("tensor_buft_overrides"), val)
            i += 1
        elif t in ("--n-cpu-moe", "-ncmoe") and val is not None:        # the experts of N layers on the CPU
            out["n_cpu_moe"] = val
            i += 1
        elif t in ("--cpu-moe", "-cmoe"):                               # every expert on the CPU
            out["tensor_buft_overrides"] = _joined(out.get("tensor_buft_overrides"), "exps=CPU (--cpu-moe)")
        elif t in ("-nkvo", "--no-kv-offload"):
            if val is not None and re.fullmatch(r"[01](?:,[01])*", val):     # llama-bench's -nkvo <0|1> (a list)
                if len(set(val.split(","))) == 1:
                    out["no_kv_offload"] = val[0] == "1"
                i += 1
            else:
                out["no_kv_offload"] = True   # llama-server / sweep-bench: a switch
        elif t == "serve" and i > 0 and toks[i - 1].endswith("vllm") and val is not None:
            positional_model = val
        i += 1
    if "model" not in out and positional_model:
        out["model"] = positional_model
    return out


class _Block:
    """One table or console block of a pasted text, with the context it was printed in."""

    def __init__(self, kind, start, header=None, rows=None):
        self.kind, self.start, self.header, self.rows = kind, start, header, rows or []
        self.devices: dict = {}          # index -> name, from the latest device lines before it
        self.device_line = None          # (line, kind of line)
        self.backend = None              # from the init lines
        self.cmd = None                  # (line, text, parsed options)
        self.main = {}                   # sweep-/batched-bench's `main: n_kv_max = ...` line
        self.build = None                # (commit, number): the `build:` line after a llama-bench table
        self.before: list = []           # (line, text) between the previous block and this one
        self.label = None                # the heading or <summary> just before it
        self.serve: dict = {}            # a console block's `Key: value` lines
        self.loader: dict = {}           # llama.cpp's model-load log before it: arch, params, ftype, name, path
        self.coopmat: dict = {}          # Vulkan device index -> its cooperative-matrix path (ggml_vulkan's line)
        self.cmds: list = []             # every command line before it (cmd is the latest)
        self.cuda_flags: dict = {}       # ggml_cuda_init's flags before it: {"CUDA_USE_TENSOR_CORES": "yes", ...}
        self.timing: dict = {}           # a timings block's lines: "pp" / "tg" -> (line, ms, tokens, prefix)
        self.cached = None               # llama-server's reused prompt tokens before it: (line, N, its text)
        self.draft = None                # a timings block's speculative decoding: (line, what says so)
        self.alongside: list = []        # llama-server's other tasks in flight (other slots) during its task
        self.split_at = None             # a separator line right under one of its rows (line, the row's line)


_QUOTE = re.compile(r"^[ \t]*(?:>[ \t]?)+")
# llama-bench --progress (stderr): "llama-bench: benchmark 2/6: prompt run 3/5"
LB_PROGRESS = re.compile(r"^\s*llama-bench: benchmark \d+/\d+: ")
# a line of llama.cpp's / ggml's own log (stderr), as a terminal's copy interleaves it with a table's rows
# (stdout): `load_backend: loaded CUDA backend from ...`, `llama_model_load: ...`, `ggml_cuda_init: ...`
# and its `  Device 0: ...` lines, `print_info: ...`, `main: ...`, `build: N (commit) with ...` (a program's
# start; llama-bench's own `build: <commit> (N)` footer ends its table, _BUILD_RE), `system_info: ...`,
# llama-bench's --progress lines, a warm-up line, the progress dots of a model load; with the log's optional
# `--log-prefix` / `--log-timestamps` prefix ("0.00.123.456 I "). What no tool's log prints (prose, another
# table) ends a table all the same.
LOG_LINE = re.compile(
    r"^\s*(?:\d+\.\d{2}\.\d{3}\.\d{3}\s+)?(?:[IWEDT]\s+)?(?:"
    # llama.cpp's `func_name: ...` (LOG_INF("%s: ", __func__)) of its own prefixes; not any `word_word:` (a
    # sidecar's `source_url: ...` is none)
    r"(?:(?:llama|llm|ggml|gguf|load|common|clip|mtmd|sched|graph|register)_\w+|print_info|system_info|main|build"
    r"|llama-bench|llama-sweep-bench|llama-batched-bench|warmup|srv|slot|que)\s*:(?:\s|$)"
    r"|Device \d+: |ggml_vulkan: |[Ww]arm(?:ing)?[ -]?up\b"      # ggml's device lines; a warm-up note
    r"|\.{3,}\s*$)")                                            # the model load's dots


# what a line LOG_LINE matches starts with, after its spaces: a level letter or the first letter of one of its words,
# or its timestamp (a line that starts otherwise, each of a JSON file's, is none): looked for in the whole text, they
# rule out every line at once (tests/test_importers_speed.py checks them against LOG_LINE)
_LOG_START = re.compile(r"\n\s*[IWEDTlgcmsrpbwq.]")
_LOG_STAMP = re.compile(r"\.\d{2}\.\d{3}\.\d{3}\s")


def is_log_line(line: str) -> bool:
    """`line` is one of llama.cpp's / ggml's log lines (LOG_LINE), not a table's end; llama-bench's `build:`
    footer is none (it ends the table)."""
    return bool(LOG_LINE.match(line)) and not _BUILD_RE.match(line)


_LOADER = (  # llama.cpp's model-load log: what a table without a model column was run on
    ("arch", re.compile(r"(?:general\.architecture\s+str\s+=|(?:print_info|llm_load_print_meta): arch\s+=)\s+(\S+)")),
    ("params", re.compile(r"(?:print_info|llm_load_print_meta): model params\s+=\s+([\d.]+ [KMBT])")),
    ("ftype", re.compile(r"(?:print_info|llm_load_print_meta): (?:file type|model ftype)\s+=\s+(.+?)\s*$")),
    ("name", re.compile(r"general\.name\s+str\s+=\s+(.+?)\s*$")),
    ("path", re.compile(r"(?:loaded meta data with .* from|loading model from)\s+'?(\S+?\.gguf)'?")),
)


# ggml_vulkan's "matrix cores:" -> the llama.cpp-vulkan runtime model's coopmat option
_COOPMAT = {"nv_coopmat2": "nv2", "khr_coopmat": "khr", "none": "none"}


def selected_devices(devices: dict, dev: str | None) -> list[str] | None:
    """The names of the devices llama.cpp's -dev / the `dev` column / `devices` selects ("CUDA1",
    "CUDA0/CUDA1", "Vulkan0": the backend's device index) out of `devices` (index -> name, from the
    device lines or gpu_info), in order; None where `dev` names none by index or an index not listed."""
    if not dev or str(dev).strip().lower() in ("auto", "none", ""):
        return None
    out = []
    for d in re.split(r"[/,]", str(dev)):
        d = d.strip()
        if not d:
            continue
        m = re.fullmatch(r"[A-Za-z]+(\d+)", d)
        if not m or int(m.group(1)) not in devices:
            return None
        out.append(devices[int(m.group(1))])
    return out or None


_MD_SEP = re.compile(r"\s*\|?[\s:|-]+\|?\s*")   # a markdown table's separator line


def _unquote(text: str) -> list[str]:
    """The lines of `text` without e-mail/GitHub quote markers ("> | model | ..." in a reply), a
    markdown table written without its outer pipes ("model | size | ... | t/s" over "---|---|...",
    as some editors and forums keep it) given them, and a table copied from a rendered page
    (tab-separated cells, no pipes and no separator line: `_tab_tables`) as a markdown one, line for line."""
    return _unquote_tabs(text)[0]


def _unquote_tabs(text: str) -> tuple[list[str], set]:
    """_unquote's lines and the indexes of the header lines of tables copied from a rendered page
    (which have no separator line under them)."""
    lines = text.splitlines()
    if not (text.isascii() and "\\" not in text):
        lines = [_plain_line(_QUOTE.sub("", ln) if ">" in ln else ln) for ln in lines]
    elif ">" in text:   # (_plain_line keeps an ASCII line without a backslash as it is: no call per line)
        lines = [_QUOTE.sub("", ln) if ">" in ln else ln for ln in lines]
    if "|" in text:     # (a pipe-less table's header has a pipe, a copied one a tab: else no pass rewrites a line)
        lines = _outer_pipes(lines)
    out, heads = _tab_tables(lines) if "\t" in text else (lines, set())
    return _html_tables(out, heads) if "<" in text else (out, heads)     # (an HTML table has a `<`)


_HTML_CELL = re.compile(r"<t([hd])\b[^>]*>(.*?)</t[hd]\s*>", re.I | re.S)


def _html_tables(lines: list[str], heads: set) -> tuple[list[str], set]:
    """`lines` with each benchmark table written in HTML (<table> ... </table>, as a comment on GitHub may be) as a
    markdown one: each row (<tr>, its <th> / <td> cells, tags dropped, entities read) on the line its <tr> starts,
    the table's other lines blank, the header's index added to `heads`; a table with two rows on one line is left
    as it is (_read_pasted names it)."""
    if "<table" not in "\n".join(lines).lower():     # (as any("<table" in ln.lower()), in one pass)
        return lines, heads
    out, i = list(lines), 0
    while i < len(out):
        if "<table" not in out[i].lower():
            i += 1
            continue
        end = next((j for j in range(i, len(out)) if "</table" in out[j].lower()), len(out) - 1)
        starts = [j for j in range(i, end + 1) for _ in re.finditer(r"<tr\b", out[j], re.I)]
        body = "\n".join(out[i:end + 1])
        rows = [[html.unescape(re.sub(r"<[^>]*>", "", c)).strip() for _, c in _HTML_CELL.findall(tr)]
                for tr in re.split(r"<tr\b[^>]*>", body, flags=re.I)[1:]]
        if rows and len(starts) == len(rows) == len(set(starts)) and any(h <= set(rows[0]) for h in _TAB_HEADERS):
            for j in range(i, end + 1):
                out[j] = ""
            for j, cells in zip(starts, rows):
                out[j] = "| " + " | ".join(c.replace("|", "\\|") for c in cells) + " |"
            heads = heads | {starts[0]}
        i = end + 1
    return out, heads


# what a copy from a rendered page or a forum's editor puts in a pasted line: a non-breaking (or another fixed-
# width) space for a space ("S_PP\u00a0t/s", "qwen3\u00a032B"), a zero-width space, and Reddit's editor's markdown
# escapes of `_` and `*` ("n\_ubatch", "Q4\_K - Medium", "main: n\_kv\_max = ..."; -ot's "blk\.1\." kept)
_ODD_SPACE = re.compile(r"[\u00a0\u2000-\u200a\u202f\u205f\u3000]")
_ZERO_WIDTH = re.compile(r"[\u200b\u2060\ufeff]")
_MD_ESCAPE = re.compile(r"(?<!\\)\\([_*])")


def _plain_line(ln: str) -> str:
    """A pasted line with fixed-width spaces as spaces, zero-width spaces dropped and `\\_` / `\\*` unescaped."""
    if ln.isascii() and "\\" not in ln:
        return ln       # (no odd or zero-width space, no escape: the line as it is, without three passes)
    return _MD_ESCAPE.sub(r"\1", _ZERO_WIDTH.sub("", _ODD_SPACE.sub(" ", ln)))


# the header cells that make a tab-separated line a benchmark table's header (llama-bench; sweep- / batched-bench)
_TAB_HEADERS = ({"model", "test", "t/s"}, {"PP", "TG", "N_KV", "S_PP t/s", "S_TG t/s"})


def _tab_tables(lines: list[str]) -> tuple[list[str], set]:
    """A benchmark table copied from a rendered page (a browser's copy of a GitHub or forum table:
    cells separated by tabs, no pipes, no separator line) written as a markdown table, line for line
    (the header and every following line of as many cells), and the header lines' indexes."""
    out, heads, i = list(lines), set(), 0
    if not any("\t" in ln for ln in out):
        return out, heads       # (a header needs a tab: nothing to rewrite)
    while i < len(out):
        cells = [c.strip() for c in out[i].strip().split("\t")] if "\t" in out[i] and "|" not in out[i] else []
        if len(cells) >= 3 and any(h <= set(cells) for h in _TAB_HEADERS):
            n = len(cells)
            out[i] = "| " + " | ".join(cells) + " |"
            heads.add(i)
            i += 1
            while i < len(out) and "|" not in out[i] and len(out[i].strip().split("\t")) == n:
                out[i] = "| " + " | ".join(c.strip() for c in out[i].strip().split("\t")) + " |"
                i += 1
        else:
            i += 1
    return out, heads


def _outer_pipes(lines: list[str]) -> list[str]:
    """`lines` with each pipe-less table's header, separator and rows (as many pipes as the
    header) wrapped in outer pipes; every other line as it is."""
    out, i = list(lines), 0
    if not any("|" in ln for ln in out):
        return out      # (a header needs a pipe: nothing to wrap)
    while i + 1 < len(out):
        h, sep = out[i].strip(), out[i + 1]
        if ("|" in h and not h.startswith("|") and "|" in sep and "-" in sep and _MD_SEP.fullmatch(sep)
                and not sep.strip().startswith("|")):
            n = h.count("|")
            out[i], out[i + 1] = f"| {h.strip('|').strip()} |", f"|{sep.strip().strip('|')}|"
            i += 2
            while i < len(out) and out[i].count("|") == n and not out[i].strip().startswith("|"):
                out[i] = f"| {out[i].strip().strip('|').strip()} |"
                i += 1
        else:
            i += 1
    return out


def _kv_lines(lines, j, rx, into: dict, *, skip=None, last=None) -> int:
    """Read the `Key: value` lines `rx` matches from line index j on into `into` ({key lowercased: (line
    number, value)}), past lines that fullmatch `skip`, through the key `last`; the index after them."""
    while j < len(lines):
        m = rx.match(lines[j])
        if not m and not (skip and re.fullmatch(skip, lines[j])):
            break
        j += 1
        if m:
            into[m.group(1).lower()] = (j, m.group(2))
            if m.group(1).lower() == last:
                break
    return j


_TABLE_KINDS = ("llama-bench", "sweep-bench", "batched-bench")


def _scan(text) -> tuple[list[_Block], dict]:
    lines, tab_heads = _unquote_tabs(text)

    def header_at(k):      # line k is a table's header: a separator line under it, or a rendered copy's header
        return k in tab_heads or (k + 1 < n and _MD_SEP.fullmatch(lines[k + 1]) and "-" in lines[k + 1])
    blocks: list[_Block] = []
    devices, dev_backend, device_line, cmd, main, label = {}, None, None, None, {}, None
    assigned: dict = {}
    before: list = []
    last_kind = None   # the kind of the previous significant line ("device", "init", other)
    i = 0
    n = len(lines)

    loader: dict = {}
    coopmat: dict = {}   # Vulkan device index -> its `matrix cores:` (nv2, khr, none)
    cmds: list = []      # every command line so far (a server's -tp before the client's line)
    cuda_flags: dict = {}  # ggml_cuda_init's GGML_CUDA_FORCE_MMQ / _FORCE_CUBLAS / CUDA_USE_TENSOR_CORES lines
    run_build = None       # llama-cli / llama-server's startup `build: <number> (<commit>)` line
    cache_rm: dict = {}    # llama-server's first `kv cache rm [N, end)` line of each task's prompt (None: no task named)
    timing_task = None     # the task of llama-server's latest `print_timing` line
    in_flight: dict = {}   # llama-server's tasks started and not yet ended -> the other tasks in flight with each
    ended: dict = {}       # the same for its tasks ended (`stop processing`) whose timings are still to come
    pending = None         # a timings block whose `prompt eval` line waits for its `eval` line
    sgl_phase = None       # SGLang bench_one_batch's `Warmup ...` / `Benchmark ...` phase

    def take(b):
        snap(b)
        blocks.append(b)

    def snap(b):                  # the context a block was printed in: the lines before it
        b.loader = dict(loader)
        b.cuda_flags = dict(cuda_flags)
        b.devices, b.backend, b.device_line, b.cmd = dict(devices), dev_backend, device_line, cmd
        b.coopmat = {k: v for k, v in coopmat.items() if k in devices}
        b.cmds = list(cmds)
        b.main, b.label, b.before = dict(main), label, list(before)

    while i < n:
        ln = lines[i]
        no = i + 1
        st = ln.strip()
        # a markdown table: header, separator, rows
        if st.startswith("|") and header_at(i):
            header = _split_md(ln)
            cells = set(header)
            if {"PP", "TG", "N_KV", "S_PP t/s", "S_TG t/s"} <= cells:
                kind = "batched-bench" if "B" in cells else "sweep-bench"
            elif {"model", "test", "t/s"} <= cells:
                kind = "llama-bench"
            else:
                kind = None
            j = i + 1 if i in tab_heads else i + 2
            rows = []
            while True:
                # (llama-bench --progress writes its lines to stderr between the rows: a terminal's copy has them)
                while j < n and (lines[j].strip().startswith("|") or (kind and LB_PROGRESS.match(lines[j]))) and not (
                        header_at(j)):   # a new table's header ends it
                    if lines[j].strip().startswith("|"):
                        rows.append((j + 1, _split_md(lines[j])))
                    j += 1
                # a table a blank line splits (a paste cut in two), llama.cpp's / ggml's log lines written between
                # its rows (stderr into a terminal's copy: any number, is_log_line), or up to three other lines (a
                # note; a `build:` line ends a llama-bench table): rows of the header's width after them, with no
                # separator line under the first (that would be a new table)
                k, logged = j, 0
                while k < n and (not lines[k].strip() or is_log_line(lines[k]) or (
                        logged < 3 and not lines[k].strip().startswith("|") and not _BUILD_RE.match(lines[k]))):
                    logged += bool(lines[k].strip()) and not is_log_line(lines[k])
                    k += 1
                if (kind and k > j and k < n and lines[k].strip().startswith("|")
                        and (len(_split_md(lines[k])) == len(header)
                             or "ot" in header and len(_split_md(lines[k])) > len(header))  # -ot's own pipes
                        and _split_md(lines[k]) != header
                        and not header_at(k)):
                    j = k
                    continue
                break
            if kind:
                take(_Block(kind, no, header, rows))
                before, label = [], None
            elif blocks and blocks[-1].kind in _TABLE_KINDS and len(header) == len(blocks[-1].header) and \
                    (blocks[-1].rows[-1][0] if blocks[-1].rows else blocks[-1].start + 1) == i:
                # a separator line right under a row of the table above (a paste gone wrong): that row reads as
                # the header of a table of no known kind, and it and every row under it would be lost
                blocks[-1].split_at = (no + 1, no)
            i = j
            continue
        if _SERVE_START.match(st) or _SGL_OFFLINE_START.match(st):
            offline = bool(_SGL_OFFLINE_START.match(st))
            b = _Block("sglang-offline" if offline else "serve", no)
            keys = _SGL_OFFLINE_KEYS if offline else _SERVE_KEYS
            j = i + 1
            while j < n and not re.fullmatch(r"=+", lines[j].strip()):
                if not lines[j].strip():
                    # a blank line between the block's lines (a forum's editor keeps a line break only as one):
                    # the block goes on where the next line is one of its own
                    k = next((k for k in range(j, n) if lines[k].strip()), n)
                    if k < n and _in_serve_block(lines[k], keys):
                        j = k
                        continue
                    break
                m = _SERVE_KV.match(lines[j])
                # the bracket is the value's unit ("(ms)", "(tok/s)"); any other is part of the name: SGLang's
                # `Total generated tokens (retokenized):` after `Total generated tokens:` is another count
                if m and (m.group(2) is None or _SERVE_UNIT.fullmatch(m.group(2).strip())):
                    key = keys.get(m.group(1).strip().lower())
                    if key:
                        b.serve[key] = (j + 1, m.group(3))
                j += 1
            take(b)
            before, label = [], None
            i = j + 1
            continue
        if re.match(r"^\s*(Warmup|Benchmark) \.\.\.\s*$", ln):      # SGLang bench_one_batch's phases
            sgl_phase = ln.strip().split()[0].lower()
        sm_ = _SGL_PREFILL.match(ln)
        if sm_:
            b = _Block("sglang-one-batch", no)
            snap(b)
            b.serve["phase"] = (no, sgl_phase)
            b.serve["prefill_latency"], b.serve["prefill_throughput"] = (no, sm_.group(1)), (no, sm_.group(2))
            j = i + 1
            while j < n and (_SGL_DECODE_I.match(lines[j]) or _SGL_DECODE.match(lines[j]) or _SGL_TOTAL.match(lines[j])):
                m = _SGL_DECODE_I.match(lines[j])
                if m:
                    b.serve.setdefault("batch_size", (j + 1, m.group(1)))
                m = _SGL_DECODE.match(lines[j])
                if m:
                    b.serve["median_decode_latency"] = (j + 1, m.group(1))
                    b.serve["median_decode_throughput"] = (j + 1, m.group(2))
                m = _SGL_TOTAL.match(lines[j])
                if m:
                    b.serve["total_latency"], b.serve["overall_throughput"] = (j + 1, m.group(1)), (j + 1, m.group(2))
                    j += 1
                    break
                j += 1
            blocks.append(b)
            before, label = [], None
            i = j
            continue
        vm = _VLLM_LATENCY.match(ln) or _VLLM_THROUGHPUT.match(ln)
        if vm:
            b = _Block("vllm-offline", no)
            snap(b)
            if vm.re is _VLLM_LATENCY:
                b.serve["kind"], b.serve["latency_s"] = (no, "latency"), (no, vm.group(1))
                rx = _VLLM_PCT
            else:
                b.serve["kind"], b.serve["request_throughput"] = (no, "throughput"), (no, vm.group(1))
                b.serve["total_token_throughput"] = (no, vm.group(2))
                if vm.group(3):
                    b.serve["output_throughput"] = (no, vm.group(3))
                rx = _VLLM_TOTALS
            j = i + 1
            while j < n and rx.match(lines[j]):
                m = rx.match(lines[j])
                key = f"p{m.group(1)}_latency_s" if rx is _VLLM_PCT else f"total_{m.group(1).lower()}_tokens"
                b.serve[key] = (j + 1, m.group(2))
                j += 1
            blocks.append(b)
            before, label = [], None
            i = j
            continue
        tm = _TIMING_RE.search(ln)
        if tm:
            which = "pp" if tm.group(1).lower().startswith("prompt") else "tg"
            entry = (no, float(tm.group(2)), int(tm.group(3)), ln[:tm.start(1)].strip())
            if which == "pp" or pending is None or "tg" in pending.timing:
                if pending is not None:
                    blocks.append(pending)
                pending = _Block("timings", no)
                snap(pending)             # its context: the lines before its first timing line
                pending.build = run_build
                tk = _SLOT_TASK_RE.search(ln)
                task = tk.group(1) if tk else timing_task
                pending.cached = cache_rm.pop(task, None) if task in cache_rm else cache_rm.get(None)
                pending.alongside = sorted(ended.pop(task, None) or in_flight.pop(task, ()), key=int)
                cache_rm.pop(None, None)
            pending.timing[which] = entry
            if which == "tg":   # a run's pair is complete (or a lone eval line: its depth is not known)
                blocks.append(pending)
                pending = None
            before, label = [], None
            i += 1
            continue
        km = _KOBOLD_START.match(ln)
        if km:
            b = _Block("kobold", no)
            snap(b)
            b.serve["version"] = (no, km.group(1))
            # its `====` / `----` rules between the keys; Output the last key (the generated text may run on)
            j = _kv_lines(lines, i + 1, _KOBOLD_KV, b.serve, skip=r"\s*(?:=+|-+)?\s*", last="output")
            blocks.append(b)
            before, label = [], None
            i = j
            continue
        om = _OLLAMA_RE.match(ln)
        if om:
            b = _Block("ollama", no)
            snap(b)
            j = _kv_lines(lines, i, _OLLAMA_RE, b.serve)
            blocks.append(b)
            before, label = [], None
            i = j
            continue
        bm = _BUILD_START_RE.match(ln)
        if bm:
            run_build = (bm.group(2), int(bm.group(1)))
        dr = _DRAFT_RE.search(ln)
        if dr:   # after the timings it belongs to
            last = pending if pending is not None else next((x for x in reversed(blocks) if x.kind == "timings"), None)
            if last is not None and last.draft is None:
                last.draft = (no, f"'{dr.group(0)}'")
        cr = _CACHE_RM_RE.search(ln)
        tk = _SLOT_TASK_RE.search(ln) if (cr or "print_timing" in ln or "new prompt" in ln) else None
        if cr:
            cache_rm.setdefault(tk.group(1) if tk else None, (no, int(cr.group(1)), cr.group(0)))
        elif tk and "print_timing" in ln:
            timing_task = tk.group(1)
        elif _NEW_PROMPT_RE.search(ln):
            cache_rm.pop(tk.group(1) if tk else None, None)
        tk = _SLOT_TASK_RE.search(ln) if "task" in ln else None
        if tk and _TASK_START_RE.search(ln) and tk.group(1) not in in_flight:
            for others in in_flight.values():
                others.add(tk.group(1))
            in_flight[tk.group(1)] = set(in_flight)
        elif tk and _TASK_END_RE.search(ln) and tk.group(1) in in_flight:
            ended[tk.group(1)] = in_flight.pop(tk.group(1))
        for key, rx in _LOADER:
            lm = rx.search(ln)
            if lm:
                if key == "arch" and loader.get("arch") and loader["arch"][1] != lm.group(1):
                    loader = {}   # another model's load log
                loader[key] = (no, lm.group(1).strip("'\""))
        cf = _CUDA_FLAG_RE.search(ln)
        if cf:
            cuda_flags[cf.group(1).upper()] = cf.group(2).lower()
        m = _BUILD_RE.match(ln)
        if m and blocks and blocks[-1].kind == "llama-bench" and blocks[-1].build is None:
            blocks[-1].build = (m.group(1), int(m.group(2)))
        for a in re.finditer(r"(?<![\w-])([A-Za-z_]\w*)=(\"[^\"]*\"|'[^']*'|[^\s;]+)", ln):
            assigned[a.group(1)] = a.group(2).strip("\"'")
        kind_now = "other"
        dm = _DEVICE_RE.search(ln) or _VULKAN_RE.search(ln)
        mm = None if dm else _METAL_RE.search(ln)
        if dm or mm:
            if last_kind not in ("device", "init"):
                devices = {}
            if dm:
                devices[int(dm.group(1))] = dm.group(2).strip()
                if _VULKAN_RE.search(ln):
                    dev_backend = "Vulkan"
                    cm = re.search(r"\bmatrix cores:\s*(\w+)", ln)
                    if cm:
                        coopmat[int(dm.group(1))] = _COOPMAT.get(cm.group(1).lower(), cm.group(1))
                elif re.search(r"\b(AMD|Radeon|Instinct)\b", dm.group(2)) or "ROCm" in ln:
                    dev_backend = "ROCm"
                elif dev_backend not in ("ROCm", "SYCL", "MUSA"):
                    dev_backend = "CUDA"
            else:
                devices[len(devices)] = mm.group(1).strip()
                dev_backend = "Metal"
            first = min(devices)
            device_line = (no if device_line is None or len(devices) == 1 else device_line[0],
                           (f"ggml_vulkan: {first} =" if _VULKAN_RE.search(ln) else f"Device {first}:" if dm
                            else "Metal device") + (f"'..'Device {max(devices)}:" if dm and len(devices) > 1
                                                    and not _VULKAN_RE.search(ln) else ""))
            kind_now = "device"
        elif re.search(r"\bggml_(cuda|vulkan|metal|sycl)_init\b|ggml_vulkan: Found|found \d+ \w+ devices", ln):
            if "ROCm" in ln:
                dev_backend = "ROCm"
            elif "sycl" in ln.lower():
                dev_backend = "SYCL"
            kind_now = "init"
            if last_kind not in ("device", "init"):
                devices = {}
        if _CMD_RE.search(ln) or _RUN_CMD_RE.search(ln):
            # a command continued over lines (" \\" in a shell, " ^" in cmd.exe, " `" in PowerShell) is one
            full, j = ln, i
            while re.search(r"\s[\\^`]\s*$", full) and j + 1 < n and lines[j + 1].strip():
                j += 1
                full = re.sub(r"\s[\\^`]\s*$", " ", full) + lines[j].strip()
            cmd = (no, " ".join(full.split()), _command_args(full, assigned))
            cmds.append(cmd)
        elif _NAMESPACE_RE.search(ln) or _SERVER_ARGS_RE.search(ln):
            full = namespace_command(ln) if _NAMESPACE_RE.search(ln) else server_args_command(ln)
            if full:
                cmd = (no, full, _command_args(full, assigned))
                cmds.append(cmd)
        mm2 = re.search(r"^\s*[\w.:-]+: (n_kv_max = .*)$", ln)
        if mm2:
            main = _main_line(ln)
        hm = re.match(r"^\s*#{2,6}\s+(.+?)\s*#*\s*$", ln) or re.search(r"<summary>\s*(.+?)\s*</summary>", ln)
        if hm:
            label = re.sub(r"[*_`]", "", hm.group(1)).strip() or label
        if st:
            before.append((no, ln))
            last_kind = kind_now
        i += 1
    if pending is not None:
        blocks.append(pending)
    return blocks, assigned


_SERVE_KV = re.compile(r"^\s*([A-Za-z][A-Za-z0-9 ./()_-]*?)\s*(?:\(([^)]*)\))?\s*:\s*(\S.*?)\s*$")


def _in_serve_block(ln: str, keys: dict) -> bool:
    """`ln` is a line of a serving benchmark's block: a `Key: value` line of one of `keys` or with a number (or
    inf, None, "not set") for its value, or one of its rules ("-----Time to First Token-----", the closing ====)."""
    st = ln.strip()
    if _SERVE_START.match(st) or _SGL_OFFLINE_START.match(st):
        return False     # the next block
    m = _SERVE_KV.match(ln)
    if m:
        return bool(keys.get(m.group(1).strip().lower()) or re.fullmatch(r"[\d.]+|inf|nan|None|not set", m.group(3)))
    return bool(re.fullmatch(r"-{3,}[\w ().-]*-{3,}|=+", st))


def _block_hints(b: _Block) -> list[tuple[str, str]]:
    """What a table's own block says about its model: the command line's model, the heading, the prose before it."""
    hints = []
    if b.cmd and b.cmd[2].get("model"):
        hints.append((b.cmd[2]["model"], f"command line's model {_stem(b.cmd[2]['model'])!r} (line {b.cmd[0]})"))
    if b.label:
        hints.append((b.label, f"heading {b.label!r}"))
    prose = " ".join(t for _, t in b.before)
    if prose.strip():
        hints.append((prose, "text before the table"))
    return hints


def _table_hints(b: _Block, path: str, text_before: str) -> list[tuple[str, str]]:
    hints = _block_hints(b)
    if text_before.strip():
        hints.append((text_before, "text above"))
    hints.append((os.path.basename(path), f"file name {os.path.basename(path)!r}"))
    return hints


def _read_pasted(text, ctx):
    blocks, assigned = _scan(text)
    if not blocks:
        _fail(ctx.path, None, "no llama-bench, sweep-bench or batched-bench table, no vLLM console block and no "
                              "llama.cpp timing lines")
    lines = text.splitlines()
    fname = os.path.basename(ctx.path)
    out = []
    seen: list = []         # (section heading, model, weights) of every record so far
    section = None
    for bi, b in enumerate(blocks):
        if b.split_at:
            _fail(ctx.path, b.split_at[0], f"a separator line under the table row on line {b.split_at[1]} (the "
                                           f"table begun on line {b.start}) would make that row a new table's header "
                                           "and lose the rows from it on; remove the separator line")
        twice = list(dict.fromkeys(c for c in (b.header or []) if c and b.header.count(c) > 1))
        if b.kind in _TABLE_KINDS and twice:
            # two runs' columns side by side under one header (main | PR): which one a record is cannot be told
            _fail(ctx.path, b.start, f"the table's header names column{'s' if len(twice) > 1 else ''} "
                                     f"{', '.join(repr(c) for c in twice)} twice (two runs side by side?): which "
                                     "one a record is cannot be told; paste one table per run")
        text_before = "\n".join(lines[:b.start - 1])
        # what "the file's other tables" name: under a heading of its own (a page with a section per model),
        # only the tables of that section, never another model's
        if b.label:
            section = b.label
        mine = [x for x in seen if x[0] == section] if b.label else seen
        carried = []
        if b.label and not any(m for _, m, _ in mine):
            # a heading that names no model ("Main branch", "PR": one model's runs under two labels, not a page
            # with a section per model): where the paste names one model only, the model (and weights) of its
            # tables so far carry, after everything the table's own section and the file name say
            # (a heading with a parameter count, "Foo-7B", names a model glmbench may not know: never carried over)
            one = list(dict.fromkeys(m for _, m, _ in seen if m))
            if len(one) == 1 and not names_in(b.label) and not _SIZE_WORD.search(b.label) \
                    and set(names_in(f"{text}\n{fname}")) <= set(one):
                carried = [x for x in seen if x[1] == one[0]]
        models_seen = list(dict.fromkeys(m for _, m, _ in mine if m))
        weights_seen = list(dict.fromkeys(w for _, _, w in (mine or carried) if w))
        meta, inferred = _block_meta(b, ctx, text, text_before, fname, weights_seen)
        if b.kind == "llama-bench":
            recs = _pasted_llama_bench(b, ctx, meta, inferred, text_before)
        elif b.kind == "serve":
            recs = _pasted_serve(b, ctx, meta, inferred, text_before, models_seen)
        elif b.kind == "timings":
            recs = _pasted_timings(b, ctx, meta, inferred, text_before, models_seen)
        elif b.kind == "ollama":
            recs = _pasted_ollama(b, ctx, meta, inferred, text, models_seen)
        elif b.kind == "kobold":
            recs = _pasted_kobold(b, ctx, meta, inferred, models_seen)
        elif b.kind == "vllm-offline":
            recs = _pasted_vllm_offline(b, ctx, meta, inferred, models_seen)
        elif b.kind == "sglang-one-batch":
            recs = _pasted_sglang_one_batch(b, ctx, meta, inferred)
        elif b.kind == "sglang-offline":
            recs = _pasted_sglang_offline(b, ctx, meta, inferred)
        else:
            model, how = _table_model(b, ctx, text_before, models_seen,
                                      carried=carried[0][1] if carried else None)
            meta["model"] = model
            inferred["model"] = how
            meta["inferred"] = inferred
            recs = []
            for line, cells in b.rows:
                if len(cells) != len(b.header):
                    _fail(ctx.path, line, f"a table row with {len(cells)} cells, the header has {len(b.header)}")
                row = dict(zip(b.header, cells))
                if b.kind == "sweep-bench":
                    extra = {}
                    for col, field in (("RSS HWM", "rss_hwm_mib"), ("VRAM delta", "vram_delta_mib")):
                        if col in row:
                            extra[field] = _num(ctx, line, col, re.sub(r"\s*MiB$", "", row[col]), required=False)
                    recs += _sweep_records(ctx, line, b.main, _sweep_tool(b.main), row["PP"], row["TG"], row["N_KV"],
                                           row.get("T_PP s"), row["S_PP t/s"], row.get("T_TG s"), row["S_TG t/s"],
                                           extra, meta=meta)
                else:
                    recs += _batched_records(ctx, line, b.main, row["PP"], row["TG"], row["B"], row["N_KV"],
                                             row.get("T_PP s"), row["S_PP t/s"], row.get("T_TG s"), row["S_TG t/s"],
                                             meta=meta)
        seen += [(section, r.get("model"), r.get("weights")) for r in recs]
        out += recs
    _weights_by_model(out, ctx)
    return out


def _weights_by_model(recs, ctx):
    """A table that states no weights takes them from the file's llama-bench rows of the same model,
    where those print one file type (a page with a section per model, each a batched-bench table
    before its llama-bench table: llama.cpp's benches/dgx-spark); the notice that they were not
    stated goes where nothing is left without them."""
    told = {}
    for r in recs:
        if str(r.get("tool", "")).startswith("llama-bench") and r.get("model") and r.get("weights"):
            told.setdefault(r["model"], {}).setdefault(r["weights"], str(r["source"]).rsplit(":", 1)[1])
    filled = False
    for r in recs:
        ws = told.get(r.get("model")) or {}
        other = "from the file's other table" in str((r.get("inferred") or {}).get("weights", ""))
        if (r.get("weights") is None or other) and len(ws) == 1:
            (w, ln), = ws.items()
            r["weights"] = w
            r["inferred"] = dict(r.get("inferred") or {}, weights=f"{w} (from the file's llama-bench rows of "
                                                                   f"{r['model']}, line {ln})")
            r.pop("weights_note", None)
            _weights_fields(ctx, None, r)
            filled = True
        elif other and r.get("model") and any(r["weights"] in d for m, d in told.items() if m != r["model"]):
            # the one other table was another model's: its file type says nothing of this one
            r["weights"] = None
            r.pop("weights_note", None)
            r["inferred"] = {k: v for k, v in (r.get("inferred") or {}).items() if k != "weights"}
            ctx.notice(str(r["source"]).rsplit(":", 1)[1], "weights: not stated (the file's llama-bench rows are of "
                                                           "another model)")
    if filled and all(r.get("weights") for r in recs):
        ctx.notices[:] = [n for n in ctx.notices if "weights: not stated" not in n]


_SIZE_WORD = re.compile(r"(?<![0-9.])\d+(?:\.\d+)?[BbMm](?![A-Za-z0-9])")    # "7B", "30B-A3B", "20b", "135M"


def _table_model(b, ctx, text_before, models_seen, carried=None):
    """A table without a model column: --model, else the command line's -m, a heading, the text
    before it, the one model the file's other tables (of its section) named, the file name, the text
    above it (of its section), and last `carried`: the one model of a paste's tables under other headings
    that name no model (_read_pasted)."""
    if ctx.model:
        return ctx.model, "given (--model)"
    hints = []
    ld = b.loader
    if ld.get("path"):
        hints.append((ld["path"][1], f"model file {_stem(ld['path'][1])!r} of the load log (line {ld['path'][0]})"))
    if ld.get("name"):
        hints.append((ld["name"][1], f"general.name {ld['name'][1]!r} of the load log (line {ld['name'][0]})"))
    if ld.get("arch") and ld.get("params"):
        p = ld["params"][1].split()
        n_params = float(p[0]) * {"K": 1e3, "M": 1e6, "B": 1e9, "T": 1e12}[p[1]]
        model, how = ctx.model_for(ld["arch"][0], model_type=f"{ld['arch'][1]} {p[0]}{p[1]}", n_params=n_params,
                                   hints=hints + [h for h in _block_hints(b) if h[1].startswith("command line's model")]
                                   + [(os.path.basename(ctx.path), f"file name {os.path.basename(ctx.path)!r}")],
                                   what=f"the {b.kind} table at line {b.start} measured")
        return model, how.replace("' + ", f"' (the load log's arch and params, lines {ld['arch'][0]}, "
                                          f"{ld['params'][0]}) + ", 1)
    hints += _block_hints(b)
    if len(models_seen) == 1:
        hints.append((models_seen[0], "file's other table"))
    hints.append((os.path.basename(ctx.path), f"file name {os.path.basename(ctx.path)!r}"))
    if b.label and b.label in text_before:      # a table under a heading of its own: its section's text only
        text_before = text_before[text_before.rfind(b.label):]
    if text_before.strip():
        hints.append((text_before, "text above the table"))
    if carried:
        hints.append((carried, "paste's one model (its tables under the headings above)"))
    return ctx.model_for(b.start, hints=hints, what=f"the {b.kind} table at line {b.start} measured")


def cards_from_command(opts: dict, device_lines: bool = False) -> tuple:
    """How many cards a command line ran on, from its own options (`_command_args`' dict), with why:
    -sm none -> 1 (one card, whatever else is visible); -dev A/B -> its devices (one value: llama-bench's
    commas are separate runs, so a list says nothing about one row); CUDA_VISIBLE_DEVICES -> its devices
    (not where device lines are printed: those list the visible cards already, and -dev picks among
    them); -tp N -> N. (None, None) where the command line does not say."""
    if str(opts.get("split_mode", "")).lower() == "none":
        return 1, "-sm none on the command line"
    dev = str(opts.get("devices") or "")
    if dev and dev.lower() not in ("auto", "none") and "," not in dev:
        return len([d for d in dev.split("/") if d.strip()]), f"-dev {dev}"
    if opts.get("visible_devices") and not device_lines:
        return len(opts["visible_devices"]), "CUDA_VISIBLE_DEVICES"
    if re.fullmatch(r"\d+", str(opts.get("tensor_parallel", "")).strip()):
        return int(opts["tensor_parallel"]), f"-tp {opts['tensor_parallel']}"
    return None, None


def _block_meta(b, ctx, text, text_before, fname, weights_seen):
    """The context of one block: card, card count, split, backend, flash attention, label, build,
    and how each was told."""
    meta, inferred = {}, {}
    opts = b.cmd[2] if b.cmd else {}
    if b.kind in _SERVING_KINDS and "tensor_parallel" not in opts:   # the server's -tp, on its line before the client's
        tp = [c[2]["tensor_parallel"] for c in b.cmds if c[2].get("tensor_parallel")]
        if tp:
            opts = dict(opts, tensor_parallel=tp[-1])
    # the card
    names, count, how = [], None, None
    if b.devices:
        names = [b.devices[k] for k in sorted(b.devices)]
        how = f"'{b.device_line[1]}' line{'s' if len(names) > 1 else ''} (line {b.device_line[0]})"
        sel = selected_devices(b.devices, opts.get("devices"))
        if sel:   # -dev CUDA1 of a two-card box: the second card only
            names, how = sel, how + f" and -dev {opts['devices']}"
        mg = _main_gpu(names, opts.get("split_mode"), opts.get("main_gpu"))
        if mg is not None:     # -sm none: the main GPU alone
            names, how = [names[mg]], how + f" and -sm none (the main GPU, {mg})"
    else:
        for where, t in (("heading", b.label or ""), ("text before the table", " ".join(x for _, x in b.before)),
                         ("text above the table", text_before), ("file name", fname), ("text", text)):
            found = gpus_in(t)
            if len(found) == 1 or (found and where == "file name"):
                names = [found[0][0]]
                count = found[0][1]
                how = f"the {where}" + (f" ({found[0][1]}x)" if count else "")
                break
    if names:
        device = _short_gpu(names[0]) if len(set(names)) == 1 else " + ".join(dict.fromkeys(_short_gpu(x) for x in names))
        n = count or len(names)
        n_cmd, why_n = cards_from_command(opts, device_lines=bool(b.devices))
        if n_cmd:
            n = n_cmd
        elif b.kind in _SERVING_KINDS and not count:
            tp = re.search(r"\bTP\s*=\s*(\d+)", text)
            n, why_n = (int(tp.group(1)), f"'TP={tp.group(1)}' in the text") if tp else (1, "no -tp: one card assumed")
        elif not b.devices and not count:
            why_n = "one card assumed (no device lines)"
            where = "the file name" if how.startswith("the file name") else "the text"
            ctx.notice(b.start, f"card count: 1 assumed ({device} named in {where}, no device lines)")
        meta.update(device=device, hardware=_hardware_key(device), n_cards=n)
        inferred["card"] = f"{meta['hardware'] or device} x{n} (from {how}" + (f"; {why_n}" if why_n else "") + ")"
        if meta["hardware"] is None:
            ctx.notice(b.start, f"card: {device!r} is none of the hardware profiles (glmbench hardware lists "
                                f"them): calibrate needs --hardware")
        sm = opts.get("split_mode")
        if n == 1:
            meta["split"] = "none"
        else:
            meta["split"] = {"layer": "layer", "row": "tensor", "tensor": "tensor"}.get(str(sm).lower(), "layer")
            if not sm and b.kind not in _SERVING_KINDS:
                inferred["split"] = "layer (llama.cpp's default -sm layer)"
            elif b.kind in _SERVING_KINDS:
                meta["split"] = "tensor"
                inferred["split"] = _serving_tp(b)
    else:
        ctx.notice(b.start, "card: not stated (no device lines and no GPU named in the text or the file name); "
                            "calibrate needs --hardware")
        # how many cards the command line ran on, whichever they were (-tp 2, CUDA_VISIBLE_DEVICES=0,1, -sm none)
        n, why_n = cards_from_command(opts)
        if n:
            meta["n_cards"] = n
            inferred["card"] = f"not stated, x{n} (from {why_n})"
            if n > 1 and b.kind in _SERVING_KINDS:
                meta["split"] = "tensor"
                inferred["split"] = _serving_tp(b)
    # the backend
    if b.devices and b.backend:
        meta["backend"], inferred["backend"] = b.backend, f"{b.backend} (from the device lines)"
        if opts.get("rpc"):   # --rpc HOST:PORT: layers also on another machine's rpc-server
            meta["backend"] += ",RPC"
            inferred["backend"] += f" + RPC (--rpc {opts['rpc']} on the command line)"
        vk = {b.coopmat.get(k) for k in b.devices if b.devices[k] in names} - {None}
        if b.backend == "Vulkan" and len(vk) == 1:
            meta["coopmat"] = vk.pop()
            inferred["coopmat"] = f"{meta['coopmat']} (the ggml_vulkan device line's 'matrix cores')"
    else:
        for where, t in (("heading", b.label or ""), ("text before the table", " ".join(x for _, x in b.before)),
                         ("text", text), ("file name", fname)):
            found = {bk for bk in _GPU_BACKENDS if re.search(rf"(?<![A-Za-z]){bk}(?![A-Za-z])", t, re.I)}
            if b.kind == "llama-bench" or b.kind in _SERVING_KINDS:
                break   # llama-bench has its backend column; a serving engine is its own backend
            if len(found) == 1:
                bk = found.pop()
                meta["backend"], inferred["backend"] = bk, f"{bk} (from the {where})"
                break
    # settings a table's own heading or <summary> states in words ("Main branch, mla = 2, fa",
    # "PR, -mla 3 -fa -ub 4096"): that table's, so they win over the prose above it (two tables of one
    # paste under two labels, e.g. ik_llama.cpp PR 386's `-mla 2` and `-mla 3` runs)
    for k, v in (label_settings(b.label or "") if b.kind not in _SERVING_KINDS else {}).items():   # llama.cpp's settings
        if k in opts or b.main.get(k) or (k == "flash_attn" and ("flash_attn" in b.main or "flash_attn_type" in b.main)):
            continue
        meta[k] = v
        inferred[k] = f"{v} (from the table's heading {b.label!r})"
    # flash attention from the command line, else from options quoted in the prose ("using `-mla 3
    # -fa -fmoe`"), where every quoted set that says agrees; the header line's wins (_bench_common)
    if "flash_attn" in opts:
        meta["flash_attn"] = opts["flash_attn"]
        inferred["flash_attn"] = f"{opts['flash_attn']} (from the command line, line {b.cmd[0]})"
    elif "flash_attn" not in b.main and "flash_attn_type" not in b.main and "flash_attn" not in meta:
        for where, t in (("text before the table", "\n".join(x for _, x in b.before)), ("text above", text_before)):
            spans = [sp for sp in re.findall(r"`([^`\n]+)`", t) if re.match(r"\s*-{1,2}[a-z]", sp)]
            fas = [(sp, _command_args(sp, {}).get("flash_attn")) for sp in spans]   # in the text's order
            vals = {v for _, v in fas if v is not None}
            if len(vals) == 1:
                v = vals.pop()
                sp = next(x for x, y in fas if y == v)
                meta["flash_attn"], inferred["flash_attn"] = v, f"{v} (from `{sp}` in the {where})"
                break
    # the u-batch and MLA mode quoted in the prose the same way ("using `-mla 3 -fa -ub 4096`"), where
    # the command line does not give them and every quoted set that says agrees
    for k in ("n_ubatch", "mla"):
        if k in opts or b.main.get(k) or k in meta:
            continue
        for where, t in (("text before the table", "\n".join(x for _, x in b.before)), ("text above", text_before)):
            spans = [sp for sp in re.findall(r"`([^`\n]+)`", t) if re.match(r"\s*-{1,2}[a-z]", sp)]
            vals = {_command_args(sp, {}).get(k) for sp in spans} - {None}
            if len(vals) == 1:
                v = vals.pop()
                meta[k] = int(v) if k == "n_ubatch" and re.fullmatch(r"\d+", str(v)) else v
                inferred[k] = f"{v} (from the options quoted in the {where})"
                break
    # a llama-bench list ("-ub 512,2048", "-ctk f16,q8_0") is one run per value: the table's column says
    # which, the list says nothing of a row
    single = {k: v for k, v in opts.items() if not (isinstance(v, str) and "," in v)}
    for k in ("n_gpu_layers", "n_ubatch", "n_batch", "n_threads"):
        if k in single and not b.main.get(k):
            v = single[k]
            meta[k] = int(v) if re.fullmatch(r"-?\d+", str(v)) else v
    for k in ("type_k", "type_v"):
        if k in single:
            meta[k] = _kv_name(single[k])
    if "mla" in single:
        meta["mla"] = single["mla"]
    # what runs on the CPU (-ot exps=CPU, --n-cpu-moe N, --cpu-moe, -nkvo): a table without llama-bench's
    # columns for them (sweep-bench's) says so only on its command line
    if single.get("tensor_buft_overrides"):
        meta["tensor_buft_overrides"] = single["tensor_buft_overrides"]
    if re.fullmatch(r"\d+", str(single.get("n_cpu_moe", ""))):
        meta["n_cpu_moe"] = int(single["n_cpu_moe"])
    if single.get("no_kv_offload") is True:
        meta["no_kv_offload"] = True
    if opts.get("fmoe"):
        meta["fmoe"] = True
    if b.cmd:
        meta["command"] = b.cmd[1]
    if b.label:
        meta["label"] = b.label
    if b.build:
        meta["build_commit"], meta["build_number"] = b.build
    if b.cuda_flags:
        meta["cuda_flags"] = dict(b.cuda_flags)
    # weights for tables without a model column: the command line's model file, the file name, the text
    if b.kind != "llama-bench":
        w, whow = None, None
        if b.loader.get("ftype") and quant_name(b.loader["ftype"][1]):
            w, whow = quant_name(b.loader["ftype"][1]), f"file type {b.loader['ftype'][1]!r} of the load log (line {b.loader['ftype'][0]})"
        kobold = b.serve.get("model") if b.kind == "kobold" else None     # its `Model:` line: the file's name
        for where, t in (() if w else ((f"Model: line of the KoboldCpp benchmark (line {kobold[0]})" if kobold else "", kobold[1] if kobold else ""),
                                       (f"command line's model (line {b.cmd[0]})" if b.cmd else "", _stem(opts["model"]) if opts.get("model") else ""),
                         ("file name", _stem(fname)), ("heading", b.label or ""),
                         ("text before the table", " ".join(x for _, x in b.before)),
                         ("file's other table", weights_seen[0] if len(weights_seen) == 1 else ""))):
            if not t:
                continue
            # the KV cache's type is no weight format: "-ctk q8_0", "--cache-type-v=q4_0", "q8_0 KV"
            t = _KV_TEXT.sub(" ", t)
            found = {quant_name(q) for q in _QUANT_RE.findall(t)} - {None}
            if b.kind in _SERVING_KINDS and not found and where != "file's other table":   # an HF checkpoint's name
                found = {checkpoint_quant(t)} - {None}
            if where in ("heading", "text before the table"):   # prose: only names glmbench knows ("Q4" is not one)
                found = {q for q in found if weights_note(q) is None or q in vocab.FORMAT_NOTES}
            if len(found) == 1:
                w, whow = found.pop(), where
                if b.kind not in _SERVING_KINDS and gguf_quant(w) != w:      # a GGUF runtime's file: its file type
                    w, whow = gguf_quant(w), f"{where}'s 'mxfp4': llama.cpp's one MXFP4 file type, MXFP4 experts, Q8_0 elsewhere"
                break
        if w is None and b.kind in _SERVING_KINDS:
            pass
        elif w is None:
            if b.kind != "ollama":     # an Ollama tag without one: its reader says what it assumes
                ctx.notice(b.start, "weights: not stated (no model file, quant name or file type in the text or the "
                                    "file name)")
        else:
            meta["weights"] = w
            inferred["weights"] = f"{w} (from the {whow})"
    meta["inferred"] = inferred
    return meta, inferred


_KV_TEXT = re.compile(r"(?:(?<=\s)|^)(?:-ctk|-ctv|-ctkd|-ctvd|--cache-type-[kv](?:-draft)?)(?:\s+|=)\S+"
                      r"|\b(?:f16|bf16|f32|q8_0|q4_0|q4_1|q5_0|q5_1|iq4_nl)\s+(?:KV|K/V|K|V)\b", re.I)


# llama-bench's -fa default was 0 (off) until its auto mode (2025-08/09, about build 6300; auto = -1 in its
# json / csv, on where the backend runs the head sizes). A markdown table prints fa only when it is not the
# default, so a table of a build before this threshold without the column ran with fa off. The threshold
# is kept below the change: builds 6000-6300 without the column stay unstated (the runtime model's default)
FA_AUTO_BUILD = 6000


# llama-bench's "mean ± stddev" as pastes spell it: "+-" or "+/-" typed by hand, the UTF-8 "±"
# shown in a Windows console's code page ("Â±" in cp1252, "┬▒" in cp437) and copied from there, and
# the HTML entity of a table written in HTML or copied from a page's source ("&plusmn;")
_PLUS_MINUS = re.compile(r"\+/?-|Â±|┬▒|&plusmn;|&#177;|&#[xX][bB]1;")


def _plus_minus(cell: str) -> str:
    return _PLUS_MINUS.sub("±", cell or "")


def _pasted_llama_bench(b, ctx, meta, inferred, text_before):
    out = []
    model_cache = {}
    for line, cells in b.rows:
        if len(cells) > len(b.header) and "ot" in b.header:
            # llama-bench prints -ot's pattern as given: a regex's alternation ("blk\.(2[0-9]|3[0-9])\.ffn_.*_exps\.=CPU")
            # puts its own pipes in the ot cell
            i, extra = b.header.index("ot"), len(cells) - len(b.header)
            cells = cells[:i] + ["|".join(cells[i:i + extra + 1])] + cells[i + extra + 1:]
        if len(cells) != len(b.header):
            _fail(ctx.path, line, f"a table row with {len(cells)} cells, the header has {len(b.header)}")
        row = dict(zip(b.header, cells))
        m = _MD_TEST.match(row.get("test", "").strip())
        if not m or not (m.group(1) or m.group(3)) or (m.group(2) and not (m.group(1) and m.group(3))):
            _fail(ctx.path, line, f"test {row.get('test')!r} is not llama-bench's pp<n>, tg<n> or pp<n>+tg<n> [@ d<n>]")
        ts = re.fullmatch(r"\s*([^\s±]+)\s*(?:±\s*(\S+))?\s*", _plus_minus(row.get("t/s", "")))
        if not ts:
            _fail(ctx.path, line, f"t/s {row.get('t/s')!r} is not 'mean ± stddev'")
        o = {"model_type": row.get("model"), "n_prompt": int(m.group(1) or 0), "n_gen": int(m.group(3) or 0),
             "n_depth": int(m.group(4) or 0), "avg_ts": ts.group(1), "stddev_ts": ts.group(2)}
        for col, v in row.items():
            if col in ("model", "test", "t/s", "size", "params"):
                continue
            o[_MD_COLS.get(col, col)] = v
        sizes = {}   # llama-bench prints a size under 1 GiB in MiB, a count under 1e9 in M
        for col, field, units in (("size", "model_size", {"GiB": 1024 ** 3, "MiB": 1024 ** 2}),
                                  ("params", "model_n_params", {"B": 1e9, "M": 1e6})):
            mm = re.fullmatch(r"\s*(\d+(?:\.\d+)?)\s*(GiB|MiB|B|M)\s*", row.get(col, ""))
            if mm and mm.group(2) in units:
                sizes[field] = round(float(mm.group(1)) * units[mm.group(2)])
        key = (row.get("model"), sizes.get("model_n_params"))
        if key not in model_cache:
            if ctx.model:
                model_cache[key] = (ctx.model, "given (--model)")
            else:
                hints = _table_hints(b, ctx.path, text_before)
                mt = row.get("model")
                model_cache[key] = ctx.model_for(line, model_type=mt, n_params=sizes.get("model_n_params"),
                                                 hints=hints, what=f"'{mt}' is")
        model, how = model_cache[key]
        rm = dict(meta, model=model, inferred=dict(inferred, model=how))
        # the row's own dev / sm columns narrow the cards the context named
        dev = str(o.get("devices") or "").strip()
        if dev and dev.lower() not in ("auto", "none") and rm.get("device"):
            rm["n_cards"] = len([d for d in re.split(r"[/,]", dev) if d.strip()])
            sel = selected_devices(b.devices, dev)
            if sel:   # the cards of those indices ("CUDA1" of a 4090 + 3090 box: the 3090)
                rm["device"] = _short_gpu(sel[0]) if len(set(sel)) == 1 else " + ".join(dict.fromkeys(_short_gpu(x) for x in sel))
                rm["hardware"] = _hardware_key(rm["device"])
                vk = {b.coopmat.get(k) for k in b.devices if b.devices[k] in sel} - {None}
                if rm.get("coopmat") is not None or vk:
                    rm["coopmat"] = vk.pop() if len(vk) == 1 else None
            if rm["n_cards"] == 1:
                rm["split"] = "none"
            rm["inferred"]["card"] = f"{rm['hardware'] or rm['device']} x{rm['n_cards']} (dev column {dev!r})"
        sm = str(o.get("split_mode") or "").strip().lower()
        pool = (selected_devices(b.devices, dev) or [b.devices[k] for k in sorted(b.devices)]) if b.devices else []
        mg = _main_gpu(pool, sm, o.get("main_gpu", (b.cmd[2] if b.cmd else {}).get("main_gpu")))
        if mg is not None and rm.get("device"):    # -sm none: the main GPU alone ran
            rm["device"] = _short_gpu(pool[mg])
            rm["hardware"] = _hardware_key(rm["device"])
            rm["inferred"]["card"] = (f"{rm['hardware'] or rm['device']} x1 (sm none: the main GPU, {mg}, of the "
                                      f"'{b.device_line[1]}' lines (line {b.device_line[0]}))")
        if sm and rm.get("n_cards"):
            if sm == "none":
                rm["n_cards"] = 1
            rm["split"] = "none" if rm["n_cards"] == 1 else {"row": "tensor", "tensor": "tensor"}.get(sm, sm)
            if rm["inferred"].get("split"):     # the block's default, which the row's column replaces
                rm["inferred"]["split"] = f"{rm['split']} (the sm column {sm!r})"
        rpc_note = None
        parts = [x.strip() for x in str(o.get("backends") or "").split(",") if x.strip()]
        kept = [x for x in parts if x.upper() != "RPC"]
        if b.cmd and not b.cmd[2].get("rpc") and kept and len(kept) < len(parts):
            # RPC in the column but no --rpc on the block's llama-bench command line: builds of late 2024
            # listed every backend compiled in (GGML_RPC=ON: "CUDA,RPC" whether or not it was used); later
            # builds list RPC only with an RPC device, which only --rpc makes. Either way not used here.
            rpc_note = f"{o['backends']!r} in the backend column, no --rpc on the command line (line {b.cmd[0]}): " \
                       f"RPC compiled in, not used"
            o["backends"] = ",".join(kept)
        if "backends" in o:
            rm["backend"] = _backend_name(o["backends"])
            rm["inferred"]["backend"] = f"{rm['backend']} (from the backend column)" if not (b.devices and b.backend) \
                or rm["backend"] in ("CPU", "BLAS") else rm["inferred"].get("backend")
            if b.devices and b.backend and rm["backend"] not in ("CPU", "BLAS"):   # a CPU build's row stays the CPU's
                base = meta.get("backend") or b.backend      # the device lines' (+ RPC where --rpc says so)
                rm["backend"] = base + (",RPC" if "RPC" in str(o["backends"]).upper().split(",")
                                        and "RPC" not in base else "")
            if rpc_note:
                rm["inferred"]["backend"] = f"{rm['backend']} ({rpc_note})"
            several = [x for x in _backend_name(o["backends"]).split(",") if x != "RPC"]
            db = _dev_backend(dev, o["backends"])
            if db:   # the build's backends are several; the row's devices are of one ("CUDA,Vulkan", dev Vulkan0)
                rm["backend"] = db
                if db != "Vulkan":
                    rm.pop("coopmat", None)     # (the Vulkan device lines' matrix cores)
                rm["inferred"]["backend"] = f"{db} (the dev column {dev!r} of a {o['backends']} build)"
            elif len(several) > 1:   # no -dev of one backend's devices: not the device lines' last backend
                rm["backend"] = _backend_name(o["backends"])
                rm["inferred"]["backend"] = f"{rm['backend']} (the backend column; no dev column picks one's devices)"
        r = _llama_bench_record(o, ctx, line, meta=rm)
        r.update(sizes)
        ft = ftype_of(row.get("model"))
        if r.get("weights"):
            r["inferred"]["weights"] = f"{r['weights']} (from the file type {ft!r})" if quant_name(ft) else \
                r["inferred"].get("weights", r["weights"])
        if "flash_attn" in o:
            r["inferred"]["flash_attn"] = f"{r.get('flash_attn')} (from the fa column)"
        elif (isinstance(r.get("build_number"), int) and r["build_number"] < FA_AUTO_BUILD
              and r.get("tool") == "llama-bench" and r.get("flash_attn") is None):
            # llama-bench prints a column only where it is not its default, and its -fa default was off
            # before its auto mode (mid-2025): an older table without the column ran without it
            r["flash_attn"] = 0
            r["inferred"]["flash_attn"] = (f"0: no fa column, and build {r['build_number']} predates llama-bench's "
                                           f"-fa auto (builds before {FA_AUTO_BUILD}: off by default)")
        out.append(r)
    return out


def _pasted_serve(b, ctx, meta, inferred, text_before, models_seen):
    kv = {k: v for k, (_, v) in b.serve.items()}
    line = b.start
    o = {}
    for k, v in kv.items():
        if k == "backend":
            o[k] = v
            continue
        try:
            o[k] = float(v)
        except ValueError:
            o[k] = v
    opts = b.cmd[2] if b.cmd else {}
    if "num_prompts" in opts:
        try:
            o["num_prompts"] = int(opts["num_prompts"])
        except ValueError:
            pass
    # the client's arrival process and concurrency limit, where the block does not print them: vLLM's
    # lines before its block (`Traffic request rate: 4.0`, `Burstiness factor: 0.5 (Gamma distribution)`,
    # `Maximum request concurrency: 32`, `None` without --max-concurrency; vllm/benchmarks/serve.py), else
    # its command line (or the arguments it printed, namespace_command)
    pre = {}
    for ln, t in b.before:
        m = re.match(r"^\s*(Traffic request rate|Burstiness factor|Maximum request concurrency):\s*(inf|None|[\d.]+)\b", t)
        if m:
            k = {"T": "request_rate", "B": "burstiness", "M": "max_concurrency"}[m.group(1)[0]]
            pre[k] = m.group(2)
        # vLLM's --ramp-up-strategy (linear | exponential) from --ramp-up-start-rps to --ramp-up-end-rps over the
        # run: no one request rate (`Traffic ramp-up strategy: linear.`, `Will increase RPS from A to B RPS ...`)
        m = re.match(r"^\s*Traffic ramp-up strategy:\s*(\w+)", t)
        if m:
            o["ramp_up_strategy"] = m.group(1)
        m = re.match(r"^\s*Will increase RPS from ([\d.]+) to ([\d.]+) RPS", t)
        if m:
            o["ramp_up_start_rps"], o["ramp_up_end_rps"] = float(m.group(1)), float(m.group(2))
    for k, v in pre.items():
        if k == "max_concurrency":
            if v != "None" and "max_concurrency" not in o:
                o[k] = float(v)
        else:
            o.setdefault(k, float(v))
    for k in ("request_rate", "burstiness", "max_concurrency"):
        if k not in o and k not in pre and opts.get(k) is not None:
            try:
                o[k] = float(opts[k])
            except ValueError:
                pass
    if opts.get("ramp_up_strategy") and "ramp_up_strategy" not in o:
        o["ramp_up_strategy"] = opts["ramp_up_strategy"]
    if "completed" not in o:
        _fail(ctx.path, line, "a serving benchmark block without 'Successful requests:'")
    if "output_throughput" not in o or "total_output_tokens" not in o:
        bm = re.search(r"--backend[=\s]+([\w.-]+)", b.cmd[1]) if b.cmd else None
        _no_generation_check(ctx, line, o, backend=bm.group(1) if bm else None)
    if "output_throughput" not in o:
        _fail(ctx.path, line, "a serving benchmark block without 'Output token throughput (tok/s):'")
    for k in ("total_input_tokens", "total_output_tokens"):
        if k not in o:
            _fail(ctx.path, line, f"a serving benchmark block without its `{k}` line")
    # the model: every command line of the text (server and client) names it the same way
    names = []
    for c in b.cmds:
        mname = c[2].get("model")
        if mname and mname not in names:
            names.append(mname)
    model, how = ctx.model_for(line, hints=[(n, f"command line's model {n!r}") for n in names] + [ctx.file_hint()],
                               what="this run served")
    # the client that printed the block (its command line), not the server it measured: `vllm bench serve
    # --backend sglang` is vLLM's client on an SGLang server
    cmdline = b.cmd[1] if b.cmd else ""
    client = re.search(r"sglang\.bench_serving|sglang\.benchmark\.serving|vllm\s+bench\s+serve|benchmark_serving\.py",
                       cmdline)
    sglang = client.group(0).startswith("sglang") if client else (
        "sglang" in cmdline or str(o.get("backend", "")).lower() == "sglang")
    tool = "sglang bench_serving (console)" if sglang else "vllm benchmark_serving (console)"
    bm = re.search(r"--backend[=\s]+([\w.-]+)", cmdline) if client else None
    o["backend"] = o.get("backend") or (bm.group(1) if bm else ("sglang" if sglang else "vllm"))
    n_cards = meta.get("n_cards")
    r = _serve_record(ctx, line, o, tool=tool, model_name=None, n_cards=n_cards, resolved=(model, how))
    if r is None:
        return []
    inferred = dict(inferred, model=how)
    if pre.get("max_concurrency") == "None":
        inferred["max_concurrency"] = "unlimited (the paste's `Maximum request concurrency: None`)"
    # the server measured, where the paste holds its command line (a llama-server measured by vLLM's
    # client with --backend openai: the client's backend does not say which server ran)
    srv = server_of(b.cmds)
    if srv:
        r["server"] = srv[0]
        inferred["server"] = srv[1]
        # the server's scheduling limits where its command line sets them (glmbench.predict.replay.server_config
        # takes each server's defaults for the rest): requests at once, prompt tokens per step
        so = srv[2] or {}
        llama = srv[0] in ("llama.cpp", "ik_llama.cpp")
        for key, field in (("n_parallel" if llama else "max_num_seqs", "max_num_seqs"),
                           ("n_batch" if llama else "max_num_batched_tokens", "max_num_batched_tokens")):
            if re.fullmatch(r"[1-9]\d*", str(so.get(key, ""))):
                r[field] = int(so[key])
        if srv[0] in ("llama.cpp", "ik_llama.cpp"):     # llama-server's own settings: -fa, -ub, -ctk
            so = srv[2] or {}
            if so.get("flash_attn") is not None:
                r["flash_attn"] = so["flash_attn"]
            if re.fullmatch(r"\d+", str(so.get("n_ubatch", ""))):
                r["n_ubatch"] = int(so["n_ubatch"])
            if so.get("type_k"):
                r["type_k"] = _kv_name(so["type_k"])
    _engine_weights(ctx, line, meta, inferred, names, "vLLM", from_file=True)
    return [_engine_record(ctx, line, r, meta, inferred)]


def _engine_weights(ctx, line, meta, inferred, names, engine, from_file=False):
    """A serving engine's weights where the text states none (`meta` has no weights): the file name's
    quant (`from_file`) or the checkpoint's name (an AWQ / GPTQ / FP8 repository), else a notice that the
    engine serves the checkpoint's own dtype."""
    if "weights" in meta:
        return
    w = (_quant_from_filename(os.path.basename(ctx.path)) if from_file else None) or next(
        (q for q in map(checkpoint_quant, names) if q), None)
    if w:
        meta["weights"], inferred["weights"] = w, f"{w} (from the {'file name' if from_file else 'model name'})"
    else:
        ctx.notice(line, f"weights: not stated; {engine} serves the checkpoint's own dtype (bf16 for most): "
                         "--weights sets it where needed")


def _engine_record(ctx, line, r, meta, inferred):
    """A serving engine's record with the block's card, count, split, weights and label, and how each was told."""
    for k in ("device", "hardware", "n_cards", "split", "weights", "label", "command"):
        if meta.get(k) is not None:
            r[k] = meta[k]
    r["inferred"] = inferred
    _weights_fields(ctx, line, r)
    return _clean(r)


# vLLM's offline benchmarks' defaults where the command line does not set them (vllm/benchmarks/latency.py:
# --input-len 32, --output-len 128, --batch-size 8; throughput.py: --num-prompts 1000), vLLM 0.10.1
VLLM_LATENCY_DEFAULTS = {"input_len": 32, "output_len": 128, "n_batch": 8}
VLLM_THROUGHPUT_PROMPTS = 1000
_VLLM_OFFLINE_CMD = re.compile(r"vllm\s+bench\s+(latency|throughput)|benchmark_(latency|throughput)\.py")


def _pasted_vllm_offline(b, ctx, meta, inferred, models_seen, output_json=None):
    """vLLM's offline benchmarks, one batch through the engine (the `LLM` class, no server): `bench latency`
    times B prompts of --input-len tokens, each generating --output-len (ignore_eos), from the first prompt
    queued to the last token (Avg latency, its percentiles); `bench throughput` the same for --num-prompts
    requests (Throughput: requests/s; the prompt and output token totals it prints give the mean lengths).
    The lengths and counts are on its command line (vLLM's defaults where it sets none), which the paste
    must hold. One `serve` record: `serve_kind` latency | throughput, `n_streams` the requests in the
    batch, `aggregate_tok_s` the output tokens per second of the run (for latency: B x output / latency)."""
    v = {k: val for k, (_, val) in b.serve.items()}
    line, kind = b.start, v["kind"]
    oj = output_json
    cmds = [c for c in b.cmds if _VLLM_OFFLINE_CMD.search(c[1])]
    if not cmds and oj is not None and kind == "latency":
        _fail(ctx.path, line, "vLLM's `bench latency --output-json` file holds no batch size, prompt length or output "
                              "length (only model_id, avg_latency, latencies, percentiles): paste its command line "
                              "(`vllm bench latency --batch-size B --input-len N --output-len M ...`) with it")
    if not cmds and oj is not None:
        _fail(ctx.path, line, "vLLM's `bench throughput --output-json` file holds the prompt and output tokens only "
                              "as one total (total_num_tokens) and no lengths: the prompt and output lengths are not "
                              "known: paste its command line (`vllm bench throughput --input-len N --output-len M "
                              "...`) with it")
    if not cmds:
        _fail(ctx.path, line, f"vLLM's offline {kind} benchmark without its command line (`vllm bench {kind} ...`, "
                              "which states the prompt and output lengths and the batch): paste it above the result")
    cline, ctext, opts = cmds[-1]
    said = _VLLM_OFFLINE_CMD.search(ctext)
    if (said.group(1) or said.group(2)) != kind:
        _fail(ctx.path, line, f"a {kind} result under a `{said.group(0)}` command line (line {cline})")

    def opt(key, default):
        raw = opts.get(key)
        if raw is None:
            return default, f"vLLM's default {default}"
        return _num(ctx, cline, key, raw, integer=True, minimum=1), f"the command line's {raw}"
    names = [opts["model"]] if opts.get("model") else []
    hints = [(n, f"command line's model {n!r}") for n in names]
    if oj is not None and isinstance(oj.get("model_id"), str) and oj["model_id"]:
        hints = [(oj["model_id"], f"model_id {oj['model_id']!r}")] + hints
        names = [oj["model_id"]] + names
    model, how = ctx.model_for(line, hints=hints + [ctx.file_hint()], what="this run served")
    inferred = dict(inferred, model=how)
    r = {"evidence": "measured", "test": "serve", "serve_kind": kind, "server": "vllm", "model": model,
         "tool": f"vllm bench {kind} ({'--output-json' if oj is not None else 'console'})", "source": ctx.source(line),
         "stddev_ts": None}
    if oj is not None and kind == "throughput":
        # the file's own counts: the requests run, their time, all their tokens (prompt and output together)
        n = _num(ctx, line, "num_requests", oj.get("num_requests"), integer=True, minimum=1)
        rps = _num(ctx, line, "requests_per_second", oj.get("requests_per_second"), positive=True)
        total = _num(ctx, line, "total_num_tokens", oj.get("total_num_tokens"), minimum=0)
        elapsed = _num(ctx, line, "elapsed_time", oj.get("elapsed_time"), required=False, positive=True)
        got_in = opts.get("input_len") is not None
        got_out = opts.get("output_len") is not None
        if got_in and got_out:
            n_in, w_in = opt("input_len", None)
            n_out, w_out = opt("output_len", None)
            if total and abs((n_in + n_out) * n - total) > 0.05 * total:
                ctx.notice(line, f"the command line's lengths ({n_in} + {n_out} tokens a request) do not add up to "
                                 f"the file's total_num_tokens / num_requests ({total / n:.0f}): the command line's kept")
        elif got_in or got_out:
            given = "input_len" if got_in else "output_len"
            g, w_g = opt(given, None)
            other = round(total / n) - g
            if other < (1 if got_in else 0):
                _fail(ctx.path, line, f"total_num_tokens / num_requests ({total / n:.0f}) leaves no "
                                      f"{'output' if got_in else 'prompt'} tokens beside the command line's "
                                      f"--{given.replace('_', '-')} {g}")
            w_o = (f"total_num_tokens / num_requests less the command line's --{given.replace('_', '-')} {g}")
            (n_in, w_in, n_out, w_out) = (g, w_g, other, w_o) if got_in else (other, w_o, g, w_g)
        else:
            _fail(ctx.path, line, "vLLM's `bench throughput --output-json` file holds the prompt and output tokens only "
                                  f"as one total (total_num_tokens) and its command line (line {cline}) sets neither "
                                  "--input-len nor --output-len: the prompt and output lengths are not known")
        agg = rps * n_out
        r.update(n_prompt=n_in, n_gen=n_out, n_depth=n_in, n_streams=n, completed=n, request_throughput=rps,
                 duration_s=elapsed if elapsed is not None else n / rps)
        inferred.update(n_prompt=w_in, n_gen=w_out, n_streams=f"the file's num_requests {n}")
    elif kind == "latency":
        lat = _num(ctx, line, "Avg latency", v["latency_s"], positive=True)
        n_in, w_in = opt("input_len", VLLM_LATENCY_DEFAULTS["input_len"])
        n_out, w_out = opt("output_len", VLLM_LATENCY_DEFAULTS["output_len"])
        batch, w_b = opt("n_batch", VLLM_LATENCY_DEFAULTS["n_batch"])
        agg = batch * n_out / lat
        p50 = v.get("p50_latency_s")
        if oj is not None and isinstance(oj.get("percentiles"), dict):
            p50 = oj["percentiles"].get("50", oj["percentiles"].get(50))
        r.update(n_prompt=n_in, n_gen=n_out, n_depth=n_in, n_streams=batch, completed=batch, latency_s=lat,
                 p50_latency_s=_num(ctx, line, "50% percentile latency", p50, required=False))
        inferred.update(n_prompt=w_in, n_gen=w_out, n_streams=w_b)
    else:
        rps = _num(ctx, line, "requests/s", v["request_throughput"], positive=True)
        n, w_n = opt("num_prompts", VLLM_THROUGHPUT_PROMPTS)
        tot_in = _num(ctx, line, "Total num prompt tokens", v.get("total_prompt_tokens"), required=False)
        tot_out = _num(ctx, line, "Total num output tokens", v.get("total_output_tokens"), required=False)
        if tot_in is not None and tot_out:
            n_in, n_out = round(tot_in / n), round(tot_out / n)
            inferred.update(n_prompt=f"the prompt token total / {n} requests", n_gen=f"the output token total / {n}")
        elif opts.get("input_len") and opts.get("output_len"):
            n_in, w_in = opt("input_len", None)
            n_out, w_out = opt("output_len", None)
            inferred.update(n_prompt=w_in, n_gen=w_out)
        else:
            _fail(ctx.path, line, "vLLM's throughput result without its token totals (`Total num prompt tokens:` / "
                                  "`Total num output tokens:`) or --input-len and --output-len on its command line: "
                                  "the lengths are not known")
        agg = _num(ctx, line, "output tokens/s", v.get("output_throughput"), required=False) or rps * n_out
        r.update(n_prompt=n_in, n_gen=n_out, n_depth=n_in, n_streams=n, completed=n, request_throughput=rps,
                 duration_s=n / rps)
        inferred.update(n_streams=w_n)
    r.update(avg_ts=agg, aggregate_tok_s=agg, concurrency=r["n_streams"])
    for k in ("max_num_seqs", "max_num_batched_tokens"):
        if re.fullmatch(r"[1-9]\d*", str(opts.get(k, ""))):
            r[k] = int(opts[k])
    _engine_weights(ctx, line, meta, inferred, names, "vLLM")
    return [_engine_record(ctx, line, r, meta, inferred)]


def _read_vllm_offline_json(text, ctx):
    """`vllm bench latency --output-json` (vllm/benchmarks/latency.py: model_id, avg_latency, latencies,
    percentiles) and `vllm bench throughput --output-json` (throughput.py: model_id, elapsed_time, num_requests,
    total_num_tokens, requests_per_second, tokens_per_second): the records the console lines they print become
    (_pasted_vllm_offline), read with the paste's command line and device lines around the JSON where it has
    them. Neither file states the lengths: latency's batch, prompt and output lengths come from the command
    line (vLLM's defaults for the ones it does not set), throughput's from --input-len / --output-len (one of
    them and the file's total_num_tokens / num_requests give the other); without them, an error that says so."""
    paste = getattr(ctx, "paste", None) or text
    plines, jlines = paste.split("\n"), text.split("\n")
    out = []
    for line, o in _jsonl(text, ctx.path):
        latency = "avg_latency" in o
        if latency:
            console = f"Avg latency: {_num(ctx, line, 'avg_latency', o.get('avg_latency'), positive=True)!r} seconds"
        else:
            rps = _num(ctx, line, "requests_per_second", o.get("requests_per_second"), positive=True)
            tps = _num(ctx, line, "tokens_per_second", o.get("tokens_per_second"), required=False, minimum=0) or 0
            console = f"Throughput: {rps:.6f} requests/s, {tps:.6f} total tokens/s"
        # the paste with the JSON's lines blank and the console line it stands for at its first line: the
        # block's context (command lines, device lines, the card named around it) read as the console's
        synth = ["" if i < len(jlines) and jlines[i].strip() else ln for i, ln in enumerate(plines)]
        synth[line - 1] = console
        synth_text = "\n".join(synth)
        blocks, _ = _scan(synth_text)
        b = next(x for x in blocks if x.kind == "vllm-offline" and x.start == line)
        meta, inferred = _block_meta(b, ctx, synth_text, "\n".join(synth[:line - 1]), os.path.basename(ctx.path), [])
        out += _pasted_vllm_offline(b, ctx, meta, inferred, [], output_json=o)
    return out


def _sgl_one_batch_records(ctx, line, o, base) -> list:
    """One bench_one_batch run (`o`: batch_size, input_len, output_len, prefill_latency, median_decode_latency)
    as two records of B streams, as llama-batched-bench's: pp input_len (the B prompts from an empty cache,
    all B x input_len tokens per second) and tg output_len at depth input_len (B / the median decode step)."""
    B = _num(ctx, line, "batch_size", o.get("batch_size"), integer=True, minimum=1)
    n_in = _num(ctx, line, "input_len", o.get("input_len"), integer=True, minimum=1)
    n_out = _num(ctx, line, "output_len", o.get("output_len"), integer=True, minimum=1)
    t_pp = _num(ctx, line, "prefill_latency", o.get("prefill_latency"), positive=True)
    out = [_clean({**base, "source": ctx.source(line), "test": "pp", "n_prompt": n_in, "n_gen": 0, "n_depth": 0,
                   "n_streams": B, "pl": B, "avg_ts": B * n_in / t_pp, "seconds": t_pp})]
    t_tg = _num(ctx, line, "median_decode_latency", o.get("median_decode_latency"), required=False, positive=True)
    if t_tg is not None and n_out > 1:
        out.append(_clean({**base, "source": ctx.source(line), "test": "tg", "n_prompt": 0, "n_gen": n_out,
                           "n_depth": n_in, "n_streams": B, "pl": B, "avg_ts": B / t_tg, "seconds": t_tg}))
    return out


def _sgl_base(model, how, inferred, meta):
    base = {"evidence": "measured", "tool": "sglang bench_one_batch", "server": "sglang", "model": model,
            "stddev_ts": None}
    for k in ("device", "hardware", "n_cards", "split", "weights", "label", "command"):
        if meta.get(k) is not None:
            base[k] = meta[k]
    base["inferred"] = dict(inferred, model=how)
    return base


def _pasted_sglang_one_batch(b, ctx, meta, inferred):
    """SGLang's bench_one_batch console lines of one run (the warm-up run under `Warmup ...` is left out):
    B from its `Decode i. Batch size: B` lines, input_len from the prefill line (its throughput is input_len x B
    / latency), output_len from the total line ((input_len + output_len) x B / latency); the model and the
    card count (--tp) from its command line."""
    v = {k: val for k, (_, val) in b.serve.items()}
    line = b.start
    if v.get("phase") == "warmup":
        return []
    if "batch_size" not in v:
        _fail(ctx.path, line, "a bench_one_batch run without its `Decode 0. Batch size: B` line: the batch is not known")
    B = _num(ctx, line, "batch size", v["batch_size"], integer=True, minimum=1)
    t_pp = _num(ctx, line, "prefill latency", v["prefill_latency"], positive=True)
    n_in = round(_num(ctx, line, "prefill throughput", v["prefill_throughput"], positive=True) * t_pp / B)
    o = {"batch_size": B, "input_len": max(n_in, 1), "prefill_latency": t_pp,
         "median_decode_latency": v.get("median_decode_latency"), "output_len": 1}
    if v.get("total_latency"):
        tot = _num(ctx, line, "total throughput", v["overall_throughput"], positive=True) * \
            _num(ctx, line, "total latency", v["total_latency"], positive=True)
        o["output_len"] = max(round(tot / B) - o["input_len"], 1)
    cmd = [c for c in b.cmds if re.search(r"sglang\.bench_one_batch|sglang\.benchmark\.one_batch(?!_)", c[1])]
    names = [cmd[-1][2]["model"]] if cmd and cmd[-1][2].get("model") else []
    model, how = ctx.model_for(line, hints=[(n, f"command line's model {n!r}") for n in names] + [ctx.file_hint()],
                               what="this run served")
    _engine_weights(ctx, line, meta, inferred, names, "SGLang")
    inferred = dict(inferred, n_prompt="prefill throughput x latency / B", n_gen="total tokens / B - input_len")
    recs = _sgl_one_batch_records(ctx, line, o, _sgl_base(model, how, inferred, meta))
    for r in recs:
        _weights_fields(ctx, line, r)
    return recs


def _read_sglang_one_batch_jsonl(text, ctx):
    """SGLang's bench_one_batch --result-filename: one JSON object per run."""
    out = []
    for line, o in _jsonl(text, ctx.path):
        model, how = ctx.model_for(line, hints=[ctx.file_hint()], what="this run served")
        base = _sgl_base(model, how, {}, {})
        out += _sgl_one_batch_records(ctx, line, o, base)
    return out


def _sgl_offline_record(ctx, line, o, *, tool, model, how, inferred, meta, opts) -> dict:
    """One run of SGLang's offline throughput benchmark (`o`: its --result-filename fields): every request
    handed to the in-process engine at once (Engine.generate of the whole list; --backend runtime: a
    server it starts), timed from the call to the last token, as vLLM's `bench throughput`: one `serve`
    record, `serve_kind` throughput, `n_streams` the requests, the mean lengths from the token totals
    (random prompts are of --random-input-len scaled by --random-range-ratio, ShareGPT's of any length),
    `aggregate_tok_s` the output tokens per second of the run."""
    n = _num(ctx, line, "Successful requests", o.get("successful_requests"), integer=True, minimum=1)
    tot_in = _num(ctx, line, "Total input tokens", o.get("total_input_tokens"), integer=True, minimum=0)
    tot_out = _num(ctx, line, "Total generated tokens", o.get("total_output_tokens"), integer=True, minimum=1)
    dur = _num(ctx, line, "Benchmark duration", o.get("total_latency"), required=False, positive=True)
    rps = _num(ctx, line, "Request throughput", o.get("request_throughput"), required=False, positive=True)
    if dur is None and rps is None:
        _fail(ctx.path, line, "SGLang's offline throughput result without its duration or its request throughput")
    dur = dur if dur is not None else n / rps
    rps = rps if rps is not None else n / dur
    agg = _num(ctx, line, "Output token throughput", o.get("output_throughput"), required=False,
               positive=True) or tot_out / dur
    n_in, n_out = max(round(tot_in / n), 1), max(round(tot_out / n), 1)
    inferred = dict(inferred, model=how, n_prompt=f"the input token total / {n} requests",
                    n_gen=f"the generated token total / {n} requests", n_streams=f"the {n} successful requests")
    r = {"evidence": "measured", "test": "serve", "serve_kind": "throughput", "server": "sglang", "model": model,
         "tool": tool, "source": ctx.source(line), "stddev_ts": None, "serve_backend": o.get("backend"),
         "n_prompt": n_in, "n_gen": n_out, "n_depth": n_in, "n_streams": n, "concurrency": n, "completed": n,
         "request_throughput": rps, "duration_s": dur, "avg_ts": agg, "aggregate_tok_s": agg,
         "last_gen_tok_s": _num(ctx, line, "Last generation throughput", o.get("last_gen_throughput"),
                                required=False, minimum=0)}
    for key, field in (("max_num_seqs", "max_num_seqs"), ("max_num_batched_tokens", "max_num_batched_tokens")):
        if re.fullmatch(r"[1-9]\d*", str(opts.get(key, ""))):    # --max-running-requests, --chunked-prefill-size
            r[field] = int(opts[key])
    return _engine_record(ctx, line, r, meta, inferred)


def _pasted_sglang_offline(b, ctx, meta, inferred):
    """SGLang's offline throughput block (`python -m sglang.bench_offline_throughput`; sglang 0.5.23:
    `python -m sglang.benchmark.offline_throughput`): the block states the requests and the token totals
    itself; its command line (--model-path, --tp, --max-running-requests, --chunked-prefill-size) the model
    and the engine's limits."""
    v = {k: val for k, (_, val) in b.serve.items()}
    line = b.start
    cmds = [c for c in b.cmds if _SGL_OFFLINE_CMD.search(c[1])]
    opts = cmds[-1][2] if cmds else {}
    # the engine's logged arguments (server_args_command; after the command line, its values resolved) where the
    # command line does not set them
    logged = [c for c in b.cmds if c[1].startswith("python -m sglang.launch_server") and (not cmds or c[0] > cmds[-1][0])]
    if logged:
        opts = {**logged[-1][2], **opts}
    names = [opts["model"]] if opts.get("model") else []
    model, how = ctx.model_for(line, hints=[(x, f"command line's model {x!r}") for x in names] + [ctx.file_hint()],
                               what="this run served")
    _engine_weights(ctx, line, meta, inferred, names, "SGLang")
    return [_sgl_offline_record(ctx, line, v, tool="sglang bench_offline_throughput (console)", model=model, how=how,
                                inferred=inferred, meta=meta, opts=opts)]


def _read_sglang_offline_jsonl(text, ctx):
    """SGLang's offline throughput benchmark's --result-filename: one JSON object per run (appended)."""
    out = []
    for line, o in _jsonl(text, ctx.path):
        model, how = ctx.model_for(line, hints=[ctx.file_hint()], what="this run served")
        meta, inferred = {}, {}
        _engine_weights(ctx, line, meta, inferred, [], "SGLang", from_file=True)
        out.append(_sgl_offline_record(ctx, line, o, tool="sglang bench_offline_throughput", model=model, how=how,
                                       inferred=inferred, meta=meta, opts={}))
    return out


def _pasted_timings(b, ctx, meta, inferred, text_before, models_seen):
    """One run's timing lines: `prompt eval time = T ms / N tokens` is pp N from an empty cache (llama-cli
    starts from one; a server's prompt may follow a cached prefix it does not print: said in a notice), and
    `eval time = T ms / M runs` the M generated tokens after it, tg M at depth N (the first step reads the
    N prompt tokens' cache). A lone eval line has no depth: left out with a notice."""
    model, how = _table_model(b, ctx, text_before, models_seen)
    meta = dict(meta, model=model)
    inferred = dict(inferred, model=how)
    if "flash_attn" not in meta and b.build and b.build[1] < FA_AUTO_BUILD:
        meta["flash_attn"] = 0
        inferred["flash_attn"] = (f"0: not on the command line, and build {b.build[1]} predates -fa auto "
                                  f"(builds before {FA_AUTO_BUILD}: off by default)")
    meta["inferred"] = inferred
    pp, tg = b.timing.get("pp"), b.timing.get("tg")
    prefix = (pp or tg)[3]
    cmdline = b.cmd[1] if b.cmd else ""
    server = "llama-server" in cmdline or ("llama-cli" not in cmdline
                                            and not re.search(r"llama_(?:perf_context_print|print_timings)", prefix))
    tool = "llama-server (timings)" if server else "llama-cli (timings)"
    hdr = {k: meta.get(k) for k in ("n_batch", "n_ubatch", "n_gpu_layers", "n_threads")}
    base = _bench_common(ctx, b.start, hdr, tool, "this run measured", meta)
    out = []

    def rate(entry, what):
        line, ms, n, _ = entry
        if n <= 0 or ms <= 0:
            ctx.notice(line, f"{what}: {n} tokens in {ms:g} ms is no speed: left out")
            return None
        return line, n, ms / 1e3, n / (ms / 1e3)
    depth = 0
    if b.cached:    # llama-server kept the first N prompt tokens from the slot's cache: its prompt eval is the rest
        depth = b.cached[1]
        base = dict(base, inferred=dict(base.get("inferred") or {}, depth=(
            f"{depth}: the prompt tokens the server kept from its cache ('{b.cached[2]}', line {b.cached[0]})")))
    if pp:
        got = rate(pp, "prompt eval")
        if got:
            line, n, sec, ts = got
            if server and not b.cached:
                ctx.notice(line, "prompt eval: taken as from an empty cache (a server's prompt may follow a "
                                 "cached prefix, which its timing line does not count)")
            out.append(_clean({**base, "source": ctx.source(line), "test": "pp", "n_prompt": n, "n_gen": 0,
                               "n_depth": depth, "n_streams": 1, "avg_ts": ts, "seconds": sec}))
    if b.alongside:     # another slot's task ran in the same decode steps: no one stream's speed
        ctx.notice((pp or tg)[0], f"timings of a request that ran alongside task{'s' * (len(b.alongside) > 1)} "
                                  f"{', '.join(b.alongside)} on other slots (-np): its speeds share the GPU's steps "
                                  "with them, not one stream's; left out")
        return []
    draft = b.draft or ((b.cmd[0], "a draft model on the command line") if _DRAFT_OPT.search(cmdline) else None)
    if tg and draft:
        ctx.notice(tg[0], f"eval time: speculative decoding ({draft[1]}, line {draft[0]}): its speed counts the "
                          "draft tokens each step accepted, which the cost model does not price; left out")
    elif tg and not (pp and pp[2] > 0):
        ctx.notice(tg[0], "eval time without a prompt eval line of its own (or of 0 tokens): the depth it ran at "
                          "is not known; left out")
    elif tg:
        got = rate(tg, "eval")
        if got:
            line, n, sec, ts = got
            out.append(_clean({**base, "source": ctx.source(line), "test": "tg", "n_prompt": 0, "n_gen": n,
                               "n_depth": depth + pp[2], "n_streams": 1, "avg_ts": ts, "seconds": sec}))
    return out


def go_duration(text: str) -> float | None:
    """Seconds of a Go duration as Ollama prints it ("1m2.345s", "160.2ms", "523.4µs", "2h0m1s"), or None."""
    t = str(text).strip().replace("μ", "µ")
    parts = re.findall(r"(\d+(?:\.\d+)?)(h|ms|µs|us|ns|m|s)", t)
    if not parts or "".join(a + u for a, u in parts) != t:
        return None
    scale = {"h": 3600.0, "m": 60.0, "s": 1.0, "ms": 1e-3, "µs": 1e-6, "us": 1e-6, "ns": 1e-9}
    return sum(float(a) * scale[u] for a, u in parts)


# KoboldCpp's library per backend (its `Backend:` line: koboldcpp_cublas.so / .dll, ...) -> llama.cpp's backend
_KOBOLD_BACKENDS = (("cublas", "CUDA"), ("vulkan", "Vulkan"), ("hipblas", "ROCm"), ("clblast", "OpenCL"),
                    ("default", "CPU"), ("noavx2", "CPU"), ("failsafe", "CPU"))
_KOBOLD_KV_TYPES = {"0": "f16", "1": "q8_0", "2": "q4_0"}   # its --quantkv


def _pasted_kobold(b, ctx, meta, inferred, models_seen):
    """KoboldCpp's `--benchmark` block: it fills the context, a prompt of MaxCtx - GenAmount tokens from an
    empty cache (ProcessingSpeed: pp N @ 0) and then GenAmount tokens after it (GenerationSpeed: tg M @ d N),
    as koboldcpp.py computes them (speed = tokens / time). KoboldCpp runs llama.cpp's kernels: the backend
    from its library name (`Backend: koboldcpp_cublas.so` is CUDA), flash attention, the batch size and the
    KV cache type from its `Flags:` line, the GPU layers from `Layers:`, the model and its weights from the
    `Model:` line (the file name without .gguf)."""
    v = {k: val for k, (_, val) in b.serve.items()}
    where = {k: ln for k, (ln, _) in b.serve.items()}
    line = b.start

    names = {k.lower(): k for k in ("MaxCtx", "GenAmount", "ProcessingTime", "ProcessingSpeed", "GenerationSpeed")}

    def num(key, integer=False):
        if key not in v:
            _fail(ctx.path, line, f"KoboldCpp's benchmark block has no `{names[key]}:` line")
        t = re.sub(r"(?<=\d)\s*(?:T/s|s)$", "", v[key])      # "1303.06T/s", "6.210s"
        return _num(ctx, where[key], names[key], t, integer=integer, minimum=0)
    maxctx, gen = num("maxctx", True), num("genamount", True)
    n = maxctx - gen
    if n <= 0:
        _fail(ctx.path, where["maxctx"], f"MaxCtx {maxctx} leaves no prompt before GenAmount {gen}")
    pp_ts, tg_ts = num("processingspeed"), num("generationspeed")
    if "processingtime" in v:   # koboldcpp.py: ProcessingSpeed = (MaxCtx - GenAmount) / ProcessingTime
        t = num("processingtime")
        if t > 0 and abs(t * pp_ts / n - 1) > 0.02:
            ctx.notice(where["processingtime"], f"ProcessingTime x ProcessingSpeed = {t * pp_ts:.0f} tokens, not "
                                                f"MaxCtx - GenAmount = {n}: the prompt taken as {n} tokens")
    mname = v.get("model", "")
    hints = ([(mname, f"benchmark's Model: line {mname!r}")] if mname else []) + \
        ([(models_seen[0], "file's other block")] if len(models_seen) == 1 else []) + [ctx.file_hint()]
    model, how = ctx.model_for(where.get("model", line), hints=hints, what="this KoboldCpp benchmark measured")
    meta = dict(meta, model=model)
    inferred = dict(inferred, model=how)
    lib = v.get("backend", "").lower()
    be = next((name for key, name in _KOBOLD_BACKENDS if key in lib), None)
    if be:      # the library it loaded decides (a Vulkan build prints no CUDA device lines, and vice versa)
        meta["backend"] = meta["backends"] = be
        inferred["backend"] = f"{be} (KoboldCpp's library {v['backend']!r})"
    flags = dict(re.findall(r"(\w+)=(\[[^\]]*\]|\S+)", v.get("flags", "")))
    hdr = {}
    if flags.get("FlashAttention") in ("True", "False"):
        hdr["flash_attn"] = flags["FlashAttention"] == "True"
    if re.fullmatch(r"\d+", flags.get("BlasBatchSize", "")):   # its n_batch and n_ubatch
        hdr["n_batch"] = hdr["n_ubatch"] = int(flags["BlasBatchSize"])
    if re.fullmatch(r"-?\d+", flags.get("Threads", "")):
        hdr["n_threads"] = int(flags["Threads"])
    kvt = _KOBOLD_KV_TYPES.get(flags.get("KvCache", "0"))
    if kvt is None:
        ctx.notice(line, f"KvCache={flags['KvCache']}: not a cache type KoboldCpp names (0 f16, 1 q8_0, 2 q4_0); "
                         "taken as f16")
        kvt = "f16"
    meta.setdefault("type_k", kvt)
    meta.setdefault("type_v", kvt)
    if re.fullmatch(r"\d+", v.get("layers", "")):   # --gpulayers (-1: its automatic guess, not known here)
        hdr["n_gpu_layers"] = int(v["layers"])
    meta["inferred"] = inferred
    tool = f"koboldcpp --benchmark (v{v['version']})" if "version" in v and not v["version"].startswith("?") \
        else "koboldcpp --benchmark"
    base = _bench_common(ctx, line, hdr, tool, "this KoboldCpp benchmark measured", meta)
    out = [_clean({**base, "source": ctx.source(where["processingspeed"]), "test": "pp", "n_prompt": n, "n_gen": 0,
                   "n_depth": 0, "n_streams": 1, "avg_ts": pp_ts}),
           _clean({**base, "source": ctx.source(where["generationspeed"]), "test": "tg", "n_prompt": 0, "n_gen": gen,
                   "n_depth": n, "n_streams": 1, "avg_ts": tg_ts})]
    return [r for r in out if r["avg_ts"] > 0]


KOBOLD_CSV_COLUMNS = ("Backend", "Layers", "Model", "MaxCtx", "GenAmount", "ProcessingSpeed", "GenerationSpeed")


def _read_kobold_csv(text, ctx):
    """KoboldCpp's `--benchmark FILE.csv`: one row per run, the fields of its printed block (the Flags last,
    its values joined by spaces); each row read as that block (_pasted_kobold), the card from the text or the
    file name as for a pasted block."""
    rd = csv.reader(io.StringIO(text))
    rows = [(rd.line_num, cells) for cells in rd]
    rows = [(i, cells) for i, cells in rows if any(c.strip() for c in cells)]     # blank lines left out
    head = [c.strip() for c in rows[0][1]]
    out, models_seen = [], []
    for i, cells in rows[1:]:
        if [c.strip() for c in cells] == head:      # the header again (two files pasted one after the other)
            continue
        if len(cells) < len(head):
            _fail(ctx.path, i, f"a row of {len(cells)} fields, the header has {len(head)}")
        b = _Block("kobold", i)
        vals = dict(zip(head, cells))
        if head[-2:] == ["Output", "Flags"]:
            # koboldcpp.py writes both unquoted: the generated text and the flags (Cublas_Args=['normal', '0',
            # 'mmq']) may hold commas. The columns before them by position; the flags from the first field
            # after the output's first that reads `Name=value`
            k = len(head) - 2
            j = next((x for x in range(k + 1, len(cells)) if re.match(r"\s*\w+=", cells[x])), len(cells) - 1)
            vals["Output"], vals["Flags"] = ",".join(cells[k:j]), ",".join(cells[j:])
        b.serve = {k.lower(): (i, str(v).strip()) for k, v in vals.items()}
        b.serve["version"] = (i, "? (its CSV does not say)")
        meta, inferred = _block_meta(b, ctx, text, "", os.path.basename(ctx.path), [])
        recs = _pasted_kobold(b, ctx, meta, inferred, models_seen)
        for r in recs:
            if r.get("model") and r["model"] not in models_seen:
                models_seen.append(r["model"])
        out += recs
    return out


def _pasted_ollama(b, ctx, meta, inferred, text, models_seen):
    """`ollama run MODEL --verbose`: prompt eval count N in prompt eval duration is pp N (from an empty
    cache: an earlier turn of the same session stays cached, which Ollama does not count; said in a
    notice), eval count M in eval duration tg M at depth N. Ollama runs llama.cpp's kernels (its `llama`
    runner; the runtime model llama.cpp prices them). The model from the `ollama run` tag ("qwen3:30b-a3b"),
    the text, the file name; its weights from the tag ("...-q8_0"), else Ollama's default tag
    quantization, Q4_K_M (MXFP4 for gpt-oss), assumed and said."""
    v = {k: val for k, (_, val) in b.serve.items()}
    line = b.start
    tags = []
    for _, t in b.before + [(0, c[1]) for c in b.cmds]:
        for m in _OLLAMA_RUN.finditer(t):
            if m.group(1) not in tags:
                tags.append(m.group(1))
    if not tags:
        tags = list(dict.fromkeys(m.group(1) for m in _OLLAMA_RUN.finditer(text)))
    hints = ([(tg.replace(":", " "), f"ollama tag {tg!r}") for tg in tags]
             + ([(models_seen[0], "file's other block")] if len(models_seen) == 1 else []) + [ctx.file_hint()])
    model, how = ctx.model_for(line, hints=hints, what="this Ollama run measured")
    meta = dict(meta, model=model)
    inferred = dict(inferred, model=how)
    # the weights: the tag's quantization ("llama3.1:8b-instruct-q8_0"), else what the text or file name
    # says (_block_meta), else Ollama's default for a tag that names none
    w = next((q for q in (quant_name(x) for tg in tags for x in _QUANT_RE.findall(tg.split(":", 1)[-1])) if q), None)
    if w:
        meta["weights"], inferred["weights"] = w, f"{w} (from the ollama tag)"
    elif "weights" not in meta:
        w = "MXFP4_MOE" if model and str(model).startswith("gpt-oss") else "Q4_K_M"
        meta["weights"] = w
        inferred["weights"] = f"{w} (Ollama's default tag quantization, assumed: the tag names none)"
        ctx.notice(line, f"weights: {w} assumed (Ollama's default tags; a tag such as ':8b-instruct-q8_0' names one)")
    meta["inferred"] = inferred
    base = _bench_common(ctx, line, {}, "ollama run --verbose", "this Ollama run measured", meta)
    out = []

    def pair(kc, kd, what):
        if kc not in v or kd not in v:
            return None
        cl = b.serve[kc][0]
        m = re.match(r"^(\d+)\s*tokens?(?:\(s\))?$", v[kc])
        if not m:
            _fail(ctx.path, cl, f"`{kc}`: expected a count such as '512 token(s)', got {v[kc]!r}")
        sec = go_duration(v[kd])
        if sec is None:
            _fail(ctx.path, b.serve[kd][0], f"`{kd}`: expected a Go duration such as '160.2ms' or '2.05s', got {v[kd]!r}")
        n = int(m.group(1))
        if n <= 0 or sec <= 0:
            ctx.notice(cl, f"{what}: {n} tokens in {sec:g} s is no speed: left out")
            return None
        return cl, n, sec
    pp = pair("prompt eval count", "prompt eval duration", "prompt eval")
    if pp:
        cl, n, sec = pp
        ctx.notice(cl, "prompt eval: taken as from an empty cache (Ollama keeps a session's earlier turns cached "
                       "and counts only the new tokens)")
        out.append(_clean({**base, "source": ctx.source(cl), "test": "pp", "n_prompt": n, "n_gen": 0, "n_depth": 0,
                           "n_streams": 1, "avg_ts": n / sec, "seconds": sec}))
    tg = pair("eval count", "eval duration", "eval")
    if tg and pp:
        cl, n, sec = tg
        out.append(_clean({**base, "source": ctx.source(cl), "test": "tg", "n_prompt": 0, "n_gen": n,
                           "n_depth": pp[1], "n_streams": 1, "avg_ts": n / sec, "seconds": sec}))
    elif tg:
        ctx.notice(tg[0], "eval without a prompt eval of its own: the depth it ran at is not known; left out")
    return out


# ---- sweep-bench and batched-bench ----------------------------------------------------------------
def _main_line(text) -> dict:
    """The `main: n_kv_max = 16896, n_batch = 2048, ...` line of sweep- and batched-bench (2026 builds
    print the function's name instead of `main`)."""
    m = re.search(r"^\s*[\w.:-]+: (n_kv_max = .*)$", text, re.M)
    out = {}
    if m:
        for part in m.group(1).split(","):
            k, _, v = part.partition("=")
            k, v = k.strip(), v.strip()
            if k:
                out[k] = int(v) if re.fullmatch(r"-?\d+", v) else v
    return out


def _bench_common(ctx, line, hdr, tool, what, meta=None):
    fa = hdr.get("flash_attn", hdr.get("flash_attn_type"))
    if meta is not None and "model" in meta:
        model, inferred = meta["model"], dict(meta.get("inferred") or {})
    else:
        # sweep- / batched-bench's jsonl among other text (_bench_json_among_text): that text's one model name
        hints = [ctx.prose_hint] if getattr(ctx, "prose_hint", None) else ()
        model, how = ctx.model_for(line, hints=hints, what=what)
        inferred = {"model": how}
    r = {"evidence": "measured", "model": model, "tool": tool, "source": ctx.source(line),
         "n_batch": hdr.get("n_batch"), "n_ubatch": hdr.get("n_ubatch"), "flash_attn": _flag(fa),
         "n_gpu_layers": hdr.get("n_gpu_layers"), "n_threads": hdr.get("n_threads"), "n_kv_max": hdr.get("n_kv_max")}
    _apply_meta(r, meta, inferred)
    _weights_fields(ctx, line, r)
    return r


def _sweep_records(ctx, line, hdr, tool, pp, tg, n_kv, t_pp, s_pp, t_tg, s_tg, extra=None, meta=None):
    base = _bench_common(ctx, line, hdr, tool, "a sweep-bench table measured (it names none)", meta)
    pp = _num(ctx, line, "PP", pp, integer=True, minimum=0)
    tg = _num(ctx, line, "TG", tg, integer=True, minimum=0)
    n_kv = _num(ctx, line, "N_KV", n_kv, integer=True, minimum=0)
    out = []
    if pp:
        out.append(_clean({**base, "test": "pp", "n_prompt": pp, "n_gen": 0, "n_depth": n_kv, "n_streams": 1,
                           "avg_ts": _speed(ctx, line, "S_PP t/s", s_pp),
                           "seconds": _num(ctx, line, "T_PP s", t_pp, required=False, minimum=0), **(extra or {})}))
    if tg:
        out.append(_clean({**base, "test": "tg", "n_prompt": 0, "n_gen": tg, "n_depth": n_kv, "n_streams": 1,
                           "avg_ts": _speed(ctx, line, "S_TG t/s", s_tg),
                           "seconds": _num(ctx, line, "T_TG s", t_tg, required=False, minimum=0), **(extra or {})}))
    if not out:
        _fail(ctx.path, line, "a row with PP = TG = 0")
    return out


def _sweep_tool(hdr):
    return "llama-sweep-bench (mainline port)" if "flash_attn_type" in hdr else "llama-sweep-bench (ik_llama.cpp)"


def _read_sweep_jsonl(text, ctx):
    out = []
    for line, o in _jsonl(text, ctx.path):
        out += _sweep_records(ctx, line, o, _sweep_tool(o), o.get("pp"), o.get("tg"), o.get("n_kv"), o.get("t_pp"),
                              o.get("speed_pp"), o.get("t_tg"), o.get("speed_tg"))
    return out


def _batched_records(ctx, line, hdr, pp, tg, b, n_kv, t_pp, s_pp, t_tg, s_tg, meta=None, tg_how=None):
    base = _bench_common(ctx, line, hdr, "llama-batched-bench", "a batched-bench table measured (it names none)", meta)
    pp = _num(ctx, line, "PP", pp, integer=True, minimum=0)
    tg = _num(ctx, line, "TG", tg, integer=True, minimum=0)
    b = _num(ctx, line, "B", b, integer=True, minimum=1)
    _num(ctx, line, "N_KV", n_kv, integer=True, minimum=0)
    shared = bool(hdr.get("is_pp_shared"))
    separate = bool(hdr.get("is_tg_separate"))
    out = []
    # each of the B sequences ingests PP tokens into an empty cache (with -pps: one prompt shared),
    # then generates TG tokens from depth PP; S_PP and S_TG are over all sequences. With -tgs
    # (is_tg_separate = 1) the sequences generate one after another, one token a step: one stream
    if pp:
        out.append(_clean({**base, "test": "pp", "n_prompt": pp, "n_gen": 0, "n_depth": 0,
                           "n_streams": 1 if shared else b, "pl": b, "avg_ts": _speed(ctx, line, "S_PP t/s", s_pp),
                           "seconds": _num(ctx, line, "T_PP s", t_pp, required=False, minimum=0)}))
    if tg:
        out.append(_clean({**base, "test": "tg", "n_prompt": 0, "n_gen": tg, "n_depth": pp, "n_streams": 1 if separate else b,
                           "pl": b,
                           "avg_ts": _speed(ctx, line, "S_TG t/s", s_tg),
                           "seconds": _num(ctx, line, "T_TG s", t_tg, required=False, minimum=0)}))
        if tg_how and b > 1:
            out[-1]["inferred"] = dict(out[-1].get("inferred") or {}, n_streams=tg_how)
    if not out:
        _fail(ctx.path, line, "a row with PP = TG = 0")
    return out


def paste_commands(text: str | None) -> list[tuple[int, str, dict]]:
    """(line, the command as one line, its options: _command_args) of every benchmark or server command line of
    `text` (a paste's prose around a JSON result), a command continued over lines (" \\") joined."""
    lines = _unquote(text or "")
    out = []
    for i, ln in enumerate(lines):
        if _CMD_RE.search(ln) or _RUN_CMD_RE.search(ln):
            full, j = ln, i
            while re.search(r"\s[\\^`]\s*$", full) and j + 1 < len(lines) and lines[j + 1].strip():
                j += 1
                full = re.sub(r"\s[\\^`]\s*$", " ", full) + lines[j].strip()
            out.append((i + 1, " ".join(full.split()), _command_args(full, {})))
    return out


_BATCHED_CMD = re.compile(r"(?:^|[\s/\\])(?:llama-)?batched-bench(?:\.exe)?(?=\s|$)")


def _tg_separate(ctx, line) -> tuple[bool, str | None]:
    """(is_tg_separate, how it was told) for llama-batched-bench's `--output-format jsonl`, whose objects carry
    is_pp_shared but not is_tg_separate (tools/batched-bench/batched-bench.cpp): the paste's batched-bench command
    line (-tgs on it or not), else shared decoding (its default) with the assumption said."""
    cmds = [c for c in paste_commands(getattr(ctx, "paste", None)) if _BATCHED_CMD.search(c[1])]
    if cmds:
        cl, ctext, _ = cmds[-1]
        if re.search(r"(?:^|\s)-tgs(?=\s|$)", ctext):
            return True, f"one stream at a time (-tgs on the command line, line {cl})"
        return False, f"B streams decoded together (no -tgs on the command line, line {cl})"
    ctx.notice(line, "batched-bench jsonl: its objects do not say whether -tgs (decoding one sequence after another) "
                     "was given and the paste holds no command line: shared decoding (B streams a step) assumed")
    return False, ("B streams decoded together: assumed (the jsonl carries no is_tg_separate and the paste no command "
                   "line; -tgs would make it one stream)")


def _read_batched_jsonl(text, ctx):
    out = []
    for line, o in _jsonl(text, ctx.path):
        hdr, tg_how = o, None
        if "is_tg_separate" not in o:
            sep, tg_how = _tg_separate(ctx, line)
            hdr = dict(o, is_tg_separate=int(sep))
        out += _batched_records(ctx, line, hdr, o.get("pp"), o.get("tg"), o.get("pl"), o.get("n_kv"), o.get("t_pp"),
                                o.get("speed_pp"), o.get("t_tg"), o.get("speed_tg"), tg_how=tg_how)
    return out


# ---- serving benchmarks ----------------------------------------------------------------------------
# a serving benchmark's server, by its command line: llama.cpp's (or ik_llama.cpp's) llama-server, vLLM's, SGLang's
_SERVER_CMDS = ((re.compile(r"ik_llama[^\s]*[\\/](?:\S*[\\/])?llama-server(?:\.exe)?(?:\s|$)"), "ik_llama.cpp"),
                (re.compile(r"(?:^|[\s\\/])llama-server(?:\.exe)?(?:\s|$)"), "llama.cpp"),
                (re.compile(r"(?:^|\s)vllm\s+serve\s|vllm\.entrypoints\.openai"), "vllm"),
                (re.compile(r"sglang\.launch_server|(?:^|\s)sglang\s+serve\s"), "sglang"))


def _serving_tp(b) -> str:
    """Why a serving run on several cards is a tensor split: the engine's tensor parallelism (--tp), named
    after the engine whose command lines the paste holds (SGLang's where one is sglang's, else vLLM's)."""
    sglang = any("sglang" in text for _, text, _ in b.cmds)
    return f"tensor ({'SGLang' if sglang else 'vLLM'}'s tensor parallelism)"


def server_of(cmds) -> tuple[str, str, dict] | None:
    """(runtime, how, the command line's options) of the server a paste's command lines start
    (`_Block.cmds`: (line, text, options)), the last one started before the block; None where none is."""
    for ln, text, opts in reversed(list(cmds)):
        for rx, rt in _SERVER_CMDS:
            if rx.search(text):
                return rt, f"{rt} (the server's command line, line {ln})", opts
    return None


# a serving benchmark's backends that send no generation request: SGLang's sglang-embedding / vllm-embedding
# (sglang/benchmark/serving.py _EMBEDDING_BACKENDS), vLLM's openai-embeddings*, infinity-embeddings*, vllm-pooling,
# vllm-rerank (vllm/benchmarks/lib/endpoint_request_func.py POOLING_BACKENDS)
_NO_GENERATION_BACKEND = re.compile(r"embedding|pooling|rerank", re.I)


def _no_generation_check(ctx, line, o, backend=None, out_tok_s_key="output_throughput"):
    """A FormatError for a serving run that generated nothing (an embedding / pooling run: its requests are only
    read, so the block has no generated tokens, no output throughput, TTFT or TPOT): there is no decode speed in
    it, which is what a glmbench serving record holds."""
    backend = str(o.get("backend") or backend or "")
    gen, thr = o.get("total_output_tokens"), o.get(out_tok_s_key)
    nothing = all(v is None or (isinstance(v, (int, float)) and not isinstance(v, bool) and v == 0) for v in (gen, thr))
    if not (_NO_GENERATION_BACKEND.search(backend) or nothing):
        return
    what = (f"an embedding (no-generation) run (backend {backend!r})" if _NO_GENERATION_BACKEND.search(backend)
            else "a run that generated no tokens (an embedding / no-generation run: no generated tokens and no "
                 "output token throughput)")
    _fail(ctx.path, line, f"{what}: its requests are only read (prefill), so there is no decode speed to import; "
                          "glmbench's serving records are generation runs (output tokens/s)")


def _speculative(o) -> str | None:
    """What says a serving run decoded speculatively (a draft model, EAGLE, MTP, n-gram): vLLM's spec_decode_*
    fields (vllm/benchmarks/serve.py, from the server's /metrics) or SGLang's accept_length (null without)."""
    said = [f"{k} {v:g}" if isinstance(v, (int, float)) else f"{k} {v}" for k, v in o.items() if (k.startswith("spec_decode_") or k == "accept_length")
            and isinstance(v, (int, float, str)) and not isinstance(v, bool) and str(v).strip() not in ("", "0", "0.0")]
    return ", ".join(said[:2]) or None


def _serve_record(ctx, line, o, *, tool, model_name, model_field="model_id", n_cards=None, type_k=None,
                  out_tok_s_key="output_throughput", resolved=None):
    """A serving run's record; None, with a notice, for a run that decoded speculatively: its TPOT and output
    throughput count the draft tokens each step accepted, which the cost model does not price."""
    spec = _speculative(o)
    if spec:
        ctx.notice(line, f"speculative decoding ({spec}): its TPOT and output throughput count the draft tokens "
                         "each step accepted, which the cost model does not price; the run is left out")
        return None
    completed = _num(ctx, line, "completed", o.get("completed"), integer=True, minimum=0)
    if not completed:
        _fail(ctx.path, line, "no request completed (`completed` is 0): no speed")
    _no_generation_check(ctx, line, o, out_tok_s_key=out_tok_s_key)
    agg = _speed(ctx, line, out_tok_s_key, o.get(out_tok_s_key))
    conc = o.get("max_concurrency")
    if isinstance(conc, str) and conc.strip().lower() in ("not set", "none", "null", "unlimited", "inf"):
        conc = None         # SGLang's console prints "not set" where --max-concurrency is not given
    conc = _num(ctx, line, "max_concurrency", conc, integer=True, minimum=1) if conc not in (None, "") else None
    n_in = _num(ctx, line, "total_input_tokens", o.get("total_input_tokens"), minimum=0)
    n_out = _num(ctx, line, "total_output_tokens", o.get("total_output_tokens"), minimum=0)
    tpot = _num(ctx, line, "mean_tpot_ms", o.get("mean_tpot_ms"), required=False, minimum=0)
    ttft = _num(ctx, line, "mean_ttft_ms", o.get("mean_ttft_ms"), required=False, minimum=0)
    rate = o.get("request_rate")
    if o.get("ramp_up_strategy"):   # vLLM's --ramp-up-strategy: the rate rises over the run, no one rate
        rate = "ramp-up"
    if isinstance(rate, float) and not math.isfinite(rate):
        rate = "inf"
    elif isinstance(rate, str):     # "inf", SGLang's "trace" (arrivals at a trace's timestamps), "ramp-up"
        rate = rate.strip().lower()
        if rate not in ("inf", "trace", "ramp-up"):
            rate = _num(ctx, line, "request_rate", rate, positive=True)
    prompt = round(n_in / completed)
    # the model as the result names it (a field of it, not the file's name: the how says which field)
    model, how = resolved or ctx.model_for(line, hints=[(model_name, f"{model_field} {model_name!r}")] if model_name
                                           else [], what="this run served")
    # unlimited concurrency: every request may be in flight at once (the benchmark's num_prompts)
    streams = conc if conc is not None else (o.get("num_prompts") or completed)
    r = {"evidence": "measured", "test": "serve",
         "model": None,
         "tool": tool, "source": ctx.source(line), "serve_backend": o.get("backend"), "n_cards": n_cards,
         "type_k": type_k, "type_v": type_k,
         # the context a stream holds when it starts generating: its mean prompt
         "n_prompt": prompt, "n_gen": round(n_out / completed), "n_depth": prompt,
         "n_streams": streams, "concurrency": streams, "max_concurrency": conc, "request_rate": rate,
         "burstiness": _num(ctx, line, "burstiness", o.get("burstiness"), required=False, positive=True),
         "avg_ts": agg, "stddev_ts": None, "aggregate_tok_s": agg,
         "per_stream_tok_s": 1000.0 / tpot if tpot else None, "ttft_s": ttft / 1000.0 if ttft is not None else None,
         "tpot_s": tpot / 1000.0 if tpot is not None else None, "completed": completed,
         "request_throughput": o.get("request_throughput"), "duration_s": o.get("duration"),
         "ramp_up_strategy": o.get("ramp_up_strategy"), "ramp_up_start_rps": o.get("ramp_up_start_rps"),
         "ramp_up_end_rps": o.get("ramp_up_end_rps")}
    r["model"], r["inferred"] = model, {"model": how}
    return _clean(r)


def _read_vllm(text, ctx):
    out = []
    for line, o in _jsonl(text, ctx.path):
        if "model_id" not in o:
            _fail(ctx.path, line, "not a vllm bench serve result (no `model_id`)")
        r = _serve_record(ctx, line, o, tool="vllm bench serve", model_name=o.get("model_id"))
        if r is None:
            continue
        w = checkpoint_quant(o.get("model_id"))
        if w:   # "Qwen/Qwen2.5-32B-Instruct-AWQ"
            r["weights"] = w
            r["inferred"]["weights"] = f"{w} (from the model_id {o['model_id']!r})"
        if o.get("date"):
            r["date"] = o["date"]
        out.append(r)
    return out


def _is_server_timings(o) -> bool:
    t = o.get("timings") if isinstance(o, dict) else None
    return isinstance(t, dict) and {"prompt_n", "prompt_ms", "predicted_n", "predicted_ms"} <= set(t)


def _read_server_json(text, ctx):
    """llama-server's response (`/completion`, `/v1/chat/completions`; tools/server: `result_timings`): its
    `timings` say prompt_n tokens ingested in prompt_ms on top of cache_n reused from the cache (pp
    prompt_n @ d cache_n; a response without cache_n, before 2025, taken as from an empty cache with a
    notice), then predicted_n tokens in predicted_ms (tg predicted_n @ d cache_n + prompt_n). The model
    from the response's `model` (a path or alias), `generation_settings.model`, the file name; the card
    from the file name or a sidecar: a response does not name it."""
    out = []
    for line, o in _jsonl(text, ctx.path):
        if not _is_server_timings(o):
            _fail(ctx.path, line, "not a llama-server response (no `timings` with prompt_n, prompt_ms, predicted_n, "
                                  "predicted_ms)")
        t = o["timings"]
        gs = o.get("generation_settings") if isinstance(o.get("generation_settings"), dict) else {}
        names = [str(v) for v in (o.get("model"), gs.get("model")) if isinstance(v, str) and v]
        model, how = ctx.model_for(line, hints=[(n, f"response's model {_stem(n)!r}") for n in names] + [ctx.file_hint()],
                                   what="this response's server ran")
        inferred = {"model": how}
        r = {"evidence": "measured", "model": model, "tool": "llama-server (response timings)",
             "source": ctx.source(line), "n_streams": 1}
        found = gpus_in(os.path.basename(ctx.path))
        if found:
            dev = _short_gpu(found[0][0])
            n = found[0][1] or 1
            r.update(device=dev, hardware=_hardware_key(dev), n_cards=n, split="none" if n == 1 else "layer")
            inferred["card"] = f"{r['hardware'] or dev} x{n} (from the file name)"
        else:
            ctx.notice(line, "card: a response does not name it (a sidecar's GPU line or the file name does)")
        w = gguf_quant(next((q for q in map(_quant_from_filename, names) if q), None)
                       or _quant_from_filename(os.path.basename(ctx.path)))
        if w:
            r["weights"] = w
            inferred["weights"] = f"{w} (from the model name)"
        r["inferred"] = inferred
        _weights_fields(ctx, line, r)
        cache = t.get("cache_n")
        if cache is None:
            ctx.notice(line, "timings without cache_n (a server before 2025): the prompt taken as from an empty cache")
            cache = 0
        cache = _num(ctx, line, "timings.cache_n", cache, integer=True, minimum=0)
        n_p = _num(ctx, line, "timings.prompt_n", t.get("prompt_n"), integer=True, minimum=0)
        n_g = _num(ctx, line, "timings.predicted_n", t.get("predicted_n"), integer=True, minimum=0)
        ms_p = _num(ctx, line, "timings.prompt_ms", t.get("prompt_ms"), minimum=0)
        ms_g = _num(ctx, line, "timings.predicted_ms", t.get("predicted_ms"), minimum=0)
        if n_p and ms_p:
            out.append(_clean({**r, "test": "pp", "n_prompt": n_p, "n_gen": 0, "n_depth": cache,
                               "avg_ts": n_p / (ms_p / 1e3), "seconds": ms_p / 1e3}))
        if n_g and ms_g and t.get("draft_n"):   # a draft model ran (speculative decoding): see _pasted_timings
            ctx.notice(line, f"timings.predicted_ms: speculative decoding (draft_n {t['draft_n']}, draft_n_accepted "
                             f"{t.get('draft_n_accepted')}): its speed counts the draft tokens each step accepted, "
                             "which the cost model does not price; left out")
        elif n_g and ms_g:
            out.append(_clean({**r, "test": "tg", "n_prompt": 0, "n_gen": n_g, "n_depth": cache + n_p,
                               "avg_ts": n_g / (ms_g / 1e3), "seconds": ms_g / 1e3}))
    return out


def _read_sglang(text, ctx):
    out = []
    for line, o in _jsonl(text, ctx.path):
        si = o.get("server_info") if isinstance(o.get("server_info"), dict) else {}
        field = next((f for f, v in (("server_info's model_path", si.get("model_path")), ("model", o.get("model")),
                                     ("model_id", o.get("model_id"))) if v), None)
        name = si.get("model_path") or o.get("model") or o.get("model_id")
        tp = si.get("tp_size")
        r = _serve_record(ctx, line, o, tool="sglang bench_serving", model_name=name, model_field=field,
                          n_cards=tp if isinstance(tp, int) and tp > 0 else None,
                          type_k=_kv_name(si.get("kv_cache_dtype")))
        if r is None:
            continue
        if o.get("tag"):
            r["tag"] = o["tag"]
        # the server's batch limits as it reports them (max_running_requests, chunked_prefill_size)
        for key, field in (("max_running_requests", "max_num_seqs"), ("chunked_prefill_size", "max_num_batched_tokens")):
            v = si.get(key)
            if isinstance(v, int) and not isinstance(v, bool) and v > 0:
                r[field] = v
        out.append(r)
    return out


# ---- text helpers ---------------------------------------------------------------------------------
def _json_or_fail(s, path, line0=1):
    try:
        return json.loads(s)
    except json.JSONDecodeError as e:
        _fail(path, e.lineno + line0 - 1, f"not valid JSON ({e.msg})")


def _first_object(s, path, line0):
    try:
        obj, _ = json.JSONDecoder().raw_decode(s)
    except json.JSONDecodeError as e:
        _fail(path, e.lineno + line0 - 1, f"not valid JSON ({e.msg})")
    if not isinstance(obj, dict):
        _fail(path, line0, "not a JSON object")
    return obj


def _first_list(s: str) -> tuple:
    """(the JSON value `s` starts with, the index after it), or (None, None) where it starts with none."""
    try:
        return json.JSONDecoder().raw_decode(s)
    except json.JSONDecodeError:
        return None, None


def _another_list_follows(s: str, first=None, end=None) -> bool:
    """`s` starts with a JSON list of llama-bench's records and another list starts after it (its -o json array
    pasted twice, or two runs' arrays). `first`, `end`: _first_list(s), where decoded already."""
    if end is None:
        first, end = _first_list(s)
        if end is None:
            return False
    objs = [o for o in first if isinstance(o, dict)] if isinstance(first, list) else []
    return bool(objs) and _is_llama_bench(objs[0]) and s[end:].lstrip().startswith("[")


def _json_items(text, path) -> list[tuple[int, object]]:
    """The elements of a top-level JSON list, each with the line it starts on; of each list where several
    follow one another (an array pasted twice: _once_each keeps one of each result)."""
    dec = json.JSONDecoder()
    i = len(text) - len(text.lstrip())
    if text[i:i + 1] != "[":
        return _jsonl(text, path)
    items = []
    n = len(text)
    at = [0, 1]   # a position and its line: each line number counted on from the last one (counting from the
                  # start for every element made a 50,000-row file quadratic: minutes)

    def line_of(j):
        if j < at[0]:
            at[0], at[1] = 0, 1
        at[1] += text.count("\n", at[0], j)
        at[0] = j
        return at[1]

    def skip(j):
        while j < n and text[j] in " \t\r\n":
            j += 1
        return j

    while True:     # each list
        i = skip(i + 1)
        while not (i < n and text[i] == "]"):   # (none in an empty list)
            line = line_of(i)
            try:
                obj, i = dec.raw_decode(text, i)
            except json.JSONDecodeError as e:
                _fail(path, e.lineno, f"not valid JSON ({e.msg})")
            items.append((line, obj))
            i = skip(i)
            if i < n and text[i] == "]":
                break
            if not (i < n and text[i] == ","):
                _fail(path, line_of(i), "not valid JSON (expected ',' or ']')")
            i = skip(i + 1)
            if i < n and text[i] == "]":
                _fail(path, line_of(i), "not valid JSON (a ',' before the list's ']')")
        i = skip(i + 1)
        if i == n:
            return items
        if text[i] != "[":
            _fail(path, line_of(i), "text after the end of the JSON list")


def _jsonl(text, path) -> list[tuple[int, dict]]:
    """One JSON object per line (blank lines skipped); a file that is one object over several
    lines (pretty-printed) is read as one. sglang writes an unlimited rate as a bare Infinity,
    which Python's json reads."""
    s = text.strip()
    try:
        whole = json.loads(s)
    except json.JSONDecodeError:
        whole = None
    if isinstance(whole, dict):
        return [(text[:len(text) - len(text.lstrip())].count("\n") + 1, whole)]
    out = []
    for i, ln in enumerate(text.splitlines(), 1):
        if not ln.strip():
            continue
        try:
            o = json.loads(ln)
        except json.JSONDecodeError as e:
            _fail(path, i, f"not valid JSON ({e.msg})")
        if not isinstance(o, dict):
            _fail(path, i, f"expected a JSON object, got {type(o).__name__}")
        out.append((i, o))
    return out


_CELL_DASH = re.compile(r"[\u2010-\u2015\u2212]")   # a hyphen an editor made typographic ("Q4_K \u2013 Medium")


def _split_md(ln: str) -> list[str]:
    """A markdown table line's cells: split at its pipes but an escaped one (`\\|`, GitHub's pipe inside a cell,
    kept as `|`), each cell stripped, its bold markers (`**`) dropped and a typographic dash read as `-`."""
    s = ln.strip()
    if s.startswith("|"):
        s = s[1:]
    if s.endswith("|") and not s.endswith("\\|"):
        s = s[:-1]
    return [_CELL_DASH.sub("-", c.replace("\\|", "|").replace("**", "")).strip() for c in re.split(r"(?<!\\)\|", s)]


def _md_headers(text) -> list[list[str]]:
    """The header rows of every markdown table of `text`, in order."""
    return _md_headers_of(*_unquote_tabs(text))


def _md_headers_of(lines, tab_heads) -> list[list[str]]:
    """_md_headers of `text`'s lines and table-header indexes as _unquote_tabs gives them."""
    return [_split_md(ln) for i, ln in enumerate(lines) if ln.lstrip().startswith("|") and (
        i in tab_heads or (i + 1 < len(lines) and re.fullmatch(r"\s*\|?[\s:|-]+\|?\s*", lines[i + 1])
                           and "-" in lines[i + 1]))]


def _md_header(text) -> list[str] | None:
    h = _md_headers(text)
    return h[0] if h else None


_READERS = {
    "glmbench": _read_glmbench,
    "llama-bench-json": _read_llama_bench_json,
    "llama-bench-jsonl": _read_llama_bench_jsonl,
    "llama-bench-csv": _read_llama_bench_csv,
    "llama-bench-md": lambda text, ctx: _read_pasted(text, ctx),
    "llama-bench-sql": _read_llama_bench_sql,
    "sweep-bench-md": lambda text, ctx: _read_pasted(text, ctx),
    "sweep-bench-jsonl": _read_sweep_jsonl,
    "batched-bench-md": lambda text, ctx: _read_pasted(text, ctx),
    "vllm-console": lambda text, ctx: _read_pasted(text, ctx),
    "vllm-offline": lambda text, ctx: _read_pasted(text, ctx),
    "sglang-one-batch": lambda text, ctx: _read_pasted(text, ctx),
    "sglang-one-batch-jsonl": _read_sglang_one_batch_jsonl,
    "sglang-offline": lambda text, ctx: _read_pasted(text, ctx),
    "sglang-offline-jsonl": _read_sglang_offline_jsonl,
    "llama-timings": lambda text, ctx: _read_pasted(text, ctx),
    "ollama-verbose": lambda text, ctx: _read_pasted(text, ctx),
    "koboldcpp-benchmark": lambda text, ctx: _read_pasted(text, ctx),
    "koboldcpp-csv": lambda text, ctx: _read_kobold_csv(text, ctx),
    "llama-server-json": _read_server_json,
    "batched-bench-jsonl": _read_batched_jsonl,
    "vllm": _read_vllm,
    "vllm-offline-json": lambda text, ctx: _read_vllm_offline_json(text, ctx),
    "sglang": _read_sglang,
    "scoreboard-csv": _read_scoreboard_csv,
}

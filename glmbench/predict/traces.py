"""Serving traces: when each request arrived, how long its prompt was, how many tokens it
generated, and (Mooncake) which 512-token prompt blocks it shares with others.

Readers:
- Mooncake JSONL (`timestamp` in ms, `input_length`, `output_length`, `hash_ids`: one id per
  512-token block of the prompt, the last one partial; equal leading ids = a shared prefix);
- Azure LLM inference CSV (`TIMESTAMP,ContextTokens,GeneratedTokens`, wall-clock timestamps; the 2023
  and 2024 releases);
- BurstGPT CSV (`Timestamp,Model,Request tokens,Response tokens,Total tokens,Log Type`: seconds from
  the trace's start; failed requests logged with 0 response tokens; a row with 0 request tokens has
  nothing to replay and is left out, counted in `meta["zero_prompt_rows"]` with a notice);
- a plain CSV or JSONL with `arrival_s`, `prompt_tokens`, `output_tokens` (and, in JSONL,
  optional `hash_ids` of `block_tokens` tokens each, 512 unless a line says otherwise; the lines
  with `hash_ids` must agree on it, and the Trace's `block_tokens` is theirs).

A request with 0 output tokens is one that failed in the traced system (real traces log them so):
it stays in the Trace, the replay counts it as failed and does not run it. Rows out of time order
are sorted (stable), with a notice in `meta["notices"]`; a byte-order mark before the header is
ignored, and a CSV header's names are matched regardless of case (timestamp,contexttokens,... is Azure's).

`load(name_or_path)` takes a built-in name (`TRACES`: the four public traces shipped in
glmbench/data/traces/ with their licenses, see its README.md) or a file. A malformed line raises
ValueError naming the file and the line. Inputs are never modified: rows are sorted by arrival
in the returned Trace only.
"""
from __future__ import annotations

import codecs
import csv
import datetime
import functools
import json
import math
import os
import re
from dataclasses import dataclass, field

from glmbench import vocab

TRACE_DIR = os.path.join(vocab.DATA_DIR, "traces")
MOONCAKE_BLOCK = 512      # tokens per hash block in the Mooncake traces (FAST'25 release README)

# name -> (file, reader, license file, attribution)
TRACES = {
    "mooncake-conversation": ("mooncake_conversation_trace.jsonl", "mooncake", "LICENSE-Apache-2.0_Mooncake.txt",
                              "Mooncake FAST'25 conversation trace (kvcache-ai/Mooncake, Apache-2.0): "
                              "one hour of Kimi requests, real timestamps"),
    "mooncake-synthetic": ("mooncake_synthetic_trace.jsonl", "mooncake", "LICENSE-Apache-2.0_Mooncake.txt",
                           "Mooncake FAST'25 synthetic trace (kvcache-ai/Mooncake, Apache-2.0): "
                           "public-dataset lengths, Poisson arrivals"),
    "azure-code-2023": ("AzureLLMInferenceTrace_code.csv", "azure", "LICENSE-CC-BY-4.0_AzurePublicDataset.txt",
                        "Azure LLM inference trace 2023, code (Azure/AzurePublicDataset, CC-BY-4.0); "
                        "Patel et al., Splitwise, ISCA 2024"),
    "azure-conv-2023": ("AzureLLMInferenceTrace_conv.csv", "azure", "LICENSE-CC-BY-4.0_AzurePublicDataset.txt",
                        "Azure LLM inference trace 2023, conversation (Azure/AzurePublicDataset, CC-BY-4.0); "
                        "Patel et al., Splitwise, ISCA 2024"),
}


@dataclass
class Trace:
    """Requests sorted by arrival. `hash_ids[i]` is a tuple of block ids (or None: no prefix
    information); `block_tokens` is the tokens per block those ids stand for."""
    name: str
    source: str
    arrival_s: list
    prompt: list
    output: list
    hash_ids: list
    block_tokens: int = MOONCAKE_BLOCK
    attribution: str = ""
    meta: dict = field(default_factory=dict)

    def __len__(self) -> int:
        return len(self.arrival_s)

    @property
    def has_prefixes(self) -> bool:
        return any(h for h in self.hash_ids)

    @property
    def duration_s(self) -> float:
        return self.arrival_s[-1] - self.arrival_s[0] if self.arrival_s else 0.0

    def scaled(self, rate_scale: float) -> "Trace":
        """The same requests arriving `rate_scale` times as fast (arrival times divided by it)."""
        if isinstance(rate_scale, bool) or not isinstance(rate_scale, (int, float)) or not (
                math.isfinite(rate_scale) and rate_scale > 0):
            raise ValueError(f"`rate_scale` must be a positive number, got {rate_scale!r}")
        return Trace(self.name, self.source, [a / rate_scale for a in self.arrival_s], list(self.prompt),
                     list(self.output), list(self.hash_ids), self.block_tokens, self.attribution,
                     {**self.meta, "rate_scale": self.meta.get("rate_scale", 1.0) * rate_scale})

    def summary(self) -> dict:
        n = len(self)
        tot_in = sum(self.prompt)
        return {"trace": self.name, "requests": n, "duration_s": self.duration_s,
                "mean_prompt": tot_in / n if n else 0.0, "mean_output": sum(self.output) / n if n else 0.0,
                "max_prompt": max(self.prompt) if n else 0, "prompt_tokens": tot_in,
                "output_tokens": sum(self.output), "prefix_blocks": self.has_prefixes,
                "failed_requests": sum(1 for o in self.output if o == 0)}


def from_requests(requests, name: str = "hand-built", block_tokens: int = MOONCAKE_BLOCK) -> Trace:
    """A trace from (arrival_s, prompt_tokens, output_tokens[, hash_ids]) tuples (tests, notebooks)."""
    rows = _Rows()
    for i, r in enumerate(requests):
        if len(r) not in (3, 4):
            raise ValueError(f"{name}: request {i}: expected (arrival_s, prompt, output[, hash_ids]), got {r!r}")
        where = f"{name}: request {i}"
        rows.append(_row(where, r[0], r[1], r[2], r[3] if len(r) == 4 else None, block_tokens))
    return _trace(name, "python", rows, block_tokens)


def check_replayable(tr: Trace) -> Trace:
    """`tr`, or a ValueError naming its source when no request is left to replay: every one
    logged with 0 output tokens (failed in the traced system, never replayed)."""
    n = len(tr)
    if n and tr.output.count(0) == n:
        raise ValueError(f"{tr.source}: {'its one request has' if n == 1 else f'all {n:,} of its requests have'} "
                         "0 output tokens (failed in the traced system, never replayed): nothing to replay")
    return tr


def list_traces() -> list[str]:
    return sorted(TRACES)


def load(src, name: str | None = None) -> Trace:
    """A built-in trace by name (`TRACES`) or a trace file (.jsonl Mooncake or plain, .csv Azure,
    BurstGPT or plain)."""
    if isinstance(src, Trace):
        return src
    if not isinstance(src, (str, os.PathLike)):
        raise TypeError(f"a trace is a built-in name or a file path, got {type(src).__name__}")
    s = os.fspath(src)
    if s in TRACES:
        fname, kind, lic, attribution = TRACES[s]
        t = read(os.path.join(TRACE_DIR, fname), name=s)
        t.attribution = attribution
        t.meta["license_file"] = os.path.join(TRACE_DIR, lic)
        return t
    if not os.path.exists(s):
        raise ValueError(f"unknown trace {s!r}: not a built-in ({', '.join(list_traces())}) and no such file")
    return read(s, name=name)


def read(path, name: str | None = None) -> Trace:
    path = os.fspath(path)
    name = name or os.path.splitext(os.path.basename(path))[0]
    if os.path.isdir(path):
        raise ValueError(f"{path}: is a folder, expected a .jsonl or .csv trace file")
    low = path.lower()      # TRACE.CSV as a spreadsheet or another OS names it
    if low.endswith(".gz") and low[:-3].endswith((".jsonl", ".json", ".csv")):
        raise ValueError(f"{path}: gzip-compressed; decompress it first (gunzip -k {os.path.basename(path)}) and "
                         "give the .jsonl or .csv")
    if _gzip_magic(path):   # gzip-compressed under a name that does not say so (t.csv, trace.jsonl)
        raise ValueError(f"{path}: gzip-compressed (it starts with the gzip bytes 1f 8b); decompress it first "
                         f"(gunzip -c {os.path.basename(path)} > plain.{'csv' if low.endswith('.csv') else 'jsonl'}) "
                         "and give the .jsonl or .csv")
    if not low.endswith((".jsonl", ".json", ".csv")):
        raise ValueError(f"{path}: trace files end in .jsonl (Mooncake or plain) or .csv (Azure, BurstGPT or plain)")
    # utf-8-sig: a byte-order mark (spreadsheet exports write one) is not part of the first field
    try:
        with open(path, encoding="utf-8-sig", newline="") as f:
            if low.endswith((".jsonl", ".json")):
                return _read_jsonl(path, f, name)
            return _read_csv(path, f, name)
    except UnicodeDecodeError as e:
        if not os.path.isfile(path):   # a pipe (or /dev/stdin) is read once: its bytes are gone
            raise ValueError(f"{path}: not a text file (not UTF-8: {e.reason}); expected a .jsonl or .csv trace") from None
        lineno, pos = _first_bad_utf8(path)
        raise ValueError(f"{path}:{lineno}: not a text file (not UTF-8 at byte {pos}); expected a .jsonl or .csv "
                         "trace") from None
    raise ValueError(f"{path}: trace files end in .jsonl (Mooncake or plain) or .csv (Azure, BurstGPT or plain)")


def _gzip_magic(path) -> bool:
    """Whether a regular file starts with the gzip magic bytes 1f 8b (a pipe is not peeked at: its bytes
    would be gone; a file that cannot be opened is left to the reader's own error)."""
    if not os.path.isfile(path):
        return False
    try:
        with open(path, "rb") as f:
            return f.read(2) == b"\x1f\x8b"
    except OSError:
        return False


def _first_bad_utf8(path):
    """(line, byte offset in the file) of the first byte that is not UTF-8 (the text reader's own
    error counts its offset from the start of the chunk it was decoding, not of the file)."""
    dec = codecs.getincrementaldecoder("utf-8")()
    lineno, offset = 1, 0
    with open(path, "rb") as f:
        while True:
            chunk = f.read(1 << 20)
            pending = dec.getstate()[0]
            try:
                dec.decode(chunk, final=not chunk)
            except UnicodeDecodeError as e:
                pos = offset - len(pending) + e.start
                return lineno + (pending + chunk)[:e.start].count(b"\n"), pos
            if not chunk:
                return lineno, offset
            lineno += chunk.count(b"\n")
            offset += len(chunk)


# ---- parsing ---------------------------------------------------------------------------------------
def _label(field_) -> str:
    """A column as an error names it: `name`, or `name` (what it holds) where the file's name says less."""
    return f"`{field_[0]}` ({field_[1]})" if isinstance(field_, tuple) else f"`{field_}`"


def _int(where, field_, v, minimum):
    if isinstance(v, bool) or not isinstance(v, int):
        if isinstance(v, float) and v.is_integer():
            v = int(v)
        # isdecimal, not isdigit: '1²' is digits to isdigit but no number to int()
        elif isinstance(v, str) and v.strip().lstrip("-").isdecimal():
            v = int(v)
        else:
            raise ValueError(f"{where}: {_label(field_)} must be a whole number, got {v!r}")
    if v < minimum:
        raise ValueError(f"{where}: {_label(field_)} must be >= {minimum}, got {v}")
    if v > vocab.MAX_TOKENS:
        raise ValueError(f"{where}: {_label(field_)} is {v:,}, more tokens than any model has positions or memory for "
                         f"(at most {vocab.MAX_TOKENS:,})")
    return v


def _num(where, field_, v):
    if isinstance(v, str):
        try:
            v = float(v)
        except ValueError:
            raise ValueError(f"{where}: {_label(field_)} must be a number, got {v!r}") from None
    if isinstance(v, bool) or not isinstance(v, (int, float)) or not math.isfinite(v) or v < 0:
        raise ValueError(f"{where}: {_label(field_)} must be a finite number >= 0, got {v!r}")
    return float(v)


def _row(where, arrival, prompt, output, hash_ids, block_tokens, names=("arrival", "prompt tokens", "output tokens")):
    """One request; `names`: its three columns as the file names them (an error names the file's own column)."""
    a = _num(where, (names[0], "arrival") if names[0] != "arrival" else names[0], arrival)
    p = _int(where, (names[1], "prompt tokens") if names[1] != "prompt tokens" else names[1], prompt, 1)
    # a request that generated nothing still ran its prefill, which yields the first token
    o = _int(where, (names[2], "output tokens") if names[2] != "output tokens" else names[2], output, 0)
    h = None
    if hash_ids is not None:
        if not isinstance(hash_ids, list) or not all(isinstance(x, int) and not isinstance(x, bool) for x in hash_ids):
            raise ValueError(f"{where}: `hash_ids` must be a list of whole numbers, got {str(hash_ids)[:60]}")
        need = -(-p // block_tokens)
        if len(hash_ids) != need:
            raise ValueError(f"{where}: `hash_ids` has {len(hash_ids)} blocks but {p} prompt tokens "
                             f"make {need} blocks of {block_tokens}")
        h = tuple(hash_ids)
    return a, p, o, h


class _Rows:
    """Parsed requests as four columns (a row's tuple is split as it comes: a million-request trace
    holds no million tuples)."""

    def __init__(self):
        self.a, self.p, self.o, self.h = [], [], [], []

    def append(self, row):
        a, p, o, h = row
        self.a.append(a)
        self.p.append(p)
        self.o.append(o)
        self.h.append(h)

    def __len__(self):
        return len(self.a)

    def __bool__(self):
        return bool(self.a)


def failed_notice(source, failed: int) -> str:
    """The notice of `failed` requests logged with 0 output tokens."""
    return (f"{source}: {failed} request{'s' if failed > 1 else ''} with 0 output tokens (failed in the trace): "
            "counted as failed, not replayed")


def _trace(name, source, rows, block_tokens, meta=None):
    notices = []
    A, Pr, Ou, H = rows.a, rows.p, rows.o, rows.h
    back = sum(1 for i in range(1, len(A)) if A[i] < A[i - 1])
    if back:
        order = sorted(range(len(A)), key=A.__getitem__)     # stable: equal arrivals keep file order
        A, Pr, Ou, H = ([col[i] for i in order] for col in (A, Pr, Ou, H))
        notices.append(f"{source}: arrivals are not in time order ({back} request{'s arrive' if back > 1 else ' arrives'} "
                       f"before the one above {'them' if back > 1 else 'it'}); replayed sorted by arrival")
    failed = Ou.count(0)
    if failed:
        notices.append(failed_notice(source, failed))
    t0 = A[0] if A else 0.0
    return Trace(name, source, [a - t0 for a in A] if t0 else A, Pr, Ou, H, block_tokens, meta={**(meta or {}), "zero_output_requests": failed,
                                                           "unsorted_arrivals": back, "notices": notices})


def _read_jsonl(path, f, name):
    rows = _Rows()
    kind = None
    block_tokens = block_line = None
    for lineno, line in enumerate(f, 1):
        if not line.strip():
            continue
        where = f"{path}:{lineno}"
        # a JSON array of requests (one document, not a line each) is not read: say so where it starts
        array = ("; the file looks like one JSON array: a trace holds one JSON object per line (JSONL), e.g. "
                 "jq -c '.[]' in.json > out.jsonl") if not rows and line.lstrip().startswith("[") else ""
        try:
            d = json.loads(line)
        except json.JSONDecodeError as e:
            # Python's message ends 'at' where it gives the position apart ('Invalid control character at')
            what = e.msg[:-3] if e.msg.endswith(" at") else e.msg
            raise ValueError(f"{where}: not valid JSON ({what} at column {e.colno}){array}") from None
        if not isinstance(d, dict):
            raise ValueError(f"{where}: expected a JSON object, got {type(d).__name__}{array}")
        k = "mooncake" if "timestamp" in d else "plain" if "arrival_s" in d else None
        if k is None:
            raise ValueError(f"{where}: expected Mooncake fields (timestamp, input_length, output_length, hash_ids) "
                             f"or plain ones (arrival_s, prompt_tokens, output_tokens)")
        if kind is None:
            kind = k
        elif k != kind:
            raise ValueError(f"{where}: a {k} line in a {kind} trace")
        if kind == "mooncake":
            for key in ("input_length", "output_length"):
                if key not in d:
                    raise ValueError(f"{where}: field `{key}` is missing")
            rows.append(_row(where, _num(where, "timestamp", d["timestamp"]) / 1000.0, d["input_length"],
                             d["output_length"], d.get("hash_ids"), MOONCAKE_BLOCK,
                             ("timestamp", "input_length", "output_length")))
        else:
            for key in ("prompt_tokens", "output_tokens"):
                if key not in d:
                    raise ValueError(f"{where}: field `{key}` is missing")
            bt = _int(where, "block_tokens", d.get("block_tokens", MOONCAKE_BLOCK), 1)
            if d.get("hash_ids") is not None:
                # the Trace (and the replay's prefix cache) has one block size: every line's ids
                # must stand for blocks of the same size
                if block_tokens is None:
                    block_tokens, block_line = bt, lineno
                elif bt != block_tokens:
                    raise ValueError(f"{where}: `hash_ids` in blocks of {bt} tokens, but line {block_line}'s "
                                     f"are in blocks of {block_tokens}; a trace has one block size")
            rows.append(_row(where, d["arrival_s"], d["prompt_tokens"], d["output_tokens"], d.get("hash_ids"), bt,
                             ("arrival_s", "prompt_tokens", "output_tokens")))
    if not rows:
        raise ValueError(f"{path}: the trace holds no requests")
    return _trace(name, path, rows, block_tokens or MOONCAKE_BLOCK, {"format": kind})


def _azure_time(where, s) -> int:
    """The time in whole nanoseconds since the Unix epoch (an int: one float of Unix seconds has
    steps of 2.4e-7 s, coarser than the 2023 release's 7 fractional digits)."""
    # 7 fractional digits (100 ns; 2023) or 6 and a UTC offset (2024: pandas' 2024-05-10
    # 00:00:00.009930+00:00); datetime takes at most 6 digits
    s = s.strip()
    bad = (f"{where}: `TIMESTAMP` must look like 2023-11-16 18:17:03.9799600 or 2024-05-10 00:00:00.009930+00:00 (or with a T "
           f"between date and time), "
           f"got {s!r}")
    m = _AZURE_TIME.fullmatch(s)
    if m is None:
        raise ValueError(bad)
    head, frac, tz = m.groups()
    try:
        sec = _azure_seconds(head.replace("T", " "))
    except ValueError:
        raise ValueError(bad) from None
    if tz and tz != "Z":
        off = int(tz[1:3]) * 3600 + int(tz[-2:]) * 60
        sec -= off if tz[0] == "+" else -off
    return sec * 10 ** 9 + (int(frac[:9].ljust(9, "0")) if frac else 0)


@functools.lru_cache(maxsize=4096)
def _azure_seconds(head: str) -> int:
    """Whole seconds since the epoch of 'YYYY-MM-DD HH:MM:SS' in UTC; cached: a trace's rows share
    their second with their neighbours, and strptime was half of reading a 1.5M-line trace."""
    t = datetime.datetime.strptime(head, "%Y-%m-%d %H:%M:%S")
    return int(t.replace(tzinfo=datetime.timezone.utc).timestamp())


# (ISO 8601's `T` between date and time too: the same file saved by a script that wrote its times with isoformat())
_AZURE_TIME = re.compile(r"(\d{4}-\d{2}-\d{2}[ T]\d{2}:\d{2}:\d{2})(?:\.(\d+))?(Z|[+-]\d{2}:?\d{2})?")


def _columns(header, want):
    """The index of each column of `want` in `header`: the column of that name, else the one column
    equal to it but for case (a header lower-cased by a script or spreadsheet); None where one is missing
    (or two differ from it only in case)."""
    folded = [h.casefold() for h in header]
    out = []
    for c in want:
        if c in header:
            out.append(header.index(c))
            continue
        m = [i for i, h in enumerate(folded) if h == c.casefold()]
        if len(m) != 1:
            return None
        out.append(m[0])
    return out


def _read_csv(path, f, name):
    reader = csv.reader(f)
    try:
        header = [h.strip() for h in next(reader)]
    except StopIteration:
        raise ValueError(f"{path}: empty file") from None
    azure = ["TIMESTAMP", "ContextTokens", "GeneratedTokens"]
    burst = ["Timestamp", "Request tokens", "Response tokens"]     # BurstGPT (also Model, Total tokens, Log Type)
    plain = ["arrival_s", "prompt_tokens", "output_tokens"]
    for kind, want in (("azure", azure), ("burstgpt", burst), ("plain", plain)):
        cols = _columns(header, want)
        if cols is not None:
            break
    else:
        sep = next((d for d in (";", "\t", "|") if len(header) == 1 and d in header[0]), None)
        raise ValueError(f"{path}:1: header must hold {','.join(azure)} (Azure), {','.join(burst)} (BurstGPT) or "
                         f"{','.join(plain)} (plain), got {','.join(header)}"
                         + (f" (its fields are separated by {sep!r}: a trace CSV's by commas)" if sep else ""))
    rows = _Rows()
    no_prompt = 0
    for lineno, rec in enumerate(reader, 2):
        if not rec or not "".join(rec).strip():
            continue
        where = f"{path}:{lineno}"
        if len(rec) != len(header):
            raise ValueError(f"{where}: expected {len(header)} fields, got {len(rec)}")
        a, p, o = (rec[i].strip() for i in cols)
        if kind == "burstgpt" and _int(where, "Request tokens", p, 0) == 0:
            no_prompt += 1      # BurstGPT logs some requests with no request tokens: nothing to replay
            continue
        if kind == "azure":
            # whole nanoseconds, made seconds from the earliest once every row is read
            rows.append(_row(where, 0.0, p, o, None, MOONCAKE_BLOCK, tuple(header[i] for i in cols)))
            rows.a[-1] = _azure_time(where, a)
        else:
            rows.append(_row(where, a, p, o, None, MOONCAKE_BLOCK, tuple(header[i] for i in cols)))
    if not rows:
        raise ValueError(f"{path}: the trace holds no requests")
    if kind == "azure":
        t0 = min(rows.a)
        rows.a = [(x - t0) / 1e9 for x in rows.a]
    t = _trace(name, path, rows, MOONCAKE_BLOCK, {"format": kind})
    if kind == "burstgpt":
        t.meta["zero_prompt_rows"] = no_prompt
        if no_prompt:
            t.meta["notices"].append(f"{path}: {no_prompt} row{'s' if no_prompt > 1 else ''} with 0 request tokens "
                                     "(nothing to prefill or replay): left out")
    return t

"""Results in: other tools' benchmark output (and glmbench's own records) as glmbench records.

    from glmbench.results import importers
    recs = importers.read("llama-bench.json")                  # format told from the content
    recs = importers.read("sweep-bench.md", model="qwen3-32b")  # a table that does not name its model

The format is detected from the content, never from the file name:

  llama-bench        `-o json`, `-o jsonl`, `-o csv`, `-o md`, `-o sql` (llama.cpp tools/llama-bench;
                     ik_llama.cpp's prints the same)
  sweep-bench        ik_llama.cpp's and the mainline port's markdown table
                     (`PP | TG | N_KV | T_PP s | S_PP t/s | T_TG s | S_TG t/s`) and `--output-format jsonl`
  batched-bench      llama.cpp's llama-batched-bench table (`PP | TG | B | N_KV | ...`) and its jsonl
  vllm               `vllm bench serve --save-result` JSON (one object; `--append-result`: one per line)
  sglang             `python -m sglang.bench_serving --output-file` JSONL (one run per line)
  glmbench           glmbench's own records (.json list or .csv with an `evidence` column)

Every record read from another tool says `evidence: measured`, `tool` (what wrote it) and
`source` ("file:line"). Field names are llama-bench's where they overlap: `test` ("pp" when only
n_prompt is set, "tg" when only n_gen is, "pg" for llama-bench's `-pg`; a serving benchmark is
"serve"), `n_prompt`, `n_gen`, `n_depth`, `avg_ts`, `stddev_ts`, `n_batch` (llama-bench's logical
batch size, as it means there), `n_ubatch`, `flash_attn` (-1 auto, 0 off, 1 on), `type_k`,
`type_v`. `n_streams` is the number of independent sequences a step runs (batched-bench's B,
a serving benchmark's concurrency); `device` and `n_cards` come from `gpu_info` (or `devices`);
`split` from `split_mode` (one card: "none"; llama.cpp's row split is a tensor split); `weights`
from the file type in `model_type` ("Q4_K - Medium") or else the file name, normalised by
`quant_name` (glmbench's spelling for a single format, `q4_K`, `iq4_xs`, `q8_0`; llama.cpp's mix
name for a mix, `Q4_K_M`); `model` is a built-in config's name, told from the file name
(`GLM-4.7-Flash-Q4_K_M.gguf`, `Qwen/Qwen3-32B`) or from the architecture and size where only one
built-in can be it (`qwen3 32B`). `deepseek2` and `llama` are shared by many model families
(`deepseek2 30B.A3B` is GLM-4.7-Flash, or another model converted to that architecture), and the
sweep- and batched-bench tables name no model at all: those need `model=` (`--model`), and the
error says so.

Malformed input (no known format, a row that does not parse, a speed that is not a positive
number, a record without a depth, an empty file) is one `FormatError` (a ValueError) that names
the file and the line. Inputs are only read.
"""
from __future__ import annotations

import csv
import io
import json
import math
import os
import re
import sqlite3
from typing import Iterable

from glmbench import vocab
from glmbench.models import configs
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
    "sglang": "sglang bench_serving --output-file JSONL",
}


class FormatError(ValueError):
    """A file that cannot be read as records: the message names the file and, where there is
    one, the line."""


def _where(path, line=None) -> str:
    return f"{path}:{line}" if line else f"{path}"


def _fail(path, line, msg):
    raise FormatError(f"{_where(path, line)}: {msg}")


# ---- entry points -------------------------------------------------------------------------------
def read(path, *, model: str | None = None, default_model: str | None = None) -> list[dict]:
    """Records from a file of any format above (detected from its content).

    model: the model of every record read from another tool's output (a built-in name or a
      config.json), overriding what the file name or architecture says; default_model: used only
      where the file does not tell. glmbench's own records keep the model they name."""
    p = os.fspath(path)
    if not os.path.exists(p):
        raise FormatError(f"{p}: no such file")
    if os.path.isdir(p):
        raise FormatError(f"{p}: is a folder, not a results file")
    try:
        with open(p, "rb") as f:
            raw = f.read()
        text = raw.decode("utf-8-sig")
    except UnicodeDecodeError as e:
        line = raw[:e.start].count(b"\n") + 1
        raise FormatError(f"{p}:{line}: not a text file (not UTF-8)") from None
    return read_text(text, p, model=model, default_model=default_model)


def read_text(text: str, path: str = "<text>", *, model: str | None = None,
              default_model: str | None = None) -> list[dict]:
    """read() on text already in memory; `path` names it in errors and in `source`."""
    fmt = detect(text, path)
    ctx = _Context(path, fmt, _canonical_model(model, path, "model"), _canonical_model(default_model, path, "default_model"))
    recs = _READERS[fmt](text, ctx)
    if not recs:
        _fail(path, None, f"holds no records ({FORMATS[fmt]})")
    return recs


def detect(text: str, path: str = "<text>") -> str:
    """The format of `text` (a key of FORMATS), or a FormatError naming `path`."""
    s = text.lstrip()
    if not s:
        _fail(path, None, "empty file")
    first_line = text[:len(text) - len(s)].count("\n") + 1
    if s[0] == "[":
        data = _json_or_fail(s, path, first_line)
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
        if "output_throughput" in keys and "mean_ttft_ms" in keys:
            return "sglang"
        if {"n_kv_max", "speed_pp", "speed_tg"} <= keys:
            return "batched-bench-jsonl" if "pl" in keys else "sweep-bench-jsonl"
        if "evidence" in keys:
            return "glmbench"
        _fail(path, first_line, "a JSON object of no known format (llama-bench -o jsonl, vllm bench serve, "
                                "sglang bench_serving, sweep-/batched-bench jsonl)")
    if re.match(r"CREATE TABLE IF NOT EXISTS llama_bench\b", s):
        return "llama-bench-sql"
    header = _md_header(text)
    if header is not None:
        cells = {c.strip() for c in header}
        if {"PP", "TG", "N_KV", "S_PP t/s", "S_TG t/s"} <= cells:
            return "batched-bench-md" if "B" in cells else "sweep-bench-md"
        if {"model", "test", "t/s"} <= cells:
            return "llama-bench-md"
    head = s.splitlines()[0]
    cols = next(csv.reader([head]), [])
    if "evidence" in cols:
        return "glmbench"
    if _is_llama_bench(dict.fromkeys(cols)):
        return "llama-bench-csv"
    _fail(path, first_line, "not a results format glmbench reads (" + "; ".join(FORMATS.values()) + ")")


# ---- names: weights and models --------------------------------------------------------------------
# llama.cpp's file-type names (llama_model_ftype_name: "Q4_K - Medium", "IQ4_XS - 4.25 bpw",
# "all F32") -> the mix or format name of the file ("Q4_K_M", "IQ4_XS", "F32").
_FTYPE_SIZE = {"small": "S", "medium": "M", "large": "L", "extra small": "XS", "extra large": "XL"}
_QUANT_RE = re.compile(r"(?<![a-z0-9])((?:i?q\d(?:_[a-z0-9]+)*)|bf16|f16|f32|mxfp4(?:_moe)?)(?![a-z0-9])", re.I)


def quant_name(name: str | None) -> str | None:
    """One spelling per weight format, whatever the case: a single format glmbench knows keeps
    glmbench's name (`q4_k` -> "q4_K", `IQ4_XS` -> "iq4_xs", `Q8_0` -> "q8_0", `BF16` -> "bf16");
    a llama.cpp mix keeps llama.cpp's name in its upper case (`q4_k_m` -> "Q4_K_M"). llama.cpp's
    file-type text is read too ("Q4_K - Medium" -> "Q4_K_M", "IQ4_XS - 4.25 bpw" -> "iq4_xs",
    "all F32" -> "f32"). None when `name` holds no quant name."""
    if not name:
        return None
    s = str(name).strip()
    m = re.fullmatch(r"(?:all\s+)?([A-Za-z0-9_]+)(?:\s+-\s+(.+))?", s)
    if m and m.group(2) is not None:
        base, rest = m.group(1), m.group(2).strip().lower()
        if rest in _FTYPE_SIZE:
            s = f"{base}_{_FTYPE_SIZE[rest]}"
        else:
            s = base  # "IQ4_XS - 4.25 bpw", "Q2_K - Medium" is caught above
    elif m:
        s = m.group(1)
    low = s.lower()
    for k in vocab.WEIGHT_FORMATS:
        if k.lower() == low:
            return k
    if _QUANT_RE.fullmatch(low):
        return s.upper()
    return None


def _quant_from_filename(filename: str | None) -> str | None:
    if not filename:
        return None
    stem = _stem(filename)
    found = _QUANT_RE.findall(stem)
    return quant_name(found[-1]) if found else None


def _stem(filename: str) -> str:
    b = os.path.basename(str(filename).rstrip("/"))
    b = re.sub(r"\.gguf$", "", b, flags=re.I)
    return re.sub(r"-\d{5}-of-\d{5}$", "", b)


def _tokens(s: str) -> list[str]:
    # dashes, underscores, spaces, slashes, and dots that are not a version's ("Model.Q4_K_M", not "4.7")
    return [t for t in re.split(r"[-_\s/]+|\.(?!\d)|(?<!\d)\.", s.lower()) if t]


# llama.cpp architecture names that one built-in family owns, and the HF model_type it is; the
# others (deepseek2: DeepSeek-V2/V3, GLM-4.7-Flash, Kimi, ...; llama: Llama, Mistral, ...) are
# shared by many families, so an architecture and a size do not say which model it is.
_ARCH_FAMILY = {"qwen3": "qwen3", "qwen3moe": "qwen3_moe", "seed_oss": "seed_oss"}
_SHARED_ARCHS = ("deepseek2", "llama")


def identify_model(filename: str | None = None, model_type: str | None = None) -> tuple[str | None, str]:
    """(built-in model name, how it was told) from a file name / HF id, else from llama.cpp's
    `model_type` ("arch size ftype"); (None, why not) when neither tells one model."""
    names = configs.builtin_names()
    why = []
    if filename:
        toks = set(_tokens(_stem(filename)))
        cands = [n for n in names if set(_tokens(n)) <= toks]
        best = [c for c in cands if all(set(_tokens(o)) <= set(_tokens(c)) for o in cands)]
        if len(best) == 1:
            return best[0], f"file name {os.path.basename(str(filename))!r}"
        why.append(f"the file name {os.path.basename(str(filename))!r} names "
                   + ("no built-in model" if not cands else "several: " + ", ".join(cands)))
    if model_type:
        parts = str(model_type).split()
        arch = parts[0].lower() if parts else ""
        size = parts[1] if len(parts) > 1 else ""
        fam = _ARCH_FAMILY.get(arch)
        if fam is not None:
            total = _size_params(size)
            cands = []
            for n in names:
                cfg = configs.load(n)
                if cfg.model_type == fam and total and abs(cfg.total_params() / 1e9 - total) <= 0.15 * total:
                    cands.append(n)
            if len(cands) == 1:
                return cands[0], f"architecture {arch} {size}"
            why.append(f"architecture '{arch} {size}' matches " + ("no built-in model" if not cands else
                                                                    "several: " + ", ".join(cands)))
        elif arch in _SHARED_ARCHS:
            why.append(f"'{' '.join(parts[:2])}' could be more than one model (llama.cpp's `{arch}` architecture "
                       "is shared by several model families)")
        else:
            why.append(f"architecture '{arch}' is none of the built-in models'" if arch else "no architecture")
    return None, "; ".join(why) or "the file names no model"


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
    def __init__(self, path, fmt, model, default_model):
        self.path, self.fmt, self.model, self.default_model = path, fmt, model, default_model

    def model_for(self, line, *, filename=None, model_type=None, what="") -> str:
        if self.model:
            return self.model
        name, why = identify_model(filename, model_type)
        if name:
            return name
        if self.default_model:
            return self.default_model
        _fail(self.path, line, f"cannot tell which model {what or 'this is'}: {why}; pass --model NAME "
                               f"(model= in the API): a built-in ({', '.join(configs.builtin_names())}) or a config.json")

    def source(self, line) -> str:
        return _where(self.path, line)


# ---- value helpers --------------------------------------------------------------------------------
def _num(ctx, line, field, v, *, integer=False, required=True, positive=False, minimum=None):
    if v is None or v == "":
        if required:
            _fail(ctx.path, line, f"field `{field}` is missing")
        return None
    if isinstance(v, bool):
        _fail(ctx.path, line, f"field `{field}` must be a number, got {v!r}")
    if isinstance(v, str):
        try:
            v = float(v.strip())
        except ValueError:
            _fail(ctx.path, line, f"field `{field}` must be a number, got {v!r}")
    if isinstance(v, float) and math.isnan(v) and not required:
        return None  # an optional statistic a tool could not compute (a mean TPOT of one-token outputs)
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
    if not device:
        return None
    k = device.strip().lower().replace(" ", "-").replace("_", "-")
    return k if os.path.exists(os.path.join(vocab.DATA_DIR, "hardware", k + ".json")) else None


def _rig(gpu_info, cpu_info, devices, split_mode) -> dict:
    gpus = _gpus(gpu_info)
    n_dev = None
    if devices and str(devices).strip().lower() not in ("auto", "none", ""):
        n_dev = len([d for d in str(devices).split("/") if d.strip()])
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
            _num(ctx, line, "n_depth", r.get("n_depth"), integer=True, minimum=0)
        out.append(r)
    return out


# ---- llama-bench ---------------------------------------------------------------------------------
_LB_INT = ("build_number", "model_size", "model_n_params", "n_batch", "n_ubatch", "n_threads", "poll",
           "n_gpu_layers", "n_cpu_moe", "main_gpu", "no_op_offload", "fit_target", "fit_min_ctx",
           "avg_ns", "stddev_ns")
_LB_BOOL = ("cpu_strict", "no_kv_offload", "embeddings", "no_host", "use_mmap", "use_direct_io")
_LB_KEEP = ("build_commit", "build_number", "cpu_info", "gpu_info", "backends", "model_filename", "model_type",
            "model_size", "model_n_params", "n_batch", "n_ubatch", "n_threads", "n_gpu_layers", "n_cpu_moe",
            "split_mode", "main_gpu", "no_kv_offload", "devices", "tensor_split", "tensor_buft_overrides",
            "load_mode", "use_mmap", "embeddings", "no_op_offload", "cpu_mask", "cpu_strict", "poll", "no_host",
            "fit_target", "fit_min_ctx", "test_time", "avg_ns", "stddev_ns", "samples_ns", "samples_ts")


# fields only llama-bench writes: a record with n_prompt/n_gen and one of these is llama-bench's
# even without its speed (the import then says `avg_ts` is missing, naming the line)
_LLAMA_BENCH_ONLY = {"build_commit", "build_number", "model_filename", "avg_ns", "samples_ns", "samples_ts"}


def _is_llama_bench(o) -> bool:
    if not isinstance(o, dict) or "evidence" in o:
        return False
    keys = set(o)
    return {"n_prompt", "n_gen"} <= keys and ("avg_ts" in keys or bool(keys & _LLAMA_BENCH_ONLY))


def _llama_bench_record(o: dict, ctx, line) -> dict:
    n_prompt = _num(ctx, line, "n_prompt", o.get("n_prompt"), integer=True, minimum=0)
    n_gen = _num(ctx, line, "n_gen", o.get("n_gen"), integer=True, minimum=0)
    # n_depth is in every build since llama-bench got -d (2025); older output has none: depth 0
    n_depth = _num(ctx, line, "n_depth", o.get("n_depth", 0), integer=True, minimum=0)
    test = _test_of(ctx, line, n_prompt, n_gen)
    avg = _speed(ctx, line, "avg_ts", o.get("avg_ts"))
    sd = _num(ctx, line, "stddev_ts", o.get("stddev_ts"), required=False, minimum=0)
    r = {"evidence": "measured", "test": test,
         "model": ctx.model_for(line, filename=o.get("model_filename"), model_type=o.get("model_type")),
         "tool": "llama-bench", "source": ctx.source(line)}
    r.update(_rig(o.get("gpu_info"), o.get("cpu_info"), o.get("devices"), o.get("split_mode")))
    ftype = " ".join(str(o.get("model_type") or "").split()[2:])
    r["weights"] = quant_name(ftype) or _quant_from_filename(o.get("model_filename"))
    r["type_k"], r["type_v"] = _kv_name(o.get("type_k")), _kv_name(o.get("type_v"))
    r.update(n_prompt=n_prompt, n_gen=n_gen, n_depth=n_depth, n_streams=1, avg_ts=avg, stddev_ts=sd,
             flash_attn=_flag(o.get("flash_attn")))
    for k in _LB_KEEP:
        if k not in o:
            continue
        v = o[k]
        if k in _LB_INT:
            v = _num(ctx, line, k, v, integer=True, required=False)
        elif k in _LB_BOOL:
            v = _bool(v)
        elif k in ("samples_ns", "samples_ts") and isinstance(v, str):
            v = json.loads(v) if v.startswith("[") else None
        r[k] = v
    if isinstance(r.get("samples_ts"), list):
        bad = [x for x in r["samples_ts"] if not (isinstance(x, (int, float)) and x > 0)]
        if bad:
            _fail(ctx.path, line, f"field `samples_ts` holds {bad[0]!r}: speeds must be > 0")
    return _clean(r)


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
    rows = csv.DictReader(io.StringIO(text))
    out = []
    for row in rows:
        if None in row or any(v is None for v in row.values()):
            _fail(ctx.path, rows.line_num, f"the row does not have the header's {len(rows.fieldnames)} cells")
        out.append(_llama_bench_record(row, ctx, rows.line_num))
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


_MD_TEST = re.compile(r"^(?:pp(\d+))?(\+)?(?:tg(\d+))?(?: @ d(\d+))?$")
_MD_COLS = {"ngl": "n_gpu_layers", "fa": "flash_attn", "sm": "split_mode", "threads": "n_threads",
            "dev": "devices", "ts": "tensor_split", "n_cpu_moe": "n_cpu_moe", "mmap": "use_mmap",
            "backend": "backends", "mg": "main_gpu", "nkvo": "no_kv_offload", "ot": "tensor_buft_overrides",
            "embd": "embeddings", "cpu_mask": "cpu_mask", "cpu_strict": "cpu_strict", "poll": "poll",
            "load_mode": "load_mode", "n_batch": "n_batch", "n_ubatch": "n_ubatch", "type_k": "type_k",
            "type_v": "type_v", "nopo": "no_op_offload"}


def _read_llama_bench_md(text, ctx):
    out = []
    build = re.search(r"^build: (\S+) \((\d+)\)\s*$", text, re.M)
    for line, cells, header in _md_rows(text, ctx):
        row = dict(zip(header, cells))
        m = _MD_TEST.match(row.get("test", ""))
        if not m or not (m.group(1) or m.group(3)) or (m.group(2) and not (m.group(1) and m.group(3))):
            _fail(ctx.path, line, f"test {row.get('test')!r} is not llama-bench's pp<n>, tg<n> or pp<n>+tg<n> [@ d<n>]")
        ts = re.fullmatch(r"\s*([^\s±]+)\s*(?:±\s*(\S+))?\s*", row.get("t/s", ""))
        if not ts:
            _fail(ctx.path, line, f"t/s {row.get('t/s')!r} is not 'mean ± stddev'")
        o = {"model_type": row.get("model"), "n_prompt": int(m.group(1) or 0), "n_gen": int(m.group(3) or 0),
             "n_depth": int(m.group(4) or 0), "avg_ts": ts.group(1), "stddev_ts": ts.group(2)}
        for col, v in row.items():
            if col in ("model", "test", "t/s", "size", "params"):
                continue
            o[_MD_COLS.get(col, col)] = v
        r = _llama_bench_record(o, ctx, line)
        r["tool"] = "llama-bench"
        for col, unit, field in (("size", "GiB", "model_size"), ("params", "B", "model_n_params")):
            mm = re.fullmatch(r"\s*(\d+(?:\.\d+)?) " + unit + r"\s*", row.get(col, ""))
            if mm:
                r[field] = round(float(mm.group(1)) * (1024 ** 3 if unit == "GiB" else 1e9))
        if build:
            r["build_commit"], r["build_number"] = build.group(1), int(build.group(2))
        out.append(r)
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


def _bench_common(ctx, line, hdr, tool, what):
    fa = hdr.get("flash_attn", hdr.get("flash_attn_type"))
    r = {"evidence": "measured", "model": ctx.model_for(line, what=what), "tool": tool, "source": ctx.source(line),
         "n_batch": hdr.get("n_batch"), "n_ubatch": hdr.get("n_ubatch"), "flash_attn": _flag(fa),
         "n_gpu_layers": hdr.get("n_gpu_layers"), "n_threads": hdr.get("n_threads"), "n_kv_max": hdr.get("n_kv_max")}
    return r


def _sweep_records(ctx, line, hdr, tool, pp, tg, n_kv, t_pp, s_pp, t_tg, s_tg, extra=None):
    base = _bench_common(ctx, line, hdr, tool, "a sweep-bench table measured (it names none)")
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


def _read_sweep_md(text, ctx):
    hdr = _main_line(text)
    out = []
    for line, cells, header in _md_rows(text, ctx):
        row = dict(zip(header, cells))
        extra = {}
        for col, field in (("RSS HWM", "rss_hwm_mib"), ("VRAM delta", "vram_delta_mib")):
            if col in row:
                extra[field] = _num(ctx, line, col, re.sub(r"\s*MiB$", "", row[col]), required=False)
        out += _sweep_records(ctx, line, hdr, _sweep_tool(hdr), row["PP"], row["TG"], row["N_KV"], row.get("T_PP s"),
                              row["S_PP t/s"], row.get("T_TG s"), row["S_TG t/s"], extra)
    return out


def _read_sweep_jsonl(text, ctx):
    out = []
    for line, o in _jsonl(text, ctx.path):
        out += _sweep_records(ctx, line, o, _sweep_tool(o), o.get("pp"), o.get("tg"), o.get("n_kv"), o.get("t_pp"),
                              o.get("speed_pp"), o.get("t_tg"), o.get("speed_tg"))
    return out


def _batched_records(ctx, line, hdr, pp, tg, b, n_kv, t_pp, s_pp, t_tg, s_tg):
    base = _bench_common(ctx, line, hdr, "llama-batched-bench", "a batched-bench table measured (it names none)")
    pp = _num(ctx, line, "PP", pp, integer=True, minimum=0)
    tg = _num(ctx, line, "TG", tg, integer=True, minimum=0)
    b = _num(ctx, line, "B", b, integer=True, minimum=1)
    _num(ctx, line, "N_KV", n_kv, integer=True, minimum=0)
    shared = bool(hdr.get("is_pp_shared"))
    out = []
    # each of the B sequences ingests PP tokens into an empty cache (with -pps: one prompt shared),
    # then generates TG tokens from depth PP; S_PP and S_TG are over all sequences
    if pp:
        out.append(_clean({**base, "test": "pp", "n_prompt": pp, "n_gen": 0, "n_depth": 0,
                           "n_streams": 1 if shared else b, "pl": b, "avg_ts": _speed(ctx, line, "S_PP t/s", s_pp),
                           "seconds": _num(ctx, line, "T_PP s", t_pp, required=False, minimum=0)}))
    if tg:
        out.append(_clean({**base, "test": "tg", "n_prompt": 0, "n_gen": tg, "n_depth": pp, "n_streams": b, "pl": b,
                           "avg_ts": _speed(ctx, line, "S_TG t/s", s_tg),
                           "seconds": _num(ctx, line, "T_TG s", t_tg, required=False, minimum=0)}))
    if not out:
        _fail(ctx.path, line, "a row with PP = TG = 0")
    return out


def _read_batched_md(text, ctx):
    hdr = _main_line(text)
    out = []
    for line, cells, header in _md_rows(text, ctx):
        row = dict(zip(header, cells))
        out += _batched_records(ctx, line, hdr, row["PP"], row["TG"], row["B"], row["N_KV"], row.get("T_PP s"),
                                row["S_PP t/s"], row.get("T_TG s"), row["S_TG t/s"])
    return out


def _read_batched_jsonl(text, ctx):
    out = []
    for line, o in _jsonl(text, ctx.path):
        out += _batched_records(ctx, line, o, o.get("pp"), o.get("tg"), o.get("pl"), o.get("n_kv"), o.get("t_pp"),
                                o.get("speed_pp"), o.get("t_tg"), o.get("speed_tg"))
    return out


# ---- serving benchmarks ----------------------------------------------------------------------------
def _serve_record(ctx, line, o, *, tool, model_name, n_cards=None, type_k=None, out_tok_s_key="output_throughput"):
    completed = _num(ctx, line, "completed", o.get("completed"), integer=True, minimum=0)
    if not completed:
        _fail(ctx.path, line, "no request completed (`completed` is 0): no speed")
    agg = _speed(ctx, line, out_tok_s_key, o.get(out_tok_s_key))
    conc = o.get("max_concurrency")
    conc = _num(ctx, line, "max_concurrency", conc, integer=True, minimum=1) if conc not in (None, "") else None
    n_in = _num(ctx, line, "total_input_tokens", o.get("total_input_tokens"), minimum=0)
    n_out = _num(ctx, line, "total_output_tokens", o.get("total_output_tokens"), minimum=0)
    tpot = _num(ctx, line, "mean_tpot_ms", o.get("mean_tpot_ms"), required=False, minimum=0)
    ttft = _num(ctx, line, "mean_ttft_ms", o.get("mean_ttft_ms"), required=False, minimum=0)
    rate = o.get("request_rate")
    if isinstance(rate, float) and not math.isfinite(rate):
        rate = "inf"
    prompt = round(n_in / completed)
    # unlimited concurrency: every request may be in flight at once (the benchmark's num_prompts)
    streams = conc if conc is not None else (o.get("num_prompts") or completed)
    r = {"evidence": "measured", "test": "serve",
         "model": ctx.model_for(line, filename=model_name, what="this run served"),
         "tool": tool, "source": ctx.source(line), "backend": o.get("backend"), "n_cards": n_cards,
         "type_k": type_k, "type_v": type_k,
         # the context a stream holds when it starts generating: its mean prompt
         "n_prompt": prompt, "n_gen": round(n_out / completed), "n_depth": prompt,
         "n_streams": streams, "concurrency": streams, "max_concurrency": conc, "request_rate": rate,
         "avg_ts": agg, "stddev_ts": None, "aggregate_tok_s": agg,
         "per_stream_tok_s": 1000.0 / tpot if tpot else None, "ttft_s": ttft / 1000.0 if ttft is not None else None,
         "tpot_s": tpot / 1000.0 if tpot is not None else None, "completed": completed,
         "request_throughput": o.get("request_throughput"), "duration_s": o.get("duration")}
    return _clean(r)


def _read_vllm(text, ctx):
    out = []
    for line, o in _jsonl(text, ctx.path):
        if "model_id" not in o:
            _fail(ctx.path, line, "not a vllm bench serve result (no `model_id`)")
        r = _serve_record(ctx, line, o, tool="vllm bench serve", model_name=o.get("model_id"))
        if o.get("date"):
            r["date"] = o["date"]
        out.append(r)
    return out


def _read_sglang(text, ctx):
    out = []
    for line, o in _jsonl(text, ctx.path):
        si = o.get("server_info") if isinstance(o.get("server_info"), dict) else {}
        name = si.get("model_path") or o.get("model") or o.get("model_id")
        tp = si.get("tp_size")
        r = _serve_record(ctx, line, o, tool="sglang bench_serving", model_name=name,
                          n_cards=tp if isinstance(tp, int) and tp > 0 else None,
                          type_k=_kv_name(si.get("kv_cache_dtype")))
        if o.get("tag"):
            r["tag"] = o["tag"]
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


def _json_items(text, path) -> list[tuple[int, object]]:
    """The elements of a top-level JSON list, each with the line it starts on."""
    dec = json.JSONDecoder()
    i = len(text) - len(text.lstrip())
    if text[i:i + 1] != "[":
        return _jsonl(text, path)
    i += 1
    items = []
    n = len(text)

    def skip(j):
        while j < n and text[j] in " \t\r\n":
            j += 1
        return j

    i = skip(i)
    if i < n and text[i] == "]":
        return []
    while True:
        line = text.count("\n", 0, i) + 1
        try:
            obj, i = dec.raw_decode(text, i)
        except json.JSONDecodeError as e:
            _fail(path, e.lineno, f"not valid JSON ({e.msg})")
        items.append((line, obj))
        i = skip(i)
        if i < n and text[i] == ",":
            i = skip(i + 1)
            continue
        if i < n and text[i] == "]":
            if text[i + 1:].strip():
                _fail(path, text.count("\n", 0, i) + 1, "text after the end of the JSON list")
            return items
        _fail(path, text.count("\n", 0, i) + 1, "not valid JSON (expected ',' or ']')")


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


def _split_md(ln: str) -> list[str]:
    s = ln.strip()
    if s.startswith("|"):
        s = s[1:]
    if s.endswith("|"):
        s = s[:-1]
    return [c.strip() for c in s.split("|")]


def _md_header(text) -> list[str] | None:
    lines = text.splitlines()
    for i, ln in enumerate(lines[:-1]):
        if ln.lstrip().startswith("|") and re.fullmatch(r"\s*\|?[\s:|-]+\|?\s*", lines[i + 1]) and "-" in lines[i + 1]:
            return _split_md(ln)
    return None


def _md_rows(text, ctx) -> Iterable[tuple[int, list[str], list[str]]]:
    """(line, cells, header) for each row of the first markdown table; other lines (a tool's logs
    before or after the table) are skipped."""
    lines = text.splitlines()
    header = None
    i = 0
    while i < len(lines) - 1:
        ln = lines[i]
        if ln.lstrip().startswith("|") and re.fullmatch(r"\s*\|?[\s:|-]+\|?\s*", lines[i + 1]) and "-" in lines[i + 1]:
            header = _split_md(ln)
            i += 2
            break
        i += 1
    if header is None:
        return
    while i < len(lines):
        ln = lines[i]
        if not ln.lstrip().startswith("|"):
            break
        cells = _split_md(ln)
        if len(cells) != len(header):
            _fail(ctx.path, i + 1, f"a table row with {len(cells)} cells, the header has {len(header)}")
        yield i + 1, cells, header
        i += 1


_READERS = {
    "glmbench": _read_glmbench,
    "llama-bench-json": _read_llama_bench_json,
    "llama-bench-jsonl": _read_llama_bench_jsonl,
    "llama-bench-csv": _read_llama_bench_csv,
    "llama-bench-md": _read_llama_bench_md,
    "llama-bench-sql": _read_llama_bench_sql,
    "sweep-bench-md": _read_sweep_md,
    "sweep-bench-jsonl": _read_sweep_jsonl,
    "batched-bench-md": _read_batched_md,
    "batched-bench-jsonl": _read_batched_jsonl,
    "vllm": _read_vllm,
    "sglang": _read_sglang,
}

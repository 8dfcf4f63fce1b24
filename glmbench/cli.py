"""The `glmbench` command (also `python -m glmbench`).

  glmbench report    the default study -> ./glmbench-report/ (charts, records, report.md)
  glmbench sweep     predicted records for a grid of models x rigs x depths
  glmbench measure   real timings of a model's layers on this machine's CPU
  glmbench models    built-in model configs
  glmbench hardware  built-in hardware profiles
  glmbench compare   result files side by side, with ratios to the first (like compare-llama-bench)
  glmbench plot      charts from a result file
  glmbench calibrate fit a runtime profile to measured records (the residuals, MAPE, cross-validated error)
  glmbench truth-table every shipped and CPU-measured point beside its ideal/typical/calibrated prediction
  glmbench search    the cheapest setup (cards, model, formats, split) meeting a trace's TTFT/TPOT targets

User errors (a bad option, a missing file, a model or GPU nobody knows) end with one line on
stderr and exit status 2; nothing else is printed. GLMBENCH_TRACEBACK=1 shows the traceback.
"""
from __future__ import annotations

import argparse
import contextlib
import csv
import dataclasses
import gc
import io
import json
import os
import re
import signal
import stat
import sys
import tempfile

from glmbench import __version__, report, vocab
from glmbench.models import configs
from glmbench.predict import hardware
from glmbench.results.compare import compare, file_letters, paired_tg_lengths, repeated_points, summarize, tg_lengths_sentence
from glmbench.report import Study
from glmbench.results import records as rec

EXIT_USAGE = 2
EXIT_INTERRUPTED = 130


class UserError(Exception):
    """A problem with what the user asked for: reported as one line, exit status 2."""


class _Parser(argparse.ArgumentParser):
    """argparse, but a usage error is one line naming the command, not usage + error."""

    def error(self, message):
        raise UserError(f"{self.prog}: {message} (see `{self.prog} --help`)")


# ---- argument types -----------------------------------------------------------------------------
_TOKENS = re.compile(r"^\s*(\d+(?:\.\d+)?)\s*([kKmM]?)\s*$")


def parse_tokens(text: str) -> int:
    """'4096' -> 4096, '4K' -> 4096, '128k' -> 131072, '1M' -> 1048576 (binary K, as llama-bench's
    depths and every context length in the model cards are powers of two)."""
    if _TOKENS.match(str(text).strip().lstrip("-")) and str(text).strip().startswith("-"):
        raise ValueError(f"must be >= 0, got {text!r}")
    m = _TOKENS.match(str(text))
    if not m:
        raise ValueError(f"not a token count: {text!r} (write e.g. 4096, 4K or 128K)")
    n = float(m.group(1)) * {"": 1, "k": 1024, "m": 1024 ** 2}[m.group(2).lower()]
    if n != int(n) or n < 0:
        raise ValueError(f"not a whole, non-negative token count: {text!r}")
    if n > vocab.MAX_TOKENS:
        raise ValueError(f"{text!r} is more tokens than any model has positions or memory for "
                         f"(at most {vocab.MAX_TOKENS:,})")
    return int(n)


def parse_token_list(text: str) -> list[int]:
    """'1K,4K,16K' -> [1024, 4096, 16384]; '1K..128K' -> every power of two from 1K to 128K;
    the two forms mix: '512,1K..8K'."""
    out: list[int] = []
    for part in str(text).split(","):
        part = part.strip()
        if not part:
            continue
        if ".." in part:
            a, b = (parse_tokens(x) for x in part.split("..", 1))
            if a <= 0 or b < a:
                raise ValueError(f"range {part!r} must go from a positive count up, e.g. 1K..128K")
            x = a
            while x <= b:
                out.append(x)
                x *= 2
        else:
            out.append(parse_tokens(part))
    if not out:
        raise ValueError(f"no token counts in {text!r}")
    return sorted(set(out))


def _argtype(fn, what):
    def conv(text):
        try:
            return fn(text)
        except ValueError as e:
            raise argparse.ArgumentTypeError(f"{what}: {e}") from None
    conv.__name__ = what
    return conv


def parse_int_list(text: str) -> list[int]:
    try:
        vals = sorted({int(x) for x in str(text).split(",") if x.strip()})
    except ValueError:
        raise ValueError(f"expected whole numbers separated by commas, got {text!r}") from None
    if not vals or vals[0] < 1:
        raise ValueError(f"expected positive whole numbers, got {text!r}")
    return vals


def positive_float(text: str) -> float:
    try:
        v = float(text)
    except ValueError:
        raise ValueError(f"not a number: {text!r}") from None
    if v != v or v in (float("inf"), float("-inf")):
        raise ValueError(f"must be finite, got {text!r}")
    if not v > 0:
        raise ValueError(f"must be > 0, got {text!r}")
    return v


def _positive_tokens(text: str) -> int:
    n = parse_tokens(text)
    if n < 1:
        raise ValueError(f"must be >= 1, got {text!r}")
    return n


def parse_cv(text: str):
    """calibrate --cv: "auto", "loo" or a number of folds K >= 2."""
    t = str(text).strip().lower()
    if t in ("auto", "loo"):
        return t
    if not t.isdigit() or int(t) < 2:
        raise ValueError(f"expected auto, loo or a number of folds >= 2, got {text!r}")
    return int(t)


DEPTHS = _argtype(parse_token_list, "token counts")
INTS = _argtype(parse_int_list, "counts")
POSITIVE = _argtype(positive_float, "value")
_cv_arg = _argtype(parse_cv, "value")


# ---- output paths: checked before any work ---------------------------------------------------------
def _check_folder(folder: str, opt: str, shown: str | None = None) -> None:
    """`folder` exists or can be created (its nearest existing ancestor is a writable folder)."""
    probe = os.path.abspath(folder or ".")
    while not os.path.exists(probe):
        parent = os.path.dirname(probe)
        if parent == probe:
            break
        probe = parent
    if not os.path.isdir(probe):
        raise UserError(f"{opt} {shown or repr(folder)}: {probe} is a file, not a folder")
    try:  # the one sure test (permissions, read-only mounts, /proc, root): create a file there
        fd, tmp = tempfile.mkstemp(prefix=".glmbench-probe-", dir=probe)
        os.close(fd)
        os.unlink(tmp)
    except OSError as e:
        raise UserError(f"{opt} {shown or repr(folder)}: cannot write in {probe} ({e.strerror or e})") from None


def _check_regular(path: str, opt: str) -> None:
    """An existing output (through its symbolic links) must be a plain file, --force or not: a named pipe
    was opened to be checked, and the command waited for a writer for ever (after a Ctrl-C it said the
    finished points were saved there); a link to a device (/dev/null) would have had the device replaced by
    a file. glmbench writes whole files and renames them into place."""
    real = rec._through_links(path)
    try:
        mode = os.stat(real).st_mode
    except OSError:
        return   # not there (a dangling link: written through it)
    if stat.S_ISREG(mode) or stat.S_ISDIR(mode):
        return   # (a folder: each caller says so in its own words)
    what = ("a named pipe (FIFO)" if stat.S_ISFIFO(mode) else "a socket" if stat.S_ISSOCK(mode)
            else "a device" if stat.S_ISCHR(mode) or stat.S_ISBLK(mode) else "not a regular file")
    shown = repr(path) + (f" (a link to {real})" if real != path else "")
    raise UserError(f"{opt} {shown} is {what}; glmbench writes a whole file and renames it into place, so it "
                    "cannot write there (give a file name)")


def _not_a_result(path: str) -> str | None:
    """Why the existing file `path` is not a glmbench records file (None when it is one, or empty)."""
    try:
        with open(path, newline="") as f:
            text = f.read()
    except UnicodeDecodeError:
        return "not text"
    except OSError as e:
        return e.strerror or str(e)
    if not text.strip():
        return None
    try:
        recs = rec.read_records(path)
    except (ValueError, TypeError, KeyError) as e:
        return str(e)
    if not recs and path.endswith(".csv") and "evidence" not in text.splitlines()[0].split(","):
        return "its header has no `evidence` column"
    return None


def _check_out_file(path: str, opt: str = "--out", force: bool = False, suffixes=(".json", ".csv"),
                    inputs=()) -> bool:
    """Check an output file before any work: its suffix, its folder (exists or can be created,
    writable), that it is none of the command's `inputs` (the files it reads: a model config, a hardware
    profile, --routing; --force or not), and that an existing file there is a glmbench result (else
    refused unless --force). Returns True when an existing file that is not a result is to be
    overwritten (--force)."""
    if not path:
        raise UserError(f"{opt} is empty; give a file name ending in {' or '.join(suffixes)}")
    if not path.endswith(suffixes):
        raise UserError(f"{opt} must end in {' or '.join(suffixes)}, got {path!r}")
    if os.path.isdir(path):
        raise UserError(f"{opt} {path!r} is a folder; give a file name ending in {' or '.join(suffixes)}")
    _check_regular(path, opt)
    _check_folder(os.path.dirname(path) or ".", opt, repr(path))
    f = _input_of(path, inputs)
    if f is not None:
        raise UserError(f"{opt} {path!r} is one of the files it reads ({f}); refusing to overwrite its own "
                        "input (give another file)")
    if os.path.exists(path):
        why = _not_a_result(path)
        if why is not None:
            if not force:
                raise UserError(f"{opt} {path!r} exists and is not a glmbench result file ({why}); "
                                "refusing to overwrite it (pass --force to replace it)")
            return True
    return False


def _check_out_folder(path: str, opt: str, force: bool, results=(), json_files=(), markdown=()) -> None:
    """Check an output folder before any work: not a file, creatable and writable; the files the
    command will replace there are its own kind (records files glmbench reads, JSON, a glmbench
    report.md) unless --force."""
    if not path:
        raise UserError(f"{opt} is empty; give a folder")
    if os.path.exists(path) and not os.path.isdir(path):
        raise UserError(f"{opt} {path!r} is a file, not a folder")
    _check_folder(path, opt)
    if force or not os.path.isdir(path):
        return
    for name in (*results, *json_files, *markdown):
        f = os.path.join(path, name)
        if not os.path.isfile(f):
            continue
        why = None
        if name in results:
            why = _not_a_result(f)
        else:
            try:
                with open(f) as fh:
                    text = fh.read()
                if name in json_files:
                    json.loads(text)
                elif not text.startswith("# glmbench"):
                    why = "not a glmbench report"
            except (OSError, UnicodeDecodeError, ValueError) as e:
                why = f"not JSON ({e})" if name in json_files else str(e)
        if why is not None:
            raise UserError(f"{opt} {path!r} holds {name}, which is not glmbench's ({why}); refusing to "
                            "overwrite it (pass --force to replace it)")


# the files glmbench reads from a model given as an HF folder (configs.load, gguf_file.folder_weights)
_MODEL_FOLDER_FILES = ("config.json", ".safetensors.index.json", ".safetensors")


def _input_of(path: str, inputs) -> str | None:
    """The input among `inputs` (the files a command reads) that the existing file `path` is, or the model
    folder (an HF folder) whose config.json or safetensors index `path` is; else None."""
    if not os.path.isfile(path):
        return None
    here = os.path.dirname(os.path.abspath(path))
    of_a_folder = os.path.basename(path) == "config.json" or path.endswith(_MODEL_FOLDER_FILES[1:])
    for f in inputs:
        if not isinstance(f, (str, os.PathLike)) or not f:
            continue
        if os.path.isfile(f) and os.path.samefile(f, path) or \
                of_a_folder and os.path.isdir(f) and os.path.samefile(f, here):
            return os.fspath(f)
    return None


def _check_own_out(path: str, opt: str, force: bool, *, kind: str, ours, inputs=(), input_dirs=(),
                   suffixes=None) -> None:
    """An output file of one kind (`kind`: "a truth table", "a hardware profile"), checked before any
    work as every --out is: not empty, its suffix (`suffixes`), not a folder, its folder creatable and
    writable; never one of the command's `inputs` (nor a file in its `input_dirs`), --force or not; an
    existing file that `ours(path)` does not take as its kind is refused unless --force."""
    if not path:
        raise UserError(f"{opt} is empty; give a file name" + (f" ending in {' or '.join(suffixes)}" if suffixes else ""))
    if suffixes and not path.endswith(tuple(suffixes)):
        raise UserError(f"{opt} must end in {' or '.join(suffixes)}, got {path!r}")
    if os.path.isdir(path):
        raise UserError(f"{opt} {path!r} is a folder; give a file name")
    _check_regular(path, opt)
    _check_folder(os.path.dirname(path) or ".", opt, repr(path))
    if not os.path.exists(path):
        return
    named = [f for f in inputs if f and os.path.isfile(f)]
    for d in input_dirs:
        for root, _, names in os.walk(d):
            named += [os.path.join(root, n) for n in names]
    mine = _input_of(path, [f for f in inputs if f and os.path.isdir(f)])    # (a model folder's file)
    for f in named + ([mine] if mine else []):
        if os.path.samefile(f, path) or f == mine:
            raise UserError(f"{opt} {path!r} is one of the files it reads ({f}); refusing to overwrite its own "
                            "input (give another file)")
    if not force and not ours(path):
        raise UserError(f"{opt} {path!r} exists and is not {kind} glmbench wrote; refusing to overwrite it "
                        "(pass --force to replace it)")


def _is_truth_table(path: str) -> bool:
    if not os.path.getsize(path):
        return True
    try:
        with open(path, encoding="utf-8-sig") as f:
            return f.readline().startswith("# Truth table")
    except (OSError, UnicodeDecodeError):
        return False


def _is_hardware_profile(path: str) -> bool:
    if not os.path.getsize(path):
        return True
    try:
        hardware.load_profile(path)
        return True
    except Exception:   # noqa: BLE001  (any reason it is not one: it is not ours to replace)
        return False


_HELD_LOCKS: set = set()     # the descriptors of the folder locks this process holds (_folder_held)


def _drop_held_locks_in_child() -> None:
    """In a forked child (search's worker pool): close its copies of the folder locks' descriptors. An flock
    belongs to the open file, which fork shares: a worker left orphaned by a killed command (kill -9, the OOM
    killer; it waits on its task queue for ever) held the lock, and every later command into the folder waited
    for ever. The parent's own descriptor keeps the lock while the parent lives."""
    for fd in list(_HELD_LOCKS):
        with contextlib.suppress(OSError):
            os.close(fd)
    _HELD_LOCKS.clear()


if hasattr(os, "register_at_fork"):
    os.register_at_fork(after_in_child=_drop_held_locks_in_child)


@contextlib.contextmanager
def _folder_held(path: str, opt: str = "--out"):
    """One glmbench command at a time writes an --out folder (report, trace, search): an exclusive lock
    on the folder's sidecar lock file (`.<folder>.lock` beside it, as a records file has; the folder holds
    only what the command writes), held for the `with` block; a second command waits for the first
    (saying so), then writes a whole folder of its own (a search resumes from the first's setups.json).
    Two at once left a folder mixing both (report.md of one, records of the other) and a search's
    setups.json held one search's evaluations, the other's lost. A folder this created is removed again
    when the block fails before writing into it. No lock where fcntl is missing, or where the folder's
    parent takes no file (the folder is still written)."""
    made = not os.path.isdir(path)
    os.makedirs(path, exist_ok=True)
    ok, fd = False, None
    try:
        if rec.fcntl is not None:
            try:
                fd = os.open(rec.lock_path(os.path.abspath(path)), os.O_RDWR | os.O_CREAT | getattr(os, "O_CLOEXEC", 0),
                             0o666)
            except OSError:
                fd = None
        if fd is not None:
            try:
                rec.fcntl.flock(fd, rec.fcntl.LOCK_EX | rec.fcntl.LOCK_NB)
            except BlockingIOError:
                print(f"{opt} {path}: another glmbench command is writing into this folder; waiting for it to "
                      "finish", file=sys.stderr, flush=True)
                rec.fcntl.flock(fd, rec.fcntl.LOCK_EX)
            _HELD_LOCKS.add(fd)
        yield
        ok = True
    finally:
        if fd is not None:
            _HELD_LOCKS.discard(fd)
            os.close(fd)
        if made and not ok:
            with contextlib.suppress(OSError):
                os.rmdir(path)      # only if still empty


def _resume_line(path: str, before: list[dict], recs: list[dict], key) -> str:
    """What a resumed run did with its file, and what the file holds now."""
    n = rec.resume_summary(before, recs, key)
    held = rec.count_records(path)  # under the file's lock: what it holds now, other writers' records too
    other = held - len(recs)
    return (f"wrote {len(recs)} records to {path} ({n['computed']} computed, {n['replaced']} recomputed because "
            f"their inputs changed, replacing the old records, "
            + (f"{n['retimed']} retimed because they were marked unstable, " if n["retimed"] else "")
            + (f"{n['edited']} recomputed because the stored record was not what its inputs give (a field changed "
               "by hand?), " if n["edited"] else "")
            + f"{n['reused']} reused); the file holds {held} records"
            + (f" ({other} of points outside this run)" if other else ""))


def _read_before(path) -> list[dict]:
    return rec.read_existing(path) if path else []


# ---- output helpers -----------------------------------------------------------------------------
def _emit_records(records, args, out_path=None):
    """Write records where the user asked: --out FILE (.csv/.json; what was written said on
    stderr), and on stdout --json / --csv, else a table, with or without --out (sweep and measure
    alike, README)."""
    if out_path:
        rec.write_records(out_path, records)
        print(f"wrote {len(records)} records to {out_path}", file=sys.stderr)
    if getattr(args, "json", False):
        sys.stdout.write(rec.to_json(records))
    elif getattr(args, "csv", False):
        sys.stdout.write(rec.to_csv(records))
    else:
        print(format_table(records))


def _plain_csv(rows: list[dict]) -> str:
    """CSV of a summary table, columns in the table's own order (records.to_csv puts the
    llama-bench columns first, which a models or hardware table does not have)."""
    buf = io.StringIO()
    if rows:
        w = csv.DictWriter(buf, fieldnames=list(rows[0]), lineterminator="\n")
        w.writeheader()
        w.writerows(rows)
    return buf.getvalue()


def _fmt(v) -> str:
    if v is None:
        return ""
    if isinstance(v, float):
        if v != v:
            return "nan"
        a = abs(v)
        if a >= 1e4 or v == int(v) and a < 1e15:
            return f"{v:,.0f}" if a >= 1e4 else f"{v:g}"
        return f"{v:.3g}" if a < 1 else f"{v:.2f}"
    if isinstance(v, int) and not isinstance(v, bool) and abs(v) >= 1e4:
        return f"{v:,}"
    return str(v)


def format_table(rows: list[dict], columns: list[str] | None = None) -> str:
    """A plain-text table (markdown pipe style, so it pastes into an issue)."""
    if not rows:
        return "(no records)"
    cols = columns or _table_columns(rows)
    cells = [[_band(r) if c == "band" and "cv_error" in r else _fmt(r.get(c)) for c in cols] for r in rows]
    widths = [max(len(c), *(len(row[i]) for row in cells)) for i, c in enumerate(cols)]

    def line(vals):
        return "| " + " | ".join(v.rjust(w) if _numeric(v) else v.ljust(w) for v, w in zip(vals, widths)) + " |"

    sep = "|" + "|".join("-" * (w + 2) for w in widths) + "|"
    return "\n".join([line(cols), sep] + [line(r) for r in cells])


_NUMERIC = re.compile(r"[-+]?[\d,]*\.?\d+(e[-+]?\d+)?%?x?")


def _numeric(s: str) -> bool:
    return bool(_NUMERIC.fullmatch(s))


# the rig's split and link and llama.cpp's offload settings where a record has them: a 2-card or
# offloaded figure without them does not say what it is for
_SHOW = ("evidence", "test", "model", "device", "n_cards", "split", "link_gbps", "weights", "type_k", "runtime",
         "n_gpu_layers", "n_cpu_moe", "override_tensor", "host", "n_prompt",
         "n_depth", "concurrency", "avg_ts", "band", "stddev_ts", "ttft_s", "mem_bytes", "fits", "beyond_native",
         "aggregate_tok_s")


def _band(r: dict) -> str:
    """A calibrated speed's cross-validated band (avg_ts_lo/hi from cv_error: the runtime model's
    leave-one-source-out error for the record's test and model class) as ±percent."""
    e = r.get("cv_error")
    return "" if e is None or r.get("avg_ts_lo") is None else f"±{100 * e:.0f}%"


def _table_columns(rows):
    keys = set().union(*rows)
    cols = [c for c in _SHOW if (c == "band" and any(_band(r) for r in rows))
            or (c == "split" and any((r.get("n_cards") or 1) > 1 and r.get("split") not in (None, "", "none")
                                     for r in rows))
            or (c not in ("band", "split") and c in keys and any(r.get(c) not in (None, "") for r in rows))]
    return cols or rec.columns(rows)


# ---- study options shared by report and sweep ----------------------------------------------------
# The study's defaults are Study's own (glmbench/report/study.py): the CLI reads them from there.
_STUDY = Study()
DEFAULT_MODELS = _STUDY.models


def _add_study_options(p, *, report: bool):
    g = p.add_argument_group("study")
    g.add_argument("--model", action="append", metavar="NAME|config.json",
                   help=f"model to include; repeat for several (default: {' and '.join(DEFAULT_MODELS)})")
    d = _STUDY
    g.add_argument("--hardware", default=d.hardware, metavar="GPU|profile.json",
                   help="GPU (see `glmbench hardware`: a key, or the name as tools print it, such as "
                        "'NVIDIA GeForce RTX 3090 Ti' or 'A100 80 GB'), a hardware profile .json/.toml, or 'host' for "
                        f"this machine's CPU (default: {d.hardware})")
    g.add_argument("--cards", type=INTS, default=list(d.cards), metavar="N[,N...]",
                   help=f"card counts to compare (default: {','.join(map(str, d.cards))})")
    g.add_argument("--link", type=POSITIVE, default=None, metavar="GB/s",
                   help=f"card-to-card bandwidth for multi-card rigs (default: the study's {d.link_gbps:g} on its "
                        f"{d.hardware} pair, where it was measured; for another card its profile's stated link, "
                        f"else {d.link_gbps:g}; stderr says which)")
    g.add_argument("--split", default=d.split, choices=("layer", "tensor"),
                   help=f"how a multi-card rig splits the model (default: {d.split})")
    g.add_argument("--weights", default=None, metavar="FORMAT",
                   help=f"weight format (default: {d.weights}, 4.5 bits; a model file, .gguf or HF folder, "
                        "predicts at its own stored types)")
    g.add_argument("--kv", default=d.kv, metavar="FORMAT", help=f"KV-cache format (default: {d.kv})")
    g.add_argument("--depths", type=DEPTHS, default=list(d.depths), metavar="LIST",
                   help="context depths, e.g. 1K..128K or 512,4K,32K (default: 1K..128K)")
    g.add_argument("--runtime", default=d.runtime, metavar="PROFILE",
                   help="runtime profile of the cost model: ideal, typical, a runtime model fitted to public results "
                        "(llama.cpp, ik_llama.cpp, llama.cpp-vulkan, vllm; options as name[fa=1,ubatch=2048,mla=3,era=...] "
                        "or --fa/--ubatch; llama.cpp-vulkan also coopmat=nv2|khr, fork=mainline|ik_llama.cpp; "
                        "an option a runtime lacks is an error naming those it has), sglang (a runtime model fitted to "
                        "nothing: typical's physics with SGLang's defaults), a shipped calibrated profile "
                        "(ik-llama-before-mla-fix, ik-llama-mla-fixed, llama-cpp-1x3090), or calibrated:<file> "
                        f"(default: {d.runtime})")
    g.add_argument("--fa", type=int, choices=(0, 1), default=None,
                   help="flash attention off/on for a runtime model (llama.cpp, ik_llama.cpp, llama.cpp-vulkan), "
                        "as llama-bench -fa (default: the runtime model's)")
    g.add_argument("--ubatch", "-ub", type=int, default=None, metavar="N",
                   help="the runtime model's physical prefill batch (llama.cpp -ub; vLLM max_num_batched_tokens)")
    g.add_argument("--concurrency", type=INTS, default=list(d.concurrency), metavar="LIST",
                   help="concurrent streams for the serving tests (default: 1,2,4,...,64)")
    g.add_argument("--serve-context", type=_argtype(parse_tokens, "tokens"), default=d.serve_context, metavar="TOKENS",
                   help="context per stream for the serving tests (default: 4K)")
    g.add_argument("--n-prompt", type=_argtype(_positive_tokens, "tokens"), default=d.n_prompt, metavar="N",
                   help="pp of N tokens at each depth, as sweep-bench and llama-bench -p N -d do (default: pp from "
                        "an empty cache at each depth as the prompt length)")
    g.add_argument("--n-gen", type=_argtype(_positive_tokens, "tokens"), default=d.n_gen, metavar="N",
                   help=f"tokens of each tg point: tg<N> @ d, the mean rate over its N steps as llama-bench counts "
                        f"it (default: {d.n_gen})")
    o = p.add_argument_group("partial offload (llama.cpp's, on one-card setups)")
    o.add_argument("--n-gpu-layers", "-ngl", type=int, default=None, metavar="N",
                   help="the last N decoder layers on the card, the rest (and their KV cache) in host memory; "
                        "the output layer is on the card when N > the layer count (default: all)")
    o.add_argument("--n-cpu-moe", type=int, default=0, metavar="N",
                   help="the routed-expert tensors of the first N layers in host memory")
    o.add_argument("--cpu-moe", action="store_true", help="every layer's routed experts in host memory")
    o.add_argument("--override-tensor", "-ot", action="append", default=[], metavar="PATTERN=CPU",
                   help="keep the expert tensors whose GGUF name matches the regex PATTERN in host memory "
                        "(e.g. 'blk\\.[0-9]\\.ffn_.*_exps=CPU'); repeatable")
    o.add_argument("--host", default=None, metavar="NAME|host|profile.json",
                   help="the host that holds and runs offloaded weights: "
                        f"{', '.join(hardware.list_hosts())}, 'host' (this machine, measured) or a "
                        f"profile file (default: {hardware.DEFAULT_HOST})")
    g.add_argument("--routing", metavar="FILE",
                   help="measured records with `routing_counts` (glmbench measure FILE --routing-stats): the "
                        "one --model's experts are routed with those frequencies instead of uniformly")
    if report:
        o.add_argument("--offload", action="store_true",
                       help="add to the memory section, for one card, the fastest offload setting that fits "
                            "each context")
        g.add_argument("--measured", action="append", metavar="FILE",
                       help="measured records to draw as markers and set beside the predictions: `glmbench measure`'s, "
                            "or llama-bench/sweep-bench/batched-bench/vllm/sglang output (a file that names no model "
                            "takes the one --model); repeatable")


def _runtime_with_options(args) -> str:
    """--runtime with --fa / --ubatch folded in as the runtime model's options ("llama.cpp[fa=1]");
    an option the runtime does not have is one UserError naming it."""
    rt = args.runtime
    opts = {k: v for k, v in (("fa", getattr(args, "fa", None)), ("ubatch", getattr(args, "ubatch", None))) if v is not None}
    if not opts:
        return rt
    if rt.endswith("]") and "[" in rt:
        # an option the bracket already sets: the same value once; another value is a contradiction
        given = dict(kv.split("=", 1) for kv in rt[rt.index("[") + 1:-1].replace(" ", "").split(",") if "=" in kv)
        for k in [k for k in opts if k in given]:
            if given[k] != str(opts[k]):
                raise UserError(f"--{k} {opts[k]} contradicts --runtime {args.runtime} ({k}={given[k]}): give it once")
            del opts[k]
        if not opts:
            return rt
        rt = rt[:-1] + "," + ",".join(f"{k}={v}" for k, v in opts.items()) + "]"
    else:
        rt = rt + "[" + ",".join(f"{k}={v}" for k, v in opts.items()) + "]"
    base = rt.split("[", 1)[0]
    from glmbench.predict import costmodel as _cm
    from glmbench.predict import runtime as _runtime
    try:
        if base in _cm.list_runtimes() and not _cm.load_runtime(base).options:
            raise UserError(f"--runtime {base}: {', '.join('--' + k for k in opts)} applies to the runtime models "
                            f"({', '.join(_runtime.names())}), not to the {base!r} profile")
        _cm.load_runtime(rt)
    except ValueError as e:
        raise UserError(str(e)) from None
    return rt


def _default_link(args) -> float:
    """--link, else the link a multi-card rig of --hardware has: the study's measured 1.4 GB/s on
    the study's own card, the profile's stated link on another (hardware.get_gpu), else the
    study's; said on stderr when a rig of several cards uses it."""
    if args.link is not None:
        return args.link
    d = _STUDY
    link, why = d.link_gbps, f"the study's {d.link_gbps:g} GB/s (measured between its two {d.hardware} cards)"
    study_card = hardware._norm(str(args.hardware)) == d.hardware
    if not hardware.is_host(args.hardware) and not study_card:
        try:
            gpu = hardware.get_gpu(args.hardware)
        except (ValueError, TypeError, OSError):
            return link   # the study reports a bad --hardware itself
        # the study's card by another of its names ("NVIDIA GeForce RTX 3090", as tools print it): the
        # study's measured link, as by its key
        study_card = gpu is not None and gpu.key == d.hardware
    if not hardware.is_host(args.hardware) and not study_card:
        if gpu is not None and gpu.link_gbps:
            link, why = gpu.link_gbps, f"{gpu.name}'s stated link, {gpu.link_gbps:g} GB/s (its profile)"
        elif gpu is not None:
            why = f"the study's {d.link_gbps:g} GB/s ({gpu.name}'s profile states no link)"
    if any(n > 1 for n in args.cards) and (not study_card or tuple(args.cards) != tuple(d.cards)):
        _note(args, f"note: card-to-card link: {why}; --link GB/s sets another")
    return link


def _note(args, line: str) -> None:
    """Keep a note (a card-to-card link assumed, offload flags that apply to some setups, a model
    file's stored types) for _say_notes: said once the command has passed its checks, so that a
    bad option or file stays a one-line error, never notes and then an error."""
    args._notes = getattr(args, "_notes", []) + [line]


def _say_notes(args) -> None:
    """The notes _note kept, on stderr, once (each command calls it after its last check, before
    its work; main() says any left once the command has succeeded, and none after an error)."""
    for line in getattr(args, "_notes", ()):
        print(line, file=sys.stderr)
    args._notes = []


def _study_from_args(args):
    """The Study the options describe (checked); its notes kept for _say_notes."""
    args.runtime = _runtime_with_options(args)
    kw = dict(hardware=args.hardware, cards=tuple(args.cards), link_gbps=_default_link(args), split=args.split,
              weights=args.weights or _STUDY.weights, kv=args.kv, depths=tuple(args.depths), runtime=args.runtime,
              n_prompt=args.n_prompt, n_gen=args.n_gen)
    if args.model:
        kw["models"] = tuple(args.model)
    for m in kw.get("models", ()):   # a model file predicts at its stored types: say so when --weights differs
        note = configs.weights_notice(m, args.weights)
        if note:
            _note(args, f"notice: {note}")
    if getattr(args, "concurrency", None):
        kw["concurrency"] = tuple(args.concurrency)
    if getattr(args, "serve_context", None) is not None:
        kw["serve_context"] = args.serve_context
    if getattr(args, "routing", None):
        if not os.path.isfile(args.routing):
            raise UserError(f"--routing {args.routing}: no such file")
        kw["routing"] = args.routing
    ot = []
    for spec in args.override_tensor:
        pat, eq, buf = spec.rpartition("=")
        if not eq or not pat:
            raise UserError(f"--override-tensor {spec!r}: expected PATTERN=CPU")
        if buf.upper() != "CPU":
            raise UserError(f"--override-tensor {spec!r}: only CPU (host memory) is modelled, got {buf!r}")
        ot.append(pat)
    if args.n_gpu_layers is not None or args.n_cpu_moe or args.cpu_moe or ot:
        flags = ", ".join(f for f, on in (("--n-gpu-layers", args.n_gpu_layers is not None),
                                          ("--n-cpu-moe", bool(args.n_cpu_moe)), ("--cpu-moe", args.cpu_moe),
                                          ("--override-tensor", bool(ot))) if on)
        many = sorted({n for n in args.cards if n > 1})
        if 1 not in args.cards:
            raise UserError(f"{flags}: partial offload is priced on one-card setups only, and --cards "
                            f"{','.join(map(str, args.cards))} has none; use --cards 1")
        if many:
            _note(args, f"note: {flags} applies to the one-card setups; the "
                        f"{'/'.join(map(str, many))}-card ones hold every layer on their cards")
        n_cpu_moe = args.n_cpu_moe
        if args.cpu_moe:
            n_cpu_moe = max(configs.load(m).n_layers for m in kw.get("models", Study().models))
        kw["offload"] = dict(n_gpu_layers=args.n_gpu_layers, n_cpu_moe=n_cpu_moe, override_tensor=tuple(ot))
    if args.host is not None:
        kw["host"] = args.host
    if getattr(args, "offload", False):
        kw["offload_table"] = True
    study = Study(**kw)
    setups = study.setups()  # every model, format and GPU checked here, before a command's notes or work
    note = _fitted_elsewhere(setups)
    if note:
        _note(args, note)
    return study


def _fitted_elsewhere(setups) -> str | None:
    """A note where a calibrated profile (`glmbench calibrate`'s, or a shipped one: not a runtime model fitted
    to the public set) prices a model or card none of its points ran: its band is its error on those points
    (calibration.points), never measured on these."""
    if not setups:
        return None
    prof = setups[0].runtime
    pts = [p for p in (prof.calibration or {}).get("points") or () if isinstance(p, dict)]
    if not prof.calibrated or prof.fitted_to_gpus or not pts:
        return None
    models = {p.get("model") for p in pts}
    cards = [str(p.get("setup") or "") for p in pts]
    new_models = sorted({s.model.name for s in setups if s.model.name not in models})
    new_cards = sorted({s.gpu.name for s in setups if not any(s.gpu.name in c for c in cards)})
    if not new_models and not new_cards:
        return None
    seen = "; ".join(dict.fromkeys(c.rsplit(",", 1)[0] for c in cards if c)) or ", ".join(sorted(map(str, models)))
    what = " and ".join(x for x in (", ".join(new_models), ", ".join(new_cards)) if x)
    return (f"note: --runtime {prof.name} was fitted on {len(pts)} point{'s' if len(pts) > 1 else ''} of {seen}; "
            f"none ran {what}: those predictions extrapolate the fit, and their band is its cross-validated error "
            "on its own points, not measured there")


# ---- commands -----------------------------------------------------------------------------------
def _not_written(out: str, names, opt: str, inputs, who: str) -> None:
    """None of `inputs` (files a command reads, given by `opt`) is one of the files `names` it writes into
    its --out folder `out`: refused (a one-line error) before any work."""
    for path in inputs:
        if not path or not os.path.isfile(path) or not os.path.isdir(out):
            continue
        for name in names:
            f = os.path.join(out, name)
            if os.path.isfile(f) and os.path.samefile(path, f):
                raise UserError(f"{opt} {path}: a file of --out {out!r}, which {who} rewrites; refusing to modify "
                                "its own input (copy it elsewhere, or give another --out)")


def cmd_report(args) -> int:
    study = _study_from_args(args)
    out = args.out
    _check_out_folder(out, "--out", args.force, results=("records.csv", "records.json"),
                      json_files=("decisions.json", "ceilings.json"), markdown=("report.md",))
    extra = []
    # a file that does not say which model it measured (a sweep-bench table) is the study's model
    # when the study has one
    one = study.models[0] if len(study.models) == 1 else None
    from glmbench.report import workload as _workload
    # the files of --out the report writes (or removes); another file there (a measurement kept beside the
    # report, rep/lab.json) is the user's own, read and left as it is. (A --measured rep/records.json was
    # rewritten with the study's records added: each rerun read those back as measured.)
    writes = ("records.csv", "records.json", "report.md", "decisions.json", "ceilings.json", "findings.json",
              "offload.json", *_workload.FILES)
    _not_written(out, writes, "--measured", args.measured or (), "the report")
    _not_written(out, writes, "--trace", [getattr(args, "trace", None)], "the report")
    for path in args.measured or []:
        extra += _read(path, default_model=one, need_model=True, option="--measured")
    trace, opts = (None, None)
    if getattr(args, "trace", None):
        trace, opts = _load_trace(args.trace), _trace_options(args)
    _say_notes(args)   # every option and file checked: the notes, then the work
    with _folder_held(out):
        result = report.run(study, out, extra_records=extra, progress=not args.quiet, trace=trace, trace_options=opts)
    print(f"report written to {os.path.join(out, 'report.md')} "
          f"({len(result['charts'])} charts, {result['n_records']} records)")
    return 0


def _add_trace_options(p):
    from glmbench.predict import replay as rp
    g = p.add_argument_group("trace replay")
    g.add_argument("--rate-scale", type=POSITIVE, default=1.0, metavar="X",
                   help="requests arrive X times as fast as in the trace (default: 1)")
    g.add_argument("--no-prefix-cache", action="store_true",
                   help="replay without prefix caching only (default: with and without, when the trace has block hashes)")
    g.add_argument("--ttft-slo", type=POSITIVE, default=rp.DEFAULT_TTFT_SLO_S, metavar="S",
                   help=f"time-to-first-token target in seconds (default: {rp.DEFAULT_TTFT_SLO_S:g})")
    g.add_argument("--tpot-slo", type=POSITIVE, default=rp.DEFAULT_TPOT_SLO_S, metavar="S",
                   help=f"time-per-output-token target in seconds (default: {rp.DEFAULT_TPOT_SLO_S:g})")
    _server_args(g, rp.ServerConfig())


def _server_args(g, d) -> None:
    """The replayed server's batch limits (trace, search); d: the ServerConfig holding the defaults."""
    g.add_argument("--max-num-seqs", type=_argtype(_positive_int, "a whole number >= 1"), default=d.max_num_seqs,
                   metavar="N", help=f"requests running at once (default: {d.max_num_seqs})")
    g.add_argument("--max-batched-tokens", type=_argtype(_positive_int, "a whole number >= 1"),
                   default=d.max_batched_tokens, metavar="N",
                   help=f"tokens per step, decodes plus prompt chunks (default: {d.max_batched_tokens})")


def _positive_int(text: str) -> int:
    try:
        v = int(text)
    except ValueError:
        raise ValueError(f"got {text!r}") from None      # (not int()'s "invalid literal for int() with base 10")
    if v < 1:
        raise ValueError(f"got {text!r}")
    return v


def _load_trace(trace):
    """The trace (a built-in name or a file) read once, before any work: a bad one is the error."""
    from glmbench.predict import traces
    return traces.check_replayable(traces.load(trace))


def _trace_options(args) -> dict:
    from glmbench.predict import replay as rp
    cfg = rp.ServerConfig(max_num_seqs=args.max_num_seqs, max_batched_tokens=args.max_batched_tokens)
    return dict(rate_scale=args.rate_scale, prefix_cache=(False,) if args.no_prefix_cache else (True, False),
                ttft_slo_s=args.ttft_slo, tpot_slo_s=args.tpot_slo, config=cfg)


def cmd_trace(args) -> int:
    from glmbench.report import workload
    study = _study_from_args(args)
    if args.out:
        _check_out_folder(args.out, "--out", False)
        _not_written(args.out, workload.FILES, "trace", [args.trace], "the replay")
    trace, opts = _load_trace(args.trace), _trace_options(args)
    _say_notes(args)
    # per-request results only for --out's trace_requests.csv (a million requests x 4 setups)
    res = workload.trace_study(study, trace, progress=not args.quiet, keep_results=bool(args.out),
                               **opts)
    if args.out:
        with _folder_held(args.out):
            workload.write(res, args.out)
    if args.json:
        print(json.dumps(workload._finite(workload.public(res)), indent=1))
        return 0
    if args.csv:
        print(workload._csv(res["buckets"]), end="")
        return 0
    print(workload.render(res))
    if args.out:
        print(f"trace replay written to {args.out} (trace.json, trace_runs.csv, trace_buckets.csv, "
              f"trace_requests.csv, trace_winners.png, trace_latency.png)")
    return 0


def _words(text: str) -> list[str]:
    vals = [x.strip() for x in str(text).split(",") if x.strip()]
    if not vals:
        raise ValueError(f"expected names separated by commas, got {text!r}")
    return vals


def _share(text: str) -> float:
    v = positive_float(text)
    if v > 1:
        raise ValueError(f"must be a share in (0, 1], got {text!r}")
    return v


def _tolerance(text: str) -> float:
    """A relative tolerance, 0 < F < 1 (search's rate_tol: 1 would accept any bracket)."""
    v = positive_float(text)
    if v >= 1:
        raise ValueError(f"must be in (0, 1), got {text!r}")
    return v


def cmd_search(args) -> int:
    from glmbench.predict import prices, search
    from glmbench.report import search as rsearch
    if args.decision_tree:
        pt = prices.load(args.prices, years=args.years, kwh_usd=args.kwh_usd, basis=args.basis)
        if args.out:
            _check_out_folder(args.out, "--out", args.force, markdown=("decision_tree.md",))
        rows = rsearch.decision_tree(workers=args.workers, ray=args.ray, progress=not args.quiet, price_table=pt,
                                     max_rate=not args.no_max_rate)
        text = rsearch.render_tree(rows)
        if args.json:
            print(json.dumps([rsearch._finite({k: v for k, v in r.items() if k != "result"}) for r in rows], indent=1))
        else:
            print(text, end="")
        if args.out:
            with _folder_held(args.out):
                rec.atomic_write_text(os.path.join(args.out, "decision_tree.md"), text.replace(
                    "# The study's", "# glmbench search: the study's", 1))
                for r in rows:
                    rsearch.write(r["result"], os.path.join(args.out, re.sub(r"[^a-z0-9]+", "-", r["shape"].lower())))
            print(f"written to {args.out} (decision_tree.md, one search folder per workload)")
        return 0
    for opt in ("trace", "ttft_slo", "tpot_slo", "out"):
        if getattr(args, opt) is None:
            raise UserError(f"glmbench search: --{opt.replace('_', '-')} is required (or --decision-tree)")
    _check_out_folder(args.out, "--out", args.force, results=("setups.json", "setups.csv"),
                      json_files=("search.json",), markdown=("search.md",))
    gpus = None if args.gpus in (None, ["all"]) else args.gpus
    pt = prices.load(args.prices, years=args.years, kwh_usd=args.kwh_usd, basis=args.basis,
                     gpus=[g for g in (gpus or ()) if g.endswith((".json", ".toml"))])
    obj = search.Objective(ttft_slo_s=args.ttft_slo, tpot_slo_s=args.tpot_slo, attainment=args.attainment,
                           rate_scale=args.rate_scale, max_rate=not args.no_max_rate, rate_tol=args.rate_tol,
                           max_num_seqs=args.max_num_seqs, max_batched_tokens=args.max_batched_tokens,
                           prefix_cache=not args.no_prefix_cache)
    models = args.models or configs.builtin_names()
    with _folder_held(args.out):
        res = search.search(args.trace, obj, models=models, gpus=gpus, cards=args.cards, weights=args.weights,
                            kv=args.kv, splits=args.split, runtimes=args.runtime, link_gbps=args.link,
                            price_table=pt, requests=args.requests, workers=args.workers, ray=args.ray,
                            store=os.path.join(args.out, "setups.json"), progress=not args.quiet)
        rsearch.write(res, args.out)
    for n in res.trace.get("notices") or ():
        print(f"note: {n}", file=sys.stderr)
    if args.json:
        print(json.dumps(rsearch.summary(res), indent=1))
        return 0
    print(rsearch.answer(res).replace("**", ""))
    print(rsearch.pruning_line(res) + ".")
    print(rsearch.table(rsearch.table_rows(res)))
    print(f"written to {args.out} ({', '.join(rsearch.FILES)})")
    return 0


def _runtime_file(name) -> str | None:
    """The file a --runtime (or --measured-calibrated) names: calibrated:FILE, or a .json / .toml path; None for a
    built-in or shipped profile's name."""
    if not isinstance(name, str) or not name:
        return None
    path = name[len("calibrated:"):] if name.startswith("calibrated:") else name
    return path if os.path.isfile(path) else None


def _study_inputs(args) -> list:
    """The files a sweep reads: model configs, a hardware or host profile, --routing's records, the runtime
    profile."""
    return [*(args.model or ()), args.hardware, getattr(args, "host", None), getattr(args, "routing", None),
            _runtime_file(getattr(args, "runtime", None))]


def cmd_sweep(args) -> int:
    study = _study_from_args(args)
    tests = tuple(t.strip() for t in args.tests.split(",") if t.strip())
    out = args.out
    if out is not None and _check_out_file(out, force=args.force, inputs=_study_inputs(args)):
        # --force: not a records file, replaced rather than resumed from (a symbolic link's target: the link stays)
        os.unlink(rec._through_links(out))
    resumable = out if out and out.endswith(".json") else None
    before = _read_before(resumable)
    _say_notes(args)
    recs = report.sweep(study, tests=tests, progress=not args.quiet, out=resumable)
    if resumable:
        from glmbench.predict import sweep as sw
        print(_resume_line(out, before, recs, sw._key), file=sys.stderr)
    _emit_records(recs, args, None if resumable else out)
    return 0


def cmd_calibrate(args) -> int:
    from glmbench.predict import calibrate as cal  # scipy: loaded only for this command
    _check_profile_out(args.out, args.files, args.force,  # before reading, measuring or fitting
                       others=[args.model, args.hardware, _runtime_file(args.base)])
    hw = args.hardware
    if hardware.is_host(hw):
        hw = _host_now(f"--hardware {args.hardware}", "`glmbench hardware --save-host FILE.json` fixes one "
                                                      "profile for calibrating and predicting")
    notices: list = []
    pts = cal.load_points(args.files, notices, model=args.model, hardware_=hw, cards=args.cards,
                          link=args.link, split=args.split, weights=args.weights, kv=args.kv,
                          mla_strategy=args.mla_strategy, exclude_unstable=args.exclude_unstable)
    for n in notices:
        if hw and n.endswith("calibrate needs --hardware"):
            continue        # --hardware says the card the file does not
        print(n if n.startswith(("note", "notice", "warning")) else f"note: {n}", file=sys.stderr)
    note = cal.base_runtime_note(pts, args.base)
    if note:
        print(note, file=sys.stderr)
    name = args.name or os.path.splitext(os.path.basename(args.out))[0]
    fit = cal.calibrate(pts, name=name, base=args.base, progress=not args.quiet, cv=args.cv)
    print(fit.table())
    cal.write_profile(args.out, fit)
    print(f"wrote the calibrated profile to {args.out} (use it as --runtime calibrated:{args.out})", file=sys.stderr)
    return 0


def _check_profile_out(path: str, inputs, force: bool, others=()) -> None:
    """calibrate --out: the rules of every --out (suffix, folder, no silent overwrite of what is not
    ours unless --force), checked first; and never one of the command's own input files (`inputs`, the
    measurements; `others`: --model's config or folder, --hardware's profile, --base's profile file)."""
    if not path:
        raise UserError("--out is empty; give a file name ending in .json (a runtime profile)")
    if not path.endswith(".json"):
        raise UserError(f"--out must end in .json (a runtime profile), got {path!r}")
    if os.path.isdir(path):
        raise UserError(f"--out {path!r} is a folder; give a file name ending in .json")
    _check_regular(path, "--out")
    _check_folder(os.path.dirname(path) or ".", "--out", repr(path))
    if not os.path.exists(path):
        return
    for f in inputs:
        if os.path.exists(f) and os.path.samefile(f, path):
            raise UserError(f"--out {path!r} is one of the measurement files it reads; refusing to overwrite "
                            "its own input (give another --out)")
    f = _input_of(path, others)
    if f is not None:
        raise UserError(f"--out {path!r} is one of the files it reads ({f}); refusing to overwrite its own input "
                        "(give another --out)")
    if force:
        return
    from glmbench.predict import costmodel
    try:
        with open(path, encoding="utf-8") as fh:
            costmodel.runtime_from_dict(json.load(fh), where=path)
    except (OSError, UnicodeDecodeError, ValueError, TypeError, KeyError, AttributeError) as e:
        raise UserError(f"--out {path!r} exists and is not a runtime profile glmbench wrote ({e}); refusing to "
                        "overwrite it (pass --force to replace it)") from None


def _host_now(what: str, then: str):
    """This machine's CPU as a hardware profile, its ceilings measured now (needs the C core); says so."""
    from glmbench.measure.machine import host_profile
    gpu = host_profile()
    print(f"{what}: measured this machine now ({gpu.name}: {gpu.bandwidth_gbs:.1f} GB/s triad, "
          f"{gpu.tflops['fp32'] * 1000:.0f} GFLOP/s FMA); {then}", file=sys.stderr)
    return gpu


def cmd_truth_table(args) -> int:
    from glmbench.predict import calibrate as cal  # scipy: loaded only for this command
    from glmbench.predict import costmodel
    from glmbench.report import truth
    if args.out is not None:
        _check_own_out(args.out, "--out", args.force, kind="a truth table", ours=_is_truth_table,
                       inputs=[*(args.measured or ()), args.measured_hardware, args.measured_model,
                               _runtime_file(args.measured_calibrated)],
                       input_dirs=[*(args.host or ()), *(args.llama_bench or ())])
    extra = []
    for f in args.measured or []:
        prof = costmodel.load_runtime(args.measured_calibrated) if args.measured_calibrated else None
        extra.append(truth.Source(args.measured_label or f"{os.path.basename(f)} (measured)", f, prof,
                                  hardware=args.measured_hardware, model=args.measured_model,
                                  note=f"hardware {args.measured_hardware}" if args.measured_hardware else ""))
    try:
        rows, sources = truth.build(args.host or (), extra, progress=not args.quiet,
                                    llama_bench_dirs=args.llama_bench or ())
    except cal.CalibrationError as e:
        raise UserError(str(e)) from None
    parts = ["glmbench truth-table"]
    for flag, vals in (("--host", args.host), ("--llama-bench", args.llama_bench), ("--measured", args.measured)):
        parts += [f"{flag} {v}" for v in vals or []]
    for flag, v in (("--measured-hardware", args.measured_hardware), ("--measured-model", args.measured_model),
                    ("--measured-label", args.measured_label), ("--measured-calibrated", args.measured_calibrated),
                    ("--out", args.out)):
        if v:
            parts.append(f"{flag} {v!r}" if " " in v else f"{flag} {v}")
    text = truth.render(rows, sources, " ".join(parts), public=truth.public_summary())
    if args.out:
        from glmbench.results.records import atomic_write_text
        atomic_write_text(args.out, text)
        print(f"wrote {args.out} ({len(rows)} points from {len(sources)} sources)", file=sys.stderr)
    else:
        sys.stdout.write(text)
    return 0


def cmd_measure(args) -> int:
    from glmbench import measure  # the measured side needs the C core: imported only for this command
    out = args.out
    if out is not None and _check_out_file(out, force=args.force, inputs=[args.model]):
        # --force: not a records file, replaced rather than resumed from (a symbolic link's target: the link stays)
        os.unlink(rec._through_links(out))
    resumable = out if out and out.endswith(".json") else None
    before = _read_before(resumable)
    if getattr(args, "device", "cpu") == "cuda":  # the GPU path (measure/cuda.py, docs/CUDA.md)
        from glmbench import cuda
        from glmbench.measure import cuda as cuda_backend
        weights = args.weights or cuda_backend.WEIGHTS
        kv = args.kv or cuda_backend.KV
        if (weights, kv) != (cuda_backend.WEIGHTS, cuda_backend.KV):
            raise UserError(f"--device cuda runs bf16 weights and cache only, got --weights {weights} --kv {kv}")
        if not cuda.available():
            raise UserError("--device cuda: no CUDA device (or glmbench.cuda._cuda was not built); see docs/CUDA.md")
        recs = measure.measure(args.model, device="cuda", depths=tuple(args.depths), n_prompt=args.n_prompt,
                               mla_strategy=args.mla_strategy, repeats=args.repeats,
                               out=resumable)
        _measured_out(out, resumable, before, recs, measure.protocol.resume_key)
        _warn_unstable(recs, measure.protocol)
        _emit_records(recs, args)
        return 0
    recs = measure.measure(
        args.model, depths=tuple(args.depths), n_prompt=args.n_prompt, n_gen=args.n_gen,
        weights=args.weights, kv=args.kv or vocab.DEFAULTS["kv"],
        mla_strategy=args.mla_strategy, threads=args.threads, routing_stats=args.routing_stats,
        repeats=args.repeats, layers=args.layers, bandwidth_probe=args.bandwidth_probe,
        retries=args.retries, out=resumable, progress=not args.quiet)
    _measured_out(out, resumable, before, recs, measure.protocol.resume_key)
    _warn_unstable(recs, measure.protocol)
    _emit_records(recs, args)
    return 0


def _measured_out(out, resumable, before, recs, key) -> None:
    if resumable:
        print(_resume_line(out, before, recs, key), file=sys.stderr)
    elif out:
        rec.write_records(out, recs)
        print(f"wrote {len(recs)} records to {out}", file=sys.stderr)


def _warn_unstable(recs, protocol) -> None:
    """One `warning:` line on stderr per record marked unstable (protocol: glmbench.measure.protocol,
    handed over by cmd_measure, the one command that loads the measured side)."""
    for r in protocol.unstable(recs):
        print(protocol.warning_line(r), file=sys.stderr)
    past = [r for r in recs if r.get("beyond_native")]
    if past:   # the timing is real; the context is longer than the model was trained for
        tests = ", ".join(protocol.label(r) for r in past)
        print(f"note: {tests} run past {past[0]['model']}'s native {past[0]['native_context']:,} positions "
              "(its max_position_embeddings): the timing is real, the model was not trained that long "
              "(records: beyond_native)", file=sys.stderr)


def cmd_models(args) -> int:
    names = args.names or None
    cfgs = [configs.load(n) for n in (configs.builtin_names() if names is None else names)]
    rows = [c.summary() for c in cfgs]
    if args.json:
        print(json.dumps(rows, indent=1))
        return 0
    from glmbench.predict import costmodel as _cm
    table = []
    for r, cfg in zip(rows, cfgs):
        kv = r["kv_bytes_per_token"]
        # at 128K a windowed (chunked) layer holds llama.cpp's SWA cells (window + its default n_ubatch
        # 512, padded: costmodel.window_cells), the others every token; a hybrid's linear layers keep
        # their fixed recurrent state instead (configs.recurrent_state_bytes)
        at = 131072
        if cfg.windowed_layers:
            cells = _cm.window_cells(at, cfg.sliding_window, 512)
            kv128 = cfg.kv_bytes_per_token("f16", windowed=False) * at + cfg.kv_bytes_per_token("f16", windowed=True) * cells
        else:
            kv128 = kv["f16"] * at
        kv128 += cfg.recurrent_state_bytes()
        table.append({
            "model": r["name"], "family": r["family"], "layers": r["n_layers"], "hidden": r["hidden_size"],
            "params (B)": f"{r['total_params'] / 1e9:.1f}", "active (B)": f"{r['active_params'] / 1e9:.2f}",
            "KV/token f16 (KiB)": f"{kv['f16'] / 1024:.1f}",
            "KV @128K f16 (GiB)": f"{kv128 / 1024 ** 3:.2f}",
            "windowed layers": (f"{len(cfg.windowed_layers)} of {cfg.n_layers}, "
                                f"{'chunks' if cfg.window_chunked else 'window'} {cfg.sliding_window:,}"
                                if cfg.windowed_layers else "-"),
            "linear layers": (f"{len(cfg.linear_layers)} of {cfg.n_layers}, state "
                              f"{cfg.recurrent_state_bytes() / 2 ** 20:.1f} MiB" if cfg.linear_layers else "-"),
            "runs in Model": "no (priced)" if cfg.forward_unsupported() else "yes",
        })
    if args.csv:
        sys.stdout.write(_plain_csv(table))
        return 0
    print(format_table(table, list(table[0]) if table else None))
    return 0


def cmd_runtimes(args) -> int:
    """The runtime profiles: the runtime models (options, what their fit rests on, their bands),
    the physics profiles and the shipped calibrated ones."""
    from glmbench.predict import costmodel as _cm
    from glmbench.predict import runtime as _runtime
    models = _runtime.names()
    for n in args.names:
        base = n.split("[", 1)[0]
        if n.startswith("calibrated:") or n.endswith((".json", ".toml")):
            continue        # a profile file, as --runtime takes it (load_runtime says what is wrong with it)
        if base not in _cm.list_runtimes() and base not in _cm.list_calibrated():
            raise UserError(f"unknown runtime {n!r}; runtime models: {', '.join(models)}; physics profiles: "
                            f"{', '.join(_runtime.PHYSICS)}; calibrated: {', '.join(_cm.list_calibrated())}; "
                            "or a profile file (calibrated:FILE, FILE.json)")
    names = args.names or (models + list(_runtime.PHYSICS) + _cm.list_calibrated())
    rows, cvs = [], []      # cvs: what each loo_mape is (a calibrated profile's cross-validation)
    for n in names:
        p = _cm.load_runtime(n)
        c = p.calibration or {}
        rows.append({"name": p.name, "kind": "runtime model" if p.name.split("[")[0] in models else
                     "calibrated" if p.calibrated else "physics",
                     "options": {k: v["values"] for k, v in _runtime.options(p.name).items()} if p.options else {},
                     "points": c.get("n_points", len(c.get("points", []) or [])) if c else 0,
                     "loso_decode": c.get("loso_mape_decode"), "loso_prefill": c.get("loso_mape_prefill"),
                     "loo_mape": c.get("loo_mape"), "description": p.description})
        cvs.append(f"{c['cv_folds']}-fold cross-validated" if c.get("cv_folds") else "leave-one-out")
    if args.json:
        print(json.dumps(rows, indent=1, default=str))
        return 0
    if args.csv:
        sys.stdout.write(_plain_csv([{k: v for k, v in r.items() if k not in ("options", "description")} for r in rows]))
        return 0
    for n, r, cv in zip(names, rows, cvs):
        if r["kind"] == "runtime model":
            print(_runtime.describe(n))
        else:
            err = f"; {cv} MAPE {100 * r['loo_mape']:.1f}%" if isinstance(r["loo_mape"], (int, float)) else ""
            print(f"{r['name']} ({r['kind']}{err}): {r['description']}")
        print()
    return 0


def cmd_hardware(args) -> int:
    if args.save_host is not None:
        # checked before measuring (it measured, said "written to FILE", then failed to write there)
        _check_own_out(args.save_host, "--save-host", args.force, kind="a hardware profile",
                       ours=_is_hardware_profile, suffixes=(".json",))
        gpu = _host_now("--save-host", "writing it")
        rec.atomic_write_text(args.save_host, json.dumps(hardware.profile_to_dict(gpu), indent=1) + "\n")
        print(f"wrote {args.save_host} (use it as --hardware {args.save_host})", file=sys.stderr)
        return 0
    names = args.names or hardware.list_gpus()
    gpus = [hardware.get_gpu(n) for n in names]
    if args.json:
        print(json.dumps([_gpu_row(g, True) for g in gpus], indent=1, default=str))
        return 0
    rows = [_gpu_row(g, False) for g in gpus]
    if args.csv:
        sys.stdout.write(_plain_csv(rows))
    else:
        print(format_table(rows, list(rows[0]) if rows else None))
    return 0


def _gpu_row(gpu, full: bool) -> dict:
    """JSON: every field of the profile (its sources included); table: the ceilings."""
    d = dataclasses.asdict(gpu)
    if full:
        return d
    t = d.get("tflops") or {}
    src = (d.get("source") or "").split(";")[0].split(" ")[0].rstrip(".")
    return {"key": d["key"], "name": d["name"], "arch": d.get("arch", ""), "cc": d.get("compute_capability", ""),
            "memory (GiB)": d["memory_gib"], "bandwidth (GB/s)": d["bandwidth_gbs"],
            "f16 (TFLOPS)": t.get("fp16"), "f16 acc16 (TFLOPS)": t.get("fp16_acc16", t.get("fp16")),
            "bf16 (TFLOPS)": t.get("bf16"), "fp32 (TFLOPS)": t.get("fp32"), "int8 (TOPS)": t.get("int8"),
            "fp8 (TFLOPS)": t.get("fp8"), "link (GB/s)": d.get("link_gbps"), "launch (us)": d.get("launch_us"), "source": src}


def cmd_compare(args) -> int:
    recs = [_read(f, model=args.model) for f in args.files]
    if len(args.files) == 1:
        return _show_one(args.files[0], recs[0], args)
    letters = file_letters(len(args.files))
    for L, f, rs in zip(letters, args.files, recs):
        n = repeated_points(rs)
        if n:
            print(f"note: {L} ({f}) holds {n} point{'s' if n > 1 else ''} more than once (runs appended to one "
                  f"file?): each run is its own row (`run` 1, 2, ...), against the same run of the others or, "
                  f"where a file has fewer, its last", file=sys.stderr)
    rows, header = compare(*recs)
    if not rows:
        raise UserError(f"no points in common between {args.files[0]} and "
                        f"{' or '.join(args.files[1:])} (same test, model, depth, prompt and streams)")
    letters = file_letters(len(args.files))
    paired = tg_lengths_sentence(paired_tg_lengths(rows))   # tg1 with tg128: said where the rows are
    if paired and (args.json or args.csv):
        print(f"note: {paired}", file=sys.stderr)
    if args.json:
        print(json.dumps({"a": args.files[0], "b": args.files[1], "files": dict(zip(letters, args.files)),
                          "differences": header, "rows": rows}, indent=1, default=str))
    elif args.csv:
        sys.stdout.write(_plain_csv(rows))
    else:
        for L, f in zip(letters, args.files):
            print(f"{L}: {f}")
        for k, vals in header.items():
            print(f"  {k}: " + "  ".join(f"{L}={_fmt(v)}" for L, v in zip(letters, vals)))
        ratios = [f"{L}/A" for L in letters[1:]]
        bands = [q for q in rows[0] if q.endswith(" band")]
        shown = [dict(r, **{q: ("–" if r[q] is None else f"{r[q]:.3f}") for q in ratios},
                      **{q: ("–" if r[q] is None else f"±{100 * r[q]:.0f}%") for q in bands}) for r in rows]
        print(format_table(shown, list(rows[0])))
        if paired:
            print(paired)
    return 0


def _show_one(path, recs, args) -> int:
    """`glmbench compare FILE`: what the import read, one row per point, and how each inferred
    field was told."""
    rows, how = summarize(recs)
    if not rows:
        raise UserError(f"{path}: no tg, pp, pg, serve or mem records to show")
    if args.json:
        print(json.dumps({"file": path, "inferred": how, "rows": rows}, indent=1, default=str))
    elif args.csv:
        sys.stdout.write(_plain_csv(rows))
    else:
        print(f"{path}: {len(rows)} point{'s' if len(rows) > 1 else ''}")
        for line in how:
            print(f"  {line}")
        shown = [dict(r, band="–" if r["band"] is None else f"±{100 * r['band']:.0f}%") if "band" in r else r
                 for r in rows]
        print(format_table(shown, list(rows[0])))
    return 0


def cmd_plot(args) -> int:
    recs = _read(args.file, model=args.model, need_model=True)
    # beside the file; a pipe's (/dev/stdin, <(...), a fifo) in the current folder, not in /dev or /proc/self/fd
    base = args.file if os.path.isfile(args.file) else os.path.basename(args.file)
    out = args.out if args.out is not None else os.path.splitext(base)[0] + "-charts"
    _check_out_folder(out, "--out", False)
    from glmbench.report import plots   # matplotlib: only the commands that draw load it
    paths = plots.save_charts(recs, out)
    if not paths:
        raise UserError(f"{args.file}: nothing to draw (no tg, pp, mem or serve records)")
    plots.remove_stale_charts(out, paths)  # the folder holds only the current charts
    if any(r.get("test") == "tg" for r in recs) and not any(p.endswith("generation_vs_context.png") for p in paths):
        print(f"note: {args.file}: no generation_vs_context chart: no one-stream decode point above depth 0 (tg<n> from an "
              "empty cache has no place on a log context axis); `glmbench compare FILE` lists them", file=sys.stderr)
    for p in paths:
        print(p)
    return 0


@contextlib.contextmanager
def _gc_paused():
    """The cyclic garbage collector off while a results file is read, and what was read kept out of its later
    passes (gc.freeze): a read makes millions of dicts and lists and no cycles, and each full pass walked every one
    of them again (a quarter of `compare`'s time on two files of 100,000 records); refcounting still frees them."""
    was = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if was:
            gc.enable()
        gc.freeze()


def _read(path, *, model=None, default_model=None, need_model=False, option=None) -> list[dict]:
    """Records from a result file of any format glmbench reads (results/importers.py: glmbench's
    own records, llama-bench json/jsonl/csv/md/sql and pasted text, sweep-bench, batched-bench,
    vllm, sglang); what the import assumed goes to stderr, one line each. `option`: the flag that
    named the file (report's --measured), said in the error for a missing one."""
    if not os.path.exists(path):
        raise UserError(f"{option} {path}: no such file" if option else f"no such file: {path}")
    notices: list = []
    from glmbench.results import importers   # (its readers: only the commands that read a result file)
    with _gc_paused():
        recs = importers.read(path, model=model, default_model=default_model, notices=notices)
    if need_model and any(not r.get("model") for r in recs):
        r = next(r for r in recs if not r.get("model"))
        raise UserError(f"{r.get('source') or path}: the file names no model (no model column, command line, "
                        f"heading or file name tells it): pass --model NAME")
    for n in notices:
        print(f"note: {n}", file=sys.stderr)
    return recs


# ---- parser -------------------------------------------------------------------------------------
def build_parser() -> argparse.ArgumentParser:
    p = _Parser(prog="glmbench", description=(
        "Which model, on which cards, for which shape of work: GLM-4.7-Flash (MoE + MLA) vs dense "
        "GQA models, measured on this CPU, predicted by a cost model for GPUs, or calibrated."))
    p.add_argument("--version", action="version", version=f"glmbench {__version__} ({_built()})")
    sub = p.add_subparsers(dest="command", metavar="COMMAND", parser_class=_Parser)

    def add(name, help_, fn):
        sp = sub.add_parser(name, help=help_, description=help_)
        sp.set_defaults(func=fn)
        return sp

    def fmt_opts(sp):
        g = sp.add_mutually_exclusive_group()
        g.add_argument("--json", action="store_true", help="print JSON on stdout")
        g.add_argument("--csv", action="store_true", help="print CSV on stdout")

    sp = add("report", "run the study and write charts (PNG), records (CSV, JSON) and report.md", cmd_report)
    _add_study_options(sp, report=True)
    sp.add_argument("--out", default="glmbench-report", metavar="DIR",
                    help="folder to write (default: ./glmbench-report)")
    sp.add_argument("--force", action="store_true",
                    help="overwrite records/report files in DIR even if they are not glmbench's")
    sp.add_argument("-q", "--quiet", action="store_true", help="no progress bar")

    sp.add_argument("--trace", metavar="NAME|FILE",
                    help="also replay a serving trace on the study's setups and add a section (see `glmbench trace`)")
    _add_trace_options(sp)

    sp = add("trace", "replay a serving trace (built-in name or file) on the study's setups: per length bucket, "
             "which setup wins; where the crossover lands; one decision", cmd_trace)
    sp.add_argument("trace", metavar="NAME|FILE",
                    help="mooncake-conversation, mooncake-synthetic, azure-code-2023, azure-conv-2023, or a "
                         ".jsonl/.csv trace (Mooncake, Azure, BurstGPT, or arrival_s,prompt_tokens,output_tokens)")
    _add_study_options(sp, report=False)
    _add_trace_options(sp)
    fmt_opts(sp)
    sp.add_argument("--out", metavar="DIR", help="also write trace.json, CSVs and the two charts into DIR")
    sp.add_argument("-q", "--quiet", action="store_true", help="no progress bar")

    sp = add("search", "the cheapest setup meeting a trace's TTFT and TPOT targets: every combination of models, "
             "cards, formats and splits pruned by memory, replayed, costed; Pareto fronts, highest sustained rates",
             cmd_search)
    from glmbench.predict import search as _search, replay as _rp
    g = sp.add_argument_group("workload and targets")
    g.add_argument("--trace", metavar="NAME|FILE", help="the traffic: mooncake-conversation, mooncake-synthetic, "
                   "azure-code-2023, azure-conv-2023, or a .jsonl/.csv trace (required)")
    g.add_argument("--requests", type=_argtype(_positive_int, "a whole number >= 1"), metavar="N",
                   help="only the trace's first N requests (default: all)")
    g.add_argument("--rate-scale", type=POSITIVE, default=1.0, metavar="X",
                   help="requests arrive X times as fast as in the trace (default: 1)")
    g.add_argument("--ttft-slo", type=POSITIVE, metavar="S", help="time-to-first-token target, seconds (required)")
    g.add_argument("--tpot-slo", type=POSITIVE, metavar="S", help="time-per-output-token target, seconds (required)")
    g.add_argument("--attainment", type=_argtype(_share, "share"), default=_search.DEFAULT_ATTAINMENT, metavar="P",
                   help=f"share of requests that must meet both targets (default: {_search.DEFAULT_ATTAINMENT:g})")
    g.add_argument("--no-max-rate", action="store_true",
                   help="skip finding each setup's highest sustained rate (one replay per setup instead of about 7)")
    g.add_argument("--rate-tol", type=_argtype(_tolerance, "tolerance"), default=_search.RATE_TOL, metavar="F",
                   help=f"bisection tolerance of the highest sustained rate (default: {_search.RATE_TOL:g})")
    _server_args(g, _rp.ServerConfig())
    g.add_argument("--no-prefix-cache", action="store_true", help="serve without prefix caching")
    words = _argtype(_words, "names")
    c = sp.add_argument_group("candidates")
    c.add_argument("--models", type=words, metavar="A,B", help="models (default: every built-in)")
    c.add_argument("--gpus", type=words, metavar="A,B",
                   help="cards from the hardware catalog or profile files (default: all, those with a price)")
    c.add_argument("--cards", type=INTS, default=list(_search.DEFAULT_CARDS), metavar="N[,N...]",
                   help=f"card counts (default: {','.join(map(str, _search.DEFAULT_CARDS))})")
    c.add_argument("--weights", type=words, default=list(_search.DEFAULT_WEIGHTS), metavar="A,B",
                   help=f"weight formats (default: {','.join(_search.DEFAULT_WEIGHTS)})")
    c.add_argument("--kv", type=words, default=list(_search.DEFAULT_KV), metavar="A,B",
                   help=f"KV-cache formats (default: {','.join(_search.DEFAULT_KV)})")
    c.add_argument("--split", type=words, default=list(_search.DEFAULT_SPLITS), metavar="layer,tensor",
                   help="splits for several cards (default: layer,tensor; one card runs unsplit)")
    c.add_argument("--runtime", type=words, default=list(_search.DEFAULT_RUNTIMES), metavar="A,B",
                   help=f"runtime profiles (default: {','.join(_search.DEFAULT_RUNTIMES)})")
    c.add_argument("--link", type=POSITIVE, metavar="GB/s",
                   help="card-to-card bandwidth of multi-card rigs (default: each card profile's own link)")
    c = sp.add_argument_group("costs")
    c.add_argument("--prices", metavar="FILE.json|FILE.toml",
                   help="a price table overriding the defaults (glmbench/data/prices/default.json)")
    c.add_argument("--years", type=POSITIVE, metavar="N", help="years a bought card is amortized over (default: 3)")
    c.add_argument("--kwh-usd", type=POSITIVE, metavar="USD", help="electricity price per kWh (default: 0.16)")
    c.add_argument("--basis", choices=("any", "purchase", "cloud"),
                   help="price cards bought, rented, or either (default: any: bought where a list price is known)")
    c = sp.add_argument_group("execution and output")
    c.add_argument("--workers", type=_argtype(_positive_int, "a whole number >= 1"), metavar="N",
                   help="worker processes on this machine, or the CPUs of the local Ray cluster --ray auto starts "
                        "(default: every CPU)")
    c.add_argument("--ray", metavar="auto|ADDRESS",
                   help="run on a Ray cluster: auto (RAY_ADDRESS or a running cluster, else a local one) or an address; "
                        'needs pip install "glmbench[ray]"')
    c.add_argument("--decision-tree", action="store_true",
                   help="instead: the study's decision tree (three workload shapes, GLM-4.7-Flash vs the dense "
                        "built-ins on 1 or 2 RTX 3090) searched, beside the study's choices")
    c.add_argument("--out", metavar="DIR", help="folder for search.md, search.json, setups.csv/.json (resumes from it), "
                                                "pareto.png (required, except with --decision-tree)")
    c.add_argument("--force", action="store_true", help="overwrite files in DIR even if they are not glmbench's")
    c.add_argument("--json", action="store_true", help="print search.json on stdout")
    c.add_argument("-q", "--quiet", action="store_true", help="no progress bar")

    sp = add("sweep", "predicted records for models x card counts x depths (the cost model)", cmd_sweep)
    _add_study_options(sp, report=False)
    sp.add_argument("--tests", default="tg,pp,mem", metavar="LIST",
                    help="tests to predict: tg (decode at each depth), pp (prefill from empty at each depth "
                         "as the prompt length; with --n-prompt N: N tokens at each depth), mem, serve "
                         "(default: tg,pp,mem)")
    sp.add_argument("--out", metavar="FILE.json|FILE.csv",
                    help="also write the records to a file (stdout still shows the table, or --json / --csv; "
                         "a .json file resumes: a point is reused only if its inputs are unchanged)")
    sp.add_argument("--force", action="store_true", help="overwrite --out even if it is not a glmbench result file")
    sp.add_argument("-q", "--quiet", action="store_true", help="no progress bar")
    fmt_opts(sp)

    sp = add("measure", "time a model's layers on this machine's CPU (evidence=measured)", cmd_measure)
    sp.add_argument("model", metavar="MODEL",
                    help="built-in name or config.json (weights random, seeded), or real weights: a .gguf file "
                         "or an HF folder with *.safetensors (run as stored)")
    sp.add_argument("--depths", type=DEPTHS, default=[4096], metavar="LIST", help="cache depths (default: 4K)")
    sp.add_argument("--n-prompt", type=int, default=512, help="prefill chunk in tokens (default: 512)")
    sp.add_argument("--n-gen", type=int, default=16, help="tokens generated per repeat (default: 16)")
    sp.add_argument("--weights", default=None,
                    help=f"weight format (default: {vocab.DEFAULTS['measured_weights']}, or as stored for a "
                         f"checkpoint; --device cuda: bf16)")
    sp.add_argument("--kv", default=None, help=f"KV-cache format (default: {vocab.DEFAULTS['kv']}; --device cuda: bf16)")
    sp.add_argument("--mla-strategy", default=vocab.DEFAULTS["mla_strategy"], choices=vocab.MLA_STRATEGIES,
                    help="MLA attention form (default: flash)")
    sp.add_argument("--threads", type=int, default=None, help="threads (default: all cores)")
    sp.add_argument("--device", default="cpu", choices=("cpu", "cuda"),
                    help="cpu (default), or cuda: the whole model on the GPU, bf16 (docs/CUDA.md)")
    sp.add_argument("--repeats", type=int, default=3, help="repeats per point (default: 3)")
    sp.add_argument("--layers", default="auto",
                    help="auto (the whole model if it fits in memory, else sampled), full, sampled, or "
                         "a number k >= 2 of layers of each kind to build and time (default: auto)")
    sp.add_argument("--routing-stats", action="store_true",
                    help="real weights only (a .gguf or an HF safetensors folder): record each MoE layer's "
                         "tokens per expert over the timed decode steps (routing_counts)")
    sp.add_argument("--bandwidth-probe", action="store_true",
                    help="measure the memory bandwidth after each timed repeat and record it (CPU)")
    sp.add_argument("--retries", type=int, default=0, metavar="N",
                    help="time a point marked unstable (the machine was busy) again, up to N times (CPU; default: 0)")
    sp.add_argument("--out", metavar="FILE.json|FILE.csv",
                    help="also write the records to a file (stdout still shows the table, or --json / --csv; "
                         "a .json file resumes: a point is reused only if its config, settings, threads and code "
                         "are unchanged)")
    sp.add_argument("--force", action="store_true", help="overwrite --out even if it is not a glmbench result file")
    sp.add_argument("-q", "--quiet", action="store_true", help="no progress bar")
    fmt_opts(sp)

    sp = add("calibrate", "fit a runtime profile to measured records; print every point's residual, "
                          "the MAPE and the cross-validated error (leave-one-out, or k-fold above "
                          f"{vocab.CALIBRATE_LOO_MAX_POINTS} points)", cmd_calibrate)
    sp.add_argument("files", nargs="+", metavar="FILE", help="measured records (.json or .csv, evidence=measured)")
    sp.add_argument("--model", metavar="NAME|config.json", help="the model that ran (default: each record's `model`)")
    sp.add_argument("--hardware", metavar="GPU|profile.json|host",
                    help="the GPU it ran on (default: each record's `hardware`); 'host' or a saved host profile "
                         "(glmbench hardware --save-host) for records measured on this CPU")
    sp.add_argument("--cards", type=int, metavar="N", help="cards it ran on (default: each record's `n_cards`, else 1)")
    sp.add_argument("--link", type=POSITIVE, metavar="GB/s", help="card-to-card bandwidth (default: each record's `link_gbps`)")
    sp.add_argument("--split", choices=("layer", "tensor"), help="how the cards split the model (default: the record's, else layer)")
    sp.add_argument("--weights", metavar="FORMAT", help="weight format (default: each record's `weights`)")
    sp.add_argument("--kv", metavar="FORMAT", help="KV-cache format (default: each record's `type_k`, else f16)")
    sp.add_argument("--mla-strategy", choices=vocab.MLA_STRATEGIES, help="MLA attention form (default: the record's, else flash)")
    sp.add_argument("--base", default="typical", metavar="PROFILE", help="profile the fit starts from (default: typical)")
    sp.add_argument("--name", metavar="NAME", help="the profile's name (default: the --out file's name)")
    sp.add_argument("--out", required=True, metavar="PROFILE.json", help="where to write the calibrated profile")
    sp.add_argument("--force", action="store_true",
                    help="overwrite --out even if it is not a runtime profile (never one of the input files)")
    sp.add_argument("--exclude-unstable", action="store_true",
                    help="leave out records marked unstable (stable: false); by default they are fitted with a warning")
    sp.add_argument("--cv", default="auto", type=_cv_arg, metavar="auto|loo|K",
                    help=f"how the out-of-sample error is cross-validated: loo (leave-one-out: one refit per point), "
                         f"K (K-fold: K refits, point i left out with fold i %% K; K >= the points is leave-one-out), "
                         f"auto (default: leave-one-out up to {vocab.CALIBRATE_LOO_MAX_POINTS} points, {vocab.CALIBRATE_CV_FOLDS}-fold "
                         "above); the table and the profile say which it was")
    sp.add_argument("-q", "--quiet", action="store_true", help="no progress bar")

    sp = add("truth-table", "every shipped and CPU-measured point beside its ideal, typical and calibrated "
                            "prediction, with errors and the MAPE per runtime (docs/TRUTH_TABLE.md)", cmd_truth_table)
    sp.add_argument("--host", action="append", metavar="DIR",
                    help="a directory written by bench/bench_host_calibration.py (this CPU measured at several "
                         "depths, its host profile, a profile calibrated on some depths); repeat for several")
    sp.add_argument("--llama-bench", action="append", metavar="DIR",
                    help="a directory written by bench/bench_llama_bench.sh (llama.cpp's llama-bench on this CPU, "
                         "its host profile, model config and calibrated profile); repeat for several")
    sp.add_argument("--measured", action="append", metavar="FILE",
                    help="another measured file in any format `compare` reads (e.g. llama-bench -o json); repeat")
    sp.add_argument("--measured-hardware", metavar="GPU|profile.json",
                    help="the hardware the --measured files ran on (a saved host profile for this CPU)")
    sp.add_argument("--measured-model", metavar="NAME|config.json", help="the model the --measured files ran")
    sp.add_argument("--measured-label", metavar="TEXT", help="what the --measured rows are called in the table")
    sp.add_argument("--measured-calibrated", metavar="PROFILE",
                    help="a calibrated profile of the --measured files' runtime (default: none, ideal and typical only)")
    sp.add_argument("--out", metavar="FILE.md", help="write the table (atomically) here instead of stdout")
    sp.add_argument("--force", action="store_true",
                    help="overwrite --out even if it is not a truth table (never one of the files it reads)")
    sp.add_argument("-q", "--quiet", action="store_true", help="no progress bar")

    sp = add("models", "list the built-in model configs", cmd_models)
    sp.add_argument("names", nargs="*", metavar="NAME|config.json", help="only these models")
    fmt_opts(sp)

    sp = add("runtimes", "list the runtime profiles: the runtime models (llama.cpp, ik_llama.cpp, llama.cpp-vulkan, "
                         "vllm; sglang, fitted to nothing) with their options and cross-validated error, the physics "
                         "and calibrated profiles",
             cmd_runtimes)
    sp.add_argument("names", nargs="*", metavar="RUNTIME",
                    help="only these (default: every one): a name, or a profile file as --runtime takes it "
                         "(calibrated:FILE, FILE.json: one `glmbench calibrate` wrote)")
    fmt_opts(sp)

    sp = add("hardware", "list the built-in hardware profiles, or save this machine's measured one", cmd_hardware)
    sp.add_argument("names", nargs="*", metavar="GPU",
                    help="only these cards: a key, a name as tools print it ('NVIDIA GeForce RTX 3090 Ti', "
                         "'Tesla T4', 'A100 80 GB') or a profile file (default: the whole catalog)")
    sp.add_argument("--save-host", metavar="FILE.json", default=None,
                    help="measure this machine's CPU ceilings (triad bandwidth, FMA peak) and write them as a "
                         "hardware profile (kind cpu) that --hardware FILE.json reads back: one fixed host "
                         "profile for calibrate, sweep and report instead of re-measuring with 'host'")
    sp.add_argument("--force", action="store_true",
                    help="overwrite --save-host even if it is not a hardware profile")
    fmt_opts(sp)

    formats = ("glmbench records, llama-bench -o json/jsonl/csv/md/sql, llama-sweep-bench, llama-batched-bench, "
               "vllm bench serve --save-result, sglang bench_serving, llama-cli / llama-server timing lines, a "
               "llama-server response's timings JSON, ollama run --verbose; the format is told from the content")
    model_help = ("the model the files measured, for a file that does not say (a sweep-bench table; llama-bench's "
                  "'deepseek2 30B.A3B'): a built-in name or a config.json; overrides what an imported file says")
    sp = add("compare", "result files side by side, with ratios to the first (B/A, C/A, ...); one file: what "
                        "was read from it (one row per point) and how each inferred field was told", cmd_compare)
    sp.add_argument("files", nargs="+", metavar="FILE",
                    help=f"the baseline, then the files to compare with it ({formats}); one file alone is shown "
                         "as imported")
    sp.add_argument("--model", metavar="NAME|config.json", help=model_help)
    fmt_opts(sp)

    sp = add("plot", "draw every chart a result file has data for", cmd_plot)
    sp.add_argument("file", metavar="FILE", help=f"records ({formats})")
    sp.add_argument("--model", metavar="NAME|config.json", help=model_help)
    sp.add_argument("--out", metavar="DIR", help="folder for the PNGs (default: FILE without extension + '-charts'; "
                                                 "for a pipe such as /dev/stdin, its name + '-charts' in the current folder)")
    return p


def _join_dash_values(parser, argv: list[str]) -> list[str]:
    """`--depths -4K` -> `--depths=-4K`: argparse reads a value that starts with '-' as an option
    (and says "expected one argument"); joined, the option's own check names the problem."""
    takes_value, every = set(), set()
    for sp in [parser] + [a for act in parser._actions if isinstance(act, argparse._SubParsersAction)
                          for a in act.choices.values()]:
        for act in sp._actions:
            every.update(act.option_strings)
            if act.option_strings and act.nargs is None and isinstance(act, argparse._StoreAction):
                takes_value.update(act.option_strings)
    out, i = [], 0
    while i < len(argv):
        a = argv[i]
        if a == "--":
            out += argv[i:]
            break
        if a in takes_value and i + 1 < len(argv) and argv[i + 1].startswith("-") and argv[i + 1] != "--" \
                and argv[i + 1].split("=", 1)[0] not in every:
            out.append(f"{a}={argv[i + 1]}")
            i += 2
            continue
        out.append(a)
        i += 1
    return out


EXIT_BROKEN_PIPE = 141  # 128 + SIGPIPE, what a shell reports for a Unix tool whose reader went away


def _format_warning(message, category, filename, lineno, line=None, _format=None):
    """A warning glmbench's own code raised (a GGUF's assumed value, GGUFNotice; a checkpoint's dequantized types) as
    one line on stderr, `notice: ...` / `warning: ...`, not Python's two lines naming glmbench's source line; any
    other package's warning as Python formats it (`_format`). (A formatter, not a showwarning: what records warnings,
    pytest.warns, still gets them.)"""
    if os.path.abspath(filename).startswith(_PKG_DIR):
        from glmbench.models.gguf_file import GGUFNotice
        return f"{'notice' if issubclass(category, GGUFNotice) else 'warning'}: {message}\n"
    return _format(message, category, filename, lineno, line)


_PKG_DIR = os.path.dirname(os.path.abspath(__file__)) + os.sep


EXIT_TERMINATED = 128 + signal.SIGTERM   # 143, what a shell reports for a process ended by SIGTERM
_TERM = {"pid": None, "got": False}


def _on_sigterm(signum, frame):
    """SIGTERM (`kill`, `timeout`, a batch scheduler's time limit, systemd) handled as Ctrl-C is: the
    finished points saved (a sweep saves only every so often, and the points priced since were lost),
    no temp file left, a line saying what was kept. A forked worker (search's pool) that inherited the
    handler ends as it would have without it."""
    if os.getpid() != _TERM["pid"]:
        signal.signal(signum, signal.SIG_DFL)
        os.kill(os.getpid(), signum)
        return
    _TERM["got"] = True
    raise KeyboardInterrupt


def main(argv: list[str] | None = None) -> int:
    import functools
    import threading
    import warnings
    installed = None
    _TERM.update(pid=os.getpid(), got=False)
    if threading.current_thread() is threading.main_thread() and signal.getsignal(signal.SIGTERM) == signal.SIG_DFL:
        installed = signal.signal(signal.SIGTERM, _on_sigterm)   # (a caller's own handler is left alone)
    try:
        with warnings.catch_warnings():
            warnings.formatwarning = functools.partial(_format_warning, _format=warnings.formatwarning)
            rc = _main(argv)
    finally:
        if installed is not None:
            signal.signal(signal.SIGTERM, installed)
    if installed is not None and _TERM["got"]:
        # the finished points are saved and the line said so: now end as SIGTERM ends a process (the
        # default action, restored above), as GNU tools re-raise a signal after their cleanup; a shell
        # reports 143 as before, and a caller of main() in a notebook or script ends as it would have
        # without glmbench (it went on running: main() returned 143)
        for f in (sys.stdout, sys.stderr):
            try:
                f.flush()
            except (OSError, ValueError):
                pass
        os.kill(os.getpid(), signal.SIGTERM)
    return rc


def _main(argv: list[str] | None = None) -> int:
    parser = build_parser()
    try:
        args, extra = parser.parse_known_args(_join_dash_values(parser, list(sys.argv[1:] if argv is None else argv)))
        if extra:   # named by the command they were given to, as its other usage errors are
            subs = next((a.choices for a in parser._actions if isinstance(a, argparse._SubParsersAction)), {})
            subs.get(getattr(args, "command", None), parser).error(f"unrecognized arguments: {' '.join(extra)}")
        if not getattr(args, "command", None):
            parser.print_help()
            return EXIT_USAGE
        if getattr(args, "layers", None) not in (None, "auto", "full", "sampled"):
            try:
                args.layers = int(args.layers)
            except ValueError:
                raise UserError(f"--layers must be auto, full, sampled or a whole number, got {args.layers!r}") from None
        rc = args.func(args)
        if rc == 0:
            _say_notes(args)    # (a command says its notes after its checks; none is left by then)
        sys.stdout.flush()  # a closed pipe shows here, not at exit
        return rc
    except BrokenPipeError:
        # the reader (`| head`) went away: stop quietly, as Unix tools do; point stdout at
        # /dev/null so the interpreter's own flush at exit does not complain again
        try:
            os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        except (OSError, ValueError, AttributeError, io.UnsupportedOperation):
            pass
        return EXIT_BROKEN_PIPE
    except UserError as e:
        if "(see `" in str(e):   # a usage error (_Parser.error): a file named like an option was read as one
            dashed = [a for a in (sys.argv[1:] if argv is None else argv)
                      if isinstance(a, str) and a.startswith("-") and a != "-" and os.path.exists(a)]
            if dashed:
                return _fail(f"{e}; {dashed[0]!r} is a file whose name starts with '-', read as an option: "
                             f"write ./{dashed[0]} (or put -- before it)")
        return _fail(str(e))
    except (ValueError, TypeError, KeyError, OSError, ImportError, OverflowError, MemoryError, csv.Error) as e:
        # ImportError: a measured command where the C core was not built (core/_loader.py says why);
        # MemoryError: an allocation the C core or NumPy could not get (the KV cache of a deep point, say)
        if os.environ.get("GLMBENCH_TRACEBACK") == "1":
            raise
        msg = e.args[0] if isinstance(e, KeyError) and e.args else e
        if isinstance(e, OSError) and e.strerror:  # not "[Errno 2] ...": what failed, on which path
            msg = e.strerror + (f": {e.filename}" if e.filename else "")
        if isinstance(e, MemoryError):
            msg = f"out of memory: {e or 'an allocation failed'} (a smaller depth, prompt or model fits)"
        prog = f"glmbench {args.command}" if "args" in locals() and getattr(args, "command", None) else "glmbench"
        return _fail(f"{prog}: {msg}")
    except KeyboardInterrupt as e:
        a = locals().get("args")
        out = str(getattr(a, "out", None) or "")
        how, rc = ("terminated (SIGTERM)", EXIT_TERMINATED) if _TERM["got"] else ("interrupted", EXIT_INTERRUPTED)
        if getattr(e, "measured", None) == 0:   # measure.protocol.Interrupted: in the build, or before a point
            print(f"glmbench: {how} (nothing was measured yet" + (f"; nothing written to {out})" if out else ")"),
                  file=sys.stderr)
            return rc
        # only a sweep or measure into a .json file, and a search into its folder, keep finished points to resume
        # from; a trace, report or calibrate interrupted has saved nothing (it said it had); nor has a sweep
        # stopped before its first save (it said the points were saved in a file that was not there)
        cmd = getattr(a, "command", None)
        resumes = (cmd in ("sweep", "measure") and out.endswith(".json") and os.path.exists(out)) or \
            (cmd == "search" and bool(out) and os.path.exists(os.path.join(out, "setups.json")))
        print(f"glmbench: {how}" + (f" (finished points are saved in {out}; rerun to resume)" if resumes
                                    else " (nothing was saved)"), file=sys.stderr)
        return rc


def _built() -> str:
    """Which compiled parts this install has, found by their files, without importing anything
    (a prediction-only install has neither; pip shows the build's warning only with -v, so
    `--version` says it)."""
    import importlib.machinery
    here = os.path.dirname(os.path.abspath(__file__))

    def has(sub, name):
        return any(os.path.exists(os.path.join(here, sub, name + s)) for s in importlib.machinery.EXTENSION_SUFFIXES)
    return (f"C core: {'built' if has('core', '_core') else 'not built, measured ops unavailable'}; "
            f"CUDA: {'built' if has('cuda', '_cuda') else 'not built'}")


def _fail(msg: str) -> int:
    print(f"error: {msg}".replace("\n", " "), file=sys.stderr)
    return EXIT_USAGE


if __name__ == "__main__":
    sys.exit(main())

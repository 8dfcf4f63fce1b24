"""The `glmbench` command (also `python -m glmbench`).

  glmbench report    the default study -> ./glmbench-report/ (charts, records, report.md)
  glmbench sweep     predicted records for a grid of models x rigs x depths
  glmbench measure   real timings of a model's layers on this machine's CPU
  glmbench models    built-in model configs
  glmbench hardware  built-in hardware profiles
  glmbench compare   two result files side by side, with ratios (like compare-llama-bench)
  glmbench plot      charts from a result file

User errors (a bad option, a missing file, a model or GPU nobody knows) end with one line on
stderr and exit status 2; nothing else is printed. GLMBENCH_TRACEBACK=1 shows the traceback.
"""
from __future__ import annotations

import argparse
import csv
import dataclasses
import io
import json
import os
import re
import sys

from glmbench import __version__, report, vocab
from glmbench.models import configs
from glmbench.predict import hardware
from glmbench.report import plots
from glmbench.results.compare import compare
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
    m = _TOKENS.match(str(text))
    if not m:
        raise ValueError(f"not a token count: {text!r} (write e.g. 4096, 4K or 128K)")
    n = float(m.group(1)) * {"": 1, "k": 1024, "m": 1024 ** 2}[m.group(2).lower()]
    if n != int(n) or n < 0:
        raise ValueError(f"not a whole, non-negative token count: {text!r}")
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
    if not v > 0:
        raise ValueError(f"must be > 0, got {text!r}")
    return v


DEPTHS = _argtype(parse_token_list, "token counts")
INTS = _argtype(parse_int_list, "counts")
POSITIVE = _argtype(positive_float, "value")


# ---- output helpers -----------------------------------------------------------------------------
def _emit_records(records, args, out_path=None):
    """Write records where the user asked: --out FILE (.csv/.json), --json / --csv on stdout,
    else a table."""
    if out_path:
        rec.write_records(out_path, records)
        print(f"wrote {len(records)} records to {out_path}", file=sys.stderr)
    if getattr(args, "json", False):
        sys.stdout.write(rec.to_json(records))
    elif getattr(args, "csv", False):
        sys.stdout.write(rec.to_csv(records))
    elif not out_path:
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
    cells = [[_fmt(r.get(c)) for c in cols] for r in rows]
    widths = [max(len(c), *(len(row[i]) for row in cells)) for i, c in enumerate(cols)]

    def line(vals):
        return "| " + " | ".join(v.rjust(w) if _numeric(v) else v.ljust(w) for v, w in zip(vals, widths)) + " |"

    sep = "|" + "|".join("-" * (w + 2) for w in widths) + "|"
    return "\n".join([line(cols), sep] + [line(r) for r in cells])


def _numeric(s: str) -> bool:
    return bool(re.fullmatch(r"[-+]?[\d,]*\.?\d+(e[-+]?\d+)?%?x?", s))


_SHOW = ("evidence", "test", "model", "device", "n_cards", "weights", "type_k", "runtime", "n_prompt",
         "n_depth", "concurrency", "avg_ts", "stddev_ts", "ttft_s", "mem_bytes", "fits", "aggregate_tok_s")


def _table_columns(rows):
    keys = set().union(*rows)
    cols = [c for c in _SHOW if c in keys and any(r.get(c) not in (None, "") for r in rows)]
    return cols or rec.columns(rows)


# ---- study options shared by report and sweep ----------------------------------------------------
# The study's defaults are Study's own (glmbench/report/__init__.py): the CLI reads them from there.
_STUDY = Study()
DEFAULT_MODELS = _STUDY.models


def _add_study_options(p, *, report: bool):
    g = p.add_argument_group("study")
    g.add_argument("--model", action="append", metavar="NAME|config.json",
                   help=f"model to include; repeat for several (default: {' and '.join(DEFAULT_MODELS)})")
    d = _STUDY
    g.add_argument("--hardware", default=d.hardware, metavar="GPU|profile.json",
                   help="GPU (see `glmbench hardware`), a hardware profile .json/.toml, or 'host' for "
                        f"this machine's CPU (default: {d.hardware})")
    g.add_argument("--cards", type=INTS, default=list(d.cards), metavar="N[,N...]",
                   help=f"card counts to compare (default: {','.join(map(str, d.cards))})")
    g.add_argument("--link", type=POSITIVE, default=d.link_gbps, metavar="GB/s",
                   help=f"card-to-card bandwidth for multi-card rigs (default: {d.link_gbps:g}, what the study measured)")
    g.add_argument("--split", default=d.split, choices=("layer", "tensor"),
                   help=f"how a multi-card rig splits the model (default: {d.split})")
    g.add_argument("--weights", default=d.weights, metavar="FORMAT",
                   help=f"weight format (default: {d.weights}, 4.5 bits)")
    g.add_argument("--kv", default=d.kv, metavar="FORMAT", help=f"KV-cache format (default: {d.kv})")
    g.add_argument("--depths", type=DEPTHS, default=list(d.depths), metavar="LIST",
                   help="context depths, e.g. 1K..128K or 512,4K,32K (default: 1K..128K)")
    g.add_argument("--runtime", default=d.runtime, metavar="PROFILE",
                   help=f"runtime profile of the cost model: ideal, typical, or calibrated:<file> (default: {d.runtime})")
    g.add_argument("--concurrency", type=INTS, default=list(d.concurrency), metavar="LIST",
                   help="concurrent streams for the serving tests (default: 1,2,4,...,64)")
    g.add_argument("--serve-context", type=_argtype(parse_tokens, "tokens"), default=d.serve_context, metavar="TOKENS",
                   help="context per stream for the serving tests (default: 4K)")
    if report:
        g.add_argument("--measured", action="append", metavar="FILE",
                       help="measured records (from `glmbench measure`) to draw as markers; repeatable")


def _study_from_args(args):
    kw = dict(hardware=args.hardware, cards=tuple(args.cards), link_gbps=args.link, split=args.split,
              weights=args.weights, kv=args.kv, depths=tuple(args.depths), runtime=args.runtime)
    if args.model:
        kw["models"] = tuple(args.model)
    if getattr(args, "concurrency", None):
        kw["concurrency"] = tuple(args.concurrency)
    if getattr(args, "serve_context", None) is not None:
        kw["serve_context"] = args.serve_context
    return Study(**kw)


# ---- commands -----------------------------------------------------------------------------------
def cmd_report(args) -> int:
    study = _study_from_args(args)
    extra = []
    for path in args.measured or []:
        extra += _read(path)
    out = args.out
    result = report.run(study, out, extra_records=extra, progress=not args.quiet)
    print(f"report written to {os.path.join(out, 'report.md')} "
          f"({len(result['charts'])} charts, {result['n_records']} records)")
    return 0


def cmd_sweep(args) -> int:
    study = _study_from_args(args)
    tests = tuple(t.strip() for t in args.tests.split(",") if t.strip())
    out = args.out
    if out and not out.endswith((".json", ".csv")):
        raise UserError(f"--out must end in .json or .csv, got {out!r}")
    resumable = out if out and out.endswith(".json") else None
    recs = report.sweep(study, tests=tests, progress=not args.quiet, out=resumable)
    if resumable:
        print(f"wrote {len(recs)} records to {out}", file=sys.stderr)
    _emit_records(recs, args, None if resumable else out)
    return 0


def cmd_measure(args) -> int:
    from glmbench import measure  # the measured side needs the C core: imported only for this command
    out = args.out
    if out and not out.endswith((".json", ".csv")):
        raise UserError(f"--out must end in .json or .csv, got {out!r}")
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
                               out=out if out and out.endswith(".json") else None)
        if out and out.endswith(".csv"):
            rec.write_records(out, recs)
        _warn_unstable(recs, measure.protocol)
        _emit_records(recs, args)
        return 0
    recs = measure.measure(
        args.model, depths=tuple(args.depths), n_prompt=args.n_prompt, n_gen=args.n_gen,
        weights=args.weights or vocab.DEFAULTS["measured_weights"], kv=args.kv or vocab.DEFAULTS["kv"],
        mla_strategy=args.mla_strategy, threads=args.threads,
        repeats=args.repeats, layers=args.layers, bandwidth_probe=args.bandwidth_probe,
        retries=args.retries, out=out if out and out.endswith(".json") else None, progress=not args.quiet)
    if out and out.endswith(".csv"):
        rec.write_records(out, recs)
    if out:
        print(f"wrote {len(recs)} records to {out}", file=sys.stderr)
    _warn_unstable(recs, measure.protocol)
    _emit_records(recs, args)
    return 0


def _warn_unstable(recs, protocol) -> None:
    """One `warning:` line on stderr per record marked unstable (protocol: glmbench.measure.protocol,
    handed over by cmd_measure, the one command that loads the measured side)."""
    for r in protocol.unstable(recs):
        print(protocol.warning_line(r), file=sys.stderr)


def cmd_models(args) -> int:
    names = args.names or None
    rows = configs.models_table(names)
    if args.json:
        print(json.dumps(rows, indent=1))
        return 0
    table = []
    for r in rows:
        kv = r["kv_bytes_per_token"]
        table.append({
            "model": r["name"], "family": r["family"], "layers": r["n_layers"], "hidden": r["hidden_size"],
            "params (B)": f"{r['total_params'] / 1e9:.1f}", "active (B)": f"{r['active_params'] / 1e9:.2f}",
            "KV/token f16 (KiB)": f"{kv['f16'] / 1024:.1f}",
            "KV @128K f16 (GiB)": f"{kv['f16'] * 131072 / 1024 ** 3:.2f}",
        })
    if args.csv:
        sys.stdout.write(_plain_csv(table))
        return 0
    print(format_table(table, list(table[0]) if table else None))
    return 0


def cmd_hardware(args) -> int:
    names = hardware.list_gpus()
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
    return {"key": d["key"], "name": d["name"], "memory (GiB)": d["memory_gib"],
            "bandwidth (GB/s)": d["bandwidth_gbs"], "bf16 (TFLOPS)": t.get("bf16"),
            "fp32 (TFLOPS)": t.get("fp32"), "int8 (TOPS)": t.get("int8"),
            "link (GB/s)": d.get("link_gbps"), "launch (us)": d.get("launch_us")}


def cmd_compare(args) -> int:
    a, b = _read(args.a), _read(args.b)
    rows, header = compare(a, b)
    if not rows:
        raise UserError(f"no points in common between {args.a} and {args.b} (same test, model and depth)")
    if args.json:
        print(json.dumps({"a": args.a, "b": args.b, "differences": header, "rows": rows}, indent=1,
                         default=str))
    elif args.csv:
        sys.stdout.write(_plain_csv(rows))
    else:
        print(f"A: {args.a}\nB: {args.b}")
        for k, (va, vb) in header.items():
            print(f"  {k}: A={_fmt(va)}  B={_fmt(vb)}")
        shown = [dict(r, **{"B/A": f"{r['B/A']:.3f}"}) for r in rows]
        print(format_table(shown, list(rows[0])))
    return 0


def cmd_plot(args) -> int:
    recs = _read(args.file)
    out = args.out or os.path.splitext(args.file)[0] + "-charts"
    paths = plots.save_charts(recs, out)
    if not paths:
        raise UserError(f"{args.file}: nothing to draw (no tg, pp, mem or serve records)")
    for p in paths:
        print(p)
    return 0


def _read(path) -> list[dict]:
    if not os.path.exists(path):
        raise UserError(f"no such file: {path}")
    return rec.read_records(path)


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
    sp.add_argument("-q", "--quiet", action="store_true", help="no progress bar")

    sp = add("sweep", "predicted records for models x card counts x depths (the cost model)", cmd_sweep)
    _add_study_options(sp, report=False)
    sp.add_argument("--tests", default="tg,pp,mem", metavar="LIST",
                    help="tests to predict: tg (decode at each depth), pp (prefill from empty at each depth "
                         "as the prompt length), mem, serve (default: tg,pp,mem)")
    sp.add_argument("--out", metavar="FILE.json|FILE.csv", help="write the records to a file")
    sp.add_argument("-q", "--quiet", action="store_true", help="no progress bar")
    fmt_opts(sp)

    sp = add("measure", "time a model's layers on this machine's CPU (evidence=measured)", cmd_measure)
    sp.add_argument("model", metavar="MODEL", help="built-in name or config.json (weights are random, seeded)")
    sp.add_argument("--depths", type=DEPTHS, default=[4096], metavar="LIST", help="cache depths (default: 4K)")
    sp.add_argument("--n-prompt", type=int, default=512, help="prefill chunk in tokens (default: 512)")
    sp.add_argument("--n-gen", type=int, default=16, help="tokens generated per repeat (default: 16)")
    sp.add_argument("--weights", default=None,
                    help=f"weight format (default: {vocab.DEFAULTS['measured_weights']}; --device cuda: bf16)")
    sp.add_argument("--kv", default=None, help=f"KV-cache format (default: {vocab.DEFAULTS['kv']}; --device cuda: bf16)")
    sp.add_argument("--mla-strategy", default=vocab.DEFAULTS["mla_strategy"], choices=vocab.MLA_STRATEGIES,
                    help="MLA attention form (default: flash)")
    sp.add_argument("--threads", type=int, default=None, help="threads (default: all cores)")
    sp.add_argument("--device", default="cpu", choices=("cpu", "cuda"),
                    help="cpu (default), or cuda: the whole model on the GPU, bf16 (docs/CUDA.md)")
    sp.add_argument("--repeats", type=int, default=3, help="repeats per point (default: 3)")
    sp.add_argument("--layers", default="auto",
                    help="auto (the whole model if it fits in memory, else sampled), full, sampled, or "
                         "a number k of layers of each kind to build and time (default: auto)")
    sp.add_argument("--bandwidth-probe", action="store_true",
                    help="measure the memory bandwidth after each timed repeat and record it (CPU)")
    sp.add_argument("--retries", type=int, default=0, metavar="N",
                    help="time a point marked unstable (the machine was busy) again, up to N times (CPU; default: 0)")
    sp.add_argument("--out", metavar="FILE.json|FILE.csv", help="write the records (a .json file resumes)")
    sp.add_argument("-q", "--quiet", action="store_true", help="no progress bar")
    fmt_opts(sp)

    sp = add("models", "list the built-in model configs", cmd_models)
    sp.add_argument("names", nargs="*", metavar="NAME|config.json", help="only these models")
    fmt_opts(sp)

    sp = add("hardware", "list the built-in hardware profiles", cmd_hardware)
    fmt_opts(sp)

    sp = add("compare", "two result files side by side, with B/A ratios", cmd_compare)
    sp.add_argument("a", metavar="A", help="baseline records (.json or .csv)")
    sp.add_argument("b", metavar="B", help="records to compare with the baseline")
    fmt_opts(sp)

    sp = add("plot", "draw every chart a result file has data for", cmd_plot)
    sp.add_argument("file", metavar="FILE", help="records (.json or .csv)")
    sp.add_argument("--out", metavar="DIR", help="folder for the PNGs (default: FILE without extension + '-charts')")
    return p


def main(argv: list[str] | None = None) -> int:
    parser = build_parser()
    try:
        args = parser.parse_args(argv)
        if not getattr(args, "command", None):
            parser.print_help()
            return EXIT_USAGE
        if getattr(args, "layers", None) not in (None, "auto", "full", "sampled"):
            try:
                args.layers = int(args.layers)
            except ValueError:
                raise UserError(f"--layers must be auto, full, sampled or a whole number, got {args.layers!r}") from None
        return args.func(args)
    except UserError as e:
        return _fail(str(e))
    except (ValueError, TypeError, KeyError, OSError, ImportError) as e:
        # ImportError: a measured command where the C core was not built (core/_loader.py says why)
        if os.environ.get("GLMBENCH_TRACEBACK") == "1":
            raise
        msg = e.args[0] if isinstance(e, KeyError) and e.args else e
        prog = f"glmbench {args.command}" if "args" in locals() and getattr(args, "command", None) else "glmbench"
        return _fail(f"{prog}: {msg}")
    except KeyboardInterrupt:
        print("glmbench: interrupted (finished points are saved; rerun to resume)", file=sys.stderr)
        return EXIT_INTERRUPTED


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

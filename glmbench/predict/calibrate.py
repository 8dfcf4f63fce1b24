"""Calibration: fit a runtime profile to measured points, and say how far off it still is.

    from glmbench.predict import calibrate
    pts = calibrate.load_points(["my-llama-bench.json"], model="glm-4.7-flash", hardware="rtx-3090",
                                cards=2, link=1.4, weights="iq4_xs")
    fit = calibrate.calibrate(pts, name="my-runtime")
    fit.profile            # a RuntimeProfile (evidence "calibrated" in sweeps)
    fit.table()            # every point: measured, predicted, residual; MAPE; cross-validated error

The profile starts from `typical` with its counted kernel launches (unsourced) replaced by a fixed
cost per pass and per layer (`step_overhead_us`, `layer_overhead_us`, set to what the counted
launches cost for the first point's model, so an unfitted profile predicts what `typical` does).
The parameters a fit may move (every one physical: efficiencies in (0, 1], overheads >= 0):

  memory_efficiency.<class>, compute_efficiency.<class>   class: matmul, attention, vector
  mla_attention_efficiency.<strategy>   memory efficiency of MLA attention, per strategy in the points
  kv_attention_efficiency.<format>      per quantized KV format in the points
  step_overhead_us, layer_overhead_us
  link_efficiency                       when a point runs on several cards

Only what the points identify is fitted (fit_profile): the sensitivity of log(predicted) to each
parameter (a column of the Jacobian) decides; a parameter whose column is small, or lies in the
span of those already chosen (its remainder below SELECT_TOL of the largest column), is not fitted,
and there are never more fitted parameters than points. Two depths of one test identify about two
numbers. The others keep their typical value, and the profile says which is which. The fit
minimizes the squared log residuals (scipy least_squares, bounded); the leave-one-out error refits
without each point (choosing again) and predicts it; above LOO_MAX_POINTS points (or with cv=K) the
error is K-fold cross-validated instead (kfold_predictions), and the table and profile say which.
"""
from __future__ import annotations

import dataclasses
import json
import math
import os
from dataclasses import dataclass, field
from typing import Sequence

import numpy as np
from scipy.optimize import least_squares

from glmbench import vocab
from glmbench.models import configs
from glmbench.predict import costmodel as cm
from glmbench.predict import hardware
from glmbench.predict import runtime as rtm
from glmbench.results import importers
from glmbench.results import records as rec

SELECT_TOL = 0.05      # a direction smaller than this share of the largest sensitivity is not fitted
MIN_EFF = 1e-3         # the lower bound of a fitted efficiency
MAX_OVERHEAD_US = 1e6  # the upper bound of a fitted overhead
# The order in which parameters win ties (equal sensitivity): the ones a runtime most plausibly
# differs in first.
PRIORITY = ("layer_overhead_us", "mla_attention_efficiency", "compute_efficiency.matmul",
            "compute_efficiency.attention", "memory_efficiency.matmul", "memory_efficiency.attention",
            "kv_attention_efficiency", "step_overhead_us", "link_efficiency", "memory_efficiency.vector",
            "compute_efficiency.vector")


class CalibrationError(ValueError):
    """Bad input to a calibration: names the file and line (or record) it comes from."""


# ---- measured points ---------------------------------------------------------------------------
# A speed outside this range is no measurement (a unit mix-up: tok/ms, ns for s; or a broken
# record): the slowest real run here is a 70B+ dense model on a CPU at ~0.1 tok/s, the fastest a
# batched prefill of a small model on a cluster at ~1e6 tok/s; each bound leaves 1000x room.
SPEED_MIN_TS = 1e-4
SPEED_MAX_TS = 1e9
# measured records that carry no speed (glmbench measure writes `mem`; serving runs `serve`)
NON_SPEED_TESTS = ("mem", "serve")
@dataclass(frozen=True)
class Point:
    """One measured record, resolved to the setup it ran on."""
    where: str                 # "file:line"
    setup: cm.Setup            # the runtime of this setup is replaced by each candidate profile
    test: str                  # "tg" | "pp"
    n_depth: int
    n_prompt: int
    n_gen: int
    measured: float            # tok/s
    record: dict = field(compare=False, repr=False)

    @property
    def streams(self) -> int:
        """Streams the record ran at once (llama-batched-bench's B, a server's concurrency): its
        speed is their aggregate; 1 for llama-bench / sweep-bench and glmbench's own records."""
        v = self.record.get("n_streams") or self.record.get("pl") or 1
        return int(v) if isinstance(v, (int, float)) and not isinstance(v, bool) and v >= 1 else 1

    @property
    def label(self) -> str:
        what = f"pp{self.n_prompt}" if self.test == "pp" else f"tg{self.n_gen}"
        b = f" x{self.streams} streams" if self.streams > 1 else ""
        return f"{self.setup.model.name} {what} @ d{self.n_depth}{b}"


def _record_lines(path: str, text: str, n: int) -> list[int]:
    """The line each record starts on: CSV rows (the header is line 1), or the objects of a JSON
    list, found by decoding them one after another."""
    if path.endswith(".csv") or not text.lstrip("\ufeff \t\r\n").startswith("["):   # (a pipe's CSV: no suffix)
        return list(range(2, n + 2))
    dec = json.JSONDecoder()
    lines, i = [], text.index("[") + 1
    while len(lines) < n:
        while text[i] in " \t\r\n,":
            i += 1
        lines.append(text.count("\n", 0, i) + 1)
        _, i = dec.raw_decode(text, i)
    return lines


def read_measured(path, model=None, notices: list | None = None) -> list[tuple[str, dict]]:
    """[(where, record)] of a measured file; where = 'file:line'. glmbench records (.json or .csv)
    are read as they are; any other format `glmbench compare` reads (llama-bench -o json/jsonl/csv/
    md/sql, sweep-bench, batched-bench, ...; glmbench.results.importers, told from the content) is
    imported first, `model` naming the model where the file cannot tell. Raises CalibrationError
    naming the file (and line) for a missing, empty or unreadable file."""
    p = os.fspath(path)
    if os.path.isdir(p):
        raise CalibrationError(f"{p}: is a folder, not a file of measured records")
    if not os.path.exists(p):     # (a named pipe or /dev/stdin is read as a file is: once)
        raise CalibrationError(f"{p}: no such file")
    with open(p, "rb") as f:
        raw = f.read()
    try:
        text = importers.decoded(raw, p)     # UTF-8 (a BOM is not part of the header), or UTF-16 with its BOM
    except importers.FormatError as e:
        raise CalibrationError(f"{e}; expected measured records (glmbench .json/.csv, llama-bench -o "
                               "json/jsonl/csv/md/sql, ...)") from None
    if not text.strip():
        raise CalibrationError(f"{p}:1: the file is empty (expected measured records)")
    try:
        fmt = importers.detect(text, p)
    except importers.FormatError as e:
        raise CalibrationError(str(e)) from None
    if fmt != "glmbench":
        try:
            recs = importers.read_text(text, p, model=None if model is None else str(model), notices=notices)
        except (importers.FormatError, ValueError) as e:
            raise CalibrationError(str(e)) from None
        return [(r.get("source") or p, r) for r in recs]
    try:
        recs = rec.parse_records(text, p)   # the text read above: the file is not opened twice
    except (ValueError, TypeError) as e:
        msg = str(e)
        raise CalibrationError(msg if msg.startswith(p) else f"{p}: {msg}") from None
    if not recs:
        raise CalibrationError(f"{p}:1: no records in the file")
    lines = _record_lines(p, text, len(recs))
    return [(f"{p}:{ln}", r) for ln, r in zip(lines, recs)]


def _int_field(where, r, k, lo, default=None):
    v = r.get(k, default)
    if v is None:
        raise CalibrationError(f"{where}: record has no `{k}`")
    if isinstance(v, float) and v.is_integer():
        v = int(v)
    if isinstance(v, bool) or not isinstance(v, int) or v < lo:
        raise CalibrationError(f"{where}: field `{k}` must be a whole number >= {lo}, got {v!r}")
    return v


# llama.cpp's file types whose name is also a single ggml type's: a published GGUF said to be "Q4_0"
# (llama-bench's model type "llama 7B Q4_0", a file name) is llama-quantize's Q4_0 file, whose
# output matrix (or tied token_embd) the quantizer keeps in Q6_K (src/llama-quant.cpp
# llama_tensor_get_type; vocab.mix_type), not the pure type on every tensor (`--pure`)
FILE_TYPE_MIX = {"q4_0": "mix:Q4_0", "q4_1": "mix:Q4_1", "q5_0": "mix:Q5_0", "q5_1": "mix:Q5_1",
                 "q8_0": "mix:Q8_0", "q6_K": "mix:Q6_K", "iq4_nl": "mix:IQ4_NL", "iq4_xs": "mix:IQ4_XS"}


def file_weights(weights: str | None, cfg, model_size=None) -> str | None:
    """The weight format a published GGUF of file type `weights` holds (FILE_TYPE_MIX: llama.cpp's
    file type, its output in Q6_K); where the record states the file's bytes (llama-bench's
    model_size), whichever of the file type and the pure type comes closer to them."""
    mix = FILE_TYPE_MIX.get(str(weights)) if weights else None
    if mix is None:
        return weights
    if model_size:
        def off(w):      # how far the file's stated bytes are from the format's
            return abs(cfg.weight_bytes(w) - float(model_size))
        if off(weights) < off(mix):
            return weights
    return mix


def point_from_record(where: str, r: dict, *, model=None, hardware_=None, cards=None, link=None,
                      split=None, weights=None, kv=None, mla_strategy=None) -> Point:
    """A Point from one measured record; the keyword arguments, when given, override the record's
    fields (what a record cannot tell, such as which model a `deepseek2 30B.A3B` is)."""
    if r.get("evidence") != "measured":
        raise CalibrationError(f"{where}: record evidence is {r.get('evidence')!r}; calibrate fits measured points only")
    test = r.get("test")
    if test not in ("tg", "pp"):
        raise CalibrationError(f"{where}: field `test` must be 'tg' or 'pp' to calibrate speed, got {test!r}")
    v = r.get("avg_ts")
    if v is None:
        raise CalibrationError(f"{where}: record has no speed (`avg_ts`)")
    if isinstance(v, bool) or not isinstance(v, (int, float)) or not math.isfinite(v) or v <= 0:
        raise CalibrationError(f"{where}: field `avg_ts` must be a speed > 0 (tokens/s), got {v!r}")
    if not SPEED_MIN_TS <= v <= SPEED_MAX_TS:
        raise CalibrationError(f"{where}: field `avg_ts` is {v:.3g} tok/s, outside what any run measures "
                               f"({SPEED_MIN_TS:g} to {SPEED_MAX_TS:g} tok/s): a unit mix-up or a broken record; "
                               "fix or drop it")
    if r.get("n_depth") is None:
        raise CalibrationError(f"{where}: record has no depth (`n_depth`)")
    depth = _int_field(where, r, "n_depth", 0)
    n_prompt = _int_field(where, r, "n_prompt", 1) if test == "pp" else 0
    n_gen = _int_field(where, r, "n_gen", 1, default=1) if test == "tg" else 0
    m = model or r.get("model")
    if not m:
        raise CalibrationError(f"{where}: the record does not say which model ran; pass --model")
    hw = hardware_ or r.get("hardware") or r.get("device")
    if not hw:
        raise CalibrationError(f"{where}: the record does not say which hardware ran it; pass --hardware")
    on_cpu = isinstance(hw, str) and (hw.startswith("CPU:") or r.get("backends") == "CPU")
    if hardware_ is None and on_cpu and not r.get("hardware"):
        raise CalibrationError(f"{where}: measured on a CPU ({hw!r}); pass --hardware host (this machine, "
                               "measured now) or a saved host profile (glmbench hardware --save-host FILE.json)")
    n = cards if cards is not None else r.get("n_cards", 1) or 1
    try:
        gpu = hardware.get_gpu(hw)
        rec_dev = r.get("hardware") or r.get("device")
        if gpu.kind != "cpu" and (r.get("backends") == "CPU"
                                  or (isinstance(rec_dev, str) and rec_dev.startswith("CPU:"))):
            # a CPU's speeds against a GPU's ceilings: the fit would put the gap into the efficiencies
            # (a matmul at 0.2% of the card's bandwidth), a profile that describes neither machine
            raise ValueError(f"measured on a CPU ({rec_dev!r}) but --hardware "
                             f"{hardware_ or hw!r} is a GPU; pass --hardware host (this machine, measured now) "
                             "or a saved host profile (glmbench hardware --save-host FILE.json)")
        lg = link if link is not None else r.get("link_gbps")
        lat = r.get("link_latency_us") if link is None else None
        if n > 1 and lat is None:
            lat = hardware.default_link_latency_us(gpu, lg)   # as `glmbench sweep` takes it
        rig = hardware.Rig(gpu, int(n), link_gbps=lg if n > 1 else None, link_latency_us=lat if n > 1 else None)
        sp = split or (r.get("split") if r.get("split") not in (None, "") else None) or ("none" if n == 1 else "layer")
        if n == 1:
            sp = "none"
        w = weights or r.get("weights") or vocab.DEFAULTS["weights"]
        k = kv or r.get("type_k") or vocab.DEFAULTS["kv"]
        cfg = configs.load(m)
        rec_hw = r.get("hardware") or r.get("device")
        rec_cpu = r.get("backends") == "CPU" or (isinstance(rec_hw, str) and rec_hw.startswith("CPU:"))
        if weights is None and not rec_cpu and str(r.get("tool") or "").startswith("llama-"):
            # a llama.cpp tool's run of a GGUF on a GPU: its file type (file_weights); the CPU runs
            # this repo records are of glmbench's own files, written with the type on every matrix
            w = file_weights(w, cfg, r.get("model_size"))
        st = mla_strategy or r.get("mla_strategy") or vocab.DEFAULTS["mla_strategy"]
        setup = cm.Setup(cfg, rig, split=sp, weights=str(w), kv=str(k), mla_strategy=st, runtime="typical")
    except (ValueError, TypeError, KeyError, OSError) as e:
        msg = e.args[0] if isinstance(e, KeyError) and e.args else e
        raise CalibrationError(f"{where}: {msg}") from None
    return Point(where, setup, test, depth, n_prompt, n_gen, float(v), r)


def _link_for(where, r, overrides, notices) -> dict:
    """The overrides for one record, with the card-to-card link of a multi-card record that states
    none (an imported llama-bench run): the GPU profile's stated link, else the study's 1.4 GB/s;
    said once in `notices`."""
    n = overrides.get("cards") or r.get("n_cards") or 1
    if n <= 1 or overrides.get("link") is not None or r.get("link_gbps") is not None:
        return overrides
    hw = overrides.get("hardware_") or r.get("hardware") or r.get("device")
    try:
        gpu = hardware.get_gpu(hw)
    except (ValueError, TypeError, OSError):
        return overrides          # point_from_record names the bad hardware
    if gpu.link_gbps:
        msg = f"card-to-card link: {gpu.name}'s stated {gpu.link_gbps:g} GB/s (its profile); --link sets another"
        out = overrides
    else:
        msg = (f"card-to-card link: the study's {hardware.STUDY_LINK_GBPS:g} GB/s ({gpu.name}'s profile states "
               f"none); --link sets another")
        out = dict(overrides, link=hardware.STUDY_LINK_GBPS)
    if notices is not None and not any(msg in x for x in notices):
        notices.append(f"{where}: {msg}")
    return out


def load_points(paths: Sequence, notices: list | None = None, *, exclude_unstable: bool = False, notice=None,
                multi_stream: bool = False, **overrides) -> list[Point]:
    """Every measured tg/pp record of the files as a Point (read_measured, point_from_record).
    Records that are no speed (`mem`, `serve`: what `glmbench measure` writes beside its tg/pp
    points) and llama-bench's pp<n>+tg<n> rows (test `pg`) are skipped; records marked
    `stable: false` (timed while another process took the machine) are kept with a warning, or
    skipped with `exclude_unstable`. Each skip and warning is one line to `notice(text)` and, when
    given, appended to `notices` (what the importer assumed goes there too). Records of several
    streams at once (llama-batched-bench's B > 1, `n_streams`) are skipped with a notice unless
    `multi_stream` (a fit is of single-stream speed; predict_point prices them as B streams).
    `hardware_` prices every record on that card; records that state another GPU are warned about
    (one line per file, naming the card and lines), as the override is then likely a mistake."""
    if not paths:
        raise CalibrationError("no measurement files given")
    def say(text):
        if notice is not None:
            notice(text)
        if notices is not None:
            notices.append(text)
    out = []
    for p in paths:
        skipped: dict = {}
        other_card: dict = {}       # {card the records state: [where]} where --hardware names another
        for where, r in read_measured(p, model=overrides.get("model"), notices=notices):
            stated = _other_card(r, overrides.get("hardware_"))
            closed = serving_record(r)
            if closed is not None:      # a serving benchmark's closed loop: a decode point of its B streams
                r = closed
            elif r.get("evidence") == "measured" and r.get("test") in NON_SPEED_TESTS + ("pg",):
                skipped.setdefault(r["test"] if r.get("test") != "serve" else "serve", []).append(where)
                continue
            pt = point_from_record(where, r, **_link_for(where, r, overrides, notices))
            if pt.streams > 1 and not multi_stream and not r.get("serving"):
                skipped.setdefault("streams", []).append(where)
                continue
            if r.get("stable") is False:
                why = r.get("unstable_reason") or "no reason given"
                if exclude_unstable:
                    say(f"notice: {where}: {pt.label} is marked unstable ({why}); left out (--exclude-unstable)")
                    continue
                say(f"warning: {where}: {pt.label} is marked unstable ({why}): its speed may be a neighbour's; "
                    "fitted anyway (retime it on a quiet machine, or pass --exclude-unstable)")
            if stated is not None:
                other_card.setdefault(stated, []).append(where)
            out.append(pt)
        if other_card:
            hw = overrides["hardware_"]
            flag = hw.name if isinstance(hw, hardware.GPU) else os.fspath(hw)
            name = hardware.get_gpu(hw).name
            said = "; ".join(f"{card} (line{'s' if len(w) > 1 else ''} "
                             + ", ".join(x.rsplit(":", 1)[-1] for x in w[:5]) + (", ..." if len(w) > 5 else "") + ")"
                             for card, w in other_card.items())
            n = sum(len(w) for w in other_card.values())
            say(f"warning: {p}: --hardware {flag} prices {n} record{'s' if n > 1 else ''} that state{'' if n > 1 else 's'} "
                f"another card as {name}: {said}; leave --hardware out to fit each on the card it ran on, or fit "
                "that card's records on their own")
        for test, wheres in skipped.items():
            lines = ", ".join(w.rsplit(":", 1)[-1] for w in wheres[:5]) + (", ..." if len(wheres) > 5 else "")
            if test == "streams":
                say(f"notice: {p}: skipped {len(wheres)} record{'s' if len(wheres) > 1 else ''} of several streams at "
                    f"once (llama-batched-bench B > 1; line{'s' if len(wheres) > 1 else ''} {lines}): their speed is "
                    "the streams' aggregate; calibrate fits single-stream tg and pp (bench/bench_public_batched.py "
                    "predicts batched runs)")
                continue
            if test == "serve":
                say(f"notice: {p}: skipped {len(wheres)} serving result{'s' if len(wheres) > 1 else ''} "
                    f"(line{'s' if len(wheres) > 1 else ''} {lines}) that are not a closed loop (a mean TPOT, a maximum "
                    "concurrency and no request rate): an open or paced loop, an offline run, or glmbench's own "
                    "`serve` record: no fixed number of streams "
                    "decoding; calibrate fits tg, pp and closed-loop serving runs")
                continue
            what = ("pp+tg row (test pg, llama-bench -pg)" if test == "pg" else f"`{test}` record")
            say(f"notice: {p}: skipped {len(wheres)} {what}{'s' if len(wheres) > 1 else ''} "
                f"(line{'s' if len(wheres) > 1 else ''} {lines}): not a speed; calibrate fits tg and pp")
    if not out:
        raise CalibrationError(f"no tg or pp speed records in {', '.join(os.fspath(p) for p in paths)}"
                               + (" (every one was unstable and --exclude-unstable left it out)" if exclude_unstable else ""))
    return out


def _other_card(r: dict, hw) -> str | None:
    """The card a GPU record states (`hardware`), where --hardware (`hw`) names another; else None (no
    --hardware, a record that states no card or a CPU, or the same card)."""
    stated = r.get("hardware")
    if hw is None or not isinstance(stated, str) or not stated or r.get("backends") == "CPU" \
            or stated.startswith("CPU:") or hardware.is_host(stated):
        return None
    try:
        mine, theirs = hardware.get_gpu(hw), hardware.get_gpu(stated)
    except (ValueError, TypeError, OSError):
        return None           # point_from_record names a card it cannot read
    if mine.kind == "cpu" or mine.key == theirs.key or mine.name == theirs.name:
        return None
    return theirs.name


def closed_loop(r: dict) -> bool:
    """The serving result ran a closed loop: --max-concurrency B, a mean TPOT, and no request rate
    (vLLM's default inf: the next request goes out as one finishes, so B streams at once). With a
    finite rate (or SGLang's `trace`) the arrivals, not B, set how many streams decode."""
    rate = r.get("request_rate")
    unpaced = rate is None or (isinstance(rate, str) and rate.strip().lower() == "inf") or (
        isinstance(rate, (int, float)) and math.isinf(rate))
    return bool(r.get("tpot_s") and r.get("max_concurrency") and unpaced)


def serving_record(r: dict) -> dict | None:
    """A serving benchmark's closed-loop result (vLLM's bench serve / SGLang's bench_serving with
    --max-concurrency B and a mean TPOT, read by glmbench.results.importers) as the decode point
    calibrate fits: tg of its mean output at the depth of its mean prompt, B streams, B / mean TPOT
    tok/s (`serving`: predict_point prices it as the closed loop's steps, costmodel.closed_loop_tpot,
    as the public fit does); None for any other record."""
    if r.get("evidence") != "measured" or r.get("test") != "serve" or r.get("serve_kind") or not closed_loop(r):
        return None
    B = int(r["max_concurrency"])
    return {**r, "test": "tg", "n_prompt": 0, "n_gen": max(int(r.get("n_gen") or 1), 2),
            "n_depth": int(r.get("n_prompt") or 0), "n_streams": B, "avg_ts": B / float(r["tpot_s"]), "serving": True}


def check_weights_run(points: Sequence[Point], profile: cm.RuntimeProfile, option: str, given=None) -> None:
    """A CalibrationError naming the first point whose weights the runtime model `profile` cannot run
    (llama.cpp and ik_llama.cpp's own types, ...; with the options its record states, as predict_point
    runs it), and the option of the command that chose it (`option`: calibrate's --base, truth-table's
    --measured-calibrated) where a Setup would name --runtime."""
    for p in points:
        bp = profile
        if profile.options and not profile.option_values:
            bp = profile.with_options(**rtm.options_from_record(profile, p.record))
        refused = bp.weights_refused(p.setup.weight_fmt, option=option)
        if refused:
            raise CalibrationError(f"{p.where}: {option} {given or profile.name}: `weights`: {refused}")


def predict_point(pt: Point, profile: cm.RuntimeProfile) -> float:
    """tok/s the profile predicts for the point: pp n at depth, or the mean speed of n_gen
    tokens generated from depth on (the mean step time over the depths they see). A runtime model
    (llama.cpp, ...) runs with the options the record states (-fa, -ub: runtime.options_from_record)."""
    if profile.options and not profile.option_values:
        from glmbench.predict import runtime
        profile = profile.with_options(**runtime.options_from_record(profile, pt.record))
    s = dataclasses.replace(pt.setup, runtime=profile)
    B = pt.streams
    if pt.test == "pp":
        # B prompts at once (llama-batched-bench's PP): their aggregate rate, weights read once per ubatch
        return (cm.prefill_batch(s, pt.n_prompt, B, pt.n_depth) if B > 1 else cm.prefill(s, pt.n_prompt, pt.n_depth)).tok_s
    if pt.record.get("serving"):
        # a serving benchmark's closed loop: each decode step carries B / n_gen of one prompt's prefill
        return B / cm.closed_loop_tpot(s, pt.n_depth, pt.n_gen, B)
    if pt.n_gen == 1:
        return cm.decode(s, pt.n_depth, B).tok_s
    return B / cm._mean_decode_seconds(s, pt.n_depth, pt.n_gen, B)


# ---- parameters --------------------------------------------------------------------------------
def _get(p: cm.RuntimeProfile, name: str) -> float:
    head, _, key = name.partition(".")
    v = getattr(p, head)
    return v[key] if key else v


def _set(p: cm.RuntimeProfile, values: dict) -> cm.RuntimeProfile:
    ch: dict = {}
    for name, v in values.items():
        head, _, key = name.partition(".")
        if key:
            d = ch.setdefault(head, dict(getattr(p, head)))
            d[key] = float(v)
        else:
            ch[head] = float(v)
    out = dataclasses.replace(p, **ch)
    cm.same_ops_as(out, p, ch)      # a fit's trial builds the op lists of the profile it came from (none change)
    return out


def _is_eff(name: str) -> bool:
    return not name.endswith("_us")


def candidates(points: Sequence[Point]) -> list[str]:
    """The parameters these points could move, in PRIORITY order."""
    names = [f"{k}.{c}" for k in ("memory_efficiency", "compute_efficiency") for c in cm.CLASSES]
    names += ["step_overhead_us", "layer_overhead_us"]
    names += sorted({f"mla_attention_efficiency.{p.setup.mla_strategy}" for p in points if p.setup.model.attention == "mla"})
    names += sorted({f"kv_attention_efficiency.{p.setup.kv_fmt.name}" for p in points if p.setup.kv_fmt.dequant})
    if any(p.setup.n_cards > 1 for p in points):
        names.append("link_efficiency")

    def rank(n):
        for i, pre in enumerate(PRIORITY):
            if n == pre or n.startswith(pre + "."):
                return i
        return len(PRIORITY)
    return sorted(names, key=lambda n: (rank(n), n))


def base_profile(points: Sequence[Point], base="typical") -> tuple[cm.RuntimeProfile, dict]:
    """The starting profile and where each starting value comes from: `base` with its counted
    launches (if it counts them) turned into fixed per-pass and per-layer costs for the first
    point's model and GPU, and each MLA strategy of the points at base's attention memory
    efficiency."""
    b = cm.load_runtime(base)
    check_weights_run(points, b, "--base", base)
    why = {}
    step_us = layer_us = 0.0
    if b.launch_overhead:
        s0 = dataclasses.replace(points[0].setup, runtime=b)
        st = cm.decode(s0, 0)
        head = sum(o.launch_s for o in st.ops if o.name.startswith("head."))
        layers = sum(o.launch_s for o in st.ops if not o.name.startswith(("head.", "link")))
        step_us = 1e6 * head
        layer_us = 1e6 * layers / s0.model.n_layers
        src = (f"{b.name}'s counted kernel launches for {s0.model.name} on {s0.gpu.name} "
               f"({s0.gpu.launch_us:g} us each): {layer_us:.1f} us per layer, {step_us:.1f} us per step")
        why["layer_overhead_us"] = why["step_overhead_us"] = src
    mla = dict(b.mla_attention_efficiency)
    for p in points:
        s = p.setup.mla_strategy
        if p.setup.model.attention == "mla" and s not in mla:
            mla[s] = b.memory_efficiency["attention"]
            why[f"mla_attention_efficiency.{s}"] = f"{b.name}'s memory_efficiency.attention"
    prof = dataclasses.replace(b, launch_overhead=False, step_overhead_us=b.step_overhead_us + step_us,
                               layer_overhead_us=b.layer_overhead_us + layer_us, mla_attention_efficiency=mla,
                               calibration={})
    return prof, why


def _stated_runtime(r: dict) -> tuple:
    """(the runtime model a record says in so many words it ran on, how it says it), or (None, None): its
    `runtime_model` / `runtime` field, or a tool or backend naming it (`llama-sweep-bench (ik_llama.cpp)`,
    the mainline port of sweep-bench, vLLM, SGLang, a Vulkan build). A plain llama-bench record says
    nothing of which fork built it (ik_llama.cpp ships a llama-bench too), nor does glmbench's own."""
    rt = rtm.from_record(r)
    if rt is None:
        return None, None
    for k in ("runtime_model", "runtime"):
        v = r.get(k)
        if isinstance(v, str) and v.split("[", 1)[0] == rt:
            return rt, f"`{k}: {v}`"
    tool = str(r.get("tool") or "")
    if rt == "llama.cpp" and "mainline" not in tool.lower():
        return None, None
    if rt == "llama.cpp-vulkan":
        return rt, f"`backends: {r.get('backends')}`"
    return rt, f"`tool: {tool}`"


def base_runtime_note(points: Sequence[Point], base) -> str | None:
    """One note where `base` is a runtime model (llama.cpp, ...) and the points' records say they ran on
    another runtime: the `base` column is then that model's prediction of another runtime's points."""
    b = str(getattr(base, "name", base)).split("[", 1)[0]
    if b not in rtm.names():
        return None
    other = {}
    for p in points:
        rt, how = _stated_runtime(p.record)
        if rt is not None and rt != b:
            other.setdefault((p.where.rsplit(":", 1)[0], rt), how)
    if not other:
        return None
    runtimes = list(dict.fromkeys(rt for _, rt in other))
    said = ", ".join(f"{os.path.basename(f)}'s records say {rt} ({how})" for (f, rt), how in other.items())
    return (f"note: --base {base} is {b}'s runtime model, but {said}: the `base` column is {b}'s prediction of "
            f"{' and '.join(runtimes)}'s points (--base {runtimes[0]} starts from that runtime's own model)")


def _residuals(points, profile) -> np.ndarray:
    return np.array([math.log(predict_point(p, profile) / p.measured) for p in points])


def sensitivities(points, profile, names) -> np.ndarray:
    """The change of log(predicted) per unit of each parameter's fit coordinate (_coords: log of
    an efficiency; an overhead over max(itself, 50 us)), by central differences of 1%."""
    J = np.zeros((len(points), len(names)))
    h = 0.01
    for j, n in enumerate(names):
        v = _get(profile, n)
        if _is_eff(n):
            up_v, lo_v = min(v * (1 + h), 1.0), v * (1 - h)
            step = math.log(up_v) - math.log(lo_v)
        else:
            sc = max(v, 50.0)
            up_v, lo_v = v + h * sc, max(v - h * sc, 0.0)
            step = (up_v - lo_v) / sc
        up = _residuals(points, _set(profile, {n: up_v}))
        lo = _residuals(points, _set(profile, {n: lo_v}))
        J[:, j] = (up - lo) / step
    return J


RIDGE = 1e-3          # weight of the pull toward the starting values in the first (all-parameter) fit


def _coords(n, v, v0):
    """A parameter's fit coordinate: log for efficiencies, microseconds / scale for overheads."""
    return math.log(v) if _is_eff(n) else v / max(v0, 50.0)


def _fit(points, start, names, *, x_from=None, ridge=0.0, starts=(1.0,)):
    """Least squares of the log residuals over `names` (efficiencies in log space, bounded to
    [MIN_EFF, 1]; overheads in microseconds, bounded to [0, MAX_OVERHEAD_US]), plus `ridge`
    times the squared distance from `start` (what the points do not pin down stays there).
    x_from: the profile whose values start the fit (default `start`); `starts`: factors on the
    starting efficiencies, each a separate start (the time of an op is the max of its compute and
    memory terms, so a fit started where a term does not bind cannot move it); the best wins."""
    if not names:
        return start
    src = start if x_from is None else x_from
    v0 = [_get(start, n) for n in names]

    def unpack(x):
        return {n: (math.exp(v) if _is_eff(n) else v * max(b, 50.0)) for n, v, b in zip(names, x, v0)}

    lo = np.array([math.log(MIN_EFF) if _is_eff(n) else 0.0 for n in names])
    hi = np.array([0.0 if _is_eff(n) else MAX_OVERHEAD_US / max(b, 50.0) for n, b in zip(names, v0)])
    u0 = np.array([_coords(n, min(max(b, MIN_EFF), 1.0) if _is_eff(n) else b, b) for n, b in zip(names, v0)])
    w = math.sqrt(ridge)

    def fun(x):
        r = _residuals(points, _set(start, unpack(x)))
        return np.concatenate([r, w * (x - u0)]) if ridge else r

    best = None
    for f in starts:
        x0 = []
        for n, b in zip(names, v0):
            v = _get(src, n)
            x0.append(_coords(n, min(max(v * f, MIN_EFF), 1.0), b) if _is_eff(n) else _coords(n, v, b))
        x0 = np.clip(np.array(x0), lo, hi)
        res = least_squares(fun, x0, bounds=(lo, hi), method="trf", xtol=1e-10, ftol=1e-12, gtol=1e-12, max_nfev=150)
        if best is None or res.cost < best.cost:
            best = res
    return _set(start, unpack(best.x))


def _cost(points, prof) -> float:
    r = _residuals(points, prof)
    return float(r @ r)


def fit_profile(points: Sequence[Point], base="typical", max_params: int | None = None):
    """(profile, fitted names, kept names, start profile, why).

    1. Every candidate parameter is fitted at once with a small pull toward its starting value
       (RIDGE), from several starts: the directions the points determine move, the others stay.
    2. The parameters are taken in the order of how far that fit moved them; each is kept if its
       sensitivity there is not already covered by those kept (its component
       outside their span is at least SELECT_TOL of the largest column), up to one per point.
    3. Those are fitted again without the pull, every other parameter back at its starting
       (typical) value.
    4. A chosen parameter is swapped for another when that lowers the squared log error by a
       fifth or more and the set stays identifiable (at most two swaps)."""
    start, why = base_profile(points, base)
    every = candidates(points)
    cap = len(points) if max_params is None else min(max_params, len(points))
    # a parameter the points are not sensitive to at the start (an op class that never binds)
    # cannot be identified: it is not fitted at all
    J0 = sensitivities(points, start, every)
    n0 = np.linalg.norm(J0, axis=0)
    names = [n for n, v in zip(every, n0) if n0.size and v >= SELECT_TOL * n0.max()]
    ridge = _fit(points, start, names, ridge=RIDGE, starts=(1.0, 0.3))
    J = sensitivities(points, ridge, names)
    top = float(np.linalg.norm(J, axis=0).max()) if J.size else 0.0
    moved = sorted(names, key=lambda n: -abs(_coords(n, max(_get(ridge, n), MIN_EFF) if _is_eff(n) else _get(ridge, n), _get(start, n))
                                            - _coords(n, max(_get(start, n), MIN_EFF) if _is_eff(n) else _get(start, n), _get(start, n))))
    chosen: list[str] = []
    Q = np.zeros((len(points), 0))
    for n in moved:
        if len(chosen) >= cap or top <= 1e-9:
            break
        col = J[:, names.index(n)]
        v = col - Q @ (Q.T @ col)
        nv = float(np.linalg.norm(v))
        if nv < SELECT_TOL * top:
            continue
        chosen.append(n)
        Q = np.column_stack([Q, v / nv])
    chosen = [n for n in names if n in chosen]
    prof = _fit(points, start, chosen, x_from=ridge, starts=(1.0,))
    alt = _fit(points, start, chosen, starts=(1.0, 0.3))
    if _cost(points, alt) < _cost(points, prof):
        prof = alt
    # 4. one parameter swapped for another the points are sensitive to, when that fits clearly
    #    better (the first fit can stop where a term does not bind): at most two swaps
    cost = _cost(points, prof)
    for _ in range(2):
        if cost < 1e-12:
            break
        best = None
        J_prof = None     # every candidate's sensitivity at prof, once a round (a column depends on its parameter only)
        for c in chosen:
            for u in names:
                if u in chosen:
                    continue
                trial_names = [n for n in chosen if n != c] + [u]
                if J_prof is None:
                    J_prof = sensitivities(points, prof, names)
                Jt = J_prof[:, [names.index(n) for n in trial_names]]
                if np.linalg.matrix_rank(Jt, tol=SELECT_TOL * top) < len(trial_names):
                    continue
                trial = _fit(points, start, trial_names, x_from=prof, starts=(1.0, 0.3))
                tc = _cost(points, trial)
                if tc < cost * 0.8 and (best is None or tc < best[0]):
                    best = (tc, trial_names, trial)
        if best is None:
            break
        cost, chosen, prof = best
        chosen = [n for n in names if n in chosen]
    kept = [n for n in every if n not in chosen]
    return prof, chosen, kept, start, why


@dataclass
class Calibration:
    profile: cm.RuntimeProfile
    points: list
    fitted: list
    kept: list
    predicted: list
    loo_predicted: list
    base_predicted: list | None = None   # the base profile's own predictions, before any fit
    base_name: str = ""
    cv_folds: int | None = None          # loo_predicted from k-fold cross-validation (K), None: leave-one-out

    @property
    def cv_label(self) -> str:
        """What loo_predicted are: "leave-one-out", or "K-fold cross-validated"."""
        return "leave-one-out" if self.cv_folds is None else f"{self.cv_folds}-fold cross-validated"

    @property
    def base_errors(self) -> list:
        return [None if q is None else q / pt.measured - 1 for q, pt in zip(self.base_predicted or [], self.points)]

    @property
    def base_mape(self):
        e = [abs(x) for x in self.base_errors if x is not None]
        return float(np.mean(e)) if e else None

    @property
    def residuals(self) -> list[float]:
        return [p / pt.measured - 1 for p, pt in zip(self.predicted, self.points)]

    @property
    def mape(self) -> float:
        return float(np.mean([abs(r) for r in self.residuals]))

    @property
    def loo_errors(self) -> list:
        return [None if q is None else q / pt.measured - 1 for q, pt in zip(self.loo_predicted, self.points)]

    @property
    def loo_mape(self):
        e = [abs(x) for x in self.loo_errors if x is not None]
        return float(np.mean(e)) if e else None

    def table(self) -> str:
        """Every point's residual, the MAPE and the cross-validated (leave-one-out or k-fold: cv_label) error,
        as text; beside them the base
        profile's own error before the fit (`base`: for a runtime model such as llama.cpp, how it
        predicts these points out of the box)."""
        base = self.base_errors or [None] * len(self.points)
        # what the points ran on (card, split, formats, offload): the rows name only model and test
        lines = [("measured on: " if i == 0 else "             ") + w
                 for i, w in enumerate(dict.fromkeys(_measured_on(pt.setup) for pt in self.points))]
        # points on more than one card (a file of two runs): each row names its card, or two rows read alike
        cards = [_card(pt.setup) for pt in self.points]
        labels = [pt.label + (f" on {c}" if len(set(cards)) > 1 else "") for pt, c in zip(self.points, cards)]
        w = max([38] + [len(x) for x in labels])
        lines.append(f"{'point':<{w}} {'measured':>10} {'predicted':>10} {'residual':>9} {'left out':>9} {'base':>9}  where")
        for pt, lab, p, r, l, b in zip(self.points, labels, self.predicted, self.residuals, self.loo_errors, base):
            lo = "–" if l is None else f"{100 * l:+.1f}%"
            bs = "–" if b is None else f"{100 * b:+.1f}%"
            lines.append(f"{lab:<{w}} {pt.measured:>10.1f} {p:>10.1f} {100 * r:>+8.1f}% {lo:>9} {bs:>9}  {pt.where}")
        loo = "–" if self.loo_mape is None else f"{100 * self.loo_mape:.1f}%"
        bm = "" if self.base_mape is None else (f"; base profile `{self.base_name}` before the fit (its options as "
                                                f"each record states them): {100 * self.base_mape:.1f}%")
        n = len(self.points)
        lines.append(f"MAPE {100 * self.mape:.1f}% over {n} point{'s' if n != 1 else ''}; {self.cv_label} error {loo}{bm}")
        lines.append("fitted: " + (", ".join(f"{n} = {_get(self.profile, n):.4g}{_at_bound(n, _get(self.profile, n))}"
                                             for n in self.fitted) or "nothing"))
        # the start profile's values (--base: typical, or a runtime model such as llama.cpp), which the
        # points did not identify (fit_profile): said as that profile's, not always typical's
        lines.append(f"kept at `{self.base_name or 'typical'}`'s value (not identified by these points): "
                     + (", ".join(self.kept) or "nothing"))
        tests = {pt.test for pt in self.points}
        for t, what in (("tg", "decode"), ("pp", "prefill")):
            if t not in tests:
                band = rtm.unvalidated_band(what)
                lines.append(f"no {t} point: this profile's {what} predictions were never measured against; their "
                             "records carry the widest band of the runtime models on " + what
                             + ("" if band is None else f" (±{100 * band:.0f}%)") + f", not the {self.cv_label} error")
        if len(self.points) == 1:
            lines.append("one point: no leave-one-out error, so its predictions of that test carry no band")
        return "\n".join(lines)


def _card(s: cm.Setup) -> str:
    """The card(s) a point ran on, short: "RTX 3090", "2 x RTX 3090"."""
    n = s.rig.n_cards
    return s.gpu.name if n == 1 else f"{n} x {s.gpu.name}"


def _measured_on(s: cm.Setup) -> str:
    """A point's setup without the runtime profile (each candidate's in turn): model, card(s), split,
    formats, MLA strategy, offload."""
    parts = [s.model.name, s.rig.name] + ([f"{s.split} split"] if s.split != "none" else []) + [f"{s.weights}/{s.kv}"]
    if s.model.attention == "mla":
        parts.append(f"MLA {s.mla_strategy}")
    if s.offload is not None:
        parts.append(f"{s.offload.label}, host {s.host.key or s.host.name}")
    return ", ".join(parts)


BOUND_TOL = 1e-3   # how near a bound a fitted value is "at" it (_at_bound)


def _at_bound(name: str, v: float) -> str:
    """" (at its bound ...)" where the fit stopped a parameter at an end of its range (_fit's bounds): the
    points pushed it there, so it is a limit, not a value they measure; else "". Within BOUND_TOL of the
    bound (relative; for an overhead's 0, BOUND_TOL us): least_squares' trust region stays strictly inside
    its bounds, so a parameter the points push past 1 stops at 0.9999 or 0.999999, not at 1."""
    if _is_eff(name):
        if v <= MIN_EFF * (1 + BOUND_TOL):
            return f" (at its lower bound {MIN_EFF:g}: the points ask for less; not a measured value)"
        if v >= 1 - BOUND_TOL:
            return " (at its upper bound 1: the points ask for more; not a measured value)"
        return ""
    if v <= BOUND_TOL:
        return " (at its lower bound 0: the points ask for none; not a measured value)"
    if v >= MAX_OVERHEAD_US * (1 - BOUND_TOL):
        return f" (at its upper bound {MAX_OVERHEAD_US:g} us; not a measured value)"
    return ""


def loo_predictions(points: Sequence[Point], base="typical", bar=None) -> list:
    """Each point predicted by a profile fitted (fit_profile, choosing again) without it; all None
    for fewer than two points. `bar` (a tqdm bar, or None) ticks once per fit."""
    points = list(points)
    return kfold_predictions(points, max(len(points), 2), base, bar)


# The cross-validation calibrate runs: leave-one-out (n + 1 fits, each over n - 1 points: hours at a few thousand
# points) up to LOO_MAX_POINTS points; above it CV_FOLDS-fold cross-validation (CV_FOLDS + 1 fits), what a
# fit to that many points is usually checked with. `glmbench calibrate --cv loo|K` chooses either way.
LOO_MAX_POINTS = vocab.CALIBRATE_LOO_MAX_POINTS
CV_FOLDS = vocab.CALIBRATE_CV_FOLDS


def cv_folds(n: int, k: int) -> list[int]:
    """The fold of each of n points in k-fold cross-validation: point i in fold i % k (deterministic; the
    folds interleave, so each spans the files, tests and depths in their order). With k >= n every point
    is a fold of its own: leave-one-out."""
    if isinstance(k, bool) or not isinstance(k, int) or k < 2:
        raise CalibrationError(f"cross-validation needs 2 or more folds, got {k!r}")
    return [i % k for i in range(n)]


def resolve_cv(cv, n: int) -> int | None:
    """The folds of a calibration of n points: None for leave-one-out, else K (2 <= K < n). `cv`: None or
    "auto" (leave-one-out up to LOO_MAX_POINTS points, CV_FOLDS folds above), "loo", or K (an int or its
    digits; K >= n is leave-one-out)."""
    if cv is None or cv == "auto":
        return None if n <= LOO_MAX_POINTS else CV_FOLDS
    if cv == "loo":
        return None
    k = cv
    if isinstance(k, str):
        k = int(k.strip()) if k.strip().isdigit() else k
    if isinstance(k, bool) or not isinstance(k, int) or k < 2:
        raise CalibrationError(f"--cv must be 'auto', 'loo' or a number of folds >= 2, got {cv!r}")
    return None if k >= n else k


def kfold_predictions(points: Sequence[Point], k: int, base="typical", bar=None) -> list:
    """Each point predicted by a profile fitted (fit_profile, choosing again) to the points of the other
    folds (cv_folds: point i in fold i % k); all None for fewer than two points. k >= n is leave-one-out
    (each point a fold of its own: k - n folds are empty and not fitted). `bar` ticks once per fit."""
    points = list(points)
    if len(points) < 2:
        return [None] * len(points)
    fold = cv_folds(len(points), k)
    out: list = [None] * len(points)
    for f in range(min(k, len(points))):
        prof = fit_profile([p for p, g in zip(points, fold) if g != f], base)[0]
        for i, g in enumerate(fold):
            if g == f:
                out[i] = predict_point(points[i], prof)
        if bar is not None:
            bar.update(1)
    return out


def calibrate(points: Sequence[Point], *, name: str = "calibrated", base="typical", description: str = "",
              loo: bool = True, progress: bool = False, cv=None) -> Calibration:
    """Fit a profile to the points (fit_profile), with each point's residual, the MAPE and the
    cross-validated predictions (`loo`: whether to compute them); the profile's `calibration` field
    records all of it and where the measurements came from. `cv` (resolve_cv): leave-one-out up to
    LOO_MAX_POINTS points (n + 1 fits, each over the points), CV_FOLDS-fold cross-validation above
    (CV_FOLDS + 1 fits); "loo" or a number of folds K chooses. `progress` shows a bar with its ETA."""
    points = list(points)
    if len(points) < 1:
        raise CalibrationError("no measured points to calibrate against")
    k = resolve_cv(cv, len(points))
    n_fits = 1 + ((len(points) if k is None else k) if loo and len(points) >= 2 else 0)
    bar = None
    if progress:
        from glmbench._progress import tqdm
        bar = tqdm(total=n_fits, desc="calibrate", unit="fit")
    try:
        prof, fitted, kept, start, why = fit_profile(points, base)
        if bar is not None:
            bar.update(1)
        predicted = [predict_point(p, prof) for p in points]
        if not loo:
            loo_pred = [None] * len(points)
        elif k is None:
            loo_pred = loo_predictions(points, base, bar)
        else:
            loo_pred = kfold_predictions(points, k, base, bar)
    finally:
        if bar is not None:
            bar.close()
    b = cm.load_runtime(base)
    cal = Calibration(prof, points, fitted, kept, predicted, loo_pred, [predict_point(p, b) for p in points], b.name,
                      cv_folds=k if loo and len(points) >= 2 else None)
    sources = dict(b.sources)
    files = sorted({p.where.rsplit(":", 1)[0] for p in points})
    for n in fitted:
        sources[n] = f"fitted to {len(points)} measured points ({', '.join(os.path.basename(f) for f in files)})"
    for n in kept:
        sources.setdefault(n, why.get(n, f"{b.name}'s value"))
        if n in why:
            sources[n] = why[n]
        sources[n] = "kept: " + sources[n]
    sources["launch_overhead"] = "off: replaced by step_overhead_us and layer_overhead_us"
    meas_src = []
    for p in points:
        s = p.record.get("source")
        if s and s not in meas_src:
            meas_src.append(s)
    calib = {
        "base": b.name,
        "files": files,
        "measurement_sources": meas_src,
        "fitted": {n: _get(prof, n) for n in fitted},
        "kept": {n: _get(prof, n) for n in kept},
        "mape": cal.mape,
        "loo_mape": cal.loo_mape,
        "base_mape": cal.base_mape,
        "points": [{"where": pt.where, "model": pt.setup.model.name, "setup": pt.setup.replace(runtime=prof).label,
                    "test": pt.test, "n_depth": pt.n_depth, "n_prompt": pt.n_prompt, "n_gen": pt.n_gen,
                    "measured_ts": pt.measured, "predicted_ts": q, "residual": q / pt.measured - 1,
                    "loo_predicted_ts": l, "loo_error": None if l is None else l / pt.measured - 1}
                   for pt, q, l in zip(points, predicted, loo_pred)],
    }
    if cal.cv_folds is not None:
        # k-fold: said beside the numbers (the keys stay those every reader of a profile's error reads)
        calib["cv"] = (f"{cal.cv_folds}-fold cross-validation (point i in fold i % {cal.cv_folds}, each fold predicted "
                       "by a fit to the others), not leave-one-out: loo_mape and each point's loo_predicted_ts / "
                       "loo_error are its out-of-fold predictions")
        calib["cv_folds"] = cal.cv_folds
        for d, f in zip(calib["points"], cv_folds(len(points), cal.cv_folds)):
            d["cv_fold"] = f
    desc = description or (f"Fitted by glmbench calibrate to {len(points)} measured points "
                           f"({', '.join(os.path.basename(f) for f in files)}), starting from `{b.name}`: "
                           f"fitted {', '.join(fitted) or 'nothing'}; every other parameter keeps its value.")
    cal.profile = dataclasses.replace(prof, name=name, description=desc, sources=sources, calibration=calib)
    return cal


def write_profile(path, cal: Calibration) -> str:
    """The calibrated profile as JSON (runtime_from_dict reads it back), written atomically."""
    d = cal.profile.to_dict()
    cm.runtime_from_dict(d, where=os.fspath(path))     # what is written must load
    rec.atomic_write_text(path, json.dumps(d, indent=1) + "\n")
    return os.fspath(path)

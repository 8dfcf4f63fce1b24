"""The joint fit of a runtime model to published results, and its cross-validation.

    from glmbench.predict import jointfit as jf
    pts = jf.load_public()                       # every shipped public record as a point
    fit = jf.fit_runtime("llama.cpp", [p for p in pts if p.runtime == "llama.cpp"])
    fit.profile                                  # the runtime model with its kernel table fitted
    jf.loso(pts, "llama.cpp")                    # each source predicted by a fit without it

A point is a measured record with its runtime, the options it ran with (`-fa`, `-ub`, `-mla`,
build era) and the card; all points of one runtime share its parameters (kernel efficiencies per
path and weight family, the per-layer and per-pass overheads, MoE occupancy), whatever the model
and the card: the card enters only through its datasheet (bandwidth, peaks).

Which parameters are fitted follows calibrate.py's rule: a candidate is an efficiency of a kernel
path (and family, where the runtime's points have more than one family on that path) whose op
takes at least MIN_SHARE of some point's time at the start, plus the overheads; a candidate is
fitted only if the points identify it (pivoted QR of the sensitivities: its column outside the span
of those chosen is at least calibrate.SELECT_TOL of the largest), and only where the points are
bound by it: each op's time is max(compute, memory), so a batched path's memory efficiency (whose
prefill points sit near the ridge) is its GEMV's, and an efficiency that binds no op at the fitted
values goes back to its start (BOUND_ONLY; docs/COSTMODEL.md, identifiability). The others keep
their start (physics) value and the profile says so. The fit minimizes squared log errors (scipy
least_squares, bounded: efficiencies in [MIN_EFF, 1], overheads >= 0).

Speed: each point is compiled once into arrays (FLOPs, bytes, peaks of every op of every pass,
and which kernel-table entries give its efficiencies); a profile is then evaluated for every point
in one vectorized pass. The kernel paths and the MLA prefill form are those of the start profile
with the point's options (they do not move during a fit).
"""
from __future__ import annotations

import copy
import dataclasses
import glob
import math
import os
from dataclasses import dataclass, field
from typing import Sequence

import numpy as np
from scipy.optimize import least_squares

from glmbench import vocab
from glmbench.models import configs
from glmbench.predict import calibrate as cal
from glmbench.predict import costmodel as cm
from glmbench.predict import hardware
from glmbench.predict import kernels as kn
from glmbench.predict import runtime
from glmbench.results import records as rec

PUBLIC_DIR = os.path.join(vocab.DATA_DIR, "public")
MIN_SHARE = 0.03           # an op path below this share of every point's time is not a candidate
MIN_EFF = cal.MIN_EFF
OVERHEADS = ("kernel_overhead_us", "step_overhead_us", "layer_overhead_us")
MOE_US = "mmid:layer_us"
HALF = "mmid:half_tokens"
EXPERT_US = kn.EXPERT_US
SOURCE_WEIGHTS = True      # each source weighs the same in a fit (points weighted 1/sqrt(n of its source))
ARCH_MIN_CARDS = 2         # an architecture with this many cards in the points gets a compute factor (0: none)
CARD_MIN_SOURCES = 0       # >0: a card with this many sources gets its own factors (off: 10x slower fits, little gain)
# a card whose boost clock NVIDIA does not publish (hardware.clock_unpublished: GB10, B200, GB200,
# H20) gets its own compute factor when this many sources measured it (0: none): its SMs x clock and
# tensor peaks are reported figures, and without its own factor the architecture's factor absorbs
# them (the public set's GB10 sources pulled the Blackwell factor from ~0.85-1.0 of the GeForce
# cards to 0.72; docs/COSTMODEL.md)
UNPUBLISHED_MIN_SOURCES = 3
FAMILY_KEYS = False        # per-family kernel entries where a runtime's points have several families
# options whose values get their own kernel efficiencies (a different set of shaders)
SCOPED_OPTIONS = {"llama.cpp-vulkan": ("coopmat",)}
# options whose non-default values get their own entries for some kernel paths only (and, with
# the mmid path, their own MoE fixed times mmid:layer_us / mmid:expert_us): llama.cpp-vulkan's
# `fork`: ik_llama.cpp's port of the Vulkan backend runs its own MoE and MLA graph (no -fmoe on
# Vulkan, -mla 2/3), so what its one published source shows for those paths is not mainline's;
# mainline Vulkan keeps the physics start there until a mainline source identifies them
# (docs/COSTMODEL.md). The option's first value is its default (no scope).
PATH_SCOPED_OPTIONS = {"llama.cpp-vulkan": {"fork": ("mla_flash", "mla_absorbed", "mla_naive", "mla_expand",
                                                     "mmid", "mmid_vec")}}
# identifiability (docs/COSTMODEL.md): a batched kernel path's memory efficiency is its GEMV
# counterpart's (kernels.GEMV_OF), not fitted; and an efficiency that binds no op of any point at
# the fitted values (roofline max(compute, memory): the other resource takes longer everywhere) goes
# back to its start. Both are listed in JointFit.unbound.
BOUND_ONLY = True
LR_PASS = True             # the likelihood-ratio forward pass (_lr_pass) after the sensitivity rule
LR_CRIT = 6.63             # chi-square(1) at 99%
LR_MAX_ADD = 3
LR_TRIAL_NFEV = 60         # function evaluations of each candidate's trial fit
LR_NOISE_FLOOR = 1e-3      # 0.1% per point: published tok/s carry 3-4 significant digits
LR_TIE = 1.0               # candidates whose statistics are within this of the best one are a tie
LR_CONTEND = 10.0          # trials within this of the best are refitted to convergence before the tie rule
LR_MAX_CONTENDERS = 4
PER_SM = True              # fit the per-SM limits (kernels.SM_PARAMS) where the points identify them
PER_SM_BYTES = True        # ... the weight GEMVs' streaming limit per SM-cycle among them (kernels.SM_BYTES)
# ... for the runtimes whose points put it on a card it caps (HBM: the scoreboard's H100; Jetson Orin).
# llama.cpp-vulkan has no point on such a card (its cards: 3.1-7.5 bytes per SM-cycle of bandwidth):
# its fit took the cap (6.4) to explain its one MoE source's per-token time, and its scoreboard fold
# then read 60% off instead of 7% (docs/COSTMODEL.md). ik_llama.cpp takes mainline's (FORK_SHARES).
SM_BYTES_RUNTIMES = ("llama.cpp", "ik_llama.cpp")


class FitError(ValueError):
    pass


# ---- points --------------------------------------------------------------------------------------
@dataclass
class PublicPoint:
    where: str                 # "file:line" of the original table (record field `line`)
    source: str                # the source id (one published table set)
    runtime: str
    options: dict
    setup: cm.Setup            # with the runtime's base profile
    test: str
    n_prompt: int
    n_gen: int
    n_depth: int
    batch: int
    measured: float
    record: dict = field(repr=False)

    @property
    def gpu_key(self) -> str:
        return self.setup.gpu.key or self.setup.gpu.name

    @property
    def label(self) -> str:
        what = f"pp{self.n_prompt}" if self.test == "pp" else f"tg{self.n_gen}"
        b = f" x{self.batch}" if self.batch > 1 else ""
        return f"{self.setup.model.name} {what}{b} @ d{self.n_depth}"


def public_files() -> list[str]:
    return sorted(glob.glob(os.path.join(PUBLIC_DIR, "*.json")))


def point_from_record(r: dict, where: str) -> PublicPoint:
    """A PublicPoint from a record with `runtime`, `runtime_options`, `device`/`hardware`. A
    llama.cpp-family record's weights are read as the GGUF file type they name (calibrate.file_weights)."""
    rtname, opts, setup = setup_from_record(r, where)
    test = r.get("test")
    if test not in ("pp", "tg"):
        raise FitError(f"{where}: field `test` must be pp or tg, got {test!r}")
    return PublicPoint(where, r.get("public_source") or os.path.basename(where).rsplit(":", 1)[0], rtname, opts, setup,
                       test, int(r.get("n_prompt") or 0), int(r.get("n_gen") or 0), int(r.get("n_depth") or 0),
                       int(r.get("n_streams") or 1), float(r["avg_ts"]), r)


def setup_from_record(r: dict, where: str) -> tuple:
    """(runtime name, its options, the Setup) a measured record ran: its runtime model with the record's
    `runtime_options`, its card (`hardware` / `device`) and count, model, weights (a llama.cpp-family
    record's read as the GGUF file type they name, calibrate.file_weights) and KV type. FitError
    naming `where` when a field is missing or unknown."""
    try:
        rtname = r["runtime"]
        opts = dict(r.get("runtime_options") or {})
        base = cm.load_runtime(rtname)
        prof = base.with_options(**{k: (int(v) if k == "ubatch" else v) for k, v in opts.items()})
        hw = r.get("hardware") or r.get("device")
        gpu = hardware.get_gpu(hw)
        n = int(r.get("n_cards") or 1)
        rig = hardware.Rig(gpu, n, link_gbps=r.get("link_gbps") or (gpu.link_gbps if n > 1 else None),
                           link_latency_us=r.get("link_latency_us") or (gpu.link_latency_us if n > 1 else None))
        cfg = cm.interned(configs.load(r["model"]))    # (the Setup's own: file_weights' byte sums kept on it)
        w = r.get("weights") or vocab.DEFAULTS["weights"]
        if base.kernels and base.attention_kernel != "paged_attn":     # a GGUF runtime
            w = cal.file_weights(w, cfg, r.get("model_size"))
        setup = cm.Setup(cfg, rig, split=r.get("split") or ("layer" if n > 1 else "none"),
                         weights=w, kv=r.get("type_k") or "f16", runtime=prof)
    except (KeyError, ValueError, TypeError, OSError) as e:
        msg = e.args[0] if isinstance(e, KeyError) and e.args else e
        raise FitError(f"{where}: {msg}") from None
    return rtname, opts, setup


# The scoreboard's rows from llama.cpp pull requests of January 2024 (before flash attention and
# MMQ on tensor cores; heterogeneous settings) are not used for the runtime models.
SCOREBOARD_SKIP = ("https://github.com/ggml-org/llama.cpp/pull/",)


def _normalize(r: dict, path: str) -> dict | None:
    """A shipped record as a point record: the scoreboard's (glmbench/results/public.py, written
    without runtime options) get its source id and the options its run implies (-fa per row,
    llama-bench's default -ub 512, the MMQ era of its 2025 builds). None: a record not used."""
    if r.get("public_source"):
        return r
    src = str(r.get("source") or "")
    if src.startswith(SCOREBOARD_SKIP):
        return None
    r = dict(r)
    name = os.path.basename(path)[:-5]
    rt = runtime.from_record(r) or "llama.cpp"
    opts = {"ubatch": str(r.get("n_ubatch") or 512)}
    if r.get("flash_attn") is not None:
        opts["fa"] = "1" if r["flash_attn"] else "0"
    if rt == "llama.cpp":
        opts["era"] = "mmq"
    r.update(public_source=f"{name}-{r.get('backends', 'CUDA').lower()}", runtime=rt, runtime_options=opts)
    return r


def load_public(paths: Sequence[str] | None = None, skip_unknown_cards=True) -> list[PublicPoint]:
    """Every record of the public files (default: the shipped glmbench/data/public/*.json) as a
    point. Records on cards the catalog lacks are skipped when `skip_unknown_cards` (the
    scoreboard's pre-Volta rows), else an error."""
    out = []
    for p in paths or public_files():
        recs = rec.read_records(p)
        for i, r in enumerate(recs):
            where = r.get("line") or f"{os.path.basename(p)}:{i + 1}"
            r = _normalize(r, p)
            if r is None:
                continue
            if r.get("evidence") != "measured" or r.get("test") not in ("pp", "tg"):
                continue
            if skip_unknown_cards and hardware.resolve_gpu_name(str(r.get("hardware") or r.get("device") or "")) is None:
                continue
            out.append(point_from_record(r, where))
    return out


def serving(pt: PublicPoint) -> bool:
    """The point is a serving benchmark's closed loop (vLLM's bench serve / benchmark_serving, SGLang's
    bench_serving: B streams / mean TPOT, bench/public_records.py `_vllm`), whose decode steps carry the
    other requests' prefills (costmodel.closed_loop_tpot): its depth is the mean prompt."""
    return (pt.test == "tg" and pt.batch > 1 and pt.n_gen > 1 and pt.n_depth > 0
            and "serv" in str(pt.record.get("tool") or "").lower())


def predict(pt: PublicPoint, profile: cm.RuntimeProfile) -> float:
    """tok/s the profile predicts for the point (its options applied), by the full cost model."""
    prof = apply_options(profile, pt.options)
    s = dataclasses.replace(pt.setup, runtime=prof)
    if pt.test == "pp":
        return cm.prefill(s, pt.n_prompt, pt.n_depth).tok_s
    if serving(pt):
        return pt.batch / cm.closed_loop_tpot(s, pt.n_depth, pt.n_gen, pt.batch)
    if pt.n_gen <= 1:
        return cm.decode(s, pt.n_depth, pt.batch).tok_s
    return pt.batch / cm._mean_decode_seconds(s, pt.n_depth, pt.n_gen, pt.batch)


def apply_options(profile: cm.RuntimeProfile, options: dict) -> cm.RuntimeProfile:
    """The profile with a point's options (an option the runtime lacks is a ValueError). A
    physics profile without options (ideal, typical) takes only the point's ubatch: the same
    schedule, its own kernels."""
    opts = {k: (int(v) if k == "ubatch" else v) for k, v in (options or {}).items()}
    if not profile.options:
        return dataclasses.replace(profile, n_ubatch=opts["ubatch"]) if "ubatch" in opts else profile
    return profile.with_options(**opts)


# ---- compiled points -----------------------------------------------------------------------------
@dataclass
class _Compiled:
    """Every op of every point as arrays; stages group ops of one pass on one card."""
    tflops: np.ndarray
    vflops: np.ndarray
    nbytes: np.ndarray
    peak_t: np.ndarray
    peak_v: np.ndarray
    bw: np.ndarray
    count: np.ndarray
    nkern: np.ndarray            # kernels per op (the cost model's structural count)
    tpe: np.ndarray
    smclk: np.ndarray            # SMs x clock of the op's card (SM-cycles per second; kernels.sm_ghz)
    smf: np.ndarray              # 1 where the op's path has the per-SM FLOP term (kernels.SM_FLOP_PATHS)
    smb: np.ndarray              # > 0 where the op's path has the per-SM streaming term (kernels.SM_BYTES_PATHS):
                                 # the share of the cap its weight types stream (costmodel._cap_factor)
    chain_c: np.ndarray          # index into chains (compute efficiency of the tensor part)
    chain_m: np.ndarray          # index into chains (memory efficiency)
    chain_v: np.ndarray          # index into chains (vector compute efficiency)
    card_c: np.ndarray           # index into cards: the op's card (its "card.<key>:" factors)
    op_stage: np.ndarray
    stage_point: np.ndarray
    stage_weight: np.ndarray     # weight of the stage in its point's time (mean decode) or 1
    stage_layers: np.ndarray     # layers in the stage (for layer_overhead_us)
    stage_moe: np.ndarray        # MoE layers in the stage (for mmid:layer_us)
    stage_moe_e: np.ndarray      # MoE layers x routed experts the stage's tokens select (mmid:expert_us)
    point_const: np.ndarray      # link seconds per point
    pipelines: dict              # point -> (n_ubatches, n_cards, [stage ids], link per ubatch)
    chains: list                 # [(key, key, ..., ("class", cls, which)), ...]
    shares: dict                 # chain-head key -> max share of a point's time at the start
    cards: list = field(default_factory=list)   # card keys of card_c
    weight: np.ndarray | None = None              # per point: 1 / sqrt(points of its source) (SOURCE_WEIGHTS)
    tile: np.ndarray | None = None                  # per op: MMQ's column tile (kernels.moe_occupancy)
    model_rt: bool = False                        # compiled for a runtime model (kernel-path peaks, per-SM terms)
    moe_keys: list = field(default_factory=list)  # the (layer_us, expert_us) name pairs of the stages
    stage_moe_kix: np.ndarray | None = None       # per stage: index into moe_keys


def _chain(path, fam, which, cls, scopes, attention_kernel=None):
    keys = []
    if path:
        base = kn.lookup_keys(path, fam, which, attention_kernel)
        for k in base:
            keys += [f"{k}@{s}" for s in scopes]
        keys += base
    keys.append(("class", cls, which))
    return tuple(keys)


def compile_points(points: Sequence[PublicPoint], base: cm.RuntimeProfile) -> _Compiled:
    cols = {k: [] for k in ("tflops", "vflops", "nbytes", "peak_t", "peak_v", "bw", "count", "nkern", "tpe", "smclk",
                            "smf", "smb", "chain_c", "chain_m", "chain_v", "card_c", "op_stage")}
    model_rt = bool(base.kernels or base.options)     # a runtime model: kernel-path peaks and per-SM terms
    stage_point, stage_weight, stage_layers, point_const, pipelines = [], [], [], [], {}
    stage_moe, stage_moe_e = [], []
    stage_moe_key = []           # per stage: (mmid:layer_us, mmid:expert_us) names, scoped (PATH_SCOPED_OPTIONS)
    tiles = []                   # per op: MMQ's column tile for its batch (kernels.mmq_tile)
    chains, chain_ix = [], {}
    cards, card_ix = [], {}
    scoped = SCOPED_OPTIONS.get(base.name.split("[")[0], ())

    def cix(c):
        if c not in chain_ix:
            chain_ix[c] = len(chains)
            chains.append(c)
        return chain_ix[c]

    for pi, pt in enumerate(points):
        prof = apply_options(base, pt.options)
        s = dataclasses.replace(pt.setup, runtime=prof)
        gpu, cfg = s.gpu, s.model
        scopes = [f"{k}={pt.options[k]}" for k in scoped if k in pt.options]
        path_scopes = _path_scopes(base, pt.options)
        moe_keys = (_scoped_name(MOE_US, path_scopes), _scoped_name(EXPERT_US, path_scopes))
        passes = []              # (weight, T, work, T_out)
        if pt.test == "pp":
            ub = s.n_ubatch
            n_ub = -(-pt.n_prompt // ub)
            for u in range(n_ub):
                T = min(ub, pt.n_prompt - u * ub)
                passes.append((1.0, T, cm._prefill_work(cfg, pt.n_depth + u * ub, T), 1 if u == n_ub - 1 else 0))
        else:
            B = pt.batch
            if pt.n_gen <= 1:
                passes.append((1.0, B, cm._decode_work(cfg, pt.n_depth, B), B))
            else:
                P = 5
                ds = [pt.n_depth + round(i * (pt.n_gen - 1) / (P - 1)) for i in range(P)]
                span = ds[-1] - ds[0]
                w = [0.0] * P
                for i in range(P - 1):
                    w[i] += (ds[i + 1] - ds[i]) / 2 / span
                    w[i + 1] += (ds[i + 1] - ds[i]) / 2 / span
                passes += [(w[i], B, cm._decode_work(cfg, ds[i], B), B) for i in range(P)]
            if serving(pt):     # the other requests' prompts, B / n_gen of one per step (closed_loop_tpot)
                ub = s.n_ubatch
                n_ub = -(-pt.n_depth // ub)
                for u in range(n_ub):
                    T = min(ub, pt.n_depth - u * ub)
                    passes.append((B / pt.n_gen, T, cm._prefill_work(cfg, u * ub, T), 1 if u == n_ub - 1 else 0))
        counts = cm._layer_counts(s)
        link_total = 0.0
        stages_of_point = []
        for w, T, work, T_out in passes:
            per_pass = []
            for c, lines in cm._card_ops(s, T, work, T_out):
                sid = len(stage_point)
                stage_point.append(pi)
                stage_weight.append(w)
                stage_layers.append(counts[c][0] + counts[c][1])
                stage_moe.append(counts[c][1] * kn.clock_scale(gpu))
                stage_moe_e.append(counts[c][1] * kn.clock_scale(gpu)
                                   * kn.experts_touched(cfg.n_routed_experts, cfg.n_experts_per_tok, T))
                stage_moe_key.append(moe_keys)
                per_pass.append(sid)
                for n, op in lines:
                    cols["tflops"].append(op.tflops)
                    cols["vflops"].append(op.vflops)
                    cols["nbytes"].append(op.bytes)
                    pf = kn.mma_peak_factor(gpu, op.path, base, op.family) if model_rt else 1.0
                    cols["peak_t"].append(kn.tensor_peak(gpu, op.dtype, op.acc16) * 1e12 * pf if op.tflops else 1.0)
                    cols["smclk"].append(kn.sm_ghz(gpu) * 1e9)
                    cols["smf"].append(1.0 if model_rt and op.path in kn.SM_FLOP_PATHS else 0.0)
                    cols["smb"].append(op.capf if model_rt and op.path in kn.SM_BYTES_PATHS else 0.0)
                    cols["peak_v"].append(gpu.tflops["fp32"] * 1e12)
                    cols["bw"].append(gpu.bandwidth_gbs * 1e9)
                    cols["count"].append(n)
                    cols["nkern"].append(n * op.kernels * kn.clock_scale(gpu))
                    cols["tpe"].append(op.tpe or 0.0)
                    tiles.append(getattr(op, "tile", 0.0) or 0.0)
                    osc = [sc for paths, sc in path_scopes if op.path in paths] + scopes
                    cols["chain_c"].append(cix(_chain(op.path, op.family, "compute", op.cls, osc,
                                                      base.attention_kernel)))
                    cols["chain_m"].append(cix(_chain(op.path, op.family, "memory", op.cls, osc,
                                                      base.attention_kernel)))
                    cols["chain_v"].append(cix(_chain(None, None, "compute", "vector", ())))
                    cols["op_stage"].append(sid)
                    ck = (gpu.key or gpu.name, kn.arch_key(gpu))
                    if ck not in card_ix:
                        card_ix[ck] = len(cards)
                        cards.append(ck)
                    cols["card_c"].append(card_ix[ck])
            # link time (no fitted link efficiency): per boundary (layer) or per pass (tensor)
            _, link, _ = _links(s, T, T_out)
            stages_of_point.append((per_pass, link))
            if s.split == "layer":
                link_total += w * (s.n_cards - 1) * link
            elif s.split == "tensor":
                link_total += w * link
        point_const.append(link_total)
        if pt.test == "pp" and s.split == "layer" and len(passes) > 1:
            pipelines[pi] = stages_of_point
    arr = {k: np.asarray(v, dtype=float if k not in ("chain_c", "chain_m", "chain_v", "card_c", "op_stage") else np.int64)
           for k, v in cols.items()}
    comp = _Compiled(**arr, stage_point=np.asarray(stage_point, dtype=np.int64),
                     stage_weight=np.asarray(stage_weight), stage_layers=np.asarray(stage_layers, dtype=float),
                     stage_moe=np.asarray(stage_moe, dtype=float), stage_moe_e=np.asarray(stage_moe_e, dtype=float),
                     point_const=np.asarray(point_const), pipelines=pipelines, chains=chains, shares={}, cards=cards,
                     model_rt=model_rt)
    comp.tile = np.asarray(tiles, dtype=float)
    comp.moe_keys = sorted(set(stage_moe_key))
    kix = {k: i for i, k in enumerate(comp.moe_keys)}
    comp.stage_moe_kix = np.asarray([kix[k] for k in stage_moe_key], dtype=np.int64)
    comp.shares = _shares(comp, base, len(points))
    if SOURCE_WEIGHTS:
        n_src: dict = {}
        for p in points:
            n_src[p.source] = n_src.get(p.source, 0) + 1
        w = np.array([1.0 / math.sqrt(n_src[p.source]) for p in points])
        comp.weight = w * math.sqrt(len(points) / float(np.sum(w * w)))
    return comp


def _links(s, T, T_out):
    rig = s.rig
    if s.split == "layer":
        return None, cm.transfer_seconds(cm.ACT_BYTES * T * s.model.hidden_size, rig.link_gbps, rig.link_latency_us), None
    if s.split == "tensor":
        cfg = s.model
        ar = cm.allreduce_seconds(cm.ACT_BYTES * T * cfg.hidden_size, s.n_cards, rig.link_gbps, rig.link_latency_us,
                                  rig.switched)
        g = cm.allreduce_seconds(cm.ACT_BYTES * T_out * cfg.vocab_size / 2, s.n_cards, rig.link_gbps,
                                 rig.link_latency_us, rig.switched)
        return None, 2 * cfg.n_layers * ar + g, None
    return None, 0.0, None


def _resolve(chains, prof: cm.RuntimeProfile, params: dict) -> np.ndarray:
    out = np.empty(len(chains))
    for i, ch in enumerate(chains):
        for k in ch:
            if isinstance(k, tuple):
                _, cls, which = k
                out[i] = (prof.compute_efficiency if which == "compute" else prof.memory_efficiency)[cls]
                break
            v = params.get(k, prof.kernels.get(k))
            if v is not None:
                out[i] = v
                break
    return out


def evaluate(comp: _Compiled, prof: cm.RuntimeProfile, params: dict, n_points: int, parts=False):
    """Seconds per point (and, with parts, each op's seconds) for the profile with `params`
    (kernel-table entries and overheads) set over it."""
    # the option-scoped entries the profile holds (a start's priors, OPTION_PRIORS) where not fitted,
    # as predict_many reads them
    params = {**_scoped_params(prof), **params}
    eff = _resolve(comp.chains, prof, params)
    e_c, e_m, e_v = eff[comp.chain_c], eff[comp.chain_m], eff[comp.chain_v]
    def f(k, which):
        v = params.get(f"card.{k[0]}:{which}", prof.kernels.get(f"card.{k[0]}:{which}", 1.0))
        if k[1]:
            v *= params.get(f"arch.{k[1]}:{which}", prof.kernels.get(f"arch.{k[1]}:{which}", 1.0))
        return v
    fc = np.array([f(k, "compute") for k in comp.cards])
    fm = np.array([f(k, "memory") for k in comp.cards])
    if len(comp.cards):
        e_c = e_c * fc[comp.card_c]
        e_m = e_m * fm[comp.card_c]
    h = params.get(HALF, prof.kernels.get(HALF, 0.0))
    occ = 1.0
    if h > 0:
        hj = h * np.where(comp.tile > 0, np.minimum(comp.tile, kn.MMQ_X_MAX) / kn.MMQ_X_MAX, 1.0) \
            if comp.tile is not None else h        # the padding at the batch's tile (kernels.moe_occupancy)
        occ = np.where(comp.tpe > 0, comp.tpe / (comp.tpe + hj), 1.0)
        e_c = e_c * occ
    tc = comp.tflops / (comp.peak_t * e_c) + comp.vflops / (comp.peak_v * e_v)
    tm = comp.nbytes / (comp.bw * e_m)
    smok = comp.smclk > 0
    sf = params.get(kn.SM_FLOP, prof.kernels.get(kn.SM_FLOP, 0.0))
    if sf > 0:
        fcard = fc[comp.card_c] if len(comp.cards) else 1.0
        tc = tc + np.where(smok & (comp.smf > 0), comp.tflops / (np.where(smok, comp.smclk, 1.0) * sf * fcard * occ), 0.0)
    sb = params.get(kn.SM_BYTES, prof.kernels.get(kn.SM_BYTES, 0.0))
    capped = None
    if sb > 0:
        # the weight GEMVs' stream capped at SMs x clock x bytes (kernels.SM_BYTES)
        fmem = fm[comp.card_c] if len(comp.cards) else 1.0
        tsm = np.where(smok & (comp.smb > 0), comp.nbytes / (np.where(smok, comp.smclk, 1.0) * sb * fmem
                                                              * np.where(comp.smb > 0, comp.smb, 1.0)), 0.0)
        capped = tsm > tm
        tm = np.maximum(tm, tsm)
    ko = params.get("kernel_overhead_us", prof.kernel_overhead_us)
    op_s = comp.count * np.maximum(tc, tm) + comp.nkern * ko * 1e-6
    stage_s = np.bincount(comp.op_stage, weights=op_s, minlength=len(comp.stage_point))
    step = params.get("step_overhead_us", prof.step_overhead_us)
    layer = params.get("layer_overhead_us", prof.layer_overhead_us)
    moe, moe_e = _moe_values(comp, prof, params)
    stage_s = stage_s + (step + layer * comp.stage_layers + moe * comp.stage_moe + moe_e * comp.stage_moe_e) * 1e-6
    tot = np.bincount(comp.stage_point, weights=stage_s * comp.stage_weight, minlength=n_points) + comp.point_const
    for pi, stages in comp.pipelines.items():
        N = len(stages[0][0])
        fin = [0.0] * N
        for sids, link in stages:
            ready = 0.0
            for c, sid in enumerate(sids):
                start = max(fin[c], ready)
                fin[c] = start + stage_s[sid]
                ready = fin[c] + link
        po = params.get("pipeline_overlap", prof.pipeline_overlap)
        seq = sum(stage_s[sid] for sids, _ in stages for sid in sids) + sum(link * (N - 1) for _, link in stages)
        tot[pi] = po * fin[-1] + (1.0 - po) * seq
    if parts:
        return (tot, op_s, tc, tm, capped) if parts == "capped" else (tot, op_s, tc, tm)
    return tot


def _moe_values(comp, prof, params):
    """Per stage: the MoE fixed times (mmid:layer_us, mmid:expert_us) its scope takes; a scoped name
    the params and profile lack falls back to the plain one (as RuntimeProfile.with_options does)."""
    def val(k):
        plain = k.split("@")[0]
        return params.get(k, params.get(plain, prof.kernels.get(plain, 0.0)))
    if not comp.moe_keys:
        return 0.0, 0.0
    lv = np.array([val(a) for a, _ in comp.moe_keys])
    ev = np.array([val(b) for _, b in comp.moe_keys])
    return lv[comp.stage_moe_kix], ev[comp.stage_moe_kix]


def _path_scopes(prof: cm.RuntimeProfile, options: dict) -> list:
    """[(paths, "option=value"), ...]: the PATH_SCOPED_OPTIONS a point's options set to a value other
    than the option's default (its first)."""
    out = []
    for o, paths in PATH_SCOPED_OPTIONS.get(prof.name.split("[")[0], {}).items():
        vals = list(prof.options.get(o, {}).get("values", {}))
        v = options.get(o)
        if v is not None and vals and str(v) != vals[0]:
            out.append((paths, f"{o}={v}"))
    return out


def _scoped_name(name: str, path_scopes: list) -> str:
    """`name` ("mmid:layer_us") with the scope of the first path scope covering its path."""
    path = name.split(":")[0]
    for paths, sc in path_scopes:
        if path in paths:
            return f"{name}@{sc}"
    return name


def _work(points) -> np.ndarray:
    """Tokens of work per point: time = work / tok/s."""
    return np.array([p.n_prompt if p.test == "pp" else p.batch for p in points], dtype=float)


def _shares(comp, prof, n_points, bound=False, params=None) -> dict:
    """{chain: the largest share of a point's time its ops take at the profile's values}. With
    `bound` (the identifiability rule, BOUND_ONLY): an op's share counts only for the efficiency that
    binds it, roofline max(compute, memory): its memory efficiency where the bytes take longer, its
    compute efficiency (by the tensor part of the compute time) where the FLOPs do. An efficiency
    whose ops are bound by the other resource on every point does not change any prediction near
    the start, so the points cannot identify it."""
    tot, op_s, tc, tm, capped = evaluate(comp, prof, params or {}, n_points, parts="capped")
    point_of_op = comp.stage_point[comp.op_stage]
    sh = op_s * comp.stage_weight[comp.op_stage] / tot[point_of_op]
    if bound:
        e_v = _resolve(comp.chains, prof, params or {})[comp.chain_v]
        tv = comp.vflops / (comp.peak_v * e_v)
        tensor = np.where(tc > 0, np.clip(tc - tv, 0.0, None) / np.where(tc > 0, tc, 1.0), 0.0)
        sh_c = np.where(tc >= tm, sh * tensor, 0.0)
        # a memory efficiency binds where the bandwidth time is the op's, not the per-SM cap's
        sh_m = np.where((tm >= tc) & (~capped if capped is not None else True), sh, 0.0)
    else:
        sh_c = sh_m = sh
    out: dict = {}
    for i in range(len(op_s)):
        for ci, s in (((comp.chain_c[i], sh_c[i]), (comp.chain_m[i], sh_m[i])) if comp.tflops[i]
                      else ((comp.chain_m[i], sh_m[i]),)):
            ch = comp.chains[ci]
            if isinstance(ch[0], tuple):
                continue
            out[ch] = max(out.get(ch, 0.0), float(s))
    return out


# ---- the fit ----------------------------------------------------------------------------------
def _is_eff(n):
    n = n.split("@")[0]
    return n not in OVERHEADS and n not in (HALF, MOE_US, EXPERT_US) and n not in kn.SM_PARAMS   # pipeline_overlap is in (0, 1]


def _is_log(n):
    """A rate fitted in log space without an upper bound of 1: the per-SM limits."""
    return n in kn.SM_PARAMS


# the per-SM limits: the start of their fit (where the points do not identify one it is left out,
# not kept at this value; no pull toward it: a limit pulled toward "weak" stops mattering) and
# their bounds. Start: 2048 FLOP (1024 int8 MACs, the dense tensor rate per SM-cycle of GeForce
# and workstation cards Turing to Blackwell)
SM_NOMINAL = {kn.SM_FLOP: 2048.0, kn.SM_BYTES: 32.0}
SM_BOUNDS = {kn.SM_FLOP: (256.0, 1e6), kn.SM_BYTES: (1.0, 1e5)}
# limits whose time is a max() with another (kernels.SM_BYTES caps the bandwidth time): above the
# bandwidth they cap they bind nothing, so a fit also starts them lower
SM_CAPS = (kn.SM_BYTES,)


def _scale(n):
    """The unit of a parameter's fit coordinate (and of the first fit's pull toward its start):
    an efficiency moves in log space; an overhead in units of its expected size: a few us per
    kernel, about 100 us per MoE layer (its 20-30 routing, sorting and gathering kernels at a few us
    each), 20 us per selected expert (a few launches each), 50 us per layer or pass, 100 tokens per
    expert."""
    n = n.split("@")[0]
    if n == "kernel_overhead_us":
        return 2.0
    if n == EXPERT_US:
        return 20.0
    if n in (MOE_US, HALF):
        return 100.0
    return 50.0 if n in OVERHEADS else 1.0


def candidates(comp: _Compiled, points) -> list[str]:
    """Kernel-table entries (the most specific the points can tell apart) and overheads."""
    fams: dict = {}
    for ch in comp.shares:
        head = ch[-2] if not isinstance(ch[-2], tuple) else ch[0]
        path = head.split(":")[0].split(".")[0]
        for k in ch:
            if isinstance(k, str) and "." in k.split(":")[0] and "@" not in k:
                fams.setdefault(path, set()).add(k.split(":")[0].split(".")[1])
    names = []
    for ch, sh in sorted(comp.shares.items(), key=lambda kv: -kv[1]):
        if sh < MIN_SHARE:
            continue
        own = ch[0].split("@")[0].split(":")[0].split(".")[0]
        plain = [k for k in ch if isinstance(k, str) and "@" not in k and k.split(":")[0].split(".")[0] == own]
        scoped = [k for k in ch if isinstance(k, str) and "@" in k and k.split(":")[0].split(".")[0] == own]
        generic = plain[-1]
        path = generic.split(":")[0]
        pick = plain[0] if FAMILY_KEYS and len(fams.get(path, ())) > 1 else generic
        if scoped:
            # option-scoped entries (e.g. Vulkan coopmat): the scoped generic one
            pick = [k for k in scoped if k.startswith(generic + "@")][0]
        if pick not in names:
            names.append(pick)
    if any(t > 0 for t in comp.tpe):
        names.append(HALF)
    for j, (lk, ek) in enumerate(comp.moe_keys):
        on = comp.stage_moe_kix == j
        if comp.stage_moe[on].any() and lk not in names:
            names.append(lk)
    for j, (lk, ek) in enumerate(comp.moe_keys):
        on = comp.stage_moe_kix == j
        if comp.stage_moe_e[on].any() and ek not in names:
            names.append(ek)
    if comp.pipelines:
        names.append("pipeline_overlap")
    if comp.model_rt and PER_SM and comp.smf.any():
        names.append(kn.SM_FLOP)
    if comp.model_rt and PER_SM and PER_SM_BYTES and comp.smb.any():
        names.append(kn.SM_BYTES)
    per_arch: dict = {}
    for p in points:
        a = kn.arch_key(p.setup.gpu)
        if a:
            per_arch.setdefault(a, set()).add(p.gpu_key)
    for a in sorted(per_arch):
        if ARCH_MIN_CARDS and len(per_arch[a]) >= ARCH_MIN_CARDS and len(per_arch) > 1:
            names.append(f"arch.{a}:compute")
    per_card: dict = {}
    for p in points:
        per_card.setdefault(p.gpu_key, set()).add(p.source)
    gpu_of = {p.gpu_key: p.setup.gpu for p in points}
    for k in sorted(per_card):
        if CARD_MIN_SOURCES and len(per_card[k]) >= CARD_MIN_SOURCES:
            names += [f"card.{k}:compute", f"card.{k}:memory"]
        elif (UNPUBLISHED_MIN_SOURCES and len(per_card[k]) >= UNPUBLISHED_MIN_SOURCES
              and hardware.clock_unpublished(gpu_of[k])):
            names.append(f"card.{k}:compute")
    # A runtime model's per-layer fixed time is its kernels' (kernel_overhead_us over the structural
    # count, scaled by the card's clock): a separate unscaled per-layer term is nearly collinear
    # with it, never identified by the public points, and can take its place in a fit.
    names += [o for o in OVERHEADS if not (comp.model_rt and o == "layer_overhead_us")]
    return names


def _start(prof, n):
    if n in OVERHEADS or n == "pipeline_overlap":
        return getattr(prof, n)
    v = _scoped_params(prof).get(n) if "@" in n else None   # an option-scoped entry the start holds (OPTION_PRIORS)
    if v is not None:
        return v
    if n.split("@")[0] in (HALF, MOE_US, EXPERT_US):
        return prof.kernels.get(n.split("@")[0], 0.0)
    if n in kn.SM_PARAMS:
        return prof.kernels.get(n) or SM_NOMINAL[n]
    if n.startswith(("card.", "arch.")):
        return prof.kernels.get(n, 1.0)
    base = n.split("@")[0]
    if base in prof.kernels:
        return prof.kernels[base]
    head, _, which = base.rpartition(":")
    path, _, fam = head.partition(".")
    for k in kn.lookup_keys(path, fam or None, which, prof.attention_kernel)[1:]:
        # the entries the cost model falls back to (kernels.lookup_keys: FALLBACK, then a batched
        # path's GEMV counterpart for a memory efficiency)
        if k in prof.kernels:
            return prof.kernels[k]
    cls = kn.PATHS[path][0]
    return (prof.compute_efficiency if which == "compute" else prof.memory_efficiency)[cls]


def _to_x(n, v):
    if _is_log(n):
        return math.log(min(max(v, SM_BOUNDS[n][0]), SM_BOUNDS[n][1]))
    return math.log(max(v, MIN_EFF)) if _is_eff(n) else v / _scale(n)


def _from_x(n, x):
    return math.exp(x) if _is_eff(n) or _is_log(n) else x * _scale(n)


def _bounds(n):
    if _is_log(n):
        return math.log(SM_BOUNDS[n][0]), math.log(SM_BOUNDS[n][1])
    if _is_eff(n):
        return math.log(MIN_EFF), 0.0
    return 0.0, 1e4 / _scale(n)


def _residuals(comp, prof, names, x, meas_s, n_points):
    """Log errors (log predicted / measured tok/s), each weighted by comp.weight: every source counts
    as much as any other whatever its number of points (a 100-row table does not outvote a 10-row one)."""
    params = {n: _from_x(n, v) for n, v in zip(names, x)}
    t = evaluate(comp, prof, params, n_points)
    r = np.log(meas_s / t)
    return r * comp.weight if comp.weight is not None else r


def _jac(comp, prof, names, x, meas_s, n_points, h=0.02):
    J = np.zeros((len(meas_s), len(names)))
    for j, n in enumerate(names):
        up, lo = x.copy(), x.copy()
        step = h if _is_eff(n) or _is_log(n) else max(h, 0.05)
        up[j] += step
        lo[j] -= step
        b0, b1 = _bounds(n)
        up[j] = min(up[j], b1)
        lo[j] = max(lo[j], b0)
        d = up[j] - lo[j]
        if d <= 0:
            continue
        J[:, j] = (_residuals(comp, prof, names, up, meas_s, n_points)
                   - _residuals(comp, prof, names, lo, meas_s, n_points)) / d
    return J


@dataclass
class JointFit:
    runtime: str
    profile: cm.RuntimeProfile
    points: list
    fitted: dict
    kept: dict
    predicted: list
    unbound: list = field(default_factory=list)   # kept (in `kept`): bound by the other resource on every point

    @property
    def errors(self) -> list:
        return [q / p.measured - 1 for q, p in zip(self.predicted, self.points)]

    def mape(self, test=None) -> float | None:
        e = [abs(x) for x, p in zip(self.errors, self.points) if test is None or p.test == test]
        return float(np.mean(e)) if e else None


RIDGE = 0.03        # pull toward the start values in the first (all-candidate) fit, per point


def _lsq(comp, start, names, x0, meas_s, n, ridge=0.0, x_ref=None, max_nfev=300):
    lo = np.array([_bounds(nm)[0] for nm in names])
    hi = np.array([_bounds(nm)[1] for nm in names])
    ref = np.array([_to_x(nm, _start(start, nm)) for nm in names]) if x_ref is None else x_ref
    w = math.sqrt(ridge * n) * np.array([0.0 if _is_log(nm) else 1.0 for nm in names])

    def fun(x):
        r = _residuals(comp, start, names, x, meas_s, n)
        return np.concatenate([r, w * (x - ref)]) if ridge else r
    return least_squares(fun, np.clip(x0, lo, hi), bounds=(lo, hi), method="trf", max_nfev=max_nfev,
                         xtol=1e-10, ftol=1e-12, x_scale="jac")


def fit_runtime(runtime: str, points: Sequence[PublicPoint], base: cm.RuntimeProfile | None = None) -> JointFit:
    """Fit the runtime model `runtime` (its shipped JSON, or `base`, as the start) to points of
    that runtime; returns the fitted profile (kernel table and overheads set) and what was fitted
    and kept. With no points the start profile is returned unchanged.

    1. every candidate (compute and memory efficiency of each kernel path that takes a share of
       some point's time, the overheads) is fitted at once with a pull toward its start (RIDGE),
       from two starts: what the points determine moves, the rest stays;
    2. the identifiable ones there (pivoted QR of the sensitivities) are fitted again without the
       pull, from that solution, every other parameter at its start value;
    3. identifiability by the roofline (BOUND_ONLY): a batched path's own memory efficiency is not
       a candidate (_streams_as_gemv), and an efficiency that binds no op at the fitted values
       (_unbound) goes back to its start, the rest fitted again. Both are in `unbound` and `kept`;
    4. every candidate left at its start gets a likelihood-ratio trial (_lr_pass, LR_PASS)."""
    start = base or _start_profile(runtime)
    points = [p for p in points]
    if not points:
        return JointFit(runtime, start, [], {}, {}, [])
    comp = compile_points(points, start)
    n = len(points)
    meas_s = _work(points) / np.array([p.measured for p in points])
    names = candidates(comp, points)
    if runtime not in SM_BYTES_RUNTIMES:
        names = [nm for nm in names if nm != kn.SM_BYTES]
    unbound = [nm for nm in names if BOUND_ONLY and _streams_as_gemv(nm)]
    names = [nm for nm in names if nm not in unbound]
    if runtime in PRIORS and FORK_SHARES:
        # a fork runs its mainline's code for the shared kernels: their rates are mainline's fit
        # (from many more cards and sources), not refitted to the fork's few points
        names = [nm for nm in names if not _shared_with_prior(nm)]
    ref = np.array([_to_x(nm, _start(start, nm)) for nm in names])
    best = None
    # starts: the start values; all efficiencies lower; compute-bound kernels (memory at 1, compute
    # low) — an op's time is the max of two terms, and a fit cannot move the term that does not bind
    for mode in ("start", "low", "compute"):
        x0 = []
        for nm, r in zip(names, ref):
            if nm in SM_CAPS and mode != "start":
                x0.append(r - math.log(4.0 if mode == "low" else 16.0))   # a cap binds only below its start
            elif not _is_eff(nm) or nm == "pipeline_overlap" or _is_log(nm):
                x0.append(r)
            elif mode == "start":
                x0.append(r)
            elif mode == "low":
                x0.append(_to_x(nm, _start(start, nm) * 0.4))
            else:
                x0.append(_to_x(nm, 1.0 if nm.split("@")[0].endswith(":memory") else 0.25))
        res = _lsq(comp, start, names, np.array(x0), meas_s, n, ridge=RIDGE, x_ref=ref)
        if best is None or res.cost < best.cost:
            best = res
    J = _jac(comp, start, names, best.x, meas_s, n)
    chosen = _identifiable(J, names, n, order=np.argsort(-np.abs(best.x - ref), kind="stable"))
    fitted = {}
    if chosen:
        x1 = np.array([best.x[names.index(nm)] for nm in chosen])
        fin = _lsq(comp, start, chosen, x1, meas_s, n)
        fitted = {nm: _from_x(nm, v) for nm, v in zip(chosen, fin.x)}
    # 3. identifiability at the fitted values: an efficiency that binds no op (roofline: the other
    #    resource takes longer) on any point is not determined by the points: it goes back to its
    #    start and the rest is fitted again
    for _ in range(3 if BOUND_ONLY else 0):
        drop = _unbound(comp, start, fitted, n)
        if not drop:
            fitted, drop = _kinked(comp, start, chosen, fitted, meas_s, n)
        if not drop:
            break
        unbound += drop
        chosen = [nm for nm in chosen if nm not in drop]
        x1 = np.array([_to_x(nm, fitted[nm]) for nm in chosen])
        fitted = {}
        if chosen:
            fin = _lsq(comp, start, chosen, x1, meas_s, n)
            fitted = {nm: _from_x(nm, v) for nm, v in zip(chosen, fin.x)}
    # 4. a likelihood-ratio pass (LR_PASS): the sensitivity rule above judges a parameter at its
    #    start, where an efficiency's ops may take a small share of the time they would take at the
    #    value the points call for (a depth sweep's attention slope); each parameter it left out is
    #    refitted jointly with the chosen ones, and added when the fit improves beyond chance
    if LR_PASS:
        fitted, chosen = _lr_pass(comp, start, names, unbound, chosen, fitted, meas_s, n)
    # a per-SM limit the points do not identify is left out (no such limit), not kept at its nominal start
    kept = {nm: (start.kernels.get(nm, 0.0) if _is_log(nm) else _start(start, nm)) for nm in names + unbound
            if nm not in fitted}
    prof = _with_params(start, fitted)
    t = evaluate(comp, start, fitted, n)
    pred = list(_work(points) / t)
    return JointFit(runtime, prof, points, fitted, kept, pred, unbound)


def _ssr(comp, start, names, x, meas_s, n) -> float:
    r = _residuals(comp, start, names, x, meas_s, n)
    return float(r @ r)


def _lr_pass(comp, start, names, unbound, chosen, fitted, meas_s, n):
    """Forward selection by the likelihood ratio: for every candidate the sensitivity rule left at its
    start, the chosen parameters and it are fitted jointly (from the current values; the candidate
    from its start and, for an efficiency, from a lower start: its sensitivity grows as it falls), and
    the candidate that lowers the sum of squares most is added when n ln(SSR0 / SSR1) exceeds the
    chi-square(1) quantile LR_CRIT, and still binds an op at its value (_unbound); repeated until none
    does. (fitted, chosen)."""
    chosen = list(chosen)
    tried_out = set(unbound)
    for _ in range(LR_MAX_ADD):
        x0 = np.array([_to_x(nm, fitted[nm]) for nm in chosen])
        ssr0 = _ssr(comp, start, chosen, x0, meas_s, n) if chosen else _ssr(comp, start, [], np.array([]), meas_s, n)
        trials = []
        for nm in names:
            if nm in chosen or nm in tried_out:
                continue
            s0 = _to_x(nm, _start(start, nm)) if not _is_log(nm) else _to_x(nm, start.kernels.get(nm) or SM_NOMINAL[nm])
            if _is_eff(nm) and nm != "pipeline_overlap":
                # from its start or a lower one (its sensitivity grows as an efficiency falls),
                # whichever fits the points better with the others where they are
                low = _to_x(nm, _start(start, nm) * 0.3)
                if _ssr(comp, start, chosen + [nm], np.append(x0, low), meas_s, n) < \
                        _ssr(comp, start, chosen + [nm], np.append(x0, s0), meas_s, n):
                    s0 = low
            elif nm in SM_CAPS:
                # a cap binds no op above the bandwidth it caps (no sensitivity there): lower starts too
                s0 = min((s0 - math.log(f) for f in (1.0, 4.0, 16.0)),
                         key=lambda v: _ssr(comp, start, chosen + [nm], np.append(x0, v), meas_s, n))
            res = _lsq(comp, start, chosen + [nm], np.append(x0, s0), meas_s, n, max_nfev=LR_TRIAL_NFEV)
            trials.append((nm, 2.0 * res.cost, res.x))
        floor = n * LR_NOISE_FLOOR ** 2      # below this the points are fitted to their rounding
        def stat(ssr1):
            return n * math.log((ssr0 + floor) / (ssr1 + floor))
        top = max((stat(t[1]) for t in trials), default=None)
        if top is None or top <= LR_CRIT:
            break
        # the trials are capped (LR_TRIAL_NFEV): the contenders are refitted to convergence, since two
        # candidates that explain the same time (several per-token constants on one model's points)
        # reach the same sum of squares only when both have converged
        contenders = sorted((t for t in trials if stat(t[1]) >= top - LR_CONTEND), key=lambda t: t[1])[:LR_MAX_CONTENDERS]
        conv = []
        for nm, _, x in contenders:
            r = _lsq(comp, start, chosen + [nm], x, meas_s, n)
            conv.append((nm, 2.0 * r.cost, r.x))
        top = max(stat(t[1]) for t in conv)
        # a tie (statistics within LR_TIE of the best: the points cannot tell the candidates apart)
        # is broken by the candidate order, not by a rounding difference between the fits
        tied = {t[0] for t in conv if stat(t[1]) >= top - LR_TIE}
        best = next(t for t in sorted(conv, key=lambda t: names.index(t[0])) if t[0] in tied)
        nm, _, x1 = best
        x1 = _lsq(comp, start, chosen + [nm], x1, meas_s, n).x       # the trial's fit, to convergence
        trial = {c: _from_x(c, v) for c, v in zip(chosen + [nm], x1)}
        if nm in _unbound(comp, start, trial, n):
            tried_out.add(nm)
            continue
        chosen.append(nm)
        fitted = trial
    return fitted, chosen


def _streams_as_gemv(name: str) -> bool:
    """A batched path's own memory efficiency ("mmid:memory", "mmq.k:memory@coopmat=khr", ...): not
    a fit parameter. Such a kernel reads its weights once per tile column like its GEMV counterpart
    (kernels.GEMV_OF) and runs on prefill ubatches, near or above the ridge, where a lower memory
    efficiency and a lower compute efficiency explain the same time: the points cannot tell them
    apart, and the streaming rate is the one the decode points identify on the GEMV."""
    head, _, which = name.split("@")[0].rpartition(":")
    return which == "memory" and head.split(".")[0] in kn.GEMV_OF


def _unbound(comp, prof, params, n_points) -> list[str]:
    """The fitted kernel efficiencies (not card/arch factors) among `params` that bind no op taking
    at least MIN_SHARE of some point's time at these values: each op's time is max(compute,
    memory), and an efficiency whose ops the other resource bounds on every point does not change
    a prediction (its sensitivity is zero), so the fit has not determined it."""
    sh = _shares(comp, prof, n_points, bound=True, params=params)
    bound = set()
    for ch, x in sh.items():
        if x < MIN_SHARE:
            continue
        for k in ch:                      # the entry that gives the chain's efficiency (_resolve)
            if isinstance(k, tuple):
                break
            if k in params or k in prof.kernels:
                bound.add(k)
                break
    return [nm for nm in params if _is_eff(nm) and nm != "pipeline_overlap" and ":" in nm
            and not nm.startswith(("card.", "arch.")) and nm not in bound]


def _kinked(comp, start, chosen, fitted, meas_s, n):
    """(fitted, [name]) for the first fitted efficiency that binds ops at its fitted value but none
    at its start and that the points do not need: the others refitted with it at its start fit the
    points as well (n ln(SSR0 / SSR1) within LR_CRIT). A fit can push an efficiency its points
    cannot identify (memory on compute-bound GEMMs) past the roofline's kink, where it binds some
    small ops and the other parameters make up for it exactly: which of those equal fits the
    optimizer lands on is then a matter of rounding, so the rule asks whether the points need it
    instead. (fitted, []) when none is such; fitted is the refit without it otherwise."""
    loose = set(_unbound(comp, start, fitted, n))
    for nm in list(fitted):
        if nm not in loose and nm in _unbound(comp, start, {**fitted, nm: _start(start, nm)}, n):
            rest = [c for c in chosen if c != nm]
            x1 = np.array([_to_x(c, fitted[c]) for c in chosen])
            x0 = np.array([_to_x(c, fitted[c]) for c in rest])
            ssr1 = _ssr(comp, start, chosen, x1, meas_s, n)
            res = _lsq(comp, start, rest, x0, meas_s, n) if rest else None
            ssr0 = 2.0 * res.cost if rest else _ssr(comp, start, [], np.array([]), meas_s, n)
            floor = n * LR_NOISE_FLOOR ** 2
            if n * math.log((ssr0 + floor) / (ssr1 + floor)) <= LR_CRIT:
                return ({c: _from_x(c, v) for c, v in zip(rest, res.x)} if rest else {}), [nm]
    return fitted, []


def _identifiable(J, names, n_points, order=None) -> list[str]:
    """The parameters the sensitivities identify, taken in `order` (default: largest column first):
    each is kept if its column outside the span of those kept is at least calibrate.SELECT_TOL of
    the largest column (calibrate.fit_profile's rule), never more than one per point."""
    if not len(names):
        return []
    norms = np.linalg.norm(J, axis=0)
    top = norms.max() if norms.size else 0.0
    if top <= 1e-12:
        return []
    if order is None:
        order = np.argsort(-norms, kind="stable")
    Q = np.zeros((J.shape[0], 0))
    out = []
    for j in order:
        if len(out) >= n_points:
            break
        col = J[:, j]
        v = col - Q @ (Q.T @ col)
        nv = float(np.linalg.norm(v))
        if nv < cal.SELECT_TOL * top:
            continue
        out.append(names[j])
        Q = np.column_stack([Q, v / nv])
    return [nm for nm in names if nm in out]


def _with_params(prof: cm.RuntimeProfile, params: dict) -> cm.RuntimeProfile:
    """The profile with fitted values written where they belong: overheads as fields, kernel
    entries into `kernels`, option-scoped ones into that option value's kernel table."""
    kern = dict(prof.kernels)
    opts = {k: {**v, "values": {vk: dict(vv) for vk, vv in v.get("values", {}).items()}} if "values" in v else dict(v)
            for k, v in prof.options.items()}
    ch = {}
    for nm, v in params.items():
        if nm in OVERHEADS or nm == "pipeline_overlap":
            ch[nm] = float(v)
        elif "@" in nm:
            key, scope = nm.split("@", 1)
            o, val = scope.split("=", 1)
            tgt = opts[o]["values"][val]
            tgt["kernels"] = {**tgt.get("kernels", {}), key: float(v)}
        else:
            kern[nm] = float(v)
    return dataclasses.replace(prof, kernels=kern, options=opts, **ch)


# A fork starts from the fit of the runtime it forked: ik_llama.cpp runs mainline llama.cpp's CUDA
# kernels (MMVQ, MMQ, flash attention) except where it replaced them, so what its own points do
# not identify keeps mainline's fitted value rather than the physics start.
PRIORS = {"ik_llama.cpp": "llama.cpp"}
# the kernels a fork shares with mainline (ik_llama.cpp replaced MoE (-fmoe) and MLA with its own)
PRIOR_PATHS = ("mmvq", "mmv", "mmq", "dequant_cublas", "cublas", "fa_vec", "fa_mma", "attn_mat")
FORK_SHARES = True          # a fork's shared kernels (PRIOR_PATHS, the per-SM rate) keep its mainline's fitted values


def _shared_with_prior(nm: str) -> bool:
    return nm in kn.SM_PARAMS or nm.split("@")[0].split(":")[0].split(".")[0] in PRIOR_PATHS


# An option value whose kernel paths run another runtime's code starts those paths from that
# runtime's fit: llama.cpp-vulkan's `fork=ik_llama.cpp` (ik_llama.cpp's port of the Vulkan backend)
# runs ik_llama.cpp's MoE and MLA graph (PATH_SCOPED_OPTIONS), so where no Vulkan point of the port
# identifies an entry of those paths (its one source left out) it keeps ik_llama.cpp's (CUDA) fitted
# value, not the physics start: the same expert batching and MLA kernels' structure, though on other
# shaders (docs/COSTMODEL.md, "Whose Vulkan backend")
OPTION_PRIORS = {"llama.cpp-vulkan": {("fork", "ik_llama.cpp"): "ik_llama.cpp"}}

# the fits of this process that a fork's start takes (set by bench/bench_public_fit.py after
# fitting the runtime a fork starts from), so that a run does not depend on the profiles on disk
PRIOR_FITS: dict = {}


def _start_profile(runtime: str) -> cm.RuntimeProfile:
    """The runtime's shipped profile with its fit removed (the start it records), with the kernel
    table and overheads of its PRIORS runtime's fit as start values where it has one."""
    p = cm.load_runtime(runtime)
    start = p.calibration.get("start") if p.calibration else None
    prof = cm.runtime_from_dict(start, where=f"{runtime} (start)") if start else dataclasses.replace(p, calibration={})
    prior = PRIORS.get(runtime)
    if prior:
        q = PRIOR_FITS.get(prior) or cm.load_runtime(prior)
        if q.calibration or prior in PRIOR_FITS:
            # the prior's current values win over a recorded start's (which holds only what an
            # earlier prior gave for these paths)
            shared = {k: v for k, v in q.kernels.items() if _shared_with_prior(k)}
            prof = dataclasses.replace(prof, kernels={**prof.kernels, **shared},
                                       layer_overhead_us=q.layer_overhead_us, step_overhead_us=q.step_overhead_us)
    for (opt, val), prior in OPTION_PRIORS.get(runtime, {}).items():
        q = PRIOR_FITS.get(prior) or cm.load_runtime(prior)
        paths = PATH_SCOPED_OPTIONS.get(runtime, {}).get(opt, ())
        if not (q.calibration or prior in PRIOR_FITS) or opt not in prof.options:
            continue
        # the prior's entries of the option's paths (kernel efficiencies and the MoE fixed times: what
        # the compiled fit scopes per point; not mmid:half_tokens, one value per runtime there) under
        # the option value, in place of a recorded start's (which holds only what a prior gave)
        got = {k: v for k, v in q.kernels.items() if k.split(":")[0].split(".")[0] in paths and k != HALF}
        options = copy.deepcopy(prof.options)
        options[opt]["values"].setdefault(val, {})["kernels"] = got
        prof = dataclasses.replace(prof, options=options)
    return prof


# ---- cross-validation ------------------------------------------------------------------------
def loso(points: Sequence[PublicPoint], runtime: str) -> dict:
    """Leave-one-source-out: {source: [(point, predicted)]} for the runtime's sources, each
    predicted by the runtime model fitted to the runtime's other sources."""
    mine = [p for p in points if p.runtime == runtime]
    return _held_out(runtime, mine, mine, lambda p: p.source)


def predict_many(points: Sequence[PublicPoint], profile: cm.RuntimeProfile) -> list[float]:
    """tok/s for each point under a profile (compiled: fast)."""
    if not points:
        return []
    comp = compile_points(points, profile)
    t = evaluate(comp, profile, {}, len(points))
    return list(_work(points) / t)


def _scoped_params(profile: cm.RuntimeProfile) -> dict:
    """The kernel entries a profile keeps under an option value (SCOPED_OPTIONS: Vulkan's coopmat)
    as the scoped names the compiled chains look up ("mmq:compute@coopmat=khr")."""
    out = {}
    rt = profile.name.split("[")[0]
    for o in tuple(SCOPED_OPTIONS.get(rt, ())) + tuple(PATH_SCOPED_OPTIONS.get(rt, {})):
        for val, sets in profile.options.get(o, {}).get("values", {}).items():
            for k, v in sets.get("kernels", {}).items():
                out[f"{k}@{o}={val}"] = v
    return out


def shallow_deep(points: Sequence[PublicPoint], runtime: str) -> dict:
    """{source: [(point, predicted)]}: each source with at least 4 depths of one test is fitted
    (with the runtime's other sources) on its shallower half of depths and predicts the deeper half."""
    mine = [p for p in points if p.runtime == runtime]
    out = {}
    for src in sorted({p.source for p in mine}):
        pts = [p for p in mine if p.source == src]
        depth = lambda p: p.n_depth + (p.n_prompt if p.test == "pp" else p.n_gen) / 2   # noqa: E731
        ds = sorted({depth(p) for p in pts})
        if len(ds) < 4:
            continue
        cut = ds[len(ds) // 2 - 1]
        shallow = [p for p in pts if depth(p) <= cut]
        deep = [p for p in pts if depth(p) > cut]
        fit = fit_runtime(runtime, [p for p in mine if p.source != src] + shallow)
        out[src] = list(zip(deep, predict_many(deep, fit.profile)))
    return out


def leave_one_gpu_out(points: Sequence[PublicPoint], runtime: str, test_sources=None) -> dict:
    """{gpu key: [(point, predicted)]}: each card's points (of `test_sources` only, when given)
    predicted by the runtime model fitted to every point on the other cards (the card enters only
    through its datasheet and its architecture's factor, fitted on the other cards of that
    architecture)."""
    mine = [p for p in points if p.runtime == runtime]
    tested = [p for p in mine if test_sources is None or p.source in test_sources]
    return _held_out(runtime, mine, tested, lambda p: p.gpu_key)


def _held_out(runtime: str, mine: list, tested: list, key) -> dict:
    """{group: [(point, predicted)]}: for each key(p) value among `tested`, those tested points
    predicted by the runtime model fitted to every point of `mine` outside that group."""
    out = {}
    for g in sorted({key(p) for p in tested}):
        train = [p for p in mine if key(p) != g]
        test = [p for p in tested if key(p) == g]
        fit = fit_runtime(runtime, train)
        out[g] = list(zip(test, predict_many(test, fit.profile)))
    return out


def mape(pairs, test=None):
    e = [abs(q / p.measured - 1) for p, q in pairs if test is None or p.test == test]
    return float(np.mean(e)) if e else None

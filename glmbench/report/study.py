"""The study: what the report varies (`Study`), its setups with the runtime profile resolved once
and the one-card split rule written once (`split_for`), and the predictions made from it:
`sweep` (records), `decisions` (costmodel.decide per workload), `ceilings` (memory), `offload_rows`.

Rendering lives in report/render.py; report.run joins the two and writes the files.
"""
from __future__ import annotations

import functools
import shlex
from dataclasses import dataclass
from typing import Sequence

from glmbench import vocab
from glmbench.models.configs import load
from glmbench.predict import costmodel as cm
from glmbench.predict import hardware
from glmbench.predict import sweep as sw
from glmbench.results import records as rec

GIB = 1024 ** 3


def split_for(n_cards: int, split: str) -> str:
    """The split a rig of `n_cards` runs: none on one card, the study's `split` on more (the rule
    every setup of the report, its findings and its crossover curves follow)."""
    return "none" if n_cards == 1 else split

def _pow2_range(lo: int, hi: int) -> tuple:
    out, x = [], lo
    while x <= hi:
        out.append(x)
        x *= 2
    return tuple(out)


# The workload shapes the decision table ranks setups for. Lengths are round numbers chosen to
# span the study's range (a chat turn to a prompt near 128K), not taken from a trace.
Workload = vocab.Workload
WORKLOADS = (
    Workload(1024, 256, name="chat turn"),
    Workload(16384, 1024, name="coding agent step"),
    Workload(65536, 512, name="long document Q&A"),
    Workload(120 * 1024, 512, name="whole-book prompt"),
    Workload(2048, 256, 16, name="batch serving, short"),
    Workload(16384, 512, 8, name="batch serving, long"),
)


@dataclass(frozen=True)
class Study:
    """Everything the report varies. Each model runs on `hardware` with every card count in
    `cards` (one card unsplit; more cards split by `split` over a `link_gbps` link)."""
    models: tuple = ("glm-4.7-flash", "qwen3-32b")
    hardware: str = "rtx-3090"
    cards: tuple = (1, 2)
    link_gbps: float = 1.4          # what the study measured between its two RTX 3090s (docs/SOURCES.md §3)
    link_latency_us: float | None = None   # None: hardware.default_link_latency_us (the card's stated link's, else the study's)
    split: str = vocab.DEFAULTS["split"]
    weights: str = vocab.DEFAULTS["weights"]
    kv: str = vocab.DEFAULTS["kv"]
    depths: tuple = _pow2_range(1024, 131072)
    prompts: tuple | None = None    # prefill / TTFT prompt lengths; None: the depths
    n_prompt: int | None = None     # set: pp of n_prompt tokens at every depth (sweep-bench, llama-bench -d)
    n_gen: int = 1                  # tokens of each tg point (tg<n_gen> @ d, the mean over its steps)
    runtime: str = vocab.DEFAULTS["runtime"]
    mla_strategy: str = vocab.DEFAULTS["mla_strategy"]
    concurrency: tuple = (1, 2, 4, 8, 16, 32, 64)
    serve_context: int = 4096
    workloads: tuple = WORKLOADS
    # llama.cpp's partial offload on one-card setups (costmodel.Offload fields; None: none), the
    # host that holds what is offloaded (hardware.get_host; "host": this machine, measured), and
    # whether the report adds, for one card, the fastest offload setting that fits each context
    offload: dict | None = None
    host: str | None = None
    offload_table: bool = False
    # measured routing (records with `routing_counts`, from `glmbench measure FILE --routing-stats`):
    # the one model's experts are chosen with those frequencies (Setup.expert_skew); None: uniform
    routing: str | None = None

    def __post_init__(self):
        s = object.__setattr__
        models = (self.models,) if isinstance(self.models, str) else tuple(self.models)
        if not models:
            raise ValueError("`models` is empty: name at least one model")
        s(self, "models", models)
        for name in ("cards", "depths", "concurrency"):
            vals = getattr(self, name)
            vals = (vals,) if isinstance(vals, int) else tuple(vals)
            if not vals:
                raise ValueError(f"`{name}` is empty")
            for v in vals:
                if isinstance(v, bool) or not isinstance(v, int) or v < (0 if name == "depths" else 1):
                    raise ValueError(f"`{name}` must hold whole numbers >= {0 if name == 'depths' else 1}, got {v!r}")
            s(self, name, tuple(sorted(set(vals))))
        if self.prompts is not None:
            p = tuple(sorted(set(int(x) for x in self.prompts)))
            if not p or p[0] < 1:
                raise ValueError(f"`prompts` must hold whole numbers >= 1, got {self.prompts!r}")
            s(self, "prompts", p)
        for name, lo in (("n_prompt", 1), ("n_gen", 1)):
            v = getattr(self, name)
            if v is not None and (isinstance(v, bool) or not isinstance(v, int) or v < lo):
                raise ValueError(f"`{name}` must be a whole number >= {lo}, got {v!r}")
        if self.n_gen is None:
            raise ValueError("`n_gen` must be a whole number >= 1, got None")
        if not (isinstance(self.link_gbps, (int, float)) and self.link_gbps > 0):
            raise ValueError(f"`link_gbps` must be > 0, got {self.link_gbps!r}")
        if isinstance(self.serve_context, bool) or not isinstance(self.serve_context, int) or self.serve_context < 0:
            raise ValueError(f"`serve_context` must be a whole number >= 0, got {self.serve_context!r}")
        if self.offload is not None:
            off = self.offload if isinstance(self.offload, cm.Offload) else cm.Offload(**dict(self.offload))
            s(self, "offload", off)

    @property
    def prompt_lengths(self) -> tuple:
        return self.prompts or tuple(d for d in self.depths if d > 0)

    @functools.cached_property
    def routing_histogram(self) -> list:
        """Tokens per expert from the `routing` file (results.records.routing_histogram)."""
        if len(self.models) != 1:
            raise ValueError(f"`routing` is one MoE model's measured expert histogram; the study has "
                             f"{len(self.models)} models: give one")
        h = rec.routing_histogram(rec.read_records(self.routing))
        if h is None:
            raise ValueError(f"{self.routing}: no record carries `routing_counts` "
                             "(measure a model file with `glmbench measure FILE --routing-stats`)")
        return h

    @functools.cached_property
    def _gpu(self):
        # read once: a "host" profile measures this machine's ceilings, which takes seconds
        if hardware.is_host(self.hardware):  # this machine's CPU, measured now (needs the C core)
            # the measured side, imported only here: predictions for GPUs never load it
            from glmbench.measure.machine import host_profile
            return host_profile()
        return hardware.get_gpu(self.hardware)

    def _rig(self, n: int):
        lat = (hardware.default_link_latency_us(self._gpu, self.link_gbps) if self.link_latency_us is None
               else self.link_latency_us)
        return hardware.Rig(self._gpu, n, link_gbps=self.link_gbps if n > 1 else None,
                            link_latency_us=lat if n > 1 else None)

    @functools.cached_property
    def _rigs(self) -> tuple:
        return tuple(self._rig(n) for n in self.cards)

    def rigs(self) -> list:
        return list(self._rigs)

    @functools.cached_property
    def configs(self) -> dict:
        """Model name (as records carry it) -> ModelConfig, for every model of the study."""
        out = {}
        for m in self.models:
            cfg = load(m)
            out[cfg.name] = cfg
        return out

    @functools.cached_property
    def runtime_profile(self) -> cm.RuntimeProfile:
        """The study's runtime profile, read once (every setup of the study shares it)."""
        return cm.load_runtime(self.runtime)

    def setup(self, model, n_cards: int, **changes) -> cm.Setup:
        """`model` on `n_cards` of the study's rig (split by `split_for`) with the study's formats,
        MLA strategy and runtime; `changes` replace any of those Setup fields (kv=, runtime=...)."""
        rig = next((r for r in self._rigs if r.n_cards == n_cards), None)
        if rig is None:
            rig = self._rig(n_cards)
        kw = dict(rig=rig, split=split_for(n_cards, self.split), weights=self.weights, kv=self.kv,
                  mla_strategy=self.mla_strategy, runtime=self.runtime_profile)
        kw.update(changes)
        return cm.Setup(model=model, **kw)

    @functools.cached_property
    def host_profile(self):
        """The host of offloaded setups (hardware.Host): resolved once; `host` measures this machine."""
        if hardware.is_host(self.host):
            from glmbench.measure.machine import host_profile   # the measured side, only for `host`
            return hardware.host_from_cpu(host_profile())
        return hardware.get_host(self.host)

    def setup_templates(self) -> list[dict]:
        """Setup fields without the model (sweep.predict combines them with every model); the
        offload, when the study has one, on its one-card setups."""
        out = []
        for r in self.rigs():
            t = dict(rig=r, split=split_for(r.n_cards, self.split), weights=self.weights,
                     kv=self.kv, mla_strategy=self.mla_strategy, runtime=self.runtime_profile)
            if self.offload is not None and r.n_cards == 1:
                t.update(offload=self.offload, host=self.host_profile)
            if self.routing is not None:
                t["expert_skew"] = self.routing_histogram
            out.append(t)
        return out

    def setups(self) -> list:
        return [cm.Setup(model=cfg, **t) for cfg in self.configs.values() for t in self.setup_templates()]

    def command(self) -> str:
        """The `glmbench report` command line that reproduces this study."""
        d = Study()
        parts = ["glmbench report"]
        q = lambda v: shlex.quote(str(v))   # a GPU as tools print it, a path with spaces: one argument each
        if self.models != d.models:
            parts += [f"--model {q(m)}" for m in self.models]
        for flag, name in (("--hardware", "hardware"), ("--link", "link_gbps"), ("--split", "split"),
                           ("--weights", "weights"), ("--kv", "kv"), ("--runtime", "runtime")):
            if getattr(self, name) != getattr(d, name):
                parts.append(f"{flag} {q(getattr(self, name))}")
        if self.cards != d.cards:
            parts.append("--cards " + ",".join(map(str, self.cards)))
        if self.depths != d.depths:
            parts.append("--depths " + ",".join(map(str, self.depths)))
        if self.concurrency != d.concurrency:
            parts.append("--concurrency " + ",".join(map(str, self.concurrency)))
        if self.serve_context != d.serve_context:
            parts.append(f"--serve-context {self.serve_context}")
        if self.n_prompt is not None:
            parts.append(f"--n-prompt {self.n_prompt}")
        if self.n_gen != d.n_gen:
            parts.append(f"--n-gen {self.n_gen}")
        if self.offload is not None:
            o = self.offload
            if o.n_gpu_layers is not None:
                parts.append(f"--n-gpu-layers {o.n_gpu_layers}")
            if o.n_cpu_moe:
                parts.append(f"--n-cpu-moe {o.n_cpu_moe}")
            parts += [f"--override-tensor {q(p + '=CPU')}" for p in o.override_tensor]
        if self.host is not None:
            parts.append(f"--host {q(self.host)}")
        if self.offload_table:
            parts.append("--offload")
        if self.routing is not None:
            parts.append(f"--routing {q(self.routing)}")
        return " ".join(parts)


# ---- predictions ------------------------------------------------------------------------------
def sweep(study: Study, tests: Sequence[str] = ("tg", "pp", "mem", "serve"), *, progress: bool = True,
          out=None) -> list[dict]:
    """Predicted records for the study: tg (of `n_gen` tokens) and mem at every depth; pp from
    an empty cache at every prompt length (its `seconds` is the TTFT), or, with `study.n_prompt`,
    pp of n_prompt tokens at every depth; serve at every concurrency.

    out: a .json path passed to sweep.predict: points already there are reused, and the file
    holds every finished point if the sweep is interrupted."""
    bad = [t for t in tests if t not in sw.TESTS]
    if bad or not tests:
        raise ValueError(f"`tests` must be a non-empty subset of {sw.TESTS}, got {tuple(tests)!r}")
    n_setups = len(study.setups())  # every model, format and GPU checked before any work (and any progress bar)
    templates = study.setup_templates()
    calls = []
    per_depth = [t for t in tests if t in ("tg", "mem")]
    if per_depth:
        calls.append(dict(depths=study.depths, tests=tuple(per_depth), n_gen=study.n_gen))
    if "pp" in tests and study.n_prompt is not None:
        calls.append(dict(depths=study.depths, tests=("pp",), n_prompt=study.n_prompt))
    elif "pp" in tests:
        calls += [dict(depths=(0,), tests=("pp",), n_prompt=n) for n in study.prompt_lengths]
    if "serve" in tests:
        calls.append(dict(depths=(study.serve_context,), tests=("serve",), concurrency=study.concurrency))
    bar = None
    if progress:   # a tick per setup of each grid: a sweep of many models shows its rate and ETA
        from glmbench._progress import tqdm   # (loaded where a bar is shown)
        bar = tqdm(total=len(calls) * n_setups, desc="predict", unit="setup")
    recs: list[dict] = []
    try:
        for kw in calls:
            recs += sw.predict(list(study.models), templates, out=out,
                               on_setup=None if bar is None else (lambda: bar.update(1)), **kw)
    finally:
        if bar is not None:
            bar.close()
    return recs


def decisions(study: Study) -> list[dict]:
    """costmodel.decide for each workload of the study over all its setups: one dict per
    workload with the ranked rows."""
    setups = study.setups()
    out = []
    for w in study.workloads:
        rows = cm.decide(w, setups)
        out.append({"workload": {"name": w.name, "prompt": w.prompt, "output": w.output,
                                 "concurrency": w.concurrency}, "ranking": rows})
    return out


def ceilings(study: Study) -> list[dict]:
    """The memory ceiling of every setup of the study, as the cost model predicts it: the weights
    on the fullest card, the KV bytes per token, the card's capacity and the longest context one
    stream can hold (costmodel.max_context). The report's memory table is these rows
    (ceilings.json beside report.md). A model with chunked attention (Llama 4) also gets `chunk_decode`:
    its one-stream decode at the deepest study depth that starts a chunk (where its chunked layers read
    the fewest keys, as every multiple of the chunk does) and half a chunk further."""
    rows = []
    for s in study.setups():
        cfg = s.model
        chunk = None
        starts = [d for d in study.depths if cfg.window_chunked and cfg.windowed_layers and d >= cfg.sliding_window
                  and d % cfg.sliding_window == 0]
        if starts:
            d0, w = max(starts), cfg.sliding_window
            chunk = {"chunk": w, "chunked_layers": len(cfg.windowed_layers), "n_layers": cfg.n_layers,
                     "depth": d0, "tok_s": 1.0 / cm.decode(s, d0).seconds,
                     "mid_depth": d0 + w // 2, "mid_tok_s": 1.0 / cm.decode(s, d0 + w // 2).seconds}
        rows.append({"chunk_decode": chunk, "evidence": "predicted", "model": cfg.name, "rig": s.rig.name, "n_cards": s.n_cards,
                     "split": s.split, "weights": s.weights, "kv": s.kv, "runtime": s.runtime.name,
                     "weights_bytes_fullest_card": max(c.weights for c in cm.memory(s, 0).cards),
                     "kv_bytes_per_token": cfg.kv_bytes_per_token(s.kv), "capacity_bytes": s.gpu.memory_bytes,
                     # a sliding-window model: past the window only the global layers' cache grows
                     "sliding_window": cfg.sliding_window if cfg.windowed_layers else None,
                     "window_chunked": bool(cfg.window_chunked and cfg.windowed_layers),
                     "kv_bytes_per_token_past_window": cfg.kv_bytes_per_token(s.kv, windowed=False),
                     # a hybrid's linear layers: one fixed recurrent state per stream (0 without them)
                     "recurrent_state_bytes": cfg.recurrent_state_bytes(),
                     "linear_layers": len(cfg.linear_layers),
                     "max_context": cm.max_context(s), "native_context": cfg.max_position_embeddings})
    return rows


OFFLOAD_PROMPT = 512   # the prefill the offload table reports (tokens on top of the context)


def offload_settings(cfg) -> list:
    """The offload settings the offload table tries for a model, fastest-leaning first: for an MoE
    model --n-cpu-moe 0..n_layers (the experts of the first N layers in host memory), for a dense
    one -ngl from all layers (and the output) down to 0."""
    if cfg.n_routed_experts:
        return [cm.Offload(n_cpu_moe=n) for n in range(cfg.n_layers + 1)]
    return [cm.Offload(n_gpu_layers=n) for n in range(cfg.n_layers + 1, -1, -1)]


def offload_rows(study: Study) -> list[dict]:
    """For each model on one card of the study's hardware: at each depth, the offload setting with
    the fastest predicted decode whose card and host memory hold that context (None when nothing
    fits), with its card and host bytes, decode tok/s at the depth and prefill tok/s of
    OFFLOAD_PROMPT tokens on top of it. The report's offload table is these rows (offload.json)."""
    rig = study.rigs()[0] if study.rigs()[0].n_cards == 1 else hardware.Rig(study.rigs()[0].gpu, 1)
    host = study.host_profile
    rows = []
    for cfg in study.configs.values():
        setups = [cm.Setup(cfg, rig, "none", study.weights, study.kv, study.mla_strategy, study.runtime_profile,
                           offload=o, host=host) for o in offload_settings(cfg)]
        for d in study.depths:
            best = None
            for s in setups:
                m = cm.memory(s, d)
                if not m.fits:
                    continue
                tg = cm.decode(s, d).tok_s
                if best is None or tg > best[1]:
                    best = (s, tg, m)
            row = {"evidence": "predicted", "model": cfg.name, "rig": rig.name, "host": host.key or host.name,
                   "weights": setups[0].weights if setups else study.weights, "kv": study.kv, "n_depth": d,
                   "capacity_bytes": rig.gpu.memory_bytes, "host_capacity_bytes": host.memory_bytes}
            if best is None:
                row.update(setting=None, fits=False)
            else:
                s, tg, m = best
                row.update(setting=s.offload.label, fits=True, **s.offload.fields(), card_bytes=m.cards[0].total,
                           host_bytes=m.host.total, tg_tok_s=tg, n_prompt=OFFLOAD_PROMPT,
                           pp_tok_s=cm.prefill(s, OFFLOAD_PROMPT, d).tok_s)
            rows.append(row)
    return rows

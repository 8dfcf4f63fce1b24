"""Where an MLA model's decode speed meets a dense model's, as a function of how well the
runtime runs MLA attention.

The study found GLM-4.7-Flash and a dense model crossing near 64K of context; the `typical`
profile finds no crossover up to 128K. Both can be right: the depth where the dense model catches
up depends on the memory efficiency of the runtime's MLA attention kernel (the fraction of the
card's bandwidth its cache reads reach, RuntimeProfile.mla_attention_efficiency) and on the MLA
strategy (naive expands every cached latent, absorbed reads the cache twice, flash once).
`crossover_depth` finds the depth for one pair of setups; `mla_crossover_curves` sweeps the
efficiency for each strategy and runtime profile, and marks each profile's own value.

Where the efficiency lives depends on the profile. A physics or calibrated profile (`typical`,
`ideal`, data/calibrated/*) holds it in `mla_attention_efficiency[strategy]` (else its attention
class's memory efficiency). A runtime model (`llama.cpp`, `ik_llama.cpp`, `vllm`, ...) runs MLA
with its own kernel (`mla_strategy`, forced on the Setup) whose memory efficiency its kernel table
holds (`kernels["mla_<strategy>:memory"]`, fitted where the public data identified it), which
replaces the per-strategy value: the sweep sets that entry too (`mla_kernel_key`), so the knob
acts on runtime models as on the rest, and their curves are for the strategy they run (a per-card
or per-architecture memory factor of the table still multiplies it on that card).
"""
from __future__ import annotations

import dataclasses
from typing import Sequence

from glmbench import vocab
from glmbench.models import configs
from glmbench.predict import costmodel as cm
from glmbench.predict import kernels as kn

DEPTHS = tuple(sorted({int(round(1024 * 2 ** (i / 2))) for i in range(0, 15)}))   # 1K .. 128K, x sqrt(2)
EFFICIENCIES = tuple(round(0.02 * (1 / 0.02) ** (i / 13), 4) for i in range(14))   # 0.02 .. 1, log-spaced
DENSE_MODELS = ("qwen3-32b", "mistral-small-24b", "seed-oss-36b")   # the first three; study_dense() has all the study tries


def dense_builtins() -> tuple:
    """Every built-in dense model (GQA attention, no routed experts), read from the shipped
    configs: the candidates for the study's unnamed "dense model of the same size class"."""
    out = []
    for n in configs.builtin_names():
        c = configs.load(n)
        if c.attention == "gqa" and not c.n_routed_experts:
            out.append(n)
    return tuple(out)


# The dense candidates of the study's search (report/findings.py, the crossover curves, `glmbench
# search`'s study setups): the study never named its dense model ("a plain dense GQA model of the same
# size class"), so the search tries these 14 dense built-ins, from 4B to 70B, sliding-window Gemma 3
# among them. A fixed list: the catalog also holds models shipped to import and predict published
# results (Llama 2 13B/70B, Qwen2.5, Gemma 2, Mistral 7B/Nemo, ...), and those do not join the
# study's search (and change its report) unless listed here; a name not built in is an error.
STUDY_DENSE = ("gemma-3-12b", "gemma-3-27b", "gemma-3-4b", "llama-2-7b", "llama-3-70b", "llama-3-8b", "llama-3.1-8b",
               "llama-3.3-70b", "mistral-small-24b", "qwen2.5-coder-7b", "qwen3-14b", "qwen3-32b", "qwen3-8b",
               "seed-oss-36b")


def study_dense() -> tuple:
    """STUDY_DENSE, each checked to be a built-in dense GQA model."""
    dense = set(dense_builtins())
    bad = [n for n in STUDY_DENSE if n not in dense]
    if bad:
        raise ValueError(f"STUDY_DENSE names {', '.join(bad)}: not built-in dense GQA models")
    return STUDY_DENSE


def runs_strategy(runtime, strategy: str) -> str:
    """The MLA strategy a Setup with `strategy` runs under this profile: a runtime model's own
    (RuntimeProfile.mla_strategy, which the Setup takes), else `strategy`; unfused ("absorbed")
    where a runtime model's flash attention is off (kernels.mla_runs)."""
    rt = cm.load_runtime(runtime)
    return kn.mla_runs(rt.mla_strategy or vocab.mla_strategy(strategy), rt)


def mla_kernel_key(runtime, strategy: str) -> str | None:
    """The kernel-table entry that holds the memory efficiency of the MLA attention a profile runs
    for `strategy` ("mla_flash:memory", ...), for a runtime model (a profile with a kernel table);
    None for a profile without one (its `mla_attention_efficiency` holds it)."""
    rt = cm.load_runtime(runtime)
    if not rt.kernels:
        return None
    path = kn.attention_path("mla", runs_strategy(rt, strategy), False, rt.flash_attn, rt)
    return f"{path}:memory"


def with_mla_efficiency(runtime, strategy: str, efficiency: float) -> cm.RuntimeProfile:
    """The profile with MLA attention run as `strategy` at memory efficiency `efficiency`: its
    `mla_attention_efficiency[strategy]` and, for a runtime model, the kernel-table entry of the
    MLA kernel it runs (mla_kernel_key), which would otherwise replace it."""
    rt = cm.load_runtime(runtime)
    if isinstance(efficiency, bool) or not isinstance(efficiency, (int, float)) or not 0 < efficiency <= 1:
        raise ValueError(f"`efficiency` must be in (0, 1], got {efficiency!r}")
    st = runs_strategy(rt, strategy)
    ch = {"mla_attention_efficiency": {**rt.mla_attention_efficiency, st: float(efficiency)}}
    key = mla_kernel_key(rt, st)
    if key is not None:
        ch["kernels"] = {**rt.kernels, key: float(efficiency)}
    return dataclasses.replace(rt, **ch)


def mla_efficiency_of(runtime, strategy: str) -> float:
    """The memory efficiency a profile's MLA attention runs at when a Setup asks for `strategy`:
    a runtime model's kernel-table entry for the MLA kernel it runs (mla_kernel_key) where fitted,
    else the profile's fitted value for the strategy, else its attention class's (before any
    per-card factor and any quantized-cache factor)."""
    rt = cm.load_runtime(runtime)
    st = runs_strategy(rt, strategy)
    e = rt.mla_attention_efficiency.get(st, rt.memory_efficiency["attention"])
    key = mla_kernel_key(rt, st)
    if key is not None:
        e = kn.efficiency(rt.kernels, key.rpartition(":")[0], None, "memory", e)
    return e


def crossover_depth(mla_setup: cm.Setup, dense_setup: cm.Setup, depths: Sequence[int] = DEPTHS, *,
                    dense_speeds: Sequence[float] | None = None, mla_speeds: Sequence[float] | None = None):
    """The first depth where the dense model's one-stream decode becomes at least as fast as the
    MLA model's (interpolated between depths, costmodel.crossover): a float; 0.0 when the dense
    model is already as fast at the first depth; None when the MLA model stays faster at every
    depth of the grid. dense_speeds / mla_speeds: the setups' decode tok/s at `depths`, where the
    caller already has them (a sweep pairing one setup with many)."""
    depths = list(depths)
    ya = list(mla_speeds) if mla_speeds is not None else [cm.decode(mla_setup, d).tok_s for d in depths]
    yb = list(dense_speeds) if dense_speeds is not None else [cm.decode(dense_setup, d).tok_s for d in depths]
    if yb[0] >= ya[0]:
        return 0.0
    xs = cm.crossover(depths, ya, yb)
    return xs[0] if xs else None


def mla_crossover_curves(rigs: Sequence, runtimes: Sequence, *, mla_model: str = "glm-4.7-flash",
                         dense_models: Sequence[str] | None = None, weights: str = vocab.DEFAULTS["weights"],
                         kv: str = vocab.DEFAULTS["kv"], split: str = vocab.DEFAULTS["split"],
                         strategies: Sequence[str] | None = None, efficiencies: Sequence[float] = EFFICIENCIES,
                         depths: Sequence[int] = DEPTHS, known_speeds=None) -> list[dict]:
    """One row per (rig, dense model, runtime, strategy, efficiency): the crossover depth
    (crossover_depth) of `mla_model` against the dense model. Each runtime's own efficiency for
    each strategy is added to the grid and flagged `own: True` (the point to mark on its curve).
    strategies: None = every MLA strategy for a profile that was not fitted, and for a calibrated
    profile the strategies it was fitted for (its measurements say nothing about the others); a
    runtime model runs its own strategy whatever is asked (runs_strategy), so its rows carry that one.
    `knob` names what the sweep sets: the kernel-table entry of a runtime model ("kernels.mla_flash:memory")
    or "mla_attention_efficiency.<strategy>"; `own_fitted` whether the profile's own value of it was
    fitted (the knob among its calibration's fitted parameters) or is a physics value.
    dense_models: None = the study's dense candidates (study_dense). known_speeds: a function giving a
    dense Setup's decode tok/s at `depths` where the caller has priced that very setup (a findings
    search), else None."""
    dense_models = study_dense() if dense_models is None else tuple(dense_models)
    rows = []
    for rig in rigs:
        sp = "none" if rig.n_cards == 1 else split
        for rt_src in runtimes:
            rt = cm.load_runtime(rt_src)
            dense = {m: cm.Setup(m, rig, split=sp, weights=weights, kv=kv, runtime=rt) for m in dense_models}
            dense_y = {m: (known_speeds and known_speeds(s)) or [cm.decode(s, d).tok_s for d in depths]
                       for m, s in dense.items()}
            strats = strategies
            if strats is None:
                strats = sorted(rt.mla_attention_efficiency) if rt.calibrated and rt.mla_attention_efficiency \
                    else list(vocab.MLA_STRATEGIES)
            strats = list(dict.fromkeys(runs_strategy(rt, s) for s in strats))
            for st in strats:
                own = mla_efficiency_of(rt, st)
                key = mla_kernel_key(rt, st)
                knob = f"kernels.{key}" if key else f"mla_attention_efficiency.{st}"
                # the own value came from a fit (the knob is among the profile's fitted parameters),
                # or is the physics start the fit kept (not identified) or a physics profile's
                fitted = (key or f"mla_attention_efficiency.{st}") in ((rt.calibration or {}).get("fitted") or {})
                grid = sorted(set(efficiencies) | {own})
                for e in grid:
                    mla = cm.Setup(mla_model, rig, split=sp, weights=weights, kv=kv, mla_strategy=st,
                                   runtime=with_mla_efficiency(rt, st, e))
                    mla_y = [cm.decode(mla, d).tok_s for d in depths]   # once, for every dense model
                    for m in dense_models:
                        x = crossover_depth(mla, dense[m], depths, dense_speeds=dense_y[m], mla_speeds=mla_y)
                        rows.append({"mla_model": mla.model.name, "dense_model": dense[m].model.name,
                                     "n_cards": rig.n_cards, "rig": rig.name, "split": sp, "runtime": rt.name,
                                     "evidence": "calibrated" if rt.calibrated else "predicted",
                                     "mla_strategy": st, "mla_attention_efficiency": e, "own": e == own, "own_fitted": fitted, "knob": knob,
                                     "crossover_depth": x, "max_depth": depths[-1], "weights": weights, "kv": kv})
    return rows


__all__ = ["crossover_depth", "mla_crossover_curves", "with_mla_efficiency", "mla_efficiency_of", "dense_builtins", "study_dense",
           "STUDY_DENSE", "runs_strategy", "mla_kernel_key",
           "DEPTHS", "EFFICIENCIES", "DENSE_MODELS"]

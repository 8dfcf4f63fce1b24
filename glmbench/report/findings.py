"""The study, point by point, as a search: each of the study's findings evaluated for every dense
built-in x every shipped runtime profile x one and two cards of the study's rig, with which
combinations reproduce it, which do not, and why, in one sentence each.

The study never named its dense model ("a plain dense GQA model of the same size class") nor, for
every figure, its runtime; so instead of checking one guess, every candidate is tried:
  - dense models: the study's dense candidates, built-ins with GQA attention and no routed experts
    from 4B to 70B (predict/crossover.study_dense: Qwen3-32B, Mistral-Small-24B, Seed-OSS-36B, Gemma 3 ...);
  - runtimes: every profile shipped in glmbench/data/runtime/ and glmbench/data/calibrated/
    (discovered from the folders, not listed here);
  - cards: the study's card counts (one and two RTX 3090 over its measured 1.4 GB/s link).
GLM-4.7-Flash always runs on the same runtime and cards as the dense model it is compared with.

What the study's words mean here is fixed below (APPROX, SHORT, NEAR_64K, ...) and was fixed
before any combination was evaluated; nothing is tuned to make a finding appear. Every number
quoted comes from a predicted record made here (findings.json holds them) or from the cost
model's max_context, serve and decide (the report's decision-table figure) on the same setups.
"""
from __future__ import annotations

import math
from dataclasses import dataclass

from glmbench.models import configs
from glmbench.vocab import Workload
from glmbench.predict import costmodel as cm
from glmbench.predict import crossover as cx
from glmbench.predict import hardware as hw
from glmbench.predict import sweep as sw
from glmbench.report.labels import approx_tokens, tokens_label

MLA_MODEL = "glm-4.7-flash"
STUDY_ERA = "ik-llama-before-mla-fix"   # the runtime of the study's own measurements (docs/SOURCES.md §6)
FIXED = "ik-llama-mla-fixed"            # the same runtime after its MLA fixes

# ---- the study's words, as criteria (fixed before looking at any result) -------------------------
APPROX = 0.20            # "~x" / "about x": within 20% of x
SHORT = 4096             # a short chat's context: the study point's 4K prompt (report/workload.py)
STUDY_TG = 90.0          # "generation ~90 tok/s"
TG_RATIO = 2.0           # "more than 2x the dense model"
NEAR_64K = (32768, 131072)   # "near 64K": within a factor of two
FLAT = 0.8               # "holds flat": the deepest depth keeps at least this share of the first's speed
PP_PROMPT = 1024         # "short prompts": a 1K prompt from an empty cache
PP_RATIO = 3.0           # "~3x faster prefill"
DEEP_PP = 2048           # "the deepest prefill": a 2048-token chunk (sweep-bench's) on the deepest context
FAR_MORE = 2.0           # "far more context on one card": at least twice the tokens
QUANT_KV = "q8_0"        # the quantized cache the study compares with f16
KV_DEPTH = 32768         # where the quantized cache's speed is compared
CHAT = (1024, 256)       # "short chat": a 1K prompt, 256 tokens out (the report's "chat turn")
BATCHED_TOK_S = 500.0    # "~500 tok/s aggregate" on two cards (report/workload.STUDY_BATCHED_TOK_S)
BATCHED_CONTEXT = 4096   # at 4K context per stream (report/workload.STUDY_POINT_PROMPT)


def runtime_names() -> list[str]:
    """Every shipped runtime profile: glmbench/data/runtime/*.json then data/calibrated/*.json."""
    out = []
    for n in cm.list_runtimes() + cm.list_calibrated():
        if n not in out:
            out.append(n)
    return out


@dataclass(frozen=True)
class Combo:
    """One candidate for what the study ran: a dense model (None for a finding about GLM-4.7-Flash
    alone), a runtime profile and a card count (None for a finding that compares card counts)."""
    dense: str | None
    runtime: str
    n_cards: int | None

    def label(self) -> str:
        parts = [f"`{self.runtime}`"]
        if self.n_cards is not None:
            parts.append(f"{self.n_cards} card{'s' if self.n_cards > 1 else ''}")
        if self.dense is not None:
            parts.append(self.dense)
        return ", ".join(parts)


def _cards(n) -> str:
    return f"{n} card{'s' if n > 1 else ''}"


def _x(v) -> str:
    return f"{v:.1f}x"


class Search:
    """The setups, records and cached predictions of one findings search over a Study."""
    rows: list = []

    def __init__(self, study, *, dense=None, runtimes=None):
        self.study = study
        self.dense = tuple(dense) if dense is not None else cx.study_dense()
        rts = runtime_names() if runtimes is None else list(runtimes)
        self.runtimes = [cm.load_runtime(r) for r in rts]       # each profile resolved once
        self.left_out: list[dict] = []
        if runtimes is None:
            # a shipped profile that cannot price the study's setups (a runtime model on a CPU rig, or at a
            # format it has no kernels for: vLLM's fp8 under llama.cpp) is left out, with why, not fatal
            kept = []
            for r in self.runtimes:
                try:
                    for n in study.cards:
                        study.setup(MLA_MODEL, n, runtime=r)
                except ValueError as e:
                    self.left_out.append({"name": r.name, "why": str(e)})
                else:
                    kept.append(r)
            self.runtimes = kept
        if runtimes is None and study.runtime_profile.name not in rts:
            self.runtimes.append(study.runtime_profile)         # the study's own (e.g. calibrated:FILE) too
        self.rt = {r.name: r for r in self.runtimes}
        self.cards = tuple(study.cards)
        self.grid = tuple(sorted(set(_grid(study.depths)) | {SHORT}))
        self.deep = study.depths[-1]
        self.records: list[dict] = []
        self._tg: dict = {}
        self._pp: dict = {}
        self._ctx: dict = {}

    def setup(self, model, runtime: str, n_cards: int, **kw) -> cm.Setup:
        return self.study.setup(model, n_cards, runtime=self.rt[runtime], **kw)

    def tg(self, model, runtime: str, n_cards: int, kv: str | None = None) -> dict:
        """{depth: tg record} on the search's depth grid."""
        k = (model, runtime, n_cards, kv)
        if k not in self._tg:
            extra = {"kv": kv} if kv else {}
            recs = sw.predict(None, [self.setup(model, runtime, n_cards, **extra)], depths=self.grid, tests=("tg",))
            self.records += recs
            self._tg[k] = {r["n_depth"]: r for r in recs}
        return self._tg[k]

    def known_tg(self, setup: cm.Setup) -> list | None:
        """The decode tok/s on the grid of a setup this search has priced already (the very same Setup:
        model, rig, formats, runtime profile), else None (crossover.mla_crossover_curves' known_speeds)."""
        rt, n = setup.runtime.name, setup.rig.n_cards
        got = self._tg.get((setup.model.name, rt, n, None))
        if got is None or rt not in self.rt or self.setup(setup.model.name, rt, n) != setup:
            return None
        return [got[d]["avg_ts"] for d in self.grid]

    def tg_at(self, model, runtime, n_cards, depth, kv=None) -> dict:
        got = self.tg(model, runtime, n_cards, kv)
        if depth not in got:
            extra = {"kv": kv} if kv else {}
            r = sw.predict(None, [self.setup(model, runtime, n_cards, **extra)], depths=[depth], tests=("tg",))[0]
            self.records.append(r)
            got[depth] = r
        return got[depth]

    def pp(self, model, runtime: str, n_cards: int, n: int, depth: int) -> dict:
        k = (model, runtime, n_cards, n, depth)
        if k not in self._pp:
            r = sw.predict(None, [self.setup(model, runtime, n_cards)], depths=[depth], tests=("pp",), n_prompt=n)[0]
            self.records.append(r)
            self._pp[k] = r
        return self._pp[k]

    def max_context(self, model, runtime: str, n_cards: int, kv: str | None = None) -> int:
        k = (model, runtime, n_cards, kv)
        if k not in self._ctx:
            extra = {"kv": kv} if kv else {}
            self._ctx[k] = cm.max_context(self.setup(model, runtime, n_cards, **extra))
        return self._ctx[k]

    def usable_context(self, model, runtime: str, n_cards: int) -> tuple:
        """(the longest context the cards hold and the model can address: max_context capped at its
        native positions, whether the cap applied)."""
        ctx, native = self.max_context(model, runtime, n_cards), configs.load(model).max_position_embeddings
        return (min(ctx, native) if native else ctx), bool(native and ctx > native)

    def crossover(self, dense, runtime, n_cards):
        """The depth where `dense` decodes at least as fast as GLM-4.7-Flash (crossover.crossover_depth
        on the grid): a float, 0.0 from the start, None beyond the grid."""
        g, d = self.tg(MLA_MODEL, runtime, n_cards), self.tg(dense, runtime, n_cards)
        ds = list(self.grid)
        ya, yb = [g[x]["avg_ts"] for x in ds], [d[x]["avg_ts"] for x in ds]
        if yb[0] >= ya[0]:
            return 0.0
        xs = cm.crossover(ds, ya, yb)
        return xs[0] if xs else None

    def band(self, runtime, test: str = "tg", models=(MLA_MODEL,)) -> float:
        """The cross-validated error band of a comparison of `models`' `test` predictions on a
        runtime: the widest of their bands (RuntimeProfile.cv_band: per test and model class), 0
        for a profile that was not fitted."""
        prof = self.rt[runtime]
        return (max((prof.cv_band(test, configs.load(m)) or 0.0) for m in models)
                if prof.calibrated or prof.fitted_to_gpus else 0.0)


# ---- the findings ---------------------------------------------------------------------------------
def _generation(S: Search) -> dict:
    res = []
    for rt in S.rt:
        for n in S.cards:
            g = S.tg_at(MLA_MODEL, rt, n, SHORT)["avg_ts"]
            near = abs(g / STUDY_TG - 1) <= APPROX
            for m in S.dense:
                d = S.tg_at(m, rt, n, SHORT)["avg_ts"]
                ratio = g / d
                ok = near and ratio > TG_RATIO
                why = []
                if not near:
                    why.append(f"{g:.0f} tok/s is {abs(g / STUDY_TG - 1):.0%} {'above' if g > STUDY_TG else 'below'} ~{STUDY_TG:.0f}")
                if ratio <= TG_RATIO:
                    why.append(f"{ratio:.1f}x is not more than {TG_RATIO:g}x")
                res.append(_row(Combo(m, rt, n), ok,
                                f"GLM-4.7-Flash {g:.0f} tok/s vs {m} {d:.0f} tok/s at {tokens_label(SHORT)} ({_x(ratio)})"
                                + ("" if ok else f": {'; '.join(why)}"),
                                glm_tok_s=g, dense_tok_s=d, ratio=ratio))
    return _finding("generation", "GLM-4.7-Flash generates at ~90 tok/s, more than twice the dense model",
                    "generation ~90 tok/s and >2x dense",
                    f"GLM-4.7-Flash's decode at {tokens_label(SHORT)} within {APPROX:.0%} of {STUDY_TG:.0f} tok/s and more "
                    f"than {TG_RATIO:g}x the dense model's on the same runtime and cards", res,
                    _generation_why(S, res))


def _b(params) -> str:
    return f"{params / 1e9:.1f}B"


def _generation_why(S: Search, res) -> str:
    g = configs.load(MLA_MODEL)
    always = [m for m in S.dense if all(r["ratio"] > TG_RATIO for r in res if r["dense_model"] == m)]
    never = [m for m in S.dense if all(r["ratio"] <= TG_RATIO for r in res if r["dense_model"] == m)]
    n1 = S.cards[0]
    speeds = ", ".join(f"{S.tg_at(MLA_MODEL, rt, n1, SHORT)['avg_ts']:.0f} (`{rt}`)" for rt in S.rt)
    return (f"a decode step reads GLM-4.7-Flash's {_b(g.active_params(embeddings=False))} active weights against a dense "
            f"model's all ({', '.join(f'{m} {_b(configs.load(m).active_params(embeddings=False))}' for m in S.dense)}), "
            f"so it is more than {TG_RATIO:g}x as fast as " + (", ".join(always) if always else "no dense built-in")
            + " on every runtime" + (f", and never more than {TG_RATIO:g}x as fast as {', '.join(never)}" if never else "")
            + f"; its own speed at {tokens_label(SHORT)} on {_cards(n1)} is the runtime's: {speeds} tok/s")


def _crossover(S: Search) -> dict:
    res = []
    first, deep = S.grid[0], S.grid[-1]
    for rt in S.rt:
        for n in S.cards:
            for m in S.dense:
                x = S.crossover(m, rt, n)
                d = S.tg(m, rt, n)
                keep = d[deep]["avg_ts"] / d[first]["avg_ts"]
                native = configs.load(m).max_position_embeddings
                beyond = x is not None and bool(native) and x > native
                ok = x is not None and NEAR_64K[0] <= x <= NEAR_64K[1] and not beyond
                where = (f"is as fast as GLM-4.7-Flash from {tokens_label(first)}" if x == 0.0
                         else f"never catches up with GLM-4.7-Flash up to {tokens_label(deep)}" if x is None
                         else f"catches up with GLM-4.7-Flash at ≈ {approx_tokens(x)}")
                miss = ("" if ok or x is None else
                        f", beyond its native {tokens_label(native)} positions" if beyond else
                        f", {'before' if x < NEAR_64K[0] else 'after'} {tokens_label(NEAR_64K[0] if x < NEAR_64K[0] else NEAR_64K[1])}")
                res.append(_row(Combo(m, rt, n), ok,
                                f"{m} {where}{miss} (it keeps {keep:.0%} of its {tokens_label(first)} speed at "
                                f"{tokens_label(deep)}{', flat' if keep >= FLAT else ''})",
                                crossover_depth=x, dense_keep=keep))
    sw_models = [m for m in S.dense if configs.load(m).windowed_layers]
    crossing = sorted({r["dense_model"] for r in res if r["crossover_depth"] is not None})
    plain_cross = [m for m in crossing if m not in sw_models]
    why = ("a crossover needs a dense model whose speed holds as its cache grows and an MLA kernel slow enough to "
           "lose GLM-4.7-Flash's lead (the chart below); "
           + (f"{', '.join(sw_models)} cache only their global layers' context past the sliding window" if sw_models
              else "no dense built-in has a sliding window")
           + (f", and only {', '.join(crossing)} catch up anywhere in the search" if crossing and not plain_cross
              else f"; {', '.join(crossing)} catch up somewhere in the search" if crossing
              else ", and no dense built-in catches up anywhere in the search"))
    return _finding("crossover", "GLM-4.7-Flash and the dense model cross near 64K",
                    "crossover near 64K",
                    f"the dense model's decode catches up with GLM-4.7-Flash's between {tokens_label(NEAR_64K[0])} "
                    f"and {tokens_label(NEAR_64K[1])} (depth grid {tokens_label(first)}-{tokens_label(deep)}) and within "
                    "the dense model's native positions", res, why)


def _prefill(S: Search) -> dict:
    res = []
    for rt in S.rt:
        for n in S.cards:
            g0 = S.pp(MLA_MODEL, rt, n, PP_PROMPT, 0)["avg_ts"]
            gd = S.pp(MLA_MODEL, rt, n, DEEP_PP, S.deep)["avg_ts"]
            for m in S.dense:
                band = S.band(rt, "pp", (MLA_MODEL, m))
                d0 = S.pp(m, rt, n, PP_PROMPT, 0)["avg_ts"]
                dd = S.pp(m, rt, n, DEEP_PP, S.deep)["avg_ts"]
                ratio = g0 / d0
                short_ok = abs(ratio / PP_RATIO - 1) <= APPROX
                deep_ok = dd > gd * (1 + band)
                ok = short_ok and deep_ok
                res.append(_row(Combo(m, rt, n), ok,
                                f"pp{PP_PROMPT} {g0:.0f} vs {d0:.0f} tok/s ({_x(ratio)}, "
                                f"{'~' if short_ok else 'not ~'}{PP_RATIO:g}x) and pp{DEEP_PP} at {tokens_label(S.deep)} "
                                f"{gd:.0f} vs {dd:.0f} tok/s (dense {'faster' if deep_ok else 'not faster'}"
                                + (f" beyond the ±{band:.0%} band" if band else "") + ")",
                                ratio_short=ratio, glm_deep_tok_s=gd, dense_deep_tok_s=dd))
    return _finding("prefill", "GLM-4.7-Flash prefills ~3x faster at short prompts, the dense model faster at the deepest",
                    "prefill ~3x at short prompts, dense faster at the deepest",
                    f"pp{PP_PROMPT} from an empty cache {PP_RATIO:g}x ±{APPROX:.0%} the dense model's, and the dense "
                    f"model's pp{DEEP_PP} on {tokens_label(S.deep)} of context faster than GLM-4.7-Flash's", res,
                    f"short prefill is weight arithmetic, where GLM-4.7-Flash's "
                    f"{_b(configs.load(MLA_MODEL).active_params(embeddings=False))} active weights per token win by "
                    "the ratio of active weights (less what its small per-expert GEMMs lose); deep prefill is attention "
                    "arithmetic, where "
                    + _attn_flops_per_key(S.dense)
                    + ", so only a dense model with few attention FLOPs per key (a sliding window, or few heads) can win there")


def _memory(S: Search) -> dict:
    res = []
    n = 1

    usable = lambda m, rt: S.usable_context(m, rt, n)

    def said(m, ctx, capped):
        return f"{approx_tokens(ctx)}" + (" (all its native positions)" if capped else "") if ctx else \
            "none (its weights do not fit)"

    for rt in S.rt:
        g, g_cap = usable(MLA_MODEL, rt)
        for m in S.dense:
            d, d_cap = usable(m, rt)
            ratio = g / d if d else math.inf
            ok = ratio >= FAR_MORE
            res.append(_row(Combo(m, rt, n), ok,
                            f"on one {S.study.rigs()[0].gpu.name} GLM-4.7-Flash holds {said(MLA_MODEL, g, g_cap)} "
                            f"tokens, {m} {said(m, d, d_cap)}" + (f" ({_x(ratio)})" if d else ""),
                            glm_max_context=g, dense_max_context=d))
    return _finding("memory", "GLM-4.7-Flash holds far more context on one 24 GB card",
                    "MoE holds far more context on one 24 GB card",
                    f"GLM-4.7-Flash's longest context on one card at least {FAR_MORE:g}x the dense model's "
                    f"({S.study.weights} weights, {S.study.kv} cache; a context counts up to the model's native "
                    "positions)", res,
                    _memory_why(S, res))


def _memory_why(S: Search, res) -> str:
    kv = S.study.kv
    per = lambda m: configs.load(m).kv_bytes_per_token(kv) / 1024
    grow = lambda m: configs.load(m).kv_bytes_per_token(kv, windowed=False) / 1024
    win = [m for m in S.dense if configs.load(m).windowed_layers]
    never = [m for m in S.dense if not any(r["reproduced"] for r in res if r["dense_model"] == m)]
    return (f"GLM-4.7-Flash caches {per(MLA_MODEL):.0f} KiB per token ({kv}), the dense built-ins "
            + ", ".join(f"{m} {per(m):.0f}" for m in S.dense) + " KiB"
            + (f"; past their window {', '.join(win)} grow by only "
               + ", ".join(f"{grow(m):.0f}" for m in win) + " KiB per token (the global layers)" if win else "")
            + (f", so against {', '.join(never)} GLM-4.7-Flash's lead in context stays under {FAR_MORE:g}x on every "
               "profile" if never else ""))


def _quant_kv(S: Search) -> dict:
    res = []
    d = min(KV_DEPTH, S.deep)
    for rt in S.rt:
        band = S.band(rt)
        for n in S.cards:
            a = S.tg_at(MLA_MODEL, rt, n, d)["avg_ts"]
            b = S.tg_at(MLA_MODEL, rt, n, d, kv=QUANT_KV)["avg_ts"]
            ctx = S.max_context(MLA_MODEL, rt, n)
            slower = b < a * (1 - band)
            no_room = ctx >= S.deep
            ok = slower and no_room
            res.append(_row(Combo(None, rt, n), ok,
                            f"GLM-4.7-Flash at {tokens_label(d)}: {S.study.kv} {a:.1f}, {QUANT_KV} {b:.1f} tok/s "
                            f"({'slower' if slower else 'not slower'}), and {S.study.kv} already holds "
                            f"{approx_tokens(ctx)} tokens ({'more' if no_room else 'less'} than the {tokens_label(S.deep)} "
                            "the study needed)",
                            f16_tok_s=a, quant_tok_s=b, f16_max_context=ctx))
    fitted = [r.name for r in S.runtimes if r.kv_attention_efficiency]
    return _finding("quant_kv", "a quantized KV cache slows every step without buying real headroom",
                    f"{QUANT_KV} cache slower, without real headroom",
                    f"GLM-4.7-Flash's decode at {tokens_label(d)} with a {QUANT_KV} cache slower than with "
                    f"{S.study.kv} (beyond a calibrated profile's band), while {S.study.kv} already holds the study's "
                    f"deepest context ({tokens_label(S.deep)})", res,
                    "the cost model counts bytes, and a quantized cache has fewer; a real runtime's quantized-cache "
                    "attention dequantizes in its inner loop, which only a profile with a fitted per-format attention "
                    "efficiency (kv_attention_efficiency) can show: "
                    + (f"fitted in {', '.join(fitted)}" if fitted else "no shipped profile has one, so none is slower"))


def _one_vs_two(S: Search) -> dict:
    res = []
    if not (1 in S.cards and 2 in S.cards):
        return _finding("one_vs_two", "one card vs two", "short chat: one card; long context: two; batched ~500 tok/s",
                        "needs a study with one and two cards", [], "the study has no one- and two-card pair")
    P, O = CHAT
    for rt in S.rt:
        band = S.band(rt)
        one, two = S.setup(MLA_MODEL, rt, 1), S.setup(MLA_MODEL, rt, 2)
        # the report's decision-table figure for a chat turn: TTFT + (O - 1) mean decode steps
        e1, e2 = (cm.decide(Workload(P, O, name="chat turn"), [s])[0]["e2e_s"] for s in (one, two))
        chat_ok = e1 < e2
        t1, t2 = S.tg_at(MLA_MODEL, rt, 1, S.deep), S.tg_at(MLA_MODEL, rt, 2, S.deep)
        long_ok = (t2["avg_ts"] > t1["avg_ts"] * (1 + band)) or (not t1["fits"] and t2["fits"])
        serve = [cm.serve(two, c, BATCHED_CONTEXT) for c in S.study.concurrency]
        fit = [s for s in serve if s["fits"]]
        near = [s for s in fit if abs(s["aggregate_tok_s"] / BATCHED_TOK_S - 1) <= APPROX]
        best = max(fit, key=lambda s: s["aggregate_tok_s"]) if fit else None
        batch_ok = bool(near)
        ok = chat_ok and long_ok and batch_ok
        span = (f"{near[0]['concurrency']}" if len(near) == 1 or near[0] is near[-1]
                else f"{near[0]['concurrency']}-{near[-1]['concurrency']}") if near else ""
        batch_txt = (f"~{BATCHED_TOK_S:.0f} tok/s at {span} streams"
                     if near else f"at most {best['aggregate_tok_s']:.0f} tok/s ({best['concurrency']} streams)" if best
                     else "no batch fits")
        res.append(_row(Combo(None, rt, None), ok,
                        f"chat turn {e1:.3f} s on one card vs {e2:.3f} s on two ({'one card wins' if chat_ok else 'two are as fast or faster: the prompt pipelines over them'}); "
                        f"at {tokens_label(S.deep)} {t1['avg_ts']:.1f}{'' if t1['fits'] else ' (spills)'} vs "
                        f"{t2['avg_ts']:.1f} tok/s ({'two win' if long_ok else 'two do not win'}); batched on two cards "
                        f"{batch_txt}",
                        chat_one_s=e1, chat_two_s=e2, long_one_tok_s=t1["avg_ts"], long_two_tok_s=t2["avg_ts"],
                        batched_best_tok_s=best["aggregate_tok_s"] if best else 0.0))
    return _finding("one_vs_two", "one card vs two: one wins a short chat, two win long context, ~500 tok/s batched",
                    "short chat: one card; long context: two; batched ~500 tok/s",
                    f"GLM-4.7-Flash: a chat turn ({P} in, {O} out) faster on one card; decode at {tokens_label(S.deep)} "
                    f"faster on two (or only two hold it); two cards reach {BATCHED_TOK_S:.0f} tok/s ±{APPROX:.0%} "
                    f"in aggregate at {tokens_label(BATCHED_CONTEXT)} context with some of {len(S.study.concurrency)} "
                    "concurrencies", res,
                    "under llama.cpp's layer split a token passes through the cards one after the other, so a second card "
                    "adds a link crossing to every step and memory, not bandwidth, for one stream, while a prompt's "
                    "ubatches do pipeline over the cards; "
                    + ("GLM-4.7-Flash holds " + tokens_label(S.deep) + " on one card with every profile, so two cards win "
                       "long context only for a model that does not fit" if all(
                           S.max_context(MLA_MODEL, rt, 1) >= S.deep for rt in S.rt)
                       else "two cards win long context where one card cannot hold it"))


def _row(c: Combo, ok: bool, text: str, **numbers) -> dict:
    return {"dense_model": c.dense, "runtime": c.runtime, "n_cards": c.n_cards, "reproduced": bool(ok),
            "label": c.label(), "sentence": f"{c.label()}: {text}; {'reproduces' if ok else 'does not reproduce'} it.",
            **numbers}


def _finding(key, finding, study, criterion, results, why) -> dict:
    ok = [r for r in results if r["reproduced"]]
    return {"key": key, "finding": finding, "study": study, "criterion": criterion, "why": why,
            "results": results, "n": len(results), "n_reproduced": len(ok),
            "headline": ("reproduced by " + _group(ok)) if ok else "reproduced by none"}


def _group(rows) -> str:
    """'`rt` on 1 card (a, b); `rt2` (any cards) ...': reproducing combinations grouped by runtime and cards."""
    groups: dict = {}
    for r in rows:
        groups.setdefault((r["runtime"], r["n_cards"]), []).append(r["dense_model"])
    parts = []
    for (rt, n), ms in groups.items():
        where = f"`{rt}`" + (f" on {_cards(n)}" if n is not None else "")
        ms = [m for m in ms if m]
        parts.append(where + (f" with {', '.join(ms)}" if ms else ""))
    return "; ".join(parts)


FINDINGS = (_generation, _crossover, _prefill, _memory, _quant_kv, _one_vs_two)


def findings(study, *, dense=None, runtimes=None) -> dict | None:
    """The study's findings searched over `dense` (None: every dense built-in) x `runtimes` (None:
    every shipped profile) x the study's card counts. {"rows": [one per finding: finding, study,
    criterion, headline, why, results (one per combination: reproduced, sentence, numbers)],
    "likely": the combination that reproduces the most, "summary": two sentences, "crossover":
    curves for the chart, "crossover_depths": per dense model, runtime and cards, "records": every
    predicted record quoted, "runtimes", "dense_models"}; None for a study without GLM-4.7-Flash or
    with fewer than two positive depths."""
    if MLA_MODEL not in study.configs or len([d for d in study.depths if d > 0]) < 2:
        return None
    S = Search(study, dense=dense, runtimes=runtimes)
    rows = [f(S) for f in FINDINGS]
    S.rows = rows
    likely = _likely(S, rows)
    curves = cx.mla_crossover_curves(study.rigs(), S.runtimes, mla_model=MLA_MODEL, dense_models=S.dense,
                                     weights=study.weights, kv=study.kv, split=study.split,
                                     strategies=[study.mla_strategy], depths=S.grid, known_speeds=S.known_tg)
    cross = [{"dense_model": m, "runtime": rt, "n_cards": n, "crossover_depth": S.crossover(m, rt, n),
              "max_depth": S.grid[-1]} for rt in S.rt for n in S.cards for m in S.dense]
    return {"rows": rows, "likely": likely, "summary": _summary(S, likely), "records": S.records,
            "crossover": curves, "crossover_depths": cross, "dense_models": list(S.dense), "left_out": S.left_out,
            "runtimes": [{"name": r.name, "evidence": "calibrated" if r.calibrated else "predicted",
                          "cv_error": r.cv_error,
                          "cv_bands": {t: {m: r.cv_band(t, configs.load(m)) for m in (MLA_MODEL, *S.dense)}
                                       for t in ("tg", "pp")} if r.calibrated else None,
                          "mla_attention_efficiency": cx.mla_efficiency_of(r, study.mla_strategy)}
                         for r in S.runtimes],
            "criteria": {"approx": APPROX, "short_context": SHORT, "near_64k": list(NEAR_64K), "flat": FLAT,
                         "pp_prompt": PP_PROMPT, "deep_pp": DEEP_PP, "far_more": FAR_MORE, "quant_kv": QUANT_KV,
                         "kv_depth": KV_DEPTH, "chat": list(CHAT), "batched_tok_s": BATCHED_TOK_S,
                         "batched_context": BATCHED_CONTEXT}}


def _likely(S: Search, rows) -> dict:
    """The (dense model, runtime) pairs that reproduce the most findings: a finding counts for a pair
    when any of its combinations with that runtime (and that dense model, where it names one)
    reproduces it, on either card count."""
    score = {}
    for m in S.dense:
        for rt in S.rt:
            got = [f["key"] for f in rows if any(
                r["reproduced"] and r["runtime"] == rt and r["dense_model"] in (None, m) for r in f["results"])]
            score[(m, rt)] = got
    best = max(len(v) for v in score.values())
    top = [{"dense_model": m, "runtime": rt, "findings": v} for (m, rt), v in score.items() if len(v) == best]
    return {"n_findings": len(rows), "best": best, "top": top,
            "scores": [{"dense_model": m, "runtime": rt, "n": len(v)} for (m, rt), v in score.items()]}


def _summary(S: Search, likely) -> list[str]:
    """Two sentences: the setup the study most likely measured, and what it means for choosing hardware."""
    top = likely["top"]
    rts = list(dict.fromkeys(t["runtime"] for t in top))
    ms = list(dict.fromkeys(t["dense_model"] for t in top))
    names = {"generation": "generation", "crossover": "the ~64K crossover", "prefill": "prefill",
             "memory": "memory", "quant_kv": "the quantized cache", "one_vs_two": "one card vs two"}
    first = (f"Searched over {len(S.dense)} dense built-ins x {len(S.runtimes)} runtime profiles x "
             f"{len(S.cards)} card count(s), the study's findings are best reproduced, {likely['best']} of "
             f"{likely['n_findings']} (" + ", ".join(names.get(k, k) for k in top[0]["findings"]) + "), by "
             + " or ".join(f"`{r}`" for r in rts) + " with " + ", ".join(ms[:3]) + (" ..." if len(ms) > 3 else "")
             + " as the dense model: the setup the study most likely measured"
             + (", and no setup reproduces every finding." if likely["best"] < likely["n_findings"] else "."))
    cross = next(f for f in S.rows if f["key"] == "crossover")
    ok = [r for r in cross["results"] if r["reproduced"]]
    m = ms[0]
    (g_ctx, _), (d_ctx, d_cap) = S.usable_context(MLA_MODEL, rts[0], 1), S.usable_context(m, rts[0], 1)
    if ok:
        pairs = list(dict.fromkeys((r["runtime"], r["dense_model"]) for r in ok))
        # where each crosses (its fewest cards'; "near 64K" spans NEAR_64K, so ~115K counts too: say it)
        at = {}
        for r in sorted(ok, key=lambda r: r["n_cards"]):
            at.setdefault((r["runtime"], r["dense_model"]), r.get("crossover_depth"))
        windowed = all(configs.load(d).windowed_layers for _, d in pairs)
        eff = max(cx.mla_efficiency_of(S.rt[rt], S.study.mla_strategy) for rt, _ in pairs)
        second = ("For a reader choosing hardware, the ~64K crossover (a crossover between "
                  f"{tokens_label(NEAR_64K[0])} and {tokens_label(NEAR_64K[1])}) appears only with "
                  + "; ".join(f"`{rt}` and {d}" + (f" (≈ {approx_tokens(at[rt, d])})" if at.get((rt, d)) else "")
                              for rt, d in pairs[:4]) + (" ..." if len(pairs) > 4 else "")
                  + ", each with " + ("a sliding-window dense model and " if windowed else "")
                  + f"an MLA kernel at most {eff:.2f} of the card's bandwidth; "
                  "elsewhere GLM-4.7-Flash keeps its lead")
    else:
        second = ("For a reader choosing hardware, no searched setup puts the crossover near 64K, so GLM-4.7-Flash "
                  "keeps its decode lead")
    gpu = S.study.rigs()[0].gpu
    # the context is the runtime's (its memory overheads differ: SGLang's static pool, ...) at the study's
    # formats: both said, as the memory table beside it may show another runtime's
    second += (f"; with `{rts[0]}` at {S.study.weights} weights and a {S.study.kv} cache, one "
               f"{gpu.memory_bytes / 2 ** 30:.0f} GiB {gpu.name} holds {approx_tokens(g_ctx)} tokens of its context ({m}: "
               f"{approx_tokens(d_ctx) if d_ctx else 'none'}{', all its native positions' if d_cap else ''})")
    if 1 in S.cards and 2 in S.cards:
        a = S.tg_at(MLA_MODEL, rts[0], 1, S.grid[0])["avg_ts"]
        b = S.tg_at(MLA_MODEL, rts[0], 2, S.grid[0])["avg_ts"]
        gain = b > a * (1 + S.band(rts[0]))
        link = (f"the study's {S.study.link_gbps:g} GB/s link" if S.study.link_gbps == hw.STUDY_LINK_GBPS
                else f"a {S.study.link_gbps:g} GB/s link")
        second += (f", and a second card over {link} "
                   + ("adds single-stream speed" if gain else "adds memory, not single-stream speed")
                   + f" ({a:.0f} vs {b:.0f} tok/s at {tokens_label(S.grid[0])} with `{rts[0]}`)")
    return [first, second + "."]


def _grid(depths) -> tuple:
    """The crossover grid: the study's depths and the points halfway between (in log)."""
    ds = sorted(d for d in depths if d > 0)
    out = set(ds)
    for a, b in zip(ds, ds[1:]):
        out.add(int(round(math.sqrt(a * b))))
    return tuple(sorted(out))


def _attn_flops_per_key(dense) -> str:
    """Attention FLOPs per (query, cached key) pair over all layers, MLA vs the dense models, from the
    configs (expand-once MLA prefill vs GQA; a windowed layer's keys stop at its window)."""
    out = []
    for m in (MLA_MODEL,) + tuple(dense):
        cfg = configs.load(m)
        if cfg.attention == "mla":
            per = 2 * cfg.n_heads * (cfg.qk_nope_head_dim + cfg.qk_rope_head_dim + cfg.v_head_dim) * cfg.n_layers
        else:
            win = frozenset(cfg.windowed_layers)
            per = sum(2 * cfg.n_heads * (cfg.layer_head_dim(i) + cfg.layer_v_dim(i))
                      for i in cfg.attention_layers if i not in win)
        out.append(f"{m} {per / 1e6:.2f}")
    return ("attention costs, per query and cached key beyond any window, in MFLOP: " + ", ".join(out))

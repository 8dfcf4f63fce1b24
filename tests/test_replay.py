"""The replay simulator on hand-built traces whose answer is known: every expected time is added up
here from the cost model's own step times (costmodel.decode / costmodel.prefill), following the
schedule by hand, never by running the simulator."""
import math

import numpy as np
import pytest

from glmbench.predict import costmodel as cm
from glmbench.predict import replay as rp
from glmbench.predict import traces
from glmbench.predict.hardware import Rig, get_gpu

SETUP = cm.Setup("glm-4.7-flash", "rtx-3090")
TWO = cm.Setup("glm-4.7-flash", Rig(get_gpu("rtx-3090"), 2, link_gbps=1.4), split="layer")


def dec(depth, batch, s=SETUP):
    return cm.decode(s, depth, batch).seconds


def pf(n, depth, s=SETUP):
    return cm.prefill(s, n, depth).seconds


def exact(**kw):
    kw.setdefault("prefix_cache", False)
    return rp.ServerConfig(step_costs="exact", **kw)


def run(reqs, cfg, s=SETUP):
    return rp.replay(traces.from_requests(reqs), s, cfg)


@pytest.mark.parametrize("s", [SETUP, TWO], ids=["1card", "2cards"])
def test_one_request(s):
    L, O = 1000, 10
    r = run([(0.0, L, O)], exact(max_batched_tokens=2048), s)
    ttft = pf(L, 0, s)
    decode = sum(dec(L + j, 1, s) for j in range(O - 1))
    assert r.ttft(0) == pytest.approx(ttft, rel=1e-12)
    assert r.e2e(0) == pytest.approx(ttft + decode, rel=1e-12)
    assert r.tpot(0) == pytest.approx(decode / (O - 1), rel=1e-12)
    assert r.queueing(0) == 0.0
    assert list(r.preemptions) == [0]


def test_one_long_request_is_prefilled_in_chunks():
    L, O = 5000, 3
    r = run([(2.5, L, O)], exact(max_batched_tokens=2048))
    ttft = pf(2048, 0) + pf(2048, 2048) + pf(904, 4096)
    assert r.ttft(0) == pytest.approx(ttft, rel=1e-12)
    assert r.e2e(0) == pytest.approx(ttft + dec(L, 1) + dec(L + 1, 1), rel=1e-12)
    assert r.arrival[0] == 0.0          # a trace's time starts at its first arrival


def test_two_requests_arriving_together_share_steps():
    L, O = 1000, 5
    r = run([(0.0, L, O), (0.0, L, O)], exact(max_batched_tokens=2048))
    t1 = pf(L, 0) + pf(L, 0)           # one step holds both prompts
    end = t1 + sum(dec(L + j, 2) for j in range(O - 1))
    for i in (0, 1):
        assert r.ttft(i) == pytest.approx(t1, rel=1e-12)
        assert r.e2e(i) == pytest.approx(end, rel=1e-12)


def test_two_requests_with_a_budget_that_splits_the_second_prompt():
    L, O = 1000, 3
    r = run([(0.0, L, O), (0.0, L, O)], exact(max_batched_tokens=1500))
    s1 = pf(1000, 0) + pf(500, 0)                # A whole, B's first 500
    s2 = dec(1000, 1) + pf(500, 500)             # A's 2nd token with B's rest
    # then both decode: A at depth 1001 (its last token), B at 1000: mean 1000.5, interpolated
    s3 = dec(1000, 2) + 0.5 * (dec(1001, 2) - dec(1000, 2))
    s4 = dec(1001, 1)                            # B's last token alone
    assert r.ttft(0) == pytest.approx(s1, rel=1e-12)
    assert r.ttft(1) == pytest.approx(s1 + s2, rel=1e-12)
    assert r.e2e(0) == pytest.approx(s1 + s2 + s3, rel=1e-12)
    assert r.e2e(1) == pytest.approx(s1 + s2 + s3 + s4, rel=1e-12)


@pytest.mark.parametrize("n", [1, 2, 3])
def test_a_cache_that_fits_exactly_n_requests(n):
    L, O = 1000, 5
    per = L + O - 1                 # the last generated token is never written to the cache
    r = run([(0.0, L, O)] * (n + 1), exact(kv_tokens=n * per, max_batched_tokens=4096))
    first = n * pf(L, 0)
    wave1 = first + sum(dec(L + j, n) for j in range(O - 1))
    for i in range(n):
        assert r.ttft(i) == pytest.approx(first, rel=1e-12)
        assert r.e2e(i) == pytest.approx(wave1, rel=1e-12)
    # the (n+1)-th waits for the first wave to leave, then runs alone
    last = n
    assert r.queueing(last) == pytest.approx(wave1, rel=1e-12)
    assert r.ttft(last) == pytest.approx(wave1 + pf(L, 0), rel=1e-12)
    assert r.e2e(last) == pytest.approx(wave1 + pf(L, 0) + sum(dec(L + j, 1) for j in range(O - 1)), rel=1e-12)
    assert sum(r.preemptions) == 0
    assert r.max_running == n


def test_one_token_less_preempts_and_still_finishes():
    L, O = 1000, 5
    per = L + O - 1
    r = run([(0.0, L, O)] * 2, exact(kv_tokens=2 * per - 1, max_batched_tokens=4096))
    assert sum(r.preemptions) >= 1
    assert r.preemptions[0] == 0            # the request admitted last is the victim
    assert all(math.isfinite(f) for f in r.finish)
    assert not any(r.rejected)


def test_a_request_larger_than_the_pool_is_rejected():
    r = run([(0.0, 1000, 5), (0.0, 100, 5)], exact(kv_tokens=500))
    assert r.rejected[0] and not r.rejected[1]
    assert not r.meets(0)
    assert r.ttft(1) == pytest.approx(pf(100, 0), rel=1e-12)


def test_a_prefix_shared_by_every_request():
    # block 0 (512 tokens) is everyone's system prompt; each request arrives after the last left
    bt = 512
    L, O = 2 * bt, 2
    reqs = [(100.0 * k, L, O, [0, k + 1]) for k in range(4)]
    on = run(reqs, exact(prefix_cache=True))
    off = run(reqs, exact(prefix_cache=False))
    for k in range(4):
        assert off.ttft(k) == pytest.approx(pf(L, 0), rel=1e-12)
        want = pf(L, 0) if k == 0 else pf(L - bt, bt)
        assert on.ttft(k) == pytest.approx(want, rel=1e-12)
        assert on.e2e(k) == pytest.approx(want + dec(L, 1), rel=1e-12)
        assert on.cached_tokens[k] == (0 if k == 0 else bt)


def test_an_identical_prompt_still_computes_its_last_block():
    bt = 512
    reqs = [(0.0, 2 * bt, 2, [7, 8]), (100.0, 2 * bt, 2, [7, 8])]
    r = run(reqs, exact(prefix_cache=True))
    # both blocks are cached, but at least one token must be computed: the last block is
    assert r.ttft(1) == pytest.approx(pf(bt, bt), rel=1e-12)


def test_lru_eviction_keeps_the_blocks_used_last():
    bt = 512
    L = 2 * bt
    # the pool holds one request's prompt plus one spare block: caching B evicts A's blocks
    # tail first, so A's shared head (block 0) survives and C (same head as A) hits it
    reqs = [(0.0, L, 1, [0, 1]), (100.0, L, 1, [5, 6]), (200.0, L, 1, [0, 9])]
    r = run(reqs, exact(prefix_cache=True, kv_tokens=3 * bt))
    assert list(r.cached_tokens) == [0, 0, bt]
    assert r.ttft(2) == pytest.approx(pf(L - bt, bt), rel=1e-12)


def test_interpolated_step_costs_agree_with_exact():
    tr = traces.load("mooncake-conversation")
    small = traces.from_requests([(tr.arrival_s[i] * 4, tr.prompt[i], tr.output[i], list(tr.hash_ids[i]))
                                  for i in range(150)])
    a = rp.replay(small, SETUP, rp.ServerConfig(step_costs="exact"))
    b = rp.replay(small, SETUP, rp.ServerConfig(step_costs="interpolated"))
    sa, sb = a.summary(), b.summary()
    for k in ("e2e_s_mean", "ttft_s_mean", "tpot_s_mean", "makespan_s"):
        assert sb[k] == pytest.approx(sa[k], rel=0.02), k
    assert b.cost_model_calls < a.cost_model_calls


@pytest.mark.parametrize("model", ["glm-4.7-flash", "qwen3-30b-a3b", "qwen3-32b"])
def test_interpolated_prefill_of_a_short_chunk_is_the_cost_models(model):
    # a chunk's time inside one ubatch is far from linear in its length (a MoE reads more experts
    # as tokens are added, saturating; a dense model is bound by its weight reads until its GEMMs
    # fill): nodes only at each ubatch's ends put a 91-token prompt of GLM-4.7-Flash at 0.48x the
    # cost model's time (the Azure traces' short prompts)
    s = cm.Setup(model, "rtx-3090")
    sc = rp.StepCosts(s)
    for d in (0, 3000):
        for n in (16, 32, 91, 128, 256, 374, 600, 1100, 2000):
            assert sc.prefill(n, d) == pytest.approx(pf(n, d, s), rel=0.03), (n, d)


def test_interpolated_step_costs_agree_with_exact_on_short_prompts():
    tr = traces.load("azure-code-2023")
    small = traces.from_requests([(tr.arrival_s[i] * 5, tr.prompt[i], tr.output[i]) for i in range(150)])
    a = rp.replay(small, SETUP, exact()).summary()
    b = rp.replay(small, SETUP, rp.ServerConfig(prefix_cache=False)).summary()
    for k in ("e2e_s_mean", "ttft_s_mean", "tpot_s_mean", "makespan_s"):
        assert b[k] == pytest.approx(a[k], rel=0.02), k


def test_stats_buckets_and_weights():
    reqs = [(0.0, 1000, 10), (0.0, 5000, 10), (0.0, 20000, 10), (0.0, 200000, 10)]
    r = run(reqs, exact(kv_tokens=300000))
    rows = {b["bucket"]: b for b in r.buckets()}
    assert [b[0] for b in rp.BUCKETS] == ["<4K", "4-8K", "8-16K", "16-32K", "32-64K", "64-128K", ">=128K"]
    assert rows["<4K"]["requests"] == 1 and rows["4-8K"]["requests"] == 1 and rows["8-16K"]["requests"] == 0
    assert rows[">=128K"]["tokens"] == 200010
    s = r.summary()
    assert s["requests"] == 4 and s["output_tokens"] == 40
    assert s["throughput_tok_s"] == pytest.approx(40 / max(r.finish))
    # the token-weighted mean leans to the long request
    assert s["e2e_s_mean_tok"] > s["e2e_s_mean"]


def test_weighted_quantile():
    pairs = [(1.0, 1), (2.0, 1), (3.0, 8)]
    assert rp.weighted_quantile(pairs, 0.5, weighted=False) == 2.0
    assert rp.weighted_quantile(pairs, 0.5, weighted=True) == 3.0
    assert rp.weighted_quantile(pairs, 0.1, weighted=True) == 1.0
    assert math.isnan(rp.weighted_quantile([], 0.5))


def test_study_decides_and_names_the_crossover():
    reqs = [(i * 2.0, p, 64) for i, p in enumerate([1000, 3000, 6000, 12000, 24000, 48000, 100000] * 3)]
    tr = traces.from_requests(reqs, name="ladder")
    res = rp.study(tr, [SETUP, TWO])
    d = res["decision"]
    assert d["best"] in (SETUP.label, TWO.label)
    assert d["setup"] == (d["best"] if d["keeps_up"] else "")
    assert res["decision"]["reasons"]
    ws = [w for w in res["winners"] if w["requests"]]
    assert len(ws) == 6 and all(w["winner"] in (SETUP.label, TWO.label) for w in ws)
    cr = res["crossovers"]["False"]
    assert cr == rp.crossovers(ws)
    for c in cr:
        assert c["from"] != c["to"]


def test_study_no_keeps_up_reason_when_the_best_met_nothing(monkeypatch):
    """The first-ranked setup met the targets for none of its tokens (ranked first by fewer rejected
    tokens) while another met a sliver (0.005%, the same to the percent): no setup keeps up, and the
    first reason must say so, not 'meets TTFT <= 10 s and TPOT <= 0.1 s for 0.0% of tokens' as if it
    were a decision (what `glmbench trace mooncake-conversation --rate-scale 0.05 --runtime ik_llama.cpp`
    printed under its 'No setup keeps up' headline)."""
    att = {SETUP.label: 4.9e-5, TWO.label: 0.0}
    rej = {SETUP.label: 0.4, TWO.label: 0.0}

    class Fake:
        def __init__(self, s, c):
            self.row = {"setup": s.label, "prefix_cache": c.prefix_cache, "requests": 10, "failed": 0,
                        "rejected": 4 if rej[s.label] else 0, "rejected_why": "too long",
                        "slo_attainment_tok": att[s.label], "rejected_tok": rej[s.label],
                        "e2e_s_mean_tok": 100.0, "ttft_s_p50": 50.0, "ttft_s_p90": 90.0, "tpot_s_p50": 0.3,
                        "throughput_tok_s": 10.0}

        def summary(self):
            return dict(self.row)

        def buckets(self):
            return [{**self.row, "bucket": "<4K", "tokens": 1000}]

    monkeypatch.setattr(rp, "replay", lambda tr, s, c, **kw: Fake(s, c))
    res = rp.study(traces.from_requests([(0.0, 1000, 8)], name="t"), [SETUP, TWO], prefix_cache=(False,))
    d = res["decision"]
    assert d["best"] == TWO.label and not d["keeps_up"] and d["setup"] == ""
    assert d["reasons"][0].startswith("no setup keeps up"), d["reasons"][0]
    assert TWO.label in d["reasons"][0]


def test_study_names_the_setup_that_wins_the_buckets():
    """The reason 'wins buckets holding N% of the trace's tokens' names its setup: under a 'No setup
    keeps up' headline, after a list of every setup, a bare 'wins buckets holding 100% ...' bullet
    said nothing of whose win it was."""
    reqs = [(i * 2.0, p, 64) for i, p in enumerate([1000, 3000, 6000, 12000, 24000, 48000, 100000] * 3)]
    res = rp.study(traces.from_requests(reqs, name="ladder"), [SETUP, TWO])
    d = res["decision"]
    won = [r for r in d["reasons"] if "wins buckets holding" in r]
    assert len(won) == 1 and won[0].startswith(f"{d['best']} wins buckets holding"), won


def test_batched_point_runs_the_streams_together():
    b = rp.batched_throughput(TWO, 8, prompt=4096, output=64)
    assert b["max_running"] == 8 and b["rejected"] == 0
    assert b["decode_tok_s"] > rp.batched_throughput(TWO, 1, prompt=4096, output=64)["decode_tok_s"]


def test_bad_arguments():
    with pytest.raises(ValueError, match="step_costs"):
        rp.ServerConfig(step_costs="fast")
    with pytest.raises(ValueError, match="max_num_seqs"):
        rp.ServerConfig(max_num_seqs=0)
    with pytest.raises(ValueError, match="ttft_slo_s"):
        rp.replay(traces.from_requests([(0, 10, 2)]), SETUP, ttft_slo_s=0)


def _rows(winner_by_bucket, a, b):
    rows = []
    for name, lo, _ in rp.BUCKETS:
        w = winner_by_bucket.get(name)
        if w is None:
            continue
        for s in (a, b):
            good = s == w
            rows.append({"prefix_cache": False, "bucket": name, "setup": s, "requests": 5,
                         "slo_attainment_tok": 0.9 if good else 0.5, "rejected_tok": 0.0, "e2e_s_mean_tok": 1.0})
    return rows


def test_pair_verdicts():
    a, b = "A", "B"
    crossing = {"a": a, "b": b, "depths": [1024, 131072], "crossovers": [20000.0], "faster_before": a, "faster_after": b}
    v = rp._pair_verdict(crossing, _rows({"<4K": a, "8-16K": a, "16-32K": b, "64-128K": b}, a, b), False)
    assert v["holds"] and "takes over from 16-32K" in v["verdict"]
    v = rp._pair_verdict(crossing, _rows({"<4K": a, "16-32K": a}, a, b), False)
    assert not v["holds"] and "A wins every bucket" in v["verdict"]
    flat = {**crossing, "crossovers": [], "faster_after": a}
    assert rp._pair_verdict(flat, _rows({"<4K": a, "16-32K": a}, a, b), False)["holds"]
    v = rp._pair_verdict(flat, _rows({"<4K": a, "16-32K": b}, a, b), False)
    assert not v["holds"] and "16-32K" in v["verdict"]


def test_pair_verdict_a_bucket_neither_serves_is_no_win():
    """Both setups reject every request of a bucket (longer than either's context): no share met, all
    rejected, no latency. That bucket is a tie, not a win for whichever setup was listed first: the
    trace of `qwen3-32b` on one card vs two (both refuse the 64-128K prompts, past its 40,960 positions)
    said one card "wins 64-128K" and so that the synthetic comparison did not hold."""
    a, b = "A", "B"
    flat = {"a": a, "b": b, "depths": [1024, 16384], "crossovers": [], "faster_before": a, "faster_after": a}
    rows = _rows({"<4K": a, "16-32K": a}, a, b)
    for s in (b, a):       # the slower setup listed first: max() would pick it on a full tie
        rows.append({"prefix_cache": False, "bucket": "64-128K", "setup": s, "requests": 5,
                     "slo_attainment_tok": 0.0, "rejected_tok": 1.0, "e2e_s_mean_tok": math.nan})
    v = rp._pair_verdict(flat, rows, False)
    assert v["holds"], v["verdict"]
    assert [w["bucket"] for w in v["trace_winners"]] == ["<4K", "16-32K"]
    assert "64-128K" in v["verdict"] and "tie" in v["verdict"]
    # a crossing pair: the tied bucket is no take-over either
    crossing = {**flat, "crossovers": [20000.0], "faster_after": b}
    v = rp._pair_verdict(crossing, rows, False)
    assert not v["holds"] and v["trace_crossovers"] == []
    # every bucket a tie: nothing to judge, and the verdict says why
    v = rp._pair_verdict(flat, [r for r in rows if r["bucket"] == "64-128K"], False)
    assert not v["holds"] and "cannot tell" in v["verdict"] and "tie" in v["verdict"]
    # the study's own winners: a tied bucket starts no crossover
    ws = [{"bucket": n, "bucket_lo": lo, "requests": 5, "winner": w, "tie": t}
          for (n, lo, _), w, t in zip(rp.BUCKETS, ["A", "A", "A", "A", "A", "B"], [0, 0, 0, 0, 0, 1])]
    assert rp.crossovers(ws) == []


def test_synthetic_pairs_differ_in_one_thing():
    qwen = cm.Setup("qwen3-32b", "rtx-3090")
    qwen2 = cm.Setup("qwen3-32b", Rig(get_gpu("rtx-3090"), 2, link_gbps=1.4), split="layer")
    pairs = rp.synthetic_crossovers([SETUP, TWO, qwen, qwen2])
    assert len(pairs) == 4          # not glm-1-card vs qwen-2-cards, nor glm-2 vs qwen-1
    for p in pairs:
        assert p["faster_before"] in (p["a"], p["b"]) and p["depths"][0] < p["depths"][1]


def test_two_card_throughput_agrees_with_serve():
    """One two-card schedule (costmodel.decode under layer split) in both: the replay's decode-only
    throughput of n streams at about one depth is serve's aggregate for n streams at that depth."""
    for n in (2, 8):
        # n prompts of 256 prefill in one step (budget 2048), then decode together at 257 .. 320
        b = rp.batched_throughput(TWO, n, 256, 64, exact(max_num_seqs=n))
        assert b["max_running"] == n
        sv = cm.serve(TWO, n, 256 + 32)
        assert b["decode_tok_s"] == pytest.approx(sv["aggregate_tok_s"], rel=0.01)


# ---- the closed-loop client (vLLM's bench serve / SGLang's bench_serving with --max-concurrency) ----
def test_closed_loop_sends_on_finishes_and_misses_the_step_in_flight():
    """B = 2 slots, 4 requests of 1500 in / 3 out, a 2048-token budget. Request 0 is prefilled in step 1 with
    548 tokens of request 1, whose prompt ends in step 2; step 3 is the last decode of request 0. Request 2,
    sent when request 0 finishes, reaches the server after step 4 (request 1's last decode) has been scheduled:
    it is prefilled alone in step 5. Request 3, sent when request 1 finishes (end of step 4), arrives during
    step 5 and is prefilled in step 6 beside request 2's decode. With no gap, request 2 would share step 4
    and request 3 step 5. Times added up here from the cost model's steps."""
    L, O = 1500, 3
    cfg = exact(max_num_seqs=2, max_batched_tokens=2048)
    g = 1e-3
    cl = rp.closed_loop(SETUP, L, O, 4, 2, cfg, client_gap_s=g)
    r = cl["result"]
    # the client's clock: the first two sent at 0 (they reach the idle server at g); request 2 at request
    # 0's finish, after steps 1-3, and request 3 at request 1's, one step later
    assert cl["sent_s"][:2].tolist() == [0.0, 0.0]
    assert cl["ttft_s"][0] == pytest.approx(g + pf(L, 0) + pf(548, 0), rel=1e-12)
    assert cl["sent_s"][2] == pytest.approx(r.latency["e2e_s"][0] + g, rel=1e-12)
    assert cl["sent_s"][3] == pytest.approx(r.latency["e2e_s"][1] + g, rel=1e-12)
    assert cl["sent_s"][3] > cl["sent_s"][2] > cl["ttft_s"][1] > cl["ttft_s"][0]
    # request 2: it waits out step 4 (request 1's last decode), then its prefill alone
    step4 = cl["sent_s"][3] - cl["sent_s"][2]
    assert cl["ttft_s"][2] == pytest.approx(step4 + pf(L, 0), rel=1e-9)
    # request 3: it waits out step 5 (request 2's prefill), then step 6: request 2's decode and its prefill
    assert cl["ttft_s"][3] == pytest.approx(pf(L, 0) + dec(L, 1) + pf(L, 0), rel=1e-3)
    # with no gap each joins the step that starts at the finish it was sent on
    c0 = rp.closed_loop(SETUP, L, O, 4, 2, cfg, client_gap_s=0.0)
    assert c0["ttft_s"][3] == pytest.approx(dec(L, 1) + pf(L, 0), rel=1e-3)
    assert c0["ttft_s"][3] < cl["ttft_s"][3] - 0.9 * pf(L, 0)
    # any gap below one step gives the same schedule: the first two, sent to an idle server, see the gap
    # itself; the two sent on finishes arrive inside the step in flight either way
    c2 = rp.closed_loop(SETUP, L, O, 4, 2, cfg, client_gap_s=2e-3)
    assert (c2["ttft_s"] - cl["ttft_s"]).tolist() == pytest.approx([1e-3, 1e-3, 0.0, 0.0], abs=1e-9)


def test_closed_loop_is_a_fixed_point_and_all_at_once_without_a_loop():
    cfg = exact(max_num_seqs=3, max_batched_tokens=2048)
    cl = rp.closed_loop(SETUP, 700, 5, 10, 3, cfg)
    fin = sorted((cl["sent_s"] + cl["e2e_s"]).tolist())
    assert cl["sent_s"][3:].tolist() == pytest.approx(fin[:7], rel=1e-12)     # request 3 + k on the k-th finish
    assert cl["replays"] <= -(-10 // 3) + 2
    # as many slots as requests: every request sent at 0, the same as a replay of them all arriving together
    every = rp.closed_loop(SETUP, 700, 5, 4, 8, exact(max_num_seqs=8, max_batched_tokens=2048))
    direct = run([(rp.CLIENT_GAP_S, 700, 5)] * 4, exact(max_num_seqs=8, max_batched_tokens=2048))
    assert every["sent_s"].tolist() == [0.0] * 4
    assert every["ttft_s"].tolist() == pytest.approx((direct.latency["ttft_s"] + rp.CLIENT_GAP_S).tolist(), rel=1e-12)
    assert every["replays"] == 1


@pytest.mark.parametrize("kw, match", [
    (dict(prompt=0), "prompt"), (dict(output=1.5), "output"), (dict(requests=True), "requests"),
    (dict(concurrency=0), "concurrency"), (dict(client_gap_s=-1e-3), "client_gap_s"),
    (dict(client_gap_s=float("nan")), "client_gap_s")])
def test_closed_loop_rejects_bad_arguments(kw, match):
    args = dict(prompt=100, output=4, requests=4, concurrency=2)
    gap = kw.pop("client_gap_s", rp.CLIENT_GAP_S)
    args.update(kw)
    with pytest.raises(ValueError, match=match):
        rp.closed_loop(SETUP, args["prompt"], args["output"], args["requests"], args["concurrency"],
                       client_gap_s=gap)


def test_bench_serve_at_a_request_rate():
    """An open loop: requests generated at `rate` (gamma gaps of shape `burstiness`, mean 1 / rate, seeded).
    Far apart, each runs alone: its TTFT is the trip to the idle server and its prefill, its TPOT the decode
    of one stream. With a concurrency limit, request k >= B is sent at max(generated, (k - B + 1)-th finish)."""
    cfg = exact(max_num_seqs=8, max_batched_tokens=2048)
    far = rp.bench_serve(SETUP, 500, 4, 5, rate=0.01, config=cfg)
    assert far["replays"] == 1
    assert far["ttft_s"].tolist() == pytest.approx([rp.CLIENT_GAP_S + pf(500, 0)] * 5, rel=1e-12)
    assert far["tpot_s"].tolist() == pytest.approx([(dec(500, 1) + dec(501, 1) + dec(502, 1)) / 3] * 5, rel=1e-9)
    gaps = [b - a for a, b in zip(far["sent_s"][:-1], far["sent_s"][1:])]
    assert min(gaps) > 0 and far["sent_s"][0] == 0.0
    # the same seed, the same draws; the mean gap is 1 / rate and a burstiness below 1 spreads them
    a = rp.bench_serve(SETUP, 64, 2, 400, rate=50.0, seed=3)
    b = rp.bench_serve(SETUP, 64, 2, 400, rate=50.0, seed=3)
    assert a["sent_s"].tolist() == b["sent_s"].tolist()
    assert a["sent_s"][-1] / 399 == pytest.approx(1 / 50.0, rel=0.15)
    burst = rp.bench_serve(SETUP, 64, 2, 400, rate=50.0, burstiness=0.25, seed=3)
    assert np.std(np.diff(burst["sent_s"])) > 1.5 * np.std(np.diff(a["sent_s"]))
    # a rate and a concurrency limit: each request waits for its slot and for its own generation time
    cl = rp.bench_serve(SETUP, 700, 5, 12, concurrency=3, rate=20.0, config=cfg)
    gen = rp.bench_serve(SETUP, 700, 5, 12, rate=20.0, config=cfg)["sent_s"]     # no limit: sent when generated
    fin = sorted((cl["sent_s"] + cl["e2e_s"]).tolist())       # the client's e2e counts from the send
    want = [gen[k] if k < 3 else max(gen[k], fin[k - 3]) for k in range(12)]
    assert cl["sent_s"].tolist() == pytest.approx(want, rel=1e-12)


@pytest.mark.parametrize("kw, match", [(dict(rate=0), "rate"), (dict(rate=float("nan")), "rate"),
                                       (dict(burstiness=0), "burstiness"), (dict(burstiness=math.inf), "burstiness"),
                                       (dict(seed=-1), "seed"), (dict(concurrency=0), "concurrency")])
def test_bench_serve_rejects_bad_arguments(kw, match):
    with pytest.raises(ValueError, match=match):
        rp.bench_serve(SETUP, 100, 4, 4, **kw)


def test_server_config_takes_each_server_s_defaults():
    """vLLM 0.10.1's: 1024 sequences on a device of >= 70 GiB other than an A100, else 256, and the runtime
    model's prefill budget (8192 / 2048 by the same rule); llama-server's 4 slots (auto) and -b 2048; a
    command line's limits over the defaults."""
    h100 = cm.Setup("qwen3-30b-a3b", "h100-sxm", weights="bf16", kv="bf16", runtime="vllm")
    c = rp.server_config(h100, "vllm")
    assert (c.max_num_seqs, c.max_batched_tokens, c.prefix_cache) == (1024, 8192, False)
    c = rp.server_config(cm.Setup("qwen3-8b", "a100-sxm-80gb", weights="bf16", kv="bf16", runtime="vllm"), "vllm")
    assert (c.max_num_seqs, c.max_batched_tokens) == (256, 2048)
    c = rp.server_config(cm.Setup("qwen3-8b", "rtx-4090", weights="bf16", kv="bf16", runtime="vllm"), "vllm")
    assert (c.max_num_seqs, c.max_batched_tokens) == (256, 2048)
    c = rp.server_config(SETUP, "llama.cpp")
    assert (c.max_num_seqs, c.max_batched_tokens) == (4, 2048)
    c = rp.server_config(SETUP, "llama.cpp", max_num_seqs=8, max_batched_tokens=4096)
    assert (c.max_num_seqs, c.max_batched_tokens) == (8, 4096)
    # SGLang: its token pool from memory first (the memory model's for one stream), at most half its tokens in requests
    sg = cm.Setup("qwen3-32b", "h100-sxm", weights="bf16", kv="bf16", runtime="sglang")
    c = rp.server_config(sg, "sglang")
    assert c.kv_tokens == rp.kv_pool_tokens(sg, 1) > 0 and c.max_num_seqs == min(4096, c.kv_tokens // 2)
    # vLLM in-process (bench latency / throughput): 16384 tokens per step on an H100, 8192 on smaller cards
    assert rp.server_config(h100, "vllm", offline=True).max_batched_tokens == 16384
    assert rp.server_config(cm.Setup("qwen3-8b", "rtx-4090", weights="bf16", kv="bf16", runtime="vllm"), "vllm",
                            offline=True).max_batched_tokens == 8192
    with pytest.raises(ValueError, match="unknown server"):
        rp.server_config(SETUP, "tgi")


def test_arrivals_past_the_clock_are_a_clear_error():
    """Arrivals beyond the int64 whole-second clock (a --rate-scale of 1e-30, a timestamp of 1e305 s)
    crashed with OverflowError deep in the replay."""
    t = traces.from_requests([(0.0, 100, 5), (3600.0, 100, 5)]).scaled(1e-30)
    with pytest.raises(ValueError, match="beyond the replay clock"):
        rp.replay(t, SETUP, exact())
    # far apart but on the clock: both served, the late one as fast as the first
    r = rp.replay(traces.from_requests([(0.0, 100, 5), (2.0 ** 60, 100, 5)]), SETUP, exact())
    assert r.rejected == ["", ""]
    assert r.latency["e2e_s"][1] == pytest.approx(r.latency["e2e_s"][0], rel=1e-6)

import dataclasses
import json
import math
import os

import pytest

from glmbench import vocab
from glmbench.models import configs
from glmbench.predict import costmodel as cm
from glmbench.predict import runtime as runtime_mod
from glmbench.predict import hardware as hw

GIB = 2 ** 30
BUILTINS = configs.builtin_names()


def _op(step, name):
    """The one OpCost line called `name` (single card)."""
    lines = [o for o in step.ops if o.name == name]
    assert len(lines) == 1, [o.name for o in step.ops]
    return lines[0]


def test_gemv_flops_bytes_and_time_by_hand():
    # Qwen3-32B decode, one token, bf16 weights, ideal runtime: the MLP of each layer is a GEMV
    # of x[5120] through gate+up [2 x 25600, 5120] and down [5120, 25600]
    s = cm.Setup("qwen3-32b", "rtx-3090", weights="bf16", kv="f16", runtime="ideal")
    mlp = _op(cm.decode(s, 0), "mlp")
    assert mlp.count == 64
    assert mlp.flops == 64 * 2 * 3 * 25600 * 5120                 # no dequantization for bf16
    weight = 3 * 25600 * 5120 * 2
    act = 4 * (5120 + 3 * 25600)                                  # f32 x in, gate|up|down rows out
    assert mlp.bytes == 64 * (weight + act)
    # memory-bound: 2 FLOP per 2 bytes is far below the 3090's 71e12 / 936e9 = 76 FLOP/byte
    assert mlp.seconds == pytest.approx(64 * (weight + act) / 936e9)
    assert mlp.bound == "memory" and mlp.launch_s == 0


def test_quantized_gemv_pays_dequantization():
    q = cm.Setup("qwen3-32b", "rtx-3090", weights="q8_0", runtime="ideal")
    mlp = _op(cm.decode(q, 0), "mlp")
    n = 3 * 25600 * 5120
    assert mlp.flops == 64 * (2 * n + cm.DEQUANT_OPS * n)
    assert mlp.bytes == 64 * (n // 32 * 34 + 4 * (5120 + 3 * 25600))


def test_absorbed_vs_naive_mla_flops_by_hand():
    d, keys = 4095, 4096                                         # the new token sees 4096 keys
    H, R, Dr, Dn, Dv = 20, 512, 64, 192, 256
    kvb = R * H * (Dn + Dv)
    base = dict(model="glm-4.7-flash", rig="rtx-3090", weights="bf16", kv="f16", runtime="ideal")
    ab = cm.decode(cm.Setup(**base, mla_strategy="absorbed"), d)
    nv = cm.decode(cm.Setup(**base, mla_strategy="naive"), d)
    fl = cm.decode(cm.Setup(**base, mla_strategy="flash"), d)
    absorbed = (_op(ab, "attn.absorb_q").flops + _op(ab, "attn.core").flops + _op(ab, "attn.absorb_out").flops) / 47
    # fold kv_b into q and out (2 kvb per token), MQA over 576-wide keys and 512-wide values,
    # 5 softmax ops per score and head
    assert absorbed == 2 * kvb + 2 * H * (R + Dr + R) * keys + 5 * H * keys
    naive = (_op(nv, "attn.kv_b_expand").flops + _op(nv, "attn.core").flops) / 47
    # expand all 4096 latents through kv_b, then MHA over 256-wide keys and values
    assert naive == 2 * kvb * keys + 2 * H * (Dn + Dr + Dv) * keys + 5 * H * keys
    assert naive / absorbed > 30
    # flash does the absorbed arithmetic but reads the latent cache once, without f32 scores
    assert _op(fl, "attn.core").flops == _op(ab, "attn.core").flops
    row = 512 * 2 + 64 * 2
    assert _op(fl, "attn.core").bytes == 47 * (row * keys + 4 * 1 * 20 * (R + Dr + R))
    assert _op(ab, "attn.core").bytes == 47 * (2 * row * keys + 4 * 4 * 20 * keys + 4 * 20 * (R + Dr + R))
    assert ab.seconds > fl.seconds and nv.seconds > ab.seconds


def test_memory_of_a_known_config():
    s = cm.Setup("qwen3-32b", "rtx-3090", weights="q8_0", kv="f16", runtime="typical")
    m = cm.memory(s, 4096)
    cfg = configs.load("qwen3-32b")
    (c,) = m.cards
    # the embedding table stays in host memory (llama.cpp); everything else is on the card
    embed = 151936 * 5120 // 32 * 34
    assert c.weights == cfg.weight_bytes("q8_0") - embed
    assert c.kv == 4096 * 64 * 8 * 256 * 2 == GIB                 # 256 KiB per token
    assert c.overhead == GIB // 2
    qkv = 64 * 128 + 8 * 256 + 64 * 128                           # q, k+v, attention output
    assert c.workspace == 4 * 512 * (3 * 5120 + qkv + 2 * 25600) + 4 * 151936
    assert c.total == c.weights + c.kv + c.workspace + c.overhead
    assert c.capacity == 24 * GIB and m.fits == (c.total <= 24 * GIB)
    assert m.total == c.total


def test_max_context_and_spill():
    for name in ("glm-4.7-flash", "qwen3-32b"):
        for rig, split in ((hw.Rig("rtx-3090"), "none"), (hw.study_rig(), "layer"), (hw.study_rig(), "tensor")):
            s = cm.Setup(name, rig, split=split, weights="iq4_xs")
            n = cm.max_context(s)
            assert n > 0
            assert cm.memory(s, n).fits and not cm.memory(s, n + 1).fits
    one = cm.Setup("qwen3-32b", "rtx-3090", weights="iq4_xs")
    two = cm.Setup("qwen3-32b", hw.study_rig(), split="layer", weights="iq4_xs")
    assert cm.spill_context(two) == cm.max_context(one)
    assert cm.max_context(two) > 3 * cm.max_context(one)
    # Qwen3-32B in bf16 (65 GB) does not fit a 24 GiB card at all
    assert cm.max_context(cm.Setup("qwen3-32b", "rtx-3090", weights="bf16")) == 0
    assert not cm.memory(cm.Setup("qwen3-32b", "rtx-3090", weights="bf16"), 0).fits


def test_tensor_split_memory_kv_per_card():
    q = cm.memory(cm.Setup("qwen3-32b", hw.study_rig(), split="tensor", weights="q4_K"), 8192)
    g = cm.memory(cm.Setup("glm-4.7-flash", hw.study_rig(), split="tensor", weights="q4_K"), 8192)
    # GQA: each card caches half of the 8 KV heads; MLA: the latent serves all heads, so both
    # cards cache all of it
    assert [c.kv for c in q.cards] == [8192 * 262144 // 2] * 2
    assert [c.kv for c in g.cards] == [8192 * 54144] * 2
    l = cm.memory(cm.Setup("glm-4.7-flash", hw.study_rig(), split="layer", weights="q4_K"), 8192)
    # layer split: 24 + 23 layers
    assert [c.kv for c in l.cards] == [8192 * 24 * 1152, 8192 * 23 * 1152]


def _op0(step, name):
    """The OpCost line called `name` of card 0."""
    return next(o for o in step.ops if o.name == name and o.card == 0)


def test_tensor_split_past_the_kv_heads_replicates_them():
    """More cards than KV heads (vLLM's tensor parallelism: each KV head on cards / n_kv_heads cards,
    QKVParallelLinear's num_kv_head_replicas): a card caches and reads one KV head's rows, not
    1 / cards of them, and holds that head's whole k / v projections; the query heads still split.
    Qwen3-235B-A22B: 64 query heads, 4 KV heads of 128 (k and v), 94 layers."""
    cfg = configs.load("qwen3-235b-a22b")
    assert (cfg.n_heads, cfg.n_kv_heads, cfg.head_dim, cfg.n_layers) == (64, 4, 128, 94)
    kv_layer = 2 * 4 * 128 * 2                            # f16 K and V rows per token and layer
    four, eight = (cm.Setup("qwen3-235b-a22b", hw.Rig("h100-sxm", n), split="tensor", weights="bf16") for n in (4, 8))
    for s, heads in ((four, 1), (eight, 1)):
        m = cm.memory(s, 8192)
        assert [c.kv for c in m.cards] == [8192 * 94 * kv_layer * heads // 4] * s.n_cards
        core = _op0(cm.decode(s, 4096), "attn.core")
        assert core.bytes >= 4096 * 94 * kv_layer // 4   # one KV head's cache read per layer
    # the 8-card card holds the 4-card card's k / v projections (replicated), half of everything else
    wb = cm._layer_weight_bytes(cfg, "bf16")["attn"]
    kvw = sum(v for k, v in wb.items() if k.split(".")[0] in ("k_proj", "v_proj"))
    w4, w8 = cm.memory(four, 0).cards[0].weights, cm.memory(eight, 0).cards[0].weights
    assert w8 == pytest.approx(w4 / 2 + 94 * kvw / 8, rel=1e-6)
    # the qkv product: half the query rows, the same KV rows
    q4, q8 = (_op0(cm.decode(s, 0), "attn.qkv") for s in (four, eight))
    assert q4.flops - q8.flops == pytest.approx(94 * 2 * 64 * 128 * cfg.hidden_size / 8, rel=1e-6)
    # KV heads that neither divide the cards nor are divided by them, and query heads that do not divide: errors
    with pytest.raises(ValueError, match="num_attention_heads=64 to divide evenly"):
        cm.Setup("qwen3-235b-a22b", hw.Rig("h100-sxm", 3), split="tensor", weights="bf16")
    with pytest.raises(ValueError, match=r"num_key_value_heads=8 to divide evenly, or to divide 10"):
        cm.Setup("seed-oss-36b", hw.Rig("h100-sxm", 10), split="tensor", weights="bf16")   # 80 query heads / 10: fine
    two = cm.Setup("qwen3-32b", hw.Rig("h100-sxm", 2), split="tensor", weights="bf16")   # 8 KV heads over 2: split
    assert cm._kv_share(two) == 0.5 and cm._kv_share(eight) == 0.25 and cm._kv_share(four) == 0.25


def test_two_card_allreduce_by_hand():
    # ring all-reduce on 2 cards: 2 steps, each a latency plus half the data
    assert cm.allreduce_seconds(8192, 2, 1.4, 30) == pytest.approx(2 * 30e-6 + 8192 / 1.4e9)
    assert cm.allreduce_seconds(8192, 4, 1.4, 30) == pytest.approx(6 * 30e-6 + 6 / 4 * 8192 / 1.4e9)
    assert cm.allreduce_seconds(8192, 1, 1.4, 30) == 0
    # on a switched fabric (NVSwitch): a reduce-scatter and an all-gather straight to the peers, 2
    # latencies whatever the card count; the same as the ring on two cards
    assert cm.allreduce_seconds(8192, 8, 450, 5, switched=True) == pytest.approx(2 * 5e-6 + 14 / 8 * 8192 / 450e9)
    assert cm.allreduce_seconds(8192, 2, 450, 5, switched=True) == cm.allreduce_seconds(8192, 2, 450, 5)
    s = cm.Setup("qwen3-32b", hw.study_rig(), split="tensor", weights="q4_K")
    st = cm.decode(s, 0)
    ar = _op(st, "link.allreduce")
    # 64 layers x 2 all-reduces of one f32 hidden state (5120 x 4 bytes)
    assert ar.count == 128 and ar.seconds == pytest.approx(128 * (60e-6 + 20480 / 1.4e9))
    lg = _op(st, "link.logits")
    assert lg.seconds == pytest.approx(2 * 30e-6 + 4 * 151936 / 2 / 1.4e9)
    card = max(sum(o.seconds for o in st.ops if o.card == c and not o.name.startswith("link")) for c in (0, 1))
    assert st.seconds == pytest.approx(card + ar.seconds + lg.seconds)


def test_switched_fabric_is_sxm4_on_and_superchips_on_their_nvlink():
    assert hw.Rig("h100-sxm", 8).switched and hw.Rig("a100-sxm-80gb", 4).switched and hw.Rig("gb200", 4).switched
    assert not hw.Rig("h100-sxm", 8, link_gbps=64.0).switched          # a slower link: a ring
    # a faster NVLink on the same fabric is still the switch: 4 x B200, tensor split, priced 851 tok/s at its
    # 900 GB/s and 545 at 1800 (a ring's 2 (n - 1) latencies) before
    assert hw.Rig("b200", 4, link_gbps=1800.0).switched
    s = [cm.Setup("lfm2-1.2b", hw.Rig("b200", 4, link_gbps=g), split="tensor", weights="Q4_K_M", runtime="llama.cpp")
         for g in (None, 1800.0)]
    assert cm.decode(s[1], 0).tok_s >= cm.decode(s[0], 0).tok_s
    assert not hw.Rig("v100-sxm2-32gb", 8).switched                    # DGX-1's hybrid cube mesh
    assert not hw.Rig("h100-pcie", 4).switched and not hw.Rig("rtx-3090", 2).switched
    assert not hw.Rig("h100-sxm", 1).switched
    s = cm.Setup("llama-3.1-70b", hw.Rig("h100-sxm", 8), split="tensor", weights="bf16")
    ar = _op(cm.decode(s, 0), "link.allreduce")
    assert ar.count == 160 and ar.seconds == pytest.approx(160 * (2 * 5e-6 + 14 / 8 * 4 * 8192 / 450e9))


def test_layer_split_decode_is_sequential_plus_one_transfer():
    one = cm.Setup("glm-4.7-flash", "rtx-3090", weights="iq4_xs")
    two = cm.Setup("glm-4.7-flash", hw.study_rig(), split="layer", weights="iq4_xs")
    for d in (0, 8192):
        a, b = cm.decode(one, d), cm.decode(two, d)
        link = 30e-6 + 4 * 2048 / 1.4e9
        assert b.seconds == pytest.approx(a.seconds + link, rel=1e-9)
    # prefill pipelines the ubatches through the two cards, so it gains
    assert cm.prefill(two, 4096).seconds < 0.8 * cm.prefill(one, 4096).seconds


def test_layer_split_pipelines_ubatches_only():
    """llama.cpp's pipeline parallelism (layer split over several cards) overlaps the cards only
    across the ubatches of one llama_decode call: a decode batch of at most n_ubatch streams runs
    the cards in sequence (serve and the trace replay both use this decode)."""
    two = cm.Setup("glm-4.7-flash", hw.study_rig(), split="layer", weights="iq4_xs")
    ub = two.runtime.n_ubatch
    for b in (1, 8, ub):
        st = cm.decode(two, 4096, b)
        cards = [sum(o.seconds for o in st.ops if o.card == c and not o.name.startswith("link")) for c in (0, 1)]
        link = next(o.seconds for o in st.ops if o.name == "link.activations")
        assert st.seconds == pytest.approx(sum(cards) + link, rel=1e-12)
        # serve runs the batch as that one step: no micro-batch schedule of its own
        r = cm.serve(two, b, 4096)
        assert r["streams"] == b or b == ub
        assert b == ub or r["aggregate_tok_s"] == pytest.approx(b / st.seconds, rel=1e-12) and r["schedule"] == "one batch"
    # two ubatches: card 0 starts the second while card 1 runs the first
    b = 2 * ub
    half = cm.decode(two, 4096, ub)
    c0 = sum(o.seconds for o in half.ops if o.card == 0 and not o.name.startswith("link"))
    c1 = sum(o.seconds for o in half.ops if o.card == 1 and not o.name.startswith("link"))
    link = next(o.seconds for o in half.ops if o.name == "link.activations")
    # by hand: ubatch 2 leaves card 0 at 2 c0; card 1 starts it at max(c0 + link + c1, 2 c0 + link)
    want = max(c0 + link + c1, 2 * c0 + link) + c1
    assert cm.decode(two, 4096, b).seconds == pytest.approx(want, rel=1e-9)
    short = cm.serve(two, b, 256)
    assert short["fits"] and short["schedule"] == "2 pipelined ubatches"


def test_a_slow_link_carries_one_ubatch_at_a_time():
    """The pipeline let every ubatch's transfer overlap the ones still on the link, as if it had
    bandwidth for all of them: at 1e-6 GB/s a 64K prompt took the same time as a 4K one (6.2 vs
    0.39 tok/s, faster with more tokens). A boundary's link sends the ubatches one after another,
    so a link-bound prefill costs every ubatch's transfer."""
    slow = cm.Setup("qwen3-32b", hw.Rig(hw.get_gpu("rtx-3090"), 2, link_gbps=1e-6), split="layer")
    a, b = cm.prefill(slow, 4096), cm.prefill(slow, 65536)
    link = next(o for o in a.ops if o.name == "link.activations").seconds   # all of a's ubatches
    assert a.seconds >= link and b.seconds > 15 * a.seconds
    # by hand, two ubatches: the second leaves the link at max(2 c0, c0 + t) + t
    two = cm.Setup("glm-4.7-flash", hw.study_rig(), split="layer", weights="iq4_xs")
    one = cm.prefill(two, two.runtime.n_ubatch)
    c0 = sum(o.seconds for o in one.ops if o.card == 0 and not o.name.startswith("link"))
    t = next(o.seconds for o in one.ops if o.name == "link.activations")
    assert cm._pipelined([[c0, 0.0], [c0, 0.0]], [10 * c0, 10 * c0]) == pytest.approx(c0 + 20 * c0)
    assert cm._pipelined([[c0, 0.0], [c0, 0.0]], [t, t]) == pytest.approx(max(2 * c0, c0 + t) + t)


def test_a_prefill_too_long_to_price_is_refused_at_once(monkeypatch):
    """A prefill is priced ubatch by ubatch: `--depths 4294967296 --tests pp` (a depth the sweep accepts) was 8M
    passes, hours of work while the list of every pass's op costs grew past the machine's memory. Past
    MAX_PREFILL_UBATCHES the prediction is refused before any pass; up to it, each pass's costs are summed as
    they come, exactly as the whole list summed once."""
    s = cm.Setup("qwen3-8b", "rtx-3090")
    ub = s.n_ubatch
    n = cm.MAX_PREFILL_UBATCHES * ub + 1
    with pytest.raises(ValueError, match=f"a prefill of {n:,} tokens is {cm.MAX_PREFILL_UBATCHES + 1:,} ubatches of {ub}"):
        cm.prefill(s, n)
    with pytest.raises(ValueError, match="ubatches of"):
        cm.prefill(s, 2 ** 32, 2 ** 20)
    with pytest.raises(ValueError, match="ubatches of"):
        cm.prefill_batch(s, n // 4 + 1, 4)
    with pytest.raises(ValueError, match="ubatches of"):
        cm.ttft(s, n)
    # at the bound (made small here) a prefill is priced, and its op costs are every pass's, summed in order
    monkeypatch.setattr(cm, "MAX_PREFILL_UBATCHES", 3)
    d = 1000
    r = cm.prefill(s, 3 * ub, d)
    passes = [cm._pass(s, ub, cm._prefill_work(s.model, d + u * ub, ub), int(u == 2))[2] for u in range(3)]
    want = cm._merge([o for p in passes for o in p])
    assert [(o.name, o.card, o.count, o.flops, o.bytes, o.seconds) for o in r.ops] == \
        [(o.name, o.card, o.count, o.flops, o.bytes, o.seconds) for o in want]
    assert cm.prefill_batch(s, ub, 3, d).tokens == 3 * ub
    with pytest.raises(ValueError, match="more than the 3 one prediction prices"):
        cm.prefill(s, 3 * ub + 1, d)
    with pytest.raises(ValueError, match="more than the 3 one prediction prices"):
        cm.prefill_batch(s, ub, 4)


def test_a_layer_split_decode_too_large_to_price_is_refused_at_once(monkeypatch):
    """decode() under layer split prices a batch of more streams than one ubatch a ubatch at a time, as a prefill,
    but had no bound: `decode(setup, 0, 2 ** 30)` on two cards was 2M passes (ten minutes and more at n_ubatch 512,
    hours at ubatch=1) while the list of every pass's op costs grew past the machine's memory. Past
    MAX_PREFILL_UBATCHES it is refused before any pass, as a prefill is; up to it, each pass's costs are summed as
    they come, exactly as the whole list summed once."""
    s = cm.Setup("qwen3-8b", hw.Rig("rtx-3090", 2), split="layer")
    ub = s.n_ubatch
    d = 1000
    monkeypatch.setattr(cm, "MAX_PREFILL_UBATCHES", 3)
    with pytest.raises(ValueError, match=f"a decode step of {3 * ub + 1:,} streams under layer split is 4 ubatches "
                                         f"of {ub}, each priced on its own: more than the 3 one prediction prices"):
        cm.decode(s, d, 3 * ub + 1)
    r = cm.decode(s, d, 3 * ub)
    passes = [cm._pass(s, ub, cm._decode_work(s.model, d, ub), ub)[2] for _ in range(3)]
    want = cm._merge([o for p in passes for o in p])
    assert [(o.name, o.card, o.count, o.flops, o.bytes, o.seconds) for o in r.ops] == \
        [(o.name, o.card, o.count, o.flops, o.bytes, o.seconds) for o in want]
    # one pass whatever the batch on one card or under tensor split: never refused
    assert cm.decode(s.replace(rig=hw.Rig("rtx-3090", 2), split="tensor"), d, 3 * ub + 1).tok_s > 0
    assert cm.decode(s.replace(rig="rtx-3090", split="none"), d, 3 * ub + 1).tok_s > 0
    monkeypatch.undo()
    n = cm.MAX_PREFILL_UBATCHES * ub + 1
    with pytest.raises(ValueError, match=f"is {cm.MAX_PREFILL_UBATCHES + 1:,} ubatches of {ub}"):
        cm.decode(s, 0, n)


def test_expected_distinct_experts():
    f = cm.expected_distinct_experts
    assert f(64, 4, 1) == pytest.approx(4)
    assert f(64, 4, 2) == pytest.approx(64 * (1 - (60 / 64) ** 2))
    assert f(64, 4, 10_000) == pytest.approx(64)
    assert f(64, 4, 0) == 0
    assert f(64, 4, 8, [1.0] * 64) == pytest.approx(f(64, 4, 8))
    assert f(64, 4, 8, 1.0) < f(64, 4, 8)                        # skewed routing reads fewer experts
    assert f(64, 4, 8, [1] * 8 + [0] * 56) == pytest.approx(8 * (1 - 0.5 ** 8))
    # the decode step reads that many experts' weights (typical and the runtime models)
    s = cm.Setup("glm-4.7-flash", "rtx-3090", weights="q8_0", runtime="typical")
    ex = _op(cm.decode(s, 0, batch=8), "moe.experts")
    per_expert = 3 * 2048 * 1536 // 32 * 34
    acts = 4 * 8 * 4 * (2 * 2048 + 3 * 1536)
    assert ex.bytes == pytest.approx(46 * (f(64, 4, 8) * per_expert + acts))
    skewed = _op(cm.decode(s.replace(expert_skew=1.2), 0, batch=8), "moe.experts")
    assert skewed.bytes < ex.bytes
    # `ideal` reads the fewest a batch can touch, top_k, whatever the routing (a bound)
    assert cm.fewest_distinct_experts(64, 4, 8) == 4 == cm.fewest_distinct_experts(64, 4, 10_000)
    assert cm.fewest_distinct_experts(64, 4, 0) == 0
    ideal = s.replace(runtime="ideal")
    for skew in (None, 1.2):
        ie = _op(cm.decode(ideal.replace(expert_skew=skew), 0, batch=8), "moe.experts")
        assert ie.bytes == pytest.approx(46 * (4 * per_expert + acts))
        assert ie.bytes < skewed.bytes
    assert _op(cm.decode(ideal, 0, batch=1), "moe.experts").bytes == pytest.approx(
        _op(cm.decode(s, 0, batch=1), "moe.experts").bytes)          # one token: the same top_k


def _every_setup():
    out = []
    for name in BUILTINS:
        for strat in ("naive", "absorbed", "flash"):
            if strat != "flash" and configs.load(name).attention != "mla":
                continue
            for rig, split in ((hw.Rig("rtx-3090"), "none"), (hw.study_rig(), "layer"),
                               (hw.Rig("h100-sxm", 2), "tensor")):
                for kv in ("f16", "q8_0"):
                    try:
                        out.append(cm.Setup(name, rig, split=split, weights="q4_K", kv=kv, mla_strategy=strat))
                    except ValueError as e:     # Gemma 3 1B's one KV head cannot be split over 2 cards
                        # (EXAONE 3.5 2.4B's 80-wide heads fill no whole q8_0 block)
                        assert (split == "tensor" and "divide evenly" in str(e)) or \
                            (kv == "q8_0" and "no whole number of its blocks" in str(e)), e
    assert len(out) >= 6 * len(BUILTINS)
    return out


DEPTHS = [0, 1, 100, 1000, 4096, 8192, 32768, 65536, 131072]


def test_decode_time_never_decreases_with_depth():
    for s in _every_setup():
        # chunked attention (Llama 4) restarts at each chunk: within one, the time grows with the depth
        depths = [d for d in DEPTHS if d < s.model.sliding_window] if s.model.window_chunked else DEPTHS
        for b in (1, 8):
            t = [cm.decode(s, d, b).seconds for d in depths]
            assert all(x <= y for x, y in zip(t, t[1:])), (s.label, b, t)
        p = [cm.prefill(s, 512, d).seconds for d in depths[::2]]
        assert all(x <= y for x, y in zip(p, p[1:])), (s.label, p)


def test_ideal_never_slower_than_typical():
    for s in _every_setup():
        i = s.replace(runtime="ideal")
        for d in (0, 4096, 65536):
            assert cm.decode(i, d).seconds <= cm.decode(s, d).seconds
            assert cm.decode(i, d, 16).seconds <= cm.decode(s, d, 16).seconds
            assert cm.prefill(i, 1024, d).seconds <= cm.prefill(s, 1024, d).seconds
        assert cm.max_context(i) >= cm.max_context(s)


def test_more_bandwidth_never_slower():
    base = hw.get_gpu("rtx-3090")
    fast = hw.GPU(**{**base.__dict__, "bandwidth_gbs": 2 * base.bandwidth_gbs, "key": "fast"})
    for s in _every_setup()[::3]:
        rig = s.rig
        faster = s.replace(rig=hw.Rig(fast, rig.n_cards, rig.link_gbps, rig.link_latency_us)) if rig.gpu.name == "RTX 3090" else s
        wider = s.replace(rig=hw.Rig(rig.gpu, rig.n_cards, 10 * rig.link_gbps, rig.link_latency_us)) if rig.n_cards > 1 else s
        for d in (0, 8192, 65536):
            for b in (1, 16):
                t = cm.decode(s, d, b).seconds
                assert cm.decode(faster, d, b).seconds <= t
                assert cm.decode(wider, d, b).seconds <= t
            assert cm.prefill(faster, 512, d).seconds <= cm.prefill(s, 512, d).seconds
            assert cm.prefill(wider, 512, d).seconds <= cm.prefill(s, 512, d).seconds


def test_step_cost_fields():
    s = cm.Setup("glm-4.7-flash", hw.study_rig(), split="layer", weights="iq4_xs")
    st = cm.decode(s, 8192, 4)
    assert st.tokens == 4 and st.tok_s == pytest.approx(4 / st.seconds)
    assert st.dominant in st.terms() and st.breakdown()
    assert {o.card for o in st.ops} == {0, 1}
    pf = cm.prefill(s, 1000, 0)
    assert pf.tokens == 1000 and cm.ttft(s, 1000) == pf.seconds
    # lm_head runs for the last token only: 1 of 1000
    lm = [o for o in pf.ops if o.name == "head.lm_head"][0]
    assert lm.count == 1


def test_serve_is_kv_limited():
    s = cm.Setup("qwen3-32b", "rtx-3090", weights="iq4_xs")
    r = cm.serve(s, 64, 16384)
    fit = cm.max_batch(s, 16384)
    assert 0 < fit < 64
    assert r["streams"] == fit and not r["fits"] and r["limited_by"] == "kv_memory"
    assert r["aggregate_tok_s"] == pytest.approx(cm.decode(s, 16384, fit).tok_s)
    assert r["per_stream_tok_s"] == pytest.approx(r["aggregate_tok_s"] / fit)
    ok = cm.serve(s, 2, 1024)
    assert ok["fits"] and ok["streams"] == 2
    none = cm.serve(cm.Setup("qwen3-32b", "rtx-3090", weights="bf16"), 4, 1024)
    assert none["aggregate_tok_s"] == 0 and none["limited_by"].startswith("memory")
    # more streams never lower the aggregate while they fit
    g = cm.Setup("glm-4.7-flash", hw.study_rig(), split="layer", weights="iq4_xs")
    agg = [cm.serve(g, c, 4096)["aggregate_tok_s"] for c in (1, 2, 4, 8, 16, 32)]
    assert all(x <= y for x, y in zip(agg, agg[1:]))


def test_crossover():
    xs = [0, 1, 2, 3, 4]
    assert cm.crossover(xs, [5, 4, 3, 2, 1], [1, 2, 3, 4, 5]) == [2.0]
    assert cm.crossover(xs, [5, 4, 3.5, 2, 1], [1, 2, 3, 4, 5]) == [pytest.approx(2 + 0.5 / 2.5)]
    assert cm.crossover(xs, [1, 1, 1, 1, 1], [0, 0, 0, 0, 0]) == []
    assert cm.crossover(xs, [1, -1, 1, -1, 1], [0] * 5) == [0.5, 1.5, 2.5, 3.5]
    assert cm.crossover(xs, [1, 0, 1, 2, 3], [0] * 5) == []               # touches, no crossing
    assert cm.crossover(xs, [1, 0, 0, -1, -2], [0] * 5) == [1.5]          # meets over [1, 2], then parts
    assert cm.crossover([], [], []) == []
    with pytest.raises(ValueError, match="equal lengths"):
        cm.crossover([0, 1], [1], [1, 2])
    with pytest.raises(ValueError, match="increasing"):
        cm.crossover([0, 0], [1, 2], [2, 1])


def test_decide_ranks_with_reasons():
    one = cm.Setup("glm-4.7-flash", "rtx-3090", weights="iq4_xs")
    two = cm.Setup("glm-4.7-flash", hw.study_rig(), split="layer", weights="iq4_xs")
    big = cm.Setup("qwen3-32b", "rtx-3090", weights="bf16")
    rows = cm.decide({"prompt": 512, "output": 128}, [big, two, one])
    assert [r["rank"] for r in rows] == [1, 2, 3]
    assert rows[-1]["setup"] == big.label and not rows[-1]["fits"]
    assert "does not fit" in rows[-1]["reasons"][0]
    assert all(r["objective"] == "latency" for r in rows)
    assert rows[0]["e2e_s"] <= rows[1]["e2e_s"]
    r = rows[0]
    assert r["e2e_s"] == pytest.approx(r["ttft_s"] + 127 * r["tpot_s"])
    assert any(x.startswith("decode at") for x in r["reasons"])
    thr = cm.decide(cm.Workload(512, 128, concurrency=16), [one, two])
    assert thr[0]["objective"] == "throughput"
    assert thr[0]["throughput_tok_s"] >= thr[1]["throughput_tok_s"] > 0
    with pytest.raises(ValueError, match="`objective`"):
        cm.decide({"prompt": 1, "output": 1, "objective": "cost"}, [one])
    with pytest.raises(ValueError, match="`prompt` must be >= 1"):
        cm.decide({"prompt": 0, "output": 1}, [one])


def test_setup_errors():
    with pytest.raises(ValueError, match="`split`='none' runs on one card but the rig has 2"):
        cm.Setup("qwen3-32b", hw.study_rig())
    with pytest.raises(ValueError, match="needs a rig of 2 or more cards"):
        cm.Setup("qwen3-32b", "rtx-3090", split="layer")
    with pytest.raises(ValueError, match="`split` must be one of"):
        cm.Setup("qwen3-32b", "rtx-3090", split="row")
    with pytest.raises(ValueError, match="unknown weight format 'q3_X'"):
        cm.Setup("qwen3-32b", "rtx-3090", weights="q3_X")
    with pytest.raises(ValueError, match="unknown KV-cache format 'q4_K'"):
        cm.Setup("qwen3-32b", "rtx-3090", kv="q4_K")
    with pytest.raises(ValueError, match="`mla_strategy`"):
        cm.Setup("glm-4.7-flash", "rtx-3090", mla_strategy="fast")
    # 4 KV heads over 8 cards: each replicated on two (vLLM); 32 query heads over 6 cards: an error
    assert cm.Setup("qwen3-30b-a3b", hw.Rig("rtx-3090", 8, link_gbps=10), split="tensor").n_cards == 8
    with pytest.raises(ValueError, match="num_attention_heads=32 to divide"):
        cm.Setup("qwen3-30b-a3b", hw.Rig("rtx-3090", 6, link_gbps=10), split="tensor")
    with pytest.raises(ValueError, match="num_key_value_heads=8 to divide evenly, or to divide 10"):
        cm.Setup("seed-oss-36b", hw.Rig("rtx-3090", 10, link_gbps=10), split="tensor")
    with pytest.raises(ValueError, match="histogram has 3 entries"):
        cm.Setup("glm-4.7-flash", "rtx-3090", expert_skew=[1, 2, 3])
    with pytest.raises(ValueError, match="dense"):
        cm.Setup("qwen3-32b", "rtx-3090", expert_skew=1.0)
    with pytest.raises(ValueError, match="unknown runtime profile 'fast'"):
        cm.Setup("qwen3-32b", "rtx-3090", runtime="fast")
    s = cm.Setup("qwen3-32b", "rtx-3090")
    with pytest.raises(ValueError, match="`depth` must be >= 0, got -1"):
        cm.decode(s, -1)
    with pytest.raises(TypeError, match="`batch` must be an integer"):
        cm.decode(s, 0, 1.5)
    with pytest.raises(ValueError, match="`n_tokens` must be >= 1"):
        cm.prefill(s, 0)
    with pytest.raises(TypeError, match="costmodel.Setup"):
        cm.decode("qwen3-32b", 0)


def test_runtime_profiles(tmp_path):
    # the physics profiles and the runtime models fitted to public results (issue 22)
    assert cm.list_runtimes() == ["ideal", "ik_llama.cpp", "llama.cpp", "llama.cpp-vulkan", "sglang", "typical", "vllm"]
    t = cm.load_runtime("typical")
    assert t.launch_overhead and 0 < t.memory_efficiency["attention"] < 1 and t.sources
    i = cm.load_runtime("ideal")
    assert not i.launch_overhead and set(i.compute_efficiency.values()) == {1.0}
    good = json.loads(open(os.path.join(runtime_mod._RUNTIME_DIR, "typical.json")).read())
    p = tmp_path / "mine.json"
    p.write_text(json.dumps({**good, "name": "mine"}))
    assert cm.load_runtime(str(p)).name == "mine"
    assert cm.load_runtime(f"calibrated:{p}").name == f"calibrated:{p}"
    with pytest.raises(ValueError, match="does not exist"):
        cm.load_runtime("calibrated:/no/such.json")
    for change, match in [({"memory_efficiency": {**good["memory_efficiency"], "matmul": 1.5}}, r"`memory_efficiency.matmul` must be in \(0, 1\], got 1.5"),
                          ({"compute_efficiency": {"matmul": 0.5}}, r"`compute_efficiency.attention` is missing"),
                          ({"n_ubatch": 0}, r"`n_ubatch` must be an integer >= 1, got 0"),
                          ({"overhead_gib_per_card": -1}, r"`overhead_gib_per_card`"),
                          ({"quantized_matmul": "int4"}, r"`quantized_matmul`"),
                          ({"efficiency": 1}, r"unknown field `efficiency`")]:
        with pytest.raises(ValueError, match=match):
            cm.load_runtime({**good, **change})


def test_models_table_alias():
    assert cm.models_table() == configs.models_table()


# ---- sliding-window layers (Gemma 3: 5 of 6 layers attend to the last 1024 tokens) ----------------
def test_window_prefill_work_by_brute_force():
    # every query at position p sees min(p + 1, w) keys; each 128-query tile reads from its first
    # query's window start to its last query
    for depth, n, w in [(0, 1, 1), (0, 300, 1), (0, 300, 1024), (5000, 300, 1024), (900, 700, 1024),
                        (0, 2048, 1024), (1023, 1, 1024), (1024, 129, 128), (3, 5, 7)]:
        a = cm._prefill_attn(depth, n, w)
        keys = sum(min(p + 1, w) for p in range(depth, depth + n))
        read = 0
        for t0 in range(0, n, cm.Q_TILE):
            q0, q1 = depth + t0, depth + min(n, t0 + cm.Q_TILE) - 1
            read += len(range(max(0, q0 - w + 1), q1 + 1))
        assert (a.keys, a.read) == (keys, read), (depth, n, w)
        # a window at least as long as the context changes nothing
        full = cm._prefill_attn(depth, n, None)
        big = cm._prefill_attn(depth, n, depth + n)
        assert (big.keys, big.read) == (full.keys, full.read)


def _windowed(name, gpu):
    """(config, windowed layers, global layers, its setup under `ideal`, f16 KV, and the attention
    core's bytes of one decode step at depth d)."""
    cfg = configs.load(name)
    n_win = len(cfg.windowed_layers)
    s = cm.Setup(cfg, gpu, weights="q4_K", kv="f16", runtime="ideal")
    return cfg, n_win, cfg.n_layers - n_win, s, \
        lambda d: sum(o.bytes for o in cm.decode(s, d).ops if o.name == "attn.core")


def test_gemma3_windowed_layers_read_and_hold_the_window_only():
    cfg, n_win, n_glob, s, att = _windowed("gemma-3-27b", "rtx-3090")
    assert (n_win, n_glob) == (52, 10)
    row = 16 * (128 + 128) * 2                   # one token's K and V in one layer, f16
    # beyond the window only the 10 global layers read more: d + 1 rows each, the others 1024
    assert att(65535) - att(8191) == pytest.approx((65536 - 8192) * n_glob * row)
    # below the window every layer reads d + 1 rows
    assert att(1023) - att(511) == pytest.approx(512 * cfg.n_layers * row)
    # the cache: the global layers hold the context, the windowed ones llama.cpp's SWA cells, the
    # window + n_ubatch (512) padded to 256, or the context padded when shorter
    for ctx, cells in ((100, 256), (1024, 1024), (1100, 1280), (5000, 1536), (131072, 1536)):
        assert cm.memory(s, ctx).kv == row * (n_glob * ctx + n_win * cells)
    big = cm.max_context(s)
    assert cm.memory(s, big).fits and not cm.memory(s, big + 1).fits
    # the windowed layers' cache is what makes the 128K context fit: with every layer global it does not
    assert big > 100_000
    glob = cm.Setup(configs.load({**json.load(open(configs.builtin_path("gemma-3-27b"))), "layer_types": ["full_attention"] * 62}), "rtx-3090", weights="q4_K", runtime="ideal")
    assert cm.max_context(glob) < big / 4
    # prefill at depth: the windowed layers' keys stop growing with the depth
    pf = lambda d: sum(o.flops for o in cm.prefill(s, 512, d).ops if o.name == "attn.core")
    grow = pf(65536) - pf(8192)
    assert grow == pytest.approx(2 * 32 * (128 + 128) * 512 * (65536 - 8192) * n_glob
                                 + cm.SOFTMAX_OPS * 32 * 512 * (65536 - 8192) * n_glob)


def test_chunked_attention_work_by_brute_force():
    # Llama 4's chunked attention: the query at p sees the keys of its own chunk, p - p % w .. p; each
    # 128-query tile reads from its first query's chunk start to its last query
    for depth, n, w in [(0, 1, 1), (0, 300, 7), (0, 300, 1024), (5000, 300, 1024), (900, 700, 1024),
                        (0, 2048, 1024), (1023, 1, 1024), (1024, 129, 128), (3, 5, 7), (8191, 512, 8192)]:
        a = cm._prefill_attn(depth, n, w, chunked=True)
        keys = sum(p % w + 1 for p in range(depth, depth + n))
        read = 0
        for t0 in range(0, n, cm.Q_TILE):
            q0, q1 = depth + t0, depth + min(n, t0 + cm.Q_TILE) - 1
            read += len(range(q0 - q0 % w, q1 + 1))
        assert (a.keys, a.read) == (keys, read), (depth, n, w)
        d = cm._decode_attn(depth, 3, w, chunked=True)
        assert (d.keys, d.read) == (3 * (depth % w + 1), 3 * (depth % w + 1))
        # a chunk at least as long as the context changes nothing
        full = cm._prefill_attn(depth, n, None)
        big = cm._prefill_attn(depth, n, depth + n, chunked=True)
        assert (big.keys, big.read) == (full.keys, full.read)


def test_llama4_chunked_layers_restart_each_chunk_and_hold_the_swa_cells():
    cfg, n_win, n_glob, s, att = _windowed("llama-4-scout", "rtx-pro-6000-blackwell")
    assert (n_win, n_glob) == (36, 12)
    row = 8 * (128 + 128) * 2                    # one token's K and V in one layer, f16
    # at depth 8192 a new chunk starts: the chunked layers read 1 row, not 8192 (a sawtooth)
    assert att(8191) - att(8192) == pytest.approx((8192 - 1) * n_win * row - n_glob * row)
    assert att(16384 + 100) - att(100) == pytest.approx(16384 * n_glob * row)
    # the cache: llama.cpp's SWA cells for the chunked layers (chunk + n_ubatch, padded), as for a window
    for ctx, cells in ((100, 256), (9000, 8704), (131072, 8704)):
        assert cm.memory(s, ctx).kv == row * (n_glob * ctx + n_win * cells)
    # the same layers as a sliding window of 8192: every windowed layer reads 8192 rows past the first chunk,
    # the chunked ones depth % 8192 + 1 (4097 at 12288)
    slid = cm.Setup(dataclasses.replace(cfg, window_chunked=False), "rtx-pro-6000-blackwell", weights="q4_K",
                    kv="f16", runtime="ideal")
    a_slid = sum(o.bytes for o in cm.decode(slid, 12288).ops if o.name == "attn.core")
    assert a_slid - att(12288) == pytest.approx((8192 - 4097) * n_win * row)


def test_int4_weights_of_vllm_multiply_on_the_f16_tensor_cores():
    """AWQ / GPTQ weights run vLLM's W4A16 kernels (Marlin, Machete, AWQ): dequantized to f16 in
    registers, multiplied at the f16 tensor peak, never the int8 one; fp8 weights on a card with
    FP8 tensor cores at the fp8 peak; llama.cpp's quantized types keep the runtime's int8 path."""
    g = hw.get_gpu("a100-sxm-80gb")
    assert g.tflops["int8"] >= 1.9 * g.tflops["fp16"]
    for w in ("awq", "gptq"):
        s = cm.Setup("llama-3.1-8b", g, weights=w, runtime="vllm")
        assert cm._wdtype(s) == "fp16"
        pf = cm.prefill(s, 2048, 0)
        f16 = cm.prefill(cm.Setup("llama-3.1-8b", g, weights="bf16", runtime="vllm"), 2048, 0)
        # compute-bound at 2048 tokens: the MLP's arithmetic time is the f16 GEMM's, not half of it
        assert _op(pf, "mlp").compute_s == pytest.approx(_op(f16, "mlp").compute_s, rel=0.02)
    assert cm._wdtype(cm.Setup("llama-3.1-8b", "h100-sxm", weights="fp8", runtime="vllm")) == "fp8"
    assert cm._wdtype(cm.Setup("llama-3.1-8b", g, weights="q4_K", runtime="llama.cpp")) == "int8"


def test_vllm_fills_only_its_gpu_memory_utilization():
    """vLLM's weights, activations and KV pool share --gpu-memory-utilization (0.9 by default) of
    each card: the tenth it leaves is a reserve like the runtime's own overhead; profiles without
    the field use the whole card; a bad value is a clear error; the field survives to_dict."""
    import dataclasses
    p = cm.load_runtime("vllm")
    assert p.memory_fraction == 0.9 and cm.load_runtime("llama.cpp").memory_fraction == 1.0
    whole = dataclasses.replace(p, memory_fraction=1.0)
    g = hw.get_gpu("h100-sxm")
    a = cm.max_context(cm.Setup("llama-3.1-8b", g, weights="bf16", runtime=p))
    b = cm.max_context(cm.Setup("llama-3.1-8b", g, weights="bf16", runtime=whole))
    kv = configs.load("llama-3.1-8b").kv_bytes_per_token("f16")
    assert (b - a) * kv == pytest.approx(0.1 * g.memory_gib * 2**30, abs=2 * kv)
    assert cm.runtime_from_dict(p.to_dict()).memory_fraction == 0.9
    for bad in (0, 1.5, True, "0.9"):
        with pytest.raises(ValueError, match="memory_fraction"):
            cm.runtime_from_dict({**p.to_dict(), "memory_fraction": bad})


def test_the_report_says_where_a_chunked_model_is_fastest():
    """The study's depths from the chunk on are multiples of it (chunk starts, where Llama 4's chunked
    layers read the fewest keys): ceilings() gives the decode half a chunk further, render() says it."""
    from glmbench.report import Study
    import importlib
    rd = importlib.import_module("glmbench.report.render")    # (the package exports its render function)
    from glmbench.report import study as st
    s = Study(models=("llama-4-scout", "qwen3-32b"), hardware="rtx-pro-6000-blackwell", cards=(1,),
              depths=(1024, 8192, 65536))
    rows = st.ceilings(s)
    by = {r["model"]: r for r in rows}
    assert by["qwen3-32b"]["chunk_decode"] is None
    k = by["llama-4-scout"]["chunk_decode"]
    assert (k["chunk"], k["chunked_layers"], k["depth"], k["mid_depth"]) == (8192, 36, 65536, 65536 + 4096)
    setup = next(x for x in s.setups() if x.model.name == "llama-4-scout")
    assert k["tok_s"] == pytest.approx(1 / cm.decode(setup, 65536).seconds)
    assert k["mid_tok_s"] < k["tok_s"]
    text = "\n".join(rd._generation(st.sweep(s, ("tg",), progress=False), s, rows))
    assert "llama-4-scout attends within chunks of 8K tokens on 36 of its 48 layers" in text
    assert "@64K" in text and "@68K" in text and "qwen3-32b attends" not in text


def test_hybrid_linear_layers_hold_a_fixed_state_and_do_flat_work():
    """Qwen3.5 / Qwen3-Next: the Gated DeltaNet layers keep no KV cache but a fixed f32 state per
    stream ((K - 1) conv inputs + a k x v matrix per value head); their decode work does not grow
    with the context, only the one-in-four full-attention layers' does."""
    cfg = configs.load("qwen3.5-35b-a3b")
    n_lin, n_att = len(cfg.linear_layers), cfg.n_kv_layers
    assert (n_lin, n_att) == (30, 10)
    s = cm.Setup(cfg, "rtx-3090", weights="q4_K", kv="f16", runtime="ideal")
    row = 2 * (256 + 256) * 2                      # 2 KV heads' K and V, f16, one token of one layer
    state = 4 * (3 * (2 * 16 * 128 + 32 * 128) + 32 * 128 * 128)   # one linear layer, one stream
    assert cfg.recurrent_state_bytes() == n_lin * state
    for ctx in (0, 1000, 131072):
        for batch in (1, 3):
            assert cm.memory(s, ctx, batch).kv == batch * (n_att * row * ctx + n_lin * state)
    big = cm.max_context(s)
    assert cm.memory(s, big).fits and not cm.memory(s, big + 1).fits
    # the same model with every layer full attention holds a quarter of the context (or less)
    full = cm.Setup(dataclasses.replace(cfg, linear_layers=()), "rtx-3090", weights="q4_K", kv="f16", runtime="ideal")
    assert cm.max_context(full) < big / 3

    def by(c, prefix):
        return sum(o.bytes for o in c.ops if o.name.startswith(prefix)), \
            sum(o.flops for o in c.ops if o.name.startswith(prefix))
    a0, a1 = cm.decode(s, 0), cm.decode(s, 65536)
    assert by(a0, "lin.") == by(a1, "lin.")                   # flat in the depth
    assert by(a1, "attn.core")[0] - by(a0, "attn.core")[0] == pytest.approx(65536 * n_att * row)
    # each linear layer reads and writes each stream's state once per step
    rec = lambda c: next(o for o in c.ops if o.name == "lin.recurrence")
    b1, b4 = rec(cm.decode(s, 100, 1)), rec(cm.decode(s, 100, 4))
    assert b4.bytes - 4 * b1.bytes == pytest.approx(0, abs=1)
    assert b1.bytes >= n_lin * 2 * 4 * 32 * 128 * 128
    assert rec(cm.decode(s, 100)).flops == pytest.approx(n_lin * cm.GDN_FLOPS_PER_STATE * 32 * 128 * 128)
    # prompt: the state crosses memory once per stream, not per token
    p = rec(cm.prefill(s, 512, 0))
    assert p.bytes < 512 * b1.bytes / 8
    # the weights of every layer are priced once: the step reads the file's bytes
    t = cm._weight_table(cfg, "q4_K")
    assert all(L["linear"] and not L["attn"] for i, L in enumerate(t["layers"]) if i in cfg.linear_layers)
    assert all(L["attn"] and not L["linear"] for i, L in enumerate(t["layers"]) if i not in cfg.linear_layers)
    assert sum(cm._layer_total(cfg, "bf16")) + sum(t2 for k, t2 in cm._weight_table(cfg, "bf16").items()
                                                    if k != "layers") == cfg.weight_bytes("bf16")


def test_hybrid_full_attention_layers_price_the_output_gate():
    """Qwen3-Next's q_proj gives each head's query and an output gate: twice the query rows."""
    cfg = configs.load("qwen3-next-80b-a3b")
    s = cm.Setup(cfg, "h100-sxm", weights="bf16", runtime="ideal")
    qkv = next(o for o in cm.prefill(s, 512, 0).ops if o.name == "attn.qkv")
    H, Hk, Dh = cfg.n_heads, cfg.n_kv_heads, cfg.head_dim
    assert qkv.flops == pytest.approx(cfg.n_kv_layers * 2 * 512 * (2 * H * Dh + 2 * Hk * Dh) * cfg.hidden_size)
    assert any(o.name == "attn.gate" for o in cm.decode(s, 0).ops)
    # two cards by layers: each holds its own layers' states; by tensor: half of every layer's
    st = cfg.recurrent_state_bytes()
    for split, per_card in (("layer", None), ("tensor", st / 2)):
        m = cm.memory(cm.Setup(cfg, hw.study_rig(), split=split, weights="q4_K", kv="f16", runtime="ideal"), 0)
        assert sum(c.kv for c in m.cards) == pytest.approx(st, abs=2)
        if per_card:
            assert all(c.kv == pytest.approx(per_card, abs=1) for c in m.cards)


def test_hybrid_recurrence_runs_its_tokens_in_order():
    """The fused recurrence steps one stream's tokens one after another: a prompt's linear layers
    take at least tokens x GDN_STEP_CYCLES at the card's clock each; streams of a batch run side by
    side (the chain is the tokens per stream)."""
    cfg = configs.load("qwen3.5-35b-a3b")
    g = hw.get_gpu("rtx-4090")
    # `ideal` on llama.cpp's token-by-token schedule (its own prompt_scan is chunked: the fewest steps)
    s = cm.Setup(cfg, g, weights="q4_K", runtime=dataclasses.replace(cm.load_runtime("ideal"), prompt_scan="token"))
    n_lin = len(cfg.linear_layers)
    step = cm.GDN_STEP_CYCLES / (g.boost_mhz * 1e6)
    rec = lambda c: next(o for o in c.ops if o.name == "lin.recurrence")
    one = rec(cm.prefill(s, 2048, 0))
    assert one.compute_s == pytest.approx(n_lin * 2048 * step, rel=1e-9)
    four = rec(cm.prefill_batch(s, 512, 4, 0))
    # four 512-token prompts at n_ubatch 512: one prompt per ubatch, the ubatches one after another
    assert four.compute_s == pytest.approx(4 * n_lin * 512 * step, rel=1e-9)
    # decode: one step per stream, in parallel; the throughput bound where it is larger
    d = rec(cm.decode(s, 1000, 64))
    assert d.compute_s >= n_lin * step
    # vLLM's prompt kernels are chunked (FLA): one step per GDN_CHUNK tokens
    work = cm._Works(cm._prefill_attn(0, 2048, None))
    chain = lambda rt: next(o for o in cm._linear_ops(cm.Setup(cfg, "h100-sxm", weights="bf16", runtime=rt), 2048,
                                                      work, 1.0) if o.name == "lin.recurrence").chain
    assert (chain("vllm"), chain("llama.cpp")) == (2048 // cm.GDN_CHUNK, 2048)


@pytest.mark.parametrize("rt_name", ["typical", "ideal", "vllm"])
def test_mla_prefill_auto_takes_the_cheaper_whole_form(rt_name):
    """`mla_prefill` "auto" prices a prefill ubatch as the cheaper of expand-once and the absorbed form,
    each priced whole (weights, padding, launches): a 512-token ubatch's prefill is the least of the two
    forced forms. The pick once compared partial costs and took the dearer form on some cards."""
    rt = runtime_mod.load_runtime(rt_name)
    for gpu in ("rtx-a6000", "rtx-a5500", "rtx-pro-6000-blackwell", "rtx-5090", "l4", "h100-sxm"):
        for depth in (0, 4096, 16384):
            t = {m: cm.prefill(cm.Setup("deepseek-v2-lite", rig=gpu, mla_strategy="flash",
                                        runtime=dataclasses.replace(rt, mla_prefill=m)), 512, depth).seconds
                 for m in ("auto", "expand", "strategy")}
            assert t["auto"] == pytest.approx(min(t["expand"], t["strategy"]), rel=1e-12), (gpu, depth, t)


@pytest.mark.parametrize("better,worse,rt_name,model,depth", [
    ("rtx-pro-6000-blackwell", "rtx-5090", "ideal", "deepseek-v2-lite", 0),
    ("rtx-4070-super", "rtx-4070", "typical", "glm-4.7-flash", 0),
    ("l4", "rtx-pro-2000-blackwell", "ideal", "deepseek-v2-lite", 4096),
])
def test_mla_prefill_never_slower_on_a_card_better_in_every_figure(better, worse, rt_name, model, depth):
    """Pairs where the partial-cost pick made the better card's MLA prefill slower (up to 17%; a Q4_K_M
    GLM-4.7-Flash 6% slower on an RTX 4070 SUPER than on an RTX 4070)."""
    g, w = hw.get_gpu(better), hw.get_gpu(worse)
    assert g.bandwidth_gbs >= w.bandwidth_gbs and all(g.tflops[k] >= v for k, v in w.tflops.items())
    t = {n: cm.prefill(cm.Setup(model, rig=n, runtime=rt_name, mla_strategy="flash", weights="q4_k_m"), 512,
                       depth).seconds for n in (better, worse)}
    assert t[better] <= t[worse], t


def _better_in_every_figure(a, b) -> bool:
    """Card a has at least b's bandwidth, every tensor / vector rate b has, its clock, and no longer launch."""
    if set(a.tflops) != set(b.tflops) or (a.boost_mhz is None) != (b.boost_mhz is None):
        return False
    return (a.bandwidth_gbs >= b.bandwidth_gbs and a.launch_us <= b.launch_us
            and all(a.tflops[k] >= v for k, v in b.tflops.items())
            and (a.boost_mhz is None or a.boost_mhz >= b.boost_mhz))


@pytest.mark.parametrize("rt_name", ["typical", "ideal"])
def test_a_card_better_in_every_figure_is_never_predicted_slower(rt_name):
    """Over the whole catalog, under the physics profiles: decode and prefill of an MLA MoE, a GQA MoE and a dense
    model at two depths are never slower on a card at least as good in every datasheet figure."""
    gpus = {n: hw.get_gpu(n) for n in hw.list_gpus() if n != "ideal"}
    pairs = [(a, b) for a in gpus for b in gpus if a != b and _better_in_every_figure(gpus[a], gpus[b])]
    assert len(pairs) > 500
    for model in ("glm-4.7-flash", "qwen3-30b-a3b", "llama-3.1-8b"):
        for depth in (0, 16384):
            t = {}
            for n in gpus:
                s = cm.Setup(model, rig=n, runtime=rt_name, weights="q4_k_m")
                t[n] = (cm.decode(s, depth).seconds, cm.prefill(s, 512, depth).seconds)
            slower = [(a, b, k) for a, b in pairs for k in (0, 1) if t[a][k] > t[b][k] * (1 + 1e-9)]
            assert not slower, (model, depth, slower[:5])


def test_config_caches_never_change_what_a_config_is():
    """A ModelConfig's memoised hash and layer sets (cached on the object: the cost model asks per op)
    are what the fields say: a replaced config gets its own, a pickled one re-hashes in its process,
    and Setups share one object per distinct config only where every field, compared or not, agrees."""
    import pickle
    a, b = configs.load("gemma-3-12b"), configs.load("gemma-3-12b")
    assert a is not b and a == b and hash(a) == hash(b)
    assert a.windowed_layers and a.cache_layers == a.attention_layers
    c = dataclasses.replace(a, n_layers=6, window_layers=(0, 1, 2, 3, 4))
    assert c.attention_layers == tuple(range(6)) and c.windowed_layers == (0, 1, 2, 3, 4) and hash(c) != hash(a)
    state = a.__getstate__()
    assert "_hash_memo" not in state and "_hash_memo" in a.__dict__     # a str's hash differs between processes
    p = pickle.loads(pickle.dumps(a))
    assert p == a and hash(p) == hash(a) and "_hash_memo" in p.__dict__
    rig = hw.Rig(hw.get_gpu("rtx-3090"), 1)
    s1, s2 = cm.Setup(a, rig), cm.Setup(b, rig)
    assert s1.model is s2.model
    # equal to the interned one in the compared fields but not in the wrapper: kept as given
    w = dataclasses.replace(b, wrapper="gemma3")
    assert w == a and cm.Setup(w, rig).model is w
    assert cm.decode(cm.Setup(w, rig), 4096).tok_s == cm.decode(s1, 4096).tok_s
    # weight_bytes memoised per format: the same as summing the tensors afresh, per format, per config
    fresh = lambda cfg, w: sum(vocab.tensor_nbytes(vocab.weight_format(w), n, sh, cfg.tensor_context())  # noqa: E731
                               for n, sh in cfg.tensor_shapes().items())
    for w in ("q4_0", "mix:Q4_0", "Q4_K_M", "q4_0"):
        assert a.weight_bytes(w) == fresh(a, w) and c.weight_bytes(w) == fresh(c, w) < a.weight_bytes(w)
    assert a.weight_bytes("q4_0") != a.weight_bytes("mix:Q4_0")

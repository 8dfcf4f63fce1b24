"""llama.cpp's partial offload in the cost model: which bytes sit on the card and in host memory,
and the host's and the PCIe link's seconds, by hand for a tiny MoE and a tiny dense model."""
import json
import os

import pytest

from glmbench import cli
from glmbench.models import configs
from glmbench.predict import costmodel as cm
from glmbench.predict import hardware

D, FE, E, K, L, V = 256, 256, 8, 2, 4, 512
MOE = dict(model_type="qwen3_moe", vocab_size=V, hidden_size=D, intermediate_size=512, moe_intermediate_size=FE,
           num_hidden_layers=L, num_attention_heads=4, num_key_value_heads=2, head_dim=64, num_experts=E,
           num_experts_per_tok=K, norm_topk_prob=True, rms_norm_eps=1e-6, tie_word_embeddings=False)
DENSE = {**MOE, "model_type": "qwen3"}
# a host whose CPU is so fast that its ops are bound by its 10 GB/s; PCIe 5 GB/s, 10 us a transfer
HOST = dict(name="test host", memory_gib=64, bandwidth_gbs=10, tflops={"fp32": 1e4}, pcie_gbps=5, pcie_latency_us=10)
EXPERT = 3 * D * FE * 2          # one expert's gate, up, down in f16
HID = 4 * D                      # one token's hidden state in f32


def setup(cfg=MOE, **offload):
    return cm.Setup(configs.load(cfg), "rtx-3090", weights="f16", kv="f16", offload=offload, host=HOST)


def test_all_experts_on_the_host_decode_by_hand():
    s = setup(n_cpu_moe=L)
    st = cm.decode(s, 0)
    b = st.breakdown()
    u = cm.expected_distinct_experts(E, K, 1)                     # 2 distinct experts for one token
    per_layer = u * EXPERT + 4 * 1 * K * (2 * D + 3 * FE)         # their weights + activations
    assert b["moe.experts (host)"] == pytest.approx(L * per_layer / 10e9, rel=1e-12)
    assert "moe.experts" not in b                                  # nothing of them left on the card
    cross = 2 * 10e-6 + (HID + 8 * K + HID) / 5e9                 # hidden state out (+ ids, weights) and back
    assert b["link.pcie_activations"] == pytest.approx(L * cross, rel=1e-12)
    assert st.seconds == pytest.approx(sum(b.values()), rel=1e-12)
    # the same setup without the offload is faster (the card streams 936 GB/s)
    assert cm.decode(cm.Setup(configs.load(MOE), "rtx-3090", weights="f16"), 0).seconds < st.seconds


def test_all_experts_on_the_host_memory_by_hand():
    cfg = configs.load(MOE)
    s = setup(n_cpu_moe=L)
    m = cm.memory(s, 100)
    embed = V * D * 2
    experts = L * E * EXPERT
    assert m.host.weights == experts + embed                      # token_embd is on the host anyway
    assert m.cards[0].weights == cfg.weight_bytes("f16") - experts - embed
    assert m.cards[0].kv == L * 2 * 2 * 64 * 2 * 100 and m.host.kv == 0
    # half the layers' experts
    m2 = cm.memory(setup(n_cpu_moe=2), 100)
    assert m2.host.weights == experts // 2 + embed


def test_tensor_overrides_place_single_expert_tensors():
    s = setup(override_tensor=[r"blk\.[01]\.ffn_down_exps"])
    m = cm.memory(s, 0)
    assert m.host.weights == 2 * E * D * FE * 2 + V * D * 2
    # a third of layers 0 and 1's expert work on the host
    b = cm.decode(s, 0).breakdown()
    u = cm.expected_distinct_experts(E, K, 1)
    per_layer = u * EXPERT + 4 * K * (2 * D + 3 * FE)
    assert b["moe.experts (host)"] == pytest.approx(2 * per_layer / 3 / 10e9, rel=1e-9)


def test_prefill_copies_host_weights_to_the_card():
    s = setup(n_cpu_moe=L)
    st = cm.prefill(s, 64)                 # >= 32 tokens: llama.cpp uploads the experts and runs them on the card
    b = st.breakdown()
    assert b["link.pcie_weights"] == pytest.approx(L * (10e-6 + E * EXPERT / 5e9), rel=1e-12)
    assert "moe.experts (host)" not in b and "moe.experts" in b
    small = cm.prefill(s, 16).breakdown()  # below it the host computes
    assert "moe.experts (host)" in small and "link.pcie_weights" not in small


def test_n_gpu_layers_by_hand():
    cfg = configs.load(DENSE)
    s = setup(DENSE, n_gpu_layers=2)       # layers 2, 3 on the card; 0, 1 and the output on the host
    m = cm.memory(s, 100)
    t = cfg.tensor_shapes()
    layer = lambda i: sum(cm.vocab.tensor_nbytes("f16", n, sh) for n, sh in t.items() if n.startswith(f"model.layers.{i}."))
    assert m.cards[0].weights == layer(2) + layer(3)
    assert m.host.weights == cfg.weight_bytes("f16") - layer(2) - layer(3)
    kv_layer = 2 * 2 * 64 * 2
    assert m.cards[0].kv == 2 * kv_layer * 100 and m.host.kv == 2 * kv_layer * 100
    b = cm.decode(s, 0).breakdown()
    # the hidden state goes to the card before layer 2 and back for the output layer
    assert b["link.pcie_activations"] == pytest.approx(2 * (10e-6 + HID / 5e9), rel=1e-12)
    assert b["head.lm_head (host)"] > 0 and "head.lm_head" not in b
    # one more layer on the card than there are layers puts the output there too
    assert "head.lm_head" in cm.decode(setup(DENSE, n_gpu_layers=L + 1), 0).breakdown()


def test_offload_errors():
    with pytest.raises(ValueError, match="dense"):
        setup(DENSE, n_cpu_moe=1)
    with pytest.raises(ValueError, match="only routed-expert tensors"):
        setup(override_tensor=[r"attn_q"])
    with pytest.raises(ValueError, match="matches no tensor"):
        setup(override_tensor=[r"blk\.99\.ffn_up_exps"])
    with pytest.raises(ValueError, match="not a valid regex"):
        setup(override_tensor=["("])
    with pytest.raises(ValueError, match="one card"):
        cm.Setup(configs.load(MOE), cm.Rig(hardware.get_gpu("rtx-3090"), 2, link_gbps=25), split="layer",
                 offload={"n_cpu_moe": 1})
    with pytest.raises(ValueError, match="`n_gpu_layers` must be"):
        setup(n_gpu_layers=-1)
    with pytest.raises(ValueError, match="measured"):
        hardware.get_host("host")
    with pytest.raises(ValueError, match="unknown host profile"):
        hardware.get_host("mainframe")
    with pytest.raises(ValueError, match="`tflops`"):
        hardware.get_host({"name": "x", "bandwidth_gbs": 10, "tflops": {}})
    # a unit mistake: TB/s for GB/s, MiB for GiB (a GPU profile's are refused alike)
    with pytest.raises(ValueError, match="not TB/s"):
        hardware.get_host({"name": "x", "bandwidth_gbs": 0.07, "tflops": {"fp32": 1.0}})
    with pytest.raises(ValueError, match="not MiB"):
        hardware.get_host({"name": "x", "bandwidth_gbs": 70, "memory_gib": 70000, "tflops": {"fp32": 1.0}})
    assert hardware.get_host({"name": "pi", "bandwidth_gbs": 4, "tflops": {"fp32": 0.01}}).bandwidth_gbs == 4


def test_builtin_and_measured_hosts():
    h = hardware.get_host()
    assert h.key == hardware.DEFAULT_HOST and h.bandwidth_gbs > 0 and h.memory_gib > 0
    assert set(hardware.list_hosts()) >= {"desktop-ddr5", "workstation-ddr5"}
    cpu = hardware.cpu_profile({"bandwidth_gbs": 20.0, "fma_gflops": 500.0, "threads": 4, "cpu": "x"},
                               launch_us=2.0, source="given")
    hc = hardware.host_from_cpu(cpu)
    assert hc.bandwidth_gbs == 20.0 and hc.tflops["fp32"] == 0.5
    s = cm.Setup("glm-4.7-flash", "rtx-3090", weights="Q8_0", offload={"n_cpu_moe": 20}, host=cpu)
    assert s.host.bandwidth_gbs == 20.0 and cm.decode(s, 1024).tok_s > 0


def test_the_question_glm_flash_q8_on_one_24gb_card():
    """GLM-4.7-Flash at Q8_0 (about 31 GB) does not fit one 24 GB card; with part of its experts in
    host memory it does, and the more experts stay on the card the faster it decodes."""
    plain = cm.Setup("glm-4.7-flash", "rtx-3090", weights="Q8_0")
    assert not cm.memory(plain, 4096).fits
    fits = [n for n in range(48) if cm.memory(cm.Setup("glm-4.7-flash", "rtx-3090", weights="Q8_0",
                                                       offload={"n_cpu_moe": n}), 4096).fits]
    assert fits and fits == list(range(fits[0], 48))
    tg = [cm.decode(cm.Setup("glm-4.7-flash", "rtx-3090", weights="Q8_0", offload={"n_cpu_moe": n}), 4096).tok_s
          for n in fits]
    assert all(a > b for a, b in zip(tg, tg[1:]))


def test_cli_offload_flags_are_for_one_card(capsys):
    """Partial offload is priced on one-card setups: with no one-card setup in --cards the flags would do
    nothing, so that is one error; beside multi-card setups a note says those hold every layer on the cards."""
    base = ["sweep", "--model", "glm-4.7-flash", "--weights", "Q8_0", "--depths", "4K", "--tests", "tg", "--json", "-q"]
    rc = cli.main(base + ["--cards", "2", "--n-gpu-layers", "10"])
    out, err = capsys.readouterr()
    assert rc == 2 and out == "" and len(err.strip().splitlines()) == 1
    assert "--n-gpu-layers: partial offload is priced on one-card setups only" in err and "--cards 1" in err
    rc = cli.main(base + ["--cards", "1,2", "--n-cpu-moe", "20"])
    out, err = capsys.readouterr()
    recs = json.loads(out)
    assert rc == 0 and "note: --n-cpu-moe applies to the one-card setups; the 2-card ones" in err
    assert {r["n_cards"]: r.get("n_cpu_moe") for r in recs} == {1: 20, 2: None}
    rc = cli.main(base + ["--cards", "1", "--n-cpu-moe", "20"])
    assert rc == 0 and "applies to the one-card" not in capsys.readouterr().err


@pytest.mark.slow
def test_cli_offload_records_and_report(tmp_path, capsys):
    out = tmp_path / "recs.json"
    rc = cli.main(["sweep", "--model", "glm-4.7-flash", "--cards", "1", "--weights", "Q8_0", "--depths", "4K",
                   "--n-cpu-moe", "20", "--tests", "tg,pp,mem", "--out", str(out), "-q"])
    assert rc == 0
    recs = json.loads(out.read_text())
    recs = recs if isinstance(recs, list) else recs["records"]
    mem = [r for r in recs if r["test"] == "mem"][0]
    assert mem["n_cpu_moe"] == 20 and mem["host"] == hardware.DEFAULT_HOST
    assert mem["card_bytes"][0] == mem["mem_bytes"] and mem["host_bytes"] > 0
    assert {r["test"] for r in recs} == {"tg", "pp", "mem"} and all(r.get("avg_ts", 1) > 0 for r in recs)
    rep = tmp_path / "rep"
    rc = cli.main(["report", "--model", "glm-4.7-flash", "--weights", "Q8_0", "--depths", "4K,32K", "--offload",
                   "--concurrency", "1", "--out", str(rep), "-q"])
    assert rc == 0
    text = (rep / "report.md").read_text()
    assert "### Partial offload on one RTX 3090" in text and "n-cpu-moe" in text
    rows = json.loads((rep / "offload.json").read_text())
    assert [r["n_depth"] for r in rows] == [4096, 32768] and all(r["fits"] for r in rows)
    assert rows[0]["n_cpu_moe"] <= rows[1]["n_cpu_moe"]
    # report.md names every file written beside it, offload.json and ceilings.json included
    files = next(l for l in text.splitlines() if l.startswith("Files: "))
    for name in sorted(os.listdir(rep)):
        if name != "report.md":
            assert f"`{name}`" in files, name
    # the same folder without --offload: no offload table, and no stale offload.json either
    rc = cli.main(["report", "--model", "glm-4.7-flash", "--weights", "Q8_0", "--depths", "4K,32K",
                   "--concurrency", "1", "--out", str(rep), "-q"])
    assert rc == 0 and not (rep / "offload.json").exists()
    assert "offload.json" not in (rep / "report.md").read_text()
    capsys.readouterr()
    rc = cli.main(["report", "--model", "qwen3-32b", "--n-cpu-moe", "2", "--out", str(tmp_path / "x"), "-q"])
    _, err = capsys.readouterr()
    assert rc == 2 and "dense" in err
    rc = cli.main(["report", "--override-tensor", "ffn=GPU0", "--out", str(tmp_path / "y"), "-q"])
    _, err = capsys.readouterr()
    assert rc == 2 and "only CPU" in err

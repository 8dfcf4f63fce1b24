import json

import pytest

from glmbench.predict import hardware as hw


def test_builtin_gpus():
    assert hw.list_gpus() == ["h100-sxm", "h200-sxm", "rtx-3090", "rtx-4090", "rtx-a6000"]
    g = hw.get_gpu("rtx-3090")
    assert (g.name, g.memory_gib, g.bandwidth_gbs) == ("RTX 3090", 24, 936)
    assert g.peak_flops("fp16") == 71e12 and g.peak_flops("fp32") == 35.6e12
    assert g.memory_bytes == 24 * 2 ** 30
    assert hw.get_gpu("RTX 3090") == g
    h = hw.get_gpu("h200-sxm")
    assert (h.memory_gib, h.bandwidth_gbs, h.tflops["bf16"]) == (140.4, 4800, 989)
    for name in hw.list_gpus():
        p = hw.get_gpu(name)
        assert p.source and p.launch_us > 0 and p.link_gbps > 0
        assert p.tflops["int8"] >= p.tflops["fp16"] >= p.tflops["fp32"]
    with pytest.raises(ValueError, match="peak|dtype"):
        g.peak_flops("fp8")
    with pytest.raises(ValueError, match="unknown GPU 'rtx-9090'"):
        hw.get_gpu("rtx-9090")


GOOD = {"name": "My card", "memory_gib": 16, "bandwidth_gbs": 500, "launch_us": 4,
        "tflops": {"fp16": 40, "fp32": 20}}


def test_user_profile_toml_and_json(tmp_path):
    t = tmp_path / "card.toml"
    t.write_text('name = "My card"\nmemory_gib = 16\nbandwidth_gbs = 500\nlaunch_us = 4\n'
                 'link_gbps = 12.5\n[tflops]\nfp16 = 40\nfp32 = 20\n')
    g = hw.load_profile(t)
    assert (g.name, g.memory_gib, g.bandwidth_gbs, g.link_gbps) == ("My card", 16, 500, 12.5)
    # bf16 and int8 default to the fp16 peak
    assert g.tflops == {"fp16": 40, "fp32": 20, "bf16": 40, "int8": 40}
    j = tmp_path / "card.json"
    j.write_text(json.dumps(GOOD))
    assert hw.load_profile(j).tflops == g.tflops
    assert hw.get_gpu(str(j)).name == "My card"


@pytest.mark.parametrize("change,match", [
    ({"memory_gib": None}, r"`memory_gib` is missing"),
    ({"bandwidth_gbs": -1}, r"`bandwidth_gbs` must be > 0, got -1"),
    ({"bandwidth_gbs": 0}, r"`bandwidth_gbs` must be > 0, got 0"),
    ({"memory_gib": 24e9}, r"`memory_gib` = 24000000000.0 is not plausible"),
    ({"launch_us": -3}, r"`launch_us` must be >= 0"),
    ({"launch_us": "fast"}, r"`launch_us` must be a number, got 'fast'"),
    ({"tflops": {"fp16": 40}}, r"`tflops.fp32` is missing"),
    ({"tflops": {"fp16": 40, "fp32": 20, "fp4": 9}}, r"`tflops.fp4` is not a dtype"),
    ({"tflops": {"fp16": float("nan"), "fp32": 20}}, r"`tflops.fp16` must be a number"),
    ({"tflops": 40}, r"`tflops` must be a table"),
    ({"name": ""}, r"`name` must be a non-empty string"),
    ({"bandwith_gbs": 5}, r"unknown field `bandwith_gbs`"),
    ({"memory_gib": True}, r"`memory_gib` must be a number, got True"),
])
def test_bad_profiles(tmp_path, change, match):
    d = dict(GOOD)
    for k, v in change.items():
        if v is None:
            d.pop(k)
        else:
            d[k] = v
    p = tmp_path / "bad.json"
    p.write_text(json.dumps(d))
    with pytest.raises(ValueError, match=match):
        hw.load_profile(p)


def test_bad_profile_files(tmp_path):
    p = tmp_path / "x.toml"
    p.write_text("name = \n")
    with pytest.raises(ValueError, match="not valid TOML"):
        hw.load_profile(p)
    with pytest.raises(ValueError, match="does not exist"):
        hw.load_profile(tmp_path / "none.toml")
    q = tmp_path / "x.yaml"
    q.write_text("")
    with pytest.raises(ValueError, match=r"\.toml or \.json"):
        hw.load_profile(q)


def test_rig():
    r = hw.study_rig()
    assert r.n_cards == 2 and r.gpu.name == "RTX 3090"
    assert r.link_gbps == 1.4 and r.link_latency_us == hw.STUDY_LINK_LATENCY_US
    assert r.name == "2 x RTX 3090 @ 1.4 GB/s"
    one = hw.Rig("rtx-4090")
    assert one.n_cards == 1 and one.name == "RTX 4090"
    # the GPU profile's own link is the default
    assert hw.Rig("h100-sxm", 8).link_gbps == 450
    with pytest.raises(ValueError, match="`n_cards` must be an integer >= 1, got 0"):
        hw.Rig("rtx-3090", 0)
    with pytest.raises(ValueError, match="`link_gbps` must be > 0, got -2"):
        hw.Rig("rtx-3090", 2, link_gbps=-2)


def test_cpu_profile_from_ceilings():
    c = hw.cpu_profile({"bandwidth_gbs": 40.0, "fma_gflops": 150.0, "threads": 2, "cpu": "EPYC"},
                       launch_us=2.0, source="test")
    assert c.kind == "cpu" and c.bandwidth_gbs == 40.0 and c.key == "host"
    assert c.peak_flops("fp32") == pytest.approx(150e9) and c.peak_flops("bf16") == c.peak_flops("fp32")
    assert c.memory_gib > 0 and c.name == "EPYC (2 threads)"
    with pytest.raises(ValueError, match="`fma_gflops` is missing"):
        hw.cpu_profile({"bandwidth_gbs": 40.0}, launch_us=2.0, source="test")


def test_host_is_resolved_on_the_measured_side():
    # the prediction side measures nothing: "host" names a profile the measured side builds
    with pytest.raises(ValueError, match="host_profile"):
        hw.get_gpu("host")
    assert hw.is_host("Host") and hw.is_host("cpu") and not hw.is_host("rtx-3090")
    from glmbench.measure.machine import host_profile
    h = host_profile({"bandwidth_gbs": 30.0, "fma_gflops": 100.0, "threads": 2, "cpu": "X"})
    assert h.kind == "cpu" and h.launch_us == 2.0 and "measure_ceilings" in h.source

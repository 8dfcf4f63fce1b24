"""bench/bench_prefill_parts.py's own logic on a tiny GLM-4.7-Flash-shaped GGUF: every C-core call
of a prefill is seen (the MLA attention with its multiply-adds counted from the shapes), the time
outside the core is what is left, the wrappers are gone afterwards, and the table names the parts."""
import os
import sys

import numpy as np
import pytest

pytest.importorskip("gguf", reason="GGUF tests need the gguf package")
pytest.importorskip("torch", reason="the tiny HF models need torch")
pytest.importorskip("transformers", reason="the tiny HF models need transformers")

import gguf_writer  # noqa: E402
from test_model_hf import tiny_hf_model  # noqa: E402

from glmbench.core import _core, attention, ops, quant  # noqa: E402
from glmbench.models import configs  # noqa: E402

sys.path.insert(0, os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "bench"))
import bench_prefill_parts as bp  # noqa: E402


@pytest.fixture
def glm_file(tmp_path):
    # q8_0 matrices (f32 where the rows are not whole blocks): run op by op (Layer.forward_py), as the
    # whole-model GGUFs are, so each C-core call shows
    import gguf

    def types(name, shape):
        return gguf.GGMLQuantizationType.Q8_0 if shape[-1] % 32 == 0 else gguf.GGMLQuantizationType.F32
    cfg, model = tiny_hf_model("glm4_moe_lite")
    p = tmp_path / "glm.gguf"
    gguf_writer.write(p, cfg, model.state_dict(), types=types)
    return str(p)


@pytest.mark.parametrize("depth", [0, 5])
def test_parts_of_a_tiny_glm_prefill(glm_file, depth):
    T = 12
    res = bp.run(glm_file, depth, T, threads=1, reps=2, warm=1)
    cfg = configs.load_gguf(glm_file)
    # the wrappers are taken off again
    for mod in (ops, quant, attention):
        assert mod._core is _core
    assert len(res["totals"]) == 2 and len(res["cpu_main"]) == 2
    mla = [(k, v) for k, v in res["stats"].items() if k.startswith("mla_attention")]
    assert len(mla) == 1
    calls, secs, macs, kind, _ = mla[0][1]
    n_layers = cfg.n_layers
    assert calls == 2 * n_layers and kind == "f32" and secs > 0
    H, Dn, Dr, Dv, R = cfg.n_heads, cfg.qk_nope_head_dim, cfg.qk_rope_head_dim, cfg.v_head_dim, cfg.kv_lora_rank
    pairs = sum(depth + t + 1 for t in range(T))   # causal: query t sees the depth plus t + 1 tokens
    want = T * H * Dn * R + T * H * R * Dv + pairs * H * (2 * R + Dr)
    assert macs == pytest.approx(2 * n_layers * want)
    # every call counted lies inside the prefill's time
    in_core = sum(v[1] for v in res["stats"].values()) / res["reps"]
    assert 0 < in_core <= max(res["cpu_main"]) * 1.05 + 1e-3
    text = bp.render(res)
    assert "mla_attention" in text and f"depth {depth}" in text and "x ceiling" in text
    # the q8_0 GEMMs are counted as int8 multiply-adds: T x N x K each
    q = [v for k, v in res["stats"].items() if k.startswith("qgemm") and "x(12," in k]
    assert q and all(v[3] == "int8" and v[2] > 0 for v in q)
    assert np.isfinite(res["ceil_f32"]) and res["ceil_f32"] > 0


def test_missing_file_is_one_error(tmp_path):
    with pytest.raises(SystemExit, match="no such GGUF file"):
        bp.main([str(tmp_path / "nope.gguf")])

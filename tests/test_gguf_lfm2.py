"""LFM2 / LFM2-MoE files made by llama.cpp's own converter (conversion/lfm2.py LFM2Model, LFM2MoeModel; via
tests/llama_cpp_convert.py: slow, skipped without it) from tiny HF models: the file's config is the HF folder's,
every stored byte on a tensor of ours, priced end to end (`glmbench sweep --model FILE`); and a public paste of an
lfm2 row read with an HF config beside it (bench/public_records.py's generic path). The file layout written
converter-free, the config and the cost model: tests/test_lfm2.py."""
import json
import os
import sys
import warnings

import numpy as np
import pytest

from glmbench.models import configs, gguf_file
from glmbench.predict import costmodel as cm

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))

gguf = pytest.importorskip("gguf", reason="GGUF tests need the gguf package")
import gguf_writer  # noqa: E402
import llama_cpp_convert as lc  # noqa: E402

needs_converter = pytest.mark.skipif(lc.source() is None, reason=lc.skip_reason())

_TYPES = ["conv", "full_attention", "conv", "conv", "full_attention"]
_BASE = dict(vocab_size=160, hidden_size=128, num_hidden_layers=5, num_attention_heads=4, num_key_value_heads=2)
# (the HF class name, its config kwargs): LFM2 with the MLP's width adjusted (192 -> 128 x 1.5 -> 240); LFM2-MoE with
# two dense layers, then experts with expert_bias
_CONVERT = {"lfm2": ("Lfm2", dict(_BASE, intermediate_size=192, layer_types=_TYPES, block_ffn_dim_multiplier=1.5,
                                  block_multiple_of=80)),
            "lfm2_moe": ("Lfm2Moe", dict(_BASE, intermediate_size=96, moe_intermediate_size=32, num_experts=8,
                                         num_experts_per_tok=2, num_dense_layers=2, layer_types=_TYPES))}


def _build(case, tmp):
    torch = pytest.importorskip("torch", reason="the tiny HF models need torch")
    transformers = pytest.importorskip("transformers", reason="the tiny HF models need transformers")
    torch.manual_seed(0)
    cls, kw = _CONVERT[case]
    hfcfg = getattr(transformers, cls + "Config")(**kw)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        model = getattr(transformers, cls + "ForCausalLM")(hfcfg).float().eval()
    return lc.save_hf(model, hfcfg, os.path.join(tmp, case))


# (HF folder, {"f16": path, "q8_0": path}) for a case: the run's cases in one converter process
_converted = lc.Conversions(_build, _CONVERT)

tmp = _converted.fixture("lfm2")


@needs_converter
@pytest.mark.slow
@pytest.mark.parametrize("case", list(_CONVERT))
def test_converted_file_config_is_the_hf_config(tmp, case):
    folder, files = _converted(case, tmp)
    want = configs.load(folder)
    assert want.linear_kind == "shortconv" and want.linear_layers == (0, 2, 3)
    for kind, path in files.items():
        g = gguf_file.read(path)
        assert g.architecture == {"lfm2": "lfm2", "lfm2_moe": "lfm2moe"}[case]
        cfg = gguf_writer.load_stated(path)
        assert cfg.cost_shape() == want.cost_shape() and gguf_writer.config_diff(cfg, want) == {}, kind
        assert cfg.total_params() == want.total_params() == sum(int(np.prod(t.shape)) for t in g.tensors.values())
        assert cfg.kv_bytes_per_token("f16") == want.kv_bytes_per_token("f16") > 0
        assert cfg.recurrent_state_bytes() == want.recurrent_state_bytes() == 3 * 4 * 128 * 2


@needs_converter
@pytest.mark.slow
@pytest.mark.parametrize("case", list(_CONVERT))
def test_converted_file_bytes_on_our_names(tmp, case):
    """Every stored byte once, on the tensor of ours the config gives it (nothing extra, nothing skipped); the conv
    squeezed to [D, K]; q8_0 quantizes the matrices and keeps the conv, norms and expert bias f32."""
    _, files = _converted(case, tmp)
    for kind, path in files.items():
        g = gguf_file.read(path)
        cfg = gguf_writer.load_stated(path)
        fw, shapes, ts = cfg.file_weights, cfg.tensor_shapes(), g.tensors
        by, types = fw.bytes_of(), fw.types()
        names = {hf: gguf_file.gguf_name(hf, g.architecture, cfg.n_layers) for hf in shapes}
        assert set(names.values()) == set(ts)
        for hf, n in names.items():
            assert by[hf] == ts[n].n_bytes and types[hf] == ts[n].type_name, (kind, hf, n)
        assert sum(by.values()) == fw.total_bytes == g.tensor_bytes and fw.extra_bytes == fw.skipped_bytes == 0
        assert ts["blk.0.shortconv.conv.weight"].shape == (cfg.hidden_size, cfg.linear_conv)
        if kind == "q8_0":
            assert fw.main_type == "Q8_0" and types["model.layers.0.linear_attn.in_proj.weight"] == "Q8_0"
            assert types["model.layers.0.linear_attn.conv1d.weight"] == "F32"


@needs_converter
@pytest.mark.slow
def test_converted_file_priced_end_to_end(tmp):
    """`glmbench sweep --model FILE`: records priced from the file's own bytes; memory holds its weights, the
    attention layers' cache and the conv layers' state."""
    for case in _CONVERT:
        _, files = _converted(case, tmp)
        cfg = gguf_writer.load_stated(files["q8_0"])
        s = cm.Setup(cfg, "rtx-3090", runtime="llama.cpp")
        m = cm.memory(s, 1024).cards[0]
        assert m.kv == 1024 * cfg.kv_bytes_per_token("f16") + cfg.recurrent_state_bytes()
        assert cm.decode(s, 4096).seconds > 0 and cm.prefill(s, 512, 0).seconds > 0
    path = _converted("lfm2_moe", tmp)[1]["q8_0"]
    gguf_writer.sweep_file(path, tmp, "lfm2_moe-q8_0")


_LB = ("ggml_cuda_init: found 1 CUDA devices:\n"
       "  Device 0: NVIDIA GeForce RTX 4090, compute capability 8.9, VMM: yes\n"
       "| model                          |       size |     params | backend    | ngl |        fa |            test |"
       "                  t/s |\n"
       "| ------------------------------ | ---------: | ---------: | ---------- | --: | --------: | --------------: |"
       " -------------------: |\n"
       "| lfm2 1.2B Q4_K - Medium        |   0.82 GiB |     1.43 B | CUDA       |  99 |         1 |           tg128 |"
       "       98.60 ± 0.40 |\n")


def test_public_paste_with_a_config_beside_it(tmp_path):
    """bench/public_records.py's generic path: an lfm2 paste whose sidecar names an LFM2 config beside the pastes is
    read with it (the records name configs/<file>), where it was skipped as a family glmbench did not price. (LFM2-1.2B's
    own shape is a built-in now and its rows name it: the config here is 20 layers deep, 1.43 B, which no built-in is.)"""
    sys.path.insert(0, os.path.join(ROOT, "bench"))
    import public_records as pr
    d = str(tmp_path)
    mid = dict(model_type="lfm2", vocab_size=65536, hidden_size=2048, num_hidden_layers=20, num_attention_heads=32,
               num_key_value_heads=8, intermediate_size=12288, full_attn_idxs=[2, 5, 8, 10, 12, 14, 17, 19])
    assert configs.from_hf(mid).total_params() == 1_426_222_080
    with open(os.path.join(d, "lfm2-mid.json"), "w") as f:
        json.dump({**mid, "architectures": ["Lfm2ForCausalLM"], "_name_or_path": "test/LFM2-Mid"}, f)
    with open(os.path.join(d, "lfm2.md"), "w") as f:
        f.write(_LB)
    with open(os.path.join(d, "lfm2.txt"), "w") as f:
        f.write("URL: https://example.org/lfm2\nModel: LFM2-Mid Q4_K_M\nCommand: llama-bench -m m.gguf -ngl 99 -fa 1\n")
    cfgs = pr.folder_configs(d)
    assert list(cfgs) == ["lfm2-mid.json"]
    _, (rec,) = pr.generic_records(os.path.join(d, "lfm2.md"), cfgs)
    assert (rec["model"], rec["weights"], rec["hardware"], rec["test"]) == ("configs/lfm2-mid.json", "Q4_K_M",
                                                                           "rtx-4090", "tg")

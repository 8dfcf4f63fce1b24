"""Vision-language wrappers (configs._WRAPPERS: Qwen2-VL, Qwen2.5-VL, Qwen3-VL, Qwen3-VL-MoE, GLM-4.1V, GLM-4.5V,
LLaVA, LLaVA-NeXT, InternVL) read as their text model: the config as transformers 5.25 saves it (its config class,
to_dict()) prices the parameters of HF's language model (model.language_model, and lm_head where untied) on the meta
device, ties as HF's wrapper model does, and leaves the vision tower unpriced (ModelConfig.unpriced)."""
import json

import numpy as np

import pytest

from glmbench.models import configs

transformers = pytest.importorskip("transformers", reason="the wrapper configs come from transformers' config classes")
torch = pytest.importorskip("torch")

_TXT = dict(vocab_size=96, hidden_size=32, num_hidden_layers=2, num_attention_heads=4, num_key_value_heads=2,
            intermediate_size=48, max_position_embeddings=128)
_MROPE = {"rope_type": "default", "rope_theta": 1e6, "mrope_section": [1, 1, 2]}
_QV = dict(depth=1, hidden_size=32, num_heads=2, intermediate_size=16, out_hidden_size=32)
_GV = dict(depth=1, hidden_size=32, num_heads=2, intermediate_size=16, out_hidden_size=32, image_size=28,
           patch_size=14)
_MOE = dict(moe_intermediate_size=16, num_experts=4, num_experts_per_tok=2)
# wrapper -> (its config's keyword arguments, the text family glmbench prices)
WRAPPERS = {
    "qwen2_vl": (dict(text_config=dict(_TXT, rope_parameters=_MROPE),
                      vision_config=dict(depth=1, embed_dim=32, hidden_size=32, num_heads=2)), "qwen2"),
    "qwen2_5_vl": (dict(text_config=dict(_TXT, rope_parameters=_MROPE), vision_config=dict(_QV, fullatt_block_indexes=[0])),
                   "qwen2"),
    "qwen3_vl": (dict(text_config=dict(_TXT, head_dim=8, rope_parameters=dict(_MROPE, mrope_interleaved=True)),
                      vision_config=dict(_QV, num_position_embeddings=16, deepstack_visual_indexes=[0])), "qwen3"),
    "qwen3_vl_moe": (dict(text_config=dict(_TXT, **_MOE, head_dim=8,
                                           rope_parameters=dict(_MROPE, mrope_interleaved=True)),
                          vision_config=dict(_QV, num_position_embeddings=16, deepstack_visual_indexes=[0])),
                     "qwen3_moe"),
    "glm4v": (dict(text_config=dict(_TXT, rope_parameters=dict(_MROPE, partial_rotary_factor=0.5)),
                   vision_config=_GV), "glm4"),
    "glm4v_moe": (dict(text_config=dict(_TXT, moe_intermediate_size=16, n_routed_experts=4, num_experts_per_tok=2,
                                        first_k_dense_replace=1,
                                        rope_parameters=dict(_MROPE, partial_rotary_factor=0.5)),
                       vision_config=_GV), "glm4_moe"),
    "llava": (dict(text_config=dict(_TXT, model_type="llama"),
                   vision_config=dict(model_type="clip_vision_model", hidden_size=32, intermediate_size=16,
                                      num_hidden_layers=1, num_attention_heads=2, image_size=28, patch_size=14)),
              "llama"),
    "llava_next": (dict(text_config=dict(_TXT, model_type="mistral"),
                        vision_config=dict(model_type="clip_vision_model", hidden_size=32, intermediate_size=16,
                                           num_hidden_layers=1, num_attention_heads=2, image_size=28, patch_size=14)),
                   "mistral"),
    "internvl": (dict(text_config=dict(_TXT, model_type="qwen2"),
                      vision_config=dict(hidden_size=32, num_hidden_layers=1, num_attention_heads=2,
                                         intermediate_size=16, image_size=28, patch_size=14)), "qwen2"),
}


def _saved(mt, **top):
    """The wrapper's config.json as transformers 5.25 writes it (its config class, to_dict())."""
    kw = json.loads(json.dumps(WRAPPERS[mt][0]))
    return json.loads(json.dumps(transformers.AutoConfig.for_model(mt, **kw, **top).to_dict(), default=str))


def _hf_text_params(d):
    """HF's wrapper model of config dict `d` on the meta device: (its language model's parameters, lm_head's where
    untied, and the routers' e_score_correction_bias buffers, which the checkpoint stores; tied)."""
    hc = transformers.AutoConfig.for_model(**d)
    with torch.device("meta"):
        m = transformers.AutoModelForImageTextToText.from_config(hc)
    lm = m.model.language_model
    tied = m.get_output_embeddings().weight is m.get_input_embeddings().weight
    n = sum(p.numel() for p in lm.parameters()) + (0 if tied else m.lm_head.weight.numel()) + \
        sum(b.numel() for k, b in lm.named_buffers() if "e_score" in k)
    return n, tied


@pytest.mark.parametrize("mt", sorted(WRAPPERS))
def test_a_wrapper_prices_its_text_model_as_hf_builds_it(mt):
    d = _saved(mt)
    n, tied = _hf_text_params(d)
    c = configs.from_hf(d)
    assert (c.model_type, c.wrapper) == (WRAPPERS[mt][1], mt)
    assert c.tie_word_embeddings == tied
    assert c.total_params() == n, (mt, c.total_params(), n)
    assert c.unpriced() and mt in c.unpriced()[0] and "vision tower" in c.unpriced()[0]
    assert c.summary()["unpriced"] == c.unpriced() and "vision not priced" in c.summary()["family"]
    # the text config alone, as its own family, prices the same (but GLM-4V's, whose text classes differ from GLM's)
    if mt not in configs._WRAPPER_TEXT_FIELDS:
        assert configs.from_hf({**d["text_config"], "model_type": WRAPPERS[mt][1],
                                "tie_word_embeddings": tied}).total_params() == n


@pytest.mark.parametrize("mt", sorted(WRAPPERS))
def test_a_wrapper_ties_as_hf_does(mt):
    """tie_word_embeddings at the top level against the text_config's: each ForConditionalGeneration ties
    lm_head to model.language_model.embed_tokens by the wrapper's config; Qwen2-VL's, Qwen2.5-VL's, GLM-4V's and
    LLaVA's __post_init__ forward a text_config's true to the top level (configs._WRAPPER_TIE)."""
    for top in (True, False):
        for text in (True, False):
            kw = json.loads(json.dumps(WRAPPERS[mt][0]))
            kw["text_config"]["tie_word_embeddings"] = text
            d = json.loads(json.dumps(transformers.AutoConfig.for_model(mt, **kw, tie_word_embeddings=top).to_dict(),
                                      default=str))
            d["text_config"]["tie_word_embeddings"] = text     # (as a pre-v5 file states it)
            n, tied = _hf_text_params(d)
            c = configs.from_hf(d)
            assert c.tie_word_embeddings == tied, (mt, top, text)
            assert c.total_params() == n
            assert ("lm_head.weight" in c.tensor_shapes()) == (not tied)


def test_a_flat_qwen2_vl_config_reads_its_top_level_text_fields():
    """Qwen2-VL / Qwen2.5-VL's released config.json (transformers 4.4x): the text fields at the top level, rope_scaling
    {"type": "mrope", "mrope_section"}: priced as Qwen2 with plain rope of the same dim (on text tokens the three mrope
    sections turn by one position)."""
    for mt in ("qwen2_vl", "qwen2_5_vl"):
        flat = dict(_TXT, model_type=mt, rope_theta=1e6, tie_word_embeddings=True,
                    rope_scaling={"type": "mrope", "mrope_section": [1, 1, 2]},
                    vision_config=WRAPPERS[mt][0]["vision_config"])
        n, tied = _hf_text_params(flat)
        c = configs.from_hf(flat)
        assert (c.model_type, c.wrapper, c.tie_word_embeddings, tied) == ("qwen2", mt, True, True)
        assert c.total_params() == n and c.hidden_size == 32 and c.n_layers == 2
        assert c.rope_type == "default" and c.rope_theta == 1e6 and c.rope_dim == c.head_dim
        assert c.forward_unsupported() == []


def test_wrappers_with_their_text_model_s_defaults():
    # a config.json stating only the structural fields: each text config class's defaults, as HF builds it
    for mt in ("qwen2_vl", "qwen3_vl", "qwen3_vl_moe", "glm4v", "glm4v_moe", "llava", "internvl"):
        kw = json.loads(json.dumps(WRAPPERS[mt][0]))
        kw["text_config"].pop("rope_parameters", None)
        d = {"model_type": mt, **kw}
        n, tied = _hf_text_params(d)
        c = configs.from_hf(d)
        assert (c.total_params(), c.tie_word_embeddings) == (n, tied), mt


def test_a_wrapper_without_its_text_config_is_an_error():
    for mt in ("qwen3_vl", "qwen3_vl_moe", "glm4v", "glm4v_moe", "llava", "llava_next", "internvl"):
        with pytest.raises(ValueError, match=f"`text_config` of a '{mt}' config must be an object, got None"):
            configs.from_hf({"model_type": mt, **_TXT})
    with pytest.raises(ValueError, match="`text_config` of a 'llava' config must be an object, got 3"):
        configs.from_hf({"model_type": "llava", "text_config": 3})
    with pytest.raises(ValueError, match="a multimodal wrapper itself"):
        configs.from_hf({"model_type": "llava", "text_config": dict(_TXT, model_type="qwen2_vl")})
    with pytest.raises(ValueError, match=r"`tie_word_embeddings` \(top level of the 'qwen3_vl' config\)"):
        configs.from_hf({"model_type": "qwen3_vl", "tie_word_embeddings": "yes", "text_config": dict(_TXT, head_dim=8)})


def test_llama_3_2_vision_is_refused_naming_its_cross_attention_layers():
    with pytest.raises(ValueError, match="'mllama' is not supported: .*cross_attention_layers"):
        configs.from_hf({"model_type": "mllama", "text_config": dict(_TXT, cross_attention_layers=[1])})


def _folder(tmp_path, d, names):
    """An HF folder: config.json `d` and one safetensors file of zeros (F16) named `names` {name: shape}."""
    from safetensors.numpy import save_file
    tmp_path.mkdir(exist_ok=True)
    (tmp_path / "config.json").write_text(json.dumps(d))
    save_file({n: np.zeros(s, np.float16) for n, s in names.items()}, str(tmp_path / "model.safetensors"))
    return str(tmp_path)


@pytest.mark.parametrize("mt, text, lm_head", [("qwen3_vl", "model.language_model.", "lm_head."),
                                               ("llava", "language_model.model.", "language_model.lm_head."),
                                               ("qwen2_vl", "model.", "lm_head.")])
def test_a_wrapper_s_folder_prices_its_text_weights_and_names_the_vision_bytes_unpriced(tmp_path, mt, text, lm_head):
    """A multimodal checkpoint (transformers 5.25: model.language_model.*; LLaVA's older layout: language_model.model.*;
    Qwen2-VL's first files: model.* beside visual.*): the text model's tensors are its weights, the vision tower's and
    projector's bytes unpriced (FileWeights.unpriced_bytes), the state dict the text model's."""
    from glmbench.models import checkpoint
    d = _saved(mt, tie_word_embeddings=False)
    c = configs.from_hf(d)
    shapes = c.tensor_shapes()
    names = {(lm_head + k[len("lm_head."):] if k.startswith("lm_head.") else text + k[len("model."):]): s
             for k, s in shapes.items()}
    vision = {"visual.blocks.0.attn.qkv.weight": (96, 32), "model.visual.merger.mlp.0.weight": (32, 64),
              "vision_tower.vision_model.embeddings.patch_embedding.weight": (32, 3, 14, 14),
              "multi_modal_projector.linear_1.weight": (32, 32)}
    p = _folder(tmp_path / mt, d, {**names, **vision})
    fw = configs.load(p).file_weights
    text_bytes = 2 * sum(int(np.prod(s)) for s in shapes.values())
    assert fw.unpriced_bytes == 2 * sum(int(np.prod(s)) for s in vision.values())
    assert (fw.extra_bytes, fw.model_bytes, sum(b for _, _, b in fw.tensors)) == (0, text_bytes, text_bytes)
    assert fw.main_type == "f16" or fw.main_type.upper() == "F16"
    cfg, sd = checkpoint.state_dict(p)
    assert set(sd) == set(shapes) and cfg.wrapper == mt


def test_a_vision_language_gguf_reads_as_its_text_architecture(tmp_path):
    """llama.cpp's qwen2vl / qwen3vl / qwen3vlmoe GGUFs hold the text model only (the vision tower is the mmproj
    file): read as qwen2 / qwen3 / qwen3moe, their `{arch}.` keys as the text architecture's."""
    gguf = pytest.importorskip("gguf")
    import gguf_writer
    from glmbench.models import gguf_file
    for vl, mt, extra in (("qwen2vl", "qwen2", {"rope.dimension_sections": [1, 1, 2, 0]}),
                          ("qwen3vl", "qwen3", {"n_deepstack_layers": 1, "attention.key_length": 8,
                                                "attention.value_length": 8}),
                          ("qwen3vlmoe", "qwen3_moe", {"n_deepstack_layers": 1, "attention.key_length": 8,
                                                       "attention.value_length": 8, "expert_count": 4, "expert_feed_forward_length": 16,
                                                       "expert_used_count": 2})):
        tc = dict(_TXT, model_type=mt, **({"head_dim": 8} if mt != "qwen2" else {}),
                  **({"num_experts": 4, "num_experts_per_tok": 2, "moe_intermediate_size": 16} if "moe" in mt else {}))
        want = configs.from_hf(tc)
        text = gguf_file.VL_TEXT_ARCHITECTURES[vl]
        p = str(tmp_path / f"{vl}.gguf")
        w = gguf.GGUFWriter(p, vl)
        gguf_writer.add_metadata(w, vl, {**gguf_writer.gqa_meta(want), **extra})
        gguf_writer.add_zero_tensors(w, want, text)
        gguf_writer.finish(w)
        g = gguf_file.read(p)
        assert (g.architecture, g.vision_architecture) == (text, vl)
        c = configs.load(p)
        assert (c.model_type, c.total_params(), c.n_layers, c.head_dim) == \
            (mt, want.total_params(), want.n_layers, want.head_dim)
        assert c.file_weights.model_bytes == c.file_weights.total_bytes


def test_a_vision_language_gguf_error_names_the_files_own_key(tmp_path):
    """An error reading a qwen3vl file names the key the file holds ('qwen3vl.embedding_length'), not the text
    architecture's it is read under ('qwen3.embedding_length', a key no such file has)."""
    gguf = pytest.importorskip("gguf")
    import gguf_writer
    from glmbench.models import gguf_file
    want = configs.from_hf(dict(_TXT, model_type="qwen3", head_dim=8))
    meta = {**gguf_writer.gqa_meta(want), "n_deepstack_layers": 1, "attention.key_length": 8,
            "attention.value_length": 8}
    del meta["embedding_length"]
    p = str(tmp_path / "qwen3vl-broken.gguf")
    w = gguf.GGUFWriter(p, "qwen3vl")
    gguf_writer.add_metadata(w, "qwen3vl", meta)
    gguf_writer.add_zero_tensors(w, want, "qwen3")
    gguf_writer.finish(w)
    with pytest.raises(gguf_file.GGUFError) as e:
        configs.load(p)
    msg = str(e.value)
    assert "'qwen3vl.embedding_length' is missing" in msg and "'qwen3." not in msg
    assert "read as 'qwen3'" in msg

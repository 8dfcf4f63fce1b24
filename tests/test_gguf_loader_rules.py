"""GGUF files read by llama.cpp's own loader rules (the vendored llama.cpp's src/models/*.cpp load_arch_hparams /
load_arch_tensors, src/llama-model-loader.cpp, src/llama-quant.cpp): a file llama.cpp loads is read with the
hyperparameters llama.cpp takes, and one it refuses is one GGUFError naming the key or tensor, never a model run
without some of its tensors or with other shapes. Small files written with the gguf package (tests/gguf_writer.py)."""
import numpy as np
import pytest

gguf = pytest.importorskip("gguf", reason="GGUF tests need the gguf package")

import gguf_writer  # noqa: E402

from glmbench import vocab  # noqa: E402
from glmbench.models import configs, gguf_file  # noqa: E402


# ---- shared experts ------------------------------------------------------------------------------------------------
# GLM-4.5-Air's shape: a dense first layer, then 8 routed experts beside one shared expert
_GLM4MOE = dict(model_type="glm4_moe", vocab_size=160, hidden_size=64, intermediate_size=96, moe_intermediate_size=32,
                num_hidden_layers=3, num_attention_heads=4, num_key_value_heads=2, head_dim=16, n_shared_experts=1,
                n_routed_experts=8, routed_scaling_factor=1.0, n_group=1, topk_group=1, num_experts_per_tok=2,
                first_k_dense_replace=1, norm_topk_prob=True, attention_bias=False, use_qk_norm=False,
                rms_norm_eps=1e-5, max_position_embeddings=256,
                rope_parameters={"rope_type": "default", "rope_theta": 10000.0, "partial_rotary_factor": 0.5})
_GLM4MOE_KEYS = {"expert_count": 8, "expert_used_count": 2, "expert_feed_forward_length": 32, "expert_shared_count": 1,
                 "leading_dense_block_count": 1, "rope.dimension_count": 8, "attention.key_length": 16,
                 "attention.value_length": 16, "feed_forward_length": 96, "expert_weights_norm": True}


def _glm4moe(path, drop=(), hc=None, **extra):
    return gguf_writer.write_synth(path, hc or _GLM4MOE, "glm4moe", _GLM4MOE_KEYS, drop, extra)


def test_shared_expert_tensors_without_a_shared_expert_are_refused(tmp_path):
    """src/models/glm4-moe.cpp creates ffn_*_shexp only where expert_shared_count > 0; a file holding them with a
    count of 0 has tensors the loader never creates, which llama-model-loader.cpp refuses ("wrong number of
    tensors"). glmbench ran such a file without its shared expert, pricing the tensors as extra bytes."""
    p = str(tmp_path / "ok.gguf")
    want = _glm4moe(p)
    cfg, names = gguf_writer.read_back(p, want)
    assert cfg.n_shared_experts == 1 and "blk.1.ffn_up_shexp.weight" in names
    p0 = str(tmp_path / "zero.gguf")
    _glm4moe(p0, **{"expert_shared_count": 0})
    with pytest.raises(gguf_file.GGUFError, match=r"tensor 'blk\.1\.ffn_\w+_shexp\.weight' is a shared expert's, but "
                                                  r"the metadata gives layer 1 none \('glm4moe\.expert_shared_count' = 0\)"):
        configs.load(p0)
    # the same model written without the shared expert (its count 0, no shexp tensors) reads and prices as it is
    p1 = str(tmp_path / "none.gguf")
    want = _glm4moe(p1, hc={**_GLM4MOE, "n_shared_experts": 0}, **{"expert_shared_count": 0})
    cfg, names = gguf_writer.read_back(p1, want)
    assert cfg.n_shared_experts == 0 and not any("shexp" in n for n in names)


def test_expert_shared_count_is_required_where_llama_cpp_requires_it(tmp_path):
    """glm4moe's and deepseek2's loaders read expert_shared_count with get_key (required): a file without it does
    not load; glmbench took 0 and ran the model without its shared expert."""
    gguf_writer.check_required_keys(tmp_path, _glm4moe, "glm4moe", ("expert_shared_count",))
    pytest.importorskip("torch")
    pytest.importorskip("transformers")
    from test_model_hf import tiny_hf_model
    cfg, model = tiny_hf_model("glm4_moe_lite")
    sd = model.state_dict()
    U32 = gguf.GGUFValueType.UINT32
    p = str(tmp_path / "noshared.gguf")
    gguf_writer.write(p, cfg, sd, meta={"deepseek2.expert_shared_count": (None, U32)})
    with pytest.raises(gguf_file.GGUFError, match=r"metadata 'deepseek2\.expert_shared_count' is missing"):
        configs.load(p)
    # deepseek2 creates the shared experts' tensors on every MoE layer ({n_embd, n_ff_exp x n_expert_shared},
    # required): a count of 0 is a file llama.cpp refuses ("not found" or "wrong shape")
    p = str(tmp_path / "zero.gguf")
    gguf_writer.write(p, cfg, sd, meta={"deepseek2.expert_shared_count": (0, U32)})
    with pytest.raises(gguf_file.GGUFError, match=r"'deepseek2\.expert_shared_count' = 0: llama\.cpp's deepseek2 "
                                                  r"loader requires the shared experts' tensors"):
        configs.load(p)


# ---- nemotron --------------------------------------------------------------------------------------------------------
_N = dict(model_type="nemotron", vocab_size=128, hidden_size=64, intermediate_size=96, num_hidden_layers=2,
          num_attention_heads=4, num_key_value_heads=2, head_dim=16, norm_eps=1e-5, max_position_embeddings=4096,
          rope_parameters={"rope_type": "default", "rope_theta": 10000.0, "partial_rotary_factor": 0.5})


def _nemotron(path, hc, **extra):
    cfg = configs.from_hf(hc, "synth")
    meta = {k: v for k, v in gguf_writer.gqa_meta(cfg).items() if k != "attention.layer_norm_rms_epsilon"}
    meta.update({"feed_forward_length": 96, "attention.layer_norm_epsilon": 1e-5, "rope.dimension_count": 8})
    gguf_writer.write_zero_file(path, cfg, "nemotron", meta, (), extra)
    return cfg


def test_nemotron_heads_times_head_dim_must_be_the_hidden_size(tmp_path):
    """src/models/nemotron.cpp creates attn_q {n_embd, n_embd} and attn_output {n_embd, n_embd}: a file whose heads
    x key_length differ from embedding_length (Minitron-8B's shape: 48 heads of 128 on 4096) has tensors of the
    wrong shape for llama.cpp. glmbench read and ran it."""
    p = str(tmp_path / "ok.gguf")
    want = _nemotron(p, _N, **{"attention.key_length": 16, "attention.value_length": 16})
    gguf_writer.read_back(p, want)
    p = str(tmp_path / "wide.gguf")
    _nemotron(p, {**_N, "head_dim": 32}, **{"attention.key_length": 32, "attention.value_length": 32})
    with pytest.raises(gguf_file.GGUFError, match=r"'nemotron\.attention\.head_count' = 4 x "
                                                  r"'nemotron\.attention\.key_length' = 32 is not "
                                                  r"'nemotron\.embedding_length' = 64"):
        configs.load(p)


def test_output_matrix_required_where_llama_cpp_requires_it(tmp_path):
    """nemotron.cpp (and gpt-oss's, minimax-m2's, qwen2moe's, olmoe's, olmo2's, apertus's, phimoe's, dots1's
    loaders) create output.weight required, with no fallback to token_embd: a tied file does not load there.
    glmbench ran it tied."""
    p = str(tmp_path / "tied.gguf")
    _nemotron(p, {**_N, "tie_word_embeddings": True})
    assert "output.weight" not in gguf_file.read(p).tensors
    with pytest.raises(gguf_file.GGUFError, match=r"tensor 'output\.weight' is missing \(llama\.cpp's nemotron"):
        configs.load(p)
    hc = dict(model_type="olmo2", vocab_size=128, hidden_size=64, intermediate_size=96, num_hidden_layers=2,
              num_attention_heads=4, num_key_value_heads=2, rms_norm_eps=1e-6, max_position_embeddings=4096)
    p = str(tmp_path / "olmo2.gguf")
    want = gguf_writer.write_synth(p, hc, "olmo2")
    gguf_writer.read_back(p, want)
    p = str(tmp_path / "olmo2-tied.gguf")
    gguf_writer.write_synth(p, {**hc, "tie_word_embeddings": True}, "olmo2")
    with pytest.raises(gguf_file.GGUFError, match=r"tensor 'output\.weight' is missing \(llama\.cpp's olmo2"):
        configs.load(p)


# ---- llama-quant's types for the embeddings ---------------------------------------------------------------------------
def test_per_layer_token_embd_takes_the_token_embedding_rule():
    """llama-quant.cpp (2025, glmbench's mix rules) quantizes Gemma 3n / 4's per_layer_token_embd by token_embd's rule
    (`name == "token_embd.weight" || name == "per_layer_token_embd.weight"`): q2_K in the IQ2_XXS / IQ2_XS / IQ1_*
    mixes, iq3_s in IQ2_S / IQ2_M / IQ3_XXS, q4_K in TQ1_0 / TQ2_0, the mix's base type elsewhere. glmbench gave it
    the base type in every mix (an iq2_xxs table in IQ2_XXS)."""
    for name in ("gemma-3n-e4b", "gemma-4-e2b"):
        c = configs.load(name)
        ctx, shape = c.tensor_context(), c.tensor_shapes()["model.embed_tokens_per_layer.weight"]
        got = {mix: vocab.tensor_format(mix, "model.embed_tokens_per_layer.weight", shape, ctx).name
               for mix in ("Q4_K_M", "Q3_K_M", "mix:IQ2_XXS", "mix:IQ2_XS", "mix:IQ1_S", "IQ2_M", "mix:IQ3_XXS",
                           "mix:TQ1_0", "mix:Q8_0")}
        assert got == {"Q4_K_M": "q4_K", "Q3_K_M": "q3_K", "mix:IQ2_XXS": "q2_K", "mix:IQ2_XS": "q2_K",
                       "mix:IQ1_S": "q2_K", "IQ2_M": "iq3_s", "mix:IQ3_XXS": "iq3_s", "mix:TQ1_0": "q4_K",
                       "mix:Q8_0": "q8_0"}, name
        # its GGUF name, as gguf-py's TensorNameMap gives it
        assert vocab.gguf_tensor_name("model.embed_tokens_per_layer.weight") == ("per_layer_token_embd.weight", None)


def test_output_matrix_of_an_iq3_xxs_mix_is_q5_k():
    """llama-quant.cpp's output rule (and the tied token_embd's) lists IQ3_XXS among the mixes whose output is q5_K
    (2025 and 2026 alike); glmbench gave it q6_K."""
    for name in ("llama-3.1-8b", "gemma-3-4b"):
        c = configs.load(name)
        ctx, shapes = c.tensor_context(), c.tensor_shapes()
        head = "lm_head.weight" if "lm_head.weight" in shapes else "model.embed_tokens.weight"
        assert vocab.tensor_format("mix:IQ3_XXS", head, shapes[head], ctx).name == "q5_K", name
        assert vocab.tensor_format("mix:IQ2_XXS", head, shapes[head], ctx).name == "q5_K", name
        assert vocab.tensor_format("IQ3_XS", head, shapes[head], ctx).name == "q6_K", name


# ---- load_hparams' general keys ----------------------------------------------------------------------------------------
_LLAMA = dict(model_type="llama", vocab_size=128, hidden_size=64, intermediate_size=96, num_hidden_layers=2,
              num_attention_heads=4, num_key_value_heads=2, rms_norm_eps=1e-5, max_position_embeddings=4096)


def _llama(path, extra=None, strings=None, drop=(), hc=None):
    """A llama file of _LLAMA's shape (zero tensors), gqa_meta's keys less `drop` plus `extra`, and `strings` as
    string keys (rope.scaling.type)."""
    cfg = configs.from_hf(hc or _LLAMA, "synth")
    w = gguf.GGUFWriter(path, "llama")
    gguf_writer.add_metadata(w, "llama", {**gguf_writer.gqa_meta(cfg), **(extra or {})}, drop)
    for k, v in (strings or {}).items():
        w.add_string(f"llama.{k}", v)
    gguf_writer.add_zero_tensors(w, cfg, "llama")
    gguf_writer.finish(w)
    return cfg


def test_rope_scaling_factor_without_a_type_is_linear(tmp_path):
    """llama.cpp's load_hparams: the scaling type defaults to "linear", the factor from rope.scaling.factor or the
    old rope.scale_linear (freq_scale = 1 / factor): a file stating a factor alone runs linear-scaled rope there.
    glmbench read it unscaled."""
    for key in ("rope.scaling.factor", "rope.scale_linear"):
        p = str(tmp_path / f"{key}.gguf")
        _llama(p, {key: 4.0})
        c = configs.load(p)
        assert (c.rope_type, c.hf["rope_scaling"]) == ("linear", {"rope_type": "linear", "factor": 4.0}), key
    # stated "none": unscaled whatever the factor (llama-context.cpp: never scale if the type is none); no key: plain
    p = str(tmp_path / "none.gguf")
    _llama(p, {"rope.scaling.factor": 4.0}, {"rope.scaling.type": "none"})
    assert configs.load(p).rope_type == "default"
    p = str(tmp_path / "plain.gguf")
    _llama(p)
    assert configs.load(p).rope_type == "default"


def test_rope_scaling_type_llama_cpp_does_not_know_is_refused(tmp_path):
    """llama_rope_scaling_type_from_string knows none / linear / yarn / longrope; any other type is an assert in
    load_hparams. glmbench took HF's "dynamic" NTK from such a file."""
    p = str(tmp_path / "dynamic.gguf")
    _llama(p, {"rope.scaling.factor": 4.0}, {"rope.scaling.type": "dynamic"})
    with pytest.raises(gguf_file.GGUFError, match=r"'llama\.rope\.scaling\.type' = 'dynamic' is not a rope scaling "
                                                  r"llama\.cpp knows"):
        configs.load(p)


def test_llama_rotates_the_whole_head(tmp_path):
    """load_hparams refuses a llama / deci file whose rope.dimension_count is not the head dim ("invalid n_rot");
    glmbench ran it with a partial rope."""
    p = str(tmp_path / "partial.gguf")
    _llama(p, {"rope.dimension_count": 8})
    with pytest.raises(gguf_file.GGUFError, match=r"'llama\.rope\.dimension_count' = 8 is not the head dim 16 .*"
                                                  r"invalid n_rot"):
        configs.load(p)
    p = str(tmp_path / "whole.gguf")
    _llama(p, {"rope.dimension_count": 16})
    assert configs.load(p).rope_dim == 16


def test_rms_epsilon_is_required(tmp_path):
    """llama.cpp's loaders read attention.layer_norm_rms_epsilon with get_key (required) in every RMSNorm family
    glmbench reads; glmbench took 1e-6 from a file without it."""
    gguf_writer.check_required_keys(tmp_path, lambda p, drop: _llama(p, drop=drop), "llama",
                                    ("attention.layer_norm_rms_epsilon",))
    gguf_writer.check_required_keys(tmp_path, _glm4moe, "glm4moe", ("attention.layer_norm_rms_epsilon",))


def test_value_length_unlike_the_key_length_is_refused(tmp_path):
    """A GQA family's attn_v is value_length x KV heads wide in llama.cpp and its graph asserts the value head as
    wide as the key head; glmbench's GQA config has one head dim and ignored value_length."""
    p = str(tmp_path / "ok.gguf")
    _llama(p, {"attention.key_length": 16, "attention.value_length": 16})
    assert configs.load(p).head_dim == 16
    p = str(tmp_path / "v8.gguf")
    _llama(p, {"attention.key_length": 16, "attention.value_length": 8})
    with pytest.raises(gguf_file.GGUFError, match=r"'llama\.attention\.value_length' = 8 differs from the key head "
                                                  r"dim 16"):
        configs.load(p)


def test_yarn_log_multiplier_as_each_loader_reads_it(tmp_path):
    """rope.scaling.yarn_log_multiplier: deepseek2's converter writes 0.1 x mscale_all_dim and its loader divides by
    0.1 (mscale = mscale_all_dim); Ministral 3's (conversion/mistral3.py) writes mscale_all_dim itself, which
    mistral3's loader takes as it is, mscale 1 (llama-context.cpp). glmbench divided every file's by 0.1 (Ministral
    3's mscale_all_dim 1 read as 10)."""
    hc = {**_LLAMA, "max_position_embeddings": 16384}
    cfg = configs.from_hf(hc, "synth")
    p = str(tmp_path / "ministral3.gguf")
    w = gguf.GGUFWriter(p, "mistral3")
    gguf_writer.add_metadata(w, "mistral3", {**gguf_writer.gqa_meta(cfg), "rope.scaling.factor": 16.0,
                                             "rope.scaling.original_context_length": 1024,
                                             "rope.scaling.yarn_log_multiplier": 1.0,
                                             "attention.temperature_scale": 0.1})
    w.add_string("mistral3.rope.scaling.type", "yarn")
    gguf_writer.add_zero_tensors(w, cfg, "llama")
    gguf_writer.finish(w)
    c = configs.load(p)
    rs = c.hf["rope_scaling"]
    assert c.model_type == "ministral3" and rs["rope_type"] == "yarn"
    assert (rs["mscale_all_dim"], rs["mscale"]) == (1.0, 1.0)


def test_yarn_betas_read_only_where_llama_cpp_reads_them(tmp_path):
    """rope.scaling.yarn_beta_fast / _slow: only mistral3's (and grok's) loaders read them (src/models/mistral3.cpp);
    every other architecture runs llama-hparams.h's 32 / 1 whatever the file says (the converter writes HF's betas
    for any model with them). glmbench read them in every architecture."""
    hc = {**_LLAMA, "max_position_embeddings": 16384}
    cfg = configs.from_hf(hc, "synth")
    yarn = {"rope.scaling.factor": 16.0, "rope.scaling.original_context_length": 1024}
    betas = {"rope.scaling.yarn_beta_fast": 8.0, "rope.scaling.yarn_beta_slow": 2.0}

    def load(arch, meta):
        p = str(tmp_path / f"{arch}-{len(meta)}.gguf")
        w = gguf.GGUFWriter(p, arch)
        gguf_writer.add_metadata(w, arch, {**gguf_writer.gqa_meta(cfg), **yarn, **meta})
        w.add_string(f"{arch}.rope.scaling.type", "yarn")
        gguf_writer.add_zero_tensors(w, cfg, "llama")
        gguf_writer.finish(w)
        return configs.load(p)

    plain, stated = load("llama", {}), load("llama", betas)
    assert plain.rope_type == stated.rope_type == "yarn"
    assert "beta_fast" not in stated.hf["rope_scaling"] and "beta_slow" not in stated.hf["rope_scaling"]
    assert np.array_equal(stated.rope_inv_freq(), plain.rope_inv_freq())
    # mistral3 reads them: another ramp
    plain, stated = load("mistral3", {}), load("mistral3", betas)
    assert (stated.hf["rope_scaling"]["beta_fast"], stated.hf["rope_scaling"]["beta_slow"]) == (8.0, 2.0)
    assert not np.allclose(stated.rope_inv_freq(), plain.rope_inv_freq())


# ---- windows ----------------------------------------------------------------------------------------------------------
_GEMMA = dict(vocab_size=128, hidden_size=64, intermediate_size=96, num_hidden_layers=6, num_attention_heads=4,
              num_key_value_heads=2, head_dim=16, rms_norm_eps=1e-6, max_position_embeddings=4096, sliding_window=8)


@pytest.mark.parametrize("arch,mt", [("gemma3", "gemma3_text"), ("gemma2", "gemma2")])
def test_gemma_window_pattern_as_flags_or_a_period(tmp_path, arch, mt):
    """gemma2 / gemma3 read attention.sliding_window_pattern through load_swa_pattern: an array of one flag per layer
    (true: windowed) or a period (every n-th layer global; 0: all windowed). glmbench took a period only and refused
    a file with flags ("varies per layer" or "must be an integer")."""
    flags = [True, False, True, True, False, True]
    hc = {**_GEMMA, "model_type": mt, "layer_types": ["sliding_attention" if f else "full_attention" for f in flags]}
    keys = {"attention.sliding_window": 8, "attention.key_length": 16, "attention.value_length": 16}
    p = str(tmp_path / "flags.gguf")
    gguf_writer.write_synth(p, hc, arch, {**keys, "attention.sliding_window_pattern": flags})
    c = configs.load(p)
    assert c.windowed_layers == (0, 2, 3, 5), c.windowed_layers
    p = str(tmp_path / "period.gguf")
    gguf_writer.write_synth(p, {**hc, "layer_types": None}, arch, {**keys, "attention.sliding_window_pattern": 3})
    assert configs.load(p).windowed_layers == (0, 1, 3, 4)


def test_gemma2_windowed_layers_turn_by_the_swa_rope_base(tmp_path):
    """gemma2.cpp reads rope.freq_base_swa (get_key, optional; default rope.freq_base) and its graph turns each
    windowed layer by it (llama_model::get_rope_freq_base), the global ones by rope.freq_base. glmbench turned every
    layer by rope.freq_base."""
    hc = {**_GEMMA, "model_type": "gemma2", "num_hidden_layers": 4, "rope_theta": 10000.0}
    keys = {"attention.sliding_window": 8, "attention.key_length": 16, "attention.value_length": 16}
    p = str(tmp_path / "same.gguf")
    gguf_writer.write_synth(p, hc, "gemma2", keys)
    c = configs.load(p)
    assert c.rope_local_theta is None and {c.layer_rope(i)["theta"] for i in range(4)} == {10000.0}
    p = str(tmp_path / "swa.gguf")
    gguf_writer.write_synth(p, hc, "gemma2", {**keys, "rope.freq_base_swa": 1000.0})
    c = configs.load(p)
    assert c.windowed_layers == (0, 2)
    assert [c.layer_rope(i)["theta"] for i in range(4)] == [1000.0, 10000.0, 1000.0, 10000.0]
    # llama.cpp scales the windowed layers' rope by the global scale too (rope_freq_scale_train_swa), which the
    # plain local rope does not state: one error naming the key
    p = str(tmp_path / "scaled.gguf")
    gguf_writer.write_synth(p, hc, "gemma2", {**keys, "rope.freq_base_swa": 1000.0, "rope.scaling.factor": 2.0})
    with pytest.raises(gguf_file.GGUFError, match=r"metadata 'gemma2\.rope\.freq_base_swa' = 1000\.0 differs from "
                                                  r"'gemma2\.rope\.freq_base' = 10000\.0 in a file with rope scaling"):
        configs.load(p)


# ---- routing ----------------------------------------------------------------------------------------------------------
def test_glm4moe_routing_defaults_are_llama_cpps(tmp_path):
    """src/models/glm4-moe.cpp: expert_weights_norm absent is false (no renormalisation; glmbench took true),
    expert_weights_scale 0 is unscaled (llama-graph.cpp's build_moe_ffn skips a 0 scale; glmbench multiplied the
    experts' output by 0), a softmax expert_gating_func is not GLM-4.5's sigmoid router (refused; glmbench read it
    as sigmoid)."""
    p = str(tmp_path / "nonorm.gguf")
    _glm4moe(p, drop=("expert_weights_norm",), hc={**_GLM4MOE, "norm_topk_prob": False}, **{"expert_weights_scale": 0.0})
    c = gguf_writer.load_stated(p)
    assert (c.norm_topk_prob, c.routed_scaling_factor) == (False, 1.0)
    p = str(tmp_path / "norm.gguf")
    _glm4moe(p, **{"expert_weights_scale": 2.5})
    c = gguf_writer.load_stated(p)
    assert (c.norm_topk_prob, c.routed_scaling_factor) == (True, 2.5)
    p = str(tmp_path / "softmax.gguf")
    _glm4moe(p, **{"expert_gating_func": 1})
    with pytest.raises(gguf_file.GGUFError, match=r"'glm4moe\.expert_gating_func' = 1 is not 2 \(sigmoid\)"):
        configs.load(p)


def test_qwen3moe_always_renormalises(tmp_path):
    """llama.cpp's qwen3moe graph passes norm_w true to build_moe_ffn and never reads expert_weights_norm: a file
    stating false runs renormalised there (glmbench ran it without), with a notice that the key is not read."""
    hc = dict(model_type="qwen3_moe", vocab_size=128, hidden_size=64, intermediate_size=96, moe_intermediate_size=32,
              num_hidden_layers=2, num_attention_heads=4, num_key_value_heads=2, head_dim=16, num_experts=8,
              num_experts_per_tok=2, norm_topk_prob=True, rms_norm_eps=1e-6, max_position_embeddings=4096)
    keys = {"expert_count": 8, "expert_used_count": 2, "expert_feed_forward_length": 32, "attention.key_length": 16,
            "attention.value_length": 16}
    p = str(tmp_path / "q.gguf")
    gguf_writer.write_synth(p, hc, "qwen3moe", keys, extra={"expert_weights_norm": False})
    with pytest.warns(gguf_file.GGUFNotice, match=r"'qwen3moe\.expert_weights_norm' = false is not read"):
        c = configs.load(p)
    assert c.norm_topk_prob is True


def test_expert_groups_llama_cpp_asserts_on_are_refused(tmp_path):
    """load_hparams asserts, where expert_group_count > 1, that the groups split the experts and that
    expert_group_used_count is in [1, groups): a file breaking it aborts llama.cpp; glmbench priced it (every group
    chosen) or read a used count of 0."""
    hc = {**_GLM4MOE, "n_group": 2, "topk_group": 1}
    p = str(tmp_path / "ok.gguf")
    _glm4moe(p, hc=hc, **{"expert_group_count": 2, "expert_group_used_count": 1})
    assert configs.load(p).n_group == 2
    p = str(tmp_path / "all.gguf")
    _glm4moe(p, hc={**hc, "topk_group": 2}, **{"expert_group_count": 2, "expert_group_used_count": 2})
    with pytest.raises(gguf_file.GGUFError, match=r"'glm4moe\.expert_group_used_count' = 2 must be at least 1 and "
                                                  r"fewer than 'glm4moe\.expert_group_count' = 2"):
        configs.load(p)


def test_rope_freqs_only_where_the_loader_takes_it(tmp_path):
    """rope_freqs (llama3-style factors) is created by llama.cpp's llama / deci / granite / exaone / ... loaders; in a
    qwen3 file it is a tensor the loader never creates, which llama.cpp refuses ("wrong number of tensors"). glmbench
    turned qwen3's rope by it."""
    import numpy as np
    factors = np.ones(8, np.float32)
    for arch, mt, ok in (("llama", "llama", True), ("qwen3", "qwen3", False)):
        cfg = configs.from_hf({**_LLAMA, "model_type": mt, "head_dim": 16}, "synth")
        p = str(tmp_path / f"{arch}.gguf")
        w = gguf.GGUFWriter(p, arch)
        gguf_writer.add_metadata(w, arch, {**gguf_writer.gqa_meta(cfg), "attention.key_length": 16,
                                           "attention.value_length": 16})
        gguf_writer.add_zero_tensors(w, cfg, arch)
        w.add_tensor("rope_freqs.weight", factors)
        gguf_writer.finish(w)
        if ok:
            assert configs.load(p).rope_type == "freq_factors"
        else:
            with pytest.raises(gguf_file.GGUFError, match=r"tensor 'rope_freqs\.weight' .* is in a qwen3 file, whose "
                                                          r"llama\.cpp loader does not take it"):
                configs.load(p)


def test_token_embd_rows_are_the_tokenizers_count(tmp_path):
    """llama.cpp's n_vocab is the tokenizer's token count (LLAMA_LOAD_LOCALS: vocab.n_tokens()) and token_embd is
    created {n_embd, n_vocab}: a file whose tokenizer lists another count than token_embd's rows does not load there.
    glmbench priced the embedding's rows."""
    for n, ok in ((128, True), (120, False)):
        cfg = configs.from_hf(_LLAMA, "synth")
        p = str(tmp_path / f"tok{n}.gguf")
        w = gguf.GGUFWriter(p, "llama")
        gguf_writer.add_metadata(w, "llama", gguf_writer.gqa_meta(cfg))
        w.add_tokenizer_model("gpt2")
        w.add_token_list([f"t{i}" for i in range(n)])
        gguf_writer.add_zero_tensors(w, cfg, "llama")
        gguf_writer.finish(w)
        if ok:
            assert configs.load(p).vocab_size == 128
        else:
            with pytest.raises(gguf_file.GGUFError, match=r"tensor 'token_embd\.weight' has 128 rows but the tokenizer "
                                                          r"\('tokenizer\.ggml\.tokens'\) 120 tokens"):
                configs.load(p)


# ERNIE-4.5-21B-A3B's shape: a dense first layer, then 4 experts of 32 and two shared ones; the converter writes the
# shared MLP's width as HF's intermediate_size // num_key_value_heads (128 // 2 = 64 = 2 x 32, as 12288 // 4 = 2 x 1536)
_ERNIE = dict(model_type="ernie4_5_moe", vocab_size=160, hidden_size=64, intermediate_size=128, num_hidden_layers=3,
              num_attention_heads=4, num_key_value_heads=2, rms_norm_eps=1e-5, max_position_embeddings=4096,
              moe_intermediate_size=32, moe_num_experts=4, moe_k=2, moe_num_shared_experts=2, moe_layer_start_index=1)
_ERNIE_KEYS = {"expert_count": 4, "expert_used_count": 2, "expert_feed_forward_length": 32, "expert_shared_count": 2,
               "expert_shared_feed_forward_length": 64, "leading_dense_block_count": 1, "interleave_moe_layer_step": 1,
               "feed_forward_length": 128}


def _ernie(p, drop=(), hc=None, **extra):
    return gguf_writer.write_synth(p, hc or _ERNIE, "ernie4_5-moe", _ERNIE_KEYS, drop, extra)


def test_ernie_moe_needs_its_interleave_step(tmp_path):
    """ernie4-5.cpp reads interleave_moe_layer_step with get_key (required; the converter always writes it);
    glmbench took 1 from a file without it."""
    p = str(tmp_path / "ok.gguf")
    want = _ernie(p)
    assert configs.load(p).moe_layers == want.moe_layers == (1, 2)
    gguf_writer.check_required_keys(tmp_path, _ernie, "ernie4_5-moe", ("interleave_moe_layer_step",))


def test_ernie_moe_interleave_step_as_llama_cpp_loads_and_runs_it(tmp_path):
    """src/models/ernie4-5.cpp creates the router and experts (required) on every layer from
    leading_dense_block_count on and no dense MLP there; src/models/ernie4-5-moe.cpp runs experts only where
    (il + 1) % n_moe_layer_step == 0 and a dense MLP (tensors those layers never get) elsewhere. So a file whose
    step leaves a layer past the leading ones off-step is one llama.cpp cannot run: a converted HF model with
    moe_layer_interval 2 (its dense MLPs there: the loader refuses them) or the experts everywhere (the graph has
    no dense MLP to run). glmbench found the MoE layers by their routers and read both."""
    hc = {**_ERNIE, "num_hidden_layers": 4}
    p = str(tmp_path / "step1.gguf")
    want = _ernie(p, hc=hc)
    assert gguf_writer.read_back(p, want)[0].moe_layers == (1, 2, 3)
    step = r"metadata 'ernie4_5-moe\.interleave_moe_layer_step' = 2 with 'ernie4_5-moe\.leading_dense_block_count' = 1: "
    # HF's moe_layer_interval 2 as the converter writes it: routers on 1 and 3, dense MLPs on 0 and 2
    p = str(tmp_path / "hf-interval.gguf")
    want = _ernie(p, hc={**hc, "moe_layer_interval": 2}, interleave_moe_layer_step=2)
    assert want.moe_layers == (1, 3)
    with pytest.raises(gguf_file.GGUFError, match=step + r"llama\.cpp's ernie4_5-moe loader creates experts \(no dense "
                                                         r"MLP\) on every layer from 1 on, but its graph runs layer 2 as "
                                                         r"a dense MLP, which it never created: llama\.cpp cannot run"):
        configs.load(p)
    # experts on every layer past the first, step 2: loads in llama.cpp, but layer 2 runs a dense MLP it lacks
    p = str(tmp_path / "everywhere.gguf")
    _ernie(p, hc=hc, interleave_moe_layer_step=2)
    with pytest.raises(gguf_file.GGUFError, match=step + r".*runs layer 2 as a dense MLP"):
        configs.load(p)
    # a step that leaves no layer off-step (the only layer past the leading three is the 4th): llama.cpp and HF both
    # run layer 3 alone with experts
    p = str(tmp_path / "last.gguf")
    want = _ernie(p, hc={**hc, "moe_layer_start_index": 3, "moe_layer_interval": 2}, interleave_moe_layer_step=2,
                  leading_dense_block_count=3)
    assert gguf_writer.read_back(p, want)[0].moe_layers == want.moe_layers == (3,)
    # HF's moe_layer_end_index before the last layer (the converter does not write it): the last layer is dense, but
    # the loader requires its router
    p = str(tmp_path / "end.gguf")
    _ernie(p, hc={**hc, "moe_layer_end_index": 2})
    with pytest.raises(gguf_file.GGUFError, match=r"tensor 'blk\.3\.ffn_gate_inp\.weight' is missing: llama\.cpp's "
                                                  r"ernie4_5-moe loader creates the router and experts on every layer "
                                                  r"from 'ernie4_5-moe\.leading_dense_block_count' = 1 on"):
        configs.load(p)
    # a router below leading_dense_block_count: a tensor the loader does not create
    p = str(tmp_path / "lead.gguf")
    _ernie(p, hc={**hc, "moe_layer_start_index": 0}, leading_dense_block_count=1)
    with pytest.raises(gguf_file.GGUFError, match=r"tensor 'blk\.0\.ffn_gate_inp\.weight' is on layer 0, below "
                                                  r"'ernie4_5-moe\.leading_dense_block_count' = 1"):
        configs.load(p)


def test_ernie_moe_shared_mlp_sized_by_its_width_key(tmp_path):
    """ernie4-5.cpp sizes the shared MLP by expert_shared_feed_forward_length alone (get_key, optional) and creates
    its tensors only where that is > 0; expert_shared_count it never reads. glmbench sized it expert_shared_count x
    the experts' width: a file without the width key (which llama.cpp runs without a shared MLP, and refuses if it
    holds the shexp tensors) read with two shared experts, and a width of one expert with two."""
    p = str(tmp_path / "ok.gguf")
    want = _ernie(p)
    cfg, names = gguf_writer.read_back(p, want)
    assert cfg.shared_expert_intermediate_size == 64 and "blk.1.ffn_up_shexp.weight" in names
    # the width key missing: no shared MLP in llama.cpp, so the file's shexp tensors are ones it does not create
    p0 = str(tmp_path / "nowidth.gguf")
    _ernie(p0, drop=("expert_shared_feed_forward_length",))
    with pytest.raises(gguf_file.GGUFError, match=r"tensor 'blk\.1\.ffn_\w+_shexp\.weight' is a shared expert's, but "
                                                  r"the metadata gives layer 1 none \('ernie4_5-moe\.expert_shared_count' = 2\)"):
        configs.load(p0)
    # ... and the model written without them reads with none, whatever expert_shared_count says
    p1 = str(tmp_path / "none.gguf")
    want = _ernie(p1, drop=("expert_shared_feed_forward_length",), hc={**_ERNIE, "moe_num_shared_experts": 0})
    cfg, names = gguf_writer.read_back(p1, want)
    assert cfg.shared_expert_intermediate_size == 0 and not any("shexp" in n for n in names)
    # one expert's width with expert_shared_count 2: one shared expert of 32, as llama.cpp reads it
    p2 = str(tmp_path / "one.gguf")
    want = _ernie(p2, hc={**_ERNIE, "moe_num_shared_experts": 1}, expert_shared_feed_forward_length=32)
    cfg, _ = gguf_writer.read_back(p2, want)
    assert cfg.shared_expert_intermediate_size == 32
    # a width HF's ERNIE cannot build (no whole number of experts): one error naming the key
    p3 = str(tmp_path / "odd.gguf")
    _ernie(p3, expert_shared_feed_forward_length=48)
    with pytest.raises(gguf_file.GGUFError, match=r"metadata 'ernie4_5-moe\.expert_shared_feed_forward_length' = 48 "
                                                  r"is not a whole number of experts' widths"):
        configs.load(p3)


def test_gpt_oss_window_pattern_as_flags(tmp_path):
    """openai-moe.cpp reads its windows through load_swa_pattern too (flags per layer, or a period, default 2);
    glmbench refused a file with flags."""
    flags = [False, True, True, False]
    hc = dict(model_type="gpt_oss", vocab_size=128, hidden_size=64, num_hidden_layers=4, num_attention_heads=4,
              num_key_value_heads=2, head_dim=16, num_local_experts=4, num_experts_per_tok=2, intermediate_size=32,
              sliding_window=8, rms_norm_eps=1e-5, max_position_embeddings=4096,
              layer_types=["sliding_attention" if f else "full_attention" for f in flags])
    keys = {"attention.sliding_window": 8, "attention.key_length": 16, "attention.value_length": 16,
            "expert_count": 4, "expert_used_count": 2, "expert_feed_forward_length": 32,
            "attention.sliding_window_pattern": flags}
    p = str(tmp_path / "flags.gguf")
    gguf_writer.write_synth(p, hc, "gpt-oss", keys)
    assert configs.load(p).windowed_layers == (1, 2)


def test_qwen2moe_needs_experts_on_every_layer(tmp_path):
    """qwen2moe.cpp creates each layer's router, experts and shared expert required, on every layer: a file with a
    dense layer (HF's mlp_only_layers) does not load there. glmbench read it with that layer dense."""
    hc = dict(model_type="qwen2_moe", vocab_size=160, hidden_size=64, intermediate_size=96, num_hidden_layers=3,
              num_attention_heads=4, num_key_value_heads=2, rms_norm_eps=1e-6, max_position_embeddings=4096,
              moe_intermediate_size=32, num_experts=4, num_experts_per_tok=2, shared_expert_intermediate_size=48)
    keys = {"expert_count": 4, "expert_used_count": 2, "expert_feed_forward_length": 32,
            "expert_shared_feed_forward_length": 48, "feed_forward_length": 96}
    p = str(tmp_path / "ok.gguf")
    want = gguf_writer.write_synth(p, hc, "qwen2moe", keys)
    cfg, _ = gguf_writer.read_back(p, want)
    assert cfg.moe_layers == (0, 1, 2)
    # the same file with layer 1 a dense MLP of 96 (no router, experts or shared expert there)
    p = str(tmp_path / "dense1.gguf")
    w = gguf.GGUFWriter(p, "qwen2moe")
    gguf_writer.add_metadata(w, "qwen2moe", {**gguf_writer.gqa_meta(want), **keys})
    for n, t in gguf_file.read(str(tmp_path / "ok.gguf")).tensors.items():
        if not n.startswith("blk.1.ffn_") or n == "blk.1.ffn_norm.weight":
            w.add_tensor(n, np.zeros(t.shape, np.float16 if len(t.shape) >= 2 and "gate_inp" not in n else np.float32))
    for n, shape in (("ffn_gate", (96, 64)), ("ffn_up", (96, 64)), ("ffn_down", (64, 96))):
        w.add_tensor(f"blk.1.{n}.weight", np.zeros(shape, np.float16))
    gguf_writer.finish(w)
    with pytest.raises(gguf_file.GGUFError, match=r"tensor 'blk\.1\.ffn_gate_inp\.weight' is missing: llama\.cpp's "
                                                  r"qwen2moe loader requires experts on every layer"):
        configs.load(p)


@pytest.mark.parametrize("arch", ["nemotron_h", "nemotron_h_moe"])
def test_nemotron_h_needs_its_layernorm_epsilon_beside_the_rms_one(tmp_path, arch):
    """nemotron-h.cpp (nemotron_h_moe reuses its load_arch_hparams) reads attention.layer_norm_epsilon with get_key,
    required, and then prefers attention.layer_norm_rms_epsilon where the file has it: a file with the RMS key alone
    does not load. glmbench read it by the RMS key."""
    import llama_cpp_convert as lc
    from test_gguf_mamba import _SYNTH, _write
    p = str(tmp_path / "ok.gguf")
    _write(p, arch, _SYNTH[arch])
    g = gguf_file.read(p)
    base = dict(g.metadata)
    assert lc.hf_config_with(g, base)["layer_norm_epsilon"] == pytest.approx(1e-5)
    # both keys: the RMS one's value, as llama.cpp takes it
    assert lc.hf_config_with(g, base, **{"attention.layer_norm_rms_epsilon": 1e-6})["layer_norm_epsilon"] == \
        pytest.approx(1e-6)
    with pytest.raises(gguf_file.GGUFError, match=f"metadata '{arch}\\.attention\\.layer_norm_epsilon' is missing"):
        lc.hf_config_with(g, base, **{"attention.layer_norm_epsilon": None, "attention.layer_norm_rms_epsilon": 1e-6})


# ---- tensors the loader does not create -----------------------------------------------------------------------------
# llama_model_loader::done_getting_tensors (src/llama-model-loader.cpp) throws "wrong number of tensors; expected N,
# got M" where a file holds a tensor no create_tensor call of its architecture's loader made (a tensor created with
# TENSOR_NOT_REQUIRED, TENSOR_DUPLICATED or TENSOR_SKIP counts as created). glmbench counted such tensors as extra
# bytes (only shared experts and rope_freqs were refused).
_B = dict(vocab_size=128, hidden_size=64, intermediate_size=96, num_hidden_layers=2, num_attention_heads=4,
          num_key_value_heads=2, head_dim=16, max_position_embeddings=4096)
_KEYS = {"attention.key_length": 16, "attention.value_length": 16, "attention.layer_norm_epsilon": 1e-5,
         "attention.sliding_window": 4, "logit_scale": 0.0625}
_NOT_CREATED = r"tensor {t} is not one llama\.cpp's {arch} loader creates{why}; llama\.cpp \(llama_cpp_python-[\d.]+\) " \
               r"refuses a file holding a tensor its loader does not create \(llama_model_loader::done_getting_tensors: " \
               r"\"wrong number of tensors\"\)"


def _with(path, hc, arch, tensors=(), meta=None):
    """write_synth's file of HF config `hc` plus the tensors `tensors` ((name, array), ...)."""
    cfg = configs.from_hf(hc, "synth")
    w = gguf.GGUFWriter(path, arch)
    gguf_writer.add_metadata(w, arch, {**gguf_writer.gqa_meta(cfg), **_KEYS, **(meta or {})})
    gguf_writer.add_zero_tensors(w, cfg, arch)
    for n, a in tensors:
        w.add_tensor(n, a)
    gguf_writer.finish(w)
    return cfg


@pytest.mark.parametrize("mt,arch,extra", [
    ("gemma", "gemma", dict(rms_norm_eps=1e-6)),
    ("gemma2", "gemma2", dict(rms_norm_eps=1e-6, sliding_window=4, query_pre_attn_scalar=16)),
    ("cohere", "command-r", dict(layer_norm_eps=1e-5, logit_scale=0.0625)),
    ("cohere2", "cohere2", dict(layer_norm_eps=1e-5, sliding_window=4))])
def test_output_matrix_refused_where_the_loader_never_creates_it(tmp_path, mt, arch, extra):
    """src/models/gemma.cpp, gemma2.cpp, command-r.cpp, cohere2.cpp create no LLM_TENSOR_OUTPUT (the head is always
    token_embd, TENSOR_DUPLICATED): a file with an output.weight does not load in llama.cpp. glmbench priced it
    as extra bytes (gemma) or failed on an lm_head it has no name for (gemma2, command-r, cohere2)."""
    hc = dict(_B, model_type=mt, **extra)
    p = str(tmp_path / "tied.gguf")
    want = _with(p, hc, arch)
    assert gguf_writer.check_reads_as(p, want).tie_word_embeddings
    p = str(tmp_path / "head.gguf")
    _with(p, hc, arch, [("output.weight", np.zeros((128, 64), np.float16))])
    with pytest.raises(gguf_file.GGUFError, match=_NOT_CREATED.format(t=r"'output\.weight'", arch=arch, why="")):
        configs.load(p)


def test_kv_b_kept_beside_its_split_is_refused_in_an_mla_file(tmp_path, capsys):
    """src/models/deepseek2.cpp: with key_length_mla set (hparams.is_mla()) the loader creates attn_k_b + attn_v_b
    and never attn_kv_b; without it, attn_kv_b and never the split. A file keeping both is refused; glmbench read
    the joined one and priced the split as extra bytes (or read the split beside an unused attn_kv_b). Such a file
    is what ik_llama.cpp's converter writes: the error says what to do (mainline's converter, or ik_llama.cpp)."""
    pytest.importorskip("torch")
    pytest.importorskip("transformers")
    from test_model_hf import tiny_hf_model
    cfg, model = tiny_hf_model("glm4_moe_lite")
    sd = model.state_dict()
    kv_b = sd["model.layers.0.self_attn.kv_b_proj.weight"].numpy()
    p = str(tmp_path / "mla.gguf")
    gguf_writer.write(p, cfg, sd)
    c = configs.load(p)
    assert c.file_weights.extra_bytes == 0
    p = str(tmp_path / "kept.gguf")
    gguf_writer.write(p, cfg, sd, extra_tensors=[("blk.0.attn_kv_b.weight", kv_b)])
    with pytest.raises(gguf_file.GGUFError, match=_NOT_CREATED.format(
            t=r"'blk\.0\.attn_kv_b\.weight'", arch="deepseek2",
            why=r" in a file with 'deepseek2\.attention\.key_length_mla' \(MLA\): the loader creates "
                r"'blk\.0\.attn_k_b\.weight' and 'blk\.0\.attn_v_b\.weight' instead \(a file from "
                r"ik_llama\.cpp's converter keeps attn_kv_b beside them: convert the HF model with mainline "
                r"llama\.cpp's convert_hf_to_gguf\.py, which writes the split only, or run this file in "
                r"ik_llama\.cpp\)")):
        configs.load(p)
    # every layer keeping it, as ik_llama.cpp's converter writes them: one line on the CLI, naming what to do
    from glmbench.cli import main
    p = str(tmp_path / "ik.gguf")
    gguf_writer.write(p, cfg, sd, extra_tensors=[(f"blk.{i}.attn_kv_b.weight",
                                                 sd[f"model.layers.{i}.self_attn.kv_b_proj.weight"].numpy())
                                                for i in range(cfg.num_hidden_layers)])
    raw = open(p, "rb").read()
    for args in (["measure", p, "--depths", "0", "--n-prompt", "4", "--n-gen", "2", "--repeats", "1", "-q"],
                 ["report", "--model", p, "--out", str(tmp_path / "r")]):
        assert main(args) == 2
        err = capsys.readouterr().err.strip().splitlines()
        assert len(err) == 1 and p in err[0] and "'blk.0.attn_kv_b.weight'" in err[0] and \
            "convert_hf_to_gguf.py" in err[0], err
    assert open(p, "rb").read() == raw
    # a file from before MLA (no *_mla keys): attn_kv_b joined, as the loader creates it ...
    p = str(tmp_path / "joined.gguf")
    gguf_writer.write(p, cfg, sd, split_kv_b=False)
    j = configs.load(p)
    assert j.file_weights.extra_bytes == 0 and j.total_params() == c.total_params()
    # ... and the split beside it refused (the loader creates attn_kv_b alone there)
    H, R = cfg.num_attention_heads, cfg.kv_lora_rank
    p = str(tmp_path / "joined-split.gguf")
    gguf_writer.write(p, cfg, sd, split_kv_b=False, extra_tensors=[
        ("blk.1.attn_k_b.weight", np.zeros((H, R, cfg.qk_nope_head_dim), np.float32))])
    with pytest.raises(gguf_file.GGUFError, match=_NOT_CREATED.format(
            t=r"'blk\.1\.attn_k_b\.weight'", arch="deepseek2",
            why=r" in a file without 'deepseek2\.attention\.key_length_mla' \(not MLA\): the loader creates the "
                r"joined attn_kv_b instead")):
        configs.load(p)


def test_fused_tensors_parts_beside_the_fused_one_are_refused(tmp_path):
    """llama_model_base::create_tensor_qkv (src/llama-model.cpp) creates attn_q / attn_k / attn_v only where the
    file has no attn_qkv: a llama file holding both does not load. glmbench read the split and priced the fused
    one as extra bytes."""
    hc = dict(_B, model_type="llama", rms_norm_eps=1e-5)
    p = str(tmp_path / "both.gguf")
    _with(p, hc, "llama", [("blk.1.attn_qkv.weight", np.zeros((128, 64), np.float16))])
    with pytest.raises(gguf_file.GGUFError, match=_NOT_CREATED.format(
            t=r"'blk\.1\.attn_q\.weight'", arch="llama",
            why=r" beside the fused 'blk\.1\.attn_qkv\.weight', which the loader takes instead")):
        configs.load(p)


def test_optional_tensors_the_loader_creates_still_load(tmp_path):
    """What a loader creates optionally loads and is priced as extra bytes: llama_model::load_tensors' generic
    pass creates each weight's NVFP4 .scale / .input_scale ({1}, TENSOR_NOT_REQUIRED) for every architecture,
    where the weight was created (`if (!layer.wq_s && layer.wq)`)."""
    hc = dict(_B, model_type="qwen3", rms_norm_eps=1e-6)
    p = str(tmp_path / "scales.gguf")
    _with(p, hc, "qwen3", [("blk.0.attn_q.scale", np.ones(1, np.float32)),
                           ("blk.1.ffn_down.input_scale", np.ones(1, np.float32))])
    c = configs.load(p)
    assert c.file_weights.extra_bytes == 8
    # a scale beside a weight the file (and the architecture) does not have is not created: refused
    p = str(tmp_path / "stray.gguf")
    _with(p, hc, "qwen3", [("blk.0.ffn_gate_exps.scale", np.ones(1, np.float32))])
    with pytest.raises(gguf_file.GGUFError, match=r"tensor 'blk\.0\.ffn_gate_exps\.scale' is not one llama\.cpp's "
                                                  r"qwen3 loader creates"):
        configs.load(p)


def test_created_tensor_table_is_the_vendored_loaders():
    """glmbench/models/llama_cpp_tensors.py is what tools/llama_cpp_tensor_table.py reads from the vendored
    llama.cpp (every create_tensor(tn(LLM_TENSOR_X, ...)) of each architecture's load_arch_tensors, the
    create_tensor_qkv / create_tensor_gate_up_exps helpers expanded), and the rule it serves is that source's."""
    import importlib.util
    import os
    import llama_cpp_convert
    src = llama_cpp_convert.source()
    if src is None:
        pytest.skip(llama_cpp_convert.skip_reason())
    root = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    spec = importlib.util.spec_from_file_location("tt", os.path.join(root, "tools", "llama_cpp_tensor_table.py"))
    tt = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(tt)
    from glmbench.models import llama_cpp_tensors as lt
    archs = sorted(set(gguf_file.ARCHITECTURES) | set(gguf_file.VL_TEXT_ARCHITECTURES))
    tab, scales, fused = tt.table(src, archs)
    assert {a: frozenset(n) for a, n in tab.items()} == lt.CREATED and scales == lt.GENERIC_SCALES
    assert frozenset(fused["qkv"]) == lt.FUSED_QKV and frozenset(fused["gate_up_exps"]) == lt.FUSED_GATE_UP_EXPS
    loader = open(os.path.join(src, "src", "llama-model-loader.cpp")).read()
    assert "wrong number of tensors; expected %d, got %d" in loader
    # the cases above, in the source itself
    assert "LLM_TENSOR_OUTPUT," not in open(os.path.join(src, "src", "models", "gemma2.cpp")).read()
    assert "output.weight" not in lt.CREATED["gemma2"] and "output.weight" in lt.CREATED["gemma3"]
    assert "blk.%d.attn_kv_b.weight" in lt.CREATED["deepseek2"] and "blk.%d.ffn_up.bias" not in lt.CREATED["arcee"]
    assert "blk.%d.ssm_a" in lt.CREATED["nemotron_h"]     # (a name without a suffix: tn(LLM_TENSOR_SSM_A, i))

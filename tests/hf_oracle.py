"""HF transformers' tiny models as the oracle of glmbench's forward pass (test helper): their weights re-drawn at unit
scale, and the logits of a prefill then token-by-token decode steps (teacher forcing) in both, compared relatively.

tests/test_model_hf.py's TINY configs and tiny_hf_model build the models most tests use; the family tests
(tests/test_dots1.py, tests/test_afmoe_nemotron.py, tests/test_gemma3n_hunyuan_phimoe.py, ...) build their own and
run glmbench on a folder or GGUF made from them. torch is imported only when a function needs it."""
import inspect

import numpy as np


def unit_scale(model, seed=0, norm_center=1.0):
    """`model`'s weights re-drawn in place, in parameter order from a generator seeded `seed`: matrices N(0, 1/fan_in)
    (activations stay at unit scale, routers see O(1) logits), 1-D tensors `norm_center` + N(0, 0.1^2) (norms around
    1, not exactly, so a skipped norm weight or bias shows; 0 for (1 + w) norms), Apertus's per-layer xIELU alpha_p /
    alpha_n N(0, 1); then the routers' e_score_correction_bias buffers N(0, 0.1^2), the spread of the sigmoid scores,
    so the bias changes which experts win. Returns the model in eval mode."""
    import torch
    g = torch.Generator().manual_seed(seed)
    with torch.no_grad():
        for name, p in model.named_parameters():
            if name.endswith(("act_fn.alpha_p", "act_fn.alpha_n")):
                p.copy_(torch.randn(p.shape, generator=g))
            elif p.ndim == 1:
                p.copy_(norm_center + 0.1 * torch.randn(p.shape, generator=g))
            else:
                p.copy_(torch.randn(p.shape, generator=g) / p.shape[-1] ** 0.5)
        for name, b in model.named_buffers():
            if name.endswith("e_score_correction_bias"):
                b.copy_(0.1 * torch.randn(b.shape, generator=g))
    return model.eval()


def random_model(hc, seed=0, norm_center=1.0):
    """HF's model of config `hc` (a PretrainedConfig, set to eager attention) built after torch.manual_seed(seed),
    its weights then re-drawn by unit_scale(model, seed, norm_center); in eval mode."""
    import torch
    import transformers
    hc._attn_implementation = "eager"
    torch.manual_seed(seed)
    return unit_scale(transformers.AutoModelForCausalLM.from_config(hc), seed, norm_center)


def saved_and_loaded(hf, path, max_context=32):
    """HF model `hf` saved as transformers saves it (save_pretrained) into folder `path`: every stored byte on a tensor
    of the config read from the folder, all float32. Returns (that config's file_weights, glmbench's model of the
    folder: checkpoint.load_model with a float32 KV cache of `max_context` tokens)."""
    from glmbench.models import checkpoint, configs
    hf.save_pretrained(str(path))
    fw = configs.load(str(path)).file_weights
    assert fw.extra_bytes == fw.skipped_bytes == 0 and fw.main_type == "F32"
    return fw, checkpoint.load_model(str(path), kv="f32", max_context=max_context)


def hf_logits(model, prompt, steps):
    """Logits of a prefill of `prompt` and then one decode step per token of `steps` (teacher forcing)."""
    import torch
    # transformers 5.x names the cache `cache` (`past_key_values` is deprecated); 4.x only knows the latter
    kw = "cache" if "cache" in inspect.signature(model.forward).parameters else "past_key_values"
    out = []
    with torch.no_grad():
        r = model(torch.tensor([prompt]), use_cache=True)
        out.append(r.logits[0].numpy().copy())
        for t in steps:
            r = model(torch.tensor([[t]]), use_cache=True, **{kw: getattr(r, kw)})
            out.append(r.logits[0, -1].numpy().copy())
    return out


def rel_err(a, b):
    return float(np.max(np.abs(np.asarray(a, np.float64) - b)) / np.max(np.abs(b)))


def glm_logits(m, prompt, steps):
    """glmbench.Model `m`'s logits of the same prefill and decode steps."""
    out = [m.prefill(np.array(prompt))]
    for t in steps:
        out.append(m.decode(t))
    return out


def logit_errors(hf, m, prompt, steps):
    """The relative error of glmbench.Model `m`'s logits against HF model `hf`'s, a prefill of `prompt` then one
    decode step per token of `steps`: [prefill's, step 1's, ...] (glmbench runs first, then HF)."""
    got = glm_logits(m, list(prompt), list(steps))
    want = hf_logits(hf, list(prompt), list(steps))
    return [rel_err(a, b) for a, b in zip(got, want)]


def assert_close_by_step(got, want, rtol, label, finite=True):
    """Each of the logits `got` (a prefill's, then each decode step's) finite (unless `finite` is False) and within
    relative error `rtol` of `want`'s, the failing one named: "LABEL prefill" or "LABEL decode step I"."""
    for i, (a, b) in enumerate(zip(got, want)):
        if finite:
            assert np.all(np.isfinite(a))
        err = rel_err(a, b)
        assert err < rtol, f"{label} {'prefill' if i == 0 else f'decode step {i}'}: relative error {err:.2e}"

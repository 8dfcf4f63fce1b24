"""Benchmark: reading the metadata of a large GGUF (glmbench.models.configs.load -> ModelConfig with
every tensor's type and bytes) vs gguf.GGUFReader on the same file.

The file is GLM-4.7-Flash-shaped (deepseek2 metadata, 47 blocks + 1 MTP block, 64 experts, a
154,880-token tokenizer as llama.cpp's converter writes it) with Q4_K/Q6_K/F32 tensor types; its
tensor data is a hole (a sparse file: the header is written by gguf.GGUFWriter, then the file is
extended to its full size with truncate), so the disk holds only the header but every read goes
through the same mmap of a ~18 GB file.

    python bench/bench_gguf.py [--dir /tmp] [--repeats 5] [--out bench/results/gguf_metadata_<date>.md]
"""
from __future__ import annotations

import argparse
import datetime
import os
import platform
import statistics
import sys
import tempfile
import time

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

import gguf  # noqa: E402

from glmbench.models import configs  # noqa: E402

T = gguf.GGMLQuantizationType


def add_glm_hparams(w, cfg) -> None:
    """GLM-4.7-Flash's hyperparameters under llama.cpp's deepseek2 keys (MLA, MoE with a sigmoid
    router), shared by the benchmarks that write a GLM-shaped GGUF (this one, bench_llamacpp.py)."""
    w.add_context_length(cfg.max_position_embeddings)
    w.add_embedding_length(cfg.hidden_size)
    w.add_feed_forward_length(cfg.intermediate_size)
    w.add_head_count(cfg.n_heads)
    w.add_head_count_kv(1)
    w.add_rope_freq_base(cfg.rope_theta)
    w.add_layer_norm_rms_eps(cfg.rms_norm_eps)
    w.add_vocab_size(cfg.vocab_size)
    if cfg.q_lora_rank:
        w.add_q_lora_rank(cfg.q_lora_rank)
    w.add_kv_lora_rank(cfg.kv_lora_rank)
    w.add_key_length(cfg.kv_lora_rank + cfg.qk_rope_head_dim)
    w.add_value_length(cfg.kv_lora_rank)
    w.add_key_length_mla(cfg.head_dim)
    w.add_value_length_mla(cfg.v_head_dim)
    w.add_rope_dimension_count(cfg.qk_rope_head_dim)
    w.add_leading_dense_block_count(cfg.first_k_dense_replace)
    w.add_expert_count(cfg.n_routed_experts)
    w.add_expert_used_count(cfg.n_experts_per_tok)
    w.add_expert_feed_forward_length(cfg.moe_intermediate_size)
    w.add_expert_shared_count(cfg.n_shared_experts)
    w.add_expert_weights_scale(cfg.routed_scaling_factor)
    w.add_expert_weights_norm(cfg.norm_topk_prob)
    w.add_expert_gating_func(gguf.ExpertGatingFuncType.SIGMOID)


def write_sparse(path: str, vocab: int = 154880) -> int:
    cfg = configs.load("glm-4.7-flash")
    arch = "deepseek2"
    w = gguf.GGUFWriter(path, arch)
    L = cfg.n_layers
    w.add_name("GLM-4.7-Flash")
    w.add_block_count(L + 1)
    w.add_nextn_predict_layers(1)
    add_glm_hparams(w, cfg)
    w.add_tokenizer_model("gpt2")
    w.add_token_list([f"tok{i:06d}" for i in range(vocab)])
    w.add_token_types([1] * vocab)
    w.add_token_merges([f"a{i} b{i}" for i in range(vocab // 2)])
    names = gguf.get_tensor_name_map(gguf.MODEL_ARCH.DEEPSEEK2, L + 1)
    data_bytes = 0
    shapes = dict(cfg.tensor_shapes())
    for i in range(L, L + 1):  # the MTP block: a copy of the last layer's shapes
        for k, s in list(shapes.items()):
            if k.startswith(f"model.layers.{L - 1}."):
                shapes[k.replace(f"layers.{L - 1}.", f"layers.{i}.")] = s
    for k, s in shapes.items():
        if k.endswith("e_score_correction_bias"):
            g = k.split(".mlp.")[0].replace("model.layers.", "blk.") + ".exp_probs_b.bias"
        else:
            base, suf = (k[:-7], ".weight") if k.endswith(".weight") else (k[:-5], ".bias") if k.endswith(".bias") else (k, ".weight")
            g = names.get_name(base) + suf
        t = T.F32 if len(s) < 2 or "ffn_gate_inp" in g else T.Q6_K if ("down" in g or "output" in g) else T.Q4_K
        if s[-1] % 256:
            t = T.Q8_0 if s[-1] % 32 == 0 else T.F16
        block, bb = gguf.GGML_QUANT_SIZES[t]
        n = int(np.prod(s)) // block * bb
        data_bytes += (n + 31) // 32 * 32
        w.add_tensor_info(g, tuple(s[:-1]) + (s[-1] // block * bb,), np.dtype(np.uint8), n, raw_dtype=t)
    w.write_header_to_file()
    w.write_kv_data_to_file()
    w.write_ti_data_to_file()
    w.close()
    pad = lambda n: (n + 31) // 32 * 32  # GGUFWriter aligns the data and every tensor to 32 bytes
    end = pad(os.path.getsize(path)) + data_bytes
    with open(path, "r+b") as f:
        f.truncate(end)
    return end


def timed(fn, repeats):
    out = []
    for _ in range(repeats):
        t0 = time.perf_counter()
        fn()
        out.append(time.perf_counter() - t0)
    return out


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--dir", default=tempfile.gettempdir())
    ap.add_argument("--repeats", type=int, default=5)
    ap.add_argument("--out", default=None)
    a = ap.parse_args(argv)
    path = os.path.join(a.dir, "glmbench-bench-sparse.gguf")
    try:
        size = write_sparse(path)
        st = os.stat(path)
        cfg = configs.load(path)
        ours = timed(lambda: configs.load(path), a.repeats)
        theirs = timed(lambda: gguf.GGUFReader(path), max(1, min(2, a.repeats)))
        import subprocess
        code = ("import time; from glmbench.models import configs; t = time.perf_counter(); "
                f"configs.load({path!r}); print(time.perf_counter() - t)")
        env = dict(os.environ, PYTHONPATH=os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
        cold = [float(subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=env,
                                     check=True).stdout) for _ in range(3)]
        fw = cfg.file_weights
        lines = [
            f"# GGUF metadata read, {datetime.date.today().isoformat()}",
            "",
            f"machine: {platform.node()} {platform.processor() or platform.machine()}, {os.cpu_count()} CPUs, "
            f"Python {platform.python_version()}, gguf {getattr(gguf, '__version__', '')}".rstrip(", "),
            f"command: python bench/bench_gguf.py --repeats {a.repeats}",
            "",
            f"file: GLM-4.7-Flash-shaped deepseek2 GGUF, {len(configs.gguf_file.read(path).tensors)} tensors, "
            f"154,880-token tokenizer, apparent size {size / 1e9:.2f} GB (sparse: {st.st_blocks * 512 / 1e6:.1f} MB on disk)",
            f"config: {cfg.model_type}, {cfg.n_layers} layers, weights {fw.model_bytes / 1e9:.2f} GB "
            f"({', '.join(f'{k} {v / 1e9:.2f} GB' for k, v in fw.type_counts().items())}), MTP layer "
            f"{fw.skipped_bytes / 1e9:.2f} GB not counted",
            "",
            "| reader | median s | min s | max s | runs |",
            "|---|---|---|---|---|",
            f"| glmbench configs.load (header + config + per-tensor bytes) | {statistics.median(ours):.3f} | "
            f"{min(ours):.3f} | {max(ours):.3f} | {len(ours)} |",
            f"| glmbench configs.load, first call in a fresh interpreter (imports gguf) | "
            f"{statistics.median(cold):.3f} | {min(cold):.3f} | {max(cold):.3f} | {len(cold)} |",
            f"| gguf.GGUFReader (header only) | {statistics.median(theirs):.3f} | {min(theirs):.3f} | "
            f"{max(theirs):.3f} | {len(theirs)} |",
            "",
            "Tensor data is never read (memory-mapped; the data region is a hole).",
        ]
        text = "\n".join(lines) + "\n"
        print(text)
        if a.out:
            sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
            from glmbench.results.records import atomic_write_text
            atomic_write_text(a.out, text)
    finally:
        if os.path.exists(path):
            os.remove(path)


if __name__ == "__main__":
    main()

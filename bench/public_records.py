"""Turn published benchmark results (pasted llama-bench / sweep-bench tables and one vLLM console
block, each file with a sidecar naming its source) into glmbench records shipped with the package:
glmbench/data/public/<source>.json, one file per source, every record with its source URL, date,
command, runtime and options. Run once when the published set changes:

    python bench/public_records.py DIR_WITH_THE_PUBLISHED_FILES

Each pasted file is read by glmbench's importer (glmbench.results.importers.read, no flags: as a
user's `glmbench import FILE` reads it), which gives every record's numbers and what the paste
states: model, card, card count, test, depth, weights, backend, flash attention, u-batch. SOURCES
below holds only what the paste does not state, copied from each file's sidecar: the attribution
(URL, date, command, note), the runtime's era / build options per table, and the run's defaults
for fields the paste leaves unset (llama-bench's fa 0 / ub 512 / f16 KV of 2024). A default given
for a field the importer did infer must agree with it, else an error naming the file; so must the
runtime the sidecar names and the one the import implies (its tool and backend).
"""
from __future__ import annotations

import json
import os
import re
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))
from glmbench.results import importers  # noqa: E402

HERE = os.path.dirname(os.path.abspath(__file__))
OUT = os.path.join(HERE, "..", "glmbench", "data", "public")

XD = "https://github.com/XiongjieDai/GPU-Benchmarks-on-LLM-Inference/blob/aa72e0e/LLaMA%203/"
XD_CMD = "llama-bench -p 512,1024,4096,8192 -n 512,1024,4096,8192 -m ./models/{m}/ggml-model-{q}.gguf"
XD_NOTE = ("XiongjieDai/GPU-Benchmarks-on-LLM-Inference, notebooks run 2024-05; llama-bench defaults: "
           "fa off, f16 KV, n_ubatch 512; 'pp N' = N-token prompt from empty, 'tg N' = mean over N tokens from empty")
GB10 = "https://github.com/ggml-org/llama.cpp/blob/4c7e9893c4ca8eec35d032726d14b74fae76cff8/benches/dgx-spark.md"
GB10_CMD = "llama-bench -ngl 99 -ub 2048 -fa 1 -mmap 0 -p 2048 -n 32 -d 0,4096,8192,16384,32768 (from the table's columns)"


def _xd(file, nb):
    nb_dir = "Gaming%20GPUs" if "a6000" not in file else "Professional%20GPUs"
    m = "70B-v3" if "70b" in file else "8B-v3"
    q = "Q4_K_M" if "Q4_K_M" in file else "f16"
    return dict(file=file, runtime="llama.cpp",
                options={"fa": "0", "ubatch": "512", "era": "2024-cublas"},
                url=XD + nb_dir + "/" + nb, date="2024-05", command=XD_CMD.format(m=m, q=q), note=XD_NOTE)


# source id -> what the paste does not state (from its sidecar): the runtime (checked against the one
# the import implies), the runtime options (`options`, or `tables`: per table in the file's order),
# and the attribution. An option's "fa" / "ubatch" is the run's setting where the paste leaves it
# unset, and must agree with the paste where it states it.
SOURCES = {
    "llama3-8b-f16_rtx3090": _xd("llama3-8b-f16_rtx3090_xiongjiedai.md", "3090_v3.ipynb"),
    "llama3-8b-q4km_rtx3090": _xd("llama3-8b-Q4_K_M_rtx3090_xiongjiedai.md", "3090_v3.ipynb"),
    "llama3-8b-f16_rtx4090": _xd("llama3-8b-f16_rtx4090_xiongjiedai.md", "4090_v3.ipynb"),
    "llama3-8b-q4km_rtx4090": _xd("llama3-8b-Q4_K_M_rtx4090_xiongjiedai.md", "4090_v3.ipynb"),
    "llama3-8b-f16_a6000": _xd("llama3-8b-f16_a6000_xiongjiedai.md", "A6000_v3.ipynb"),
    "llama3-8b-q4km_a6000": _xd("llama3-8b-Q4_K_M_a6000_xiongjiedai.md", "A6000_v3.ipynb"),
    "llama3-70b-q4km_a6000": _xd("llama3-70b-Q4_K_M_a6000_xiongjiedai.md", "A6000_v3.ipynb"),
    "llama3-8b-f16_2x3090": _xd("llama3-8b-f16_2x3090_xiongjiedai.md", "3090_2_v3.ipynb"),
    "llama3-8b-q4km_2x3090": _xd("llama3-8b-Q4_K_M_2x3090_xiongjiedai.md", "3090_2_v3.ipynb"),
    "llama3-70b-q4km_2x3090": _xd("llama3-70b-Q4_K_M_2x3090_xiongjiedai.md", "3090_2_v3.ipynb"),
    "llama3-8b-f16_2x4090": _xd("llama3-8b-f16_2x4090_xiongjiedai.md", "4090_2_v3.ipynb"),
    "llama3-8b-q4km_2x4090": _xd("llama3-8b-Q4_K_M_2x4090_xiongjiedai.md", "4090_2_v3.ipynb"),
    "llama3-70b-q4km_2x4090": _xd("llama3-70b-Q4_K_M_2x4090_xiongjiedai.md", "4090_2_v3.ipynb"),
    "dsv2lite-q4_0_rtx3090ti_ik-cuda": dict(
        file="deepseek-v2-lite-Q4_0_rtx3090ti_ik-pr598-cuda-fmoe.md", runtime="ik_llama.cpp",
        options={"fa": "1", "ubatch": "512", "mla": "3"}, url="https://github.com/ikawrakow/ik_llama.cpp/pull/598",
        date="2025-07-13", command="llama-sweep-bench --model DeepSeek-V2-Lite-Q4_0.gguf -c 20480 -fa -mla 3 -ngl 99 --threads 1 --warmup-batch -fmoe",
        note="comment by ubergarm on ik_llama.cpp PR 598, main@c53cb652, CUDA; token_embd/output may be iq6_k"),
    "dsv2lite-q4_0_rtx3090ti_ik-vulkan": dict(
        file="deepseek-v2-lite-Q4_0_rtx3090ti_ik-pr598-vulkan.md", runtime="llama.cpp-vulkan",
        options={"fa": "1", "ubatch": "512", "coopmat": "khr"}, url="https://github.com/ikawrakow/ik_llama.cpp/pull/598",
        date="2025-07-13", command="llama-sweep-bench --model DeepSeek-V2-Lite-Q4_0.gguf -c 20480 -fa -mla 3 -ngl 99 --threads 1 --warmup-batch",
        note="ik_llama.cpp's Vulkan backend (PR 598 build fcp/vulkan_01@3ef6de29, KHR_coopmat), no -fmoe; "
             "filed under the Vulkan runtime model (the ggml Vulkan backend)"),
    "dsv2lite-q4_0_rtx4080_ik-pr386": dict(
        file="deepseek-v2-lite-q4_0_RTX4080_ik-llama-sweep_ik-llama-pr386-ikawrakow.md", runtime="ik_llama.cpp",
        tables=[{"fa": "1", "ubatch": "4096", "mla": "2"}, {"fa": "1", "ubatch": "4096", "mla": "3"}],
        url="https://github.com/ikawrakow/ik_llama.cpp/pull/386", date="2025-05-06",
        command="llama-sweep-bench -ub 4096 (PP 4096, TG 1024); table 1 main branch -mla 2 -fa, table 2 the PR -mla 3 -fa",
        note="PR 386 'FlashMLA-3 for DeepSeek models on CUDA' by ikawrakow; exact command not printed"),
    "dsv2lite-q4_0_rtx4080_ik-pr589": dict(
        file="deepseek-v2-lite-q4_0_RTX4080_ik-llama-sweep_ik-llama-pr589-ikawrakow.md", runtime="ik_llama.cpp",
        tables=[{"fa": "1", "ubatch": "4096", "mla": "3"}, {"fa": "1", "ubatch": "4096", "mla": "3"}],
        url="https://github.com/ikawrakow/ik_llama.cpp/pull/589", date="2025-07-06",
        command="llama-sweep-bench -mla 3 -fa -fmoe -b 4096 -ub 4096; table 1 main branch, table 2 the PR",
        note="PR 589 'CUDA: small PP performance improvement for MoE models' by ikawrakow"),
    "llama3.1-8b-iq4_ks_rtx4080_ik-pr374": dict(
        file="llama-3.1-8b-instruct-iq4_ks_RTX4080_ik-llama-sweep_ik-llama-pr374-ikawrakow.md", runtime="ik_llama.cpp",
        tables=[{"ubatch": "512", "era": "before-pr374"}, {"ubatch": "512", "era": "current"}],
        url="https://github.com/ikawrakow/ik_llama.cpp/pull/374", date="2025-05-04",
        command="llama-sweep-bench (flags not printed; PP 512, TG 128); table 1 main branch (IQ4_KS prefill by dequantize + cuBLAS), table 2 the PR (MMQ for IQ4_KS)",
        note="PR 374 'CUDA: MMQ for IQ4_KS' by ikawrakow. Weights IQ4_KS (ik_llama.cpp-only, 4.25 bpw); "
             "flash attention not stated (the runtime's default is used)"),
    "llama3.1-8b-q4_0_rtx5090_cuda": dict(
        file="llama-3.1-8b-q4_0_RTX5090_CUDA_ik-llama-disc562-jeffbolznv.md", runtime="llama.cpp",
        options={"fa": "1", "ubatch": "512"}, url="https://github.com/ikawrakow/ik_llama.cpp/discussions/562",
        date="2025-07-01", command="llama-bench -m meta-llama-3.1-8b-instruct-q4_0.gguf -fa 1 -n 0 -p 1024 --prio 1 -r 1 -d 1024-15360+1024",
        note="reply by jeffbolznv in ik_llama.cpp discussion 562; mainline llama.cpp CUDA build, Windows"),
    "llama3.1-8b-q4_0_rtx5090_vulkan": dict(
        file="llama-3.1-8b-q4_0_RTX5090_Vulkan_ik-llama-disc562-jeffbolznv.md", runtime="llama.cpp-vulkan",
        tables=[{"fa": "1", "ubatch": "512", "coopmat": "nv2"}, {"fa": "1", "ubatch": "512", "coopmat": "khr"}],
        url="https://github.com/ikawrakow/ik_llama.cpp/discussions/562", date="2025-07-01",
        command="llama-bench -m meta-llama-3.1-8b-instruct-q4_0.gguf -fa 1 -n 0 -p 1024 --prio 1 -r 1 -d 1024-15360+1024 (table 1 NV_coopmat2, table 2 KHR_coopmat)",
        note="reply by jeffbolznv in ik_llama.cpp discussion 562; mainline llama.cpp Vulkan build, Windows, driver r575"),
    "gpt-oss-20b_gb10": dict(
        file="gpt-oss-20b_GB10-DGX-Spark_llama.cpp-benches.md", runtime="llama.cpp", options={"fa": "1", "ubatch": "2048"}, url=GB10, date="2025-11-02",
        command=GB10_CMD, note="llama.cpp's own DGX Spark benchmark page, build 2f68ce7cf (6918)"),
    "gpt-oss-120b_gb10": dict(
        file="gpt-oss-120b_GB10-DGX-Spark_llama.cpp-benches.md", runtime="llama.cpp", options={"fa": "1", "ubatch": "2048"}, url=GB10, date="2025-11-02",
        command=GB10_CMD, note="llama.cpp's own DGX Spark benchmark page, build 2f68ce7cf (6918)"),
    "qwen3-coder-30b-a3b-q8_0_gb10": dict(
        file="qwen3-coder-30b-a3b-q8_0_GB10-DGX-Spark_llama.cpp-benches.md", runtime="llama.cpp", options={"fa": "1", "ubatch": "2048"}, url=GB10,
        date="2025-11-02", command=GB10_CMD,
        note="llama.cpp's own DGX Spark benchmark page, build 2f68ce7cf (6918); Qwen3-Coder-30B-A3B has Qwen3-30B-A3B's "
             "architecture (the built-in qwen3-30b-a3b config)"),
    "qwen2.5-coder-7b-q8_0_gb10": dict(
        file="qwen2.5-coder-7b-q8_0_GB10-DGX-Spark_llama.cpp-benches.md", runtime="llama.cpp", options={"fa": "1", "ubatch": "2048"}, url=GB10,
        date="2025-11-02", command=GB10_CMD, note="llama.cpp's own DGX Spark benchmark page, build 2f68ce7cf (6918)"),
    "gemma-3-4b-q4_0_gb10": dict(
        file="gemma-3-4b-q4_0_GB10-DGX-Spark_llama.cpp-benches.md", runtime="llama.cpp", options={"fa": "1", "ubatch": "2048"}, url=GB10,
        date="2025-11-02", command=GB10_CMD, note="llama.cpp's own DGX Spark benchmark page, build 2f68ce7cf (6918)"),
    "gpt-oss-20b_rtxpro6000_partial": dict(
        file="gpt-oss-20b_RTXPRO6000-Blackwell-WS_llama.cpp-pr16991-PARTIAL.md", runtime="llama.cpp",
        options={"fa": "1", "ubatch": "2048"}, url="https://github.com/ggml-org/llama.cpp/pull/16991", date="2025-11",
        command="llama-bench -ngl 99 -ub 2048 -fa 1 (implied by the columns; not printed)",
        note="a 7-row excerpt of a table in llama.cpp PR 16991 'CUDA: add stream-based concurrency'; whether master or the PR ran is not visible"),
}
# Left out: llama-3.1-8b_RTX4080_Vulkan-vs-CUDA-sweep (the weight type is not stated and the CUDA
# table's runtime is unknown); the batched-bench tables (several streams; not used by the fit).

VLLM = dict(
    file="qwen3-30b-a3b-bf16_h100_vllm-pr23151.log", runtime="vllm", url="https://github.com/vllm-project/vllm/pull/23151", date="2025-08-19",
    command="VLLM_USE_DEEP_GEMM=1 vllm serve Qwen/Qwen3-30B-A3B; benchmarks/benchmark_serving.py --dataset-name random "
            "--random-input 2048 --random-output 1024 --max-concurrency 10 --num-prompt 100",
    note="vLLM PR 23151, the 'WO tuned configs (TP=1, EP=1, on H100)' block; H100 SXM or PCIe not stated (SXM assumed)")

# the import's fields an option checks or fills: option -> (record field, type)
_STATED = {"fa": ("flash_attn", int), "ubatch": ("n_ubatch", int)}
# record fields copied from the import as they are
_KEEP = ("model", "device", "hardware", "n_cards", "split", "weights", "weights_note", "flash_attn", "n_ubatch",
         "type_k", "backend", "tool", "build_commit", "build_number", "test", "n_prompt", "n_gen", "n_depth",
         "n_streams", "avg_ts", "stddev_ts")


def _runtime_of(r):
    """The runtime model a record belongs to, from what the import read (tool, backend)."""
    tool = str(r.get("tool") or "")
    if "vllm" in tool:
        return "vllm"
    if r.get("backend") == "Vulkan":
        return "llama.cpp-vulkan"
    return "ik_llama.cpp" if "ik_llama.cpp" in tool else "llama.cpp"


def _tables_of(recs):
    """The import's records split into the file's tables (by heading label, else by a gap in lines)."""
    out, last = [], None
    for r in recs:
        ln = int(str(r["source"]).rsplit(":", 1)[1])
        key = r.get("label")
        if not out or (last is not None and (ln > last[0] + 1 or key != last[1])):
            out.append([])
        out[-1].append(r)
        last = (ln, key)
    return out


def _imported(meta, src_dir):
    path = os.path.join(src_dir, meta["file"])
    try:
        return path, importers.read(path)
    except importers.FormatError as e:
        raise SystemExit(str(e)) from None


def _records(sid, meta, src_dir):
    path, recs = _imported(meta, src_dir)
    # single-stream benches only: the batched-bench tables (several streams) are not used by the fit
    recs = [r for r in recs if r.get("tool") != "llama-batched-bench"]
    tables = _tables_of(recs)
    per_table = meta.get("tables") or [meta["options"]] * len(tables)
    if len(per_table) != len(tables):
        raise SystemExit(f"{path}: {len(tables)} tables, the metadata describes {len(per_table)}")
    out = []
    for ti, (rows, opts) in enumerate(zip(tables, per_table)):
        if opts is None:
            continue
        for r in rows:
            where = f"{meta['file']}:{str(r['source']).rsplit(':', 1)[1]}"
            rt = _runtime_of(r)
            if rt != meta["runtime"]:
                raise SystemExit(f"{where}: the import implies runtime {rt!r} (tool {r.get('tool')!r}, backend "
                                 f"{r.get('backend')!r}), the sidecar says {meta['runtime']!r}")
            if r.get("hardware") is None or r.get("model") is None or r.get("weights") is None:
                raise SystemExit(f"{where}: the import did not find the card, model or weights")
            rec = {"evidence": "measured", "public_source": sid, "runtime": rt}
            rec.update((k, r[k]) for k in _KEEP if r.get(k) is not None)
            from_sidecar = []
            for o, (field, typ) in _STATED.items():
                if o not in opts:
                    continue
                if rec.get(field) is None:
                    rec[field] = typ(opts[o])
                    from_sidecar.append(field)
                elif typ(rec[field]) != typ(opts[o]):
                    raise SystemExit(f"{where}: the paste says {field} {rec[field]}, the sidecar's options {o}={opts[o]}")
            if rec.get("type_k") is None:       # llama.cpp's default KV type (no -ctk in the paste)
                rec["type_k"] = "f16"
                from_sidecar.append("type_k")
            ropts = {k: v for k, v in opts.items() if k not in _STATED}
            if rec.get("flash_attn") is not None:
                ropts["fa"] = str(int(rec["flash_attn"]))
            if rec.get("n_ubatch") is not None:
                ropts["ubatch"] = str(int(rec["n_ubatch"]))
            rec["runtime_options"] = ropts
            if len(tables) > 1:
                rec["table"] = ti + 1
            rec.update(source=meta["url"], date=meta["date"], command=meta["command"], note=meta["note"],
                       line=where, inferred=r.get("inferred") or {})
            if from_sidecar:
                rec["from_sidecar"] = from_sidecar
            out.append(rec)
    return out


def _vllm(src_dir):
    """The vLLM console block as the fit's decode point: the import's serving record gives the
    concurrency B and the mean TPOT; the aggregate decode of B streams is B / TPOT, each stream at
    the mean prompt length the block states (depth) generating its mean output length."""
    path, recs = _imported(VLLM, src_dir)
    out = []
    for r in recs:
        where = f"{VLLM['file']}:{str(r['source']).rsplit(':', 1)[1]}"
        if _runtime_of(r) != "vllm" or not r.get("tpot_s") or not r.get("max_concurrency"):
            raise SystemExit(f"{where}: not a vLLM serving block with a mean TPOT and a maximum concurrency")
        B, tpot = int(r["max_concurrency"]), float(r["tpot_s"])
        out.append({"evidence": "measured", "public_source": "qwen3-30b-a3b-bf16_h100_vllm", "runtime": "vllm",
                    "runtime_options": {}, "model": r["model"], "device": r["device"], "hardware": r["hardware"],
                    "n_cards": r["n_cards"], "split": r["split"], "weights": r["weights"], "type_k": r["weights"],
                    "tool": r["tool"], "test": "tg", "n_prompt": 0, "n_gen": r["n_gen"], "n_depth": r["n_prompt"],
                    "n_streams": B, "avg_ts": round(B / tpot, 2),
                    "source": VLLM["url"], "date": VLLM["date"], "command": VLLM["command"],
                    "note": VLLM["note"] + f"; aggregate decode of {B} streams = {B} / mean TPOT {tpot * 1000:g} ms, "
                                           f"each generating {r['n_gen']} tokens (mean) after a {r['n_prompt']}-token "
                                           "prompt (mean); KV cache in the weights' bf16 (vLLM's default 'auto')",
                    "line": where, "inferred": r.get("inferred") or {}, "from_sidecar": ["type_k"]})
    return out


def main(argv):
    if len(argv) != 1 or not os.path.isdir(argv[0]):
        raise SystemExit(__doc__)
    src = argv[0]
    os.makedirs(OUT, exist_ok=True)
    n = 0
    for sid, meta in SOURCES.items():
        recs = _records(sid, meta, src)
        _write(sid, recs)
        n += len(recs)
    recs = _vllm(src)
    _write("qwen3-30b-a3b-bf16_h100_vllm", recs)
    n += len(recs)
    print(f"{n} records from {len(SOURCES) + 1} sources -> {os.path.normpath(OUT)}")


def _write(sid, recs):
    path = os.path.join(OUT, sid + ".json")
    tmp = path + ".tmp"
    with open(tmp, "w") as f:
        f.write("[\n" + ",\n".join(json.dumps(r, sort_keys=False) for r in recs) + "\n]\n")
    os.replace(tmp, path)


if __name__ == "__main__":
    main(sys.argv[1:])

"""Turn published benchmark results (pasted llama-bench / sweep-bench tables and one vLLM console
block, each file with a sidecar naming its source) into glmbench records shipped with the package:
glmbench/data/public/<source>.json, one file per source, every record with its source URL, date,
command, runtime and options. Run once when the published set changes:

    python bench/public_records.py DIR_WITH_THE_PUBLISHED_FILES

What each table is (runtime, options, card, model, weights) is stated per file in SOURCES below,
from the file's sidecar and the text around the table; nothing is read from outside the table
but the numbers. The table rows are parsed here (llama-bench markdown in both its 2024 `pp 512`
and its 2025 `pp2048 @ d4096` layouts, sweep-bench tables); a table whose row does not parse is an
error naming the file and line.
"""
from __future__ import annotations

import json
import os
import re
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
OUT = os.path.join(HERE, "..", "glmbench", "data", "public")

XD = "https://github.com/XiongjieDai/GPU-Benchmarks-on-LLM-Inference/blob/aa72e0e/LLaMA%203/"
XD_CMD = "llama-bench -p 512,1024,4096,8192 -n 512,1024,4096,8192 -m ./models/{m}/ggml-model-{q}.gguf"
XD_NOTE = ("XiongjieDai/GPU-Benchmarks-on-LLM-Inference, notebooks run 2024-05; llama-bench defaults: "
           "fa off, f16 KV, n_ubatch 512; 'pp N' = N-token prompt from empty, 'tg N' = mean over N tokens from empty")
GB10 = "https://github.com/ggml-org/llama.cpp/blob/4c7e9893c4ca8eec35d032726d14b74fae76cff8/benches/dgx-spark.md"
GB10_CMD = "llama-bench -ngl 99 -ub 2048 -fa 1 -mmap 0 -p 2048 -n 32 -d 0,4096,8192,16384,32768 (from the table's columns)"


def _xd(file, device, n, model, weights, nb):
    nb_dir = "Gaming%20GPUs" if "a6000" not in file else "Professional%20GPUs"
    m = "70B-v3" if "70b" in model else "8B-v3"
    q = "Q4_K_M" if weights == "Q4_K_M" else "f16"
    return dict(file=file, runtime="llama.cpp", device=device, n_cards=n, model=model, weights=weights,
                options={"fa": "0", "ubatch": "512", "era": "2024-cublas"}, url=XD + nb_dir + "/" + nb, date="2024-05",
                command=XD_CMD.format(m=m, q=q), note=XD_NOTE)


# source id -> what the file is. `tables`: options per table in the file's order (None: skip it).
SOURCES = {
    "llama3-8b-f16_rtx3090": _xd("llama3-8b-f16_rtx3090_xiongjiedai.md", "NVIDIA GeForce RTX 3090", 1, "llama-3-8b", "f16", "3090_v3.ipynb"),
    "llama3-8b-q4km_rtx3090": _xd("llama3-8b-Q4_K_M_rtx3090_xiongjiedai.md", "NVIDIA GeForce RTX 3090", 1, "llama-3-8b", "Q4_K_M", "3090_v3.ipynb"),
    "llama3-8b-f16_rtx4090": _xd("llama3-8b-f16_rtx4090_xiongjiedai.md", "NVIDIA GeForce RTX 4090", 1, "llama-3-8b", "f16", "4090_v3.ipynb"),
    "llama3-8b-q4km_rtx4090": _xd("llama3-8b-Q4_K_M_rtx4090_xiongjiedai.md", "NVIDIA GeForce RTX 4090", 1, "llama-3-8b", "Q4_K_M", "4090_v3.ipynb"),
    "llama3-8b-f16_a6000": _xd("llama3-8b-f16_a6000_xiongjiedai.md", "NVIDIA RTX A6000", 1, "llama-3-8b", "f16", "A6000_v3.ipynb"),
    "llama3-8b-q4km_a6000": _xd("llama3-8b-Q4_K_M_a6000_xiongjiedai.md", "NVIDIA RTX A6000", 1, "llama-3-8b", "Q4_K_M", "A6000_v3.ipynb"),
    "llama3-70b-q4km_a6000": _xd("llama3-70b-Q4_K_M_a6000_xiongjiedai.md", "NVIDIA RTX A6000", 1, "llama-3-70b", "Q4_K_M", "A6000_v3.ipynb"),
    "llama3-8b-f16_2x3090": _xd("llama3-8b-f16_2x3090_xiongjiedai.md", "NVIDIA GeForce RTX 3090", 2, "llama-3-8b", "f16", "3090_2_v3.ipynb"),
    "llama3-8b-q4km_2x3090": _xd("llama3-8b-Q4_K_M_2x3090_xiongjiedai.md", "NVIDIA GeForce RTX 3090", 2, "llama-3-8b", "Q4_K_M", "3090_2_v3.ipynb"),
    "llama3-70b-q4km_2x3090": _xd("llama3-70b-Q4_K_M_2x3090_xiongjiedai.md", "NVIDIA GeForce RTX 3090", 2, "llama-3-70b", "Q4_K_M", "3090_2_v3.ipynb"),
    "llama3-8b-f16_2x4090": _xd("llama3-8b-f16_2x4090_xiongjiedai.md", "NVIDIA GeForce RTX 4090", 2, "llama-3-8b", "f16", "4090_2_v3.ipynb"),
    "llama3-8b-q4km_2x4090": _xd("llama3-8b-Q4_K_M_2x4090_xiongjiedai.md", "NVIDIA GeForce RTX 4090", 2, "llama-3-8b", "Q4_K_M", "4090_2_v3.ipynb"),
    "llama3-70b-q4km_2x4090": _xd("llama3-70b-Q4_K_M_2x4090_xiongjiedai.md", "NVIDIA GeForce RTX 4090", 2, "llama-3-70b", "Q4_K_M", "4090_2_v3.ipynb"),
    "dsv2lite-q4_0_rtx3090ti_ik-cuda": dict(
        file="deepseek-v2-lite-Q4_0_rtx3090ti_ik-pr598-cuda-fmoe.md", runtime="ik_llama.cpp",
        device="NVIDIA GeForce RTX 3090 Ti", n_cards=1, model="deepseek-v2-lite", weights="q4_0",
        options={"fa": "1", "ubatch": "512", "mla": "3"}, url="https://github.com/ikawrakow/ik_llama.cpp/pull/598",
        date="2025-07-13", command="llama-sweep-bench --model DeepSeek-V2-Lite-Q4_0.gguf -c 20480 -fa -mla 3 -ngl 99 --threads 1 --warmup-batch -fmoe",
        note="comment by ubergarm on ik_llama.cpp PR 598, main@c53cb652, CUDA; token_embd/output may be iq6_k"),
    "dsv2lite-q4_0_rtx3090ti_ik-vulkan": dict(
        file="deepseek-v2-lite-Q4_0_rtx3090ti_ik-pr598-vulkan.md", runtime="llama.cpp-vulkan",
        device="NVIDIA GeForce RTX 3090 Ti", n_cards=1, model="deepseek-v2-lite", weights="q4_0",
        options={"fa": "1", "ubatch": "512", "coopmat": "khr"}, url="https://github.com/ikawrakow/ik_llama.cpp/pull/598",
        date="2025-07-13", command="llama-sweep-bench --model DeepSeek-V2-Lite-Q4_0.gguf -c 20480 -fa -mla 3 -ngl 99 --threads 1 --warmup-batch",
        note="ik_llama.cpp's Vulkan backend (PR 598 build fcp/vulkan_01@3ef6de29, KHR_coopmat), no -fmoe; "
             "filed under the Vulkan runtime model (the ggml Vulkan backend)"),
    "dsv2lite-q4_0_rtx4080_ik-pr386": dict(
        file="deepseek-v2-lite-q4_0_RTX4080_ik-llama-sweep_ik-llama-pr386-ikawrakow.md", runtime="ik_llama.cpp",
        device="NVIDIA GeForce RTX 4080", n_cards=1, model="deepseek-v2-lite", weights="q4_0",
        tables=[{"fa": "1", "ubatch": "4096", "mla": "2"}, {"fa": "1", "ubatch": "4096", "mla": "3"}],
        url="https://github.com/ikawrakow/ik_llama.cpp/pull/386", date="2025-05-06",
        command="llama-sweep-bench -ub 4096 (PP 4096, TG 1024); table 1 main branch -mla 2 -fa, table 2 the PR -mla 3 -fa",
        note="PR 386 'FlashMLA-3 for DeepSeek models on CUDA' by ikawrakow; exact command not printed"),
    "dsv2lite-q4_0_rtx4080_ik-pr589": dict(
        file="deepseek-v2-lite-q4_0_RTX4080_ik-llama-sweep_ik-llama-pr589-ikawrakow.md", runtime="ik_llama.cpp",
        device="NVIDIA GeForce RTX 4080", n_cards=1, model="deepseek-v2-lite", weights="q4_0",
        tables=[{"fa": "1", "ubatch": "4096", "mla": "3"}, {"fa": "1", "ubatch": "4096", "mla": "3"}],
        url="https://github.com/ikawrakow/ik_llama.cpp/pull/589", date="2025-07-06",
        command="llama-sweep-bench -mla 3 -fa -fmoe -b 4096 -ub 4096; table 1 main branch, table 2 the PR",
        note="PR 589 'CUDA: small PP performance improvement for MoE models' by ikawrakow"),
    "llama3.1-8b-iq4_ks_rtx4080_ik-pr374": dict(
        file="llama-3.1-8b-instruct-iq4_ks_RTX4080_ik-llama-sweep_ik-llama-pr374-ikawrakow.md", runtime="ik_llama.cpp",
        device="NVIDIA GeForce RTX 4080", n_cards=1, model="llama-3.1-8b", weights="iq4_xs",
        tables=[{"ubatch": "512", "era": "before-pr374"}, {"ubatch": "512", "era": "current"}],
        url="https://github.com/ikawrakow/ik_llama.cpp/pull/374", date="2025-05-04",
        command="llama-sweep-bench (flags not printed; PP 512, TG 128); table 1 main branch (IQ4_KS prefill by dequantize + cuBLAS), table 2 the PR (MMQ for IQ4_KS)",
        note="PR 374 'CUDA: MMQ for IQ4_KS' by ikawrakow. Weights IQ4_KS (ik_llama.cpp-only, 4.25 bpw) are modelled as iq4_xs "
             "(the same 4.25 bpw i-quant family); flash attention not stated (the runtime's default is used)"),
    "llama3.1-8b-q4_0_rtx5090_cuda": dict(
        file="llama-3.1-8b-q4_0_RTX5090_CUDA_ik-llama-disc562-jeffbolznv.md", runtime="llama.cpp",
        device="NVIDIA GeForce RTX 5090", n_cards=1, model="llama-3.1-8b", weights="q4_0",
        options={"fa": "1", "ubatch": "512"}, url="https://github.com/ikawrakow/ik_llama.cpp/discussions/562",
        date="2025-07-01", command="llama-bench -m meta-llama-3.1-8b-instruct-q4_0.gguf -fa 1 -n 0 -p 1024 --prio 1 -r 1 -d 1024-15360+1024",
        note="reply by jeffbolznv in ik_llama.cpp discussion 562; mainline llama.cpp CUDA build, Windows"),
    "llama3.1-8b-q4_0_rtx5090_vulkan": dict(
        file="llama-3.1-8b-q4_0_RTX5090_Vulkan_ik-llama-disc562-jeffbolznv.md", runtime="llama.cpp-vulkan",
        device="NVIDIA GeForce RTX 5090", n_cards=1, model="llama-3.1-8b", weights="q4_0",
        tables=[{"fa": "1", "ubatch": "512", "coopmat": "nv2"}, {"fa": "1", "ubatch": "512", "coopmat": "khr"}],
        url="https://github.com/ikawrakow/ik_llama.cpp/discussions/562", date="2025-07-01",
        command="llama-bench -m meta-llama-3.1-8b-instruct-q4_0.gguf -fa 1 -n 0 -p 1024 --prio 1 -r 1 -d 1024-15360+1024 (table 1 NV_coopmat2, table 2 KHR_coopmat)",
        note="reply by jeffbolznv in ik_llama.cpp discussion 562; mainline llama.cpp Vulkan build, Windows, driver r575"),
    "gpt-oss-20b_gb10": dict(
        file="gpt-oss-20b_GB10-DGX-Spark_llama.cpp-benches.md", runtime="llama.cpp", device="NVIDIA GB10", n_cards=1,
        model="gpt-oss-20b", weights="mxfp4", options={"fa": "1", "ubatch": "2048"}, url=GB10, date="2025-11-02",
        command=GB10_CMD, note="llama.cpp's own DGX Spark benchmark page, build 2f68ce7cf (6918)", tables_max=1),
    "gpt-oss-120b_gb10": dict(
        file="gpt-oss-120b_GB10-DGX-Spark_llama.cpp-benches.md", runtime="llama.cpp", device="NVIDIA GB10", n_cards=1,
        model="gpt-oss-120b", weights="mxfp4", options={"fa": "1", "ubatch": "2048"}, url=GB10, date="2025-11-02",
        command=GB10_CMD, note="llama.cpp's own DGX Spark benchmark page, build 2f68ce7cf (6918)", tables_max=1),
    "qwen3-coder-30b-a3b-q8_0_gb10": dict(
        file="qwen3-coder-30b-a3b-q8_0_GB10-DGX-Spark_llama.cpp-benches.md", runtime="llama.cpp", device="NVIDIA GB10",
        n_cards=1, model="qwen3-30b-a3b", weights="q8_0", options={"fa": "1", "ubatch": "2048"}, url=GB10,
        date="2025-11-02", command=GB10_CMD, tables_max=1,
        note="llama.cpp's own DGX Spark benchmark page, build 2f68ce7cf (6918); Qwen3-Coder-30B-A3B has Qwen3-30B-A3B's "
             "architecture (the built-in qwen3-30b-a3b config)"),
    "qwen2.5-coder-7b-q8_0_gb10": dict(
        file="qwen2.5-coder-7b-q8_0_GB10-DGX-Spark_llama.cpp-benches.md", runtime="llama.cpp", device="NVIDIA GB10",
        n_cards=1, model="qwen2.5-coder-7b", weights="q8_0", options={"fa": "1", "ubatch": "2048"}, url=GB10,
        date="2025-11-02", command=GB10_CMD, tables_max=1, note="llama.cpp's own DGX Spark benchmark page, build 2f68ce7cf (6918)"),
    "gemma-3-4b-q4_0_gb10": dict(
        file="gemma-3-4b-q4_0_GB10-DGX-Spark_llama.cpp-benches.md", runtime="llama.cpp", device="NVIDIA GB10",
        n_cards=1, model="gemma-3-4b", weights="q4_0", options={"fa": "1", "ubatch": "2048"}, url=GB10,
        date="2025-11-02", command=GB10_CMD, tables_max=1, note="llama.cpp's own DGX Spark benchmark page, build 2f68ce7cf (6918)"),
    "gpt-oss-20b_rtxpro6000_partial": dict(
        file="gpt-oss-20b_RTXPRO6000-Blackwell-WS_llama.cpp-pr16991-PARTIAL.md", runtime="llama.cpp",
        device="NVIDIA RTX PRO 6000 Blackwell Workstation Edition", n_cards=1, model="gpt-oss-20b", weights="mxfp4",
        options={"fa": "1", "ubatch": "2048"}, url="https://github.com/ggml-org/llama.cpp/pull/16991", date="2025-11",
        command="llama-bench -ngl 99 -ub 2048 -fa 1 (implied by the columns; not printed)",
        note="a 7-row excerpt of a table in llama.cpp PR 16991 'CUDA: add stream-based concurrency'; whether master or the PR ran is not visible"),
}
# Left out: llama-3.1-8b_RTX4080_Vulkan-vs-CUDA-sweep (the weight type is not stated and the CUDA
# table's runtime is unknown); the batched-bench tables (several streams; not used by the fit).

VLLM = dict(
    file="qwen3-30b-a3b-bf16_h100_vllm-pr23151.log", runtime="vllm", device="NVIDIA H100", n_cards=1,
    model="qwen3-30b-a3b", weights="bf16", url="https://github.com/vllm-project/vllm/pull/23151", date="2025-08-19",
    command="VLLM_USE_DEEP_GEMM=1 vllm serve Qwen/Qwen3-30B-A3B; benchmarks/benchmark_serving.py --dataset-name random "
            "--random-input 2048 --random-output 1024 --max-concurrency 10 --num-prompt 100",
    note="vLLM PR 23151, the 'WO tuned configs (TP=1, EP=1, on H100)' block; H100 SXM or PCIe not stated (SXM assumed)")

_ROW = re.compile(r"^\|(.*)\|\s*$")
_LB_TEST = re.compile(r"^(pp|tg)\s*(\d+)(?:\s*@\s*d(\d+))?$")


def _tables(path):
    """[(header cells, [(line, cells), ...]), ...] of the markdown tables in a file."""
    out, cur = [], None
    with open(path) as f:
        lines = f.read().splitlines()
    for i, ln in enumerate(lines, 1):
        m = _ROW.match(ln.strip())
        if not m:
            cur = None
            continue
        cells = [c.strip() for c in m.group(1).split("|")]
        if cur is None:
            cur = (cells, [])
            out.append(cur)
        elif all(set(c) <= set("-: ") for c in cells):
            continue
        else:
            cur[1].append((i, cells))
    return out


def _num(s, where):
    try:
        return float(s.split("±")[0].strip())
    except ValueError:
        raise SystemExit(f"{where}: not a number: {s!r}") from None


def _records(sid, meta, src_dir):
    path = os.path.join(src_dir, meta["file"])
    tables = _tables(path)
    if meta.get("tables_max"):
        tables = tables[:meta["tables_max"]]
    per_table = meta.get("tables") or [meta["options"]] * len(tables)
    if len(per_table) != len(tables):
        raise SystemExit(f"{path}: {len(tables)} tables, the metadata describes {len(per_table)}")
    recs = []
    for ti, ((head, rows), opts) in enumerate(zip(tables, per_table)):
        if opts is None:
            continue
        low = [h.lower() for h in head]
        base = {"evidence": "measured", "public_source": sid, "runtime": meta["runtime"], "runtime_options": dict(opts),
                "device": meta["device"], "n_cards": meta["n_cards"], "split": "layer" if meta["n_cards"] > 1 else "none",
                "model": meta["model"], "weights": meta["weights"], "type_k": "f16",
                "source": meta["url"], "date": meta["date"], "command": meta["command"], "note": meta["note"]}
        if "fa" in opts:
            base["flash_attn"] = int(opts["fa"])
        if "ubatch" in opts:
            base["n_ubatch"] = int(opts["ubatch"])
        if len(tables) > 1:
            base["table"] = ti + 1
        for ln, cells in rows:
            where = f"{meta['file']}:{ln}"
            if "test" in low:
                t = cells[low.index("test")]
                m = _LB_TEST.match(t)
                if not m:
                    raise SystemExit(f"{path}:{ln}: test {t!r} is not pp N / tg N [@ dN]")
                kind, n, d = m.group(1), int(m.group(2)), int(m.group(3) or 0)
                v = _num(cells[low.index("t/s")], where)
                r = dict(base, test=kind, n_prompt=n if kind == "pp" else 0, n_gen=n if kind == "tg" else 0,
                         n_depth=d, avg_ts=v, line=where)
                recs.append(r)
            elif "s_pp t/s" in low:
                pp, tg, kv = (int(_num(cells[low.index(k)], where)) for k in ("pp", "tg", "n_kv"))
                recs.append(dict(base, test="pp", n_prompt=pp, n_gen=0, n_depth=kv,
                                 avg_ts=_num(cells[low.index("s_pp t/s")], where), line=where))
                recs.append(dict(base, test="tg", n_prompt=0, n_gen=tg, n_depth=kv,
                                 avg_ts=_num(cells[low.index("s_tg t/s")], where), line=where))
            else:
                raise SystemExit(f"{path}:{ln}: neither a llama-bench nor a sweep-bench table")
    return recs


def _vllm(src_dir):
    path = os.path.join(src_dir, VLLM["file"])
    text = open(path).read()
    m = re.search(r"Mean TPOT \(ms\):\s+([\d.]+)", text)
    c = re.search(r"Maximum request concurrency:\s+(\d+)", text)
    if not m or not c:
        raise SystemExit(f"{path}: no 'Mean TPOT (ms)' / 'Maximum request concurrency' line")
    line = text[:m.start()].count("\n") + 1
    B = int(c.group(1))
    return [{"evidence": "measured", "public_source": "qwen3-30b-a3b-bf16_h100_vllm", "runtime": "vllm",
             "runtime_options": {}, "device": VLLM["device"], "n_cards": 1, "split": "none", "model": VLLM["model"],
             "weights": "bf16", "type_k": "bf16", "test": "tg", "n_prompt": 0, "n_gen": 1024, "n_depth": 2048,
             "n_streams": B, "avg_ts": round(B * 1000.0 / float(m.group(1)), 2),
             "source": VLLM["url"], "date": VLLM["date"], "command": VLLM["command"],
             "note": VLLM["note"] + f"; aggregate decode of {B} streams = {B} x 1000 / mean TPOT {m.group(1)} ms, "
                                   "each generating 1024 tokens after a 2048-token prompt",
             "line": f"{VLLM['file']}:{line}"}]


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

"""Turn published benchmark results (pasted llama-bench / sweep-bench tables and one vLLM console
block, each file with a sidecar naming its source) into glmbench records shipped with the package:
glmbench/data/public/<source>.json, one file per source, every record with its source URL, date,
command, runtime and options. Run once when the published set changes:

    python bench/public_records.py DIR_WITH_THE_PUBLISHED_FILES [--out DIR] [--generic]

--out DIR writes the records there instead of glmbench/data/public/ (a set of someone else's
published results, to check the runtime models on: `bench/bench_public_fit.py --check DIR`).

Each pasted file is read by glmbench's importer (glmbench.results.importers.read, no flags: as a
user's `glmbench compare FILE` reads it), which gives every record's numbers and what the paste
states: model, card, card count, test, depth, weights, backend, flash attention, u-batch. SOURCES
below holds only what the paste does not state, copied from each file's sidecar: the attribution
(URL, date, command, note), the runtime's era / build options per table, and the run's defaults
for fields the paste leaves unset (llama-bench's fa 0 / ub 512 / f16 KV of 2024). A default given
for a field the importer did infer must agree with it, else an error naming the file; so must the
runtime the sidecar names and the one the import implies (its tool and backend).

Any other pasted file of DIR (not in SOURCES; every `<name>.md|.log|.json|.jsonl|.csv` but a
README) is read the generic way (`generic_records`): the importer's numbers and what the paste
states; the attribution from its sidecar `<name>.txt` ("key: value" lines, keys in any case:
URL / source_url / thread, date / posted, command / Command line / Server + Client, runtime / engine /
software, GPU / hardware / setup (a count there names the box: the command's CUDA_VISIBLE_DEVICES,
-sm none, -dev or -tp the cards the run used), model / model file / quant, notes; `options:` name=value
for what no paste states, e.g. era=2024-cublas or coopmat=khr);
the runtime model from the import's tool and backend, which must agree with the
sidecar's runtime text (ik_llama.cpp, Vulkan, vLLM, llama.cpp) where it names one, a text naming CUDA
and Vulkan or two forks leaving each table's own backend and tool to tell (so must the
model its model line names, where it names exactly one built-in); the runtime
options (fa, ubatch, mla) and KV type from the paste first, else the sidecar's command flags
(-fa / --flash-attn, -ub / --ubatch-size, -mla, -ctk / --cache-type-k), else its runtime / notes
text ("n_ubatch 512", "fa off", "f16 KV"); a paste / command disagreement is an error naming the
file and line: that file is left out (said on an `error, left out FILE: ...` line and in the run's
last line) and the other files are still read, as is any file the importer fails on.
llama-bench's -fa auto (-1, its default since mid-2025) is fa=1 (llama.cpp runs flash attention
on CUDA and Vulkan where the head sizes allow); a markdown table of an older build without an fa
column reads as fa=0 (importers.FA_AUTO_BUILD). The source id is the file's stem, cleaned. A file without a sidecar, or whose card,
model or weights neither the paste nor the sidecar states (or that states a card outside the GPU
catalog, a model no built-in or config beside the pastes is), is skipped with one line saying why.
Records of runs partly on the CPU (--n-cpu-moe, -ot, -nkvo, -ngl below the layer count: the paste's
columns, else its command line or the sidecar's) are left out (--keep-batched, the check's reading, keeps
them as `offload_run` records with their placement and the sidecar's `host:` line), and a serving result is filed under
the server it measured (its --backend: SGLang's client on a vLLM server is vLLM's; an SGLang server, of which there is no runtime model, is left out); what
is left out is said in the records' note, or in the skip line where nothing is kept. So are runs on a
backend no runtime model is of (ROCm / HIP, Metal, SYCL, the CPU, RPC to another host: the paste's
backend, else the sidecar's runtime text) and runs on mixed cards (a 4090 + a 3090); Vulkan's coopmat
is the ggml_vulkan device line's "matrix cores" where the paste has one.
--generic reads every file that way, SOURCES' too (to compare; tests/test_public_check.py).

HF config.json files in DIR (`*.json` with `model_type` and `architectures`, as the published set
ships llama3-8b.json) are not pastes: a paste whose model is no built-in, where its sidecar's model
line or its file name names one of them (the config's file stem or `_name_or_path`, word by word),
is read with that config; its records' `model` is `configs/<file>`, the config copied into OUT's
configs/, where bench_public_fit.py --check reads it.
"""
from __future__ import annotations

import argparse
import functools
import glob
import json
import os
import re
import shutil
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))
from glmbench.models import configs  # noqa: E402
from glmbench.predict import calibrate as cal  # noqa: E402
from glmbench.predict import costmodel as cm  # noqa: E402
from glmbench.predict import hardware  # noqa: E402
from glmbench.predict import runtime as rtm  # noqa: E402
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
         "n_streams", "pl", "avg_ts", "stddev_ts")


def _runtime_of(r):
    """The runtime model a record belongs to, from what the import read (tool, backend; for a
    serving benchmark the server its --backend names: SGLang's client measures a vLLM server with
    --backend vllm, and vLLM's an SGLang one with --backend sglang)."""
    tool = str(r.get("tool") or "")
    if r.get("test") == "serve":
        if r.get("server"):     # the server's own command line in the paste (importers.server_of), or the sidecar
            return r["server"]
        sb = str(r.get("serve_backend") or "").lower()
        for engine in ("sglang", "vllm"):
            if engine in sb:
                return engine
        return "sglang" if "sglang" in tool else "vllm"
    if "vllm" in tool:
        return "vllm"
    if "sglang" in tool:        # SGLang's bench_one_batch: its engine in-process
        return "sglang"
    if r.get("backend") == "Vulkan":
        return "llama.cpp-vulkan"
    return "ik_llama.cpp" if "ik_llama.cpp" in tool else "llama.cpp"


def _blank_between(path, a, b, cache={}):
    """Lines a+1 .. b-1 of `path` are all blank or llama.cpp's log lines (llama-bench's progress lines among
    them: a table a blank line or stderr's lines split is one table)."""
    if path not in cache:
        try:
            # llama-bench --progress lines and llama.cpp's other log lines between rows (stderr in a terminal's
            # copy; importers.is_log_line): none
            unquoted = [re.sub(r"^[ \t]*(?:>[ \t]?)+", "", x) for x in text_of(path).splitlines()]
            cache[path] = ["" if importers.is_log_line(x) else x.strip() for x in unquoted]
        except OSError:
            cache[path] = None
    lines = cache[path]
    return bool(lines) and all(not x for x in lines[a:b - 1])


def _tables_of(recs):
    """The import's records split into the file's tables (by heading label, else by a gap in lines
    that is not only blank lines)."""
    out, last = [], None
    for r in recs:
        path, ln = str(r["source"]).rsplit(":", 1)
        ln = int(ln)
        key = r.get("label")
        if not out or (last is not None and ((ln > last[0] + 1 and not _blank_between(path, last[0], ln))
                                             or key != last[1])):
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
            why = _no_model_backend(r)
            if why:
                raise SystemExit(f"{where}: {why}")
            if r.get("coopmat") and opts.get("coopmat") and r["coopmat"] != opts["coopmat"]:
                raise SystemExit(f"{where}: the paste's ggml_vulkan line says coopmat {r['coopmat']}, the metadata "
                                 f"coopmat={opts['coopmat']}")
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
            fork = rtm.vulkan_fork(r) if rt == "llama.cpp-vulkan" else None
            if fork and ropts.get("fork", fork[0]) != fork[0]:
                raise SystemExit(f"{where}: {fork[1]}, the metadata fork={ropts['fork']}")
            if fork:
                ropts["fork"] = fork[0]
                rec["inferred"] = {**(r.get("inferred") or {}), "fork": f"{fork[0]} ({fork[1]})"}
            if rec.get("flash_attn") is not None:
                ropts["fa"] = str(int(rec["flash_attn"]))
            if rec.get("n_ubatch") is not None:
                ropts["ubatch"] = str(int(rec["n_ubatch"]))
            rec["runtime_options"] = ropts
            if len(tables) > 1:
                rec["table"] = ti + 1
            rec.update(source=meta["url"], date=meta["date"], command=meta["command"], note=meta["note"],
                       line=where, inferred=rec.get("inferred") or r.get("inferred") or {})
            if from_sidecar:
                rec["from_sidecar"] = from_sidecar
            out.append(rec)
    return out


def _vllm_kv(weights):
    """vLLM's KV cache with --kv-cache-dtype auto: the model's dtype, the weights' own where they are
    a float type, else (an fp8 / MXFP4 / AWQ checkpoint: quantized weights, bf16 activations) bf16."""
    return weights if weights in ("bf16", "f16", "f32") else "bf16"


def _offload_fields(r, side_cmd=None) -> dict:
    """Where a run partly on the CPU kept its tensors, as costmodel.Offload takes them: `n_gpu_layers`
    (-ngl), `n_cpu_moe` (--n-cpu-moe), `override_tensor` (the -ot patterns sent to the CPU buffer; --cpu-moe
    is `exps`), `offload_other` (overrides to another buffer than the CPU, which it cannot say), and
    `no_kv_offload` (-nkvo): the record's own, else its sidecar command line's."""
    a = importers._command_args(side_cmd, {}) if side_cmd else {}

    def pick(k):
        v = r.get(k)
        return v if v is not None else a.get(k)
    out = {}
    for k in ("n_gpu_layers", "n_cpu_moe"):
        v = pick(k)
        if v is not None and re.fullmatch(r"\d+", str(v).strip()):
            out[k] = int(v)
    pats, other = [], []
    for part in re.split(r"[;,]", str(pick("tensor_buft_overrides") or "")):
        part = re.sub(r"\s*\(--cpu-moe\)\s*$", "", part.strip())
        if not part or part.lower() in ("none", "auto"):
            continue
        pat, _, buf = part.rpartition("=")
        (pats if buf.strip().upper().startswith("CPU") and pat else other).append(pat or part)
    if pats:
        out["override_tensor"] = pats
    if other:
        out["offload_other"] = other
    if pick("no_kv_offload") in (True, 1, "1", "true"):
        out["no_kv_offload"] = True
    return out


def _offloaded(r, layers, side_cmd=None):
    """Why a llama.cpp record ran partly on the CPU (the runtime models are of all-GPU runs), or None:
    the record's own fields, else the sidecar's command line (`side_cmd`, where the paste states none of them)."""
    if side_cmd:
        a = importers._command_args(side_cmd, {})
        said = {k: a[k] for k in ("n_cpu_moe", "tensor_buft_overrides", "no_kv_offload", "n_gpu_layers")
                if a.get(k) is not None and r.get(k) is None and "," not in str(a[k])}
        if said.get("n_cpu_moe") is not None or said.get("n_gpu_layers") is not None:
            try:
                said.update((k, int(said[k])) for k in ("n_cpu_moe", "n_gpu_layers") if k in said)
            except ValueError:
                said.pop("n_cpu_moe", None), said.pop("n_gpu_layers", None)
        why = _offloaded(dict(r, **said), layers) if said else None
        own = _offloaded(r, layers)
        return why + " (the sidecar's command line)" if why and not own else own
    if int(r.get("n_cpu_moe") or 0) > 0:
        return f"n_cpu_moe {r['n_cpu_moe']} (expert weights on the CPU)"
    ot = str(r.get("tensor_buft_overrides") or "none").strip()
    if ot.lower() not in ("none", "", "auto"):
        return f"tensor overrides {ot!r} (-ot: tensors on another buffer)"
    if r.get("no_kv_offload") is True:
        return "no_kv_offload (the KV cache on the CPU)"
    ngl = r.get("n_gpu_layers")
    if isinstance(ngl, int) and layers and 0 <= ngl < layers:
        return f"n_gpu_layers {ngl} of the model's {layers} layers"
    return None


# serving engines a runtime model is of: a serving benchmark's result (vLLM's bench serve / benchmark_serving,
# SGLang's bench_serving) of one of them is a decode point of B streams (_vllm)
SERVING = ("vllm", "sglang")


def _vllm(src_dir, meta=VLLM, sid="qwen3-30b-a3b-bf16_h100_vllm", recs=None):
    """A serving benchmark's block (vLLM's console block, a vLLM or SGLang result file) as the fit's
    decode point: the import's serving record gives the concurrency B and the mean TPOT; the aggregate
    decode of B streams is B / TPOT, each stream at the mean prompt length the block states (depth)
    generating its mean output length. The runtime is the server measured (_runtime_of)."""
    if recs is None:
        _, recs = _imported(meta, src_dir)
    out = []
    for r in recs:
        where = f"{meta['file']}:{str(r['source']).rsplit(':', 1)[1]}"
        engine = _runtime_of(r)
        if engine not in cm.list_runtimes() or not cal.closed_loop(r):
            raise SystemExit(f"{where}: not a serving benchmark's closed loop (a mean TPOT, a maximum concurrency, no "
                             "request rate) of a server glmbench has a runtime model of")
        B, tpot = int(r["max_concurrency"]), float(r["tpot_s"])
        kv, kv_note, ropts = _serving_kv_options(r, engine)
        out.append({"evidence": "measured", "public_source": sid, "runtime": engine,
                    "runtime_options": ropts, "model": r.get("model"), "device": r.get("device"), "hardware": r.get("hardware"),
                    "n_cards": r.get("n_cards"), "split": r.get("split"), "weights": r.get("weights"), "type_k": kv,
                    "tool": r["tool"], "test": "tg", "n_prompt": 0, "n_gen": r["n_gen"], "n_depth": r["n_prompt"],
                    "n_streams": B, "avg_ts": round(B / tpot, 2),
                    "source": meta["url"], "date": meta["date"], "command": meta["command"],
                    "note": meta["note"] + f"; aggregate decode of {B} streams = {B} / mean TPOT {tpot * 1000:g} ms, "
                                           f"each generating {r['n_gen']} tokens (mean) after a {r['n_prompt']}-token "
                                           "prompt (mean); " + kv_note,
                    "line": where, "inferred": r.get("inferred") or {}, "from_sidecar": ["type_k"]})
    return out


def _serving_kv_options(r, engine) -> tuple:
    """(KV type, how it was told, runtime options) of a serving benchmark's record: a vLLM / SGLang
    server's --kv-cache-dtype auto (the model's dtype); a llama-server's -ctk (f16 where none is
    stated) and its -fa / -ub from its command line in the paste (importers.server_of)."""
    kv = _vllm_kv(r.get("weights")) if engine in SERVING else (r.get("type_k") or "f16")
    kv_note = (f"KV cache in the model's dtype {kv} (the {engine} server's default --kv-cache-dtype auto)"
               if engine in SERVING else f"KV cache {kv} ({engine}'s llama-server default -ctk f16 where none is stated)")
    ropts = {}
    if engine not in SERVING:
        if r.get("flash_attn") is not None and int(r["flash_attn"]) >= 0:
            ropts["fa"] = str(int(r["flash_attn"]))
        if r.get("n_ubatch"):
            ropts["ubatch"] = str(int(r["n_ubatch"]))
    return kv, kv_note, ropts


# a serving run's fields a replay of its client needs (bench_public_fit.py --check, `serving_report`)
SERVE_KEEP = ("n_prompt", "n_gen", "completed", "max_concurrency", "request_rate", "burstiness", "max_num_seqs",
              "max_num_batched_tokens", "ttft_s", "tpot_s", "aggregate_tok_s", "duration_s", "tool", "server",
              "serve_backend", "serve_kind", "latency_s", "request_throughput", "n_streams", "ramp_up_strategy")


def _serve_records(recs, meta, sid) -> list:
    """Each serving benchmark's result as it ran (test `serve`: its mean TTFT and TPOT, the client's
    concurrency and request rate, the server's limits; or vLLM's offline latency / throughput run,
    `serve_kind`), for the check's replay of its client; never for the fit, whose serving points are
    _vllm's decode points."""
    out = []
    for r in recs:
        engine = _runtime_of(r)
        if engine not in cm.list_runtimes() or not (r.get("tpot_s") or r.get("ttft_s") or r.get("serve_kind")):
            continue
        kv, kv_note, ropts = _serving_kv_options(r, engine)
        o = {"evidence": "measured", "serving_run": True, "public_source": sid, "runtime": engine, "runtime_options": ropts,
             "model": r.get("model"), "device": r.get("device"), "hardware": r.get("hardware"),
             "n_cards": r.get("n_cards"), "split": r.get("split"), "weights": r.get("weights"), "type_k": kv,
             "test": "serve", "source": meta["url"], "date": meta["date"], "command": meta["command"],
             "note": meta["note"] + "; " + kv_note, "line": f"{meta['file']}:{str(r['source']).rsplit(':', 1)[1]}",
             "inferred": r.get("inferred") or {}, "from_sidecar": ["type_k"]}
        o.update((k, r[k]) for k in SERVE_KEEP if r.get(k) is not None)
        out.append(o)
    return out


# ---- the generic path: a pasted file and its sidecar, no SOURCES entry ---------------------------
PASTED = (".md", ".log", ".json", ".jsonl", ".csv", ".sql")
# sidecar key (lower case) -> the attribution field it gives; the first key present wins
SIDECAR_KEYS = {"url": ("url", "source_url", "source", "link", "thread", "post", "permalink"),
                "date": ("date", "posted", "published", "when"),
                "command": ("command", "cmd", "command_line", "server", "client"),
                "runtime": ("runtime", "engine", "backend", "software", "inference_engine", "framework"),
                "gpu": ("gpu", "hardware", "card", "device", "graphics_card", "gpu_model", "setup", "rig", "system", "machine"),
                # every one of these present is read (a model line and a separate quant / file line)
                "model": ("model", "model_file", "model_name", "gguf", "checkpoint", "weights", "quant", "quantization"),
                "note": ("notes", "note")}
_KV_TYPES = ("f16", "bf16", "f32", "q8_0", "q4_0", "q4_1", "q5_0", "q5_1", "iq4_nl")


class Skip(Exception):
    """A file the generic path leaves out (the reason is the message)."""


def text_of(path) -> str:
    """A paste's or a sidecar's text as importers.read decodes it (UTF-8, or UTF-16 as Windows PowerShell and
    Notepad's "Unicode" write it), a byte that is neither replaced."""
    with open(path, "rb") as f:
        raw = f.read()
    try:
        return importers.decoded(raw, path)
    except importers.FormatError:
        return raw.decode("utf-8-sig", errors="replace")


def read_sidecar(path) -> dict:
    """{lower-case key: value} of a sidecar's "key: value" lines (a line without one continues the
    previous value); the first of a repeated key is kept."""
    out, last = {}, None
    for ln in text_of(path).replace("\r\n", "\n").replace("\r", "\n").split("\n"):
        m = re.match(r"^\s*([A-Za-z][\w .()/-]{0,40}?)\s*:\s+(.*\S)?\s*$", ln)
        if m and not m.group(1).lower().startswith(("http", "https")):
            # one spelling per key: "Source URL" = "source_url", "GPU(s)" = "GPUs" = "gpu"
            last = re.sub(r"[\s-]+", "_", re.sub(r"\((?:e?s)\)$", "", m.group(1).strip().lower()).strip())
            last = {"gpus": "gpu", "cards": "card", "devices": "device", "models": "model",
                    "commands": "command"}.get(last, last)
            out.setdefault(last, (m.group(2) or "").strip())
        elif last and ln.strip() and out.get(last) is not None:
            out[last] = (out[last] + " " + ln.strip()).strip()
    return out


def _side(side: dict, what: str) -> str | None:
    vals = [side[k] for k in SIDECAR_KEYS[what] if side.get(k)]
    if what == "command" and "command" not in side and "cmd" not in side and len(vals) > 1:
        return "; ".join(vals)                # vLLM: the server and the client command
    if what == "model" and len(vals) > 1:
        return " ; ".join(dict.fromkeys(vals))   # "Model: Qwen2.5-32B-Instruct" + "Quant: Q4_K_M"
    return vals[0] if vals else None


def sidecar_runtime(text: str | None) -> str | None:
    """The runtime model a sidecar's runtime / engine text names (Vulkan over the fork that ran
    it: the ggml Vulkan backend is one runtime model), or None."""
    t = (text or "").lower()
    if "vllm" in t:
        return "vllm"
    if "sglang" in t:
        return "sglang"
    if "vulkan" in t and not _cuda_and_vulkan(t):
        return "llama.cpp-vulkan"
    main = re.search(r"llama\.cpp|mainline|llama-bench", t.replace("ik_llama.cpp", ""))
    if "ik_llama" in t and main and re.search(r"\bvs\.?(?!\w)|versus|compar|\band\b|\bboth\b|\s/\s", t):
        return None     # "ik_llama.cpp vs mainline llama.cpp": each table's own tool tells
    if "ik_llama" in t:
        return "ik_llama.cpp"
    if main:
        return "llama.cpp"
    return None


def _cuda_and_vulkan(text: str | None) -> bool:
    """A sidecar's runtime text names both CUDA and Vulkan ("CUDA vs Vulkan builds"): each table's own
    backend (device lines, backend column) says which it ran on."""
    t = (text or "").lower()
    return "vulkan" in t and bool(re.search(r"\bcuda\b", t))


# llama.cpp backends without a runtime model (the models are of CUDA, ik_llama.cpp's CUDA, the ggml Vulkan
# backend and vLLM): a record run on one is left out with the reason, never filed under CUDA
_NO_MODEL_BACKENDS = {"rocm": "ROCm", "hip": "ROCm", "metal": "Metal", "sycl": "SYCL", "cann": "CANN", "musa": "MUSA",
                      "opencl": "OpenCL", "kompute": "Kompute", "cpu": "CPU", "blas": "CPU"}


def _runtimes_said():
    return ", ".join(f"{r} (CUDA)" if r in ("llama.cpp", "ik_llama.cpp") else r
                     for r in cm.list_runtimes() if r not in ("ideal", "typical"))


def sidecar_backend(text: str | None) -> str | None:
    """A backend without a runtime model that a sidecar's runtime text names ("llama.cpp ROCm 6.4
    (HIP)", "Metal", "SYCL", "CPU only", "RPC"), where it names no modelled one (CUDA, Vulkan, vLLM); or None."""
    t = (text or "").lower()
    if re.search(r"\bcuda\b|vulkan|vllm", t) and not re.search(r"\brpc\b", t):
        return None
    if re.search(r"\brpc\b", t):
        return "RPC"
    for k in ("rocm", "hip", "metal", "sycl", "cann", "musa", "opencl", "kompute"):
        if re.search(rf"\b{k}\b", t):
            return _NO_MODEL_BACKENDS[k]
    if re.search(r"\bcpu[- ]?(?:only|backend|build)\b|\bno gpu\b", t):
        return "CPU"
    return None


def _no_model_backend(r: dict, side_backend: str | None = None) -> str | None:
    """Why a record ran on a backend no runtime model is of (ROCm, Metal, SYCL, the CPU, RPC to
    another host, a build of several GPU backends whose run -dev did not narrow to one's: CUDA,Vulkan), or None:
    the record's own backend, else the sidecar's runtime text."""
    parts = [p.strip() for p in str(r.get("backend") or "").split(",") if p.strip()]
    tail = f": glmbench has no runtime model of it (runtime models: {_runtimes_said()})"
    if "RPC" in (p.upper() for p in parts):
        return "backend RPC (layers on another host's rpc-server, over the network)" + tail
    for p in parts:
        if p.lower() in _NO_MODEL_BACKENDS:
            return f"backend {_NO_MODEL_BACKENDS[p.lower()]}" + tail
    if len(parts) > 1:      # a build of several GPU backends whose devices the run did not narrow to one's
        return f"backends {r['backend']} (a build of both; no -dev of one backend's devices says which ran it)" + tail
    if not parts and side_backend:
        return f"backend {side_backend} (the sidecar's runtime)" + tail
    if not parts and not r.get("hardware") and r.get("device") and not importers.gpus_in(str(r["device"])) \
            and r.get("tool", "").startswith("llama-bench"):
        return f"the CPU ({r['device']}: no GPU in gpu_info)" + tail
    return None


def _mixed_cards(r: dict, side: dict) -> str | None:
    """Why a record is of a rig of different cards (a 4090 + a 3090: no runtime model is of one), or None."""
    if r.get("hardware"):
        return None
    tail = ": the runtime models are of one card type (or several of it)"
    if " + " in str(r.get("device") or ""):
        return f"mixed cards ({r['device']})" + tail
    g = _side(side, "gpu") or ""
    found = importers.gpus_in(g)
    if len({hardware.resolve_gpu_name(n) or n for n, _ in found}) > 1:
        return f"mixed cards (the sidecar's GPU line {g!r})" + tail
    return None


def _text_options(text: str) -> dict:
    """Options stated in a sidecar's prose ("n_ubatch 512", "fa off", "-mla 3", "f16 KV"); an
    option the prose gives two values of (one per table, say) is not taken from it."""
    return {k: v.pop() for k, v in _text_values(text).items() if len(v) == 1}


def _text_values(text: str) -> dict:
    """{option: the set of values `text` gives it}."""
    t = text or ""
    # a value followed by ",x" is the first of a llama-bench list ("-fa 0,1", "-ub 512,2048"): one run per
    # value, so no option of every record (lst: every value of the list)
    lst = r"((?:[\w.-]+,)+[\w.-]+)(?![\w,])"
    found = {"n_ubatch": {int(m.group(1)) for m in re.finditer(r"\b(?:n_ubatch|ubatch|u-batch)\s*[=:]?\s*(\d+)(?!\d|,\w)", t, re.I)}
             | {int(m.group(1)) for m in re.finditer(r"(?:^|\s)(?:-ub|--ubatch-size)[\s=]+(\d+)(?!\d|,\w)", t)}
             | {int(v) for m in re.finditer(r"(?:^|\s)(?:-ub|--ubatch-size)[\s=]+" + lst, t) for v in m.group(1).split(",")
                if v.isdigit()},
             "flash_attn": {int(m.group(1).lower() in ("on", "1", "true")) for m in re.finditer(
                 r"(?:^|[\s,;(])(?:-fa|fa|flash[_ ]attn|flash attention)\s*[=:]?\s*(on|off|0|1|true|false)\b(?!,\w)", t, re.I)}
             | {1 for _ in re.finditer(r"(?:^|[\s,;(])-fa\b(?!\s*[=:]?\s*(?:on|off|auto|0|1|true|false)\b)", t)}
             | {int(v.lower() in ("on", "1", "true")) for m in re.finditer(r"(?:^|\s)(?:-fa|--flash-attn)[\s=]+" + lst, t)
                for v in m.group(1).split(",")},
             "mla": {m.group(1) for m in re.finditer(r"(?:^|[\s,;(])-?mla\s*[=:]?\s*(\d)\b(?!,\w)", t, re.I)}
             | {v for m in re.finditer(r"(?:^|\s)-mla[\s=]+" + lst, t) for v in m.group(1).split(",")},
             "type_k": {m.group(1).lower() for m in re.finditer(r"\b(" + "|".join(_KV_TYPES) + r")\s+KV\b", t, re.I)}
             | {m.group(1).lower() for m in re.finditer(r"(?:^|\s)(?:-ctk|--cache-type-k)[\s=]+(\w+)\b(?!,\w)", t)}
             | {v.lower() for m in re.finditer(r"(?:^|\s)(?:-ctk|--cache-type-k)[\s=]+" + lst, t) for v in m.group(1).split(",")}}
    return found


def _sidecar_options(side: dict, side_path) -> dict:
    """The runtime options a sidecar's `options:` line gives ("era=2024-cublas, coopmat=khr"):
    what no paste states (a build's era, Vulkan's coopmat path)."""
    text = side.get("options") or side.get("runtime_options") or ""
    out = {}
    for part in re.split(r"[,;\s]+", text.strip()):
        if not part:
            continue
        m = re.fullmatch(r"([a-z_]+)=([\w.-]+)", part)
        if not m:
            raise SystemExit(f"{os.path.basename(side_path)}: options: {part!r} is not name=value (e.g. era=2024-cublas)")
        out[m.group(1)] = m.group(2)
    return out


def _command_options(cmd: str | None) -> dict:
    """fa / ubatch / mla / type_k a sidecar's command line gives (a llama-bench list such as
    `-fa 0,1` gives none: several runs)."""
    if not cmd:
        return {}
    a = importers._command_args(cmd, {})
    several = {k for k, v in _text_values(cmd).items() if len(v) > 1}    # "table 1 -mla 2, table 2 -mla 3"
    out = {}
    if a.get("flash_attn") is not None and "flash_attn" not in several:
        out["flash_attn"] = int(a["flash_attn"])
    for k, f in (("n_ubatch", int), ("mla", str), ("type_k", str)):
        v = a.get(k)
        if v is None or "," in str(v) or k in several:
            continue
        try:
            out[k] = f(v)
        except ValueError:
            continue
    return out


def cm_layers(model) -> int | None:
    """The layer count of a built-in model (llama.cpp's -ngl counts these, plus the output layer)."""
    if not model:
        return None
    try:
        return configs.load(model).n_layers
    except (ValueError, TypeError, KeyError, OSError):
        return None


def source_id(path) -> str:
    """The source id of a pasted file: its stem, lower case, anything but [a-z0-9._-] as '-'."""
    stem = os.path.splitext(os.path.basename(path))[0].lower()
    return re.sub(r"-{2,}", "-", re.sub(r"[^a-z0-9._-]+", "-", stem)).strip("-.") or "source"


def _first_url(text):
    m = re.search(r"https?://[^\s)\]>\"']+", text or "")
    return m.group(0).rstrip(".,;") if m else None


def _date_of(side: dict) -> str:
    d = _side(side, "date") or ""
    m = re.search(r"\b(\d{4}-\d{2}(?:-\d{2})?)\b", d)
    if m:
        return m.group(1)
    m = re.search(r"\b(20\d{2})[/.](\d{1,2})(?:[/.](\d{1,2}))?\b", d)      # "2025/08/03", "2025.8.3"
    if m and 1 <= int(m.group(2)) <= 12 and (m.group(3) is None or 1 <= int(m.group(3)) <= 31):
        return f"{m.group(1)}-{int(m.group(2)):02d}" + (f"-{int(m.group(3)):02d}" if m.group(3) else "")
    mon_re = (r"(Jan(?:uary)?|Feb(?:ruary)?|Mar(?:ch)?|Apr(?:il)?|May|June?|July?|Aug(?:ust)?|Sep(?:t(?:ember)?)?|"
              r"Oct(?:ober)?|Nov(?:ember)?|Dec(?:ember)?)\.?(?![a-z])")

    def mon(name):
        return "janfebmaraprmayjunjulaugsepoctnovdec".index(name[:3].lower()) // 3 + 1
    m = re.search(r"\b" + mon_re + r"\s+(\d{1,2}),?\s+(?:[\d:]+\s+)?(\d{4})\b", d, re.I)
    if m:
        return f"{m.group(3)}-{mon(m.group(1)):02d}-{int(m.group(2)):02d}"
    m = re.search(r"\b(\d{1,2})(?:st|nd|rd|th)?\s+" + mon_re + r",?\s+(\d{4})\b", d, re.I)       # "14 Mar 2025"
    if m and 1 <= int(m.group(1)) <= 31:
        return f"{m.group(3)}-{mon(m.group(2)):02d}-{int(m.group(1)):02d}"
    m = re.search(r"\b" + mon_re + r",?\s+(\d{4})\b", d, re.I)                                  # "March 2025"
    if m:
        return f"{m.group(2)}-{mon(m.group(1)):02d}"
    for v in side.values():                     # a date anywhere (the URL's or the repository's line)
        m = re.search(r"\b(20\d{2}-\d{2}(?:-\d{2})?)\b", v)
        if m:
            return m.group(1)
    return d or "not stated"


def _cards_run(cmd: str | None, n: int) -> int:
    """How many of the `n` cards a sidecar's GPU line names the sidecar's command ran on
    (importers.cards_from_command: -sm none, -dev, CUDA_VISIBLE_DEVICES, a vLLM server's -tp); else all `n`."""
    return importers.cards_from_command(importers._command_args(cmd or "", {}))[0] or n


def _client_from_sidecar(r: dict, cmd: str | None) -> list:
    """A serving result's client settings that the paste does not print (no concurrency line, no
    command line of its own: a bare result block) from the sidecar's command line: --max-concurrency,
    --request-rate, --burstiness. The fields filled (each noted in `inferred`)."""
    if r.get("test") != "serve" or not cmd:
        return []
    a = importers._command_args(cmd, {})
    filled = []
    for k in ("max_concurrency", "request_rate", "burstiness"):
        if r.get(k) is None and k not in (r.get("inferred") or {}) and a.get(k) not in (None, ""):
            v = str(a[k]).strip().lower()
            try:
                val = v if v == "inf" else (int(v) if k == "max_concurrency" else float(v))
            except ValueError:
                continue
            if k == "max_concurrency" and (val < 1 or "n_streams" not in r):
                continue
            r[k] = val
            if k == "max_concurrency":
                r["n_streams"] = r["concurrency"] = min(int(r["n_streams"]), val)
            r.setdefault("inferred", {})[k] = f"{val} (the sidecar's command line)"
            filled.append(k)
    return filled


def _fill_from_sidecar(r: dict, side: dict) -> list:
    """The card, model and weights the sidecar names where the paste does not: the fields filled."""
    filled = []
    if r.get("hardware") is None:
        count = None
        g = _side(side, "gpu") or ""
        key = hardware.resolve_gpu_name(g)
        bare = re.fullmatch(r"\s*(?:(\d)\s*[x×]\s*)?([2-5]0[5-9]0)([\s_-]*(?:ti|super))?(?:[\s_-]*(\d+)\s*GB)?"
                            r"\s*(?:[x×]\s*(\d))?\s*", g, re.I)
        if key is None and bare:    # a GPU line that is only GeForce's model number ("4090", "2x 3090 Ti", "3080_10GB")
            n1, num, suf, mem, n2 = bare.groups()
            suf = {"ti": " Ti", "super": " Super"}.get((suf or "").strip(" _-").lower(), "")
            key = hardware.resolve_gpu_name(f"RTX {num}{suf}{' ' + mem + 'GB' if mem else ''}")
            if key and (n1 or n2):
                count = int(n1 or n2)
        if key is None:
            found = importers.gpus_in(g)
            key = hardware.resolve_gpu_name(found[0][0]) if found else None
            if key and found[0][1]:
                count = found[0][1]
        if key:
            r["hardware"], r["device"] = key, r.get("device") or key
            if r.get("n_cards") is None:    # a count the paste states (device lines, -tp) wins over the sidecar's
                r["n_cards"] = _cards_run(_side(side, "command"), count or 1)
            filled.append("hardware")
            if r["n_cards"] == 1:
                r["split"] = "none"
            elif r.get("split") in (None, "none"):   # the runtime's default: llama.cpp -sm layer, vLLM -tp
                r["split"] = "tensor" if _runtime_of(r) == "vllm" else "layer"
                filled.append("split")
    mtext = _side(side, "model") or ""
    if r.get("model") is None:
        names = importers.names_in(mtext)
        if len(names) == 1:
            r["model"] = names[0]
            filled.append("model")
    if r.get("weights") is None:      # a quant name, or a file name's ("Qwen3-30B-A3B-UD-Q4_K_XL.gguf")
        ws = {q for q in (importers.quant_name(t) or importers._quant_from_filename(t)
                          for t in re.split(r"[\s,;()/]+", mtext)) if q}
        if not ws and _runtime_of(r) == "vllm":    # a vLLM checkpoint's name: "Qwen2.5-32B-Instruct-AWQ"
            ws = {importers.checkpoint_quant(mtext)} - {None}
        if len(ws) == 1:
            w = ws.pop()
            r["weights"] = w if _runtime_of(r) in SERVING else importers.gguf_quant(w)
            filled.append("weights")
    return filled


def folder_configs(src) -> dict:
    """{file name: path} of the HF config.json files beside the pastes (`*.json` holding an object
    with `model_type` and `architectures` that configs.load reads), as the published set ships
    llama3-8b.json / llama3-70b.json: the models a paste names that are not built in."""
    out = {}
    for p in sorted(glob.glob(os.path.join(src, "*.json"))):
        try:
            with open(p) as f:
                d = json.load(f)
        except (OSError, ValueError):
            continue
        if isinstance(d, dict) and "model_type" in d and "architectures" in d:
            try:
                configs.load(p)
            except (ValueError, TypeError, KeyError) as e:
                print(f"{os.path.basename(p)}: an HF config glmbench cannot read ({e}); not used")
                continue
            out[os.path.basename(p)] = p
    return out


@functools.lru_cache(maxsize=None)
def _config_names(path: str) -> tuple:
    """The names an HF config beside the pastes goes by: its file stem and its `_name_or_path`'s last part."""
    with open(path) as f:
        nop = str(json.load(f).get("_name_or_path") or "")
    return tuple(n for n in (os.path.splitext(os.path.basename(path))[0], nop.rstrip("/").split("/")[-1]) if n)


def _config_named(texts, cfgs: dict) -> str | None:
    """The one config of `cfgs` (folder_configs) whose file stem's words, or its `_name_or_path`'s
    last part's, occur in order in one of `texts` (a sidecar's model line, the paste's file name)."""
    for text in texts:
        toks = importers._tokens(str(text or ""))
        hits = {fname for fname, p in cfgs.items()
                if any(importers._in_order(importers._tokens(n), toks, slack=0) for n in _config_names(p))}
        if len(hits) == 1:
            return hits.pop()
    return None


def generic_records(path, cfgs: dict | None = None, keep_batched: bool = False,
                    notices: list | None = None) -> tuple[str, list]:
    """(source id, records) of one pasted file read the generic way (module docstring); Skip
    when it has no sidecar or the card, model or weights are not stated; SystemExit on a
    disagreement (the runtime, an option) naming the file and line. `cfgs` (folder_configs): HF
    configs beside the pastes, for a model the sidecar or file name names that is not built in; its
    records' `model` is then `configs/<file>` (copied next to the records by main). `keep_batched`:
    llama-batched-bench's records (several streams) are kept, read the same way, and a serving
    benchmark's results are also kept as they ran (`serving_run`, _serve_records, an open loop
    included); none of them is ever for the fit (bench_public_fit.py --check predicts them apart);
    else they are left out. `notices`: a list that gets the importer's notices (what it assumed: a card count,
    shared decoding for a batched-bench jsonl; a result pasted twice, kept once)."""
    name = os.path.basename(path)
    side_path = os.path.splitext(path)[0] + ".txt"
    if not os.path.isfile(side_path):
        raise Skip(f"no sidecar {os.path.basename(side_path)} (URL, date, command, runtime, GPU, model)")
    side = read_sidecar(side_path)
    named = importers.names_in(_side(side, "model"))
    cfg_file = None
    if len(named) != 1 and cfgs:   # not a built-in: a config beside the pastes that the sidecar or file names
        cfg_file = _config_named((_side(side, "model"), os.path.splitext(name)[0]), cfgs)
    default = cfgs[cfg_file] if cfg_file else (named[0] if len(named) == 1 else None)
    try:        # the sidecar's model where the paste does not tell (or tells only the architecture)
        recs = importers.read(path, default_model=default, notices=notices)
    except importers.FormatError as e:
        raise Skip(str(e)) from None
    if cfg_file:
        own = configs.load(cfgs[cfg_file]).name
        for r in recs:
            if r.get("model") == own:
                r["model"] = f"configs/{cfg_file}"
                r.setdefault("inferred", {})["model"] = (f"the HF config {cfg_file} beside the paste (not a built-in), "
                                                         f"named by the sidecar's model line or the file name")
    sid = source_id(path)
    url = _first_url(_side(side, "url")) or _first_url(" ".join(side.values()))
    if not url:
        raise Skip(f"its sidecar {os.path.basename(side_path)} states no URL (key URL or source_url)")
    cmd = _side(side, "command")
    note = _side(side, "note") or ""
    rt_text = _side(side, "runtime")
    rt_side = sidecar_runtime(rt_text)
    meta = dict(file=name, url=url, date=_date_of(side), command=cmd or "not stated", note=note, runtime=rt_side)
    if any(r.get("test") == "serve" for r in recs):
        # a serving benchmark: the runtime is the server measured; one glmbench has no model of
        # (SGLang) is left out, said in the records kept or, where none is kept, in the skip line
        serving = [r for r in recs if r.get("test") == "serve"]
        for r in serving:
            # no server line in the paste and a client backend that names none (vLLM's --backend openai on a
            # llama-server): the sidecar's runtime says which server was measured
            if (not r.get("server") and rt_side in cm.list_runtimes()
                    and str(r.get("serve_backend") or "").lower() not in ("vllm", "sglang")):
                r["server"] = rt_side
                r.setdefault("inferred", {})["server"] = (f"{rt_side} (the sidecar's runtime line; the client's "
                                                         f"--backend {r.get('serve_backend')} names no server)")
        recs = [r for r in serving if _runtime_of(r) in cm.list_runtimes()]
        other = [r for r in serving if _runtime_of(r) not in cm.list_runtimes()]
        if other:
            r = other[0]
            why = (f"a {r.get('tool')} result of a{'n' if _runtime_of(r)[0] in 'aeiou' else ''} "
                   f"{_runtime_of(r)} server (--backend {r.get('serve_backend')}): glmbench has no "
                   f"{_runtime_of(r)} runtime model (runtimes: {', '.join(cm.list_runtimes())})")
            if not recs:
                raise Skip(f"{name}:{str(r['source']).rsplit(':', 1)[1]}: {why}")
            note = (note + "; " if note else "") + (f"{len(other)} result(s) of the file left out (line "
                                                    f"{', '.join(str(x['source']).rsplit(':', 1)[1] for x in other)}: {why})")
        for r in recs:
            if len(named) == 1 and r.get("model") not in (None, named[0]):
                raise SystemExit(f"{name}:{str(r['source']).rsplit(':', 1)[1]}: the paste's model is {r['model']!r}, "
                                 f"the sidecar's model line names {named[0]!r} ({_side(side, 'model')!r})")
            _fill_from_sidecar(r, side)
            _client_from_sidecar(r, _side(side, "command"))
            missing = [k for k in ("hardware", "model", "weights") if r.get(k) is None]
            if missing:
                raise Skip(f"{name}:{str(r['source']).rsplit(':', 1)[1]}: " + _missing(r, missing)
                           + (f" ({'SGLang' if _runtime_of(r) == 'sglang' else 'vLLM'} serves the checkpoint's own "
                              "dtype: name it on the sidecar's model line, e.g. 'Model: org/name BF16')"
                              if missing == ["weights"] else ""))
        engines = sorted({_runtime_of(r) for r in recs})
        if rt_side is not None and rt_side not in engines:      # (a file of both servers: the sidecar names one)
            raise SystemExit(f"{name}: the import implies runtime {', '.join(map(repr, engines))}, the sidecar's runtime "
                             f"says {rt_side!r} ({rt_text!r})")
        meta["note"] = note or f"read by bench/public_records.py's generic path from {name} and its sidecar"
        # the check (keep_batched) also takes each run as it ran, `serve`, for a replay of its client: an
        # open or paced loop (a request rate: the arrivals, not a maximum concurrency, set the streams) has no
        # decode point but is still checked
        extra = _serve_records(recs, meta, sid) if keep_batched else []
        closed = [r for r in recs if cal.closed_loop(r)]
        try:
            points = _vllm(None, meta, sid, closed if extra else recs)
        except SystemExit as e:         # a serving result without a mean TPOT or a concurrency: no decode point
            raise Skip(str(e)) from None
        if not points and not extra:
            raise Skip(f"{name}: no serving result with a mean TPOT or TTFT")
        return sid, points + extra
    n_all = len(recs)
    if not keep_batched:
        recs = [r for r in recs if r.get("tool") != "llama-batched-bench" and int(r.get("n_streams") or 1) == 1]
    if not recs:
        raise Skip(f"all {n_all} records are llama-batched-bench's (several streams, or -npl 1 rows of its "
                   "own runs): not the single-stream points of llama-bench / sweep-bench (bench/bench_public_batched.py "
                   "covers them)")
    # runs on a backend no runtime model is of (ROCm, Metal, SYCL, the CPU, RPC) or on mixed cards:
    # left out with the reason, never filed under CUDA or under the first card
    side_bk = sidecar_backend(rt_text)
    other = [(str(r["source"]).rsplit(":", 1)[1], _no_model_backend(r, side_bk) or _mixed_cards(r, side)) for r in recs]
    if any(why for _, why in other):
        said = "; ".join(f"line {ln}: {why}" for ln, why in other if why)
        left = [why for _, why in other if why]
        if len(left) == len(recs):
            ln, why = next((ln, why) for ln, why in other if why)
            raise Skip(f"{name}:{ln}: {why}" + (f" (all {len(recs)} records)" if len(recs) > 1 else ""))
        recs = [r for r, (_, why) in zip(recs, other) if not why]
        note = (note + "; " if note else "") + f"{len(left)} record(s) left out, no runtime model of them ({said})"
    # runs partly on the CPU (--n-cpu-moe, -ot, -nkvo, -ngl below the layer count): not the all-GPU
    # runs the runtime models are of; left out with the reason
    offloaded = []
    kept = []
    offload_of = {}     # id(record) -> its placement, for the check (keep_batched): an offload run
    for r in recs:
        why = _offloaded(r, cm_layers(r.get("model")), cmd)
        if why:
            offloaded.append((str(r["source"]).rsplit(":", 1)[1], why))
            if keep_batched:
                offload_of[id(r)] = _offload_fields(r, cmd)
                kept.append(r)
        else:
            kept.append(r)
    if offloaded and keep_batched:
        recs = kept
    elif offloaded:
        recs = kept
        lines = list(dict.fromkeys(offloaded))     # a sweep-bench row is two records (pp, tg) of one line
        said = "; ".join(f"line {ln}: {why}" for ln, why in lines[:3]) + (" ..." if len(lines) > 3 else "")
        if not recs:
            raise Skip(f"{name}: every record ran partly on the CPU ({said}): not an all-GPU point")
        note = (note + "; " if note else "") + f"{len(offloaded)} record(s) left out, partly on the CPU ({said})"
    cmd_opts = _command_options(cmd)
    text_opts = _text_options(" ; ".join(x for x in (rt_text, cmd, note) if x))
    # the card, model and weights the sidecar names where the paste does not; a record still without
    # one of them is left out with the reason (the file's other records kept)
    filled_of, gone = {}, []
    for r in recs:
        filled_of[id(r)] = _fill_from_sidecar(r, side)
        missing = [k for k in ("hardware", "model", "weights") if r.get(k) is None]
        if missing:
            gone.append((id(r), str(r["source"]).rsplit(":", 1)[1], _missing(r, missing)))
    if gone:
        if len(gone) == len(recs):
            raise Skip(f"{name}:{gone[0][1]}: {gone[0][2]}" + (f" (all {len(recs)} records)" if len(recs) > 1 else ""))
        ids = {g[0] for g in gone}
        recs = [r for r in recs if id(r) not in ids]
        lines = list(dict.fromkeys(ln for _, ln, _ in gone))
        note = (note + "; " if note else "") + (f"{len(gone)} record(s) left out (line {', '.join(lines[:6])}"
                                                f"{' ...' if len(lines) > 6 else ''}: {gone[0][2]})")
    side_opts = _sidecar_options(side, side_path)
    tables = _tables_of(recs)
    out = []
    for ti, rows in enumerate(tables):
        for r in rows:
            ln = str(r["source"]).rsplit(":", 1)[1]
            where = f"{name}:{ln}"
            rt = _runtime_of(r)
            from_side_rt = False
            if rt_side == "ik_llama.cpp" and rt == "llama.cpp" and r.get("tool") == "llama-bench":
                # ik_llama.cpp's llama-bench prints as mainline's (but for its own columns, which
                # the import reads as the tool "llama-bench (ik_llama.cpp)"): the sidecar tells
                rt, from_side_rt = rt_side, True
            elif rt_side == "llama.cpp" and rt == "ik_llama.cpp" and r.get("tool") == "llama-sweep-bench (ik_llama.cpp)":
                # the mainline port of sweep-bench built before mainline's Aug-2025 API prints ik_llama.cpp's
                # header (flash_attn = 1, not flash_attn_type): the table is the same, the sidecar tells
                rt, from_side_rt = rt_side, True
                r["tool"] = "llama-sweep-bench (mainline port)"
                r.setdefault("inferred", {})["tool"] = ("the mainline port (the sidecar's runtime; its header before "
                                                        "mainline's Aug-2025 API is ik_llama.cpp's)")
            if rt_side is not None and rt != rt_side and not (rt == "llama.cpp-vulkan" and _cuda_and_vulkan(rt_text)):
                raise SystemExit(f"{where}: the import implies runtime {rt!r} (tool {r.get('tool')!r}, backend "
                                 f"{r.get('backend')!r}), the sidecar's runtime says {rt_side!r} ({rt_text!r})")
            if len(named) == 1 and r.get("model") not in (None, named[0]):
                raise SystemExit(f"{where}: the paste's model is {r['model']!r}, the sidecar's model line names "
                                 f"{named[0]!r} ({_side(side, 'model')!r})")
            filled = filled_of[id(r)]
            if rt == "ik_llama.cpp" and str((r.get("inferred") or {}).get("flash_attn", "")).startswith("0: no fa column"):
                # the importer's rule is mainline llama-bench's -fa default; ik_llama.cpp's build numbers
                # and defaults are its own: fa stays unstated
                r["flash_attn"] = None
                r["inferred"].pop("flash_attn")
            rec = {"evidence": "measured", "public_source": sid, "runtime": rt}
            rec.update((k, r[k]) for k in _KEEP if r.get(k) is not None)
            from_sidecar = list(filled) + (["runtime"] if from_side_rt else [])
            for field in ("flash_attn", "n_ubatch", "mla", "type_k"):
                pv = r.get(field)
                cv = cmd_opts.get(field)
                if pv is not None and cv is not None and str(pv).lower() != str(cv).lower():
                    raise SystemExit(f"{where}: the paste says {field} {pv}, the sidecar's command says {cv} ({cmd!r})")
                if pv is None and field in cmd_opts:
                    rec[field] = cv
                    from_sidecar.append(field)
                elif pv is None and field in text_opts:
                    rec[field] = text_opts[field]
                    from_sidecar.append(field)
                elif pv is not None:
                    rec[field] = pv
            if rt in SERVING:
                # a serving engine's in-process benchmark (SGLang's bench_one_batch): its KV cache in the model's
                # dtype (--kv-cache-dtype auto), none of llama.cpp's options
                rec["type_k"] = _vllm_kv(rec.get("weights"))
                from_sidecar.append("type_k")
                rec["runtime_options"] = {}
                rec.update(source=url, date=meta["date"], command=meta["command"],
                           note=(note + "; " if note else "") + f"read by bench/public_records.py's generic path from "
                                f"{name} and its sidecar; KV cache in the model's dtype (the {rt} engine's default)",
                           line=where, inferred=r.get("inferred") or {}, from_sidecar=from_sidecar)
                out.append(rec)
                continue
            if rec.get("type_k") is None:       # llama.cpp's default KV type (no -ctk anywhere)
                rec["type_k"] = "f16"
                from_sidecar.append("type_k")
            mla = rec.pop("mla", None)
            ropts = {}
            fa = rec.get("flash_attn")
            if fa is not None and int(fa) < 0:
                # -fa auto (llama-bench's default since mid-2025, -1 in its json / csv): llama.cpp turns flash
                # attention on where the backend runs the model's head sizes, as CUDA and Vulkan do
                ropts["fa"] = "1"
                r.setdefault("inferred", {})["flash_attn"] = ("auto (-1): on, as llama.cpp's auto mode runs it on "
                                                                "CUDA and Vulkan wherever the head sizes allow")
            elif fa is not None:
                ropts["fa"] = str(int(fa))
            if rec.get("n_ubatch") is not None:
                ropts["ubatch"] = str(int(rec["n_ubatch"]))
            else:                               # the tools' default -ub (llama-bench, sweep-bench: 512)
                ropts["ubatch"] = str(cm.load_runtime(rt).n_ubatch)
                rec["defaults"] = ["ubatch"]
            if mla is not None and rt == "ik_llama.cpp":
                ropts["mla"] = str(mla)
            era = rtm.record_era(cm.load_runtime(rt), r)
            soft = set()    # options read from a build number: a sidecar's options may say otherwise
            if era:      # mainline CUDA's quantized prefill path: its init lines, else its build number
                r.setdefault("inferred", {})["era"] = f"{era[0]}: {era[1]}"
                if era[0] != cm.load_runtime(rt).quantized_prefill:     # mmq is the model's own path: no option
                    ropts["era"] = era[0]
                    if era[1].startswith("build"):
                        soft.add("era")
            coop = r.get("coopmat")     # ggml_vulkan's device line: "matrix cores: KHR_coopmat"
            if rt == "llama.cpp-vulkan" and coop in cm.load_runtime(rt).options.get("coopmat", {}).get("values", {}):
                ropts["coopmat"] = coop
            elif rt == "llama.cpp-vulkan" and coop == "none" and "coopmat" in side_opts:
                raise SystemExit(f"{where}: the paste's device line says no matrix cores, the sidecar's options "
                                 f"coopmat={side_opts['coopmat']}")
            fork = rtm.vulkan_fork(r, rt_text) if rt == "llama.cpp-vulkan" else None
            if fork:       # ik_llama.cpp's port of the Vulkan backend (its tool, else the sidecar's runtime text)
                ropts["fork"] = fork[0]
                r.setdefault("inferred", {})["fork"] = f"{fork[0]} ({fork[1]})"
            for k, v in side_opts.items():          # the sidecar's `options:` line (era, coopmat, ...)
                prof = cm.load_runtime(rt)
                if k not in prof.options:
                    raise SystemExit(f"{os.path.basename(side_path)}: option {k!r} is not one of the {rt} model's "
                                     f"({', '.join(prof.options)})")
                vals = prof.options[k].get("values")
                if vals and v not in vals:
                    raise SystemExit(f"{os.path.basename(side_path)}: option {k}={v}: the {rt} model takes {', '.join(vals)}")
                if k in ropts and ropts[k] != v and k not in rec.get("defaults", []) and k not in soft:
                    raise SystemExit(f"{where}: the records say {k}={ropts[k]}, the sidecar's options {k}={v}")
                ropts[k] = v
                from_sidecar.append(f"runtime_options.{k}")
                if k == "ubatch":
                    rec["n_ubatch"] = int(v)
                    rec.pop("defaults", None)
            rec["runtime_options"] = ropts
            if id(r) in offload_of:       # partly on the CPU: the check prices its placement (never the fit)
                rec.update(offload_run=True, **offload_of[id(r)])
                if side.get("host"):        # the sidecar's `host:` line: a host profile (data/hosts/) or a file
                    rec["host"] = side["host"].strip()
            if len(tables) > 1:
                rec["table"] = ti + 1
            rec.update(source=url, date=meta["date"], command=meta["command"],
                       note=(note + "; " if note else "") + f"read by bench/public_records.py's generic path from {name} "
                            f"and its sidecar; an option stated nowhere is the {rt} model's default (`defaults`)",
                       line=where, inferred=r.get("inferred") or {})
            if from_sidecar:
                rec["from_sidecar"] = from_sidecar
            out.append(rec)
    return sid, out


def _missing(r: dict, missing: list) -> str:
    """Why a record lacks its card, model or weights: what neither the paste nor the sidecar states, and
    what the paste states that glmbench has no profile or config of (a card outside the catalog, a model
    no built-in is)."""
    said, unstated = [], []
    for k in missing:
        if k == "hardware" and r.get("device"):
            said.append(f"card {r['device']!r} is not in glmbench's GPU catalog (`glmbench hardware` lists it)")
        elif k == "model" and (r.get("model_type") or "matches no built-in" in str((r.get("inferred") or {}).get("model"))):
            what = r.get("model_type") or str(r["inferred"]["model"])
            said.append(f"model {what!r}" + (f" ({r['model_n_params'] / 1e9:.2f} B params)" if r.get("model_n_params") else "")
                        + " is no built-in model, and no HF config beside the pastes is named by the sidecar's model "
                          "line or the file name (put its config.json there)")
        else:
            unstated.append("card" if k == "hardware" else k)
    return "; ".join(([f"the {', '.join(unstated)} stated neither in the paste nor in the sidecar"] if unstated else []) + said)


def pasted_files(src) -> list:
    return sorted(p for p in glob.glob(os.path.join(src, "*"))
                  if os.path.isfile(p) and p.lower().endswith(PASTED)
                  and not os.path.basename(p).lower().startswith("readme"))


def main(argv):
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0], usage=__doc__.split("\n\n")[1].strip())
    ap.add_argument("dir")
    ap.add_argument("--out", default=OUT, help="where the records go (default glmbench/data/public/)")
    ap.add_argument("--generic", action="store_true", help="read every file the generic way, SOURCES' too")
    ap.add_argument("--keep-batched", action="store_true",
                    help="keep llama-batched-bench's records (several streams) and serving benchmarks' runs as they ran "
                         "(`serving_run`) of the files read the generic way: for bench_public_fit.py --check, never for "
                         "the fit's glmbench/data/public/")
    a = ap.parse_args(argv)
    if not os.path.isdir(a.dir):
        raise SystemExit(f"{a.dir}: not a folder")
    src, out_dir = a.dir, a.out
    os.makedirs(out_dir, exist_ok=True)
    n, n_src, known = 0, 0, set()
    if not a.generic:
        for sid, meta in SOURCES.items():
            if not os.path.isfile(os.path.join(src, meta["file"])):
                continue
            known.add(meta["file"])
            recs = _records(sid, meta, src)
            _write(sid, recs, out_dir)
            n, n_src = n + len(recs), n_src + 1
        if os.path.isfile(os.path.join(src, VLLM["file"])):
            known.add(VLLM["file"])
            recs = _vllm(src)
            _write("qwen3-30b-a3b-bf16_h100_vllm", recs, out_dir)
            n, n_src = n + len(recs), n_src + 1
    seen = {}
    cfgs = folder_configs(src)
    errors = []
    for p in pasted_files(src):
        if os.path.basename(p) in known:
            continue
        if os.path.basename(p) in cfgs:
            print(f"{os.path.basename(p)}: an HF config, for the pastes that name it")
            continue
        notes = []
        try:
            sid, recs = generic_records(p, cfgs, keep_batched=a.keep_batched, notices=notes)
        except Skip as e:
            print(f"skipped {os.path.basename(p)}: {e}")
            continue
        except SystemExit as e:
            # the paste and its sidecar disagree (runtime, an option, the model): this file is left out
            # with the reason, and the others are still read
            errors.append(os.path.basename(p))
            print(f"error, left out {os.path.basename(p)}: {e}")
            continue
        except Exception as e:          # noqa: BLE001 - a file the importer cannot read must not stop the others
            errors.append(os.path.basename(p))
            print(f"error, left out {os.path.basename(p)}: {type(e).__name__}: {e} (not read; please report it)")
            continue
        if sid in seen or (not a.generic and sid in SOURCES):
            errors.append(os.path.basename(p))
            print(f"error, left out {os.path.basename(p)}: source id {sid!r} is also "
                  f"{seen.get(sid, 'a SOURCES entry')}'s; rename one file")
            continue
        seen[sid] = os.path.basename(p)
        for note in notes:     # what the importer assumed or merged, said with the file's records
            print(f"note {note.replace(p, os.path.basename(p), 1)}")
        for m in {str(r.get("model")) for r in recs if str(r.get("model", "")).startswith("configs/")}:
            # a config the records name: copied beside them (bench_public_fit --check reads it there)
            os.makedirs(os.path.join(out_dir, "configs"), exist_ok=True)
            shutil.copyfile(cfgs[m[len("configs/"):]], os.path.join(out_dir, m))
        _write(sid, recs, out_dir)
        print(f"{os.path.basename(p)}: {len(recs)} records -> {sid}.json (generic: importer + sidecar)")
        n, n_src = n + len(recs), n_src + 1
    print(f"{n} records from {n_src} sources -> {os.path.normpath(out_dir)}")
    if errors:
        print(f"{len(errors)} file(s) left out for the errors above: {', '.join(errors)}")


def _write(sid, recs, out_dir=OUT):
    path = os.path.join(out_dir, sid + ".json")
    tmp = path + ".tmp"
    with open(tmp, "w") as f:
        f.write("[\n" + ",\n".join(json.dumps(r, sort_keys=False) for r in recs) + "\n]\n")
    os.replace(tmp, path)


if __name__ == "__main__":
    main(sys.argv[1:])

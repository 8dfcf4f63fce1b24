"""Runtime models: the runtimes as users name them, with the options they set.

    from glmbench.predict import runtime
    runtime.names()                               # ['ik_llama.cpp', 'llama.cpp', 'llama.cpp-vulkan', 'vllm']
    p = runtime.load("llama.cpp", fa=1, ubatch=2048)   # a RuntimeProfile named "llama.cpp[fa=1,ubatch=2048]"
    runtime.describe("ik_llama.cpp")              # what it models, its options, its fit and error
    runtime.from_record(rec)                      # the runtime model a measured record ran on

A runtime model is a runtime profile (costmodel.RuntimeProfile, data/runtime/<name>.json) with a
kernel table (glmbench.predict.kernels: which kernel each op runs, how fast) fitted to published
results (glmbench.predict.jointfit, bench/bench_public_fit.py) and a list of the options its users
set: `fa` (llama-bench -fa 0|1), `ubatch` (-ub N / vLLM's max_num_batched_tokens), `mla`
(ik_llama.cpp -mla 2|3), `era` (a build range where the data shows a kernel change), `coopmat`
(Vulkan's cooperative-matrix extension), `fork` (whose Vulkan backend: mainline or ik_llama.cpp's
port). `ideal` and `typical` are physics profiles, not runtime
models: they take no options. An option a runtime does not have is one ValueError naming those it
has; a name that is no runtime is one ValueError naming those there are.
"""
from __future__ import annotations

import re

from glmbench.predict import costmodel as cm

PHYSICS = ("ideal", "typical")


def names() -> list[str]:
    """The built-in runtime models (profiles with options; not ideal/typical)."""
    return [n for n in cm.list_runtimes() if n not in PHYSICS and cm.load_runtime(n).options]


def load(name: str, **options) -> cm.RuntimeProfile:
    """A runtime model with options set (None values are ignored): load("llama.cpp", fa=0)."""
    base = str(name).split("[", 1)[0]
    if base not in cm.list_runtimes():
        raise ValueError(f"unknown runtime {base!r}; runtime models: {', '.join(names())} "
                         f"(physics profiles: {', '.join(PHYSICS)})")
    prof = cm.load_runtime(name)
    opts = {k: v for k, v in options.items() if v is not None}
    if opts and not prof.options:
        raise ValueError(f"runtime profile {base!r} takes no options ({', '.join('--' + k for k in opts)}); "
                         f"the runtime models that do: {', '.join(names())}")
    return prof.with_options(**opts)


def options(name: str) -> dict:
    """{option: what it does and the values it takes} of a runtime model."""
    prof = cm.load_runtime(str(name).split("[", 1)[0])
    out = {}
    for k, spec in prof.options.items():
        vals = list(spec["values"]) if "values" in spec else [f">= {spec.get('min', 1)}"]
        out[k] = {"values": vals, "doc": spec.get("doc", "")}
    return out


def describe(name: str) -> str:
    """A few lines: what the runtime model is, its options, what its fit rests on and its error."""
    prof = cm.load_runtime(str(name).split("[", 1)[0])
    L = [f"{prof.name}: {prof.description}"]
    for k, o in options(name).items():
        L.append(f"  --{k} {'|'.join(o['values'])}: {o['doc']}")
    c = prof.calibration or {}
    if c:
        L.append(f"  fitted to {c.get('n_points')} public points; in-sample MAPE {100 * (c.get('mape') or 0):.1f}%, "
                 f"leave-one-source-out {100 * (c.get('loo_mape') or 0):.1f}% (decode and prefill pooled)")
        b = c.get("cv_bands")
        for key in ("decode", "prefill") if b else ():
            cells = [f"{cls} {100 * b[key][cls]:.1f}% ({b[key]['n'][cls]} points"
                     + (f"; {b[key]['held_out'][cls]['n']} published points never fitted: "
                        f"{100 * b[key]['held_out'][cls]['mape']:.1f}%" if (b[key].get("held_out") or {}).get(cls) else "")
                     + ")" for cls in cm.BAND_CLASSES if b[key].get(cls) is not None]
            if cells:
                L.append(f"  {key} band (leave-one-source-out, the band of its {key} records): " + ", ".join(cells))
    return "\n".join(L)


def from_record(r: dict) -> str | None:
    """The runtime model a measured record ran on: its `runtime` field when that names one, else
    llama.cpp (or llama.cpp-vulkan for a Vulkan backend) for a llama-bench / sweep-bench record."""
    rt = r.get("runtime")
    if isinstance(rt, str) and rt.split("[", 1)[0] in names():
        return rt.split("[", 1)[0]
    be = str(r.get("backends") or "").lower()
    tool = str(r.get("tool") or "").lower()
    if "vulkan" in be:
        return "llama.cpp-vulkan"
    if "ik_llama" in tool:
        return "ik_llama.cpp"
    if "llama" in tool or be in ("cuda",):
        return "llama.cpp"
    if "vllm" in tool:
        return "vllm"
    return None


# Mainline llama.cpp's CUDA path for a quantized matrix times a batch of more than ~32 tokens (prefill):
# builds of early / mid 2024 dequantized to f16 and ran cuBLAS on tensor cores (their ggml_cuda_init
# printed CUDA_USE_TENSOR_CORES: yes); from PR 8075 (2024-06, about build 3200) int8 MMQ is the default
# (the init lines then print GGML_CUDA_FORCE_CUBLAS: no). The llama.cpp runtime model's option `era`
# (2024-cublas / mmq). A table that prints neither line: by its build number, outside the uncertain
# span around the change (before ERA_CUBLAS_BEFORE: 2024-cublas; from ERA_MMQ_FROM on: mmq)
ERA_CUBLAS_BEFORE, ERA_MMQ_FROM = 3100, 3300


def cuda_prefill_era(flags: dict, build: int | None) -> tuple[str, str] | None:
    """(era, why) of a mainline llama.cpp CUDA run from its ggml_cuda_init flags or build number;
    None when neither tells."""
    if flags.get("GGML_CUDA_FORCE_CUBLAS") == "yes" or flags.get("CUDA_USE_TENSOR_CORES") == "yes":
        k = "GGML_CUDA_FORCE_CUBLAS" if flags.get("GGML_CUDA_FORCE_CUBLAS") == "yes" else "CUDA_USE_TENSOR_CORES"
        return "2024-cublas", f"ggml_cuda_init's {k}: yes (quantized prefill: dequantize + cuBLAS)"
    if flags.get("GGML_CUDA_FORCE_CUBLAS") == "no" or flags.get("GGML_CUDA_FORCE_MMQ") == "yes":
        return "mmq", "ggml_cuda_init's GGML_CUDA_FORCE_CUBLAS: no (quantized prefill: MMQ)"
    if isinstance(build, int) and build < ERA_CUBLAS_BEFORE:
        return "2024-cublas", f"build {build}, before llama.cpp's MMQ default (PR 8075, mid-2024)"
    if isinstance(build, int) and build >= ERA_MMQ_FROM:
        return "mmq", f"build {build}, after llama.cpp's MMQ default (PR 8075, mid-2024)"
    return None


def record_era(prof: cm.RuntimeProfile, r: dict) -> tuple[str, str] | None:
    """(era, why) a measured mainline CUDA record states for `prof`'s `era` option (cuda_prefill_era
    of its init lines or build number), where the profile takes that value; else None."""
    vals = prof.options.get("era", {}).get("values") or {}
    if not vals or not str(r.get("backend") or "CUDA").upper().startswith("CUDA"):
        return None
    got = cuda_prefill_era(r.get("cuda_flags") or {}, r.get("build_number"))
    return got if got and got[0] in vals else None


def vulkan_fork(r: dict, text: str | None = None) -> tuple[str, str] | None:
    """(fork, why) of a Vulkan record for llama.cpp-vulkan's `fork` option, or None (mainline, the
    option's default). ik_llama.cpp where its llama-bench printed the table (its own columns); where
    `text` (a sidecar's runtime line) names ik_llama.cpp and not mainline; or where the table is
    ik_llama.cpp's sweep-bench and `text` does not name mainline (sweep-bench has a mainline port
    that prints the same header)."""
    tool = str(r.get("tool") or "")
    t = (text or "").lower()
    ik_text = "ik_llama" in t
    main_text = bool(re.search(r"mainline|ggml-org|ggerganov", t))
    if tool == "llama-bench (ik_llama.cpp)":
        return "ik_llama.cpp", f"the tool is ik_llama.cpp's ({tool})"
    if ik_text and not main_text:
        return "ik_llama.cpp", "the runtime text names ik_llama.cpp"
    if "ik_llama" in tool and not main_text:
        return "ik_llama.cpp", f"the tool is ik_llama.cpp's ({tool})"
    return None


def options_from_record(prof: cm.RuntimeProfile, r: dict) -> dict:
    """The options of a runtime model a measured record states: `flash_attn` (llama-bench -fa) as
    `fa`, `n_ubatch` as `ubatch`, mainline CUDA's quantized prefill path as `era` (its ggml_cuda_init
    lines or build number, cuda_prefill_era), ik_llama.cpp's Vulkan port as `fork` (vulkan_fork),
    and a record's own `runtime_options`; only those the profile has."""
    out = {}
    fa = r.get("flash_attn")
    if "fa" in prof.options and fa is not None and fa != "":
        if isinstance(fa, str):
            fa = fa.strip().lower() in ("1", "true", "on", "yes")
        out["fa"] = int(bool(fa))
    ub = r.get("n_ubatch")
    if "ubatch" in prof.options and isinstance(ub, int) and not isinstance(ub, bool) and ub > 0:
        out["ubatch"] = ub
    era = record_era(prof, r)     # mainline CUDA's quantized prefill path, as the paste tells it
    if era and era[0] != prof.quantized_prefill:
        out["era"] = era[0]
    fork = vulkan_fork(r) if "fork" in prof.options else None   # ik_llama.cpp's port of the Vulkan backend
    if fork and fork[0] in prof.options["fork"].get("values", {}):
        out["fork"] = fork[0]
    for k, v in (r.get("runtime_options") or {}).items():
        if k in prof.options:
            out[k] = int(v) if k == "ubatch" else v
    return out

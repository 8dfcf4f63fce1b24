"""Writes glmbench/models/llama_cpp_tensors.py: for each architecture glmbench reads from GGUF, every tensor name
llama.cpp's loader can create (any flag: required, TENSOR_NOT_REQUIRED, TENSOR_DUPLICATED, TENSOR_SKIP), read from
a vendored llama.cpp's source:

    python tools/llama_cpp_tensor_table.py /root/.cache/glmbench/llama_cpp_python-0.3.36 > glmbench/models/llama_cpp_tensors.py

The source's llama-model.cpp maps each architecture (llama-arch.cpp's LLM_ARCH_NAMES) to a llama_model_X class;
X's load_arch_tensors (src/models/*.cpp, or its parent's, src/models/models.h) creates tensors with
create_tensor(tn(LLM_TENSOR_Y, "suffix", i[, e]), ...), directly or through llama_model_base's
create_tensor_qkv / create_tensor_gate_up_exps; LLM_TENSOR_NAMES gives each Y's name ("blk.%d.attn_q").
llama_model::load_tensors then creates, for every architecture, the optional per-tensor ".scale" /
".input_scale" tensors beside a weight the loader created (NVFP4); those are listed once (GENERIC_SCALES).
A tensor in a file that no create_tensor call names is one llama_model_loader::done_getting_tensors refuses
("wrong number of tensors; expected N, got M"). tests/test_gguf_loader_rules.py checks the written table against
the source named by GLMBENCH_LLAMA_CPP_SRC.
"""
from __future__ import annotations

import os
import re
import sys

# tn(LLM_TENSOR_X, "suffix", ...) or, without a suffix, tn(LLM_TENSOR_X, i) / tn(LLM_TENSOR_X) (e.g. blk.%d.ssm_a)
TN = re.compile(r"\btn\(\s*(LLM_TENSOR_[A-Z0-9_]+)\s*(?:,\s*\"(\w+)\"|(?=[,)]))")
HELPERS = {
    "create_tensor_qkv": ("LLM_TENSOR_ATTN_QKV", "LLM_TENSOR_ATTN_Q", "LLM_TENSOR_ATTN_K", "LLM_TENSOR_ATTN_V"),
    "create_tensor_gate_up_exps": ("LLM_TENSOR_FFN_GATE_UP_EXPS", "LLM_TENSOR_FFN_GATE_EXPS", "LLM_TENSOR_FFN_UP_EXPS"),
}


def _src(root: str) -> str:
    for d in (os.path.join(root, "vendor", "llama.cpp", "src"), os.path.join(root, "src")):
        if os.path.isfile(os.path.join(d, "llama-model.cpp")):
            return d
    raise SystemExit(f"{root}: no llama.cpp source (vendor/llama.cpp/src/llama-model.cpp)")


def _body(text: str, start: int) -> str:
    """The {...} block starting at the first '{' from `start`."""
    i = text.index("{", start)
    depth = 0
    for j in range(i, len(text)):
        if text[j] == "{":
            depth += 1
        elif text[j] == "}":
            depth -= 1
            if depth == 0:
                return text[i:j + 1]
    raise ValueError("unbalanced braces")


def _names(body: str, tensor_names: dict) -> set:
    out = set()
    for t, suffix in TN.findall(body):
        out.add(f"{tensor_names[t]}.{suffix}" if suffix else tensor_names[t])
    for helper, tensors in HELPERS.items():
        if re.search(rf"\b{helper}\(", body):
            for t in tensors:
                out.add(f"{tensor_names[t]}.weight")
                if helper == "create_tensor_qkv":
                    out.add(f"{tensor_names[t]}.bias")
    return out


def table(root: str, archs) -> tuple[dict, set]:
    src = _src(root)
    arch_cpp = open(os.path.join(src, "llama-arch.cpp")).read()
    model_cpp = open(os.path.join(src, "llama-model.cpp")).read()
    models_h = open(os.path.join(src, "models", "models.h")).read()
    arch_names = dict(re.findall(r"\{\s*(LLM_ARCH_[A-Z0-9_]+)\s*,\s*\"([^\"]+)\"\s*\}", arch_cpp))
    tn_block = _body(arch_cpp, arch_cpp.index("LLM_TENSOR_NAMES"))
    tensor_names = dict(re.findall(r"\{\s*(LLM_TENSOR_[A-Z0-9_]+)\s*,\s*\"([^\"]+)\"\s*\}", tn_block))
    mapping = _body(model_cpp, model_cpp.index("llama_model_mapping("))
    cls_of = {}
    for cases, cls in re.findall(r"((?:case\s+LLM_ARCH_[A-Z0-9_]+:\s*)+)return new (llama_model_\w+)\(", mapping):
        for a in re.findall(r"LLM_ARCH_[A-Z0-9_]+", cases):
            cls_of[a] = cls
    parent = dict(re.findall(r"struct (llama_model_\w+)\s*:\s*public (llama_model_\w+)", models_h))
    bodies = {}
    for fn in sorted(os.listdir(os.path.join(src, "models"))):
        if fn.endswith(".cpp"):
            text = open(os.path.join(src, "models", fn)).read()
            for m in re.finditer(r"void (llama_model_\w+)::load_arch_tensors\(", text):
                bodies[m.group(1)] = _body(text, m.end())
    by_name = {v: k for k, v in arch_names.items()}
    out, fused = {}, {}
    for arch in archs:
        cls = cls_of[by_name[arch]]
        while cls not in bodies:
            cls = parent[cls]
        body = bodies[cls]
        out[arch] = sorted(_names(body, tensor_names))
        direct = {f"{tensor_names[t]}.{suf}" if suf else tensor_names[t] for t, suf in TN.findall(body)}
        # a fused tensor's parts created only where the fused one is not (create_tensor_qkv: attn_q / k / v,
        # and their biases beside a fused bias; create_tensor_gate_up_exps: the experts' gate / up), or
        # the same written out (gemma4.cpp: `if (!layer.wqkv)`, `if (layer.ffn_gate_up_exps == nullptr)`)
        if ("create_tensor_qkv(" in body and "blk.%d.attn_q.weight" not in direct) or "if (!layer.wqkv)" in body:
            fused.setdefault("qkv", []).append(arch)
        if ("create_tensor_gate_up_exps(" in body and "blk.%d.ffn_gate_exps.weight" not in direct) or \
                "if (layer.ffn_gate_up_exps == nullptr)" in body:
            fused.setdefault("gate_up_exps", []).append(arch)
    # llama_model::load_tensors' generic pass after load_arch_tensors (every architecture)
    i = model_cpp.index("load_arch_tensors(ml);")
    generic = model_cpp[i:model_cpp.index("done_getting_tensors", i)]
    scales = {n for n in _names(generic, tensor_names)}
    return out, scales, fused


def main(argv=None) -> int:
    args = list(sys.argv[1:] if argv is None else argv)
    root = args[0] if args else os.environ.get("GLMBENCH_LLAMA_CPP_SRC", "")
    sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
    from glmbench.models.gguf_file import ARCHITECTURES, VL_TEXT_ARCHITECTURES
    archs = sorted(set(ARCHITECTURES) | set(VL_TEXT_ARCHITECTURES))
    tab, scales, fused = table(root, archs)
    print(render(tab, scales, fused, os.path.basename(os.path.normpath(root))))
    return 0


def render(tab: dict, scales: set, fused: dict, version: str) -> str:
    lines = ['"""Every tensor name llama.cpp\'s loader can create, by architecture (written by',
             f'tools/llama_cpp_tensor_table.py from {version}\'s vendored llama.cpp; do not edit by hand).',
             '"blk.%d." names are per layer ("blk.%d.ffn_gate.%d.": per expert). A name in a file that its',
             "architecture's list lacks is a tensor llama.cpp's loader never creates: llama_model_loader::",
             'done_getting_tensors refuses the file ("wrong number of tensors; expected N, got M")."""', "",
             f"SOURCE = {version!r}", "",
             "# llama_model::load_tensors' generic pass (every architecture): a weight's optional .scale / .input_scale",
             "GENERIC_SCALES = frozenset({"]
    lines += [f"    {n!r}," for n in sorted(scales)]
    lines += ["})", "",
              "# architectures whose loader creates a fused tensor's parts only where the fused one is not in the file",
              "# (llama_model_base::create_tensor_qkv: attn_qkv or attn_q / attn_k / attn_v, and attn_qkv.bias or their",
              "# biases; create_tensor_gate_up_exps: ffn_gate_up_exps or ffn_gate_exps / ffn_up_exps)",
              f"FUSED_QKV = frozenset({sorted(fused.get('qkv', []))!r})",
              f"FUSED_GATE_UP_EXPS = frozenset({sorted(fused.get('gate_up_exps', []))!r})", "", "CREATED = {"]
    for arch, names in tab.items():
        lines.append(f"    {arch!r}: frozenset({{")
        lines += [f"        {n!r}," for n in names]
        lines.append("    }),")
    lines.append("}")
    return "\n".join(lines)


if __name__ == "__main__":
    sys.exit(main())

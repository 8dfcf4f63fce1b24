"""llama.cpp's own converter (convert_hf_to_gguf.py) on tiny HF models (test helper).

The converter comes from llama-cpp-python's source package, which vendors llama.cpp
(vendor/llama.cpp: convert_hf_to_gguf.py, its `conversion` package and gguf-py):

    pip download --no-deps --no-binary llama-cpp-python llama-cpp-python==0.3.36 -d DIR
    tar xzf DIR/llama_cpp_python-0.3.36.tar.gz -C DIR

`source()` finds it: $GLMBENCH_LLAMA_CPP_SRC (the extracted sdist, or its vendor/llama.cpp), else
an extraction under $XDG_CACHE_HOME/glmbench (~/.cache/glmbench; .ci/run puts one there).

It runs as llama.cpp's users run it, in a subprocess with its own gguf-py, with one change: the
vocabulary. The converter writes the tokenizer from tokenizer files and refuses a BPE
pre-tokenizer whose hash it does not know (get_vocab_base_pre); a tiny random model has no
published tokenizer, so set_vocab writes a plain list of `vocab_size` tokens instead. Every tensor,
every other metadata key and the layout are the converter's own.
"""
from __future__ import annotations

import glob
import json
import os
import subprocess
import sys

VERSION = "0.3.36"

_RUNNER = r"""
import json
import sys
src, LOADABLE, jobs = sys.argv[1], sys.argv[2] == "1", json.loads(sys.argv[3])
sys.path.insert(0, src)
sys.path.insert(1, src + "/gguf-py")
import convert_hf_to_gguf as conv
import gguf


def plain_vocab(self):
    n = int(self.hparams["vocab_size"])
    w = self.gguf_writer
    w.add_tokenizer_model("gpt2")
    w.add_tokenizer_pre("default")
    w.add_token_list([f"<t{i}>" for i in range(n)])
    w.add_token_types([gguf.TokenType.NORMAL] * n)
    if LOADABLE:  # llama.cpp's loader (llama-bench) also needs BPE merges and bos/eos ids
        w.add_token_merges([f"a{i} b{i}" for i in range(n // 2)])
        w.add_bos_token_id(0)
        w.add_eos_token_id(1)


_get = conv.get_model_class


def get_model_class(*a, **k):   # the model classes load lazily: patch the one chosen
    cls = _get(*a, **k)
    # (and the classes it nests and delegates to: conversion/mistral3.py's Mistral3Model runs a Ministral3Model)
    nested = [v for v in vars(cls).values() if isinstance(v, type)]
    for top in [cls] + nested:
        for c in top.__mro__:
            if "set_vocab" in c.__dict__:
                c.set_vocab = plain_vocab
    return cls


conv.get_model_class = get_model_class
for argv in jobs:   # each as its own command line (the imports, torch's among them, paid once)
    sys.argv = ["convert_hf_to_gguf.py", *argv]
    conv.main()
"""


def source() -> str | None:
    """The vendored llama.cpp folder holding convert_hf_to_gguf.py, or None."""
    cands = []
    env = os.environ.get("GLMBENCH_LLAMA_CPP_SRC")
    if env:
        cands += [env, os.path.join(env, "vendor", "llama.cpp")]
    cache = os.path.join(os.environ.get("XDG_CACHE_HOME") or os.path.expanduser("~/.cache"), "glmbench")
    cands += sorted(glob.glob(os.path.join(cache, "llama_cpp_python-*", "vendor", "llama.cpp")), reverse=True)
    for c in cands:
        if os.path.isfile(os.path.join(c, "convert_hf_to_gguf.py")) and os.path.isdir(os.path.join(c, "gguf-py")):
            return c
    return None


def skip_reason() -> str:
    env = os.environ.get("GLMBENCH_LLAMA_CPP_SRC")
    where = f"GLMBENCH_LLAMA_CPP_SRC={env!r} holds no vendor/llama.cpp/convert_hf_to_gguf.py; " if env else ""
    return (f"llama.cpp's convert_hf_to_gguf.py not found: {where}set GLMBENCH_LLAMA_CPP_SRC to an extracted "
            f"llama-cpp-python=={VERSION} sdist (pip download --no-deps --no-binary llama-cpp-python "
            f"llama-cpp-python=={VERSION}), or extract it under ~/.cache/glmbench")


def save_hf(model, cfg, folder) -> str:
    """save_pretrained in float32 (safetensors) plus a tokenizer.json of vocab_size plain tokens
    (Gemma 3's converter cuts the embedding to the tokenizer's size)."""
    os.makedirs(folder, exist_ok=True)
    model.save_pretrained(folder, safe_serialization=True)
    V = cfg.get_text_config().vocab_size if hasattr(cfg, "get_text_config") else cfg.vocab_size
    with open(os.path.join(folder, "tokenizer.json"), "w") as f:
        json.dump({"model": {"type": "WordLevel", "vocab": {f"<t{i}>": i for i in range(V)}}, "added_tokens": []}, f)
    return str(folder)


def convert(folder, out, outtype="f16", *, split_max_tensors: int | None = None, timeout=300,
            loadable: bool = False, prelude: str = "") -> str:
    """Run the converter on HF folder `folder` -> `out` (.gguf). With `split_max_tensors` the
    converter writes parts OUT-00001-of-0000N.gguf; the first part's path is returned. `loadable`:
    also write the BPE merges and bos/eos ids llama.cpp's own loader requires of a gpt2-type
    vocabulary (for files llama-bench runs; glmbench's reader does not need them). `prelude`: Python
    run before the converter is imported (a test's patch of what it calls)."""
    (path,) = convert_folders([(folder, out, outtype, split_max_tensors)], timeout=timeout, loadable=loadable,
                              prelude=prelude)
    return path


def convert_folders(jobs, *, timeout=300, loadable: bool = False, prelude: str = "") -> list[str]:
    """convert() for each (folder, out, outtype, split_max_tensors) of `jobs`, in order, in one subprocess
    (one converter command line after another: its imports, torch's among them, paid once); the paths
    as convert() returns them."""
    src = source()
    if src is None:
        raise RuntimeError(skip_reason())
    argvs = []
    for folder, out, outtype, split_max_tensors in jobs:
        args = [os.fspath(folder), "--outfile", os.fspath(out), "--outtype", outtype]
        if split_max_tensors:
            args += ["--split-max-tensors", str(split_max_tensors)]
        argvs.append(args)
    env = dict(os.environ, NO_LOCAL_GGUF="1", PYTHONPATH="")
    r = subprocess.run([sys.executable, "-c", prelude + _RUNNER, src, "1" if loadable else "0", json.dumps(argvs)],
                       capture_output=True, text=True, env=env,
                       timeout=None if timeout is None else timeout * len(argvs))
    if r.returncode:
        raise RuntimeError(f"convert_hf_to_gguf.py failed ({r.returncode}):\n{r.stderr[-4000:]}")
    paths = []
    for _, out, _, split_max_tensors in jobs:
        if split_max_tensors:
            parts = sorted(glob.glob(os.fspath(out)[:-len(".gguf")] + "-*-of-*.gguf"))
            if not parts:
                raise RuntimeError(f"the converter wrote no split parts for {out}:\n{r.stderr[-2000:]}")
            paths.append(parts[0])
        else:
            paths.append(os.fspath(out))
    return paths


class Conversions:
    """A test module's files made by the converter. `build(case, tmp)` saves a case's HF folder; the
    first request converts it and every other case the run's selected tests of the module take (their
    `param` parameter, among `cases`: `select`) in one converter process (convert_folders), its
    imports, torch's among them, paid once instead of once per case. `kinds`: {name: (outtype,
    split_max_tensors)}, each written to TMP/CASE-<name>.gguf."""

    def __init__(self, build, cases, *, param: str = "case", kinds: dict | None = None, prelude: str = ""):
        self.build, self.cases, self.param, self.prelude = build, tuple(cases), param, prelude
        self.kinds = kinds or {"f16": ("f16", None), "q8_0": ("q8_0", None)}
        self.done: dict = {}
        self.selected: list = []

    def fixture(self, name: str):
        """The module's temporary-folder fixture (module scope, a folder named `name`), which also picks the
        cases converted together (select): assign it to the module's `tmp`."""
        import pytest

        @pytest.fixture(scope="module")
        def tmp(tmp_path_factory, request):
            self.select(request)
            return str(tmp_path_factory.mktemp(name))
        return tmp

    def select(self, request) -> None:
        """The cases this run's selected tests of the requesting module take."""
        self.selected = list(dict.fromkeys(
            it.callspec.params[self.param] for it in request.session.items
            if hasattr(it, "callspec") and getattr(it, "module", None) is request.module
            and it.callspec.params.get(self.param) in self.cases))

    def __call__(self, case, tmp) -> tuple:
        """(the case's HF folder, {kind: path})."""
        if (case, tmp) not in self.done:
            batch = [c for c in dict.fromkeys([case, *self.selected]) if (c, tmp) not in self.done]
            folders = {c: self.build(c, tmp) for c in batch}
            jobs = [(folders[c], os.path.join(tmp, f"{c}-{k}.gguf"), outtype, split)
                    for c in batch for k, (outtype, split) in self.kinds.items()]
            paths = iter(convert_folders(jobs, prelude=self.prelude))
            for c in batch:
                self.done[(c, tmp)] = (folders[c], {k: next(paths) for k in self.kinds})
        return self.done[(case, tmp)]


def hf_config_with(g, base: dict, **meta) -> dict:
    """glmbench's gguf_file.hf_config of the read file `g` with its metadata reset to `base` and then each
    `meta` key (without the architecture prefix) set, or deleted where None: one converted file, many
    variants of its metadata, nothing rewritten."""
    from glmbench.models import gguf_file
    g.metadata.clear()
    g.metadata.update(base)
    for k, v in meta.items():
        k = f"{g.architecture}.{k}"
        if v is None:
            del g.metadata[k]
        else:
            g.metadata[k] = v
    return gguf_file.hf_config(g)

"""docs/API.md is the contract between the parts: every keyword argument its signatures show
(`name(..., kw=default)`) must be a parameter of the function it names, so code written from the
doc runs. Only keywords are checked (positional names in the doc are descriptive)."""
import importlib
import inspect
import os
import re

import pytest

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))

# the prefixes API.md writes before a function, and what they stand for
MODULES = {
    "costmodel": "glmbench.predict.costmodel", "replay": "glmbench.predict.replay", "search": "glmbench.predict.search",
    "sweep": "glmbench.predict.sweep", "hardware": "glmbench.predict.hardware", "traces": "glmbench.predict.traces",
    "prices": "glmbench.predict.prices", "protocol": "glmbench.measure.protocol", "measure": "glmbench.measure",
    "machine": "glmbench.measure.machine", "quant": "glmbench.core.quant", "configs": "glmbench.models.configs",
    "model": "glmbench.models.model", "report": "glmbench.report", "workload": "glmbench.report.workload",
    "plots": "glmbench.report.plots", "importers": "glmbench.results.importers", "compare": "glmbench.results.compare",
    "bench": "glmbench.bench",
}
INSTANCES = {"cache": ("glmbench.core.kvcache", "KVCache"), "m": ("glmbench.models.model", "Model"),
             "layer": ("glmbench.models.model", "Layer")}
BARE = ("glmbench.core.ops", "glmbench.core.attention", "glmbench.core.kvcache", "glmbench.vocab", "glmbench.predict.traces",
        "glmbench")


def _statements():
    text = open(os.path.join(ROOT, "docs", "API.md")).read()
    for block in re.findall(r"```python\n(.*?)```", text, re.S):
        cur = ""
        for ln in block.split("\n"):
            if ln.lstrip().startswith("#"):
                continue
            ln = ln.split("  #")[0]
            if ln and not ln[0].isspace() and cur:
                yield cur.strip()
                cur = ""
            cur += " " + ln.strip()
        if cur.strip():
            yield cur.strip()


def _calls(stmt):
    """(name, keyword names) of every `name(...)` at the statement's top level (several per line: `a(); b()`)."""
    for m in re.finditer(r"(?:^|[;|/]\s*|=\s*)([A-Za-z_][\w.]*)\(", stmt):
        i, depth = m.end(), 1
        while i < len(stmt) and depth:
            depth += {"(": 1, "[": 1, "{": 1, ")": -1, "]": -1, "}": -1}.get(stmt[i], 0)
            i += 1
        args, kws, depth, tok = stmt[m.end():i - 1], [], 0, ""
        for ch in args + ",":
            depth += {"(": 1, "[": 1, "{": 1, ")": -1, "]": -1, "}": -1}.get(ch, 0)
            if ch == "," and depth == 0:
                k = re.match(r"\s*([A-Za-z_]\w*)\s*=(?!=)", tok)
                if k:
                    kws.append(k.group(1))
                tok = ""
            else:
                tok += ch
        yield m.group(1), kws


def _resolve(name):
    parts = name.split(".")
    if parts[0] in INSTANCES and len(parts) == 2:
        mod, cls = INSTANCES[parts[0]]
        return getattr(getattr(importlib.import_module(mod), cls), parts[1], None)
    if parts[0] in MODULES:
        obj = importlib.import_module(MODULES[parts[0]])
        for p in parts[1:]:
            obj = getattr(obj, p, None)
        return obj
    if len(parts) <= 2:
        for mod in BARE:
            obj = importlib.import_module(mod)
            for p in parts:
                obj = getattr(obj, p, None)
            if obj is not None:
                return obj
    return None


def _contract():
    out = []
    for stmt in _statements():
        for name, kws in _calls(stmt):
            if kws:
                out.append((name, tuple(kws)))
    return out


def test_api_md_shows_calls_with_keywords():
    calls = _contract()
    assert len(calls) > 50 and ("model.build_layer", ("weights", "seed")) in calls


@pytest.mark.parametrize("name,kws", _contract())
def test_api_md_keywords_are_parameters(name, kws):
    f = _resolve(name)
    if f is None:
        pytest.skip(f"{name}: not a module-level name this test resolves")
    if inspect.isclass(f):
        f = f.__init__
    try:
        ps = inspect.signature(f).parameters
    except (TypeError, ValueError):
        pytest.skip(f"{name}: no signature")
    if any(p.kind == p.VAR_KEYWORD for p in ps.values()):
        return
    assert not [k for k in kws if k not in ps], f"docs/API.md: {name}({', '.join(k + '=' for k in kws)}) but it takes {list(ps)}"

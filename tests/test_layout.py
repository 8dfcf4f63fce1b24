"""The package's layout holds: the prediction side never loads the compiled core or the measured
side, no module imports another in a cycle, the vocabulary at the bottom imports nothing of
glmbench, and the names that cross into C agree with the C core's own tables."""
import ast
import os
import pathlib
import subprocess
import sys

import pytest

ROOT = pathlib.Path(__file__).resolve().parent.parent
PKG = ROOT / "glmbench"

# The prediction side: what `glmbench report/sweep/models/hardware/compare/plot` stand on.
PREDICTION = ("glmbench", "glmbench.vocab", "glmbench.models", "glmbench.models.configs", "glmbench.predict",
              "glmbench.predict.hardware", "glmbench.predict.costmodel", "glmbench.predict.sweep",
              "glmbench.predict.traces", "glmbench.predict.replay", "glmbench.predict.calibrate",
              "glmbench.predict.crossover", "glmbench.results.public",
              "glmbench.results", "glmbench.results.records", "glmbench.results.compare", "glmbench.results.importers",
              "glmbench.report", "glmbench.report.workload", "glmbench.report.findings",
              "glmbench.report.plots", "glmbench.cli")
# What the prediction side must not load: compiled code and the measured side.
MEASURED = ("glmbench.core", "glmbench.cuda", "glmbench.measure", "glmbench.models.model", "glmbench.bench")


def _modules() -> dict[str, pathlib.Path]:
    out = {}
    for p in sorted(PKG.rglob("*.py")):
        rel = p.relative_to(ROOT).with_suffix("")
        parts = list(rel.parts)
        if parts[-1] == "__init__":
            parts = parts[:-1]
        out[".".join(parts)] = p
    return out


def _imports(path: pathlib.Path, name: str, modules: dict) -> set[str]:
    """Every glmbench module `path` imports, at module level or inside functions."""
    is_pkg = path.name == "__init__.py"
    package = name if is_pkg else name.rpartition(".")[0]
    found = set()
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.Import):
            found.update(a.name for a in node.names)
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                anchor = package.split(".")[: len(package.split(".")) - node.level + 1]
                base = ".".join(anchor + ([base] if base else []))
            for a in node.names:
                sub = f"{base}.{a.name}"
                found.add(sub if sub in modules else base)
    return {m for m in found if m in modules}


def _graph() -> dict[str, set[str]]:
    mods = _modules()
    g = {}
    for name, path in mods.items():
        # importing an ancestor package from inside it is not a cycle: it is already initialising
        g[name] = {m for m in _imports(path, name, mods) if m != name and not name.startswith(m + ".")}
    return g


def test_no_import_cycles():
    g = _graph()
    index, low, stack, on, cycles, counter = {}, {}, [], set(), [], [0]

    def visit(v):  # Tarjan's strongly connected components
        index[v] = low[v] = counter[0]
        counter[0] += 1
        stack.append(v)
        on.add(v)
        for w in g.get(v, ()):
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in on:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            comp = []
            while True:
                w = stack.pop()
                on.discard(w)
                comp.append(w)
                if w == v:
                    break
            if len(comp) > 1:
                cycles.append(sorted(comp))

    for v in sorted(g):
        if v not in index:
            visit(v)
    assert not cycles, f"modules that import each other in a cycle: {cycles}"


def test_prediction_side_never_imports_the_measured_side():
    """Statically, including imports inside functions: only the CLI's `measure` command and a
    `host` hardware profile (report.Study, `hardware --save-host`, `calibrate --hardware host`)
    reach the measured side, and they say so."""
    g = _graph()
    allowed = {("glmbench.cli", "glmbench.measure"), ("glmbench.cli", "glmbench.measure.cuda"),  # cmd_measure
               ("glmbench.cli", "glmbench.cuda"), ("glmbench.report", "glmbench.measure.machine"),
               ("glmbench", "glmbench.cuda"),  # glmbench.HAS_CUDA, resolved on first access
               ("glmbench.cli", "glmbench.measure.machine")}  # `hardware --save-host`, `calibrate --hardware host`
    for mod in PREDICTION:
        if mod == "glmbench":
            continue  # its lazy attributes (PEP 562) load the core on first use, by design
        bad = {m for m in g[mod] if m.startswith(MEASURED) and (mod, m) not in allowed}
        assert not bad, f"{mod} imports {sorted(bad)}"


def test_vocab_is_at_the_bottom():
    g = _graph()
    assert g["glmbench.vocab"] == set()
    # everything that needs a shared word reaches it there
    users = {m for m, deps in g.items() if "glmbench.vocab" in deps}
    for m in ("glmbench.models.configs", "glmbench.predict.costmodel", "glmbench.measure.protocol",
              "glmbench.models.model", "glmbench.core.attention", "glmbench.cuda", "glmbench.results.records"):
        assert m in users, m


def test_importing_the_prediction_side_loads_no_compiled_code():
    """In a fresh interpreter: import every prediction module and predict a point; neither the
    compiled core (nor any extension module of glmbench) nor the measured side is loaded."""
    code = (
        "import sys\n"
        f"mods = {PREDICTION!r}\n"
        "import importlib\n"
        "for m in mods: importlib.import_module(m)\n"
        "from glmbench.predict import costmodel as cm\n"
        "from glmbench import report\n"
        "assert cm.decode(cm.Setup('glm-4.7-flash', 'rtx-3090'), 4096).tok_s > 0\n"
        "recs = report.sweep(report.Study(depths=(1024, 4096), concurrency=(1, 2)), progress=False)\n"
        "assert recs\n"
        f"bad = sorted(m for m in sys.modules if m.startswith({MEASURED!r}))\n"
        "so = sorted(m for m, v in sys.modules.items() if m.startswith('glmbench') and\n"
        "            str(getattr(v, '__file__', '') or '').endswith(('.so', '.pyd')))\n"
        "print(bad, so)\n"
        "assert not bad and not so, (bad, so)\n")
    env = dict(os.environ, PYTHONPATH=str(ROOT) + os.pathsep + os.environ.get("PYTHONPATH", ""))
    r = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=env, cwd=ROOT)
    assert r.returncode == 0, r.stdout + r.stderr


def test_mla_strategy_names_agree_with_the_c_core():
    from glmbench import vocab
    try:
        from glmbench.core._loader import _core
    except ImportError as e:
        pytest.skip(f"C core not built: {e}")
    assert tuple(_core.MLA_STRATEGIES) == vocab.MLA_STRATEGIES
    # the bindings take the names, never an index tied to the enum order
    import numpy as np
    from glmbench.core.kvcache import KVCache
    c = KVCache.mla(1, 8, 32, 8, kv="f32")
    with pytest.raises(ValueError, match="`strategy` must be one of naive, absorbed, flash, got 'fast'"):
        _core.mla_attention(np.zeros((1, 2, 16), np.float32), np.zeros((1, 2, 8), np.float32), c, 0,
                            np.zeros((2 * 32, 32), np.float32), 16, 0.0, "fast")


def test_one_default_per_concept():
    """The KV-cache format: one name (`kv`) and one default across the CLI, the API and the
    study; records spell it type_k/type_v as llama-bench does."""
    import inspect

    from glmbench import cli, report, vocab
    from glmbench.predict import costmodel
    d = vocab.DEFAULTS["kv"]
    assert report.Study().kv == d and costmodel.Setup.__dataclass_fields__["kv"].default == d
    p = cli.build_parser()
    for cmd in (["report"], ["sweep"]):
        assert p.parse_args(cmd).kv == d
    try:
        from glmbench.core.kvcache import KVCache
        from glmbench.measure import cpu
        from glmbench.models.model import Model
    except ImportError as e:
        pytest.skip(f"C core not built: {e}")
    assert inspect.signature(Model).parameters["kv"].default == d
    assert inspect.signature(KVCache.mla).parameters["kv"].default == d
    assert inspect.signature(KVCache.gqa).parameters["kv"].default == d
    assert inspect.signature(cpu.measure).parameters["kv"].default == d

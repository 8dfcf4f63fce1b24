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
              "glmbench.report", "glmbench.report.workload", "glmbench.report.findings", "glmbench.report.study",
              "glmbench.report.render", "glmbench.report.labels",
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
               ("glmbench.cli", "glmbench.cuda"), ("glmbench.report.study", "glmbench.measure.machine"),
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


def _fresh(code: str, tmp_path) -> subprocess.CompletedProcess:
    env = dict(os.environ, PYTHONPATH=str(ROOT) + os.pathsep + os.environ.get("PYTHONPATH", ""))
    env.pop("MPLBACKEND", None)
    return subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=env, cwd=tmp_path)


# a command run by main() in the interpreter the code above it set up; its output kept, its status checked
_RUN = (
    "import contextlib, io, sys\n"
    "from glmbench.cli import main\n"
    "def run(*argv, absent=('matplotlib',)):\n"
    "    out, err = io.StringIO(), io.StringIO()\n"
    "    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):\n"
    "        rc = main(list(argv))\n"
    "    assert rc == 0, (argv, rc, err.getvalue())\n"
    "    loaded = [m for m in absent if m in sys.modules]\n"
    "    assert not loaded, f'glmbench {\" \".join(argv)} loaded {loaded}'\n"
    "    return out.getvalue()\n")


def test_light_commands_never_load_matplotlib(tmp_path):
    """`glmbench models`, `hardware`, `runtimes`, `compare`, `sweep` draw nothing: in a fresh interpreter,
    `import glmbench.cli` and each of them leave matplotlib (0.35 s of the CLI's start, when cli.py and
    report/__init__.py imported report.plots at their top) unloaded; the commands that read no result file
    and show no bar load neither the importers nor tqdm either."""
    code = _RUN + (
        "assert 'matplotlib' not in sys.modules\n"
        "light = ('matplotlib', 'tqdm', 'glmbench.results.importers', 'glmbench.report.plots')\n"
        "assert 'glm-4.7-flash' in run('models', absent=light)\n"
        "assert 'rtx-3090' in run('hardware', absent=light)\n"
        "assert 'llama.cpp' in run('runtimes', absent=light)\n"
        "assert '4096' in run('sweep', '--depths', '1K,4K', '--quiet', absent=light[:2])\n"
        "run('sweep', '--depths', '1K,4K', '--out', 'points.json')\n"
        "assert 'points.json' in run('compare', 'points.json')\n"
        "run('compare', 'points.json', 'points.json')\n"
        "assert 'tqdm' in sys.modules and 'glmbench.results.importers' in sys.modules   # (they did run)\n")
    r = _fresh(code, tmp_path)
    assert r.returncode == 0, r.stdout + r.stderr


def test_report_and_plot_still_draw(tmp_path):
    """What draws still loads matplotlib where it draws, and headless: `glmbench report` and `glmbench plot`
    write real PNGs from the same interpreter as the light commands, through matplotlib's Agg canvas
    without pyplot (no GUI backend is ever chosen, MPLBACKEND unset)."""
    code = _RUN + (
        "import os\n"
        "run('models')\n"
        "run('report', '--depths', '1K,4K', '--out', 'rep', '--quiet', absent=('matplotlib.pyplot',))\n"
        "assert 'matplotlib' in sys.modules and 'glmbench.report.plots' in sys.modules\n"
        "pngs = sorted(f for f in os.listdir('rep') if f.endswith('.png'))\n"
        "assert 'generation_vs_context.png' in pngs and 'mla_crossover.png' in pngs, pngs\n"
        "run('sweep', '--depths', '1K,4K', '--quiet', '--out', 'points.json', absent=())\n"
        "shown = run('plot', 'points.json', '--out', 'charts', absent=('matplotlib.pyplot',)).split()\n"
        "assert shown and all(p.endswith('.png') for p in shown), shown\n"
        "for p in [os.path.join('rep', f) for f in pngs] + shown:\n"
        "    with open(p, 'rb') as f:\n"
        "        b = f.read()\n"
        "    assert b[:8] == b'\\x89PNG\\r\\n\\x1a\\n' and len(b) > 10000, (p, len(b))\n"
        "print(len(pngs), len(shown))\n")
    r = _fresh(code, tmp_path)
    assert r.returncode == 0, r.stdout + r.stderr
    n_report, n_plot = map(int, r.stdout.split()[-2:])
    assert n_report >= 5 and n_plot >= 3


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

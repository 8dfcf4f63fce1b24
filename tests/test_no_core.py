"""glmbench without its C extension (no compiler, no OpenMP, e.g. a Mac; or GLMBENCH_CORE=0).

The package is installed from a copy of the source (so no build/ or egg-info lands in the
checkout, and no compiled _core*.so comes along) into a temporary target folder, and every command
runs in a subprocess whose cwd is elsewhere and whose PYTHONPATH is that folder only: the source
tree is never imported. Checked:

  - `pip install` with GLMBENCH_CORE=0 finishes and says it skipped the core; with a compiler
    that fails (CC=false) it finishes too and prints the WARNING (setup.py's BuildExt);
  - report, sweep, models, hardware, compare and plot work, and none of them imports
    glmbench.core, glmbench.measure or glmbench.models.model (an import hook refuses them);
  - a measured op (glmbench.linear, glmbench.Model, `glmbench measure`, `--hardware host`)
    raises an ImportError that says the C core is not available.

pip shows a build's messages only with -v (a quiet `pip install .` hides setup.py's stderr), so
the installs here run with -v to read them.
"""
from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
FORBIDDEN = ("glmbench.core", "glmbench.measure", "glmbench.models.model")

pytestmark = [pytest.mark.skipif(not (ROOT / "setup.py").exists() or not (ROOT / "glmbench").is_dir(),
                                 reason="needs the source tree (setup.py) to install from"),
              pytest.mark.slow]   # pip installs

# Runs `python -m glmbench ARGS` (runpy, as -m does) with an import hook that refuses the measured
# side, and checks that glmbench comes from the temporary install, not the source tree.
GUARD = textwrap.dedent("""
    import os, runpy, sys
    FORBIDDEN = {forbidden!r}
    class NoCore:
        def find_spec(self, name, path=None, target=None):
            if any(name == f or name.startswith(f + ".") for f in FORBIDDEN):
                sys.stderr.write("test_no_core: refused import of " + name + "\\n")
                raise ImportError("test_no_core: " + name + " must not be imported here")
            return None
    sys.meta_path.insert(0, NoCore())
    import glmbench
    site = os.path.realpath(os.environ["GLMBENCH_TEST_SITE"])
    if not os.path.realpath(glmbench.__file__).startswith(site + os.sep):
        sys.exit("test_no_core: glmbench imported from " + glmbench.__file__ + ", not " + site)
    sys.argv = ["glmbench", *sys.argv[1:]]
    runpy.run_module("glmbench", run_name="__main__", alter_sys=True)
""").format(forbidden=FORBIDDEN)


def _copy_source(dst: Path, *, with_csrc: bool) -> Path:
    dst.mkdir()
    for name in ("setup.py", "pyproject.toml", "README.md", "LICENSE"):
        if (ROOT / name).exists():
            shutil.copy2(ROOT / name, dst / name)
    shutil.copytree(ROOT / "glmbench", dst / "glmbench",
                    ignore=shutil.ignore_patterns("*.so", "*.pyd", "*.dylib", "__pycache__", "*.egg-info"))
    if with_csrc:
        shutil.copytree(ROOT / "csrc", dst / "csrc")
    return dst


def _install(tmp: Path, env_extra: dict, *, with_csrc: bool) -> tuple[Path, str]:
    src = _copy_source(tmp / "src", with_csrc=with_csrc)
    site = tmp / "site"
    env = {k: v for k, v in os.environ.items() if not k.startswith("GLMBENCH_") and k != "PYTHONPATH"}
    env.update(env_extra)
    r = subprocess.run([sys.executable, "-m", "pip", "install", "-v", "--no-deps", "--no-build-isolation",
                        "--no-index", "--disable-pip-version-check", "--target", str(site), str(src)],
                       env=env, cwd=tmp, capture_output=True, text=True, check=False, timeout=300)
    log = r.stdout + r.stderr
    assert r.returncode == 0, f"pip install failed:\n{log[-4000:]}"
    assert (site / "glmbench" / "__init__.py").exists()
    assert not list(site.rglob("_core*.so")) and not list(site.rglob("_core*.pyd")), "a C core was installed"
    return site, log


@pytest.fixture(scope="module")
def nocore(tmp_path_factory):
    tmp = tmp_path_factory.mktemp("nocore")
    site, log = _install(tmp, {"GLMBENCH_CORE": "0", "GLMBENCH_CUDA": "0"}, with_csrc=False)
    run_dir = tmp / "run"
    run_dir.mkdir()
    (tmp / "guard.py").write_text(GUARD)
    return {"site": site, "log": log, "cwd": run_dir, "guard": tmp / "guard.py"}


def _env(site: Path) -> dict:
    env = {k: v for k, v in os.environ.items() if not k.startswith("GLMBENCH_")}
    env.update(PYTHONPATH=str(site), GLMBENCH_TEST_SITE=str(site), MPLBACKEND="Agg", PYTHONDONTWRITEBYTECODE="1")
    return env


def glmbench(ctx, *args, guard=True, timeout=180):
    cmd = [sys.executable, str(ctx["guard"]), *args] if guard else [sys.executable, "-m", "glmbench", *args]
    return subprocess.run(cmd, cwd=ctx["cwd"], env=_env(ctx["site"]), capture_output=True, text=True,
                          check=False, timeout=timeout)


def ok(r):
    assert r.returncode == 0, f"rc={r.returncode}\nstdout:\n{r.stdout[-3000:]}\nstderr:\n{r.stderr[-3000:]}"
    assert "test_no_core: refused" not in r.stderr, r.stderr[-3000:]
    return r


def says_core_missing(text: str) -> bool:
    return "C core" in text and "is not available" in text


def test_install_without_core_says_so(nocore):
    assert "GLMBENCH_CORE=0, not building the C core" in nocore["log"]
    assert "measured ops will raise ImportError" in nocore["log"]


def test_report_without_core(nocore):
    out = nocore["cwd"] / "rep"
    r = ok(glmbench(nocore, "report", "--out", str(out), "-q"))
    assert "report written to" in r.stdout
    files = {p.name for p in out.iterdir()}
    assert {"report.md", "records.csv", "records.json"} <= files
    assert len([f for f in files if f.endswith(".png")]) >= 3
    recs = json.loads((out / "records.json").read_text())
    assert recs and {x["evidence"] for x in recs} == {"predicted"}


def test_sweep_compare_plot_models_hardware_without_core(nocore):
    cwd = nocore["cwd"]
    ok(glmbench(nocore, "sweep", "--depths", "1K,4K", "--cards", "1", "--out", "a.json", "-q"))
    ok(glmbench(nocore, "sweep", "--depths", "1K,4K", "--cards", "1,2", "--tests", "tg,pp,mem,serve",
                "--concurrency", "1,4", "--out", "b.csv", "-q"))
    assert json.loads((cwd / "a.json").read_text())
    r = ok(glmbench(nocore, "compare", "a.json", "b.csv"))
    assert "B/A" in r.stdout
    r = ok(glmbench(nocore, "plot", "b.csv", "--out", "charts"))
    pngs = [line for line in r.stdout.splitlines() if line.endswith(".png")]
    assert pngs and all((cwd / p).stat().st_size > 1000 for p in pngs)
    r = ok(glmbench(nocore, "models", "--json"))
    assert {"glm-4.7-flash", "qwen3-32b"} <= {m["name"] for m in json.loads(r.stdout)}
    r = ok(glmbench(nocore, "hardware", "--json", guard=False))  # the plain `python -m glmbench` entry
    assert any(g["key"] == "rtx-3090" for g in json.loads(r.stdout))


def test_measured_ops_say_why_without_core(nocore):
    code = textwrap.dedent("""
        import glmbench
        from glmbench.core import reference     # plain NumPy: works without the core
        import glmbench.predict.sweep, glmbench.report, glmbench.models.configs
        for name in ("linear", "Model", "KVCache", "set_num_threads"):
            try:
                getattr(glmbench, name)
            except ImportError as e:
                print(name, type(e).__name__, e)
            else:
                raise SystemExit(name + " loaded without the C core")
    """)
    r = subprocess.run([sys.executable, "-c", code], cwd=nocore["cwd"], env=_env(nocore["site"]),
                       capture_output=True, text=True, check=False, timeout=120)
    assert r.returncode == 0, r.stdout + r.stderr
    lines = r.stdout.splitlines()
    assert len(lines) == 4, r.stdout
    for line in lines:
        assert "CoreUnavailable" in line and says_core_missing(line), line
    for args in (["measure", "glm-4.7-flash", "--depths", "512", "-q"],
                 ["report", "--hardware", "host", "--out", "host-rep", "-q"]):
        r = glmbench(nocore, *args, guard=False)
        assert r.returncode != 0, f"{args}: {r.stdout}"
        assert says_core_missing(r.stderr), f"{args}: {r.stderr[-2000:]}"


def test_failed_c_build_warns_and_installs(tmp_path):
    """No working C compiler (CC=false): the build of the core fails, pip still finishes, the log
    says WARNING and why, and the installed package predicts but refuses measured ops."""
    site, log = _install(tmp_path, {"CC": "false", "GLMBENCH_CUDA": "0"}, with_csrc=True)
    assert "WARNING: glmbench.core._core could not be built" in log
    assert "measured ops" in log and "GLMBENCH_CORE=1" in log
    code = ("import glmbench\n"
            "try:\n    glmbench.linear\nexcept ImportError as e:\n    print(e)\n"
            "else:\n    raise SystemExit('glmbench.linear loaded')\n"
            "from glmbench.cli import main\nraise SystemExit(main(['models', '--csv']))\n")
    run_dir = tmp_path / "run"
    run_dir.mkdir()
    r = subprocess.run([sys.executable, "-c", code], cwd=run_dir, env=_env(site), capture_output=True,
                       text=True, check=False, timeout=120)
    assert r.returncode == 0, r.stdout + r.stderr
    assert says_core_missing(r.stdout) and "glm-4.7-flash" in r.stdout

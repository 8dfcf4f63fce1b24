"""Imports every file of some folders with two versions of glmbench's importer, an earlier commit's and this
checkout's, and says which files import differently (records, notices or the error, compared whole).

    python tools/import_before_after.py main                       # tests/data, main's importer vs this one's
    python tools/import_before_after.py main tests/data /work/shared/formats /work/shared/public-results

REF is any git revision of this repository; its glmbench package is taken out with `git archive` into a
temporary folder (the importer needs no compiled code). Each file is read with importers.read(path,
notices=[]) and no other argument, by the path given (relative paths as given, so `source` fields agree).
Exit status 0 where every file that REF has too imports to the same records, notices and errors under both
(files new since REF are listed, marked "new").
"""
from __future__ import annotations

import json
import os
import subprocess
import sys
import tarfile
import tempfile

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def dump(roots: list[str], out: str) -> None:
    """{path: {"records": [...], "notices": [...]} or {"error": ..., "notices": [...]}} of every file under
    `roots`, with the glmbench that `import glmbench` finds, as JSON into `out`."""
    from glmbench.results import importers as im
    print(f"reading with {im.__file__}", file=sys.stderr)
    res = {}
    for root in roots:
        files = [root] if os.path.isfile(root) else sorted(
            os.path.join(d, f) for d, _, fs in os.walk(root) for f in fs)
        for p in files:
            notices: list = []
            try:
                res[p] = {"records": im.read(p, notices=notices), "notices": notices}
            except Exception as e:   # noqa: BLE001 -- what each version does is what is compared
                res[p] = {"error": f"{type(e).__name__}: {e}", "notices": notices}
    with open(out, "w") as f:
        json.dump(res, f, sort_keys=True, default=str)


def _run_dump(pkg_root: str, roots: list[str], out: str) -> None:
    env = dict(os.environ, PYTHONPATH=pkg_root)
    subprocess.run([sys.executable, os.path.abspath(__file__), "--dump", out, *roots], env=env, check=True,
                   cwd=os.getcwd())


def _what(v: dict) -> str:
    return f"error {v['error'][:160]!r}" if "error" in v else f"{len(v['records'])} records"


def main(argv=None) -> int:
    args = list(sys.argv[1:] if argv is None else argv)
    if args[:1] == ["--dump"]:
        sys.path.insert(0, os.environ.get("PYTHONPATH", ROOT))
        dump(args[2:], args[1])
        return 0
    if not args or args[0] in ("-h", "--help"):
        print(__doc__)
        return 2
    ref, roots = args[0], args[1:] or [os.path.join(ROOT, "tests", "data")]
    with tempfile.TemporaryDirectory() as tmp:
        base = os.path.join(tmp, "base")
        os.makedirs(base)
        arch = os.path.join(tmp, "base.tar")
        subprocess.run(["git", "-C", ROOT, "archive", "-o", arch, ref, "glmbench"], check=True)
        with tarfile.open(arch) as t:
            t.extractall(base)
        _run_dump(base, roots, os.path.join(tmp, "before.json"))
        _run_dump(ROOT, roots, os.path.join(tmp, "after.json"))
        with open(os.path.join(tmp, "before.json")) as f:
            before = json.load(f)
        with open(os.path.join(tmp, "after.json")) as f:
            after = json.load(f)
    new = {p for p in before if _new_file(ref, p)}
    same = [p for p in before if before[p] == after.get(p)]
    differ = [p for p in before if before[p] != after.get(p)]
    n_rec = sum(len(v.get("records", ())) for v in after.values())
    print(f"{len(before)} files ({len(new)} not in {ref}), {n_rec} records under this checkout: {len(same)} import the "
          f"same under {ref} (records, notices and errors), {len(differ)} differently "
          f"({len([p for p in differ if p not in new])} of the files {ref} has)")
    for p in differ:
        print(f"  {p}{' (new)' if p in new else ''}: {_what(before[p])} under {ref}, {_what(after[p])} now")
    return 1 if any(p not in new for p in differ) else 0


def _new_file(ref: str, path: str) -> bool:
    """`path` is a file of this checkout that revision `ref` does not have."""
    rel = os.path.relpath(os.path.abspath(path), ROOT)
    if rel.startswith(".."):
        return False
    return subprocess.run(["git", "-C", ROOT, "cat-file", "-e", f"{ref}:{rel}"], capture_output=True).returncode != 0

if __name__ == "__main__":
    sys.exit(main())

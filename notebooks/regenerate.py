"""Re-run every notebook in this folder top to bottom and write it back with its outputs.

    python notebooks/regenerate.py              # all notebooks/*.ipynb
    python notebooks/regenerate.py 02_prefill   # only those whose file name contains a word given

Each notebook runs in a fresh `python3` kernel (nbclient) whose working directory is a temporary
folder, so nothing is left in the checkout. Charts are PNG (what GitHub's notebook viewer shows).
The written files are kept stable between runs, so regenerating twice gives an empty diff unless a
result changed: no execution timing metadata, execution counts 1, 2, 3... in cell order, a fixed
hash seed and a fresh IPython profile (no user configuration) in the kernel, one JSON layout
(nbformat's). Each file is replaced atomically (written next to it, then renamed); a notebook that
raises is not written, and the script exits non-zero.
"""
import glob
import os
import sys
import tempfile
import time

import nbclient
import nbformat

HERE = os.path.dirname(os.path.abspath(__file__))
CELL_TIMEOUT_S = 300

# The kernel's IPython configuration: PNG figures only, whatever a user's profile says.
KERNEL_CONFIG = "c.InlineBackend.figure_formats = {'png'}\n"


def _stabilize(nb):
    """Drop what changes from run to run without the results changing."""
    count = 0
    for cell in nb.cells:
        cell.metadata.pop("execution", None)          # nbclient's per-cell timestamps
        if cell.cell_type != "code":
            continue
        count += 1
        cell.execution_count = count
        for out in cell.outputs:
            if out.output_type == "execute_result":
                out.execution_count = count
    nb.metadata.pop("widgets", None)


def regenerate(path, scratch):
    nb = nbformat.read(path, as_version=4)
    work = tempfile.mkdtemp(prefix="run-", dir=scratch)
    client = nbclient.NotebookClient(nb, timeout=CELL_TIMEOUT_S, kernel_name="python3",
                                     record_timing=False, allow_errors=False,
                                     resources={"metadata": {"path": work}})
    client.execute()
    _stabilize(nb)
    nbformat.validate(nb)
    fd, tmp = tempfile.mkstemp(prefix="." + os.path.basename(path) + ".", suffix=".tmp",
                               dir=os.path.dirname(path))
    try:
        with os.fdopen(fd, "w", encoding="utf-8", newline="\n") as f:
            nbformat.write(nb, f)
            f.flush()
            os.fsync(f.fileno())
        os.chmod(tmp, 0o644)
        os.replace(tmp, path)
    except BaseException:
        os.unlink(tmp)
        raise


def main(argv):
    paths = sorted(glob.glob(os.path.join(HERE, "*.ipynb")))
    if argv:
        paths = [p for p in paths if any(a in os.path.basename(p) for a in argv)]
        if not paths:
            sys.exit(f"no notebook in {HERE} matches {' '.join(argv)}")
    failed = []
    with tempfile.TemporaryDirectory(prefix="glmbench-notebooks-") as scratch:
        # the kernel inherits this environment: a fresh IPython profile, a fixed hash seed
        ipython_dir = os.path.join(scratch, "ipython")
        os.makedirs(os.path.join(ipython_dir, "profile_default"))
        with open(os.path.join(ipython_dir, "profile_default", "ipython_kernel_config.py"), "w") as f:
            f.write(KERNEL_CONFIG)
        os.environ["IPYTHONDIR"] = ipython_dir
        os.environ["PYTHONHASHSEED"] = "0"
        os.environ.pop("MPLBACKEND", None)
        for path in paths:
            name = os.path.relpath(path)
            t0 = time.perf_counter()
            try:
                regenerate(path, scratch)
            except Exception as e:                   # report it, go on with the others
                failed.append(name)
                print(f"FAILED {name}: {type(e).__name__}: {e}", file=sys.stderr)
                continue
            print(f"wrote {name} ({time.perf_counter() - t0:.1f} s)")
    if failed:
        sys.exit(f"{len(failed)} notebook(s) failed: {', '.join(failed)}")


if __name__ == "__main__":
    main(sys.argv[1:])

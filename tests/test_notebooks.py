"""Every notebook in notebooks/ runs top to bottom without error (nbclient, a fresh kernel each)
and shows its charts: at least one PNG output per notebook. The notebooks hold no logic of their
own (they call glmbench.report, plots and costmodel), so a failure here is a library failure or a
notebook that fell behind the API."""
import glob
import os

import pytest

nbformat = pytest.importorskip("nbformat")
nbclient = pytest.importorskip("nbclient")

HERE = os.path.dirname(os.path.abspath(__file__))
NOTEBOOKS = sorted(glob.glob(os.path.join(HERE, "..", "notebooks", "*.ipynb")))


def test_the_four_study_notebooks_exist():
    names = [os.path.basename(p) for p in NOTEBOOKS]
    for n in ("01_generation_crossover.ipynb", "02_prefill.ipynb", "03_memory_ceiling.ipynb",
              "04_one_vs_two_cards.ipynb"):
        assert n in names


@pytest.mark.parametrize("path", NOTEBOOKS, ids=lambda p: os.path.basename(p))
def test_notebook_runs(path, tmp_path):
    nb = nbformat.read(path, as_version=4)
    nbformat.validate(nb)
    # the kernel runs in a scratch folder so a notebook cannot leave files in the checkout;
    # 120 s per cell bounds a hung kernel, the notebooks themselves take a few seconds
    client = nbclient.NotebookClient(nb, timeout=120, kernel_name="python3",
                                     resources={"metadata": {"path": str(tmp_path)}})
    client.execute()
    outputs = [o for c in nb.cells if c.cell_type == "code" for o in c.get("outputs", [])]
    assert not [o for o in outputs if o.get("output_type") == "error"]
    pngs = [o for o in outputs if "image/png" in o.get("data", {})]
    assert pngs, f"{os.path.basename(path)} shows no chart"
    # every markdown cell says something (a notebook states what it shows)
    assert all(c.source.strip() for c in nb.cells if c.cell_type == "markdown")

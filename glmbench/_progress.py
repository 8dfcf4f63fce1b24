"""The progress bar of every long command: tqdm.auto's (a widget in a notebook where ipywidgets is
installed, text on stderr elsewhere), imported without the TqdmWarning it prints in a notebook
without ipywidgets ("IProgress not found"), where the text bar it falls back to is what shows
anyway; the notebooks' committed outputs carried that warning and the path of the machine's
site-packages."""
import warnings

with warnings.catch_warnings():
    warnings.filterwarnings("ignore", message="IProgress not found")
    from tqdm.auto import tqdm

__all__ = ["tqdm"]

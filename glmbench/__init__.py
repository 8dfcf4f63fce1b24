"""glmbench: which model, on which cards, for which shape of work.

Every number glmbench shows is one of three kinds and says which (`evidence`):
  measured   real kernels run on this machine's CPU or on a GPU
  predicted  the cost model (glmbench.costmodel) from an architecture config and a hardware profile
  calibrated a prediction fitted to measurements, with its error shown
"""
from ._loader import HAS_CUDA, _core

__version__ = "0.1.0"


def set_num_threads(n: int) -> None:
    """Threads used by the C core (OpenMP) and by OpenBLAS."""
    _core.set_num_threads(int(n))


def get_num_threads() -> int:
    return _core.get_num_threads()


from .ops import *  # noqa: E402,F401,F403
from .kvcache import KVCache  # noqa: E402,F401
from .attention import gqa_attention, mla_attention, gqa_block, mla_block  # noqa: E402,F401
from .model import Model  # noqa: E402,F401  (issue 4: glmbench.Model)

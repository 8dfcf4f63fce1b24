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


def workspace_bytes() -> tuple[int, int]:
    """(current, peak) bytes of scratch the C kernels hold: now, and the most since the last
    reset_workspace_peak() (or since import). Kernels free their scratch before returning, so
    between calls `current` is 0 unless another thread is inside an op. The KV cache's blocks and
    NumPy arrays (weights, activations, outputs) are not workspace."""
    return _core.workspace_bytes()


def reset_workspace_peak() -> None:
    """Start a new peak window: peak := current. Read it after the ops with workspace_bytes()[1]."""
    _core.reset_workspace_peak()


def workspace_blocks() -> int:
    """Live workspace blocks (0 between ops, when nothing leaked)."""
    return _core.workspace_blocks()


from .ops import *  # noqa: E402,F401,F403
from .kvcache import KVCache  # noqa: E402,F401
from .attention import gqa_attention, mla_attention, gqa_block, mla_block  # noqa: E402,F401
from .model import Model  # noqa: E402,F401  (issue 4: glmbench.Model)

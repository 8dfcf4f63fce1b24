"""Load the compiled C core. OpenBLAS comes from the scipy-openblas32 wheel: the extension was
linked against libscipy_openblas.so at build time, and here we preload that exact file with
RTLD_GLOBAL so the dynamic loader resolves the extension's dependency by soname (the build
environment's copy is gone after `pip install`)."""
import ctypes
import os

import scipy_openblas32

_lib = os.path.join(scipy_openblas32.get_lib_dir(), scipy_openblas32.get_library(fullname=True))
ctypes.CDLL(_lib, mode=ctypes.RTLD_GLOBAL)

from . import _core  # noqa: E402

try:  # built only where nvcc was found (setup.py); glmbench.HAS_CUDA says which
    from . import _cuda  # noqa: F401
    HAS_CUDA = True
except ImportError:
    _cuda = None
    HAS_CUDA = False

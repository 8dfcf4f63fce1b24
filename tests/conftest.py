import numpy as np
import pytest


@pytest.fixture(autouse=True)
def _no_traceback_switch(monkeypatch):
    """GLMBENCH_TRACEBACK=1 (the CLI's debugging switch: a traceback instead of the one-line error)
    exported in the shell that runs the tests would fail every test of a one-line error; the tests
    run without it (subprocesses inherit the cleared environment)."""
    monkeypatch.delenv("GLMBENCH_TRACEBACK", raising=False)


@pytest.fixture
def rng():
    return np.random.default_rng(1234)


@pytest.fixture
def python_quant_layers(monkeypatch):
    """Quantized layers op by op (Layer.forward_py) at decode too, so that a test's monkeypatched
    quant / attention functions (e.g. compute="f32") are the ones that run: the C layer reads block
    formats with the default kernels and does not see Python-level patches."""
    from glmbench.models import model as M
    monkeypatch.setattr(M.Layer, "runs_in_c", lambda self, n, s="flash": self._c_plan() is not None and not self._plan_decode)

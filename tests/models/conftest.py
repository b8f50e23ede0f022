"""Two shared cores: keep torch (the GNN) to one thread; XGBoost and LightGBM default to one."""

import os
import sys

import pytest

os.environ.setdefault("OMP_NUM_THREADS", "1")  # read by torch when it is first imported


@pytest.fixture(autouse=True)
def _one_torch_thread():
    if "torch" in sys.modules:  # imported already (by another test package): set it directly
        sys.modules["torch"].set_num_threads(1)
    yield

"""Shared test set-up.

TVM's tensor-intrinsic import is slow once torch and mlflow are loaded; doing it
first, the fast way, keeps every test that creates a TuneContext quick.
"""

from costlab._tvm import import_tensor_intrinsics

import_tensor_intrinsics()

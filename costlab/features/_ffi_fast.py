"""Fast access to tvm_ffi containers from Python.

``tvm_ffi.Array.__iter__`` and ``__getitem__`` call ``len()`` through the FFI and a
Python helper for every element (about 4 µs each); calling the two FFI functions
directly is about 7 times faster. The extractors read thousands of elements per
batch, so they use these helpers.
"""

from __future__ import annotations

from tvm_ffi import _ffi_api as _api

array_get = _api.ArrayGetItem
array_size = _api.ArraySize


def items(arr) -> list:
    """The elements of a ``tvm_ffi.Array`` (or any sequence) as a Python list."""
    if isinstance(arr, (list, tuple)):
        return list(arr)
    return [array_get(arr, i) for i in range(array_size(arr))]


def at(arr, i: int):
    """Element ``i`` (non-negative) of a ``tvm_ffi.Array``."""
    return array_get(arr, i)


class gc_paused:
    """Pause Python's cyclic garbage collector inside a ``with`` block.

    Extraction allocates many small objects (no reference cycles); with the large
    heaps of a tuning process (TVM, torch, MLflow), the collector's full passes
    took longer than the extraction itself. Reference counting still frees memory.
    """

    def __enter__(self):
        import gc

        self._was_enabled = gc.isenabled()
        gc.disable()
        return self

    def __exit__(self, *exc):
        import gc

        if self._was_enabled:
            gc.enable()
        return False

"""The builder's kernels live in /tmp until it shuts down: none is left there after."""

from pathlib import Path

import tvm
from tvm import te
from tvm.s_tir.meta_schedule.builder import BuilderInput
from tvm.s_tir.meta_schedule.utils import remove_build_dir

from costlab.search.builder import PersistentBuilder
from costlab.targets import make_target


def _doubling() -> tvm.IRModule:
    a = te.placeholder((256,), "float32", name="A")
    return tvm.IRModule({"main": te.create_prim_func([a, te.compute((256,), lambda i: a[i] * 2.0, name="B")])})


def test_shutdown_removes_the_kernels_built_that_are_still_on_disk(tmp_path, monkeypatch):
    """The re-timing scripts build thousands of kernels and time them outside a tuning session,
    whose callback removes each measured one: every kernel stayed in /tmp, a folder each (3,544
    found there in one day)."""
    monkeypatch.setenv("TMPDIR", str(tmp_path))  # the workers start after this and build there
    builder = PersistentBuilder(max_workers=1, nvcc=False)
    try:
        results = builder.build([BuilderInput(_doubling(), make_target("cpu"))] * 3)
        paths = [Path(r.artifact_path) for r in results]
        assert all(p.is_file() and p.parent.parent == tmp_path for p in paths)
        assert len({p.parent for p in paths}) == 3
        remove_build_dir(str(paths[0]))  # what MetaSchedule's RemoveBuildArtifact does to a measured one
    finally:
        builder.shutdown()
    assert sorted(tmp_path.iterdir()) == []

"""The builder's workers start before the first session's clock, not inside its first build."""

import psutil

from costlab.search.builder import PersistentBuilder


def _workers() -> list[psutil.Process]:
    return [p for p in psutil.Process().children(recursive=True) if "popen_worker" in " ".join(p.cmdline())]


def test_start_brings_up_every_worker():
    before = {p.pid for p in _workers()}
    builder = PersistentBuilder(max_workers=2)
    try:
        builder.start()
        started = [p for p in _workers() if p.pid not in before]
        assert len(started) == 2  # one warm-up job each, not both taken by the first to start
    finally:
        builder.shutdown()

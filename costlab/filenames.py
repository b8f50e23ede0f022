"""File and directory names made from workload keys and other labels."""

from __future__ import annotations

import hashlib

SAFE_PUNCTUATION = "-_.=,"
MAX_NAME_BYTES = 243  # a file system's limit is 255 bytes a name; the longest suffix, ".seconds.png", needs 12


def safe_file_name(label: str) -> str:
    """``label`` with every character other than letters, digits and ``-_.=,`` replaced by ``_``:
    ``gemm(M=128,N=128)`` becomes ``gemm_M=128,N=128_``, and ``..`` becomes ``__``. Tuning databases, plots and reports
    are named with it, so a name maps to the same file everywhere.

    A name over ``MAX_NAME_BYTES`` bytes (UTF-8) is cut, and ``~`` and 16 hex digits of the
    label's SHA-256 are appended, so that long labels which share their start stay apart."""
    name = "".join(c if c.isalnum() or c in SAFE_PUNCTUATION else "_" for c in label)
    if name in (".", ".."):  # a name, never this directory or its parent
        name = "_" * len(name)
    if len(name.encode()) <= MAX_NAME_BYTES:
        return name
    digest = hashlib.sha256(label.encode()).hexdigest()[:16]
    head = name.encode()[:MAX_NAME_BYTES - len(digest) - 1].decode(errors="ignore")
    return f"{head}~{digest}"


def check_output_dir(path, option: str, try_writing: bool = True) -> None:
    """Raise :class:`~costlab.errors.CostlabError` unless ``path`` is a directory, or one that
    can be created, that this process may write to. ``option`` names where the path came from
    (``--out``), so that a command refuses a bad output path before its work, not after.
    Writability is tried with a temporary file (root passes ``os.access`` even in ``/proc``),
    unless ``try_writing`` is off (a check that must not touch the disk)."""
    import tempfile
    from pathlib import Path

    from costlab.errors import CostlabError

    path = Path(path)
    try:
        for existing in (path, *path.parents):
            if existing.exists() or existing.is_symlink():
                break
    except OSError as err:  # a name over the file system's 255 bytes, say
        raise CostlabError(f"{option} {path}: {err.strerror or err}") from None
    if not existing.is_dir():
        what = "is" if existing == path else f"cannot be created: {existing} is"
        raise CostlabError(f"{option} {path}: {what} not a directory")
    if not try_writing:
        return
    try:
        with tempfile.TemporaryFile(dir=existing):
            pass
    except OSError as err:
        raise CostlabError(f"{option} {path}: {existing} is not writable ({err.strerror or err})") from None


def check_replaceable_dir(path, option: str, marker: str, what: str, force: bool) -> None:
    """Raise :class:`~costlab.errors.CostlabError` if ``path`` is a directory with files in it,
    unless ``force`` is set and it holds ``marker`` (it is a ``what`` that costlab wrote), so that
    a command neither overwrites a directory by accident nor mixes its files into a foreign one."""
    from pathlib import Path

    from costlab.errors import CostlabError

    path = Path(path)
    held = sorted(p.name for p in path.iterdir()) if path.is_dir() else []
    if not held:
        return
    listing = ", ".join(held[:5]) + (f" and {len(held) - 5} more" if len(held) > 5 else "")
    if not (path / marker).is_file():
        raise CostlabError(f"{option} {path}: is not empty ({listing}) and is not a {what} (no {marker}): "
                           f"choose a new or empty directory")
    if not force:
        raise CostlabError(f"{option} {path}: already holds a {what} ({listing}): choose a new or empty "
                           f"directory, or pass --force to replace it")

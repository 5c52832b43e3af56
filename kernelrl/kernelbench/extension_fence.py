"""Other candidates' extension folders, out of the pair's reach.

Every candidate's extensions are built before the evaluation, each in its own folder under one root
(kernelbench/build.py), and the worker may write under that root (torch's builder takes a lock file in a build folder
even to load a built library). One worker judges many pairs, so without a fence a candidate could overwrite another
candidate's built library, which that one loads in a later pair of the same run: a verdict that depended on another
candidate. Per pair, Python's writes are allowed in the candidate's own folder only (the audit hook's list), and a
write no hook sees (C, ctypes) is found by comparing the other folders' built libraries before the candidate's load
and at the pair's report: one rewritten or removed is the candidate's `file write`, whatever else it did. Only this
run's candidates' folders are watched (KBSettings.fenced: the default root is shared by every run on the machine),
and a library that appears is not counted (under Ray, workers on one host share the root, and another pair's lazy
build lands there meanwhile). What this does not see (docs/reward_hacks.md): other files of another folder (object
files a rebuild would link), writes after the report (a finalizer) or from a pair that crashed."""

from __future__ import annotations

import os
from pathlib import Path

LIBRARY_SUFFIXES = (".so", ".pyd", ".dylib")


def _inside(path: str, folder: str) -> bool:
    return path == folder or path.startswith(folder.rstrip(os.sep) + os.sep)


def pair_writable(writable: list, root: str | os.PathLike, own: str | os.PathLike) -> list[Path]:
    """The worker's writable folders for one pair: the extension root replaced by the candidate's own folder."""
    root_real = os.path.realpath(root)
    return [Path(w) for w in writable if os.path.realpath(w) != root_real] + [Path(os.path.realpath(own))]


def libraries(folders, own: str | os.PathLike) -> dict[str, tuple[int, int, int, int]]:
    """(size, mtime and ctime in ns, inode) of every built library beneath `folders` (this run's candidates'
    extension folders, or the whole root) outside the candidate's own folder (the ctime too: a process can put a
    file's modification time back, not its change time)."""
    own_real = os.path.realpath(own)
    out: dict[str, tuple[int, int, int, int]] = {}
    for top in folders:
        for folder, dirs, files in os.walk(os.path.realpath(top)):
            if _inside(folder, own_real):
                dirs[:] = []
                continue
            for name in files:
                if name.endswith(LIBRARY_SUFFIXES):
                    path = os.path.join(folder, name)
                    try:
                        st = os.lstat(path)
                    except OSError:
                        continue
                    out[path] = (st.st_size, st.st_mtime_ns, st.st_ctime_ns, st.st_ino)
    return out


def changed(before: dict[str, tuple], after: dict[str, tuple]) -> list[str]:
    """The libraries of the first reading removed or rewritten by the second, by path."""
    return sorted(p for p in before if before[p] != after.get(p))

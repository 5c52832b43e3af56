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
build lands there meanwhile).

The fence names the writer; the victim is protected apart from it: the build step records every file of each
candidate's folder (`folder_contents`, taken once its build process has ended, carried in the pair's payload), and
the worker compares the folder with that record before the candidate loads. A folder changed since its build (a
library rewritten, an object file planted for a rebuild to link, one written from a finalizer after another pair's
report or by a pair that crashed) is emptied and the candidate builds again from its own sources in its pair: its
verdict is its own, whoever wrote there. What stays open (docs/reward_hacks.md): a change between that comparison
and the load (another process on the host, in that instant), and a folder damaged before this run's build step (a
shared root: the record is of what the build found)."""

from __future__ import annotations

import hashlib
import os
import shutil
import stat
from pathlib import Path

LIBRARY_SUFFIXES = (".so", ".pyd", ".dylib")
# Not part of a built folder's record: the build process's scratch folder (removed when it ends) and torch's lock
# file (taken and removed around each build or load)
UNRECORDED = {".tmp", "lock"}


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


def folder_contents(folder: str | os.PathLike) -> dict[str, str]:
    """Every entry beneath a candidate's extension folder, by path relative to it: a file's sha256, a symlink's
    target, an empty mark for a folder or anything else. Never follows a link and never opens anything but a
    regular file (the folder was written by candidate code: a FIFO or a link to /dev/zero must not hang the
    reader). Empty when the folder does not exist."""
    top = os.path.realpath(folder)
    out: dict[str, str] = {}
    for here, dirs, files in os.walk(top):
        dirs[:] = [d for d in dirs if not (here == top and d in UNRECORDED)]
        for name in dirs + files:
            if here == top and name in UNRECORDED:
                continue
            path = os.path.join(here, name)
            out[os.path.relpath(path, top)] = _entry(path)
    return out


def _entry(path: str) -> str:
    try:
        st = os.lstat(path)
        if stat.S_ISLNK(st.st_mode):
            return "link:" + os.readlink(path)
        if not stat.S_ISREG(st.st_mode):
            return "dir" if stat.S_ISDIR(st.st_mode) else f"mode:{stat.S_IFMT(st.st_mode)}"
        digest = hashlib.sha256()
        fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK)
        with os.fdopen(fd, "rb") as f:
            for chunk in iter(lambda: f.read(1 << 20), b""):
                digest.update(chunk)
        return digest.hexdigest()
    except OSError as exc:
        return f"unreadable:{exc.errno}"


def altered(folder: str | os.PathLike, record: dict[str, str]) -> list[str]:
    """The entries of the candidate's folder that differ from its build's record: changed, removed or added."""
    now = folder_contents(folder)
    return sorted(p for p in record.keys() | now.keys() if record.get(p) != now.get(p))


def empty(folder: str | os.PathLike) -> None:
    """Remove everything beneath `folder` (links removed, never followed), keeping the folder itself."""
    with os.scandir(os.fspath(folder)) as entries:
        for entry in entries:
            if entry.is_dir(follow_symlinks=False):
                shutil.rmtree(entry.path, ignore_errors=True)
            else:
                try:
                    os.unlink(entry.path)
                except OSError:
                    pass

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
report or by a pair that crashed), or one whose build never finished (torch's lock file left in it), is emptied and
the candidate builds again in its pair. A library is also reached through the process: the dynamic loader hands out
a library already loaded under the same path without reading the file, so a pair that loaded a library from another
candidate's folder retires its worker, and a pair whose own library is already loaded in its worker is judged by a
fresh one (`mapped_libraries`). What stays open (docs/reward_hacks.md): a change between the comparison and the load
(another process on the host, in that instant), and a folder damaged before this run's build step (a shared root:
the record is of what the build found).

The walks over candidate-written folders are bounded (entries, depth, bytes hashed, each file read no further than
its size when first seen) and follow no link: a folder past the bounds reads as `OVERSIZE` and counts as changed."""

from __future__ import annotations

import hashlib
import os
import shutil
import stat
from pathlib import Path

LIBRARY_SUFFIXES = (".so", ".pyd", ".dylib")
# Not part of a built folder's record: the build process's scratch folder (removed when it ends)
UNRECORDED = {".tmp"}
# torch's lock file, in an extension's own folder (<candidate folder>/<name>/lock) while a build holds it: one left
# in a record is a build that never finished (a warm-up stopped mid-compile), on which a load would wait forever
LOCK_NAME = "lock"
# Bounds of a walk over a candidate-written folder (a built one holds tens of files and a few MB)
MAX_ENTRIES, MAX_DEPTH, MAX_HASHED_BYTES = 20_000, 32, 1 << 30
OVERSIZE = "oversize"  # the record's only entry (key "") of a folder past the bounds


def inside(path: str, folder: str) -> bool:
    """Whether `path` is `folder` or beneath it (both as given: resolve them first)."""
    return path == folder or path.startswith(folder.rstrip(os.sep) + os.sep)


def pair_writable(writable: list, root: str | os.PathLike, own: str | os.PathLike) -> list[Path]:
    """The worker's writable folders for one pair: the extension root replaced by the candidate's own folder."""
    root_real = os.path.realpath(root)
    return [Path(w) for w in writable if os.path.realpath(w) != root_real] + [Path(os.path.realpath(own))]


class _Oversize(Exception):
    pass


def _entries(top: str, skip=lambda path: False):
    """(path, lstat result) of every entry beneath `top`, iteratively (no recursion limit), links not followed,
    unreadable folders passed over; _Oversize past MAX_ENTRIES or MAX_DEPTH. `skip(path)`: a folder not entered."""
    count, stack = 0, [(top, 0)]
    while stack:
        folder, depth = stack.pop()
        try:
            with os.scandir(folder) as it:
                found = list(it)
        except OSError:
            continue
        for entry in found:
            count += 1
            if count > MAX_ENTRIES:
                raise _Oversize(f"more than {MAX_ENTRIES} entries")
            try:
                st = entry.stat(follow_symlinks=False)
            except OSError:
                continue
            yield entry.path, st
            if stat.S_ISDIR(st.st_mode) and not skip(entry.path):
                if depth + 1 > MAX_DEPTH:
                    raise _Oversize(f"folders deeper than {MAX_DEPTH}")
                stack.append((entry.path, depth + 1))


def libraries(folders, own: str | os.PathLike) -> dict[str, tuple[int, int, int, int]]:
    """(size, mtime and ctime in ns, inode) of every built library beneath `folders` (this run's candidates'
    extension folders, or the whole root) outside the candidate's own folder (the ctime too: a process can put a
    file's modification time back, not its change time). A folder past the walk's bounds is read as far as they go
    (the victim's own record protects it; this only names the writer)."""
    own_real = os.path.realpath(own)
    out: dict[str, tuple[int, int, int, int]] = {}
    for top in folders:
        try:
            for path, st in _entries(os.path.realpath(top), skip=lambda p: inside(p, own_real)):
                if stat.S_ISREG(st.st_mode) and path.endswith(LIBRARY_SUFFIXES) and not inside(path, own_real):
                    out[path] = (st.st_size, st.st_mtime_ns, st.st_ctime_ns, st.st_ino)
        except _Oversize:
            continue
    return out


def changed(before: dict[str, tuple], after: dict[str, tuple]) -> list[str]:
    """The libraries of the first reading removed or rewritten by the second, by path."""
    return sorted(p for p in before if before[p] != after.get(p))


def folder_contents(folder: str | os.PathLike) -> dict[str, str]:
    """Every entry beneath a candidate's extension folder, by path relative to it: a file's sha256 (of as many
    bytes as its size when first seen), a symlink's target, a mark for a folder or anything else. Never follows a
    link, never opens anything but a regular file (the folder was written by candidate code: a FIFO or a link to
    /dev/zero must not hang the reader), and stops at the walk's bounds: {"": OVERSIZE}. Empty when the folder
    does not exist."""
    top = os.path.realpath(folder)
    out: dict[str, str] = {}
    budget = [MAX_HASHED_BYTES]
    try:
        for path, st in _entries(top, skip=lambda p: os.path.dirname(p) == top and os.path.basename(p) in UNRECORDED):
            rel = os.path.relpath(path, top)
            if rel in UNRECORDED:
                continue
            out[rel] = _entry(path, st, budget)
    except _Oversize:
        return {"": OVERSIZE}
    return out


def _entry(path: str, st: os.stat_result, budget: list[int]) -> str:
    if stat.S_ISLNK(st.st_mode):
        try:
            return "link:" + os.readlink(path)
        except OSError as exc:
            return f"unreadable:{exc.errno}"
    if not stat.S_ISREG(st.st_mode):
        return "dir" if stat.S_ISDIR(st.st_mode) else f"mode:{stat.S_IFMT(st.st_mode)}"
    budget[0] -= st.st_size
    if budget[0] < 0:
        raise _Oversize(f"more than {MAX_HASHED_BYTES} bytes of files")
    digest, left = hashlib.sha256(), st.st_size  # a file that grows while it is read is read to its first size
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK)
        with os.fdopen(fd, "rb") as f:
            while left > 0 and (chunk := f.read(min(left, 1 << 20))):
                digest.update(chunk)
                left -= len(chunk)
    except OSError as exc:
        return f"unreadable:{exc.errno}"
    return f"{st.st_size}:{digest.hexdigest()}"


def altered(folder: str | os.PathLike, record: dict[str, str]) -> list[str]:
    """The entries of the candidate's folder that differ from its build's record (changed, removed or added), and
    any lock file the record holds (a build that never finished); a folder past the walk's bounds, either time, is
    altered whole ("")."""
    now = folder_contents(folder)
    if record.get("") == OVERSIZE or now.get("") == OVERSIZE:
        return [""]
    unfinished = {p for p in record if os.path.basename(p) == LOCK_NAME}
    return sorted(unfinished | {p for p in record.keys() | now.keys() if record.get(p) != now.get(p)})


def loaded_libraries() -> set[str]:
    """Every library file this process has loaded (/proc/self/maps; empty where there is none). The dynamic loader
    answers a load by path with a library already loaded under that path, whatever the file now holds: a check of
    the file alone cannot see one."""
    try:
        with open("/proc/self/maps") as f:
            lines = f.read().splitlines()
    except OSError:
        return set()
    # a file removed or replaced since its load reads "PATH (deleted)": the loader still answers to PATH
    paths = {fields[5].removesuffix(" (deleted)") for line in lines if len(fields := line.split(None, 5)) == 6}
    return {p for p in paths if p.startswith("/") and (p.endswith(LIBRARY_SUFFIXES) or ".so." in p)}


def mapped_libraries(root: str | os.PathLike) -> set[str]:
    """The libraries beneath `root` this process has loaded."""
    root_real = os.path.realpath(root)
    return {p for p in loaded_libraries() if inside(p, root_real)}


def empty(folder: str | os.PathLike) -> bool:
    """Remove everything beneath `folder` (links removed, never followed), keeping the folder itself: whether it
    is empty now."""
    with os.scandir(os.fspath(folder)) as entries:
        for entry in entries:
            if entry.is_dir(follow_symlinks=False):
                shutil.rmtree(entry.path, ignore_errors=True)
            else:
                try:
                    os.unlink(entry.path)
                except OSError:
                    pass
    with os.scandir(os.fspath(folder)) as entries:
        return next(entries, None) is None

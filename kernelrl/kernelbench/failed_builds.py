"""Extension builds that failed in the build step while the candidate went on: recorded there, replayed in the worker.

Many published kernels wrap `load_inline` in try/except and compute with PyTorch when their extension does not build
(CUDA-L1's H100 set on torch 2.11: `AT_DISPATCH_...(x.type(), ...)` no longer compiles, and several name functions
their C++ source never declares). The build step sees the build fail and the import succeed; without a record the
worker built the same sources again, in series, under the hang watch, and failed the same way (13-15 s a pair: 265 of
the 329 s that 34 CUDA-L1 level-1 pairs spent in workers on the H100). The same build file and sources fail the same
way, so the worker raises the recorded error at once instead, and says so in the pair's notes: such a candidate's
verdict and speed are those of its fallback, not of its kernel.

A build is known by its fingerprint: torch's generated build.ninja (compiler, flags, include paths, sources) and the
contents of the sources it compiles, with the build folder's own path taken out (the build step and the worker may
start it from different working directories)."""

from __future__ import annotations

import hashlib
import json
import os
import re
from collections.abc import Callable
from pathlib import Path

REPLAYED = "failed to build in the build step"  # in the pair's note: how a report finds such pairs
RECORD = "failed_builds.json"  # in the candidate's own extension folder (build.extension_dir), written by the parent
_COMPILED = re.compile(r"^build [^:\n]+: \S*compile (.+)$", re.MULTILINE)
_DIAGNOSTIC = re.compile(r"(?::\d+:\d+|\(\d+\)): (?:fatal )?error: ")  # g++'s file:line:col, nvcc's file(line)
_NOT_THE_SOURCES = ("Killed signal", "out of memory", "No space left", "Resource temporarily unavailable")


def deterministic(message: str) -> bool:
    """A compiler's diagnostic about the sources, not a compiler killed or starved while builds ran in parallel:
    only such a failure is replayed (another build of the same sources could succeed)."""
    return bool(_DIAGNOSTIC.search(message)) and not any(s in message for s in _NOT_THE_SOURCES)


def fingerprint(build_directory: str | os.PathLike) -> str:
    """What decides a build's outcome: the ninja file torch wrote and every source it compiles."""
    folder = Path(build_directory)
    text = (folder / "build.ninja").read_text(errors="replace")
    digest = hashlib.sha256()
    for path in dict.fromkeys((str(folder.resolve()), os.path.abspath(folder), str(build_directory))):
        text = text.replace(path, "<build>")
    digest.update(text.encode())
    for source in _COMPILED.findall(text):
        source = source.strip().replace("$ ", " ").replace("$:", ":").replace("<build>", str(folder))
        try:
            digest.update((folder / source).read_bytes())
        except OSError:
            digest.update(source.encode())
    return digest.hexdigest()[:32]


def extension_name(build_directory: str | os.PathLike) -> str:
    return Path(build_directory).name


def first_error(message: str) -> str:
    """The compiler's first error line, for a one-line note (the whole log stays in the build step's output)."""
    for line in message.splitlines():
        if "error" in line.lower() and not line.lstrip().startswith(("[", "FAILED:", "ninja:")):
            return line.strip()[-240:]
    return message.strip().splitlines()[0][-240:] if message.strip() else "no compiler output"


def _clipped(message: str, limit: int = 4000) -> str:
    """torch's error line (its prefix names the extension) and the end of the compiler's output."""
    return message if len(message) <= limit else f"{message[:300]}\n[...]\n{message[-(limit - 300):]}"


def recording(original: Callable, failures: list[dict]) -> Callable:
    """A replacement for torch's `_run_ninja_build` (`original`) that appends each failed build to `failures` and
    raises as before (the build process's; the candidate may catch the error)."""

    def run_ninja_build(build_directory, verbose, error_prefix):
        try:
            return original(build_directory, verbose, error_prefix)
        except RuntimeError as exc:
            if not deterministic(str(exc)):
                raise
            try:
                known_by = fingerprint(build_directory)
            except OSError:  # no build file to know it by: not recorded, the worker builds it again
                raise exc from exc.__cause__
            failures.append({"extension": extension_name(build_directory), "fingerprint": known_by,
                             "error": first_error(str(exc)), "message": _clipped(str(exc))})
            raise

    return run_ninja_build


def write_record(folder: str | os.PathLike, failures: list[dict]) -> None:
    """The build step's failures for this candidate (none: no record, so nothing stale is replayed)."""
    path = Path(folder) / RECORD
    if failures:
        path.write_text(json.dumps(failures, indent=1))
    else:
        path.unlink(missing_ok=True)


def read_record(folder: str | os.PathLike | None) -> dict[str, dict]:
    """fingerprint -> the recorded failure, for the candidate whose extension folder is `folder`."""
    if not folder:
        return {}
    try:
        entries = json.loads((Path(folder) / RECORD).read_text())
        return {e["fingerprint"]: e for e in entries if isinstance(e, dict) and "fingerprint" in e}
    except (OSError, ValueError, TypeError):
        return {}


def replaying(original: Callable, on_replay: Callable[[str], None]) -> Callable:
    """A replacement for torch's `_run_ninja_build` (the worker's) that, for a build the candidate's build step saw
    fail with the same fingerprint, raises that failure's error without running the compiler, and tells
    `on_replay` (the pair's notes); any other build runs as before."""

    def run_ninja_build(build_directory, verbose, error_prefix):
        known = read_record(os.environ.get("TORCH_EXTENSIONS_DIR"))
        if known:
            try:
                failure = known.get(fingerprint(build_directory))
            except OSError:
                failure = None
            if failure is not None:
                on_replay(f"extension {failure['extension']!r} {REPLAYED} ({failure['error']}); the worker raised "
                          f"that error again without compiling, so the candidate ran without it (its own fallback)")
                raise RuntimeError(failure["message"])
        return original(build_directory, verbose, error_prefix)

    return run_ninja_build

"""Builder: CUDA source → shared library with nvcc, cached by content hash, built in parallel.

Errors are data: a failed compile returns a BuildResult with `error` set and never raises."""

from __future__ import annotations

import functools
import hashlib
import json
import os
import re
import shutil
import subprocess
import tempfile
import time
from concurrent.futures import ThreadPoolExecutor
from dataclasses import asdict, dataclass, field
from pathlib import Path
from importlib import metadata
from typing import Callable, Iterable

from kernelrl.build.ptxas import parse_ptxas, summarize
from kernelrl.build.toolchain import Toolchain, arch_flags, cutlass_include_dirs
from kernelrl.harness.verdicts import Rejected, Verdict
from kernelrl.registry import Registered

QUOTED_INCLUDE = re.compile(r'^\s*#\s*include\s*"', re.MULTILINE)
BASE_FLAGS = ["-std=c++17", "-O3", "-shared", "-Xcompiler", "-fPIC", "-Xptxas", "-v", "-lineinfo",
              "--expt-relaxed-constexpr", "-DNDEBUG"]


def cache_root() -> Path:
    return Path(os.environ.get("KERNELRL_CACHE") or Path.home() / ".cache" / "kernelrl")


@dataclass(frozen=True)
class BuildRequest:
    """One compilation. `source` is the text; `origin` (a path) only labels it and locates relative includes."""

    source: str
    name: str = "candidate"
    origin: str | None = None
    flags: tuple[str, ...] = ()
    include_dirs: tuple[str, ...] = ()
    link: tuple[str, ...] = ()

    @classmethod
    def from_file(cls, path: str | os.PathLike, **kw) -> "BuildRequest":
        path = Path(path)
        return cls(source=path.read_text(), name=kw.pop("name", path.stem), origin=str(path.resolve()), **kw)


@dataclass
class BuildResult:
    name: str
    key: str
    ok: bool
    lib_path: str | None = None
    error: str | None = None  # the verdict's reason line (key text and detail), for people
    log: str = ""
    ptxas: dict = field(default_factory=dict)
    seconds: float = 0.0
    cached: bool = False
    verdict: str | None = None  # the Verdict key of a failed build (compile error / compile timeout)
    detail: str = ""

    @property
    def resources(self) -> dict:
        return summarize(self.ptxas)

    @property
    def failure(self) -> Rejected | None:
        """A failed build's verdict: its key and detail (a builder that names no key, such as a test's stand-in,
        reported a compile error, its error line the detail); None when it built."""
        if self.ok:
            return None
        if self.verdict is None:
            return Rejected(Verdict.COMPILE_ERROR, self.error or "")
        return Rejected(Verdict(self.verdict), self.detail)

    def to_dict(self) -> dict:
        return asdict(self)


def origin_dir(request: BuildRequest) -> str | None:
    """The folder a source's quoted includes resolve against, where it has any: only then does where the file sat
    change what compiles, so a self-contained source (every generated kernel) builds to one cache entry from any
    folder, and a build made on another machine, or under another temporary path, is found again."""
    if request.origin and QUOTED_INCLUDE.search(request.source):
        return str(Path(request.origin).parent)
    return None


class Builder(Registered):
    """Base class; `Builder.create(kind)` picks an implementation from the registry."""

    registry: dict[str, type["Builder"]] = {}

    def build(self, request: BuildRequest) -> BuildResult:
        raise NotImplementedError

    def build_many(self, requests: Iterable[BuildRequest], workers: int | None = None,
                   on_done: Callable[[BuildResult], None] | None = None) -> list[BuildResult]:
        """Build in a thread pool (each thread waits on an nvcc process); results in request order."""
        requests = list(requests)
        workers = workers or max(1, min(len(requests), os.cpu_count() or 1))
        with ThreadPoolExecutor(max_workers=workers) as pool:
            futures = [pool.submit(self.build, r) for r in requests]
            results = []
            for future in futures:
                results.append(future.result())
                if on_done:
                    on_done(results[-1])
        return results


class LocalBuilder(Builder, kind="local"):
    """nvcc on this machine. The cache key covers the source, flags, include dirs, nvcc version and arch."""

    def __init__(self, toolchain: Toolchain | None = None, timeout_s: float = 600.0, cache_dir: Path | None = None):
        self.toolchain = toolchain or Toolchain.discover()
        self.timeout_s = timeout_s
        # absolute: nvcc runs in a folder beneath it, given paths beneath it (a relative cache named files nvcc
        # could not find: "cc1plus: fatal error: ... No such file or directory" for every wrapper)
        self.cache_dir = (Path(cache_dir) if cache_dir else cache_root() / "build").absolute()

    def command(self, request: BuildRequest, src: Path, out: Path) -> list[str]:
        includes = list(request.include_dirs) + list(self.toolchain.include_dirs)
        if request.origin:
            includes.insert(0, str(Path(request.origin).parent))
        return ([self.toolchain.nvcc, *BASE_FLAGS, *arch_flags(self.toolchain.arch), *request.flags]
                + [f"-I{d}" for d in includes] + [str(src), "-o", str(out), *request.link])

    def key(self, request: BuildRequest) -> str:
        # Include dirs enter the key by what they hold, not where they sit, so a cache built on one machine (with
        # the same nvcc and headers) serves another: libraries compiled here can be carried to the GPU box.
        payload = {"source": request.source, "flags": request.flags, "link": request.link,
                   "include_dirs": [include_identity(d)
                                    for d in list(request.include_dirs) + list(self.toolchain.include_dirs)],
                   "origin_dir": origin_dir(request),
                   # What nvcc is told, not the label: sm_90 (detected) and sm_90a (asked for) build the same code.
                   "nvcc": self.toolchain.version, "arch": arch_flags(self.toolchain.arch), "base": BASE_FLAGS}
        return hashlib.sha256(json.dumps(payload, sort_keys=True).encode()).hexdigest()[:24]

    def build(self, request: BuildRequest) -> BuildResult:
        key = self.key(request)
        final = self.cache_dir / key
        meta_path = final / "build.json"
        if meta_path.exists():
            try:
                meta = json.loads(meta_path.read_text())
                if meta.get("lib_path"):  # stored relative to the entry: the cache folder may have moved
                    meta["lib_path"] = str(final / Path(meta["lib_path"]).name)
                result = BuildResult(**{**meta, "name": request.name, "cached": True})
                # a failure stored before builds kept their verdict key is built again (it then stores its key)
                if (not result.ok and result.verdict) or (result.lib_path and Path(result.lib_path).exists()):
                    return result
            except (OSError, ValueError, TypeError):
                pass  # a damaged cache entry is rebuilt
        self.cache_dir.mkdir(parents=True, exist_ok=True)
        work = Path(tempfile.mkdtemp(prefix=f".{key}.", dir=self.cache_dir))
        src, lib = work / f"{_safe(request.name)}.cu", work / f"lib{_safe(request.name)}.so"
        src.write_text(request.source)
        started = time.perf_counter()
        try:
            proc = subprocess.run(self.command(request, src, lib), capture_output=True, text=True,
                                  timeout=self.timeout_s, cwd=work)
            # Name the user's file, not our temporary copy, in messages.
            log = (proc.stdout + proc.stderr).replace(str(src), request.origin or src.name)
            ok = proc.returncode == 0 and lib.exists()
            verdict, detail = (None, "") if ok else (Verdict.COMPILE_ERROR, _first_error(log))
        except subprocess.TimeoutExpired as exc:
            log, ok = _text(exc.stdout) + _text(exc.stderr), False
            verdict, detail = Verdict.COMPILE_TIMEOUT, f"nvcc ran past {self.timeout_s:.0f} s"
        seconds = time.perf_counter() - started
        result = BuildResult(name=request.name, key=key, ok=ok, error=verdict.reason(detail) if verdict else None,
                             log=log[-20000:], ptxas=parse_ptxas(log), seconds=round(seconds, 3),
                             lib_path=str(final / lib.name) if ok else None,
                             verdict=verdict.value if verdict else None, detail=detail)
        if verdict is Verdict.COMPILE_TIMEOUT:
            shutil.rmtree(work, ignore_errors=True)  # the limit is not in the key: a later, longer try must compile
            return result
        (work / "build.json").write_text(json.dumps({**result.to_dict(), "lib_path": lib.name if ok else None},
                                                    indent=1))
        try:
            os.rename(work, final)  # atomic publish; a concurrent identical build may win the race
        except OSError:
            shutil.rmtree(work, ignore_errors=True)
        return result


def include_identity(path: str) -> str:
    """A header folder as the cache key sees it: a package's headers by package and version wherever installed
    (CUTLASS from the nvidia-cutlass wheel), anything else by its path."""
    for root, label in _known_header_roots().items():
        if path == root or path.startswith(root + os.sep):
            return label + path[len(root):]
    return path


@functools.lru_cache(maxsize=1)
def _known_header_roots() -> dict[str, str]:
    dirs = cutlass_include_dirs()
    if not dirs:
        return {}
    try:
        version = metadata.version("nvidia-cutlass")
    except metadata.PackageNotFoundError:
        version = "unknown"
    root = str(Path(dirs[0]).parent.parent)  # .../cutlass_library
    return {root: f"nvidia-cutlass=={version}"}


def _safe(name: str) -> str:
    return "".join(c if c.isalnum() or c in "-_" else "_" for c in name)[:80] or "candidate"


def _text(data) -> str:
    return data.decode(errors="replace") if isinstance(data, bytes) else (data or "")


def _first_error(log: str) -> str:
    """The first line that says 'error', so one line tells the user what went wrong."""
    for line in log.splitlines():
        if "error" in line.lower():
            return line.strip()[:300]
    lines = [ln for ln in log.splitlines() if ln.strip()]
    return lines[-1].strip()[:300] if lines else "nvcc failed without output"

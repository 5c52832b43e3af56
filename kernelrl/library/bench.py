"""Measuring a tuned library as one method, `kernelrl`, beside the baselines.

Each kernel the library ships is timed as a candidate on exactly the shapes the library dispatches to it, from the
library's own compiled file (what users load, not a rebuild). The `kernelrl` row of a shape is then the row of what
the library runs there: its kernel's measurement, or, where it dispatches to torch.matmul, torch's measurement from
the same run (`dispatch` says which). Host dispatch cost is not in device-mode times; benchmarks/dispatch_overhead.py
measures it."""

from __future__ import annotations

import hashlib
from dataclasses import dataclass
from pathlib import Path

from kernelrl.library.export import MANIFEST
from kernelrl.workloads.hgemm import GemmProblem

METHOD = "kernelrl"
FALLBACK = "torch"


@dataclass
class LibraryPlan:
    kernels: dict[str, Path]                   # kernel name -> its compiled library
    keys: dict[str, str]                       # kernel name -> content hash of that file (resume key)
    choice: dict[tuple, str | None]            # (m, n, k, acc) -> kernel name, or None for torch.matmul

    @classmethod
    def make(cls, root: Path, problems: list[GemmProblem]) -> "LibraryPlan":
        from kernelrl.bench import BenchError
        from kernelrl.library.runtime import Library, LibraryError
        try:
            lib = Library(root)
        except LibraryError as exc:
            raise BenchError(str(exc)) from None
        except ValueError as exc:
            raise BenchError(f"{Path(root) / MANIFEST}: not a kernelrl manifest ({exc})") from None
        choice: dict[tuple, str | None] = {}
        for p in problems:
            key = (p.m, p.n, p.k, p.acc)
            if key in lib.table:  # on the grid: the manifest decides, no library needs loading
                name = lib.table[key]
                choice[key] = name if name and _library_file(lib, name) else None
            else:
                choice[key] = lib.choose(p.m, p.n, p.k, p.acc)
        kernels = {name: _library_file(lib, name) for name in set(choice.values()) if name}
        keys = {name: hashlib.sha256(path.read_bytes()).hexdigest()[:24] for name, path in kernels.items()}
        return cls(kernels, keys, choice)

    def methods_for(self, problem: GemmProblem) -> set[str]:
        name = self.choice.get((problem.m, problem.n, problem.k, problem.acc))
        return {name} if name else set()

    def rows(self, rows: list[dict]) -> list[dict]:
        """The `kernelrl` rows: a copy of the dispatched method's row per shape and mode."""
        by_key = {(r["m"], r["n"], r["k"], r["acc"], r["mode"], r["method"]): r for r in rows}
        out = []
        for (m, n, k, acc), name in self.choice.items():
            for mode in sorted({r["mode"] for r in rows}):
                source = by_key.get((m, n, k, acc, mode, name or FALLBACK))
                if source is None:
                    continue
                out.append({**source, "method": METHOD, "dispatch": name or "torch.matmul"})
        return out


def _library_file(lib, name: str) -> Path | None:
    rel = lib.kernels_meta.get(name, {}).get("library")
    path = lib.root / rel if rel else None
    return path if path is not None and path.is_file() else None

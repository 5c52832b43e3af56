"""Measuring a tuned library as one method, `kernelrl`, beside the baselines.

Each kernel the library ships is timed as a candidate on exactly the shapes the library dispatches to it, from the
library's own compiled file (what users load, not a rebuild). The `kernelrl` row of a shape is then the row of what
the library runs there: its kernel's measurement, or, where it falls back, torch's or cuBLASLt's measurement from the
same run (`dispatch` says which; cuBLASLt runs the library's stored algorithm there, see `lt_cache`). Host dispatch cost is not in device-mode times; benchmarks/dispatch_overhead.py
measures it."""

from __future__ import annotations

import hashlib
from dataclasses import dataclass, field
from pathlib import Path

from kernelrl.library.export import MANIFEST
from kernelrl.workloads.hgemm import GemmProblem

METHOD = "kernelrl"
FALLBACK = "torch"
LT = "cublaslt_auto_nn"  # a shape the library sends to cuBLASLt with its stored algorithm


@dataclass
class LibraryPlan:
    kernels: dict[str, Path]                   # kernel name -> its compiled library
    keys: dict[str, str]                       # kernel name -> content hash of that file (resume key)
    choice: dict[tuple, str | None]            # (m, n, k, acc) -> kernel name, LT, or None for torch.matmul
    lt_algos: dict[tuple, str] = field(default_factory=dict)  # LT shapes -> the stored algorithm (hex)

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
                choice[key] = name if name and lib.library_path(name) else (LT if key in lib.lt_algos else None)
            else:
                choice[key] = lib.choose(p.m, p.n, p.k, p.acc)
        kernels = {name: lib.library_path(name) for name in set(choice.values()) if name and name != LT}
        keys = {name: hashlib.sha256(path.read_bytes()).hexdigest()[:24] for name, path in kernels.items()}
        return cls(kernels, keys, choice, {k: lib.lt_algos[k] for k, v in choice.items() if v == LT})

    def lt_cache(self) -> dict[str, dict]:
        """Autotuning-cache entries that make the `cublaslt_auto_nn` baseline run the library's stored algorithm on
        the shapes the library sends to cuBLASLt: what is measured there is exactly what the library calls."""
        from kernelrl.run.methods import LT_WORKSPACE_BYTES, lt_cache_key
        from kernelrl.workloads.hgemm import GemmProblem
        return {lt_cache_key(GemmProblem(m, n, k, acc=acc), "nn", LT_WORKSPACE_BYTES):
                {"algo": algo, "algo_index": -1, "time_ms": None, "candidates": 0, "search_s": 0.0}
                for (m, n, k, acc), algo in self.lt_algos.items()}

    def methods_for(self, problem: GemmProblem) -> set[str]:
        name = self.choice.get((problem.m, problem.n, problem.k, problem.acc))
        return {name} if name and name != LT else set()

    def rows(self, rows: list[dict]) -> list[dict]:
        """The `kernelrl` rows: a copy of the dispatched method's row per shape and mode."""
        by_key = {(r["m"], r["n"], r["k"], r["acc"], r["mode"], r["method"]): r for r in rows}
        out = []
        for (m, n, k, acc), name in self.choice.items():
            for mode in sorted({r["mode"] for r in rows}):
                source = by_key.get((m, n, k, acc, mode, name or FALLBACK))
                if source is None:
                    continue
                label = {None: "torch.matmul", LT: "cuBLASLt (stored algorithm)"}.get(name, name)
                out.append({**source, "method": METHOD, "dispatch": label})
        return out


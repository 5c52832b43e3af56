"""Measuring a tuned library as one method, `kernelrl`, beside the baselines.

The method is the library called as users call it: the worker loads the folder with `kernelrl.Library` and times
`Library.hgemm(a, b, out)`, so every mode includes what users pay: the dispatch (the C++ fast path where it built,
else the Python one), then the tuned kernel, cuBLASLt with the stored algorithm, or torch's mm. Each row's
`dispatch` column says which of these the manifest sends the shape to."""

from __future__ import annotations

import hashlib
from dataclasses import dataclass
from pathlib import Path

from kernelrl.library import policy
from kernelrl.library.export import MANIFEST, shape_key
from kernelrl.library.policy import LT_FALLBACKS, dispatch_label
from kernelrl.library.runtime import Library, LibraryError
from kernelrl.workloads.hgemm import GemmProblem

METHOD = "kernelrl"
FALLBACK = "torch"
_RUNTIME = [Path(__file__).with_name(n) for n in ("runtime.py", "policy.py", "fastpath.cpp", "native.py")]


@dataclass
class LibraryPlan:
    root: Path
    key: str                                   # content hash of what runs: resume key of the `kernelrl` rows
    # (m, n, k, acc, dtype, layout) -> a kernel's name, the layout's cuBLASLt fallback (policy.LT_FALLBACKS), or
    # None for the plain fallback (torch.matmul; F.linear for nt)
    choice: dict[tuple, str | None]

    @classmethod
    def make(cls, root: Path, problems: list[GemmProblem]) -> "LibraryPlan":
        try:
            lib = Library(root)
        except LibraryError:
            raise
        except ValueError as exc:
            raise LibraryError(f"{Path(root) / MANIFEST}: not a kernelrl manifest ({exc})") from None
        choice: dict[tuple, str | None] = {}
        for p in problems:
            key = lib.key(p.m, p.n, p.k, p.acc, p.dtype, p.layout)
            if key in lib.table:  # on the grid: the manifest decides, no kernel needs loading (usable: built)
                decided = policy.route(key, lib.table, lib.lt_algos, usable=lambda name: bool(lib.library_path(name)))
            else:  # off the grid: the runtime loads the nearest kernels to ask them
                decided = lib.route(p.m, p.n, p.k, p.acc, p.dtype, p.layout)
            choice[key] = decided.name
        digest = hashlib.sha256((Path(root) / MANIFEST).read_bytes())
        files = {lib.library_path(n) for n in choice.values() if n and n not in LT_FALLBACKS.values()} \
            | {lib.native_path} | set(_RUNTIME)
        for path in sorted(str(f) for f in files if f is not None):
            digest.update(Path(path).read_bytes())
        return cls(Path(root).resolve(), digest.hexdigest()[:24], choice)

    def spec(self) -> dict:
        """The worker's method spec. `runs` (what each shape dispatches to) is for runners that do not load the
        library, such as the dummy runner; a GPU worker ignores it and runs the library itself."""
        return {"name": METHOD, "kind": "library", "root": str(self.root),
                "runs": {shape_key(*key): name or FALLBACK for key, name in self.choice.items()}}

    def label(self, m: int, n: int, k: int, acc: str, dtype: str = "fp16", layout: str = "nn") -> str:
        return dispatch_label(self.choice.get((m, n, k, acc, dtype, layout)), layout)

    def rows(self, rows: list[dict]) -> list[dict]:
        """The rows with the `kernelrl` ones labelled by what the library dispatches to."""
        return [{**r, "dispatch": self.label(r["m"], r["n"], r["k"], r["acc"], r.get("dtype", "fp16"),
                                             r.get("layout", "nn"))} if r["method"] == METHOD else r
                for r in rows]


"""Build KernelBench candidates' `load_inline` extensions ahead of an evaluation, several at a time.

The evaluation worker imports candidates one after another, so each `load_inline` compile (tens of seconds with
torch's headers) is paid in series. Importing every candidate that calls `load_inline` once beforehand, in parallel
throwaway processes, fills torch's extension cache (`TORCH_EXTENSIONS_DIR`, default ~/.cache/torch_extensions);
the worker's own import then only loads the built library. Candidates sharing an extension name and sources build
once (torch serialises concurrent builds of one name with a lock file).

Importing runs the candidate's module code, so each import gets its own spawned process that exits afterwards:
nothing a candidate does at import reaches the evaluation. A failed import is reported and skipped (the evaluation
gives the candidate its verdict).

    python -m kernelrl.kernelbench.prebuild FILES_OR_FOLDERS... [--jobs N] [--timeout S]
"""

from __future__ import annotations

import argparse
import multiprocessing as mp
import time
from concurrent.futures import ProcessPoolExecutor, TimeoutError as FutureTimeout
from pathlib import Path

from kernelrl.kernelbench.tasks import discover


def _import(path: str) -> tuple[str, float, str | None]:
    from kernelrl.kernelbench.tasks import load_module
    t0 = time.perf_counter()
    try:
        load_module(path)
        return path, time.perf_counter() - t0, None
    except BaseException as exc:  # a candidate may raise anything, SystemExit included
        text = str(exc).strip().splitlines()
        return path, time.perf_counter() - t0, f"{type(exc).__name__}: {text[-1][:300] if text else ''}"


def extension_files(paths: list[str | Path]) -> list[Path]:
    """Candidate files (defining ModelNew) whose source calls load_inline."""
    files, _ = discover(paths)
    out = []
    for f in files:
        try:
            text = f.read_text()
        except (OSError, UnicodeDecodeError):
            continue
        if "load_inline" in text and "ModelNew" in text:
            out.append(f)
    return out


def prebuild(paths: list[str | Path], jobs: int = 8, timeout_s: float = 600.0) -> list[tuple[str, float, str | None]]:
    """(path, seconds, error or None) for every candidate built; at most `jobs` imports at once."""
    files = extension_files(paths)
    if not files:
        return []
    results = []
    ctx = mp.get_context("spawn")
    with ProcessPoolExecutor(max_workers=max(1, min(jobs, len(files))), mp_context=ctx,
                             max_tasks_per_child=1) as pool:
        futures = {str(f): pool.submit(_import, str(f)) for f in files}
        deadline = time.monotonic() + timeout_s
        for path, fut in futures.items():
            try:
                results.append(fut.result(timeout=max(1.0, deadline - time.monotonic())))
            except FutureTimeout:
                results.append((path, timeout_s, f"timeout after {timeout_s:.0f} s"))
            except Exception as exc:  # the process died (a candidate that exits or crashes at import)
                results.append((path, 0.0, f"{type(exc).__name__}: {exc}"))
    return results


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m kernelrl.kernelbench.prebuild",
                                     description=__doc__.split("\n\n")[0])
    parser.add_argument("paths", nargs="+", help="candidate files or folders")
    parser.add_argument("--jobs", type=int, default=8, help="imports at once (each runs ninja with its own jobs)")
    parser.add_argument("--timeout", type=float, default=600.0, help="seconds for the whole prebuild")
    args = parser.parse_args(argv)
    t0 = time.perf_counter()
    results = prebuild(args.paths, args.jobs, args.timeout)
    for path, seconds, error in results:
        print(f"{'built' if error is None else 'FAILED'} {path} ({seconds:.1f} s){': ' + error if error else ''}",
              flush=True)
    failed = sum(e is not None for _, _, e in results)
    print(f"prebuild: {len(results) - failed} of {len(results)} candidates imported in "
          f"{time.perf_counter() - t0:.1f} s", flush=True)
    return 1 if failed else 0


if __name__ == "__main__":
    raise SystemExit(main())

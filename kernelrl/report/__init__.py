"""`kernelrl report`: one static, self-contained HTML page from benchmark results.

Inputs
- Results: long-format CSVs written by `kernelrl bench --csv` (the columns of kernelrl.results.CSV_COLUMNS), or
  kernelrl's SQLite results databases (`.db`, `.sqlite`, `.sqlite3`; every measurement in them, the newest per GPU,
  shape, mode, cache, qps and method). Several files are read as one set; where two hold the same mode, shape and
  method, the later file's row wins (as in `kernelrl summarize`).
- Optionally a kernel-library manifest (`--manifest LIB/manifest.json`). The report expects only this much of it:

      {"shapes": {"4096x4096x4096:fp32": {"family": "sm90_tma_ws", "kernel": "k_128x256x64_s4", ...}, ...}}

  Keys are `MxNxK:acc` (`MxNxK` alone means fp32); each value is an object with a string `family` (required) and a
  string `kernel` (optional); every other field, and every other top-level key, is ignored.

The subject: the candidate (a method that is not a library baseline) whose speedups the maps show, chosen with
`method=` when the results hold several. With `method=` naming a library baseline, or with results holding only
baselines, the maps show library baselines against torch.matmul.

The page (no network resources, no scripts; maps are embedded PNGs drawn by matplotlib's Agg canvas): environment,
win rates and geomean speedups per size class (the numbers of kernelrl.results.summarize), speedup maps per mode and
baseline (one M×N map per K), the family map when a manifest is given, and the failures (capped, with a count).
"""

from __future__ import annotations

import csv
import importlib.util
import json
import os
import re
import sqlite3
import tempfile
import time
from pathlib import Path

from kernelrl.db.database import keyed_row
from kernelrl.errors import UserError
from kernelrl.results import CSV_COLUMNS, read_csv

DB_SUFFIXES = (".db", ".sqlite", ".sqlite3")
REQUIRED_COLUMNS = ("m", "n", "k", "acc", "mode", "method", "time_us_median", "verified")


class ReportError(UserError, ValueError):
    """Input the report cannot use; one line says what is wrong and what to pass instead."""


def load_results(paths: list[str | Path]) -> tuple[list[dict], list[dict], dict[str, dict]]:
    """Rows in read_csv's form from CSVs and databases, the sources ({path, kind, rows}) and, from databases, the
    recorded environment of the newest measurement per GPU ({gpu: env})."""
    if not paths:
        raise ReportError("no results given; pass CSVs written by kernelrl bench --csv")
    rows: list[dict] = []
    sources: list[dict] = []
    envs: dict[str, dict] = {}
    for path in map(Path, paths):
        if not path.is_file():
            raise ReportError(f"{path}: no such file; pass CSVs written by kernelrl bench --csv (or its .db)")
        if path.suffix.lower() in DB_SUFFIXES:
            got, env = _read_db(path)
            envs.update(env)
            kind = "database"
        else:
            got, kind = _read_results_csv(path), "csv"
        rows += got
        sources.append({"path": str(path), "kind": kind, "rows": len(got)})
    if not rows:
        raise ReportError(f"no measurements in {', '.join(map(str, paths))}")
    return rows, sources, envs


def _read_results_csv(path: Path) -> list[dict]:
    try:
        with open(path, newline="") as f:
            header = next(csv.reader(f), [])
    except (OSError, UnicodeDecodeError) as exc:
        raise ReportError(f"{path}: cannot read it as a CSV ({exc})") from None
    missing = [c for c in REQUIRED_COLUMNS if c not in header]
    if missing:
        raise ReportError(f"{path}: not a kernelrl results CSV (no column {', '.join(missing)}); "
                          "pass files written by kernelrl bench --csv")
    try:
        return read_csv(path)
    except (ValueError, TypeError) as exc:
        raise ReportError(f"{path}: unreadable row in the CSV ({exc})") from None


def _read_db(path: Path) -> tuple[list[dict], dict[str, dict]]:
    """Every measurement of a kernelrl database, read-only, the newest per key (an edited candidate's older
    versions are left out)."""
    try:
        conn = sqlite3.connect(f"file:{path.resolve()}?mode=ro", uri=True)
        try:
            conn.row_factory = sqlite3.Row
            records = [keyed_row(dict(r)) for r in conn.execute("SELECT * FROM measurements ORDER BY created")]
        finally:
            conn.close()
    except sqlite3.Error as exc:
        raise ReportError(f"{path}: not a kernelrl results database ({exc})") from None
    newest: dict[tuple, dict] = {}
    for r in records:  # in creation order: later rows replace earlier ones
        newest[(r["gpu"], r["m"], r["n"], r["k"], r["acc"], r["layout"], r["mode"], r["cache"], r["qps"],
                r["method"])] = r
    rows, envs = [], {}
    for r in newest.values():
        row = {c: r.get(c) for c in CSV_COLUMNS}
        row["verified"] = bool(r["verified"])
        row["reason"] = r.get("reason") or ""
        rows.append(row)
        try:
            envs[r["gpu"]] = json.loads(r.get("env") or "{}")
        except ValueError:
            pass
    return rows, envs


_SHAPE_KEY = re.compile(r"(\d+)x(\d+)x(\d+)(?::(fp32|fp16))?")


def load_manifest(path: str | Path) -> dict[tuple[int, int, int, str], dict]:
    """{(m, n, k, acc): {"family": str, "kernel": str | None}} from a manifest (format in the module docstring)."""
    path = Path(path)
    if not path.is_file():
        raise ReportError(f"{path}: no such manifest; pass LIB/manifest.json")
    try:
        data = json.loads(path.read_text())
    except (OSError, UnicodeDecodeError, ValueError) as exc:
        raise ReportError(f"{path}: not a JSON manifest ({exc})") from None
    shapes = data.get("shapes") if isinstance(data, dict) else None
    if not isinstance(shapes, dict):
        raise ReportError(f'{path}: the manifest needs a "shapes" object '
                          '{"MxNxK:acc": {"family": ..., "kernel": ...}}')
    out = {}
    for key, entry in shapes.items():
        match = _SHAPE_KEY.fullmatch(str(key).strip())
        if not match:
            raise ReportError(f'{path}: shape key {key!r} is not MxNxK:acc, e.g. "4096x4096x4096:fp32"')
        if not isinstance(entry, dict) or not isinstance(entry.get("family"), str) or not entry["family"]:
            raise ReportError(f'{path}: shape {key} needs a "family" string')
        kernel = entry.get("kernel")
        m, n, k = (int(g) for g in match.groups()[:3])
        out[(m, n, k, match.group(4) or "fp32")] = {"family": entry["family"],
                                                   "kernel": kernel if isinstance(kernel, str) else None}
    if not out:
        raise ReportError(f'{path}: the manifest\'s "shapes" is empty')
    return out


def write_atomic(path: str | Path, text: str) -> None:
    """A temp file in the same folder, then rename: a reader never sees half a page."""
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.", suffix=".tmp")
    try:
        with os.fdopen(fd, "w", encoding="utf-8") as f:
            f.write(text)
        os.chmod(tmp, 0o644)
        os.replace(tmp, path)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise


def build_report(results: list[str | Path], output: str | Path, manifest: str | Path | None = None,
                 method: str | None = None) -> dict:
    """Read the results (and manifest), write the page to `output` atomically; returns {path, bytes, seconds,
    maps, subject}."""
    start = time.perf_counter()
    rows, sources, envs = load_results(results)
    families = load_manifest(manifest) if manifest else None
    if importlib.util.find_spec("matplotlib") is None:
        raise ReportError("the report draws with matplotlib: pip install 'kernelrl[report]' "
                          "(or pip install matplotlib)")
    from kernelrl.report.html import render_page  # loads matplotlib (optional, slow): only to draw a page

    page, info = render_page(rows, sources=sources, envs=envs, families=families, method=method,
                             manifest_path=str(manifest) if manifest else None)
    write_atomic(output, page)
    return {"path": str(output), "bytes": len(page.encode("utf-8")), "seconds": time.perf_counter() - start,
            **info}


__all__ = ["ReportError", "build_report", "load_manifest", "load_results", "write_atomic"]

"""Files a run writes as it goes: JSON lines appended one whole line at a time (a run can die at any step and every
line written before survives; `jq` or pandas read it as it grows), and CSVs replaced atomically (a reader never
sees half a table)."""

from __future__ import annotations

import csv
import datetime as dt
import json
import os
import tempfile
import threading
from pathlib import Path
from typing import Callable, Iterable, Sequence


class JsonLines:
    """Appends one JSON object per line, stamped with the UTC time; safe to share between threads (one write per
    line: lines from threads never interleave). `path` None: writes nothing. `default` turns what JSON cannot hold
    into what it can."""

    def __init__(self, path: str | Path | None, default: Callable = str):
        self.path = Path(path) if path else None
        self.default = default
        self._lock = threading.Lock()
        if self.path is not None:
            self.path.parent.mkdir(parents=True, exist_ok=True)

    def write(self, record: dict) -> None:
        if self.path is None:
            return
        line = json.dumps({"time": dt.datetime.now(dt.timezone.utc).isoformat(timespec="milliseconds"), **record},
                          default=self.default)
        with self._lock, open(self.path, "a") as f:
            f.write(line + "\n")


def csv_cell(value):
    """A CSV cell: floats with 6 significant digits, booleans as 0/1, None empty."""
    if isinstance(value, bool):
        return int(value)
    if isinstance(value, float):
        return f"{value:.6g}"
    return "" if value is None else value


def write_csv(path: str | Path, rows: Iterable[dict], columns: Sequence[str]) -> None:
    """`rows` under `columns` (other keys ignored), written to a temporary file in the same folder, then renamed."""
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.")
    with os.fdopen(fd, "w", newline="") as f:
        writer = csv.DictWriter(f, fieldnames=list(columns), extrasaction="ignore")
        writer.writeheader()
        for row in rows:
            writer.writerow({k: csv_cell(row.get(k)) for k in columns})
    os.replace(tmp, path)

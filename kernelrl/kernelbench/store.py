"""Where `kernelrl kb eval` keeps its measurements: the results database (table kb_results), pair by pair."""

from __future__ import annotations

import hashlib
from pathlib import Path

from kernelrl.db.database import Database
from kernelrl.kernelbench.evaluate import csv_rows


class KBResultStore:
    """Each KernelBench pair's rows in the results database as soon as the pair is done, so a run cut short keeps
    what it measured. The rows are the CSV's (kernelbench/evaluate.py: csv_rows)."""

    def __init__(self, path, command: str, device: str, env: dict, claims: dict | None = None):
        from kernelrl.jobs.measure import default_db  # loads torch (kernelrl.run.runner); only when a store opens
        self.db = Database(path or default_db())
        self.device, self.env, self.claims = device, env, claims  # claims: a published set's (evaluate.csv_rows)
        self.run_id = self.db.start_run(command, env)
        self.by_pair: dict[int, list[dict]] = {}  # id(verdict) -> its latest rows

    def pair(self, verdict, records: list[dict]) -> None:
        """Store a pair's rows from all its records so far (a later call for the same pair replaces them)."""
        def key(f) -> str:
            return hashlib.sha256(Path(f.path).read_bytes()).hexdigest()[:24] if f is not None else ""
        rows = csv_rows([verdict], [verdict] if verdict.task and verdict.candidate and not verdict.reasons else [],
                        {0: records}, self.env, self.claims)
        self.by_pair[id(verdict)] = rows
        gpu = self.env.get("gpu") or ("cpu" if self.device == "cpu" else "unknown")
        self.db.update_run_env(self.run_id, self.env)
        self.db.add_kb(gpu, key(verdict.task), key(verdict.candidate), rows, self.env, self.run_id)

    def rows(self, verdicts) -> list[dict]:
        """Every stored row, in the order of `verdicts` (what --csv writes)."""
        return [row for v in verdicts for row in self.by_pair.get(id(v), [])]

    def close(self) -> None:
        self.db.close()

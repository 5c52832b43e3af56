"""Where `kernelrl kb eval` keeps its measurements: the results database (table kb_results), pair by pair."""

from __future__ import annotations

import hashlib
import json
from pathlib import Path

from kernelrl.db.database import Database
from kernelrl.harness.sandbox import confined
from kernelrl.harness.verdicts import Category, category_of
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
        self._stored: tuple[str, dict] | None = None  # (gpu, rows by pair key) as the database held them (resume)
        self.unconfined: dict[str, int] = {}  # resumed pairs by the sandbox line of the run that stored them

    def pair(self, verdict, records: list[dict]) -> None:
        """Store a pair's rows from all its records so far (a later call for the same pair replaces them)."""
        rows = self._rows(verdict, records, self.env)
        gpu = self.env.get("gpu") or ("cpu" if self.device == "cpu" else "unknown")
        self.db.update_run_env(self.run_id, self.env)
        self.db.add_kb(gpu, _key(verdict.task), _key(verdict.candidate), rows, self.env, self.run_id)

    def _rows(self, verdict, records: list[dict], env: dict) -> list[dict]:
        rows = csv_rows([verdict], [verdict] if verdict.task and verdict.candidate and not verdict.reasons else [],
                        {0: records}, env, self.claims)
        self.by_pair[id(verdict)] = rows
        return rows

    def resume(self, verdict, gpu: str, baselines, profile: str) -> list[dict] | None:
        """The records of this pair (same task and candidate sources) stored on `gpu` by an earlier run (`kb eval
        --resume`), kept for this run's CSV with the environment they were measured in; None where it must run
        again: nothing stored, another deciding tolerance profile, a requested baseline missing from a timed pair,
        an infrastructure verdict (the evaluator failed there, not the candidate), or an acceptance no referee ruled
        on (stored before kernelbench/referee.py, or by a run with it off)."""
        if self._stored is None or self._stored[0] != gpu:  # read once, looked up per pair
            by_pair: dict[tuple[str, str], list[dict]] = {}
            for r in self.db.kb_rows(gpu):
                by_pair.setdefault((r["task_key"], r["candidate_key"]), []).append(r)
            self._stored = (gpu, by_pair)
        rows = self._stored[1].get((_key(verdict.task), _key(verdict.candidate)), [])
        latest = max((r["run_id"] or 0 for r in rows), default=0)
        rows = [r for r in rows if (r["run_id"] or 0) == latest]  # a pair judged again: its last run's rows only
        if not rows or any((r.get("profile") or "strict") != profile for r in rows):
            return None
        if any(category_of(r) is Category.INFRASTRUCTURE for r in rows):
            return None
        if all(r["verified"] for r in rows) and not any(r.get("referee_speedup") is not None
                                                       or "referee: " in (r.get("notes") or "") for r in rows):
            return None
        timed = {r["baseline"] for r in rows if r["baseline"]}
        if timed and not set(baselines) <= timed:
            return None
        records = [_record(r) for r in rows if not timed or r["baseline"] in baselines]
        env = json.loads(rows[0].get("env") or "{}")
        if not confined(env):
            why = env.get("sandbox") or "not recorded (stored before workers were confined)"
            self.unconfined[why] = self.unconfined.get(why, 0) + 1
        self._rows(verdict, records, env)
        return records

    def rows(self, verdicts) -> list[dict]:
        """Every stored row, in the order of `verdicts` (what --csv writes)."""
        return [row for v in verdicts for row in self.by_pair.get(id(v), [])]

    def close(self) -> None:
        self.db.close()


def _key(f) -> str:
    """A task's or candidate's key: the hash of its source (an edited file is a new entry)."""
    return hashlib.sha256(Path(f.path).read_bytes()).hexdigest()[:24] if f is not None else ""


def _record(row: dict) -> dict:
    """A stored row as the worker's record for the same pair and baseline (what the tables and the CSV read)."""
    fields = ("verified", "reason", "verdict", "baseline", "candidate_us", "baseline_us", "speedup", "max_abs_err",
              "max_rel_err", "baseline_reason", "profile", "profiles", "tightest_tolerance", "task_verdicts",
              "kernelbench_rule", "referee_speedup")
    return {"method": "candidate", **{k: row.get(k) for k in fields},
            "time_us_median": row.get("candidate_us") if row["verified"] else None,
            "extra": {"task_phase_s": json.loads(row["phase_s"]) if row.get("phase_s") else {},
                      "rounds_run": row.get("rounds_run"), "resumed": True,
                      "notes": [n for n in (row.get("notes") or "").split("; ") if n]}}

"""The results database (SQLite): one row per measurement, committed as it is taken, so a re-run resumes.
KernelBench-format pairs (`kernelrl kb eval`) have their own table, kb_results, one row per (pair, baseline).

A measurement is identified by (gpu, problem, mode, cache, qps, method, method_key); method_key hashes a
candidate's source so an edited kernel is measured again. Rows of a shape and mode are written together, in one
transaction, because their methods were interleaved in one process and belong together: so when a later run
measures some of them again, every row of the earlier run's group for that shape and mode moves to `superseded`
(kept, with the run that replaced it), and no row is left to be read beside times it was never measured with."""

from __future__ import annotations

import json
import sqlite3
import time
from pathlib import Path

from kernelrl.harness.verdicts import migrate_reason

SCHEMA = """
CREATE TABLE IF NOT EXISTS runs (
    run_id INTEGER PRIMARY KEY AUTOINCREMENT, started REAL, command TEXT, env TEXT);
CREATE TABLE IF NOT EXISTS measurements (
    gpu TEXT NOT NULL, m INTEGER NOT NULL, n INTEGER NOT NULL, k INTEGER NOT NULL, acc TEXT NOT NULL,
    layout TEXT NOT NULL, mode TEXT NOT NULL, cache TEXT NOT NULL, qps REAL NOT NULL,
    method TEXT NOT NULL, method_key TEXT NOT NULL,
    time_us_median REAL, time_us_p10 REAL, time_us_p90 REAL, samples INTEGER, tflops REAL, max_rel_err REAL,
    verified INTEGER NOT NULL, reason TEXT, extra TEXT, env TEXT, run_id INTEGER, created REAL, verdict TEXT,
    dtype TEXT NOT NULL DEFAULT 'fp16',
    PRIMARY KEY (gpu, m, n, k, acc, layout, dtype, mode, cache, qps, method, method_key));
CREATE TABLE IF NOT EXISTS superseded (
    gpu TEXT, m INTEGER, n INTEGER, k INTEGER, acc TEXT, layout TEXT, mode TEXT, cache TEXT, qps REAL,
    method TEXT, method_key TEXT,
    time_us_median REAL, time_us_p10 REAL, time_us_p90 REAL, samples INTEGER, tflops REAL, max_rel_err REAL,
    verified INTEGER, reason TEXT, extra TEXT, env TEXT, run_id INTEGER, created REAL, verdict TEXT, dtype TEXT,
    superseded_by INTEGER, superseded_at REAL);
CREATE TABLE IF NOT EXISTS kb_results (
    gpu TEXT NOT NULL, task TEXT NOT NULL, task_key TEXT NOT NULL, candidate TEXT NOT NULL,
    candidate_key TEXT NOT NULL, baseline TEXT NOT NULL, verified INTEGER NOT NULL, reason TEXT,
    candidate_us REAL, baseline_us REAL, speedup REAL, max_abs_err REAL, max_rel_err REAL, baseline_reason TEXT,
    static TEXT, env TEXT, run_id INTEGER, created REAL, verdict TEXT,
    profile TEXT, profiles TEXT, tightest_tolerance REAL, claimed_speedup REAL, phase_s TEXT, rounds_run INTEGER,
    task_verdicts TEXT, kernelbench_rule INTEGER, notes TEXT, time_spread TEXT, referee_speedup REAL,
    PRIMARY KEY (gpu, task_key, candidate_key, baseline));
CREATE TABLE IF NOT EXISTS lt_algos (
    gpu TEXT NOT NULL, cublaslt INTEGER NOT NULL, key TEXT NOT NULL, algo TEXT NOT NULL, algo_index INTEGER,
    time_ms REAL, candidates INTEGER, valid INTEGER, search_s REAL, created REAL,
    PRIMARY KEY (gpu, cublaslt, key));
"""

COLUMNS = ("m", "n", "k", "acc", "mode", "method", "time_us_median", "time_us_p10", "time_us_p90", "tflops",
           "max_rel_err", "verified", "reason")


class Database:
    def __init__(self, path: str | Path):
        self.path = Path(path)
        if self.path.parent and not self.path.parent.exists():
            self.path.parent.mkdir(parents=True, exist_ok=True)
        self.conn = sqlite3.connect(str(self.path), timeout=60)
        self.conn.row_factory = sqlite3.Row
        self.conn.execute("PRAGMA journal_mode=WAL")
        self.conn.executescript(SCHEMA)
        self._add_verdict_columns()
        self._add_profile_columns()
        self._add_dtype_key()
        # The measurement columns by name (their order differs in databases migrated from older schemas).
        self._columns = ", ".join(row["name"] for row in self.conn.execute("PRAGMA table_info(measurements)"))

    def _add_verdict_columns(self) -> None:
        """Databases written before verdicts were keys get the `verdict` column (empty for their old rows, which
        `keyed_row` reads through `migrate_reason`)."""
        for table in ("measurements", "kb_results"):
            names = {row["name"] for row in self.conn.execute(f"PRAGMA table_info({table})")}
            if "verdict" not in names:
                with self.conn:
                    self.conn.execute(f"ALTER TABLE {table} ADD COLUMN verdict TEXT")

    def _add_profile_columns(self) -> None:
        """Databases written before tolerance profiles: kb_results gets `profile` (the one that decided `verified`),
        `profiles` (JSON: each profile -> correct under it) and `tightest_tolerance`; before published sets and
        phase accounts, `claimed_speedup`, `phase_s` (JSON: seconds per worker phase) and `rounds_run`; before tasks
        were probed for trivial outputs, `task_verdicts` (JSON: profile -> why the task cannot tell right from
        trivial); before the record said what KernelBench's own check makes of the pair, `kernelbench_rule`; before
        the worker's notes were kept (an extension that did not build, ...), `notes`; before each side's spread was
        kept, `time_spread` (JSON); before the referee (kernelbench/referee.py), `referee_speedup`; empty for old
        rows."""
        names = {row["name"] for row in self.conn.execute("PRAGMA table_info(kb_results)")}
        for column, kind in (("profile", "TEXT"), ("profiles", "TEXT"), ("tightest_tolerance", "REAL"),
                             ("claimed_speedup", "REAL"), ("phase_s", "TEXT"), ("rounds_run", "INTEGER"),
                             ("task_verdicts", "TEXT"), ("kernelbench_rule", "INTEGER"), ("notes", "TEXT"),
                             ("time_spread", "TEXT"), ("referee_speedup", "REAL")):
            if column not in names:
                with self.conn:
                    self.conn.execute(f"ALTER TABLE kb_results ADD COLUMN {column} {kind}")

    def _add_dtype_key(self) -> None:
        """Databases written before problems had a dtype: their rows are fp16, and the table is rebuilt so that the
        dtype is part of a measurement's key (SQLite cannot change a primary key in place)."""
        names = [row["name"] for row in self.conn.execute("PRAGMA table_info(measurements)")]
        if "dtype" in names:
            return
        cols = ", ".join(names)
        with self.conn:
            self.conn.execute("ALTER TABLE measurements RENAME TO measurements_before_dtype")
            self.conn.executescript(SCHEMA)
            self.conn.execute(f"INSERT INTO measurements ({cols}, dtype) SELECT {cols}, 'fp16' "
                              f"FROM measurements_before_dtype")
            self.conn.execute("DROP TABLE measurements_before_dtype")

    def close(self):
        self.conn.close()

    def start_run(self, command: str, env: dict) -> int:
        with self.conn:
            cur = self.conn.execute("INSERT INTO runs (started, command, env) VALUES (?, ?, ?)",
                                    (time.time(), command, json.dumps(env)))
        assert cur.lastrowid is not None  # the INSERT above made a row
        return cur.lastrowid

    def latest_env(self, gpu: str) -> dict | None:
        """The environment recorded by the run of the newest measurement on this GPU (its database key, as
        `gpus()` lists them); None where nothing was measured on it."""
        row = self.conn.execute("SELECT runs.env FROM measurements JOIN runs USING (run_id) WHERE gpu = ? "
                                "ORDER BY measurements.created DESC LIMIT 1", (gpu,)).fetchone()
        return json.loads(row[0] or "{}") if row else None

    def gpus(self) -> list[str]:
        """The GPUs this database holds measurements of (their keys)."""
        return [r[0] for r in self.conn.execute("SELECT DISTINCT gpu FROM measurements ORDER BY gpu")]

    def update_run_env(self, run_id: int, env: dict) -> None:
        with self.conn:
            self.conn.execute("UPDATE runs SET env = ? WHERE run_id = ?", (json.dumps(env), run_id))

    def add(self, gpu: str, problem, cache: str, qps: float, records: list[dict], keys: dict[str, str],
            env: dict, run_id: int | None, supersede: bool = True) -> None:
        """Insert or replace the records of one problem, in one transaction; the earlier groups they measure again
        move to `superseded` whole. supersede=False: records that were not measured beside anything (a build
        failure's verdict), which leave the groups around them and any row already stored as they are (a compile
        that timed out on a loaded machine does not erase what the same source measured before)."""
        rows = []
        for r in records:
            rows.append((gpu, problem.m, problem.n, problem.k, problem.acc, problem.layout, r["mode"],
                         _cache_of(r["mode"], cache), _qps_of(r["mode"], qps), r["method"], keys.get(r["method"], ""),
                         r["time_us_median"], r["time_us_p10"], r["time_us_p90"], r["samples"], r["tflops"],
                         r["max_rel_err"], int(bool(r["verified"])), r["reason"], json.dumps(r.get("extra", {})),
                         json.dumps(env), run_id, time.time(), r.get("verdict"), _dtype(problem)))
        with self.conn:
            for mode in dict.fromkeys(r["mode"] for r in records) if supersede else ():
                self._supersede(gpu, problem, mode, _cache_of(mode, cache), _qps_of(mode, qps),
                                {(r["method"], keys.get(r["method"], "")) for r in records if r["mode"] == mode},
                                run_id)
            verb = "INSERT OR REPLACE" if supersede else "INSERT OR IGNORE"
            self.conn.executemany(f"{verb} INTO measurements VALUES ({','.join('?' * 25)})", rows)

    def _supersede(self, gpu: str, problem, mode: str, cache: str, qps: float, methods: set[tuple[str, str]],
                   run_id: int | None) -> None:
        """Move to `superseded` every row of the earlier runs (groups) of this shape and mode that `methods`
        measure again: also their other methods, whose partners are about to be replaced."""
        where = "gpu=? AND m=? AND n=? AND k=? AND acc=? AND layout=? AND dtype=? AND mode=? AND cache=? AND qps=?"
        shape = (gpu, problem.m, problem.n, problem.k, problem.acc, problem.layout, _dtype(problem), mode, cache, qps)
        stale = {row["run_id"] for row in self.conn.execute(
            f"SELECT method, method_key, run_id FROM measurements WHERE {where} AND run_id IS NOT ?", (*shape, run_id))
            if (row["method"], row["method_key"]) in methods}
        for old in stale:
            self.conn.execute(f"INSERT INTO superseded ({self._columns}, superseded_by, superseded_at) "
                              f"SELECT {self._columns}, "
                              f"?, ? FROM measurements WHERE {where} AND run_id IS ?",
                              (run_id, time.time(), *shape, old))
            self.conn.execute(f"DELETE FROM measurements WHERE {where} AND run_id IS ?", (*shape, old))

    def superseded(self, gpu: str | None = None) -> list[dict]:
        """The rows later runs replaced, oldest first, each with `superseded_by` (the run that measured again)."""
        query, args = "SELECT * FROM superseded", []
        if gpu is not None:
            query, args = query + " WHERE gpu = ?", [gpu]
        return [keyed_row(dict(row)) for row in self.conn.execute(query + " ORDER BY superseded_at", args)]

    def envs(self, gpu: str) -> dict[str, int]:
        """The environments the measurements stored for this GPU were taken in (JSON text -> rows)."""
        cur = self.conn.execute("SELECT env, COUNT(*) AS n FROM measurements WHERE gpu=? GROUP BY env", (gpu,))
        return {row["env"] or "{}": row["n"] for row in cur}

    def measured(self, gpu: str, problem, mode: str, cache: str, qps: float) -> set[tuple[str, str]]:
        """(method, method_key) pairs already stored for this problem and mode."""
        cur = self.conn.execute(
            "SELECT method, method_key FROM measurements WHERE gpu=? AND m=? AND n=? AND k=? AND acc=? AND layout=? "
            "AND dtype=? AND mode=? AND cache=? AND qps=?",
            (gpu, problem.m, problem.n, problem.k, problem.acc, problem.layout, _dtype(problem), mode,
             _cache_of(mode, cache), _qps_of(mode, qps)))
        return {(row["method"], row["method_key"]) for row in cur}

    def rows(self, gpu: str | None = None, problems=None, modes=None, cache: str = "hot", qps: float = 100.0,
             methods: dict[str, str] | None = None, superseded: bool = False) -> list[dict]:
        """Stored rows as dicts, filtered; `methods` maps method name → method_key to select versions. superseded:
        the rows later runs replaced too (each with its run_id: pair a row only with rows of its own run)."""
        tables = ["measurements", "superseded"] if superseded else ["measurements"]
        query = " UNION ALL ".join(f"SELECT {self._columns} FROM {t}" for t in tables)
        args: list = []
        if gpu is not None:
            query = f"SELECT * FROM ({query}) WHERE gpu = ?"
            args.append(gpu)
        out = []
        wanted = {(p.m, p.n, p.k, p.acc, p.layout, _dtype(p)) for p in problems} if problems is not None else None
        for row in self.conn.execute(query, args):
            row = dict(row)
            if wanted is not None and (row["m"], row["n"], row["k"], row["acc"], row["layout"],
                                       row["dtype"]) not in wanted:
                continue
            if modes is not None and row["mode"] not in modes:
                continue
            if row["cache"] != _cache_of(row["mode"], cache) or row["qps"] != _qps_of(row["mode"], qps):
                continue
            if methods is not None and methods.get(row["method"]) != row["method_key"]:
                continue
            row["extra"] = json.loads(row["extra"] or "{}")
            row["verified"] = bool(row["verified"])
            out.append(keyed_row(row))
        return out

    def add_kb(self, gpu: str, task_key: str, candidate_key: str, rows: list[dict], env: dict,
               run_id: int | None) -> None:
        """The rows of one KernelBench pair (one per baseline, or one with baseline "" when it was not timed), in
        one transaction. Keys hash the task's and the candidate's sources: an edited file is a new entry."""
        values = [(gpu, r.get("task") or "", task_key, r.get("candidate") or "", candidate_key,
                   r.get("baseline") or "", int(bool(r.get("verified"))), r.get("reason"), r.get("candidate_us"),
                   r.get("baseline_us"), r.get("speedup"), r.get("max_abs_err"), r.get("max_rel_err"),
                   r.get("baseline_reason"), r.get("static"), json.dumps(env), run_id, time.time(), r.get("verdict"),
                   r.get("profile"), json.dumps(r["profiles"]) if r.get("profiles") else None,
                   r.get("tightest_tolerance"), r.get("claimed_speedup"), r.get("phase_s"), r.get("rounds_run"),
                   json.dumps(r["task_verdicts"]) if r.get("task_verdicts") else None,
                   None if r.get("kernelbench_rule") is None else int(bool(r["kernelbench_rule"])), r.get("notes"),
                   r.get("time_spread"), r.get("referee_speedup"))
                  for r in rows]
        columns = ("gpu, task, task_key, candidate, candidate_key, baseline, verified, reason, candidate_us, "
                   "baseline_us, speedup, max_abs_err, max_rel_err, baseline_reason, static, env, run_id, created, "
                   "verdict, profile, profiles, tightest_tolerance, claimed_speedup, phase_s, rounds_run, "
                   "task_verdicts, kernelbench_rule, notes, time_spread, referee_speedup")
        with self.conn:
            self.conn.executemany(f"INSERT OR REPLACE INTO kb_results ({columns}) VALUES ({','.join('?' * 30)})",
                                  values)

    def kb_rows(self, gpu: str | None = None) -> list[dict]:
        query, args = "SELECT * FROM kb_results", []
        if gpu is not None:
            query, args = query + " WHERE gpu = ?", [gpu]
        return [keyed_row(dict(row, verified=bool(row["verified"]),
                               profiles=json.loads(row["profiles"]) if row["profiles"] else None,
                               task_verdicts=json.loads(row["task_verdicts"]) if row["task_verdicts"] else None,
                               kernelbench_rule=None if row["kernelbench_rule"] is None else
                               bool(row["kernelbench_rule"])))
                for row in self.conn.execute(query + " ORDER BY task, baseline", args)]

    def lt_algos(self, gpu: str, cublaslt: int | None = None) -> dict[str, dict]:
        query = "SELECT * FROM lt_algos WHERE gpu = ?"
        args: list[str | int] = [gpu]
        if cublaslt is not None:
            query += " AND cublaslt = ?"
            args.append(cublaslt)
        return {row["key"]: dict(row) for row in self.conn.execute(query, args)}

    def add_lt_algo(self, gpu: str, cublaslt: int, tuning: dict) -> None:
        with self.conn:
            self.conn.execute("INSERT OR REPLACE INTO lt_algos VALUES (?,?,?,?,?,?,?,?,?,?)",
                              (gpu, cublaslt, tuning["key"], tuning["algo"], tuning["algo_index"], tuning["time_ms"],
                               tuning["candidates"], tuning.get("valid"), tuning["search_s"], time.time()))


def keyed_row(row: dict) -> dict:
    """A stored row with its verdict key: rows written before keys were recorded (an empty `verdict` beside a
    failure's reason) get theirs from `migrate_reason`, the one reader of old reason text."""
    if not row.get("verified") and not row.get("verdict") and row.get("reason"):
        key = migrate_reason(row["reason"])
        row["verdict"] = key.value if key is not None else None
    return row


def _cache_of(mode: str, cache: str) -> str:
    """Only device mode has a cache setting; host-timed modes store '-' so settings that don't apply don't split
    rows."""
    return cache if mode == "device" else "-"


def _qps_of(mode: str, qps: float) -> float:
    return float(qps) if mode == "server" else 0.0


def _dtype(problem) -> str:
    return getattr(problem, "dtype", "fp16")

"""The population: every candidate an evolve run has seen, in SQLite, so a run resumes where the last stopped.

Candidates belong to a target (one HGEMM shape set, or one KernelBench task) and live on islands: each island
evolves from its own members, which keeps several lineages (tile shapes, pipelines, instruction families) alive
instead of letting the first good kernel take over. Every `migrate_every` generations an island's best member
joins the next island (a ring), carrying good ideas across. Seeds belong to no island and are visible to all.

Failures stay: they are the negative examples of later prompts, with their verdicts. Candidates are unique per
(target, source hash), so a model that repeats itself costs no second evaluation."""

from __future__ import annotations

import hashlib
import json
import re
import sqlite3
import time
from dataclasses import dataclass, field
from pathlib import Path

SCHEMA = """
CREATE TABLE IF NOT EXISTS evolve_candidates (
    id INTEGER PRIMARY KEY AUTOINCREMENT, target TEXT NOT NULL, name TEXT NOT NULL, sha TEXT NOT NULL,
    source TEXT NOT NULL, origin TEXT NOT NULL, parent INTEGER, inspirations TEXT, island INTEGER,
    generation INTEGER NOT NULL, status TEXT NOT NULL, category TEXT, verdict TEXT, score REAL, speedups TEXT,
    detail TEXT, resources TEXT, profile TEXT, analysis TEXT, model TEXT, created REAL, evaluated REAL,
    UNIQUE (target, sha), UNIQUE (target, name));
CREATE INDEX IF NOT EXISTS evolve_candidates_status ON evolve_candidates (target, status, category);
CREATE TABLE IF NOT EXISTS evolve_members (
    target TEXT NOT NULL, island INTEGER NOT NULL, candidate INTEGER NOT NULL, since INTEGER NOT NULL,
    PRIMARY KEY (target, island, candidate));
CREATE TABLE IF NOT EXISTS evolve_state (
    target TEXT NOT NULL, key TEXT NOT NULL, value TEXT, PRIMARY KEY (target, key));
"""


def source_sha(source: str) -> str:
    return hashlib.sha256(source.encode()).hexdigest()


def safe_name(text: str) -> str:
    return re.sub(r"[^0-9A-Za-z_]+", "_", text).strip("_")[:48] or "kernel"


@dataclass
class Candidate:
    id: int
    target: str
    name: str
    sha: str
    source: str
    origin: str  # seed, llm, repair, reply (a reply without usable code)
    parent: int | None
    inspirations: list[int]
    island: int | None  # None: a seed, shared by every island
    generation: int
    status: str  # pending (not evaluated yet) or done
    category: str | None  # see verdicts.CATEGORIES
    verdict: str | None  # the reason line shown to people and prompts
    score: float | None  # geomean speedup over the objective baseline
    speedups: dict = field(default_factory=dict)  # baseline → geomean speedup
    detail: dict = field(default_factory=dict)  # per shape (or task) times
    resources: dict = field(default_factory=dict)  # ptxas summary
    profile: dict = field(default_factory=dict)  # Nsight Compute summary
    analysis: str = ""
    model: str = ""
    key: str | None = None  # a failure's Verdict key (kernelrl/harness/verdicts.py); None when verified, or in a
    # population written before keys were recorded

    @property
    def ok(self) -> bool:
        return self.category == "ok" and self.score is not None

    @property
    def rank(self) -> tuple[float, int]:
        """The sort key of verified candidates (they have a score), best first: higher score, then earlier id."""
        assert self.score is not None, "only verified candidates are ranked"
        return -self.score, self.id


_JSON = ("inspirations", "speedups", "detail", "resources", "profile")


def _candidate(row: sqlite3.Row) -> Candidate:
    d = dict(row)
    for key in _JSON:
        d[key] = json.loads(d[key]) if d[key] else ([] if key == "inspirations" else {})
    d.pop("created", None)
    d.pop("evaluated", None)
    d["analysis"] = d["analysis"] or ""
    d["model"] = d["model"] or ""
    return Candidate(**d)


class Population:
    def __init__(self, path: str | Path):
        self.path = Path(path)
        self.path.parent.mkdir(parents=True, exist_ok=True)
        self.conn = sqlite3.connect(str(self.path), timeout=60)
        self.conn.row_factory = sqlite3.Row
        self.conn.execute("PRAGMA journal_mode=WAL")
        self.conn.executescript(SCHEMA)
        columns = {r[1] for r in self.conn.execute("PRAGMA table_info(evolve_candidates)")}
        if "key" not in columns:  # populations written before failures kept their Verdict key
            with self.conn:
                self.conn.execute("ALTER TABLE evolve_candidates ADD COLUMN key TEXT")

    def close(self) -> None:
        self.conn.close()

    # -- adding and recording ------------------------------------------------------------------------------------
    def add(self, target: str, source: str, origin: str, generation: int, island: int | None = None,
            parent: int | None = None, inspirations: list[int] | None = None, analysis: str = "", model: str = "",
            name: str | None = None) -> tuple[Candidate, bool]:
        """Insert a pending candidate; (candidate, True) when new, (the existing one, False) for a repeat."""
        sha = source_sha(source)
        existing = self.conn.execute("SELECT * FROM evolve_candidates WHERE target = ? AND sha = ?",
                                     (target, sha)).fetchone()
        if existing:
            return _candidate(existing), False
        name = name or f"evo_{sha[:12]}"
        taken = "SELECT 1 FROM evolve_candidates WHERE target = ? AND name = ?"
        if self.conn.execute(taken, (target, name)).fetchone():
            name = f"{name}_{sha[:6]}"
        with self.conn:
            cur = self.conn.execute(
                "INSERT INTO evolve_candidates (target, name, sha, source, origin, parent, inspirations, island, "
                "generation, status, analysis, model, created) VALUES (?,?,?,?,?,?,?,?,?,?,?,?,?)",
                (target, name, sha, source, origin, parent, json.dumps(inspirations or []), island, generation,
                 "pending", analysis, model, time.time()))
            if island is not None:
                self.conn.execute("INSERT OR IGNORE INTO evolve_members VALUES (?,?,?,?)",
                                  (target, island, cur.lastrowid, generation))
        assert cur.lastrowid is not None  # the INSERT above made a row
        return self.get(cur.lastrowid), True

    def record(self, cid: int, category: str, verdict: str | None, score: float | None = None,
               speedups: dict | None = None, detail: dict | None = None, resources: dict | None = None,
               key: str | None = None) -> Candidate:
        with self.conn:
            self.conn.execute(
                "UPDATE evolve_candidates SET status = 'done', category = ?, verdict = ?, score = ?, speedups = ?, "
                "detail = ?, resources = COALESCE(?, resources), evaluated = ?, key = ? WHERE id = ?",
                (category, verdict, score, json.dumps(speedups or {}), json.dumps(detail or {}),
                 json.dumps(resources) if resources else None, time.time(), key, cid))
        return self.get(cid)

    def set_profile(self, cid: int, profile: dict) -> None:
        with self.conn:
            self.conn.execute("UPDATE evolve_candidates SET profile = ? WHERE id = ?", (json.dumps(profile), cid))

    # -- reading -------------------------------------------------------------------------------------------------
    def get(self, cid: int) -> Candidate:
        return _candidate(self.conn.execute("SELECT * FROM evolve_candidates WHERE id = ?", (cid,)).fetchone())

    def all(self, target: str) -> list[Candidate]:
        return [_candidate(r) for r in self.conn.execute(
            "SELECT * FROM evolve_candidates WHERE target = ? ORDER BY id", (target,))]

    def pending(self, target: str) -> list[Candidate]:
        return [_candidate(r) for r in self.conn.execute(
            "SELECT * FROM evolve_candidates WHERE target = ? AND status = 'pending' ORDER BY id", (target,))]

    def members(self, target: str, island: int) -> list[Candidate]:
        """Evaluated candidates on an island (its own, migrants and the shared seeds), oldest first."""
        return [_candidate(r) for r in self.conn.execute(
            "SELECT c.* FROM evolve_candidates c WHERE c.target = ? AND c.status = 'done' AND (c.island IS NULL OR "
            "c.id IN (SELECT candidate FROM evolve_members WHERE target = ? AND island = ?)) ORDER BY c.id",
            (target, target, island))]

    def best(self, target: str, n: int | None = None) -> list[Candidate]:
        """Verified candidates, fastest first (ties: the older one)."""
        rows = self.conn.execute(
            "SELECT * FROM evolve_candidates WHERE target = ? AND category = 'ok' AND score IS NOT NULL "
            "ORDER BY score DESC, id" + (" LIMIT ?" if n is not None else ""),
            (target, n) if n is not None else (target,))
        return [_candidate(r) for r in rows]

    def counts(self, target: str) -> dict[str, int]:
        """Candidates per category ('pending' for those not evaluated yet)."""
        rows = self.conn.execute("SELECT COALESCE(category, 'pending') AS c, COUNT(*) AS n FROM evolve_candidates "
                                 "WHERE target = ? GROUP BY c", (target,))
        return {r["c"]: r["n"] for r in rows}

    # -- islands -------------------------------------------------------------------------------------------------
    def migrate(self, target: str, islands: int, generation: int) -> list[tuple[int, int, Candidate]]:
        """Each island's best verified member joins the next island (a ring), unless it is there already.
        Returns (from, to, candidate) for each move."""
        if islands < 2:
            return []
        bests = {}  # all chosen before any move, so a migrant does not stand in for its new island's own best
        for island in range(islands):
            ok = sorted((c for c in self.members(target, island) if c.ok and c.island is not None),
                        key=lambda c: c.rank)
            if ok:
                bests[island] = ok[0]
        moves = []
        for island, best in bests.items():
            dest = (island + 1) % islands
            with self.conn:
                cur = self.conn.execute("INSERT OR IGNORE INTO evolve_members VALUES (?,?,?,?)",
                                        (target, dest, best.id, generation))
            if cur.rowcount:
                moves.append((island, dest, best))
        return moves

    # -- run state -----------------------------------------------------------------------------------------------
    def state(self, target: str, key: str, default=None):
        row = self.conn.execute("SELECT value FROM evolve_state WHERE target = ? AND key = ?", (target, key)).fetchone()
        return json.loads(row["value"]) if row else default

    def set_state(self, target: str, key: str, value) -> None:
        with self.conn:
            self.conn.execute("INSERT OR REPLACE INTO evolve_state VALUES (?,?,?)", (target, key, json.dumps(value)))

    def generation(self, target: str) -> int:
        return int(self.state(target, "generation", 0))

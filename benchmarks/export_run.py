"""One run's rows of a results database as a bench CSV: what `kernelrl bench --csv` writes at its end, for a run
that did not reach it (a call cut short by its time limit). Superseded rows count too, so a run later runs measured
again is still whole. `kernelrl` rows are labelled by what the library's manifest dispatches each shape to (no
lib/ needed). No GPU needed.

    python benchmarks/export_run.py final.db --run 1 --library LIB --csv OUT.csv
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
from kernelrl.db import Database  # noqa: E402
from kernelrl.library.export import shape_key  # noqa: E402
from kernelrl.library.policy import LT_FALLBACKS, dispatch_label  # noqa: E402
from kernelrl.results import write_csv  # noqa: E402


def label(entry: dict | None) -> str:
    """What the library runs for a manifest entry, as the bench labels it."""
    if entry is None:
        return "not in the manifest"
    fallback = entry.get("fallback")
    stored_lt = isinstance(fallback, dict) and fallback.get("method") in LT_FALLBACKS.values()
    choice = entry["kernel"] if entry["dispatch"] == "kernel" else fallback["method"] if stored_lt else None
    return dispatch_label(choice, entry.get("layout", "nn"))


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("db")
    ap.add_argument("--run", type=int, required=True, help="the run's id (the runs table)")
    ap.add_argument("--library", help="the library folder whose manifest labels the kernelrl rows")
    ap.add_argument("--csv", required=True)
    args = ap.parse_args()
    db = Database(args.db)
    try:
        rows = [r for r in db.rows(superseded=True) if r["run_id"] == args.run]
        env = db.conn.execute("SELECT env FROM runs WHERE run_id = ?", (args.run,)).fetchone()
    finally:
        db.close()
    if not rows:
        sys.exit(f"{args.db}: run {args.run} has no rows; see its runs table for the ids")
    shapes = json.loads((Path(args.library) / "manifest.json").read_text())["shapes"] if args.library else {}
    for r in rows:
        if r["method"] == "kernelrl" and args.library:
            key = shape_key(r["m"], r["n"], r["k"], r["acc"], r.get("dtype", "fp16"), r.get("layout", "nn"))
            r["dispatch"] = label(shapes.get(key))
    write_csv(rows, args.csv)
    count = len({(r["m"], r["n"], r["k"]) for r in rows})
    print(f"{args.csv}: {len(rows)} rows, {count} shapes, run {args.run} ({json.loads(env[0] or '{}').get('date')})")


if __name__ == "__main__":
    main()

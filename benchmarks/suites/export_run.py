"""One run's rows of a results database as a bench CSV: what `kernelrl bench --csv` writes at its end, for a run
that did not reach it (a call cut short by its time limit). Superseded rows count too, so a run later runs measured
again is still whole. `kernelrl` rows are labelled by what the library's manifest dispatches each shape to (no
lib/ needed). No GPU needed.

    python benchmarks/suites/export_run.py final.db --run 1 --library LIB --csv OUT.csv
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))
from kernelrl.db import Database  # noqa: E402
from kernelrl.library import policy  # noqa: E402
from kernelrl.library.export import shape_key  # noqa: E402
from kernelrl.library.policy import dispatch_label  # noqa: E402
from kernelrl.results import write_csv  # noqa: E402


def labels(manifest: dict) -> dict[str, str]:
    """What the library runs for each manifest shape (keyed as the manifest keys them), as the bench labels it:
    `policy.route` over the manifest's tables, as the library ran with its lib/ whole (every kernel and the cuBLAS
    shim built: no lib/ needed here)."""
    table, lt_algos = policy.tables(manifest, shim=True)
    return {name: dispatch_label(policy.route(policy.key(e["m"], e["n"], e["k"], e["acc"], e.get("dtype", "fp16"),
                                                         e.get("layout", "nn")), table, lt_algos).name,
                                 e.get("layout", "nn"))
            for name, e in manifest.get("shapes", {}).items()}


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
    runs = labels(json.loads((Path(args.library) / "manifest.json").read_text())) if args.library else {}
    for r in rows:
        if r["method"] == "kernelrl" and args.library:
            key = shape_key(r["m"], r["n"], r["k"], r["acc"], r.get("dtype", "fp16"), r.get("layout", "nn"))
            r["dispatch"] = runs.get(key, "not in the manifest")
    write_csv(rows, args.csv)
    count = len({(r["m"], r["n"], r["k"]) for r in rows})
    print(f"{args.csv}: {len(rows)} rows, {count} shapes, run {args.run} ({json.loads(env[0] or '{}').get('date')})")


if __name__ == "__main__":
    main()

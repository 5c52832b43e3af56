"""The `kernelrl` command: `main` builds the argparse tree (parser.py), runs the subcommand and turns every error the
user can fix (kernelrl.errors.UserError) into one line and exit code 2, in one place.

One module per command group: hgemm.py (bench, eval, record, tune, library), report.py (summarize, report),
kernelbench.py (kb), evolve.py, train.py, doctor.py; ui.py holds the consoles and the bench job's progress. The
groups that load torch (hgemm, evolve, train, doctor) are imported only when their command runs, so `kernelrl --help`
and the torch-free commands start without it."""

from __future__ import annotations

import sys

from kernelrl.cli import doctor, kernelbench, report
from kernelrl.cli.parser import build_parser
from kernelrl.cli.ui import err_console
from kernelrl.errors import UserError

__all__ = ["build_parser", "main"]


def main(argv: list[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    try:
        return _run(args)
    except KeyboardInterrupt:
        err_console.print("interrupted: everything measured so far is in the database; run again to resume")
        return 130
    except UserError as exc:  # every failure the user can fix is one clear line
        print(f"kernelrl: {exc}", file=sys.stderr)  # plain: one line, no markup, no wrapping
        return 2


def _run(args) -> int:
    if args.command in ("bench", "eval", "record", "tune", "library"):
        from kernelrl.cli import hgemm  # loads torch (kernelrl.jobs.measure, kernelrl.tune, kernelrl.library)
        return {"bench": hgemm.cmd_bench, "eval": hgemm.cmd_bench, "record": hgemm.cmd_record,
                "tune": hgemm.cmd_tune, "library": hgemm.cmd_library}[args.command](args)
    if args.command == "evolve":
        from kernelrl.cli import evolve  # loads torch (kernelrl.evolve.session, through kernelrl.jobs.measure)
        return evolve.cmd_evolve(args)
    if args.command == "train":
        from kernelrl.cli import train  # loads torch (kernelrl.train.config, pipeline, heldout)
        return train.cmd_train(args)
    if args.command == "doctor":  # loads torch only when it runs (the torch and GPU rows)
        return doctor.cmd_doctor(args)
    if args.command == "summarize":
        return report.cmd_summarize(args)
    if args.command == "report":
        return report.cmd_report(args)
    if args.command == "kb":
        return kernelbench.cmd_kb(args)
    return 0

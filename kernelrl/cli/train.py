"""`kernelrl train` (SFT, self-supervised rounds, GRPO) and `kernelrl train eval` (held-out evaluation). Loading this
module loads torch (kernelrl.train.config, pipeline, heldout): the CLI imports it only to run one of these."""

from __future__ import annotations

import sys

from kernelrl.cli.ui import console
from kernelrl.errors import UserError
from kernelrl.train.config import TrainError, load_config
from kernelrl.train.heldout import report_heldout, run_heldout, table_lines
from kernelrl.train.pipeline import train


def cmd_train(args) -> int:
    if getattr(args, "train_command", None) == "eval":
        return _train_eval(args)
    if not args.config:
        raise UserError("train: --config FILE is required (or run `kernelrl train eval ...`)")
    try:
        summary = train(load_config(args.config), quiet=args.quiet,
                        say=lambda text: console.print(text, markup=False, highlight=False))
    except TrainError as exc:
        print(f"kernelrl: {exc}", file=sys.stderr)
        return 2
    console.print(f"{summary['stopped']}: {len(summary['done'])} of {len(summary['phases'])} phases done; model "
                  f"{summary['model']}; metrics {summary['metrics']}", markup=False, highlight=False)
    return 0


def _train_eval(args) -> int:
    say = lambda text: console.print(text, markup=False, highlight=False)  # noqa: E731
    summary = (report_heldout if args.report else run_heldout)(args, say=say)
    print("\n".join(table_lines(summary)))  # plain: a markdown table, unwrapped
    say(f"wrote heldout.csv, best.csv, summary.json, summary.md in {args.out}")
    return 0

"""`kernelrl evolve`: the LLM proposer (kernelrl.evolve.session), with its client's and profiler's errors as one line.
Loading this module loads torch (the session measures through kernelrl.jobs.measure): the CLI imports it only to run
the command."""

from __future__ import annotations

import sys

from kernelrl.cli.ui import console
from kernelrl.evolve.client import LLMError
from kernelrl.evolve.profile import ProfileError
from kernelrl.evolve.session import run_command


def cmd_evolve(args) -> int:
    try:
        return run_command(args, console)
    except (LLMError, ProfileError) as exc:
        print(f"kernelrl: {exc}", file=sys.stderr)  # one plain line, as main prints the evaluator's errors
        return 2

"""`python -m benchmarks --list` | `python -m benchmarks SUITE [--out DIR] [--gpu KEY] [--steps A,B] [options]`."""

import sys

from benchmarks.catalog import SUITES
from benchmarks.runner import main

sys.exit(main(SUITES))

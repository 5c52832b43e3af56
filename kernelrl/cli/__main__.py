"""`python -m kernelrl.cli ...`, as the `kernelrl` console script."""

import sys

from kernelrl.cli import main

sys.exit(main())

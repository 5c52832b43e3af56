#!/usr/bin/env bash
# The next GPU session's first call (from the repository root on the H200): the families' GPU tests, then a small
# tuning run. CUTLASS headers must travel as a wheel: here, once,
#   echo /.whl/ >> .git/info/exclude
#   python3 -m pip download --no-deps --only-binary=:all: --python-version 3.12 -d .whl nvidia-cutlass==4.2.0.0
# and name .whl in the run's carry list.
set -euo pipefail
source benchmarks/device_env.sh
if ls .whl/nvidia_cutlass-*.whl >/dev/null 2>&1; then
    python3 -m pip install -q --no-index --no-deps --no-compile --target /tmp/site .whl/nvidia_cutlass-*.whl
    export PYTHONPATH="/tmp/site:$PYTHONPATH"
fi
python3 -m pytest -q -x tests/gpu/test_spaces.py tests/gpu/test_library.py
kernelrl tune --shapes sample:20:0 --out "${OUT:-/tmp}/lib" --budget-minutes 5 --db "${OUT:-/tmp}/tune.db"

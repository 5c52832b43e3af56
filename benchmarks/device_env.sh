# Source on the GPU machine: use the tree in place (no install needed; rich, numpy, torch are there).
export PYTHONPATH="$PWD${PYTHONPATH:+:$PYTHONPATH}" PYTHONUNBUFFERED=1
export KERNELRL_CACHE="${KERNELRL_CACHE:-$PWD/.krcache}"
kernelrl() { python3 -m kernelrl.cli "$@"; }

#!/usr/bin/env bash
# Everything the GPU machine lacks, fetched here once per session (ignored files do not survive between sessions),
# into .whl/ (name it in a run's carry list). 14 MB in all (measured):
#   nvidia-cutlass (CUTLASS/CuTe headers for the cutlass_sm90 family), ninja (torch's load_inline for KernelBench
#   candidates), openai and its dependencies (kernelrl evolve), trl, datasets, dill, multiprocess (kernelrl train).
# Ray, too big for one wheel in a carry, has its own: benchmarks/device/pack_ray.sh (.carry/ray-py3.12.tar.xz).
set -euo pipefail
PY="${PY:-3.12}"
mkdir -p .whl
grep -qx '/.whl/' .git/info/exclude 2>/dev/null || echo '/.whl/' >> .git/info/exclude
dl() { python3 -m pip download -q --only-binary=:all: --python-version "$PY" --implementation cp \
       --platform manylinux_2_28_x86_64 --platform manylinux_2_17_x86_64 --platform manylinux2014_x86_64 \
       --platform any -d .whl "$@"; }
dl --no-deps nvidia-cutlass==4.2.0.0 ninja
dl --no-deps trl==1.16.0 datasets==5.2.0 dill==0.4.1 multiprocess==0.70.19
dl openai
du -sh .whl && ls .whl

#!/usr/bin/env bash
# The CuTe DSL (nvidia-cutlass-dsl, for KernelBench's CuTe few-shot example, issue 28) for the GPU machine, which has
# no internet. Its CUDA 13 library wheel is 92 MB (deflate) and 63.5 MB as tar.xz of its unpacked tree, where a call
# sends at most 64 MiB with the tracked tree (38 MB on 2026-12-07): the bundle (that tree and the small wheels, for
# Python 3.12) is cut into parts of PART_MB (default 26), each carried by its own call on one warm machine
# (benchmarks/device/env.sh, carry_cute_dsl; next.sh call 8):
#   calls 1..N-1: carry [".carry/cute_dsl_K"]  -> the part is kept in the repository's ignored .cutedsl/
#   call N:       carry [".carry/cute_dsl_N", ...] -> every part there: joined, checked, the wheel remade, installed
# xz takes about 3.5 minutes on this machine's 2 cores.
set -euo pipefail
VERSION="${VERSION:-4.8.1}"
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
python3 -m pip download -q --only-binary=:all: --python-version 3.12 --implementation cp \
  --platform manylinux_2_28_x86_64 --platform manylinux_2_24_x86_64 --platform any --no-deps -d "$work/whl" \
  "nvidia-cutlass-dsl==$VERSION" "nvidia-cutlass-dsl-libs-base==$VERSION" "nvidia-cutlass-dsl-libs-core==$VERSION" \
  "nvidia-cutlass-dsl-libs-cu13==$VERSION" cuda-bindings cuda-pathfinder
libs=$(ls "$work"/whl/nvidia_cutlass_dsl_libs_cu13-*.whl)
mkdir -p "$work/bundle/libs_tree" && (cd "$work/bundle/libs_tree" && unzip -q "$libs")
basename "$libs" > "$work/bundle/libs_wheel_name"
mv "$work"/whl/*.whl "$work/bundle/" && rm "$work/bundle/$(basename "$libs")"
tar -C "$work/bundle" -cf - . | xz -9e -T2 > "$work/bundle.tar.xz"
rm -rf .carry/cute_dsl_*
split -b "${PART_MB:-26}M" -d -a 1 "$work/bundle.tar.xz" "$work/part_"
parts=$(ls "$work"/part_* | wc -l)
k=0
for part in "$work"/part_*; do
  k=$((k + 1)); mkdir -p ".carry/cute_dsl_$k"; mv "$part" ".carry/cute_dsl_$k/part"
  echo "$parts" > ".carry/cute_dsl_$k/count"
  sha256sum "$work/bundle.tar.xz" | cut -d' ' -f1 > ".carry/cute_dsl_$k/sha256"
done
du -sh .carry/cute_dsl_*

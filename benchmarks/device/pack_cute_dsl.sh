#!/usr/bin/env bash
# The CuTe DSL (nvidia-cutlass-dsl, for KernelBench's CuTe few-shot example, issue 28) for the GPU machine, which has
# no internet. Its CUDA 13 library wheel is 92 MB (deflate) and 63.5 MB as tar.xz of its unpacked tree: above one
# call's 64 MiB carry beside anything else, so the bundle (that tree and the small wheels, for Python 3.12) is split
# in two halves, carried by two calls on one warm machine (benchmarks/device/env.sh, carry_cute_dsl):
#   call A: carry [".carry/cute_dsl_a", ...]  -> the half is kept in the repository's ignored .cutedsl/
#   call B: carry [".carry/cute_dsl_b", ...]  -> both halves there: joined, the wheel remade, installed
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
rm -rf .carry/cute_dsl_a .carry/cute_dsl_b && mkdir -p .carry/cute_dsl_a .carry/cute_dsl_b
size=$(stat -c %s "$work/bundle.tar.xz")
head -c $((size / 2)) "$work/bundle.tar.xz" > .carry/cute_dsl_a/part
tail -c +$((size / 2 + 1)) "$work/bundle.tar.xz" > .carry/cute_dsl_b/part
sha256sum "$work/bundle.tar.xz" | cut -d' ' -f1 | tee .carry/cute_dsl_a/sha256 > .carry/cute_dsl_b/sha256
du -sh .carry/cute_dsl_a .carry/cute_dsl_b

#!/usr/bin/env bash
# Ray for the GPU machine, which has no internet and takes at most 64 MiB per call: Ray's wheel is ~72 MB, but its
# core without the Java jars and the libraries kernelrl does not use (rllib, tune, data, serve, train, llm) packs,
# with the dependencies a torch image may lack, to ~21 MB of tar.xz (ray 2.52.0, measured). Run here (with PyPI),
# then name .carry in the run's carry list and, on the GPU machine:
#   mkdir -p /tmp/site && tar -xJf .carry/ray-py3.12.tar.xz -C /tmp/site && export PYTHONPATH=/tmp/site:$PYTHONPATH
# RAY_VERSION and PY (the GPU machine's Python, 3.12 today) can be set.
set -euo pipefail
RAY_VERSION="${RAY_VERSION:-2.52.0}"; PY="${PY:-3.12}"
work="$(mktemp -d)"; trap 'rm -rf "$work"' EXIT
dl() { python3 -m pip download -q --no-deps --only-binary=:all: --python-version "$PY" \
       --platform manylinux2014_x86_64 --platform manylinux_2_17_x86_64 --platform any -d "$work/wheels" "$@"; }
dl "ray==$RAY_VERSION"
# Ray's own requirements that a torch image may lack (pure Python or small binaries).
dl click filelock jsonschema jsonschema-specifications referencing rpds-py attrs msgpack protobuf pyyaml
mkdir -p "$work/site"
# zipfile drops file modes: restore them from each entry (Ray's gcs_server and raylet must stay executable)
for w in "$work"/wheels/*.whl; do python3 - "$w" "$work/site" <<'PY'
import os, sys, zipfile
z = zipfile.ZipFile(sys.argv[1])
for info in z.infolist():
    path = z.extract(info, sys.argv[2])
    mode = info.external_attr >> 16
    if mode and not info.is_dir():
        os.chmod(path, mode & 0o777)
PY
done
rm -rf "$work"/site/ray/{jars,rllib,tune,data,serve,train,llm}
mkdir -p .carry
tar -cf - -C "$work/site" . | xz -T0 -9 > ".carry/ray-py$PY.tar.xz"
ls -la ".carry/ray-py$PY.tar.xz"

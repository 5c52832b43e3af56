"""Build the CUDA-L2 wrappers a GPU run will need on this machine (no GPU, no CUDA torch: files that use only
their tensors' sizes, pointers and dtype are built against kernelrl's stand-in torch header), into a build cache the
GPU machine then reads. A wrapper takes one to six minutes of one core (CuTe templates), which the GPU machine
would otherwise spend of its device time (benchmarks/results/h200/cuda_l2/build_attempt/).

    python benchmarks/suites/cuda_l2_prebuild.py FOLDER CACHE [--untimed-padding] [--jobs N]
    tar -cJf .carry/cuda_l2_cache.tar.xz -C CACHE .      # then carry it; benchmarks/device/cuda_l2.sh unpacks it

FOLDER is where the files are on the GPU machine too (e.g. .carry/cuda_l2): a wrapper #includes its file by
absolute path, so the build is found again only at the same place. Files that need torch's own headers are left
for the GPU machine (listed at the end)."""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))
from kernelrl.adapters import cuda_l2  # noqa: E402
from kernelrl.build.builder import LocalBuilder  # noqa: E402
from kernelrl.build.toolchain import Toolchain  # noqa: E402
from kernelrl.jobs.measure import BenchConfig, candidate_request  # noqa: E402


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("folder", type=Path)
    ap.add_argument("cache", type=Path)
    ap.add_argument("--untimed-padding", action="store_true", help="the wrappers of `--untimed-padding` runs")
    ap.add_argument("--jobs", type=int, default=None)
    ap.add_argument("--arch", default="sm_90a")
    args = ap.parse_args()
    cfg = BenchConfig(problems=[], modes=["device"], cuda_l2_untimed_padding=args.untimed_padding)
    requests, left = [], []
    for path in sorted(args.folder.resolve().glob("*.cu")):
        request, adapted = candidate_request(path.stem, str(path), cfg)  # exactly what kernelrl bench builds
        if adapted and request.include_dirs == (str(cuda_l2.SHIM_DIR),):
            requests.append(request)
        else:
            left.append(path.name)
    builder = LocalBuilder(Toolchain.discover(arch=args.arch), cache_dir=args.cache / "build")
    started = time.perf_counter()

    def done(result):
        print(f"{time.perf_counter() - started:7.0f} s  {result.name}: "
              f"{'cached' if result.cached else 'built' if result.ok else 'FAILED ' + (result.error or '')[:200]}",
              flush=True)
    results = builder.build_many(requests, workers=args.jobs, on_done=done)
    failed = [r.name for r in results if not r.ok]
    print(f"{len(results) - len(failed)} of {len(requests)} wrappers in {args.cache / 'build'}; failed: "
          f"{', '.join(failed) or 'none'}; left for the GPU machine (torch's headers): {', '.join(left) or 'none'}")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())

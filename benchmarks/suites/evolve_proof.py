"""Issue 5's proof run: `kernelrl evolve` against a scripted model that replays real kernels, on the GPU.

The "model" is tests/evolve_fake_server.py on loopback. Its replies, in order: the WMMA reference, a side-stream
cheat, a kernel that caches by pointer, the tuner's mma_sync and small-family kernels (rendered from the spaces),
code that does not compile, then the repaired version. The population should improve call by call while the
cheats are rejected for their reasons and the broken reply is repaired once.

    python benchmarks/suites/evolve_proof.py OUT_DIR [--runner dummy]   # dummy: a CPU dry run of the same script

The GPU machine has no `openai` package: carry it with its dependencies (git-ignored .whl, in the carry list),
    python3 -m pip download --only-binary=:all: --python-version 3.12 --platform manylinux2014_x86_64 -d .whl openai
and there, before running this:
    python3 -m pip install -q --no-index --find-links .whl --target /tmp/site openai
    export PYTHONPATH=/tmp/site:$PYTHONPATH"""

import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT))

from kernelrl.cli import main  # noqa: E402
from kernelrl.space import SPACES, Variant  # noqa: E402
from tests.evolve_fake_server import (BROKEN, CACHES_BY_POINTER, CHEAT, FIXED, GOOD, FakeServer, answer,  # noqa: E402
                                      reply)

SHAPES = "64x64x64,256x256x2048,1024x1024x1024"


def rendered(family: str, **params) -> str:
    return SPACES[family].render(Variant.of(family, "fp32", **params))


MMA = rendered("mma_sync", BM=64, BN=64, BK=64, WM=32, WN=32, stages=4, frag_double_buffer=0, swizzle=1,
               split_k=1, epilogue="direct")
SMALL = rendered("small", BM=32, BN=128, BK=64, WM=16, WN=64, stages=4, frag_double_buffer=0, swizzle=1,
                 split_k=1, cluster_k=8, epilogue="direct")
SCRIPT = [reply(answer(GOOD, analysis="Start from the WMMA reference.")),
          reply(answer(CHEAT, analysis="Run the work on a private stream.")),
          reply(answer(CACHES_BY_POINTER, analysis="Skip work when the inputs did not move.")),
          reply(answer(MMA, analysis="ldmatrix + mma.sync with a 4-stage cp.async ring beats WMMA.")),
          reply(answer(SMALL, analysis="Small outputs leave SMs idle: split K over a cluster, reduce in DSMEM.")),
          reply(answer(BROKEN, analysis="Try a variant.")),
          reply(answer(FIXED, analysis="Close the extern block."))]

if __name__ == "__main__":
    out = Path(sys.argv[1] if len(sys.argv) > 1 else "/tmp/evolve_proof")
    out.mkdir(parents=True, exist_ok=True)
    extra = sys.argv[2:]
    with FakeServer(SCRIPT) as server:
        code = main(["evolve", "--shapes", SHAPES, "--base-url", server.url, "--budget-calls", str(len(SCRIPT)),
                     "--islands", "1", "--concurrency", "1", "--db", str(out / "evolve.db"),
                     "--usage-log", str(out / "usage.jsonl"), "--export", str(out / "best"), "--rng-seed", "0",
                     *extra])
    sys.exit(code)

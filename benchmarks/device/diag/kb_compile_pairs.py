"""The GPU suite's honest torch.compile candidates (tests/gpu/kb_honest/compiled_*.py) through the real worker,
with the suite's settings, one line per pair: whether a confined worker compiles them (sandbox.compile_in_process)."""

from pathlib import Path

from kernelrl.examples import TASKS_DIR
from kernelrl.kernelbench.worker import KBSettings, pair_verdict, run_pairs
from tests.gpu.kb_adversarial import meta

if __name__ == "__main__":
    honest = sorted((Path(__file__).resolve().parents[3] / "tests" / "gpu" / "kb_honest").glob("compiled_*.py"))
    pairs = [(str(TASKS_DIR / f"{meta(p)['task']}.py"), str(p)) for p in honest]
    settings = KBSettings(device="cuda", baselines=("eager",), rounds=5, hang_timeout_s=180.0, own_kernels=True)
    out = run_pairs(pairs, settings)
    for i, (_, cand) in enumerate(pairs):
        print(Path(cand).stem, *pair_verdict(out[i]))

"""KernelBench pairs spread over a Ray cluster (one actor per GPU; here a local cluster's CPUs with the CPU
worker): every pair gets the verdict it gets in one process."""

import pytest

from kernelrl.kernelbench.worker import KBSettings, pair_verdict, run_pairs
from tests.kb_helpers import pairs_in, task

ray = pytest.importorskip("ray")

BODIES = {"honest": "torch.tanh(x)", "wrong": "torch.tanh(x) + 1.0", "honest_too": "torch.tanh(x.clone())",
          "inplace": "x.tanh_()"}


def test_pairs_over_ray_get_the_verdicts_of_one_process(tmp_path, local_cluster):
    pairs = pairs_in(tmp_path, task(rows=16, cols=8), BODIES)
    settings = KBSettings(device="cpu", baselines=("eager",), rounds=2, calls_per_round=2)
    spread = run_pairs(pairs, settings, ray_address="local", ray_workers=2)
    alone = run_pairs(pairs, settings)
    verdicts = {name: pair_verdict(spread[i]) for i, name in enumerate(BODIES)}
    assert verdicts["honest"] == (True, None) and verdicts["honest_too"] == (True, None)
    assert verdicts["wrong"][1].startswith("wrong values") and verdicts["inplace"][1] == "returned an input"
    assert [pair_verdict(spread[i])[0] for i in range(len(pairs))] == [pair_verdict(alone[i])[0]
                                                                     for i in range(len(pairs))]

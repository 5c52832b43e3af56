"""KernelBench pairs spread over a Ray cluster (one actor per GPU; here a local cluster's CPUs with the CPU
worker): every pair gets the verdict it gets in one process."""

import pytest

from kernelrl.kernelbench.worker import KBSettings, pair_verdict, run_pairs

ray = pytest.importorskip("ray")

TASK = '''import torch
import torch.nn as nn

class Model(nn.Module):
    def forward(self, x):
        return torch.tanh(x)

def get_inputs():
    return [torch.randn(16, 8)]

def get_init_inputs():
    return []
'''

CANDIDATE = '''import torch
import torch.nn as nn

class ModelNew(nn.Module):
    def forward(self, x):
        return {body}
'''

BODIES = {"honest": "torch.tanh(x)", "wrong": "torch.tanh(x) + 1.0", "honest_too": "torch.tanh(x.clone())",
          "inplace": "x.tanh_()"}


@pytest.fixture(scope="module")
def local_cluster():
    ray.init(num_cpus=2, include_dashboard=False, log_to_driver=False)
    yield
    ray.shutdown()


def test_pairs_over_ray_get_the_verdicts_of_one_process(tmp_path, local_cluster):
    (tmp_path / "task.py").write_text(TASK)
    pairs = []
    for name, body in BODIES.items():
        (tmp_path / f"{name}.py").write_text(CANDIDATE.format(body=body))
        pairs.append((str(tmp_path / "task.py"), str(tmp_path / f"{name}.py")))
    settings = KBSettings(device="cpu", baselines=("eager",), rounds=2, calls_per_round=2)
    spread = run_pairs(pairs, settings, ray_address="local", ray_workers=2)
    alone = run_pairs(pairs, settings)
    verdicts = {name: pair_verdict(spread[i]) for i, name in enumerate(BODIES)}
    assert verdicts["honest"] == (True, None) and verdicts["honest_too"] == (True, None)
    assert verdicts["wrong"][1].startswith("wrong values") and verdicts["inplace"][1] == "returned an input"
    assert [pair_verdict(spread[i])[0] for i in range(len(pairs))] == [pair_verdict(alone[i])[0]
                                                                     for i in range(len(pairs))]

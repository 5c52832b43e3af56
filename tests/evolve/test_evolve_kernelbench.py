"""The evolve loop on a KernelBench-format task, on the CPU: honest ModelNew files are verified and timed by the
KernelBench worker (spawned), a cheat is rejected by the static layer, a syntax error gets its repair turn."""

import pytest

from kernelrl.evolve.budget import Budget
from kernelrl.evolve.client import LLMClient, LLMConfig
from kernelrl.evolve.export import export_best
from kernelrl.evolve.kb_target import KernelBenchTarget
from kernelrl.evolve.loop import EvolveConfig, Evolver
from kernelrl.evolve.population import Population
from kernelrl.evolve.usage import UsageLog
from tests.evolve_fake_server import FakeServer, answer, reply

TASK = '''import torch
import torch.nn as nn


class Model(nn.Module):
    def __init__(self, n):
        super().__init__()
        self.fc = nn.Linear(n, n)

    def forward(self, x):
        return torch.relu(self.fc(x))


def get_inputs():
    return [torch.randn(8, 16)]


def get_init_inputs():
    return [16]
'''
HEAD = '''import torch
import torch.nn as nn


class ModelNew(nn.Module):
    def __init__(self, n):
        super().__init__()
        self.fc = nn.Linear(n, n)

    def forward(self, x):
'''
HONEST = HEAD + "        return torch.addmm(self.fc.bias, x, self.fc.weight.t()).clamp_min(0)\n"
HONEST_2 = HEAD + "        return torch.nn.functional.linear(x, self.fc.weight, self.fc.bias).clamp_min(0)\n"
CHEAT = "import threading\n" + HONEST
SYNTAX = HEAD + "        return torch.relu(self.fc(x)\n"


@pytest.fixture(scope="module")
def run(tmp_path_factory):
    tmp = tmp_path_factory.mktemp("kb")
    (tmp / "tasks").mkdir()
    task_path = tmp / "tasks" / "1_LinearReLU.py"
    task_path.write_text(TASK)
    script = [reply(answer(HONEST, "python")), reply(answer(CHEAT, "python")), reply(answer(SYNTAX, "python")),
              reply(answer(HONEST_2, "python"))]
    target = KernelBenchTarget(task_path, tmp / "work", device="cpu", rounds=1)
    budget = Budget(max_calls=4)
    usage = UsageLog(tmp / "usage.jsonl")
    with FakeServer(script) as server:
        client = LLMClient(LLMConfig(base_url=server.url, model="m", concurrency=1), budget, usage)
        evolver = Evolver([target], Population(tmp / "e.db"), client, "- GPU: none (CPU dry run)",
                          EvolveConfig(islands=1, rng_seed=0), budget, usage=usage)
        summary = evolver.run()
    return {"target": target, "pop": evolver.pop, "summary": summary, "server": server, "tmp": tmp,
            "by_source": {c.source: c for c in evolver.pop.all(target.key)}}


def test_an_honest_module_is_verified_with_a_speedup_over_eager(run):
    c = run["by_source"][HONEST]
    assert c.category == "ok" and c.score > 0 and set(c.speedups) == {"eager"}


def test_a_cheat_is_rejected_by_the_static_layer(run):
    c = run["by_source"][CHEAT]
    assert c.category == "rejected" and c.verdict.startswith("static checks: threads")


def test_a_syntax_error_is_repaired_in_a_second_turn(run):
    broken, fixed = run["by_source"][SYNTAX], run["by_source"][HONEST_2]
    assert broken.category == "compile" and broken.verdict.startswith("syntax: does not parse")
    assert fixed.origin == "repair" and fixed.parent == broken.id and fixed.category == "ok"


def test_the_prompt_carries_the_task_source(run):
    assert "def get_inputs():" in run["server"].requests[0]["messages"][1]["content"]


def test_the_best_exports_under_the_tasks_name_for_kb_eval(run):
    paths = export_best(run["pop"], run["target"], run["tmp"] / "out", top=2)
    assert [p.name for p in paths][0] == "1_LinearReLU.py" and paths[0].read_text().startswith("# kernelrl evolve:")


def test_the_command_evaluates_a_seed_for_a_task_and_exports_it(tmp_path, capsys, monkeypatch):
    from kernelrl.cli import main
    monkeypatch.setenv("KERNELRL_CACHE", str(tmp_path / "cache"))
    (tmp_path / "tasks").mkdir()
    (tmp_path / "tasks" / "1_LinearReLU.py").write_text(TASK)
    seed = tmp_path / "1_LinearReLU.py"
    seed.write_text(HONEST)
    code = main(["evolve", "--tasks", str(tmp_path / "tasks"), "--kb-device", "cpu", "--rounds", "1",
                 "--budget-calls", "0", "--seed", str(seed), "--db", str(tmp_path / "e.db"),
                 "--export", str(tmp_path / "out")])
    assert code == 0 and (tmp_path / "out" / "1_LinearReLU.py").read_text().endswith(HONEST)
    assert "1 ok" in capsys.readouterr().out

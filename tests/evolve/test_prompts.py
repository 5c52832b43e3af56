"""The prompt builder: the task contract, the hardware, earlier candidates with their measurements, failures with
their verdicts, analysis asked for before code; templates shipped as package files."""

from importlib import resources
from pathlib import Path

import pytest

from kernelrl.evolve.hardware import detect
from kernelrl.evolve.hgemm_target import HgemmTarget
from kernelrl.evolve.kb_target import KernelBenchTarget
from kernelrl.evolve.population import Population
from kernelrl.evolve.prompts import PromptBuilder, compiler_errors
from kernelrl.workloads.hgemm import parse_shapes
from tests.evolve_fake_server import CHEAT, GOOD

ROOT = Path(__file__).resolve().parents[2]
TASK = ROOT / "examples" / "kernelbench" / "tasks" / "1_Matmul.py"


@pytest.fixture
def target(tmp_path):
    return HgemmTarget(parse_shapes("4096x4096x4096,64x64x64"), tmp_path / "e.db", ["torch", "cublas_tn"],
                       runner="dummy")


@pytest.fixture
def pop(tmp_path):
    p = Population(tmp_path / "e.db")
    yield p
    p.close()


def add_ok(pop, target, source, score, resources=None, profile=None):
    c, _ = pop.add(target.key, source, "llm", 2, island=0)
    detail = {"4096x4096x4096": {"us": 800.0, "baselines": {"torch": 800.0 * score, "cublas_tn": 700.0}}}
    c = pop.record(c.id, "ok", None, score, {"torch": score, "cublas_tn": 0.875}, detail, resources)
    if profile:
        pop.set_profile(c.id, profile)
    return pop.get(c.id)


def add_failed(pop, target, source, category, verdict):
    c, _ = pop.add(target.key, source, "llm", 2, island=0)
    return pop.record(c.id, category, verdict)


@pytest.fixture
def prompt(target, pop):
    parent = add_ok(pop, target, GOOD, 1.25, {"registers": 128, "smem_bytes": 37888, "spill_bytes": 0, "kernels": 1},
                    {"shape": "4096x4096x4096", "kernels": 1, "time_us": 812.0,
                     "metrics": {"lts__t_sector_hit_rate.pct": 78.4}, "stalls": {"long_scoreboard": 3.4}})
    slower = add_ok(pop, target, GOOD.replace("BK = 32", "BK = 16"), 0.8)
    cheat = add_failed(pop, target, CHEAT, "rejected", "static screen: cuda-stream (line 250: cudaStreamCreate)")
    messages = PromptBuilder(target, detect("NVIDIA H200").describe()).propose(parent, [slower], [cheat])
    return messages, parent, slower


def test_the_system_message_describes_the_strict_evaluator(prompt):
    system = prompt[0][0]
    assert system["role"] == "system" and "hidden from its timer" in system["content"]


def test_the_task_states_the_contract_and_the_shapes(prompt):
    user = prompt[0][1]["content"]
    assert "int    kernelrl_hgemm(const __half* A" in user and "4096x4096x4096, 64x64x64" in user
    assert "geometric mean" in user and "torch" in user


def test_the_hardware_is_described(prompt):
    assert "132 SMs" in prompt[0][1]["content"] and "227 KiB per block" in prompt[0][1]["content"]


def test_candidates_come_with_their_speedups_over_each_baseline(prompt):
    user = prompt[0][1]["content"]
    assert "speedup: 1.250× over torch, 0.875× over cublas_tn" in user and "0.800× over torch" in user
    assert user.index(prompt[1].name) < user.index(prompt[2].name)  # fastest first


def test_the_ptxas_report_and_profile_are_shown(prompt):
    user = prompt[0][1]["content"]
    assert "ptxas: 128 registers per thread, 37888 B static shared memory, no spills" in user
    assert "Nsight Compute on 4096x4096x4096" in user and "L2 hit rate 78.4 %" in user


def test_the_parent_source_is_shown_in_full(prompt):
    assert GOOD.rstrip() in prompt[0][1]["content"]


def test_failures_are_shown_with_their_verdicts(prompt):
    user = prompt[0][1]["content"]
    assert "static screen: cuda-stream (line 250: cudaStreamCreate)" in user and "known cheat" in user


def test_analysis_is_asked_for_before_the_code(prompt):
    user = prompt[0][1]["content"]
    assert user.index("comparative analysis") < user.index("why are the faster ones faster") \
        < user.index("ONE fenced ```cuda block")


def test_without_a_parent_the_prompt_asks_for_a_first_kernel(target):
    user = PromptBuilder(target, "- GPU: test").propose(None, [], [])[1]["content"]
    assert "There is no verified candidate yet" in user and "(none yet)" in user


def test_sources_beyond_the_length_limit_are_omitted_but_the_parents_is_not(target, pop):
    parent = add_ok(pop, target, GOOD, 1.2)
    other = add_ok(pop, target, GOOD + "// other\n", 1.1)
    user = PromptBuilder(target, "- GPU: test", max_chars=len(GOOD) + 100).propose(parent, [other], [])[1]["content"]
    assert user.count("(source omitted to keep the prompt short)") == 1 and GOOD.rstrip() in user


def test_the_repair_turn_continues_the_conversation_with_the_errors(target):
    builder = PromptBuilder(target, "- GPU: test")
    first = builder.propose(None, [], [])
    messages = builder.repair(first, "my reply", "k.cu(12): error: identifier \"x\" is undefined")
    assert messages[:2] == first and messages[2] == {"role": "assistant", "content": "my reply"}
    assert 'k.cu(12): error: identifier "x" is undefined' in messages[3]["content"]
    assert "did not compile" in messages[3]["content"]


def test_compiler_errors_keep_error_lines_and_their_context():
    log = "ptxas info: fine\nk.cu(3): error: bad\n  int x = ;\n        ^\nnoise\n"
    assert compiler_errors(log) == "k.cu(3): error: bad\n  int x = ;\n        ^"


def test_kernelbench_prompts_show_the_task_source_and_ask_for_python(tmp_path):
    target = KernelBenchTarget(TASK, tmp_path, device="cpu")
    user = PromptBuilder(target, "- GPU: test").propose(None, [], [])[1]["content"]
    assert TASK.read_text().strip() in user and "class ModelNew(nn.Module)" in user
    assert "ONE fenced ```python block" in user


def test_templates_are_package_files_registered_as_package_data():
    names = {p.name for p in resources.files("kernelrl.evolve").joinpath("templates").iterdir()}
    assert {"system.md", "propose.md", "task_hgemm.md", "task_kernelbench.md", "repair.md"} <= names
    assert '"evolve/templates/*"' in (ROOT / "pyproject.toml").read_text()

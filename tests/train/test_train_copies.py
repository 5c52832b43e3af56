"""No reward for copying under GRPO (reward.copies, default "floor"): a code completion that repeats a kernel its
prompt showed, exactly or up to comments, whitespace and renaming, or one an earlier step proposed for the same
target, is worth the verified floor at most; a new kernel keeps its reward."""

import pytest

from kernelrl.evolve.population import Population
from kernelrl.train.metrics import MetricsLog
from kernelrl.train.reward import Judgement, RewardConfig, RewardResult
from kernelrl.train.reward_fn import PolicyReward
from kernelrl.train.targets import TargetSpec, make_target
from tests import train_helpers as h

RENAMED = h.KERNEL.replace("naive", "tiled_gemm").replace("int r =", "int row =").replace("r >= M", "row >= M") \
    .replace("A[r * K", "A[row * K").replace("C[r * N", "C[row * N")
NEW = h.KERNEL.replace("float s = 0.f;", "float s = 0.f;\n    #pragma unroll 4")


class _Service:
    """Scores every completion as a verified 1.1x kernel."""

    def __init__(self, copies):
        self.reward, self.stats = RewardConfig(copies=copies), {}

    def score(self, items):
        judged = Judgement("ok", objective="cublas_nn",
                           shapes={"64x64x64": {"us": 10.0, "baselines": {"cublas_nn": 11.0}}})
        return [RewardResult(1.1, "ok", None, speedup=1.1, judgement=judged) for _ in items]


@pytest.fixture
def spec(tmp_path):
    return TargetSpec("hgemm", ("cublas_nn",), "cublas_nn", shapes=("64x64x64",), runner="dummy",
                      work_dir=str(tmp_path))


def rewards(spec, completions, prompt, copies="floor", pop=None):
    reward = PolicyReward(_Service(copies), MetricsLog(None), "grpo", pop)
    return reward(prompts=[prompt] * len(completions), completions=[h.fenced(c) for c in completions],
                  target=[spec.to_json()] * len(completions))


def test_a_copy_or_renamed_copy_of_the_prompts_kernel_is_worth_the_floor(spec):
    prompt = "Earlier candidates, fastest first\n\n" + h.fenced(h.KERNEL, analysis="The parent (1.10x).")
    assert rewards(spec, [h.KERNEL, RENAMED, NEW], prompt) == [0.01, 0.01, 1.1]
    assert rewards(spec, [h.KERNEL, NEW], prompt, copies="zero") == [0.0, 1.1]
    assert rewards(spec, [h.KERNEL, NEW], prompt, copies="keep") == [1.1, 1.1]


def test_a_repeat_of_an_earlier_completion_of_the_target_is_worth_the_floor(spec, tmp_path):
    pop = Population(tmp_path / "p.db")
    pop.add(make_target(spec).key, NEW, "llm", 3)
    try:
        assert rewards(spec, [NEW, h.KERNEL], "no code shown", pop=pop) == [0.01, 1.1]
    finally:
        pop.close()


def test_a_trajectory_is_paid_its_first_turns_discounted_return(spec):
    from kernelrl.train.multiturn import discounted_return
    reward = PolicyReward(_Service("floor"), MetricsLog(None), "grpo")
    reward.gamma = 0.5
    out = reward(prompts=["p", "p"], completions=["a", "b"], target=[spec.to_json()] * 2,
                 turn_rewards=[[0.0, 1.0, 2.0], [1.1, 0.0, 0.0]])
    assert out == [0.0 + 0.5 + 0.5, 1.1] and discounted_return([1.0, 1.0], 0.4) == pytest.approx(1.4)


@pytest.mark.parametrize("overlap", [False, True])
def test_a_rollouts_attempt_that_copies_its_prompt_is_a_copy(spec, overlap):
    """Multi-turn and overlapped GRPO judge inside the rollout (train/multiturn.py): the copy check there reads each
    trajectory's own prompt, as the reward function does for single-turn completions."""
    from kernelrl.train.multiturn import MultiTurnRollout, _Trajectory
    reward = PolicyReward(_Service("floor"), MetricsLog(None), "grpo")
    prompt = [{"role": "user", "content": "Earlier candidates\n\n" + h.fenced(h.KERNEL, analysis="The parent.")}]

    class Copying(MultiTurnRollout):
        def _attempt(self, model, t):
            return h.fenced(h.KERNEL if t.spec == "copies" else NEW)

    rollout = Copying(None, None, lambda specs, texts, prompts: reward.score([spec.to_json()] * len(specs), texts,
                                                                             prompts=prompts),
                      None, turns=1, max_new_tokens=1, overlap=overlap, group=1)
    _, results = rollout._turn(None, [_Trajectory(prompt, "copies", [0]), _Trajectory(prompt, "new", [0])])
    assert [r.key for r in results] == ["copy", None] and [r.reward for r in results] == [0.01, 1.1]

"""Multi-turn GRPO (a stage's `turns` > 1): every sampled completion is a trajectory of up to `turns` attempts at
its target. After each attempt the evaluator judges it and its verdict (the speedup, or the failure's line) is
the next user message, rendered as evolve's refine turn; the policy then writes the next attempt in the same
conversation. TRL's `rollout_func` hook returns the whole trajectory as one completion, the feedback tokens masked
out of the loss (`env_mask`), and the reward function pays it the first turn's return: its own reward plus the
later turns' discounted by `gamma` (sum of gamma^k r_k). Each trajectory gets one advantage, and a GRPO group
compares the trajectories of one target.

Each turn's attempts are judged together (one reward-service batch per turn), or, with `overlap`, group by group
as they are generated: the policy writes in a background thread while this one judges the groups already written,
so the evaluator's GPUs and the policy's take turns no longer. Nothing goes stale: a trajectory's next turn still waits
for its own verdict, and the groups reach the reward function in the order they would without overlap (the copy
index sees the same history). `busy` keeps the seconds each side worked and the rollouts' wall time. Generation is
transformers' `generate` on the policy being trained, one trajectory at a time."""

from __future__ import annotations

import json
import queue
import time
from concurrent.futures import ThreadPoolExecutor

import torch

from kernelrl.evolve.prompts import failure_line, render


def discounted_return(rewards: list[float], gamma: float) -> float:
    return sum(gamma ** k * r for k, r in enumerate(rewards))


def prompt_key(prompt) -> str:
    return prompt if isinstance(prompt, str) else json.dumps(prompt, sort_keys=True)


def feedback(result, turn: int, turns: int, fence: str) -> str:
    """The next user message after an attempt: its verdict, as evolve's refine turn says it."""
    if result.ok:
        text = f"- verified; speedup {result.speedup:.3f}×" if result.speedup else "- verified"
    else:
        text = failure_line(result.category, result.verdict)
    return render("refine.md", turn=turn, turns=turns, name="your last kernel", feedback=text, fence=fence)


class MultiTurnRollout:
    """TRL's rollout_func. `spec_of(prompt)`: the target (TargetSpec JSON) a dataset row's prompt was rendered for;
    `judge(specs, texts, prompts)`: RewardResults (the run's PolicyReward.score; `prompts`, each trajectory's own
    prompt as text, is what a copy is checked against); `fence(spec)`: the code block's language."""

    def __init__(self, tokenizer, spec_of, judge, fence, turns: int, max_new_tokens: int,
                 temperature: float = 1.0, top_p: float = 1.0, overlap: bool = False, group: int = 1):
        self.tok, self.spec_of, self.judge, self.fence = tokenizer, spec_of, judge, fence
        self.turns, self.max_new_tokens, self.temperature, self.top_p = turns, max_new_tokens, temperature, top_p
        self.overlap, self.group = overlap, max(1, group)  # group: trajectories per judged batch with overlap
        self.busy = {"generate_s": 0.0, "judge_s": 0.0, "wall_s": 0.0}

    def busy_fractions(self) -> dict:
        """The share of the rollouts' wall time the policy generated and the evaluator judged (both near 1: they
        overlapped)."""
        wall = self.busy["wall_s"]
        return {"generate": self.busy["generate_s"] / wall if wall else 0.0,
                "judge": self.busy["judge_s"] / wall if wall else 0.0, "overlap": self.overlap}

    def __call__(self, prompts: list, trainer) -> dict:
        model = trainer.accelerator.unwrap_model(trainer.model)
        # one trajectory per prompt given: TRL's sampler already repeats each prompt num_generations times
        trajectories = [_Trajectory(p, self.spec_of(p), self._ids(p)) for p in prompts]
        was_training = model.training
        model.eval()
        started = time.perf_counter()
        try:
            for turn in range(1, self.turns + 1):
                texts, results = self._turn(model, trajectories)
                for t, text, result in zip(trajectories, texts, results):
                    t.rewards.append(result.reward)
                    if turn < self.turns:
                        said = self._text(t.messages) + text  # what the policy's context reads as, so far
                        told = feedback(result, turn + 1, self.turns, self.fence(t.spec))
                        t.messages += [{"role": "assistant", "content": text}, {"role": "user", "content": told}]
                        t.add_feedback(self._added(said, self._text(t.messages), told))
        finally:
            model.train(was_training)
            self.busy["wall_s"] += time.perf_counter() - started
        return {"prompt_ids": [t.prompt_ids for t in trajectories],
                "completion_ids": [t.completion for t in trajectories],
                "logprobs": [t.logprobs for t in trajectories], "env_mask": [t.mask for t in trajectories],
                "turn_rewards": [t.rewards for t in trajectories]}

    def _turn(self, model, trajectories) -> tuple[list[str], list]:
        """Every trajectory's next attempt and its verdict: all generated, then judged in one batch; with overlap,
        each group judged in the background as soon as it is written."""
        if not self.overlap:
            texts = [self._generate(model, t) for t in trajectories]
            return texts, self._judge(trajectories, texts)
        # The policy writes in a background thread; the judging stays on this one, where the reward service, its
        # databases and workers always run.
        written: queue.Queue = queue.Queue()

        def write():
            try:
                for start in range(0, len(trajectories), self.group):
                    group = trajectories[start:start + self.group]
                    written.put((group, [self._generate(model, t) for t in group]))
            finally:
                written.put(None)  # also when generation raised: the judge loop ends, the error is re-raised below

        texts, results = [], []
        with ThreadPoolExecutor(max_workers=1, thread_name_prefix="kernelrl-generate") as pool:
            writing = pool.submit(write)
            while (item := written.get()) is not None:
                group, attempts = item
                texts += attempts
                results += self._judge(group, attempts)
            writing.result()
        return texts, results

    def _generate(self, model, t: "_Trajectory") -> str:
        started = time.perf_counter()
        try:
            return self._attempt(model, t)
        finally:
            self.busy["generate_s"] += time.perf_counter() - started

    def _judge(self, trajectories, texts) -> list:
        started = time.perf_counter()
        try:
            return self.judge([t.spec for t in trajectories], texts, [t.prompt_text for t in trajectories])
        finally:
            self.busy["judge_s"] += time.perf_counter() - started

    def _ids(self, messages) -> list[int]:
        ids = self.tok.apply_chat_template(messages, add_generation_prompt=True, tokenize=True)
        return list(ids["input_ids"] if hasattr(ids, "keys") else ids)

    def _text(self, messages) -> str:
        return self.tok.apply_chat_template(messages, add_generation_prompt=True, tokenize=False)

    def _added(self, said: str, rendered: str, told: str) -> list[int]:
        """The tokens the chat template puts after the policy's last turn: the turn's closing marker, the
        feedback as a user turn and the next assistant opening. Where the template rewrites the earlier text
        (it strips a reply's whitespace, say), the feedback turn as the template renders it on its own."""
        added = rendered[len(said):] if rendered.startswith(said) else \
            "\n" + self._text([{"role": "user", "content": told}])
        eos = getattr(self.tok, "eos_token", None)
        if eos and added.startswith(eos):  # the policy's own end-of-turn token is in the completion already
            added = added[len(eos):]
        return self.tok(added, add_special_tokens=False)["input_ids"]

    def _attempt(self, model, t: "_Trajectory") -> str:
        """One turn: the policy continues the conversation; its tokens (and their sampling log-probabilities)
        join the completion."""
        ids = torch.tensor([t.context], device=model.device)
        with torch.no_grad():
            out = model.generate(ids, do_sample=True, temperature=self.temperature, top_p=self.top_p,
                                 max_new_tokens=self.max_new_tokens, pad_token_id=self.tok.pad_token_id,
                                 return_dict_in_generate=True, output_scores=True)
        new = out.sequences[0, ids.shape[1]:].tolist()
        logps = [float(torch.log_softmax(score[0].float(), -1)[tok]) for score, tok in zip(out.scores, new)]
        t.add_model_tokens(new, logps)
        return self.tok.decode(new, skip_special_tokens=True)


class _Trajectory:
    def __init__(self, prompt, spec: str, prompt_ids: list[int]):
        self.messages = list(prompt) if not isinstance(prompt, str) else [{"role": "user", "content": prompt}]
        # the prompt as the reward function reads it (completion_text): what a copy is checked against
        self.prompt_text = "".join(m.get("content") or "" for m in self.messages if isinstance(m, dict))
        self.spec, self.prompt_ids = spec, prompt_ids
        self.context = list(prompt_ids)  # what the policy sees next: the prompt and every turn so far
        self.completion: list[int] = []
        self.logprobs: list[float] = []
        self.mask: list[int] = []  # 1: the policy's tokens (trained), 0: the evaluator's feedback (not)
        self.rewards: list[float] = []

    def add_model_tokens(self, ids: list[int], logps: list[float]) -> None:
        self.completion += ids
        self.logprobs += logps
        self.mask += [1] * len(ids)
        self.context += ids

    def add_feedback(self, added: list[int]) -> None:
        """The evaluator's turn: completion tokens the loss leaves out (mask 0, log-probability 0)."""
        self.completion += added
        self.logprobs += [0.0] * len(added)
        self.mask += [0] * len(added)
        self.context += added

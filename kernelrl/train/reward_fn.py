"""The reward function TRL calls: completions in, rewards out, through the reward service.

Besides the rewards it does two things the trainer does not: it writes a metrics line per batch (reward mean and
spread, pass rate, hack rate, speedup percentiles) and it records every completion that held code, with its verdict
and measurements, in the run's population, where later prompts find it as context (contrastive RL)."""

from __future__ import annotations

from kernelrl.evolve.copies import CopyIndex
from kernelrl.evolve.extract import LANGUAGES, blocks, extract
from kernelrl.evolve.target import geomean
from kernelrl.harness.verdicts import Verdict
from kernelrl.train.metrics import MetricsLog, summarize
from kernelrl.train.multiturn import discounted_return
from kernelrl.train.reward import FAILURE_REWARD, RewardResult
from kernelrl.train.service import RewardService, completion_text
from kernelrl.train.specs import completion_code, is_copy, spec_summary
from kernelrl.train.targets import TargetSpec, make_target


def population_record(result: RewardResult) -> dict:
    """A judged completion in the population's terms: geomean speedup per baseline over shapes, per-shape times."""
    j = result.judgement
    assert j is not None  # every judged result carries its judgement (reward.compute_reward)
    detail = {label: {"us": d.get("us"), "baselines": d.get("baselines") or {}}
              for label, d in (j.shapes or {}).items()}
    speedups = {}
    if result.ok:
        bases = {b for d in detail.values() for b in d["baselines"]}
        for b in sorted(bases):
            s = geomean([d["baselines"][b] / d["us"] for d in detail.values() if d["us"] and d["baselines"].get(b)])
            if s is not None:
                speedups[b] = round(s, 4)
    score = speedups.get(j.objective) if result.ok else None
    category = result.category if result.category in ("ok", "malformed", "compile", "rejected", "defence", "wrong",
                                                      "crash") else "failed"
    return {"category": category, "verdict": result.verdict, "score": score, "speedups": speedups,
            "detail": detail if result.ok else {}, "resources": j.resources or None, "key": result.key}


class PolicyReward:
    """Callable as TRL's reward function (it reads the dataset's `target` column)."""

    __name__ = "kernel_speedup"  # TRL names the reward's log entries after this

    def __init__(self, service: RewardService, metrics: MetricsLog, phase: str, population=None):
        self.service, self.metrics, self.phase, self.pop = service, metrics, phase, population
        self.calls = 0
        self.gamma = 0.4  # multi-turn stages set theirs (StageConfig.gamma)
        self._keys: dict[str, str] = {}

    def __call__(self, prompts=None, completions=None, target=None, trainer_state=None, log_metric=None,
                 turn_rewards=None, **_):
        if turn_rewards is not None:  # multi-turn: every turn was judged during the rollout (train/multiturn.py)
            returns = [discounted_return(r, self.gamma) for r in turn_rewards]
            if log_metric is not None:
                log_metric("kernel/return_mean", sum(returns) / len(returns))
                log_metric("kernel/last_turn_reward_mean", sum(r[-1] for r in turn_rewards) / len(turn_rewards))
            return returns
        texts = [completion_text(c) for c in completions]
        results = self.score(list(target), texts, step=getattr(trainer_state, "global_step", self.calls),
                             prompts=[completion_text(p) for p in prompts] if prompts is not None else None)
        if log_metric is not None:
            for k, v in summarize(results).items():
                if isinstance(v, (int, float)) and k != "n":
                    log_metric(f"kernel/{k}", float(v))
        return [r.reward for r in results]

    def score(self, specs: list[str], texts: list[str], step: int = 0,
              prompts: list[str] | None = None) -> list[RewardResult]:
        self.calls += 1
        results = self.service.score(list(zip(specs, texts)))
        if prompts is not None and self.service.reward.copies != "keep":
            results = [self._unless_copy(s, t, p, r) for s, t, p, r in zip(specs, texts, prompts, results)]
        targets = [TargetSpec.from_json(s) for s in dict.fromkeys(specs)]
        extra = spec_summary(texts, results, prompts) if any(t.completion == "spec" for t in targets) else {}
        shapes = sorted({shape for t in targets for shape in t.shapes})  # what the batch was judged on
        self.metrics.write({"kind": "reward", "phase": self.phase, "step": step, **summarize(results), **extra,
                            "shapes": shapes, "service": dict(self.service.stats)})
        if self.pop is not None:
            self._record(specs, texts, results, step)
        return results

    def _unless_copy(self, spec_json: str, text: str, prompt: str, result: RewardResult) -> RewardResult:
        """The result, or a copy's: worth the verified floor at most ("floor") or nothing ("zero")."""
        why = self._copy_of(spec_json, text, prompt)
        if why is None:
            return result
        cfg = self.service.reward
        if cfg.copies == "zero":
            return RewardResult(FAILURE_REWARD, "copy", why, judgement=result.judgement, key=Verdict.COPY.value)
        if not result.ok:
            return result  # a copy that fails keeps its failure (worth 0 already)
        return RewardResult(min(result.reward, cfg.min_verified), "copy", why, speedup=result.speedup,
                            judgement=result.judgement, key=Verdict.COPY.value)

    def _copy_of(self, spec_json: str, text: str, prompt: str) -> str | None:
        """Why the completion is a copy (the verdict line), or None: a spec its prompt showed; a kernel equal, up to
        comments, whitespace and renaming, to a code block of its prompt or to an earlier completion of the same
        target in the population."""
        spec = TargetSpec.from_json(spec_json)
        if spec.completion == "spec":
            return "copy: the prompt already showed this spec" if is_copy(text, prompt) else None
        language, entry = spec.entry
        ex = extract(text, language, entry)
        if ex.code is None:  # not ex.ok
            return None
        index = CopyIndex(language)
        aliases = LANGUAGES.get(language, (language,))
        for i, block in enumerate(b for b in blocks(prompt) if b.lang.lower() in aliases):
            index.add(f"variant {i + 1} of the prompt", block.text)
        if self.pop is not None:
            if spec_json not in self._keys:
                self._keys[spec_json] = make_target(spec).key
            for c in self.pop.all(self._keys[spec_json]):
                index.add(c.name, c.source, c.id)
        match = index.find(ex.code)
        return match.verdict() if match is not None else None

    def _record(self, specs, texts, results, step: int) -> None:
        for spec_json, text, result in zip(specs, texts, results):
            if result.category in ("malformed", "timeout", "error", "unrecorded"):
                continue  # no code to show, or nothing learned about it
            if spec_json not in self._keys:
                self._keys[spec_json] = make_target(TargetSpec.from_json(spec_json)).key
            spec = TargetSpec.from_json(spec_json)
            if spec.completion == "spec":
                code, analysis = completion_code(spec, text)[0], ""
            else:
                ex = extract(text, *spec.entry)
                code, analysis = ex.code, ex.analysis
            if code is None:
                continue
            cand, new = self.pop.add(self._keys[spec_json], code, "llm", step, analysis=analysis, model="policy")
            if new:
                self.pop.record(cand.id, **population_record(result))

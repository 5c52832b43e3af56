"""`kernelrl train`: the stages of the configuration, in order, each as one phase per dataset of its curriculum
(CUDA-L2: general KernelBench-format kernels first, then HGEMM), with a resumable state.

Everything lives under run_dir: state.json (the phases done and the model each produced), one folder per phase
(trainer checkpoints and the model it wrote), metrics.jsonl, population.db (the contrastive context: imported
evolve candidates and every judged completion), rewards.db (the evaluator's measurements, which also spares
re-measuring a repeated kernel), and the SFT pairs used, as JSONL. Running the same command again skips the phases
done and resumes the interrupted one from its last checkpoint."""

from __future__ import annotations

import json
import os
import time
from dataclasses import asdict, dataclass
from pathlib import Path

import torch

from kernelrl.evolve.hardware import detect
from kernelrl.evolve.population import Population
from kernelrl.evolve.prompts import ContextFit
from kernelrl.evolve.tokens import ChatTemplateCounter
from kernelrl.run import ray_runner
from kernelrl.train.config import StageConfig, TrainConfig, TrainError
from kernelrl.train.datasets import (Pair, Prompter, import_population, population_pairs, prompt_rows, results_db_pairs,
                                     rl_dataset, seed_pairs, sft_dataset, specs_for)
from kernelrl.train.metrics import MetricsLog
from kernelrl.train.reward_fn import PolicyReward
from kernelrl.train.service import RewardService
from kernelrl.train.specs import SpecPrompter, measured_specs, teacher_pairs
from kernelrl.train.targets import TargetSpec


@dataclass
class Phase:
    id: str  # "<stage index>-<kind>-<data>", the key in state.json and the folder name
    stage: StageConfig
    data: str


def phases_of(cfg: TrainConfig) -> list[Phase]:
    return [Phase(f"{i}-{s.kind}-{d}", s, d) for i, s in enumerate(cfg.stages) for d in s.data]


class Run:
    def __init__(self, cfg: TrainConfig, quiet: bool = False, say=print, clock=time.monotonic):
        self.cfg, self.quiet, self.say, self.clock = cfg, quiet, say, clock
        if quiet:
            _quiet_libraries()
        self.dir = Path(cfg.run_dir)
        self.dir.mkdir(parents=True, exist_ok=True)
        self.cpu = cfg.device == "cpu" or not torch.cuda.is_available()
        self.deadline = clock() + cfg.budgets.max_minutes * 60 if cfg.budgets.max_minutes else None
        self.metrics = MetricsLog(self.dir / "metrics.jsonl")
        self.service = RewardService(cfg.evaluation, cfg.reward)
        self.population = Population(self.dir / "population.db")
        self.prompter: Prompter
        if cfg.data.hgemm is not None and cfg.data.hgemm.completion == "spec":
            self.prompter = SpecPrompter(self.population, cfg.data.top_k, cfg.data.negatives,
                                         cfg.model.prompt_format, cfg.seed, cfg.data.plain_share)
        else:
            self.prompter = Prompter(self.population, detect(cfg.data.hardware).describe(), cfg.data.top_k,
                                     cfg.data.negatives, cfg.data.max_prompt_chars, cfg.model.prompt_format,
                                     cfg.seed)
        self.state_path = self.dir / "state.json"
        self.state = json.loads(self.state_path.read_text()) if self.state_path.exists() else {"done": {}}
        if cfg.data.context_tokens and isinstance(self.prompter, Prompter):  # spec prompts are a few lines
            self.prompter.fit = self._context_fit()
        self._specs: dict[tuple[str, bool], list] = {}
        self._pairs: dict[str, list] = {}
        if cfg.source:
            (self.dir / "config.yaml").write_text(cfg.source)

    def _context_fit(self) -> ContextFit:
        """Prompts sized in the policy's own tokens: its context (data.context_tokens) less the largest reply any
        stage samples (max_completion_length)."""
        from kernelrl.train.modeling import load_tokenizer  # loads transformers
        new = max(s.max_completion_length for s in self.cfg.stages)
        assert self.cfg.data.context_tokens is not None  # asked only where it is set (__init__)
        if self.cfg.data.context_tokens <= new:
            raise TrainError(f"data.context_tokens {self.cfg.data.context_tokens} leaves no room for a prompt beside "
                             f"max_completion_length {new}: raise it to the policy's context or lower the stages'")
        tokenizer = load_tokenizer(self.model_path, self.cfg.model.trust_remote_code)
        return ContextFit(ChatTemplateCounter(tokenizer), self.cfg.data.context_tokens, new)

    # -- plumbing -------------------------------------------------------------------------------------------------
    def out_of_time(self) -> bool:
        return self.deadline is not None and self.clock() >= self.deadline

    def save_state(self) -> None:
        tmp = self.state_path.with_suffix(".tmp")
        tmp.write_text(json.dumps(self.state, indent=1))
        os.replace(tmp, self.state_path)

    def specs(self, name: str, rl: bool = False) -> list:
        """A dataset's targets; `rl`: GRPO's (data.hgemm.rl_shapes where given)."""
        if (name, rl) not in self._specs:
            self._specs[name, rl] = specs_for(name, self.cfg.data, self.dir, rl)
        return self._specs[name, rl]

    @property
    def model_path(self) -> str:
        if "model" not in self.state:
            from kernelrl.train.modeling import resolve_model_path  # loads torch and transformers
            self.state["model"] = resolve_model_path(self.cfg.model, self.dir)
            self.save_state()
        return self.state["model"]

    def close(self) -> None:
        self.service.close()
        self.population.close()

    # -- the run --------------------------------------------------------------------------------------------------
    def run(self) -> dict:
        """Every phase not done yet, in order; stops early when the time budget is spent."""
        self._import_population()
        for phase in phases_of(self.cfg):
            if phase.id in self.state["done"]:
                continue
            if self.out_of_time():
                return self._summary("time budget spent")
            self.say(f"phase {phase.id}: from {self.model_path}")
            started = time.perf_counter()
            new = getattr(self, f"_{phase.stage.kind}")(phase)
            if new is False:  # stopped by the budget: resume next time
                return self._summary("time budget spent")
            if new is not None:
                self.state["model"] = str(new)
            self.state["done"][phase.id] = self.state["model"]
            self.save_state()
            self.metrics.write({"kind": "phase", "phase": phase.id, "model": self.state["model"],
                                "seconds": round(time.perf_counter() - started, 1)})
        return self._summary("all phases done")

    def _summary(self, why: str) -> dict:
        return {"model": self.state.get("model"), "done": list(self.state["done"]), "stopped": why,
                "phases": [p.id for p in phases_of(self.cfg)], "metrics": str(self.dir / "metrics.jsonl")}

    def _import_population(self) -> None:
        if not self.cfg.data.population:
            return
        names = {d for s in self.cfg.stages for d in s.data}
        copied = import_population(self.cfg.data.population, self.population,
                                   [s for n in sorted(names) for s in self.specs(n)])
        if copied:
            self.say(f"{copied} judged variants imported from {self.cfg.data.population} as context")

    # -- stages: each returns the new model folder, None (model unchanged) or False (stopped by the budget) -----
    def _sft(self, phase: Phase):
        pairs = self.sft_pairs(phase.data)
        if not pairs:
            self.say(f"phase {phase.id}: no verified kernels to learn from; model unchanged")
            return None
        ds = sft_dataset(pairs, self.cfg.model.prompt_format, self.cfg.seed)
        out = _stages().run_sft(self.model_path, ds, self.dir / phase.id, phase.stage, self, phase.id)
        return False if out is None else out

    def _self_supervised(self, phase: Phase):
        stages = _stages()
        reward = PolicyReward(self.service, self.metrics, phase.id, self.population)
        done = self.state.setdefault("rounds", {}).setdefault(phase.id, [])
        for r in range(phase.stage.rounds):
            if r in done:
                continue
            if self.out_of_time():
                return False
            folder = self.dir / phase.id / f"round{r}"
            kept = _read_pairs(folder / "kept.jsonl")
            if kept is None:  # sample once per round: a resumed round retrains on the same kept set
                rows = prompt_rows(self.specs(phase.data), self.prompter)
                kept = stages.sample_and_keep(self.model_path, rows, phase.stage, self, reward)
                _write_pairs(folder / "kept.jsonl", kept)
            self.metrics.write({"kind": "self_supervised", "phase": phase.id, "round": r, "kept": len(kept)})
            self.say(f"phase {phase.id} round {r}: {len(kept)} verified completions kept")
            if kept:
                out = stages.run_sft(self.model_path,
                                     sft_dataset(kept, self.cfg.model.prompt_format, self.cfg.seed + r), folder,
                                     phase.stage, self, f"{phase.id}/round{r}")
                if out is None:
                    return False
                self.state["model"] = str(out)
            done.append(r)
            self.save_state()
        return None

    def _grpo(self, phase: Phase):
        reward = PolicyReward(self.service, self.metrics, phase.id,
                              self.population if phase.stage.record_variants else None)
        d = self.cfg.data
        ds = rl_dataset(self.specs(phase.data, rl=True), self.prompter, d.prompts_per_target, self.cfg.seed,
                        d.prompt_order)
        out = _stages().run_grpo(self.model_path, ds, self.dir / phase.id, phase.stage, self, phase.id, reward)
        return False if out is None else out

    # -- SFT data -------------------------------------------------------------------------------------------------
    def sft_pairs(self, name: str) -> list:
        """Verified pairs for one dataset: population, results database, then seeds that the service verifies."""
        if name in self._pairs:
            return self._pairs[name]
        d = self.cfg.data
        pairs = []
        if d.population:
            pairs += population_pairs(d.population, d, self.dir, self.prompter)
        if d.results_db and name == "hgemm":
            pairs += results_db_pairs(d.results_db, d.kernels, d, self.dir, self.prompter)
        if name == "hgemm" and d.hgemm is not None and d.hgemm.teacher:  # (a stage's data is defined: config)
            h = d.hgemm
            measured = measured_specs(h.teacher, h.acc, h.teacher_baseline)
            if not measured:
                raise TrainError(f"data.hgemm.teacher: no verified {h.acc} spec-family measurement beside "
                                 f"{h.teacher_baseline} in {', '.join(map(str, h.teacher))}")
            pairs += teacher_pairs(self.specs(name), measured, self.prompter, h.teacher_per_shape,
                                   h.teacher_cheat_share, self.cfg.seed)
        pairs = [p for p in pairs if TargetSpec.from_json(p.spec).kind == name]
        seeds = seed_pairs(d.seeds, self.specs(name), self.prompter) if d.seeds else []
        if seeds:
            results = self.service.score([(p.spec, p.completion) for p in seeds])
            for p, r in zip(seeds, results):
                if r.ok:
                    p.verified = True
                else:
                    self.say(f"seed for {TargetSpec.from_json(p.spec).label} not used: {r.category}: {r.verdict}")
            pairs += [p for p in seeds if p.verified]
        _write_pairs(self.dir / f"sft_pairs_{name}.jsonl", pairs)
        self._pairs[name] = pairs
        return pairs


def _stages():
    """The training stages (kernelrl.train.stages), loaded at their first use: they load TRL and transformers,
    which `train` checks for first so that a missing one is named."""
    from kernelrl.train import stages
    return stages


def _quiet_libraries() -> None:
    """No progress bars from transformers (loading, saving) or datasets (tokenizing): logs stay readable."""
    import datasets  # the rl extra's libraries: optional, and loaded only by a quiet run
    import transformers
    datasets.disable_progress_bars()
    transformers.utils.logging.disable_progress_bar()


def _write_pairs(path: Path, pairs: list) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_suffix(".tmp")
    tmp.write_text("".join(json.dumps(asdict(p)) + "\n" for p in pairs))
    os.replace(tmp, path)


def _read_pairs(path: Path) -> list | None:
    if not path.exists():
        return None
    return [Pair(**json.loads(line)) for line in path.read_text().splitlines() if line.strip()]


def one_training_gpu(cfg: TrainConfig, environ=os.environ, gpu_count=None, start_ray=None) -> str | None:
    """Pin this process to the first visible GPU when it sees several and no distributed launcher started it.

    TRL's trainers refuse (SFT) or wrap in nn.DataParallel (GRPO) every GPU a single process sees; here one process
    trains and the other GPUs serve the reward workers, which pin their own GPU (local workers by physical id, Ray
    tasks through Ray). A local Ray cluster is started first, while all GPUs are still visible to it. Must run before
    anything initialises CUDA in this process. Returns the GPU kept, or None when nothing was changed."""
    if cfg.device == "cpu" or any(k in environ for k in ("WORLD_SIZE", "LOCAL_RANK")):
        return None
    visible = environ.get("CUDA_VISIBLE_DEVICES")
    if visible is not None:
        ids = [x.strip() for x in visible.split(",") if x.strip()]
    else:
        if gpu_count is None:
            gpu_count = torch.cuda.device_count  # NVML: no CUDA context yet
        ids = [str(i) for i in range(gpu_count())]
    if len(ids) <= 1:
        return None
    if cfg.evaluation.ray_address == "local":
        if start_ray is None:
            start_ray = ray_runner.start_ray
        start_ray("local")
    environ["CUDA_VISIBLE_DEVICES"] = ids[0]
    return ids[0]


def train(cfg: TrainConfig, quiet: bool = False, say=print) -> dict:
    """Run (or resume) a training configuration; returns where it stopped and the latest model."""
    for mod in ("trl", "transformers", "datasets"):
        try:
            __import__(mod)
        except ImportError:
            raise TrainError(f"kernelrl train needs {mod}: pip install -e '.[rl]'") from None
    kept = one_training_gpu(cfg)
    if kept is not None:
        say(f"training on GPU {kept} (one process; launch with accelerate for more); reward workers use the others")
    run = Run(cfg, quiet=quiet, say=say)
    try:
        return run.run()
    finally:
        run.close()

"""The `kernelrl train` configuration: one YAML file, read into dataclasses with every unknown key refused.

A mistyped key that were silently ignored would cost a GPU-day of training with the wrong settings, so each level
names the keys it knows. Relative paths are taken from the directory `kernelrl train` runs in."""

from __future__ import annotations

from dataclasses import dataclass, field, fields
from pathlib import Path

from kernelrl.examples import examples_path
from kernelrl.kernelbench.worker import DEFAULT_BASELINES
from kernelrl.train.errors import TrainError
from kernelrl.train.reward import RewardConfig, RewardConfigError
from kernelrl.train.service import EvalSettings, EvalSettingsError

STAGE_KINDS = ("sft", "self_supervised", "grpo")
DATA_NAMES = ("kernelbench", "hgemm")  # CUDA-L2's curriculum: general kernels first, then HGEMM


def _build(cls, d, where: str):
    if d is None:
        d = {}
    if not isinstance(d, dict):
        raise TrainError(f"{where}: expected a mapping, got {type(d).__name__}")
    known = {f.name for f in fields(cls)}
    unknown = sorted(set(d) - known)
    if unknown:
        raise TrainError(f"{where}: unknown key {', '.join(unknown)}; known: {', '.join(sorted(known))}")
    try:
        return cls(**d)
    except (TypeError, ValueError) as exc:
        raise TrainError(f"{where}: {exc}") from None


@dataclass
class ModelConfig:
    path: str = ""  # a local folder or a hub name (read from the local cache when offline)
    random: dict | None = None  # instead of path: a random tiny model (tiny.write_random_model's arguments;
    # `snippet_files: [...]` adds each file, fenced, as one token)
    dtype: str = "auto"  # auto, float32, bfloat16, float16
    lora: dict | None = None  # peft LoraConfig arguments (r, lora_alpha, lora_dropout, target_modules); absent: full
    prompt_format: str = "chat"  # chat: messages through the tokenizer's chat template; text: plain text
    trust_remote_code: bool = False
    attn_implementation: str | None = None  # e.g. flash_attention_2 where installed

    def __post_init__(self):
        if not self.path and self.random is None:
            raise ValueError("give model.path (a model folder or name) or model.random (a random tiny model)")
        if self.prompt_format not in ("chat", "text"):
            raise ValueError("model.prompt_format: chat or text")
        if self.dtype not in ("auto", "float32", "bfloat16", "float16"):
            raise ValueError("model.dtype: auto, float32, bfloat16 or float16")


@dataclass
class HgemmData:
    shapes: str = "sample:8:0"  # any kernelrl shape set
    rl_shapes: str | None = None  # GRPO's prompts only these (default: shapes); SFT and its teacher use shapes
    acc: str = "fp32"
    shapes_per_prompt: int = 4  # a prompt, and its reward, covers this many shapes
    baselines: list = field(default_factory=lambda: ["torch", "cublas_tn"])
    objective: str | None = None  # the baseline of the reward (default: the first)
    runner: str = "local"  # "dummy" for a CPU dry run; "recorded": replay the table `recorded` names
    rounds: int = 5
    hang_timeout_s: float = 60.0
    arch: str | None = None
    completion: str = "code"  # "code": the policy writes a .cu file; "spec": a kernel spec (one line)
    recorded: str | None = None  # runner recorded: a table of committed measurements (kernelrl/train/recorded.py)
    teacher: list = field(default_factory=list)  # spec mode: measurement CSVs (bench/tune exports) -> SFT pairs
    teacher_cheat_share: float = 0.15  # the share of SFT pairs whose spec asks for a cheat (trick=...)
    teacher_per_shape: int = 2  # SFT pairs per training shape, from the middle of its measured speeds
    teacher_baseline: str = "torch"  # the baseline measured beside the teacher rows (their speedups in prompts)

    def __post_init__(self):
        if self.shapes_per_prompt < 1:
            raise ValueError("shapes_per_prompt must be at least 1")
        if self.completion not in ("code", "spec"):
            raise ValueError("completion: code or spec")
        if self.completion == "spec" and self.shapes_per_prompt != 1:
            raise ValueError("completion spec: one shape per prompt (shapes_per_prompt: 1)")
        if self.runner == "recorded" and (self.completion != "spec" or not self.recorded):
            raise ValueError("runner recorded replays kernel specs: set completion: spec and recorded: TABLE.csv")
        if not 0 <= self.teacher_cheat_share < 1:
            raise ValueError("teacher_cheat_share: a share in [0, 1)")


@dataclass
class KernelBenchData:
    # files or folders; default: the own tasks, examples/kernelbench/tasks in the clone kernelrl is installed from
    tasks: list = field(default_factory=lambda: [str(examples_path("kernelbench", "tasks"))])
    device: str = "cuda"  # "cpu" for a dry run (eager baseline only)
    baselines: list | None = None
    objective: str | None = None
    rounds: int = 5
    hang_timeout_s: float = 120.0
    own_kernels: bool = False  # a candidate whose call launches every kernel the reference's does (PyTorch computed
    # its output) is `reference kernels`, no reward for it (kernelbench/census.py)


@dataclass
class DataConfig:
    hgemm: HgemmData | None = None
    kernelbench: KernelBenchData | None = None
    population: str | None = None  # an evolve population: contrastive context and SFT pairs (read only)
    results_db: str | None = None  # a results database of bench/tune runs ...
    kernels: list = field(default_factory=list)  # ... and the .cu files (or folders) it measured: SFT pairs
    seeds: list = field(default_factory=list)  # known-good kernels (.cu, or ModelNew .py): SFT pairs once verified
    hardware: str | None = None  # the GPU named in prompts; default: the one nvidia-smi shows
    top_k: int = 4  # earlier variants shown in a contrastive prompt
    negatives: int = 3  # failed variants shown, with their verdicts
    plain_share: float = 0.0  # contrastive spec runs: this share of RL prompts (drawn per row and population size)
    # show the shape only, where writing the best known spec again is right: the first shot a held-out shape gets
    max_prompt_chars: int = 60000
    # the policy's context window: prompts fitted to it less the stages' largest max_completion_length, counted
    # with the policy's own tokenizer and chat template (evolve.prompts.ContextFit); None: max_prompt_chars only
    context_tokens: int | None = None
    prompts_per_target: int = 4  # RL dataset rows per target (each drawn with fresh context)
    prompt_order: str = "shuffled"  # GRPO: "cycle" takes every target in turn, in one fixed order, so each run of
    # len(targets) steps visits each target once and windows of the training curve compare like with like
    min_speedup: float = 0.0  # SFT pairs only from kernels at least this fast over the objective

    def __post_init__(self):
        if self.prompt_order not in ("shuffled", "cycle"):
            raise ValueError("prompt_order: shuffled or cycle")
        if not 0.0 <= self.plain_share <= 1.0:
            raise ValueError(f"plain_share {self.plain_share}: give a share from 0 to 1")


@dataclass
class StageConfig:
    kind: str
    data: list = field(default_factory=lambda: list(DATA_NAMES))  # curriculum order: one phase per entry
    max_steps: int = -1  # per phase (-1: by epochs)
    epochs: float = 1.0
    learning_rate: float = 1e-5
    batch_size: int = 1  # per device
    grad_accum: int = 1
    max_length: int = 8192  # SFT: prompt + completion tokens
    max_completion_length: int = 4096  # sampling: self-supervised rounds and GRPO
    temperature: float = 1.0
    top_p: float = 1.0
    save_steps: int = 50
    # self_supervised
    rounds: int = 2
    samples_per_prompt: int = 4
    # grpo
    num_generations: int = 8
    beta: float = 0.0  # KL weight (0: no reference model kept, as in recent GRPO practice)
    turns: int = 1  # grpo: attempts per trajectory, each verdict the next user message (kernelrl/train/multiturn.py)
    gamma: float = 0.4  # grpo with turns > 1: a later turn's reward counts gamma^k (Kevin-32B used 0.4)
    overlap: bool = False  # grpo: judge each group while the policy writes the next (train/multiturn.py)
    use_vllm: bool = False  # generate with vLLM (installed separately); colocate or server mode
    vllm_mode: str = "colocate"
    vllm_gpu_memory_utilization: float = 0.3
    record_variants: bool = True  # grpo: judged completions join the context of later prompts (contrastive RL)
    extra: dict = field(default_factory=dict)  # passed as is to TRL's SFTConfig / GRPOConfig

    def __post_init__(self):
        if self.kind not in STAGE_KINDS:
            raise ValueError(f"stage kind {self.kind!r}: choose from {', '.join(STAGE_KINDS)}")
        bad = [d for d in self.data if d not in DATA_NAMES]
        if bad or not self.data:
            raise ValueError(f"stage data {bad or self.data}: a list of {', '.join(DATA_NAMES)}")
        if self.turns < 1 or not 0.0 <= self.gamma <= 1.0:
            raise ValueError(f"stage turns {self.turns}, gamma {self.gamma}: turns at least 1, gamma from 0 to 1")
        if self.turns > 1 and (self.kind != "grpo" or self.use_vllm):
            raise ValueError("stage turns > 1: grpo only, and without use_vllm (a multi-turn rollout generates with "
                             "transformers between the evaluator's turns)")
        if self.overlap and (self.kind != "grpo" or self.use_vllm):
            raise ValueError("stage overlap: grpo only, and without use_vllm (the overlapped rollout generates with "
                             "transformers while the evaluator judges)")


@dataclass
class Budgets:
    max_minutes: float | None = None  # the whole run; a stopped phase resumes from its checkpoint next time


@dataclass
class TrainConfig:
    run_dir: Path
    model: ModelConfig
    data: DataConfig
    reward: RewardConfig
    evaluation: EvalSettings
    stages: list[StageConfig]
    budgets: Budgets
    seed: int = 0
    device: str = "auto"  # "cpu" forces the CPU (tests, dry runs)
    source: str = ""  # the YAML text, kept with the run


TOP_KEYS = ("run_dir", "model", "data", "reward", "evaluation", "stages", "budgets", "seed", "device")


def parse_config(raw: dict, source: str = "") -> TrainConfig:
    if not isinstance(raw, dict):
        raise TrainError("the training config must be a YAML mapping")
    unknown = sorted(set(raw) - set(TOP_KEYS))
    if unknown:
        raise TrainError(f"unknown key {', '.join(unknown)}; known: {', '.join(TOP_KEYS)}")
    if not raw.get("run_dir"):
        raise TrainError("run_dir: where checkpoints, metrics and the reward database go")
    data_raw = dict(raw.get("data") or {})
    hg, kb = data_raw.pop("hgemm", None), data_raw.pop("kernelbench", None)
    data = _build(DataConfig, data_raw, "data")
    data.hgemm = _build(HgemmData, hg, "data.hgemm") if hg is not None else None
    data.kernelbench = _build(KernelBenchData, kb, "data.kernelbench") if kb is not None else None
    stages = [_build(StageConfig, s, f"stages[{i}]") for i, s in enumerate(raw.get("stages") or [])]
    if not stages:
        raise TrainError("stages: at least one of sft, self_supervised, grpo")
    for i, s in enumerate(stages):
        missing = [d for d in s.data if getattr(data, d) is None]
        if missing:
            raise TrainError(f"stages[{i}] ({s.kind}) uses data {', '.join(missing)}, which data does not define")
    try:
        reward = RewardConfig.from_dict(raw.get("reward"))
        evaluation = EvalSettings.from_dict(raw.get("evaluation"))
    except (RewardConfigError, EvalSettingsError, TypeError) as exc:
        raise TrainError(str(exc)) from None
    _check_reward_baseline(reward.baseline, data, stages)
    device = raw.get("device", "auto")
    if device not in ("auto", "cpu"):
        raise TrainError("device: auto or cpu")
    return TrainConfig(Path(raw["run_dir"]), _build(ModelConfig, raw.get("model"), "model"), data, reward,
                       evaluation, stages, _build(Budgets, raw.get("budgets"), "budgets"), int(raw.get("seed", 0)),
                       device, source)


def _check_reward_baseline(baseline: str | None, data: DataConfig, stages: list[StageConfig]) -> None:
    """A fixed reward baseline must be measured for every dataset the stages use (HGEMM and KernelBench have
    different baselines); left out, each target's own objective is used."""
    if not baseline:
        return
    for name in sorted({d for s in stages for d in s.data}):
        if name == "hgemm":
            assert data.hgemm is not None  # parse_config: every stage's data is defined
            measured = list(data.hgemm.baselines)
        else:
            kb = data.kernelbench
            assert kb is not None  # as above
            measured = list(kb.baselines or (DEFAULT_BASELINES if kb.device == "cuda" else ("eager",)))
        if baseline not in measured:
            raise TrainError(f"reward.baseline {baseline} is not measured for {name} (its baselines: "
                             f"{', '.join(measured)}); leave it out to use each dataset's objective")


def load_config(path: str | Path) -> TrainConfig:
    try:
        import yaml
    except ImportError:
        raise TrainError("kernelrl train needs PyYAML: pip install -e '.[rl]'") from None
    p = Path(path)
    if not p.is_file():
        raise TrainError(f"{path}: no such config file")
    text = p.read_text()
    try:
        raw = yaml.safe_load(text)
    except yaml.YAMLError as exc:
        raise TrainError(f"{path}: not valid YAML ({str(exc).splitlines()[0]})") from None
    return parse_config(raw, text)

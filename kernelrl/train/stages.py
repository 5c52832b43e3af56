"""The three stages of CUDA-L1, each one phase per dataset of its curriculum, built on TRL:

1. `sft`: supervised fine-tuning (TRL SFTTrainer) on verified kernels, the loss on the completion only.
2. `self_supervised`: rounds of sampling with the policy, keeping what the evaluator verifies, and SFT on it: the
   REINFORCE special case with reward 1 for a verified kernel and 0 otherwise.
3. `grpo`: contrastive RL (TRL GRPOTrainer) with the reward service as the reward function; prompts carry earlier
   variants and their scores, refreshed as the policy writes new ones.

A phase reads a model folder and writes one (`<phase dir>/model`). Trainer checkpoints go to the phase folder, so
an interrupted phase resumes from its last checkpoint. Each function returns the new model folder, or None when the
time budget stopped it (the checkpoint is kept; running again continues)."""

from __future__ import annotations

import importlib.util
from pathlib import Path
from typing import Any

import torch
from trl import GRPOConfig, GRPOTrainer, SFTConfig, SFTTrainer

from kernelrl.evolve.extract import extract
from kernelrl.space.spec import parse_spec
from kernelrl.train.datasets import Pair, answer_text
from kernelrl.train.errors import TrainError
from kernelrl.train.metrics import trainer_callbacks
from kernelrl.train.modeling import load_model, load_tokenizer, lora_config, save_policy
from kernelrl.train.multiturn import MultiTurnRollout, prompt_key
from kernelrl.train.sampling import HFSampler, VLLMSampler
from kernelrl.train.targets import TargetSpec


def _checkpoint(out_dir: Path) -> str | None:
    found = sorted(out_dir.glob("checkpoint-*"), key=lambda p: int(p.name.split("-")[1]))
    return str(found[-1]) if found else None


def _need_vllm() -> None:
    if importlib.util.find_spec("vllm") is None:
        raise TrainError("use_vllm: vLLM is not installed (pip install vllm, built for the torch you have); "
                         "or leave use_vllm out to generate with transformers")


def _common_args(stage, out_dir: Path, ctx) -> dict:
    cpu = ctx.cpu
    bf16 = not cpu and torch.cuda.is_available() and ctx.cfg.model.dtype in ("auto", "bfloat16")
    return {"output_dir": str(out_dir), "max_steps": stage.max_steps, "num_train_epochs": stage.epochs,
            "learning_rate": stage.learning_rate, "gradient_accumulation_steps": stage.grad_accum,
            "logging_steps": 1, "save_strategy": "steps", "save_steps": stage.save_steps, "save_total_limit": 2,
            "report_to": [], "use_cpu": cpu, "bf16": bf16, "seed": ctx.cfg.seed, "disable_tqdm": ctx.quiet}


def _finish(trainer, tokenizer, out_dir: Path, ctx) -> Path | None:
    if ctx.out_of_time():  # the budget callback had the trainer write a checkpoint at this step
        return None
    return save_policy(trainer.model, tokenizer, out_dir / "model")


def run_sft(model_path: str, dataset, out_dir: Path, stage, ctx, phase: str) -> Path | None:
    tokenizer = load_tokenizer(model_path, ctx.cfg.model.trust_remote_code)
    model = load_model(model_path, ctx.cfg.model, ctx.cpu)
    args = SFTConfig(**_common_args(stage, out_dir, ctx), per_device_train_batch_size=stage.batch_size,
                     max_length=stage.max_length, completion_only_loss=True, **stage.extra)
    trainer = SFTTrainer(model=model, args=args, train_dataset=dataset, processing_class=tokenizer,
                         peft_config=lora_config(ctx.cfg.model),
                         callbacks=trainer_callbacks(ctx.metrics, phase, ctx.deadline, ctx.clock))
    trainer.train(resume_from_checkpoint=_checkpoint(out_dir))
    return _finish(trainer, tokenizer, out_dir, ctx)


def run_grpo(model_path: str, dataset, out_dir: Path, stage, ctx, phase: str, reward_fn) -> Path | None:
    if stage.use_vllm:
        _need_vllm()
    tokenizer = load_tokenizer(model_path, ctx.cfg.model.trust_remote_code)
    model = load_model(model_path, ctx.cfg.model, ctx.cpu)
    vllm = {"use_vllm": True, "vllm_mode": stage.vllm_mode,
            "vllm_gpu_memory_utilization": stage.vllm_gpu_memory_utilization} if stage.use_vllm else {}
    # batch_size counts prompts: each brings num_generations completions, one GRPO group; a cycled dataset
    # (data.prompt_order) is read in its order
    order = {"shuffle_dataset": False} if ctx.cfg.data.prompt_order == "cycle" else {}
    args = GRPOConfig(**_common_args(stage, out_dir, ctx),
                      per_device_train_batch_size=stage.batch_size * stage.num_generations,
                      num_generations=stage.num_generations, max_completion_length=stage.max_completion_length,
                      temperature=stage.temperature, top_p=stage.top_p, beta=stage.beta,
                      remove_unused_columns=False, **vllm, **(order | stage.extra))
    # GRPOTrainer's keywords that only some trl versions take, given only when used
    multi: dict[str, Any] = {}
    rollout = None
    # trajectories (each verdict the next user message, the first turn's return the reward), or single attempts
    # judged group by group while the policy writes the next (overlap): both are our rollout
    if stage.turns > 1 or stage.overlap:
        if ctx.cfg.model.prompt_format != "chat":
            raise TrainError("a grpo stage with turns > 1 or overlap needs model.prompt_format chat: its rollout "
                             "writes chat turns")
        reward_fn.gamma = stage.gamma
        rollout = multi["rollout_func"] = MultiTurnRollout(
            tokenizer, lambda prompt: ctx.prompter.rendered[prompt_key(prompt)],
            lambda specs, texts, prompts: reward_fn.score(specs, texts, step=reward_fn.calls, prompts=prompts),
            lambda spec: TargetSpec.from_json(spec).entry[0], stage.turns, stage.max_completion_length,
            stage.temperature, stage.top_p, overlap=stage.overlap, group=stage.num_generations)
    trainer = GRPOTrainer(model=model, reward_funcs=reward_fn, args=args, train_dataset=dataset,
                          processing_class=tokenizer, peft_config=lora_config(ctx.cfg.model),
                          callbacks=trainer_callbacks(ctx.metrics, phase, ctx.deadline, ctx.clock), **multi)
    trainer.train(resume_from_checkpoint=_checkpoint(out_dir))
    if rollout is not None:  # where the rollouts' time went: generating, judging, both at once with overlap
        ctx.metrics.write({"kind": "rollout", "phase": phase, **{f"{k}_busy": v for k, v in
                                                                 rollout.busy_fractions().items() if k != "overlap"},
                           "overlap": stage.overlap, **rollout.busy})
    return _finish(trainer, tokenizer, out_dir, ctx)


def sample_and_keep(model_path: str, rows: list[dict], stage, ctx, reward) -> list:
    """One self-supervised sampling pass: `samples_per_prompt` completions per prompt, judged; the verified ones
    as SFT pairs (the completion rewritten as analysis + one fenced file, the format prompts ask for)."""
    tokenizer = load_tokenizer(model_path, ctx.cfg.model.trust_remote_code)
    sampler: VLLMSampler | HFSampler
    if stage.use_vllm:
        _need_vllm()
        sampler = VLLMSampler(model_path, tokenizer, stage.max_completion_length, stage.temperature, stage.top_p,
                              stage.vllm_gpu_memory_utilization, ctx.cfg.seed)
    else:
        model = load_model(model_path, ctx.cfg.model, ctx.cpu)
        if not ctx.cpu and torch.cuda.is_available():
            model = model.to("cuda")
        sampler = HFSampler(model, tokenizer, stage.max_completion_length, stage.temperature, stage.top_p,
                            batch_size=max(1, stage.batch_size))
    samples = sampler.sample([r["prompt"] for r in rows], stage.samples_per_prompt)
    if hasattr(sampler, "close"):
        sampler.close()
    specs = [r["target"] for r in rows for _ in range(stage.samples_per_prompt)]
    texts = [t for group in samples for t in group]
    results = reward.score(specs, texts)
    kept = []
    for i, (spec_json, text, result) in enumerate(zip(specs, texts, results)):
        if not result.ok:
            continue
        row = rows[i // stage.samples_per_prompt]
        target = TargetSpec.from_json(spec_json)
        if target.completion == "spec":  # a verified spec is kept in its canonical text
            kept.append(Pair(spec_json, row["messages"], parse_spec(text).text + "\n", "self_supervised"))
            continue
        language, entry = target.entry
        ex = extract(text, language, entry)
        assert ex.code is not None  # a verified completion held its code
        kept.append(Pair(spec_json, row["messages"], answer_text(ex.code, language, ex.analysis), "self_supervised"))
    return kept

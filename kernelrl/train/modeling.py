"""Loading the policy and saving it between phases.

Every phase starts from a plain model folder and ends with one: with LoRA the adapter is merged into the weights
at the end of each phase, so the next phase (or vLLM, or `transformers` anywhere) loads an ordinary model and puts
a fresh adapter on it. That costs a full copy per phase on disk and keeps every phase independent and resumable."""

from __future__ import annotations

from pathlib import Path

import torch
from transformers import AutoModelForCausalLM, AutoTokenizer

from kernelrl.train.specs import vocabulary
from kernelrl.train.tiny import write_random_model

DTYPES = {"float32": "float32", "bfloat16": "bfloat16", "float16": "float16"}


def torch_dtype(name: str, cpu: bool):
    if name == "auto":  # bf16 where a GPU can run it, fp32 on the CPU
        return torch.float32 if cpu or not torch.cuda.is_available() else torch.bfloat16
    return getattr(torch, DTYPES[name])


def resolve_model_path(model_cfg, run_dir: Path) -> str:
    """The model to start from: model.path, or a random model written once under the run directory."""
    if model_cfg.path:
        return model_cfg.path
    out = run_dir / "random_model"
    if not (out / "config.json").exists():
        opts = dict(model_cfg.random or {})
        snippets = [f"```{'cuda' if Path(f).suffix == '.cu' else 'python'}\n{Path(f).read_text().rstrip()}\n```\n"
                    for f in opts.pop("snippet_files", [])]
        if opts.pop("spec_vocab", False):  # one token per spec word and per paper shape word: a spec is ~15 tokens
            snippets += vocabulary()
        write_random_model(out, snippets=snippets, **opts)
    return str(out)


def load_tokenizer(path: str, trust_remote_code: bool = False):
    tok = AutoTokenizer.from_pretrained(path, trust_remote_code=trust_remote_code)
    if tok.pad_token is None:  # most code models ship without one; batching needs it
        tok.pad_token = tok.eos_token
    return tok


def load_model(path: str, model_cfg, cpu: bool):
    kw = {"dtype": torch_dtype(model_cfg.dtype, cpu), "trust_remote_code": model_cfg.trust_remote_code}
    if model_cfg.attn_implementation:
        kw["attn_implementation"] = model_cfg.attn_implementation
    return AutoModelForCausalLM.from_pretrained(path, **kw)


def lora_config(model_cfg):
    """A peft LoraConfig from model.lora, or None for full fine-tuning."""
    if not model_cfg.lora:
        return None
    from peft import LoraConfig
    opts = {"r": 16, "lora_alpha": 32, "lora_dropout": 0.05, "target_modules": "all-linear", **model_cfg.lora}
    return LoraConfig(task_type="CAUSAL_LM", **opts)


def save_policy(model, tokenizer, out: Path) -> Path:
    """The trained policy as a plain model folder (a LoRA adapter merged into its base)."""
    try:
        from peft import PeftModel
        if isinstance(model, PeftModel):
            model = model.merge_and_unload()
    except ImportError:
        pass
    out.mkdir(parents=True, exist_ok=True)
    model.save_pretrained(out, safe_serialization=True)
    tokenizer.save_pretrained(out)
    return out

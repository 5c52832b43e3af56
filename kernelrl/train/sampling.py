"""Sampling completions from the policy, for the self-supervised rounds: transformers' generate by default, vLLM
when asked for and installed (much faster on a GPU: paged attention, continuous batching)."""

from __future__ import annotations

import gc

import torch


class SamplerError(RuntimeError):
    pass


def _as_text(tokenizer, prompt) -> str:
    if isinstance(prompt, str):
        return prompt
    return tokenizer.apply_chat_template(prompt, tokenize=False, add_generation_prompt=True)


class HFSampler:
    def __init__(self, model, tokenizer, max_new_tokens: int, temperature: float = 1.0, top_p: float = 1.0,
                 batch_size: int = 8):
        self.model, self.tok = model, tokenizer
        self.max_new_tokens, self.temperature, self.top_p, self.batch_size = \
            max_new_tokens, temperature, top_p, batch_size

    def sample(self, prompts: list, n: int) -> list[list[str]]:
        """n completions for each prompt (chat messages or text)."""
        texts = [_as_text(self.tok, p) for p in prompts]
        side = self.tok.padding_side
        self.tok.padding_side = "left"  # generation continues from the right end of every row
        out: list[list[str]] = []
        was_training = self.model.training
        self.model.eval()
        try:
            for i in range(0, len(texts), self.batch_size):
                chunk = texts[i:i + self.batch_size]
                enc = self.tok(chunk, return_tensors="pt", padding=True, add_special_tokens=False)
                enc = {k: v.to(self.model.device) for k, v in enc.items()}
                with torch.no_grad():
                    ids = self.model.generate(**enc, do_sample=True, temperature=self.temperature, top_p=self.top_p,
                                              max_new_tokens=self.max_new_tokens, num_return_sequences=n,
                                              pad_token_id=self.tok.pad_token_id)
                new = ids[:, enc["input_ids"].shape[1]:]
                decoded = self.tok.batch_decode(new, skip_special_tokens=True)
                out += [decoded[j * n:(j + 1) * n] for j in range(len(chunk))]
        finally:
            self.tok.padding_side = side
            self.model.train(was_training)
        return out


class VLLMSampler:
    def __init__(self, model_path: str, tokenizer, max_new_tokens: int, temperature: float = 1.0,
                 top_p: float = 1.0, gpu_memory_utilization: float = 0.9, seed: int = 0):
        try:
            from vllm import LLM, SamplingParams
        except ImportError:
            raise SamplerError("use_vllm needs vLLM (pip install vllm, with a matching torch)") from None
        self.tok = tokenizer
        self.llm = LLM(model=model_path, gpu_memory_utilization=gpu_memory_utilization, seed=seed)
        self.params = lambda n: SamplingParams(n=n, temperature=temperature, top_p=top_p, max_tokens=max_new_tokens)

    def sample(self, prompts: list, n: int) -> list[list[str]]:
        results = self.llm.generate([_as_text(self.tok, p) for p in prompts], self.params(n))
        return [[o.text for o in r.outputs] for r in results]

    def close(self) -> None:
        del self.llm  # frees the GPU for the SFT step that follows
        gc.collect()
        try:
            torch.cuda.empty_cache()
        except Exception:
            pass

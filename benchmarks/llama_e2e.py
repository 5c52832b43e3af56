"""The tuned library in a real model: a Llama-architecture decoder (transformers, random weights, no downloads).

    python benchmarks/llama_e2e.py record --out DIR            # DIR/shapes.json: its GEMMs in every setting
    kernelrl tune --shapes DIR/shapes.json --out DIR/lib ...   # tune them (nt, the model's dtype, an M grid)
    python benchmarks/llama_e2e.py e2e --out DIR [--library DIR/lib]   # DIR/e2e.csv and DIR/e2e.md

Settings: prefill of 1 x PREFILL tokens, and decode at batch 1, 8 and 64, one token a step, over a PREFILL-token
KV cache. Methods: plain PyTorch (eager), torch.compile(mode="max-autotune-no-cudagraphs") and kernelrl.patch
(eager, every nn.Linear through the library). Per setting and method: tokens/s (CUDA events around the timed
steps, median of rounds), the share of GPU time in GEMM kernels (torch.profiler), and for kernelrl the calls that
ran a tuned kernel against those that fell back to F.linear. Every row records the environment."""

from __future__ import annotations

import argparse
import csv
import statistics
import sys
from dataclasses import dataclass, field
from pathlib import Path

import torch

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

import kernelrl  # noqa: E402
from kernelrl.environment import collect  # noqa: E402

GEMM_KERNEL_WORDS = ("gemm", "nvjet", "wgmma", "cutlass", "sm90_xmma", "hgemm", "matmul")


@dataclass
class ModelSpec:
    hidden: int = 4096
    intermediate: int = 14336
    heads: int = 32
    kv_heads: int = 8
    layers: int = 4
    vocab: int = 32000
    dtype: str = "bfloat16"


@dataclass
class Setting:
    name: str
    batch: int
    new_tokens: int  # per timed step: the prompt for prefill, 1 for decode
    cache: int  # tokens already in the KV cache


@dataclass
class Run:
    prefill: int = 2048
    decode_batches: tuple[int, ...] = (1, 8, 64)
    rounds: int = 5
    decode_steps: int = 8
    settings: list[Setting] = field(default_factory=list)

    def __post_init__(self):
        if not self.settings:
            self.settings = [Setting("prefill", 1, self.prefill, 0)] + [
                Setting(f"decode_b{b}", b, 1, self.prefill) for b in self.decode_batches]


def build_model(spec: ModelSpec, device: str):
    from transformers import LlamaConfig, LlamaForCausalLM
    config = LlamaConfig(hidden_size=spec.hidden, intermediate_size=spec.intermediate, num_attention_heads=spec.heads,
                         num_key_value_heads=spec.kv_heads, num_hidden_layers=spec.layers, vocab_size=spec.vocab,
                         max_position_embeddings=8192)
    torch.manual_seed(0)
    model = LlamaForCausalLM(config).to(device=device, dtype=getattr(torch, spec.dtype)).eval()
    return model


def _cache_for(model, setting: Setting, device: str):
    """A KV cache holding setting.cache tokens for setting.batch sequences (prefilled by the model itself)."""
    from transformers import DynamicCache
    cache = DynamicCache()
    if setting.cache:
        ids = torch.randint(0, model.config.vocab_size, (setting.batch, setting.cache), device=device)
        with torch.no_grad():
            model(input_ids=ids, past_key_values=cache, use_cache=True)
    return cache


def step_fn(model, setting: Setting, device: str):
    """One timed step of the setting: the prompt's forward (prefill) or one token for every sequence (decode)."""
    ids = torch.randint(0, model.config.vocab_size, (setting.batch, setting.new_tokens), device=device)
    cache = _cache_for(model, setting, device) if setting.cache else None

    def step():
        with torch.no_grad():
            logits = model(input_ids=ids, past_key_values=cache, use_cache=cache is not None).logits
        if cache is not None:
            cache.crop(-setting.new_tokens)  # back to the prefix: every step decodes at the same cache length
        return logits
    return step


def record(model, run: Run, device: str, path: Path) -> list[dict]:
    """The GEMMs of each setting's timed step (the KV caches are built before recording starts)."""
    steps = [step_fn(model, setting, device) for setting in run.settings]
    with kernelrl.record(path) as rec:
        for step in steps:
            step()
    return rec.shapes()


def time_tokens_per_s(step, setting: Setting, rounds: int, steps: int, device: str) -> float:
    step()  # warm-up (and compile, for torch.compile)
    if device != "cuda":
        import time
        times = []
        for _ in range(rounds):
            t0 = time.perf_counter()
            for _ in range(steps):
                step()
            times.append(time.perf_counter() - t0)
    else:
        times = []
        for _ in range(rounds):
            start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
            start.record()
            for _ in range(steps):
                step()
            end.record()
            torch.cuda.synchronize()
            times.append(start.elapsed_time(end) / 1e3)
    return setting.batch * setting.new_tokens * steps / statistics.median(times)


def gemm_share(step, device: str) -> float | None:
    """The fraction of GPU kernel time spent in GEMM kernels over one step (None without CUDA)."""
    if device != "cuda":
        return None
    from torch.profiler import ProfilerActivity, profile
    with profile(activities=[ProfilerActivity.CUDA]) as prof:
        step()
        torch.cuda.synchronize()
    total = gemm = 0.0
    for evt in prof.key_averages():
        t = getattr(evt, "self_device_time_total", None) or getattr(evt, "self_cuda_time_total", 0.0)
        total += t
        if any(w in evt.key.lower() for w in GEMM_KERNEL_WORDS):
            gemm += t
    return gemm / total if total else None


def e2e(model, run: Run, device: str, library_path: str | None, methods: list[str]) -> list[dict]:
    env = collect({"mode": "e2e"})
    rows = []
    lib = kernelrl.load_library(library_path) if library_path else None
    for method in methods:
        if method == "kernelrl" and lib is None:
            continue
        m = model
        if method == "compile":
            m = torch.compile(model, mode="max-autotune-no-cudagraphs")
        if method == "kernelrl":
            kernelrl.patch(model, lib)
        try:
            for setting in run.settings:
                step = step_fn(m, setting, device)
                before = {k: dict(v) for k, v in lib.stats().items()} if lib is not None else {}
                tps = time_tokens_per_s(step, setting, run.rounds, 1 if setting.name == "prefill" else run.decode_steps,
                                        device)
                calls = fallbacks = 0
                if method == "kernelrl":
                    for shape, now in lib.stats().items():
                        was = before.get(shape, {"calls": 0, "fallbacks": 0})
                        calls += now["calls"] - was["calls"]
                        fallbacks += now["fallbacks"] - was["fallbacks"]
                rows.append({"setting": setting.name, "batch": setting.batch, "method": method,
                             "tokens_per_s": round(tps, 2), "gemm_share": gemm_share(step, device),
                             "kernel_calls": calls if method == "kernelrl" else "",
                             "fallback_calls": fallbacks if method == "kernelrl" else "",
                             "gpu": env.get("gpu"), "torch": env.get("torch"), "date": env.get("date")})
                print(rows[-1], flush=True)
        finally:
            if method == "kernelrl":
                kernelrl.unpatch(model)
    return rows


def write(rows: list[dict], out: Path, command: str) -> None:
    out.mkdir(parents=True, exist_ok=True)
    with open(out / "e2e.csv", "w", newline="") as f:
        writer = csv.DictWriter(f, fieldnames=list(rows[0]))
        writer.writeheader()
        writer.writerows(rows)
    lines = [f"# Llama decoder end to end\n\n- command: `{command}`\n- environment: {collect({'mode': 'e2e'})}\n",
             "| setting | method | tokens/s | vs eager | GEMM share | kernel / fallback calls |", "|---|---|---:|---:|---:|---|"]
    eager = {r["setting"]: r["tokens_per_s"] for r in rows if r["method"] == "eager"}
    for r in rows:
        ratio = r["tokens_per_s"] / eager[r["setting"]] if r["setting"] in eager else float("nan")
        share = f"{r['gemm_share']:.2f}" if isinstance(r["gemm_share"], float) else "-"
        calls = f"{r['kernel_calls']} / {r['fallback_calls']}" if r["method"] == "kernelrl" else ""
        lines.append(f"| {r['setting']} | {r['method']} | {r['tokens_per_s']:.1f} | {ratio:.3f} | {share} | {calls} |")
    (out / "e2e.md").write_text("\n".join(lines) + "\n")


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("step", choices=["record", "e2e"])
    ap.add_argument("--out", type=Path, required=True)
    ap.add_argument("--library", default=None, help="e2e: a tuned library folder (kernelrl tune --out)")
    ap.add_argument("--methods", default="eager,compile,kernelrl")
    ap.add_argument("--device", default="cuda")
    ap.add_argument("--layers", type=int, default=4)
    ap.add_argument("--hidden", type=int, default=4096)
    ap.add_argument("--intermediate", type=int, default=14336)
    ap.add_argument("--heads", type=int, default=32)
    ap.add_argument("--kv-heads", type=int, default=8)
    ap.add_argument("--vocab", type=int, default=32000)
    ap.add_argument("--dtype", default="bfloat16", choices=["bfloat16", "float16"])
    ap.add_argument("--prefill", type=int, default=2048)
    ap.add_argument("--decode-batches", default="1,8,64")
    ap.add_argument("--rounds", type=int, default=5)
    args = ap.parse_args(argv)
    spec = ModelSpec(args.hidden, args.intermediate, args.heads, args.kv_heads, args.layers, args.vocab, args.dtype)
    run = Run(prefill=args.prefill, decode_batches=tuple(int(b) for b in args.decode_batches.split(",")),
              rounds=args.rounds)
    model = build_model(spec, args.device)
    command = "python benchmarks/llama_e2e.py " + " ".join(sys.argv[1:] if argv is None else argv)
    if args.step == "record":
        args.out.mkdir(parents=True, exist_ok=True)
        shapes = record(model, run, args.device, args.out / "shapes.json")
        print(f"{len(shapes)} distinct GEMMs: {args.out / 'shapes.json'}")
        return 0
    rows = e2e(model, run, args.device, args.library, [m.strip() for m in args.methods.split(",") if m.strip()])
    write(rows, args.out, command)
    print((args.out / "e2e.md").read_text())
    return 0


if __name__ == "__main__":
    sys.exit(main())

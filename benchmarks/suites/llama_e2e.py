"""The tuned library in a real model: a Llama-architecture decoder (transformers, random weights, no downloads).

    python benchmarks/suites/llama_e2e.py record --out DIR            # DIR/shapes.json: its GEMMs in every setting
    kernelrl tune --shapes DIR/shapes.json --out DIR/lib ...   # tune them (nt, the model's dtype, an M grid)
    python benchmarks/suites/llama_e2e.py e2e --out DIR [--library DIR/lib]   # DIR/e2e.csv and DIR/e2e.md

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
import time
from dataclasses import dataclass, field
from pathlib import Path

import torch

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))

import kernelrl  # noqa: E402
from kernelrl.environment import collect  # noqa: E402
from kernelrl.library import policy  # noqa: E402
from kernelrl.library.policy import FALLBACK_LABEL  # noqa: E402

GEMM_KERNEL_WORDS = ("gemm", "nvjet", "wgmma", "cutlass", "sm90_xmma", "hgemm", "matmul", "triton_mm", "triton_tem")


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
    rounds: int = 15  # interleaved rounds: with 5, eager decode moved 117-200 tok/s between runs on the shared card
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


def step_fn(model, setting: Setting, device: str, base=None):
    """One timed step of the setting: the prompt's forward (prefill) or one token for every sequence (decode). The
    KV cache is prefilled by `base` (the eager model, where `model` is its compiled form: a compile for a prefill of
    batch x cache tokens that is never timed would only cost minutes)."""
    base = model if base is None else base
    ids = torch.randint(0, base.config.vocab_size, (setting.batch, setting.new_tokens), device=device)
    cache = _cache_for(base, setting, device) if setting.cache else None

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


def timed(step, steps: int, device: str) -> float:
    """Seconds for `steps` back-to-back steps (CUDA events on the GPU)."""
    if device != "cuda":
        t0 = time.perf_counter()
        for _ in range(steps):
            step()
        return time.perf_counter() - t0
    start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
    start.record()
    for _ in range(steps):
        step()
    end.record()
    torch.cuda.synchronize()
    return start.elapsed_time(end) / 1e3


def steps_of(setting: Setting, run: Run) -> int:
    return 1 if setting.name == "prefill" else run.decode_steps


def time_tokens_per_s(step, setting: Setting, rounds: int, steps: int, device: str) -> float:
    step()  # warm-up (and compile, for torch.compile)
    times = [timed(step, steps, device) for _ in range(rounds)]
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


def e2e(model, run: Run, device: str, library_path: str | None, methods: list[str], out: Path | None = None,
        command: str = "", rows: list[dict] | None = None) -> list[dict]:
    """Rows per (method, setting), after `rows` (an earlier run's); with `out`, the CSV and table are rewritten
    after every row (a run cut short by a time limit keeps what it measured). Eager and kernelrl.patch are timed in
    interleaved rounds of one step closure (the same inputs and cache; the patch is a class swap), so a shared,
    noisy machine moves both alike; torch.compile is timed after them. A setting that raises is a row with its
    error, and ends its method (a CUDA error leaves the context unusable: run such a method in its own process, with
    --append)."""
    env = collect({"mode": "e2e"})
    rows = list(rows or [])
    lib = kernelrl.load_library(library_path) if library_path else None
    arms = [m for m in ("eager", "kernelrl") if m in methods and (m != "kernelrl" or lib is not None)]
    layers: list[dict] = []

    def save(row):
        rows.append(row)
        print(row, flush=True)
        if out is not None:
            write(rows, out, command)

    if arms:
        for setting in run.settings:
            try:
                measured = interleaved(model, lib, setting, run, device, arms)
            except Exception as exc:  # noqa: BLE001 - measured rows are kept, and the failure is one
                for arm in arms:
                    save(_failed(setting, arm, exc, env))
                break
            for arm in arms:
                tps, share, calls, fallbacks = measured[arm]
                save(_row(setting, arm, round(tps, 2), share, calls, fallbacks, env))
            if lib is not None and out is not None:
                layers += layer_routes(model, lib, setting)
                write_layers(layers, out)
    if "compile" in methods:
        compiled = torch.compile(model, mode="max-autotune-no-cudagraphs")
        for setting in run.settings:
            try:
                step = step_fn(compiled, setting, device, base=model)
                tps = time_tokens_per_s(step, setting, run.rounds, steps_of(setting, run), device)
            except Exception as exc:  # noqa: BLE001
                save(_failed(setting, "compile", exc, env))
                break
            save(_row(setting, "compile", round(tps, 2), gemm_share(step, device), "", "", env))
    return rows


def interleaved(model, lib, setting: Setting, run: Run, device: str, arms: list[str]) -> dict[str, tuple]:
    """(tokens/s, GEMM share, kernel calls, fallback calls) per arm, from rounds that alternate the arms' order."""
    step = step_fn(model, setting, device)
    steps = steps_of(setting, run)

    def use(arm):
        kernelrl.unpatch(model)
        if arm == "kernelrl":
            kernelrl.patch(model, lib)

    try:
        for arm in arms:
            use(arm)
            step()  # warm-up: the library decides its shapes on this call
        before = lib.stats() if lib is not None else {}
        times = {arm: [] for arm in arms}
        for r in range(run.rounds):
            for arm in (arms if r % 2 == 0 else arms[::-1]):
                use(arm)
                times[arm].append(timed(step, steps, device))
        calls = fallbacks = 0
        if lib is not None:
            for shape, now in lib.stats().items():
                was = before.get(shape, {"calls": 0, "fallbacks": 0})
                calls += now["calls"] - was["calls"]
                fallbacks += now["fallbacks"] - was["fallbacks"]
        result = {}
        for arm in arms:
            use(arm)
            tps = setting.batch * setting.new_tokens * steps / statistics.median(times[arm])
            counted = (calls, fallbacks) if arm == "kernelrl" else ("", "")
            result[arm] = (tps, gemm_share(step, device), *counted)
        return result
    finally:
        kernelrl.unpatch(model)


def layer_routes(model, lib, setting: Setting) -> list[dict]:
    """Per nn.Linear of the model, what kernelrl.patch runs for it in this setting (the library's own dispatch
    answer for the layer's (M, N, K, dtype)): the per-layer hit rate."""
    from torch import nn
    m = setting.batch * setting.new_tokens
    rows = []
    for name, module in model.named_modules():
        if isinstance(module, nn.Linear):
            n, k = module.weight.shape
            dtype = {torch.float16: "fp16", torch.bfloat16: "bf16"}.get(module.weight.dtype)
            decided = lib.route(m, n, k, "fp32", dtype, "nt") if dtype else None
            runs = (decided.name if decided else None) or FALLBACK_LABEL["nt"]
            rows.append({"setting": setting.name, "layer": name, "m": m, "n": n, "k": k, "runs": runs,
                         "tuned_kernel": int(decided is not None and decided.kind == policy.KERNEL)})
    return rows


def write_layers(rows: list[dict], out: Path) -> None:
    with open(out / "e2e_layers.csv", "w", newline="") as f:
        writer = csv.DictWriter(f, fieldnames=list(rows[0]))
        writer.writeheader()
        writer.writerows(rows)


def _failed(setting: Setting, method: str, exc: Exception, env: dict) -> dict:
    error = (str(exc).strip().splitlines() or [type(exc).__name__])[0][:300]
    print(f"{method} {setting.name}: {type(exc).__name__}: {error}", flush=True)
    return _row(setting, method, None, None, "", "", env) | {"error": error}


def _row(setting: Setting, method: str, tps, share, calls, fallbacks, env: dict) -> dict:
    return {"setting": setting.name, "batch": setting.batch, "method": method, "tokens_per_s": tps,
            "gemm_share": share, "kernel_calls": calls, "fallback_calls": fallbacks, "error": "",
            "gpu": env.get("gpu"), "torch": env.get("torch"), "date": env.get("date")}


def read_rows(out: Path, methods: list[str], settings: list[str]) -> list[dict]:
    """An earlier run's rows from out/e2e.csv, less those about to be measured again (these methods in these
    settings)."""
    path = out / "e2e.csv"
    if not path.is_file():
        return []
    rows = list(csv.DictReader(open(path)))
    for r in rows:
        for key in ("tokens_per_s", "gemm_share"):
            r[key] = float(r[key]) if r.get(key) not in (None, "", "None") else None
    return [r for r in rows if not (r["method"] in methods and r["setting"] in settings)]


def write(rows: list[dict], out: Path, command: str) -> None:
    out.mkdir(parents=True, exist_ok=True)
    with open(out / "e2e.csv", "w", newline="") as f:
        writer = csv.DictWriter(f, fieldnames=list(_row(Setting("", 0, 0, 0), "", None, None, "", "", {})))
        writer.writeheader()
        writer.writerows(rows)
    lines = [f"# Llama decoder end to end\n\n- command: `{command}`\n- environment: {collect({'mode': 'e2e'})}\n",
             "| setting | method | tokens/s | vs eager | GEMM share | kernel / fallback calls |",
             "|---|---|---:|---:|---:|---|"]
    eager = {r["setting"]: r["tokens_per_s"] for r in rows if r["method"] == "eager" and r["tokens_per_s"]}
    for r in rows:
        if r.get("error"):
            lines.append(f"| {r['setting']} | {r['method']} | failed: {r['error'][:120]} | | | |")
            continue
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
    ap.add_argument("--methods", default="eager,kernelrl,compile",
                    help="in this order (torch.compile's max-autotune is the slowest to start: last)")
    ap.add_argument("--append", action="store_true",
                    help="keep out/e2e.csv's rows of other methods (one method per process, e.g. torch.compile)")
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
    ap.add_argument("--rounds", type=int, default=15)
    ap.add_argument("--settings", default=None, help="only these settings (e.g. decode_b64), comma-separated")
    args = ap.parse_args(argv)
    spec = ModelSpec(args.hidden, args.intermediate, args.heads, args.kv_heads, args.layers, args.vocab, args.dtype)
    run = Run(prefill=args.prefill, decode_batches=tuple(int(b) for b in args.decode_batches.split(",")),
              rounds=args.rounds)
    if args.settings:
        wanted = [name.strip() for name in args.settings.split(",") if name.strip()]
        unknown = sorted(set(wanted) - {st.name for st in run.settings})
        if unknown:
            ap.error(f"unknown settings {', '.join(unknown)}; these exist: {', '.join(st.name for st in run.settings)}")
        run.settings = [st for st in run.settings if st.name in wanted]
    model = build_model(spec, args.device)
    command = "python benchmarks/suites/llama_e2e.py " + " ".join(sys.argv[1:] if argv is None else argv)
    if args.step == "record":
        args.out.mkdir(parents=True, exist_ok=True)
        shapes = record(model, run, args.device, args.out / "shapes.json")
        print(f"{len(shapes)} distinct GEMMs: {args.out / 'shapes.json'}")
        return 0
    methods = [m.strip() for m in args.methods.split(",") if m.strip()]
    earlier = read_rows(args.out, methods, [st.name for st in run.settings]) if args.append else []
    rows = e2e(model, run, args.device, args.library, methods, args.out, command, earlier)
    if not rows:
        print("no rows measured (kernelrl alone needs --library)")
        return 1
    print((args.out / "e2e.md").read_text())
    return 0


if __name__ == "__main__":
    sys.exit(main())

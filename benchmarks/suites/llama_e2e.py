"""The tuned library in a real model: a Llama-architecture decoder (transformers, random weights, no downloads).

    python benchmarks/suites/llama_e2e.py record --out DIR [--fused]  # DIR/shapes.json: its GEMMs in every setting
    kernelrl tune --shapes DIR/shapes.json --out DIR/lib ...   # tune them (nt, the model's dtype, an M grid)
    python benchmarks/suites/llama_e2e.py e2e --out DIR [--library DIR/lib]   # DIR/e2e.csv and DIR/e2e.md

Settings: prefill of 1 x PREFILL tokens, and decode at batch 1, 8 and 64, one token a step, over a PREFILL-token
KV cache. Methods (`parse_method`): plain PyTorch (`eager`), `kernelrl` (kernelrl.patch: every nn.Linear through
the library), `kernelrl+fused` (also each gated MLP's gate and up as one GEMM with SwiGLU in its epilogue), and each
of these under torch.compile: `compile` (mode="max-autotune-no-cudagraphs"), `compile+kernelrl`,
`compile+kernelrl+fused`, and `compile_default...` (the default mode). Per setting and method: tokens/s (CUDA
events around the timed steps, median of interleaved rounds), the share of GPU time in GEMM kernels
(torch.profiler), and for the patched methods the calls that ran a tuned kernel against those that fell back to
F.linear, and the gate/up calls fused in the kernel against those that were not. Every row records the
environment. `record --fused` also records the fused model's (M, 2 x intermediate, hidden) GEMMs, to tune them."""

from __future__ import annotations

import argparse
import copy
import csv
import json
import statistics
import sys
import tempfile
import time
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path

import torch

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))

import kernelrl  # noqa: E402
from kernelrl.environment import collect  # noqa: E402
from kernelrl.library import policy  # noqa: E402
from kernelrl.library.fused import fusable  # noqa: E402
from kernelrl.library.policy import FALLBACK_LABEL  # noqa: E402
from kernelrl.workloads.record import write_shapes  # noqa: E402

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


def step_inputs(base, setting: Setting, device: str):
    """The setting's input ids and KV cache (prefilled by `base`, the eager model: every arm shares them, and a
    compile for a prefill of batch x cache tokens that is never timed would only cost minutes)."""
    ids = torch.randint(0, base.config.vocab_size, (setting.batch, setting.new_tokens), device=device)
    return ids, _cache_for(base, setting, device) if setting.cache else None


def make_step(model, ids, cache, setting: Setting):
    """One timed step of the setting: the prompt's forward (prefill) or one token for every sequence (decode)."""
    def step():
        with torch.no_grad():
            logits = model(input_ids=ids, past_key_values=cache, use_cache=cache is not None).logits
        if cache is not None:
            cache.crop(-setting.new_tokens)  # back to the prefix: every step decodes at the same cache length
        return logits
    return step


def record(model, run: Run, device: str, path: Path, fused: bool = False) -> list[dict]:
    """The GEMMs of each setting's timed step (the KV caches are built before recording starts); with `fused`,
    also those the model runs patched with fuse_mlp (over an empty library: every GEMM reaches ATen) that the plain
    model does not: the gate/up GEMMs of 2 x intermediate columns."""
    steps = [make_step(model, *step_inputs(model, setting, device), setting) for setting in run.settings]
    with kernelrl.record() as rec:
        for step in steps:
            step()
    shapes = rec.shapes()
    if fused:
        with tempfile.TemporaryDirectory() as empty:
            Path(empty, "manifest.json").write_text(json.dumps({"shapes": {}, "kernels": {}, "env": {}}))
            kernelrl.patch(model, kernelrl.load_library(empty), filter=lambda _name, module: fusable(module),
                           fuse_mlp=True)
            try:
                with kernelrl.record() as rec_fused:
                    for step in steps:
                        step()
            finally:
                kernelrl.unpatch(model)
        plain = {_shape_key(s) for s in shapes}
        shapes += [s for s in rec_fused.shapes() if _shape_key(s) not in plain]
    write_shapes(path, shapes, sorted({str(p.device) for p in model.parameters()}))
    return shapes


def _shape_key(shape: dict) -> tuple:
    return tuple(shape[name] for name in ("m", "n", "k", "dtype", "layout", "bias", "batch"))


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


@dataclass(frozen=True)
class Method:
    """One arm of the comparison: the model as it is or patched (`kernelrl`, `+fused`: the gated MLPs' gate and up as
    one GEMM with SwiGLU in its epilogue), eager or under torch.compile in `compile_mode`."""
    name: str
    compile_mode: str | None
    patched: bool
    fused: bool


COMPILE_MODES = {"compile": "max-autotune-no-cudagraphs", "compile_default": "default"}
METHODS = [f"{head}{tail}" for head in ("", "compile+", "compile_default+") for tail in ("kernelrl", "kernelrl+fused")
           ] + ["eager", *COMPILE_MODES]


def parse_method(name: str) -> Method:
    """`eager`, `kernelrl`, `kernelrl+fused`, `compile`, `compile+kernelrl`, `compile+kernelrl+fused`, and the same
    with `compile_default` (torch.compile's default mode)."""
    parts = name.split("+")
    mode = COMPILE_MODES.get(parts[0])
    rest = parts[1:] if mode or parts[0] == "eager" else parts
    if (parts[0] == "eager" and rest) or rest not in ([], ["kernelrl"], ["kernelrl", "fused"]):
        raise ValueError(f"unknown method {name!r}; these exist: {', '.join(sorted(METHODS))}")
    return Method(name, mode, bool(rest), rest == ["kernelrl", "fused"])


def arm_model(model, method: Method, lib):
    """The module a method runs: the model itself (eager), else a copy of it (the same weights), patched and/or
    compiled, so that every arm stays as it is across the interleaved rounds (no patching or recompiling between
    them)."""
    if method.name == "eager":
        return model
    arm = copy.deepcopy(model)
    if method.patched:
        kernelrl.patch(arm, lib, fuse_mlp=method.fused)
    return torch.compile(arm, mode=method.compile_mode) if method.compile_mode else arm


def e2e(model, run: Run, device: str, library_path: str | None, methods: list[str], out: Path | None = None,
        command: str = "", rows: list[dict] | None = None) -> list[dict]:
    """Rows per (method, setting), after `rows` (an earlier run's); with `out`, the CSV and table are rewritten
    after every row (a run cut short by a time limit keeps what it measured). All methods of one process are timed
    in interleaved rounds with the same inputs and KV cache, so a shared, noisy machine moves them alike; compiled
    and uncompiled arms beside each other too. A method that raises in a setting is a row with its error and ends
    that method (a CUDA error leaves the context unusable: run torch.compile's methods in their own process, with
    --append)."""
    env = collect({"mode": "e2e"})
    rows = list(rows or [])
    lib = kernelrl.load_library(library_path) if library_path else None
    wanted = [parse_method(m) for m in methods]
    arms = {m.name: arm_model(model, m, lib) for m in wanted if not m.patched or lib is not None}
    layers: list[dict] = []

    def save(row):
        rows.append(row)
        print(row, flush=True)
        if out is not None:
            write(rows, out, command)

    for setting in run.settings:
        if not arms:
            break
        measured, failed = interleaved(arms, model, lib, setting, run, device)
        for name in list(arms):
            if name in failed:
                save(_failed(setting, name, failed[name], env))
                del arms[name]
            else:
                save(_row(setting, name, *measured[name], env))
        if lib is not None and out is not None and any(parse_method(a).patched for a in arms):
            layers += layer_routes(model, lib, setting)
            write_layers(layers, out)
    return rows


def interleaved(arms: dict, base, lib, setting: Setting, run: Run, device: str) -> tuple[dict, dict]:
    """Per arm (tokens/s, GEMM share, kernel calls, fallback calls, fused / unfused gate-up calls) from rounds that
    alternate the arms' order, and the arms that raised (their exception): these are left out of the rounds."""
    ids, cache = step_inputs(base, setting, device)
    steps = {name: make_step(arm, ids, cache, setting) for name, arm in arms.items()}
    n_steps = steps_of(setting, run)
    failed: dict[str, Exception] = {}
    for name, step in steps.items():
        try:
            step()  # warm-up: the library decides its shapes, torch.compile compiles
        except Exception as exc:  # noqa: BLE001 - the arm's row says it; the others go on
            failed[name] = exc
    live = [name for name in steps if name not in failed]
    times: dict[str, list[float]] = {name: [] for name in live}
    counts = {name: Counter() for name in live}
    for r in range(run.rounds):
        for name in (live if r % 2 == 0 else live[::-1]):
            before = library_counts(lib)
            times[name].append(timed(steps[name], n_steps, device))
            counts[name].update(library_counts(lib) - before)
    tokens = setting.batch * setting.new_tokens * n_steps
    measured = {}
    for name in live:
        patched = parse_method(name).patched
        c = counts[name]
        measured[name] = (round(tokens / statistics.median(times[name]), 2), gemm_share(steps[name], device),
                          c["calls"] if patched else "", c["fallbacks"] if patched else "",
                          f"{c['fused']} / {c['unfused']}" if parse_method(name).fused else "")
    return measured, failed


def library_counts(lib) -> Counter:
    """The library's counters so far: kernel calls and fallbacks through linear(), fused and unfused gate/up calls."""
    total: Counter = Counter()
    if lib is None:
        return total
    for now in lib.stats().values():
        total.update(calls=now["calls"], fallbacks=now["fallbacks"])
    for fused_n, unfused_n in lib.fused_calls.values():
        total.update(fused=fused_n, unfused=unfused_n)
    return total


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
    return _row(setting, method, None, None, "", "", "", env) | {"error": error}


def _row(setting: Setting, method: str, tps, share, calls, fallbacks, fused, env: dict) -> dict:
    return {"setting": setting.name, "batch": setting.batch, "method": method, "tokens_per_s": tps,
            "gemm_share": share, "kernel_calls": calls, "fallback_calls": fallbacks, "error": "",
            "gpu": env.get("gpu"), "torch": env.get("torch"), "date": env.get("date"), "fused_calls": fused}


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
        writer = csv.DictWriter(f, fieldnames=list(_row(Setting("", 0, 0, 0), "", None, None, "", "", "", {})))
        writer.writeheader()
        writer.writerows(rows)
    lines = [f"# Llama decoder end to end\n\n- command: `{command}`\n- environment: {collect({'mode': 'e2e'})}\n",
             "| setting | method | tokens/s | vs eager | vs unpatched | GEMM share | kernel / fallback calls | "
             "fused / unfused gate-up calls |",
             "|---|---|---:|---:|---:|---:|---|---|"]
    speed = {(r["setting"], r["method"]): r["tokens_per_s"] for r in rows if r["tokens_per_s"]}
    for r in rows:
        if r.get("error"):
            lines.append(f"| {r['setting']} | {r['method']} | failed: {r['error'][:120]} | | | | | |")
            continue
        method = parse_method(r["method"])
        unpatched = {mode: name for name, mode in COMPILE_MODES.items()}.get(method.compile_mode, "eager")
        ratios = [f"{r['tokens_per_s'] / speed[(r['setting'], base)]:.3f}" if (r["setting"], base) in speed else "-"
                  for base in ("eager", unpatched)]
        share = f"{r['gemm_share']:.2f}" if isinstance(r["gemm_share"], float) else "-"
        calls = f"{r['kernel_calls']} / {r['fallback_calls']}" if method.patched else ""
        lines.append(f"| {r['setting']} | {r['method']} | {r['tokens_per_s']:.1f} | {ratios[0]} | "
                     f"{ratios[1] if method.patched else ''} | {share} | {calls} | {r.get('fused_calls') or ''} |")
    (out / "e2e.md").write_text("\n".join(lines) + "\n")


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("step", choices=["record", "e2e"])
    ap.add_argument("--out", type=Path, required=True)
    ap.add_argument("--library", default=None, help="e2e: a tuned library folder (kernelrl tune --out)")
    ap.add_argument("--methods", default="eager,kernelrl,compile",
                    help=f"timed in interleaved rounds, one process (of {', '.join(sorted(METHODS))}); "
                         f"torch.compile's in a process of their own, as its autotuning can end the CUDA context")
    ap.add_argument("--append", action="store_true",
                    help="keep out/e2e.csv's rows of other methods (one method per process, e.g. torch.compile)")
    ap.add_argument("--fused", action="store_true",
                    help="record: also the gate/up GEMMs of the fused MLP (methods kernelrl+fused) to tune them")
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
        shapes = record(model, run, args.device, args.out / "shapes.json", fused=args.fused)
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

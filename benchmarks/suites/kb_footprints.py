"""Each KernelBench task's memory footprint, computed on the CPU from shapes alone, and the worker's memory plan for
it (kernelrl/kernelbench/memory_plan.py) on a card of a given size; then the smallest card on which every task runs.

    python benchmarks/suites/kb_footprints.py --kernelbench PATH [--levels 1 2 3] [--card-gib 79] [--host-gib 128]

PATH is a KernelBench clone (tasks under PATH/KernelBench/level{1,2,3}). Nothing is allocated: get_inputs(),
get_init_inputs(), the Model and its forward run on torch's meta device (a model whose constructor needs real
values is built on the CPU and moved to meta). A torch function mode counts the bytes of the tensors each torch
call returns until they are freed, so the reference's temporaries and get_inputs' own are the peak live bytes beyond
the inputs and the output: an estimate (a kernel's internal workspace, a reduced loss's elementwise buffer, cuDNN's,
is not seen); the worker measures the real ones, and its plan uses those. Where the forward fails on meta, the
task's line says so and its plan counts the inputs alone."""

from __future__ import annotations

import argparse
import importlib.util
import io
import json
import sys
import time
import warnings
import weakref
from contextlib import redirect_stderr, redirect_stdout
from pathlib import Path

import torch
from torch.overrides import TorchFunctionMode
from torch.utils._pytree import tree_leaves

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT))

from kernelrl.kernelbench import memory_plan as mp  # noqa: E402
from kernelrl.kernelbench.inputs import redraw_bytes  # noqa: E402

GIB = mp.GIB


class LiveBytes(TorchFunctionMode):
    """The bytes of storages the torch calls under it allocate, live and at their peak: each storage once, however
    many views of it; storages that existed before (`known`: weights, inputs) never. Counted at the level of torch's
    Python API (F.instance_norm, torch.relu, x * y), as the code under it sees them: a fused kernel's output alone,
    as on a GPU, not the meta device's decomposition of it."""

    def __init__(self, known=()):
        super().__init__()
        self.live = self.peak = 0
        self.refs: dict[int, list[int]] = {}  # storage -> [tensors seen alive, bytes]
        self.known = {t.untyped_storage()._cdata for t in tree_leaves(list(known)) if isinstance(t, torch.Tensor)}

    def __torch_function__(self, func, types, args=(), kwargs=None):
        out = func(*args, **(kwargs or {}))
        for t in tree_leaves(out):
            if not isinstance(t, torch.Tensor):
                continue
            key = t.untyped_storage()._cdata
            if key in self.known:
                continue
            if key in self.refs:
                self.refs[key][0] += 1
            else:
                self.refs[key] = [1, t.untyped_storage().nbytes()]
                self.live += self.refs[key][1]
            weakref.finalize(t, self._drop, key)
        self.peak = max(self.peak, self.live)
        return out

    def _drop(self, key):
        entry = self.refs[key]
        entry[0] -= 1
        if entry[0] == 0:
            self.live -= entry[1]
            del self.refs[key]


def nbytes(x) -> int:
    return sum(t.numel() * t.element_size() for t in tree_leaves(x) if isinstance(t, torch.Tensor))


def load(path: Path):
    spec = importlib.util.spec_from_file_location(f"kb_fp_{path.parent.name}_{path.stem}", path)
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


def measure(path: Path) -> dict:
    """{input_bytes, output_bytes, temporaries, draw_extra, weights, note}: note says what could not be computed."""
    row = {"input_bytes": 0, "output_bytes": 0, "temporaries": 0, "draw_extra": 0, "weights": 0, "note": ""}
    sink = io.StringIO()
    with warnings.catch_warnings(), redirect_stdout(sink), redirect_stderr(sink):
        warnings.simplefilter("ignore")
        try:
            mod = load(path)
        except Exception as exc:
            row["note"] = f"not loaded: {type(exc).__name__}: {exc}"[:160]
            return row
        torch.manual_seed(0)
        try:
            with torch.device("meta"):
                init = list(mod.get_init_inputs())
                draw = LiveBytes()
                with draw:
                    inputs = list(mod.get_inputs())
        except Exception as exc:
            row["note"] = f"inputs not computed on meta: {type(exc).__name__}: {exc}"[:160]
            return row
        row["input_bytes"] = nbytes(inputs)
        row["draw_extra"] = max(draw.peak - row["input_bytes"], redraw_bytes(inputs))
        try:
            with torch.device("meta"):
                model = mod.Model(*init)
        except Exception:
            try:  # a constructor that needs values (.item() on a tensor it made): built on the CPU, then moved
                init_cpu = list(mod.get_init_inputs())
                model = mod.Model(*init_cpu).to("meta")
            except Exception as exc:
                row["note"] = f"model not built: {type(exc).__name__}: {exc}"[:160]
                return row
        row["weights"] = sum(t.numel() * t.element_size() for t in list(model.parameters()) + list(model.buffers()))
        tracker = LiveBytes(known=[*inputs, *model.parameters(), *model.buffers()])
        try:
            with torch.no_grad(), tracker:
                out = model(*inputs)
        except Exception as exc:
            row["note"] = f"outputs not computed on meta ({type(exc).__name__}: {str(exc)[:100]}): inputs only"
            return row
        row["output_bytes"] = nbytes(out)
        row["temporaries"] = max(0, tracker.peak - row["output_bytes"])
    return row


def short(plan: mp.Plan) -> str:
    """The plan's spills and reductions in a few words."""
    parts = []
    if not plan.keep_baselines:
        parts.append("baselines per pair")
    if plan.prev_ref_on_host:
        parts.append("prev ref@host")
    if plan.pristine_on_host:
        parts.append("pristine@host")
    if plan.pool_on_host:
        parts.append("pool@host")
    if plan.held_outputs < plan.full_held:
        parts.append(f"held {plan.held_outputs}/{plan.full_held}")
    if plan.input_sets < plan.asked_sets:
        parts.append(f"sets {plan.input_sets}/{plan.asked_sets}")
    parts += [f"no {b}" for b in plan.skipped_baselines]
    return ", ".join(parts) or "full"


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--kernelbench", required=True, help="a KernelBench clone (tasks under KernelBench/levelN)")
    ap.add_argument("--levels", type=int, nargs="*", default=[1, 2, 3])
    ap.add_argument("--card-gib", type=float, default=79.0, help="the card's usable memory (an 80 GB H100: ~79)")
    ap.add_argument("--host-gib", type=float, default=128.0, help="the host's available memory")
    ap.add_argument("--input-sets", type=int, default=3)
    ap.add_argument("--top", type=int, default=30, help="print the plans of this many largest tasks (0: all)")
    ap.add_argument("--json", default=None, help="write every task's numbers and plan here")
    args = ap.parse_args(argv)

    root = Path(args.kernelbench)
    root = root / "KernelBench" if (root / "KernelBench").is_dir() else root
    host = int(args.host_gib * GIB)
    card = int(args.card_gib * GIB)
    rows = []
    for level in args.levels:
        for path in sorted((root / f"level{level}").glob("*.py"), key=lambda p: (len(p.stem.split("_")[0]), p.stem)):
            t0 = time.perf_counter()
            row = measure(path)
            row.update(level=level, task=path.stem, seconds=round(time.perf_counter() - t0, 2))
            fp = mp.Footprint(row["input_bytes"], row["output_bytes"], row["temporaries"], row["draw_extra"],
                              row["weights"])
            free = card - mp.DEVICE_OVERHEAD - fp.weights
            plan = mp.plan(fp, free, host, input_sets=args.input_sets)
            row.update(fp=fp, plan=plan, min_card=mp.min_device(fp, host, args.input_sets) + fp.weights
                       + mp.DEVICE_OVERHEAD, full_card=mp.min_device(fp, host, args.input_sets, reductions=False)
                       + fp.weights + mp.DEVICE_OVERHEAD)
            rows.append(row)

    rows.sort(key=lambda r: -r["min_card"])
    shown = rows if args.top == 0 else rows[:args.top]
    g = lambda n: f"{n / GIB:6.2f}"  # noqa: E731
    print(f"{len(rows)} tasks; plans for a {args.card_gib:g} GiB card ({g(card - mp.DEVICE_OVERHEAD).strip()} GiB "
          f"free before the model's weights), {args.host_gib:g} GiB host. GiB: I inputs, O output, T the "
          f"reference's temporaries (estimated), W weights; need: the plan's peak with its margin; "
          f"card: the smallest card it runs on (with reductions / full plan)")
    print(f"{'task':52s} {'I':>6s} {'O':>6s} {'T':>6s} {'W':>6s} {'need':>6s} {'card':>6s} {'full':>6s}  plan")
    for r in shown:
        plan = r["plan"]
        what = short(plan) if plan.fits else f"TOO LARGE: {plan.refusal()}"
        print(f"L{r['level']} {r['task'][:49]:49s} {g(r['input_bytes'])} {g(r['output_bytes'])} {g(r['temporaries'])} "
              f"{g(r['weights'])} {g(plan.need)} {g(r['min_card'])} {g(r['full_card'])}  {what}"
              + (f"  [{r['note']}]" if r["note"] else ""))
    notes = [r for r in rows if r["note"]]
    if notes:
        print(f"\n{len(notes)} task(s) not fully computed on meta:")
        for r in notes:
            print(f"  L{r['level']} {r['task']}: {r['note']}")
    unknown = [r for r in rows if r["note"] and not r["note"].startswith("outputs not")]  # no footprint at all
    rows = [r for r in rows if r not in unknown]
    refused = [r for r in rows if not r["plan"].fits]
    reduced = [r for r in rows if r["plan"].fits and r["plan"].reductions()]
    spilled = [r for r in rows if r["plan"].fits and not r["plan"].reductions() and r["plan"].spills()]
    old = [r for r in rows if 8 * r["fp"].total + r["fp"].temporaries > card - mp.DEVICE_OVERHEAD - r["fp"].weights]
    print(f"\non {args.card_gib:g} GiB: {len(rows) - len(refused)} of {len(rows)} tasks fit ({len(spilled)} with "
          f"spills only, {len(reduced)} with a reduced check), {len(refused)} too large; the former bound (8 x "
          f"footprint + temporaries) refused {len(old)}"
          + (f"; {len(unknown)} not computed (above)" if unknown else ""))
    best = max(rows, key=lambda r: r["min_card"])
    best_full = max(rows, key=lambda r: r["full_card"])
    print(f"smallest card on which every task runs: {best['min_card'] / GIB:.1f} GiB usable, set by L{best['level']} "
          f"{best['task']}; with the full plan (no reduction): {best_full['full_card'] / GIB:.1f} GiB, set by "
          f"L{best_full['level']} {best_full['task']}")
    if args.json:
        out = [{k: v for k, v in r.items() if k not in ("fp", "plan")} | {"plan": r["plan"].summary()}
               for r in rows + unknown]
        Path(args.json).write_text(json.dumps(out, indent=1, default=str))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())

"""The tuner: with no LLM at all, search the kernel spaces for each shape on the user's GPU.

Per shape: every point of the chosen families that can run it is ranked by the cost model; the best `top_k`, plus
the winners of already-tuned neighbouring shapes, are built (in parallel, cached) and measured in the evaluator's
device mode, interleaved with torch.matmul as the yardstick. Every measurement lands in the database as it is taken,
so a later run resumes where this one stopped; `budget_minutes` stops measuring new batches (a batch runs every
round, screening, refinement and confirmation, before the next starts), and past it a batch the database holds whole
is still read back, so a run over a finished run's database writes the same library whatever its budget. The fastest
verified kernel of each shape goes into the tuned library (see kernelrl.library)."""

from __future__ import annotations

import dataclasses
import functools
import json
import math
import time
from dataclasses import dataclass, field
from pathlib import Path

from kernelrl.build.builder import BuildRequest, LocalBuilder
from kernelrl.build.toolchain import Toolchain
from kernelrl.db.database import Database
from kernelrl.jobs.measure import BenchConfig, BenchError, db_gpu, default_db, require_gpu, run_bench
from kernelrl.library import export, policy
from kernelrl.library.policy import LT_FALLBACKS, LT_LAYOUT, YARDSTICK
from kernelrl.run.methods import LT_WORKSPACE_BYTES, lt_cache_key
from kernelrl.run.runner import RunSettings
from kernelrl.space import SPACES, Variant
from kernelrl.space.learned import LearnError, learn, variants_by_name
from kernelrl.space.model import rank
from kernelrl.workloads.hgemm import GemmProblem

WORTH_MEASURING = 2.0  # keep points the model predicts within this factor of its best for the shape


@dataclass
class TuneConfig:
    problems: list[GemmProblem]
    families: list[str]
    out: Path
    top_k: int = 9
    neighbours: int = 2
    refine: int = 0  # a second round: up to this many one-step neighbours of each shape's winner (0: none)
    batch: int = 100  # shapes per worker run: fewer spawns; neighbours still come from earlier batches
    budget_minutes: float | None = None
    settings: RunSettings = field(default_factory=lambda: RunSettings(rounds=5))
    lt_fallback: bool = True  # also measure cuBLASLt (autotuned, the shape's layout) as a fallback the library calls
    db_path: Path | None = None
    arch: str | None = None
    runner: str = "local"
    command: str = ""
    ray_address: str | None = None
    learn_from: str | None = None  # measurements to correct the cost model with (kernelrl/space/learned.py)
    # A kernel must beat the fallback by more than this factor to be dispatched. Gains under 1 % at tuning time were
    # a coin toss when the library was measured again (benchmarks/results/h200/summary.md, "winner's curse").
    min_gain: float = 1.01
    # The winner's curse: the fastest of ~10 noisy times is biased low. Each shape's best `confirm` candidates are
    # measured again beside both fallbacks, in a fresh interleaved run of `confirm_rounds` rounds, and that run
    # picks (0: the screening run picks).
    confirm: int = 3
    confirm_rounds: int = 15
    # Extend this library: the shapes it holds that this run does not tune are kept as they are (with their
    # measurements), and a shape this run tunes measures the base's kernel beside its new short list.
    base: Path | None = None
    # Write the library from what the database holds for this GPU (e.g. "NVIDIA H200"), measuring nothing: a
    # machine without it (building for its arch) writes what a run there would; shapes the database lacks stay untuned.
    stored_gpu: str | None = None

    @functools.cached_property
    def base_library(self) -> "BaseLibrary | None":
        return BaseLibrary.read(self.base) if self.base else None

    def source(self, variant: Variant) -> str:
        """The text a candidate is built from: a base library's kernel as the library holds it (its generator may
        have changed since), any other point as its family renders it."""
        base = self.base_library
        return base.sources[variant.name] if base and variant.name in base.sources else variant.source()

    @functools.cached_property
    def correction(self):
        """The learned correction, fitted once per run (so the candidate set is still known in advance)."""
        if not self.learn_from:
            return None
        try:
            return learn(self.learn_from, self.problems[0].acc if self.problems else "fp32")
        except LearnError as exc:
            raise BenchError(str(exc)) from None


@dataclass
class ShapeResult:
    problem: GemmProblem
    best: Variant | None
    best_us: float | None
    yardstick_us: float | None
    measured: dict[str, float]
    failed: dict[str, str]
    lt_algo: str | None = None  # the autotuned cuBLASLt algorithm (hex), when that is the faster fallback
    min_gain: float = 1.0  # the kernel is dispatched only when fallback time / kernel time exceeds this
    # What the screening run said, when a confirmation run picked: its winner, its time and the fallback's
    screening: dict | None = None
    carried_from: str | None = None  # a base library this shape was kept from, as it was (not measured in this run)
    # What the library this run wrote runs here (`export.routes` of its folder, set once it is written): a kernel
    # the tuner dispatched but that did not build, or a cuBLASLt fallback without the shim, runs something else
    route: policy.Route | None = None

    @property
    def fallback(self) -> str:
        """What the library runs when no tuned kernel wins (kernelrl/library/policy.py)."""
        return policy.fallback(self.problem.layout, self.measured, self.lt_algo)

    @property
    def fallback_us(self) -> float | None:
        return self.measured.get(self.fallback)

    @property
    def decision(self) -> policy.Route:
        """The tuner's answer, which the manifest records (`policy.decide`): the best kernel where it beats the
        fallback by more than the margin, else that fallback."""
        return policy.decide(self.problem.layout, self.best.name if self.best else None, self.best_us,
                             self.measured, self.lt_algo, self.min_gain)

    @property
    def runs(self) -> policy.Route:
        """What the library runs here: the written library's route (`route`); before it is written, the decision."""
        return self.route or self.decision

    @property
    def uses_kernel(self) -> bool:
        """Whether the library runs this shape's tuned kernel rather than a fallback."""
        return self.runs.kind == policy.KERNEL

    @property
    def library_us(self) -> float | None:
        """The tuning run's time of what the library runs here."""
        runs = self.runs
        return self.best_us if runs.kind == policy.KERNEL else self.measured.get(runs.name or YARDSTICK)


@dataclass
class BaseLibrary:
    """A tuned library a run extends (`kernelrl tune --base`): its manifest and its kernels' sources."""
    path: Path
    manifest: dict
    sources: dict[str, str]

    @classmethod
    def read(cls, path: Path) -> "BaseLibrary":
        manifest = export.read_manifest(path)
        sources = {}
        for name, kernel in manifest.get("kernels", {}).items():
            file = Path(path) / kernel.get("source", f"kernels/{name}.cu")
            if not file.is_file():
                raise BenchError(f"{path}: kernel {name}'s source {file} is missing; pass a library folder as "
                                 f"kernelrl tune wrote it (manifest.json beside kernels/)")
            sources[name] = file.read_text()
        return cls(Path(path), manifest, sources)

    def _entry(self, problem: GemmProblem) -> dict | None:
        return self.manifest["shapes"].get(export.shape_key(problem.m, problem.n, problem.k, problem.acc,
                                                            problem.dtype, problem.layout))

    def kernel_for(self, problem: GemmProblem) -> Variant | None:
        """The kernel the base dispatches for this shape (None where it runs a fallback)."""
        entry = self._entry(problem)
        if entry and entry.get("dispatch") == "kernel" and entry.get("family") in SPACES and entry.get("params"):
            variant = Variant.from_dict(entry)
            return variant if variant.name in self.sources else None
        return None

    def carried(self, tuned: list[GemmProblem]) -> list[ShapeResult]:
        """Every shape of the base this run does not tune, as the base measured and decided it."""
        skip = {export.shape_key(p.m, p.n, p.k, p.acc, p.dtype, p.layout) for p in tuned}
        origin = f"{self.path} ({self.manifest.get('created', 'undated')})"
        out = []
        for key, e in self.manifest["shapes"].items():
            if key in skip:
                continue
            problem = GemmProblem(e["m"], e["n"], e["k"], e["acc"], e.get("layout", "nn"), e.get("dtype", "fp16"))
            best = (Variant.from_dict(e) if e.get("kernel") and e.get("family") in SPACES and e.get("params")
                    else None)
            fallback = e.get("fallback") if isinstance(e.get("fallback"), dict) else {}
            out.append(ShapeResult(problem, best, e.get("time_us"), e.get("yardstick_us"), e.get("measured_us") or {},
                                   e.get("failed") or {}, lt_algo=fallback.get("algo"), screening=e.get("screening"),
                                   carried_from=origin))
        return out


def log_distance(a: GemmProblem, b: GemmProblem) -> float:
    return sum(abs(math.log2(x) - math.log2(y)) for x, y in ((a.m, b.m), (a.n, b.n), (a.k, b.k)))


def shortlist(problem: GemmProblem, families: list[str], top_k: int, winners: dict[GemmProblem, Variant],
              neighbours: int, correction=None) -> list[Variant]:
    """The model's top_k over all families, then up to `neighbours` winners of the nearest tuned shapes.

    The model knows tiles, not schedules, so many points tie: the list is kept diverse (each family gets its share,
    at most two points per family and tile, one per tile and split/cluster shape) before it is filled up in plain
    model order."""
    points = [v for fam in families for v in SPACES[fam].points(problem.acc)]
    scored = rank(points, problem, correction=correction)
    # A family's share is only worth measuring when the model gives it a chance: far slower points are dropped.
    ranked = [v for t, v in scored if t <= WORTH_MEASURING * scored[0][0]] if scored else []
    present = {v.family for v in ranked}  # families with a point worth measuring here share the list
    quota = max(1, math.ceil(top_k / max(1, len(present))))
    per_family: dict[str, int] = {}
    per_tile: dict[tuple, int] = {}
    chosen: list[Variant] = []
    shapes_seen: set[tuple] = set()
    for v in ranked:
        r = SPACES[v.family].resources(v)
        tile = (v.family, r["tile"])
        shape = (*tile, r.get("split_k", 1), r.get("cluster", (1, 1)), r.get("schedule"), r.get("split_reduce"))
        if len(chosen) >= top_k or per_family.get(v.family, 0) >= quota or per_tile.get(tile, 0) >= 2 \
                or shape in shapes_seen:
            continue
        chosen.append(v)
        shapes_seen.add(shape)
        per_family[v.family] = per_family.get(v.family, 0) + 1
        per_tile[tile] = per_tile.get(tile, 0) + 1
    chosen += [v for v in ranked if v not in chosen][:top_k - len(chosen)]
    near = sorted(((log_distance(problem, p), v.name, v) for p, v in winners.items() if v.acc == problem.acc),
                  key=lambda t: (t[0], t[1]))
    extra = 0
    for _, _, variant in near:
        if extra >= neighbours:
            break
        if variant not in chosen and SPACES[variant.family].runs(variant, problem) is None:
            chosen.append(variant)
            extra += 1
    return chosen


def _check_families(families: list[str]) -> None:
    unknown = [f for f in families if f not in SPACES]
    if unknown:
        raise BenchError(f"unknown kernel family {', '.join(unknown)}: choose from {', '.join(sorted(SPACES))}")


def candidate_set(cfg: TuneConfig) -> dict[str, Variant]:
    """Every variant a tuning run of these shapes can build. Neighbours' winners come from other shapes' shortlists,
    so the union of the model's shortlists is the whole set, known before anything is measured."""
    _check_families(cfg.families)
    found: dict[str, Variant] = {}
    for problem in cfg.problems:
        for v in _with_base(cfg, problem, shortlist(problem, cfg.families, cfg.top_k, {}, 0, cfg.correction)):
            found.setdefault(v.name, v)
    return found


def _with_base(cfg: TuneConfig, problem: GemmProblem, short_list: list[Variant]) -> list[Variant]:
    """A short list with the base library's kernel for the shape added (measured beside the new candidates)."""
    base = cfg.base_library.kernel_for(problem) if cfg.base_library else None
    if base is None or base in short_list or SPACES[base.family].runs(base, problem) is not None:
        return short_list
    return [*short_list, base]


def refinements(winner: Variant, problem: GemmProblem, count: int, correction=None) -> list[Variant]:
    """Up to `count` one-step neighbours of a shape's winner that can run the shape, the model's favourites first."""
    space = SPACES[winner.family]
    near = [v for v in space.neighbours(winner) if space.runs(v, problem) is None]
    return [v for _, v in rank(near, problem, correction=correction)][:count]


def refine_set(cfg: TuneConfig, winners: dict[GemmProblem, Variant]) -> dict[str, Variant]:
    """Every variant a refinement round around these winners can build."""
    found: dict[str, Variant] = {}
    for problem, winner in winners.items():
        for v in refinements(winner, problem, cfg.refine, cfg.correction):
            found.setdefault(v.name, v)
    return found


def manifest_winners(out: Path, acc: str) -> dict[GemmProblem, Variant]:
    """The per-shape winners recorded in an existing library's manifest (empty when there is none)."""
    path = Path(out) / "manifest.json"
    if not path.is_file():
        return {}
    shapes = json.loads(path.read_text()).get("shapes", {})
    return {GemmProblem(e["m"], e["n"], e["k"], acc=e["acc"]): Variant.from_dict(e)
            for e in shapes.values() if e.get("family") in SPACES and e.get("params") and e["acc"] == acc}


def prebuild(cfg: TuneConfig, ui, workers: int | None = None, builder=None) -> list:
    """Compile the whole candidate set into the build cache, all at once (no GPU needed with an explicit arch).

    One wide parallel build beats per-batch builds on a many-core box, and a cache filled on a build machine can be
    carried to the GPU machine (the cache key does not depend on where the headers are installed)."""
    builder = builder or LocalBuilder(Toolchain.discover(arch=cfg.arch))  # a missing nvcc or arch fails first
    variants = candidate_set(cfg)
    if cfg.refine:  # the refinement round's candidates, around the winners of the library already in cfg.out
        wanted = set(cfg.problems)
        variants.update(refine_set(cfg, {p: v for p, v in manifest_winners(cfg.out, cfg.problems[0].acc).items()
                                          if p in wanted}) if cfg.problems else {})
    ui.stage(f"building {len(variants)} candidates for {len(cfg.problems)} shapes")
    requests = [BuildRequest(cfg.source(v), name=name) for name, v in sorted(variants.items())]
    return builder.build_many(requests, workers=workers, on_done=ui.build_done)


def tune(cfg: TuneConfig, ui) -> list[ShapeResult]:
    _check_families(cfg.families)
    started = time.perf_counter()
    if cfg.runner == "local":
        if cfg.stored_gpu is None:
            require_gpu(cfg.runner)  # before an hour of compiles, not after
        # One wide parallel build of everything the run can need (cache hits cost nothing): per-batch builds would
        # leave most cores idle while a handful of CUTLASS kernels compile.
        prebuild(cfg, ui)
    env: dict = {}
    results: list[ShapeResult] = []
    # Cheapest shapes first: under a budget the most shapes get tuned, and the small ones are where the libraries
    # leave the most. Neighbours stay close in this order too (similar FLOP counts, similar tiles).
    problems = sorted(cfg.problems, key=lambda p: (p.flops, p.m, p.n, p.k))
    untuned = 0
    for start in range(0, len(problems), cfg.batch):
        batch = problems[start:start + cfg.batch]
        # Past the budget a batch is only read back, where the database holds all of it: a resumed run writes the
        # library its measurements make, not one cut off by a budget spent on reading them.
        past_budget = bool(results) and _over_budget(cfg, started)
        try:
            # (with stored_gpu every batch is read only: the bench's reads_only)
            screened, env = _tune_batch(cfg, ui, batch, results, env, stored_only=past_budget)
        except _NotStored:
            # Untuned shapes dispatch to torch.matmul, not to a neighbour's kernel that was never measured on them.
            screened, untuned = [ShapeResult(p, None, None, None, {}, {}) for p in batch], untuned + len(batch)
        results += screened
    if untuned and cfg.stored_gpu:
        ui.stage(f"{untuned} of {len(problems)} shapes not in the database for {cfg.stored_gpu} (every round): left "
                 "untuned; tune them on that GPU, or pass the options the run had (the kernel sources and the "
                 "cost model make the short lists: a database of another kernelrl version holds other candidates)")
    elif untuned:
        ui.stage(f"budget of {cfg.budget_minutes} min spent: {len(problems) - untuned} of {len(problems)} shapes "
                 "tuned; run again to resume")
    if cfg.lt_fallback:
        _attach_lt_algos(cfg, results, env)
    extra = {}
    if cfg.base_library:  # the shapes this run did not tune (or its budget did not reach), as the base had them
        tuned: list[ShapeResult] = []
        untouched: list[ShapeResult] = []
        for r in results:
            (tuned if r.best is not None or r.measured or r.failed else untouched).append(r)
        kept = cfg.base_library.carried([r.problem for r in tuned])
        held = {r.problem for r in kept}
        results = tuned + [r for r in untouched if r.problem not in held] + kept
        base = cfg.base_library.manifest
        extra["base"] = {"path": str(cfg.base), "created": base.get("created"), "env": base.get("env", {})}
    for r in results:
        r.min_gain = cfg.min_gain
    builder = None
    if cfg.runner == "local" and cfg.stored_gpu is None:  # the winners are in the build cache: copying costs no compile
        builder = LocalBuilder(Toolchain.discover(arch=cfg.arch))
    manifest = export.write_library(cfg.out, results, ui, builder=builder, env=env,
                                    sources=cfg.base_library.sources if cfg.base_library else None, extra=extra)
    # What is printed from here on is what the written library does (`library info` says the same)
    runs = export.routes(cfg.out, manifest)
    for r in results:
        p = r.problem
        r.route = runs[export.shape_key(p.m, p.n, p.k, p.acc, p.dtype, p.layout)]
    if cfg.stored_gpu:
        ui.stage(f"written without lib/ (measured on {cfg.stored_gpu}, not here): on that machine, "
                 f"kernelrl library build {cfg.out}")
    return results


class _NotStored(Exception):
    """A batch read back past the budget lacks measurements in the database: it stays untuned."""


def _tune_batch(cfg: TuneConfig, ui, batch: list[GemmProblem], earlier: list[ShapeResult], env: dict,
                stored_only: bool = False) -> tuple[list[ShapeResult], dict]:
    """One batch through every round (screening, refinement, confirmation) before the next batch starts, so a
    budget leaves each shape either tuned to the end or untouched: never a screening winner that was not
    re-measured. `earlier` (the batches before) gives the neighbours' winners. stored_only: measure nothing, and
    raise _NotStored where the database lacks any round of the batch."""
    winners = {r.problem: r.best for r in earlier if r.best is not None}
    lists = {p: _with_base(cfg, p, shortlist(p, cfg.families, cfg.top_k, winners, cfg.neighbours, cfg.correction))
             for p in batch}
    outcome = _measure(cfg, ui, lists, cfg.command, stored_only=stored_only)
    screened = [_pick(problem, outcome.rows, _own(lists[problem])) for problem in batch]
    if cfg.refine:
        screened = _refine(cfg, ui, screened, stored_only=stored_only)
    if cfg.confirm:
        screened = _confirm(cfg, ui, screened, stored_only=stored_only)
    return screened, outcome.env or env


def _refine(cfg: TuneConfig, ui, results: list[ShapeResult], stored_only: bool = False) -> list[ShapeResult]:
    """Second round: each winner measured again beside its one-step neighbours (and torch), in one run per batch, so
    the comparison that picks the kernel is always between times taken together. Resumable like the first; its rows
    have keys of their own, so they do not supersede the screening run's (kernelrl.db)."""
    def short_list(r: ShapeResult) -> list[Variant]:
        assert r.best is not None  # _measure_again lists only shapes with a winner
        return [r.best, *refinements(r.best, r.problem, cfg.refine, cfg.correction)]

    def merge(first: ShapeResult, again: ShapeResult) -> ShapeResult:
        again.measured = {**first.measured, **again.measured}
        again.failed = {**first.failed, **again.failed}
        return again
    return _measure_again(cfg, ui, results, "refine", short_list, merge, key_salt="refine", stored_only=stored_only)


def _confirm(cfg: TuneConfig, ui, results: list[ShapeResult], stored_only: bool = False) -> list[ShapeResult]:
    """Each shape's best few verified candidates, measured again beside both fallbacks in one fresh interleaved
    run per batch with more rounds (the same built libraries, under keys of their own, so nothing is resumed from
    the screening run), and that run picks. The screening run's view is kept beside it (`screening`), so how
    screening gains and confirmed gains agree can be read from the manifest."""
    names = variants_by_name(cfg.problems[0].acc) if cfg.problems else {}

    def short_list(r: ShapeResult) -> list[Variant]:
        ranked = sorted((t, n) for n, t in r.measured.items()
                        if n in names and n != YARDSTICK and n not in LT_FALLBACKS.values())
        assert r.best is not None  # _measure_again lists only shapes with a winner
        return [names[n] for _, n in ranked[:cfg.confirm]] or [r.best]

    def merge(first: ShapeResult, again: ShapeResult) -> ShapeResult:
        assert first.best is not None  # as short_list's
        again.screening = {"kernel": first.best.name, "time_us": first.best_us, "fallback": first.fallback,
                           "fallback_us": first.fallback_us}
        again.failed = {**first.failed, **again.failed}
        return again
    return _measure_again(cfg, ui, results, "confirm", short_list, merge,
                          key_salt=f"confirm{cfg.confirm_rounds}", rounds=cfg.confirm_rounds, stored_only=stored_only)


def _measure_again(cfg: TuneConfig, ui, results: list[ShapeResult], suffix: str, short_list, merge,
                   **measure_kw) -> list[ShapeResult]:
    """A later round over one batch's shapes that have a winner, in one run: `short_list(result)` names what each
    shape measures, `_pick` chooses among it, and `merge(first, again)` makes the shape's new result. `suffix`
    names the round in its command (resumed from the database like the first round)."""
    by_problem = {r.problem: r for r in results}
    lists = {r.problem: short_list(r) for r in results if r.best is not None}
    if lists:
        outcome = _measure(cfg, ui, lists, f"{cfg.command} ({suffix})", **measure_kw)
        for problem, short in lists.items():
            again = _pick(problem, outcome.rows, _own(short))
            if again.best is not None:
                by_problem[problem] = merge(by_problem[problem], again)
    return [by_problem[r.problem] for r in results]


def _over_budget(cfg: TuneConfig, started: float) -> bool:
    return cfg.budget_minutes is not None and time.perf_counter() - started > cfg.budget_minutes * 60


def _measure(cfg: TuneConfig, ui, lists: dict[GemmProblem, list[Variant]], command: str, key_salt: str = "",
             rounds: int | None = None, stored_only: bool = False):
    """One evaluator run: each shape's own short list beside the fallbacks, in device mode. A `key_salt` stores
    this run's results under keys of their own, so it measures afresh, on the same builds, what an earlier run with
    other settings measured. stored_only: nothing measured, the database's rows or _NotStored."""
    variants = {v.name: v for vs in lists.values() for v in vs}
    per_shape = {p: {v.name for v in vs} for p, vs in lists.items()}
    settings = dataclasses.replace(cfg.settings, rounds=rounds) if rounds else cfg.settings
    bench = BenchConfig(problems=list(lists), modes=["device"], baselines=_fallbacks(cfg), settings=settings,
                        sources={name: cfg.source(v) for name, v in variants.items()},
                        methods_for=lambda p: per_shape.get(p, set()), arch=cfg.arch, runner=cfg.runner,
                        ray_address=cfg.ray_address, command=command, key_salt=key_salt,
                        stored_only=stored_only, stored_gpu=cfg.stored_gpu,
                        db_path=cfg.db_path or default_db())
    outcome = run_bench(bench, ui)
    if outcome.unmeasured_tasks:
        raise _NotStored(command)
    return outcome


def _fallbacks(cfg: TuneConfig) -> list[str]:
    """torch (F.linear's product for nt), and cuBLASLt with a stored algorithm where the library can call it: fp16
    nn shapes (kernelrl.hgemm) and nt shapes (kernelrl.linear), each in its own layout."""
    lts = []
    if cfg.lt_fallback:
        lts = [LT_FALLBACKS[layout] for layout in ("nn", "nt")
               if any(p.layout == layout and policy.lt_callable(layout, p.dtype) for p in cfg.problems)]
    return [YARDSTICK, *lts]


def _attach_lt_algos(cfg: TuneConfig, results: list[ShapeResult], env: dict) -> None:
    """The cuBLASLt algorithm each shape's search chose (from the database), so the library can call it."""
    db = Database(cfg.db_path or default_db())
    try:
        algos = db.lt_algos(cfg.stored_gpu or db_gpu(cfg.runner, env))
    finally:
        db.close()
    for r in results:
        row = algos.get(lt_cache_key(r.problem, LT_LAYOUT[r.problem.layout], LT_WORKSPACE_BYTES))
        r.lt_algo = row["algo"] if row else None


def _own(short_list: list[Variant]) -> dict[str, Variant]:
    """A shape's own candidates by name. A shape is picked among these only: on a resumed run the database also
    holds the shape's times of other rounds' candidates, taken in other runs, which this comparison must not mix in."""
    return {v.name: v for v in short_list}


def _pick(problem: GemmProblem, rows: list[dict], variants: dict[str, Variant]) -> ShapeResult:
    want = (problem.m, problem.n, problem.k, problem.acc, problem.dtype, problem.layout)
    mine = [r for r in rows
            if (r["m"], r["n"], r["k"], r["acc"], r.get("dtype", "fp16"), r.get("layout", "nn")) == want]
    measured = {r["method"]: r["time_us_median"] for r in mine if r["verified"] and r["time_us_median"]}
    failed = {r["method"]: r["reason"] for r in mine if not r["verified"]}
    tuned = {name: t for name, t in measured.items() if name in variants}
    best_name = min(tuned, key=tuned.__getitem__) if tuned else ""  # "": none verified (names no variant)
    return ShapeResult(problem, variants.get(best_name), tuned.get(best_name), measured.get(YARDSTICK), measured,
                       failed)

"""The evolve loop: propose with the model, extract, screen, build, evaluate, repair once, remember, repeat.

One generation of a target sends `per_island` proposals per island (parent, inspirations and negatives drawn from
that island), all at once within the client's concurrency limit, then judges the replies in one batch: a batch
shares one GPU worker and one interleaved measurement. Candidates that fail to compile get one repair turn (the
compiler's errors sent back in the same conversation). Everything is written to the population database as it
happens: an interrupted run resumes with the next generation, and candidates accepted but not yet evaluated are
evaluated first."""

from __future__ import annotations

import random
import threading
import time
from concurrent.futures import Future, ThreadPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path

from kernelrl.evolve.budget import Budget
from kernelrl.evolve.client import Completion, LLMClient, LLMError
from kernelrl.evolve.copies import CopyIndex
from kernelrl.evolve.extract import extract
from kernelrl.evolve.population import Candidate, Population, safe_name, source_sha
from kernelrl.evolve.prompts import ContextFit, PromptBuilder
from kernelrl.evolve.tokens import make_counter
from kernelrl.evolve.sampling import pick_inspirations, pick_negatives, pick_parent
from kernelrl.evolve.target import Built, Evaluation, Target
from kernelrl.evolve.ui import EvolveUI
from kernelrl.evolve.usage import UsageLog
from kernelrl.evolve.verdicts import repairable
from kernelrl.harness.verdicts import Verdict


@dataclass
class EvolveConfig:
    islands: int = 4
    migrate_every: int = 3  # generations between migrations (0: never)
    per_island: int = 1  # proposals per island per generation
    top_k: int = 4  # earlier candidates shown per prompt, the parent included
    negatives: int = 4  # failed candidates shown per prompt
    explore: float = 0.1  # chance of a uniformly drawn parent
    repair: bool = True
    turns: int = 1  # attempts per trajectory: after each, its verdict is the next user message (repairs included)
    overlap: bool = False  # ask for the next generation while this one is judged (prompts one generation stale)
    generations: int | None = None  # stop after this many generations (per invocation)
    profile_sets: tuple[str, ...] = ()
    profile_top: int = 1  # new verified candidates profiled per generation, fastest first
    max_prompt_chars: int = 60000
    rng_seed: int | None = None


@dataclass
class Proposal:
    """One reply of this generation, kept in memory for the repair turn."""

    completion: Completion
    messages: list[dict]
    candidate: Candidate | None = None
    new: bool = False

    @property
    def member(self) -> Candidate:
        """The population member the reply became, for a proposal that has one (`new` ones do)."""
        assert self.candidate is not None
        return self.candidate


@dataclass
class EvolveSummary:
    generations: int = 0
    stop_reason: str = ""
    outcomes: dict[str, int] = field(default_factory=dict)  # verdict category → candidates judged in this run
    duplicates: int = 0
    copies: int = 0  # replies that renamed a kernel already in the population (evolve/copies.py)
    turns: list[dict] = field(default_factory=list)  # per turn: proposals, verified, best speedup so far
    call_failures: dict[str, int] = field(default_factory=dict)
    repairs: int = 0


class Evolver:
    def __init__(self, targets: list[Target], population: Population, client: LLMClient | None,
                 hardware_text: str, cfg: EvolveConfig | None = None, budget: Budget | None = None,
                 ui: EvolveUI | None = None, usage: UsageLog | None = None):
        self.targets = targets
        self.pop = population
        self.client = client
        self.cfg = cfg or EvolveConfig()
        self.budget = budget or (client.budget if client else Budget(max_calls=0))
        self.ui = ui or EvolveUI()
        self.usage = usage or (client.usage if client else UsageLog(None))
        fit = context_fit(client.cfg, lambda: client.cfg.model) if client and client.cfg.context_tokens else None
        self.prompts = {t.key: PromptBuilder(t, hardware_text, self.cfg.max_prompt_chars, fit) for t in targets}
        self.rng = random.Random(self.cfg.rng_seed)
        self.built: dict[int, Built] = {}  # this run's build results: logs for repairs, libraries for profiling
        self.summary = EvolveSummary()
        self._profiling = bool(self.cfg.profile_sets)
        self._request_of: dict[int, int] = {}  # candidate id → the request whose reply it came from
        self._copies: dict[str, CopyIndex] = {}  # target key → its kernels' forms (copy detection)
        # overlap: the next generation's requests in flight while this one is judged, by target key
        self._pending: dict[str, tuple[list, Future]] = {}
        self._prefetch = ThreadPoolExecutor(max_workers=1, thread_name_prefix="kernelrl-prefetch")
        self.busy = {"generator": 0.0, "evaluator": 0.0, "wall": 0.0}  # seconds; the two may overlap
        self._busy_lock = threading.Lock()

    @property
    def model(self) -> str:
        return self.client.cfg.model if self.client else ""

    # -- seeds ---------------------------------------------------------------------------------------------------
    def add_seeds(self, paths: list[Path]) -> list[Candidate]:
        """Put existing kernels into the population (shared by every island); they are evaluated first."""
        added = []
        for path in paths:
            owners = [t for t in self.targets if t.seed_matches(path)]
            if not owners:
                same_kind = [t for t in self.targets if path.suffix == t.extension]
                owners = same_kind if len(same_kind) == 1 else []
            if not owners:
                self.ui.stage(f"seed {path}: no target takes it (wrong file type or no matching task); skipped")
            for t in owners:
                c, new = self.pop.add(t.key, path.read_text(errors="replace"), "seed", self.pop.generation(t.key),
                                      name=f"seed_{safe_name(path.stem)}")
                if new:
                    added.append(c)
        return added

    # -- the run -------------------------------------------------------------------------------------------------
    def run(self) -> EvolveSummary:
        for t in self.targets:
            t.preflight()
            self.prompts[t.key].check_fits()  # a task too long for the model's context: one line, nothing sent
        for t in self.targets:
            pending = self.pop.pending(t.key)
            for c in [c for c in pending if c.origin == "reply"]:  # interrupted between storing and judging
                ex = extract(c.source, t.language, t.entry)
                assert ex.key is not None  # the reply was stored because it held no usable code
                self._record(t, c, Evaluation("malformed", ex.verdict, key=ex.key.value))
            pending = [c for c in pending if c.origin != "reply"]
            if pending:
                self.ui.stage(f"{t.title}: evaluating {len(pending)} candidates not judged yet (seeds, or left by "
                              "an interrupted run)")
                self.process(t, pending)
        started = time.perf_counter()
        try:
            while True:
                why = self.budget.exhausted()
                if why is None and self.client is None:
                    why = "no model client"
                if why is None and self.cfg.generations is not None and \
                        self.summary.generations >= self.cfg.generations:
                    why = f"{self.summary.generations} generations done"
                if why and not self._pending:  # replies already asked for are judged before the run ends
                    self.summary.stop_reason = why
                    break
                sent = sum(self.generation(t) for t in self.targets if not why or t.key in self._pending)
                self.summary.generations += 1
                if sent == 0 and not self._pending:
                    self.summary.stop_reason = self.budget.exhausted() or "no call could be made"
                    break
        finally:
            self.busy["wall"] = time.perf_counter() - started
            self._prefetch.shutdown(wait=True)
        return self.summary

    def _more_after(self) -> bool:
        """Whether another generation follows this one (so its replies may be asked for now)."""
        if self.budget.exhausted():
            return False
        return self.cfg.generations is None or self.summary.generations + 1 < self.cfg.generations

    def _complete(self, requests):
        """The model's replies to `requests`, the time they took counted as the generator's."""
        started = time.perf_counter()
        try:
            return self.client.complete_many(requests, on_done=self.ui.call_done)
        finally:
            with self._busy_lock:
                self.busy["generator"] += time.perf_counter() - started

    def generation(self, t: Target) -> int:
        """One generation of one target; returns how many calls reached the server. With `overlap`, the next
        generation's requests go out as soon as this one's replies are in, built from the population as it is
        then (without this generation's verdicts: one generation stale), and are answered while this one is
        judged."""
        gen = self.pop.generation(t.key)
        pending = self._pending.pop(t.key, None)
        if pending is not None:
            requests, future = pending
            completions = future.result()
        else:
            requests = self._requests(t, gen)
            completions = self._complete(requests) if requests else []
        proposals = self._take(t, requests, completions, origin="llm")
        if self.cfg.overlap and self._more_after():
            ahead = self._requests(t, gen + 1)
            if ahead:
                self._pending[t.key] = (ahead, self._prefetch.submit(self._complete, ahead))
        sent = sum(p.completion.outcome != "budget" for p in proposals)
        new = [p for p in proposals if p.new]
        self.process(t, [p.member for p in new])
        if self.cfg.turns > 1:  # multi-turn: every verdict (a compile error too) is the next turn's message
            later = self._later_turns(t, proposals)
            sent += sum(p.completion.outcome != "budget" for p in later)
            new += [p for p in later if p.new]
        elif self.cfg.repair:
            repairs = self._repair(t, new)
            sent += sum(p.completion.outcome != "budget" for p in repairs)
            new += [p for p in repairs if p.new]
        self._profile(t, [p.member for p in new])
        self.pop.set_state(t.key, "generation", gen + 1)
        if self.cfg.migrate_every and (gen + 1) % self.cfg.migrate_every == 0:
            for src, dst, c in self.pop.migrate(t.key, self.cfg.islands, gen + 1):
                self.ui.stage(f"migration: {c.name} ({c.score:.3f}×) from island {src} to island {dst}")
        best = self.pop.best(t.key, 1)
        self.ui.generation_done(t, gen, best[0] if best else None)
        return sent

    def _requests(self, t: Target, gen: int) -> list[tuple[list[dict], str, dict]]:
        """Generation `gen`'s proposal requests: per island, a parent, inspirations and failures drawn from it."""
        everyone = [c for c in self.pop.all(t.key) if c.status == "done"]
        requests: list[tuple[list[dict], str, dict]] = []
        left = self.budget.calls_left()
        # With fewer calls left than islands, start where the last generation stopped, so every island gets turns.
        order = [(gen + i) % self.cfg.islands for i in range(self.cfg.islands)]
        for island in order:
            if left is not None and len(requests) >= left:
                break
            members = self.pop.members(t.key, island)
            pool = members if any(c.ok for c in members) else everyone  # an empty island starts from the best
            failures = [c for c in members if not c.ok] or [c for c in everyone if not c.ok]
            for _ in range(self.cfg.per_island if left is None else min(self.cfg.per_island, left - len(requests))):
                parent = pick_parent(pool, self.rng, self.cfg.explore)
                inspirations = pick_inspirations(parent, members, everyone, self.cfg.top_k - 1, self.rng)
                builder = self.prompts[t.key]
                messages = builder.propose(parent, inspirations, pick_negatives(failures, self.cfg.negatives))
                meta = {"target": t.key, "island": island, "generation": gen,
                        "parent": parent.id if parent else None, "inspirations": [c.id for c in inspirations],
                        **_fit_meta(builder)}
                requests.append((messages, "propose", meta))
        return requests

    def _ask(self, t: Target, requests: list[tuple[list[dict], str, dict]], origin: str) -> list[Proposal]:
        return self._take(t, requests, self._complete(requests), origin)

    def _take(self, t: Target, requests, completions, origin: str) -> list[Proposal]:
        """Proposals from the replies to `requests` (each accepted into the population, or not)."""
        failed = [c for c in completions if not c.ok and c.outcome != "budget"]
        for c in failed:
            self.summary.call_failures[c.outcome] = self.summary.call_failures.get(c.outcome, 0) + 1
        if origin == "llm" and failed and len(failed) == len(completions):  # the server is unusable: stop here
            assert self.client is not None  # the replies came from it
            raise LLMError(f"every request to {self.client.cfg.base_url} failed; first: {failed[0].error} "
                           f"(model {self.model!r}); the population is saved, run again to resume")
        proposals = []
        for (messages, _, meta), completion in zip(requests, completions):
            p = Proposal(completion, messages)
            if completion.ok:
                self._accept(t, p, origin, meta)
            proposals.append(p)
        return proposals

    def _accept(self, t: Target, p: Proposal, origin: str, meta: dict) -> None:
        c = p.completion
        assert c.text is not None  # only answered requests are accepted (completion.ok)
        ex = extract(c.text, t.language, t.entry, c.finish_reason)
        common = dict(generation=meta["generation"], island=meta["island"], parent=meta.get("parent"),
                      inspirations=meta.get("inspirations"), analysis=ex.analysis, model=self.model)
        if ex.code is None:  # not ex.ok: kept (under its raw reply) so later prompts can show the verdict
            cand, new = self.pop.add(t.key, c.text, "reply", name=f"reply_{_sha(c.text)}", **common)
            if new:
                assert ex.key is not None  # no code: malformed
                cand = self._record(t, cand, Evaluation("malformed", ex.verdict, key=ex.key.value), c.request_id)
            p.candidate = cand
            return
        match = self._copy_index(t).find(ex.code)
        if match is not None:  # a kernel shown or proposed before: no new member, nothing evaluated again
            assert isinstance(match.key, int)  # this index's keys are population ids (_copy_index)
            p.candidate, p.new = self.pop.get(match.key), False
            if match.kind == "copy":
                self.summary.duplicates += 1
            else:
                self.summary.copies += 1
            self.ui.stage(f"  reply {c.request_id} is a{' renamed' if match.kind != 'copy' else ''} copy of "
                          f"{match.of}: not a new member, not evaluated again")
            return
        p.candidate, p.new = self.pop.add(t.key, ex.code, origin, **common)
        if not p.new:
            self.summary.duplicates += 1
            self.ui.stage(f"  reply {c.request_id} repeats {p.candidate.name}: not evaluated again")
            return
        self._copies[t.key].add(p.candidate.name, p.candidate.source, p.candidate.id)
        self._request_of[p.candidate.id] = c.request_id

    def _copy_index(self, t: Target) -> CopyIndex:
        """The target's kernels so far (every one a prompt may show), for copy detection."""
        if t.key not in self._copies:
            self._copies[t.key] = CopyIndex(t.language)
            for c in self.pop.all(t.key):
                if c.origin != "reply":  # raw replies hold no extracted code
                    self._copies[t.key].add(c.name, c.source, c.id)
        return self._copies[t.key]

    # -- judging -------------------------------------------------------------------------------------------------
    def process(self, t: Target, cands: list[Candidate]) -> None:
        """Screen, build and evaluate candidates; every one ends with a recorded verdict. The time it takes is
        counted as the evaluator's."""
        started = time.perf_counter()
        try:
            self._process(t, cands)
        finally:
            with self._busy_lock:
                self.busy["evaluator"] += time.perf_counter() - started

    def _process(self, t: Target, cands: list[Candidate]) -> None:
        todo = []
        for c in cands:
            rejected = t.screen(c.source)
            if rejected is not None:
                self._record(t, c, Evaluation("rejected", str(rejected), key=rejected.verdict.value))
            else:
                todo.append(c)
        built = t.build({c.name: c.source for c in todo}) if todo else {}
        ready = []
        for c in todo:
            b = built.get(c.name) or Built(False, Verdict.COMPILE_ERROR.reason("not built"),
                                           key=Verdict.COMPILE_ERROR.value)
            self.built[c.id] = b
            if b.ok:
                ready.append(c)
            else:
                self._record(t, c, Evaluation("compile", b.error, key=b.key), resources=b.resources)
        if not ready:
            return
        self.ui.stage(f"{t.title}: evaluating {len(ready)} candidate{'s' * (len(ready) > 1)}")
        evals = t.evaluate({c.name: c.source for c in ready}, self.ui)
        for c in ready:
            self._record(t, c, evals.get(c.name) or Evaluation("failed", Verdict.NOT_EVALUATED.value,
                                                               key=Verdict.NOT_EVALUATED.value),
                         resources=self.built[c.id].resources)

    def _record(self, t: Target, c: Candidate, ev: Evaluation, request_id: int | None = None,
                resources: dict | None = None) -> Candidate:
        c = self.pop.record(c.id, ev.category, ev.verdict, ev.score, ev.speedups, ev.detail, resources, ev.key)
        self.summary.outcomes[ev.category] = self.summary.outcomes.get(ev.category, 0) + 1
        self.usage.write({"kind": "candidate", "target": t.key, "candidate": c.name, "origin": c.origin,
                          "request": request_id or self._request_of.get(c.id), "category": ev.category,
                          "verdict": ev.verdict, "score": ev.score, "speedups": ev.speedups})
        self.ui.candidate_done(t, c)
        return c

    def _later_turns(self, t: Target, first: list[Proposal]) -> list[Proposal]:
        """Turns 2..`turns` of this generation's trajectories: each judged attempt's verdict (measurements, wrong
        values, a compile error with its lines, a malformed reply) goes back to the model in the same conversation,
        earlier replies condensed to their code and a paragraph; a trajectory ends at a copy, a failed call, the
        context's limit or the budget. Records, per turn, the attempts, the verified ones and the best speedup so
        far over all trajectories."""
        builder, out = self.prompts[t.key], []
        current = [p for p in first if p.candidate is not None]
        best = self._turn_stats(1, current, None)
        for turn in range(2, self.cfg.turns + 1):
            if not current or self.budget.exhausted():
                break
            requests = []
            for p in current:
                c = self.pop.get(p.member.id)
                if not p.new and c.origin != "reply":  # a copy or a repeat: nothing new to say about it
                    continue
                b = self.built.get(c.id)
                errors = b.log if b is not None and not b.ok and b.log else ""
                ex = extract(p.completion.text, t.language, t.entry, p.completion.finish_reason)
                messages = builder.refine(p.messages, p.completion.text or "", ex.code, c, turn, self.cfg.turns,
                                          errors)
                if messages is None:
                    self.ui.stage(f"trajectory of {c.name} ends at turn {turn - 1}: the conversation would not "
                                  f"fit the model's context")
                    continue
                requests.append((messages, "refine", {"target": t.key, "island": c.island, "generation": c.generation,
                                                      "parent": c.id, "inspirations": [], "turn": turn,
                                                      **_fit_meta(builder)}))
            if not requests:
                break
            current = [p for p in self._ask(t, requests, origin="refine") if p.candidate is not None]
            self.process(t, [p.member for p in current if p.new])
            out += current
            best = self._turn_stats(turn, current, best)
        return out

    def _turn_stats(self, turn: int, attempts: list[Proposal], best: float | None) -> float | None:
        judged = [self.pop.get(p.member.id) for p in attempts]
        scores = [c.score for c in judged if c.ok and c.score]
        best = max([*scores, *([best] if best is not None else [])], default=None)
        row = {"turn": turn, "attempts": len(attempts), "verified": sum(c.ok for c in judged), "best_so_far": best}
        self.summary.turns.append(row)
        self.usage.write({"kind": "turn", **row})
        return best

    def _repair(self, t: Target, proposals: list[Proposal]) -> list[Proposal]:
        broken = []
        for p in proposals:
            c = self.pop.get(p.member.id)
            if c.origin != "repair" and repairable(c.category or ""):
                broken.append((p, c))
        if not broken or self.budget.exhausted():
            return []
        requests = []
        for p, c in broken:
            b = self.built.get(c.id)
            errors = (b.log if b is not None and not b.ok and b.log else "") or c.verdict or ""
            builder = self.prompts[t.key]
            messages = builder.repair(p.messages, p.completion.text or "", errors)
            if messages is None:
                self.ui.stage(f"repair of {c.name} skipped: the conversation with its errors does not fit the "
                              f"model's context")
                continue
            requests.append((messages, "repair", {"target": t.key, "island": c.island, "generation": c.generation,
                                                  "parent": c.id, "inspirations": [], **_fit_meta(builder)}))
        if not requests:
            return []
        self.summary.repairs += len(requests)
        fixed = self._ask(t, requests, origin="repair")
        self.process(t, [p.member for p in fixed if p.new])
        return fixed

    def _profile(self, t: Target, cands: list[Candidate]) -> None:
        if not self._profiling:
            return
        ok = sorted((c for c in (self.pop.get(c.id) for c in cands) if c.ok), key=lambda c: c.rank[0])  # -score
        for c in ok[:self.cfg.profile_top]:
            profile = t.profile(self.built.get(c.id) or Built(False), self.cfg.profile_sets)
            if profile and profile.get("skip_rest"):
                self.ui.stage(f"profiling skipped: {profile['error']}")
                self._profiling = False  # the reason holds for the rest of the run: say it once
                return
            if profile and profile.get("error"):
                self.ui.stage(f"profiling {c.name} failed: {profile['error']}")
            if profile:
                self.pop.set_profile(c.id, profile)  # an error is kept too: it says why the prompt shows no metrics


def context_fit(cfg, model) -> ContextFit:
    """The prompts' fit to the model's context from the client's settings (`model`: the served model's name, read
    when the server's tokenizer is asked)."""
    return ContextFit(make_counter(cfg.tokenizer, cfg.base_url, model), cfg.context_tokens, cfg.max_tokens)


def _fit_meta(builder: PromptBuilder) -> dict:
    """What the call log records of a fitted prompt, and the request's generation cap (the client reads it)."""
    report = builder.last_fit if builder.fit is not None else None
    if report is None or builder.fit is None:
        return {}
    return {"prompt_tokens_counted": report.tokens, "max_new_tokens": builder.fit.new_tokens(report.tokens),
            **({"left_out": report.dropped} if report.dropped else {})}


def _sha(text: str | None) -> str:
    return source_sha(text or "")[:12]

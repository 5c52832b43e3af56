"""The HGEMM worker's content probe: device mode replays the same inputs, so a method whose result is cached by
its input contents would look fast there. Mixed into `kernelrl.run.worker.Worker` (it uses the worker's buffers,
stream, restore, reject and error handling); runs only in the worker process."""

from __future__ import annotations

import math
from typing import TYPE_CHECKING, Callable

import torch

from kernelrl.harness.stats import content_dependent_speed
from kernelrl.harness.timing import timed_replay
from kernelrl.harness.verdicts import Rejected, Verdict
from kernelrl.verify.checks import TORCH_DTYPES, compare_output, reference

PERTURBED = 4  # elements of A changed between calls: a result cached by input contents goes stale
PERTURB_VALUE = 64.0  # far outside N(0, 1): one changed element moves its whole output row beyond the tolerance
PROBE_CALLS = 64  # most calls in a content-probe graph


class ContentProbe:
    if TYPE_CHECKING:  # the Worker's, which this is mixed into (kernelrl/run/worker.py)
        stream: torch.cuda.Stream | None  # None until the worker starts
        _sync: Callable[[str, str], None]

    def _probe_contents(self, task_id, problem, live, graphs, sets, results):
        """Device mode replays the same inputs, so a result cached by input contents would look fast. Each
        untrusted method (and one trusted baseline, for calibration) is timed again in a graph that changes a few
        elements of A before every call, against a graph of the changes alone. A method whose calls get slower
        by more than max(2 µs, 20 %) beyond what the baseline's do is `content-dependent speed`; the last call's
        output is checked against the changed inputs (a cache keyed on a sample comes back stale)."""
        untrusted = [n for n in graphs if not self._trusted(n) and not results[n]["errors"]
                     and not getattr(live.get(n), "staged", False)]
        if not untrusted:
            return
        trusted = [n for n in graphs if self._trusted(n) and not results[n]["errors"]]
        probe = trusted[:1] + untrusted
        calls = max(len(sets), min(PROBE_CALLS, results[probe[0]]["times"]["device"]["calls_per_graph"]))
        calls = math.ceil(calls / len(sets)) * len(sets)
        m, k = problem.m, problem.k
        changes = []  # per call: (positions into A's flat view, values)
        for _ in range(calls):
            pos = torch.tensor([self.rng.randrange(m) * k + self.rng.randrange(k) for _ in range(PERTURBED)],
                               device="cuda")
            vals = torch.tensor([PERTURB_VALUE if self.rng.random() < 0.5 else -PERTURB_VALUE
                                 for _ in range(PERTURBED)], dtype=TORCH_DTYPES[problem.dtype], device="cuda")
            changes.append((pos, vals))
        last_ref = self._changed_reference(sets, changes)
        extra = {}
        for name in probe:
            self.begin(task_id, name, "probe:contents")
            try:
                changing, alone = self._probe_graphs(problem, name, live[name], sets, changes)
                per_call = []
                for _ in range(3):
                    for graph in (changing, alone):
                        self._restore(sets)
                        per_call.append(self._replay_us(name, graph) / calls)
                t_change = min(per_call[0::2]) - min(per_call[1::2])
                extra[name] = t_change - results[name]["times"]["device"]["median"]
                results[name]["extra"]["changing_inputs_us"] = round(t_change, 3)
                if name in untrusted:
                    self._check_last_call(problem, name, sets, calls, changing, last_ref)
            except Rejected as exc:
                self._reject(results[name], exc, "during timing: ")
        base = extra.get(trusted[0]) if trusted else None
        for name in untrusted:
            if name in extra:
                flag = content_dependent_speed(results[name]["times"]["device"]["median"], extra[name], base)
                if flag:
                    self._reject(results[name], Rejected(Verdict.CONTENT_DEPENDENT_SPEED, flag))
        self._restore(sets)

    def _probe_graphs(self, problem, name, method, sets, changes):
        bound = [method.bind(problem, bufs, self.workspaces.get(name), self.stream) for bufs in sets]
        changing, alone = torch.cuda.CUDAGraph(), torch.cuda.CUDAGraph()
        try:
            with torch.cuda.graph(changing, stream=self.stream):
                for i, (pos, vals) in enumerate(changes):
                    sets[i % len(sets)].a.view(-1).index_copy_(0, pos, vals)
                    bound[i % len(sets)]()
            with torch.cuda.graph(alone, stream=self.stream):
                for i, (pos, vals) in enumerate(changes):
                    sets[i % len(sets)].a.view(-1).index_copy_(0, pos, vals)
        except RuntimeError as exc:
            self._after_error(name, "probe", exc)
            raise Rejected(Verdict.GRAPH_CAPTURE, f"content probe: {str(exc).splitlines()[0]}") from None
        return changing, alone

    def _replay_us(self, name, graph) -> float:
        assert self.stream is not None  # probes run on a started worker
        return timed_replay(graph, self.stream, lambda: self._sync(name, "probe:contents"))[0]

    def _changed_reference(self, sets, changes):
        """The fp32 reference of the last probe call: its set's pristine inputs with every change made to that set
        (they all come before its last call), computed once, by the harness alone, for every method probed (a
        method that writes its inputs cannot move it, and a 16384^3 reference is not paid per candidate)."""
        last = sets[(len(changes) - 1) % len(sets)]
        a, b, _ = self.pristine[id(last)]
        a = a.clone()
        for i, (pos, vals) in enumerate(changes):
            if sets[i % len(sets)] is last:
                a.view(-1).index_copy_(0, pos, vals)
        return reference(a, b)

    def _check_last_call(self, problem, name, sets, calls, changing, last_ref):
        """One more changing-contents replay from pristine inputs; the last call's output is judged against the
        reference of the changed contents."""
        self._restore(sets)
        last = sets[(calls - 1) % len(sets)]
        last.c.fill_(float("nan"))
        self._replay_us(name, changing)
        outcome = compare_output(last.c, last_ref, problem.acc, problem.k)
        if not outcome.ok:
            verdict = Verdict.STALE_RESULT if outcome.verdict is Verdict.WRONG_VALUES else outcome.verdict
            raise Rejected(verdict, f"{outcome.reason} on the last call of a replay whose inputs changed between "
                                    f"calls (a result cached by input contents)")

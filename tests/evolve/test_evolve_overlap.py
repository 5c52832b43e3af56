"""Generation beside evaluation (`overlap`): the next generation's request reaches the model server while this
generation's candidates are still being judged, nothing asked for is lost when the budget ends, and the run
accounts the evaluator's and the generator's busy time. Without it, nothing is in flight while judging."""

import threading

from kernelrl.evolve.loop import EvolveConfig, Evolver
from tests.evolve_fake_server import GOOD, FakeServer, answer, reply, scripted_run


class Watching(Evolver):
    """Judging the first generation waits (a bounded while) for a second request to reach the server."""

    def __init__(self, *a, second, wait_s, **kw):
        super().__init__(*a, **kw)
        self.second, self.wait_s, self.seen = second, wait_s, []

    def _process(self, t, cands):
        if any(c.generation == 0 and c.origin == "llm" for c in cands):
            self.seen.append(self.second.wait(self.wait_s))
        super()._process(t, cands)


def run(tmp_path, monkeypatch, overlap, wait_s):
    monkeypatch.setenv("KERNELRL_CACHE", str(tmp_path / "cache"))
    second = threading.Event()
    n = [0]

    def serve(body):
        n[0] += 1
        if n[0] >= 2:
            second.set()
        return reply(answer(GOOD + f"static const int kernelrl_variant = {n[0]};\n"))

    with FakeServer(serve) as server:
        evolver, summary, target = scripted_run(server, tmp_path / "e.db", 2,
                                                EvolveConfig(islands=1, rng_seed=0, overlap=overlap), Watching,
                                                second=second, wait_s=wait_s)
    return evolver, summary, target


def test_the_next_request_is_answered_while_this_generation_is_judged(tmp_path, monkeypatch):
    evolver, summary, target = run(tmp_path, monkeypatch, overlap=True, wait_s=30.0)
    assert evolver.seen == [True]
    judged = [c for c in evolver.pop.all(target.key) if c.origin == "llm"]
    assert len(judged) == 2 and all(c.status == "done" for c in judged)  # the prefetched reply was judged too
    assert summary.stop_reason.startswith("call budget spent")
    assert evolver.busy["evaluator"] > 0 and evolver.busy["generator"] > 0 and evolver.busy["wall"] > 0


def test_without_overlap_nothing_is_in_flight_while_judging(tmp_path, monkeypatch):
    evolver, _, _ = run(tmp_path, monkeypatch, overlap=False, wait_s=0.5)
    assert evolver.seen == [False]

"""The evolve loop end to end on the CPU: the real client against a scripted loopback model server, the HGEMM
target through run_bench with the dummy runner, the population in SQLite. A good kernel is verified and scored, a
broken one gets one repair turn, a cheating one is rejected and shown to the model as a negative example, a reply
without code gets its verdict; runs resume, seeds go first, and the best kernels export to `kernelrl bench`."""

import csv
from pathlib import Path

import pytest

from kernelrl.cli import main
from kernelrl.db import Database
from kernelrl.evolve.budget import Budget
from kernelrl.evolve.client import LLMClient, LLMConfig, LLMError
from kernelrl.evolve.export import export_best
from kernelrl.evolve.hgemm_target import HgemmTarget
from kernelrl.evolve.loop import EvolveConfig, Evolver
from kernelrl.evolve.population import Population
from kernelrl.evolve.population import source_sha
from kernelrl.evolve.ui import EvolveUI
from kernelrl.evolve.usage import UsageLog, read_usage
from kernelrl.harness.verdicts import Verdict
from kernelrl.run.runner import DummyRunner, verdict_records
from kernelrl.workloads.hgemm import parse_shapes
from tests.evolve_fake_server import (BETTER, BROKEN, CACHES_BY_POINTER, CHEAT, FIXED, GOOD, MALFORMED, FakeServer,
                                      answer, error, reply)

ROOT = Path(__file__).resolve().parents[2]
SHAPES = "64x64x64,128x256x64"


@pytest.fixture(autouse=True)
def _private_cache(tmp_path, monkeypatch):
    monkeypatch.setenv("KERNELRL_CACHE", str(tmp_path / "cache"))


CAUGHT_DETAIL = "wrong values: error 1.8 exceeds the fp32 tolerance 0.0039 for K=64"
CAUGHT = Verdict.DURING_TIMING.reason(CAUGHT_DETAIL)


class DuringTimingVerdicts(DummyRunner, kind="evolve_test_during_timing"):
    """The dummy runner, except that the candidates named in `caught` get the verdict the GPU evaluator gives a
    kernel that caches its output by pointer (inputs refilled in place between timed calls)."""

    caught: set = set()

    def run(self, tasks, methods, settings, on_records, **kw):
        def relay(task, records):
            hit = {r["method"] for r in records} & self.caught
            on_records(task, [r for r in records if r["method"] not in hit] +
                       [r for name in sorted(hit)
                        for r in verdict_records(task, name, Verdict.DURING_TIMING, CAUGHT_DETAIL)])
        super().run(tasks, methods, settings, relay, **kw)


def evolve(server, db, calls, islands=1, migrate_every=0, seeds=(), timeout_s=10.0, runner="dummy", ui=None, **cfg):
    """One run of the loop; returns (evolver, summary, target). The population stays open on evolver.pop."""
    target = HgemmTarget(parse_shapes(SHAPES), db, ["torch", "cublas_tn"], runner=runner)
    usage = UsageLog(db.with_suffix(".usage.jsonl"))
    budget = Budget(max_calls=calls)
    client = LLMClient(LLMConfig(base_url=server.url, model="scripted-model", concurrency=1, timeout_s=timeout_s,
                                 backoff_s=0.01, backoff_max_s=0.05), budget, usage) if server else None
    evolver = Evolver([target], Population(db), client, "- GPU: test", EvolveConfig(
        islands=islands, migrate_every=migrate_every, rng_seed=0, **cfg), budget, ui=ui, usage=usage)
    evolver.add_seeds([Path(s) for s in seeds])
    return evolver, evolver.run(), target


@pytest.fixture(scope="module")
def scripted(tmp_path_factory):
    """Five calls: a good kernel; a broken one and its repair; a cheat; a reply without code."""
    tmp = tmp_path_factory.mktemp("evolve")
    script = [reply(answer(GOOD)), reply(answer(BROKEN)), reply(answer(FIXED)), reply(answer(CHEAT)),
              reply(MALFORMED)]
    mp = pytest.MonkeyPatch()
    mp.setenv("KERNELRL_CACHE", str(tmp / "cache"))
    with FakeServer(script) as server:
        evolver, summary, target = evolve(server, tmp / "evolve.db", calls=5)
    mp.undo()
    by_source = {c.source: c for c in evolver.pop.all(target.key)}
    return {"server": server, "summary": summary, "target": target, "pop": evolver.pop, "by_source": by_source,
            "db": tmp / "evolve.db", "usage": read_usage(tmp / "evolve.usage.jsonl")}


def user_prompt(server, i):
    return server.requests[i]["messages"][1]["content"]


def test_a_good_kernel_is_verified_and_scored_on_every_shape(scripted):
    good = scripted["by_source"][GOOD]
    assert good.category == "ok" and good.score > 0 and good.origin == "llm"
    assert set(good.speedups) == {"torch", "cublas_tn"} and set(good.detail) == set(SHAPES.split(","))


def test_a_compile_error_is_recorded_with_the_compilers_words(scripted):
    broken = scripted["by_source"][BROKEN]
    assert broken.category == "compile" and broken.verdict.startswith("compile error:")
    assert "never closed" in broken.verdict


def test_a_compile_error_gets_one_repair_turn_that_fixes_it(scripted):
    broken, fixed = scripted["by_source"][BROKEN], scripted["by_source"][FIXED]
    assert fixed.origin == "repair" and fixed.parent == broken.id and fixed.category == "ok"
    assert scripted["summary"].repairs == 1


def test_the_repair_request_continues_the_conversation_with_the_errors(scripted):
    messages = scripted["server"].requests[2]["messages"]
    assert messages[-2] == {"role": "assistant", "content": answer(BROKEN)}
    assert "did not compile" in messages[-1]["content"] and "never closed" in messages[-1]["content"]


def test_the_cheating_kernel_is_rejected_before_it_runs(scripted):
    cheat = scripted["by_source"][CHEAT]
    assert cheat.category == "rejected" and "cuda-stream" in cheat.verdict and not cheat.detail


def test_the_cheat_is_shown_as_a_negative_example_in_the_next_prompt(scripted):
    cheat = scripted["by_source"][CHEAT]
    assert f"- {cheat.name} (a known cheat, found by the static screen): {cheat.verdict}" in \
        user_prompt(scripted["server"], 4)


def test_a_reply_without_code_gets_a_malformed_verdict(scripted):
    reply_ = scripted["by_source"][MALFORMED]
    assert reply_.origin == "reply" and reply_.category == "malformed" and "no fenced ```cuda block" in reply_.verdict


def test_later_prompts_show_earlier_candidates_with_their_speedups(scripted):
    good = scripted["by_source"][GOOD]
    prompt = user_prompt(scripted["server"], 1)
    assert f"### {good.name} (parent" in prompt and f"{good.score:.3f}× over torch" in prompt


def test_the_run_stops_when_the_call_budget_is_spent(scripted):
    assert "call budget spent (5 of 5 calls)" == scripted["summary"].stop_reason
    assert len(scripted["server"].requests) == 5


def test_the_usage_log_links_every_verdict_to_its_call(scripted):
    calls = [r for r in scripted["usage"] if r["kind"] == "call"]
    verdicts = {r["candidate"]: r for r in scripted["usage"] if r["kind"] == "candidate"}
    assert [r["outcome"] for r in calls] == ["ok"] * 5
    assert {c["request"] for c in calls} == {v["request"] for v in verdicts.values()}
    assert verdicts[scripted["by_source"][CHEAT].name]["category"] == "rejected"


def test_measurements_land_in_the_results_database(scripted):
    db = Database(scripted["db"])
    methods = {r["method"] for r in db.rows(superseded=True)}  # each candidate's run measured the baselines again
    db.close()
    ok = {c.name for c in scripted["by_source"].values() if c.ok}
    assert ok and ok <= methods and {"torch", "cublas_tn"} <= methods


def test_an_evaluator_hacking_verdict_is_kept_and_shown_as_a_negative_example(tmp_path, monkeypatch):
    monkeypatch.setattr(DuringTimingVerdicts, "caught", {f"evo_{source_sha(CACHES_BY_POINTER)[:12]}"})
    with FakeServer([reply(answer(CACHES_BY_POINTER)), reply(answer(GOOD))]) as server:
        evolver, _, target = evolve(server, tmp_path / "e.db", calls=2, runner="evolve_test_during_timing")
    cacher = next(c for c in evolver.pop.all(target.key) if c.source == CACHES_BY_POINTER)
    assert cacher.category == "defence" and cacher.verdict == f"on 64x64x64: {CAUGHT}"
    assert f"- {cacher.name} (caught by a dynamic anti-hacking check of the evaluator): {cacher.verdict}" in \
        user_prompt(server, 1)


class Stages(EvolveUI):
    def __init__(self):
        self.lines = []

    def stage(self, text):
        self.lines.append(text)


def test_profiles_are_stored_and_shown_in_the_next_prompt(tmp_path, monkeypatch):
    summary = {"shape": "128x256x64", "kernels": 1, "time_us": 3.2, "metrics": {"lts__t_sector_hit_rate.pct": 91.0},
               "stalls": {"barrier": 2.5}}
    monkeypatch.setattr(HgemmTarget, "profile", lambda self, built, sets: dict(summary))
    with FakeServer([reply(answer(GOOD)), reply(answer(BETTER))]) as server:
        evolver, _, target = evolve(server, tmp_path / "e.db", calls=2, profile_sets=("l2", "stalls"))
    good = next(c for c in evolver.pop.all(target.key) if c.source == GOOD)
    assert good.profile == summary
    assert "- Nsight Compute on 128x256x64: kernel time 3.2 µs; L2 hit rate 91.0 %" in user_prompt(server, 1)


def test_profiling_that_cannot_run_here_is_said_once_and_the_run_goes_on(tmp_path):
    ui = Stages()
    with FakeServer([reply(answer(GOOD)), reply(answer(BETTER))]) as server:
        _, summary, _ = evolve(server, tmp_path / "e.db", calls=2, profile_sets=("l2",), ui=ui)
    skipped = [line for line in ui.lines if line.startswith("profiling skipped")]
    assert len(skipped) == 1 and "built library" in skipped[0] and summary.outcomes == {"ok": 2}


def test_a_second_run_resumes_the_population(tmp_path):
    db = tmp_path / "evolve.db"
    with FakeServer([reply(answer(GOOD))]) as server:
        first, _, target = evolve(server, db, calls=1)
    first.pop.close()
    with FakeServer([reply(answer(BETTER))]) as server:
        second, summary, _ = evolve(server, db, calls=1)
    good = next(c for c in second.pop.all(target.key) if c.source == GOOD)
    assert second.pop.generation(target.key) == 2 and summary.outcomes == {"ok": 1}
    assert f"### {good.name} (parent" in user_prompt(server, 0)


def test_seeds_are_evaluated_before_any_call(tmp_path):
    evolver, summary, target = evolve(None, tmp_path / "e.db", calls=0, seeds=[ROOT / "examples" / "hgemm_wmma.cu"])
    seed = evolver.pop.all(target.key)[0]
    assert (seed.origin, seed.name, seed.category, seed.island) == ("seed", "seed_hgemm_wmma", "ok", None)
    assert summary.stop_reason.startswith("call budget spent")


def test_candidates_left_pending_by_an_interrupted_run_are_evaluated_first(tmp_path):
    db = tmp_path / "e.db"
    target = HgemmTarget(parse_shapes(SHAPES), db, ["torch", "cublas_tn"], runner="dummy")
    pop = Population(db)
    c, _ = pop.add(target.key, GOOD, "llm", 0, island=0)
    pop.close()
    evolver, _, _ = evolve(None, db, calls=0)
    assert evolver.pop.get(c.id).category == "ok"


def test_a_repeated_reply_is_not_evaluated_twice(tmp_path):
    with FakeServer([reply(answer(GOOD)), reply(answer(GOOD, analysis="Same again."))]) as server:
        evolver, summary, target = evolve(server, tmp_path / "e.db", calls=2)
    assert summary.duplicates == 1 and summary.outcomes == {"ok": 1} and len(evolver.pop.all(target.key)) == 1


def test_a_renamed_copy_of_a_kernel_is_not_a_new_member(tmp_path):
    renamed = GOOD.replace("WARPS_M", "WGRID_M").replace("STAGES", "NSTAGE")
    with FakeServer([reply(answer(GOOD)), reply(answer(renamed))]) as server:
        evolver, summary, target = evolve(server, tmp_path / "e.db", calls=2)
    assert summary.copies == 1 and summary.outcomes == {"ok": 1} and len(evolver.pop.all(target.key)) == 1


def test_timeouts_and_server_errors_inside_the_loop_are_retried(tmp_path):
    script = [reply(answer(GOOD), delay_s=2.0), error(500), reply(answer(GOOD))]
    with FakeServer(script) as server:
        evolver, summary, target = evolve(server, tmp_path / "e.db", calls=1, timeout_s=0.3)
    calls = [r["outcome"] for r in read_usage(tmp_path / "e.usage.jsonl") if r["kind"] == "call"]
    assert calls == ["timeout", "http_500", "ok"] and summary.outcomes == {"ok": 1}


def test_a_server_that_refuses_every_request_stops_the_run(tmp_path):
    with FakeServer([error(404, "The model `scripted-model` does not exist.")]) as server:
        with pytest.raises(LLMError, match="does not exist"):
            evolve(server, tmp_path / "e.db", calls=3)
    assert len(server.requests) == 1


def test_each_island_gets_a_proposal_and_the_best_migrates(tmp_path):
    n = iter(range(100))
    with FakeServer(lambda body: reply(answer(GOOD + f"static const int kernelrl_variant = {next(n)};\n"))) as server:
        evolver, _, target = evolve(server, tmp_path / "e.db", calls=2, islands=2, migrate_every=1,
                                    generations=1)
    own = {i: [c for c in evolver.pop.all(target.key) if c.island == i] for i in (0, 1)}
    assert len(own[0]) == len(own[1]) == 1 and len(server.requests) == 2
    assert own[0][0].id in {c.id for c in evolver.pop.members(target.key, 1)}


def test_exported_candidates_are_taken_by_bench(tmp_path, capsys):
    with FakeServer([reply(answer(GOOD))]) as server:
        evolver, _, target = evolve(server, tmp_path / "e.db", calls=1)
    paths = export_best(evolver.pop, target, tmp_path / "best", top=3)
    name = evolver.pop.best(target.key)[0].name
    assert [p.name for p in paths] == [f"{name}.cu"] and paths[0].read_text().endswith(GOOD)
    out = tmp_path / "bench.csv"
    assert main(["bench", "--runner", "dummy", "--shapes", "64x64x64", "--candidates", str(tmp_path / "best"),
                 "--baselines", "torch", "--db", str(tmp_path / "b.db"), "--csv", str(out)]) == 0
    with open(out, newline="") as f:
        assert {r["method"] for r in csv.DictReader(f)} == {"torch", name}


# -- the command ---------------------------------------------------------------------------------------------------

def evolve_args(tmp_path, server_url, *extra, runner="dummy"):
    return ["evolve", "--shapes", "64x64x64", "--runner", runner, "--base-url", server_url, "--islands", "1",
            "--concurrency", "1", "--db", str(tmp_path / "e.db"), *extra]


def test_the_evolve_command_runs_seeds_calls_and_export(tmp_path, capsys):
    with FakeServer([reply(answer(BETTER)), reply(answer(CHEAT))]) as server:
        code = main(evolve_args(tmp_path, server.url, "--model", "scripted-model", "--budget-calls", "2",
                                "--seed", str(ROOT / "examples" / "hgemm_wmma.cu"), "--export", str(tmp_path / "x")))
    out = capsys.readouterr().out
    assert code == 0 and "stopped: call budget spent (2 of 2 calls)" in out
    assert len(list((tmp_path / "x").glob("*.cu"))) == 2 and (tmp_path / "e.usage.jsonl").exists()


def test_the_command_uses_the_servers_only_model_when_none_is_given(tmp_path, capsys, monkeypatch):
    monkeypatch.delenv("KERNELRL_LLM_MODEL", raising=False)
    with FakeServer([reply(answer(GOOD))], models=["org/coder"]) as server:
        assert main(evolve_args(tmp_path, server.url, "--budget-calls", "1")) == 0
    assert server.requests[0]["model"] == "org/coder"


def test_without_a_gpu_the_command_stops_before_any_call(tmp_path, capsys, monkeypatch):
    monkeypatch.setattr("kernelrl.environment.gpu_info", lambda: {})
    with FakeServer([reply(answer(GOOD))]) as server:
        code = main(evolve_args(tmp_path, server.url, "--model", "m", "--budget-calls", "1", runner="local"))
    err = [line for line in capsys.readouterr().err.splitlines() if line.strip()]
    assert code == 2 and len(err) == 1 and "no NVIDIA GPU" in err[0] and server.requests == []


def test_a_refusing_server_is_one_line_and_exit_code_2(tmp_path, capsys):
    with FakeServer([error(401, "Invalid API key")]) as server:
        code = main(evolve_args(tmp_path, server.url, "--model", "m", "--budget-calls", "1"))
    err = [line for line in capsys.readouterr().err.splitlines() if line.strip()]
    assert code == 2 and len(err) == 1 and err[0].startswith("kernelrl:") and "Invalid API key" in err[0]

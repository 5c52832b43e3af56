"""The bench job's progress counts shapes, on the CPU with the dummy runner: a shape whose report comes in parts (a
crashed candidate's verdict first, then the other methods) is one shape done, in every mode, not one per part."""

import pytest

from kernelrl.cli.ui import RichUI
from kernelrl.jobs.measure import BenchConfig, NullUI, run_bench
from kernelrl.run.runner import RunSettings
from kernelrl.workloads.hgemm import parse_shapes

MODES = ["device", "offline", "server"]
SHAPES = "sample:3:0"


@pytest.fixture(autouse=True)
def _private_cache(tmp_path, monkeypatch):
    monkeypatch.setenv("KERNELRL_CACHE", str(tmp_path / "cache"))


class Recording(NullUI):
    def __init__(self):
        self.started, self.done = [], []

    def start_tasks(self, total, resumed):
        self.started.append((total, resumed))

    def task_done(self, task, records):
        self.done.append((task.problem.name, records))


def _bench(tmp_path, ui, names=("a_crash", "b_fast", "c_broken")):
    paths = []
    for name in names:
        path = tmp_path / f"{name}.cu"
        path.write_text("// the dummy runner does not compile\n")
        paths.append(str(path))
    cfg = BenchConfig(problems=parse_shapes(SHAPES), modes=MODES, candidates=paths, baselines=["torch", "cublas_nn"],
                      settings=RunSettings(), db_path=tmp_path / "results.db", runner="dummy", command="test")
    return run_bench(cfg, ui)


def test_each_shape_is_done_once_with_all_its_records(tmp_path):
    ui = Recording()
    outcome = _bench(tmp_path, ui)
    shapes = [p.name for p in parse_shapes(SHAPES)]
    assert ui.started == [(len(shapes), 0)]
    assert sorted(name for name, _ in ui.done) == sorted(shapes)  # once each, though a_crash reported apart
    for _, records in ui.done:
        got = {(r["method"], r["mode"]) for r in records}
        assert got == {(m, mode) for m in ("torch", "cublas_nn", "a_crash", "b_fast", "c_broken") for mode in MODES}
    assert outcome.measured_tasks == len(shapes)


def test_the_bar_counts_shapes_done_out_of_shapes(tmp_path):
    ui = RichUI(quiet=True)
    try:
        _bench(tmp_path, ui)
    finally:
        ui.finish()
    bar = ui.bar.tasks[0]
    assert bar.description == "shapes measured"
    assert (bar.completed, bar.total) == (3, 3)


def test_a_resumed_run_has_nothing_left_to_count(tmp_path):
    _bench(tmp_path, NullUI())
    ui = RichUI(quiet=True)
    try:
        _bench(tmp_path, ui)
    finally:
        ui.finish()
    bar = ui.bar.tasks[0]
    assert (bar.completed, bar.total) == (0, 0)

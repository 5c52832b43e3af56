"""The results database and the CSV/summary layer above it."""

import json
import math

import pytest

from kernelrl.db import Database
from kernelrl.results import CSV_COLUMNS, read_csv, summarize, times_by_shape, write_csv
from kernelrl.workloads.hgemm import GemmProblem

GPU = "NVIDIA H200"
P = GemmProblem(64, 128, 256)
REQUIRED = ["m", "n", "k", "acc", "mode", "method", "time_us_median", "time_us_p10", "time_us_p90", "tflops",
            "max_rel_err", "verified", "reason"]


def record(method, mode="device", t=10.0, verified=True, reason=None, extra=None):
    return {"method": method, "mode": mode, "time_us_median": t if verified else None,
            "time_us_p10": t * 0.9 if verified else None, "time_us_p90": t * 1.1 if verified else None,
            "samples": 7 if verified else 0, "tflops": 1.5 if verified else None,
            "max_rel_err": 1e-4 if verified else None, "verified": verified, "reason": reason, "extra": extra or {}}


@pytest.fixture
def db(tmp_path):
    database = Database(tmp_path / "sub" / "results.db")
    yield database
    database.close()


# -- Database ------------------------------------------------------------------------------------------------

def test_add_then_measured(db):
    db.add(GPU, P, "hot", 100.0, [record("torch"), record("cand")], {"torch": "", "cand": "abc"}, {}, None)
    assert db.measured(GPU, P, "device", "hot", 100.0) == {("torch", ""), ("cand", "abc")}


def test_envs_count_the_stored_rows_by_the_environment_they_were_measured_in(db):
    confined, open_ = {"sandbox": "Landlock ABI 7: writes only beneath /tmp/x"}, {"sandbox": "none (no Landlock)"}
    db.add(GPU, P, "hot", 100.0, [record("torch"), record("cand")], {"torch": "", "cand": "a"}, confined, None)
    db.add(GPU, GemmProblem(64, 64, 64), "hot", 100.0, [record("torch")], {"torch": ""}, open_, None)
    db.add("other gpu", P, "hot", 100.0, [record("torch")], {"torch": ""}, open_, None)
    assert {json.dumps(json.loads(text)): n for text, n in db.envs(GPU).items()} == \
        {json.dumps(confined): 2, json.dumps(open_): 1}


def test_measured_is_per_gpu_problem_and_mode(db):
    db.add(GPU, P, "hot", 100.0, [record("torch")], {}, {}, None)
    assert db.measured("other gpu", P, "device", "hot", 100.0) == set()
    assert db.measured(GPU, P.with_acc("fp16"), "device", "hot", 100.0) == set()
    assert db.measured(GPU, P, "offline", "hot", 100.0) == set()


def test_rows_round_trip(db):
    run_id = db.start_run("kernelrl bench", {"gpu": GPU})
    db.add(GPU, P, "hot", 100.0, [record("cand", t=12.5, extra={"algo_index": 3})], {"cand": "k1"}, {"gpu": GPU},
           run_id)
    (row,) = db.rows(GPU)
    assert (row["m"], row["n"], row["k"], row["acc"], row["layout"]) == (64, 128, 256, "fp32", "nn")
    assert (row["method"], row["method_key"], row["mode"]) == ("cand", "k1", "device")
    assert row["time_us_median"] == 12.5 and row["time_us_p10"] == pytest.approx(11.25)
    assert row["verified"] is True and row["reason"] is None
    assert row["extra"] == {"algo_index": 3}
    assert row["run_id"] == run_id


def test_unverified_rows_round_trip(db):
    db.add(GPU, P, "hot", 100.0, [record("cand", verified=False, reason="crash: x")], {"cand": "k"}, {}, None)
    (row,) = db.rows(GPU)
    assert row["verified"] is False and row["reason"] == "crash: x" and row["time_us_median"] is None


def test_re_adding_replaces(db):
    db.add(GPU, P, "hot", 100.0, [record("torch", t=10.0)], {}, {}, None)
    db.add(GPU, P, "hot", 100.0, [record("torch", t=7.0)], {}, {}, None)
    rows = db.rows(GPU)
    assert len(rows) == 1 and rows[0]["time_us_median"] == 7.0


def test_a_later_run_measuring_a_shape_again_supersedes_the_earlier_group_whole(db):
    first, second = db.start_run("one", {}), db.start_run("two", {})
    db.add(GPU, P, "hot", 100.0, [record("torch", t=10.0), record("lib", t=8.0)], {"lib": "A"}, {}, first)
    db.add(GPU, P, "hot", 100.0, [record("torch", t=9.0), record("lib", t=7.0)], {"lib": "B"}, {}, second)
    assert db.measured(GPU, P, "device", "hot", 100.0) == {("torch", ""), ("lib", "B")}
    old = db.superseded(GPU)
    assert {(r["method"], r["method_key"], r["time_us_median"], r["run_id"], r["superseded_by"]) for r in old} == \
        {("torch", "", 10.0, first, second), ("lib", "A", 8.0, first, second)}


def test_a_later_run_of_other_methods_supersedes_nothing(db):
    first, second = db.start_run("one", {}), db.start_run("two", {})
    db.add(GPU, P, "hot", 100.0, [record("torch"), record("cand")], {"cand": "v1"}, {}, first)
    db.add(GPU, P, "hot", 100.0, [record("torch")], {"torch": ":confirm15"}, {}, second)
    assert db.measured(GPU, P, "device", "hot", 100.0) == {("torch", ""), ("cand", "v1"), ("torch", ":confirm15")}
    assert db.superseded() == []


def test_a_verdict_measured_beside_nothing_keeps_what_is_stored(db):
    first, second = db.start_run("one", {}), db.start_run("two", {})
    db.add(GPU, P, "hot", 100.0, [record("torch"), record("cand", t=4.0)], {"cand": "v1"}, {}, first)
    db.add(GPU, P, "hot", 100.0, [record("cand", verified=False, reason="compile error: timed out")], {"cand": "v1"},
           {}, second, supersede=False)
    rows = {r["method"]: r for r in db.rows(GPU)}
    assert rows["cand"]["time_us_median"] == 4.0 and rows["cand"]["run_id"] == first and "torch" in rows
    assert db.superseded() == []


def test_method_key_selects_the_version(db):
    db.add(GPU, P, "hot", 100.0, [record("cand", t=10.0)], {"cand": "v1"}, {}, None)
    db.add(GPU, P, "hot", 100.0, [record("cand", t=5.0)], {"cand": "v2"}, {}, None)
    assert db.measured(GPU, P, "device", "hot", 100.0) == {("cand", "v1"), ("cand", "v2")}
    rows = db.rows(GPU, methods={"cand": "v2"})
    assert [(r["method_key"], r["time_us_median"]) for r in rows] == [("v2", 5.0)]
    assert db.rows(GPU, methods={"cand": "v3"}) == []


def test_rows_filters_problems_and_modes(db):
    other = GemmProblem(8, 8, 8)
    db.add(GPU, P, "hot", 100.0, [record("torch"), record("torch", mode="offline")], {}, {}, None)
    db.add(GPU, other, "hot", 100.0, [record("torch")], {}, {}, None)
    rows = db.rows(GPU, problems=[other])
    assert [(r["m"], r["mode"]) for r in rows] == [(8, "device")]
    assert {(r["m"], r["mode"]) for r in db.rows(GPU, modes=["offline"])} == {(64, "offline")}


def test_cache_and_qps_are_stored_only_where_they_apply(db):
    records = [record("torch", mode=m) for m in ("device", "offline", "server")]
    db.add(GPU, P, "cold", 50.0, records, {}, {}, None)
    stored = {r["mode"]: (r["cache"], r["qps"])
              for r in db.conn.execute("SELECT mode, cache, qps FROM measurements")}
    assert stored == {"device": ("cold", 0.0), "offline": ("-", 0.0), "server": ("-", 50.0)}


def test_settings_that_do_not_apply_do_not_split_rows(db):
    db.add(GPU, P, "cold", 50.0, [record("torch", mode=m) for m in ("device", "offline", "server")], {}, {}, None)
    # another cache setting and another qps still find the offline rows
    assert db.measured(GPU, P, "offline", "hot", 10.0) == {("torch", "")}
    assert db.measured(GPU, P, "device", "hot", 50.0) == set()
    assert db.measured(GPU, P, "server", "hot", 50.0) == {("torch", "")}
    assert db.measured(GPU, P, "server", "cold", 10.0) == set()
    assert {r["mode"] for r in db.rows(GPU, cache="hot", qps=50.0)} == {"offline", "server"}


def test_reopening_keeps_rows(tmp_path):
    first = Database(tmp_path / "r.db")
    first.add(GPU, P, "hot", 100.0, [record("torch")], {}, {}, None)
    first.close()
    again = Database(tmp_path / "r.db")
    assert len(again.rows(GPU)) == 1
    again.close()


def test_lt_algos_round_trip(db):
    tuning = {"key": "64x128x256:fp32:nn:33554432", "algo": "ab" * 64, "algo_index": 4, "time_ms": 0.0125,
              "candidates": 37, "valid": 30, "search_s": 1.5}
    db.add_lt_algo(GPU, 130000, tuning)
    stored = db.lt_algos(GPU)[tuning["key"]]
    assert {k: stored[k] for k in tuning} == tuning
    assert db.lt_algos(GPU, cublaslt=130000).keys() == {tuning["key"]}
    assert db.lt_algos(GPU, cublaslt=120000) == {}
    assert db.lt_algos("other gpu") == {}


def test_lt_algo_re_add_replaces(db):
    tuning = {"key": "k", "algo": "00", "algo_index": 1, "time_ms": 1.0, "candidates": 2, "search_s": 0.1}
    db.add_lt_algo(GPU, 1, tuning)
    db.add_lt_algo(GPU, 1, {**tuning, "algo_index": 2})
    assert db.lt_algos(GPU)["k"]["algo_index"] == 2
    assert db.lt_algos(GPU)["k"]["valid"] is None


# -- summary -------------------------------------------------------------------------------------------------

SMALL, MEDIUM, LARGE = (64, 64, 64), (1024, 1024, 1024), (4096, 4096, 4096)


def row(shape, method, t, verified=True, mode="device", acc="fp32"):
    m, n, k = shape
    return {"m": m, "n": n, "k": k, "acc": acc, "mode": mode, "method": method, "time_us_median": t,
            "time_us_p10": t, "time_us_p90": t, "tflops": 2 * m * n * k / (t * 1e6) if t else None,
            "max_rel_err": 1e-4, "verified": verified, "reason": None if verified else "wrong values"}


@pytest.fixture
def made_up_rows():
    return [
        row(SMALL, "cublas_nn", 10.0), row(SMALL, "cublas_tn", 8.0), row(SMALL, "torch", 12.0),
        row(SMALL, "mine", 5.0),
        row(LARGE, "cublas_nn", 100.0), row(LARGE, "cublas_tn", 120.0), row(LARGE, "torch", 110.0),
        row(LARGE, "mine", 125.0),
        # a third shape where the candidate is fast but wrong: it must not count
        row(MEDIUM, "cublas_nn", 20.0), row(MEDIUM, "cublas_tn", 20.0), row(MEDIUM, "torch", 20.0),
        row(MEDIUM, "mine", 1.0, verified=False),
    ]


def pick(summary, baseline, cls="all", method="mine", mode="device"):
    found = [s for s in summary if (s["mode"], s["method"], s["baseline"], s["class"]) == (mode, method, baseline, cls)]
    assert len(found) <= 1
    return found[0] if found else None


def test_best_of_layout_uses_the_faster_layout(made_up_rows):
    table = times_by_shape(made_up_rows)
    assert table[("device", (*SMALL, "fp32"))]["cublas_best"] == 8.0
    assert table[("device", (*LARGE, "fp32"))]["cublas_best"] == 100.0


def test_best_of_layout_needs_both_layouts(made_up_rows):
    rows = [r for r in made_up_rows if not (r["method"] == "cublas_tn" and r["m"] == 64)]
    assert "cublas_best" not in times_by_shape(rows)[("device", (*SMALL, "fp32"))]


def test_summary_against_best_of_layout(made_up_rows):
    s = pick(summarize(made_up_rows), "cublas_best")
    # speedups: 8/5 = 1.6 on the small shape, 100/125 = 0.8 on the large one
    assert s["shapes"] == 2
    assert s["geomean"] == pytest.approx(math.sqrt(1.6 * 0.8))
    assert s["mean"] == pytest.approx(1.2)
    assert s["win_rate"] == 0.5
    assert (s["min"], s["max"]) == (pytest.approx(0.8), pytest.approx(1.6))


@pytest.mark.parametrize("baseline, speedups", [("cublas_nn", (2.0, 0.8)), ("cublas_tn", (1.6, 0.96)),
                                                ("torch", (2.4, 0.88))])
def test_summary_against_each_baseline(made_up_rows, baseline, speedups):
    s = pick(summarize(made_up_rows), baseline)
    assert s["geomean"] == pytest.approx(math.sqrt(speedups[0] * speedups[1]))
    assert s["mean"] == pytest.approx(sum(speedups) / 2)
    assert s["win_rate"] == 0.5


def test_unverified_rows_are_excluded(made_up_rows):
    summary = summarize(made_up_rows)
    assert all(s["shapes"] <= 2 for s in summary if s["class"] == "all")
    assert pick(summary, "cublas_nn", cls="medium") is None


def test_per_class_rows(made_up_rows):
    summary = summarize(made_up_rows)
    small, large = pick(summary, "cublas_best", "small"), pick(summary, "cublas_best", "large")
    assert (small["shapes"], small["geomean"], small["win_rate"]) == (1, pytest.approx(1.6), 1.0)
    assert (large["shapes"], large["geomean"], large["win_rate"]) == (1, pytest.approx(0.8), 0.0)


def test_baselines_without_measurements_get_no_rows(made_up_rows):
    assert pick(summarize(made_up_rows), "cublaslt_auto_best") is None


def test_modes_are_summarized_apart(made_up_rows):
    rows = made_up_rows + [row(SMALL, "cublas_nn", 30.0, mode="offline"), row(SMALL, "mine", 10.0, mode="offline")]
    summary = summarize(rows)
    assert pick(summary, "cublas_nn", mode="offline")["geomean"] == pytest.approx(3.0)
    assert pick(summary, "cublas_nn", mode="device")["shapes"] == 2


def test_without_candidates_baselines_are_compared_with_torch(made_up_rows):
    rows = [r for r in made_up_rows if r["method"] != "mine"]
    summary = summarize(rows)
    assert {s["baseline"] for s in summary} == {"torch"}
    s = pick(summary, "torch", method="cublas_best")
    # torch / best: 12/8 small, 110/100 large, 20/20 medium
    assert s["shapes"] == 3
    assert s["geomean"] == pytest.approx((1.5 * 1.1 * 1.0) ** (1 / 3))
    assert s["win_rate"] == pytest.approx(2 / 3)


# -- CSV -----------------------------------------------------------------------------------------------------

def test_csv_has_the_required_columns(tmp_path, made_up_rows):
    path = tmp_path / "out" / "results.csv"
    write_csv(made_up_rows, path)
    header = path.read_text().splitlines()[0].split(",")
    assert header[:len(REQUIRED)] == REQUIRED
    assert header == CSV_COLUMNS


def test_csv_round_trip(tmp_path, made_up_rows):
    path = tmp_path / "results.csv"
    write_csv(made_up_rows, path)
    back = read_csv(path)
    assert len(back) == len(made_up_rows)

    def key(r):
        return r["m"], r["method"]

    for original, read in zip(sorted(made_up_rows, key=key), sorted(back, key=key)):
        for col in ("m", "n", "k", "acc", "mode", "method", "verified"):
            assert read[col] == original[col], col
        for col in ("time_us_median", "time_us_p10", "time_us_p90", "tflops", "max_rel_err"):
            assert read[col] == pytest.approx(original[col], rel=1e-5), col
        assert (read["reason"] or None) == original["reason"]


def test_csv_round_trip_keeps_missing_times_missing(tmp_path):
    failed = {**row(SMALL, "mine", None, verified=False), "max_rel_err": None}
    write_csv([failed], tmp_path / "r.csv")
    (back,) = read_csv(tmp_path / "r.csv")
    assert back["time_us_median"] is None and back["max_rel_err"] is None and back["verified"] is False
    assert back["reason"] == "wrong values"


def test_summary_of_csv_equals_summary_of_rows(tmp_path, made_up_rows):
    write_csv(made_up_rows, tmp_path / "r.csv")
    again = summarize(read_csv(tmp_path / "r.csv"))
    original = summarize(made_up_rows)
    assert [(s["method"], s["baseline"], s["class"]) for s in again] == \
        [(s["method"], s["baseline"], s["class"]) for s in original]
    assert [s["geomean"] for s in again] == pytest.approx([s["geomean"] for s in original], rel=1e-5)


def test_csv_write_leaves_no_temp_files(tmp_path, made_up_rows):
    write_csv(made_up_rows, tmp_path / "r.csv")
    write_csv(made_up_rows[:2], tmp_path / "r.csv")
    assert [p.name for p in tmp_path.iterdir()] == ["r.csv"]
    assert len(read_csv(tmp_path / "r.csv")) == 2


def test_a_records_verdict_key_is_stored_and_read_back(tmp_path):
    from kernelrl.db import Database
    from kernelrl.workloads.hgemm import GemmProblem
    db = Database(tmp_path / "r.db")
    p = GemmProblem(64, 64, 64)
    rec = {"method": "cheat", "mode": "device", "time_us_median": None, "time_us_p10": None, "time_us_p90": None,
           "samples": 0, "tflops": None, "max_rel_err": None, "verified": False,
           "reason": "stale result: the previous inputs' answer", "verdict": "stale result", "extra": {}}
    db.add("dummy", p, "hot", 100.0, [rec], {"cheat": "k"}, {}, None)
    [row] = db.rows("dummy", [p], ["device"], methods={"cheat": "k"})
    assert row["verdict"] == "stale result"


# The measurements table as older versions wrote it: before verdict keys (no `verdict`), and before dtypes.
OLD_MEASUREMENTS = (
    "CREATE TABLE measurements (gpu TEXT NOT NULL, m INTEGER NOT NULL, n INTEGER NOT NULL, k INTEGER NOT NULL, "
    "acc TEXT NOT NULL, layout TEXT NOT NULL, mode TEXT NOT NULL, cache TEXT NOT NULL, qps REAL NOT NULL, "
    "method TEXT NOT NULL, method_key TEXT NOT NULL, time_us_median REAL, time_us_p10 REAL, time_us_p90 REAL, "
    "samples INTEGER, tflops REAL, max_rel_err REAL, verified INTEGER NOT NULL, reason TEXT, extra TEXT, env TEXT, "
    "run_id INTEGER, created REAL, {verdict}PRIMARY KEY (gpu, m, n, k, acc, layout, mode, cache, qps, method, "
    "method_key))")


def test_a_database_from_before_verdict_keys_gains_the_column(tmp_path):
    import sqlite3

    from kernelrl.db import Database
    path = tmp_path / "old.db"
    conn = sqlite3.connect(path)
    conn.execute(OLD_MEASUREMENTS.format(verdict=""))
    conn.commit()
    conn.close()
    db = Database(path)
    names = {r["name"] for r in db.conn.execute("PRAGMA table_info(measurements)")}
    assert "verdict" in names


def test_an_old_row_with_only_a_reason_is_read_through_the_migration(tmp_path):
    import sqlite3

    from kernelrl.db import Database
    from kernelrl.workloads.hgemm import GemmProblem
    path = tmp_path / "old.db"
    conn = sqlite3.connect(path)
    conn.execute(OLD_MEASUREMENTS.format(verdict=""))
    for method, reason in (("cheat", "on 64x64x64: during timing: stale result: cached"), ("odd", "nobody wrote this")):
        conn.execute("INSERT INTO measurements VALUES ('g', 64, 64, 64, 'fp32', 'nn', 'device', 'hot', 0, ?, '', "
                     "NULL, NULL, NULL, 0, NULL, NULL, 0, ?, '{}', '{}', NULL, 0)", (method, reason))
    conn.commit()
    conn.close()
    db = Database(path)
    rows = {r["method"]: r for r in db.rows("g", [GemmProblem(64, 64, 64)], ["device"])}
    assert rows["cheat"]["verdict"] == "during timing" and rows["cheat"]["reason"].endswith("stale result: cached")
    assert rows["odd"]["verdict"] is None  # a line no evaluator wrote has no key (the evaluator's own failure)
    rec = {"method": "new", "mode": "device", "time_us_median": None, "time_us_p10": None, "time_us_p90": None,
           "samples": 0, "tflops": None, "max_rel_err": None, "verified": False,
           "reason": "wrong values: hang: words of another key", "verdict": "wrong values", "extra": {}}
    db.add("g", GemmProblem(64, 64, 64), "hot", 100.0, [rec], {}, {}, None, supersede=False)
    [new] = [r for r in db.rows("g", [GemmProblem(64, 64, 64)], ["device"]) if r["method"] == "new"]
    assert new["verdict"] == "wrong values"  # a stored key is read as stored


def test_a_database_from_before_dtypes_keeps_its_rows_as_fp16_and_keys_by_dtype(tmp_path, made_up_rows):
    import sqlite3

    from kernelrl.db import Database
    from kernelrl.workloads.hgemm import GemmProblem
    path = tmp_path / "old.db"
    conn = sqlite3.connect(path)
    conn.execute(OLD_MEASUREMENTS.format(verdict="verdict TEXT, "))
    conn.execute("INSERT INTO measurements VALUES ('g', 64, 64, 64, 'fp32', 'nn', 'device', 'hot', 0, 'torch', '', "
                 "5.0, 4.0, 6.0, 7, 1.0, 0.0, 1, NULL, '{}', '{}', NULL, 0, NULL)")
    conn.commit()
    conn.close()
    db = Database(path)
    fp16, bf16 = GemmProblem(64, 64, 64), GemmProblem(64, 64, 64, dtype="bf16")
    [old] = db.rows("g", [fp16], ["device"])
    assert old["dtype"] == "fp16" and old["time_us_median"] == 5.0
    rec = {"method": "torch", "mode": "device", "time_us_median": 9.0, "time_us_p10": 8.0, "time_us_p90": 10.0,
           "samples": 7, "tflops": 1.0, "max_rel_err": 0.0, "verified": True, "reason": None, "extra": {}}
    db.add("g", bf16, "hot", 100.0, [rec], {}, {}, None)
    assert [r["time_us_median"] for r in db.rows("g", [bf16], ["device"])] == [9.0]
    assert [r["time_us_median"] for r in db.rows("g", [fp16], ["device"])] == [5.0]  # one row each, not replaced

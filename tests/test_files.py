"""kernelrl/files.py: JSON lines appended whole from any thread, CSVs replaced atomically with one cell format."""

import csv
import json
import threading

from kernelrl.files import JsonLines, csv_cell, write_csv


def test_lines_written_from_threads_stay_whole_and_stamped(tmp_path):
    log = JsonLines(tmp_path / "sub" / "log.jsonl")
    threads = [threading.Thread(target=lambda i=i: [log.write({"thread": i, "n": n, "pad": "x" * 5000})
                                                    for n in range(50)]) for i in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    records = [json.loads(line) for line in (tmp_path / "sub" / "log.jsonl").read_text().splitlines()]
    assert len(records) == 200 and all(r["time"].endswith("+00:00") for r in records)


def test_what_json_cannot_hold_goes_through_default(tmp_path):
    JsonLines(tmp_path / "a.jsonl", default=lambda v: f"<{type(v).__name__}>").write({"x": {1, 2}})
    assert json.loads((tmp_path / "a.jsonl").read_text())["x"] == "<set>"


def test_a_log_without_a_path_writes_nothing(tmp_path):
    JsonLines(None).write({"x": 1})
    assert list(tmp_path.iterdir()) == []


def test_a_table_keeps_its_columns_and_formats_its_cells(tmp_path):
    write_csv(tmp_path / "t.csv", [{"a": 1 / 3, "b": True, "c": None, "ignored": 1}], ["a", "b", "c"])
    with open(tmp_path / "t.csv", newline="") as f:
        assert list(csv.DictReader(f)) == [{"a": "0.333333", "b": "1", "c": ""}]
    assert [p.name for p in tmp_path.iterdir()] == ["t.csv"]  # no temporary file left beside it


def test_cells():
    assert (csv_cell(2.0), csv_cell(False), csv_cell(None), csv_cell("x")) == ("2", 0, "", "x")

"""The referee (harness/referee.py) on KernelBench (kernelbench/referee.py): an accepted pair is run again in two
processes the candidate cannot reach (the task's reference alone, and the candidate alone), talking to the runner in
plain frames; its values and its runner-timed speed must agree with what its worker reported. CPU processes; the
forged report itself is in the corpus (forges_result_through_memmove)."""

import csv
from pathlib import Path

import pytest
import torch

from kernelrl.cli import main
from kernelrl.examples import TASKS_DIR
from kernelrl.harness.verdicts import Verdict
from kernelrl.harness import referee as core
from kernelrl.harness import referee_side, wire
from kernelrl.kernelbench import referee, referee_process
from kernelrl.kernelbench.pairs import KBSettings
from tests.kb_helpers import candidate as kb_candidate
from tests.kb_helpers import task as kb_task

TASK = str(TASKS_DIR / "10_SwishPlusOne.py")
HEADER = "import torch\nimport torch.nn as nn\n\n\nclass ModelNew(nn.Module):\n    def forward(self, x):\n"
HONEST = HEADER + "        return x * torch.sigmoid(x) + 1.0\n"
ZEROS = HEADER + "        return torch.zeros_like(x)\n"
SLOW = "import time\n" + HEADER + "        time.sleep(0.01)\n        return x * torch.sigmoid(x) + 1.0\n"
RAISES_HERE = HEADER + "        raise RuntimeError('not in this process')\n"


def settings(tmp_path: Path) -> KBSettings:
    return KBSettings(device="cpu", baselines=("eager",), hang_timeout_s=60.0, compile_timeout_s=60.0,
                      extensions_dir=str(tmp_path / "ext"))


def rule(tmp_path: Path, source: str, claimed: float | None = 1.0) -> core.Ruling:
    cand = tmp_path / "cand.py"
    cand.write_text(source)
    return referee.referee(TASK, str(cand), settings(tmp_path), claimed)


def test_an_honest_candidate_gets_no_verdict_and_a_runner_timed_speedup(tmp_path):
    cand = tmp_path / "cand.py"  # a matmul: its calls outweigh making their inputs and digests, even on a CPU
    cand.write_text((TASKS_DIR / "1_Matmul.py").read_text().replace("class Model(", "class ModelNew("))
    ruling = referee.referee(str(TASKS_DIR / "1_Matmul.py"), str(cand), settings(tmp_path), 1.0)
    assert ruling.verdict is None, ruling.detail
    assert ruling.speedup is not None and 0.2 < ruling.speedup < 5.0, ruling.notes


def test_an_honest_elementwise_candidate_gets_no_verdict(tmp_path):
    ruling = rule(tmp_path, HONEST)
    assert ruling.verdict is None, ruling.detail


def test_outputs_computed_outside_the_worker_that_are_wrong_are_its_verdict(tmp_path):
    ruling = rule(tmp_path, ZEROS)
    assert ruling.verdict is Verdict.REFEREE and "its outputs are wrong" in ruling.detail


def test_a_speedup_its_worker_reported_far_beyond_what_the_runner_sees_earns_only_the_runner_s(tmp_path):
    ruling = rule(tmp_path, SLOW, claimed=50.0)
    assert ruling.verdict is None and ruling.speedup is not None, ruling
    assert ruling.scale == pytest.approx(50.0 / ruling.speedup)


def test_a_worker_speedup_the_runner_does_not_see_is_replaced_by_the_runner_s_ratio(tmp_path, monkeypatch):
    monkeypatch.setattr(core, "_speed", lambda ref, cand, ruling: 1.0)  # a loaded CPU's timing is noise
    ruling = rule(tmp_path, HONEST, claimed=3.0)  # a noisy worker reading of an honest candidate (about 1x)
    assert ruling.verdict is None, ruling.detail
    assert ruling.scale == pytest.approx(3.0)
    assert any("its speedups are the runner's ratio" in n for n in ruling.notes)


def test_a_candidate_that_will_not_run_outside_its_worker_is_its_verdict(tmp_path):
    ruling = rule(tmp_path, RAISES_HERE)
    assert ruling.verdict is Verdict.REFEREE and "not in this process" in ruling.detail


def test_a_ruling_that_does_not_believe_the_worker_s_speed_scales_the_candidate_s_times():
    records = [{"method": "candidate", "baseline": "eager", "verified": True, "speedup": 3.0, "candidate_us": 10.0},
               {"method": "candidate", "baseline": "compile_default", "verified": True, "speedup": 1.5,
                "candidate_us": 10.0}]
    referee.apply(records, core.Ruling(None, "", 1.0, [], scale=3.0))
    assert [r["speedup"] for r in records] == [1.0, 0.5] and [r["candidate_us"] for r in records] == [30.0, 30.0]
    assert all(r["verified"] for r in records)


def test_the_ruling_marks_every_candidate_record_and_leaves_baselines_alone():
    records = [{"method": "candidate", "baseline": "eager", "verified": True, "speedup": 50.0},
               {"method": "eager", "verified": True}]
    referee.apply(records, core.Ruling(Verdict.REFEREE, "timed from outside: 1.00x", 1.0, ["a note"]))
    assert records[0]["verified"] is False and records[0]["reason"] == "referee: timed from outside: 1.00x"
    assert records[0]["referee_speedup"] == 1.0 and records[0]["extra"]["notes"] == ["referee: a note"]
    assert records[1] == {"method": "eager", "verified": True}
    assert referee.claimed_speedup(records) == 50.0


@pytest.mark.parametrize("frame", [b"", b"\x05\x00\x00\x00[1,2]", b"\x03\x00\x00\x00abc"])
def test_a_frame_that_is_not_an_object_is_refused_as_data(frame):
    class Conn:
        def recv_bytes(self, max_bytes=None):
            return frame

    with pytest.raises(ValueError):
        wire.recv(Conn())


def test_a_reference_that_fails_in_its_own_process_even_alone_leaves_no_verdict_and_a_note(tmp_path):
    task = tmp_path / "task.py"
    task.write_text(Path(TASK).read_text().replace("return x * torch.sigmoid(x) + 1.0",
                                                   "raise RuntimeError('the reference cannot run here')"))
    cand = tmp_path / "cand.py"
    cand.write_text(HONEST)
    ruling = referee.referee(str(task), str(cand), settings(tmp_path), 1.0)
    assert ruling.verdict is None
    assert any(n.startswith("not refereed") and "cannot run here" in n for n in ruling.notes), ruling.notes


COUNTS_CALLS = HEADER.replace("class ModelNew(nn.Module):\n", "class ModelNew(nn.Module):\n    calls = 0\n\n") + \
    "        ModelNew.calls += 1\n" \
    "        if ModelNew.calls > 6:  # past the checked calls: the timed ones\n" \
    "            return torch.zeros_like(x)\n" \
    "        return x * torch.sigmoid(x) + 1.0\n"


def test_timed_calls_that_skip_their_work_answer_a_digest_that_is_not_the_reference_s(tmp_path):
    ruling = rule(tmp_path, COUNTS_CALLS)
    assert ruling.verdict is Verdict.REFEREE and "did not compute what its checked ones did" in ruling.detail


def test_kb_eval_without_the_referee_says_so_and_records_no_referee_speedup(tmp_path, capsys):
    for folder in ("tasks", "cands"):
        (tmp_path / folder).mkdir()
    (tmp_path / "tasks" / "good.py").write_text(kb_task())
    (tmp_path / "cands" / "good.py").write_text(kb_candidate("torch.tanh(x)"))
    out = tmp_path / "out.csv"
    main(["kb", "eval", "--tasks", str(tmp_path / "tasks"), "--candidates", str(tmp_path / "cands"), "--device", "cpu",
          "--rounds", "1", "--db", str(tmp_path / "r.db"), "--csv", str(out), "--no-referee"])
    assert "--no-referee: accepted pairs are not run again" in capsys.readouterr().out
    (row,) = csv.DictReader(open(out))
    assert row["verified"] == "1" and row["referee_speedup"] == ""


class _StubReference:
    """A reference side that runs (or not) once the candidate's process is stopped."""

    def __init__(self, runs: bool):
        self.runs = runs

    def load(self):
        pass

    def ask(self, header, body=b""):
        if not self.runs:
            raise core._Refused("the reference outputs: out of memory", "reference")
        return {}, b""


@pytest.mark.parametrize("runs_alone", [True, False])
def test_a_reference_that_fails_beside_the_candidate_is_tried_alone(runs_alone):
    ruling = core.Ruling()
    core._reference_failed(_StubReference(runs_alone),
                              core._Refused("the reference outputs: out of memory", "reference"), ruling)
    if runs_alone:  # the candidate's process kept it from running
        assert ruling.verdict is Verdict.REFEREE and "ran once that process was stopped" in ruling.detail
    else:  # the task cannot be refereed here: a note, no verdict
        assert ruling.verdict is None and ruling.notes[0].startswith("not refereed")


PATCHES_ITS_HARNESS = '''
import sys
rp = sys.modules.get("kernelrl.kernelbench.referee_process")
if rp is not None:
    _handle = rp.Side.handle

    def handle(self, header, body):
        {body}

    rp.Side.handle = handle
'''


def test_a_candidate_process_that_says_its_outputs_are_too_large_to_send_is_its_verdict(tmp_path):
    source = HONEST + PATCHES_ITS_HARNESS.format(body='''if header.get("op") == "outputs":
            return {"tensors": [], "bytes": 0, "sent": False}, b""
        return _handle(self, header, body)''')
    ruling = rule(tmp_path, source)
    assert ruling.verdict is Verdict.REFEREE and "came back as 0 bytes" in ruling.detail


def test_a_digest_the_runner_cannot_read_as_a_number_is_its_verdict_not_a_crash(tmp_path):
    source = HONEST + PATCHES_ITS_HARNESS.format(body='''reply = _handle(self, header, body)
        if header.get("op") == "digest" and reply[0].get("digests"):
            reply[0]["digests"] = [[10 ** 400 for _ in row] for row in reply[0]["digests"]]
        return reply''')
    ruling = rule(tmp_path, source)
    assert ruling.verdict is Verdict.REFEREE and "do not match the reference's" in ruling.detail


def test_a_process_the_candidate_started_in_its_own_session_does_not_outlive_the_ruling(tmp_path):
    marker = tmp_path / "ext" / "child.pid"  # the extension root: a folder the confined candidate may write
    marker.parent.mkdir()
    source = HONEST + f'''
import subprocess, sys
if "kernelrl.kernelbench.referee_process" in sys.modules:
    child = subprocess.Popen(["sleep", "300"], start_new_session=True)
    open({str(marker)!r}, "w").write(str(child.pid))
'''
    rule(tmp_path, source)
    pid = int(marker.read_text())
    stat = Path(f"/proc/{pid}/stat")
    assert not stat.exists() or stat.read_text().rsplit(")", 1)[1].split()[0] == "Z"  # gone, or a zombie


def test_a_stretch_holds_no_more_calls_than_its_share_of_the_free_memory():
    # 1 ms calls would fill the 20 ms stretch with 20; 25 bytes a call in half of 100 free bytes holds 2
    assert core.stretch_calls(0.001, {"free": 100, "input_bytes": 10}, {"output_bytes": 15}) == (2, 20)


def test_a_stretch_holds_one_call_where_even_one_does_not_fit_the_share():
    assert core.stretch_calls(0.001, {"free": 100, "input_bytes": 60}, {"output_bytes": 60}) == (1, 20)


def test_stretches_cut_to_the_free_memory_still_referee_an_honest_candidate_and_say_so(tmp_path, monkeypatch):
    monkeypatch.setattr(core, "MEMORY_SHARE", 1e-12)
    ruling = rule(tmp_path, HONEST)
    assert ruling.verdict is None, ruling.detail
    assert any(n.startswith("stretches of 1 calls") for n in ruling.notes), ruling.notes


def test_the_reference_side_reports_the_free_memory_and_a_call_s_input_and_output_bytes(tmp_path):
    side = referee_process.Side("reference", {"device": "cpu", "task_path": TASK})
    prepared, _ = side.handle({"op": "prepare", "seed": 1, "calls": 2}, b"")
    went, _ = side.handle({"op": "go"}, b"")
    assert prepared["free"] > 0
    assert prepared["input_bytes"] == went["output_bytes"] == 64 * 16384 * 4  # the task's one fp32 input and output


def test_a_digest_over_several_chunks_weighs_every_element_up_to_the_last(monkeypatch):
    monkeypatch.setattr(referee_side, "DIGEST_CHUNK", 1000)
    out = torch.randn(5003, generator=torch.Generator().manual_seed(0))
    changed = out.clone()
    changed[-1] += 100.0  # in the last, partial chunk

    def digest(o):
        return referee_side._weighted(o, torch.Generator().manual_seed(7))

    spread = referee_side._spread(out, torch.Generator().manual_seed(7))
    assert digest(out) == digest(out.clone())
    assert abs(digest(changed) - digest(out)) > core.SIGMAS * 1e-4 * spread


def test_a_ruling_s_wall_time_is_kept_in_the_candidate_s_records(tmp_path):
    ruling = rule(tmp_path, HONEST)
    records = [{"method": "candidate", "baseline": "eager", "verified": True, "speedup": 1.0}]
    referee.apply(records, ruling)
    assert ruling.seconds is not None and records[0]["extra"]["referee_s"] == round(ruling.seconds, 2) > 0


WIDE_SOFTMAX = str(TASKS_DIR / "14_WideSoftmax.py")


def test_outputs_a_trivial_one_would_pass_by_atol_alone_are_judged_scale_aware_as_the_worker_judges_them(tmp_path):
    # every output is near 1.5e-5, under the strict profile's atol = 1e-4: zeros meet atol = rtol alone, and a forged
    # acceptance of them got no verdict from a referee that compared by it alone
    cand = tmp_path / "cand.py"
    cand.write_text(ZEROS)
    ruling = referee.referee(WIDE_SOFTMAX, str(cand), settings(tmp_path), 1.0)
    assert ruling.verdict is Verdict.REFEREE and "scale-aware error" in ruling.detail, ruling


def test_an_honest_candidate_on_a_task_judged_scale_aware_gets_no_verdict(tmp_path):
    cand = tmp_path / "cand.py"
    cand.write_text(HEADER + "        return torch.softmax(x, dim=-1)\n")
    ruling = referee.referee(WIDE_SOFTMAX, str(cand), settings(tmp_path), 1.0)
    assert ruling.verdict is None, ruling.detail


def test_a_task_that_draws_random_numbers_in_its_call_is_refereed_call_by_call_under_one_seed(tmp_path):
    task = tmp_path / "task.py"
    task.write_text(Path(TASK).read_text().replace("return x * torch.sigmoid(x) + 1.0",
                                                   "return torch.nn.functional.dropout(x, 0.5, training=True)"))
    cand = tmp_path / "cand.py"
    cand.write_text(HEADER + "        return torch.nn.functional.dropout(x, 0.5, training=True)\n")
    ruling = referee.referee(str(task), str(cand), settings(tmp_path), 1.0)
    assert ruling.verdict is None, ruling.detail


def test_a_task_whose_reference_ignores_its_input_is_found_by_the_referee_itself(tmp_path):
    task = tmp_path / "task.py"
    task.write_text(Path(TASK).read_text().replace("return x * torch.sigmoid(x) + 1.0",
                                                   "return torch.ones_like(x) + 1e-9 * x"))
    cand = tmp_path / "cand.py"
    cand.write_text(HEADER + "        return torch.ones_like(x) + 1e-9 * x\n")
    ruling = referee.referee(str(task), str(cand), settings(tmp_path), 1.0)
    assert ruling.verdict is None and ruling.facts["task_verdicts"], ruling


def test_task_verdicts_the_referee_found_join_the_worker_s_and_the_pair_is_not_correct_under_them():
    records = [{"method": "candidate", "verified": True, "speedup": 2.0, "task_verdicts": None,
                "profiles": {"strict": True, "kernelbench": True}}]
    found = {"kernelbench": "zeros pass atol=rtol=0.01"}
    referee.apply(records, core.Ruling(None, "", 2.0, [], facts={"task_verdicts": found, "notes": []}))
    assert records[0]["task_verdicts"] == found
    assert records[0]["profiles"] == {"strict": True, "kernelbench": False}


SKIPS_TIMED_SOFTMAX = COUNTS_CALLS.replace("return x * torch.sigmoid(x) + 1.0", "return torch.softmax(x, dim=-1)")


def test_timed_calls_that_skip_their_work_on_a_task_judged_scale_aware_are_seen_by_their_digests(tmp_path):
    # zeros in the timed calls of a wide softmax: its digests' spread must be on the outputs' own scale, not atol's
    cand = tmp_path / "cand.py"
    cand.write_text(SKIPS_TIMED_SOFTMAX)
    ruling = referee.referee(WIDE_SOFTMAX, str(cand), settings(tmp_path), 1.0)
    assert ruling.verdict is Verdict.REFEREE and "did not compute what its checked ones did" in ruling.detail, ruling


def test_the_reference_reads_the_candidate_s_bytes_with_its_own_dtypes_and_shapes():
    side = referee_process.Side("reference", {"device": "cpu", "task_path": TASK})
    side.handle({"op": "outputs", "seed": 3, "max_bytes": 0}, b"")
    body = b"".join(k.contiguous().reshape(-1).view(torch.uint8).numpy().tobytes() for k in side.kept)
    huge = [{"dtype": "torch.float32", "shape": [10 ** 400] * 300}]  # a candidate's word: once decoded, minutes
    verdict, _ = side.handle({"op": "compare", "tensors": huge}, body)
    assert verdict == {"ok": True, "detail": ""}


def test_a_frame_written_before_its_request_is_not_its_answer():
    import multiprocessing
    mine, theirs = multiprocessing.Pipe()
    side = object.__new__(core._Side)
    side.conn, side.role, side.timeout_s = mine, "candidate", 5.0
    wire.send(theirs, {"done": True})  # ahead of `go`: a stretch that never ran
    with pytest.raises(core._Refused, match="not its answer"):
        side.ask({"op": "go"})


WRONG_INDICES_WHEN_TIMED = '''import torch
import torch.nn as nn

CALLS = [0]


class ModelNew(nn.Module):
    def __init__(self, dim):
        super().__init__()
        self.dim = dim

    def forward(self, x):
        CALLS[0] += 1
        out = torch.argmax(x, dim=self.dim)
        if CALLS[0] > 2:  # past the checked calls: two indices off by 3
            out[0, 0] = (out[0, 0] + 3) % x.shape[-1]
            out[1, 0] = (out[1, 0] + 3) % x.shape[-1]
        return out
'''


def test_timed_calls_with_wrong_integer_outputs_answer_a_digest_that_is_not_the_reference_s(tmp_path):
    cand = tmp_path / "cand.py"  # integers are judged equal: a float tolerance on their digests let these through
    cand.write_text(WRONG_INDICES_WHEN_TIMED)
    ruling = referee.referee(str(TASKS_DIR / "16_ArgmaxDim.py"), str(cand), settings(tmp_path), 1.0)
    assert ruling.verdict is Verdict.REFEREE and "did not compute what its checked ones did" in ruling.detail, ruling


def test_a_task_drawing_its_inputs_with_numpy_gives_both_processes_the_same_inputs(tmp_path):
    source = ("import numpy as np\nimport torch\nimport torch.nn as nn\n\n\nclass Model(nn.Module):\n"
              "    def forward(self, x):\n        return x * 2\n\n\ndef get_inputs():\n"
              "    return [torch.from_numpy(np.random.randn(64, 64).astype('float32'))]\n\n\n"
              "def get_init_inputs():\n    return []\n")
    task, cand = tmp_path / "task.py", tmp_path / "cand.py"
    task.write_text(source)
    cand.write_text(source.replace("class Model(", "class ModelNew("))
    ruling = referee.referee(str(task), str(cand), settings(tmp_path), 1.0)
    assert ruling.verdict is None, ruling.detail


def test_a_task_verdict_under_the_deciding_profile_is_the_pair_s_verdict_as_the_worker_gives_it():
    records = [{"method": "candidate", "verified": True, "speedup": 2.0, "profile": "strict",
                "profiles": {"strict": True, "kernelbench": True}}]
    found = {"strict": "zeros pass", "kernelbench": "zeros pass"}  # the strictest too: the reference ignores x
    referee.apply(records, core.Ruling(None, "", 2.0, [], facts={"task_verdicts": found, "notes": []}))
    assert records[0]["verified"] is False and records[0]["verdict"] == Verdict.INPUT_INDEPENDENT.value

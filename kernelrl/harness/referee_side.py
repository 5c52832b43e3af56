"""The two processes of a referee (harness/referee.py): one runs the workload's reference only and never sees
candidate code; the other runs the candidate, confined as a worker is, and is trusted with nothing. Each answers the
runner's requests (harness/wire.py framing: a JSON header and raw bytes, never a pickle):

- `outputs` (seed): the inputs for that seed, one call, every output as raw bytes (the candidate's side) or kept to
  compare (the reference's side);
- `compare` (the reference's side only): the candidate's output bytes against its own, by the workload's rule;
- `prepare` (seed, calls): input sets for a stretch of timed calls; `go`: those calls back to back and one device-wide
  synchronize (the runner times the stretch from outside); `digest` (seed): each call's outputs weighted by random
  numbers drawn from a seed told only now, so a stretch that skipped its work cannot answer.

A workload's adapter subclasses `RefereeSide` (its inputs, one call, its comparison and tolerances) and starts the
loop with `serve`."""

from __future__ import annotations

import math
import os

import torch

from kernelrl.harness import wire
from kernelrl.harness.sandbox import confine_worker, enter_emptied_dir
from kernelrl.harness.worker_base import forget_spawn_arguments, host_available

DTYPES = {str(d): d for d in (torch.float32, torch.float16, torch.bfloat16, torch.float64, torch.complex64,
                              torch.complex128, torch.int64, torch.int32, torch.int16, torch.int8, torch.uint8,
                              torch.bool)}
# elements a digest weighs at once: its temporaries (the weights, a float copy) stay a few hundred MiB whatever the
# output's size, where whole they were twice a real-size task's output beside the stretch's own calls
DIGEST_CHUNK = 1 << 25


def serve(conn, role: str, payload: dict, make_side, on_confined=None) -> None:
    """One side's loop: the candidate's process confined (its own process group; writes only where a worker may
    write, `on_confined(payload)` then run) before `make_side(role, payload)` loads any candidate code, each side in
    its own emptied working directory beneath the scratch folder; then requests answered until `stop`."""
    forget_spawn_arguments()
    sandbox = None
    if role == "candidate":
        os.setpgrp()  # its own process group: the runner ends it, and what it starts, together
        # its own part of the scratch folder only: the reference's working directory beside it is not its to touch
        own = os.path.join(payload["scratch"], role)
        os.makedirs(own, exist_ok=True)
        confinement, _ = confine_worker(own, payload.get("writable") or [])
        sandbox = {"confined": confinement.active, "sandbox": str(confinement)}
        if on_confined is not None:
            on_confined(payload)
    # relative writes (`build/`, a helper module it imports) land there, beneath the scratch folder the confinement
    # allows, as a worker's pair gets
    enter_emptied_dir(os.path.join(payload["scratch"], role))
    try:
        side = make_side(role, payload)
    except Exception as exc:  # the workload or the candidate does not load here: the runner says so
        wire.send(conn, {"error": f"{type(exc).__name__}: {exc}"[:400]})
        return
    wire.send(conn, {**side.facts(), "ready": True, **(sandbox or {})})
    while True:
        try:
            header, body = wire.recv(conn)
        except (EOFError, OSError):
            return
        try:
            reply = side.handle(header, body)
        except Exception as exc:  # a call that raised: an answer, not a crash
            reply = ({"error": f"{type(exc).__name__}: {exc}"[:400]}, b"")
        if reply is None:
            return
        answer, data = reply
        wire.send(conn, {**answer, "n": header.get("n")}, data)  # the request's number: this frame answers it


class RefereeSide:
    """One side's requests (the module's docstring). A workload gives `inputs`, `call`, `compare_one` and
    `tolerance`; `kept` holds the reference's outputs for the last `outputs` request, `stretch` the prepared timed
    calls' inputs, then their outputs."""

    def __init__(self, role: str, device: torch.device):
        self.role, self.device = role, device
        self.kept: list = []
        self.stretch: list = []

    # -- the workload's part ------------------------------------------------------------------------------------
    def inputs(self, seed: int) -> list:
        """One input set, drawn from `seed` (each call of a stretch its own)."""
        raise NotImplementedError

    def call(self, inputs: list) -> list:
        """One call on an input set: its outputs, each a tensor."""
        raise NotImplementedError

    def compare_one(self, i: int, theirs: torch.Tensor, mine: torch.Tensor) -> str | None:
        """Output `i` as the candidate sent it against this side's (dtype and shape already agree): why it is wrong,
        or None."""
        raise NotImplementedError

    def tolerance(self, out: torch.Tensor) -> float:
        """An output's tolerance for the digests: an honest element errs by at most this times (floor + |r|)."""
        raise NotImplementedError

    def facts(self) -> dict:
        """What this side tells the runner once loaded (plain data), beside `ready`: the reference's findings about
        the workload that the ruling carries (KernelBench: which profiles cannot tell its right answer from a
        trivial one)."""
        return {}

    def answer(self, inputs: list) -> list:
        """The outputs the values are judged by (`outputs`): one call, unless the workload's reference is computed
        apart from the call it times (an exact product beside the library call it is timed against)."""
        return self.call(inputs)

    def spread_floor(self, i: int, out: torch.Tensor) -> float:
        """The floor of output `i`'s error scale (floor + |r|) in the digests' spread: 1 where the tolerance is
        absolute and relative (atol = rtol), the output's own size where its errors are judged relative to it (a
        floor of 1 under outputs far below 1 would let a stretch of zeros pass its digests)."""
        return 1.0

    # -- shared ---------------------------------------------------------------------------------------------------
    def release(self) -> None:
        """Give freed device memory back to the driver: the other side's process shares the GPU."""
        if self.device.type == "cuda":
            torch.cuda.empty_cache()

    def sync(self) -> None:
        if self.device.type == "cuda":
            torch.cuda.synchronize()

    def free_bytes(self) -> int:
        """What the device has free now (the host's available memory on the CPU): the runner sizes stretches by it."""
        if self.device.type == "cuda":
            return int(torch.cuda.mem_get_info(self.device)[0])
        return host_available()

    def handle(self, header: dict, body: bytes):
        op = header.get("op")
        if op == "outputs":  # the reference's side keeps them for `compare`; the candidate's sends and drops them
            outs = self.answer(self.inputs(int(header["seed"])))
            if self.role == "reference" and (odd := [str(o.dtype) for o in outs if str(o.dtype) not in DTYPES]):
                raise TypeError(f"outputs of dtype {', '.join(odd)}: not one the referee reads")
            self.sync()
            reply = _encoded(outs, int(header["max_bytes"]))
            self.kept = outs if self.role == "reference" else []
            del outs
            self.release()
            return reply
        if op == "compare":
            verdict = self.compare(header, body)
            self.kept = []
            self.release()
            return verdict, b""
        if op == "drop":
            self.kept = []
            self.release()
            return {"dropped": True}, b""
        if op == "prepare":
            seed = int(header["seed"])  # each call its own draw: no output can be patched from another call's
            free = self.free_bytes()  # before the stretch's inputs: what a stretch may take
            self.stretch = [self.inputs(seed + i) for i in range(int(header["calls"]))]
            self.sync()
            return {"ready": True, "free": free, "input_bytes": _nbytes(self.stretch[0] if self.stretch else [])}, b""
        if op == "go":
            self.stretch = [self.call(inputs) for inputs in self.stretch]
            self.sync()
            return {"done": True, "output_bytes": _nbytes(self.stretch[0] if self.stretch else [])}, b""
        if op == "digest":  # the reference's side answers twice: timed (`keep`), then with the spreads
            seed = int(header["seed"])
            gen = torch.Generator(device=self.device).manual_seed(seed)
            sums = [[_weighted(o, gen) for o in outs] for outs in self.stretch]
            spreads = None
            if header.get("spread"):  # the same weights again, for each output's spread
                gen = torch.Generator(device=self.device).manual_seed(seed)
                spreads = [[_spread(o, gen, self.spread_floor(i, o)) for i, o in enumerate(outs)]
                           for outs in self.stretch]
            tolerances = [self.tolerance(o) for o in self.stretch[0]] if self.stretch else []
            if not header.get("keep"):
                self.stretch = []
                self.release()
            return {"digests": sums, "spreads": spreads, "tolerances": tolerances}, b""
        if op == "stop":
            return None
        return {"error": f"unknown request {op!r}"}, b""

    def compare(self, header: dict, body: bytes) -> dict:
        """The candidate's output bytes against this side's last outputs, read with this side's own dtypes and
        shapes: nothing the candidate says about them is believed (a shape of huge numbers kept the reference busy
        past its timeout, which left the pair unrefereed)."""
        try:
            outs = _decoded({"tensors": [{"dtype": str(k.dtype), "shape": list(k.shape)} for k in self.kept]}, body)
        except ValueError as exc:
            return {"ok": False, "detail": str(exc)}
        if len(outs) != len(self.kept):
            return {"ok": False, "detail": f"{len(outs)} outputs where the reference gives {len(self.kept)}"}
        for i, (o, r) in enumerate(zip(outs, (k.cpu() for k in self.kept))):
            if o.shape != r.shape or o.dtype != r.dtype:
                return {"ok": False, "detail": f"output {i}: {o.dtype} {tuple(o.shape)} where the reference gives "
                                               f"{r.dtype} {tuple(r.shape)}"}
            if not (o.is_floating_point() or o.is_complex()):
                if not torch.equal(o, r):
                    return {"ok": False, "detail": f"output {i}: integer values differ"}
                continue
            wrong = self.compare_one(i, o, r)
            if wrong:
                return {"ok": False, "detail": wrong}
        return {"ok": True, "detail": ""}


def _nbytes(values: list) -> int:
    return sum(v.numel() * v.element_size() for v in values if isinstance(v, torch.Tensor))


def _chunks(o):
    """The output's elements in C order, DIGEST_CHUNK at a time, as float32 with non-finite values zeroed (each chunk
    a fresh tensor), and the weights of each drawn in turn: the same chunks, so the same weights, on both sides."""
    flat = o.reshape(-1)
    for start in range(0, flat.numel(), DIGEST_CHUNK):
        yield flat[start:start + DIGEST_CHUNK].float().nan_to_num(0.0, 0.0, 0.0)


def _weights(part, gen):
    return torch.rand(part.shape, generator=gen, device=part.device).mul_(2).sub_(1)


def _weighted(o, gen) -> float:
    """sum(o * w) over weights uniform in (-1, 1), one per element, drawn from the runner's late seed: no shortcut
    computes it without the output itself (a rank-1 weight would let a linear task answer from its inputs)."""
    return sum(float(part.mul_(_weights(part, gen)).sum(dtype=torch.float64)) for part in _chunks(o))


def _spread(r, gen, floor: float = 1.0) -> float:
    """sqrt(sum(w^2 (floor + |r|)^2)) under the same weights: the standard deviation of the digest's difference when
    every element errs by at most its tolerance scale (floor + |r|), the signs independent of weights drawn later."""
    return math.sqrt(sum(float(part.abs_().add_(floor).mul_(_weights(part, gen)).square_().sum(dtype=torch.float64))
                         for part in _chunks(r)))


def _encoded(outs: list, max_bytes: int) -> tuple[dict, bytes]:
    """Each output's dtype, shape and bytes (C order); only the header where they exceed `max_bytes` together."""
    meta = [{"dtype": str(o.dtype), "shape": list(o.shape)} for o in outs]
    size = sum(o.numel() * o.element_size() for o in outs)
    if size > max_bytes:
        return {"tensors": meta, "bytes": size, "sent": False}, b""
    body = b"".join(o.detach().contiguous().cpu().reshape(-1).view(torch.uint8).numpy().tobytes() for o in outs)
    return {"tensors": meta, "bytes": size, "sent": True}, body


def _decoded(header: dict, body: bytes) -> list:
    """The tensors a header and its bytes describe; ValueError where they do not agree or a dtype is not plain."""
    out, at = [], 0
    for meta in header.get("tensors") or []:
        dtype = DTYPES.get(str(meta.get("dtype")))
        shape = [int(d) for d in meta.get("shape") or []]
        if dtype is None or any(d < 0 for d in shape):
            raise ValueError(f"an output of dtype {meta.get('dtype')!r} and shape {shape}: not one the referee reads")
        n = dtype.itemsize
        for d in shape:
            n *= d
        if at + n > len(body):
            raise ValueError(f"the outputs' bytes end at {len(body)}, where their shapes need {at + n}")
        out.append(torch.frombuffer(bytearray(body[at:at + n]), dtype=torch.uint8).view(dtype).reshape(shape)
                   if n else torch.empty(shape, dtype=dtype))
        at += n
    if at != len(body):
        raise ValueError(f"{len(body) - at} bytes beyond the outputs' shapes")
    return out

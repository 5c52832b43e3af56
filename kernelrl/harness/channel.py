"""The worker's messages to its runner, authenticated: each is pickled, and sent with an HMAC-SHA256 tag under a key
the runner makes for that worker alone (the payload's `channel_key`, taken out of the payload by the worker).

Why: a candidate runs in the worker's process. One that found the connection (through the process object's spawn
arguments: corpus forges_worker_result; or by writing to the pipe's file descriptor, which /proc/self/fd names) could
send the runner a result of its own, and the runner unpickled whatever arrived, in its own process, which the
sandbox does not confine: a crafted pickle runs code there. The runner now checks the tag before it unpickles, and an
untagged or mistagged message ends the worker with the running method's `harness patch`. The key is reachable only
through the worker's own objects (the routes to them that were found are closed: watch.py) or by reading the
process's memory; judging in a process the candidate never ran in remains the complete answer. So the runner also
unpickles as plain data only (`PlainUnpickler`: no class, function or module is looked up, so no code can run): a
candidate that read the key from memory (docs/reward_hacks.md, "Open") can send a forged result, never run code in
the runner."""

from __future__ import annotations

import hashlib
import hmac
import io
import os
import pickle
import secrets

KEY_FIELD = "channel_key"
_TAG_BYTES = hashlib.sha256().digest_size


def new_key() -> bytes:
    return secrets.token_bytes(32)


def _tag(key: bytes, body: bytes) -> bytes:
    return hmac.new(key, body, hashlib.sha256).digest()


class Sender:
    """The worker's end: `send(msg)` pickles and tags one message. Its functions are captured when it is made,
    before any candidate code runs."""

    __slots__ = ("_conn", "_key", "_send_bytes", "_dumps")

    def __init__(self, conn, key: bytes) -> None:
        self._conn, self._key = conn, key
        self._send_bytes = type(conn).send_bytes
        self._dumps = pickle.dumps

    def send(self, msg: tuple) -> None:
        body = self._dumps(plain(msg), protocol=pickle.HIGHEST_PROTOCOL)
        self._send_bytes(self._conn, _tag(self._key, body) + body)

    def close(self) -> None:
        self._conn.close()


def plain(obj):
    """The message as the runner can read it (`PlainUnpickler`): subclasses of str, int and float (torch's
    TorchVersion, enum values, NumPy scalars through `item()`) as the plain type, paths as strings, containers
    rebuilt; anything else is left for pickling to refuse on the other side."""
    if obj is None or type(obj) in (bool, int, float, str, bytes):
        return obj
    if isinstance(obj, dict):
        return {plain(k): plain(v) for k, v in obj.items()}
    if isinstance(obj, (list, tuple, set, frozenset)):
        return type(obj)(plain(x) for x in obj) if type(obj) in (list, tuple, set, frozenset) else \
            [plain(x) for x in obj]
    if isinstance(obj, str):
        return str.__str__(obj)  # an Enum's str() is its name; this is its value
    for kind in (int, float, bytes):
        if isinstance(obj, kind):
            return kind(obj)
    if isinstance(obj, os.PathLike):
        return os.fspath(obj)
    item = getattr(obj, "item", None)  # NumPy and torch scalars
    if callable(item) and getattr(obj, "shape", None) == ():
        return plain(item())
    return obj


class Forged(Exception):
    """A message whose tag is not the worker's, or one that is not plain data."""


class PlainUnpickler(pickle.Unpickler):
    """Unpickles None, bools, numbers, strings, bytes, lists, tuples, dicts and sets only: everything the workers
    send is made of them. Any pickle that names a global (a class, a function such as os.system, a reducer) is
    refused before anything is called."""

    def find_class(self, module: str, name: str):
        raise Forged(f"a message that names {module}.{name}: the runner reads plain data only")


def plain_loads(body: bytes):
    return PlainUnpickler(io.BytesIO(body)).load()


class Receiver:
    """The runner's end of one worker's pipe: `recv()` returns the next message, or raises `Forged` (before
    unpickling anything) when its tag is wrong."""

    def __init__(self, conn, key: bytes) -> None:
        self.conn, self._key = conn, key

    def poll(self, timeout: float) -> bool:
        return self.conn.poll(timeout)

    def recv(self) -> tuple:
        data = self.conn.recv_bytes()
        tag, body = data[:_TAG_BYTES], data[_TAG_BYTES:]
        if len(tag) != _TAG_BYTES or not hmac.compare_digest(tag, _tag(self._key, body)):
            raise Forged(f"a message of {len(data)} bytes without the worker's tag")
        return plain_loads(body)

    def close(self) -> None:
        self.conn.close()

"""Messages between a referee's runner and its processes (harness/referee.py): a JSON header and raw bytes in
one frame. Nothing received is unpickled: the candidate's process is trusted with nothing, and what it sends is
read as data only."""

from __future__ import annotations

import json
import struct

_LEN = struct.Struct("<I")


def send(conn, header: dict, body: bytes = b"") -> None:
    text = json.dumps(header).encode()
    conn.send_bytes(_LEN.pack(len(text)) + text + body)


def recv(conn, max_bytes: int | None = None) -> tuple[dict, bytes]:
    """One frame; OSError where it is longer than `max_bytes`, ValueError where it is not a header and bytes."""
    data = conn.recv_bytes(max_bytes)
    if len(data) < _LEN.size:
        raise ValueError("a frame shorter than its length field")
    (n,) = _LEN.unpack_from(data)
    header = json.loads(data[_LEN.size:_LEN.size + n])
    if not isinstance(header, dict):
        raise ValueError("a frame whose header is not an object")
    return header, data[_LEN.size + n:]

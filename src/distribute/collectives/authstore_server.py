"""The server of the authenticated rendezvous store, and the binary framing both ends speak.

``torch.distributed.TCPStore`` lets any process that can reach its port read, write and delete
keys, so a job's rendezvous is served here instead (the client is ``authstore.py``). Rank 0
runs :class:`StoreServer` in its own process, on the socket already bound to its address in
the cluster spec. Each accepted connection gets a thread that first runs
:func:`~distribute.collectives.auth.server_handshake` with a bounded timeout; a connection
that does not prove the job secret is logged (``logging.getLogger("distribute")``, naming its
address) and closed before a single request is read. At most :data:`MAX_UNAUTHENTICATED`
connections may be in the handshake at once (the others are closed at once), so silent
connections cannot exhaust the server's threads.

Framing (every integer big-endian)::

    frame    u32 length | body               (length <= MAX_FRAME)
    request  u8 op      | field*             field: u32 length | bytes
    reply    u8 status  | field*             status: OK, MISSING or ERROR (one message field)

Anything malformed (an oversized or empty frame, an unknown op, the wrong number of fields, a
field running past its frame) closes that connection only. Values are bytes; nothing read
from a socket is unpickled or evaluated.
"""

from __future__ import annotations

import logging
import socket
import struct
import threading
import time
from typing import Dict, List, Optional, Set, Tuple

from distribute.collectives.auth import HANDSHAKE_TIMEOUT, HandshakeError, RefusalLog, peer_address, server_handshake

__all__ = ["MAX_FRAME", "MAX_UNAUTHENTICATED", "OPS", "PURPOSE", "FrameError", "StoreServer", "pack_frame",
           "read_frame", "unpack_fields"]

PURPOSE = b"store"
"""What the store's handshake proves (a proof for another listener does not work here)."""
MAX_FRAME = 16 << 20
"""The largest frame, in bytes, either end accepts."""
MAX_UNAUTHENTICATED = 64
"""Connections that may be in the handshake at once; more are closed at once."""
OK, MISSING, ERROR = 0, 1, 2
OPS = {"set": 1, "get": 2, "add": 3, "compare_set": 4, "check": 5, "multi_get": 6, "multi_set": 7,
       "delete_key": 8, "num_keys": 9}
_ARITY = {1: 2, 2: 1, 3: 2, 4: 3, 8: 1, 9: 0}  # fixed field counts (check/multi_get/multi_set vary)
_LOG = logging.getLogger("distribute")
_U32 = struct.Struct(">I")


class FrameError(ValueError):
    """A frame or request that breaks the protocol (the connection is dropped)."""


def pack_frame(code: int, fields: List[bytes]) -> bytes:
    """One frame: ``code`` (an op or a status) and its length-prefixed fields."""
    body = b"".join([bytes([code])] + [_U32.pack(len(f)) + f for f in fields])
    if len(body) > MAX_FRAME:
        raise FrameError(f"a store message of {len(body)} bytes is over the limit of {MAX_FRAME} bytes")
    return _U32.pack(len(body)) + body


def _recv(sock: socket.socket, count: int) -> bytes:
    data = bytearray()
    while len(data) < count:
        chunk = sock.recv(min(count - len(data), 1 << 20))
        if not chunk:
            raise ConnectionError(f"the connection was closed ({len(data)} of {count} bytes arrived)")
        data += chunk
    return bytes(data)


def read_frame(sock: socket.socket) -> Tuple[int, List[bytes]]:
    """Reads one frame: ``(code, fields)``.

    Raises:
        FrameError: the frame is empty, oversized or its fields do not add up.
        ConnectionError: the other end closed the connection.
        OSError: the socket's timeout passed, or it failed.
    """
    (length,) = _U32.unpack(_recv(sock, 4))
    if not 1 <= length <= MAX_FRAME:
        raise FrameError(f"a frame of {length} bytes (expected 1 to {MAX_FRAME})")
    body = _recv(sock, length)
    return body[0], unpack_fields(body, 1)


def unpack_fields(body: bytes, start: int) -> List[bytes]:
    """The length-prefixed fields of ``body`` from ``start`` on (they must fill it exactly)."""
    fields, pos = [], start
    while pos < len(body):
        if pos + 4 > len(body):
            raise FrameError("a field length runs past the end of its frame")
        (size,) = _U32.unpack_from(body, pos)
        if pos + 4 + size > len(body):
            raise FrameError("a field runs past the end of its frame")
        fields.append(body[pos + 4:pos + 4 + size])
        pos += 4 + size
    return fields


class _Data:
    """The key-value map, behind one lock."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._map: Dict[bytes, bytes] = {}

    def apply(self, op: int, f: List[bytes]) -> Tuple[int, List[bytes]]:
        """Runs one well-formed request; returns ``(status, fields)``."""
        with self._lock:
            data = self._map
            if op == 1:
                data[f[0]] = f[1]
            elif op == 2:
                return (OK, [data[f[0]]]) if f[0] in data else (MISSING, [])
            elif op == 3:
                return self._add(f[0], f[1])
            elif op == 4:
                return OK, [self._compare_set(*f)]
            elif op == 5:
                return OK, [b"1" if all(k in data for k in f) else b"0"]
            elif op == 6:
                return (OK, [data[k] for k in f]) if all(k in data for k in f) else (MISSING, [])
            elif op == 7:
                data.update(zip(f[0::2], f[1::2]))
            elif op == 8:
                return OK, [b"1" if data.pop(f[0], None) is not None else b"0"]
            elif op == 9:
                return OK, [str(len(data)).encode()]
            return OK, []

    def _add(self, key: bytes, delta: bytes) -> Tuple[int, List[bytes]]:
        try:
            value = int(self._map.get(key, b"0")) + int(delta)
        except ValueError:
            return ERROR, [b"add: the value of " + key[:200] + b" or the increment is not an integer"]
        self._map[key] = str(value).encode()
        return OK, [self._map[key]]

    def _compare_set(self, key: bytes, expected: bytes, desired: bytes) -> bytes:
        # TCPStore's rule: a missing key is set only when `expected` is empty.
        if key not in self._map:
            if expected:
                return expected
            self._map[key] = desired
        elif self._map[key] == expected:
            self._map[key] = desired
        return self._map[key]


def _well_formed(op: int, fields: List[bytes]) -> bool:
    if op in _ARITY:
        return len(fields) == _ARITY[op]
    if op == 7:
        return len(fields) % 2 == 0
    return op in (5, 6)


class StoreServer:
    """The rendezvous store of a job, served from rank 0's process until :meth:`close`.

    Args:
        sock: a bound, listening socket (the server owns it from now on).
        secret: the job secret (None: the job runs unauthenticated).
        task: this task's name, for the log (``'worker:0'``).
        handshake_timeout: seconds a new connection has to prove the secret.
        max_unauthenticated: connections that may be in the handshake at once.
    """

    def __init__(self, sock: socket.socket, secret: Optional[bytes], task: str, *,
                 handshake_timeout: float = HANDSHAKE_TIMEOUT,
                 max_unauthenticated: int = MAX_UNAUTHENTICATED) -> None:
        self._sock = sock
        self._secret = secret
        self.task = task
        self._handshake_timeout = handshake_timeout
        self._cap = max_unauthenticated
        self._data = _Data()
        self._lock = threading.Lock()
        self._pending = 0
        self._open: Set[socket.socket] = set()
        self._closed = threading.Event()
        self.refusals: List[str] = []
        """Addresses of the connections refused so far (newest last, at most 100 kept)."""
        self._refusal_log = RefusalLog()
        sock.settimeout(0.2)  # the accept loop looks at `closed` this often
        self.address = "%s:%s" % sock.getsockname()[:2]
        self._thread = threading.Thread(target=self._accept_loop, name="distribute-store", daemon=True)
        self._thread.start()

    def _accept_loop(self) -> None:
        while not self._closed.is_set():
            try:
                conn, _ = self._sock.accept()
            except socket.timeout:
                continue
            except OSError:
                if self._closed.is_set():
                    return
                time.sleep(0.05)  # e.g. out of file descriptors: try again soon
                continue
            with self._lock:
                admitted = self._pending < self._cap and not self._closed.is_set()
                if admitted:
                    self._pending += 1
                    self._open.add(conn)
            if not admitted:
                self._refuse(conn, "too many connections are proving the job secret at once")
                continue
            threading.Thread(target=self._serve, args=(conn,), name="distribute-store-conn", daemon=True).start()

    def _serve(self, conn: socket.socket) -> None:
        try:
            try:
                server_handshake(conn, self._secret, PURPOSE, self._handshake_timeout)
            except HandshakeError as exc:
                self._refuse(conn, _why(exc))
                return
            finally:
                with self._lock:
                    self._pending -= 1
            conn.settimeout(None)
            self._requests(conn)
        finally:
            with self._lock:
                self._open.discard(conn)
            conn.close()

    def _requests(self, conn: socket.socket) -> None:
        while not self._closed.is_set():
            try:
                op, fields = read_frame(conn)
                if not _well_formed(op, fields):
                    raise FrameError(f"op {op} with {len(fields)} fields")
                status, answer = self._data.apply(op, fields)
                conn.sendall(pack_frame(status, answer))
            except (OSError, FrameError):
                return  # closed, or broke the protocol: this connection only

    def _refuse(self, conn: socket.socket, why: str) -> None:
        address = peer_address(conn)
        conn.close()
        with self._lock:
            self.refusals = (self.refusals + [address])[-100:]
        if not self._refusal_log.should_log():  # a flood: the first 20 in 10 s are logged
            return
        _LOG.warning("%s refused a connection from %s to its rendezvous store at %s: %s", self.task, address,
                     self.address, why)

    def close(self) -> None:
        """Stops serving: closes the listener and every connection (idempotent)."""
        if self._closed.is_set():
            return
        self._closed.set()
        with self._lock:
            conns = list(self._open)
        for conn in conns:
            try:
                conn.shutdown(socket.SHUT_RDWR)  # wakes the thread blocked in recv
            except OSError:
                pass
        if self._thread is not threading.current_thread():
            self._thread.join(timeout=2.0)
        self._sock.close()

    @property
    def closed(self) -> bool:
        """True once :meth:`close` ran."""
        return self._closed.is_set()


def _why(exc: HandshakeError) -> str:
    if exc.reason == "wrong proof":
        return "it does not know the job secret"
    if exc.reason == "not a distribute peer":
        return "it is not a distribute task (it sent something else)"
    return "it gave no proof of the job secret (it stayed silent or hung up)"


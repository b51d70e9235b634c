"""The authenticated rendezvous store: a ``torch.distributed.Store`` that proves the job secret.

Rank 0 serves the store (``authstore_server.StoreServer``); every task, rank 0 included,
opens clients with :func:`connect_store`, which connects and runs
:func:`~distribute.collectives.auth.client_handshake` until a deadline. An
:class:`AuthStore` is a ``torch.distributed.Store``, so ``ProcessGroupGloo`` and
``PrefixStore`` use it as they would a ``TCPStore``, with the same semantics: ``get``,
``wait`` and ``multi_get`` block until the keys exist or the store's timeout passes, then raise
:class:`StoreTimeoutError` naming the keys; ``add`` keeps decimal text; ``compare_set``
follows TCPStore's rule for a missing key.

One client is one socket; a lock makes each request-reply atomic, so gloo's threads and the
heartbeat thread may share one client. Blocking calls poll with short sleeps, never holding
the lock while they sleep. A request that gets no reply within the store's timeout (a frozen
server) drops the connection, whose stream could no longer be trusted; the next request opens
and authenticates a new one (within the timeout), so a server that was only paused is found
again. After :meth:`AuthStore.close`, calls raise ``ConnectionError``.

Example (rank 0 serving, any task connecting)::

    server = StoreServer(listening_socket, secret, task="worker:0")
    store = connect_store("127.0.0.1", port, secret, time.monotonic() + 30, task="worker:1")
    store.set("key", b"value"); store.get("key")        # b'value'
"""

from __future__ import annotations

import datetime
import socket
import threading
import time
from typing import Any, Callable, List, Optional, Sequence, Tuple, Union

import torch.distributed as dist

from distribute.collectives.auth import HANDSHAKE_TIMEOUT, HandshakeError, client_handshake
from distribute.collectives.authstore_server import ERROR, MISSING, OK, OPS, PURPOSE, FrameError, pack_frame, \
    read_frame
from distribute.errors import DeadlineExceededError

__all__ = ["AuthStore", "StoreTimeoutError", "StoreUnreachableError", "connect_store", "open_socket"]

_DEFAULT_TIMEOUT = datetime.timedelta(seconds=300)
_POLL_FIRST, _POLL_MAX = 0.002, 0.05
Value = Union[str, bytes]


class StoreTimeoutError(DeadlineExceededError, RuntimeError):
    """Keys did not appear in the store within its timeout (a ``RuntimeError`` too, as torch's)."""


class StoreUnreachableError(DeadlineExceededError):
    """No authenticated connection to the store could be made before the deadline.

    Attributes:
        last: the last error (``ConnectionRefusedError``, ``HandshakeError``, ...), or None.
        reached: True when some attempt reached a listener (then ``last`` says what it did).
    """

    def __init__(self, message: str, *, last: Optional[BaseException], reached: bool) -> None:
        super().__init__(message)
        self.last = last
        self.reached = reached


def _encode(value: Value) -> bytes:
    return value.encode() if isinstance(value, str) else bytes(value)


class AuthStore(dist.Store):
    """A client of a :class:`~distribute.collectives.authstore_server.StoreServer` over ``sock``.

    Args:
        sock: a connection that already passed :func:`client_handshake`.
        address: the server's ``host:port`` (for messages).
        timeout: how long blocking calls wait.
    """

    def __init__(self, sock: socket.socket, address: str, timeout: datetime.timedelta = _DEFAULT_TIMEOUT,
                 reopen: Optional[Callable[[float], socket.socket]] = None) -> None:
        super().__init__()
        self._sock: Optional[socket.socket] = sock
        self._reopen = reopen
        self._lock = threading.Lock()
        self.address = address
        self._timeout = timeout
        super().set_timeout(timeout)

    # -- the wire ---------------------------------------------------------------------------
    def _request(self, op: str, fields: Sequence[bytes]) -> Tuple[int, List[bytes]]:
        with self._lock:
            sock = self._sock if self._sock is not None else self._reconnect()
            try:
                sock.settimeout(max(0.1, self._timeout.total_seconds()))
                sock.sendall(pack_frame(OPS[op], list(fields)))
                status, answer = read_frame(sock)
            except (OSError, FrameError) as exc:
                self._drop()
                if not isinstance(exc, socket.timeout):
                    self._reopen = None  # closed by the server or broken: it is gone for good
                if isinstance(exc, socket.timeout):
                    raise StoreTimeoutError(f"The rendezvous store at {self.address} did not answer {op} within "
                                            f"{self._timeout.total_seconds():g} s.") from None
                raise ConnectionError(f"The rendezvous store at {self.address} failed during {op}: {exc}") from None
        if status == ERROR:
            raise ValueError((answer[0] if answer else b"").decode(errors="replace"))
        if status not in (OK, MISSING):
            self.close()
            raise ConnectionError(f"The rendezvous store at {self.address} answered {op} with status {status}.")
        return status, answer

    def _reconnect(self) -> socket.socket:
        if self._reopen is None:
            raise ConnectionError(f"the connection to the rendezvous store at {self.address} is closed")
        try:
            self._sock = self._reopen(time.monotonic() + max(0.1, self._timeout.total_seconds()))
        except (StoreUnreachableError, HandshakeError) as exc:
            raise ConnectionError(f"The rendezvous store at {self.address} cannot be reached again: {exc}") from None
        return self._sock

    def _drop(self) -> None:
        sock, self._sock = self._sock, None
        if sock is not None:
            sock.close()

    def close(self) -> None:
        """Closes the connection (idempotent); later calls raise ``ConnectionError``."""
        with self._lock:
            self._reopen = None
            self._drop()

    def _poll(self, op: str, fields: Sequence[bytes], keys: Sequence[str],
              timeout: Optional[datetime.timedelta] = None) -> List[bytes]:
        limit = (timeout if timeout is not None else self._timeout).total_seconds()
        deadline, pause = time.monotonic() + limit, _POLL_FIRST
        while True:
            status, answer = self._request(op, fields)
            if status == OK:
                return answer
            if time.monotonic() >= deadline:
                raise StoreTimeoutError(f"Timed out after {limit:g} s waiting for the keys {list(keys)} in the "
                                        f"rendezvous store at {self.address}.")
            time.sleep(min(pause, max(0.0, deadline - time.monotonic())))
            pause = min(pause * 2, _POLL_MAX)

    # -- torch.distributed.Store ------------------------------------------------------------
    def set(self, key: str, value: Value) -> None:
        """Sets ``key`` to ``value``."""
        self._request("set", [_encode(key), _encode(value)])

    def get(self, key: str) -> bytes:
        """The value of ``key``, waiting up to the timeout for it to be set."""
        return self._poll("get", [_encode(key)], [key])[0]

    def add(self, key: str, amount: int) -> int:
        """Adds ``amount`` to the integer at ``key`` (0 if unset); returns the new value."""
        return int(self._request("add", [_encode(key), str(int(amount)).encode()])[1][0])

    def compare_set(self, key: str, expected_value: Value, desired_value: Value) -> bytes:
        """Sets ``key`` to ``desired_value`` if it holds ``expected_value``; returns its value."""
        return self._request("compare_set", [_encode(key), _encode(expected_value), _encode(desired_value)])[1][0]

    def check(self, keys: List[str]) -> bool:
        """True when every key of ``keys`` is set (no waiting)."""
        return self._request("check", [_encode(k) for k in keys])[1][0] == b"1"

    def wait(self, keys: List[str], timeout: Optional[datetime.timedelta] = None) -> None:
        """Waits until every key of ``keys`` is set, up to ``timeout`` (default: the store's)."""
        limit = (timeout if timeout is not None else self._timeout).total_seconds()
        deadline, pause = time.monotonic() + limit, _POLL_FIRST
        while not self.check(keys):
            if time.monotonic() >= deadline:
                raise StoreTimeoutError(f"Timed out after {limit:g} s waiting for the keys {list(keys)} in the "
                                        f"rendezvous store at {self.address}.")
            time.sleep(min(pause, max(0.0, deadline - time.monotonic())))
            pause = min(pause * 2, _POLL_MAX)

    def multi_get(self, keys: List[str]) -> List[bytes]:
        """The values of ``keys``, waiting up to the timeout for all of them to be set."""
        return self._poll("multi_get", [_encode(k) for k in keys], keys)

    def multi_set(self, keys: List[str], values: List[Value]) -> None:
        """Sets every key of ``keys`` to the matching value, at once."""
        if len(keys) != len(values):
            raise ValueError(f"multi_set needs as many values as keys; received {len(keys)} keys and "
                             f"{len(values)} values.")
        self._request("multi_set", [_encode(x) for pair in zip(keys, values) for x in pair])

    def delete_key(self, key: str) -> bool:
        """Deletes ``key``; True if it existed."""
        return self._request("delete_key", [_encode(key)])[1][0] == b"1"

    def num_keys(self) -> int:
        """How many keys the store holds."""
        return int(self._request("num_keys", [])[1][0])

    def set_timeout(self, timeout: datetime.timedelta) -> None:
        """Sets how long blocking calls (and each request) wait."""
        self._timeout = timeout
        super().set_timeout(timeout)

    def __reduce__(self) -> Any:
        raise TypeError("An AuthStore holds a live connection and cannot be pickled or copied.")

    def __repr__(self) -> str:
        return f"<AuthStore {self.address}{' closed' if self._sock is None and self._reopen is None else ''}>"


def connect_store(host: str, port: int, secret: Optional[bytes], deadline: float, *,
                  timeout: datetime.timedelta = _DEFAULT_TIMEOUT, attempt: float = 2.0) -> AuthStore:
    """An authenticated client of the store at ``host:port``, retrying until ``deadline``.

    See :func:`open_socket` for the attempts and errors; a client whose connection is dropped
    later opens a new one the same way.
    """
    def reopen(until: float) -> socket.socket:  # after a timeout: the server may only have been paused
        return open_socket(host, port, secret, until, attempt=attempt, only_if_listening=True)

    return AuthStore(open_socket(host, port, secret, deadline, attempt=attempt), f"{host}:{port}", timeout, reopen)


def open_socket(host: str, port: int, secret: Optional[bytes], deadline: float, *,
                attempt: float = 2.0, only_if_listening: bool = False) -> socket.socket:
    """An authenticated connection to the store at ``host:port``, retrying until ``deadline``.

    Each attempt connects and runs the handshake within ``attempt`` seconds (a listener that
    accepts and never answers, a frozen server or one that answers garbage costs one attempt);
    the attempts go on until ``deadline`` (``time.monotonic()``), so a server that starts late
    is still found (with ``only_if_listening``, a refused connection ends the attempts: the
    server is gone). A distribute listener that rejects this task's proof, or proves another
    secret, ends the attempts at once: the tasks were given different secrets, and waiting
    would only fill the server's log with refusals.

    Raises:
        HandshakeError: the listener and this task know different secrets (``reason`` is
            ``'refused'`` or ``'wrong proof'``).
        StoreUnreachableError: no attempt succeeded before ``deadline``; ``last`` and
            ``reached`` say what the last attempt met.
    """
    last: Optional[BaseException] = None
    reached = False
    address = f"{host}:{port}"
    while True:
        remaining = deadline - time.monotonic()
        if remaining <= 0:
            break
        sock = None
        try:
            sock = socket.create_connection((host, port), timeout=min(attempt, remaining))
            sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
            reached = True
            client_handshake(sock, secret, PURPOSE, time.monotonic() + min(attempt, HANDSHAKE_TIMEOUT, remaining))
            sock.settimeout(None)
            return sock
        except (OSError, HandshakeError) as exc:
            if sock is not None:
                sock.close()
            if isinstance(exc, HandshakeError) and exc.reason in ("refused", "wrong proof"):
                raise
            if only_if_listening and isinstance(exc, ConnectionRefusedError):
                raise StoreUnreachableError(f"The rendezvous store at {address} is gone (connection refused).",
                                            last=exc, reached=False) from None
            if isinstance(exc, HandshakeError) or not isinstance(last, HandshakeError):
                last = exc  # a handshake's failure says more than a later refused connection
            time.sleep(min(0.1, max(0.0, deadline - time.monotonic())))
    raise StoreUnreachableError(f"No authenticated connection to the rendezvous store at {address} before the "
                                f"deadline (last error: {last}).", last=last, reached=reached)

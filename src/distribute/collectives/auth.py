"""Proving knowledge of the job secret over a socket: a mutual HMAC challenge-response.

Every listener of a job (the rendezvous store, parameter servers) runs
:func:`server_handshake` on each connection it accepts, and every client
:func:`client_handshake` on each connection it opens, before anything else crosses it::

    server -> client   MAGIC | server nonce (32 bytes)
    client -> server   MAGIC | client nonce (32 bytes) | HMAC(secret, "client" | purpose | both nonces)
    server -> client   HMAC(secret, "server" | purpose | both nonces)

The server acts on nothing the client sends before the client's proof checks out, and the
client trusts nothing the server sends before the server's proof does, so neither side can
be impersonated by a process that does not know the secret, and a recorded exchange cannot
be replayed (fresh nonces each time). Only bytes are compared (``hmac.compare_digest``);
nothing is unpickled. The secret itself never crosses the wire. A job without a secret
(``DISTRIBUTE_ALLOW_UNAUTHENTICATED=1``) runs the same exchange with a fixed public key, so
its peers still tell a distribute task from an unrelated server.
"""

from __future__ import annotations

import hashlib
import hmac
import os
import socket
import threading
import time
from typing import List, Optional

from distribute.errors import UnauthenticatedError

__all__ = ["HANDSHAKE_TIMEOUT", "MAGIC", "HandshakeError", "RefusalLog", "client_handshake", "peer_address",
           "proof", "recv_exact", "server_handshake"]

MAGIC = b"DSTAUTH1"
NONCE_BYTES = 32
HANDSHAKE_TIMEOUT = 5.0
"""Seconds a listener gives a new connection to prove the secret before dropping it."""
_PUBLIC_KEY = b"distribute: this job runs without a secret"


class HandshakeError(UnauthenticatedError):
    """The other end of a connection did not prove the job secret (or is not a distribute task).

    Attributes:
        address: the other end, ``host:port``.
        reason: what went wrong (``'wrong proof'``, ``'not a distribute peer'``, ``'no answer'``).
    """

    def __init__(self, message: str, *, address: str = "", reason: str = "") -> None:
        super().__init__(message)
        self.address = address
        self.reason = reason


class RefusalLog:
    """Decides which refused connections a listener logs: the first ``limit`` per ``window`` seconds,
    so a flood of bad connections cannot fill the log.

    Example:
        >>> log = RefusalLog(limit=1)
        >>> log.should_log(), log.should_log()
        (True, False)
    """

    def __init__(self, limit: int = 20, window: float = 10.0) -> None:
        self._limit, self._window = limit, window
        self._logged: List[float] = []
        self._lock = threading.Lock()

    def should_log(self) -> bool:
        """Whether to log this refusal (counts it if so)."""
        with self._lock:
            now = time.monotonic()
            self._logged = [t for t in self._logged if now - t < self._window]
            if len(self._logged) >= self._limit:
                return False
            self._logged.append(now)
            return True


def proof(secret: Optional[bytes], role: bytes, purpose: bytes, first: bytes, second: bytes) -> bytes:
    """HMAC-SHA256 of one side's proof (``role`` is ``b'client'`` or ``b'server'``)."""
    key = secret if secret else _PUBLIC_KEY
    return hmac.new(key, b"|".join((role, purpose, first, second)), hashlib.sha256).digest()


def recv_exact(sock: socket.socket, count: int, deadline: float) -> bytes:
    """Reads exactly ``count`` bytes before ``deadline`` (``time.monotonic()``).

    Raises:
        TimeoutError: the deadline passed first.
        ConnectionError: the other end closed the connection.
    """
    chunks, have = [], 0
    while have < count:
        remaining = deadline - time.monotonic()
        if remaining <= 0:
            raise TimeoutError(f"no answer within the deadline ({have} of {count} bytes arrived)")
        sock.settimeout(remaining)
        try:
            chunk = sock.recv(count - have)
        except socket.timeout:
            raise TimeoutError(f"no answer within the deadline ({have} of {count} bytes arrived)") from None
        if not chunk:
            raise ConnectionError(f"the connection was closed ({have} of {count} bytes arrived)")
        chunks.append(chunk)
        have += len(chunk)
    return b"".join(chunks)


def peer_address(sock: socket.socket) -> str:
    """The other end of a connected socket as ``host:port`` (for messages and logs)."""
    try:
        name = sock.getpeername()
    except OSError:
        return "an unknown address"
    return f"{name[0]}:{name[1]}" if isinstance(name, tuple) and len(name) >= 2 else (str(name) or "a local socket")


def server_handshake(sock: socket.socket, secret: Optional[bytes], purpose: bytes,
                     timeout: float = HANDSHAKE_TIMEOUT) -> None:
    """Checks that the client of an accepted connection knows the secret, then proves it too.

    Raises:
        HandshakeError: the client sent something else, too little, or a wrong proof.
    """
    deadline = time.monotonic() + timeout
    address = peer_address(sock)
    mine = os.urandom(NONCE_BYTES)
    try:
        sock.sendall(MAGIC + mine)
        answer = recv_exact(sock, len(MAGIC) + NONCE_BYTES + 32, deadline)
    except (OSError, TimeoutError) as exc:
        raise HandshakeError(f"The connection from {address} gave no proof of the job secret: {exc}.",
                             address=address, reason="no answer") from None
    if answer[:len(MAGIC)] != MAGIC:
        raise HandshakeError(f"The connection from {address} is not a distribute task (it sent "
                             f"{answer[:16]!r}...).", address=address, reason="not a distribute peer")
    theirs, claimed = answer[len(MAGIC):len(MAGIC) + NONCE_BYTES], answer[len(MAGIC) + NONCE_BYTES:]
    if not hmac.compare_digest(claimed, proof(secret, b"client", purpose, mine, theirs)):
        raise HandshakeError(f"The connection from {address} does not know the job secret (wrong proof).",
                             address=address, reason="wrong proof")
    try:
        sock.sendall(proof(secret, b"server", purpose, theirs, mine))
    except OSError as exc:
        raise HandshakeError(f"The connection from {address} closed during the handshake: {exc}.",
                             address=address, reason="no answer") from None


def client_handshake(sock: socket.socket, secret: Optional[bytes], purpose: bytes, deadline: float) -> None:
    """Proves the secret to the server of ``sock`` and checks the server's proof, before ``deadline``.

    Raises:
        HandshakeError: the server is not a distribute task, does not answer in time, or does
            not know the secret (``reason`` says which).
    """
    address = peer_address(sock)
    try:
        hello = recv_exact(sock, len(MAGIC) + NONCE_BYTES, deadline)
    except (OSError, TimeoutError) as exc:
        raise HandshakeError(f"The listener at {address} did not greet as a distribute task: {exc}.",
                             address=address, reason="no answer") from None
    if hello[:len(MAGIC)] != MAGIC:
        raise HandshakeError(f"The listener at {address} is not a distribute task (it sent {hello[:16]!r}...).",
                             address=address, reason="not a distribute peer")
    theirs, mine = hello[len(MAGIC):], os.urandom(NONCE_BYTES)
    try:
        sock.sendall(MAGIC + mine + proof(secret, b"client", purpose, theirs, mine))
        answer = recv_exact(sock, 32, deadline)
    except (OSError, TimeoutError) as exc:
        raise HandshakeError(f"The listener at {address} refused this task's proof of the job secret ({exc}): "
                             "the tasks were given different DISTRIBUTE_JOB_SECRET values, or it is not part of "
                             "this job.", address=address, reason="refused") from None
    if not hmac.compare_digest(answer, proof(secret, b"server", purpose, mine, theirs)):
        raise HandshakeError(f"The listener at {address} does not know the job secret (wrong proof): it is not "
                             "part of this job.", address=address, reason="wrong proof")

"""Authenticated calls between the tasks of a parameter-server job, over gRPC.

gRPC (``grpcio``, the ``ps`` extra) carries every call: it is the transport TensorFlow's own
parameter servers use, it multiplexes concurrent calls over one HTTP/2 connection per pair of
tasks, and its keepalive pings notice a frozen or vanished peer. Messages are the typed frames
of :mod:`distribute.ps.wire` (``bytes`` in, ``bytes`` out; no protobuf schema).

Before anything else a client proves the job secret with the challenge-response of
:mod:`distribute.collectives.auth` spread over two calls::

    Hello   client -> server   MAGIC
            server -> client   MAGIC | server nonce
    Prove   client -> server   MAGIC | server nonce | client nonce | HMAC(secret, "client", ...)
            server -> client   HMAC(secret, "server", ...) | session token (32 random bytes)

The server answers nothing but ``Hello``/``Prove`` to a call without a valid session token
(``UNAUTHENTICATED``, and a log line), so a process without the secret can neither run code nor
read or write a variable; the client checks the server's proof before it trusts any answer.
"""

from __future__ import annotations

import builtins
import hmac
import logging
import os
import threading
import time
from collections import OrderedDict
from concurrent import futures
from typing import Any, Callable, Dict, List, Optional, Sequence, cast

from distribute.collectives.auth import MAGIC, NONCE_BYTES, RefusalLog, proof
from distribute import errors
from distribute.errors import UnauthenticatedError, UnavailableError
from distribute.ps import wire

__all__ = ["Handler", "RemoteError", "RpcClient", "RpcServer", "grpc_module", "remote_error"]

log = logging.getLogger("distribute.ps")

SERVICE = "distribute.Task"
PURPOSE = b"distribute.ps.rpc"
SESSION_KEY = "x-distribute-session"
TOKEN_BYTES = 32
_PENDING_CAP = 64
_PENDING_SECONDS = 10.0
_KEEPALIVE = [("grpc.keepalive_time_ms", 1000), ("grpc.keepalive_timeout_ms", 3000),
              ("grpc.keepalive_permit_without_calls", 1), ("grpc.http2.max_pings_without_data", 0)]
_SIZES = [("grpc.max_receive_message_length", -1), ("grpc.max_send_message_length", -1)]

Handler = Callable[[Dict[str, Any], List[wire.Buffer]], wire.Message]


def grpc_module() -> Any:
    """``grpc``, or an ``ImportError`` that says how to install the ``ps`` extra."""
    try:
        import grpc
    except ImportError as exc:  # pragma: no cover - the test environment installs the extra
        raise ImportError("Parameter-server training needs grpcio and cloudpickle: "
                          "pip install 'distribute[ps]'") from exc
    return grpc


class RemoteError(Exception):
    """An error a handler raised on the other task, carried back in the answer."""

    def __init__(self, kind: str, message: str, task: str) -> None:
        super().__init__(message)
        self.kind, self.task = kind, task


def remote_error(kind: str, message: str, task: str) -> Exception:
    """The exception a handler's error becomes on the caller's side: the same class when it is one
    of ``distribute.errors`` or a common builtin, else :class:`RemoteError`."""
    cls = getattr(errors, kind, None)
    if not (isinstance(cls, type) and issubclass(cls, errors.DistributeError)):
        cls = getattr(builtins, kind) if kind in _CARRIED else None
    if cls is not None:
        try:
            return cast(Exception, cls(message))
        except TypeError:  # a constructor that wants other arguments
            pass
    return RemoteError(kind, message, task)


_CARRIED = {"ValueError", "TypeError", "KeyError", "IndexError", "RuntimeError", "AssertionError",
            "ZeroDivisionError", "NotImplementedError", "AttributeError", "StopIteration"}


class RpcServer:
    """A gRPC server of ``handlers`` at ``address`` that serves only peers proving ``secret``.

    Args:
        address: ``host:port`` of this task (the listener binds this address only).
        secret: the job secret (None: a job running unauthenticated).
        handlers: method name -> ``handler(meta, buffers) -> (meta, buffers)``.
        task: this task's name (``'ps:0'``), for logs and errors.
    """

    def __init__(self, address: str, secret: Optional[bytes], handlers: Dict[str, Handler], task: str,
                 max_workers: int = 32) -> None:
        grpc = grpc_module()
        self._secret, self._task = secret, task
        self._pending: "OrderedDict[bytes, float]" = OrderedDict()
        self._sessions: set = set()
        self.first_session: Optional[float] = None
        """When (``time.monotonic()``) a peer first proved the secret; None until one has."""
        self._lock = threading.Lock()
        self._refusal_log = RefusalLog()
        self._executor = futures.ThreadPoolExecutor(max_workers, thread_name_prefix=f"rpc-{task}")
        self._server = grpc.server(self._executor,
                                   options=_SIZES + [("grpc.so_reuseport", 0),
                                                     ("grpc.http2.min_ping_interval_without_data_ms", 500),
                                                     ("grpc.http2.max_ping_strikes", 0)])
        methods: Dict[str, Callable[[bytes, Any], bytes]] = {"Hello": self._hello, "Prove": self._prove}
        methods.update({name: self._guarded(fn) for name, fn in handlers.items()})
        self._server.add_generic_rpc_handlers([grpc.method_handlers_generic_handler(
            SERVICE, {name: grpc.unary_unary_rpc_method_handler(fn) for name, fn in methods.items()})])
        try:
            self.port = self._server.add_insecure_port(address)
        except RuntimeError:  # grpcio raises when the bind fails; older versions return 0
            self.port = 0
        if self.port == 0:
            raise UnavailableError(f"{task} cannot listen on {address}: the address is in use or not this "
                                   "machine's. Give every task a free port of its own host.")

    def _refuse(self, peer: str, why: str) -> None:
        if self._refusal_log.should_log():  # a flood: the first 20 in 10 s are logged
            log.warning("%s refused a call from %s: %s", self._task, peer, why)

    def start(self) -> None:
        """Starts serving."""
        self._server.start()

    def stop(self, grace: Optional[float] = None) -> None:
        """Stops serving (calls in flight get ``grace`` seconds)."""
        self._server.stop(grace).wait(5.0)
        self._executor.shutdown(wait=False)

    # -- the handshake ------------------------------------------------------------------
    def _hello(self, request: bytes, context: Any) -> bytes:
        if request != MAGIC:
            self._refuse(context.peer(), "not a distribute peer")
            return b""
        nonce = os.urandom(NONCE_BYTES)
        with self._lock:
            self._pending[nonce] = time.monotonic()
            while len(self._pending) > _PENDING_CAP:
                self._pending.popitem(last=False)
        return MAGIC + nonce

    def _prove(self, request: bytes, context: Any) -> bytes:
        grpc = grpc_module()
        size = len(MAGIC) + 2 * NONCE_BYTES + 32
        mine, theirs = request[len(MAGIC):len(MAGIC) + NONCE_BYTES], request[len(MAGIC) + NONCE_BYTES:size - 32]
        with self._lock:
            issued = self._pending.pop(mine, None)
        fresh = issued is not None and time.monotonic() - issued < _PENDING_SECONDS
        if len(request) != size or request[:len(MAGIC)] != MAGIC or not fresh or not hmac.compare_digest(
                request[size - 32:], proof(self._secret, b"client", PURPOSE, mine, theirs)):
            self._refuse(context.peer(), "it does not know the job secret")
            context.abort(grpc.StatusCode.UNAUTHENTICATED, f"{self._task}: the job secret was not proved")
        token = os.urandom(TOKEN_BYTES)
        with self._lock:
            self._sessions.add(token)
            if self.first_session is None:
                self.first_session = time.monotonic()
        return proof(self._secret, b"server", PURPOSE, theirs, mine) + token

    def _guarded(self, handler: Handler) -> Callable[[bytes, Any], bytes]:
        def serve(request: bytes, context: Any) -> bytes:
            token = dict(context.invocation_metadata()).get(SESSION_KEY + "-bin", b"")
            if token not in self._sessions:
                self._refuse(context.peer(), "no session (the job secret was not proved first)")
                context.abort(grpc_module().StatusCode.UNAUTHENTICATED, f"{self._task}: no session")
            try:
                meta, buffers = wire.decode(request)
                out_meta, out_buffers = handler(meta, buffers)
            except Exception as exc:  # noqa: BLE001 - every failure goes back to the caller, typed
                return wire.encode({"error": {"kind": type(exc).__name__, "message": str(exc)}})
            return wire.encode(out_meta, out_buffers)
        return serve


class RpcClient:
    """Calls one task's :class:`RpcServer` after proving the job secret to it.

    Args:
        address: the task's ``host:port``.
        secret: the job secret (None: a job running unauthenticated).
        task: the task's name (``'ps:1'``); every error names it.
        executor: the threads that run :meth:`call_async` (gRPC's own futures start a thread
            per call, which costs more than a small call).
    """

    def __init__(self, address: str, secret: Optional[bytes], task: str,
                 executor: Optional[futures.ThreadPoolExecutor] = None) -> None:
        grpc = grpc_module()
        self._executor = executor
        self.address, self.task, self._secret = address, task, secret
        self._channel = grpc.insecure_channel(address, options=_SIZES + _KEEPALIVE)
        self._token: Optional[bytes] = None
        self._connected_once = False
        self._lock = threading.Lock()
        self._stubs: Dict[str, Any] = {}

    def _stub(self, method: str) -> Any:
        stub = self._stubs.get(method)
        if stub is None:
            stub = self._stubs[method] = self._channel.unary_unary(f"/{SERVICE}/{method}")
        return stub

    def connect(self, timeout: float = 10.0) -> None:
        """Runs the handshake (again); raises ``UnavailableError`` or ``UnauthenticatedError``.

        The first connection waits up to ``timeout`` for the task to start listening; a
        reconnection fails at once when the task does not answer.
        """
        grpc = grpc_module()
        try:
            hello = self._stub("Hello")(MAGIC, timeout=timeout, wait_for_ready=not self._connected_once)
            if hello[:len(MAGIC)] != MAGIC:
                raise UnauthenticatedError(f"{self.task} ({self.address}) is not a distribute task.")
            theirs, mine = hello[len(MAGIC):], os.urandom(NONCE_BYTES)
            answer = self._stub("Prove")(MAGIC + theirs + mine + proof(self._secret, b"client", PURPOSE, theirs, mine),
                                         timeout=timeout)
        except grpc.RpcError as exc:
            raise self._failure(exc) from None
        if not hmac.compare_digest(answer[:32], proof(self._secret, b"server", PURPOSE, mine, theirs)):
            raise UnauthenticatedError(f"{self.task} ({self.address}) did not prove the job secret: it is not "
                                       "a task of this job.")
        self._token = answer[32:]
        self._connected_once = True

    def _session(self, timeout: Optional[float] = None) -> bytes:
        with self._lock:
            if self._token is None:
                self.connect(10.0 if timeout is None else timeout)
            return cast(bytes, self._token)

    def call(self, method: str, meta: Dict[str, Any], buffers: Sequence[wire.Buffer] = (),
             timeout: Optional[float] = None, reconnect: bool = True) -> wire.Message:
        """Calls ``method``; returns its ``(meta, buffers)``.

        A task that no longer knows this client's session (it restarted) is given the secret
        again and the call retried, unless ``reconnect`` is False: then the call raises
        ``UnauthenticatedError``, for callers whose peer's state went with its old process.

        Raises:
            UnavailableError: the task cannot be reached (the message names it).
            Exception: the error the handler raised there, of the same type where it is one of
                ``distribute.errors`` or a builtin, else :class:`RemoteError`.
        """
        grpc = grpc_module()
        request = wire.encode(meta, buffers)
        for attempt in range(2):
            token = self._session(timeout)
            try:
                answer = self._stub(method)(request, timeout=timeout, metadata=((SESSION_KEY + "-bin", token),))
                break
            except grpc.RpcError as exc:
                if exc.code() == grpc.StatusCode.UNAUTHENTICATED and attempt == 0 and reconnect:
                    self._token = None  # the task restarted: prove the secret to it again
                    continue
                raise self._failure(exc) from None
        return self._answer(answer)

    def call_async(self, method: str, meta: Dict[str, Any], buffers: Sequence[wire.Buffer] = (),
                   timeout: Optional[float] = None) -> Callable[[], wire.Message]:
        """Starts ``method`` on this client's thread pool; the returned function waits for its
        answer (errors as :meth:`call`). Without a pool the call runs when the answer is asked for."""
        if self._executor is None:
            return lambda: self.call(method, meta, buffers, timeout)
        future = self._executor.submit(self.call, method, meta, buffers, timeout)
        return future.result

    def _answer(self, answer: bytes) -> wire.Message:
        out_meta, out_buffers = wire.decode(answer)
        error = out_meta.get("error")
        if error is not None:
            message = error["message"] if self.task in error["message"] else f"{self.task}: {error['message']}"
            raise remote_error(error["kind"], message, self.task)
        return out_meta, out_buffers

    def _failure(self, exc: Any) -> Exception:
        grpc = grpc_module()
        self._token = None  # whatever failed, the next call proves the secret again
        if exc.code() != grpc.StatusCode.UNAUTHENTICATED:
            return UnavailableError(f"{self.task} ({self.address}) is unavailable: {exc.code().name}: "
                                    f"{exc.details()}")
        if "no session" in str(exc.details()):
            return UnauthenticatedError(f"{self.task} ({self.address}) does not know this connection's session: "
                                        "the task restarted. Reconnect (prove the job secret again).")
        return UnauthenticatedError(f"{self.task} ({self.address}) refused this task: {exc.details()}. "
                                    "Every task needs the same DISTRIBUTE_JOB_SECRET.")

    def close(self) -> None:
        """Closes the channel."""
        self._channel.close()

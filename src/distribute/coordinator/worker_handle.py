"""The coordinator's side of one worker: a thread that feeds it closures and reads their results.

The thread connects (proving the job secret), sends the per-worker datasets and iterators the
worker does not have yet, then sends batches of closures. If the worker cannot be reached the
batch goes back to the front of the queue (so another worker runs it: at least once), and the
thread reconnects every half second; a restarted worker gets its datasets again and new work,
with nothing else restarted.
"""

from __future__ import annotations

import logging
import threading
from typing import Any, Dict, List, Set, Tuple

from distribute.coordinator.closure_queue import Closure, ClosureQueue
from distribute.errors import UnauthenticatedError, UnavailableError
from distribute.ps import wire
from distribute.ps.rpc import RpcClient

__all__ = ["ResourceLog", "WorkerHandle"]

log = logging.getLogger("distribute.ps")

RECONNECT_INTERVAL = 0.5


class ResourceLog:
    """Every per-worker dataset and iterator made so far, in order (replayed to a new worker)."""

    def __init__(self) -> None:
        self.records: List[Tuple[Dict[str, Any], List[wire.Buffer]]] = []
        self._lock = threading.Lock()
        self._next = 0

    def add(self, meta: Dict[str, Any], buffers: List[wire.Buffer]) -> int:
        """Records a resource; returns its id (the same on every worker)."""
        with self._lock:
            self._next += 1
            self.records.append((dict(meta, id=self._next), list(buffers)))
            return self._next

    def since(self, count: int) -> List[Tuple[Dict[str, Any], List[wire.Buffer]]]:
        """The records after the first ``count``."""
        with self._lock:
            return self.records[count:]


def _remote_exception(blob: bytes, tensors: List[Any], entry: Dict[str, Any]) -> BaseException:
    try:
        error = wire.loads(blob, tensors, lambda ref: None)
    except Exception:  # noqa: BLE001 - an error class the coordinator cannot import
        error = RuntimeError(entry.get("traceback", "a scheduled function failed"))
    if not isinstance(error, BaseException):
        error = RuntimeError(str(error))
    if hasattr(error, "add_note"):
        error.add_note(f"Raised on {entry.get('task')} by a scheduled function:\n{entry.get('traceback', '')}")
    return error


class WorkerHandle:
    """Feeds closures to ``worker:<index>`` from ``queue`` on a thread of its own."""

    def __init__(self, index: int, client: RpcClient, queue: ClosureQueue, resources: ResourceLog,
                 num_workers: int) -> None:
        self.index, self._client, self._queue = index, client, queue
        self._resources, self._num_workers = resources, num_workers
        self._connected = False
        self._sent: Set[str] = set()
        self._sent_resources = 0
        self._thread = threading.Thread(target=self._loop, name=f"coordinator-worker:{index}", daemon=True)
        self._thread.start()

    def join(self, timeout: float) -> None:
        """Waits for the thread to end (after the queue stopped)."""
        self._thread.join(timeout)

    def _loop(self) -> None:
        while not self._queue.stopped:
            if not self._ready():
                if self._queue.stopped:
                    return
                threading.Event().wait(RECONNECT_INTERVAL)
                continue
            batch = self._queue.take(self._num_workers)
            if batch:
                self._run(batch)

    def _ready(self) -> bool:
        if self._connected:
            return True
        try:
            self._client.connect(timeout=2.0)
        except (UnavailableError, UnauthenticatedError):
            return False
        self._sent.clear()
        self._sent_resources = 0
        self._connected = True
        return True

    def _lost(self, exc: BaseException) -> None:
        if self._connected:
            log.warning("worker:%d is unavailable (%s); its closures run again elsewhere", self.index, exc)
        self._connected = False

    def _send_resources(self) -> None:
        for meta, buffers in self._resources.since(self._sent_resources):
            self._sent_resources += 1
            try:
                self._client.call("Resource", meta, buffers, reconnect=False)
            except (UnavailableError, UnauthenticatedError):
                self._sent_resources -= 1
                raise
            except Exception as exc:  # noqa: BLE001 - a dataset_fn that fails on the worker
                self._queue.fail(exc)

    def _run(self, batch: List[Closure]) -> None:
        try:
            self._send_resources()
            meta, buffers = self._request(batch)
            # reconnect=False: a worker restarted since the last call lost its datasets and
            # functions; the refusal sends the batch back and _ready() gives it everything again.
            answer_meta, answer = self._client.call("Run", meta, buffers, reconnect=False)
        except (UnavailableError, UnauthenticatedError) as exc:
            self._lost(exc)
            self._queue.put_back(batch)
            return
        except Exception as exc:  # noqa: BLE001 - the worker could not run the batch at all
            for closure in batch:
                closure.output._fail(exc)
            self._queue.fail(exc)
            self._queue.finished(len(batch))
            return
        self._dispatch(batch, answer_meta["results"], answer)

    def _request(self, batch: List[Closure]) -> Tuple[Dict[str, Any], List[wire.Buffer]]:
        entries: List[Dict[str, Any]] = []
        buffers: List[wire.Buffer] = []
        for closure in batch:
            payload = closure.function
            entry: Dict[str, Any] = {"digest": payload.digest, "args": len(closure.args_tensors)}
            if payload.digest not in self._sent:
                entry["fn"] = len(payload.tensors)
                buffers += [payload.blob, *payload.tensors]
                self._sent.add(payload.digest)
            buffers += [closure.args_blob, *closure.args_tensors]
            entries.append(entry)
        return {"closures": entries}, buffers

    def _dispatch(self, batch: List[Closure], results: List[Dict[str, Any]], answer: List[Any]) -> None:
        position, again = 0, []
        for closure, entry in zip(batch, results):
            blob, tensors = answer[position], answer[position + 1:position + 1 + entry["n"]]
            position += 1 + entry["n"]
            status = entry["status"]
            if status == "ok":
                closure.output._set(wire.loads(blob, tensors, lambda ref: None))
            elif status == "cancelled":  # after a failed closure of the batch: a failed ps fails these too
                closure.output._abort(self._queue.fatal)
            elif status == "missing":
                self._sent.discard(closure.function.digest)
                again.append(closure)
            elif status == "unavailable":
                fatal = UnavailableError(entry["message"])
                closure.output._fail(fatal)
                self._queue.fail_fatally(fatal)
            else:
                error = _remote_exception(blob, tensors, entry)
                closure.output._fail(error)
                self._queue.fail(error)
        self._queue.finished(len(batch) - len(again))
        if again:
            self._queue.put_back(again)

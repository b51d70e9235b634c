"""How local replicas take turns: greenlets in the caller's thread, or one thread each.

Both executors give the same observable order: replica 0 runs until it finishes or reaches a
synchronisation point, then replica 1, and so on; the driver (the caller) then runs the merge
step and resumes the replicas in order. A replica's event is ``("done", result)``,
``("sync", request)`` or ``("error", exception)``.

Greenlets switch in well under a microsecond, so they are the default. Torch's autograd engine
keeps per-thread state that cannot be shared by replicas suspended inside ``backward()``. When a
greenlet run reaches its first collective that needs a gradient, ``expect_backward`` moves each
later backward call of a replica onto a helper thread (``backward_relay.py``); the replica
function itself is never run again. The runner uses the thread executor, where each replica has
its own thread and engine state, for the steps after that.
"""

from __future__ import annotations

import queue
import threading
from typing import Any, Callable, List, Optional, Tuple

import greenlet
import torch

from distribute._core import context
from distribute.strategies.backward_relay import BackwardRelay, relay_from_helper

__all__ = ["GreenletExecutor", "ReplicaAborted", "ThreadExecutor"]

Event = Tuple[str, Any]


class ReplicaAborted(BaseException):
    """Thrown into parked replicas when another replica failed; never reaches the user."""


class _TorchModes:
    """The torch thread-local modes a replica carries across switches."""

    __slots__ = ("grad",)

    def __init__(self) -> None:
        self.grad = torch.is_grad_enabled()


class _GreenletPool(threading.local):
    def __init__(self) -> None:
        self.idle: List[greenlet.greenlet] = []


_pool = _GreenletPool()


def _worker(job: Any) -> None:
    while True:
        fn, args, kwargs = job
        try:
            event: Event = ("done", fn(*args, **kwargs))
        except BaseException as exc:  # noqa: BLE001 - every failure is reported to the driver
            event = ("error", exc)
        job = greenlet.getcurrent().parent.switch(event)


class GreenletExecutor:
    """Runs each replica in a pooled greenlet of the caller's thread."""

    uses_threads = False

    def __init__(self, stacks: List[list]) -> None:
        self._stacks = stacks
        self._modes = [_TorchModes() for _ in stacks]
        self._greenlets: List[Any] = [None] * len(stacks)
        self._relay: Optional[BackwardRelay] = None

    def start(self, index: int, fn: Callable, args: tuple, kwargs: dict) -> Event:
        g = _pool.idle.pop() if _pool.idle else greenlet.greenlet(_worker)
        g.parent = greenlet.getcurrent()
        self._greenlets[index] = g
        return self._switch(index, (fn, args, kwargs))

    def resume(self, index: int, value: Any) -> Event:
        return self._switch(index, value)

    def _switch(self, index: int, value: Any, throw: bool = False) -> Event:
        modes = self._modes[index]
        caller_grad = torch.is_grad_enabled()
        torch._C._set_grad_enabled(modes.grad)
        caller_stack = context.swap_stack(self._stacks[index])
        try:
            g = self._greenlets[index]
            event = g.throw(value) if throw else g.switch(value)
        finally:
            self._stacks[index] = context.swap_stack(caller_stack)
            modes.grad = torch.is_grad_enabled()
            torch._C._set_grad_enabled(caller_grad)
        if event[0] != "sync":
            self._release(index)
        return event

    def _release(self, index: int) -> None:
        g = self._greenlets[index]
        self._greenlets[index] = None
        if g is not None and not g.dead:
            _pool.idle.append(g)

    @staticmethod
    def park(request: Any) -> Any:
        """Called inside a replica: hands ``request`` to the driver and waits for the result."""
        parent = greenlet.getcurrent().parent
        if parent is None:  # a helper thread's backward, or the driver itself
            return relay_from_helper(request)
        result = parent.switch(("sync", request))
        if isinstance(result, BaseException):
            raise result
        return result

    def abort(self, index: int) -> None:
        """Unwinds a parked replica (its ``finally`` blocks run) and recycles its greenlet."""
        if self._greenlets[index] is not None:
            self._switch(index, ReplicaAborted(), throw=True)

    def current_replica(self) -> Optional[int]:
        """The local index of the replica whose greenlet is running, None elsewhere."""
        current = greenlet.getcurrent()
        for index, g in enumerate(self._greenlets):
            if g is current:
                return index
        return None

    def expect_backward(self) -> None:
        """From now until ``close``, replicas' backward calls run on helper threads."""
        if self._relay is None:
            self._relay = BackwardRelay(self)
            self._relay.__enter__()

    def close(self) -> None:
        """Ends what ``expect_backward`` started (called by the driver when the run ends)."""
        if self._relay is not None:
            self._relay.__exit__(None, None, None)
            self._relay = None


class _ReplicaChannel(threading.local):
    def __init__(self) -> None:
        self.channel: Optional[_ReplicaThread] = None


class _ReplicaThread:
    def __init__(self, executor: "ThreadExecutor", index: int) -> None:
        self.inbox: "queue.SimpleQueue[Any]" = queue.SimpleQueue()
        self.thread = threading.Thread(target=self._main, args=(executor, index), daemon=True,
                                       name=f"distribute-replica-{index}")

    def _main(self, executor: "ThreadExecutor", index: int) -> None:
        context.swap_stack(executor._stacks[index])
        torch._C._set_grad_enabled(executor._grad)
        executor._local.channel = self
        fn, args, kwargs = self.inbox.get()
        try:
            event: Event = ("done", fn(*args, **kwargs))
        except BaseException as exc:  # noqa: BLE001
            event = ("error", exc)
        executor._events.put((index, event))


class ThreadExecutor:
    """Runs each replica on its own thread, one at a time (a baton is passed in order)."""

    uses_threads = True

    def __init__(self, stacks: List[list]) -> None:
        self._stacks = stacks
        self._grad = torch.is_grad_enabled()
        self._events: "queue.SimpleQueue[Tuple[int, Event]]" = queue.SimpleQueue()
        self._local = _ReplicaChannel()
        self._threads = [_ReplicaThread(self, i) for i in range(len(stacks))]

    def start(self, index: int, fn: Callable, args: tuple, kwargs: dict) -> Event:
        replica = self._threads[index]
        replica.thread.start()
        replica.inbox.put((fn, args, kwargs))
        return self._wait(index)

    def resume(self, index: int, value: Any) -> Event:
        self._threads[index].inbox.put(value)
        return self._wait(index)

    def _wait(self, index: int) -> Event:
        got, event = self._events.get()
        if got != index:  # pragma: no cover - replicas only run while holding the baton
            raise RuntimeError(f"replica {got} reported while replica {index} held the baton")
        if event[0] != "sync":
            self._threads[index].thread.join()
        return event

    def park(self, request: Any) -> Any:
        channel = self._local.channel
        if channel is None:  # not on a replica thread: the driver (e.g. a backward in merge_fn)
            return relay_from_helper(request)
        index = self._threads.index(channel)
        self._events.put((index, ("sync", request)))
        result = channel.inbox.get()
        if isinstance(result, BaseException):
            raise result
        return result

    def abort(self, index: int) -> None:
        if self._threads[index].thread.is_alive():
            self.resume(index, ReplicaAborted())

    def expect_backward(self) -> None:
        """Nothing to do: every replica has its own thread, so its own autograd-engine state."""

    def close(self) -> None:
        """Joins every replica thread that was started."""
        for replica in self._threads:
            if replica.thread.ident is not None:
                replica.thread.join()

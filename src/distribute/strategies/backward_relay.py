"""Backward passes of greenlet replicas, moved onto helper threads once a collective is differentiable.

Replicas that take turns as greenlets share their thread's autograd-engine state. The backward
pass of a differentiable collective must stop inside the engine until every replica's backward
reaches the same collective, so two replicas would be inside one thread's engine at once, which
the engine cannot do. From the merge of a step's first collective that needs a gradient, a
``BackwardRelay`` (a torch function mode, active until the step ends) catches each backward call
made by a replica (``Tensor.backward``, ``torch.autograd.backward``, ``torch.autograd.grad``) and
runs that call alone on a helper thread with the replica's mode stack and grad mode. The
replica's greenlet waits for the helper and relays its synchronisation requests (a
``GradientSync``) to the driver like its own. The replica function runs once, in its greenlet;
only the engine call moves. Every other torch call passes straight through.
"""

from __future__ import annotations

import queue
import threading
from typing import Any, Callable, Optional, Protocol, Tuple

import torch
from torch.overrides import TorchFunctionMode

from distribute._core import context

__all__ = ["BackwardRelay", "relay_from_helper"]

_BACKWARD_CALLS = frozenset({torch.Tensor.backward, torch.autograd.backward, torch.autograd.grad})
_OUTSIDE_ERROR = ("The gradient of a collective was computed outside the replica function that called "
                  "the collective (for example in a merge_fn). Call backward() inside the function "
                  "passed to strategy.run, or return the loss and differentiate it after run() returns.")


class _Executor(Protocol):
    def current_replica(self) -> Optional[int]:
        """The local index of the replica running now, None in the driver."""

    def park(self, request: Any) -> Any:
        """Hands ``request`` to the driver; returns the replica's merge result."""


class _HelperState(threading.local):
    def __init__(self) -> None:
        self.helper: Optional[_Helper] = None


_local = _HelperState()


class _Helper:
    """One backward call on its own thread; queues to and from the waiting replica."""

    def __init__(self, call: Callable[[], Any], index: int) -> None:
        self.inbox: "queue.SimpleQueue[Any]" = queue.SimpleQueue()
        self.outbox: "queue.SimpleQueue[Tuple[str, Any]]" = queue.SimpleQueue()
        args = (call, context.stack(), torch.is_grad_enabled())
        self.thread = threading.Thread(target=self._main, args=args, daemon=True,
                                       name=f"distribute-replica-{index}-backward")

    def _main(self, call: Callable[[], Any], stack: list, grad: bool) -> None:
        context.swap_stack(stack)
        torch._C._set_grad_enabled(grad)
        _local.helper = self
        try:
            event: Tuple[str, Any] = ("done", call())
        except BaseException as exc:  # noqa: BLE001 - re-raised in the replica
            event = ("error", exc)
        self.outbox.put(event)

    def request(self, request: Any) -> Any:
        """On the helper thread: hands ``request`` to the replica and waits for its result."""
        self.outbox.put(("sync", request))
        result = self.inbox.get()
        if isinstance(result, BaseException):
            raise result
        return result

    def drain(self, exc: BaseException) -> None:
        """Answers every further request with ``exc`` until the helper's call has ended."""
        while self.outbox.get()[0] == "sync":
            self.inbox.put(exc)


def relay_from_helper(request: Any) -> Any:
    """A synchronisation request made on a helper thread (outside any replica greenlet)."""
    helper = _local.helper
    if helper is None:
        raise RuntimeError(_OUTSIDE_ERROR)
    return helper.request(request)


class BackwardRelay(TorchFunctionMode):
    """Runs the backward calls of ``executor``'s replicas on helper threads (module docstring)."""

    def __init__(self, executor: _Executor) -> None:
        super().__init__()
        self._executor = executor

    def __torch_function__(self, func: Any, types: Any, args: tuple = (), kwargs: Optional[dict] = None) -> Any:
        kwargs = kwargs or {}
        if func in _BACKWARD_CALLS:
            index = self._executor.current_replica()
            if index is not None:
                # torch takes this mode off its stack while it handles a call; put it back, so
                # the replicas that run while this one waits are relayed too.
                with self:
                    return self._relay(_Helper(lambda: func(*args, **kwargs), index))
        return func(*args, **kwargs)

    def _relay(self, helper: _Helper) -> Any:
        helper.thread.start()
        try:
            while True:
                kind, value = helper.outbox.get()
                if kind == "done":
                    return value
                if kind == "error":
                    raise value
                helper.inbox.put(self._park(helper, value))
        finally:
            helper.thread.join()

    def _park(self, helper: _Helper, request: Any) -> Any:
        try:
            return self._executor.park(request)
        except BaseException as exc:
            helper.inbox.put(exc)
            helper.drain(exc)
            raise

"""Runs a function once per local replica and implements their synchronisation points.

A synchronisation point is a ``SyncRequest``: a ``merge_call``, an ``all_reduce`` or an
``all_gather`` (the collectives, and the gradient of a collective during backward). When every
replica has reached one, the driver checks that they agree (same kind, same structure, shapes
and dtypes, same number of calls) and runs the merge step once in cross-replica context. Any
disagreement or exception unwinds every replica and is raised in the caller, naming the
replicas involved, so nothing is left blocked.
"""

from __future__ import annotations

from typing import Any, Callable, List, NamedTuple, Optional, Sequence

import torch

from distribute._core import context
from distribute._core.context import Mode
from distribute._base.nest import flatten
from distribute._core.replica_context import ReplicaContext
from distribute._core.values import regroup, select_replica
from distribute.errors import CollectiveError, GatherShapeMismatchError
from distribute.strategies.executors import GreenletExecutor, ReplicaAborted, ThreadExecutor

__all__ = ["ReplicaRunner", "SyncRequest"]

MERGE_COUNT_ERROR = "Some replicas made a different number of replica_context().merge_call() calls."


class SyncRequest(NamedTuple):
    """What a replica asks for at a synchronisation point."""

    kind: str                      # "merge_call", "all_reduce", "all_gather", "grad"
    describe: str                  # e.g. "all_reduce(SUM)"
    signature: Any                 # compared across replicas (None: not compared)
    payload: Any                   # kind-specific arguments
    needs_threads: bool = False    # True when the result must be differentiable


class _Restart(Exception):
    """Raised by the driver to rerun a step on threads (see ``ReplicaRunner.run``)."""


class ReplicaRunner:
    """Drives the local replicas of one strategy."""

    def __init__(self, strategy: Any, num_local: int, first_replica_id: int = 0) -> None:
        self._strategy = strategy
        self._contexts = [ReplicaContext(strategy, first_replica_id + i, _local_id=i) for i in range(num_local)]
        self._modes = [Mode(strategy, None, ctx) for ctx in self._contexts]
        self._executor: Any = None
        self.use_threads = False

    def __deepcopy__(self, memo: dict) -> "ReplicaRunner":
        strategy = memo.get(id(self._strategy), self._strategy)
        first = self._contexts[0]._replica_id
        return ReplicaRunner(strategy, len(self._contexts), first)

    @property
    def modes(self) -> List[Mode]:
        """The mode-stack entry of each local replica (replica context of that replica)."""
        return self._modes

    @property
    def contexts(self) -> List[ReplicaContext]:
        """The replica contexts, in local replica order."""
        return self._contexts

    # -- running ----------------------------------------------------------------------
    def run(self, fn: Callable, args: tuple, kwargs: dict, merge: Callable[[List[SyncRequest]], list]) -> list:
        """Runs ``fn`` on every local replica; returns the per-replica results."""
        try:
            return self._run_once(fn, args, kwargs, merge, self.use_threads)
        except _Restart:
            self.use_threads = True
            return self._run_once(fn, args, kwargs, merge, True)

    def _run_once(self, fn: Callable, args: tuple, kwargs: dict, merge: Callable, threads: bool) -> list:
        base = context.stack()
        stacks = [base + [mode] for mode in self._modes]
        executor = ThreadExecutor(stacks) if threads else GreenletExecutor(stacks)
        previous, self._executor = self._executor, executor
        try:
            return self._drive(executor, fn, args, kwargs, merge)
        finally:
            self._executor = previous
            if threads:
                executor.close()

    def _drive(self, executor: Any, fn: Callable, args: tuple, kwargs: dict, merge: Callable) -> list:
        n = len(self._contexts)
        events: list = []
        for i in range(n):
            events.append(executor.start(i, fn, select_replica(i, args), select_replica(i, kwargs)))
            if events[-1][0] == "error":
                self._fail(executor, events, events[-1][1])
        syncs = 0
        while True:
            kinds = {event[0] for event in events}
            if kinds == {"done"}:
                return [event[1] for event in events]
            if kinds != {"sync"}:
                self._fail(executor, events, RuntimeError(self._count_message(events)))
            requests = [event[1] for event in events]
            self._check_agreement(executor, events, requests)
            if requests[0].needs_threads and not executor.uses_threads:
                self._fail(executor, events, _Restart() if syncs == 0 else RuntimeError(self._threads_message()))
            syncs += 1
            try:
                results = merge(requests)
            except BaseException as exc:  # noqa: BLE001 - reported in the caller
                self._fail(executor, events, exc)
            events = []
            for i in range(n):
                events.append(executor.resume(i, results[i]))
                if events[-1][0] == "error":
                    self._fail(executor, events, events[-1][1])

    def _fail(self, executor: Any, events: Sequence[Any], exc: BaseException) -> None:
        for i, event in enumerate(events):
            if event[0] == "sync":
                executor.abort(i)
        if isinstance(exc, ReplicaAborted):  # pragma: no cover - only thrown into replicas
            exc = RuntimeError("a replica was aborted")
        raise exc

    @staticmethod
    def _count_message(events: Sequence[Any]) -> str:
        done = [i for i, e in enumerate(events) if e[0] == "done"]
        waiting = [f"replica {i} in {e[1].describe}" for i, e in enumerate(events) if e[0] == "sync"]
        return (f"{MERGE_COUNT_ERROR} Replicas {done} returned while {', '.join(waiting)} was "
                "waiting for them; every replica must make the same synchronisation calls.")

    @staticmethod
    def _threads_message() -> str:
        return ("A differentiable collective (an all_reduce or all_gather of a tensor that requires "
                "grad) came after another synchronisation point in the first step that used one. "
                "Set `strategy.extended.experimental_replica_threads = True` before the first step "
                "so that replicas run on threads, which backward through a collective needs.")

    def _check_agreement(self, executor: Any, events: list, requests: List[SyncRequest]) -> None:
        first = requests[0]
        for i, request in enumerate(requests[1:], start=1):
            if request.kind != first.kind or request.describe != first.describe:
                self._fail(executor, events, CollectiveError(
                    f"Replicas called different synchronisation operations: replica 0 called "
                    f"{first.describe} but replica {i} called {request.describe}. Every replica "
                    "must make the same collective calls in the same order."))
            if first.signature is not None and request.signature != first.signature:
                if first.kind == "all_gather" and _same_but_shapes(first.signature, request.signature):
                    self._fail(executor, events, _gather_mismatch(requests))
                self._fail(executor, events, CollectiveError(
                    f"Replicas disagree on {first.describe}: replica 0 passed {first.signature} but "
                    f"replica {i} passed {request.signature}. Structures, dtypes and shapes must "
                    "match (all_gather: shapes may differ only along the gather axis)."))

    # -- inside a replica ---------------------------------------------------------------
    def sync(self, request: SyncRequest) -> Any:
        """Called by a replica: waits until every replica arrives, returns its merge result."""
        executor = self._executor
        if executor is None:
            raise RuntimeError("Need to be inside `call_for_each_replica()`")
        return executor.park(request)


def _same_but_shapes(a: Any, b: Any) -> bool:
    """True when two collective signatures differ only in the shapes of their tensors."""
    def strip(signature: Any) -> tuple:
        return (signature[0],) + tuple(x[1] if isinstance(x, tuple) else x for x in signature[1])
    return strip(a) == strip(b)


def _gather_mismatch(requests: List[SyncRequest]) -> GatherShapeMismatchError:
    axis = requests[0].payload[0]
    shapes = [[tuple(x.shape) for x in flatten(r.payload[1]) if isinstance(x, torch.Tensor)] for r in requests]
    listing = ", ".join(f"replica {i}: {s[0] if len(s) == 1 else s}" for i, s in enumerate(shapes))
    return GatherShapeMismatchError(
        f"Shape mismatch in all_gather(axis={axis}): {listing}. The values gathered must have the "
        f"same rank and the same size in every dimension except the gather axis ({axis}).")


def merge_call_results(strategy: Any, requests: List[SyncRequest]) -> list:
    """The merge step of ``merge_call``: regroup the arguments, call ``merge_fn`` once."""
    merge_fn = requests[0].payload[0]
    args = regroup([r.payload[1] for r in requests])
    kwargs = regroup([r.payload[2] for r in requests])
    context.push(Mode(strategy, strategy, None))
    try:
        result = merge_fn(strategy, *args, **kwargs)
    finally:
        context.pop()
    return [select_replica(i, result) for i in range(len(requests))]


def leaf_signature(leaves: Sequence[Any], skip_axis: Optional[int] = None) -> tuple:
    """Shapes and dtypes of tensor leaves, for the agreement check."""
    out = []
    for leaf in leaves:
        if isinstance(leaf, torch.Tensor):
            shape = list(leaf.shape)
            if skip_axis is not None and shape:
                shape[skip_axis % len(shape)] = "*"
            out.append((tuple(shape), str(leaf.dtype).replace("torch.", "")))
        else:
            out.append(type(leaf).__name__)
    return tuple(out)

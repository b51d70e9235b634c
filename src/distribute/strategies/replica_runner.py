"""Runs a function once per local replica and implements their synchronisation points.

A synchronisation point is a ``SyncRequest`` (``sync_requests.py``): a ``MergeCall``, an
``AllReduce``, an ``AllGather``, or the ``GradientSync`` of a collective's backward. When every
replica has reached one, the driver asks replica 0's request whether the others agree (same
class and operation, same structure, shapes and dtypes, same number of calls) and runs its merge
once in cross-replica context. Any disagreement or exception unwinds every replica and is raised
in the caller, naming the replicas involved, so nothing is left blocked.

The replica function runs exactly once per replica per ``run``. The executor is chosen before it
starts: greenlets, unless a collective of an earlier step needed a gradient (or
``use_threads`` was set), then threads. A greenlet step whose collective needs a gradient moves
the replicas' later backward calls onto helper threads (``executor.expect_backward``).
"""

from __future__ import annotations

from typing import Any, Callable, List, Sequence

from distribute._core import context
from distribute._core.context import Mode
from distribute._core.replica_context import ReplicaContext
from distribute._core.values import select_replica
from distribute.strategies.executors import GreenletExecutor, ReplicaAborted, ThreadExecutor
from distribute.strategies.sync_requests import SyncRequest

__all__ = ["ReplicaRunner"]

MERGE_COUNT_ERROR = "Some replicas made a different number of replica_context().merge_call() calls."
Merge = Callable[[List[SyncRequest]], list]


class ReplicaRunner:
    """Drives the local replicas of one strategy."""

    def __init__(self, strategy: Any, num_local: int, first_replica_id: int = 0) -> None:
        self._strategy = strategy
        self._first_replica_id = first_replica_id
        self._contexts = [ReplicaContext(strategy, first_replica_id + i, _local_id=i) for i in range(num_local)]
        self._modes = [Mode(strategy, None, ctx) for ctx in self._contexts]
        self._executor: Any = None
        self.use_threads = False

    def __deepcopy__(self, memo: dict) -> "ReplicaRunner":
        strategy = memo.get(id(self._strategy), self._strategy)
        return ReplicaRunner(strategy, len(self._contexts), self._first_replica_id)

    @property
    def modes(self) -> List[Mode]:
        """The mode-stack entry of each local replica (replica context of that replica)."""
        return self._modes

    @property
    def first_replica_id(self) -> int:
        """The replica id in sync group of the first local replica."""
        return self._first_replica_id

    @property
    def contexts(self) -> List[ReplicaContext]:
        """The replica contexts, in local replica order."""
        return self._contexts

    # -- running ----------------------------------------------------------------------
    def run(self, fn: Callable, args: tuple, kwargs: dict, merge: Merge) -> list:
        """Runs ``fn`` once on every local replica; returns the per-replica results."""
        base = context.stack()
        stacks = [base + [mode] for mode in self._modes]
        executor = ThreadExecutor(stacks) if self.use_threads else GreenletExecutor(stacks)
        previous, self._executor = self._executor, executor
        try:
            return self._drive(executor, fn, args, kwargs, merge)
        finally:
            self._executor = previous
            executor.close()

    def _drive(self, executor: Any, fn: Callable, args: tuple, kwargs: dict, merge: Merge) -> list:
        n = len(self._contexts)
        events: list = []
        for i in range(n):
            events.append(executor.start(i, fn, select_replica(i, args), select_replica(i, kwargs)))
            if events[-1][0] == "error":
                self._fail(executor, events, events[-1][1])
        while True:
            kinds = {event[0] for event in events}
            if kinds == {"done"}:
                return [event[1] for event in events]
            if kinds != {"sync"}:
                self._fail(executor, events, RuntimeError(self._count_message(events)))
            requests = [event[1] for event in events]
            error = requests[0].disagreement(requests)
            if error is not None:
                self._fail(executor, events, error)
            if requests[0].requires_grad:  # a backward in the replicas will synchronise them
                self.use_threads = True
                executor.expect_backward()
            try:
                results = merge(requests)
            except BaseException as exc:  # noqa: BLE001 - reported in the caller
                self._fail(executor, events, exc)
            resumed: list = []
            for i in range(n):
                resumed.append(executor.resume(i, results[i]))
                if resumed[-1][0] == "error":  # unwind the replicas still parked, resumed or not
                    self._fail(executor, resumed + events[i + 1:], resumed[-1][1])
            events = resumed

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

    # -- inside a replica ---------------------------------------------------------------
    def sync(self, request: SyncRequest) -> Any:
        """Called by a replica: waits until every replica arrives, returns its merge result."""
        executor = self._executor
        if executor is None:
            raise RuntimeError("Need to be inside `call_for_each_replica()`")
        return executor.park(request)


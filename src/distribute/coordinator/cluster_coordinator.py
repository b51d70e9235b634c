"""``ClusterCoordinator``: schedules functions onto the workers of a ParameterServerStrategy.

Example:
    >>> # coordinator = distribute.coordinator.ClusterCoordinator(strategy)
    >>> # iterator = iter(coordinator.create_per_worker_dataset(dataset_fn))
    >>> # for _ in range(100):
    >>> #     coordinator.schedule(train_step, args=(iterator,))
    >>> # coordinator.join()
"""

from __future__ import annotations

import atexit
import logging
import threading
from typing import Any, Callable, Dict, Optional

from distribute._base.nest import map_structure
from distribute.coordinator.closure_queue import Closure, ClosureQueue
from distribute.coordinator.payload import FunctionPayloads, pickle_arguments
from distribute.coordinator.per_worker import PerWorkerDataset
from distribute.coordinator.remote_value import PerWorkerValue, RemoteValue
from distribute.coordinator.worker_handle import ResourceLog, WorkerHandle
from distribute.errors import UnavailableError
from distribute.function import Function
from distribute.ps import wire
from distribute.ps.unbuilt_dataset import UnbuiltDataset
from distribute.strategies.parameter_server import (ParameterServerExtended, ParameterServerStrategy,
                                                    set_coordinator_factory)

__all__ = ["ClusterCoordinator"]

log = logging.getLogger("distribute.ps")

HEARTBEAT_INTERVAL = 0.5
PS_PING_TIMEOUT = 2.0
PS_MISSES = 2
"""A parameter server that misses this many heartbeats in a row is failed (within about 5 s)."""

_ONLY_PSS = ("Only `distribute.ParameterServerStrategy` is supported to work with "
             "`distribute.coordinator.ClusterCoordinator` currently.")
_ONLY_FUNCTIONS = ("`distribute.coordinator.ClusterCoordinator.schedule` only accepts a `distribute.function`; "
                   "received {fn!r}. Decorate the step with @distribute.function.")


class ClusterCoordinator:
    """Schedules ``distribute.function``s onto the workers; one per strategy.

    Args:
        strategy: a ``distribute.ParameterServerStrategy``.
    """

    def __new__(cls, strategy: Any) -> "ClusterCoordinator":
        if not isinstance(strategy, ParameterServerStrategy):
            raise ValueError(_ONLY_PSS)
        if strategy._cluster_coordinator is None:
            strategy._cluster_coordinator = super().__new__(cls)
        return strategy._cluster_coordinator

    def __init__(self, strategy: Any) -> None:
        if getattr(self, "_strategy", None) is not None:
            return  # the strategy's coordinator, already made
        extended = strategy.extended
        assert isinstance(extended, ParameterServerExtended)
        self._strategy = strategy
        self._conns = extended._conns
        self._queue = ClosureQueue()
        self._payloads = FunctionPayloads()
        self._resources = ResourceLog()
        workers = self._conns.count("worker")
        self._handles = [WorkerHandle(i, self._conns.client("worker", i), self._queue, self._resources, workers)
                         for i in range(workers)]
        self._misses = [0] * self._conns.count("ps")
        self._stopped = threading.Event()
        self._heartbeat = threading.Thread(target=self._heartbeats, name="coordinator-heartbeats", daemon=True)
        self._heartbeat.start()
        atexit.register(self._shutdown)

    @property
    def strategy(self) -> ParameterServerStrategy:
        """The strategy this coordinator schedules for."""
        return self._strategy

    # -- scheduling ---------------------------------------------------------------------
    def schedule(self, fn: Callable[..., Any], args: Any = None, kwargs: Optional[Dict[str, Any]] = None
                 ) -> RemoteValue:
        """Queues ``fn(*args, **kwargs)`` to run on some worker (at least once); returns at once.

        Raises:
            TypeError: ``fn`` is not a ``distribute.function``.
            ValueError: an argument is a ``RemoteValue``.
            Exception: the error of an earlier function (cleared; the queued functions are cancelled).
        """
        if not isinstance(fn, Function):
            raise TypeError(_ONLY_FUNCTIONS.format(fn=fn))
        args = () if args is None else args
        if not isinstance(args, (tuple, list)):
            raise TypeError(f"Expected `args` to be a tuple or list, received {type(args).__name__}.")
        kwargs = {} if kwargs is None else kwargs
        if not isinstance(kwargs, dict):
            raise TypeError(f"Expected `kwargs` to be a dict, received {type(kwargs).__name__}.")
        payload = self._payloads.of(fn)
        blob, tensors = pickle_arguments(tuple(args), kwargs)
        output = RemoteValue()
        self._queue.put(Closure(payload, blob, tensors, output))
        return output

    def join(self) -> None:
        """Waits until every scheduled function has finished; raises the first error (and clears it)."""
        self._queue.join()

    def done(self) -> bool:
        """Whether every scheduled function has finished; raises a pending error the same way."""
        return self._queue.done()

    def fetch(self, val: Any) -> Any:
        """``val`` with every ``RemoteValue`` (and ``PerWorkerValue``) replaced by its fetched value.

        Example:
            >>> # coordinator.fetch({"a": rv, "b": 3}) -> {"a": 2.0, "b": 3}
        """
        def one(value: Any) -> Any:
            if isinstance(value, RemoteValue):
                return value.fetch()
            if isinstance(value, PerWorkerValue):
                return tuple(v.fetch() for v in value._values)
            return value
        if self._queue.fatal is not None:
            raise self._queue.fatal
        return map_structure(one, val)

    # -- per-worker datasets ------------------------------------------------------------
    def create_per_worker_dataset(self, dataset_fn: Any) -> PerWorkerDataset:
        """Each worker builds its own copy of a dataset.

        Args:
            dataset_fn: a function of no argument or of an ``InputContext`` returning a dataset,
                a dataset, or what ``strategy.experimental_distribute_dataset`` /
                ``distribute_datasets_from_function`` returned.
        """
        if isinstance(dataset_fn, UnbuiltDataset):
            dataset_fn = dataset_fn.dataset_fn
        if not callable(dataset_fn) and not hasattr(type(dataset_fn), "__iter__"):
            raise TypeError("Expected `dataset_fn` to be a function returning a dataset, a dataset, or a "
                            f"distributed dataset of this strategy; received {dataset_fn!r}.")
        blob, tensors = wire.dumps(dataset_fn, lambda obj: None)
        resource = self._resources.add({"kind": "dataset"}, [blob, *tensors])
        return PerWorkerDataset(self, resource, len(self._handles))

    def _iterator(self, dataset: int) -> int:
        return self._resources.add({"kind": "iterator", "dataset": dataset}, [])

    # -- health -------------------------------------------------------------------------
    def _heartbeats(self) -> None:
        ps = self._conns.count("ps")
        first = True  # the first round goes at once: a task counts its silence from it
        while first or not self._stopped.wait(HEARTBEAT_INTERVAL):
            first = False
            pings = [(i, self._ping_ps(i)) for i in range(ps)]
            for handle in self._handles:
                try:
                    self._conns.client("worker", handle.index).call_async(
                        "Ping", {"from": "coordinator"}, timeout=PS_PING_TIMEOUT)
                except Exception:  # noqa: BLE001 - a worker's health is its handle's business
                    pass
            for i, wait in pings:
                self._check_ps(i, wait)

    def _ping_ps(self, index: int) -> Callable[[], Any]:
        """Starts a heartbeat to ``ps:index``; the returned function waits for it (or raises its error)."""
        try:
            return self._conns.ps(index).call_async("Ping", {"from": "coordinator"}, timeout=PS_PING_TIMEOUT)
        except Exception as exc:  # noqa: BLE001 - reconnecting failed at once: the ps is gone
            error = exc

            def failed() -> Any:
                raise error
            return failed

    def _check_ps(self, index: int, wait: Callable[[], Any]) -> None:
        try:
            wait()
            self._misses[index] = 0
        except Exception as exc:  # noqa: BLE001 - unavailable, refused or timed out: a miss
            self._misses[index] += 1
            if self._misses[index] >= PS_MISSES and self._queue.fatal is None:
                error = UnavailableError(f"ps:{index} is unavailable: {exc}. A parameter server failed; the "
                                         "variables it held are lost. Restart the job (from a checkpoint).")
                log.error("%s", error)
                self._queue.fail_fatally(error)

    def _shutdown(self) -> None:
        """Ends the job: stops the threads and tells every task to exit."""
        if self._stopped.is_set():
            return
        self._stopped.set()
        self._queue.stop()
        calls = []
        for job in ("worker", "ps"):
            for i in range(self._conns.count(job)):
                try:
                    calls.append(self._conns.client(job, i).call_async("Shutdown", {}, timeout=3.0))
                except Exception:  # noqa: BLE001 - a task already gone
                    pass
        for wait in calls:
            try:
                wait()
            except Exception:  # noqa: BLE001 - a task already gone
                pass
        for handle in self._handles:
            handle.join(2.0)
        self._heartbeat.join(2.0)
        self._conns.close()

    def __reduce__(self) -> Any:
        raise TypeError("A ClusterCoordinator cannot be used inside a scheduled function (it lives on the "
                        "coordinator); pass the values it gave instead.")


set_coordinator_factory(ClusterCoordinator)

"""Per-worker datasets and iterators, as ``create_per_worker_dataset`` returns them."""

from __future__ import annotations

from typing import Any, Iterator

from distribute.coordinator.remote_value import PerWorkerValue, WorkerResource

__all__ = ["PerWorkerDataset", "PerWorkerDistributedIterator"]


class PerWorkerDistributedIterator(PerWorkerValue):
    """One iterator per worker; only functions scheduled on the workers may advance it."""

    def __next__(self) -> Any:
        raise TypeError("A per-worker iterator advances only inside a function scheduled with "
                        "ClusterCoordinator.schedule: pass it as an argument (schedule(step, args=(iterator,))).")

    def __iter__(self) -> Iterator[Any]:
        return self


class PerWorkerDataset:
    """A dataset built on every worker; ``iter()`` gives a :class:`PerWorkerDistributedIterator`."""

    def __init__(self, coordinator: Any, resource: int, workers: int) -> None:
        self._coordinator, self._resource, self._workers = coordinator, resource, workers

    def __iter__(self) -> PerWorkerDistributedIterator:
        resource = self._coordinator._iterator(self._resource)
        return PerWorkerDistributedIterator([WorkerResource(resource, i) for i in range(self._workers)])

    def __repr__(self) -> str:
        return f"<PerWorkerDataset on {self._workers} workers>"

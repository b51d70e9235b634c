"""Where input goes: the number of input workers, this worker's index and its replica devices.

A strategy tells distributed input its worker layout through two hooks of its extended object:
``_input_workers()`` returns ``(number of input workers, this worker's index)`` (``(1, 0)`` in
one process) and ``_any_worker_has_data(local)`` agrees, every step, on whether any worker still
has data. Tests (and tools) may pass ``(num_workers, worker_index)`` explicitly to exercise the
worker dimension in one process; the global replica count is then ``num_workers`` times the
local replica count.
"""

from __future__ import annotations

from typing import Any, Callable, Optional, Tuple

import torch

from distribute._core.extended import StrategyExtended

__all__ = ["InputWorkers"]


def _local_devices(extended: StrategyExtended) -> Tuple[torch.device, ...]:
    """The local replicas' torch devices (the CPU for the default strategy, which has none)."""
    if extended._devices:
        return tuple(d.torch_device for d in extended._devices)
    return (torch.device("cpu"),)


def _check_layout(num_workers: Any, worker_index: Any) -> None:
    for name, value, low in (("num_workers", num_workers, 1), ("worker_index", worker_index, 0)):
        if isinstance(value, bool) or not isinstance(value, int) or value < low:
            raise ValueError(f"Expected `{name}` to be an int >= {low}, received {name}={value!r}.")
    if worker_index >= num_workers:
        raise ValueError(f"Expected `worker_index` < `num_workers`, received worker_index={worker_index}, "
                         f"num_workers={num_workers}.")


class InputWorkers:
    """The input layout of one worker: ``W`` workers, index ``w``, ``R`` local replicas, ``N = W*R``.

    Example:
        >>> import distribute
        >>> workers = InputWorkers.from_strategy(distribute.MirroredStrategy(["CPU:0", "CPU:1"]))
        >>> workers.num_workers, workers.worker_index, workers.num_local_replicas
        (1, 0, 2)
    """

    def __init__(self, num_workers: int, worker_index: int, devices: Tuple[torch.device, ...],
                 num_replicas_in_sync: int, agree: Callable[[bool], bool]) -> None:
        _check_layout(num_workers, worker_index)
        if num_replicas_in_sync % num_workers:
            raise ValueError(
                "distribute expects every worker to have the same number of replicas. However, "
                f"encountered `num_replicas_in_sync` ({num_replicas_in_sync}) that cannot be divided "
                f"by `num_workers` ({num_workers})")
        self.num_workers = num_workers
        self.worker_index = worker_index
        self.devices = devices
        self.num_replicas_in_sync = num_replicas_in_sync
        self.num_local_replicas = len(devices)
        self.any_worker_has_data = agree

    @classmethod
    def from_strategy(cls, strategy: Any, layout: Optional[Tuple[int, int]] = None) -> "InputWorkers":
        """The layout of ``strategy``; ``layout=(W, w)`` overrides its worker count and index."""
        extended = strategy.extended
        devices = _local_devices(extended)
        if layout is None:
            num_workers, index = extended._input_workers()
            total = strategy.num_replicas_in_sync
        else:
            if not isinstance(layout, tuple) or len(layout) != 2:
                raise ValueError("Expected the input worker layout to be a (num_workers, worker_index) "
                                 f"tuple, received {layout!r}.")
            num_workers, index = layout
            _check_layout(num_workers, index)
            total = num_workers * len(devices)
        return cls(num_workers, index, devices, total, extended._any_worker_has_data)

    @property
    def first_replica_id(self) -> int:
        """The global id of this worker's first replica."""
        return self.worker_index * self.num_local_replicas

    def __repr__(self) -> str:
        return (f"InputWorkers(worker {self.worker_index} of {self.num_workers}, "
                f"{self.num_local_replicas} local of {self.num_replicas_in_sync} replicas)")

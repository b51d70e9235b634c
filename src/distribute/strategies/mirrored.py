"""MirroredStrategy: synchronous data parallelism over the devices of one machine.

Each replica runs the step on its own device (a GPU, or a logical CPU replica); variables are
``MirroredVariable``s with one component per replica, kept equal by aggregated writes and by
optimizer steps that sum the gradients of every replica.
"""

from __future__ import annotations

from typing import Any, Optional, Sequence

from distribute._core.devices import default_devices, resolve_devices
from distribute._core.distributed_variables import (MirroredVariable, SyncOnReadVariable,
                                                    resolve_variable_kwargs)
from distribute._base.reduce_op import VariableSynchronization
from distribute._core.strategy import Strategy
from distribute.strategies.multi_replica import MultiReplicaExtended

__all__ = ["MirroredStrategy"]


class MirroredStrategy(Strategy):
    """Synchronous training on several devices of one machine.

    Args:
        devices: device names (``"CPU:0"``, ``"GPU:1"``, ``"cuda:0"``, ...). ``None`` means every
            visible GPU, or one CPU replica when there is none. ``"CPU:k"`` names the k-th
            logical replica on the host CPU.
        cross_device_ops: a ``CrossDeviceOps`` (default ``ReductionToOneDevice``).

    Example:
        >>> import torch, distribute
        >>> strategy = distribute.MirroredStrategy(["CPU:0", "CPU:1"])
        >>> strategy.num_replicas_in_sync
        2
        >>> with strategy.scope():
        ...     v = distribute.Variable(1.0)
        >>> type(v).__name__
        'MirroredVariable'
    """

    def __init__(self, devices: Optional[Sequence[Any]] = None, cross_device_ops: Any = None) -> None:
        resolved = default_devices() if devices is None else resolve_devices(devices)
        super().__init__(MirroredExtended(self, resolved, cross_device_ops))


class MirroredExtended(MultiReplicaExtended):
    """MirroredStrategy's extended API: one variable component per replica."""

    def _make_variable(self, kwargs: dict) -> Any:
        sync = resolve_variable_kwargs(kwargs)
        cls = SyncOnReadVariable if sync is VariableSynchronization.ON_READ else MirroredVariable
        return cls._create(self._container_strategy(), self._torch_devices(), kwargs)

"""CentralStorageStrategy: replicas compute in parallel; each variable lives once, centrally.

Compute is replicated as in ``MirroredStrategy``; every variable is a single
``AggregatingVariable`` on the parameter device. Replicas read it directly, so their
gradients accumulate into one ``.grad`` (the sum over replicas) with no copies.
"""

from __future__ import annotations

from typing import Any, Callable, Optional, Sequence, cast

import torch

from distribute._core import context
from distribute._core.context import Mode
from distribute._core.devices import canonicalize, default_devices, resolve_devices
from distribute._core.distributed_variables import AggregatingVariable, resolve_variable_kwargs
from distribute._base.reduce_op import VariableAggregation
from distribute._core.strategy import Strategy
from distribute._core.values import select_replica
from distribute._core.variables import Variable
from distribute.strategies.multi_replica import MultiReplicaExtended

__all__ = ["CentralStorageStrategy"]


class CentralStorageStrategy(Strategy):
    """Replicated compute with variables stored once on a parameter device.

    Args:
        compute_devices: devices the replicas run on (``None``: every GPU, else the CPU).
        parameter_device: where variables live (``None``: the only compute device, else the CPU).

    Example:
        >>> import distribute
        >>> s = distribute.experimental.CentralStorageStrategy(["CPU:0", "CPU:1"])
        >>> with s.scope():
        ...     v = distribute.Variable(0.0, aggregation="sum")
        >>> type(v).__name__
        'AggregatingVariable'
    """

    def __init__(self, compute_devices: Optional[Sequence[Any]] = None, parameter_device: Any = None) -> None:
        compute = default_devices() if compute_devices is None else resolve_devices(compute_devices, "compute_devices")
        if parameter_device is None:
            parameter = compute[0] if len(compute) == 1 else canonicalize("CPU:0")
            raw = parameter.name
        else:
            parameter, raw = canonicalize(parameter_device), parameter_device
        super().__init__(CentralStorageExtended(self, compute, parameter, raw))


class CentralStorageExtended(MultiReplicaExtended):
    """CentralStorage's extended API: one variable on the parameter device."""

    def __init__(self, container_strategy: Any, compute: tuple, parameter: Any, raw_parameter: Any) -> None:
        super().__init__(container_strategy, compute)
        self._parameter_device = parameter
        self._raw_parameter_device = str(raw_parameter)

    @property
    def worker_devices(self) -> list:  # type: ignore[override]
        """The compute devices, as a list (TensorFlow reports a list here)."""
        return [d.name for d in self._devices]

    @property
    def parameter_devices(self) -> tuple:
        """The parameter device, as it was given."""
        return (self._raw_parameter_device,)

    def _make_variable(self, kwargs: dict) -> Any:
        if len(self._devices) == 1:  # one replica: a plain variable, as TensorFlow gives
            var = Variable._plain(device=self._parameter_device.torch_device, **kwargs)
            var._distribute_strategy = self._container_strategy()
            return var
        # Any aggregation with any dtype: one tensor holds the value, so MEAN of integers is
        # well defined (TensorFlow creates it); the mirrored strategies refuse it.
        aggregation = kwargs.pop("aggregation", VariableAggregation.NONE)
        resolve_variable_kwargs(kwargs)
        kwargs["aggregation"] = aggregation
        var = cast(AggregatingVariable, Variable._plain(device=self._parameter_device.torch_device,
                                                        _cls=AggregatingVariable, **kwargs))
        var._distribute_strategy = self._container_strategy()
        devices = tuple(self._torch_devices())
        if any(d != var.device for d in devices):
            var._replica_devices = devices
        return var

    def _update(self, var: Any, fn: Callable, args: tuple, kwargs: dict, group: bool) -> Any:
        """Runs ``fn`` once on the single stored variable (any aggregation), in cross-replica
        context, with the first component of distributed arguments."""
        strategy = self._container_strategy()
        context.push(Mode(strategy, strategy, None))
        previous = context.set_update_replica_id(None)
        try:
            with torch.no_grad():
                result = fn(var, *select_replica(0, args), **select_replica(0, kwargs))
        finally:
            context.set_update_replica_id(previous)
            context.pop()
        return result if group else (result,)

    def _check_colocate(self, var: Any) -> None:
        return None

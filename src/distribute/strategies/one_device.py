"""OneDeviceStrategy: everything on one device, through the strategy API.

Useful to test code written for strategies, or to place a whole model on one GPU. Variables
are plain ``distribute.Variable``s on that device; ``run`` calls the function once.
"""

from __future__ import annotations

from typing import Any, Callable

import torch

from distribute._base.nest import map_structure
from distribute._core import context
from distribute._core.devices import canonicalize
from distribute._base.reduce_op import ReduceOp
from distribute._core.replica_context import ValueContext
from distribute._core.strategy import Strategy
from distribute._core.values import select_replica
from distribute._core.variables import Variable
from distribute.strategies.multi_replica import MultiReplicaExtended

__all__ = ["OneDeviceStrategy"]


class OneDeviceStrategy(Strategy):
    """Runs on exactly one device.

    Example:
        >>> import torch, distribute
        >>> s = distribute.OneDeviceStrategy("cpu")
        >>> s.run(lambda x: x + 1, args=(torch.tensor(1.0),))
        tensor(2.)
    """

    def __init__(self, device: Any) -> None:
        super().__init__(OneDeviceExtended(self, (canonicalize(device),)))


class OneDeviceExtended(MultiReplicaExtended):
    """OneDevice's extended API: a single replica, plain variables on the device."""

    _per_replica_input_error = ("InputReplicationMode.PER_REPLICA is only supported in "
                                "`experimental_distribute_datasets_from_function` of distribute.MirroredStrategy")

    def __init__(self, container_strategy: Any, devices: tuple) -> None:
        super().__init__(container_strategy, devices)
        device = devices[0].torch_device
        self._accelerator = None if device.type == "cpu" else device

    def _run(self, fn: Callable, args: Any, kwargs: dict) -> Any:
        self._check_run_context()
        stack = context.stack()
        stack.append(self._runner.modes[0])
        try:
            if self._accelerator is not None:
                args, kwargs = _to_device(args, self._accelerator), _to_device(kwargs, self._accelerator)
            return fn(*select_replica(0, args), **select_replica(0, kwargs))
        finally:
            stack.pop()

    def _distribute_values_from_function(self, value_fn: Callable) -> Any:
        return value_fn(ValueContext())

    def _make_variable(self, kwargs: dict) -> Any:
        var = Variable._plain(device=self._devices[0].torch_device, **kwargs)
        var._distribute_strategy = self._container_strategy()
        return var

    def _create_module_parameter(self, param: torch.nn.Parameter, name: str) -> Any:
        device = self._devices[0].torch_device
        if param.device == device:
            return None
        return torch.nn.Parameter(param.detach().to(device), requires_grad=param.requires_grad)

    def _reduce_to(self, op: ReduceOp, value: Any, destinations: Any, options: Any) -> Any:
        device = self._destination_devices(destinations)[0]
        return value.to(device) if isinstance(value, torch.Tensor) else value

    def _check_colocate(self, var: Any) -> None:
        return None


def _to_device(structure: Any, device: torch.device) -> Any:
    return map_structure(lambda v: v.to(device) if isinstance(v, torch.Tensor) else v, structure)

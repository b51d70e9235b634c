"""The default strategy: what ``get_strategy()`` returns outside any scope.

One replica, no distribution: ``run`` calls the function directly, reductions return their
input, variables are plain ``distribute.Variable``s. Code written for a strategy therefore
runs unchanged without one.

It lives in the strategies layer because its input methods validate with
``distribute.distributed_input``; importing this module registers it with
:func:`distribute._core.context.set_default_strategy_factory` (``distribute.strategies``
imports it, so ``distribute.get_strategy()`` always has it).
"""

from __future__ import annotations

from typing import Any, Callable, Dict

import torch

from distribute._base.reduce_op import ReduceOp
from distribute._core import context
from distribute._core.devices import canonicalize
from distribute._core.replica_context import InputContext, ValueContext
from distribute._core.strategy import Strategy
from distribute._core.variables import owning_strategy
from distribute.strategies.input_hooks import InputExtended

__all__ = ["DefaultStrategy"]

_SINGLETON_ERROR = "Should only create a single instance of _DefaultDistributionStrategy"


class DefaultStrategy(Strategy):
    """The single-replica strategy used when no other strategy is in scope."""

    def __init__(self) -> None:
        raise RuntimeError(_SINGLETON_ERROR + "; use distribute.get_strategy() outside any scope.")

    @classmethod
    def _create(cls) -> "DefaultStrategy":
        self = object.__new__(cls)
        Strategy.__init__(self, DefaultExtended(self))
        return self

    def run(self, fn: Callable, args: Any = (), kwargs: Any = None, options: Any = None) -> Any:
        if type(args) is not tuple and not isinstance(args, (list, tuple)):
            raise ValueError(f"positional args must be a list or tuple, got {type(args)}")
        s = context.stack()
        if s and s[-1].strategy is not self:
            mode = s[-1]
            raise RuntimeError(f"Mixing different distribute.Strategy objects: {self} is not {mode.strategy}")
        if kwargs:
            return fn(*args, **kwargs)
        return fn(*args)

    def __deepcopy__(self, memo: dict) -> "DefaultStrategy":
        raise RuntimeError(_SINGLETON_ERROR)

    def __repr__(self) -> str:
        return "<distribute._DefaultDistributionStrategy>"


class DefaultExtended(InputExtended):
    """The default strategy's extended API: single replica, identity collectives."""

    @property
    def worker_devices(self) -> tuple:
        raise RuntimeError("worker_devices() method unsupported by default distribute.Strategy.")

    @property
    def parameter_devices(self) -> tuple:
        raise RuntimeError("parameter_devices() method unsupported by default distribute.Strategy.")

    def _run(self, fn: Callable, args: Any, kwargs: Dict[str, Any]) -> Any:
        return fn(*args, **kwargs)

    def _reduce_to(self, op: ReduceOp, value: Any, destinations: Any, options: Any) -> Any:
        return value

    def _broadcast_to(self, tensor: Any, destinations: Any) -> Any:
        if destinations is None or not isinstance(tensor, torch.Tensor):
            return tensor
        device = getattr(destinations, "device", destinations)
        return tensor.to(device if not isinstance(device, str) else _torch_device(device))

    def _distribute_values_from_function(self, value_fn: Callable) -> Any:
        return value_fn(ValueContext())

    def _build_distributed_dataset(self, dataset: Any, options: Any) -> Any:
        return dataset

    def _build_datasets_from_function(self, dataset_fn: Callable, options: Any) -> Any:
        return dataset_fn(InputContext())

    def _merge_call(self, ctx: Any, merge_fn: Callable, args: tuple, kwargs: dict) -> Any:
        return context.default_replica_context().merge_call(merge_fn, args, kwargs)

    def _replica_all_reduce(self, ctx: Any, op: ReduceOp, value: Any, options: Any) -> Any:
        return value

    def _replica_all_gather(self, ctx: Any, value: Any, axis: int, options: Any) -> Any:
        return value

    def _create_variable(self, factory: Callable[..., Any], **kwargs: Any) -> Any:
        return factory(**kwargs)

    def variable_created_in_scope(self, v: Any) -> bool:
        return owning_strategy(v) is None


def _torch_device(name: str) -> torch.device:
    return canonicalize(name).torch_device


context.set_default_strategy_factory(DefaultStrategy._create)

"""StrategyExtended: the lower-level API of every strategy (``strategy.extended``).

Public methods validate their arguments and the calling context, then call a private hook
that each concrete strategy implements. The input hooks (``_experimental_distribute_dataset``
and the others that build distributed datasets and iterators) are declared here and
implemented in :mod:`distribute.strategies.input_hooks`, where ``distributed_input`` may be
imported: ``_core`` sits below it.
"""

from __future__ import annotations

import abc
import contextlib
from typing import TYPE_CHECKING, Any, Callable, Dict, Optional, Sequence, Tuple

import torch

from distribute._base.reduce_op import ReduceOp
from distribute._core import context
from distribute._core.communicator import LOCAL, Communicator
from distribute._core.context import Mode
from distribute._core.devices import Device
from distribute._core.distributed_variables import DistributedVariable
from distribute._core.gradients import is_distributed_variable, sum_component_grads
from distribute._core.reduction import elementwise_sum
from distribute._core.scope import check_not_in_replica_context
from distribute._core.values import DistributedValues, Mirrored, contains_distributed, select_replica
from distribute._core.variables import Variable, owning_strategy

if TYPE_CHECKING:  # pragma: no cover
    from distribute._core.strategy import Strategy

__all__ = ["StrategyExtended"]


class StrategyExtended(abc.ABC):
    """The lower-level API of a strategy (``strategy.extended``)."""

    _num_replicas_in_sync = 1
    _num_local_replicas = 1
    experimental_enable_get_next_as_optional = False
    _devices: Tuple[Device, ...] = ()
    """The local replicas' devices, in replica order (none for the default strategy)."""
    _cluster_resolver: Any = None
    """The cluster resolver of a multi-worker strategy."""

    def __init__(self, container_strategy: "Strategy") -> None:
        self._container_strategy_ref = container_strategy

    def _container_strategy(self) -> "Strategy":
        return self._container_strategy_ref

    # -- properties -------------------------------------------------------------------
    @property
    def worker_devices(self) -> tuple:
        """The canonical names of the devices the local replicas run on."""
        return tuple(d.name for d in self._devices)

    @property
    def parameter_devices(self) -> tuple:
        """The canonical names of the devices variables are placed on."""
        return self.worker_devices

    experimental_require_static_shapes = False
    experimental_between_graph = False
    experimental_should_init = True

    @property
    def should_checkpoint(self) -> bool:
        """Whether this process should write checkpoints (False only on non-chief workers)."""
        return True

    @property
    def should_save_summary(self) -> bool:
        """Whether this process should write summaries."""
        return True

    # -- cross-replica API ------------------------------------------------------------
    def reduce_to(self, reduce_op: Any, value: Any, destinations: Any, options: Any = None) -> Any:
        """Reduces a per-replica ``value`` onto ``destinations`` (a device name, tensor,
        variable or distributed value); a ``Mirrored`` when that names several devices."""
        op = ReduceOp.resolve(reduce_op)
        self._check_destinations(destinations)
        check_not_in_replica_context(self._container_strategy())
        return self._reduce_to(op, value, destinations, options)

    def batch_reduce_to(self, reduce_op: Any, value_destination_pairs: Any, options: Any = None) -> list:
        """``reduce_to`` over a list of ``(value, destinations)`` pairs; one result per pair."""
        op = ReduceOp.resolve(reduce_op)
        if not isinstance(value_destination_pairs, (list, tuple)) or not all(
                isinstance(p, (list, tuple)) and len(p) == 2 for p in value_destination_pairs):
            raise ValueError("value_destination_pairs must be a list or tuple of (value, destinations) "
                             f"pairs, received {value_destination_pairs!r}.")
        for _, dest in value_destination_pairs:
            self._check_destinations(dest)
        check_not_in_replica_context(self._container_strategy())
        return self._batch_reduce_to(op, list(value_destination_pairs), options)

    def broadcast_to(self, tensor: Any, destinations: Any) -> Any:
        """Copies ``tensor`` to every device of ``destinations`` (a ``Mirrored`` for several)."""
        self._check_destinations(destinations, allow_none=True)
        check_not_in_replica_context(self._container_strategy())
        return self._broadcast_to(tensor, destinations)

    def update(self, var: Any, fn: Callable, args: Any = (), kwargs: Optional[Dict[str, Any]] = None,
               group: bool = True) -> Any:
        """Runs ``fn(component, *args, **kwargs)`` on each component of ``var``.

        In cross-replica context each component ``i`` receives replica ``i``'s view of the
        arguments; in a replica context this is one ``merge_call``.
        """
        if not callable(fn):
            raise TypeError(f"fn must be callable, received {fn!r}.")
        if not isinstance(args, (list, tuple)):
            raise ValueError(f"update args must be a list or tuple, got {type(args)}")
        kwargs = kwargs or {}
        ctx = context.get_replica_context()
        if ctx is not None and ctx is not context.default_replica_context():
            return ctx._update(var, fn, args, kwargs, group)
        return self._update(var, fn, tuple(args), kwargs, group)

    def _update(self, var: Any, fn: Callable, args: tuple, kwargs: dict, group: bool) -> Any:
        components = var._components() if isinstance(var, DistributedVariable) else (var,)
        results = []
        context.push(Mode(self._container_strategy(), self._container_strategy(), None))
        try:
            for i, component in enumerate(components):
                previous = context.set_update_replica_id(i)
                try:
                    with torch.no_grad():
                        results.append(fn(component, *select_replica(i, args), **select_replica(i, kwargs)))
                finally:
                    context.set_update_replica_id(previous)
        finally:
            context.pop()
        if not group:
            return tuple(results)
        return results[0] if len(results) == 1 else Mirrored(results)

    def call_for_each_replica(self, fn: Callable, args: Any = (), kwargs: Optional[Dict[str, Any]] = None) -> Any:
        """``run`` without options: runs ``fn`` on each replica (cross-replica context only).

        ``args`` is a list or tuple of positional arguments; any other single value (a
        ``PerReplica`` from ``iterator.get_next()``, a tensor, a dict) is the one argument
        (``None`` means none).
        """
        check_not_in_replica_context(self._container_strategy())
        if args is None:
            args = ()
        elif not isinstance(args, (list, tuple)):
            args = (args,)
        if kwargs is not None and not isinstance(kwargs, dict):
            raise TypeError(f"call_for_each_replica expects `kwargs` to be a dict or None, received {kwargs!r} "
                            f"of type {type(kwargs).__name__}; pass positional arguments with `args`.")
        return self._container_strategy().run(fn, args, kwargs)

    def value_container(self, value: Any) -> Any:
        """The distributed variable ``value`` is a component of, or ``value`` itself."""
        container = value._distributed_container if isinstance(value, Variable) else None
        return container if container is not None else value

    def variable_created_in_scope(self, v: Any) -> bool:
        """True when ``v`` was created in this strategy's scope."""
        return owning_strategy(v) is self._container_strategy()

    def read_var(self, v: Any) -> torch.Tensor:
        """The value of ``v`` as read in cross-replica context (aggregated for sync-on-read)."""
        return v.read_value() if isinstance(v, Variable) else torch.as_tensor(v)

    def non_slot_devices(self, var_list: Any) -> tuple:
        """The devices that hold values not tied to one variable (all parameter devices)."""
        return self.parameter_devices

    def update_non_slot(self, colocate_with: Any, fn: Callable, args: Any = (), kwargs: Any = None,
                        group: bool = True) -> Any:
        """Runs ``fn(*args, **kwargs)`` once in cross-replica context."""
        check_not_in_replica_context(self._container_strategy())
        with self._container_strategy().scope():
            result = fn(*args, **(kwargs or {}))
        return result if group else (result,)

    def colocate_vars_with(self, colocate_with_variable: Any) -> Any:
        """A context manager: variables created inside it are placed like ``colocate_with_variable``."""
        strategy = self._container_strategy()
        mode = context.current_mode()
        if mode is None or mode.strategy is not strategy:
            raise RuntimeError(f'Need to be inside "with strategy.scope()" for {strategy}')
        self._check_colocate(colocate_with_variable)
        return contextlib.nullcontext()

    def _check_colocate(self, var: Any) -> None:
        return None

    # -- the hooks every strategy implements ------------------------------------------
    @abc.abstractmethod
    def _run(self, fn: Callable[..., Any], args: Any, kwargs: Dict[str, Any]) -> Any:
        """``strategy.run``: calls ``fn`` once per replica and regroups the results."""

    @abc.abstractmethod
    def _reduce_to(self, op: ReduceOp, value: Any, destinations: Any, options: Any) -> Any:
        """``reduce_to`` after validation: ``value`` reduced with ``op`` onto ``destinations``."""

    @abc.abstractmethod
    def _broadcast_to(self, tensor: Any, destinations: Any) -> Any:
        """``broadcast_to`` after validation: ``tensor`` copied to ``destinations``."""

    @abc.abstractmethod
    def _distribute_values_from_function(self, value_fn: Callable[..., Any]) -> Any:
        """``value_fn(ValueContext)`` once per local replica, wrapped as the strategy wraps values."""

    @abc.abstractmethod
    def _merge_call(self, ctx: Any, merge_fn: Callable[..., Any], args: tuple, kwargs: dict) -> Any:
        """``ReplicaContext.merge_call``: runs ``merge_fn`` once in cross-replica context."""

    @abc.abstractmethod
    def _replica_all_reduce(self, ctx: Any, op: ReduceOp, value: Any, options: Any) -> Any:
        """``ReplicaContext.all_reduce``: every replica gets the reduction of all replicas' ``value``."""

    @abc.abstractmethod
    def _replica_all_gather(self, ctx: Any, value: Any, axis: int, options: Any) -> Any:
        """``ReplicaContext.all_gather``: every replica gets all replicas' ``value`` along ``axis``."""

    @abc.abstractmethod
    def _create_variable(self, factory: Callable[..., Any], **kwargs: Any) -> Any:
        """``Variable(...)`` in this strategy's scope: the variable it distributes (``factory`` makes plain ones)."""

    def _create_module_parameter(self, param: torch.nn.Parameter, name: str) -> Any:
        """A module parameter registered in this strategy's scope: its replacement, or ``None`` to keep it."""
        return None

    # -- helpers and hooks ------------------------------------------------------------
    @staticmethod
    def _check_destinations(destinations: Any, allow_none: bool = False) -> None:
        if destinations is None and allow_none:
            return
        if isinstance(destinations, (list, tuple)) or destinations is None:
            raise ValueError(
                "destinations must be a device name, a tensor, a variable or a distributed value, "
                f"not {type(destinations).__name__}: {destinations!r}.")

    # -- input hooks (implemented in distribute.strategies.input_hooks) ----------------
    def _input_workers(self) -> Tuple[int, int]:
        """``(number of input workers, this worker's index)``."""
        return (1, 0)

    def _any_worker_has_data(self, local_has_data: bool) -> bool:
        """Every input step: True while any worker still has data (all workers call it)."""
        return local_has_data

    def _agree_on_input_seed(self, seed: int) -> int:
        """Once per iteration of a distributed dataset: one shuffle seed for every worker
        (multi-worker strategies return worker 0's)."""
        return seed

    @abc.abstractmethod
    def _experimental_distribute_dataset(self, dataset: Any, options: Any) -> Any:
        """Validates ``dataset`` and ``options`` and returns the distributed dataset."""

    @abc.abstractmethod
    def _distribute_datasets_from_function(self, dataset_fn: Callable[..., Any], options: Any) -> Any:
        """Validates ``options`` and returns the distributed dataset ``dataset_fn`` makes."""

    @abc.abstractmethod
    def _make_dataset_iterator(self, dataset: Any) -> Any:
        """The initializable iterator of ``experimental_distribute_dataset(dataset)``."""

    @abc.abstractmethod
    def _make_input_fn_iterator(self, input_fn: Callable[..., Any], replication_mode: Any) -> Any:
        """Validates ``replication_mode``; the initializable iterator over ``input_fn``'s input."""

    @property
    def _communicator(self) -> Communicator:
        """What crosses worker processes (``LOCAL``, the identity, for in-process strategies)."""
        return LOCAL

    def _reduce_gradients(self, params: Sequence[torch.Tensor], across_workers: bool = True) -> None:
        """At an optimizer step: each distributed parameter's ``.grad`` becomes the sum of its
        replicas' gradients (strategies with ``CrossDeviceOps`` sum with them; multi-worker
        strategies then sum over the workers, unless ``across_workers`` is False)."""
        for p in params:
            if is_distributed_variable(p):
                sum_component_grads(p, elementwise_sum)

    def _local_results(self, value: Any) -> tuple:
        if isinstance(value, DistributedValues):  # distributed variables too
            return value.values
        if contains_distributed(value):
            return tuple(select_replica(i, value) for i in range(self._num_local_replicas))
        return (value,)

    def _batch_reduce_to(self, op: ReduceOp, pairs: list, options: Any) -> list:
        return [self._reduce_to(op, value, dest, options) for value, dest in pairs]

    def _replica_devices(self, local_id: int) -> list:
        return [[self._devices[local_id].name]]

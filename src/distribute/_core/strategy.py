"""Strategy and StrategyExtended: the user-facing API of every distribution strategy.

A strategy decides where variables live and how a step runs on several replicas. Public
methods validate their arguments and the calling context, then call a private hook of
``StrategyExtended`` that each concrete strategy implements.
"""

from __future__ import annotations

import contextlib
import copy
from typing import Any, Callable, Dict, List, Optional, Sequence

import torch

from distribute._core import context
from distribute._core.context import Mode
from distribute._base.nest import map_structure
from distribute._base.reduce_op import ReduceOp
from distribute._core.communicator import LOCAL, Communicator
from distribute._core.gradients import is_distributed_variable, sum_component_grads
from distribute._core.reduction import check_axis, elementwise_sum, gather_components, reduce_components
from distribute._core.values import (DistributedValues, Mirrored, PerReplica, contains_distributed,
                                     select_replica)

__all__ = ["Strategy", "StrategyExtended"]

CROSS_REPLICA_ERROR = ("Method requires being in cross-replica context, use "
                       "get_replica_context().merge_call()")


def check_not_in_replica_context(strategy: "Strategy", message: str = CROSS_REPLICA_ERROR) -> None:
    """Raises unless the caller may use ``strategy``'s cross-replica API here."""
    mode = context.current_mode()
    default = context.default_strategy()
    if mode is None or (mode.strategy is default and strategy is default):
        return  # the default mode, or the default strategy's own scope (cross-replica for it)
    if mode.strategy is not strategy and mode.strategy is not default:
        raise RuntimeError(f"Mixing different distribute.Strategy objects: {strategy} is not {mode.strategy}")
    if mode.strategy is strategy and mode.replica_context is not None and mode.cross_replica is None:
        raise RuntimeError(message)


class _Scope:
    """The context manager returned by ``Strategy.scope()``; one object may be re-entered
    while active (``with s: with s:``), each entry exited in turn."""

    __slots__ = ("_strategy", "_modes")

    def __init__(self, strategy: "Strategy") -> None:
        self._strategy = strategy
        self._modes: List[Mode] = []

    def __enter__(self) -> "Strategy":
        strategy = self._strategy
        default = context.default_strategy()
        mode = context.current_mode()
        if mode is not None and mode.strategy is not strategy:
            if strategy is default:
                raise RuntimeError("Must not nest distribute.Strategy scopes.")
            if mode.strategy is not default:
                raise RuntimeError(f"Mixing different distribute.Strategy objects: {strategy} is not {mode.strategy}")
        if mode is not None and mode.strategy is strategy and mode.cross_replica is None \
                and strategy is not default:
            raise RuntimeError(CROSS_REPLICA_ERROR)
        if strategy is default:
            mode = Mode(strategy, None, context.default_replica_context())
        else:
            mode = Mode(strategy, strategy, None)
        self._modes.append(mode)
        context.push(mode)
        return strategy

    def __exit__(self, *exc: Any) -> None:
        current = context.current_mode()
        if not self._modes or current is not self._modes[-1]:
            raise RuntimeError(
                "Strategy scope nesting error: a scope entered inside this one was not exited "
                "first. Exit inner `with` blocks (and call experimental_set_strategy(None)) "
                "before leaving the strategy scope.")
        self._modes.pop()
        context.pop()


class Strategy:
    """Distributes computation over replicas (devices, logical CPUs or worker processes).

    Example:
        >>> import torch, distribute
        >>> strategy = distribute.MirroredStrategy(["CPU:0", "CPU:1"])
        >>> with strategy.scope():
        ...     model = torch.nn.Linear(4, 2)   # parameters become MirroredVariables
        >>> out = strategy.run(lambda x: model(x).sum(), args=(torch.ones(3, 4),))
        >>> total = strategy.reduce("sum", out, axis=None)
    """

    def __init__(self, extended: "StrategyExtended") -> None:
        self._extended = extended

    @property
    def extended(self) -> "StrategyExtended":
        """The ``StrategyExtended`` with the lower-level API."""
        return self._extended

    @property
    def num_replicas_in_sync(self) -> int:
        """How many replicas take part in each step, over all workers."""
        return self._extended._num_replicas_in_sync

    @property
    def cluster_resolver(self) -> Any:
        """The cluster resolver of a multi-worker strategy, else ``None``."""
        return getattr(self._extended, "_cluster_resolver", None)

    def scope(self) -> _Scope:
        """A context manager that makes this strategy current; variables created inside it
        (``distribute.Variable`` or the parameters of a ``torch.nn.Module``) are distributed."""
        return _Scope(self)

    def run(self, fn: Callable, args: Any = (), kwargs: Optional[Dict[str, Any]] = None, options: Any = None) -> Any:
        """Runs ``fn`` once on each replica and returns the regrouped results.

        ``PerReplica`` arguments give each replica its own component. Results identical on
        every replica come back as they are; others come back as ``PerReplica``.
        """
        if not isinstance(args, (list, tuple)):
            raise ValueError(f"positional args must be a list or tuple, got {type(args)}")
        if kwargs is not None and not isinstance(kwargs, dict):
            raise ValueError(f"kwargs must be a dict or None, got {type(kwargs)}")
        if not callable(fn):
            raise TypeError(f"fn must be callable, received {fn!r} of type {type(fn).__name__}.")
        return self._extended._run(fn, args, kwargs or {})

    def reduce(self, reduce_op: Any, value: Any, axis: Any) -> Any:
        """Reduces ``value`` over all replicas to one tensor on the host.

        Args:
            reduce_op: ``ReduceOp.SUM``/``MEAN`` or ``"sum"``/``"mean"``.
            value: a ``PerReplica`` (or a nested structure of them), a tensor, or a variable.
            axis: ``None`` to combine element-wise across replicas, or an int or tuple of
                ints to reduce each replica's value along those axes as well (MEAN is then
                weighted by the true number of elements, so uneven batches are exact).
        """
        op = ReduceOp.resolve(reduce_op)
        check_axis(axis)
        check_not_in_replica_context(self)
        return map_structure(lambda v: self._reduce_leaf(op, v, axis), value)

    def _reduce_leaf(self, op: ReduceOp, value: Any, axis: Any) -> torch.Tensor:
        ext = self._extended
        host = torch.device("cpu")
        if getattr(value, "_is_distributed_variable", False) and not getattr(value, "_is_sync_on_read", False):
            value = Mirrored(value._components())
        elif getattr(value, "_is_sync_on_read", False):
            value = PerReplica(value._components())
        if isinstance(value, Mirrored):
            if op is ReduceOp.SUM and self.num_replicas_in_sync > 1:
                raise ValueError(
                    f"A Mirrored value cannot be reduced with ReduceOp.SUM: every replica holds the "
                    f"same value, so use ReduceOp.MEAN (which returns it), or reduce a PerReplica. "
                    f"Received {value!r}.")
            return reduce_components(ReduceOp.MEAN, [value._primary], axis, host)
        if isinstance(value, DistributedValues):
            return reduce_components(op, list(value.values), axis, host, ext._communicator)
        return self._reduce_plain(op, value, axis, host)

    def _reduce_plain(self, op: ReduceOp, value: Any, axis: Any, host: torch.device) -> torch.Tensor:
        ext = self._extended
        local = ext._num_local_replicas
        if axis is not None:
            return reduce_components(op, [value] * local, axis, host, ext._communicator)
        if ext._num_replicas_in_sync == 1 or (local == 1 and ext._communicator.num_workers > 1):
            return reduce_components(op, [value], None, host, ext._communicator)
        tensor = torch.as_tensor(value)
        if op is ReduceOp.SUM and bool(tensor.any()):
            raise ValueError(f"A non-DistributedValues value {value} cannot be reduced with the given "
                             f"reduce op {op}.")
        return tensor.to(host)

    def gather(self, value: Any, axis: int) -> Any:
        """Concatenates each replica's ``value`` along ``axis`` onto the host, in replica order."""
        if not isinstance(axis, int) or isinstance(axis, bool):
            raise TypeError(f"Expected `axis` to be an int, received {axis!r}.")
        check_not_in_replica_context(
            self, "distribute.Strategy.gather method requires cross-replica context, use "
                  "get_replica_context().all_gather() instead")
        return map_structure(lambda v: self._gather_leaf(v, axis), value)

    def _gather_leaf(self, value: Any, axis: int) -> Any:
        if not isinstance(value, DistributedValues):
            return value
        local = gather_components(list(value.values), axis, torch.device("cpu"))
        return self._extended._communicator.all_gather([local], axis, note="gather")[0].tensor

    def experimental_local_results(self, value: Any) -> tuple:
        """The local replicas' components of ``value`` as a tuple (``(value,)`` if not distributed)."""
        return self._extended._local_results(value)

    unwrap = experimental_local_results

    def experimental_distribute_values_from_function(self, value_fn: Callable) -> Any:
        """Calls ``value_fn(ValueContext)`` once per local replica and wraps the results in a
        ``PerReplica`` (the default and one-device strategies return the value itself)."""
        if not callable(value_fn):
            raise TypeError(f"value_fn must be callable, received {value_fn!r}.")
        return self._extended._distribute_values_from_function(value_fn)

    # -- input ----------------------------------------------------------------------
    # distribute.distributed_input sits above _core (it builds on values and contexts), so the
    # input methods import it where they are used.
    def experimental_distribute_dataset(self, dataset: Any, options: Any = None) -> Any:
        """Splits a dataset of **global** batches over the replicas (see docs/distributed_input.md).

        ``dataset`` is a ``distribute.data.Dataset`` (auto-sharded between workers by its
        ``options().experimental_distribute.auto_shard_policy``), a ``torch.utils.data.DataLoader``
        or any iterable of batches; ``options`` an ``InputOptions``. Each element holds one batch
        per local replica (``PerReplica``, bare with one replica); the last step may give some
        replicas empty batches. The default strategy returns ``dataset`` itself.

        Example:
            >>> from distribute.data import Dataset
            >>> s = distribute.MirroredStrategy(["CPU:0", "CPU:1"])
            >>> for batch in s.experimental_distribute_dataset(Dataset.range(8).batch(4)):
            ...     s.run(lambda x: x.sum(), args=(batch,))
        """
        from distribute.distributed_input import api  # upward: see the comment above

        api.check_dataset(dataset)
        options = api.resolve_options(options)
        api.check_dataset_options(options)
        return self._extended._experimental_distribute_dataset(dataset, options)

    def distribute_datasets_from_function(self, dataset_fn: Callable, options: Any = None) -> Any:
        """Builds per-replica batches with ``dataset_fn(InputContext)``, once per worker.

        ``dataset_fn`` returns a dataset (or iterable) of **per-replica** batches, sharded as it
        wishes with the context's ``num_input_pipelines``/``input_pipeline_id``; its batches go to
        the worker's replicas in turn. With ``InputOptions(experimental_replication_mode=
        InputReplicationMode.PER_REPLICA)`` it is called once per replica instead. The default
        strategy returns ``dataset_fn(InputContext())``.

        Example:
            >>> def dataset_fn(ctx):
            ...     batch = ctx.get_per_replica_batch_size(64)
            ...     return Dataset.range(640).shard(ctx.num_input_pipelines, ctx.input_pipeline_id).batch(batch)
            >>> dist = s.distribute_datasets_from_function(dataset_fn)
        """
        from distribute.distributed_input import api  # upward: see the comment above

        api.check_dataset_fn(dataset_fn)
        options = api.resolve_options(options)
        api.check_function_options(options)
        if options.experimental_replication_mode is api.InputReplicationMode.PER_REPLICA and \
                self._extended._per_replica_input_error is not None:
            raise NotImplementedError(self._extended._per_replica_input_error)
        return self._extended._distribute_datasets_from_function(dataset_fn, options)

    experimental_distribute_datasets_from_function = distribute_datasets_from_function

    def make_dataset_iterator(self, dataset: Any) -> Any:
        """Deprecated (TF1): an iterator of ``experimental_distribute_dataset(dataset)`` with
        ``initializer``/``initialize()``, which restart it. Enters this strategy's scope."""
        from distribute.distributed_input import api  # upward: see the comment above

        with self.scope():
            return api.InitializableIterator(self.experimental_distribute_dataset(dataset))

    def make_input_fn_iterator(self, input_fn: Callable, replication_mode: Any = None) -> Any:
        """Deprecated (TF1): an initializable iterator over what ``input_fn(InputContext)``
        returns: a dataset (distributed as by ``distribute_datasets_from_function``) or a
        ``get_next`` callable, called once per local replica and step. ``PER_WORKER`` only."""
        from distribute.distributed_input import api  # upward: see the comment above

        api.check_dataset_fn(input_fn, "input_fn")
        api.check_replication_mode(api.InputReplicationMode.PER_WORKER if replication_mode is None
                                   else replication_mode)
        with self.scope():
            return api.make_input_fn_iterator(self, input_fn)

    def update_config_proto(self, config_proto: Any) -> Any:
        """Deprecated (TF1 sessions): a deep copy of ``config_proto``; there is no session to configure."""
        return copy.deepcopy(config_proto)

    def experimental_run(self, fn: Callable, input_iterator: Any = None) -> Any:
        """Deprecated: ``run(fn, args=(input_iterator.get_next(),))`` (``run(fn)`` without an iterator)."""
        if not callable(fn):
            raise TypeError(f"fn must be callable, received {fn!r} of type {type(fn).__name__}.")
        if input_iterator is None:
            return self.run(fn)
        if not callable(getattr(input_iterator, "get_next", None)):
            raise TypeError("Expected `input_iterator` to be a distributed iterator (with get_next()), "
                            f"received {input_iterator!r}. Make one with make_dataset_iterator(dataset).")
        with self.scope():
            inputs = input_iterator.get_next()
        return self.run(fn, args=(inputs,))

    def colocate_vars_with(self, colocate_with_variable: Any) -> Any:
        """Deprecated alias of ``extended.colocate_vars_with``."""
        return self._extended.colocate_vars_with(colocate_with_variable)

    def group(self, value: Any, name: Optional[str] = None) -> tuple:
        """The local results of ``value`` (eager code has nothing to group)."""
        return self.experimental_local_results(value)

    def __copy__(self) -> "Strategy":
        raise RuntimeError("Must only deepcopy DistributionStrategy.")

    def __deepcopy__(self, memo: dict) -> "Strategy":
        result = object.__new__(type(self))
        memo[id(self)] = result
        for key, value in self.__dict__.items():
            setattr(result, key, copy.deepcopy(value, memo))
        return result

    def __repr__(self) -> str:
        return f"<distribute.{type(self).__name__} object at {id(self):#x}>"


class StrategyExtended:
    """The lower-level API of a strategy (``strategy.extended``)."""

    _num_replicas_in_sync = 1
    _num_local_replicas = 1
    experimental_enable_get_next_as_optional = False

    def __init__(self, container_strategy: Strategy) -> None:
        self._container_strategy_ref = container_strategy

    def _container_strategy(self) -> Strategy:
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
        components = var._components() if hasattr(var, "_components") else (var,)
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
        return getattr(value, "_distributed_container", None) or value

    def variable_created_in_scope(self, v: Any) -> bool:
        """True when ``v`` was created in this strategy's scope."""
        return getattr(v, "_distribute_strategy", None) is self._container_strategy()

    def read_var(self, v: Any) -> torch.Tensor:
        """The value of ``v`` as read in cross-replica context (aggregated for sync-on-read)."""
        return v.read_value() if hasattr(v, "read_value") else torch.as_tensor(v)

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

    # -- helpers and hooks ------------------------------------------------------------
    @staticmethod
    def _check_destinations(destinations: Any, allow_none: bool = False) -> None:
        if destinations is None and allow_none:
            return
        if isinstance(destinations, (list, tuple)) or destinations is None:
            raise ValueError(
                "destinations must be a device name, a tensor, a variable or a distributed value, "
                f"not {type(destinations).__name__}: {destinations!r}.")

    # -- input hooks (multi-worker strategies override the first three) ----------------
    _per_replica_input_error: Optional[str] = None
    """Set by strategies that refuse ``InputReplicationMode.PER_REPLICA`` (the error text)."""

    def _input_workers(self) -> tuple[int, int]:
        """``(number of input workers, this worker's index)``."""
        return (1, 0)

    def _any_worker_has_data(self, local_has_data: bool) -> bool:
        """Every input step: True while any worker still has data (all workers call it)."""
        return local_has_data

    def _agree_on_input_seed(self, seed: int) -> int:
        """Once per iteration of a distributed dataset: one shuffle seed for every worker
        (multi-worker strategies return worker 0's)."""
        return seed

    def _experimental_distribute_dataset(self, dataset: Any, options: Any) -> Any:
        from distribute.distributed_input import api  # upward: distributed input builds on _core

        return api.distribute_dataset(self._container_strategy(), dataset, options)

    def _distribute_datasets_from_function(self, dataset_fn: Callable, options: Any) -> Any:
        from distribute.distributed_input import api  # upward: distributed input builds on _core

        return api.distribute_datasets_from_function(self._container_strategy(), dataset_fn, options)

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
        if isinstance(value, DistributedValues):
            return value.values
        if getattr(value, "_is_distributed_variable", False):
            return value.values
        if contains_distributed(value):
            return tuple(select_replica(i, value) for i in range(self._num_local_replicas))
        return (value,)

    def _batch_reduce_to(self, op: ReduceOp, pairs: list, options: Any) -> list:
        return [self._reduce_to(op, value, dest, options) for value, dest in pairs]

    def _replica_devices(self, local_id: int) -> list:
        return [[self._devices[local_id].name]]

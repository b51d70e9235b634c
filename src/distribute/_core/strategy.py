"""Strategy and StrategyExtended: the user-facing API of every distribution strategy.

A strategy decides where variables live and how a step runs on several replicas. Public
methods validate their arguments and the calling context, then call a private hook of
``StrategyExtended`` that each concrete strategy implements.
"""

from __future__ import annotations

import copy
from typing import Any, Callable, Dict, Optional

import torch

from distribute._base.nest import map_structure
from distribute._base.reduce_op import ReduceOp
from distribute._core import context
from distribute._core.distributed_variables import DistributedVariable, SyncOnReadVariable
from distribute._core.extended import StrategyExtended
from distribute._core.reduction import check_axis, gather_components, reduce_components
from distribute._core.scope import CROSS_REPLICA_ERROR, _Scope, check_not_in_replica_context
from distribute._core.values import DistributedValues, Mirrored, PerReplica

__all__ = ["CROSS_REPLICA_ERROR", "Strategy", "StrategyExtended", "check_not_in_replica_context",
           "experimental_set_strategy"]

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
        return self._extended._cluster_resolver

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
        if isinstance(value, SyncOnReadVariable):
            value = PerReplica(value.values)  # the raw components: the primary would read the aggregate
        elif isinstance(value, DistributedVariable):
            value = Mirrored(value._components())
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

    # -- input (the hooks live in distribute.strategies.input_hooks) ------------------
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
        check_input_fn(dataset_fn, "dataset_fn")
        return self._extended._distribute_datasets_from_function(dataset_fn, options)

    experimental_distribute_datasets_from_function = distribute_datasets_from_function

    def make_dataset_iterator(self, dataset: Any) -> Any:
        """Deprecated (TF1): an iterator of ``experimental_distribute_dataset(dataset)`` with
        ``initializer``/``initialize()``, which restart it. Enters this strategy's scope."""
        with self.scope():
            return self._extended._make_dataset_iterator(dataset)

    def make_input_fn_iterator(self, input_fn: Callable, replication_mode: Any = None) -> Any:
        """Deprecated (TF1): an initializable iterator over what ``input_fn(InputContext)``
        returns: a dataset (distributed as by ``distribute_datasets_from_function``) or a
        ``get_next`` callable, called once per local replica and step. ``PER_WORKER`` only."""
        check_input_fn(input_fn, "input_fn")
        with self.scope():
            return self._extended._make_input_fn_iterator(input_fn, replication_mode)

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


def check_input_fn(fn: Any, what: str) -> None:
    """Raises unless ``fn`` (an input method's ``dataset_fn`` or ``input_fn``) is callable."""
    if not callable(fn):
        raise TypeError(f"Expected `{what}` to be a callable taking an InputContext and returning a "
                        f"dataset, received {fn!r} of type {type(fn).__name__}.")


def experimental_set_strategy(strategy: Optional[Strategy]) -> None:
    """Makes ``strategy`` current outside any ``with`` block (``None`` restores the default).

    Raises:
        TypeError: when ``strategy`` is neither a ``distribute.Strategy`` nor ``None``.
        RuntimeError: when called inside a strategy's ``with scope()`` block.
    """
    if strategy is not None and not isinstance(strategy, Strategy):
        raise TypeError(
            f"experimental_set_strategy expects a distribute.Strategy or None, received "
            f"{strategy!r} of type {type(strategy).__name__}."
        )
    previous = context.swap_set_strategy_scope(None)
    if len(context.stack()) > (1 if previous is not None else 0):
        context.swap_set_strategy_scope(previous)
        raise RuntimeError("Must not be called inside a `distribute.Strategy` scope.")
    if previous is not None:
        previous.__exit__(None, None, None)
    if strategy is not None:
        scope = strategy.scope()
        scope.__enter__()
        context.swap_set_strategy_scope(scope)

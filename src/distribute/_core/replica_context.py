"""Replica-side contexts: ReplicaContext, plus the InputContext and ValueContext records.

A ``ReplicaContext`` is what ``get_replica_context()`` returns inside ``strategy.run``: it knows
the replica's id and offers the collectives (``all_reduce``, ``all_gather``) and ``merge_call``,
the way to step out into cross-replica context once for all replicas.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, Callable, Dict, Optional, Sequence, Tuple

import torch

from distribute._core import context
from distribute._base.reduce_op import ReduceOp

if TYPE_CHECKING:  # pragma: no cover
    from distribute._core.strategy import Strategy

__all__ = ["InputContext", "ReplicaContext", "ValueContext"]


def _check_merge_args(args: Any, kwargs: Any) -> Dict[str, Any]:
    if not isinstance(args, (list, tuple)):
        raise ValueError(f"merge_call args must be a list or tuple, got {type(args)}")
    if kwargs is not None and not isinstance(kwargs, dict):
        raise ValueError(f"merge_call kwargs must be a dict or None, got {type(kwargs)}")
    return kwargs or {}


class ReplicaContext:
    """The context of one replica inside ``strategy.run``.

    Example:
        >>> import torch, distribute
        >>> s = distribute.MirroredStrategy(["CPU:0", "CPU:1"])
        >>> def step():
        ...     ctx = distribute.get_replica_context()
        ...     return ctx.all_reduce("sum", torch.tensor(1.0))
        >>> s.run(step)  # 2.0 on each replica
        PerReplica:{
          0: tensor(2.),
          1: tensor(2.)
        }

    It is also a context manager: ``with ctx:`` makes it the current replica context until
    the block exits.
    """

    def __init__(self, strategy: "Strategy", replica_id_in_sync_group: Any, _local_id: int = 0) -> None:
        if not (replica_id_in_sync_group is None or isinstance(replica_id_in_sync_group, (int, torch.Tensor))) \
                or isinstance(replica_id_in_sync_group, bool):
            raise ValueError("replica_id_in_sync_group can only be an integer, a Tensor or None.")
        self._strategy = strategy
        self._replica_id = replica_id_in_sync_group
        self._local_id = _local_id
        self._id_tensor: Optional[torch.Tensor] = None

    def __enter__(self) -> "ReplicaContext":
        """Makes this the current replica context (as TensorFlow's tests enter one by hand)."""
        context.push(context.Mode(self._strategy, None, self))
        return self

    def __exit__(self, *exc: Any) -> None:
        mode = context.current_mode()
        if mode is None or mode.replica_context is not self or mode.cross_replica is not None:
            raise RuntimeError(
                "ReplicaContext nesting error: a scope or context entered inside `with "
                "replica_context:` was not exited first. Exit inner `with` blocks before this one.")
        context.pop()

    @property
    def strategy(self) -> "Strategy":
        """The strategy this replica belongs to."""
        return self._strategy

    @property
    def replica_id_in_sync_group(self) -> Any:
        """This replica's index among all replicas of all workers, as an int32 scalar tensor."""
        if self._id_tensor is None:
            if isinstance(self._replica_id, torch.Tensor):
                self._id_tensor = self._replica_id.to(torch.int32)
            else:
                self._id_tensor = torch.tensor(self._replica_id or 0, dtype=torch.int32)
        return self._id_tensor

    @property
    def num_replicas_in_sync(self) -> int:
        """The number of replicas that take part in each step."""
        return self._strategy.num_replicas_in_sync

    @property
    def devices(self) -> Sequence[Any]:
        """Deprecated: the device names of this replica, as a nested list."""
        return self._strategy.extended._replica_devices(self._local_id)

    def _check_current(self) -> None:
        mode = context.current_mode()
        ctx = mode.replica_context if mode is not None else None
        if ctx is None or ctx is context.default_replica_context():
            raise RuntimeError("Need to be inside `call_for_each_replica()`")
        if ctx is not self:
            if ctx.strategy is not self._strategy:
                raise RuntimeError(
                    f"Mismatching distribute.Strategy objects: {ctx.strategy} is not {self._strategy}.")
            raise RuntimeError("Mismatching ReplicaContext.")

    def merge_call(self, merge_fn: Callable, args: Any = (), kwargs: Optional[Dict[str, Any]] = None) -> Any:
        """Runs ``merge_fn(strategy, *args, **kwargs)`` once, in cross-replica context.

        Every replica must call ``merge_call`` the same number of times. Each argument is
        regrouped across replicas (identical objects stay themselves, others become
        ``PerReplica``); each replica receives its own component of the result.
        """
        if not callable(merge_fn):
            raise TypeError(f"merge_fn must be callable, received {merge_fn!r}.")
        kwargs = _check_merge_args(args, kwargs)
        self._check_current()
        return self._strategy.extended._merge_call(self, merge_fn, tuple(args), kwargs)

    def all_reduce(self, reduce_op: Any, value: Any, options: Any = None) -> Any:
        """Combines ``value`` (a nested structure of tensors) over all replicas.

        SUM keeps the dtype; MEAN of integers gives float64. The result is differentiable:
        the gradient is the same reduction of the upstream gradients.
        """
        op = ReduceOp.resolve(reduce_op)
        self._check_current()
        return self._strategy.extended._replica_all_reduce(self, op, value, options)

    def all_gather(self, value: Any, axis: int, options: Any = None) -> Any:
        """Concatenates ``value`` from all replicas along ``axis``; shapes may differ only there."""
        if not isinstance(axis, int) or isinstance(axis, bool):
            raise TypeError(f"Expected `axis` to be an int, received {axis!r}.")
        self._check_current()
        return self._strategy.extended._replica_all_gather(self, value, axis, options)

    def _update(self, var: Any, fn: Callable, args: Any = (), kwargs: Any = None, group: bool = True) -> Any:
        return self.merge_call(
            lambda strategy, *a, **k: strategy.extended.update(var, fn, a, k, group=group),
            args=args, kwargs=kwargs)

    def __repr__(self) -> str:
        return f"<ReplicaContext replica {self._replica_id} of {self.num_replicas_in_sync}>"


class DefaultReplicaContext(ReplicaContext):
    """The replica context of the default mode: replica ``0`` of 1, collectives are identities."""

    @property
    def replica_id_in_sync_group(self) -> int:
        return 0

    @property
    def devices(self) -> Tuple[str, ...]:
        return ("/job:localhost/replica:0/task:0/device:CPU:0",)

    def _check_current(self) -> None:
        return None

    def merge_call(self, merge_fn: Callable, args: Any = (), kwargs: Optional[Dict[str, Any]] = None) -> Any:
        if not callable(merge_fn):
            raise TypeError(f"merge_fn must be callable, received {merge_fn!r}.")
        kwargs = _check_merge_args(args, kwargs)
        strategy = self._strategy
        context.push(context.Mode(strategy, strategy, None))
        try:
            return merge_fn(strategy, *args, **kwargs)
        finally:
            context.pop()

    def all_reduce(self, reduce_op: Any, value: Any, options: Any = None) -> Any:
        ReduceOp.resolve(reduce_op)
        return value

    def all_gather(self, value: Any, axis: int, options: Any = None) -> Any:
        return value


class InputContext:
    """What an input function needs to know about its place in the cluster.

    Example:
        >>> ctx = InputContext(num_input_pipelines=1, input_pipeline_id=0, num_replicas_in_sync=2)
        >>> ctx.get_per_replica_batch_size(64)
        32
    """

    def __init__(self, num_input_pipelines: int = 1, input_pipeline_id: int = 0,
                 num_replicas_in_sync: int = 1) -> None:
        for name, value, low in (("num_input_pipelines", num_input_pipelines, 1),
                                 ("input_pipeline_id", input_pipeline_id, 0),
                                 ("num_replicas_in_sync", num_replicas_in_sync, 1)):
            if not isinstance(value, int) or isinstance(value, bool) or value < low:
                raise ValueError(f"InputContext expects `{name}` to be an int >= {low}, received {value!r}.")
        if input_pipeline_id >= num_input_pipelines:
            raise ValueError(f"InputContext expects `input_pipeline_id` < `num_input_pipelines`, received "
                             f"input_pipeline_id={input_pipeline_id}, num_input_pipelines={num_input_pipelines}.")
        self._num_input_pipelines = num_input_pipelines
        self._input_pipeline_id = input_pipeline_id
        self._num_replicas_in_sync = num_replicas_in_sync

    @property
    def num_input_pipelines(self) -> int:
        """The number of input pipelines (usually one per worker)."""
        return self._num_input_pipelines

    @property
    def input_pipeline_id(self) -> int:
        """This pipeline's index in ``range(num_input_pipelines)``."""
        return self._input_pipeline_id

    @property
    def num_replicas_in_sync(self) -> int:
        """The number of replicas in sync across all pipelines."""
        return self._num_replicas_in_sync

    def get_per_replica_batch_size(self, global_batch_size: int) -> int:
        """``global_batch_size // num_replicas_in_sync``; raises if it does not divide."""
        if isinstance(global_batch_size, bool) or not isinstance(global_batch_size, int):
            raise TypeError("Expected `global_batch_size` to be an int, received "
                            f"global_batch_size={global_batch_size!r} of type {type(global_batch_size).__name__}.")
        if global_batch_size % self._num_replicas_in_sync != 0:
            raise ValueError(
                f"The `global_batch_size` {global_batch_size} is not divisible by "
                f"`num_replicas_in_sync` {self._num_replicas_in_sync} ")
        return global_batch_size // self._num_replicas_in_sync

    def __str__(self) -> str:
        return (f"distribute.InputContext(input pipeline id {self._input_pipeline_id}, "
                f"total: {self._num_input_pipelines})")

    __repr__ = __str__


class ValueContext:
    """Tells ``experimental_distribute_values_from_function``'s ``value_fn`` which replica it serves."""

    def __init__(self, replica_id_in_sync_group: int = 0, num_replicas_in_sync: int = 1) -> None:
        if not isinstance(replica_id_in_sync_group, int) or not isinstance(num_replicas_in_sync, int) \
                or not 0 <= replica_id_in_sync_group < num_replicas_in_sync:
            raise ValueError(
                "ValueContext expects 0 <= replica_id_in_sync_group < num_replicas_in_sync (ints), "
                f"received replica_id_in_sync_group={replica_id_in_sync_group!r}, "
                f"num_replicas_in_sync={num_replicas_in_sync!r}.")
        self._replica_id_in_sync_group = replica_id_in_sync_group
        self._num_replicas_in_sync = num_replicas_in_sync

    @property
    def replica_id_in_sync_group(self) -> int:
        """The replica the value is for."""
        return self._replica_id_in_sync_group

    @property
    def num_replicas_in_sync(self) -> int:
        """The number of replicas in sync."""
        return self._num_replicas_in_sync

    def __str__(self) -> str:
        return (f"distribute.ValueContext(replica id {self._replica_id_in_sync_group},  "
                f"total replicas in sync: {self._num_replicas_in_sync})")

    __repr__ = __str__

"""Distributed variables: one tensor that stands for a component on every replica.

``MirroredVariable`` (ON_WRITE) keeps its components equal: writes in a replica context are
aggregated once for all replicas, writes in cross-replica context reach every component.
``SyncOnReadVariable`` (ON_READ) lets each replica write its own component and aggregates
them when read in cross-replica context. ``AggregatingVariable`` (CentralStorage) is one
tensor on the parameter device that every replica reads, with aggregated replica writes.

The variable object *is* the primary component (replica 0), so ``module.parameters()``
yields real tensors. Inside replica ``i`` of ``strategy.run``, ``__torch_function__`` swaps
in component ``i``; in cross-replica context an in-place op on the primary (for example the
``torch.nn.init`` functions a module constructor runs) is copied to the other components.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, Callable, Dict, Optional, Sequence, Tuple, cast

import torch

from distribute._core import context
from distribute._base.reduce_op import ReduceOp, VariableAggregation, VariableSynchronization
from distribute._core.reduction import reduce_components
from distribute._core.values import DistributedValues, Mirrored, PerReplica, local_replica_index
from distribute._core.variables import Variable, make_initial_tensor

if TYPE_CHECKING:  # pragma: no cover
    from distribute._core.replica_context import ReplicaContext

__all__ = ["AggregatingVariable", "DistributedVariable", "MirroredVariable", "SyncOnReadVariable"]

_Disable = torch._C.DisableTorchFunctionSubclass
_INPLACE_DUNDERS = frozenset(
    "__setitem__ __set__ __iadd__ __isub__ __imul__ __itruediv__ __ifloordiv__ __imod__ __ipow__ "
    "__iand__ __ior__ __ixor__ __ilshift__ __irshift__ __imatmul__".split())
_WRITES: Dict[str, Callable[..., torch.Tensor]] = {
    "assign": torch.Tensor.copy_, "assign_add": torch.Tensor.add_, "assign_sub": torch.Tensor.sub_,
}


def _written(func: Callable, args: Sequence[Any], kwargs: Optional[dict]) -> list:
    """The distributed variables an op writes in place (first argument or ``out=``)."""
    name = getattr(func, "__name__", "")
    targets: list = []
    if (name.endswith("_") and not name.endswith("__")) or name in _INPLACE_DUNDERS:
        first = args[0] if args else next(
            (kwargs[k] for k in ("tensor", "input", "self") if kwargs and k in kwargs), None)
        targets.extend(first if isinstance(first, (list, tuple)) else (first,))
    if kwargs and kwargs.get("out") is not None:
        out = kwargs["out"]
        targets.extend(out if isinstance(out, (list, tuple)) else (out,))
    return [t for t in targets if isinstance(t, DistributedVariable)]


def _swap(value: Any, index: int) -> Any:
    if isinstance(value, DistributedVariable):
        return value._component(index)
    if type(value) in (list, tuple) and any(isinstance(x, DistributedVariable) for x in value):
        return type(value)(x._component(index) if isinstance(x, DistributedVariable) else x for x in value)
    return value


def _cross_replica_read(value: Any) -> Any:
    return value._cross_replica_value() if isinstance(value, SyncOnReadVariable) else value


class DistributedVariable(Variable, DistributedValues):
    """Base class of variables with one component per local replica.

    As in TensorFlow it is a ``DistributedValues`` (``MirroredVariable`` also a ``Mirrored``),
    but it is passed whole to ``strategy.run`` and regroups to itself.
    """

    _others: Tuple[Variable, ...] = ()

    @classmethod
    def _create(cls, strategy: Any, devices: Sequence[torch.device], factory_kwargs: dict) -> "DistributedVariable":
        primary = cast(DistributedVariable, Variable._plain(device=devices[0], _cls=cls, **factory_kwargs))
        primary._distribute_strategy = strategy
        name = primary._var_name
        with _Disable():
            initial = torch.Tensor.detach(primary)
        others = []
        for i, device in enumerate(devices[1:], start=1):
            component = Variable._plain(initial, primary._trainable, f"{name}/replica_{i}",
                                        synchronization=primary._synchronization,
                                        aggregation=primary._aggregation, device=device)
            component._distributed_container = primary
            component._distribute_strategy = strategy
            others.append(component)
        primary._others = tuple(others)
        return primary

    def _components(self) -> Tuple[Variable, ...]:
        return (self,) + self._others

    @property
    def values(self) -> Tuple[Variable, ...]:  # type: ignore[override]  # tf's property, not Tensor.values()
        """The components, one per local replica."""
        return self._components()

    # -- DistributedValues ------------------------------------------------------------
    @property
    def _values(self) -> Tuple[Variable, ...]:  # type: ignore[override]
        return self._components()

    def _local(self) -> Any:
        index = local_replica_index()
        return self._component(index) if index is not None else self

    def _select(self, index: int) -> Any:
        return self

    def _regroup_container(self) -> Any:
        return self

    def __getattr__(self, name: str) -> Any:
        # Mirrored's __getattr__ (delegation to the local component) must not apply to a
        # variable, which is a tensor: a missing attribute is simply missing.
        raise AttributeError(f"{type(self).__name__!r} object has no attribute {name!r}")

    def _component(self, index: int) -> Any:
        if index == 0:
            return self
        try:
            return self._others[index - 1]
        except IndexError:
            raise ValueError(
                f"Variable {self.name!r} has {1 + len(self._others)} component(s) but replica {index} "
                "asked for its own: it belongs to a strategy with fewer replicas than the one "
                "running now. Create it inside the running strategy's scope.") from None

    @classmethod
    def __torch_function__(cls, func: Callable, types: Any, args: tuple = (), kwargs: Optional[dict] = None) -> Any:
        if len(types) > 1 and not all(issubclass(t, torch.Tensor) for t in types):
            return NotImplemented  # a Mirrored/PerReplica argument: its handler unwraps it first
        index = local_replica_index()
        if index is None:
            return cls._cross_replica_op(func, args, kwargs)
        if index:
            args = tuple(_swap(a, index) for a in args)
            if kwargs:
                kwargs = {k: _swap(v, index) for k, v in kwargs.items()}
        with _Disable():
            return func(*args, **(kwargs or {}))

    @classmethod
    def _cross_replica_op(cls, func: Callable, args: tuple, kwargs: Optional[dict]) -> Any:
        targets = _written(func, args, kwargs)
        if not targets:
            args = tuple(_cross_replica_read(a) for a in args)
            with _Disable():
                return func(*args, **(kwargs or {}))
        with _Disable():
            result = func(*args, **(kwargs or {}))
        for target in targets:
            target._sync_from_primary()
        return result

    def _sync_from_primary(self) -> None:
        if not self._others:
            return
        with torch.no_grad(), _Disable():
            for component in self._others:
                component.copy_(self)

    # -- reads ------------------------------------------------------------------------
    def _cross_replica_value(self) -> torch.Tensor:
        with _Disable():
            return torch.Tensor.clone(self)

    def read_value(self) -> torch.Tensor:
        index = local_replica_index()
        if index is None:
            return self._cross_replica_value()
        with _Disable():
            return torch.Tensor.clone(self._component(index))

    # -- writes -----------------------------------------------------------------------
    def assign(self, value: Any, use_locking: Any = None, name: Any = None, read_value: bool = True) -> Any:
        return self._assign("assign", value, read_value)

    def assign_add(self, delta: Any, use_locking: Any = None, name: Any = None, read_value: bool = True) -> Any:
        return self._assign("assign_add", delta, read_value)

    def assign_sub(self, delta: Any, use_locking: Any = None, name: Any = None, read_value: bool = True) -> Any:
        return self._assign("assign_sub", delta, read_value)

    def _assign(self, kind: str, value: Any, read_value: bool) -> Any:
        self._check_strategy()
        index = local_replica_index()
        if index is None:
            if isinstance(value, PerReplica):
                raise ValueError(
                    f"Cannot {kind} a PerReplica value to {type(self).__name__} {self.name!r} in "
                    "cross-replica context: each component would get a different value. Reduce it "
                    "first (strategy.reduce) or assign inside strategy.run.")
            self._write_all(kind, value)
            return self._cross_replica_result() if read_value else None
        return self._assign_in_replica(kind, value, index, read_value)

    def _cross_replica_result(self) -> Any:
        """What a cross-replica ``assign*`` returns: a ``Mirrored`` of the new components."""
        return Mirrored(tuple(c.read_value() for c in self._components()))

    def _write_all(self, kind: str, value: Any) -> None:
        for component in self._components():
            Variable._write(component, _WRITES[kind], value, kind, False)

    def _assign_in_replica(self, kind: str, value: Any, index: int, read_value: bool) -> Any:
        component = self._component(index)
        Variable._write(component, _WRITES[kind], value, kind, False)
        return Variable.read_value(component) if read_value else None

    def _check_strategy(self) -> None:
        mode = context.current_mode()
        if mode is not None and self._distribute_strategy is not None and \
                mode.strategy is not self._distribute_strategy and mode.strategy is not context.default_strategy():
            raise RuntimeError(f"Mixing different distribute.Strategy objects: {mode.strategy} is not "
                               f"{self._distribute_strategy}")

    def numpy(self, *, force: bool = False) -> Any:
        return self.read_value().detach().cpu().numpy(force=force)

    def __repr__(self) -> str:  # type: ignore[override]  # torch's stub: `(self, *, Any = ...)`
        body = ",\n".join(f"  {i}: {Variable._plain_repr(c)}" for i, c in enumerate(self.values))
        return f"{type(self).__name__}:{{\n{body}\n}}"

    __str__ = __repr__

    def __deepcopy__(self, memo: dict) -> "DistributedVariable":
        self._check_strategy()
        strategy = self._distribute_strategy
        devices = [c.device for c in self._components()]
        kwargs = dict(initial_value=self._cross_replica_value().detach(), trainable=self._trainable,
                      name=self._var_name, synchronization=self._synchronization,
                      aggregation=self._aggregation)
        copied = type(self)._create(strategy, devices, kwargs)
        for src, dst in zip(self._components(), copied._components()):
            Variable._write(dst, torch.Tensor.copy_, Variable.read_value(src), "assign", False)
        memo[id(self)] = copied
        return copied


class MirroredVariable(DistributedVariable, Mirrored):
    """An ON_WRITE variable whose components are kept equal on every replica."""

    def _assign_in_replica(self, kind: str, value: Any, index: int, read_value: bool) -> Any:
        if self._aggregation is VariableAggregation.NONE:
            return super()._assign_in_replica(kind, value, index, read_value)
        # Only called in a replica context (see _assign_in_replica's callers).
        ctx = cast("ReplicaContext", context.get_replica_context())
        merged = ctx.merge_call(_merge_assign, args=(self, kind, value))
        return merged if read_value else None


def _merge_assign(strategy: Any, var: MirroredVariable, kind: str, value: Any) -> Mirrored:
    values = list(value.values) if isinstance(value, PerReplica) else [value]
    aggregation = var._aggregation
    if aggregation is VariableAggregation.ONLY_FIRST_REPLICA:
        reduced = values[0]
    elif not isinstance(value, (PerReplica, torch.Tensor)):
        if aggregation is VariableAggregation.SUM and strategy.num_replicas_in_sync > 1:
            raise ValueError(f"A non-DistributedValues value {value} cannot be reduced with the given "
                             f"reduce op {ReduceOp.SUM}.")
        reduced = value
    else:
        if not isinstance(value, PerReplica):
            values = [value] * len(var._components())
        op = ReduceOp.from_variable_aggregation(aggregation)
        reduced = reduce_components(op, values, None, var.device, strategy.extended._communicator)
    var._write_all(kind, reduced)
    return Mirrored(tuple(c.read_value() for c in var._components()))


class SyncOnReadVariable(DistributedVariable):
    """An ON_READ variable: replicas write their own component; reads aggregate."""


    @property
    def values(self) -> Tuple[Variable, ...]:  # type: ignore[override]  # tf's property, not Tensor.values()
        """The raw components (component 0 is a view of the primary that reads without aggregating)."""
        raw = self.__dict__.get("_raw_primary")
        if raw is None:
            with _Disable():
                raw = torch.Tensor._make_subclass(Variable, torch.Tensor.detach(self), False)
            raw._init_attributes(self._var_name, self._trainable, self._synchronization, self._aggregation)
            raw._distributed_container = self
            self.__dict__["_raw_primary"] = raw
        return (raw,) + self._others

    def _cross_replica_value(self) -> torch.Tensor:
        op = ReduceOp.from_variable_aggregation(self._aggregation) \
            if self._aggregation is not VariableAggregation.ONLY_FIRST_REPLICA else None
        with _Disable():
            comps = [torch.Tensor.detach(c) for c in self._components()]
            if op is None:
                return comps[0].clone()
            strategy = self._distribute_strategy
            communicator = strategy.extended._communicator if strategy is not None else None
            return reduce_components(op, comps, None, comps[0].device, communicator).to(comps[0].dtype)

    def _cross_replica_result(self) -> torch.Tensor:
        """TensorFlow reads the variable back: the aggregate, a tensor (NONE raises, after the write)."""
        return self._cross_replica_value()

    def _write_all(self, kind: str, value: Any) -> None:
        aggregation = self._aggregation
        if aggregation is VariableAggregation.SUM and kind != "assign":
            raise ValueError(
                f"SyncOnReadVariable does not support `{kind}` in cross-replica context when "
                "aggregation is set to `distribute.VariableAggregation.SUM`.")
        if aggregation is VariableAggregation.SUM:
            total = self._distribute_strategy.num_replicas_in_sync if self._distribute_strategy else 1
            value = torch.as_tensor(value if not isinstance(value, Variable) else value.read_value()) / total
        for component in self.values:  # the raw components: writing must not read the aggregate
            Variable._write(component, _WRITES[kind], value, kind, False)


class AggregatingVariable(Variable):
    """CentralStorage's variable: one tensor on the parameter device, shared by all replicas.

    Replicas read it directly (gradients from every replica accumulate into its ``.grad``);
    ``assign*`` in a replica context is aggregated once for all replicas.
    """

    _replica_devices: Optional[Tuple[torch.device, ...]] = None

    @classmethod
    def __torch_function__(cls, func: Callable, types: Any, args: tuple = (), kwargs: Optional[dict] = None) -> Any:
        index = local_replica_index()
        if index is not None:
            args = tuple(a._on_replica(index) if isinstance(a, AggregatingVariable) else a for a in args)
        with _Disable():
            return func(*args, **(kwargs or {}))

    def _on_replica(self, index: int) -> torch.Tensor:
        devices = self._replica_devices
        if devices is None or devices[index] == self.device:
            return self
        with _Disable():
            return torch.Tensor.to(self, devices[index])

    def _assign_any(self, kind: str, value: Any, read_value: bool) -> Any:
        index = local_replica_index()
        if index is None:
            return Variable._write(self, _WRITES[kind], value, kind, read_value)
        if self._aggregation is VariableAggregation.NONE:
            raise ValueError(
                f"You must specify an aggregation method to update a AggregatingVariable in replica "
                f"context: variable {self.name!r} has aggregation=NONE. Create it with "
                "aggregation=VariableAggregation.SUM, MEAN or ONLY_FIRST_REPLICA.")
        ctx = cast("ReplicaContext", context.get_replica_context())  # a replica index: a replica context
        result = ctx.merge_call(_merge_aggregate, args=(self, kind, value))
        return result if read_value else None

    def assign(self, value: Any, use_locking: Any = None, name: Any = None, read_value: bool = True) -> Any:
        return self._assign_any("assign", value, read_value)

    def assign_add(self, delta: Any, use_locking: Any = None, name: Any = None, read_value: bool = True) -> Any:
        return self._assign_any("assign_add", delta, read_value)

    def assign_sub(self, delta: Any, use_locking: Any = None, name: Any = None, read_value: bool = True) -> Any:
        return self._assign_any("assign_sub", delta, read_value)


def _merge_aggregate(strategy: Any, var: AggregatingVariable, kind: str, value: Any) -> torch.Tensor:
    if var._aggregation is VariableAggregation.ONLY_FIRST_REPLICA:
        reduced = value.values[0] if isinstance(value, PerReplica) else value
    else:
        values = list(value.values) if isinstance(value, PerReplica) else [value] * strategy.num_replicas_in_sync
        reduced = reduce_components(ReduceOp.from_variable_aggregation(var._aggregation), values, None, var.device)
    return cast(torch.Tensor, Variable._write(var, _WRITES[kind], reduced, kind, True))  # read_value=True


def resolve_variable_kwargs(kwargs: dict) -> VariableSynchronization:
    """Applies the creation rules shared by the mirrored strategies to ``kwargs``, in place.

    ``initial_value`` and ``dtype`` become one tensor (``initial_value``), ``aggregation``
    defaults to NONE and ``synchronization`` is resolved (AUTO means ON_WRITE); returns it.
    """
    tensor = make_initial_tensor(kwargs.pop("initial_value"), kwargs.pop("dtype", None))
    synchronization = kwargs.get("synchronization", VariableSynchronization.AUTO)
    aggregation = kwargs.setdefault("aggregation", VariableAggregation.NONE)
    name = kwargs.get("name")
    if synchronization is VariableSynchronization.NONE:
        raise ValueError(
            "`NONE` variable synchronization mode is not supported with distribute strategy. Please "
            f"change the `synchronization` for variable: {name or 'Variable'}")
    if aggregation is VariableAggregation.MEAN and not (tensor.is_floating_point() or tensor.is_complex()):
        raise ValueError(
            "creating distributed distribute.Variable with aggregation=MEAN and a non-floating dtype "
            "is not supported, please use a different aggregation or dtype")
    if synchronization is VariableSynchronization.AUTO:
        synchronization = VariableSynchronization.ON_WRITE
    kwargs.update(initial_value=tensor, synchronization=synchronization)
    return synchronization

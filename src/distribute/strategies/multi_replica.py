"""The extended API shared by strategies whose replicas live in one process.

Mirrored and CentralStorage differ only in where variables live; how a step runs, how
replicas synchronise and how values are reduced is the same and lives here.
"""

from __future__ import annotations

from typing import Any, Callable, List, Sequence, Tuple

import torch

from distribute._core import context
from distribute._core.context import Mode
from distribute._core.devices import Device, canonicalize
from distribute._core.distributed_variables import DistributedVariable, SyncOnReadVariable
from distribute._base.nest import flatten, is_nested, map_structure, pack_sequence_as
from distribute._base.reduce_op import ReduceOp
from distribute._core.gradients import is_distributed_variable, sum_component_grads
from distribute._core.reduction import as_tensor, finish_mean, gather_components
from distribute._core.replica_context import ValueContext
from distribute._core.scope import CROSS_REPLICA_ERROR
from distribute._core.values import DistributedValues, Mirrored, PerReplica, regroup, select_replica
from distribute._core.variables import Variable, owning_strategy
from distribute.collectives.cross_device_ops import CrossDeviceOps, ReductionToOneDevice, destination_devices
from distribute.strategies.input_hooks import InputExtended
from distribute.strategies.collective_grads import AllGatherGrad, AllReduceGrad, Sync
from distribute.strategies.replica_runner import ReplicaRunner
from distribute.strategies.sync_requests import AllGather, AllReduce, MergeCall, SyncRequest

__all__ = ["MultiReplicaExtended"]


class MultiReplicaExtended(InputExtended):
    """Runs replicas in this process over ``devices`` and reduces with ``cross_device_ops``."""

    experimental_enable_get_next_as_optional = True

    def __init__(self, container_strategy: Any, devices: Tuple[Device, ...],
                 cross_device_ops: Any = None) -> None:
        super().__init__(container_strategy)
        if cross_device_ops is not None and not isinstance(cross_device_ops, CrossDeviceOps):
            raise TypeError("cross_device_ops must be a distribute.CrossDeviceOps (ReductionToOneDevice, "
                            f"HierarchicalCopyAllReduce or NcclAllReduce), received {cross_device_ops!r}.")
        self._devices = devices
        self._cross_device_ops = cross_device_ops or ReductionToOneDevice()
        self._num_local_replicas = len(devices)
        self._num_replicas_in_sync = len(devices)
        self._runner = ReplicaRunner(container_strategy, len(devices))

    @property
    def experimental_replica_threads(self) -> bool:
        """Run replicas on threads (needed for backward through collectives; set automatically)."""
        return self._runner.use_threads

    @experimental_replica_threads.setter
    def experimental_replica_threads(self, value: bool) -> None:
        self._runner.use_threads = bool(value)

    def _torch_devices(self) -> List[torch.device]:
        return [d.torch_device for d in self._devices]

    # -- running ----------------------------------------------------------------------
    def _run(self, fn: Callable, args: Any, kwargs: dict) -> Any:
        strategy = self._check_run_context()
        stack = context.stack()
        if self._num_local_replicas == 1:
            stack.append(self._runner.modes[0])
            try:
                result = fn(*select_replica(0, args), **select_replica(0, kwargs))
            finally:
                stack.pop()
            return result if type(result) is torch.Tensor else regroup([result])  # components -> variable
        stack.append(Mode(strategy, strategy, None))
        try:
            return regroup(self._runner.run(fn, tuple(args), kwargs, self._merge))
        finally:
            stack.pop()

    def _check_run_context(self) -> Any:
        """Applies the scope-entry rules to ``run``; returns the strategy."""
        strategy = self._container_strategy()
        mode = context.current_mode()
        if mode is not None:
            if mode.strategy is not strategy and mode.strategy is not context.default_strategy():
                raise RuntimeError(f"Mixing different distribute.Strategy objects: {strategy} is not {mode.strategy}")
            if mode.strategy is strategy and mode.cross_replica is None:
                raise RuntimeError(CROSS_REPLICA_ERROR)
        return strategy

    def _merge(self, requests: List[SyncRequest]) -> list:
        return requests[0].merge(self, requests)

    def _reduce_to_replicas(self, op: ReduceOp, tensors: List[torch.Tensor]) -> List[torch.Tensor]:
        return self._all_reduce_leaves(op, [tensors], "gradient of a collective", copy=True)[0]

    def _all_reduce_leaves(self, op: ReduceOp, leaves: List[List[torch.Tensor]], note: str,
                           copy: bool = False) -> List[List[torch.Tensor]]:
        """Each leaf's per-replica tensors reduced over every replica, one result per local device.

        The ``CrossDeviceOps`` reduces the local replicas; with several workers it sums them on
        one device, the ``Communicator`` sums those over the workers (all leaves in one exchange)
        and the ops copy the result to every device. With one local device the communicator's
        result is returned as it is unless ``copy`` (gradients must not hold its buffers).
        """
        ops, devices, communicator = self._cross_device_ops, self._torch_devices(), self._communicator
        if communicator.num_workers == 1:
            return [ops.reduce_implementation(op, tensors, devices) for tensors in leaves]
        local = [tensors[0] if len(tensors) == 1 else  # one replica: nothing to reduce here
                 ops.reduce_implementation(ReduceOp.SUM, tensors, [tensors[0].device])[0] for tensors in leaves]
        totals = communicator.all_reduce(local, note=note)
        n = self._num_replicas_in_sync
        results = [finish_mean(total, n) if op is ReduceOp.MEAN else total for total in totals]
        if not copy and len(devices) == 1:
            return [[r if r.device == devices[0] else r.to(devices[0])] for r in results]
        return [ops.broadcast_implementation(r, devices) for r in results]

    def _merge_all_reduce(self, requests: Sequence[AllReduce]) -> list:
        op, structure = requests[0].op, requests[0].value
        leaves = [flatten(r.value) for r in requests]
        columns = [[as_tensor(leaf[j]).detach() for leaf in leaves] for j in range(len(leaves[0]))]
        out: List[list] = [[] for _ in requests]
        for j, reduced in enumerate(self._all_reduce_leaves(op, columns, f"ReplicaContext.all_reduce({op.value})")):
            for i, value in enumerate(reduced):
                x = leaves[i][j]  # differentiable if grad mode was on in that replica (not in this driver)
                needs_grad = requests[i].requires_grad and isinstance(x, torch.Tensor) and x.requires_grad
                if needs_grad:
                    with torch.enable_grad():
                        value = AllReduceGrad.apply(x, value, self._grad_sync(), op)
                out[i].append(value)
        return [pack_sequence_as(structure, o) for o in out]

    def _merge_all_gather(self, requests: Sequence[AllGather]) -> list:
        axis, structure = requests[0].axis, requests[0].value
        leaves = [flatten(r.value) for r in requests]
        out: List[list] = [[] for _ in requests]
        for j in range(len(leaves[0])):
            values = [as_tensor(leaf[j]).detach() for leaf in leaves]
            local = gather_components(values, axis, values[0].device)
            gathered, offset = self._communicator.all_gather([local], axis, note="ReplicaContext.all_gather")[0]
            for i, device in enumerate(self._torch_devices()):
                result, x = gathered.to(device, copy=True), leaves[i][j]
                if requests[i].requires_grad and isinstance(x, torch.Tensor) and x.requires_grad:
                    with torch.enable_grad():
                        result = AllGatherGrad.apply(x, result, self._grad_sync(), axis % max(x.dim(), 1), offset)
                offset += values[i].shape[axis]
                out[i].append(result)
        return [pack_sequence_as(structure, o) for o in out]

    def _grad_sync(self) -> Sync:
        """How the backward of a collective reaches the other replicas: through the runner when
        there are several, by reducing the one gradient in place when there is one."""
        if self._num_local_replicas == 1:
            return self._merge_alone
        return self._runner.sync

    def _merge_alone(self, request: SyncRequest) -> Any:
        return self._merge([request])[0]

    # -- replica-context hooks --------------------------------------------------------
    def _merge_call(self, ctx: Any, merge_fn: Callable, args: tuple, kwargs: dict) -> Any:
        request = MergeCall(merge_fn, args, kwargs)
        if self._num_local_replicas == 1:
            return self._merge([request])[0]
        return self._runner.sync(request)

    def _collective(self, make: Callable[[Any, Any, bool], SyncRequest], arg: Any, value: Any) -> Any:
        leaves = flatten(value)
        if any(isinstance(x, DistributedVariable) for x in leaves):
            # Each replica contributes its own component (a SyncOnRead variable's local value,
            # not its aggregate), read here, in the replica, and differentiable.
            leaves = [x.read_value() if isinstance(x, DistributedVariable) else x for x in leaves]
            value = pack_sequence_as(value, leaves)
        needs_grad = torch.is_grad_enabled() and any(
            isinstance(x, torch.Tensor) and x.requires_grad for x in leaves)
        request = make(arg, value, needs_grad)
        if self._num_local_replicas == 1:
            return self._merge([request])[0]
        return self._runner.sync(request)

    def _replica_all_reduce(self, ctx: Any, op: ReduceOp, value: Any, options: Any) -> Any:
        return self._collective(AllReduce, op, value)

    def _replica_all_gather(self, ctx: Any, value: Any, axis: int, options: Any) -> Any:
        return self._collective(AllGather, axis, value)

    def _reduce_gradients(self, params: Sequence[torch.Tensor], across_workers: bool = True) -> None:
        """Sums each distributed parameter's per-replica gradients with the ``CrossDeviceOps``."""
        total = self._cross_device_ops._sum_gradients
        for p in params:
            if is_distributed_variable(p):
                sum_component_grads(p, total)

    # -- cross-replica hooks ----------------------------------------------------------
    def _destination_devices(self, destinations: Any) -> List[torch.device]:
        return destination_devices(destinations)

    def _reduce_to(self, op: ReduceOp, value: Any, destinations: Any, options: Any) -> Any:
        devices = self._destination_devices(destinations)
        if isinstance(value, Mirrored) or (isinstance(value, DistributedVariable)
                                           and not isinstance(value, SyncOnReadVariable)):
            if op is ReduceOp.SUM:
                raise ValueError("A Mirrored value cannot be reduced with ReduceOp.SUM: it already holds the "
                                 "same value on every replica. Use ReduceOp.MEAN to copy it to the destinations.")
            return self._cross_device_ops.broadcast(_first(value), devices)
        if isinstance(value, DistributedValues):  # SyncOnRead variables too
            return self._cross_device_ops.reduce(op, value, devices, options)
        reduced = self._container_strategy()._reduce_plain(op, value, None, devices[0])
        return self._cross_device_ops.broadcast(reduced, devices)

    def _broadcast_to(self, tensor: Any, destinations: Any) -> Any:
        if not isinstance(tensor, torch.Tensor):
            return tensor
        devices = self._destination_devices(destinations) if destinations is not None else self._torch_devices()
        return self._cross_device_ops.broadcast(tensor, devices)

    def _local_results(self, value: Any) -> tuple:
        if is_nested(value):  # TF: one structure per local replica, even with no distributed values
            return tuple(map_structure(lambda x, i=i: _component(x, i), value)
                         for i in range(self._num_local_replicas))
        return super()._local_results(value)

    def _distribute_values_from_function(self, value_fn: Callable) -> Any:
        first = self._runner.first_replica_id
        n = self._num_replicas_in_sync
        return PerReplica([value_fn(ValueContext(first + i, n)) for i in range(self._num_local_replicas)])

    # -- variables --------------------------------------------------------------------
    def _create_variable(self, factory: Callable[..., Any], **kwargs: Any) -> Any:
        mode = context.current_mode()
        if mode is not None and mode.replica_context is not None and mode.strategy is self._container_strategy():
            return mode.replica_context.merge_call(
                lambda strategy, names: self._create_variable(factory, **_check_same_names(names, kwargs)),
                args=(kwargs.get("name"),))
        default = context.default_strategy()
        if any(m.strategy is default for m in context.stack()):
            raise RuntimeError(f"Mixing different distribute.Strategy objects: {default} is not "
                               f"{self._container_strategy()}")
        return self._make_variable(kwargs)

    def _create_module_parameter(self, param: torch.nn.Parameter, name: str) -> Any:
        return self._create_variable(Variable._plain, initial_value=param.detach(),
                                     trainable=param.requires_grad, name=name)

    def _make_variable(self, kwargs: dict) -> Any:
        raise TypeError(f"{type(self).__name__} must define how its variables are made")

    def _check_colocate(self, var: Any) -> None:
        if owning_strategy(var) is not self._container_strategy():
            raise ValueError("`colocate_vars_with` must only be passed a variable created in this "
                             f"distribute.Strategy.scope(), not: {var!r}")


def _first(value: Any) -> torch.Tensor:
    if isinstance(value, DistributedVariable):
        return value.read_value()
    return as_tensor(value.values[0])


def _component(value: Any, index: int) -> Any:
    return value.values[index] if isinstance(value, DistributedValues) else value


def _check_same_names(names: Any, kwargs: dict) -> dict:
    """``kwargs`` (replica 0's) once every replica asked for a variable of the same name."""
    if isinstance(names, PerReplica) and len(set(names.values)) > 1:
        listing = ", ".join(f"replica {i}: {n!r}" for i, n in enumerate(names.values))
        raise RuntimeError(
            f"Replicas created variables with different names in one call of a replica function "
            f"({listing}); they would be merged into one variable. Every replica must create the "
            "same variables, in the same order, with the same names.")
    return kwargs


def local_devices(devices: Sequence[Any]) -> Tuple[Device, ...]:
    """Canonical devices (kept for subclasses)."""
    return tuple(canonicalize(d) for d in devices)

"""MultiWorkerMirroredStrategy: synchronous data parallelism over the replicas of many processes.

Each task of the cluster (the chief and the workers) runs the same program in its own process
and drives its local replicas exactly as ``MirroredStrategy`` does (every GPU, or one CPU).
Values are reduced locally first, then across processes over ``torch.distributed``
(``collectives/process_group.py``): gloo on CPU, NCCL for CUDA tensors. Variables created in
the strategy's scope hold worker 0's values from their creation: a ``distribute.Variable`` is
broadcast when it is created, and module constructors initialise their parameters from worker
0's random generator (``agreed_random.py``); every variable created in the scope is broadcast
again, all in one exchange, when the scope is left. Optimizer steps sum the gradients of every
replica of every worker in a few packed buffers, so all copies stay identical.

The cluster comes from a ``ClusterResolver`` (``TF_CONFIG`` by default). Without a cluster the
strategy runs alone (one worker, no process group), as TensorFlow does. Failures of other
workers, stalls and mismatched collectives raise errors naming the task (see
``collectives/failures.py``); the job must then be restarted.
"""

from __future__ import annotations

import copy
import warnings
import weakref
from typing import Any, Callable, List, Optional, Tuple

import torch

from distribute._core.devices import Device, canonicalize
from distribute._base.nest import flatten, pack_sequence_as
from distribute._base.reduce_op import ReduceOp
from distribute._core.reduction import as_tensor, reduce_components
from distribute._core.strategy import Strategy, _Scope
from distribute._core.values import DistributedValues, Mirrored, PerReplica
from distribute.cluster_resolver import (ClusterResolver, TFConfigClusterResolver, id_in_cluster, is_chief,
                                         validate_cluster_spec)
from distribute.collectives.cross_device_ops import CommunicationImplementation, CommunicationOptions
from distribute.collectives.connect import connect
from distribute.collectives.process_group import ProcessGroup
from distribute.strategies.agreed_random import AgreedRandom
from distribute.strategies.mirrored import MirroredExtended
from distribute.strategies.replica_runner import ReplicaRunner

__all__ = ["ExperimentalMultiWorkerMirroredStrategy", "MultiWorkerMirroredExtended", "MultiWorkerMirroredStrategy"]

_Disable = torch._C.DisableTorchFunctionSubclass
_RESOLVER_ERROR = "cluster_resolver must be an instance of distribute.cluster_resolver.ClusterResolver"


class MultiWorkerMirroredStrategy(Strategy):
    """Synchronous training on the replicas of every worker process of a cluster.

    Args:
        cluster_resolver: where the cluster and this task come from; ``None`` means
            ``TFConfigClusterResolver()`` (the ``TF_CONFIG`` variable).
        communication_options: a ``CommunicationOptions``: ``timeout_seconds`` bounds the
            rendezvous (default 30 s) and every collective (default 120 s);
            ``bytes_per_pack`` splits the gradient all-reduce into packs; ``implementation``
            picks NCCL (CUDA tensors) or RING (gloo).

    Example (run in every task, each with its own ``TF_CONFIG``, e.g. by
    ``python -m distribute.launch --workers 2 train.py``)::

        strategy = distribute.MultiWorkerMirroredStrategy()
        with strategy.scope():
            model = torch.nn.Linear(4, 1)            # same initial values on every worker
            opt = distribute.optim.SGD(model.parameters(), lr=0.1)
        def step(x):
            loss = model(x).square().sum() / global_batch
            opt.zero_grad(); loss.backward(); opt.step()   # gradients summed over all workers
            return loss
        loss = strategy.reduce("sum", strategy.run(step, args=(x,)), axis=None)
    """

    def __init__(self, cluster_resolver: Optional[ClusterResolver] = None,
                 communication_options: Optional[CommunicationOptions] = None) -> None:
        if cluster_resolver is None:
            cluster_resolver = TFConfigClusterResolver()
        if not isinstance(cluster_resolver, ClusterResolver):
            raise ValueError(f"{_RESOLVER_ERROR}; received {cluster_resolver!r} of type "
                             f"{type(cluster_resolver).__name__}.")
        if communication_options is None:
            communication_options = CommunicationOptions()
        if not isinstance(communication_options, CommunicationOptions):
            raise ValueError("communication_options must be a distribute.experimental.CommunicationOptions; "
                             f"received {communication_options!r}.")
        super().__init__(MultiWorkerMirroredExtended(self, cluster_resolver, communication_options))

    def scope(self) -> _Scope:
        """Like ``Strategy.scope``; variables created inside hold worker 0's values (see the module)."""
        return _SyncingScope(self)

    def _gather_leaf(self, value: Any, axis: int) -> Any:
        # With one local replica, `run` returns plain tensors; they are still one per worker.
        if isinstance(value, torch.Tensor) and not getattr(value, "_is_distributed_variable", False) \
                and getattr(self._extended, "_group", None) is not None:
            value = PerReplica([value])
        return super()._gather_leaf(value, axis)


class _SyncingScope(_Scope):
    """A scope that agrees on random states inside and broadcasts new variables when it exits normally."""

    __slots__ = ()

    def __enter__(self) -> Strategy:
        strategy = super().__enter__()
        extended = self._strategy.extended
        if isinstance(extended, MultiWorkerMirroredExtended):
            extended._random.enter()
        return strategy

    def __exit__(self, *exc: Any) -> None:
        super().__exit__(*exc)
        extended = self._strategy.extended
        if isinstance(extended, MultiWorkerMirroredExtended):
            extended._random.exit()
            if exc[0] is None:
                extended._sync_variables()


def _local_devices(resolver: ClusterResolver, task_type: Optional[str], task_id: Optional[int]) -> Tuple[Device, ...]:
    """This worker's replicas: every GPU; else ``num_accelerators()['CPU']`` logical CPUs (default one)."""
    job = task_type or "localhost"
    task = task_id or 0
    if torch.cuda.is_available() and torch.cuda.device_count() > 0:
        return tuple(canonicalize(f"GPU:{i}", job=job, task=task) for i in range(torch.cuda.device_count()))
    cpus = resolver.num_accelerators().get("CPU", 1)
    return tuple(canonicalize(f"CPU:{i}", job=job, task=task) for i in range(max(1, cpus)))


def _cluster_role(resolver: ClusterResolver) -> Tuple[Any, Optional[str], Optional[int], int, int]:
    """``(spec, task_type, task_id, num_workers, rank)`` of this task; an empty cluster is one worker."""
    spec = resolver.cluster_spec()
    if not spec:
        return spec, None, None, 1, 0
    task_type, task_id = resolver.task_type, resolver.task_id
    if task_type is None or task_id is None:
        raise ValueError("When `cluster_spec` is given, you must also specify `task_type` and `task_id`.")
    validate_cluster_spec(spec, task_type, task_id)
    if task_type == "evaluator":
        return spec, task_type, task_id, 1, 0
    count = sum(spec.num_tasks(job) for job in ("chief", "worker") if job in spec.jobs)
    if count == 0:
        raise ValueError("No `worker`, `chief` or `evaluator` tasks can be found in `cluster_spec`.")
    if task_type not in ("chief", "worker"):
        raise ValueError(f"MultiWorkerMirroredStrategy runs on 'chief', 'worker' and 'evaluator' tasks; this task "
                         f"is {task_type}:{task_id}. Start {task_type} tasks with another strategy.")
    return spec, task_type, task_id, count, id_in_cluster(spec, task_type, task_id)


class MultiWorkerMirroredExtended(MirroredExtended):
    """MultiWorkerMirroredStrategy's extended API: Mirrored locally, collectives across workers."""

    experimental_between_graph = True

    def __init__(self, container_strategy: Strategy, resolver: ClusterResolver,
                 options: CommunicationOptions) -> None:
        spec, task_type, task_id, num_workers, rank = _cluster_role(resolver)
        devices = _local_devices(resolver, task_type, task_id)
        super().__init__(container_strategy, devices, None)
        self._cluster_resolver = resolver
        self._communication_options = options
        self._task_type, self._task_id = task_type, task_id
        self._num_workers, self._rank = num_workers, rank
        self._is_chief = is_chief(spec, task_type, task_id) if spec else True
        self._num_replicas_in_sync = len(devices) * num_workers
        self._runner = ReplicaRunner(container_strategy, len(devices), rank * len(devices))
        self._pending: List[Any] = []
        self._running = 0
        self._random = AgreedRandom()
        self._module_parameter = False
        self._group: Optional[ProcessGroup] = None
        self._hooks: dict = {}
        if num_workers > 1 and task_type is not None and task_id is not None:
            self._group = connect(spec, task_type, task_id, rendezvous_timeout=options.timeout_seconds,
                                  collective_timeout=options.timeout_seconds, nccl=self._wants_nccl(devices))
            self._hooks = {"across": self._across, "count_across": self._across}

    def _wants_nccl(self, devices: Tuple[Device, ...]) -> bool:
        implementation = self._communication_options.implementation
        gpus = all(d.kind == "GPU" for d in devices)
        if implementation is CommunicationImplementation.NCCL and not gpus:
            warnings.warn("CommunicationImplementation.NCCL was requested but this worker has no GPU; using gloo "
                          "(RING) instead.", RuntimeWarning, stacklevel=4)
        return gpus and implementation is not CommunicationImplementation.RING and \
            torch.distributed.is_nccl_available()

    # -- who am I ---------------------------------------------------------------------------
    @property
    def task_type(self) -> Optional[str]:
        """This task's job (``'worker'``, ``'chief'``), or None without a cluster."""
        return self._task_type

    @property
    def task_id(self) -> Optional[int]:
        """This task's index in its job, or None without a cluster."""
        return self._task_id

    @property
    def should_checkpoint(self) -> bool:
        """True on the chief (or ``worker:0`` when there is no chief)."""
        return self._is_chief

    @property
    def should_save_summary(self) -> bool:
        """True on the chief (or ``worker:0`` when there is no chief)."""
        return self._is_chief

    def _in_multi_worker_mode(self) -> bool:
        return self._num_workers > 1

    def _input_workers(self) -> Tuple[int, int]:
        return self._num_workers, self._rank

    def _any_worker_has_data(self, local_has_data: bool) -> bool:
        if self._group is None:
            return bool(local_has_data)
        return self._group.any_true(bool(local_has_data), note="has-data flag", timeout=self._timeout())

    def _agree_on_input_seed(self, seed: int) -> int:
        if self._group is None:
            return seed
        value = torch.tensor([int(seed)], dtype=torch.int64)
        self._group.broadcast([value], note="input seed", src=0, timeout=self._timeout())
        return int(value.item())

    # -- collectives across workers ---------------------------------------------------------
    def _timeout(self, options: Any = None) -> Optional[float]:
        merged = self._communication_options.merge(options) if isinstance(options, CommunicationOptions) \
            else self._communication_options
        return merged.timeout_seconds

    def _across_workers(self) -> dict:
        return self._hooks

    def _across(self, tensor: torch.Tensor) -> torch.Tensor:
        return self._group.all_reduce([as_tensor(tensor)], note="cross-worker reduction",  # type: ignore[union-attr]
                                      timeout=self._timeout())[0]

    def _gather_across_workers(self, tensor: torch.Tensor, axis: int) -> torch.Tensor:
        if self._group is None:
            return tensor
        return self._group.all_gather(tensor, axis, note="gather", timeout=self._timeout())

    def _all_reduce_gradients(self, params: List[torch.Tensor]) -> None:
        if self._group is None or not params:
            return
        with _Disable():
            grads = [p.grad for p in params if p.grad is not None]
        if any(g.is_sparse for g in grads):
            raise TypeError("MultiWorkerMirroredStrategy all-reduces dense gradients only; a parameter has a "
                            "sparse gradient. Use a dense embedding (sparse=False).")
        self._group.all_reduce(grads, note="gradients", timeout=self._timeout(), inplace=True,
                               bytes_per_pack=self._communication_options.bytes_per_pack)

    def _replica_all_reduce(self, ctx: Any, op: ReduceOp, value: Any, options: Any) -> Any:
        if self._group is None or self._num_local_replicas > 1:
            return super()._replica_all_reduce(ctx, op, value, options)
        leaves = flatten(value)
        tensors = [as_tensor(leaf) for leaf in leaves]
        sums = self._group.all_reduce([t.detach() for t in tensors], note=f"ReplicaContext.all_reduce({op.value})",
                                      timeout=self._timeout(options))
        out = []
        for x, total in zip(tensors, sums):
            result = _finish_mean(total, self._num_replicas_in_sync) if op is ReduceOp.MEAN else total
            if x.requires_grad and torch.is_grad_enabled():
                result = _CrossWorkerSum.apply(x, result, self, op)
            out.append(result)
        return pack_sequence_as(value, out)

    def _replica_all_gather(self, ctx: Any, value: Any, axis: int, options: Any) -> Any:
        if self._group is None or self._num_local_replicas > 1:
            return super()._replica_all_gather(ctx, value, axis, options)
        out = []
        for leaf in flatten(value):
            x = as_tensor(leaf)
            gathered, offset = self._group.all_gather(x, axis, note="ReplicaContext.all_gather",
                                                      timeout=self._timeout(options), with_offset=True)
            if x.requires_grad and torch.is_grad_enabled():
                gathered = _CrossWorkerGather.apply(x, gathered, self, axis % x.dim(), offset)
            out.append(gathered)
        return pack_sequence_as(value, out)

    def _reduce_to(self, op: ReduceOp, value: Any, destinations: Any, options: Any) -> Any:
        if self._group is None or not _per_replica(value):
            return super()._reduce_to(op, value, destinations, options)
        devices = self._destination_devices(destinations)
        total = self._local_sum(value, devices[0])
        (total,) = self._group.all_reduce([total], note=f"reduce_to({op.value})", timeout=self._timeout(options))
        return self._cross_device_ops.broadcast(self._finish(op, total), devices)

    def _batch_reduce_to(self, op: ReduceOp, pairs: list, options: Any) -> list:
        if self._group is None or not any(_per_replica(v) for v, _ in pairs):
            return super()._batch_reduce_to(op, pairs, options)
        reducible = [i for i, (v, _) in enumerate(pairs) if _per_replica(v)]
        devices = [self._destination_devices(pairs[i][1]) for i in reducible]
        totals = [self._local_sum(pairs[i][0], d[0]) for i, d in zip(reducible, devices)]
        sums = self._group.all_reduce(totals, note=f"batch_reduce_to({op.value})", timeout=self._timeout(options),
                                      bytes_per_pack=self._communication_options.bytes_per_pack)
        results = {i: self._cross_device_ops.broadcast(self._finish(op, s), d)
                   for i, s, d in zip(reducible, sums, devices)}
        return [results[i] if i in results else self._reduce_to(op, v, d, options) for i, (v, d) in enumerate(pairs)]

    def _local_sum(self, value: Any, device: torch.device) -> torch.Tensor:
        components = list(value.values) if isinstance(value, DistributedValues) else [
            c.read_value() for c in value._components()]
        return reduce_components(ReduceOp.SUM, components, None, device)

    def _finish(self, op: ReduceOp, total: torch.Tensor) -> torch.Tensor:
        return _finish_mean(total, self._num_replicas_in_sync) if op is ReduceOp.MEAN else total.clone()

    # -- running and variables --------------------------------------------------------------
    def _run(self, fn: Callable, args: Any, kwargs: dict) -> Any:
        self._sync_variables()
        self._running += 1
        try:
            with self._random.own_states():
                return super()._run(fn, args, kwargs)
        finally:
            self._running -= 1

    def _create_module_parameter(self, param: torch.nn.Parameter, name: str) -> Any:
        self._module_parameter = True
        try:
            return super()._create_module_parameter(param, name)
        finally:
            self._module_parameter = False

    def _make_variable(self, kwargs: dict) -> Any:
        module_parameter, self._module_parameter = self._module_parameter, False
        if self._group is not None and not self._running:  # before the constructor initialises it
            self._random.agree(lambda states: self._group.broadcast(  # type: ignore[union-attr]
                states, note="random generator states", src=0, timeout=self._timeout()))
        variable = super()._make_variable(kwargs)
        if self._group is not None:
            if self._running:
                self._pending.append(weakref.ref(variable))
                self._sync_variables()
            elif module_parameter:  # its constructor initialises it later: broadcast when the scope is left
                self._pending.append(weakref.ref(variable))
            else:
                self._sync_variables([weakref.ref(variable)])
        return variable

    def _sync_variables(self, pending: Optional[List[Any]] = None) -> None:
        """Gives ``pending`` (default: the module parameters not yet synced) worker 0's values, in one broadcast.

        Module parameters wait for the scope's exit (or the next ``run``), so that the values
        their constructors drew from the agreed random stream (or from anything else) are made
        bit-identical in one exchange.
        """
        if pending is None:
            pending, self._pending = self._pending, []
        if self._group is None or not pending:
            return
        variables = [v for v in (ref() for ref in pending) if v is not None]
        if not variables:
            return
        names = [v._var_name for v in variables]
        shown = ", ".join(names[:4]) + (", ..." if len(names) > 4 else "")
        with _Disable():
            primaries = [torch.Tensor.detach(v) for v in variables]
        self._group.broadcast(primaries, note=f"initial values of {len(names)} variable(s) ({shown})", src=0,
                              timeout=self._timeout())
        for variable in variables:
            variable._sync_from_primary()

    def __deepcopy__(self, memo: dict) -> "MultiWorkerMirroredExtended":
        result = object.__new__(type(self))
        memo[id(self)] = result
        shared = ("_group", "_cluster_resolver", "_communication_options", "_pending", "_hooks")
        for key, value in self.__dict__.items():
            setattr(result, key, value if key in shared else copy.deepcopy(value, memo))
        result._pending = []
        result._hooks = {"across": result._across, "count_across": result._across} if result._group else {}
        return result


def _per_replica(value: Any) -> bool:
    if isinstance(value, Mirrored):
        return False
    return isinstance(value, DistributedValues) or bool(getattr(value, "_is_sync_on_read", False))


def _finish_mean(total: torch.Tensor, count: int) -> torch.Tensor:
    if not (total.is_floating_point() or total.is_complex()):
        total = total.to(torch.float64)
    return total / count


class _CrossWorkerSum(torch.autograd.Function):
    """Identity on the reduced value; backward all-reduces the upstream gradient across workers."""

    @staticmethod
    def forward(ctx: Any, x: torch.Tensor, reduced: torch.Tensor, extended: Any, op: ReduceOp) -> torch.Tensor:
        ctx.extended, ctx.op = extended, op
        return reduced.clone()

    @staticmethod
    def backward(ctx: Any, grad: torch.Tensor) -> Tuple[Any, ...]:
        ext = ctx.extended
        (total,) = ext._group.all_reduce([grad.contiguous()], note=f"gradient of all_reduce({ctx.op.value})",
                                         timeout=ext._timeout())
        result = total / ext._num_replicas_in_sync if ctx.op is ReduceOp.MEAN else total.clone()
        return result, None, None, None


class _CrossWorkerGather(torch.autograd.Function):
    """Identity on the gathered value; backward takes this worker's slice of the summed gradient."""

    @staticmethod
    def forward(ctx: Any, x: torch.Tensor, gathered: torch.Tensor, extended: Any, axis: int,
                offset: int) -> torch.Tensor:
        ctx.extended, ctx.axis, ctx.offset, ctx.length = extended, axis, offset, x.shape[axis]
        return gathered.clone()

    @staticmethod
    def backward(ctx: Any, grad: torch.Tensor) -> Tuple[Any, ...]:
        ext = ctx.extended
        (total,) = ext._group.all_reduce([grad.contiguous()], note="gradient of all_gather", timeout=ext._timeout())
        return total.narrow(ctx.axis, ctx.offset, ctx.length).clone(), None, None, None, None


class ExperimentalMultiWorkerMirroredStrategy(MultiWorkerMirroredStrategy):
    """The deprecated ``experimental.MultiWorkerMirroredStrategy`` form.

    Args:
        communication: a ``CommunicationImplementation`` (AUTO, RING or NCCL), used when
            ``communication_options`` is not given.
        cluster_resolver: as for ``MultiWorkerMirroredStrategy``.
        communication_options: as for ``MultiWorkerMirroredStrategy``; wins over ``communication``.

    Example::

        strategy = distribute.experimental.MultiWorkerMirroredStrategy(
            distribute.experimental.CommunicationImplementation.RING)
    """

    def __init__(self, communication: Any = CommunicationImplementation.AUTO,
                 cluster_resolver: Optional[ClusterResolver] = None,
                 communication_options: Optional[CommunicationOptions] = None) -> None:
        if not isinstance(communication, CommunicationImplementation):
            raise ValueError("communication must be a distribute.experimental.CommunicationImplementation "
                             f"(AUTO, RING or NCCL); received {communication!r}.")
        if communication_options is None:
            communication_options = CommunicationOptions(implementation=communication)
        super().__init__(cluster_resolver, communication_options)

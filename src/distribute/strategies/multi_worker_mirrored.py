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
``collectives/failures.py``); the job must then be restarted. An exception that leaves ``run``
is reported to the other workers at once (provisionally: a program that catches it and goes on
keeps working), so their collectives fail within seconds with its type and message, whatever
this program does next (``collectives/health.py``).
"""

from __future__ import annotations

import copy
import warnings
import weakref
from typing import Any, Callable, List, Optional, Sequence, Tuple

import torch

from distribute._base.reduce_op import ReduceOp
from distribute._core.communicator import LOCAL, Communicator
from distribute._core.devices import Device, canonicalize
from distribute._core.distributed_variables import DistributedVariable
from distribute._core.reduction import finish_mean
from distribute._core.strategy import Strategy, _Scope
from distribute._core.values import DistributedValues, Mirrored, PerReplica
from distribute.cluster_resolver import (ClusterResolver, TFConfigClusterResolver, id_in_cluster, is_chief,
                                         validate_cluster_spec)
from distribute.collectives.cross_device_ops import CommunicationImplementation, CommunicationOptions
from distribute.collectives.communicator import ProcessGroupCommunicator
from distribute.collectives.connect import connect
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
        if isinstance(value, torch.Tensor) and not isinstance(value, DistributedVariable) \
                and self._extended._communicator.num_workers > 1:
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
        self._comm: Communicator = LOCAL
        if num_workers > 1 and task_type is not None and task_id is not None:
            group = connect(spec, task_type, task_id, rendezvous_timeout=options.timeout_seconds,
                            collective_timeout=options.timeout_seconds, nccl=self._wants_nccl(devices))
            self._comm = ProcessGroupCommunicator(group, options.timeout_seconds, options.bytes_per_pack)

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
        return self._comm.any_true(bool(local_has_data), note="has-data flag")

    def _agree_on_input_seed(self, seed: int) -> int:
        value = torch.tensor([int(seed)], dtype=torch.int64)
        self._comm.broadcast([value], 0, note="input seed")
        return int(value.item())

    # -- collectives across workers ---------------------------------------------------------
    @property
    def _communicator(self) -> Communicator:
        """The workers' ``ProcessGroupCommunicator`` (``LOCAL`` for a cluster of one)."""
        return self._comm

    def _multi_worker(self) -> bool:
        return self._comm.num_workers > 1

    def _reduce_gradients(self, params: Sequence[torch.Tensor], across_workers: bool = True) -> None:
        """Sums the local replicas' gradients (``CrossDeviceOps``), then every worker's (in place)."""
        super()._reduce_gradients(params)
        if not across_workers or not self._multi_worker():
            return
        with _Disable():
            grads = [p.grad for p in params if p.grad is not None]
        if not grads:
            return
        if any(g.is_sparse for g in grads):
            raise TypeError("MultiWorkerMirroredStrategy all-reduces dense gradients only; a parameter has a "
                            "sparse gradient. Use a dense embedding (sparse=False).")
        self._comm.all_reduce(grads, note="gradients", inplace=True)

    def _reduce_to(self, op: ReduceOp, value: Any, destinations: Any, options: Any) -> Any:
        if not self._multi_worker() or not _per_replica(value):
            return super()._reduce_to(op, value, destinations, options)
        devices = self._destination_devices(destinations)
        total = self._local_sum(value, devices[0])
        (total,) = self._comm.all_reduce([total], note=f"reduce_to({op.value})", timeout=_timeout(options))
        return self._cross_device_ops.broadcast(self._finish(op, total), devices)

    def _batch_reduce_to(self, op: ReduceOp, pairs: list, options: Any) -> list:
        if not self._multi_worker() or not any(_per_replica(v) for v, _ in pairs):
            return super()._batch_reduce_to(op, pairs, options)
        reducible = [i for i, (v, _) in enumerate(pairs) if _per_replica(v)]
        devices = [self._destination_devices(pairs[i][1]) for i in reducible]
        totals = [self._local_sum(pairs[i][0], d[0]) for i, d in zip(reducible, devices)]
        sums = self._comm.all_reduce(totals, note=f"batch_reduce_to({op.value})", timeout=_timeout(options))
        results = {i: self._cross_device_ops.broadcast(self._finish(op, s), d)
                   for i, s, d in zip(reducible, sums, devices)}
        return [results[i] if i in results else self._reduce_to(op, v, d, options) for i, (v, d) in enumerate(pairs)]

    def _local_sum(self, value: DistributedValues, device: torch.device) -> torch.Tensor:
        return self._cross_device_ops.reduce_implementation(ReduceOp.SUM, list(value.values), [device])[0]

    def _finish(self, op: ReduceOp, total: torch.Tensor) -> torch.Tensor:
        return finish_mean(total, self._num_replicas_in_sync) if op is ReduceOp.MEAN else total.clone()

    # -- running and variables --------------------------------------------------------------
    def _run(self, fn: Callable, args: Any, kwargs: dict) -> Any:
        try:
            self._sync_variables()
            self._running += 1
            try:
                with self._random.own_states():
                    return super()._run(fn, args, kwargs)
            finally:
                self._running -= 1
        except BaseException as exc:
            self._report_raised(exc)
            raise

    def _report_raised(self, exc: BaseException) -> None:
        """Tells the other workers at once that ``exc`` left ``run`` here (see ``health.py``).

        Their collectives fail on it within seconds while this program still handles it (a
        ``finally:`` that lingers, a debugger); a program that catches it and goes on to its
        next collective has withdrawn it by then.
        """
        if isinstance(self._comm, ProcessGroupCommunicator):
            self._comm.group.report_raised(exc)

    def _create_module_parameter(self, param: torch.nn.Parameter, name: str) -> Any:
        self._module_parameter = True
        try:
            return super()._create_module_parameter(param, name)
        finally:
            self._module_parameter = False

    def _make_variable(self, kwargs: dict) -> Any:
        module_parameter, self._module_parameter = self._module_parameter, False
        if self._multi_worker() and not self._running:  # before the constructor initialises it
            self._random.agree(lambda states: self._comm.broadcast(states, 0, note="random generator states"))
        variable = super()._make_variable(kwargs)
        if self._multi_worker():
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
        if not self._multi_worker() or not pending:
            return
        variables = [v for v in (ref() for ref in pending) if v is not None]
        if not variables:
            return
        names = [v._var_name for v in variables]
        shown = ", ".join(names[:4]) + (", ..." if len(names) > 4 else "")
        with _Disable():
            primaries = [torch.Tensor.detach(v) for v in variables]
        self._comm.broadcast(primaries, 0, note=f"initial values of {len(names)} variable(s) ({shown})")
        for variable in variables:
            variable._sync_from_primary()

    def __deepcopy__(self, memo: dict) -> "MultiWorkerMirroredExtended":
        result = object.__new__(type(self))
        memo[id(self)] = result
        shared = ("_comm", "_cluster_resolver", "_communication_options", "_pending")
        for key, value in self.__dict__.items():
            setattr(result, key, value if key in shared else copy.deepcopy(value, memo))
        result._pending = []
        return result


def _per_replica(value: Any) -> bool:
    """A value with one (different) component per replica: ``PerReplica``, a SyncOnRead variable."""
    return isinstance(value, DistributedValues) and not isinstance(value, Mirrored)


def _timeout(options: Any) -> Optional[float]:
    """The per-call timeout of ``options`` (None: the strategy's ``CommunicationOptions``)."""
    return options.timeout_seconds if isinstance(options, CommunicationOptions) else None


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

"""ParameterServerStrategy: variables on ``ps`` tasks, steps scheduled onto workers.

The coordinator (the chief, where the user's program runs) creates the variables in
``strategy.scope()``: each lives on one ``ps`` task, round-robin in creation order (one counter
for variables and shards alike), split by the ``variable_partitioner`` into a
``ShardedVariable`` when it gives more than one shard. A ``ClusterCoordinator`` sends functions
to the workers, which read the variables, compute with ``strategy.run`` (one replica each) and
send gradients to the parameter servers that hold them: asynchronous training.

Example:
    >>> # resolver = distribute.cluster_resolver.TFConfigClusterResolver()
    >>> # strategy = distribute.ParameterServerStrategy(resolver)
    >>> # coordinator = distribute.coordinator.ClusterCoordinator(strategy)
"""

from __future__ import annotations

import logging
import threading
from typing import Any, Callable, Dict, List, Optional

import torch

from distribute._core.devices import canonicalize
from distribute._core.strategy import Strategy
from distribute._core.replica_context import ValueContext
from distribute._core.variables import Variable, make_initial_tensor
from distribute.cluster_resolver.base import ClusterResolver
from distribute.cluster_resolver.cluster_spec import ClusterSpec
from distribute.cluster_resolver.job_secret import job_secret
from distribute.ps import closure_state
from distribute.ps.connections import Connections
from distribute.ps.partitioners import check_partitions, shard_sizes
from distribute.ps.sharded_variable import ShardedVariable
from distribute.ps.unbuilt_dataset import UnbuiltDataset
from distribute.ps.variables import PSVariable
from distribute.strategies.multi_replica import MultiReplicaExtended

__all__ = ["ParameterServerStrategy", "check_cluster", "cluster_addresses", "set_coordinator_factory"]

log = logging.getLogger("distribute")

_WITHOUT_SCHEDULE = ("A `distribute.ParameterServerStrategy` method is invoked without using "
                     "`ClusterCoordinator.schedule`. If you are not tracing a function to schedule, "
                     "this call runs on the coordinator, not on a worker.")
_coordinator_factory: List[Callable[[Any], Any]] = []


def set_coordinator_factory(factory: Callable[[Any], Any]) -> None:
    """Registers how ``scope()`` makes a strategy's coordinator (``distribute.coordinator`` does)."""
    _coordinator_factory[:] = [factory]


def check_cluster(resolver: Any) -> Dict[str, List[str]]:
    """The cluster of ``resolver`` as a dict, checked as TensorFlow's ParameterServerStrategy does."""
    if not isinstance(resolver, ClusterResolver):
        raise TypeError("Expected `cluster_resolver` to be a distribute.cluster_resolver.ClusterResolver "
                        f"(TFConfigClusterResolver, SimpleClusterResolver, ...), received {resolver!r}.")
    cluster = cluster_addresses(resolver.cluster_spec())
    if not cluster:
        raise ValueError("Cluster spec must be non-empty in `distribute.cluster_resolver.ClusterResolver`.")
    if not cluster.get("ps"):
        raise ValueError("There must be at least one ps.")
    if not cluster.get("worker"):
        raise ValueError("There must be at least one worker.")
    if len(cluster.get("chief", ())) > 1:
        raise ValueError(f"There must be at most one chief (the coordinator); received {len(cluster['chief'])}.")
    return cluster


def cluster_addresses(spec: ClusterSpec) -> Dict[str, List[str]]:
    """Job name -> the addresses of its tasks, in index order."""
    return {job: [a for a in spec.job_tasks(job) if a is not None] for job in spec.jobs}


class ParameterServerStrategy(Strategy):
    """Asynchronous training with variables on parameter servers.

    Args:
        cluster_resolver: the cluster (at least one ``worker`` and one ``ps`` task).
        variable_partitioner: ``shape, dtype -> [num_shards, 1, ...]`` (for example
            ``distribute.experimental.partitioners.FixedShardsPartitioner(2)``), or None.

    Example:
        >>> # strategy = distribute.ParameterServerStrategy(resolver,
        >>> #     variable_partitioner=distribute.experimental.partitioners.MinSizePartitioner())
        >>> # with strategy.scope():
        >>> #     model = torch.nn.Linear(10, 1)   # its parameters live on the ps tasks
    """

    def __init__(self, cluster_resolver: Any, variable_partitioner: Optional[Callable[..., Any]] = None) -> None:
        cluster = check_cluster(cluster_resolver)
        if variable_partitioner is not None and not callable(variable_partitioner):
            raise TypeError("Expected `variable_partitioner` to be a callable such as "
                            "distribute.experimental.partitioners.FixedShardsPartitioner(2), or None; "
                            f"received {variable_partitioner!r}.")
        conns = Connections(cluster, job_secret(task="chief"))
        super().__init__(ParameterServerExtended(self, cluster, conns, variable_partitioner, on_worker=False))
        self._extended._cluster_resolver = cluster_resolver
        self._cluster_coordinator: Any = None

    @classmethod
    def _for_worker(cls, cluster: Dict[str, List[str]], conns: Connections, worker: int) -> "ParameterServerStrategy":
        """The strategy that scheduled functions see on ``worker:<worker>``."""
        strategy = cls.__new__(cls)
        Strategy.__init__(strategy, ParameterServerExtended(strategy, cluster, conns, None, on_worker=True))
        strategy._cluster_coordinator = None
        return strategy

    def scope(self) -> Any:
        """Makes this strategy current; creates its ``ClusterCoordinator`` if there is none yet."""
        extended = self._extended
        assert isinstance(extended, ParameterServerExtended)
        if self._cluster_coordinator is None and not extended._on_worker and _coordinator_factory:
            _coordinator_factory[0](self)
        return super().scope()


class ParameterServerExtended(MultiReplicaExtended):
    """ParameterServerStrategy's extended API: one replica per worker, variables on ps tasks."""

    _per_replica_input_error = ("InputReplicationMode.PER_REPLICA is not supported by "
                                "distribute.ParameterServerStrategy")

    def __init__(self, container_strategy: Any, cluster: Dict[str, List[str]], conns: Connections,
                 partitioner: Optional[Callable[..., Any]], on_worker: bool) -> None:
        super().__init__(container_strategy, (canonicalize("CPU:0"),))
        self._cluster, self._conns, self._partitioner = cluster, conns, partitioner
        self._on_worker = on_worker
        self._lock = threading.Lock()
        self._next_placement = 0
        self._next_id = 0
        self._warned = False
        self._building_dataset = False

    @property
    def parameter_devices(self) -> tuple:
        """The ps tasks' devices: ``'/job:ps/replica:0/task:<k>/device:CPU:0'``."""
        return tuple(f"/job:ps/replica:0/task:{i}/device:CPU:0" for i in range(len(self._cluster["ps"])))

    @property
    def _num_ps(self) -> int:
        return len(self._cluster["ps"])

    # -- running ------------------------------------------------------------------------
    def _run(self, fn: Callable, args: Any, kwargs: dict) -> Any:
        if not self._on_worker and closure_state.current() is None and not self._warned:
            self._warned = True
            log.warning(_WITHOUT_SCHEDULE)
        return super()._run(fn, args, kwargs)

    def _distribute_values_from_function(self, value_fn: Callable) -> Any:
        return value_fn(ValueContext())

    # -- variables ------------------------------------------------------------------------
    def _make_variable(self, kwargs: dict) -> Any:
        if self._building_dataset:
            raise ValueError("Creating variables in `dataset_fn` is not allowed.")
        if self._on_worker:
            raise ValueError("Creating variables inside a function scheduled with ClusterCoordinator.schedule "
                             "is not supported: create them in strategy.scope() on the coordinator.")
        tensor = make_initial_tensor(kwargs.pop("initial_value"), kwargs.pop("dtype", None))
        name = kwargs.get("name") or "Variable"
        shards = self._num_shards(tensor, name)
        if shards == 1:
            return self._one_variable(tensor, kwargs)
        parts, offset = [], 0
        for i, rows in enumerate(shard_sizes(int(tensor.shape[0]), shards)):
            part_kwargs = dict(kwargs, name=f"{name}/part_{i}")
            parts.append(self._one_variable(tensor[offset:offset + rows].clone(), part_kwargs))
            offset += rows
        var = ShardedVariable._make(parts, name, parts[0]._trainable, on_worker=False)
        var._distribute_strategy = self._container_strategy()
        return var

    def _num_shards(self, tensor: torch.Tensor, name: str) -> int:
        if self._partitioner is None or tensor.dim() == 0:
            return 1
        return check_partitions(self._partitioner(tuple(tensor.shape), tensor.dtype), tuple(tensor.shape))

    def _one_variable(self, tensor: torch.Tensor, kwargs: dict) -> PSVariable:
        with self._lock:
            ps, var_id = self._next_placement % self._num_ps, self._next_id
            self._next_placement += 1
            self._next_id += 1
        var = PSVariable._create(self._conns, ps, var_id, tensor, kwargs)
        var._distribute_strategy = self._container_strategy()
        return var

    def _create_module_parameter(self, param: torch.nn.Parameter, name: str) -> Any:
        return self._create_variable(Variable._plain, initial_value=param.detach(),
                                     trainable=param.requires_grad, name=name)

    def _check_colocate(self, var: Any) -> None:
        return None

    # -- datasets: built on each worker by ClusterCoordinator.create_per_worker_dataset ----
    def _experimental_distribute_dataset(self, dataset: Any, options: Any) -> Any:
        return UnbuiltDataset(lambda: dataset)

    def _distribute_datasets_from_function(self, dataset_fn: Callable[..., Any], options: Any) -> Any:
        return UnbuiltDataset(dataset_fn)

"""distribute: the tf.distribute programming model on PyTorch.

Take a training loop from one device to many devices and many machines with almost
no code change, using torch tensors, torch autograd and ``torch.distributed``.

Glossary:
    replica: one copy of the computation. ``strategy.run(fn)`` runs ``fn`` once per replica,
        each on its own device (a GPU, or a *logical CPU replica* such as ``"CPU:1"``) with its
        own slice of the batch.
    worker: one process of a (multi-process) cluster; it drives its local replicas.
    cross-replica context: code that sees all replicas at once: inside ``strategy.scope()``,
        in a ``merge_call``'s function, or at top level. ``reduce``/``gather`` run here.
    replica context: code running for one replica, inside ``strategy.run``;
        ``get_replica_context()`` gives its id and the collectives ``all_reduce``/``all_gather``.
    mirrored: a value or variable kept identical on every replica (``Mirrored``,
        ``MirroredVariable``); writes are aggregated so the copies never diverge.
    sync-on-read: a variable (``SyncOnReadVariable``) each replica updates on its own; reading
        it in cross-replica context aggregates the replicas' values (SUM, MEAN, ...).
    per-replica: values that differ between replicas (``PerReplica``), such as batches and losses.

Example:
    >>> import torch, distribute
    >>> strategy = distribute.MirroredStrategy(["CPU:0", "CPU:1"])
    >>> with strategy.scope():
    ...     model = torch.nn.Linear(4, 1)
    ...     opt = distribute.optim.SGD(model.parameters(), lr=0.1)
    >>> def step(x):
    ...     loss = distribute.nn.compute_average_loss(model(x).squeeze(1) ** 2, global_batch_size=8)
    ...     opt.zero_grad(); loss.backward(); opt.step()
    ...     return loss
    >>> batches = strategy.experimental_distribute_values_from_function(lambda ctx: torch.ones(4, 4))
    >>> loss = strategy.reduce("sum", strategy.run(step, args=(batches,)), axis=None)
"""

from distribute import cluster_resolver, data, errors, nn, optim
from distribute._version import package_version as _package_version
from distribute._core.context import (get_cross_replica_context, get_replica_context, get_strategy,
                                      has_strategy, in_cross_replica_context)
from distribute._core.distributed_variables import (AggregatingVariable, DistributedVariable,
                                                    MirroredVariable, SyncOnReadVariable)
from distribute._base.reduce_op import ReduceOp, VariableAggregation, VariableSynchronization
from distribute._core.replica_context import InputContext, ReplicaContext
from distribute._core.strategy import Strategy, StrategyExtended, experimental_set_strategy
from distribute._base.tensor_spec import TensorSpec
from distribute._core.values import DistributedValues, Mirrored, PerReplica
from distribute._core.variables import Variable
from distribute.distributed_input import (DistributedDataset, DistributedIterator, InputOptions,
                                          InputReplicationMode)
from distribute.collectives.cross_device_ops import (CrossDeviceOps, HierarchicalCopyAllReduce, NcclAllReduce,
                                                     ReductionToOneDevice)
from distribute.function import function
from distribute.strategies.mirrored import MirroredStrategy
from distribute.strategies.multi_worker_mirrored import MultiWorkerMirroredStrategy
from distribute.strategies.one_device import OneDeviceStrategy
from distribute.strategies.parameter_server import ParameterServerStrategy
from distribute.ps.sharded_variable import ShardedVariable
from distribute import coordinator  # noqa: E402  (after the strategies it schedules for)
from distribute.coordinator import Server
from distribute import compat, experimental  # noqa: E402  (re-export strategies defined above)

__version__ = _package_version()

__all__ = [
    "AggregatingVariable", "CrossDeviceOps", "DistributedDataset", "DistributedIterator",
    "DistributedValues", "DistributedVariable", "HierarchicalCopyAllReduce", "InputContext",
    "InputOptions", "InputReplicationMode", "Mirrored", "MirroredStrategy", "MirroredVariable", "MultiWorkerMirroredStrategy",
    "NcclAllReduce", "OneDeviceStrategy", "ParameterServerStrategy", "PerReplica", "ReduceOp", "ReductionToOneDevice",
    "ReplicaContext", "Server", "ShardedVariable", "Strategy", "StrategyExtended", "SyncOnReadVariable", "TensorSpec", "Variable",
    "VariableAggregation", "VariableSynchronization", "cluster_resolver", "compat", "coordinator", "data", "errors", "experimental",
    "experimental_set_strategy", "function", "get_cross_replica_context", "get_replica_context",
    "get_strategy", "has_strategy", "in_cross_replica_context", "nn", "optim",
]

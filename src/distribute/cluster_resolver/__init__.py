"""Cluster resolvers: who are my peers, and who am I.

A multi-worker strategy needs to know the *cluster* (every task's address, grouped into
jobs) and this process's *task* (its job name and index). A :class:`ClusterResolver` reads
them from one source:

* :class:`TFConfigClusterResolver`: the ``TF_CONFIG`` JSON variable (the default);
* :class:`TorchrunClusterResolver`: the variables torchrun sets (``RANK``, ``WORLD_SIZE``, ...);
* :class:`SlurmClusterResolver`: the variables of a Slurm job step (``SLURM_PROCID``, ...);
* :class:`SimpleClusterResolver`: values given in code;
* :class:`UnionResolver`: the merge of several resolvers.

Glossary:

* **job** / **task type**: ``chief``, ``worker``, ``ps`` or ``evaluator``;
* **task**: one process, named ``job:index`` (``worker:1``), with an address ``host:port``;
* **chief**: the task that writes checkpoints (the ``chief`` task, else ``worker:0``);
* **id in cluster** (rank): the position in the training group, chief first
  (:func:`id_in_cluster`); the group's size is :func:`worker_count`.

This package is the only part of ``distribute`` that reads environment variables, and
every resolver reads them through an ``environ`` mapping (``os.environ`` by default). It
never opens a socket: a malformed configuration fails when the resolver is built, with an
error naming the field. ``python -m distribute.cluster_resolver`` prints what it resolves.
"""

from distribute.cluster_resolver._errors import (
    ClusterAllocationError,
    ClusterConfigError,
    ClusterConfigTypeError,
    ClusterMergeError,
    MissingEnvironmentError,
    TFConfigError,
)
from distribute.cluster_resolver.address import Address, format_address, parse_address
from distribute.cluster_resolver.base import (
    RPC_LAYERS,
    ClusterResolver,
    SimpleClusterResolver,
    UnionResolver,
    format_master_url,
)
from distribute.cluster_resolver.cluster_spec import ClusterSpec
from distribute.cluster_resolver.detect import RESOLVER_KINDS, detect_cluster_resolver
from distribute.cluster_resolver.roles import (
    TASK_TYPES,
    collective_leader,
    coordination_service_leader,
    id_in_cluster,
    is_chief,
    leader_task,
    validate_cluster_spec,
    worker_count,
)
from distribute.cluster_resolver.slurm import (
    SlurmClusterResolver,
    expand_hostlist,
    expand_tasks_per_node,
)
from distribute.cluster_resolver.tf_config import TF_CONFIG, TFConfigClusterResolver, make_tf_config
from distribute.cluster_resolver.torchrun import TORCHRUN_VARIABLES, TorchrunClusterResolver

__all__ = [
    "Address",
    "ClusterAllocationError",
    "ClusterConfigError",
    "ClusterConfigTypeError",
    "ClusterMergeError",
    "ClusterResolver",
    "ClusterSpec",
    "MissingEnvironmentError",
    "RESOLVER_KINDS",
    "RPC_LAYERS",
    "SimpleClusterResolver",
    "SlurmClusterResolver",
    "TASK_TYPES",
    "TFConfigClusterResolver",
    "TFConfigError",
    "TF_CONFIG",
    "TORCHRUN_VARIABLES",
    "TorchrunClusterResolver",
    "UnionResolver",
    "collective_leader",
    "coordination_service_leader",
    "detect_cluster_resolver",
    "expand_hostlist",
    "expand_tasks_per_node",
    "format_address",
    "format_master_url",
    "id_in_cluster",
    "is_chief",
    "leader_task",
    "make_tf_config",
    "parse_address",
    "validate_cluster_spec",
    "worker_count",
]

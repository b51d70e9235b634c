"""ClusterResolver: the interface that tells a strategy who its peers are and who it is.

A resolver answers four questions: the cluster (:meth:`ClusterResolver.cluster_spec`), this
process's task (``task_type``, ``task_id``), the address of a task as a URL
(:meth:`ClusterResolver.master`) and the local accelerators
(:meth:`ClusterResolver.num_accelerators`). Concrete resolvers read them from one source
each: ``TF_CONFIG``, Slurm, torchrun, or values given in code (:class:`SimpleClusterResolver`);
:class:`UnionResolver` merges several.
"""

from __future__ import annotations

import abc
from typing import Any, Dict, List, Mapping, Optional, Union

from distribute.cluster_resolver._devices import local_accelerators
from distribute.cluster_resolver._errors import (
    ClusterConfigError,
    ClusterConfigTypeError,
    ClusterMergeError,
    describe,
)
from distribute.cluster_resolver.cluster_spec import ClusterSpec

__all__ = [
    "RPC_LAYERS",
    "ClusterResolver",
    "SimpleClusterResolver",
    "UnionResolver",
    "format_master_url",
]

RPC_LAYERS = ("grpc", "grpc+verbs", "grpc+gdr", "grpc+mpi", "tcp", "gloo", "nccl")
"""The ``rpc_layer`` values accepted. Here an rpc layer is only the scheme of
:meth:`ClusterResolver.master`'s URL; ``'tcp'`` gives torch's ``init_method`` form."""


def format_master_url(master: str, rpc_layer: Optional[str] = None) -> str:
    """Returns ``'<rpc_layer>://<master>'``, or ``master`` alone when ``rpc_layer`` is empty.

    Example:
        >>> format_master_url("host:2222", "grpc")
        'grpc://host:2222'
    """
    return f"{rpc_layer}://{master}" if rpc_layer else master


def check_task_type(value: Any, field: str = "task_type") -> Optional[str]:
    """Returns ``value`` if it is None or a non-empty string, else raises."""
    if value is None:
        return None
    if not isinstance(value, str):
        raise ClusterConfigTypeError(describe(field, "a task type (a str) or None", value),
                                     field=field, value=value)
    if not value:
        raise ClusterConfigError(describe(field, "a non-empty task type such as 'worker'", value),
                                 field=field, value=value)
    return value


def check_task_id(value: Any, field: str = "task_id") -> Optional[int]:
    """Returns ``value`` if it is None or an int >= 0, else raises."""
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, int):
        raise ClusterConfigTypeError(describe(field, "a task index (an int) or None", value),
                                     field=field, value=value)
    if value < 0:
        raise ClusterConfigError(describe(field, "a non-negative task index", value),
                                 field=field, value=value)
    return int(value)


def check_rpc_layer(value: Any, field: str = "rpc_layer",
                    error: type = ClusterConfigError) -> Optional[str]:
    """Returns ``value`` if it is None, ``''`` or one of :data:`RPC_LAYERS`, else raises."""
    if value is None or value == "":
        return None if value is None else ""
    if not isinstance(value, str):
        raise ClusterConfigTypeError(describe(field, "a str or None", value),
                                     field=field, value=value)
    if value not in RPC_LAYERS:
        fix = "The rpc layer is the URL scheme of master(); leave it out if unsure."
        raise error(describe(field, f"one of {RPC_LAYERS}", value, fix), field=field, value=value)
    return str(value)


class ClusterResolver(abc.ABC):
    """Base class of the cluster resolvers.

    Subclasses implement :meth:`cluster_spec` and :meth:`master`. ``task_type``,
    ``task_id`` and ``rpc_layer`` are settable properties (None until known).

    Example:
        >>> resolver = SimpleClusterResolver(ClusterSpec({"worker": ["a:1", "b:1"]}),
        ...                                  task_type="worker", task_id=1)
        >>> resolver.master(), resolver.task_id
        ('', 1)
    """

    @abc.abstractmethod
    def cluster_spec(self) -> ClusterSpec:
        """Returns the current cluster as a :class:`ClusterSpec`."""

    @abc.abstractmethod
    def master(self, task_type: Optional[str] = None, task_id: Optional[int] = None,
               rpc_layer: Optional[str] = None) -> str:
        """Returns the URL (``rpc_layer://host:port``) of a task, by default this one."""

    def num_accelerators(self, task_type: Optional[str] = None, task_id: Optional[int] = None,
                         config_proto: Any = None) -> Dict[str, int]:
        """Counts this machine's accelerators by type: ``{'GPU': n}``, or ``{}`` without any.

        The arguments are checked and otherwise ignored: only local devices can be counted
        (``config_proto`` exists for TensorFlow compatibility).
        """
        check_task_type(task_type)
        check_task_id(task_id)
        return local_accelerators()

    @property
    def environment(self) -> Optional[str]:
        """The name of the environment the cluster runs in (``''`` unless a resolver knows)."""
        return ""

    _task_type: Optional[str] = None  # set by the setters below; None until a subclass sets them
    _task_id: Optional[int] = None
    _rpc_layer: Optional[str] = None

    @property
    def task_type(self) -> Optional[str]:
        """This process's job name (``'worker'``, ``'chief'``, ...), or None."""
        return self._task_type

    @task_type.setter
    def task_type(self, task_type: Optional[str]) -> None:
        self._task_type = check_task_type(task_type)

    @property
    def task_id(self) -> Optional[int]:
        """This process's index within its job, or None."""
        return self._task_id

    @task_id.setter
    def task_id(self, task_id: Optional[int]) -> None:
        self._task_id = check_task_id(task_id)

    @property
    def rpc_layer(self) -> Optional[str]:
        """The URL scheme :meth:`master` puts in front of addresses, or None."""
        return self._rpc_layer

    @rpc_layer.setter
    def rpc_layer(self, rpc_layer: Optional[str]) -> None:
        self._rpc_layer = check_rpc_layer(rpc_layer)


class SimpleClusterResolver(ClusterResolver):
    """A resolver that returns the values it was given.

    Args:
        cluster_spec: the cluster, a :class:`ClusterSpec` (wrap a dict in ``ClusterSpec``).
        master: the address :meth:`master` returns when no task is named.
        task_type: this process's job name, or None.
        task_id: this process's task index, or None.
        environment: the environment name (TensorFlow's meaning; ``''`` by default); ``None``
            means no environment, as in TensorFlow (``TFConfigClusterResolver().environment``
            is ``None``), and :attr:`environment` then returns ``None``.
        num_accelerators: what :meth:`num_accelerators` returns, e.g. ``{'GPU': 2}``.
        rpc_layer: the URL scheme of :meth:`master`, one of :data:`RPC_LAYERS`.

    Example:
        >>> spec = ClusterSpec({"worker": ["a:1", "b:2"]})
        >>> resolver = SimpleClusterResolver(spec, rpc_layer="grpc")
        >>> resolver.master(), resolver.master("worker", 1)
        ('grpc://', 'grpc://b:2')
    """

    def __init__(self, cluster_spec: ClusterSpec, master: str = "",
                 task_type: Optional[str] = None, task_id: Optional[int] = None,
                 environment: Optional[str] = "", num_accelerators: Optional[Mapping[str, int]] = None,
                 rpc_layer: Optional[str] = None) -> None:
        if not isinstance(cluster_spec, ClusterSpec):
            raise ClusterConfigTypeError(
                describe("cluster_spec", "a `distribute.cluster_resolver.ClusterSpec`",
                         cluster_spec, "Wrap the dict: ClusterSpec({'worker': [...]})."),
                field="cluster_spec", value=cluster_spec)
        self._cluster_spec = cluster_spec
        self._master = _check_str(master, "master")
        self._environment = None if environment is None else _check_str(environment, "environment")
        self._num_accelerators = _check_accelerators(num_accelerators)
        self.task_type = task_type
        self.task_id = task_id
        self.rpc_layer = rpc_layer

    def cluster_spec(self) -> ClusterSpec:
        """Returns the cluster given to the constructor."""
        return self._cluster_spec

    def master(self, task_type: Optional[str] = None, task_id: Optional[int] = None,
               rpc_layer: Optional[str] = None) -> str:
        """The address of task ``(task_type, task_id)`` when both are given, else ``master``.

        As in TensorFlow, an empty ``master`` with an rpc layer gives ``'grpc://'``.
        """
        check_task_type(task_type)
        check_task_id(task_id)
        layer = check_rpc_layer(rpc_layer) or self.rpc_layer
        if task_type is not None and task_id is not None:
            return format_master_url(self._cluster_spec.task_address(task_type, task_id), layer)
        return format_master_url(self._master, layer)

    def num_accelerators(self, task_type: Optional[str] = None, task_id: Optional[int] = None,
                         config_proto: Any = None) -> Dict[str, int]:
        """Returns the ``num_accelerators`` given to the constructor, or ``{}``."""
        check_task_type(task_type)
        check_task_id(task_id)
        return dict(self._num_accelerators)

    @property
    def environment(self) -> Optional[str]:
        """The environment name given to the constructor (``None`` when it was given ``None``)."""
        return self._environment


def _check_str(value: Any, field: str) -> str:
    if not isinstance(value, str):
        fix = ("Pass environment variables as environ=..." if field == "environment"
               and isinstance(value, Mapping) else "")
        expected = "a str (an environment name such as 'google') or None" if field == "environment" else "a str"
        raise ClusterConfigTypeError(describe(field, expected, value, fix), field=field, value=value)
    return value


def _check_accelerators(value: Any) -> Dict[str, int]:
    if value is None:
        return {}
    ok = isinstance(value, Mapping) and all(
        isinstance(k, str) and isinstance(n, int) and not isinstance(n, bool) and n >= 0
        for k, n in value.items())
    if not ok:
        raise ClusterConfigTypeError(
            describe("num_accelerators", "a dict {device_type: count >= 0}, e.g. {'GPU': 2}",
                     value), field="num_accelerators", value=value)
    return dict(value)


class UnionResolver(ClusterResolver):
    """Merges the clusters of several resolvers; the first one answers everything else.

    Jobs are merged one by one. When every resolver gives a job as a list (indices
    ``0..n-1``), the lists are concatenated in resolver order. When any gives a dict (a
    sparse job), the lists are read as ``{index: address}`` and the dicts merged; an index
    given twice raises :class:`ClusterMergeError` (a ``KeyError``).

    ``task_type``, ``task_id``, ``rpc_layer``, ``environment``, ``num_accelerators`` and
    :meth:`master` (without a task) come from the first resolver unless given here. Unlike
    TensorFlow, ``task_id=0`` does override.

    Args:
        *resolvers: one or more :class:`ClusterResolver`.
        rpc_layer: overrides the first resolver's rpc layer.
        task_type: overrides the first resolver's task type.
        task_id: overrides the first resolver's task id (0 included).

    Example:
        >>> a = SimpleClusterResolver(ClusterSpec({"worker": ["a:1", "b:1"]}))
        >>> b = SimpleClusterResolver(ClusterSpec({"worker": ["c:1"], "ps": ["p:1"]}))
        >>> UnionResolver(a, b).cluster_spec().as_dict()
        {'worker': ['a:1', 'b:1', 'c:1'], 'ps': ['p:1']}
    """

    def __init__(self, *resolvers: ClusterResolver, rpc_layer: Optional[str] = None,
                 task_type: Optional[str] = None, task_id: Optional[int] = None,
                 **unexpected: Any) -> None:
        if unexpected:
            raise ClusterConfigError(
                f"Unexpected kwargs provided {unexpected!r}; UnionResolver accepts rpc_layer, "
                f"task_type and task_id.", field="kwargs", value=unexpected)
        if not resolvers:
            raise ClusterConfigError("At least one ClusterResolver is required.",
                                     field="resolvers", value=resolvers)
        for position, resolver in enumerate(resolvers):
            if not isinstance(resolver, ClusterResolver):
                raise ClusterConfigTypeError(
                    describe(f"resolvers[{position}]", "a ClusterResolver", resolver,
                             "All arguments must be a sub-class of `ClusterResolver`."),
                    field=f"resolvers[{position}]", value=resolver)
        self._resolvers = resolvers
        self._task_type = check_task_type(task_type)
        self._task_id = check_task_id(task_id)
        self._rpc_layer = check_rpc_layer(rpc_layer)

    def cluster_spec(self) -> ClusterSpec:
        """Returns the merged cluster of all the resolvers."""
        forms: Dict[str, List[Union[List[str], Dict[int, str]]]] = {}
        for resolver in self._resolvers:
            for job, tasks in resolver.cluster_spec().as_dict().items():
                forms.setdefault(job, []).append(tasks)
        return ClusterSpec({job: _merge_job(job, parts) for job, parts in forms.items()})

    def master(self, task_type: Optional[str] = None, task_id: Optional[int] = None,
               rpc_layer: Optional[str] = None) -> str:
        """The address of a task of the merged cluster, or the first resolver's master."""
        check_task_type(task_type)
        check_task_id(task_id)
        layer = check_rpc_layer(rpc_layer) or self.rpc_layer
        if task_type is not None and task_id is not None:
            return format_master_url(self.cluster_spec().task_address(task_type, task_id), layer)
        return self._resolvers[0].master(rpc_layer=layer)

    def num_accelerators(self, task_type: Optional[str] = None, task_id: Optional[int] = None,
                         config_proto: Any = None) -> Dict[str, int]:
        """The first resolver's answer."""
        return self._resolvers[0].num_accelerators(task_type, task_id, config_proto)

    @property
    def environment(self) -> Optional[str]:
        """The first resolver's environment."""
        return self._resolvers[0].environment

    @property
    def task_type(self) -> Optional[str]:
        """The task type given here, else the first resolver's."""
        return self._task_type if self._task_type is not None else self._resolvers[0].task_type

    @task_type.setter
    def task_type(self, task_type: Optional[str]) -> None:
        self._task_type = check_task_type(task_type)

    @property
    def task_id(self) -> Optional[int]:
        """The task id given here (0 included), else the first resolver's."""
        return self._task_id if self._task_id is not None else self._resolvers[0].task_id

    @task_id.setter
    def task_id(self, task_id: Optional[int]) -> None:
        self._task_id = check_task_id(task_id)

    @property
    def rpc_layer(self) -> Optional[str]:
        """The rpc layer given here, else the first resolver's."""
        return self._rpc_layer if self._rpc_layer is not None else self._resolvers[0].rpc_layer

    @rpc_layer.setter
    def rpc_layer(self, rpc_layer: Optional[str]) -> None:
        self._rpc_layer = check_rpc_layer(rpc_layer)


def _merge_job(job: str, parts: List[Union[List[str], Dict[int, str]]]
               ) -> Union[List[str], Dict[int, str]]:
    lists = [part for part in parts if isinstance(part, list)]
    if len(lists) == len(parts):
        return [address for part in lists for address in part]
    merged: Dict[int, str] = {}
    for part in parts:
        tasks: Dict[int, str] = dict(enumerate(part)) if isinstance(part, list) else part
        overlap = merged.keys() & tasks.keys()
        if overlap:
            raise ClusterMergeError(
                f"Duplicate keys detected when merging two ClusterSpecs: {overlap} (job "
                f"{job!r}). Give each resolver different task indices for this job.")
        merged.update(tasks)
    return merged

"""SlurmClusterResolver: a cluster laid out over the nodes of a Slurm job step.

Slurm starts one process per task (``srun``) and tells each its rank (``SLURM_PROCID``),
the nodes (``SLURM_STEP_NODELIST``, compressed: ``'n[01-03],gpu7'``) and the tasks per
node (``SLURM_STEP_TASKS_PER_NODE``, compressed: ``'2(x3),1'``). The resolver gives task
``t`` of a node the address ``node:port_base+t`` and its own slice of the node's GPUs,
takes the nodes in sorted order and deals the tasks to the jobs in sorted job-name order.
"""

from __future__ import annotations

import itertools
import re
from typing import Any, Dict, Iterator, List, Mapping, Optional, Tuple, Union

from distribute.cluster_resolver import _env
from distribute.cluster_resolver._devices import local_accelerators
from distribute.cluster_resolver._errors import (
    ClusterAllocationError,
    ClusterConfigError,
    ClusterConfigTypeError,
    describe,
)
from distribute.cluster_resolver.address import format_address, parse_address
from distribute.cluster_resolver.base import (
    ClusterResolver,
    check_rpc_layer,
    check_task_id,
    check_task_type,
    format_master_url,
)
from distribute.cluster_resolver.cluster_spec import ClusterSpec

__all__ = ["SlurmClusterResolver", "expand_hostlist", "expand_tasks_per_node"]

_HINT = "Not running inside a SLURM step? Start the job with srun."
_RANGE = re.compile(r"([0-9]+)(?:-([0-9]+))?\Z")
_TASKS = re.compile(r"([0-9]+)(?:\(x([0-9]+)\))?\Z")


def _split_top_level(hostlist: str, field: str) -> Iterator[str]:
    depth, start = 0, 0
    for position, char in enumerate(hostlist + ","):
        if char in "[]":
            depth += 1 if char == "[" else -1
            if depth not in (0, 1):
                raise ClusterConfigError(describe(field, "a Slurm host list with balanced, "
                                                  "unnested brackets", hostlist), field=field,
                                         value=hostlist)
        elif char == "," and depth == 0:
            item = hostlist[start:position]
            if not item:
                raise ClusterConfigError(describe(field, "a Slurm host list without empty items",
                                                  hostlist), field=field, value=hostlist)
            yield item
            start = position + 1
    if depth:
        raise ClusterConfigError(describe(field, "a Slurm host list with balanced brackets",
                                          hostlist), field=field, value=hostlist)


def _expand_range(expression: str, hostlist: str, field: str) -> List[str]:
    values: List[str] = []
    for part in expression.split(","):
        match = _RANGE.match(part)
        if not match or (match.group(2) and int(match.group(2)) < int(match.group(1))):
            raise ClusterConfigError(
                describe(field, "ranges such as '[1-3,7,09-11]' with low <= high", hostlist),
                field=field, value=hostlist)
        low, high = match.group(1), match.group(2) or match.group(1)
        values.extend(str(i).zfill(len(low)) for i in range(int(low), int(high) + 1))
    return values


def expand_hostlist(hostlist: str, field: str = "hostlist") -> List[str]:
    """Expands a compressed Slurm host list; zero padding is kept and nothing deduplicated.

    Any number of bracket groups per host is accepted (``'r[1-2]-n[1-2]'``).

    Example:
        >>> expand_hostlist("n[1-2],m5,o[3-4,6,7-9]")
        ['n1', 'n2', 'm5', 'o3', 'o4', 'o6', 'o7', 'o8', 'o9']
    """
    if not isinstance(hostlist, str):
        raise ClusterConfigTypeError(describe(field, "a str", hostlist), field=field,
                                     value=hostlist)
    hosts: List[str] = []
    for item in _split_top_level(hostlist, field):
        pieces = re.split(r"\[([^\]]*)\]", item)
        choices = [[piece] if i % 2 == 0 else _expand_range(piece, hostlist, field)
                   for i, piece in enumerate(pieces)]
        hosts.extend("".join(combination) for combination in itertools.product(*choices))
    return hosts


def expand_tasks_per_node(tasks_per_node: str, field: str = "tasks_per_node") -> List[int]:
    """Expands Slurm's compressed tasks-per-node list.

    Example:
        >>> expand_tasks_per_node("3(x2),2,1")
        [3, 3, 2, 1]
    """
    if not isinstance(tasks_per_node, str):
        raise ClusterConfigTypeError(describe(field, "a str", tasks_per_node), field=field,
                                     value=tasks_per_node)
    counts: List[int] = []
    for part in tasks_per_node.split(","):
        match = _TASKS.match(part)
        if not match or match.group(2) == "0" or match.group(1) == "0":
            raise ClusterConfigError(describe(field, "a list such as '3(x2),2,1' (positive "
                                              "counts)", tasks_per_node), field=field,
                                     value=tasks_per_node)
        counts.extend([int(match.group(1))] * int(match.group(2) or 1))
    return counts


def _check_count(name: str, value: Any, minimum: int, maximum: Optional[int] = None) -> int:
    if isinstance(value, bool) or not isinstance(value, int):
        raise ClusterConfigTypeError(describe(name, "an int", value), field=name, value=value)
    if value < minimum or (maximum is not None and value > maximum):
        bounds = f"from {minimum} to {maximum}" if maximum is not None else f">= {minimum}"
        raise ClusterConfigError(describe(name, f"an int {bounds}", value), field=name,
                                 value=value)
    return value


def _check_jobs(jobs: Any) -> Dict[str, int]:
    if not isinstance(jobs, Mapping) or not jobs or not all(isinstance(k, str) and k for k in jobs):
        raise ClusterConfigTypeError(
            describe("jobs", "a dict {job name: number of tasks}, e.g. {'ps': 1, 'worker': 3}",
                     jobs), field="jobs", value=jobs)
    return {job: _check_count(f"jobs[{job!r}]", n, 0) for job, n in sorted(jobs.items())}


class SlurmClusterResolver(ClusterResolver):
    """Resolves the cluster from the variables of a Slurm job step.

    Args:
        jobs: ``{job name: number of tasks}``; default ``{'worker': SLURM_STEP_NUM_TASKS}``.
        port_base: the port of the first task on each node; task ``t`` uses ``port_base+t``.
        gpus_per_node: GPUs on each node; default: the entries of ``CUDA_VISIBLE_DEVICES``,
            else the CUDA devices torch sees.
        gpus_per_task: GPUs given to each task; default ``gpus_per_node // max tasks per node``.
        tasks_per_node: an int for every node, a dict ``{host: n}``, or None to use
            ``SLURM_STEP_NODELIST`` and ``SLURM_STEP_TASKS_PER_NODE``.
        auto_set_gpu: whether :meth:`cluster_spec` sets ``CUDA_VISIBLE_DEVICES`` in
            ``environ`` to this task's GPUs (it must then be mutable).
        rpc_layer: the URL scheme of :meth:`master`.
        environ: the environment variables; ``None`` means ``os.environ``.

    Raises:
        MissingEnvironmentError: a needed ``SLURM_*`` variable is unset (a RuntimeError).
        ClusterConfigError: a variable or argument has a wrong value.
        ClusterAllocationError: more tasks or GPUs were requested than Slurm assigned.

    Example:
        >>> env = {"SLURM_PROCID": "1", "SLURM_STEP_NUM_TASKS": "2",
        ...        "SLURM_STEP_NODELIST": "n[1-2]", "SLURM_STEP_TASKS_PER_NODE": "1(x2)"}
        >>> resolver = SlurmClusterResolver(gpus_per_node=0, environ=env)
        >>> resolver.cluster_spec().as_dict(), resolver.get_task_info()
        ({'worker': ['n1:8888', 'n2:8888']}, ('worker', 1))
    """

    def __init__(self, jobs: Optional[Mapping[str, int]] = None, port_base: int = 8888,
                 gpus_per_node: Optional[int] = None, gpus_per_task: Optional[int] = None,
                 tasks_per_node: Union[None, int, Mapping[str, int]] = None,
                 auto_set_gpu: bool = True, rpc_layer: Optional[str] = "grpc", *,
                 environ: Optional[Mapping[str, str]] = None) -> None:
        if not isinstance(auto_set_gpu, bool):
            raise ClusterConfigTypeError(describe("auto_set_gpu", "a bool", auto_set_gpu),
                                         field="auto_set_gpu", value=auto_set_gpu)
        self._environ = _env.resolve_environ(environ)
        self._writable = _env.resolve_mutable_environ(environ) if auto_set_gpu else None
        self.rpc_layer = rpc_layer
        self._rank = self._read_int("SLURM_PROCID")
        self._jobs = _check_jobs(jobs) if jobs is not None else {
            "worker": self._read_int("SLURM_STEP_NUM_TASKS", minimum=1)}
        self._port_base = _check_count("port_base", port_base, 1, 65535)
        self._nodes = self._task_configuration(tasks_per_node)
        self._check_tasks()
        self._gpus_per_node = (self._count_gpus() if gpus_per_node is None
                               else _check_count("gpus_per_node", gpus_per_node, 0))
        self._gpus_per_task = self._check_gpus(gpus_per_task)
        self._addresses, self._gpu_ids = self._allocate()
        self._cluster, task = self._assign_jobs()
        self._task_type, self._task_id = task

    def _read_int(self, name: str, minimum: int = 0) -> int:
        return _env.read_int(name, _env.require(self._environ, name, _HINT), minimum)

    def _task_configuration(self, tasks_per_node: Any) -> Dict[str, int]:
        if isinstance(tasks_per_node, Mapping):
            return {_host(h, "tasks_per_node"): _check_count(f"tasks_per_node[{h!r}]", n, 1)
                    for h, n in tasks_per_node.items()}
        count = (None if tasks_per_node is None
                 else _check_count("tasks_per_node", tasks_per_node, 1))
        hosts = [_host(host, "SLURM_STEP_NODELIST") for host in expand_hostlist(
            _env.require(self._environ, "SLURM_STEP_NODELIST", _HINT), "SLURM_STEP_NODELIST")]
        if count is not None:
            return {host: count for host in hosts}
        counts = expand_tasks_per_node(
            _env.require(self._environ, "SLURM_STEP_TASKS_PER_NODE", _HINT),
            "SLURM_STEP_TASKS_PER_NODE")
        if len(counts) != len(hosts):
            raise ClusterConfigError(
                describe("SLURM_STEP_TASKS_PER_NODE", f"{len(hosts)} counts, one per node of "
                         "SLURM_STEP_NODELIST", counts), field="SLURM_STEP_TASKS_PER_NODE",
                value=counts)
        return dict(zip(hosts, counts, strict=True))

    def _check_tasks(self) -> None:
        assigned, requested = sum(self._nodes.values()), sum(self._jobs.values())
        if requested > assigned:
            raise ClusterAllocationError(
                f"Requested {requested} tasks but only {assigned} were assigned "
                f"(jobs={self._jobs}, tasks per node={self._nodes}). Ask Slurm for more tasks "
                f"or request fewer in `jobs`.")
        if self._rank >= assigned:
            raise ClusterConfigError(describe("SLURM_PROCID", f"a rank below {assigned}, the "
                                              "number of tasks assigned", self._rank),
                                     field="SLURM_PROCID", value=self._rank)
        last_port = self._port_base + max(self._nodes.values()) - 1
        if last_port > 65535:
            raise ClusterConfigError(describe("port_base", "a port that leaves room for every "
                                              f"task of a node (last port {last_port} > 65535)",
                                              self._port_base), field="port_base",
                                     value=self._port_base)

    def _count_gpus(self) -> int:
        visible = _env.get(self._environ, "CUDA_VISIBLE_DEVICES")
        if visible is None:
            return local_accelerators().get("GPU", 0)
        if visible.strip() in ("", "NoDevFiles"):
            return 0
        return len(visible.split(","))

    def _check_gpus(self, gpus_per_task: Optional[int]) -> int:
        most = max(self._nodes.values())
        per_task = (self._gpus_per_node // most if gpus_per_task is None
                    else _check_count("gpus_per_task", gpus_per_task, 0))
        if per_task * most > self._gpus_per_node:
            raise ClusterAllocationError(
                f"Requested more GPUs per node than available: {most} tasks x {per_task} GPUs "
                f"> gpus_per_node={self._gpus_per_node}. Lower gpus_per_task or tasks per node.")
        return per_task

    def _allocate(self) -> Tuple[List[str], List[List[int]]]:
        addresses: List[str] = []
        gpu_ids: List[List[int]] = []
        step = self._gpus_per_task
        for host, count in sorted(self._nodes.items()):
            for slot in range(count):
                addresses.append(format_address(host, self._port_base + slot))
                gpu_ids.append(list(range(slot * step, (slot + 1) * step)))
        return addresses, gpu_ids

    def _assign_jobs(self) -> Tuple[ClusterSpec, Tuple[Optional[str], Optional[int]]]:
        cluster: Dict[str, List[str]] = {}
        task: Tuple[Optional[str], Optional[int]] = (None, None)
        start = 0
        for job, count in self._jobs.items():
            cluster[job] = self._addresses[start:start + count]
            if start <= self._rank < start + count:
                task = (job, self._rank - start)
            start += count
        return ClusterSpec(cluster), task

    def cluster_spec(self) -> ClusterSpec:
        """The cluster; also sets ``CUDA_VISIBLE_DEVICES`` when ``auto_set_gpu`` is on.

        The variable is set only when tasks get GPUs (``gpus_per_task > 0``); it must be set
        before CUDA is first used to take effect.
        """
        if self._writable is not None and self._gpus_per_task:
            self._writable["CUDA_VISIBLE_DEVICES"] = ",".join(map(str, self.assigned_gpus))
        return self._cluster

    def get_task_info(self) -> Tuple[Optional[str], Optional[int]]:
        """Returns ``(task_type, task_id)``; None for a rank beyond the requested jobs."""
        return self.task_type, self.task_id

    def master(self, task_type: Optional[str] = None, task_id: Optional[int] = None,
               rpc_layer: Optional[str] = None) -> str:
        """The URL of a task, by default this one; ``''`` when this rank has no task."""
        task_type = check_task_type(task_type) if task_type is not None else self.task_type
        task_id = check_task_id(task_id) if task_id is not None else self.task_id
        if task_type is None or task_id is None:
            return ""
        layer = check_rpc_layer(rpc_layer) or self.rpc_layer
        return format_master_url(self._cluster.task_address(task_type, task_id), layer)

    def num_accelerators(self, task_type: Optional[str] = None, task_id: Optional[int] = None,
                         config_proto: Any = None) -> Dict[str, int]:
        """``{'GPU': gpus_per_task}``."""
        check_task_type(task_type)
        check_task_id(task_id)
        return {"GPU": self._gpus_per_task}

    @property
    def assigned_gpus(self) -> List[int]:
        """The GPU ids of this rank on its node (empty without GPUs)."""
        return list(self._gpu_ids[self._rank])


def _host(host: Any, field: str) -> str:
    if not isinstance(host, str) or not host:
        raise ClusterConfigTypeError(describe(f"{field} key", "a host name", host),
                                     field=field, value=host)
    try:
        parse_address(format_address(host, 1), field)
    except ClusterConfigError:
        raise ClusterConfigError(describe(field, "host names (letters, digits, '-', '_', dots)",
                                          host), field=field, value=host) from None
    return host

"""ClusterSpec: the jobs of a cluster and the address of every task.

A cluster is a set of *jobs* (``"chief"``, ``"worker"``, ``"ps"``, ``"evaluator"``); each job
has *tasks* numbered by an index, each task an address ``host:port``. A spec is immutable,
and checked when it is built: every address must be a valid ``host:port`` and no two tasks
may share one, so a typo fails here rather than as a connection timeout later.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, Callable, Dict, Iterator, List, Optional, Tuple, Type, Union

from distribute.cluster_resolver._errors import (
    ClusterConfigError,
    ClusterConfigTypeError,
    describe,
    short_repr,
)
from distribute.cluster_resolver.address import parse_address
from distribute.errors import InvalidArgumentError

__all__ = ["ClusterSpec"]

Tasks = Dict[int, str]
Jobs = Dict[str, Tasks]
ClusterLike = Union["ClusterSpec", Mapping[str, Any]]

_CLUSTER_TYPE_MESSAGE = (
    "`cluster` must be a dictionary mapping one or more job names to lists of network "
    "addresses, or a `ClusterSpec`; received {value}. Example: "
    "ClusterSpec({{'worker': ['host0:2222', 'host1:2222']}})."
)


def _field(root: str, *keys: object) -> str:
    return root + "".join(f"[{key!r}]" for key in keys)


@dataclass(frozen=True)
class _Checker:
    """Checks one cluster mapping; ``root`` names it in messages (``TF_CONFIG['cluster']``)."""

    root: str
    string_indices: bool
    type_error: Callable[..., Exception]
    value_error: Type[ClusterConfigError]

    def job_name(self, job: object) -> str:
        fix = "Use names such as 'worker' or 'ps'."
        if not isinstance(job, str):
            raise self.type_error(describe(f"{self.root} key", "a job name (a string)", job, fix),
                                  field=self.root, value=job)
        if not job or any(c in job for c in "/: \t\n"):
            raise self.value_error(
                describe(f"{self.root} key", "a job name without '/', ':' or spaces", job, fix),
                field=self.root, value=job)
        return job

    def task_index(self, key: object, field: str) -> int:
        if self.string_indices and isinstance(key, str) and key.isascii() and key.isdigit():
            return int(key)
        if isinstance(key, bool) or not isinstance(key, int):
            raise self.type_error(
                describe(f"{field} key", "a task index (an int)", key,
                         "Write sparse jobs as {0: 'host:port', 3: 'host:port'}."),
                field=field, value=key)
        if key < 0:
            raise self.value_error(describe(f"{field} key", "a non-negative task index", key),
                                   field=field, value=key)
        return key

    def items(self, job: str, tasks: Any) -> List[Tuple[int, Any]]:
        field = _field(self.root, job)
        if isinstance(tasks, (list, tuple)):
            return list(enumerate(tasks))
        if isinstance(tasks, Mapping):
            return [(self.task_index(k, field), v) for k, v in tasks.items()]
        raise self.type_error(
            f"The tasks for job {job!r} must be a list or a dictionary from integers to "
            f"strings; received {field}={short_repr(tasks)}. Example: ['host0:2222', "
            f"'host1:2222'] or {{0: 'host0:2222'}}.", field=field, value=tasks)

    def tasks(self, job: str, tasks: Any) -> Tasks:
        result: Tasks = {}
        for index, address in sorted(self.items(job, tasks), key=lambda item: item[0]):
            field = _field(self.root, job, index)
            if index in result:
                raise self.value_error(describe(f"{_field(self.root, job)} key",
                                                "each task index once", index),
                                       field=field, value=index)
            parse_address(address, field, self.value_error, self.type_error)
            result[index] = address
        return result


def normalize_cluster(
    cluster: Any,
    root: str = "cluster",
    *,
    string_indices: bool = False,
    type_error: Callable[..., Exception] = ClusterConfigTypeError,
    value_error: Type[ClusterConfigError] = ClusterConfigError,
) -> Jobs:
    """Checks a ``{job: [addresses] or {index: address}}`` mapping; returns ``{job: {i: addr}}``.

    ``root`` names the value in error messages; ``string_indices`` accepts ``{"1": addr}``
    (how JSON writes integer keys). Duplicate addresses are checked too.
    """
    if not isinstance(cluster, Mapping):
        raise type_error(_CLUSTER_TYPE_MESSAGE.format(value=f"{root}={short_repr(cluster)}"),
                         field=root, value=cluster)
    checker = _Checker(root, string_indices, type_error, value_error)
    jobs = {checker.job_name(job): checker.tasks(job, tasks) for job, tasks in cluster.items()}
    check_unique_addresses(jobs, root, value_error)
    return jobs


def check_unique_addresses(jobs: Jobs, root: str = "cluster",
                           value_error: Type[ClusterConfigError] = ClusterConfigError) -> None:
    """Raises if two tasks share an address (compared without case, IPv6 normalised)."""
    seen: Dict[Tuple[str, int], str] = {}
    for job, tasks in jobs.items():
        for index, address in tasks.items():
            key = parse_address(address).key()
            where = _field(root, job, index)
            if key in seen:
                raise value_error(
                    describe(where, "an address no other task uses", address,
                             f"{seen[key]} has the same address; give every task its own "
                             f"host:port."), field=where, value=address)
            seen[key] = where


class ClusterSpec:
    """The jobs of a cluster and the address of each of their tasks.

    Args:
        cluster: a dict mapping each job name to a list of ``'host:port'`` strings (task
            ``i`` is the ``i``-th address) or to a dict ``{index: 'host:port'}`` for jobs
            whose indices are not ``0..n-1``; or another ``ClusterSpec``.

    Raises:
        ClusterConfigTypeError: (a ``TypeError``) ``cluster`` or a job's tasks have the
            wrong type.
        ClusterConfigError: (a ``ValueError``) an address is not ``host:port`` or two tasks
            share one.

    Example:
        >>> spec = ClusterSpec({"chief": ["c0:2222"], "worker": {1: "w1:2222", 3: "w3:2222"}})
        >>> spec.jobs
        ['chief', 'worker']
        >>> spec.task_indices("worker"), spec.task_address("worker", 3)
        ([1, 3], 'w3:2222')
        >>> spec.as_dict()["chief"]
        ['c0:2222']
    """

    __slots__ = ("_jobs",)

    def __init__(self, cluster: ClusterLike) -> None:
        if isinstance(cluster, ClusterSpec):
            # A spec built from a spec comes out with its jobs sorted, as in TensorFlow.
            self._jobs: Jobs = {job: dict(cluster._jobs[job]) for job in sorted(cluster._jobs)}
        else:
            self._jobs = normalize_cluster(cluster)

    @classmethod
    def _from_checked(cls, jobs: Jobs) -> "ClusterSpec":
        """Builds a spec from the output of :func:`normalize_cluster`, without checking again."""
        spec = cls.__new__(cls)
        spec._jobs = {job: dict(sorted(tasks.items())) for job, tasks in jobs.items()}
        return spec

    @property
    def jobs(self) -> List[str]:
        """The job names, in the order they were given."""
        return list(self._jobs)

    def as_dict(self) -> Dict[str, Union[List[str], Dict[int, str]]]:
        """Returns ``{job: tasks}``: a list when the indices are ``0..n-1``, else a dict."""
        return {job: _compact(tasks) for job, tasks in self._jobs.items()}

    def num_tasks(self, job_name: str) -> int:
        """The number of tasks of ``job_name``."""
        return len(self._tasks(job_name))

    def task_indices(self, job_name: str) -> List[int]:
        """The task indices of ``job_name``, sorted."""
        return list(self._tasks(job_name))

    def task_address(self, job_name: str, task_index: int) -> str:
        """The address of task ``task_index`` of ``job_name``."""
        tasks = self._tasks(job_name)
        if isinstance(task_index, bool) or not isinstance(task_index, int):
            raise ClusterConfigTypeError(
                describe("task_index", "an int", task_index), field="task_index", value=task_index)
        if task_index not in tasks:
            raise InvalidArgumentError(
                f"No task with index {task_index} in job {job_name!r}; its task indices are "
                f"{list(tasks)}.")
        return tasks[task_index]

    def job_tasks(self, job_name: str) -> List[Optional[str]]:
        """The addresses of ``job_name`` as a dense list, ``None`` where an index is missing."""
        tasks = self._tasks(job_name)
        size = max(tasks) + 1 if tasks else 0
        return [tasks.get(i) for i in range(size)]

    def tasks(self) -> Iterator[Tuple[str, int, str]]:
        """Yields ``(job, index, address)`` for every task, jobs in order, indices sorted."""
        for job, tasks in self._jobs.items():
            for index, address in tasks.items():
                yield job, index, address

    def _tasks(self, job_name: str) -> Tasks:
        if not isinstance(job_name, str):
            raise ClusterConfigTypeError(
                describe("job_name", "a job name (a string)", job_name),
                field="job_name", value=job_name)
        if job_name not in self._jobs:
            raise InvalidArgumentError(
                f"No such job in cluster: {job_name!r}. The cluster's jobs are {self.jobs}.")
        return self._jobs[job_name]

    def __bool__(self) -> bool:
        return bool(self._jobs)

    def _canonical(self) -> Tuple[Tuple[str, Tuple[Tuple[int, str], ...]], ...]:
        return tuple((job, tuple(self._jobs[job].items())) for job in sorted(self._jobs))

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, ClusterSpec):
            return NotImplemented
        return self._canonical() == other._canonical()

    def __hash__(self) -> int:
        return hash(self._canonical())

    def __repr__(self) -> str:
        jobs = {job: _compact(self._jobs[job]) for job in sorted(self._jobs)}
        return f"ClusterSpec({jobs!r})"

    __str__ = __repr__


def _compact(tasks: Tasks) -> Union[List[str], Dict[int, str]]:
    if list(tasks) == list(range(len(tasks))):
        return list(tasks.values())
    return dict(tasks)

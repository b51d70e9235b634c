"""Roles of the tasks in a multi-worker cluster: who is chief, who has which rank.

The four task types are:

* ``chief``: trains like a worker, and also writes checkpoints and summaries;
* ``worker``: trains;
* ``ps``: holds variables (parameter-server training only); it has no rank;
* ``evaluator``: evaluates side by side, outside the training group; it is its own chief.

The training group is the chief (if any) followed by the workers: the chief has rank
(``id_in_cluster``) 0 and worker ``i`` has rank ``i + number of chiefs``. Without a chief,
worker 0 is the chief. An empty cluster is a single-worker job, whose only task is chief
with rank 0 in a group of 1.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, Optional, Tuple, Union

from distribute.cluster_resolver._errors import ClusterConfigError, ClusterConfigTypeError, describe
from distribute.cluster_resolver.cluster_spec import ClusterSpec

__all__ = [
    "TASK_TYPES",
    "collective_leader",
    "coordination_service_leader",
    "id_in_cluster",
    "is_chief",
    "leader_task",
    "validate_cluster_spec",
    "worker_count",
]

TASK_TYPES = ("chief", "worker", "evaluator", "ps")
"""The task types a multi-worker cluster may contain."""

ClusterArg = Union[ClusterSpec, Mapping[str, Any], None]


def _as_spec(cluster_spec: ClusterArg) -> ClusterSpec:
    if cluster_spec is None:
        return ClusterSpec({})
    if isinstance(cluster_spec, ClusterSpec):
        return cluster_spec
    if isinstance(cluster_spec, Mapping):
        return ClusterSpec(cluster_spec)
    raise ClusterConfigTypeError(
        describe("cluster_spec", "a ClusterSpec, a dict or None", cluster_spec),
        field="cluster_spec", value=cluster_spec)


def _check_task_id(task_id: object) -> None:
    if task_id is None:
        return
    if isinstance(task_id, bool) or not isinstance(task_id, int):
        raise ClusterConfigTypeError(describe("task_id", "an int or None", task_id),
                                     field="task_id", value=task_id)
    if task_id < 0:
        raise ClusterConfigError(describe("task_id", "a non-negative int", task_id),
                                 field="task_id", value=task_id)


def validate_cluster_spec(cluster_spec: ClusterArg, task_type: Optional[str],
                          task_id: Optional[int]) -> None:
    """Checks that a cluster and a task fit the multi-worker rules.

    The rules: only the job names of :data:`TASK_TYPES`; at most one chief and one evaluator;
    ``task_type`` is one of the cluster's jobs (an evaluator may be left out of the
    cluster); ``task_id`` is one of that job's task indices. An empty cluster accepts any
    task.

    Raises:
        ClusterConfigError: a rule is broken; the message says which.
    """
    spec = _as_spec(cluster_spec)
    _check_task_id(task_id)
    bad = [job for job in spec.jobs if job not in TASK_TYPES]
    if bad:
        raise ClusterConfigError(
            f"Disallowed task type found in cluster spec: {bad}. Allowed types are "
            f"{TASK_TYPES}; the cluster spec is {spec!r}.", field="cluster_spec", value=bad)
    if task_type is not None and task_type not in TASK_TYPES:
        raise ClusterConfigError(
            describe("task_type", f"one of {TASK_TYPES}", task_type), field="task_type",
            value=task_type)
    if not spec:
        return
    for job in ("chief", "evaluator"):
        if job in spec.jobs and spec.num_tasks(job) > 1:
            tasks = spec.as_dict()[job]
            raise ClusterConfigError(
                f"There must be at most one {job!r} task; the cluster has "
                f"{spec.num_tasks(job)}: {tasks!r}.", field=job, value=tasks)
    _check_task_in_spec(spec, task_type, task_id)


def _check_task_in_spec(spec: ClusterSpec, task_type: Optional[str],
                        task_id: Optional[int]) -> None:
    if task_type is None:
        return
    if task_type not in spec.jobs and task_type != "evaluator":
        raise ClusterConfigError(
            describe("task_type", f"one of the cluster's jobs {spec.jobs}", task_type),
            field="task_type", value=task_type)
    if task_id is None:
        return
    indices = spec.task_indices(task_type) if task_type in spec.jobs else [0]
    if task_id not in indices:
        raise ClusterConfigError(
            f"The `task_id` {task_id} exceeds the maximum id of {task_type}: the task indices "
            f"of {task_type!r} are {indices}.", field="task_id", value=task_id)


def is_chief(cluster_spec: ClusterArg = None, task_type: Optional[str] = None,
             task_id: Optional[int] = None) -> bool:
    """True for the task that writes checkpoints and summaries.

    That is the chief; else, when the cluster has no chief, the first worker (``worker:0``);
    and an evaluator, which is its own chief. An empty cluster is one chief task.

    Example:
        >>> is_chief({"worker": ["a:1", "b:1"]}, "worker", 0)
        True
    """
    spec = _as_spec(cluster_spec)
    if not spec:
        return True
    validate_cluster_spec(spec, task_type, task_id)
    if task_type in ("chief", "evaluator"):
        return True
    if task_type == "worker" and "chief" not in spec.jobs:
        return task_id == spec.task_indices("worker")[0]
    return False


def id_in_cluster(cluster_spec: ClusterArg, task_type: Optional[str],
                  task_id: Optional[int]) -> int:
    """The rank of a task in the training group (chief first, then the workers).

    The chief is 0; worker ``i`` is ``i + number of chiefs`` (its position among the
    worker indices when they are sparse); the evaluator is its own index. An empty cluster
    gives 0.

    Raises:
        ClusterConfigError: the task is a ``ps`` (no rank) or breaks a cluster rule.

    Example:
        >>> id_in_cluster({"chief": ["c:1"], "worker": ["a:1", "b:1"]}, "worker", 1)
        2
    """
    spec = _as_spec(cluster_spec)
    if not spec:
        return 0
    validate_cluster_spec(spec, task_type, task_id)
    if task_id is None:
        raise ClusterConfigError(describe("task_id", "an int", None), field="task_id", value=None)
    if task_type == "chief":
        return 0
    if task_type == "worker":
        chiefs = spec.num_tasks("chief") if "chief" in spec.jobs else 0
        return spec.task_indices("worker").index(task_id) + chiefs
    if task_type == "evaluator":
        return task_id
    raise ClusterConfigError(
        f"There is no id for task_type {task_type!r}: only 'chief', 'worker' and 'evaluator' "
        f"tasks have a rank in the training group.", field="task_type", value=task_type)


def worker_count(cluster_spec: ClusterArg, task_type: Optional[str]) -> int:
    """The size of the training group a task of ``task_type`` belongs to.

    For the chief and the workers, the number of chief and worker tasks; for the evaluator,
    1 (it runs alone). An empty cluster gives 1.

    Raises:
        ClusterConfigError: ``task_type`` is ``ps`` or None in a non-empty cluster.
    """
    spec = _as_spec(cluster_spec)
    if not spec:
        return 1
    validate_cluster_spec(spec, task_type, None)
    if task_type == "evaluator":
        return 1
    if task_type not in ("chief", "worker"):
        raise ClusterConfigError(
            f"Unexpected `task_type` {task_type!r}: worker_count is defined for 'chief', "
            f"'worker' and 'evaluator' tasks.", field="task_type", value=task_type)
    return sum(spec.num_tasks(job) for job in ("chief", "worker") if job in spec.jobs)


def leader_task(cluster_spec: ClusterArg) -> Optional[Tuple[str, int]]:
    """The task that hosts the training group's rendezvous: the chief, else the first worker.

    Returns None for an empty cluster or a cluster with neither chiefs nor workers.
    """
    spec = _as_spec(cluster_spec)
    for job in ("chief", "worker"):
        if job in spec.jobs and spec.num_tasks(job):
            return job, spec.task_indices(job)[0]
    return None


def collective_leader(cluster_spec: ClusterArg, task_type: Optional[str],
                      task_id: Optional[int]) -> str:
    """The leader of the training group as a TensorFlow device name, or ``''``.

    ``'/job:chief/replica:0/task:0'`` when there is a chief, else the first worker; ``''``
    for an empty cluster and for the evaluator, which is outside the group.
    """
    spec = _as_spec(cluster_spec)
    if not spec:
        return ""
    validate_cluster_spec(spec, task_type, task_id)
    leader = leader_task(spec)
    if task_type == "evaluator" or leader is None:
        return ""
    return f"/job:{leader[0]}/replica:0/task:{leader[1]}"


def coordination_service_leader(cluster_spec: ClusterArg) -> str:
    """The task that leads cluster coordination: ``ps`` 0 if any, else chief 0, else worker 0.

    Returned as a TensorFlow device name; ``''`` for an empty cluster.
    """
    spec = _as_spec(cluster_spec)
    for job in ("ps", "chief", "worker"):
        if job in spec.jobs and spec.num_tasks(job):
            return f"/job:{job}/replica:0/task:{spec.task_indices(job)[0]}"
    return ""

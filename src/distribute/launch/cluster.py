"""The local cluster a launch starts: its tasks, their addresses and each task's environment.

Tasks come in TensorFlow's order: the chief (if any), then the workers, then the parameter
servers. Every process gets the same ``cluster`` and its own ``task`` in ``TF_CONFIG``,
written by :func:`distribute.cluster_resolver.make_tf_config` (so the JSON is checked by the
same parser the strategies use).
"""

from __future__ import annotations

from typing import Dict, List, Mapping, NamedTuple, Optional

# The cluster_resolver package is the one place that reads the process environment and
# counts CPUs; the launcher goes through it rather than touching os.environ itself.
from distribute.cluster_resolver import _devices, _env
from distribute.cluster_resolver.address import format_address
from distribute.cluster_resolver.cluster_spec import ClusterSpec
from distribute.cluster_resolver.job_secret import SECRET_VARIABLE, make_secret
from distribute.cluster_resolver.tf_config import TF_CONFIG, make_tf_config
from distribute.launch.ports import free_ports

__all__ = ["OMP_NUM_THREADS", "Task", "base_environment", "default_threads", "local_cluster",
           "plan_tasks", "task_environment", "with_job_secret"]

OMP_NUM_THREADS = "OMP_NUM_THREADS"
PYTHONUNBUFFERED = "PYTHONUNBUFFERED"


class Task(NamedTuple):
    """One process of the cluster: its job and its index in the job."""

    task_type: str
    index: int  # type: ignore[assignment]  # a NamedTuple field may shadow tuple.index

    @property
    def name(self) -> str:
        """``'worker:1'``: how output lines and results name the task."""
        return f"{self.task_type}:{self.index}"


def plan_tasks(workers: int, chief: bool, ps: int) -> List[Task]:
    """The tasks of a cluster, chief first, then workers, then parameter servers.

    Example:
        >>> [t.name for t in plan_tasks(2, chief=True, ps=1)]
        ['chief:0', 'worker:0', 'worker:1', 'ps:0']
    """
    jobs = [("chief", 1 if chief else 0), ("worker", workers), ("ps", ps)]
    return [Task(job, i) for job, count in jobs for i in range(count)]


def local_cluster(tasks: List[Task], host: str) -> Dict[str, List[str]]:
    """Gives every task a free port of ``host``; returns the cluster dict of ``TF_CONFIG``."""
    ports = free_ports(host, len(tasks))
    cluster: Dict[str, List[str]] = {}
    for task, port in zip(tasks, ports):
        cluster.setdefault(task.task_type, []).append(format_address(host, port))
    return cluster


def base_environment(extra: Mapping[str, Optional[str]]) -> Dict[str, str]:
    """This process's environment with ``extra`` applied (a None value removes a variable)."""
    merged = dict(_env.resolve_environ(None))
    for key, value in extra.items():
        if value is None:
            merged.pop(key, None)
        else:
            merged[key] = value
    return merged


def with_job_secret(base: Mapping[str, str], extra: Mapping[str, Optional[str]]) -> Dict[str, str]:
    """``base`` with a fresh ``DISTRIBUTE_JOB_SECRET`` (one per launch) unless the caller chose one.

    The caller chose when ``extra`` names the variable (a value: theirs; None: no secret, the
    tasks then need ``DISTRIBUTE_ALLOW_UNAUTHENTICATED=1``) or this process already sets it.
    The secret goes only into the tasks' environment: it is never printed or logged.
    """
    env = dict(base)
    if SECRET_VARIABLE not in extra and not env.get(SECRET_VARIABLE, "").strip():
        env[SECRET_VARIABLE] = make_secret()
    return env


def default_threads(processes: int) -> int:
    """``cores // processes``, at least 1: the ``OMP_NUM_THREADS`` a child gets by default."""
    return max(1, _devices.cpu_count() // max(1, processes))


def task_environment(base: Mapping[str, str], cluster: Dict[str, List[str]], task: Task,
                     processes: int) -> Dict[str, str]:
    """The environment of one task: ``base`` plus its ``TF_CONFIG`` and the defaults.

    ``TF_CONFIG`` is always the task's own. ``OMP_NUM_THREADS`` (``cores // processes``) and
    ``PYTHONUNBUFFERED=1`` (so each line reaches the launcher when it is printed) are set
    only where ``base`` does not set them.
    """
    env = dict(base)
    env[TF_CONFIG] = make_tf_config(ClusterSpec(cluster), task.task_type, task.index)
    env.setdefault(OMP_NUM_THREADS, str(default_threads(processes)))
    env.setdefault(PYTHONUNBUFFERED, "1")
    return env

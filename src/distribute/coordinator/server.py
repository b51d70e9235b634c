"""``distribute.Server``: the process of a ``ps`` or ``worker`` task of a parameter-server job.

A task started with ``distribute.Server(cluster, job_name, task_index).join()`` serves the
coordinator (and, for a ``ps`` task, the workers) until the job ends: the coordinator says so
when it finishes, and a coordinator that stops sending heartbeats for ``COORDINATOR_SILENCE``
seconds (killed, or its machine gone) ends the task too, so no task outlives its job.
"""

from __future__ import annotations

import logging
import threading
import time
from typing import Any, Dict, List, Optional

from distribute.cluster_resolver.base import ClusterResolver
from distribute.cluster_resolver.cluster_spec import ClusterSpec
from distribute.cluster_resolver.job_secret import job_secret
from distribute.coordinator.worker_service import WorkerRuntime
from distribute.ps import wire
from distribute.ps.ps_service import ParameterStore
from distribute.ps.rpc import RpcServer
from distribute.strategies.parameter_server import cluster_addresses

__all__ = ["COORDINATOR_SILENCE", "Server"]

log = logging.getLogger("distribute.ps")

COORDINATOR_SILENCE = 8.0
"""Seconds without a heartbeat from the coordinator after which a task ends itself."""


def _cluster_dict(value: Any) -> Dict[str, List[str]]:
    if isinstance(value, ClusterResolver):
        value = value.cluster_spec()
    if isinstance(value, dict):
        value = ClusterSpec(value)
    if not isinstance(value, ClusterSpec):
        raise TypeError("Expected `server_or_cluster_def` to be a distribute.cluster_resolver.ClusterSpec, a "
                        f"dict of job name -> addresses, or a ClusterResolver; received {value!r}.")
    return cluster_addresses(value)


class Server:
    """A ``ps`` or ``worker`` task of a parameter-server job, listening on its own address.

    Args:
        server_or_cluster_def: the cluster (``ClusterSpec``, dict or ``ClusterResolver``).
        job_name: ``'ps'`` or ``'worker'``.
        task_index: this task's index in its job.
        protocol: ``None`` or ``'grpc'`` (the only transport).
        config: unused; accepted for TensorFlow's signature.
        start: start serving now.

    Example:
        >>> # in each ps and worker process of the job (TF_CONFIG names the task):
        >>> # distribute.Server(resolver.cluster_spec(), job_name=resolver.task_type,
        >>> #                   task_index=resolver.task_id).join()
    """

    def __init__(self, server_or_cluster_def: Any, job_name: Optional[str] = None, task_index: Optional[int] = None,
                 protocol: Optional[str] = None, config: Any = None, start: bool = True) -> None:
        cluster = _cluster_dict(server_or_cluster_def)
        if job_name not in ("ps", "worker"):
            raise ValueError(f"Expected `job_name` to be 'ps' or 'worker', received {job_name!r}: the coordinator "
                             "(chief) runs no Server.")
        if job_name not in cluster:
            raise ValueError(f"The cluster has no {job_name!r} job (it has {sorted(cluster)}).")
        if isinstance(task_index, bool) or not isinstance(task_index, int) or not \
                0 <= task_index < len(cluster[job_name]):
            raise ValueError(f"Expected `task_index` to be an int in [0, {len(cluster[job_name])}), received "
                             f"{task_index!r}.")
        if protocol not in (None, "grpc"):
            raise ValueError(f"Expected `protocol` to be None or 'grpc', received {protocol!r}.")
        self.task = f"{job_name}:{task_index}"
        self._address = cluster[job_name][task_index]
        secret = job_secret(task=self.task)
        self._runtime: Any = (ParameterStore(self.task) if job_name == "ps"
                              else WorkerRuntime(cluster, task_index, secret))
        self._stop = threading.Event()
        self._last_heartbeat: Optional[float] = None
        handlers = dict(self._runtime.handlers(), Ping=self._ping, Shutdown=self._shutdown)
        self._rpc = RpcServer(self._address, secret, handlers, self.task)
        self._started = False
        if start:
            self.start()

    @property
    def target(self) -> str:
        """``'grpc://host:port'``."""
        return f"grpc://{self._address}"

    def start(self) -> None:
        """Starts serving (once)."""
        if not self._started:
            self._started = True
            self._rpc.start()
            threading.Thread(target=self._watch, name=f"watch-{self.task}", daemon=True).start()

    def join(self, timeout: Optional[float] = None) -> bool:
        """Blocks until the job ends (the coordinator finished or went silent); True if it ended."""
        ended = self._stop.wait(timeout)
        if ended:
            self.stop()
        return ended

    def stop(self) -> None:
        """Stops serving now."""
        self._stop.set()
        self._rpc.stop(0.5)
        if isinstance(self._runtime, WorkerRuntime):
            self._runtime.close()

    def _ping(self, meta: Dict[str, Any], buffers: List[wire.Buffer]) -> wire.Message:
        if meta.get("from") == "coordinator":
            self._last_heartbeat = time.monotonic()
        return {"task": self.task}, []

    def _shutdown(self, meta: Dict[str, Any], buffers: List[wire.Buffer]) -> wire.Message:
        log.info("%s: the coordinator ended the job", self.task)
        threading.Timer(0.2, self._stop.set).start()  # answer first
        return {}, []

    def _watch(self) -> None:
        while not self._stop.wait(0.5):
            # Until the first heartbeat, the silence counts from the first peer that proved the
            # secret (the coordinator, or a worker it sent): a coordinator killed before its
            # first heartbeat still ends the job.
            last = self._last_heartbeat if self._last_heartbeat is not None else self._rpc.first_session
            if last is not None and time.monotonic() - last > COORDINATOR_SILENCE:
                log.warning("%s: no heartbeat from the coordinator for %.0f s; ending this task", self.task,
                            COORDINATOR_SILENCE)
                self._stop.set()

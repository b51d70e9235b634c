"""Who this process talks to: one authenticated :class:`RpcClient` per task of the job."""

from __future__ import annotations

import threading
from concurrent import futures
from typing import Dict, List, Optional

from distribute.ps.rpc import RpcClient

__all__ = ["Connections"]


class Connections:
    """The clients of one process to the tasks of a job, made on first use.

    Args:
        cluster: job name -> list of ``host:port`` (the cluster's ``as_dict()``).
        secret: the job secret (None: a job running unauthenticated).

    Example:
        >>> conns = Connections({"ps": ["127.0.0.1:1"]}, None)
        >>> conns.task_names("ps")
        ['ps:0']
    """

    def __init__(self, cluster: Dict[str, List[str]], secret: Optional[bytes]) -> None:
        self._cluster = {job: list(addresses) for job, addresses in cluster.items()}
        self._secret = secret
        self._clients: Dict[str, RpcClient] = {}
        self._lock = threading.Lock()
        self._executor: Optional[futures.ThreadPoolExecutor] = None

    def count(self, job: str) -> int:
        """How many tasks ``job`` has."""
        return len(self._cluster.get(job, ()))

    def task_names(self, job: str) -> List[str]:
        """``['ps:0', 'ps:1']``."""
        return [f"{job}:{i}" for i in range(self.count(job))]

    def client(self, job: str, index: int) -> RpcClient:
        """The client of ``job:index`` (connected on its first call)."""
        name = f"{job}:{index}"
        with self._lock:
            client = self._clients.get(name)
            if client is None:
                if self._executor is None:
                    self._executor = futures.ThreadPoolExecutor(8, thread_name_prefix="rpc-calls")
                client = self._clients[name] = RpcClient(self._cluster[job][index], self._secret, name,
                                                         self._executor)
        return client

    def ps(self, index: int) -> RpcClient:
        """The client of ``ps:index``."""
        return self.client("ps", index)

    def close(self) -> None:
        """Closes every channel."""
        with self._lock:
            for client in self._clients.values():
                client.close()
            self._clients.clear()
            if self._executor is not None:
                self._executor.shutdown(wait=False)
                self._executor = None

"""An in-process parameter-server cluster for tests: ps and worker Servers on threads.

Everything still crosses gRPC on 127.0.0.1 with the job secret, as between processes.
"""

from __future__ import annotations

import threading
import time
from typing import Any, Dict, List, Optional

import distribute
from distribute.cluster_resolver import ClusterSpec, SimpleClusterResolver
from distribute.coordinator import Server
from distribute.launch import ports as launch_ports


def free_ports(count: int) -> List[int]:
    return launch_ports.free_ports("127.0.0.1", count)


def cluster_spec(workers: int = 2, ps: int = 2) -> Dict[str, List[str]]:
    ports = iter(free_ports(1 + workers + ps))
    return {"chief": [f"127.0.0.1:{next(ports)}"],
            "worker": [f"127.0.0.1:{next(ports)}" for _ in range(workers)],
            "ps": [f"127.0.0.1:{next(ports)}" for _ in range(ps)]}


class Cluster:
    """Servers for every ps and worker task of ``spec``, and strategies made on it."""

    def __init__(self, workers: int = 2, ps: int = 2) -> None:
        self.spec = cluster_spec(workers, ps)
        self.servers = {f"{job}:{i}": Server(self.spec, job, i)
                        for job in ("worker", "ps") for i in range(len(self.spec[job]))}
        self._strategies: List[Any] = []

    @property
    def resolver(self) -> SimpleClusterResolver:
        return SimpleClusterResolver(ClusterSpec(self.spec), task_type="chief", task_id=0)

    def strategy(self, partitioner: Optional[Any] = None) -> Any:
        strategy = distribute.ParameterServerStrategy(self.resolver, variable_partitioner=partitioner)
        self._strategies.append(strategy)
        return strategy

    def store(self, ps: int) -> Any:
        return self.servers[f"ps:{ps}"]._runtime

    def close(self) -> None:
        for strategy in self._strategies:
            if strategy._cluster_coordinator is not None:
                strategy._cluster_coordinator._shutdown()
            strategy.extended._conns.close()
        for server in self.servers.values():
            server.stop()
        deadline = time.monotonic() + 5.0
        while time.monotonic() < deadline and any(t.name.startswith(("rpc-", "watch-", "coordinator-"))
                                                  for t in threading.enumerate()):
            time.sleep(0.05)

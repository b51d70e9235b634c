"""TorchrunClusterResolver: the cluster from the variables torchrun (torch.distributed.run) sets.

torchrun gives each process its rank (``RANK``), the group size (``WORLD_SIZE``), its rank on
the node (``LOCAL_RANK``) and one address, the rendezvous (``MASTER_ADDR:MASTER_PORT``), held
by the launcher on the first node. It does not publish where the other processes run, so the
cluster this resolver returns is one ``worker`` job of ``WORLD_SIZE`` tasks whose addresses
are ``MASTER_ADDR:MASTER_PORT + i``. Worker 0's address is the rendezvous; on a single node
every address is on the right host; on several nodes the addresses of tasks outside the
first node are names only (``exact_addresses`` is then False).
"""

from __future__ import annotations

from typing import Mapping, Optional

from distribute.cluster_resolver import _env
from distribute.cluster_resolver._errors import ClusterConfigError, describe
from distribute.cluster_resolver.address import format_address, parse_address
from distribute.cluster_resolver.base import (
    ClusterResolver,
    check_rpc_layer,
    check_task_id,
    check_task_type,
    format_master_url,
)
from distribute.cluster_resolver.cluster_spec import ClusterSpec

__all__ = ["TORCHRUN_VARIABLES", "TorchrunClusterResolver"]

TORCHRUN_VARIABLES = ("RANK", "WORLD_SIZE", "LOCAL_RANK", "MASTER_ADDR", "MASTER_PORT")
"""The variables the resolver needs; ``LOCAL_WORLD_SIZE`` and ``GROUP_RANK`` are optional."""

_HINT = "Not started by torchrun? Run `torchrun --nproc-per-node N script.py`."


class TorchrunClusterResolver(ClusterResolver):
    """Reads this process's place in a torchrun job from its environment variables.

    The task is ``('worker', RANK)``; worker 0 is the chief and its address is the
    rendezvous. The variables are read and checked once, when the resolver is built.

    Args:
        rpc_layer: the URL scheme of :meth:`master` (``'tcp'`` gives torch's
            ``init_method`` form).
        environ: the environment variables; ``None`` means ``os.environ``.

    Raises:
        MissingEnvironmentError: one of :data:`TORCHRUN_VARIABLES` is unset.
        ClusterConfigError: a variable has a wrong value (the message names it).

    Example:
        >>> env = {"RANK": "1", "WORLD_SIZE": "2", "LOCAL_RANK": "1",
        ...        "MASTER_ADDR": "127.0.0.1", "MASTER_PORT": "29500"}
        >>> resolver = TorchrunClusterResolver(rpc_layer="tcp", environ=env)
        >>> resolver.task_type, resolver.task_id, resolver.rendezvous_address
        ('worker', 1, '127.0.0.1:29500')
    """

    def __init__(self, rpc_layer: Optional[str] = None, *,
                 environ: Optional[Mapping[str, str]] = None) -> None:
        env = _env.resolve_environ(environ)
        values = {name: _env.require(env, name, _HINT) for name in TORCHRUN_VARIABLES}
        self._world_size = _env.read_int("WORLD_SIZE", values["WORLD_SIZE"], 1)
        self._rank = _env.read_int("RANK", values["RANK"], 0, self._world_size - 1)
        self._local_world_size = _optional_int(env, "LOCAL_WORLD_SIZE", 1, self._world_size)
        local_max = (self._local_world_size or self._world_size) - 1
        self._local_rank = _env.read_int("LOCAL_RANK", values["LOCAL_RANK"], 0, local_max)
        self._group_rank = _optional_int(env, "GROUP_RANK", 0, None)
        self._master_addr = _master_host(values["MASTER_ADDR"])
        self._master_port = _master_port(values["MASTER_PORT"], self._world_size)
        self._uses_agent_store = _env.get(env, "TORCHELASTIC_USE_AGENT_STORE") == "True"
        self._run_id = _env.get(env, "TORCHELASTIC_RUN_ID")
        self._task_type, self._task_id = "worker", self._rank
        self.rpc_layer = rpc_layer

    def cluster_spec(self) -> ClusterSpec:
        """One ``worker`` job of ``WORLD_SIZE`` tasks at ``MASTER_ADDR:MASTER_PORT + i``."""
        host, port = self._master_addr, self._master_port
        return ClusterSpec({"worker": [format_address(host, port + i)
                                       for i in range(self._world_size)]})

    def master(self, task_type: Optional[str] = None, task_id: Optional[int] = None,
               rpc_layer: Optional[str] = None) -> str:
        """The URL of a task (by default this one), or ``''`` when ``WORLD_SIZE`` is 1."""
        task_type = check_task_type(task_type) if task_type is not None else self.task_type
        task_id = check_task_id(task_id) if task_id is not None else self.task_id
        layer = check_rpc_layer(rpc_layer) or self.rpc_layer
        if self._world_size == 1 or task_type is None or task_id is None:
            return ""
        return format_master_url(self.cluster_spec().task_address(task_type, task_id), layer)

    @property
    def rank(self) -> int:
        """``RANK``: this process's rank among all processes."""
        return self._rank

    @property
    def world_size(self) -> int:
        """``WORLD_SIZE``: the number of processes."""
        return self._world_size

    @property
    def local_rank(self) -> int:
        """``LOCAL_RANK``: this process's rank on its node (use it to pick a GPU)."""
        return self._local_rank

    @property
    def local_world_size(self) -> Optional[int]:
        """``LOCAL_WORLD_SIZE``: the processes on this node, or None when unset."""
        return self._local_world_size

    @property
    def group_rank(self) -> Optional[int]:
        """``GROUP_RANK``: the rank of this node, or None when unset."""
        return self._group_rank

    @property
    def rendezvous_address(self) -> str:
        """``MASTER_ADDR:MASTER_PORT``, where the rendezvous store listens."""
        return format_address(self._master_addr, self._master_port)

    @property
    def launcher_hosts_store(self) -> bool:
        """True when torchrun's agent already serves the store at the rendezvous address
        (``TORCHELASTIC_USE_AGENT_STORE=True``): every process, rank 0 included, connects to
        it as a client instead of starting one."""
        return self._uses_agent_store

    @property
    def run_id(self) -> Optional[str]:
        """``TORCHELASTIC_RUN_ID``, or None when unset."""
        return self._run_id

    @property
    def exact_addresses(self) -> bool:
        """True when every task runs on the first node, so every address is a real one."""
        return self._local_world_size == self._world_size or self._world_size == 1


def _optional_int(env: Mapping[str, str], name: str, minimum: int,
                  maximum: Optional[int]) -> Optional[int]:
    value = _env.get(env, name)
    return None if value is None else _env.read_int(name, value, minimum, maximum)


def _master_host(value: str) -> str:
    """Checks ``MASTER_ADDR``: a host name, an IPv4 address or an IPv6 address (brackets
    optional, since torch writes it without)."""
    host = value[1:-1] if value.startswith("[") and value.endswith("]") else value
    try:
        parse_address(format_address(host, 1), "MASTER_ADDR")
    except ClusterConfigError:
        raise ClusterConfigError(
            describe("MASTER_ADDR", "a host name or an IP address", value,
                     "Set MASTER_ADDR to the first node's host, e.g. 127.0.0.1."),
            field="MASTER_ADDR", value=value) from None
    return host


def _master_port(value: str, world_size: int) -> int:
    port = _env.read_int("MASTER_PORT", value, 1, 65535)
    if port + world_size - 1 > 65535:
        raise ClusterConfigError(
            describe("MASTER_PORT", f"a port with room for {world_size} tasks above it "
                     f"(at most {65536 - world_size})", value,
                     "Pick a lower MASTER_PORT (torchrun's default is 29500)."),
            field="MASTER_PORT", value=value)
    return port

"""``python -m distribute.cluster_resolver``: print the cluster this process would join.

Run it with the same environment as the training script (under torchrun, srun, or with
``TF_CONFIG`` set) to check a set-up by eye before starting anything::

    $ TF_CONFIG='{"cluster": {"worker": ["localhost:2222", "localhost:2223"]},
                  "task": {"type": "worker", "index": 1}}' python -m distribute.cluster_resolver
    resolver:    TFConfigClusterResolver
    cluster:     worker: localhost:2222, localhost:2223
    task:        worker:1
    ...

It opens no socket. A malformed configuration prints one ``error:`` line on stderr and
exits with status 2.
"""

from __future__ import annotations

import argparse
import json
import sys
from typing import Any, Dict, List, Mapping, Optional, Sequence, TextIO

from distribute.cluster_resolver import _devices
from distribute.cluster_resolver.base import ClusterResolver
from distribute.cluster_resolver.cluster_spec import ClusterSpec
from distribute.cluster_resolver.detect import RESOLVER_KINDS, detect_cluster_resolver
from distribute.cluster_resolver.roles import (
    id_in_cluster,
    is_chief,
    validate_cluster_spec,
    worker_count,
)
from distribute.cluster_resolver.slurm import SlurmClusterResolver
from distribute.cluster_resolver.torchrun import TorchrunClusterResolver
from distribute.errors import DistributeError

__all__ = ["describe_setup", "main"]

EXIT_BAD_CONFIG = 2


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="python -m distribute.cluster_resolver",
        description="Print the cluster, task, rank and local devices this process resolves to.")
    parser.add_argument("--resolver", choices=RESOLVER_KINDS, default="auto",
                        help="where to read the cluster from (default: auto-detect)")
    parser.add_argument("--json", action="store_true", help="print one JSON object")
    parser.add_argument("--no-devices", action="store_true",
                        help="skip listing the local devices")
    return parser


def _task_address(spec: ClusterSpec, task_type: Optional[str],
                  task_id: Optional[int]) -> Optional[str]:
    if task_type in spec.jobs and task_id in spec.task_indices(task_type):
        return spec.task_address(task_type, task_id)
    return None


def _group(spec: ClusterSpec, task_type: Optional[str],
           task_id: Optional[int]) -> Dict[str, Any]:
    if spec and task_type not in ("chief", "worker", "evaluator"):
        return {"rank": None, "world_size": None, "is_chief": False}
    return {"rank": id_in_cluster(spec, task_type, task_id),
            "world_size": worker_count(spec, task_type),
            "is_chief": is_chief(spec, task_type, task_id)}


def _extras(resolver: ClusterResolver) -> Dict[str, Any]:
    if isinstance(resolver, TorchrunClusterResolver):
        return {"rendezvous": resolver.rendezvous_address, "local_rank": resolver.local_rank,
                "launcher_hosts_store": resolver.launcher_hosts_store,
                "exact_addresses": resolver.exact_addresses}
    if isinstance(resolver, SlurmClusterResolver):
        return {"assigned_gpus": resolver.assigned_gpus}
    return {}


def describe_setup(resolver: ClusterResolver, devices: bool = True) -> Dict[str, Any]:
    """Everything the command prints, as a dict (checked with the multi-worker rules)."""
    spec = resolver.cluster_spec()
    task_type, task_id = resolver.task_type, resolver.task_id
    validate_cluster_spec(spec, task_type, task_id)
    address = _task_address(spec, task_type, task_id)
    info: Dict[str, Any] = {
        "resolver": type(resolver).__name__,
        "cluster": {job: [[i, spec.task_address(job, i)] for i in spec.task_indices(job)]
                    for job in spec.jobs},
        "task_type": task_type, "task_id": task_id,
        **_group(spec, task_type, task_id),
        "address": address,
        "master": resolver.master() if address is not None or not spec else "",
        "rpc_layer": resolver.rpc_layer,
        **_extras(resolver),
    }
    if devices:
        info["devices"] = {"cpus": _devices.cpu_count(), "cuda": _devices.cuda_device_names()}
    return info


def _cluster_lines(cluster: Mapping[str, List[List[Any]]]) -> List[str]:
    if not cluster:
        return ["(empty: a single-worker job)"]
    return [f"{job}: " + ", ".join(addr if [i for i, _ in tasks] == list(range(len(tasks)))
                                   else f"[{i}] {addr}" for i, addr in tasks)
            for job, tasks in cluster.items()]


def _text(info: Mapping[str, Any]) -> List[str]:
    task = (f"{info['task_type']}:{info['task_id']}" if info["task_type"] is not None
            else "none")
    rank = ("none (this task is outside the training group)" if info["rank"] is None
            else f"{info['rank']} of {info['world_size']} (id in cluster / world size)")
    rows = [("resolver", [info["resolver"]]), ("cluster", _cluster_lines(info["cluster"])),
            ("task", [task]), ("chief", ["yes" if info["is_chief"] else "no"]), ("rank", [rank]),
            ("address", [info["address"] or "none (no address in the cluster)"]),
            ("master", [info["master"] or "''"]), ("rpc layer", [str(info["rpc_layer"])])]
    rows += [(key.replace("_", " "), [str(info[key])]) for key in
             ("rendezvous", "local_rank", "launcher_hosts_store", "exact_addresses",
              "assigned_gpus") if key in info]
    if "devices" in info:
        cuda = info["devices"]["cuda"]
        rows.append(("devices", [f"CPU: {info['devices']['cpus']}; CUDA: "
                                 + (f"{len(cuda)} ({', '.join(cuda)})" if cuda else "none")]))
    width = max(len(key) for key, _ in rows) + 2
    return [f"{(key + ':') if i == 0 else '':<{width}}{line}"
            for key, lines in rows for i, line in enumerate(lines)]


def main(argv: Optional[Sequence[str]] = None, environ: Optional[Mapping[str, str]] = None,
         stdout: Optional[TextIO] = None, stderr: Optional[TextIO] = None) -> int:
    """Runs the command; returns the exit status (0, or 2 for a malformed configuration)."""
    stdout, stderr = stdout or sys.stdout, stderr or sys.stderr
    args = _parser().parse_args(argv)
    try:
        resolver = detect_cluster_resolver(args.resolver, environ)
        info = describe_setup(resolver, devices=not args.no_devices)
    except DistributeError as exc:
        message = " ".join(str(exc).split())
        print(f"error: {type(exc).__name__}: {message}", file=stderr)
        return EXIT_BAD_CONFIG
    if args.json:
        print(json.dumps(info), file=stdout)
    else:
        print("\n".join(_text(info)), file=stdout)
    return 0


if __name__ == "__main__":
    sys.exit(main())

"""What every pg_scripts worker shares: joining its cluster from TF_CONFIG, and printing results."""

from __future__ import annotations

import json

import torch

from distribute.cluster_resolver import TFConfigClusterResolver
from distribute.collectives.connect import connect
from distribute.collectives.process_group import ProcessGroup

torch.set_num_threads(1)


def join() -> ProcessGroup:
    """This task's process group (20 s to meet, 20 s per collective)."""
    resolver = TFConfigClusterResolver()
    return connect(resolver.cluster_spec(), resolver.task_type, resolver.task_id, rendezvous_timeout=20,
                   collective_timeout=20)


def emit(name: str, value: object) -> None:
    """A line ``RESULT <name> <json>`` for the test to collect."""
    print(f"RESULT {name} {json.dumps(value)}", flush=True)

"""Choosing a resolver from the environment: TF_CONFIG, then torchrun, then Slurm."""

from __future__ import annotations

from typing import Mapping, Optional

from distribute.cluster_resolver import _env
from distribute.cluster_resolver._errors import ClusterConfigError, describe
from distribute.cluster_resolver.base import ClusterResolver
from distribute.cluster_resolver.slurm import SlurmClusterResolver
from distribute.cluster_resolver.tf_config import TF_CONFIG, TFConfigClusterResolver
from distribute.cluster_resolver.torchrun import TORCHRUN_VARIABLES, TorchrunClusterResolver

__all__ = ["RESOLVER_KINDS", "detect_cluster_resolver"]

RESOLVER_KINDS = ("auto", "tf_config", "torchrun", "slurm")
"""The names :func:`detect_cluster_resolver` accepts."""


def _detected_kind(environ: Mapping[str, str]) -> str:
    if (_env.get(environ, TF_CONFIG) or "").strip():
        return "tf_config"
    if all(_env.get(environ, name) is not None for name in TORCHRUN_VARIABLES):
        return "torchrun"
    if all(_env.get(environ, name) is not None
           for name in ("SLURM_PROCID", "SLURM_STEP_NUM_TASKS")):
        return "slurm"
    return "tf_config"


def detect_cluster_resolver(kind: str = "auto",
                            environ: Optional[Mapping[str, str]] = None) -> ClusterResolver:
    """Builds the resolver for ``kind``, or for the launcher found in the environment.

    With ``kind='auto'``: a non-empty ``TF_CONFIG`` wins; else torchrun's variables
    (``RANK``, ``WORLD_SIZE``, ``LOCAL_RANK``, ``MASTER_ADDR``, ``MASTER_PORT``); else a
    Slurm step (``SLURM_PROCID`` and ``SLURM_STEP_NUM_TASKS``); else an empty
    ``TF_CONFIG`` resolver (a single-worker job). The Slurm resolver is built with
    ``auto_set_gpu=False``, so detection never changes the environment.

    Example:
        >>> type(detect_cluster_resolver(environ={})).__name__
        'TFConfigClusterResolver'
    """
    if kind not in RESOLVER_KINDS:
        raise ClusterConfigError(describe("kind", f"one of {RESOLVER_KINDS}", kind),
                                 field="kind", value=kind)
    env = _env.resolve_environ(environ)
    chosen = _detected_kind(env) if kind == "auto" else kind
    if chosen == "torchrun":
        return TorchrunClusterResolver(environ=env)
    if chosen == "slurm":
        return SlurmClusterResolver(auto_set_gpu=False, environ=env)
    return TFConfigClusterResolver(environ=env)

"""Tests of detect_cluster_resolver."""

import json

import pytest

from distribute.cluster_resolver import (
    ClusterConfigError,
    MissingEnvironmentError,
    SlurmClusterResolver,
    TFConfigClusterResolver,
    TFConfigError,
    TorchrunClusterResolver,
    detect_cluster_resolver,
)

TORCHRUN = {"RANK": "0", "WORLD_SIZE": "1", "LOCAL_RANK": "0", "MASTER_ADDR": "localhost",
            "MASTER_PORT": "29500"}
SLURM = {"SLURM_PROCID": "0", "SLURM_STEP_NUM_TASKS": "1", "SLURM_STEP_NODELIST": "n1",
         "SLURM_STEP_TASKS_PER_NODE": "1", "CUDA_VISIBLE_DEVICES": "0"}
TF = {"TF_CONFIG": json.dumps({"cluster": {"worker": ["a:1"]},
                               "task": {"type": "worker", "index": 0}})}


@pytest.mark.parametrize("environ, kind", [
    ({}, TFConfigClusterResolver),
    ({"TF_CONFIG": " "}, TFConfigClusterResolver),
    (TF, TFConfigClusterResolver),
    ({**TF, **TORCHRUN, **SLURM}, TFConfigClusterResolver),
    (TORCHRUN, TorchrunClusterResolver),
    ({**TORCHRUN, **SLURM}, TorchrunClusterResolver),
    (SLURM, SlurmClusterResolver),
    ({"RANK": "0"}, TFConfigClusterResolver),
])
def test_auto(environ, kind):
    assert type(detect_cluster_resolver(environ=environ)) is kind


def test_detection_never_writes_the_environment():
    environ = dict(SLURM)
    detect_cluster_resolver(environ=environ).cluster_spec()
    assert environ == SLURM


def test_explicit_kind():
    assert isinstance(detect_cluster_resolver("tf_config", {**TORCHRUN}), TFConfigClusterResolver)
    with pytest.raises(MissingEnvironmentError, match="RANK"):
        detect_cluster_resolver("torchrun", {})
    with pytest.raises(MissingEnvironmentError, match="SLURM_PROCID"):
        detect_cluster_resolver("slurm", {})


def test_errors():
    with pytest.raises(ClusterConfigError, match="kind: expected one of"):
        detect_cluster_resolver("kubernetes", {})
    with pytest.raises(TFConfigError):
        detect_cluster_resolver(environ={"TF_CONFIG": "{"})

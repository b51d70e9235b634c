"""Tests of the package surface: exports, docstring examples, file sizes."""

import doctest
import importlib
from pathlib import Path

import pytest

import distribute.cluster_resolver as cluster_resolver

MODULES = ["address", "base", "cluster_spec", "detect", "roles", "slurm", "tf_config",
           "torchrun", "_errors", "_env", "_devices", "__main__"]
EXPECTED = {
    "Address", "ClusterAllocationError", "ClusterConfigError", "ClusterConfigTypeError",
    "ClusterMergeError", "ClusterResolver", "ClusterSpec", "MissingEnvironmentError",
    "RESOLVER_KINDS", "RPC_LAYERS", "SimpleClusterResolver", "SlurmClusterResolver",
    "TASK_TYPES", "TFConfigClusterResolver", "TFConfigError", "TF_CONFIG", "TORCHRUN_VARIABLES",
    "TorchrunClusterResolver", "UnionResolver", "collective_leader",
    "coordination_service_leader", "detect_cluster_resolver", "expand_hostlist",
    "expand_tasks_per_node", "format_address", "format_master_url", "id_in_cluster", "is_chief",
    "leader_task", "make_tf_config", "parse_address", "validate_cluster_spec", "worker_count",
}


def test_all_is_the_public_surface():
    assert set(cluster_resolver.__all__) == EXPECTED
    for name in cluster_resolver.__all__:
        assert getattr(cluster_resolver, name) is not None


def test_no_cloud_resolvers():
    for name in ("KubernetesClusterResolver", "GCEClusterResolver", "TPUClusterResolver",
                 "KubernetesExecutableLocation"):
        assert not hasattr(cluster_resolver, name)


@pytest.mark.parametrize("name", MODULES)
def test_docstring_examples(name):
    module = importlib.import_module(f"distribute.cluster_resolver.{name}")
    result = doctest.testmod(module, optionflags=doctest.NORMALIZE_WHITESPACE)
    assert result.failed == 0


def test_file_sizes():
    for path in Path(cluster_resolver.__file__).parent.glob("*.py"):
        assert len(path.read_text().splitlines()) < 500, path.name

"""The public names are a contract: changing them must be a deliberate edit of this list."""

import distribute
import distribute.experimental

GOLDEN = [
    "AggregatingVariable", "CrossDeviceOps", "DistributedDataset", "DistributedIterator",
    "DistributedValues", "DistributedVariable", "HierarchicalCopyAllReduce", "InputContext",
    "InputOptions", "InputReplicationMode", "Mirrored", "MirroredStrategy", "MirroredVariable", "MultiWorkerMirroredStrategy",
    "NcclAllReduce", "OneDeviceStrategy", "ParameterServerStrategy", "PerReplica", "ReduceOp",
    "ReductionToOneDevice", "ReplicaContext", "Server", "ShardedVariable", "Strategy", "StrategyExtended", "SyncOnReadVariable", "TensorSpec", "Variable",
    "VariableAggregation", "VariableSynchronization", "cluster_resolver", "compat", "coordinator", "data", "errors", "experimental",
    "experimental_set_strategy", "function", "get_cross_replica_context", "get_replica_context",
    "get_strategy", "has_strategy", "in_cross_replica_context", "nn", "optim",
]
GOLDEN_EXPERIMENTAL = [
    "CentralStorageStrategy", "CollectiveCommunication", "CommunicationImplementation",
    "CommunicationOptions", "MultiWorkerMirroredStrategy", "ParameterServerStrategy", "ValueContext",
    "coordinator", "partitioners",
]


def test_top_level_names_match_golden_list():
    assert sorted(distribute.__all__) == sorted(GOLDEN)


def test_experimental_names_match_golden_list():
    assert sorted(distribute.experimental.__all__) == sorted(GOLDEN_EXPERIMENTAL)


def test_every_public_name_resolves():
    for name in distribute.__all__:
        assert getattr(distribute, name) is not None, name
    for name in distribute.experimental.__all__:
        assert getattr(distribute.experimental, name) is not None, name


def test_package_docstring_carries_the_glossary():
    for term in ("replica", "worker", "cross-replica context", "mirrored", "sync-on-read"):
        assert term in distribute.__doc__


def test_public_api_matches_the_golden_file():
    """Every public name of every namespace with its signature; a deliberate change rewrites
    the file: ``PYTHONPATH=src python tests/api_golden.py > tests/golden_api.txt``."""
    from pathlib import Path

    from api_golden import golden_lines

    golden = (Path(__file__).parent / "golden_api.txt").read_text().splitlines()
    now = golden_lines()
    added = sorted(set(now) - set(golden))
    removed = sorted(set(golden) - set(now))
    assert not added and not removed, f"public API changed; added: {added}; removed: {removed}"
    assert now == golden, "public API order changed; regenerate tests/golden_api.txt"

"""Named strategies for ``pytest.mark.parametrize("make_strategy", named_strategies())``.

Each param is a zero-argument factory, so the strategy is constructed inside the test.

A process sees only its own replicas: ``experimental_local_results`` and ``PerReplica.values``
have one entry per *local* replica, and each worker reads its own shard of a distributed
dataset. The helpers at the end give a test the exact layout of any named strategy, so its
expectations hold for the multi-worker case too.
"""

from typing import List, Tuple

import pytest


def _default():
    import distribute
    return distribute.get_strategy()


def _one_device():
    import distribute
    return distribute.OneDeviceStrategy("CPU:0")


def _mirrored_2():
    import distribute
    return distribute.MirroredStrategy(["CPU:0", "CPU:1"])


def _central_storage_2():
    import distribute.experimental
    return distribute.experimental.CentralStorageStrategy(["CPU:0", "CPU:1"])


def _multi_worker_2x2():
    from multi_worker_matrix import multi_worker_strategy
    return multi_worker_strategy()


FACTORIES = {
    "default": _default,
    "one_device": _one_device,
    "mirrored_2": _mirrored_2,
    "central_storage_2": _central_storage_2,
    "multi_worker_2x2": _multi_worker_2x2,  # 2 worker processes x 2 logical CPUs: multi_worker_matrix.py
}


def named_strategies(*names):
    """pytest.param factories, one per named strategy (all of them when no names are given)."""
    return [pytest.param(FACTORIES[n], id=n) for n in (names or FACTORIES)]


def input_workers(strategy) -> Tuple[int, int]:
    """``(number of workers, this worker's index)``; ``(1, 0)`` for the in-process strategies.

    The index is TF's ``id_in_cluster`` (the chief first, then the workers).
    """
    from distribute.cluster_resolver import id_in_cluster

    resolver = strategy.cluster_resolver
    if resolver is None or not resolver.cluster_spec():
        return 1, 0
    num_workers = strategy.num_replicas_in_sync // len(strategy.extended.worker_devices)
    return num_workers, id_in_cluster(resolver.cluster_spec(), resolver.task_type, resolver.task_id)


def local_replica_ids(strategy) -> List[int]:
    """The ``replica_id_in_sync_group`` of each replica this process runs, in local order.

    As in TF, worker ``w`` with ``L`` local replicas runs replicas ``w*L .. w*L + L - 1``.
    """
    num_workers, index = input_workers(strategy)
    local = strategy.num_replicas_in_sync // num_workers
    return [index * local + i for i in range(local)]


def local_pieces(strategy, batch_rows: int) -> List[range]:
    """The rows of one global batch each local replica gets from ``experimental_distribute_dataset``.

    TF's default for an in-memory dataset (DATA auto-shard, legacy rebatch): the batch of ``b``
    rows is cut into ``N`` pieces of ``ceil(b / N)`` rows (the last ones short or empty); worker
    ``w`` of ``W`` keeps the pieces ``k = w (mod W)``, so its local replica ``r`` gets piece
    ``r*W + w``.
    """
    n = strategy.num_replicas_in_sync
    num_workers, index = input_workers(strategy)
    size = -(-batch_rows // n)
    pieces = [r * num_workers + index for r in range(n // num_workers)]
    return [range(min(k * size, batch_rows), min((k + 1) * size, batch_rows)) for k in pieces]

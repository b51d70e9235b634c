"""Named strategies for ``pytest.mark.parametrize("make_strategy", named_strategies())``.

Each param is a zero-argument factory, so the strategy is constructed inside the test.
"""

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

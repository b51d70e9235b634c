"""``distribute.compat.v1.experimental``: the ``tf.compat.v1.distribute.experimental`` strategies."""

from __future__ import annotations

from distribute.compat.v1 import Strategy
from distribute.strategies import central_storage as _central_storage
from distribute.strategies import multi_worker_mirrored as _multi_worker

__all__ = ["CentralStorageStrategy", "MultiWorkerMirroredStrategy"]


class CentralStorageStrategy(Strategy, _central_storage.CentralStorageStrategy):
    """``tf.compat.v1.distribute.experimental.CentralStorageStrategy`` (``reduce``'s ``axis`` defaults to None)."""


class MultiWorkerMirroredStrategy(Strategy, _multi_worker.ExperimentalMultiWorkerMirroredStrategy):
    """``tf.compat.v1.distribute.experimental.MultiWorkerMirroredStrategy`` (``reduce``'s ``axis`` defaults to None)."""

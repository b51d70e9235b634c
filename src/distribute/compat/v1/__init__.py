"""``distribute.compat.v1``: the ``tf.compat.v1.distribute`` strategies.

They are the v2 strategies with the v1 signature of ``reduce``: ``reduce(reduce_op, value,
axis=None)`` (TensorFlow 1 had no ``axis`` yet; TensorFlow 2 made it required, as
``distribute.Strategy.reduce`` does). The TF1-only methods TensorFlow keeps on its v2 classes
(``make_dataset_iterator``, ``make_input_fn_iterator``, ``experimental_run``,
``extended.call_for_each_replica``, ...) are on both.

Example:
    >>> import torch, distribute
    >>> strategy = distribute.compat.v1.MirroredStrategy(["CPU:0", "CPU:1"])
    >>> per_replica = strategy.run(lambda: torch.tensor(1.0))
    >>> strategy.reduce("sum", per_replica)
    tensor(2.)
"""

from __future__ import annotations

from typing import Any

from distribute._core import strategy as _strategy
from distribute.strategies import mirrored as _mirrored
from distribute.strategies import one_device as _one_device

__all__ = ["MirroredStrategy", "OneDeviceStrategy", "Strategy", "StrategyExtended", "experimental"]

StrategyExtended = _strategy.StrategyExtended


class Strategy(_strategy.Strategy):
    """``tf.compat.v1.distribute.Strategy``: ``reduce`` defaults ``axis`` to ``None``."""

    def reduce(self, reduce_op: Any, value: Any, axis: Any = None) -> Any:
        """Reduces ``value`` over all replicas (see ``distribute.Strategy.reduce``); ``axis=None``
        combines the replicas' values element-wise."""
        return super().reduce(reduce_op, value, axis)


class MirroredStrategy(Strategy, _mirrored.MirroredStrategy):
    """``tf.compat.v1.distribute.MirroredStrategy`` (arguments as ``distribute.MirroredStrategy``)."""


class OneDeviceStrategy(Strategy, _one_device.OneDeviceStrategy):
    """``tf.compat.v1.distribute.OneDeviceStrategy`` (arguments as ``distribute.OneDeviceStrategy``)."""


from distribute.compat.v1 import experimental  # noqa: E402  (its classes derive from Strategy above)

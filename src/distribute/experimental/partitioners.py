"""``distribute.experimental.partitioners`` (``tf.distribute.experimental.partitioners``).

Example:
    >>> from distribute.experimental.partitioners import FixedShardsPartitioner
    >>> FixedShardsPartitioner(2)((10, 3), "float32")
    [2, 1]
"""

from distribute.ps.partitioners import (FixedShardsPartitioner, MaxSizePartitioner, MinSizePartitioner,
                                        Partitioner)

__all__ = ["FixedShardsPartitioner", "MaxSizePartitioner", "MinSizePartitioner", "Partitioner"]

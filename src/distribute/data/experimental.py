"""``distribute.data.experimental``: the names of ``tf.data.experimental`` used with strategies."""

from distribute.data._common import AUTOTUNE, INFINITE_CARDINALITY, SHARD_HINT, UNKNOWN_CARDINALITY
from distribute.data.options import AutoShardPolicy, DistributeOptions

__all__ = [
    "AUTOTUNE",
    "AutoShardPolicy",
    "DistributeOptions",
    "INFINITE_CARDINALITY",
    "SHARD_HINT",
    "UNKNOWN_CARDINALITY",
]

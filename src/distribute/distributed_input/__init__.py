"""``distribute.distributed_input``: datasets split over the replicas of a strategy.

Glossary:

* **global batch** -- what one step consumes over all replicas of all workers; the input of
  ``experimental_distribute_dataset`` is a dataset of global batches.
* **per-replica batch** -- one replica's share of a global batch; ``next()`` on a distributed
  iterator returns them as a ``PerReplica`` (bare with one local replica), structure kept.
* **input worker** -- a process that runs an input pipeline; ``W`` workers, this one ``w``.
* **auto-shard policy** -- how workers divide the data (``distribute.data.AutoShardPolicy``):
  by files, by elements, by ``SHARD_HINT`` placeholders, or not at all.
* **rebatching** -- splitting global batches into per-replica batches (two algorithms, as in
  TensorFlow: per-batch slicing and the fixed-size stream rebatch).
* **partial step** -- the last step, when some replicas get an empty batch (zero rows).

Users reach this package through ``strategy.experimental_distribute_dataset`` and
``strategy.distribute_datasets_from_function``; the public names are re-exported by
``distribute`` (``DistributedDataset``, ``DistributedIterator``, ``InputOptions``,
``InputReplicationMode``). See docs/distributed_input.md.
"""

from distribute.distributed_input.distributed_dataset import (DistributedDatasetsFromFunction,
                                                              RebatchedDistributedDataset)
from distribute.distributed_input.element_spec import PerReplicaSpec
from distribute.distributed_input.input_options import InputOptions, InputReplicationMode
from distribute.distributed_input.interfaces import DistributedDataset, DistributedIterator

__all__ = [
    "DistributedDataset",
    "DistributedDatasetsFromFunction",
    "DistributedIterator",
    "InputOptions",
    "InputReplicationMode",
    "PerReplicaSpec",
    "RebatchedDistributedDataset",
]

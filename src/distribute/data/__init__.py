"""``distribute.data``: a tf.data-style input pipeline on torch tensors.

Glossary:

* **Dataset** -- an immutable description of a sequence of elements: a source
  (``Dataset.range``, ``from_tensor_slices``, ``TFRecordDataset``, ...) followed by
  transformations (``map``, ``batch``, ``shuffle``, ...). Each call returns a new dataset.
* **Element** -- a tensor, ``bytes`` (strings), or a tuple, namedtuple or dict of elements.
* **Iterator** -- what ``iter(dataset)`` returns: a position in the sequence, which can be saved
  with ``state_dict()`` and restored with ``load_state_dict()``.
* **element_spec** -- the structure of :class:`~distribute.TensorSpec` describing every element.
* **cardinality** -- the number of elements, or ``INFINITE_CARDINALITY`` / ``UNKNOWN_CARDINALITY``.
* **Options** -- pipeline-wide settings; ``experimental_distribute.auto_shard_policy`` tells
  distributed input how to split the data between workers.

Example:
    >>> from distribute.data import Dataset
    >>> ds = Dataset.from_tensor_slices((torch.arange(10.), torch.arange(10))).shuffle(10, seed=0).batch(4)
    >>> it = iter(ds)
    >>> x, y = next(it)
    >>> state = it.state_dict()

The pipeline knows nothing about distribution; ``distribute.distributed_input`` builds on it.
See docs/data.md for the guide and the differences from tf.data.
"""

from distribute.data import experimental
from distribute.data._common import AUTOTUNE, INFINITE_CARDINALITY, SHARD_HINT, UNKNOWN_CARDINALITY
from distribute.data._specs import DatasetSpec, NoneTensorSpec
from distribute.data.dataset import Dataset
from distribute.data.iterator import Iterator
from distribute.data.optional import Optional
from distribute.data.options import AutoShardPolicy, DistributeOptions, OptimizationOptions, Options
from distribute.data.readers import FixedLengthRecordDataset, TextLineDataset, TFRecordDataset, TFRecordWriter

__all__ = [
    "AUTOTUNE",
    "AutoShardPolicy",
    "Dataset",
    "DatasetSpec",
    "DistributeOptions",
    "FixedLengthRecordDataset",
    "INFINITE_CARDINALITY",
    "Iterator",
    "NoneTensorSpec",
    "OptimizationOptions",
    "Optional",
    "Options",
    "SHARD_HINT",
    "TFRecordDataset",
    "TFRecordWriter",
    "TextLineDataset",
    "UNKNOWN_CARDINALITY",
    "experimental",
]

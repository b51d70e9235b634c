"""Dataset.list_files: the file names matching glob patterns.

The names are matched once, when the dataset is built, sorted, and (unless ``shuffle=False``)
shuffled by a ``shuffle`` node over all of them, so each iteration sees a new order. The
result is an ordinary graph, ``from_tensor_slices(names).shuffle(len(names), seed)``, that a
rewriter can shard.
"""

from __future__ import annotations

import glob
import os
from typing import Any, List, Optional

import numpy as np

from distribute.data.dataset import Dataset
from distribute.data.readers._files import path_of
from distribute.errors import InvalidArgumentError

__all__ = ["list_files"]


def _patterns(file_pattern: Any) -> List[str]:
    if isinstance(file_pattern, (str, bytes, os.PathLike)):
        return [path_of(file_pattern)]
    if isinstance(file_pattern, (list, tuple, np.ndarray)) and len(file_pattern):
        return [path_of(p) for p in file_pattern]
    raise TypeError(
        f"Expected `file_pattern` to be a glob pattern or a list of them; received {file_pattern!r}."
    )


def list_files(file_pattern: Any, shuffle: Optional[bool] = None, seed: Optional[int] = None,
               name: Optional[str] = None) -> Dataset:
    """See :meth:`Dataset.list_files`."""
    patterns = _patterns(file_pattern)
    matches = sorted({m for p in patterns for m in glob.glob(p) if not os.path.isdir(m)})
    if not matches:
        raise InvalidArgumentError(
            f"No files matched pattern: {', '.join(patterns)}. Check the path and the wildcard."
        )
    names = np.empty(len(matches), dtype=object)
    names[:] = [os.fsencode(m) for m in matches]
    dataset = Dataset.from_tensor_slices(names, name=name)
    if shuffle is None or shuffle:
        dataset = dataset.shuffle(len(matches), seed=seed)
    return dataset

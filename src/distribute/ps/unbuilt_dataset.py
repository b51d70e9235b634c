"""What ParameterServerStrategy's dataset methods return: a dataset each worker builds later."""

from __future__ import annotations

from typing import Any, Callable, Iterator

__all__ = ["UnbuiltDataset"]

UNBUILT_ERROR = ("To use this dataset, you need to pass this dataset to "
                 "ClusterCoordinator.create_per_worker_dataset.")


class UnbuiltDataset:
    """A distributed dataset of ``ParameterServerStrategy``, built on each worker by
    ``ClusterCoordinator.create_per_worker_dataset``.

    Example:
        >>> ds = UnbuiltDataset(lambda: [1, 2])
        >>> iter(ds)
        Traceback (most recent call last):
        ...
        ValueError: To use this dataset, you need to pass this dataset to ClusterCoordinator.create_per_worker_dataset.
    """

    def __init__(self, dataset_fn: Callable[..., Any]) -> None:
        self.dataset_fn = dataset_fn

    def __iter__(self) -> Iterator[Any]:
        raise ValueError(UNBUILT_ERROR)

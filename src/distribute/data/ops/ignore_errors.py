"""Dataset.ignore_errors: drops the elements whose computation raised an exception.

An exception from the input (a map function, a corrupt record, ...) is swallowed and the
next element is read instead, as in tf.data; with ``log_warning=True`` each one is logged.
"""

from __future__ import annotations

import logging
from typing import Any, Optional

from distribute.data._common import UNKNOWN_CARDINALITY, check_bool
from distribute.data.dataset import Dataset, UnaryDataset
from distribute.data.iterator import IterContext, IteratorImpl, UnaryIteratorImpl

__all__ = ["IgnoreErrorsDataset"]

_LOG = logging.getLogger("distribute.data")

class _IgnoreErrorsIterator(UnaryIteratorImpl):
    op = "ignore_errors"

    def __init__(self, dataset: "IgnoreErrorsDataset", ctx: IterContext) -> None:
        super().__init__(dataset, ctx)
        self._log = dataset.log_warning

    def next(self) -> Any:
        while True:
            try:
                return self._input.next()
            except Exception as exc:  # noqa: BLE001  the transformation's purpose
                if self._log:
                    _LOG.warning("ignore_errors: dropped an element: %s: %s", type(exc).__name__, exc)

class IgnoreErrorsDataset(UnaryDataset):
    """``ds.ignore_errors(log_warning)``; attribute ``log_warning``."""

    _op = "ignore_errors"
    _batch_size_passthrough = True

    def __init__(self, input_dataset: Dataset, log_warning: bool = False,
                 name: Optional[str] = None) -> None:
        self.log_warning = check_bool("log_warning", log_warning)
        super().__init__(input_dataset, name)

    def _cardinality(self) -> int:
        return UNKNOWN_CARDINALITY

    def _make_sequential_iterator(self, ctx: IterContext) -> IteratorImpl:
        return _IgnoreErrorsIterator(self, ctx)

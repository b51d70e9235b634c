"""Dataset.with_options: attaches :class:`~distribute.data.Options` to a pipeline.

The node changes no element: iterating it iterates its input. ``dataset.options()`` merges
every attached options object, a later attachment winning field by field.
"""

from __future__ import annotations

from typing import Any, Optional

from distribute.data.dataset import Dataset, UnaryDataset
from distribute.data.iterator import IterContext, IteratorImpl
from distribute.data.options import Options

__all__ = ["OptionsDataset"]


class OptionsDataset(UnaryDataset):
    """``ds.with_options(options)``; attribute ``options_value``."""

    _op = "with_options"
    _batch_size_passthrough = True

    def __init__(self, input_dataset: Dataset, options: Options, name: Optional[str] = None) -> None:
        if not isinstance(options, Options):
            raise TypeError(
                f"Expected `options` to be a distribute.data.Options; received {type(options).__name__}."
            )
        self.options_value = options
        super().__init__(input_dataset, name)

    def _collect_options(self) -> Options:
        return self._input_dataset._collect_options().merge(self.options_value)

    def _random_access(self) -> Any:
        return self._input_dataset._random_access()

    def _make_iterator(self, ctx: IterContext) -> IteratorImpl:
        return self._input_dataset._make_iterator(ctx)

"""Optional: a value that may be missing, as returned by ``get_next_as_optional()``.

It mirrors ``tf.experimental.Optional``: ``has_value()`` says whether a value is there and
``get_value()`` returns it, raising :class:`~distribute.errors.InvalidArgumentError` when
the optional is empty. Its ``element_spec`` describes the value it holds or would hold.
"""

from __future__ import annotations

from typing import Any

from distribute.data import _structure
from distribute.errors import InvalidArgumentError

__all__ = ["Optional"]

_NO_VALUE = object()


class Optional:
    """A value or nothing (``tf.experimental.Optional``).

    Example:
        >>> opt = Optional.from_value(torch.tensor(3))
        >>> opt.has_value(), int(opt.get_value())
        (True, 3)
    """

    __slots__ = ("_value", "_spec")

    def __init__(self, value: Any = _NO_VALUE, element_spec: Any = None) -> None:
        self._value = value
        self._spec = element_spec

    @staticmethod
    def from_value(value: Any) -> "Optional":
        """An optional holding ``value`` (numbers and arrays are converted to tensors)."""
        element = _structure.normalize(value, "Optional.from_value")
        return Optional(element, None)

    @staticmethod
    def empty(element_spec: Any) -> "Optional":
        """An optional with no value, for elements described by ``element_spec``."""
        return Optional(_NO_VALUE, element_spec)

    def has_value(self) -> bool:
        """True when a value is present."""
        return self._value is not _NO_VALUE

    def get_value(self) -> Any:
        """The value; raises InvalidArgumentError when empty."""
        if self._value is _NO_VALUE:
            raise InvalidArgumentError(
                "The optional has no value: check has_value() before calling get_value()."
            )
        return self._value

    @property
    def element_spec(self) -> Any:
        """The structure of TensorSpecs of the value."""
        if self._spec is None and self._value is not _NO_VALUE:
            self._spec = _structure.spec_of(self._value)
        return self._spec

    def __repr__(self) -> str:
        if self._value is _NO_VALUE:
            return "Optional(<empty>)"
        return f"Optional({self._value!r})"

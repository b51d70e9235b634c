"""The reduction and variable-policy vocabulary: ReduceOp and the variable enums."""

from __future__ import annotations

import enum
from typing import Union

__all__ = ["ReduceOp", "VariableAggregation", "VariableSynchronization"]


class VariableSynchronization(enum.Enum):
    """When the components of a distributed variable are brought into agreement.

    ``AUTO`` lets the strategy choose (``ON_WRITE`` for mirrored strategies); ``ON_WRITE``
    keeps every component equal at every write; ``ON_READ`` lets each replica write its own
    component and aggregates them when the variable is read in cross-replica context.
    """

    AUTO = 0
    NONE = 1
    ON_WRITE = 2
    ON_READ = 3


class VariableAggregation(enum.Enum):
    """How writes (ON_WRITE) or reads (ON_READ) of a distributed variable are aggregated."""

    NONE = 0
    SUM = 1
    MEAN = 2
    ONLY_FIRST_REPLICA = 3


class ReduceOp(enum.Enum):
    """How values from several replicas are combined: ``SUM`` or ``MEAN``.

    Example:
        >>> ReduceOp.resolve("sum")
        <ReduceOp.SUM: 'SUM'>
    """

    SUM = "SUM"
    MEAN = "MEAN"

    @staticmethod
    def from_variable_aggregation(aggregation: VariableAggregation) -> "ReduceOp":
        """Maps ``VariableAggregation.SUM``/``MEAN`` to the matching ``ReduceOp``."""
        mapping = {VariableAggregation.SUM: ReduceOp.SUM, VariableAggregation.MEAN: ReduceOp.MEAN}
        if aggregation not in mapping:
            raise ValueError(
                "Could not convert from `distribute.VariableAggregation` "
                f"{aggregation} to `distribute.ReduceOp` type"
            )
        return mapping[aggregation]

    @staticmethod
    def resolve(reduce_op: Union["ReduceOp", str]) -> "ReduceOp":
        """Accepts a ``ReduceOp`` or a case-insensitive string such as ``"sum"``."""
        if isinstance(reduce_op, ReduceOp):
            return reduce_op
        if isinstance(reduce_op, str):
            return ReduceOp(reduce_op.upper())
        if isinstance(reduce_op, VariableAggregation):
            raise TypeError(
                f"Expected a ReduceOp or one of the strings 'SUM'/'MEAN', received the "
                f"VariableAggregation {reduce_op}. Use ReduceOp.from_variable_aggregation() "
                "to convert it."
            )
        raise TypeError(
            f"Expected a ReduceOp or one of the strings 'SUM'/'MEAN', received "
            f"{reduce_op!r} of type {type(reduce_op).__name__}."
        )

"""Loss helpers for training under a strategy (the ``tf.nn`` counterparts).

Each replica sees only its slice of the global batch, so a loss must be divided by the
*global* batch size: summing the replicas' gradients then gives the gradient of the mean
over the whole batch, even when the last batch gives some replicas fewer (or no) examples.
Both helpers belong in the replica function; in a strategy's cross-replica context they
raise, as TensorFlow's do (outside any scope they see one replica).
"""

from __future__ import annotations

from typing import Any, Optional, Sequence, cast

import numpy as np
import torch

from distribute._core import context
from distribute.errors import InvalidArgumentError

__all__ = ["compute_average_loss", "scale_regularization_loss"]

_CROSS_REPLICA = ("You are calling `{}` in cross replica context, while it was expected to be called in "
                  "replica context.")


def _num_replicas(caller: str) -> int:
    if context.has_strategy() and context.in_cross_replica_context():
        raise RuntimeError(_CROSS_REPLICA.format(caller) + " Call it inside the function given to "
                           "strategy.run.")
    ctx = context.get_replica_context()
    return ctx.num_replicas_in_sync if ctx is not None else context.get_strategy().num_replicas_in_sync


def _as_loss_tensor(value: Any, what: str) -> torch.Tensor:
    if isinstance(value, torch.Tensor):
        return value
    try:
        return torch.as_tensor(value)
    except (TypeError, ValueError, RuntimeError) as exc:
        raise TypeError(f"Expected `{what}` to be a tensor or convertible to one, received {value!r} "
                        f"of type {type(value).__name__}: {exc}") from None


def _weighted(loss: torch.Tensor, sample_weight: Any) -> torch.Tensor:
    """``loss * sample_weight`` with Keras' rank rule: weights of rank ``r - 1`` are per example."""
    weight = _as_loss_tensor(sample_weight, "sample_weight").to(loss.device)
    if weight.dtype != loss.dtype:
        weight = weight.to(loss.dtype)
    if weight.dim() == loss.dim() - 1:
        weight = weight.unsqueeze(-1)
    elif weight.dim() == loss.dim() + 1 and weight.shape[-1] == 1:
        weight = weight.squeeze(-1)
    try:
        fits = torch.broadcast_shapes(weight.shape, loss.shape) == loss.shape
    except RuntimeError:
        fits = False
    if not fits:
        raise InvalidArgumentError(
            f"sample_weight of shape {tuple(weight.shape)} cannot be broadcast against per_example_loss of "
            f"shape {tuple(loss.shape)}. Pass one weight per example (shape {tuple(loss.shape[:1])}), a "
            "scalar, or weights of the loss's shape.")
    return loss * weight


def _check_global_batch_size(global_batch_size: Any) -> int:
    value = global_batch_size
    if isinstance(value, torch.Tensor):
        if value.dim() != 0 or value.is_floating_point() or value.is_complex() or value.dtype == torch.bool:
            raise TypeError(f"global_batch_size must be an integer scalar, received a tensor of shape "
                            f"{tuple(value.shape)} and dtype {value.dtype}.")
        value = int(value)
    if isinstance(value, bool) or not isinstance(value, (int, np.integer)):
        raise TypeError(f"global_batch_size must be an integer, received {global_batch_size!r} of type "
                        f"{type(global_batch_size).__name__}. Pass the number of examples in the global batch.")
    if value < 0:
        raise InvalidArgumentError(f"global_batch_size must be non-negative, received {int(value)}.")
    return int(value)


def compute_average_loss(per_example_loss: Any, global_batch_size: Optional[int] = None,
                         sample_weight: Any = None) -> torch.Tensor:
    """``sum(per_example_loss * sample_weight) / global_batch_size``, to call in each replica.

    Args:
        per_example_loss: one loss per example of this replica's batch (rank >= 1; extra
            dimensions are summed too).
        global_batch_size: the batch size over all replicas (an int, or an integer scalar
            tensor); by default this replica's batch size times ``num_replicas_in_sync``,
            which is only right when every replica gets a full batch. ``0`` gives ``0``.
        sample_weight: optional weights: a scalar, one weight per example, or weights
            broadcastable to the loss.

    Returns:
        A scalar tensor of the loss's dtype (integer losses give the default float dtype).

    Raises:
        ValueError: ``per_example_loss`` is a scalar, ``global_batch_size`` is negative, or
            ``sample_weight`` does not fit the loss.
        TypeError: ``global_batch_size`` is not an integer.
        RuntimeError: called in a strategy's cross-replica context.

    Example:
        >>> compute_average_loss(torch.tensor([1.0, 3.0]), global_batch_size=4)
        tensor(1.)
    """
    loss = _as_loss_tensor(per_example_loss, "per_example_loss")
    if loss.dim() == 0:
        raise ValueError("Invalid value passed for `per_example_loss`. Expected a tensor with at least rank 1. "
                         f"Received per_example_loss={loss.item()!r} with rank 0. Return one loss per example "
                         "(for example reduction='none' in torch.nn losses).")
    if sample_weight is not None:
        loss = _weighted(loss, sample_weight)
    if global_batch_size is None:
        global_batch_size = loss.shape[0] * _num_replicas("compute_average_loss")
    else:
        global_batch_size = _check_global_batch_size(global_batch_size)
    total = loss.sum()
    if global_batch_size == 0:
        return total * 0 if total.is_floating_point() else torch.zeros((), device=total.device)
    return total / global_batch_size


def scale_regularization_loss(regularization_loss: Any) -> torch.Tensor:
    """Sums ``regularization_loss`` and divides it by ``num_replicas_in_sync``.

    Every replica adds the same regularization term to its loss, and the replicas' gradients
    are summed, so each must contribute ``1 / num_replicas_in_sync`` of it.

    Args:
        regularization_loss: a tensor or a list of tensors (for example one penalty per layer);
            all of their elements are summed.

    Raises:
        RuntimeError: called in a strategy's cross-replica context.

    Example:
        >>> scale_regularization_loss([torch.tensor(4.0), torch.tensor(2.0)])  # one replica
        tensor(6.)
    """
    if isinstance(regularization_loss, Sequence) and not isinstance(regularization_loss, (str, bytes)):
        if not regularization_loss:
            raise ValueError("scale_regularization_loss received an empty list; pass at least one loss tensor.")
        # A non-empty sum of tensors is a tensor (``sum``'s start 0 is typed as an int).
        total = cast(torch.Tensor, sum(_as_loss_tensor(x, "regularization_loss").sum() for x in regularization_loss))
    else:
        total = _as_loss_tensor(regularization_loss, "regularization_loss").sum()
    return total / _num_replicas("scale_regularization_loss")

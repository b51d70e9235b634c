"""Loss helpers for training under a strategy (the ``tf.nn`` counterparts).

Each replica sees only its slice of the global batch, so a loss must be divided by the
*global* batch size: summing the replicas' gradients then gives the gradient of the mean
over the whole batch, even when the last batch gives some replicas fewer (or no) examples.
"""

from __future__ import annotations

from typing import Any, Optional

import torch

from distribute._core import context

__all__ = ["compute_average_loss", "scale_regularization_loss"]


def _num_replicas() -> int:
    ctx = context.get_replica_context()
    return ctx.num_replicas_in_sync if ctx is not None else context.get_strategy().num_replicas_in_sync


def compute_average_loss(per_example_loss: torch.Tensor, global_batch_size: Optional[int] = None,
                         sample_weight: Any = None) -> torch.Tensor:
    """``sum(per_example_loss * sample_weight) / global_batch_size``.

    Args:
        per_example_loss: one loss per example of this replica's batch (rank >= 1).
        global_batch_size: the batch size over all replicas; by default this replica's
            batch size times ``num_replicas_in_sync``.
        sample_weight: optional weights, broadcast against ``per_example_loss``.

    Example:
        >>> compute_average_loss(torch.tensor([1.0, 3.0]), global_batch_size=4)
        tensor(1.)
    """
    if not isinstance(per_example_loss, torch.Tensor):
        per_example_loss = torch.as_tensor(per_example_loss)
    if sample_weight is not None:
        per_example_loss = per_example_loss * torch.as_tensor(sample_weight, dtype=per_example_loss.dtype,
                                                              device=per_example_loss.device)
    if global_batch_size is None:
        if per_example_loss.dim() == 0:
            raise ValueError("compute_average_loss needs per_example_loss of rank >= 1 to infer the batch "
                             "size, received a scalar. Pass global_batch_size, or one loss per example.")
        global_batch_size = per_example_loss.shape[0] * _num_replicas()
        if global_batch_size == 0:
            return per_example_loss.sum() * 0.0
    elif not isinstance(global_batch_size, int) or isinstance(global_batch_size, bool) or global_batch_size <= 0:
        raise ValueError(f"global_batch_size must be a positive int or None, received {global_batch_size!r}.")
    return per_example_loss.sum() / global_batch_size


def scale_regularization_loss(regularization_loss: torch.Tensor) -> torch.Tensor:
    """Divides a regularization loss by ``num_replicas_in_sync`` (it is added on every replica)."""
    return regularization_loss / _num_replicas()

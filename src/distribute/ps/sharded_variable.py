"""``distribute.ShardedVariable``: one logical variable split along its first axis over ps tasks.

``ParameterServerStrategy(variable_partitioner=...)`` creates one when the partitioner splits a
variable into more than one shard. Each shard is a variable on its own ``ps`` task
(``variables``); the first ``rows % shards`` shards hold one extra row. To torch operations it is
the concatenation of its shards, except for an embedding lookup (``torch.nn.Embedding``,
``F.embedding``), which reads only the requested rows and sends back only their gradient rows:
a large table never crosses the wire whole.
"""

from __future__ import annotations

from typing import Any, Callable, List, Optional, Sequence, Tuple, cast

import numpy as np
import torch
import torch.nn.functional as F

from distribute._core.variables import Variable, dtype_name, numpy_text
from distribute.ps import closure_state
from distribute.ps.variables import RemoteVariable, _OnePS, read_variables

__all__ = ["ShardedVariable"]

_Disable = torch._C.DisableTorchFunctionSubclass


class ShardedVariable(RemoteVariable):
    """A variable stored as shards on several parameter servers.

    Example:
        >>> # strategy = distribute.ParameterServerStrategy(resolver,
        >>> #     variable_partitioner=distribute.experimental.partitioners.FixedShardsPartitioner(2))
        >>> # with strategy.scope(): v = distribute.Variable(torch.zeros(5, 2))
        >>> # [s.shape for s in v.variables] -> [torch.Size([3, 2]), torch.Size([2, 2])]
    """

    _shards: List[_OnePS]
    _offsets: List[int]
    _on_worker: bool

    @classmethod
    def _make(cls, shards: Sequence[_OnePS], name: str, trainable: bool, on_worker: bool) -> "ShardedVariable":
        first = shards[0]
        rows = sum(int(s.shape[0]) for s in shards)
        shape = (rows,) + tuple(first.shape[1:])
        with _Disable():
            base = torch.zeros((), dtype=first.dtype).expand(shape)
        var = cast(ShardedVariable, torch.Tensor._make_subclass(cls, base, trainable))
        var._init_attributes(name, trainable, first._synchronization, first._aggregation)
        var._conns, var._shards, var._on_worker = first._conns, list(shards), on_worker
        var._offsets = list(np.cumsum([0] + [int(s.shape[0]) for s in shards])[:-1])
        return var

    @property
    def variables(self) -> List[Variable]:
        """The shards, in order (``name/part_0``, ``name/part_1``, ...)."""
        return list(self._shards)

    def _local_shards(self) -> List[torch.Tensor]:
        read_variables(self._shards)
        return [s._local_value() for s in self._shards]

    def read_value(self) -> torch.Tensor:
        """The full value: the shards concatenated."""
        with _Disable():
            return torch.cat(self._local_shards())

    def _dense(self) -> torch.Tensor:
        """The tensor operations see: in a closure, one leaf per closure that collects the gradient."""
        state = closure_state.current()
        if state is None or not self._on_worker:
            return self.read_value()
        full = state.dense.get(id(self))
        if full is None:
            if id(self) in state.prefetched:  # read with the closure's other variables
                with _Disable():
                    value = torch.cat([s._local_value() for s in self._shards])
            else:
                value = self.read_value()
            full = state.dense[id(self)] = value.detach().requires_grad_(self._trainable)
            state.dense_users[id(self)] = self
        return full

    def _write(self, fn: Callable[[torch.Tensor, torch.Tensor], Any], value: Any, what: str,
               read_value: bool) -> Optional[torch.Tensor]:
        tensor = self._coerce(value, what)
        for shard, offset in zip(self._shards, self._offsets):
            shard._write(fn, tensor[offset:offset + int(shard.shape[0])], what, read_value=False)
        return self.read_value() if read_value else None

    def _plain_repr(self) -> str:
        return (f"<distribute.ShardedVariable '{self.name}' shape={tuple(self.shape)} "
                f"dtype={dtype_name(self.dtype)}, shards={len(self._shards)}, "
                f"numpy={numpy_text(self.read_value().detach().numpy())}>")

    def __repr__(self) -> str:  # type: ignore[override]
        return self._plain_repr()

    __str__ = __repr__

    def __reduce_ex__(self, proto: Any) -> Any:
        return (_rebuild_plain, (self.read_value(), self._trainable, self._var_name))

    @classmethod
    def __torch_function__(cls, func: Callable, types: Any, args: tuple = (), kwargs: Optional[dict] = None) -> Any:
        from distribute.ps.dispatch import dispatch
        return dispatch(func, args, kwargs or {})

    # -- embedding lookups ------------------------------------------------------------
    def _rows(self, ids: torch.Tensor) -> torch.Tensor:
        """The rows ``ids`` (unique, sorted), read from the shards that hold them, in parallel."""
        out = torch.empty((ids.numel(),) + tuple(self.shape[1:]), dtype=self.dtype)
        pending = []
        for shard, offset in zip(self._shards, self._offsets):
            mask = (ids >= offset) & (ids < offset + int(shard.shape[0]))
            if bool(mask.any()):
                local = ids[mask] - offset
                call = self._conns.ps(shard._ps).call_async("ReadRows", {"id": shard._var_id}, [local])
                pending.append((mask, call))
        for mask, call in pending:
            out[mask] = cast(torch.Tensor, call()[1][0])
        return out

    def _embedding(self, input: torch.Tensor, weight: Any = None, padding_idx: Optional[int] = None,
                   max_norm: Optional[float] = None, norm_type: float = 2.0, scale_grad_by_freq: bool = False,
                   sparse: bool = False) -> torch.Tensor:
        if max_norm is not None:
            raise ValueError("An embedding lookup of a ShardedVariable cannot renormalise rows in place "
                             f"(max_norm); received max_norm={max_norm}. Use max_norm=None.")
        with _Disable():
            unique, inverse = torch.unique(input.reshape(-1), return_inverse=True)
            if padding_idx is not None and padding_idx < 0:
                padding_idx += int(self.shape[0])
            rows = self._rows(unique)
            state = closure_state.current()
            if self._trainable and torch.is_grad_enabled():
                rows.requires_grad_(True)
                if state is not None and self._on_worker:
                    state.rows.append((self, unique, rows))
            local_padding = None
            if padding_idx is not None:
                hit = (unique == padding_idx).nonzero()
                local_padding = int(hit[0, 0]) if hit.numel() else None
            return F.embedding(inverse.reshape(input.shape), rows, local_padding, None, norm_type,
                               scale_grad_by_freq, False)

    # -- gradients ----------------------------------------------------------------------
    def _clear_grad(self, set_to_none: bool) -> None:
        state = closure_state.current()
        if state is not None:
            state.clear_grads(self, set_to_none)

    def _gradients(self) -> List[Tuple[Any, str, Any]]:
        state = closure_state.current()
        if state is None:
            return []
        out: List[Tuple[Any, str, Any]] = []
        full = state.dense.get(id(self))
        if full is not None and full.grad is not None:
            for shard, offset in zip(self._shards, self._offsets):
                out.append((shard, "dense", full.grad[offset:offset + int(shard.shape[0])]))
        for owner, ids, rows in state.rows:
            if owner is self and rows.grad is not None:
                out.extend(self._row_gradients(ids, rows.grad))
        return out

    def _row_gradients(self, ids: torch.Tensor, grad: torch.Tensor) -> List[Tuple[Any, str, Any]]:
        out: List[Tuple[Any, str, Any]] = []
        for shard, offset in zip(self._shards, self._offsets):
            mask = (ids >= offset) & (ids < offset + int(shard.shape[0]))
            if bool(mask.any()):
                out.append((shard, "rows", (ids[mask] - offset, grad[mask])))
        return out


def _rebuild_plain(data: torch.Tensor, trainable: bool, name: str) -> Variable:
    return Variable._plain(data, trainable, name)

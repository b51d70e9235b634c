"""The parameter-server task: holds variables and their optimizer state, applies updates.

Calls (all after the handshake of :mod:`distribute.ps.rpc`): ``Create``, ``Read``,
``ReadRows``, ``Assign``, ``Apply`` (dense gradients and the gradient rows of embedding
shards), ``Stats``. Updates of one variable are serialised by its lock; different
variables update concurrently (asynchronous training: no barrier between workers).
"""

from __future__ import annotations

import threading
from typing import Any, Dict, List

import torch

from distribute.errors import NotFoundError
from distribute.ps import wire
from distribute.ps.optimizer_spec import build_optimizer, hyperparameters

__all__ = ["ParameterStore"]


class _Stored:
    def __init__(self, tensor: torch.Tensor, trainable: bool, name: str) -> None:
        self.tensor = torch.nn.Parameter(tensor, requires_grad=trainable and tensor.is_floating_point())
        self.name = name
        self.lock = threading.Lock()
        self.optimizers: Dict[str, torch.optim.Optimizer] = {}
        self.row_state: Dict[str, Dict[str, Any]] = {}


class ParameterStore:
    """The variables of one ``ps`` task, served through :meth:`handlers`."""

    def __init__(self, task: str) -> None:
        self.task = task
        self._vars: Dict[int, _Stored] = {}
        self._lock = threading.Lock()
        self.bytes_out = 0
        self.bytes_in = 0

    def handlers(self) -> Dict[str, Any]:
        """Method name -> handler, for :class:`distribute.ps.rpc.RpcServer`."""
        return {"Create": self._create, "Read": self._read, "ReadRows": self._read_rows, "Assign": self._assign,
                "Apply": self._apply, "Stats": self._stats}

    def _get(self, var_id: int) -> _Stored:
        stored = self._vars.get(int(var_id))
        if stored is None:
            raise NotFoundError(f"{self.task} holds no variable {var_id}: it was created on another task, or "
                                "this task restarted and lost its variables (restart the coordinator).")
        return stored

    def _count_in(self, buffers: List[wire.Buffer]) -> None:
        self.bytes_in += sum(b.numel() * b.element_size() if isinstance(b, torch.Tensor) else len(b)
                             for b in buffers)

    def _out(self, tensors: List[torch.Tensor]) -> wire.Message:
        self.bytes_out += sum(t.numel() * t.element_size() for t in tensors)
        return {}, list(tensors)

    def _create(self, meta: Dict[str, Any], buffers: List[wire.Buffer]) -> wire.Message:
        tensor = buffers[0]
        assert isinstance(tensor, torch.Tensor)
        with self._lock:
            self._vars[int(meta["id"])] = _Stored(tensor.clone(), bool(meta["trainable"]), str(meta["name"]))
        return {}, []

    def _read(self, meta: Dict[str, Any], buffers: List[wire.Buffer]) -> wire.Message:
        out = []
        for var_id in meta["ids"]:
            stored = self._get(var_id)
            with stored.lock, torch.no_grad():
                out.append(stored.tensor.detach().clone())
        return self._out(out)

    def _read_rows(self, meta: Dict[str, Any], buffers: List[wire.Buffer]) -> wire.Message:
        stored, ids = self._get(meta["id"]), buffers[0]
        assert isinstance(ids, torch.Tensor)
        self._count_in(buffers)
        with stored.lock, torch.no_grad():
            return self._out([stored.tensor.detach().index_select(0, ids)])

    def _assign(self, meta: Dict[str, Any], buffers: List[wire.Buffer]) -> wire.Message:
        stored, value = self._get(meta["id"]), buffers[0]
        assert isinstance(value, torch.Tensor)
        ops: Dict[str, Any] = {"assign": torch.Tensor.copy_, "add": torch.Tensor.add_, "sub": torch.Tensor.sub_}
        op = ops[meta["op"]]
        with stored.lock, torch.no_grad():
            op(stored.tensor, value.to(stored.tensor.dtype))
            return self._out([stored.tensor.detach().clone()] if meta.get("read", True) else [])

    def _apply(self, meta: Dict[str, Any], buffers: List[wire.Buffer]) -> wire.Message:
        """Dense gradients of ``meta['ids']``, then ``(ids, rows)`` pairs for ``meta['rows']``."""
        self._count_in(buffers)
        dense = len(meta["ids"])
        for i, var_id in enumerate(meta.get("rows", ())):  # only the looked-up rows, and their state, change
            stored, ids, rows = self._get(var_id), buffers[dense + 2 * i], buffers[dense + 2 * i + 1]
            assert isinstance(ids, torch.Tensor) and isinstance(rows, torch.Tensor)
            with stored.lock:
                self._step_rows(stored, meta["opt"], ids, rows)
        for var_id, grad in zip(meta["ids"], buffers[:dense]):
            stored = self._get(var_id)
            assert isinstance(grad, torch.Tensor)
            with stored.lock:
                optimizer = self._optimizer(stored, meta["opt"], stored.tensor)
                stored.tensor.grad = grad.to(stored.tensor.dtype).reshape(stored.tensor.shape)
                optimizer.step()
                stored.tensor.grad = None
        return {}, []

    def _optimizer(self, stored: _Stored, spec: Dict[str, Any], param: torch.Tensor) -> torch.optim.Optimizer:
        optimizer = stored.optimizers.get(spec["key"])
        if optimizer is None:
            optimizer = stored.optimizers[spec["key"]] = build_optimizer(spec, [param])
        else:  # follow the coordinator's hyperparameters (a learning-rate schedule, say)
            optimizer.param_groups[0].update(hyperparameters(spec))
        return optimizer

    def _step_rows(self, stored: _Stored, spec: Dict[str, Any], ids: torch.Tensor, rows: torch.Tensor) -> None:
        full = stored.tensor
        state = stored.row_state.setdefault(spec["key"], {})
        with torch.no_grad():
            part = torch.nn.Parameter(full.detach().index_select(0, ids))
        optimizer = build_optimizer(spec, [part])
        gathered = optimizer.state[part]
        for name, value in state.items():
            gathered[name] = value.index_select(0, ids) if _full_shaped(value, full) else value
        part.grad = rows.to(full.dtype)
        optimizer.step()
        with torch.no_grad():
            full.index_copy_(0, ids, part.detach())
            for name, value in optimizer.state[part].items():
                if isinstance(value, torch.Tensor) and value.dim() > 0 and value.shape == part.shape:
                    if name not in state:
                        state[name] = _initial_state(optimizer, name, full)
                    state[name].index_copy_(0, ids, value)
                else:
                    state[name] = value

    def _stats(self, meta: Dict[str, Any], buffers: List[wire.Buffer]) -> wire.Message:
        return {"bytes_out": self.bytes_out, "bytes_in": self.bytes_in, "variables": len(self._vars)}, []


def _full_shaped(value: Any, full: torch.Tensor) -> bool:
    return isinstance(value, torch.Tensor) and value.dim() > 0 and value.shape == full.shape


def _initial_state(optimizer: torch.optim.Optimizer, name: str, full: torch.Tensor) -> torch.Tensor:
    """A full-size state tensor for rows not yet updated: Adagrad's initial accumulator, else zeros."""
    if name == "sum":
        fill = float(optimizer.param_groups[0].get("initial_accumulator_value", 0.0))
        return torch.full_like(full.detach(), fill)
    return torch.zeros_like(full.detach())

"""Variables that live on parameter servers.

``ParameterServerStrategy`` creates one :class:`PSVariable` per variable (or one per shard of a
``ShardedVariable``). The value lives on a ``ps`` task; the coordinator's object is a handle
whose tensor is a cache:

* on the coordinator, every read fetches the current value first (a torch operation on the
  variable, ``read_value``, ``numpy``, ``repr``) and an in-place torch operation (a module's
  initialiser) is written back; ``assign*`` run on the parameter server;
* on a worker, a scheduled function sees a :class:`WorkerVariable`, read once when the closure
  starts (TensorFlow's caching of variable reads in a closure); ``loss.backward()`` leaves its
  gradient in ``.grad`` and ``distribute.optim``'s ``step()`` sends it to the parameter server,
  which applies the update (asynchronous training).

``v.device`` names the task as TensorFlow does: ``'/job:ps/replica:0/task:1/device:CPU:0'``.
"""

from __future__ import annotations

from typing import Any, Callable, Dict, List, Optional, Sequence, Tuple, cast

import numpy as np
import torch

from distribute._core.variables import Variable
from distribute.ps.connections import Connections

__all__ = ["PSVariable", "RemoteVariable", "TaskDevice", "WorkerVariable", "read_variables", "task_device",
           "variable_ref"]

_Disable = torch._C.DisableTorchFunctionSubclass
_OPS = {"assign": "assign", "assign_add": "add", "assign_sub": "sub"}


class TaskDevice(str):
    """A TensorFlow device string that also answers ``.type``/``.index`` like a ``torch.device``."""

    type = "cpu"
    index = None


def task_device(ps: int) -> TaskDevice:
    """``'/job:ps/replica:0/task:<ps>/device:CPU:0'``."""
    return TaskDevice(f"/job:ps/replica:0/task:{ps}/device:CPU:0")


class RemoteVariable(Variable):
    """A variable (or sharded variable) whose value lives on parameter servers."""

    _conns: Connections

    def _coerce(self, value: Any, what: str) -> torch.Tensor:
        if isinstance(value, Variable):
            value = value.read_value()
        tensor = value if isinstance(value, torch.Tensor) else torch.as_tensor(np.asarray(value))
        with _Disable():
            tensor = tensor.detach().to(dtype=self.dtype, device="cpu")
            if tuple(tensor.shape) != tuple(self.shape):
                if tensor.numel() != 1:
                    raise ValueError(f"Cannot {what} a value of shape {tuple(tensor.shape)} to variable "
                                     f"{self.name!r} of shape {tuple(self.shape)}.")
                tensor = tensor.reshape(()).expand(tuple(self.shape)).contiguous()
        return tensor

    def _clear_grad(self, set_to_none: bool) -> None:
        """Clears this variable's gradient (``zero_grad``)."""
        if self.grad is not None:
            if set_to_none:
                self.grad = None
            else:
                self.grad.detach_()
                self.grad.zero_()

    def _gradients(self) -> List[Tuple["PSVariable", str, Any]]:
        """``(shard, kind, payload)`` for each gradient to send: ``('dense', grad)`` or
        ``('rows', (ids, rows))``."""
        return []


class _OnePS(RemoteVariable):
    """The parts shared by both ends' handles of one variable on one ``ps`` task."""

    _ps: int
    _var_id: int

    def _init_remote(self, conns: Connections, ps: int, var_id: int) -> None:
        self._conns, self._ps, self._var_id = conns, ps, var_id

    @property
    def placement(self) -> Tuple[int, int]:
        """``(ps task index, variable id)``."""
        return self._ps, self._var_id

    def _store(self, value: torch.Tensor) -> None:
        with torch.no_grad(), _Disable():
            torch.Tensor.copy_(self, value.reshape(self.shape))

    def _write(self, fn: Callable[[torch.Tensor, torch.Tensor], Any], value: Any, what: str,
               read_value: bool) -> Optional[torch.Tensor]:
        tensor = self._coerce(value, what)
        _, buffers = self._conns.ps(self._ps).call("Assign", {"id": self._var_id, "op": _OPS[what], "read": True},
                                                   [tensor])
        self._store(cast(torch.Tensor, buffers[0]))
        return self._local_value() if read_value else None

    def _local_value(self) -> torch.Tensor:
        with _Disable():
            return torch.Tensor.clone(self)

    def _gradients(self) -> List[Tuple["PSVariable", str, Any]]:
        grad = self.grad
        return [] if grad is None else [(cast(PSVariable, self), "dense", grad)]


class PSVariable(_OnePS):
    """The coordinator's handle of a variable on a parameter server.

    Example:
        >>> # with strategy.scope(): v = distribute.Variable(1.0)
        >>> # v.device -> '/job:ps/replica:0/task:0/device:CPU:0'; v.assign_add(1.0) runs on ps:0
    """

    @classmethod
    def _create(cls, conns: Connections, ps: int, var_id: int, tensor: torch.Tensor, kwargs: Dict[str, Any]
                ) -> "PSVariable":
        var = cast(PSVariable, Variable._plain(initial_value=tensor, _cls=cls, **kwargs))
        var._init_remote(conns, ps, var_id)
        conns.ps(ps).call("Create", {"id": var_id, "name": var._var_name, "trainable": var._trainable}, [tensor])
        return var

    @property
    def device(self) -> TaskDevice:  # type: ignore[override]  # TensorFlow's device string
        """Where the value lives: ``'/job:ps/replica:0/task:<k>/device:CPU:0'``."""
        return task_device(self._ps)

    def _pull(self) -> None:
        _, buffers = self._conns.ps(self._ps).call("Read", {"ids": [self._var_id]})
        self._store(cast(torch.Tensor, buffers[0]))

    def read_value(self) -> torch.Tensor:
        """The current value, fetched from the parameter server."""
        self._pull()
        return self._local_value()

    def __repr__(self) -> str:  # type: ignore[override]
        self._pull()
        return self._plain_repr()

    __str__ = __repr__

    @classmethod
    def __torch_function__(cls, func: Callable, types: Any, args: tuple = (), kwargs: Optional[dict] = None) -> Any:
        from distribute.ps.dispatch import dispatch
        return dispatch(func, args, kwargs or {})


class WorkerVariable(_OnePS):
    """A worker's copy of a variable inside scheduled functions: read when the closure starts."""

    __torch_function__ = torch._C._disabled_torch_function_impl  # a plain tensor to every operation

    @classmethod
    def _remote(cls, conns: Connections, ref: Tuple[Any, ...]) -> "WorkerVariable":
        _, var_id, ps, name, shape, dtype, trainable = ref
        var = cast(WorkerVariable, Variable._plain(initial_value=torch.zeros(shape, dtype=getattr(torch, dtype)),
                                                   trainable=trainable, name=name, _cls=cls))
        var._init_remote(conns, ps, var_id)
        return var

    def read_value(self) -> torch.Tensor:
        """The value read when this closure started (or written by it since)."""
        return self._local_value()


def variable_ref(var: _OnePS) -> Tuple[Any, ...]:
    """How a variable travels inside a pickled closure: its id, task, name, shape, dtype."""
    return ("var", var._var_id, var._ps, var._var_name, list(var.shape), str(var.dtype).replace("torch.", ""),
            var._trainable)


def read_variables(variables: Sequence[_OnePS]) -> None:
    """Fetches the current values of ``variables``, one call per parameter server, in parallel."""
    by_ps: Dict[int, List[_OnePS]] = {}
    for var in variables:
        by_ps.setdefault(var._ps, []).append(var)
    if not by_ps:
        return
    conns = variables[0]._conns
    pending = [(owned, conns.ps(ps).call_async("Read", {"ids": [v._var_id for v in owned]}))
               for ps, owned in by_ps.items()]
    for owned, future in pending:
        _, buffers = future()
        for var, value in zip(owned, buffers):
            var._store(cast(torch.Tensor, value))

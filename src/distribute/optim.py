"""Strategy-aware optimizers: wrap any ``torch.optim.Optimizer`` for synchronous training.

Inside ``strategy.run``, ``step()`` is one synchronisation point: the gradients of every
replica's component are summed into the primary, the wrapped optimizer updates it once, and
the result is copied to the other components, so all replicas stay identical. Outside a
replica context the wrapper behaves exactly like the optimizer it wraps.

Example:
    >>> import torch, distribute
    >>> strategy = distribute.MirroredStrategy(["CPU:0", "CPU:1"])
    >>> with strategy.scope():
    ...     model = torch.nn.Linear(3, 1)
    ...     opt = distribute.optim.SGD(model.parameters(), lr=0.1, momentum=0.9)
    >>> def step(x):
    ...     opt.zero_grad()
    ...     model(x).sum().backward()
    ...     opt.step()
    >>> strategy.run(step, args=(torch.ones(2, 3),))
"""

from __future__ import annotations

import uuid
from typing import Any, Callable, Dict, Iterable, List, Optional, Tuple

import torch

from distribute._core import context
from distribute._core.distributed_variables import DistributedVariable
from distribute._core.gradients import is_distributed_variable
from distribute._core.replica_context import ReplicaContext
from distribute._core.strategy import Strategy
from distribute.ps.optimizer_step import remote_step
from distribute.ps.variables import RemoteVariable

__all__ = ["Adam", "AdamW", "Optimizer", "SGD"]

_Disable = torch._C.DisableTorchFunctionSubclass


def _in_replica() -> Optional[ReplicaContext]:
    mode = context.current_mode()
    if mode is None or mode.replica_context is None or mode.strategy is context.default_strategy():
        return None
    return mode.replica_context


class Optimizer:
    """Wraps ``optimizer`` so that ``step()`` inside ``strategy.run`` trains synchronously."""

    def __init__(self, optimizer: torch.optim.Optimizer) -> None:
        if not isinstance(optimizer, torch.optim.Optimizer):
            raise TypeError(f"Expected a torch.optim.Optimizer to wrap, received {optimizer!r}.")
        self._optimizer = optimizer
        self._key = uuid.uuid4().hex  # names this optimizer's state on parameter servers

    @property
    def optimizer(self) -> torch.optim.Optimizer:
        """The wrapped torch optimizer."""
        return self._optimizer

    @property
    def param_groups(self) -> list:
        """The wrapped optimizer's parameter groups."""
        return self._optimizer.param_groups

    @property
    def state(self) -> Any:
        """The wrapped optimizer's per-parameter state."""
        return self._optimizer.state

    def state_dict(self) -> Dict[str, Any]:
        """The wrapped optimizer's state dict."""
        return self._optimizer.state_dict()

    def load_state_dict(self, state_dict: Dict[str, Any]) -> None:
        """Restores the wrapped optimizer's state."""
        self._optimizer.load_state_dict(state_dict)

    def add_param_group(self, param_group: Dict[str, Any]) -> None:
        """Adds a parameter group to the wrapped optimizer."""
        self._optimizer.add_param_group(param_group)

    def _params(self) -> Iterable[torch.Tensor]:
        for group in self._optimizer.param_groups:
            yield from group["params"]

    def zero_grad(self, set_to_none: bool = True) -> None:
        """Clears gradients: this replica's components inside ``run``, all of them elsewhere."""
        ctx = _in_replica()
        index = None if ctx is None else ctx._local_id
        with _Disable():
            for p in self._params():
                if issubclass(type(p), RemoteVariable):
                    p._clear_grad(set_to_none)
                    continue
                comps = p._components() if is_distributed_variable(p) else (p,)
                for c in (comps if index is None else comps[index:index + 1] if index < len(comps) else ()):
                    _clear(c, set_to_none)

    def step(self, closure: Optional[Callable[[], Any]] = None) -> Any:
        """One synchronous update (inside ``run``) or a plain update (elsewhere)."""
        if closure is not None and not callable(closure):
            raise TypeError(f"closure must be callable or None, received {closure!r}.")
        ctx = _in_replica()
        if ctx is None:
            return self._apply(closure)
        return ctx.merge_call(lambda strategy: self._apply(closure, strategy))

    def _apply(self, closure: Optional[Callable[[], Any]], strategy: Optional[Strategy] = None) -> Any:
        if any(issubclass(type(p), RemoteVariable) for p in self._params()):
            return remote_step(self._optimizer, self._key, closure)  # the parameter servers update
        params = [p for p in self._params() if is_distributed_variable(p)]
        with _Disable():
            if strategy is not None:  # one step of every replica (of every worker)
                strategy.extended._reduce_gradients(list(self._params()))
            else:  # outside `run`: each variable's own strategy sums what its replicas left
                for owner, owned in _by_strategy(params):
                    owner.extended._reduce_gradients(owned, across_workers=False)
            result = self._optimizer.step(closure)
            for p in params:
                with torch.no_grad():
                    for c in p._others:
                        c.copy_(p)
        return result

    def __repr__(self) -> str:
        return f"distribute.optim.Optimizer({self._optimizer!r})"


def _clear(tensor: torch.Tensor, set_to_none: bool) -> None:
    if tensor.grad is None:
        return
    if set_to_none:
        tensor.grad = None
    else:
        tensor.grad.detach_()
        tensor.grad.zero_()


def _by_strategy(params: List[DistributedVariable]) -> List[Tuple[Strategy, List[DistributedVariable]]]:
    """``params`` grouped by the strategy that made them, in first-seen order."""
    groups: Dict[int, Tuple[Strategy, List[DistributedVariable]]] = {}
    for p in params:
        owner = p._distribute_strategy
        if owner is not None:
            groups.setdefault(id(owner), (owner, []))[1].append(p)
    return list(groups.values())


def _factory(cls: type) -> Callable[..., Optimizer]:
    def make(params: Any, *args: Any, **kwargs: Any) -> Optimizer:
        return Optimizer(cls(params, *args, **kwargs))

    make.__name__ = cls.__name__
    make.__doc__ = f"A ``distribute.optim.Optimizer`` wrapping ``torch.optim.{cls.__name__}(params, ...)``."
    return make


SGD = _factory(torch.optim.SGD)
Adam = _factory(torch.optim.Adam)
AdamW = _factory(torch.optim.AdamW)

"""An optimizer described as data, so a parameter server can rebuild it without running code.

A worker's ``distribute.optim`` optimizer sends, with each update, the name of its
``torch.optim`` class and the hyperparameters of the variable's parameter group (numbers,
booleans, ``None`` and tuples of numbers). The parameter server builds that class from
``torch.optim`` itself, never from anything else.
"""

from __future__ import annotations

from typing import Any, Dict, List, Sequence

import torch

from distribute.errors import InvalidArgumentError

__all__ = ["build_optimizer", "describe_optimizer", "hyperparameters"]

_SCALARS = (bool, int, float, type(None), str)


def _json_value(name: str, value: Any) -> Any:
    if isinstance(value, torch.Tensor) and value.numel() == 1:
        return value.item()
    if isinstance(value, _SCALARS):
        return value
    if isinstance(value, (tuple, list)) and all(isinstance(v, (int, float)) for v in value):
        return list(value)
    raise InvalidArgumentError(f"The optimizer's hyperparameter {name!r} is {value!r}; a parameter server can "
                               "only apply optimizers whose hyperparameters are numbers, booleans, strings or "
                               "tuples of numbers.")


def describe_optimizer(optimizer: torch.optim.Optimizer, group: Dict[str, Any], key: str) -> Dict[str, Any]:
    """The data that rebuilds ``optimizer``'s update for the parameters of ``group``."""
    cls = type(optimizer)
    if getattr(torch.optim, cls.__name__, None) is not cls:
        raise InvalidArgumentError(f"Parameter-server training applies updates with torch.optim's optimizers; "
                                   f"received {cls.__module__}.{cls.__name__}. Wrap one of torch.optim's classes "
                                   "(distribute.optim.SGD, Adam, AdamW, ... ).")
    hp = {name: _json_value(name, value) for name, value in group.items() if name != "params"}
    return {"key": key, "cls": cls.__name__, "hp": hp}


def hyperparameters(spec: Dict[str, Any]) -> Dict[str, Any]:
    """The spec's hyperparameters as the optimizer class takes them (lists back to tuples)."""
    return {k: tuple(v) if isinstance(v, list) else v for k, v in spec["hp"].items()}


def build_optimizer(spec: Dict[str, Any], params: Sequence[torch.Tensor]) -> torch.optim.Optimizer:
    """The ``torch.optim`` optimizer ``spec`` names, over ``params``.

    Example:
        >>> p = torch.nn.Parameter(torch.ones(2))
        >>> opt = build_optimizer({"key": "k", "cls": "SGD", "hp": {"lr": 0.5}}, [p])
        >>> type(opt).__name__, opt.param_groups[0]["lr"]
        ('SGD', 0.5)
    """
    cls = getattr(torch.optim, str(spec["cls"]), None)
    if not (isinstance(cls, type) and issubclass(cls, torch.optim.Optimizer)) or cls is torch.optim.Optimizer:
        raise InvalidArgumentError(f"{spec['cls']!r} is not an optimizer class of torch.optim.")
    hp = hyperparameters(spec)
    accepted: List[str] = list(cls.__init__.__code__.co_varnames[:cls.__init__.__code__.co_argcount
                                                                  + cls.__init__.__code__.co_kwonlyargcount])
    return cls(list(params), **{k: v for k, v in hp.items() if k in accepted})

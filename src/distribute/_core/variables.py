"""``distribute.Variable``: the tf.Variable counterpart, a ``torch.nn.Parameter``.

A Variable is a real tensor (so optimizers, ``nn.Module`` and autograd accept it) with
tf.Variable's API: ``assign``, ``assign_add``, ``assign_sub``, ``read_value``, ``value``,
``numpy``, ``name``, ``trainable``, ``synchronization``, ``aggregation``. Created inside a
strategy's scope, ``Variable(...)`` returns that strategy's distributed variable instead; so
do the parameters of a ``torch.nn.Module`` built in the scope (a registration hook swaps them).
"""

from __future__ import annotations

from enum import Enum
from typing import TYPE_CHECKING, Any, Callable, Optional, SupportsIndex, Type, cast

import numpy as np
import torch

from distribute._core import context
from distribute._base.reduce_op import VariableAggregation, VariableSynchronization
from distribute._base.tensor_spec import StringDType, as_dtype

if TYPE_CHECKING:  # pragma: no cover
    from distribute._core.distributed_variables import DistributedVariable
    from distribute._core.strategy import Strategy

__all__ = ["Variable", "make_initial_tensor", "owning_strategy"]


def _as_enum(value: Any, enum_type: Type[Enum], what: str) -> Any:
    if isinstance(value, enum_type):
        return value
    if isinstance(value, str) and value.upper() in enum_type.__members__:
        return enum_type[value.upper()]
    raise ValueError(f"Expected `{what}` to be a {enum_type.__name__} (one of "
                     f"{', '.join(enum_type.__members__)}), received {value!r}.")


def make_initial_tensor(initial_value: Any, dtype: Any = None) -> torch.Tensor:
    """Evaluates an initial value (a callable, tensor, array or number) to a fresh tensor."""
    if initial_value is None:
        raise ValueError("initial_value must be specified: a tensor, an array, a number, or a "
                         "callable returning one.")
    if callable(initial_value) and not isinstance(initial_value, torch.Tensor):
        initial_value = initial_value()
    if isinstance(initial_value, torch.Tensor):
        tensor = initial_value.detach()
        if isinstance(tensor, Variable):  # distributed variables too
            with torch._C.DisableTorchFunctionSubclass():
                # ``detach`` keeps the subclass, so ``initial_value`` is a Variable too.
                tensor = torch.Tensor.clone(cast(Variable, initial_value).read_value().detach())
    else:
        tensor = torch.as_tensor(np.asarray(initial_value))
        if tensor.dtype == torch.float64 and not isinstance(initial_value, np.ndarray):
            tensor = tensor.to(torch.float32)
    if dtype is not None:
        torch_dtype = as_dtype(dtype)
        if isinstance(torch_dtype, StringDType):
            raise TypeError(f"Expected `dtype` to be a numeric or bool dtype, received {dtype!r}: a "
                            "Variable is a torch tensor and cannot hold strings.")
        tensor = tensor.to(torch_dtype)
    return tensor.clone() if tensor.requires_grad is False else tensor.detach().clone()


def dtype_name(dtype: torch.dtype) -> str:
    """``torch.float32`` -> ``'float32'``."""
    return str(dtype).replace("torch.", "")


def numpy_text(array: np.ndarray) -> str:
    """The ``numpy=`` part of a variable's repr."""
    return repr(array.tolist()) if array.ndim == 0 else repr(array)


class Variable(torch.nn.Parameter):
    """A named, assignable tensor; distributed when created in a strategy's scope.

    Example:
        >>> v = Variable(1.0, name="step")
        >>> v.assign_add(2.0)
        tensor(3.)
        >>> v
        <distribute.Variable 'step:0' shape=() dtype=float32, numpy=3.0>
    """

    _var_name: str
    _trainable: bool
    _synchronization: VariableSynchronization
    _aggregation: VariableAggregation
    _distribute_strategy: Optional["Strategy"]
    _distributed_container: Optional["DistributedVariable"]

    def __new__(cls, initial_value: Any = None, trainable: Optional[bool] = None, name: Optional[str] = None,
                dtype: Any = None, synchronization: Any = VariableSynchronization.AUTO,
                aggregation: Any = VariableAggregation.NONE) -> "Variable":
        synchronization = _as_enum(synchronization, VariableSynchronization, "synchronization")
        aggregation = _as_enum(aggregation, VariableAggregation, "aggregation")
        if trainable is not None and not isinstance(trainable, bool):
            raise TypeError(f"Expected `trainable` to be a bool or None, received {trainable!r}.")
        if name is not None and not isinstance(name, str):
            raise TypeError(f"Expected `name` to be a str or None, received {name!r}.")
        if cls is Variable:
            strategy = context.get_strategy()
            if strategy is not context.default_strategy():
                return strategy.extended._create_variable(
                    Variable._plain, initial_value=initial_value, trainable=trainable, name=name,
                    dtype=dtype, synchronization=synchronization, aggregation=aggregation)
        return cls._plain(initial_value=initial_value, trainable=trainable, name=name, dtype=dtype,
                          synchronization=synchronization, aggregation=aggregation, _cls=cls)

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        pass

    @staticmethod
    def _plain(initial_value: Any = None, trainable: Optional[bool] = None, name: Optional[str] = None,
               dtype: Any = None, synchronization: Any = VariableSynchronization.AUTO,
               aggregation: Any = VariableAggregation.NONE, device: Optional[torch.device] = None,
               _cls: Optional[Type["Variable"]] = None) -> "Variable":
        tensor = make_initial_tensor(initial_value, dtype)
        if device is not None:
            tensor = tensor.to(device)
        if trainable is None:
            trainable = synchronization is not VariableSynchronization.ON_READ
        if trainable and not (tensor.is_floating_point() or tensor.is_complex()):
            trainable = False
        var = torch.Tensor._make_subclass(_cls or Variable, tensor, trainable)
        var._init_attributes(name, trainable, synchronization, aggregation)
        return var

    def _init_attributes(self, name: Optional[str], trainable: bool, synchronization: Any, aggregation: Any) -> None:
        self._var_name = name or "Variable"
        self._trainable = trainable
        self._synchronization = synchronization
        self._aggregation = aggregation
        self._distribute_strategy = None
        self._distributed_container = None

    # -- properties -------------------------------------------------------------------
    @property
    def name(self) -> str:
        """The variable's name with TensorFlow's ``:0`` suffix, e.g. ``'Variable:0'``."""
        return f"{self._var_name}:0"

    @property
    def trainable(self) -> bool:
        """Whether optimizers should train it (its ``requires_grad``)."""
        return self._trainable

    @property
    def synchronization(self) -> VariableSynchronization:
        """When distributed components are synchronised."""
        return self._synchronization

    @property
    def aggregation(self) -> VariableAggregation:
        """How distributed writes (or reads) are aggregated."""
        return self._aggregation

    @property
    def distribute_strategy(self) -> Any:
        """The strategy the variable belongs to (the default strategy for plain variables)."""
        return self._distribute_strategy or context.default_strategy()

    # -- reading ----------------------------------------------------------------------
    def read_value(self) -> torch.Tensor:
        """The current value as a new tensor (differentiable with respect to the variable)."""
        with torch._C.DisableTorchFunctionSubclass():
            return torch.Tensor.clone(self)

    def value(self) -> torch.Tensor:
        """The current value (same as ``read_value``)."""
        return self.read_value()

    def numpy(self, *, force: bool = False) -> np.ndarray:
        """The current value as a numpy array (``force`` as in ``torch.Tensor.numpy``)."""
        return self.read_value().detach().cpu().numpy(force=force)

    # -- writing ----------------------------------------------------------------------
    def _coerce(self, value: Any, what: str) -> torch.Tensor:
        if isinstance(value, Variable):  # distributed variables too
            value = value.read_value()
        tensor = value if isinstance(value, torch.Tensor) else torch.as_tensor(np.asarray(value))
        with torch._C.DisableTorchFunctionSubclass():
            tensor = tensor.detach().to(dtype=self.dtype, device=self.device)
        if tuple(tensor.shape) != tuple(self.shape) and tensor.numel() != 1:
            raise ValueError(f"Cannot {what} a value of shape {tuple(tensor.shape)} to variable "
                             f"{self.name!r} of shape {tuple(self.shape)}.")
        return tensor

    def _write(self, fn: Callable[[torch.Tensor, torch.Tensor], Any], value: Any, what: str,
               read_value: bool) -> Optional[torch.Tensor]:
        tensor = self._coerce(value, what)
        with torch.no_grad(), torch._C.DisableTorchFunctionSubclass():
            fn(self, tensor)
        return self.read_value() if read_value else None

    def assign(self, value: Any, use_locking: Any = None, name: Any = None, read_value: bool = True) -> Any:
        """Sets the variable to ``value``; returns the new value (or ``None``)."""
        return self._write(torch.Tensor.copy_, value, "assign", read_value)

    def assign_add(self, delta: Any, use_locking: Any = None, name: Any = None, read_value: bool = True) -> Any:
        """Adds ``delta`` to the variable; returns the new value (or ``None``)."""
        return self._write(torch.Tensor.add_, delta, "assign_add", read_value)

    def assign_sub(self, delta: Any, use_locking: Any = None, name: Any = None, read_value: bool = True) -> Any:
        """Subtracts ``delta`` from the variable; returns the new value (or ``None``)."""
        return self._write(torch.Tensor.sub_, delta, "assign_sub", read_value)

    # -- representation ---------------------------------------------------------------
    def _plain_repr(self) -> str:
        with torch._C.DisableTorchFunctionSubclass():
            array = torch.Tensor.detach(self).cpu().numpy()
        return (f"<distribute.Variable '{self.name}' shape={tuple(self.shape)} "
                f"dtype={dtype_name(self.dtype)}, numpy={numpy_text(array)}>")

    def __repr__(self) -> str:  # type: ignore[override]  # torch's stub: `(self, *, Any = ...)`
        return self._plain_repr()

    __str__ = __repr__

    def __reduce_ex__(self, proto: SupportsIndex) -> Any:
        with torch._C.DisableTorchFunctionSubclass():
            data = torch.Tensor.detach(self).clone()
        return (_rebuild_variable, (data, self._trainable, self._var_name))

    def __deepcopy__(self, memo: dict) -> "Variable":
        copied = Variable._plain(self.read_value().detach(), self._trainable, self._var_name,
                                 synchronization=self._synchronization, aggregation=self._aggregation,
                                 _cls=type(self) if type(self) is Variable else Variable)
        memo[id(self)] = copied
        return copied


def owning_strategy(value: Any) -> Any:
    """The strategy whose scope created ``value`` (a variable or a component of one), else ``None``."""
    return value._distribute_strategy if isinstance(value, Variable) else None


def _rebuild_variable(data: torch.Tensor, trainable: bool, name: str) -> Variable:
    return Variable._plain(data, trainable, name)


def _registration_hook(module: torch.nn.Module, name: str, param: Optional[torch.nn.Parameter]) -> Any:
    """Turns parameters registered inside a strategy's scope into that strategy's variables."""
    if param is None or isinstance(param, Variable):
        return None
    strategy = context.get_strategy()
    if strategy is context.default_strategy():
        return None
    return strategy.extended._create_module_parameter(param, f"{type(module).__name__}/{name}")


torch.nn.modules.module.register_module_parameter_registration_hook(_registration_hook)

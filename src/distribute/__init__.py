"""distribute: the tf.distribute programming model on PyTorch (public API; filled in below)."""

from distribute import errors
from distribute._core.tensor_spec import TensorSpec

__all__ = ["TensorSpec", "errors"]

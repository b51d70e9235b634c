"""Helpers shared by the input-pipeline tests."""

from __future__ import annotations

import io
from collections.abc import Mapping
from typing import Any, Callable, Iterable, List, Optional

import numpy as np
import torch

from distribute.data import Dataset, Options

__all__ = ["assert_restores", "no_vectorization", "plain", "roundtrip", "values"]


def plain(element: Any) -> Any:
    """An element as nested Python values (lists, ints, floats, bytes), for comparisons."""
    if isinstance(element, torch.Tensor):
        return element.tolist()
    if isinstance(element, np.ndarray):
        return element.tolist()
    if isinstance(element, tuple):
        values = [plain(e) for e in element]
        return type(element)(*values) if hasattr(type(element), "_fields") else tuple(values)
    if isinstance(element, Mapping):
        return {k: plain(v) for k, v in element.items()}
    return element


def values(dataset: Iterable[Any], limit: Optional[int] = None) -> List[Any]:
    """The elements of a dataset (or iterator) as Python values."""
    out = []
    for element in dataset:
        out.append(plain(element))
        if limit is not None and len(out) >= limit:
            break
    return out


def _check_plain(value: Any, path: str = "state") -> None:
    if isinstance(value, dict):
        for k, v in value.items():
            assert isinstance(k, str), f"{path} has a non-string key {k!r}"
            _check_plain(v, f"{path}.{k}")
    elif isinstance(value, list):
        for i, v in enumerate(value):
            _check_plain(v, f"{path}[{i}]")
    else:
        assert value is None or isinstance(value, (int, float, str, bool, torch.Tensor)), (
            f"{path} holds a {type(value).__name__}, not plain data"
        )


def roundtrip(state: Any) -> Any:
    """Checks that ``state`` is plain data and passes it through torch.save / weights_only load."""
    _check_plain(state)
    buffer = io.BytesIO()
    torch.save(state, buffer)
    buffer.seek(0)
    return torch.load(buffer, weights_only=True)


def assert_restores(make: Callable[[], Dataset], positions: Iterable[int] = (0, 1, 2, 3, 5, 8),
                    limit: int = 200) -> None:
    """For each position k: save after k elements, restore into a fresh pipeline, compare.

    The restored iterator must produce exactly what the original produces from there on.
    """
    expected = values(make(), limit)
    for k in positions:
        if k > len(expected):
            continue
        original = iter(make())
        head = [plain(next(original)) for _ in range(k)]
        state = roundtrip(original.state_dict())
        rest = values(original, limit - k)
        restored = iter(make())
        restored.load_state_dict(state)
        again = values(restored, limit - k)
        assert head == expected[:k], f"the pipeline is not deterministic (position {k})"
        assert again == rest, f"restore after {k} elements differs:\n{again[:10]}\nvs\n{rest[:10]}"
        assert head + rest == expected[: k + len(rest)]


def no_vectorization() -> Options:
    """Options that keep map/filter per element."""
    options = Options()
    options.experimental_optimization.map_vectorization = False
    return options

"""Flatten, rebuild and map over nested structures.

A structure is a leaf, or a tuple, list, namedtuple or mapping of structures. Mappings are
walked in sorted key order (as ``tf.nest`` does) and rebuilt in their own key order, so
``{"b": 1, "a": 2}`` flattens to ``[2, 1]`` and packs back to ``{"b": 1, "a": 2}``.
``None`` is a leaf.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, Callable, Iterator, List, Sequence, cast

__all__ = [
    "assert_same_structure",
    "flatten",
    "flatten_with_paths",
    "is_nested",
    "map_structure",
    "pack_sequence_as",
]


def is_namedtuple(value: Any) -> bool:
    """True for instances of ``collections.namedtuple`` and ``typing.NamedTuple`` classes."""
    return isinstance(value, tuple) and hasattr(type(value), "_fields")


def is_nested(value: Any) -> bool:
    """True when ``value`` is a tuple, list or mapping (and so not a leaf)."""
    return isinstance(value, (tuple, list, Mapping))


def _sorted_keys(mapping: Mapping) -> list:
    try:
        return sorted(mapping)
    except TypeError as exc:
        raise TypeError(
            f"Mapping keys must be sortable to be walked in a fixed order; received keys "
            f"{list(mapping)!r}. Use keys of one type (for example all strings)."
        ) from exc


def _children(value: Any) -> Sequence:
    if isinstance(value, Mapping):
        return [value[k] for k in _sorted_keys(value)]
    return value


def _yield_flat(value: Any) -> Iterator[Any]:
    if isinstance(value, (tuple, list, Mapping)):
        for child in _children(value):
            yield from _yield_flat(child)
    else:
        yield value


def flatten(structure: Any) -> List[Any]:
    """Returns the leaves of ``structure`` in a deterministic order.

    Example:
        >>> flatten({"b": (1, 2), "a": 3})
        [3, 1, 2]
    """
    if not isinstance(structure, (tuple, list, Mapping)):
        return [structure]
    return list(_yield_flat(structure))


def flatten_with_paths(structure: Any, prefix: tuple = ()) -> List[tuple]:
    """Returns ``(path, leaf)`` pairs; a path is a tuple of indices and keys."""
    if isinstance(structure, Mapping):
        pairs: List[tuple] = []
        for key in _sorted_keys(structure):
            pairs.extend(flatten_with_paths(structure[key], prefix + (key,)))
        return pairs
    if isinstance(structure, (tuple, list)):
        pairs = []
        for index, child in enumerate(structure):
            pairs.extend(flatten_with_paths(child, prefix + (index,)))
        return pairs
    return [(prefix, structure)]


def _rebuild(template: Any, children: list) -> Any:
    if isinstance(template, Mapping):
        by_key = dict(zip(_sorted_keys(template), children))
        # A concrete mapping type (dict, OrderedDict, ...) takes its items; ``Mapping`` does not say so.
        return cast(Any, type(template))((key, by_key[key]) for key in template)
    if is_namedtuple(template):
        return type(template)._make(children)
    if isinstance(template, tuple):
        return tuple(children) if type(template) is tuple else type(template)(children)
    return type(template)(children) if type(template) is not list else children


def _pack(template: Any, leaves: Iterator[Any]) -> Any:
    if isinstance(template, (tuple, list, Mapping)):
        return _rebuild(template, [_pack(child, leaves) for child in _children(template)])
    return next(leaves)


def pack_sequence_as(structure: Any, flat_sequence: Sequence[Any]) -> Any:
    """Rebuilds ``structure`` with its leaves replaced, in order, by ``flat_sequence``.

    Raises:
        ValueError: if the number of leaves differs.
    """
    count = len(flatten(structure))
    if count != len(flat_sequence):
        raise ValueError(
            f"The structure has {count} leaves but flat_sequence has {len(flat_sequence)} "
            f"elements. Structure: {structure!r}."
        )
    return _pack(structure, iter(flat_sequence))


def _structure_signature(value: Any) -> Any:
    if isinstance(value, Mapping):
        return ("mapping", tuple(_sorted_keys(value)), tuple(map(_structure_signature, _children(value))))
    if is_namedtuple(value):
        return (type(value).__name__, tuple(map(_structure_signature, value)))
    if isinstance(value, (tuple, list)):
        return ("sequence", tuple(map(_structure_signature, value)))
    return None


def same_structure(a: Any, b: Any) -> bool:
    """True when ``a`` and ``b`` have the same nesting (sequence types may differ)."""
    return _structure_signature(a) == _structure_signature(b)


def assert_same_structure(a: Any, b: Any) -> None:
    """Raises ``ValueError`` naming both structures when their nesting differs."""
    if not same_structure(a, b):
        raise ValueError(
            "The two structures don't have the same nested structure.\n"
            f"First structure: {a!r}\nSecond structure: {b!r}"
        )


def map_structure(func: Callable[..., Any], *structures: Any) -> Any:
    """Applies ``func`` leaf-wise over one or more structures of the same nesting.

    Example:
        >>> map_structure(lambda x, y: x + y, (1, {"a": 2}), (10, {"a": 20}))
        (11, {'a': 22})
    """
    if not structures:
        raise ValueError("map_structure needs at least one structure; received none.")
    first = structures[0]
    if not isinstance(first, (tuple, list, Mapping)) and len(structures) == 1:
        return func(first)
    for other in structures[1:]:
        assert_same_structure(first, other)
    flat = [flatten(s) for s in structures]
    return pack_sequence_as(first, [func(*leaves) for leaves in zip(*flat)])

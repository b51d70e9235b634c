"""Dataset.sample_from_datasets and Dataset.choose_from_datasets.

``choose_from_datasets`` takes each element from the input named by the next element of
``choice_dataset`` (scalar int64). ``sample_from_datasets`` draws that index at random with
probabilities proportional to ``weights`` (a list, or a dataset of weight vectors, one per
element). When an input ends: with ``stop_on_empty_dataset`` the result ends; otherwise that
input is left out (for sampling, the other weights are renormalised; the result ends when no
input with a positive weight is left).

Randomness is our own stream (see ``shuffle.RandomStream``), not tf.data's numbers: a seed
gives the same sequence on every run, and the state (how many numbers were drawn) resumes it.
"""

from __future__ import annotations

from typing import Any, Dict, List, Optional, Sequence

import torch

from distribute._base.tensor_spec import TensorSpec
from distribute.data._common import END, INFINITE_CARDINALITY, UNKNOWN_CARDINALITY, check_bool, check_int
from distribute.data.dataset import Dataset
from distribute.data.iterator import IterContext, IteratorImpl, mix
from distribute.data.ops._multi_input import Inputs, check_datasets, common_spec
from distribute.data.ops.shuffle import RandomStream
from distribute.errors import InvalidArgumentError

__all__ = ["ChooseFromDatasetsDataset", "SampleFromDatasetsDataset", "stream_seed"]

_SCALE = float(1 << 62)


def stream_seed(seed: Optional[int], rerandomize: bool, ctx: IterContext, node_salt: int) -> int:
    """The seed of one iterator's random stream (a fixed ``seed`` repeats each iteration
    unless ``rerandomize``; None uses the pipeline's seed, new for each iteration)."""
    base = mix(ctx.seed, node_salt) if seed is None else mix(seed)
    return mix(base, ctx.salt) if rerandomize or seed is None else base


class _ChooseIterator(IteratorImpl):
    op = "choose_from_datasets"

    def __init__(self, dataset: "ChooseFromDatasetsDataset", ctx: IterContext) -> None:
        self._dataset = dataset
        self._inputs = Inputs(dataset.datasets, ctx)
        self._choices = dataset.choice_dataset._make_iterator(ctx.derive(len(dataset.datasets)))

    def next(self) -> Any:
        n = len(self._dataset.datasets)
        while True:
            choice = self._choices.next()
            if choice is END:
                return END
            index = int(choice)
            if not 0 <= index < n:
                raise InvalidArgumentError(f"Selector index out of range: {index} >= {n}")
            value = self._inputs.next_from(index)
            if value is not END:
                return value
            if self._dataset.stop_on_empty_dataset or not any(self._inputs.active):
                return END

    def _state(self) -> Dict[str, Any]:
        return {**self._inputs.state(), "choices": self._choices.get_state()}

    def _restore(self, state: Dict[str, Any]) -> None:
        self._inputs.restore(state)
        self._choices.set_state(state["choices"])

    def close(self) -> None:
        self._inputs.close()
        self._choices.close()


class ChooseFromDatasetsDataset(Dataset):
    """``Dataset.choose_from_datasets(datasets, choice_dataset, stop_on_empty_dataset)``."""

    _op = "choose_from_datasets"

    def __init__(self, datasets: Sequence[Dataset], choice_dataset: Dataset,
                 stop_on_empty_dataset: bool = True, name: Optional[str] = None) -> None:
        self.datasets = check_datasets(datasets)
        if not isinstance(choice_dataset, Dataset):
            raise TypeError(f"Invalid `choice_dataset`. `choice_dataset` should be a Dataset but "
                            f"is {type(choice_dataset).__name__}.")
        spec = choice_dataset.element_spec
        if not isinstance(spec, TensorSpec) or spec.dtype != torch.int64 or spec.shape != ():
            raise TypeError(f"Invalid `choice_dataset`. Elements of `choice_dataset` must be scalar "
                            f"int64 tensors but are {spec}.")
        self.choice_dataset = choice_dataset
        self.stop_on_empty_dataset = check_bool("stop_on_empty_dataset", stop_on_empty_dataset)
        super().__init__(name)
        common_spec(self.datasets)

    def _inputs(self) -> tuple:
        return self.datasets + (self.choice_dataset,)

    def _set_inputs(self, inputs: tuple) -> None:
        self.datasets, self.choice_dataset = tuple(inputs[:-1]), inputs[-1]

    def _compute_element_spec(self) -> Any:
        return common_spec(self.datasets)

    def _make_sequential_iterator(self, ctx: IterContext) -> IteratorImpl:
        return _ChooseIterator(self, ctx)


def _check_weights(weights: Any, n: int) -> Any:
    if weights is None:
        return [1.0 / n] * n
    if isinstance(weights, Dataset):
        spec = weights.element_spec
        floats = isinstance(spec, TensorSpec) and isinstance(spec.dtype, torch.dtype) and spec.dtype.is_floating_point
        if not floats or spec.shape not in ((n,), (None,)):
            raise TypeError(f"Invalid `weights`. A `weights` dataset must have float vector elements "
                            f"of length {n} (one weight per dataset); its spec is {spec}.")
        return weights
    values = weights.tolist() if isinstance(weights, torch.Tensor) else list(weights)
    if len(values) != n:
        raise ValueError(f"Invalid `weights`. `weights` should have the same length as `datasets` but "
                         f"got `len(weights)={len(values)}` vs. `len(datasets)={n}`.")
    return [float(w) for w in values]


class _SampleIterator(IteratorImpl):
    op = "sample_from_datasets"

    def __init__(self, dataset: "SampleFromDatasetsDataset", ctx: IterContext) -> None:
        self._dataset = dataset
        self._inputs = Inputs(dataset.datasets, ctx)
        self._seed = stream_seed(dataset.seed, dataset.rerandomize_each_iteration, ctx, dataset._salt)
        self._rng = RandomStream(self._seed)
        weights = dataset.weights
        self._weights = weights._make_iterator(ctx.derive(len(dataset.datasets))) if isinstance(
            weights, Dataset) else None

    def _next_weights(self) -> Optional[List[float]]:
        if self._weights is None:
            return self._dataset.weights
        value = self._weights.next()
        if value is END:
            return None
        if value.shape != (len(self._dataset.datasets),):
            raise InvalidArgumentError(f"Expected a weight vector of shape ({len(self._dataset.datasets)},) "
                                       f"from `weights`; received shape {tuple(value.shape)}.")
        return value.tolist()

    def _pick(self, weights: List[float]) -> int:
        """A random index with probability proportional to the weights of active inputs, or -1."""
        stop = self._dataset.stop_on_empty_dataset
        live = [max(w, 0.0) if (stop or a) else 0.0 for w, a in zip(weights, self._inputs.active)]
        total = sum(live)
        if total <= 0.0:
            return -1
        target = self._rng.draw(1)[0] / _SCALE * total
        for i, w in enumerate(live):
            target -= w
            if target < 0.0 and w > 0.0:
                return i
        return max(i for i, w in enumerate(live) if w > 0.0)

    def next(self) -> Any:
        weights = self._next_weights()
        while weights is not None:
            index = self._pick(weights)
            if index < 0:
                return END
            value = self._inputs.next_from(index)
            if value is not END:
                return value
            if self._dataset.stop_on_empty_dataset:
                return END
        return END

    def _state(self) -> Dict[str, Any]:
        state = {**self._inputs.state(), "seed": self._seed, "drawn": self._rng.drawn}
        if self._weights is not None:
            state["weights"] = self._weights.get_state()
        return state

    def _restore(self, state: Dict[str, Any]) -> None:
        self._inputs.restore(state)
        self._seed = int(state["seed"])
        self._rng = RandomStream(self._seed, int(state["drawn"]))
        if self._weights is not None:
            self._weights.set_state(state["weights"])

    def close(self) -> None:
        self._inputs.close()
        if self._weights is not None:
            self._weights.close()


class SampleFromDatasetsDataset(Dataset):
    """``Dataset.sample_from_datasets(datasets, weights, seed, stop_on_empty_dataset,
    rerandomize_each_iteration)``; attributes of the same names."""

    _op = "sample_from_datasets"

    def __init__(self, datasets: Sequence[Dataset], weights: Any = None, seed: Optional[int] = None,
                 stop_on_empty_dataset: bool = False, rerandomize_each_iteration: Optional[bool] = None,
                 name: Optional[str] = None) -> None:
        self.datasets = check_datasets(datasets)
        self.weights = _check_weights(weights, len(self.datasets))
        self.seed = None if seed is None else check_int("seed", seed)
        self.stop_on_empty_dataset = check_bool("stop_on_empty_dataset", stop_on_empty_dataset)
        self.rerandomize_each_iteration = bool(check_bool(
            "rerandomize_each_iteration", rerandomize_each_iteration, allow_none=True))
        self._salt = mix(0x5A3F, len(self.datasets))
        super().__init__(name)
        common_spec(self.datasets)

    def _inputs(self) -> tuple:
        extra = (self.weights,) if isinstance(self.weights, Dataset) else ()
        return self.datasets + extra

    def _set_inputs(self, inputs: tuple) -> None:
        n = len(self.datasets)
        self.datasets = tuple(inputs[:n])
        if isinstance(self.weights, Dataset):
            self.weights = inputs[n]

    def _compute_element_spec(self) -> Any:
        return common_spec(self.datasets)

    def _cardinality(self) -> int:
        cards = [d.cardinality() for d in self.datasets]
        if all(c == INFINITE_CARDINALITY for c in cards):
            return INFINITE_CARDINALITY
        return UNKNOWN_CARDINALITY

    def _make_sequential_iterator(self, ctx: IterContext) -> IteratorImpl:
        return _SampleIterator(self, ctx)

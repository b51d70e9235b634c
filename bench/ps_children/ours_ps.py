"""distribute's side: ParameterServerStrategy + ClusterCoordinator, the same shape as tf_ps.py.

``ours_ps.py [--seconds S]`` is the coordinator (chief): it starts 2 worker and 2 ps
``distribute.Server`` processes (``ours_ps.py serve JOB INDEX CLUSTER_JSON``, 1 intra-op
thread, one job secret in ``DISTRIBUTE_JOB_SECRET``), builds the strategy with
``FixedShardsPartitioner(2)`` and times (a) a trivial ``distribute.function`` scheduled N times
then joined, (b) an MLP 64-256-256-10 and (c) an embedding model (``torch.nn.Embedding(100_000,
64)``, 256 x 8 ids, mean-pool, linear head), both with ``distribute.optim.SGD`` and variables
on the ps, batches of 256 from ``create_per_worker_dataset``. Prints one JSON line.
"""

from __future__ import annotations

import os
import secrets
import sys
from typing import Any, Callable, Dict, Tuple

import torch

from _cluster import BATCH, CLASSES, EMB_DIM, IDS_PER_EXAMPLE, LR, MLP_SIZES, READY, VOCAB, child_main, time_closures

import distribute

torch.set_num_threads(1)


def serve(job: str, index: int, cluster: dict) -> None:
    """A ps or worker task: serves until it is killed (or its coordinator goes)."""
    server = distribute.Server(distribute.cluster_resolver.ClusterSpec(cluster), job_name=job, task_index=index)
    print(READY, flush=True)
    server.join()


def make_strategy(cluster: dict) -> Any:
    spec = distribute.cluster_resolver.ClusterSpec(cluster)
    resolver = distribute.cluster_resolver.SimpleClusterResolver(spec, task_type="chief", task_id=0)
    return distribute.ParameterServerStrategy(
        resolver, variable_partitioner=distribute.experimental.partitioners.FixedShardsPartitioner(2))


def mlp_model() -> torch.nn.Module:
    torch.manual_seed(0)
    layers: list = []
    for n_in, n_out in zip(MLP_SIZES[:-1], MLP_SIZES[1:]):
        layers += [torch.nn.Linear(n_in, n_out), torch.nn.ReLU()]
    return torch.nn.Sequential(*layers[:-1])


class EmbeddingModel(torch.nn.Module):
    """Embedding table, mean over the ids of an example, linear head."""

    def __init__(self) -> None:
        super().__init__()
        torch.manual_seed(0)
        self.table = torch.nn.Embedding(VOCAB, EMB_DIM)
        self.head = torch.nn.Linear(EMB_DIM, CLASSES)

    def forward(self, ids: torch.Tensor) -> torch.Tensor:
        return self.head(self.table(ids).mean(dim=1))


def mlp_data(ctx: Any) -> Any:
    gen = torch.Generator().manual_seed(2)
    x, y = torch.randn(BATCH, MLP_SIZES[0], generator=gen), torch.randint(0, CLASSES, (BATCH,), generator=gen)
    return distribute.data.Dataset.from_tensors((x, y)).repeat()


def embedding_data(ctx: Any) -> Any:
    gen = torch.Generator().manual_seed(4)
    ids = torch.randint(0, VOCAB, (BATCH, IDS_PER_EXAMPLE), generator=gen)
    return distribute.data.Dataset.from_tensors((ids, torch.randint(0, CLASSES, (BATCH,), generator=gen))).repeat()


def training(strategy: Any, coordinator: Any, model_fn: Callable[[], torch.nn.Module],
             dataset_fn: Callable[[Any], Any], seconds: float) -> Dict[str, Any]:
    with strategy.scope():
        model = model_fn()
        opt = distribute.optim.SGD(model.parameters(), lr=LR)

    @distribute.function
    def step(iterator: Any) -> Any:
        def replica_fn(x: torch.Tensor, y: torch.Tensor) -> torch.Tensor:
            opt.zero_grad()
            loss = torch.nn.functional.cross_entropy(model(x), y)
            loss.backward()
            opt.step()
            return loss
        x, y = next(iterator)
        return strategy.run(replica_fn, args=(x, y))

    iterator = iter(coordinator.create_per_worker_dataset(dataset_fn))
    last: Dict[str, Any] = {}

    def schedule() -> None:
        last["rv"] = coordinator.schedule(step, args=(iterator,))
    timed = time_closures(schedule, coordinator.join, seconds)
    return {"examples_per_second": timed["per_second"] * BATCH, "steps": timed["n"],
            "last_loss": float(last["rv"].fetch()),
            "shards": [len(getattr(p, "variables", [p])) for p in model.parameters()]}


def measure(cluster: dict, seconds: float) -> Dict[str, Any]:
    strategy = make_strategy(cluster)
    coordinator = distribute.coordinator.ClusterCoordinator(strategy)

    @distribute.function
    def noop() -> int:
        return 1

    last: Dict[str, Any] = {}

    def schedule() -> None:
        last["rv"] = coordinator.schedule(noop)
    closures = time_closures(schedule, coordinator.join, seconds)
    if int(last["rv"].fetch()) != 1:
        raise RuntimeError(f"noop returned {last['rv'].fetch()!r}, expected 1")
    return {"closures": closures,
            "mlp": training(strategy, coordinator, mlp_model, mlp_data, seconds),
            "embedding": training(strategy, coordinator, EmbeddingModel, embedding_data, seconds),
            "version": distribute.__version__}


def _secret_env() -> Tuple[str, str]:
    return "DISTRIBUTE_JOB_SECRET", os.environ.get("DISTRIBUTE_JOB_SECRET") or secrets.token_hex(32)


def main() -> None:
    if sys.argv[1:2] != ["serve"]:
        name, secret = _secret_env()
        os.environ[name] = secret  # the coordinator and every server hold the same job secret
    child_main(__file__, __doc__ or "", serve, measure)


if __name__ == "__main__":
    main()

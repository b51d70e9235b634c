"""Parameter-server training of a click model: a sharded embedding table, 2 workers, 2 ps.

Run it through the launcher, which starts the chief (the coordinator), the workers and the
parameter servers, each with its ``TF_CONFIG``::

    python -m distribute.launch --workers 2 --ps 2 examples/train_ps.py

Every task runs this script. A ``ps`` or ``worker`` task serves the job
(``distribute.Server(...).join()``) until the coordinator ends; the chief builds the model in
``strategy.scope()``, so its variables live on the parameter servers: the 100,000 x 16
embedding table split in two shards by ``FixedShardsPartitioner(2)`` (one per ps), the small
dense tower round-robin. Each worker generates its own stream of synthetic impressions in a
``dataset_fn`` (8 hashed categorical features; whether the ad was clicked follows a hidden
rule, so the model can learn it), and the coordinator schedules training steps onto whichever
worker is free: a step reads only the embedding rows its batch looks up and sends back only
their gradient rows, applied on the ps that holds them (Adam state included), with no barrier
between the workers. The chief prints progress, then the accuracy and AUC on held-out data.
"""

from __future__ import annotations

import argparse
import sys
import time
from typing import Any

import torch
import torch.nn.functional as F

import distribute
from distribute.cluster_resolver import TFConfigClusterResolver
from distribute.experimental.partitioners import FixedShardsPartitioner

FEATURES = 8
"""Categorical features of an impression (ad, site, device, ...)."""
VALUES = 500
"""Distinct values of each feature."""
TABLE_ROWS = 100_000
"""Rows of the shared embedding table every (feature, value) pair is hashed into."""
DIM = 16


def hashed_ids(values: torch.Tensor) -> torch.Tensor:
    """The table rows of ``values`` (``[batch, FEATURES]`` raw values): one hash per (feature, value)."""
    keys = torch.arange(FEATURES, dtype=torch.int64) * VALUES + values  # one key per (feature, value)
    return keys * 2_654_435_761 % 2 ** 32 % TABLE_ROWS  # Knuth's multiplicative hash


def truth() -> torch.Tensor:
    """The hidden rule's weight of every (feature, value) pair: the same on every task (seed 0)."""
    return torch.randn(FEATURES, VALUES, generator=torch.Generator().manual_seed(0))


def impressions(count: int, seed: int) -> tuple:
    """``count`` impressions: hashed feature ids and click labels (the hidden rule plus noise)."""
    generator = torch.Generator().manual_seed(seed)
    values = torch.randint(0, VALUES, (count, FEATURES), generator=generator)
    logit = truth().gather(1, values.t()).sum(0) / FEATURES ** 0.5
    noise = 0.3 * torch.randn(count, generator=generator)
    return hashed_ids(values), (logit + noise > 0).float()


class ClickModel(torch.nn.Module):
    """Embeddings of the 8 features, concatenated, then a small dense tower; returns click logits."""

    def __init__(self) -> None:
        super().__init__()
        self.embedding = torch.nn.Embedding(TABLE_ROWS, DIM)
        self.tower = torch.nn.Sequential(torch.nn.Linear(FEATURES * DIM, 32), torch.nn.ReLU(), torch.nn.Linear(32, 1))

    def forward(self, ids: torch.Tensor) -> torch.Tensor:
        return self.tower(self.embedding(ids).flatten(1)).squeeze(1)


def auc(scores: torch.Tensor, labels: torch.Tensor) -> float:
    """The area under the ROC curve: the chance a clicked impression scores above an unclicked one."""
    ranks = torch.empty_like(scores)
    ranks[scores.argsort()] = torch.arange(1, len(scores) + 1, dtype=scores.dtype)
    positives = labels.sum()
    negatives = len(labels) - positives
    return float((ranks[labels == 1].sum() - positives * (positives + 1) / 2) / (positives * negatives))


def main(argv: list) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--steps", type=int, default=300, help="training steps scheduled (all workers)")
    parser.add_argument("--batch-size", type=int, default=256, help="impressions per step")
    parser.add_argument("--lr", type=float, default=0.01)
    args = parser.parse_args(argv)
    resolver = TFConfigClusterResolver()
    if resolver.task_type in ("ps", "worker"):  # serve the job until the coordinator ends it
        distribute.Server(resolver.cluster_spec(), job_name=resolver.task_type, task_index=resolver.task_id).join()
        return 0

    torch.manual_seed(0)
    strategy = distribute.ParameterServerStrategy(resolver, variable_partitioner=FixedShardsPartitioner(2))
    coordinator = distribute.coordinator.ClusterCoordinator(strategy)
    with strategy.scope():
        model = ClickModel()
        optimizer = distribute.optim.Adam(model.parameters(), lr=args.lr)
    table = model.embedding.weight
    assert isinstance(table, distribute.ShardedVariable)  # split by the partitioner
    print(f"embedding table {tuple(table.shape)} in shards {[tuple(s.shape) for s in table.variables]} on "
          f"{[s.device for s in table.variables]}", flush=True)

    def dataset_fn(context: distribute.InputContext) -> distribute.data.Dataset:
        batch = args.batch_size
        ids, clicks = impressions(batch * 160, seed=1 + context.input_pipeline_id)  # this worker's own data
        return distribute.data.Dataset.from_tensor_slices((ids, clicks)).shuffle(batch * 160, seed=0) \
            .batch(batch, drop_remainder=True).repeat()

    iterator = iter(coordinator.create_per_worker_dataset(dataset_fn))

    @distribute.function
    def train_step(iterator: Any) -> torch.Tensor:  # this worker's iterator
        ids, clicks = next(iterator)

        def replica_fn(ids: torch.Tensor, clicks: torch.Tensor) -> torch.Tensor:
            optimizer.zero_grad()
            loss = F.binary_cross_entropy_with_logits(model(ids), clicks)
            loss.backward()
            optimizer.step()  # applied on the parameter servers
            return loss.detach()

        return strategy.run(replica_fn, args=(ids, clicks))

    @distribute.function
    def score(ids: torch.Tensor) -> torch.Tensor:
        with torch.no_grad():
            return torch.sigmoid(model(ids))

    test_ids, test_clicks = impressions(4096, seed=1000)
    start = time.perf_counter()
    half = args.steps // 2
    losses = [coordinator.schedule(train_step, args=(iterator,)) for _ in range(half)]
    coordinator.join()
    recent = sum(float(loss.fetch()) for loss in losses[-20:]) / len(losses[-20:])
    print(f"step {half}/{args.steps}: loss {recent:.4f}", flush=True)
    losses = [coordinator.schedule(train_step, args=(iterator,)) for _ in range(args.steps - half)]
    coordinator.join()
    elapsed = time.perf_counter() - start
    recent = sum(float(loss.fetch()) for loss in losses[-20:]) / len(losses[-20:])
    print(f"step {args.steps}/{args.steps}: loss {recent:.4f} ({args.steps * args.batch_size / elapsed:,.0f} "
          f"impressions/s, {elapsed:.1f} s)", flush=True)

    parts = [coordinator.schedule(score, args=(chunk,)) for chunk in test_ids.split(1024)]  # evaluated on workers
    scores = torch.cat([torch.as_tensor(part.fetch()) for part in parts])
    accuracy = float(((scores > 0.5).float() == test_clicks).float().mean())
    print(f"final accuracy {accuracy:.3f}, AUC {auc(scores, test_clicks):.3f} on {len(test_clicks)} held-out "
          "impressions", flush=True)
    return 0 if accuracy > 0.8 else 1


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))

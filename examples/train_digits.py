"""The main job: train a classifier on scikit-learn's bundled digits, on several workers or replicas.

By default (``--strategy multi-worker``) every process of a cluster runs this script with
``MultiWorkerMirroredStrategy``: ``make demo`` starts 2 worker processes on this machine with
``python -m distribute.launch --workers 2 examples/train_digits.py``, which gives each its
``TF_CONFIG``. With ``--strategy mirrored`` one process trains with ``MirroredStrategy`` over
logical CPU replicas (``--replicas``). Either way the training set is a ``distribute.data.Dataset``
of shuffled global batches; ``strategy.experimental_distribute_dataset`` shards and splits every
global batch between the replicas of all workers, each replica computes its loss scaled by the
global batch size, and the optimizer sums the gradients of every replica and applies one update.
Only the chief (worker 0) prints: progress, then accuracy and examples/s.

Run: ``make demo``, ``python -m distribute.launch --workers 2 examples/train_digits.py --epochs 30``,
or ``python examples/train_digits.py --strategy mirrored --replicas 3``.
"""

from __future__ import annotations

import argparse
import sys
import time

import torch
import torch.nn.functional as F

import distribute
from distribute.data import Dataset


def load_digits() -> tuple:
    """The 1,797 8x8 digit images shipped inside scikit-learn (no download)."""
    from sklearn.datasets import load_digits as sk_load

    data = sk_load()
    x = torch.tensor(data.data / 16.0, dtype=torch.float32)
    y = torch.tensor(data.target, dtype=torch.int64)
    order = torch.randperm(len(x), generator=torch.Generator().manual_seed(0))
    x, y = x[order], y[order]
    split = int(0.8 * len(x))
    return (x[:split], y[:split]), (x[split:], y[split:])


def main(argv: list) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--strategy", choices=["multi-worker", "mirrored"], default="multi-worker",
                        help="multi-worker: one worker per process (start it with distribute.launch); "
                             "mirrored: one process with --replicas logical CPU replicas")
    parser.add_argument("--replicas", type=int, default=2, help="logical CPU replicas with --strategy mirrored")
    parser.add_argument("--epochs", type=int, default=20)
    parser.add_argument("--batch-size", type=int, default=64, help="global batch size")
    parser.add_argument("--lr", type=float, default=0.05)
    args = parser.parse_args(argv)
    torch.manual_seed(0)
    (x_train, y_train), (x_test, y_test) = load_digits()
    strategy, where = make_strategy(args)
    chief = strategy.extended.should_checkpoint
    say = print if chief else (lambda *a, **k: None)
    say(f"{type(strategy).__name__} with {strategy.num_replicas_in_sync} replicas ({where}); "
        f"{len(x_train)} training and {len(x_test)} test images; global batch {args.batch_size}")

    with strategy.scope():
        model = torch.nn.Sequential(torch.nn.Linear(64, 128), torch.nn.ReLU(), torch.nn.Linear(128, 10))
        optimizer = distribute.optim.SGD(model.parameters(), lr=args.lr, momentum=0.9)

    def train_step(batch: tuple) -> torch.Tensor:
        x, y = batch
        per_example = F.cross_entropy(model(x), y, reduction="none")
        loss = distribute.nn.compute_average_loss(per_example, global_batch_size=args.batch_size)
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()
        return loss.detach()

    train = Dataset.from_tensor_slices((x_train, y_train)).shuffle(len(x_train), seed=0)
    train = train.batch(args.batch_size, drop_remainder=True)  # a new order every epoch
    options = distribute.data.Options()  # in-memory data: every worker takes its share of each batch
    options.experimental_distribute.auto_shard_policy = distribute.data.AutoShardPolicy.DATA
    train = train.with_options(options)
    dist_train = strategy.experimental_distribute_dataset(train)
    steps = len(x_train) // args.batch_size  # full global batches per epoch, on every worker
    start = time.perf_counter()
    for epoch in range(1, args.epochs + 1):
        total = 0.0
        for batch in dist_train:  # each batch: a (x, y) pair of PerReplica halves
            losses = strategy.run(train_step, args=(batch,))
            total += float(strategy.reduce("sum", losses, axis=None))
        bar = "#" * int(30 * epoch / args.epochs)
        say(f"epoch {epoch:3d}/{args.epochs} [{bar:<30}] loss {total / steps:.4f}", flush=True)
    elapsed = time.perf_counter() - start
    with torch.no_grad():
        accuracy = (model(x_test).argmax(1) == y_test).float().mean().item()
    examples = steps * args.batch_size * args.epochs
    say(f"test accuracy: {accuracy:.4f}")
    say(f"throughput: {examples / elapsed:,.0f} examples/s ({elapsed:.1f} s for {examples} examples, all workers)")
    return 0 if accuracy > 0.9 else 1


def make_strategy(args: argparse.Namespace) -> tuple:
    """The strategy the options ask for, and a few words on where its replicas are."""
    if args.strategy == "mirrored":
        strategy = distribute.MirroredStrategy([f"CPU:{i}" for i in range(args.replicas)])
        return strategy, f"{args.replicas} logical CPU replicas in one process"
    strategy = distribute.MultiWorkerMirroredStrategy()  # the cluster comes from TF_CONFIG
    workers = strategy.cluster_resolver.cluster_spec().num_tasks("worker") if strategy.cluster_resolver \
        .cluster_spec().jobs else 1
    return strategy, f"{workers} worker process(es), gloo over localhost"


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))

"""Worker script: distributed input of MultiWorkerMirroredStrategy on real worker processes.

Prints, for each case, the batches this worker's replica received step by step:
the seed's FILE / DATA / OFF tables (2 workers x 1 replica, global batch 4), partial batches
that leave one worker without data (every worker must stop on the same step),
``distribute_datasets_from_function``, both again through a ``distribute.function`` whose
``input_signature`` is the distributed dataset's ``element_spec``, and a shuffle whose seed the
workers agree on.
"""

from __future__ import annotations

import os
import sys
import tempfile
from typing import Any, List

import torch
from _common import as_list, emit

import distribute
from distribute.collectives.cross_device_ops import CommunicationOptions
from distribute.data import AutoShardPolicy, Dataset, Options, TextLineDataset
from distribute.strategies.multi_worker_mirrored import MultiWorkerMirroredStrategy


def text_numbers(directory: str, parts: List[range]) -> Dataset:
    paths = []
    for i, numbers in enumerate(parts):
        path = os.path.join(directory, f"part-{i}.txt")
        with open(path, "w") as f:
            f.write("".join(f"{n}\n" for n in numbers))
        paths.append(path)
    return TextLineDataset(paths).map(lambda line: torch.tensor(int(line)))


def with_policy(dataset: Dataset, policy: AutoShardPolicy) -> Dataset:
    options = Options()
    options.experimental_distribute.auto_shard_policy = policy
    return dataset.with_options(options)


def steps(strategy: MultiWorkerMirroredStrategy, distributed: Any) -> List[Any]:
    seen = []
    for batch in distributed:
        seen.append(as_list(strategy.run(lambda x: x.clone(), args=(batch,))))
    return seen


def signature_steps(strategy: MultiWorkerMirroredStrategy, distributed: Any) -> List[Any]:
    """``steps`` through a ``distribute.function`` whose input_signature is the element_spec."""
    step = distribute.function(lambda batch: strategy.run(lambda x: x * 10, args=(batch,)),
                               input_signature=[distributed.element_spec])
    return [as_list(step(batch)) for batch in distributed]


def main() -> None:
    strategy = MultiWorkerMirroredStrategy(communication_options=CommunicationOptions(timeout_seconds=30))
    rank = strategy.extended._rank
    with tempfile.TemporaryDirectory() as directory:
        files = text_numbers(directory, [range(0, 6), range(6, 12)])
        emit("FILE", steps(strategy, strategy.experimental_distribute_dataset(
            with_policy(files.batch(4), AutoShardPolicy.FILE))))
    with tempfile.TemporaryDirectory() as directory:
        one_file = text_numbers(directory, [range(12)])
        emit("DATA", steps(strategy, strategy.experimental_distribute_dataset(
            with_policy(one_file.batch(4), AutoShardPolicy.DATA))))
        emit("OFF", steps(strategy, strategy.experimental_distribute_dataset(
            with_policy(one_file.batch(4), AutoShardPolicy.OFF))))
    emit("partial", steps(strategy, strategy.experimental_distribute_dataset(Dataset.range(5).batch(4))))
    emit("from_function", steps(strategy, strategy.distribute_datasets_from_function(
        lambda ctx: Dataset.range(6).batch(2).shard(ctx.num_input_pipelines, ctx.input_pipeline_id))))
    emit("signature", signature_steps(strategy, strategy.experimental_distribute_dataset(Dataset.range(5).batch(4))))
    emit("signature_from_function", signature_steps(strategy, strategy.distribute_datasets_from_function(
        lambda ctx: Dataset.range(6).batch(2).shard(ctx.num_input_pipelines, ctx.input_pipeline_id))))
    shuffled = Dataset.range(16).shuffle(16).batch(8)
    emit("shuffle", steps(strategy, strategy.experimental_distribute_dataset(shuffled)))
    emit("rank", rank)
    sys.stdout.flush()


if __name__ == "__main__":
    main()

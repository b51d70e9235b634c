"""TensorFlow 2.21 peer: ParameterServerStrategy + ClusterCoordinator, the tutorial pattern.

``tf_ps.py [--seconds S]`` is the coordinator (chief): it starts 2 worker and 2 ps
``tf.distribute.Server`` processes (``tf_ps.py serve JOB INDEX CLUSTER_JSON``, gRPC, 1 intra-op
thread), builds the strategy with ``FixedShardsPartitioner(2)`` and times (a) a trivial
``tf.function`` scheduled N times then joined, (b) an MLP 64-256-256-10 and (c) an embedding
model (100,000 x 64 table, 256 x 8 ids, mean-pool, linear head), both trained with
``tf.keras.optimizers.SGD.apply_gradients`` on the shards (``tape.gradient`` takes no
``ShardedVariable``), variables on the ps, batches of 256 from ``create_per_worker_dataset``
(the tutorial's no-argument function around ``distribute_datasets_from_function``). Raw
``tf.Variable``s, not Keras layers: the same work as the torch modules, and no Keras 3 question
of what it supports under this strategy. Prints one JSON line.
"""

from __future__ import annotations

import sys

import tensorflow as tf

from _cluster import BATCH, CLASSES, EMB_DIM, IDS_PER_EXAMPLE, LR, MLP_SIZES, READY, VOCAB, child_main, time_closures


def _session_config() -> tf.compat.v1.ConfigProto:
    return tf.compat.v1.ConfigProto(intra_op_parallelism_threads=1)


def serve(job: str, index: int, cluster: dict) -> None:
    """A ps or worker task: a gRPC server that runs until it is killed."""
    server = tf.distribute.Server(tf.train.ClusterSpec(cluster), job_name=job, task_index=index,
                                  protocol="grpc", config=_session_config(), start=True)
    print(READY, flush=True)
    server.join()


def make_strategy(cluster: dict) -> tf.distribute.experimental.ParameterServerStrategy:
    resolver = tf.distribute.cluster_resolver.SimpleClusterResolver(
        tf.train.ClusterSpec(cluster), task_type="chief", task_id=0, rpc_layer="grpc")
    return tf.distribute.experimental.ParameterServerStrategy(
        resolver, variable_partitioner=tf.distribute.experimental.partitioners.FixedShardsPartitioner(2))


def _variable(shape, name):
    init = tf.random.stateless_normal(shape, seed=(0, len(name)), stddev=0.05)
    return tf.Variable(init, name=name)


def mlp_model():
    weights = []
    for i, (n_in, n_out) in enumerate(zip(MLP_SIZES[:-1], MLP_SIZES[1:])):
        weights += [_variable((n_in, n_out), f"w{i}"), tf.Variable(tf.zeros((n_out,)), name=f"b{i}")]

    def forward(x):
        for i in range(0, len(weights), 2):
            x = tf.matmul(x, weights[i]) + weights[i + 1]
            if i + 2 < len(weights):
                x = tf.nn.relu(x)
        return x
    return weights, forward


def embedding_model():
    table = _variable((VOCAB, EMB_DIM), "table")
    head_w, head_b = _variable((EMB_DIM, CLASSES), "head_w"), tf.Variable(tf.zeros((CLASSES,)), name="head_b")

    def forward(ids):
        pooled = tf.reduce_mean(tf.nn.embedding_lookup(table, ids), axis=1)
        return tf.matmul(pooled, head_w) + head_b
    return [table, head_w, head_b], forward


def train_step(strategy, variables, forward):
    """The tutorial's step; call it in ``strategy.scope()`` (the optimizer's variables go to the ps)."""
    optimizer = tf.keras.optimizers.SGD(LR)
    shards = [shard for v in variables for shard in getattr(v, "variables", [v])]  # what Keras would train

    @tf.function
    def step(iterator):
        def replica_fn(x, y):
            with tf.GradientTape() as tape:
                logits = forward(x)
                loss = tf.reduce_mean(tf.nn.sparse_softmax_cross_entropy_with_logits(labels=y, logits=logits))
            optimizer.apply_gradients(zip(tape.gradient(loss, shards), shards))
            return loss
        x, y = next(iterator)
        return strategy.run(replica_fn, args=(x, y))
    return step


def mlp_data(_ctx):
    x = tf.random.stateless_normal((BATCH, MLP_SIZES[0]), seed=(1, 2))
    y = tf.random.stateless_uniform((BATCH,), seed=(1, 3), minval=0, maxval=CLASSES, dtype=tf.int64)
    return tf.data.Dataset.from_tensors((x, y)).repeat()


def embedding_data(_ctx):
    ids = tf.random.stateless_uniform((BATCH, IDS_PER_EXAMPLE), seed=(1, 4), minval=0, maxval=VOCAB,
                                      dtype=tf.int64)
    y = tf.random.stateless_uniform((BATCH,), seed=(1, 5), minval=0, maxval=CLASSES, dtype=tf.int64)
    return tf.data.Dataset.from_tensors((ids, y)).repeat()


def training(strategy, coordinator, model_fn, dataset_fn, seconds):
    with strategy.scope():
        variables, forward = model_fn()
        step = train_step(strategy, variables, forward)
    def per_worker_dataset_fn():  # the tutorial's pattern: a function of no argument
        return strategy.distribute_datasets_from_function(dataset_fn)
    iterator = iter(coordinator.create_per_worker_dataset(per_worker_dataset_fn))
    last = {}

    def schedule():
        last["rv"] = coordinator.schedule(step, args=(iterator,))
    timed = time_closures(schedule, coordinator.join, seconds)
    loss = float(last["rv"].fetch())
    return {"examples_per_second": timed["per_second"] * BATCH, "steps": timed["n"], "last_loss": loss,
            "shards": [len(getattr(v, "variables", [v])) for v in variables]}


def measure(cluster: dict, seconds: float) -> dict:
    strategy = make_strategy(cluster)
    coordinator = tf.distribute.coordinator.ClusterCoordinator(strategy)

    @tf.function
    def noop():
        return tf.constant(1)

    last = {}

    def schedule():
        last["rv"] = coordinator.schedule(noop)
    closures = time_closures(schedule, coordinator.join, seconds)
    if int(last["rv"].fetch()) != 1:
        raise RuntimeError(f"noop returned {last['rv'].fetch()!r}, expected 1")
    return {"closures": closures,
            "mlp": training(strategy, coordinator, mlp_model, mlp_data, seconds),
            "embedding": training(strategy, coordinator, embedding_model, embedding_data, seconds),
            "version": tf.__version__}


def main() -> None:
    if sys.argv[1:2] != ["serve"]:
        tf.config.threading.set_intra_op_parallelism_threads(1)
    child_main(__file__, __doc__ or "", serve, measure)


if __name__ == "__main__":
    main()

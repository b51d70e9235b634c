"""TensorFlow 2.21 CPU peer: strategy.run overhead (eager and tf.function) and MLP training.

Two logical CPU devices are configured before anything else, as in the spec's baselines.
Prints one JSON line: {"run_us": {case: us}, "train_eps": {case: examples/s}}.
"""

import time

import tensorflow as tf

from _mlp import BATCH, STEPS, WARMUP, make_arrays, main, medians, time_us

cpu = tf.config.list_physical_devices("CPU")[0]
tf.config.set_logical_device_configuration(cpu, [tf.config.LogicalDeviceConfiguration()] * 2)
FN_CASES = ["tf_eager_op", "tf_function_op", "default", "mirrored_1", "mirrored_2", "mirrored_2_function",
            "mirrored_2_reduce_function"]
TRAIN_CASES = ["tf_single", "mirrored_2"]


def run_overhead(seconds, repeats):
    x = tf.constant(1.0)
    fn = lambda v: v + 1.0  # noqa: E731
    default = tf.distribute.get_strategy()
    m1 = tf.distribute.MirroredStrategy(["CPU:0"])
    m2 = tf.distribute.MirroredStrategy(["CPU:0", "CPU:1"])
    fn_function = tf.function(fn)
    run_function = tf.function(lambda: m2.run(fn, args=(x,)))
    reduce_function = tf.function(lambda: m2.reduce("SUM", m2.run(fn, args=(x,)), axis=None))
    calls = {
        "tf_eager_op": lambda: fn(x),
        "tf_function_op": lambda: fn_function(x),
        "default": lambda: default.run(fn, args=(x,)),
        "mirrored_1": lambda: m1.run(fn, args=(x,)),
        "mirrored_2": lambda: m2.run(fn, args=(x,)),
        "mirrored_2_function": run_function,
        "mirrored_2_reduce_function": reduce_function,
    }
    samples = {name: [] for name in FN_CASES}
    for _ in range(repeats):
        for name in FN_CASES:
            samples[name].append(time_us(calls[name], seconds, 50, 20))
    return {name: sorted(v)[len(v) // 2] for name, v in samples.items()}


def _model():
    tf.random.set_seed(0)
    return tf.keras.Sequential([tf.keras.Input((784,)), tf.keras.layers.Dense(512, activation="relu"),
                                tf.keras.layers.Dense(512, activation="relu"), tf.keras.layers.Dense(10)])


def train(strategy, batches):
    with strategy.scope():
        model = _model()
        opt = tf.keras.optimizers.SGD(0.01)
    loss_obj = tf.keras.losses.SparseCategoricalCrossentropy(from_logits=True, reduction="none")

    def replica_step(x, y):
        with tf.GradientTape() as tape:
            loss = tf.nn.compute_average_loss(loss_obj(y, model(x)), global_batch_size=BATCH)
        grads = tape.gradient(loss, model.trainable_variables)
        opt.apply_gradients(zip(grads, model.trainable_variables))
        return loss

    @tf.function
    def step(x, y):
        return strategy.run(replica_step, args=(x, y))

    dist = [next(iter(strategy.experimental_distribute_dataset(
        tf.data.Dataset.from_tensors((x, y))))) for x, y in batches]
    for i in range(WARMUP):
        step(*dist[i % len(dist)])
    start = time.perf_counter()
    for i in range(STEPS):
        out = step(*dist[i % len(dist)])
    strategy.experimental_local_results(out)[0].numpy()
    return STEPS * BATCH / (time.perf_counter() - start)


def training(repeats):
    x, y = make_arrays()
    batches = [(tf.constant(x[i]), tf.constant(y[i])) for i in range(len(x))]
    runners = {"tf_single": lambda: train(tf.distribute.get_strategy(), batches),
               "mirrored_2": lambda: train(tf.distribute.MirroredStrategy(["CPU:0", "CPU:1"]), batches)}
    return medians(runners, TRAIN_CASES, repeats)




if __name__ == "__main__":
    main(run_overhead, training)

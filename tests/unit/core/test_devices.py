"""Device names: TensorFlow's and torch's spellings, logical CPU replicas, bad device lists."""

import pytest
import torch

import distribute
from distribute._core.devices import Device, available_devices, canonicalize, default_devices, resolve_devices
from distribute.experimental import CentralStorageStrategy

CPU = "/job:localhost/replica:0/task:0/device:CPU:%d"
GPU = "/job:localhost/replica:0/task:0/device:GPU:%d"
NUM_GPUS = torch.cuda.device_count() if torch.cuda.is_available() else 0
MISSING_GPU = NUM_GPUS  # the first index this process cannot see
needs_gpu = pytest.mark.skipif(NUM_GPUS == 0, reason="needs a CUDA device")


def rid():
    return distribute.get_replica_context().replica_id_in_sync_group


# -- spellings ------------------------------------------------------------------------------
@pytest.mark.parametrize("spec,index", [
    ("CPU:0", 0), ("cpu", 0), ("cpu:0", 0), ("CPU", 0), ("/cpu:1", 1), ("/CPU:2", 2),
    ("/device:CPU:2", 2), ("CPU:7", 7), (" cpu:3 ", 3), (CPU % 1, 1),
    ("/job:localhost/task:0/device:CPU:4", 4), (torch.device("cpu"), 0),
])
def test_cpu_spellings(spec, index):
    device = canonicalize(spec)
    assert isinstance(device, Device)
    assert device.name == CPU % index and str(device) == CPU % index
    assert (device.kind, device.index) == ("CPU", index)
    assert device.torch_device == torch.device("cpu")


def test_canonicalize_keeps_job_task_and_replica():
    assert canonicalize("/job:worker/task:2/device:CPU:0").name == "/job:worker/replica:0/task:2/device:CPU:0"
    assert canonicalize("/job:worker/replica:1/task:3/cpu:1").name == "/job:worker/replica:1/task:3/device:CPU:1"
    assert canonicalize("CPU:1", job="worker", task=5).name == "/job:worker/replica:0/task:5/device:CPU:1"


def test_canonicalize_is_idempotent():
    device = canonicalize("/cpu:1")
    assert canonicalize(device) is device
    assert canonicalize(device.name) == device


@pytest.mark.parametrize("spec", ["GPU:{i}", "gpu:{i}", "/gpu:{i}", "cuda:{i}", "/device:GPU:{i}",
                                  "/job:localhost/replica:0/task:0/device:GPU:{i}"])
def test_missing_gpu_raises_listing_available_devices(spec):
    name = spec.format(i=MISSING_GPU)
    with pytest.raises(ValueError, match=f"this process sees {NUM_GPUS} GPU") as info:
        canonicalize(name)
    message = str(info.value)
    assert repr(name) in message
    assert "Available devices: CPU:0, CPU:1" in message
    assert "'CPU:0', 'GPU:1'" in message  # says how to write a device


def test_missing_torch_cuda_device_raises():
    with pytest.raises(ValueError, match="GPU"):
        canonicalize(torch.device("cuda", MISSING_GPU))


@needs_gpu
@pytest.mark.parametrize("spec", ["GPU:0", "gpu", "/gpu:0", "cuda", "cuda:0", "/device:GPU:0",
                                  GPU % 0, torch.device("cuda", 0)])
def test_gpu_spellings(spec):
    device = canonicalize(spec)
    assert (device.name, device.kind, device.index) == (GPU % 0, "GPU", 0)
    assert device.torch_device == torch.device("cuda", 0)


def test_available_devices_lists_logical_cpus_and_every_gpu():
    names = available_devices()
    assert names[:2] == ["CPU:0", "CPU:1"]
    assert [n for n in names if n.startswith("GPU")] == [f"GPU:{i}" for i in range(NUM_GPUS)]


@pytest.mark.parametrize("spec,kind", [("TPU:0", "TPU"), ("XLA_CPU:0", "XLA_CPU"), ("/device:MPS:0", "MPS"),
                                       ("/job:localhost/replica:0/task:0/device:TPU:1", "TPU")])
def test_unknown_kind_raises(spec, kind):
    with pytest.raises(ValueError, match=f"unknown device kind '{kind}'") as info:
        canonicalize(spec)
    assert "Available devices: CPU:0" in str(info.value)


@pytest.mark.parametrize("spec", ["", "CPU:-1", "CPU:a", "CPU:0:1", "/job:/cpu:0", "cpu 0"])
def test_malformed_names_raise(spec):
    with pytest.raises(ValueError, match="it is not a device name") as info:
        canonicalize(spec)
    assert "Available devices" in str(info.value)


@pytest.mark.parametrize("spec", [0, None, ["CPU:0"], b"CPU:0"])
def test_non_string_device_is_a_type_error(spec):
    with pytest.raises(TypeError, match="Expected a device name"):
        canonicalize(spec)


# -- device lists ---------------------------------------------------------------------------
def test_resolve_devices_keeps_order():
    resolved = resolve_devices(("CPU:2", "cpu:0", "/cpu:1"))
    assert [d.name for d in resolved] == [CPU % 2, CPU % 0, CPU % 1]


@pytest.mark.parametrize("devices", [[], ()])
def test_empty_list_raises(devices):
    with pytest.raises(ValueError, match="must name at least one device; received an empty list. "
                                         "Available devices: CPU:0, CPU:1"):
        resolve_devices(devices)


@pytest.mark.parametrize("devices", [["CPU:0", "cpu"], ["/cpu:1", "CPU:1", "CPU:0"], ["CPU:0", CPU % 0]])
def test_duplicates_raise(devices):
    with pytest.raises(ValueError, match="No duplicates allowed in `devices` argument") as info:
        resolve_devices(devices)
    assert "Available devices: CPU:0" in str(info.value)


@pytest.mark.parametrize("devices", ["CPU:0", torch.device("cpu"), None, 2, {"CPU:0"}])
def test_device_list_must_be_a_list_or_tuple(devices):
    with pytest.raises(TypeError, match="to be a list or tuple of device names"):
        resolve_devices(devices)


def test_devices_on_several_tasks_raise():
    with pytest.raises(RuntimeError, match="In-graph multi-worker training with `MirroredStrategy` is not "
                                           "supported in eager mode") as info:
        resolve_devices(["/job:worker/task:0/device:CPU:0", "/job:worker/task:1/device:CPU:0"])
    assert "MultiWorkerMirroredStrategy" in str(info.value)


def test_devices_of_one_named_task_are_accepted():
    resolved = resolve_devices(["/job:worker/task:1/device:CPU:0", "/job:worker/task:1/device:CPU:1"])
    assert [d.index for d in resolved] == [0, 1]


# -- through the strategies ---------------------------------------------------------------
@pytest.mark.parametrize("devices,error,match", [
    ([], ValueError, "`devices` must name at least one device"),
    (["CPU:0", "/cpu:0"], ValueError, "No duplicates allowed in `devices` argument"),
    (["CPU:0", "TPU:0"], ValueError, "unknown device kind 'TPU'"),
    (["CPU:0", f"GPU:{MISSING_GPU}"], ValueError, f"this process sees {NUM_GPUS} GPU"),
    ("CPU:0", TypeError, "list or tuple"),
])
def test_mirrored_rejects_bad_device_lists(devices, error, match):
    with pytest.raises(error, match=match):
        distribute.MirroredStrategy(devices)


def test_central_storage_names_its_argument():
    with pytest.raises(ValueError, match="`compute_devices` must name at least one device"):
        CentralStorageStrategy([])
    with pytest.raises(ValueError, match="No duplicates allowed in `compute_devices` argument"):
        CentralStorageStrategy(["CPU:1", "cpu:1"])
    with pytest.raises(ValueError, match="unknown device kind"):
        CentralStorageStrategy(["CPU:0"], parameter_device="TPU:0")


@pytest.mark.parametrize("device,error", [("TPU:0", ValueError), (f"cuda:{MISSING_GPU}", ValueError),
                                          (["CPU:0"], TypeError)])
def test_one_device_rejects_bad_device(device, error):
    with pytest.raises(error):
        distribute.OneDeviceStrategy(device)


def test_mirrored_default_devices():
    s = distribute.MirroredStrategy()
    expected = tuple(GPU % i for i in range(NUM_GPUS)) or (CPU % 0,)
    assert s.extended.worker_devices == expected
    assert s.num_replicas_in_sync == len(expected)
    assert tuple(d.name for d in default_devices()) == expected


def test_central_storage_default_devices():
    s = CentralStorageStrategy()
    expected = [GPU % i for i in range(NUM_GPUS)] or [CPU % 0]
    assert s.extended.worker_devices == expected
    assert s.extended.parameter_devices == ((expected[0],) if len(expected) == 1 else (CPU % 0,))
    two = CentralStorageStrategy(["CPU:0", "CPU:1"])
    assert two.extended.parameter_devices == (CPU % 0,)
    assert CentralStorageStrategy(["CPU:0", "CPU:1"], "CPU:1").extended.parameter_devices == ("CPU:1",)


# -- logical CPU replicas -------------------------------------------------------------------
def test_logical_cpu_replicas():
    s = distribute.MirroredStrategy(["CPU:0", "cpu:1", "/cpu:2"])
    assert s.num_replicas_in_sync == 3
    assert s.extended.worker_devices == (CPU % 0, CPU % 1, CPU % 2)
    assert s.extended.parameter_devices == s.extended.worker_devices
    devices = s.run(lambda: distribute.get_replica_context().devices)
    assert list(s.experimental_local_results(devices[0][0])) == [CPU % 0, CPU % 1, CPU % 2]
    with s.scope():
        v = distribute.Variable(torch.arange(3.0))
    assert [c.device for c in v.values] == [torch.device("cpu")] * 3
    assert [c.name for c in v.values] == ["Variable:0", "Variable/replica_1:0", "Variable/replica_2:0"]
    out = s.run(lambda: v * (rid() + 1))
    assert [t.tolist() for t in out.values] == [[0., 1., 2.], [0., 2., 4.], [0., 3., 6.]]


def test_logical_replica_indices_need_not_start_at_zero():
    s = distribute.MirroredStrategy(["CPU:5", "CPU:3"])
    assert s.extended.worker_devices == (CPU % 5, CPU % 3)
    assert [int(r) for r in s.run(rid).values] == [0, 1]


@needs_gpu
def test_mirrored_on_gpu_places_components_on_the_gpu():
    s = distribute.MirroredStrategy(["GPU:0", "CPU:0"])
    with s.scope():
        v = distribute.Variable(torch.ones(2))
    assert [c.device.type for c in v.values] == ["cuda", "cpu"]
    out = s.run(lambda: distribute.get_replica_context().all_reduce("sum", v.detach() * 1.0))
    assert [t.device.type for t in out.values] == ["cuda", "cpu"]
    assert [t.tolist() for t in out.values] == [[2., 2.], [2., 2.]]


# -- strategies of different sizes in one process -------------------------------------------
def test_strategies_of_different_sizes_coexist_with_their_variables():
    strategies = [distribute.MirroredStrategy(["CPU:0"]), distribute.MirroredStrategy(["CPU:0", "CPU:1"]),
                  distribute.MirroredStrategy(["CPU:0", "CPU:1", "CPU:2"]),
                  CentralStorageStrategy(["CPU:0", "CPU:1"]), distribute.OneDeviceStrategy("CPU:1")]
    variables = []
    for s in strategies:
        with s.scope():
            variables.append(distribute.Variable(1.0, aggregation="SUM"))
    for _ in range(2):  # interleaved, twice: no strategy disturbs another
        for s, v in zip(strategies, variables):
            s.run(lambda v=v: v.assign_add(torch.tensor(1.0)))
    for s, v in zip(strategies, variables):
        n = s.num_replicas_in_sync
        assert float(v.read_value()) == 1.0 + 2 * n
        assert len(s.experimental_local_results(s.run(rid))) == n
        assert float(s.reduce("sum", s.run(lambda: torch.tensor(1.0)), axis=None)) == n


def test_modules_of_different_sized_strategies_train_independently():
    two = distribute.MirroredStrategy(["CPU:0", "CPU:1"])
    three = distribute.MirroredStrategy(["CPU:0", "CPU:1", "CPU:2"])
    models = {}
    for s in (two, three):
        with s.scope():
            torch.manual_seed(0)
            model = torch.nn.Linear(2, 1)
            models[s] = (model, distribute.optim.SGD(model.parameters(), lr=0.1))
    for s, (model, opt) in models.items():
        def step(model=model, opt=opt):
            opt.zero_grad()
            model(torch.ones(1, 2)).sum().backward()
            opt.step()
        s.run(step)
    w2, w3 = models[two][0].weight, models[three][0].weight
    assert len(w2.values) == 2 and len(w3.values) == 3
    # each replica contributed a gradient of ones: the summed step is -0.1 * n
    torch.testing.assert_close(w2.detach() - w3.detach(), torch.full((1, 2), 0.1))


def test_variable_of_a_smaller_strategy_is_refused_by_a_larger_one():
    two = distribute.MirroredStrategy(["CPU:0", "CPU:1"])
    three = distribute.MirroredStrategy(["CPU:0", "CPU:1", "CPU:2"])
    with two.scope():
        v = distribute.Variable(torch.ones(2))
    with pytest.raises(ValueError, match="has 2 component\\(s\\) but replica 2 asked for its own"):
        three.run(lambda: v * 2)
    with pytest.raises(RuntimeError, match="Mixing different distribute.Strategy objects"):
        three.run(lambda: v.assign(torch.zeros(2)))
    assert len(three.run(rid).values) == 3  # the failed runs left nothing behind


def test_one_strategy_cannot_run_inside_another():
    two = distribute.MirroredStrategy(["CPU:0", "CPU:1"])
    three = distribute.MirroredStrategy(["CPU:0", "CPU:1", "CPU:2"])
    with pytest.raises(RuntimeError, match="Mixing different distribute.Strategy objects"):
        two.run(lambda: three.run(rid))
    with three.scope(), pytest.raises(RuntimeError, match="Mixing different distribute.Strategy objects"):
        two.run(rid)

"""The process-group layer: rendezvous deadlines and errors, collectives, shutdown.

Rendezvous failures run in this process with short deadlines (no task ever reaches the
collective stage); the collectives themselves run on two real processes started by the launcher.
"""

from __future__ import annotations

import socket
import threading
import time
from pathlib import Path
from typing import Any, List

import pytest
import torch

from distribute.cluster_resolver import ClusterConfigError, ClusterSpec
from distribute.collectives.failures import GroupBrokenError, PortInUseError, RendezvousTimeoutError
from distribute.collectives.connect import connect
from distribute.errors import AlreadyExistsError, DeadlineExceededError, UnavailableError
from ._secret_job import free_ports
from ._two_workers import BOTH_WAYS, run_two_workers

SCRIPT = Path(__file__).resolve().parent / "pg_scripts" / "pg_worker.py"


def spec_of(ports: List[int]) -> ClusterSpec:
    return ClusterSpec({"worker": [f"127.0.0.1:{p}" for p in ports]})


# -- rendezvous failures ------------------------------------------------------------------------
def test_port_in_use_names_the_task_and_address() -> None:
    (port,) = free_ports(1)
    taken = socket.socket()
    taken.bind(("127.0.0.1", port))
    taken.listen(1)
    try:
        started = time.monotonic()
        with pytest.raises(PortInUseError, match=f"worker:0 cannot host the rendezvous at 127.0.0.1:{port}") as info:
            connect(spec_of([port, free_ports(1)[0]]), "worker", 0, rendezvous_timeout=5)
        assert time.monotonic() - started < 3.0  # at once, not after the 5 s deadline (slack for load)
        assert info.value.task == "worker:0" and info.value.address == f"127.0.0.1:{port}"
        assert isinstance(info.value, UnavailableError)
    finally:
        taken.close()


def test_unreachable_chief_fails_within_the_deadline() -> None:
    ports = free_ports(2)
    started = time.monotonic()
    with pytest.raises(RendezvousTimeoutError, match="could not reach the rendezvous host worker:0") as info:
        connect(spec_of(ports), "worker", 1, rendezvous_timeout=1.0)
    assert time.monotonic() - started < 4.0  # the 1 s deadline, + slack for a loaded machine
    assert info.value.missing == ("worker:0", "worker:1") and info.value.joined == ()
    assert isinstance(info.value, DeadlineExceededError) and isinstance(info.value, TimeoutError)


def test_missing_worker_lists_who_joined() -> None:
    ports = free_ports(2)
    started = time.monotonic()
    with pytest.raises(RendezvousTimeoutError, match=r"1/2 tasks joined \(worker:0\); missing: worker:1") as info:
        connect(spec_of(ports), "worker", 0, rendezvous_timeout=1.0)
    assert time.monotonic() - started < 4.0  # the 1 s deadline, + slack for a loaded machine
    assert info.value.joined == ("worker:0",) and info.value.missing == ("worker:1",)


def _in_threads(calls: List[Any]) -> List[BaseException]:
    errors: List[Any] = [None] * len(calls)

    def run(i: int) -> None:
        try:
            calls[i]()
        except BaseException as exc:  # noqa: BLE001 - collected for the test
            errors[i] = exc

    threads = [threading.Thread(target=run, args=(i,)) for i in range(len(calls))]
    for i, thread in enumerate(threads):
        thread.start()
        time.sleep(0.2 if i == 0 else 0.0)  # the host first
    for thread in threads:
        thread.join(timeout=30)
    return errors


def test_tasks_that_disagree_about_the_cluster_fail_fast() -> None:
    ports = free_ports(3)
    errors = _in_threads([lambda: connect(spec_of(ports[:2]), "worker", 0, rendezvous_timeout=3),
                          lambda: connect(spec_of(ports), "worker", 1, rendezvous_timeout=3)])
    for exc in errors:
        assert isinstance(exc, ClusterConfigError), exc
        assert "disagree about the cluster" in str(exc)


def test_two_processes_claiming_one_task() -> None:
    ports = free_ports(3)
    spec = spec_of(ports)
    # 4 s, not 1.5: the duplicate must be seen before the claimers' deadline, even on a loaded machine
    errors = _in_threads([lambda: connect(spec, "worker", 0, rendezvous_timeout=4.0),
                          lambda: connect(spec, "worker", 1, rendezvous_timeout=4.0),
                          lambda: connect(spec, "worker", 1, rendezvous_timeout=4.0)])
    assert isinstance(errors[0], RendezvousTimeoutError)
    claims = sorted(type(e).__name__ for e in errors[1:])
    assert claims == ["AlreadyExistsError", "RendezvousTimeoutError"], errors
    duplicate = next(e for e in errors if isinstance(e, AlreadyExistsError))
    assert "already joined the rendezvous" in str(duplicate) and "as worker:1" in str(duplicate)


def test_only_chief_and_worker_tasks_join() -> None:
    spec = ClusterSpec({"worker": ["127.0.0.1:1"], "ps": ["127.0.0.1:2"]})
    with pytest.raises(ClusterConfigError, match="ps:0 is not a member of the training group"):
        connect(spec, "ps", 0)


def test_nccl_needs_a_gpu() -> None:
    if torch.cuda.is_available():
        pytest.skip("this machine has a GPU")
    with pytest.raises(ValueError, match="nccl=True needs a CUDA build"):
        connect(spec_of(free_ports(1)), "worker", 0, nccl=True)


# -- one task: the whole protocol without peers --------------------------------------------------
@pytest.fixture
def single() -> Any:
    group = connect(spec_of(free_ports(1)), "worker", 0, rendezvous_timeout=5, collective_timeout=5)
    yield group
    group.shutdown()


def test_single_task_collectives(single: Any) -> None:
    assert (single.rank, single.world_size, single.task, single.backend) == (0, 1, "worker:0", "gloo")
    (total,) = single.all_reduce([torch.tensor([1.0, 2.0])], note="one")
    assert total.tolist() == [1.0, 2.0]
    assert single.all_gather(torch.ones(2, 3), 1).shape == (2, 3)
    value = torch.zeros(2)
    single.broadcast([value])
    assert value.tolist() == [0.0, 0.0]
    assert single.any_true(True) and not single.any_true(False)
    assert single.sequence == 5


def test_connect_reuses_the_group(single: Any) -> None:
    again = connect(spec_of([int(single.layout.rendezvous.rsplit(":", 1)[1])]), "worker", 0)
    assert again is single


def test_shutdown_is_idempotent_and_final(single: Any) -> None:
    single.shutdown()
    single.shutdown()
    with pytest.raises(GroupBrokenError, match="it was shut down"):
        single.all_reduce([torch.ones(1)])
    assert not [t for t in threading.enumerate() if t.name == "distribute-heartbeat"]


@pytest.mark.parametrize("call, error, words", [
    (lambda g: g.all_reduce(torch.ones(2)), TypeError, "list or tuple of tensors"),
    (lambda g: g.all_reduce([]), ValueError, "at least one tensor"),
    (lambda g: g.all_reduce([torch.ones(1), 3.0]), TypeError, "expects tensors, received float"),
    (lambda g: g.all_reduce([torch.ones(1)], bytes_per_pack=-1), ValueError, "bytes_per_pack"),
    (lambda g: g.all_gather(torch.ones(2), 1), ValueError, "axis=1"),
    (lambda g: g.all_gather(torch.tensor(1.0), 0), ValueError, "shape ()"),
    (lambda g: g.broadcast([torch.ones(1)], src=1), ValueError, "src must be a rank in [0, 1)"),
    (lambda g: g.all_reduce([torch.ones(1)], timeout=-1), ValueError, "timeout must be a positive number"),
])
def test_arguments_are_checked(single: Any, call: Any, error: type, words: str) -> None:
    with pytest.raises(error) as info:
        call(single)
    assert words in str(info.value)


# -- two processes --------------------------------------------------------------------------------
@pytest.mark.multiprocess
@pytest.mark.timeout(90)
@BOTH_WAYS
def test_collectives_on_two_processes(fast_paths: bool) -> None:
    found = run_two_workers(SCRIPT, fast_paths=fast_paths)
    first, second = found["worker:0"], found["worker:1"]
    for name in ("mixed", "packs", "inplace", "broadcast", "any", "done"):
        assert first[name] == second[name], name
    assert first["mixed"][:5] == [[[3.0] * 3] * 2, [0, 3, 6, 9], [True], [3.0] * 3, 7.5]
    assert first["mixed"][5] == ["torch.float32", "torch.int64", "torch.bool", "torch.float16", "torch.float64"]
    assert first["packs"] == [300.0] * 5
    assert first["inplace"] == {"values": [[3.0] * 3, [[30.0, 30.0]] * 2], "same_objects": True}
    assert first["gather"]["value"] == [[0.0, 100.0, 101.0], [1.0, 102.0, 103.0]] == second["gather"]["value"]
    assert (first["gather"]["offset"], second["gather"]["offset"]) == (0, 1)
    assert first["broadcast"] == [1.0, 1.0, 1.0]
    assert first["any"] == [True, False]
    prediction = first["prediction"]
    assert prediction["full_checks"] <= 3  # 20 collectives, agreed by prediction after one round
    assert prediction["held"] == [2.0] * 4 and prediction["again"] == [6.0] * 4 and prediction["distinct"]


@pytest.mark.multiprocess
@pytest.mark.timeout(90)
@BOTH_WAYS
def test_a_failed_prediction_leaves_in_place_tensors_alone_on_three_processes(fast_paths: bool) -> None:
    found = run_two_workers(SCRIPT.parent / "three_workers_inplace.py", workers=3, fast_paths=fast_paths)
    for rank in range(3):
        mine = found[f"worker:{rank}"]
        assert mine["error"] is True
        assert mine["untouched"] == [[float(rank + 1)] * 3, [rank + 1] * 5], (rank, mine["untouched"])
        assert mine["retry"] == [[6.0] * 3, [6] * 5]


@pytest.mark.multiprocess
@pytest.mark.timeout(90)
@BOTH_WAYS
def test_steady_small_in_place_sums_stay_safe(fast_paths: bool) -> None:
    found = run_two_workers(SCRIPT.parent / "fast_worker.py", fast_paths=fast_paths)
    for rank in range(2):
        mine = found[f"worker:{rank}"]
        # float32: NaN-signalled (the fast path) or with a header slot (the general path); int64: a header slot
        assert mine["counts_float"] == ({"nan_signal": 6, "packed": 1} if fast_paths else {"packed": 7})
        for name, one in (("float", 1.0), ("int", 1)):
            assert mine[f"steady_{name}"] == [[True, [3 * one] * 4]] * 6
            assert mine[f"taken_{name}"] == 7, mine[f"taken_{name}"]  # the held sum, then 6 steady ones
            assert mine[f"held_{name}"] == [2 * one] * 4  # a result handed out earlier is not overwritten
            error = mine[f"error_{name}"]
            assert error is not None and "loss" in error and "other" in error, error
            assert mine[f"untouched_{name}"] == [(rank + 1) * one] * 4
            assert mine[f"again_{name}"] == [[True, [3 * one] * 4]] * 4
            assert mine[f"taken_again_{name}"] == 4, mine[f"taken_again_{name}"]

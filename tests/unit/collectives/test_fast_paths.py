"""The fast-path option: DISTRIBUTE_FAST_PATHS, connect(fast_paths=...), same bits either way, mismatches."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
import torch

from distribute.cluster_resolver import ClusterConfigError
from distribute.cluster_resolver.fast_paths import fast_paths_enabled
from distribute.collectives.connect import connect
from distribute.collectives.wire import FAST_PATHS
from ._two_workers import run_two_workers
from .test_process_group import free_ports, spec_of

SCRIPTS = Path(__file__).resolve().parent / "pg_scripts"


@pytest.mark.parametrize("environ, expected", [({}, True), ({"DISTRIBUTE_FAST_PATHS": "1"}, True),
                                               ({"DISTRIBUTE_FAST_PATHS": "0"}, False),
                                               ({"DISTRIBUTE_FAST_PATHS": " 0 "}, False)])
def test_the_variable_turns_the_fast_paths_off(environ: dict, expected: bool) -> None:
    assert fast_paths_enabled(environ) is expected


@pytest.mark.parametrize("value", ["off", "", "2", "true"])
def test_other_values_of_the_variable_are_refused(value: str) -> None:
    with pytest.raises(ClusterConfigError, match="DISTRIBUTE_FAST_PATHS: expected 0 .* or 1") as info:
        fast_paths_enabled({"DISTRIBUTE_FAST_PATHS": value})
    assert info.value.field == "DISTRIBUTE_FAST_PATHS" and info.value.value == value


def test_connect_takes_the_option_and_reads_the_variable_otherwise(monkeypatch: Any) -> None:
    group = connect(spec_of(free_ports(1)), "worker", 0, rendezvous_timeout=5, collective_timeout=5,
                    fast_paths=False)
    try:
        assert group.fast_paths == frozenset()
        (total,) = group.all_reduce([torch.ones(3)], note="general", inplace=True)
        assert total.tolist() == [1.0] * 3 and group.wire_counts == {"packed": 1}
        group.use_fast_paths(True)
        assert group.fast_paths == FAST_PATHS
        with pytest.raises(ValueError, match="fast_paths must be True, False or a collection"):
            group.use_fast_paths("no")
    finally:
        group.shutdown()
    monkeypatch.setenv("DISTRIBUTE_FAST_PATHS", "0")
    group = connect(spec_of(free_ports(1)), "worker", 0, rendezvous_timeout=5, collective_timeout=5)
    try:
        assert group.fast_paths == frozenset()
    finally:
        group.shutdown()


def test_connect_refuses_a_bad_option_before_the_rendezvous() -> None:
    with pytest.raises(ValueError, match="received 'fast'"):
        connect(spec_of(free_ports(2)), "worker", 0, rendezvous_timeout=30, fast_paths="fast")


@pytest.mark.multiprocess
@pytest.mark.timeout(120)
def test_sums_are_bit_identical_with_the_fast_paths_on_and_off() -> None:
    fast = run_two_workers(SCRIPTS / "bits_worker.py", fast_paths=True)
    general = run_two_workers(SCRIPTS / "bits_worker.py", fast_paths=False)
    for task in ("worker:0", "worker:1"):
        assert fast[task]["bits"] == general[task]["bits"] == fast["worker:0"]["bits"]
        assert len(set(fast[task]["bits"].values())) == 7  # one result per case (and the same each round)
        # each wire method carried its cases when on; only the general one when off
        assert fast[task]["counts"] == {"nan_signal": 6, "pairwise": 6, "direct": 6, "packed": 3}
        assert general[task]["counts"] == {"packed": 21}
        assert general[task]["fast_paths"] == [] and fast[task]["fast_paths"] == sorted(FAST_PATHS)


@pytest.mark.multiprocess
@pytest.mark.timeout(90)
def test_workers_that_disagree_on_the_option_raise_a_mismatch() -> None:
    found = run_two_workers(SCRIPTS / "option_worker.py")
    for task in ("worker:0", "worker:1"):
        mine = found[task]
        both = [["worker:0", "worker:1"], True]  # both named; the message shows whose are off
        assert mine["mismatch"] == {"out of place": both, "in place": both, "gather": both, "broadcast": both}
        assert mine["untouched"] is True
        assert mine["agreed"] == [3.0] * 6

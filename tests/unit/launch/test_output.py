"""Tests of the output collector, the port finder and the result types (no processes)."""

from __future__ import annotations

import socket

import pytest

from distribute.errors import InvalidArgumentError
from distribute.launch import EXIT_TIMEOUT, LaunchResult, TaskResult, free_ports
from distribute.launch.output import MAX_LINE_BYTES, OutputCollector, prefix
from distribute.launch.results import exit_status, signal_name


def test_lines_are_split_prefixed_and_kept_per_task():
    shown = []
    collector = OutputCollector(["worker:0", "worker:1"], lambda s, line: shown.append((s, line)))
    collector.feed("worker:0", "stdout", b"a\nb")
    collector.feed("worker:1", "stderr", b"x\n")
    collector.feed("worker:0", "stdout", b"c\n")
    collector.feed("worker:0", "stderr", b"tail without newline")
    collector.close("worker:0", "stderr")
    collector.close("worker:0", "stdout")
    assert collector.task_output("worker:0") == "a\nbc\ntail without newline"
    assert collector.task_output("worker:1") == "x\n"
    assert collector.output() == ("[worker:0] a\n[worker:1] x\n[worker:0] bc\n"
                                  "[worker:0] tail without newline\n")
    assert [s for s, _ in shown] == ["stdout", "stderr", "stdout", "stderr"]


def test_bad_utf8_and_long_lines():
    collector = OutputCollector(["ps:0"])
    collector.feed("ps:0", "stdout", b"caf\xc3\xa9 \xff\n")
    collector.feed("ps:0", "stdout", b"z" * (MAX_LINE_BYTES + 10))
    collector.close("ps:0", "stdout")
    assert collector.task_output("ps:0") == "caf\u00e9 \ufffd\n" + "z" * (MAX_LINE_BYTES + 10)
    lines = collector.output().splitlines()  # a very long line is shown in pieces
    assert lines[0] == "[ps:0] caf\u00e9 \ufffd"
    assert [len(line) - len("[ps:0] ") for line in lines[1:]] == [MAX_LINE_BYTES, 10]


def test_lines_can_go_to_the_sink_only():
    shown = []
    collector = OutputCollector(["worker:0"], lambda s, line: shown.append(line), keep=False)
    collector.feed("worker:0", "stdout", b"a\nb\n")
    assert shown == ["[worker:0] a\n", "[worker:0] b\n"]
    assert collector.output() == "" and collector.task_output("worker:0") == ""


def test_prefix():
    assert prefix("chief:0", "hi\n") == "[chief:0] hi\n"


def test_free_ports_are_distinct_and_bindable():
    ports = free_ports("127.0.0.1", 5)
    assert len(set(ports)) == 5
    for port in ports:
        with socket.socket() as sock:
            sock.bind(("127.0.0.1", port))


@pytest.mark.parametrize("count", [0, -1, True, 1.5])
def test_free_ports_count(count):
    with pytest.raises(InvalidArgumentError, match="count: expected an int >= 1"):
        free_ports("127.0.0.1", count)


def test_exit_status_and_signal_names():
    assert [exit_status(c) for c in (0, 1, 255, -9, -15)] == [0, 1, 255, 137, 143]
    assert signal_name(15) == "SIGTERM" and signal_name(9999) == "9999"


def _result(**kwargs):
    tasks = {"worker:0": TaskResult("worker:0", 0, ""),
             "worker:1": TaskResult("worker:1", 137, "", stopped=False)}
    fields = dict(returncode=0, failed_task=None, timed_out=False, tasks=tasks, output="")
    fields.update(kwargs)
    return LaunchResult(**fields)


def test_summaries():
    assert _result(returncode=137, failed_task="worker:1").summary() == (
        "worker:1 was killed by SIGKILL (status 137)")
    assert _result(returncode=EXIT_TIMEOUT, timed_out=True).summary() == "the deadline expired"
    assert _result(returncode=130, signal=2).summary() == "interrupted by SIGINT"
    assert _result().summary() == "all 2 tasks succeeded"

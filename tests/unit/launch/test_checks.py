"""Tests of the launcher's argument checks: every mistake fails before any process starts."""

from __future__ import annotations

import sys

import pytest

from distribute.errors import InvalidArgumentError, NotFoundError
from distribute.launch import launch

PY = [sys.executable, "-c", "pass"]


@pytest.mark.parametrize("kwargs, error, message", [
    ({"workers": 0}, InvalidArgumentError, "workers: expected an int >= 1; received 0. A cluster"),
    ({"workers": True}, TypeError, "workers: expected an int >= 1; received True"),
    ({"workers": "2"}, TypeError, "workers: expected an int >= 1; received '2'"),
    ({"ps": -1}, InvalidArgumentError, "ps: expected an int >= 0; received -1"),
    ({"chief": "yes"}, TypeError, "chief: expected True or False; received 'yes'"),
    ({"timeout": 0}, InvalidArgumentError, "timeout: expected a number of seconds > 0 or None"),
    ({"timeout": float("nan")}, InvalidArgumentError, "timeout: expected a number of seconds"),
    ({"timeout": "5"}, TypeError, "timeout: expected a number of seconds > 0 or None"),
    ({"grace_period": -0.5}, InvalidArgumentError,
     "grace_period: expected a number of seconds >= 0"),
    ({"env": ["A=1"]}, TypeError, "env: expected a dict of environment variables or None"),
    ({"env": {"A": 1}}, TypeError, "env['A']: expected a str, or None to remove it; received 1"),
    ({"env": {"A=B": "1"}}, InvalidArgumentError, "env key: expected a variable name"),
    ({"env": {"TF_CONFIG": "{}"}}, InvalidArgumentError, "launcher writes each task's own"),
    ({"cwd": "/no/such/dir"}, NotFoundError, "cwd: expected an existing directory"),
    ({"cwd": 3}, TypeError, "cwd: expected a directory path or None"),
    ({"host": "0.0.0.0"}, InvalidArgumentError, "every task listen on every interface"),
    ({"host": "::"}, InvalidArgumentError, "host: expected one address of this machine"),
    ({"host": "not a host!"}, InvalidArgumentError, "host: expected an IP address or host name"),
    ({"host": 127}, TypeError, "host: expected an address such as '127.0.0.1'"),
    ({"host": "192.0.2.1"}, InvalidArgumentError, "binding a port failed"),
    ({"echo": 1}, TypeError, "echo: expected True or False; received 1"),
    ({"forward_signals": None}, TypeError, "forward_signals: expected True or False"),
])
def test_bad_arguments(kwargs, error, message):
    with pytest.raises(error) as info:
        launch(PY, **kwargs)
    assert message in str(info.value)


@pytest.mark.parametrize("argv, error, message", [
    ([], TypeError, "argv: expected a non-empty list of strings; received []"),
    ("python", TypeError, "argv: expected a non-empty list of strings"),
    ([sys.executable, 3], TypeError, "argv: expected a list of strings"),
    (["no-such-program-xyz"], NotFoundError, "argv[0]: expected an executable program"),
    (["./no/such/file"], NotFoundError, "argv[0]: expected an executable program"),
])
def test_bad_commands(argv, error, message):
    with pytest.raises(error) as info:
        launch(argv)
    assert message in str(info.value)


def test_errors_are_builtin_subclasses():
    with pytest.raises(ValueError):
        launch(PY, workers=0)
    with pytest.raises(FileNotFoundError):
        launch(["no-such-program-xyz"])

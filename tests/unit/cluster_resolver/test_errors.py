"""Tests of the exception classes and message builder."""

import pytest

from distribute.cluster_resolver import (
    ClusterAllocationError,
    ClusterConfigError,
    ClusterConfigTypeError,
    ClusterMergeError,
    MissingEnvironmentError,
    TFConfigError,
)
from distribute.cluster_resolver._errors import describe, short_repr
from distribute.errors import DistributeError, InvalidArgumentError


@pytest.mark.parametrize("cls, builtin", [
    (ClusterConfigError, ValueError), (TFConfigError, ValueError),
    (ClusterConfigTypeError, TypeError), (MissingEnvironmentError, RuntimeError),
    (ClusterAllocationError, RuntimeError), (ClusterMergeError, KeyError),
])
def test_hierarchy(cls, builtin):
    assert issubclass(cls, builtin) and issubclass(cls, DistributeError)


def test_tf_config_error_is_an_invalid_argument():
    assert issubclass(TFConfigError, ClusterConfigError)
    assert issubclass(ClusterConfigError, InvalidArgumentError)


def test_fields_are_kept():
    error = TFConfigError("m", field="TF_CONFIG['task']", value=3)
    assert (str(error), error.field, error.value) == ("m", "TF_CONFIG['task']", 3)
    error = ClusterConfigTypeError("m", field="f", value=None)
    assert (error.field, error.value) == ("f", None)
    assert MissingEnvironmentError("m", variable="RANK").variable == "RANK"


def test_merge_error_message_is_not_quoted():
    assert str(ClusterMergeError("Duplicate keys: {1}")) == "Duplicate keys: {1}"
    assert str(ClusterMergeError()) == ""


def test_describe_and_short_repr():
    assert describe("f", "an int", "x", "Fix it.") == "f: expected an int; received 'x'. Fix it."
    assert describe("f", "an int", "x") == "f: expected an int; received 'x'."
    long = short_repr("x" * 500)
    assert len(long) == 120 and long.endswith("...")

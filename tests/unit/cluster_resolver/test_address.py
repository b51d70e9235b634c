"""Tests of distribute.cluster_resolver.address: host:port parsing."""

import pytest

from distribute.cluster_resolver import (
    Address,
    ClusterConfigError,
    ClusterConfigTypeError,
    TFConfigError,
    format_address,
    parse_address,
)


@pytest.mark.parametrize("text, host, port", [
    ("localhost:2222", "localhost", 2222),
    ("10.0.0.2:1", "10.0.0.2", 1),
    ("worker-0.svc.cluster.local:65535", "worker-0.svc.cluster.local", 65535),
    ("node_7:8888", "node_7", 8888),
    ("[::1]:2222", "::1", 2222),
    ("[fe80::1%eth0]:2222", "fe80::1%eth0", 2222),
    ("[2001:db8::1]:80", "2001:db8::1", 80),
])
def test_valid_addresses(text, host, port):
    address = parse_address(text)
    assert address == Address(host, port)
    assert str(address) == text


@pytest.mark.parametrize("text, hint", [
    ("localhost", "Add the port"),
    ("localhost:", "must be an integer"),
    ("localhost:port", "must be an integer"),
    ("localhost:22.0", "must be an integer"),
    ("localhost:-1", "must be an integer"),
    ("localhost:0", "port 0"),
    ("localhost:65536", "outside 1..65535"),
    ("::1:2222", "without brackets"),
    ("[::1]2222", "'[addr]:port'"),
    ("[::1:2222", "'[addr]:port'"),
    ("[not-ipv6]:2222", "not an IPv6 address"),
    ("300.1.1.1:2222", "not an IPv4 address"),
    ("bad host:2222", "not a host name"),
    ("-bad:2222", "not a host name"),
    ("a..b:2222", "not a host name"),
    (":2222", "not a host name"),
    (" localhost:2222", "spaces"),
    ("grpc://localhost:2222", "rpc_layer"),
    ("", "spaces"),
])
def test_invalid_addresses_name_the_field(text, hint):
    with pytest.raises(ClusterConfigError) as info:
        parse_address(text, "cluster['worker'][0]")
    message = str(info.value)
    assert message.startswith("cluster['worker'][0]: expected an address 'host:port'")
    assert hint in message
    assert info.value.field == "cluster['worker'][0]"
    assert info.value.value == text
    assert isinstance(info.value, ValueError)


def test_error_class_can_be_chosen():
    with pytest.raises(TFConfigError):
        parse_address("x", "TF_CONFIG['cluster']['worker'][0]", TFConfigError)
    with pytest.raises(TFConfigError):
        parse_address(5, "f", TFConfigError, TFConfigError)


def test_non_string_is_a_type_error():
    with pytest.raises(ClusterConfigTypeError, match="Write each address as a string"):
        parse_address(2222)
    with pytest.raises(TypeError):
        parse_address(None)


def test_format_address_brackets_ipv6():
    assert format_address("::1", 1) == "[::1]:1"
    assert format_address("host", 1) == "host:1"


def test_key_normalises_case_and_ipv6():
    assert parse_address("HOST:1").key() == parse_address("host:1").key()
    assert parse_address("[0:0::1]:1").key() == parse_address("[::1]:1").key()
    assert parse_address("host:1").key() != parse_address("host:2").key()

"""Task addresses: ``host:port`` strings, checked before anything connects.

A host is a DNS name (``worker-0.svc``, ``localhost``), an IPv4 address (``10.0.0.2``) or an
IPv6 address in brackets (``[::1]``, ``[fe80::1%eth0]``). A port is a decimal integer from
1 to 65535; port 0 ("any free port") is refused because every peer must know the address in
advance. Nothing here resolves names or opens sockets.
"""

from __future__ import annotations

import ipaddress
import re
from typing import Callable, NamedTuple, Tuple, Type

from distribute.cluster_resolver._errors import ClusterConfigError, ClusterConfigTypeError, describe

__all__ = ["Address", "format_address", "parse_address"]

_LABEL = re.compile(r"[A-Za-z0-9_](?:[A-Za-z0-9_-]{0,61}[A-Za-z0-9_])?\Z")
_IPV4_LIKE = re.compile(r"[0-9.]+\Z")
_EXPECTED = "an address 'host:port' (IPv6 hosts in brackets, e.g. '[::1]:2222')"


class Address(NamedTuple):
    """A parsed task address.

    Example:
        >>> parse_address("[::1]:2222")
        Address(host='::1', port=2222)
        >>> str(parse_address("localhost:2222"))
        'localhost:2222'
    """

    host: str
    port: int

    def __str__(self) -> str:
        return format_address(self.host, self.port)

    def key(self) -> Tuple[str, int]:
        """A normalised ``(host, port)`` pair, used to find duplicate addresses."""
        host = self.host.lower()
        if ":" in host:
            host = ipaddress.IPv6Address(host.split("%")[0]).compressed + _zone(host)
        return host, self.port


def _zone(host: str) -> str:
    return "%" + host.split("%", 1)[1] if "%" in host else ""


def format_address(host: str, port: int) -> str:
    """Joins a host and a port, putting an IPv6 host in brackets."""
    return f"[{host}]:{port}" if ":" in host else f"{host}:{port}"


def parse_address(
    address: object,
    field: str = "address",
    error: Type[ClusterConfigError] = ClusterConfigError,
    type_error: Callable[..., Exception] = ClusterConfigTypeError,
) -> Address:
    """Checks and splits ``'host:port'``.

    Args:
        address: the string to check.
        field: how to name the value in an error message (``"TF_CONFIG['cluster']['worker'][0]"``).
        error: the ``ValueError`` subclass to raise for a bad string.
        type_error: the exception to raise for a value that is not a string.

    Returns:
        The host (without brackets) and the port as an int.

    Raises:
        ClusterConfigTypeError: (or ``type_error``) ``address`` is not a string.
        ClusterConfigError: (or ``error``) the string is not a valid ``host:port``.
    """
    if not isinstance(address, str):
        raise type_error(
            describe(field, _EXPECTED, address, "Write each address as a string."),
            field=field, value=address,
        )
    host_text, port_text = _split(address, field, error)
    host = _check_host(host_text, address, field, error)
    return Address(host, _check_port(port_text, address, field, error))


def _fail(error: Type[ClusterConfigError], field: str, address: str,
          fix: str) -> ClusterConfigError:
    return error(describe(field, _EXPECTED, address, fix), field=field, value=address)


def _split(address: str, field: str, error: Type[ClusterConfigError]) -> Tuple[str, str]:
    if "://" in address:
        scheme = address.split("://", 1)[0]
        raise _fail(error, field, address,
                    f"Remove the '{scheme}://' prefix; the scheme belongs in `rpc_layer`.")
    if address != address.strip() or not address:
        raise _fail(error, field, address, "Remove the spaces around the address.")
    if address.startswith("["):
        host, sep, rest = address[1:].partition("]")
        if not sep or not rest.startswith(":"):
            raise _fail(error, field, address, "Write IPv6 addresses as '[addr]:port'.")
        return "[" + host + "]", rest[1:]
    if address.count(":") > 1:
        raise _fail(error, field, address,
                    "This looks like an IPv6 address without brackets; write '[addr]:port'.")
    host, sep, port = address.partition(":")
    if not sep:
        raise _fail(error, field, address, "Add the port, e.g. 'localhost:2222'.")
    return host, port


def _check_host(host: str, address: str, field: str, error: Type[ClusterConfigError]) -> str:
    if host.startswith("["):
        try:
            ipaddress.IPv6Address(host[1:-1])
        except ValueError:
            raise _fail(error, field, address,
                        f"{host[1:-1]!r} is not an IPv6 address.") from None
        return host[1:-1]
    if _IPV4_LIKE.match(host):
        try:
            ipaddress.IPv4Address(host)
        except ValueError:
            raise _fail(error, field, address, f"{host!r} is not an IPv4 address.") from None
        return host
    labels = host.split(".")
    if not host or len(host) > 253 or not all(_LABEL.match(label) for label in labels):
        raise _fail(error, field, address,
                    f"{host!r} is not a host name (letters, digits, '-', '_' and dots).")
    return host


def _check_port(port: str, address: str, field: str, error: Type[ClusterConfigError]) -> int:
    if not port.isascii() or not port.isdigit():
        raise _fail(error, field, address, f"The port {port!r} must be an integer from 1 to 65535.")
    value = int(port)
    if not 1 <= value <= 65535:
        raise _fail(error, field, address, f"The port {value} is outside 1..65535"
                    + (" (port 0 cannot be known to the peers in advance)." if value == 0 else "."))
    return value

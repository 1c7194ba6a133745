"""Whose address a request comes from, believing forwarded headers only from
trusted proxies. Pure functions, no IO.

A proxy appends the address it was called from to ``X-Forwarded-For``
(configurable-http-proxy does: ``client-sent, ..., <its peer>``), so
everything left of the last trusted hop was written by the client and may
be forged. ``client_address`` walks the list from the right, skipping
trusted proxies, and takes the first address that is not one.
``X-Real-IP`` is only a fallback for a trusted peer that sends no
``X-Forwarded-For`` (configurable-http-proxy passes a client-sent
``X-Real-IP`` through unchanged, so it must never win over the list).
"""

from __future__ import annotations

import functools
import ipaddress
from typing import Iterable, Mapping

from traitlets import List, TraitError, Unicode

Network = ipaddress.IPv4Network | ipaddress.IPv6Network
Address = ipaddress.IPv4Address | ipaddress.IPv6Address

#: where the hub's configurable-http-proxy runs by default: on this host
LOOPBACK = ("127.0.0.1", "::1")


@functools.lru_cache(maxsize=16)
def parse_networks(items: Iterable[str]) -> tuple[Network, ...]:
    """``("127.0.0.1", "10.0.0.0/8")`` -> networks; ValueError names a bad item.
    Cached: pass a tuple."""
    out = []
    for item in items:
        try:
            out.append(ipaddress.ip_network(item.strip(), strict=False))
        except ValueError:
            raise ValueError(f"{item!r} is not an IP address or network (CIDR)") from None
    return tuple(out)


class Networks(List):
    """A traitlet: addresses or CIDR networks, each checked when set."""

    def __init__(self, **kwargs):
        super().__init__(Unicode(), **kwargs)

    def validate(self, obj, value):
        value = super().validate(obj, value)
        try:
            parse_networks(tuple(value))
        except ValueError as e:
            raise TraitError(f"{self.name}: {e}") from None
        return value


def _address(text: str) -> Address | None:
    """An IP address, IPv4-mapped IPv6 (``::ffff:10.1.2.3``) as IPv4; None if not one."""
    text = text.strip()
    if text.startswith("[") and text.endswith("]"):
        text = text[1:-1]
    try:
        addr = ipaddress.ip_address(text)
    except ValueError:
        return None
    if isinstance(addr, ipaddress.IPv6Address) and addr.ipv4_mapped is not None:
        return addr.ipv4_mapped
    return addr


def _trusted(addr: Address, trusted: tuple[Network, ...]) -> bool:
    return any(addr.version == net.version and addr in net for net in trusted)


def client_address(peer: str, headers: Mapping[str, str], trusted: tuple[Network, ...]) -> str:
    """The client's address: ``peer`` (the socket's) unless it is a trusted
    proxy; then the right-most address of ``X-Forwarded-For`` that is not a
    trusted proxy, else ``X-Real-IP``, else ``peer``. An unparsable hop stops
    the walk (nothing left of it can be believed): the hop right of it wins.
    """
    peer_addr = _address(peer)
    if peer_addr is None or not _trusted(peer_addr, trusted):
        return str(peer_addr) if peer_addr is not None else peer
    chain = headers.get("X-Forwarded-For")
    if chain is not None:
        last = peer_addr
        for hop in reversed(chain.split(",")):
            addr = _address(hop)
            if addr is None:
                return str(last)
            if not _trusted(addr, trusted):
                return str(addr)
            last = addr
        return str(last)  # every hop a trusted proxy: the left-most of them
    real = _address(headers.get("X-Real-IP", ""))
    return str(real) if real is not None else str(peer_addr)

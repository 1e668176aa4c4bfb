"""Which addresses the inspector may listen on without being asked: this machine's only."""

from __future__ import annotations

import ipaddress

__all__ = ["is_loopback"]


def is_loopback(host: str) -> bool:
    """Whether ``host`` (a name, an IPv4 or an IPv6 address, bracketed or not) is this machine.

    >>> [is_loopback(h) for h in ("localhost", "127.0.0.1", "[::1]", "0.0.0.0", "example.com")]
    [True, True, True, False, False]
    """
    if host.lower() == "localhost":
        return True
    try:
        return ipaddress.ip_address(host.strip("[]")).is_loopback
    except ValueError:
        return False

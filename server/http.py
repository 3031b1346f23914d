"""How the HTTP transports listen: loopback by default, DNS-rebinding protection always on."""

import ipaddress

from mcp.server.transport_security import TransportSecuritySettings

# Bodies beyond this are refused before they are read: the largest page (a million characters)
# fits, while a client cannot make the server buffer without bound.
MAX_REQUEST_BYTES = 8 * 1024 * 1024


def is_loopback(host: str) -> bool:
    if host == "localhost":
        return True
    try:
        return ipaddress.ip_address(host.strip("[]")).is_loopback
    except ValueError:
        return False


def transport_security(host: str, port: int, extra_hosts: list[str]) -> TransportSecuritySettings:
    """Accept only the Host and Origin headers of the names this server is reached by.

    The SDK turns protection on by itself only for loopback binds; memvm always sets it, so a
    wider bind never runs unprotected.
    """
    names = {host, *(["127.0.0.1", "localhost"] if is_loopback(host) else [])}
    allowed = sorted(
        {f"{name}:{port}" for name in names} | {h if ":" in h else f"{h}:{port}" for h in extra_hosts}
    )
    origins = sorted({f"{scheme}://{entry}" for entry in allowed for scheme in ("http", "https")})
    return TransportSecuritySettings(
        enable_dns_rebinding_protection=True, allowed_hosts=allowed, allowed_origins=origins
    )

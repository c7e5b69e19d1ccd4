"""Browser origins for publishable widget keys: normalise what an operator types, match what a browser sends.

An origin is `scheme://host[:port]` (RFC 6454): no path, query, fragment or credentials; the
default port (80 for http, 443 for https) is dropped, the host is lower-cased. No wildcards: a key
lists each site that may embed the widget.
"""

from __future__ import annotations

from urllib.parse import urlsplit

_DEFAULT_PORTS = {"http": 80, "https": 443}


def normalize_origin(value: str) -> str:
    """`https://Example.com:443/` -> `https://example.com`; ValueError with a readable reason otherwise."""
    text = (value or "").strip()
    try:
        parts = urlsplit(text)
        port = parts.port
    except ValueError:
        raise ValueError(f"{value!r} is not an origin like https://shop.example.com") from None
    if parts.scheme not in _DEFAULT_PORTS or not parts.hostname:
        raise ValueError(f"{value!r} is not an origin like https://shop.example.com (http or https, with a host)")
    if parts.path not in ("", "/") or parts.query or parts.fragment or parts.username or parts.password:
        raise ValueError(f"{value!r} has a path, query or credentials; an origin is only scheme://host[:port]")
    if "*" in parts.hostname:
        raise ValueError(f"{value!r}: wildcards are not accepted in an origin; list each site")
    host = parts.hostname.lower()
    if ":" in host:  # IPv6 literal
        host = f"[{host}]"
    if port is None or port == _DEFAULT_PORTS[parts.scheme]:
        return f"{parts.scheme}://{host}"
    return f"{parts.scheme}://{host}:{port}"


def origin_allowed(origin: str | None, listed: tuple[str, ...] | list[str]) -> bool:
    """Whether a browser's `Origin` header is one of the key's listed origins."""
    if not origin or origin == "null":
        return False
    try:
        return normalize_origin(origin) in listed
    except ValueError:
        return False


def frame_ancestors(listed: tuple[str, ...] | list[str]) -> str:
    """The CSP `frame-ancestors` source list: only the listed origins may frame the panel."""
    return " ".join(listed) if listed else "'none'"

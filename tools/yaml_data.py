"""YAML for the data files: libyaml's C parser where PyYAML was built with it (about 4× faster on the
catalog, the largest part of a cold start), the pure-Python safe loader otherwise. Same types either way."""

from __future__ import annotations

from typing import IO, Any

import yaml

_LOADER = getattr(yaml, "CSafeLoader", yaml.SafeLoader)


def load_yaml(stream: str | IO[str]) -> Any:
    """`yaml.safe_load`, with the C parser when available."""
    return yaml.load(stream, Loader=_LOADER)

"""Shared test settings: network is off (pytest-socket, loopback allowed), no telemetry."""

import os
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).parent))  # shared helpers: `import loopback`, `import pg`

os.environ.setdefault("ANONYMIZED_TELEMETRY", "False")
os.environ.setdefault("NO_COLOR", "1")
os.environ.setdefault("COLUMNS", "200")

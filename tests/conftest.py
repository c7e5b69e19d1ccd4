"""Shared test settings: network is off (pytest-socket, loopback allowed), no telemetry."""

import os
import sys
from pathlib import Path

# shared helpers (`import loopback`, `import pg`, `import slack_fake`) live in tests/support/, not in tests/ itself:
# putting tests/ on sys.path would let the folder tests/bot/ shadow the real `bot` package.
sys.path.insert(0, str(Path(__file__).parent / "support"))

os.environ.setdefault("ANONYMIZED_TELEMETRY", "False")
os.environ.setdefault("NO_COLOR", "1")
os.environ.setdefault("COLUMNS", "200")

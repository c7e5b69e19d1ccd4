"""Shared test settings: network is off (pytest-socket, loopback allowed), no telemetry."""

import os

os.environ.setdefault("ANONYMIZED_TELEMETRY", "False")
os.environ.setdefault("NO_COLOR", "1")
os.environ.setdefault("COLUMNS", "200")

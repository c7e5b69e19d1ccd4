"""The channels' fault suite, counted: what each member got when the store, Redis or WeCom's API failed
mid-answer (tests/bot/channels/test_faults.py and slack/test_api_outage.py, loopback fakes only).

    .venv/bin/python bench/faults.py

Runs the suite and prints one line per scenario: messages sent, answered, apologised, lost, duplicates,
and the slowest acknowledgement. A scenario whose service is absent (PostgreSQL on 127.0.0.1:5432,
`redis-server`) is reported as skipped with its reason.
"""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def main() -> int:
    cmd = [
        sys.executable,
        "-m",
        "pytest",
        "-q",
        "-s",
        "-rs",
        "-p",
        "no:cacheprovider",
        "tests/bot/channels/test_faults.py",
        "tests/bot/channels/slack/test_api_outage.py",
    ]
    out = subprocess.run(cmd, cwd=ROOT, capture_output=True, text=True)
    for line in out.stdout.splitlines():
        line = line.lstrip(".sF")
        if line.startswith(("fault ", "SKIPPED")) or " passed" in line or " failed" in line:
            print(line)
    return out.returncode


if __name__ == "__main__":
    sys.exit(main())

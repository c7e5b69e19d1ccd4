"""Safe indexing: `kb index FOLDER` never follows a link out of the folder and skips devices and pipes;
a binary, oversized or duplicate note is refused naming the file; and a bad file someone drops into a
remembered folder never stops the server from starting: it is skipped, logged and listed in /readyz."""

from __future__ import annotations

import os
from pathlib import Path

import httpx
import pytest
from typer.testing import CliRunner

from bot.answer.advisor import Advisor
from bot.cli import app as cli
from bot.core.settings import Settings
from knowledge.notes import MAX_NOTE_BYTES

SECRET = "GPU_ADVISOR_LLM_API_KEY=sk-live-4f1d9c0b7e2a"


@pytest.fixture
def folder(tmp_path: Path) -> Path:
    notes = tmp_path / "notes"
    notes.mkdir()
    (notes / "rent.md").write_text("# 租卡\n\nZephyrion 机房的 H20 月租要看合同。\n", encoding="utf-8")
    return notes


def _poison(notes: Path, tmp_path: Path) -> None:
    outside = tmp_path / "server-env.txt"  # stands for /proc/self/environ or /etc/passwd
    outside.write_text(SECRET, encoding="utf-8")
    (notes / "environ.txt").symlink_to(outside)
    (notes / "etc").symlink_to(tmp_path, target_is_directory=True)
    os.mkfifo(notes / "pipe.md")
    (notes / "blob.md").write_bytes(b"\x7fELF\x00\x00binary" * 10)
    (notes / "huge.md").write_text("x" * (MAX_NOTE_BYTES + 10), encoding="utf-8")
    (notes / "zz-copy.md").write_text("---\nid: rent\ntitle: again\n---\nsame id\n", encoding="utf-8")


def test_kb_index_refuses_a_binary_note_naming_the_file_and_never_follows_links_out(folder, tmp_path):
    runner = CliRunner()
    (folder / "blob.md").write_bytes(b"\x00\x01\x02binary")
    result = runner.invoke(cli, ["kb", "index", str(folder)])
    assert result.exit_code != 0 and "blob.md" in result.output and "binary" in result.output
    (folder / "blob.md").unlink()
    (tmp_path / "server-env.txt").write_text(SECRET, encoding="utf-8")
    (folder / "environ.txt").symlink_to(tmp_path / "server-env.txt")
    result = runner.invoke(cli, ["kb", "index", str(folder)])
    assert result.exit_code == 0, result.output
    assert "environ.txt" in result.output  # reported as not followed
    found = runner.invoke(cli, ["kb", "search", "sk-live GPU_ADVISOR_LLM_API_KEY"])
    assert "sk-live" not in found.output


def test_a_bad_file_in_a_remembered_folder_never_stops_the_server(folder, tmp_path, serve, caplog):
    assert CliRunner().invoke(cli, ["kb", "index", str(folder)]).exit_code == 0  # remembered
    _poison(folder, tmp_path)
    advisor = Advisor.from_settings(Settings())  # the server's start: the index refreshes the folder
    base = serve(use_advisor=advisor)
    ready = httpx.get(base + "/readyz", timeout=10).json()
    assert ready["status"] == "ready"
    skipped = "\n".join(ready["skipped_notes"])
    for name in ("environ.txt", "etc", "pipe.md", "blob.md", "huge.md", "copy.md"):
        assert name in skipped, name
    assert SECRET not in skipped
    answer = httpx.post(base + "/v1/ask", json={"text": "GPU_ADVISOR_LLM_API_KEY 是什么？"}, timeout=30).json()
    assert "sk-live" not in str(answer)
    hits = advisor.toolbox.call("search_knowledge", {"query": "sk-live GPU_ADVISOR_LLM_API_KEY", "k": 20})
    assert all("sk-live" not in p["text"] for p in hits["passages"])
    assert any(
        p["title"].startswith("用户资料")
        for p in advisor.toolbox.call("search_knowledge", {"query": "Zephyrion 机房", "k": 5})["passages"]
    )
    advisor.store.close()

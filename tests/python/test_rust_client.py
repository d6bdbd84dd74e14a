"""Our Rust client (what the terminal UI uses) against OpenEnv's own Python server."""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

HERE = Path(__file__).parent
REPO = HERE.parent.parent


def drive_binary() -> Path:
    target = Path(os.environ.get("CARGO_TARGET_DIR", REPO / "target"))
    binary = target / "debug" / "examples" / "drive"
    if not binary.exists():
        pytest.fail(f"{binary} is missing: run `cargo test --workspace` (it builds the examples) first")
    return binary


@pytest.fixture()
def reference_server():
    process = subprocess.Popen(
        [sys.executable, str(HERE / "reference_server.py")],
        stdout=subprocess.PIPE,
        text=True,
    )
    try:
        line = process.stdout.readline()
        match = re.search(r"(http://\S+)", line)
        assert match, f"no address from the reference server: {line!r}"
        yield match.group(1)
    finally:
        process.terminate()
        process.wait(timeout=10)


def test_rust_client_drives_the_python_reference_server(reference_server):
    run = subprocess.run(
        [str(drive_binary()), reference_server, "http://127.0.0.1:9/start"],
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert run.returncode == 0, run.stderr
    lines = {entry["label"]: entry for entry in map(json.loads, run.stdout.splitlines())}
    assert lines["reset"]["url"] == "http://127.0.0.1:9/start"
    assert lines["reset"]["screenshot_bytes"] > 100
    assert lines["click"]["url"] == "http://127.0.0.1:9/clicked-10-10"
    assert lines["back"]["url"] == "http://127.0.0.1:9/start"
    for label in ("type", "key", "scroll"):
        assert lines[label]["done"] is False and lines[label]["reward"] == 0
    assert lines["state"] == {"label": "state", "episode_id": "rust-1", "step_count": 5}
    assert lines["invalid"]["failure"] == "VALIDATION_ERROR"
    assert lines["finish"]["done"] is True
    assert lines["after_finish"]["failure"] == "EXECUTION_ERROR"
    assert "closed" in lines

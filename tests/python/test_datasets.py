"""Recorded trajectories load with Hugging Face `datasets`: the raw JSONL as JSON, and the
ImageFolder export of `browserenv-tui export --format hf`."""

from __future__ import annotations

import os
import re
import signal
import subprocess
from pathlib import Path

import pytest
from openenv.core import GenericEnvClient

os.environ.setdefault("HF_DATASETS_OFFLINE", "1")
import datasets  # noqa: E402  (in requirements.txt; a missing install must fail, not skip)

from conftest import REPO_ROOT, server_binary  # noqa: E402


def tui_binary() -> Path:
    target = Path(os.environ.get("CARGO_TARGET_DIR", REPO_ROOT / "target"))
    binary = target / "debug" / "browserenv-tui"
    if not binary.is_file():
        pytest.fail(f"{binary} is missing: run `cargo test --workspace` first")
    return binary


@pytest.fixture()
def recording(tmp_path, pages_url):
    """A recording made by the server itself (--record-dir) while a Python agent acts."""
    record_dir = tmp_path / "recording"
    process = subprocess.Popen(
        [str(server_binary()), "--port", "0", "--record-dir", str(record_dir)],
        stdout=subprocess.PIPE,
        stderr=subprocess.DEVNULL,
        text=True,
    )
    try:
        url = re.search(r"(http://\S+)", process.stdout.readline()).group(1)
        with GenericEnvClient(base_url=url).sync() as env:
            env.reset(start_url=f"{pages_url}/form.html", episode_id="py-agent-1")
            env.step({"op": "click", "x": 250, "y": 115})
            env.step({"op": "type", "text": "datasets"})
            env.step({"op": "key", "text": "ENTER"})
            env.step({"op": "finish", "text": "submitted"})
    finally:
        process.send_signal(signal.SIGTERM)
        process.wait(timeout=30)
    assert process.returncode == 0
    return record_dir


def test_raw_steps_load_as_json(recording):
    steps = datasets.load_dataset("json", data_files=str(recording / "steps.jsonl"), split="train")
    assert steps.num_rows == 4
    assert steps[0]["actor"] == "agent"
    assert steps[0]["action"]["op"] == "click"
    assert steps[2]["next_url"].endswith("result.html?q=datasets")
    assert steps[3]["done"] is True
    episodes = datasets.load_dataset("json", data_files=str(recording / "episodes.jsonl"), split="train")
    assert episodes[0]["outcome"] == "finished"
    assert episodes[0]["answer"] == "submitted"


def test_hf_export_loads_as_an_imagefolder(recording, tmp_path):
    out = tmp_path / "export"
    run = subprocess.run(
        [str(tui_binary()), "export", str(recording), "--format", "hf", "--out", str(out)],
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert run.returncode == 0, run.stderr
    assert "exported 4 rows" in run.stdout
    dataset = datasets.load_dataset("imagefolder", data_dir=str(out), split="train")
    assert dataset.num_rows == 4
    first = dataset[0]
    assert first["image"].size == (800, 600)
    assert first["op"] == "click" and first["x"] == 250 and first["y"] == 115
    assert dataset[1]["text"] == "datasets"
    assert dataset[3]["outcome"] == "finished"
    assert dataset[0]["next_image"].size == (800, 600), "the frame after the action"
    assert "next_image_file_name" not in dataset.column_names

"""Recorded trajectories load with real readers: the raw JSONL with Hugging Face `datasets` as
JSON; `browserenv-tui export` as an ImageFolder (`--format hf`) and as JSON rows (`--format
jsonl`) with `datasets`, and as ATIF v1.8 (`--format atif`) with the `atif` package's pydantic
models; a review (`review.jsonl`, written here by hand as docs/recordings.md describes it) carried into
each and used to keep only what passed."""

from __future__ import annotations

import json
import os
import re
import shutil
import signal
import subprocess
import urllib.request
from pathlib import Path

import pytest
from openenv.core import GenericEnvClient

os.environ.setdefault("HF_DATASETS_OFFLINE", "1")
import atif  # noqa: E402  (in requirements.txt; a missing install must fail, not skip)
import datasets  # noqa: E402

from conftest import _NO_PROXY_OPENER, REPO_ROOT, http_get, server_binary  # noqa: E402


def tui_binary() -> Path:
    target = Path(os.environ.get("CARGO_TARGET_DIR", REPO_ROOT / "target"))
    binary = target / "debug" / "browserenv-tui"
    if not binary.is_file():
        pytest.fail(f"{binary} is missing: run `cargo test --workspace` first")
    return binary


@pytest.fixture(scope="module")
def recorded(tmp_path_factory, pages_url):
    """A recording made by the server itself (--record-dir) while a Python agent acts: two
    episodes, 4 and 2 steps. Made once (it takes a browser); each test gets a copy."""
    record_dir = tmp_path_factory.mktemp("recorded") / "recording"
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
            env.reset(start_url=f"{pages_url}/form.html", episode_id="py-agent-2")
            env.step({"op": "scroll", "dy": 300})
            env.step({"op": "finish", "text": ""})
    finally:
        process.send_signal(signal.SIGTERM)
        process.wait(timeout=30)
    assert process.returncode == 0
    return record_dir


@pytest.fixture()
def recording(recorded, tmp_path):
    """A copy of the recording of its own, for a test to add a review to."""
    return Path(shutil.copytree(recorded, tmp_path / "recording"))


def test_raw_steps_load_as_json(recording):
    steps = datasets.load_dataset("json", data_files=str(recording / "steps.jsonl"), split="train")
    assert steps.num_rows == 6
    assert steps[0]["actor"] == "agent"
    assert steps[0]["action"]["op"] == "click"
    assert steps[2]["next_url"].endswith("result.html?q=datasets")
    assert steps[3]["done"] is True
    episodes = datasets.load_dataset("json", data_files=str(recording / "episodes.jsonl"), split="train")
    assert episodes[0]["outcome"] == "finished"
    assert episodes[0]["answer"] == "submitted"


def test_hf_export_loads_as_an_imagefolder(recording, tmp_path):
    out = tmp_path / "export"
    assert "exported 6 rows" in export(recording, out, "--format", "hf")
    dataset = datasets.load_dataset("imagefolder", data_dir=str(out), split="train")
    assert dataset.num_rows == 6
    first = dataset[0]
    assert first["image"].size == (800, 600)
    assert first["op"] == "click" and first["x"] == 250 and first["y"] == 115
    assert dataset[1]["text"] == "datasets"
    assert dataset[3]["outcome"] == "finished"
    assert dataset[0]["next_image"].size == (800, 600), "the frame after the action"
    assert "next_image_file_name" not in dataset.column_names


def review(recording, *events):
    """Append review events to the recording's review.jsonl, as docs/recordings.md describes them."""
    with open(recording / "review.jsonl", "a") as file:
        for episode_id, step, field, value in events:
            line = {
                "schema": "browserenv.review.v1",
                "time": "2026-12-01T10:00:00.000Z",
                "reviewer": "pytest",
                "episode_id": episode_id,
                "field": field,
                "value": value,
            }
            if step is not None:
                line["step"] = step
            file.write(json.dumps(line) + "\n")


@pytest.fixture()
def reviewed(recording):
    """The first episode passed review (its ENTER marked redundant, a note edited, the outcome
    overridden); the second did not."""
    review(
        recording,
        ("py-agent-1", 1, "mark", "wrong"),
        ("py-agent-1", 1, "mark", "good"),  # the later event wins
        ("py-agent-1", 3, "mark", "redundant"),
        ("py-agent-1", 4, "note", "checked by hand"),
        ("py-agent-1", None, "quality", "good"),
        ("py-agent-1", None, "outcome", "failed"),
        ("py-agent-2", None, "quality", "bad"),
    )
    return recording


def export(recording, out, *flags):
    run = subprocess.run(
        [str(tui_binary()), "export", str(recording), "--out", str(out), *flags],
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert run.returncode == 0, run.stderr
    assert "warning" not in run.stderr, run.stderr
    return run.stdout


def test_hf_export_keeps_only_what_passed_review(reviewed, tmp_path):
    out = tmp_path / "hf"
    stdout = export(
        reviewed, out, "--format", "hf", "--reviewed-only", "--drop-marked", "redundant"
    )
    assert "exported 3 rows" in stdout
    assert "1 episode(s) not reviewed good, 1 marked step(s)" in stdout
    dataset = datasets.load_dataset("imagefolder", data_dir=str(out), split="train")
    assert dataset.num_rows == 3
    assert set(dataset["episode_id"]) == {"py-agent-1"}
    assert dataset["step"] == [1, 2, 4]
    assert dataset["review_mark"] == ["good", "", ""]
    assert dataset["quality"] == ["good"] * 3
    assert dataset["outcome"] == ["failed"] * 3
    assert dataset["recorded_outcome"] == ["finished"] * 3
    assert dataset["note"] == ["", "", "checked by hand"]
    assert dataset["reviewer"] == ["pytest"] * 3
    assert dataset[0]["image"].size == (800, 600)


def test_jsonl_export_loads_as_json_with_image_paths(reviewed, tmp_path):
    out = tmp_path / "jsonl"
    stdout = export(reviewed, out, "--format", "jsonl")
    assert "exported 6 rows" in stdout
    rows = datasets.load_dataset("json", data_files=str(out / "data.jsonl"), split="train")
    assert rows.num_rows == 6
    assert rows["review_mark"] == ["good", "", "redundant", "", "", ""]
    assert rows["quality"] == ["good"] * 4 + ["bad"] * 2
    assert rows[4]["op"] == "scroll" and rows[4]["dy"] == 300
    for row in rows:
        for column in ("image", "next_image"):
            assert row[column].startswith("images/"), row
            assert (out / row[column]).is_file(), row


def test_atif_export_validates_with_the_atif_models(reviewed, tmp_path):
    out = tmp_path / "atif"
    stdout = export(reviewed, out, "--format", "atif")
    assert "exported 2 trajectories (6 steps)" in stdout
    files = sorted(out.glob("*.json"))
    assert [f.name for f in files] == ["0001-py-agent-1.json", "0002-py-agent-2.json"]
    trajectories = [atif.Trajectory.model_validate(json.loads(f.read_text())) for f in files]
    first, second = trajectories
    assert first.schema_version == "ATIF-v1.8"
    assert first.session_id == "py-agent-1"
    assert [len(t.steps) for t in trajectories] == [4, 2]
    assert first.has_multimodal_content()
    assert first.extra["quality"] == "good" and first.extra["outcome"] == "failed"
    assert first.extra["answer"] == "submitted"
    assert second.extra["quality"] == "bad"
    click = first.steps[0]
    assert click.source == "agent"
    assert click.tool_calls[0].function_name == "click"
    assert click.tool_calls[0].arguments == {"x": 250, "y": 115}
    assert click.extra["review_mark"] == "good"
    assert first.steps[1].tool_calls[0].arguments == {"text": "datasets"}
    assert first.steps[3].extra["note"] == "checked by hand"
    images = 0
    for trajectory, file in zip(trajectories, files):
        for step in trajectory.steps:
            parts = list(step.message) + list(step.observation.results[0].content)
            for part in parts:
                if part.type == "image":
                    assert isinstance(part.source, atif.ImageSource)
                    assert part.source.media_type == "image/png"
                    assert not Path(part.source.path).is_absolute()
                    assert (file.parent / part.source.path).is_file(), part.source.path
                    images += 1
    assert images == 12, "the frame before and after of each of the 6 steps"

    kept = tmp_path / "atif-reviewed"
    export(reviewed, kept, "--format", "atif", "--reviewed-only", "--drop-marked", "redundant")
    files = sorted(kept.glob("*.json"))
    assert [f.name for f in files] == ["0001-py-agent-1.json"]
    trajectory = atif.Trajectory.model_validate(json.loads(files[0].read_text()))
    assert [s.step_id for s in trajectory.steps] == [1, 2, 3]
    assert [s.extra["step"] for s in trajectory.steps] == [1, 2, 4]
    assert trajectory.final_metrics.total_steps == 4
    assert "left out" in trajectory.notes


def _post(url: str, body: dict, token: str) -> object:
    headers = {"content-type": "application/json", "authorization": f"Bearer {token}"}
    request = urllib.request.Request(url, data=json.dumps(body).encode(), headers=headers)
    with _NO_PROXY_OPENER.open(request, timeout=30) as response:
        return json.loads(response.read())


def test_a_campaign_exports_its_accepted_demonstrations(tmp_path):
    """A campaign (`--campaign DIR`): a Python person demonstrates two tasks through the unmodified
    OpenEnv client, a second person accepts one and rejects the other, each with the token
    `browserenv-server campaign add-person` made them; `export DIR` keeps the accepted one only,
    with who demonstrated and who reviewed it as columns, and `datasets` loads it."""
    campaign = tmp_path / "campaign"
    campaign.mkdir()
    demo = (REPO_ROOT / "assets" / "tasks" / "demo.jsonl").read_text().splitlines()
    tasks = [json.loads(line) for line in demo if line.strip()][:2]
    (campaign / "tasks.jsonl").write_text("".join(json.dumps(t) + "\n" for t in tasks))
    (campaign / "campaign.json").write_text(json.dumps({"tasks": "tasks.jsonl", "demos_wanted": 1}))
    ana, bo = (
        subprocess.run(
            [str(server_binary()), "campaign", "add-person", str(campaign), name],
            check=True, capture_output=True, text=True,
        ).stdout.strip()
        for name in ("ana", "bo")
    )
    process = subprocess.Popen(
        [str(server_binary()), "--port", "0", "--site", str(REPO_ROOT / "assets" / "site"),
         "--campaign", str(campaign)],
        stdout=subprocess.PIPE,
        stderr=subprocess.DEVNULL,
        text=True,
    )
    try:
        url = re.search(r"(http://\S+)", process.stdout.readline()).group(1)
        headers = {"Authorization": f"Bearer {ana}"}
        with GenericEnvClient(base_url=url, headers=headers).sync() as env:
            for _ in tasks:
                leased = _post(f"{url}/campaign/lease", {}, ana)
                assert "check" not in leased["task"], leased
                env.reset(campaign_lease=leased["lease"]["id"])
                env.step({"op": "finish", "text": "an answer"})
                saved = _post(f"{url}/campaign/complete",
                              {"lease": leased["lease"]["id"], "mark": "pass"}, ana)
                assert (saved["person"], saved["recorded"]) == ("ana", True)
        verdicts = {}
        for accepted in (True, False):
            item = _post(f"{url}/campaign/review/next", {}, bo)
            episode = item["demonstration"]["episode_id"]
            event = {"schema": "browserenv.review.v1", "time": "2026-12-03T00:00:00.000Z",
                     "episode_id": episode, "field": "quality",
                     "value": "good" if accepted else "bad"}
            _post(f"{url}/campaign/review",
                  {"episode_id": episode, "accepted": accepted, "events": [event]}, bo)
            verdicts[episode] = accepted
        with http_get(f"{url}/campaign") as response:
            progress = json.loads(response.read())
        assert (progress["done"], progress["reviewed"], progress["accepted"]) == (1, 2, 1)
    finally:
        process.send_signal(signal.SIGTERM)
        process.wait(timeout=30)
    assert process.returncode == 0
    out = tmp_path / "export"
    printed = export(campaign, out, "--format", "hf")
    assert "1 of 2 demonstrations accepted" in printed
    assert "left out by the review: 1 episode(s) not accepted demonstrations" in printed
    dataset = datasets.load_dataset("imagefolder", data_dir=str(out), split="train")
    assert dataset.num_rows == 1
    row = dataset[0]
    assert (row["person"], row["reviewer"], row["quality"]) == ("ana", "bo", "good")
    assert verdicts[row["episode_id"]] is True
    assert row["image"].size == (800, 600)

"""OpenEnv's Task API on our server (server/src/routes/task_api.rs; docs/wire.md §3), seen by OpenEnv itself.

- OpenEnv's own client for these routes, `openenv.harbor.client.HarborEnv`, lists the splits and
  reads the demo task set (assets/tasks/demo.jsonl) through them. Its paths are fixed to the
  environment `harbor_env`: pointed at `browserenv` (with the token) by a request hook, it works;
  unmodified, it is told `unknown environment 'harbor_env'` (404).
- OpenEnv's own server (`create_app`, in process) around a task provider holding the tasks our
  server hands out answers the same requests (every route, every refusal) with the same status
  and body: our error bodies only add `code` (and `reason`).
- A task's `reset` arguments start its episode through OpenEnv's `GenericEnvClient`.
- `openenv validate --url` still passes on a server with tasks.
"""

from __future__ import annotations

import contextlib
import json
import os
import subprocess
import sys
from pathlib import Path

import httpx
import pytest
from fastapi.testclient import TestClient
from openenv.core import GenericEnvClient
from openenv.core.env_server.http_server import create_app
from openenv.harbor.client import HarborEnv
from openenv.harbor.models import HarborTaskRef

from browser_models import BrowserAction, BrowserObservation
from conftest import REPO_ROOT, launch_server
from reference_server import FakeBrowser

TOKEN = "task-api-s3cret"
ENV = "browserenv"
DEMO = REPO_ROOT / "assets" / "tasks" / "demo.jsonl"
SERVER_ARGS = ["--tasks", str(DEMO), "--site", "assets/site", "--no-warm-spare"]


def demo_tasks() -> list[dict]:
    return [json.loads(line) for line in DEMO.read_text().splitlines() if line.strip() and not line.startswith("//")]


DEMO_IDS = [task["id"] for task in demo_tasks()]


def test_the_demo_set_is_what_the_readme_says():
    assert len(DEMO_IDS) == 20
    assert DEMO_IDS[:2] == ["info-drill-price", "info-founded"]


@pytest.fixture(scope="module")
def guarded_url(tmp_path_factory):
    """A server with the demo tasks and a token."""
    with launch_server([*SERVER_ARGS, "--token", TOKEN], tmp_path_factory.mktemp("task-api"), name="tasks") as url:
        yield url


@pytest.fixture(scope="module")
def open_url(tmp_path_factory):
    """The same without a token (`openenv validate` sends none)."""
    with launch_server(SERVER_ARGS, tmp_path_factory.mktemp("task-api-open"), name="tasks-open") as url:
        yield url


@contextlib.contextmanager
def loopback_without_proxy():
    """httpx reads the proxy settings when a client is made: none for the loopback servers."""
    saved = {name: os.environ.get(name) for name in ("NO_PROXY", "no_proxy")}
    for name, value in saved.items():
        os.environ[name] = ",".join(filter(None, [value, "127.0.0.1", "localhost"]))
    try:
        yield
    finally:
        for name, value in saved.items():
            if value is None:
                os.environ.pop(name, None)
            else:
                os.environ[name] = value


def harbor_env(base_url: str, *, env_name: str | None = ENV, token: str | None = TOKEN) -> HarborEnv:
    """OpenEnv's Task API client. It asks for `/harbor_env/...`; a hook sends that to `env_name`
    (None: leave it) with the token."""
    with loopback_without_proxy():
        env = HarborEnv(base_url=base_url)

    def route(request: httpx.Request) -> None:
        if env_name is not None:
            path = request.url.path.replace("/harbor_env/", f"/{env_name}/", 1)
            request.url = request.url.copy_with(path=path)
        if token is not None:
            request.headers["Authorization"] = f"Bearer {token}"

    env._http.event_hooks["request"].append(route)
    return env


@pytest.fixture()
def http(guarded_url):
    """A plain HTTP client of the guarded server, with the token."""
    headers = {"Authorization": f"Bearer {TOKEN}"}
    with httpx.Client(base_url=guarded_url, headers=headers, timeout=10, trust_env=False) as client:
        yield client


@pytest.fixture()
def harbor(guarded_url):
    env = harbor_env(guarded_url)
    try:
        yield env
    finally:
        env.close()


def test_openenvs_client_lists_the_split_and_counts_its_tasks(harbor):
    assert harbor.splits() == [{"name": "demo", "type": "validation", "num_tasks": len(DEMO_IDS)}]
    assert harbor.num_tasks("demo") == len(DEMO_IDS)
    # Its default split, "", is the first one.
    assert harbor.num_tasks() == len(DEMO_IDS)


def test_openenvs_client_reads_every_task_by_index_and_by_range(harbor):
    by_index = [harbor.get_task("demo", i) for i in range(len(DEMO_IDS))]
    assert all(isinstance(ref, HarborTaskRef) for ref in by_index)
    assert [ref.task_id for ref in by_index] == DEMO_IDS
    assert [ref.index for ref in by_index] == list(range(len(DEMO_IDS)))
    assert {ref.dataset for ref in by_index} == {"demo"}
    assert [ref.instruction for ref in by_index] == [task["instruction"] for task in demo_tasks()]
    # Its default window is 0..20 (cut at the end of a shorter split).
    assert [ref.task_id for ref in harbor.get_task_range("demo")] == DEMO_IDS
    assert [ref.task_id for ref in harbor.get_task_range("demo", 3, 5)] == DEMO_IDS[3:5]
    assert harbor.get_task_range("demo", len(DEMO_IDS), 40) == []


def test_openenvs_client_gets_the_refusals(harbor, guarded_url):
    for index in (len(DEMO_IDS), -1):
        with pytest.raises(httpx.HTTPStatusError) as refused:
            harbor.get_task("demo", index)
        assert refused.value.response.status_code == 400
        assert refused.value.response.json()["detail"] == "Invalid task index"
    for start, stop in ((-1, 5), (5, 2), (len(DEMO_IDS) + 1, len(DEMO_IDS) + 3)):
        with pytest.raises(httpx.HTTPStatusError) as refused:
            harbor.get_task_range("demo", start, stop)
        assert refused.value.response.status_code == 400, (start, stop)
    with pytest.raises(httpx.HTTPStatusError) as refused:
        harbor.num_tasks("train")
    assert refused.value.response.status_code == 404
    # Unmodified, it asks for its own environment, which this server is not.
    unmodified = harbor_env(guarded_url, env_name=None)
    try:
        with pytest.raises(httpx.HTTPStatusError) as refused:
            unmodified.splits()
        assert refused.value.response.status_code == 404
        assert refused.value.response.json()["detail"] == "unknown environment 'harbor_env'"
    finally:
        unmodified.close()
    # Without the token, nothing.
    anonymous = harbor_env(guarded_url, token=None)
    try:
        for call in (anonymous.splits, lambda: anonymous.num_tasks("demo"), lambda: anonymous.get_task("demo", 0)):
            with pytest.raises(httpx.HTTPStatusError) as refused:
                call()
            assert refused.value.response.status_code == 401
            assert refused.value.response.json()["code"] == "UNAUTHORIZED"
    finally:
        anonymous.close()


# --- the same requests to OpenEnv's own server ----------------------------------------------------


def reference_app(tasks: list[dict]):
    """OpenEnv's server around a task provider with `tasks` as the split `demo`, deciding what
    OpenEnv leaves to the environment as our server does."""

    class Provider(FakeBrowser):
        def list_splits(self):
            return [{"name": "demo", "type": "validation", "num_tasks": len(tasks)}]

        def list_tasks(self, split):
            return tasks

        def num_tasks(self, split):
            return len(tasks)

        def get_task(self, split, index):
            if not 0 <= index < len(tasks):
                raise IndexError(index)
            return tasks[index]

        def get_task_range(self, split, start=None, stop=None):
            start = 0 if start is None else start
            stop = len(tasks) if stop is None else stop
            if start < 0 or stop < 0 or start > len(tasks) or stop < start:
                raise IndexError((start, stop))
            return tasks[start:stop]

    return create_app(Provider, BrowserAction, BrowserObservation, env_name=ENV, max_concurrent_envs=2)


def body(**fields):
    return {"json": fields}


ONE_TASK = {"split": "demo", "index": 0}
SAME_REQUESTS = [
    ("GET", "/list_environments", {}),
    ("GET", f"/{ENV}/splits", {}),
    ("GET", "/BrowserEnv/splits", {}),
    ("GET", "/nope/splits", {}),
    ("GET", "/o'k/splits", {}),
    ("POST", f"/{ENV}/tasks", body(split="demo")),
    ("POST", f"/{ENV}/tasks", body(split="")),
    ("POST", f"/{ENV}/num_tasks", body(split="demo")),
    ("POST", f"/{ENV}/num_tasks", body(split="")),
    ("POST", f"/{ENV}/task", body(split="demo", index=0)),
    ("POST", f"/{ENV}/task", body(split="demo", index=16)),
    ("POST", f"/{ENV}/task", body(split="demo", index="3")),
    ("POST", f"/{ENV}/task", body(split="demo", index=2.0)),
    ("POST", f"/{ENV}/task", body(split="demo", index=True)),
    ("POST", f"/{ENV}/task", body(split="demo", index=len(DEMO_IDS))),
    ("POST", f"/{ENV}/task", body(split="demo", index=-1)),
    ("POST", f"/{ENV}/task", body(split="demo", index=2**40)),
    ("POST", f"/{ENV}/task_range", body(split="demo")),
    ("POST", f"/{ENV}/task_range", body(split="demo", start=3, stop=5)),
    ("POST", f"/{ENV}/task_range", body(split="demo", start=None, stop=20)),
    ("POST", f"/{ENV}/task_range", body(split="demo", start=len(DEMO_IDS))),
    ("POST", f"/{ENV}/task_range", body(split="demo", start=-1)),
    ("POST", f"/{ENV}/task_range", body(split="demo", stop=-1)),
    ("POST", f"/{ENV}/task_range", body(split="demo", start=5, stop=2)),
    ("POST", f"/{ENV}/task_range", body(split="demo", start=18, stop=30)),
    *[("POST", f"/nope/{route}", body(split="demo", index=0) if route == "task" else body(split="demo"))
      for route in ("tasks", "num_tasks", "task", "task_range")],
    # Bodies that do not validate: FastAPI's 422, before the environment's name is looked at.
    ("POST", f"/{ENV}/num_tasks", {}),
    ("POST", f"/{ENV}/num_tasks", {"content": b"", "headers": {"content-type": "application/json"}}),
    ("POST", f"/{ENV}/num_tasks", body()),
    ("POST", f"/{ENV}/tasks", {"json": []}),
    ("POST", f"/{ENV}/tasks", {"json": "demo"}),
    ("POST", f"/{ENV}/tasks", {"content": b"null", "headers": {"content-type": "application/json"}}),
    ("POST", f"/{ENV}/tasks", body(split=3)),
    ("POST", f"/{ENV}/num_tasks", body(split="demo", extra=1)),
    ("POST", "/nope/task", body(index="x")),
    ("POST", f"/{ENV}/task", body(split="demo")),
    ("POST", f"/{ENV}/task", body(split="demo", index=None)),
    ("POST", f"/{ENV}/task", body(split="demo", index=1.5)),
    ("POST", f"/{ENV}/task_range", body(split="demo", start="a", stop=1.5)),
]


def test_openenvs_own_server_answers_the_same(http):
    tasks = http.post(f"/{ENV}/tasks", json={"split": "demo"}).raise_for_status().json()["tasks"]
    assert [task["task_id"] for task in tasks] == DEMO_IDS
    with TestClient(reference_app(tasks)) as reference:
        for method, path, request in SAME_REQUESTS:
            theirs = reference.request(method, path, **request)
            ours = http.request(method, path, **request)
            what = (
                f"{method} {path} {request}: ours {ours.status_code} {ours.text[:300]}, "
                f"OpenEnv's {theirs.status_code} {theirs.text[:300]}"
            )
            assert ours.status_code == theirs.status_code, what
            expected, got = theirs.json(), ours.json()
            if ours.status_code in (400, 404):
                # Our error bodies add this server's code, and why.
                assert got.pop("code") in {"INVALID_TASK_INDEX", "ENVIRONMENT_NOT_FOUND"}, what
                got.pop("reason", None)
            assert got == expected, what


# --- what a trainer does with a task ---------------------------------------------------------------


def test_a_tasks_reset_arguments_start_its_episode(http, guarded_url):
    index = DEMO_IDS.index("nav-store-map")
    task = http.post(f"/{ENV}/task", json={"split": "demo", "index": index}).raise_for_status().json()["task"]
    assert task["reset"] == {"task_id": "nav-store-map"}
    assert task["start_url"].startswith("http://127.0.0.1:") and task["start_url"].endswith("/index.html")
    headers = {"Authorization": f"Bearer {TOKEN}"}
    with GenericEnvClient(base_url=guarded_url, headers=headers).sync() as env:
        result = env.reset(**task["reset"])
        assert result.observation["error"] == ""
        assert result.observation["url"] == task["start_url"]
        shown = result.observation["metadata"]["task"]
        assert (shown["id"], shown["instruction"], shown["max_steps"]) == (
            task["task_id"],
            task["instruction"],
            task["max_steps"],
        )


def openenv_cli() -> str:
    candidate = Path(sys.executable).parent / "openenv"
    if not candidate.is_file():
        pytest.fail("the `openenv` CLI is not installed next to this Python")
    return str(candidate)


def test_openenv_validate_passes_with_tasks(open_url):
    with httpx.Client(base_url=open_url, trust_env=False) as client:
        assert client.get(f"/{ENV}/splits").json()[0]["num_tasks"] == len(DEMO_IDS)
    env = dict(os.environ)
    for name in ("NO_PROXY", "no_proxy"):
        env[name] = ",".join(filter(None, [env.get(name), "127.0.0.1", "localhost"]))
    proc = subprocess.run(
        [openenv_cli(), "validate", "--url", open_url, "--json"],
        capture_output=True,
        text=True,
        timeout=180,
        env=env,
    )
    output = proc.stdout + proc.stderr
    assert proc.returncode == 0, output
    report = json.loads(proc.stdout[proc.stdout.index("{") :])
    assert report["passed"] is True, output

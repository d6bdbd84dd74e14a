"""The Python package in python/ (distribution and module ``browserenv``).

- It builds and installs without Rust: a pure-Python wheel from ``./python``, and from git with
  ``#subdirectory=python``.
- Its models keep the seed's rules, and their key names and limits are the ones a running server
  publishes (``GET /schema``, the MCP tools' argument schemas): the one check that no hand-copied
  list drifts (tests/python/browser_models.py re-exports these models).
- ``BrowserClient``: sync and async, with the token, ``state()``, ``read_page()`` over the session's
  own socket; and the seed's own example code, run unchanged but for its import lines.
"""

from __future__ import annotations

import asyncio
import base64
import json
import os
import re
import shutil
import socket
import subprocess
import sys
import textwrap
import urllib.error
import urllib.request
import zipfile
from pathlib import Path

import pytest
from pydantic import ValidationError

import browser_models
import browserenv
from browserenv import (
    MAX_ASK_WAIT_S,
    MAX_SCROLL,
    MAX_TEXT_CHARS,
    OPS,
    SCREEN_HEIGHT,
    SCREEN_WIDTH,
    SUPPORTED_KEYS,
    BrowserAction,
    BrowserClient,
    BrowserObservation,
    BrowserState,
    PageText,
)
from conftest import LISTENING_RE, REPO_ROOT, launch_server, png_size, server_binary

PACKAGE_DIR = REPO_ROOT / "python"
TOKEN = "package-s3cret"
SITE_ARGS = ["--site", "assets/site", "--tasks", "assets/tasks/demo.jsonl"]
_NO_PROXY = urllib.request.build_opener(urllib.request.ProxyHandler({}))


def get_json(url: str, token: str | None = None):
    request = urllib.request.Request(url, headers={"Authorization": f"Bearer {token}"} if token else {})
    with _NO_PROXY.open(request, timeout=10) as response:
        return json.load(response)


def post_json(url: str, body: dict, token: str | None = None):
    headers = {"Content-Type": "application/json"}
    if token:
        headers["Authorization"] = f"Bearer {token}"
    request = urllib.request.Request(url, data=json.dumps(body).encode(), headers=headers)
    with _NO_PROXY.open(request, timeout=10) as response:
        return json.load(response)


@pytest.fixture(scope="module")
def server(tmp_path_factory):
    """The demo site and its tasks, behind a token."""
    with launch_server([*SITE_ARGS, "--max-sessions", "3", "--token", TOKEN], tmp_path_factory.mktemp("package")) as url:
        yield url


def site_url(server: str) -> str:
    """The demo site's address, from a task's start URL (the Task API resolves it)."""
    task = post_json(f"{server}/browserenv/task", {"split": "demo", "index": 0}, TOKEN)["task"]
    return task["start_url"].rsplit("/", 1)[0] + "/"


# --------------------------------------------------------------------------- building and installing


def copy_package(to: Path) -> Path:
    """python/ as a clean checkout has it (building writes build/ and *.egg-info into the source)."""
    shutil.copytree(PACKAGE_DIR, to, ignore=shutil.ignore_patterns("*.egg-info", "__pycache__", "build"))
    return to


def test_a_pure_python_wheel_builds_from_python_without_rust(tmp_path):
    # No build isolation: the venv's setuptools, no network; and no cargo on PATH.
    env = {**os.environ, "PATH": os.path.dirname(sys.executable) + os.pathsep + "/usr/bin:/bin"}
    source = copy_package(tmp_path / "python")
    run = subprocess.run(
        [sys.executable, "-m", "pip", "wheel", "--no-deps", "--no-build-isolation", "-w", str(tmp_path), str(source)],
        capture_output=True,
        text=True,
        timeout=300,
        env=env,
    )
    assert run.returncode == 0, run.stdout + run.stderr
    wheels = list(tmp_path.glob("browserenv-*.whl"))
    assert len(wheels) == 1 and wheels[0].name.endswith("-py3-none-any.whl"), wheels
    names = zipfile.ZipFile(wheels[0]).namelist()
    modules = sorted(n for n in names if n.startswith("browserenv/"))
    assert modules == [
        "browserenv/__init__.py",
        "browserenv/browsergym.py",
        "browserenv/client.py",
        "browserenv/computer_use/__init__.py",
        "browserenv/computer_use/anthropic.py",
        "browserenv/computer_use/gemini.py",
        "browserenv/computer_use/keys.py",
        "browserenv/computer_use/openai.py",
        "browserenv/computer_use/session.py",
        "browserenv/hf_sandbox.py",
        "browserenv/models.py",
        "browserenv/trl.py",
    ], modules
    metadata = zipfile.ZipFile(wheels[0]).read(next(n for n in names if n.endswith("/METADATA"))).decode()
    assert "Requires-Dist: openenv<0.11,>=0.10.0" in metadata, metadata


def test_pip_installs_it_from_git_with_subdirectory(tmp_path):
    """`pip install "git+URL#subdirectory=python"`: a repository whose python/ is this one's (the
    working tree's, committed in a scratch repository)."""
    if shutil.which("git") is None:
        pytest.fail("git is needed to install from a git URL")
    repo = tmp_path / "repo"
    copy_package(repo / "python")
    git = ["git", "-c", "user.name=t", "-c", "user.email=t@example.com", "-c", "init.defaultBranch=main"]
    for args in (["init", "-q"], ["add", "-A"], ["commit", "-q", "-m", "python package"]):
        subprocess.run([*git, *args], cwd=repo, check=True, capture_output=True)
    target = tmp_path / "site"
    run = subprocess.run(
        [
            sys.executable, "-m", "pip", "install", "--no-deps", "--no-build-isolation", "--target", str(target),
            f"git+file://{repo}#subdirectory=python",
        ],
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert run.returncode == 0, run.stdout + run.stderr
    probe = subprocess.run(
        [sys.executable, "-c", "import browserenv, sys; print(browserenv.__file__, browserenv.BrowserClient.__name__)"],
        capture_output=True,
        text=True,
        env={**os.environ, "PYTHONPATH": str(target)},
        cwd=tmp_path,
        timeout=60,
    )
    assert probe.returncode == 0, probe.stderr
    assert probe.stdout.startswith(str(target / "browserenv")) and "BrowserClient" in probe.stdout, probe.stdout


def test_the_tests_models_are_the_package():
    assert browser_models.BrowserAction is BrowserAction
    assert browser_models.BrowserObservation is BrowserObservation
    assert browser_models.BrowserState is BrowserState
    assert browser_models.SUPPORTED_KEYS is SUPPORTED_KEYS


# --------------------------------------------------------------------------- the seed's rules


@pytest.mark.parametrize(
    "fields",
    [
        {"op": "click", "x": 0, "y": 0},
        {"op": "click", "x": SCREEN_WIDTH - 1, "y": SCREEN_HEIGHT - 1},
        {"op": "type", "text": "x" * MAX_TEXT_CHARS},
        {"op": "scroll", "dy": -MAX_SCROLL},
        {"op": "scroll", "dy": MAX_SCROLL},
        *({"op": "key", "text": key} for key in SUPPORTED_KEYS),
        {"op": "back"},
        {"op": "wait"},
        {"op": "finish"},
        {"op": "finish", "text": "1968"},
    ],
)
def test_valid_actions(fields):
    assert BrowserAction(**fields).op == fields["op"]


@pytest.mark.parametrize(
    "fields, words",
    [
        ({"op": "click", "x": SCREEN_WIDTH, "y": 0}, "less than 800"),
        ({"op": "click", "x": 0, "y": SCREEN_HEIGHT}, "less than 600"),
        ({"op": "click", "x": -1, "y": 0}, "greater than or equal to 0"),
        ({"op": "click", "x": 5}, "click needs both x and y"),
        ({"op": "type"}, "type needs non-empty text"),
        ({"op": "type", "text": "x" * (MAX_TEXT_CHARS + 1)}, "at most 2000 characters"),
        ({"op": "scroll", "dy": MAX_SCROLL + 1}, "less than or equal to 1200"),
        ({"op": "scroll", "dy": -MAX_SCROLL - 1}, "greater than or equal to -1200"),
        ({"op": "key", "text": "F5"}, "key must be one of ENTER, TAB, ESCAPE"),
        ({"op": "hover"}, "Input should be 'click'"),
        ({"op": "wait", "extra": 1}, "Extra inputs are not permitted"),
    ],
)
def test_invalid_actions(fields, words):
    with pytest.raises(ValidationError) as refused:
        BrowserAction(**fields)
    assert words in str(refused.value)


def test_model_dump_is_what_the_seed_sends():
    assert BrowserAction(op="scroll", dy=500).model_dump() == {
        "metadata": {},
        "op": "scroll",
        "x": None,
        "y": None,
        "text": "",
        "dy": 500,
    }


# --------------------------------------------------------------------------- against the server's own word


def _strip(schema):
    """A schema without its words (titles, descriptions): the constraints alone."""
    if isinstance(schema, dict):
        return {k: _strip(v) for k, v in schema.items() if k not in ("title", "description")}
    if isinstance(schema, list):
        return [_strip(v) for v in schema]
    return schema


def test_the_models_match_the_schema_the_server_publishes(server):
    published = get_json(f"{server}/schema", TOKEN)
    for name, model in (("action", BrowserAction), ("observation", BrowserObservation), ("state", BrowserState)):
        ours = _strip(model.model_json_schema())
        theirs = _strip(published[name])
        # Pydantic writes no default for a default_factory ({}); the server writes it out.
        theirs["properties"]["metadata"].pop("default", None) if "metadata" in theirs.get("properties", {}) else None
        assert ours == theirs, f"{name}:\nours   {json.dumps(ours, sort_keys=True)}\ntheirs {json.dumps(theirs, sort_keys=True)}"

    action = published["action"]["properties"]
    assert tuple(action["op"]["enum"]) == OPS
    assert action["x"]["anyOf"][0]["exclusiveMaximum"] == SCREEN_WIDTH
    assert action["y"]["anyOf"][0]["exclusiveMaximum"] == SCREEN_HEIGHT
    assert action["text"]["maxLength"] == MAX_TEXT_CHARS
    assert (action["dy"]["minimum"], action["dy"]["maximum"]) == (-MAX_SCROLL, MAX_SCROLL)
    # The key names are in the text field's description (pydantic cannot say the after-rule).
    listed = re.search(r"one of ([A-Z+, ]+)\)", action["text"]["description"])
    assert listed, action["text"]["description"]
    assert tuple(k.strip() for k in listed.group(1).split(",")) == SUPPORTED_KEYS


def test_the_limits_match_the_servers_tools(server):
    listed = post_json(f"{server}/mcp", {"jsonrpc": "2.0", "id": 1, "method": "tools/list", "params": {}}, TOKEN)
    tools = {tool["name"]: tool.get("inputSchema") or tool.get("input_schema") for tool in listed["result"]["tools"]}
    assert set(OPS) <= set(tools), sorted(tools)
    assert tuple(tools["key"]["properties"]["key"]["enum"]) == SUPPORTED_KEYS
    click = tools["click"]["properties"]
    assert (click["x"]["minimum"], click["x"]["exclusiveMaximum"]) == (0, SCREEN_WIDTH)
    assert (click["y"]["minimum"], click["y"]["exclusiveMaximum"]) == (0, SCREEN_HEIGHT)
    assert tools["type"]["properties"]["text"]["maxLength"] == MAX_TEXT_CHARS
    assert tools["finish"]["properties"]["answer"]["maxLength"] == MAX_TEXT_CHARS
    dy = tools["scroll"]["properties"]["dy"]
    assert (dy["minimum"], dy["maximum"]) == (-MAX_SCROLL, MAX_SCROLL)
    # How long BrowserClient.request_human is ready to wait for the answer when not told.
    assert tools["request_human"]["properties"]["wait_seconds"]["maximum"] == MAX_ASK_WAIT_S


# --------------------------------------------------------------------------- the typed client


def test_sync_client_with_token_resets_steps_reads_and_states(server):
    site = site_url(server)
    with BrowserClient(base_url=server, token=TOKEN).sync() as browser:
        result = browser.reset(start_url=f"{site}hours.html", episode_id="pkg-sync")
        assert isinstance(result.observation, BrowserObservation)
        assert result.observation.url == f"{site}hours.html" and result.observation.error == ""
        assert png_size(result.observation.screenshot) == (SCREEN_WIDTH, SCREEN_HEIGHT)
        page = browser.read_page()
        assert isinstance(page, PageText)
        assert "Opening hours" in page.text and page.step == 0 and page.episode_id == "pkg-sync"
        assert page.url == f"{site}hours.html"
        result = browser.step(BrowserAction(op="scroll", dy=300))
        assert result.observation.error == "" and result.done is False and result.reward == 0.0
        assert browser.read_page(max_chars=100).truncated is True
        state = browser.state()
        assert isinstance(state, BrowserState)
        assert (state.episode_id, state.step_count) == ("pkg-sync", 1)
        result = browser.step({"op": "finish"})  # a dict is validated into a BrowserAction
        assert result.done is True and result.observation.done is True


def test_async_client_finishes_a_task(server):
    async def run():
        async with BrowserClient(base_url=server, token=TOKEN) as browser:
            first = await browser.reset(task_id="info-workshop-time")
            assert first.observation.metadata["task"]["id"] == "info-workshop-time"
            page = await browser.read_page()
            assert "Free workshop this Saturday" in page.text
            last = await browser.step(BrowserAction(op="finish", text="10:00"))
            state = await browser.state()
            return last, state

    last, state = asyncio.run(asyncio.wait_for(run(), 120))
    assert last.done is True and last.reward == 1.0
    assert last.observation.metadata["verdict"] == {"passed": True, "failed": []}
    assert state.step_count == 1


def test_read_page_before_a_reset_says_so(server):
    with BrowserClient(base_url=server, token=TOKEN).sync() as browser:
        with pytest.raises(RuntimeError, match="reset first"):
            browser.read_page()


def test_without_the_token_the_server_refuses(server):
    with pytest.raises(Exception) as refused:
        with BrowserClient(base_url=server).sync() as browser:
            browser.state()
    assert "401" in str(refused.value) or "401" in repr(refused.value.__cause__)


# --------------------------------------------------------------------------- from_docker_image's bootstrap


class LocalServerProvider:
    """A stand-in for OpenEnv's LocalDockerProvider that runs the server binary instead of the
    image (tests/python/test_image_provider.py runs the real one on the image): the same calls,
    start_container(image, env_vars=...), wait_for_ready(url, timeout_s), stop_container()."""

    def __init__(self, fail_ready: bool = False):
        self.fail_ready = fail_ready
        self.process = None
        self.started_with = None
        self.stopped = 0

    def start_container(self, image, port=None, env_vars=None, **kwargs):
        self.started_with = {"image": image, "env_vars": dict(env_vars or {}), **kwargs}
        self.process = subprocess.Popen(
            [str(server_binary()), "--host", "127.0.0.1", "--port", "0", "--max-sessions", "1"],
            env={**os.environ, **(env_vars or {})},
            stdout=subprocess.PIPE,
            stderr=subprocess.DEVNULL,
            text=True,
            cwd=REPO_ROOT,
        )
        return LISTENING_RE.match(self.process.stdout.readline().strip()).group(1)

    def wait_for_ready(self, base_url, timeout_s=30.0):
        if self.fail_ready:
            raise TimeoutError(f"{base_url} did not become ready within {timeout_s}s")
        get_json(f"{base_url}/health")

    def stop_container(self):
        self.stopped += 1
        if self.process is not None and self.process.poll() is None:
            self.process.terminate()
            self.process.wait(timeout=30)


DEMO_ENV = {"BROWSER_SITE_DIR": "assets/site", "BROWSER_TASKS": "assets/tasks/demo.jsonl"}


def test_from_docker_image_hands_the_container_a_token_and_uses_it():
    provider = LocalServerProvider()
    client = BrowserClient.from_docker_image(provider=provider, env_vars=DEMO_ENV).sync()
    try:
        token = provider.started_with["env_vars"]["BROWSER_API_TOKEN"]
        assert provider.started_with["image"] == browserenv.DEFAULT_IMAGE == "browserenv:latest"
        assert len(token) >= 24 and provider.started_with["env_vars"] == {**DEMO_ENV, "BROWSER_API_TOKEN": token}
        result = client.reset(task_id="info-workshop-time")
        assert result.observation.url.endswith("/index.html")
        assert client.step(BrowserAction(op="finish", text="10:00")).reward == 1.0
        with pytest.raises(urllib.error.HTTPError) as refused:
            get_json(f"{client.base_url}/metadata")
        assert refused.value.code == 401, "the server really wants the token"
    finally:
        client.close()
    assert provider.stopped == 1 and provider.process.poll() is not None


def test_from_docker_image_awaited_with_a_given_token():
    provider = LocalServerProvider()

    async def run():
        client = await BrowserClient.from_docker_image("some:image", provider, token="given-token", env_vars=DEMO_ENV)
        try:
            first = await client.reset(task_id="info-founded")
            return first, await client.state()
        finally:
            await client.close()

    first, state = asyncio.run(asyncio.wait_for(run(), 120))
    assert provider.started_with["image"] == "some:image"
    assert provider.started_with["env_vars"]["BROWSER_API_TOKEN"] == "given-token"
    assert first.observation.metadata["task"]["id"] == "info-founded" and state.step_count == 0
    assert provider.stopped == 1


def test_from_docker_image_stops_what_did_not_become_ready():
    provider = LocalServerProvider(fail_ready=True)
    with pytest.raises(TimeoutError):
        BrowserClient.from_docker_image(provider=provider, ready_timeout_s=5).sync()
    assert provider.stopped == 1 and provider.process.poll() is not None


@pytest.fixture
def failing_docker(tmp_path, monkeypatch):
    """A stand-in ``docker`` first on PATH: ``version`` answers, ``run`` notes its arguments and
    the token in its environment, then fails as a real one might (exit 125)."""
    bin_dir, noted = tmp_path / "bin", tmp_path / "noted"
    bin_dir.mkdir()
    docker = bin_dir / "docker"
    docker.write_text(
        "#!/bin/sh\n"
        'if [ "$1" = version ]; then exit 0; fi\n'
        f'printf "%s\\n" "$@" > "{noted}/argv"\n'
        f'printf "%s" "${{BROWSER_API_TOKEN:-}}" > "{noted}/token"\n'
        'echo "docker: Error response from daemon: no such image." >&2\n'
        "exit 125\n"
    )
    docker.chmod(0o755)
    noted.mkdir()
    monkeypatch.setenv("PATH", f"{bin_dir}{os.pathsep}{os.environ['PATH']}")
    return noted


def chain(error: BaseException) -> str:
    """Everything a traceback or a log could show of an error and what it is chained to."""
    shown = []
    while error is not None:
        shown.append(f"{error!s} {error!r}")
        error = error.__cause__ or error.__context__
    return "\n".join(shown)


def test_from_docker_image_keeps_the_token_out_of_docker_s_arguments_and_its_errors(failing_docker):
    token = "tok-" + "s3cret" * 6
    with pytest.raises(RuntimeError) as failed:
        BrowserClient.from_docker_image("browserenv:latest", token=token, env_vars={"HF_TOKEN": "hf-s3cret-value"}).sync()
    assert "Failed to start Docker container" in str(failed.value) and "no such image" in str(failed.value)
    for secret in (token, "hf-s3cret-value"):
        assert secret not in chain(failed.value)
    argv = (failing_docker / "argv").read_text().splitlines()
    assert token not in " ".join(argv) and "hf-s3cret-value" not in " ".join(argv)
    # By name, the value in docker's own environment (which hands it to the container).
    assert ["-e", "BROWSER_API_TOKEN"] == argv[argv.index("BROWSER_API_TOKEN") - 1 : argv.index("BROWSER_API_TOKEN") + 1]
    assert (failing_docker / "token").read_text() == token
    published = argv[argv.index("-p") + 1]
    assert published.startswith("127.0.0.1:") and published.endswith(":8000"), published


def test_another_provider_s_error_is_raised_without_the_token(failing_docker):
    """OpenEnv's own provider puts the token on docker's command line and quotes the command when
    it fails: the error reaches the caller with ``***`` in its place, chained to nothing."""
    from openenv.core.containers.runtime import LocalDockerProvider

    token = "tok-" + "s3cret" * 6
    with pytest.raises(RuntimeError) as failed:
        BrowserClient.from_docker_image("browserenv:latest", LocalDockerProvider(), token=token).sync()
    assert "BROWSER_API_TOKEN=***" in str(failed.value)
    assert token not in chain(failed.value)
    assert failed.value.__cause__ is None and failed.value.__context__ is None


# --------------------------------------------------------------------------- the seed's own example

# The seed's "The OpenEnv loop" example, word for word but for its two import lines
# (`from helium_browser_env.client import BrowserClient`,
#  `from helium_browser_env.models import BrowserAction`).
SEED_EXAMPLE = textwrap.dedent(
    """\
    from browserenv.client import BrowserClient
    from browserenv.models import BrowserAction

    with BrowserClient(base_url="http://localhost:8000").sync() as browser:
        result = browser.reset(start_url="https://example.com")
        observation = result.observation

        result = browser.step(BrowserAction(op="scroll", dy=500))
        observation = result.observation

        print(observation.url)
        print(observation.error)
        print(result.done, result.reward)
        print(observation.screenshot)  # Base64-encoded PNG
    """
)


def test_the_seeds_example_runs_unchanged_but_for_its_imports(tmp_path):
    """It connects to http://localhost:8000, so the server gets port 8000. example.com needs the
    internet: without it the page is the browser's error page and `error` says why, and the
    example still runs to its end."""
    with socket.socket() as probe:
        try:
            probe.bind(("127.0.0.1", 8000))
        except OSError:
            pytest.fail("port 8000 is taken: the seed's example connects to http://localhost:8000")
    script = tmp_path / "seed_example.py"
    script.write_text(SEED_EXAMPLE)
    with launch_server(["--max-sessions", "1"], tmp_path, port=8000):
        run = subprocess.run(
            [sys.executable, str(script)], capture_output=True, text=True, timeout=120, cwd=tmp_path
        )
    assert run.returncode == 0, run.stderr
    url, error, done_reward, screenshot = run.stdout.splitlines()
    assert url.startswith("https://example.com") or url.startswith("chrome-error://"), url
    assert error in ("", "navigation_failed"), error
    assert done_reward == "False 0.0"
    assert png_size(screenshot) == (SCREEN_WIDTH, SCREEN_HEIGHT)
    base64.b64decode(screenshot, validate=True)


def test_package_exports():
    for name in browserenv.__all__:
        assert hasattr(browserenv, name), name

"""``python -m browserenv.hf_sandbox``, the counterpart of the seed's HF Sandbox runner, as far as a
machine without the Hugging Face hub allows: its arguments, a clear error (no traceback) when the
hub or its Sandboxes cannot be had, and its run against a stand-in for OpenEnv's
``HFSandboxProvider`` that hands out a real local server (what the provider's proxy gives).
"""

from __future__ import annotations

import io
import os
import subprocess
import sys

import pytest

from browserenv import hf_sandbox
from conftest import launch_server

IMAGE = "hf.co/spaces/someone/browserenv"


def run_module(*args: str, env: dict, tmp_path) -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, "-m", "browserenv.hf_sandbox", *args],
        capture_output=True,
        text=True,
        timeout=120,
        env=env,
        cwd=tmp_path,
    )


def offline_env(tmp_path, **extra: str) -> dict:
    """No token anywhere (HOME is empty: no stored login) and the hub offline."""
    env = {k: v for k, v in os.environ.items() if not k.startswith(("HF_", "HUGGING_FACE", "BROWSER"))}
    env.update(HOME=str(tmp_path), HF_HUB_OFFLINE="1", **extra)
    return env


def test_arguments_and_the_image_variable():
    args = hf_sandbox.parse_args([], environ={hf_sandbox.IMAGE_VARIABLE: IMAGE})
    assert (args.image, args.flavor, args.start_url, args.task_id, args.demo_tasks) == (
        IMAGE,
        "cpu-basic",
        "https://example.com",
        None,
        False,
    )
    assert (args.scroll, args.timeout) == (500, 300.0)
    args = hf_sandbox.parse_args(["--image", "hf.co/spaces/x/y", "--task-id", "info-founded"], environ={})
    assert args.image == "hf.co/spaces/x/y" and args.task_id == "info-founded" and args.start_url is None
    assert args.demo_tasks is True, "a task needs the image's task set"


@pytest.mark.parametrize(
    "argv, words",
    [
        ([], "no image: set BROWSERENV_HF_IMAGE=hf.co/spaces/<namespace>/<space> or pass --image"),
        (["--image", IMAGE, "--scroll", "1201"], "--scroll must be within -1200..1200"),
        (["--image", IMAGE, "--timeout", "0"], "--timeout must be positive"),
        (["--image", IMAGE, "--task-id", "t", "--start-url", "https://example.com"], "not allowed with argument"),
    ],
)
def test_bad_arguments_exit_2_with_the_reason(argv, words, capsys):
    with pytest.raises(SystemExit) as exited:
        hf_sandbox.parse_args(argv, environ={})
    assert exited.value.code == 2
    assert words in capsys.readouterr().err


def test_settings_are_passed_on_to_the_sandbox():
    args = hf_sandbox.parse_args(["--task-id", "info-founded"], environ={hf_sandbox.IMAGE_VARIABLE: IMAGE})
    environ = {"BROWSER_MAX_STEPS": "30", "BROWSER_ACTION_WAIT_SECONDS": "1", "BROWSER_API_TOKEN": "x", "PATH": "/bin"}
    assert hf_sandbox.sandbox_env(args, environ) == {
        "BROWSER_MAX_STEPS": "30",
        "BROWSER_ACTION_WAIT_SECONDS": "1",
        "BROWSER_SITE_DIR": "/opt/browserenv/site",
        "BROWSER_TASKS": "/opt/browserenv/tasks/demo.jsonl",
    }, "never the token: the sandbox's proxy authenticates, and does not pass the header on"


def test_without_an_image_the_module_says_what_to_set(tmp_path):
    run = run_module(env=offline_env(tmp_path), tmp_path=tmp_path)
    assert run.returncode == 2
    assert "no image: set BROWSERENV_HF_IMAGE=" in run.stderr


def test_without_a_login_the_error_is_clear(tmp_path):
    run = run_module(env=offline_env(tmp_path, BROWSERENV_HF_IMAGE=IMAGE), tmp_path=tmp_path)
    assert run.returncode == 1, run.stderr
    assert run.stderr.startswith(f"error: could not start the HF Sandbox for {IMAGE}: "), run.stderr
    assert "Traceback" not in run.stderr
    assert "hf auth login" in run.stderr and "HF_TOKEN" in run.stderr
    assert run.stdout == ""


def test_with_a_token_but_no_hub_the_error_is_clear(tmp_path):
    run = run_module(env=offline_env(tmp_path, BROWSERENV_HF_IMAGE=IMAGE, HF_TOKEN="hf_not_a_token"), tmp_path=tmp_path)
    assert run.returncode == 1, run.stderr
    assert run.stderr.startswith(f"error: could not start the HF Sandbox for {IMAGE}: "), run.stderr
    assert "Traceback" not in run.stderr


class StandInProvider:
    """What the runner needs of HFSandboxProvider: made with image, flavor and env_vars, a context
    manager, start_container() giving the (proxy's) URL, wait_for_ready(url, timeout_s)."""

    made: list = []

    def __init__(self, url: str, **kwargs):
        self.url, self.kwargs = url, kwargs
        self.calls: list = []
        StandInProvider.made.append(self)

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.calls.append("exit")

    def start_container(self):
        self.calls.append("start")
        return self.url

    def wait_for_ready(self, base_url, timeout_s):
        self.calls.append(("ready", base_url, timeout_s))


def test_the_run_resets_scrolls_and_prints_the_url(tmp_path, monkeypatch):
    monkeypatch.setenv("BROWSER_MAX_STEPS", "12")
    with launch_server(["--site", "assets/site", "--tasks", "assets/tasks/demo.jsonl", "--max-sessions", "1"], tmp_path) as url:
        args = hf_sandbox.parse_args(["--task-id", "info-staff-count", "--scroll", "300"], environ={hf_sandbox.IMAGE_VARIABLE: IMAGE})
        out = io.StringIO()
        code = hf_sandbox.run(args, provider_factory=lambda **kw: StandInProvider(url, **kw), out=out)
    assert code == 0
    provider = StandInProvider.made[-1]
    assert provider.kwargs == {
        "image": IMAGE,
        "flavor": "cpu-basic",
        "env_vars": {"BROWSER_MAX_STEPS": "12", **hf_sandbox.DEMO_SETTINGS},
    }
    assert provider.calls == ["start", ("ready", url, 300.0), "exit"]
    assert out.getvalue().splitlines()[0].endswith("/index.html"), out.getvalue()


def test_a_server_that_never_answers_is_a_clear_error(tmp_path, capsys):
    class Unready(StandInProvider):
        def wait_for_ready(self, base_url, timeout_s):
            raise TimeoutError(f"HF sandbox job at {base_url} did not become ready within {timeout_s}s")

    args = hf_sandbox.parse_args(["--timeout", "5"], environ={hf_sandbox.IMAGE_VARIABLE: IMAGE})
    code = hf_sandbox.run(args, provider_factory=lambda **kw: Unready("http://127.0.0.1:9", **kw))
    assert code == 1
    err = capsys.readouterr().err
    assert err.startswith(f"error: could not reach the server in the HF Sandbox for {IMAGE}: TimeoutError"), err
    assert StandInProvider.made[-1].calls[-1] == "exit", "the sandbox is stopped"

"""The seed, stood in for: the original Python environment as its description says it is built
("Helium Browser Environment", kept outside this repository), for the benchmark's reference beside our
throughput (tests/src/bench/seed.rs, docs/benchmark.md).

The seed's own code is not in this repository, only its description; this is written from it,
part by part: OpenEnv's ``create_app`` serving one environment at a time
(``max_concurrent_envs=1``: Helium keeps one global Selenium driver); ``reset`` starts Chromium
through Helium and Selenium (chromedriver) with a fresh temporary profile, on a private Xvfb
display in an 800x600 window, waits until the page reports an 800x600 viewport, opens the start
URL, sleeps ``BROWSER_ACTION_WAIT_SECONDS`` and returns a screenshot; ``step`` clicks with xdotool
at the viewport's pixel, types and presses keys and scrolls with Helium, goes back with Selenium,
then sleeps ``BROWSER_ACTION_WAIT_SECONDS`` (``wait`` sleeps ``BROWSER_EXPLICIT_WAIT_SECONDS``)
and returns Selenium's screenshot (``Page.captureScreenshot`` underneath) with the URL.
Downloads and password storage are off; the step limit is ``BROWSER_MAX_STEPS``.

What it leaves out of the seed: the bot-verification check and the error codes' details (the
benchmark steps a static page), and the HF Sandbox runner.

Usage (each server its own display; prints the address line the Rust server prints):
  xvfb-run -a -s "-screen 0 1024x768x24" python tests/python/seed_standin.py --port 0
"""

from __future__ import annotations

import argparse
import base64
import os
import shutil
import socket
import subprocess
import sys
import tempfile
import time
import uuid
from typing import Literal
from urllib.parse import urlsplit

import helium
import uvicorn
from openenv.core.env_server.http_server import create_app
from openenv.core.env_server.interfaces import Environment
from openenv.core.env_server.types import Action, Observation, State
from pydantic import Field
from selenium.webdriver import Chrome, ChromeOptions
from selenium.webdriver.chrome.service import Service
from selenium.webdriver.common.keys import Keys

ACTION_WAIT = float(os.environ.get("BROWSER_ACTION_WAIT_SECONDS", "1.5"))
EXPLICIT_WAIT = float(os.environ.get("BROWSER_EXPLICIT_WAIT_SECONDS", "3"))
MAX_STEPS = int(os.environ.get("BROWSER_MAX_STEPS", "20"))
CHROMIUM = os.environ.get("SEED_CHROMIUM", "/usr/bin/chromium")
KEYS = {
    "ENTER": Keys.ENTER, "TAB": Keys.TAB, "ESCAPE": Keys.ESCAPE, "BACKSPACE": Keys.BACKSPACE,
    "CTRL+A": Keys.CONTROL + "a", "UP": Keys.UP, "DOWN": Keys.DOWN, "LEFT": Keys.LEFT,
    "RIGHT": Keys.RIGHT,
}


class BrowserAction(Action):
    op: Literal["click", "type", "key", "scroll", "back", "wait", "finish"]
    x: int | None = Field(default=None, ge=0, lt=800)
    y: int | None = Field(default=None, ge=0, lt=600)
    text: str = Field(default="", max_length=2000)
    dy: int = Field(default=0, ge=-1200, le=1200)


class BrowserObservation(Observation):
    screenshot: str
    url: str
    error: str = ""


class BrowserState(State):
    pass


class BrowserEnvironment(Environment):
    """One browser at a time: Helium keeps its Selenium driver in a global."""

    def __init__(self) -> None:
        super().__init__()
        self._state = BrowserState()
        self.profile: str | None = None
        self.origin = (0, 0)

    def _close(self) -> None:
        try:
            helium.kill_browser()
        except Exception:  # no browser yet
            pass
        if self.profile:
            shutil.rmtree(self.profile, ignore_errors=True)
            self.profile = None

    def _observe(self, done: bool = False, error: str = "") -> BrowserObservation:
        driver = helium.get_driver()
        return BrowserObservation(
            screenshot=driver.get_screenshot_as_base64(),
            url=driver.current_url,
            error=error,
            done=done,
            reward=0.0,
        )

    def reset(self, start_url: str = "", episode_id: str | None = None, seed: int | None = None, **_):
        parts = urlsplit(start_url)
        if parts.scheme not in ("http", "https") or not parts.hostname or parts.username or parts.password:
            raise ValueError("start_url must be an http(s) URL without credentials")
        self._close()
        self.profile = tempfile.mkdtemp(prefix="seed-profile-")
        options = ChromeOptions()
        options.binary_location = CHROMIUM
        for flag in ("--no-sandbox", "--disable-dev-shm-usage", f"--user-data-dir={self.profile}",
                     "--window-size=800,600", "--window-position=0,0", "--disable-gpu",
                     "--no-first-run", "--password-store=basic"):
            options.add_argument(flag)
        options.add_experimental_option("prefs", {
            "credentials_enable_service": False,
            "profile.password_manager_enabled": False,
            "download_restrictions": 3,
        })
        # chromedriver of the same Chromium, named (Selenium Manager would look on the network).
        service = Service(os.environ.get("SEED_CHROMEDRIVER", "/usr/bin/chromedriver"))
        helium.set_driver(Chrome(service=service, options=options))
        driver = helium.get_driver()
        # The window's outer size is 800x600; the seed wants the viewport at 800x600.
        for _ in range(40):
            inner = driver.execute_script("return [innerWidth, innerHeight, devicePixelRatio]")
            if inner == [800, 600, 1]:
                break
            outer = driver.get_window_size()
            driver.set_window_size(outer["width"] + 800 - inner[0], outer["height"] + 600 - inner[1])
            time.sleep(0.05)
        # Where the viewport's top left pixel is on the display, for xdotool.
        self.origin = tuple(driver.execute_script(
            "return [window.screenX + (outerWidth - innerWidth),"
            " window.screenY + (outerHeight - innerHeight)]"))
        helium.go_to(start_url)
        time.sleep(ACTION_WAIT)
        self._state = BrowserState(episode_id=episode_id or str(uuid.uuid4()), step_count=0)
        return self._observe()

    def step(self, action: BrowserAction, timeout_s=None, **_):
        self._state.step_count += 1
        error = ""
        try:
            if action.op == "click":
                x, y = self.origin[0] + action.x, self.origin[1] + action.y
                subprocess.run(["xdotool", "mousemove", str(x), str(y), "click", "1"], check=True)
            elif action.op == "type":
                helium.write(action.text)
            elif action.op == "key":
                helium.press(KEYS[action.text])
            elif action.op == "scroll":
                if action.dy >= 0:
                    helium.scroll_down(action.dy)
                else:
                    helium.scroll_up(-action.dy)
            elif action.op == "back":
                helium.get_driver().back()
        except Exception as failure:  # the seed reports an action error by its class name
            error = type(failure).__name__
        if action.op == "wait":
            time.sleep(EXPLICIT_WAIT)
        elif action.op != "finish":
            time.sleep(ACTION_WAIT)
        done = action.op == "finish" or self._state.step_count >= MAX_STEPS
        return self._observe(done=done, error=error)

    @property
    def state(self) -> BrowserState:
        return self._state

    def close(self) -> None:
        self._close()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--port", type=int, default=0)
    args = parser.parse_args()
    app = create_app(
        BrowserEnvironment, BrowserAction, BrowserObservation,
        env_name="helium_browser_env", max_concurrent_envs=1,
    )
    listener = socket.socket()
    listener.bind(("127.0.0.1", args.port))
    listener.listen(16)
    port = listener.getsockname()[1]
    print(f"browserenv-server listening on http://127.0.0.1:{port}", flush=True)
    config = uvicorn.Config(app, log_level="warning")
    uvicorn.Server(config).run(sockets=[listener])


if __name__ == "__main__":
    sys.exit(main())

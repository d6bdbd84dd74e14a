"""OpenEnv's own Python server (``create_app``) around a tiny fake browser.

Used to check that our Rust client (and so the terminal UI) speaks the wire contract as the Python
server does. The fake browser only tracks a URL and a step count and paints a solid PNG; it is a
protocol peer, not a browser. Prints ``browserenv-server listening on http://127.0.0.1:PORT``
like the Rust server, then serves until terminated.
"""

from __future__ import annotations

import argparse
import base64
import socket
import struct
import sys
import uuid
import zlib
from pathlib import Path
from urllib.parse import urljoin, urlsplit

sys.path.insert(0, str(Path(__file__).parent))

import uvicorn  # noqa: E402  (installed with openenv)
from openenv.core.env_server.http_server import create_app  # noqa: E402
from openenv.core.env_server.interfaces import Environment  # noqa: E402

from browser_models import BrowserAction, BrowserObservation, BrowserState  # noqa: E402


def solid_png(shade: int) -> str:
    """An 800x600 PNG of one grey level, base64."""
    width, height = 800, 600
    raw = (b"\x00" + bytes([shade % 256] * 3) * width) * height

    def chunk(kind: bytes, data: bytes) -> bytes:
        crc = zlib.crc32(kind + data) & 0xFFFFFFFF
        return struct.pack(">I", len(data)) + kind + data + struct.pack(">I", crc)

    header = struct.pack(">IIBBBBB", width, height, 8, 2, 0, 0, 0)
    png = b"\x89PNG\r\n\x1a\n" + chunk(b"IHDR", header) + chunk(b"IDAT", zlib.compress(raw)) + chunk(b"IEND", b"")
    return base64.b64encode(png).decode()


class FakeBrowser(Environment):
    SUPPORTS_CONCURRENT_SESSIONS = True
    MAX_STEPS = 20

    def __init__(self) -> None:
        super().__init__()
        self._state = BrowserState()
        self.url = ""
        self.history: list[str] = []
        self.live = False

    def reset(self, start_url: str = "", episode_id: str | None = None, seed: int | None = None, **_):
        parts = urlsplit(start_url)
        if parts.scheme not in ("http", "https") or not parts.hostname or parts.username or parts.password:
            raise ValueError("expected an HTTP(S) URL without credentials")
        self._state = BrowserState(episode_id=episode_id or str(uuid.uuid4()), step_count=0)
        self.url, self.history, self.live = start_url, [], True
        return BrowserObservation(screenshot=solid_png(0), url=self.url, reward=0)

    def step(self, action: BrowserAction, timeout_s=None, **_):
        if not self.live:
            raise RuntimeError("reset before stepping")
        self._state.step_count += 1
        if action.op == "click":
            self.history.append(self.url)
            self.url = urljoin(self.url, f"clicked-{action.x}-{action.y}")
        elif action.op == "back" and self.history:
            self.url = self.history.pop()
        done = action.op == "finish" or self._state.step_count >= self.MAX_STEPS
        self.live = not done
        return BrowserObservation(
            screenshot=solid_png(self._state.step_count * 20), url=self.url, done=done, reward=0
        )

    @property
    def state(self) -> BrowserState:
        return self._state


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--port", type=int, default=0)
    args = parser.parse_args()
    app = create_app(
        FakeBrowser,
        BrowserAction,
        BrowserObservation,
        env_name="reference",
        max_concurrent_envs=2,
    )
    listener = socket.socket()
    listener.bind(("127.0.0.1", args.port))
    listener.listen(16)
    print(f"browserenv-server listening on http://127.0.0.1:{listener.getsockname()[1]}", flush=True)
    uvicorn.Server(uvicorn.Config(app, log_level="warning")).run(sockets=[listener])


if __name__ == "__main__":
    main()

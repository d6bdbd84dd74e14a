"""Fixtures for the Python interop tests.

- ``pages_url``: the static test pages (assets/pages) served by Python's
  http.server on 127.0.0.1 (a listener of its own, never the API's).
- ``server_url``: the Rust ``browserenv-server`` started as a subprocess on a
  free port; its base URL is read from the one line it prints on stdout.

Environment:
- ``BROWSERENV_SERVER_BIN``: the server binary (default:
  ``$CARGO_TARGET_DIR`` or ``<repo>/target``, then ``debug/browserenv-server``).
- ``BROWSERENV_SERVER_ARGS``: extra command-line arguments for the server.
"""

from __future__ import annotations

import base64
import contextlib
import functools
import http.server
import os
import queue
import re
import shlex
import signal
import socket
import struct
import subprocess
import sys
import threading
import time
import urllib.request
from pathlib import Path

import pytest

HERE = Path(__file__).resolve().parent
REPO_ROOT = HERE.parent.parent
PAGES_DIR = REPO_ROOT / "assets" / "pages"

LISTENING_RE = re.compile(r"^browserenv-server listening on (http://127\.0\.0\.1:(\d+))$")
STARTUP_TIMEOUT_S = 60.0
SHUTDOWN_TIMEOUT_S = 15.0

# The tests import browser_models / browser_client as top-level modules.
if str(HERE) not in sys.path:
    sys.path.insert(0, str(HERE))


def server_binary() -> Path:
    explicit = os.environ.get("BROWSERENV_SERVER_BIN")
    if explicit:
        return Path(explicit)
    target = Path(os.environ.get("CARGO_TARGET_DIR", REPO_ROOT / "target"))
    if not target.is_absolute():
        target = REPO_ROOT / target
    return target / "debug" / "browserenv-server"


class _QuietHandler(http.server.SimpleHTTPRequestHandler):
    def log_message(self, format, *args):  # noqa: A002 - the base class's name
        pass

    def end_headers(self):
        # The pages are test fixtures: never let the browser cache them.
        self.send_header("Cache-Control", "no-store")
        super().end_headers()


@pytest.fixture(scope="session")
def pages_url():
    """Base URL (with a trailing slash) of the static test pages."""
    assert PAGES_DIR.is_dir(), f"missing {PAGES_DIR}"
    handler = functools.partial(_QuietHandler, directory=str(PAGES_DIR))
    httpd = http.server.ThreadingHTTPServer(("127.0.0.1", 0), handler)
    httpd.daemon_threads = True
    thread = threading.Thread(target=httpd.serve_forever, name="pages-http", daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{httpd.server_address[1]}/"
    finally:
        httpd.shutdown()
        httpd.server_close()
        thread.join(timeout=5)


# Talk to local listeners directly, whatever proxy the environment configures.
_NO_PROXY_OPENER = urllib.request.build_opener(urllib.request.ProxyHandler({}))


def http_get(url: str, timeout: float = 5.0):
    """GET without proxies; returns the response (a context manager)."""
    return _NO_PROXY_OPENER.open(url, timeout=timeout)


def png_size(screenshot_b64: str) -> tuple[int, int]:
    """Width and height from the IHDR chunk of a base64 PNG."""
    data = base64.b64decode(screenshot_b64, validate=True)
    assert data[:8] == b"\x89PNG\r\n\x1a\n", "not a PNG signature"
    length, chunk_type = struct.unpack(">I4s", data[8:16])
    assert chunk_type == b"IHDR" and length == 13, "first chunk is not IHDR"
    width, height = struct.unpack(">II", data[16:24])
    return width, height


# The lines of deploy/haproxy/haproxy.cfg between these (one pair per backend) are its servers.
SERVERS_BEGIN = "# servers begin"
SERVERS_END = "# servers end"


def with_servers(text: str, servers: list[str]) -> str:
    """The config with the lines between each pair of markers (one pair per backend) replaced by
    `servers`."""
    lines = text.splitlines(keepends=True)
    begin = [i for i, line in enumerate(lines) if line.strip() == SERVERS_BEGIN]
    end = [i for i, line in enumerate(lines) if line.strip() == SERVERS_END]
    assert begin and len(begin) == len(end), (begin, end)
    assert all(b < e for b, e in zip(begin, end)) and all(e < b for e, b in zip(end, begin[1:])), (begin, end)
    out, at = [], 0
    for b, e in zip(begin, end):
        indent = re.match(r"\s*", lines[b]).group(0)
        out += lines[at : b + 1] + [f"{indent}{server}\n" for server in servers]
        at = e
    return "".join(out + lines[at:])


def free_port() -> int:
    """A loopback port nothing listens on now (for servers that must know each other's ports)."""
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


def _tail(path: Path, lines: int = 60) -> str:
    try:
        return "\n".join(path.read_text(errors="replace").splitlines()[-lines:])
    except OSError:
        return "<no log>"


def _stop(proc: subprocess.Popen) -> int:
    if proc.poll() is None:
        proc.send_signal(signal.SIGTERM)
        try:
            proc.wait(timeout=SHUTDOWN_TIMEOUT_S)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait(timeout=SHUTDOWN_TIMEOUT_S)
    return proc.returncode


# The pid of each server `launch_server` runs, by base URL (a test may kill one).
SERVER_PIDS: dict[str, int] = {}


@contextlib.contextmanager
def launch_server(extra_args: list[str], log_dir: Path, port: int = 0, name: str = "server"):
    """Run browserenv-server on a loopback port (0: a free one); yields its base URL (no trailing
    slash). Its log is `log_dir/<name>.log`."""
    binary = server_binary()
    if not binary.is_file():
        pytest.fail(
            f"server binary not found at {binary}: run `cargo build -p browserenv-server` "
            "or set BROWSERENV_SERVER_BIN"
        )
    cmd = [str(binary), "--host", "127.0.0.1", "--port", str(port), *extra_args]
    cmd += shlex.split(os.environ.get("BROWSERENV_SERVER_ARGS", ""))
    log_path = log_dir / f"{name}.log"
    log_file = open(log_path, "wb")
    proc = subprocess.Popen(
        cmd,
        stdin=subprocess.DEVNULL,
        stdout=subprocess.PIPE,
        stderr=log_file,
        text=True,
        cwd=str(REPO_ROOT),
    )

    # Read stdout on a thread so a silent server cannot block us past the timeout;
    # the same thread keeps draining stdout afterwards.
    lines: queue.Queue[str | None] = queue.Queue()

    def pump():
        assert proc.stdout is not None
        for line in proc.stdout:
            lines.put(line.rstrip("\r\n"))
        lines.put(None)

    threading.Thread(target=pump, name="server-stdout", daemon=True).start()

    try:
        try:
            first = lines.get(timeout=STARTUP_TIMEOUT_S)
        except queue.Empty:
            first = None
        match = LISTENING_RE.match(first or "")
        if match is None:
            raise RuntimeError(
                f"server did not announce itself (first stdout line: {first!r}, "
                f"exit code: {proc.poll()}); log tail:\n{_tail(log_path)}"
            )
        base_url = match.group(1)
        # The line is printed once the listener is bound; check it answers.
        deadline = time.monotonic() + 10
        while True:
            try:
                with http_get(f"{base_url}/health", timeout=2) as response:
                    if response.status == 200:
                        break
            except OSError:
                if time.monotonic() > deadline:
                    raise
            time.sleep(0.1)
    except BaseException:
        _stop(proc)
        log_file.close()
        raise

    SERVER_PIDS[base_url] = proc.pid
    try:
        yield base_url
    finally:
        SERVER_PIDS.pop(base_url, None)
        code = _stop(proc)
        log_file.close()
        if code not in (0, -signal.SIGTERM):
            sys.stderr.write(
                f"\nbrowserenv-server exited with {code}; log tail:\n{_tail(log_path)}\n"
            )


@pytest.fixture(scope="session")
def server_url(tmp_path_factory):
    """Base URL (no trailing slash) of a running browserenv-server."""
    with launch_server(["--max-sessions", "3"], tmp_path_factory.mktemp("server")) as url:
        yield url

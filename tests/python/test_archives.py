"""Web archives (docs/archives.md) read and replayed by tools nobody here wrote: the server
records an OpenEnv agent's episode on the demo site with `--record-dir DIR --archive`; warcio
reads every record of its WARC, digests checked, and finds each page the agent saw; pywb replays
a recorded page from it (a `wb-manager` collection, `wayback` on loopback), as a person opening a
demonstration's pages in a standard archive viewer would."""

from __future__ import annotations

import functools
import http.server
import json
import subprocess
import threading
import time
from pathlib import Path

import pytest
from openenv.core import GenericEnvClient
from warcio.archiveiterator import ArchiveIterator

from conftest import REPO_ROOT, _QuietHandler, free_port, http_get, launch_server

SITE_DIR = REPO_ROOT / "assets" / "site"
VENV_BIN = Path(__file__).resolve().parent.parent.parent / ".venv" / "bin"


@pytest.fixture(scope="module")
def site_url():
    """The demo site, served by Python (a listener of its own)."""
    handler = functools.partial(_QuietHandler, directory=str(SITE_DIR))
    httpd = http.server.ThreadingHTTPServer(("127.0.0.1", 0), handler)
    httpd.daemon_threads = True
    threading.Thread(target=httpd.serve_forever, daemon=True).start()
    try:
        yield f"http://127.0.0.1:{httpd.server_address[1]}"
    finally:
        httpd.shutdown()
        httpd.server_close()


@pytest.fixture(scope="module")
def archive(tmp_path_factory, site_url):
    """The WARC of one episode: the home page, a click to the catalog, finish."""
    logs = tmp_path_factory.mktemp("archive-server")
    record_dir = logs / "recording"
    with launch_server(["--record-dir", str(record_dir), "--archive"], logs) as url:
        with GenericEnvClient(base_url=url).sync() as env:
            first = env.reset(start_url=f"{site_url}/index.html", episode_id="py-archive")
            assert first.observation["metadata"]["archive"]["file"] == "archives/py-archive.warc.gz"
            env.step({"op": "click", "x": 56, "y": 24})
            env.step({"op": "finish", "text": ""})
    episodes = [json.loads(line) for line in (record_dir / "episodes.jsonl").read_text().splitlines()]
    named = episodes[0]["archive"]
    assert named["file"] == "archives/py-archive.warc.gz"
    assert named["left_out"] == {"bodies": 0, "responses": 0}
    path = record_dir / named["file"]
    assert path.is_file()
    return path, named["responses"], site_url


def test_warcio_reads_every_record_with_its_digests(archive):
    path, responses, site_url = archive
    kinds: dict[str, int] = {}
    bodies: dict[str, bytes] = {}
    with open(path, "rb") as stream:
        for record in ArchiveIterator(stream, check_digests="raise"):
            kinds[record.rec_type] = kinds.get(record.rec_type, 0) + 1
            if record.rec_type == "response":
                url = record.rec_headers.get_header("WARC-Target-URI")
                assert record.http_headers.get_statuscode()
                bodies[url] = record.content_stream().read()
    assert kinds["warcinfo"] == 1
    assert kinds["response"] == kinds["request"] == responses
    assert b"Harbor Hardware" in bodies[f"{site_url}/index.html"]
    assert any(url.endswith("/style.css") for url in bodies), list(bodies)
    # warcio's own checker agrees.
    checked = subprocess.run([str(VENV_BIN / "warcio"), "check", str(path)], capture_output=True, text=True)
    assert checked.returncode == 0, checked.stdout + checked.stderr


def test_pywb_replays_a_recorded_page(archive, tmp_path):
    path, _, site_url = archive
    manager = str(VENV_BIN / "wb-manager")
    subprocess.run([manager, "init", "demo"], cwd=tmp_path, check=True, capture_output=True)
    subprocess.run([manager, "add", "demo", str(path)], cwd=tmp_path, check=True, capture_output=True)
    port = free_port()
    wayback = subprocess.Popen(
        [str(VENV_BIN / "wayback"), "-p", str(port), "-b", "127.0.0.1"],
        cwd=tmp_path,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    try:
        base = f"http://127.0.0.1:{port}/demo"
        deadline = time.monotonic() + 30
        while True:
            try:
                with http_get(f"{base}/", timeout=2):
                    break
            except OSError:
                if time.monotonic() > deadline or wayback.poll() is not None:
                    raise
                time.sleep(0.2)
        # The page as recorded (`id_`), and as pywb shows it in its viewer (`mp_`, rewritten).
        for modifier in ("id_", "mp_"):
            with http_get(f"{base}/2100{modifier}/{site_url}/index.html", timeout=10) as response:
                assert response.status == 200
                assert b"Harbor Hardware" in response.read()
        with http_get(f"{base}/2100id_/{site_url}/style.css", timeout=10) as response:
            assert response.status == 200
    finally:
        wayback.terminate()
        wayback.wait(timeout=15)

"""WACZ out (docs/archives.md, "WACZ"): a recording exported with `browserenv-tui export --format
wacz`, and a task pack made with `tasks snapshot --wacz`, are packages that `wacz validate`
(Webrecorder's py-wacz) accepts; and a person opens the exported episode's pages in
ReplayWeb.page (npm `replaywebpage`, installed by `make test` into tests/replayweb), served on
loopback and shown in real Chromium, its replayed page's text read back."""

from __future__ import annotations

import functools
import http.server
import json
import os
import re
import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest
from openenv.core import GenericEnvClient

from conftest import REPO_ROOT, _QuietHandler, launch_server

SITE_DIR = REPO_ROOT / "assets" / "site"
VENV_BIN = Path(sys.executable).parent
REPLAYWEB = REPO_ROOT / "tests" / "replayweb" / "node_modules" / "replaywebpage"


def tui_binary() -> Path:
    target = Path(os.environ.get("CARGO_TARGET_DIR", REPO_ROOT / "target"))
    binary = target / "debug" / "browserenv-tui"
    if not binary.is_file():
        pytest.fail(f"{binary} is missing: run `cargo test --workspace` first")
    return binary


class _RangeHandler(_QuietHandler):
    """Static files with byte ranges, as ReplayWeb.page reads a WACZ."""

    def end_headers(self):
        self.send_header("Accept-Ranges", "bytes")
        super().end_headers()

    def do_GET(self):  # noqa: N802 - the base class's name
        asked = re.fullmatch(r"bytes=(\d+)-(\d*)", self.headers.get("Range", ""))
        path = Path(self.translate_path(self.path))
        if not asked or not path.is_file():
            return super().do_GET()
        size = path.stat().st_size
        start = int(asked.group(1))
        end = min(int(asked.group(2)) if asked.group(2) else size - 1, size - 1)
        with open(path, "rb") as file:
            file.seek(start)
            body = file.read(max(0, end - start + 1))
        self.send_response(206)
        self.send_header("Content-Type", self.guess_type(str(path)))
        self.send_header("Content-Range", f"bytes {start}-{end}/{size}")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)


def serve(directory: Path, handler=_QuietHandler, host: str = "127.0.0.1"):
    httpd = http.server.ThreadingHTTPServer((host, 0), functools.partial(handler, directory=str(directory)))
    httpd.daemon_threads = True
    threading.Thread(target=httpd.serve_forever, daemon=True).start()
    return httpd, f"http://{host}:{httpd.server_address[1]}"


def validate(wacz: Path) -> None:
    checked = subprocess.run([str(VENV_BIN / "wacz"), "validate", "-f", str(wacz)],
                             capture_output=True, text=True, timeout=300)
    assert checked.returncode == 0, checked.stdout + checked.stderr
    assert "the passed WACZ is valid" in checked.stdout, checked.stdout


@pytest.fixture(scope="module")
def exported(tmp_path_factory):
    """An OpenEnv agent's episode on the demo site, recorded with its archive, exported as WACZ."""
    httpd, site = serve(SITE_DIR)
    work = tmp_path_factory.mktemp("wacz")
    record = work / "recording"
    try:
        with launch_server(["--record-dir", str(record), "--archive"], work) as url:
            with GenericEnvClient(base_url=url).sync() as env:
                env.reset(start_url=f"{site}/index.html", episode_id="wacz-episode")
                env.step({"op": "click", "x": 641, "y": 24})
                env.step({"op": "finish", "text": ""})
    finally:
        httpd.shutdown()
        httpd.server_close()
    out = work / "export"
    done = subprocess.run([str(tui_binary()), "export", str(record), "--format", "wacz", "--out", str(out)],
                          capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stdout + done.stderr
    wacz = out / "recording.wacz"
    assert wacz.is_file(), done.stdout
    return wacz, site


def test_an_exported_recording_is_a_valid_wacz(exported):
    wacz, site = exported
    validate(wacz)
    import zipfile
    with zipfile.ZipFile(wacz) as package:
        names = package.namelist()
        assert "archive/wacz-episode.warc.gz" in names, names
        pages = package.read("pages/pages.jsonl").decode().splitlines()
        urls = [json.loads(line).get("url") for line in pages[1:]]
        assert f"{site}/index.html" in urls and f"{site}/about.html" in urls, urls


def test_a_task_pack_of_wacz_files_is_valid(tmp_path):
    tasks = tmp_path / "mini.jsonl"
    solutions = tmp_path / "mini-solutions.jsonl"
    chosen = ["nav-store-map", "info-founded"]
    lines = (REPO_ROOT / "assets" / "tasks" / "demo.jsonl").read_text().splitlines()
    tasks.write_text("\n".join(l for l in lines if json.loads(l)["id"] in chosen) + "\n")
    lines = (REPO_ROOT / "assets" / "tasks" / "demo-solutions.jsonl").read_text().splitlines()
    solutions.write_text("\n".join(l for l in lines if json.loads(l)["task_id"] in chosen) + "\n")
    pack = tmp_path / "pack"
    done = subprocess.run(
        [str(tui_binary()), "--site", str(SITE_DIR), "tasks", "snapshot", str(tasks), "--out", str(pack), "--wacz"],
        capture_output=True, text=True, timeout=300,
    )
    assert done.returncode == 0, done.stdout + done.stderr
    packed = [json.loads(l) for l in (pack / "tasks.jsonl").read_text().splitlines()]
    assert [t["archive"].endswith(".wacz") for t in packed] == [True, True], packed
    for task in packed:
        validate(pack / task["archive"])


def test_replayweb_page_opens_an_exported_episode(exported, tmp_path):
    wacz, site = exported
    assert (REPLAYWEB / "sw.js").is_file(), "ReplayWeb.page is not installed: make test runs npm ci in tests/replayweb"
    web = tmp_path / "web"
    web.mkdir()
    (web / "replay").symlink_to(REPLAYWEB)
    (web / "recording.wacz").write_bytes(wacz.read_bytes())
    # The replayed page sits in frames inside ReplayWeb.page's shadow roots (all of this origin):
    # the embedding page reads its text and shows it as its own title.
    (web / "embed.html").write_text(f"""<!doctype html><title>waiting</title>
<script src="/replay/ui.js"></script>
<replay-web-page source="/recording.wacz" url="{site}/about.html" replayBase="/replay/"
  embed="replayonly" style="display:block;width:780px;height:560px"></replay-web-page>
<script>
function texts(root, found) {{
  for (const element of root.querySelectorAll('*')) {{
    if (element.shadowRoot) texts(element.shadowRoot, found);
    if (element.tagName === 'IFRAME') {{
      try {{
        const doc = element.contentDocument;
        if (!doc) continue;
        if (doc.location.pathname.includes('/w/') && doc.body) found.push(doc.body.innerText);
        texts(doc, found);
      }} catch (error) {{}}
    }}
  }}
  return found;
}}
setInterval(() => {{
  const text = texts(document, []).join(' ').replace(/\\s+/g, ' ').trim();
  if (text) document.title = 'replayed: ' + text.slice(0, 180);
}}, 250);
</script>""")
    httpd, base = serve(web, _RangeHandler)
    try:
        with launch_server([], tmp_path) as url:
            with GenericEnvClient(base_url=url).sync() as env:
                result = env.reset(start_url=f"{base}/embed.html")
                assert not result.done, result.observation
                title = ""
                deadline = time.monotonic() + 90
                while time.monotonic() < deadline:
                    result = env.step({"op": "wait"})
                    assert not result.done, result.observation["metadata"]
                    title = result.observation["metadata"].get("title", "")
                    if title.startswith("replayed:") and "family-owned hardware store" in title:
                        break
                assert title.startswith("replayed:") and "family-owned hardware store" in title, title
    finally:
        httpd.shutdown()
        httpd.server_close()

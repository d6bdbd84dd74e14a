"""Archives from anywhere (docs/archives.md, "Archives other tools wrote"): the demo site captured
by each tool people capture with (wget --warc-file, warcprox, pywb's recorder, warcio's
capture_http, and this server), every tool started on loopback, then replayed by the server with
no network: for a task's reference solution, the same pixels as the live page at every step and
the same reward. And pywb's own sample archives, from its installed package: the iana.org capture
renders with its stylesheet and logo, example.warc.gz (request heads without their final blank
line) replays."""

from __future__ import annotations

import base64
import functools
import http.server
import io
import json
import shutil
import signal
import subprocess
import sys
import threading
import time
import urllib.request
from pathlib import Path

import pytest
from openenv.core import GenericEnvClient
from PIL import Image
from warcio.archiveiterator import ArchiveIterator

from conftest import REPO_ROOT, _QuietHandler, free_port, http_get, launch_server

SITE_DIR = REPO_ROOT / "assets" / "site"
TASKS_FILE = REPO_ROOT / "assets" / "tasks" / "demo.jsonl"
SOLUTIONS_FILE = REPO_ROOT / "assets" / "tasks" / "demo-solutions.jsonl"
VENV_BIN = Path(sys.executable).parent
SAMPLES = Path(sys.prefix) / "sample_archive" / "warcs"
# Tasks whose reference solutions follow links across pages with stylesheets, scripts and
# pictures (collect/src/solutions.rs reads the same file).
TASK_IDS = ["nav-store-map", "info-founded"]
TOOLS = ["browserenv", "wget", "warcprox", "pywb", "warcio"]


class _CountingHandler(_QuietHandler):
    served = 0

    def do_GET(self):  # noqa: N802 - the base class's name
        type(self).served += 1
        super().do_GET()


@pytest.fixture(scope="module")
def site_url():
    """The demo site, served by Python on loopback, counting what it serves. On 127.0.0.2:
    warcprox refuses to fetch from 127.0.0.1 itself (and has no option to allow it)."""
    handler = functools.partial(_CountingHandler, directory=str(SITE_DIR))
    httpd = http.server.ThreadingHTTPServer(("127.0.0.2", 0), handler)
    httpd.daemon_threads = True
    threading.Thread(target=httpd.serve_forever, daemon=True).start()
    try:
        yield f"http://127.0.0.2:{httpd.server_address[1]}"
    finally:
        httpd.shutdown()
        httpd.server_close()


def task_lines(site_url: str, archive: str | None) -> str:
    """The chosen demo tasks, each starting at the live site's page, with `archive` when given."""
    lines = []
    for line in TASKS_FILE.read_text().splitlines():
        task = json.loads(line)
        if task["id"] not in TASK_IDS:
            continue
        task["start_url"] = f"{site_url}/{task['start_url']}"
        if archive:
            task["archive"] = archive
        lines.append(json.dumps(task))
    return "\n".join(lines) + "\n"


def solutions() -> dict[str, list[dict]]:
    found = {}
    for line in SOLUTIONS_FILE.read_text().splitlines():
        solution = json.loads(line)
        if solution["task_id"] in TASK_IDS:
            found[solution["task_id"]] = solution["actions"]
    return found


def pixels(screenshot: str) -> bytes:
    return Image.open(io.BytesIO(base64.b64decode(screenshot))).convert("RGB").tobytes()


def run_tasks(url: str) -> dict[str, tuple[list[bytes], float | None, list]]:
    """Each task's reference solution: the pixels of every observation, the reward, the misses."""
    runs = {}
    with GenericEnvClient(base_url=url).sync() as env:
        for task_id, actions in solutions().items():
            result = env.reset(task_id=task_id)
            seen = [pixels(result.observation["screenshot"])]
            misses = list(result.observation["metadata"].get("archive_misses", []))
            for action in actions:
                result = env.step(action)
                assert result.observation["error"] == "", (task_id, result.observation["metadata"])
                seen.append(pixels(result.observation["screenshot"]))
                misses += result.observation["metadata"].get("archive_misses", [])
            runs[task_id] = (seen, result.reward, misses)
    return runs


@pytest.fixture(scope="module")
def live(tmp_path_factory, site_url):
    """The tasks run live, recorded with their archives (this server's capture); the URLs the
    pages asked for, which the other tools then capture."""
    work = tmp_path_factory.mktemp("live")
    tasks = work / "tasks.jsonl"
    tasks.write_text(task_lines(site_url, None))
    record = work / "recording"
    with launch_server(["--tasks", str(tasks), "--record-dir", str(record), "--archive"], work) as url:
        runs = run_tasks(url)
    urls: list[str] = []
    archives = sorted((record / "archives").glob("*.warc.gz"))
    assert archives
    for archive in archives:
        with open(archive, "rb") as stream:
            for rec in ArchiveIterator(stream):
                target = rec.rec_headers.get_header("WARC-Target-URI")
                if rec.rec_type == "response" and target not in urls:
                    urls.append(target)
    assert any(u.endswith("/style.css") for u in urls), urls
    ours = work / "browserenv.warc.gz"
    with open(ours, "wb") as out:
        for archive in archives:
            out.write(archive.read_bytes())
    return runs, urls, ours


def capture_wget(urls: list[str], work: Path) -> Path:
    listed = work / "urls.txt"
    listed.write_text("\n".join(urls) + "\n")
    # Three tries: Python's test server once closed a connection with nothing sent ("No data
    # received" for style.css, a clean-clone run under load); wget retries only such failures.
    done = subprocess.run(
        ["wget", "--no-verbose", "--tries=3", "--waitretry=0", "--no-proxy", "-O", "/dev/null",
         "-i", str(listed), "--warc-file", str(work / "wget")],
        capture_output=True, timeout=120,
    )
    assert done.returncode == 0, (done.returncode, done.stderr.decode(errors="replace"))
    return work / "wget.warc.gz"


def capture_warcio(urls: list[str], work: Path) -> Path:
    out = work / "warcio.warc.gz"
    script = (
        "import sys\n"
        "from warcio.capture_http import capture_http\n"
        "import requests\n"
        "with capture_http(sys.argv[1]):\n"
        "    session = requests.Session()\n"
        "    session.trust_env = False\n"
        "    for url in sys.argv[2:]:\n"
        "        session.get(url, timeout=10)\n"
    )
    subprocess.run([sys.executable, "-c", script, str(out), *urls], check=True, timeout=120)
    return out


def wait_for_port(port: int, proc: subprocess.Popen, what: str) -> None:
    deadline = time.monotonic() + 60
    import socket
    while True:
        try:
            with socket.create_connection(("127.0.0.1", port), timeout=1):
                return
        except OSError:
            if proc.poll() is not None or time.monotonic() > deadline:
                raise AssertionError(f"{what} did not start")
            time.sleep(0.2)


def stop(proc: subprocess.Popen) -> None:
    if proc.poll() is None:
        proc.send_signal(signal.SIGINT)
        try:
            proc.wait(timeout=30)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()


def gathered(files: list[Path], out: Path) -> Path:
    """Several gzipped WARC files as one (gzip members concatenate)."""
    assert files, "the tool wrote no WARC file"
    with open(out, "wb") as whole:
        for file in sorted(files):
            whole.write(file.read_bytes())
    return out


def capture_warcprox(urls: list[str], work: Path) -> Path:
    port = free_port()
    warcs = work / "warcprox-warcs"
    proc = subprocess.Popen(
        [str(VENV_BIN / "warcprox"), "--address", "127.0.0.1", "--port", str(port), "--dir",
         str(warcs), "--gzip", "--prefix", "warcprox"],
        cwd=work, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
    )
    try:
        wait_for_port(port, proc, "warcprox")
        opener = urllib.request.build_opener(
            urllib.request.ProxyHandler({"http": f"http://127.0.0.1:{port}"}))
        for url in urls:
            with opener.open(url, timeout=20) as response:
                response.read()
    finally:
        stop(proc)
    return gathered(list(warcs.glob("*.warc.gz")), work / "warcprox.warc.gz")


def capture_pywb(urls: list[str], work: Path) -> Path:
    home = work / "pywb"
    home.mkdir()
    subprocess.run([str(VENV_BIN / "wb-manager"), "init", "rec"], cwd=home, check=True,
                   capture_output=True)
    port = free_port()
    proc = subprocess.Popen(
        [str(VENV_BIN / "wayback"), "--live", "--record", "-p", str(port), "-b", "127.0.0.1"],
        cwd=home, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
    )
    try:
        wait_for_port(port, proc, "pywb")
        for url in urls:
            with http_get(f"http://127.0.0.1:{port}/rec/record/id_/{url}", timeout=20) as response:
                response.read()
    finally:
        stop(proc)
    return gathered(list((home / "collections" / "rec" / "archive").glob("*.warc.gz")),
                    work / "pywb.warc.gz")


@pytest.mark.parametrize("tool", TOOLS)
def test_a_capture_by_each_tool_replays_as_the_live_page(tool, live, site_url, tmp_path):
    live_runs, urls, ours = live
    work = tmp_path / "capture"
    work.mkdir()
    capture = {
        "browserenv": lambda: ours,
        "wget": lambda: capture_wget(urls, work),
        "warcio": lambda: capture_warcio(urls, work),
        "warcprox": lambda: capture_warcprox(urls, work),
        "pywb": lambda: capture_pywb(urls, work),
    }[tool]()
    pack = tmp_path / "pack"
    (pack / "archives").mkdir(parents=True)
    shutil.copy(capture, pack / "archives" / f"{tool}.warc.gz")
    tasks = pack / "tasks.jsonl"
    tasks.write_text(task_lines(site_url, f"archives/{tool}.warc.gz"))
    served = _CountingHandler.served
    with launch_server(["--tasks", str(tasks)], tmp_path) as url:
        replayed = run_tasks(url)
    assert _CountingHandler.served == served, "a replay reached the live site"
    for task_id, (live_pixels, live_reward, _) in live_runs.items():
        pixels_seen, reward, misses = replayed[task_id]
        assert misses == [], f"{tool}, {task_id}: {misses}"
        assert reward == live_reward == 1.0, (tool, task_id, reward, live_reward)
        assert len(pixels_seen) == len(live_pixels)
        for n, (a, b) in enumerate(zip(live_pixels, pixels_seen)):
            assert a == b, f"{tool}, {task_id}: observation {n} has other pixels than live"


@pytest.fixture(scope="module")
def samples_server(tmp_path_factory):
    """The server with pywb's own sample archives in its --archive-dir."""
    assert SAMPLES.is_dir(), f"pywb's sample archives are not at {SAMPLES}"
    work = tmp_path_factory.mktemp("samples")
    folder = work / "archives"
    folder.mkdir()
    for name in ["iana.warc.gz", "example.warc.gz", "example.arc.gz"]:
        shutil.copy(SAMPLES / name, folder / name)
    with launch_server(["--archive-dir", str(folder)], work) as url:
        yield url


def test_pywb_s_iana_capture_renders_with_its_stylesheet_and_logo(samples_server):
    with GenericEnvClient(base_url=samples_server).sync() as env:
        result = env.reset(start_url="http://www.iana.org/", archive="iana.warc.gz")
        observation = result.observation
        assert observation["error"] == "", observation["metadata"]
        misses = list(observation["metadata"].get("archive_misses", []))
        result = env.step({"op": "wait"})
        misses += result.observation["metadata"].get("archive_misses", [])
        assert "Internet Assigned Numbers Authority" in observation["metadata"]["title"]
        assert not [m for m in misses if "screen.css" in m or "iana-logo" in m], misses
        assert observation["metadata"]["archive"]["answered"] >= 5, observation["metadata"]
        picture = Image.open(io.BytesIO(base64.b64decode(result.observation["screenshot"]))).convert("RGB")
        # The stylesheet draws the page on its grey-blue ground and sets its fonts; the logo is
        # a picture of many colours at the top left. Without them the page is black text on
        # white.
        colours = picture.crop((0, 0, 400, 150)).getcolors(maxcolors=100000)
        assert colours is not None and len(colours) > 50, len(colours or [])
        assert picture.getpixel((790, 300)) != (255, 255, 255)


def test_pywb_s_example_captures_replay(samples_server):
    with GenericEnvClient(base_url=samples_server).sync() as env:
        for start, archive in [
            ("http://example.com/?example=1", "example.warc.gz"),
            ("http://example.com/", "example.arc.gz"),
        ]:
            result = env.reset(start_url=start, archive=archive)
            assert result.observation["error"] == "", result.observation["metadata"]
            assert result.observation["metadata"]["title"] == "Example Domain", archive

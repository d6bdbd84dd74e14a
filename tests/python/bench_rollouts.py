"""Rollouts at once: N async ``BrowserClient`` rollouts in one Python process against N separate
processes (one sync client each), on the same server; prints one Markdown table row.

    .venv/bin/python tests/python/bench_rollouts.py                     # starts its own server
    .venv/bin/python tests/python/bench_rollouts.py --header --rollouts 8 --steps 20
    .venv/bin/python tests/python/bench_rollouts.py --server http://127.0.0.1:8000 \\
        --start-url http://127.0.0.1:41234/long.html [--token TOKEN]

Each rollout resets to the start page (``long.html`` of assets/pages when the script starts the
server) and then scrolls ``--steps`` times, 200 px down and up in turn. What is timed is the steps
of all rollouts together, from the moment all are reset (a barrier in the one process, a "go" line
to every process) to the last step's answer; resets are not timed. The row:

    | rollouts | steps each | 1 process, async: steps/s | p50 step ms | N processes: steps/s | p50 step ms |

Without ``--server`` it runs ``browserenv-server`` (``BROWSERENV_SERVER_BIN``, else
``target/release`` or ``target/debug``) with ``--site assets/pages --max-sessions N``. The Rust
bench may call it with ``--server`` and splice the row into its report.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import re
import statistics
import subprocess
import sys
import time
import urllib.request
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Iterator, Optional

from browserenv import BrowserAction, BrowserClient

REPO_ROOT = Path(__file__).resolve().parent.parent.parent
LISTENING = re.compile(r"^browserenv-server listening on (http://\S+)$")
STATIC = re.compile(r"^static pages at (http://\S+)$")
HEADER = (
    "| rollouts | steps each | 1 process, async: steps/s | p50 step ms | N processes: steps/s | p50 step ms |\n"
    "|---:|---:|---:|---:|---:|---:|"
)
_NO_PROXY = urllib.request.build_opener(urllib.request.ProxyHandler({}))


@dataclass
class StepRecord:
    """What one step's answer said, for the concurrency test's checks."""

    step: int
    url: str
    metadata_step: int
    began: float
    seconds: float


@dataclass
class Rollout:
    index: int
    episode_id: str
    start_url: str
    reset_url: str = ""
    steps: list[StepRecord] = field(default_factory=list)
    states: list[tuple[Optional[str], int]] = field(default_factory=list)
    pages: list[tuple[Optional[str], str, int]] = field(default_factory=list)


def scroll(k: int) -> BrowserAction:
    return BrowserAction(op="scroll", dy=200 if k % 2 else -200)


async def reset_rollout(client: BrowserClient, rollout: Rollout) -> None:
    first = await client.reset(start_url=rollout.start_url, episode_id=rollout.episode_id)
    rollout.reset_url = first.observation.url


async def step_rollout(client: BrowserClient, rollout: Rollout, steps: int, check_every: int = 0) -> None:
    """``steps`` scrolls; with ``check_every`` k, also ``state()`` and ``read_page()`` after every
    k-th step (the concurrency test's checks; the bench leaves them out)."""
    for k in range(1, steps + 1):
        began = time.monotonic()
        result = await client.step(scroll(k))
        seconds = time.monotonic() - began
        rollout.steps.append(
            StepRecord(k, result.observation.url, result.observation.metadata.get("step", -1), began, seconds)
        )
        if check_every and k % check_every == 0:
            state = await client.state()
            rollout.states.append((state.episode_id, state.step_count))
            page = await client.read_page(max_chars=200)
            rollout.pages.append((page.episode_id, page.url, page.step))


async def run_async(server: str, token: Optional[str], start_url: str, rollouts: int, steps: int | list[int],
                    check_every: int = 0, tag: str = "bench") -> tuple[list[Rollout], float]:
    """N rollouts on N clients in this process's event loop, each taking ``steps`` steps (or
    ``steps[i]``); returns them and the steps' wall time."""
    counts = steps if isinstance(steps, list) else [steps] * rollouts
    clients = [BrowserClient(base_url=server, token=token) for _ in range(rollouts)]
    records = [
        Rollout(i, f"{tag}-{i}", f"{start_url}{'&' if '?' in start_url else '?'}rollout={i}") for i in range(rollouts)
    ]
    try:
        await asyncio.gather(*(client.connect() for client in clients))
        await asyncio.gather(*(reset_rollout(c, r) for c, r in zip(clients, records)))
        began = time.monotonic()
        await asyncio.gather(*(step_rollout(c, r, n, check_every) for c, r, n in zip(clients, records, counts)))
        elapsed = time.monotonic() - began
    finally:
        await asyncio.gather(*(client.close() for client in clients), return_exceptions=True)
    return records, elapsed


def worker(args: argparse.Namespace) -> int:
    """One rollout in this process (sync client): ready after the reset, steps on "go"."""
    rollout = Rollout(args.index, f"{args.tag}-{args.index}", f"{args.start_url}{'&' if '?' in args.start_url else '?'}rollout={args.index}")
    with BrowserClient(base_url=args.server, token=args.token).sync() as client:
        first = client.reset(start_url=rollout.start_url, episode_id=rollout.episode_id)
        assert first.observation.url.endswith(f"rollout={args.index}"), first.observation.url
        print("ready", flush=True)
        if sys.stdin.readline().strip() != "go":
            return 1
        began = time.monotonic()
        latencies = []
        for k in range(1, args.steps + 1):
            t = time.monotonic()
            client.step(scroll(k))
            latencies.append(time.monotonic() - t)
        print(json.dumps({"began": began, "ended": time.monotonic(), "latencies": latencies}), flush=True)
    return 0


def run_processes(server: str, token: Optional[str], start_url: str, rollouts: int, steps: int) -> tuple[float, list[float]]:
    base = [sys.executable, str(Path(__file__).resolve()), "--worker", "--server", server, "--start-url", start_url,
            "--steps", str(steps), "--tag", "bench-process"]
    if token:
        base += ["--token", token]
    procs = [
        subprocess.Popen([*base, "--index", str(i)], stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)
        for i in range(rollouts)
    ]
    try:
        for proc in procs:
            line = proc.stdout.readline().strip()
            if line != "ready":
                raise RuntimeError(f"a worker did not get ready: {line!r} (exit {proc.poll()})")
        for proc in procs:
            proc.stdin.write("go\n")
            proc.stdin.flush()
        reports = [json.loads(proc.stdout.readline()) for proc in procs]
        for proc in procs:
            if proc.wait(timeout=60) != 0:
                raise RuntimeError(f"a worker failed: exit {proc.returncode}")
    finally:
        for proc in procs:
            if proc.poll() is None:
                proc.kill()
                proc.wait()
    elapsed = max(r["ended"] for r in reports) - min(r["began"] for r in reports)
    return elapsed, [s for r in reports for s in r["latencies"]]


def wait_for_free_slots(server: str, token: Optional[str], timeout: float = 30.0) -> None:
    """Until the server lists no session (the previous mode's have closed)."""
    headers = {"Authorization": f"Bearer {token}"} if token else {}
    deadline = time.monotonic() + timeout
    while True:
        with _NO_PROXY.open(urllib.request.Request(f"{server}/sessions", headers=headers), timeout=5) as response:
            body = json.load(response)
        sessions = body.get("sessions", body) if isinstance(body, dict) else body
        if not sessions or time.monotonic() > deadline:
            return
        time.sleep(0.2)


def server_binary() -> Path:
    explicit = os.environ.get("BROWSERENV_SERVER_BIN")
    if explicit:
        return Path(explicit)
    target = Path(os.environ.get("CARGO_TARGET_DIR", REPO_ROOT / "target"))
    target = target if target.is_absolute() else REPO_ROOT / target
    for profile in ("release", "debug"):
        if (target / profile / "browserenv-server").is_file():
            return target / profile / "browserenv-server"
    raise SystemExit(f"no browserenv-server under {target}: build it, set BROWSERENV_SERVER_BIN or pass --server")


@contextmanager
def own_server(rollouts: int) -> Iterator[tuple[str, str]]:
    """A server of our own on a free port with the test pages; yields (its URL, long.html's URL)."""
    proc = subprocess.Popen(
        [str(server_binary()), "--host", "127.0.0.1", "--port", "0", "--site", "assets/pages",
         "--max-sessions", str(rollouts)],
        cwd=REPO_ROOT, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, stdin=subprocess.DEVNULL, text=True,
    )
    try:
        first, second = proc.stdout.readline().strip(), proc.stdout.readline().strip()
        listening, static = LISTENING.match(first), STATIC.match(second)
        if not (listening and static):
            raise SystemExit(f"the server did not start: {first!r} {second!r}")
        yield listening.group(1), static.group(1) + "long.html"
    finally:
        proc.terminate()
        proc.wait(timeout=30)


def measure(server: str, token: Optional[str], start_url: str, rollouts: int, steps: int) -> str:
    records, async_elapsed = asyncio.run(run_async(server, token, start_url, rollouts, steps))
    async_latencies = [s.seconds for r in records for s in r.steps]
    wait_for_free_slots(server, token)
    process_elapsed, process_latencies = run_processes(server, token, start_url, rollouts, steps)
    total = rollouts * steps
    return (
        f"| {rollouts} | {steps} | {total / async_elapsed:.1f} | {statistics.median(async_latencies) * 1000:.0f} "
        f"| {total / process_elapsed:.1f} | {statistics.median(process_latencies) * 1000:.0f} |"
    )


def main(argv: Optional[list[str]] = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--server", help="a running server (default: start one)")
    parser.add_argument("--token", default=os.environ.get("BROWSER_API_TOKEN") or None)
    parser.add_argument("--start-url", help="the page each rollout starts on (with --server)")
    parser.add_argument("--rollouts", type=int, default=8)
    parser.add_argument("--steps", type=int, default=20, help="steps per rollout")
    parser.add_argument("--header", action="store_true", help="print the table's header first")
    parser.add_argument("--worker", action="store_true", help=argparse.SUPPRESS)
    parser.add_argument("--index", type=int, default=0, help=argparse.SUPPRESS)
    parser.add_argument("--tag", default="bench", help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    if args.worker:
        return worker(args)
    if args.rollouts < 1 or args.steps < 1:
        parser.error("--rollouts and --steps must be at least 1")
    if args.server and not args.start_url:
        parser.error("--server needs --start-url (a page the server's browsers can load)")
    if args.header:
        print(HEADER)
    if args.server:
        print(measure(args.server.rstrip("/"), args.token, args.start_url, args.rollouts, args.steps))
    else:
        with own_server(args.rollouts) as (server, start_url):
            print(measure(server, None, start_url, args.rollouts, args.steps))
    return 0


if __name__ == "__main__":
    sys.exit(main())

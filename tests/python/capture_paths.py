"""What a page's picture costs Chromium, by each way the DevTools protocol offers one.

The server takes a screenshot after every step (`BROWSER_SCREENSHOTS`, docs/benchmark.md). With
many sessions on few cores a step's time is bounded by the CPU its Chromium work takes, and the
picture is most of it. This script measures that work outside the server, on raw CDP, for every
capture path, so that the choice can be checked again on a new Chromium or machine.

It launches the headless shell with the server's rendering flags (software compositing, an
800x600 window, no smooth scrolling; without the sandbox and the server's other flags), opens TABS
tabs, each in a browser context of its own, on PAGE_URL, and has every tab, all at once, turn the
wheel by a viewport (600 pixels down, then up, as `make bench` does), wait for two animation
frames and take a picture, STEPS times. Paths:

  none         no picture: what the wheel and the two frames cost alone
  frame        Page.startScreencast, its first frame, Page.stopScreencast (the server's `frame`)
  running      one screencast kept running; a step takes the next frame it sends (damage-driven:
               a step that changes nothing would get no frame, so the server cannot use this)
  redraw       Page.captureScreenshot (the server's `redraw`)
  redraw-fast  Page.captureScreenshot with optimizeForSpeed
  begin-frame  the tab draws only on HeadlessExperimental.beginFrame, which this script sends
               every 16 ms until the wheel is handled, twice more, then once with a screenshot
               (the browser gets --enable-begin-frame-control
               --run-all-compositor-stages-before-draw; one tab only: with eight, the first
               try stopped getting replies, which was not looked into)

For each path it prints the median and p95 step, and the CPU time (user + system) of every
Chromium process per step, by process type.

Usage:
  python3 -m http.server -d assets/pages 8765 &
  .venv/bin/python tests/python/capture_paths.py http://127.0.0.1:8765/long.html \
      [--chromium PATH] [--tabs 1] [--steps 60] [--paths none,frame,running,redraw]
"""

import argparse
import asyncio
import json
import os
import re
import shutil
import signal
import statistics
import subprocess
import tempfile
import time

import websockets

CLOCK_TICKS = os.sysconf("SC_CLK_TCK")
PATHS = ["none", "frame", "running", "redraw", "redraw-fast", "begin-frame"]
# A command not answered in this time fails the run (a hung or crashed browser).
REPLY_WAIT = 30
TWO_FRAMES = "new Promise(r => requestAnimationFrame(() => requestAnimationFrame(r)))"


def process_tree(root):
    """The pids of `root` and everything it started (renderers come from its zygotes)."""
    children = {}
    for name in os.listdir("/proc"):
        if not name.isdigit():
            continue
        try:
            with open(f"/proc/{name}/stat") as stat:
                parent = int(stat.read().rsplit(")", 1)[1].split()[1])
        except OSError:
            continue
        children.setdefault(parent, []).append(int(name))
    tree, todo = [], [root]
    while todo:
        pid = todo.pop()
        tree.append(pid)
        todo += children.get(pid, [])
    return tree


def cpu_ticks_by_type(root):
    """Ticks of CPU (user + system) so far, per Chromium process type."""
    ticks = {}
    for pid in process_tree(root):
        try:
            with open(f"/proc/{pid}/stat") as stat:
                fields = stat.read().rsplit(")", 1)[1].split()
            with open(f"/proc/{pid}/cmdline") as cmdline:
                args = cmdline.read()
        except OSError:
            continue
        kind = re.search(r"--type=([a-z-]+)", args)
        kind = kind.group(1) if kind else "browser"
        if "network.mojom" in args:
            kind = "network"
        ticks[kind] = ticks.get(kind, 0) + int(fields[11]) + int(fields[12])
    return ticks


class Cdp:
    """A flat-session CDP connection: commands by id, events to listeners."""

    def __init__(self, socket):
        self.socket, self.next_id, self.replies, self.listeners = socket, 0, {}, []

    async def read(self):
        try:
            async for text in self.socket:
                message = json.loads(text)
                if "id" in message:
                    self.replies.pop(message["id"]).set_result(message)
                else:
                    for listener in self.listeners:
                        listener(message)
        finally:
            for reply in self.replies.values():
                if not reply.done():
                    reply.set_exception(RuntimeError("the DevTools connection closed"))

    async def call(self, method, params=None, session=None):
        self.next_id += 1
        reply = asyncio.get_running_loop().create_future()
        self.replies[self.next_id] = reply
        message = {"id": self.next_id, "method": method, "params": params or {}}
        if session:
            message["sessionId"] = session
        await self.socket.send(json.dumps(message))
        message = await asyncio.wait_for(reply, REPLY_WAIT)
        if "error" in message:
            raise RuntimeError(f"{method}: {message['error']['message']}")
        return message["result"]


def kill_tree(root):
    """Stop every process of the tree until no new one appears (Chromium starts a GPU or network
    process again when one dies), then kill them all: renderers leave the process group."""
    stopped = set()
    while True:
        fresh = [pid for pid in process_tree(root) if pid not in stopped]
        if not fresh:
            break
        for pid in fresh:
            try:
                os.kill(pid, signal.SIGSTOP)
            except ProcessLookupError:
                pass
            stopped.add(pid)
    for pid in stopped:
        try:
            os.kill(pid, signal.SIGKILL)
        except ProcessLookupError:
            pass


async def launch(chromium, path, profile):
    flags = [
        "--headless", "--disable-gpu", "--no-sandbox", "--disable-dev-shm-usage",
        "--disable-smooth-scrolling", "--window-size=800,600", "--remote-debugging-port=0",
        f"--user-data-dir={profile}",
    ]
    if path == "begin-frame":
        flags += ["--enable-begin-frame-control", "--run-all-compositor-stages-before-draw"]
    browser = subprocess.Popen(
        [chromium, *flags, "about:blank"],
        stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, start_new_session=True,
    )
    port_file = os.path.join(profile, "DevToolsActivePort")
    for _ in range(200):
        if os.path.exists(port_file):
            lines = open(port_file).read().split()
            if len(lines) == 2:
                return browser, f"ws://127.0.0.1:{lines[0]}{lines[1]}"
        await asyncio.sleep(0.05)
    kill_tree(browser.pid)
    browser.wait()
    raise RuntimeError("Chromium did not open its DevTools port")


async def measure(chromium, path, page_url, tab_count, steps):
    profile = tempfile.mkdtemp(prefix="capture-paths-")
    try:
        browser, endpoint = await launch(chromium, path, profile)
    except BaseException:
        shutil.rmtree(profile, ignore_errors=True)
        raise
    try:
        async with websockets.connect(endpoint, max_size=None) as socket:
            cdp = Cdp(socket)
            reader = asyncio.create_task(cdp.read())
            frames = {}
            acks = set()
            sent = [0]

            def on_frame(message):
                if message.get("method") == "Page.screencastFrame":
                    tab, frame = message["sessionId"], message["params"]
                    sent[0] += 1
                    frames[tab].put_nowait(frame)
                    ack = {"sessionId": frame["sessionId"]}
                    acks.add(asyncio.create_task(cdp.call("Page.screencastFrameAck", ack, tab)))

            cdp.listeners.append(on_frame)
            tabs = []
            for _ in range(tab_count):
                context = await cdp.call("Target.createBrowserContext")
                target = await cdp.call("Target.createTarget", {
                    "url": "about:blank",
                    "browserContextId": context["browserContextId"],
                    "enableBeginFrameControl": path == "begin-frame",
                })
                attached = await cdp.call("Target.attachToTarget",
                                          {"targetId": target["targetId"], "flatten": True})
                tab = attached["sessionId"]
                frames[tab] = asyncio.Queue()
                await cdp.call("Page.enable", session=tab)
                await cdp.call("Page.navigate", {"url": page_url}, tab)
                tabs.append(tab)

            async def begin_frame(tab, screenshot=False):
                params = {"interval": 16.666}
                if screenshot:
                    params["screenshot"] = {"format": "png"}
                reply = await cdp.call("HeadlessExperimental.beginFrame", params, tab)
                if not screenshot:  # frames 60 a second, as a display would give them
                    await asyncio.sleep(0.016)
                return reply

            if path == "begin-frame":
                for tab in tabs:  # the page loads and draws only on the frames it is given
                    for _ in range(60):
                        await begin_frame(tab)
            else:
                await asyncio.sleep(2)
            if path == "running":
                for tab in tabs:
                    await cdp.call("Page.startScreencast", {"format": "png"}, tab)
                    await asyncio.wait_for(frames[tab].get(), 5)

            sizes = []

            def drain(tab):
                """Drop frames already sent: a step's picture is one sent after it asked."""
                while not frames[tab].empty():
                    frames[tab].get_nowait()

            async def step(tab, number):
                wheel = {"type": "mouseWheel", "x": 400, "y": 300, "deltaX": 0,
                         "deltaY": 600 if number % 2 == 0 else -600}
                if path == "begin-frame":
                    handled = asyncio.create_task(
                        cdp.call("Input.dispatchMouseEvent", wheel, tab))
                    while not handled.done():
                        await begin_frame(tab)
                    await handled
                    await begin_frame(tab)
                    await begin_frame(tab)
                    reply = await begin_frame(tab, screenshot=True)
                    sizes.append(len(reply.get("screenshotData", "")))
                    return
                if path == "running":
                    drain(tab)
                await cdp.call("Input.dispatchMouseEvent", wheel, tab)
                await cdp.call("Runtime.evaluate",
                               {"expression": TWO_FRAMES, "awaitPromise": True}, tab)
                if path == "frame":
                    drain(tab)
                    await cdp.call("Page.startScreencast", {"format": "png"}, tab)
                    frame = await asyncio.wait_for(frames[tab].get(), 5)
                    await cdp.call("Page.stopScreencast", session=tab)
                    sizes.append(len(frame["data"]))
                elif path == "running":
                    try:
                        frame = await asyncio.wait_for(frames[tab].get(), 0.2)
                        sizes.append(len(frame["data"]))
                    except asyncio.TimeoutError:
                        sizes.append(0)
                elif path in ("redraw", "redraw-fast"):
                    params = {"format": "png", "fromSurface": True}
                    if path == "redraw-fast":
                        params["optimizeForSpeed"] = True
                    shot = await cdp.call("Page.captureScreenshot", params, tab)
                    sizes.append(len(shot["data"]))

            async def steps_of(tab, times):
                for number in range(steps):
                    started = time.perf_counter()
                    await step(tab, number)
                    times.append((time.perf_counter() - started) * 1000)

            for tab in tabs:
                for number in range(3):
                    await step(tab, number)
            for tab in tabs:
                drain(tab)
            sizes.clear()
            sent[0] = 0
            times = []
            before = cpu_ticks_by_type(browser.pid)
            await asyncio.gather(*(steps_of(tab, times) for tab in tabs))
            after = cpu_ticks_by_type(browser.pid)
            frames_sent = sent[0]
            reader.cancel()
            for ack in acks:
                ack.cancel()
    finally:
        kill_tree(browser.pid)
        browser.wait()
        shutil.rmtree(profile, ignore_errors=True)

    count = len(times)
    # Processes that exit during the run would take their CPU time with them; tabs stay open
    # until it is read.
    per_step = {kind: (after[kind] - before.get(kind, 0)) * 1000 / CLOCK_TICKS / count
                for kind in after}
    times.sort()
    kinds = "  ".join(f"{kind} {ms:.1f}" for kind, ms in sorted(per_step.items()) if ms >= 0.05)
    pictures = [size for size in sizes if size]
    size = f", PNG {statistics.mean(pictures) * 3 / 4 / 1024:.0f} KiB" if pictures else ""
    missed = f", {len(sizes) - len(pictures)} steps without a picture" if len(pictures) < len(sizes) else ""
    if path == "running":
        missed += f", {frames_sent / count:.1f} frames sent per step"
    print(f"| {path} | {tab_count} | {statistics.median(times):.0f} | "
          f"{times[int(count * 0.95)]:.0f} | {sum(per_step.values()):.1f} | {kinds}{size}{missed} |")


async def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("page_url")
    parser.add_argument("--chromium", default="/usr/lib/chromium/chromium-headless-shell")
    parser.add_argument("--tabs", type=int, default=1)
    parser.add_argument("--steps", type=int, default=60)
    parser.add_argument("--paths", default=",".join(PATHS))
    args = parser.parse_args()
    if args.tabs < 1 or args.steps < 1:
        parser.error("--tabs and --steps need at least 1")
    paths = args.paths.split(",")
    unknown = [path for path in paths if path not in PATHS]
    if unknown:
        parser.error(f"unknown paths {unknown}; known: {', '.join(PATHS)}")
    print("| path | tabs | median ms | p95 ms | Chromium CPU ms per step | by process |")
    print("|---|---|---|---|---|---|")
    for path in paths:
        if path == "begin-frame" and args.tabs > 1:
            print(f"| {path} | {args.tabs} | | | | one tab only (see the docstring) |")
            continue
        try:
            await measure(args.chromium, path, args.page_url, args.tabs, args.steps)
        except (RuntimeError, OSError, asyncio.TimeoutError) as err:
            print(f"| {path} | {args.tabs} | | | | failed: {err or type(err).__name__} |")


if __name__ == "__main__":
    asyncio.run(main())

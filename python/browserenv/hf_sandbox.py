"""``python -m browserenv.hf_sandbox``: run the server's image in a Hugging Face Sandbox and drive
it with the typed client, as the seed's ``hf_sandbox.py`` does.

OpenEnv's ``HFSandboxProvider`` starts the image (``BROWSERENV_HF_IMAGE``, e.g.
``hf.co/spaces/<namespace>/browserenv``, or ``--image``) in a sandbox, runs its ``server`` command
there (the server listens on the sandbox proxy's Unix socket, ``$SBX_PROXY_DIR/8000.sock``), and
gives back a local URL whose proxy adds the Hugging Face credentials. No server token is set: the
proxy does not pass a client's ``Authorization`` header on, and it is the proxy that authenticates.

The browser settings of this environment (``BROWSER_MAX_STEPS``, ``BROWSER_ACTION_WAIT_SECONDS``,
``BROWSER_EXPLICIT_WAIT_SECONDS``, ...) are passed on to the sandbox when they are set here.
Exit codes: 0 done, 1 the sandbox or the server failed, 2 bad arguments.
"""

from __future__ import annotations

import argparse
import os
import sys
from typing import Any, Callable, Dict, Mapping, Optional, Sequence

from .client import BrowserClient
from .models import MAX_SCROLL, BrowserAction

IMAGE_VARIABLE = "BROWSERENV_HF_IMAGE"
#: Server settings passed on from this process's environment when set.
FORWARDED_SETTINGS = (
    "BROWSER_MAX_STEPS",
    "BROWSER_ACTION_WAIT_SECONDS",
    "BROWSER_EXPLICIT_WAIT_SECONDS",
    "BROWSER_SETTLE",
    "BROWSER_MAX_SESSIONS",
    "BROWSER_OBSERVE_TEXT",
    "BROWSER_SESSION_TIMEOUT_SECONDS",
)
#: The demo site and task set inside the image (Dockerfile).
DEMO_SETTINGS = {
    "BROWSER_SITE_DIR": "/opt/browserenv/site",
    "BROWSER_TASKS": "/opt/browserenv/tasks/demo.jsonl",
}
DEFAULT_START_URL = "https://example.com"


def parse_args(argv: Optional[Sequence[str]] = None, environ: Mapping[str, str] = os.environ) -> argparse.Namespace:
    parser = argparse.ArgumentParser(
        prog="python -m browserenv.hf_sandbox",
        description="Start the browserenv image in a Hugging Face Sandbox, reset, scroll once "
        "and print the page's URL.",
    )
    parser.add_argument(
        "--image",
        default=environ.get(IMAGE_VARIABLE) or None,
        help=f"the image to run (default: ${IMAGE_VARIABLE}), e.g. hf.co/spaces/<namespace>/browserenv",
    )
    parser.add_argument("--flavor", default="cpu-basic", help="the sandbox hardware (default: cpu-basic)")
    start = parser.add_mutually_exclusive_group()
    start.add_argument("--start-url", help=f"the page to reset to (default: {DEFAULT_START_URL})")
    start.add_argument("--task-id", help="a task of the image's demo set instead (implies --demo-tasks)")
    parser.add_argument(
        "--demo-tasks",
        action="store_true",
        help="serve the demo site and its tasks from the image (BROWSER_SITE_DIR, BROWSER_TASKS)",
    )
    parser.add_argument(
        "--scroll",
        type=int,
        default=500,
        help=f"pixels to scroll after the reset, -{MAX_SCROLL}..{MAX_SCROLL} (default: 500)",
    )
    parser.add_argument(
        "--timeout", type=float, default=300.0, help="seconds to wait for the server's /health (default: 300)"
    )
    parser.add_argument("--debug", action="store_true", help="show the whole traceback of a failure")
    args = parser.parse_args(argv)
    if not args.image:
        parser.error(f"no image: set {IMAGE_VARIABLE}=hf.co/spaces/<namespace>/<space> or pass --image")
    if not -MAX_SCROLL <= args.scroll <= MAX_SCROLL:
        parser.error(f"--scroll must be within -{MAX_SCROLL}..{MAX_SCROLL}")
    if args.timeout <= 0:
        parser.error("--timeout must be positive")
    if args.task_id:
        args.demo_tasks = True
    elif not args.start_url:
        args.start_url = DEFAULT_START_URL
    return args


def sandbox_env(args: argparse.Namespace, environ: Mapping[str, str] = os.environ) -> Dict[str, str]:
    """The sandbox's environment: the settings set here, and the demo set when asked for."""
    env = {name: environ[name] for name in FORWARDED_SETTINGS if environ.get(name)}
    if args.demo_tasks:
        env.update(DEMO_SETTINGS)
    return env


def _default_provider(**kwargs: Any) -> Any:
    from openenv.core.containers.runtime.hf_sandbox_provider import HFSandboxProvider

    return HFSandboxProvider(**kwargs)


def run(
    args: argparse.Namespace,
    provider_factory: Callable[..., Any] = _default_provider,
    out=sys.stdout,
) -> int:
    reset_kwargs = {"task_id": args.task_id} if args.task_id else {"start_url": args.start_url}
    stage = "start the HF Sandbox"
    try:
        with provider_factory(image=args.image, flavor=args.flavor, env_vars=sandbox_env(args)) as provider:
            base_url = provider.start_container()
            stage = "reach the server in the HF Sandbox"
            provider.wait_for_ready(base_url, timeout_s=args.timeout)
            stage = "drive the browser"
            with BrowserClient(base_url=base_url).sync() as browser:
                result = browser.reset(**reset_kwargs)
                result = browser.step(BrowserAction(op="scroll", dy=args.scroll))
                print(result.observation.url, file=out)
                if result.observation.error:
                    print(f"error: {result.observation.error}", file=out)
    except KeyboardInterrupt:
        print("interrupted: the sandbox was stopped", file=sys.stderr)
        return 1
    except Exception as failure:  # the reason, said plainly; --debug for the traceback
        if args.debug:
            raise
        hint = ""
        if stage == "start the HF Sandbox":
            hint = (
                "\nThe sandbox needs a Hugging Face login with access to Sandboxes (`hf auth login` "
                "or HF_TOKEN), a huggingface_hub with SandboxPool, and an image the hub can run "
                "(a Space's image: hf.co/spaces/<namespace>/<space>; see docs/training.md)."
            )
        print(f"error: could not {stage} for {args.image}: {type(failure).__name__}: {failure}{hint}", file=sys.stderr)
        return 1
    return 0


def main(argv: Optional[Sequence[str]] = None) -> int:
    return run(parse_args(argv))


if __name__ == "__main__":
    sys.exit(main())

#!/usr/bin/env python3
"""Stage this repository as an OpenEnv environment folder that `openenv build` and `openenv push`
take as it is (docs/training.md, "Build and push with OpenEnv's CLI"):

    python3 python/stage_space.py /tmp/browserenv-space
    openenv build /tmp/browserenv-space -t browserenv:latest
    openenv push /tmp/browserenv-space --repo-id <namespace>/browserenv

The folder holds the repository's tracked files as they are in the working tree (`git add` a new
file to have it staged): nothing untracked, since a Space is public and a working tree holds
recordings (cookies, web archives), task packs and campaign folders; and no target/ or .venv/
(`openenv build` copies its folder whole before building, and the repository root with its
target/ is gigabytes). Plus what OpenEnv's layout asks for at the
root beside openenv.yaml, README.md and the Dockerfile: a pyproject.toml, `__init__.py` and
`client.py`. They make the folder (and so the Space, a git repository) pip-installable as the
`browserenv` client package: `pip install git+https://huggingface.co/spaces/<namespace>/browserenv`.
"""

from __future__ import annotations

import argparse
import shutil
import subprocess
import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent
ROOT_INIT = '"""The browserenv environment as OpenEnv lays one out; the client package is browserenv/."""\n'
ROOT_CLIENT = (
    '"""The environment\'s client, where OpenEnv\'s layout looks for it (the package is browserenv/)."""\n\n'
    "from browserenv.client import BrowserClient  # noqa: F401\n"
    "from browserenv.models import BrowserAction, BrowserObservation, BrowserState  # noqa: F401\n"
)


def repository_files(root: Path) -> list[str]:
    """The tracked files (present in the working tree); never an untracked one."""
    listed = subprocess.run(
        ["git", "-C", str(root), "ls-files", "-z", "--cached"],
        check=True,
        capture_output=True,
    ).stdout.decode()
    return sorted({name for name in listed.split("\0") if name and (root / name).is_file()})


def stage(out: Path, root: Path) -> list[str]:
    if out.exists() and any(out.iterdir()):
        raise SystemExit(f"{out} is not empty")
    files = repository_files(root)
    for name in files:
        target = out / name
        target.parent.mkdir(parents=True, exist_ok=True)
        shutil.copy2(root / name, target)
    # The client package at the root, so that the folder installs as it.
    shutil.copytree(out / "python" / "browserenv", out / "browserenv")
    shutil.copy2(out / "python" / "pyproject.toml", out / "pyproject.toml")
    (out / "__init__.py").write_text(ROOT_INIT)
    (out / "client.py").write_text(ROOT_CLIENT)
    return files


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("out", type=Path, help="the folder to make (new or empty)")
    args = parser.parse_args(argv)
    root = Path(
        subprocess.run(["git", "-C", str(HERE), "rev-parse", "--show-toplevel"], check=True, capture_output=True, text=True).stdout.strip()
    )
    files = stage(args.out.resolve(), root)
    print(f"staged {len(files)} files of {root} in {args.out}")
    print(f"next: openenv build {args.out} -t browserenv:latest")
    print(f"  or: openenv push {args.out} --repo-id <namespace>/browserenv")
    return 0


if __name__ == "__main__":
    sys.exit(main())

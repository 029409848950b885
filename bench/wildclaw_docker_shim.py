"""A stand-in for the `docker` command, for running WildClawBench's own runner code on a machine without Docker.

WildClawBench's runner (`eval/run_batch.py`, `src/utils/docker_utils.py`, `src/utils/grading.py`) drives each task
through `docker run / exec / cp / rm`. This script implements the subset it uses, with a "container" = a folder
holding the container's private `/tmp_workspace`, `/tmp` and `/root`, the `/app` source folder bound read-only,
and the host's other top-level folders bound read-only (so the host's python3 and its packages serve as the
image; the python running this script is the image's `python3`). `docker exec` runs the command as root in a bubblewrap mount namespace laid out that way (host network,
so a judge on 127.0.0.1 is reachable). Only the reference side of `bench/conformance_wildclaw.py` uses it.

    WILDCLAW_SHIM_ROOT=/tmp/x python3 wildclaw_docker_shim.py run -d --name N -e K=V -v SRC:/app:ro IMAGE ...
    ... exec [-e K=V]... N CMD...  |  cp SRC N:DEST  |  cp N:SRC DEST  |  rm -f N
"""
from __future__ import annotations

import json
import os
import shutil
import signal
import subprocess
import sys
from pathlib import Path

PRIVATE = ("tmp_workspace", "tmp", "root")  # container folders kept in the container's own state folder
SKIP_TOP = {"proc", "dev", "sys", "tmp", "root", "tmp_workspace", "app", "run"}
MARK = "WILDCLAW_SHIM_CONTAINER"  # in the environment of every process of a container, so `rm -f` finds them all


def _root() -> Path:
    return Path(os.environ["WILDCLAW_SHIM_ROOT"])


def _state(name: str) -> Path:
    return _root() / name


def _meta(name: str) -> dict:
    f = _state(name) / "meta.json"
    if not f.is_file():
        raise SystemExit(f"Error: No such container: {name}")
    return json.loads(f.read_text())


def _split_env(args: list[str]) -> tuple[dict[str, str], list[str]]:
    env: dict[str, str] = {}
    rest = list(args)
    while rest and rest[0] in ("-e", "-i", "-t", "-it", "-d"):
        flag = rest.pop(0)
        if flag == "-e":
            k, _, v = rest.pop(0).partition("=")
            env[k] = v
    return env, rest


def cmd_run(args: list[str]) -> int:
    env: dict[str, str] = {}
    name, app = None, None
    i = 0
    while i < len(args):
        a = args[i]
        if a == "-d":
            i += 1
        elif a == "--name":
            name = args[i + 1]
            i += 2
        elif a == "-e":
            k, _, v = args[i + 1].partition("=")
            env[k] = v
            i += 2
        elif a == "-v":
            src, dest = args[i + 1].split(":")[:2]
            if dest != "/app":
                print(f"shim: only a volume at /app is supported, not {dest}", file=sys.stderr)
                return 125
            app = src
            i += 2
        else:
            break  # the image and its command: ignored (the host is the image)
    if not name:
        print("shim: --name is required", file=sys.stderr)
        return 125
    st = _state(name)
    if st.exists():
        print(f"shim: container {name} exists", file=sys.stderr)
        return 125
    for d in PRIVATE:
        (st / d).mkdir(parents=True)
    (st / "meta.json").write_text(json.dumps({"env": env, "app": app}))
    print(f"shim-{name}")
    return 0


def _bwrap(name: str, env: dict[str, str], argv: list[str]) -> list[str]:
    meta = _meta(name)
    st = _state(name)
    cmd = ["bwrap", "--die-with-parent", "--proc", "/proc", "--dev", "/dev"]
    for entry in sorted(os.listdir("/")):
        if entry in SKIP_TOP:
            continue
        p = Path("/") / entry
        if p.is_symlink():
            cmd += ["--symlink", os.readlink(p), f"/{entry}"]
        elif p.is_dir():
            cmd += ["--ro-bind", str(p), f"/{entry}"]
    for d in PRIVATE:
        cmd += ["--bind", str(st / d), f"/{d}"]
    if meta.get("app"):
        cmd += ["--ro-bind", meta["app"], "/app"]
    prefix = Path(sys.prefix)
    if prefix.parts[1:2] and prefix.parts[1] in PRIVATE:  # the image's python lives under /root (pyenv): keep it
        cmd += ["--ro-bind", str(prefix), str(prefix)]
    full_env = {"PATH": f"{prefix}/bin:/usr/local/bin:/usr/bin:/bin", "HOME": "/root",
                "LANG": "C.UTF-8", **meta["env"], **env, MARK: name}
    cmd += ["--clearenv"]
    for k, v in full_env.items():
        cmd += ["--setenv", k, v]
    return cmd + ["--chdir", "/", "--", *argv]


def cmd_exec(args: list[str]) -> int:
    env, rest = _split_env(args)
    if len(rest) < 2:
        print("shim: exec needs a container and a command", file=sys.stderr)
        return 125
    name, argv = rest[0], rest[1:]
    # As `docker exec`: return when the command exits, even if it left processes running in the container
    # (a Warmup line ending in `&`); they keep running until `rm -f`. So their output goes to files, not to
    # the pipes of whoever called us.
    st = _state(name)
    with open(st / "exec.out", "w+b") as out, open(st / "exec.err", "w+b") as err:
        rc = subprocess.run(_bwrap(name, env, argv), stdout=out, stderr=err, stdin=subprocess.DEVNULL).returncode
        for f, dest in ((out, sys.stdout), (err, sys.stderr)):
            f.seek(0)
            dest.buffer.write(f.read())
            dest.flush()
    return rc


def _host_path(name: str, cpath: str) -> Path:
    """A container path as a path on the host (the container's private folders, or /app)."""
    parts = Path(cpath).parts
    if len(parts) < 2 or parts[0] != "/":
        raise ValueError(f"not an absolute container path: {cpath}")
    top = parts[1]
    if top in PRIVATE:
        return _state(name).joinpath(top, *parts[2:])
    if top == "app" and _meta(name).get("app"):
        return Path(_meta(name)["app"]).joinpath(*parts[2:])
    raise ValueError(f"shim: container path {cpath} is outside /tmp_workspace, /tmp, /root, /app")


def _copy(src: str, dest: str, src_p: Path, dest_p: Path) -> int:
    contents = src.endswith("/.")
    if not src_p.exists():
        print(f"Error: Could not find the file {src}", file=sys.stderr)
        return 1
    if src_p.is_dir():
        if contents:
            dest_p.mkdir(parents=True, exist_ok=True)
            shutil.copytree(src_p, dest_p, dirs_exist_ok=True, symlinks=True)
        elif dest_p.is_dir():
            shutil.copytree(src_p, dest_p / src_p.name, dirs_exist_ok=True, symlinks=True)
        else:
            if not dest_p.parent.is_dir():
                print(f"Error: parent of {dest} does not exist", file=sys.stderr)
                return 1
            shutil.copytree(src_p, dest_p, symlinks=True)
        return 0
    target = dest_p / src_p.name if dest_p.is_dir() or dest.endswith("/") else dest_p
    if not target.parent.is_dir():
        print(f"Error: parent of {dest} does not exist", file=sys.stderr)
        return 1
    shutil.copy2(src_p, target, follow_symlinks=False)
    return 0


def cmd_cp(args: list[str]) -> int:
    if len(args) != 2:
        print("shim: cp SRC DEST", file=sys.stderr)
        return 125
    src, dest = args
    try:
        if ":" in src and not src.startswith("/"):
            name, cpath = src.split(":", 1)
            src_p = _host_path(name, cpath.rstrip(".").rstrip("/") if cpath.endswith("/.") else cpath)
            return _copy(src, dest, src_p, Path(dest))
        name, cpath = dest.split(":", 1)
        src_p = Path(src[:-2]) if src.endswith("/.") else Path(src)
        return _copy(src, dest, src_p, _host_path(name, cpath))
    except ValueError as e:
        print(str(e), file=sys.stderr)
        return 1


def _kill_container_processes(name: str) -> None:
    needle = f"{MARK}={name}".encode()
    for pid in (p for p in os.listdir("/proc") if p.isdigit()):
        try:
            if needle in Path(f"/proc/{pid}/environ").read_bytes().split(b"\0"):
                os.kill(int(pid), signal.SIGKILL)
        except (OSError, ProcessLookupError):
            continue


def cmd_rm(args: list[str]) -> int:
    names = [a for a in args if not a.startswith("-")]
    for n in names:
        _kill_container_processes(n)
        shutil.rmtree(_state(n), ignore_errors=True)
    return 0


def main(argv: list[str]) -> int:
    if not argv:
        print("shim: no command", file=sys.stderr)
        return 125
    handlers = {"run": cmd_run, "exec": cmd_exec, "cp": cmd_cp, "rm": cmd_rm}
    fn = handlers.get(argv[0])
    if fn is None:
        print(f"shim: docker {argv[0]} is not supported", file=sys.stderr)
        return 125
    return fn(argv[1:])


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))

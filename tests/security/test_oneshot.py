"""The one-shot bwrap path (`run_once`: graders, probes, checks) confines its command exactly as a command run in
an opened sandbox: same uid, no capabilities, no_new_privs, same mounts, and nothing it starts outlives it."""
from __future__ import annotations

import os
import time
from pathlib import Path

import pytest

from clawkube import execution as ex
from clawkube.execution.base import Sandbox
from clawkube.execution.spec import Limits, Mount

from .attack import IS_ROOT, NEEDS_ROOT

pytestmark = pytest.mark.skipif(not IS_ROOT or ex.backend("bwrap").unavailable() is not None,
                                reason=NEEDS_ROOT + " and a working bwrap")

PROBE = ("grep -E '^(Uid|Gid|Groups|Cap[A-Za-z]+|NoNewPrivs|Seccomp)' /proc/self/status; "
         "awk '{print $5, $6}' /proc/self/mountinfo | sort; ls /proc | grep -c '^[0-9]'; hostname; pwd; "
         "touch /data/written && echo wrote; touch /etc/x 2>/dev/null || echo etc-ro")


def _run(tmp_path: Path, one_shot: bool, argv: list[str]) -> tuple[ex.ExecResult, int]:
    data = tmp_path / f"data-{'one-shot' if one_shot else 'opened'}"
    data.mkdir()
    with ex.claim_uid() as lease:
        os.chown(data, lease.uid, lease.uid)
        spec = ex.SandboxSpec(mounts=[Mount(source=data, target="/data", writable=True)], uid=lease.uid, name="g")
        sb = ex.backend("bwrap")(spec)
        e = ex.ExecSpec(argv=argv, cwd="/data", env={"X": "1"}, limits=Limits(timeout=30, memory=2 ** 30, pids=64))
        return (sb.run_one(e) if one_shot else Sandbox.run_one(sb, e)), lease.uid


def test_one_shot_and_opened_sandboxes_confine_alike(tmp_path: Path):
    (classic, uid_a), (oneshot, uid_b) = (_run(tmp_path, o, ["sh", "-c", PROBE]) for o in (False, True))
    assert classic.exit_code == oneshot.exit_code == 0, (classic.stderr, oneshot.stderr)
    norm = [r.stdout.replace(str(u), "UID").splitlines() for r, u in ((classic, uid_a), (oneshot, uid_b))]
    status = [[x for x in lines if ":" in x and x.split(":")[0] in ("Uid", "Gid", "Groups", "NoNewPrivs", "Seccomp")
               or x.startswith("Cap")] for lines in norm]
    assert status[0] == status[1]
    assert "CapEff:\t0000000000000000" in status[1] and "CapBnd:\t0000000000000000" in status[1]
    assert "NoNewPrivs:\t1" in status[1] and "Uid:\tUID\tUID\tUID\tUID" in status[1]
    mounts = [sorted(x for x in lines if x.startswith("/") and " " in x) for lines in norm]
    assert mounts[0] == mounts[1]
    assert "wrote" in norm[1] and "etc-ro" in norm[1] and "/data" in norm[1]


def test_nothing_the_one_shot_command_starts_outlives_it(tmp_path: Path):
    r, _ = _run(tmp_path, True, ["sh", "-c", "setsid sleep 3171 & echo $! > /data/pid; nohup sleep 3171 >/dev/null 2>&1 &"
                                            " exit 0"])
    assert r.exit_code == 0, r.stderr
    # the sandbox's pid namespace is gone: no process of its uid is left on the machine
    time.sleep(0.2)
    left = [p for p in os.listdir("/proc") if p.isdigit() and _cmd(p).startswith("sleep 3171")]
    assert left == [], left


def _cmd(pid: str) -> str:
    try:
        return Path(f"/proc/{pid}/cmdline").read_bytes().replace(b"\0", b" ").decode(errors="replace")
    except OSError:
        return ""

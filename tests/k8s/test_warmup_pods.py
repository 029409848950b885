"""A task's Warmup on a cluster: the agent pod's svc-warmup sidecar (k8s/podspec.py), the relay of the servers it
leaves running to the grading pod (execution/relay.py, decide_trial), and the release of the agent pod after grading."""
from __future__ import annotations

import dataclasses
import http.server
import json
import os
import signal
import socket
import threading
import urllib.request
from pathlib import Path

import pytest

from clawkube.contracts.warmup import LOST_PEER, WarmupRequest
from clawkube.execution.relay import RELAY_PORT, LoopbackRelay, RelayServer, peer_ports
from clawkube.k8s.actions import CreatePod, DeletePod
from clawkube.k8s.podspec import WARMUP_CONTAINER, agent_pod, grade_pod
from clawkube.lifecycle import bundle, warmup_sidecar
from tests.k8s.builders import agent_ok, pod, spec, trial
from tests.k8s.test_decide_trial import A1, agent_done, ctx, scheduled, step
from tests.k8s.test_units import _params

WARM = dict(spec=spec().model_copy(update={"warmup": True}))


def _containers(p: dict) -> dict[str, dict]:
    return {c["name"]: c for c in p["spec"]["containers"]}


def _mounts(c: dict) -> dict[str, dict]:
    return {m["name"]: m for m in c["volumeMounts"]}


# ---------------------------------------------------------------- pod specs

def test_a_task_with_warmup_gets_a_root_sidecar_sharing_workspace_home_and_network():
    p = agent_pod(_params(**WARM))
    cs = _containers(p)
    main, side = cs["agent"], cs[WARMUP_CONTAINER]
    assert side["image"] == main["image"]
    sc = side["securityContext"]
    assert sc["runAsUser"] == 0 and sc["runAsNonRoot"] is False and sc["readOnlyRootFilesystem"] is False
    assert sc["allowPrivilegeEscalation"] is False and sc["capabilities"]["drop"] == ["ALL"]
    assert not {"SYS_ADMIN", "NET_ADMIN", "SYS_PTRACE", "NET_RAW"} & set(sc["capabilities"]["add"])
    # the agent container stays as it was: non-root (the pod's uid), read-only root filesystem
    assert "runAsUser" not in main["securityContext"] and main["securityContext"]["readOnlyRootFilesystem"] is True
    assert p["spec"]["securityContext"]["runAsUser"] == 65534
    ms, mm = _mounts(side), _mounts(main)
    assert ms["workspace"]["mountPath"] == mm["workspace"]["mountPath"] == "/tmp_workspace"  # the lines name it
    assert ms["work"]["mountPath"] == mm["work"]["mountPath"]  # the agent's HOME
    assert ms["bundle"]["readOnly"] is True
    # each handshake volume is written by one side only
    assert ms["warmup-request"]["readOnly"] is True and not mm["warmup-request"].get("readOnly")
    assert mm["warmup-status"]["readOnly"] is True and not ms["warmup-status"].get("readOnly")
    assert {"name": "CLAWKUBE_WARMUP_DIR", "value": "/clawkube/warmup"} in main["env"]
    # nothing of the run's secrets in the sidecar: no model key, no store credentials, no judge
    assert [e["name"] for e in side["env"]] == ["HOME"] and "envFrom" not in side
    assert p["metadata"]["labels"]["clawkube.io/warmup-relay"] == "true"
    assert side["ports"] == [{"name": "warmup-relay", "containerPort": RELAY_PORT, "protocol": "TCP"}]


def test_no_sidecar_without_warmup_nor_in_skill_writing_stages():
    assert WARMUP_CONTAINER not in _containers(agent_pod(_params()))
    assert WARMUP_CONTAINER not in _containers(agent_pod(_params(stage="authoring", **WARM)))
    assert "clawkube.io/warmup-relay" not in agent_pod(_params())["metadata"]["labels"]


def test_the_grading_pod_is_told_the_relay_only_when_there_is_one():
    env = {e["name"]: e.get("value") for e in grade_pod(_params(warmup_peer="10.1.2.3:47419"), "s3://b/a/")["spec"]
           ["containers"][0]["env"]}
    assert env["CLAWKUBE_WARMUP_PEER"] == "10.1.2.3:47419"
    env = {e["name"] for e in grade_pod(_params(), "s3://b/a/")["spec"]["containers"][0]["env"]}
    assert "CLAWKUBE_WARMUP_PEER" not in env


# ---------------------------------------------------------------- decide

def _warm_trial(status):
    return trial(status=status).__class__(**{**trial(status=status).__dict__,
                                             "spec": trial().spec.model_copy(update={"warmup": True})})


def _ip(p, ip="10.1.2.3", phase="Running"):
    return dataclasses.replace(p, pod_ip=ip, phase=phase)


def _served_agent(**kw):
    s = agent_done()
    return s.model_copy(update={"agent": s.agent.model_copy(update={"warmup_ports": [18931]}), **kw})


@pytest.mark.parametrize("agent,ports,peer", [
    (_ip(pod(A1, "Succeeded", started=1, message=agent_ok())), [18931], "10.1.2.3:47419"),
    (_ip(pod(A1, "Succeeded", started=1, message=agent_ok())), [], None),  # no server left running: no relay
    (_ip(pod(A1, "Succeeded", started=1, message=agent_ok()), phase="Succeeded"), [18931], LOST_PEER),  # sidecar ended
    (_ip(pod(A1, "Succeeded", started=1, message=agent_ok()), ip=""), [18931], LOST_PEER),
    (None, [18931], LOST_PEER),  # the agent pod is gone
], ids=["relay", "no-ports", "sidecar-ended", "no-ip", "pod-gone"])
def test_grading_pod_gets_the_agent_pods_relay(agent, ports, peer):
    s = agent_done(grade_scheduled=False)
    s = s.model_copy(update={"agent": s.agent.model_copy(update={"warmup_ports": ports})})
    actions, _ = step(_warm_trial(s), [agent] if agent else [], ctx())
    create = [a for a in actions if isinstance(a, CreatePod)]
    assert len(create) == 1 and create[0].role == "grade" and create[0].warmup_peer == peer


def test_the_agent_pod_is_kept_while_grading_and_released_after():
    agent = _ip(pod(A1, "Succeeded", started=1, message=agent_ok()))
    grading, _ = step(_warm_trial(_served_agent()), [agent], ctx())
    assert not [a for a in grading if isinstance(a, DeletePod)]  # its servers are being graded
    done = _served_agent(state="succeeded", finished_at="2025-01-01T12:01:00Z")
    assert done.finished
    actions, _ = step(_warm_trial(done), [agent], ctx())
    assert [a for a in actions if isinstance(a, DeletePod)] == [DeletePod("r-t1-0", A1, "WarmupServersReleased")]
    # idempotent: a pod already being deleted, or whose pod completed, is left alone
    for p in (dataclasses.replace(agent, deleting=True), dataclasses.replace(agent, phase="Succeeded")):
        actions, _ = step(_warm_trial(done), [p], ctx())
        assert not [a for a in actions if isinstance(a, DeletePod)]
    # trials without a warmup never get such deletions (their pods complete by themselves)
    actions, _ = step(trial(status=done), [agent], ctx())
    assert not [a for a in actions if isinstance(a, DeletePod)]


def test_an_earlier_attempts_agent_pod_is_released():
    old = _ip(pod(A1, "Succeeded", started=1, message=agent_ok()))
    actions, _ = step(_warm_trial(scheduled(attempt=2)), [old], ctx())
    assert DeletePod("r-t1-0", A1, "WarmupServersReleased") in actions


# ---------------------------------------------------------------- relay

class _Echo(http.server.BaseHTTPRequestHandler):
    def do_GET(self):
        body = json.dumps({"path": self.path}).encode()
        self.send_response(200)
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def log_message(self, *a):
        pass


def _free() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _closed(s: socket.socket) -> bool:
    try:
        return s.recv(100) == b""
    except ConnectionResetError:
        return True


def test_relay_carries_only_the_warmups_ports():
    # the agent pod's loopback stands at 127.0.0.2 here, the grading pod's at 127.0.0.1 (the same port numbers)
    srv = http.server.ThreadingHTTPServer(("127.0.0.2", 0), _Echo)
    other = http.server.ThreadingHTTPServer(("127.0.0.2", 0), _Echo)  # listening, but not one of the warmup's
    for s in (srv, other):
        threading.Thread(target=s.serve_forever, daemon=True).start()
    port, relay_port = srv.server_address[1], _free()
    server = RelayServer([port, relay_port], port=relay_port, host="127.0.0.1", target="127.0.0.2")
    peer = f"127.0.0.1:{relay_port}"
    try:
        assert peer_ports(peer) == [port]  # never itself
        for line in (f"{other.server_address[1]}\n".encode(), b"GET / HTTP/1.0\r\n\r\n", b"x" * 200):
            with socket.create_connection(("127.0.0.1", relay_port)) as s:
                s.sendall(line)
                assert _closed(s), line
        with LoopbackRelay(peer, peer_ports(peer)):
            with urllib.request.urlopen(f"http://127.0.0.1:{port}/gmail/audit", timeout=10) as r:
                assert json.load(r) == {"path": "/gmail/audit"}  # the grader's query, at the task's own address
    finally:
        server.close()
        srv.server_close()
        other.server_close()


# ---------------------------------------------------------------- the sidecar and the supervisor's side

@pytest.mark.skipif(os.geteuid() != 0, reason="the sidecar gives what root made to the agent's uid: needs root")
@pytest.mark.parametrize("lines,failed", [
    (["python3 -m http.server {port} --bind 127.0.0.1 >/dev/null 2>&1 & echo $! > server.pid",
      "for i in $(seq 100); do python3 -c 'import socket; socket.create_connection((\"127.0.0.1\", {port}), 1)' "
      "2>/dev/null && break; sleep 0.1; done", "mkdir -p made_by_root"], None),
    (["true", "false", "echo never"], "at line 2: 'false'"),
], ids=["server", "fails"])
def test_sidecar_runs_the_warmup_and_reports(tmp_path: Path, lines, failed):
    port = _free()
    lines = [ln.replace("{port}", str(port)) for ln in lines]
    (tmp_path / "bundle").mkdir()
    (tmp_path / "bundle" / bundle.AGENT_MANIFEST).write_text(json.dumps({
        "view": {"id": "t", "name": "t", "category": "c", "prompt": "p", "timeout_seconds": 60}, "format": "wildclawbench", "warmup": lines}))
    ws = tmp_path / "ws"
    ws.mkdir()
    stop = threading.Event()
    relay_port = _free()
    side = threading.Thread(target=warmup_sidecar.serve, args=(tmp_path / "bundle", tmp_path / "ctl", relay_port, 30,
                                                               stop), daemon=True)
    side.start()
    try:
        req = WarmupRequest(env={"HOME": str(tmp_path), "PATH": os.environ["PATH"]}, cwd=str(ws), owner_uid=65534,
                            owner_gid=65534, owned=[str(ws)])
        st = warmup_sidecar.run_remote(tmp_path / "ctl", req, tmp_path / "out" / "warmup.log", timeout=30)
        if failed:
            assert st.failed and failed in st.failed and st.ports == []
            side.join(10)
            assert not side.is_alive()  # nothing to serve: the sidecar ends, so the pod can complete
            return
        assert st.failed is None and port in st.ports and relay_port not in st.ports
        assert (ws / "made_by_root").stat().st_uid == 65534  # given to the agent
        assert (tmp_path / "out" / "warmup.log").exists()
        assert port in peer_ports(f"127.0.0.1:{relay_port}")
        assert side.is_alive()  # keeps serving for grading
    finally:
        stop.set()
        side.join(10)
        if (ws / "server.pid").exists():  # the warmup's server (started by this test): by its pid
            try:
                os.kill(int((ws / "server.pid").read_text()), signal.SIGKILL)
            except ProcessLookupError:
                pass


def test_the_supervisor_reports_a_sidecar_that_never_answers(tmp_path: Path):
    req = WarmupRequest(cwd=str(tmp_path), owner_uid=1, owner_gid=1)
    with pytest.raises(RuntimeError, match="did not report"):
        warmup_sidecar.run_remote(tmp_path / "ctl", req, tmp_path / "warmup.log", timeout=-59.5)
    assert WarmupRequest.model_validate_json((tmp_path / "ctl" / "request" / "request.json").read_text()) == req


def test_grading_without_the_agent_pod_is_an_infra_fault(tmp_path: Path):
    from clawkube import pod as pod_main

    with pytest.raises(RuntimeError, match="is gone"):
        pod_main._warmup_servers(LOST_PEER, tmp_path)
    with pytest.raises(RuntimeError, match="cannot be reached"):
        pod_main._warmup_servers(f"127.0.0.1:{_free()}", tmp_path)

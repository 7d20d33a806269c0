"""The worker SDK against a real node: leases kept by heartbeats, a silent worker's
attempt re-run by another under a larger token, 409 for the superseded token and the
handler cancelled, progress in `raftcron run get`, a cancelled run, a bad signature, a
graceful stop.

The node is bin/raftcron of the repository (`make build`), or RAFTCRON_BIN: one node on
loopback with a 1 s worker lease, so that a few seconds stand for the minutes of a real
lease (a 4 s attempt on a 1 s lease is a 40 s attempt on a 10 s one).
"""

from __future__ import annotations

import json
import os
import signal
import socket
import sqlite3
import subprocess
import sys
import tempfile
import threading
import time
import unittest
import urllib.error
import urllib.request
from pathlib import Path
from typing import Any, Callable

from raftcron.worker import Context, Worker

ROOT = Path(__file__).resolve().parents[3]
PYTHON_DIR = Path(__file__).resolve().parents[1]
LEASE = 1.0
KEY = "n3w-key-n3w-key-n3w-key-n3w-key-n3w-key="


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def wait_for(what: str, cond: Callable[[], bool], within: float = 20.0) -> None:
    end = time.monotonic() + within
    while not cond():
        if time.monotonic() > end:
            raise AssertionError(f"timed out after {within:g}s waiting for {what}")
        time.sleep(0.05)


class Node:
    """One raftcron node, killed with the test class."""

    def __init__(self, binary: Path, tmp: Path) -> None:
        self.binary = binary
        self.addr = f"127.0.0.1:{free_port()}"
        self.http = f"127.0.0.1:{free_port()}"
        (tmp / "fence.key").write_text(KEY + "\n")
        self.log = open(tmp / "n1.log", "wb")
        self.proc = subprocess.Popen(
            [str(binary), "serve", "--id", "n1", "--data-dir", str(tmp / "n1"), "--addr", self.addr,
             "--http-addr", self.http, "--peers", f"n1={self.addr}", "--worker-lease", f"{LEASE:g}s",
             "--raft-heartbeat", "300ms", "--raft-election", "300ms", "--fence-key-file", str(tmp / "fence.key")],
            stdout=self.log, stderr=subprocess.STDOUT)
        wait_for("the node to lead at cluster version 3", self._ready, 30)

    def _ready(self) -> bool:
        if self.proc.poll() is not None:
            raise AssertionError(f"the node exited with {self.proc.returncode}")
        try:
            st = self.call("GET", "/status")
        except OSError:
            return False
        return st.get("state") == "leader" and int(st.get("cluster_version", 0)) >= 3

    def stop(self) -> None:
        self.proc.kill()
        self.proc.wait(10)
        self.log.close()

    def call(self, method: str, path: str, body: dict[str, Any] | None = None) -> dict[str, Any]:
        data = None if body is None else json.dumps(body).encode()
        req = urllib.request.Request(f"http://{self.http}{path}", data=data, method=method)
        with urllib.request.urlopen(req, timeout=10) as resp:
            doc: dict[str, Any] = json.loads(resp.read() or b"{}")
        return doc

    def status_of(self, path: str, body: dict[str, Any]) -> tuple[int, dict[str, Any]]:
        """POST body to path: the status and the JSON answer, an error's included."""
        try:
            return 200, self.call("POST", path, body)
        except urllib.error.HTTPError as err:
            return err.code, json.loads(err.read() or b"{}")

    def job(self, name: str, payload: str = "{}", pool: str = "p") -> None:
        target = {"pool": pool, "handler": name, "payload": payload}
        self.call("PUT", f"/v1/jobs/{name}", {"name": name, "schedule": "@yearly", "worker": target})

    def trigger(self, name: str) -> str:
        return str(self.call("POST", f"/v1/jobs/{name}:trigger", {})["run"]["id"])

    def state(self, run_id: str) -> str:
        return str(self.run_get(run_id)["state"])

    def run_get(self, run_id: str) -> dict[str, Any]:
        """`raftcron run get ID -o json`, as a user runs it."""
        out = subprocess.run([str(self.binary), "run", "get", run_id, "-o", "json", "--addr", self.addr],
                             check=True, capture_output=True, timeout=20).stdout
        doc: dict[str, Any] = json.loads(out)
        return doc


class NodeTest(unittest.TestCase):
    node: Node
    tmp: tempfile.TemporaryDirectory[str]

    @classmethod
    def setUpClass(cls) -> None:
        binary = Path(os.environ.get("RAFTCRON_BIN") or ROOT / "bin" / "raftcron")
        if not binary.is_file():
            why = f"no raftcron binary at {binary}: run `make build` or set RAFTCRON_BIN"
            if os.environ.get("CI") == "true":
                raise AssertionError(why)
            raise unittest.SkipTest(why)
        cls.tmp = tempfile.TemporaryDirectory()
        cls.node = Node(binary, Path(cls.tmp.name))

    @classmethod
    def tearDownClass(cls) -> None:
        cls.node.stop()
        cls.tmp.cleanup()

    def worker(self, wid: str, **opts: Any) -> Worker:
        """A worker of pool p, knowing a dead address before the node's."""
        return Worker("p", None, ["127.0.0.1:1", self.node.http], id=wid, **opts)

    def start(self, w: Worker) -> None:
        """Run w in a thread until the test ends."""
        t = threading.Thread(target=w.run, daemon=True)
        t.start()
        self.addCleanup(t.join, 30)
        self.addCleanup(w.stop)

    def test_heartbeats_keep_a_long_attempt_and_progress_reaches_run_get(self) -> None:
        self.node.job("long")
        seen = threading.Event()
        tokens: list[int] = []
        cancelled: list[str] = []
        w = self.worker("long-1", keys=[KEY])

        @w.handler("long")
        def long(ctx: Context) -> str:
            tokens.append(ctx.token)
            began = time.monotonic()
            ctx.progress(50, "half way")
            seen.wait(20)
            while time.monotonic() - began < 4 * LEASE:  # four leases, kept by heartbeats
                if ctx.cancelled.wait(0.1):
                    cancelled.append(ctx.cancel_reason)
                    ctx.check()
            return "done"

        self.start(w)
        run_id = self.node.trigger("long")

        def progress_shown() -> bool:
            a = self.node.run_get(run_id)["attempts"][-1]
            return bool(a.get("progress") == 50 and a.get("progress_message") == "half way")
        wait_for("progress 50 'half way' in run get", progress_shown)
        seen.set()
        wait_for("the run to succeed", lambda: self.node.state(run_id) == "succeeded")
        run = self.node.run_get(run_id)
        self.assertEqual(cancelled, [])
        self.assertEqual([a["token"] for a in run["attempts"]], tokens)
        self.assertEqual(len(tokens), 1, "one attempt, kept for four leases")
        self.assertEqual(run["attempts"][0]["output"], "done")

    def test_silent_worker_loses_its_attempt_and_its_handler_is_cancelled(self) -> None:
        env = {**os.environ, "PYTHONPATH": str(PYTHON_DIR), "E2E_POOL": "p", "E2E_WORKER_ID": "silent-1",
               "E2E_ADDRS": self.node.http, "E2E_SINK": "http://127.0.0.1:1"}
        env.pop("RAFTCRON_BIN", None)
        # The e2e worker program serves the handler e2e-sink: give the job that name.
        self.node.call("PUT", "/v1/jobs/slow", {"name": "slow", "schedule": "@yearly", "worker": {
            "pool": "p", "handler": "e2e-sink", "payload": json.dumps({"run_ms": 600_000})}})
        silent = subprocess.Popen([sys.executable, str(PYTHON_DIR / "tests" / "e2e_worker.py")], env=env,
                                  stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True)
        self.addCleanup(lambda: silent.stdout.close() if silent.stdout else None)
        self.addCleanup(silent.wait, 10)
        self.addCleanup(silent.kill)
        lines: list[str] = []
        threading.Thread(target=lambda: lines.extend(iter(silent.stdout.readline, "")) if silent.stdout else None,
                         daemon=True).start()
        run_id = self.node.trigger("slow")
        wait_for("the first worker to start it", lambda: any(l.startswith(f"start {run_id} ") for l in lines))
        first = int(next(l for l in lines if l.startswith(f"start {run_id} ")).split()[2])

        # It stops heartbeating: another worker gets the run under a larger token.
        silent.send_signal(signal.SIGSTOP)
        taken: list[int] = []
        w = self.worker("other-1")

        @w.handler("e2e-sink")
        def other(ctx: Context) -> None:
            taken.append(ctx.token)

        self.start(w)
        wait_for("the run re-dispatched to the other worker", lambda: bool(taken), 10 * LEASE + 10)
        self.assertGreater(taken[0], first)
        wait_for("the run to succeed", lambda: self.node.state(run_id) == "succeeded")

        # The old token's heartbeat is refused...
        code, doc = self.node.status_of(f"/v1/attempts/{run_id}/{first}:heartbeat", {})
        self.assertEqual(code, 409, doc)
        reasons = [d.get("reason") for d in doc.get("details", [])]
        self.assertIn("SUPERSEDED", reasons, doc)
        # ...and the SDK cancels the handler once the silent worker runs again.
        silent.send_signal(signal.SIGCONT)
        wait_for("the silent worker's handler cancelled",
                 lambda: any(l.startswith(f"cancelled {run_id} {first} superseded") for l in lines))
        self.assertFalse(any(l.startswith(f"wrote {run_id} {first}") for l in lines), lines)

    def test_a_cancelled_run_cancels_its_handler(self) -> None:
        self.node.job("stop-me")
        reasons: list[str] = []
        started = threading.Event()
        w = self.worker("cancel-1")

        @w.handler("stop-me")
        def stop_me(ctx: Context) -> None:
            started.set()
            ctx.cancelled.wait(30)
            reasons.append(ctx.cancel_reason)
            ctx.check()

        self.start(w)
        run_id = self.node.trigger("stop-me")
        self.assertTrue(started.wait(20))
        self.node.call("POST", f"/v1/runs/{run_id}:cancel", {})
        wait_for("the handler cancelled", lambda: bool(reasons))
        self.assertEqual(reasons, ["superseded: cancelled"])
        wait_for("the run cancelled", lambda: self.node.state(run_id) == "cancelled")

    def test_an_offer_with_a_bad_signature_is_not_run(self) -> None:
        self.node.job("forged")
        ran: list[int] = []
        w = self.worker("forged-1", keys=["another-key-another-key-another-key"])

        @w.handler("forged")
        def forged(ctx: Context) -> None:
            ran.append(ctx.token)

        self.start(w)
        run_id = self.node.trigger("forged")
        wait_for("the run to fail", lambda: self.node.state(run_id) == "failed")
        self.assertEqual(ran, [])
        self.assertIn("bad signature", self.node.run_get(run_id)["attempts"][0]["detail"])

    def test_a_stopping_worker_hands_back_what_it_runs(self) -> None:
        self.node.job("handed")
        started = threading.Event()
        first = self.worker("stopping-1", stop_grace=0.2)
        tokens: list[int] = []

        @first.handler("handed")
        def handed(ctx: Context) -> None:
            tokens.append(ctx.token)
            started.set()
            ctx.cancelled.wait(30)
            ctx.check()

        self.start(first)
        run_id = self.node.trigger("handed")
        self.assertTrue(started.wait(20))
        first.stop()
        second = self.worker("stopping-2")
        second.handler("handed")(lambda ctx: tokens.append(ctx.token))
        self.start(second)
        wait_for("the run to succeed on the second worker", lambda: self.node.state(run_id) == "succeeded")
        self.assertEqual(len(tokens), 2)
        self.assertGreater(tokens[1], tokens[0])
        given_back, rerun = self.node.run_get(run_id)["attempts"]
        self.assertEqual((given_back["state"], rerun["kind"]), ("superseded", "redispatch"))


    def test_the_readme_example(self) -> None:
        """examples/worker.py, as the READMEs show it, on this node: it charges once, with
        the attempt's token, and stops on SIGTERM."""
        source = (PYTHON_DIR / "examples" / "worker.py").read_text()
        region = source.split("# [docs:python-worker]\n")[1].split("# [/docs:python-worker]")[0]
        for readme in (ROOT / "README.md", PYTHON_DIR / "README.md"):
            self.assertIn(f"```python\n{region}```", readme.read_text(), f"{readme} does not show examples/worker.py")
        tmp = Path(self.node_tmp())
        sqlite3.connect(tmp / "billing.db").execute("CREATE TABLE charges (run TEXT, body TEXT)").connection.close()
        source = source.replace("127.0.0.1:8001", self.node.http).replace("127.0.0.1:8002", "127.0.0.1:1")
        env = {**os.environ, "PYTHONPATH": str(PYTHON_DIR)}
        env.pop("RAFTCRON_TOKEN", None)
        proc = subprocess.Popen([sys.executable, "-c", source], cwd=tmp, env=env,
                                stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        self.addCleanup(proc.wait, 10)
        self.addCleanup(proc.kill)
        self.node.job("charge", payload='{"amount": "12.50"}', pool="billing")
        run_id = self.node.trigger("charge")
        wait_for("the example to charge", lambda: self.node.state(run_id) == "succeeded")
        run = self.node.run_get(run_id)
        self.assertEqual(run["attempts"][0]["output"], "charged")
        rows = sqlite3.connect(tmp / "billing.db").execute("SELECT run, body FROM charges").fetchall()
        self.assertEqual(rows, [(f"charge/manual/{run_id}", '{"amount": "12.50"}')])
        proc.send_signal(signal.SIGTERM)
        self.assertEqual(proc.wait(20), 0, "a SIGTERM stops the worker cleanly")

    def node_tmp(self) -> str:
        d = tempfile.TemporaryDirectory()
        self.addCleanup(d.cleanup)
        return d.name


if __name__ == "__main__":
    unittest.main()

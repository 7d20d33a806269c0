"""The worker SDK's parts that need no node: offer signatures (docs/workers.md's test
vector), following the leader past a node that answers NOT_LEADER, 409 SUPERSEDED,
outcomes reported many to a call (and one by one to nodes without batchComplete), and
the rules of its arguments."""

from __future__ import annotations

import json
import threading
import time
import unittest
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any, Callable

from raftcron import worker
from raftcron.worker import Context, Superseded, Worker, _Completer, _Outcome
from test_worker_node import wait_for

KEY = "n3w-key-n3w-key-n3w-key-n3w-key-n3w-key="
SIGNATURE = "v2=SxehAqPD3v-Ma8D3j2rNJqgTbxPWiwSSAhmNlSkADhg"


def offer_context(**changes: Any) -> Context:
    """The offer of docs/workers.md."""
    fields: dict[str, Any] = dict(run_id="charge-7", job="charge", slot="2026-11-22T01:02:03Z", attempt=1,
                                  token=42, idempotency_key="charge/2026-11-22T01:02:03Z", handler="charge",
                                  payload='{"mode":"full"}', env={}, deadline=0.0)
    fields.update(changes)
    return Context(**fields)


class SignatureTest(unittest.TestCase):
    def setUp(self) -> None:
        self.w = Worker("billing", None, ["127.0.0.1:1"], id="w1", keys=[KEY])
        self.w.handler("charge")(lambda ctx: None)

    def test_the_documented_vector_verifies(self) -> None:
        self.assertEqual(self.w._refusal(offer_context(), SIGNATURE), "")

    def test_a_changed_offer_or_no_signature_is_refused(self) -> None:
        for ctx, sig in [(offer_context(token=43), SIGNATURE), (offer_context(payload="{}"), SIGNATURE),
                         (offer_context(attempt=2), SIGNATURE), (offer_context(), "")]:
            with self.subTest(ctx=ctx, sig=sig):
                self.assertEqual(self.w._refusal(ctx, sig), "bad signature")

    def test_an_unknown_handler_is_refused(self) -> None:
        self.assertIn("no handler 'refund'", self.w._refusal(offer_context(handler="refund"), SIGNATURE))


Answer = Callable[[str, Any], "tuple[int, dict[str, Any]]"]


class Fake(BaseHTTPRequestHandler):
    """Answers every POST with the server's answer: a (status, body), or a function of the
    path and the request's JSON giving one. Keeps each call's path and JSON."""

    def do_POST(self) -> None:
        server: Any = self.server
        request = json.loads(self.rfile.read(int(self.headers.get("Content-Length", 0))) or b"{}")
        with server.lock:  # calls[i] and bodies[i] are one request's
            server.calls.append(self.path)
            server.bodies.append(request)
        answer = server.answer
        status, body = answer(self.path, request) if callable(answer) else answer
        data = json.dumps(body).encode()
        self.send_response(status)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)

    def log_message(self, *args: Any) -> None:
        pass


def fake(status: int, body: dict[str, Any], answer: Answer | None = None) -> Any:
    srv: Any = ThreadingHTTPServer(("127.0.0.1", 0), Fake)
    srv.answer, srv.calls, srv.bodies, srv.lock = answer or (status, body), [], [], threading.Lock()
    threading.Thread(target=srv.serve_forever, daemon=True).start()
    return srv


NOT_LEADER = {"code": 14, "message": "not the leader", "details": [
    {"@type": "type.googleapis.com/google.rpc.ErrorInfo", "reason": "NOT_LEADER", "domain": "raftcron.io"}]}


class ClientTest(unittest.TestCase):
    def serve(self, status: int, body: dict[str, Any]) -> Any:
        srv = fake(status, body)
        self.addCleanup(srv.server_close)
        self.addCleanup(srv.shutdown)
        return srv

    def client(self, *servers: Any) -> worker._Client:
        return worker._Client([f"127.0.0.1:{s.server_address[1]}" for s in servers], "secret", None)

    def test_moves_on_from_a_node_without_a_leader(self) -> None:
        follower = self.serve(503, NOT_LEADER)
        leader = self.serve(200, {"lease": "10s"})
        c = self.client(follower, leader)
        doc = c.call("/v1/attempts/r/1:heartbeat", {}, deadline=time.monotonic() + 10)
        self.assertEqual(doc, {"lease": "10s"})
        self.assertEqual((len(follower.calls), len(leader.calls)), (1, 1))
        c.call("/v1/attempts/r/1:heartbeat", {}, deadline=time.monotonic() + 10)
        self.assertEqual((len(follower.calls), len(leader.calls)), (1, 2), "it stays with the node that answered")

    def test_superseded_names_why(self) -> None:
        srv = self.serve(409, {"code": 10, "message": "superseded", "details": [
            {"@type": "type.googleapis.com/google.rpc.ErrorInfo", "reason": "SUPERSEDED", "domain": "raftcron.io",
             "metadata": {"why": "lease_expired"}}]})
        with self.assertRaises(Superseded) as got:
            self.client(srv).call("/v1/attempts/r/1:heartbeat", {}, deadline=time.monotonic() + 10)
        self.assertEqual(got.exception.why, "lease_expired")
        self.assertEqual(len(srv.calls), 1, "a refusal is not retried")

    def test_gives_up_at_the_deadline(self) -> None:
        srv = self.serve(503, NOT_LEADER)
        with self.assertRaises(worker._Unreachable):
            self.client(srv).call("/v1/attempts/r/1:heartbeat", {}, deadline=time.monotonic() + 0.5)
        self.assertGreater(len(srv.calls), 1)


BATCH = "/v1/attempts:batchComplete"


def outcome(run_id: str, token: int, what: str = "succeeded") -> _Outcome:
    return _Outcome(run_id, str(token), {"outcome": what}, time.monotonic() + 10)


def batched(srv: Any) -> list[dict[str, Any]]:
    """Every outcome the batch calls carried, in order."""
    with srv.lock:
        return [o for path, body in zip(srv.calls, srv.bodies) if path == BATCH for o in body["outcomes"]]


def carried(srv: Any) -> list[tuple[str, str, str]]:
    """(run_id, token, outcome) of every outcome the batch calls carried, in order."""
    return [(o["run_id"], o["token"], o["outcome"]) for o in batched(srv)]


def taken(request: Any) -> tuple[int, dict[str, Any]]:
    return 200, {"results": [{"taken": True} for _ in request["outcomes"]]}


class BatchTest(unittest.TestCase):
    def serve(self, answer: Answer) -> Any:
        srv = fake(0, {}, answer)
        self.addCleanup(srv.server_close)
        self.addCleanup(srv.shutdown)
        return srv

    def completer(self, srv: Any) -> _Completer:
        c = _Completer("w1", worker._Client([f"127.0.0.1:{srv.server_address[1]}"], "secret", None))
        self.addCleanup(c.close)
        return c

    def report(self, c: _Completer, srv: Any, *outcomes: _Outcome) -> list[threading.Thread]:
        """Report each outcome from a thread of its own, as attempts do, in order: each one
        queued or sent before the next."""
        threads = []
        for o in outcomes:
            t = threading.Thread(target=c.report, args=(o,), daemon=True)
            t.start()
            threads.append(t)

            def queued() -> bool:
                with c._cond:
                    if any(q is o for q in c._queue):
                        return True
                return o.run_id in [r for r, _, _ in carried(srv)]
            wait_for(f"{o} queued", queued)
        return threads

    def held_first_batch(self, gate: threading.Event, then: Answer) -> Answer:
        """An answer that holds the first batch call until gate is set."""
        first = threading.Lock()

        def answer(path: str, request: Any) -> tuple[int, dict[str, Any]]:
            if path == BATCH and first.acquire(blocking=False):
                gate.wait(10)
            return then(path, request)
        return answer

    def test_attempts_ending_together_are_reported_in_few_calls(self) -> None:
        n, gate, quiet = 50, threading.Event(), threading.Event()
        self.addCleanup(quiet.set)
        offered = threading.Lock()

        def nodes(path: str, request: Any) -> tuple[int, dict[str, Any]]:
            if path.endswith(":poll"):
                if not offered.acquire(blocking=False):
                    quiet.wait(5)
                    return 200, {"offers": []}
                return 200, {"offers": [{"run_id": f"run-{i}", "job": "j", "slot": "2026-11-22T01:02:03Z",
                                         "attempt": 1, "token": str(100 + i), "handler": "h",
                                         "lease": "10s", "limit": "60s"} for i in range(n)]}
            if path.endswith(":heartbeat"):
                return 200, {"lease": "10s"}
            if path == BATCH:
                return taken(request)
            return 404, {"message": f"no {path} here"}
        srv = self.serve(self.held_first_batch(gate, nodes))
        w = Worker("p", None, [f"127.0.0.1:{srv.server_address[1]}"], id="w1", concurrency=n, wait=1)
        started, release = threading.Semaphore(0), threading.Event()

        @w.handler("h")
        def h(ctx: Context) -> str:
            started.release()
            release.wait(10)
            return f"out-{ctx.token}"

        runner = threading.Thread(target=w.run, daemon=True)
        runner.start()
        self.addCleanup(runner.join, 10)
        self.addCleanup(w.stop)
        for _ in range(n):
            self.assertTrue(started.acquire(timeout=10), "every offer's handler started")
        release.set()
        # The first outcome goes at once; the others queue behind that call.
        wait_for("every outcome sent or queued",
                 lambda: BATCH in srv.calls and len(carried(srv)) + len(w._completer._queue) == n)
        gate.set()
        wait_for("every outcome's slot freed", lambda: len(carried(srv)) == n and not w._running)
        self.assertEqual(srv.calls.count(BATCH), 2, srv.calls)
        self.assertNotIn(True, [p.endswith(":complete") for p in srv.calls], "no outcome went one by one")
        self.assertEqual(sorted((o["run_id"], o["token"], o["outcome"], o["output"]) for o in batched(srv)),
                         sorted((f"run-{i}", str(100 + i), "succeeded", f"out-{100 + i}") for i in range(n)))

    def test_results_go_to_their_attempts(self) -> None:
        gate = threading.Event()
        why = {"late": {"superseded": "lease_expired"}, "other": {"error": "offered to another token"}}

        def nodes(path: str, request: Any) -> tuple[int, dict[str, Any]]:
            return 200, {"results": [why.get(o["run_id"], {"taken": True}) for o in request["outcomes"]]}
        srv = self.serve(self.held_first_batch(gate, nodes))
        c = self.completer(srv)
        with self.assertLogs("raftcron.worker", "INFO") as logs:
            threads = self.report(c, srv, outcome("first", 1))
            wait_for("the first call", lambda: BATCH in srv.calls)
            threads += self.report(c, srv, outcome("late", 2), outcome("ok", 3), outcome("other", 4, "failed"))
            gate.set()
            for t in threads:
                t.join(10)
                self.assertFalse(t.is_alive(), "every report returned")
        self.assertEqual(carried(srv), [("first", "1", "succeeded"), ("late", "2", "succeeded"),
                                        ("ok", "3", "succeeded"), ("other", "4", "failed")])
        self.assertEqual(srv.calls, [BATCH, BATCH])
        self.assertEqual(logs.output, [
            "INFO:raftcron.worker:raftcron worker w1: late token 2: outcome succeeded superseded (lease_expired)",
            "ERROR:raftcron.worker:raftcron worker w1: other token 4: outcome failed not reported: "
            "offered to another token"])

    def test_nodes_without_the_call_get_outcomes_one_by_one(self) -> None:
        for status in (404, 501):
            with self.subTest(status=status):
                def nodes(path: str, request: Any) -> tuple[int, dict[str, Any]]:
                    if path == BATCH:
                        return status, {"code": 12, "message": "unimplemented"}
                    return 200, {}
                srv = self.serve(nodes)
                c = self.completer(srv)
                c.report(outcome("r1", 1))
                c.report(outcome("r2", 2, "failed"))  # within the while: no batch call tried
                self.assertEqual(srv.calls, [BATCH, "/v1/attempts/r1/1:complete", "/v1/attempts/r2/2:complete"])
                self.assertEqual(srv.bodies[1:], [{"outcome": "succeeded"}, {"outcome": "failed"}])
                c._one_by_one_until = time.monotonic()  # the while is over: the batch call again
                c.report(outcome("r3", 3))
                self.assertEqual(srv.calls[3:], [BATCH, "/v1/attempts/r3/3:complete"])

    def test_a_refused_batch_is_sent_one_by_one_once(self) -> None:
        def nodes(path: str, request: Any) -> tuple[int, dict[str, Any]]:
            if path == BATCH:
                return 400, {"code": 3, "message": "outcomes[0].outcome: bad"}
            return 200, {}
        srv = self.serve(nodes)
        c = self.completer(srv)
        c.report(outcome("r1", 1))
        c.report(outcome("r2", 2))
        self.assertEqual(srv.calls, [BATCH, "/v1/attempts/r1/1:complete", BATCH, "/v1/attempts/r2/2:complete"])

    def test_a_503_is_retried(self) -> None:
        answers = [(503, NOT_LEADER)]

        def nodes(path: str, request: Any) -> tuple[int, dict[str, Any]]:
            return answers.pop() if answers else taken(request)
        srv = self.serve(nodes)
        c = self.completer(srv)
        with self.assertNoLogs("raftcron.worker", "WARNING"):
            c.report(outcome("r1", 1))
        self.assertEqual(srv.calls, [BATCH, BATCH])
        self.assertEqual(carried(srv), [("r1", "1", "succeeded")] * 2)

    def test_close_reports_what_is_queued_first(self) -> None:
        gate = threading.Event()
        srv = self.serve(self.held_first_batch(gate, lambda path, request: taken(request) if path == BATCH
                                               else (200, {})))
        c = self.completer(srv)
        self.report(c, srv, outcome("r1", 1), outcome("r2", 2))
        wait_for("the first call", lambda: BATCH in srv.calls)
        answered: list[int] = []

        def close() -> None:
            c.close()
            answered.append(len(carried(srv)))
        closing = threading.Thread(target=close, daemon=True)
        closing.start()
        wait_for("the close", lambda: c._closed)
        gate.set()
        closing.join(10)
        self.assertEqual(answered, [2], "close returned once both outcomes were sent")
        c.report(outcome("r3", 3))
        self.assertEqual(srv.calls[-1], "/v1/attempts/r3/3:complete", "once closed, outcomes go one by one")


class ArgumentsTest(unittest.TestCase):
    def test_bad_arguments_name_the_field(self) -> None:
        cases: list[tuple[dict[str, Any], str]] = [({"id": "W 1"}, "id"), ({"concurrency": 0}, "concurrency"),
                                                   ({"wait": 90}, "wait")]
        for kwargs, field in cases:
            with self.subTest(field=field), self.assertRaisesRegex(ValueError, f"^{field}:"):
                Worker("p", None, ["n1:8001"], **kwargs)
        with self.assertRaisesRegex(ValueError, "^pool:"):
            Worker("P", None, ["n1:8001"], id="w1")
        with self.assertRaisesRegex(ValueError, "^addrs:"):
            Worker("p", None, [], id="w1")

    def test_progress_is_bounded(self) -> None:
        ctx = offer_context()
        with self.assertRaisesRegex(ValueError, "^progress:"):
            ctx.progress(101)
        ctx.progress(100, "é" * 200)
        report = ctx._take_report()
        assert report is not None
        self.assertEqual(report[0], 100)
        self.assertLessEqual(len(report[1].encode()), 256)

    def test_durations(self) -> None:
        self.assertEqual(worker._duration("0.500s"), 0.5)
        self.assertEqual(worker._duration("10s"), 10.0)
        with self.assertRaises(ValueError):
            worker._duration("1m")


if __name__ == "__main__":
    unittest.main()

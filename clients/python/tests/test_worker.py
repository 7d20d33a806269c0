"""The worker SDK's parts that need no node: offer signatures (docs/workers.md's test
vector), following the leader past a node that answers NOT_LEADER, 409 SUPERSEDED, and
the rules of its arguments."""

from __future__ import annotations

import json
import threading
import time
import unittest
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

from raftcron import worker
from raftcron.worker import Context, Superseded, Worker

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


class Fake(BaseHTTPRequestHandler):
    """Answers every POST with the server's (status, body)."""

    def do_POST(self) -> None:
        server: Any = self.server
        server.calls.append(self.path)
        self.rfile.read(int(self.headers.get("Content-Length", 0)))
        status, body = server.answer
        data = json.dumps(body).encode()
        self.send_response(status)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)

    def log_message(self, *args: Any) -> None:
        pass


def fake(status: int, body: dict[str, Any]) -> Any:
    srv: Any = ThreadingHTTPServer(("127.0.0.1", 0), Fake)
    srv.answer, srv.calls = (status, body), []
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

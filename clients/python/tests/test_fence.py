"""Unit tests, the shared conformance vectors, and the SQL fence on SQLite and PostgreSQL."""

from __future__ import annotations

import json
import os
import runpy
import sqlite3
import tempfile
import threading
import unittest
from pathlib import Path
from typing import Any, Callable, NoReturn

from raftcron import fence

ROOT = Path(__file__).resolve().parents[3]
VECTORS = json.loads((ROOT / "fence" / "testdata" / "vectors.json").read_text())
KEYS: dict[str, str] = VECTORS["keys"]


def unavailable(test: unittest.TestCase, why: str) -> NoReturn:
    """Skip locally, fail under CI (where every database must be there)."""
    if os.environ.get("CI") == "true":
        test.fail(why)
    raise unittest.SkipTest(why)


def parse(v: dict[str, Any]) -> fence.Run:
    if v["transport"] == "exec":
        return fence.parse_env(v["fields"])
    return fence.parse_headers(v["fields"])


def verdict(v: dict[str, Any]) -> str:
    keys = [KEYS[name] for name in v["verifier"]["keys"]]
    verifier = fence.Verifier(keys, accept_v1=v["verifier"]["accept_v1"],
                              jobs=v["verifier"]["jobs"], url_prefix=v["verifier"]["url_prefix"])
    try:
        run = parse(v)
        verifier.verify(run, v["signature"], v.get("method", ""), v.get("url", ""), v["body"].encode())
    except fence.Refused as r:
        return r.verdict
    return "ok"


class SignatureVectors(unittest.TestCase):
    def test_canonical_messages(self) -> None:
        for v in VECTORS["signatures"]:
            with self.subTest(v["name"]):
                if "canonical_v2" not in v:
                    self.assertRaises(fence.Malformed, parse, v)
                    continue
                run = parse(v)
                self.assertEqual(fence.canonical_v1(run).decode(), v["canonical_v1"])
                self.assertEqual(fence.canonical_v2(run, v.get("method", ""), v.get("url", ""),
                                                    v["body"].encode()).decode(), v["canonical_v2"])

    def test_verdicts(self) -> None:
        for v in VECTORS["signatures"]:
            with self.subTest(v["name"]):
                self.assertEqual(verdict(v), v["verdict"])

    def test_sign_v2_matches_genuine_vectors(self) -> None:
        v = next(v for v in VECTORS["signatures"] if v["name"] == "v2 genuine")
        got = fence.sign_v2(KEYS["new"].encode(), parse(v), v["method"], v["url"], v["body"].encode())
        self.assertEqual(got, v["signature"])


class ParseAndKeys(unittest.TestCase):
    def test_headers_any_case_and_pairs(self) -> None:
        v = VECTORS["signatures"][0]
        lower = {k.lower(): val for k, val in v["fields"].items()}
        pairs = [(k.encode(), val.encode()) for k, val in v["fields"].items()]
        self.assertEqual(fence.parse_headers(lower), fence.parse_headers(pairs))

    def test_refuses_bad_fields_naming_them(self) -> None:
        good = dict(VECTORS["signatures"][0]["fields"])
        for name, value in [("X-Raftcron-Fencing-Token", "-1"), ("X-Raftcron-Job", "Billing"),
                            ("X-Raftcron-Scheduled-At", "2026-11-22T01:02:03+01:00"),
                            ("X-Raftcron-Attempt", "0"), ("Idempotency-Key", "a\nb"),
                            ("X-Raftcron-Run-Id", "")]:
            with self.subTest(name):
                with self.assertRaises(fence.Malformed) as cm:
                    fence.parse_headers({**good, name: value})
                self.assertEqual(cm.exception.field, name)
                self.assertEqual(cm.exception.status, 400)
        twice = list(good.items()) + [("X-Raftcron-Job", "other")]
        self.assertRaises(fence.Malformed, fence.parse_headers, twice)

    def test_key_file(self) -> None:
        keys = fence.parse_keys(f"# rotating\n\n  {KEYS['new']}  \n{KEYS['old']}\n")
        self.assertEqual(keys, [KEYS["new"].encode(), KEYS["old"].encode()])
        for bad in ["", "short\n", "\n".join([KEYS["new"]] * 3)]:
            self.assertRaises(ValueError, fence.parse_keys, bad)

    def test_check_request_refuses_two_signatures(self) -> None:
        v = VECTORS["signatures"][0]
        pairs = list(v["fields"].items()) + [("X-Raftcron-Signature", v["signature"])] * 2
        verifier = fence.Verifier([KEYS["new"]])
        with self.assertRaises(fence.BadSignature):
            verifier.check_request(v["method"], v["url"], pairs, v["body"].encode())


def run_of(step: dict[str, Any]) -> fence.Run:
    return fence.Run(step["token"], "nightly-billing", "r", step["key"], "2026-11-22T01:00:00Z", 1)


class SQLFenceCases:
    """The fence vectors and the rollback rule, on one database (the subclasses)."""

    conn: Any
    param: str

    def reset(self) -> None:
        cur = self.conn.cursor()
        for table in ("raftcron_fences", "raftcron_applied_runs", "ledger"):
            cur.execute(f"DELETE FROM {table}")
        self.conn.commit()

    def deliver(self, step: dict[str, Any], fail: bool = False) -> str:
        def write(cur: Any) -> None:
            cur.execute(f"INSERT INTO ledger (idempotency_key) VALUES ({self.param})", (step["key"],))
            if fail:
                raise RuntimeError("the write failed")
        try:
            fence.fence_sql(self.conn, run_of(step), write, scope=step["scope"])
        except (fence.Stale, fence.Duplicate) as r:
            return r.verdict
        return "applied"

    def ledger(self) -> list[str]:
        cur = self.conn.cursor()
        cur.execute("SELECT idempotency_key FROM ledger ORDER BY id")
        return [row[0] for row in cur.fetchall()]

    def test_fence_vectors(self) -> None:
        for v in VECTORS["fence"]:
            with self.subTest(v["name"]):  # type: ignore[attr-defined]
                self.reset()
                got = [self.deliver(step) for step in v["steps"]]
                self.assertEqual(got, [s["want"] for s in v["steps"]])  # type: ignore[attr-defined]
                self.assertEqual(self.ledger(), v["applied"])  # type: ignore[attr-defined]

    def test_failed_write_commits_nothing(self) -> None:
        self.reset()
        step = {"scope": "nightly-billing", "token": 7, "key": "k/1"}
        self.assertRaises(RuntimeError, self.deliver, step, True)  # type: ignore[attr-defined]
        self.assertEqual(self.ledger(), [])  # type: ignore[attr-defined]
        self.assertEqual(self.deliver(step), "applied")  # type: ignore[attr-defined]
        with self.assertRaises(fence.Stale) as cm:  # type: ignore[attr-defined]
            fence.fence_sql(self.conn, run_of({**step, "token": 6, "key": "k/2"}), lambda cur: None)
        self.assertEqual(cm.exception.body["highest"], 7)  # type: ignore[attr-defined]


class SQLiteFence(SQLFenceCases, unittest.TestCase):
    param = "?"

    def setUp(self) -> None:
        d = tempfile.TemporaryDirectory()
        self.addCleanup(d.cleanup)
        self.conn = sqlite3.connect(os.path.join(d.name, "service.db"), timeout=20)
        self.addCleanup(self.conn.close)
        fence.create_tables(self.conn)
        self.conn.execute("CREATE TABLE ledger (id INTEGER PRIMARY KEY AUTOINCREMENT, idempotency_key TEXT)")
        self.conn.commit()


class PostgresFence(SQLFenceCases, unittest.TestCase):
    param = "%s"

    def setUp(self) -> None:
        url = os.environ.get("RAFTCRON_TEST_POSTGRES")
        if not url:
            unavailable(self, "RAFTCRON_TEST_POSTGRES is not set: run through `make clients-test`")
        try:
            import psycopg2  # type: ignore
        except ImportError:
            unavailable(self, "psycopg2 is not installed (Debian: python3-psycopg2; use /usr/bin/python3)")
        admin = psycopg2.connect(url)
        admin.autocommit = True
        name = f"py_{os.getpid()}_{threading.get_ident() % 100000}_{id(self) % 100000}"
        admin.cursor().execute(f"CREATE DATABASE {name}")
        admin.close()
        self.conn = psycopg2.connect(url.replace("/postgres?", f"/{name}?"))
        self.addCleanup(self.conn.close)
        fence.create_tables(self.conn)
        self.conn.cursor().execute("CREATE TABLE ledger (id BIGSERIAL PRIMARY KEY, idempotency_key TEXT)")
        self.conn.commit()


class Example(unittest.TestCase):
    """The README's example, run as written."""

    def test_example(self) -> None:
        d = tempfile.TemporaryDirectory()
        self.addCleanup(d.cleanup)
        cwd = os.getcwd()
        os.chdir(d.name)
        self.addCleanup(os.chdir, cwd)
        Path("raftcron-fence.key").write_text(KEYS["new"] + "\n")
        sqlite3.connect("billing.db").execute("CREATE TABLE charges (run TEXT, body BLOB)")
        example = runpy.run_path(str(ROOT / "clients" / "python" / "examples" / "billing.py"))
        handle: Callable[..., tuple[int, dict[str, object]]] = example["handle"]

        url, body = "https://billing.example/hooks/charge", b'{"amount":"12.50"}'

        def request(token: int, key: bytes = KEYS["new"].encode()) -> tuple[int, dict[str, object]]:
            run = fence.Run(token, "nightly-billing", "r-1", "nightly-billing/2026-11-22T01:00:00Z",
                            "2026-11-22T01:00:00Z", 1)
            headers = {"X-Raftcron-Fencing-Token": str(token), "X-Raftcron-Job": run.job,
                       "X-Raftcron-Run-Id": run.run_id, "Idempotency-Key": run.idempotency_key,
                       "X-Raftcron-Scheduled-At": run.scheduled_at, "X-Raftcron-Attempt": "1",
                       "X-Raftcron-Signature": fence.sign_v2(key, run, "POST", url, body)}
            return handle("POST", url, headers, body)

        self.assertEqual(request(5, KEYS["forger"].encode())[0], 401)
        self.assertEqual(request(5), (200, {"status": "applied"}))
        self.assertEqual(request(6), (200, {"status": "duplicate"}))
        self.assertEqual(request(4)[0], 409)
        rows = sqlite3.connect("billing.db").execute("SELECT run, body FROM charges").fetchall()
        self.assertEqual(rows, [("nightly-billing/2026-11-22T01:00:00Z", body)])


if __name__ == "__main__":
    unittest.main()

"""A service that raftcron's job "slots" calls: it records each slot once, with the fencing
token of the attempt that applied it, in PostgreSQL (psycopg2). The signature is verified
before anything reaches the database (401), and the write goes through fence_sql, so a
paused old leader's late attempt is refused by the database (409).

    DATABASE_URL=postgres://... FENCE_KEY_FILE=raftcron-fence.key PORT=8080 python3 slots.py

It prints "listening on HOST:PORT" (PORT 0: any free port). UNFENCED=1 writes without the
fence, for the end-to-end tests' negative control only.
"""

import json
import os
from contextlib import closing
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

import psycopg2

from raftcron import fence

DATABASE_URL = os.environ["DATABASE_URL"]
UNFENCED = os.environ.get("UNFENCED") == "1"
verifier = fence.Verifier(fence.load_keys(os.environ["FENCE_KEY_FILE"]), jobs=["slots"])


class Slots(BaseHTTPRequestHandler):
    def do_POST(self) -> None:
        body = self.rfile.read(int(self.headers.get("Content-Length", 0)))
        url = f"http://{self.headers['Host']}{self.path}"
        try:
            run = verifier.check_request("POST", url, self.headers.items(), body)

            def record(cur: Any) -> None:
                cur.execute("INSERT INTO slots (slot, token) VALUES (%s, %s)", (run.scheduled_at, run.token))

            with closing(psycopg2.connect(DATABASE_URL)) as db:
                if UNFENCED:
                    with db:  # one transaction, committed on leaving
                        record(db.cursor())
                else:
                    fence.fence_sql(db, run, record)
            self.answer(200, {"status": "applied"})
        except fence.Refused as refused:
            self.answer(refused.status, refused.body)

    def answer(self, status: int, body: dict[str, Any]) -> None:
        data = json.dumps(body).encode()
        self.send_response(status)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)


if __name__ == "__main__":
    with closing(psycopg2.connect(DATABASE_URL)) as db:
        fence.create_tables(db)
        with db:
            db.cursor().execute("CREATE TABLE IF NOT EXISTS slots "
                                "(id BIGSERIAL PRIMARY KEY, slot TEXT NOT NULL, token BIGINT NOT NULL)")
    server = ThreadingHTTPServer(("127.0.0.1", int(os.environ.get("PORT", "8080"))), Slots)
    print("listening on %s:%d" % server.server_address, flush=True)
    server.serve_forever()

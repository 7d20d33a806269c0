"""The worker program of the SDKs' end-to-end test (test/e2e/sdk_workers_test.go).

It serves the handler ``e2e-sink`` of pool E2E_POOL as worker E2E_WORKER_ID, polling the
nodes at E2E_ADDRS (HTTP addresses, comma-separated). An attempt runs for the payload's
``run_ms``, reporting progress, then posts to E2E_SINK/<job> with the attempt's fencing
headers. It prints ``start``, ``wrote <status>`` and ``cancelled <why>`` lines, each with
the run ID and token, for the test to follow.
"""

from __future__ import annotations

import json
import logging
import os
import sys
import threading
import time
import urllib.error
import urllib.request

from raftcron import fence
from raftcron.worker import Context, Fenced, Worker


_out = threading.Lock()


def say(what: str, ctx: Context, detail: str = "") -> None:
    """One whole line: print() writes the text and its newline apart, which threads interleave."""
    with _out:
        sys.stdout.write(f"{what} {ctx.run_id} {ctx.token} {detail}".rstrip() + "\n")
        sys.stdout.flush()


def post(sink: str, ctx: Context) -> int:
    headers = {
        fence.HEADER_FENCING_TOKEN: str(ctx.token),
        fence.HEADER_JOB: ctx.job,
        fence.HEADER_RUN_ID: ctx.run_id,
        fence.HEADER_SCHEDULED_AT: ctx.slot,
        fence.HEADER_ATTEMPT: str(ctx.attempt),
        fence.HEADER_IDEMPOTENCY_KEY: ctx.idempotency_key,
    }
    req = urllib.request.Request(f"{sink}/{ctx.job}", data=b"", method="POST", headers=headers)
    try:
        with urllib.request.urlopen(req, timeout=5) as resp:
            return int(resp.status)
    except urllib.error.HTTPError as err:
        return err.code


def main() -> None:
    logging.basicConfig(level=logging.DEBUG, stream=sys.stderr,
                        format="%(asctime)s %(threadName)s %(levelname)s %(message)s")
    sink = os.environ["E2E_SINK"]
    worker = Worker(os.environ["E2E_POOL"], os.environ.get("E2E_TOKEN") or None,
                    os.environ["E2E_ADDRS"].split(","), id=os.environ["E2E_WORKER_ID"], concurrency=8)

    @worker.handler("e2e-sink")
    def handle(ctx: Context) -> str:
        run_ms = int(json.loads(ctx.payload or "{}").get("run_ms", 0))
        say("start", ctx)
        end = time.monotonic() + run_ms / 1000
        while (left := end - time.monotonic()) > 0:
            ctx.progress(int(100 * (1 - left * 1000 / run_ms)), f"{left:.1f}s to go")
            if ctx.cancelled.wait(min(left, 0.5)):
                say("cancelled", ctx, ctx.cancel_reason)
                ctx.check()
        status = post(sink, ctx)
        say("wrote", ctx, str(status))
        if status == 409:
            raise Fenced(f"the sink refused token {ctx.token}")
        if status != 200:
            raise RuntimeError(f"the sink answered {status}")
        return f"sink {status}"

    worker.run()


if __name__ == "__main__":
    main()

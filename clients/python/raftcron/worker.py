"""A raftcron worker over the HTTP protocol of docs/workers.md, standard library only.

    worker = Worker("billing", token, ["node1:8001", "node2:8001"])

    @worker.handler("charge")
    def charge(ctx: Context) -> None:
        ...  # fence every write with ctx.token; stop when ctx.cancelled is set

    worker.run()  # until SIGTERM or SIGINT

Each attempt runs in a thread of its own, heartbeated every third of its lease by another,
which extends the lease and carries the latest ``progress``; outcomes go many to a call
(``/v1/attempts:batchComplete``), each attempt holding its slot until its own is answered.
A heartbeat answered 409 (the attempt was superseded or cancelled), the attempt's time
limit, a lease that could not be kept and a stop all set ``ctx.cancelled``: a handler
checks it (or waits on it) between steps. Python cannot interrupt a thread, so a handler
that ignores it runs on, and its late writes are what the fencing token is for.
"""

from __future__ import annotations

import http.client
import json
import logging
import os
import random
import re
import signal
import socket
import ssl
import threading
import time
import urllib.error
import urllib.request
from collections import deque
from dataclasses import dataclass, field
from types import FrameType
from typing import Any, Callable, Mapping, Sequence

from . import fence

__all__ = ["Worker", "Context", "Handler", "Cancelled", "Fenced", "ProtocolError", "Superseded"]

log = logging.getLogger("raftcron.worker")

_ID = re.compile(r"[a-z0-9][a-z0-9._-]{0,62}")
_BACKOFF_MIN, _BACKOFF_MAX = 0.1, 5.0
_PROGRESS_EVERY = 1.0  # a progress report waits at most this long for its heartbeat
_MAX_MESSAGE = 256     # bytes of a progress message (the leader's bound)
_MAX_OUTPUT = 4096     # bytes of output and detail the leader keeps
_COMPLETE_FOR = 60.0   # how long an outcome is retried; past it, the lease decides

# Statuses that mean "ask another node": unreachable, no leader, or a node of a release
# without the protocol during a rolling upgrade.
_NEXT_NODE = frozenset({404, 500, 501, 502, 503, 504})

_BATCH_PATH = "/v1/attempts:batchComplete"
_MAX_BATCH = 1000               # outcomes in one call (the leader's bound)
_MAX_BATCH_BYTES = 2 << 20      # of JSON in one call: well within the nodes' 4 MiB body
# A node (404: its gateway has no route) or a leader (501: UNIMPLEMENTED) of a release
# without batchComplete: outcomes go one by one with :complete for _ONE_BY_ONE_FOR.
_NO_BATCH = frozenset({404, 501})
_ONE_BY_ONE_FOR = 60.0


class ProtocolError(Exception):
    """A call the node refused for good (400, 401, 403, 409 other than superseded)."""

    def __init__(self, status: int, body: Mapping[str, Any]) -> None:
        super().__init__(f"{status}: {body.get('message', body)}")
        self.status = status
        self.body = body


class Superseded(ProtocolError):
    """409 SUPERSEDED: the attempt is no longer the run's current one; ``why`` is
    ``lease_expired``, ``cancelled`` or ``not_held``."""

    def __init__(self, status: int, body: Mapping[str, Any], why: str) -> None:
        super().__init__(status, body)
        self.why = why


class Cancelled(Exception):
    """Raised by Context.check() once the attempt was told to stop."""


class Fenced(Exception):
    """Raise it from a handler when the downstream refused the attempt's token (a newer
    attempt wrote first): the outcome is ``fenced``, never retried."""


class _Unreachable(Exception):
    """No node answered before the call's deadline."""


def _duration(s: object) -> float:
    """Seconds of a proto JSON duration ("10s", "0.500s")."""
    if not isinstance(s, str) or not s.endswith("s"):
        raise ValueError(f"not a proto JSON duration: {s!r}")
    return float(s[:-1])


def _superseded_why(body: Mapping[str, Any]) -> str | None:
    for d in body.get("details") or ():
        if isinstance(d, dict) and d.get("reason") == "SUPERSEDED":
            return str((d.get("metadata") or {}).get("why", ""))
    return None


def _default_id() -> str:
    host = re.sub(r"[^a-z0-9._-]", "-", socket.gethostname().lower()).strip("-._") or "worker"
    return f"{host[:50]}-{os.getpid()}"


class _Client:
    """JSON calls to any of the nodes, moving to the next one on a connection error or a
    status that says another node may answer, with backoff (100 ms doubling to 5 s,
    jittered)."""

    def __init__(self, addrs: Sequence[str], token: str | None, ssl_context: ssl.SSLContext | None) -> None:
        if not addrs:
            raise ValueError("addrs: name at least one node's HTTP address")
        self.addrs = [a if "://" in a else "http://" + a for a in addrs]
        self.token = token
        self.ssl_context = ssl_context
        self._good = 0  # the index of the address that answered last
        self._lock = threading.Lock()

    def call(self, path: str, body: Mapping[str, Any], deadline: float, timeout: float = 10.0,
             stop: threading.Event | None = None, final: frozenset[int] = frozenset()) -> dict[str, Any]:
        """POST body to path until a node gives a definite answer or deadline (monotonic)
        passes (_Unreachable). Raise Superseded or ProtocolError on a refusal, and on the
        statuses of ``final`` that would otherwise send the call to the next node."""
        data = json.dumps(body).encode()
        backoff = _BACKOFF_MIN
        tried = False
        with self._lock:
            i = self._good
        while True:
            addr = self.addrs[i % len(self.addrs)]
            left = deadline - time.monotonic()
            if left <= 0 and tried:
                raise _Unreachable(path)
            tried = True  # once at least: a lease lapsed here may not have on the leader
            try:
                doc = self._post(addr + path, data, min(timeout, left) if left > 0 else timeout)
                with self._lock:
                    self._good = i % len(self.addrs)
                log.debug("raftcron: %s on %s: 200", path, addr)
                return doc
            except (OSError, http.client.HTTPException, ValueError) as err:
                status = err.code if isinstance(err, urllib.error.HTTPError) else 0
                if isinstance(err, urllib.error.HTTPError):
                    if status not in _NEXT_NODE or status in final:
                        self._refused(err)
                    err.close()
                log.debug("raftcron: %s on %s: %s; trying the next node", path, addr, err)
                i += 1
            pause = min(backoff * random.uniform(0.5, 1.0), max(deadline - time.monotonic(), 0))
            if stop is not None and stop.wait(pause):
                raise _Unreachable(path)
            if stop is None:
                time.sleep(pause)
            backoff = min(backoff * 2, _BACKOFF_MAX)

    def _post(self, url: str, data: bytes, timeout: float) -> dict[str, Any]:
        req = urllib.request.Request(url, data=data, method="POST",
                                     headers={"Content-Type": "application/json"})
        if self.token:
            req.add_header("Authorization", "Bearer " + self.token)
        with urllib.request.urlopen(req, timeout=timeout, context=self.ssl_context) as resp:
            doc = json.loads(resp.read() or b"{}")
        return doc if isinstance(doc, dict) else {}

    @staticmethod
    def _refused(err: urllib.error.HTTPError) -> None:
        try:
            body = json.loads(err.read() or b"{}")
        except (ValueError, OSError):
            body = {}
        if not isinstance(body, dict):
            body = {}
        why = _superseded_why(body)
        if err.code == 409 and why is not None:
            raise Superseded(err.code, body, why) from None
        raise ProtocolError(err.code, body) from None


@dataclass
class Context:
    """One attempt, as a handler sees it."""

    run_id: str
    job: str
    slot: str               # the slot's nominal time, RFC 3339 UTC
    attempt: int            # 1-based
    token: int              # the fencing token: fence every write with it
    idempotency_key: str    # the same for every attempt of the run
    handler: str
    payload: str
    env: dict[str, str]     # the attempt's RAFTCRON_* variables
    deadline: float         # time.monotonic() by which the handler must be done
    cancelled: threading.Event = field(default_factory=threading.Event)
    # Why cancelled was set: "superseded: <why>", "deadline_exceeded", "lease_lost" or
    # "stopping".
    cancel_reason: str = ""
    _report: tuple[int, str] | None = field(default=None, repr=False)
    _changed: threading.Event = field(default_factory=threading.Event, repr=False)
    _lock: threading.Lock = field(default_factory=threading.Lock, repr=False)

    @property
    def run(self) -> fence.Run:
        """The attempt's identity, for the fence kit (``fence.fence_sql(db, ctx.run, ...)``)."""
        return fence.Run(token=self.token, job=self.job, run_id=self.run_id,
                         idempotency_key=self.idempotency_key, scheduled_at=self.slot,
                         attempt=self.attempt)

    def check(self) -> None:
        """Raise Cancelled if the attempt was told to stop: call it between steps."""
        if self.cancelled.is_set():
            raise Cancelled(self.cancel_reason)

    def progress(self, percent: int, message: str = "") -> None:
        """Report how far the attempt has come (0-100) and what it is doing; never blocks.
        The latest report goes with the next heartbeat, within about a second."""
        if not 0 <= percent <= 100:
            raise ValueError(f"progress: {percent} is not within 0-100")
        msg = message.encode()[:_MAX_MESSAGE].decode(errors="ignore")
        with self._lock:
            self._report = (percent, msg)
        self._changed.set()

    def _has_report(self) -> bool:
        with self._lock:
            return self._report is not None

    def _take_report(self) -> tuple[int, str] | None:
        with self._lock:
            r, self._report = self._report, None
        return r

    def _cancel(self, reason: str) -> None:
        with self._lock:
            if not self.cancel_reason:
                self.cancel_reason = reason
        self.cancelled.set()
        self._changed.set()


Handler = Callable[[Context], "str | None"]
"""A handler returns the output to keep (or None) for success and raises for failure:
Fenced or fence.Stale is the outcome ``fenced``; any exception once ctx.cancelled is set
(Cancelled from ctx.check(), say) gives the attempt back (``cancelled``) or reports
``deadline_exceeded``."""


class Worker:
    """A worker of one pool: polls any of ``addrs`` (HTTP addresses of nodes) with the
    worker token ``token`` and runs what it is offered with the registered handlers."""

    def __init__(self, pool: str, token: str | None, addrs: Sequence[str], *,
                 id: str | None = None, tags: Mapping[str, str] | None = None,
                 concurrency: int = 4, keys: Sequence[bytes | str] | None = None,
                 accept_v1: bool = False, stop_grace: float = 10.0, wait: float = 30.0,
                 ssl_context: ssl.SSLContext | None = None) -> None:
        """``id`` names the worker (stable across restarts; default host-pid); ``keys``
        (fence.load_keys) make it refuse offers whose signature does not verify;
        ``stop_grace`` is how long a stop lets running attempts finish before it cancels
        them and hands them back."""
        self.id = id if id is not None else _default_id()
        if not _ID.fullmatch(self.id):
            raise ValueError(f"id: {self.id!r} does not match {_ID.pattern}")
        if not _ID.fullmatch(pool):
            raise ValueError(f"pool: {pool!r} does not match {_ID.pattern}")
        if not 1 <= concurrency <= 1000:
            raise ValueError(f"concurrency: {concurrency} is not within 1-1000")
        if not 0 <= wait <= 60:
            raise ValueError(f"wait: {wait} s is not within 0-60")
        self.pool = pool
        self.tags = dict(tags or {})
        self.concurrency = concurrency
        self.stop_grace = stop_grace
        self.wait = wait
        self._verifier = fence.Verifier(keys, accept_v1=accept_v1) if keys else None
        self._client = _Client(addrs, token, ssl_context)
        self._completer = _Completer(self.id, self._client)
        self._handlers: dict[str, Handler] = {}
        self._running: dict[tuple[str, int], Context] = {}
        self._cond = threading.Condition()
        self._stopping = threading.Event()

    def handler(self, name: str) -> Callable[[Handler], Handler]:
        """Register the decorated function as the handler ``name`` (a job's
        ``worker.handler``)."""
        def register(fn: Handler) -> Handler:
            if not name:
                raise ValueError("handler: a name is required")
            self._handlers[name] = fn
            return fn
        return register

    def run(self) -> None:
        """Poll and run attempts until stop() or, in the main thread, SIGTERM or SIGINT;
        then let running attempts finish for stop_grace, hand back the rest, and return."""
        if not self._handlers:
            raise ValueError("handlers: register at least one with @worker.handler(name)")
        restore: dict[signal.Signals, Any] = {}
        if threading.current_thread() is threading.main_thread():
            for sig in (signal.SIGTERM, signal.SIGINT):
                restore[sig] = signal.signal(sig, self._on_signal)
        try:
            log.info("raftcron worker %s: polling pool %s for %s", self.id, self.pool, sorted(self._handlers))
            # The poll has a thread of its own so that a stop need not wait for its answer:
            # offers that come after the stop are handed back at once.
            threading.Thread(target=self._poll_loop, name="raftcron-poll", daemon=True).start()
            while not self._stopping.wait(1.0):
                pass
            self._drain()
            self._completer.close()
        finally:
            for sig, old in restore.items():
                signal.signal(sig, old)

    def stop(self) -> None:
        """Stop taking attempts; run() returns once the running ones are done or handed back."""
        self._stopping.set()
        with self._cond:
            self._cond.notify_all()

    def _on_signal(self, signum: int, _frame: FrameType | None) -> None:
        log.info("raftcron worker %s: %s: stopping", self.id, signal.Signals(signum).name)
        self.stop()

    def _poll_loop(self) -> None:
        while not self._stopping.is_set():
            try:
                self._poll()
            except Exception:  # never leave the worker without its poll
                log.exception("raftcron worker %s: poll", self.id)
                self._stopping.wait(_BACKOFF_MAX)

    def _poll(self) -> None:
        """One poll, and the attempts it brings."""
        with self._cond:
            while len(self._running) >= self.concurrency and not self._stopping.is_set():
                self._cond.wait()
            free = self.concurrency - len(self._running)
        if self._stopping.is_set():
            return
        body = {"pool": self.pool, "tags": self.tags, "handlers": sorted(self._handlers),
                "max": free, "wait": f"{self.wait:g}s"}
        try:
            doc = self._client.call(f"/v1/workers/{self.id}:poll", body,
                                    deadline=time.monotonic() + self.wait + 30,
                                    timeout=self.wait + 10, stop=self._stopping)
        except _Unreachable:
            return
        except ProtocolError as err:
            log.error("raftcron worker %s: poll refused: %s", self.id, err)
            self._stopping.wait(_BACKOFF_MAX)
            return
        received = time.monotonic()
        for offer in doc.get("offers") or ():
            if self._stopping.is_set():
                self._hand_back(offer)
            else:
                self._start(offer, received)

    def _hand_back(self, offer: Mapping[str, Any]) -> None:
        self._completer.report(_Outcome(str(offer.get("run_id")), str(offer.get("token")),
                                        {"outcome": "cancelled", "detail": "worker stopping"},
                                        deadline=time.monotonic() + 5))

    def _start(self, offer: Mapping[str, Any], received: float) -> None:
        try:
            lease = _duration(offer.get("lease"))
            limit = _duration(offer.get("limit", "3600s"))
            ctx = Context(run_id=str(offer["run_id"]), job=str(offer["job"]), slot=str(offer["slot"]),
                          attempt=int(offer.get("attempt", 0)), token=int(offer["token"]),
                          idempotency_key=str(offer.get("idempotency_key", "")),
                          handler=str(offer.get("handler", "")), payload=str(offer.get("payload", "")),
                          env={str(k): str(v) for k, v in (offer.get("env") or {}).items()},
                          deadline=received + limit)
        except (KeyError, ValueError, TypeError) as err:
            log.error("raftcron worker %s: unreadable offer %s: %s", self.id, offer, err)
            return
        with self._cond:
            self._running[(ctx.run_id, ctx.token)] = ctx
        t = threading.Thread(target=self._attempt, args=(ctx, offer.get("signature", ""), lease, received),
                             name=f"raftcron-{ctx.run_id}-{ctx.token}", daemon=True)
        t.start()

    def _attempt(self, ctx: Context, signature: str, lease: float, received: float) -> None:
        try:
            refusal = self._refusal(ctx, signature)
            if refusal:
                log.error("raftcron worker %s: %s token %d not run: %s", self.id, ctx.run_id, ctx.token, refusal)
                self._complete(ctx, "failed", detail=refusal)
                return
            kept = _Lease(self, ctx, lease, received)
            if not kept.first():
                return
            beat = threading.Thread(target=kept.loop, name=f"raftcron-lease-{ctx.token}", daemon=True)
            beat.start()
            outcome, output, detail = self._call(ctx)
            kept.done.set()
            ctx._changed.set()
            beat.join()
            reason = ctx.cancel_reason
            if reason.startswith("superseded") and reason != "superseded: cancelled":
                return  # the leader holds it no more: nothing to report
            if reason == "deadline_exceeded" or (outcome == "failed" and ctx.cancelled.is_set()):
                # It stopped because it was told to: say why, not how.
                outcome = {"deadline_exceeded": "deadline_exceeded", "lease_lost": "failed"}.get(reason, "cancelled")
                detail = f"{reason}: {detail}"
            self._complete(ctx, outcome, output, detail)
        finally:
            with self._cond:
                self._running.pop((ctx.run_id, ctx.token), None)
                self._cond.notify_all()

    def _refusal(self, ctx: Context, signature: str) -> str:
        if ctx.handler not in self._handlers:
            return f"no handler {ctx.handler!r} on worker {self.id}"
        if self._verifier is None:
            return ""
        try:
            self._verifier.verify(ctx.run, signature, body=ctx.payload.encode())
        except fence.Refused as err:
            log.error("raftcron worker %s: %s token %d: %s", self.id, ctx.run_id, ctx.token, err)
            return "bad signature"
        return ""

    def _call(self, ctx: Context) -> tuple[str, str, str]:
        try:
            out = self._handlers[ctx.handler](ctx)
        except (Fenced, fence.Stale) as err:
            return "fenced", "", str(err)
        except Exception as err:  # a handler's failure is the attempt's outcome
            level = logging.INFO if ctx.cancelled.is_set() else logging.WARNING
            log.log(level, "raftcron worker %s: %s token %d failed: %r", self.id, ctx.run_id, ctx.token, err)
            return "failed", "", f"{type(err).__name__}: {err}"
        return "succeeded", out or "", ""

    def _complete(self, ctx: Context, outcome: str, output: str = "", detail: str = "") -> None:
        """Report the attempt's outcome; return once its result is known or given up."""
        body: dict[str, Any] = {"outcome": outcome}
        if output:
            body["output"] = output.encode()[-_MAX_OUTPUT:].decode(errors="ignore")
        if detail:
            body["detail"] = detail.encode()[:_MAX_OUTPUT].decode(errors="ignore")
        self._completer.report(_Outcome(ctx.run_id, str(ctx.token), body, time.monotonic() + _COMPLETE_FOR))

    def _drain(self) -> None:
        """Let running attempts finish for stop_grace, then cancel them, wait as long again
        for their handlers to return, and hand back those that did not."""
        if self._idle_within(self.stop_grace):
            return
        with self._cond:
            running = list(self._running.values())
        for ctx in running:
            ctx._cancel("stopping")
        if self._idle_within(self.stop_grace):
            return
        with self._cond:
            running = list(self._running.values())
        for ctx in running:
            log.warning("raftcron worker %s: %s token %d: its handler did not stop; handing it back",
                        self.id, ctx.run_id, ctx.token)
            self._complete(ctx, "cancelled", detail=f"worker {self.id} stopped; the handler did not return")

    def _idle_within(self, seconds: float) -> bool:
        end = time.monotonic() + seconds
        with self._cond:
            while self._running and time.monotonic() < end:
                self._cond.wait(end - time.monotonic())
            return not self._running


@dataclass
class _Outcome:
    """One attempt's outcome on its way to the leader: the :complete body and until when
    (time.monotonic()) it is retried."""

    run_id: str
    token: str  # decimal, as the JSON API writes tokens
    body: dict[str, Any]
    deadline: float
    done: threading.Event = field(default_factory=threading.Event, repr=False)
    one_by_one: bool = False  # set by the completer: its owner sends it with :complete
    size: int = field(init=False, default=0, repr=False)  # of its item in a batch's JSON

    def __post_init__(self) -> None:
        self.size = len(json.dumps(self.item())) + 1

    def item(self) -> dict[str, Any]:
        return {"run_id": self.run_id, "token": self.token, **self.body}

    def __str__(self) -> str:
        return f"{self.run_id} token {self.token}: outcome {self.body.get('outcome')}"


class _Completer:
    """Reports outcomes many to a call: a thread drains whatever is queued into one
    batchComplete, so that attempts ending together cost the nodes one request rather than
    one each. A node without the call (a rolling upgrade) sends the batch's outcomes back to
    their attempts' threads to go one by one with :complete, and all for a while after."""

    def __init__(self, worker_id: str, client: _Client) -> None:
        self._id = worker_id
        self._client = client
        self._queue: deque[_Outcome] = deque()
        self._cond = threading.Condition()
        self._thread: threading.Thread | None = None
        self._closed = False
        self._one_by_one_until = 0.0  # time.monotonic()

    def report(self, o: _Outcome) -> None:
        """Report o; return once its result is known or given up."""
        if self._queued(o):
            o.done.wait()
            if not o.one_by_one:
                return
        self._one(o)

    def close(self) -> None:
        """Report what is queued, then end the thread; later outcomes go one by one."""
        with self._cond:
            self._closed = True
            self._cond.notify()
            thread = self._thread
        if thread is not None:
            thread.join()

    def _queued(self, o: _Outcome) -> bool:
        with self._cond:
            if self._closed or time.monotonic() < self._one_by_one_until:
                return False
            if self._thread is None:
                self._thread = threading.Thread(target=self._loop, name="raftcron-complete", daemon=True)
                self._thread.start()
            self._queue.append(o)
            self._cond.notify()
        return True

    def _loop(self) -> None:
        while batch := self._next():
            try:
                self._send(batch)
            except Exception:  # never leave an attempt waiting for its result
                log.exception("raftcron worker %s: reporting %d outcomes", self._id, len(batch))
            finally:
                for o in batch:
                    o.done.set()

    def _next(self) -> list[_Outcome]:
        """Whatever is queued, up to a call's bounds, waiting for one; none once closed."""
        with self._cond:
            while not self._queue and not self._closed:
                self._cond.wait()
            batch: list[_Outcome] = []
            size = 0
            while self._queue and len(batch) < _MAX_BATCH:
                size += self._queue[0].size
                if batch and size > _MAX_BATCH_BYTES:
                    break
                batch.append(self._queue.popleft())
            return batch

    def _send(self, batch: list[_Outcome]) -> None:
        try:
            doc = self._client.call(_BATCH_PATH, {"outcomes": [o.item() for o in batch]},
                                    deadline=max(o.deadline for o in batch), final=_NO_BATCH)
        except ProtocolError as err:
            if err.status in _NO_BATCH:
                log.info("raftcron worker %s: the nodes lack %s (%s); reporting outcomes one by one for %gs",
                         self._id, _BATCH_PATH, err.status, _ONE_BY_ONE_FOR)
                with self._cond:
                    self._one_by_one_until = time.monotonic() + _ONE_BY_ONE_FOR
            if err.status in _NO_BATCH or err.status == 400:
                # 400: one bad outcome refuses the call; alone, it costs only its own.
                for o in batch:
                    o.one_by_one = True
                return
            for o in batch:
                self._not_reported(o, err)
            return
        except _Unreachable as err:
            for o in batch:
                self._not_reported(o, err)
            return
        results = doc.get("results")
        if not isinstance(results, list) or len(results) != len(batch):
            results = []
        for i, o in enumerate(batch):
            r = results[i] if i < len(results) and isinstance(results[i], dict) else {}
            if r.get("taken") is True:
                continue
            if r.get("superseded"):
                self._superseded(o, str(r["superseded"]))
            else:
                self._not_reported(o, r.get("error") or "the answer has no result for it")

    def _one(self, o: _Outcome) -> None:
        try:
            self._client.call(f"/v1/attempts/{o.run_id}/{o.token}:complete", o.body, deadline=o.deadline)
        except Superseded as err:
            self._superseded(o, err.why)
        except (ProtocolError, _Unreachable) as err:
            self._not_reported(o, err)

    def _superseded(self, o: _Outcome, why: str) -> None:
        log.info("raftcron worker %s: %s superseded (%s)", self._id, o, why)

    def _not_reported(self, o: _Outcome, why: object) -> None:
        log.error("raftcron worker %s: %s not reported: %s", self._id, o, why)


class _Lease:
    """Keeps one attempt's lease: a heartbeat every third of it, sooner for a progress
    report; cancels the attempt when superseded, past its limit or when its lease lapses."""

    def __init__(self, w: Worker, ctx: Context, lease: float, received: float) -> None:
        self.w, self.ctx, self.lease = w, ctx, lease
        self.expires = received + lease  # on this clock, counted from before the leader's
        self.done = threading.Event()
        self.path = f"/v1/attempts/{ctx.run_id}/{ctx.token}:heartbeat"

    def first(self) -> bool:
        """The first heartbeat, before the handler starts: it proves the attempt is still
        current and that a heartbeat comes back well within the lease. Refuse (and say so)
        an attempt whose lease cannot be kept up."""
        sent = time.monotonic()
        if not self._beat():
            if self.ctx.cancel_reason == "superseded: cancelled":
                self.w._complete(self.ctx, "cancelled", detail="cancelled before it started")
            return False
        rtt = time.monotonic() - sent
        if rtt * 3 > self.lease:
            why = (f"its lease of {self.lease:g}s cannot be kept up: a heartbeat took {rtt:.3f}s, "
                   f"and one is due every third of the lease")
            log.error("raftcron worker %s: %s token %d not run: %s", self.w.id, self.ctx.run_id, self.ctx.token, why)
            self.w._complete(self.ctx, "failed", detail=why)
            return False
        return True

    def loop(self) -> None:
        last = time.monotonic()
        while not self.done.is_set():
            if self.ctx.cancel_reason not in ("", "stopping"):
                return
            now = time.monotonic()
            if now >= self.ctx.deadline:
                self.ctx._cancel("deadline_exceeded")
                return
            due = min(last + self.lease / 3, self.ctx.deadline)
            if now < due:
                if self.ctx._has_report():
                    self.done.wait(min(due, last + _PROGRESS_EVERY) - now)
                else:
                    self.ctx._changed.clear()
                    if not self.ctx._has_report():  # a report may have come just before the clear
                        self.ctx._changed.wait(due - now)
                if not self.ctx._has_report() or time.monotonic() < last + _PROGRESS_EVERY:
                    continue
            last = time.monotonic()
            self._beat()

    def _beat(self) -> bool:
        """One heartbeat, retried until the lease runs out; False when the attempt is over."""
        report = self.ctx._take_report()
        body: dict[str, Any] = {}
        if report is not None:
            body = {"progress": report[0], "message": report[1]}
        sent = time.monotonic()
        try:
            doc = self.w._client.call(self.path, body, deadline=self.expires, timeout=max(self.lease / 3, 1.0))
        except Superseded as err:
            log.warning("raftcron worker %s: %s token %d superseded (%s): cancelling its handler",
                        self.w.id, self.ctx.run_id, self.ctx.token, err.why)
            self.ctx._cancel("superseded: " + err.why)
            return False
        except (ProtocolError, _Unreachable) as err:
            log.error("raftcron worker %s: %s token %d: lease lost: %s", self.w.id, self.ctx.run_id, self.ctx.token, err)
            self.ctx._cancel("lease_lost")
            return False
        try:
            self.lease = _duration(doc.get("lease", f"{self.lease}s"))
        except ValueError:
            pass
        self.expires = sent + self.lease
        return True

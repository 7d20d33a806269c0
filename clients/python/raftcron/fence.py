"""Verify raftcron dispatches and fence database writes on their tokens.

The same checks as Go's ``fence`` and ``fence/sqlfence`` packages (docs/fencing.md):

* :class:`Run` is the run a dispatch carries, parsed by :func:`parse_headers` (HTTP) or
  :func:`parse_env` (exec runs and worker attempts).
* :class:`Verifier` checks ``X-Raftcron-Signature`` (v2; v1 only when told to), with two
  keys during a rotation, and which jobs and URLs this service accepts.
* :func:`fence_sql` advances the scope's token, records the idempotency key and runs the
  caller's write in one DB-API transaction (PostgreSQL, MySQL/MariaDB, SQLite).

Every refusal is a :class:`Refused` with the HTTP ``status`` and JSON ``body`` to answer.
"""

from __future__ import annotations

import hashlib
import hmac
import os
import re
from base64 import urlsafe_b64decode, urlsafe_b64encode
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from datetime import datetime
from typing import Any

HEADER_FENCING_TOKEN = "X-Raftcron-Fencing-Token"
HEADER_JOB = "X-Raftcron-Job"
HEADER_RUN_ID = "X-Raftcron-Run-Id"
HEADER_SCHEDULED_AT = "X-Raftcron-Scheduled-At"
HEADER_ATTEMPT = "X-Raftcron-Attempt"
HEADER_IDEMPOTENCY_KEY = "Idempotency-Key"
HEADER_SIGNATURE = "X-Raftcron-Signature"

ENV_FENCING_TOKEN = "RAFTCRON_FENCING_TOKEN"
ENV_JOB = "RAFTCRON_JOB"
ENV_RUN_ID = "RAFTCRON_RUN_ID"
ENV_SCHEDULED_AT = "RAFTCRON_SCHEDULED_AT"
ENV_ATTEMPT = "RAFTCRON_ATTEMPT"
ENV_IDEMPOTENCY_KEY = "RAFTCRON_IDEMPOTENCY_KEY"
ENV_SIGNATURE = "RAFTCRON_SIGNATURE"

MAX_FIELD_LEN = 256
MIN_KEY_LEN = 32

_HEADER_NAMES = (HEADER_FENCING_TOKEN, HEADER_JOB, HEADER_RUN_ID, HEADER_IDEMPOTENCY_KEY,
                 HEADER_SCHEDULED_AT, HEADER_ATTEMPT)
_ENV_NAMES = (ENV_FENCING_TOKEN, ENV_JOB, ENV_RUN_ID, ENV_IDEMPOTENCY_KEY, ENV_SCHEDULED_AT,
              ENV_ATTEMPT)
_JOB = re.compile(r"[a-z0-9][a-z0-9._-]{0,62}")
_DIGITS = re.compile(r"[0-9]+")
_TIME = re.compile(r"([0-9]{4}-[0-9]{2}-[0-9]{2}T[0-9]{2}:[0-9]{2}:[0-9]{2})(?:\.([0-9]{1,9}))?Z")


class Refused(Exception):
    """A dispatch refused before or by the fence: answer ``status`` with ``body``."""

    status = 500
    verdict = "error"

    def __init__(self, message: str) -> None:
        super().__init__(message)
        self.message = message

    @property
    def body(self) -> dict[str, Any]:
        return {"error": self.message}


class Malformed(Refused):
    """A fence header or variable is missing or malformed (400); ``field`` names it."""

    status = 400
    verdict = "malformed"

    def __init__(self, field: str, reason: str) -> None:
        super().__init__(f"{field}: {reason}")
        self.field = field


class Unsigned(Refused):
    """No signature (401)."""

    status = 401
    verdict = "unsigned"


class BadSignature(Refused):
    """A signature none of the keys made for exactly this dispatch (401)."""

    status = 401
    verdict = "bad_signature"


class NotAccepted(Refused):
    """A genuine dispatch meant for another job or URL (403)."""

    status = 403
    verdict = "not_accepted"


class Stale(Refused):
    """A higher token was admitted for the scope (409: raftcron marks the attempt fenced)."""

    status = 409
    verdict = "stale"

    def __init__(self, scope: str, token: int, highest: int) -> None:
        super().__init__(f"stale fencing token {token} for scope {scope!r}: {highest} already admitted")
        self.scope, self.token, self.highest = scope, token, highest

    @property
    def body(self) -> dict[str, Any]:
        return {"error": "stale fencing token", "token": self.token, "highest": self.highest,
                "scope": self.scope}


class Duplicate(Refused):
    """The run's effect was applied before (answer 200: raftcron takes it as success)."""

    status = 200
    verdict = "duplicate"

    def __init__(self, key: str) -> None:
        super().__init__(f"duplicate idempotency key {key!r}")

    @property
    def body(self) -> dict[str, Any]:
        return {"status": "duplicate"}


@dataclass(frozen=True)
class Run:
    """The identity of one dispatched run attempt."""

    token: int            # fencing token, > 0
    job: str
    run_id: str
    idempotency_key: str  # the same for every attempt of the run
    scheduled_at: str     # RFC 3339 UTC, canonical (no trailing zeros in the fraction)
    attempt: int          # 1-based


HeaderSource = Mapping[str, str] | Iterable[tuple[str | bytes, str | bytes]]


def _values(headers: HeaderSource, name: str) -> list[str]:
    items = headers.items() if isinstance(headers, Mapping) else headers
    lower = name.lower()
    out = []
    for k, v in items:
        k = k.decode("latin-1") if isinstance(k, bytes) else k
        if k.lower() == lower:
            out.append(v.decode("latin-1") if isinstance(v, bytes) else v)
    return out


def parse_headers(headers: HeaderSource) -> Run:
    """Parse the run from request headers: a mapping (any case) or (name, value) pairs,
    str or bytes, as WSGI frameworks and ASGI scopes give them."""
    return _parse(_HEADER_NAMES, lambda name: _values(headers, name))


def parse_env(environ: Mapping[str, str] | None = None) -> Run:
    """Parse the run from an exec run's (or worker attempt's) environment."""
    env = os.environ if environ is None else environ
    return _parse(_ENV_NAMES, lambda name: [env[name]] if env.get(name) else [])


def _parse(names: Sequence[str], get: Callable[[str], list[str]]) -> Run:
    def one(name: str) -> str:
        vs = get(name)
        if not vs or vs == [""]:
            raise Malformed(name, "missing")
        if len(vs) > 1:
            raise Malformed(name, f"given {len(vs)} times, want once")
        return vs[0]

    token = _number(names[0], one(names[0]), 64)
    if token == 0:
        raise Malformed(names[0], "token 0 is never issued")
    job = one(names[1])
    if not _JOB.fullmatch(job):
        raise Malformed(names[1], "not a job name: want [a-z0-9][a-z0-9._-]{0,62}")
    run_id = _text(names[2], one(names[2]))
    key = _text(names[3], one(names[3]))
    scheduled_at = canonical_time(names[4], one(names[4]))
    attempt = _number(names[5], one(names[5]), 32)
    if attempt == 0:
        raise Malformed(names[5], "attempts are numbered from 1")
    return Run(token, job, run_id, key, scheduled_at, attempt)


def _number(field: str, s: str, bits: int) -> int:
    if not _DIGITS.fullmatch(s) or int(s) >= 1 << bits:
        raise Malformed(field, f"not an unsigned {bits}-bit integer")
    return int(s)


def _text(field: str, s: str) -> str:
    if len(s.encode("utf-8", "surrogatepass")) > MAX_FIELD_LEN:
        raise Malformed(field, f"longer than {MAX_FIELD_LEN} bytes")
    if any(ord(c) < 0x20 or ord(c) == 0x7F for c in s):
        raise Malformed(field, "contains a control character")
    return s


def canonical_time(field: str, s: str) -> str:
    """An RFC 3339 UTC time as raftcron signs it: the fraction without trailing zeros."""
    m = _TIME.fullmatch(s)
    if not m:
        raise Malformed(field, "not an RFC 3339 time in UTC (want e.g. 2026-11-22T01:02:03Z)")
    try:
        datetime.strptime(m.group(1), "%Y-%m-%dT%H:%M:%S")
    except ValueError:
        raise Malformed(field, "not a valid date and time") from None
    frac = (m.group(2) or "").rstrip("0")
    return m.group(1) + ("." + frac if frac else "") + "Z"


def canonical_v1(run: Run) -> bytes:
    """The message a v1 signature covers."""
    return "\n".join(["raftcron-signature-v1", run.job, run.run_id, str(run.token),
                      run.scheduled_at, str(run.attempt)]).encode()


def canonical_v2(run: Run, method: str = "", url: str = "", body: bytes = b"") -> bytes:
    """The message a v2 signature covers; an exec run has no method and no URL."""
    for name, value in (("method", method), ("url", url)):
        if any(ord(c) < 0x20 or ord(c) == 0x7F for c in value):
            raise BadSignature(f"{name} contains a control character")
    if bool(method) != bool(url):
        raise BadSignature("an HTTP dispatch needs both its method and its URL")
    lines = ["raftcron-signature-v2"]
    if method:
        lines += [f"method:{method}", f"url:{url}"]
    lines += [f"body-sha256:{hashlib.sha256(body).hexdigest()}", f"job:{run.job}",
              f"run-id:{run.run_id}", f"token:{run.token}", f"scheduled-at:{run.scheduled_at}",
              f"attempt:{run.attempt}", f"idempotency-key:{run.idempotency_key}"]
    return "\n".join(lines).encode()


def _mac(key: bytes, message: bytes) -> bytes:
    return hmac.new(key, message, hashlib.sha256).digest()


def _b64(b: bytes) -> str:
    return urlsafe_b64encode(b).rstrip(b"=").decode()


def sign_v2(key: bytes, run: Run, method: str = "", url: str = "", body: bytes = b"") -> str:
    """The ``v2=...`` signature a node holding ``key`` puts on this dispatch."""
    return "v2=" + _b64(_mac(key, canonical_v2(run, method, url, body)))


def parse_keys(text: str) -> list[bytes]:
    """The key file format: one key per line (the first signs, a second verifies during
    a rotation), each the line's text, at least 32 bytes; blank and # lines ignored."""
    keys = [line.strip().encode() for line in text.splitlines()]
    keys = [k for k in keys if k and not k.startswith(b"#")]
    if not 1 <= len(keys) <= 2:
        raise ValueError(f"want 1 or 2 keys (the signing key, then the one being retired), got {len(keys)}")
    for i, k in enumerate(keys):
        if len(k) < MIN_KEY_LEN:
            raise ValueError(f"key {i + 1} is {len(k)} bytes, want at least {MIN_KEY_LEN}")
    return keys


def load_keys(path: str) -> list[bytes]:
    """Read a key file (see :func:`parse_keys`)."""
    with open(path, encoding="utf-8") as f:
        return parse_keys(f.read())


def _decode_sig(sig: str) -> bytes:
    enc = sig[3:]
    if not re.fullmatch(r"[A-Za-z0-9_-]{43}", enc):
        raise BadSignature("not 32 bytes of unpadded base64url")
    return urlsafe_b64decode(enc + "=")


class Verifier:
    """Checks dispatch signatures: v2 made with one of ``keys``, v1 only with
    ``accept_v1`` (during an upgrade from nodes that sign v1), then ``jobs`` and
    ``url_prefix`` (when given) say which dispatches this service accepts."""

    def __init__(self, keys: Sequence[bytes | str], *, accept_v1: bool = False,
                 jobs: Iterable[str] = (), url_prefix: str = "") -> None:
        self.keys = [k.encode() if isinstance(k, str) else k for k in keys]
        if not self.keys:
            raise ValueError("no keys")
        self.accept_v1 = accept_v1
        self.jobs = frozenset(jobs)
        self.url_prefix = url_prefix

    def verify(self, run: Run, signature: str, method: str = "", url: str = "",
               body: bytes = b"") -> None:
        """Raise Unsigned, BadSignature or NotAccepted unless the dispatch is genuine and
        meant for this service. An exec run passes no method and no URL."""
        if not signature:
            raise Unsigned("fence: not signed")
        if signature.startswith("v2="):
            message = canonical_v2(run, method, url, body)
        elif signature.startswith("v1=") and self.accept_v1:
            if run.idempotency_key not in (f"{run.job}/{run.scheduled_at}",
                                           f"{run.job}/manual/{run.run_id}"):
                raise BadSignature("idempotency key is not the one the signed fields imply")
            message = canonical_v1(run)
        elif signature.startswith("v1="):
            raise BadSignature("v1 signatures are refused: they do not cover the method, URL or body")
        else:
            raise BadSignature("want the form v2=<base64url>")
        got = _decode_sig(signature)
        if not any(hmac.compare_digest(got, _mac(k, message)) for k in self.keys):
            raise BadSignature("fence: bad signature: made with none of the keys, or the request was altered")
        if self.jobs and run.job not in self.jobs:
            raise NotAccepted(f"fence: not accepted here: job {run.job!r}")
        if self.url_prefix and url and not url.startswith(self.url_prefix):
            raise NotAccepted(f"fence: not accepted here: URL {url!r}")

    def check_request(self, method: str, url: str, headers: HeaderSource, body: bytes) -> Run:
        """Parse and verify an HTTP dispatch as received: ``url`` is the URL the node sent
        it to (scheme, Host, path and query), ``body`` its raw bytes. Works with any
        framework: pass what it gives you."""
        sigs = _values(headers, HEADER_SIGNATURE)
        if not sigs:
            raise Unsigned("fence: not signed")
        run = parse_headers(headers)
        if len(sigs) > 1:
            raise BadSignature(f"{HEADER_SIGNATURE} given {len(sigs)} times, want once")
        self.verify(run, sigs[0], method, url, body)
        return run

    def check_environ(self, environ: Mapping[str, str] | None = None, payload: bytes = b"") -> Run:
        """Parse and verify an exec run (or worker attempt) from its environment."""
        env = os.environ if environ is None else environ
        run = parse_env(env)
        self.verify(run, env.get(ENV_SIGNATURE, ""), body=payload)
        return run


# --- the SQL fence --------------------------------------------------------------------

_SQL = {
    "postgres": {
        "create": [
            "CREATE TABLE IF NOT EXISTS raftcron_fences (scope TEXT PRIMARY KEY, token BIGINT NOT NULL)",
            "CREATE TABLE IF NOT EXISTS raftcron_applied_runs (idempotency_key TEXT PRIMARY KEY, "
            "token BIGINT NOT NULL, applied_at TIMESTAMPTZ NOT NULL DEFAULT now())",
        ],
        "seed": "INSERT INTO raftcron_fences (scope, token) VALUES (%s, 0) ON CONFLICT (scope) DO NOTHING",
        "update": "UPDATE raftcron_fences SET token = %s WHERE scope = %s AND token <= %s",
        "highest": "SELECT token FROM raftcron_fences WHERE scope = %s",
        "record": "INSERT INTO raftcron_applied_runs (idempotency_key, token) VALUES (%s, %s) "
                  "ON CONFLICT (idempotency_key) DO NOTHING",
    },
    "sqlite": {
        "create": [
            "CREATE TABLE IF NOT EXISTS raftcron_fences (scope TEXT PRIMARY KEY, token INTEGER NOT NULL)",
            "CREATE TABLE IF NOT EXISTS raftcron_applied_runs (idempotency_key TEXT PRIMARY KEY, "
            "token INTEGER NOT NULL, applied_at TEXT NOT NULL DEFAULT CURRENT_TIMESTAMP)",
        ],
        "seed": "INSERT INTO raftcron_fences (scope, token) VALUES (?, 0) ON CONFLICT (scope) DO NOTHING",
        "update": "UPDATE raftcron_fences SET token = ? WHERE scope = ? AND token <= ?",
        "highest": "SELECT token FROM raftcron_fences WHERE scope = ?",
        "record": "INSERT INTO raftcron_applied_runs (idempotency_key, token) VALUES (?, ?) "
                  "ON CONFLICT (idempotency_key) DO NOTHING",
    },
    "mysql": {
        "create": [
            "CREATE TABLE IF NOT EXISTS raftcron_fences (scope VARBINARY(256) NOT NULL PRIMARY KEY, "
            "token BIGINT NOT NULL) ENGINE=InnoDB",
            "CREATE TABLE IF NOT EXISTS raftcron_applied_runs (idempotency_key VARBINARY(256) NOT NULL "
            "PRIMARY KEY, token BIGINT NOT NULL, applied_at TIMESTAMP(6) NOT NULL DEFAULT "
            "CURRENT_TIMESTAMP(6)) ENGINE=InnoDB",
        ],
        "seed": "INSERT INTO raftcron_fences (scope, token) VALUES (%s, 0) ON DUPLICATE KEY UPDATE token = token",
        "lock": "SELECT token FROM raftcron_fences WHERE scope = %s FOR UPDATE",
        "update": "UPDATE raftcron_fences SET token = %s WHERE scope = %s",
        "highest": "SELECT token FROM raftcron_fences WHERE scope = %s",
        "record": "INSERT IGNORE INTO raftcron_applied_runs (idempotency_key, token) VALUES (%s, %s)",
    },
}


def dialect_of(conn: Any) -> str:
    """Guess the dialect from the DB-API module of ``conn``."""
    module = type(conn).__module__.split(".")[0]
    if module in ("sqlite3", "_sqlite3"):
        return "sqlite"
    if module in ("psycopg2", "psycopg", "pg8000"):
        return "postgres"
    if module in ("MySQLdb", "pymysql", "mysql", "mariadb"):
        return "mysql"
    raise ValueError(f"cannot tell the dialect of a {module} connection: pass dialect=")


def create_tables(conn: Any, dialect: str | None = None) -> None:
    """Create the fence tables if they do not exist, and commit."""
    cur = conn.cursor()
    for stmt in _SQL[dialect or dialect_of(conn)]["create"]:
        cur.execute(stmt)
    conn.commit()


def fence_sql(conn: Any, run: Run, write: Callable[[Any], object], *, scope: str | None = None,
              dialect: str | None = None) -> None:
    """Run ``write(cursor)`` for ``run`` in one transaction with the fence, as Go's
    sqlfence.Update does: raise :class:`Stale` (nothing committed) if a higher token was
    admitted for ``scope`` (default: the job); raise :class:`Duplicate` (the admission
    committed, ``write`` not called) if the key was recorded; otherwise call ``write`` and
    commit it with the token and the key, or roll all back if it raises. ``conn`` must not
    be inside a transaction."""
    d = dialect or dialect_of(conn)
    sql = _SQL[d]
    scope = scope or run.job
    if not 0 < run.token < 1 << 63:
        raise ValueError(f"token {run.token}: outside 1..2^63-1, which a BIGINT holds")
    if len(scope.encode()) > MAX_FIELD_LEN or len(run.idempotency_key.encode()) > MAX_FIELD_LEN:
        raise ValueError(f"scope and idempotency key must be at most {MAX_FIELD_LEN} bytes")
    cur = conn.cursor()
    try:
        if d == "sqlite" and not conn.in_transaction:
            cur.execute("BEGIN IMMEDIATE")  # take the write lock before reading
        cur.execute(sql["seed"], (scope,))
        if "lock" in sql:
            cur.execute(sql["lock"], (scope,))
            highest = cur.fetchone()[0]
            if run.token < highest:
                raise Stale(scope, run.token, highest)
            if run.token > highest:
                cur.execute(sql["update"], (run.token, scope))
        else:
            cur.execute(sql["update"], (run.token, scope, run.token))
            if cur.rowcount != 1:
                cur.execute(sql["highest"], (scope,))
                raise Stale(scope, run.token, cur.fetchone()[0])
        cur.execute(sql["record"], (run.idempotency_key, run.token))
        if cur.rowcount == 0:
            conn.commit()
            raise Duplicate(run.idempotency_key)
        write(cur)
        conn.commit()
    except Duplicate:
        raise
    except BaseException:
        conn.rollback()
        raise

// Verify raftcron dispatches: the run they carry and their X-Raftcron-Signature (v2; v1
// only when told to), as Go's fence package does (docs/fencing.md).
import { createHash, createHmac, timingSafeEqual } from "node:crypto";
import { readFileSync } from "node:fs";

export const HEADER_FENCING_TOKEN = "X-Raftcron-Fencing-Token";
export const HEADER_JOB = "X-Raftcron-Job";
export const HEADER_RUN_ID = "X-Raftcron-Run-Id";
export const HEADER_SCHEDULED_AT = "X-Raftcron-Scheduled-At";
export const HEADER_ATTEMPT = "X-Raftcron-Attempt";
export const HEADER_IDEMPOTENCY_KEY = "Idempotency-Key";
export const HEADER_SIGNATURE = "X-Raftcron-Signature";

export const ENV_FENCING_TOKEN = "RAFTCRON_FENCING_TOKEN";
export const ENV_JOB = "RAFTCRON_JOB";
export const ENV_RUN_ID = "RAFTCRON_RUN_ID";
export const ENV_SCHEDULED_AT = "RAFTCRON_SCHEDULED_AT";
export const ENV_ATTEMPT = "RAFTCRON_ATTEMPT";
export const ENV_IDEMPOTENCY_KEY = "RAFTCRON_IDEMPOTENCY_KEY";
export const ENV_SIGNATURE = "RAFTCRON_SIGNATURE";

export const MAX_FIELD_LEN = 256;
export const MIN_KEY_LEN = 32;

/** The identity of one dispatched run attempt. */
export interface Run {
  readonly token: bigint; // fencing token, > 0 (a uint64)
  readonly job: string;
  readonly runId: string;
  readonly idempotencyKey: string; // the same for every attempt of the run
  readonly scheduledAt: string; // RFC 3339 UTC, canonical (no trailing zeros in the fraction)
  readonly attempt: number; // 1-based
}

/** A dispatch refused before or by the fence: answer `status` with `body`. */
export class Refused extends Error {
  readonly status: number = 500;
  readonly verdict: string = "error";
  get body(): Record<string, unknown> {
    return { error: this.message };
  }
}

/** A fence header or variable missing or malformed (400); `field` names it. */
export class Malformed extends Refused {
  override readonly status = 400;
  override readonly verdict = "malformed";
  constructor(readonly field: string, reason: string) {
    super(`${field}: ${reason}`);
  }
}

/** No signature (401). */
export class Unsigned extends Refused {
  override readonly status = 401;
  override readonly verdict = "unsigned";
}

/** A signature none of the keys made for exactly this dispatch (401). */
export class BadSignature extends Refused {
  override readonly status = 401;
  override readonly verdict = "bad_signature";
}

/** A genuine dispatch meant for another job or URL (403). */
export class NotAccepted extends Refused {
  override readonly status = 403;
  override readonly verdict = "not_accepted";
}

/** A higher token was admitted for the scope (409: raftcron marks the attempt fenced). */
export class Stale extends Refused {
  override readonly status = 409;
  override readonly verdict = "stale";
  constructor(readonly scope: string, readonly token: bigint, readonly highest: bigint) {
    super(`stale fencing token ${token} for scope ${JSON.stringify(scope)}: ${highest} already admitted`);
  }
  override get body(): Record<string, unknown> {
    return { error: "stale fencing token", token: Number(this.token), highest: Number(this.highest), scope: this.scope };
  }
}

/** The run's effect was applied before (answer 200: raftcron takes it as success). */
export class Duplicate extends Refused {
  override readonly status = 200;
  override readonly verdict = "duplicate";
  constructor(key: string) {
    super(`duplicate idempotency key ${JSON.stringify(key)}`);
  }
  override get body(): Record<string, unknown> {
    return { status: "duplicate" };
  }
}

/** Headers as node:http (headersDistinct or headers), fetch, or a plain object give them. */
export type HeaderSource =
  | { get(name: string): string | null }
  | Record<string, string | string[] | undefined>;

function values(headers: HeaderSource, name: string): string[] {
  if (typeof (headers as { get?: unknown }).get === "function" && !Array.isArray(headers)) {
    const v = (headers as { get(name: string): string | null }).get(name);
    return v === null ? [] : [v];
  }
  const lower = name.toLowerCase();
  const out: string[] = [];
  for (const [k, v] of Object.entries(headers as Record<string, string | string[] | undefined>)) {
    if (k.toLowerCase() !== lower || v === undefined) continue;
    out.push(...(Array.isArray(v) ? v : [v]));
  }
  return out;
}

const HEADER_NAMES = [HEADER_FENCING_TOKEN, HEADER_JOB, HEADER_RUN_ID, HEADER_IDEMPOTENCY_KEY, HEADER_SCHEDULED_AT, HEADER_ATTEMPT];
const ENV_NAMES = [ENV_FENCING_TOKEN, ENV_JOB, ENV_RUN_ID, ENV_IDEMPOTENCY_KEY, ENV_SCHEDULED_AT, ENV_ATTEMPT];
const JOB = /^[a-z0-9][a-z0-9._-]{0,62}$/;
const DIGITS = /^[0-9]+$/;
const TIME = /^(\d{4})-(\d{2})-(\d{2})T(\d{2}):(\d{2}):(\d{2})(?:\.(\d{1,9}))?Z$/;

/** Parse the run from request headers. */
export function parseHeaders(headers: HeaderSource): Run {
  return parse(HEADER_NAMES, (name) => values(headers, name));
}

/** Parse the run from an exec run's (or worker attempt's) environment. */
export function parseEnv(env: Record<string, string | undefined> = process.env): Run {
  return parse(ENV_NAMES, (name) => (env[name] ? [env[name] as string] : []));
}

function parse(names: string[], get: (name: string) => string[]): Run {
  const [tokenF, jobF, runF, keyF, atF, attemptF] = names as [string, string, string, string, string, string];
  const one = (name: string): string => {
    const vs = get(name);
    if (vs.length === 0 || (vs.length === 1 && vs[0] === "")) throw new Malformed(name, "missing");
    if (vs.length > 1) throw new Malformed(name, `given ${vs.length} times, want once`);
    return vs[0] as string;
  };
  const token = number(tokenF, one(tokenF), 64n);
  if (token === 0n) throw new Malformed(tokenF, "token 0 is never issued");
  const job = one(jobF);
  if (!JOB.test(job)) throw new Malformed(jobF, "not a job name: want [a-z0-9][a-z0-9._-]{0,62}");
  const runId = text(runF, one(runF));
  const idempotencyKey = text(keyF, one(keyF));
  const scheduledAt = canonicalTime(atF, one(atF));
  const attempt = number(attemptF, one(attemptF), 32n);
  if (attempt === 0n) throw new Malformed(attemptF, "attempts are numbered from 1");
  return { token, job, runId, idempotencyKey, scheduledAt, attempt: Number(attempt) };
}

function number(field: string, s: string, bits: bigint): bigint {
  if (!DIGITS.test(s) || BigInt(s) >= 1n << bits) throw new Malformed(field, `not an unsigned ${bits}-bit integer`);
  return BigInt(s);
}

function hasControl(s: string): boolean {
  return /[\u0000-\u001f\u007f]/.test(s);
}

function text(field: string, s: string): string {
  if (Buffer.byteLength(s) > MAX_FIELD_LEN) throw new Malformed(field, `longer than ${MAX_FIELD_LEN} bytes`);
  if (hasControl(s)) throw new Malformed(field, "contains a control character");
  return s;
}

/** An RFC 3339 UTC time as raftcron signs it: the fraction without trailing zeros. */
export function canonicalTime(field: string, s: string): string {
  const m = TIME.exec(s);
  if (!m) throw new Malformed(field, "not an RFC 3339 time in UTC (want e.g. 2026-11-22T01:02:03Z)");
  const [y, mo, d, h, mi, se] = m.slice(1, 7).map(Number) as [number, number, number, number, number, number];
  const t = new Date(Date.UTC(y, mo - 1, d, h, mi, se));
  if (t.getUTCFullYear() !== y || t.getUTCMonth() !== mo - 1 || t.getUTCDate() !== d || h > 23 || mi > 59 || se > 59) {
    throw new Malformed(field, "not a valid date and time");
  }
  const frac = (m[7] ?? "").replace(/0+$/, "");
  return s.slice(0, 19) + (frac ? "." + frac : "") + "Z";
}

/** The message a v1 signature covers. */
export function canonicalV1(run: Run): string {
  return ["raftcron-signature-v1", run.job, run.runId, run.token.toString(), run.scheduledAt, String(run.attempt)].join("\n");
}

/** What a v2 signature covers besides the run; an exec run has no method and no URL. */
export interface Request {
  method?: string;
  url?: string;
  body?: Uint8Array | string;
}

/** The message a v2 signature covers. */
export function canonicalV2(run: Run, req: Request = {}): string {
  const method = req.method ?? "";
  const url = req.url ?? "";
  if (hasControl(method) || hasControl(url)) throw new BadSignature("method or URL contains a control character");
  if ((method === "") !== (url === "")) throw new BadSignature("an HTTP dispatch needs both its method and its URL");
  const lines = ["raftcron-signature-v2"];
  if (method) lines.push(`method:${method}`, `url:${url}`);
  lines.push(
    `body-sha256:${createHash("sha256").update(req.body ?? "").digest("hex")}`,
    `job:${run.job}`,
    `run-id:${run.runId}`,
    `token:${run.token}`,
    `scheduled-at:${run.scheduledAt}`,
    `attempt:${run.attempt}`,
    `idempotency-key:${run.idempotencyKey}`,
  );
  return lines.join("\n");
}

function mac(key: Uint8Array, message: string): Buffer {
  return createHmac("sha256", key).update(message).digest();
}

/** The `v2=...` signature a node holding `key` puts on this dispatch. */
export function signV2(key: Uint8Array | string, run: Run, req: Request = {}): string {
  return "v2=" + mac(toBytes(key), canonicalV2(run, req)).toString("base64url");
}

function toBytes(k: Uint8Array | string): Uint8Array {
  return typeof k === "string" ? Buffer.from(k) : k;
}

/**
 * The key file format: one key per line (the first signs, a second verifies during a
 * rotation), each the line's text, at least 32 bytes; blank and # lines are ignored.
 */
export function parseKeys(text: string): Uint8Array[] {
  const keys = text.split(/\r?\n/).map((l) => l.trim()).filter((l) => l && !l.startsWith("#"));
  if (keys.length < 1 || keys.length > 2) throw new Error(`want 1 or 2 keys (the signing key, then the one being retired), got ${keys.length}`);
  return keys.map((k, i) => {
    if (Buffer.byteLength(k) < MIN_KEY_LEN) throw new Error(`key ${i + 1} is ${Buffer.byteLength(k)} bytes, want at least ${MIN_KEY_LEN}`);
    return Buffer.from(k);
  });
}

/** Read a key file (see parseKeys). */
export function loadKeys(path: string): Uint8Array[] {
  return parseKeys(readFileSync(path, "utf8"));
}

export interface VerifierOptions {
  /** Also accept v1 signatures: only during the upgrade from nodes that sign v1. */
  acceptV1?: boolean;
  /** Accept only runs of these jobs. */
  jobs?: Iterable<string>;
  /** Accept only HTTP dispatches whose URL starts with this. */
  urlPrefix?: string;
}

/** Checks dispatch signatures with one or two keys (during a rotation). */
export class Verifier {
  private readonly keys: Uint8Array[];
  private readonly acceptV1: boolean;
  private readonly jobs: Set<string>;
  private readonly urlPrefix: string;

  constructor(keys: Iterable<Uint8Array | string>, opts: VerifierOptions = {}) {
    this.keys = [...keys].map(toBytes);
    if (this.keys.length === 0) throw new Error("no keys");
    this.acceptV1 = opts.acceptV1 ?? false;
    this.jobs = new Set(opts.jobs ?? []);
    this.urlPrefix = opts.urlPrefix ?? "";
  }

  /** Throw Unsigned, BadSignature or NotAccepted unless the dispatch is genuine and meant for this service. */
  verify(run: Run, signature: string, req: Request = {}): void {
    if (!signature) throw new Unsigned("fence: not signed");
    let message: string;
    if (signature.startsWith("v2=")) {
      message = canonicalV2(run, req);
    } else if (signature.startsWith("v1=") && this.acceptV1) {
      const implied = [`${run.job}/${run.scheduledAt}`, `${run.job}/manual/${run.runId}`];
      if (!implied.includes(run.idempotencyKey)) throw new BadSignature("idempotency key is not the one the signed fields imply");
      message = canonicalV1(run);
    } else if (signature.startsWith("v1=")) {
      throw new BadSignature("v1 signatures are refused: they do not cover the method, URL or body");
    } else {
      throw new BadSignature("want the form v2=<base64url>");
    }
    const enc = signature.slice(3);
    if (!/^[A-Za-z0-9_-]{43}$/.test(enc)) throw new BadSignature("not 32 bytes of unpadded base64url");
    const got = Buffer.from(enc, "base64url");
    if (!this.keys.some((k) => timingSafeEqual(got, mac(k, message)))) {
      throw new BadSignature("fence: bad signature: made with none of the keys, or the request was altered");
    }
    if (this.jobs.size > 0 && !this.jobs.has(run.job)) throw new NotAccepted(`fence: not accepted here: job ${JSON.stringify(run.job)}`);
    const url = req.url ?? "";
    if (this.urlPrefix && url && !url.startsWith(this.urlPrefix)) throw new NotAccepted(`fence: not accepted here: URL ${JSON.stringify(url)}`);
  }

  /** Parse and verify an HTTP dispatch: `url` is the URL the node sent it to. */
  checkRequest(method: string, url: string, headers: HeaderSource, body: Uint8Array | string): Run {
    const sigs = values(headers, HEADER_SIGNATURE);
    if (sigs.length === 0) throw new Unsigned("fence: not signed");
    const run = parseHeaders(headers);
    if (sigs.length > 1) throw new BadSignature(`${HEADER_SIGNATURE} given ${sigs.length} times, want once`);
    this.verify(run, sigs[0] as string, { method, url, body });
    return run;
  }

  /** Parse and verify an exec run (or worker attempt) from its environment. */
  checkEnv(env: Record<string, string | undefined> = process.env, payload: Uint8Array | string = ""): Run {
    const run = parseEnv(env);
    this.verify(run, env[ENV_SIGNATURE] ?? "", { body: payload });
    return run;
  }
}

// A worker of a raftcron pool over the HTTP worker protocol (docs/workers.md): it polls any
// node for its pool's attempts, runs each on the handler named by the job, heartbeats it
// every third of its lease (extending the lease, carrying progress), and reports its
// outcome, in a batch with the others that finished meanwhile.
import { hostname } from "node:os";
import { Client, ProtocolError, attemptPath, sleep } from "./client.js";
import { Completer } from "./completer.js";
import { Stale, Verifier, canonicalTime, type Run } from "./fence.js";

/** What a handler gets for one attempt. */
export interface AttemptContext {
  /** The attempt's fencing token: fence every write with it. */
  readonly token: bigint;
  readonly runId: string;
  readonly job: string;
  /** The slot's nominal time, RFC 3339 UTC. */
  readonly slot: string;
  /** 1-based. */
  readonly attempt: number;
  readonly idempotencyKey: string;
  /** The job's `worker.payload`, as is. */
  readonly payload: string;
  /** The attempt's RAFTCRON_* variables, as a command of it would get them. */
  readonly env: Readonly<Record<string, string>>;
  /** When the attempt must have stopped, on this machine's clock. */
  readonly deadline: Date;
  /** The run as the fence kit takes it (fenceSql, Verifier). */
  readonly run: Run;
  /**
   * Aborts when the attempt must stop: its `reason` is a Superseded (cancelled, or
   * re-dispatched elsewhere), DeadlineExceeded, LeaseLost or Stopping.
   */
  readonly signal: AbortSignal;
  /** Report progress (0–100) and what the attempt is doing; sent within a second. */
  progress(percent: number, message?: string): void;
}

/**
 * A handler resolves to the attempt's output (its last 4 KiB are kept): succeeded. It throws
 * Fenced (or the fence kit's Stale) when the downstream refused its token, anything else
 * when it failed (retried per the job's retry policy).
 */
export type Handler = (ctx: AttemptContext) => Promise<string | void>;

/** The leader no longer holds the attempt as current (a heartbeat answered 409). */
export class Superseded extends Error {
  constructor(readonly why: string) {
    super(`superseded: ${why || "no longer the run's current attempt"}`);
  }
}
/** Throw it when the downstream refused the token (a newer attempt exists): outcome fenced. */
export class Fenced extends Error {}
/** The attempt ran to its limit. */
export class DeadlineExceeded extends Error {}
/** No heartbeat got through for a whole lease: another worker may run the attempt now. */
export class LeaseLost extends Error {}
/** The worker is stopping and hands the attempt back (it is re-dispatched). */
export class Stopping extends Error {}

export interface WorkerOptions {
  /** The pool whose attempts this worker takes. */
  pool: string;
  /** The secret of a worker ACL token bound to the pool (not needed without --acl). */
  token?: string;
  /** HTTP addresses of a few nodes (`host:port` or `https://host:port`); any one answers. */
  addrs: string[];
  /** The worker's ID, stable across restarts (default: host name and process ID). */
  id?: string;
  /** Only attempts of targets whose tags this worker all carries. */
  tags?: Record<string, string>;
  /** Attempts run at once (default 16, at most 100,000; the token's max_concurrency bounds it too). */
  concurrency?: number;
  /** Verify every offer's signature with these keys (`loadKeys`); refuse one that fails. */
  keys?: Iterable<Uint8Array | string>;
  /** Also accept v1 signatures (during an upgrade from nodes that sign v1). */
  acceptV1?: boolean;
  /** On stop, how long running attempts may finish before they are handed back (default 30 s). */
  stopGraceMs?: number;
  /** Stop gracefully on SIGTERM and SIGINT while run() runs (default true). */
  handleSignals?: boolean;
  /** The fetch it calls the nodes with (default: the global one). */
  fetch?: typeof globalThis.fetch;
  /** Where the worker says what it does (default: one line of JSON on stderr). */
  log?: (message: string, fields?: Record<string, unknown>) => void;
}

/** One offer as the poll answers it (docs/workers.md). */
interface Offer {
  run_id: string;
  job: string;
  slot: string;
  attempt: number;
  token: string;
  payload?: string;
  env?: Record<string, string>;
  signature?: string;
  handler: string;
  idempotency_key: string;
  limit?: string;
  lease?: string;
}

const ID = /^[a-z0-9][a-z0-9._-]{0,62}$/;
const MAX_MESSAGE = 256;
const MAX_OUTPUT = 4096;
const PROGRESS_EVERY = 1000;
const POLL_WAIT = "30s";
/** The most offers one poll answer holds. */
const MAX_OFFERS = 1000;
/** How long an interrupted handler has to return before its attempt is completed anyway. */
const SETTLE_MS = 5000;

/** Milliseconds of a proto JSON duration ("10s", "0.500s"). */
export function durationMs(d: string | undefined): number {
  const m = /^(-?\d+(?:\.\d+)?)s$/.exec(d ?? "");
  return m ? Math.round(Number(m[1]) * 1000) : 0;
}

/** The first bytes of s that fit in n bytes of UTF-8, or its last ones with `tail`. */
function clip(s: string, n: number, tail = false): string {
  const b = Buffer.from(s);
  if (b.length <= n) return s;
  const cut = tail ? b.subarray(b.length - n) : b.subarray(0, n);
  return cut.toString("utf8").replace(tail ? /^\uFFFD+/ : /\uFFFD+$/, "");
}

function defaultId(): string {
  const host = hostname().toLowerCase().replace(/[^a-z0-9._-]/g, "-").replace(/^[^a-z0-9]+/, "");
  return `${(host || "worker").slice(0, 50)}-${process.pid}`;
}

function defaultLog(message: string, fields: Record<string, unknown> = {}): void {
  process.stderr.write(JSON.stringify({ time: new Date().toISOString(), msg: message, ...fields }, (_, v) => (typeof v === "bigint" ? v.toString() : v)) + "\n");
}

/** A pool's worker: register handlers, then `await worker.run()` until it stops. */
export class Worker {
  readonly id: string;
  private readonly opts: WorkerOptions;
  private readonly client: Client;
  private readonly completer: Completer;
  private readonly handlers = new Map<string, Handler>();
  private readonly verifier: Verifier | undefined;
  private readonly concurrency: number;
  private readonly log: (message: string, fields?: Record<string, unknown>) => void;
  private readonly running = new Set<Attempt>();
  private readonly stopping = new AbortController();
  private slotFreed: (() => void) | undefined;
  private idle: (() => void) | undefined;

  constructor(opts: WorkerOptions) {
    if (!opts.pool || !ID.test(opts.pool)) throw new Error(`pool: want [a-z0-9][a-z0-9._-]{0,62}, got ${JSON.stringify(opts.pool)}`);
    this.id = opts.id ?? defaultId();
    if (!ID.test(this.id)) throw new Error(`id: want [a-z0-9][a-z0-9._-]{0,62}, got ${JSON.stringify(this.id)}`);
    this.concurrency = opts.concurrency ?? 16;
    if (!Number.isInteger(this.concurrency) || this.concurrency < 1 || this.concurrency > 100_000) {
      throw new Error(`concurrency: want 1 to 100000, got ${this.concurrency}`);
    }
    this.opts = opts;
    this.client = new Client(opts.addrs, opts.token, opts.fetch);
    this.verifier = opts.keys ? new Verifier(opts.keys, { acceptV1: opts.acceptV1 ?? false }) : undefined;
    this.log = opts.log ?? defaultLog;
    this.completer = new Completer(this.client, this.log);
  }

  /** Run `fn` for the attempts of jobs whose `worker.handler` is `name`. */
  handler(name: string, fn: Handler): this {
    if (!name) throw new Error("handler: a name");
    this.handlers.set(name, fn);
    return this;
  }

  /** Attempts being run now. */
  get active(): number {
    return this.running.size;
  }

  /**
   * Poll and run attempts until stop() (or SIGTERM/SIGINT): then let running attempts
   * finish for stopGraceMs and hand back the rest. Rejects when the nodes refuse this
   * worker (a bad token, a pool it may not serve): a ProtocolError.
   */
  async run(): Promise<void> {
    if (this.handlers.size === 0) throw new Error("no handlers: call worker.handler(name, fn) first");
    const onSignal = (sig: string): void => {
      this.log("stopping", { signal: sig, running: this.running.size });
      void this.stop();
    };
    const signals = this.opts.handleSignals ?? true;
    if (signals) for (const s of ["SIGTERM", "SIGINT"] as const) process.on(s, onSignal);
    try {
      this.log("polling", { id: this.id, pool: this.opts.pool, handlers: [...this.handlers.keys()] });
      await this.pollLoop().catch(async (err: unknown) => {
        this.stop();
        await this.drain();
        throw err;
      });
      await this.drain();
    } finally {
      if (signals) for (const s of ["SIGTERM", "SIGINT"] as const) process.off(s, onSignal);
    }
  }

  /** Stop polling; run() returns once the running attempts finished or were handed back. */
  stop(): void {
    this.stopping.abort(new Stopping("the worker is stopping"));
  }

  private async pollLoop(): Promise<void> {
    const stop = this.stopping.signal;
    while (!stop.aborted) {
      const free = this.concurrency - this.running.size;
      if (free <= 0) {
        await new Promise<void>((resolve) => {
          this.slotFreed = resolve;
          stop.addEventListener("abort", () => resolve(), { once: true });
        });
        continue;
      }
      const max = Math.min(free, MAX_OFFERS);
      const body = { pool: this.opts.pool, tags: this.opts.tags ?? {}, handlers: [...this.handlers.keys()], max, wait: POLL_WAIT };
      let offers: Offer[];
      try {
        const answer = await this.client.call(`/v1/workers/${this.id}:poll`, body, { signal: stop, timeout: 75_000 });
        offers = answer.ok ? ((answer.doc["offers"] as Offer[] | undefined) ?? []) : [];
      } catch (err) {
        if (stop.aborted) return;
        throw err;
      }
      const received = Date.now();
      for (const o of offers) this.start(o, received);
    }
  }

  private start(o: Offer, received: number): void {
    const at = new Attempt(this, this.client, this.completer, o, received);
    this.running.add(at);
    void at.run();
  }

  /** @internal An attempt is completed (or given up). */
  finished(at: Attempt): void {
    this.running.delete(at);
    this.slotFreed?.();
    this.slotFreed = undefined;
    if (this.running.size === 0) this.idle?.();
  }

  private async drain(): Promise<void> {
    const grace = this.opts.stopGraceMs ?? 30_000;
    const until = Date.now() + grace;
    while (this.running.size > 0 && Date.now() < until) await sleep(Math.min(50, until - Date.now()));
    if (this.running.size === 0) return;
    const idle = new Promise<void>((resolve) => (this.idle = resolve));
    for (const at of [...this.running]) at.interrupt(new Stopping("the worker is stopping"));
    await idle;
  }

  /** @internal */
  lookup(name: string): Handler | undefined {
    return this.handlers.get(name);
  }
  /** @internal */
  verify(run: Run, o: Offer): string {
    if (!this.verifier) return "";
    try {
      this.verifier.verify(run, o.signature ?? "", { body: o.payload ?? "" });
      return "";
    } catch (err) {
      return err instanceof Error ? err.message : String(err);
    }
  }
  /** @internal */
  say(message: string, fields?: Record<string, unknown>): void {
    this.log(message, fields);
  }
}

type Outcome = "succeeded" | "failed" | "fenced" | "deadline_exceeded" | "cancelled";

/** One attempt on this worker, from its offer to its outcome. */
class Attempt {
  // Made when the handler first reads ctx.signal or the attempt is interrupted: most
  // attempts are neither, and an AbortController is a tenth of an attempt's CPU.
  private abort: AbortController | undefined;
  private interrupted: Error | undefined;
  private runOrRefusal: Run | string | undefined;
  private readonly path: string;
  private readonly leaseMs: number;
  private leaseEnd: number;
  private beat: NodeJS.Timeout | undefined;
  private nextBeat = 0; // when beat fires
  private finishedAt = 0; // when complete was first called; 0 before
  private pending: { progress?: number; message?: string } = {};
  private lastProgress = 0;
  private heartbeating = false;
  private superseded = false;
  private settleTimer: NodeJS.Timeout | undefined;

  constructor(
    private readonly w: Worker,
    private readonly client: Client,
    private readonly completer: Completer,
    private readonly o: Offer,
    received: number,
  ) {
    this.path = attemptPath(o.run_id, o.token);
    this.leaseMs = durationMs(o.lease);
    this.leaseEnd = received + this.leaseMs;
  }

  private fields(): Record<string, unknown> {
    return { job: this.o.job, run_id: this.o.run_id, token: this.o.token };
  }

  async run(): Promise<void> {
    const o = this.o;
    const refusal = this.refusal();
    if (refusal) {
      this.w.say("attempt refused", { ...this.fields(), reason: refusal });
      await this.complete("failed", refusal);
      return;
    }
    const handler = this.w.lookup(o.handler) as Handler;
    const limitMs = durationMs(o.limit);
    const deadline = new Date(Date.now() + limitMs);
    const limit = limitMs > 0 ? setTimeout(() => this.interrupt(new DeadlineExceeded(`ran past its limit of ${o.limit}`)), limitMs) : undefined;
    this.schedule(this.leaseMs / 3);
    const ctx = this.context(deadline);
    let outcome: Outcome = "succeeded";
    let detail = "";
    let output = "";
    try {
      output = (await handler(ctx)) ?? "";
    } catch (err) {
      [outcome, detail] = err instanceof Stale || err instanceof Fenced ? ["fenced", err.message] : ["failed", err instanceof Error ? err.message : String(err)];
    }
    clearTimeout(limit);
    clearTimeout(this.settleTimer);
    if (this.interrupted) [outcome, detail] = interruptedBy(this.interrupted);
    await this.complete(outcome, detail, output);
  }

  /** Why this worker must not run the offer, or "". */
  private refusal(): string {
    const o = this.o;
    if (!this.w.lookup(o.handler)) return `no handler ${JSON.stringify(o.handler)} on worker ${this.w.id}`;
    const run = this.runOf();
    if (typeof run === "string") return run;
    const bad = this.w.verify(run, o);
    if (bad) return `bad signature: ${bad}`;
    // A heartbeat must land within the lease: a lease not longer than the round trip
    // cannot be kept, and the attempt would run with nobody holding it.
    const rtt = this.client.rtt;
    if (this.leaseMs <= 0 || this.leaseMs / 3 <= rtt) {
      return `lease ${o.lease ?? "unset"} cannot be kept up: heartbeats take ${rtt} ms to reach the leader`;
    }
    if (this.leaseEnd <= Date.now()) return `the lease ${o.lease} ran out before the attempt could start`;
    return "";
  }

  private runOf(): Run | string {
    if (this.runOrRefusal !== undefined) return this.runOrRefusal;
    const o = this.o;
    try {
      this.runOrRefusal = { token: BigInt(o.token), job: o.job, runId: o.run_id, idempotencyKey: o.idempotency_key, scheduledAt: slotTime(o.slot), attempt: o.attempt };
    } catch (err) {
      this.runOrRefusal = `malformed offer: ${err instanceof Error ? err.message : String(err)}`;
    }
    return this.runOrRefusal;
  }

  private signal(): AbortSignal {
    if (!this.abort) {
      this.abort = new AbortController();
      if (this.interrupted) this.abort.abort(this.interrupted);
    }
    return this.abort.signal;
  }

  private context(deadline: Date): AttemptContext {
    const o = this.o;
    const run = this.runOf() as Run;
    const at = this;
    return {
      token: run.token,
      runId: o.run_id,
      job: o.job,
      slot: o.slot,
      attempt: o.attempt,
      idempotencyKey: o.idempotency_key,
      payload: o.payload ?? "",
      // The offer's own object: nothing else holds it.
      env: Object.freeze(o.env ?? {}),
      deadline,
      run,
      get signal() {
        return at.signal();
      },
      progress: (percent, message) => this.progress(percent, message),
    };
  }

  private progress(percent: number, message?: string): void {
    if (!Number.isFinite(percent)) throw new RangeError(`progress: want 0 to 100, got ${percent}`);
    this.pending.progress = Math.min(100, Math.max(0, Math.round(percent)));
    if (message !== undefined) this.pending.message = clip(message, MAX_MESSAGE);
    this.reportSoon();
  }

  /** At most one report a second: sooner than the next heartbeat when that is later. */
  private reportSoon(): void {
    this.schedule(Math.max(0, this.lastProgress + PROGRESS_EVERY - Date.now()), true);
  }

  /** Heartbeat in ms; an earlier one (progress) replaces a later one. */
  private schedule(ms: number, sooner = false): void {
    if (this.superseded || this.finishedAt !== 0) return;
    if (sooner && this.beat && this.nextBeat <= Date.now() + ms) return;
    clearTimeout(this.beat);
    this.nextBeat = Date.now() + ms;
    this.beat = setTimeout(() => void this.heartbeat(), ms);
  }
  private async heartbeat(): Promise<void> {
    this.beat = undefined;
    if (this.heartbeating) return this.schedule(50);
    this.heartbeating = true;
    const body = this.pending;
    this.pending = {};
    if (body.progress !== undefined || body.message !== undefined) this.lastProgress = Date.now();
    try {
      const sent = Date.now();
      const answer = await this.client.call(`${this.path}:heartbeat`, body, { until: this.leaseEnd });
      if (!answer.ok) {
        this.superseded = true;
        this.w.say("attempt superseded", { ...this.fields(), why: answer.why });
        this.interrupt(new Superseded(answer.why));
        return;
      }
      // The lease counts from the leader's receipt: at the latest, from our answer; at
      // the earliest, from our send. Count from the send.
      this.leaseEnd = sent + (durationMs(answer.doc["lease"] as string) || this.leaseMs);
    } catch (err) {
      if (err instanceof ProtocolError) {
        this.w.say("heartbeat refused", { ...this.fields(), error: err.message });
      }
      if (Date.now() >= this.leaseEnd) {
        this.w.say("attempt lost with its lease", { ...this.fields(), error: String(err) });
        this.interrupt(new LeaseLost("no heartbeat reached the leader within the lease"));
        return;
      }
    } finally {
      this.heartbeating = false;
    }
    this.schedule(this.leaseMs / 3);
    if (this.pending.progress !== undefined || this.pending.message !== undefined) this.reportSoon();
  }

  /** Abort the handler with reason; complete the attempt if it does not return soon. */
  interrupt(reason: Error): void {
    if (this.interrupted || this.finishedAt !== 0) return;
    this.interrupted = reason;
    this.abort?.abort(reason);
    this.settleTimer = setTimeout(() => {
      const [outcome, detail] = interruptedBy(reason);
      this.w.say("handler did not return after its attempt was interrupted", this.fields());
      void this.complete(outcome, detail);
    }, SETTLE_MS);
  }

  private async complete(outcome: Outcome, detail: string, output = ""): Promise<void> {
    if (this.finishedAt !== 0) return;
    this.finishedAt = Date.now();
    clearTimeout(this.beat);
    clearTimeout(this.settleTimer);
    const body: Record<string, unknown> = { outcome };
    if (detail) body["detail"] = clip(detail.replace(/[\r\n]+/g, " "), MAX_OUTPUT);
    if (output) body["output"] = clip(output, MAX_OUTPUT, true);
    try {
      const result = await this.completer.complete(this.o.run_id, this.o.token, body);
      if (result.kind === "superseded" && outcome !== "cancelled") this.w.say("outcome not taken: superseded", { ...this.fields(), why: result.why, outcome });
      if (result.kind === "refused") this.w.say("outcome refused", { ...this.fields(), outcome, error: result.error });
      if (result.kind === "lost") this.w.say("outcome not delivered", { ...this.fields(), outcome, error: result.error });
    } finally {
      this.w.finished(this);
    }
  }
}

// The offers of a wave share their slot: its canonical form is worked out once.
let lastSlot = "";
let lastSlotTime = "";

function slotTime(slot: string): string {
  if (slot !== lastSlot) {
    lastSlotTime = canonicalTime("slot", slot);
    lastSlot = slot;
  }
  return lastSlotTime;
}

function interruptedBy(reason: unknown): [Outcome, string] {
  const detail = reason instanceof Error ? reason.message : String(reason);
  return reason instanceof DeadlineExceeded ? ["deadline_exceeded", detail] : ["cancelled", detail];
}

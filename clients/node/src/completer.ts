// Outcomes go to the nodes in batches (POST /v1/attempts:batchComplete, docs/workers.md):
// the attempts that finish in one turn of the event loop cost one call between them, not
// a call each. Nodes of a release without that call get them one by one (:complete).
import { type Client, JSONText, ProtocolError, attemptPath } from "./client.js";

/** What became of an attempt's outcome. */
export type Result =
  /** The leader took it. */
  | { kind: "taken" }
  /** The attempt is no longer current (`lease_expired`, `cancelled`, `not_held`). */
  | { kind: "superseded"; why: string }
  /** The leader refused it for another reason (another token's attempt, say). */
  | { kind: "refused"; error: string }
  /** No node took it within COMPLETE_FOR. */
  | { kind: "lost"; error: string };

/** How long an outcome is retried. */
const COMPLETE_FOR = 60_000;
/** How long outcomes go one by one once a node said it has no batch call. */
export const ONE_BY_ONE_FOR = 60_000;

const BATCH_PATH = "/v1/attempts:batchComplete";
/** The most outcomes of one call (the protocol's bound). */
const MAX_OUTCOMES = 1000;
/**
 * The most bytes of outcomes in one call: a node takes 4 MiB, and 1000 outcomes with 4 KiB
 * of output and of detail each would not fit.
 */
const MAX_BYTES = 1 << 20;
/** Batch calls in flight at once: outcomes that come meanwhile wait for the next call. */
const MAX_CALLS = 2;
/** Statuses of a node without the call: no route (404), or a leader without it (501). */
const UNSUPPORTED: ReadonlySet<number> = new Set([404, 501]);

/** One outcome of the batch call: the `:complete` body with its attempt. */
type Item = { run_id: string; token: string } & Record<string, unknown>;

interface Pending {
  item: Item;
  /** The item in JSON, written once: its size decides the batch, and the batch is made of it. */
  json: string;
  bytes: number;
  until: number;
  settle: (r: Result) => void;
}

interface ResultDoc {
  taken?: boolean;
  superseded?: string;
  error?: string;
}

/** A worker's outcomes on their way to the leader. */
export class Completer {
  private queue: Pending[] = [];
  private flushSet = false;
  private calls = 0;
  private oneByOneUntil = 0;

  constructor(
    private readonly client: Client,
    private readonly log: (message: string, fields?: Record<string, unknown>) => void,
  ) {}

  /** Report an attempt's outcome (a `:complete` body); resolves with what became of it, never rejects. */
  complete(runId: string, token: string, body: Record<string, unknown>): Promise<Result> {
    const item: Item = { run_id: runId, token, ...body };
    const json = JSON.stringify(item);
    return new Promise((settle) => {
      this.queue.push({ item, json, bytes: Buffer.byteLength(json), until: Date.now() + COMPLETE_FOR, settle });
      this.flushSoon();
    });
  }

  private flushSoon(): void {
    if (this.flushSet || this.queue.length === 0) return;
    this.flushSet = true;
    setImmediate(() => {
      this.flushSet = false;
      this.flush();
    });
  }

  private flush(): void {
    if (Date.now() < this.oneByOneUntil) {
      for (const p of this.queue.splice(0)) void this.one(p);
      return;
    }
    while (this.queue.length > 0 && this.calls < MAX_CALLS) void this.batch(this.take());
  }

  /** The oldest outcomes that fit in one call. */
  private take(): Pending[] {
    let n = 0;
    let bytes = 0;
    for (const p of this.queue) {
      if (n === MAX_OUTCOMES || (n > 0 && bytes + p.bytes > MAX_BYTES)) break;
      bytes += p.bytes;
      n++;
    }
    return this.queue.splice(0, n);
  }

  private async batch(items: Pending[]): Promise<void> {
    this.calls++;
    // The queue is in order of outcome, and so is a batch: its first outcome gives up first.
    const until = (items[0] as Pending).until;
    try {
      const body = new JSONText(`{"outcomes":[${items.map((p) => p.json).join(",")}]}`);
      const answer = await this.client.call(BATCH_PATH, body, { until, unsupported: UNSUPPORTED });
      const results = answer.ok ? answer.doc["results"] : undefined;
      if (Array.isArray(results) && results.length === items.length) {
        items.forEach((p, i) => p.settle(resultOf(results[i] as ResultDoc | null)));
      } else {
        const error = `${BATCH_PATH} answered ${Array.isArray(results) ? results.length : "no"} results for ${items.length} outcomes`;
        for (const p of items) p.settle({ kind: "refused", error });
      }
    } catch (err) {
      this.failed(items, until, err);
    } finally {
      this.calls--;
      this.flushSoon();
    }
  }

  private failed(items: Pending[], until: number, err: unknown): void {
    if (err instanceof ProtocolError && UNSUPPORTED.has(err.status)) {
      if (Date.now() >= this.oneByOneUntil) {
        this.log("the nodes have no batch complete: completing attempts one by one", { status: err.status, for_ms: ONE_BY_ONE_FOR });
      }
      this.oneByOneUntil = Date.now() + ONE_BY_ONE_FOR;
      for (const p of items) void this.one(p);
    } else if (err instanceof ProtocolError && err.status === 400) {
      // One bad outcome refuses the whole call: one by one, only it is refused.
      for (const p of items) void this.one(p);
    } else if (err instanceof ProtocolError) {
      for (const p of items) p.settle({ kind: "refused", error: err.message });
    } else {
      // Retried until the first outcome's time ran out: the others get the rest of theirs.
      const left = items.filter((p) => p.until > until);
      for (const p of items) if (p.until <= until) p.settle({ kind: "lost", error: String(err) });
      this.queue.unshift(...left);
    }
  }

  /** The per-attempt `:complete`, for nodes without the batch call. */
  private async one(p: Pending): Promise<void> {
    const { run_id, token, ...body } = p.item;
    try {
      const answer = await this.client.call(`${attemptPath(run_id, token)}:complete`, body, { until: p.until });
      p.settle(answer.ok ? { kind: "taken" } : { kind: "superseded", why: answer.why });
    } catch (err) {
      p.settle({ kind: "lost", error: String(err) });
    }
  }
}

function resultOf(r: ResultDoc | null): Result {
  if (r?.taken === true) return { kind: "taken" };
  if (r?.superseded) return { kind: "superseded", why: r.superseded };
  if (r?.error) return { kind: "refused", error: r.error };
  return { kind: "refused", error: `an empty result: ${JSON.stringify(r)}` };
}

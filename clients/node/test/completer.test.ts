// How the worker reports outcomes (POST /v1/attempts:batchComplete, docs/workers.md),
// against nodes faked in its fetch: batches, their results, the one-by-one fallback to nodes
// without the call, and retries.
import assert from "node:assert/strict";
import { describe, it, type TestContext } from "node:test";
import { Client } from "../src/client.js";
import { Completer, ONE_BY_ONE_FOR } from "../src/completer.js";
import { Fenced, Worker } from "../src/index.js";
import { waitFor } from "./node.js";

type Doc = Record<string, unknown>;
interface Call {
  url: string;
  path: string;
  body: Doc;
}
type Answer = { status: number; doc: Doc };

const ADDRS = ["127.0.0.1:7001", "127.0.0.2:7001"];

function offer(runId: string, token: number, payload = ""): Doc {
  return { run_id: runId, job: "charge", slot: "2026-11-28T03:00:00Z", attempt: 1, token: String(token), payload, handler: "charge", idempotency_key: `charge:${runId}`, limit: "60s", lease: "10s" };
}

const taken: Answer = { status: 200, doc: {} };

/** The error document of a gRPC status as the gateway answers it. */
function status(code: number, reason = ""): Answer {
  return { status: code, doc: { code, message: `status ${code}`, details: reason ? [{ reason }] : [] } };
}

/**
 * Nodes faked in a fetch: polls answer the waves of offers `offer()` adds, one wave a poll,
 * and otherwise wait for the next; the batch call and :complete answer as `batch` and
 * `complete` say.
 */
class FakeNodes {
  readonly calls: Call[] = [];
  private waves: Doc[][] = [];
  private wake: (() => void) | undefined;

  constructor(
    private readonly batch: (body: Doc, n: number) => Answer,
    private readonly complete: (path: string, body: Doc) => Answer = () => taken,
  ) {}

  offer(...offers: Doc[]): void {
    this.waves.push(offers);
    this.wake?.();
  }

  of(suffix: string): Call[] {
    return this.calls.filter((c) => c.path.endsWith(suffix));
  }

  /** The outcomes the batch calls carried, each call's in order. */
  outcomes(): Doc[][] {
    return this.of(":batchComplete").map((c) => c.body["outcomes"] as Doc[]);
  }

  readonly fetch: typeof fetch = async (input, init) => {
    const url = String(input);
    const path = new URL(url).pathname;
    const body = JSON.parse(String(init?.body ?? "{}")) as Doc;
    if (path.endsWith(":poll")) return this.poll(init?.signal ?? undefined);
    this.calls.push({ url, path, body });
    const a = path.endsWith(":batchComplete") ? this.batch(body, this.of(":batchComplete").length) : this.complete(path, body);
    return new Response(JSON.stringify(a.doc), { status: a.status, headers: { "Content-Type": "application/json" } });
  };

  private async poll(signal: AbortSignal | undefined): Promise<Response> {
    while (this.waves.length === 0) {
      await new Promise<void>((resolve, reject) => {
        this.wake = resolve;
        signal?.addEventListener("abort", () => reject(signal.reason), { once: true });
      });
    }
    return new Response(JSON.stringify({ offers: this.waves.shift() }), { status: 200 });
  }
}

interface Logged {
  msg: string;
  fields: Doc;
}

/** A worker of the fake nodes whose handler does what the payload says; run until stopped. */
function workerOf(t: TestContext, nodes: FakeNodes, opts: { stopGraceMs?: number } = {}): { w: Worker; logs: Logged[]; stopped: Promise<void> } {
  const logs: Logged[] = [];
  const w = new Worker({ pool: "batch", addrs: ADDRS, id: "w1", handleSignals: false, fetch: nodes.fetch, log: (msg, fields = {}) => logs.push({ msg, fields }), ...opts });
  w.handler("charge", async (ctx) => {
    const [what, arg] = ctx.payload.split(":");
    if (what === "fail") throw new Error(arg);
    if (what === "fence") throw new Fenced(`token ${ctx.token} refused`);
    if (what === "wait") await new Promise((r) => ctx.signal.addEventListener("abort", r, { once: true }));
    if (what === "late") {
      // Reads its signal only after its limit passed.
      await new Promise((r) => setTimeout(r, Number(arg)));
      const reason: unknown = ctx.signal.reason;
      return ctx.signal.aborted ? `aborted: ${reason instanceof Error ? reason.constructor.name : String(reason)}` : "not aborted";
    }
    return arg;
  });
  const stopped = w.run();
  stopped.catch(() => {});
  t.after(() => w.stop());
  return { w, logs, stopped };
}

/** What the outcome logs say, by run ID. */
function outcomeLogs(logs: Logged[]): Record<string, Logged> {
  return Object.fromEntries(logs.filter((l) => l.msg.startsWith("outcome")).map((l) => [l.fields["run_id"] as string, l]));
}

function byRun(outcomes: Doc[]): Record<string, Doc> {
  return Object.fromEntries(outcomes.map((o) => [o["run_id"] as string, o]));
}

const allTaken = (body: Doc): Answer => ({ status: 200, doc: { results: (body["outcomes"] as Doc[]).map(() => ({ taken: true })) } });

describe("outcomes", () => {
  it("go out as one batch call for the attempts that finish in one turn, each with its outcome", async (t) => {
    const nodes = new FakeNodes(allTaken);
    const { w, logs, stopped } = workerOf(t, nodes);
    nodes.offer(offer("r1", 11, "ok:out-1"), offer("r2", 12, "ok:out-2"), offer("r3", 13, "ok"), offer("r4", 14, "fail:boom"), offer("r5", 15, "fence"));
    await waitFor("five outcomes reported", 5000, () => nodes.outcomes().flat().length === 5 && w.active === 0);
    assert.equal(nodes.of(":batchComplete").length, 1, "batch calls");
    assert.equal(nodes.of(":complete").length, 0, "per-attempt completes");
    assert.deepEqual(byRun(nodes.outcomes()[0] ?? []), {
      r1: { run_id: "r1", token: "11", outcome: "succeeded", output: "out-1" },
      r2: { run_id: "r2", token: "12", outcome: "succeeded", output: "out-2" },
      r3: { run_id: "r3", token: "13", outcome: "succeeded" },
      r4: { run_id: "r4", token: "14", outcome: "failed", detail: "boom" },
      r5: { run_id: "r5", token: "15", outcome: "fenced", detail: "token 15 refused" },
    });
    assert.deepEqual(outcomeLogs(logs), {});
    w.stop();
    await stopped;
  });

  it("map their results to their attempts: taken, superseded and refused ones logged, an own cancel not", async (t) => {
    const refusal = "attempt 1 of run r-other was offered to a worker of another ACL token";
    const results: Record<string, Doc> = { "r-taken": { taken: true }, "r-late": { superseded: "lease_expired" }, "r-other": { error: refusal }, "r-cancel": { superseded: "not_held" } };
    const nodes = new FakeNodes((body) => ({ status: 200, doc: { results: (body["outcomes"] as Doc[]).map((o) => results[o["run_id"] as string]) } }));
    const { w, logs, stopped } = workerOf(t, nodes, { stopGraceMs: 0 });
    nodes.offer(offer("r-taken", 21, "ok"), offer("r-late", 22, "ok"), offer("r-other", 23, "fail:no"), offer("r-cancel", 24, "wait"));
    await waitFor("three outcomes reported", 5000, () => nodes.outcomes().flat().length === 3 && w.active === 1);
    w.stop(); // hands r-cancel back: cancelled
    await stopped;
    assert.deepEqual(byRun(nodes.outcomes().flat())["r-cancel"], { run_id: "r-cancel", token: "24", outcome: "cancelled", detail: "the worker is stopping" });
    const logged = outcomeLogs(logs);
    assert.deepEqual(Object.keys(logged).sort(), ["r-late", "r-other"]);
    assert.equal(logged["r-late"]?.msg, "outcome not taken: superseded");
    assert.equal(logged["r-late"]?.fields["why"], "lease_expired");
    assert.equal(logged["r-other"]?.msg, "outcome refused");
    assert.equal(logged["r-other"]?.fields["error"], refusal);
    assert.equal(w.active, 0);
  });

  for (const [code, why] of [
    [404, "a node without the route"],
    [501, "a leader without the call"],
  ] as const) {
    it(`go one by one with :complete after a ${code} (${why}), for a while, then in a batch again`, async (t) => {
      t.mock.timers.enable({ apis: ["Date"], now: Date.now() });
      const nodes = new FakeNodes((body, n) => (n === 1 ? status(code) : allTaken(body)));
      const { w, logs, stopped } = workerOf(t, nodes);
      nodes.offer(offer("r1", 31, "ok:a"), offer("r2", 32, "fail:b"));
      await waitFor("two completes", 5000, () => nodes.of(":complete").length === 2 && w.active === 0);
      assert.equal(nodes.of(":batchComplete").length, 1, "batch calls");
      assert.deepEqual(
        nodes.of(":complete").map((c) => [c.path, c.body]),
        [
          ["/v1/attempts/r1/31:complete", { outcome: "succeeded", output: "a" }],
          ["/v1/attempts/r2/32:complete", { outcome: "failed", detail: "b" }],
        ],
      );
      assert.deepEqual(outcomeLogs(logs), {});
      assert.ok(logs.some((l) => l.msg.includes("one by one") && l.fields["status"] === code), "the fallback not logged");

      nodes.offer(offer("r3", 33, "ok"));
      await waitFor("the next outcome one by one", 5000, () => nodes.of(":complete").length === 3 && w.active === 0);
      assert.equal(nodes.of(":batchComplete").length, 1, "a batch call within the fallback");

      t.mock.timers.tick(ONE_BY_ONE_FOR);
      nodes.offer(offer("r4", 34, "ok"), offer("r5", 35, "ok"));
      await waitFor("the batch call again", 5000, () => nodes.outcomes().flat().length === 4 && w.active === 0);
      assert.equal(nodes.of(":batchComplete").length, 2, "batch calls");
      assert.deepEqual(nodes.outcomes()[1]?.map((o) => o["run_id"]), ["r4", "r5"]);
      assert.equal(nodes.of(":complete").length, 3, "per-attempt completes");
      w.stop();
      await stopped;
    });
  }

  it("retry the whole batch call after a 503, on the next node", async (t) => {
    const nodes = new FakeNodes((body, n) => (n === 1 ? status(503, "NOT_LEADER") : allTaken(body)));
    const { w, logs, stopped } = workerOf(t, nodes);
    nodes.offer(offer("r1", 41, "ok"), offer("r2", 42, "fail:x"), offer("r3", 43, "ok"));
    await waitFor("the attempts done", 5000, () => nodes.of(":batchComplete").length === 2 && w.active === 0);
    const [first, second] = nodes.of(":batchComplete");
    assert.deepEqual(second?.body, first?.body);
    assert.equal((second?.body["outcomes"] as Doc[]).length, 3);
    assert.notEqual(new URL(second?.url ?? "").host, new URL(first?.url ?? "").host, "retried on the same node");
    assert.equal(nodes.of(":complete").length, 0, "per-attempt completes");
    assert.deepEqual(outcomeLogs(logs), {});
    w.stop();
    await stopped;
  });

  it("go one by one when the batch call refuses them as bad (400), only the bad one refused", async (t) => {
    const nodes = new FakeNodes(() => status(400), (path) => (path.includes("/r2/") ? status(400) : taken));
    const { w, logs, stopped } = workerOf(t, nodes);
    nodes.offer(offer("r1", 51, "ok"), offer("r2", 52, "ok"));
    await waitFor("two completes", 5000, () => nodes.of(":complete").length === 2 && w.active === 0);
    assert.deepEqual(Object.keys(outcomeLogs(logs)), ["r2"]);
    nodes.offer(offer("r3", 53, "ok"));
    await waitFor("a batch call again", 5000, () => nodes.of(":batchComplete").length === 2);
    w.stop();
    await stopped;
  });

  it("of an attempt interrupted before its handler read its signal: the signal reads aborted with the reason", async (t) => {
    const nodes = new FakeNodes(allTaken);
    const { w, stopped } = workerOf(t, nodes);
    nodes.offer({ ...offer("r1", 61, "late:300"), limit: "0.050s" });
    await waitFor("the outcome", 5000, () => nodes.outcomes().flat().length === 1 && w.active === 0);
    const [out] = nodes.outcomes().flat();
    assert.equal(out?.["outcome"], "deadline_exceeded");
    assert.equal(out?.["output"], "aborted: DeadlineExceeded");
    w.stop();
    await stopped;
  });

  it("hold at most 1000 outcomes and 1 MiB a call", async () => {
    const nodes = new FakeNodes(allTaken);
    const completer = new Completer(new Client(ADDRS, undefined, nodes.fetch), () => {});
    const small = Array.from({ length: 1500 }, (_, i) => completer.complete(`s${i}`, String(i + 1), { outcome: "succeeded" }));
    for (const r of await Promise.all(small)) assert.equal(r.kind, "taken");
    assert.deepEqual(nodes.outcomes().map((o) => o.length), [1000, 500]);

    const big = Array.from({ length: 300 }, (_, i) => completer.complete(`b${i}`, String(i + 1), { outcome: "succeeded", output: "x".repeat(4096) }));
    for (const r of await Promise.all(big)) assert.equal(r.kind, "taken");
    const sizes = nodes.of(":batchComplete").slice(2).map((c) => Buffer.byteLength(JSON.stringify(c.body)));
    assert.ok(sizes.length >= 2, `300 outcomes of 4 KiB in ${sizes.length} call`);
    for (const s of sizes) assert.ok(s <= (1 << 20) + 100, `a call of ${s} bytes`);
  });
});

// The worker SDK against a real node (RAFTCRON_BIN, set by `make clients-test`), with a
// worker lease of a second: an attempt of four leases stands for a 40 s one of a 10 s lease.
import assert from "node:assert/strict";
import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { describe, it, type TestContext } from "node:test";
import { DeadlineExceeded, Superseded, Worker, durationMs, type AttemptContext, type WorkerOptions } from "../src/index.js";
import { binary, startNode, waitFor, type Node } from "./node.js";

const LEASE = "1s";

async function nodeWithJob(t: TestContext, worker: Record<string, unknown> = {}, ...serveArgs: string[]): Promise<Node | undefined> {
  const bin = binary(t);
  if (!bin) return undefined;
  const node = await startNode(t, bin, "--worker-lease", LEASE, ...serveArgs);
  const spec = { name: "charge", schedule: "@yearly", worker: { pool: "batch", handler: "charge", payload: '{"mode":"full"}', ...worker } };
  const put = await node.api("PUT", "/v1/jobs/charge", spec);
  assert.equal(put.status, 200, JSON.stringify(put.doc));
  return node;
}

async function trigger(node: Node): Promise<string> {
  const r = await node.api("POST", "/v1/jobs/charge:trigger", {});
  assert.equal(r.status, 200, JSON.stringify(r.doc));
  return (r.doc["run"] as { id: string }).id;
}

interface RunView {
  state: string;
  attempts?: { token: string | number; state?: string; detail?: string; progress?: number; progress_message?: string }[];
}

async function runOf(node: Node, id: string): Promise<RunView> {
  return JSON.parse(await node.cli("run", "get", id, "-o", "json")) as RunView;
}

function worker(t: TestContext, node: Node, id: string, opts: Partial<WorkerOptions> = {}): Worker {
  const w = new Worker({ pool: "batch", addrs: [node.http], id, handleSignals: false, log: () => {}, ...opts });
  t.after(() => w.stop());
  return w;
}

/** Run w in the background; the promise settles when it stops. */
function serve(w: Worker): Promise<void> {
  const done = w.run();
  done.catch(() => {});
  return done;
}

/** A deferred: a promise and what settles it. */
function deferred<T>(): { promise: Promise<T>; resolve: (v: T) => void } {
  let resolve!: (v: T) => void;
  const promise = new Promise<T>((r) => (resolve = r));
  return { promise, resolve };
}

describe("worker", () => {
  it("parses proto JSON durations", () => {
    assert.equal(durationMs("10s"), 10_000);
    assert.equal(durationMs("0.500s"), 500);
    assert.equal(durationMs("3600s"), 3_600_000);
    assert.equal(durationMs("1m"), 0);
  });

  it("refuses a pool or an id the protocol would refuse, naming the field", () => {
    assert.throws(() => new Worker({ pool: "Bad Pool", addrs: ["127.0.0.1:1"] }), /^Error: pool:/);
    assert.throws(() => new Worker({ pool: "batch", id: "-x", addrs: ["127.0.0.1:1"] }), /^Error: id:/);
    assert.throws(() => new Worker({ pool: "batch", addrs: [] }), /^Error: addrs:/);
  });

  it("keeps an attempt of four leases alive by heartbeats, and its progress reaches run get", async (t) => {
    const node = await nodeWithJob(t);
    if (!node) return;
    const w = worker(t, node, "w1");
    const halfway = deferred<void>();
    const release = deferred<void>();
    let seen: AttemptContext | undefined;
    w.handler("charge", async (ctx) => {
      seen = ctx;
      ctx.progress(50, "half way");
      halfway.resolve();
      await release.promise;
      return "charged\n";
    });
    const stopped = serve(w);
    const id = await trigger(node);
    await halfway.promise;
    const started = Date.now();
    await waitFor("progress 50 in run get", 10_000, async () => {
      const a = (await runOf(node, id)).attempts?.[0];
      return a?.progress === 50 && a.progress_message === "half way";
    });
    // Four leases of running: the leader would have re-dispatched it after one.
    await new Promise((r) => setTimeout(r, Math.max(0, 4 * durationMs(LEASE) - (Date.now() - started))));
    assert.equal(seen?.signal.aborted, false, "the handler's signal aborted");
    release.resolve();
    await waitFor("the run to succeed", 10_000, async () => (await runOf(node, id)).state === "succeeded");
    const run = await runOf(node, id);
    assert.equal(run.attempts?.length, 1, `re-dispatched: ${JSON.stringify(run)}`);
    assert.equal(String(run.attempts?.[0]?.token), seen?.token.toString());
    w.stop();
    await stopped;
  });

  it("reports an outcome with the batch call, which the node takes", async (t) => {
    const node = await nodeWithJob(t);
    if (!node) return;
    const paths: string[] = [];
    const recording: typeof fetch = async (input, init) => {
      paths.push(new URL(String(input)).pathname);
      return fetch(input, init);
    };
    const w = worker(t, node, "w-batch", { fetch: recording });
    w.handler("charge", async () => "charged\n");
    const stopped = serve(w);
    const id = await trigger(node);
    await waitFor("the run to succeed", 10_000, async () => (await runOf(node, id)).state === "succeeded");
    assert.deepEqual(paths.filter((p) => p.includes(":batchComplete") || p.endsWith(":complete")), ["/v1/attempts:batchComplete"]);
    w.stop();
    await stopped;
  });

  it("loses the attempt of a worker that stops heartbeating to another, under a larger token; the old token's heartbeat is 409", async (t) => {
    const node = await nodeWithJob(t);
    if (!node) return;
    const id = await trigger(node);
    // A worker that takes the offer and then says nothing.
    const polled = await node.api("POST", "/v1/workers/silent:poll", { pool: "batch", handlers: ["charge"], wait: "10s" });
    const offer = (polled.doc["offers"] as { run_id: string; token: string }[] | undefined)?.[0];
    assert.ok(offer, `no offer: ${JSON.stringify(polled.doc)}`);
    assert.equal(offer.run_id, id);

    const w = worker(t, node, "w2");
    const took = deferred<AttemptContext>();
    w.handler("charge", async (ctx) => {
      took.resolve(ctx);
      return "";
    });
    const stopped = serve(w);
    const ctx = await took.promise;
    assert.equal(ctx.runId, id);
    assert.ok(ctx.token > BigInt(offer.token), `token ${ctx.token} not above the lost attempt's ${offer.token}`);
    assert.equal(ctx.attempt, 2);

    const late = await node.api("POST", `/v1/attempts/${id}/${offer.token}:heartbeat`, { progress: 10 });
    assert.equal(late.status, 409, JSON.stringify(late.doc));
    assert.match(JSON.stringify(late.doc), /"reason":"SUPERSEDED".*"why":"lease_expired"/);
    await waitFor("the run to succeed", 10_000, async () => (await runOf(node, id)).state === "succeeded");
    w.stop();
    await stopped;
  });

  it("aborts the handler of an attempt whose heartbeat answers 409 after it was re-dispatched", async (t) => {
    const node = await nodeWithJob(t);
    if (!node) return;
    // The first worker's heartbeats are held back past the lease, as a long pause would.
    const held = deferred<void>();
    const holding: typeof fetch = async (input, init) => {
      if (String(input).endsWith(":heartbeat")) await held.promise;
      return fetch(input, init);
    };
    const slow = worker(t, node, "slow", { concurrency: 1, fetch: holding });
    const aborted = deferred<unknown>();
    const first = deferred<AttemptContext>();
    slow.handler("charge", async (ctx) => {
      first.resolve(ctx);
      await new Promise((r) => ctx.signal.addEventListener("abort", r, { once: true }));
      aborted.resolve(ctx.signal.reason);
      throw ctx.signal.reason;
    });
    const slowStopped = serve(slow);
    const id = await trigger(node);
    const ctx1 = await first.promise;
    slow.stop(); // it takes no other attempt; its running one stays

    const fast = worker(t, node, "fast");
    const second = deferred<AttemptContext>();
    fast.handler("charge", async (ctx) => {
      second.resolve(ctx);
      return "";
    });
    const fastStopped = serve(fast);
    const ctx2 = await second.promise;
    assert.ok(ctx2.token > ctx1.token, `re-dispatch token ${ctx2.token} not above ${ctx1.token}`);
    held.resolve();
    const reason = await aborted.promise;
    assert.ok(reason instanceof Superseded, `aborted with ${String(reason)}`);
    assert.equal(reason.why, "lease_expired");
    fast.stop();
    await Promise.all([slowStopped, fastStopped]);
  });

  it("aborts the handler of a cancelled run, and completes it cancelled", async (t) => {
    const node = await nodeWithJob(t);
    if (!node) return;
    const w = worker(t, node, "w3");
    const running = deferred<AttemptContext>();
    const aborted = deferred<unknown>();
    w.handler("charge", async (ctx) => {
      running.resolve(ctx);
      await new Promise((r) => ctx.signal.addEventListener("abort", r, { once: true }));
      aborted.resolve(ctx.signal.reason);
    });
    const stopped = serve(w);
    const id = await trigger(node);
    await running.promise;
    const c = await node.api("POST", `/v1/runs/${id}:cancel`, {});
    assert.equal(c.status, 200, JSON.stringify(c.doc));
    const reason = await aborted.promise;
    assert.ok(reason instanceof Superseded, `aborted with ${String(reason)}`);
    assert.equal(reason.why, "cancelled");
    await waitFor("the run to be cancelled", 10_000, async () => (await runOf(node, id)).state === "cancelled");
    w.stop();
    await stopped;
  });

  it("stops an attempt at its limit and completes it deadline_exceeded", async (t) => {
    const node = await nodeWithJob(t, { timeout: "1s" });
    if (!node) return;
    const w = worker(t, node, "w4");
    const aborted = deferred<unknown>();
    w.handler("charge", async (ctx) => {
      await new Promise((r) => ctx.signal.addEventListener("abort", r, { once: true }));
      aborted.resolve(ctx.signal.reason);
    });
    const stopped = serve(w);
    const id = await trigger(node);
    assert.ok((await aborted.promise) instanceof DeadlineExceeded);
    await waitFor("the attempt to be recorded past its limit", 10_000, async () => {
      const a = (await runOf(node, id)).attempts?.[0];
      return a?.state !== undefined && a.state !== "dispatched" && a.state !== "running";
    });
    w.stop();
    await stopped;
  });

  it("hands running attempts back on stop once the grace ran out", async (t) => {
    const node = await nodeWithJob(t);
    if (!node) return;
    const w = worker(t, node, "w5", { stopGraceMs: 200 });
    const running = deferred<void>();
    let reason: unknown;
    w.handler("charge", async (ctx) => {
      running.resolve();
      await new Promise((r) => ctx.signal.addEventListener("abort", r, { once: true }));
      reason = ctx.signal.reason;
    });
    const stopped = serve(w);
    const id = await trigger(node);
    await running.promise;
    w.stop();
    await stopped;
    assert.equal((reason as Error | undefined)?.constructor.name, "Stopping");
    assert.equal(w.active, 0);
    const other = worker(t, node, "w6");
    const again = deferred<AttemptContext>();
    other.handler("charge", async (ctx) => {
      again.resolve(ctx);
      return "";
    });
    const otherStopped = serve(other);
    assert.equal((await again.promise).runId, id, "the handed-back attempt was not offered again");
    other.stop();
    await otherStopped;
  });

  it("runs an offer whose signature verifies, and refuses one that does not, saying so", async (t) => {
    const dir = mkdtempSync(join(tmpdir(), "raftcron-keys-"));
    t.after(() => rmSync(dir, { recursive: true, force: true }));
    const key = "n3w-key-n3w-key-n3w-key-n3w-key-n3w-key=";
    writeFileSync(join(dir, "fence.key"), key + "\n");
    const node = await nodeWithJob(t, {}, "--fence-key-file", join(dir, "fence.key"));
    if (!node) return;

    let forgedRan = false;
    const forged = worker(t, node, "forged", { keys: ["another-key-another-key-another-key-1"] });
    forged.handler("charge", async () => {
      forgedRan = true;
      return "";
    });
    const forgedStopped = serve(forged);
    const refused = await trigger(node);
    await waitFor("the offer refused", 10_000, async () => (await runOf(node, refused)).state === "failed");
    assert.equal(forgedRan, false, "the handler ran an offer whose signature does not verify");
    assert.match((await runOf(node, refused)).attempts?.[0]?.detail ?? "", /bad signature/);
    forged.stop();
    await forgedStopped;

    const genuine = worker(t, node, "genuine", { keys: [key] });
    const ran = deferred<AttemptContext>();
    genuine.handler("charge", async (ctx) => {
      ran.resolve(ctx);
      return "";
    });
    const genuineStopped = serve(genuine);
    const id = await trigger(node);
    assert.equal((await ran.promise).runId, id);
    await waitFor("the run to succeed", 10_000, async () => (await runOf(node, id)).state === "succeeded");
    genuine.stop();
    await genuineStopped;
  });
});

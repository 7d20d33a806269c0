// The worker program of the SDKs' end-to-end test (test/e2e/sdk_workers_test.go): it serves
// the handler e2e-sink of pool E2E_POOL as worker E2E_WORKER_ID, polling the nodes at
// E2E_ADDRS. An attempt runs for the payload's run_ms, reporting progress, then posts to
// E2E_SINK/<job> with its fencing headers. It prints start, wrote and cancelled lines, each
// with the run ID and token, for the test to follow.
import {
  Fenced, HEADER_ATTEMPT, HEADER_FENCING_TOKEN, HEADER_IDEMPOTENCY_KEY, HEADER_JOB, HEADER_RUN_ID,
  HEADER_SCHEDULED_AT, Superseded, Worker, type AttemptContext,
} from "../src/index.js";

function say(what: string, ctx: AttemptContext, detail = ""): void {
  process.stdout.write(`${what} ${ctx.runId} ${ctx.token} ${detail}`.trimEnd() + "\n");
}

function pause(ms: number, signal: AbortSignal): Promise<void> {
  return new Promise((resolve) => {
    const t = setTimeout(resolve, ms);
    signal.addEventListener("abort", () => (clearTimeout(t), resolve()), { once: true });
  });
}

const env = (name: string): string => process.env[name] ?? "";
const worker = new Worker({ pool: env("E2E_POOL"), token: env("E2E_TOKEN") || undefined, addrs: env("E2E_ADDRS").split(","), id: env("E2E_WORKER_ID"), concurrency: 8 });

worker.handler("e2e-sink", async (ctx) => {
  const runMs = Number((JSON.parse(ctx.payload || "{}") as { run_ms?: number }).run_ms ?? 0);
  say("start", ctx);
  const end = Date.now() + runMs;
  for (let left = runMs; left > 0; left = end - Date.now()) {
    ctx.progress(100 * (1 - left / runMs), `${(left / 1000).toFixed(1)}s to go`);
    await pause(Math.min(left, 500), ctx.signal);
    if (ctx.signal.aborted) {
      const reason: unknown = ctx.signal.reason;
      say("cancelled", ctx, reason instanceof Superseded ? reason.why : String(reason));
      throw reason;
    }
  }
  const resp = await fetch(`${env("E2E_SINK")}/${ctx.job}`, {
    method: "POST",
    headers: {
      [HEADER_FENCING_TOKEN]: ctx.token.toString(), [HEADER_JOB]: ctx.job, [HEADER_RUN_ID]: ctx.runId,
      [HEADER_SCHEDULED_AT]: ctx.slot, [HEADER_ATTEMPT]: String(ctx.attempt), [HEADER_IDEMPOTENCY_KEY]: ctx.idempotencyKey,
    },
    signal: AbortSignal.timeout(5000),
  });
  say("wrote", ctx, String(resp.status));
  if (resp.status === 409) throw new Fenced(`the sink refused token ${ctx.token}`);
  if (resp.status !== 200) throw new Error(`the sink answered ${resp.status}`);
  return `sink ${resp.status}`;
});

await worker.run();

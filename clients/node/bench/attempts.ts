// The Node worker's CPU per attempt, without a network or a node: polls are answered from
// memory with offers shaped as a leader sends them, outcomes are taken at once. It prints
// one line of JSON: the attempts handled and the process's CPU per attempt in µs (user and
// system), the median and range of ROUNDS rounds, and the first round's, which pays for
// V8's compiling. `make -C clients node-bench` runs it.
import { Worker } from "../src/index.js";

const POLLS = Number(process.env["BENCH_POLLS"] ?? 10);
const ROUNDS = Number(process.env["BENCH_ROUNDS"] ?? 5);
const PER_POLL = 1000;

/** A poll answer of n offers, as the gateway writes one (proto JSON, proto field names). */
function pollAnswer(first: number, n: number): string {
  const now = Date.now();
  const at = (ms: number): string => new Date(now + ms).toISOString();
  const offers = [];
  for (let i = first; i < first + n; i++) {
    const job = `bench-${i}`;
    const runId = `${job}-1795000000`;
    const token = String(100_000 + i);
    const slot = "2026-11-28T11:32:56Z";
    offers.push({
      run_id: runId,
      job,
      slot,
      attempt: 1,
      token,
      env: {
        RAFTCRON_ATTEMPT: "1",
        RAFTCRON_FENCING_TOKEN: token,
        RAFTCRON_IDEMPOTENCY_KEY: `${job}/${slot}`,
        RAFTCRON_JOB: job,
        RAFTCRON_RUN_ID: runId,
        RAFTCRON_SCHEDULED_AT: slot,
      },
      deadline: at(3_600_000),
      lease_expires: at(30_000),
      handler: "record",
      idempotency_key: `${job}/${slot}`,
      limit: "3600s",
      lease: "30s",
    });
  }
  return JSON.stringify({ offers });
}

/** A fetch that answers POLLS polls of PER_POLL offers, then holds the next poll until aborted. */
function fakeFetch(): typeof globalThis.fetch {
  const answers = Array.from({ length: POLLS }, (_, i) => pollAnswer(i * PER_POLL, PER_POLL));
  let polls = 0;
  return async (input, init) => {
    const url = String(input);
    if (url.endsWith(":poll")) {
      if (polls < POLLS) {
        return new Response(answers[polls++], { status: 200 });
      }
      await new Promise((resolve) => init?.signal?.addEventListener("abort", resolve, { once: true }));
      throw new DOMException("aborted", "AbortError");
    }
    if (url.endsWith(":batchComplete")) {
      const n = (JSON.parse(String(init?.body)) as { outcomes: unknown[] }).outcomes.length;
      return new Response(JSON.stringify({ results: Array.from({ length: n }, () => ({ taken: true })) }), { status: 200 });
    }
    return new Response("{}", { status: 200 });
  };
}

async function round(): Promise<number> {
  const want = POLLS * PER_POLL;
  let handled = 0;
  let done!: () => void;
  const all = new Promise<void>((resolve) => (done = resolve));
  const fetch = fakeFetch();
  const w = new Worker({ pool: "bench", id: "bench", addrs: ["127.0.0.1:1"], concurrency: 10_000, handleSignals: false, fetch, log: () => {} });
  w.handler("record", async () => {
    if (++handled === want) done();
  });
  const start = process.cpuUsage();
  const running = w.run();
  await all;
  // The outcomes of the last attempts are part of their cost.
  while (w.active > 0) await new Promise((resolve) => setImmediate(resolve));
  const used = process.cpuUsage(start);
  w.stop();
  await running;
  return (used.user + used.system) / want;
}

const results: number[] = [];
for (let i = 0; i < ROUNDS; i++) results.push(await round());
// The first round runs the worker's code before V8 has optimized it, as a fresh worker
// process does (the workers-http scenario's do): it is reported on its own.
const first = results[0] as number;
results.sort((a, b) => a - b);
const median = results[Math.floor(results.length / 2)] as number;
const r1 = (x: number): number => Math.round(x * 10) / 10;
console.log(JSON.stringify({ attempts: POLLS * PER_POLL, rounds: ROUNDS, cpu_us_per_attempt: r1(median), range: [r1(results[0] as number), r1(results[results.length - 1] as number)], first_round: r1(first) }));

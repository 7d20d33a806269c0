// The worker program of the benchmark's workers-http scenario (bench/cmd/raftcron-bench): it
// serves the handler "record" of pool "bench" as worker BENCH_WORKER_ID, polling the nodes at
// BENCH_ADDRS, and prints "handled JOB SLOT_UNIX START_UNIX_MS" for every handler call, in
// batches, so that the printing does not delay the handlers it measures.
import { Worker } from "../src/index.js";

let lines: string[] = [];
const flush = (): void => {
  if (lines.length > 0) process.stdout.write(lines.join(""));
  lines = [];
};
setInterval(flush, 100);

const worker = new Worker({
  pool: "bench",
  id: process.env["BENCH_WORKER_ID"] ?? "bench-node",
  addrs: (process.env["BENCH_ADDRS"] ?? "").split(","),
  concurrency: 10_000,
  log: (msg, fields) => process.stderr.write(`${msg} ${JSON.stringify(fields ?? {})}\n`),
});
worker.handler("record", async (ctx) => {
  lines.push(`handled ${ctx.job} ${Date.parse(ctx.slot) / 1000} ${Date.now()}\n`);
});
await worker.run();
flush();
process.exit(0);

// A single raftcron node for the worker tests: the binary RAFTCRON_BIN names (the top-level
// `make clients-test` builds it), serving on loopback ports of its own, with a data
// directory that is removed with it.
import { type ChildProcess, execFile, spawn } from "node:child_process";
import { mkdtempSync, rmSync } from "node:fs";
import { createServer } from "node:net";
import { tmpdir } from "node:os";
import { join } from "node:path";
import type { TestContext } from "node:test";

export interface Node {
  http: string; // host:port of the JSON API
  grpc: string;
  /** POST or PUT body to path; the JSON answer and the status. */
  api(method: string, path: string, body?: unknown): Promise<{ status: number; doc: Record<string, unknown> }>;
  /** `raftcron <args> --addr <the node>`, its stdout. */
  cli(...args: string[]): Promise<string>;
}

/** The node's binary, or undefined after skipping t (failing it under CI=true). */
export function binary(t: TestContext): string | undefined {
  const bin = process.env["RAFTCRON_BIN"];
  if (bin) return bin;
  const why = "RAFTCRON_BIN is not set: the worker tests need the raftcron binary (make clients-test sets it)";
  if (process.env["CI"] === "true") throw new Error(why);
  t.skip(why);
  return undefined;
}

async function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const s = createServer();
    s.once("error", reject);
    s.listen(0, "127.0.0.1", () => {
      const port = (s.address() as { port: number }).port;
      s.close(() => resolve(port));
    });
  });
}

/** Wait until cond holds, polling, within ms; throw naming what was awaited. */
export async function waitFor(what: string, ms: number, cond: () => Promise<boolean> | boolean): Promise<void> {
  const until = Date.now() + ms;
  for (;;) {
    if (await cond()) return;
    if (Date.now() > until) throw new Error(`timed out after ${ms} ms waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 50));
  }
}

/** Start a one-node cluster with `serveArgs`; it is killed when t ends. */
export async function startNode(t: TestContext, bin: string, ...serveArgs: string[]): Promise<Node> {
  const dir = mkdtempSync(join(tmpdir(), "raftcron-node-test-"));
  const [raftPort, httpPort] = [await freePort(), await freePort()];
  const grpc = `127.0.0.1:${raftPort}`;
  const http = `127.0.0.1:${httpPort}`;
  let log = "";
  const proc: ChildProcess = spawn(bin, ["serve", "--id", "n1", "--addr", grpc, "--http-addr", http, "--peers", `n1=${grpc}`, "--data-dir", join(dir, "data"), "--log-level", "warn", ...serveArgs], { stdio: ["ignore", "pipe", "pipe"] });
  proc.stdout?.on("data", (b: Buffer) => (log += b.toString()));
  proc.stderr?.on("data", (b: Buffer) => (log += b.toString()));
  t.after(async () => {
    if (proc.exitCode === null) {
      const exited = new Promise((r) => proc.once("exit", r));
      proc.kill("SIGKILL");
      await exited;
    }
    rmSync(dir, { recursive: true, force: true });
  });
  const node: Node = {
    http,
    grpc,
    async api(method, path, body) {
      const resp = await fetch(`http://${http}${path}`, { method, headers: { "Content-Type": "application/json" }, body: body === undefined ? undefined : JSON.stringify(body) });
      const text = await resp.text();
      return { status: resp.status, doc: text ? (JSON.parse(text) as Record<string, unknown>) : {} };
    },
    cli(...args) {
      return new Promise((resolve, reject) =>
        execFile(bin, [...args, "--addr", grpc], { timeout: 20_000 }, (err, stdout, stderr) => (err ? reject(new Error(`raftcron ${args.join(" ")}: ${err.message}\n${stderr}`)) : resolve(stdout))),
      );
    },
  };
  await waitFor("the node to lead and serve the JSON API", 30_000, async () => {
    if (proc.exitCode !== null) throw new Error(`the node exited (${proc.exitCode}):\n${log}`);
    try {
      const r = await fetch(`http://${http}/readyz`);
      return r.ok;
    } catch {
      return false;
    }
  });
  // Worker jobs and progress need the cluster version this binary applies, which the
  // leader raises just after its election.
  await waitFor("the cluster version to reach the node's", 30_000, async () => {
    const st = (await node.api("GET", "/v1/cluster")).doc["status"] as { cluster_version?: number; command_version?: number } | undefined;
    return st?.cluster_version !== undefined && st.cluster_version === st.command_version;
  });
  return node;
}

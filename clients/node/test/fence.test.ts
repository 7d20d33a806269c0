// Unit tests, the shared conformance vectors, the middleware, and the SQL fence on the
// real PostgreSQL (RAFTCRON_TEST_POSTGRES, set by `make clients-test`).
import assert from "node:assert/strict";
import { mkdtempSync, readFileSync, writeFileSync } from "node:fs";
import { createServer, type Server } from "node:http";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { describe, it, type TestContext } from "node:test";
import pg from "pg";
import {
  Duplicate, Malformed, Refused, Stale, Verifier, canonicalV1, canonicalV2, createTables,
  fenceSql, middleware, parseEnv, parseHeaders, parseKeys, signV2, type Run,
} from "../src/index.js";

interface SigVector {
  name: string;
  transport: "http" | "exec";
  method?: string;
  url?: string;
  body: string;
  fields: Record<string, string>;
  signature: string;
  verifier: { keys: string[]; accept_v1: boolean; jobs: string[]; url_prefix: string };
  canonical_v1?: string;
  canonical_v2?: string;
  verdict: string;
}
interface FenceVector {
  name: string;
  steps: { scope: string; token: number; key: string; want: string }[];
  applied: string[];
}
const vectors = JSON.parse(readFileSync(new URL("../../../../fence/testdata/vectors.json", import.meta.url), "utf8")) as {
  keys: Record<string, string>;
  signatures: SigVector[];
  fence: FenceVector[];
};
const key = (name: string): string => vectors.keys[name] as string;

const parse = (v: SigVector): Run => (v.transport === "exec" ? parseEnv(v.fields) : parseHeaders(v.fields));
const reqOf = (v: SigVector) => ({ method: v.method ?? "", url: v.url ?? "", body: v.body });

function verdict(v: SigVector): string {
  const verifier = new Verifier(v.verifier.keys.map(key), {
    acceptV1: v.verifier.accept_v1, jobs: v.verifier.jobs, urlPrefix: v.verifier.url_prefix,
  });
  try {
    verifier.verify(parse(v), v.signature, reqOf(v));
  } catch (err) {
    if (err instanceof Refused) return err.verdict;
    throw err;
  }
  return "ok";
}

/** Skip locally, fail under CI (where every database must be there). */
function unavailable(t: TestContext, why: string): void {
  if (process.env.CI === "true") assert.fail(why);
  t.skip(why);
}

describe("conformance vectors", () => {
  for (const v of vectors.signatures) {
    it(v.name, () => {
      if (v.canonical_v2 === undefined) {
        assert.throws(() => parse(v), Malformed);
      } else {
        const run = parse(v);
        assert.equal(canonicalV1(run), v.canonical_v1);
        assert.equal(canonicalV2(run, reqOf(v)), v.canonical_v2);
      }
      assert.equal(verdict(v), v.verdict);
    });
  }
  it("signs the genuine vector", () => {
    const v = vectors.signatures.find((s) => s.name === "v2 genuine") as SigVector;
    assert.equal(signV2(key("new"), parse(v), reqOf(v)), v.signature);
  });
});

describe("parsing", () => {
  const good = (vectors.signatures[0] as SigVector).fields;
  it("names the bad field", () => {
    for (const [name, value] of [
      ["X-Raftcron-Fencing-Token", "-1"], ["X-Raftcron-Job", "Billing"], ["X-Raftcron-Attempt", "0"],
      ["X-Raftcron-Scheduled-At", "2026-02-30T01:02:03Z"], ["Idempotency-Key", "a\nb"], ["X-Raftcron-Run-Id", ""],
    ] as const) {
      assert.throws(() => parseHeaders({ ...good, [name]: value }), (e: unknown) => e instanceof Malformed && e.field === name && e.status === 400);
    }
    assert.throws(() => parseHeaders({ ...good, "x-raftcron-job": ["a", "b"] }), Malformed);
  });
  it("reads the key file", () => {
    assert.deepEqual(parseKeys(`# rotating\n\n  ${key("new")}  \n${key("old")}\n`).map((k) => Buffer.from(k).toString()), [key("new"), key("old")]);
    for (const bad of ["", "short\n", [key("new"), key("new"), key("new")].join("\n")]) assert.throws(() => parseKeys(bad));
  });
});

async function listen(server: Server): Promise<string> {
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  const addr = server.address() as { port: number };
  return `http://127.0.0.1:${addr.port}`;
}

function sampleRun(token: bigint): Run {
  return { token, job: "nightly-billing", runId: "r-1", idempotencyKey: "nightly-billing/2026-11-22T01:00:00Z", scheduledAt: "2026-11-22T01:00:00Z", attempt: 1 };
}

function headersFor(run: Run, signature: string): Record<string, string> {
  return {
    "X-Raftcron-Fencing-Token": run.token.toString(), "X-Raftcron-Job": run.job, "X-Raftcron-Run-Id": run.runId,
    "Idempotency-Key": run.idempotencyKey, "X-Raftcron-Scheduled-At": run.scheduledAt, "X-Raftcron-Attempt": String(run.attempt),
    "X-Raftcron-Signature": signature,
  };
}

describe("middleware", () => {
  it("passes a genuine dispatch with its body and refuses the others", async (t) => {
    const seen: string[] = [];
    const fenced = middleware(new Verifier([key("new")]));
    const server = createServer((req, res) => fenced(req, res, () => {
      seen.push(req.raftcron!.body.toString());
      res.end("applied");
    }));
    const base = await listen(server);
    t.after(() => server.close());
    const body = '{"amount":5}';
    const send = async (signer: string, path: string, sentPath = path) => {
      const run = sampleRun(42n);
      const sig = signV2(signer, run, { method: "POST", url: base + path, body });
      const r = await fetch(base + sentPath, { method: "POST", headers: headersFor(run, sig), body });
      return r.status;
    };
    assert.equal(await send(key("forger"), "/charge"), 401);
    assert.equal(await send(key("new"), "/charge", "/refund"), 401);
    assert.equal(seen.length, 0);
    assert.equal(await send(key("new"), "/charge?id=7"), 200);
    assert.deepEqual(seen, [body]);
  });
});

/** A database of the test's own, and its URL. */
async function database(t: TestContext): Promise<{ client: pg.Client; url: string } | undefined> {
  const url = process.env.RAFTCRON_TEST_POSTGRES;
  if (!url) {
    unavailable(t, "RAFTCRON_TEST_POSTGRES is not set: run through `make clients-test`");
    return undefined;
  }
  const name = `node_${process.pid}_${Math.floor(Math.random() * 1e9)}`;
  const admin = new pg.Client({ connectionString: url });
  await admin.connect();
  await admin.query(`CREATE DATABASE ${name}`);
  await admin.end();
  const own = url.replace("/postgres?", `/${name}?`);
  const client = new pg.Client({ connectionString: own });
  await client.connect();
  t.after(() => client.end());
  return { client, url: own };
}

describe("SQL fence on PostgreSQL", () => {
  it("plays the fence vectors", async (t) => {
    const db = await database(t);
    if (!db) return;
    const client = db.client;
    await createTables(client);
    await client.query("CREATE TABLE ledger (id BIGSERIAL PRIMARY KEY, idempotency_key TEXT)");
    for (const v of vectors.fence) {
      await client.query("DELETE FROM raftcron_fences; DELETE FROM raftcron_applied_runs; DELETE FROM ledger");
      const got: string[] = [];
      for (const s of v.steps) {
        const run = { ...sampleRun(BigInt(s.token)), idempotencyKey: s.key };
        try {
          await fenceSql(client, run, (c) => c.query("INSERT INTO ledger (idempotency_key) VALUES ($1)", [s.key]), { scope: s.scope });
          got.push("applied");
        } catch (err) {
          if (!(err instanceof Stale || err instanceof Duplicate)) throw err;
          got.push(err.verdict);
        }
      }
      assert.deepEqual(got, v.steps.map((s) => s.want), v.name);
      const ledger: pg.QueryResult<{ idempotency_key: string }> = await client.query("SELECT idempotency_key FROM ledger ORDER BY id");
      assert.deepEqual(ledger.rows.map((r) => r.idempotency_key), v.applied, v.name);
    }
  });

  it("commits nothing when the write fails", async (t) => {
    const db = await database(t);
    if (!db) return;
    const client = db.client;
    await createTables(client);
    await assert.rejects(fenceSql(client, sampleRun(7n), async () => { throw new Error("the write failed"); }), /the write failed/);
    assert.equal((await client.query("SELECT count(*)::int AS n FROM raftcron_applied_runs")).rows[0].n, 0);
    await fenceSql(client, sampleRun(7n), async () => undefined);
    await assert.rejects(fenceSql(client, { ...sampleRun(6n), idempotencyKey: "other" }, async () => undefined),
      (e: unknown) => e instanceof Stale && e.highest === 7n);
  });

  it("runs the README example as written", async (t) => {
    const db = await database(t);
    if (!db) return;
    const client = db.client;
    await client.query("CREATE TABLE charges (run TEXT, body BYTEA)");
    await createTables(client);
    const dir = mkdtempSync(join(tmpdir(), "raftcron-node-"));
    writeFileSync(join(dir, "raftcron-fence.key"), key("new") + "\n");
    const cwd = process.cwd();
    process.chdir(dir);
    process.env.DATABASE_URL = db.url;
    const example = await import("../examples/billing.js");
    process.chdir(cwd);
    const base = await listen(example.server);
    t.after(async () => { example.server.close(); await example.pool.end(); });
    const body = '{"amount":"12.50"}';
    const send = async (token: bigint, signer = key("new")) => {
      const run = sampleRun(token);
      const r = await fetch(base + "/charge", { method: "POST", headers: headersFor(run, signV2(signer, run, { method: "POST", url: base + "/charge", body })), body });
      return [r.status, await r.json()];
    };
    assert.deepEqual((await send(5n, key("forger")))[0], 401);
    assert.deepEqual(await send(5n), [200, { status: "applied" }]);
    assert.deepEqual(await send(6n), [200, { status: "duplicate" }]);
    assert.deepEqual((await send(4n))[0], 409);
    const rows = await client.query("SELECT run, convert_from(body, 'UTF8') AS body FROM charges");
    assert.deepEqual(rows.rows, [{ run: "nightly-billing/2026-11-22T01:00:00Z", body }]);
  });
});

// A service that raftcron's job "slots" calls: it records each slot once, with the fencing
// token of the attempt that applied it, in PostgreSQL (pg). The middleware verifies the
// signature before anything reaches the database (401), and the write goes through
// fenceSql, so a paused old leader's late attempt is refused by the database (409).
//
//   DATABASE_URL=postgres://... FENCE_KEY_FILE=raftcron-fence.key PORT=8080 node dist/examples/slots.js
//
// It prints "listening on HOST:PORT" (PORT 0: any free port). UNFENCED=1 writes without the
// fence, for the end-to-end tests' negative control only.
import { createServer } from "node:http";
import type { AddressInfo } from "node:net";
import pg from "pg";
import { Verifier, answerRefused, createTables, fenceSql, loadKeys, middleware, type Queryable } from "raftcron";

const pool = new pg.Pool({ connectionString: process.env.DATABASE_URL });
await createTables(pool);
await pool.query("CREATE TABLE IF NOT EXISTS slots (id BIGSERIAL PRIMARY KEY, slot TEXT NOT NULL, token BIGINT NOT NULL)");
const unfenced = process.env.UNFENCED === "1";
const fenced = middleware(new Verifier(loadKeys(process.env.FENCE_KEY_FILE!), { jobs: ["slots"] }));

const server = createServer((req, res) => fenced(req, res, async () => {
  const { run } = req.raftcron!;
  const record = (c: Queryable) => c.query("INSERT INTO slots (slot, token) VALUES ($1, $2)", [run.scheduledAt, run.token.toString()]);
  const client = await pool.connect();
  try {
    await (unfenced ? record(client) : fenceSql(client, run, record));
    res.end(JSON.stringify({ status: "applied" }));
  } catch (err) {
    if (!answerRefused(res, err)) res.writeHead(500).end();
  } finally {
    client.release();
  }
}));
server.listen(Number(process.env.PORT ?? 8080), "127.0.0.1", () => {
  const { address, port } = server.address() as AddressInfo;
  console.log(`listening on ${address}:${port}`);
});

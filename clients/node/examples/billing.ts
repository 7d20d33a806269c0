// A service that receives raftcron's nightly-billing webhook and charges once per run.
// [docs:node]
import { createServer } from "node:http";
import pg from "pg";
import { Verifier, answerRefused, fenceSql, loadKeys, middleware } from "raftcron";

export const pool = new pg.Pool({ connectionString: process.env.DATABASE_URL });
const fenced = middleware(new Verifier(loadKeys("raftcron-fence.key"), { jobs: ["nightly-billing"] }));
export const server = createServer((req, res) => fenced(req, res, async () => {
  const { run, body } = req.raftcron!;
  const client = await pool.connect();
  await fenceSql(client, run, (c) => c.query("INSERT INTO charges VALUES ($1, $2)", [run.idempotencyKey, body]))
    .then(() => res.end(JSON.stringify({ status: "applied" })), (err) => answerRefused(res, err) || res.writeHead(500).end())
    .finally(() => client.release());
}));
// [/docs:node]

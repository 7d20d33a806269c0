// The SQL fence for PostgreSQL through `pg` (or any client with the same query method):
// the tables and statements of Go's fence/sqlfence, so services in several languages can
// share them.
import { Duplicate, MAX_FIELD_LEN, Stale, type Run } from "./fence.js";

/** What fenceSql needs of a client: `pg`'s Client or a PoolClient has it. */
export interface Queryable {
  query(text: string, values?: unknown[]): Promise<{ rowCount: number | null; rows: any[] }>;
}

export const CREATE_TABLES = [
  "CREATE TABLE IF NOT EXISTS raftcron_fences (scope TEXT PRIMARY KEY, token BIGINT NOT NULL)",
  "CREATE TABLE IF NOT EXISTS raftcron_applied_runs (idempotency_key TEXT PRIMARY KEY, " +
    "token BIGINT NOT NULL, applied_at TIMESTAMPTZ NOT NULL DEFAULT now())",
];

/** Create the fence tables if they do not exist. */
export async function createTables(client: Queryable): Promise<void> {
  for (const stmt of CREATE_TABLES) await client.query(stmt);
}

/**
 * Run `write(client)` for `run` in one transaction with the fence, as Go's
 * sqlfence.Update does: throw Stale (nothing committed) if a higher token was admitted
 * for `scope` (default: the job); throw Duplicate (the admission committed, `write` not
 * called) if the key was recorded; otherwise call `write` and commit it with the token
 * and the key, or roll all back if it throws. Use a client of its own (from pool.connect()),
 * not inside a transaction; it runs at READ COMMITTED.
 */
export async function fenceSql<T>(client: Queryable, run: Run, write: (client: Queryable) => Promise<T>, opts: { scope?: string } = {}): Promise<T> {
  const scope = opts.scope || run.job;
  if (run.token <= 0n || run.token >= 1n << 63n) throw new RangeError(`token ${run.token}: outside 1..2^63-1, which a BIGINT holds`);
  if (Buffer.byteLength(scope) > MAX_FIELD_LEN || Buffer.byteLength(run.idempotencyKey) > MAX_FIELD_LEN) {
    throw new RangeError(`scope and idempotency key must be at most ${MAX_FIELD_LEN} bytes`);
  }
  const token = run.token.toString();
  await client.query("BEGIN ISOLATION LEVEL READ COMMITTED");
  try {
    await client.query("INSERT INTO raftcron_fences (scope, token) VALUES ($1, 0) ON CONFLICT (scope) DO NOTHING", [scope]);
    const adv = await client.query("UPDATE raftcron_fences SET token = $1 WHERE scope = $2 AND token <= $1", [token, scope]);
    if (adv.rowCount !== 1) {
      const h = await client.query("SELECT token FROM raftcron_fences WHERE scope = $1", [scope]);
      throw new Stale(scope, run.token, BigInt(h.rows[0].token));
    }
    const rec = await client.query(
      "INSERT INTO raftcron_applied_runs (idempotency_key, token) VALUES ($1, $2) ON CONFLICT (idempotency_key) DO NOTHING",
      [run.idempotencyKey, token],
    );
    if (rec.rowCount === 0) {
      await client.query("COMMIT");
      throw new Duplicate(run.idempotencyKey);
    }
    const result = await write(client);
    await client.query("COMMIT");
    return result;
  } catch (err) {
    if (!(err instanceof Duplicate)) await client.query("ROLLBACK");
    throw err;
  }
}

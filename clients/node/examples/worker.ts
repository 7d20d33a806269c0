// A worker of the billing pool: it charges the cards of each attempt's payload, fencing every
// charge on the attempt's token, and reports its progress.

// [docs:node-worker]
import { Worker, loadKeys } from "raftcron";

const worker = new Worker({ pool: "billing", token: process.env.RAFTCRON_TOKEN,
  addrs: ["10.0.0.1:8001", "10.0.0.2:8001", "10.0.0.3:8001"], keys: loadKeys("raftcron-fence.key") });
worker.handler("charge", async (ctx) => {
  const cards = JSON.parse(ctx.payload) as string[];
  for (const [i, card] of cards.entries()) {
    ctx.signal.throwIfAborted(); // cancelled, superseded, past its deadline, or the worker stops
    await charge(card, ctx.token, ctx.idempotencyKey);
    ctx.progress((100 * (i + 1)) / cards.length, `charged ${i + 1} of ${cards.length}`);
  }
  return `charged ${cards.length} cards`;
});
await worker.run(); // until SIGTERM: running attempts finish, or are handed back
// [/docs:node-worker]

/** Your downstream: it must refuse a token older than one it has seen (docs/fencing.md). */
async function charge(card: string, token: bigint, idempotencyKey: string): Promise<void> {
  void [card, token, idempotencyKey];
}

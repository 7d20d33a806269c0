# A worker of pool billing that charges once per run, fenced on its token.
# [docs:python-worker]
import os, sqlite3
from raftcron import fence
from raftcron.worker import Context, Worker

db = sqlite3.connect("billing.db", check_same_thread=False)
fence.create_tables(db)
worker = Worker("billing", os.environ.get("RAFTCRON_TOKEN"), ["127.0.0.1:8001", "127.0.0.1:8002"], concurrency=1)

@worker.handler("charge")
def charge(ctx: Context) -> str:
    ctx.progress(10, "charging")  # raftcron run get shows it
    fence.fence_sql(db, ctx.run, lambda cur: cur.execute("INSERT INTO charges VALUES (?, ?)", (ctx.idempotency_key, ctx.payload)))
    return "charged"

worker.run()  # until SIGTERM: running attempts finish, or are handed back
# [/docs:python-worker]

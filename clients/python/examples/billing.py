# A service that receives raftcron's nightly-billing webhook and charges once per run.
# [docs:python]
import sqlite3
from raftcron import fence

verifier = fence.Verifier(fence.load_keys("raftcron-fence.key"), jobs=["nightly-billing"])
db = sqlite3.connect("billing.db", check_same_thread=False)
fence.create_tables(db)

def handle(method: str, url: str, headers: dict[str, str], body: bytes) -> tuple[int, dict[str, object]]:
    try:
        run = verifier.check_request(method, url, headers, body)
        fence.fence_sql(db, run, lambda cur: cur.execute("INSERT INTO charges VALUES (?, ?)", (run.idempotency_key, body)))
        return 200, {"status": "applied"}
    except fence.Refused as refused:
        return refused.status, refused.body
# [/docs:python]

package fence_test

import (
	"fmt"
	"log"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/raftcron/raftcron/fence"
)

// A service that raftcron calls needs a fence file and one wrapped handler.
func ExampleMiddleware() {
	dir, err := os.MkdirTemp("", "fence-example")
	if err != nil {
		log.Fatal(err)
	}
	defer os.RemoveAll(dir)

	f, err := fence.OpenBoltFence(filepath.Join(dir, "fence.db"))
	if err != nil {
		log.Fatal(err)
	}
	defer f.Close()

	charge := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		run, _ := fence.RunFromContext(r.Context())
		fmt.Fprintf(w, "charged %s with token %d\n", run.IdempotencyKey, run.Token)
	})
	mux := http.NewServeMux()
	mux.Handle("POST /charge", fence.Middleware(&f.Fence)(charge))

	// What arrives: the new leader's attempt 42, the same attempt again after a lost
	// reply, and the paused old leader's attempt 41 of the same run.
	at := time.Date(2026, 11, 22, 2, 0, 0, 0, time.UTC)
	for _, token := range []uint64{42, 42, 41} {
		run := fence.Run{
			Token: token, Job: "nightly-billing", RunID: "r-7", Attempt: 1, ScheduledAt: at,
			IdempotencyKey: "nightly-billing/" + fence.FormatScheduledAt(at),
		}
		req := httptest.NewRequest(http.MethodPost, "/charge", nil)
		run.SetHeader(req.Header)
		rec := httptest.NewRecorder()
		mux.ServeHTTP(rec, req)
		fmt.Println(rec.Code, strings.TrimSpace(rec.Body.String()))
	}
	// Output:
	// 200 charged nightly-billing/2026-11-22T02:00:00Z with token 42
	// 200 {"status":"duplicate"}
	// 409 {"error":"stale fencing token","highest":42,"scope":"nightly-billing","token":41}
}

package sqlfence_test

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"io"
	"log"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"time"

	_ "modernc.org/sqlite"

	"github.com/raftcron/raftcron/fence"
	"github.com/raftcron/raftcron/fence/sqlfence"
)

// A service that verifies raftcron's signed webhook and charges once per run, in SQLite.
func Example() {
	dir, err := os.MkdirTemp("", "sqlfence-example")
	if err != nil {
		log.Fatal(err)
	}
	defer os.RemoveAll(dir)
	path := filepath.Join(dir, "billing.db")
	keys, err := fence.NewKeys([]byte("n3w-key-n3w-key-n3w-key-n3w-key-n3w-key="))
	if err != nil {
		log.Fatal(err)
	}

	// [docs:go]
	db, err := sql.Open("sqlite", "file:"+path+"?_pragma=busy_timeout(5000)")
	if err != nil {
		log.Fatal(err)
	}
	f := sqlfence.New(db, sqlfence.SQLite) // or sqlfence.Postgres, sqlfence.MySQL
	if err := f.CreateTables(context.Background()); err != nil {
		log.Fatal(err)
	}
	verifier := fence.NewVerifier(keys, fence.WithJobs("nightly-billing"))
	mux := http.NewServeMux()
	mux.HandleFunc("POST /charge", func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(http.MaxBytesReader(w, r.Body, 1<<20))
		run, err := fence.FromHeader(r.Header)
		if err != nil {
			http.Error(w, err.Error(), http.StatusBadRequest)
			return
		}
		d := fence.HTTPDispatch(run, r.Method, fence.ReceivedURL(r), body)
		if err := verifier.Verify(d, r.Header.Get(fence.HeaderSignature)); err != nil {
			http.Error(w, err.Error(), http.StatusUnauthorized) // 403 for fence.ErrNotAccepted
			return
		}
		err = f.Update(r.Context(), run, "", func(tx *sql.Tx) error {
			_, err := tx.ExecContext(r.Context(), "INSERT INTO charges VALUES (?, ?)", run.IdempotencyKey, body)
			return err
		})
		switch {
		case errors.Is(err, fence.ErrDuplicate):
			fmt.Fprintln(w, `{"status":"duplicate"}`)
		case errors.Is(err, fence.ErrStale):
			http.Error(w, err.Error(), http.StatusConflict) // raftcron: fenced, not retried
		case err != nil:
			http.Error(w, err.Error(), http.StatusInternalServerError)
		default:
			fmt.Fprintln(w, `{"status":"applied"}`)
		}
	})
	// [/docs:go]
	defer db.Close()
	if _, err := db.Exec("CREATE TABLE charges (run TEXT, body BLOB)"); err != nil {
		log.Fatal(err)
	}

	// The new leader's attempt 42, the same run again as attempt 43, the paused old
	// leader's attempt 41, and a forgery.
	at := time.Date(2026, 11, 22, 2, 0, 0, 0, time.UTC)
	for _, c := range []struct {
		token uint64
		keys  *fence.Keys
	}{{42, keys}, {43, keys}, {41, keys}, {1 << 62, mustKeys("f0rger-f0rger-f0rger-f0rger-f0rger-f0rger")}} {
		run := fence.Run{Token: c.token, Job: "nightly-billing", RunID: "r-7", Attempt: 1, ScheduledAt: at,
			IdempotencyKey: "nightly-billing/" + fence.FormatScheduledAt(at)}
		body := `{"amount":"12.50"}`
		req := httptest.NewRequest(http.MethodPost, "http://billing.example/charge", strings.NewReader(body))
		run.SetHeader(req.Header)
		sig, _ := c.keys.SignV2(fence.HTTPDispatch(run, req.Method, fence.SentURL(req), []byte(body)))
		req.Header.Set(fence.HeaderSignature, sig)
		rec := httptest.NewRecorder()
		mux.ServeHTTP(rec, req)
		fmt.Println(rec.Code, strings.TrimSpace(rec.Body.String()))
	}
	var charges int
	_ = db.QueryRow("SELECT count(*) FROM charges").Scan(&charges)
	fmt.Println("charges:", charges)
	// Output:
	// 200 {"status":"applied"}
	// 200 {"status":"duplicate"}
	// 409 fence: stale fencing token 41 for scope "nightly-billing": 43 already admitted
	// 401 fence: bad signature: made with none of the keys, or the request was altered
	// charges: 1
}

func mustKeys(k string) *fence.Keys {
	keys, err := fence.NewKeys([]byte(k))
	if err != nil {
		log.Fatal(err)
	}
	return keys
}

// Command slots is a service that raftcron's job "slots" calls: it records each slot once,
// with the fencing token of the attempt that applied it, in PostgreSQL. It verifies the
// dispatch's signature before anything reaches the database (401), and writes through
// sqlfence, so a paused old leader's late attempt is refused by the database (409).
//
//	DATABASE_URL=postgres://... FENCE_KEY_FILE=raftcron-fence.key PORT=8080 slots
//
// It prints "listening on HOST:PORT" (PORT 0: any free port). Its twins in Python, Node and
// Java are in clients/*/examples; the end-to-end zombie tests (test/e2e) run all four.
// UNFENCED=1 writes without the fence, for the tests' negative control only.
package main

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"io"
	"log"
	"net"
	"net/http"
	"os"

	_ "github.com/jackc/pgx/v5/stdlib"

	"github.com/raftcron/raftcron/fence"
	"github.com/raftcron/raftcron/fence/sqlfence"
)

func main() {
	ctx := context.Background()
	db, err := sql.Open("pgx", os.Getenv("DATABASE_URL"))
	if err != nil {
		log.Fatal(err)
	}
	f := sqlfence.New(db, sqlfence.Postgres)
	if err := f.CreateTables(ctx); err != nil {
		log.Fatal(err)
	}
	if _, err := db.ExecContext(ctx, "CREATE TABLE IF NOT EXISTS slots "+
		"(id BIGSERIAL PRIMARY KEY, slot TEXT NOT NULL, token BIGINT NOT NULL)"); err != nil {
		log.Fatal(err)
	}
	keys, err := fence.LoadKeys(os.Getenv("FENCE_KEY_FILE"))
	if err != nil {
		log.Fatal(err)
	}
	verifier := fence.NewVerifier(keys, fence.WithJobs("slots"))
	update := f.Update
	if os.Getenv("UNFENCED") == "1" {
		update = unfenced(db)
	}

	http.HandleFunc("POST /slots", func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(http.MaxBytesReader(w, r.Body, 1<<20))
		run, err := fence.FromHeader(r.Header)
		if err != nil {
			http.Error(w, err.Error(), http.StatusBadRequest)
			return
		}
		d := fence.HTTPDispatch(run, r.Method, fence.ReceivedURL(r), body)
		if err := verifier.Verify(d, r.Header.Get(fence.HeaderSignature)); err != nil {
			http.Error(w, err.Error(), http.StatusUnauthorized)
			return
		}
		err = update(r.Context(), run, "", func(tx *sql.Tx) error {
			_, err := tx.ExecContext(r.Context(), "INSERT INTO slots (slot, token) VALUES ($1, $2)",
				fence.FormatScheduledAt(run.ScheduledAt), int64(run.Token))
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

	ln, err := net.Listen("tcp", "127.0.0.1:"+os.Getenv("PORT"))
	if err != nil {
		log.Fatal(err)
	}
	fmt.Println("listening on", ln.Addr())
	log.Fatal(http.Serve(ln, nil))
}

// unfenced runs the write in a transaction of its own, without the token and the key:
// what the negative control shows the fence prevents.
func unfenced(db *sql.DB) func(context.Context, fence.Run, string, func(*sql.Tx) error) error {
	return func(ctx context.Context, _ fence.Run, _ string, write func(*sql.Tx) error) error {
		tx, err := db.BeginTx(ctx, nil)
		if err != nil {
			return err
		}
		if err := write(tx); err != nil {
			_ = tx.Rollback()
			return err
		}
		return tx.Commit()
	}
}

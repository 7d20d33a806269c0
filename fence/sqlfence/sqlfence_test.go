package sqlfence

import (
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"math/rand/v2"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	_ "modernc.org/sqlite" // the "sqlite" driver

	"github.com/raftcron/raftcron/fence"
	"github.com/raftcron/raftcron/internal/testdb"
)

func TestMain(m *testing.M) {
	code := m.Run()
	testdb.StopAll()
	os.Exit(code)
}

// backend is one database the tests run against, with the service's own ledger table.
type backend struct {
	name    string
	dialect *Dialect
	open    func(t *testing.T) *sql.DB
	ledger  string // CREATE TABLE ledger: id in commit order per scope, key, token
	insert  string // INSERT INTO ledger (idempotency_key, token)
}

var backends = []backend{
	{
		name: "postgres", dialect: Postgres,
		open:   func(t *testing.T) *sql.DB { return openDB(t, "pgx", testdb.Database(t, testdb.Postgres(t))) },
		ledger: `CREATE TABLE ledger (id BIGSERIAL PRIMARY KEY, idempotency_key TEXT NOT NULL, token BIGINT NOT NULL)`,
		insert: `INSERT INTO ledger (idempotency_key, token) VALUES ($1, $2)`,
	},
	{
		name: "mariadb", dialect: MySQL,
		open:   func(t *testing.T) *sql.DB { return openDB(t, "mysql", testdb.Database(t, testdb.MariaDB(t))) },
		ledger: `CREATE TABLE ledger (id BIGINT AUTO_INCREMENT PRIMARY KEY, idempotency_key VARBINARY(256) NOT NULL, token BIGINT NOT NULL) ENGINE=InnoDB`,
		insert: `INSERT INTO ledger (idempotency_key, token) VALUES (?, ?)`,
	},
	{
		name: "sqlite", dialect: SQLite,
		open: func(t *testing.T) *sql.DB {
			path := filepath.Join(t.TempDir(), "service.db")
			return openDB(t, "sqlite", "file:"+path+"?_pragma=busy_timeout(20000)&_pragma=journal_mode(WAL)")
		},
		ledger: `CREATE TABLE ledger (id INTEGER PRIMARY KEY AUTOINCREMENT, idempotency_key TEXT NOT NULL, token INTEGER NOT NULL)`,
		insert: `INSERT INTO ledger (idempotency_key, token) VALUES (?, ?)`,
	},
}

func openDB(t *testing.T, driver, dsn string) *sql.DB {
	t.Helper()
	db, err := sql.Open(driver, dsn)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { db.Close() })
	return db
}

// service is a fenced database with its ledger, as a service keeps them.
type service struct {
	b     backend
	db    *sql.DB
	fence *Fence
}

func newService(t *testing.T, b backend) *service {
	t.Helper()
	s := &service{b: b, db: b.open(t)}
	s.fence = New(s.db, b.dialect)
	ctx := context.Background()
	if err := s.fence.CheckTables(ctx); !errors.Is(err, ErrMissingTables) {
		t.Fatalf("CheckTables before CreateTables: %v, want ErrMissingTables", err)
	}
	for range 2 { // creating them again changes nothing
		if err := s.fence.CreateTables(ctx); err != nil {
			t.Fatal(err)
		}
	}
	if err := s.fence.CheckTables(ctx); err != nil {
		t.Fatalf("CheckTables: %v", err)
	}
	if _, err := s.db.Exec(b.ledger); err != nil {
		t.Fatal(err)
	}
	return s
}

// deliver fences one delivery whose write appends to the ledger; fail makes the write
// fail after it wrote.
func (s *service) deliver(run fence.Run, scope string, fail error) error {
	return s.fence.Update(context.Background(), run, scope, func(tx *sql.Tx) error {
		if _, err := tx.Exec(s.b.insert, run.IdempotencyKey, int64(run.Token)); err != nil {
			return err
		}
		return fail
	})
}

type entry struct {
	key   string
	token uint64
}

// ledger is the business table, in commit order.
func (s *service) ledger(t *testing.T) []entry {
	t.Helper()
	rows, err := s.db.Query(`SELECT idempotency_key, token FROM ledger ORDER BY id`)
	if err != nil {
		t.Fatal(err)
	}
	defer rows.Close()
	var out []entry
	for rows.Next() {
		var e entry
		var key []byte // VARBINARY on MariaDB
		if err := rows.Scan(&key, &e.token); err != nil {
			t.Fatal(err)
		}
		e.key = string(key)
		out = append(out, e)
	}
	if err := rows.Err(); err != nil {
		t.Fatal(err)
	}
	return out
}

func (s *service) reset(t *testing.T) {
	t.Helper()
	for _, table := range []string{"raftcron_fences", "raftcron_applied_runs", "ledger"} {
		if _, err := s.db.Exec("DELETE FROM " + table); err != nil {
			t.Fatal(err)
		}
	}
}

func runOf(token uint64, key string) fence.Run {
	return fence.Run{Token: token, Job: "nightly-billing", RunID: "r", IdempotencyKey: key,
		ScheduledAt: time.Unix(0, 0).UTC(), Attempt: 1}
}

func outcome(err error) string {
	switch {
	case err == nil:
		return "applied"
	case errors.Is(err, fence.ErrStale):
		return "stale"
	case errors.Is(err, fence.ErrDuplicate):
		return "duplicate"
	}
	return "error: " + err.Error()
}

type vectors struct {
	Fence []struct {
		Name  string `json:"name"`
		Steps []struct {
			Scope string `json:"scope"`
			Token uint64 `json:"token"`
			Key   string `json:"key"`
			Want  string `json:"want"`
		} `json:"steps"`
		Applied []string `json:"applied"`
	} `json:"fence"`
}

// TestConformanceVectors plays the shared fence vectors on every database and reads the
// ledger afterwards: the applied keys, each once.
func TestConformanceVectors(t *testing.T) {
	data, err := os.ReadFile("../testdata/vectors.json")
	if err != nil {
		t.Fatal(err)
	}
	var v vectors
	if err := json.Unmarshal(data, &v); err != nil {
		t.Fatal(err)
	}
	for _, b := range backends {
		t.Run(b.name, func(t *testing.T) {
			s := newService(t, b)
			for _, c := range v.Fence {
				s.reset(t)
				for i, step := range c.Steps {
					got := outcome(s.deliver(runOf(step.Token, step.Key), step.Scope, nil))
					if got != step.Want {
						t.Errorf("%s, step %d (token %d): %s, want %s", c.Name, i+1, step.Token, got, step.Want)
					}
				}
				var keys []string
				for _, e := range s.ledger(t) {
					keys = append(keys, e.key)
				}
				if !slices.Equal(keys, c.Applied) {
					t.Errorf("%s: ledger holds %q, want %q", c.Name, keys, c.Applied)
				}
			}
		})
	}
}

func TestUpdateRollsBackWithTheWrite(t *testing.T) {
	for _, b := range backends {
		t.Run(b.name, func(t *testing.T) {
			s := newService(t, b)
			ctx := context.Background()
			boom := errors.New("downstream write failed")
			if err := s.deliver(runOf(7, "k/1"), "", boom); !errors.Is(err, boom) {
				t.Fatalf("failing write: %v, want its own error", err)
			}
			if h, err := s.fence.Highest(ctx, "nightly-billing"); err != nil || h != 0 {
				t.Fatalf("after a failed write the token is %d (%v), want nothing committed", h, err)
			}
			if got := s.ledger(t); len(got) != 0 {
				t.Fatalf("after a failed write the ledger holds %v", got)
			}
			// Neither the token nor the key was kept: the retry applies.
			if err := s.deliver(runOf(7, "k/1"), "", nil); err != nil {
				t.Fatalf("retry: %v", err)
			}
			if h, _ := s.fence.Highest(ctx, "nightly-billing"); h != 7 {
				t.Fatalf("token %d after the retry, want 7", h)
			}
			var stale *fence.StaleError
			if err := s.deliver(runOf(6, "k/2"), "", nil); !errors.As(err, &stale) || stale.Highest != 7 || stale.Token != 6 {
				t.Fatalf("stale: %v, want a StaleError naming 6 and 7", err)
			}
		})
	}
}

func TestUpdateRefusesWhatTheTablesCannotHold(t *testing.T) {
	for _, b := range backends {
		t.Run(b.name, func(t *testing.T) {
			s := newService(t, b)
			long := strings.Repeat("x", MaxScopeLen+1)
			for name, c := range map[string]struct {
				run   fence.Run
				scope string
			}{
				"token 0":         {runOf(0, "k"), ""},
				"token above int": {runOf(math.MaxInt64+1, "k"), ""},
				"empty key":       {runOf(5, ""), ""},
				"long key":        {runOf(5, long), ""},
				"long scope":      {runOf(5, "k"), long},
				"scope not UTF-8": {runOf(5, "k"), "\xff"},
			} {
				if err := s.deliver(c.run, c.scope, nil); err == nil {
					t.Errorf("%s: accepted", name)
				}
			}
			if h, _ := s.fence.Highest(context.Background(), "nightly-billing"); h != 0 || len(s.ledger(t)) != 0 {
				t.Fatalf("refused deliveries changed the database: token %d, ledger %v", h, s.ledger(t))
			}
		})
	}
}

// TestConcurrentWritersNeverApplyAnOlderToken races 16 writers delivering the attempts
// of 40 runs (3 attempts each, a run's attempts in consecutive tokens as a scheduler
// issues them) shuffled in windows of 16, with a tenth of them held back to the end like
// a paused leader's, and reads the ledger afterwards: tokens never go down in commit
// order, every applied key is there exactly once, and every outcome agrees with the
// ledger.
func TestConcurrentWritersNeverApplyAnOlderToken(t *testing.T) {
	for _, b := range backends {
		t.Run(b.name, func(t *testing.T) {
			s := newService(t, b)
			s.db.SetMaxOpenConns(16)
			const runs, attempts, writers = 40, 3, 16
			deliveries := shuffledAttempts(runs, attempts, writers)
			work := make(chan fence.Run)
			var mu sync.Mutex
			outcomes := map[string][]string{} // key -> outcomes
			var wg sync.WaitGroup
			for range writers {
				wg.Go(func() {
					for run := range work {
						o := outcome(s.deliver(run, "", nil))
						mu.Lock()
						outcomes[run.IdempotencyKey] = append(outcomes[run.IdempotencyKey], o)
						mu.Unlock()
					}
				})
			}
			for _, d := range deliveries {
				work <- d
			}
			close(work)
			wg.Wait()

			ledger := s.ledger(t)
			count := map[string]int{}
			for i, e := range ledger {
				count[e.key]++
				if i > 0 && e.token < ledger[i-1].token {
					t.Errorf("token %d (%s) applied after token %d", e.token, e.key, ledger[i-1].token)
				}
			}
			for key, os := range outcomes {
				applied := 0
				for _, o := range os {
					switch o {
					case "applied":
						applied++
					case "duplicate", "stale":
					default:
						t.Errorf("%s: %s", key, o)
					}
				}
				if applied > 1 || count[key] != applied {
					t.Errorf("%s: outcomes %v, ledger holds it %d times", key, os, count[key])
				}
				if slices.Contains(os, "duplicate") && count[key] != 1 {
					t.Errorf("%s: answered duplicate but its effect is not there", key)
				}
			}
			h, err := s.fence.Highest(context.Background(), "nightly-billing")
			if err != nil || len(ledger) == 0 || h < ledger[len(ledger)-1].token {
				t.Fatalf("highest token %d (%v) below the last applied one", h, err)
			}
			t.Logf("%d deliveries: %d applied", len(deliveries), len(ledger))
		})
	}
}

// shuffledAttempts returns the attempts of runs, token t belonging to run (t-1)/attempts,
// shuffled within windows and with every tenth held back to the end.
func shuffledAttempts(runs, attempts, window int) []fence.Run {
	var order, late []fence.Run
	for tok := 1; tok <= runs*attempts; tok++ {
		run := runOf(uint64(tok), fmt.Sprintf("nightly-billing/slot-%02d", (tok-1)/attempts))
		if rand.IntN(10) == 0 {
			late = append(late, run)
			continue
		}
		order = append(order, run)
	}
	for i := 0; i < len(order); i += window {
		w := order[i:min(i+window, len(order))]
		rand.Shuffle(len(w), func(a, b int) { w[a], w[b] = w[b], w[a] })
	}
	return append(order, late...)
}

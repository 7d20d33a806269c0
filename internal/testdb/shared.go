package testdb

import (
	"errors"
	"fmt"
	"strings"
	"sync"
	"testing"

	"github.com/raftcron/raftcron/internal/testutil"
)

// shared starts one server per test binary, on first use; StopAll ends them.
type shared struct {
	once  sync.Once
	start func() (*Server, error)
	srv   *Server
	err   error
}

var (
	postgres = &shared{start: StartPostgres}
	mariadb  = &shared{start: StartMariaDB}
)

// Postgres returns the test binary's PostgreSQL server, started on first use. When this
// machine cannot run it the test is skipped with the reason, or fails under CI=true.
func Postgres(t testing.TB) *Server {
	t.Helper()
	return postgres.get(t)
}

// MariaDB is Postgres for MariaDB.
func MariaDB(t testing.TB) *Server {
	t.Helper()
	return mariadb.get(t)
}

func (s *shared) get(t testing.TB) *Server {
	t.Helper()
	s.once.Do(func() { s.srv, s.err = s.start() })
	if s.err != nil {
		Unavailable(t, s.err)
	}
	return s.srv
}

// Unavailable skips the test for a missing tool, or fails it when CI=true (where every
// tool must be installed, testutil.SkipOrFail) or when the error is anything else.
func Unavailable(t testing.TB, err error) {
	t.Helper()
	if errors.Is(err, ErrUnavailable) {
		testutil.SkipOrFail(t, "%v", err)
	}
	t.Fatal(err)
}

// StopAll stops the servers this test binary started; call it from TestMain.
func StopAll() {
	for _, s := range []*shared{postgres, mariadb} {
		if s.srv != nil {
			s.srv.Stop()
		}
	}
}

// Database creates a database of its own for t on srv and returns its DSN.
func Database(t testing.TB, srv *Server) string {
	t.Helper()
	name := strings.ToLower(strings.NewReplacer("/", "_", "-", "_", " ", "_").Replace(t.Name()))
	name = fmt.Sprintf("t_%s_%d", name, nextDatabase())
	if len(name) > 60 {
		name = fmt.Sprintf("t_%d", nextDatabase())
	}
	dsn, _, err := srv.NewDatabase(name)
	if err != nil {
		t.Fatal(err)
	}
	return dsn
}

var (
	mu      sync.Mutex
	counter int
)

func nextDatabase() int {
	mu.Lock()
	defer mu.Unlock()
	counter++
	return counter
}

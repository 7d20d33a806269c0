//go:build e2e

package e2e

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/raftcron/raftcron/internal/testdb"
)

// Binaries under test. The plain one is bin/raftcron as `make build` makes
// it; the failpoints one (bin/raftcron-failpoints) carries the test-only
// hooks the pause scenario and the negative controls switch on.
// E2E_BIN and E2E_BIN_FAILPOINTS name prebuilt binaries instead.
type binary struct {
	env, name, tags string
	once            sync.Once
	path            string
	err             error
}

var (
	plainBinary      = &binary{env: "E2E_BIN", name: "raftcron", tags: "hashicorpmetrics"}
	failpointsBinary = &binary{env: "E2E_BIN_FAILPOINTS", name: "raftcron-failpoints", tags: "hashicorpmetrics,failpoints"}
)

func (b *binary) get(t testing.TB) string {
	t.Helper()
	b.once.Do(func() {
		if p := os.Getenv(b.env); p != "" {
			if b.path, b.err = filepath.Abs(p); b.err == nil {
				_, b.err = os.Stat(b.path)
			}
			return
		}
		root, err := repoRoot()
		if err != nil {
			b.err = err
			return
		}
		b.path = filepath.Join(root, "bin", b.name)
		start := time.Now()
		cmd := exec.Command("go", "build", "-tags", b.tags, "-o", b.path, "./cmd/node")
		cmd.Dir = root
		if out, err := cmd.CombinedOutput(); err != nil {
			b.err = fmt.Errorf("go build -tags %s: %v\n%s", b.tags, err, out)
			return
		}
		fmt.Printf("e2e: built %s (-tags %s) in %s\n", b.path, b.tags, time.Since(start).Round(time.Millisecond))
	})
	if b.err != nil {
		t.Fatalf("binary %s: %v", b.name, b.err)
	}
	return b.path
}

// repoRoot is the directory holding go.mod, above the test's directory.
func repoRoot() (string, error) {
	dir, err := os.Getwd()
	if err != nil {
		return "", err
	}
	for range 10 {
		if _, err := os.Stat(filepath.Join(dir, "go.mod")); err == nil {
			return dir, nil
		}
		dir = filepath.Dir(dir)
	}
	return "", fmt.Errorf("no go.mod above the test directory")
}

// baseSeed is E2E_SEED, or the clock; every scenario derives its own seed
// from it and prints it.
var baseSeed int64

func TestMain(m *testing.M) {
	baseSeed = time.Now().UnixNano() % 1_000_000_000
	if s := os.Getenv("E2E_SEED"); s != "" {
		v, err := strconv.ParseInt(s, 10, 64)
		if err != nil {
			fmt.Fprintf(os.Stderr, "E2E_SEED=%q: not an integer\n", s)
			os.Exit(2)
		}
		baseSeed = v
	}
	fmt.Printf("e2e: E2E_SEED=%d\n", baseSeed)
	if os.Geteuid() == 0 {
		deleteStaleNamespaces()
	}
	code := m.Run()
	testdb.StopAll() // the zombie scenarios' PostgreSQL
	os.Exit(code)
}

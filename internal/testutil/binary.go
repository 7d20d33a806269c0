package testutil

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"sync"
	"testing"
)

// mainPackage is the raftcron binary's package.
const mainPackage = "github.com/raftcron/raftcron/cmd/node"

var built struct {
	once sync.Once
	dir  string // removed by Main
	path string
	err  error
}

// Binary returns the raftcron binary for multi-process tests: $RAFTCRON_BIN
// if set, else one built once per test process with the hashicorpmetrics
// tag (only tests that need it pay for the build). A package whose tests
// call it runs them through Main, which removes the build.
func Binary(t testing.TB) string {
	t.Helper()
	built.once.Do(func() { built.path, built.err = binary() })
	if built.err != nil {
		t.Fatalf("raftcron binary: %v", built.err)
	}
	return built.path
}

func binary() (string, error) {
	if p := os.Getenv("RAFTCRON_BIN"); p != "" {
		// go test runs in the package's directory, so a relative path is
		// relative to it.
		abs, err := filepath.Abs(p)
		if err == nil {
			_, err = os.Stat(abs)
		}
		if err != nil {
			return "", fmt.Errorf("RAFTCRON_BIN: %w", err)
		}
		return abs, nil
	}
	dir, err := os.MkdirTemp("", "raftcron-bin-")
	if err != nil {
		return "", err
	}
	built.dir = dir
	path := filepath.Join(dir, "raftcron")
	out, err := exec.Command("go", "build", "-tags", "hashicorpmetrics", "-o", path, mainPackage).CombinedOutput()
	if err != nil {
		return "", fmt.Errorf("go build: %v\n%s", err, out)
	}
	return path, nil
}

// Main runs the tests and removes the binary Binary built, if any:
//
//	func TestMain(m *testing.M) { testutil.Main(m) }
func Main(m *testing.M) {
	code := m.Run()
	if built.dir != "" {
		_ = os.RemoveAll(built.dir)
	}
	os.Exit(code)
}

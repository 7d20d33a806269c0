package testutil

import (
	"os"
	"path/filepath"
	"testing"
)

// WriteFile writes body into a file called name in a directory of the
// test's own and returns its path.
func WriteFile(t testing.TB, name, body string) string {
	t.Helper()
	path := filepath.Join(t.TempDir(), name)
	if err := os.WriteFile(path, []byte(body), 0o600); err != nil {
		t.Fatal(err)
	}
	return path
}

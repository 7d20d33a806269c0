package syncbuf

import (
	"strings"
	"sync"
	"testing"
)

// Writers and a reader at once: every write lands whole (run with -race).
func TestConcurrentWritesLandWhole(t *testing.T) {
	t.Parallel()
	var b Buffer
	var wg sync.WaitGroup
	for range 8 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for range 100 {
				_, _ = b.Write([]byte("line\n"))
				_ = b.String()
			}
		}()
	}
	wg.Wait()
	if got := strings.Count(b.String(), "line\n"); got != 800 {
		t.Fatalf("%d whole lines, want 800", got)
	}
}

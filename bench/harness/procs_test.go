package harness

import (
	"os/exec"
	"path/filepath"
	"testing"
	"time"

	"github.com/raftcron/raftcron/internal/proc"
)

func TestKillAllEndsEveryTrackedProcess(t *testing.T) {
	if _, err := exec.LookPath("sleep"); err != nil {
		t.Skip("no sleep binary")
	}
	var procs []*proc.Process
	for range 2 {
		p, err := startTracked(exec.Command("sleep", "60"), filepath.Join(t.TempDir(), "sleep.log"))
		if err != nil {
			t.Fatal(err)
		}
		procs = append(procs, p)
	}
	if n := LiveCount(); n < 2 {
		t.Fatalf("LiveCount = %d, want at least 2", n)
	}
	if n := KillAll(); n < 2 {
		t.Fatalf("KillAll killed %d, want at least 2", n)
	}
	for _, p := range procs {
		if !p.Wait(10 * time.Second) {
			t.Fatal("a process survived KillAll")
		}
	}
	// The registry forgets a process right after it is reaped.
	deadline := time.Now().Add(10 * time.Second)
	for LiveCount() != 0 && time.Now().Before(deadline) {
		time.Sleep(10 * time.Millisecond)
	}
	if n := LiveCount(); n != 0 {
		t.Errorf("LiveCount after KillAll = %d", n)
	}
}

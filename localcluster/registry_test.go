package localcluster

import (
	"os/exec"
	"path/filepath"
	"testing"
	"time"

	"github.com/raftcron/raftcron/internal/proc"
	"github.com/raftcron/raftcron/internal/testutil"
)

func TestKillAllEndsEveryTrackedProcess(t *testing.T) {
	sleep := testutil.NeedTool(t, "sleep", "install coreutils")
	var procs []*proc.Process
	for range 2 {
		p, err := startTracked(exec.Command(sleep, "60"), filepath.Join(t.TempDir(), "sleep.log"))
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
	testutil.WaitFor(t, 10*time.Second, "the registry to forget the killed processes", func() bool { return LiveCount() == 0 })
}

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

// A process reaped a moment ago may still be registered (its registration
// goes from a goroutine of its own): KillAll neither kills nor counts it,
// and LiveCount does not count it.
func TestKillAllSkipsAReapedProcess(t *testing.T) {
	sleep := testutil.NeedTool(t, "sleep", "install coreutils")
	p, err := startTracked(exec.Command(sleep, "60"), filepath.Join(t.TempDir(), "sleep.log"))
	if err != nil {
		t.Fatal(err)
	}
	if !p.Kill(10 * time.Second) {
		t.Fatal("sleep not reaped after SIGKILL")
	}
	testutil.WaitFor(t, 10*time.Second, "the registration to go", func() bool {
		live.Lock()
		defer live.Unlock()
		_, ok := live.procs[p]
		return !ok
	})
	live.Lock()
	live.procs[p] = struct{}{} // as if its registration had not gone yet
	live.Unlock()
	defer func() {
		live.Lock()
		delete(live.procs, p)
		live.Unlock()
	}()
	if n := LiveCount(); n != 0 {
		t.Errorf("LiveCount = %d with only a reaped process registered, want 0", n)
	}
	if n := KillAll(); n != 0 {
		t.Errorf("KillAll killed %d with only a reaped process registered, want 0", n)
	}
}

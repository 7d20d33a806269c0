package harness

import (
	"os/exec"
	"testing"
	"time"
)

func TestKillAllEndsEveryTrackedProcess(t *testing.T) {
	if _, err := exec.LookPath("sleep"); err != nil {
		t.Skip("no sleep binary")
	}
	var exits []chan struct{}
	for range 2 {
		exited := make(chan struct{})
		if err := startTracked(exec.Command("sleep", "60"), exited); err != nil {
			t.Fatal(err)
		}
		exits = append(exits, exited)
	}
	if n := LiveCount(); n < 2 {
		t.Fatalf("LiveCount = %d, want at least 2", n)
	}
	if n := KillAll(); n < 2 {
		t.Fatalf("KillAll killed %d, want at least 2", n)
	}
	for _, e := range exits {
		select {
		case <-e:
		case <-time.After(10 * time.Second):
			t.Fatal("a process survived KillAll")
		}
	}
	if n := LiveCount(); n != 0 {
		t.Errorf("LiveCount after KillAll = %d", n)
	}
}

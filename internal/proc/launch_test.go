//go:build unix

package proc

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/raftcron/raftcron/internal/testutil"
)

func shell(t *testing.T, script string) *exec.Cmd {
	t.Helper()
	return exec.Command(testutil.NeedTool(t, "sh", "install a POSIX shell"), "-c", script)
}

// Start appends a line naming the command, then the child's output, to
// what the log held.
func TestStartAppendsOutputAndReportsTheExit(t *testing.T) {
	t.Parallel()
	log := filepath.Join(t.TempDir(), "child.log")
	if err := os.WriteFile(log, []byte("before\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	p, err := Start(shell(t, "echo out; echo err >&2; exit 3"), log)
	if err != nil {
		t.Fatal(err)
	}
	if !p.Wait(10 * time.Second) {
		t.Fatal("child did not exit")
	}
	if p.ExitCode() != 3 || p.ExitReason() != "exit status 3" || p.Killed() {
		t.Errorf("exit code %d, reason %q, killed %v; want 3, exit status 3, false", p.ExitCode(), p.ExitReason(), p.Killed())
	}
	got, err := os.ReadFile(log)
	if err != nil {
		t.Fatal(err)
	}
	before, header, ok := strings.Cut(string(got), LogHeader)
	header, output, _ := strings.Cut(header, "\n")
	if !ok || before != "before\n" || !strings.HasSuffix(header, " start: "+strings.Join(p.cmd.Args, " ")) || output != "out\nerr\n" {
		t.Errorf("log %q, want the output appended after a line naming the command", got)
	}
}

func TestKillAndStop(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	p, err := Start(shell(t, "exec sleep 60"), filepath.Join(dir, "a.log"))
	if err != nil {
		t.Fatal(err)
	}
	if p.Exited() {
		t.Fatal("exited at once")
	}
	if !p.Kill(10*time.Second) || !p.Killed() || p.ExitCode() != -1 {
		t.Fatalf("Kill: exited %v, killed %v, code %d", p.Exited(), p.Killed(), p.ExitCode())
	}
	p, err = Start(shell(t, "exec sleep 60"), filepath.Join(dir, "b.log"))
	if err != nil {
		t.Fatal(err)
	}
	if !p.Stop(10*time.Second) || p.ExitReason() != "signal: terminated" {
		t.Fatalf("Stop: exited %v, reason %q", p.Exited(), p.ExitReason())
	}
}

// The child leads a process group of its own, so that a terminal's Ctrl-C
// reaches the launcher alone.
func TestChildHasItsOwnProcessGroup(t *testing.T) {
	t.Parallel()
	p, err := Start(shell(t, "exec sleep 60"), filepath.Join(t.TempDir(), "c.log"))
	if err != nil {
		t.Fatal(err)
	}
	defer p.Kill(10 * time.Second)
	pgid, err := syscall.Getpgid(p.Pid())
	if err != nil {
		t.Fatal(err)
	}
	if pgid != p.Pid() || pgid == syscall.Getpgrp() {
		t.Errorf("child's process group %d, want its own (%d), not ours (%d)", pgid, p.Pid(), syscall.Getpgrp())
	}
}

func TestEnvironDropsRaftcronSettings(t *testing.T) {
	t.Setenv("RAFTCRON_ADDR", "127.0.0.1:1")
	t.Setenv("RAFTCRONX", "kept")
	env := strings.Join(Environ(), "\n")
	if strings.Contains(env, "RAFTCRON_ADDR=") || !strings.Contains(env, "RAFTCRONX=kept") {
		t.Errorf("Environ kept RAFTCRON_ADDR or dropped RAFTCRONX:\n%s", env)
	}
}

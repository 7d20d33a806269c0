package dispatch

import (
	"bytes"
	"os"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/raftcron/raftcron/internal/testutil"
)

// processGone reports whether pid no longer runs: absent, or a zombie
// waiting for a reaper (an orphan is reparented to init, which in a
// container may never reap it; a zombie runs no code).
func processGone(pid int) bool {
	stat, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		return os.IsNotExist(err)
	}
	// The state follows the command name, which is in parentheses and may
	// itself contain spaces or parentheses.
	i := bytes.LastIndexByte(stat, ')')
	if i < 0 || i+2 >= len(stat) {
		return false
	}
	state := stat[i+2]
	return state == 'Z' || state == 'X'
}

// processComm is the command name of pid, "" if it cannot be read.
func processComm(pid int) string {
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/comm")
	if err != nil {
		return ""
	}
	return strings.TrimSpace(string(b))
}

// readPid waits for a file holding a pid (written atomically by the test's
// script) and returns the pid.
func readPid(t *testing.T, path string) int {
	t.Helper()
	var pid int
	testutil.WaitFor(t, 10*time.Second, "pid file "+path, func() bool {
		b, err := os.ReadFile(path)
		if err != nil {
			return false
		}
		pid, err = strconv.Atoi(strings.TrimSpace(string(b)))
		return err == nil && pid > 0
	})
	return pid
}

// killIfSleeping cleans up after a failed test: it kills pid only if it is
// still one of the test's sleep processes.
func killIfSleeping(pid int) {
	if processComm(pid) == "sleep" {
		p, err := os.FindProcess(pid)
		if err == nil {
			_ = p.Kill()
		}
	}
}

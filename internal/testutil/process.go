package testutil

import (
	"bytes"
	"errors"
	"os"
	"strconv"
	"strings"
	"testing"
	"time"
)

// ReadPidFile waits (up to 10 s) for a file holding a pid, written
// atomically by a test's script (echo $$ > f.tmp && mv f.tmp f), and
// returns the pid.
func ReadPidFile(t testing.TB, path string) int {
	t.Helper()
	var pid int
	WaitFor(t, 10*time.Second, "pid file "+path, func() bool {
		b, err := os.ReadFile(path)
		if err != nil {
			return false
		}
		pid, err = strconv.Atoi(strings.TrimSpace(string(b)))
		return err == nil && pid > 0
	})
	return pid
}

// ProcessGone reports whether pid no longer runs (Linux): absent, or a
// zombie waiting for a reaper (an orphan is re-parented to init, which in a
// container may never reap it; a zombie runs no code).
func ProcessGone(pid int) bool {
	stat, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		return errors.Is(err, os.ErrNotExist)
	}
	// The state follows the command name, which is in parentheses and may
	// itself contain spaces or parentheses.
	i := bytes.LastIndexByte(stat, ')')
	return i >= 0 && i+2 < len(stat) && (stat[i+2] == 'Z' || stat[i+2] == 'X')
}

// ProcessComm is the command name of pid (Linux), "" if it cannot be read.
func ProcessComm(pid int) string {
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/comm")
	if err != nil {
		return ""
	}
	return strings.TrimSpace(string(b))
}

// KillIfSleeping cleans up after a failed test: it kills pid only if it is
// still one of the test's sleep processes.
func KillIfSleeping(pid int) {
	if ProcessComm(pid) == "sleep" {
		if p, err := os.FindProcess(pid); err == nil {
			_ = p.Kill()
		}
	}
}

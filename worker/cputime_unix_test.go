//go:build unix

package worker

import (
	"syscall"
	"time"
)

// processCPU is this process's user and system CPU time so far: in the
// benchmarks, the hub's and the workers' work alike.
func processCPU() (time.Duration, bool) {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0, false
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano()), true
}

//go:build unix

package proc

import (
	"syscall"
	"time"
)

// SelfCPU is this process's user and system CPU time so far; ok is false
// where it cannot be read. Benchmarks divide it by their work: a
// process's every goroutine counts, the runtime's collector included.
func SelfCPU() (cpu time.Duration, ok bool) {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0, false
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano()), true
}

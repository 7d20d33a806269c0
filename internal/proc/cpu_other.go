//go:build !unix

package proc

import "time"

// SelfCPU is not measured here.
func SelfCPU() (cpu time.Duration, ok bool) { return 0, false }

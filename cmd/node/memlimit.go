package main

import (
	"errors"
	"fmt"
	"math"
	"os"
	"path"
	"runtime/debug"
	"strconv"
	"strings"
)

// memoryLimit is the --memory-limit setting: the Go runtime's soft memory
// limit (debug.SetMemoryLimit). Below it the collector runs as GOGC says;
// near it the collector works harder, so the heap stays close to the live
// data instead of growing to twice it, which is what a node's RSS follows.
type memoryLimit struct {
	// auto: GOMEMLIMIT if set, else nine tenths of the cgroup's memory
	// limit, else nine tenths of the machine's memory.
	auto bool
	// bytes is the limit when not auto; math.MaxInt64 means none.
	bytes int64
}

const (
	memoryLimitAuto = "auto"
	memoryLimitOff  = "off"
	// autoLimitTenths of the memory available (nine tenths) leave a tenth
	// for what the limit does not count: the pages of the Raft log file
	// mapped in by bbolt, and anything else on the machine.
	autoLimitTenths = 9
	// minMemoryLimit: below it the collector would run nearly all the time
	// for any real registry; a smaller value is a typo.
	minMemoryLimit = 64 << 20
)

// parseMemoryLimit reads "auto", "off" or a size in GOMEMLIMIT's syntax: a
// number of bytes with an optional unit B, KiB, MiB, GiB or TiB.
func parseMemoryLimit(s string) (memoryLimit, error) {
	switch strings.ToLower(s) {
	case memoryLimitAuto, "":
		return memoryLimit{auto: true}, nil
	case memoryLimitOff:
		return memoryLimit{bytes: math.MaxInt64}, nil
	}
	n, err := parseByteSize(s)
	if err != nil {
		return memoryLimit{}, fmt.Errorf("--%s: %q is not auto, off or a size like 1800MiB or 2GiB", flagMemoryLimit, s)
	}
	if n < minMemoryLimit {
		return memoryLimit{}, fmt.Errorf("--%s: %s is below 64MiB, where the collector would run all the time", flagMemoryLimit, s)
	}
	return memoryLimit{bytes: n}, nil
}

var byteUnits = []struct {
	suffix string
	shift  uint
}{{"TiB", 40}, {"GiB", 30}, {"MiB", 20}, {"KiB", 10}, {"B", 0}}

func parseByteSize(s string) (int64, error) {
	num, shift := s, uint(0)
	for _, u := range byteUnits {
		if strings.HasSuffix(s, u.suffix) {
			num, shift = strings.TrimSuffix(s, u.suffix), u.shift
			break
		}
	}
	n, err := strconv.ParseInt(strings.TrimSpace(num), 10, 64)
	if err != nil || n < 0 {
		return 0, errors.New("not a size")
	}
	if n > math.MaxInt64>>shift {
		return 0, errors.New("size overflows")
	}
	return n << shift, nil
}

// resolve decides the limit to set: an explicit setting wins; auto defers
// to GOMEMLIMIT when it is set (the runtime has applied it already, so
// bytes is -1: leave the runtime as it is), else takes nine tenths of the
// cgroup's memory limit or, without one, of the machine's memory; with
// neither known it sets none. Nine tenths of what the node may use only
// bites when the heap comes near it, where the alternative is the OOM
// killer; a fixed default would instead keep the collector busy on any
// node whose registry outgrew it. source names where the value came from,
// for the start-up log.
func (m memoryLimit) resolve(gomemlimit string, cgroupLimit, machine int64) (bytes int64, source string) {
	switch {
	case !m.auto:
		return m.bytes, "--" + flagMemoryLimit
	case gomemlimit != "":
		return -1, "GOMEMLIMIT"
	case cgroupLimit > 0 && (machine <= 0 || cgroupLimit < machine):
		return cgroupLimit / 10 * autoLimitTenths, "cgroup"
	case machine > 0:
		return machine / 10 * autoLimitTenths, "machine"
	}
	return math.MaxInt64, "none"
}

// applyMemoryLimit sets the runtime's soft memory limit from the setting
// and returns the limit in force (math.MaxInt64: none) and its source.
func applyMemoryLimit(m memoryLimit) (int64, string) {
	limit, source := m.resolve(os.Getenv("GOMEMLIMIT"), cgroupMemoryLimit(os.ReadFile), machineMemory(os.ReadFile))
	if limit >= 0 {
		debug.SetMemoryLimit(limit)
	}
	return debug.SetMemoryLimit(-1), source
}

// formatMemoryLimit writes a limit for the log: "none" or MiB.
func formatMemoryLimit(n int64) string {
	if n == math.MaxInt64 {
		return "none"
	}
	return fmt.Sprintf("%dMiB", n>>20)
}

// machineMemory is MemTotal of /proc/meminfo in bytes, or 0 when it cannot
// be read (not Linux).
func machineMemory(read func(string) ([]byte, error)) int64 {
	data, err := read("/proc/meminfo")
	if err != nil {
		return 0
	}
	for _, line := range strings.Split(string(data), "\n") {
		rest, ok := strings.CutPrefix(line, "MemTotal:")
		if !ok {
			continue
		}
		kb, err := strconv.ParseInt(strings.TrimSpace(strings.TrimSuffix(strings.TrimSpace(rest), "kB")), 10, 64)
		if err != nil || kb <= 0 || kb > math.MaxInt64>>10 {
			return 0
		}
		return kb << 10
	}
	return 0
}

// noCgroupLimit: cgroup v1 reports "no limit" as a huge page-aligned
// number rather than "max".
const noCgroupLimit = 1 << 62

// cgroupMemoryLimit returns the memory limit of the cgroup this process
// runs in (v2 memory.max, or v1 memory.limit_in_bytes), or 0 when there is
// none or it cannot be read (not Linux, no cgroup file system). Only the
// process's own cgroup is read, not limits set on its parents.
func cgroupMemoryLimit(read func(string) ([]byte, error)) int64 {
	data, err := read("/proc/self/cgroup")
	if err != nil {
		return 0
	}
	for _, file := range cgroupLimitFiles(string(data)) {
		b, err := read(file)
		if err != nil {
			continue
		}
		v := strings.TrimSpace(string(b))
		if v == "max" {
			return 0
		}
		n, err := strconv.ParseInt(v, 10, 64)
		if err != nil || n <= 0 || n >= noCgroupLimit {
			return 0
		}
		return n
	}
	return 0
}

// cgroupLimitFiles lists, from /proc/self/cgroup, the files that may hold
// the process's memory limit, best first: its own cgroup's, then the root
// of the mount (what a container with its own cgroup namespace sees).
func cgroupLimitFiles(procCgroup string) []string {
	var files []string
	for _, line := range strings.Split(procCgroup, "\n") {
		parts := strings.SplitN(strings.TrimSpace(line), ":", 3)
		if len(parts) != 3 {
			continue
		}
		switch {
		case parts[0] == "0" && parts[1] == "":
			files = append(files,
				path.Join("/sys/fs/cgroup", parts[2], "memory.max"),
				"/sys/fs/cgroup/memory.max")
		case containsController(parts[1], "memory"):
			files = append(files,
				path.Join("/sys/fs/cgroup/memory", parts[2], "memory.limit_in_bytes"),
				"/sys/fs/cgroup/memory/memory.limit_in_bytes")
		}
	}
	return files
}

func containsController(list, name string) bool {
	for _, c := range strings.Split(list, ",") {
		if c == name {
			return true
		}
	}
	return false
}

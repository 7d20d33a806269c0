package harness

import (
	"bufio"
	"bytes"
	"fmt"
	"os"
	"strconv"
	"strings"
	"time"
)

// clockTick is USER_HZ, the unit of utime and stime in /proc/PID/stat: 100
// on every Linux architecture Go supports.
const clockTick = 10 * time.Millisecond

// ProcSample is one reading of a process's CPU time and memory.
type ProcSample struct {
	At time.Time
	// CPU is user + system time since the process started.
	CPU time.Duration
	// RSS and PeakRSS (VmHWM) in bytes.
	RSS, PeakRSS int64
}

// ReadProc reads a process's CPU time and memory from /proc (Linux only).
// The CPU time is its threads' time on a CPU in nanoseconds
// (/proc/PID/task/*/schedstat): /proc/PID/stat counts it in 10 ms ticks,
// which is ±10 µs per node and fire in a window of 1,000 fires. A thread
// that exits takes its time with it; Go's runtime keeps its threads, so
// only /proc/PID/stat is read when the threads cannot be.
func ReadProc(pid int) (ProcSample, error) {
	s := ProcSample{At: time.Now()}
	var err error
	if s.CPU, err = threadsCPU(pid); err != nil {
		stat, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
		if err != nil {
			return s, err
		}
		if s.CPU, err = parseStatCPU(stat); err != nil {
			return s, fmt.Errorf("/proc/%d/stat: %w", pid, err)
		}
	}
	status, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		return s, err
	}
	s.RSS, s.PeakRSS = parseStatusMem(status)
	return s, nil
}

// threadsCPU sums the time on a CPU of every thread of pid.
func threadsCPU(pid int) (time.Duration, error) {
	dir := fmt.Sprintf("/proc/%d/task", pid)
	tasks, err := os.ReadDir(dir)
	if err != nil {
		return 0, err
	}
	var sum time.Duration
	for _, t := range tasks {
		b, err := os.ReadFile(dir + "/" + t.Name() + "/schedstat")
		if err != nil {
			if os.IsNotExist(err) {
				continue // exited since the listing
			}
			return 0, err
		}
		d, err := parseSchedstat(b)
		if err != nil {
			return 0, fmt.Errorf("%s/%s/schedstat: %w", dir, t.Name(), err)
		}
		sum += d
	}
	return sum, nil
}

// parseSchedstat returns the first of schedstat's three fields: time on a
// CPU, in nanoseconds.
func parseSchedstat(b []byte) (time.Duration, error) {
	f := strings.Fields(string(b))
	if len(f) != 3 {
		return 0, fmt.Errorf("%d fields, want 3", len(f))
	}
	ns, err := strconv.ParseInt(f[0], 10, 64)
	if err != nil {
		return 0, err
	}
	return time.Duration(ns), nil
}

// parseStatCPU returns utime+stime. The command name (field 2) may hold
// spaces and parentheses, so fields are counted from the last ')'.
func parseStatCPU(stat []byte) (time.Duration, error) {
	i := bytes.LastIndexByte(stat, ')')
	if i < 0 {
		return 0, fmt.Errorf("no command field")
	}
	f := strings.Fields(string(stat[i+1:]))
	// After ')': state(3) ppid(4) ... utime is field 14, stime 15, so
	// indexes 11 and 12 here.
	if len(f) < 13 {
		return 0, fmt.Errorf("only %d fields", len(f))
	}
	ut, err1 := strconv.ParseInt(f[11], 10, 64)
	st, err2 := strconv.ParseInt(f[12], 10, 64)
	if err1 != nil || err2 != nil {
		return 0, fmt.Errorf("utime %q stime %q", f[11], f[12])
	}
	return time.Duration(ut+st) * clockTick, nil
}

func parseStatusMem(status []byte) (rss, peak int64) {
	sc := bufio.NewScanner(bytes.NewReader(status))
	for sc.Scan() {
		k, v, ok := strings.Cut(sc.Text(), ":")
		if !ok {
			continue
		}
		f := strings.Fields(v)
		if len(f) == 0 {
			continue
		}
		n, err := strconv.ParseInt(f[0], 10, 64)
		if err != nil {
			continue
		}
		switch k {
		case "VmRSS":
			rss = n << 10
		case "VmHWM":
			peak = n << 10
		}
	}
	return rss, peak
}

// CPUShare is the CPU used between two samples as a fraction of one core
// (1.0 = one core busy all the time).
func CPUShare(a, b ProcSample) float64 {
	wall := b.At.Sub(a.At)
	if wall <= 0 {
		return 0
	}
	return float64(b.CPU-a.CPU) / float64(wall)
}

// SystemSample is the machine's CPU time from /proc/stat, all cores.
type SystemSample struct {
	At         time.Time
	Busy, Idle time.Duration
}

// ReadSystem reads the first line of /proc/stat.
func ReadSystem() (SystemSample, error) {
	s := SystemSample{At: time.Now()}
	data, err := os.ReadFile("/proc/stat")
	if err != nil {
		return s, err
	}
	line, _, _ := bytes.Cut(data, []byte("\n"))
	f := strings.Fields(string(line))
	if len(f) < 5 || f[0] != "cpu" {
		return s, fmt.Errorf("/proc/stat: unexpected first line %q", line)
	}
	// user nice system idle iowait irq softirq steal (guest time is
	// already in user).
	for i, v := range f[1:min(len(f), 9)] {
		n, err := strconv.ParseInt(v, 10, 64)
		if err != nil {
			return s, fmt.Errorf("/proc/stat: %w", err)
		}
		d := time.Duration(n) * clockTick
		if i == 3 || i == 4 { // idle, iowait
			s.Idle += d
		} else {
			s.Busy += d
		}
	}
	return s, nil
}

// SystemCores is how many cores the whole machine kept busy between two
// samples.
func SystemCores(a, b SystemSample) float64 {
	wall := b.At.Sub(a.At)
	if wall <= 0 {
		return 0
	}
	return float64(b.Busy-a.Busy) / float64(wall)
}

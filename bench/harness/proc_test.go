package harness

import (
	"os"
	"runtime"
	"testing"
	"time"
)

func TestParseStatCPUSkipsACommandWithParentheses(t *testing.T) {
	stat := []byte("42 (a) b (c)) S 1 42 42 0 -1 4194304 100 0 0 0 250 50 0 0 20 0 8 0 100 0 0")
	got, err := parseStatCPU(stat)
	if err != nil {
		t.Fatal(err)
	}
	if want := 300 * clockTick; got != want {
		t.Errorf("cpu = %v, want %v", got, want)
	}
	if _, err := parseStatCPU([]byte("42 (x) S 1")); err == nil {
		t.Error("a short stat line parsed")
	}
}

func TestParseStatusMem(t *testing.T) {
	rss, peak := parseStatusMem([]byte("Name:\tx\nVmHWM:\t  2048 kB\nVmRSS:\t  1024 kB\n"))
	if rss != 1024<<10 || peak != 2048<<10 {
		t.Errorf("rss %d peak %d", rss, peak)
	}
}

func TestParseSchedstat(t *testing.T) {
	if d, err := parseSchedstat([]byte("123456789 5000 42\n")); err != nil || d != 123456789 {
		t.Errorf("got %v, %v; want 123.456789ms", d, err)
	}
	if _, err := parseSchedstat([]byte("12 34\n")); err == nil {
		t.Error("two fields read without an error")
	}
}

// The threads' nanoseconds and /proc/PID/stat's ticks measure the same
// time: within a tick per thread of each other.
func TestThreadsCPUAgreesWithStat(t *testing.T) {
	if runtime.GOOS != "linux" {
		t.Skip("reads /proc")
	}
	deadline := time.Now().Add(200 * time.Millisecond)
	for time.Now().Before(deadline) { // burn some CPU
	}
	threads, err := threadsCPU(os.Getpid())
	if err != nil {
		t.Fatal(err)
	}
	stat, err := os.ReadFile("/proc/self/stat")
	if err != nil {
		t.Fatal(err)
	}
	ticks, err := parseStatCPU(stat)
	if err != nil {
		t.Fatal(err)
	}
	tasks, _ := os.ReadDir("/proc/self/task")
	if diff := (threads - ticks).Abs(); diff > time.Duration(len(tasks)+1)*clockTick {
		t.Errorf("threads %v, stat %v: %v apart", threads, ticks, diff)
	}
}

func TestReadProcAndSystemOnThisProcess(t *testing.T) {
	if runtime.GOOS != "linux" {
		t.Skip("reads /proc")
	}
	a, err := ReadProc(os.Getpid())
	if err != nil {
		t.Fatal(err)
	}
	if a.RSS <= 0 || a.PeakRSS < a.RSS {
		t.Errorf("rss %d peak %d", a.RSS, a.PeakRSS)
	}
	s0, err := ReadSystem()
	if err != nil {
		t.Fatal(err)
	}
	deadline := time.Now().Add(300 * time.Millisecond)
	for time.Now().Before(deadline) { // burn some CPU
	}
	b, _ := ReadProc(os.Getpid())
	s1, _ := ReadSystem()
	if b.CPU < a.CPU || s1.Busy < s0.Busy {
		t.Errorf("CPU went backwards: proc %v→%v, system %v→%v", a.CPU, b.CPU, s0.Busy, s1.Busy)
	}
	if share := CPUShare(a, b); share < 0 || share > float64(runtime.NumCPU())+0.5 {
		t.Errorf("CPUShare %v out of range", share)
	}
}

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

package harness

import "testing"

func TestParseBenchmarks(t *testing.T) {
	out := `goos: linux
BenchmarkApplyFireBatch1000-2   	     280	   4401234 ns/op	 1234567 B/op	   12345 allocs/op
BenchmarkNext/every-second-2    	 4000000	       299.5 ns/op	       0 B/op	       0 allocs/op
BenchmarkApply-2                	     200	   1116000 ns/op	     895.7 writes/s	   20480 B/op	     200 allocs/op
BenchmarkBroken-2 abc ns/op
PASS
ok  	github.com/raftcron/raftcron/fsm	3.1s
`
	got := ParseBenchmarks("./fsm", out)
	if len(got) != 3 {
		t.Fatalf("parsed %d lines, want 3: %+v", len(got), got)
	}
	if b := got[0]; b.Name != "BenchmarkApplyFireBatch1000" || b.Procs != 2 || b.N != 280 || b.NsPerOp != 4401234 || b.AllocsPerOp != 12345 {
		t.Errorf("line 1 = %+v", b)
	}
	if b := got[1]; b.Name != "BenchmarkNext/every-second" || b.NsPerOp != 299.5 {
		t.Errorf("line 2 = %+v", b)
	}
	if b := got[2]; b.Extra["writes/s"] != 895.7 || b.BytesPerOp != 20480 {
		t.Errorf("line 3 = %+v", b)
	}
	if s := got[2].Short(); s != "1.12ms,895.7 writes/s" {
		t.Errorf("Short = %q", s)
	}
}

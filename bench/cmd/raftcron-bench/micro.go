package main

import (
	"bytes"
	"context"
	"fmt"
	"os/exec"
	"strings"
	"syscall"
	"time"

	"github.com/raftcron/raftcron/bench/harness"
)

// microSuites are the go test benchmarks of the product packages.
var microSuites = []struct {
	pkg, pattern string
	// benchtime overrides -micro-benchtime for benchmarks whose every
	// round builds a cluster or a large state.
	full, quick string
}{
	{"./fsm", "^Benchmark(ApplyFireBatch1000|ApplyPut)$", "", ""},
	{"./schedule", "^BenchmarkNext$", "", ""},
	{"./scheduler", "^BenchmarkDueHeap$", "", ""},
	{"./scheduler", "^Benchmark(Rebuild|BurstTick)$", "", "1x"},
	{"./fence", "^Benchmark(MemoryGuardAdmit|BoltGuardAdmit)$", "", ""},
	{"./cluster", "^BenchmarkApply(Parallel64)?$", "3s", "200x"},
}

// microTimeout bounds one package's go test.
const microTimeout = 15 * time.Minute

type microMetrics struct {
	Benchtime  string                  `json:"benchtime"`
	Benchmarks []harness.BenchmarkLine `json:"benchmarks"`
	Outputs    map[string]string       `json:"raw_output"`
}

// runMicro runs go test -bench over the product packages and records every
// result line.
func runMicro(ctx context.Context, e *env, res *Result) error {
	m := &microMetrics{Benchtime: e.cfg.MicroBenchtime, Outputs: map[string]string{}}
	res.Params["benchtime"] = e.cfg.MicroBenchtime
	res.Metrics = m
	var failed []string
	for _, s := range microSuites {
		bt := e.cfg.MicroBenchtime
		if o := pick(e.cfg.Quick, s.full, s.quick); o != "" {
			bt = o
		}
		e.logf("micro: %s %s (benchtime %s)", s.pkg, s.pattern, bt)
		out, err := goBench(ctx, e.cfg.Repo, s.pkg, s.pattern, bt)
		m.Outputs[s.pkg+" "+s.pattern] = out
		m.Benchmarks = append(m.Benchmarks, harness.ParseBenchmarks(s.pkg, out)...)
		if err != nil {
			failed = append(failed, fmt.Sprintf("%s: %v", s.pkg, err))
		}
	}
	var parts []string
	for _, b := range m.Benchmarks {
		parts = append(parts, fmt.Sprintf("%s=%s", b.Name, b.Short()))
	}
	res.Summary = strings.Join(parts, " ")
	if len(failed) > 0 {
		return fmt.Errorf("go test -bench failed: %s", strings.Join(failed, "; "))
	}
	return nil
}

func goBench(ctx context.Context, repo, pkg, pattern, benchtime string) (string, error) {
	ctx, cancel := context.WithTimeout(ctx, microTimeout)
	defer cancel()
	cmd := exec.CommandContext(ctx, "go", "test", "-tags", "hashicorpmetrics", "-run", "^$",
		"-bench", pattern, "-benchmem", "-benchtime", benchtime, "-count", "1", "-timeout", microTimeout.String(), pkg)
	cmd.Dir = repo
	// go test runs the test binary as its child: cancel the whole group.
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	cmd.Cancel = func() error { return syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL) }
	cmd.WaitDelay = 10 * time.Second
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	err := cmd.Run()
	return out.String(), err
}

//go:build bench

package main

// The smoke test runs every cluster scenario end to end with tiny
// parameters against the real binary, so a change to the harness can be
// checked in about two minutes:
//
//	go test -tags 'hashicorpmetrics bench' -run TestSmoke -v ./bench/cmd/raftcron-bench
//
// It uses $RAFTCRON_BIN when set, else builds the binary once.

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"testing"
	"time"

	"github.com/raftcron/raftcron/localcluster"
)

func smokeBinary(t *testing.T) string {
	t.Helper()
	if p := os.Getenv("RAFTCRON_BIN"); p != "" {
		abs, err := filepath.Abs(p)
		if err != nil {
			t.Fatal(err)
		}
		return abs
	}
	bin := filepath.Join(t.TempDir(), "raftcron")
	cmd := exec.Command("go", "build", "-tags", "hashicorpmetrics", "-o", bin, "./cmd/node")
	cmd.Dir = filepath.Join("..", "..", "..")
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("go build: %v\n%s", err, out)
	}
	return bin
}

func TestSmoke(t *testing.T) {
	t.Cleanup(func() { localcluster.KillAll() })
	cfg, err := parseFlags([]string{
		"-bin", smokeBinary(t), "-out", t.TempDir(), "-work", t.TempDir(),
		"-scenarios", "burst,burst-features,workers,steady,httpfloor,idle,failover,registry,scale",
		"-burst-jobs", "50", "-steady-rate", "20", "-steady-period", "2", "-steady-duration", "4s",
		"-failover-rounds", "1", "-registry-duration", "1s", "-idle-duration", "1s",
		"-scale-jobs", "300", "-scale-snapshot-wait", "0", "-quick",
	})
	if err != nil {
		t.Fatal(err)
	}
	r, err := newRunner(cfg)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 8*time.Minute)
	defer cancel()
	for _, s := range scenarios {
		if !r.env.wants(s.name) {
			continue
		}
		res := runOne(ctx, r.env, s)
		t.Log(summaryLine(res))
		if res.Error != "" {
			t.Errorf("%s: %s", s.name, res.Error)
		}
		if _, err := os.Stat(filepath.Join(r.env.runDir, s.name+".json")); err != nil {
			t.Errorf("%s: no JSON result: %v", s.name, err)
		}
		switch m := res.Metrics.(type) {
		case *burstMetrics:
			if m.Delivered != 50 || m.Log.FireBatches < 1 {
				t.Errorf("%s: delivered %d of 50, %d FireBatch entries", s.name, m.Delivered, m.Log.FireBatches)
			}
			if m.Floor == nil || m.Floor.Lateness.N != 50 || m.Ratio == nil {
				t.Errorf("%s: floor %+v (%s), ratio %+v", s.name, m.Floor, m.FloorError, m.Ratio)
			}
			checkFireCPU(t, s.name, m.CPUPerFire, 50)
			if f := m.Features; (s.name == burstFeaturesName) != (f != nil) || f != nil && len(f.Set)+len(f.NotSet) != len(jobFeatures) {
				t.Errorf("%s: features %+v", s.name, f)
			}
			if m.Chained != nil && m.Chained.Delivered != m.Chained.Jobs {
				t.Errorf("%s: %d of %d chained jobs delivered", s.name, m.Chained.Delivered, m.Chained.Jobs)
			}
		case *workersMetrics:
			if m.Delivered != 50 || len(m.PerWorker) != benchWorkers || m.WebhookBurst == nil {
				t.Errorf("workers: delivered %d of 50 over %v, burst beside: %v", m.Delivered, m.PerWorker, m.WebhookBurst)
			}
			if m.WebhookFloor == nil || m.WebhookFloor.Lateness.N != 50 || m.Ratio == nil {
				t.Errorf("workers: webhook floor %+v (%s), ratio %+v", m.WebhookFloor, m.WebhookFloorError, m.Ratio)
			}
			checkFireCPU(t, "workers", m.CPUPerFire, 50)
		case *steadyMetrics:
			if m.Delivered == 0 {
				t.Error("steady: nothing delivered")
			}
			if m.Floor == nil || m.Floor.Lateness.N != 20*m.Floor.Seconds || m.Floor.Seconds != 4 || m.Ratio == nil {
				t.Errorf("steady: floor %+v (%s), ratio %+v", m.Floor, m.FloorError, m.Ratio)
			}
			checkFireCPU(t, "steady", m.CPUPerFire, 1)
		case *idleMetrics:
			if len(m.CPU.Nodes) != 3 || m.LeaderMsPerS <= 0 || m.FollowerMsPerS <= 0 {
				t.Errorf("idle: %+v", m)
			}
		case *floorMetrics:
			if m.Burst.Lateness.N != 50 || m.Steady.Lateness.N != 20*m.Steady.Seconds {
				t.Errorf("httpfloor: %d of 50 burst and %d of %d steady requests measured", m.Burst.Lateness.N, m.Steady.Lateness.N, 20*m.Steady.Seconds)
			}
		case *[]*failoverRun:
			for _, run := range *m {
				if len(run.Rounds) != 1 || run.Slots == 0 {
					t.Errorf("failover %s: %d rounds, %d slots", run.Setting, len(run.Rounds), run.Slots)
				}
			}
		case *scaleMetrics:
			if m.Restart.ReadyMs <= 0 || m.FSMSnapshot == nil {
				t.Errorf("scale: restart %vms, in-process snapshot %v", m.Restart.ReadyMs, m.FSMSnapshot)
			}
			if m.Registration.Batch == 0 || m.Registration.Ops != (300+m.Registration.Batch-1)/m.Registration.Batch {
				t.Errorf("scale: %d ApplyJobs calls of %d for 300 jobs", m.Registration.Ops, m.Registration.Batch)
			}
		case *[]*registryPhase:
			for _, p := range *m {
				if p.Writes == 0 || p.Writes != p.Ops*max(p.Batch, 1) || p.PerWrite.Leader <= 0 {
					t.Errorf("registry %s: %d writes in %d calls of %d, leader %v µs per write", p.Name, p.Writes, p.Ops, p.Batch, p.PerWrite.Leader)
				}
			}
		}
	}
	if n := localcluster.LiveCount(); n != 0 {
		t.Errorf("%d node processes still running after the scenarios", n)
	}
}

// checkFireCPU asserts a CPU-per-fire result over at least fires fires
// with every node, one of them the leader.
func checkFireCPU(t *testing.T, scenario string, f *fireCPU, fires int) {
	t.Helper()
	if f == nil || f.Fires < fires || len(f.Nodes) != 3 || f.NodesTotal <= 0 {
		t.Errorf("%s: cpu per fire %+v, want %d+ fires on 3 nodes", scenario, f, fires)
		return
	}
	leaders := 0
	for _, n := range f.Nodes {
		if n.Role == "leader" {
			leaders++
		}
	}
	if leaders != 1 {
		t.Errorf("%s: cpu per fire of %d leaders: %+v", scenario, leaders, f.Nodes)
	}
}

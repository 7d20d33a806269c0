package main

import (
	"bufio"
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"github.com/raftcron/raftcron/bench/harness"
	"github.com/raftcron/raftcron/internal/proc"
	"github.com/raftcron/raftcron/localcluster"
)

// nodeWorkerProgram is the Node SDK's benchmark worker, built by
// `make -C clients node-build` under -repo.
var nodeWorkerProgram = filepath.Join("clients", "node", "dist", "bench", "worker.js")

type workersHTTPMetrics struct {
	workerWave
	// GRPCWorkers is the workers scenario's lateness of this run, when it
	// ran before: the same tick to Go SDK workers over the gRPC stream.
	GRPCWorkers *harness.Dist `json:"grpc_workers_lateness,omitempty"`
	// CPU runs from just before the slot until the outcomes settled: the
	// nodes', not the workers'.
	CPU        cpuWindow `json:"cpu"`
	CPUPerFire *fireCPU  `json:"cpu_us_per_fire"`
	// NodeWorkersUsPerFire is the Node workers' CPU over the same window,
	// per attempt handled.
	NodeWorkersUsPerFire float64 `json:"node_workers_cpu_us_per_fire"`
}

func (m *workersHTTPMetrics) figures() []figure {
	var l figureList
	l.dist("handler lateness", m.Lateness, harness.Lower)
	if f := m.CPUPerFire; f != nil {
		l.add("CPU per fire, nodes", "µs", harness.Lower, f.NodesTotal)
	}
	l.add("CPU per fire, Node workers", "µs", harness.Lower, m.NodeWorkersUsPerFire)
	l.add("registration", "jobs/s", harness.Higher, m.Registration.OpsPerSec)
	return l
}

// runWorkersHTTP is the workers scenario's tick taken by two Node SDK
// workers (processes of their own) over the HTTP worker protocol: long
// polls for offers, a complete per attempt.
func runWorkersHTTP(ctx context.Context, e *env, res *Result) error {
	n := e.cfg.BurstJobs
	res.Params["jobs"] = n
	res.Params["workers"] = benchWorkers
	m := &workersHTTPMetrics{workerWave: workerWave{Jobs: n, Workers: benchWorkers}, GRPCWorkers: e.workersLateness}
	res.Metrics = m
	if err := runIn(e.cfg.Repo, "make", "-C", "clients", "node-build"); err != nil {
		return fmt.Errorf("build the Node worker: %w", err)
	}
	c, leader, err := e.startLed(ctx, "workers-http")
	if err != nil {
		return err
	}
	defer func() { _ = c.Crash() }()
	outs, pids, stop, err := startNodeWorkers(ctx, e, c)
	if err != nil {
		return err
	}
	defer stop()

	var slot time.Time
	if m.Registration, slot, err = registerWorkerWave(ctx, e, leader, n, "workers-http"); err != nil {
		return err
	}
	if e.cfg.WarmWorkers {
		// The first wave runs unmeasured: a long-running worker has compiled
		// its code, a fresh one pays for V8's compiling during its first.
		slot = slot.Add(time.Minute)
		res.Params["wave"] = "second"
	}
	m.Slot = slot.UTC()
	if err := sleepUntil(ctx, slot.Add(-500*time.Millisecond)); err != nil {
		return err
	}
	before, workersBefore := sampleNodes(c), workersCPU(pids)
	waitProfile := e.profileNodes(ctx, c, leader, "workers-http", 8*time.Second)
	// Reading the workers' output every half second costs them little.
	calls := readHandled(outs)
	for end := slot.Add(burstDeadline); handledOf(calls, slot) < n && time.Now().Before(end); calls = readHandled(outs) {
		if err := sleepUntil(ctx, time.Now().Add(500*time.Millisecond)); err != nil {
			return err
		}
	}
	settle(ctx, c, leader)
	after, workersAfter := sampleNodes(c), workersCPU(pids)
	waitProfile()
	stop()

	m.Delivered, m.Redeliveries, m.PerWorker, m.Lateness = tally(calls, slot)
	m.CPU = usage(c, leader, before, after)
	m.CPUPerFire = cpuPerFire(m.CPU, m.Delivered)
	if m.Delivered > 0 {
		m.NodeWorkersUsPerFire = round3(float64((workersAfter - workersBefore).Microseconds()) / float64(m.Delivered))
	}

	res.Summary = fmt.Sprintf("N=%d on %d Node workers over HTTP delivered=%d handler lateness p50=%.0fms p99=%.0fms max=%.0fms; split %v",
		n, benchWorkers, m.Delivered, m.Lateness.P50Ms, m.Lateness.P99Ms, m.Lateness.MaxMs, m.PerWorker)
	if m.GRPCWorkers != nil {
		res.Summary += fmt.Sprintf("; gRPC workers of this run p50=%.0fms p99=%.0fms", m.GRPCWorkers.P50Ms, m.GRPCWorkers.P99Ms)
	}
	res.target("p99", fmt.Sprintf("≤ %d ms", workersHTTPP99MaxMs), m.Lateness.P99Ms, "ms", m.Delivered == n && m.Lateness.P99Ms <= workersHTTPP99MaxMs)
	if m.Delivered != n {
		res.violate("%d of %d worker jobs handled for slot %s within %s", m.Delivered, n, m.Slot.Format(time.RFC3339), burstDeadline)
	}
	if m.Redeliveries > 0 {
		res.violate("%d slots handled twice", m.Redeliveries)
	}
	return nil
}

// startNodeWorkers starts the Node workers, each polling every node, and
// waits until each polls. It returns their output files and process IDs.
func startNodeWorkers(ctx context.Context, e *env, c *localcluster.Cluster) (outs map[string]string, pids []int, stop func(), err error) {
	addrs := make([]string, 0, len(c.Nodes()))
	for _, n := range c.Nodes() {
		addrs = append(addrs, n.OpsURL(""))
	}
	outs = map[string]string{}
	var procs []*proc.Process
	stop = func() {
		for _, p := range procs {
			p.Stop(5 * time.Second)
		}
	}
	for i := range benchWorkers {
		id := fmt.Sprintf("bench-node-w%d", i+1)
		cmd := exec.Command("node", filepath.Join(e.cfg.Repo, nodeWorkerProgram))
		cmd.Env = append(os.Environ(), "BENCH_WORKER_ID="+id, "BENCH_ADDRS="+strings.Join(addrs, ","))
		if ca := c.TLSFiles().CA; ca != "" {
			cmd.Env = append(cmd.Env, "NODE_EXTRA_CA_CERTS="+ca)
		}
		outs[id] = filepath.Join(e.workDir, id+".log")
		p, err := proc.Start(cmd, outs[id])
		if err != nil {
			stop()
			return nil, nil, nil, err
		}
		procs = append(procs, p)
		pids = append(pids, p.Pid())
	}
	err = harness.Poll(ctx, 30*time.Second, "the Node workers polling", func() (bool, error) {
		for _, out := range outs {
			b, _ := os.ReadFile(out)
			if !strings.Contains(string(b), "polling") {
				return false, nil
			}
		}
		return true, nil
	})
	if err != nil {
		stop()
		return nil, nil, nil, err
	}
	return outs, pids, stop, nil
}

// workersCPU is the CPU time the processes of pids have used so far.
func workersCPU(pids []int) time.Duration {
	var sum time.Duration
	for _, pid := range pids {
		if p, err := harness.ReadProc(pid); err == nil {
			sum += p.CPU
		}
	}
	return sum
}

// handledOf counts the handler calls of slot.
func handledOf(calls []handled, slot time.Time) int {
	n := 0
	for _, h := range calls {
		if h.slot == slot.Unix() {
			n++
		}
	}
	return n
}

// readHandled parses the workers' "handled JOB SLOT_UNIX START_UNIX_MS" lines.
func readHandled(outs map[string]string) []handled {
	var calls []handled
	for id, path := range outs {
		f, err := os.Open(path)
		if err != nil {
			continue
		}
		sc := bufio.NewScanner(f)
		for sc.Scan() {
			fields := strings.Fields(sc.Text())
			if len(fields) != 4 || fields[0] != "handled" {
				continue
			}
			slot, err1 := strconv.ParseInt(fields[2], 10, 64)
			ms, err2 := strconv.ParseInt(fields[3], 10, 64)
			if err1 == nil && err2 == nil {
				calls = append(calls, handled{job: fields[1], worker: id, slot: slot, at: time.UnixMilli(ms)})
			}
		}
		_ = f.Close()
	}
	return calls
}

// runIn runs a build command in dir.
func runIn(dir, name string, args ...string) error {
	cmd := exec.Command(name, args...)
	cmd.Dir = dir
	if out, err := cmd.CombinedOutput(); err != nil {
		return fmt.Errorf("%s %s: %v\n%s", name, strings.Join(args, " "), err, out)
	}
	return nil
}

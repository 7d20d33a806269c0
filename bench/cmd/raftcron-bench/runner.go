package main

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"time"

	"github.com/raftcron/raftcron/bench/harness"
	"github.com/raftcron/raftcron/localcluster"
)

// Result is one scenario's JSON document.
type Result struct {
	Scenario  string         `json:"scenario"`
	Quick     bool           `json:"quick"`
	StartedAt time.Time      `json:"started_at"`
	ElapsedS  float64        `json:"elapsed_s"`
	Machine   Machine        `json:"machine"`
	Params    map[string]any `json:"params"`
	// Metrics is the scenario's own measurement document.
	Metrics any      `json:"metrics"`
	Targets []Target `json:"targets,omitempty"`
	// Violations are correctness failures (a duplicate or missing slot);
	// any makes the run fail.
	Violations []string `json:"violations,omitempty"`
	Summary    string   `json:"summary"`
	Error      string   `json:"error,omitempty"`
}

// Target compares a measured value with a DESIGN §13 target.
type Target struct {
	Name   string  `json:"name"`
	Target string  `json:"target"`
	Value  float64 `json:"value"`
	Unit   string  `json:"unit"`
	Met    bool    `json:"met"`
}

func (r *Result) target(name, target string, value float64, unit string, met bool) {
	r.Targets = append(r.Targets, Target{Name: name, Target: target, Value: value, Unit: unit, Met: met})
}

func (r *Result) violate(format string, args ...any) {
	r.Violations = append(r.Violations, fmt.Sprintf(format, args...))
}

// Machine says where the numbers come from.
type Machine struct {
	CPUModel   string  `json:"cpu_model"`
	CPUs       int     `json:"cpus"`
	MemTotalGB float64 `json:"mem_total_gb"`
	Kernel     string  `json:"kernel"`
	GoVersion  string  `json:"go_version"`
	Raftcron   string  `json:"raftcron_version"`
	LoadAvg    string  `json:"loadavg_at_start"`
}

// env is what every scenario gets: the configuration, where to put files
// and how to log progress.
type env struct {
	cfg     config
	runDir  string // results of this run
	workDir string // data dirs and logs of this run
	machine Machine
	// clusters are the current scenario's, whose data goes once it
	// succeeded (a failed one keeps its data for a post-mortem).
	clusters []*localcluster.Cluster
	// burstLateness is the burst scenario's result in this run, shown
	// beside the workers scenario's.
	burstLateness *harness.Dist
	// burstFloor is the burst's floor in this run, shown beside the
	// workers scenario's too.
	burstFloor *floorWave
}

type runner struct{ env *env }

func newRunner(cfg config) (*runner, error) {
	bin, err := filepath.Abs(cfg.Bin)
	if err != nil {
		return nil, err
	}
	if st, err := os.Stat(bin); err != nil || st.IsDir() {
		return nil, fmt.Errorf("-bin %s: not a file (run make build): %v", cfg.Bin, err)
	}
	cfg.Bin = bin
	stamp := time.Now().UTC().Format("20060102T150405Z")
	if cfg.Quick {
		stamp += "-quick"
	}
	runDir := filepath.Join(cfg.Out, stamp)
	if err := os.MkdirAll(runDir, 0o755); err != nil {
		return nil, fmt.Errorf("-out: %w", err)
	}
	workDir, err := os.MkdirTemp(cfg.Work, "raftcron-bench-")
	if err != nil {
		return nil, fmt.Errorf("-work: %w", err)
	}
	return &runner{env: &env{cfg: cfg, runDir: runDir, workDir: workDir, machine: machineInfo(bin)}}, nil
}

// runAll runs the chosen scenarios in order, prints one summary line each
// and returns the exit status: 1 if a scenario failed to run or recorded a
// correctness violation. Missed performance targets are reported, not
// failed on.
func (r *runner) runAll(ctx context.Context) int {
	e := r.env
	e.logf("results in %s; node data and logs in %s", e.runDir, e.workDir)
	status := 0
	var lines []string
	for _, s := range scenarios {
		if !e.wants(s.name) || ctx.Err() != nil {
			continue
		}
		res := r.runOne(ctx, s)
		line := summaryLine(res)
		fmt.Println(line)
		lines = append(lines, line)
		if res.Error != "" || len(res.Violations) > 0 {
			status = 1
		}
	}
	_ = os.WriteFile(filepath.Join(e.runDir, "summary.txt"), []byte(strings.Join(lines, "\n")+"\n"), 0o644)
	if ctx.Err() != nil {
		e.logf("interrupted: %v", ctx.Err())
		status = 1
	}
	if status == 0 && !e.cfg.Keep {
		_ = os.RemoveAll(e.workDir)
	} else {
		e.logf("kept node data and logs in %s", e.workDir)
	}
	return status
}

func (r *runner) runOne(ctx context.Context, s scenario) *Result {
	e := r.env
	res := &Result{Scenario: s.name, Quick: e.cfg.Quick, StartedAt: time.Now().UTC(), Machine: e.machine, Params: map[string]any{}}
	e.logf("%s: starting", s.name)
	err := runGuarded(ctx, e, s, res)
	// Nodes a scenario left running (it failed half-way) go now, so the
	// next scenario measures on a quiet machine.
	if n := localcluster.KillAll(); n > 0 {
		e.logf("%s: killed %d node process(es) left running", s.name, n)
	}
	res.ElapsedS = time.Since(res.StartedAt).Seconds()
	if err != nil {
		res.Error = err.Error()
		e.logf("%s: error: %v", s.name, err)
	}
	if err == nil && len(res.Violations) == 0 && !e.cfg.Keep {
		e.removeData()
	} else {
		e.clusters = nil
	}
	path := filepath.Join(e.runDir, s.name+".json")
	if data, jerr := json.MarshalIndent(res, "", "  "); jerr == nil {
		if werr := os.WriteFile(path, append(data, '\n'), 0o644); werr != nil {
			e.logf("%s: writing %s: %v", s.name, path, werr)
		}
	}
	return res
}

// runGuarded turns a panic in a scenario into an error, so the deferred
// cleanup of the others still runs.
func runGuarded(ctx context.Context, e *env, s scenario, res *Result) (err error) {
	defer func() {
		if p := recover(); p != nil {
			err = fmt.Errorf("panic: %v", p)
		}
	}()
	return s.run(ctx, e, res)
}

func summaryLine(r *Result) string {
	var b strings.Builder
	fmt.Fprintf(&b, "%-9s %s", r.Scenario, r.Summary)
	for _, t := range r.Targets {
		mark := "MET"
		if !t.Met {
			mark = "MISSED"
		}
		fmt.Fprintf(&b, " [%s %s: %s]", t.Name, t.Target, mark)
	}
	if len(r.Violations) > 0 {
		fmt.Fprintf(&b, " VIOLATIONS: %s", strings.Join(r.Violations, "; "))
	}
	if r.Error != "" {
		fmt.Fprintf(&b, " ERROR: %s", r.Error)
	}
	return b.String()
}

func (e *env) wants(name string) bool {
	for _, n := range e.cfg.Scenarios {
		if n == name {
			return true
		}
	}
	return false
}

func (e *env) logf(format string, args ...any) {
	fmt.Fprintf(os.Stderr, "%s %s\n", time.Now().Format("15:04:05.000"), fmt.Sprintf(format, args...))
}

// startCluster starts a fresh 3-node cluster in its own directory; stop
// kills it (the data stays for -keep or a failed run, else it goes with the
// work dir).
func (e *env) startCluster(ctx context.Context, name string, extra ...string) (*localcluster.Cluster, error) {
	dir := filepath.Join(e.workDir, name)
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return nil, err
	}
	c, err := harness.StartCluster(ctx, harness.ClusterOptions{Bin: e.cfg.Bin, Dir: dir, Extra: extra, LogLevel: e.cfg.NodeLogLevel})
	if err != nil {
		return nil, fmt.Errorf("%s cluster: %w", name, err)
	}
	e.clusters = append(e.clusters, c)
	return c, nil
}

// removeData deletes the data dirs of the scenario's clusters (they can
// be large); the logs stay until the run ends.
func (e *env) removeData() {
	for _, c := range e.clusters {
		for _, n := range c.Nodes() {
			if !n.Running() {
				_ = os.RemoveAll(n.DataDir)
			}
		}
	}
	e.clusters = nil
}

func machineInfo(bin string) Machine {
	m := Machine{CPUs: runtime.NumCPU(), GoVersion: runtime.Version()}
	if data, err := os.ReadFile("/proc/cpuinfo"); err == nil {
		for line := range strings.SplitSeq(string(data), "\n") {
			if k, v, ok := strings.Cut(line, ":"); ok && strings.TrimSpace(k) == "model name" {
				m.CPUModel = strings.TrimSpace(v)
				break
			}
		}
	}
	if data, err := os.ReadFile("/proc/meminfo"); err == nil {
		var kb float64
		if _, err := fmt.Sscanf(string(data), "MemTotal: %f kB", &kb); err == nil {
			m.MemTotalGB = kb / (1 << 20)
		}
	}
	if data, err := os.ReadFile("/proc/sys/kernel/osrelease"); err == nil {
		m.Kernel = strings.TrimSpace(string(data))
	}
	if data, err := os.ReadFile("/proc/loadavg"); err == nil {
		m.LoadAvg = strings.Join(strings.Fields(string(data))[:3], " ")
	}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	if out, err := exec.CommandContext(ctx, bin, "version").Output(); err == nil {
		m.Raftcron = strings.TrimSpace(string(out))
	}
	return m
}

// sleepUntil waits for t or ctx.
func sleepUntil(ctx context.Context, t time.Time) error {
	d := time.Until(t)
	if d <= 0 {
		return ctx.Err()
	}
	timer := time.NewTimer(d)
	defer timer.Stop()
	select {
	case <-ctx.Done():
		return ctx.Err()
	case <-timer.C:
		return nil
	}
}

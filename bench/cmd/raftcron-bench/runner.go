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
	cfg config
	// label names one run of repeated ones (run01, or old01 and new01
	// with -ab); empty when the scenarios run once.
	label   string
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
	// workersLateness is the workers scenario's result in this run, shown
	// beside the workers-http scenario's.
	workersLateness *harness.Dist
}

// runner runs the chosen scenarios -repeat times, each time with every
// arm's binary in turn.
type runner struct {
	// env is the whole run's: its settings, directories and machine.
	env       *env
	scenarios []scenario
	arms      []arm
}

// arm is a node binary the scenarios run: -bin alone, or -ab's old and
// -bin as new.
type arm struct {
	// name is "old" or "new" with -ab, else empty.
	name string
	bin  string
}

func newRunner(cfg config) (*runner, error) {
	bin, err := binaryPath("-bin", cfg.Bin)
	if err != nil {
		return nil, err
	}
	cfg.Bin = bin
	arms := []arm{{bin: bin}}
	if cfg.ABOld != "" {
		old, err := binaryPath("-ab", cfg.ABOld)
		if err != nil {
			return nil, err
		}
		cfg.ABOld = old
		arms = []arm{{name: "old", bin: old}, {name: "new", bin: bin}}
	}
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
	e := &env{cfg: cfg, runDir: runDir, workDir: workDir, machine: machineInfo(bin)}
	return &runner{env: e, scenarios: scenarios, arms: arms}, nil
}

// binaryPath is the absolute path of the node binary flag names.
func binaryPath(flag, path string) (string, error) {
	abs, err := filepath.Abs(path)
	if err != nil {
		return "", err
	}
	if st, err := os.Stat(abs); err != nil || st.IsDir() {
		return "", fmt.Errorf("%s %s: not a file (run make build): %v", flag, path, err)
	}
	return abs, nil
}

// repeated says whether the scenarios run more than once: each run then
// has directories of its own and figures.md sums them up.
func (r *runner) repeated() bool { return r.env.cfg.Repeat > 1 || len(r.arms) > 1 }

// runAll runs the chosen scenarios in order, prints one summary line each
// and returns the exit status: 1 if a scenario failed to run or recorded a
// correctness violation. Missed performance targets are reported, not
// failed on. Repeated, it runs round after round; in a round each
// scenario runs once per arm, one arm right after the other (old, new),
// so that a pair sees the same machine.
func (r *runner) runAll(ctx context.Context) int {
	e := r.env
	e.logf("results in %s; node data and logs in %s", e.runDir, e.workDir)
	if len(r.arms) > 1 && e.cfg.Repeat < minPairs {
		e.logf("-ab with %d pairs: at least %d are needed before a median says more than the noise", e.cfg.Repeat, minPairs)
	}
	status := 0
	var lines []string
	var runs []runRecord
	for round := 1; round <= e.cfg.Repeat && ctx.Err() == nil; round++ {
		envs, err := r.roundEnvs(round)
		if err != nil {
			e.logf("%v", err)
			status = 1
			break
		}
		for _, s := range r.scenarios {
			if !e.wants(s.name) {
				continue
			}
			for i, a := range r.arms {
				if ctx.Err() != nil {
					break
				}
				res := runOne(ctx, envs[i], s)
				line := summaryLine(res)
				if envs[i].label != "" {
					line = envs[i].label + " " + line
				}
				fmt.Println(line)
				lines = append(lines, line)
				runs = append(runs, newRunRecord(s.name, a.name, round, envs[i].label, res))
				if res.Error != "" || len(res.Violations) > 0 {
					status = 1
				}
			}
		}
	}
	_ = os.WriteFile(filepath.Join(e.runDir, "summary.txt"), []byte(strings.Join(lines, "\n")+"\n"), 0o644)
	if r.repeated() {
		if err := r.writeReport(runs); err != nil {
			e.logf("writing the figures: %v", err)
			status = 1
		}
	}
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

// roundEnvs are each arm's env for one round: its binary, and, repeated,
// result and work directories of its own (run01, old01, new01, ...). A
// fresh env also forgets the burst of the round before.
func (r *runner) roundEnvs(round int) ([]*env, error) {
	if !r.repeated() {
		return []*env{r.env}, nil
	}
	envs := make([]*env, len(r.arms))
	for i, a := range r.arms {
		name := a.name
		if name == "" {
			name = "run"
		}
		label := fmt.Sprintf("%s%02d", name, round)
		e := &env{cfg: r.env.cfg, label: label,
			runDir: filepath.Join(r.env.runDir, label), workDir: filepath.Join(r.env.workDir, label),
			machine: machineInfo(a.bin)}
		e.cfg.Bin = a.bin
		for _, dir := range []string{e.runDir, e.workDir} {
			if err := os.MkdirAll(dir, 0o755); err != nil {
				return nil, fmt.Errorf("%s: %w", label, err)
			}
		}
		envs[i] = e
	}
	return envs, nil
}

func runOne(ctx context.Context, e *env, s scenario) *Result {
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
	label := ""
	if e.label != "" {
		label = e.label + " "
	}
	fmt.Fprintf(os.Stderr, "%s %s%s\n", time.Now().Format("15:04:05.000"), label, fmt.Sprintf(format, args...))
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

// startLed is startCluster waiting for the cluster's leader too; a cluster
// with no leader in time is crashed. The caller crashes it when done.
func (e *env) startLed(ctx context.Context, name string, extra ...string) (*localcluster.Cluster, *localcluster.Node, error) {
	c, err := e.startCluster(ctx, name, extra...)
	if err != nil {
		return nil, nil, err
	}
	leader, err := harness.Leader(ctx, c, harness.ReadyTimeout)
	if err != nil {
		_ = c.Crash()
		return nil, nil, err
	}
	return c, leader, nil
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
	m.Raftcron = binaryVersion(bin)
	return m
}

// binaryVersion is what `bin version` prints; empty when it fails.
func binaryVersion(bin string) string {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	out, err := exec.CommandContext(ctx, bin, "version").Output()
	if err != nil {
		return ""
	}
	return strings.TrimSpace(string(out))
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

// Command raftcron-bench runs raftcron's benchmark scenarios against a real
// 3-node cluster of `raftcron serve` processes on loopback (fsync on, as
// deployed), prints one summary line per scenario and writes each
// scenario's full result as JSON into a per-run directory.
//
//	raftcron-bench [-quick] [-scenarios burst,steady,...] [-bin bin/raftcron] [-out bench/results]
//	               [-repeat N] [-ab OLD_BIN]
//
// Scenarios: burst, workers (the burst's tick on two remote workers of one
// pool, SDK handlers in this process), workers-http (the same tick on two
// Node SDK workers over the HTTP worker protocol), steady, idle (the CPU of
// a cluster with nothing to do), failover, registry, scale (real clusters)
// and micro (go test -bench over the product packages).
// burst and steady each measure their floor too, the same webhook waves
// with no cluster, and report their lateness as a ratio to it; httpfloor,
// not run unless named, measures both floors alone; burst-features, not
// run unless named, is the burst with the job features on the fire path
// (calendars, alerts, jitter, secrets, chains) on every job. -quick runs a short version of each. Every child process is killed
// when the program ends, whatever the reason.
//
// -repeat N runs every chosen scenario N times, a fresh cluster each
// time, and reports each figure's median, min and max (figures.md,
// figures.json); -ab OLD_BIN runs OLD_BIN's nodes and -bin's in turn,
// old, new, old, new, N pairs, and reports each figure's paired
// difference and ratio, and in how many pairs the new binary was better.
package main

import (
	"context"
	"flag"
	"fmt"
	"os"
	"os/signal"
	"strings"
	"syscall"

	"github.com/raftcron/raftcron/localcluster"
)

func main() { os.Exit(run()) }

func run() int {
	cfg, err := parseFlags(os.Args[1:])
	if err != nil {
		fmt.Fprintln(os.Stderr, "raftcron-bench:", err)
		return 2
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	// Whatever happens below, no node outlives this program.
	defer func() {
		if n := localcluster.KillAll(); n > 0 {
			fmt.Fprintf(os.Stderr, "raftcron-bench: killed %d leftover node process(es)\n", n)
		}
	}()
	r, err := newRunner(cfg)
	if err != nil {
		fmt.Fprintln(os.Stderr, "raftcron-bench:", err)
		return 1
	}
	return r.runAll(ctx)
}

// scenario is one benchmark; it fills res and returns an error only when
// it could not measure (a correctness violation is recorded in res).
type scenario struct {
	name string
	run  func(ctx context.Context, e *env, res *Result) error
}

// defaultScenarios is every scenario but httpfloor, whose waves burst and
// steady already measure beside themselves, and burst-features, which
// runs beside the burst when a feature's price is the question.
const defaultScenarios = "burst,workers,workers-http,steady,idle,failover,registry,scale,micro"

// minPairs is the fewest runs (or -ab pairs) whose median the docs keep.
const minPairs = 5

var scenarios = []scenario{
	{"burst", runBurst},
	{burstFeaturesName, runBurstFeatures},
	{"workers", runWorkers},
	{"workers-http", runWorkersHTTP},
	{"steady", runSteady},
	{"httpfloor", runFloor},
	{"failover", runFailover},
	{"idle", runIdle},
	{"registry", runRegistry},
	{"scale", runScale},
	{"micro", runMicro},
}

func parseFlags(args []string) (config, error) {
	fs := flag.NewFlagSet("raftcron-bench", flag.ContinueOnError)
	var c config
	var names string
	fs.StringVar(&c.Bin, "bin", "bin/raftcron", "the raftcron binary (make build)")
	fs.StringVar(&c.Out, "out", "bench/results", "directory for the per-run result directories")
	fs.StringVar(&c.Work, "work", "", "parent of the nodes' data dirs (default: the system temp dir)")
	fs.StringVar(&c.Repo, "repo", ".", "module root, for the micro scenario's go test")
	fs.BoolVar(&c.Quick, "quick", false, "short version of every scenario (make bench-quick)")
	fs.StringVar(&names, "scenarios", defaultScenarios, "comma-separated scenarios to run (httpfloor and burst-features only when named: burst and steady measure their floors; with -ab the default leaves out micro)")
	fs.BoolVar(&c.Keep, "keep", false, "keep the nodes' data dirs and logs even on success")
	fs.BoolVar(&c.Profile, "profile", false, "save CPU and heap profiles of the leader and a follower (from /debug/pprof) next to the results")
	fs.BoolVar(&c.Trace, "trace", false, "workers: save Go execution traces of every node and of the bench process over the wave (from 0.5 s before the slot, 1 s)")
	fs.Int64Var(&c.Seed, "seed", 1, "seed of the failover scenario's kill timing")
	fs.StringVar(&c.NodeLogLevel, "node-log-level", "info", "--log-level of the nodes")
	fs.IntVar(&c.Repeat, "repeat", 1, fmt.Sprintf("run each chosen scenario N times, a fresh cluster each time, and report every figure's median, min and max (figures.md, figures.json); with -ab, N pairs. Docs keep only medians of at least %d", minPairs))
	fs.StringVar(&c.ABOld, "ab", "", fmt.Sprintf("OLD_BIN: run OLD_BIN's nodes and -bin's in turn, old, new, old, new (-repeat N pairs; at least %d recommended), and report each figure's paired difference new − old and ratio new ÷ old, and in how many pairs new was better", minPairs))

	fs.IntVar(&c.BurstJobs, "burst-jobs", 0, "burst, workers, workers-http: jobs due in the same second (default 10000)")
	fs.BoolVar(&c.WarmWorkers, "warm-workers", false, "workers-http: measure the jobs' second wave, a minute after the first, when V8 has compiled the Node workers' code (default: the first wave, of fresh worker processes)")
	fs.IntVar(&c.SteadyRate, "steady-rate", 2000, "steady: fires per second")
	fs.DurationVar(&c.SteadyDuration, "steady-duration", 0, "steady: measured window (default 60s, quick 15s)")
	fs.IntVar(&c.SteadyPeriod, "steady-period", 0, "steady: seconds between two fires of one job, a divisor of 60 (default 10, quick 5); jobs = rate × period")
	fs.IntVar(&c.FailoverRounds, "failover-rounds", 0, "failover: leader kills per Raft setting (default 20, quick 3)")
	fs.DurationVar(&c.RegistryDuration, "registry-duration", 0, "registry: length of each phase (default 20s, quick 4s)")
	fs.DurationVar(&c.IdleDuration, "idle-duration", 0, "idle: measured window (default 60s, quick 20s)")
	fs.IntVar(&c.ScaleJobs, "scale-jobs", 0, "scale: jobs registered (default 1000000, quick 50000)")
	fs.DurationVar(&c.ScaleSnapshotWait, "scale-snapshot-wait", -1, "scale: how long to wait for Raft's own snapshot of the full registry (default 300s, quick 0 = do not wait)")
	fs.StringVar(&c.MicroBenchtime, "micro-benchtime", "", "micro: go test -benchtime (default 1s, quick 100ms)")
	if err := fs.Parse(args); err != nil {
		return c, err
	}
	if fs.NArg() > 0 {
		return c, fmt.Errorf("unexpected arguments %q", fs.Args())
	}
	named := false
	fs.Visit(func(f *flag.Flag) { named = named || f.Name == "scenarios" })
	if c.ABOld != "" && !named {
		names = strings.TrimSuffix(defaultScenarios, ",micro")
	}
	for n := range strings.SplitSeq(names, ",") {
		n = strings.TrimSpace(n)
		if n == "" {
			continue
		}
		if !known(n) {
			return c, fmt.Errorf("-scenarios: unknown scenario %q (known: %s)", n, strings.Join(scenarioNames(), ", "))
		}
		c.Scenarios = append(c.Scenarios, n)
	}
	if len(c.Scenarios) == 0 {
		return c, fmt.Errorf("-scenarios: none given")
	}
	return c.withDefaults()
}

func scenarioNames() []string {
	names := make([]string, len(scenarios))
	for i, s := range scenarios {
		names[i] = s.name
	}
	return names
}

func known(name string) bool {
	for _, s := range scenarios {
		if s.name == name {
			return true
		}
	}
	return false
}

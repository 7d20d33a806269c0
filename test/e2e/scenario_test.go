//go:build e2e

package e2e

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/raftcron/raftcron/internal/testutil"
	"github.com/raftcron/raftcron/localcluster"
	pb "github.com/raftcron/raftcron/proto/raftcron/v1"
)

// slowReply is how long the sink holds its replies to the 2 s job.
const slowReply = 400 * time.Millisecond

// scenarioOptions shape one scenario.
type scenarioOptions struct {
	nodes int
	// failpoints: run the binary built with the failpoints tag, with
	// RAFTCRON_FAILPOINTS set on every node to these hooks.
	failpoints []string
	// holdDirs: give each node a pause-after-commit directory.
	holdDirs bool
	// nodeEnv adds environment to one node (e.g. a clock offset).
	nodeEnv map[int][]string
	sink    SinkMode
	expect  Expect
	// serveArgs are more flags of every node (--worker-lease).
	serveArgs []string
	// workers start that many `raftcron worker` processes and register
	// the worker jobs (workers_test.go).
	workers int
	// bin: start the nodes with this binary instead of this build's.
	bin string
	// chains: register the chain of chains_test.go besides the stable
	// jobs.
	chains bool
}

// scenario is one run of the workload against a cluster under a nemesis.
type scenario struct {
	t       *testing.T
	name    string
	seed    int64
	rng     *rand.Rand
	dir     string
	opts    scenarioOptions
	c       *cluster
	sink    *Sink
	sinkURL string
	start   time.Time
	began   time.Time
	jobs    []JobInfo
	chains  []ChainLink
	churn   *churn
	workers []*workerProc
}

// newScenario starts the cluster, the sink, the stable jobs and the
// registry churn.
func newScenario(t *testing.T, name string, opts scenarioOptions) *scenario {
	t.Helper()
	s := &scenario{t: t, name: name, seed: baseSeed, opts: opts, began: time.Now()}
	s.rng = rand.New(rand.NewPCG(uint64(s.seed), 0x5eed))
	t.Logf("scenario %s: E2E_SEED=%d, %d nodes", name, s.seed, opts.nodes)
	s.dir = workdir(t, name)

	nw, err := newNetwork(opts.nodes)
	if err != nil {
		t.Fatalf("network: %v", err)
	}
	t.Logf("network: %s", nw.Name())

	s.sink, err = NewSink(filepath.Join(s.dir, "sink.db"), opts.sink)
	if err != nil {
		_ = nw.Close()
		t.Fatal(err)
	}
	ln, err := nw.Listen()
	if err != nil {
		_ = nw.Close()
		t.Fatalf("sink listener: %v", err)
	}
	srv := &http.Server{Handler: s.sink, ReadHeaderTimeout: 10 * time.Second}
	go func() { _ = srv.Serve(ln) }()
	t.Cleanup(func() {
		_ = srv.Close()
		_ = s.sink.Close()
	})
	s.sinkURL = "http://" + ln.Addr().String()
	// The 2 s job's downstream is slow: a node that fails right after
	// dispatching it leaves a run whose outcome is unknown, for the next
	// leader to re-dispatch.
	s.sink.SetDelay("e2e-2s", slowReply)

	bin := plainBinary.get(t)
	if len(opts.failpoints) > 0 || opts.holdDirs || len(opts.nodeEnv) > 0 {
		bin = failpointsBinary.get(t)
	}
	if opts.bin != "" {
		bin = opts.bin
	}
	s.c = newCluster(t, s.dir, nw, clusterOptions{nodes: opts.nodes, bin: bin, env: s.nodeEnv, args: opts.serveArgs})
	for i, id := range s.c.ids {
		if ip := nw.SenderIP(i); ip != "" {
			s.sink.SetSender(ip, id)
		}
	}
	s.start = time.Now()
	s.startWorkers(bin)
	s.createStableJobs()
	if opts.chains {
		s.createChains()
	}
	s.churn = startChurn(s.c, s.start, s.seed, s.sinkURL)
	t.Logf("cluster ready, jobs registered, churn running (%s)", time.Since(s.began).Round(time.Millisecond))
	return s
}

// nodeEnv is node i's RAFTCRON_FAILPOINTS.
func (s *scenario) nodeEnv(i int, dir string) []string {
	hooks := append([]string(nil), s.opts.failpoints...)
	if s.opts.holdDirs {
		hold := filepath.Join(dir, fmt.Sprintf("hold-n%d", i+1))
		if err := os.MkdirAll(hold, 0o755); err != nil {
			s.t.Fatal(err)
		}
		hooks = append(hooks, "pause-after-commit="+hold)
	}
	hooks = append(hooks, s.opts.nodeEnv[i]...)
	if len(hooks) == 0 {
		return nil
	}
	return []string{"RAFTCRON_FAILPOINTS=" + strings.Join(hooks, ",")}
}

// workdir makes the scenario's directory, kept (and named) if the test
// fails or E2E_KEEP=1.
func workdir(t *testing.T, name string) string {
	t.Helper()
	dir, err := os.MkdirTemp(os.Getenv("E2E_DIR"), "raftcron-e2e-"+name+"-")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if t.Failed() || os.Getenv("E2E_KEEP") == "1" {
			t.Logf("kept %s (node logs n*.log, history.json, ledgers.json, report.txt)", dir)
			return
		}
		_ = os.RemoveAll(dir)
	})
	return dir
}

// run lets the workload run for d.
func (s *scenario) run(d time.Duration) { time.Sleep(d) }

// firing reports whether the sink has received anything yet.
func (s *scenario) firing() bool { return len(s.sink.Attempts()) > 0 }

// finish heals the cluster, lets the jobs catch up, stops the workload,
// dumps the ledgers, checks the history and returns the report. It fails
// the test when the report is not OK, unless the caller expects a
// violation (negative controls).
func (s *scenario) finish(expectViolation string) Report {
	s.t.Helper()
	s.healAll()
	ops := s.churn.halt()

	// Slots up to a little after the heal are checked; wait until the
	// jobs have fired them.
	checkTo := time.Now().Unix() + 2
	for i := range s.jobs {
		s.jobs[i].CheckTo = checkTo / s.jobs[i].Period * s.jobs[i].Period
	}
	if s.firing() {
		s.waitCaughtUp(checkTo)
	} else {
		s.t.Log("the sink has received nothing: is the scheduler wired? (checking the registry anyway)")
	}
	s.pauseJobs()
	s.drainChains()
	attempts, ledgers := s.dumpLedgers()

	h := &History{
		Scenario: s.name, Seed: s.seed, Network: strings.Fields(s.c.net.Name())[0], Nodes: s.c.ids,
		Start: s.start, Jobs: s.jobs, Attempts: attempts, Registry: ops,
		Events: s.c.eventLog(), Status: s.c.polls.all(), Expect: s.opts.expect, Chains: s.chains,
	}
	h.Expect.Registry = true
	h.ClockSkew = len(s.opts.nodeEnv) > 0
	rep := Check(h, ledgers, CheckOptions{RegistryTimeout: 2 * time.Minute})
	s.save(h, ledgers, rep)
	s.t.Logf("scenario %s (E2E_SEED=%d) took %s:\n%s", s.name, s.seed, time.Since(s.began).Round(time.Millisecond), rep)
	switch {
	case expectViolation != "":
		// The caller asserts.
	case !rep.OK():
		s.t.Errorf("scenario %s failed (E2E_SEED=%d); the history is in %s", s.name, s.seed, s.dir)
	}
	return rep
}

func (s *scenario) save(h *History, ledgers []NodeLedger, rep Report) {
	for name, v := range map[string]any{"history.json": h, "ledgers.json": ledgers, "report.json": rep} {
		if err := Save(filepath.Join(s.dir, name), v); err != nil {
			s.t.Errorf("save %s: %v", name, err)
		}
	}
	if err := os.WriteFile(filepath.Join(s.dir, "report.txt"), []byte(rep.String()), 0o644); err != nil {
		s.t.Errorf("save report: %v", err)
	}
	if rep.Broke(RuleG6) {
		path := filepath.Join(s.dir, "registry.html")
		if err := rep.VisualizeRegistry(path); err == nil {
			s.t.Logf("registry history visualized in %s", path)
		}
	}
}

// healAll ends every fault still in place: links, paused and dead nodes.
func (s *scenario) healAll() {
	s.t.Helper()
	if err := s.c.net.HealAll(); err != nil {
		s.t.Errorf("heal: %v", err)
	}
	for _, n := range s.c.nodes {
		switch n.State() {
		case localcluster.Paused:
			s.c.resume(n)
		case localcluster.Down:
			s.c.restart(n)
		}
	}
	s.healWorkers()
	s.c.waitReady(s.c.nodes...)
	s.c.event("healed", nil, "")
}

// waitCaughtUp waits until every stable job's cursor has passed checkTo
// and none of its runs up to there is still open.
func (s *scenario) waitCaughtUp(checkTo int64) {
	s.t.Helper()
	deadline := time.Now().Add(45 * time.Second)
	for _, j := range s.jobs {
		for {
			st, err := s.jobStatus(j.Name)
			if err == nil && st.GetCursorUnix() >= checkTo && len(st.GetOpenRunIds()) == 0 {
				break
			}
			if time.Now().After(deadline) {
				s.t.Logf("%s did not catch up to %s in time (status %v, err %v); the checker will say which slots",
					j.Name, slotTime(checkTo), st, err)
				return
			}
			time.Sleep(100 * time.Millisecond)
		}
	}
}

func (s *scenario) jobStatus(name string) (*pb.JobStatus, error) {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
	defer cancel()
	res, err := s.c.jobs(s.c.leader()).GetJob(ctx, &pb.GetJobRequest{Name: name})
	return res.GetJob().GetStatus(), err
}

// pauseJobs pauses the stable jobs, so that nothing fires while the
// ledgers are dumped, and waits until no run of theirs is open.
func (s *scenario) pauseJobs() {
	s.t.Helper()
	for _, j := range s.jobs {
		s.retry("pause "+j.Name, func(ctx context.Context, n *node) error {
			_, err := s.c.jobs(n).PauseJob(ctx, &pb.PauseJobRequest{Name: j.Name, Note: "e2e: end of scenario"})
			return err
		})
	}
	deadline := time.Now().Add(20 * time.Second)
	for _, j := range s.jobs {
		for {
			st, err := s.jobStatus(j.Name)
			if err == nil && len(st.GetOpenRunIds()) == 0 {
				break
			}
			if time.Now().After(deadline) {
				s.t.Logf("%s still has open runs after the pause: %v", j.Name, st.GetOpenRunIds())
				break
			}
			time.Sleep(100 * time.Millisecond)
		}
	}
	s.c.event("jobs-paused", nil, "")
}

// dumpLedgers takes the sink's record, waits until every node has applied
// the leader's commit index, reads every node's ledger through RunService
// (if the nodes serve it), then stops the nodes and replays each data dir
// up to that index.
func (s *scenario) dumpLedgers() ([]Attempt, []NodeLedger) {
	s.t.Helper()
	attempts := s.sink.Attempts()
	commit := s.commonCommit()
	var ledgers []NodeLedger
	for _, n := range s.c.nodes {
		l, err := s.apiLedger(n)
		if status.Code(err) == codes.Unimplemented {
			s.t.Log("RunService is not served: ledgers come from the data dirs only")
			break
		}
		if err != nil {
			s.t.Errorf("ListRuns on %s: %v", n.ID, err)
			continue
		}
		ledgers = append(ledgers, l)
	}
	for _, n := range s.c.nodes {
		s.c.kill(n)
	}
	for _, hook := range s.opts.failpoints {
		if name, _, _ := strings.Cut(hook, "="); name == "skip-slot-dedupe" || name == "chain-separate-entry" {
			// The nodes' state machine ran with a hook this process's does
			// not have: a replay would not reproduce their state.
			s.t.Logf("%s changes the state machine: no data-dir replay", name)
			return attempts, ledgers
		}
	}
	s.c.event("stopped", s.c.nodes, fmt.Sprintf("replaying data dirs up to index %d", commit))
	for _, n := range s.c.nodes {
		l, err := ReplayDataDir(n.ID, n.DataDir, commit)
		if err != nil {
			s.t.Errorf("replay %s: %v", n.ID, err)
			continue
		}
		if l.Index != commit {
			s.t.Errorf("replay %s reached index %d, want %d", n.ID, l.Index, commit)
		}
		ledgers = append(ledgers, l)
	}
	return attempts, ledgers
}

// commonCommit is the leader's commit index, read now (after the jobs
// were paused, so every attempt the sink has seen was committed at or
// below it), once every node has applied it.
func (s *scenario) commonCommit() uint64 {
	s.t.Helper()
	var commit uint64
	testutil.WaitFor(s.t, 10*time.Second, "the leader's commit index", func() bool {
		leader := s.c.leader()
		ctx, cancel := context.WithTimeout(context.Background(), time.Second)
		defer cancel()
		st, err := s.c.polls.status(ctx, leader)
		commit = st.CommitIndex
		return err == nil && st.State == "leader"
	})
	testutil.WaitFor(s.t, 20*time.Second, fmt.Sprintf("every node applied index %d", commit), func() bool {
		for _, n := range s.c.nodes {
			ctx, cancel := context.WithTimeout(context.Background(), time.Second)
			st, err := s.c.polls.status(ctx, n)
			cancel()
			if err != nil || st.AppliedIndex < commit {
				return false
			}
		}
		return true
	})
	return commit
}

// apiLedger lists the stable jobs' runs on n from its own state.
func (s *scenario) apiLedger(n *node) (NodeLedger, error) {
	l := NodeLedger{Node: n.ID, Source: "api"}
	names := s.chainJobs()
	for _, j := range s.jobs {
		names = append(names, j.Name)
	}
	for _, name := range names {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		res, err := s.c.runsClient(n).ListRuns(ctx, &pb.ListRunsRequest{Job: name, Limit: 1000, Stale: true})
		cancel()
		if err != nil {
			return l, err
		}
		for _, r := range res.GetRuns() {
			l.Runs = append(l.Runs, runFromProto(r))
		}
	}
	return l, nil
}

// requireViolation is a negative control's assertion: the broken build
// must make the checker report a violation of rule.
func requireViolation(t *testing.T, rep Report, rule, control string) {
	t.Helper()
	if rep.Broke(rule) {
		t.Logf("negative control %s: the checker caught it (%s broken) as it must", control, rule)
		return
	}
	msg := fmt.Sprintf("negative control %s: the checker found no %s violation", control, rule)
	if len(rep.Inconclusive) > 0 {
		msg += "; the run was inconclusive: " + strings.Join(rep.Inconclusive, "; ")
	}
	t.Fatal(errors.New(msg))
}

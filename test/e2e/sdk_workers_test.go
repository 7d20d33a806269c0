//go:build e2e

package e2e

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"google.golang.org/protobuf/types/known/durationpb"

	"github.com/raftcron/raftcron/internal/proc"
	"github.com/raftcron/raftcron/internal/testutil"
	pb "github.com/raftcron/raftcron/proto/raftcron/v1"
)

// The SDKs under clients/ end to end: a pool of two workers of one language,
// speaking the HTTP worker protocol (docs/workers.md), takes an every-second job
// and a long one for 40 s while one worker and then the leader are SIGKILLed. The
// checker judges their writes to the sink as every other job's (no slot lost or
// doubled, tokens rising at the sink), and the long attempt of the killed worker
// must be re-run by the other under a larger token.

// sdkLang is one language's worker SDK, as runSDKPool runs it.
//
// Its worker program serves the handler "e2e-sink" of the pool E2E_POOL as the
// worker E2E_WORKER_ID, polling the nodes at E2E_ADDRS (their HTTP host:port,
// comma-separated), with the worker token E2E_TOKEN when set. An attempt waits the
// payload's run_ms ({"run_ms": N}), reporting progress, and stops there if it is
// cancelled; then it POSTs to E2E_SINK/<job> with the attempt's fencing headers
// (fence.Header*: token, job, run ID, slot, attempt, idempotency key) and fails
// unless the sink answers 200 (a 409 is the outcome fenced). It prints one line to
// stdout, flushed, for each of these: "start RUN_ID TOKEN" as a handler starts,
// "wrote RUN_ID TOKEN STATUS" after the POST, "cancelled RUN_ID TOKEN WHY".
type sdkLang struct {
	name string
	// need skips the test (fails it under CI) when a tool is missing; nil: none can be.
	need func(t *testing.T)
	// build makes the worker program runnable from the repository at root; nil: it is.
	build func(root string) error
	// command is the worker program run from root; the harness adds the
	// E2E_* environment above to its Env, and runs it where the nodes are reachable.
	command func(root string) *exec.Cmd
}

const (
	sdkPool       = "e2e-sdk"
	sdkHandler    = "e2e-sink"
	sdkLongRun    = 6 * time.Second // the long job's attempts: three leases
	sdkScenarioIn = 40 * time.Second
)

// sdkJobs are the SDK workers' jobs: every second (a short attempt), and every
// 20 s an attempt of sdkLongRun, which outlives several leases by heartbeats.
var sdkJobs = []struct {
	JobInfo
	run time.Duration
}{
	{JobInfo{Name: "e2e-sdk1s", Period: 1, Worker: true}, 200 * time.Millisecond},
	{JobInfo{Name: "e2e-sdk20s", Period: 20, Worker: true}, sdkLongRun},
}

// runSDKPool is the whole scenario for one language.
func runSDKPool(t *testing.T, lang sdkLang) {
	if lang.need != nil {
		lang.need(t)
	}
	root, err := repoRoot()
	if err != nil {
		t.Fatal(err)
	}
	if lang.build != nil {
		begin := time.Now()
		if err := lang.build(root); err != nil {
			t.Fatalf("build the %s worker: %v", lang.name, err)
		}
		t.Logf("built the %s worker in %s", lang.name, time.Since(begin).Round(time.Millisecond))
	}
	s := newScenario(t, "sdk-"+lang.name, scenarioOptions{nodes: 3, serveArgs: workerServeArgs,
		expect: Expect{LeaderChanges: 1, Redispatches: 1}})
	pool := &sdkPoolProcs{s: s, lang: lang, root: root}
	for k := range 2 {
		pool.start(k)
	}
	t.Cleanup(pool.killAll)
	s.createSDKJobs()

	// The long job's first attempt: its worker dies a second into it.
	long := pool.waitLine(sdkJobs[1].Name, func(l sdkLine) bool { return l.what == "start" }, 30*time.Second)
	time.Sleep(time.Second)
	pool.kill(long.worker)
	s.c.event("kill-worker", nil, fmt.Sprintf("%s worker %s SIGKILLed mid-run: %s token %d",
		lang.name, pool.id(long.worker), long.runID, long.token))
	other := 1 - long.worker
	rerun := pool.waitLine(sdkJobs[1].Name, func(l sdkLine) bool {
		return l.what == "start" && l.worker == other && l.runID == long.runID && l.token > long.token
	}, 4*workerLease+10*time.Second)
	s.c.event("rerun", nil, fmt.Sprintf("%s re-run by %s under token %d", rerun.runID, pool.id(other), rerun.token))

	alignToSlot(1, 300*time.Millisecond)
	s.killLeader(3 * time.Second)
	s.run(sdkScenarioIn - time.Since(s.start))
	s.finish("")

	// The killed worker's attempt never wrote; the re-run did, with its larger token.
	var wrote bool
	for _, a := range s.sink.Attempts() {
		switch {
		case a.RunID == long.runID && a.Token == long.token:
			t.Errorf("the killed worker's attempt (%s token %d) reached the sink: %+v", long.runID, long.token, a)
		case a.RunID == long.runID && a.Token >= rerun.token && a.Outcome == Applied:
			wrote = true
		}
	}
	if !wrote {
		t.Errorf("no attempt of %s under token %d or later was applied at the sink", long.runID, rerun.token)
	}
}

// createSDKJobs registers the SDK workers' jobs, as createStableJobs does the
// stable ones, for the checker.
func (s *scenario) createSDKJobs() {
	s.t.Helper()
	for _, j := range sdkJobs {
		spec := stableSpec(j.JobInfo, s.sinkURL)
		spec.Http = nil
		spec.Worker = &pb.WorkerTarget{Pool: sdkPool, Handler: sdkHandler,
			Payload: fmt.Sprintf(`{"run_ms": %d}`, j.run.Milliseconds()),
			Timeout: durationpb.New(j.run + 20*time.Second)}
		var job *pb.Job
		s.retry("create "+j.Name, func(ctx context.Context, n *node) error {
			res, err := s.c.jobs(n).CreateJob(ctx, &pb.CreateJobRequest{Spec: spec})
			job = res.GetJob()
			return err
		})
		info := j.JobInfo
		info.Generation = job.GetGeneration()
		info.Created = job.GetCreatedAt().AsTime().Unix()
		if cur := job.GetStatus().GetCursorUnix(); cur > 0 {
			info.Created = cur
		}
		s.jobs = append(s.jobs, info)
	}
}

// sdkPoolProcs are the scenario's SDK worker processes.
type sdkPoolProcs struct {
	s    *scenario
	lang sdkLang
	root string

	// mu guards procs.
	mu    sync.Mutex
	procs [2]*proc.Process
}

func (p *sdkPoolProcs) id(k int) string { return fmt.Sprintf("%s-w%d", p.lang.name, k+1) }

func (p *sdkPoolProcs) logPath(k int) string {
	return filepath.Join(p.s.dir, fmt.Sprintf("%s.log", p.id(k)))
}

// start runs worker k where it reaches every node and the sink.
func (p *sdkPoolProcs) start(k int) {
	s := p.s
	s.t.Helper()
	addrs := make([]string, len(s.c.nodes))
	for i := range s.c.nodes {
		addrs[i] = s.c.net.HTTPAddr(i)
	}
	prog := p.lang.command(p.root)
	cmd, err := s.c.net.WorkerCommand(k, prog.Path, prog.Args[1:]...)
	if err != nil {
		s.t.Fatalf("worker %s: %v", p.id(k), err)
	}
	cmd.Dir = prog.Dir
	cmd.Env = append(append(proc.Environ(), prog.Env...),
		"E2E_POOL="+sdkPool, "E2E_WORKER_ID="+p.id(k), "E2E_ADDRS="+strings.Join(addrs, ","), "E2E_SINK="+s.sinkURL)
	pr, err := proc.Start(cmd, p.logPath(k))
	if err != nil {
		s.t.Fatalf("start worker %s: %v", p.id(k), err)
	}
	p.mu.Lock()
	p.procs[k] = pr
	p.mu.Unlock()
}

func (p *sdkPoolProcs) kill(k int) {
	p.mu.Lock()
	pr := p.procs[k]
	p.mu.Unlock()
	if pr != nil && !pr.Kill(exitTimeout) {
		p.s.t.Fatalf("worker %s did not exit within %s of SIGKILL", p.id(k), exitTimeout)
	}
}

// killAll ends the workers with the test, showing their output if it failed.
func (p *sdkPoolProcs) killAll() {
	for k := range p.procs {
		p.kill(k)
		if p.s.t.Failed() {
			out, _ := os.ReadFile(p.logPath(k))
			p.s.t.Logf("---- %s ----\n%s", p.id(k), out)
		}
	}
}

// sdkLine is a line of the worker program's contract (sdkLang).
type sdkLine struct {
	worker int
	what   string
	runID  string
	token  uint64
}

var sdkLineRE = regexp.MustCompile(`(?m)^(start|wrote|cancelled) (\S+) ([0-9]+)`)

// waitLine waits until some worker printed a line about a run of job that
// match accepts, and returns the first.
func (p *sdkPoolProcs) waitLine(job string, match func(sdkLine) bool, within time.Duration) sdkLine {
	p.s.t.Helper()
	var found sdkLine
	testutil.WaitFor(p.s.t, within, fmt.Sprintf("a %s worker's line about %s", p.lang.name, job), func() bool {
		for k := range p.procs {
			out, _ := os.ReadFile(p.logPath(k))
			for _, m := range sdkLineRE.FindAllStringSubmatch(string(out), -1) {
				token, _ := strconv.ParseUint(m[3], 10, 64)
				l := sdkLine{worker: k, what: m[1], runID: m[2], token: token}
				if strings.HasPrefix(l.runID, job+"-") && match(l) {
					found = l
					return true
				}
			}
		}
		return false
	})
	return found
}

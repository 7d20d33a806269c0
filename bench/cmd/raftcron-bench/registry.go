package main

import (
	"context"
	"fmt"
	"math"
	"strconv"
	"strings"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/raftcron/raftcron/bench/harness"
	pb "github.com/raftcron/raftcron/proto/raftcron/v1"
)

// registrySchedule never fires during a run (midnight of January 1).
const registrySchedule = "0 0 1 1 *"

// registryBatch is the number of specs per ApplyJobs call of the batched
// phase.
const registryBatch = 100

type registryPhase struct {
	Name string `json:"name"`
	// Via is the node the clients talk to: "leader", or "follower"
	// (every write is forwarded to the leader).
	Via string `json:"via"`
	// Batch is the jobs written per call (ApplyJobs); 0 means one (the
	// single-write RPCs), and ops are calls.
	Batch int `json:"batch,omitempty"`
	harness.LoadResult
	// Writes are the jobs written: ops times the batch.
	Writes       int                           `json:"writes"`
	WritesPerSec float64                       `json:"writes_per_sec"`
	CPU          cpuWindow                     `json:"cpu"`
	PerWrite     cpuPerWrite                   `json:"cpu_us_per_write"`
	LeaderRaft   map[string]harness.TimerDelta `json:"leader_raft_timers"`
}

// cpuPerWrite is the CPU time one job write cost each party, in
// microseconds: the number that says what bounds writes/s on a machine
// whose cores everything shares.
type cpuPerWrite struct {
	Leader float64 `json:"leader"`
	// Follower is the mean of the followers.
	Follower float64 `json:"follower"`
	// Bench is this program's gRPC clients.
	Bench float64 `json:"bench_clients"`
}

func perWrite(w cpuWindow, elapsedS float64, writes int) cpuPerWrite {
	if writes == 0 {
		return cpuPerWrite{}
	}
	us := func(cpuS float64) float64 { return math.Round(cpuS * 1e6 / float64(writes)) }
	var p cpuPerWrite
	var followers, followerS float64
	for _, u := range w.Nodes {
		if u.Role == "leader" {
			p.Leader = us(u.CPUSeconds)
			continue
		}
		followers++
		followerS += u.CPUSeconds
	}
	if followers > 0 {
		p.Follower = us(followerS / followers)
	}
	p.Bench = us(w.BenchCores * elapsedS)
	return p
}

// registryProfiles names the leader's CPU profile of the phases that get
// one (with -profile); a follower's profile is saved beside it.
var registryProfiles = map[string]string{
	"create-64": "registry-create64-leader-cpu",
	fmt.Sprintf("apply-batch-64x%d", registryBatch): "registry-applybatch-leader-cpu",
}

// runRegistry measures job creates and updates per second over gRPC with
// 1 and 64 concurrent clients, each client on its own connection, and
// bulk writes through ApplyJobs with 64 clients.
func runRegistry(ctx context.Context, e *env, res *Result) error {
	d := e.cfg.RegistryDuration
	res.Params["phase_s"] = d.Seconds()
	var phases []*registryPhase
	res.Metrics = &phases

	c, leader, err := e.startLed(ctx, "registry")
	if err != nil {
		return err
	}
	defer func() { _ = c.Crash() }()
	follower := c.Followers(leader)[0]
	toLeader, err := harness.Dial(leader.Addr, 64)
	if err != nil {
		return err
	}
	defer harness.CloseAll(toLeader)
	toFollower, err := harness.Dial(follower.Addr, 64)
	if err != nil {
		return err
	}
	defer harness.CloseAll(toFollower)
	url := "http://127.0.0.1:9/never" // the schedule never comes due

	// Updates rewrite the jobs the 64-client create made; created
	// remembers how many there are.
	created := 0
	create := func(prefix string) harness.Op {
		return func(ctx context.Context, jobs pb.JobServiceClient, i int) error {
			_, err := jobs.CreateJob(ctx, &pb.CreateJobRequest{Spec: httpJob(fmt.Sprintf("%s-%08d", prefix, i), registrySchedule, url)})
			return err
		}
	}
	batch := func(ctx context.Context, jobs pb.JobServiceClient, i int) error {
		specs := make([]*pb.JobSpec, registryBatch)
		for k := range specs {
			specs[k] = httpJob(fmt.Sprintf("reg-b64-%08d-%03d", i, k), registrySchedule, url)
		}
		return applyAll(ctx, jobs, specs)
	}
	update := func(ctx context.Context, jobs pb.JobServiceClient, i int) error {
		s := httpJob(fmt.Sprintf("reg-c64-%08d", i%created), registrySchedule, url)
		s.Labels = map[string]string{"rev": strconv.Itoa(i)}
		_, err := jobs.UpdateJob(ctx, &pb.UpdateJobRequest{Spec: s})
		return err
	}
	plan := []struct {
		name  string
		via   string
		conns []*grpc.ClientConn
		batch int
		op    func() harness.Op
	}{
		{"create-1", "leader", toLeader[:1], 0, func() harness.Op { return create("reg-c1") }},
		{"create-64", "leader", toLeader, 0, func() harness.Op { return create("reg-c64") }},
		{"update-1", "leader", toLeader[:1], 0, func() harness.Op { return update }},
		{"update-64", "leader", toLeader, 0, func() harness.Op { return update }},
		{"create-64-via-follower", "follower", toFollower, 0, func() harness.Op { return create("reg-f64") }},
		{fmt.Sprintf("apply-batch-64x%d", registryBatch), "leader", toLeader, registryBatch, func() harness.Op { return batch }},
	}
	for _, p := range plan {
		before := sampleNodes(c)
		wait := func() {}
		if name, ok := registryProfiles[p.name]; ok {
			pd := max(d-time.Second, time.Second)
			waitLeader := e.profile(ctx, leader, name, pd)
			waitFollower := e.profile(ctx, follower, strings.Replace(name, "-leader-", "-follower-", 1), pd)
			wait = func() { waitLeader(); waitFollower() }
		}
		lr, err := harness.Load{Conns: p.conns, Duration: d}.Run(ctx, p.op())
		after := sampleNodes(c)
		wait()
		writes := lr.Ops * max(p.batch, 1)
		ph := &registryPhase{Name: p.name, Via: p.via, Batch: p.batch, LoadResult: lr,
			Writes: writes, WritesPerSec: math.Round(float64(writes) / lr.ElapsedS),
			CPU: usage(c, leader, before, after), LeaderRaft: timerDeltas(before, after, leader.ID)}
		ph.PerWrite = perWrite(ph.CPU, lr.ElapsedS, writes)
		phases = append(phases, ph)
		if err != nil {
			return err
		}
		if p.name == "create-64" {
			created = lr.Ops
			if created == 0 {
				return fmt.Errorf("create-64 created nothing: %s", lr.FirstError)
			}
		}
		e.logf("registry %s: %.0f writes/s (%d calls, %d errors) p50=%.1fms p99=%.1fms; CPU per write: leader %.0f µs, follower %.0f µs, clients %.0f µs",
			p.name, ph.WritesPerSec, lr.Ops, lr.Errors, lr.Latency.P50Ms, lr.Latency.P99Ms,
			ph.PerWrite.Leader, ph.PerWrite.Follower, ph.PerWrite.Bench)
	}
	_ = c.Crash()

	rate := func(name string) float64 {
		for _, p := range phases {
			if p.Name == name {
				return p.WritesPerSec
			}
		}
		return 0
	}
	batched := fmt.Sprintf("apply-batch-64x%d", registryBatch)
	res.Summary = fmt.Sprintf("writes/s create: 1 client=%.0f 64 clients=%.0f (via follower %.0f); update: 1 client=%.0f 64 clients=%.0f; ApplyJobs 64 clients × %d: %.0f",
		rate("create-1"), rate("create-64"), rate("create-64-via-follower"), rate("update-1"), rate("update-64"), registryBatch, rate(batched))
	res.target("create_64", "≥ 5000/s", rate("create-64"), "writes/s", rate("create-64") >= 5000)
	res.target("update_64", "≥ 5000/s", rate("update-64"), "writes/s", rate("update-64") >= 5000)
	for _, p := range phases {
		if p.Errors > 0 {
			res.violate("%s: %d failed requests (first: %s)", p.Name, p.Errors, p.FirstError)
		}
	}
	return nil
}

// applyAll applies specs in one ApplyJobs call. A spec that failed fails
// the call with its status, so that harness.Retry retries what is worth
// retrying (every spec again: ApplyJobs of an applied spec changes
// nothing).
func applyAll(ctx context.Context, jobs pb.JobServiceClient, specs []*pb.JobSpec) error {
	resp, err := jobs.ApplyJobs(ctx, &pb.ApplyJobsRequest{Specs: specs})
	if err != nil {
		return err
	}
	if len(resp.GetResults()) != len(specs) {
		return fmt.Errorf("ApplyJobs: %d results for %d specs", len(resp.GetResults()), len(specs))
	}
	for _, r := range resp.GetResults() {
		if r.GetCode() != int32(codes.OK) {
			return status.Error(codes.Code(r.GetCode()), r.GetMessage())
		}
	}
	return nil
}

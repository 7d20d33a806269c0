package main

import (
	"context"
	"fmt"
	"strconv"
	"time"

	"google.golang.org/grpc"

	"github.com/raftcron/raftcron/bench/harness"
	pb "github.com/raftcron/raftcron/proto/raftcron/v1"
)

// registrySchedule never fires during a run (midnight of January 1).
const registrySchedule = "0 0 1 1 *"

type registryPhase struct {
	Name string `json:"name"`
	// Via is the node the clients talk to: "leader", or "follower"
	// (every write is forwarded to the leader).
	Via string `json:"via"`
	harness.LoadResult
	CPU        cpuWindow                     `json:"cpu"`
	LeaderRaft map[string]harness.TimerDelta `json:"leader_raft_timers"`
}

// runRegistry measures job creates and updates per second over gRPC with
// 1 and 64 concurrent clients, each client on its own connection.
func runRegistry(ctx context.Context, e *env, res *Result) error {
	d := e.cfg.RegistryDuration
	res.Params["phase_s"] = d.Seconds()
	var phases []*registryPhase
	res.Metrics = &phases

	c, err := e.startCluster(ctx, "registry")
	if err != nil {
		return err
	}
	defer c.Kill()
	leader, err := c.Leader(ctx, harness.ReadyTimeout)
	if err != nil {
		return err
	}
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
		op    func() harness.Op
	}{
		{"create-1", "leader", toLeader[:1], func() harness.Op { return create("reg-c1") }},
		{"create-64", "leader", toLeader, func() harness.Op { return create("reg-c64") }},
		{"update-1", "leader", toLeader[:1], func() harness.Op { return update }},
		{"update-64", "leader", toLeader, func() harness.Op { return update }},
		{"create-64-via-follower", "follower", toFollower, func() harness.Op { return create("reg-f64") }},
	}
	for _, p := range plan {
		before := sampleNodes(c)
		wait := func() {}
		if p.name == "create-64" {
			wait = e.profile(ctx, leader, "registry-create64-leader-cpu", max(d-time.Second, time.Second))
		}
		lr, err := harness.Load{Conns: p.conns, Duration: d}.Run(ctx, p.op())
		after := sampleNodes(c)
		wait()
		ph := &registryPhase{Name: p.name, Via: p.via, LoadResult: lr,
			CPU: usage(c, leader, before, after), LeaderRaft: timerDeltas(before, after, leader.ID)}
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
		e.logf("registry %s: %.0f ops/s (%d ops, %d errors) p50=%.1fms p99=%.1fms",
			p.name, lr.OpsPerSec, lr.Ops, lr.Errors, lr.Latency.P50Ms, lr.Latency.P99Ms)
	}
	c.Kill()

	rate := func(name string) float64 {
		for _, p := range phases {
			if p.Name == name {
				return p.OpsPerSec
			}
		}
		return 0
	}
	res.Summary = fmt.Sprintf("writes/s create: 1 client=%.0f 64 clients=%.0f (via follower %.0f); update: 1 client=%.0f 64 clients=%.0f",
		rate("create-1"), rate("create-64"), rate("create-64-via-follower"), rate("update-1"), rate("update-64"))
	res.target("create_64", "≥ 5000/s", rate("create-64"), "writes/s", rate("create-64") >= 5000)
	res.target("update_64", "≥ 5000/s", rate("update-64"), "writes/s", rate("update-64") >= 5000)
	for _, p := range phases {
		if p.Errors > 0 {
			res.violate("%s: %d failed requests (first: %s)", p.Name, p.Errors, p.FirstError)
		}
	}
	return nil
}

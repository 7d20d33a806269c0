package api

import (
	"context"
	"strings"
	"sync/atomic"
	"testing"

	"google.golang.org/grpc/codes"

	"github.com/raftcron/raftcron/fsm"
	pb "github.com/raftcron/raftcron/proto/raftcron/v1"
)

func workerTargetSpec(name string) *pb.JobSpec {
	spec := validSpec(name)
	spec.Http = nil
	spec.Worker = &pb.WorkerTarget{Pool: "batch", Handler: "charge"}
	return spec
}

// A worker target is refused until the cluster runs the version that
// applies it (an older voter may lead until then), whole batches
// included; other jobs are not.
func TestWorkerTargetsWaitForTheClusterVersion(t *testing.T) {
	var version atomic.Uint32
	version.Store(1)
	h := newHarnessConfig(t, func(c *Deps) { c.ClusterVersion = version.Load })
	ctx := context.Background()

	_, err := h.jobs.CreateJob(ctx, &pb.CreateJobRequest{Spec: workerTargetSpec("charge")})
	if st := wantCode(t, err, codes.FailedPrecondition); !strings.Contains(st.Message(), "cluster version 2") {
		t.Fatalf("message %q should name the cluster version needed", st.Message())
	}
	_, err = h.jobs.ApplyJobs(ctx, &pb.ApplyJobsRequest{Specs: []*pb.JobSpec{validSpec("plain"), workerTargetSpec("charge")}})
	wantCode(t, err, codes.FailedPrecondition)
	if _, err := h.store.Job("plain"); err == nil {
		t.Fatal("a batch with a refused worker target applied its other job")
	}
	if _, err := h.jobs.CreateJob(ctx, &pb.CreateJobRequest{Spec: validSpec("plain")}); err != nil {
		t.Fatalf("a webhook job at cluster version 1: %v", err)
	}

	version.Store(fsm.WorkersVersion)
	if _, err := h.jobs.CreateJob(ctx, &pb.CreateJobRequest{Spec: workerTargetSpec("charge")}); err != nil {
		t.Fatalf("a worker target at cluster version %d: %v", fsm.WorkersVersion, err)
	}
}

// The version is the cluster's, not this node's applied one: a follower
// that has not applied the leader's raise yet (right after the first
// election) reads it after a read barrier rather than refuse the job.
func TestWorkerTargetGoesByTheCommittedClusterVersion(t *testing.T) {
	var h *harness
	h = newHarnessConfig(t, func(c *Deps) {
		c.ClusterVersion = func() uint32 {
			h.store.mu.Lock()
			defer h.store.mu.Unlock()
			if h.store.barriers > 0 {
				return fsm.WorkersVersion // caught up with the leader's raise
			}
			return 1
		}
	})
	if _, err := h.jobs.CreateJob(context.Background(), &pb.CreateJobRequest{Spec: workerTargetSpec("charge")}); err != nil {
		t.Fatalf("a worker target on a node behind the leader's cluster version %d: %v", fsm.WorkersVersion, err)
	}
}

package devcluster

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"time"

	"google.golang.org/grpc"

	"github.com/raftcron/raftcron/cli"
	"github.com/raftcron/raftcron/jobfile"
	pb "github.com/raftcron/raftcron/proto/raftcron/v1"
)

// devJobName is the demo job; devJobFile is its job file, %s the URL of
// the demo downstream. Retries show up as attempt=2, 3 when a delivery fails.
const (
	devJobName = "demo"
	devJobFile = `name: demo
schedule: "*/2 * * * * *"
http:
  url: %s
  timeout: 5s
retry: {max_attempts: 3, initial_backoff: 1s, max_backoff: 5s}
`
)

// applyJob writes the demo job file into the data dir and applies it
// through the CLI's client, like `raftcron job apply -f` would.
func (d *demo) applyJob(ctx context.Context) error {
	text := fmt.Sprintf(devJobFile, d.down.jobURL())
	path := filepath.Join(d.dir, devJobName+".yaml")
	if err := os.WriteFile(path, []byte(text), 0o644); err != nil {
		return fmt.Errorf("demo job file: %w", err)
	}
	specs, err := jobfile.Decode([]byte(text))
	if err != nil {
		return fmt.Errorf("demo job file: %w", err)
	}
	job, err := applyDemoJob(ctx, d.client(), specs[0])
	switch {
	case err != nil && errors.Is(ctx.Err(), context.Canceled):
		return nil // interrupted: stop quietly
	case err != nil:
		return err
	}
	d.out.printf("job        %s (version %d): %q, POST %s  (file %s)", devJobName,
		job.GetVersion(), specs[0].GetSchedule(), d.down.jobURL(), path)
	return nil
}

// applyPause is the wait before the demo job is applied again.
const applyPause = 200 * time.Millisecond

// applyDemoJob applies spec through t and returns the job as stored. The
// CLI's client retries a refusal that wrote nothing (NOT_LEADER) itself. An
// answer that leaves the outcome unknown (an election while the job was
// committing, as dev's short Raft timings make likely on a busy machine)
// is read back, and the job applied again only if it is not there: the
// same spec applied twice changes nothing, so a late commit of the first
// does no harm either.
func applyDemoJob(ctx context.Context, t cli.Target, spec *pb.JobSpec) (job *pb.Job, err error) {
	err = t.Call(ctx, fmt.Sprintf("job %q", spec.GetName()), func(ctx context.Context, conn grpc.ClientConnInterface) error {
		jobs := pb.NewJobServiceClient(conn)
		for {
			resp, err := jobs.ApplyJob(ctx, &pb.ApplyJobRequest{Spec: spec})
			if err == nil || !cli.MayHaveApplied(err) {
				job = resp.GetJob()
				return err
			}
			got, gerr := jobs.GetJob(ctx, &pb.GetJobRequest{Name: spec.GetName()})
			if gerr == nil && sameDemoJob(got.GetJob().GetSpec(), spec) {
				job = got.GetJob()
				return nil
			}
			select {
			case <-ctx.Done():
				return err
			case <-time.After(applyPause):
			}
		}
	})
	return job, err
}

// sameDemoJob reports whether stored is the demo job as spec writes it: its
// URL names this run's downstream.
func sameDemoJob(stored, spec *pb.JobSpec) bool {
	return stored.GetSchedule() == spec.GetSchedule() && stored.GetHttp().GetUrl() == spec.GetHttp().GetUrl()
}

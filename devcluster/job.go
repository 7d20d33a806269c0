package devcluster

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"

	"google.golang.org/grpc"

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
	var resp *pb.ApplyJobResponse
	err = d.client().Call(ctx, fmt.Sprintf("job %q", devJobName), func(ctx context.Context, conn grpc.ClientConnInterface) error {
		resp, err = pb.NewJobServiceClient(conn).ApplyJob(ctx, &pb.ApplyJobRequest{Spec: specs[0]})
		return err
	})
	switch {
	case err != nil && errors.Is(ctx.Err(), context.Canceled):
		return nil // interrupted: stop quietly
	case err != nil:
		return err
	}
	d.out.printf("job        %s (version %d): %q, POST %s  (file %s)", devJobName,
		resp.GetJob().GetVersion(), specs[0].GetSchedule(), d.down.jobURL(), path)
	return nil
}

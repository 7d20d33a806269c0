package proc

import (
	"context"
	"strings"
	"testing"

	pb "github.com/raftcron/raftcron/proto/raftcron/v1"
)

// A child starts in "/" unless a directory is given, never in the
// caller's working directory (DESIGN §11).
func TestRunStartsInRootUnlessDirIsSet(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	for dir, want := range map[string]string{"": "/", "/tmp": "/tmp"} {
		r := Run(ctx, ctx, Command{Argv: []string{"/bin/sh", "-c", "pwd"}, Env: []string{"PATH=/bin:/usr/bin"}, Dir: dir})
		if r.State != pb.RunState_RUN_STATE_SUCCEEDED || strings.TrimSpace(string(r.Output)) != want {
			t.Errorf("dir %q: %v %q, output %q; want it to run in %s", dir, r.State, r.Detail, r.Output, want)
		}
	}
}

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
	ctx := context.Background()
	for dir, want := range map[string]string{"": "/", "/tmp": "/tmp"} {
		r := Run(ctx, ctx, Command{Argv: []string{"/bin/sh", "-c", "pwd"}, Env: []string{"PATH=/bin:/usr/bin"}, Dir: dir})
		if r.State != pb.RunState_RUN_STATE_SUCCEEDED || strings.TrimSpace(string(r.Output)) != want {
			t.Errorf("dir %q: %v %q, output %q; want it to run in %s", dir, r.State, r.Detail, r.Output, want)
		}
	}
}

func TestLookupUser(t *testing.T) {
	u, err := LookupUser("root")
	if err != nil || u.UID != 0 || u.GID != 0 {
		t.Fatalf("LookupUser(root) = %+v, %v; want uid and gid 0", u, err)
	}
	if u, err := LookupUser("0"); err != nil || u.UID != 0 {
		t.Fatalf("LookupUser(0) = %+v, %v; want root by its id", u, err)
	}
	if _, err := LookupUser("no-such-user-raftcron"); err == nil || !strings.Contains(err.Error(), `no user "no-such-user-raftcron"`) {
		t.Fatalf("unknown user: %v", err)
	}
}

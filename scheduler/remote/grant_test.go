package remote

import (
	"context"
	"strings"
	"testing"
	"time"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/raftcron/raftcron/internal/testutil"
	pb "github.com/raftcron/raftcron/proto/raftcron/v1"
)

// A session serves only the pools its token names, at most at the
// concurrency it allows; refused, it gets nothing, and the attempts of
// the pool wait for a session that may take them.
func TestASessionServesOnlyWhatItsGrantAllows(t *testing.T) {
	f := newFixture(t, 10*time.Second)
	g := Grant{Token: "acc-batch", Pools: []string{"batch", "reports"}, MaxConcurrency: 4}
	a := attemptIn("payments")
	f.submit(context.Background(), a)
	for _, tc := range []struct {
		hello *pb.WorkerHello
		want  string
	}{
		{hello("w1", "payments", 1), `hello.pool: this worker's ACL token may serve the pools batch, reports, not "payments"`},
		{hello("w1", "batch", 100_000), "hello.concurrency: 100000 is more than the 4 this worker's ACL token allows"},
	} {
		_, err := f.dialAs(tc.hello, g)
		if status.Code(err) != codes.PermissionDenied || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("hello %v: %v, want PermissionDenied saying %q", tc.hello, err, tc.want)
		}
	}
	if n := f.h.waiting(); n != 1 {
		t.Fatalf("%d attempts waiting after the refusals, want the payments attempt still waiting", n)
	}
	w := f.connectAs(hello("w1", "reports", 4), g)
	w.quiet(50 * time.Millisecond)
	// Any pool, at any concurrency: a management token, or ACLs off.
	anyPool := f.connectAs(hello("w2", "payments", 1000), Grant{Token: "acc-root"})
	if got, _ := anyPool.offers(1); got[0].GetToken() != a.Token {
		t.Fatalf("offered %v, want the payments attempt", got)
	}
}

// A worker ID is the worker's own claim. A session of another token that
// claims the ID of a worker that lost an attempt cannot report the
// attempt's outcome in its place; a session of the same token can.
func TestALateOutcomeIsTakenOnlyFromTheTokenThatLostIt(t *testing.T) {
	f := newFixture(t, testLease)
	owner := Grant{Token: "acc-w1", Pools: []string{"batch"}}
	w := f.connectAs(hello("w1", "batch", 1), owner)
	a := attemptIn("batch")
	f.submit(context.Background(), a)
	got, _ := w.offers(1)
	if o := f.got.wait(t, a.Token, 1); !o.Lost {
		t.Fatalf("outcome %+v, want lost after the silent worker's lease", o)
	}
	impostor := f.connectAs(hello("w1", "batch", 1), Grant{Token: "acc-other", Pools: []string{"batch"}})
	impostor.report(got[0], pb.RunState_RUN_STATE_SUCCEEDED, "forged")
	impostor.sync()
	impostor.cancel()
	var again *rawWorker
	testutil.WaitFor(t, 10*time.Second, "w1 connected again once the impostor's stream is gone", func() bool {
		w, err := f.dialAs(hello("w1", "batch", 1), owner)
		again = w
		return err == nil
	})
	again.report(got[0], pb.RunState_RUN_STATE_FAILED, "genuine")
	late := f.got.wait(t, a.Token, 2)
	if late.State != pb.RunState_RUN_STATE_FAILED || f.got.count(a.Token) != 2 {
		t.Fatalf("late outcomes %d, the second %+v: want only the genuine FAILED (the forged report taken?)",
			f.got.count(a.Token), late)
	}
}

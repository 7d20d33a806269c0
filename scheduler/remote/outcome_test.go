package remote

import (
	"strings"
	"testing"
	"time"

	"google.golang.org/protobuf/types/known/durationpb"

	"github.com/raftcron/raftcron/fence"
	"github.com/raftcron/raftcron/jobspec"
)

// An offer carries the leader's signature when the cluster signs its
// dispatches, and the leader's limits: a target without a timeout goes
// with the default a node's own command would get, the job's spec left
// as it is.
func TestOffersAreSignedAndBounded(t *testing.T) {
	keys, err := fence.NewKeys([]byte(strings.Repeat("k", 32)))
	if err != nil {
		t.Fatal(err)
	}
	a := attemptIn("batch")
	w := wireAttempt(a, keys)
	if err := keys.Verify(a.FenceRun(), w.GetSignature()); err != nil {
		t.Fatalf("offer signature %q: %v", w.GetSignature(), err)
	}
	if got := w.GetTarget().GetTimeout().AsDuration(); got != jobspec.DefaultExecTimeout || w.GetDeadline() != nil {
		t.Fatalf("offer without a timeout or deadline: timeout %v deadline %v, want %v and none", got, w.GetDeadline(), jobspec.DefaultExecTimeout)
	}
	if a.Worker.GetTimeout() != nil {
		t.Fatal("the default was written into the job's own target")
	}

	a.Deadline = time.Minute
	if w := wireAttempt(a, nil); w.GetSignature() != "" || w.GetTarget().GetTimeout() != nil || w.GetDeadline().AsDuration() != time.Minute {
		t.Fatalf("unsigned offer with a deadline: %v, want no signature and the deadline alone", w)
	}
	a.Deadline = 0
	a.Worker.Timeout = durationpb.New(time.Second)
	if w := wireAttempt(a, nil); w.GetTarget().GetTimeout().AsDuration() != time.Second {
		t.Fatalf("offer with its own timeout: %v", w)
	}
}

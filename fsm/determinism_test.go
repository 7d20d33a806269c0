package fsm_test

import (
	"fmt"
	"slices"
	"strings"
	"testing"

	"github.com/hashicorp/raft"
	"google.golang.org/protobuf/proto"

	"github.com/raftcron/raftcron/fsm"
	pb "github.com/raftcron/raftcron/proto/raftcron/v1"
)

func TestSameLogGivesSameStateAndResults(t *testing.T) {
	const seed = 4 // one whose log reaches every verdict below at both versions
	for _, v := range []uint32{1, fsm.CommandVersion} {
		t.Run(fmt.Sprintf("cluster version %d", v), func(t *testing.T) { sameLogSameState(t, v, seed) })
	}
}

// sameLogSameState applies one generated log at cluster version v to two
// FSMs, and to a third restored from a snapshot midway.
func sameLogSameState(t *testing.T, v uint32, seed uint64) {
	const entries = 1200
	gen := newCommandGen(seed)
	gen.clusterVersion = v
	a, b := fsm.New(), fsm.New()
	gen.view = a
	v3 := v >= 3 // the rules that count runs and pause jobs
	codes := map[pb.ResultCode]int{}
	seen := map[string]int{} // fire and completion verdicts, run states reached
	maxGeneration := uint64(0)
	lastSeq := uint64(0)
	for i := uint64(1); i <= entries; i++ {
		data := gen.next()
		l := &raft.Log{Index: i, Term: termOf(data), Type: raft.LogCommand, Data: data}
		ra := applyLog(t, a, l)
		rb := applyLog(t, b, l)
		if !proto.Equal(ra, rb) {
			t.Fatalf("entry %d: results differ: %v vs %v", i, ra, rb)
		}
		if a.StateHash() != b.StateHash() {
			t.Fatalf("entry %d: state hashes differ", i)
		}
		codes[ra.GetCode()]++
		maxGeneration = max(maxGeneration, ra.GetJob().GetGeneration())
		tally(seen, ra)
		lastSeq = tallyAudit(seen, a, lastSeq)
	}
	// The sequence must exercise every outcome, or equal hashes prove little.
	for _, c := range []pb.ResultCode{codeOK, codeNotFound, codeExists, codeMismatch, codeMalformed, pb.ResultCode_RESULT_CODE_RUN_FINISHED, pb.ResultCode_RESULT_CODE_IN_USE} {
		if codes[c] == 0 {
			t.Fatalf("the generated log never produced %v (codes: %v)", c, codes)
		}
	}
	for _, v := range []string{
		"fire accepted", "fire " + fsm.ReasonDuplicate, "fire " + fsm.ReasonGeneration, "fire " + fsm.ReasonGone,
		"fire " + fsm.ReasonOverlapSkipped, "fire " + fsm.ReasonPaused, "fire " + fsm.ReasonNotOrphan,
		"fire " + fsm.ReasonDuplicateRequest, "fire " + fsm.ReasonBuffered,
		"completion accepted", "completion " + fsm.ReasonSuperseded, "completion " + fsm.ReasonUnknownRun,
		"kind RETRY", "kind REDISPATCH", "state RETRYING", "state CANCELLED", "state MISSED",
		"cancel accepted",
		"audit " + fsm.AuditCreate, "audit " + fsm.AuditTrigger, "audit " + fsm.AuditCancel,
		"audit " + fsm.AuditACLCreate, "audit " + fsm.AuditACLDelete,
		"audit " + fsm.AuditSecretPut, "audit " + fsm.AuditSecretDelete,
		"state SKIPPED", "fire " + fsm.ReasonDeferred, "fire " + fsm.ReasonFrozen,
		"audit " + fsm.AuditCalendarCreate, "audit " + fsm.AuditCalendarDelete,
		"audit " + fsm.AuditFreezeCreate, "audit " + fsm.AuditFreezeDelete,
		"fire " + fsm.ReasonCheckinJob, "checkin DISPATCHED", "checkin SUCCEEDED", "checkin FAILED",
		"checkin off schedule", "checkin of a slot", "completion " + fsm.ReasonNotDue, "checkin DEADLINE_EXCEEDED",
		"audit " + fsm.AuditChannelPut, "audit " + fsm.AuditNotifyRulePut,
		"fire " + fsm.ReasonNoBackfill, "kind BACKFILL", "audit " + fsm.AuditBackfill,
	} {
		if seen[v] == 0 {
			t.Fatalf("the generated log never produced %q (seen: %v)", v, seen)
		}
	}
	for _, want := range []string{"fire " + fsm.ReasonMaxRuns, "paused itself"} {
		if seen[want] == 0 && v3 {
			t.Fatalf("the generated log never produced %q (seen: %v)", want, seen)
		}
	}
	t.Logf("verdicts: %v", seen)
	raised := map[string]bool{}
	all, _ := a.Alerts(fsm.AlertQuery{})
	for _, al := range all {
		raised[al.GetEvent()] = true
		raised[al.GetDelivery().String()] = true
		if slices.Contains(checkinPool, al.GetJob()) {
			raised["checkin "+al.GetEvent()] = true
		}
	}
	for _, ev := range []string{"failed", "recovered", "missed", "DELIVERY_STATE_DELIVERED", "DELIVERY_STATE_PENDING", "checkin missed", "checkin failed"} {
		if !raised[ev] {
			t.Fatalf("the generated log never raised or recorded %s (got %v)", ev, raised)
		}
	}
	if maxGeneration < 2 || a.JobCount() == 0 {
		t.Fatalf("generated log reached generation %d with %d jobs, want re-creates and live jobs", maxGeneration, a.JobCount())
	}
	if a.StateHash() == fsm.New().StateHash() {
		t.Fatal("state hash equals an empty FSM's")
	}

	// A third FSM, holding unrelated state, restored from a snapshot of the
	// first, matches it, and keeps matching as the log goes on.
	c := newHarness(t)
	c.mustOK(createCmd(testSpec("unrelated")))
	if err := restore(c.f, persist(t, a)); err != nil {
		t.Fatalf("Restore: %v", err)
	}
	if c.f.StateHash() != a.StateHash() {
		t.Fatal("restored FSM's state hash differs from the snapshotted one")
	}
	for i := uint64(entries + 1); i <= entries+200; i++ {
		data := gen.next()
		l := &raft.Log{Index: i, Term: termOf(data), Type: raft.LogCommand, Data: data}
		if ra, rc := applyLog(t, a, l), applyLog(t, c.f, l); !proto.Equal(ra, rc) {
			t.Fatalf("entry %d after restore: results differ: %v vs %v", i, ra, rc)
		}
		if c.f.StateHash() != a.StateHash() {
			t.Fatalf("entry %d: restored FSM diverged from the original", i)
		}
	}
	if c.f.FencingToken() == 0 || c.f.FencingToken() != a.FencingToken() {
		t.Fatalf("fencing counters %d and %d, want equal and advanced", c.f.FencingToken(), a.FencingToken())
	}
}

// tally counts the verdicts of a batch result and the run states and
// attempt kinds it shows.
func tally(seen map[string]int, r *pb.CommandResult) {
	runs := func(run *pb.Run) {
		if run == nil {
			return
		}
		seen["state "+strings.TrimPrefix(run.GetState().String(), "RUN_STATE_")]++
		for _, a := range run.GetAttempts() {
			seen["kind "+strings.TrimPrefix(a.GetKind().String(), "FIRE_KIND_")]++
		}
	}
	for _, f := range r.GetFires() {
		if f.GetAccepted() {
			seen["fire accepted"]++
		} else {
			seen["fire "+f.GetReason()]++
		}
		runs(f.GetRun())
	}
	if run := r.GetRun(); run.GetReason() == fsm.ReasonCancelRequested {
		seen["cancel accepted"]++
	}
	checkins(seen, r.GetRun())
	if p := r.GetJob().GetStatus().GetPause(); p.GetReason() != "" && r.GetJob().GetSpec().GetPaused() {
		seen["paused itself"]++
	}
	if r.GetJob().GetUpdatedBy() == fsm.PrincipalSystem && !r.GetJob().GetSpec().GetPaused() {
		seen["pause ended"]++
	}
	for _, c := range r.GetCompletions() {
		if c.GetAccepted() {
			seen["completion accepted"]++
		} else {
			seen["completion "+c.GetReason()]++
		}
		runs(c.GetRun())
		checkins(seen, c.GetRun())
	}
}

// checkins counts the state a check-in run reached, and whether it was
// off schedule.
func checkins(seen map[string]int, run *pb.Run) {
	if run.GetKind() != pb.FireKind_FIRE_KIND_CHECKIN {
		return
	}
	seen["checkin "+strings.TrimPrefix(run.GetState().String(), "RUN_STATE_")]++
	if run.GetOffSchedule() {
		seen["checkin off schedule"]++
	} else {
		seen["checkin of a slot"]++
	}
}

// tallyAudit counts the action of the newest audit record if it is newer
// than last, and returns its seq.
func tallyAudit(seen map[string]int, f *fsm.FSM, last uint64) uint64 {
	recs := f.ListAudit(fsm.AuditQuery{Limit: 1})
	if len(recs) == 0 || recs[0].GetSeq() <= last {
		return last
	}
	seen["audit "+recs[0].GetAction()]++
	return recs[0].GetSeq()
}

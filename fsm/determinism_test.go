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
	const maxLogs = 6
	for _, v := range []uint32{1, fsm.CommandVersion} {
		t.Run(fmt.Sprintf("cluster version %d", v), func(t *testing.T) {
			cov := newCoverage()
			logs := 0
			for seed := uint64(4); logs < maxLogs && (logs == 0 || cov.missing(v) != ""); seed++ {
				sameLogSameState(t, v, seed, cov)
				logs++
			}
			if m := cov.missing(v); m != "" {
				t.Fatalf("%d generated logs never produced %s", logs, m)
			}
			t.Logf("%d logs: verdicts %v", logs, cov.seen)
		})
	}
}

// coverage is what the generated logs exercised, together: each log is
// checked for equal results and states on its own, but the rarest
// verdicts need the draws of more than one seed.
type coverage struct {
	codes         map[pb.ResultCode]int
	seen          map[string]int  // fire and completion verdicts, run states reached
	raised        map[string]bool // alerts' events and deliveries
	maxGeneration uint64
	liveJobs      bool
}

func newCoverage() *coverage {
	return &coverage{codes: map[pb.ResultCode]int{}, seen: map[string]int{}, raised: map[string]bool{}}
}

// missing names a verdict no log produced at cluster version v, or is "".
func (c *coverage) missing(v uint32) string {
	// Every outcome must be exercised, or equal hashes prove little.
	for _, code := range []pb.ResultCode{codeOK, codeNotFound, codeExists, codeMismatch, codeMalformed, pb.ResultCode_RESULT_CODE_RUN_FINISHED, pb.ResultCode_RESULT_CODE_IN_USE} {
		if c.codes[code] == 0 {
			return fmt.Sprintf("%v (codes: %v)", code, c.codes)
		}
	}
	want := []string{
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
	}
	if v >= 3 { // the rules that count runs and pause jobs
		want = append(want, "fire "+fsm.ReasonMaxRuns, "paused itself")
	}
	for _, w := range want {
		if c.seen[w] == 0 {
			return fmt.Sprintf("%q (seen: %v)", w, c.seen)
		}
	}
	for _, ev := range []string{"failed", "recovered", "missed", "DELIVERY_STATE_DELIVERED", "DELIVERY_STATE_PENDING", "checkin missed", "checkin failed"} {
		if !c.raised[ev] {
			return fmt.Sprintf("an alert or delivery %s (got %v)", ev, c.raised)
		}
	}
	if c.maxGeneration < 2 || !c.liveJobs {
		return fmt.Sprintf("re-creates and live jobs (generation %d reached)", c.maxGeneration)
	}
	return ""
}

// sameLogSameState applies the log of seed at cluster version v to two
// FSMs, and to a third restored from a snapshot midway, and adds what it
// exercised to cov.
func sameLogSameState(t *testing.T, v uint32, seed uint64, cov *coverage) {
	const entries = 1200
	gen := newCommandGen(seed)
	gen.clusterVersion = v
	a, b := fsm.New(), fsm.New()
	gen.view = a
	lastSeq := uint64(0)
	for i := uint64(1); i <= entries; i++ {
		data := gen.next()
		l := &raft.Log{Index: i, Term: termOf(data), Type: raft.LogCommand, Data: data}
		ra := applyLog(t, a, l)
		rb := applyLog(t, b, l)
		if !proto.Equal(ra, rb) {
			t.Fatalf("seed %d, entry %d: results differ: %v vs %v", seed, i, ra, rb)
		}
		if a.StateHash() != b.StateHash() {
			t.Fatalf("seed %d, entry %d: state hashes differ", seed, i)
		}
		cov.codes[ra.GetCode()]++
		cov.maxGeneration = max(cov.maxGeneration, ra.GetJob().GetGeneration())
		tally(cov.seen, ra)
		lastSeq = tallyAudit(cov.seen, a, lastSeq)
	}
	all, _ := a.Alerts(fsm.AlertQuery{})
	for _, al := range all {
		cov.raised[al.GetEvent()] = true
		cov.raised[al.GetDelivery().String()] = true
		if slices.Contains(checkinPool, al.GetJob()) {
			cov.raised["checkin "+al.GetEvent()] = true
		}
	}
	cov.liveJobs = cov.liveJobs || a.JobCount() > 0
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

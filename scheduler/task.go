package scheduler

import (
	"context"
	"sync/atomic"
	"time"

	"google.golang.org/protobuf/proto"

	"github.com/raftcron/raftcron/scheduler/dispatch"

	pb "github.com/raftcron/raftcron/proto/raftcron/v1"
)

// task is one committed attempt on its way through this node.
type task struct {
	a    dispatch.Attempt
	kind pb.FireKind
	// serial: the job's attempts run one at a time (every overlap policy
	// but allow).
	serial bool
	ctx    context.Context
	cancel context.CancelCauseFunc
	// owner receives the outcome; it drops it once its term is over.
	owner *leader
	// submitted: handed to the pool (otherwise waiting in a lane or in
	// the overflow queue).
	submitted bool
	// lost: its remote worker was lost; an outcome reported after that is
	// late (see Remote).
	lost atomic.Bool
	// secrets are the values filled into a's target, scrubbed from its
	// outcome; unresolved says why they could not be (the attempt then
	// fails without being delivered).
	secrets    []string
	unresolved error
	// jitter is the slot's dispatch delay: lateness counts from the slot
	// plus it.
	jitter time.Duration
}

// carry applies to t what its run holds beyond the job's spec: the slot's
// jitter; a trigger's payload, in place of an http target's body or a
// worker's payload (an exec run gets it as RAFTCRON_PAYLOAD); and the
// overlap allow a trigger or backfill gave it, which lets its attempts run
// beside the job's others. The payload is not searched for secret
// references: it is data, not the job's.
func (t *task) carry(r *pb.Run) {
	t.a.ParentRuns = parentRuns(r)
	t.jitter = time.Duration(r.GetJitterMs()) * time.Millisecond
	if r.GetConcurrent() {
		t.serial = false
	}
	p := r.GetPayload()
	if p == "" {
		return
	}
	t.a.Payload = p
	if t.a.HTTP != nil {
		h := proto.CloneOf(t.a.HTTP)
		h.Body = p
		t.a.HTTP = h
	}
	if t.a.Worker != nil {
		w := proto.CloneOf(t.a.Worker)
		w.Payload = p
		t.a.Worker = w
	}
}

// task is a committed attempt's task, known to this term from now on.
func (l *leader) task(spec *pb.JobSpec, runID string, slot int64, token uint64, number uint32, kind pb.FireKind) *task {
	a := dispatch.Attempt{
		Job:         spec.GetName(),
		RunID:       runID,
		Token:       token,
		Number:      number,
		ScheduledAt: time.Unix(slot, 0).UTC(),
		HTTP:        spec.GetHttp(),
		Exec:        spec.GetExec(),
		Worker:      spec.GetWorker(),
		Kind:        kind, // the run's kind for a first attempt; callers set it for the others
	}
	if d := spec.GetDeadline(); d != nil {
		a.Deadline = d.AsDuration()
	}
	if a.Worker != nil {
		a.WaitUntil = workerWait(spec, kind, a.ScheduledAt, l.s.clock.Now())
	}
	values, unresolved := l.s.secrets.resolve(spec, &a)
	ctx, cancel := context.WithCancelCause(context.Background()) // see newLeader
	l.known[token] = struct{}{}
	return &task{
		a:          a,
		kind:       kind,
		serial:     spec.GetOverlap() != pb.Overlap_OVERLAP_ALLOW,
		ctx:        ctx,
		cancel:     cancel,
		owner:      l,
		secrets:    values,
		unresolved: unresolved,
	}
}

// dispatch hands one committed attempt to the hand-off.
func (l *leader) dispatch(spec *pb.JobSpec, runID string, slot int64, token uint64, number uint32, kind pb.FireKind) {
	t := l.task(spec, runID, slot, token, number, kind)
	l.s.handoff.dispatch(t)
}

// workerWait is how long a worker attempt may wait for a worker of its
// pool before it fails with no_worker: a scheduled slot as long as its
// catch-up window lasts (it would not be fired later either), any other
// attempt up to the job's deadline, or the window when there is none.
func workerWait(spec *pb.JobSpec, kind pb.FireKind, slot, now time.Time) time.Time {
	window := max(spec.GetCatchup().GetWindow().AsDuration(), OnTime)
	switch {
	case kind == pb.FireKind_FIRE_KIND_SCHEDULED || kind == pb.FireKind_FIRE_KIND_CATCHUP:
		return slot.Add(window)
	case spec.GetDeadline() != nil:
		return now.Add(spec.GetDeadline().AsDuration())
	default:
		return now.Add(window)
	}
}

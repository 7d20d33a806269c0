package fsm

import (
	"slices"

	"google.golang.org/protobuf/proto"

	pb "github.com/raftcron/raftcron/proto/raftcron/v1"
)

// putJob creates or replaces a job's spec. The version check comes before
// the no-op check, so a stale expected_version fails even when the spec is
// identical.
func putJob(s *state, c *pb.Command, e entry) (outcome, error) {
	p := c.GetPutJob()
	spec := p.GetSpec()
	if spec == nil {
		return outcome{}, malformed("put_job.spec is required")
	}
	name := spec.GetName()
	if name == "" {
		return outcome{}, malformed("put_job.spec.name must not be empty")
	}
	mode := p.GetMode()
	if mode != pb.PutMode_PUT_MODE_CREATE && mode != pb.PutMode_PUT_MODE_UPDATE && mode != pb.PutMode_PUT_MODE_UPSERT {
		return outcome{}, malformed("put_job.mode must be CREATE, UPDATE or UPSERT, not %v", mode)
	}
	cur, exists := s.item(name)
	old := cur.job
	switch {
	case exists && mode == pb.PutMode_PUT_MODE_CREATE:
		return outcome{}, fail(ErrAlreadyExists, "job %q already exists", name)
	case !exists && mode == pb.PutMode_PUT_MODE_UPDATE:
		return outcome{}, fail(ErrNotFound, "job %q not found", name)
	}
	if err := checkVersion(name, old, p.GetExpectedVersion()); err != nil {
		return outcome{}, err
	}
	if limit := p.GetMaxJobs(); !exists && limit > 0 && uint64(s.jobs.Len()) >= limit && s.atLeast(version2) {
		return outcome{}, fail(ErrLimitExceeded, "job %q not created: the registry holds %d jobs, its limit (max_jobs) is %d jobs",
			name, s.jobs.Len(), limit)
	}
	if refs := spec.GetCalendars(); refs != nil {
		if err := s.cals.checkRefs(refs, c.GetCaller().GetSelector()); err != nil {
			return outcome{}, err
		}
	}
	lim := chainLimits{depth: int(p.GetMaxChainDepth()), fanout: int(p.GetMaxChainFanout())}
	// A put that names new parents is checked against the graph (chain_graph.go).
	if err := s.checkGraph(spec, old.GetSpec(), c.GetCaller().GetSelector(), lim); err != nil {
		return outcome{}, err
	}
	storeSpec(spec) // the command was decoded for this Apply: the spec is ours
	s.share.spec(spec)
	if !exists {
		s.cals.refer(name, nil, spec.GetCalendars())
		return createJob(s, spec, e), nil
	}
	if proto.Equal(old.GetSpec(), spec) {
		return outcome{job: old, status: cur.status}, nil
	}
	s.cals.refer(name, old.GetSpec().GetCalendars(), spec.GetCalendars())
	next := s.changedJob(old, spec, e)
	st := s.setDependencies(spec, old.GetSpec(), cur.status)
	// A new schedule takes effect from the update on, and a resume does not
	// catch up the paused time; neither moves the cursor back.
	if targetChanged(old.GetSpec(), spec, s.atLeast(version2), s.atLeast(version3)) {
		next.Generation++
		st = cursorAtLeast(st, e.seconds())
		if s.atLeast(version2) {
			st = cancelOpenRuns(s, st, waitsForRetry, e)
		}
		if spec.GetCheckin() == nil {
			st = cancelOpenRuns(s, st, isCheckin, e) // no ping can close them now
		}
		st = endBackfill(st, ReasonGeneration, e)
	}
	st = pauseFlipped(old.GetSpec(), spec, st, e)
	s.setJob(next, st)
	s.pruneHistory(name) // the limit may have shrunk
	return outcome{job: next, status: st, changed: true}, nil
}

// createJob stores a new job, spec in stored form, whose generation continues after any earlier
// job of the same name, and consumes that name's tombstone. Its cursor
// starts at the creation time: a new job fires from its creation on.
func createJob(s *state, spec *pb.JobSpec, e entry) outcome {
	name := spec.GetName()
	now := e.timestamp() // stored values are immutable, so both fields may share it
	j := &pb.Job{
		Spec:        spec,
		Generation:  s.lastGeneration(name) + 1,
		Version:     1,
		CreatedAt:   now,
		UpdatedAt:   now,
		ModifyIndex: e.index,
		UpdatedBy:   s.updatedBy(e),
	}
	st := &pb.JobStatus{CursorUnix: e.seconds()}
	if s.atLeast(version3) {
		st.FirstGeneration = j.Generation // history.go
	}
	st = s.share.status(st)
	s.deps.link(name, spec.GetAfter())
	s.tombstones.Delete(tombstone{name: name})
	s.setJob(j, st)
	s.pruneHistory(name) // finished runs of an earlier job of that name
	return outcome{job: j, status: st, changed: true, created: true}
}

// cursorAtLeast is st with its cursor raised to at least sec; st itself if
// it is there already.
func cursorAtLeast(st *pb.JobStatus, sec int64) *pb.JobStatus {
	if st.GetCursorUnix() >= sec {
		return st
	}
	next := copyStatus(st)
	next.CursorUnix = sec
	return next
}

func deleteJob(s *state, c *pb.Command, e entry) (outcome, error) {
	d := c.GetDeleteJob()
	name := d.GetName()
	if name == "" {
		return outcome{}, malformed("delete_job.name must not be empty")
	}
	cur, exists := s.item(name)
	if !exists {
		return outcome{}, fail(ErrNotFound, "job %q not found", name)
	}
	if err := checkVersion(name, cur.job, d.GetExpectedVersion()); err != nil {
		return outcome{}, err
	}
	if err := s.checkDelete(name, d.GetForce(), c.GetCaller().GetSelector()); err != nil {
		return outcome{}, err
	}
	cancelWaitingRetries(s, cur, e)
	s.cals.refer(name, cur.job.GetSpec().GetCalendars(), nil)
	delete(s.freezes.held, name)
	s.deps.unlink(name, cur.job.GetSpec().GetAfter())
	s.orphanDependents(name)
	s.jobs.Delete(jobItem{name: name})
	s.tx.jobChanged(name)
	s.alertJobDeleted(name)
	s.tombstones.ReplaceOrInsert(tombstone{name: name, generation: cur.job.GetGeneration()})
	if s.atLeast(version2) {
		s.collectTombstone(name) // at once if nothing of the job is open
	} else {
		s.pruneHistory(name) // version 1: down to its limit for names without a job
	}
	return outcome{changed: true}, nil
}

// cancelWaitingRetries cancels the job's runs that wait for a retry, and
// its open check-in runs: nothing of theirs is executing here, and no fire
// or ping for a deleted job is ever accepted, so they could never finish
// otherwise. Runs still executing stay open until their outcome arrives
// (or a new leader cancels them on re-dispatch).
func cancelWaitingRetries(s *state, cur jobItem, e entry) {
	for _, id := range cur.status.GetOpenRunIds() {
		if r, ok := s.run(id); ok && (waitsForRetry(r) || isCheckin(r)) {
			s.putRun(cancelled(r, ReasonDeleted, e))
		}
	}
}

// cancelOpenRuns cancels the open runs in st that which selects, when the
// job moves to a new generation (CANCELLED generation): a retry of
// generation g must never run g+1's target under g's idempotency key, and
// a check-in run of a job that no longer checks in could never be closed.
// Runs still executing stay open until their outcome arrives, which is
// then final (complete); an orphan among them is given up on re-dispatch.
// It returns st, or a fresh status without the cancelled runs.
func cancelOpenRuns(s *state, st *pb.JobStatus, which func(*pb.Run) bool, e entry) *pb.JobStatus {
	next := st
	for _, id := range st.GetOpenRunIds() {
		r, ok := s.run(id)
		if !ok || !which(r) {
			continue
		}
		if next == st {
			next = copyStatus(st)
		}
		nr := cancelled(r, ReasonGeneration, e)
		next.OpenRunIds = removeID(next.OpenRunIds, id)
		s.noteFinished(next, nr)
		s.putRun(nr)
	}
	return next
}

func waitsForRetry(r *pb.Run) bool { return r.GetState() == pb.RunState_RUN_STATE_RETRYING }

// changedJob is old with a new spec and the bookkeeping of a change. It
// shares old's created_at, which is safe because stored jobs are immutable.
func (s *state) changedJob(old *pb.Job, spec *pb.JobSpec, e entry) *pb.Job {
	return &pb.Job{
		Spec:        spec,
		Generation:  old.GetGeneration(),
		Version:     old.GetVersion() + 1,
		CreatedAt:   old.GetCreatedAt(),
		UpdatedAt:   e.timestamp(),
		ModifyIndex: e.index,
		UpdatedBy:   s.updatedBy(e),
	}
}

// checkVersion enforces optimistic concurrency: expected 0 means any
// version, and a job that does not exist has no version to match.
func checkVersion(name string, j *pb.Job, expected uint64) error {
	switch {
	case expected == 0 || (j != nil && j.GetVersion() == expected):
		return nil
	case j == nil:
		return fail(ErrVersionMismatch, "job %q does not exist, expected version %d", name, expected)
	default:
		return fail(ErrVersionMismatch, "job %q is at version %d, expected version %d", name, j.GetVersion(), expected)
	}
}

// targetChanged reports whether a spec change alters what fires when —
// schedule or schedules, timezone or target — and so starts a new
// generation of slots. (Only this release writes schedules, and only once
// every voter runs it: laterFields.)
// A worker target counts from cluster version 2 (workers), a check-in from
// version 3 (checkins): earlier versions knew no such field.
func targetChanged(a, b *pb.JobSpec, workers, checkins bool) bool {
	return a.GetSchedule() != b.GetSchedule() ||
		!slices.Equal(a.GetSchedules(), b.GetSchedules()) ||
		a.GetTimezone() != b.GetTimezone() ||
		!proto.Equal(a.GetHttp(), b.GetHttp()) ||
		!proto.Equal(a.GetExec(), b.GetExec()) ||
		(workers && !proto.Equal(a.GetWorker(), b.GetWorker())) ||
		(checkins && (a.GetCheckin() == nil) != (b.GetCheckin() == nil))
}

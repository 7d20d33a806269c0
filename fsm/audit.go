package fsm

import (
	"slices"
	"strconv"
	"strings"

	"github.com/google/btree"
	"google.golang.org/protobuf/proto"

	pb "github.com/raftcron/raftcron/proto/raftcron/v1"
)

// Actions of audit records. They are part of the replicated state and of
// the API: never rename one.
const (
	AuditCreate     = "create"
	AuditUpdate     = "update"
	AuditDelete     = "delete"
	AuditPause      = "pause"
	AuditResume     = "resume"
	AuditTrigger    = "trigger"
	AuditCancel     = "cancel"
	AuditSetLimit   = "audit_limit"
	PrincipalSystem = "system"
)

// MaxAuditLimit bounds SetAuditCommand.limit: a record holds up to 16
// changes, so a million of them could take a node's whole memory budget.
const MaxAuditLimit = 100_000

// auditTrail is the replicated audit trail: the newest limit records by
// sequence number, each kept with the specs its diff is rendered from on
// read (AuditEntry): the state holds no rendering, which would differ
// between builds that know different fields or quote differently. It is off (limit 0, records kept: none) until a
// set_audit command turns it on, because builds from before command version
// 2 keep no audit records: appending them for the commands such a build
// also applies would leave its state different from its peers'. set_audit
// is a version-2 kind, which a leader proposes only once every voter
// applies version 2, so from that entry on every node appends the same
// records in the same Apply as the change they describe.
type auditTrail struct {
	limit uint32
	seq   uint64 // the last sequence number issued
	// records, by their record's seq. Stored entries are immutable, like
	// jobs and runs; their specs are the stored specs of the job, shared.
	records *btree.BTreeG[*pb.AuditEntry]
	// byJob is derived: the seqs of each job's records in the trail,
	// oldest first. Restore rebuilds it; only Apply and Restore change it.
	byJob map[string][]uint64
}

func auditLess(a, b *pb.AuditEntry) bool { return a.GetRecord().GetSeq() < b.GetRecord().GetSeq() }

// auditKey is the pivot of a lookup by seq.
func auditKey(seq uint64) *pb.AuditEntry { return &pb.AuditEntry{Record: &pb.AuditRecord{Seq: seq}} }

func newAuditTrail() auditTrail {
	return auditTrail{records: btree.NewG(treeDegree, auditLess), byJob: map[string][]uint64{}}
}

// capture is a copy for a snapshot, without the derived index.
func (a *auditTrail) capture() auditTrail {
	return auditTrail{limit: a.limit, seq: a.seq, records: a.records.Clone()}
}

func (a *auditTrail) on() bool { return a.limit > 0 }

// appendRecord stores r, numbered and stamped with the entry, with the
// stored specs before and after a change of a job's spec (nil for none),
// and drops the oldest records beyond the limit. The caller checked that
// the trail is on.
func (s *state) appendRecord(e entry, r *pb.AuditRecord, before, after *pb.JobSpec) {
	s.appendEntry(e, &pb.AuditEntry{Record: r, SpecBefore: before, SpecAfter: after})
}

// appendEntry stores ae, its record numbered and stamped with the entry
// and named by the command's caller unless it names a principal of its
// own, and drops the oldest records beyond the limit.
func (s *state) appendEntry(e entry, ae *pb.AuditEntry) {
	a := &s.audit
	a.seq++
	r := ae.GetRecord()
	r.Seq = a.seq
	r.AtUnixNano = e.proposedAt
	r.Index = e.index
	if r.Principal == "" {
		r.Principal = e.principal
	}
	a.records.ReplaceOrInsert(ae)
	if job := r.GetJob(); job != "" {
		a.byJob[job] = append(a.byJob[job], r.GetSeq())
	}
	a.prune()
	s.tx.touch()
}

// prune drops the oldest records until at most limit are left.
func (a *auditTrail) prune() {
	for a.records.Len() > int(a.limit) {
		oldest, _ := a.records.DeleteMin()
		r := oldest.GetRecord()
		job := r.GetJob()
		if seqs := a.byJob[job]; len(seqs) > 0 && seqs[0] == r.GetSeq() {
			if len(seqs) == 1 {
				delete(a.byJob, job)
			} else {
				a.byJob[job] = seqs[1:]
			}
		}
	}
}

// rebuildIndex derives byJob from the records, for Restore.
func (a *auditTrail) rebuildIndex() {
	a.byJob = map[string][]uint64{}
	a.records.Ascend(func(ae *pb.AuditEntry) bool {
		if r := ae.GetRecord(); r.GetJob() != "" {
			a.byJob[r.GetJob()] = append(a.byJob[r.GetJob()], r.GetSeq())
		}
		return true
	})
}

// setAudit turns the trail on or changes its limit; a limit below the
// number of records drops the oldest at once. The change is itself
// recorded, so lowering the limit to wipe the trail leaves a trace.
func setAudit(s *state, c *pb.Command, e entry) (outcome, error) {
	sa := c.GetSetAudit()
	limit := sa.GetLimit()
	if limit < 1 || limit > MaxAuditLimit {
		return outcome{}, fail(ErrInvalid, "set_audit.limit must be 1 to %d, got %d", MaxAuditLimit, limit)
	}
	old := s.audit.limit
	if old == limit || (sa.GetEnableOnly() && old > 0) {
		return outcome{}, nil
	}
	s.audit.limit = limit
	principal := e.principal
	if principal == "" {
		principal = PrincipalSystem
	}
	s.appendRecord(e, &pb.AuditRecord{
		Principal: principal,
		Action:    AuditSetLimit,
		Changes: []*pb.AuditChange{{
			Field: "limit", Before: strconv.FormatUint(uint64(old), 10), After: strconv.FormatUint(uint64(limit), 10),
		}},
	}, nil, nil)
	return outcome{changed: true}, nil
}

// The audited handlers wrap the registry's: while the trail is on, a
// command that changed something appends its record in the same Apply.
// With the trail off they cost one check.

func auditedPut(s *state, c *pb.Command, e entry) (outcome, error) {
	if !s.audit.on() {
		return putJob(s, c, e)
	}
	before, _ := s.job(c.GetPutJob().GetSpec().GetName())
	o, err := putJob(s, c, e)
	if err != nil || !o.changed {
		return o, err
	}
	action := AuditUpdate
	if o.created {
		action = AuditCreate
	}
	s.appendRecord(e, &pb.AuditRecord{
		Action:        action,
		Job:           o.job.GetSpec().GetName(),
		VersionBefore: before.GetVersion(),
		VersionAfter:  o.job.GetVersion(),
	}, before.GetSpec(), o.job.GetSpec())
	return o, nil
}

func auditedDelete(s *state, c *pb.Command, e entry) (outcome, error) {
	if !s.audit.on() {
		return deleteJob(s, c, e)
	}
	name := c.GetDeleteJob().GetName()
	before, _ := s.job(name)
	dependents := slices.Clone(s.deps[name])
	o, err := deleteJob(s, c, e)
	if err != nil {
		return o, err
	}
	r := &pb.AuditRecord{Action: AuditDelete, Job: name, VersionBefore: before.GetVersion()}
	if len(dependents) > 0 {
		// Deleted with force: whose dependency now reads as never met.
		r.Changes = []*pb.AuditChange{
			{Field: "force", Before: "false", After: "true"},
			{Field: "dependents", After: strings.Join(dependents, ", ")},
		}
	}
	s.appendRecord(e, r, nil, nil)
	return o, nil
}

func auditedSetPaused(s *state, c *pb.Command, e entry) (outcome, error) {
	if !s.audit.on() {
		return setPaused(s, c, e)
	}
	p := c.GetSetPaused()
	before, _ := s.job(p.GetName())
	o, err := setPaused(s, c, e)
	if err != nil || !o.changed {
		return o, err
	}
	action := AuditResume
	if p.GetPaused() {
		action = AuditPause
	}
	r := &pb.AuditRecord{
		Action:        action,
		Job:           p.GetName(),
		VersionBefore: before.GetVersion(),
		VersionAfter:  o.job.GetVersion(),
	}
	if until := p.GetUntilUnix(); until != 0 {
		r.Changes = []*pb.AuditChange{{Field: "until", After: unixText(until)}}
	}
	s.appendRecord(e, r, before.GetSpec(), o.job.GetSpec())
	return o, nil
}

// auditedFireBatch records the manual runs a batch accepted: the one part
// of the fire protocol an operator asks for. Each carries the principal of
// its own trigger, since one batch holds the triggers of many callers.
func auditedFireBatch(s *state, c *pb.Command, e entry) (outcome, error) {
	o, err := fireBatch(s, c, e)
	if err != nil || !s.audit.on() {
		return o, err
	}
	for i, f := range c.GetFireBatch().GetFires() {
		if f.GetKind() != pb.FireKind_FIRE_KIND_MANUAL || i >= len(o.fires) || !o.fires[i].GetAccepted() {
			continue
		}
		j, _ := s.job(f.GetJob())
		r := &pb.AuditRecord{
			Principal:     f.GetPrincipal(),
			Action:        AuditTrigger,
			Job:           f.GetJob(),
			RunId:         o.fires[i].GetRunId(),
			VersionBefore: j.GetVersion(),
			VersionAfter:  j.GetVersion(),
		}
		if f.GetForce() {
			r.Changes = []*pb.AuditChange{{Field: "force", Before: "false", After: "true"}}
		}
		s.appendRecord(e, r, nil, nil)
	}
	return o, nil
}

func auditedCancelRun(s *state, c *pb.Command, e entry) (outcome, error) {
	o, err := cancelRun(s, c, e)
	if err != nil || !s.audit.on() {
		return o, err
	}
	j, _ := s.job(o.run.GetJob())
	s.appendRecord(e, &pb.AuditRecord{
		Action:        AuditCancel,
		Job:           o.run.GetJob(),
		RunId:         o.run.GetId(),
		VersionBefore: j.GetVersion(),
		VersionAfter:  j.GetVersion(),
	}, nil, nil)
	return o, nil
}

// AuditQuery selects audit records, newest first.
type AuditQuery struct {
	// Job keeps only the records of that job; "" keeps all.
	Job string
	// Before keeps only records with a lower sequence number; 0 means none
	// is excluded.
	Before uint64
	// Limit caps the answer; zero or less means no cap.
	Limit int
}

// ListAudit returns the records q selects, newest first, each a fresh
// message with the diff of its job's spec rendered.
func (f *FSM) ListAudit(q AuditQuery) []*pb.AuditRecord {
	entries := f.auditEntries(q)
	out := make([]*pb.AuditRecord, len(entries))
	for i, ae := range entries {
		// The entries are immutable: rendering needs no lock.
		r := proto.CloneOf(ae.GetRecord())
		if ae.GetSpecAfter() != nil {
			r.Changes = append(r.Changes, specChanges(ae.GetSpecBefore(), ae.GetSpecAfter())...)
		}
		if t := ae.GetToken(); t != nil {
			r.Changes = append(r.Changes, tokenChanges(r.GetAction(), t)...)
		}
		if ae.GetSecretBefore() != nil || ae.GetSecretAfter() != nil {
			r.Changes = append(r.Changes, secretChanges(ae.GetSecretBefore(), ae.GetSecretAfter())...)
		}
		if ae.GetCalendarBefore() != nil || ae.GetCalendarAfter() != nil {
			r.Changes = append(r.Changes, calendarChanges(ae.GetCalendarBefore(), ae.GetCalendarAfter())...)
		}
		if fr := ae.GetFreeze(); fr != nil {
			r.Changes = append(r.Changes, freezeChanges(r.GetAction(), fr)...)
		}
		if ae.GetChannelBefore() != nil || ae.GetChannelAfter() != nil {
			r.Changes = append(r.Changes, alertConfigChanges(ae.GetChannelBefore(), ae.GetChannelAfter(), &pb.Channel{})...)
		}
		if ae.GetRuleBefore() != nil || ae.GetRuleAfter() != nil {
			r.Changes = append(r.Changes, alertConfigChanges(ae.GetRuleBefore(), ae.GetRuleAfter(), &pb.NotifyRule{})...)
		}
		out[i] = r
	}
	return out
}

// auditEntries collects the stored entries q selects, newest first.
func (f *FSM) auditEntries(q AuditQuery) []*pb.AuditEntry {
	f.mu.RLock()
	defer f.mu.RUnlock()
	a := &f.st.audit
	var out []*pb.AuditEntry
	full := func() bool { return q.Limit > 0 && len(out) >= q.Limit }
	if q.Job != "" {
		seqs := a.byJob[q.Job]
		for i := len(seqs) - 1; i >= 0 && !full(); i-- {
			if q.Before != 0 && seqs[i] >= q.Before {
				continue
			}
			if ae, ok := a.records.Get(auditKey(seqs[i])); ok {
				out = append(out, ae)
			}
		}
		return out
	}
	visit := func(ae *pb.AuditEntry) bool {
		if full() {
			return false
		}
		out = append(out, ae)
		return true
	}
	if q.Before == 0 {
		a.records.Descend(visit)
	} else {
		a.records.DescendLessOrEqual(auditKey(q.Before-1), visit)
	}
	return out
}

// AuditLimit is how many audit records the trail keeps; 0 while it is off.
func (f *FSM) AuditLimit() uint32 {
	f.mu.RLock()
	defer f.mu.RUnlock()
	return f.st.audit.limit
}

// Package fsm holds raftcron's replicated state — the job registry with each
// job's run status, the tombstones of deleted jobs, the run ledger and the
// fencing-token counter — and the deterministic transitions the Raft log
// drives it through.
package fsm

import (
	"errors"
	"sync"
	"time"

	"github.com/hashicorp/raft"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/reflect/protoreflect"
	"google.golang.org/protobuf/types/known/timestamppb"

	pb "github.com/raftcron/raftcron/proto/raftcron/v1"
)

// FSM implements raft.FSM over the job registry. Apply is deterministic: it
// reads no clock, does no I/O and takes time only from the command.
type FSM struct {
	// mu guards st, lastIndex and observer: Apply, Restore and the captures
	// of Snapshot and StoredJobs take it for writing, the read views for
	// reading. The observer is called after it is released.
	mu        sync.RWMutex
	st        state
	lastIndex uint64
	observer  Observer
}

var _ raft.FSM = (*FSM)(nil)

// New returns an FSM with no jobs and the counter at zero.
func New() *FSM {
	return &FSM{st: newState()}
}

// entry is what a command handler knows about the log entry beyond the
// command itself.
type entry struct {
	index      uint64
	term       uint64 // Raft term of the entry; 0 only for hand-built test logs
	proposedAt int64
	principal  string // who asked for it (Command.caller), "" for the scheduler's batches
}

// seconds is the proposer's clock in whole Unix seconds, rounded down: the
// unit of slots and cursors.
func (e entry) seconds() int64 {
	return floorDiv(e.proposedAt, int64(time.Second))
}

func floorDiv(a, b int64) int64 {
	q := a / b
	if a%b != 0 && (a < 0) != (b < 0) {
		q--
	}
	return q
}

// timestamp is the proposer's clock as a protobuf time. A fresh value per
// call keeps stored jobs from sharing it with results.
func (e entry) timestamp() *timestamppb.Timestamp {
	return timestamppb.New(time.Unix(0, e.proposedAt).UTC())
}

// outcome is what a successful command did.
type outcome struct {
	job         *pb.Job // the stored job after the command; nil after a delete
	status      *pb.JobStatus
	changed     bool
	created     bool
	fires       []*pb.FireResult
	completions []*pb.CompletionResult
	run         *pb.Run      // a stored run the command changed, for the result (cancel_run)
	token       *pb.AclToken // a stored token the command created, for the result
	calendar    *pb.Calendar
	freeze      *pb.Freeze
	channel     *pb.Channel
	rule        *pb.NotifyRule
	alerts      []*pb.Alert
	chained     []*pb.Run
	backfill    *pb.Backfill // a stored backfill the command changed, for the result
}

// handler applies one kind of command. It checks everything before it
// changes anything, so an error always leaves the state as it was.
type handler func(s *state, c *pb.Command, e entry) (outcome, error)

// handlers is keyed by the name of the Command.kind oneof field.
// The registry's, runs' and ACL writes go through their audited wrappers
// (audit.go, audit_acl.go).
var handlers = map[protoreflect.Name]handler{
	"put_job":             scoped(auditedPut),
	"delete_job":          scoped(auditedDelete),
	"set_paused":          scoped(auditedSetPaused),
	KindFireBatch:         auditedFireBatch,
	"complete_batch":      completeBatch,
	"cancel_run":          scoped(auditedCancelRun),
	"bootstrap_acl":       auditedBootstrapACL,
	"create_acl_token":    auditedCreateACLToken,
	"delete_acl_token":    auditedDeleteACLToken,
	"set_audit":           setAudit,
	"set_cluster_version": setClusterVersion,
	"record_membership":   recordMembership,
	"put_secret":          scopedSecret(auditedPutSecret),
	"delete_secret":       scopedSecret(auditedDeleteSecret),
	"rotate_secrets":      scopedSecret(auditedRotateSecrets),
	"put_calendar":        scopedCalendar(auditedPutCalendar),
	"delete_calendar":     scopedCalendar(auditedDeleteCalendar),
	"create_freeze":       scopedFreeze(auditedCreateFreeze),
	"delete_freeze":       scopedFreeze(auditedDeleteFreeze),
	KindRecordProgress:    recordProgress,
	"checkin":             scoped(checkin),
	"put_channel":         scopedAlertConfig(auditedPutChannel),
	"delete_channel":      scopedAlertConfig(auditedDeleteChannel),
	"put_notify_rule":     scopedAlertConfig(auditedPutNotifyRule),
	"delete_notify_rule":  scopedAlertConfig(auditedDeleteNotifyRule),
	"check_alerts":        checkAlerts,
	"record_deliveries":   recordDeliveries,
	"start_backfill":      scoped(startBackfill),
	"cancel_backfill":     scoped(cancelBackfill),
	"end_pause":           endPause,
}

var kindOneof = (&pb.Command{}).ProtoReflect().Descriptor().Oneofs().ByName("kind")

// Apply applies one log entry and returns a *pb.CommandResult. A command
// that fails changes nothing and reports why in the result, never as an
// error value: every node reaches the same verdict for the same entry, so a
// refusal is an answer to the proposer, not a fault of the node. The one
// exception is an entry of a kind this build does not know: Apply returns
// an error wrapping ErrUnknownCommand, changes nothing (not even
// AppliedIndex) and the node must stop, because its peers that know the
// kind apply it.
func (f *FSM) Apply(l *raft.Log) interface{} {
	if l == nil {
		return result(outcome{}, malformed("no log entry"))
	}
	var c pb.Command
	decodeErr := decode(l, &c)
	if errors.Is(decodeErr, ErrUnknownCommand) || errors.Is(decodeErr, ErrVersionTooNew) {
		return decodeErr
	}
	f.mu.Lock()
	f.lastIndex = l.Index
	tx := &changes{track: f.observer != nil}
	f.st.tx = tx
	o, err := outcome{}, decodeErr
	var origin Origin
	if err == nil {
		fd := c.ProtoReflect().WhichOneof(kindOneof)
		origin = originOf(&c, fd)
		f.st.applying = c.GetProposedAtUnixNano()
		o, err = f.apply(l, &c, fd)
	}
	f.st.tx = nil
	obs := f.observer
	f.mu.Unlock()

	res := result(o, err)
	if err == nil {
		tx.notify(obs, origin)
	}
	return res
}

// decode reads the entry's command into c: a malformed error when it does
// not decode or sets no kind, ErrUnknownCommand when its kind is newer than
// this build, ErrVersionTooNew when it raises the cluster version beyond it.
func decode(l *raft.Log, c *pb.Command) error {
	if err := proto.Unmarshal(l.Data, c); err != nil {
		return malformed("log entry %d does not decode as a raftcron.v1.Command", l.Index)
	}
	if c.ProtoReflect().WhichOneof(kindOneof) != nil {
		return tooNew(l.Index, c)
	}
	if fields, ok := unknownKind(c); ok {
		return unknownCommand(l.Index, fields)
	}
	return malformed("log entry %d sets no known command", l.Index)
}

// apply runs the handler of c's kind, fd.
func (f *FSM) apply(l *raft.Log, c *pb.Command, fd protoreflect.FieldDescriptor) (outcome, error) {
	h, ok := handlers[fd.Name()]
	if !ok {
		return outcome{}, malformed("log entry %d: command %s has no handler", l.Index, fd.Name())
	}
	return h(&f.st, c, entry{
		index: l.Index, term: l.Term, proposedAt: c.GetProposedAtUnixNano(),
		principal: f.st.share.str(c.GetCaller().GetPrincipal()),
	})
}

func result(o outcome, err error) *pb.CommandResult {
	if err != nil {
		return &pb.CommandResult{Code: CodeOf(err), Message: err.Error()}
	}
	r := &pb.CommandResult{
		Code:        pb.ResultCode_RESULT_CODE_OK,
		Changed:     o.changed,
		Created:     o.created,
		Fires:       o.fires,
		Completions: o.completions,
		Run:         cloneRun(o.run),
		Calendar:    publicCalendar(o.calendar),
		Freeze:      proto.CloneOf(o.freeze),
		Alerts:      o.alerts,
		Chained:     o.chained,
	}
	if o.token != nil {
		r.AclToken = publicToken(o.token)
	}
	if o.channel != nil {
		r.Channel = proto.CloneOf(o.channel)
	}
	if o.rule != nil {
		r.NotifyRule = proto.CloneOf(o.rule)
	}
	if o.backfill != nil {
		r.Backfill = proto.CloneOf(o.backfill)
	}
	if o.job != nil {
		r.Job = cloneJob(o.job, o.status)
	}
	return r
}

// cloneJob is a deep copy of a stored job with its status filled in, in
// the plain form callers expect (labels in their map).
func cloneJob(j *pb.Job, st *pb.JobStatus) *pb.Job {
	c := proto.Clone(j).(*pb.Job)
	thawSpec(c.GetSpec())
	c.Status = cloneStatus(st)
	return c
}

// AppliedIndex is the index of the last log entry Apply saw. After Restore
// it is the highest modify_index in the snapshot: a lower bound, since the
// snapshot's own index is known to Raft, not to the stream.
func (f *FSM) AppliedIndex() uint64 {
	f.mu.RLock()
	defer f.mu.RUnlock()
	return f.lastIndex
}

package api

import (
	"context"
	"sync"
	"time"

	"github.com/raftcron/raftcron/fsm"
	pb "github.com/raftcron/raftcron/proto/raftcron/v1"
)

// DefaultAuditLimit is how many audit records the cluster keeps unless the
// leader's --audit-limit says otherwise.
const DefaultAuditLimit = 10_000

// auditRetry is how long a node waits before it tries again to turn the
// trail on after the cluster refused (a voter does not apply command
// version 2 yet) or the proposal failed.
const auditRetry = 10 * time.Second

// AuditState is the part of this node's applied state the switch reads.
type AuditState interface {
	// AuditLimit is how many records the trail keeps; 0 while it is off.
	AuditLimit() uint32
}

// AuditSwitch turns the replicated audit trail on, and keeps its limit at
// this node's while it leads. The trail starts with a set_audit command of
// command version 2 (fsm/DESIGN.md: an older voter would not keep records,
// so its state would differ): the cluster refuses it until every voter
// applies that version, which is why the switch is tried before each write
// rather than once. A refusal does not hold up the write, which is then not
// audited; the switch waits auditRetry before it asks again.
type AuditSwitch struct {
	store      Store
	state      AuditState
	limit      uint32
	leadership Leadership // nil: this node counts as the leader
	now        func() time.Time

	mu      sync.Mutex // held across a proposal, so concurrent writes propose once
	retryAt time.Time
}

// NewAuditSwitch returns a switch that proposes limit (1 to
// fsm.MaxAuditLimit) through store. A node that does not lead (per
// leadership) only switches the trail on and never changes the limit of a
// trail that is on, so the leader's limit is the one in force. now nil
// means time.Now.
func NewAuditSwitch(store Store, state AuditState, limit uint32, leadership Leadership, now func() time.Time) *AuditSwitch {
	if now == nil {
		now = time.Now
	}
	return &AuditSwitch{store: store, state: state, limit: limit, leadership: leadership, now: now}
}

// ensure proposes set_audit if the trail is off, or if this node leads and
// the trail keeps another limit. It never fails the write it precedes.
func (a *AuditSwitch) ensure(ctx context.Context) {
	if a == nil {
		return
	}
	leads := a.leadership == nil || a.leadership.IsLeader()
	if !a.needed(leads) {
		return
	}
	a.mu.Lock()
	defer a.mu.Unlock()
	now := a.now()
	if !a.needed(leads) || now.Before(a.retryAt) {
		return
	}
	cmd := &pb.Command{
		Caller: &pb.Caller{Principal: fsm.PrincipalSystem},
		Kind:   &pb.Command_SetAudit{SetAudit: &pb.SetAuditCommand{Limit: a.limit, EnableOnly: !leads}},
	}
	res, err := a.store.Apply(ctx, cmd)
	if err != nil || res.GetCode() != pb.ResultCode_RESULT_CODE_OK {
		a.retryAt = now.Add(auditRetry)
	}
}

func (a *AuditSwitch) needed(leads bool) bool {
	have := a.state.AuditLimit()
	return have == 0 || (leads && have != a.limit)
}

// AuditLog is this node's applied audit trail.
type AuditLog interface {
	ListAudit(q fsm.AuditQuery) []*pb.AuditRecord
}

const (
	defaultAuditListLimit = 50
	maxAuditListLimit     = 1000
)

type auditService struct {
	pb.UnimplementedAuditServiceServer
	barrier Barrier
	log     AuditLog
}

// NewAuditService serves AuditService from d's Barrier and AuditLog: reads
// of the audit trail, linearizable after the barrier unless stale.
func NewAuditService(d Deps) pb.AuditServiceServer {
	d = d.withDefaults()
	return &auditService{barrier: d.Barrier, log: d.AuditLog}
}

func (s *auditService) ListAudit(ctx context.Context, req *pb.ListAuditRequest) (*pb.ListAuditResponse, error) {
	if err := validJobFilter(req.GetJob()); err != nil {
		return nil, err
	}
	if !req.GetStale() {
		if err := statusOf(s.barrier.ReadBarrier(ctx)); err != nil {
			return nil, err
		}
	}
	limit := defaultAuditListLimit
	if n := req.GetLimit(); n > 0 {
		limit = min(int(n), maxAuditListLimit)
	}
	recs := s.log.ListAudit(fsm.AuditQuery{Job: req.GetJob(), Before: req.GetBeforeSeq(), Limit: limit})
	return &pb.ListAuditResponse{Records: recs}, nil
}

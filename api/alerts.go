package api

import (
	"context"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/proto"

	"github.com/raftcron/raftcron/fsm"
	"github.com/raftcron/raftcron/jobspec"
	pb "github.com/raftcron/raftcron/proto/raftcron/v1"
)

// Bounds of ListAlerts.
const (
	defaultAlertPage = 100
	maxAlertPage     = 1000
)

type alertService struct {
	pb.UnimplementedAlertServiceServer
	store          Store
	alerts         AlertStore
	audit          *AuditSwitch
	clusterVersion func() uint32
}

// NewAlertService serves AlertService from d's Store and Alerts
// (required), Audit and ClusterVersion.
func NewAlertService(d Deps) pb.AlertServiceServer {
	d = d.withDefaults()
	return &alertService{store: d.Store, alerts: d.Alerts, audit: d.Audit, clusterVersion: d.ClusterVersion}
}

func (s *alertService) served() error {
	if s.alerts == nil || s.store == nil {
		return status.Error(codes.Unimplemented, "this node serves no alerts")
	}
	return nil
}

func (s *alertService) read(ctx context.Context, stale bool) error {
	if stale {
		return nil
	}
	return statusOf(s.store.ReadBarrier(ctx))
}

// ListAlerts lists the alerts of the jobs in the caller's scope (by the
// labels they had when raised), newest first, and the open episodes.
func (s *alertService) ListAlerts(ctx context.Context, req *pb.ListAlertsRequest) (*pb.ListAlertsResponse, error) {
	if err := s.served(); err != nil {
		return nil, err
	}
	if req.GetJob() != "" {
		if err := validName(req.GetJob()); err != nil {
			return nil, err
		}
	}
	if err := s.read(ctx, req.GetStale()); err != nil {
		return nil, err
	}
	limit := int(req.GetLimit())
	switch {
	case limit == 0:
		limit = defaultAlertPage
	case limit > maxAlertPage:
		limit = maxAlertPage
	}
	alerts, episodes := s.alerts.Alerts(fsm.AlertQuery{Job: req.GetJob(), Open: req.GetOpen(), Limit: limit, Selector: PrincipalFrom(ctx).Selector})
	return &pb.ListAlertsResponse{Alerts: alerts, Episodes: episodes}, nil
}

func (s *alertService) ApplyNotifyRule(ctx context.Context, req *pb.ApplyNotifyRuleRequest) (*pb.ApplyNotifyRuleResponse, error) {
	if err := s.served(); err != nil {
		return nil, err
	}
	r := proto.CloneOf(req.GetRule())
	if r == nil {
		return nil, fieldError("rule", "required")
	}
	r.Version, r.UpdatedAt, r.UpdatedBy = 0, nil, ""
	jobspec.NormalizeNotifyRule(r)
	if err := jobspec.ValidateNotifyRule(r); err != nil {
		return nil, invalidArgument(err, "rule")
	}
	if err := alertsVersion(s.clusterVersion, "notify rule "+r.GetName()); err != nil {
		return nil, err
	}
	p := PrincipalFrom(ctx)
	if !fsm.SelectorMatches(r.GetSelector(), p.Selector) {
		return nil, status.Errorf(codes.PermissionDenied, "selector: notify rule %q must select within %s, the scope of ACL token %q",
			r.GetName(), FormatSelector(p.Selector), p.Name)
	}
	if err := s.read(ctx, false); err != nil {
		return nil, err
	}
	if rule := channelRule(s.alerts, p, r.GetChannel(), r.GetSelector()); rule != "" {
		return nil, fieldError("channel", rule)
	}
	res, err := applyAs(ctx, s.store, s.audit, &pb.Command{Kind: &pb.Command_PutNotifyRule{PutNotifyRule: &pb.PutNotifyRuleCommand{
		Rule: r, ExpectedVersion: req.GetExpectedVersion()}}})
	if err != nil {
		return nil, err
	}
	return &pb.ApplyNotifyRuleResponse{Rule: res.GetNotifyRule(), Changed: res.GetChanged(), Created: res.GetCreated()}, nil
}

func (s *alertService) ListNotifyRules(ctx context.Context, req *pb.ListNotifyRulesRequest) (*pb.ListNotifyRulesResponse, error) {
	if err := s.served(); err != nil {
		return nil, err
	}
	if err := s.read(ctx, req.GetStale()); err != nil {
		return nil, err
	}
	return &pb.ListNotifyRulesResponse{Rules: s.alerts.NotifyRules(PrincipalFrom(ctx).Selector)}, nil
}

func (s *alertService) DeleteNotifyRule(ctx context.Context, req *pb.DeleteNotifyRuleRequest) (*pb.DeleteNotifyRuleResponse, error) {
	if err := s.served(); err != nil {
		return nil, err
	}
	if err := s.read(ctx, false); err != nil {
		return nil, err
	}
	if r, ok := s.alerts.NotifyRule(req.GetName()); !ok || !fsm.SelectorMatches(r.GetSelector(), PrincipalFrom(ctx).Selector) {
		return nil, status.Errorf(codes.NotFound, "notify rule %q not found", req.GetName())
	}
	if _, err := applyAs(ctx, s.store, s.audit, &pb.Command{Kind: &pb.Command_DeleteNotifyRule{
		DeleteNotifyRule: &pb.DeleteNotifyRuleCommand{Name: req.GetName()}}}); err != nil {
		return nil, err
	}
	return &pb.DeleteNotifyRuleResponse{}, nil
}

// channelRule says why the channel name may not be used by p for jobs
// whose labels include labels (a job's, or a rule's selector), or "":
// it must exist, be in p's scope, and its labels must be among those.
func channelRule(st ChannelLookup, p Principal, name string, labels map[string]string) string {
	ch, ok := st.Channel(name)
	switch {
	case !ok || !p.sees(ch.GetLabels()):
		return "channel " + quoteName(name) + " not found: apply it first (raftcron channel apply -f FILE)"
	case !fsm.SelectorMatches(labels, ch.GetLabels()):
		return "channel " + quoteName(name) + " is labelled " + FormatSelector(ch.GetLabels()) + ": what notifies it must carry those labels"
	}
	return ""
}

// ChannelLookup finds a channel (fsm.FSM).
type ChannelLookup interface {
	Channel(name string) (*pb.Channel, bool)
}

func quoteName(s string) string { return "\"" + s + "\"" }

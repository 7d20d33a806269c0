package api

import (
	"context"
	"errors"
	"fmt"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/proto"

	"github.com/raftcron/raftcron/cluster"
	"github.com/raftcron/raftcron/fsm"
	"github.com/raftcron/raftcron/jobspec"
	pb "github.com/raftcron/raftcron/proto/raftcron/v1"
	"github.com/raftcron/raftcron/secret"
)

// AlertStore is this node's applied alert state (fsm.FSM).
type AlertStore interface {
	Channels(selector map[string]string) []*pb.Channel
	Channel(name string) (*pb.Channel, bool)
	NotifyRules(selector map[string]string) []*pb.NotifyRule
	NotifyRule(name string) (*pb.NotifyRule, bool)
	Alerts(q fsm.AlertQuery) ([]*pb.Alert, []*pb.AlertEpisode)
	StoredJobs(fn func(fsm.StoredJob) bool)
}

// ChannelTester sends a test notification; only the leader's can
// (alert.Alerter). Its ErrNotLeader sends the call to the leader.
type ChannelTester interface {
	TestChannel(ctx context.Context, name string) (*pb.TestChannelResponse, error)
}

type channelService struct {
	pb.UnimplementedChannelServiceServer
	store          Store
	alerts         AlertStore
	secrets        SecretStore
	tester         ChannelTester
	leadership     Leadership
	audit          *AuditSwitch
	clusterVersion func() uint32
}

// NewChannelService serves ChannelService from d's Store and Alerts
// (required), Secrets (references must resolve), ChannelTester and
// Leadership (TestChannel; without a tester it is forwarded to the
// leader), Audit and ClusterVersion.
func NewChannelService(d Deps) pb.ChannelServiceServer {
	d = d.withDefaults()
	return &channelService{store: d.Store, alerts: d.Alerts, secrets: d.Secrets, tester: d.ChannelTester,
		leadership: d.Leadership, audit: d.Audit, clusterVersion: d.ClusterVersion}
}

func (s *channelService) served() error {
	if s.alerts == nil || s.store == nil {
		return status.Error(codes.Unimplemented, "this node serves no alerts")
	}
	return nil
}

func (s *channelService) ApplyChannel(ctx context.Context, req *pb.ApplyChannelRequest) (*pb.ApplyChannelResponse, error) {
	if err := s.served(); err != nil {
		return nil, err
	}
	ch := proto.CloneOf(req.GetChannel())
	if ch == nil {
		return nil, fieldError("channel", "required")
	}
	ch.Version, ch.UpdatedAt, ch.UpdatedBy = 0, nil, ""
	if err := jobspec.ValidateChannel(ch); err != nil {
		return nil, invalidArgument(err, "channel")
	}
	if err := alertsVersion(s.clusterVersion, "channel "+ch.GetName()); err != nil {
		return nil, err
	}
	p := PrincipalFrom(ctx)
	if !p.sees(ch.GetLabels()) {
		return nil, status.Errorf(codes.PermissionDenied, "labels: channel %q must carry the labels %s of ACL token %q",
			ch.GetName(), FormatSelector(p.Selector), p.Name)
	}
	if err := s.checkSecrets(ctx, ch); err != nil {
		return nil, err
	}
	res, err := s.apply(ctx, &pb.Command{Kind: &pb.Command_PutChannel{PutChannel: &pb.PutChannelCommand{
		Channel: ch, ExpectedVersion: req.GetExpectedVersion()}}})
	if err != nil {
		return nil, err
	}
	return &pb.ApplyChannelResponse{Channel: redactChannelFor(ctx, res.GetChannel()), Changed: res.GetChanged(), Created: res.GetCreated()}, nil
}

// checkSecrets refuses references to secrets that are missing, outside
// the caller's scope, or whose labels the channel does not carry.
func (s *channelService) checkSecrets(ctx context.Context, ch *pb.Channel) error {
	owner := &pb.JobSpec{Name: ch.GetName(), Labels: ch.GetLabels()}
	var first error
	_ = jobspec.ChannelSecretFields(proto.CloneOf(ch), func(path, value string) (string, error) {
		names, _ := secret.Refs(value)
		for _, n := range names {
			if rule := unresolved(s.secrets, PrincipalFrom(ctx), owner, n); rule != "" && first == nil {
				first = fieldError(path, rule)
			}
		}
		return value, nil
	})
	return first
}

func (s *channelService) GetChannel(ctx context.Context, req *pb.GetChannelRequest) (*pb.GetChannelResponse, error) {
	if err := s.served(); err != nil {
		return nil, err
	}
	if err := s.read(ctx, req.GetStale()); err != nil {
		return nil, err
	}
	ch, ok := s.alerts.Channel(req.GetName())
	if !ok || !PrincipalFrom(ctx).sees(ch.GetLabels()) {
		return nil, status.Errorf(codes.NotFound, "channel %q not found", req.GetName())
	}
	return &pb.GetChannelResponse{Channel: redactChannelFor(ctx, ch)}, nil
}

func (s *channelService) ListChannels(ctx context.Context, req *pb.ListChannelsRequest) (*pb.ListChannelsResponse, error) {
	if err := s.served(); err != nil {
		return nil, err
	}
	if err := s.read(ctx, req.GetStale()); err != nil {
		return nil, err
	}
	chans := s.alerts.Channels(PrincipalFrom(ctx).Selector)
	for i, ch := range chans {
		chans[i] = redactChannelFor(ctx, ch)
	}
	return &pb.ListChannelsResponse{Channels: chans}, nil
}

func (s *channelService) DeleteChannel(ctx context.Context, req *pb.DeleteChannelRequest) (*pb.DeleteChannelResponse, error) {
	if err := s.served(); err != nil {
		return nil, err
	}
	name := req.GetName()
	if err := s.read(ctx, false); err != nil {
		return nil, err
	}
	if ch, ok := s.alerts.Channel(name); !ok || !PrincipalFrom(ctx).sees(ch.GetLabels()) {
		return nil, status.Errorf(codes.NotFound, "channel %q not found", name)
	}
	users, hidden := channelUsers(ctx, s.alerts, name)
	if (len(users) > 0 || hidden > 0) && !req.GetForce() {
		return nil, status.Errorf(codes.FailedPrecondition, "channel %q is named by %s: change those first, "+
			"or delete it anyway with force (raftcron channel delete --force; their notifications to it then fail)", name, describeUsers(users, hidden))
	}
	if _, err := s.apply(ctx, &pb.Command{Kind: &pb.Command_DeleteChannel{DeleteChannel: &pb.DeleteChannelCommand{Name: name}}}); err != nil {
		return nil, err
	}
	return &pb.DeleteChannelResponse{ReferencedBy: users}, nil
}

// channelUsers names, up to maxReferencedBy, the jobs and rules the
// caller may see that name the channel, and counts the others.
func channelUsers(ctx context.Context, st AlertStore, name string) (users []string, hidden int) {
	p := PrincipalFrom(ctx)
	add := func(visible bool, what string) {
		switch {
		case !visible:
			hidden++
		case len(users) < maxReferencedBy:
			users = append(users, what)
		}
	}
	st.StoredJobs(func(sj fsm.StoredJob) bool {
		spec := sj.Job.GetSpec()
		for _, n := range spec.GetNotify() {
			if n.GetChannel() == name {
				add(fsm.SpecHasLabels(spec, p.Selector), "job "+spec.GetName())
				break
			}
		}
		return true
	})
	for _, r := range st.NotifyRules(nil) {
		if r.GetChannel() == name {
			add(fsm.SelectorMatches(r.GetSelector(), p.Selector), "notify rule "+r.GetName())
		}
	}
	return users, hidden
}

// TestChannel has the leader send a test notification. On a follower the
// call goes to the leader, once.
func (s *channelService) TestChannel(ctx context.Context, req *pb.TestChannelRequest) (*pb.TestChannelResponse, error) {
	if err := s.served(); err != nil {
		return nil, err
	}
	if err := s.read(ctx, false); err != nil {
		return nil, err
	}
	if ch, ok := s.alerts.Channel(req.GetName()); !ok || !PrincipalFrom(ctx).sees(ch.GetLabels()) {
		return nil, status.Errorf(codes.NotFound, "channel %q not found", req.GetName())
	}
	if s.tester != nil {
		resp, err := s.tester.TestChannel(ctx, req.GetName())
		if !errors.Is(err, cluster.ErrNotLeader) {
			return resp, statusOf(err)
		}
	}
	if isForwarded(ctx) || s.leadership == nil {
		return nil, cluster.NotLeaderStatus("this node does not lead (any more): retry", "", "")
	}
	conn, err := s.leadership.LeaderConn()
	if err != nil {
		return nil, statusOf(err)
	}
	return pb.NewChannelServiceClient(conn).TestChannel(forwardIdentity(ctx), req)
}

func (s *channelService) read(ctx context.Context, stale bool) error {
	if stale {
		return nil
	}
	return statusOf(s.store.ReadBarrier(ctx))
}

// apply commits cmd as the caller's; a result other than OK is an error.
func (s *channelService) apply(ctx context.Context, cmd *pb.Command) (*pb.CommandResult, error) {
	return applyAs(ctx, s.store, s.audit, cmd)
}

// applyAs commits cmd as the caller's, audit trail on; a result other
// than OK is an error.
func applyAs(ctx context.Context, store Store, audit *AuditSwitch, cmd *pb.Command) (*pb.CommandResult, error) {
	audit.ensure(ctx)
	cmd.Caller = PrincipalFrom(ctx).caller()
	res, err := store.Apply(ctx, cmd)
	if err != nil {
		return nil, statusOf(err)
	}
	if err := okResult(res); err != nil {
		return nil, err
	}
	return res, nil
}

// redactChannelFor hides the literal values of a channel's secret-bearing
// fields from every role but write and management, as a job's.
func redactChannelFor(ctx context.Context, ch *pb.Channel) *pb.Channel {
	switch PrincipalFrom(ctx).Role {
	case pb.AclRole_ACL_ROLE_WRITE, pb.AclRole_ACL_ROLE_MANAGEMENT:
		return ch
	}
	c := proto.CloneOf(ch)
	_ = jobspec.ChannelSecretFields(c, func(path, value string) (string, error) {
		switch {
		case value == "" || secret.HasRef(value):
			return value, nil
		case jobspec.ChannelURLField(path):
			return secret.RedactURL(value, secret.Redacted), nil
		default:
			return secret.Redacted, nil
		}
	})
	return c
}

// alertsVersion refuses alert settings until the cluster runs
// fsm.AlertsVersion: before, a voter of an older release may lead, and it
// would keep a job's expect and notify without acting on them.
func alertsVersion(clusterVersion func() uint32, what string) error {
	if clusterVersion == nil {
		return nil
	}
	if v := clusterVersion(); v < fsm.AlertsVersion {
		return precondition(PreconditionClusterVersion, what, fmt.Sprintf(
			"%s: alerts need cluster version %d, and the cluster runs %d: upgrade every voter; "+
				"the leader raises the version once they all apply it (cluster status shows it)", what, fsm.AlertsVersion, v))
	}
	return nil
}

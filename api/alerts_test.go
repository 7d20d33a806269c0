package api

import (
	"context"
	"slices"
	"strings"
	"testing"

	"google.golang.org/grpc/codes"

	pb "github.com/raftcron/raftcron/proto/raftcron/v1"
)

// fakeTester answers every test notification as sent.
type fakeTester struct{}

func (fakeTester) TestChannel(_ context.Context, name string) (*pb.TestChannelResponse, error) {
	return &pb.TestChannelResponse{Ok: true, Status: 204, Answer: "204 No Content", Id: "test-" + name}, nil
}

func hookChannel(name string, labels map[string]string) *pb.Channel {
	return &pb.Channel{Name: name, Labels: labels, Webhook: &pb.WebhookChannel{
		Url: "https://user:literal-pw@hooks.example/" + name, Headers: map[string]string{"Authorization": "Bearer literal-token"}}}
}

// TestChannelAndRuleMethodsByRole: apply, delete and test need write in
// the channel's (the rule's) scope, get, list and alert list need read;
// read tokens see no literal secret of a channel.
func TestChannelAndRuleMethodsByRole(t *testing.T) {
	h := newACLHarness(t, true)
	ctx := testCtx(t)
	mgmt := h.bootstrap(t)
	read := h.token(t, mgmt, "viewer", pb.AclRole_ACL_ROLE_READ, nil)
	write := h.token(t, mgmt, "deployer", pb.AclRole_ACL_ROLE_WRITE, nil)
	worker := h.token(t, mgmt, "worker-1", pb.AclRole_ACL_ROLE_WORKER, nil)
	teamA := h.token(t, mgmt, "team-a", pb.AclRole_ACL_ROLE_WRITE, map[string]string{"team": "a"})
	apply := func(tok string, ch *pb.Channel) error {
		_, err := h.channels.ApplyChannel(with(ctx, tok), &pb.ApplyChannelRequest{Channel: ch})
		return err
	}

	_, err := h.channels.ApplyChannel(ctx, &pb.ApplyChannelRequest{Channel: hookChannel("ops", nil)})
	wantCode(t, err, codes.Unauthenticated)
	wantCode(t, apply(read, hookChannel("ops", nil)), codes.PermissionDenied)
	wantCode(t, apply(worker, hookChannel("ops", nil)), codes.PermissionDenied)
	if err := apply(write, hookChannel("ops", nil)); err != nil {
		t.Fatalf("write token applying a channel: %v", err)
	}
	wantCode(t, apply(teamA, hookChannel("a-hook", nil)), codes.PermissionDenied)
	if err := apply(teamA, hookChannel("a-hook", map[string]string{"team": "a"})); err != nil {
		t.Fatalf("team=a applying a channel in its scope: %v", err)
	}
	wantCode(t, apply(write, &pb.Channel{Name: "bad", Webhook: &pb.WebhookChannel{Url: "ftp://x/"}}), codes.InvalidArgument)

	for tok, want := range map[string]string{read: "a-hook,ops", teamA: "a-hook"} {
		resp, err := h.channels.ListChannels(with(ctx, tok), &pb.ListChannelsRequest{})
		if err != nil {
			t.Fatal(err)
		}
		var names []string
		for _, ch := range resp.GetChannels() {
			names = append(names, ch.GetName())
			if tok == read && (strings.Contains(ch.String(), "literal-pw") || strings.Contains(ch.String(), "literal-token")) {
				t.Errorf("a read token sees a channel's literal secret: %v", ch)
			}
		}
		if got := strings.Join(names, ","); got != want {
			t.Errorf("ListChannels: %s, want %s", got, want)
		}
	}
	got, err := h.channels.GetChannel(with(ctx, write), &pb.GetChannelRequest{Name: "ops"})
	if err != nil || !strings.Contains(got.GetChannel().GetWebhook().GetUrl(), "literal-pw") {
		t.Fatalf("a write token gets the channel as written: %v, %v", got, err)
	}
	_, err = h.channels.GetChannel(with(ctx, teamA), &pb.GetChannelRequest{Name: "ops"})
	wantCode(t, err, codes.NotFound)

	_, err = h.channels.TestChannel(with(ctx, read), &pb.TestChannelRequest{Name: "ops"})
	wantCode(t, err, codes.PermissionDenied)
	if resp, err := h.channels.TestChannel(with(ctx, write), &pb.TestChannelRequest{Name: "ops"}); err != nil || !resp.GetOk() {
		t.Fatalf("write token testing a channel: %v, %v", resp, err)
	}
	_, err = h.channels.TestChannel(with(ctx, teamA), &pb.TestChannelRequest{Name: "ops"})
	wantCode(t, err, codes.NotFound)

	// Rules: a scoped token selects within its scope only.
	rule := func(tok, name string, sel map[string]string, channel string) error {
		_, err := h.alerts.ApplyNotifyRule(with(ctx, tok), &pb.ApplyNotifyRuleRequest{Rule: &pb.NotifyRule{Name: name, Selector: sel, Channel: channel}})
		return err
	}
	wantCode(t, rule(read, "all", nil, "ops"), codes.PermissionDenied)
	wantCode(t, rule(teamA, "all", nil, "a-hook"), codes.PermissionDenied)
	wantCode(t, rule(write, "ghost", nil, "nope"), codes.InvalidArgument)
	wantCode(t, rule(write, "all-a", nil, "a-hook"), codes.InvalidArgument) // the channel's labels must be selected
	if err := rule(teamA, "a-rule", map[string]string{"team": "a"}, "a-hook"); err != nil {
		t.Fatalf("team=a applying a rule in its scope: %v", err)
	}
	if err := rule(write, "everything", nil, "ops"); err != nil {
		t.Fatal(err)
	}
	lr, err := h.alerts.ListNotifyRules(with(ctx, teamA), &pb.ListNotifyRulesRequest{})
	if err != nil || len(lr.GetRules()) != 1 || lr.GetRules()[0].GetName() != "a-rule" || len(lr.GetRules()[0].GetOn()) != 8 {
		t.Fatalf("team=a's rules: %v, %v", lr, err)
	}
	_, err = h.alerts.DeleteNotifyRule(with(ctx, teamA), &pb.DeleteNotifyRuleRequest{Name: "everything"})
	wantCode(t, err, codes.NotFound)
	_, err = h.alerts.ListAlerts(with(ctx, worker), &pb.ListAlertsRequest{})
	wantCode(t, err, codes.PermissionDenied)
	if _, err := h.alerts.ListAlerts(with(ctx, read), &pb.ListAlertsRequest{Open: true}); err != nil {
		t.Fatal(err)
	}

	// A job names only channels that exist, in its scope, whose labels it
	// carries; a channel named is not deleted without force.
	spec := validSpec("billing")
	spec.Notify = []*pb.Notify{{Channel: "a-hook"}}
	_, err = h.jobs.ApplyJob(with(ctx, write), &pb.ApplyJobRequest{Spec: spec})
	if st := wantCode(t, err, codes.InvalidArgument); !slices.Equal(badRequestFields(t, st), []string{"notify[0].channel"}) {
		t.Fatalf("a job without the channel's labels: %v", st.Message())
	}
	spec.Notify[0].Channel = "ops"
	if _, err := h.jobs.ApplyJob(with(ctx, write), &pb.ApplyJobRequest{Spec: spec}); err != nil {
		t.Fatal(err)
	}
	_, err = h.channels.DeleteChannel(with(ctx, write), &pb.DeleteChannelRequest{Name: "ops"})
	if st := wantCode(t, err, codes.FailedPrecondition); !strings.Contains(st.Message(), "job billing") || !strings.Contains(st.Message(), "notify rule everything") {
		t.Fatalf("deleting a channel in use: %v", st.Message())
	}
	wantCode(t, func() error {
		_, err := h.channels.DeleteChannel(with(ctx, read), &pb.DeleteChannelRequest{Name: "ops", Force: true})
		return err
	}(), codes.PermissionDenied)
	if _, err := h.channels.DeleteChannel(with(ctx, write), &pb.DeleteChannelRequest{Name: "ops", Force: true}); err != nil {
		t.Fatal(err)
	}
}

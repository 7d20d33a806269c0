package jobspec

import (
	"errors"
	"strings"
	"testing"
	"time"

	pb "github.com/raftcron/raftcron/proto/raftcron/v1"
)

func TestAlertingFieldsAreCheckedByName(t *testing.T) {
	for _, c := range []struct {
		name  string
		set   func(*pb.JobSpec)
		field string
	}{
		{"zero start_within", func(s *pb.JobSpec) { s.Expect = &pb.Expect{StartWithin: dur(0)} }, "expect.start_within"},
		{"min above max", func(s *pb.JobSpec) { s.Expect = &pb.Expect{MinDuration: dur(time.Hour), MaxDuration: dur(time.Minute)} }, "expect.min_duration"},
		{"no channel", func(s *pb.JobSpec) { s.Notify = []*pb.Notify{{}} }, "notify[0].channel"},
		{"unknown event", func(s *pb.JobSpec) { s.Notify = []*pb.Notify{{Channel: "ops", On: []string{"exploded"}}} }, "notify[0].on"},
		{"event twice", func(s *pb.JobSpec) { s.Notify = []*pb.Notify{{Channel: "ops", On: []string{"failed", "failed"}}} }, "notify[0].on"},
		{"repeat too short", func(s *pb.JobSpec) { s.Notify = []*pb.Notify{{Channel: "ops", Repeat: dur(time.Second)}} }, "notify[0].repeat"},
	} {
		spec := fullJob()
		c.set(spec)
		var ve *ValidationError
		if err := Validate(spec, now); !errors.As(err, &ve) || ve.Violations[0].Field != c.field {
			t.Errorf("%s: %v, want a violation of %s", c.name, err, c.field)
		}
	}
	spec := fullJob()
	spec.Expect = &pb.Expect{StartWithin: dur(2 * time.Minute), MaxDuration: dur(10 * time.Minute), MinDuration: dur(5 * time.Second), SuccessWithin: dur(25 * time.Hour)}
	spec.Notify = []*pb.Notify{{Channel: "ops"}}
	if err := Validate(spec, now); err != nil {
		t.Fatal(err)
	}
	Normalize(spec)
	if n := spec.Notify[0]; len(n.On) != 8 || n.AfterFailures != 1 {
		t.Fatalf("normalized notify %v, want every event and after_failures 1", n)
	}
}

func TestValidateChannelAndRule(t *testing.T) {
	ok := []*pb.Channel{
		{Name: "ops", Webhook: &pb.WebhookChannel{Url: "https://hooks.example/a", Headers: map[string]string{"Authorization": "Bearer ${secret:hook}"}}},
		{Name: "chat", Slack: &pb.SlackChannel{Url: "${secret:slack-url}"}},
		{Name: "pd", Pagerduty: &pb.PagerDutyChannel{RoutingKey: "${secret:pd-key}"}},
		{Name: "mail", Email: &pb.EmailChannel{Smtp: "mail.example:587", From: "cron@example.org", To: []string{"ops@example.org"},
			Username: "cron", Password: "${secret:smtp-pass}", Starttls: true}},
	}
	for _, ch := range ok {
		if err := ValidateChannel(ch); err != nil {
			t.Errorf("%s: %v", ch.GetName(), err)
		}
	}
	for want, ch := range map[string]*pb.Channel{
		"channel":               {Name: "none"},
		"webhook.url":           {Name: "x", Webhook: &pb.WebhookChannel{Url: "ftp://a/"}},
		"pagerduty.routing_key": {Name: "x", Pagerduty: &pb.PagerDutyChannel{}},
		"email.starttls":        {Name: "x", Email: &pb.EmailChannel{Smtp: "m:25", From: "a@b.c", To: []string{"d@e.f"}, Username: "u", Password: "p"}},
		"email.smtp":            {Name: "x", Email: &pb.EmailChannel{Smtp: "m", From: "a@b.c", To: []string{"d@e.f"}}},
		"slack.url":             {Name: "x", Slack: &pb.SlackChannel{Url: "${secret:bad name}"}},
	} {
		if err := ValidateChannel(ch); err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("%v: %v, want a violation of %s", ch, err, want)
		}
	}
	if err := ValidateNotifyRule(&pb.NotifyRule{Name: "ops-all", Selector: map[string]string{"team": "ops"}, Channel: "ops"}); err != nil {
		t.Fatal(err)
	}
	if err := ValidateNotifyRule(&pb.NotifyRule{Name: "Bad", Channel: "ops", On: []string{"nope"}}); err == nil ||
		!strings.Contains(err.Error(), "name") || !strings.Contains(err.Error(), "on") {
		t.Fatalf("bad rule: %v", err)
	}
}

package jobfile

import (
	"strings"
	"testing"
	"time"

	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/types/known/durationpb"

	pb "github.com/raftcron/raftcron/proto/raftcron/v1"
)

// The README's channel and rule files read as the proto says, and write
// back to themselves.
func TestDecodeAsChannelsAndRules(t *testing.T) {
	chans, err := DecodeAs([]byte(`
- name: ops
  webhook: {url: https://hooks.example/alerts, headers: {X-Team: ops}}
  labels: {team: ops}
- name: pd
  pagerduty: {routing_key: "${secret:pd-key}"}
`), "channel", func() *pb.Channel { return &pb.Channel{} })
	if err != nil {
		t.Fatal(err)
	}
	want := []*pb.Channel{
		{Name: "ops", Webhook: &pb.WebhookChannel{Url: "https://hooks.example/alerts", Headers: map[string]string{"X-Team": "ops"}}, Labels: map[string]string{"team": "ops"}},
		{Name: "pd", Pagerduty: &pb.PagerDutyChannel{RoutingKey: "${secret:pd-key}"}},
	}
	for i := range want {
		if !proto.Equal(chans[i], want[i]) {
			t.Fatalf("channel %d: %v, want %v", i, chans[i], want[i])
		}
	}
	rules, err := DecodeAs([]byte("name: ops-all\nselector: {team: ops}\nchannel: ops\non: [failed, recovered]\nafter_failures: 3\nrepeat: 4h\n"),
		"notify rule", func() *pb.NotifyRule { return &pb.NotifyRule{} })
	if err != nil {
		t.Fatal(err)
	}
	wantRule := &pb.NotifyRule{Name: "ops-all", Selector: map[string]string{"team": "ops"}, Channel: "ops",
		On: []string{"failed", "recovered"}, AfterFailures: 3, Repeat: durationpb.New(4 * time.Hour)}
	if len(rules) != 1 || !proto.Equal(rules[0], wantRule) {
		t.Fatalf("rule %v, want %v", rules, wantRule)
	}
	out, err := EncodeYAMLAs(wantRule)
	if err != nil {
		t.Fatal(err)
	}
	again, err := DecodeAs(out, "notify rule", func() *pb.NotifyRule { return &pb.NotifyRule{} })
	if err != nil || !proto.Equal(again[0], wantRule) {
		t.Fatalf("round trip of %s: %v, %v", out, again, err)
	}
	_, err = DecodeAs([]byte("- name: x\n  webhok: {url: http://a}\n"), "channel", func() *pb.Channel { return &pb.Channel{} })
	if err == nil || !strings.Contains(err.Error(), `channels[0]: unknown field "webhok"`) {
		t.Fatalf("misspelled field: %v", err)
	}
}

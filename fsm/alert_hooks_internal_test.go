package fsm

import (
	"testing"

	"github.com/hashicorp/raft"
	"google.golang.org/protobuf/proto"

	pb "github.com/raftcron/raftcron/proto/raftcron/v1"
)

// alertPaused is the hook a rule that pauses a job (pause_after_failures)
// calls in the Apply that pauses it: one paused page per episode.
func TestAlertPausedPagesOncePerEpisode(t *testing.T) {
	f := New()
	apply := func(c *pb.Command) {
		t.Helper()
		c.ProposedAtUnixNano = 1_800_000_000_000_000_000
		data, err := proto.Marshal(c)
		if err != nil {
			t.Fatal(err)
		}
		if res := f.Apply(&raft.Log{Index: f.AppliedIndex() + 1, Term: 1, Data: data}).(*pb.CommandResult); res.GetCode() != pb.ResultCode_RESULT_CODE_OK {
			t.Fatalf("%v: %v", c, res)
		}
	}
	apply(SetClusterVersion(CommandVersion))
	apply(&pb.Command{Kind: &pb.Command_PutChannel{PutChannel: &pb.PutChannelCommand{Channel: &pb.Channel{Name: "ops", Webhook: &pb.WebhookChannel{Url: "http://a.test/"}}}}})
	apply(&pb.Command{Kind: &pb.Command_PutJob{PutJob: &pb.PutJobCommand{Mode: pb.PutMode_PUT_MODE_CREATE, Spec: &pb.JobSpec{
		Name: "etl", Schedule: "@hourly", Http: &pb.HttpTarget{Url: "http://b.test/"},
		Notify: []*pb.Notify{{Channel: "ops", On: []string{"paused"}}},
	}}}})
	for range 2 {
		f.mu.Lock()
		it, _ := f.st.item("etl")
		f.st.alertPaused(it, "pause_after_failures: 3 failures in a row", entry{proposedAt: 1_800_000_001_000_000_000})
		f.mu.Unlock()
	}
	alerts, eps := f.Alerts(AlertQuery{Job: "etl"})
	if len(alerts) != 1 || alerts[0].GetEvent() != "paused" || len(eps) != 1 || alerts[0].GetReason() == "" {
		t.Fatalf("alerts %v, episodes %v: want one paused page and its episode", alerts, eps)
	}
}

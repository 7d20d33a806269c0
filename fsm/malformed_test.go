package fsm_test

import (
	"errors"
	"strings"
	"testing"

	"google.golang.org/protobuf/proto"

	"github.com/raftcron/raftcron/fsm"
	pb "github.com/raftcron/raftcron/proto/raftcron/v1"
)

func TestMalformedCommandsChangeNothing(t *testing.T) {
	marshal := func(c *pb.Command) []byte {
		b, err := proto.Marshal(c)
		if err != nil {
			t.Fatalf("marshal: %v", err)
		}
		return b
	}
	noName := testSpec("")
	cases := []struct {
		name     string
		data     []byte
		mentions string // the field or cause the message must name
	}{
		{"garbage", []byte{0xff, 0xff, 0xff, 0xff}, "does not decode"},
		{"truncated field", []byte{0x52, 0x05, 0x0a}, "does not decode"},
		{"nil data", nil, "no known command"},
		{"empty command", marshal(&pb.Command{ProposedAtUnixNano: 5}), "no known command"},
		{"unknown command field", []byte{0xa0, 0x06, 0x01}, "no known command"},
		{"put without spec", marshal(putCmd(pb.PutMode_PUT_MODE_UPSERT, nil, 0)), "put_job.spec"},
		{"empty put", marshal(&pb.Command{Kind: &pb.Command_PutJob{}}), "put_job.spec"},
		{"put with empty name", marshal(upsertCmd(noName)), "put_job.spec.name"},
		{"put without mode", marshal(putCmd(pb.PutMode_PUT_MODE_UNSPECIFIED, testSpec("billing"), 0)), "put_job.mode"},
		{"delete with empty name", marshal(deleteCmd("", 0)), "delete_job.name"},
		{"pause with empty name", marshal(pauseCmd("", true, "x")), "set_paused.name"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			h := newHarness(t)
			h.mustOK(createCmd(testSpec("billing")))
			h.mustOK(deleteCmd("billing", 0))
			h.mustOK(createCmd(testSpec("reports")))
			before := h.f.StateHash()

			r := h.applyRaw(tc.data)
			if r.GetCode() != codeMalformed {
				t.Fatalf("code %v (%s), want MALFORMED", r.GetCode(), r.GetMessage())
			}
			if !strings.Contains(r.GetMessage(), tc.mentions) {
				t.Fatalf("message %q does not mention %q", r.GetMessage(), tc.mentions)
			}
			if err := fsm.ResultError(r); !errors.Is(err, fsm.ErrMalformed) || err.Error() != r.GetMessage() {
				t.Fatalf("ResultError = %v, want ErrMalformed reading %q", err, r.GetMessage())
			}
			if r.GetJob() != nil || r.GetChanged() || r.GetCreated() {
				t.Fatalf("malformed result %v carries a job or a change", r)
			}
			if h.f.StateHash() != before {
				t.Fatal("a malformed command changed the state")
			}
		})
	}
}

func TestApplyOfNilLogIsMalformed(t *testing.T) {
	f := fsm.New()
	r, ok := f.Apply(nil).(*pb.CommandResult)
	if !ok || r.GetCode() != codeMalformed {
		t.Fatalf("Apply(nil) = %v, want a MALFORMED result", r)
	}
}

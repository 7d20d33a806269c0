package gateway_test

import (
	"strings"
	"testing"

	"google.golang.org/protobuf/proto"

	"github.com/raftcron/raftcron/api/gateway"
	pb "github.com/raftcron/raftcron/proto/raftcron/v1"
)

// Specs in a list, as ApplyJobs carries them, go both ways in the file
// form, and the fields beside them stay proto JSON.
func TestMarshalerReadsAndWritesSpecsInLists(t *testing.T) {
	m := gateway.NewMarshaler()
	var req pb.ApplyJobsRequest
	in := `{"specs": [{"name": "a", "overlap": "skip"}, {"name": "b", "catchup": {"window": "1m"}}]}`
	if err := m.Unmarshal([]byte(in), &req); err != nil {
		t.Fatal(err)
	}
	if len(req.GetSpecs()) != 2 || req.GetSpecs()[0].GetOverlap() != pb.Overlap_OVERLAP_SKIP ||
		req.GetSpecs()[1].GetCatchup().GetWindow().AsDuration().String() != "1m0s" {
		t.Fatalf("decoded %v", &req)
	}
	out, err := m.Marshal(&req)
	if err != nil {
		t.Fatal(err)
	}
	if want := `{"specs":[{"name":"a","overlap":"skip"},{"name":"b","catchup":{"window":"1m0s"}}]}`; string(out) != want {
		t.Fatalf("encoded %s, want %s", out, want)
	}
	var back pb.ApplyJobsRequest
	if err := m.Unmarshal(out, &back); err != nil || !proto.Equal(&back, &req) {
		t.Fatalf("round trip: %v, %v", &back, err)
	}

	resp := &pb.ApplyJobsResponse{Results: []*pb.ApplyJobsResult{{Job: &pb.Job{Spec: req.GetSpecs()[0], Version: 7}, Created: true}}}
	if out, err := m.Marshal(resp); err != nil || string(out) != `{"results":[{"job":{"spec":{"name":"a","overlap":"skip"},"version":"7"},"created":true}]}` {
		t.Fatalf("response: %s, %v", out, err)
	}
}

// A body decodes into the request's spec pointer, as the gateway hands it.
func TestMarshalerDecodesIntoASpecPointer(t *testing.T) {
	var spec *pb.JobSpec
	if err := gateway.NewMarshaler().NewDecoder(strings.NewReader(`{"delivery": "at_most_once"}`)).Decode(&spec); err != nil {
		t.Fatal(err)
	}
	if spec.GetDelivery() != pb.Delivery_DELIVERY_AT_MOST_ONCE {
		t.Fatalf("decoded %v", spec)
	}
}

// A spec the file cannot write (an enum value only a newer release names,
// during a rolling upgrade) is written as proto JSON rather than failing
// the answer.
func TestMarshalerFallsBackToProtoJSONForAnUnnamedValue(t *testing.T) {
	out, err := gateway.NewMarshaler().Marshal(&pb.GetJobResponse{Job: &pb.Job{Spec: &pb.JobSpec{Name: "a", Overlap: 99}}})
	if err != nil || string(out) != `{"job":{"spec":{"name":"a","overlap":99}}}` {
		t.Fatalf("marshal: %s, %v", out, err)
	}
}

package jobfile

import (
	"encoding/json"
	"errors"
	"reflect"
	"testing"
	"time"

	"google.golang.org/protobuf/encoding/protojson"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/reflect/protoreflect"
	"google.golang.org/protobuf/types/known/durationpb"

	pb "github.com/raftcron/raftcron/proto/raftcron/v1"
)

// ToMap is the JSON form as plain values: what encoding/json writes from
// it is EncodeJSON's output, keys aside.
func TestToMap(t *testing.T) {
	got, err := ToMap(designSpec())
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]any{
		"name": "nightly-billing", "schedule": "0 2 * * *", "timezone": "Europe/Berlin",
		"http": map[string]any{
			"url": "http://billing.internal/run", "method": "POST",
			"headers": map[string]any{"X-Team": "billing"}, "body": `{"mode":"full"}`, "timeout": "30s",
		},
		"catchup":  map[string]any{"window": "10m0s", "policy": "all"},
		"overlap":  "skip",
		"delivery": "at_least_once",
		"retry":    map[string]any{"max_attempts": uint64(3), "initial_backoff": "1s", "max_backoff": "1m0s"},
		"deadline": "30m0s", "start_at": "2026-12-01T00:00:00Z", "end_at": "2027-12-01T00:00:00Z",
		"labels":        map[string]any{"team": "billing"},
		"history_limit": uint64(10),
	}
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("ToMap:\n got  %#v\n want %#v", got, want)
	}
	var viaMap, viaFile any
	data, _ := json.Marshal(got)
	file, err := EncodeJSON(designSpec())
	if err != nil {
		t.Fatal(err)
	}
	if json.Unmarshal(data, &viaMap) != nil || json.Unmarshal(file, &viaFile) != nil || !reflect.DeepEqual(viaMap, viaFile) {
		t.Fatalf("ToMap as JSON:\n%s\nEncodeJSON:\n%s", data, file)
	}
	if _, err := ToMap(nil); err == nil {
		t.Fatal("ToMap(nil): no error")
	}
}

// A client generated from the proto writes proto JSON (field names as
// declared, as the gateway does): its enum names, its durations ("1800s")
// and timestamps are read too.
func TestDecodeProtoJSON(t *testing.T) {
	for name, spec := range map[string]*pb.JobSpec{"design": designSpec(), "full": fullSpec()} {
		t.Run(name, func(t *testing.T) {
			data, err := protojson.MarshalOptions{UseProtoNames: true}.Marshal(spec)
			if err != nil {
				t.Fatal(err)
			}
			got, err := FromJSON(data)
			if err != nil {
				t.Fatalf("FromJSON(%s): %v", data, err)
			}
			if !proto.Equal(got, spec) {
				t.Fatalf("FromJSON(%s)\n got  %v\n want %v", data, got, spec)
			}
		})
	}
	got := decodeOne(t, "overlap: OVERLAP_BUFFER_ONE\ndelivery: DELIVERY_UNSPECIFIED\ncatchup: {policy: CATCHUP_POLICY_NONE, window: 60s}\n")
	want := &pb.JobSpec{Overlap: pb.Overlap_OVERLAP_BUFFER_ONE,
		Catchup: &pb.Catchup{Policy: pb.CatchupPolicy_CATCHUP_POLICY_NONE, Window: durationpb.New(time.Minute)}}
	assertSpecs(t, []*pb.JobSpec{got}, want)
}

func TestFromMapAndFromJSONErrors(t *testing.T) {
	cases := map[string]struct {
		err  func() error
		want string
	}{
		"unknown field": {func() error {
			_, err := FromMap(map[string]any{"name": "a", "retry": map[string]any{"max_attempt": 3.0}})
			return err
		}, `retry: unknown field "max_attempt" (did you mean "max_attempts"?)`},
		"fraction for an integer": {func() error {
			_, err := FromMap(map[string]any{"history_limit": 2.5})
			return err
		}, `history_limit: want a non-negative integer, got number 2.5`},
		"enum out of both spellings": {func() error {
			_, err := FromJSON([]byte(`{"overlap": "Skip"}`))
			return err
		}, `overlap: unknown value "Skip" (want skip, allow, buffer_one or cancel_other)`},
		"list of jobs": {func() error {
			_, err := FromJSON([]byte(`[{"name": "a"}]`))
			return err
		}, `want a job object, got a list`},
		"trailing data": {func() error {
			_, err := FromJSON([]byte(`{"name": "a"} {}`))
			return err
		}, `invalid JSON: data after the job object`},
		"broken JSON": {func() error {
			_, err := FromJSON([]byte(`{"name": `))
			return err
		}, `invalid JSON: unexpected EOF`},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			if err := tc.err(); err == nil || err.Error() != tc.want {
				t.Fatalf("got %v, want %q", err, tc.want)
			}
		})
	}
	if _, err := FromJSON([]byte("{")); !errors.Is(err, ErrInvalidJSON) {
		t.Fatalf("got %v, want ErrInvalidJSON", err)
	}
	got, err := FromJSON([]byte(`{"name": "a", "history_limit": 1e1, "labels": {"n": 1.10}}`))
	want := &pb.JobSpec{Name: "a", HistoryLimit: 10, Labels: map[string]string{"n": "1.10"}}
	if err != nil || !proto.Equal(got, want) {
		t.Fatalf("FromJSON: %v, %v; want %v", got, err, want)
	}
}

// Value renders one field's value as ToMap does, and refuses a kind
// outside the rules instead of guessing.
func TestValue(t *testing.T) {
	spec := &pb.JobSpec{
		Overlap: pb.Overlap_OVERLAP_BUFFER_ONE,
		Catchup: &pb.Catchup{Window: durationpb.New(90 * time.Second)},
		Retry:   &pb.Retry{MaxAttempts: 3},
	}
	m := spec.ProtoReflect()
	field := func(md protoreflect.MessageDescriptor, name string) protoreflect.FieldDescriptor {
		return md.Fields().ByName(protoreflect.Name(name))
	}
	catchup := spec.GetCatchup().ProtoReflect()
	retry := spec.GetRetry().ProtoReflect()
	for _, tc := range []struct {
		fd   protoreflect.FieldDescriptor
		v    protoreflect.Value
		want any
	}{
		{field(m.Descriptor(), "overlap"), m.Get(field(m.Descriptor(), "overlap")), "buffer_one"},
		{field(m.Descriptor(), "delivery"), m.Get(field(m.Descriptor(), "delivery")), ""},
		{field(catchup.Descriptor(), "window"), catchup.Get(field(catchup.Descriptor(), "window")), "1m30s"},
		{field(retry.Descriptor(), "max_attempts"), retry.Get(field(retry.Descriptor(), "max_attempts")), uint64(3)},
	} {
		if got, err := Value(tc.fd, tc.v); err != nil || got != tc.want {
			t.Errorf("Value(%s) = %#v, %v; want %#v", tc.fd.Name(), got, err, tc.want)
		}
	}
	tok := (&pb.AclToken{SecretHash: []byte{1}}).ProtoReflect()
	hash := field(tok.Descriptor(), "secret_hash")
	if _, err := Value(hash, tok.Get(hash)); !errors.Is(err, ErrUnsupported) {
		t.Errorf("Value of a bytes field: %v, want ErrUnsupported", err)
	}
}

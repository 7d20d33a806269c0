package jobfile

import (
	"errors"
	"math"
	"strings"
	"testing"
	"time"

	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/types/known/durationpb"
	"google.golang.org/protobuf/types/known/timestamppb"

	pb "github.com/raftcron/raftcron/proto/raftcron/v1"
)

// fullSpec sets every field, with values that stress quoting and precision.
func fullSpec() *pb.JobSpec {
	return &pb.JobSpec{
		Name:     "nightly-billing.v2",
		Schedule: "*/10 * * * * *",
		Timezone: "America/Argentina/Buenos_Aires",
		Http: &pb.HttpTarget{
			Url:          "https://billing.internal:8443/run?mode=full&x=1#frag",
			Method:       "PUT",
			Headers:      map[string]string{"X-Team": "billing", "Authorization": "Bearer: abc", "X-Num": "123"},
			Body:         "{\"mode\": \"full\"}\nline two: yes\n  indented\t<tag> & 'quote' ü",
			Timeout:      durationpb.New(1500 * time.Millisecond),
			SuccessCodes: []uint32{200, 202, 204},
			KeepResponse: true,
		},
		Exec: &pb.ExecTarget{
			Command: []string{"/usr/local/bin/prune", "--days", "30", "", "- dash", "yes", "null", "# hash"},
			Env:     map[string]string{"A": "b", "EMPTY": "", "TRUE": "true"},
			Dir:     "/var/tmp",
			Timeout: durationpb.New(0),
		},
		Worker: &pb.WorkerTarget{
			Pool:    "batch",
			Tags:    map[string]string{"region": "eu", "gpu": "true"},
			Command: []string{"/usr/local/bin/render", "--frames", "1-100"},
			Handler: "charge-cards",
			Payload: "{\"mode\": \"full\"}\n  two: 2",
			Env:     map[string]string{"A": "b"},
			Dir:     "/srv/render",
			Timeout: durationpb.New(45 * time.Second),
		},
		Catchup:  &pb.Catchup{Window: durationpb.New(time.Minute), Policy: pb.CatchupPolicy_CATCHUP_POLICY_LATEST},
		Overlap:  pb.Overlap_OVERLAP_CANCEL_OTHER,
		Delivery: pb.Delivery_DELIVERY_AT_MOST_ONCE,
		Retry: &pb.Retry{
			MaxAttempts:    7,
			InitialBackoff: durationpb.New(250 * time.Millisecond),
			MaxBackoff:     durationpb.New(90*time.Minute + time.Nanosecond),
		},
		Deadline:     durationpb.New(36 * time.Hour),
		Paused:       true,
		PauseNote:    "waiting for: the migration #42",
		StartAt:      timestamppb.New(time.Date(2026, 12, 1, 0, 0, 0, 123456789, time.UTC)),
		EndAt:        timestamppb.New(time.Date(9999, 12, 31, 23, 59, 59, 0, time.UTC)),
		Labels:       map[string]string{"team": "billing", "tier": "1", "on": "no"},
		HistoryLimit: math.MaxUint32,
	}
}

func minimalSpec() *pb.JobSpec {
	return &pb.JobSpec{Name: "a", Schedule: "@hourly"}
}

func TestRoundTrip(t *testing.T) {
	specs := map[string]*pb.JobSpec{
		"full":    fullSpec(),
		"minimal": minimalSpec(),
		"empty":   {},
		"design":  designSpec(),
		"empty targets": {
			Http: &pb.HttpTarget{}, Exec: &pb.ExecTarget{}, Worker: &pb.WorkerTarget{}, Catchup: &pb.Catchup{}, Retry: &pb.Retry{},
		},
	}
	encoders := map[string]func(...*pb.JobSpec) ([]byte, error){"yaml": EncodeYAML, "json": EncodeJSON}
	for name, spec := range specs {
		for format, encode := range encoders {
			t.Run(name+"/"+format, func(t *testing.T) {
				data, err := encode(spec)
				if err != nil {
					t.Fatalf("encode: %v", err)
				}
				got, err := Decode(data)
				if err != nil {
					t.Fatalf("Decode(%s): %v", data, err)
				}
				if len(got) != 1 || !proto.Equal(got[0], spec) {
					t.Fatalf("round trip changed the spec\nfile:\n%s\ngot  %v\nwant %v", data, got, spec)
				}
			})
		}
	}
}

func TestRoundTripList(t *testing.T) {
	for format, encode := range map[string]func(...*pb.JobSpec) ([]byte, error){"yaml": EncodeYAML, "json": EncodeJSON} {
		t.Run(format, func(t *testing.T) {
			data, err := encode(minimalSpec(), fullSpec(), designSpec())
			if err != nil {
				t.Fatalf("encode: %v", err)
			}
			trimmed := strings.TrimSpace(string(data))
			if !strings.HasPrefix(trimmed, "-") && !strings.HasPrefix(trimmed, "[") {
				t.Errorf("three specs did not encode as a list:\n%s", data)
			}
			got, err := Decode(data)
			if err != nil {
				t.Fatalf("Decode: %v", err)
			}
			assertSpecs(t, got, minimalSpec(), fullSpec(), designSpec())
		})
	}
}

// Encoding omits empty fields and writes durations as time.Duration does;
// the exact text matters because `job get -o yaml` shows it to people.
func TestEncodeYAMLText(t *testing.T) {
	spec := minimalSpec()
	spec.Catchup = &pb.Catchup{Window: durationpb.New(time.Minute), Policy: pb.CatchupPolicy_CATCHUP_POLICY_ALL}
	spec.Deadline = durationpb.New(0)
	spec.StartAt = timestamppb.New(time.Date(2026, 12, 1, 1, 2, 3, 0, time.UTC))
	data, err := EncodeYAML(spec)
	if err != nil {
		t.Fatal(err)
	}
	want := `name: a
schedule: '@hourly'
catchup:
  window: 1m0s
  policy: all
deadline: 0s
start_at: "2026-12-01T01:02:03Z"
`
	if string(data) != want {
		t.Errorf("EncodeYAML:\n%s\nwant:\n%s", data, want)
	}
}

func TestEncodeJSONText(t *testing.T) {
	spec := minimalSpec()
	spec.Http = &pb.HttpTarget{Url: "http://x/?a=1&b=<2>", Timeout: durationpb.New(90 * time.Second)}
	data, err := EncodeJSON(spec)
	if err != nil {
		t.Fatal(err)
	}
	want := `{
  "name": "a",
  "schedule": "@hourly",
  "http": {
    "url": "http://x/?a=1&b=<2>",
    "timeout": "1m30s"
  }
}
`
	if string(data) != want {
		t.Errorf("EncodeJSON:\n%s\nwant:\n%s", data, want)
	}
}

func TestEncodeRejectsWhatCannotRoundTrip(t *testing.T) {
	withSpec := func(mutate func(*pb.JobSpec)) *pb.JobSpec {
		s := minimalSpec()
		mutate(s)
		return s
	}
	cases := map[string]struct {
		specs []*pb.JobSpec
		want  string
	}{
		"unknown overlap number": {[]*pb.JobSpec{withSpec(func(s *pb.JobSpec) { s.Overlap = 99 })},
			"overlap: unknown value 99 (want skip, allow, buffer_one or cancel_other)"},
		"unknown policy in list": {[]*pb.JobSpec{minimalSpec(), withSpec(func(s *pb.JobSpec) { s.Catchup = &pb.Catchup{Policy: 7} })},
			"jobs[1].catchup.policy: unknown value 7 (want all, latest or none)"},
		"duration beyond time.Duration": {[]*pb.JobSpec{withSpec(func(s *pb.JobSpec) { s.Deadline = &durationpb.Duration{Seconds: 10_000_000_000} })},
			"deadline: duration 10000000000s 0ns out of range"},
		"duration with mixed signs": {[]*pb.JobSpec{withSpec(func(s *pb.JobSpec) { s.Retry = &pb.Retry{MaxBackoff: &durationpb.Duration{Seconds: 1, Nanos: -1}} })},
			"retry.max_backoff: duration 1s -1ns out of range"},
		"timestamp beyond year 9999": {[]*pb.JobSpec{withSpec(func(s *pb.JobSpec) { s.EndAt = &timestamppb.Timestamp{Seconds: 253402300800} })},
			"end_at: invalid timestamp: "},
		"nil spec": {[]*pb.JobSpec{nil}, "nil job spec"},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			for _, encode := range []func(...*pb.JobSpec) ([]byte, error){EncodeYAML, EncodeJSON} {
				data, err := encode(tc.specs...)
				if err == nil {
					t.Fatalf("encoded %q, want error %q", data, tc.want)
				}
				if !strings.HasPrefix(err.Error(), tc.want) {
					t.Errorf("error %q, want prefix %q", err, tc.want)
				}
			}
		})
	}
	if _, err := EncodeYAML(); !errors.Is(err, ErrNoSpecs) {
		t.Errorf("EncodeYAML(): got %v, want ErrNoSpecs", err)
	}
	if _, err := EncodeJSON(); !errors.Is(err, ErrNoSpecs) {
		t.Errorf("EncodeJSON(): got %v, want ErrNoSpecs", err)
	}
}

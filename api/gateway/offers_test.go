package gateway

import (
	"bytes"
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"strconv"
	"strings"
	"testing"
	"time"

	"google.golang.org/protobuf/encoding/protojson"
	"google.golang.org/protobuf/types/known/durationpb"
	"google.golang.org/protobuf/types/known/timestamppb"

	pb "github.com/raftcron/raftcron/proto/raftcron/v1"
)

// A poll's answer reads exactly as proto JSON writes it, once proto JSON's
// random spacing is compacted away: field names, order, escapes, times,
// durations, 64-bit integers and sorted map keys.
func TestPollAnswerIsProtoJSON(t *testing.T) {
	// A field the writer does not know would go missing from every answer.
	if n := (&pb.AttemptOffer{}).ProtoReflect().Descriptor().Fields().Len(); n != 14 {
		t.Fatalf("AttemptOffer has %d fields, offers.go writes 14: teach it the others", n)
	}
	if n := (&pb.PollAttemptsResponse{}).ProtoReflect().Descriptor().Fields().Len(); n != 1 {
		t.Fatalf("PollAttemptsResponse has %d fields, offers.go writes 1", n)
	}
	rng := rand.New(rand.NewPCG(1, 2))
	m := NewMarshaler()
	for i := range 500 {
		r := &pb.PollAttemptsResponse{}
		for range rng.IntN(4) {
			r.Offers = append(r.Offers, randomOffer(rng))
		}
		got, err := m.Marshal(r)
		if err != nil {
			t.Fatalf("case %d: %v", i, err)
		}
		want, err := protojson.MarshalOptions{UseProtoNames: true}.Marshal(r)
		if err != nil {
			t.Fatalf("case %d: proto JSON: %v", i, err)
		}
		var compact bytes.Buffer
		if err := json.Compact(&compact, want); err != nil {
			t.Fatal(err)
		}
		if !bytes.Equal(got, compact.Bytes()) {
			t.Fatalf("case %d:\n got %s\nwant %s", i, got, compact.Bytes())
		}
	}
}

// What proto JSON refuses, it still refuses: the answer falls back to it.
func TestPollAnswerProtoJSONRefusesIsRefused(t *testing.T) {
	for name, o := range map[string]*pb.AttemptOffer{
		"job":             {Job: "a\xffb"},
		"env key":         {Env: map[string]string{"\xff": "x"}},
		"env value":       {Env: map[string]string{"K": "\xfe"}},
		"slot":            {Slot: &timestamppb.Timestamp{Seconds: 1 << 40}},
		"deadline":        {Deadline: &timestamppb.Timestamp{Nanos: -1}},
		"limit":           {Limit: &durationpb.Duration{Seconds: 1, Nanos: -1}},
		"lease":           {Lease: &durationpb.Duration{Seconds: 400_000_000_000}},
		"idempotency_key": {RunId: "ok", IdempotencyKey: "\xc0"},
	} {
		r := &pb.PollAttemptsResponse{Offers: []*pb.AttemptOffer{{RunId: "r"}, o}}
		if _, ok := marshalOffers(r); ok {
			t.Errorf("%s: written without proto JSON", name)
		}
		if out, err := NewMarshaler().Marshal(r); err == nil {
			t.Errorf("%s: written as %s, want proto JSON's error", name, out)
		}
	}
}

// BenchmarkMarshalPollAnswer writes a full poll's answer: 1,000 offers as a
// leader makes them.
func BenchmarkMarshalPollAnswer(b *testing.B) {
	r := &pb.PollAttemptsResponse{}
	now := timestamppb.Now()
	for i := range 1000 {
		job := fmt.Sprintf("bench-%d", i)
		run := job + "-1795000000"
		token := strconv.Itoa(100_000 + i)
		r.Offers = append(r.Offers, &pb.AttemptOffer{
			RunId: run, Job: job, Slot: now, Attempt: 1, Token: uint64(100_000 + i),
			Env: map[string]string{
				"RAFTCRON_ATTEMPT": "1", "RAFTCRON_FENCING_TOKEN": token, "RAFTCRON_IDEMPOTENCY_KEY": job + "/2026-11-28T11:32:56Z",
				"RAFTCRON_JOB": job, "RAFTCRON_RUN_ID": run, "RAFTCRON_SCHEDULED_AT": "2026-11-28T11:32:56Z",
			},
			Deadline: now, LeaseExpires: now, Handler: "record", IdempotencyKey: job + "/2026-11-28T11:32:56Z",
			Limit: durationpb.New(time.Hour), Lease: durationpb.New(30 * time.Second),
		})
	}
	for name, marshal := range map[string]func() ([]byte, error){
		"gateway":    func() ([]byte, error) { return NewMarshaler().Marshal(r) },
		"proto JSON": func() ([]byte, error) { return protojson.MarshalOptions{UseProtoNames: true}.Marshal(r) },
	} {
		b.Run(name, func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				if _, err := marshal(); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

func randomOffer(rng *rand.Rand) *pb.AttemptOffer {
	o := &pb.AttemptOffer{
		RunId:          randomString(rng),
		Job:            randomString(rng),
		Attempt:        uint32(rng.IntN(3)) * rng.Uint32(),
		Token:          uint64(rng.IntN(2)) * rng.Uint64(),
		Payload:        randomString(rng),
		Signature:      randomString(rng),
		Handler:        randomString(rng),
		IdempotencyKey: randomString(rng),
		Slot:           randomTime(rng),
		Deadline:       randomTime(rng),
		LeaseExpires:   randomTime(rng),
		Limit:          randomDuration(rng),
		Lease:          randomDuration(rng),
	}
	if rng.IntN(3) > 0 {
		o.Env = map[string]string{}
		for range rng.IntN(8) {
			o.Env[randomString(rng)] = randomString(rng)
		}
	}
	return o
}

func randomString(rng *rand.Rand) string {
	pieces := []string{"", "a", "RAFTCRON_JOB", `"`, `\`, "\n", "\t", "\b", "\f", "\r", "\x00", "\x1f", "\x7f", "<&>", "é", "日本", "\u2028", "😀", "/"}
	var b strings.Builder
	for range rng.IntN(6) {
		b.WriteString(pieces[rng.IntN(len(pieces))])
	}
	return b.String()
}

func randomTime(rng *rand.Rand) *timestamppb.Timestamp {
	if rng.IntN(4) == 0 {
		return nil
	}
	nanos := []int32{0, 1, 500_000_000, 123_000, 999_999_999, 120_000_000}[rng.IntN(6)]
	return &timestamppb.Timestamp{Seconds: rng.Int64N(253402300799), Nanos: nanos}
}

func randomDuration(rng *rand.Rand) *durationpb.Duration {
	if rng.IntN(4) == 0 {
		return nil
	}
	secs := rng.Int64N(100_000)
	nanos := []int32{0, 1, 500_000_000, 123_000, 999_999_999}[rng.IntN(5)]
	if rng.IntN(3) == 0 {
		secs, nanos = -secs, -nanos
	}
	return &durationpb.Duration{Seconds: secs, Nanos: nanos}
}

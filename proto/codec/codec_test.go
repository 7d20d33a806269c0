package codec

import (
	"fmt"
	"math/rand/v2"
	"strconv"
	"strings"
	"testing"
	"time"

	"google.golang.org/grpc/encoding"
	"google.golang.org/grpc/mem"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/reflect/protoreflect"
	"google.golang.org/protobuf/reflect/protoregistry"
	"google.golang.org/protobuf/types/known/timestamppb"

	pb "github.com/raftcron/raftcron/proto/raftcron/v1"
)

// generatedMessages are raftcron's messages that have generated code.
func generatedMessages(t *testing.T) []protoreflect.MessageType {
	t.Helper()
	var out []protoreflect.MessageType
	protoregistry.GlobalTypes.RangeMessages(func(mt protoreflect.MessageType) bool {
		if mt.Descriptor().ParentFile().Package() == "raftcron.v1" {
			if _, ok := mt.New().Interface().(generated); ok {
				out = append(out, mt)
			}
		}
		return true
	})
	// The messages proto/buf.gen.vtproto.yaml names, and those they hold.
	for _, want := range []proto.Message{&pb.ConnectRequest{}, &pb.ConnectResponse{}, &pb.PollAttemptsResponse{}, &pb.BatchCompleteAttemptsRequest{}, &pb.AttemptOffer{}, &pb.WorkerAttempt{}} {
		if _, ok := want.(generated); !ok {
			t.Fatalf("%T has no generated code: run make proto", want)
		}
	}
	return out
}

// TestGeneratedIsProto writes and reads random messages of every type with
// generated code both ways, and fails when the two disagree: a field the
// generated code does not know (make proto not run after a change to a
// .proto file) is lost on the way.
func TestGeneratedIsProto(t *testing.T) {
	r := rand.New(rand.NewPCG(1, 2))
	for _, mt := range generatedMessages(t) {
		for range 200 {
			m := mt.New()
			fill(r, m, 5)
			msg := m.Interface()
			vt := msg.(generated)
			if got, want := vt.SizeVT(), proto.Size(msg); got != want {
				t.Fatalf("%s: SizeVT %d, proto.Size %d", mt.Descriptor().FullName(), got, want)
			}
			raw := make([]byte, vt.SizeVT())
			if _, err := vt.MarshalToSizedBufferVT(raw); err != nil {
				t.Fatal(err)
			}
			back := mt.New().Interface()
			if err := proto.Unmarshal(raw, back); err != nil {
				t.Fatalf("%s: proto reads the generated code's bytes: %v", mt.Descriptor().FullName(), err)
			}
			if !proto.Equal(msg, back) {
				t.Fatalf("%s: written by the generated code, read by proto:\n%v\nwant\n%v", mt.Descriptor().FullName(), back, msg)
			}
			std, err := proto.Marshal(msg)
			if err != nil {
				t.Fatal(err)
			}
			back = mt.New().Interface()
			if err := back.(generated).UnmarshalVT(std); err != nil {
				t.Fatalf("%s: the generated code reads proto's bytes: %v", mt.Descriptor().FullName(), err)
			}
			if !proto.Equal(msg, back) {
				t.Fatalf("%s: written by proto, read by the generated code:\n%v\nwant\n%v", mt.Descriptor().FullName(), back, msg)
			}
		}
	}
}

// fill sets every field of m at random (one member of each oneof), depth
// levels of messages deep.
func fill(r *rand.Rand, m protoreflect.Message, depth int) {
	fields := m.Descriptor().Fields()
	for i := range fields.Len() {
		fd := fields.Get(i)
		if o := fd.ContainingOneof(); o != nil && !o.IsSynthetic() {
			if o.Fields().Get(r.IntN(o.Fields().Len())) != fd || r.IntN(4) == 0 {
				continue
			}
		}
		switch {
		case fd.IsMap():
			if depth == 0 && fd.MapValue().Kind() == protoreflect.MessageKind {
				continue
			}
			mp := m.Mutable(fd).Map()
			for range r.IntN(4) {
				v := mp.NewValue()
				if fd.MapValue().Kind() == protoreflect.MessageKind {
					fill(r, v.Message(), depth-1)
				} else {
					v = scalar(r, fd.MapValue())
				}
				mp.Set(scalar(r, fd.MapKey()).MapKey(), v)
			}
		case fd.IsList():
			if depth == 0 && fd.Kind() == protoreflect.MessageKind {
				continue
			}
			l := m.Mutable(fd).List()
			for range r.IntN(4) {
				if fd.Kind() == protoreflect.MessageKind {
					e := l.NewElement()
					fill(r, e.Message(), depth-1)
					l.Append(e)
				} else {
					l.Append(scalar(r, fd))
				}
			}
		case fd.Kind() == protoreflect.MessageKind:
			if depth > 0 && r.IntN(4) != 0 {
				fill(r, m.Mutable(fd).Message(), depth-1)
			}
		default:
			if r.IntN(4) != 0 {
				m.Set(fd, scalar(r, fd))
			}
		}
	}
}

func scalar(r *rand.Rand, fd protoreflect.FieldDescriptor) protoreflect.Value {
	switch fd.Kind() {
	case protoreflect.BoolKind:
		return protoreflect.ValueOfBool(r.IntN(2) == 1)
	case protoreflect.EnumKind:
		vals := fd.Enum().Values()
		return protoreflect.ValueOfEnum(vals.Get(r.IntN(vals.Len())).Number())
	case protoreflect.Int32Kind, protoreflect.Sint32Kind, protoreflect.Sfixed32Kind:
		return protoreflect.ValueOfInt32(int32(r.Uint32()))
	case protoreflect.Int64Kind, protoreflect.Sint64Kind, protoreflect.Sfixed64Kind:
		return protoreflect.ValueOfInt64(int64(r.Uint64()))
	case protoreflect.Uint32Kind, protoreflect.Fixed32Kind:
		return protoreflect.ValueOfUint32(r.Uint32())
	case protoreflect.Uint64Kind, protoreflect.Fixed64Kind:
		return protoreflect.ValueOfUint64(r.Uint64())
	case protoreflect.FloatKind:
		return protoreflect.ValueOfFloat32(r.Float32())
	case protoreflect.DoubleKind:
		return protoreflect.ValueOfFloat64(r.NormFloat64())
	case protoreflect.StringKind:
		return protoreflect.ValueOfString(text(r))
	case protoreflect.BytesKind:
		b := make([]byte, r.IntN(8))
		for i := range b {
			b[i] = byte(r.Uint32())
		}
		return protoreflect.ValueOfBytes(b)
	}
	panic("no random value for " + fd.Kind().String())
}

func text(r *rand.Rand) string {
	const runes = "ab-_/:é€😀\x00\n\""
	var b strings.Builder
	rs := []rune(runes)
	for range r.IntN(12) {
		b.WriteRune(rs[r.IntN(len(rs))])
	}
	return b.String()
}

func TestCodecRoundTrip(t *testing.T) {
	for _, c := range []struct {
		name  string
		codec encoding.CodecV2
	}{{"server", Server}, {"client", Client}} {
		t.Run(c.name, func(t *testing.T) {
			// Large enough for a pooled buffer, and one message without
			// generated code, which goes through gRPC's own codec.
			offers := &pb.PollAttemptsResponse{}
			for i := range 300 {
				offers.Offers = append(offers.Offers, &pb.AttemptOffer{RunId: fmt.Sprintf("run-%d", i), Token: uint64(i), Env: map[string]string{"K": "v"}})
			}
			for _, msg := range []proto.Message{offers, &pb.PollAttemptsRequest{Id: "w1", Max: 3, Tags: map[string]string{"zone": "a"}}} {
				data, err := c.codec.Marshal(msg)
				if err != nil {
					t.Fatal(err)
				}
				back := msg.ProtoReflect().New().Interface()
				// Whatever the message held before is gone after, as with proto.Unmarshal.
				fill(rand.New(rand.NewPCG(3, 4)), back.ProtoReflect(), 1)
				if err := c.codec.Unmarshal(data, back); err != nil {
					t.Fatal(err)
				}
				data.Free()
				if !proto.Equal(msg, back) {
					t.Fatalf("%T: what was read back is not what was written", msg)
				}
			}
		})
	}
}

// TestServerRefusesInvalidUTF8 reads a request whose string is not UTF-8:
// the server refuses it as proto does, a client reading an answer takes it.
func TestServerRefusesInvalidUTF8(t *testing.T) {
	req := &pb.BatchCompleteAttemptsRequest{Outcomes: []*pb.CompleteAttemptRequest{{RunId: "run-\xff"}}}
	raw, err := req.MarshalVT()
	if err != nil {
		t.Fatal(err)
	}
	if err := Server.Unmarshal(mem.BufferSlice{mem.SliceBuffer(raw)}, &pb.BatchCompleteAttemptsRequest{}); err == nil {
		t.Fatal("the server codec read a string that is not UTF-8")
	}
	var got pb.BatchCompleteAttemptsRequest
	if err := Client.Unmarshal(mem.BufferSlice{mem.SliceBuffer(raw)}, &got); err != nil {
		t.Fatalf("client: %v", err)
	}
}

// BenchmarkPollAnswer writes and reads back a poll's answer of 1,000
// offers, as a node answering a poll and the gateway reading its answer do:
// through gRPC's proto codec, and through this package's.
func BenchmarkPollAnswer(b *testing.B) {
	answer := &pb.PollAttemptsResponse{}
	slot := timestamppb.New(time.Date(2026, 11, 28, 11, 32, 56, 0, time.UTC))
	for i := range 1000 {
		job := fmt.Sprintf("bench-%d", i)
		run := job + "-1795000000"
		answer.Offers = append(answer.Offers, &pb.AttemptOffer{
			RunId: run, Job: job, Slot: slot, Attempt: 1, Token: uint64(100_000 + i),
			Env: map[string]string{
				"RAFTCRON_ATTEMPT": "1", "RAFTCRON_FENCING_TOKEN": strconv.Itoa(100_000 + i),
				"RAFTCRON_IDEMPOTENCY_KEY": job + "/2026-11-28T11:32:56Z", "RAFTCRON_JOB": job,
				"RAFTCRON_RUN_ID": run, "RAFTCRON_SCHEDULED_AT": "2026-11-28T11:32:56Z",
			},
		})
	}
	for _, c := range []struct {
		name  string
		codec encoding.CodecV2
	}{{"proto", fallback()}, {"codec", Client}} {
		b.Run(c.name, func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				data, err := c.codec.Marshal(answer)
				if err != nil {
					b.Fatal(err)
				}
				var back pb.PollAttemptsResponse
				if err := c.codec.Unmarshal(data, &back); err != nil {
					b.Fatal(err)
				}
				data.Free()
			}
		})
	}
}

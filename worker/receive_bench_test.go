package worker

import (
	"context"
	"fmt"
	"io"
	"testing"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/types/known/durationpb"

	pb "github.com/raftcron/raftcron/proto/raftcron/v1"

	"github.com/raftcron/raftcron/internal/proc"
)

// BenchmarkReceive is the worker's end of BenchmarkBurst without the
// network or the hub: a tick's 10,000 offers arrive in ten encoded
// messages of 1,000, and the session's own loops decode and take them,
// run a handler that returns at once for each, and encode the
// acknowledgements and outcomes they send. One op is the whole burst. It
// reports the process's CPU time per attempt besides the wall time (on a
// shared machine the former moves much less with the load), and the
// messages the worker sent.
func BenchmarkReceive(b *testing.B) {
	const attempts, perMessage = 10_000, 1000
	w, err := New(Config{ID: "w1", Pool: "batch", Addrs: []string{"127.0.0.1:1"}, Concurrency: attempts})
	if err != nil {
		b.Fatal(err)
	}
	if err := w.Handle("record", func(context.Context, Run) error { return nil }); err != nil {
		b.Fatal(err)
	}
	ctx, cancel := context.WithCancelCause(context.Background())
	stream := &burstStream{ctx: ctx, in: make(chan []byte, attempts/perMessage), sent: make(chan int, attempts)}
	s := w.newSession(ctx, cancel, stream, time.Hour)
	done := make(chan struct{}, 2)
	go func() { s.receive(); done <- struct{}{} }()
	go func() { s.sendLoop(); done <- struct{}{} }()
	defer func() {
		cancel(nil)
		<-done
		<-done
	}()
	burst := offers(b, attempts, perMessage)
	cpu, measured := proc.SelfCPU()
	for b.Loop() {
		for _, m := range burst {
			stream.in <- m
		}
		timeout := time.After(time.Minute)
		for n := 0; n < attempts; {
			select {
			case k := <-stream.sent:
				n += k
			case <-timeout:
				b.Fatalf("%d of %d outcomes sent within a minute", n, attempts)
			}
		}
	}
	b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N*attempts), "ns/attempt")
	b.ReportMetric(float64(stream.sends)/float64(b.N), "sends/op")
	if end, ok := proc.SelfCPU(); measured && ok {
		b.ReportMetric(float64((end-cpu).Nanoseconds())/float64(b.N*attempts), "cpu-ns/attempt")
	}
}

// offers are a burst's attempts, encoded as the hub sends them.
func offers(b *testing.B, attempts, perMessage int) [][]byte {
	target := &pb.WorkerTarget{Pool: "batch", Handler: "record", Timeout: durationpb.New(time.Hour)}
	slot := time.Date(2026, 11, 22, 1, 2, 3, 0, time.UTC)
	var out [][]byte
	for first := 0; first < attempts; first += perMessage {
		batch := make([]*pb.WorkerAttempt, 0, perMessage)
		for tok := uint64(first + 1); tok <= uint64(first+perMessage); tok++ {
			job := fmt.Sprintf("work-%06d", tok)
			batch = append(batch, &pb.WorkerAttempt{
				Job: job, RunId: fmt.Sprintf("%s-%d", job, tok), SlotUnix: slot.Unix(), Attempt: 1, Token: tok,
				IdempotencyKey: job + "/" + slot.Format(time.RFC3339), Target: target,
				Deadline: durationpb.New(time.Hour),
			})
		}
		raw, err := proto.Marshal(&pb.ConnectResponse{Msg: &pb.ConnectResponse_Offers{Offers: &pb.WorkerOffers{Attempts: batch}}})
		if err != nil {
			b.Fatal(err)
		}
		out = append(out, raw)
	}
	return out
}

// burstStream is the worker's end of a stream, in memory: Recv decodes
// what the benchmark queues, Send encodes and counts the outcomes.
type burstStream struct {
	grpc.ClientStream // nil: a session calls Send and Recv only
	ctx               context.Context
	in                chan []byte
	sent              chan int // outcomes, per message sent
	buf               []byte   // reused, as gRPC reuses its buffers
	sends             int
}

func (f *burstStream) Recv() (*pb.ConnectResponse, error) {
	select {
	case raw := <-f.in:
		m := new(pb.ConnectResponse)
		return m, proto.Unmarshal(raw, m)
	case <-f.ctx.Done():
		return nil, io.EOF
	}
}

// Send is called by the send loop alone.
func (f *burstStream) Send(m *pb.ConnectRequest) error {
	f.sends++
	var err error
	if f.buf, err = (proto.MarshalOptions{}).MarshalAppend(f.buf[:0], m); err != nil {
		return err
	}
	if n := len(m.GetOutcomes().GetOutcomes()); n > 0 {
		f.sent <- n
	}
	return nil
}

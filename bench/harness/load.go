package harness

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/credentials/insecure"
	"google.golang.org/grpc/status"

	pb "github.com/raftcron/raftcron/proto/raftcron/v1"
)

// clientWindow is the fixed flow-control window of the load's
// connections. A fixed window turns off gRPC's bandwidth-delay estimation,
// which pings the server after almost every response on a connection that
// carries one call at a time: CPU on both ends that a real client need not
// spend, taken from the same two cores as the nodes.
const clientWindow = 1 << 20

// Dial opens n gRPC connections to addr (one per simulated client).
func Dial(addr string, n int) ([]*grpc.ClientConn, error) {
	conns := make([]*grpc.ClientConn, 0, n)
	for range n {
		cc, err := grpc.NewClient("passthrough:///"+addr,
			grpc.WithTransportCredentials(insecure.NewCredentials()),
			grpc.WithStaticStreamWindowSize(clientWindow),
			grpc.WithStaticConnWindowSize(clientWindow))
		if err != nil {
			CloseAll(conns)
			return nil, err
		}
		conns = append(conns, cc)
	}
	return conns, nil
}

// CloseAll closes every connection.
func CloseAll(conns []*grpc.ClientConn) {
	for _, cc := range conns {
		_ = cc.Close()
	}
}

// Op is one request of a load: i is its sequence number (0-based).
type Op func(ctx context.Context, jobs pb.JobServiceClient, i int) error

// Load describes a closed-loop load: Clients workers, each with its own
// connection, issue requests back to back.
type Load struct {
	Conns []*grpc.ClientConn
	// Count stops after this many requests (0: no limit).
	Count int
	// Duration stops after this long (0: no limit). One of Count and
	// Duration must be set.
	Duration time.Duration
	// Timeout bounds each request.
	Timeout time.Duration
	// Progress, if set, is called about every ProgressEvery with the
	// requests finished so far.
	Progress      func(done int, elapsed time.Duration)
	ProgressEvery time.Duration
}

// LoadResult is what a load achieved.
type LoadResult struct {
	Clients    int     `json:"clients"`
	Ops        int     `json:"ops"`
	Errors     int     `json:"errors"`
	ElapsedS   float64 `json:"elapsed_s"`
	OpsPerSec  float64 `json:"ops_per_sec"`
	Latency    Dist    `json:"latency"`
	FirstError string  `json:"first_error,omitempty"`
}

// Run executes op under the load until Count or Duration is reached or ctx
// ends.
func (l Load) Run(ctx context.Context, op Op) (LoadResult, error) {
	if l.Count <= 0 && l.Duration <= 0 {
		return LoadResult{}, errors.New("load: neither Count nor Duration set")
	}
	if len(l.Conns) == 0 {
		return LoadResult{}, errors.New("load: no connections")
	}
	if l.Timeout <= 0 {
		l.Timeout = 10 * time.Second
	}
	// start precedes the load's deadline, so that a request cut by that
	// deadline is always seen as cut (time.Since(start) >= Duration), even
	// before runCtx itself reports it.
	start := time.Now()
	runCtx := ctx
	var cancel context.CancelFunc
	if l.Duration > 0 {
		runCtx, cancel = context.WithTimeout(ctx, l.Duration)
	} else {
		runCtx, cancel = context.WithCancel(ctx)
	}
	defer cancel()

	var (
		next, done, errs atomic.Int64
		firstErr         atomic.Pointer[string]
		wg               sync.WaitGroup
		lat              = make([][]time.Duration, len(l.Conns))
	)
	stopProgress := l.startProgress(&done)
	for w, cc := range l.Conns {
		jobs := pb.NewJobServiceClient(cc)
		wg.Go(func() {
			for runCtx.Err() == nil {
				i := int(next.Add(1) - 1)
				if l.Count > 0 && i >= l.Count {
					return
				}
				rctx, rcancel := context.WithTimeout(runCtx, l.Timeout)
				t0 := time.Now()
				err := op(rctx, jobs, i)
				d := time.Since(t0)
				rcancel()
				if err != nil {
					if runCtx.Err() != nil || (l.Duration > 0 && time.Since(start) >= l.Duration) {
						return // cut by the end of the load, not a failure
					}
					errs.Add(1)
					msg := err.Error()
					firstErr.CompareAndSwap(nil, &msg)
					continue
				}
				lat[w] = append(lat[w], d)
				done.Add(1)
			}
		})
	}
	wg.Wait()
	elapsed := time.Since(start)
	stopProgress()
	var all []time.Duration
	for _, l := range lat {
		all = append(all, l...)
	}
	res := LoadResult{
		Clients:  len(l.Conns),
		Ops:      int(done.Load()),
		Errors:   int(errs.Load()),
		ElapsedS: elapsed.Seconds(),
		Latency:  Summarize(all),
	}
	res.OpsPerSec = float64(res.Ops) / elapsed.Seconds()
	if p := firstErr.Load(); p != nil {
		res.FirstError = *p
	}
	if ctx.Err() != nil {
		return res, ctx.Err()
	}
	return res, nil
}

func (l Load) startProgress(done *atomic.Int64) (stop func()) {
	if l.Progress == nil {
		return func() {}
	}
	every := l.ProgressEvery
	if every <= 0 {
		every = 10 * time.Second
	}
	quit := make(chan struct{})
	finished := make(chan struct{})
	start := time.Now()
	go func() {
		defer close(finished)
		t := time.NewTicker(every)
		defer t.Stop()
		for {
			select {
			case <-quit:
				return
			case <-t.C:
				l.Progress(int(done.Load()), time.Since(start))
			}
		}
	}()
	return func() {
		close(quit)
		<-finished
	}
}

// Retry calls f until it succeeds, fails with an error that is not worth
// retrying, or attempts run out. Unavailable (no leader yet, a leader
// change) is retried after a pause; so is ResourceExhausted.
func Retry(ctx context.Context, attempts int, f func() error) error {
	var err error
	for a := range attempts {
		if err = f(); err == nil {
			return nil
		}
		switch status.Code(err) {
		case codes.Unavailable, codes.ResourceExhausted:
		default:
			return err
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(time.Duration(a+1) * 100 * time.Millisecond):
		}
	}
	return fmt.Errorf("after %d attempts: %w", attempts, err)
}

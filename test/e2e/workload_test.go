//go:build e2e

package e2e

import (
	"context"
	"fmt"
	"math/rand/v2"
	"strings"
	"sync"
	"time"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/types/known/durationpb"

	pb "github.com/raftcron/raftcron/proto/raftcron/v1"
)

// The stable jobs of every scenario: webhooks into the sink every 1, 2 and
// 3 seconds, never changed, for the run invariants (G1-G4).
var stableJobs = []JobInfo{
	{Name: "e2e-1s", Period: 1},
	{Name: "e2e-2s", Period: 2},
	{Name: "e2e-3s", Period: 3, AtMostOnce: true},
}

// catchupWindow of the stable jobs; every fault of a scenario is shorter.
const catchupWindow = time.Minute

func stableSpec(j JobInfo, sinkURL string) *pb.JobSpec {
	delivery := pb.Delivery_DELIVERY_AT_LEAST_ONCE
	if j.AtMostOnce {
		delivery = pb.Delivery_DELIVERY_AT_MOST_ONCE
	}
	return &pb.JobSpec{
		Name:         j.Name,
		Schedule:     fmt.Sprintf("@every %ds", j.Period),
		Http:         &pb.HttpTarget{Url: sinkURL + "/" + j.Name, Timeout: durationpb.New(10 * time.Second)},
		Catchup:      &pb.Catchup{Window: durationpb.New(catchupWindow), Policy: pb.CatchupPolicy_CATCHUP_POLICY_ALL},
		Delivery:     delivery,
		HistoryLimit: 1000, // the ledger keeps every run of a scenario
	}
}

// createStableJobs registers the stable jobs and returns them with their
// generation and creation cursor filled in.
func (s *scenario) createStableJobs() {
	s.t.Helper()
	jobs := stableJobs
	if len(s.workers) > 0 {
		jobs = append(append([]JobInfo(nil), jobs...), workerJobs...)
	}
	for _, j := range jobs {
		s.addStableJob(j)
	}
}

// addStableJob registers j and adds it, with its generation and creation
// cursor, to the jobs whose every slot is checked.
func (s *scenario) addStableJob(j JobInfo) {
	s.t.Helper()
	spec := stableSpec(j, s.sinkURL)
	if j.Worker {
		spec = workerSpec(j, s.sinkURL)
	}
	var job *pb.Job
	s.retry("create "+j.Name, func(ctx context.Context, n *node) error {
		res, err := s.c.jobs(n).CreateJob(ctx, &pb.CreateJobRequest{Spec: spec})
		if status.Code(err) == codes.AlreadyExists {
			got, gerr := s.c.jobs(n).GetJob(ctx, &pb.GetJobRequest{Name: j.Name})
			if gerr != nil {
				return gerr
			}
			job = got.GetJob()
			return nil
		}
		job = res.GetJob()
		return err
	})
	j.Generation = job.GetGeneration()
	j.Created = job.GetCreatedAt().AsTime().Unix()
	if cur := job.GetStatus().GetCursorUnix(); cur > 0 {
		j.Created = cur
	}
	s.jobs = append(s.jobs, j)
}

// retry calls fn on the leader until it succeeds or 30 s pass; a
// registration must not fail on a leader change.
func (s *scenario) retry(what string, fn func(ctx context.Context, n *node) error) {
	s.t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for {
		n := s.c.leader()
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		err := fn(ctx, n)
		cancel()
		if err == nil {
			return
		}
		if time.Now().After(deadline) {
			s.t.Fatalf("%s: %v", what, err)
		}
		time.Sleep(200 * time.Millisecond)
	}
}

// churn is the registry workload: clients creating, updating, deleting
// and reading jobs on random nodes, recorded for the linearizability check.
type churn struct {
	c     *cluster
	start time.Time
	url   string
	stop  chan struct{}
	wg    sync.WaitGroup

	// mu guards ops.
	mu  sync.Mutex
	ops []RegistryOp
}

// Churn shape: about 30 operations a second over a few names, so that
// every name sees concurrent operations.
const (
	churnClients = 4
	churnKeys    = 6
	churnPeriod  = 130 * time.Millisecond // per client
	churnTimeout = 2 * time.Second
)

func startChurn(c *cluster, start time.Time, seed int64, sinkURL string) *churn {
	ch := &churn{c: c, start: start, url: sinkURL, stop: make(chan struct{})}
	for i := range churnClients {
		ch.wg.Add(1)
		go ch.client(i, rand.New(rand.NewPCG(uint64(seed), uint64(i))))
	}
	return ch
}

// halt stops the clients and returns the history.
func (ch *churn) halt() []RegistryOp {
	select {
	case <-ch.stop:
	default:
		close(ch.stop)
	}
	ch.wg.Wait()
	ch.mu.Lock()
	defer ch.mu.Unlock()
	return append([]RegistryOp(nil), ch.ops...)
}

func (ch *churn) client(id int, rng *rand.Rand) {
	defer ch.wg.Done()
	known := map[string]uint64{} // last version this client saw per key
	for seq := 0; ; seq++ {
		began := time.Now()
		select {
		case <-ch.stop:
			return
		default:
		}
		nodes := ch.c.running()
		if len(nodes) > 0 {
			n := nodes[rng.IntN(len(nodes))]
			op := ch.pick(rng, id, seq, known)
			op.Node = n.ID
			ch.do(n, &op)
			switch {
			case op.Result == ResOK && op.Kind != OpDelete:
				known[op.Key] = op.Version
			case op.Result == ResOK || op.Result == ResNotFound:
				delete(known, op.Key)
			}
			if op.Result != resNotSent {
				ch.mu.Lock()
				ch.ops = append(ch.ops, op)
				ch.mu.Unlock()
			}
		}
		select {
		case <-ch.stop:
			return
		case <-time.After(max(churnPeriod-time.Since(began), 10*time.Millisecond)):
		}
	}
}

// pick chooses the next operation: reads 40%, creates 20%, updates 25%,
// deletes 15%; half the updates and a third of the deletes name the
// version the client last saw.
func (ch *churn) pick(rng *rand.Rand, client, seq int, known map[string]uint64) RegistryOp {
	op := RegistryOp{Client: client, Key: fmt.Sprintf("reg-%d", rng.IntN(churnKeys))}
	switch r := rng.IntN(100); {
	case r < 40:
		op.Kind = OpGet
	case r < 60:
		op.Kind = OpCreate
	case r < 85:
		op.Kind = OpUpdate
		if rng.IntN(2) == 0 {
			op.Expected = known[op.Key]
		}
	default:
		op.Kind = OpDelete
		if rng.IntN(3) == 0 {
			op.Expected = known[op.Key]
		}
	}
	if op.Kind == OpCreate || op.Kind == OpUpdate {
		op.Value = fmt.Sprintf("c%d-%d", client, seq)
	}
	return op
}

// resNotSent marks a call that never left the client (no connection):
// it cannot have taken effect and is not recorded.
const resNotSent Result = "not_sent"

func (ch *churn) spec(op *RegistryOp) *pb.JobSpec {
	return &pb.JobSpec{
		Name:     op.Key,
		Schedule: "0 0 1 1 *", // yearly: registered, never fires in a scenario
		Http:     &pb.HttpTarget{Url: ch.url + "/never"},
		Labels:   map[string]string{"v": op.Value},
	}
}

func (ch *churn) do(n *node, op *RegistryOp) {
	jobs := ch.c.jobs(n)
	ctx, cancel := context.WithTimeout(context.Background(), churnTimeout)
	defer cancel()
	op.Call = time.Since(ch.start).Nanoseconds()
	var job *pb.Job
	var err error
	switch op.Kind {
	case OpCreate:
		var res *pb.CreateJobResponse
		res, err = jobs.CreateJob(ctx, &pb.CreateJobRequest{Spec: ch.spec(op)})
		job = res.GetJob()
	case OpUpdate:
		var res *pb.UpdateJobResponse
		res, err = jobs.UpdateJob(ctx, &pb.UpdateJobRequest{Spec: ch.spec(op), ExpectedVersion: op.Expected})
		job = res.GetJob()
	case OpDelete:
		_, err = jobs.DeleteJob(ctx, &pb.DeleteJobRequest{Name: op.Key, ExpectedVersion: op.Expected})
	case OpGet:
		var res *pb.GetJobResponse
		res, err = jobs.GetJob(ctx, &pb.GetJobRequest{Name: op.Key})
		job = res.GetJob()
	}
	op.Return = time.Since(ch.start).Nanoseconds()
	op.Result = classify(err)
	if err != nil {
		op.Error = err.Error()
		return
	}
	op.Version = job.GetVersion()
	if op.Kind == OpGet {
		op.Got = job.GetSpec().GetLabels()["v"]
	}
}

// classify maps a call's error to its result. Only errors that say what
// the registry decided are definite; anything else may or may not have
// taken effect.
func classify(err error) Result {
	if err == nil {
		return ResOK
	}
	st := status.Convert(err)
	switch st.Code() {
	case codes.NotFound:
		return ResNotFound
	case codes.AlreadyExists:
		return ResExists
	case codes.FailedPrecondition:
		return ResMismatch
	case codes.Unavailable:
		// Our own client could not connect: the call never left. (A
		// node's failure to forward says something else first.)
		if strings.HasPrefix(st.Message(), "connection error") && strings.Contains(st.Message(), "while dialing") {
			return resNotSent
		}
	}
	return ResUnknown
}

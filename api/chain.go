package api

import (
	"context"
	"fmt"

	"google.golang.org/protobuf/reflect/protoreflect"

	"github.com/raftcron/raftcron/cluster"
	"github.com/raftcron/raftcron/fsm"
	"github.com/raftcron/raftcron/jobfile"
	pb "github.com/raftcron/raftcron/proto/raftcron/v1"
)

// ChainGraph is this node's graph of job dependencies (fsm.FSM).
type ChainGraph interface {
	// CheckDependencies applies the rules between jobs to a put of spec by
	// a caller of scope selector, with the put's chain limits.
	CheckDependencies(spec *pb.JobSpec, selector map[string]string, depth, fanout uint32) error
	// Graph is a job with its ancestors and descendants, or with name
	// empty every job in a chain; false if name is no job in the scope.
	Graph(name string, selector map[string]string) ([]fsm.GraphJob, bool)
	// ChildRuns lists the runs that name the run among their parents.
	ChildRuns(runID string) []*pb.RunRef
}

// chainsAllowed refuses a job with dependencies until the cluster runs the
// version that fires them (fsm.ChainsVersion).
func (j *jobService) chainsAllowed(field string, spec *pb.JobSpec) error {
	if len(spec.GetAfter()) == 0 || j.clusterVersion == nil {
		return nil
	}
	if v := j.clusterVersion(); v < fsm.ChainsVersion {
		return precondition(PreconditionClusterVersion, spec.GetName(), fmt.Sprintf(
			"%s.after: job %q: dependencies need cluster version %d, and the cluster runs %d: upgrade every voter; "+
				"the leader raises the version once they all apply it (cluster status shows it)",
			field, spec.GetName(), fsm.ChainsVersion, v))
	}
	return nil
}

// checkDependencies answers the rules between jobs before a put is
// proposed: a missing parent (NotFound), a cycle, a chain too deep or too
// wide (FailedPrecondition), each naming the jobs. The FSM checks them
// again when it applies the put, which decides.
func (j *jobService) checkDependencies(ctx context.Context, spec *pb.JobSpec) error {
	if len(spec.GetAfter()) == 0 || j.chains == nil {
		return nil
	}
	depth, fanout := j.limits.chainLimits()
	return statusOf(j.chains.CheckDependencies(spec, PrincipalFrom(ctx).Selector, depth, fanout))
}

// applyInWaves commits the puts of one ApplyJobs call so that a spec is
// applied after the specs of the same call it runs after: a file that
// holds a whole chain registers in any order. Each wave is one bulk of
// concurrent entries; a call without such dependencies is one wave. The
// FSM judges every put on its own (a parent still missing, a cycle within
// the call): its result says so. Results are in the order of cmds.
func (j *jobService) applyInWaves(ctx context.Context, writes []write, cmds []*pb.Command) ([]cluster.BulkResult, error) {
	waves := dependencyWaves(writes)
	if len(waves) == 1 {
		return j.applyBulk(ctx, cmds)
	}
	out := make([]cluster.BulkResult, len(cmds))
	for n, wave := range waves {
		batch := make([]*pb.Command, len(wave))
		for k, i := range wave {
			batch[k] = cmds[i]
		}
		res, err := j.applyBulk(ctx, batch)
		if err != nil && n == 0 {
			return nil, err // nothing proposed
		}
		for k, i := range wave {
			if err != nil {
				out[i] = cluster.BulkResult{Err: err}
			} else {
				out[i] = res[k]
			}
		}
	}
	return out, nil
}

// dependencyWaves splits writes into waves: the first holds every spec
// that runs after no other spec of the call, each later one the specs
// whose parents in the call are all in earlier waves; specs left over (a
// cycle within the call) go last, for the FSM to refuse.
func dependencyWaves(writes []write) [][]int {
	inCall := make(map[string]int, len(writes))
	for i, w := range writes {
		inCall[w.spec.GetName()] = i
	}
	wave := make([]int, len(writes)) // -1: not placed yet
	for i := range wave {
		wave[i] = -1
	}
	var waves [][]int
	for placed := 0; placed < len(writes); {
		var next []int
		for i, w := range writes {
			if wave[i] >= 0 || !parentsPlaced(w.spec, inCall, wave, len(waves)) {
				continue
			}
			next = append(next, i)
		}
		if len(next) == 0 { // a cycle within the call
			for i := range writes {
				if wave[i] < 0 {
					next = append(next, i)
				}
			}
		}
		for _, i := range next {
			wave[i] = len(waves)
		}
		placed += len(next)
		waves = append(waves, next)
	}
	return waves
}

// parentsPlaced reports whether every parent of spec in the call is in a
// wave before the current one.
func parentsPlaced(spec *pb.JobSpec, inCall map[string]int, wave []int, current int) bool {
	for _, d := range spec.GetAfter() {
		if p, ok := inCall[d.GetJob()]; ok && (wave[p] < 0 || wave[p] >= current) {
			return false
		}
	}
	return true
}

type chainService struct {
	pb.UnimplementedChainServiceServer
	barrier Barrier
	chains  ChainGraph
}

// NewChainService serves ChainService from d's Barrier and Chains
// (required).
func NewChainService(d Deps) pb.ChainServiceServer {
	d = d.withDefaults()
	return &chainService{barrier: d.Barrier, chains: d.Chains}
}

func (c *chainService) GetJobGraph(ctx context.Context, req *pb.GetJobGraphRequest) (*pb.GetJobGraphResponse, error) {
	if req.GetName() != "" {
		if err := validName(req.GetName()); err != nil {
			return nil, err
		}
	}
	if !req.GetStale() {
		if err := c.barrier.ReadBarrier(ctx); err != nil {
			return nil, statusOf(err)
		}
	}
	jobs, ok := c.chains.Graph(req.GetName(), PrincipalFrom(ctx).Selector)
	if !ok {
		return nil, hiddenJob(req.GetName())
	}
	out := make([]*pb.JobGraphNode, len(jobs))
	for i, g := range jobs {
		out[i] = graphNode(g)
	}
	return &pb.GetJobGraphResponse{Jobs: out}, nil
}

// graphNode is one job of the graph, its dependencies in the job file's
// words.
func graphNode(g fsm.GraphJob) *pb.JobGraphNode {
	n := &pb.JobGraphNode{Name: g.Name, Missing: g.Job == nil, Children: g.Children}
	if g.Job == nil {
		return n
	}
	spec := g.Job.GetSpec()
	for _, d := range spec.GetAfter() {
		n.After = append(n.After, &pb.JobGraphEdge{Job: d.GetJob(), On: fileWord(d.ProtoReflect(), "on")})
	}
	if len(n.After) > 0 {
		n.AfterMode = fileWord(spec.ProtoReflect(), "after_mode")
	}
	n.Schedule = spec.GetSchedule()
	n.Paused = spec.GetPaused()
	n.LastRunId = g.Job.GetStatus().GetLastRunId()
	n.LastOutcome = g.Job.GetStatus().GetLastOutcome()
	return n
}

// fileWord is the value of an enum field of m as the job file writes it.
func fileWord(m protoreflect.Message, field protoreflect.Name) string {
	fd := m.Descriptor().Fields().ByName(field)
	v, err := jobfile.Value(fd, m.Get(fd))
	if err != nil {
		return ""
	}
	s, _ := v.(string)
	return s
}

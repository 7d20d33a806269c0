package api

import (
	"context"
	"fmt"

	"google.golang.org/protobuf/reflect/protoreflect"

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

// allowDependencies refuses a job with dependencies until the cluster runs
// the version that fires them (fsm.ChainsVersion), and answers the rules
// between jobs before anything is proposed: a missing parent (NotFound), a
// cycle, a chain too deep or too wide (FailedPrecondition). The FSM checks
// them again when it applies the put, which decides.
func (j *jobService) allowDependencies(ctx context.Context, field string, spec *pb.JobSpec) error {
	if len(spec.GetAfter()) == 0 {
		return nil
	}
	if j.clusterVersion != nil {
		if v := j.clusterVersion(); v < fsm.ChainsVersion {
			return precondition(PreconditionClusterVersion, spec.GetName(), fmt.Sprintf(
				"%s.after: job %q: dependencies need cluster version %d, and the cluster runs %d: upgrade every voter; "+
					"the leader raises the version once they all apply it (cluster status shows it)",
				field, spec.GetName(), fsm.ChainsVersion, v))
		}
	}
	if j.chains == nil {
		return nil
	}
	depth, fanout := j.limits.chainLimits()
	return statusOf(j.chains.CheckDependencies(spec, PrincipalFrom(ctx).Selector, depth, fanout))
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

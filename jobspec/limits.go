package jobspec

import (
	"fmt"

	"google.golang.org/protobuf/proto"

	pb "github.com/raftcron/raftcron/proto/raftcron/v1"
)

// Limits bound one spec beyond the fixed rules of Validate. Each node's
// operator sets them; the node checks them before it proposes a spec. A
// zero field takes its default.
type Limits struct {
	// SpecBytes is the most a spec may take, encoded: every spec lives in
	// each node's memory, in every snapshot and in the Raft log.
	SpecBytes int
	// Headers caps http.headers, Env the env of a command (exec.env,
	// worker.env) and Args its command (program and arguments).
	Headers int
	Env     int
	Args    int
}

// DefaultLimits fit the largest body and URL Validate allows with room to
// spare, and the headers, variables and arguments of any real job.
var DefaultLimits = Limits{SpecBytes: 128 << 10, Headers: 64, Env: 128, Args: 256}

func (l Limits) withDefaults() Limits {
	or := func(v, def int) int {
		if v > 0 {
			return v
		}
		return def
	}
	return Limits{
		SpecBytes: or(l.SpecBytes, DefaultLimits.SpecBytes),
		Headers:   or(l.Headers, DefaultLimits.Headers),
		Env:       or(l.Env, DefaultLimits.Env),
		Args:      or(l.Args, DefaultLimits.Args),
	}
}

// Check reports every limit spec exceeds: nil or a *ValidationError whose
// violations name the field and the limit.
func (l Limits) Check(spec *pb.JobSpec) error {
	l = l.withDefaults()
	var v violations
	over := func(field string, n, limit int, unit string) {
		if n > limit {
			v.add(field, fmt.Sprintf("%d %s exceed the limit of %d %s", n, unit, limit, unit))
		}
	}
	over("http.headers", len(spec.GetHttp().GetHeaders()), l.Headers, "headers")
	over("exec.env", len(spec.GetExec().GetEnv()), l.Env, "variables")
	over("exec.command", len(spec.GetExec().GetCommand()), l.Args, "arguments")
	over("worker.env", len(spec.GetWorker().GetEnv()), l.Env, "variables")
	over("worker.command", len(spec.GetWorker().GetCommand()), l.Args, "arguments")
	over("spec", proto.Size(spec), l.SpecBytes, "bytes")
	if len(v) == 0 {
		return nil
	}
	return &ValidationError{Name: spec.GetName(), Violations: v}
}

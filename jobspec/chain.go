package jobspec

import (
	"fmt"

	pb "github.com/raftcron/raftcron/proto/raftcron/v1"
)

// MaxParents bounds a job's after list: a parent's completion is checked
// against every dependency of each of its children, in the entry that
// records it.
const MaxParents = 32

// HasDependencies reports whether the job runs after other jobs (after):
// it may then have no schedule of its own.
func HasDependencies(spec *pb.JobSpec) bool { return len(spec.GetAfter()) > 0 }

// checkDependencies checks after and the settings that go with it. The
// rules between jobs (a parent exists, no cycle, depth and fan-out) need
// the registry: the FSM checks them at apply.
func checkDependencies(v *violations, spec *pb.JobSpec) {
	after := spec.GetAfter()
	if len(after) == 0 {
		if spec.GetAfterMode() != pb.AfterMode_AFTER_MODE_UNSPECIFIED {
			v.add("after_mode", "is set only with after")
		}
		if spec.GetAfterWithin() != nil {
			v.add("after_within", "is set only with after")
		}
		if spec.GetAfterMissing() != pb.AfterMissing_AFTER_MISSING_UNSPECIFIED {
			v.add("after_missing", "is set only with after")
		}
		return
	}
	if len(after) > MaxParents {
		v.add("after", fmt.Sprintf("%d parents exceed the limit of %d", len(after), MaxParents))
	}
	seen := make(map[string]bool, len(after))
	for i, d := range after {
		field := fmt.Sprintf("after[%d]", i)
		switch job := d.GetJob(); {
		case job == "":
			v.add(field+".job", "required")
		case !validName(job):
			v.add(field+".job", NameRule)
		case job == spec.GetName():
			v.add(field+".job", "a job cannot run after itself")
		case seen[job]:
			v.add(field+".job", fmt.Sprintf("%q is named twice", job))
		}
		seen[d.GetJob()] = true
		if _, ok := pb.DependencyOn_name[int32(d.GetOn())]; !ok {
			v.add(field+".on", "must be one of success, failure, any")
		}
	}
	if _, ok := pb.AfterMode_name[int32(spec.GetAfterMode())]; !ok {
		v.add("after_mode", "must be one of all, any")
	}
	nonNegativeDuration(v, "after_within", spec.GetAfterWithin())
	if _, ok := pb.AfterMissing_name[int32(spec.GetAfterMissing())]; !ok {
		v.add("after_missing", "must be one of refuse, wait")
	}
}

// normalizeDependencies fills the settings of a job with dependencies: a
// dependency on success, after_mode all, after_missing refuse. A job
// without them gets none, so its stored spec and file stay as they were.
func normalizeDependencies(spec *pb.JobSpec) {
	if len(spec.GetAfter()) == 0 {
		return
	}
	for _, d := range spec.GetAfter() {
		if d != nil && d.On == pb.DependencyOn_DEPENDENCY_ON_UNSPECIFIED {
			d.On = pb.DependencyOn_DEPENDENCY_ON_SUCCESS
		}
	}
	if spec.AfterMode == pb.AfterMode_AFTER_MODE_UNSPECIFIED {
		spec.AfterMode = pb.AfterMode_AFTER_MODE_ALL
	}
	if spec.AfterMissing == pb.AfterMissing_AFTER_MISSING_UNSPECIFIED {
		spec.AfterMissing = pb.AfterMissing_AFTER_MISSING_REFUSE
	}
}

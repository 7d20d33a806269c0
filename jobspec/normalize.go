// Package jobspec holds the rules a job spec must follow and the defaults
// it gets, independent of how it arrived (gRPC, job file).
package jobspec

import (
	"strings"
	"time"

	"google.golang.org/protobuf/types/known/durationpb"

	pb "github.com/raftcron/raftcron/proto/raftcron/v1"
)

// Defaults filled by Normalize.
const (
	DefaultTimezone      = "UTC"
	DefaultMethod        = "POST"
	DefaultCatchupWindow = time.Minute
	DefaultHistoryLimit  = 10
)

// Normalize fills defaults in place so that a stored spec states every
// setting explicitly: what `job get` prints applies back unchanged.
// Normalizing twice changes nothing; nil and partial specs are fine.
func Normalize(spec *pb.JobSpec) {
	if spec == nil {
		return
	}
	spec.Schedule = strings.TrimSpace(spec.Schedule)
	spec.Timezone = strings.TrimSpace(spec.Timezone)
	if spec.Timezone == "" {
		spec.Timezone = DefaultTimezone
	}
	if spec.Http != nil {
		spec.Http.Method = strings.ToUpper(strings.TrimSpace(spec.Http.Method))
		if spec.Http.Method == "" {
			spec.Http.Method = DefaultMethod
		}
	}
	if spec.Catchup == nil {
		spec.Catchup = &pb.Catchup{}
	}
	if spec.Catchup.Window == nil {
		spec.Catchup.Window = durationpb.New(DefaultCatchupWindow)
	}
	if spec.Catchup.Policy == pb.CatchupPolicy_CATCHUP_POLICY_UNSPECIFIED {
		spec.Catchup.Policy = pb.CatchupPolicy_CATCHUP_POLICY_ALL
	}
	if spec.Overlap == pb.Overlap_OVERLAP_UNSPECIFIED {
		spec.Overlap = pb.Overlap_OVERLAP_SKIP
	}
	if spec.Delivery == pb.Delivery_DELIVERY_UNSPECIFIED {
		spec.Delivery = pb.Delivery_DELIVERY_AT_LEAST_ONCE
	}
	if spec.HistoryLimit == 0 {
		spec.HistoryLimit = DefaultHistoryLimit
	}
}

package api

import (
	"context"

	pb "github.com/raftcron/raftcron/proto/raftcron/v1"
)

type fenceService struct {
	pb.UnimplementedFenceServiceServer
	barrier Barrier
	reg     Registry
}

// NewFenceService serves FenceService from d's Barrier and Registry. Its answer is linearizable, yet only
// advisory: between the check and the caller's write a newer attempt may
// commit. The real fence is the guard at the resource, which compares the
// token atomically with the write.
func NewFenceService(d Deps) pb.FenceServiceServer {
	d = d.withDefaults()
	return &fenceService{barrier: d.Barrier, reg: d.Registry}
}

// CheckToken says whether token is still the latest committed for the job
// (token >= latest), and what the latest is.
func (s *fenceService) CheckToken(ctx context.Context, req *pb.CheckTokenRequest) (*pb.CheckTokenResponse, error) {
	if req.GetJob() == "" {
		return nil, fieldError("job", "required")
	}
	if err := validJobName("job", req.GetJob()); err != nil {
		return nil, err
	}
	if req.GetToken() == 0 {
		return nil, fieldError("token", "required: fencing tokens start at 1")
	}
	if err := statusOf(s.barrier.ReadBarrier(ctx)); err != nil {
		return nil, err
	}
	job, err := visibleJob(ctx, s.reg, req.GetJob())
	if err != nil {
		return nil, err
	}
	latest := job.GetStatus().GetLatestToken()
	return &pb.CheckTokenResponse{Current: req.GetToken() >= latest, LatestToken: latest}, nil
}

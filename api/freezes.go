package api

import (
	"context"
	"fmt"
	"time"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/raftcron/raftcron/fsm"
	"github.com/raftcron/raftcron/jobspec"
	pb "github.com/raftcron/raftcron/proto/raftcron/v1"
)

type freezeService struct {
	pb.UnimplementedFreezeServiceServer
	store  Store
	cals   Calendars
	now    func() time.Time
	audit  *AuditSwitch
	cluVer func() uint32
}

// NewFreezeService serves FreezeService from d's Store and Calendars
// (required), Audit, ClusterVersion and Now.
func NewFreezeService(d Deps) pb.FreezeServiceServer {
	d = d.withDefaults()
	return &freezeService{store: d.Store, cals: d.Calendars, now: d.Now, audit: d.Audit, cluVer: d.ClusterVersion}
}

func (f *freezeService) CreateFreeze(ctx context.Context, req *pb.CreateFreezeRequest) (*pb.CreateFreezeResponse, error) {
	in := req.GetFreeze()
	if err := jobspec.ValidateFreeze(in, f.now()); err != nil {
		return nil, invalidArgument(err, "freeze")
	}
	if err := allowVersion(ctx, f.store, f.cluVer, "freezes", fsm.CalendarsVersion); err != nil {
		return nil, err
	}
	fr := &pb.Freeze{Name: in.GetName(), From: in.GetFrom(), To: in.GetTo(), Selector: in.GetSelector(), Note: in.GetNote(), Defer: in.GetDefer()}
	if p := PrincipalFrom(ctx); !fsm.SelectorMatches(fr.GetSelector(), p.Selector) {
		return nil, status.Errorf(codes.PermissionDenied,
			"freeze.selector: freeze %q must carry the labels %s of ACL token %q, so that it matches only jobs the token sees",
			fr.GetName(), FormatSelector(p.Selector), p.Name)
	}
	res, err := commit(ctx, f.store, f.audit, &pb.Command{Kind: &pb.Command_CreateFreeze{CreateFreeze: &pb.CreateFreezeCommand{Freeze: fr}}})
	if err != nil {
		return nil, err
	}
	return &pb.CreateFreezeResponse{Freeze: res.GetFreeze()}, nil
}

func (f *freezeService) ListFreezes(ctx context.Context, req *pb.ListFreezesRequest) (*pb.ListFreezesResponse, error) {
	if err := readBarrier(ctx, f.store, req.GetStale()); err != nil {
		return nil, err
	}
	sel := PrincipalFrom(ctx).Selector
	var out []*pb.Freeze
	for _, fr := range f.cals.Freezes() {
		if fsm.FreezeVisible(fr, sel) {
			out = append(out, fr)
		}
	}
	return &pb.ListFreezesResponse{Freezes: out}, nil
}

func (f *freezeService) DeleteFreeze(ctx context.Context, req *pb.DeleteFreezeRequest) (*pb.DeleteFreezeResponse, error) {
	if err := validJobName("name", req.GetName()); err != nil {
		return nil, err
	}
	_, err := commit(ctx, f.store, f.audit, &pb.Command{Kind: &pb.Command_DeleteFreeze{DeleteFreeze: &pb.DeleteFreezeCommand{Name: req.GetName()}}})
	if err != nil {
		return nil, err
	}
	return &pb.DeleteFreezeResponse{}, nil
}

// allowVersion refuses what needs cluster version v (what: "calendars")
// until the cluster runs it: before, a voter of an older release may lead,
// which knows nothing of it and would apply the write as it understands
// it. The version is the committed one (see committedVersion).
func allowVersion(ctx context.Context, b Barrier, version func() uint32, what string, v uint32) error {
	if version == nil {
		return nil
	}
	got, err := committedVersion(ctx, b, version, v)
	if err != nil || got >= v {
		return err
	}
	return precondition(PreconditionClusterVersion, what, fmt.Sprintf(
		"%s need cluster version %d, and the cluster runs %d: upgrade every voter; "+
			"the leader raises the version once they all apply it (cluster status shows it)", what, v, got))
}

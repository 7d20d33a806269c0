package api

import (
	"slices"
	"testing"

	"google.golang.org/grpc/codes"

	pb "github.com/raftcron/raftcron/proto/raftcron/v1"
)

func TestCheckToken(t *testing.T) {
	h := newHarness(t)
	ctx := testCtx(t)
	h.store.putJob(&pb.Job{Spec: validSpec("billing"), Generation: 1, Version: 1, Status: &pb.JobStatus{LatestToken: 7}})
	h.store.putJob(&pb.Job{Spec: validSpec("fresh"), Generation: 1, Version: 1, Status: &pb.JobStatus{}})
	cases := []struct {
		job     string
		token   uint64
		current bool
		latest  uint64
	}{
		{"billing", 7, true, 7},
		{"billing", 8, true, 7},
		{"billing", 6, false, 7},
		{"billing", 1, false, 7},
		{"fresh", 1, true, 0},
	}
	for _, tc := range cases {
		barriers := h.store.barrierCount()
		resp, err := h.fence.CheckToken(ctx, &pb.CheckTokenRequest{Job: tc.job, Token: tc.token})
		if err != nil {
			t.Fatalf("CheckToken(%s, %d): %v", tc.job, tc.token, err)
		}
		if resp.GetCurrent() != tc.current || resp.GetLatestToken() != tc.latest {
			t.Errorf("CheckToken(%s, %d) = current %v latest %d, want %v %d",
				tc.job, tc.token, resp.GetCurrent(), resp.GetLatestToken(), tc.current, tc.latest)
		}
		if h.store.barrierCount() != barriers+1 {
			t.Errorf("CheckToken(%s, %d) answered without a read barrier", tc.job, tc.token)
		}
	}

	_, err := h.fence.CheckToken(ctx, &pb.CheckTokenRequest{Job: "nope", Token: 1})
	wantCode(t, err, codes.NotFound)

	bad := []struct {
		name  string
		req   *pb.CheckTokenRequest
		field string
	}{
		{"zero token", &pb.CheckTokenRequest{Job: "billing"}, "token"},
		{"no job", &pb.CheckTokenRequest{Token: 1}, "job"},
		{"bad job", &pb.CheckTokenRequest{Job: "Bad Name", Token: 1}, "job"},
	}
	for _, tc := range bad {
		t.Run(tc.name, func(t *testing.T) {
			_, err := h.fence.CheckToken(testCtx(t), tc.req)
			st := wantCode(t, err, codes.InvalidArgument)
			if fields := badRequestFields(t, st); !slices.Equal(fields, []string{tc.field}) {
				t.Errorf("fields %v, want [%s]", fields, tc.field)
			}
		})
	}
}

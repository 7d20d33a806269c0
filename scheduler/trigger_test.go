package scheduler

import (
	"context"
	"testing"
	"time"

	pb "github.com/raftcron/raftcron/proto/raftcron/v1"
)

func TestTriggerCarriesThePrincipal(t *testing.T) {
	h := newHarness(t)
	h.putJob(withOverlap(pb.Overlap_OVERLAP_SKIP))
	h.lead()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if _, err := h.s.Trigger(ctx, "job", "r1", false, "deploy-bot"); err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, b := range h.prop.fireBatches() {
		for _, f := range b.GetFires() {
			if f.GetKind() == pb.FireKind_FIRE_KIND_MANUAL {
				got = append(got, f.GetPrincipal())
			}
		}
	}
	if len(got) != 1 || got[0] != "deploy-bot" {
		t.Fatalf("manual fires carry principals %q, want [deploy-bot]", got)
	}
}

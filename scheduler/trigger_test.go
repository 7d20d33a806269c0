package scheduler

import (
	"context"
	"reflect"
	"testing"
	"time"

	"google.golang.org/protobuf/types/known/durationpb"

	pb "github.com/raftcron/raftcron/proto/raftcron/v1"
)

func TestTriggerCarriesThePrincipal(t *testing.T) {
	h := newHarness(t)
	h.putJob(withOverlap(pb.Overlap_OVERLAP_SKIP))
	h.lead()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if _, err := h.s.Trigger(ctx, &pb.Fire{Job: "job", RequestId: "r1", Principal: "deploy-bot"}); err != nil {
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

// A manual run's attempts carry a key of their own run, retries included,
// while a scheduled slot's retries keep the slot's key: every attempt of
// one run shares one key, and no other run has it.
func TestRetriesKeepTheirRunsIdempotencyKey(t *testing.T) {
	h := newHarness(t)
	s := spec("job", "@every 1h")
	s.Retry = &pb.Retry{MaxAttempts: 2, InitialBackoff: durationpb.New(time.Second)}
	h.putJob(s)
	h.exec.setOutcome("job", pb.RunState_RUN_STATE_FAILED)
	h.clock.Set(t0.Add(time.Hour))
	h.lead()
	h.step(2 * time.Second)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	res, err := h.s.Trigger(ctx, &pb.Fire{Job: "job", RequestId: "r1"})
	if err != nil || !res.GetAccepted() {
		t.Fatalf("trigger: %v, %v", res, err)
	}
	h.step(2 * time.Second)

	keys := map[string][]string{} // run id -> key of each attempt
	for _, a := range h.exec.startedOf("job") {
		keys[a.RunID] = append(keys[a.RunID], a.IdempotencyKey())
	}
	slotKey := "job/" + t0.Add(time.Hour).Format(time.RFC3339)
	manual := res.GetRunId()
	want := map[string][]string{}
	for _, r := range h.runs("job") {
		key := slotKey
		if r.GetId() == manual {
			key = "job/manual/" + manual
		}
		want[r.GetId()] = []string{key, key}
	}
	if len(want) != 2 || !reflect.DeepEqual(keys, want) {
		t.Fatalf("keys of the attempts by run: %v, want %v", keys, want)
	}
}

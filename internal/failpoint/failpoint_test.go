//go:build !failpoints

package failpoint

import (
	"context"
	"testing"
)

func TestOffBuildDoesNothing(t *testing.T) {
	t.Setenv(EnvVar, DispatchBeforeCommit+","+SkipSlotDedupe+","+StaleReads+","+ClockOffset+"=30s")
	ctx := context.Background()
	if Built || On(DispatchBeforeCommit) || On(SkipSlotDedupe) || On(StaleReads) ||
		Offset() != 0 || RewindCursor("a", 10) != 10 || HoldAfterCommit(ctx, 1) != ctx {
		t.Fatal("a hook acts in a build without the failpoints tag")
	}
}

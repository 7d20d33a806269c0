package principal_test

import (
	"context"
	"testing"

	"github.com/raftcron/raftcron/internal/principal"
)

func TestFromDefaultsToAnonymous(t *testing.T) {
	ctx := context.Background()
	if got := principal.From(ctx); got != principal.Anonymous {
		t.Fatalf("From(no principal) = %q, want %q", got, principal.Anonymous)
	}
	if got := principal.From(principal.With(ctx, "")); got != principal.Anonymous {
		t.Fatalf("From(empty principal) = %q, want %q", got, principal.Anonymous)
	}
	if got := principal.From(principal.With(ctx, "deploy-bot")); got != "deploy-bot" {
		t.Fatalf("From = %q, want deploy-bot", got)
	}
}

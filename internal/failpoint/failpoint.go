//go:build !failpoints

package failpoint

import (
	"context"
	"time"
)

// Built reports whether this binary was built with the failpoints tag.
const Built = false

// On reports whether the named hook is enabled: never in this build.
func On(string) bool { return false }

// Value is the value the named hook was enabled with: none in this build.
func Value(string) string { return "" }

// Offset is how far the scheduler's clock is moved: zero in this build.
func Offset() time.Duration { return 0 }

// RewindCursor is the cursor the scheduler plans job from: the cursor
// itself in this build.
func RewindCursor(_ string, cursor int64) int64 { return cursor }

// HoldAfterCommit returns ctx unchanged in this build.
func HoldAfterCommit(ctx context.Context, _ uint64) context.Context { return ctx }

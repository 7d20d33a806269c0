//go:build failpoints

package failpoint

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"time"
)

// Built reports whether this binary was built with the failpoints tag.
const Built = true

// PauseMax bounds a pause-after-commit hold, so that a test that dies
// mid-pause leaves no node stuck.
const PauseMax = 30 * time.Second

// rewindSlots is how far back, in seconds, skip-slot-dedupe makes the
// scheduler plan from.
const rewindSlots = 3

// enabled maps each hook named in RAFTCRON_FAILPOINTS to its value ("" for
// a bare name). Read once: the environment of a node does not change.
var enabled = sync.OnceValue(func() map[string]string {
	return parse(os.Getenv(EnvVar))
})

func parse(s string) map[string]string {
	m := map[string]string{}
	for _, item := range strings.Split(s, ",") {
		item = strings.TrimSpace(item)
		if item == "" {
			continue
		}
		name, value, _ := strings.Cut(item, "=")
		m[strings.TrimSpace(name)] = strings.TrimSpace(value)
	}
	return m
}

// hits remembers which hooks have announced their first use.
var hits sync.Map

// hit writes one line to stderr the first time a hook acts, so a test can
// tell from a node's log that the hook is wired.
func hit(name, detail string) {
	if _, seen := hits.LoadOrStore(name, true); seen {
		return
	}
	logf("%s hit (%s)", name, detail)
}

func logf(format string, args ...any) {
	fmt.Fprintf(os.Stderr, "raftcron failpoint: "+format+"\n", args...)
}

// On reports whether the named hook is enabled.
func On(name string) bool {
	_, ok := enabled()[name]
	if ok {
		hit(name, "enabled")
	}
	return ok
}

// Value is the value the named hook was enabled with ("" for a bare name
// or a hook not enabled).
func Value(name string) string {
	v, ok := enabled()[name]
	if ok {
		hit(name, v)
	}
	return v
}

// Offset is how far the scheduler's clock is moved (clock-offset).
func Offset() time.Duration {
	v, ok := enabled()[ClockOffset]
	if !ok {
		return 0
	}
	d, err := time.ParseDuration(v)
	if err != nil {
		logf("%s=%q: %v; no offset", ClockOffset, v, err)
		return 0
	}
	hit(ClockOffset, d.String())
	return d
}

// rewound remembers the jobs RewindCursor has rewound in this process.
var rewound sync.Map

// RewindCursor is the cursor the scheduler plans job from. Under
// skip-slot-dedupe, the first plan of each job in this process starts a
// few seconds before the real cursor, as a leader that trusted its own
// memory instead of the replicated cursor would after a failover: it
// proposes slots already fired. Once per job keeps the damage countable.
func RewindCursor(job string, cursor int64) int64 {
	if cursor <= 0 || !On(SkipSlotDedupe) {
		return cursor
	}
	if _, done := rewound.LoadOrStore(job, true); done {
		return cursor
	}
	return cursor - rewindSlots
}

// HoldAfterCommit holds the attempt carrying token if DIR/arm exists
// (see the PauseAfterCommit name), and returns the context to deliver it
// under: detached from ctx's cancellation if it was held.
func HoldAfterCommit(ctx context.Context, token uint64) context.Context {
	dir, ok := enabled()[PauseAfterCommit]
	if !ok || dir == "" {
		return ctx
	}
	// Removing the arm file claims it: exactly one attempt is held.
	if err := os.Remove(filepath.Join(dir, "arm")); err != nil {
		return ctx
	}
	held := filepath.Join(dir, "held")
	tmp := held + ".tmp"
	if err := os.WriteFile(tmp, []byte(strconv.FormatUint(token, 10)), 0o644); err != nil {
		logf("%s: %v", PauseAfterCommit, err)
		return ctx
	}
	if err := os.Rename(tmp, held); err != nil {
		logf("%s: %v", PauseAfterCommit, err)
		return ctx
	}
	logf("%s: holding token %d", PauseAfterCommit, token)
	deadline := time.Now().Add(PauseMax)
	for time.Now().Before(deadline) {
		if _, err := os.Stat(held); errors.Is(err, fs.ErrNotExist) {
			break
		}
		time.Sleep(2 * time.Millisecond)
	}
	logf("%s: releasing token %d", PauseAfterCommit, token)
	return context.WithoutCancel(ctx)
}

package jobspec

import (
	"strings"
	"time"

	"github.com/raftcron/raftcron/schedule"
)

// checkTimezone returns the job's location, or UTC when the name is bad
// (after recording why), so the other checks can go on.
func checkTimezone(v *violations, name string) *time.Location {
	name = strings.TrimSpace(name)
	loc, err := schedule.LoadLocation(name)
	if err != nil {
		v.add("timezone", "unknown time zone "+quote(name)+": "+err.Error())
		return time.UTC
	}
	return loc
}

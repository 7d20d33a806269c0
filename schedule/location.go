package schedule

import (
	"errors"
	"regexp"
	"strings"
	"sync"
	"time"
)

// ErrUnknownZone rejects zone names that are not IANA zone names.
var ErrUnknownZone = errors.New("must be an IANA time zone name such as UTC or Europe/Berlin (the host's zone is never used)")

// zoneNameRE is the shape of IANA zone names (Europe/Berlin, Etc/GMT+5,
// America/Argentina/Buenos_Aires, EST5EDT). It also keeps file-system
// tricks away from time.LoadLocation.
var zoneNameRE = regexp.MustCompile(`^[A-Za-z][A-Za-z0-9_+-]*(/[A-Za-z0-9_+-]+)*$`)

const maxZoneName = 64

// hostZoneNames resolve through time.LoadLocation but name the host's own
// setting or zoneinfo-directory artefacts, not IANA zones.
var hostZoneNames = map[string]bool{"Local": true, "localtime": true, "posixrules": true}

// locations caches loaded zones: time.LoadLocation reads and parses a file
// on every call, and a *time.Location is immutable once built. Only names
// that loaded are cached, so the cache is bounded by the zone database.
var locations sync.Map // string -> *time.Location

// LoadLocation returns the zone for a job's timezone field: "" is UTC, any
// other name must be an IANA zone name. The host's local zone is never
// returned.
func LoadLocation(name string) (*time.Location, error) {
	if name == "" || name == "UTC" {
		return time.UTC, nil
	}
	if loc, ok := locations.Load(name); ok {
		return loc.(*time.Location), nil
	}
	if len(name) > maxZoneName || !zoneNameRE.MatchString(name) || hostZoneNames[name] ||
		strings.HasPrefix(name, "posix/") || strings.HasPrefix(name, "right/") {
		return nil, ErrUnknownZone
	}
	loc, err := time.LoadLocation(name)
	if err != nil {
		return nil, ErrUnknownZone
	}
	locations.Store(name, loc)
	return loc, nil
}

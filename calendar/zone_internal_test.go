package calendar

import (
	"testing"
	"time"
)

// The stored offsets agree with the zone database at every instant from
// 1970 to 2100, and instant inverts wall time where the wall time occurs.
func TestStoredOffsetsMatchTheZone(t *testing.T) {
	for _, name := range []string{"Europe/Berlin", "America/New_York", "Australia/Lord_Howe", "America/Santiago", "Asia/Tehran", "Pacific/Apia"} {
		loc, err := time.LoadLocation(name)
		if err != nil {
			t.Fatal(err)
		}
		z, err := zoneOf(Offsets(loc))
		if err != nil {
			t.Fatal(err)
		}
		for u := offsetsFrom.Unix(); u < offsetsUntil.Unix(); u += 3*3600 + 17*60 + 11 {
			_, want := time.Unix(u, 0).In(loc).Zone()
			if got := z.offset(u); got != int32(want) {
				t.Fatalf("%s at %s: offset %d, want %d", name, time.Unix(u, 0).UTC(), got, want)
			}
			wall := u + int64(want)
			if got := z.instant(wall); got > u || int64(z.offset(got))+got != wall {
				t.Fatalf("%s: instant(%d) = %d, want the first instant of that wall time, at or before %d", name, wall, got, u)
			}
		}
	}
}

package schedule

import (
	"errors"
	"fmt"
	"sync"
	"testing"
	"time"
)

func TestCacheSharesOneParsePerPair(t *testing.T) {
	t.Parallel()
	c := newCache(generationSize)
	berlin := mustLoc(t, "Europe/Berlin")
	a, err := c.get("0 5 * * *", berlin)
	if err != nil {
		t.Fatal(err)
	}
	if b, _ := c.get("0 5 * * *", berlin); a != b {
		t.Error("the same schedule and zone got different parsed schedules")
	}
	utc, _ := c.get("0 5 * * *", nil)
	if utc == a {
		t.Error("a different zone shared the parsed schedule")
	}
	if again, _ := c.get("0 5 * * *", time.UTC); again != utc {
		t.Error("nil and UTC, which Parse treats alike, got different parsed schedules")
	}
	base := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	if got, want := a.Next(base), time.Date(2026, 1, 1, 4, 0, 0, 0, time.UTC); !got.Equal(want) {
		t.Errorf("Berlin 05:00 after %v = %v, want %v", base, got, want)
	}
	if got, want := utc.Next(base), time.Date(2026, 1, 1, 5, 0, 0, 0, time.UTC); !got.Equal(want) {
		t.Errorf("UTC 05:00 after %v = %v, want %v", base, got, want)
	}
	if n := c.size(); n != 2 {
		t.Errorf("cache holds %d pairs, want 2", n)
	}
}

func TestCacheFollowsAChangedSchedule(t *testing.T) {
	t.Parallel()
	c := newCache(generationSize)
	before, _ := c.get("0 5 * * *", nil)
	after, _ := c.get("0 6 * * *", nil)
	base := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	if before.Next(base).Hour() != 5 || after.Next(base).Hour() != 6 {
		t.Errorf("next fires %v and %v, want 05:00 then 06:00", before.Next(base), after.Next(base))
	}
}

func TestCacheKeepsTheParseError(t *testing.T) {
	t.Parallel()
	c := newCache(generationSize)
	for range 2 { // the second call is served from the cache
		if s, err := c.get("not cron", nil); s != nil || !errors.Is(err, ErrSyntax) {
			t.Errorf("got (%v, %v), want nil and ErrSyntax", s, err)
		}
	}
	if n := c.size(); n != 1 {
		t.Errorf("cache holds %d pairs, want the error's 1", n)
	}
}

func TestCachedInZoneRefusesAnUnknownZone(t *testing.T) {
	t.Parallel()
	if s, err := CachedInZone("0 5 * * *", "Nowhere/City"); s != nil || !errors.Is(err, ErrUnknownZone) {
		t.Errorf("got (%v, %v), want nil and ErrUnknownZone", s, err)
	}
	a, err := CachedInZone("0 5 * * *", "Europe/Berlin")
	if err != nil {
		t.Fatal(err)
	}
	if b, _ := Cached("0 5 * * *", mustLoadLocation(t, "Europe/Berlin")); a != b {
		t.Error("CachedInZone and Cached with the zone's location do not share the parsed schedule")
	}
}

func TestCacheDropsPairsNoLongerUsed(t *testing.T) {
	t.Parallel()
	c := newCache(100)
	first, _ := c.get("0 0 * * *", nil)
	// Far more distinct pairs than a generation holds, each used once,
	// while one pair stays in use.
	for i := range 10 * c.limit {
		c.get(fmt.Sprintf("@every %ds", i+1), nil)
		if s, _ := c.get("0 0 * * *", nil); s != first {
			t.Fatalf("after %d other pairs the pair in use was parsed again", i+1)
		}
	}
	if n := c.size(); n > 2*c.limit {
		t.Errorf("cache holds %d pairs after %d distinct ones, want at most %d", n, 10*c.limit, 2*c.limit)
	}
}

func TestCacheParsesAPairAgainAfterAGenerationUnused(t *testing.T) {
	t.Parallel()
	c := newCache(10)
	first, _ := c.get("0 0 * * *", nil)
	for i := range 2 * c.limit {
		c.get(fmt.Sprintf("@every %ds", i+1), nil)
	}
	again, err := c.get("0 0 * * *", nil)
	if err != nil || again == first {
		t.Errorf("got (%p, %v), want a fresh parse of the evicted pair", again, err)
	}
}

// Validation at the API and the scheduler share the cache from many
// goroutines; run with -race.
func TestCacheConcurrentUse(t *testing.T) {
	t.Parallel()
	c := newCache(8)
	var wg sync.WaitGroup
	for g := range 8 {
		wg.Go(func() {
			for i := range 200 {
				spec := fmt.Sprintf("@every %ds", (g*i)%20+1)
				s, err := c.get(spec, nil)
				if err != nil || s == nil {
					t.Errorf("get(%q) = (%v, %v)", spec, s, err)
					return
				}
			}
		})
	}
	wg.Wait()
	if n := c.size(); n > 2*c.limit {
		t.Errorf("cache holds %d pairs, want at most %d", n, 2*c.limit)
	}
}

func mustLoadLocation(t *testing.T, name string) *time.Location {
	t.Helper()
	loc, err := LoadLocation(name)
	if err != nil {
		t.Fatal(err)
	}
	return loc
}

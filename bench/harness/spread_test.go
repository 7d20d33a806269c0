package harness

import (
	"encoding/json"
	"math"
	"testing"
)

var nan = math.NaN()

func TestSpreadMedianMinMax(t *testing.T) {
	for _, c := range []struct {
		name string
		in   Values
		want Spread
	}{
		{"odd count: the middle one", Values{5, 1, 3}, Spread{N: 3, Median: 3, Min: 1, Max: 5}},
		{"even count: the mean of the middle two", Values{4, 1, 10, 2}, Spread{N: 4, Median: 3, Min: 1, Max: 10}},
		{"one run", Values{7}, Spread{N: 1, Median: 7, Min: 7, Max: 7}},
		{"missing runs left out", Values{nan, 2, nan, 6}, Spread{N: 2, Median: 4, Min: 2, Max: 6}},
		{"none", Values{nan}, Spread{}},
		{"empty", nil, Spread{}},
	} {
		if got := SpreadOf(c.in); got != c.want {
			t.Errorf("%s: SpreadOf(%v) = %+v, want %+v", c.name, c.in, got, c.want)
		}
	}
}

func TestSpreadLeavesItsInputInRunOrder(t *testing.T) {
	v := Values{3, 1, 2}
	SpreadOf(v)
	if v[0] != 3 || v[1] != 1 || v[2] != 2 {
		t.Errorf("SpreadOf sorted its input: %v", v)
	}
}

func TestPairedComparesRunForRun(t *testing.T) {
	old := Values{100, 120, 90, nan, 0}
	new := Values{80, 125, 70, 50, 10}
	p := PairedOf(old, new, Lower)
	// Pairs 1-3 and 5 (diffs -20, +5, -20, +10); the 4th has no old
	// value, the 5th no ratio.
	if p.Pairs != 4 {
		t.Errorf("pairs %d, want 4", p.Pairs)
	}
	if want := (Spread{N: 4, Median: -7.5, Min: -20, Max: 10}); p.Diff != want {
		t.Errorf("diff %+v, want %+v", p.Diff, want)
	}
	if p.Ratio.N != 3 || p.Ratio.Median != 0.8 || math.Abs(p.Ratio.Min-70.0/90) > 1e-12 || math.Abs(p.Ratio.Max-125.0/120) > 1e-12 {
		t.Errorf("ratio %+v, want median 0.8 over 3 pairs", p.Ratio)
	}
	if p.Better != 2 {
		t.Errorf("better in %d pairs, want 2 (lower wins; 0 → 10 is worse)", p.Better)
	}
	if h := PairedOf(old, new, Higher); h.Better != 2 {
		t.Errorf("higher: better in %d pairs, want 2 (125 > 120, 10 > 0)", h.Better)
	}
	if n := PairedOf(old, new, Neither); n.Better != 0 {
		t.Errorf("a figure not judged was better in %d pairs", n.Better)
	}
}

func TestValuesWriteMissingRunsAsNull(t *testing.T) {
	data, err := json.Marshal(struct {
		V Values `json:"v"`
		B Better `json:"b"`
	}{Values{1.5, nan, 2}, Higher})
	if err != nil {
		t.Fatal(err)
	}
	if got, want := string(data), `{"v":[1.5,null,2],"b":"higher"}`; got != want {
		t.Errorf("JSON %s, want %s", got, want)
	}
	var b Better
	if err := json.Unmarshal([]byte(`"lower"`), &b); err != nil || b != Lower {
		t.Errorf(`"lower" read as %v (%v)`, b, err)
	}
	if err := json.Unmarshal([]byte(`"down"`), &b); err == nil {
		t.Error(`"down" read as a direction`)
	}
}

package harness

import (
	"encoding/json"
	"fmt"
	"math"
	"slices"
)

// Better says which way a figure improves.
type Better int

const (
	// Neither: the figure describes the run (a floor, a count of
	// entries) and is not judged.
	Neither Better = iota
	Lower
	Higher
)

func (b Better) String() string {
	return [...]string{"neither", "lower", "higher"}[b]
}

// MarshalJSON writes the direction by name.
func (b Better) MarshalJSON() ([]byte, error) { return json.Marshal(b.String()) }

// UnmarshalJSON reads a direction's name.
func (b *Better) UnmarshalJSON(data []byte) error {
	var name string
	if err := json.Unmarshal(data, &name); err != nil {
		return err
	}
	for _, c := range []Better{Neither, Lower, Higher} {
		if c.String() == name {
			*b = c
			return nil
		}
	}
	return fmt.Errorf("better: %q is none of neither, lower, higher", name)
}

// Values are one figure's value in each run, in run order; NaN marks a run
// that did not report it, and is written as null.
type Values []float64

// MarshalJSON writes NaN as null (JSON has no NaN).
func (v Values) MarshalJSON() ([]byte, error) {
	out := make([]*float64, len(v))
	for i := range v {
		if !math.IsNaN(v[i]) {
			out[i] = &v[i]
		}
	}
	return json.Marshal(out)
}

// present is v without its NaNs.
func (v Values) present() []float64 {
	out := make([]float64, 0, len(v))
	for _, x := range v {
		if !math.IsNaN(x) {
			out = append(out, x)
		}
	}
	return out
}

// Spread is the median, min and max of one figure over repeated runs. The
// median of an even count is the mean of the middle two.
type Spread struct {
	N      int     `json:"n"`
	Median float64 `json:"median"`
	Min    float64 `json:"min"`
	Max    float64 `json:"max"`
}

// SpreadOf summarises the values present in v; N is 0 when none is.
func SpreadOf(v Values) Spread {
	xs := v.present()
	if len(xs) == 0 {
		return Spread{}
	}
	slices.Sort(xs)
	mid := len(xs) / 2
	med := xs[mid]
	if len(xs)%2 == 0 {
		med = (xs[mid-1] + xs[mid]) / 2
	}
	return Spread{N: len(xs), Median: med, Min: xs[0], Max: xs[len(xs)-1]}
}

// Paired compares two series run for run (pair i is old[i] and new[i]):
// the runs of the two came one after the other, so each pair saw the same
// machine, and the pairs' differences see through the drift that moves
// both.
type Paired struct {
	// Pairs counts the pairs where both values are present.
	Pairs int `json:"pairs"`
	// Diff is new − old; Ratio new ÷ old, over the pairs whose old value
	// is not 0.
	Diff  Spread `json:"diff"`
	Ratio Spread `json:"ratio"`
	// Better counts the pairs where new beat old by the figure's
	// direction (a tie is not better); with Neither it is 0.
	Better int `json:"better"`
	// DiffValues and RatioValues are each pair's, in pair order (NaN
	// where a pair is incomplete).
	DiffValues  Values `json:"diff_values"`
	RatioValues Values `json:"ratio_values"`
}

// PairedOf compares new against old pair by pair; a pair missing either
// value is left out.
func PairedOf(old, new Values, better Better) Paired {
	n := min(len(old), len(new))
	p := Paired{DiffValues: make(Values, n), RatioValues: make(Values, n)}
	for i := range n {
		p.DiffValues[i], p.RatioValues[i] = math.NaN(), math.NaN()
		o, v := old[i], new[i]
		if math.IsNaN(o) || math.IsNaN(v) {
			continue
		}
		p.Pairs++
		p.DiffValues[i] = v - o
		if o != 0 {
			p.RatioValues[i] = v / o
		}
		if (better == Lower && v < o) || (better == Higher && v > o) {
			p.Better++
		}
	}
	p.Diff, p.Ratio = SpreadOf(p.DiffValues), SpreadOf(p.RatioValues)
	return p
}

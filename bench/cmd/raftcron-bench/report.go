package main

import (
	"debug/buildinfo"
	"encoding/json"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"slices"
	"strings"

	"github.com/raftcron/raftcron/bench/harness"
)

// runRecord is one run of one scenario, as figures.json keeps it.
type runRecord struct {
	scenario string
	Arm      string `json:"arm,omitempty"`
	Round    int    `json:"round"`
	// Dir holds the run's result (<scenario>.json) and profiles.
	Dir string `json:"dir"`
	// Counted: the run had no error and no violation, so its figures are
	// in the medians. A run that lost fires reports a lateness of the
	// fires it got, which compares with nothing.
	Counted bool   `json:"counted"`
	Problem string `json:"problem,omitempty"`
	// Note is what of the run's setup may differ from run to run:
	// burst-features' features, which depend on the node binary.
	Note    string   `json:"note,omitempty"`
	Figures []figure `json:"figures"`
}

func newRunRecord(scenario, armName string, round int, dir string, res *Result) runRecord {
	r := runRecord{scenario: scenario, Arm: armName, Round: round, Dir: dir, Figures: figuresOf(res)}
	switch {
	case res.Error != "":
		r.Problem = "error: " + res.Error
	case len(res.Violations) > 0:
		r.Problem = "violations: " + strings.Join(res.Violations, "; ")
	default:
		r.Counted = true
	}
	if m, ok := res.Metrics.(*burstMetrics); ok && m.Features != nil {
		r.Note = m.Features.brief()
	}
	return r
}

// figuresDoc is figures.json: every run's figures, and each figure's
// spread and (with -ab) pairs, scenario by scenario.
type figuresDoc struct {
	Machine   Machine           `json:"machine"`
	Binaries  []binaryInfo      `json:"binaries"`
	Repeat    int               `json:"repeat"`
	Quick     bool              `json:"quick"`
	Scenarios []scenarioFigures `json:"scenarios"`
}

// binaryInfo names a node binary the runs used.
type binaryInfo struct {
	Arm       string `json:"arm,omitempty"`
	Path      string `json:"path"`
	Version   string `json:"version"`
	GoVersion string `json:"go_version"`
}

type scenarioFigures struct {
	Scenario string         `json:"scenario"`
	Runs     []runRecord    `json:"runs"`
	Figures  []figureSpread `json:"figures"`
}

type figureSpread struct {
	Name   string         `json:"name"`
	Unit   string         `json:"unit"`
	Better harness.Better `json:"better"`
	Arms   []armSpread    `json:"arms"`
	// Paired is new against old (-ab only).
	Paired *harness.Paired `json:"paired,omitempty"`
}

type armSpread struct {
	Arm string `json:"arm,omitempty"`
	// Values are the figure in each round (null: not counted, or not
	// reported).
	Values harness.Values `json:"values"`
	harness.Spread
}

// newFiguresDoc sums runs up scenario by scenario, in the order they ran.
func newFiguresDoc(m Machine, cfg config, arms []arm, runs []runRecord) figuresDoc {
	d := figuresDoc{Machine: m, Repeat: cfg.Repeat, Quick: cfg.Quick}
	for _, a := range arms {
		d.Binaries = append(d.Binaries, binaryInfo{Arm: a.name, Path: a.bin, Version: binaryVersion(a.bin), GoVersion: binaryGoVersion(a.bin)})
	}
	for _, r := range runs {
		i := slices.IndexFunc(d.Scenarios, func(s scenarioFigures) bool { return s.Scenario == r.scenario })
		if i < 0 {
			d.Scenarios = append(d.Scenarios, scenarioFigures{Scenario: r.scenario})
			i = len(d.Scenarios) - 1
		}
		d.Scenarios[i].Runs = append(d.Scenarios[i].Runs, r)
	}
	for i := range d.Scenarios {
		d.Scenarios[i].Figures = spreads(d.Scenarios[i].Runs, arms, cfg.Repeat)
	}
	return d
}

// spreads are each figure's values round by round, per arm, with their
// spread, and with two arms the pairs.
func spreads(runs []runRecord, arms []arm, rounds int) []figureSpread {
	var out []figureSpread
	index := map[string]int{}
	for _, r := range runs {
		for _, f := range r.Figures {
			if _, ok := index[f.Name]; ok {
				continue
			}
			index[f.Name] = len(out)
			fs := figureSpread{Name: f.Name, Unit: f.Unit, Better: f.Better}
			for _, a := range arms {
				vs := make(harness.Values, rounds)
				for k := range vs {
					vs[k] = math.NaN()
				}
				fs.Arms = append(fs.Arms, armSpread{Arm: a.name, Values: vs})
			}
			out = append(out, fs)
		}
	}
	for _, r := range runs {
		if !r.Counted || r.Round < 1 || r.Round > rounds {
			continue
		}
		a := slices.IndexFunc(arms, func(a arm) bool { return a.name == r.Arm })
		for _, f := range r.Figures {
			out[index[f.Name]].Arms[a].Values[r.Round-1] = f.Value
		}
	}
	for i := range out {
		for k := range out[i].Arms {
			out[i].Arms[k].Spread = harness.SpreadOf(out[i].Arms[k].Values)
		}
		if len(out[i].Arms) == 2 {
			p := harness.PairedOf(out[i].Arms[0].Values, out[i].Arms[1].Values, out[i].Better)
			out[i].Paired = &p
		}
	}
	return out
}

// writeReport writes figures.json and figures.md into the run directory
// and prints the markdown.
func (r *runner) writeReport(runs []runRecord) error {
	d := newFiguresDoc(r.env.machine, r.env.cfg, r.arms, runs)
	data, err := json.MarshalIndent(d, "", "  ")
	if err != nil {
		return err
	}
	md := d.markdown()
	err = os.WriteFile(filepath.Join(r.env.runDir, "figures.json"), append(data, '\n'), 0o644)
	if err == nil {
		err = os.WriteFile(filepath.Join(r.env.runDir, "figures.md"), []byte(md), 0o644)
	}
	fmt.Println()
	fmt.Print(md)
	return err
}

// markdown is the document's tables, to paste into docs/benchmarks.md.
func (d figuresDoc) markdown() string {
	var b strings.Builder
	m := d.Machine
	fmt.Fprintf(&b, "Machine: %s, %d CPUs, %.1f GiB, Linux %s; load average %s at the start; the bench built with %s.\n",
		orUnknown(m.CPUModel), m.CPUs, m.MemTotalGB, orUnknown(m.Kernel), orUnknown(m.LoadAvg), m.GoVersion)
	ab := len(d.Binaries) == 2
	for _, bi := range d.Binaries {
		name := "Nodes"
		if bi.Arm != "" {
			name = bi.Arm
		}
		fmt.Fprintf(&b, "%s: %s (%s, built with %s).\n", name, bi.Path, orUnknown(bi.Version), orUnknown(bi.GoVersion))
	}
	mode := ""
	if d.Quick {
		mode = ", -quick"
	}
	if ab {
		fmt.Fprintf(&b, "%d pairs, run old, new, old, new … (each run a fresh cluster%s). Each figure: median [min–max] of the counted runs; new − old and new ÷ old pair by pair, and in how many pairs new was better.\n", d.Repeat, mode)
	} else {
		fmt.Fprintf(&b, "%d runs (each a fresh cluster%s). Each figure: median [min–max] of the counted runs.\n", d.Repeat, mode)
	}
	for _, s := range d.Scenarios {
		fmt.Fprintf(&b, "\n### %s\n\n", s.Scenario)
		s.notes(&b)
		if ab {
			b.WriteString("| figure | old median [min–max] | new median [min–max] | new − old median [min–max] | new ÷ old median [min–max] | better in |\n|---|---|---|---|---|---|\n")
		} else {
			b.WriteString("| figure | median [min–max] | runs |\n|---|---|---|\n")
		}
		for _, f := range s.Figures {
			b.WriteString(f.row())
		}
	}
	return b.String()
}

// notes lists the runs left out of the figures and what differed between
// runs.
func (s scenarioFigures) notes(b *strings.Builder) {
	wrote := false
	for _, r := range s.Runs {
		if !r.Counted {
			fmt.Fprintf(b, "Not counted: %s (%s).\n", r.Dir, r.Problem)
			wrote = true
		}
	}
	var notes []string
	for _, r := range s.Runs {
		n := r.Note
		if r.Arm != "" && n != "" {
			n = r.Arm + ": " + n
		}
		if n != "" && !slices.Contains(notes, n) {
			notes = append(notes, n)
		}
	}
	for _, n := range notes {
		fmt.Fprintf(b, "%s.\n", strings.ToUpper(n[:1])+n[1:])
		wrote = true
	}
	if wrote {
		b.WriteString("\n")
	}
}

// row is the figure's line of its scenario's table.
func (f figureSpread) row() string {
	cells := []string{f.label()}
	for _, a := range f.Arms {
		cells = append(cells, spreadText(a.Spread, f.Unit, false))
	}
	if p := f.Paired; p != nil {
		better := "—"
		if f.Better != harness.Neither && p.Pairs > 0 {
			better = fmt.Sprintf("%d/%d", p.Better, p.Pairs)
		}
		// A difference of ratios is a plain number.
		diffUnit := f.Unit
		if diffUnit == "×" {
			diffUnit = ""
		}
		cells = append(cells, spreadText(p.Diff, diffUnit, true), spreadText(p.Ratio, "×", false), better)
	} else {
		cells = append(cells, fmt.Sprint(f.Arms[0].N))
	}
	return "| " + strings.Join(cells, " | ") + " |\n"
}

func (f figureSpread) label() string { return figure{Name: f.Name, Unit: f.Unit}.label() }

// spreadText is "median [min–max]", signed for a difference, with × for
// a ratio; "—" when no run gave the figure. The three numbers share the
// precision of the largest.
func spreadText(s harness.Spread, unit string, signed bool) string {
	if s.N == 0 {
		return "—"
	}
	if unit == "×" {
		return fmt.Sprintf("%.2f× [%.2f–%.2f]", s.Median, s.Min, s.Max)
	}
	num := numberFormat(max(math.Abs(s.Median), math.Abs(s.Min), math.Abs(s.Max)))
	if signed {
		num = withSign(num)
	}
	return fmt.Sprintf("%s [%s–%s]", num(s.Median), num(s.Min), num(s.Max))
}

// numberFormat prints numbers up to a with the digits that matter at
// that size: 1,234; 123; 12.3; 1.23.
func numberFormat(a float64) func(float64) string {
	switch {
	case a >= 1000:
		return thousands
	case a >= 100:
		return func(v float64) string { return fmt.Sprintf("%.0f", v) }
	case a >= 10:
		return func(v float64) string { return fmt.Sprintf("%.1f", v) }
	default:
		return func(v float64) string { return fmt.Sprintf("%.2f", v) }
	}
}

// withSign prints a number with its sign, − or +, and 0 without.
func withSign(num func(float64) string) func(float64) string {
	return func(v float64) string {
		switch s := num(math.Abs(v)); {
		case v < 0:
			return "−" + s
		case v > 0:
			return "+" + s
		default:
			return s
		}
	}
}

// thousands prints v rounded, with commas between thousands.
func thousands(v float64) string {
	s := fmt.Sprintf("%.0f", math.Abs(v))
	var b strings.Builder
	if v < 0 {
		b.WriteByte('-')
	}
	for i, c := range s {
		if i > 0 && (len(s)-i)%3 == 0 {
			b.WriteByte(',')
		}
		b.WriteRune(c)
	}
	return b.String()
}

func orUnknown(s string) string {
	if s == "" {
		return "unknown"
	}
	return s
}

// binaryGoVersion is the Go release a binary was built with.
func binaryGoVersion(bin string) string {
	bi, err := buildinfo.ReadFile(bin)
	if err != nil {
		return ""
	}
	return bi.GoVersion
}

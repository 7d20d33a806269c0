package main

import (
	"fmt"
	"maps"
	"slices"

	"github.com/raftcron/raftcron/bench/harness"
)

// figure is one number a run reports, by the name the tables of repeated
// runs give it.
type figure struct {
	Name   string         `json:"name"`
	Unit   string         `json:"unit"`
	Better harness.Better `json:"better"`
	Value  float64        `json:"value"`
}

// figurer is a metrics document that names its own figures.
type figurer interface{ figures() []figure }

// figureList collects a run's figures in the order the tables show them.
type figureList []figure

func (l *figureList) add(name, unit string, better harness.Better, v float64) {
	*l = append(*l, figure{Name: name, Unit: unit, Better: better, Value: v})
}

// dist adds a lateness distribution's p50, p99 and max.
func (l *figureList) dist(prefix string, d harness.Dist, better harness.Better) {
	l.add(prefix+" p50", "ms", better, d.P50Ms)
	l.add(prefix+" p99", "ms", better, d.P99Ms)
	l.add(prefix+" max", "ms", better, d.MaxMs)
}

// floor adds a floor's p50 and p99 (the same waves with no cluster, not
// judged) and the ratios to it.
func (l *figureList) floor(d *harness.Dist, r *ratios, what string) {
	if d != nil {
		l.add(what+" p50", "ms", harness.Neither, d.P50Ms)
		l.add(what+" p99", "ms", harness.Neither, d.P99Ms)
	}
	if r != nil {
		l.add("p50 ÷ "+what, "×", harness.Lower, r.P50)
		l.add("p99 ÷ "+what, "×", harness.Lower, r.P99)
	}
}

// cpu adds CPU per fire: the three nodes, the leader, the followers' mean
// (node ids change roles from run to run, so figures go by role) and the
// receiving process.
func (l *figureList) cpu(f *fireCPU, receiver string) {
	if f == nil {
		return
	}
	l.add("CPU per fire, nodes", "µs", harness.Lower, f.NodesTotal)
	leader, ok, followers := byRole(f.Nodes, func(n nodeFireCPU) (string, float64) { return n.Role, n.Us })
	if ok {
		l.add("CPU per fire, leader", "µs", harness.Lower, leader)
	}
	if len(followers) > 0 {
		l.add("CPU per fire, follower (mean)", "µs", harness.Lower, mean(followers))
	}
	l.add("CPU per fire, "+receiver, "µs", harness.Lower, f.Receiver)
}

// rss adds the leader's and the largest follower's peak RSS over a window.
func (l *figureList) rss(w cpuWindow) {
	leader, ok, followers := byRole(w.Nodes, func(u nodeUsage) (string, float64) { return u.Role, u.PeakMB })
	if ok {
		l.add("peak RSS, leader", "MiB", harness.Lower, leader)
	}
	if len(followers) > 0 {
		l.add("peak RSS, follower (max)", "MiB", harness.Lower, slices.Max(followers))
	}
}

// byRole splits a value of every node into the leader's (ok: there was
// one) and the followers'.
func byRole[T any](nodes map[string]T, of func(T) (role string, v float64)) (leader float64, ok bool, followers []float64) {
	for _, n := range nodes {
		role, v := of(n)
		if role == "leader" {
			leader, ok = v, true
		} else {
			followers = append(followers, v)
		}
	}
	return leader, ok, followers
}

func mean(xs []float64) float64 {
	s := 0.0
	for _, x := range xs {
		s += x
	}
	return round3(s / float64(len(xs)))
}

// figuresOf are a run's figures, from its metrics document: what its
// summary line and targets report, and the ratios to its own floor.
func figuresOf(res *Result) []figure {
	var l figureList
	switch m := res.Metrics.(type) {
	case *burstMetrics:
		l.burst(m)
	case *workersMetrics:
		l.workers(m)
	case *steadyMetrics:
		l.steady(m)
	case *floorMetrics:
		l.dist("floor burst", m.Burst.Lateness, harness.Lower)
		l.add("floor burst requests/s", "", harness.Higher, m.Burst.PerSec)
		l.add("floor burst CPU per request", "µs", harness.Lower, m.Burst.CPUMicrosPerRequest)
		l.dist("floor steady", m.Steady.Lateness, harness.Lower)
	case *[]*failoverRun:
		for _, r := range *m {
			l.add(r.Setting+": kill → new leader p50", "ms", harness.Lower, r.Elected.P50Ms)
			l.add(r.Setting+": kill → first fire p50", "ms", harness.Lower, r.FirstFire.P50Ms)
			l.add(r.Setting+": kill → first fire p99", "ms", harness.Lower, r.FirstFire.P99Ms)
			l.add(r.Setting+": kill → on time p50", "ms", harness.Lower, r.CaughtUp.P50Ms)
			l.add(r.Setting+": missing slots", "", harness.Lower, float64(r.MissingSlots))
			l.add(r.Setting+": duplicate slots", "", harness.Lower, float64(r.DuplicateSlots))
		}
	case *[]*registryPhase:
		for _, p := range *m {
			l.add(p.Name+": writes/s", "", harness.Higher, p.WritesPerSec)
			l.add(p.Name+": call p99", "ms", harness.Lower, p.Latency.P99Ms)
			l.add(p.Name+": CPU per write, leader", "µs", harness.Lower, p.PerWrite.Leader)
			l.add(p.Name+": CPU per write, follower", "µs", harness.Lower, p.PerWrite.Follower)
		}
	case *scaleMetrics:
		l.scale(m)
	case *microMetrics:
		for _, b := range m.Benchmarks {
			name := b.Pkg + " " + b.Name
			l.add(name+" time", "ns/op", harness.Lower, b.NsPerOp)
			l.add(name+" memory", "B/op", harness.Lower, b.BytesPerOp)
			l.add(name+" allocations", "allocs/op", harness.Lower, b.AllocsPerOp)
			for _, unit := range slices.Sorted(maps.Keys(b.Extra)) {
				l.add(name+" "+unit, unit, harness.Neither, b.Extra[unit])
			}
		}
	case figurer:
		return m.figures()
	}
	return l
}

func (l *figureList) burst(m *burstMetrics) {
	l.dist("lateness", m.Lateness, harness.Lower)
	l.floor(m.Floor.lateness(), m.Ratio, "floor")
	l.add("first delivery", "ms", harness.Lower, m.FirstMs)
	l.add("deliveries/s", "", harness.Higher, m.DispatchPerSec)
	if m.Chained != nil {
		l.add("chained fires delivered", "", harness.Higher, float64(m.Chained.Delivered))
		l.dist("parent → chained child", m.Chained.Delay, harness.Lower)
	}
	l.cpu(m.CPUPerFire, "receiver")
	l.rss(m.CPU)
	l.add("Raft entries", "", harness.Neither, float64(m.Log.Entries))
	l.add("registration", "jobs/s", harness.Higher, m.Registration.OpsPerSec)
}

func (l *figureList) workers(m *workersMetrics) {
	l.dist("handler lateness", m.Lateness, harness.Lower)
	l.floor(m.WebhookFloor.lateness(), m.Ratio, "webhook floor")
	l.cpu(m.CPUPerFire, "SDK workers")
	l.rss(m.CPU)
	l.add("Raft entries", "", harness.Neither, float64(m.Log.Entries))
	l.add("registration", "jobs/s", harness.Higher, m.Registration.OpsPerSec)
}

func (l *figureList) steady(m *steadyMetrics) {
	l.dist("lateness", m.Lateness, harness.Lower)
	l.floor(m.Floor.lateness(), m.Ratio, "floor")
	l.add("delivered/s", "", harness.Higher, m.DeliveredPerSec)
	l.cpu(m.CPUPerFire, "receiver")
	l.rss(m.CPU)
	l.add("registration", "jobs/s", harness.Higher, m.Registration.OpsPerSec)
}

func (l *figureList) scale(m *scaleMetrics) {
	l.add("registration", "jobs/s", harness.Higher, m.Registration.JobsPerSec)
	if len(m.PeakRSSMB) > 0 {
		l.add("peak RSS, any node", "MiB", harness.Lower, slices.Max(slices.Collect(maps.Values(m.PeakRSSMB))))
	}
	if len(m.ProjectedRSSMB) > 0 {
		l.add("projected RSS at 1M jobs, any node", "MiB", harness.Lower, slices.Max(slices.Collect(maps.Values(m.ProjectedRSSMB))))
	}
	for _, u := range m.Idle.Nodes {
		if u.Role == "leader" {
			l.add("idle CPU, leader", "cores", harness.Lower, u.CPUCores)
		}
	}
	l.add("restart → ready", "ms", harness.Lower, m.Restart.ReadyMs)
}

// label is a figure's row title: its name and unit. A count, a rate
// its name already says, and a ratio have none.
func (f figure) label() string {
	if f.Unit == "" || f.Unit == "×" {
		return f.Name
	}
	return fmt.Sprintf("%s (%s)", f.Name, f.Unit)
}

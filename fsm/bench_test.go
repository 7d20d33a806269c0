package fsm_test

import (
	"fmt"
	"runtime"
	"testing"
	"time"

	"github.com/hashicorp/raft"
	"google.golang.org/protobuf/proto"

	"github.com/raftcron/raftcron/fsm"
	"github.com/raftcron/raftcron/internal/proc"
	"github.com/raftcron/raftcron/jobspec"
	pb "github.com/raftcron/raftcron/proto/raftcron/v1"
)

// BenchmarkApplyPut measures Apply of a create of a new job, including
// decoding the entry, as Raft drives it.
func BenchmarkApplyPut(b *testing.B) { benchmarkApplyPut(b, false) }

// BenchmarkApplyPutAudited is BenchmarkApplyPut with the audit trail on:
// each create also renders its diff and appends a record.
func BenchmarkApplyPutAudited(b *testing.B) { benchmarkApplyPut(b, true) }

func benchmarkApplyPut(b *testing.B, audited bool) {
	data := make([][]byte, b.N)
	for i := range data {
		c := createCmd(testSpec(fmt.Sprintf("job-%09d", i)))
		c.ProposedAtUnixNano = baseTime.UnixNano()
		d, err := proto.Marshal(c)
		if err != nil {
			b.Fatal(err)
		}
		data[i] = d
	}
	f := fsm.New()
	if audited {
		d, _ := proto.Marshal(setAuditCmd(10_000, false)) // the default limit
		f.Apply(&raft.Log{Index: 1, Data: d})
	}
	b.ReportAllocs()
	b.ResetTimer()
	for i := range data {
		r := f.Apply(&raft.Log{Index: uint64(i + 2), Data: data[i]}).(*pb.CommandResult)
		if r.GetCode() != pb.ResultCode_RESULT_CODE_OK {
			b.Fatalf("code %v: %s", r.GetCode(), r.GetMessage())
		}
	}
}

// BenchmarkApplyFireBatch1000 measures Apply of one FireBatch of 1,000
// scheduled fires for 1,000 distinct jobs, all accepted, including decoding
// the entry: the burst a leader proposes when many jobs share a schedule.
// Between timed batches an untimed CompleteBatch finishes every run, so
// each batch meets the steady state (no open run, a full history).
func BenchmarkApplyFireBatch1000(b *testing.B) { benchmarkWave(b, nil, true) }

// BenchmarkApplyCompleteBatch1000 is BenchmarkApplyFireBatch1000 timing
// the CompleteBatch instead: the outcomes of the 1,000 runs, each of which
// finishes its run, moves it to its job's history and prunes the oldest.
func BenchmarkApplyCompleteBatch1000(b *testing.B) { benchmarkWave(b, nil, false) }

// BenchmarkApplyObservedWave1000 is both with an observer installed, as
// every node's scheduler is.
func BenchmarkApplyObservedWave1000(b *testing.B) {
	b.Run("fire", func(b *testing.B) { benchmarkWave(b, discardObserver{}, true) })
	b.Run("complete", func(b *testing.B) { benchmarkWave(b, discardObserver{}, false) })
}

// discardObserver hears every change and keeps none.
type discardObserver struct{}

func (discardObserver) JobsChanged(fsm.Origin, []string)  {}
func (discardObserver) RunsChanged(fsm.Origin, []*pb.Run) {}

// benchmarkWave applies, b.N times, a FireBatch of one slot of 1,000 jobs
// and the CompleteBatch of its runs, timing the fires or the completions.
func benchmarkWave(b *testing.B, obs fsm.Observer, timeFires bool) {
	const jobs = 1000
	f := fsm.New()
	f.SetObserver(obs)
	index := uint64(0)
	apply := func(data []byte) *pb.CommandResult {
		index++
		return f.Apply(&raft.Log{Index: index, Data: data}).(*pb.CommandResult)
	}
	marshal := func(c *pb.Command) []byte {
		c.ProposedAtUnixNano = baseTime.UnixNano()
		d, err := proto.Marshal(c)
		if err != nil {
			b.Fatal(err)
		}
		return d
	}
	names := make([]string, jobs)
	for i := range names {
		names[i] = fmt.Sprintf("job-%06d", i)
		if r := apply(marshal(createCmd(testSpec(names[i])))); r.GetCode() != pb.ResultCode_RESULT_CODE_OK {
			b.Fatalf("create: %v", r)
		}
	}
	// Batch n fires slot n+1 of every job; job i's run gets token n*jobs+i+1.
	fireData := make([][]byte, b.N)
	doneData := make([][]byte, b.N)
	for n := range b.N {
		fires := make([]*pb.Fire, jobs)
		cs := make([]*pb.Completion, jobs)
		for i, name := range names {
			fires[i] = slotFire(name, 1, baseTime.Unix()+int64(n+1))
			token := uint64(n*jobs + i + 1)
			cs[i] = &pb.Completion{RunId: fmt.Sprintf("%s-%d", name, token), Token: token, Outcome: stSucceeded,
				FinishedAtUnixNano: baseTime.UnixNano() + int64(n)}
		}
		fireData[n] = marshal(fireBatchCmd(leaderID, leaderTerm, fires, nil))
		doneData[n] = marshal(completeBatchCmd(cs...))
	}
	b.ReportAllocs()
	b.ResetTimer()
	cpu, measured := proc.SelfCPU()
	for n := range b.N {
		if !timeFires {
			b.StopTimer()
		}
		r := apply(fireData[n])
		b.StopTimer()
		if len(r.GetFires()) != jobs || !r.GetFires()[jobs-1].GetAccepted() {
			b.Fatalf("batch %d: %d results, last %v", n, len(r.GetFires()), r.GetFires()[jobs-1])
		}
		if !timeFires {
			b.StartTimer()
		}
		c := apply(doneData[n]).GetCompletions()
		if timeFires {
			b.StopTimer()
		}
		if !c[jobs-1].GetAccepted() {
			b.Fatalf("completions %d: last %v", n, c[jobs-1])
		}
		b.StartTimer()
	}
	// The process's CPU for both entries of every fire, timed or not: on a
	// shared machine it varies far less than the time does.
	if end, ok := proc.SelfCPU(); measured && ok {
		b.ReportMetric(float64((end-cpu).Nanoseconds())/float64(b.N*jobs), "cpu-ns/fire")
	}
}

// BenchmarkRegistryMemory reports the live heap one registered job costs
// (B/job), once built through Apply and once read back by Restore, for
// specs like the scale scenario's as the API stores them: a daily
// schedule, a webhook and one label, defaults filled in. It builds 100,000
// jobs per iteration, each created in its own millisecond.
func BenchmarkRegistryMemory(b *testing.B) {
	b.Run("apply", func(b *testing.B) {
		for range b.N {
			before := liveHeap()
			f := buildRegistry(b)
			b.ReportMetric(float64(liveHeap()-before)/registryJobs, "B/job")
			runtime.KeepAlive(f)
		}
	})
	b.Run("restore", func(b *testing.B) {
		data := persist(b, buildRegistry(b))
		for range b.N {
			before := liveHeap()
			f := fsm.New()
			if err := restore(f, data); err != nil {
				b.Fatal(err)
			}
			b.ReportMetric(float64(liveHeap()-before)/registryJobs, "B/job")
			runtime.KeepAlive(f)
		}
	})
}

// BenchmarkRegistrySnapshot times Persist and Restore of the registry of
// BenchmarkRegistryMemory, and what each allocates per job: the work a
// node does when Raft snapshots a large registry and when it starts.
func BenchmarkRegistrySnapshot(b *testing.B) {
	f := buildRegistry(b)
	b.Run("persist", func(b *testing.B) {
		b.ReportAllocs()
		for range b.N {
			persist(b, f)
		}
	})
	data := persist(b, f)
	f = nil // garbage from here: restore into a heap without it
	b.Run("restore", func(b *testing.B) {
		b.ReportAllocs()
		for range b.N {
			if err := restore(fsm.New(), data); err != nil {
				b.Fatal(err)
			}
		}
	})
}

// registryJobs is the size of the registry the registry benchmarks build.
const registryJobs = 100_000

// buildRegistry applies the creates of registryJobs jobs like the scale
// scenario's, each in its own millisecond.
func buildRegistry(b *testing.B) *fsm.FSM {
	b.Helper()
	const jobs = registryJobs
	spec := func(i int) *pb.JobSpec {
		s := &pb.JobSpec{
			Name:     fmt.Sprintf("scale-%07d", i),
			Schedule: fmt.Sprintf("%d %d * * *", i%60, (i/60)%24),
			Http:     &pb.HttpTarget{Url: "http://127.0.0.1:9/never"},
			Labels:   map[string]string{"team": fmt.Sprintf("t%02d", i%50)},
		}
		jobspec.Normalize(s)
		return s
	}
	f := fsm.New()
	for i := range jobs {
		c := createCmd(spec(i))
		c.ProposedAtUnixNano = baseTime.UnixNano() + int64(i)*int64(time.Millisecond)
		d, err := proto.Marshal(c)
		if err != nil {
			b.Fatal(err)
		}
		if r := f.Apply(&raft.Log{Index: uint64(i + 1), Data: d}).(*pb.CommandResult); r.GetCode() != pb.ResultCode_RESULT_CODE_OK {
			b.Fatalf("create: %v", r)
		}
	}
	return f
}

func liveHeap() int64 {
	runtime.GC()
	var m runtime.MemStats
	runtime.ReadMemStats(&m)
	return int64(m.HeapAlloc)
}

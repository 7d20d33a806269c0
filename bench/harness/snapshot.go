package harness

import (
	"bufio"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"time"

	"github.com/hashicorp/raft"
	"google.golang.org/protobuf/proto"

	"github.com/raftcron/raftcron/fsm"
	"github.com/raftcron/raftcron/jobspec"
	pb "github.com/raftcron/raftcron/proto/raftcron/v1"
)

// SnapshotInfo describes a snapshot Raft keeps in a node's data dir.
type SnapshotInfo struct {
	ID    string `json:"id"`
	Index uint64 `json:"index"`
	Bytes int64  `json:"bytes"`
}

// LatestSnapshot reads the meta.json files under DataDir/snapshots and
// returns the snapshot with the highest index; ok is false if none.
func LatestSnapshot(dataDir string) (info SnapshotInfo, ok bool, err error) {
	metas, err := filepath.Glob(filepath.Join(dataDir, "snapshots", "*", "meta.json"))
	if err != nil {
		return info, false, err
	}
	for _, p := range metas {
		if strings.HasSuffix(filepath.Dir(p), ".tmp") {
			continue // being written
		}
		data, err := os.ReadFile(p)
		if err != nil {
			continue // removed meanwhile (Raft keeps 2)
		}
		var m struct {
			ID    string
			Index uint64
			Size  int64
		}
		if json.Unmarshal(data, &m) != nil {
			continue
		}
		if !ok || m.Index > info.Index {
			info, ok = SnapshotInfo{ID: m.ID, Index: m.Index, Bytes: m.Size}, true
		}
	}
	return info, ok, nil
}

// FSMSnapshotResult is an in-process measurement of the FSM's snapshot and
// restore with a given number of jobs: the same code Raft runs, without
// Raft's file store around it.
type FSMSnapshotResult struct {
	Jobs      int     `json:"jobs"`
	BuildS    float64 `json:"build_s"`
	CaptureMs float64 `json:"capture_ms"`
	PersistMs float64 `json:"persist_ms"`
	Bytes     int64   `json:"bytes"`
	RestoreMs float64 `json:"restore_ms"`
	// HeapBytes is the Go heap in use holding one FSM with the jobs
	// (after a GC), a lower bound of a node's RSS.
	HeapBytes uint64 `json:"heap_bytes"`
}

// MeasureFSMSnapshot builds an FSM with n jobs (spec(i), normalized as the
// API would) through Apply, then times Snapshot, Persist into a file in dir
// (fsync'd, as Raft's file store does) and Restore into a fresh FSM.
func MeasureFSMSnapshot(n int, dir string, spec func(i int) *pb.JobSpec) (FSMSnapshotResult, error) {
	res := FSMSnapshotResult{Jobs: n}
	path := filepath.Join(dir, "fsm-snapshot.bin")
	defer func() { _ = os.Remove(path) }()
	want, err := persistNew(&res, path, spec)
	if err != nil {
		return res, err
	}
	runtime.GC() // the first FSM is garbage now; restore into a clean heap
	rc, err := os.Open(path)
	if err != nil {
		return res, err
	}
	g := fsm.New()
	t0 := time.Now()
	if err := g.Restore(rc); err != nil {
		return res, fmt.Errorf("restore: %w", err)
	}
	res.RestoreMs = Ms(time.Since(t0))
	if g.JobCount() != n || g.StateHash() != want {
		return res, fmt.Errorf("restore: %d jobs of %d, or a different state hash", g.JobCount(), n)
	}
	return res, nil
}

// persistNew builds the FSM, snapshots it into path and returns its state
// hash; the FSM is garbage once it returns.
func persistNew(res *FSMSnapshotResult, path string, spec func(i int) *pb.JobSpec) ([32]byte, error) {
	start := time.Now()
	f, err := buildFSM(res.Jobs, spec)
	if err != nil {
		return [32]byte{}, err
	}
	res.BuildS = time.Since(start).Seconds()
	res.HeapBytes = heapInUse()
	t0 := time.Now()
	snap, err := f.Snapshot()
	if err != nil {
		return [32]byte{}, err
	}
	res.CaptureMs = Ms(time.Since(t0))
	sink, err := newFileSink(path)
	if err != nil {
		return [32]byte{}, err
	}
	t0 = time.Now()
	if err := snap.Persist(sink); err != nil {
		return [32]byte{}, err
	}
	res.PersistMs = Ms(time.Since(t0))
	snap.Release()
	if st, err := os.Stat(path); err == nil {
		res.Bytes = st.Size()
	}
	return f.StateHash(), nil
}

func buildFSM(n int, spec func(i int) *pb.JobSpec) (*fsm.FSM, error) {
	f := fsm.New()
	at := time.Now().UnixNano()
	for i := range n {
		s := spec(i)
		jobspec.Normalize(s)
		data, err := proto.Marshal(&pb.Command{
			ProposedAtUnixNano: at,
			Kind:               &pb.Command_PutJob{PutJob: &pb.PutJobCommand{Spec: s, Mode: pb.PutMode_PUT_MODE_CREATE}},
		})
		if err != nil {
			return nil, err
		}
		r, _ := f.Apply(&raft.Log{Index: uint64(i + 1), Data: data}).(*pb.CommandResult)
		if r.GetCode() != pb.ResultCode_RESULT_CODE_OK {
			return nil, fmt.Errorf("apply job %d: %s %s", i, r.GetCode(), r.GetMessage())
		}
	}
	return f, nil
}

func heapInUse() uint64 {
	runtime.GC()
	var m runtime.MemStats
	runtime.ReadMemStats(&m)
	return m.HeapInuse
}

// fileSink is a raft.SnapshotSink over a buffered file, fsync'd on Close.
type fileSink struct {
	f *os.File
	w *bufio.Writer
}

func newFileSink(path string) (*fileSink, error) {
	f, err := os.Create(path)
	if err != nil {
		return nil, err
	}
	return &fileSink{f: f, w: bufio.NewWriterSize(f, 1<<20)}, nil
}

func (s *fileSink) Write(p []byte) (int, error) { return s.w.Write(p) }
func (s *fileSink) ID() string                  { return "bench" }
func (s *fileSink) Cancel() error               { return s.f.Close() }

func (s *fileSink) Close() error {
	if err := s.w.Flush(); err != nil {
		_ = s.f.Close()
		return err
	}
	if err := s.f.Sync(); err != nil {
		_ = s.f.Close()
		return err
	}
	return s.f.Close()
}

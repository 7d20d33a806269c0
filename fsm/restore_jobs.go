package fsm

import (
	"bufio"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"runtime"
	"sync"

	"google.golang.org/protobuf/encoding/protodelim"
	"google.golang.org/protobuf/proto"

	pb "github.com/raftcron/raftcron/proto/raftcron/v1"
)

// Restoring a million jobs is mostly decoding protobuf, which is what a
// restarted node waits on before it can serve. So the job records are read
// in chunks, decoded by one worker per CPU, and put into the tree in stream
// order by the caller: the state is the same as a sequential read's, only
// sooner. The chunks in flight bound the memory this takes beyond the state.
const (
	restoreChunkJobs = 512
	// restoreChunksPerWorker keeps every worker busy while the caller
	// inserts the chunk before.
	restoreChunksPerWorker = 2
)

// jobChunk is a run of consecutive job records and what they decode to.
type jobChunk struct {
	first    uint64 // position of its first record in the stream, from 0
	raw      []byte // the records' payloads, back to back
	ends     []int  // where each payload ends in raw
	items    []jobItem
	maxIndex uint64 // the highest modify_index of its jobs
	err      error
	done     chan struct{} // closed once decoded
}

// readJobs reads count job records and inserts them into st.jobs, which
// must be empty, and returns the highest modify_index among them.
func readJobs(r *bufio.Reader, st *state, count uint64) (uint64, error) {
	workers := max(runtime.GOMAXPROCS(0), 1)
	inFlight := workers * restoreChunksPerWorker
	ordered := make(chan *jobChunk, inFlight)
	work := make(chan *jobChunk, inFlight)
	quit := make(chan struct{})
	// free passes the workers' spent buffers back to the reader.
	free := make(chan []byte, inFlight+workers)
	var wg sync.WaitGroup
	var readErr error
	wg.Add(1)
	go func() {
		defer wg.Done()
		defer close(ordered)
		defer close(work)
		readErr = readJobChunks(r, count, ordered, work, free, quit)
	}()
	for range workers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			sh, lf := newSharer(), &labelLifter{}
			for c := range work {
				c.decode(sh, lf, count)
				select {
				case free <- c.raw[:0]:
				default:
				}
				c.raw, c.ends = nil, nil
				close(c.done)
			}
		}()
	}
	lastIndex, err := insertJobChunks(st, ordered)
	close(quit)
	wg.Wait()
	if err == nil {
		err = readErr
	}
	return lastIndex, err
}

// readJobChunks reads count records into chunks, in buffers from free when
// there are any, and hands each to the workers and, in order, to the
// caller, until done or quit.
func readJobChunks(r *bufio.Reader, count uint64, ordered, work chan<- *jobChunk, free <-chan []byte, quit <-chan struct{}) error {
	for first := uint64(0); first < count; first += restoreChunkJobs {
		c := &jobChunk{first: first, done: make(chan struct{})}
		select {
		case c.raw = <-free:
		default:
		}
		n := min(count-first, restoreChunkJobs)
		c.ends = make([]int, 0, n)
		for i := range n {
			var err error
			if c.raw, err = appendRecord(r, c.raw); err != nil {
				return fmt.Errorf("job record %d of %d: %w", first+i+1, count, truncated(err))
			}
			c.ends = append(c.ends, len(c.raw))
		}
		select {
		case ordered <- c:
		case <-quit:
			return nil
		}
		select {
		case work <- c:
		case <-quit:
			return nil
		}
	}
	return nil
}

// appendRecord appends the payload of the next length-delimited record.
// io.EOF: the stream ended cleanly before a record.
func appendRecord(r *bufio.Reader, buf []byte) ([]byte, error) {
	size, err := binary.ReadUvarint(r)
	if err != nil {
		return buf, err
	}
	if size > maxRecordSize {
		return buf, &protodelim.SizeTooLargeError{Size: size, MaxSize: maxRecordSize}
	}
	start := len(buf)
	buf = append(buf, make([]byte, size)...)
	if _, err := io.ReadFull(r, buf[start:]); err != nil {
		if errors.Is(err, io.EOF) {
			err = io.ErrUnexpectedEOF
		}
		return buf, err
	}
	return buf, nil
}

// decode turns the chunk's records into stored jobs, or sets err at the
// first that does not decode or is no job.
func (c *jobChunk) decode(sh *sharer, lf *labelLifter, count uint64) {
	c.items = make([]jobItem, 0, len(c.ends))
	start := 0
	for i, end := range c.ends {
		pos := c.first + uint64(i) + 1
		raw, labels, lifted := lf.lift(c.raw[start:end])
		if !lifted {
			raw = c.raw[start:end]
		}
		var rec pb.SnapshotRecord
		if err := proto.Unmarshal(raw, &rec); err != nil {
			c.err = fmt.Errorf("job record %d of %d: %w", pos, count, err)
			return
		}
		start = end
		j := rec.GetJob()
		name := j.GetSpec().GetName()
		switch {
		case j == nil:
			c.err = fmt.Errorf("record %d of %d jobs is not a job", pos, count)
			return
		case name == "":
			c.err = fmt.Errorf("job record %d of %d has no spec name", pos, count)
			return
		}
		c.maxIndex = max(c.maxIndex, j.GetModifyIndex())
		status := j.GetStatus()
		if status == nil {
			// A job written without its status fires from its last change.
			status = &pb.JobStatus{CursorUnix: max(0, j.GetUpdatedAt().GetSeconds())}
		}
		if lifted {
			m := j.GetSpec().ProtoReflect()
			m.SetUnknown(append(m.GetUnknown(), labels...)) // where storeSpec puts them
		}
		j.Status = nil // the decoded record is ours; the status is kept beside the job
		j.UpdatedBy = sh.str(j.GetUpdatedBy())
		storeJob(j)
		sh.spec(j.GetSpec())
		c.items = append(c.items, jobItem{name: name, job: j, status: sh.status(status)})
	}
}

// insertJobChunks puts the decoded chunks into st.jobs in stream order,
// checking that names strictly increase, until ordered is closed or a
// chunk failed.
func insertJobChunks(st *state, ordered <-chan *jobChunk) (uint64, error) {
	var lastIndex uint64
	prev := ""
	for c := range ordered {
		<-c.done
		if c.err != nil {
			return 0, c.err
		}
		for _, it := range c.items {
			if prev != "" && it.name <= prev {
				return 0, fmt.Errorf("job %q follows %q: jobs must be in strictly increasing name order", it.name, prev)
			}
			prev = it.name
			st.jobs.ReplaceOrInsert(it)
			st.deps.link(it.name, it.job.GetSpec().GetAfter())
		}
		lastIndex = max(lastIndex, c.maxIndex)
	}
	return lastIndex, nil
}

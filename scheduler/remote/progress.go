package remote

import (
	"time"
	"unicode/utf8"

	pb "github.com/raftcron/raftcron/proto/raftcron/v1"
)

// MaxProgressMessage bounds a progress message, in bytes.
const MaxProgressMessage = 256

// report takes a progress report of at and returns the record of its new
// state for Config.Progress, or nil if the report changes nothing: a
// heartbeat that carries the same progress costs the log nothing. A
// percentage above 100 counts as 100 and a message is cut at
// MaxProgressMessage bytes: a stream's report is taken as it comes (the
// HTTP API refuses such values first). Called under mu.
func (at *attempt) report(progress *uint32, message *string, now time.Time) *pb.ProgressRecord {
	changed := false
	if progress != nil {
		p := min(*progress, 100)
		if at.progress == nil || *at.progress != p {
			at.progress, changed = &p, true
		}
	}
	if message != nil {
		m := clip(*message, MaxProgressMessage)
		if m != at.message {
			at.message, changed = m, true
		}
	}
	if !changed {
		return nil
	}
	return &pb.ProgressRecord{
		RunId: at.a.RunID, Token: at.a.Token, Progress: at.progress, Message: at.message,
		AtUnixNano: now.UnixNano(),
	}
}

// clip cuts s to at most n bytes on a rune boundary.
func clip(s string, n int) string {
	if len(s) <= n {
		return s
	}
	for n > 0 && !utf8.RuneStart(s[n]) {
		n--
	}
	return s[:n]
}

// streamProgress takes a stream's progress reports. A report of an
// attempt the stream does not hold (any more) is answered with a cancel:
// the worker stops an attempt the leader no longer counts on.
func (h *Hub) streamProgress(c *conn, reports []*pb.AttemptProgress) {
	now := time.Now()
	var recs []*pb.ProgressRecord
	var stale []uint64
	h.mu.Lock()
	for _, r := range reports {
		at := c.inflight[r.GetToken()]
		if at == nil || at.a.RunID != r.GetRunId() {
			stale = append(stale, r.GetToken())
			continue
		}
		if rec := at.report(r.Progress, r.Message, now); rec != nil {
			recs = append(recs, rec)
		}
	}
	h.mu.Unlock()
	for _, rec := range recs {
		h.progress(rec)
	}
	if len(stale) > 0 {
		for _, t := range stale {
			c.out.addCancel(t, "superseded: the leader does not hold this attempt (it finished, or was re-dispatched)")
		}
		c.out.notify()
	}
}

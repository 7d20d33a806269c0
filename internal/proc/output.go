package proc

import "sync"

// MaxOutput is how much output an attempt keeps: the run record travels
// through the Raft log, so it must stay small whatever the target prints.
const MaxOutput = 4 << 10

// headBuffer keeps the first MaxOutput bytes written to it and discards the
// rest. Write never fails and never blocks on a full buffer, so a chatty
// child is drained at pipe speed instead of stalling on a pipe nobody reads.
type headBuffer struct {
	mu  sync.Mutex // guards buf: stdout and stderr copiers may both write
	buf []byte
}

func (b *headBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	if room := MaxOutput - len(b.buf); room > 0 {
		b.buf = append(b.buf, p[:min(room, len(p))]...)
	}
	return len(p), nil
}

// Bytes returns what was kept, nil when nothing was written.
func (b *headBuffer) Bytes() []byte {
	b.mu.Lock()
	defer b.mu.Unlock()
	if len(b.buf) == 0 {
		return nil
	}
	return append([]byte(nil), b.buf...)
}

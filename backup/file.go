// Package backup is raftcron's backup file, what `raftcron snapshot save`
// writes, and the two ways it meets a running cluster: saved from the
// leader, restored into it. The file wraps the FSM's own snapshot stream
// without looking at its records; see DESIGN.md for the format.
package backup

import (
	"bufio"
	"bytes"
	"crypto/sha256"
	"errors"
	"fmt"
	"io"
	"strconv"
	"strings"

	"google.golang.org/protobuf/encoding/protodelim"
	"google.golang.org/protobuf/proto"

	"github.com/raftcron/raftcron/fsm"
	pb "github.com/raftcron/raftcron/proto/raftcron/v1"
)

// Version is the version of the file format this build writes and reads.
const Version = 1

// The file starts with this line, the version number appended: "raftcron
// snapshot v1\n". `head -1` shows what a file is.
const versionPrefix = "raftcron snapshot v"

// maxVersionLine and maxRecord bound what a corrupt file can make a reader
// allocate.
const (
	maxVersionLine = 64
	maxRecord      = 1 << 20
)

// One sentinel per way a file can be refused; every error Inspect returns
// wraps one of them.
var (
	ErrNotBackup = errors.New("not a raftcron snapshot file")
	ErrVersion   = errors.New("unknown snapshot file version")
	ErrTruncated = errors.New("snapshot file is truncated")
	ErrChecksum  = errors.New("snapshot file checksum mismatch: the file is corrupted")
	ErrMalformed = errors.New("snapshot file is malformed")
	// ErrSnapshot: the structure and checksum are right, but the FSM
	// snapshot inside does not read (a file written by a broken or much
	// newer build).
	ErrSnapshot = errors.New("snapshot file holds a snapshot this build cannot restore")
)

// Write writes a backup file to w: the version line, h as the header
// record, exactly h.Size bytes of the FSM snapshot stream from body, and the
// trailer with the SHA-256 of everything before it, which it returns.
func Write(w io.Writer, h *pb.BackupHeader, body io.Reader) ([sha256.Size]byte, error) {
	var sum [sha256.Size]byte
	hash := sha256.New()
	hw := io.MultiWriter(w, hash)
	if _, err := fmt.Fprintf(hw, "%s%d\n", versionPrefix, Version); err != nil {
		return sum, err
	}
	if _, err := protodelim.MarshalTo(hw, h); err != nil {
		return sum, fmt.Errorf("backup: header: %w", err)
	}
	n, err := io.Copy(hw, io.LimitReader(body, int64(h.GetSize())+1))
	if err != nil {
		return sum, fmt.Errorf("backup: snapshot stream: %w", err)
	}
	if n != int64(h.GetSize()) {
		return sum, fmt.Errorf("backup: snapshot stream of %d bytes or more, the header says %d", n, h.GetSize())
	}
	copy(sum[:], hash.Sum(nil))
	if _, err := protodelim.MarshalTo(w, &pb.BackupTrailer{Sha256: sum[:]}); err != nil {
		return sum, fmt.Errorf("backup: trailer: %w", err)
	}
	return sum, nil
}

// File is a backup file that Inspect accepted whole.
type File struct {
	Header   *pb.BackupHeader
	SHA256   [sha256.Size]byte
	Snapshot fsm.SnapshotSummary

	r      io.ReaderAt
	bodyAt int64
}

// Body is the FSM snapshot stream inside the file.
func (f *File) Body() *io.SectionReader {
	return io.NewSectionReader(f.r, f.bodyAt, int64(f.Header.GetSize()))
}

// Inspect reads the backup file of size bytes in r whole and returns it
// only if all of it checks out: the version line, the header, that the
// snapshot stream and the trailer are all there with nothing after them,
// the checksum, and the snapshot stream itself, read as a restore reads it.
// It holds the decoded state while it counts, as a restore would.
func Inspect(r io.ReaderAt, size int64) (*File, error) {
	f, err := verify(r, size)
	if err != nil {
		return nil, err
	}
	f.Snapshot, err = fsm.InspectSnapshot(f.Body())
	if err != nil {
		return nil, fmt.Errorf("%w: %w", ErrSnapshot, err)
	}
	return f, nil
}

// verify checks everything but the snapshot stream's content.
func verify(r io.ReaderAt, size int64) (*File, error) {
	cr := &countingReader{r: bufio.NewReader(io.NewSectionReader(r, 0, size))}
	if err := readVersion(cr); err != nil {
		return nil, err
	}
	var h pb.BackupHeader
	if err := readRecord(cr, &h, "header"); err != nil {
		return nil, err
	}
	f := &File{Header: &h, r: r, bodyAt: cr.n}
	trailerAt := f.bodyAt + int64(h.GetSize())
	if h.GetSize() == 0 || trailerAt < f.bodyAt {
		return nil, fmt.Errorf("%w: header announces a snapshot of %d bytes", ErrMalformed, h.GetSize())
	}
	if trailerAt >= size {
		return nil, fmt.Errorf("%w: %d bytes, but the header announces a snapshot ending at byte %d and a checksum after it",
			ErrTruncated, size, trailerAt)
	}
	hash := sha256.New()
	if _, err := io.Copy(hash, io.NewSectionReader(r, 0, trailerAt)); err != nil {
		return nil, err
	}
	tr := &countingReader{r: bufio.NewReader(io.NewSectionReader(r, trailerAt, size-trailerAt))}
	var t pb.BackupTrailer
	if err := readRecord(tr, &t, "checksum trailer"); err != nil {
		return nil, err
	}
	if tr.n != size-trailerAt {
		return nil, fmt.Errorf("%w: %d bytes after the checksum trailer", ErrMalformed, size-trailerAt-tr.n)
	}
	copy(f.SHA256[:], hash.Sum(nil))
	if !bytes.Equal(t.GetSha256(), f.SHA256[:]) {
		return nil, fmt.Errorf("%w: the trailer says %x, the content hashes to %x", ErrChecksum, t.GetSha256(), f.SHA256)
	}
	return f, nil
}

func readVersion(cr *countingReader) error {
	line, err := cr.r.ReadSlice('\n')
	if len(line) > maxVersionLine || !strings.HasPrefix(string(line), versionPrefix) {
		return ErrNotBackup
	}
	if err != nil {
		return fmt.Errorf("%w: no line end after the version", ErrTruncated)
	}
	cr.n += int64(len(line))
	v, err := strconv.Atoi(strings.TrimSuffix(strings.TrimPrefix(string(line), versionPrefix), "\n"))
	if err != nil {
		return ErrNotBackup
	}
	if v != Version {
		return fmt.Errorf("%w: the file is version %d, this build reads version %d", ErrVersion, v, Version)
	}
	return nil
}

func readRecord(cr *countingReader, m proto.Message, what string) error {
	err := protodelim.UnmarshalOptions{MaxSize: maxRecord}.UnmarshalFrom(cr, m)
	switch {
	case errors.Is(err, io.EOF), errors.Is(err, io.ErrUnexpectedEOF):
		return fmt.Errorf("%w: the %s is cut short", ErrTruncated, what)
	case err != nil:
		return fmt.Errorf("%w: %s: %w", ErrMalformed, what, err)
	}
	return nil
}

// countingReader counts the bytes taken from a bufio.Reader, so that the
// offset where the body starts is exact despite bufio reading ahead.
type countingReader struct {
	r *bufio.Reader
	n int64
}

func (c *countingReader) Read(p []byte) (int, error) {
	n, err := c.r.Read(p)
	c.n += int64(n)
	return n, err
}

func (c *countingReader) ReadByte() (byte, error) {
	b, err := c.r.ReadByte()
	if err == nil {
		c.n++
	}
	return b, err
}

package fsm

import (
	"bufio"
	"fmt"
	"hash"

	"google.golang.org/protobuf/encoding/protodelim"
	"google.golang.org/protobuf/proto"

	pb "github.com/raftcron/raftcron/proto/raftcron/v1"
)

// The secrets are the snapshot's last section, after the audit records:
// header.secret_count records, in strictly increasing name order, each the
// stored secret with its ciphertext (the snapshot, like the log, holds no
// value in clear). A state without secrets writes none, and reads as the
// snapshots written before secrets existed; a build from before them
// refuses a snapshot with secrets ("data after the last record"), which it
// could not honour.

func (a *secretState) header(h *pb.SnapshotHeader) {
	h.SecretCount = uint64(a.secrets.Len())
}

// writeTo writes the secret records in name order.
func (a *secretState) writeTo(put func(proto.Message) error) error {
	var err error
	a.secrets.Ascend(func(it secretItem) bool {
		if err = put(&pb.SnapshotRecord{Record: &pb.SnapshotRecord_Secret{Secret: it.secret}}); err != nil {
			err = fmt.Errorf("secret %q: %w", it.name, err)
		}
		return err == nil
	})
	return err
}

// readSecrets reads count secret records into a, checking each as a
// command would, and their order.
func (a *secretState) readSecrets(r *bufio.Reader, dec protodelim.UnmarshalOptions, count uint64) error {
	prev := ""
	for i := uint64(0); i < count; i++ {
		var rec pb.SnapshotRecord
		if err := dec.UnmarshalFrom(r, &rec); err != nil {
			return fmt.Errorf("secret record %d of %d: %w", i+1, count, truncated(err))
		}
		sc := rec.GetSecret()
		if sc == nil {
			return fmt.Errorf("record %d of %d secrets is not a secret", i+1, count)
		}
		if err := checkSecret("secret", sc); err != nil {
			return fmt.Errorf("secret record %d of %d: %w", i+1, count, err)
		}
		if i > 0 && sc.GetName() <= prev {
			return fmt.Errorf("secret %q follows %q: secrets must be in strictly increasing name order", sc.GetName(), prev)
		}
		if sc.GetVersion() == 0 {
			return fmt.Errorf("secret %q has version 0", sc.GetName())
		}
		prev = sc.GetName()
		a.put(sc)
	}
	return nil
}

// hash adds the secrets to a state hash; a state without any adds
// nothing, so it hashes as before secrets existed.
func (a *secretState) hash(h hash.Hash, m *marshaler) {
	if a.secrets.Len() == 0 {
		return
	}
	writeUint(h, uint64(a.secrets.Len()))
	a.secrets.Ascend(func(it secretItem) bool {
		m.write(it.secret, "secret", it.name)
		return true
	})
}

package cli

import (
	"context"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"time"

	"github.com/spf13/cobra"

	"github.com/raftcron/raftcron/backup"
	"github.com/raftcron/raftcron/internal/backoff"
	pb "github.com/raftcron/raftcron/proto/raftcron/v1"
)

// snapshotTimeout is the default --timeout of the snapshot commands: a
// snapshot of a million jobs takes a while to stream and restore.
const snapshotTimeout = 10 * time.Minute

// uploadChunk is the size of the chunks snapshot restore sends.
const uploadChunk = 256 << 10

func newSnapshotCmd() *cobra.Command {
	o := &clientOptions{}
	cmd := groupCmd("snapshot", "Back up and restore the whole cluster state (the management role when ACLs are on)")
	cmd.PersistentPreRunE = o.persistentResolve()
	o.register(cmd.PersistentFlags())
	o.timeout = snapshotTimeout
	cmd.PersistentFlags().Lookup(flagTimeout).DefValue = snapshotTimeout.String()
	cmd.AddCommand(newSnapshotSaveCmd(o), newSnapshotInspectCmd(o), newSnapshotRestoreCmd(o))
	return cmd
}

func newSnapshotSaveCmd(o *clientOptions) *cobra.Command {
	return &cobra.Command{
		Use:   "save FILE",
		Short: "Save a consistent snapshot of the cluster from its leader into FILE",
		Long: "Save a consistent snapshot of the cluster from its leader into FILE: every write\n" +
			"acknowledged before the call, with the Raft index and term it reflects and a\n" +
			"SHA-256 checksum. FILE appears only once the whole file has been received and\n" +
			"verified.",
		Args: cobra.ExactArgs(1),
		RunE: RunE(func(cmd *cobra.Command, args []string) error {
			f, err := saveSnapshot(cmd.Context(), o, args[0])
			if err != nil {
				return err
			}
			return writeBackupSaved(cmd.OutOrStdout(), o.output, args[0], f)
		}),
	}
}

func newSnapshotInspectCmd(o *clientOptions) *cobra.Command {
	return &cobra.Command{
		Use:   "inspect FILE",
		Short: "Verify a snapshot file whole and show what it holds (offline)",
		Args:  cobra.ExactArgs(1),
		RunE: RunE(func(cmd *cobra.Command, args []string) error {
			f, err := inspectBackup(args[0])
			if err != nil {
				return err
			}
			return writeBackupInfo(cmd.OutOrStdout(), o.output, args[0], f)
		}),
	}
}

func newSnapshotRestoreCmd(o *clientOptions) *cobra.Command {
	var force bool
	cmd := &cobra.Command{
		Use:   "restore FILE",
		Short: "Roll the jobs and runs of the whole cluster back to a snapshot file",
		Long: "Roll the jobs and runs of the whole cluster back to a snapshot file, through the\n" +
			"leader's Raft. The file is verified whole first, here and on the leader; a bad file\n" +
			"changes nothing. The cluster keeps its live ACL tokens and audit trail, which\n" +
			"records the restore and the file's header (cluster version 3; before it the file\n" +
			"replaced the whole state). The fencing counter never goes back: the next token is\n" +
			"above every token the cluster issued before, whatever the file holds. Runs the file\n" +
			"shows in flight are re-dispatched with new tokens (at_least_once) or marked unknown\n" +
			"(at_most_once). A file taken before the cluster bootstrapped its ACLs is refused\n" +
			"unless --force.",
		Args: cobra.ExactArgs(1),
		RunE: RunE(func(cmd *cobra.Command, args []string) error {
			f, err := inspectBackup(args[0])
			if err != nil {
				return err
			}
			res, err := restoreSnapshot(cmd.Context(), o, args[0], force)
			if err != nil {
				return err
			}
			return writeBackupRestored(cmd.OutOrStdout(), o.output, args[0], f, res)
		}),
	}
	cmd.Flags().BoolVar(&force, "force", false, "restore a file taken before the cluster bootstrapped its ACLs")
	return cmd
}

// inspectBackup opens and verifies a snapshot file.
func inspectBackup(path string) (*backup.File, error) {
	fh, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer fh.Close()
	return inspectOpen(fh, path)
}

func inspectOpen(fh *os.File, path string) (*backup.File, error) {
	st, err := fh.Stat()
	if err != nil {
		return nil, err
	}
	f, err := backup.Inspect(fh, st.Size())
	if err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	return f, nil
}

// saveSnapshot receives the file into a temporary file next to path,
// verifies it and only then renames it to path.
func saveSnapshot(parent context.Context, o *clientOptions, path string) (*backup.File, error) {
	tmp, err := os.CreateTemp(filepath.Dir(path), "."+filepath.Base(path)+".tmp-*")
	if err != nil {
		return nil, err
	}
	defer func() {
		_ = tmp.Close()
		_ = os.Remove(tmp.Name()) // fails harmlessly once renamed
	}()
	ctx, cancel := o.callContext(parent)
	defer cancel()
	err = onLeader(ctx, o, func(ctx context.Context, c pb.SnapshotServiceClient) error {
		if err := tmp.Truncate(0); err != nil {
			return err
		}
		if _, err := tmp.Seek(0, io.SeekStart); err != nil {
			return err
		}
		stream, err := c.SaveSnapshot(ctx, &pb.SaveSnapshotRequest{})
		if err != nil {
			return err
		}
		for {
			resp, err := stream.Recv()
			if errors.Is(err, io.EOF) {
				return nil
			}
			if err != nil {
				return err
			}
			if _, err := tmp.Write(resp.GetChunk()); err != nil {
				return err
			}
		}
	})
	if err != nil {
		return nil, o.call("snapshot").describe(err)
	}
	if err := tmp.Sync(); err != nil {
		return nil, err
	}
	f, err := inspectOpen(tmp, "received snapshot")
	if err != nil {
		return nil, err
	}
	if err := tmp.Close(); err != nil {
		return nil, err
	}
	return f, os.Rename(tmp.Name(), path)
}

func restoreSnapshot(parent context.Context, o *clientOptions, path string, force bool) (*pb.RestoreSnapshotResponse, error) {
	fh, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer fh.Close()
	ctx, cancel := o.callContext(parent)
	defer cancel()
	var res *pb.RestoreSnapshotResponse
	err = onLeader(ctx, o, func(ctx context.Context, c pb.SnapshotServiceClient) error {
		if _, err := fh.Seek(0, io.SeekStart); err != nil {
			return err
		}
		stream, err := c.RestoreSnapshot(ctx)
		if err != nil {
			return err
		}
		buf := make([]byte, uploadChunk)
		for first := true; ; first = false {
			n, rerr := io.ReadFull(fh, buf)
			if n > 0 {
				if err := stream.Send(&pb.RestoreSnapshotRequest{Chunk: buf[:n], Force: first && force}); err != nil {
					break // the node answered early: CloseAndRecv says why
				}
			}
			if errors.Is(rerr, io.EOF) || errors.Is(rerr, io.ErrUnexpectedEOF) {
				break
			}
			if rerr != nil {
				return rerr
			}
		}
		res, err = stream.CloseAndRecv()
		return err
	})
	if err != nil {
		return nil, o.call("snapshot").describe(err)
	}
	return res, nil
}

// onLeader runs call on the nodes of --addr and, while a node answers
// NOT_LEADER, again at the leader it names (or the next address), until
// ctx ends. Snapshots are not forwarded between nodes, and NOT_LEADER means
// nothing was done, so a retry is always safe.
func onLeader(ctx context.Context, o *clientOptions, call func(context.Context, pb.SnapshotServiceClient) error) error {
	conn, err := o.dial()
	if err != nil {
		return err
	}
	defer conn.Close()
	client := pb.NewSnapshotServiceClient(conn)
	return backoff.Retry(ctx, 50*time.Millisecond, time.Second, isNotLeader, func() error {
		err := call(ctx, client)
		conn.follow(err)
		return err
	})
}

// backupView is the JSON/YAML face of a snapshot file.
type backupView struct {
	File           string `json:"file"`
	Version        int    `json:"version"`
	Index          uint64 `json:"index"`
	Term           uint64 `json:"term"`
	TakenAt        string `json:"taken_at"`
	TakenBy        string `json:"taken_by"`
	SnapshotBytes  uint64 `json:"snapshot_bytes"`
	SnapshotFormat uint32 `json:"snapshot_format"`
	Jobs           int    `json:"jobs"`
	Tombstones     int    `json:"tombstones"`
	Runs           int    `json:"runs"`
	OpenRuns       int    `json:"open_runs"`
	FencingCounter uint64 `json:"fencing_counter"`
	// ACLBootstrapped: a cluster that bootstrapped its ACLs since refuses
	// the file unless restore --force.
	ACLBootstrapped bool   `json:"acl_bootstrapped"`
	SHA256          string `json:"sha256"`
}

func backupViewOf(path string, f *backup.File) backupView {
	h, s := f.Header, f.Snapshot
	return backupView{
		File: path, Version: backup.Version, Index: h.GetIndex(), Term: h.GetTerm(),
		TakenAt: h.GetTakenAt().AsTime().UTC().Format(time.RFC3339Nano), TakenBy: h.GetNodeId(),
		SnapshotBytes: h.GetSize(), SnapshotFormat: s.FormatVersion,
		Jobs: s.Jobs, Tombstones: s.Tombstones, Runs: s.Runs, OpenRuns: s.OpenRuns,
		FencingCounter: s.FencingCounter, ACLBootstrapped: s.ACLBootstrapped, SHA256: hex.EncodeToString(f.SHA256[:]),
	}
}

func writeBackupInfo(w io.Writer, format outputFormat, path string, f *backup.File) error {
	v := backupViewOf(path, f)
	switch format {
	case outputJSON:
		return writeJSON(w, v)
	case outputYAML:
		return writeYAML(w, v)
	}
	tw := newTable(w)
	for _, row := range [][2]any{
		{"FILE", v.File}, {"VERSION", v.Version}, {"INDEX", v.Index}, {"TERM", v.Term},
		{"TAKEN AT", v.TakenAt}, {"TAKEN BY", v.TakenBy}, {"SNAPSHOT BYTES", v.SnapshotBytes},
		{"JOBS", v.Jobs}, {"TOMBSTONES", v.Tombstones}, {"RUNS", v.Runs}, {"OPEN RUNS", v.OpenRuns},
		{"FENCING COUNTER", v.FencingCounter}, {"ACL BOOTSTRAPPED", v.ACLBootstrapped}, {"SHA256", v.SHA256},
	} {
		fmt.Fprintf(tw, "%s\t%v\n", row[0], row[1])
	}
	return tw.Flush()
}

func writeBackupSaved(w io.Writer, format outputFormat, path string, f *backup.File) error {
	if format != outputTable {
		return writeBackupInfo(w, format, path, f)
	}
	v := backupViewOf(path, f)
	_, err := fmt.Fprintf(w, "saved snapshot at index %d (term %d) to %s: %d jobs, %d open runs, fencing counter %d, sha256 %s\n",
		v.Index, v.Term, path, v.Jobs, v.OpenRuns, v.FencingCounter, v.SHA256)
	return err
}

// restoredView is the JSON/YAML face of a restore.
type restoredView struct {
	File               string `json:"file"`
	FileIndex          uint64 `json:"file_index"`
	Index              uint64 `json:"index"`
	Jobs               uint64 `json:"jobs"`
	OpenRuns           uint64 `json:"open_runs"`
	FencingCounter     uint64 `json:"fencing_counter"`
	FileFencingCounter uint64 `json:"file_fencing_counter"`
	KeptLiveState      bool   `json:"kept_live_state"`
}

func writeBackupRestored(w io.Writer, format outputFormat, path string, f *backup.File, res *pb.RestoreSnapshotResponse) error {
	v := restoredView{
		File: path, FileIndex: f.Header.GetIndex(), Index: res.GetIndex(), Jobs: res.GetJobs(), OpenRuns: res.GetOpenRuns(),
		FencingCounter: res.GetFencingCounter(), FileFencingCounter: res.GetFileFencingCounter(),
		KeptLiveState: res.GetKeptLiveState(),
	}
	switch format {
	case outputJSON:
		return writeJSON(w, v)
	case outputYAML:
		return writeYAML(w, v)
	}
	kept := "; the file replaced the whole state, ACL tokens and audit trail included"
	if v.KeptLiveState {
		kept = "; ACL tokens and audit trail kept as they were"
	}
	_, err := fmt.Fprintf(w, "restored %s (taken at index %d) as index %d: %d jobs, %d open runs; fencing counter %d (the file had %d)%s\n",
		path, v.FileIndex, v.Index, v.Jobs, v.OpenRuns, v.FencingCounter, v.FileFencingCounter, kept)
	return err
}

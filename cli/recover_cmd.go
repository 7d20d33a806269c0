package cli

import (
	"errors"
	"fmt"
	"io"
	"log/slog"
	"strings"

	"github.com/spf13/cobra"

	"github.com/raftcron/raftcron/cluster"
	"github.com/raftcron/raftcron/fsm"
)

// Flags of recover.
const (
	flagDataDir = "data-dir"
	flagPeers   = "peers"
	flagDryRun  = "dry-run"
)

func newRecoverCmd() *cobra.Command {
	var dir, peers string
	var dryRun bool
	cmd := &cobra.Command{
		Use:   "recover --data-dir DIR --peers ID=HOST:PORT,...",
		Short: "Rewrite a stopped node's membership after the quorum is lost for good (offline)",
		Long: "Disaster recovery, on a stopped node (offline): rewrite the membership recorded in\n" +
			"--data-dir to --peers, so that the node starts as a member of that new cluster with\n" +
			"every entry of its log, committed or not. Run it with the same --peers on each node\n" +
			"that carries on; then start them, and join new nodes with empty data dirs.\n" +
			"--dry-run only shows the data dir's last entry and membership: run it on every\n" +
			"survivor and recover the one with the highest term, then index.\n" +
			"Refuses while a node runs on --data-dir. See docs/operations.md.",
		Args: cobra.NoArgs,
		RunE: RunE(func(cmd *cobra.Command, _ []string) error {
			return runRecover(cmd.OutOrStdout(), dir, peers, dryRun)
		}),
	}
	fs := cmd.Flags()
	fs.StringVar(&dir, flagDataDir, "", "data dir of the stopped node")
	fs.StringVar(&peers, flagPeers, "", "members of the recovered cluster, ID=HOST:PORT,... (this node among them)")
	fs.BoolVar(&dryRun, flagDryRun, false, "show what the data dir holds and change nothing")
	return cmd
}

func runRecover(w io.Writer, dir, peerList string, dryRun bool) error {
	if dir == "" {
		return errors.New("--data-dir: required")
	}
	// Raft's own logs (snapshot progress) would break the one-line rule
	// of failures; the summary below says what happened.
	quiet := slog.New(slog.NewTextHandler(io.Discard, nil))
	before, err := cluster.ReadDataDir(dir, quiet)
	if err != nil {
		return err
	}
	if dryRun {
		_, err := fmt.Fprintf(w, "%s: last entry at index %d, term %d; members %s; nothing changed (dry run)\n",
			dir, before.Index, before.Term, peerString(before.Servers))
		return err
	}
	if peerList == "" {
		return errors.New("--peers: required: the members of the recovered cluster, ID=HOST:PORT,...")
	}
	peers, err := cluster.ParsePeers(peerList)
	if err != nil {
		return recoverFlagError(err)
	}
	state := fsm.New()
	after, err := cluster.Recover(dir, peers, state, quiet)
	if err != nil {
		return recoverFlagError(err)
	}
	_, err = fmt.Fprintf(w, "recovered %s at index %d, term %d: %d jobs, fencing counter %d; members were %s, now %s\n",
		dir, after.Index, after.Term, state.JobCount(), state.FencingToken(), peerString(before.Servers), peerString(after.Servers))
	return err
}

func peerString(peers []cluster.Peer) string {
	if len(peers) == 0 {
		return "none"
	}
	parts := make([]string, len(peers))
	for i, p := range peers {
		parts[i] = p.ID + "=" + p.Addr
	}
	return strings.Join(parts, ",")
}

// recoverFlagError names the flag behind a *cluster.ConfigError about the
// data dir or the peers; other errors stay as they are.
func recoverFlagError(err error) error {
	var ce *cluster.ConfigError
	if !errors.As(err, &ce) {
		return err
	}
	switch ce.Field {
	case cluster.FieldPeers:
		return fmt.Errorf("--%s: %s", flagPeers, ce.Rule)
	case cluster.FieldDataDir:
		return fmt.Errorf("--%s: %s", flagDataDir, ce.Rule)
	}
	return err
}

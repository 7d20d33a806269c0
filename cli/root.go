package cli

import (
	"fmt"
	"io"

	"github.com/spf13/cobra"
)

// NewRoot builds the raftcron command: the client commands (job, run,
// cluster, acl, tls, worker, ...) and those main adds (serve, dev), reading
// stdin and writing stdout and stderr. version is the binary's. Run it
// with Execute.
func NewRoot(version string, stdin io.Reader, stdout, stderr io.Writer, more ...*cobra.Command) *cobra.Command {
	root := &cobra.Command{
		Use:   "raftcron",
		Short: "A cron scheduler cluster replicated with Raft",
		Long: "raftcron runs cron jobs from a cluster of 3 or 5 nodes that replicate the job\n" +
			"registry through Raft. `raftcron serve` runs a node; the other commands are its client.",
		Args:          noSubcommand,
		RunE:          showHelp,
		SilenceUsage:  true,
		SilenceErrors: true,
		Version:       version,
	}
	root.SetIn(stdin)
	root.SetOut(stdout)
	root.SetErr(stderr)
	root.SetVersionTemplate(versionLine(version) + "\n")
	root.AddCommand(newJobCmd(), newRunCmd(), newFenceCmd(), newClusterCmd(), newACLCmd(), newVersionCmd(version))
	root.AddCommand(newSnapshotCmd(), newRecoverCmd(), newAuditCmd())
	root.AddCommand(newTLSCmd(), newWorkerCmd(version))
	root.AddCommand(newSecretCmd(), newCalendarCmd(), newFreezeCmd(), newCheckinCmd())
	root.AddCommand(newChannelCmd(), newNotifyCmd(), newAlertCmd())
	root.AddCommand(more...)
	// cobra's own completion command, made runnable so that an unknown
	// shell is a usage error rather than a help page.
	root.InitDefaultCompletionCmd()
	if comp, _, err := root.Find([]string{"completion"}); err == nil && comp != root {
		comp.RunE = showHelp
	}
	return root
}

// groupCmd is a command that only holds subcommands. It is runnable so that
// an unknown subcommand is a usage error rather than a silent help page.
func groupCmd(use, short string) *cobra.Command {
	return &cobra.Command{Use: use, Short: short, Args: noSubcommand, RunE: showHelp}
}

func showHelp(cmd *cobra.Command, _ []string) error { return cmd.Help() }

func noSubcommand(cmd *cobra.Command, args []string) error {
	if len(args) > 0 {
		return fmt.Errorf("unknown command %q for %q", args[0], cmd.CommandPath())
	}
	return nil
}

package cli

import (
	"fmt"
	"runtime"

	"github.com/spf13/cobra"
)

func versionLine(version string) string {
	return fmt.Sprintf("raftcron %s (%s, %s/%s)", version, runtime.Version(), runtime.GOOS, runtime.GOARCH)
}

func newVersionCmd(version string) *cobra.Command {
	return &cobra.Command{
		Use:   "version",
		Short: "Print the version of this binary",
		Args:  cobra.NoArgs,
		RunE: RunE(func(cmd *cobra.Command, _ []string) error {
			_, err := fmt.Fprintln(cmd.OutOrStdout(), versionLine(version))
			return err
		}),
	}
}

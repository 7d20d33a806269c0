package cli

import (
	"fmt"

	"github.com/spf13/cobra"

	pb "github.com/raftcron/raftcron/proto/raftcron/v1"
)

func newFenceCmd() *cobra.Command {
	o := &clientOptions{}
	cmd := groupCmd("fence", "Check fencing tokens")
	cmd.PersistentPreRunE = o.persistentResolve()
	o.register(cmd.PersistentFlags())
	cmd.AddCommand(newFenceCheckCmd(o))
	return cmd
}

// fenceResult is the JSON/YAML face of `fence check`.
type fenceResult struct {
	Job         string `json:"job"`
	Token       uint64 `json:"token"`
	Current     bool   `json:"current"`
	LatestToken uint64 `json:"latest_token"`
}

func newFenceCheckCmd(o *clientOptions) *cobra.Command {
	var (
		job   string
		token uint64
	)
	cmd := &cobra.Command{
		Use:   "check --job NAME --token N",
		Short: "Tell whether a token is still the latest of its job (exit 0) or stale (exit 1)",
		Long: "Ask the cluster whether --token is still the latest fencing token committed for\n" +
			"--job: exit 0 if it is (or newer), 1 if a later attempt has a larger one.\n" +
			"The answer is linearizable but only advisory: a newer attempt may commit right\n" +
			"after the check, so check-then-write races. The real fence is at the resource,\n" +
			"which must compare the token atomically with the write (the fence package does).",
		Args: cobra.NoArgs,
		RunE: RunE(func(cmd *cobra.Command, _ []string) error {
			if job == "" {
				return Usagef("--job: required")
			}
			if token == 0 {
				return Usagef("--token: required, at least 1")
			}
			conn, err := o.dial()
			if err != nil {
				return err
			}
			defer func() { _ = conn.Close() }()
			ctx, cancel := o.callContext(cmd.Context())
			defer cancel()
			resp, err := pb.NewFenceServiceClient(conn).CheckToken(ctx, &pb.CheckTokenRequest{Job: job, Token: token})
			if err != nil {
				return o.call(jobSubject(job)).describe(err)
			}
			res := fenceResult{Job: job, Token: token, Current: resp.GetCurrent(), LatestToken: resp.GetLatestToken()}
			return writeFenceResult(cmd, o.output, res)
		}),
	}
	cmd.Flags().StringVar(&job, "job", "", "the job the token was issued for")
	cmd.Flags().Uint64Var(&token, "token", 0, "the fencing token to check")
	return cmd
}

// writeFenceResult prints the answer; a stale token is a failure (exit 1)
// whatever the format.
func writeFenceResult(cmd *cobra.Command, format outputFormat, res fenceResult) error {
	var err error
	switch format {
	case outputJSON:
		err = writeJSON(cmd.OutOrStdout(), res)
	case outputYAML:
		err = writeYAML(cmd.OutOrStdout(), res)
	default:
		if res.Current {
			_, err = fmt.Fprintf(cmd.OutOrStdout(), "current (latest token %d)\n", res.LatestToken)
		}
	}
	if err != nil {
		return err
	}
	if !res.Current {
		return fmt.Errorf("stale: latest token is %d", res.LatestToken)
	}
	return nil
}

package cli

import (
	"fmt"

	"github.com/spf13/cobra"

	pb "github.com/raftcron/raftcron/proto/raftcron/v1"
)

// maxAuditLimit is the server's cap on listed audit records.
const maxAuditLimit = 1000

func newAuditCmd() *cobra.Command {
	o := &clientOptions{}
	cmd := groupCmd("audit", "Read the audit trail: who changed what, when")
	cmd.PersistentPreRunE = o.persistentResolve()
	o.register(cmd.PersistentFlags())
	cmd.AddCommand(newAuditListCmd(o))
	return cmd
}

func newAuditListCmd(o *clientOptions) *cobra.Command {
	var (
		job    string
		limit  int
		before uint64
		stale  bool
	)
	cmd := &cobra.Command{
		Use:   "list",
		Short: "List audit records, newest first",
		Long: "List audit records, newest first: the time the leader stamped, the principal,\n" +
			"the action, the job, its version before and after, and the fields changed.\n" +
			"Values that may hold secrets (http.body, http.headers, exec.env) read (hidden).\n" +
			"With ACLs on, it needs a token with the management role: records name principals.",
		Args: cobra.NoArgs,
		RunE: RunE(func(cmd *cobra.Command, _ []string) error {
			if limit < 0 || limit > maxAuditLimit {
				return Usagef("--limit: must be between 0 and %d (0: the server's default, 50)", maxAuditLimit)
			}
			conn, err := o.dial()
			if err != nil {
				return err
			}
			defer conn.Close()
			ctx, cancel := o.callContext(cmd.Context())
			defer cancel()
			resp, err := pb.NewAuditServiceClient(conn).ListAudit(ctx, &pb.ListAuditRequest{
				Job: job, Limit: uint32(limit), BeforeSeq: before, Stale: stale,
			})
			if err != nil {
				subject := ""
				if job != "" {
					subject = jobSubject(job)
				}
				return o.call(subject).describe(err)
			}
			return writeAudit(cmd.OutOrStdout(), o.output, resp.GetRecords())
		}),
	}
	cmd.Flags().StringVar(&job, "job", "", "only the records of this job")
	cmd.Flags().IntVar(&limit, "limit", 0, fmt.Sprintf("at most this many records (0: 50; at most %d)", maxAuditLimit))
	cmd.Flags().Uint64Var(&before, "before", 0, "only records older than this sequence number (the next page)")
	cmd.Flags().BoolVar(&stale, "stale", false, "read this node's state, which may lag the leader")
	return cmd
}

package cli

import (
	"context"
	"errors"
	"fmt"
	"io"
	"strings"
	"time"

	"github.com/spf13/cobra"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/raftcron/raftcron/fence"
	"github.com/raftcron/raftcron/fsm"
	"github.com/raftcron/raftcron/internal/backoff"
	pb "github.com/raftcron/raftcron/proto/raftcron/v1"
)

// Pings that reached no node, or whose answer was lost, are sent again
// within --timeout, waiting longer each time: a ping carries its request
// id, so a repeat counts once.
const (
	pingRetryFirst = 200 * time.Millisecond
	pingRetryMax   = 2 * time.Second
)

func newCheckinCmd() *cobra.Command {
	o := &clientOptions{}
	var (
		ping     pb.CheckinJobRequest
		exitCode int32
	)
	cmd := &cobra.Command{
		Use:   "checkin NAME [--status start|success|fail] [--exit-code N] [--run-id ID] | checkin NAME -- CMD [ARG...]",
		Short: "Check in a job that runs elsewhere, or run a command and check it in",
		Long: "Tell the cluster that a check-in job (checkin: {} in its file) ran: a ping is a run\n" +
			"in the ledger with its own fencing token. --status start opens a run, success\n" +
			"(the default) or fail closes the one --run-id names (the job's newest open run\n" +
			"without it), or opens and closes one.\n\n" +
			"With -- CMD, check in start, run CMD, then check in success or fail with its exit\n" +
			"status and the last 4 KiB of its output, and exit with CMD's status: a crontab\n" +
			"line becomes `raftcron checkin nightly -- /usr/local/bin/backup`. CMD gets the\n" +
			"run's RAFTCRON_JOB, RAFTCRON_RUN_ID and RAFTCRON_FENCING_TOKEN. Each ping is\n" +
			"retried within --timeout while no node answers; CMD runs and its status is the\n" +
			"exit status even when a ping fails, which is said on stderr.",
		Args:              cobra.MinimumNArgs(1),
		PersistentPreRunE: o.persistentResolve(),
		RunE: RunE(func(cmd *cobra.Command, args []string) error {
			ping.Name = args[0]
			if cmd.Flags().Changed("exit-code") {
				ping.ExitCode = &exitCode
			}
			if dash := cmd.ArgsLenAtDash(); dash >= 0 {
				if dash != 1 || len(args) < 2 {
					return Usagef("want checkin NAME -- CMD [ARG...]")
				}
				if cmd.Flags().Changed("status") || cmd.Flags().Changed("exit-code") || cmd.Flags().Changed("run-id") {
					return Usagef("--status, --exit-code and --run-id are for a ping alone: with -- CMD, the command's status decides")
				}
				return o.wrap(cmd, args[0], args[1:])
			}
			if len(args) != 1 {
				return Usagef("want checkin NAME, or checkin NAME -- CMD [ARG...] (put -- before the command)")
			}
			if ping.GetStatus() == "" {
				ping.Status = "success"
			}
			r, err := o.ping(cmd.Context(), &ping)
			if err != nil {
				return err
			}
			return writeCheckedIn(cmd.OutOrStdout(), o.output, r)
		}),
	}
	o.register(cmd.Flags())
	cmd.Flags().StringVar(&ping.Status, "status", "", "start, success (the default) or fail")
	cmd.Flags().Int32Var(&exitCode, "exit-code", 0, "the exit status of what ran (success: 0)")
	cmd.Flags().StringVar(&ping.RunId, "run-id", "", "success and fail: the run a start opened (its id)")
	return cmd
}

// ping sends req, a request id of its own, again within --timeout while no
// node answers or the answer is lost, and returns the run it recorded.
func (o *clientOptions) ping(parent context.Context, req *pb.CheckinJobRequest) (*pb.Run, error) {
	if req.GetRequestId() == "" {
		req.RequestId = randomRequestID()
	}
	client, closeConn, err := o.jobClient()
	if err != nil {
		return nil, err
	}
	defer closeConn()
	ctx, cancel := o.callContext(parent)
	defer cancel()
	var resp *pb.CheckinJobResponse
	err = backoff.Retry(ctx, pingRetryFirst, pingRetryMax, pingAgain, func() error {
		resp, err = client.CheckinJob(ctx, req)
		return err
	})
	if err != nil {
		return nil, o.call(jobSubject(req.GetName())).describe(err)
	}
	return resp.GetRun(), nil
}

// pingAgain tells the failures a repeat may mend: no node reached, no
// leader, the answer lost, the job moving on while the ping was matched.
func pingAgain(err error) bool {
	var down *unreachableError
	if errors.As(err, &down) {
		return true
	}
	switch status.Code(err) {
	case codes.Unavailable, codes.Aborted:
		return true
	}
	return false
}

func writeCheckedIn(w io.Writer, format outputFormat, r *pb.Run) error {
	return writeNewRun(w, format, r, func(a *pb.Attempt) string {
		slot := "slot " + unixTime(r.GetSlotUnix())
		if r.GetOffSchedule() {
			slot = "off schedule (the ping matched no slot)"
		}
		return fmt.Sprintf("job %s checked in: run %s, token %d, %s, %s",
			r.GetJob(), r.GetId(), a.GetToken(), orDash(stateName(r.GetState())), slot)
	})
}

// checkinEnv is what the command of a check-in learns of its run: the
// variables an exec run gets, so that it can fence its writes with the
// run's token (unsigned: no node dispatched it).
func checkinEnv(r *pb.Run) []string {
	run := fence.Run{
		Token: fsm.CurrentAttempt(r).GetToken(), Job: r.GetJob(), RunID: r.GetId(),
		ScheduledAt: time.Unix(r.GetSlotUnix(), 0).UTC(), Attempt: 1,
		IdempotencyKey: fence.SlotKey(r.GetJob(), time.Unix(r.GetSlotUnix(), 0)),
	}
	if r.GetOffSchedule() {
		run.IdempotencyKey = fence.RunKey(r.GetJob(), "checkin", r.GetId())
	}
	return run.Environ()
}

// warnPing says on stderr that a ping failed and what happens instead.
func warnPing(w io.Writer, what string, err error, then string) {
	fmt.Fprintf(w, "raftcron: %s not checked in: %s; %s\n", what, oneLine(err.Error()), then)
}

// pingStatus is the closing ping of a command that exited with code.
func pingStatus(code int) string {
	if code == 0 {
		return "success"
	}
	return "fail"
}

// quoteCommand is argv as a shell would take it back, for messages.
func quoteCommand(argv []string) string {
	return strings.Join(quoteArgs(argv), " ")
}

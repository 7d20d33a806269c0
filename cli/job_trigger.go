package cli

import (
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"unicode/utf8"

	"github.com/spf13/cobra"
	"google.golang.org/genproto/googleapis/rpc/errdetails"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/raftcron/raftcron/api"
	"github.com/raftcron/raftcron/fsm"
	pb "github.com/raftcron/raftcron/proto/raftcron/v1"
)

func newJobTriggerCmd(o *clientOptions) *cobra.Command {
	var (
		requestID string
		force     bool
		payload   string
		overlap   string
	)
	cmd := &cobra.Command{
		Use:   "trigger NAME",
		Short: "Run a job now, as a manual run with its own token",
		Long: "Commit a manual run of the job now and dispatch it. The run has its own slot\n" +
			"identity and fencing token and does not move the job's schedule. A call with the\n" +
			"same --request-id as an earlier one returns that call's run instead of running\n" +
			"again; without it a random id is used, which keeps the command's own retries\n" +
			"from running the job twice. A paused job runs only with --force.\n" +
			"--payload FILE (- for stdin, at most 64 KiB of UTF-8) is the run's webhook body\n" +
			"instead of the job's, RAFTCRON_PAYLOAD for an exec job, the worker's payload for a\n" +
			"worker job; --overlap gives this run its own overlap policy.",
		Args: cobra.ExactArgs(1),
		RunE: RunE(func(cmd *cobra.Command, args []string) error {
			req := &pb.TriggerJobRequest{Name: args[0], Force: force, Overlap: overlap}
			if payload != "" {
				data, err := readPayload(cmd.InOrStdin(), payload)
				if err != nil {
					return err
				}
				req.Payload = data
			}
			generated := requestID == ""
			if generated {
				requestID = randomRequestID()
			}
			client, ctx, done, err := o.jobCall(cmd.Context())
			if err != nil {
				return err
			}
			defer done()
			req.RequestId = requestID
			resp, err := client.TriggerJob(ctx, req)
			if err != nil {
				described := describeTrigger(o.call(jobSubject(args[0])), err)
				if generated && mayHaveRun(err) {
					return fmt.Errorf("%w (the run may have been committed: retry with --request-id %s so that it cannot run twice)", described, requestID)
				}
				return described
			}
			return writeTriggered(cmd.OutOrStdout(), o.output, resp.GetRun())
		}),
	}
	cmd.Flags().StringVar(&requestID, "request-id", "", "idempotency key: retries with the same id return the first run")
	cmd.Flags().BoolVar(&force, "force", false, "run even if the job is paused")
	cmd.Flags().StringVar(&payload, "payload", "", "the run's payload from FILE, or - for stdin (at most 64 KiB)")
	cmd.Flags().StringVar(&overlap, "overlap", "", "this run's overlap policy: skip, allow, buffer_one or cancel_other (default: the job's)")
	return cmd
}

// readPayload reads a trigger's payload from file ("-": stdin): at most
// api.MaxPayload bytes of UTF-8.
func readPayload(stdin io.Reader, file string) (string, error) {
	data, name, err := readInput(stdin, file)
	if err != nil {
		return "", err
	}
	switch {
	case len(data) > api.MaxPayload:
		return "", Usagef("--payload: %s holds %d bytes, more than the %d a payload may", name, len(data), api.MaxPayload)
	case !utf8.Valid(data):
		return "", Usagef("--payload: %s is not UTF-8 text", name)
	}
	return string(data), nil
}

// mayHaveRun tells the errors after which the trigger may have been
// committed (the answer was lost, or the outcome is unknown) from clear
// refusals. NOT_LEADER means nothing was proposed, and a call that reached
// no node was never sent.
func mayHaveRun(err error) bool {
	var down *unreachableError
	if errors.As(err, &down) {
		return false
	}
	st, ok := status.FromError(err)
	if !ok {
		return true
	}
	switch st.Code() {
	case codes.Unavailable:
		return !isNotLeader(err)
	case codes.DeadlineExceeded, codes.Canceled, codes.Unknown, codes.Internal:
		return true
	}
	return false
}

// describeTrigger names the flag that overrides a pause.
func describeTrigger(c call, err error) error {
	if st, ok := status.FromError(err); ok && st.Code() == codes.FailedPrecondition {
		for _, d := range st.Details() {
			pf, ok := d.(*errdetails.PreconditionFailure)
			if ok && len(pf.GetViolations()) > 0 && pf.GetViolations()[0].GetType() == api.PreconditionPaused {
				return fmt.Errorf("%s is paused: pass --force to run it anyway", c.about())
			}
		}
	}
	return c.describe(err)
}

func writeTriggered(w io.Writer, format outputFormat, r *pb.Run) error {
	return writeNewRun(w, format, r, func(a *pb.Attempt) string {
		return fmt.Sprintf("job %s triggered: run %s, token %d, attempt %d (%s)",
			r.GetJob(), r.GetId(), a.GetToken(), a.GetNumber(), orDash(stateName(r.GetState())))
	})
}

// writeNewRun prints the run a command made: as JSON or YAML, or in a
// table's stead the line that line makes of its current attempt.
func writeNewRun(w io.Writer, format outputFormat, r *pb.Run, line func(*pb.Attempt) string) error {
	switch format {
	case outputJSON:
		return writeJSON(w, runViewOf(r))
	case outputYAML:
		return writeYAML(w, runViewOf(r))
	}
	a := fsm.CurrentAttempt(r)
	if a == nil {
		return errors.New("the server returned a run without an attempt")
	}
	_, err := fmt.Fprintln(w, line(a))
	return err
}

// randomRequestID is 16 random bytes in hex, like the server's own.
func randomRequestID() string {
	var b [16]byte
	_, _ = rand.Read(b[:]) // crypto/rand.Read never fails
	return hex.EncodeToString(b[:])
}

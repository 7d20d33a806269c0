package cli

import (
	"fmt"
	"io"
	"time"

	"github.com/spf13/cobra"
	"google.golang.org/protobuf/types/known/timestamppb"

	pb "github.com/raftcron/raftcron/proto/raftcron/v1"
)

func newJobBackfillCmd(o *clientOptions) *cobra.Command {
	var (
		from, to      string
		overlap       string
		maxConcurrent uint32
		rerun, cancel bool
	)
	cmd := &cobra.Command{
		Use:   "backfill NAME (--from TIME --to TIME [--overlap skip|allow|buffer_one] [--max-concurrent N] [--rerun] | --cancel)",
		Short: "Fire every slot of a job's schedule in a past range once more",
		Long: "Fire every slot of the job's schedule in [--from, --to) once more, oldest first,\n" +
			"as runs of kind backfill: each under a new fencing token, with the slot's own\n" +
			"scheduled-at and idempotency key. A slot whose successful run is still in the\n" +
			"ledger (the job's last history_limit runs) is left alone unless --rerun. The\n" +
			"cluster keeps the backfill's progress: a new leader goes on where the last one\n" +
			"stopped, and no slot fires twice. --overlap says what a slot does when a run of\n" +
			"the job is open: buffer_one (the default) waits for it, skip records the slot\n" +
			"missed, allow runs it beside (up to --max-concurrent backfill runs at once).\n" +
			"job status shows the progress; --cancel stops it.",
		Args: cobra.ExactArgs(1),
		RunE: RunE(func(cmd *cobra.Command, args []string) error {
			if cancel {
				if from != "" || to != "" || rerun || overlap != "" || maxConcurrent != 0 {
					return Usagef("--cancel takes no other flag")
				}
				return cancelBackfill(cmd, o, args[0])
			}
			req, err := backfillRequest(args[0], from, to, overlap, maxConcurrent, rerun)
			if err != nil {
				return err
			}
			client, ctx, done, err := o.jobCall(cmd.Context())
			if err != nil {
				return err
			}
			defer done()
			resp, err := client.BackfillJob(ctx, req)
			if err != nil {
				return o.call(jobSubject(args[0])).describe(err)
			}
			return writeBackfill(cmd.OutOrStdout(), o.output, args[0], resp.GetBackfill())
		}),
	}
	cmd.Flags().StringVar(&from, "from", "", "the range's start, included (RFC 3339)")
	cmd.Flags().StringVar(&to, "to", "", "the range's end, excluded (RFC 3339, not after now)")
	cmd.Flags().StringVar(&overlap, "overlap", "", "a slot meeting an open run of the job: buffer_one (waits, the default), skip or allow")
	cmd.Flags().Uint32Var(&maxConcurrent, "max-concurrent", 0, "backfill runs open at once (1 to 100; above 1 with --overlap allow)")
	cmd.Flags().BoolVar(&rerun, "rerun", false, "fire slots that already have a successful run too")
	cmd.Flags().BoolVar(&cancel, "cancel", false, "stop the job's running backfill")
	return cmd
}

// backfillRequest checks the flags of a backfill: usage errors, before
// any call.
func backfillRequest(name, from, to, overlap string, maxConcurrent uint32, rerun bool) (*pb.BackfillJobRequest, error) {
	if from == "" || to == "" {
		return nil, Usagef("give --from and --to (or --cancel)")
	}
	f, err := time.Parse(time.RFC3339, from)
	if err != nil {
		return nil, Usagef("--from: %q is not an RFC 3339 time (2026-11-03T00:00:00Z)", from)
	}
	t, err := time.Parse(time.RFC3339, to)
	if err != nil {
		return nil, Usagef("--to: %q is not an RFC 3339 time (2026-11-04T00:00:00Z)", to)
	}
	if !f.Before(t) {
		return nil, Usagef("--from (%s) must be before --to (%s)", from, to)
	}
	return &pb.BackfillJobRequest{Name: name, From: timestamppb.New(f), To: timestamppb.New(t), Overlap: overlap,
		MaxConcurrent: maxConcurrent, Rerun: rerun}, nil
}

func cancelBackfill(cmd *cobra.Command, o *clientOptions, name string) error {
	client, ctx, done, err := o.jobCall(cmd.Context())
	if err != nil {
		return err
	}
	defer done()
	resp, err := client.CancelBackfill(ctx, &pb.CancelBackfillRequest{Name: name})
	if err != nil {
		return o.call(jobSubject(name)).describe(err)
	}
	return writeBackfill(cmd.OutOrStdout(), o.output, name, resp.GetBackfill())
}

// backfillView is the JSON/YAML face of a backfill.
type backfillView struct {
	ID            string `json:"id"`
	State         string `json:"state"`
	From          string `json:"from"`
	To            string `json:"to"`
	NextSlot      string `json:"next_slot,omitempty"`
	Slots         uint64 `json:"slots"`
	Fired         uint64 `json:"fired"`
	Skipped       uint64 `json:"skipped"`
	Missed        uint64 `json:"missed"`
	InFlight      uint32 `json:"in_flight"`
	Overlap       string `json:"overlap"`
	MaxConcurrent uint32 `json:"max_concurrent"`
	Rerun         bool   `json:"rerun,omitempty"`
	Reason        string `json:"reason,omitempty"`
	CreatedBy     string `json:"created_by,omitempty"`
	CreatedAt     string `json:"created_at,omitempty"`
	FinishedAt    string `json:"finished_at,omitempty"`
}

func backfillViewOf(bf *pb.Backfill) *backfillView {
	if bf == nil {
		return nil
	}
	v := &backfillView{
		ID: bf.GetId(), State: enumName(bf.GetState().String(), "BACKFILL_STATE_"),
		From: unixStamp(bf.GetFromUnix()), To: unixStamp(bf.GetToUnix()),
		Slots: bf.GetSlots(), Fired: bf.GetFired(), Skipped: bf.GetSkipped(), Missed: bf.GetMissed(), InFlight: bf.GetInFlight(),
		Overlap: bf.GetOverlap(), MaxConcurrent: bf.GetMaxConcurrent(), Rerun: bf.GetRerun(), Reason: bf.GetReason(),
		CreatedBy: bf.GetCreatedBy(), CreatedAt: nanoStamp(bf.GetCreatedAtUnixNano()), FinishedAt: nanoStamp(bf.GetFinishedAtUnixNano()),
	}
	if bf.GetNextSlotUnix() < bf.GetToUnix() {
		v.NextSlot = unixStamp(bf.GetNextSlotUnix())
	}
	return v
}

// backfillLine is a backfill in one line of text: its state and progress.
func backfillLine(bf *pb.Backfill) string {
	v := backfillViewOf(bf)
	line := fmt.Sprintf("backfill %s %s: %s to %s, %d of %d slots done (%d fired, %d skipped as succeeded, %d missed), %d in flight",
		v.ID, v.State, v.From, v.To, v.Fired+v.Skipped+v.Missed, v.Slots, v.Fired, v.Skipped, v.Missed, v.InFlight)
	if v.NextSlot != "" {
		line += ", next " + v.NextSlot
	}
	if v.Reason != "" {
		line += " (" + v.Reason + ")"
	}
	return line
}

func writeBackfill(w io.Writer, format outputFormat, job string, bf *pb.Backfill) error {
	switch format {
	case outputJSON:
		return writeJSON(w, backfillViewOf(bf))
	case outputYAML:
		return writeYAML(w, backfillViewOf(bf))
	}
	_, err := fmt.Fprintf(w, "job %s: %s\n", job, backfillLine(bf))
	return err
}

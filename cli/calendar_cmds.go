package cli

import (
	"context"
	"fmt"
	"io"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/raftcron/raftcron/jobfile"
	pb "github.com/raftcron/raftcron/proto/raftcron/v1"
)

func newCalendarCmd() *cobra.Command {
	o := &clientOptions{}
	cmd := groupCmd("calendar", "Manage the calendars jobs refer to (calendars: {exclude, only})")
	cmd.PersistentPreRunE = o.persistentResolve()
	o.register(cmd.PersistentFlags())
	cmd.AddCommand(newCalendarApplyCmd(o), newCalendarImportCmd(o), newCalendarListCmd(o),
		newCalendarGetCmd(o), newCalendarDeleteCmd(o))
	return cmd
}

// calendarCall runs one CalendarService call with --timeout.
func calendarCall[T any](cmd *cobra.Command, o *clientOptions, subject string,
	fn func(context.Context, pb.CalendarServiceClient) (T, error)) (T, error) {
	return unaryCall(cmd, o, subject, pb.NewCalendarServiceClient, fn)
}

func calendarSubject(name string) string { return fmt.Sprintf("calendar %q", name) }

func newCalendarApplyCmd(o *clientOptions) *cobra.Command {
	var file string
	cmd := &cobra.Command{
		Use:   "apply -f FILE",
		Short: "Create or update the calendars of a file (- reads stdin)",
		Long: "Create or update every calendar of a YAML or JSON calendar file (name, timezone,\n" +
			"labels, description, entries: dates, from/to ranges, weekly days with between).\n" +
			"A changed calendar decides every slot from the next one on.",
		Args: cobra.NoArgs,
		RunE: RunE(func(cmd *cobra.Command, _ []string) error {
			if file == "" {
				return Usagef("-f: required (a calendar file, or - for stdin)")
			}
			data, name, err := readInput(cmd.InOrStdin(), file)
			if err != nil {
				return err
			}
			specs, err := jobfile.DecodeCalendars(data)
			if err != nil {
				return fmt.Errorf("%s: %w", name, err)
			}
			var changes []change
			for _, spec := range specs {
				resp, err := calendarCall(cmd, o, calendarSubject(spec.GetName()), func(ctx context.Context, c pb.CalendarServiceClient) (*pb.ApplyCalendarResponse, error) {
					return c.ApplyCalendar(ctx, &pb.ApplyCalendarRequest{Spec: spec})
				})
				if err != nil {
					_ = writeChanges(cmd.OutOrStdout(), o.output, changes)
					return err
				}
				changes = append(changes, calendarChange(resp.GetCalendar(), applyResult(resp.GetCreated(), resp.GetChanged())))
			}
			return writeChanges(cmd.OutOrStdout(), o.output, changes)
		}),
	}
	cmd.Flags().StringVarP(&file, "file", "f", "", "calendar file (YAML or JSON; - for stdin)")
	return cmd
}

func calendarChange(c *pb.Calendar, result string) change {
	return change{Kind: "calendar", Name: c.GetSpec().GetName(), Result: result, Version: c.GetVersion()}
}

func newCalendarImportCmd(o *clientOptions) *cobra.Command {
	var file, zone, labels, description string
	cmd := &cobra.Command{
		Use:   "import NAME --ics FILE [--timezone TZ]",
		Short: "Create or replace a calendar from an iCalendar (.ics) file (- reads stdin)",
		Long: "Create or replace calendar NAME with the events of an iCalendar file (RFC 5545):\n" +
			"all-day events become dates, timed ones ranges; RRULE, RDATE and EXDATE are\n" +
			"expanded in the event's zone, from the start of last year through the end of the\n" +
			"fifth year ahead (at most 10,000 entries): import the file again to extend it.\n" +
			"--timezone is the calendar's zone (default: the file's X-WR-TIMEZONE, else UTC).",
		Args: cobra.ExactArgs(1),
		RunE: RunE(func(cmd *cobra.Command, args []string) error {
			if file == "" {
				return Usagef("--ics: required (an iCalendar file, or - for stdin)")
			}
			sel, err := parseKV("--labels", labels)
			if err != nil {
				return err
			}
			data, _, err := readInput(cmd.InOrStdin(), file)
			if err != nil {
				return err
			}
			resp, err := calendarCall(cmd, o, calendarSubject(args[0]), func(ctx context.Context, c pb.CalendarServiceClient) (*pb.ImportCalendarResponse, error) {
				return c.ImportCalendar(ctx, &pb.ImportCalendarRequest{
					Name: args[0], Ics: string(data), Timezone: zone, Labels: sel, Description: description,
				})
			})
			if err != nil {
				return err
			}
			if o.output == outputTable {
				fmt.Fprintf(cmd.ErrOrStderr(), "%d events read, %d entries, recurrences expanded until %s\n",
					resp.GetEvents(), resp.GetEntries(), resp.GetExpandedUntil().AsTime().UTC().Format(time.DateOnly))
			}
			return writeChanges(cmd.OutOrStdout(), o.output, []change{calendarChange(resp.GetCalendar(), applyResult(resp.GetCreated(), resp.GetChanged()))})
		}),
	}
	cmd.Flags().StringVar(&file, "ics", "", "iCalendar file (- for stdin)")
	cmd.Flags().StringVar(&zone, "timezone", "", "the calendar's IANA zone")
	cmd.Flags().StringVar(&labels, "labels", "", "k=v,...: the calendar's labels (its scope)")
	cmd.Flags().StringVar(&description, "description", "", "what the calendar is")
	return cmd
}

func newCalendarListCmd(o *clientOptions) *cobra.Command {
	return &cobra.Command{
		Use:   "list",
		Short: "List the calendars by name",
		Args:  cobra.NoArgs,
		RunE: RunE(func(cmd *cobra.Command, _ []string) error {
			resp, err := calendarCall(cmd, o, "", func(ctx context.Context, c pb.CalendarServiceClient) (*pb.ListCalendarsResponse, error) {
				return c.ListCalendars(ctx, &pb.ListCalendarsRequest{})
			})
			if err != nil {
				return err
			}
			return writeCalendarList(cmd.OutOrStdout(), o.output, resp.GetCalendars())
		}),
	}
}

func newCalendarGetCmd(o *clientOptions) *cobra.Command {
	return &cobra.Command{
		Use:   "get NAME",
		Short: "Show a calendar: -o yaml prints the calendar file, which applies back unchanged",
		Args:  cobra.ExactArgs(1),
		RunE: RunE(func(cmd *cobra.Command, args []string) error {
			resp, err := calendarCall(cmd, o, calendarSubject(args[0]), func(ctx context.Context, c pb.CalendarServiceClient) (*pb.GetCalendarResponse, error) {
				return c.GetCalendar(ctx, &pb.GetCalendarRequest{Name: args[0]})
			})
			if err != nil {
				return err
			}
			return writeCalendar(cmd.OutOrStdout(), o.output, resp.GetCalendar(), resp.GetUsedBy())
		}),
	}
}

func newCalendarDeleteCmd(o *clientOptions) *cobra.Command {
	return &cobra.Command{
		Use:   "delete NAME",
		Short: "Delete a calendar; refused while a job refers to it",
		Args:  cobra.ExactArgs(1),
		RunE: RunE(func(cmd *cobra.Command, args []string) error {
			if _, err := calendarCall(cmd, o, calendarSubject(args[0]), func(ctx context.Context, c pb.CalendarServiceClient) (*pb.DeleteCalendarResponse, error) {
				return c.DeleteCalendar(ctx, &pb.DeleteCalendarRequest{Name: args[0]})
			}); err != nil {
				return err
			}
			_, err := fmt.Fprintf(cmd.OutOrStdout(), "calendar %s deleted\n", args[0])
			return err
		}),
	}
}

// writeCalendar prints a calendar: JSON and YAML are the calendar file;
// the table lists its entries and the jobs that use it.
func writeCalendar(w io.Writer, format outputFormat, c *pb.Calendar, usedBy []string) error {
	switch format {
	case outputJSON:
		return writeEncodedCalendars(w, jobfile.EncodeCalendarsJSON, c.GetSpec())
	case outputYAML:
		return writeEncodedCalendars(w, jobfile.EncodeCalendarsYAML, c.GetSpec())
	}
	spec := c.GetSpec()
	tw := newTable(w)
	fmt.Fprintf(tw, "name:\t%s\n", spec.GetName())
	fmt.Fprintf(tw, "timezone:\t%s\n", orDash(spec.GetTimezone()))
	fmt.Fprintf(tw, "labels:\t%s\n", selectorText(spec.GetLabels()))
	if d := spec.GetDescription(); d != "" {
		fmt.Fprintf(tw, "description:\t%s\n", d)
	}
	fmt.Fprintf(tw, "version:\t%d\n", c.GetVersion())
	fmt.Fprintf(tw, "used by:\t%s\n", orDash(strings.Join(usedBy, ", ")))
	fmt.Fprintln(tw)
	fmt.Fprintln(tw, "ENTRY\tNOTE")
	for _, e := range spec.GetEntries() {
		fmt.Fprintf(tw, "%s\t%s\n", entryText(e), e.GetNote())
	}
	return tw.Flush()
}

// entryText is one entry as a line: a date, a range, or a weekly window.
func entryText(e *pb.CalendarEntry) string {
	switch {
	case e.GetDate() != "":
		return e.GetDate()
	case len(e.GetDays()) > 0:
		s := strings.Join(e.GetDays(), ", ")
		if b := e.GetBetween(); b != "" {
			s += " " + b
		}
		return s
	}
	return e.GetFrom() + " .. " + e.GetTo()
}

func writeEncodedCalendars(w io.Writer, encode func(...*pb.CalendarSpec) ([]byte, error), specs ...*pb.CalendarSpec) error {
	b, err := encode(specs...)
	if err != nil {
		return err
	}
	_, err = w.Write(b)
	return err
}

// writeCalendarList prints calendars without their entries: JSON and YAML
// as the calendars' metadata, the table one line each.
func writeCalendarList(w io.Writer, format outputFormat, cals []*pb.Calendar) error {
	type view struct {
		Name     string            `json:"name"`
		Timezone string            `json:"timezone,omitempty"`
		Labels   map[string]string `json:"labels,omitempty"`
		Entries  uint32            `json:"entries"`
		Version  uint64            `json:"version"`
		Updated  string            `json:"updated_at,omitempty"`
	}
	views := make([]view, len(cals))
	for i, c := range cals {
		views[i] = view{Name: c.GetSpec().GetName(), Timezone: c.GetSpec().GetTimezone(), Labels: c.GetSpec().GetLabels(),
			Entries: c.GetEntryCount(), Version: c.GetVersion()}
		if c.GetUpdatedAt() != nil {
			views[i].Updated = c.GetUpdatedAt().AsTime().UTC().Format(time.RFC3339)
		}
	}
	switch format {
	case outputJSON:
		return writeJSON(w, views)
	case outputYAML:
		return writeYAML(w, views)
	}
	tw := newTable(w)
	fmt.Fprintln(tw, "NAME\tTIMEZONE\tENTRIES\tLABELS\tVERSION\tUPDATED")
	for _, v := range views {
		fmt.Fprintf(tw, "%s\t%s\t%d\t%s\t%d\t%s\n", v.Name, orDash(v.Timezone), v.Entries, selectorText(v.Labels), v.Version, v.Updated)
	}
	return tw.Flush()
}

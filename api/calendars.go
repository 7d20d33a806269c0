package api

import (
	"context"
	"fmt"
	"strings"
	"time"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/types/known/timestamppb"

	"github.com/raftcron/raftcron/calendar/ics"
	"github.com/raftcron/raftcron/fsm"
	"github.com/raftcron/raftcron/internal/failpoint"
	"github.com/raftcron/raftcron/jobspec"
	pb "github.com/raftcron/raftcron/proto/raftcron/v1"
	"github.com/raftcron/raftcron/schedule"
)

// Calendars is this node's applied calendars and freezes, and what decides
// a job's slots (fsm.FSM).
type Calendars interface {
	Calendar(name string) (*pb.Calendar, []string, error)
	ListCalendars() []*pb.Calendar
	Freezes() []*pb.Freeze
	Stops(job string) (fsm.Stops, error)
}

// Calendars and freezes are scoped as jobs are: a token with a selector
// sees and changes only the calendars whose labels include it (one outside
// reads as missing), and refers a job only to those; it creates and
// deletes only freezes whose selector includes its own, and sees those
// that may match a job it sees. The FSM enforces the writes' scope again,
// atomically with them (Command.caller).

type calendarService struct {
	pb.UnimplementedCalendarServiceServer
	store  Store
	cals   Calendars
	reg    Registry
	now    func() time.Time
	audit  *AuditSwitch
	cluVer func() uint32
}

// NewCalendarService serves CalendarService from d's Store and Calendars
// (required), Registry (for the jobs a calendar's reader may see), Audit,
// ClusterVersion and Now.
func NewCalendarService(d Deps) pb.CalendarServiceServer {
	d = d.withDefaults()
	return &calendarService{store: d.Store, cals: d.Calendars, reg: d.Registry, now: d.Now, audit: d.Audit, cluVer: d.ClusterVersion}
}

func (c *calendarService) ApplyCalendar(ctx context.Context, req *pb.ApplyCalendarRequest) (*pb.ApplyCalendarResponse, error) {
	spec := req.GetSpec()
	if spec == nil {
		return nil, fieldError("spec", "required")
	}
	if name := req.GetName(); name != "" {
		if spec.GetName() != "" && spec.GetName() != name {
			return nil, fieldError("spec.name", fmt.Sprintf("the body names calendar %q and the path calendar %q: they must be the same", spec.GetName(), name))
		}
		spec.Name = name
	}
	res, err := c.put(ctx, spec, req.GetExpectedVersion())
	if err != nil {
		return nil, err
	}
	return &pb.ApplyCalendarResponse{Calendar: res.GetCalendar(), Changed: res.GetChanged(), Created: res.GetCreated()}, nil
}

func (c *calendarService) ImportCalendar(ctx context.Context, req *pb.ImportCalendarRequest) (*pb.ImportCalendarResponse, error) {
	if len(req.GetIcs()) > ics.MaxBytes {
		return nil, fieldError("ics", "at most 1 MiB")
	}
	cal, err := ics.Parse(strings.NewReader(req.GetIcs()))
	if err != nil {
		return nil, fieldError("ics", err.Error())
	}
	zone := strings.TrimSpace(req.GetTimezone())
	if zone == "" {
		zone = ics.Zone(cal)
	}
	loc, err := schedule.LoadLocation(zone)
	if err != nil {
		field := "timezone"
		if req.GetTimezone() == "" {
			field = "ics"
			err = fmt.Errorf("X-WR-TIMEZONE %q: %w", zone, err)
		}
		return nil, fieldError(field, err.Error())
	}
	window := ics.DefaultWindow(c.now())
	read, err := ics.Entries(cal, loc, window)
	if err != nil {
		return nil, fieldError("ics", err.Error())
	}
	spec := &pb.CalendarSpec{
		Name: req.GetName(), Timezone: zone, Description: req.GetDescription(),
		Labels: req.GetLabels(), Entries: read.Entries,
	}
	res, err := c.put(ctx, spec, req.GetExpectedVersion())
	if err != nil {
		return nil, err
	}
	return &pb.ImportCalendarResponse{
		Calendar: res.GetCalendar(), Changed: res.GetChanged(), Created: res.GetCreated(),
		Events: uint32(read.Events), Entries: uint32(len(read.Entries)), ExpandedUntil: timestamppb.New(window.Until),
	}, nil
}

// put validates spec, reads its zone's offsets and proposes it.
func (c *calendarService) put(ctx context.Context, spec *pb.CalendarSpec, expected uint64) (*pb.CommandResult, error) {
	if err := allowVersion(ctx, c.store, c.cluVer, "calendars", fsm.CalendarsVersion); err != nil {
		return nil, err
	}
	zone, err := jobspec.ValidateCalendar(spec)
	if err != nil {
		return nil, invalidArgument(err, "spec")
	}
	if p := PrincipalFrom(ctx); !p.sees(spec.GetLabels()) {
		return nil, status.Errorf(codes.PermissionDenied, "spec.labels: calendar %q must carry the labels %s of ACL token %q",
			spec.GetName(), FormatSelector(p.Selector), p.Name)
	}
	return commit(ctx, c.store, c.audit, &pb.Command{Kind: &pb.Command_PutCalendar{PutCalendar: &pb.PutCalendarCommand{
		Calendar: &pb.Calendar{Spec: spec, Zone: zone}, ExpectedVersion: expected,
	}}})
}

func (c *calendarService) GetCalendar(ctx context.Context, req *pb.GetCalendarRequest) (*pb.GetCalendarResponse, error) {
	if err := validJobName("name", req.GetName()); err != nil {
		return nil, err
	}
	if err := readBarrier(ctx, c.store, req.GetStale()); err != nil {
		return nil, err
	}
	cal, users, err := c.cals.Calendar(req.GetName())
	if err != nil {
		return nil, statusOf(err)
	}
	p := PrincipalFrom(ctx)
	if !p.sees(cal.GetSpec().GetLabels()) {
		return nil, status.Errorf(codes.NotFound, "calendar %q not found", req.GetName())
	}
	return &pb.GetCalendarResponse{Calendar: cal, UsedBy: c.visibleJobs(p, users)}, nil
}

// visibleJobs keeps the names of the jobs the principal sees.
func (c *calendarService) visibleJobs(p Principal, names []string) []string {
	if len(p.Selector) == 0 || c.reg == nil {
		return names
	}
	var out []string
	for _, n := range names {
		if j, err := c.reg.Job(n); err == nil && p.sees(j.GetSpec().GetLabels()) {
			out = append(out, n)
		}
	}
	return out
}

func (c *calendarService) ListCalendars(ctx context.Context, req *pb.ListCalendarsRequest) (*pb.ListCalendarsResponse, error) {
	if err := readBarrier(ctx, c.store, req.GetStale()); err != nil {
		return nil, err
	}
	p := PrincipalFrom(ctx)
	var out []*pb.Calendar
	for _, cal := range c.cals.ListCalendars() {
		if p.sees(cal.GetSpec().GetLabels()) {
			out = append(out, cal)
		}
	}
	return &pb.ListCalendarsResponse{Calendars: out}, nil
}

func (c *calendarService) DeleteCalendar(ctx context.Context, req *pb.DeleteCalendarRequest) (*pb.DeleteCalendarResponse, error) {
	if err := validJobName("name", req.GetName()); err != nil {
		return nil, err
	}
	if _, err := commit(ctx, c.store, c.audit, &pb.Command{Kind: &pb.Command_DeleteCalendar{DeleteCalendar: &pb.DeleteCalendarCommand{
		Name: req.GetName(),
	}}}); err != nil {
		return nil, err
	}
	return &pb.DeleteCalendarResponse{}, nil
}

// commit proposes cmd as the caller's, the audit trail switched on first
// if it can be; a result other than OK is an error.
func commit(ctx context.Context, store Store, audit *AuditSwitch, cmd *pb.Command) (*pb.CommandResult, error) {
	audit.ensure(ctx)
	cmd.Caller = PrincipalFrom(ctx).caller()
	res, err := store.Apply(ctx, cmd)
	if err != nil {
		return nil, statusOf(err)
	}
	if res.GetCode() != pb.ResultCode_RESULT_CODE_OK {
		return nil, resultStatus(res)
	}
	return res, nil
}

// readBarrier makes the next read linearizable unless the caller asked for
// this node's possibly stale state.
func readBarrier(ctx context.Context, b Barrier, stale bool) error {
	if stale || failpoint.On(failpoint.StaleReads) {
		return nil
	}
	return statusOf(b.ReadBarrier(ctx))
}

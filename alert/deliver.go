package alert

import (
	"context"
	"fmt"
	"net/url"
	"time"

	"google.golang.org/protobuf/proto"

	"github.com/raftcron/raftcron/internal/failpoint"
	"github.com/raftcron/raftcron/jobspec"
	pb "github.com/raftcron/raftcron/proto/raftcron/v1"
	"github.com/raftcron/raftcron/secret"
)

// Retries: the wait after attempt n failed is min(firstBackoff·2^(n-1),
// maxBackoff); after maxAttempts the alert is given up (about 50 minutes
// of trying).
const (
	firstBackoff = time.Second
	maxBackoff   = 5 * time.Minute
	maxAttempts  = 16
	// maxRecords is the most attempts one record_deliveries carries.
	maxRecords = 1000
)

// delivery is what this term knows of a pending alert.
type delivery struct {
	attempts uint32 // made, by any leader
	next     time.Time
	inFlight bool
	// acked: the receiver took it; the record is on its way.
	acked bool
}

func backoff(n uint32) time.Duration {
	d := firstBackoff
	for i := uint32(1); i < n && d < maxBackoff; i++ {
		d *= 2
	}
	return min(d, maxBackoff)
}

// deliver starts a send for every pending alert whose next attempt is due,
// as many at once as there are slots.
func (t *term) deliver(now time.Time) {
	pending := t.a.cfg.State.PendingAlerts()
	seen := make(map[string]bool, len(pending))
	for _, al := range pending {
		seen[al.GetId()] = true
		d, ok := t.deliveries[al.GetId()]
		if !ok {
			d = &delivery{attempts: al.GetAttemptCount(), next: now}
			if n := len(al.GetAttempts()); n > 0 {
				// Carry on with the backoff an earlier leader reached.
				d.next = time.Unix(0, al.GetAttempts()[n-1].GetAtUnixNano()).Add(backoff(d.attempts))
			}
			t.deliveries[al.GetId()] = d
			if al.GetAttemptCount() == 0 && !t.counted[al.GetId()] {
				t.counted[al.GetId()] = true
				t.a.metrics.raised(al)
			}
		}
		if d.inFlight || d.acked || now.Before(d.next) {
			continue
		}
		select {
		case t.slots <- struct{}{}:
		default:
			return // all slots busy: the next pass
		}
		d.inFlight = true
		t.sends.Add(1)
		go t.attempt(al, d.attempts+1)
	}
	for id := range t.deliveries {
		if !seen[id] && !t.deliveries[id].inFlight {
			delete(t.deliveries, id)
		}
	}
}

// attempt sends al once and queues the record of how it went.
func (t *term) attempt(al *pb.Alert, n uint32) {
	defer t.sends.Done()
	defer func() { <-t.slots }()
	res := t.a.sendOne(t.ctx, al, n)
	if t.ctx.Err() != nil {
		return // the term is over: the next leader sends it again
	}
	final := !res.OK && n >= maxAttempts
	t.a.metrics.delivered(al.GetChannel(), res.OK, final)
	if !res.OK {
		t.a.log.Info("alerts: delivery failed", "alert", al.GetId(), "channel", al.GetChannel(), "attempt", n, "answer", res.Answer)
	}
	rec := &pb.DeliveryRecord{AlertId: al.GetId(), Attempt: &pb.DeliveryAttempt{
		Number: n, AtUnixNano: t.a.cfg.Now().UnixNano(), Ok: res.OK, Status: int32(res.Status), Answer: res.Answer,
		NodeId: t.a.cfg.Proposer.ID(), Final: final,
	}}
	t.mu.Lock()
	t.results = append(t.results, rec)
	t.mu.Unlock()
	t.a.poke()
}

// record commits the attempts made since the last record, in one entry;
// what does not commit is tried again next pass.
func (t *term) record() {
	t.mu.Lock()
	recs := t.results
	if len(recs) > maxRecords {
		recs, t.results = recs[:maxRecords], recs[maxRecords:]
	} else {
		t.results = nil
	}
	t.mu.Unlock()
	for _, r := range recs {
		d := t.deliveries[r.GetAlertId()]
		if d == nil {
			continue
		}
		d.inFlight = false
		d.attempts = max(d.attempts, r.GetAttempt().GetNumber())
		d.acked = d.acked || r.GetAttempt().GetOk()
		d.next = time.Unix(0, r.GetAttempt().GetAtUnixNano()).Add(backoff(d.attempts))
	}
	if len(recs) == 0 {
		return
	}
	if !t.propose(&pb.Command{Kind: &pb.Command_RecordDeliveries{RecordDeliveries: &pb.RecordDeliveriesCommand{
		Records: recs, HistoryLimit: t.a.cfg.HistoryLimit,
	}}}) {
		t.mu.Lock()
		t.results = append(recs, t.results...)
		t.mu.Unlock()
	}
}

// sendOne fills in the channel's secrets and sends al to it.
func (a *Alerter) sendOne(ctx context.Context, al *pb.Alert, attempt uint32) Result {
	ch, ok := a.cfg.State.Channel(al.GetChannel())
	if !ok {
		return Result{Answer: fmt.Sprintf("channel %q not found", al.GetChannel())}
	}
	filled, values, err := a.fill(ch)
	if err != nil {
		return Result{Answer: err.Error()}
	}
	if failpoint.On(failpoint.AlertSendTwice) {
		// The negative control of "one id per event": a resend under a
		// fresh id, as a leader that re-derived the event would make.
		again := proto.CloneOf(al)
		again.Id += "-again"
		a.send.send(ctx, filled, again, attempt)
	}
	ctx, cancel := context.WithTimeout(ctx, a.cfg.Timeout)
	defer cancel()
	res := a.send.send(ctx, filled, al, attempt)
	res.Answer = secret.ScrubString(res.Answer, values)
	return res
}

// fill is ch with its ${secret:NAME} references filled in, and the values
// used (to scrub from answers). A channel may use only the secrets whose
// labels its own include, as a job.
func (a *Alerter) fill(ch *pb.Channel) (*pb.Channel, []string, error) {
	c := proto.CloneOf(ch)
	owner := &pb.JobSpec{Name: "channel " + ch.GetName(), Labels: ch.GetLabels()}
	var values []string
	err := jobspec.ChannelSecretFields(c, func(path, value string) (string, error) {
		return secret.Expand(value, func(name string) (string, error) {
			sc, err := a.cfg.State.SecretFor(owner, name)
			if err != nil {
				return "", fmt.Errorf("%s: %s: %w", path, secret.ReasonMissing, err)
			}
			v, err := a.cfg.SecretKeys.Open(sc.GetName(), sc.GetKeyId(), sc.GetCiphertext())
			if err != nil {
				return "", fmt.Errorf("%s: %s: %w", path, secret.ReasonMissing, err)
			}
			values = append(values, string(v), url.QueryEscape(string(v)), url.PathEscape(string(v)))
			return string(v), nil
		})
	})
	return c, values, err
}

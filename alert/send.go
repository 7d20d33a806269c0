package alert

import (
	"bytes"
	"context"
	"crypto/x509"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/raftcron/raftcron/fence"
	pb "github.com/raftcron/raftcron/proto/raftcron/v1"
	"github.com/raftcron/raftcron/scheduler/dispatch"
)

// PagerDutyURL is the Events API v2 endpoint a PagerDuty channel uses
// unless it names another.
const PagerDutyURL = "https://events.pagerduty.com/v2/enqueue"

// maxAnswer bounds what a receiver's answer keeps.
const maxAnswer = 256

// Result is a receiver's answer to one attempt.
type Result struct {
	OK     bool
	Status int
	Answer string
}

// Keys sign webhook notifications (fence.Keys): v2, as dispatches.
type Keys interface {
	SignV2(fence.Dispatch) (string, error)
}

// sender sends notifications to channels whose secrets are filled in.
type sender struct {
	http *http.Client
	dial func(ctx context.Context, network, addr string) (net.Conn, error)
	keys Keys
	site Site
	// roots verify an SMTP server's certificate; nil: the system's
	// (SSL_CERT_FILE and SSL_CERT_DIR name others).
	roots *x509.CertPool
}

func newSender(egress dispatch.AddrPolicy, keys Keys, site Site, timeout time.Duration) *sender {
	return &sender{
		http: &http.Client{
			Transport: dispatch.NewTransport(egress, nil),
			Timeout:   timeout,
			// A notification is never redirected: the receiver is the URL.
			CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse },
		},
		dial: dispatch.NewDialer(egress, nil).DialContext,
		keys: keys, site: site,
	}
}

// send hands a to ch, attempt being its 1-based try.
func (s *sender) send(ctx context.Context, ch *pb.Channel, a *pb.Alert, attempt uint32) Result {
	switch {
	case ch.GetWebhook() != nil:
		return s.webhook(ctx, ch.GetWebhook(), a, attempt)
	case ch.GetSlack() != nil:
		return s.post(ctx, ch.GetSlack().GetUrl(), nil, a, slackPayload(a, s.site), attempt, false)
	case ch.GetPagerduty() != nil:
		target := ch.GetPagerduty().GetUrl()
		if target == "" {
			target = PagerDutyURL
		}
		return s.post(ctx, target, nil, a, pagerDutyPayload(ch.GetPagerduty().GetRoutingKey(), a, s.site), attempt, false)
	case ch.GetEmail() != nil:
		return s.email(ctx, ch.GetEmail(), a)
	}
	return Result{Answer: "channel " + ch.GetName() + " has no target"}
}

func (s *sender) webhook(ctx context.Context, w *pb.WebhookChannel, a *pb.Alert, attempt uint32) Result {
	body, err := json.Marshal(BodyOf(a, s.site))
	if err != nil {
		return Result{Answer: err.Error()}
	}
	return s.post(ctx, w.GetUrl(), w.GetHeaders(), a, body, attempt, true)
}

// post sends body as JSON; signed sets the run headers and, with keys,
// the signature of a dispatch whose run is the notification.
func (s *sender) post(ctx context.Context, target string, headers map[string]string, a *pb.Alert, body []byte, attempt uint32, signed bool) Result {
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, target, bytes.NewReader(body))
	if err != nil {
		return Result{Answer: "invalid request: " + transportError(err)}
	}
	for k, v := range headers {
		req.Header.Set(k, v)
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("User-Agent", "raftcron")
	req.Header.Set(HeaderNotificationID, a.GetId())
	if signed {
		run := NotificationRun(a, attempt)
		run.SetHeader(req.Header)
		if s.keys != nil {
			sig, err := s.keys.SignV2(fence.HTTPDispatch(run, req.Method, fence.SentURL(req), body))
			if err != nil {
				return Result{Answer: err.Error()}
			}
			req.Header.Set(fence.HeaderSignature, sig)
		}
	}
	resp, err := s.http.Do(req)
	if err != nil {
		return Result{Answer: transportError(err)}
	}
	defer resp.Body.Close()
	raw, _ := io.ReadAll(io.LimitReader(resp.Body, maxAnswer))
	_, _ = io.Copy(io.Discard, io.LimitReader(resp.Body, 64<<10))
	answer := strings.TrimSpace(fmt.Sprintf("%d %s %s", resp.StatusCode, http.StatusText(resp.StatusCode), clean(raw)))
	return Result{OK: resp.StatusCode >= 200 && resp.StatusCode < 300, Status: resp.StatusCode, Answer: answer}
}

// NotificationRun is the run a webhook notification is signed as: the
// notification's id as run id and idempotency key, the event's token (0
// for an event about no run), the event's time as scheduled-at, and the
// delivery attempt.
func NotificationRun(a *pb.Alert, attempt uint32) fence.Run {
	return fence.Run{Token: a.GetToken(), Job: a.GetJob(), RunID: a.GetId(), IdempotencyKey: a.GetId(),
		ScheduledAt: time.Unix(0, a.GetAtUnixNano()).UTC().Truncate(time.Second), Attempt: attempt}
}

// transportError says why a request got no answer, without its URL
// (a Slack webhook's URL is its secret).
func transportError(err error) string {
	var ue *url.Error
	if errors.As(err, &ue) {
		err = ue.Err
	}
	if dispatch.EgressDenied(err) {
		return "egress denied: " + err.Error()
	}
	if errors.Is(err, context.DeadlineExceeded) {
		return "no answer in time"
	}
	return err.Error()
}

// clean keeps an answer printable, short and valid UTF-8.
func clean(b []byte) string {
	s := strings.ToValidUTF8(string(b), "?")
	s = strings.Map(func(r rune) rune {
		if r < 0x20 || r == 0x7f {
			return ' '
		}
		return r
	}, s)
	for len(s) > maxAnswer {
		s = s[:len(s)-1]
		for !utf8.ValidString(s) {
			s = s[:len(s)-1]
		}
	}
	return strings.TrimSpace(s)
}

func slackPayload(a *pb.Alert, site Site) []byte {
	text := Summary(a, site)
	if link := BodyOf(a, site).Link; link != "" {
		text += " <" + link + "|open>"
	}
	b, _ := json.Marshal(map[string]string{"text": text})
	return b
}

// pagerDutyPayload is an Events API v2 event: resolve for recovered,
// trigger otherwise, dedup_key the episode, so a reminder or a resend
// lands on the same incident.
func pagerDutyPayload(routingKey string, a *pb.Alert, site Site) []byte {
	action := "trigger"
	if a.GetEvent() == "recovered" {
		action = "resolve"
	}
	source := site.Cluster
	if source == "" {
		source = "raftcron"
	}
	ev := map[string]any{
		"routing_key": routingKey, "event_action": action, "dedup_key": a.GetEpisode(),
		"payload": map[string]any{
			"summary": Summary(a, site), "source": source, "severity": "error",
			"timestamp": time.Unix(0, a.GetAtUnixNano()).UTC().Format(time.RFC3339Nano),
			"component": a.GetJob(), "class": a.GetEvent(), "custom_details": BodyOf(a, site),
		},
	}
	if link := BodyOf(a, site).Link; link != "" {
		ev["links"] = []map[string]string{{"href": link, "text": "raftcron"}}
	}
	b, _ := json.Marshal(ev)
	return b
}

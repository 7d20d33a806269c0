package jobspec

import (
	"fmt"
	"net"
	"net/mail"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/raftcron/raftcron/alert/event"
	pb "github.com/raftcron/raftcron/proto/raftcron/v1"
	"github.com/raftcron/raftcron/secret"
)

// Limits of the alert settings: they travel in the Raft log with every
// spec that carries them.
const (
	MaxNotify        = 16
	MaxAfterFailures = 1000
	MaxRecipients    = 32
	MaxHeaders       = 32
	// MinRepeat keeps reminders from flooding a channel.
	MinRepeat = time.Minute
)

// DefaultAfterFailures is a notify entry's threshold when it sets none.
const DefaultAfterFailures = 1

// checkAlerting checks a job's expect and notify.
func checkAlerting(v *violations, spec *pb.JobSpec) {
	if e := spec.GetExpect(); e != nil {
		if d := e.GetStartWithin(); positiveDuration(v, "expect.start_within", d) && d != nil && d.AsDuration() > MaxStartWithin {
			v.add("expect.start_within", fmt.Sprintf("must be at most %s", MaxStartWithin))
		}
		positiveDuration(v, "expect.max_duration", e.GetMaxDuration())
		positiveDuration(v, "expect.min_duration", e.GetMinDuration())
		positiveDuration(v, "expect.success_within", e.GetSuccessWithin())
		if lo, hi := e.GetMinDuration(), e.GetMaxDuration(); lo != nil && hi != nil && lo.AsDuration() >= hi.AsDuration() {
			v.add("expect.min_duration", "must be less than expect.max_duration")
		}
	}
	if n := len(spec.GetNotify()); n > MaxNotify {
		v.add("notify", fmt.Sprintf("at most %d entries", MaxNotify))
	}
	for i, n := range spec.GetNotify() {
		checkNotify(v, fmt.Sprintf("notify[%d].", i), n.GetChannel(), n.GetOn(), n.GetAfterFailures(), n.GetRepeat().AsDuration(), n.GetRepeat() != nil)
	}
}

// checkNotify checks the fields a job's notify entry and a notify rule
// share; prefix names the entry.
func checkNotify(v *violations, prefix, channel string, on []string, afterFailures uint32, repeat time.Duration, hasRepeat bool) {
	switch {
	case channel == "":
		v.add(prefix+"channel", "required")
	case !validName(channel):
		v.add(prefix+"channel", NameRule)
	}
	seen := map[string]bool{}
	for _, ev := range on {
		switch {
		case !event.Valid(ev):
			v.add(prefix+"on", fmt.Sprintf("unknown event %q: want %s", ev, strings.Join(event.All, ", ")))
		case seen[ev]:
			v.add(prefix+"on", fmt.Sprintf("event %q given twice", ev))
		}
		seen[ev] = true
	}
	if afterFailures > MaxAfterFailures {
		v.add(prefix+"after_failures", fmt.Sprintf("must be at most %d", MaxAfterFailures))
	}
	if hasRepeat && repeat < MinRepeat {
		v.add(prefix+"repeat", "must be at least "+MinRepeat.String())
	}
}

// normalizeNotify fills a notify entry's defaults: every event, one
// failure.
func normalizeNotify(on *[]string, afterFailures *uint32) {
	if len(*on) == 0 {
		*on = slices.Clone(event.All)
	}
	if *afterFailures == 0 {
		*afterFailures = DefaultAfterFailures
	}
}

// ValidateNotifyRule checks a cluster-wide notify rule: nil or a
// *ValidationError naming the fields.
func ValidateNotifyRule(r *pb.NotifyRule) error {
	var v violations
	switch {
	case r.GetName() == "":
		v.add("name", "required")
	case !validName(r.GetName()):
		v.add("name", NameRule)
	}
	checkLabels(&v, "selector", r.GetSelector())
	checkNotify(&v, "", r.GetChannel(), r.GetOn(), r.GetAfterFailures(), r.GetRepeat().AsDuration(), r.GetRepeat() != nil)
	if len(v) == 0 {
		return nil
	}
	return &ValidationError{Name: r.GetName(), Violations: v, What: "notify rule"}
}

// NormalizeNotifyRule fills a rule's defaults, as Normalize a job's
// notify entries.
func NormalizeNotifyRule(r *pb.NotifyRule) {
	if r != nil {
		normalizeNotify(&r.On, &r.AfterFailures)
	}
}

// ValidateChannel checks a channel: nil or a *ValidationError naming the
// fields. Secret references are checked for their syntax only.
func ValidateChannel(ch *pb.Channel) error {
	var v violations
	switch {
	case ch.GetName() == "":
		v.add("name", "required")
	case !validName(ch.GetName()):
		v.add("name", NameRule)
	}
	checkLabels(&v, "labels", ch.GetLabels())
	targets := 0
	if w := ch.GetWebhook(); w != nil {
		targets++
		checkHookURL(&v, "webhook.url", w.GetUrl(), true)
		if len(w.GetHeaders()) > MaxHeaders {
			v.add("webhook.headers", fmt.Sprintf("at most %d entries", MaxHeaders))
		}
		for _, k := range sortedKeys(w.GetHeaders()) {
			if !validHeaderName(k) {
				v.add("webhook.headers", "name "+quote(k)+" is not an HTTP header name")
			}
		}
	}
	if s := ch.GetSlack(); s != nil {
		targets++
		checkHookURL(&v, "slack.url", s.GetUrl(), true)
	}
	if p := ch.GetPagerduty(); p != nil {
		targets++
		if p.GetRoutingKey() == "" {
			v.add("pagerduty.routing_key", "required")
		}
		checkHookURL(&v, "pagerduty.url", p.GetUrl(), false)
	}
	if m := ch.GetEmail(); m != nil {
		targets++
		checkEmail(&v, m)
	}
	if targets != 1 {
		v.add("channel", "exactly one of webhook, slack, pagerduty and email is required")
	}
	_ = ChannelSecretFields(ch, func(path, value string) (string, error) {
		if _, err := secret.Refs(value); err != nil {
			v.add(path, err.Error()+": write ${secret:NAME}, NAME matching "+secret.NameRule)
		}
		return value, nil
	})
	if len(v) == 0 {
		return nil
	}
	return &ValidationError{Name: ch.GetName(), Violations: v, What: "channel"}
}

// checkHookURL checks an http(s) URL that may reference secrets.
func checkHookURL(v *violations, field, raw string, required bool) {
	if raw == "" {
		if required {
			v.add(field, "required")
		}
		return
	}
	if names, err := secret.Refs(raw); err == nil && len(names) == 1 && raw == secret.Ref(names[0]) {
		return // the whole URL is a secret (a Slack webhook's is), checked when sent
	}
	u, err := urlWithoutRefs(raw)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		v.add(field, "must be an absolute http or https URL")
	}
}

func checkEmail(v *violations, m *pb.EmailChannel) {
	if host, port, err := net.SplitHostPort(m.GetSmtp()); err != nil || host == "" {
		v.add("email.smtp", "must be host:port")
	} else if n, err := strconv.Atoi(port); err != nil || n < 1 || n > 65535 {
		v.add("email.smtp", "port must be 1 to 65535")
	}
	if _, err := mail.ParseAddress(m.GetFrom()); err != nil {
		v.add("email.from", "must be a mail address")
	}
	switch n := len(m.GetTo()); {
	case n == 0:
		v.add("email.to", "required")
	case n > MaxRecipients:
		v.add("email.to", fmt.Sprintf("at most %d addresses", MaxRecipients))
	}
	for _, to := range m.GetTo() {
		if _, err := mail.ParseAddress(to); err != nil {
			v.add("email.to", quote(to)+" is not a mail address")
		}
	}
	if (m.GetUsername() == "") != (m.GetPassword() == "") {
		v.add("email.username", "username and password go together")
	}
	if m.GetUsername() != "" && !m.GetStarttls() {
		v.add("email.starttls", "must be true when the channel logs in: a password never crosses in clear")
	}
}

func validHeaderName(k string) bool {
	if k == "" {
		return false
	}
	for i := 0; i < len(k); i++ {
		c := k[i]
		if c <= ' ' || c >= 0x7f || strings.IndexByte("()<>@,;:\\\"/[]?={}", c) >= 0 {
			return false
		}
	}
	return true
}

// ChannelSecretFields calls fn with the path and value of each field of
// ch that may reference a secret (empty ones too), in a fixed order, and
// stores what fn returns in its place when it differs, as
// RewriteSecretFields does for a job: webhook.url, webhook.headers.<name>,
// slack.url, pagerduty.routing_key, pagerduty.url, email.username,
// email.password.
func ChannelSecretFields(ch *pb.Channel, fn func(path, value string) (string, error)) error {
	if w := ch.GetWebhook(); w != nil {
		if err := rewrite("webhook.url", &w.Url, fn); err != nil {
			return err
		}
		if err := rewriteMap("webhook.headers.", w.GetHeaders(), fn); err != nil {
			return err
		}
	}
	if s := ch.GetSlack(); s != nil {
		if err := rewrite("slack.url", &s.Url, fn); err != nil {
			return err
		}
	}
	if p := ch.GetPagerduty(); p != nil {
		if err := rewrite("pagerduty.routing_key", &p.RoutingKey, fn); err != nil {
			return err
		}
		if err := rewrite("pagerduty.url", &p.Url, fn); err != nil {
			return err
		}
	}
	if m := ch.GetEmail(); m != nil {
		if err := rewrite("email.username", &m.Username, fn); err != nil {
			return err
		}
		if err := rewrite("email.password", &m.Password, fn); err != nil {
			return err
		}
	}
	return nil
}

// ChannelURLField reports whether a path of ChannelSecretFields is a URL
// (redacted by its user information) rather than a value redacted whole.
// A Slack URL is its secret: it is redacted whole.
func ChannelURLField(path string) bool {
	return path == "webhook.url" || path == "pagerduty.url"
}

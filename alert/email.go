package alert

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"net"
	"net/smtp"
	"net/textproto"
	"strings"
	"time"

	pb "github.com/raftcron/raftcron/proto/raftcron/v1"
)

// email sends a plain-text mail through the channel's SMTP server, over
// STARTTLS when it says so (and then only), logging in when it has a
// user. The dial goes through the egress policy, like a webhook's.
func (s *sender) email(ctx context.Context, m *pb.EmailChannel, a *pb.Alert) Result {
	host, _, err := net.SplitHostPort(m.GetSmtp())
	if err != nil {
		return Result{Answer: "email.smtp: " + err.Error()}
	}
	conn, err := s.dial(ctx, "tcp", m.GetSmtp())
	if err != nil {
		return Result{Answer: transportError(err)}
	}
	if dl, ok := ctx.Deadline(); ok {
		_ = conn.SetDeadline(dl)
	}
	c, err := smtp.NewClient(conn, host)
	if err != nil {
		conn.Close()
		return smtpResult(err)
	}
	defer c.Close()
	if err := s.mail(c, host, m, a); err != nil {
		return smtpResult(err)
	}
	return Result{OK: true, Status: 250, Answer: "250 accepted for " + strings.Join(m.GetTo(), ", ")}
}

func (s *sender) mail(c *smtp.Client, host string, m *pb.EmailChannel, a *pb.Alert) error {
	if err := c.Hello("raftcron"); err != nil {
		return err
	}
	if m.GetStarttls() {
		if ok, _ := c.Extension("STARTTLS"); !ok {
			return errors.New("the server offers no STARTTLS")
		}
		if err := c.StartTLS(&tls.Config{ServerName: host, RootCAs: s.roots, MinVersion: tls.VersionTLS12}); err != nil {
			return err
		}
	}
	if m.GetUsername() != "" {
		if err := c.Auth(smtp.PlainAuth("", m.GetUsername(), m.GetPassword(), host)); err != nil {
			return err
		}
	}
	if err := c.Mail(m.GetFrom()); err != nil {
		return err
	}
	for _, to := range m.GetTo() {
		if err := c.Rcpt(to); err != nil {
			return err
		}
	}
	w, err := c.Data()
	if err != nil {
		return err
	}
	if _, err := w.Write(message(m, a, s.site)); err != nil {
		return err
	}
	if err := w.Close(); err != nil {
		return err
	}
	return c.Quit()
}

// message is the mail: headers with the notification's id (as
// Message-Id and X-Raftcron-Notification-Id, so a mailbox can dedupe) and
// the webhook body's fields as text.
func message(m *pb.EmailChannel, a *pb.Alert, site Site) []byte {
	b := BodyOf(a, site)
	var sb strings.Builder
	header := func(k, v string) { sb.WriteString(k + ": " + v + "\r\n") }
	header("From", m.GetFrom())
	header("To", strings.Join(m.GetTo(), ", "))
	header("Subject", oneLine(Summary(a, site)))
	header("Date", time.Unix(0, a.GetAtUnixNano()).UTC().Format(time.RFC1123Z))
	header("Message-Id", "<"+a.GetId()+"@raftcron>")
	header(HeaderNotificationID, a.GetId())
	header("Content-Type", "text/plain; charset=utf-8")
	sb.WriteString("\r\n")
	for _, kv := range [][2]string{
		{"id", b.ID}, {"event", b.Event}, {"episode", b.Episode}, {"job", b.Job}, {"run_id", b.RunID},
		{"slot", b.Slot}, {"outcome", b.Outcome}, {"reason", b.Reason},
		{"consecutive_failures", fmt.Sprint(b.ConsecutiveFailures)}, {"time", b.Time}, {"cluster", b.Cluster}, {"link", b.Link},
	} {
		if kv[1] != "" {
			sb.WriteString(kv[0] + ": " + oneLine(kv[1]) + "\r\n")
		}
	}
	if b.OutputTail != "" {
		sb.WriteString("\r\noutput (end):\r\n" + strings.ReplaceAll(b.OutputTail, "\n", "\r\n") + "\r\n")
	}
	return []byte(sb.String())
}

func oneLine(s string) string {
	return strings.Map(func(r rune) rune {
		if r == '\r' || r == '\n' {
			return ' '
		}
		return r
	}, s)
}

func smtpResult(err error) Result {
	var te *textproto.Error
	if errors.As(err, &te) {
		return Result{Status: te.Code, Answer: clean([]byte(fmt.Sprintf("%d %s", te.Code, te.Msg)))}
	}
	return Result{Answer: clean([]byte(transportError(err)))}
}

package alert

import (
	"fmt"
	"net/url"
	"strings"
	"time"

	pb "github.com/raftcron/raftcron/proto/raftcron/v1"
)

// HeaderNotificationID carries a notification's id on every HTTP channel:
// what a receiver dedupes on.
const HeaderNotificationID = "X-Raftcron-Notification-Id"

// Body is a webhook notification's JSON body: exactly these fields, named
// in docs/operations.md.
type Body struct {
	ID                  string            `json:"id"`
	Event               string            `json:"event"`
	Episode             string            `json:"episode"`
	Job                 string            `json:"job"`
	Labels              map[string]string `json:"labels"`
	RunID               string            `json:"run_id"`
	Slot                string            `json:"slot"`
	Token               uint64            `json:"token"`
	Outcome             string            `json:"outcome"`
	Reason              string            `json:"reason"`
	ConsecutiveFailures uint32            `json:"consecutive_failures"`
	DurationMS          int64             `json:"duration_ms"`
	OutputTail          string            `json:"output_tail"`
	Time                string            `json:"time"`
	Cluster             string            `json:"cluster"`
	Link                string            `json:"link"`
}

// Site is what a node adds to every notification: the cluster's name and
// where its UI is.
type Site struct {
	// Cluster names the cluster in notifications (serve --cluster-name).
	Cluster string
	// UIBase is the UI's URL without its path (https://cron.example:8080);
	// empty leaves links out.
	UIBase string
}

// BodyOf is a's notification body as site sends it.
func BodyOf(a *pb.Alert, site Site) Body {
	b := Body{
		ID: a.GetId(), Event: a.GetEvent(), Episode: a.GetEpisode(), Job: a.GetJob(), Labels: a.GetLabels(),
		RunID: a.GetRunId(), Token: a.GetToken(), Reason: a.GetReason(), ConsecutiveFailures: a.GetConsecutiveFailures(),
		DurationMS: a.GetDurationMs(), OutputTail: a.GetOutputTail(), Cluster: site.Cluster,
		Time: time.Unix(0, a.GetAtUnixNano()).UTC().Format(time.RFC3339Nano),
	}
	if b.Labels == nil {
		b.Labels = map[string]string{}
	}
	if a.GetSlotUnix() != 0 {
		b.Slot = time.Unix(a.GetSlotUnix(), 0).UTC().Format(time.RFC3339)
	}
	if o := a.GetOutcome(); o != pb.RunState_RUN_STATE_UNSPECIFIED {
		b.Outcome = strings.ToLower(strings.TrimPrefix(o.String(), "RUN_STATE_"))
	}
	if site.UIBase != "" {
		b.Link = site.UIBase + "/ui/#/jobs/" + url.PathEscape(a.GetJob())
		if a.GetRunId() != "" {
			b.Link += "?run=" + url.QueryEscape(a.GetRunId())
		}
	}
	return b
}

// Summary is one line about the alert, for chat, pagers and mail
// subjects.
func Summary(a *pb.Alert, site Site) string {
	var s string
	switch a.GetEvent() {
	case "recovered":
		s = fmt.Sprintf("job %s recovered (%s)", a.GetJob(), a.GetEpisodeEvent())
	case "failed":
		s = fmt.Sprintf("job %s failed %d times in a row", a.GetJob(), a.GetConsecutiveFailures())
	default:
		s = fmt.Sprintf("job %s: %s", a.GetJob(), strings.ReplaceAll(a.GetEvent(), "_", " "))
	}
	if a.GetReminder() > 0 {
		s += fmt.Sprintf(" (reminder %d)", a.GetReminder())
	}
	if a.GetReason() != "" {
		s += ": " + a.GetReason()
	}
	if site.Cluster != "" {
		s = "[" + site.Cluster + "] " + s
	}
	return s
}

package fence

import (
	"strconv"
	"strings"
)

// ParentRun is one parent of a chained run: a run of a job it runs after,
// whose outcome fired it, and that run's last token. A chained run's token
// is always above each of its parents'.
type ParentRun struct {
	RunID string
	Token uint64
}

// FormatParentRuns spells parents as HeaderParentRuns carries them:
// "RUN_ID@TOKEN" joined by commas, in the order given. A run id holds
// neither "@" nor ",".
func FormatParentRuns(parents []ParentRun) string {
	var b strings.Builder
	for i, p := range parents {
		if i > 0 {
			b.WriteByte(',')
		}
		b.WriteString(p.RunID)
		b.WriteByte('@')
		b.WriteString(strconv.FormatUint(p.Token, 10))
	}
	return b.String()
}

// ParseParentRuns reads a HeaderParentRuns or EnvParentRuns value; "" is
// no parents (a run that is not chained). A malformed value is a
// *FieldError naming field.
func ParseParentRuns(field, s string) ([]ParentRun, error) {
	if s == "" {
		return nil, nil
	}
	if len(s) > 64*MaxFieldLen {
		return nil, malformed(field, "longer than %d bytes", 64*MaxFieldLen)
	}
	items := strings.Split(s, ",")
	out := make([]ParentRun, 0, len(items))
	for _, item := range items {
		id, tok, ok := strings.Cut(strings.TrimSpace(item), "@")
		if !ok || id == "" {
			return nil, malformed(field, "want RUN_ID@TOKEN, got %q", clip(item))
		}
		if err := checkText(field, id); err != nil {
			return nil, err
		}
		t, err := parseToken(field, tok)
		if err != nil {
			return nil, err
		}
		out = append(out, ParentRun{RunID: id, Token: t})
	}
	return out, nil
}

package schedule

import (
	"fmt"
	"strconv"
	"strings"
)

// Limits of the numbers in day items.
const (
	maxFromEnd = 30 // L-30 is the 1st of a 31-day month
	maxNth     = 5  // no month has a sixth of any weekday
)

// dayNames are the day-of-week names robfig accepts, by cron number.
var dayNames = [...]string{"SUN", "MON", "TUE", "WED", "THU", "FRI", "SAT"}

// splitDays takes the Quartz items out of the day-of-month and
// day-of-week fields of fields (five or six, seconds first when six). It
// returns the items (nil when there are none) and the fields as robfig is
// to read them: each day field keeps its standard items, or becomes "*"
// when it has none (and the items record that its bits are to be
// cleared). A bad item is a *SyntaxError, bad the index of its field; std
// is then rewritten up to that field.
func splitDays(fields []string) (rules *dayRules, std []string, bad int, err error) {
	std = fields
	for _, idx := range [2]int{len(fields) - 3, len(fields) - 1} {
		if !strings.ContainsAny(fields[idx], "LlWw#") { // no item: the usual case
			continue
		}
		week := idx == len(fields)-1
		items, rest, err := splitField(fields[idx], week)
		if err != nil {
			return nil, std, idx, err
		}
		if len(items.dom)+len(items.dow) == 0 {
			continue
		}
		if rules == nil {
			rules = &dayRules{}
			std = append([]string(nil), fields...)
		}
		rules.dom = append(rules.dom, items.dom...)
		rules.dow = append(rules.dow, items.dow...)
		if rest == "" {
			rest = "*"
			rules.onlyDom = rules.onlyDom || !week
			rules.onlyDow = rules.onlyDow || week
		}
		std[idx] = rest
	}
	return rules, std, -1, nil
}

// splitField parses the Quartz items of one day field and returns the
// field's other items, comma-joined, for robfig.
func splitField(field string, week bool) (dayRules, string, error) {
	var r dayRules
	var rest []string
	for _, item := range strings.Split(field, ",") {
		u := asciiUpper(item)
		switch {
		case week && isWeekItem(u):
			it, reason := parseWeekItem(u, item)
			if reason != "" {
				return r, "", &SyntaxError{Part: "day-of-week field", Reason: fmt.Sprintf("%q: %s", item, reason)}
			}
			r.dow = append(r.dow, it)
		case !week && strings.ContainsAny(u, "LW#"):
			it, reason := parseMonthItem(u)
			if reason != "" {
				return r, "", &SyntaxError{Part: "day-of-month field", Reason: fmt.Sprintf("%q: %s", item, reason)}
			}
			r.dom = append(r.dom, it)
		default:
			rest = append(rest, item)
		}
	}
	return r, strings.Join(rest, ","), nil
}

// isWeekItem tells a Quartz item of the day-of-week field (upper-cased)
// from a standard one: no day name starts or ends with L or ends with W.
func isWeekItem(u string) bool {
	return strings.ContainsRune(u, '#') || strings.HasPrefix(u, "L") ||
		strings.HasSuffix(u, "L") || strings.HasSuffix(u, "W")
}

const monthItems = "want 1-31, L, L-N, LW, L-NW or NW"

// parseMonthItem parses an upper-cased day-of-month item; a non-empty
// reason says why it is refused.
func parseMonthItem(u string) (domItem, string) {
	var it domItem
	body := u
	if strings.HasSuffix(body, "W") {
		it.weekday, body = true, strings.TrimSuffix(body, "W")
	}
	if rest, ok := strings.CutPrefix(body, "L"); ok {
		it.fromEnd = true
		if rest == "" {
			return it, ""
		}
		digits, ok := strings.CutPrefix(rest, "-")
		if !ok || !isDigits(digits) {
			return it, monthItems
		}
		var reason string
		it.n, reason = bounded("offset", digits, 0, maxFromEnd)
		return it, reason
	}
	switch {
	case it.weekday && isDigits(body):
		var reason string
		it.n, reason = bounded("day", body, 1, 31)
		return it, reason
	case strings.ContainsRune(u, '#') || strings.HasSuffix(u, "L"):
		return it, "DOW#N and DOWL belong in the day-of-week field"
	}
	return it, monthItems
}

// parseWeekItem parses a day-of-week item that isWeekItem picked, u being
// item upper-cased.
func parseWeekItem(u, item string) (dowItem, string) {
	switch {
	case u == "L":
		return dowItem{}, "ambiguous (Quartz reads it as Saturday): write 6 or sat, or DOWL such as 5L for the last Friday"
	case strings.HasPrefix(u, "L") || strings.HasSuffix(u, "W"):
		return dowItem{}, "L, L-N, LW and NW belong in the day-of-month field"
	}
	day, nth, hash := strings.Cut(u, "#")
	if !hash {
		day = strings.TrimSuffix(u, "L")
	}
	d, reason := weekday(day, item[:len(day)])
	if reason != "" {
		return dowItem{}, reason
	}
	it := dowItem{day: d}
	if hash {
		if !isDigits(nth) {
			return it, "want DOW#N, N being 1-5"
		}
		it.nth, reason = bounded("occurrence", nth, 1, maxNth)
	}
	return it, reason
}

// weekday reads an upper-cased day of the week, as cron numbers it (0 or
// 7 = Sunday) or by name; shown is how it was written.
func weekday(u, shown string) (int, string) {
	for i, name := range dayNames {
		if u == name {
			return i, ""
		}
	}
	if !isDigits(u) {
		return 0, fmt.Sprintf("%q is not a day of the week (0-7 or sun-sat)", shown)
	}
	d, reason := bounded("day", u, 0, 7)
	return d % 7, reason
}

// bounded reads digits as a number in [lo, hi]; a non-empty reason names
// what the number is and the bound it crosses.
func bounded(what, digits string, lo, hi int) (int, string) {
	n, err := strconv.Atoi(digits)
	switch {
	case err != nil || n > hi:
		return 0, fmt.Sprintf("%s %s is above %d", what, digits, hi)
	case n < lo:
		return 0, fmt.Sprintf("%s %s is below %d", what, digits, lo)
	}
	return n, ""
}

func isDigits(s string) bool {
	if s == "" {
		return false
	}
	for i := 0; i < len(s); i++ {
		if s[i] < '0' || s[i] > '9' {
			return false
		}
	}
	return true
}

// asciiUpper upper-cases ASCII letters only, so byte offsets into the
// result are offsets into s.
func asciiUpper(s string) string {
	b := []byte(s)
	for i, c := range b {
		if 'a' <= c && c <= 'z' {
			b[i] = c - 'a' + 'A'
		}
	}
	return string(b)
}

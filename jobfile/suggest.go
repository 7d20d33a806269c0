package jobfile

import (
	"fmt"
	"strings"

	"google.golang.org/protobuf/reflect/protoreflect"
)

func unknownFieldRule(key string, md protoreflect.MessageDescriptor) string {
	rule := fmt.Sprintf("unknown field %q", key)
	if guess := closest(key, md); guess != "" {
		rule += fmt.Sprintf(" (did you mean %q?)", guess)
	}
	return rule
}

// closest is md's field name nearest to key, if it is a likely typo.
func closest(key string, md protoreflect.MessageDescriptor) string {
	best, bestDist := "", 3 // suggest only within two edits
	lower := strings.ToLower(key)
	fields := md.Fields()
	for i := range fields.Len() {
		name := string(fields.Get(i).Name())
		if d := editDistance(lower, name); d < bestDist || (d == bestDist && name < best) {
			best, bestDist = name, d
		}
	}
	return best
}

// editDistance is the Damerau-Levenshtein distance (with adjacent
// transpositions), enough to catch "scheduel" and "Name".
func editDistance(a, b string) int {
	if len(a) > 64 || len(b) > 64 {
		return 64 // never a typo of a field name; keeps the work bounded
	}
	prev2 := make([]int, len(b)+1)
	prev := make([]int, len(b)+1)
	cur := make([]int, len(b)+1)
	for j := range prev {
		prev[j] = j
	}
	for i := 1; i <= len(a); i++ {
		cur[0] = i
		for j := 1; j <= len(b); j++ {
			cost := 1
			if a[i-1] == b[j-1] {
				cost = 0
			}
			cur[j] = min(prev[j]+1, cur[j-1]+1, prev[j-1]+cost)
			if i > 1 && j > 1 && a[i-1] == b[j-2] && a[i-2] == b[j-1] {
				cur[j] = min(cur[j], prev2[j-2]+1)
			}
		}
		prev2, prev, cur = prev, cur, prev2
	}
	return prev[len(b)]
}

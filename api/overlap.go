package api

import (
	"strings"

	pb "github.com/raftcron/raftcron/proto/raftcron/v1"
)

// overlapWord reads an overlap policy a request names in the job file's
// words (skip, allow, buffer_one, cancel_other), or by the proto's name;
// "" is unspecified. A policy outside allowed is refused, naming field.
func overlapWord(field, word string, allowed ...pb.Overlap) (pb.Overlap, error) {
	if word == "" {
		return pb.Overlap_OVERLAP_UNSPECIFIED, nil
	}
	name := strings.ToUpper(word)
	if !strings.HasPrefix(name, "OVERLAP_") {
		name = "OVERLAP_" + name
	}
	o := pb.Overlap(pb.Overlap_value[name])
	words := make([]string, len(allowed))
	for i, a := range allowed {
		words[i] = overlapName(a)
		if a == o {
			return o, nil
		}
	}
	return 0, fieldError(field, "must be one of "+strings.Join(words, ", "))
}

// overlapName is a policy in the job file's words: OVERLAP_BUFFER_ONE is
// buffer_one.
func overlapName(o pb.Overlap) string {
	return strings.ToLower(strings.TrimPrefix(o.String(), "OVERLAP_"))
}

// Package jobfile reads and writes the friendly job file format: the YAML or
// JSON face of pb.JobSpec that operators keep in version control and pass to
// `raftcron job apply -f`.
//
// A file holds one job object, a list of job objects, or a YAML stream of
// documents separated by "---", each of which is a job object or a list.
// Field names are the proto's; durations use Go syntax ("90s", "1h30m"),
// timestamps RFC 3339, enums their lowercase names ("skip"; the proto's
// OVERLAP_SKIP is read too, for clients generated from the proto).
// Decoding is strict: an unknown or misspelled field is an error, never
// silently dropped. A bare YAML number or boolean given for a string field
// reads as its canonical text (tier: 2 is "2", but 1.10 is "1.1"): quote
// values whose exact spelling matters. Encoding writes the same format, so
// `job get -o yaml` output applies back unchanged.
//
// The format is derived from JobSpec's descriptor (schema.go), so a field
// added to the proto is in the file without a change here; DESIGN.md lists
// what else a new field touches.
package jobfile

package fsm

import (
	"testing"

	"google.golang.org/protobuf/encoding/protowire"
	"google.golang.org/protobuf/proto"

	pb "github.com/raftcron/raftcron/proto/raftcron/v1"
)

// A record whose labels were lifted decodes to exactly the stored job that
// decoding it whole and storing it makes; a record whose labels are not
// one valid pair per key in key order is left to that path.
func TestLiftedLabelsDecodeAsStored(t *testing.T) {
	pair := func(k, v string) []byte {
		b := protowire.AppendTag(nil, mapKeyField, protowire.BytesType)
		b = protowire.AppendString(b, k)
		b = protowire.AppendTag(b, mapValueField, protowire.BytesType)
		return protowire.AppendString(b, v)
	}
	valueFirst := protowire.AppendTag(nil, mapValueField, protowire.BytesType)
	valueFirst = protowire.AppendString(valueFirst, "prod")
	valueFirst = protowire.AppendTag(valueFirst, mapKeyField, protowire.BytesType)
	valueFirst = protowire.AppendString(valueFirst, "env")
	// record wraps a spec, given as its fields plus raw label pairs, in a
	// job record with a status.
	record := func(labels ...[]byte) []byte {
		spec, err := proto.Marshal(&pb.JobSpec{Name: "a", Schedule: "@daily", Http: &pb.HttpTarget{Url: "http://x/"}})
		if err != nil {
			t.Fatal(err)
		}
		for _, p := range labels {
			spec = protowire.AppendTag(spec, labelsField, protowire.BytesType)
			spec = protowire.AppendBytes(spec, p)
		}
		spec = protowire.AppendTag(spec, 99, protowire.VarintType) // a field of a later build
		spec = protowire.AppendVarint(spec, 7)
		job := protowire.AppendTag(nil, 2, protowire.VarintType) // generation
		job = protowire.AppendVarint(job, 3)
		job = protowire.AppendTag(job, jobSpecField, protowire.BytesType)
		job = protowire.AppendBytes(job, spec)
		rec := protowire.AppendTag(nil, recordJobField, protowire.BytesType)
		return protowire.AppendBytes(rec, job)
	}
	for _, tc := range []struct {
		name   string
		rec    []byte
		lifted bool
	}{
		{"labels in key order", record(pair("env", "prod"), pair("team", "t1")), true},
		{"one label", record(pair("team", "")), true},
		{"no labels", record(), false},
		{"keys out of order", record(pair("team", "t1"), pair("env", "prod")), false},
		{"a key twice", record(pair("team", "t1"), pair("team", "t2")), false},
		{"value before key", record(valueFirst), true},
		{"a field beside the pair", record(protowire.AppendVarint(protowire.AppendTag(pair("env", "prod"), 3, protowire.VarintType), 1)), false},
		{"not UTF-8", record(pair("team", "\xff")), false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var want pb.SnapshotRecord
			wantErr := proto.Unmarshal(tc.rec, &want)
			if wantErr == nil {
				storeJob(want.GetJob())
			}
			var lf labelLifter
			raw, labels, lifted := lf.lift(tc.rec)
			if lifted != tc.lifted {
				t.Fatalf("lifted %v, want %v", lifted, tc.lifted)
			}
			if !lifted {
				return
			}
			var got pb.SnapshotRecord
			if err := proto.Unmarshal(raw, &got); err != nil || wantErr != nil {
				t.Fatalf("decoding the lifted record: %v; the whole one: %v", err, wantErr)
			}
			m := got.GetJob().GetSpec().ProtoReflect()
			m.SetUnknown(append(m.GetUnknown(), labels...))
			storeJob(got.GetJob())
			if !proto.Equal(&got, &want) {
				t.Errorf("lifted record decodes to\n%v\nwant\n%v", &got, &want)
			}
		})
	}
}

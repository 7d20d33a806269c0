package jobfile

import (
	"bytes"
	"errors"
	"testing"

	"go.yaml.in/yaml/v2"
	"google.golang.org/protobuf/encoding/prototext"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/reflect/protodesc"
	"google.golang.org/protobuf/reflect/protoreflect"
	"google.golang.org/protobuf/reflect/protoregistry"
	"google.golang.org/protobuf/types/descriptorpb"
	"google.golang.org/protobuf/types/dynamicpb"

	// The descriptors kindsProto depends on.
	_ "google.golang.org/protobuf/types/known/durationpb"
	_ "google.golang.org/protobuf/types/known/structpb"
	_ "google.golang.org/protobuf/types/known/timestamppb"
)

// kindsProto declares a field of every kind the rules cover, which JobSpec
// does not all use yet, and one message for each kind they refuse.
const kindsProto = `
name: "kinds.proto" package: "kinds" syntax: "proto3"
dependency: "google/protobuf/duration.proto"
dependency: "google/protobuf/timestamp.proto"
dependency: "google/protobuf/struct.proto"
enum_type { name: "DarkColor"
  value { name: "DARK_COLOR_UNSPECIFIED" number: 0 }
  value { name: "DARK_COLOR_NAVY_BLUE" number: 1 }
  value { name: "DARK_COLOR_BLACK" number: 2 } }
enum_type { name: "Shade" value { name: "SHADE_UNSPECIFIED" number: 0 } value { name: "GREY" number: 1 } }
message_type { name: "Kinds"
  field { name: "text" number: 1 label: LABEL_OPTIONAL type: TYPE_STRING }
  field { name: "flag" number: 2 label: LABEL_OPTIONAL type: TYPE_BOOL }
  field { name: "i32" number: 3 label: LABEL_OPTIONAL type: TYPE_INT32 }
  field { name: "s32" number: 4 label: LABEL_OPTIONAL type: TYPE_SINT32 }
  field { name: "sf32" number: 5 label: LABEL_OPTIONAL type: TYPE_SFIXED32 }
  field { name: "i64" number: 6 label: LABEL_OPTIONAL type: TYPE_INT64 }
  field { name: "s64" number: 7 label: LABEL_OPTIONAL type: TYPE_SINT64 }
  field { name: "sf64" number: 8 label: LABEL_OPTIONAL type: TYPE_SFIXED64 }
  field { name: "u32" number: 9 label: LABEL_OPTIONAL type: TYPE_UINT32 }
  field { name: "f32" number: 10 label: LABEL_OPTIONAL type: TYPE_FIXED32 }
  field { name: "u64" number: 11 label: LABEL_OPTIONAL type: TYPE_UINT64 }
  field { name: "f64" number: 12 label: LABEL_OPTIONAL type: TYPE_FIXED64 }
  field { name: "color" number: 13 label: LABEL_OPTIONAL type: TYPE_ENUM type_name: ".kinds.DarkColor" }
  field { name: "wait" number: 14 label: LABEL_OPTIONAL type: TYPE_MESSAGE type_name: ".google.protobuf.Duration" }
  field { name: "when" number: 15 label: LABEL_OPTIONAL type: TYPE_MESSAGE type_name: ".google.protobuf.Timestamp" }
  field { name: "child" number: 16 label: LABEL_OPTIONAL type: TYPE_MESSAGE type_name: ".kinds.Kinds.Child" }
  field { name: "children" number: 17 label: LABEL_REPEATED type: TYPE_MESSAGE type_name: ".kinds.Kinds.Child" }
  field { name: "colors" number: 18 label: LABEL_REPEATED type: TYPE_ENUM type_name: ".kinds.DarkColor" }
  field { name: "waits" number: 19 label: LABEL_REPEATED type: TYPE_MESSAGE type_name: ".google.protobuf.Duration" }
  field { name: "counts" number: 20 label: LABEL_REPEATED type: TYPE_SINT64 }
  field { name: "by_name" number: 21 label: LABEL_REPEATED type: TYPE_MESSAGE type_name: ".kinds.Kinds.ByNameEntry" }
  field { name: "times" number: 22 label: LABEL_REPEATED type: TYPE_MESSAGE type_name: ".kinds.Kinds.TimesEntry" }
  field { name: "maybe" number: 23 label: LABEL_OPTIONAL type: TYPE_INT32 oneof_index: 0 proto3_optional: true }
  oneof_decl { name: "_maybe" }
  nested_type { name: "Child"
    field { name: "note" number: 1 label: LABEL_OPTIONAL type: TYPE_STRING }
    field { name: "colors" number: 2 label: LABEL_REPEATED type: TYPE_MESSAGE type_name: ".kinds.Kinds.Child.ColorsEntry" }
    nested_type { name: "ColorsEntry" options { map_entry: true }
      field { name: "key" number: 1 label: LABEL_OPTIONAL type: TYPE_STRING }
      field { name: "value" number: 2 label: LABEL_OPTIONAL type: TYPE_ENUM type_name: ".kinds.DarkColor" } } }
  nested_type { name: "ByNameEntry" options { map_entry: true }
    field { name: "key" number: 1 label: LABEL_OPTIONAL type: TYPE_STRING }
    field { name: "value" number: 2 label: LABEL_OPTIONAL type: TYPE_MESSAGE type_name: ".kinds.Kinds.Child" } }
  nested_type { name: "TimesEntry" options { map_entry: true }
    field { name: "key" number: 1 label: LABEL_OPTIONAL type: TYPE_STRING }
    field { name: "value" number: 2 label: LABEL_OPTIONAL type: TYPE_MESSAGE type_name: ".google.protobuf.Timestamp" } } }
message_type { name: "WithBytes" field { name: "blob" number: 1 label: LABEL_OPTIONAL type: TYPE_BYTES } }
message_type { name: "WithDouble" field { name: "ratio" number: 1 label: LABEL_OPTIONAL type: TYPE_DOUBLE } }
message_type { name: "WithOneof"
  field { name: "a" number: 1 label: LABEL_OPTIONAL type: TYPE_STRING oneof_index: 0 }
  field { name: "b" number: 2 label: LABEL_OPTIONAL type: TYPE_STRING oneof_index: 0 }
  oneof_decl { name: "choice" } }
message_type { name: "WithIntMap"
  field { name: "by_id" number: 1 label: LABEL_REPEATED type: TYPE_MESSAGE type_name: ".kinds.WithIntMap.ByIdEntry" }
  nested_type { name: "ByIdEntry" options { map_entry: true }
    field { name: "key" number: 1 label: LABEL_OPTIONAL type: TYPE_INT32 }
    field { name: "value" number: 2 label: LABEL_OPTIONAL type: TYPE_STRING } } }
message_type { name: "WithStruct" field { name: "extra" number: 1 label: LABEL_OPTIONAL type: TYPE_MESSAGE type_name: ".google.protobuf.Struct" } }
message_type { name: "WithShade" field { name: "shade" number: 1 label: LABEL_OPTIONAL type: TYPE_ENUM type_name: ".kinds.Shade" } }
message_type { name: "Deep" field { name: "inner" number: 1 label: LABEL_OPTIONAL type: TYPE_MESSAGE type_name: ".kinds.WithBytes" } }
`

func kindsMessage(t *testing.T, name string) protoreflect.MessageDescriptor {
	t.Helper()
	fdp := &descriptorpb.FileDescriptorProto{}
	if err := prototext.Unmarshal([]byte(kindsProto), fdp); err != nil {
		t.Fatal(err)
	}
	file, err := protodesc.NewFile(fdp, protoregistry.GlobalFiles)
	if err != nil {
		t.Fatal(err)
	}
	return file.Messages().ByName(protoreflect.Name(name))
}

// Every kind the rules cover round-trips through YAML, JSON and the
// generic form, however deep it sits.
func TestEveryCoveredKindRoundTrips(t *testing.T) {
	md := kindsMessage(t, "Kinds")
	if err := checkMessage(md, map[protoreflect.FullName]bool{}); err != nil {
		t.Fatal(err)
	}
	want := dynamicpb.NewMessage(md)
	n := 0
	fill(want, &n, 0)
	allSet(t, want, "")
	o, err := encodeMessage(want, "")
	if err != nil {
		t.Fatal(err)
	}
	yamlText, err := yaml.Marshal(o)
	if err != nil {
		t.Fatal(err)
	}
	var jsonText bytes.Buffer
	if err := writeJSON(&jsonText, o, "  "); err != nil {
		t.Fatal(err)
	}
	for name, data := range map[string][]byte{"yaml": yamlText, "json": jsonText.Bytes()} {
		t.Run(name, func(t *testing.T) {
			items, _, err := readItems(data, "job")
			if err != nil {
				t.Fatal(err)
			}
			got := dynamicpb.NewMessage(md)
			if err := decodeObject(got, items[0], ""); err != nil {
				t.Fatalf("decode: %v\n%s", err, data)
			}
			if !proto.Equal(got, want) {
				t.Fatalf("round trip changed the message\n%s\ngot  %v\nwant %v", data, got, want)
			}
		})
	}
	t.Run("generic", func(t *testing.T) {
		got := dynamicpb.NewMessage(md)
		if err := decodeObject(got, o.toMap(), ""); err != nil || !proto.Equal(got, want) {
			t.Fatalf("decode: %v\ngot  %v\nwant %v", err, got, want)
		}
	})
}

// A field the rules do not cover is refused, loudly and by name.
func TestRefusesFieldsOutsideTheRules(t *testing.T) {
	for name, want := range map[string]string{
		"WithBytes":  "kinds.WithBytes.blob is of kind bytes",
		"WithDouble": "kinds.WithDouble.ratio is of kind double",
		"WithOneof":  "kinds.WithOneof.a is in oneof choice",
		"WithIntMap": "kinds.WithIntMap.by_id is a map with int32 keys",
		"WithStruct": "kinds.WithStruct.extra is a google.protobuf.Struct",
		"WithShade":  "enum value kinds.GREY does not start with SHADE_",
		"Deep":       "kinds.WithBytes.blob is of kind bytes",
	} {
		t.Run(name, func(t *testing.T) {
			err := checkMessage(kindsMessage(t, name), map[protoreflect.FullName]bool{})
			if !errors.Is(err, ErrUnsupported) || err.Error() != ErrUnsupported.Error()+": "+want {
				t.Fatalf("got %v, want ErrUnsupported: %s", err, want)
			}
		})
	}
	if err := schemaErr(); err != nil {
		t.Fatalf("JobSpec: %v", err)
	}
}

func TestEnumPrefix(t *testing.T) {
	for name, want := range map[string]string{
		"Overlap": "OVERLAP_", "CatchupPolicy": "CATCHUP_POLICY_", "HTTPMethod": "HTTP_METHOD_",
		"RunState": "RUN_STATE_", "V2Kind": "V2_KIND_",
	} {
		ed := (&descriptorpb.EnumDescriptorProto{Name: proto.String(name)})
		fdp := &descriptorpb.FileDescriptorProto{Name: proto.String(name + ".proto"), Syntax: proto.String("proto3"),
			EnumType: []*descriptorpb.EnumDescriptorProto{ed}}
		ed.Value = []*descriptorpb.EnumValueDescriptorProto{{Name: proto.String(want + "UNSPECIFIED"), Number: proto.Int32(0)}}
		file, err := protodesc.NewFile(fdp, nil)
		if err != nil {
			t.Fatal(err)
		}
		if got := enumPrefix(file.Enums().Get(0)); got != want {
			t.Errorf("enumPrefix(%s) = %q, want %q", name, got, want)
		}
	}
}

// Errors inside lists and maps name the element when it is a message, the
// list or map when it is a scalar.
func TestCoveredKindsErrors(t *testing.T) {
	md := kindsMessage(t, "Kinds")
	for in, want := range map[string]string{
		"children: [{note: a}, {nte: b}]":      `children[1]: unknown field "nte" (did you mean "note"?)`,
		"by_name: {x: {colours: {}}}":          `by_name[x]: unknown field "colours" (did you mean "colors"?)`,
		"by_name: {x: {colors: {a: pink}}}":    `by_name[x].colors: unknown value "pink" (want navy_blue or black)`,
		"counts: [1, a]":                       `counts: want an integer, got string`,
		"waits: [1s, soon]":                    `waits: invalid duration "soon" (use Go syntax like 90s, 5m, 1h30m)`,
		"times: {a: yesterday}":                `times: invalid timestamp "yesterday" (use RFC 3339 like 2026-12-01T00:00:00Z)`,
		"i64: 9223372036854775808":             `i64: want an integer, got number 9223372036854775808`,
		"i32: -2147483649":                     `i32: want an integer, got number -2147483649`,
		"u64: -1":                              `u64: want a non-negative integer, got number -1`,
		"children: {note: a}":                  `children: want a list, got object`,
		"by_name: [a]":                         `by_name: want a map, got array`,
		"child: {colors: {a: DARK_COLOR_RED}}": `child.colors: unknown value "DARK_COLOR_RED" (want navy_blue or black)`,
	} {
		items, _, err := readItems([]byte(in), "job")
		if err != nil {
			t.Fatal(err)
		}
		if err := decodeObject(dynamicpb.NewMessage(md), items[0], ""); err == nil || err.Error() != want {
			t.Errorf("%s: got %v, want %s", in, err, want)
		}
	}
	// An optional field set to its zero stays set; null leaves it unset.
	items, _, _ := readItems([]byte("maybe: 0\ni32: -5\ni64: -9223372036854775808\ncolors: ['', black]\n"), "job")
	m := dynamicpb.NewMessage(md)
	if err := decodeObject(m, items[0], ""); err != nil {
		t.Fatal(err)
	}
	fields := md.Fields()
	if !m.Has(fields.ByName("maybe")) || m.Get(fields.ByName("i32")).Int() != -5 ||
		m.Get(fields.ByName("i64")).Int() != -9223372036854775808 || m.Get(fields.ByName("colors")).List().Get(0).Enum() != 0 {
		t.Fatalf("decoded %v", m)
	}
	o, err := encodeMessage(m, "")
	if err != nil {
		t.Fatal(err)
	}
	if text, _ := yaml.Marshal(o); string(text) != "i32: -5\ni64: -9223372036854775808\ncolors:\n- \"\"\n- black\nmaybe: 0\n" {
		t.Fatalf("encoded:\n%s", text)
	}
}

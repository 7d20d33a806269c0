package jobfile

import (
	"fmt"
	"strings"

	"go.yaml.in/yaml/v2"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/reflect/protoreflect"
)

// The same file format serves the other objects an operator keeps in
// files (alert channels, notify rules): DecodeAs and EncodeYAMLAs apply
// the job file's rules to any message the rules cover, named in errors
// by noun ("channel", "notify rule").

// DecodeAs reads a file of noun objects, each into a message newMsg
// returns, with Decode's rules and errors.
func DecodeAs[T proto.Message](data []byte, noun string, newMsg func() T) ([]T, error) {
	if err := checkMessage(newMsg().ProtoReflect().Descriptor(), map[protoreflect.FullName]bool{}); err != nil {
		return nil, err
	}
	items, listed, err := readItems(data, noun)
	if err != nil {
		return nil, err
	}
	out := make([]T, 0, len(items))
	for i, item := range items {
		path := ""
		if listed {
			path = fmt.Sprintf("%ss[%d]", strings.ReplaceAll(noun, " ", "_"), i)
		}
		if _, ok := members(item); !ok {
			return nil, &FieldError{Field: path, Rule: "want a " + noun + " object, got " + describe(item)}
		}
		m := newMsg()
		if err := decodeObject(m.ProtoReflect(), item, path); err != nil {
			return nil, err
		}
		out = append(out, m)
	}
	return out, nil
}

// EncodeYAMLAs writes messages in the file format: one object for one,
// a list for more.
func EncodeYAMLAs[T proto.Message](msgs ...T) ([]byte, error) {
	v, err := valueAs(msgs)
	if err != nil {
		return nil, err
	}
	return yaml.Marshal(v)
}

// EncodeJSONAs is EncodeYAMLAs's JSON twin, indented by two spaces.
func EncodeJSONAs[T proto.Message](msgs ...T) ([]byte, error) {
	v, err := valueAs(msgs)
	if err != nil {
		return nil, err
	}
	return indentedJSON(v)
}

// valueAs is msgs in the file's generic form: one object, or a list.
func valueAs[T proto.Message](msgs []T) (any, error) {
	if len(msgs) == 0 {
		return nil, ErrNoSpecs
	}
	objects := make([]object, len(msgs))
	for i, m := range msgs {
		if err := checkMessage(m.ProtoReflect().Descriptor(), map[protoreflect.FullName]bool{}); err != nil {
			return nil, err
		}
		o, err := encodeMessage(m.ProtoReflect(), "")
		if err != nil {
			return nil, err
		}
		objects[i] = o
	}
	if len(objects) == 1 {
		return objects[0], nil
	}
	return objects, nil
}

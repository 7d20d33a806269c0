package jobfile

import (
	"encoding/json"
	"fmt"
	"math"
	"strconv"

	"google.golang.org/protobuf/reflect/protoreflect"
)

// A raw value comes from yaml.v2 (int, int64, uint64, float64, string,
// bool, map[any]any, []any) or from encoding/json and ToMap (float64,
// json.Number, int64, uint64, map[string]any). Type errors use JSON's
// names for what was found ("got object"), as encoding/json did when
// the format was decoded through it.

// scalarText is a scalar's text for a string-like field: a YAML number or
// boolean reads as its canonical text, floats at float32 precision as
// sigs.k8s.io/yaml does for Kubernetes manifests (1.10 is "1.1"). ok is
// false for objects and lists.
func scalarText(v any) (string, bool) {
	switch v := v.(type) {
	case string:
		return v, true
	case bool:
		return strconv.FormatBool(v), true
	case float64:
		if v == 0 {
			return "0", true // -0 too, as YAML's -0 is the integer 0
		}
		return strconv.FormatFloat(v, 'g', -1, 32), true
	case json.Number:
		return v.String(), true
	}
	return integerText(v)
}

// numberText is a number's JSON literal ("1e+21"); ok is false for
// anything else.
func numberText(v any) (string, bool) {
	switch v := v.(type) {
	case float64:
		b, err := json.Marshal(v)
		if err != nil { // NaN and the infinities
			return strconv.FormatFloat(v, 'g', -1, 64), true
		}
		return string(b), true
	case json.Number:
		return v.String(), true
	}
	return integerText(v)
}

func integerText(v any) (string, bool) {
	switch v := v.(type) {
	case int:
		return strconv.FormatInt(int64(v), 10), true
	case int32:
		return strconv.FormatInt(int64(v), 10), true
	case int64:
		return strconv.FormatInt(v, 10), true
	case uint32:
		return strconv.FormatUint(uint64(v), 10), true
	case uint64:
		return strconv.FormatUint(v, 10), true
	}
	return "", false
}

// decodeInteger reads a number into an integer field of any width. A
// float with no fraction is that integer (1e3, 1.0, -0).
func decodeInteger(fd protoreflect.FieldDescriptor, raw any, path string) (protoreflect.Value, error) {
	lit, ok := numberText(raw)
	if !ok {
		return protoreflect.Value{}, typeError(path, wantKind(fd), raw)
	}
	bits, signed, _ := integerKind(fd.Kind())
	switch {
	case signed && bits == 32:
		if n, ok := parseInt(lit, bits); ok {
			return protoreflect.ValueOfInt32(int32(n)), nil
		}
	case signed:
		if n, ok := parseInt(lit, bits); ok {
			return protoreflect.ValueOfInt64(n), nil
		}
	case bits == 32:
		if n, ok := parseUint(lit, bits); ok {
			return protoreflect.ValueOfUint32(uint32(n)), nil
		}
	default:
		if n, ok := parseUint(lit, bits); ok {
			return protoreflect.ValueOfUint64(n), nil
		}
	}
	return protoreflect.Value{}, &FieldError{Field: path, Rule: fmt.Sprintf("want %s, got number %s", wantKind(fd), lit)}
}

func parseInt(lit string, bits int) (int64, bool) {
	if n, err := strconv.ParseInt(lit, 10, bits); err == nil {
		return n, true
	}
	f, ok := wholeFloat(lit)
	limit := math.Ldexp(1, bits-1)
	if !ok || f < -limit || f >= limit {
		return 0, false
	}
	return int64(f), true
}

func parseUint(lit string, bits int) (uint64, bool) {
	if n, err := strconv.ParseUint(lit, 10, bits); err == nil {
		return n, true
	}
	f, ok := wholeFloat(lit)
	if !ok || f < 0 || f >= math.Ldexp(1, bits) {
		return 0, false
	}
	return uint64(f), true
}

func wholeFloat(lit string) (float64, bool) {
	f, err := strconv.ParseFloat(lit, 64)
	return f, err == nil && f == math.Trunc(f)
}

// jsonType names a raw value's type as encoding/json's errors do.
func jsonType(v any) string {
	switch v.(type) {
	case nil:
		return "null"
	case string:
		return "string"
	case bool:
		return "bool"
	case []any:
		return "array"
	}
	if _, ok := members(v); ok {
		return "object"
	}
	if _, ok := numberText(v); ok {
		return "number"
	}
	return fmt.Sprintf("%T", v)
}

// describe names a raw value's type in the file's words, for what stands
// where a job belongs.
func describe(v any) string {
	if words, ok := fileWords[jsonType(v)]; ok {
		return words
	}
	return jsonType(v)
}

var fileWords = map[string]string{
	"null": "null", "string": "a string", "bool": "a boolean", "array": "a list", "object": "an object", "number": "a number",
}

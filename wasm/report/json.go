package report

import (
	"bytes"
	"encoding/json"
	"errors"
	"math"
	"reflect"
	"strings"
)

// JSON encodes v as encoding/json does, except that a float that is not
// finite (NaN, ±Inf, which JSON cannot hold) becomes null instead of
// failing the whole encoding: a report is always printable. The checks
// that can meet such values also say so in a finding.
func JSON(v any) ([]byte, error) {
	data, err := json.Marshal(v)
	var uv *json.UnsupportedValueError
	if err == nil || !errors.As(err, &uv) {
		return data, err
	}
	t, err := finite(reflect.ValueOf(v))
	if err != nil {
		return nil, err
	}
	return json.Marshal(t)
}

// finite turns v into plain JSON values (maps, slices, json.Number, …)
// with non-finite floats as nil, following encoding/json's rules for
// struct fields (tags, omitempty, embedded structs).
func finite(v reflect.Value) (any, error) {
	if !v.IsValid() {
		return nil, nil
	}
	if v.Kind() == reflect.Pointer || v.Kind() == reflect.Interface {
		if v.IsNil() {
			return nil, nil
		}
		if m, ok := v.Interface().(json.Marshaler); ok && v.Kind() == reflect.Pointer {
			return viaMarshaler(m, v)
		}
		return finite(v.Elem())
	}
	if v.CanInterface() {
		if m, ok := v.Interface().(json.Marshaler); ok {
			return viaMarshaler(m, v)
		}
	}
	switch v.Kind() {
	case reflect.Float32, reflect.Float64:
		f := v.Float()
		if math.IsNaN(f) || math.IsInf(f, 0) {
			return nil, nil
		}
		return f, nil
	case reflect.Slice, reflect.Array:
		if v.Kind() == reflect.Slice && v.IsNil() {
			return nil, nil
		}
		if v.Type().Elem().Kind() == reflect.Uint8 {
			return v.Interface(), nil // []byte: base64, as encoding/json does
		}
		out := make([]any, v.Len())
		for i := range out {
			x, err := finite(v.Index(i))
			if err != nil {
				return nil, err
			}
			out[i] = x
		}
		return out, nil
	case reflect.Map:
		if v.IsNil() {
			return nil, nil
		}
		out := make(map[string]any, v.Len())
		it := v.MapRange()
		for it.Next() {
			k, err := json.Marshal(it.Key().Interface())
			if err != nil {
				return nil, err
			}
			x, err := finite(it.Value())
			if err != nil {
				return nil, err
			}
			out[strings.Trim(string(k), `"`)] = x
		}
		return out, nil
	case reflect.Struct:
		out := map[string]any{}
		if err := fields(v, out); err != nil {
			return nil, err
		}
		return out, nil
	}
	return v.Interface(), nil
}

// fields adds a struct's JSON fields to out.
func fields(v reflect.Value, out map[string]any) error {
	t := v.Type()
	for i := 0; i < t.NumField(); i++ {
		sf := t.Field(i)
		tag := sf.Tag.Get("json")
		if tag == "-" {
			continue
		}
		name, opts, _ := strings.Cut(tag, ",")
		fv := v.Field(i)
		if sf.Anonymous && name == "" {
			e := fv
			if e.Kind() == reflect.Pointer {
				if e.IsNil() {
					continue
				}
				e = e.Elem()
			}
			if e.Kind() == reflect.Struct {
				if err := fields(e, out); err != nil {
					return err
				}
				continue
			}
		}
		if !sf.IsExported() {
			continue
		}
		if name == "" {
			name = sf.Name
		}
		if strings.Contains(","+opts+",", ",omitempty,") && fv.IsZero() && (fv.Kind() != reflect.Struct) {
			continue
		}
		x, err := finite(fv)
		if err != nil {
			return err
		}
		out[name] = x
	}
	return nil
}

// viaMarshaler uses a type's own MarshalJSON; if that fails on a
// non-finite float, its fields are walked instead.
func viaMarshaler(m json.Marshaler, v reflect.Value) (any, error) {
	data, err := m.MarshalJSON()
	if err != nil {
		for v.Kind() == reflect.Pointer {
			v = v.Elem()
		}
		if v.Kind() != reflect.Struct {
			return nil, err
		}
		out := map[string]any{}
		if err := fields(v, out); err != nil {
			return nil, err
		}
		return out, nil
	}
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.UseNumber()
	var x any
	if err := dec.Decode(&x); err != nil {
		return nil, err
	}
	return x, nil
}

package trace

import (
	"bytes"
	"encoding"
	"encoding/json"
	"errors"
	"fmt"
	"reflect"
	"strconv"
	"strings"
	"sync"
)

// DecodeStrict decodes one JSON value into v, as json.Unmarshal does, but
// first refuses, naming the field, any object key that is not exactly the
// name of a field of the type it is decoded into (encoding/json would take
// "Kind" for "kind"), and any key that appears twice in one object
// (encoding/json keeps the last). Both matter because the browser reads the
// same file with JavaScript, which matches keys exactly and also keeps the
// last: without them Go could check one value while the page uses another.
// Keys decoded into maps, json.RawMessage or other Unmarshalers are checked
// for duplicates only; their own decoders check the rest.
func DecodeStrict(data []byte, v any) error {
	t := reflect.TypeOf(v)
	if t == nil || t.Kind() != reflect.Pointer {
		return errors.New("decode: want a pointer")
	}
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.UseNumber()
	if err := checkValue(dec, t.Elem(), ""); err != nil {
		return err
	}
	if _, err := dec.Token(); err == nil {
		return errors.New("decoding json: data after the value")
	}
	if err := json.Unmarshal(data, v); err != nil {
		return fmt.Errorf("decoding json: %w", err)
	}
	return nil
}

var (
	unmarshalerType     = reflect.TypeFor[json.Unmarshaler]()
	textUnmarshalerType = reflect.TypeFor[encoding.TextUnmarshaler]()
)

// checkValue reads one value from dec and checks its keys against t; path
// names where it is, for errors ("object.kind").
func checkValue(dec *json.Decoder, t reflect.Type, path string) error {
	for t != nil && t.Kind() == reflect.Pointer {
		t = t.Elem()
	}
	tok, err := dec.Token()
	if err != nil {
		return fmt.Errorf("%sdecoding json: %w", prefix(path), err)
	}
	d, ok := tok.(json.Delim)
	if !ok {
		return nil // a scalar: json.Unmarshal checks its type
	}
	// A type that decodes itself sees the value whole; only duplicates are
	// refused here.
	if t != nil && (reflect.PointerTo(t).Implements(unmarshalerType) || t.Kind() == reflect.Interface) {
		t = nil
	}
	switch d {
	case '[':
		var elem reflect.Type
		if t != nil && (t.Kind() == reflect.Slice || t.Kind() == reflect.Array) {
			elem = t.Elem()
		}
		for i := 0; dec.More(); i++ {
			if err := checkValue(dec, elem, path+"["+strconv.Itoa(i)+"]"); err != nil {
				return err
			}
		}
	case '{':
		var fields map[string]reflect.Type
		var elem reflect.Type
		switch {
		case t != nil && t.Kind() == reflect.Struct && !reflect.PointerTo(t).Implements(textUnmarshalerType):
			fields = structFields(t)
		case t != nil && t.Kind() == reflect.Map:
			elem = t.Elem()
		}
		seen := map[string]bool{}
		for dec.More() {
			tok, err := dec.Token()
			if err != nil {
				return fmt.Errorf("%sdecoding json: %w", prefix(path), err)
			}
			key := tok.(string) // json.Decoder only gives strings as keys
			at := key
			if path != "" {
				at = path + "." + key
			}
			if seen[key] {
				return fmt.Errorf("%s: appears twice", at)
			}
			seen[key] = true
			ft := elem
			if fields != nil {
				var ok bool
				if ft, ok = fields[key]; !ok {
					if name := foldMatch(fields, key); name != "" {
						return fmt.Errorf("%s: unknown field (the field is %q, spelt exactly so)", at, name)
					}
					return fmt.Errorf("%s: unknown field", at)
				}
			}
			if err := checkValue(dec, ft, at); err != nil {
				return err
			}
		}
	}
	_, err = dec.Token() // the closing delimiter
	return err
}

func prefix(path string) string {
	if path == "" {
		return ""
	}
	return path + ": "
}

func foldMatch(fields map[string]reflect.Type, key string) string {
	for name := range fields {
		if strings.EqualFold(name, key) {
			return name
		}
	}
	return ""
}

var fieldCache sync.Map // reflect.Type → map[string]reflect.Type

// structFields returns the JSON names of t's fields and their types, with
// the fields of embedded structs promoted, as encoding/json names them.
func structFields(t reflect.Type) map[string]reflect.Type {
	if f, ok := fieldCache.Load(t); ok {
		return f.(map[string]reflect.Type)
	}
	out := map[string]reflect.Type{}
	addFields(t, out)
	fieldCache.Store(t, out)
	return out
}

func addFields(t reflect.Type, out map[string]reflect.Type) {
	for i := range t.NumField() {
		f := t.Field(i)
		tag := f.Tag.Get("json")
		if tag == "-" {
			continue
		}
		name, _, _ := strings.Cut(tag, ",")
		ft := f.Type
		if f.Anonymous && name == "" {
			for ft.Kind() == reflect.Pointer {
				ft = ft.Elem()
			}
			if ft.Kind() == reflect.Struct {
				// Fields of the outer struct win over promoted ones; add
				// the promoted ones only where the name is free.
				inner := map[string]reflect.Type{}
				addFields(ft, inner)
				for k, v := range inner {
					if _, ok := out[k]; !ok {
						out[k] = v
					}
				}
				continue
			}
		}
		if !f.IsExported() {
			continue
		}
		if name == "" {
			name = f.Name
		}
		out[name] = f.Type
	}
}

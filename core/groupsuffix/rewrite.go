package groupsuffix

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"strings"
)

// userDataKeys are object keys whose values are free-form user data (ConfigMap/Secret payloads,
// labels, annotations). Nothing below them is ever rewritten, even a key named "apiVersion".
var userDataKeys = map[string]bool{
	"data":        true,
	"stringData":  true,
	"binaryData":  true,
	"labels":      true,
	"annotations": true,
}

// rewriter renames API groups in decoded Kubernetes objects. It only touches fields whose meaning
// is an API group: apiVersion / groupVersion values ("group/version"), apiGroup / group values,
// apiGroups lists (RBAC rules, webhook rules), and the group names of discovery documents.
type rewriter struct {
	mapGroup groupMapper
	// needle is present in every encoded document that contains a group mapGroup would rename,
	// so documents without it can skip decoding entirely.
	needle []byte
}

func newReplacer(suffix string) rewriter {
	return rewriter{mapGroup: replacer(suffix), needle: []byte("." + Default)}
}

func newUnreplacer(suffix string) rewriter {
	return rewriter{mapGroup: unreplacer(suffix), needle: []byte("." + suffix)}
}

// field maps the string value stored under key, if key is one that holds a group.
func (r rewriter) field(key, value string) (string, bool) {
	switch key {
	case "apiVersion", "groupVersion":
		return r.mapGroup.groupVersion(value)
	case "apiGroup", "group":
		return r.mapGroup(value)
	}
	return value, false
}

// walk rewrites v, a value produced by encoding/json decoding into any, in place.
func (r rewriter) walk(v any) {
	switch t := v.(type) {
	case map[string]any:
		for key, child := range t {
			if userDataKeys[key] {
				continue
			}
			switch c := child.(type) {
			case string:
				if mapped, ok := r.field(key, c); ok {
					t[key] = mapped
				}
			case []any:
				if key == "apiGroups" {
					r.mapStrings(c)
				} else {
					r.walk(c)
				}
			default:
				r.walk(c)
			}
		}
		r.discoveryNames(t)
	case []any:
		for _, child := range t {
			r.walk(child)
		}
	}
}

func (r rewriter) mapStrings(list []any) {
	for i, item := range list {
		if s, ok := item.(string); ok {
			if mapped, ok := r.mapGroup(s); ok {
				list[i] = mapped
			}
		}
	}
}

// discoveryNames renames the groups that discovery documents carry in "name" fields: legacy
// discovery (/apis, /apis/<group>) and aggregated discovery (apidiscovery.k8s.io).
func (r rewriter) discoveryNames(obj map[string]any) {
	switch obj["kind"] {
	case "APIGroup":
		r.mapName(obj)
	case "APIGroupList":
		for _, group := range asList(obj["groups"]) {
			r.mapName(group)
		}
	case "APIGroupDiscovery":
		r.mapName(obj["metadata"])
	case "APIGroupDiscoveryList":
		for _, item := range asList(obj["items"]) {
			if m, ok := item.(map[string]any); ok {
				r.mapName(m["metadata"])
			}
		}
	}
}

func (r rewriter) mapName(v any) {
	obj, ok := v.(map[string]any)
	if !ok {
		return
	}
	if name, ok := obj["name"].(string); ok {
		if mapped, ok := r.mapGroup(name); ok {
			obj["name"] = mapped
		}
	}
}

func asList(v any) []any {
	list, _ := v.([]any)
	return list
}

// rewriteJSON rewrites one JSON document. Documents that cannot contain a group to rename are
// returned unchanged without being decoded.
func (r rewriter) rewriteJSON(doc []byte) ([]byte, error) {
	if !bytes.Contains(doc, r.needle) {
		return doc, nil
	}
	dec := json.NewDecoder(bytes.NewReader(doc))
	dec.UseNumber() // keep integers such as generation exact
	var v any
	if err := dec.Decode(&v); err != nil {
		return nil, fmt.Errorf("decoding JSON document: %w", err)
	}
	if _, err := dec.Token(); err != io.EOF {
		return nil, fmt.Errorf("decoding JSON document: unexpected data after the first value")
	}
	r.walk(v)
	return encodeJSON(v)
}

// rewriteJSONPatch rewrites an RFC 6902 JSON patch. Operation values are rewritten like any
// document, and a plain string value is renamed when the operation's path ends in a group field
// ("/spec/authenticator/apiGroup", "/rules/0/apiGroups/1").
func (r rewriter) rewriteJSONPatch(doc []byte) ([]byte, error) {
	if !bytes.Contains(doc, r.needle) {
		return doc, nil
	}
	var ops []map[string]any
	dec := json.NewDecoder(bytes.NewReader(doc))
	dec.UseNumber()
	if err := dec.Decode(&ops); err != nil {
		return nil, fmt.Errorf("decoding JSON patch: %w", err)
	}
	for _, op := range ops {
		path, _ := op["path"].(string)
		segments := strings.Split(path, "/")
		last := segments[len(segments)-1]
		switch value := op["value"].(type) {
		case string:
			if mapped, ok := r.field(last, value); ok {
				op["value"] = mapped
			} else if len(segments) > 1 && segments[len(segments)-2] == "apiGroups" {
				if mapped, ok := r.mapGroup(value); ok {
					op["value"] = mapped
				}
			}
		case []any:
			if last == "apiGroups" {
				r.mapStrings(value)
			} else {
				r.walk(value)
			}
		default:
			r.walk(value)
		}
	}
	return encodeJSON(ops)
}

func encodeJSON(v any) ([]byte, error) {
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(v); err != nil {
		return nil, fmt.Errorf("encoding JSON document: %w", err)
	}
	return bytes.TrimSuffix(buf.Bytes(), []byte("\n")), nil
}

// watchStream rewrites a JSON watch stream (a sequence of WatchEvent objects) one event at a time,
// so events reach the client as soon as the server sends them.
type watchStream struct {
	src io.ReadCloser
	dec *json.Decoder
	r   rewriter
	out bytes.Buffer
	err error
}

func newWatchStream(src io.ReadCloser, r rewriter) *watchStream {
	return &watchStream{src: src, dec: json.NewDecoder(src), r: r}
}

func (w *watchStream) Read(p []byte) (int, error) {
	for w.out.Len() == 0 {
		if w.err != nil {
			return 0, w.err
		}
		var frame json.RawMessage
		if err := w.dec.Decode(&frame); err != nil {
			// Read errors and io.EOF pass through untouched so the watch client sees the real cause.
			w.err = err
			continue
		}
		event, err := w.r.rewriteJSON(frame)
		if err != nil {
			w.err = fmt.Errorf("rewriting API groups in watch event: %w", err)
			continue
		}
		w.out.Write(event)
		w.out.WriteByte('\n')
	}
	return w.out.Read(p)
}

func (w *watchStream) Close() error { return w.src.Close() }

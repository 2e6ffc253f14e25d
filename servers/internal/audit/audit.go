// Package audit writes the servers' audit events in Pinniped's shape: one JSON object per line,
// marked "auditEvent":true, with the request's audit ID, never filtered by the log level, so that
// log searches and alerts written for Pinniped keep working. Usernames, groups and the like go in
// "personalInfo", which is redacted unless the operator enabled audit.logUsernamesAndGroups.
//
// An event never carries a token, password or secret: a token is named by its SHA-256 (TokenID).
package audit

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io"
	"path/filepath"
	"reflect"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"time"

	"k8s.io/apimachinery/pkg/types"
	k8saudit "k8s.io/apiserver/pkg/audit"
)

// Logger writes audit events. A nil Logger writes nothing: for tests and tools that do not audit.
type Logger struct {
	mu       sync.Mutex
	w        io.Writer
	personal bool
	now      func() time.Time
}

// New returns a Logger writing to w, with personal information in clear when logPersonalInfo.
func New(w io.Writer, logPersonalInfo bool) *Logger {
	return &Logger{w: w, personal: logPersonalInfo, now: time.Now}
}

// Fields are the parts of an event that Pinniped places before the event's own key/value pairs.
type Fields struct {
	// SessionID is the ID of the Supervisor's stored session the event is about.
	SessionID string
	// PersonalInfo are key/value pairs naming a person (usernames, groups, subjects), redacted
	// unless enabled: a string becomes "redacted", a slice ["redacted N values"], a map
	// {"redacted":"redacted N keys"}.
	PersonalInfo []any
}

// Event writes the event message with f and the event's own keysAndValues, in that order. The
// audit ID is the request's, as k8s.io/apiserver keeps it in ctx (the Supervisor's handlers put
// theirs there with WithID). An error value is written as its text.
func (l *Logger) Event(ctx context.Context, message string, f Fields, keysAndValues ...any) {
	if l == nil {
		return
	}
	var b bytes.Buffer
	b.WriteString(`{"level":"info"`)
	writeField(&b, "timestamp", l.now().UTC().Format("2006-01-02T15:04:05.000000Z07:00"))
	writeField(&b, "caller", caller())
	writeField(&b, "message", message)
	b.WriteString(`,"auditEvent":true`)
	if id, ok := k8saudit.AuditIDFrom(ctx); ok && id != "" {
		writeField(&b, "auditID", string(id))
	}
	if f.SessionID != "" {
		writeField(&b, "sessionID", f.SessionID)
	}
	if f.PersonalInfo != nil {
		b.WriteString(`,"personalInfo":{`)
		for i := 0; i < len(f.PersonalInfo); i += 2 {
			v := valueAt(f.PersonalInfo, i+1)
			if !l.personal {
				v = redact(v)
			}
			if i > 0 {
				b.WriteByte(',')
			}
			writeKeyValue(&b, fmt.Sprint(f.PersonalInfo[i]), v, l.personal)
		}
		b.WriteByte('}')
	}
	for i := 0; i < len(keysAndValues); i += 2 {
		b.WriteByte(',')
		writeKeyValue(&b, fmt.Sprint(keysAndValues[i]), valueAt(keysAndValues, i+1), false)
	}
	b.WriteString("}\n")
	// One Write per line, so that lines of concurrent events (and of other loggers on the same
	// stream) do not interleave.
	l.mu.Lock()
	defer l.mu.Unlock()
	_, _ = l.w.Write(b.Bytes())
}

// WithID returns ctx carrying the audit ID id, where Event (and k8s.io/apiserver) find it.
func WithID(ctx context.Context, id string) context.Context {
	ctx = k8saudit.WithAuditContext(ctx)
	k8saudit.WithAuditID(ctx, types.UID(id))
	return ctx
}

// TokenID names a token in an event: the lowercase hex SHA-256 of the token, as Pinniped writes
// it, so that a Supervisor's "ID Token Issued" matches the Concierge's "Token Received".
func TokenID(token string) string {
	sum := sha256.Sum256([]byte(token))
	return hex.EncodeToString(sum[:])
}

// valueAt is kv[i], or a marker when a key has no value (a programming error that should still
// leave a readable line).
func valueAt(kv []any, i int) any {
	if i < len(kv) {
		return kv[i]
	}
	return "(MISSING)"
}

func writeField(b *bytes.Buffer, key, value string) {
	b.WriteByte(',')
	writeKeyValue(b, key, value, false)
}

// writeKeyValue writes "key":value; with emptyCollections a nil slice is written [] and a nil map
// {}, as Pinniped does for personal information.
func writeKeyValue(b *bytes.Buffer, key string, value any, emptyCollections bool) {
	b.WriteString(strconv.Quote(key))
	b.WriteByte(':')
	if err, ok := value.(error); ok {
		value = err.Error()
	}
	if emptyCollections && value != nil {
		switch rv := reflect.ValueOf(value); rv.Kind() {
		case reflect.Slice:
			if rv.IsNil() {
				value = []any{}
			}
		case reflect.Map:
			if rv.IsNil() {
				value = map[string]any{}
			}
		}
	}
	j, err := json.Marshal(value)
	if err != nil {
		j, _ = json.Marshal(fmt.Sprint(value))
	}
	b.Write(j)
}

// redact hides a personal value but keeps its shape and size.
func redact(v any) any {
	if v == nil {
		return "redacted"
	}
	switch rv := reflect.ValueOf(v); rv.Kind() {
	case reflect.Slice, reflect.Array:
		return []string{fmt.Sprintf("redacted %d values", rv.Len())}
	case reflect.Map:
		return map[string]string{"redacted": fmt.Sprintf("redacted %d keys", rv.Len())}
	}
	return "redacted"
}

// caller is where Event was called, as "<dir>/<file>:<line>$<package>.<function>".
func caller() string {
	pc, file, line, ok := runtime.Caller(2)
	if !ok {
		return "unknown"
	}
	name := ""
	if fn := runtime.FuncForPC(pc); fn != nil {
		name = fn.Name()
		if i := strings.LastIndex(name, "/"); i >= 0 {
			name = name[i+1:]
		}
	}
	return fmt.Sprintf("%s/%s:%d$%s", filepath.Base(filepath.Dir(file)), filepath.Base(file), line, name)
}

// Package audit writes the servers' audit events in Pinniped's shape: one JSON object per line,
// marked "auditEvent":true, with the request's audit ID, never filtered by the log level, so that
// log searches and alerts written for Pinniped keep working. Usernames, groups and the like go in
// "personalInfo", which is redacted unless the operator enabled audit.logUsernamesAndGroups.
//
// An event never carries a token, password or secret: a token is named by its fingerprint
// (TokenID), an HMAC-SHA256 under the installation's key (LoadTokenFingerprintKey), so that the
// logs give nobody a way to test guesses of a token or a password offline.
package audit

import (
	"bytes"
	"context"
	"crypto/hmac"
	"crypto/rand"
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
	// fingerprintKey keys TokenID.
	fingerprintKey []byte
}

// New returns a Logger writing to w, with personal information in clear when logPersonalInfo. It
// fingerprints tokens with a random key of its own until WithTokenFingerprintKey gives it the
// installation's.
func New(w io.Writer, logPersonalInfo bool) *Logger {
	key := make([]byte, TokenFingerprintKeySize)
	_, _ = rand.Read(key) // never fails (crypto/rand)
	return &Logger{w: w, personal: logPersonalInfo, now: time.Now, fingerprintKey: key}
}

// WithTokenFingerprintKey has l fingerprint tokens with key, the installation's, which every
// replica shares: the same token then has the same TokenID in the events of each. An empty key
// leaves l its own random one. It returns l.
func (l *Logger) WithTokenFingerprintKey(key []byte) *Logger {
	if len(key) > 0 {
		l.fingerprintKey = bytes.Clone(key)
	}
	return l
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

// TokenID names a token in an event: the lowercase hex HMAC-SHA256 of the token under the
// installation's key, in the shape of Pinniped's (which is the token's plain SHA-256, and so lets
// anyone who reads the logs test guesses of a password-style token at SHA-256 speed). A
// Supervisor's "ID Token Issued" matches a Concierge's "Token Received" when both installations
// are given the same key.
func (l *Logger) TokenID(token string) string {
	if l == nil {
		return ""
	}
	mac := hmac.New(sha256.New, l.fingerprintKey)
	mac.Write([]byte(token))
	return hex.EncodeToString(mac.Sum(nil))
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

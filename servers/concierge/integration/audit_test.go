package integration

import (
	"bufio"
	"context"
	"crypto/hmac"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"os"
	"strings"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"
)

// The Concierge names the token of a TokenCredentialRequest in its audit event by the HMAC-SHA256
// under the key of its installation's Secret, which it created at start: every replica reads the
// same key, so an operator finds a token's events on each; nobody who reads the logs can test
// guesses of a password-style token (the attack of SECURITY.md's fourth advisory).
func TestAuditTokenFingerprint(t *testing.T) {
	ctx := context.Background()
	s, err := env.kube.CoreV1().Secrets(conciergeNamespace).Get(ctx, "pinniped-concierge-audit-token-fingerprint-key", metav1.GetOptions{})
	if err != nil {
		t.Fatalf("the installation's key: %v", err)
	}
	if s.Type != "secrets.pinniped.dev/audit-token-fingerprint-key" || len(s.Data["key"]) != 32 {
		t.Fatalf("the key's Secret: type %q, %d bytes", s.Type, len(s.Data["key"]))
	}
	const token = "nobody:a guessable password"
	requireFailed(t, exchange(t, "WebhookAuthenticator", "no-such-authenticator", token))

	mac := hmac.New(sha256.New, s.Data["key"])
	mac.Write([]byte(token))
	want := hex.EncodeToString(mac.Sum(nil))
	plain := sha256.Sum256([]byte(token))
	var got []string
	err = wait.PollUntilContextTimeout(ctx, 100*time.Millisecond, 10*time.Second, true, func(context.Context) (bool, error) {
		got = tokenIDs(t, "TokenCredentialRequest Token Received")
		for _, id := range got {
			if id == want {
				return true, nil
			}
		}
		return false, nil
	})
	if err != nil {
		t.Fatalf("no Token Received event with the token's keyed fingerprint %s among %q", want, got)
	}
	for _, id := range got {
		if id == hex.EncodeToString(plain[:]) {
			t.Errorf("an event names the token by its plain SHA-256")
		}
	}
}

// tokenIDs are the tokenIDs of the Concierge's audit events with message.
func tokenIDs(t *testing.T, message string) []string {
	t.Helper()
	var log string
	for _, s := range env.servers {
		if s.name == "concierge" {
			log = s.log
		}
	}
	f, err := os.Open(log)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	var ids []string
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 1<<20), 1<<20)
	for sc.Scan() {
		if !strings.Contains(sc.Text(), `"auditEvent":true`) {
			continue
		}
		var ev struct {
			Message string `json:"message"`
			TokenID string `json:"tokenID"`
		}
		if json.Unmarshal(sc.Bytes(), &ev) == nil && ev.Message == message {
			ids = append(ids, ev.TokenID)
		}
	}
	return ids
}

package server

import (
	"strings"
	"testing"
)

type fakeLoader bool

func (f *fakeLoader) Synced() bool { return bool(*f) }

// The replica is ready only once every loader has tried each object once, and /readyz names
// the one still loading.
func TestLoadedCheck(t *testing.T) {
	t.Parallel()
	jwts, webhooks := fakeLoader(true), fakeLoader(false)
	check := loadedCheck([]loader{{"the JWTAuthenticator controller", &jwts}, {"the WebhookAuthenticator controller", &webhooks}})
	if check.Name() != "credentials-loaded" {
		t.Errorf("check name %q", check.Name())
	}
	err := check.Check(nil)
	if err == nil || !strings.Contains(err.Error(), "WebhookAuthenticator") {
		t.Errorf("with the webhooks loading: %v, want an error naming them", err)
	}
	webhooks = true
	if err := check.Check(nil); err != nil {
		t.Errorf("with everything loaded: %v", err)
	}
}

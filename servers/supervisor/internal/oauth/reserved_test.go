package oauth

import (
	"crypto/rand"
	"errors"
	"net/http"
	"strings"
	"testing"

	"github.com/coreos/go-oidc/v3/oidc"
	"golang.org/x/oauth2"

	configv1alpha1 "sealion.dev/core/apis/supervisor/config/v1alpha1"
	"sealion.dev/core/reservednames"
	"sealion.dev/servers/supervisor/internal/idtransform"
	"sealion.dev/servers/supervisor/internal/oauth/provider"
)

// setGroups changes the groups the fake upstream reports from now on.
func (u *fakeUpstream) setGroups(groups ...string) {
	u.mu.Lock()
	defer u.mu.Unlock()
	u.groups = groups
}

// requireReservedRefusal checks a browser login that the Supervisor refused: access_denied with
// the uniform wording, naming no group.
func requireReservedRefusal(t *testing.T, h *harness) {
	t.Helper()
	loc, resp := h.authorize(h.cli().AuthCodeURL(rand.Text(), oauth2.S256ChallengeOption(oauth2.GenerateVerifier()), oidc.Nonce(rand.Text())))
	if loc == nil {
		t.Fatalf("login stopped at %s, want a redirect to the CLI with an error", resp.Status)
	}
	desc := loc.Query().Get("error_description")
	if loc.Query().Get("error") != "access_denied" || !strings.Contains(desc, "authentication failed") || loc.Query().Get("code") != "" {
		t.Fatalf("got %v; want access_denied, authentication failed, no code", loc.Query())
	}
	if strings.Contains(desc, "system:") {
		t.Errorf("the answer names the refused name: %q", desc)
	}
}

// An upstream group or a transformed username in Kubernetes' reserved namespace never reaches a
// downstream token, at login, at refresh or at token exchange, unless the operator allowed that
// exact name.
func TestReservedNamesRefused(t *testing.T) {
	t.Run("upstream group at login", func(t *testing.T) {
		h := newHarness(t, nil)
		h.upstream.setGroups("seals", "system:masters")
		requireReservedRefusal(t, h)
		h.upstream.setGroups("seals", "System:Masters")
		requireReservedRefusal(t, h)
	})

	t.Run("transformed username at login", func(t *testing.T) {
		pipeline, err := idtransform.Compile(configv1alpha1.FederationDomainTransforms{
			Expressions: []configv1alpha1.FederationDomainTransformsExpression{{Type: "username/v1", Expression: `"system:" + username`}},
		})
		if err != nil {
			t.Fatal(err)
		}
		requireReservedRefusal(t, newHarness(t, pipeline))
	})

	t.Run("upstream group at refresh", func(t *testing.T) {
		h := newHarness(t, nil)
		l := h.login()
		tok, err := h.cli().Exchange(h.clientContext(), l.code, oauth2.VerifierOption(l.verifier))
		if err != nil {
			t.Fatal(err)
		}
		h.upstream.setGroups("seals", "system:nodes")
		_, err = h.cli().TokenSource(h.clientContext(), &oauth2.Token{RefreshToken: tok.RefreshToken}).Token()
		var re *oauth2.RetrieveError
		if !errors.As(err, &re) || re.ErrorCode != "invalid_grant" || !strings.Contains(re.ErrorDescription, "authentication failed") ||
			strings.Contains(re.ErrorDescription, "system:") {
			t.Errorf("refresh of a user now in system:nodes: %v; want invalid_grant, authentication failed", err)
		}
	})

	t.Run("exact exception, then narrowed", func(t *testing.T) {
		h := newHarness(t, nil)
		h.endpoints.WithReservedNameExceptions(reservednames.Exceptions{Groups: []string{"system:monitoring"}})
		h.upstream.setGroups("seals", "system:monitoring-admins")
		requireReservedRefusal(t, h)

		h.upstream.setGroups("seals", "system:monitoring")
		l := h.login()
		tok, err := h.cli().Exchange(h.clientContext(), l.code, oauth2.VerifierOption(l.verifier))
		if err != nil {
			t.Fatal(err)
		}
		_, claims := h.idToken(tok.Extra("id_token").(string), provider.PinnipedCLIClientID)
		if got := toStrings(claims["groups"]); len(got) != 2 || got[1] != "system:monitoring" {
			t.Errorf("groups %v, want the allowed reserved group", got)
		}
		if status, body := h.exchange(tok.AccessToken, "cluster-1"); status != http.StatusOK {
			t.Fatalf("token exchange with the exception: %d %v", status, body)
		}

		// The operator removes the exception: the session made before cannot get a cluster token.
		h.endpoints.WithReservedNameExceptions(reservednames.Exceptions{})
		if status, body := h.exchange(tok.AccessToken, "cluster-1"); status != http.StatusForbidden || body["error"] != "access_denied" ||
			!strings.Contains(body["error_description"].(string), "authentication failed") {
			t.Errorf("token exchange of a session holding a no longer allowed group: %d %v; want access_denied", status, body)
		}
	})
}

package dynamicca

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"sealion.dev/core/certauthority"
)

func TestFirstLoaded(t *testing.T) {
	clusterCA, proxyCA := newCA(t, "cluster"), newCA(t, "proxy")
	loaded := func(ca *certauthority.CA) *Signer {
		s := New(ca.Certificate().Subject.CommonName)
		require.NoError(t, s.Set(ca.Bundle(), ca.PrivateKeyPEM()))
		return s
	}
	tests := []struct {
		name    string
		signers FirstLoaded
		want    *certauthority.CA // nil means ErrNoCA
	}{
		{"cluster key preferred", FirstLoaded{loaded(clusterCA), loaded(proxyCA)}, clusterCA},
		{"falls back to the proxy signer", FirstLoaded{New("cluster"), loaded(proxyCA)}, proxyCA},
		{"none loaded", FirstLoaded{New("cluster"), New("proxy")}, nil},
		{"no signers", nil, nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if tt.want == nil {
				_, _, _, err := tt.signers.IssueClientCert(context.Background(), "alice", nil, nil, time.Minute)
				assert.True(t, errors.Is(err, ErrNoCA), "err %v", err)
				return
			}
			assertIssuesFrom(t, tt.signers, tt.want)
		})
	}
}

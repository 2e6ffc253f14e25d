package sessions

import (
	"context"
	"errors"
	"slices"
	"testing"

	"github.com/ory/fosite"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/runtime"
	k8stesting "k8s.io/client-go/testing"

	"sealion.dev/servers/supervisor/internal/oauth/sessions/sessionstest"
)

// A watch cache that has not seen any Secret yet, as after a write a moment ago: every read of
// resourceVersion "0" misses. The test records the resourceVersion of each read.
func TestAccessTokenReadsTheCacheFirst(t *testing.T) {
	for _, tc := range []struct {
		name       string
		cacheHas   bool
		wantReads  []string
		readRecord func(context.Context, *Store) error
	}{
		{
			name: "access token in the cache", cacheHas: true, wantReads: []string{"0"},
			readRecord: func(ctx context.Context, s *Store) error {
				_, err := s.GetAccessTokenSession(ctx, "sig", NewSession())
				return err
			},
		},
		{
			name: "access token written a moment ago", cacheHas: false, wantReads: []string{"0", ""},
			readRecord: func(ctx context.Context, s *Store) error {
				_, err := s.GetAccessTokenSession(ctx, "sig", NewSession())
				return err
			},
		},
		{
			// A refresh token changes at rotation: a stale copy would let a rotated one be reused.
			name: "refresh token", cacheHas: true, wantReads: []string{""},
			readRecord: func(ctx context.Context, s *Store) error {
				_, err := s.GetRefreshTokenSession(ctx, "sig", NewSession())
				return err
			},
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ctx := context.Background()
			clientset := sessionstest.OptimisticClientset()
			var reads []string
			clientset.PrependReactor("get", "secrets", func(action k8stesting.Action) (bool, runtime.Object, error) {
				rv := action.(k8stesting.GetActionImpl).GetOptions.ResourceVersion
				reads = append(reads, rv)
				if rv == "0" && !tc.cacheHas {
					return true, nil, apierrors.NewNotFound(corev1.Resource("secrets"), action.(k8stesting.GetActionImpl).Name)
				}
				return false, nil, nil
			})
			client := &fosite.DefaultClient{ID: "pinniped-cli"}
			store := NewStorage(clientset.CoreV1().Secrets(namespace), noConnectors{}, sessionstest.Keys()).ForClients(oneClient{client})
			req := fosite.NewRequest()
			req.ID, req.Client, req.Session = "login-1", client, NewSession()
			if err := store.CreateAccessTokenSession(ctx, "sig", req); err != nil {
				t.Fatal(err)
			}
			if err := store.CreateRefreshTokenSession(ctx, "sig", "", req); err != nil {
				t.Fatal(err)
			}
			if err := tc.readRecord(ctx, store); err != nil {
				t.Fatalf("reading: %v", err)
			}
			if !slices.Equal(reads, tc.wantReads) {
				t.Fatalf("reads with resourceVersions %q, want %q", reads, tc.wantReads)
			}
		})
	}
}

// A token that is in neither the cache nor etcd is not found, after both reads.
func TestAccessTokenMissingEverywhere(t *testing.T) {
	store, _ := newStore(t)
	if _, err := store.GetAccessTokenSession(context.Background(), "never-stored", NewSession()); !errors.Is(err, fosite.ErrNotFound) {
		t.Fatalf("got %v, want fosite.ErrNotFound", err)
	}
}
